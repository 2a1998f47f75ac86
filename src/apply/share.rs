//! `apply` for share groups (KIP-932): a share group's translated start offsets are set with
//! AlterShareGroupOffsets, never with OffsetCommit. An OffsetCommit on an id that does not
//! exist creates a classic group, and share consumers of that id then fail ("not a share
//! group"); AlterShareGroupOffsets on such an id creates an empty share group instead, from
//! which a share consumer starts exactly at the offsets set.
//!
//! The safety rules are the consumer groups' (see the module above): the per-partition
//! verdicts of [`decide`] against the group's current start offsets (no rewind without
//! `--allow-rewind`, within the log), refused while the share group has members
//! (ShareGroupDescribe; GROUP_NOT_EMPTY from the write is read back as the same refusal),
//! refused when the target holds a group of another type under the id, re-checked just
//! before the write, the undo recorded before it, and every write read back with
//! DescribeShareGroupOffsets. Share groups are few and written one by one.
//!
//! # References
//! - KIP-932; Kafka's `GroupCoordinatorService.alterShareGroupOffsets` (creates the group,
//!   GROUP_NOT_EMPTY with members), `ShareGroupCommand --reset-offsets`

use std::collections::{BTreeMap, BTreeSet};

use super::execute::{Outcome, Passed, changed, committed_rows, error, recheck_group};
use super::journal::UndoJournal;
use super::recheck::{Context, check_partition, moved_offsets};
use super::{
    Change, GroupError, GroupPlan, GroupRefusal, GroupStatus, PartitionPlan, TargetLogs,
    TargetPartition, TopicLogs, VerdictRules, authz, committed_offset, decide, read,
    target_partition, topic_id,
};
use crate::client::{
    Coordinators, Deadline, GroupCoordinator, GroupDescription, GroupOffsets, GroupProtocol,
    GroupResults, GroupType, KafkaClient, ShareGroupState,
};
use crate::translate::Translation;

/// GROUP_NOT_EMPTY: the share group has members.
const GROUP_NOT_EMPTY: i16 = 68;
/// GROUP_ID_NOT_FOUND: no share group (none, or a group of another type).
const GROUP_ID_NOT_FOUND: i16 = 69;

/// What the target holds under a share group's id.
#[derive(Debug)]
pub(crate) struct ShareTarget {
    /// Whether the target can hold share groups at all (`false`: a broker before Kafka 4,
    /// without ListGroups v5, where the group is refused as a share group of the source).
    supported: bool,
    /// The id's type as ListGroups names it; `None`: the target has no group of this id.
    group_type: Option<GroupType>,
    /// The share group's state and members.
    state: ShareGroupState,
    /// Its start offsets (empty when it has none or does not exist).
    pub(crate) offsets: GroupOffsets,
}

impl ShareTarget {
    /// Why the group's start offsets must not be written now, if they must not.
    pub(crate) fn refusal(&self) -> Option<GroupRefusal> {
        if !self.supported {
            return Some(GroupRefusal::SourceNotConsumerGroup {
                group_type: GroupType::Share.name().to_string(),
            });
        }
        if let Some(t) = &self.group_type
            && *t != GroupType::Share
        {
            return Some(GroupRefusal::TargetNotShareGroup {
                group_type: t.name().to_string(),
            });
        }
        (!self.state.is_inactive()).then(|| GroupRefusal::ShareGroupActive {
            state: self.state.state.clone(),
            members: self.state.members.clone(),
        })
    }

    /// The group as the consumer-group re-check reads one: members are judged here first, so
    /// it reads as an idle group.
    fn description(&self, group: &str) -> GroupDescription {
        GroupDescription {
            group_id: group.to_string(),
            protocol: GroupProtocol::Absent,
            protocol_type: String::new(),
            state: self.state.state.clone(),
            members: 0,
            authorized_operations: None,
        }
    }
}

