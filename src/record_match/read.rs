//! Reading one side of a partition for matching: the planned offset ranges, in order, as
//! contents and digests, within a byte budget. The upstream is read with the broker's read_committed
//! answer, which still holds the aborted records (the client filters them) and lists the
//! aborted transactions: every record is kept, marked committed or not.

use super::side::{Side, SideBuilder};
use crate::client::{Deadline, IsolationLevel, KafkaClient, ReadOptions, SharedTopic};
use crate::records::{BatchVerdict, Batches, Scratch, TimestampType};

/// Smallest and largest Fetch for a window: a window is a few hundred records, so a 1 MiB
/// Fetch would mostly bring records past its end.
const MIN_FETCH: i64 = 16 * 1024;

/// A record batch's size until the read has seen some: 16 KiB, the Java producer's (and so
/// MirrorMaker 2's) default `batch.size`.
const FIRST_BATCH_GUESS: f64 = 16.0 * 1024.0;

/// How one side is read.
pub(crate) struct SideRead<'a> {
    pub(crate) client: &'a KafkaClient,
    pub(crate) topic: SharedTopic,
    pub(crate) partition: i32,
    pub(crate) isolation: IsolationLevel,
    /// Largest Fetch, in bytes.
    pub(crate) max_fetch: i32,
    /// Record bytes this side may fetch in all.
    pub(crate) budget: u64,
    pub(crate) deadline: Deadline,
}

/// Why reading a side stopped early; what was read stays usable as far as it got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stopped {
    Budget,
    Failed(String),
}

impl Stopped {
    /// What a partition's rows say: `reason` (the rows' `budget` or `not-read`), and for a
    /// failure what failed (a corrupt batch, a broken connection...), so that the terminal
    /// names it.
    pub(crate) fn describe(&self, reason: &str) -> String {
        match self {
            Stopped::Budget => reason.to_string(),
            Stopped::Failed(why) => format!("{reason}: {why}"),
        }
    }
}

impl SideRead<'_> {
    /// Reads `ranges` (sorted, disjoint) in order.
    pub(crate) async fn read(&self, ranges: &[(i64, i64)]) -> (Side, Option<Stopped>) {
        let mut builder = SideBuilder::default();
        let mut scratch = Scratch::new();
        // Bytes per offset and per batch, learned from what was read; 1 KiB and 16 KiB until
        // then.
        let mut density = 1024.0f64;
        let mut batch_size = FIRST_BATCH_GUESS;
        let (mut bytes, mut offsets, mut batches) = (0u64, 0i64, 0u64);
        for &(start, end) in ranges {
            let expected = ((end - start) as f64 * density) as i64;
            // The whole window in one Fetch: a Fetch of half the window (as before) took two or
            // three round trips a window and cost a quarter of the hot benchmark's time
            // (BENCHMARKS.md, --match-records). The broker answers from the start of the batch
            // holding `start` and only with whole batches, so the window's bytes come with up to
            // a batch before it and the rest of the batch holding its last offset: two batches of
            // headroom, and an eighth for records larger than the estimate. With an eighth alone
            // the hot benchmark's upstream windows (120 records from inside a 15-record batch)
            // missed their last batch and took a second Fetch each. A guess too small costs one
            // more Fetch, never a wrong answer: the loop reads on to `end`.
            let headroom = (2.0 * batch_size) as i64;
            let max_bytes = (expected + expected / 8 + headroom)
                .clamp(MIN_FETCH, i64::from(self.max_fetch).max(MIN_FETCH))
                .min(i64::from(i32::MAX)) as i32;
            let options = ReadOptions {
                isolation: self.isolation,
                max_bytes,
                // The partitions matched at once read from this one task: their windows share
                // a Fetch per broker instead of a request each, whose per-request cost (system
                // calls, wake-ups) was a large share of the hot benchmark's CPU.
                coalesce: true,
                ..ReadOptions::default()
            };
            builder.start(start);
            // Read from this task: a window is mostly one Fetch, so a reader task of its own
            // (read-ahead) bought nothing and handed every chunk across threads.
            let mut stream = self.client.read_range_here(
                self.topic.clone(),
                self.partition,
                start,
                end,
                options,
                self.deadline,
            );
            let mut stopped = None;
            while let Some(chunk) = stream.next_chunk().await {
                let chunk = match chunk {
                    Ok(chunk) => chunk,
                    Err(e) => {
                        stopped = Some(Stopped::Failed(e.to_string()));
                        break;
                    }
                };
                bytes += chunk.records.len() as u64;
                offsets += chunk.next_offset - chunk.fetch_offset;
                match self.fold_chunk(&mut builder, &chunk, end, &mut scratch) {
                    Ok(seen) => batches += seen,
                    Err(e) => {
                        stopped = Some(Stopped::Failed(e));
                        break;
                    }
                }
                if bytes > self.budget {
                    stopped = Some(Stopped::Budget);
                    break;
                }
            }
            if offsets > 0 {
                density = bytes as f64 / offsets as f64;
            }
            if batches > 0 {
                batch_size = bytes as f64 / batches as f64;
            }
            match stopped {
                None if builder.position().is_some_and(|at| at >= end)
                    || stream.position() >= end =>
                {
                    builder.finish_interval(end)
                }
                None => {
                    builder.abandon_interval();
                    return (
                        builder.finish(),
                        Some(Stopped::Failed("the read ended early".into())),
                    );
                }
                Some(why) => {
                    builder.abandon_interval();
                    return (builder.finish(), Some(why));
                }
            }
        }
        (builder.finish(), None)
    }

    /// Feeds `chunk`'s records below `end` to `builder`; the batches the chunk held.
    fn fold_chunk(
        &self,
        builder: &mut SideBuilder,
        chunk: &crate::client::FetchedChunk,
        end: i64,
        scratch: &mut Scratch,
    ) -> Result<u64, String> {
        let name = || format!("{}-{}", self.topic.name, self.partition);
        builder.chunk(&chunk.records);
        let mut filter = chunk.aborted_filter(self.isolation);
        let mut batches = 0;
        for batch in Batches::new(&chunk.records) {
            let batch = batch.map_err(|e| format!("{}: {e}", name()))?;
            batches += 1;
            let verdict = filter
                .check(&batch, scratch)
                .map_err(|e| format!("{}: {e}", name()))?;
            let header = *batch.header();
            builder.saw_batch(
                header.timestamp_type() == TimestampType::LogAppendTime,
                batch.as_bytes().len(),
            );
            if header.base_offset >= end {
                break;
            }
            if verdict == BatchVerdict::SkipControl {
                builder.marker(header.base_offset, header.last_offset().min(end - 1));
                continue;
            }
            let committed = verdict != BatchVerdict::SkipAborted;
            for record in batch
                .records(scratch)
                .map_err(|e| format!("{}: {e}", name()))?
            {
                let record = record.map_err(|e| format!("{}: {e}", name()))?;
                if record.offset >= end {
                    break;
                }
                builder.read_record(&record, committed);
            }
        }
        Ok(batches)
    }
}
