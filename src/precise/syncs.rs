//! Reading the offset-syncs topic with the checkpoints reader: each range groups its syncs by
//! upstream partition, in log order (topic names interned, 16 bytes a sync, one map lookup per
//! record on integers), and the ranges are handed to the [`SyncIndexBuilder`] in offset order,
//! one partition's run at a time, since the order within a partition carries the lifetime
//! signals. A run's chunks are moved into the index, not copied: the syncs are written by the
//! fold, then copied once, filtered, into the index's array (and sorted there after restarts).

use rustc_hash::FxHashMap;

use super::provenance::{RangeHistory, SyncHistory};
use crate::mm2::offset_sync;
use crate::mm2::sync_index::{Interpolation, Sync, SyncChunks, SyncIndex, SyncIndexBuilder};
use crate::records::{RecordsError, Scratch};
use crate::translate::{FoldSpec, Interner, RangeFold, RangeOutcome, SkipCounts, SkipReason};

/// The syncs one range holds for one upstream partition, in log order.
struct PartitionRun {
    /// Interned in the range's own table.
    topic: u32,
    partition: i32,
    syncs: SyncChunks,
}

/// What one range of the offset-syncs topic held, per upstream partition, in log order.
pub(crate) struct SyncRun {
    topics: Vec<Box<[u8]>>,
    partitions: Vec<PartitionRun>,
    /// What the provenance check needs of this range (see `provenance`).
    history: RangeHistory,
}

impl SyncRun {
    /// Hands this run's syncs to `builder`, each partition's in log order. Partitions are
    /// independent, so feeding one after the other keeps the meaning of the interleaved log.
    fn feed(self, builder: &mut SyncIndexBuilder, history: &mut SyncHistory) {
        history.append(self.history, &self.topics);
        for run in self.partitions {
            builder.append(&self.topics[run.topic as usize], run.partition, run.syncs);
        }
    }

    /// Hands each partition's syncs, in log order, to `add`, and what the provenance check
    /// needs of this range to `history`.
    pub(crate) fn for_each(
        self,
        history: &mut SyncHistory,
        mut add: impl FnMut(&[u8], i32, SyncChunks),
    ) {
        history.append(self.history, &self.topics);
        for run in self.partitions {
            add(&self.topics[run.topic as usize], run.partition, run.syncs);
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
/// first time the range sees it, and allocates only as a partition's run grows.
#[derive(Default)]
pub(crate) struct SyncFold {
    topics: Interner,
    /// (interned topic, partition) -> index in `partitions`.
    slots: FxHashMap<(u32, i32), u32>,
    partitions: Vec<PartitionRun>,
    skipped: SkipCounts,
    records: u64,
    history: RangeHistory,
}

impl SyncFold {
    /// The run of `topic`-`partition`, created on first sight.
    #[inline]
    fn run(&mut self, topic: u32, partition: i32) -> &mut SyncChunks {
        let partitions = &mut self.partitions;
        let slot = *self.slots.entry((topic, partition)).or_insert_with(|| {
            partitions.push(PartitionRun {
                topic,
                partition,
                syncs: SyncChunks::default(),
            });
            // u32: 2^32 partitions would take a record each first, far past any fetch.
            (partitions.len() - 1) as u32
        });
        &mut self.partitions[slot as usize].syncs
    }
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
        self.history.record(offset);
        // Hook of the provenance check: a record of any other shape than MM2's sync is counted.
        let exact = self.history.is_sync(key, value);
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
        if exact {
            self.history.sync(
                topic,
                key.partition,
                offset,
                value.upstream_offset,
                value.downstream_offset,
            );
        }
        self.run(topic, key.partition).push(Sync {
            upstream: value.upstream_offset,
            downstream: value.downstream_offset,
        });
    }

    fn finish(self) -> (SyncRun, SkipCounts, u64) {
        let run = SyncRun {
            topics: self.topics.into_names(),
            partitions: self.partitions,
            history: self.history,
        };
        (run, self.skipped, self.records)
    }
}

/// Builds the index from the ranges' outputs, with the raw history the provenance check reads.
/// `outcomes` must be in plan order (each partition's ranges by offset), as `read_ranges`
/// returns them.
pub(crate) fn build_index(
    outcomes: Vec<RangeOutcome<SyncRun>>,
    interpolation: Interpolation,
) -> (SyncIndex, SyncHistory) {
    let mut builder = SyncIndexBuilder::new();
    let mut history = SyncHistory::new();
    for outcome in outcomes {
        outcome.folded.feed(&mut builder, &mut history);
    }
    (builder.finish(interpolation), history)
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
    run.feed(&mut builder, &mut SyncHistory::new());
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

    /// Grouping each range's syncs by partition and feeding the ranges in order builds the
    /// same index as adding every sync in log order: the interleaving carries no meaning across
    /// partitions, and each partition's order (restarts, truncations, duplicates) is kept.
    #[test]
    fn ranges_grouped_by_partition_build_the_log_order_index() {
        // Three partitions interleaved, with a restart (upstream rewind), a re-sent sync and a
        // truncation, split over three ranges at arbitrary points.
        let log: Vec<(&[u8], i32, i64, i64)> = vec![
            (b"a", 0, 0, 0),
            (b"b", 1, 5, 50),
            (b"a", 0, 10, 10),
            (b"a", 1, 0, 7),
            (b"b", 1, 15, 60),
            (b"a", 0, 10, 10),
            (b"a", 0, 5, 11),
            (b"b", 1, 25, 30),
            (b"a", 1, 20, 27),
            (b"a", 0, 30, 36),
            (b"b", 1, 35, 40),
            (b"a", 0, -1, 40),
        ];
        for interpolation in [Interpolation::Disabled, Interpolation::GaplessUpstream] {
            let mut expected = SyncIndexBuilder::new();
            for &(topic, partition, u, d) in &log {
                expected.add(topic, partition, u, d);
            }
            let expected = expected.finish(interpolation);
            let mut builder = SyncIndexBuilder::new();
            for range in [&log[..4], &log[4..9], &log[9..]] {
                let mut fold = SyncFold::default();
                for (offset, &(topic, partition, u, d)) in range.iter().enumerate() {
                    let (key, value) = sync(topic, partition, u, d);
                    fold.add_record(0, offset as i64, 0, Some(&key), Some(&value));
                }
                fold.finish().0.feed(&mut builder, &mut SyncHistory::new());
            }
            let got = builder.finish(interpolation);
            assert_eq!(got.partitions(), 3);
            for (topic, partition) in [(&b"a"[..], 0), (b"a", 1), (b"b", 1)] {
                let (want, have) = (
                    expected.partition(topic, partition).unwrap(),
                    got.partition(topic, partition).unwrap(),
                );
                assert_eq!(want.stats(), have.stats());
                for u in -1..45 {
                    assert_eq!(want.translate(u), have.translate(u), "{partition} {u}");
                }
            }
            let b = got.partition(b"b", 1).unwrap().stats();
            assert_eq!((b.truncations, b.syncs), (1, 2));
            let a = got.partition(b"a", 0).unwrap().stats();
            assert_eq!((a.duplicates, a.lifetimes, a.invalid), (1, 2, 1));
        }
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
