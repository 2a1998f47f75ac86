//! Running a planned read: one task per range, each folding its chunks into an accumulator.
//! `table::OffsetTable::build` combines their outputs.

use std::sync::Arc;

use tokio::task::JoinSet;

use super::groups::GroupSelector;
use super::plan::ReadRange;
use super::progress::ReadProgress;
use super::report::SkipCounts;
use super::translator::{Accumulator, Folded};
use crate::client::{ClientError, Deadline, KafkaClient, ReadOptions};
use crate::records::{Batches, Scratch};

/// What one range's worker produced.
pub(crate) struct RangeOutcome {
    pub(crate) range: ReadRange,
    pub(crate) folded: Folded,
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
pub(crate) async fn read_ranges(
    client: &KafkaClient,
    ranges: Vec<ReadRange>,
    selector: Arc<GroupSelector>,
    options: ReadOptions,
    parallelism: usize,
    deadline: Deadline,
    progress: Option<Arc<ReadProgress>>,
) -> Result<Vec<RangeOutcome>, ReadError> {
    let mut pending = ranges.into_iter().enumerate();
    let mut running = JoinSet::new();
    let mut outcomes: Vec<(usize, RangeOutcome)> = Vec::new();
    let mut spawn_next = |running: &mut JoinSet<_>| {
        if let Some((index, range)) = pending.next() {
            let client = client.clone();
            let selector = selector.clone();
            let progress = progress.clone();
            let mut options = options.clone();
            // Spread workers over the pooled connections to each leader.
            options.lane = index;
            running.spawn(async move {
                (
                    index,
                    read_one(client, range, selector, options, deadline, progress).await,
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

async fn read_one(
    client: KafkaClient,
    range: ReadRange,
    selector: Arc<GroupSelector>,
    options: ReadOptions,
    deadline: Deadline,
    progress: Option<Arc<ReadProgress>>,
) -> Result<RangeOutcome, ReadError> {
    let options_isolation = options.isolation;
    let mut stream = client.read_range(
        range.topic.clone(),
        range.partition,
        range.start,
        range.end,
        options,
        deadline,
    );
    let mut acc = Accumulator::new(&selector);
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
    let (folded, skipped, records) = acc.into_folded();
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