/// Reads what the target holds under each share group of `groups`: its type (one ListGroups
/// per coordinator, every type), its members (ShareGroupDescribe) and its start offsets
/// (DescribeShareGroupOffsets), all batched.
pub(crate) async fn read_targets(
    client: &KafkaClient,
    groups: &[String],
    coordinators: &GroupResults<GroupCoordinator>,
    deadline: &Deadline,
) -> BTreeMap<String, Result<ShareTarget, GroupError>> {
    let known: Coordinators = groups
        .iter()
        .filter_map(|g| match coordinators.get(g) {
            Some(Ok(c)) => Some((g.clone(), c.clone())),
            _ => None,
        })
        .collect();
    let listed = client.list_groups_on(known.values(), &[], deadline).await;
    let asked: Vec<String> = known.keys().cloned().collect();
    let (described, offsets) = futures::join!(
        Box::pin(client.describe_share_groups(&asked, &known, deadline)),
        Box::pin(client.fetch_share_group_offsets(&asked, &known, deadline)),
    );
    let (mut described, mut offsets) = (described, offsets);
    let mut out = BTreeMap::new();
    for group in groups {
        let answer = match (coordinators.get(group), known.get(group)) {
            (Some(Err(e)), _) => Err(GroupError::Unreadable(authz::cause(e))),
            (_, None) => Err(GroupError::NoCoordinator(
                format!("no coordinator answer for group {group:?}").into(),
            )),
            (_, Some(c)) => target_of(
                group,
                listed.get(c),
                described.remove(group),
                offsets.remove(group),
            ),
        };
        out.insert(group.clone(), answer);
    }
    out
}

type Listed = Result<Option<Vec<crate::client::ListedGroup>>, crate::client::ClientError>;

fn target_of(
    group: &str,
    listed: Option<&Listed>,
    described: Option<Result<ShareGroupState, crate::client::GroupCallError>>,
    offsets: Option<Result<GroupOffsets, crate::client::GroupCallError>>,
) -> Result<ShareTarget, GroupError> {
    let group_type = match listed {
        Some(Ok(Some(listed))) => listed
            .iter()
            .find(|g| g.group_id == group)
            .map(GroupType::of),
        // No ListGroups v5: a broker before Kafka 4, which has no share groups at all.
        Some(Ok(None)) => {
            return Ok(ShareTarget {
                supported: false,
                group_type: None,
                state: ShareGroupState::absent(group),
                offsets: GroupOffsets::new(),
            });
        }
        Some(Err(e)) => {
            return Err(GroupError::KindUnknown(
                format!(
                    "cannot list the coordinator's groups, so the group's kind is unknown: {e}"
                )
                .into(),
            ));
        }
        None => {
            return Err(GroupError::KindUnknown(
                "no ListGroups answer from the coordinator".into(),
            ));
        }
    };
    let state = match described {
        Some(Ok(state)) => state,
        // ListGroups v5 but no ShareGroupDescribe: Kafka 4.0, or share groups switched off
        // (share.version 0): no share group can exist there, nor be made.
        Some(Err(e)) if no_share_api(&e.source) => {
            return Ok(ShareTarget {
                supported: false,
                group_type,
                state: ShareGroupState::absent(group),
                offsets: GroupOffsets::new(),
            });
        }
        Some(Err(e)) => return Err(GroupError::Unreadable(authz::cause(&e))),
        None => {
            return Err(GroupError::Unreadable(
                "no ShareGroupDescribe answer".into(),
            ));
        }
    };
    let offsets = match offsets {
        Some(Ok(offsets)) => offsets,
        // No share group (yet): no start offsets.
        Some(Err(e)) if e.code() == Some(GROUP_ID_NOT_FOUND) => GroupOffsets::new(),
        Some(Err(e)) => return Err(GroupError::Unreadable(authz::cause(&e))),
        None => {
            return Err(GroupError::Unreadable(
                "no DescribeShareGroupOffsets answer".into(),
            ));
        }
    };
    Ok(ShareTarget {
        supported: true,
        group_type,
        state,
        offsets,
    })
}

/// Whether `e` says the broker does not offer the share-group API at all.
fn no_share_api(e: &crate::client::ClientError) -> bool {
    use crate::client::{ClientError, WireError};
    match e {
        ClientError::Shared(inner) => no_share_api(inner),
        ClientError::Wire(WireError::UnsupportedVersion { broker_range, .. }) => {
            broker_range.is_none()
        }
        _ => false,
    }
}

