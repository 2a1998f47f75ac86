//! Executing a plan: re-derive, commit what both the plan and the target allow, read back, one
//! group at a time per task.

use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use serde::Serialize;

use super::authz::{self, GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED};
use super::recheck::{Context, fresh_group, moved_offsets, other_cluster};
use super::{
    ApplyOptions, ApplyPlan, Change, GroupError, GroupPlan, GroupRefusal, GroupStatus,
    PartitionPlan, SkipReason, Verdict, non_consumer_groups, refusal,
};
use crate::client::{Deadline, ErrorCode, GroupCoordinator, KafkaClient, OffsetToCommit};
use crate::translate::Translation;

/// UNKNOWN_MEMBER_ID: on an admin commit, the group has (gained) members.
const UNKNOWN_MEMBER_ID: i16 = 25;
/// Per-partition codes after which the commit may or may not have been written:
/// REQUEST_TIMED_OUT and UNKNOWN_SERVER_ERROR.
const OUTCOME_UNKNOWN: [i16; 2] = [7, -1];

/// What became of one partition's commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CommitState {
    /// The coordinator accepted it (see `read_back` for the verification).
    Committed,
    /// The coordinator refused it with an error: not written.
    Failed,
    /// No answer says what happened (lost, timed out, left out of the answer): the offset may
    /// or may not have been written. Read the group's offsets before trying again.
    Unknown,
    /// Not sent: the re-check just before the commit refused it (see `error` for both views).
    Refused,
}

/// What happened to one group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
#[non_exhaustive]
pub enum GroupOutcome {
    /// Every partition sent was committed and read back as planned (partitions the re-check
    /// refused were not sent: their rows say `refused`).
    Applied,
    /// Nothing to write for this group.
    NothingToDo,
    /// Not written: refused when planned, or changed since (members, offsets, topics).
    Skipped {
        /// Why (serialized as the words for the operator).
        reason: SkipReason,
    },
    /// Some partitions failed (see their results); the others were committed.
    Partial,
    /// Failed before writing, or its state after the commit is unknown.
    Error {
        /// What failed (serialized as the words for the operator).
        message: GroupError,
        /// Whether the commit may have been written (the answer was lost): its offsets are
        /// unknown and no further group was written after it.
        state_unknown: bool,
    },
}

/// One partition's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PartitionResult {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset sent.
    pub offset: i64,
    /// What became of it.
    pub state: CommitState,
    /// Why it failed or is unknown, if it did not commit (e.g. `TOPIC_AUTHORIZATION_FAILED
    /// (code 29)` and the missing permission).
    pub error: Option<String>,
    /// The offset read back after the commit (`None`: not read back or none).
    pub read_back: Option<i64>,
    /// The group's committed offset the re-check saw just before the commit (`None`: none),
    /// so that the write can be undone.
    pub committed_before: Option<i64>,
    /// The verdict the re-check derived just before the commit: `commit` for a partition sent,
    /// the refusal for one the re-check refused.
    pub verdict: Verdict,
}

/// One group's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupResult {
    /// The group id.
    pub group: String,
    /// What happened.
    #[serde(flatten)]
    pub outcome: GroupOutcome,
    /// The partitions committed (empty unless a commit was sent).
    pub partitions: Vec<PartitionResult>,
}

/// What an execute did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ApplyReport {
    /// Every group of the plan, sorted by id.
    pub groups: Vec<GroupResult>,
}

impl ApplyReport {
    /// Partitions committed and verified.
    pub fn committed(&self) -> usize {
        self.groups
            .iter()
            .flat_map(|g| &g.partitions)
            .filter(|p| p.state == CommitState::Committed && p.read_back == Some(p.offset))
            .count()
    }

    /// Whether any group failed with an error.
    pub fn has_errors(&self) -> bool {
        self.groups.iter().any(|g| {
            matches!(
                g.outcome,
                GroupOutcome::Error { .. } | GroupOutcome::Partial
            )
        })
    }

    /// Whether any group was skipped, or any partition refused by the re-check.
    pub fn has_skips(&self) -> bool {
        self.groups.iter().any(|g| {
            matches!(g.outcome, GroupOutcome::Skipped { .. })
                || g.partitions.iter().any(|p| p.state == CommitState::Refused)
        })
    }
}

