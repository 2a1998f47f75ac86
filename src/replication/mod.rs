//! The `replication` layer. What a failover would lose right now: per remote partition on the
//! backup (`primary.orders`), the source records that have no copy there, proven by the
//! records of both clusters.
//!
//! For each remote partition the backup's copy is followed to its tip
//! ([`match_tip`]): the newest offset sync
//! below the replica's log end narrows the search, and record matching proves which source
//! record the replica's records copy, so `copied_to` follows the greatest source record with a
//! copy (past a restart's duplicate block), never the replica's log end nor the last sync, and
//! never MM2's Connect offsets (flushed on an interval, they lag). Then the source is read from
//! `copied_to` to its log end and the records are counted, not the offsets (compaction and
//! transaction markers leave offsets without records):
//!
//! * `not_copied`: the data records a `read_committed` consumer reads there (committed data);
//! * `aborted_not_copied`: records of aborted transactions there (no consumer of
//!   `read_committed` reads them, and MM2 does not copy them);
//! * `open_not_copied`: data records at or past the last stable offset (the oldest open
//!   transaction's first record): not readable by `read_committed` yet, whatever the
//!   transaction's outcome;
//! * markers are not counted.
//!
//! The cost: one read of the offset-sync topic, a few ListOffsets per topic, and per partition
//! one matching read on each side near the tip plus the source records not copied.
//!
//! The book's page `replication.md` states the definitions; [`ReplicationRow`] documents each
//! field.
//!
//! ```no_run
//! # async fn demo(backup: mm2_offsets::client::KafkaClient, primary: mm2_offsets::client::KafkaClient) -> Result<(), mm2_offsets::translate::TranslateError> {
//! use mm2_offsets::mm2::ReplicationPolicy;
//! use mm2_offsets::precise::SyncsSource;
//! use mm2_offsets::replication::{ReplicationRequest, measure};
//! use mm2_offsets::select::GroupSelector;
//!
//! let policy = ReplicationPolicy::default();
//! let syncs = SyncsSource::new(primary.clone(), &policy, "backup");
//! let request = ReplicationRequest::new("primary", GroupSelector::ids(["orders"]));
//! let report = measure(&backup, &primary, &syncs, &policy, &request).await?;
//! println!("{} records not copied", report.total.not_copied);
//! # Ok(()) }
//! ```

mod count;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::client::{
    ClientError, DEFAULT_FETCH_MAX_BYTES, Deadline, IsolationLevel, KafkaClient, OffsetSpec,
    SharedTopic,
};
use crate::mm2::ReplicationPolicy;
use crate::precise::provenance::SyncHistory;
use crate::precise::{SyncsSource, read_sync_runs};
use crate::record_match::reverse::{ReverseUnmatched, TipRow, match_tip};
use crate::record_match::{MatchOptions, MatchStats};
use crate::select::GroupSelector;
use crate::translate::{MIN_SPLIT_OFFSETS, ReadReport, TranslateError, TranslateRequest};

pub use count::Counts;

/// What to measure and how to read.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReplicationRequest {
    /// The primary's alias: the prefix of its topics' replicas on the backup (`primary.orders`).
    pub source: String,
    /// Which topics: a remote topic is selected when its source name (`orders`) or its name on
    /// the backup (`primary.orders`) is selected.
    pub topics: GroupSelector,
    /// Budget for every read.
    pub timeout: Duration,
    /// Partitions read at once.
    pub parallelism: usize,
    /// Upper bound on one Fetch's bytes per partition.
    pub max_bytes_per_fetch: i32,
    /// How record matching reads.
    pub matching: MatchOptions,
}

impl ReplicationRequest {
    /// A request with defaults: 60 s, parallelism 4.
    pub fn new(source: impl Into<String>, topics: GroupSelector) -> Self {
        ReplicationRequest {
            source: source.into(),
            topics,
            timeout: Duration::from_secs(60),
            parallelism: 4,
            max_bytes_per_fetch: DEFAULT_FETCH_MAX_BYTES,
            matching: MatchOptions::default(),
        }
    }
}

