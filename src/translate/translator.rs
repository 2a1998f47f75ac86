//! The translator: folds checkpoint records into the latest checkpoint per
//! (group, topic, partition) by the rule of [`crate::mm2::fold`] (the live map of `watch`
//! applies the same one), deciding each distinct group once and decoding the value only for
//! selected groups.
//!
//! One [`Accumulator`] serves one offset range of one checkpoints-topic partition, so workers
//! never share state; `table::OffsetTable::from_parts` combines their outputs.

use std::collections::BTreeMap;
use std::hash::Hasher;

use hashbrown::HashTable;
use rustc_hash::FxHashMap;

use super::report::SkipCounts;
use crate::mm2::fold::{self, Fold};
use crate::select::GroupSelector;

/// Distinct byte strings numbered in order of first sight. Looking up a borrowed slice does not
/// allocate; only a new name is copied.
#[derive(Default)]
pub(crate) struct Interner {
    ids: FxHashMap<Box<[u8]>, u32>,
    names: Vec<Box<[u8]>>,
    /// The last name looked up: MM2 writes a group's checkpoints together and a topic's
    /// partitions together, so most lookups repeat it and cost a compare instead of a hash.
    last: Option<u32>,
}

impl Interner {
    /// The id of `name` and whether it is new. The check against the last name is inlined
    /// into the record loop; the hash lookup is not.
    #[inline(always)]
    pub(crate) fn get_or_insert(&mut self, name: &[u8]) -> (u32, bool) {
        if let Some(last) = self.last
            && same_bytes(&self.names[last as usize], name)
        {
            return (last, false);
        }
        self.lookup(name)
    }

    /// The names by id.
    pub(crate) fn into_names(self) -> Vec<Box<[u8]>> {
        self.names
    }

    #[inline(never)]
    fn lookup(&mut self, name: &[u8]) -> (u32, bool) {
        let (id, new) = match self.ids.get(name) {
            Some(&id) => (id, false),
            None => {
                let id = self.names.len() as u32;
                let owned: Box<[u8]> = name.into();
                self.names.push(owned.clone());
                self.ids.insert(owned, id);
                (id, true)
            }
        };
        self.last = Some(id);
        (id, new)
    }
}

/// Whether two short byte strings are equal, compared eight bytes at a time in line: group and
/// topic names are 10-40 bytes, where a call to libc's `memcmp` costs more than the compare.
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (a8, a_rest) = a.as_chunks::<8>();
    let (b8, b_rest) = b.as_chunks::<8>();
    a8.iter()
        .zip(b8)
        .all(|(x, y)| u64::from_ne_bytes(*x) == u64::from_ne_bytes(*y))
        && a_rest.iter().zip(b_rest).all(|(x, y)| x == y)
}

/// Key of a group's slots in a [`Folded`]: (topic id, partition).
pub(crate) type Key = (u32, i32);

/// `Entry::metadata` of a key whose metadata has always been empty.
pub(crate) const NO_METADATA: u32 = u32::MAX;

/// The latest checkpoint of one key in a [`Folded`], the form the live map of `watch` hands to
/// `OffsetTable::build`. Non-empty metadata lives in `Folded::metadata`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub(crate) upstream_offset: i64,
    pub(crate) downstream_offset: i64,
    /// The winning record's timestamp, partition and offset in the checkpoints topic.
    pub(crate) timestamp: i64,
    pub(crate) offset: i64,
    pub(crate) partition: i32,
    /// Index in `Folded::metadata`, or [`NO_METADATA`].
    pub(crate) metadata: u32,
    /// False after a tombstone.
    pub(crate) live: bool,
    /// The winning checkpoint's value version was not 0 (see [`NONZERO_VERSION`]): carried so
    /// that `watch`'s apply loop refuses it as `apply` does (`unknown-checkpoint-version`).
    pub(crate) nonzero_version: bool,
}

