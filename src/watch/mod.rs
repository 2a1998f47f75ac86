//! A live translation map: one full read of each source's checkpoints topic, then tailing it and
//! the `heartbeats` topic with long-poll Fetch, so that "where would every group resume if we
//! failed over now, and how old is that answer?" is answered from memory at any moment.
//!
//! [`Watcher::start`] spawns one task per partition of the checkpoints topics and of the
//! heartbeats topic. Each task fetches from the log start, applies every record to the live map
//! (a tombstone removes its key), and then keeps fetching at its position with the broker
//! holding each Fetch up to [`WatchOptions::max_wait`] when there is nothing new. Failures go
//! through the client's retry policy ([`Action`](crate::client::Action)): leadership changes
//! refresh metadata, lost connections reconnect, all with backoff; the watcher never gives up,
//! it reports.
//!
//! # Freshness
//! A partition is *caught up as of* the moment a Fetch was sent whose answer brought the read to
//! the partition's end (high watermark, or last stable offset under read_committed). The map's
//! [`Snapshot::as_of`] is the oldest of those moments over every checkpoints partition: nothing
//! written before it is missing from the map. While a broker is unreachable, `as_of` stays where
//! it was, so a snapshot never claims to be fresher than it is.
//!
//! With [`ApplyLoop`], the map is also committed periodically to the target groups that have no
//! members, with every guard of [`apply`](crate::apply).
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use mm2_offsets::config::ClientConfig;
//! use mm2_offsets::mm2::ReplicationPolicy;
//! use mm2_offsets::translate::MirrorClient;
//! use mm2_offsets::select::GroupSelector;
//! use mm2_offsets::watch::{WatchOptions, Watcher};
//!
//! let target = ClientConfig::plaintext(["127.0.0.1:29092"]);
//! let client = MirrorClient::connect(target, ReplicationPolicy::default()).await?;
//! let watcher = Watcher::start(&client, WatchOptions::new("primary", GroupSelector::all())).await?;
//! assert!(watcher.wait_ready(Duration::from_secs(60)).await, "first full read not done");
//!
//! let snapshot = watcher.snapshot();
//! for offset in snapshot.translation.group("orders-app") {
//!     println!("{} {} -> {}", offset.topic, offset.partition, offset.offset);
//! }
//! let status = &snapshot.status.sources[0];
//! println!("as of {:?}, last heartbeat {:?}", snapshot.as_of, status.last_heartbeat);
//! watcher.stop().await;
//! # Ok(())
//! # }
//! ```

mod apply_loop;
mod live_map;
mod options;
mod precise;
mod snapshot;
mod state;
mod tail;
#[cfg(test)]
mod tests;

pub use apply_loop::{ApplyLoop, ApplyLoopOptions, ApplyTotals, GroupNote, TickReport, WatchSkip};
pub use options::WatchOptions;
pub use precise::{SyncsStatus, SyncsWatchOptions, SyncsWatcher};
pub use snapshot::{GroupAge, SharedSnapshot, Snapshot};
pub use state::{PartitionStatus, SourceStatus, WatchStatus};

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use live_map::LiveMap;
use state::{PartitionState, Shared, SourceState, State, Stream, status_of};
use tokio::task::JoinSet;

use crate::client::{ClientError, Deadline, KafkaClient};
use crate::translate::{MirrorClient, TranslateError};

/// The most connections per broker the tail opens (one per tailed partition up to this; more
/// partitions share them, and their idle polls then take turns).
const MAX_TAIL_CONNECTIONS: usize = 64;

/// A running watch: cheap to clone, every clone sees the same map. [`stop`](Watcher::stop)
/// ends the tail tasks and waits for them; dropping the last clone ends them too (their
/// connections close as they go), so a watcher that is no longer used costs nothing.
#[derive(Clone)]
pub struct Watcher {
    running: Arc<Running>,
}

/// What the clones of one [`Watcher`] share; dropped with the last clone.
struct Running {
    shared: Arc<Shared>,
    /// The tail tasks. Dropping the set aborts them, and with them the tail's client and its
    /// connections.
    tasks: Mutex<JoinSet<()>>,
    /// The last shared copy of the map ([`Watcher::shared_snapshot`]); a copy in progress holds
    /// it (and `shared`) on a blocking thread, not the `Running` whose drop stops the tasks.
    snapshots: Arc<snapshot::SnapshotCache>,
}

