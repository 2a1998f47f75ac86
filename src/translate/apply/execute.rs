//! Executing a plan: re-check, commit, read back, one group at a time per task.

use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use serde::Serialize;

use super::{
    ApplyOptions, ApplyPlan, GroupPlan, GroupStatus, PartitionPlan, non_consumer_groups,
    read_group, refusal,
};
use crate::client::{
    Deadline, GroupCoordinator, KafkaClient, OffsetToCommit, error_name, not_a_consumer_group,
};

/// UNKNOWN_MEMBER_ID: on an admin commit, the group has (gained) members.
const UNKNOWN_MEMBER_ID: i16 = 25;

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
    /// The offset committed.
    pub offset: i64,
    /// The broker's error for this partition, if any (e.g. `UnknownTopicOrPartition`).
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
            .filter(|p| p.error.is_none() && p.read_back == Some(p.offset))
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
        Ok(map) => non_consumer_groups(client, map).await,
        Err(_) => Default::default(),
    };
    let groups = futures::stream::iter(plan.groups.iter().map(|g| {
        let unknown = &unknown;
        let coordinator = match &coordinators {
            Ok(map) => map
                .get(&g.group)
                .map(|r| r.as_ref().map_err(|e| e.to_string())),
            Err(e) => Some(Err(e.to_string())),
        };
        let kind = kinds.get(&g.group);
        async move {
            let (outcome, partitions) = match (&g.status, g.to_commit().next(), kind, coordinator) {
                (GroupStatus::Refused { reason }, _, _, _) => (skip(reason), vec![]),
                (GroupStatus::Error { message }, _, _, _) => (skip(message), vec![]),
                (GroupStatus::Ready, None, _, _) => (GroupOutcome::NothingToDo, vec![]),
                (GroupStatus::Ready, Some(_), Some(Ok(group_type)), _) => (
                    skip(&format!(
                        "changed since the plan: {}",
                        not_a_consumer_group(group_type)
                            .unwrap_or_else(|| format!("group is a {group_type} group"))
                    )),
                    vec![],
                ),
                (GroupStatus::Ready, Some(_), Some(Err(message)), _) => {
                    (error(message.clone(), false), vec![])
                }
                (GroupStatus::Ready, Some(_), None, Some(Ok(c))) => {
                    apply_group(client, c, g, unknown).await
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
    }))
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
) -> (GroupOutcome, Vec<PartitionResult>) {
    if unknown.load(Ordering::SeqCst) {
        return (
            error(
                "not written: an earlier commit's outcome is unknown".into(),
                false,
            ),
            vec![],
        );
    }
    // Re-check just before writing: members, then offsets unchanged since the plan.
    let (description, current) = match read_group(client, coordinator, &plan.group).await {
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
        .commit_group_offsets(coordinator, &plan.group, &offsets)
        .await
    {
        Ok(codes) => codes,
        Err(e) => {
            // A coordinator that said "not me" or "loading" wrote nothing; anything else
            // (a lost answer) may have written.
            let state_unknown = !e.is_coordinator_moved();
            if state_unknown {
                unknown.store(true, Ordering::SeqCst);
            }
            return (error(e.to_string(), state_unknown), vec![]);
        }
    };
    if codes.values().any(|&c| c == UNKNOWN_MEMBER_ID) {
        return (
            skip("the group gained members since the re-check (UNKNOWN_MEMBER_ID): not written"),
            vec![],
        );
    }
    let read_back = client
        .fetch_group_offsets(coordinator, std::slice::from_ref(&plan.group))
        .await
        .ok()
        .and_then(|mut m| m.remove(&plan.group))
        .and_then(Result::ok)
        .unwrap_or_default();
    let partitions: Vec<PartitionResult> = to_commit
        .iter()
        .map(|p| {
            let key = (p.topic.clone(), p.partition);
            let code = codes.get(&key).copied().unwrap_or(0);
            PartitionResult {
                topic: p.topic.clone(),
                partition: p.partition,
                offset: p.offset,
                error: (code != 0).then(|| format!("{} (code {code})", error_name(code))),
                read_back: read_back.get(&key).map(|c| c.offset).filter(|&c| c >= 0),
            }
        })
        .collect();
    let all_good = partitions
        .iter()
        .all(|p| p.error.is_none() && p.read_back == Some(p.offset));
    let outcome = if all_good {
        GroupOutcome::Applied
    } else {
        GroupOutcome::Partial
    };
    (outcome, partitions)
}

fn show(offset: Option<i64>) -> String {
    offset.map_or_else(|| "none".to_string(), |o| o.to_string())
}
