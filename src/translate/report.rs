//! What a read did: volumes, skipped records by reason, and how far each partition got.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

pub(crate) use crate::mm2::fold::SkipReason;

/// Up to this many example positions are kept per reason.
pub const EXAMPLES_PER_REASON: usize = 5;

/// Count of one reason, with the lowest positions (checkpoint partition, offset) it was seen at,
/// sorted: the same whatever order the partitions were read in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SkipCount {
    /// How many records.
    pub count: u64,
    /// The lowest few (partition, offset) positions, sorted.
    pub first: Vec<(i32, i64)>,
}

/// Skip counts by reason.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SkipCounts(pub BTreeMap<SkipReason, SkipCount>);

impl SkipCounts {
    /// Counts one record. The examples kept are the lowest positions, so that readers of
    /// several partitions at once (the live map's tails, a translation's ranges) keep the same
    /// ones whatever order the records came in.
    pub fn add(&mut self, reason: SkipReason, partition: i32, offset: i64) {
        let entry = self.0.entry(reason).or_default();
        entry.count += 1;
        let at = (partition, offset);
        if entry.first.len() < EXAMPLES_PER_REASON {
            entry.first.push(at);
        } else if entry.first.last().is_some_and(|last| at < *last) {
            entry.first.pop();
            entry.first.push(at);
        } else {
            return;
        }
        entry.first.sort_unstable();
    }

    /// Folds another set of counts in (examples kept in position order).
    pub fn merge(&mut self, other: SkipCounts) {
        for (reason, count) in other.0 {
            let entry = self.0.entry(reason).or_default();
            entry.count += count.count;
            entry.first.extend(count.first);
            entry.first.sort_unstable();
            entry.first.truncate(EXAMPLES_PER_REASON);
        }
    }

    /// The count for one reason.
    pub fn count(&self, reason: SkipReason) -> u64 {
        self.0.get(&reason).map_or(0, |c| c.count)
    }
}

/// How far the read of one checkpoints-topic partition got.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PartitionProgress {
    /// The checkpoints topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The log start offset when the read began.
    pub start: i64,
    /// The end offset snapshotted when the read began (high watermark, or last stable offset
    /// under read_committed).
    pub end: i64,
    /// The offset the read reached; `>= end` once complete.
    pub read_to: i64,
}

impl PartitionProgress {
    /// Whether this partition was read to its snapshotted end.
    pub fn complete(&self) -> bool {
        self.read_to >= self.end
    }
}

/// Everything a read did. In JSON (`translate -o json`'s `report`) the wall time is
/// `elapsed_ms`, in milliseconds; `elapsed`, the same number, is the name of the first
/// releases, kept for one release more and then removed (a duration carries its unit in its
/// name).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadReport {
    /// True only when every partition was read to its end. A partial result is never marked
    /// complete.
    pub complete: bool,
    /// Records seen (control records excluded).
    pub records: u64,
    /// Record batches seen (control batches included).
    pub batches: u64,
    /// Bytes of record batches fetched.
    pub bytes: u64,
    /// Records skipped or flagged, by reason.
    pub skipped: SkipCounts,
    /// Each partition's start, end and read-to offsets.
    pub partitions: Vec<PartitionProgress>,
    /// Wall time of the whole read.
    pub elapsed: Duration,
}

impl Serialize for ReadReport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let millis = self.elapsed.as_secs_f64() * 1000.0;
        let mut report = serializer.serialize_struct("ReadReport", 8)?;
        report.serialize_field("complete", &self.complete)?;
        report.serialize_field("records", &self.records)?;
        report.serialize_field("batches", &self.batches)?;
        report.serialize_field("bytes", &self.bytes)?;
        report.serialize_field("skipped", &self.skipped)?;
        report.serialize_field("partitions", &self.partitions)?;
        // Deprecated: the same milliseconds under the name of the first releases.
        report.serialize_field("elapsed", &millis)?;
        report.serialize_field("elapsed_ms", &millis)?;
        report.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wall_time_carries_its_unit_and_the_old_name_stays_one_release() {
        let report = ReadReport {
            elapsed: Duration::from_millis(250),
            ..ReadReport::default()
        };
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["elapsed_ms"], 250.0);
        assert_eq!(json["elapsed"], json["elapsed_ms"]);
    }

    #[test]
    fn counts_keep_the_first_examples() {
        let mut a = SkipCounts::default();
        for offset in 0..8 {
            a.add(SkipReason::Tombstone, 0, offset);
        }
        let entry = &a.0[&SkipReason::Tombstone];
        assert_eq!(entry.count, 8);
        assert_eq!(entry.first, vec![(0, 0), (0, 1), (0, 2), (0, 3), (0, 4)]);

        let mut b = SkipCounts::default();
        b.add(SkipReason::Tombstone, 0, 100);
        b.add(SkipReason::NullKey, 1, 7);
        a.merge(b);
        assert_eq!(a.count(SkipReason::Tombstone), 9);
        assert_eq!(a.count(SkipReason::NullKey), 1);
    }
}
