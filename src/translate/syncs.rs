//! Reading the offset-syncs topic with the checkpoints reader: each range collects its syncs in
//! log order (names interned, 24 bytes a sync), and the ranges are fed to the
//! [`SyncIndexBuilder`] in offset order, since the order carries the lifetime signals.

use super::read::{FoldSpec, RangeFold, RangeOutcome};
use super::report::{SkipCounts, SkipReason};
use super::translator::Interner;
use crate::mm2::offset_sync;
use crate::mm2::sync_index::{Interpolation, SyncIndex, SyncIndexBuilder};
use crate::records::{RecordsError, Scratch};

/// One sync as a range saw it, with its topic interned per range.
#[derive(Clone, Copy)]
struct RawSync {
    topic: u32,
    partition: i32,
    upstream: i64,
    downstream: i64,
}

/// What one range of the offset-syncs topic held, in log order.
pub(crate) struct SyncRun {
    topics: Vec<Box<[u8]>>,
    syncs: Vec<RawSync>,
}

impl SyncRun {
    /// Adds this run's syncs to `builder`, in log order.
    fn feed(&self, builder: &mut SyncIndexBuilder) {
        for sync in &self.syncs {
            let topic = &self.topics[sync.topic as usize];
            builder.add(topic, sync.partition, sync.upstream, sync.downstream);
        }
    }
}

/// Starts a [`SyncFold`] per range.
pub(crate) struct SyncSpec;

impl FoldSpec for SyncSpec {
    type Fold<'a> = SyncFold;
    type Output = SyncRun;
    fn start(&self) -> SyncFold {
        SyncFold::default()
    }
}

/// Collects one range's syncs. Decodes keys and values in place; copies a topic name only the
/// first time the range sees it.
#[derive(Default)]
pub(crate) struct SyncFold {
    topics: Interner,
    syncs: Vec<RawSync>,
    skipped: SkipCounts,
    records: u64,
}

impl RangeFold for SyncFold {
    type Output = SyncRun;

    fn add_record(
        &mut self,
        partition: i32,
        offset: i64,
        _timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) {
        self.records += 1;
        let Some(key) = key else {
            self.skipped.add(SkipReason::NullKey, partition, offset);
            return;
        };
        let Some(value) = value else {
            self.skipped.add(SkipReason::Tombstone, partition, offset);
            return;
        };
        let Ok(key) = offset_sync::decode_key(key) else {
            self.skipped
                .add(SkipReason::UndecodableKey, partition, offset);
            return;
        };
        let Ok(value) = offset_sync::decode_value(value) else {
            self.skipped
                .add(SkipReason::UndecodableValue, partition, offset);
            return;
        };
        let (topic, _) = self.topics.get_or_insert(key.topic);
        self.syncs.push(RawSync {
            topic,
            partition: key.partition,
            upstream: value.upstream_offset,
            downstream: value.downstream_offset,
        });
    }

    fn finish(self) -> (SyncRun, SkipCounts, u64) {
        let run = SyncRun {
            topics: self.topics.into_names(),
            syncs: self.syncs,
        };
        (run, self.skipped, self.records)
    }
}

/// Builds the index from the ranges' outputs. `outcomes` must be in plan order (each
/// partition's ranges by offset), as `read_ranges` returns them.
pub(crate) fn build_index(
    outcomes: &[RangeOutcome<SyncRun>],
    interpolation: Interpolation,
) -> SyncIndex {
    let mut builder = SyncIndexBuilder::new();
    for outcome in outcomes {
        outcome.folded.feed(&mut builder);
    }
    builder.finish(interpolation)
}

/// Builds the index from record batches already in memory (a dump of the offset-syncs topic),
/// in log order: the offline counterpart of the network read, used by tests and benchmarks.
///
/// # Errors
/// A [`RecordsError`] if a batch is corrupt.
pub fn index_from_batches<'a>(
    batches: impl IntoIterator<Item = &'a [u8]>,
    interpolation: Interpolation,
) -> Result<(SyncIndex, SkipCounts), RecordsError> {
    let mut fold = SyncFold::default();
    let mut scratch = Scratch::new();
    for bytes in batches {
        for batch in crate::records::Batches::new(bytes) {
            let batch = batch?;
            if batch.is_control() {
                continue;
            }
            fold.add_batch(0, &batch, &mut scratch, 0)?;
        }
    }
    let mut builder = SyncIndexBuilder::new();
    let (run, skipped, _) = fold.finish();
    run.feed(&mut builder);
    Ok((builder.finish(interpolation), skipped))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm2::offset_sync::{OffsetSyncKey, OffsetSyncValue, encode_key, encode_value};
    use crate::mm2::sync_index::Rule;
    use crate::records::builder::BatchBuilder;

    fn sync(topic: &[u8], partition: i32, u: i64, d: i64) -> (Vec<u8>, Vec<u8>) {
        let key = encode_key(&OffsetSyncKey { topic, partition }).unwrap();
        let value = encode_value(&OffsetSyncValue {
            upstream_offset: u,
            downstream_offset: d,
        });
        (key, value)
    }

    #[test]
    fn batches_build_the_index_in_log_order_and_count_bad_records() {
        let a = sync(b"orders", 0, 0, 0);
        let b = sync(b"orders", 0, 100, 100);
        let c = sync(b"audit", 3, 5, 9);
        let batch = BatchBuilder::new(0)
            .record(Some(&a.0), Some(&a.1))
            .record(Some(&c.0), Some(&c.1))
            .record(None, Some(&a.1))
            .record(Some(&a.0), None)
            .record(Some(&[0u8, 9][..]), Some(&a.1))
            .record(Some(&b.0), Some(&b.1))
            .build();
        let (index, skipped) =
            index_from_batches([&batch[..]], Interpolation::GaplessUpstream).unwrap();
        assert_eq!(index.partitions(), 2);
        let orders = index.partition(b"orders", 0).unwrap();
        assert_eq!(orders.translate(60), Some((60, Rule::Interpolated)));
        let audit = index.partition(b"audit", 3).unwrap();
        assert_eq!(audit.translate(6), Some((10, Rule::Mm2Rule)));
        assert_eq!(skipped.count(SkipReason::NullKey), 1);
        assert_eq!(skipped.count(SkipReason::Tombstone), 1);
        assert_eq!(skipped.count(SkipReason::UndecodableKey), 1);
    }
}
