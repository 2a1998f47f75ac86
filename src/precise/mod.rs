//! The `precise` layer. Precise translation: MM2's checkpoints re-translated with the full offset-sync history
//! ([`crate::mm2::sync_index`]). The checkpoints (target cluster) and the offset syncs (source or
//! target cluster) are read at the same time, under one deadline.

use std::sync::Arc;
use std::time::Instant;

pub mod failback;
pub(crate) mod history;
mod provenance;
pub mod record_match;
pub mod reverse;
mod run;
pub mod snapshot;
mod source_offsets;
pub mod stretch_proof;
mod syncs;
mod translation;
pub mod verify;

pub use provenance::{NotSyncs, Provenance};
pub use run::{MatchRecords, Matching, PreciseRequest, RowMatch, Syncs, UpstreamPosition};
pub use snapshot::{SnapshotError, SyncSnapshot};
pub use syncs::index_from_batches;
pub use translation::{GroupInputs, Input, PreciseTranslation, RowInput};

use crate::client::{ClientError, Deadline, KafkaClient, ReadOptions};
use crate::mm2::ReplicationPolicy;
use crate::mm2::sync_index::{
    Interpolation, PartitionIndex, PreciseOffset, SyncIndex, TopicSyncs, checkpoint_answer,
};
use crate::translate::{
    MirrorClient, RangeOutcome, ReadReport, TranslateError, TranslateRequest, Translation,
    plan_ranges, read_ranges, read_report, topic_bounds,
};
use syncs::{SyncRun, SyncSpec, build_index};

/// Where the offset-syncs topic is and how to trust it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SyncsSource {
    /// A client for the cluster that holds the topic: the source cluster by default, the target
    /// with `offset-syncs.topic.location=target`.
    pub client: KafkaClient,
    /// The topic, e.g. `ReplicationPolicy::offset_syncs_topic(target_alias)`.
    pub topic: String,
    /// [`Interpolation::GaplessUpstream`] only if the upstream partitions have no offset gaps
    /// (see [`crate::mm2::sync_index`]).
    pub interpolation: Interpolation,
}

impl SyncsSource {
    /// The offset-syncs topic MM2 writes for the flow towards `target_alias` (on the source
    /// cluster) — or, with `offset-syncs.topic.location=target`, pass the source alias and a
    /// client for the target. Interpolation off.
    pub fn new(client: KafkaClient, policy: &ReplicationPolicy, alias: &str) -> Self {
        SyncsSource::for_topic(client, policy.offset_syncs_topic(alias))
    }

    /// The offset-syncs topic `topic` on the cluster `client` reaches (a topic named by the
    /// user rather than derived from the replication policy). Interpolation off.
    pub fn for_topic(client: KafkaClient, topic: impl Into<String>) -> Self {
        SyncsSource {
            client,
            topic: topic.into(),
            interpolation: Interpolation::Disabled,
        }
    }
}

/// Re-translates every offset of `translation` with `index`. A checkpoint names the topic on the
/// target; the syncs name it on the source, one replication hop up.
///
/// The lookups are made partition by partition, in increasing upstream offset, not in the
/// translation's (group) order: each search then starts where the previous one ended, in a
/// history that stays in cache, instead of a binary search from the top of a random partition's
/// history (the cost that dominated when 100,000 rows each missed the cache a dozen times).
pub fn retranslate(
    translation: &Translation,
    index: &SyncIndex,
    policy: &ReplicationPolicy,
) -> Vec<PreciseOffset> {
    let mut topics = UpstreamTopics::new(index, policy);
    let mut out = Vec::with_capacity(translation.len());
    let mut partitions: Vec<Option<&PartitionIndex>> = vec![None; index.partitions()];
    let mut lookups = Vec::with_capacity(translation.len());
    for (row, o) in translation.iter().enumerate() {
        out.push(PreciseOffset::no_sync(o.offset));
        if let Some((number, part)) = topics
            .get(o.topic)
            .1
            .and_then(|syncs| syncs.numbered(o.partition))
        {
            partitions[number] = Some(part);
            lookups.push(Lookup {
                partition: number as u32,
                row: row as u32,
                upstream: o.upstream_offset,
            });
        }
    }
    for bucket in
        by_partition(lookups, partitions.len()).chunk_by_mut(|a, b| a.partition == b.partition)
    {
        bucket.sort_unstable_by_key(|l| l.upstream);
        let Some(part) = partitions[bucket[0].partition as usize] else {
            continue;
        };
        let mut from = 0;
        for lookup in bucket.iter() {
            let (at, answer) = part.translate_from(from, lookup.upstream);
            from = at;
            let row = &mut out[lookup.row as usize];
            *row = checkpoint_answer(answer, row.mm2_offset);
        }
    }
    out
}

