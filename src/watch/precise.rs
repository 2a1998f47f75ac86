//! [`SyncsWatcher`]: the offset-sync history kept live while the source cluster is up, and
//! written down so that precise translation survives losing it.
//!
//! [`SyncsWatcher::start`] reads the offset-syncs topic from its log start and then tails it
//! (long-poll Fetch, one task per partition, the client's retry policy, never giving up). It
//! answers with the current [`SyncIndex`] and, every `snapshot_interval` when the history
//! changed, writes a [`SyncSnapshot`] atomically to `snapshot_path` (a temporary file renamed
//! over the old one): after a disaster, a precise translation from
//! [`Syncs::Snapshot`](crate::precise::Syncs::Snapshot) uses the last one written. A snapshot is written only once every partition has been read to its end
//! at least once, so a snapshot never holds half a history.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::client::retry::Retrier;
use crate::client::{
    Action, ClientError, Deadline, IsolationLevel, KafkaClient, OffsetSpec, ReadOptions,
    SharedTopic,
};
use crate::mm2::offset_sync;
use crate::mm2::sync_index::{Interpolation, SyncIndex, SyncIndexBuilder};
use crate::precise::SyncSnapshot;
use crate::records::{Batches, Scratch};

/// How to keep the history.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SyncsWatchOptions {
    /// The cluster holding the offset-syncs topic.
    pub client: KafkaClient,
    /// The offset-syncs topic.
    pub topic: String,
    /// Where to write the snapshot (`None`: keep it in memory only).
    pub snapshot_path: Option<PathBuf>,
    /// How often to write it when the history changed.
    pub snapshot_interval: Duration,
    /// How long the broker may hold an idle Fetch.
    pub max_wait: Duration,
    /// Budget to find the topic and its partitions at start.
    pub start_timeout: Duration,
}

impl SyncsWatchOptions {
    /// Follow `topic` on the cluster `client` reaches, with the snapshot in memory only
    /// (set `snapshot_path` to write it), written every 10 s when the history changed, idle
    /// Fetches held up to 1 s, and 30 s to find the topic at start.
    pub fn new(client: KafkaClient, topic: impl Into<String>) -> Self {
        SyncsWatchOptions {
            client,
            topic: topic.into(),
            snapshot_path: None,
            snapshot_interval: Duration::from_secs(10),
            max_wait: Duration::from_secs(1),
            start_timeout: Duration::from_secs(30),
        }
    }
}

/// What the history watch did so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyncsStatus {
    /// Every partition of the topic was read to its end at least once.
    pub caught_up: bool,
    /// Sync records read.
    pub records: u64,
    /// Where partition 0 has been read to.
    pub read_to: i64,
    /// When the last snapshot was written.
    pub snapshot_written: Option<SystemTime>,
    /// Why the last snapshot write failed, if it did.
    pub snapshot_error: Option<String>,
    /// The last read error, if any.
    pub last_error: Option<String>,
}

/// Per upstream (topic, partition): the syncs as read, in log order.
type History = BTreeMap<(Vec<u8>, i32), Vec<(i64, i64)>>;

#[derive(Default)]
struct State {
    /// Per upstream (topic, partition): the syncs as read, in log order.
    history: History,
    /// The index last built, until the history changes.
    cached: Option<(Interpolation, Arc<SyncIndex>)>,
    /// Per syncs-topic partition: its position and whether it reached its end once.
    positions: Vec<(i64, bool)>,
    records: u64,
    /// Changed since the last snapshot.
    dirty: bool,
    status: SyncsStatus,
}