/// Latest checkpoints by interned group and topic ids, as the live map of `watch` builds them.
pub(crate) struct Folded {
    /// Group names by id, as read (not yet decoded).
    pub(crate) group_names: Vec<Box<[u8]>>,
    /// Topic names by id, as read.
    pub(crate) topic_names: Vec<Box<[u8]>>,
    /// Per group id: (topic id, partition) -> index in `entries`.
    pub(crate) slots: Vec<FxHashMap<Key, u32>>,
    pub(crate) entries: Vec<Entry>,
    /// Non-empty commit metadata, indexed by `Entry::metadata`.
    pub(crate) metadata: Vec<Box<[u8]>>,
}

/// [`Latest::topic`]'s bit for "not deleted by a tombstone".
const LIVE: u32 = 1 << 31;
/// [`Latest::topic`]'s bit for "has non-empty metadata in [`Part::metadata`]".
const HAS_METADATA: u32 = 1 << 30;
/// [`Latest::topic`]'s bit for "the winning checkpoint's value version is not 0": decoded as
/// version 0, as Java does, shown and counted, never written from by apply.
const NONZERO_VERSION: u32 = 1 << 29;
/// Topic ids fit below the flag bits: more than 2^29 distinct topic names would take 20 GiB of
/// names first.
const TOPIC_ID: u32 = NONZERO_VERSION - 1;
/// [`Latest::offset`] of a checkpoint whose offset is not `Part::base` plus a `u32`: its offset
/// is in [`Part::wide`].
pub(crate) const WIDE_OFFSET: u32 = u32::MAX;

/// A key of a [`Part`]: (group id, topic id, partition).
pub(crate) type PartKey = (u32, u32, i32);

/// The latest checkpoint of one key, with its key, as the read keeps a million of them: 40
/// bytes, one flat block. What is rare lives beside it, found by key: non-empty metadata
/// ([`Part::metadata`]) and a checkpoint offset that is not `base + u32` ([`Part::wide`]). The
/// checkpoint partition is the part's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Latest {
    pub(crate) upstream_offset: i64,
    pub(crate) downstream_offset: i64,
    /// The winning record's timestamp.
    pub(crate) timestamp: i64,
    /// The winning record's offset minus `Part::base`, or [`WIDE_OFFSET`].
    pub(crate) offset: u32,
    pub(crate) group: u32,
    /// Topic id, with the [`LIVE`] and [`HAS_METADATA`] flags.
    topic: u32,
    pub(crate) partition: i32,
}

impl Latest {
    pub(crate) fn topic(&self) -> u32 {
        self.topic & TOPIC_ID
    }

    pub(crate) fn set_topic(&mut self, topic: u32) {
        self.topic = (self.topic & !TOPIC_ID) | (topic & TOPIC_ID);
    }

    pub(crate) fn live(&self) -> bool {
        self.topic & LIVE != 0
    }

    pub(crate) fn has_metadata(&self) -> bool {
        self.topic & HAS_METADATA != 0
    }

    /// Whether the winning checkpoint's value version was not 0.
    pub(crate) fn nonzero_version(&self) -> bool {
        self.topic & NONZERO_VERSION != 0
    }

    pub(crate) fn key(&self) -> PartKey {
        (self.group, self.topic(), self.partition)
    }

    fn set_flag(&mut self, flag: u32, on: bool) {
        if on {
            self.topic |= flag;
        } else {
            self.topic &= !flag;
        }
    }
}

/// The latest checkpoints one accumulator folded (one offset range of one checkpoints
/// partition), or one checkpoints partition of a [`Folded`].
#[derive(Clone, Debug, Default)]
pub(crate) struct Part {
    /// Group names by id, as read (not yet decoded).
    pub(crate) group_names: Vec<Box<[u8]>>,
    /// Topic names by id, as read.
    pub(crate) topic_names: Vec<Box<[u8]>>,
    /// The checkpoints partition every entry was read from.
    pub(crate) checkpoint_partition: i32,
    /// The base of [`Latest::offset`].
    pub(crate) base: i64,
    pub(crate) entries: Vec<Latest>,
    /// Non-empty commit metadata, by key.
    pub(crate) metadata: FxHashMap<PartKey, Box<[u8]>>,
    /// Checkpoint offsets that are not `base + u32`, by key.
    pub(crate) wide: FxHashMap<PartKey, i64>,
}

