//! Coalesced Fetch: single-partition reads of one client that run at the same time share one
//! FetchRequest per leader ([`ReadOptions::coalesce`]).
//!
//! Why: record matching reads hundreds of short windows, each mostly one Fetch, a few
//! partitions at a time from one task. One request per window made the per-request cost (the
//! loopback send path, the response reader's and our task's wake-ups) a large share of its CPU;
//! a request that carries the windows of every partition in flight pays it once for all.
//!
//! How: [`KafkaClient::fetch`] with `coalesce` joins the open batch of its [`Key`] (leader,
//! lane, isolation level, `max_wait`, and whether every topic has an id, since a topic without
//! one forces Fetch v12 on the whole request). The first to join becomes the dispatcher: it
//! yields (twice: [`Yield`]), so the other futures its task polls meanwhile (a `buffer_unordered`, a
//! `join!`) can join too, then takes the batch out, sends one request holding every partition
//! (each with its own offset, `partition_max_bytes` and leader epoch) and hands each member the
//! answer for its partition through a oneshot, built exactly as a request of its own would
//! build it. Nothing is spawned: the dispatcher is one of the callers' own futures, so a batch
//! costs no task and no thread wake-up of its own.
//!
//! Bounds: a batch holds at most [`MAX_BATCH_PARTITIONS`] partitions, each topic-partition
//! once, and partition maxima summing to at most [`batch_cap`] (1 MiB, and half the largest
//! response the client accepts); a read that does not fit opens the next batch, and a read
//! larger than that goes alone. Every batch is
//! taken out of the table by its dispatcher (or its dispatcher's drop), so the table holds only
//! batches still being filled.
//!
//! Dropped futures (RangeRead cuts each Fetch at its deadline): a member that goes away leaves
//! a closed channel; it is left out of the request if it went before the send, and its answer
//! is dropped if after. A dispatcher that goes away drops its batch, and with it every member's
//! sender: the members see their channel closed and join again (a Fetch only reads, so asking
//! again is harmless), and one of them dispatches.
//!
//! Errors reach each member as its own: a partition's error code only its member, a top-level
//! code to each member naming its own partition, a connection or decoding failure to each as
//! [`ClientError::Shared`] (the same retry decision as the error itself), so each reader's own
//! Retrier decides as before. A hostile answer cannot confuse the members: a partition answered
//! twice keeps its first answer, one not asked for is ignored, and a member whose partition is
//! missing gets [`ClientError::Protocol`] "no answer for partition ...".

use std::time::Duration;

use kafka_protocol::messages::fetch_request::FetchTopic;
use tokio::sync::oneshot;

use super::cluster::{IsolationLevel, KafkaClient};
use super::coalescer::{Dispatch, Key, Member, REJOINS, batch_cap};
use super::error::ClientError;
use super::fetch::{
    FetchedChunk, ReadOptions, answers_for, chunk_of, fetch_partition, fetch_request, fetch_topic,
    fetch_version, leader_of, max_wait_ms, no_answer,
};
use super::metadata::SharedTopic;
use crate::responses::fetch::FetchResponse;

impl KafkaClient {
    /// [`fetch`](Self::fetch) in the batch of the other coalescing reads polled now.
    pub(super) async fn fetch_coalesced(
        &self,
        topic: &SharedTopic,
        partition: i32,
        offset: i64,
        options: &ReadOptions,
    ) -> Result<FetchedChunk, ClientError> {
        let info = leader_of(topic, partition)?;
        let key = Key {
            leader: info.leader,
            lane: options.lane,
            isolation: options.isolation.wire_value(),
            max_wait_ms: max_wait_ms(options.max_wait),
            ids: topic.has_topic_id(),
        };
        let cap = batch_cap(self.config().max_response_size);
        let coalescer = self.fetch_batches();
        for _ in 0..REJOINS {
            let (tx, rx) = oneshot::channel();
            let member = Member {
                topic: topic.clone(),
                partition,
                leader_epoch: info.leader_epoch,
                offset,
                max_bytes: options.max_bytes,
                tx,
            };
            if let Some(id) = coalescer.join(key, member, cap) {
                let dispatch = Dispatch {
                    coalescer,
                    key,
                    id,
                    taken: false,
                };
                // Let the other futures this task polls join the batch first.
                Yield(2).await;
                let members = dispatch.take();
                self.send_batch(key, members).await;
            }
            match rx.await {
                // Alone, the answer is what a request of its own gives.
                Ok((answer, false)) => return answer,
                Ok((Ok(chunk), true)) if needs_own_request(&chunk, offset) => break,
                Ok((answer, true)) => return answer,
                // The dispatcher went away with the batch: join again.
                Err(_) => continue,
            }
        }
        self.fetch_one(topic, partition, offset, options).await
    }