/// Commits `plan`'s `commit` partitions of its ready groups, where the target still allows it.
///
/// [`execute_with`] without checkpoints read again: each partition's offset and checkpoint age
/// are the plan's claims, everything else is read from the target just before the commit.
pub async fn execute(
    client: &KafkaClient,
    plan: &ApplyPlan,
    options: &ApplyOptions,
) -> ApplyReport {
    execute_with(client, plan, None, options).await
}

/// Commits `plan`'s `commit` partitions of its ready groups, where the target still allows it.
///
/// First the cluster: a plan made for another cluster (or naming none) is refused whole. Then,
/// for each group, just before its commit: a fresh coordinator lookup; a re-read of the group
/// (still without members, committed offsets those the plan saw, else the group is skipped and
/// named), of its topics' logs and ids, and of `checkpoints` when given (the checkpoints read
/// again from the plan's sources); every partition's verdict derived again with the stricter of
/// the plan's rules and `options.rules` (see [`recheck`](super::recheck)); one admin
/// OffsetCommit for the partitions both the plan and the fresh derivation commit, at the same
/// offset; an OffsetFetch to read them back. A partition the re-check refuses is not sent and
/// its row names both views. Groups run concurrently up to `options.concurrency`. Once a
/// commit's answer is lost (its state unknown), no further commit is started.
pub async fn execute_with(
    client: &KafkaClient,
    plan: &ApplyPlan,
    checkpoints: Option<&Translation>,
    options: &ApplyOptions,
) -> ApplyReport {
    let unknown = AtomicBool::new(false);
    let deadline = Deadline::after(options.timeout);
    let context = Context::new(plan, checkpoints, options);
    let writable: Vec<String> = plan
        .groups
        .iter()
        .filter(|g| g.to_commit().next().is_some())
        .map(|g| g.group.clone())
        .collect();
    // The cluster first: nothing of a plan made for another cluster is written.
    let cluster = if writable.is_empty() {
        Ok(None)
    } else {
        match client.cluster_id(&deadline).await {
            Ok(found) => Ok(other_cluster(plan, &found)),
            Err(e) => Err(e.to_string()),
        }
    };
    let coordinators = match &cluster {
        Ok(None) if !writable.is_empty() => {
            client.find_group_coordinators(&writable, &deadline).await
        }
        _ => Ok(Default::default()),
    };
    // Re-checked like members and offsets: a group that became a share or streams group since
    // the plan is not written.
    let kinds = match &coordinators {
        Ok(map) => non_consumer_groups(client, map, &deadline).await,
        Err(_) => Default::default(),
    };
    // What every writable group gets when the cluster is not the plan's (or cannot be asked).
    let blocked: Option<GroupOutcome> = match &cluster {
        Ok(None) => None,
        Ok(Some(refusal)) => Some(changed(Change::Refused(refusal.clone()))),
        Err(e) => Some(error(
            GroupError::Unreadable(format!("cannot read the target's cluster id: {e}")),
            false,
        )),
    };
    let context = &context;
    let groups = futures::stream::iter(
        plan.groups
            .iter()
            .map(|g| {
                let unknown = &unknown;
                let coordinator = match &coordinators {
                    Ok(map) => map
                        .get(&g.group)
                        .map(|r| r.as_ref().map_err(authz::explain)),
                    Err(e) => Some(Err(e.to_string())),
                };
                let kind = kinds.get(&g.group);
                let blocked = blocked.as_ref();
                let deadline = &deadline;
                async move {
                    let (outcome, partitions) =
                        match (&g.status, g.to_commit().next(), kind, coordinator) {
                            (GroupStatus::Refused { reason }, _, _, _) => {
                                (skipped(SkipReason::Refused(reason.clone())), vec![])
                            }
                            // The target could not be asked about the group when planned: an error, not a
                            // refusal (authorization, coordinator), and nothing is written.
                            (GroupStatus::Error { message }, _, _, _) => {
                                (error(message.clone(), false), vec![])
                            }
                            (GroupStatus::Ready, None, _, _) => (GroupOutcome::NothingToDo, vec![]),
                            // Another cluster, or one whose id could not be read: nothing is written.
                            (GroupStatus::Ready, Some(_), _, _) if blocked.is_some() => (
                                blocked.cloned().unwrap_or(GroupOutcome::NothingToDo),
                                vec![],
                            ),
                            (GroupStatus::Ready, Some(_), Some(Ok(group_type)), _) => (
                                changed(Change::Refused(GroupRefusal::NotConsumerGroup {
                                    group_type: group_type.clone(),
                                })),
                                vec![],
                            ),
                            (GroupStatus::Ready, Some(_), Some(Err(message)), _) => (
                                error(GroupError::KindUnknown(message.clone()), false),
                                vec![],
                            ),
                            (GroupStatus::Ready, Some(_), None, Some(Ok(c))) => {
                                apply_group(client, c, g, context, unknown, deadline).await
                            }
                            (GroupStatus::Ready, Some(_), None, Some(Err(message))) => {
                                (error(GroupError::Unreadable(message), false), vec![])
                            }
                            (GroupStatus::Ready, Some(_), None, None) => (
                                error(
                                    GroupError::NoCoordinator(
                                        "no coordinator answer for the group".into(),
                                    ),
                                    false,
                                ),
                                vec![],
                            ),
                        };
                    GroupResult {
                        group: g.group.clone(),
                        outcome,
                        partitions,
                    }
                }
            })
            // Collected first (rust-lang/rust#102211): see `plan`.
            .collect::<Vec<_>>(),
    )
    .buffered(options.concurrency.max(1))
    .collect()
    .await;
    ApplyReport { groups }
}

