//! Reading the primary's record offsets between two offset syncs, to prove a stretch
//! one-for-one or to count back from the next sync ([`super::ReverseAnswer::refine`]).
//!
//! Read as a read_committed consumer sees the partition: no transaction markers and no records
//! of aborted transactions. Every record so read was delivered to MirrorMaker 2 whatever its
//! isolation level, so the list is a subset of what MM2 delivered, which is all the argument
//! needs; records removed since (retention, compaction) only make the answer less sharp. Only
//! offsets are kept, not contents: a batch without holes is taken from its header.

use std::collections::BTreeMap;

use futures::StreamExt;

use crate::client::{ClientError, Deadline, IsolationLevel, KafkaClient, OffsetSpec, ReadOptions};
use crate::records::{Batches, RecordsError, Scratch};

/// At most this many upstream offsets are read for proofs in one run (8 bytes each kept): a
/// history whose syncs are very far apart costs the rule's answer there, not the memory.
pub const PROOF_BUDGET_OFFSETS: i64 = 4_000_000;

/// What the proof reads did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProofReport {
    /// Partitions read.
    pub partitions: usize,
    /// Upstream offsets covered by the reads.
    pub offsets: i64,
    /// Data records found (read_committed).
    pub records: u64,
    /// Bytes of record batches fetched.
    pub bytes: u64,
    /// Ranges left unread because the budget was spent (their rows keep the rule's answer).
    pub over_budget: usize,
}

/// The committed data records' offsets of each partition, sorted, over the ranges asked.
pub type RecordOffsets = BTreeMap<(String, i32), Vec<i64>>;

/// Upstream offset ranges `[start, end)` to read, per (topic, partition).
pub type Ranges = BTreeMap<(String, i32), Vec<(i64, i64)>>;

/// Per topic: each partition's merged ranges.
type ByTopic = BTreeMap<String, Vec<(i32, Vec<(i64, i64)>)>>;

/// Reads, for each (topic, partition), the offsets of the data records a read_committed
/// consumer sees in `ranges` (`[start, end)`, any order, may overlap), clipped to the
/// partition's log start and last stable offset. Partitions are read `parallelism` at a time.
pub async fn read_record_offsets(
    client: &KafkaClient,
    ranges: Ranges,
    parallelism: usize,
    max_bytes: i32,
    deadline: Deadline,
) -> Result<(RecordOffsets, ProofReport), ClientError> {
    let mut report = ProofReport::default();
    let mut budget = PROOF_BUDGET_OFFSETS;
    let mut jobs = Vec::new();
    let mut by_topic = ByTopic::new();
    for ((topic, partition), wanted) in ranges {
        by_topic
            .entry(topic)
            .or_default()
            .push((partition, merge(wanted)));
    }
    for (topic, partitions) in by_topic {
        let info = match client.describe_topic(&topic, &deadline).await {
            Ok(info) => info,
            // A topic missing on the primary: nothing to prove; the plan refuses its rows.
            Err(ClientError::UnknownTopic { .. }) => continue,
            Err(e) => return Err(e),
        };
        let numbers: Vec<i32> = partitions.iter().map(|(p, _)| *p).collect();
        let isolation = IsolationLevel::ReadCommitted;
        let starts = client
            .list_offsets(&info, &numbers, OffsetSpec::Earliest, isolation, &deadline)
            .await?;
        let stable = client
            .list_offsets(&info, &numbers, OffsetSpec::Latest, isolation, &deadline)
            .await?;
        for (partition, merged) in partitions {
            let (Some(&low), Some(&high)) = (starts.get(&partition), stable.get(&partition)) else {
                continue;
            };
            for (start, end) in merged {
                let (start, end) = (start.max(low), end.min(high));
                if start >= end {
                    continue;
                }
                if end - start > budget {
                    report.over_budget += 1;
                    continue;
                }
                budget -= end - start;
                report.offsets += end - start;
                jobs.push((info.clone(), partition, start, end));
            }
        }
    }
    let options = ReadOptions {
        isolation: IsolationLevel::ReadCommitted,
        max_bytes,
        ..ReadOptions::default()
    };
    let mut reads = futures::stream::iter(jobs.into_iter().map(|(info, partition, start, end)| {
        let topic = info.name.clone();
        let stream = client.read_range(info, partition, start, end, options.clone(), deadline);
        async move {
            let found = offsets_in(stream, start, end).await;
            ((topic, partition), found)
        }
    }))
    .buffer_unordered(parallelism.max(1));
    let mut out = RecordOffsets::new();
    while let Some((key, found)) = reads.next().await {
        let (offsets, bytes) = found?;
        report.records += offsets.len() as u64;
        report.bytes += bytes;
        out.entry(key).or_default().extend(offsets);
    }
    report.partitions = out.len();
    for offsets in out.values_mut() {
        offsets.sort_unstable();
    }
    Ok((out, report))
}

/// Sorted, disjoint, non-empty ranges covering `ranges`.
fn merge(mut ranges: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    ranges.retain(|(s, e)| s < e);
    ranges.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
    for (s, e) in ranges {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// The data records' offsets in `[start, end)` of one range read, and the bytes fetched.
async fn offsets_in(
    mut stream: crate::client::PartitionStream,
    start: i64,
    end: i64,
) -> Result<(Vec<i64>, u64), ClientError> {
    let mut offsets = Vec::new();
    let mut bytes = 0u64;
    let mut scratch = Scratch::new();
    let records_error = |e: RecordsError| ClientError::Protocol {
        broker: "the primary".into(),
        request: "Fetch",
        problem: format!("a record batch cannot be read: {e}"),
    };
    while let Some(chunk) = stream.next_chunk().await {
        let chunk = chunk?;
        bytes += chunk.records.len() as u64;
        let mut filter = chunk.aborted_filter(IsolationLevel::ReadCommitted);
        for batch in Batches::new(&chunk.records) {
            let batch = batch.map_err(records_error)?;
            let verdict = filter.check(&batch, &mut scratch).map_err(records_error)?;
            if !verdict.is_deliver() || batch.next_offset() <= start || batch.base_offset() >= end {
                continue;
            }
            let header = batch.header();
            let span = header.last_offset() - header.base_offset + 1;
            // Offset deltas are distinct and within the span: as many records as offsets means
            // no holes (never compacted), and the header alone lists them, even compressed.
            if i64::from(header.record_count) == span {
                offsets.extend(
                    (header.base_offset..=header.last_offset())
                        .filter(|o| (start..end).contains(o)),
                );
                continue;
            }
            for record in batch.records(&mut scratch).map_err(records_error)? {
                let record = record.map_err(records_error)?;
                if (start..end).contains(&record.offset) {
                    offsets.push(record.offset);
                }
            }
        }
    }
    Ok((offsets, bytes))
}

#[cfg(test)]
mod tests {
    use super::merge;

    #[test]
    fn ranges_merge_into_disjoint_sorted_ones() {
        assert_eq!(
            merge(vec![(10, 20), (5, 8), (15, 30), (8, 9), (40, 40)]),
            [(5, 9), (10, 30)]
        );
        assert!(merge(vec![]).is_empty());
    }
}
