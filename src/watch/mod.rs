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
//! use mm2_offsets::mm2::policy::ReplicationPolicy;
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
mod precise;
mod tail;

pub use apply_loop::{ApplyLoop, ApplyLoopOptions, ApplyTotals, GroupNote, SkipReason, TickReport};
pub use precise::{SyncsStatus, SyncsWatchOptions, SyncsWatcher};

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use live_map::LiveMap;

use crate::client::{ClientError, DEFAULT_FETCH_MAX_BYTES, Deadline, IsolationLevel, KafkaClient};
use crate::select::GroupSelector;
use crate::translate::{MirrorClient, TranslateError, Translation};
use crate::translate::{OffsetTable, PartitionProgress, ReadReport};

/// The most connections per broker the tail opens (one per tailed partition up to this; more
/// partitions share them, and their idle polls then take turns).
const MAX_TAIL_CONNECTIONS: usize = 64;

/// How to watch.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// Source cluster aliases; each names a checkpoints topic through the replication policy.
    pub sources: Vec<String>,
    /// Which groups the map keeps.
    pub groups: GroupSelector,
    /// read_uncommitted (Java's choice) or read_committed.
    pub isolation: IsolationLevel,
    /// How long the broker may hold a Fetch when there is nothing new: the tail's poll.
    pub max_wait: Duration,
    /// Upper bound on one Fetch's bytes per partition.
    pub max_bytes_per_fetch: i32,
    /// Budget for the start: metadata of the topics and their log start offsets.
    pub start_timeout: Duration,
    /// A partition whose last successful Fetch is older than this is not live (the tail cannot
    /// reach its leader). Must exceed `max_wait`.
    pub live_window: Duration,
}

impl WatchOptions {
    /// Options for `groups` of one source alias, with defaults: read_uncommitted, 1 s polls,
    /// 30 s to start, a partition live while it answered in the last 10 s.
    pub fn new(source: impl Into<String>, groups: GroupSelector) -> Self {
        WatchOptions {
            sources: vec![source.into()],
            groups,
            isolation: IsolationLevel::ReadUncommitted,
            max_wait: Duration::from_secs(1),
            max_bytes_per_fetch: DEFAULT_FETCH_MAX_BYTES,
            start_timeout: Duration::from_secs(30),
            live_window: Duration::from_secs(10),
        }
    }
}

/// What a partition's tail reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stream {
    /// The checkpoints topic of source `sources[i]`.
    Checkpoints(usize),
    /// The heartbeats topic (heartbeats of every source).
    Heartbeats,
}

/// One tailed partition, as its task last left it.
#[derive(Clone, Debug)]
struct PartitionState {
    stream: Stream,
    topic: String,
    partition: i32,
    start: i64,
    position: i64,
    /// The partition's end as the last answer reported it.
    end: i64,
    caught_up_at: Option<SystemTime>,
    last_ok: Option<SystemTime>,
    /// Set by a failed Fetch, cleared by the next good one.
    failing: bool,
    errors: u64,
}

/// Per source: its map and counters.
struct SourceState {
    alias: String,
    map: LiveMap,
    records: u64,
    heartbeat_records: u64,
    last_heartbeat_ms: Option<i64>,
}

struct State {
    sources: Vec<SourceState>,
    partitions: Vec<PartitionState>,
    heartbeats_topic: Option<String>,
    /// Records of the heartbeats topic that name no watched source, or do not decode.
    other_heartbeat_records: u64,
    last_error: Option<String>,
}

