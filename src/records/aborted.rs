//! Deciding which batches a consumer skips: control batches always, and for `read_committed`
//! the batches of aborted transactions.
//!
//! This follows the Java consumer's `CompletedFetch` exactly. A Fetch response lists, per
//! partition, the aborted transactions overlapping the returned data as
//! `(producer_id, first_offset)`. Walking batches in order, a producer becomes *aborted* once a
//! batch whose last offset reaches that `first_offset` is seen; its transactional batches are
//! then skipped until its ABORT marker (a control batch) clears it. Later transactions of the
//! same producer that committed are read normally.
//!
//! # References
//! - KIP-98 (transactions, `read_committed`, the aborted transaction index)
//! - Kafka `CompletedFetch.nextFetchedRecord`, `consumeAbortedTransactionsUpTo`,
//!   `containsAbortMarker`

use std::collections::HashSet;

use super::{Batch, ControlRecord, ControlRecordType, RecordsError, Scratch};

/// What to do with a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BatchVerdict {
    /// Read its records.
    Deliver,
    /// Skip it: it holds control records (transaction markers), not data.
    SkipControl,
    /// Skip it: it belongs to an aborted transaction.
    SkipAborted,
}

impl BatchVerdict {
    /// Whether the batch's records should be read.
    pub fn is_deliver(self) -> bool {
        self == BatchVerdict::Deliver
    }
}

/// Per-partition state deciding which batches to skip; feed it every batch in order.
///
/// ```
/// use mm2_offsets::records::{AbortedFilter, Batches, ControlRecordType, Scratch, BatchVerdict};
/// use mm2_offsets::records::builder::{BatchBuilder, end_txn_marker};
///
/// // Producer 7 writes offset 0 in a transaction, then aborts it (marker at offset 1).
/// let mut fetched = BatchBuilder::new(0).transactional(7, 0).record(None, Some(b"x")).build();
/// fetched.extend(end_txn_marker(1, 7, 0, ControlRecordType::Abort));
///
/// let mut filter = AbortedFilter::read_committed([(7, 0)]);
/// let mut scratch = Scratch::new();
/// let verdicts: Vec<BatchVerdict> = Batches::new(&fetched)
///     .map(|b| filter.check(&b.unwrap(), &mut scratch).unwrap())
///     .collect();
/// assert_eq!(verdicts, [BatchVerdict::SkipAborted, BatchVerdict::SkipControl]);
/// ```
#[derive(Clone, Debug)]
pub struct AbortedFilter {
    read_committed: bool,
    /// Aborted transactions not reached yet, sorted by first offset, latest first (pop order).
    pending: Vec<(i64, i64)>,
    /// Producers whose current transaction is aborted.
    aborted: HashSet<i64>,
}

impl AbortedFilter {
    /// A filter for `read_uncommitted`: skips control batches only.
    pub fn read_uncommitted() -> AbortedFilter {
        AbortedFilter {
            read_committed: false,
            pending: Vec::new(),
            aborted: HashSet::new(),
        }
    }

    /// A filter for `read_committed`, given the partition's aborted transactions from the Fetch
    /// response as `(producer_id, first_offset)`, in any order.
    pub fn read_committed(aborted: impl IntoIterator<Item = (i64, i64)>) -> AbortedFilter {
        let mut pending: Vec<(i64, i64)> = aborted
            .into_iter()
            .map(|(producer_id, first_offset)| (first_offset, producer_id))
            .collect();
        pending.sort_unstable_by(|a, b| b.cmp(a));
        AbortedFilter {
            read_committed: true,
            pending,
            aborted: HashSet::new(),
        }
    }

    /// Decides what to do with the next batch. Pass every batch, skipped or not, in log order.
    ///
    /// `scratch` is used only to read the marker of a (normally uncompressed) control batch.
    pub fn check(
        &mut self,
        batch: &Batch<'_>,
        scratch: &mut Scratch,
    ) -> Result<BatchVerdict, RecordsError> {
        let header = batch.header();
        if self.read_committed && header.has_producer_id() {
            let last_offset = header.last_offset();
            while let Some(&(first_offset, producer_id)) = self.pending.last() {
                if first_offset > last_offset {
                    break;
                }
                self.aborted.insert(producer_id);
                self.pending.pop();
            }
            let producer_id = header.producer_id;
            if is_abort_marker(batch, scratch)? {
                self.aborted.remove(&producer_id);
            } else if header.is_transactional() && self.aborted.contains(&producer_id) {
                return Ok(BatchVerdict::SkipAborted);
            }
        }
        Ok(if header.is_control() {
            BatchVerdict::SkipControl
        } else {
            BatchVerdict::Deliver
        })
    }
}

