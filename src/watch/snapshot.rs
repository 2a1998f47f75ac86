//! Snapshots of the live map: the copy taken under the state lock, and the shared snapshot
//! ([`Watcher::shared_snapshot`](super::Watcher::shared_snapshot)) that every reader gets by
//! reference until the map changes.
//!
//! Copying the map holds the lock the tail tasks need to apply records, and a copy of a large
//! map is tens of megabytes: one copy per HTTP request made 300 concurrent requests hold 300
//! copies and stall the tail. The shared snapshot is copied once per change of the map, by one
//! caller at a time; the others wait for that copy or, when nothing changed, get the last one
//! with the status of their own moment.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::state::{Shared, State, Stream, WatchStatus, from_millis, status_of};

use crate::translate::{Folded, OffsetTable, PartitionProgress, ReadReport, Translation};

/// What one group's oldest checkpoint is.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
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
#[non_exhaustive]
pub struct Snapshot {
    /// Everything written to the checkpoints topics before this moment is in the map; `None`
    /// until the first full read is done. See the [module docs](crate::watch#freshness).
    pub as_of: Option<SystemTime>,
    /// When the snapshot was taken.
    pub taken_at: SystemTime,
    /// The translated offsets; `report.complete` is whether the first full read is done, and
    /// `report.partitions` tells how far each checkpoints partition has been read. Shared by
    /// reference with every snapshot taken until the map changes.
    pub translation: Arc<Translation>,
    /// Each group's oldest checkpoint, sorted by source and group (shared as `translation`).
    pub oldest_checkpoint_per_group: Arc<[GroupAge]>,
    /// Counters and readiness at the same moment.
    pub status: WatchStatus,
}

/// The map at one moment, shared by reference, with the status of the moment it was asked for.
///
/// `map` is immutable and shared by every caller until the map changes; `status` is taken when
/// the caller asked, under the same lock as the check that the map had not changed since `map`
/// was copied, so `status.as_of` is the freshness of `map`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SharedSnapshot {
    /// The map's copy. Its own `as_of`, `taken_at` and `status` are those of the copy's moment;
    /// use [`SharedSnapshot::status`] for the current ones.
    pub map: Arc<Snapshot>,
    /// Readiness, counters and `as_of` now.
    pub status: WatchStatus,
    /// When `status` was taken.
    pub taken_at: SystemTime,
}

/// What the map's content depends on, compared to tell whether a copy is still current: the
/// checkpoint records applied (every change of the map is a record) and how far each
/// checkpoints partition was read (the read report is part of the copy).
#[derive(Clone, Debug, PartialEq, Eq)]
struct MapVersion {
    first_read_done: bool,
    records: Vec<u64>,
    progress: Vec<(i64, i64, i64)>,
}

fn version_of(state: &State, first_read_done: bool) -> MapVersion {
    MapVersion {
        first_read_done,
        records: state.sources.iter().map(|s| s.records).collect(),
        progress: state
            .partitions
            .iter()
            .filter(|p| matches!(p.stream, Stream::Checkpoints(_)))
            .map(|p| (p.start, p.position, p.end))
            .collect(),
    }
}

/// The last shared copy and the version it was taken at.
#[derive(Default)]
pub(super) struct SnapshotCache {
    last: Mutex<Option<(MapVersion, Arc<Snapshot>)>>,
    /// One copy at a time: the callers that find the map changed queue here, and all but the
    /// first find the new copy current when their turn comes.
    copying: tokio::sync::Mutex<()>,
}

/// The part of a snapshot taken under the state lock: plain copies, no index built.
pub(super) struct Copied {
    now: SystemTime,
    status: WatchStatus,
    folded: Vec<(String, Folded)>,
    report: ReadReport,
    oldest_checkpoint_per_group: Vec<GroupAge>,
}

impl Copied {
    /// Copies the map out of `state` (the caller holds the lock).
    pub(super) fn take(state: &State, options: &super::WatchOptions, now: SystemTime) -> Self {
        let status = status_of(state, options, now);
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
        Copied {
            now,
            status,
            folded,
            report,
            oldest_checkpoint_per_group,
        }
    }

