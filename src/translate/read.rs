//! Running a planned read: one task per range, each folding its chunks into a [`RangeFold`].
//! For checkpoints `table::OffsetTable::from_parts` combines their outputs; for offset syncs
//! `syncs::SyncFold` does.

use std::sync::Arc;

use tokio::task::JoinSet;

use super::plan::ReadRange;
use super::progress::ReadProgress;
use super::report::SkipCounts;
use super::translator::{Accumulator, Part};
use crate::client::{ClientError, Deadline, KafkaClient, ReadOptions};
use crate::records::{Batch, Batches, RecordsError, Scratch};
use crate::select::GroupSelector;

/// What one range's worker does with the records of the data batches it owns.
pub(crate) trait RangeFold: Send {
    /// What the worker hands back.
    type Output: Send + 'static;
    /// Folds in one record of `partition`, borrowed from the fetch buffer.
    fn add_record(
        &mut self,
        partition: i32,
        offset: i64,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    );
    /// The output, the skip counts and the number of records seen.
    fn finish(self) -> (Self::Output, SkipCounts, u64);

    /// Folds in the records of one delivered data batch of `partition`, ignoring records below
    /// `min_offset` (a batch may straddle the log start).
    fn add_batch(
        &mut self,
        partition: i32,
        batch: &Batch<'_>,
        scratch: &mut Scratch,
        min_offset: i64,
    ) -> Result<(), RecordsError>
    where
        Self: Sized,
    {
        for record in batch.records(scratch)? {
            let record = record?;
            if record.offset >= min_offset {
                self.add_record(
                    partition,
                    record.offset,
                    record.timestamp,
                    record.key,
                    record.value,
                );
            }
        }
        Ok(())
    }
}

/// Starts one [`RangeFold`] per range; shared by all workers of a read.
pub(crate) trait FoldSpec: Send + Sync + 'static {
    /// The per-range fold, which may borrow from the spec.
    type Fold<'a>: RangeFold<Output = Self::Output>
    where
        Self: 'a;
    /// What each range produces.
    type Output: Send + 'static;
    /// A fresh fold for one range.
    fn start(&self) -> Self::Fold<'_>;
}

impl RangeFold for Accumulator<'_> {
    type Output = Part;
    fn add_record(
        &mut self,
        partition: i32,
        offset: i64,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) {
        self.add(partition, offset, timestamp, key, value);
    }
    fn finish(self) -> (Part, SkipCounts, u64) {
        self.into_part()
    }
}

impl FoldSpec for GroupSelector {
    type Fold<'a> = Accumulator<'a>;
    type Output = Part;
    fn start(&self) -> Accumulator<'_> {
        Accumulator::new(self)
    }
}

/// What one range's worker produced.
pub(crate) struct RangeOutcome<T> {
    pub(crate) range: ReadRange,
    pub(crate) folded: T,
    pub(crate) skipped: SkipCounts,
    pub(crate) records: u64,
    pub(crate) batches: u64,
    pub(crate) bytes: u64,
    /// The offset this range got to (>= range.end when complete).
    pub(crate) read_to: i64,
    /// Set when the deadline stopped it.
    pub(crate) timed_out: bool,
}

/// Why reading one partition of a checkpoints topic failed, other than running out of time (a
/// deadline ends the read with [`TranslateError::Incomplete`](super::TranslateError::Incomplete)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// A request to the partition's leader failed.
    #[error("reading {topic}-{partition} from offset {offset}: {source}")]
    Client {
        /// The checkpoints topic.
        topic: String,
        /// Its partition.
        partition: i32,
        /// The offset the failed fetch started at.
        offset: i64,
        /// What the client reported.
        source: ClientError,
    },
    /// A record batch in the partition could not be decoded.
    #[error("corrupt record batch in {topic}-{partition}: {source}")]
    Records {
        /// The checkpoints topic.
        topic: String,
        /// Its partition.
        partition: i32,
        /// What is wrong with the batch.
        source: crate::records::RecordsError,
    },
}

