//! Executing a plan: re-check, commit, read back, one group at a time per task.

use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use serde::Serialize;

use super::authz::{self, GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED};
use super::{
    ApplyOptions, ApplyPlan, GroupPlan, GroupStatus, PartitionPlan, non_consumer_groups,
    read_group, refusal,
};
use crate::client::{
    Deadline, ErrorCode, GroupCoordinator, KafkaClient, OffsetToCommit, not_a_consumer_group,
};

/// UNKNOWN_MEMBER_ID: on an admin commit, the group has (gained) members.
const UNKNOWN_MEMBER_ID: i16 = 25;
/// Per-partition codes after which the commit may or may not have been written:
/// REQUEST_TIMED_OUT and UNKNOWN_SERVER_ERROR.
const OUTCOME_UNKNOWN: [i16; 2] = [7, -1];

/// What became of one partition's commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommitState {
    /// The coordinator accepted it (see `read_back` for the verification).
    Committed,
    /// The coordinator refused it with an error: not written.
    Failed,
    /// No answer says what happened (lost, timed out, left out of the answer): the offset may
    /// or may not have been written. Read the group's offsets before trying again.
    Unknown,
}

/// What happened to one group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
pub enum GroupOutcome {
    /// Every planned partition was committed and read back as planned.
    Applied,
    /// Nothing to write for this group.
    NothingToDo,
    /// Not written: refused when planned, or changed since (members, offsets).
    Skipped {
        /// Why, for the operator.
        reason: String,
    },
    /// Some partitions failed (see their results); the others were committed.
    Partial,
    /// Failed before writing, or its state after the commit is unknown.
    Error {
        /// What failed.
        message: String,
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

    /// Whether any group was skipped.
    pub fn has_skips(&self) -> bool {
        self.groups
            .iter()
            .any(|g| matches!(g.outcome, GroupOutcome::Skipped { .. }))
    }
}

/// Commits `plan`'s `commit` partitions of its ready groups.
///
/// For each group, just before its commit: a fresh coordinator lookup, a re-check that the
/// group is still without members and that its committed offsets are those the plan saw
/// (else it is skipped and named), one admin OffsetCommit for all its partitions, and an
/// OffsetFetch to read them back. Groups run concurrently up to `options.concurrency`. Once a
/// commit's answer is lost (its state unknown), no further commit is started.
pub async fn execute(
    client: &KafkaClient,
    plan: &ApplyPlan,
    options: &ApplyOptions,
) -> ApplyReport {
    let unknown = AtomicBool::new(false);
    let deadline = Deadline::after(options.timeout);
    let writable: Vec<String> = plan
        .groups
        .iter()
        .filter(|g| g.to_commit().next().is_some())
        .map(|g| g.group.clone())
        .collect();
    let coordinators = client.find_group_coordinators(&writable, &deadline).await;
    // Re-checked like members and offsets: a group that became a share or streams group since
    // the plan is not written.
    let kinds = match &coordinators {
        Ok(map) => non_consumer_groups(client, map, &deadline).await,
        Err(_) => Default::default(),
    };
    let groups = futures::stream::iter(
        plan.groups
            .iter()
            .map(|g| {
                let unknown = &unknown;
                let coordinator = match &coordinators {
                    Ok(map) => map
                        .get(&g.group)
                        .map(|r| r.as_ref().map_err(|e| e.to_string())),
                    Err(e) => Some(Err(e.to_string())),
                };
                let kind = kinds.get(&g.group);
                async move {
                    let (outcome, partitions) =
                        match (&g.status, g.to_commit().next(), kind, coordinator) {
                            (GroupStatus::Refused { reason }, _, _, _) => (skip(reason), vec![]),
                            // The target could not be asked about the group when planned: an error, not a
                            // refusal (authorization, coordinator), and nothing is written.
                            (GroupStatus::Error { message }, _, _, _) => {
                                (error(message.clone(), false), vec![])
                            }
                            (GroupStatus::Ready, None, _, _) => (GroupOutcome::NothingToDo, vec![]),
                            (GroupStatus::Ready, Some(_), Some(Ok(group_type)), _) => (
                                skip(&format!(
                                    "changed since the plan: {}",
                                    not_a_consumer_group(group_type).unwrap_or_else(|| format!(
                                        "group is a {group_type} group"
                                    ))
                                )),
                                vec![],
                            ),
                            (GroupStatus::Ready, Some(_), Some(Err(message)), _) => {
                                (error(message.clone(), false), vec![])
                            }
                            (GroupStatus::Ready, Some(_), None, Some(Ok(c))) => {
                                apply_group(client, c, g, unknown, &deadline).await
                            }
                            (GroupStatus::Ready, Some(_), None, Some(Err(message))) => {
                                (error(message, false), vec![])
                            }
                            (GroupStatus::Ready, Some(_), None, None) => (
                                error("no coordinator answer for the group".into(), false),
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
            // Collected first: a stream that holds the closure across awaits makes rustc fail to
            // prove the whole future `Send` (rust-lang/rust#102211), and `tokio::spawn` refuse it
            // (tests/send_futures.rs). The futures are lazy; collecting them starts nothing.
            .collect::<Vec<_>>(),
    )
    .buffered(options.concurrency.max(1))
    .collect()
    .await;
    ApplyReport { groups }
}

fn skip(reason: &str) -> GroupOutcome {
    GroupOutcome::Skipped {
        reason: reason.to_string(),
    }
}

fn error(message: String, state_unknown: bool) -> GroupOutcome {
    GroupOutcome::Error {
        message,
        state_unknown,
    }
}

async fn apply_group(
    client: &KafkaClient,
    coordinator: &GroupCoordinator,
    plan: &GroupPlan,
    unknown: &AtomicBool,
    deadline: &Deadline,
) -> (GroupOutcome, Vec<PartitionResult>) {
    if let Some(halted) = halted(unknown) {
        return halted;
    }
    // Re-check just before writing: members, then offsets unchanged since the plan.
    let (description, current) = match read_group(client, coordinator, &plan.group, deadline).await
    {
        Ok(found) => found,
        Err(message) => return (error(message, false), vec![]),
    };
    if let Some(reason) = refusal(&description) {
        return (skip(&format!("changed since the plan: {reason}")), vec![]);
    }
    let moved: Vec<String> = plan
        .partitions
        .iter()
        .filter_map(|p| {
            let now = current
                .get(&(p.topic.clone(), p.partition))
                .map(|c| c.offset)
                .filter(|&c| c >= 0);
            (now != p.current).then(|| {
                format!(
                    "{}-{} {} -> {}",
                    p.topic,
                    p.partition,
                    show(p.current),
                    show(now)
                )
            })
        })
        .collect();
    if !moved.is_empty() {
        return (
            skip(&format!(
                "changed since the plan: committed offsets moved ({}); plan again",
                moved.join(", ")
            )),
            vec![],
        );
    }
    // The re-check took a round trip: another group's commit may have been lost meanwhile.
    if let Some(halted) = halted(unknown) {
        return halted;
    }
    let to_commit: Vec<&PartitionPlan> = plan.to_commit().collect();
    let offsets: Vec<OffsetToCommit> = to_commit
        .iter()
        .map(|p| OffsetToCommit {
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
                return (error(format!("nothing written: {e}"), false), vec![]);
            }
            unknown.store(true, Ordering::SeqCst);
            let why = format!("no answer from the coordinator ({e})");
            let partitions = to_commit.iter().map(|p| unknown_result(p, &why)).collect();
            return (
                error(
                    format!(
                        "the commit's outcome is unknown: {e}; read the group's offsets before running apply again"
                    ),
                    true,
                ),
                partitions,
            );
        }
    };
    if codes.values().any(|&c| c == UNKNOWN_MEMBER_ID) {
        return (
            skip("the group gained members since the re-check (UNKNOWN_MEMBER_ID): not written"),
            vec![],
        );
    }
    let read_back = client
        .fetch_group_offsets(coordinator, std::slice::from_ref(&plan.group), deadline)
        .await
        .ok()
        .and_then(|mut m| m.remove(&plan.group))
        .and_then(Result::ok)
        .unwrap_or_default();
    let partitions: Vec<PartitionResult> = to_commit
        .iter()
        .map(|p| {
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
    (outcome, partitions)
}

/// A partition whose commit was sent but whose answer never came.
fn unknown_result(p: &PartitionPlan, why: &str) -> PartitionResult {
    PartitionResult {
        topic: p.topic.clone(),
        partition: p.partition,
        offset: p.offset,
        state: CommitState::Unknown,
        error: Some(why.to_string()),
        read_back: None,
    }
}

/// The group's outcome from its partitions' results.
fn group_outcome(partitions: &[PartitionResult]) -> GroupOutcome {
    let unknown = partitions
        .iter()
        .filter(|p| p.state == CommitState::Unknown)
        .count();
    if unknown > 0 {
        return error(
            format!(
                "the outcome of {unknown} partition(s) is unknown (see their rows); read the group's offsets before running apply again"
            ),
            true,
        );
    }
    let all_failed = partitions.iter().all(|p| p.state == CommitState::Failed);
    if all_failed && let Some(first) = partitions.first().and_then(|p| p.error.clone()) {
        // The coordinator refused the whole group (e.g. READ on the group is missing).
        let same = partitions
            .iter()
            .all(|p| p.error.as_deref() == Some(&first));
        if same {
            return error(format!("nothing written: {first}"), false);
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
    unknown.load(Ordering::SeqCst).then(|| {
        (
            error(
                "not written: an earlier commit's outcome is unknown".into(),
                false,
            ),
            vec![],
        )
    })
}

fn show(offset: Option<i64>) -> String {
    offset.map_or_else(|| "none".to_string(), |o| o.to_string())
}
