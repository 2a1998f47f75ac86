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
mod plan;
mod progress;
mod read;
mod report;
mod table;
mod translator;

pub use mirror_client::{MirrorClient, OffsetAndMetadata};
pub use offline::BatchTranslator;
pub use plan::{MIN_SPLIT_OFFSETS, PartitionBounds, ReadRange};
pub use progress::ReadProgress;
pub use read::ReadError;
// The read machinery, shared with the layers above that read other topics the same way (the
// offset syncs of `precise`, the live map of `watch`); not part of the public API.
pub(crate) use mirror_client::{read_report, topic_bounds};
pub(crate) use plan::plan_ranges;
pub(crate) use read::{FoldSpec, RangeFold, RangeOutcome, read_ranges};
pub use report::{PartitionProgress, ReadReport, SkipCount, SkipCounts, SkipReason};
pub use table::OffsetRef;
pub(crate) use table::OffsetTable;
pub(crate) use translator::{Entry, Folded, Interner, Key, NO_METADATA};

use std::time::Duration;

use serde::Serialize;

use crate::client::{ClientError, IsolationLevel};
use crate::select::GroupSelector;

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
            max_bytes_per_fetch: crate::client::DEFAULT_FETCH_MAX_BYTES,
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
///
/// The offsets are held compactly (each name once, a small row per offset) and read through
/// [`iter`](Translation::iter), [`group`](Translation::group) or
/// [`to_owned_offsets`](Translation::to_owned_offsets). It serializes (serde) to the versioned
/// document `mm2-offsets translate -o json` prints, described at [`JSON_SCHEMA_VERSION`].
///
/// ```
/// use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
/// use mm2_offsets::records::builder::BatchBuilder;
/// use mm2_offsets::translate::BatchTranslator;
/// use mm2_offsets::select::GroupSelector;
///
/// let record = |group: &str, partition, offset| {
///     let key = CheckpointKey { group: group.as_bytes(), topic: b"primary.orders", partition };
///     let value = CheckpointValue { version: 0, upstream_offset: offset + 20, downstream_offset: offset, metadata: b"" };
///     (checkpoint::encode_key(&key).unwrap(), checkpoint::encode_value(&value).unwrap())
/// };
/// let (k1, v1) = record("billing", 0, 100);
/// let (k2, v2) = record("audit", 1, 7);
/// let batches = BatchBuilder::new(0).record(Some(&k1), Some(&v1)).record(Some(&k2), Some(&v2)).build();
///
/// let selector = GroupSelector::all();
/// let mut translator = BatchTranslator::new(&selector);
/// translator.add_batches(0, &batches).unwrap();
/// let translation = translator.finish("primary");
///
/// assert_eq!(translation.len(), 2);
/// assert_eq!(translation.groups(), ["audit", "billing"]); // sorted by name
/// let billing: Vec<_> = translation.group("billing").collect();
/// assert_eq!((billing[0].topic, billing[0].partition, billing[0].offset), ("primary.orders", 0, 100));
/// ```
#[derive(Clone, Debug)]
pub struct Translation {
    offsets: table::OffsetTable,
    /// Volumes, skipped records, per-partition progress, completeness.
    pub report: ReadReport,
    missing_groups: Vec<String>,
}

impl Translation {
    pub(crate) fn new(offsets: table::OffsetTable, report: ReadReport) -> Self {
        Translation {
            offsets,
            report,
            missing_groups: Vec::new(),
        }
    }

    /// Records the ids `selector` asked for by name that have no offset here: a mistyped group
    /// in a failover script must not pass unnoticed.
    pub(crate) fn with_missing_groups(mut self, selector: &GroupSelector) -> Self {
        let found: std::collections::HashSet<&str> = self.offsets.groups().into_iter().collect();
        let missing: std::collections::BTreeSet<&str> = selector
            .ids_requested()
            .filter(|id| !found.contains(id))
            .collect();
        self.missing_groups = missing.into_iter().map(str::to_string).collect();
        self
    }

    /// The group ids requested by name (not by pattern) that have no checkpoint in the sources
    /// read, sorted. Patterns that match nothing are not listed.
    pub fn missing_groups(&self) -> &[String] {
        &self.missing_groups
    }

    /// The number of translated offsets.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// Whether no offset was translated.
    pub fn is_empty(&self) -> bool {
        self.offsets.len() == 0
    }

    /// Every translated offset, sorted by source, group, topic, partition.
    pub fn iter(&self) -> impl Iterator<Item = OffsetRef<'_>> + '_ {
        self.offsets.iter()
    }

    /// The distinct groups with at least one translated offset, sorted.
    pub fn groups(&self) -> Vec<&str> {
        self.offsets.groups()
    }