struct Shared {
    state: Mutex<State>,
    options: WatchOptions,
    stop: tokio::sync::watch::Sender<bool>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking tail task leaves consistent data (each update is one field at a time and
        // counted), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running watch: cheap to clone, every clone sees the same map. [`stop`](Watcher::stop)
/// ends the tail tasks.
#[derive(Clone)]
pub struct Watcher {
    shared: Arc<Shared>,
    tasks: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("sources", &self.shared.options.sources)
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
            }),
            options,
            stop,
        });
        // The tail has a client of its own, with one connection per tailed partition: a broker
        // answers the requests of one connection in order, so a long poll held for `max_wait`
        // would delay every request queued behind it on the same connection, the caller's
        // metadata and ListOffsets requests as much as another partition's poll.
        let mut tail_config = kafka.config().clone();
        tail_config.connections_per_broker = bounds.len().clamp(1, MAX_TAIL_CONNECTIONS);
        let tail_client = KafkaClient::connect(tail_config).await?;
        let tasks = bounds
            .into_iter()
            .enumerate()
            .map(|(slot, (_, b))| {
                let tail = tail::Tail::new(
                    tail_client.clone(),
                    shared.clone(),
                    slot,
                    b.topic,
                    b.partition,
                    b.start,
                );
                tokio::spawn(tail.run())
            })
            .collect();
        Ok(Watcher {
            shared,
            tasks: Arc::new(Mutex::new(tasks)),
        })
    }

    /// The options the watch runs with.
    pub fn options(&self) -> &WatchOptions {
        &self.shared.options
    }

    /// Counters, ages and readiness, without copying the map.
    pub fn status(&self) -> WatchStatus {
        let state = self.shared.lock();
        status_of(&state, &self.shared.options, SystemTime::now())
    }

    /// A copy of the map with its freshness. The copy is the caller's: the tail goes on while it
    /// is served.
    pub fn snapshot(&self) -> Snapshot {
        let now = SystemTime::now();
        let state = self.shared.lock();
        let status = status_of(&state, &self.shared.options, now);
        let folded = state
            .sources
            .iter()
            .map(|s| (s.alias.clone(), s.map.to_folded()))
            .collect();
        let mut report = ReadReport {
            complete: status.first_read_done,
            records: state.sources.iter().map(|s| s.records).sum(),
            ..ReadReport::default()
        };
        for source in &state.sources {
            report.skipped.merge(source.map.skipped.clone());
        }
        report.partitions = state
            .partitions
            .iter()
            .filter(|p| matches!(p.stream, Stream::Checkpoints(_)))
            .map(|p| PartitionProgress {
                topic: p.topic.clone(),
                partition: p.partition,
                start: p.start,
                end: p.end,
                read_to: p.position,
            })
            .collect();
        let oldest_checkpoint_per_group = state
            .sources
            .iter()
            .flat_map(|s| {
                s.map
                    .oldest_checkpoint_per_group()
                    .into_iter()
                    .map(|(group, ms)| GroupAge {
                        source: s.alias.clone(),
                        group,
                        oldest_checkpoint: from_millis(ms),
                    })
            })
            .collect();
        drop(state);
        let translation = Translation::new(OffsetTable::build(folded), report)
            .with_missing_groups(&self.shared.options.groups);
        Snapshot {
            as_of: status.as_of,
            taken_at: now,
            translation,
            oldest_checkpoint_per_group,
            status,
        }
    }

    /// Waits until the first full read is done and the tail is live, or `timeout` passes.
    /// Returns whether it is ready.
    pub async fn wait_ready(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.status().ready {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops every tail task and waits for them to end.
    pub async fn stop(&self) {
        self.shared.stop.send_replace(true);
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|e| e.into_inner()));
        for task in tasks {
            let _ = task.await;
        }
    }
}

/// What one group's oldest checkpoint is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupAge {
    /// The source alias.
    pub source: String,
    /// The group.
    pub group: String,
    /// The timestamp of the oldest checkpoint among the group's live keys.
    pub oldest_checkpoint: SystemTime,
}

/// The map at one moment, with how fresh it is.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// Everything written to the checkpoints topics before this moment is in the map; `None`
    /// until the first full read is done. See the [module docs](self#freshness).
    pub as_of: Option<SystemTime>,
    /// When the snapshot was taken.
    pub taken_at: SystemTime,
    /// The translated offsets; `report.complete` is whether the first full read is done, and
    /// `report.partitions` tells how far each checkpoints partition has been read.
    pub translation: Translation,
    /// Each group's oldest checkpoint, sorted by source and group.
    pub oldest_checkpoint_per_group: Vec<GroupAge>,
    /// Counters and readiness at the same moment.
    pub status: WatchStatus,
}