struct Shared {
    state: Mutex<State>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panicked task leaves plain data behind: keep serving it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The live offset-sync history. Dropping it stops its tasks.
pub struct SyncsWatcher {
    shared: Arc<Shared>,
    topic: String,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for SyncsWatcher {
    fn drop(&mut self) {
        self.shared.stop.send_replace(true);
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl SyncsWatcher {
    /// Finds the topic and starts reading it (and, with a path, the snapshot writer).
    pub async fn start(options: SyncsWatchOptions) -> Result<SyncsWatcher, ClientError> {
        let deadline = Deadline::after(options.start_timeout);
        let topic = options
            .client
            .describe_topic(&options.topic, &deadline)
            .await?;
        let partitions: Vec<i32> = topic.partitions.iter().map(|p| p.partition).collect();
        let starts = options
            .client
            .list_offsets(
                &topic,
                &partitions,
                OffsetSpec::Earliest,
                IsolationLevel::ReadUncommitted,
                &deadline,
            )
            .await?;
        let (stop, _) = tokio::sync::watch::channel(false);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                positions: vec![(0, false); partitions.len()],
                ..State::default()
            }),
            stop,
        });
        let mut tasks = Vec::new();
        for (slot, &partition) in partitions.iter().enumerate() {
            let start = starts.get(&partition).copied().unwrap_or(0);
            let tail = SyncsTail {
                client: options.client.clone(),
                shared: shared.clone(),
                slot,
                topic: topic.clone(),
                partition,
                position: start,
                options: ReadOptions {
                    isolation: IsolationLevel::ReadUncommitted,
                    max_wait: options.max_wait,
                    lane: slot,
                    prefetch: 1,
                    ..ReadOptions::default()
                },
            };
            tasks.push(tokio::spawn(tail.run()));
        }
        if let Some(path) = options.snapshot_path.clone() {
            let writer = SnapshotWriter {
                shared: shared.clone(),
                path,
                interval: options.snapshot_interval,
                topic: options.topic.clone(),
            };
            tasks.push(tokio::spawn(writer.run()));
        }
        Ok(SyncsWatcher {
            shared,
            topic: options.topic,
            tasks,
        })
    }

    /// The history read so far as an index (built again only when the history changed).
    pub fn index(&self, interpolation: Interpolation) -> Arc<SyncIndex> {
        let mut state = self.shared.lock();
        if let Some((i, index)) = &state.cached
            && *i == interpolation
        {
            return index.clone();
        }
        let index = Arc::new(build(&state.history, interpolation));
        state.cached = Some((interpolation, index.clone()));
        index
    }

    /// What the watch did so far.
    pub fn status(&self) -> SyncsStatus {
        let state = self.shared.lock();
        let mut status = state.status.clone();
        status.records = state.records;
        status.caught_up = state.positions.iter().all(|&(_, done)| done);
        status.read_to = state.positions.first().map_or(0, |&(p, _)| p);
        status
    }

    /// The history as a snapshot, now.
    pub fn snapshot(&self) -> SyncSnapshot {
        let state = self.shared.lock();
        snapshot_of(&state, &self.topic)
    }

    /// Stops the tasks and waits for them.
    pub async fn stop(mut self) {
        self.shared.stop.send_replace(true);
        for task in std::mem::take(&mut self.tasks) {
            let _ = task.await;
        }
    }
}

fn build(history: &History, i: Interpolation) -> SyncIndex {
    let mut builder = SyncIndexBuilder::new();
    for ((topic, partition), syncs) in history {
        builder.extend(topic, *partition, syncs.iter().copied());
    }
    builder.finish(i)
}

fn snapshot_of(state: &State, topic: &str) -> SyncSnapshot {
    let index = build(&state.history, Interpolation::Disabled);
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis().min(i64::MAX as u128) as i64);
    let read_to = state.positions.first().map_or(0, |&(p, _)| p);
    SyncSnapshot::from_index(&index, topic, read_to, created)
}

/// One partition of the offset-syncs topic, read forever.
struct SyncsTail {
    client: KafkaClient,
    shared: Arc<Shared>,
    slot: usize,
    topic: SharedTopic,
    partition: i32,
    position: i64,
    options: ReadOptions,
}

