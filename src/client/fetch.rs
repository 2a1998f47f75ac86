//! Reading a partition's offset range: pipelined Fetch requests whose record bytes stay one
//! zero-copy [`Bytes`](bytes::Bytes) slice of the response.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, TopicName,
    fetch_request::{FetchPartition, FetchTopic},
};
use kafka_protocol::protocol::StrBytes;
use tokio::sync::mpsc;

use super::cluster::{IsolationLevel, KafkaClient};
use super::code::Action;
use super::deadline::Deadline;
use super::error::ClientError;
use super::metadata::{PartitionInfo, SharedTopic};
use super::retry::Retrier;
use crate::records::AbortedFilter;
use crate::responses::{self, fetch::FetchResponse, fetch::TopicRef};

/// Fetch v13 replaced topic names with topic ids (KIP-516).
const FIRST_FETCH_VERSION_WITH_TOPIC_IDS: i16 = 13;

pub use crate::responses::fetch::AbortedTransaction;

pub use super::chunk::FetchedChunk;

/// The default bound on one Fetch's bytes per partition: 1 MiB, Java's
/// `max.partition.fetch.bytes` default. Larger fetches buy nothing over a pipelined read (a 1 M
/// record topic reads as fast with 1 MiB as with 8 MiB over loopback) and cost memory: every
/// prefetched chunk is held whole, so 8 MiB put a one-group translation at 42 MiB of RSS where
/// 1 MiB needs 11 MiB.
pub const DEFAULT_FETCH_MAX_BYTES: i32 = 1024 * 1024;

/// How to read a range.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Which records are visible.
    pub isolation: IsolationLevel,
    /// Upper bound on the bytes one Fetch may return for the partition (`max.partition.fetch.bytes`).
    /// The broker still returns one whole batch when a single batch is larger (KIP-74).
    pub max_bytes: i32,
    /// How long the broker may hold a Fetch waiting for data. Ranges end at or below the high
    /// watermark, so the broker rarely waits at all.
    pub max_wait: Duration,
    /// Which pooled connection to the leader to use; give parallel readers different lanes.
    pub lane: usize,
    /// Chunks fetched ahead of the consumer, so decoding overlaps the network.
    pub prefetch: usize,
    /// Let [`KafkaClient::fetch`] share one FetchRequest with the other coalescing fetches of
    /// this client that are polled at the same time (by one task: a `buffer_unordered`, a
    /// `join!`) and go to the same leader on the same lane with the same isolation level and
    /// `max_wait`. Each partition keeps its own offset and `max_bytes` and gets the answer a
    /// request of its own would give; the request saves the per-request cost (a round trip,
    /// the system calls and wake-ups on both ends) for readers of many small ranges. Costs one
    /// `yield` per request, so off by default.
    pub coalesce: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            isolation: IsolationLevel::ReadUncommitted,
            max_bytes: DEFAULT_FETCH_MAX_BYTES,
            max_wait: Duration::from_millis(500),
            lane: 0,
            prefetch: 2,
            coalesce: false,
        }
    }
}

impl FetchedChunk {
    /// The filter that decides which of this chunk's batches a reader at `isolation` sees: under
    /// read_committed it drops the aborted transactions this response lists, as the Java
    /// consumer does per fetch response.
    pub fn aborted_filter(&self, isolation: IsolationLevel) -> AbortedFilter {
        match isolation {
            IsolationLevel::ReadCommitted => AbortedFilter::read_committed(
                self.aborted_transactions
                    .iter()
                    .map(|a| (a.producer_id, a.first_offset)),
            ),
            IsolationLevel::ReadUncommitted => AbortedFilter::read_uncommitted(),
        }
    }
}

impl KafkaClient {
    /// One Fetch for one partition at `offset`, from its leader. With
    /// [`ReadOptions::coalesce`], the partition may share one FetchRequest with other reads of
    /// this client polled at the same time (see [`ReadOptions::coalesce`]); the answer is the
    /// same either way.
    pub async fn fetch(
        &self,
        topic: &SharedTopic,
        partition: i32,
        offset: i64,
        options: &ReadOptions,
    ) -> Result<FetchedChunk, ClientError> {
        if options.coalesce {
            self.fetch_coalesced(topic, partition, offset, options)
                .await
        } else {
            self.fetch_one(topic, partition, offset, options).await
        }
    }

