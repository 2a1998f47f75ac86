//! Record matching: exact downstream offsets proven by the records themselves.
//!
//! The sync history bounds where a group's next record was copied to a downstream window (from
//! the last sync below the group's upstream offset `U` to the sync that proves no later copy:
//! the bound a precise translation reports as `max_rereads`). Reading the upstream records from
//! the window's rewind targets on and the downstream window, and comparing records' key, value
//! and headers (byte for byte, found by a digest) and timestamps, proves which downstream record copies which upstream one
//! (the argument is in the module's source), and so the last copy of the group's next record: the offset
//! from which the group reads every record at or after `U` and nothing before it that it
//! need not. Inside a restart's block of duplicates that is the copy after the block.
//!
//! Nothing is called exact without that proof: a row whose window holds no proven copy, or
//! several possible ones, or whose records were removed, keeps the syncs' answer and says why
//! ([`Unmatched`]).
//!
//! A row below the partition's oldest kept sync (the offset-syncs topic is compacted) has a
//! window from the replica's log start, read on its own after the others (so it never takes
//! the byte budget from them).
//!
//! Each partition is read once for all its rows: the windows of its rows are merged into a few
//! offset ranges per side, and the bytes fetched per side are bounded
//! ([`MatchOptions::budget_bytes`]); a row whose window would pass the budget keeps the syncs'
//! answer (`budget`).
//!
//! The assumptions are MirrorMaker 2's own (a single writer per replica partition, records
//! copied byte for byte by its default `ByteArrayConverter`s, no records dropped by SMTs or
//! `errors.tolerance`), checked where the records allow: a sync whose records differ, or
//! bounds that cross, refuse the partition (`inconsistent`). Matching also assumes, as
//! `max_rereads` does, that each restart's first sync reached the offset-syncs topic: a window
//! that ends at a sync rests on it, and so does the floor that bounds the records after a
//! partition's last sync (the tip). A restart after the last sync whose first sync
//! was lost (MM2 killed within moments of restarting) re-copies earlier records; where their
//! contents differ from the records after the floor, the bounds cross and the partition is
//! refused, and where they repeat (identical records) it is not seen.

pub(crate) mod digest;
mod forward;
pub(crate) mod history;
pub(crate) mod plan;
mod read;
pub mod reverse;
pub(crate) mod side;
pub(crate) mod walk;

#[cfg(test)]
pub(crate) mod tests;

use std::collections::BTreeMap;

use futures::StreamExt;

pub use forward::match_rows;
pub use walk::Unmatched;

use crate::client::{ClientError, Deadline, IsolationLevel, KafkaClient, OffsetSpec, SharedTopic};
use crate::record_match::history::LogOrder;
use read::{SideRead, Stopped};
use walk::{Ends, Matched, Upstream};

/// How record matching reads.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct MatchOptions {
    /// Record bytes one side of one partition may fetch (default 32 MiB). The records' keys,
    /// values and headers are kept while their partition is matched (a digest match is
    /// confirmed byte for byte), so memory grows to about twice this for each partition
    /// matched at once.
    pub budget_bytes: u64,
    /// Partitions matched at once (default 4).
    pub parallelism: usize,
    /// Largest Fetch (bytes).
    pub max_fetch_bytes: i32,
}

impl Default for MatchOptions {
    fn default() -> Self {
        MatchOptions {
            budget_bytes: 32 * 1024 * 1024,
            parallelism: 4,
            max_fetch_bytes: crate::client::DEFAULT_FETCH_MAX_BYTES,
        }
    }
}

/// One row to match: an upstream offset of a partition.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct MatchRow<'a> {
    /// The topic on the target (the replica).
    pub downstream_topic: &'a str,
    /// The topic on the source.
    pub upstream_topic: &'a str,
    /// The partition (the same on both sides).
    pub partition: i32,
    /// The upstream offset: the group's next record is the first at or after it.
    pub upstream: i64,
}

impl<'a> MatchRow<'a> {
    /// Upstream offset `upstream` of partition `partition` of `upstream_topic`, replicated to
    /// `downstream_topic`.
    pub fn new(
        downstream_topic: &'a str,
        upstream_topic: &'a str,
        partition: i32,
        upstream: i64,
    ) -> Self {
        MatchRow {
            downstream_topic,
            upstream_topic,
            partition,
            upstream,
        }
    }
}