/// One remote partition: how far the backup's copy reaches and what a failover now would lose.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ReplicationRow {
    /// The remote topic on the backup, e.g. `primary.orders`.
    pub topic: String,
    /// The partition (the same on both clusters).
    pub partition: i32,
    /// The topic on the primary, e.g. `orders`.
    pub source_topic: String,
    /// The primary's log start offset.
    pub source_log_start: i64,
    /// The primary's log end offset (high watermark).
    pub source_log_end: i64,
    /// The primary's last stable offset (the first offset of its oldest open transaction; the
    /// log end when none is open).
    pub source_last_stable: i64,
    /// The backup's log end offset for the replica.
    pub backup_log_end: i64,
    /// The primary offset of the first record with no copy on the backup (the log end when
    /// every record has one); `None` when it is not proven (`unproven` says why).
    pub copied_to: Option<i64>,
    /// Committed data records at or after `copied_to`: what a `read_committed` consumer of the
    /// primary reads that the backup lacks. `None` when `copied_to` is not proven.
    pub not_copied: Option<u64>,
    /// Records of aborted transactions at or after `copied_to`.
    pub aborted_not_copied: Option<u64>,
    /// Data records at or after the last stable offset (transactions still open).
    pub open_not_copied: Option<u64>,
    /// The smallest timestamp among the `not_copied` records (ms; for a LogAppendTime topic the
    /// broker's append time), `None` when nothing is missing.
    pub oldest_not_copied_timestamp: Option<i64>,
    /// Seconds from `oldest_not_copied_timestamp` to the measurement (0 when nothing is
    /// missing, never negative), `None` when not proven.
    pub seconds_behind: Option<f64>,
    /// `copied_to` below the primary's log start: offsets that were removed (retention) before
    /// MM2 copied them, this many (0 when none).
    pub lost_before_copy: i64,
    /// Why `copied_to` is not proven (a [`ReverseUnmatched`] name), `None` when it is.
    pub unproven: Option<String>,
    /// The proof rests on the residual assumption of record matching (the backup's records
    /// below the oldest kept sync were not read, see
    /// [`ReverseMatch`](crate::record_match::reverse::ReverseMatch)).
    pub assumes_history: bool,
}

/// The sums over the proven rows.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Totals {
    /// Rows.
    pub partitions: usize,
    /// Rows with at least one record not copied.
    pub partitions_behind: usize,
    /// Rows whose `copied_to` is not proven (left out of the sums).
    pub unproven: usize,
    /// Sum of `not_copied`.
    pub not_copied: u64,
    /// Sum of `aborted_not_copied`.
    pub aborted_not_copied: u64,
    /// Sum of `open_not_copied`.
    pub open_not_copied: u64,
    /// Sum of `lost_before_copy`.
    pub lost_before_copy: i64,
    /// The smallest `oldest_not_copied_timestamp`.
    pub oldest_not_copied_timestamp: Option<i64>,
    /// The greatest `seconds_behind`.
    pub seconds_behind: f64,
}

/// The measurement.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Replication {
    /// Sorted by topic and partition.
    pub rows: Vec<ReplicationRow>,
    /// The sums.
    pub total: Totals,
    /// The read of the offset-syncs topic.
    pub syncs_report: ReadReport,
    /// What record matching read.
    pub matching: MatchStats,
    /// When the primary's log ends were read (ms since the epoch): `seconds_behind` is
    /// measured to it.
    pub measured_at_ms: i64,
}

impl Replication {
    /// Whether every row is proven.
    pub fn is_complete(&self) -> bool {
        self.total.unproven == 0
    }

    /// Keeps the rows `keep` accepts (remote topic, partition) and sums them again: e.g. the
    /// partitions of the groups a failover moves, out of their topics' measurement.
    ///
    /// ```no_run
    /// # fn demo(mut report: mm2_offsets::replication::Replication) {
    /// report.retain(|topic, partition| topic == "primary.orders" && partition == 0);
    /// assert!(report.total.partitions <= 1);
    /// # }
    /// ```
    pub fn retain(&mut self, mut keep: impl FnMut(&str, i32) -> bool) {
        self.rows.retain(|r| keep(&r.topic, r.partition));
        self.total = totals(&self.rows);
    }
}

/// A remote partition to measure.
struct Remote {
    topic: SharedTopic,
    source_topic: String,
    partition: i32,
}