    /// [`fetch`](Self::fetch) in a request of its own.
    pub(super) async fn fetch_one(
        &self,
        topic: &SharedTopic,
        partition: i32,
        offset: i64,
        options: &ReadOptions,
    ) -> Result<FetchedChunk, ClientError> {
        let info = leader_of(topic, partition)?;
        let conn = self.broker_connection(info.leader, options.lane).await?;
        let version = fetch_version(&conn, topic.has_topic_id())?;
        let fetch_topic = fetch_topic(
            topic,
            vec![fetch_partition(
                partition,
                info.leader_epoch,
                offset,
                options.max_bytes,
            )],
            version,
        );
        let request = fetch_request(
            options.isolation,
            options.max_wait,
            options.max_bytes,
            vec![fetch_topic],
        );
        let body = conn.send(&request, version).await?;
        let response =
            FetchResponse::decode(body, version).map_err(|source| ClientError::Decode {
                broker: conn.address().to_string(),
                source,
            })?;
        let resource = format!("{}-{}", topic.name, partition);
        if response.error_code != 0 {
            return Err(ClientError::broker(
                "Fetch",
                &resource,
                conn.address(),
                response.error_code,
            ));
        }
        let answer = response
            .responses
            .into_iter()
            .filter(|t| answers_for(&t.topic, topic))
            .flat_map(|t| t.partitions.into_iter())
            .find(|p| p.partition_index == partition)
            .ok_or_else(|| no_answer(conn.address(), &resource))?;
        chunk_of(answer, topic, offset, conn.address())
    }

    /// Streams the record batches of `partition` from `start` until the read position reaches
    /// `end` (exclusive), one [`FetchedChunk`] per Fetch. A background task keeps up to
    /// `options.prefetch` chunks ahead of the consumer. Leader changes and transient errors are
    /// retried (refreshing metadata) until `deadline`; other errors end the stream with that
    /// error.
    ///
    /// Batches are whole, so the last chunk may hold records at or past `end`; callers filter by
    /// offset. [`PartitionStream::position`] tells how far the read got, for reporting
    /// incomplete reads.
    pub fn read_range(
        &self,
        topic: SharedTopic,
        partition: i32,
        start: i64,
        end: i64,
        options: ReadOptions,
        deadline: Deadline,
    ) -> PartitionStream {
        let (tx, rx) = mpsc::channel(options.prefetch.max(1));
        let position = Arc::new(std::sync::atomic::AtomicI64::new(start));
        let mut reader = self.read_range_here(topic, partition, start, end, options, deadline);
        let task_position = position.clone();
        let task = tokio::spawn(async move {
            while let Some(chunk) = reader.next_chunk().await {
                task_position.store(reader.position(), std::sync::atomic::Ordering::Relaxed);
                if tx.send(chunk).await.is_err() {
                    return; // the consumer went away
                }
            }
        });
        PartitionStream {
            rx,
            position,
            _task: AbortOnDrop(task),
        }
    }

    /// [`KafkaClient::read_range`] without the background task: each
    /// [`RangeRead::next_chunk`] sends the next Fetch from the caller's own task, so nothing
    /// is read ahead. For a caller that reads many short ranges concurrently (record matching:
    /// a window is mostly one Fetch), where a task and a channel per range cost more than the
    /// read-ahead gains: every chunk handed across them woke another thread.
    pub(crate) fn read_range_here(
        &self,
        topic: SharedTopic,
        partition: i32,
        start: i64,
        end: i64,
        options: ReadOptions,
        deadline: Deadline,
    ) -> RangeRead {
        RangeRead::new(
            self.clone(),
            topic,
            partition,
            start,
            end,
            options,
            deadline,
        )
    }
}

