//! The undo's [`Summary`]: the same counts `apply` and `failback` print, derived from an
//! [`UndoReport`]'s per-partition states.

use super::{UndoReport, UndoState};
use crate::apply::Summary;

impl Summary {
    /// An undo (dry run or execute): each partition restored or deleted and read back is
    /// `committed`, one already as it was `unchanged`, one the re-check refuses
    /// `refused` by its state (`changed-since`, `not-written-by-run`, `topic-changed`,
    /// `out-of-range`), a skipped group's partitions refused by its reason.
    pub fn of_undo(report: &UndoReport) -> Summary {
        let mut s = Summary {
            executed: report.executed,
            ..Summary::default()
        };
        for g in &report.groups {
            if g.skipped.is_some() {
                // A skipped group lists no partitions: one refusal for the group.
                s.refuse("group-skipped");
                continue;
            }
            for p in &g.partitions {
                match p.state {
                    UndoState::WouldRestore | UndoState::WouldDelete => s.to_write += 1,
                    UndoState::Restored | UndoState::Deleted => {
                        s.to_write += 1;
                        if p.read_back == p.before {
                            s.committed += 1;
                        } else {
                            s.unverified += 1;
                        }
                    }
                    UndoState::AlreadyRestored => s.unchanged += 1,
                    UndoState::ChangedSince => s.refuse("changed-since"),
                    UndoState::NotWrittenByRun => s.refuse("not-written-by-run"),
                    UndoState::TopicChanged => s.refuse("topic-changed"),
                    UndoState::OutOfRange => s.refuse("out-of-range"),
                    UndoState::Failed => {
                        s.to_write += 1;
                        s.failed += 1;
                    }
                    UndoState::Unknown => {
                        s.to_write += 1;
                        s.unknown += 1;
                    }
                }
            }
        }
        s
    }
}
