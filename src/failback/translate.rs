//! The failback translation itself: the backup's committed offsets read, reversed through the
//! forward flow's history (or a reverse flow's checkpoints), sharpened by the records.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::index::build_reverse_index;
use super::record_match::{self as matching, ReverseUnmatched, match_reverse};
use super::rule::{FailbackRule, ReverseIndex, Stretch};
use super::stretch_proof::{ProofReport, Ranges, read_record_offsets};
use crate::client::{
    ClientError, DEFAULT_FETCH_MAX_BYTES, Deadline, GroupCoordinator, GroupType, IsolationLevel,
    KafkaClient, NOT_CONSUMER_GROUP_TYPES,
};
use crate::mm2::ReplicationPolicy;
use crate::mm2::sync_index::Interpolation;
use crate::precise::provenance::{self, SyncHistory};
use crate::precise::source_offsets::{SourceOffsets, fetch_source_offsets};
use crate::precise::{Provenance, SyncsSource, read_sync_runs};
use crate::record_match::{MatchOptions, MatchStats};
use crate::select::GroupSelector;
use crate::translate::{
    Entry, Folded, Interner, Key, MIN_SPLIT_OFFSETS, MirrorClient, NO_METADATA, OffsetTable,
    ReadReport, TranslateError, TranslateRequest, Translation,
};

/// What to fail back and how to read.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FailbackRequest {
    /// Which groups on the backup.
    pub groups: GroupSelector,
    /// The primary's alias: the prefix of its topics' replicas on the backup.
    pub source: String,
    /// The backup's alias: names the forward flow's offset-syncs topic and the reverse flow's
    /// checkpoints topic.
    pub target: String,
    /// The offset-syncs topic on the primary; `None`: `mm2-offset-syncs.<target>.internal`
    /// under the replication policy.
    pub syncs_topic: Option<String>,
    /// Budget for every read.
    pub timeout: Duration,
    /// Ranges and partitions read at once.
    pub parallelism: usize,
    /// Upper bound on one Fetch's bytes per partition.
    pub max_bytes_per_fetch: i32,
    /// Prove exact offsets with the records of both clusters (rule `record-match`).
    pub match_records: Option<MatchOptions>,
}

impl FailbackRequest {
    /// A request with defaults: the policy's syncs topic, 60 s, parallelism 4.
    pub fn new(
        source: impl Into<String>,
        target: impl Into<String>,
        groups: GroupSelector,
    ) -> Self {
        FailbackRequest {
            groups,
            source: source.into(),
            target: target.into(),
            syncs_topic: None,
            timeout: Duration::from_secs(60),
            parallelism: 4,
            max_bytes_per_fetch: DEFAULT_FETCH_MAX_BYTES,
            match_records: None,
        }
    }
}

/// One partition of a group, translated back to the primary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FailbackRow {
    /// The consumer group.
    pub group: String,
    /// The topic on the primary.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset to commit on the primary.
    pub offset: i64,
    /// The offset the syncs alone prove (the reverse rule, or the checkpoint's): never above
    /// `offset`. For a `record-match` row below the oldest kept sync, where no sync proves
    /// anything, the matched offset itself.
    pub safe_offset: i64,
    /// How `offset` was found.
    pub rule: FailbackRule,
    /// The topic on the backup the group committed on.
    pub from_topic: String,
    /// The group's committed offset there.
    pub from_offset: i64,
    /// The commit metadata on the backup, committed again with the offset.
    pub metadata: String,
    /// The sync `(upstream, downstream)` the answer starts from (reverse rule rows).
    pub sync: Option<(i64, i64)>,
    /// The reverse flow's checkpoint record timestamp (reverse-checkpoint rows), else when the
    /// backup's offsets were read; ms since the epoch.
    pub timestamp: i64,
    /// With record matching: why this row kept its answer (`None`: matched, or not a row
    /// matching could sharpen).
    pub unmatched: Option<ReverseUnmatched>,
    /// A `record-match` answer that rests on the residual assumption (the backup's records
    /// below the oldest kept sync were not read: see [`match_reverse`](crate::record_match::reverse::match_reverse)).
    pub assumes_history: bool,
}