/// One partition range read Fetch by Fetch, by whoever polls it ([`KafkaClient::read_range`]
/// polls it in a task of its own).
pub(crate) struct RangeRead {
    client: KafkaClient,
    topic: SharedTopic,
    partition: i32,
    position: i64,
    end: i64,
    options: ReadOptions,
    deadline: Deadline,
    retrier: Retrier,
    /// An error or a malformed batch was delivered: nothing more can be read.
    done: bool,
}

impl RangeRead {
    fn new(
        client: KafkaClient,
        topic: SharedTopic,
        partition: i32,
        start: i64,
        end: i64,
        options: ReadOptions,
        deadline: Deadline,
    ) -> Self {
        RangeRead {
            client,
            topic,
            partition,
            position: start,
            end,
            options,
            deadline,
            retrier: Retrier::new(deadline),
            done: false,
        }
    }

    /// The offset up to which chunks have been fetched so far.
    pub(crate) fn position(&self) -> i64 {
        self.position
    }

    /// The next chunk; `None` once the range has been read, or after an error or a malformed
    /// chunk was returned. Leader changes and transient errors are retried (refreshing
    /// metadata) until the deadline.
    pub(crate) async fn next_chunk(&mut self) -> Option<Result<FetchedChunk, ClientError>> {
        while !self.done && self.position < self.end {
            // Each Fetch is also cut at the deadline, so a stalled broker cannot hold the read
            // past it (the connection's own request timeout may be longer).
            let attempt = tokio::time::timeout_at(
                self.deadline.instant(),
                self.client
                    .fetch(&self.topic, self.partition, self.position, &self.options),
            )
            .await;
            let outcome = attempt.unwrap_or_else(|_| Err(self.retrier.expired(self.operation())));
            match outcome {
                Ok(chunk) if chunk.next_offset > self.position || chunk.malformed => {
                    self.retrier.progressed();
                    self.position = self.position.max(chunk.next_offset);
                    // The consumer finds the malformed batch at the chunk's end and fails there;
                    // asking again would only get the same bytes until the deadline.
                    self.done = chunk.malformed;
                    return Some(Ok(chunk));
                }
                Ok(chunk) => {
                    // No complete batch. With records present, a single batch is larger than
                    // the broker was willing to send (some brokers cap responses): ask for more,
                    // up to the largest response we accept. An empty answer below the end is
                    // transient (e.g. a leader catching up): wait and ask again.
                    if !chunk.records.is_empty() {
                        let cap = i32::try_from(self.client.config().max_response_size)
                            .unwrap_or(i32::MAX);
                        self.options.max_bytes = self.options.max_bytes.saturating_mul(2).min(cap);
                    }
                    if !self.retrier.pause().await {
                        let operation = format!(
                            "{} (stuck below end {}, high watermark {})",
                            self.operation(),
                            self.end,
                            chunk.high_watermark
                        );
                        return self.fail(ClientError::deadline(operation, &self.deadline, None));
                    }
                }
                Err(e) => match self
                    .retrier
                    .after(e, || {
                        reading(&self.topic.name, self.partition, self.position)
                    })
                    .await
                {
                    Err(e) => return self.fail(e),
                    Ok(Action::RefreshMetadata) => {
                        match self
                            .client
                            .describe_topic(&self.topic.name, &self.deadline)
                            .await
                        {
                            Ok(fresh) => self.topic = fresh,
                            // Out of time while re-reading the leaders: what failed is still
                            // this partition's read, and the last broker answer says why.
                            Err(ClientError::DeadlineExceeded { .. }) => {
                                let e = self.retrier.expired(self.operation());
                                return self.fail(e);
                            }
                            Err(e) => return self.fail(e),
                        }
                    }
                    Ok(_) => {}
                },
            }
        }
        None
    }

    fn fail(&mut self, e: ClientError) -> Option<Result<FetchedChunk, ClientError>> {
        self.done = true;
        Some(Err(e))
    }

    /// What this reader is doing, for errors: the topic-partition and offset.
    fn operation(&self) -> String {
        reading(&self.topic.name, self.partition, self.position)
    }
}