/// One share group's plan: each partition decided against the group's start offsets now.
pub(super) fn plan_group(
    translation: &Translation,
    group: &str,
    target: Result<ShareTarget, GroupError>,
    logs: &TargetLogs,
    rules: VerdictRules,
    now_ms: i64,
) -> GroupPlan {
    let (target, mut status) = match target {
        Ok(t) => {
            let status = match t.refusal() {
                None => GroupStatus::Ready,
                Some(reason) => GroupStatus::Refused { reason },
            };
            (Some(t), status)
        }
        Err(message) => (None, super::status_of_error(message)),
    };
    let empty = GroupOffsets::new();
    let offsets = target.as_ref().map_or(&empty, |t| &t.offsets);
    let mut denied: BTreeSet<&str> = BTreeSet::new();
    let mut partitions: Vec<PartitionPlan> = Vec::new();
    for o in translation.group(group) {
        let age = now_ms.saturating_sub(o.checkpoint_timestamp);
        let (where_, log) = target_partition(logs, o.topic, o.partition);
        if where_ == TargetPartition::NotAuthorized {
            denied.insert(o.topic);
        }
        let current = committed_offset(offsets, o.topic, o.partition);
        let decision = decide(o.offset, current, where_, age, rules);
        let mut p = PartitionPlan::new(o.topic, o.partition, decision.offset, decision.verdict);
        p.translated = o.offset;
        p.current = current;
        p.log_start = log.map(|l| l.0);
        p.log_end = log.map(|l| l.1);
        p.clamped_from = decision.clamped_from;
        p.checkpoint_age_ms = age;
        p.topic_id = topic_id(logs, o.topic);
        p.upstream_offset = Some(o.upstream_offset);
        partitions.push(p);
    }
    if !denied.is_empty() && !matches!(status, GroupStatus::Error { .. }) {
        let reasons: Vec<String> = denied
            .iter()
            .filter_map(|t| match logs.get(*t) {
                Some(TopicLogs::Denied(why)) => Some(why.clone()),
                _ => None,
            })
            .collect();
        status = GroupStatus::Error {
            message: GroupError::TopicsDenied(reasons),
        };
    }
    let mut plan = GroupPlan::new(group, status, partitions);
    plan.group_type = GroupType::Share;
    if target.as_ref().is_some_and(|t| !t.supported) {
        // Nothing of the target was read: every row says why, as for any other type.
        super::refuse_source_type(&mut plan, &GroupType::Share);
        return plan;
    }
    if let Some(t) = &target {
        plan.state = Some(t.state.state.clone()).filter(|s| !s.is_empty());
        plan.members = t.state.members.len();
        plan.protocol = (!t.state.exists).then_some(GroupProtocol::Absent);
    }
    plan
}

