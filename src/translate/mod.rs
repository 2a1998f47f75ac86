//! The `translate` layer: read the checkpoints topic once, in parallel, and translate every
//! requested consumer group at once.
//!
//! The semantics follow Java's `MirrorClient.remoteConsumerOffsets` (last checkpoint in log
//! order wins, no monotonicity check), except where we deliberately do better: every partition is
//! read, the end is a snapshot taken at the start, a deadline fails instead of returning a
//! partial map silently, tombstones delete, and bad records are counted instead of aborting.
//!
//! # References
//! - KIP-382 (MirrorMaker 2), KIP-1239 (batch offset translation)

mod mirror_client;
mod offline;
mod offset;
mod plan;
mod progress;
mod read;
mod report;
mod table;
mod translation;
mod translator;

pub use mirror_client::{MirrorClient, OffsetAndMetadata};
pub use offline::BatchTranslator;
pub use plan::MIN_SPLIT_OFFSETS;
pub use progress::ReadProgress;
pub use read::ReadError;
// The read machinery, shared with the layers above that read other topics the same way (the
// offset syncs of `precise`, the live map of `watch`); not part of the public API.
pub(crate) use mirror_client::{read_report, topic_bounds};
pub use offset::{OffsetRef, TranslatedOffset};
pub(crate) use plan::plan_ranges;
pub(crate) use read::{FoldSpec, RangeFold, RangeOutcome, read_ranges};
pub use report::{PartitionProgress, ReadReport, SkipCount, SkipCounts};
// Owned by `mm2::fold` (the one public path).
pub(crate) use report::SkipReason;
pub(crate) use table::OffsetTable;
pub use translation::{JSON_SCHEMA_VERSION, Translation};
pub(crate) use translator::{Entry, Folded, Interner, Key, NO_METADATA};

use std::time::Duration;

use crate::client::{ClientError, IsolationLevel};
use crate::select::GroupSelector;

/// What to translate and how.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TranslateRequest {
    /// Source cluster aliases; each names a checkpoints topic through the replication policy.
    pub sources: Vec<String>,
    /// Which groups.
    pub groups: GroupSelector,
    /// read_uncommitted (Java's choice) or read_committed.
    pub isolation: IsolationLevel,
    /// Budget for the whole read, metadata included.
    pub timeout: Duration,
    /// Ranges read at once.
    pub parallelism: usize,
    /// Return what was read when the deadline passes, marked incomplete, instead of failing.
    pub allow_partial: bool,
    /// Upper bound on one Fetch's bytes per partition.
    pub max_bytes_per_fetch: i32,
    /// Counters to follow the read as it goes, if wanted.
    pub progress: Option<std::sync::Arc<ReadProgress>>,
    /// A partition is split into several ranges only when each piece has at least this many
    /// offsets ([`MIN_SPLIT_OFFSETS`] by default).
    pub min_split_offsets: i64,
}

impl TranslateRequest {
    /// A request for `groups` of one source alias, with defaults: read_uncommitted, 60 s,
    /// parallelism 4, no partial results.
    pub fn new(source: impl Into<String>, groups: GroupSelector) -> Self {
        TranslateRequest::for_sources([source], groups)
    }

    /// As [`new`](TranslateRequest::new), for several source aliases read in one go.
    pub fn for_sources<S: Into<String>>(
        sources: impl IntoIterator<Item = S>,
        groups: GroupSelector,
    ) -> Self {
        TranslateRequest {
            sources: sources.into_iter().map(Into::into).collect(),
            groups,
            isolation: IsolationLevel::ReadUncommitted,
            timeout: Duration::from_secs(60),
            parallelism: 4,
            allow_partial: false,
            max_bytes_per_fetch: crate::client::DEFAULT_FETCH_MAX_BYTES,
            progress: None,
            min_split_offsets: MIN_SPLIT_OFFSETS,
        }
    }
}

/// Why a translation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranslateError {
    /// The checkpoints topic for a source does not exist. It is never auto-created.
    #[error("checkpoints topic {topic:?} for source {source_alias:?} does not exist on the target cluster: {}", existing_hint(.existing))]
    MissingCheckpointsTopic {
        /// The source alias.
        source_alias: String,
        /// The topic the replication policy names.
        topic: String,
        /// The checkpoints topics that do exist.
        existing: Vec<String>,
    },
    /// The deadline passed before every partition was read.
    #[error("the read did not complete within {timeout:?}: {}", describe_incomplete(.partitions))]
    Incomplete {
        /// The whole budget.
        timeout: Duration,
        /// Every partition's progress (the incomplete ones have `read_to < end`).
        partitions: Vec<PartitionProgress>,
    },
    /// The offset-syncs topic does not exist on the cluster it was looked for on.
    #[error(
        "offset-syncs topic {topic:?} does not exist on the cluster given for it; MirrorMaker 2 keeps it on the source cluster unless offset-syncs.topic.location=target"
    )]
    MissingOffsetSyncsTopic {
        /// The topic the replication policy names.
        topic: String,
    },
    /// The offset-syncs topic's history does not belong to the checkpoints' flow (records that
    /// are not offset syncs, or syncs that cannot have produced MM2's own checkpoints): a
    /// precise translation from it could skip records, so none is made.
    #[error("--precise refuses offset-syncs topic {topic:?}: {reason}")]
    UntrustedSyncHistory {
        /// The topic read as the offset-syncs topic.
        topic: String,
        /// Why, with counts.
        reason: String,
    },
    /// The offset-syncs topic failback would reverse does not belong to the flow: records that
    /// are not offset syncs, or syncs that cannot have produced the forward flow's own
    /// checkpoints on the backup. A failback from it could skip records, so none is made.
    #[error("failback refuses offset-syncs topic {topic:?}: {reason}")]
    UntrustedFailbackHistory {
        /// The topic read as the offset-syncs topic.
        topic: String,
        /// Why, with counts.
        reason: String,
    },
    /// The client failed (connection, authentication, broker error).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Reading a partition failed (e.g. a corrupt batch, or its leader failed).
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A group pattern (of [`MirrorClient::remote_consumer_offsets_matching`]) is not a valid
    /// regular expression.
    #[error(transparent)]
    InvalidPattern(#[from] crate::select::InvalidGroupPattern),
}

fn existing_hint(existing: &[String]) -> String {
    if existing.is_empty() {
        "no checkpoints topics exist there: is MirrorMaker 2 running with emit.checkpoints.enabled, and is this the target cluster?".to_string()
    } else {
        format!("checkpoints topics that exist: {}", existing.join(", "))
    }
}

fn describe_incomplete(partitions: &[PartitionProgress]) -> String {
    partitions
        .iter()
        .filter(|p| !p.complete())
        .map(|p| {
            format!(
                "{}-{} read to offset {} of {} (started at {})",
                p.topic, p.partition, p.read_to, p.end, p.start
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_no_command_line_flags() {
        let incomplete = TranslateError::Incomplete {
            timeout: Duration::from_secs(1),
            partitions: Vec::new(),
        };
        let missing = TranslateError::MissingCheckpointsTopic {
            source_alias: "primary".into(),
            topic: "primary.checkpoints.internal".into(),
            existing: vec!["other.checkpoints.internal".into()],
        };
        for error in [incomplete, missing] {
            let text = error.to_string();
            assert!(!text.contains("--"), "{text}");
        }
    }
}
