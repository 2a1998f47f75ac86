//! The live translation map of one source: the latest checkpoint per (group, topic, partition),
//! updated record by record as the tail reads, with memory bounded by the number of live keys.
//!
//! Unlike the one-shot [`Accumulator`](super::super::translator::Accumulator), which keeps a
//! dead entry for a tombstoned key so ranges can be combined later, this map has one reader per
//! partition in log order, so a tombstone simply removes its key, and a name (group or topic)
//! whose last key went is freed. Updating an existing key allocates nothing; a new key copies its
//! names only when they are new; metadata is copied only when it changes.

use rustc_hash::FxHashMap;

use crate::mm2::checkpoint;
use crate::mm2::fold::{self, Fold};
use crate::select::GroupSelector;
use crate::translate::{Entry, Folded, Key, NO_METADATA, SkipCounts};

/// Names (group ids or topics) interned to small ids, with a count of the keys using each, so
/// that a name no key uses any more is dropped and its id reused.
#[derive(Default)]
struct Names {
    ids: FxHashMap<Box<[u8]>, u32>,
    /// By id; an empty slot is free (and listed in `free`).
    names: Vec<Box<[u8]>>,
    /// Keys using each id.
    uses: Vec<u32>,
    free: Vec<u32>,
}

impl Names {
    fn get(&self, name: &[u8]) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// The id of `name`, taken for one more key.
    fn acquire(&mut self, name: &[u8]) -> u32 {
        let id = match self.ids.get(name) {
            Some(&id) => id,
            None => {
                let owned: Box<[u8]> = name.into();
                let id = match self.free.pop() {
                    Some(id) => {
                        self.names[id as usize] = owned.clone();
                        id
                    }
                    None => {
                        self.names.push(owned.clone());
                        self.uses.push(0);
                        (self.names.len() - 1) as u32
                    }
                };
                self.ids.insert(owned, id);
                id
            }
        };
        self.uses[id as usize] += 1;
        id
    }

    /// One key fewer uses `id`; the name goes when none does.
    fn release(&mut self, id: u32) {
        let uses = &mut self.uses[id as usize];
        *uses -= 1;
        if *uses == 0 {
            let name = std::mem::take(&mut self.names[id as usize]);
            self.ids.remove(&name);
            self.free.push(id);
        }
    }

    fn live(&self) -> usize {
        self.ids.len()
    }
}

/// The latest checkpoint of one live key.
struct LiveEntry {
    upstream_offset: i64,
    downstream_offset: i64,
    timestamp: i64,
    checkpoint_offset: i64,
    checkpoint_partition: i32,
    /// The value's version was not 0: shown, never written from (the translator's flag).
    nonzero_version: bool,
    /// Empty (no allocation) when the group committed no metadata, the common case.
    metadata: Box<[u8]>,
}

/// What applying one record did, for the watcher's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Applied {
    /// A key was set or updated.
    Set,
    /// A tombstone removed a key (or named one that was not there).
    Removed,
    /// The group is not selected.
    Unselected,
    /// Skipped; the reason is counted in the map's skip counts.
    Skipped,
}

/// The live map of one source's checkpoints topic.
pub(crate) struct LiveMap {
    selector: GroupSelector,
    /// Whether each group id seen is selected, decided once per distinct name. Only the
    /// unselected ones are kept here (selected ones live in `groups` while they have keys), so
    /// this is bounded by the distinct unselected groups in the topic.
    unselected: FxHashMap<Box<[u8]>, ()>,
    groups: Names,
    topics: Names,
    entries: FxHashMap<(u32, u32, i32), LiveEntry>,
    pub(crate) skipped: SkipCounts,
    /// The newest checkpoint record timestamp seen (ms), tombstones excluded.
    pub(crate) newest_checkpoint_ms: Option<i64>,
}

impl LiveMap {
    pub(crate) fn new(selector: GroupSelector) -> Self {
        LiveMap {
            selector,
            unselected: FxHashMap::default(),
            groups: Names::default(),
            topics: Names::default(),
            entries: FxHashMap::default(),
            skipped: SkipCounts::default(),
            newest_checkpoint_ms: None,
        }
    }

    /// The number of live keys.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The number of groups with at least one live key.
    pub(crate) fn group_count(&self) -> usize {
        self.groups.live()
    }

