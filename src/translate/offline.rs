//! Translating from record-batch bytes already in hand (a captured log segment, a test fixture,
//! a benchmark), with the same decoder and translator the network read uses.

use std::collections::BTreeMap;

use super::read::RangeFold;
use super::table::OffsetTable;
use super::translator::Accumulator;
use super::{ReadReport, Translation};
use crate::records::{AbortedFilter, Batches, RecordsError, Scratch};
use crate::select::GroupSelector;

/// Folds record batches of a checkpoints topic into translated offsets, read_uncommitted
/// (control batches skipped), last record in log order winning.
///
/// ```
/// use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
/// use mm2_offsets::records::builder::BatchBuilder;
/// use mm2_offsets::translate::BatchTranslator;
/// use mm2_offsets::select::GroupSelector;
///
/// let key = checkpoint::encode_key(&CheckpointKey { group: b"app", topic: b"primary.orders", partition: 0 }).unwrap();
/// let value = checkpoint::encode_value(&CheckpointValue {
///     version: 0, upstream_offset: 120, downstream_offset: 100, metadata: b"",
/// }).unwrap();
/// let batches = BatchBuilder::new(0).record(Some(&key), Some(&value)).build();
///
/// let selector = GroupSelector::all();
/// let mut translator = BatchTranslator::new(&selector);
/// translator.add_batches(0, &batches).unwrap();
/// let translation = translator.finish("primary");
/// assert_eq!(translation.iter().next().unwrap().offset, 100);
///
/// // Batches of another partition of the checkpoints topic: a later timestamp wins there.
/// let later = BatchBuilder::new(7).log_append_time(i64::MAX / 2).record(Some(&key), Some(&checkpoint::encode_value(&CheckpointValue {
///     version: 0, upstream_offset: 150, downstream_offset: 130, metadata: b"",
/// }).unwrap())).build();
/// let mut translator = BatchTranslator::new(&selector);
/// translator.add_batches(0, &batches).unwrap();
/// translator.add_batches(1, &later).unwrap();
/// let translation = translator.finish("primary");
/// let only = translation.iter().next().unwrap();
/// assert_eq!((translation.len(), only.offset, only.checkpoint_partition), (1, 130, 1));
/// ```
pub struct BatchTranslator<'a> {
    /// One accumulator per checkpoints partition, as the network read keeps one per range.
    accs: BTreeMap<i32, Accumulator<'a>>,
    selector: &'a GroupSelector,
    scratch: Scratch,
}

impl<'a> BatchTranslator<'a> {
    /// A translator for the groups `selector` selects.
    pub fn new(selector: &'a GroupSelector) -> Self {
        BatchTranslator {
            accs: BTreeMap::new(),
            selector,
            scratch: Scratch::new(),
        }
    }

    /// Folds in the batches of checkpoints partition `partition`, in log order.
    pub fn add_batches(&mut self, partition: i32, bytes: &[u8]) -> Result<(), RecordsError> {
        let mut filter = AbortedFilter::read_uncommitted();
        let selector = self.selector;
        let acc = self
            .accs
            .entry(partition)
            .or_insert_with(|| Accumulator::new(selector));
        for batch in Batches::new(bytes) {
            let batch = batch?;
            if filter.check(&batch, &mut self.scratch)?.is_deliver() {
                acc.add_batch(partition, &batch, &mut self.scratch, i64::MIN)?;
            }
        }
        Ok(())
    }

    /// Records folded in so far.
    pub fn records(&self) -> u64 {
        self.accs.values().map(|a| a.records).sum()
    }

    /// The translated offsets, sorted by group, topic, partition, attributed to `source`. The
    /// report counts records and skips; with no network read, it is always complete.
    pub fn finish(self, source: &str) -> Translation {
        let mut report = ReadReport {
            complete: true,
            ..ReadReport::default()
        };
        let mut parts = Vec::with_capacity(self.accs.len());
        for acc in self.accs.into_values() {
            let (part, skipped, records) = acc.into_part();
            report.records += records;
            report.skipped.merge(skipped);
            parts.push((source.to_string(), part));
        }
        Translation::new(OffsetTable::from_parts(parts), report).with_missing_groups(self.selector)
    }
}