fn skipped(reason: SkipReason) -> GroupOutcome {
    GroupOutcome::Skipped { reason }
}

fn changed(change: Change) -> GroupOutcome {
    skipped(SkipReason::ChangedSincePlan(change))
}

fn error(message: GroupError, state_unknown: bool) -> GroupOutcome {
    GroupOutcome::Error {
        message,
        state_unknown,
    }
}

async fn apply_group(
    client: &KafkaClient,
    coordinator: &GroupCoordinator,
    plan: &GroupPlan,
    context: &Context,
    unknown: &AtomicBool,
    deadline: &Deadline,
) -> (GroupOutcome, Vec<PartitionResult>) {
    if let Some(halted) = halted(unknown) {
        return halted;
    }
    // Re-check just before writing: members, offsets unchanged since the plan, then every
    // partition derived again from the target as it is now.
    let (description, current, fresh) =
        match fresh_group(client, coordinator, plan, context, deadline).await {
            Ok(found) => found,
            Err(message) => return (error(message, false), vec![]),
        };
    if let Some(reason) = refusal(&description) {
        return (changed(Change::Refused(reason)), vec![]);
    }
    let moved = moved_offsets(plan, &current);
    if !moved.is_empty() {
        return (changed(Change::OffsetsMoved(moved)), vec![]);
    }
    // The plan's partitions to commit, each with its fresh derivation.
    let planned: Vec<(&PartitionPlan, &PartitionPlan)> = plan
        .partitions
        .iter()
        .zip(&fresh)
        .filter(|(p, _)| p.verdict.writes())
        .collect();
    let refused: Vec<PartitionResult> = planned
        .iter()
        .filter(|(_, f)| f.verdict != Verdict::Commit)
        .map(|(p, f)| PartitionResult {
            topic: p.topic.clone(),
            partition: p.partition,
            offset: p.offset,
            state: CommitState::Refused,
            error: Some(format!(
                "{}: {}",
                f.verdict.as_str(),
                f.difference.as_deref().unwrap_or("refused by the re-check")
            )),
            read_back: None,
            committed_before: f.current,
            verdict: f.verdict,
        })
        .collect();
    let to_commit: Vec<(&PartitionPlan, &PartitionPlan)> = planned
        .iter()
        .copied()
        .filter(|(_, f)| f.verdict == Verdict::Commit)
        .collect();
    if to_commit.is_empty() {
        return (
            changed(Change::EveryPartitionRefused(refused.len())),
            refused,
        );
    }
    // The re-check took round trips: another group's commit may have been lost meanwhile.
    if let Some(halted) = halted(unknown) {
        return halted;
    }
    let offsets: Vec<OffsetToCommit> = to_commit
        .iter()
        .map(|(p, _)| OffsetToCommit {
            topic: p.topic.clone(),
            partition: p.partition,
            offset: p.offset,
            metadata: Some(p.metadata.clone()),
        })
        .collect();
    let codes = match client
        .commit_group_offsets(coordinator, &plan.group, &offsets, deadline)
        .await
    {
        Ok(codes) => codes,
        Err(e) => {
            // Only a commit whose answer was lost may have written; every other failure
            // (a coordinator that kept refusing until the deadline, no connection) wrote nothing.
            if !e.is_outcome_unknown() {
                return (error(GroupError::NotWritten(e.to_string()), false), refused);
            }
            unknown.store(true, Ordering::SeqCst);
            let why = format!("no answer from the coordinator ({e})");
            let mut partitions: Vec<PartitionResult> = to_commit
                .iter()
                .map(|(p, f)| unknown_result(p, f.current, &why))
                .collect();
            partitions.extend(refused);
            return (
                error(GroupError::OutcomeUnknown(e.to_string()), true),
                partitions,
            );
        }
    };
    if codes.values().any(|&c| c == UNKNOWN_MEMBER_ID) {
        return (skipped(SkipReason::GainedMembers), vec![]);
    }
    let read_back = client
        .fetch_group_offsets(coordinator, std::slice::from_ref(&plan.group), deadline)
        .await
        .ok()
        .and_then(|mut m| m.remove(&plan.group))
        .and_then(Result::ok)
        .unwrap_or_default();
    let mut partitions: Vec<PartitionResult> = to_commit
        .iter()
        .map(|(p, f)| {
            let key = (p.topic.clone(), p.partition);
            let read_back = read_back.get(&key).map(|c| c.offset).filter(|&c| c >= 0);
            let (state, error) = match codes.get(&key).copied() {
                None => (
                    CommitState::Unknown,
                    Some("left out of the coordinator's answer".to_string()),
                ),
                Some(0) => (CommitState::Committed, None),
                Some(code) if OUTCOME_UNKNOWN.contains(&code) => {
                    (CommitState::Unknown, Some(ErrorCode::new(code).to_string()))
                }
                Some(GROUP_AUTHORIZATION_FAILED) => (
                    CommitState::Failed,
                    Some(authz::group_denied("OffsetCommit", &plan.group)),
                ),
                Some(TOPIC_AUTHORIZATION_FAILED) => (
                    CommitState::Failed,
                    Some(authz::topic_denied("OffsetCommit", &p.topic)),
                ),
                Some(code) => (CommitState::Failed, Some(ErrorCode::new(code).to_string())),
            };
            PartitionResult {
                topic: p.topic.clone(),
                partition: p.partition,
                offset: p.offset,
                state,
                error,
                read_back,
                committed_before: f.current,
                verdict: Verdict::Commit,
            }
        })
        .collect();
    let outcome = group_outcome(&partitions);
    if matches!(
        outcome,
        GroupOutcome::Error {
            state_unknown: true,
            ..
        }
    ) {
        unknown.store(true, Ordering::SeqCst);
    }
    partitions.extend(refused);
    (outcome, partitions)
}

