//! Record matching: exact downstream offsets proven by the records themselves.
//!
//! The sync history bounds where a group's next record was copied to a downstream window (from
//! the last sync below the group's upstream offset `U` to the sync that proves no later copy,
//! see `max_rereads` in [`PreciseTranslation`](super::PreciseTranslation)). Reading the upstream records from the window's rewind targets on
//! and the downstream window, and comparing records by a keyed digest of their key, value and
//! headers (and timestamp), proves which downstream record copies which upstream one
//! (the argument is in `walk.rs`), and so the last copy of the group's next record: the offset
//! from which the group reads every record at or after `U` and nothing before it that it
//! need not. Inside a restart's block of duplicates that is the copy after the block.
//!
//! Nothing is called exact without that proof: a row whose window holds no proven copy, or
//! several possible ones, or whose records were removed, keeps the syncs' answer and says why
//! ([`Unmatched`]).
//!
//! Each partition is read once for all its rows: the windows of its rows are merged into a few
//! offset ranges per side, and the bytes fetched per side are bounded
//! ([`MatchOptions::budget_bytes`]); a row whose window would pass the budget keeps the syncs'
//! answer (`budget`).
//!
//! The assumptions are MirrorMaker 2's own (a single writer per replica partition, records
//! copied byte for byte by its default `ByteArrayConverter`s, no records dropped by SMTs or
//! `errors.tolerance`), checked where the records allow: a sync whose records differ, or
//! bounds that cross, refuse the partition (`inconsistent`). A window that ends at a sync
//! (not at the log end) also assumes that each restart's first sync reached the offset-syncs
//! topic, as `max_rereads` does.

mod digest;
mod plan;
mod read;
mod side;
mod walk;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use futures::StreamExt;

pub use walk::Unmatched;

use crate::client::{ClientError, Deadline, IsolationLevel, KafkaClient, OffsetSpec, SharedTopic};
use crate::precise::history::LogOrder;
use digest::Digester;
use read::{SideRead, Stopped};
use walk::{Ends, Matched, Upstream};

