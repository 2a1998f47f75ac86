//! The reverse (failback) index built from the offset-syncs topic as `precise` reads it: the
//! same ranges and the same raw history, folded into [`ReverseIndex`] instead of the forward
//! sync index.

use super::rule::{ReverseIndex, ReverseIndexBuilder};
use crate::precise::SyncRun;
use crate::precise::provenance::SyncHistory;
use crate::translate::RangeOutcome;

/// Builds the reverse (failback) index from the ranges' outputs, in plan order, with the raw
/// history the provenance check reads.
pub(super) fn build_reverse_index(
    outcomes: Vec<RangeOutcome<SyncRun>>,
) -> (ReverseIndex, SyncHistory) {
    let mut builder = ReverseIndexBuilder::new();
    let mut history = SyncHistory::new();
    for outcome in outcomes {
        outcome
            .folded
            .for_each(&mut history, |topic, partition, syncs| {
                builder.append(topic, partition, syncs)
            });
    }
    (builder.finish(), history)
}
