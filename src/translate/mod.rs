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

mod groups;
mod mirror_client;
mod offline;
mod plan;
mod progress;
mod read;
mod report;
mod translator;

pub use groups::{GroupSelector, InvalidGroupPattern};
pub use mirror_client::{MirrorClient, OffsetAndMetadata};
pub use offline::BatchTranslator;
pub use plan::{MIN_SPLIT_OFFSETS, PartitionBounds, ReadRange, plan_ranges};
pub use progress::ReadProgress;
pub use report::{PartitionProgress, ReadReport, SkipCount, SkipCounts, SkipReason};

use std::time::Duration;

use serde::Serialize;

use crate::client::{ClientError, IsolationLevel};

/// What to translate and how.
#[derive(Clone, Debug)]
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
        TranslateRequest {
            sources: vec![source.into()],
            groups,
            isolation: IsolationLevel::ReadUncommitted,
            timeout: Duration::from_secs(60),
            parallelism: 4,
            allow_partial: false,
            max_bytes_per_fetch: 8 * 1024 * 1024,
            progress: None,
            min_split_offsets: MIN_SPLIT_OFFSETS,
        }
    }
}

/// One translated offset: where `group` should resume on the target cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TranslatedOffset {
    /// The source cluster alias the checkpoint came from.
    pub source: String,
    /// The consumer group.
    pub group: String,
    /// The topic on the target cluster (already renamed by the replication policy).
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The translated (downstream) offset to commit on the target.
    pub offset: i64,
    /// The group's commit metadata on the source.
    pub metadata: String,
    /// The group's committed offset on the source.
    pub upstream_offset: i64,
    /// The checkpoint record's timestamp (ms since the epoch).
    pub checkpoint_timestamp: i64,
    /// The checkpoint record's partition in the checkpoints topic.
    pub checkpoint_partition: i32,
    /// The checkpoint record's offset in the checkpoints topic.
    pub checkpoint_offset: i64,
}

/// The translated offsets of every selected group, and what the read did.
#[derive(Clone, Debug, Serialize)]
pub struct Translation {
    /// Sorted by source, group, topic, partition.
    pub offsets: Vec<TranslatedOffset>,
    /// Volumes, skipped records, per-partition progress, completeness.
    pub report: ReadReport,
}

impl Translation {
    /// The distinct groups with at least one translated offset, sorted.
    pub fn groups(&self) -> Vec<&str> {
        let mut groups: Vec<&str> = self.offsets.iter().map(|o| o.group.as_str()).collect();
        groups.dedup();
        groups.sort_unstable();
        groups.dedup();
        groups
    }

    /// The offsets of one group (from any source).
    pub fn group(&self, group: &str) -> impl Iterator<Item = &TranslatedOffset> {
        self.offsets.iter().filter(move |o| o.group == group)
    }
}

/// Why a translation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranslateError {
    /// The checkpoints topic for a source does not exist. It is never auto-created.
    #[error("checkpoints topic {topic:?} for source {source_alias:?} does not exist on the target cluster; {}", existing_hint(.existing))]
    MissingCheckpointsTopic {
        /// The source alias.
        source_alias: String,
        /// The topic the replication policy names.
        topic: String,
        /// The checkpoints topics that do exist.
        existing: Vec<String>,
    },
    /// The deadline passed before every partition was read.
    #[error("the read did not complete within {timeout:?}: {}; raise --timeout, or pass --allow-partial to accept an incomplete result", describe_incomplete(.partitions))]
    Incomplete {
        /// The whole budget.
        timeout: Duration,
        /// Every partition's progress (the incomplete ones have `read_to < end`).
        partitions: Vec<PartitionProgress>,
    },
    /// The client failed (connection, authentication, broker error).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Reading a partition failed (e.g. a corrupt batch).
    #[error("{0}")]
    Read(String),
}

fn existing_hint(existing: &[String]) -> String {
    if existing.is_empty() {
        "no checkpoints topics exist there: is MirrorMaker 2 running with emit.checkpoints.enabled, and is this the target cluster?".to_string()
    } else {
        format!(
            "checkpoints topics that exist: {} (check --source and the replication policy settings)",
            existing.join(", ")
        )
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