impl Part {
    /// The checkpoint offset of `entry`.
    pub(crate) fn offset(&self, entry: &Latest) -> i64 {
        match entry.offset {
            WIDE_OFFSET => self.wide.get(&entry.key()).copied().unwrap_or(self.base),
            delta => self.base + i64::from(delta),
        }
    }

    /// The parts of owned offsets of one source, one per checkpoints partition, as if each
    /// offset were the winning checkpoint read there: what a re-translation's added rows (and
    /// tests) build a table from. Keys must be unique.
    pub(crate) fn from_owned(offsets: &[super::TranslatedOffset]) -> Vec<Part> {
        let mut parts: BTreeMap<i32, Part> = BTreeMap::new();
        let mut groups: BTreeMap<&str, u32> = BTreeMap::new();
        let mut topics: BTreeMap<&str, u32> = BTreeMap::new();
        for o in offsets {
            let next = groups.len() as u32;
            groups.entry(o.group.as_str()).or_insert(next);
            let next = topics.len() as u32;
            topics.entry(o.topic.as_str()).or_insert(next);
            let part = parts.entry(o.checkpoint_partition).or_insert_with(|| Part {
                checkpoint_partition: o.checkpoint_partition,
                base: o.checkpoint_offset,
                ..Part::default()
            });
            part.base = part.base.min(o.checkpoint_offset);
        }
        for o in offsets {
            let part = parts
                .get_mut(&o.checkpoint_partition)
                .expect("a part for every checkpoints partition");
            let (group, topic) = (groups[o.group.as_str()], topics[o.topic.as_str()]);
            let key = (group, topic, o.partition);
            let delta = o
                .checkpoint_offset
                .checked_sub(part.base)
                .and_then(|d| u32::try_from(d).ok())
                .filter(|&d| d != WIDE_OFFSET);
            let mut latest = Latest {
                upstream_offset: o.upstream_offset,
                downstream_offset: o.offset,
                timestamp: o.checkpoint_timestamp,
                offset: delta.unwrap_or(WIDE_OFFSET),
                group,
                topic,
                partition: o.partition,
            };
            latest.set_flag(LIVE, true);
            latest.set_flag(NONZERO_VERSION, o.unknown_version);
            if delta.is_none() {
                part.wide.insert(key, o.checkpoint_offset);
            }
            if !o.metadata.is_empty() {
                latest.set_flag(HAS_METADATA, true);
                part.metadata.insert(key, o.metadata.as_bytes().into());
            }
            part.entries.push(latest);
        }
        let names = |ids: BTreeMap<&str, u32>| {
            let mut names = vec![Box::<[u8]>::default(); ids.len()];
            for (name, id) in ids {
                names[id as usize] = name.as_bytes().into();
            }
            names
        };
        let (group_names, topic_names) = (names(groups), names(topics));
        parts
            .into_values()
            .map(|mut p| {
                p.group_names = group_names.clone();
                p.topic_names = topic_names.clone();
                p
            })
            .collect()
    }

    /// The parts of a [`Folded`], one per checkpoints partition its entries came from (the live
    /// map of `watch` holds every partition's keys in one).
    pub(crate) fn from_folded(folded: Folded) -> Vec<Part> {
        // Each partition's offsets are stored past its smallest one, as the read stores them
        // past its range's first record.
        let mut bases: BTreeMap<i32, i64> = BTreeMap::new();
        for e in &folded.entries {
            let base = bases.entry(e.partition).or_insert(e.offset);
            *base = (*base).min(e.offset);
        }
        let mut parts: BTreeMap<i32, Part> = BTreeMap::new();
        for (group, slots) in folded.slots.iter().enumerate() {
            for (&(topic, partition), &index) in slots {
                let e = folded.entries[index as usize];
                let base = bases.get(&e.partition).copied().unwrap_or(0);
                let part = parts.entry(e.partition).or_insert_with(|| Part {
                    checkpoint_partition: e.partition,
                    base,
                    ..Part::default()
                });
                let key = (group as u32, topic, partition);
                let delta = e
                    .offset
                    .checked_sub(base)
                    .and_then(|d| u32::try_from(d).ok())
                    .filter(|&d| d != WIDE_OFFSET);
                let mut latest = Latest {
                    upstream_offset: e.upstream_offset,
                    downstream_offset: e.downstream_offset,
                    timestamp: e.timestamp,
                    offset: delta.unwrap_or(WIDE_OFFSET),
                    group: group as u32,
                    topic,
                    partition,
                };
                latest.set_flag(LIVE, e.live);
                latest.set_flag(NONZERO_VERSION, e.nonzero_version);
                if delta.is_none() {
                    part.wide.insert(key, e.offset);
                }
                if e.metadata != NO_METADATA {
                    let metadata = folded.metadata[e.metadata as usize].clone();
                    if !metadata.is_empty() {
                        latest.set_flag(HAS_METADATA, true);
                        part.metadata.insert(key, metadata);
                    }
                }
                part.entries.push(latest);
            }
        }
        parts
            .into_values()
            .map(|mut p| {
                p.group_names = folded.group_names.clone();
                p.topic_names = folded.topic_names.clone();
                p
            })
            .collect()
    }
}

