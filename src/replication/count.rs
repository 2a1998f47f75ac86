//! Counting the primary's records not copied: from `copied_to` to the last stable offset with
//! the broker's read_committed answer (which still holds the aborted batches and lists the
//! aborted transactions, so each batch is told committed, aborted or a marker), then from the
//! last stable offset to the log end with read_uncommitted (the open transactions). Records
//! are counted one by one (a compacted log has fewer records than offsets); nothing is kept
//! but the counts and the smallest timestamp.

use crate::client::{Deadline, IsolationLevel, KafkaClient, ReadOptions, SharedTopic};
use crate::records::{BatchVerdict, Batches, Scratch};

/// The records of one range of the primary, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Counts {
    /// Committed data records (below the last stable offset, not in an aborted transaction).
    pub committed: u64,
    /// Records of aborted transactions.
    pub aborted: u64,
    /// Data records at or past the last stable offset.
    pub open: u64,
    /// The smallest timestamp among the committed records.
    pub oldest_committed: Option<i64>,
}

/// Counts the records of `source_topic`-`partition` in `[from, end)`, those at or past
/// `stable` (the last stable offset) as open.
pub(super) async fn count(
    primary: &KafkaClient,
    (source_topic, partition): (&str, i32),
    from: i64,
    (stable, end): (i64, i64),
    deadline: Deadline,
) -> Result<Counts, String> {
    let mut counts = Counts::default();
    if from >= end {
        return Ok(counts);
    }
    let topic = primary
        .describe_topic(source_topic, &deadline)
        .await
        .map_err(|e| e.to_string())?;
    let stable = stable.clamp(from, end);
    let read = Range {
        primary,
        topic,
        partition,
        deadline,
    };
    read.fold(from, stable, IsolationLevel::ReadCommitted, &mut counts)
        .await?;
    read.fold(stable, end, IsolationLevel::ReadUncommitted, &mut counts)
        .await?;
    Ok(counts)
}

struct Range<'a> {
    primary: &'a KafkaClient,
    topic: SharedTopic,
    partition: i32,
    deadline: Deadline,
}

impl Range<'_> {
    /// Adds the records of `[start, end)` to `counts`: with `ReadCommitted` as committed or
    /// aborted, with `ReadUncommitted` (past the last stable offset) as open.
    async fn fold(
        &self,
        start: i64,
        end: i64,
        isolation: IsolationLevel,
        counts: &mut Counts,
    ) -> Result<(), String> {
        if start >= end {
            return Ok(());
        }
        let name = || format!("{}-{}", self.topic.name, self.partition);
        let options = ReadOptions {
            isolation,
            ..ReadOptions::default()
        };
        let mut stream = self.primary.read_range(
            self.topic.clone(),
            self.partition,
            start,
            end,
            options,
            self.deadline,
        );
        let mut scratch = Scratch::new();
        while let Some(chunk) = stream.next_chunk().await {
            let chunk = chunk.map_err(|e| format!("{}: {e}", name()))?;
            let mut filter = chunk.aborted_filter(isolation);
            for batch in Batches::new(&chunk.records) {
                let batch = batch.map_err(|e| format!("{}: {e}", name()))?;
                let verdict = filter
                    .check(&batch, &mut scratch)
                    .map_err(|e| format!("{}: {e}", name()))?;
                if batch.header().base_offset >= end {
                    break;
                }
                if verdict == BatchVerdict::SkipControl {
                    continue;
                }
                for record in batch
                    .records(&mut scratch)
                    .map_err(|e| format!("{}: {e}", name()))?
                {
                    let record = record.map_err(|e| format!("{}: {e}", name()))?;
                    if record.offset < start {
                        continue;
                    }
                    if record.offset >= end {
                        break;
                    }
                    match (isolation, verdict) {
                        (IsolationLevel::ReadUncommitted, _) => counts.open += 1,
                        (_, BatchVerdict::SkipAborted) => counts.aborted += 1,
                        _ => {
                            counts.committed += 1;
                            counts.oldest_committed = Some(
                                counts
                                    .oldest_committed
                                    .map_or(record.timestamp, |t| t.min(record.timestamp)),
                            );
                        }
                    }
                }
            }
        }
        if stream.position() < end {
            return Err(format!(
                "{}: the read ended at offset {} before {end}",
                name(),
                stream.position()
            ));
        }
        Ok(())
    }
}