/// Measures every selected remote partition of `request.source` on `backup`: the offset-sync
/// history from `syncs`, the records from `backup` and `primary`.
///
/// # Errors
/// A [`TranslateError`] when the offset-syncs topic cannot be read completely or a cluster
/// cannot be listed; a partition whose records cannot be read is a row that says why
/// (`unproven`), not an error.
pub async fn measure(
    backup: &KafkaClient,
    primary: &KafkaClient,
    syncs: &SyncsSource,
    policy: &ReplicationPolicy,
    request: &ReplicationRequest,
) -> Result<Replication, TranslateError> {
    let deadline = Deadline::after(request.timeout);
    let read = TranslateRequest {
        timeout: request.timeout,
        parallelism: request.parallelism.max(1),
        allow_partial: false,
        max_bytes_per_fetch: request.max_bytes_per_fetch,
        progress: None,
        min_split_offsets: MIN_SPLIT_OFFSETS,
        ..TranslateRequest::new(request.source.clone(), GroupSelector::all())
    };
    let remotes = remote_partitions(backup, policy, request, &deadline);
    let histories = read_histories(syncs, &read, deadline);
    let (remotes, (histories, syncs_report)) = tokio::try_join!(remotes, histories)?;
    let rows: Vec<TipRow<'_>> = remotes
        .iter()
        .map(|r| TipRow {
            downstream_topic: &r.topic.name,
            upstream_topic: &r.source_topic,
            partition: r.partition,
        })
        .collect();
    let (answers, matching) = match_tip(
        primary,
        backup,
        &rows,
        |topic, partition| {
            histories
                .get(topic.as_bytes())
                .and_then(|p| p.get(&partition))
                .cloned()
        },
        &request.matching,
        deadline,
    )
    .await;
    drop(rows);
    let ends = ends(backup, primary, &remotes, &deadline).await?;
    let measured_at_ms = now_ms();
    // The futures built first, then run: a stream's `map` closure over borrowed rows makes the
    // future not provably `Send` (a higher-ranked lifetime the compiler cannot see through).
    let mut rows = Vec::with_capacity(remotes.len());
    for (remote, answer) in remotes.iter().zip(answers) {
        let end = ends
            .get(&(remote.topic.name.as_str(), remote.partition))
            .copied();
        rows.push(row(primary, remote, answer, end, measured_at_ms, deadline));
    }
    let mut out: Vec<ReplicationRow> = futures::stream::iter(rows)
        .buffer_unordered(request.parallelism.max(1))
        .collect()
        .await;
    out.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    let total = totals(&out);
    Ok(Replication {
        rows: out,
        total,
        syncs_report,
        matching,
        measured_at_ms,
    })
}

/// The remote partitions of `request.source` on the backup that `request.topics` selects.
async fn remote_partitions(
    backup: &KafkaClient,
    policy: &ReplicationPolicy,
    request: &ReplicationRequest,
    deadline: &Deadline,
) -> Result<Vec<Remote>, TranslateError> {
    let listed = backup.list_topics(deadline).await?;
    let mut wanted: Vec<(String, String)> = Vec::new();
    for info in listed {
        let name = info.name.as_str();
        if info.is_internal || name.ends_with(".internal") {
            continue;
        }
        if policy.topic_source(name) != Some(request.source.as_str()) {
            continue;
        }
        let Some(upstream) = policy.upstream_topic(name) else {
            continue;
        };
        if request.topics.matches(upstream) || request.topics.matches(name) {
            wanted.push((name.to_string(), upstream.to_string()));
        }
    }
    let mut out = Vec::new();
    for (name, upstream) in wanted {
        let topic = backup.describe_topic(&name, deadline).await?;
        for p in &topic.partitions {
            out.push(Remote {
                topic: topic.clone(),
                source_topic: upstream.clone(),
                partition: p.partition,
            });
        }
    }
    Ok(out)
}

/// Each upstream partition's kept syncs in log order, downstream offsets increasing: negative
/// offsets and re-sent syncs dropped, everything before a downstream regression (a truncated or
/// recreated replica) dropped, as the failback index keeps them.
async fn read_histories(
    syncs: &SyncsSource,
    read: &TranslateRequest,
    deadline: Deadline,
) -> Result<(Histories, ReadReport), TranslateError> {
    let (outcomes, report) = read_sync_runs(syncs, read, deadline).await?;
    let mut logs = Histories::default();
    let mut history = SyncHistory::new();
    for outcome in outcomes {
        outcome
            .folded
            .for_each(&mut history, |topic, partition, run| {
                let log = logs
                    .entry(topic.into())
                    .or_default()
                    .entry(partition)
                    .or_default();
                for sync in run.iter() {
                    let (u, d) = (sync.upstream, sync.downstream);
                    if u < 0 || d < 0 {
                        continue;
                    }
                    match log.last() {
                        Some(&last) if last == (u, d) => continue,
                        Some(&(_, last_d)) if d <= last_d => log.clear(),
                        _ => {}
                    }
                    log.push((u, d));
                }
            });
    }
    Ok((logs, report))
}

/// Upstream topic -> partition -> kept syncs `(upstream, downstream)` in log order.
type Histories = FxHashMap<Box<[u8]>, FxHashMap<i32, Vec<(i64, i64)>>>;

/// A partition's ends on both clusters.
#[derive(Clone, Copy, Debug)]
struct PartitionEnds {
    backup_end: i64,
    source_start: i64,
    source_end: i64,
    source_stable: i64,
}