/// One worker's partial translation: one offset range of one checkpoints partition.
pub(crate) struct Accumulator<'a> {
    selector: &'a GroupSelector,
    groups: Interner,
    /// Per interned group: selected or not, decided once.
    selected: Vec<bool>,
    /// Per interned group: where its keys' latest checkpoints are in `entries` (indices, hashed
    /// by the key the entry holds). One small table per group rather than one keyed by (group,
    /// topic, partition): MM2 writes a group's checkpoints together, so the group's table stays
    /// in cache for its run, where one big table costs a cache miss per record. Four bytes a
    /// key: the key itself is in the entry.
    slots: Vec<HashTable<u32>>,
    part: Part,
    topics: Interner,
    /// The checkpoints partition, from the first record.
    partition: Option<i32>,
    pub(crate) skipped: SkipCounts,
    pub(crate) records: u64,
}

/// The hash of a key within its group.
#[inline(always)]
fn slot_hash(topic: u32, partition: i32) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    h.write_u64((u64::from(topic) << 32) | u64::from(partition as u32));
    h.finish()
}

impl<'a> Accumulator<'a> {
    pub(crate) fn new(selector: &'a GroupSelector) -> Self {
        Accumulator {
            selector,
            groups: Interner::default(),
            selected: Vec::new(),
            slots: Vec::new(),
            part: Part::default(),
            topics: Interner::default(),
            partition: None,
            skipped: SkipCounts::default(),
            records: 0,
        }
    }

    #[inline]
    fn group_id(&mut self, group: &[u8]) -> (u32, bool) {
        let (id, new) = self.groups.get_or_insert(group);
        if new {
            // Java decodes group ids leniently (invalid UTF-8 becomes U+FFFD) and selects by
            // that; so do we, once per distinct group, and by the escaped name the rows show
            // such an id with (`mm2::utf8::escaped`) too.
            let name = crate::mm2::utf8::lossy(group);
            let selected = self.selector.matches(&name)
                || (std::str::from_utf8(group).is_err()
                    && self.selector.matches(&crate::mm2::utf8::escaped(group)));
            self.selected.push(selected);
            // Size a selected group's table like the previous group's: groups of one
            // deployment tend to commit alike, and growing a table step by step rehashes it
            // each time. Capped, so a large group followed by small ones wastes little.
            let hint = match self.slots.last() {
                Some(previous) if selected => previous.len().min(1024),
                _ => 0,
            };
            self.slots.push(HashTable::with_capacity(hint));
        }
        (id, self.selected[id as usize])
    }

