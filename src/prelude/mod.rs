//! The types an embedder names to translate, apply, undo, watch, verify and fail back, in one
//! `use`:
//!
//! ```
//! use mm2_offsets::prelude::*;
//!
//! let config = ClientConfig::plaintext(["backup:9092"]);
//! let request = TranslateRequest::new("primary", GroupSelector::all());
//! let mut options = ApplyOptions::default();
//! options.rules.clamp = true;
//! # let _ = (config, request, options);
//! ```
//!
//! Each is re-exported from the module that owns it, which stays its documented path; the
//! functions (`apply::execute`, `undo::execute_undo`, `failback::translate_failback`, ...) are
//! called through their modules, so that a call says which step it is.

pub use crate::apply::journal::{FileJournal, UndoJournal};
pub use crate::apply::{
    ApplyOptions, ApplyPlan, ApplyReport, ApplyVerdict, GroupSkip, Mode, PlanInput, RunResult,
    Summary, VerdictRules, WriteAhead,
};
pub use crate::client::{ClientError, Deadline, ErrorKind, KafkaClient};
pub use crate::config::ClientConfig;
pub use crate::failback::{FailbackRequest, FailbackRow, FailbackRule, FailbackTranslation};
pub use crate::mm2::ReplicationPolicy;
pub use crate::precise::{PreciseRequest, Syncs, SyncsSource};
pub use crate::record_match::MatchOptions;
pub use crate::record_match::reverse::ReverseUnmatched;
pub use crate::select::GroupSelector;
pub use crate::translate::{MirrorClient, TranslateRequest, Translation};
pub use crate::undo::{UndoPlan, UndoReport};
pub use crate::verify::{VerifyRow, VerifyVerdict};
pub use crate::watch::{Snapshot, WatchOptions, WatchSkip, Watcher};