impl SyncsTail {
    async fn run(mut self) {
        let mut stop = self.shared.stop.subscribe();
        let mut retrier = Retrier::new(Deadline::after(Deadline::LONGEST));
        let mut scratch = Scratch::new();
        loop {
            if *stop.borrow() {
                return;
            }
            let outcome = tokio::select! {
                outcome = self.client.fetch(&self.topic, self.partition, self.position, &self.options) => outcome,
                _ = stop.changed() => return,
            };
            let error = match outcome {
                Ok(chunk) => match self.apply(&chunk, &mut scratch) {
                    Ok(()) => {
                        retrier.progressed();
                        continue;
                    }
                    Err(problem) => ClientError::Protocol {
                        broker: String::new(),
                        request: "Fetch",
                        problem,
                    },
                },
                Err(e) => e,
            };
            self.shared.lock().status.last_error = Some(error.to_string());
            if let ClientError::OffsetOutOfRange { .. } = error {
                // Compaction or retention moved the log start: what was removed is older
                // than what is kept, and the index copes with a history that starts later.
                let deadline = Deadline::after(Duration::from_secs(30));
                if let Ok(starts) = self
                    .client
                    .list_offsets(
                        &self.topic,
                        &[self.partition],
                        OffsetSpec::Earliest,
                        IsolationLevel::ReadUncommitted,
                        &deadline,
                    )
                    .await
                    && let Some(&start) = starts.get(&self.partition)
                {
                    self.position = start;
                }
                continue;
            }
            let operation = || format!("tailing {}-{}", self.topic.name, self.partition);
            let action = tokio::select! {
                action = retrier.after(error, operation) => action,
                _ = stop.changed() => return,
            };
            match action {
                Ok(Action::RefreshMetadata) => {
                    let deadline = Deadline::after(Duration::from_secs(30));
                    if let Ok(fresh) = self
                        .client
                        .describe_topic(&self.topic.name, &deadline)
                        .await
                    {
                        self.topic = fresh;
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

    /// Folds one answer into the history.
    fn apply(
        &mut self,
        chunk: &crate::client::FetchedChunk,
        scratch: &mut Scratch,
    ) -> Result<(), String> {
        let bad = |e: crate::records::RecordsError| {
            format!(
                "corrupt batch in {}-{}: {e}",
                self.topic.name, self.partition
            )
        };
        let mut found: Vec<(Vec<u8>, i32, i64, i64)> = Vec::new();
        let mut next = self.position;
        let mut read = 0u64;
        for batch in Batches::new(&chunk.records) {
            let batch = batch.map_err(bad)?;
            next = next.max(batch.next_offset());
            if batch.is_control() {
                continue;
            }
            for record in batch.records(scratch).map_err(bad)? {
                let record = record.map_err(bad)?;
                if record.offset < self.position {
                    continue;
                }
                read += 1;
                let (Some(key), Some(value)) = (record.key, record.value) else {
                    continue;
                };
                let (Ok(key), Ok(value)) = (
                    offset_sync::decode_key(key),
                    offset_sync::decode_value(value),
                ) else {
                    continue;
                };
                found.push((
                    key.topic.to_vec(),
                    key.partition,
                    value.upstream_offset,
                    value.downstream_offset,
                ));
            }
        }
        let mut state = self.shared.lock();
        for (topic, partition, u, d) in found {
            state
                .history
                .entry((topic, partition))
                .or_default()
                .push((u, d));
            state.dirty = true;
        }
        state.records += read;
        self.position = next.max(chunk.next_offset);
        let done = self.position >= chunk.high_watermark;
        let slot = &mut state.positions[self.slot];
        slot.0 = self.position;
        slot.1 |= done;
        state.status.last_error = None;
        Ok(())
    }
}

/// Writes the snapshot every interval when the history changed and is whole.
struct SnapshotWriter {
    shared: Arc<Shared>,
    path: PathBuf,
    interval: Duration,
    topic: String,
}

impl SnapshotWriter {
    async fn run(self) {
        let mut stop = self.shared.stop.subscribe();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(self.interval) => {}
                _ = stop.changed() => return,
            }
            let snapshot = {
                let mut state = self.shared.lock();
                let whole = state.positions.iter().all(|&(_, done)| done);
                if !whole || !state.dirty {
                    continue;
                }
                state.dirty = false;
                snapshot_of(&state, &self.topic)
            };
            // Writing (and fsync) off the async threads.
            let path = self.path.clone();
            let written =
                tokio::task::spawn_blocking(move || snapshot.write_atomically(&path)).await;
            let mut state = self.shared.lock();
            match written {
                Ok(Ok(())) => {
                    state.status.snapshot_written = Some(SystemTime::now());
                    state.status.snapshot_error = None;
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "writing the offset-sync snapshot failed");
                    state.status.snapshot_error = Some(e.to_string());
                    state.dirty = true;
                }
                Err(e) => {
                    state.status.snapshot_error = Some(e.to_string());
                    state.dirty = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ClientConfig;
    use crate::fake::FakeCluster;
    use crate::mm2::offset_sync::{OffsetSyncKey, OffsetSyncValue, encode_key, encode_value};

    /// Sync record `i` of the fake topic: orders-0 and orders-1 alternately, (u, d) = (10 k,
    /// 10 k + 3) with k = i / 2.
    fn sync(_partition: i32, i: i64) -> (Option<Vec<u8>>, Vec<u8>) {
        let key = encode_key(&OffsetSyncKey {
            topic: b"orders",
            partition: (i % 2) as i32,
        })
        .unwrap();
        let value = encode_value(&OffsetSyncValue {
            upstream_offset: 10 * (i / 2),
            downstream_offset: 10 * (i / 2) + 3,
        });
        (Some(key), value)
    }

    #[tokio::test]
    async fn the_history_is_read_kept_and_snapshotted() {
        let cluster = FakeCluster::start(1).await;
        cluster.create_topic_with("mm2-offset-syncs.b.internal", 1, 4, 25, sync);
        let mut config = ClientConfig::plaintext([cluster.address(0)]);
        config.request_timeout = Duration::from_secs(2);
        let client = KafkaClient::connect(config).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("syncs.snapshot");
        let watcher = SyncsWatcher::start(SyncsWatchOptions {
            client,
            topic: "mm2-offset-syncs.b.internal".into(),
            snapshot_path: Some(path.clone()),
            snapshot_interval: Duration::from_millis(10),
            max_wait: Duration::from_millis(10),
            start_timeout: Duration::from_secs(5),
        })
        .await
        .unwrap();
        // Bounded by attempts, not by the clock's reading.
        for _ in 0..500 {
            if path.exists() && watcher.status().caught_up {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let status = watcher.status();
        assert!(status.caught_up, "{status:?}");
        assert_eq!((status.records, status.read_to), (100, 100));
        let snapshot = SyncSnapshot::read_file(&path).unwrap();
        assert_eq!(snapshot.syncs(), 100);
        assert_eq!(snapshot.topic, "mm2-offset-syncs.b.internal");
        let live = watcher.index(Interpolation::Disabled);
        assert!(
            Arc::ptr_eq(&live, &watcher.index(Interpolation::Disabled)),
            "cached"
        );
        let from_file = snapshot.index(Interpolation::Disabled);
        for p in 0..2 {
            for u in [-1, 0, 5, 10, 255, 490, 600] {
                assert_eq!(
                    live.partition(b"orders", p).unwrap().translate(u),
                    from_file.partition(b"orders", p).unwrap().translate(u),
                    "orders-{p} at {u}"
                );
            }
        }
        assert_eq!(
            live.partition(b"orders", 1).unwrap().translate(255),
            Some((254, crate::mm2::sync_index::Rule::Mm2Rule))
        );
        watcher.stop().await;
    }
}