    /// The offsets of one group (from any source), sorted by source, topic, partition.
    pub fn group<'a>(&'a self, group: &str) -> impl Iterator<Item = OffsetRef<'a>> + 'a {
        self.offsets.group(group)
    }

    /// This translation with each offset's (upstream, downstream) pair replaced, in
    /// [`iter`](Translation::iter)'s order; names, metadata and checkpoint positions are kept.
    pub(crate) fn with_offsets(mut self, pairs: impl IntoIterator<Item = (i64, i64)>) -> Self {
        self.offsets.set_offsets(pairs);
        self
    }

    /// A translation of owned rows (unique keys), as if each were a checkpoint.
    pub(crate) fn from_rows(rows: Vec<TranslatedOffset>, report: ReadReport) -> Self {
        Translation::new(table::OffsetTable::from_owned(rows), report)
    }

    /// This translation with `extra` offsets added, in the usual order (sorted by source,
    /// group, topic, partition): rows a re-translation adds for partitions without a
    /// checkpoint. Their keys must not be in the translation already.
    pub(crate) fn with_rows(&self, extra: Vec<TranslatedOffset>) -> Self {
        Translation {
            offsets: self.offsets.with_rows(extra),
            report: self.report.clone(),
            missing_groups: self.missing_groups.clone(),
        }
    }

    /// Every translated offset as an owned value, in [`iter`](Translation::iter)'s order.
    pub fn to_owned_offsets(&self) -> Vec<TranslatedOffset> {
        self.iter().map(|o| o.to_owned_offset()).collect()
    }
}

/// The version of the JSON document a [`Translation`] serializes to (and `mm2-offsets translate
/// -o json` prints). Fields are only ever added within a version; a rename or a removal bumps it.
pub const JSON_SCHEMA_VERSION: u32 = 1;

/// The versioned document, the one definition of it: `{"schema_version": 1, "complete": bool,
/// "offsets": [...], "report": {...}, "missing_groups": [...]}`, each offset with [`TranslatedOffset`]'s fields in their
/// order, and `complete` repeating `report.complete` for readers that look no further. The CLI
/// writes the same bytes through a faster writer, tested against this one.
impl Serialize for Translation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut doc = serializer.serialize_struct("Translation", 5)?;
        doc.serialize_field("schema_version", &JSON_SCHEMA_VERSION)?;
        doc.serialize_field("complete", &self.report.complete)?;
        doc.serialize_field("offsets", &OffsetsJson(self))?;
        doc.serialize_field("report", &self.report)?;
        doc.serialize_field("missing_groups", &self.missing_groups)?;
        doc.end()
    }
}

/// The offsets of a translation as a JSON array, written as they are iterated: a million
/// offsets are never held twice.
struct OffsetsJson<'a>(&'a Translation);

impl Serialize for OffsetsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
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
    use crate::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
    use crate::records::builder::BatchBuilder;

    #[test]
    fn translation_serializes_to_the_versioned_document() {
        let key = checkpoint::encode_key(&CheckpointKey {
            group: b"billing",
            topic: b"primary.orders",
            partition: 3,
        })
        .unwrap();
        let value = checkpoint::encode_value(&CheckpointValue {
            version: 0,
            upstream_offset: 120,
            downstream_offset: 100,
            metadata: b"m",
        })
        .unwrap();
        let batch = BatchBuilder::new(5)
            .record(Some(&key), Some(&value))
            .build();
        let selector = GroupSelector::all();
        let mut translator = BatchTranslator::new(&selector);
        translator.add_batches(2, &batch).unwrap();
        let translation = translator.finish("primary");

        let text = serde_json::to_string(&translation).unwrap();
        // Field order is part of the document: version first, then completeness.
        assert!(
            text.starts_with(&format!(
                "{{\"schema_version\":{JSON_SCHEMA_VERSION},\"complete\":true,\"offsets\":[{{"
            )),
            "{text}"
        );
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["complete"], doc["report"]["complete"]);
        let offset = &doc["offsets"][0];
        assert_eq!(offset["source"], "primary");
        assert_eq!(offset["group"], "billing");
        assert_eq!(offset["topic"], "primary.orders");
        assert_eq!(offset["partition"], 3);
        assert_eq!(offset["offset"], 100);
        assert_eq!(offset["upstream_offset"], 120);
        assert_eq!(offset["metadata"], "m");
        assert_eq!(offset["checkpoint_partition"], 2);
        assert_eq!(offset["checkpoint_offset"], 5);
        // Every field of the owned type, and nothing else.
        let owned = serde_json::to_value(&translation.to_owned_offsets()[0]).unwrap();
        assert_eq!(offset, &owned);
    }

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