/// Reads every range with at most `parallelism` in flight.
pub(crate) async fn read_ranges<S: FoldSpec>(
    client: &KafkaClient,
    ranges: Vec<ReadRange>,
    spec: Arc<S>,
    options: ReadOptions,
    parallelism: usize,
    deadline: Deadline,
    progress: Option<Arc<ReadProgress>>,
) -> Result<Vec<RangeOutcome<S::Output>>, ReadError> {
    let mut pending = ranges.into_iter().enumerate();
    let mut running = JoinSet::new();
    let mut outcomes: Vec<(usize, RangeOutcome<S::Output>)> = Vec::new();
    let mut spawn_next = |running: &mut JoinSet<_>| {
        if let Some((index, range)) = pending.next() {
            let client = client.clone();
            let spec = spec.clone();
            let progress = progress.clone();
            let mut options = options.clone();
            // Spread workers over the pooled connections to each leader.
            options.lane = index;
            running.spawn(async move {
                (
                    index,
                    read_one(client, range, spec, options, deadline, progress).await,
                )
            });
        }
    };
    for _ in 0..parallelism.max(1) {
        spawn_next(&mut running);
    }
    while let Some(joined) = running.join_next().await {
        let (index, outcome) = joined.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        outcomes.push((index, outcome?));
        spawn_next(&mut running);
    }
    outcomes.sort_by_key(|(index, _)| *index);
    Ok(outcomes.into_iter().map(|(_, o)| o).collect())
}

async fn read_one<S: FoldSpec>(
    client: KafkaClient,
    range: ReadRange,
    spec: Arc<S>,
    options: ReadOptions,
    deadline: Deadline,
    progress: Option<Arc<ReadProgress>>,
) -> Result<RangeOutcome<S::Output>, ReadError> {
    let options_isolation = options.isolation;
    let mut stream = client.read_range(
        range.topic.clone(),
        range.partition,
        range.start,
        range.end,
        options,
        deadline,
    );
    let mut acc = spec.start();
    let mut scratch = Scratch::new();
    let mut batches = 0u64;
    let mut bytes = 0u64;
    let mut read_to = range.start;
    let mut timed_out = false;
    while let Some(chunk) = stream.next_chunk().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(ClientError::DeadlineExceeded { .. }) => {
                timed_out = true;
                break;
            }
            Err(source) => {
                return Err(ReadError::Client {
                    topic: range.topic.name.clone(),
                    partition: range.partition,
                    offset: read_to,
                    source,
                });
            }
        };
        bytes += chunk.records.len() as u64;
        let chunk_start = read_to;
        let mut filter = chunk.aborted_filter(options_isolation);
        let records_error = |source| ReadError::Records {
            topic: range.topic.name.clone(),
            partition: range.partition,
            source,
        };
        for batch in Batches::new(&chunk.records) {
            let batch = batch.map_err(records_error)?;
            // A batch belongs to the range holding its base offset. The partition's first range
            // also takes a batch that straddles the log start, dropping the records below it.
            if batch.base_offset() >= range.end {
                break;
            }
            // Every batch passes the filter, owned or not, so transaction markers are seen.
            let verdict = filter.check(&batch, &mut scratch).map_err(records_error)?;
            if batch.base_offset() < range.start && !range.first {
                continue;
            }
            batches += 1;
            read_to = read_to.max(batch.next_offset());
            if !verdict.is_deliver() {
                continue;
            }
            acc.add_batch(range.partition, &batch, &mut scratch, range.start)
                .map_err(records_error)?;
        }
        // Chunks end on batch boundaries, so the fetch position is also where we got to,
        // including past control batches and batches of aborted transactions.
        read_to = read_to.max(chunk.next_offset);
        if let Some(progress) = &progress {
            let covered = read_to.min(range.end) - chunk_start.min(range.end);
            progress.advance(covered.max(0) as u64, chunk.records.len() as u64);
        }
    }
    if !timed_out && read_to < range.end {
        // The stream ended early without an error only if it was cut by the deadline.
        timed_out = true;
    }
    let (folded, skipped, records) = acc.finish();
    Ok(RangeOutcome {
        range,
        folded,
        skipped,
        records,
        batches,
        bytes,
        read_to,
        timed_out,
    })
}
