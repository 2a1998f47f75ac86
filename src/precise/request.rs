//! What a precise translation is asked for: where the sync history comes from, whether the
//! source's committed offsets replace the checkpoints', and whether records are matched.

use std::sync::Arc;

use super::provenance::SyncHistory;
use super::read::read_syncs;
use super::snapshot::SyncSnapshot;
use super::source::SyncsSource;
use crate::client::{Deadline, KafkaClient};
use crate::mm2::sync_index::{Interpolation, SyncIndex};
use crate::record_match::MatchOptions;
use crate::translate::{ReadReport, TranslateError, TranslateRequest};

/// Where the sync history comes from.
#[derive(Clone, Debug)]
pub enum Syncs {
    /// Read the offset-syncs topic.
    Topic(SyncsSource),
    /// An index already read (and what reading it did): for callers that need it before the
    /// translation too.
    Read {
        /// The index.
        index: Arc<SyncIndex>,
        /// What reading it did.
        report: ReadReport,
    },
    /// A snapshot a [`SyncsWatcher`](crate::watch::SyncsWatcher) wrote while the topic was readable (the source may be
    /// gone), re-indexed with `interpolation`.
    Snapshot {
        /// The snapshot.
        snapshot: Arc<SyncSnapshot>,
        /// As [`SyncsSource::interpolation`].
        interpolation: Interpolation,
    },
}

impl Syncs {
    /// The index and what reading it did (a snapshot reports its syncs as records read).
    pub(crate) async fn index(
        &self,
        request: &TranslateRequest,
        deadline: Deadline,
    ) -> Result<(SyncIndex, ReadReport), TranslateError> {
        self.index_with_history(request, deadline)
            .await
            .map(|(index, report, _)| (index, report))
    }

    /// [`index`](Self::index), with the raw history read from the topic (`None` for an index
    /// already read or a snapshot), which the provenance check compares with MM2's checkpoints.
    pub(crate) async fn index_with_history(
        &self,
        request: &TranslateRequest,
        deadline: Deadline,
    ) -> Result<(SyncIndex, ReadReport, Option<SyncHistory>), TranslateError> {
        match self {
            Syncs::Topic(syncs) => read_syncs(syncs, request, deadline)
                .await
                .map(|(index, report, history)| (index, report, Some(history))),
            Syncs::Read { index, report } => Ok(((**index).clone(), report.clone(), None)),
            Syncs::Snapshot {
                snapshot,
                interpolation,
            } => Ok((snapshot.index(*interpolation), snapshot.report(), None)),
        }
    }
}

/// An upstream position to translate: `group` (empty for none), the topic on the source,
/// the partition and the upstream offset.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub struct UpstreamPosition {
    /// The consumer group, or `""`.
    pub group: String,
    /// The topic's name on the source.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The upstream offset (the next record to read).
    pub offset: i64,
}

impl UpstreamPosition {
    /// The upstream `offset` of `group` (`""` for none) on `topic`-`partition` of the source.
    pub fn new(
        group: impl Into<String>,
        topic: impl Into<String>,
        partition: i32,
        offset: i64,
    ) -> Self {
        UpstreamPosition {
            group: group.into(),
            topic: topic.into(),
            partition,
            offset,
        }
    }
}

/// Record matching's connection and settings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct MatchRecords {
    /// The source cluster: the upstream topics are read there.
    pub source: KafkaClient,
    /// How to read.
    pub options: MatchOptions,
}

impl MatchRecords {
    /// Record matching against the `source` cluster, read with `options`.
    pub fn new(source: KafkaClient, options: MatchOptions) -> Self {
        MatchRecords { source, options }
    }
}

/// What a precise translation uses beyond the checkpoints.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PreciseRequest {
    /// The sync history.
    pub syncs: Syncs,
    /// Translate from each group's offsets committed on this (source) cluster now, and
    /// translate every partition a selected group committed there, checkpointed or not.
    pub source_offsets: Option<KafkaClient>,
    /// Prove exact offsets with the records (rule `record-match`).
    pub match_records: Option<MatchRecords>,
}

impl PreciseRequest {
    /// Re-translate the checkpoints from the history, nothing more.
    pub fn new(syncs: Syncs) -> Self {
        PreciseRequest {
            syncs,
            source_offsets: None,
            match_records: None,
        }
    }
}