/// What matching read, in all.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct MatchStats {
    /// Partitions matched.
    pub partitions: usize,
    /// Record bytes fetched from the source.
    pub upstream_bytes: u64,
    /// Record bytes fetched from the target.
    pub downstream_bytes: u64,
    /// Offset ranges read (both sides).
    pub ranges: usize,
    /// Partitions refused because their records contradict the sync history, with the first
    /// downstream offset that showed it: `topic-partition@offset`.
    pub inconsistent: Vec<String>,
    /// Partitions whose read stopped early, and why.
    pub unread: Vec<String>,
}

/// The clusters and settings of one matching run.
#[derive(Clone, Copy)]
pub(crate) struct Clusters<'a> {
    pub(crate) source: &'a KafkaClient,
    pub(crate) target: &'a KafkaClient,
    pub(crate) options: &'a MatchOptions,
    pub(crate) deadline: Deadline,
}

/// Plans, reads and answers one partition's rows.
type PartitionFn<A> = for<'a> fn(
    Clusters<'a>,
    &'a PartitionJob,
    &'a PairEnds,
) -> futures::future::BoxFuture<'a, PartitionOutcome<A>>;

/// One direction of matching: the answer of a row whose partition could not be read, and what
/// is done with a partition.
pub(crate) struct Direction<A> {
    pub(crate) not_read: A,
    pub(crate) partition: PartitionFn<A>,
}

/// Each row's (downstream topic, upstream topic, partition, (offset, floor)), grouped by partition: each
/// topic pair's ends read in a few requests for all its partitions, then each partition
/// planned, read and answered by `direction` (`options.parallelism` at once), the answers put
/// back in row order with what was read.
pub(crate) async fn by_partition<'r, A, F>(
    direction: Direction<A>,
    clusters: Clusters<'_>,
    rows: impl Iterator<Item = ((&'r str, &'r str, i32), (i64, Option<i64>))>,
    histories: F,
) -> (Vec<A>, MatchStats)
where
    A: Clone + Send,
    F: Fn(&str, i32) -> Option<Vec<(i64, i64)>>,
{
    // (downstream topic, upstream topic, partition) -> its rows: (position, (offset, floor)).
    type Rows = Vec<(usize, (i64, Option<i64>))>;
    let mut by_partition: BTreeMap<(&str, &str, i32), Rows> = BTreeMap::new();
    let mut count = 0;
    for (i, ((down, up, partition), offset)) in rows.enumerate() {
        by_partition
            .entry((down, up, partition))
            .or_default()
            .push((i, offset));
        count = i + 1;
    }
    let mut out = vec![direction.not_read.clone(); count];
    let mut stats = MatchStats::default();
    let jobs: Vec<PartitionJob> = by_partition
        .into_iter()
        .map(|((down, up, partition), members)| PartitionJob {
            downstream_topic: down.to_string(),
            upstream_topic: up.to_string(),
            partition,
            offsets: members.iter().map(|&(_, (o, _))| o).collect(),
            floors: members.iter().map(|&(_, (_, f))| f).collect(),
            history: LogOrder::new(histories(up, partition).unwrap_or_default()),
            members: members.into_iter().map(|(i, _)| i).collect(),
        })
        .collect();
    stats.partitions = jobs.len();
    let mut pairs: BTreeMap<(String, String), Vec<i32>> = BTreeMap::new();
    for job in &jobs {
        pairs
            .entry((job.downstream_topic.clone(), job.upstream_topic.clone()))
            .or_default()
            .push(job.partition);
    }
    let mut ends: BTreeMap<(String, String), Result<PairEnds, String>> = BTreeMap::new();
    for ((down, up), partitions) in pairs {
        let found = pair_ends(clusters, &down, &up, &partitions).await;
        ends.insert((down, up), found.map_err(|e| e.to_string()));
    }
    let direction = &direction;
    let results: Vec<(PartitionJob, PartitionOutcome<A>)> = futures::stream::iter(jobs)
        .map(|job| {
            let pair = &ends[&(job.downstream_topic.clone(), job.upstream_topic.clone())];
            async move {
                let outcome = match pair {
                    Ok(pair) => (direction.partition)(clusters, &job, pair).await,
                    Err(why) => {
                        PartitionOutcome::failed(&job, direction.not_read.clone(), why.clone())
                    }
                };
                (job, outcome)
            }
        })
        .buffer_unordered(clusters.options.parallelism.max(1))
        .collect()
        .await;
    for (job, outcome) in results {
        stats.upstream_bytes += outcome.upstream_bytes;
        stats.downstream_bytes += outcome.downstream_bytes;
        stats.ranges += outcome.ranges;
        let name = format!("{}-{}", job.downstream_topic, job.partition);
        if let Some(offset) = outcome.inconsistent {
            stats.inconsistent.push(format!("{name}@{offset}"));
        }
        if let Some(why) = outcome.unread {
            stats.unread.push(format!("{name}: {why}"));
        }
        for (&row, answer) in job.members.iter().zip(outcome.answers) {
            out[row] = answer;
        }
    }
    stats.inconsistent.sort();
    stats.unread.sort();
    (out, stats)
}

