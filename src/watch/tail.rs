//! One partition's tail: long-poll Fetch at the partition's position, forever, applying what
//! comes back to the shared state, and retrying failures with the client's one retry policy.

use std::sync::Arc;
use std::time::SystemTime;

use super::state::{Shared, State, Stream};
use crate::client::retry::Retrier;
use crate::client::{
    Action, ClientError, Deadline, IsolationLevel, KafkaClient, OffsetSpec, ReadOptions,
    SharedTopic,
};
use crate::mm2::heartbeat;
use crate::records::{Batches, Scratch};

pub(super) struct Tail {
    client: KafkaClient,
    shared: Arc<Shared>,
    /// Index in `State::partitions`.
    slot: usize,
    topic: SharedTopic,
    partition: i32,
    position: i64,
    options: ReadOptions,
    scratch: Scratch,
}

impl Tail {
    pub(super) fn new(
        client: KafkaClient,
        shared: Arc<Shared>,
        slot: usize,
        topic: SharedTopic,
        partition: i32,
        start: i64,
    ) -> Self {
        let options = ReadOptions {
            isolation: shared.options.isolation,
            max_bytes: shared.options.max_bytes_per_fetch,
            max_wait: shared.options.max_wait,
            // Each partition its own lane: a long poll held by the broker must not queue the
            // other partitions' fetches behind it on one connection.
            lane: slot,
            prefetch: 1,
            // Long polls: each partition waits on its own.
            coalesce: false,
        };
        Tail {
            client,
            shared,
            slot,
            topic,
            partition,
            position: start,
            options,
            scratch: Scratch::new(),
        }
    }

    pub(super) async fn run(mut self) {
        let mut stop = self.shared.stop.subscribe();
        // The watch never gives up: the deadline only bounds the backoff arithmetic. Errors the
        // policy calls final (authorization, a corrupt batch) are reported, then tried again
        // after a backoff, since an operator may fix them while the watch runs.
        let mut retrier = Retrier::new(Deadline::after(Deadline::LONGEST));
        loop {
            if *stop.borrow() {
                return;
            }
            let sent = SystemTime::now();
            let outcome = tokio::select! {
                outcome = self.client.fetch(&self.topic, self.partition, self.position, &self.options) => outcome,
                _ = stop.changed() => return,
            };
            let error = match outcome {
                Ok(chunk) => match self.apply(&chunk, sent) {
                    Ok(progressed) => {
                        // A good answer, even an idle poll's: the next failure starts its
                        // backoff afresh.
                        retrier.progressed();
                        if !progressed && !chunk.records.is_empty() {
                            // One batch larger than we asked for: ask for more next time, up to
                            // the largest response we accept.
                            let cap = i32::try_from(self.client.config().max_response_size)
                                .unwrap_or(i32::MAX);
                            self.options.max_bytes =
                                self.options.max_bytes.saturating_mul(2).min(cap);
                        }
                        continue;
                    }
                    Err(problem) => {
                        self.failed(problem);
                        tokio::select! {
                            _ = retrier.pause() => {}
                            _ = stop.changed() => return,
                        }
                        continue;
                    }
                },
                Err(error) => error,
            };
            if let ClientError::OffsetOutOfRange { .. } = error {
                // Retention or compaction cleanup moved the log start past us: start again
                // from the new log start. The records lost are older than those kept.
                self.failed(error.to_string());
                self.restart_from_log_start().await;
                continue;
            }
            self.failed(error.to_string());
            let operation = || {
                format!(
                    "tailing {}-{} at offset {}",
                    self.topic.name, self.partition, self.position
                )
            };
            let action = tokio::select! {
                action = retrier.after(error, operation) => action,
                _ = stop.changed() => return,
            };
            match action {
                Ok(Action::RefreshMetadata) => {
                    let deadline = Deadline::after(self.shared.options.live_window);
                    match self
                        .client
                        .describe_topic(&self.topic.name, &deadline)
                        .await
                    {
                        Ok(fresh) => self.topic = fresh,
                        Err(e) => self.failed(e.to_string()),
                    }
                }
                Ok(_) => {}
                Err(_) => {
                    tokio::select! {
                        _ = retrier.pause() => {}
                        _ = stop.changed() => return,
                    }
                }
            }
        }
    }