/// A partition whose commit was sent but whose answer never came.
fn unknown_result(p: &PartitionPlan, before: Option<i64>, why: &str) -> PartitionResult {
    PartitionResult {
        topic: p.topic.clone(),
        partition: p.partition,
        offset: p.offset,
        state: CommitState::Unknown,
        error: Some(why.to_string()),
        read_back: None,
        committed_before: before,
        verdict: Verdict::Commit,
    }
}

/// The group's outcome from its sent partitions' results.
fn group_outcome(partitions: &[PartitionResult]) -> GroupOutcome {
    let unknown = partitions
        .iter()
        .filter(|p| p.state == CommitState::Unknown)
        .count();
    if unknown > 0 {
        return error(GroupError::PartitionsUnknown(unknown), true);
    }
    let all_failed = partitions.iter().all(|p| p.state == CommitState::Failed);
    if all_failed && let Some(first) = partitions.first().and_then(|p| p.error.clone()) {
        // The coordinator refused the whole group (e.g. READ on the group is missing).
        let same = partitions
            .iter()
            .all(|p| p.error.as_deref() == Some(&first));
        if same {
            return error(GroupError::NotWritten(first), false);
        }
    }
    let all_good = partitions
        .iter()
        .all(|p| p.state == CommitState::Committed && p.read_back == Some(p.offset));
    if all_good {
        GroupOutcome::Applied
    } else {
        GroupOutcome::Partial
    }
}

/// Set once a commit's outcome is unknown: no group is written after it.
fn halted(unknown: &AtomicBool) -> Option<(GroupOutcome, Vec<PartitionResult>)> {
    unknown
        .load(Ordering::SeqCst)
        .then(|| (error(GroupError::Halted, false), vec![]))
}
