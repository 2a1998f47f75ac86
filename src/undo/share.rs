//! The undo of a share group (KIP-932): its start offsets as they were before the run, put
//! back with AlterShareGroupOffsets, and those the run created (none before) removed with
//! DeleteShareGroupOffsets, so that `share.auto.offset.reset` decides again. Never an
//! OffsetCommit: that would create a classic group under the id.
//!
//! The checks are the consumer groups' (see the module above) except the run marker: a share
//! group's start offset carries no metadata, so "the run wrote it" is the written offset still
//! there. DeleteShareGroupOffsets removes a whole topic's state, so a topic is deleted only
//! when every partition with a start offset on it is one this undo deletes or restores (the
//! delete is sent first, the restores after it).

use std::collections::{BTreeMap, BTreeSet};

use super::{
    Codes, UndoGroup, UndoGroupResult, UndoPartitionResult, UndoState, other_topic, out_of_range,
    settle_undo, skip,
};
use crate::apply::read::target_logs;
use crate::apply::share::read_targets;
use crate::apply::{TargetLogs, committed_offset};
use crate::client::{Coordinators, Deadline, GroupCoordinator, GroupResults, KafkaClient};

/// Undoes (or, without `execute`, checks) each share group of `groups`, one by one.
pub(super) async fn undo_groups(
    client: &KafkaClient,
    groups: &[&UndoGroup],
    coordinators: &GroupResults<GroupCoordinator>,
    execute: bool,
    deadline: &Deadline,
) -> Vec<UndoGroupResult> {
    let mut out = Vec::with_capacity(groups.len());
    for g in groups {
        out.push(undo_group(client, g, coordinators, execute, deadline).await);
    }
    out
}

async fn undo_group(
    client: &KafkaClient,
    undo: &UndoGroup,
    coordinators: &GroupResults<GroupCoordinator>,
    execute: bool,
    deadline: &Deadline,
) -> UndoGroupResult {
    let topics: BTreeSet<&str> = undo.partitions.iter().map(|p| p.topic.as_str()).collect();
    let logs = match target_logs(client, &topics, deadline).await {
        Ok(logs) => logs,
        Err(e) => {
            return skip(
                undo,
                format!("cannot read the topics' logs to check the undo: {e}"),
            );
        }
    };
    let group = undo.group.clone();
    let mut targets =
        read_targets(client, std::slice::from_ref(&group), coordinators, deadline).await;
    let target = match targets.remove(&group) {
        Some(Ok(t)) => t,
        Some(Err(message)) => return skip(undo, message.to_string()),
        None => return skip(undo, "no answer for the group".into()),
    };
    if let Some(reason) = target.refusal() {
        return skip(undo, reason.to_string());
    }
    let mut result = recheck(undo, &target.offsets, &logs);
    if !execute {
        return result;
    }
    let Some(Ok(coordinator)) = coordinators.get(&group) else {
        return skip(undo, "no coordinator answer for the group".into());
    };
    let restore: BTreeMap<(String, i32), i64> = result
        .partitions
        .iter()
        .filter(|r| r.state == UndoState::WouldRestore)
        .filter_map(|r| r.before.map(|b| ((r.topic.clone(), r.partition), b)))
        .collect();
    let delete: BTreeSet<String> = result
        .partitions
        .iter()
        .filter(|r| r.state == UndoState::WouldDelete)
        .map(|r| r.topic.clone())
        .collect();
    let mut codes = Codes::new();
    // The deletes first: they clear a whole topic, which the restores then set again.
    if !delete.is_empty() {
        let answer = client
            .delete_share_group_offsets(coordinator, &group, &delete, deadline)
            .await;
        for r in result
            .partitions
            .iter()
            .filter(|r| r.state == UndoState::WouldDelete)
        {
            let code = match &answer {
                Ok(codes) => codes
                    .get(&r.topic)
                    .copied()
                    .ok_or_else(|| "left out of the coordinator's answer".to_string()),
                Err(e) => match e.code() {
                    Some(code) => Ok(code),
                    None => Err(e.to_string()),
                },
            };
            codes.insert((r.topic.clone(), r.partition), code);
        }
    }
    if !restore.is_empty() {
        let answer = client
            .alter_share_group_offsets(coordinator, &group, &restore, deadline)
            .await;
        for key in restore.keys() {
            let code = match &answer {
                Ok(codes) => codes
                    .get(key)
                    .copied()
                    .ok_or_else(|| "left out of the coordinator's answer".to_string()),
                Err(e) => match e.code() {
                    Some(code) => Ok(code),
                    None => Err(e.to_string()),
                },
            };
            codes.insert(key.clone(), code);
        }
    }
    let known: Coordinators = std::iter::once((group.clone(), coordinator.clone())).collect();
    let mut read = client
        .fetch_share_group_offsets(std::slice::from_ref(&group), &known, deadline)
        .await;
    // A share group whose last start offsets were deleted may be gone: nothing to read back.
    let read_back = match read.remove(&group) {
        Some(Ok(offsets)) => Some(offsets),
        Some(Err(e)) if e.code() == Some(69) => Some(Default::default()),
        _ => None,
    };
    settle_undo(&mut result, &codes, read_back.as_ref());
    result
}