/// Why a committed offset on the backup has no failback offset.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "reason")]
pub enum Untranslated {
    /// A replica of the primary, but no offset sync at or below the group's offset survives
    /// (compacted history, or the group is before the first sync); with record matching, one
    /// the records do not decide either.
    NoSync,
    /// A topic of the backup's own, and the primary holds no reverse flow's checkpoints topic.
    NoReverseFlow,
    /// A topic of the backup's own, and the reverse flow has no checkpoint of it for the group.
    NoReverseCheckpoint,
    /// The reverse flow's checkpoint translates an offset the group has not reached on the
    /// backup (it moved back since): its offset on the primary may skip records.
    CheckpointAhead {
        /// The backup offset the checkpoint translated.
        checkpoint_upstream: i64,
    },
}

/// A committed offset on the backup that is not failed back, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct UntranslatedRow {
    /// The consumer group.
    pub group: String,
    /// The topic on the backup.
    pub from_topic: String,
    /// The partition.
    pub partition: i32,
    /// The group's committed offset there.
    pub from_offset: i64,
    /// Why.
    #[serde(flatten)]
    pub reason: Untranslated,
}

/// The selected groups' offsets on the backup, translated back to the primary.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FailbackTranslation {
    /// Sorted by group, topic, partition.
    pub rows: Vec<FailbackRow>,
    /// Committed offsets on the backup without a failback offset.
    pub untranslated: Vec<UntranslatedRow>,
    /// Groups whose offsets could not be read on the backup, and why.
    pub group_errors: BTreeMap<String, String>,
    /// Groups asked for by id that have no committed offset on the backup.
    pub missing_groups: Vec<String>,
    /// The read of the offset-syncs topic on the primary.
    pub syncs_report: ReadReport,
    /// The read of the reverse flow's checkpoints topic, when the primary has one.
    pub checkpoints_report: Option<ReadReport>,
    /// The reads of the primary's records that proved stretches.
    pub proof: ProofReport,
    /// What record matching read, when asked.
    pub matching: Option<MatchStats>,
    /// How the forward flow's checkpoints on the backup compared with the offset-sync history
    /// (`None`: the backup holds no checkpoints of the forward flow for these groups, so only
    /// the records' shape was checked).
    pub provenance: Option<Provenance>,
    /// When the backup's offsets were read (ms since the epoch).
    pub read_at_ms: i64,
    /// The groups that are Kafka Streams or share groups on the backup (every other row's group
    /// is a consumer group): [`to_translation`](Self::to_translation) carries the types, so that
    /// apply on the primary writes them as Streams groups, or sets a share group's start
    /// offsets (AlterShareGroupOffsets) instead of committing them.
    pub group_types: BTreeMap<String, GroupType>,
}

impl FailbackTranslation {
    /// The rows as a [`Translation`] of the primary's topics, for `apply::plan`: each row's
    /// `offset` is the failback offset, `upstream_offset` the group's offset on the backup,
    /// `source` the backup's alias.
    pub fn to_translation(&self, backup_alias: &str) -> Translation {
        let mut groups = Interner::default();
        let mut topics = Interner::default();
        let mut slots: Vec<FxHashMap<Key, u32>> = Vec::new();
        let mut entries = Vec::with_capacity(self.rows.len());
        let mut metadata: Vec<Box<[u8]>> = Vec::new();
        for row in &self.rows {
            let (group, _) = groups.get_or_insert(row.group.as_bytes());
            let (topic, _) = topics.get_or_insert(row.topic.as_bytes());
            if slots.len() <= group as usize {
                slots.resize_with(group as usize + 1, FxHashMap::default);
            }
            let meta = if row.metadata.is_empty() {
                NO_METADATA
            } else {
                metadata.push(row.metadata.as_bytes().into());
                (metadata.len() - 1) as u32
            };
            slots[group as usize].insert((topic, row.partition), entries.len() as u32);
            entries.push(Entry {
                upstream_offset: row.from_offset,
                downstream_offset: row.offset,
                timestamp: row.timestamp,
                offset: 0,
                partition: 0,
                metadata: meta,
                live: true,
                // Failback's rows are translated from offset syncs, not read from a
                // checkpoint value: no version to carry.
                nonzero_version: false,
            });
        }
        let folded = Folded {
            group_names: groups.into_names(),
            topic_names: topics.into_names(),
            slots,
            entries,
            metadata,
        };
        let report = ReadReport {
            complete: true,
            ..self.syncs_report.clone()
        };
        Translation::new(
            OffsetTable::build(vec![(backup_alias.to_string(), folded)]),
            report,
        )
        .with_group_types(&self.group_types)
    }