    /// Folds in one record of checkpoints partition `partition` at `offset`, by the one rule
    /// of [`fold::classify`]. Every record of an accumulator comes from one partition (a reader
    /// of several keeps one accumulator each).
    #[inline]
    pub(crate) fn add(
        &mut self,
        partition: i32,
        offset: i64,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) {
        self.records += 1;
        if self.partition.is_none() {
            self.partition = Some(partition);
            self.part.checkpoint_partition = partition;
            self.part.base = offset;
        }
        let mut group = 0;
        let fold = fold::classify(key, value, |name| {
            let (id, selected) = self.group_id(name);
            group = id;
            selected
        });
        if let Some(reason) = fold.counted() {
            self.skipped.add(reason, partition, offset);
        }
        let (key, value) = match fold {
            Fold::Set(key, value) => (key, Some(value)),
            Fold::Delete(key) => (key, None),
            Fold::Skip(_) | Fold::Unselected => return,
        };
        let (topic, _) = self.topics.get_or_insert(key.topic);
        let index = self.entry(group, topic, key.partition);
        self.set_position(index, timestamp, offset);
        let entry = &mut self.part.entries[index];
        let Some(value) = value else {
            // A tombstone: kept as a dead entry, so that a later range's tombstone deletes an
            // earlier range's checkpoint when ranges are combined.
            entry.set_flag(LIVE, false);
            if entry.has_metadata() {
                entry.set_flag(HAS_METADATA, false);
                let key = entry.key();
                self.part.metadata.remove(&key);
            }
            return;
        };
        entry.upstream_offset = value.upstream_offset;
        entry.downstream_offset = value.downstream_offset;
        entry.set_flag(LIVE, true);
        entry.set_flag(
            NONZERO_VERSION,
            value.version != crate::mm2::checkpoint::VERSION,
        );
        // Metadata is rare and usually unchanged: a newer checkpoint of the same key costs no
        // allocation and, without metadata, no lookup.
        let had = entry.has_metadata();
        if had || !value.metadata.is_empty() {
            let key = entry.key();
            entry.set_flag(HAS_METADATA, !value.metadata.is_empty());
            if value.metadata.is_empty() {
                self.part.metadata.remove(&key);
            } else {
                let stored = self.part.metadata.entry(key).or_default();
                if stored.as_ref() != value.metadata {
                    *stored = value.metadata.into();
                }
            }
        }
    }

    /// Records where the winning checkpoint of `index` is in the checkpoints partition.
    #[inline]
    fn set_position(&mut self, index: usize, timestamp: i64, offset: i64) {
        let entry = &mut self.part.entries[index];
        entry.timestamp = timestamp;
        let delta = offset
            .checked_sub(self.part.base)
            .and_then(|d| u32::try_from(d).ok())
            .filter(|&d| d != WIDE_OFFSET);
        match delta {
            Some(delta) => {
                if entry.offset == WIDE_OFFSET {
                    let key = entry.key();
                    self.part.wide.remove(&key);
                }
                entry.offset = delta;
            }
            None => {
                entry.offset = WIDE_OFFSET;
                let key = entry.key();
                self.part.wide.insert(key, offset);
            }
        }
    }

    /// The index in the entries of (`group`, `topic`, `partition`), created (dead, without
    /// metadata) on first sight.
    #[inline]
    fn entry(&mut self, group: u32, topic: u32, partition: i32) -> usize {
        let entries = &mut self.part.entries;
        let hash = slot_hash(topic, partition);
        let table = &mut self.slots[group as usize];
        let found = table.find(hash, |&i| {
            let e = &entries[i as usize];
            e.topic() == topic && e.partition == partition
        });
        if let Some(&index) = found {
            return index as usize;
        }
        // u32 indices: 2^32 distinct keys would take 160 GiB of entries first.
        let index = entries.len() as u32;
        entries.push(Latest {
            upstream_offset: 0,
            downstream_offset: 0,
            timestamp: 0,
            offset: 0,
            group,
            topic,
            partition,
        });
        table.insert_unique(hash, index, |&i| {
            let e = &entries[i as usize];
            slot_hash(e.topic(), e.partition)
        });
        index as usize
    }

