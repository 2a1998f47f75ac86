//! The `precise` layer. Precise translation: MM2's checkpoints re-translated with the full offset-sync history
//! ([`crate::mm2::sync_index`]). The checkpoints (target cluster) and the offset syncs (source or
//! target cluster) are read at the same time, under one deadline.

pub(crate) mod provenance;
mod read;
mod request;
mod retranslate;
mod run;
pub(crate) mod snapshot;
mod source;
pub(crate) mod source_offsets;
mod syncs;
pub(crate) use syncs::SyncRun;
mod translation;

pub use provenance::{NotSyncs, Provenance};
pub use read::read_sync_index;
pub(crate) use read::read_sync_runs;
pub use request::{MatchRecords, PreciseRequest, Syncs, UpstreamPosition};
pub use retranslate::retranslate;
pub use snapshot::{
    MAGIC as SNAPSHOT_MAGIC, MAX_SNAPSHOT_BYTES, PartitionHistory, SnapshotError, SyncSnapshot,
    VERSION as SNAPSHOT_VERSION,
};
pub use source::SyncsSource;
pub use syncs::index_from_batches;
pub use translation::{GroupInputs, Input, Matching, PreciseTranslation, RowInput, RowMatch};
