//! Failback: the groups that ran on the backup after a failover, back on the primary.
//!
//! For each selected group, its committed offsets on the backup are read (OffsetFetch; for a
//! share group, its start offsets, DescribeShareGroupOffsets: the first record not yet
//! delivered and acknowledged, translated as a committed offset is) and translated to the
//! primary:
//! - on a remote topic of the primary (`primary.orders`), from the forward flow's offset-sync
//!   history reversed ([`ReverseIndex`]), the topic `mm2-offset-syncs.<backup>.internal` that
//!   MM2 keeps on the primary by default; sharpened where the primary's records prove a stretch
//!   ([`read_record_offsets`]);
//! - on a topic local to the backup (`orders` written there after the failover), from the
//!   checkpoints of a reverse flow backup -> primary (`<backup>.checkpoints.internal` on the
//!   primary), which MM2 writes for the replica `backup.orders` on the primary; where the
//!   reverse flow's offset syncs (`mm2-offset-syncs.<primary>.internal`, on the backup by
//!   default) can be read, the group's offset on the backup now is translated with them
//!   instead (the `precise` rule of a translation from the source's offsets,
//!   [`PreciseRequest::source_offsets`](crate::precise::PreciseRequest::source_offsets)), never past
//!   what MM2's checkpoint proves less of.
//!
//! The history must be the forward flow's before any offset comes from it: every record of
//! the offset-syncs topic must be an offset sync, and where the backup holds the forward
//! flow's checkpoints of the selected groups (`<source>.checkpoints.internal`, which MM2
//! computed from this very topic), the history must reproduce them or compaction must explain
//! it, as for a [`PreciseRequest`](crate::precise::PreciseRequest) ([`TranslateError::UntrustedFailbackHistory`](crate::translate::TranslateError::UntrustedFailbackHistory) otherwise).
//!
//! The result turns into a [`Translation`](crate::translate::Translation) of the primary's topics that `apply::plan` plans
//! and `apply::execute` commits, with every rule of `apply` (no members, no rewind, nothing
//! outside the log, dry run first).
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use mm2_offsets::client::KafkaClient;
//! use mm2_offsets::config::ClientConfig;
//! use mm2_offsets::mm2::ReplicationPolicy;
//! use mm2_offsets::failback::{FailbackRequest, translate_failback};
//! use mm2_offsets::select::GroupSelector;
//! use mm2_offsets::translate::MirrorClient;
//!
//! let primary = MirrorClient::connect(
//!     ClientConfig::plaintext(["primary:9092"]),
//!     ReplicationPolicy::default(),
//! )
//! .await?;
//! let backup = KafkaClient::connect(ClientConfig::plaintext(["backup:9092"])).await?;
//! let request = FailbackRequest::new("primary", "backup", GroupSelector::all());
//! let failback = translate_failback(&primary, &backup, &request).await?;
//! for row in &failback.rows {
//!     println!(
//!         "{} {}-{}: {} on the backup -> {} on the primary ({})",
//!         row.group, row.topic, row.partition, row.from_offset, row.offset, row.rule.name()
//!     );
//! }
//! // Plan it with `apply::plan(primary.kafka(), &failback.to_translation("backup"), ...)`.
//! # Ok(())
//! # }
//! ```
//!
//! # Record matching
//!
//! With [`FailbackRequest::match_records`], after [`sharpen_with_records`], each row still not
//! exact (`reverse-rule`, `counted`) is matched backwards
//! ([`match_reverse`](crate::record_match::reverse::match_reverse)): MM2 copied the primary's records to the backup, so the
//! backup's records from the rule's sync `(u0, d0)` on are matched against the primary's, the
//! record just below the group's offset `D` is proven to copy `L`, nothing below `D` is proven
//! to copy anything past `L`, and the answer is the primary's first record after `L` (rule
//! `record-match`). A row short of that proof keeps its answer and says why
//! ([`FailbackRow::unmatched`]).

mod index;
/// Reverse record matching lives in `precise` (the `replication` layer, below `apply`, uses it
/// too); failback keeps its names.
use crate::record_match::reverse as record_match;
mod rule;
mod stretch_proof;
mod translate;

pub use rule::{
    FailbackRule, ReverseAnswer, ReverseIndex, ReverseIndexBuilder, ReversePartition, Stretch,
};
pub use stretch_proof::{
    PROOF_BUDGET_OFFSETS, ProofReport, Ranges, RecordOffsets, read_record_offsets,
};
pub use translate::{
    FailbackRequest, FailbackRow, FailbackTranslation, Untranslated, UntranslatedRow,
    sharpen_with_records, translate_failback,
};