/// Counters, ages and readiness of a watch.
#[derive(Clone, Debug)]
pub struct WatchStatus {
    /// Every checkpoints and heartbeats partition has been read to its end at least once.
    pub first_read_done: bool,
    /// Every partition answered a Fetch within [`WatchOptions::live_window`] and its last Fetch
    /// did not fail.
    pub tail_live: bool,
    /// `first_read_done && tail_live`.
    pub ready: bool,
    /// As [`Snapshot::as_of`].
    pub as_of: Option<SystemTime>,
    /// Per source, in the order of [`WatchOptions::sources`].
    pub sources: Vec<SourceStatus>,
    /// Per tailed partition.
    pub partitions: Vec<PartitionStatus>,
    /// Whether the heartbeats topic exists (and is tailed).
    pub heartbeats_topic: Option<String>,
    /// The last read error, if any (for logs and diagnostics).
    pub last_error: Option<String>,
}

/// The state of one source.
#[derive(Clone, Debug)]
pub struct SourceStatus {
    /// The source alias.
    pub source: String,
    /// The timestamp in the newest heartbeat MirrorMaker 2 wrote for this source's flow into the
    /// target cluster; `None` if none was read.
    pub last_heartbeat: Option<SystemTime>,
    /// The timestamp of the newest checkpoint record read (tombstones excluded).
    pub newest_checkpoint: Option<SystemTime>,
    /// Checkpoint records read, and this source's heartbeat records.
    pub records_read: u64,
    /// Failed Fetches of its checkpoints partitions and of the heartbeats topic.
    pub read_errors: u64,
    /// The newest successful Fetch of any of its partitions.
    pub last_successful_read: Option<SystemTime>,
    /// Live keys in its map.
    pub offsets: usize,
    /// Groups with live keys.
    pub groups: usize,
    /// As [`Snapshot::as_of`], for this source's checkpoints partitions only.
    pub as_of: Option<SystemTime>,
}

/// The state of one tailed partition.
#[derive(Clone, Debug)]
pub struct PartitionStatus {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The next offset to read.
    pub position: i64,
    /// Its end, as the last answer reported it.
    pub end: i64,
    /// When it was last caught up (see the [module docs](self#freshness)).
    pub caught_up_at: Option<SystemTime>,
    /// Its last successful Fetch.
    pub last_ok: Option<SystemTime>,
    /// Failed Fetches.
    pub errors: u64,
}

fn from_millis(ms: i64) -> SystemTime {
    if ms >= 0 {
        SystemTime::UNIX_EPOCH + Duration::from_millis(ms as u64)
    } else {
        SystemTime::UNIX_EPOCH - Duration::from_millis(ms.unsigned_abs())
    }
}

fn oldest(times: impl Iterator<Item = Option<SystemTime>>) -> Option<SystemTime> {
    let mut oldest: Option<SystemTime> = None;
    for t in times {
        let t = t?;
        oldest = Some(oldest.map_or(t, |o| o.min(t)));
    }
    oldest
}