    /// What was folded, for [`OffsetTable::from_parts`](super::table::OffsetTable::from_parts),
    /// with the skip counts and the number of records seen. The lookup tables are dropped
    /// here, before anything else is allocated: the entries carry their keys.
    pub(crate) fn into_part(self) -> (Part, SkipCounts, u64) {
        drop(self.slots);
        let mut part = self.part;
        part.group_names = self.groups.names;
        part.topic_names = self.topics.names;
        (part, self.skipped, self.records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm2::checkpoint;
    use crate::mm2::fold::SkipReason;
    use crate::translate::table::OffsetTable;

    fn key(group: &str, topic: &str, partition: i32) -> Vec<u8> {
        checkpoint::encode_key(&checkpoint::CheckpointKey {
            group: group.as_bytes(),
            topic: topic.as_bytes(),
            partition,
        })
        .unwrap()
    }

    fn value(upstream: i64, downstream: i64, metadata: &str) -> Vec<u8> {
        checkpoint::encode_value(&checkpoint::CheckpointValue {
            version: 0,
            upstream_offset: upstream,
            downstream_offset: downstream,
            metadata: metadata.as_bytes(),
        })
        .unwrap()
    }

    /// The live (group, topic, partition, downstream offset) rows, in the table's order.
    fn result(acc: Accumulator<'_>) -> Vec<(String, String, i32, i64)> {
        table(acc)
            .iter()
            .map(|o| (o.group.into(), o.topic.into(), o.partition, o.offset))
            .collect()
    }

    fn table(acc: Accumulator<'_>) -> OffsetTable {
        let (part, _, _) = acc.into_part();
        OffsetTable::from_parts(vec![("s".to_string(), part)])
    }

    #[test]
    fn last_record_wins_without_monotonicity() {
        let selector = GroupSelector::all();
        let mut acc = Accumulator::new(&selector);
        acc.add(0, 0, 1, Some(&key("g", "t", 0)), Some(&value(10, 20, "")));
        acc.add(0, 1, 2, Some(&key("g", "t", 0)), Some(&value(5, 7, "m")));
        assert_eq!(result(acc), vec![("g".into(), "t".into(), 0, 7)]);
    }

    #[test]
    fn unselected_groups_are_not_decoded_or_kept() {
        let selector = GroupSelector::ids(["keep"]);
        let mut acc = Accumulator::new(&selector);
        acc.add(0, 0, 1, Some(&key("keep", "t", 0)), Some(&value(1, 2, "")));
        // A garbage value for an unselected group is never looked at.
        acc.add(0, 1, 1, Some(&key("drop", "t", 0)), Some(b"\x00"));
        assert_eq!(acc.skipped.count(SkipReason::UndecodableValue), 0);
        assert_eq!(result(acc), vec![("keep".into(), "t".into(), 0, 2)]);
    }

    #[test]
    fn tombstones_delete_and_bad_records_are_counted() {
        let selector = GroupSelector::all();
        let mut acc = Accumulator::new(&selector);
        acc.add(0, 0, 1, Some(&key("g", "t", 0)), Some(&value(1, 2, "")));
        acc.add(0, 1, 1, Some(&key("g", "t", 0)), None);
        acc.add(0, 2, 1, None, Some(&value(1, 2, "")));
        acc.add(0, 3, 1, Some(b"\x00\x05ab"), Some(&value(1, 2, "")));
        acc.add(0, 4, 1, Some(&key("g", "t", 1)), Some(&value(1, -3, "")));
        acc.add(0, 5, 1, Some(&key("g", "t", 2)), Some(b"\x00\x00\x00"));
        assert_eq!(acc.skipped.count(SkipReason::Tombstone), 1);
        assert_eq!(acc.skipped.count(SkipReason::NullKey), 1);
        assert_eq!(acc.skipped.count(SkipReason::UndecodableKey), 1);
        assert_eq!(acc.skipped.count(SkipReason::NegativeDownstreamOffset), 1);
        assert_eq!(acc.skipped.count(SkipReason::UndecodableValue), 1);
        assert_eq!(acc.records, 6);
        // The tombstone deleted the only live key.
        assert_eq!(result(acc), vec![]);
    }

    #[test]
    fn a_checkpoint_after_a_tombstone_revives_the_key() {
        let selector = GroupSelector::all();
        let mut acc = Accumulator::new(&selector);
        acc.add(0, 0, 1, Some(&key("g", "t", 0)), None);
        acc.add(0, 1, 1, Some(&key("g", "t", 0)), Some(&value(3, 4, "x")));
        assert_eq!(result(acc), vec![("g".into(), "t".into(), 0, 4)]);
    }

    #[test]
    fn interleaved_groups_and_topics_keep_their_own_slots() {
        let selector = GroupSelector::all();
        let mut acc = Accumulator::new(&selector);
        let mut offset = 0;
        // Runs of one group and topic, then the same keys again after other groups: the
        // last-seen caches and per-group maps must not mix keys up.
        for round in 0..3i64 {
            for group in ["a", "b", "a", "c"] {
                for topic in ["t1", "t2", "t1"] {
                    for partition in 0..3 {
                        let down = round * 100 + partition as i64;
                        let meta = if round == 1 { "m" } else { "" };
                        acc.add(
                            0,
                            offset,
                            offset,
                            Some(&key(group, topic, partition)),
                            Some(&value(down, down, meta)),
                        );
                        offset += 1;
                    }
                }
            }
        }
        acc.add(0, offset, offset, Some(&key("b", "t2", 1)), None);
        let result = result(acc);
        // Every key of 3 groups x 2 topics x 3 partitions but the tombstoned one.
        assert_eq!(result.len(), 3 * 2 * 3 - 1);
        assert!(
            !result
                .iter()
                .any(|(g, t, p, _)| (g.as_str(), t.as_str(), *p) == ("b", "t2", 1))
        );
        for (group, topic, partition, down) in result {
            assert_eq!(
                down,
                200 + i64::from(partition),
                "{group} {topic} {partition}"
            );
        }
    }

    #[test]
    fn metadata_follows_the_latest_record() {
        let selector = GroupSelector::all();
        let mut acc = Accumulator::new(&selector);
        let steps: [(&str, Option<&str>); 6] = [
            ("t", Some("a")),
            ("t", Some("b")),
            ("u", Some("")),
            ("t", Some("")),
            ("t", None),
            ("t", Some("c")),
        ];
        for (offset, (topic, meta)) in steps.into_iter().enumerate() {
            let value = meta.map(|m| value(1, 2, m));
            acc.add(
                0,
                offset as i64,
                0,
                Some(&key("g", topic, 0)),
                value.as_deref(),
            );
        }
        let table = table(acc);
        let meta: Vec<(&str, &str)> = table.iter().map(|o| (o.topic, o.metadata)).collect();
        assert_eq!(meta, vec![("t", "c"), ("u", "")]);
    }

    #[test]
    fn offsets_come_sorted_by_name_not_by_first_sight() {
        let selector = GroupSelector::patterns(["[a-c]"]).unwrap();
        let mut acc = Accumulator::new(&selector);
        let mut offset = 0;
        for group in ["b", "x", "a", "c"] {
            for topic in ["z", "y"] {
                for partition in [2, 10, 1] {
                    let k = key(group, topic, partition);
                    acc.add(0, offset, 0, Some(&k), Some(&value(1, 2, "")));
                    offset += 1;
                }
            }
        }
        let got: Vec<(String, String, i32)> = result(acc)
            .into_iter()
            .map(|(g, t, p, _)| (g, t, p))
            .collect();
        let mut expected = got.clone();
        expected.sort();
        assert_eq!(got, expected);
        assert_eq!(got.len(), 3 * 2 * 3);
        assert_eq!(got[0], ("a".into(), "y".into(), 1));
        assert_eq!(got[2], ("a".into(), "y".into(), 10));
    }

    #[test]
    fn same_bytes_agrees_with_slice_equality() {
        let a: Vec<u8> = (0..40).collect();
        for len in 0..a.len() {
            assert!(same_bytes(&a[..len], &a[..len]));
            assert!(!same_bytes(&a[..len], &a[..len + 1]));
            for at in 0..len {
                let mut b = a[..len].to_vec();
                b[at] ^= 0x80;
                assert!(!same_bytes(&a[..len], &b), "len {len}, differs at {at}");
            }
        }
    }

    #[test]
    fn invalid_utf8_group_ids_are_selected_lossily_and_by_their_escaped_name() {
        let mut raw_key = vec![0x00, 0x02, b'a', 0xff];
        raw_key.extend_from_slice(&[0x00, 0x01, b't', 0, 0, 0, 0]);
        for id in ["a\u{fffd}", "a\\xff"] {
            let selector = GroupSelector::ids([id]);
            let mut acc = Accumulator::new(&selector);
            acc.add(0, 0, 1, Some(&raw_key), Some(&value(1, 2, "")));
            assert_eq!(
                result(acc),
                vec![("a\\xff".into(), "t".into(), 0, 2)],
                "{id}"
            );
        }
    }
}