/// One partition's rows.
pub(crate) struct PartitionJob {
    pub(crate) downstream_topic: String,
    pub(crate) upstream_topic: String,
    pub(crate) partition: i32,
    pub(crate) members: Vec<usize>,
    /// Each row's offset: upstream (forward) or downstream (backwards).
    pub(crate) offsets: Vec<i64>,
    /// Each row's floor (backwards only): the group's committed offset on the primary
    /// ([`reverse::ReverseRow::primary_offset`]); `None` in forward matching.
    pub(crate) floors: Vec<Option<i64>>,
    pub(crate) history: LogOrder,
}

impl PartitionJob {
    /// Reads both sides of `plan` at once: the sides as far as they got, and why a read stopped
    /// early (the byte budget on either side first, else the first failure).
    pub(crate) async fn read(
        &self,
        clusters: Clusters<'_>,
        pair: &PairEnds,
        plan: &plan::ReadPlan,
    ) -> (side::Side, side::Side, Option<Stopped>) {
        let side = |client, topic, isolation| SideRead {
            client,
            topic,
            partition: self.partition,
            isolation,
            max_fetch: clusters.options.max_fetch_bytes,
            budget: clusters.options.budget_bytes,
            deadline: clusters.deadline,
        };
        let up_read = side(
            clusters.source,
            pair.up.clone(),
            IsolationLevel::ReadCommitted,
        );
        let down_read = side(
            clusters.target,
            pair.down.clone(),
            IsolationLevel::ReadUncommitted,
        );
        let ((up, up_stop), (down, down_stop)) = tokio::join!(
            up_read.read(&plan.upstream),
            down_read.read(&plan.downstream)
        );
        let stopped =
            [up_stop, down_stop]
                .into_iter()
                .flatten()
                .fold(None, |why, stop| match stop {
                    Stopped::Budget => Some(Stopped::Budget),
                    failed => why.or(Some(failed)),
                });
        (up, down, stopped)
    }
}

pub(crate) struct PartitionOutcome<A> {
    pub(crate) answers: Vec<A>,
    pub(crate) upstream_bytes: u64,
    pub(crate) downstream_bytes: u64,
    pub(crate) ranges: usize,
    pub(crate) inconsistent: Option<i64>,
    pub(crate) unread: Option<String>,
}

impl<A: Clone> PartitionOutcome<A> {
    /// Nothing answered yet, for what was read.
    pub(crate) fn read(up: &side::Side, down: &side::Side, plan: &plan::ReadPlan) -> Self {
        PartitionOutcome {
            answers: Vec::new(),
            upstream_bytes: up.bytes,
            downstream_bytes: down.bytes,
            ranges: plan.upstream.len() + plan.downstream.len(),
            inconsistent: None,
            unread: None,
        }
    }

    /// Adds a further read of the same partition.
    pub(crate) fn add_read(&mut self, up: &side::Side, down: &side::Side, plan: &plan::ReadPlan) {
        self.upstream_bytes += up.bytes;
        self.downstream_bytes += down.bytes;
        self.ranges += plan.upstream.len() + plan.downstream.len();
    }