    fn selected(&mut self, group: &[u8]) -> bool {
        if self.groups.get(group).is_some() {
            return true;
        }
        if self.unselected.contains_key(group) {
            return false;
        }
        // Java decodes group ids leniently; so do we, once per distinct group.
        let selected = self.selector.matches(&crate::mm2::utf8::lossy(group));
        if !selected {
            self.unselected.insert(group.into(), ());
        }
        selected
    }

    /// Applies one record of checkpoints partition `partition` at `offset`, in log order, by
    /// the one rule of [`fold::classify`] (the translator's too).
    pub(crate) fn apply(
        &mut self,
        partition: i32,
        offset: i64,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Applied {
        let fold = fold::classify(key, value, |group| self.selected(group));
        if let Some(reason) = fold.counted() {
            self.skipped.add(reason, partition, offset);
        }
        let (key, value) = match fold {
            Fold::Set(key, value) => (key, value),
            Fold::Delete(key) => {
                self.remove(key.group, key.topic, key.partition);
                return Applied::Removed;
            }
            Fold::Skip(_) => return Applied::Skipped,
            Fold::Unselected => return Applied::Unselected,
        };
        self.newest_checkpoint_ms = Some(
            self.newest_checkpoint_ms
                .map_or(timestamp, |t| t.max(timestamp)),
        );
        let ids = (self.groups.get(key.group), self.topics.get(key.topic));
        if let (Some(g), Some(t)) = ids
            && let Some(entry) = self.entries.get_mut(&(g, t, key.partition))
        {
            update(entry, timestamp, partition, offset, &value);
            return Applied::Set;
        }
        let g = self.groups.acquire(key.group);
        let t = self.topics.acquire(key.topic);
        self.entries.insert(
            (g, t, key.partition),
            LiveEntry {
                upstream_offset: value.upstream_offset,
                downstream_offset: value.downstream_offset,
                timestamp,
                checkpoint_offset: offset,
                checkpoint_partition: partition,
                nonzero_version: value.version != 0,
                metadata: value.metadata.into(),
            },
        );
        Applied::Set
    }

    fn remove(&mut self, group: &[u8], topic: &[u8], partition: i32) {
        let (Some(g), Some(t)) = (self.groups.get(group), self.topics.get(topic)) else {
            return;
        };
        if self.entries.remove(&(g, t, partition)).is_some() {
            self.groups.release(g);
            self.topics.release(t);
        }
    }

    /// The oldest checkpoint timestamp (ms) of each group with live keys, by group name.
    pub(crate) fn oldest_checkpoint_per_group(&self) -> Vec<(String, i64)> {
        let mut oldest: FxHashMap<u32, i64> = FxHashMap::default();
        for (&(g, _, _), entry) in &self.entries {
            let slot = oldest.entry(g).or_insert(entry.timestamp);
            *slot = (*slot).min(entry.timestamp);
        }
        let mut out: Vec<(String, i64)> = oldest
            .into_iter()
            .map(|(g, ts)| {
                let name = crate::mm2::utf8::lossy(&self.groups.names[g as usize]).into_owned();
                (name, ts)
            })
            .collect();
        out.sort();
        out
    }

    /// A copy of the live keys in the shape the one-shot read produces, for
    /// `OffsetTable::build`: the copy is what a snapshot owns, so the tail goes on updating
    /// the map while the snapshot is served.
    pub(crate) fn to_folded(&self) -> Folded {
        let mut slots: Vec<FxHashMap<Key, u32>> = (0..self.groups.names.len())
            .map(|_| FxHashMap::default())
            .collect();
        let mut entries = Vec::with_capacity(self.entries.len());
        let mut metadata = Vec::new();
        for (&(g, t, partition), live) in &self.entries {
            let index = entries.len() as u32;
            let meta = if live.metadata.is_empty() {
                NO_METADATA
            } else {
                metadata.push(live.metadata.clone());
                (metadata.len() - 1) as u32
            };
            entries.push(Entry {
                upstream_offset: live.upstream_offset,
                downstream_offset: live.downstream_offset,
                timestamp: live.timestamp,
                offset: live.checkpoint_offset,
                partition: live.checkpoint_partition,
                metadata: meta,
                live: true,
                nonzero_version: live.nonzero_version,
            });
            slots[g as usize].insert((t, partition), index);
        }
        Folded {
            group_names: self.groups.names.clone(),
            topic_names: self.topics.names.clone(),
            slots,
            entries,
            metadata,
        }
    }
}

fn update(
    entry: &mut LiveEntry,
    timestamp: i64,
    partition: i32,
    offset: i64,
    value: &checkpoint::CheckpointValue<'_>,
) {
    entry.upstream_offset = value.upstream_offset;
    entry.downstream_offset = value.downstream_offset;
    entry.timestamp = timestamp;
    entry.checkpoint_partition = partition;
    entry.checkpoint_offset = offset;
    entry.nonzero_version = value.version != 0;
    // The common case is unchanged metadata: no allocation.
    if entry.metadata.as_ref() != value.metadata {
        entry.metadata = value.metadata.into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm2::fold::SkipReason;
    use crate::translate::OffsetTable;

    fn key(group: &str, topic: &str, partition: i32) -> Vec<u8> {
        checkpoint::encode_key(&checkpoint::CheckpointKey {
            group: group.as_bytes(),
            topic: topic.as_bytes(),
            partition,
        })
        .unwrap()
    }

    fn value(downstream: i64, metadata: &str) -> Vec<u8> {
        checkpoint::encode_value(&checkpoint::CheckpointValue {
            version: 0,
            upstream_offset: downstream + 10,
            downstream_offset: downstream,
            metadata: metadata.as_bytes(),
        })
        .unwrap()
    }

    fn rows(map: &LiveMap) -> Vec<(String, String, i32, i64, String)> {
        OffsetTable::build(vec![("s".into(), map.to_folded())])
            .iter()
            .map(|o| {
                (
                    o.group.into(),
                    o.topic.into(),
                    o.partition,
                    o.offset,
                    o.metadata.into(),
                )
            })
            .collect()
    }

    #[test]
    fn updates_replace_and_tombstones_remove_keys_and_free_names() {
        let mut map = LiveMap::new(GroupSelector::all());
        let k = key("g", "t", 0);
        assert_eq!(
            map.apply(0, 0, 5, Some(&k), Some(&value(1, "a"))),
            Applied::Set
        );
        assert_eq!(
            map.apply(0, 1, 6, Some(&k), Some(&value(2, "b"))),
            Applied::Set
        );
        map.apply(0, 2, 7, Some(&key("h", "t", 1)), Some(&value(3, "")));
        assert_eq!(
            rows(&map),
            vec![
                ("g".into(), "t".into(), 0, 2, "b".into()),
                ("h".into(), "t".into(), 1, 3, String::new())
            ]
        );
        assert_eq!(map.newest_checkpoint_ms, Some(7));
        assert_eq!(map.apply(0, 3, 8, Some(&k), None), Applied::Removed);
        assert_eq!(map.len(), 1);
        assert_eq!(map.group_count(), 1, "group g has no key left and is freed");
        assert_eq!(map.groups.get(b"g"), None);
        // The topic is still used by h's key.
        assert!(map.topics.get(b"t").is_some());
        map.apply(0, 4, 9, Some(&key("h", "t", 1)), None);
        assert_eq!((map.len(), map.group_count(), map.topics.live()), (0, 0, 0));
        assert!(rows(&map).is_empty());
        // A freed id is reused, and the name behind it is the new one.
        map.apply(0, 5, 10, Some(&key("x", "u", 2)), Some(&value(4, "")));
        assert_eq!(
            rows(&map),
            vec![("x".into(), "u".into(), 2, 4, String::new())]
        );
        assert_eq!(map.groups.names.len(), 2, "no new slot while one is free");
    }

    #[test]
    fn memory_is_bounded_by_live_keys_under_churn() {
        let mut map = LiveMap::new(GroupSelector::all());
        let mut offset = 0;
        for round in 0..50 {
            for g in 0..20 {
                let group = format!("g{round}-{g}");
                let k = key(&group, "t", 0);
                map.apply(0, offset, offset, Some(&k), Some(&value(offset, "")));
                offset += 1;
                map.apply(0, offset, offset, Some(&k), None);
                offset += 1;
            }
        }
        assert_eq!(map.len(), 0);
        assert!(map.groups.names.len() <= 1, "{}", map.groups.names.len());
    }

    #[test]
    fn unselected_groups_are_not_kept_and_bad_records_are_counted() {
        let mut map = LiveMap::new(GroupSelector::ids(["keep"]));
        let unselected = map.apply(0, 0, 1, Some(&key("drop", "t", 0)), Some(b"\x00"));
        assert_eq!(unselected, Applied::Unselected);
        assert_eq!(
            map.apply(0, 1, 1, None, Some(&value(1, ""))),
            Applied::Skipped
        );
        let bad_value = map.apply(0, 2, 1, Some(&key("keep", "t", 0)), Some(b"\x00"));
        assert_eq!(bad_value, Applied::Skipped);
        assert_eq!(map.skipped.count(SkipReason::NullKey), 1);
        assert_eq!(map.skipped.count(SkipReason::UndecodableValue), 1);
        assert_eq!(map.len(), 0);
        map.apply(0, 3, 1, Some(&key("keep", "t", 0)), Some(&value(9, "")));
        assert_eq!(
            map.oldest_checkpoint_per_group(),
            vec![("keep".to_string(), 1)]
        );
    }

    /// The one rule, applied twice: the same records give the translator's report and the live
    /// map the same counts and first positions, for every reason and for unselected groups.
    #[test]
    fn the_translator_and_the_live_map_count_the_same_records_alike() {
        use crate::records::builder::BatchBuilder;
        use crate::translate::BatchTranslator;

        let keep = key("keep", "t", 0);
        let other = key("other", "t", 0);
        type Record = (Option<Vec<u8>>, Option<Vec<u8>>);
        let records: Vec<Record> = vec![
            (Some(keep.clone()), Some(value(1, ""))),
            (None, Some(value(1, ""))),
            (Some(b"\x00\x09ab".to_vec()), Some(value(1, ""))),
            (Some(keep.clone()), Some(b"\x00".to_vec())),
            (Some(other.clone()), Some(b"\x00".to_vec())),
            (Some(keep.clone()), None),
            (Some(other.clone()), None),
            (Some(keep.clone()), Some(value(-2, ""))),
            (Some(other.clone()), Some(value(-2, ""))),
            (
                Some(keep.clone()),
                Some(
                    checkpoint::encode_value(&checkpoint::CheckpointValue {
                        version: 2,
                        upstream_offset: 9,
                        downstream_offset: 8,
                        metadata: b"",
                    })
                    .unwrap(),
                ),
            ),
        ];
        let mut batch = BatchBuilder::new(100);
        for (k, v) in &records {
            batch = batch.record(k.as_deref(), v.as_deref());
        }
        let selector = GroupSelector::ids(["keep"]);
        let mut translator = BatchTranslator::new(&selector);
        translator.add_batches(3, &batch.build()).unwrap();
        let translated = translator.finish("s").report.skipped;

        let mut map = LiveMap::new(selector.clone());
        for (offset, (k, v)) in records.iter().enumerate() {
            map.apply(3, 100 + offset as i64, 0, k.as_deref(), v.as_deref());
        }
        assert_eq!(map.skipped, translated);
        // One of each reason, from the selected group or a key that names none; nothing of
        // the unselected group's garbage, tombstone or negative offset.
        for reason in SkipReason::ALL {
            assert_eq!(translated.count(reason), 1, "{reason:?}");
        }
        assert_eq!(translated.0[&SkipReason::Tombstone].first, [(3, 105)]);
    }

    /// A checkpoint of value version 99 reaches watch's apply loop flagged, as the one-shot
    /// read flags it, so that the loop refuses it (`unknown-checkpoint-version`); a later
    /// version-0 checkpoint of the same key clears the flag.
    #[test]
    fn a_nonzero_version_is_carried_to_the_table_and_cleared_by_a_version_0() {
        let versioned = |version: i16, downstream: i64| {
            checkpoint::encode_value(&checkpoint::CheckpointValue {
                version,
                upstream_offset: downstream + 10,
                downstream_offset: downstream,
                metadata: b"",
            })
            .unwrap()
        };
        let flags = |map: &LiveMap| -> Vec<(String, i32, i64, bool)> {
            OffsetTable::build(vec![("s".into(), map.to_folded())])
                .iter()
                .map(|o| (o.group.into(), o.partition, o.offset, o.unknown_version))
                .collect()
        };
        let mut map = LiveMap::new(GroupSelector::all());
        map.apply(0, 0, 1, Some(&key("g", "t", 0)), Some(&versioned(99, 5)));
        map.apply(0, 1, 1, Some(&key("g", "t", 1)), Some(&versioned(0, 6)));
        assert_eq!(
            flags(&map),
            vec![("g".into(), 0, 5, true), ("g".into(), 1, 6, false)]
        );
        // The watch loop plans from this table: the flagged row is refused, as apply refuses it.
        map.apply(0, 2, 2, Some(&key("g", "t", 0)), Some(&versioned(0, 7)));
        map.apply(0, 3, 2, Some(&key("g", "t", 1)), Some(&versioned(99, 8)));
        assert_eq!(
            flags(&map),
            vec![("g".into(), 0, 7, false), ("g".into(), 1, 8, true)]
        );
    }
}