fn status_of(state: &State, options: &WatchOptions, now: SystemTime) -> WatchStatus {
    let checkpoint_parts = || {
        state
            .partitions
            .iter()
            .filter(|p| matches!(p.stream, Stream::Checkpoints(_)))
    };
    let first_read_done = state.partitions.iter().all(|p| p.caught_up_at.is_some());
    let live = |p: &PartitionState| {
        !p.failing
            && p.last_ok
                .is_some_and(|t| now.duration_since(t).unwrap_or_default() <= options.live_window)
    };
    let tail_live = state.partitions.iter().all(live);
    let as_of = if first_read_done {
        oldest(checkpoint_parts().map(|p| p.caught_up_at))
    } else {
        None
    };
    let heartbeat_errors: u64 = state
        .partitions
        .iter()
        .filter(|p| p.stream == Stream::Heartbeats)
        .map(|p| p.errors)
        .sum();
    let sources = state
        .sources
        .iter()
        .enumerate()
        .map(|(index, s)| {
            let mine = || {
                state.partitions.iter().filter(move |p| {
                    p.stream == Stream::Checkpoints(index) || p.stream == Stream::Heartbeats
                })
            };
            let own = || {
                state
                    .partitions
                    .iter()
                    .filter(move |p| p.stream == Stream::Checkpoints(index))
            };
            SourceStatus {
                source: s.alias.clone(),
                last_heartbeat: s.last_heartbeat_ms.map(from_millis),
                newest_checkpoint: s.map.newest_checkpoint_ms.map(from_millis),
                records_read: s.records + s.heartbeat_records,
                read_errors: own().map(|p| p.errors).sum::<u64>() + heartbeat_errors,
                last_successful_read: mine().filter_map(|p| p.last_ok).max(),
                offsets: s.map.len(),
                groups: s.map.group_count(),
                as_of: if own().all(|p| p.caught_up_at.is_some()) {
                    oldest(own().map(|p| p.caught_up_at))
                } else {
                    None
                },
            }
        })
        .collect();
    WatchStatus {
        first_read_done,
        tail_live,
        ready: first_read_done && tail_live,
        as_of,
        sources,
        partitions: state
            .partitions
            .iter()
            .map(|p| PartitionStatus {
                topic: p.topic.clone(),
                partition: p.partition,
                position: p.position,
                end: p.end,
                caught_up_at: p.caught_up_at,
                last_ok: p.last_ok,
                errors: p.errors,
            })
            .collect(),
        heartbeats_topic: state.heartbeats_topic.clone(),
        last_error: state.last_error.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partition(stream: Stream, caught_up: Option<u64>, last_ok: Option<u64>) -> PartitionState {
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        PartitionState {
            stream,
            topic: "t".into(),
            partition: 0,
            start: 0,
            position: 10,
            end: 10,
            caught_up_at: caught_up.map(at),
            last_ok: last_ok.map(at),
            failing: false,
            errors: 0,
        }
    }

    fn state(partitions: Vec<PartitionState>) -> State {
        State {
            sources: vec![SourceState {
                alias: "primary".into(),
                map: LiveMap::new(GroupSelector::all()),
                records: 0,
                heartbeat_records: 0,
                last_heartbeat_ms: Some(99_000),
            }],
            partitions,
            heartbeats_topic: Some("heartbeats".into()),
            other_heartbeat_records: 0,
            last_error: None,
        }
    }

    #[test]
    fn as_of_is_the_oldest_caught_up_time_and_waits_for_every_partition() {
        let options = WatchOptions::new("primary", GroupSelector::all());
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let mut s = state(vec![
            partition(Stream::Checkpoints(0), Some(95), Some(99)),
            partition(Stream::Checkpoints(0), None, Some(99)),
            partition(Stream::Heartbeats, Some(90), Some(99)),
        ]);
        let status = status_of(&s, &options, now);
        assert!(!status.first_read_done && !status.ready);
        assert_eq!(
            status.as_of, None,
            "no freshness before every partition was read"
        );
        s.partitions[1].caught_up_at = Some(SystemTime::UNIX_EPOCH + Duration::from_secs(97));
        let status = status_of(&s, &options, now);
        assert!(status.first_read_done && status.tail_live && status.ready);
        // The oldest checkpoints partition; the heartbeats topic does not date the map.
        assert_eq!(
            status.as_of,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(95))
        );
        assert_eq!(status.sources[0].as_of, status.as_of);
        assert_eq!(
            status.sources[0].last_heartbeat,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(99))
        );
    }

    #[test]
    fn a_failing_or_silent_partition_makes_the_tail_not_live() {
        let options = WatchOptions::new("primary", GroupSelector::all());
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let mut s = state(vec![
            partition(Stream::Checkpoints(0), Some(95), Some(99)),
            partition(Stream::Heartbeats, Some(95), Some(99)),
        ]);
        assert!(status_of(&s, &options, now).ready);
        s.partitions[1].failing = true;
        s.partitions[1].errors = 3;
        let status = status_of(&s, &options, now);
        assert!(status.first_read_done && !status.tail_live && !status.ready);
        assert_eq!(
            status.sources[0].read_errors, 3,
            "heartbeat errors count for every source"
        );
        // As of stays where the data is: an outage does not move it.
        assert_eq!(
            status.as_of,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(95))
        );
        s.partitions[1].failing = false;
        // Last answer 20 s ago with a 10 s window: silent, not live.
        s.partitions[0].last_ok = Some(SystemTime::UNIX_EPOCH + Duration::from_secs(80));
        assert!(!status_of(&s, &options, now).tail_live);
    }
}