    async fn restart_from_log_start(&mut self) {
        let deadline = Deadline::after(self.shared.options.live_window);
        match self
            .client
            .list_offsets(
                &self.topic,
                &[self.partition],
                OffsetSpec::Earliest,
                self.shared.options.isolation,
                &deadline,
            )
            .await
        {
            Ok(starts) => {
                if let Some(&start) = starts.get(&self.partition) {
                    self.position = start;
                }
            }
            Err(e) => self.failed(e.to_string()),
        }
    }

    /// Records a failure: the partition is not live until its next good Fetch.
    fn failed(&self, problem: String) {
        tracing::debug!(topic = %self.topic.name, partition = self.partition, %problem, "tail read failed");
        let mut state = self.shared.lock();
        let part = &mut state.partitions[self.slot];
        part.failing = true;
        part.errors += 1;
        state.last_error = Some(problem);
        drop(state);
        self.shared.changed.send_replace(());
    }

    /// Applies one answer. Returns whether the position moved, or what is wrong with the bytes.
    fn apply(
        &mut self,
        chunk: &crate::client::FetchedChunk,
        sent: SystemTime,
    ) -> Result<bool, String> {
        let isolation = self.shared.options.isolation;
        let end = match isolation {
            IsolationLevel::ReadCommitted if chunk.last_stable_offset >= 0 => {
                chunk.last_stable_offset
            }
            _ => chunk.high_watermark,
        };
        let mut filter = chunk.aborted_filter(isolation);
        let shared = self.shared.clone();
        let mut state = shared.lock();
        let stream = state.partitions[self.slot].stream;
        let mut next = self.position;
        let bad = |e: crate::records::RecordsError| {
            format!(
                "corrupt record batch in {}-{}: {e}",
                self.topic.name, self.partition
            )
        };
        for batch in Batches::new(&chunk.records) {
            let batch = batch.map_err(bad)?;
            let verdict = filter.check(&batch, &mut self.scratch).map_err(bad)?;
            let batch_next = batch.next_offset();
            if verdict.is_deliver() {
                for record in batch.records(&mut self.scratch).map_err(bad)? {
                    let record = record.map_err(bad)?;
                    if record.offset < self.position {
                        continue; // a batch straddling our position: seen already
                    }
                    match stream {
                        Stream::Checkpoints(index) => {
                            let source = &mut state.sources[index];
                            source.records += 1;
                            source.map.apply(
                                self.partition,
                                record.offset,
                                record.timestamp,
                                record.key,
                                record.value,
                            );
                        }
                        Stream::Heartbeats => apply_heartbeat(&mut state, record.key, record.value),
                    }
                }
            }
            next = next.max(batch_next);
        }
        next = next.max(chunk.next_offset);
        let progressed = next > self.position;
        self.position = next;
        let now = SystemTime::now();
        let part = &mut state.partitions[self.slot];
        part.position = next;
        part.end = end;
        part.last_ok = Some(now);
        part.failing = false;
        if next >= end {
            // Everything written before this Fetch was sent is now applied.
            part.caught_up_at = Some(sent);
        }
        drop(state);
        shared.changed.send_replace(());
        Ok(progressed)
    }
}

fn apply_heartbeat(state: &mut State, key: Option<&[u8]>, value: Option<&[u8]>) {
    let decoded = key
        .and_then(|k| heartbeat::decode_key(k).ok())
        .zip(value.and_then(|v| heartbeat::decode_value(v).ok()));
    let Some((key, value)) = decoded else {
        state.other_heartbeat_records += 1;
        return;
    };
    match state
        .sources
        .iter_mut()
        .find(|s| s.alias.as_bytes() == key.source_cluster_alias)
    {
        Some(source) => {
            source.heartbeat_records += 1;
            source.last_heartbeat_ms = Some(
                source
                    .last_heartbeat_ms
                    .map_or(value.timestamp, |t| t.max(value.timestamp)),
            );
        }
        None => state.other_heartbeat_records += 1,
    }
}