    /// Builds the snapshot's index (after the lock is released).
    pub(super) fn finish(self, options: &super::WatchOptions) -> Snapshot {
        let translation = Translation::new(OffsetTable::build(self.folded), self.report)
            .with_missing_groups(&options.groups);
        Snapshot {
            as_of: self.status.as_of,
            taken_at: self.now,
            translation: Arc::new(translation),
            oldest_checkpoint_per_group: self.oldest_checkpoint_per_group.into(),
            status: self.status,
        }
    }
}

/// The status now with the last copy, if the map has not changed since it was taken.
fn current(shared: &Shared, cache: &SnapshotCache) -> Option<SharedSnapshot> {
    let now = SystemTime::now();
    let state = shared.lock();
    let status = status_of(&state, &shared.options, now);
    let version = version_of(&state, status.first_read_done);
    drop(state);
    let last = cache.last.lock().unwrap_or_else(|e| e.into_inner());
    match &*last {
        Some((v, map)) if *v == version => Some(SharedSnapshot {
            map: map.clone(),
            status,
            taken_at: now,
        }),
        _ => None,
    }
}

/// Copies the map now and keeps the copy for the callers after this one.
fn copy(shared: &Shared, cache: &SnapshotCache) -> SharedSnapshot {
    let now = SystemTime::now();
    let state = shared.lock();
    let copied = Copied::take(&state, &shared.options, now);
    let version = version_of(&state, copied.status.first_read_done);
    drop(state);
    let map = Arc::new(copied.finish(&shared.options));
    let snapshot = SharedSnapshot {
        map: map.clone(),
        status: map.status.clone(),
        taken_at: now,
    };
    *cache.last.lock().unwrap_or_else(|e| e.into_inner()) = Some((version, map));
    snapshot
}

impl SharedSnapshot {
    /// The map of the copy with the status of this moment: no copy, two reference counts.
    fn into_snapshot(self) -> Snapshot {
        Snapshot {
            as_of: self.status.as_of,
            taken_at: self.taken_at,
            translation: self.map.translation.clone(),
            oldest_checkpoint_per_group: self.map.oldest_checkpoint_per_group.clone(),
            status: self.status,
        }
    }
}

/// See [`Watcher::snapshot`](super::Watcher::snapshot): the last copy when the map has not
/// changed since, else a new copy (on the caller's thread), kept for the callers after.
pub(super) fn snapshot(shared: &Shared, cache: &SnapshotCache) -> Snapshot {
    match current(shared, cache) {
        Some(last) => last.into_snapshot(),
        None => copy(shared, cache).into_snapshot(),
    }
}

