//! Planning a read: which offset ranges of which checkpoints partitions each worker reads.

use crate::client::SharedTopic;

/// Partitions smaller than this many offsets are never split: a range's fixed cost (one extra
/// Fetch and a merge) outweighs the parallelism.
pub const MIN_SPLIT_OFFSETS: i64 = 200_000;

/// One worker's share of a partition: batches whose base offset lies in `[start, end)`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReadRange {
    /// The source alias whose checkpoints these are.
    pub source: String,
    /// The checkpoints topic.
    pub topic: SharedTopic,
    /// The partition.
    pub partition: i32,
    /// First offset of the range.
    pub start: i64,
    /// One past the last offset of the range.
    pub end: i64,
    /// Whether this is the partition's first range, which starts at the log start offset and
    /// so must drop records below it inside a batch that begins earlier.
    pub first: bool,
}

/// A partition to read: its snapshotted bounds.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PartitionBounds {
    /// The source alias.
    pub source: String,
    /// The checkpoints topic.
    pub topic: SharedTopic,
    /// The partition.
    pub partition: i32,
    /// Log start offset.
    pub start: i64,
    /// End offset snapshot.
    pub end: i64,
}

/// Splits partitions into at most about `parallelism` ranges, largest partitions split first,
/// no piece smaller than `min_split` offsets (see [`MIN_SPLIT_OFFSETS`]). Empty partitions get
/// no range.
pub fn plan_ranges(
    partitions: &[PartitionBounds],
    parallelism: usize,
    min_split: i64,
) -> Vec<ReadRange> {
    let parallelism = parallelism.max(1);
    let non_empty: Vec<&PartitionBounds> = partitions.iter().filter(|p| p.end > p.start).collect();
    let mut pieces: Vec<usize> = vec![1; non_empty.len()];
    // Hand out the remaining workers one at a time to the partition with the largest pieces.
    let mut spare = parallelism.saturating_sub(non_empty.len());
    while spare > 0 {
        let best = non_empty
            .iter()
            .enumerate()
            .map(|(i, p)| (i, (p.end - p.start) / (pieces[i] as i64 + 1)))
            .filter(|&(_, piece)| piece >= min_split.max(1))
            .max_by_key(|&(_, piece)| piece);
        match best {
            Some((i, _)) => {
                pieces[i] += 1;
                spare -= 1;
            }
            None => break,
        }
    }
    let mut ranges = Vec::new();
    for (p, n) in non_empty.iter().zip(pieces) {
        let size = p.end - p.start;
        for k in 0..n as i64 {
            let start = p.start + size * k / n as i64;
            let end = p.start + size * (k + 1) / n as i64;
            ranges.push(ReadRange {
                source: p.source.clone(),
                topic: p.topic.clone(),
                partition: p.partition,
                start,
                end,
                first: k == 0,
            });
        }
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{PartitionInfo, TopicInfo};
    use std::sync::Arc;

    fn bounds(partition: i32, start: i64, end: i64) -> PartitionBounds {
        PartitionBounds {
            source: "primary".into(),
            topic: Arc::new(TopicInfo {
                name: "primary.checkpoints.internal".into(),
                topic_id: [0; 16],
                is_internal: false,
                partitions: vec![PartitionInfo {
                    partition,
                    leader: 1,
                    leader_epoch: 0,
                }],
            }),
            partition,
            start,
            end,
        }
    }

    #[test]
    fn ranges_cover_each_partition_exactly_once() {
        let parts = [bounds(0, 10, 1_000_010), bounds(1, 0, 0), bounds(2, 5, 300)];
        let ranges = plan_ranges(&parts, 4, MIN_SPLIT_OFFSETS);
        assert_eq!(ranges.len(), 4);
        let p0: Vec<_> = ranges.iter().filter(|r| r.partition == 0).collect();
        assert_eq!(p0.len(), 3);
        assert_eq!(p0[0].start, 10);
        assert!(p0[0].first && !p0[1].first);
        for pair in p0.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        assert_eq!(p0.last().unwrap().end, 1_000_010);
        assert!(ranges.iter().all(|r| r.partition != 1));
    }

    #[test]
    fn small_partitions_are_not_split() {
        let ranges = plan_ranges(&[bounds(0, 0, 1000)], 8, MIN_SPLIT_OFFSETS);
        assert_eq!(ranges.len(), 1);
    }
}