    /// Sends one request for `members` and answers each.
    async fn send_batch(&self, key: Key, members: Vec<Member>) {
        // A member whose caller went away needs no answer: leave it out.
        let members: Vec<Member> = members.into_iter().filter(|m| !m.tx.is_closed()).collect();
        if members.is_empty() {
            return;
        }
        let shared = members.len() > 1;
        let mut waiting: Vec<Option<Member>> = members.into_iter().map(Some).collect();
        let (response, broker) = match self.batch_request(key, &waiting).await {
            Ok(answered) => answered,
            Err(e) if !shared => {
                answer(&mut waiting[0], Err(e), false);
                return;
            }
            Err(e) => {
                let e = e.shared();
                for member in &mut waiting {
                    answer(member, Err(ClientError::Shared(e.clone())), true);
                }
                return;
            }
        };
        if response.error_code != 0 {
            for member in &mut waiting {
                if let Some(m) = member {
                    let resource = format!("{}-{}", m.topic.name, m.partition);
                    let e = ClientError::broker("Fetch", &resource, &broker, response.error_code);
                    answer(member, Err(e), shared);
                }
            }
            return;
        }
        for topic in response.responses {
            for partition in topic.partitions {
                // The first answer for a partition asked for; any other is ignored.
                let Some(slot) = waiting.iter_mut().find(|m| {
                    m.as_ref().is_some_and(|m| {
                        m.partition == partition.partition_index
                            && answers_for(&topic.topic, &m.topic)
                    })
                }) else {
                    continue;
                };
                let Some(m) = slot.as_ref() else { continue };
                let chunk = chunk_of(partition, &m.topic, m.offset, &broker);
                answer(slot, chunk, shared);
            }
        }
        for member in &mut waiting {
            if let Some(m) = member {
                let resource = format!("{}-{}", m.topic.name, m.partition);
                answer(member, Err(no_answer(&broker, &resource)), shared);
            }
        }
    }

    /// The request for the `members` of `key`, sent: the decoded response and the broker's
    /// address.
    async fn batch_request(
        &self,
        key: Key,
        members: &[Option<Member>],
    ) -> Result<(FetchResponse, String), ClientError> {
        let conn = self.broker_connection(key.leader, key.lane).await?;
        let version = fetch_version(&conn, key.ids)?;
        // One entry per topic, in the order the topics joined.
        let mut topics: Vec<(SharedTopic, Vec<_>)> = Vec::new();
        let mut max_bytes = 0i32;
        for m in members.iter().flatten() {
            let partition = fetch_partition(m.partition, m.leader_epoch, m.offset, m.max_bytes);
            max_bytes = max_bytes.saturating_add(m.max_bytes.max(0));
            match topics.iter_mut().find(|(t, _)| t.name == m.topic.name) {
                Some((_, partitions)) => partitions.push(partition),
                None => topics.push((m.topic.clone(), vec![partition])),
            }
        }
        let topics: Vec<FetchTopic> = topics
            .into_iter()
            .map(|(topic, partitions)| fetch_topic(&topic, partitions, version))
            .collect();
        let isolation = if key.isolation == IsolationLevel::ReadCommitted.wire_value() {
            IsolationLevel::ReadCommitted
        } else {
            IsolationLevel::ReadUncommitted
        };
        let max_wait = Duration::from_millis(u64::try_from(key.max_wait_ms).unwrap_or(0));
        let request = fetch_request(isolation, max_wait, max_bytes, topics);
        let body = conn.send(&request, version).await?;
        let response =
            FetchResponse::decode(body, version).map_err(|source| ClientError::Decode {
                broker: conn.address().to_string(),
                source,
            })?;
        Ok((response, conn.address().to_string()))
    }
}

/// Gives `member` its answer (if it still waits; a caller that went away is not told).
fn answer(member: &mut Option<Member>, result: Result<FetchedChunk, ClientError>, shared: bool) {
    if let Some(m) = member.take() {
        let _ = m.tx.send((result, shared));
    }
}

/// Whether a partition that shared a request must ask again alone: its answer is empty below
/// the high watermark. The broker may answer one batch past a partition's maximum only for the
/// first partition with data (KIP-74); a later one whose next batch is larger gets nothing,
/// and alone it would have got the batch.
fn needs_own_request(chunk: &FetchedChunk, offset: i64) -> bool {
    chunk.records.is_empty() && !chunk.malformed && offset < chunk.high_watermark
}

/// Returns `Pending` this many times, waking its task at once each time: the task polls the
/// futures woken before it first, and a second turn lets a `buffer_unordered` start the jobs
/// that replace finished ones. Not `tokio::task::yield_now`, whose wake-up is deferred until the
/// worker would park: on the binary's multi-threaded runtime that wake-up went through the
/// runtime's remote queue, a write to its eventfd for every batch.
struct Yield(u8);

impl std::future::Future for Yield {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 == 0 {
            return std::task::Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}