/// See [`Watcher::shared_snapshot`](super::Watcher::shared_snapshot).
pub(super) async fn shared(shared: &Arc<Shared>, cache: &Arc<SnapshotCache>) -> SharedSnapshot {
    if let Some(snapshot) = current(shared, cache) {
        return snapshot;
    }
    let _turn = cache.copying.lock().await;
    if let Some(snapshot) = current(shared, cache) {
        return snapshot;
    }
    // The copy and the index build are CPU work of up to a few hundred milliseconds on a large
    // map: off the async workers, which keep answering health checks meanwhile.
    let (owned, owned_cache) = (shared.clone(), cache.clone());
    match tokio::task::spawn_blocking(move || copy(&owned, &owned_cache)).await {
        Ok(snapshot) => snapshot,
        // The copy panicked (a bug): resume the panic in the caller, as a direct call would.
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // The runtime is shutting down: copy on this thread.
            Err(_) => copy(shared, cache),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm2::checkpoint;
    use crate::select::GroupSelector;
    use crate::watch::live_map::LiveMap;
    use crate::watch::{PartitionState, SourceState, WatchOptions};
    use std::time::Duration;

    fn at(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(s)
    }

    fn watch() -> Arc<Shared> {
        let mut options = WatchOptions::new("primary", GroupSelector::all());
        options.live_window = Duration::from_secs(u32::MAX.into());
        Arc::new(Shared {
            state: Mutex::new(State {
                sources: vec![SourceState {
                    alias: "primary".into(),
                    map: LiveMap::new(GroupSelector::all()),
                    records: 0,
                    heartbeat_records: 0,
                    last_heartbeat_ms: None,
                }],
                partitions: vec![PartitionState {
                    stream: Stream::Checkpoints(0),
                    topic: "primary.checkpoints.internal".into(),
                    partition: 0,
                    start: 0,
                    position: 0,
                    end: 0,
                    caught_up_at: Some(at(10)),
                    last_ok: Some(at(10)),
                    failing: false,
                    errors: 0,
                }],
                heartbeats_topic: None,
                other_heartbeat_records: 0,
                last_error: None,
                stopped: false,
            }),
            options,
            stop: tokio::sync::watch::channel(false).0,
            changed: tokio::sync::watch::Sender::new(()),
        })
    }

    /// What the tail does with one checkpoint record.
    fn apply(shared: &Shared, group: &str, offset: i64) {
        let key = checkpoint::encode_key(&checkpoint::CheckpointKey {
            group: group.as_bytes(),
            topic: b"t",
            partition: 0,
        })
        .unwrap();
        let value = checkpoint::encode_value(&checkpoint::CheckpointValue {
            version: 0,
            upstream_offset: offset,
            downstream_offset: offset,
            metadata: b"",
        })
        .unwrap();
        let mut state = shared.lock();
        let position = state.partitions[0].position;
        state.sources[0].records += 1;
        state.sources[0]
            .map
            .apply(0, position, 5, Some(&key), Some(&value));
        state.partitions[0].position = position + 1;
        state.partitions[0].end = position + 1;
    }

    #[tokio::test]
    async fn one_copy_per_change_shared_by_every_caller() {
        let w = watch();
        let cache = Arc::new(SnapshotCache::default());
        apply(&w, "g", 7);
        let first = shared(&w, &cache).await;
        assert_eq!(first.map.translation.len(), 1);
        let again = shared(&w, &cache).await;
        assert!(Arc::ptr_eq(&first.map, &again.map), "unchanged: no copy");

        // Freshness moves without a copy, and the caller sees the new as_of with the old map.
        w.lock().partitions[0].caught_up_at = Some(at(20));
        let later = shared(&w, &cache).await;
        assert!(Arc::ptr_eq(&first.map, &later.map));
        assert_eq!(later.status.as_of, Some(at(20)));
        assert_eq!(
            later.map.as_of,
            Some(at(10)),
            "the copy keeps its own moment"
        );

        // A record: a new copy, made once for every caller that asks meanwhile.
        apply(&w, "h", 8);
        let callers: Vec<_> = (0..16)
            .map(|_| {
                let (w, cache) = (w.clone(), cache.clone());
                tokio::spawn(async move { shared(&w, &cache).await })
            })
            .collect();
        let mut maps = Vec::new();
        for c in callers {
            maps.push(c.await.unwrap().map);
        }
        assert_eq!(maps[0].translation.len(), 2);
        assert!(!Arc::ptr_eq(&maps[0], &first.map));
        assert!(maps.iter().all(|m| Arc::ptr_eq(m, &maps[0])), "one copy");
    }

    #[test]
    fn snapshots_share_the_map_until_it_changes_with_the_status_of_their_moment() {
        let w = watch();
        let cache = SnapshotCache::default();
        apply(&w, "g", 7);
        let first = snapshot(&w, &cache);
        assert_eq!(first.translation.len(), 1);
        w.lock().partitions[0].caught_up_at = Some(at(20));
        let again = snapshot(&w, &cache);
        assert!(
            Arc::ptr_eq(&first.translation, &again.translation),
            "no copy"
        );
        assert_eq!((first.as_of, again.as_of), (Some(at(10)), Some(at(20))));
        assert_eq!(again.status.as_of, Some(at(20)));
        apply(&w, "h", 8);
        let changed = snapshot(&w, &cache);
        assert_eq!(changed.translation.len(), 2);
        assert!(!Arc::ptr_eq(&first.translation, &changed.translation));
        assert_eq!(first.translation.len(), 1, "a held snapshot does not move");
    }
}