/// The partition's leader as `topic` knows it, or why it cannot be read.
pub(super) fn leader_of(topic: &SharedTopic, partition: i32) -> Result<PartitionInfo, ClientError> {
    let info = topic
        .partition(partition)
        .ok_or_else(|| ClientError::UnknownPartition {
            topic: topic.name.clone(),
            partition,
        })?;
    if info.leader < 0 {
        return Err(ClientError::NoLeader {
            topic: topic.name.clone(),
            partition,
            leader: info.leader,
        });
    }
    Ok(*info)
}

/// The Fetch version to send on `conn`: the highest both sides speak, but at most v12 when a
/// topic of the request has no id (v13+ names topics by id only).
pub(super) fn fetch_version(
    conn: &crate::wire::BrokerConnection,
    all_have_ids: bool,
) -> Result<i16, ClientError> {
    let version = conn.negotiate(ApiKey::Fetch, responses::FETCH_VERSIONS)?;
    if version >= FIRST_FETCH_VERSION_WITH_TOPIC_IDS && !all_have_ids {
        // Without an id from Metadata we must name the topic, which v12 still allows.
        return Ok(FIRST_FETCH_VERSION_WITH_TOPIC_IDS - 1);
    }
    Ok(version)
}

/// One partition of a FetchRequest.
pub(super) fn fetch_partition(
    partition: i32,
    leader_epoch: i32,
    offset: i64,
    max_bytes: i32,
) -> FetchPartition {
    FetchPartition::default()
        .with_partition(partition)
        .with_current_leader_epoch(leader_epoch)
        .with_fetch_offset(offset)
        .with_log_start_offset(-1)
        .with_partition_max_bytes(max_bytes)
}

/// One topic of a FetchRequest at `version`: by id from v13, by name before.
pub(super) fn fetch_topic(
    topic: &SharedTopic,
    partitions: Vec<FetchPartition>,
    version: i16,
) -> FetchTopic {
    let fetch_topic = FetchTopic::default().with_partitions(partitions);
    if version >= FIRST_FETCH_VERSION_WITH_TOPIC_IDS {
        fetch_topic.with_topic_id(uuid::Uuid::from_bytes(topic.topic_id))
    } else {
        fetch_topic.with_topic(TopicName(StrBytes::from_string(topic.name.clone())))
    }
}

/// A consumer's full Fetch of `topics`.
pub(super) fn fetch_request(
    isolation: IsolationLevel,
    max_wait: Duration,
    max_bytes: i32,
    topics: Vec<FetchTopic>,
) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(max_wait_ms(max_wait))
        .with_min_bytes(1)
        .with_max_bytes(max_bytes)
        .with_isolation_level(isolation.wire_value())
        // Session id 0 with epoch -1: a full fetch outside any fetch session (KIP-227).
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(topics)
}

/// `max_wait` as the request's `max_wait_ms`.
pub(super) fn max_wait_ms(max_wait: Duration) -> i32 {
    max_wait.as_millis().min(i32::MAX as u128) as i32
}

/// Whether a response topic is `topic`.
pub(super) fn answers_for(answer: &TopicRef, topic: &SharedTopic) -> bool {
    match answer {
        TopicRef::Id(id) => *id == topic.topic_id,
        TopicRef::Name(name) => *name == topic.name,
    }
}

/// The error of a partition the response does not answer.
pub(super) fn no_answer(broker: &str, resource: &str) -> ClientError {
    ClientError::Protocol {
        broker: broker.to_string(),
        request: "Fetch",
        problem: format!("no answer for partition {resource}"),
    }
}