    /// How often each rule was used.
    pub fn rule_counts(&self) -> BTreeMap<FailbackRule, usize> {
        let mut counts = BTreeMap::new();
        for row in &self.rows {
            *counts.entry(row.rule).or_insert(0) += 1;
        }
        counts
    }
}

/// Reads the selected groups' committed offsets on `backup` and translates them to the
/// primary (`primary`, whose replication policy names the topics), as the module describes.
///
/// The offset-syncs topic must be read to its end (an incomplete read is an error: a hole could
/// hide a truncation); the reverse flow's checkpoints topic is read when it exists.
pub async fn translate_failback(
    primary: &MirrorClient,
    backup: &KafkaClient,
    request: &FailbackRequest,
) -> Result<FailbackTranslation, TranslateError> {
    let deadline = Deadline::after(request.timeout);
    let policy = primary.replication_policy();
    let syncs = SyncsSource {
        client: primary.kafka().clone(),
        topic: request
            .syncs_topic
            .clone()
            .unwrap_or_else(|| policy.offset_syncs_topic(&request.target)),
        interpolation: Interpolation::Disabled,
    };
    let read = TranslateRequest {
        sources: vec![request.target.clone()],
        groups: request.groups.clone(),
        isolation: IsolationLevel::ReadUncommitted,
        timeout: request.timeout,
        parallelism: request.parallelism.max(1),
        allow_partial: false,
        max_bytes_per_fetch: request.max_bytes_per_fetch,
        progress: None,
        min_split_offsets: MIN_SPLIT_OFFSETS,
    };
    let backup_offsets = async {
        let started = Instant::now();
        let (groups, types) = backup_groups(backup, &request.groups, &deadline).await?;
        // A share group's start offsets stand where a committed offset would (the first
        // record not yet delivered and acknowledged), and are translated back the same way.
        let offsets = fetch_source_offsets(backup, &groups, &types, &deadline).await?;
        tracing::debug!(groups = groups.len(), elapsed = ?started.elapsed(), "backup offsets read");
        Ok::<_, TranslateError>((now_ms(), offsets, types))
    };
    let index = async {
        let started = Instant::now();
        let (outcomes, report) = read_sync_runs(&syncs, &read, deadline).await?;
        let (index, history) = build_reverse_index(outcomes);
        tracing::debug!(syncs = report.records, elapsed = ?started.elapsed(), "offset syncs read");
        Ok::<_, TranslateError>((index, history, report))
    };
    let checkpoints = reverse_flow(primary, backup, request, &read, &deadline);
    let forward = forward_checkpoints(backup, policy, request, &read);
    let ((read_at_ms, offsets, group_types), (index, history, syncs_report), checkpoints, forward) =
        tokio::try_join!(backup_offsets, index, checkpoints, forward)?;
    // The history must be the forward flow's before any offset comes from it.
    let provenance =
        check_history(&history, forward.as_ref(), policy, &syncs.topic).map_err(|e| *e)?;
    let (mut joined, below_oldest) = join(
        &offsets,
        &index,
        checkpoints.as_ref(),
        policy,
        request,
        read_at_ms,
    );
    let started = Instant::now();
    joined.proof =
        sharpen_with_records(primary.kafka(), &index, &mut joined.rows, request, deadline).await?;
    tracing::debug!(records = joined.proof.records, elapsed = ?started.elapsed(), "stretches proven");
    joined.group_types = group_types;
    if let Some(options) = &request.match_records {
        let started = Instant::now();
        let stats = match_records(
            primary.kafka(),
            backup,
            &index,
            (&mut joined, below_oldest),
            options,
            deadline,
        )
        .await;
        tracing::debug!(elapsed = ?started.elapsed(), "records matched");
        joined.matching = Some(stats);
    }
    joined.syncs_report = syncs_report;
    joined.provenance = provenance;
    joined.checkpoints_report = checkpoints.map(|c| c.report);
    joined
        .rows
        .sort_by(|a, b| (&a.group, &a.topic, a.partition).cmp(&(&b.group, &b.topic, b.partition)));
    Ok(joined)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The groups on the backup `selector` selects: every consumer, Kafka Streams and share group
/// its brokers list (one ListGroups per broker) that matches, and every id asked for by name
/// (listed or not: its OffsetFetch tells), with the types of the Streams and share groups. A
/// Streams group answers a plain OffsetFetch; a share group keeps no committed offsets, so its
/// start offsets are read with DescribeShareGroupOffsets instead (`fetch_source_offsets`), and
/// its type goes with it to apply, which sets them with AlterShareGroupOffsets.
async fn backup_groups(
    backup: &KafkaClient,
    selector: &GroupSelector,
    deadline: &Deadline,
) -> Result<(Vec<String>, BTreeMap<String, GroupType>), ClientError> {
    let mut found: BTreeSet<String> = selector.ids_requested().map(str::to_string).collect();
    let mut types = BTreeMap::new();
    let brokers: Vec<GroupCoordinator> = backup
        .brokers()
        .iter()
        .map(|broker| GroupCoordinator {
            node_id: broker.node_id,
            address: broker.address(),
        })
        .collect();
    // Every broker at once, each asked once.
    for (_, listed) in backup.list_groups_on(&brokers, &[], deadline).await {
        let Some(listed) = listed? else {
            continue;
        };
        for g in listed {
            let kind = g.group_type.as_deref().unwrap_or_default();
            let typed = match kind {
                "streams" => Some(GroupType::Streams),
                "share" => Some(GroupType::Share),
                _ => None,
            };
            let selected = selector.matches(&g.group_id);
            if let Some(typed) = typed {
                // Asked for by id or selected: either way, read and written as its type.
                if selected || found.contains(&g.group_id) {
                    types.insert(g.group_id.clone(), typed);
                }
                if selected {
                    found.insert(g.group_id);
                }
            } else if !NOT_CONSUMER_GROUP_TYPES.contains(&kind) && selected {
                found.insert(g.group_id);
            }
        }
    }
    Ok((found.into_iter().collect(), types))
}

/// The forward flow's checkpoints of the selected groups on the backup
/// (`<source>.checkpoints.internal`), as MM2 wrote them; `None` when the backup holds no such
/// topic (or the groups have none).
async fn forward_checkpoints(
    backup: &KafkaClient,
    policy: &ReplicationPolicy,
    request: &FailbackRequest,
    read: &TranslateRequest,
) -> Result<Option<Translation>, TranslateError> {
    let mirror = MirrorClient::new(backup.clone(), policy.clone());
    let read = TranslateRequest {
        sources: vec![request.source.clone()],
        ..read.clone()
    };
    match mirror.translate(&read).await {
        Ok(translation) if translation.is_empty() => Ok(None),
        Ok(translation) => Ok(Some(translation)),
        Err(TranslateError::MissingCheckpointsTopic { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The provenance check of the history failback reverses (see `provenance`): every record
/// must be an offset sync, and where the backup holds the forward flow's checkpoints of the
/// selected groups, the history must reproduce them (MM2 computed them from this very topic)
/// or compaction must explain it. Refused otherwise, with counts.
fn check_history(
    history: &SyncHistory,
    forward: Option<&Translation>,
    policy: &ReplicationPolicy,
    topic: &str,
) -> Result<Option<Provenance>, Box<TranslateError>> {
    let refuse = |refusal: provenance::Refusal| {
        Box::new(TranslateError::UntrustedFailbackHistory {
            topic: topic.to_string(),
            reason: refusal.to_string(),
        })
    };
    provenance::check_shape(history).map_err(refuse)?;
    let Some(checkpoints) = forward else {
        return Ok(None);
    };
    let (counts, _) = provenance::check(checkpoints, history, policy).map_err(refuse)?;
    Ok(Some(counts))
}

/// A reverse flow's translation of one (group, replica topic on the primary, partition).
#[derive(Clone, Copy, Debug)]
struct ReverseRow {
    /// The offset on the primary.
    offset: i64,
    /// MM2's checkpoint offset, or `offset` when that is all there is.
    safe_offset: i64,
    /// The backup offset it translates.
    translated_from: i64,
    /// Whether the reverse flow's offset syncs gave more than MM2's checkpoint.
    from_syncs: bool,
    /// The checkpoint record's timestamp.
    timestamp: i64,
}

/// What a reverse flow backup -> primary says, when the primary holds its checkpoints topic.
struct ReverseFlow {
    rows: BTreeMap<(String, String, i32), ReverseRow>,
    report: ReadReport,
}

/// The reverse flow's translations (`<target>.checkpoints.internal` on the primary), or `None`
/// when the primary holds no such topic (no reverse flow). With the reverse flow's offset-syncs
/// topic on the backup, each group's offset on the backup now is translated with its history
/// (as a [`PreciseRequest`](crate::precise::PreciseRequest) with source offsets does); without it, MM2's checkpoints as they
/// are.
async fn reverse_flow(
    primary: &MirrorClient,
    backup: &KafkaClient,
    request: &FailbackRequest,
    read: &TranslateRequest,
    deadline: &Deadline,
) -> Result<Option<ReverseFlow>, TranslateError> {
    let policy = primary.replication_policy();
    let topic = policy.checkpoints_topic(&read.sources[0]);
    match primary.kafka().describe_topic(&topic, deadline).await {
        Ok(_) => {}
        Err(ClientError::UnknownTopic { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let read = TranslateRequest {
        timeout: deadline.remaining(),
        ..read.clone()
    };
    let syncs = SyncsSource {
        client: backup.clone(),
        topic: policy.offset_syncs_topic(&request.source),
        interpolation: Interpolation::Disabled,
    };
    let mut rows = BTreeMap::new();
    match primary
        .translate_from_source_offsets(&read, &syncs, backup)
        .await
    {
        Ok(precise) => {
            for ((o, p), input) in precise.iter().zip(&precise.inputs) {
                rows.insert(
                    (o.group.to_string(), o.topic.to_string(), o.partition),
                    ReverseRow {
                        offset: p.offset,
                        safe_offset: p.mm2_offset.min(p.offset),
                        translated_from: input.upstream_offset,
                        from_syncs: p.offset > p.mm2_offset,
                        timestamp: o.checkpoint_timestamp,
                    },
                );
            }
            Ok(Some(ReverseFlow {
                rows,
                report: precise.translation.report,
            }))
        }
        // No reverse offset syncs where they are looked for (offset-syncs.topic.location=target,
        // or a flow that emits none): MM2's checkpoints alone.
        Err(TranslateError::MissingOffsetSyncsTopic { .. }) => {
            let translation = primary.translate(&read).await?;
            for o in translation.iter() {
                rows.insert(
                    (o.group.to_string(), o.topic.to_string(), o.partition),
                    ReverseRow {
                        offset: o.offset,
                        safe_offset: o.offset,
                        translated_from: o.upstream_offset,
                        from_syncs: false,
                        timestamp: o.checkpoint_timestamp,
                    },
                );
            }
            Ok(Some(ReverseFlow {
                rows,
                report: translation.report,
            }))
        }
        Err(e) => Err(e),
    }
}

/// Each committed offset on the backup with its failback offset by the reverse rule or the
/// reverse flow's checkpoint, or why it has none. With record matching, also the offsets on a
/// replica that no kept sync lies at or below (untranslated `no-sync`) as rows for matching to
/// answer from the replica's log start, their offset not yet known.
fn join(
    offsets: &SourceOffsets,
    index: &ReverseIndex,
    checkpoints: Option<&ReverseFlow>,
    policy: &ReplicationPolicy,
    request: &FailbackRequest,
    read_at_ms: i64,
) -> (FailbackTranslation, Vec<FailbackRow>) {
    let mut below_oldest = Vec::new();
    let mut out = FailbackTranslation {
        rows: Vec::new(),
        untranslated: Vec::new(),
        group_errors: BTreeMap::new(),
        missing_groups: Vec::new(),
        syncs_report: ReadReport::default(),
        checkpoints_report: None,
        proof: ProofReport::default(),
        matching: None,
        provenance: None,
        read_at_ms,
        group_types: BTreeMap::new(),
    };
    let requested: BTreeSet<&str> = request.groups.ids_requested().collect();
    for (group, answer) in offsets {
        let committed = match answer {
            Ok(committed) => committed,
            Err(e) => {
                out.group_errors.insert(group.clone(), e.clone());
                continue;
            }
        };
        let usable: Vec<_> = committed
            .iter()
            .filter(|(_, c)| c.error_code == 0 && c.offset >= 0)
            .collect();
        if usable.is_empty() && requested.contains(group.as_str()) {
            out.missing_groups.push(group.clone());
        }
        for ((from_topic, partition), c) in usable {
            let untranslated = |reason| UntranslatedRow {
                group: group.clone(),
                from_topic: from_topic.clone(),
                partition: *partition,
                from_offset: c.offset,
                reason,
            };
            let metadata = c.metadata.clone().unwrap_or_default();
            if policy.topic_source(from_topic) == Some(request.source.as_str()) {
                let upstream = policy.upstream_topic(from_topic).unwrap_or(from_topic);
                let answer = index
                    .partition(upstream.as_bytes(), *partition)
                    .and_then(|p| p.translate(c.offset));
                match answer {
                    Some(a) => out.rows.push(FailbackRow {
                        group: group.clone(),
                        topic: upstream.to_string(),
                        partition: *partition,
                        offset: a.offset,
                        safe_offset: a.safe_offset,
                        rule: a.rule,
                        from_topic: from_topic.clone(),
                        from_offset: c.offset,
                        metadata,
                        sync: Some(a.sync),
                        timestamp: read_at_ms,
                        unmatched: None,
                        assumes_history: false,
                    }),
                    None => {
                        out.untranslated.push(untranslated(Untranslated::NoSync));
                        let synced = index.partition(upstream.as_bytes(), *partition).is_some();
                        if request.match_records.is_some() && synced {
                            below_oldest.push(FailbackRow {
                                group: group.clone(),
                                topic: upstream.to_string(),
                                partition: *partition,
                                offset: -1,
                                safe_offset: -1,
                                rule: FailbackRule::RecordMatch,
                                from_topic: from_topic.clone(),
                                from_offset: c.offset,
                                metadata,
                                sync: None,
                                timestamp: read_at_ms,
                                unmatched: None,
                                assumes_history: false,
                            });
                        }
                    }
                }
                continue;
            }
            let Some(flow) = checkpoints else {
                out.untranslated
                    .push(untranslated(Untranslated::NoReverseFlow));
                continue;
            };
            let replica = policy.format_remote_topic(&request.target, from_topic);
            match flow.rows.get(&(group.clone(), replica.clone(), *partition)) {
                None => out
                    .untranslated
                    .push(untranslated(Untranslated::NoReverseCheckpoint)),
                // Translated from an offset the group is not at (it moved back since): the
                // answer may be past its next record.
                Some(r) if r.translated_from > c.offset => {
                    out.untranslated
                        .push(untranslated(Untranslated::CheckpointAhead {
                            checkpoint_upstream: r.translated_from,
                        }))
                }
                Some(r) => out.rows.push(FailbackRow {
                    group: group.clone(),
                    topic: replica.clone(),
                    partition: *partition,
                    offset: r.offset,
                    safe_offset: r.safe_offset,
                    rule: if r.from_syncs {
                        FailbackRule::ReverseFlowSync
                    } else {
                        FailbackRule::ReverseCheckpoint
                    },
                    from_topic: from_topic.clone(),
                    from_offset: c.offset,
                    metadata,
                    sync: None,
                    timestamp: r.timestamp,
                    unmatched: None,
                    assumes_history: false,
                }),
            }
        }
    }
    (out, below_oldest)
}

/// Sharpens the reverse-rule rows that lie strictly inside a stretch between two syncs, with
/// the primary's committed records there ([`super::ReverseAnswer::refine`]). Record
/// matching follows, for the rows still not exact.
pub async fn sharpen_with_records(
    primary: &KafkaClient,
    index: &ReverseIndex,
    rows: &mut [FailbackRow],
    request: &FailbackRequest,
    deadline: Deadline,
) -> Result<ProofReport, ClientError> {
    let mut wanted: Vec<(usize, Stretch)> = Vec::new();
    let mut ranges = Ranges::new();
    for (at, row) in rows.iter().enumerate() {
        if row.rule != FailbackRule::ReverseRule {
            continue;
        }
        let Some(stretch) = index
            .partition(row.topic.as_bytes(), row.partition)
            .and_then(|p| p.stretch(row.from_offset))
        else {
            continue;
        };
        ranges
            .entry((row.topic.clone(), row.partition))
            .or_default()
            .push(stretch.between());
        wanted.push((at, stretch));
    }
    if wanted.is_empty() {
        return Ok(ProofReport::default());
    }
    let (records, report) = read_record_offsets(
        primary,
        ranges,
        request.parallelism,
        request.max_bytes_per_fetch,
        deadline,
    )
    .await?;
    for (at, stretch) in wanted {
        let row = &mut rows[at];
        let Some(found) = records.get(&(row.topic.clone(), row.partition)) else {
            continue;
        };
        let (start, end) = stretch.between();
        let inside =
            &found[found.partition_point(|&o| o < start)..found.partition_point(|&o| o < end)];
        let Some(part) = index.partition(row.topic.as_bytes(), row.partition) else {
            continue;
        };
        let Some(rule) = part.translate(row.from_offset) else {
            continue;
        };
        let sharp = rule.refine(&stretch, row.from_offset, inside);
        row.offset = sharp.offset;
        row.rule = sharp.rule;
    }
    Ok(report)
}

/// Record matching for the rows on the primary's topics still not exact (`reverse-rule`,
/// `counted`): each one proven takes the primary offset of the group's first unread record
/// (rule `record-match`); the others keep their answer and say why. The offsets below the
/// oldest kept sync (`below_oldest`, from [`join`]) that matching proves become rows
/// (`record-match`, their `safe_offset` the same: no sync proves anything there) instead of
/// untranslated `no-sync`; the others stay untranslated.
async fn match_records(
    primary: &KafkaClient,
    backup: &KafkaClient,
    index: &ReverseIndex,
    (joined, below_oldest): (&mut FailbackTranslation, Vec<FailbackRow>),
    options: &MatchOptions,
    deadline: Deadline,
) -> MatchStats {
    let group_types = &joined.group_types;
    let rows = &mut joined.rows;
    let wanted: Vec<usize> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            // An exact-sync row too: inside a restart's duplicate block the group has read the
            // first copies of records past the sync's.
            r.sync.is_some()
                && matches!(
                    r.rule,
                    FailbackRule::ReverseRule | FailbackRule::Counted | FailbackRule::ExactSync
                )
        })
        .map(|(i, _)| i)
        .collect();
    if wanted.is_empty() && below_oldest.is_empty() {
        return MatchStats::default();
    }
    // Where each group stands on the primary: what it processed there before the failover,
    // and what bounds where it started on the replica (`ReverseRow::primary_offset`). A group
    // whose offsets there cannot be read is not matched: without them a copy made before a
    // restart of MM2, below where the group started, would count as read.
    let groups: Vec<String> = wanted
        .iter()
        .map(|&i| &rows[i])
        .chain(&below_oldest)
        .map(|row| row.group.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // Why rows were not matched before any record was read, said with the reads that stopped.
    let mut not_asked: Vec<String> = Vec::new();
    let on_primary = match fetch_source_offsets(primary, &groups, group_types, &deadline).await {
        Ok(found) => found,
        Err(e) => {
            not_asked.push(format!(
                "the groups' offsets on the primary were not read ({e}): no row matched"
            ));
            SourceOffsets::new()
        }
    };
    for (group, answer) in &on_primary {
        if let Err(e) = answer {
            not_asked.push(format!(
                "group {group}: its offsets on the primary were not read ({e}): its rows not matched"
            ));
        }
    }
    // `None`: not known (the group or the partition answered an error); `Some(None)`: the group
    // has no offset there.
    let primary_offset = |row: &FailbackRow| -> Option<Option<i64>> {
        let offsets = on_primary.get(&row.group)?.as_ref().ok()?;
        match offsets.get(&(row.topic.clone(), row.partition)) {
            None => Some(None),
            Some(c) if c.error_code != 0 => None,
            Some(c) => Some((c.offset >= 0).then_some(c.offset)),
        }
    };
    let candidates: Vec<(&FailbackRow, Option<Option<i64>>)> = wanted
        .iter()
        .map(|&i| &rows[i])
        .chain(&below_oldest)
        .map(|row| (row, primary_offset(row)))
        .collect();
    let asked: Vec<matching::ReverseRow<'_>> = candidates
        .iter()
        .filter_map(|&(row, p0)| {
            let row = matching::ReverseRow::new(
                &row.from_topic,
                &row.topic,
                row.partition,
                row.from_offset,
            );
            p0.map(|p0| row.with_primary_offset(p0))
        })
        .collect();
    let known: Vec<bool> = candidates.iter().map(|(_, p0)| p0.is_some()).collect();
    drop(candidates);
    let (answers, stats) = match_reverse(
        primary,
        backup,
        &asked,
        |topic, partition| {
            index
                .partition(topic.as_bytes(), partition)
                .map(|p| p.log_order())
        },
        options,
        deadline,
    )
    .await;
    drop(asked);
    let mut stats = stats;
    stats.unread.extend(not_asked);
    // Back in the order of `wanted` then `below_oldest`, the rows not asked not read.
    let mut asked_answers = answers.into_iter();
    let mut answers = known
        .iter()
        .map(|&known| {
            if known {
                asked_answers
                    .next()
                    .unwrap_or(Err(ReverseUnmatched::NotRead))
            } else {
                Err(ReverseUnmatched::NotRead)
            }
        })
        .collect::<Vec<_>>()
        .into_iter();
    for (i, answer) in wanted.into_iter().zip(answers.by_ref()) {
        let row = &mut rows[i];
        match answer {
            // Proven, and never behind what the syncs and the stretch proofs prove: a proof
            // below them means the model does not hold here.
            Ok(m) if m.offset >= row.offset => {
                row.offset = m.offset;
                row.rule = FailbackRule::RecordMatch;
                row.assumes_history = m.assumes_history;
            }
            // An exact-sync row matching cannot move keeps its answer, exact outside a
            // duplicate block: not a row left unmatched.
            _ if row.rule == FailbackRule::ExactSync => {}
            Ok(_) => row.unmatched = Some(ReverseUnmatched::Inconsistent),
            Err(why) => row.unmatched = Some(why),
        }
    }
    for (mut row, answer) in below_oldest.into_iter().zip(answers) {
        let Ok(m) = answer else { continue };
        let key = (&row.group, &row.from_topic, row.partition, row.from_offset);
        joined.untranslated.retain(|u| {
            (&u.group, &u.from_topic, u.partition, u.from_offset) != key
                || u.reason != Untranslated::NoSync
        });
        row.offset = m.offset;
        row.safe_offset = m.offset;
        row.assumes_history = m.assumes_history;
        joined.rows.push(row);
    }
    stats
}