fn is_abort_marker(batch: &Batch<'_>, scratch: &mut Scratch) -> Result<bool, RecordsError> {
    Ok(matches!(
        ControlRecord::first_of(batch, scratch)?,
        Some(ControlRecord {
            kind: ControlRecordType::Abort,
            ..
        })
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Batches;
    use crate::records::builder::{BatchBuilder, end_txn_marker};

    /// Appends a transactional data batch of one record per offset.
    fn txn(out: &mut Vec<u8>, base: i64, producer: i64, count: usize) {
        let mut b = BatchBuilder::new(base).transactional(producer, 0);
        for i in 0..count {
            b = b.record(
                None,
                Some(format!("p{producer}-{}", base + i as i64).as_bytes()),
            );
        }
        out.extend(b.build());
    }

    fn plain(out: &mut Vec<u8>, base: i64) {
        out.extend(BatchBuilder::new(base).record(None, Some(b"plain")).build());
    }

    fn marker(out: &mut Vec<u8>, offset: i64, producer: i64, kind: ControlRecordType) {
        out.extend(end_txn_marker(offset, producer, 0, kind));
    }

    /// Offsets of delivered records.
    fn delivered(data: &[u8], filter: &mut AbortedFilter) -> Vec<i64> {
        let mut scratch = Scratch::new();
        let mut out = Vec::new();
        for batch in Batches::new(data) {
            let batch = batch.expect("valid batch");
            if filter
                .check(&batch, &mut scratch)
                .expect("check")
                .is_deliver()
            {
                let offsets: Vec<i64> = batch
                    .records(&mut scratch)
                    .expect("records")
                    .map(|r| r.expect("record").offset)
                    .collect();
                out.extend(offsets);
            }
        }
        out
    }

    #[test]
    fn interleaved_producers_one_aborted() {
        // p1: 0,1 (aborted at 5); p2: 2,3 (committed at 6); p1 again: 4; plain batch at 7.
        let mut data = Vec::new();
        txn(&mut data, 0, 1, 2);
        txn(&mut data, 2, 2, 2);
        txn(&mut data, 4, 1, 1);
        marker(&mut data, 5, 1, ControlRecordType::Abort);
        marker(&mut data, 6, 2, ControlRecordType::Commit);
        plain(&mut data, 7);
        let mut filter = AbortedFilter::read_committed([(1, 0)]);
        assert_eq!(delivered(&data, &mut filter), [2, 3, 7]);
        let mut uncommitted = AbortedFilter::read_uncommitted();
        assert_eq!(delivered(&data, &mut uncommitted), [0, 1, 2, 3, 4, 7]);
    }

    #[test]
    fn abort_then_commit_by_the_same_producer() {
        // p1 aborts 0..2 (marker at 2), then commits 3..4 (marker at 5).
        let mut data = Vec::new();
        txn(&mut data, 0, 1, 2);
        marker(&mut data, 2, 1, ControlRecordType::Abort);
        txn(&mut data, 3, 1, 2);
        marker(&mut data, 5, 1, ControlRecordType::Commit);
        let mut filter = AbortedFilter::read_committed([(1, 0)]);
        assert_eq!(delivered(&data, &mut filter), [3, 4]);
    }

    #[test]
    fn two_aborted_transactions_of_one_producer_in_any_order() {
        let mut data = Vec::new();
        txn(&mut data, 0, 1, 1);
        marker(&mut data, 1, 1, ControlRecordType::Abort);
        txn(&mut data, 2, 1, 1);
        marker(&mut data, 3, 1, ControlRecordType::Commit);
        txn(&mut data, 4, 1, 1);
        marker(&mut data, 5, 1, ControlRecordType::Abort);
        let mut filter = AbortedFilter::read_committed([(1, 4), (1, 0)]);
        assert_eq!(delivered(&data, &mut filter), [2]);
    }

    #[test]
    fn aborted_transaction_starting_inside_a_batch() {
        // The listed first offset (1) falls inside the batch covering 0..=2.
        let mut data = Vec::new();
        txn(&mut data, 0, 9, 3);
        marker(&mut data, 3, 9, ControlRecordType::Abort);
        let mut filter = AbortedFilter::read_committed([(9, 1)]);
        assert_eq!(delivered(&data, &mut filter), Vec::<i64>::new());
    }

    #[test]
    fn non_transactional_batches_are_never_skipped() {
        let mut data = Vec::new();
        plain(&mut data, 0);
        txn(&mut data, 1, 3, 1);
        marker(&mut data, 2, 3, ControlRecordType::Abort);
        plain(&mut data, 3);
        // Producer 3 listed, and a bogus entry for a producer that never shows up.
        let mut filter = AbortedFilter::read_committed([(3, 1), (99, 0)]);
        assert_eq!(delivered(&data, &mut filter), [0, 3]);
    }

    #[test]
    fn no_aborted_list_delivers_all_data() {
        let mut data = Vec::new();
        txn(&mut data, 0, 1, 2);
        marker(&mut data, 2, 1, ControlRecordType::Commit);
        let mut filter = AbortedFilter::read_committed([]);
        assert_eq!(delivered(&data, &mut filter), [0, 1]);
    }
}