/// One partition's answer as the reader's chunk, or its error: OFFSET_OUT_OF_RANGE as
/// [`ClientError::OffsetOutOfRange`], any other code as [`ClientError::Broker`].
pub(super) fn chunk_of(
    answer: crate::responses::fetch::FetchPartition,
    topic: &SharedTopic,
    offset: i64,
    broker: &str,
) -> Result<FetchedChunk, ClientError> {
    let partition = answer.partition_index;
    match answer.error_code {
        0 => {}
        1 => {
            return Err(ClientError::OffsetOutOfRange {
                topic: topic.name.clone(),
                partition,
                offset,
            });
        }
        code => {
            let resource = format!("{}-{}", topic.name, partition);
            return Err(ClientError::broker("Fetch", &resource, broker, code));
        }
    }
    // The records layer's framing rule, the one its reader walks by.
    let framed = crate::records::whole_batches(&answer.records);
    Ok(FetchedChunk {
        partition,
        fetch_offset: offset,
        next_offset: framed.next_offset.unwrap_or(offset),
        malformed: framed.malformed,
        records: answer.records.slice(..framed.bytes),
        high_watermark: answer.high_watermark,
        last_stable_offset: answer.last_stable_offset,
        log_start_offset: answer.log_start_offset,
        aborted_transactions: answer.aborted_transactions,
    })
}

fn reading(topic: &str, partition: i32, offset: i64) -> String {
    format!("reading {topic}-{partition} at offset {offset}")
}

/// The chunks of one partition range, in offset order. Dropping it stops the background reader.
pub struct PartitionStream {
    rx: mpsc::Receiver<Result<FetchedChunk, ClientError>>,
    position: Arc<std::sync::atomic::AtomicI64>,
    _task: AbortOnDrop,
}

impl PartitionStream {
    /// The offset up to which chunks have been fetched so far.
    pub fn position(&self) -> i64 {
        self.position.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The next chunk; `None` once the range has been read (or after an error was returned).
    pub async fn next_chunk(&mut self) -> Option<Result<FetchedChunk, ClientError>> {
        self.rx.recv().await
    }
}

impl futures::Stream for PartitionStream {
    type Item = Result<FetchedChunk, ClientError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use crate::records::whole_batches;

    fn batch_header(base: i64, length: i32, magic: u8, last_delta: i32) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&base.to_be_bytes());
        v.extend_from_slice(&length.to_be_bytes());
        v.extend_from_slice(&0i32.to_be_bytes()); // leader epoch
        v.push(magic);
        v.extend_from_slice(&0u32.to_be_bytes()); // crc
        v.extend_from_slice(&0i16.to_be_bytes()); // attributes
        v.extend_from_slice(&last_delta.to_be_bytes());
        v.resize(12 + length as usize, 0);
        v
    }

    fn framed(records: &[u8]) -> (usize, Option<i64>, bool) {
        let f = whole_batches(records);
        (f.bytes, f.next_offset, f.malformed)
    }

    #[test]
    fn framing_stops_at_a_cut_batch() {
        let mut records = batch_header(100, 49, 2, 4);
        records.extend(batch_header(105, 49, 2, 9));
        let whole = records.len();
        assert_eq!(framed(&records), (whole, Some(115), false));
        for cut in 1..61 {
            assert_eq!(
                framed(&records[..whole - cut]),
                (61, Some(105), false),
                "cut {cut}"
            );
        }
        assert_eq!(framed(&records[..60]), (0, None, false));
        assert_eq!(framed(&[]), (0, None, false));
    }

    #[test]
    fn a_malformed_batch_is_kept_for_the_reader_to_report() {
        // A bad length or magic can never frame: the bytes from it on go to the reader (whose
        // Batches names the problem) instead of being dropped like a cut batch and fetched
        // again until the deadline.
        let good = batch_header(0, 49, 2, 0);
        for (at, bytes) in [
            (8, (-5i32).to_be_bytes().to_vec()),
            (8, 1i32.to_be_bytes().to_vec()),
            (16, vec![1u8]),
            (16, vec![7u8]),
        ] {
            let mut bad = good.clone();
            bad[at..at + bytes.len()].copy_from_slice(&bytes);
            assert_eq!(framed(&bad), (bad.len(), None, true), "{at} {bytes:?}");
            let mut after_good = good.clone();
            after_good.extend(&bad);
            assert_eq!(framed(&after_good), (after_good.len(), Some(1), true));
            let error = crate::records::Batches::new(&after_good)
                .check_crc(false)
                .nth(1)
                .unwrap();
            assert!(error.is_err(), "the reader reports it: {error:?}");
        }
    }
}