/// One row to look up: its partition's number in the index, its place in the translation and
/// its upstream offset.
#[derive(Clone, Copy)]
struct Lookup {
    partition: u32,
    row: u32,
    upstream: i64,
}

/// `lookups` grouped by partition number (below `partitions`), in two linear passes (a counting
/// sort): each partition's rows keep their order.
fn by_partition(lookups: Vec<Lookup>, partitions: usize) -> Vec<Lookup> {
    let mut starts = vec![0usize; partitions + 1];
    for l in &lookups {
        starts[l.partition as usize + 1] += 1;
    }
    for p in 0..partitions {
        starts[p + 1] += starts[p];
    }
    let mut sorted = lookups.clone();
    for l in lookups {
        let at = &mut starts[l.partition as usize];
        sorted[*at] = l;
        *at += 1;
    }
    sorted
}

/// The upstream name and sync histories of the rows' topics, looked up once per run of rows of
/// one topic: a translation's rows come sorted by group, then topic, so a group's partitions of
/// one topic follow each other and share the lookup (the policy's rename and the hash of the
/// name).
pub(crate) struct UpstreamTopics<'a> {
    index: &'a SyncIndex,
    policy: &'a ReplicationPolicy,
    /// The last topic looked up: (target name, upstream name, its histories).
    last: Option<(&'a str, &'a str, Option<&'a TopicSyncs>)>,
}

impl<'a> UpstreamTopics<'a> {
    pub(crate) fn new(index: &'a SyncIndex, policy: &'a ReplicationPolicy) -> Self {
        UpstreamTopics {
            index,
            policy,
            last: None,
        }
    }

    /// The upstream name of target topic `topic` (itself if it is not remote) and the sync
    /// histories of that upstream topic.
    #[inline]
    pub(crate) fn get(&mut self, topic: &'a str) -> (&'a str, Option<&'a TopicSyncs>) {
        if let Some((name, upstream, syncs)) = self.last
            && name == topic
        {
            return (upstream, syncs);
        }
        let upstream = self.policy.upstream_topic(topic).unwrap_or(topic);
        let syncs = self.index.topic(upstream.as_bytes());
        self.last = Some((topic, upstream, syncs));
        (upstream, syncs)
    }
}

impl MirrorClient {
    /// [`translate`](MirrorClient::translate), then every offset re-translated from the full
    /// offset-sync history: never before MM2's offset, never past the group's next record (see
    /// [`crate::mm2::sync_index`] for the argument). Both topics are read in parallel within
    /// `request.timeout`; an incomplete read of the syncs fails like one of the checkpoints
    /// (or, with `allow_partial`, is marked in `syncs_report`).
    pub async fn translate_precise(
        &self,
        request: &TranslateRequest,
        syncs: &SyncsSource,
    ) -> Result<PreciseTranslation, TranslateError> {
        let precise = PreciseRequest::new(Syncs::Topic(syncs.clone()));
        self.translate_precise_with(request, &precise).await
    }
}