    /// Every row answered `answer` (not read, and why).
    pub(crate) fn failed(job: &PartitionJob, answer: A, why: String) -> Self {
        PartitionOutcome {
            answers: vec![answer; job.members.len()],
            upstream_bytes: 0,
            downstream_bytes: 0,
            ranges: 0,
            inconsistent: None,
            unread: Some(why),
        }
    }

    /// Every row answered `answer`: the records contradict the history at `downstream`.
    pub(crate) fn inconsistent(mut self, job: &PartitionJob, answer: A, downstream: i64) -> Self {
        self.inconsistent = Some(downstream);
        self.answers = vec![answer; job.members.len()];
        self
    }
}

/// One topic pair's metadata and each partition's ends: the downstream end read first, so
/// that every record copied by then existed upstream when the upstream end was read after it.
pub(crate) struct PairEnds {
    pub(crate) down: SharedTopic,
    pub(crate) up: SharedTopic,
    /// Per partition: the ends and the upstream's last stable offset (where a read_committed
    /// read stops).
    pub(crate) ends: BTreeMap<i32, (Ends, i64)>,
    /// Per partition: the replica's log start (whether its first records can still be read).
    pub(crate) downstream_start: BTreeMap<i32, i64>,
}

/// The walk's bounds over what was read, or the downstream offset that shows the records
/// contradict the history.
pub(crate) fn walk_bounds(
    up: &Upstream<'_>,
    down: &side::Side,
    history: &LogOrder,
    upstream_end: i64,
) -> Result<walk::Bounds, i64> {
    walk::bounds(up, down, history, upstream_end).map_err(|v| match v {
        walk::Violation::SyncContent { downstream } | walk::Violation::Bounds { downstream } => {
            downstream
        }
    })
}

/// Each row's answer from one read of a partition (`windows` from the plan it read), or the
/// downstream offset that shows the records contradict the history.
pub(crate) fn answer_read(
    (up, down): (&side::Side, &side::Side),
    history: &LogOrder,
    ends: Ends,
    rows: &[i64],
    windows: &[Option<walk::Window>],
) -> Result<Vec<Result<i64, Unmatched>>, i64> {
    let upstream = Upstream::new(up, down);
    let bounds = walk_bounds(&upstream, down, history, ends.upstream)?;
    let matched = Matched {
        up: upstream,
        down,
        bounds,
        ends,
    };
    Ok(rows
        .iter()
        .zip(windows)
        .map(|(&u, &window)| matched.answer(u, window))
        .collect())
}

async fn pair_ends(
    clusters: Clusters<'_>,
    down_name: &str,
    up_name: &str,
    partitions: &[i32],
) -> Result<PairEnds, ClientError> {
    use IsolationLevel::{ReadCommitted, ReadUncommitted};
    use OffsetSpec::{Earliest, Latest};
    let (source, target, deadline) = (clusters.source, clusters.target, clusters.deadline);
    let down = target.describe_topic(down_name, &deadline).await?;
    let up = source.describe_topic(up_name, &deadline).await?;
    let down_end = target
        .list_offsets(&down, partitions, Latest, ReadUncommitted, &deadline)
        .await?;
    let up_end = source
        .list_offsets(&up, partitions, Latest, ReadUncommitted, &deadline)
        .await?;
    let up_stable = source
        .list_offsets(&up, partitions, Latest, ReadCommitted, &deadline)
        .await?;
    let up_start = source
        .list_offsets(&up, partitions, Earliest, ReadUncommitted, &deadline)
        .await?;
    let downstream_start = target
        .list_offsets(&down, partitions, Earliest, ReadUncommitted, &deadline)
        .await?;
    let ends = partitions
        .iter()
        .filter_map(|p| {
            let ends = Ends {
                downstream: *down_end.get(p)?,
                upstream: *up_end.get(p)?,
                upstream_start: *up_start.get(p)?,
            };
            Some((*p, (ends, *up_stable.get(p)?)))
        })
        .collect();
    Ok(PairEnds {
        down,
        up,
        ends,
        downstream_start,
    })
}
