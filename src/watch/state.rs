//! What the tail tasks share with the [`Watcher`](super::Watcher): each partition's progress,
//! each source's live map and counters, and the readiness and freshness computed from them.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use super::live_map::LiveMap;
use super::options::WatchOptions;
use crate::translate::SkipCounts;

/// What a partition's tail reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stream {
    /// The checkpoints topic of source `sources[i]`.
    Checkpoints(usize),
    /// The heartbeats topic (heartbeats of every source).
    Heartbeats,
}

/// One tailed partition, as its task last left it.
#[derive(Clone, Debug)]
pub(super) struct PartitionState {
    pub(super) stream: Stream,
    pub(super) topic: String,
    pub(super) partition: i32,
    pub(super) start: i64,
    pub(super) position: i64,
    /// The partition's end as the last answer reported it.
    pub(super) end: i64,
    pub(super) caught_up_at: Option<SystemTime>,
    pub(super) last_ok: Option<SystemTime>,
    /// Set by a failed Fetch, cleared by the next good one.
    pub(super) failing: bool,
    pub(super) errors: u64,
}

/// Per source: its map and counters.
pub(super) struct SourceState {
    pub(super) alias: String,
    pub(super) map: LiveMap,
    pub(super) records: u64,
    pub(super) heartbeat_records: u64,
    pub(super) last_heartbeat_ms: Option<i64>,
}

pub(super) struct State {
    pub(super) sources: Vec<SourceState>,
    pub(super) partitions: Vec<PartitionState>,
    pub(super) heartbeats_topic: Option<String>,
    /// Records of the heartbeats topic that name no watched source, or do not decode.
    pub(super) other_heartbeat_records: u64,
    pub(super) last_error: Option<String>,
    /// Set by [`Watcher::stop`](super::Watcher::stop): the tail tasks are ending or gone.
    pub(super) stopped: bool,
}

pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    pub(super) options: WatchOptions,
    /// Tells the tail tasks to end.
    pub(super) stop: tokio::sync::watch::Sender<bool>,
    /// Bumped by the tail tasks after every answer or failure they record, so that a reader
    /// waiting for readiness wakes when it may have changed instead of polling.
    pub(super) changed: tokio::sync::watch::Sender<()>,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking tail task leaves consistent data (each update is one field at a time and
        // counted), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Counters, ages and readiness of a watch.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct WatchStatus {
    /// Every checkpoints and heartbeats partition has been read to its end at least once.
    pub first_read_done: bool,
    /// Every partition answered a Fetch within [`WatchOptions::live_window`] and its last Fetch
    /// did not fail; false once the watch is stopped.
    pub tail_live: bool,
    /// `first_read_done && tail_live`.
    pub ready: bool,
    /// [`Watcher::stop`](super::Watcher::stop) was called: nothing is read any more, and the
    /// map stays as it was.
    pub stopped: bool,
    /// As [`Snapshot::as_of`](super::Snapshot::as_of).
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
#[non_exhaustive]
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
    /// Checkpoint records counted by reason, by the rule of [`crate::mm2::fold`]: the counts a
    /// translation of the same records reports.
    pub skipped: SkipCounts,
    /// Failed Fetches of its checkpoints partitions and of the heartbeats topic.
    pub read_errors: u64,
    /// The newest successful Fetch of any of its partitions.
    pub last_successful_read: Option<SystemTime>,
    /// Live keys in its map.
    pub offsets: usize,
    /// Groups with live keys.
    pub groups: usize,
    /// As [`Snapshot::as_of`](super::Snapshot::as_of), for this source's checkpoints partitions only.
    pub as_of: Option<SystemTime>,
}

/// The state of one tailed partition.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PartitionStatus {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The next offset to read.
    pub position: i64,
    /// Its end, as the last answer reported it.
    pub end: i64,
    /// When it was last caught up (see the [module docs](super#freshness)).
    pub caught_up_at: Option<SystemTime>,
    /// Its last successful Fetch.
    pub last_ok: Option<SystemTime>,
    /// Failed Fetches.
    pub errors: u64,
}

pub(super) fn from_millis(ms: i64) -> SystemTime {
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

pub(super) fn status_of(state: &State, options: &WatchOptions, now: SystemTime) -> WatchStatus {
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
    let tail_live = !state.stopped && state.partitions.iter().all(live);
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
                skipped: s.map.skipped.clone(),
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
        stopped: state.stopped,
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
    use crate::select::GroupSelector;

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
            stopped: false,
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