/// The provenance check of `history` against the checkpoints of `translation` (see
/// [`provenance`]): the counts and, per row, whether it must keep MM2's offset; or the refusal
/// (an [`TranslateError::UntrustedSyncHistory`]).
pub(crate) fn check_provenance(
    translation: &Translation,
    history: &provenance::SyncHistory,
    policy: &ReplicationPolicy,
    syncs: &SyncsSource,
) -> Result<(Provenance, Vec<bool>), Box<TranslateError>> {
    provenance::check(translation, history, policy).map_err(|refusal| {
        Box::new(TranslateError::UntrustedSyncHistory {
            topic: syncs.topic.clone(),
            reason: refusal.to_string(),
        })
    })
}

/// Sets MM2's offset back on the rows the provenance check says must keep it.
pub(crate) fn keep_mm2_offsets(precise: &mut [PreciseOffset], keep: &[bool]) {
    for (row, &keep) in precise.iter_mut().zip(keep) {
        if keep {
            *row = PreciseOffset::no_sync(row.mm2_offset);
        }
    }
}

/// Reads the whole offset-syncs topic into a [`SyncIndex`], with the checkpoints reader.
pub async fn read_sync_index(
    syncs: &SyncsSource,
    request: &TranslateRequest,
    deadline: Deadline,
) -> Result<(SyncIndex, ReadReport), TranslateError> {
    let (index, report, _) = read_syncs(syncs, request, deadline).await?;
    Ok((index, report))
}

/// [`read_sync_index`], with the raw history the provenance check reads.
pub(crate) async fn read_syncs(
    syncs: &SyncsSource,
    request: &TranslateRequest,
    deadline: Deadline,
) -> Result<(SyncIndex, ReadReport, provenance::SyncHistory), TranslateError> {
    let (outcomes, report) = read_sync_runs(syncs, request, deadline).await?;
    if !report.complete {
        // A hole in the history could hide a truncation or join two syncs that were not
        // consecutive: nothing read is trusted, every offset keeps MM2's (rule no-sync).
        let mut history = provenance::SyncHistory::new();
        history.incomplete();
        return Ok((SyncIndex::default(), report, history));
    }
    let (index, history) = build_index(outcomes, syncs.interpolation);
    Ok((index, report, history))
}

/// Reads the whole offset-syncs topic, in parallel ranges, into each range's syncs grouped by
/// upstream partition (in plan order), with the read's report. Fails on an incomplete read
/// unless `request.allow_partial`.
pub(crate) async fn read_sync_runs(
    syncs: &SyncsSource,
    request: &TranslateRequest,
    deadline: Deadline,
) -> Result<(Vec<RangeOutcome<SyncRun>>, ReadReport), TranslateError> {
    let started = Instant::now();
    let topic = tokio::time::timeout(
        deadline.remaining(),
        syncs.client.describe_topic(&syncs.topic, &deadline),
    )
    .await
    .map_err(|_| ClientError::DeadlineExceeded {
        operation: format!("describing the offset-syncs topic {}", syncs.topic),
        timeout: request.timeout,
        last: None,
    })?
    .map_err(|e| match e {
        ClientError::UnknownTopic { .. } => TranslateError::MissingOffsetSyncsTopic {
            topic: syncs.topic.clone(),
        },
        e => e.into(),
    })?;
    let bounds = topic_bounds(&syncs.client, "", topic, request.isolation, &deadline).await?;
    let ranges = plan_ranges(&bounds, request.parallelism, request.min_split_offsets);
    let options = ReadOptions {
        isolation: request.isolation,
        max_bytes: request.max_bytes_per_fetch,
        ..ReadOptions::default()
    };
    let mut outcomes = read_ranges(
        &syncs.client,
        ranges,
        Arc::new(SyncSpec),
        options,
        request.parallelism,
        deadline,
        None,
    )
    .await?;
    let report = read_report(&bounds, &mut outcomes, started);
    if !report.complete && !request.allow_partial {
        return Err(TranslateError::Incomplete {
            timeout: request.timeout,
            partitions: report.partitions,
        });
    }
    Ok((outcomes, report))
}
