//! The share-group undo's per-partition decisions (see `recheck_share_undo`).

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
    let r = recheck_share_undo(&undo, &held(&[(0, 40), (1, 50), (2, 60)]), &logs());
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
    let r = recheck_share_undo(&undo, &held(&[(0, 40), (1, 50), (2, 75)]), &logs());
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
    let r = recheck_share_undo(&undo, &held(&[(0, 10)]), &logs());
    assert_eq!(states(&r)[0], UndoState::AlreadyRestored);
}