/// How record matching reads.
#[derive(Clone, Debug)]
pub struct MatchOptions {
    /// Record bytes one side of one partition may fetch (default 32 MiB).
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

/// What matching read, in all.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
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

/// Matches every row, partition by partition: for each row, the exact downstream offset or
/// why there is none. `source` reads the upstream topics, `target` their replicas; `histories`
/// gives each upstream partition's kept syncs in log order (`None`: no history).
///
/// Rows are answered in their order. Failing to reach a cluster for a partition's ends fails
/// that partition's rows (`not-read`), not the call.
pub async fn match_rows<'a, F>(
    source: &KafkaClient,
    target: &KafkaClient,
    rows: &[MatchRow<'a>],
    histories: F,
    options: &MatchOptions,
    deadline: Deadline,
) -> (Vec<Result<i64, Unmatched>>, MatchStats)
where
    F: Fn(&str, i32) -> Option<Vec<(i64, i64)>>,
{
    let mut by_partition: BTreeMap<(&str, &str, i32), Vec<usize>> = BTreeMap::new();
    for (i, row) in rows.iter().enumerate() {
        by_partition
            .entry((row.downstream_topic, row.upstream_topic, row.partition))
            .or_default()
            .push(i);
    }
    let mut out = vec![Err(Unmatched::NotRead); rows.len()];
    let mut stats = MatchStats::default();
    let digester = Digester::default();
    let jobs: Vec<PartitionJob> = by_partition
        .into_iter()
        .map(|((down, up, partition), members)| PartitionJob {
            downstream_topic: down.to_string(),
            upstream_topic: up.to_string(),
            partition,
            upstream_offsets: members.iter().map(|&i| rows[i].upstream).collect(),
            history: LogOrder::new(histories(up, partition).unwrap_or_default()),
            members,
        })
        .collect();
    stats.partitions = jobs.len();
    // Each topic pair's metadata and partition ends, in a few requests for all its partitions.
    let mut pairs: BTreeMap<(String, String), Vec<i32>> = BTreeMap::new();
    for job in &jobs {
        pairs
            .entry((job.downstream_topic.clone(), job.upstream_topic.clone()))
            .or_default()
            .push(job.partition);
    }
    let mut ends: BTreeMap<(String, String), Result<PairEnds, String>> = BTreeMap::new();
    for ((down, up), partitions) in pairs {
        let found = pair_ends(source, target, &down, &up, &partitions, deadline).await;
        ends.insert((down, up), found.map_err(|e| e.to_string()));
    }
    let results: Vec<(PartitionJob, PartitionOutcome)> = futures::stream::iter(jobs)
        .map(|job| {
            let digester = &digester;
            let pair = &ends[&(job.downstream_topic.clone(), job.upstream_topic.clone())];
            async move {
                let outcome = match pair {
                    Ok(pair) => {
                        match_partition(source, target, &job, pair, digester, options, deadline)
                            .await
                    }
                    Err(why) => PartitionOutcome::failed(&job, why.clone()),
                };
                (job, outcome)
            }
        })
        .buffer_unordered(options.parallelism.max(1))
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
struct PartitionJob {
    downstream_topic: String,
    upstream_topic: String,
    partition: i32,
    members: Vec<usize>,
    upstream_offsets: Vec<i64>,
    history: LogOrder,
}

#[derive(Default)]
struct PartitionOutcome {
    answers: Vec<Result<i64, Unmatched>>,
    upstream_bytes: u64,
    downstream_bytes: u64,
    ranges: usize,
    inconsistent: Option<i64>,
    unread: Option<String>,
}

impl PartitionOutcome {
    /// Every row not read, and why.
    fn failed(job: &PartitionJob, why: String) -> Self {
        PartitionOutcome {
            answers: vec![Err(Unmatched::NotRead); job.members.len()],
            unread: Some(why),
            ..PartitionOutcome::default()
        }
    }
}

/// One topic pair's metadata and each partition's ends: the downstream end read first, so
/// that every record copied by then existed upstream when the upstream end was read after it.
struct PairEnds {
    down: SharedTopic,
    up: SharedTopic,
    /// Per partition: the ends and the upstream's last stable offset (where a read_committed
    /// read stops).
    ends: BTreeMap<i32, (Ends, i64)>,
}

async fn pair_ends(
    source: &KafkaClient,
    target: &KafkaClient,
    down_name: &str,
    up_name: &str,
    partitions: &[i32],
    deadline: Deadline,
) -> Result<PairEnds, ClientError> {
    use IsolationLevel::{ReadCommitted, ReadUncommitted};
    use OffsetSpec::{Earliest, Latest};
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
    Ok(PairEnds { down, up, ends })
}

async fn match_partition(
    source: &KafkaClient,
    target: &KafkaClient,
    job: &PartitionJob,
    pair: &PairEnds,
    digester: &Digester,
    options: &MatchOptions,
    deadline: Deadline,
) -> PartitionOutcome {
    let Some(&(ends, stable)) = pair.ends.get(&job.partition) else {
        return PartitionOutcome::failed(job, "a partition missing from the ends".to_string());
    };
    let (down_topic, up_topic) = (pair.down.clone(), pair.up.clone());
    let (windows, plan) = plan::plan(&job.history, &job.upstream_offsets, ends, stable);
    let side = |client, topic, isolation| SideRead {
        client,
        topic,
        partition: job.partition,
        isolation,
        max_fetch: options.max_fetch_bytes,
        budget: options.budget_bytes,
        digester,
        deadline,
    };
    let up_read = side(source, up_topic, IsolationLevel::ReadCommitted);
    let down_read = side(target, down_topic, IsolationLevel::ReadUncommitted);
    let ((up, up_stop), (down, down_stop)) = tokio::join!(
        up_read.read(&plan.upstream),
        down_read.read(&plan.downstream)
    );
    let unread = [up_stop, down_stop]
        .into_iter()
        .flatten()
        .fold(None, |why, stop| match stop {
            Stopped::Budget => Some(Unmatched::Budget),
            Stopped::Failed(_) => why.or(Some(Unmatched::NotRead)),
        });
    let mut outcome = PartitionOutcome {
        upstream_bytes: up.bytes,
        downstream_bytes: down.bytes,
        ranges: plan.upstream.len() + plan.downstream.len(),
        ..PartitionOutcome::default()
    };
    let upstream = Upstream::new(&up, down.log_append_time);
    let bounds = match walk::bounds(&upstream, &down, &job.history, ends.upstream) {
        Ok(bounds) => bounds,
        Err(violation) => {
            outcome.inconsistent = Some(match violation {
                walk::Violation::SyncContent { downstream } => downstream,
                walk::Violation::Bounds { downstream } => downstream,
            });
            outcome.answers = vec![Err(Unmatched::Inconsistent); job.members.len()];
            return outcome;
        }
    };
    let matched = Matched {
        up: upstream,
        down: &down,
        bounds,
        ends,
    };
    outcome.answers = job
        .upstream_offsets
        .iter()
        .zip(&windows)
        .map(|(&u, &window)| match matched.answer(u, window) {
            // What was not read because the read stopped says why.
            Err(Unmatched::NotRead) => Err(unread.unwrap_or(Unmatched::NotRead)),
            answer => answer,
        })
        .collect();
    if let Some(why) = unread {
        outcome.unread = Some(why.name().to_string());
    }
    outcome
}
