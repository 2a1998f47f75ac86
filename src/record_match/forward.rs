//! Forward matching, for failover: from a group's upstream offset `U` to the downstream offset
//! of the last copy of its next record (see [`super`] and [`super::walk`] for the proof), and,
//! for a next record MirrorMaker 2 never copied, the replica's end, proven by the backward
//! proof asked at that end ([`super::reverse::first_not_copied`]).

use super::read::Stopped;
use super::reverse;
use super::walk::Ends;
use super::{
    Clusters, Direction, MatchOptions, MatchRow, MatchStats, PairEnds, PartitionJob,
    PartitionOutcome, Unmatched, answer_read, by_partition, plan,
};
use crate::client::{Deadline, KafkaClient};

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
    let forward = Direction {
        not_read: Err(Unmatched::NotRead),
        partition: |c, job, pair| Box::pin(match_partition(c, job, pair)),
    };
    let keys = rows
        .iter()
        .map(|r| (r.downstream_topic, r.upstream_topic, r.partition));
    let offsets = rows.iter().map(|r| (r.upstream, None));
    let clusters = Clusters {
        source,
        target,
        options,
        deadline,
    };
    by_partition(forward, clusters, keys.zip(offsets), histories).await
}

async fn match_partition(
    clusters: Clusters<'_>,
    job: &PartitionJob,
    pair: &PairEnds,
) -> PartitionOutcome<Result<i64, Unmatched>> {
    let Some(&(ends, stable)) = pair.ends.get(&job.partition) else {
        return PartitionOutcome::failed(
            job,
            Err(Unmatched::NotRead),
            "a partition missing from the ends".to_string(),
        );
    };
    let (windows, plan) = plan::plan(&job.history, &job.offsets, ends, stable);
    let (up, down, stopped) = job.read(clusters, pair, &plan).await;
    let unread = stopped.as_ref().map(unmatched_by);
    let mut outcome = PartitionOutcome::read(&up, &down, &plan);
    let mut answers = match answer_read((&up, &down), &job.history, ends, &job.offsets, &windows) {
        Ok(answers) => answers,
        Err(at) => return outcome.inconsistent(job, Err(Unmatched::Inconsistent), at),
    };
    // What was not read because the read stopped says why.
    let why_unread = |answer: Result<i64, Unmatched>, unread: Option<Unmatched>| match answer {
        Err(Unmatched::NotRead) => Err(unread.unwrap_or(Unmatched::NotRead)),
        answer => answer,
    };
    answers = answers.into_iter().map(|a| why_unread(a, unread)).collect();
    // The rows below the oldest kept sync, read on their own (see `plan::plan_head`).
    let head: Vec<usize> = (0..answers.len())
        .filter(|&i| answers[i] == Err(Unmatched::NoSync))
        .collect();
    let downstream_start = pair.downstream_start.get(&job.partition).copied();
    if let (false, Some(start)) = (head.is_empty(), downstream_start) {
        let offsets: Vec<i64> = head.iter().map(|&i| job.offsets[i]).collect();
        let (head_windows, head_plan) =
            plan::plan_head(&job.history, &offsets, ends, start, stable);
        let answered = if head_plan.downstream.is_empty() {
            None
        } else if head_plan.too_large_for(&up, &down, clusters.options.budget_bytes) {
            Some(Ok(vec![Err(Unmatched::Budget); offsets.len()]))
        } else {
            let (up, down, stopped) = job.read(clusters, pair, &head_plan).await;
            outcome.add_read(&up, &down, &head_plan);
            let unread = stopped.as_ref().map(unmatched_by);
            Some(
                answer_read((&up, &down), &job.history, ends, &offsets, &head_windows)
                    .map(|a| a.into_iter().map(|a| why_unread(a, unread)).collect()),
            )
        };
        match answered {
            None => {}
            Some(Err(at)) => return outcome.inconsistent(job, Err(Unmatched::Inconsistent), at),
            Some(Ok(head_answers)) => {
                for ((&i, answer), window) in head.iter().zip(head_answers).zip(&head_windows) {
                    if window.is_some() {
                        answers[i] = answer;
                    }
                }
            }
        }
    }
    answer_never_copied(clusters, job, pair, ends, &mut answers, &mut outcome).await;
    outcome.answers = answers;
    if let (Some(why), Some(stopped)) = (unread, &stopped) {
        outcome.unread = Some(stopped.describe(why.name()));
    }
    outcome
}

/// The rows' reason when a read stopped early.
fn unmatched_by(stopped: &Stopped) -> Unmatched {
    match stopped {
        Stopped::Budget => Unmatched::Budget,
        Stopped::Failed(_) => Unmatched::NotRead,
    }
}

/// The rows left unmatched whose next record may never have been copied (MM2 stopped, or
/// behind): past the partition's last sync, where no record after the window bounds anything.
/// When the replica's end proves `X`, the first primary record with no copy on the replica
/// ([`reverse::first_not_copied`]: no record below the end copies `X` or a later record, the
/// replica read from a sync below its end and the stretches below bounded, nothing assumed),
/// a group whose offset is at or past `X` has no copy of its next record or of any later one:
/// its exact position is the replica's end (read before the primary's, so every copy made by
/// then is below it). An answer resting on the residual assumption is not used.
async fn answer_never_copied(
    clusters: Clusters<'_>,
    job: &PartitionJob,
    pair: &PairEnds,
    ends: Ends,
    answers: &mut [Result<i64, Unmatched>],
    outcome: &mut PartitionOutcome<Result<i64, Unmatched>>,
) {
    // X lies past the upstream offset of the sync the proof starts from, the last one below
    // the replica's end: rows at or below it cannot be at or past X.
    let Some(&(last_synced, _)) = job.history.syncs().last() else {
        return;
    };
    let unmatched: Vec<usize> = (0..answers.len())
        .filter(|&i| {
            let u = job.offsets[i];
            matches!(answers[i], Err(why) if why != Unmatched::Inconsistent)
                && u > last_synced
                && u < ends.upstream
        })
        .collect();
    if unmatched.is_empty() {
        return;
    }
    let tip = reverse::first_not_copied(clusters, job, pair).await;
    outcome.upstream_bytes += tip.upstream_bytes;
    outcome.downstream_bytes += tip.downstream_bytes;
    outcome.ranges += tip.ranges;
    let Some(Ok(first)) = tip.answers.first() else {
        return;
    };
    if first.assumes_history {
        return;
    }
    for i in unmatched {
        if job.offsets[i] >= first.offset {
            answers[i] = Ok(ends.downstream);
        }
    }
}