/// Each partition's state as the target shows it now.
fn recheck(
    undo: &UndoGroup,
    current: &crate::client::GroupOffsets,
    logs: &TargetLogs,
) -> UndoGroupResult {
    let mut result = UndoGroupResult {
        group: undo.group.clone(),
        skipped: None,
        partitions: Vec::new(),
    };
    for p in &undo.partitions {
        let found = committed_offset(current, &p.topic, p.partition);
        let before = p.before.as_ref().map(|b| b.offset);
        let (state, error) = if found == before {
            (UndoState::AlreadyRestored, None)
        } else if found != Some(p.written) {
            (UndoState::ChangedSince, None)
        } else if let Some(why) = other_topic(p, logs) {
            (UndoState::TopicChanged, Some(why))
        } else if let Some(why) = out_of_range(p, logs) {
            (UndoState::OutOfRange, Some(why))
        } else if before.is_some() {
            (UndoState::WouldRestore, None)
        } else {
            (UndoState::WouldDelete, None)
        };
        result.partitions.push(UndoPartitionResult {
            topic: p.topic.clone(),
            partition: p.partition,
            written: p.written,
            before,
            found,
            state,
            error,
            read_back: found,
        });
    }
    // A topic's start offsets are deleted whole: only where every partition holding one is
    // deleted or restored by this undo (the delete goes first, the restores after it); else
    // the others would lose theirs.
    let deleting: BTreeSet<(String, i32)> = result
        .partitions
        .iter()
        .filter(|r| matches!(r.state, UndoState::WouldDelete | UndoState::WouldRestore))
        .map(|r| (r.topic.clone(), r.partition))
        .collect();
    for r in &mut result.partitions {
        if r.state != UndoState::WouldDelete {
            continue;
        }
        let others: Vec<i32> = current
            .iter()
            .filter(|((t, part), c)| {
                *t == r.topic && c.offset >= 0 && !deleting.contains(&(t.clone(), *part))
            })
            .map(|((_, part), _)| *part)
            .collect();
        if !others.is_empty() {
            r.state = UndoState::Failed;
            r.error = Some(format!(
                "DeleteShareGroupOffsets removes the whole topic {:?}, and the share group holds start offsets on partitions {others:?} that this undo neither deletes nor restores: not deleted; reset this partition with kafka-share-groups.sh --reset-offsets",
                r.topic
            ));
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::TopicLogs;
    use crate::apply::journal::{Committed, UndoPartition};
    use crate::client::{CommittedOffset, GroupOffsets, GroupType};

    fn part(partition: i32, written: i64, before: Option<i64>) -> UndoPartition {
        UndoPartition {
            topic: "orders".into(),
            partition,
            topic_id: None,
            log_end: Some(100),
            written,
            before: before.map(|offset| Committed {
                offset,
                metadata: String::new(),
            }),
        }
    }

    fn held(offsets: &[(i32, i64)]) -> GroupOffsets {
        offsets
            .iter()
            .map(|&(p, offset)| {
                (
                    ("orders".to_string(), p),
                    CommittedOffset {
                        offset,
                        leader_epoch: -1,
                        metadata: None,
                        error_code: 0,
                    },
                )
            })
            .collect()
    }

    fn logs() -> TargetLogs {
        let mut logs = TargetLogs::new();
        logs.insert(
            "orders".into(),
            TopicLogs::Present([(0, (0, 100)), (1, (0, 100)), (2, (0, 100))].into(), None),
        );
        logs
    }

    fn states(r: &UndoGroupResult) -> Vec<UndoState> {
        r.partitions.iter().map(|p| p.state).collect()
    }

    /// Restored where there was a start offset, deleted where the run created it, untouched
    /// where someone moved it since; and a topic is deleted only whole.
    #[test]
    fn share_undo_restores_deletes_and_never_deletes_a_topic_partly() {
        let undo = UndoGroup {
            group: "q".into(),
            group_type: GroupType::Share,
            partitions: vec![part(0, 40, Some(10)), part(1, 50, None), part(2, 60, None)],
        };
        // As the run left it: restore 0, delete 1 and 2 (the whole topic's state).
        let r = recheck(&undo, &held(&[(0, 40), (1, 50), (2, 60)]), &logs());
        assert_eq!(
            states(&r),
            [
                UndoState::WouldRestore,
                UndoState::WouldDelete,
                UndoState::WouldDelete
            ]
        );
        // Partition 2 moved since (a consumer acknowledged): left alone, and then deleting
        // the topic would take partition 2's start offset too, so 1 is not deleted either.
        let r = recheck(&undo, &held(&[(0, 40), (1, 50), (2, 75)]), &logs());
        assert_eq!(
            states(&r),
            [
                UndoState::WouldRestore,
                UndoState::Failed,
                UndoState::ChangedSince
            ]
        );
        assert!(
            r.partitions[1].error.as_deref().unwrap().contains("[2]"),
            "{r:?}"
        );
        // Already as before.
        let r = recheck(&undo, &held(&[(0, 10)]), &logs());
        assert_eq!(states(&r)[0], UndoState::AlreadyRestored);
    }
}