/// The ends of every remote partition, read after matching (so each is at or past what
/// matching saw): (remote topic, partition) -> ends.
async fn ends<'a>(
    backup: &KafkaClient,
    primary: &KafkaClient,
    remotes: &'a [Remote],
    deadline: &Deadline,
) -> Result<BTreeMap<(&'a str, i32), PartitionEnds>, ClientError> {
    use IsolationLevel::{ReadCommitted, ReadUncommitted};
    use OffsetSpec::{Earliest, Latest};
    let mut by_topic: BTreeMap<&str, (&Remote, Vec<i32>)> = BTreeMap::new();
    for r in remotes {
        by_topic
            .entry(r.topic.name.as_str())
            .or_insert((r, Vec::new()))
            .1
            .push(r.partition);
    }
    let mut out = BTreeMap::new();
    for (name, (remote, partitions)) in by_topic {
        let backup_end = backup
            .list_offsets(
                &remote.topic,
                &partitions,
                Latest,
                ReadUncommitted,
                deadline,
            )
            .await?;
        let up = primary
            .describe_topic(&remote.source_topic, deadline)
            .await?;
        let start = primary
            .list_offsets(&up, &partitions, Earliest, ReadUncommitted, deadline)
            .await?;
        let end = primary
            .list_offsets(&up, &partitions, Latest, ReadUncommitted, deadline)
            .await?;
        let stable = primary
            .list_offsets(&up, &partitions, Latest, ReadCommitted, deadline)
            .await?;
        for p in partitions {
            let (Some(&b), Some(&s), Some(&e), Some(&l)) = (
                backup_end.get(&p),
                start.get(&p),
                end.get(&p),
                stable.get(&p),
            ) else {
                continue;
            };
            out.insert(
                (name, p),
                PartitionEnds {
                    backup_end: b,
                    source_start: s,
                    source_end: e,
                    source_stable: l,
                },
            );
        }
    }
    Ok(out)
}

/// One row: the proof's answer, and the records counted from it.
async fn row(
    primary: &KafkaClient,
    remote: &Remote,
    answer: Result<crate::record_match::reverse::ReverseMatch, ReverseUnmatched>,
    ends: Option<PartitionEnds>,
    measured_at_ms: i64,
    deadline: Deadline,
) -> ReplicationRow {
    let mut row = ReplicationRow {
        topic: remote.topic.name.clone(),
        partition: remote.partition,
        source_topic: remote.source_topic.clone(),
        source_log_start: -1,
        source_log_end: -1,
        source_last_stable: -1,
        backup_log_end: -1,
        copied_to: None,
        not_copied: None,
        aborted_not_copied: None,
        open_not_copied: None,
        oldest_not_copied_timestamp: None,
        seconds_behind: None,
        lost_before_copy: 0,
        unproven: None,
        assumes_history: false,
    };
    let Some(ends) = ends else {
        row.unproven = Some("not-read".into());
        return row;
    };
    row.source_log_start = ends.source_start;
    row.source_log_end = ends.source_end;
    row.source_last_stable = ends.source_stable;
    row.backup_log_end = ends.backup_end;
    let copied_to = match answer {
        Ok(m) => {
            row.assumes_history = m.assumes_history;
            m.offset
        }
        // Nothing ever written to the replica, no sync: nothing is copied, the first record
        // the primary still holds is the first without a copy.
        Err(ReverseUnmatched::NoSync) if ends.backup_end == 0 => ends.source_start,
        Err(why) => {
            row.unproven = Some(why.name().to_string());
            return row;
        }
    };
    row.copied_to = Some(copied_to);
    row.lost_before_copy = (ends.source_start - copied_to).max(0);
    let from = copied_to.max(ends.source_start);
    let source = (remote.source_topic.as_str(), remote.partition);
    let range = (ends.source_stable, ends.source_end);
    match count::count(primary, source, from, range, deadline).await {
        Ok(counts) => {
            row.not_copied = Some(counts.committed);
            row.aborted_not_copied = Some(counts.aborted);
            row.open_not_copied = Some(counts.open);
            row.oldest_not_copied_timestamp = counts.oldest_committed;
            row.seconds_behind = Some(counts.oldest_committed.map_or(0.0, |t| {
                (measured_at_ms.saturating_sub(t)).max(0) as f64 / 1000.0
            }));
        }
        Err(why) => {
            row.unproven = Some(format!("not-read: {why}"));
        }
    }
    row
}

fn totals(rows: &[ReplicationRow]) -> Totals {
    let mut t = Totals {
        partitions: rows.len(),
        ..Totals::default()
    };
    for r in rows {
        let Some(n) = r.not_copied else {
            t.unproven += 1;
            continue;
        };
        t.not_copied += n;
        t.partitions_behind += usize::from(n > 0);
        t.aborted_not_copied += r.aborted_not_copied.unwrap_or(0);
        t.open_not_copied += r.open_not_copied.unwrap_or(0);
        t.lost_before_copy += r.lost_before_copy;
        t.oldest_not_copied_timestamp =
            match (t.oldest_not_copied_timestamp, r.oldest_not_copied_timestamp) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        t.seconds_behind = t.seconds_behind.max(r.seconds_behind.unwrap_or(0.0));
    }
    t
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