/// Writes each share group of `groups` (planned ready, with partitions to commit): re-read
/// and re-derived just before its write, its undo recorded in `journal` first, set with
/// AlterShareGroupOffsets, read back. Returns each group's outcome, how many groups the
/// journal recorded, and why writing stopped (a journal that could not be written).
pub(super) async fn execute_groups(
    client: &KafkaClient,
    groups: &[&GroupPlan],
    context: &Context,
    mut journal: Option<&mut (dyn UndoJournal + '_)>,
    deadline: &Deadline,
) -> (BTreeMap<String, Outcome>, usize, Option<String>) {
    let mut outcomes = BTreeMap::new();
    let mut recorded = 0usize;
    let mut stopped: Option<String> = None;
    for plan in groups {
        if let Some(why) = &stopped {
            outcomes.insert(plan.group.clone(), super::execute::not_sent(why));
            continue;
        }
        let passed = match recheck(client, plan, context, deadline).await {
            Ok(passed) => passed,
            Err(outcome) => {
                outcomes.insert(plan.group.clone(), outcome);
                continue;
            }
        };
        let (passed, coordinator) = passed;
        if let Some(journal) = journal.as_deref_mut() {
            match journal.record(std::slice::from_ref(&passed.undo)) {
                Ok(()) => recorded += 1,
                Err(e) => {
                    let why = format!(
                        "not sent: the undo journal could not be written ({e}), so no further write was made"
                    );
                    outcomes.insert(plan.group.clone(), super::execute::not_sent(&why));
                    stopped = Some(why);
                    continue;
                }
            }
        }
        let outcome = write(client, &plan.group, passed, &coordinator, deadline).await;
        outcomes.insert(plan.group.clone(), outcome);
    }
    (outcomes, recorded, stopped)
}

/// The group read again and every partition derived again, as for a consumer group.
async fn recheck<'a>(
    client: &KafkaClient,
    plan: &'a GroupPlan,
    context: &Context,
    deadline: &Deadline,
) -> Result<(Passed<'a>, GroupCoordinator), Outcome> {
    let group = plan.group.clone();
    let topics: BTreeSet<&str> = plan.partitions.iter().map(|p| p.topic.as_str()).collect();
    let logs = read::target_logs(client, &topics, deadline)
        .await
        .map_err(|e| {
            (
                error(
                    GroupError::Unreadable(super::GroupCause::client(
                        &e,
                        format!("cannot read the target's logs: {e}"),
                    )),
                    false,
                ),
                vec![],
            )
        })?;
    let coordinators = client
        .find_group_coordinators(std::slice::from_ref(&group), deadline)
        .await
        .map_err(|e| {
            (
                error(
                    GroupError::NoCoordinator(format!("no coordinator: {e}").into()),
                    false,
                ),
                vec![],
            )
        })?;
    let coordinator = match coordinators.get(&group) {
        Some(Ok(c)) => c.clone(),
        Some(Err(e)) => {
            return Err((
                error(GroupError::Unreadable(authz::cause(e)), false),
                vec![],
            ));
        }
        None => {
            return Err((
                error(
                    GroupError::NoCoordinator("no coordinator answer for the group".into()),
                    false,
                ),
                vec![],
            ));
        }
    };
    let mut targets = read_targets(
        client,
        std::slice::from_ref(&group),
        &coordinators,
        deadline,
    )
    .await;
    let target = targets
        .remove(&group)
        .unwrap_or_else(|| Err(GroupError::Unreadable("no answer for the group".into())));
    let target = target.map_err(|message| (error(message, false), vec![]))?;
    if let Some(reason) = target.refusal() {
        return Err((changed(Change::Refused(reason)), vec![]));
    }
    let moved = moved_offsets(plan, &target.offsets);
    if !moved.is_empty() {
        return Err((changed(Change::OffsetsMoved(moved)), vec![]));
    }
    let now_ms = super::now_ms();
    let fresh: Vec<PartitionPlan> = plan
        .partitions
        .iter()
        .map(|p| check_partition(context, &group, p, &logs, &target.offsets, now_ms))
        .collect();
    let description = target.description(&group);
    let mut passed = recheck_group(plan, Ok((description, target.offsets, fresh)))?;
    passed.undo.group_type = GroupType::Share;
    Ok((passed, coordinator))
}

/// Sets the passed partitions' start offsets and reads them back.
async fn write(
    client: &KafkaClient,
    group: &str,
    passed: Passed<'_>,
    coordinator: &GroupCoordinator,
    deadline: &Deadline,
) -> Outcome {
    let offsets: BTreeMap<(String, i32), i64> = passed
        .to_commit
        .iter()
        .map(|(p, _)| ((p.topic.clone(), p.partition), p.offset))
        .collect();
    let codes = match client
        .alter_share_group_offsets(coordinator, group, &offsets, deadline)
        .await
    {
        Ok(codes) => codes,
        // A share consumer joined since the re-check: nothing was written.
        Err(e) if e.code() == Some(GROUP_NOT_EMPTY) => {
            return (
                changed(Change::Refused(GroupRefusal::ShareGroupActive {
                    state: "GROUP_NOT_EMPTY".into(),
                    members: Vec::new(),
                })),
                vec![],
            );
        }
        Err(e) if e.code() == Some(GROUP_ID_NOT_FOUND) => {
            return (
                changed(Change::Refused(GroupRefusal::TargetNotShareGroup {
                    group_type: "other (GROUP_ID_NOT_FOUND from AlterShareGroupOffsets)".into(),
                })),
                vec![],
            );
        }
        Err(e) => {
            // A refusal by code wrote nothing; a lost answer may have written it.
            let unknown = e.code().is_none();
            let why = authz::cause(&e);
            let message = if unknown {
                GroupError::OutcomeUnknown(why)
            } else {
                GroupError::NotWritten(why)
            };
            return (error(message, unknown), vec![]);
        }
    };
    let known: Coordinators = std::iter::once((group.to_string(), coordinator.clone())).collect();
    let mut read_back = client
        .fetch_share_group_offsets(&[group.to_string()], &known, deadline)
        .await;
    let read_back = read_back
        .remove(group)
        .and_then(Result::ok)
        .unwrap_or_default();
    committed_rows(group, passed, &codes, &read_back)
}