impl Drop for Running {
    fn drop(&mut self) {
        // The set's own drop aborts the tasks; telling them first lets one that is between two
        // awaits end at its next check instead of at its next await.
        self.shared.stop.send_replace(true);
    }
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("sources", &self.running.shared.options.sources)
            .finish_non_exhaustive()
    }
}

/// Why a watch could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    /// Reading the topics' metadata or offsets failed (see [`TranslateError`]).
    #[error(transparent)]
    Start(#[from] TranslateError),
    /// No source alias was given.
    #[error("no source cluster alias to watch")]
    NoSources,
}

impl From<ClientError> for WatchError {
    fn from(e: ClientError) -> Self {
        WatchError::Start(TranslateError::Client(e))
    }
}

impl Watcher {
    /// Looks up the checkpoints topic of every source and the heartbeats topic on the target
    /// cluster, and starts tailing them from their log start. Returns once the tasks run; the
    /// first full read goes on in the background ([`wait_ready`](Watcher::wait_ready)).
    ///
    /// A missing checkpoints topic fails the start; a missing heartbeats topic (MirrorMaker 2 with
    /// `emit.heartbeats.enabled=false`) only leaves heartbeat ages unknown.
    pub async fn start(
        client: &MirrorClient,
        options: WatchOptions,
    ) -> Result<Watcher, WatchError> {
        if options.sources.is_empty() {
            return Err(WatchError::NoSources);
        }
        let deadline = Deadline::after(options.start_timeout);
        let policy = client.replication_policy();
        let kafka = client.kafka();
        let mut bounds = Vec::new();
        for (index, source) in options.sources.iter().enumerate() {
            let name = policy.checkpoints_topic(source);
            let topic = match kafka.describe_topic(&name, &deadline).await {
                Ok(topic) => topic,
                Err(ClientError::UnknownTopic { .. }) => {
                    let existing = client
                        .list_topics(&deadline)
                        .await?
                        .into_iter()
                        .filter(|t| policy.is_checkpoints_topic(t))
                        .collect();
                    return Err(TranslateError::MissingCheckpointsTopic {
                        source_alias: source.clone(),
                        topic: name,
                        existing,
                    }
                    .into());
                }
                Err(e) => return Err(e.into()),
            };
            let b = crate::translate::topic_bounds(
                kafka,
                source,
                topic.clone(),
                options.isolation,
                &deadline,
            )
            .await?;
            bounds.extend(b.into_iter().map(|b| (Stream::Checkpoints(index), b)));
        }
        let heartbeats = policy.heartbeats_topic();
        let heartbeats_topic = match kafka.describe_topic(heartbeats, &deadline).await {
            Ok(topic) => {
                let b =
                    crate::translate::topic_bounds(kafka, "", topic, options.isolation, &deadline)
                        .await?;
                bounds.extend(b.into_iter().map(|b| (Stream::Heartbeats, b)));
                Some(heartbeats.to_string())
            }
            Err(ClientError::UnknownTopic { .. }) => {
                tracing::warn!(
                    topic = heartbeats,
                    "no heartbeats topic on the target cluster: heartbeat ages stay unknown"
                );
                None
            }
            Err(e) => return Err(e.into()),
        };

        let partitions = bounds
            .iter()
            .map(|(stream, b)| PartitionState {
                stream: *stream,
                topic: b.topic.name.clone(),
                partition: b.partition,
                start: b.start,
                position: b.start,
                end: b.end,
                caught_up_at: None,
                last_ok: None,
                failing: false,
                errors: 0,
            })
            .collect();
        let sources = options
            .sources
            .iter()
            .map(|alias| SourceState {
                alias: alias.clone(),
                map: LiveMap::new(options.groups.clone()),
                records: 0,
                heartbeat_records: 0,
                last_heartbeat_ms: None,
            })
            .collect();
        let (stop, _) = tokio::sync::watch::channel(false);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                sources,
                partitions,
                heartbeats_topic,
                other_heartbeat_records: 0,
                last_error: None,
                stopped: false,
            }),
            options,
            stop,
            changed: tokio::sync::watch::Sender::new(()),
        });
        // The tail has a client of its own, with one connection per tailed partition: a broker
        // answers the requests of one connection in order, so a long poll held for `max_wait`
        // would delay every request queued behind it on the same connection, the caller's
        // metadata and ListOffsets requests as much as another partition's poll.
        let mut tail_config = kafka.config().clone();
        tail_config.connections_per_broker = bounds.len().clamp(1, MAX_TAIL_CONNECTIONS);
        let tail_client = KafkaClient::connect(tail_config).await?;
        let mut tasks = JoinSet::new();
        for (slot, (_, b)) in bounds.into_iter().enumerate() {
            let tail = tail::Tail::new(
                tail_client.clone(),
                shared.clone(),
                slot,
                b.topic,
                b.partition,
                b.start,
            );
            tasks.spawn(tail.run());
        }
        Ok(Watcher {
            running: Arc::new(Running {
                shared,
                tasks: Mutex::new(tasks),
                snapshots: Arc::default(),
            }),
        })
    }

    fn shared(&self) -> &Shared {
        &self.running.shared
    }

    /// The options the watch runs with.
    pub fn options(&self) -> &WatchOptions {
        &self.shared().options
    }

    /// Counters, ages and readiness, without copying the map.
    pub fn status(&self) -> WatchStatus {
        let state = self.shared().lock();
        status_of(&state, &self.shared().options, SystemTime::now())
    }

    /// The map with its freshness and the status of this moment. The map
    /// ([`Snapshot::translation`]) is shared by reference: while it has not changed, a call
    /// only checks that under the lock the tail needs and hands out the last copy; after a
    /// change, the first call copies it once (on the caller's thread; the index is built after
    /// the lock is released) for every call after. A snapshot held does not move while the
    /// tail goes on. From async code that may meet a changed large map, prefer
    /// [`shared_snapshot`](Watcher::shared_snapshot), which copies off the async workers and
    /// makes concurrent callers wait for one copy.
    pub fn snapshot(&self) -> Snapshot {
        snapshot::snapshot(&self.running.shared, &self.running.snapshots)
    }

    /// The map shared by reference: copied once after each change of the map (by one caller,
    /// off the async workers, while the others wait for that copy), and otherwise the last
    /// copy with the status of this moment. Memory and lock time do not grow with the number
    /// of callers.
    ///
    /// ```no_run
    /// # async fn example(watcher: mm2_offsets::watch::Watcher) {
    /// let shared = watcher.shared_snapshot().await;
    /// println!(
    ///     "{} offsets, as of {:?}",
    ///     shared.map.translation.len(),
    ///     shared.status.as_of
    /// );
    /// # }
    /// ```
    pub async fn shared_snapshot(&self) -> SharedSnapshot {
        snapshot::shared(&self.running.shared, &self.running.snapshots).await
    }

    /// Waits until the first full read is done and the tail is live, or `timeout` passes.
    /// Returns whether it is ready. It wakes when a tail task records an answer or a failure,
    /// the only moments readiness can turn true.
    pub async fn wait_ready(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut changed = self.shared().changed.subscribe();
        loop {
            // Marks the current value seen before looking, so a change made while we look
            // wakes the wait below.
            changed.borrow_and_update();
            let status = self.status();
            if status.ready || status.stopped {
                return status.ready;
            }
            tokio::select! {
                // The sender lives as long as `self`: this never fails while we wait.
                _ = changed.changed() => {}
                _ = tokio::time::sleep_until(deadline) => return self.status().ready,
            }
        }
    }

    /// Stops every tail task and waits for them to end. The map stays readable; from now on
    /// [`status`](Watcher::status) says `stopped` and not ready.
    pub async fn stop(&self) {
        self.shared().lock().stopped = true;
        self.shared().stop.send_replace(true);
        self.shared().changed.send_replace(());
        let mut tasks =
            std::mem::take(&mut *self.running.tasks.lock().unwrap_or_else(|e| e.into_inner()));
        while tasks.join_next().await.is_some() {}
    }
}
