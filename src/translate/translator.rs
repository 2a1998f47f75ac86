//! The translator: folds checkpoint records into the latest checkpoint per
//! (group, topic, partition) by the rule of [`crate::mm2::fold`] (the live map of `watch`
//! applies the same one), deciding each distinct group once and decoding the value only for
//! selected groups.
//!
//! One [`Accumulator`] serves one offset range of one checkpoints-topic partition, so workers
//! never share state; `table::OffsetTable::build` combines their outputs.

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

/// Key of a group's slots: (topic id, partition), topic ids from the accumulator's interner.
pub(crate) type Key = (u32, i32);

/// `Entry::metadata` of a key whose metadata has always been empty.
pub(crate) const NO_METADATA: u32 = u32::MAX;

/// The latest checkpoint of one key, or the tombstone that deleted it, as the accumulator keeps
/// it: plain data, 48 bytes, so a million of them grow, move and drop as one block. Non-empty
/// metadata lives in `Accumulator::metadata`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub(crate) upstream_offset: i64,
    pub(crate) downstream_offset: i64,
    /// The winning record's timestamp, partition and offset in the checkpoints topic.
    pub(crate) timestamp: i64,
    pub(crate) offset: i64,
    pub(crate) partition: i32,
    /// Index in `Accumulator::metadata`, or [`NO_METADATA`]. Once a key has an index it keeps
    /// it, so the table holds at most one string per key however often metadata changes.
    pub(crate) metadata: u32,
    /// False after a tombstone; kept so a later range's tombstone can delete an earlier range's
    /// checkpoint when ranges are combined.
    pub(crate) live: bool,
}

/// One worker's partial translation.
pub(crate) struct Accumulator<'a> {
    selector: &'a GroupSelector,
    groups: Interner,
    /// Per interned group: selected or not, decided once.
    selected: Vec<bool>,
    /// Per interned group: where its keys' latest checkpoints are in `entries`. One small map
    /// per group rather than one map keyed by (group, topic, partition): MM2 writes a group's
    /// checkpoints together, so the group's map stays in cache for its run, where one big map
    /// costs a cache miss per record.
    slots: Vec<FxHashMap<Key, u32>>,
    /// The latest checkpoint per key, in order of first sight.
    entries: Vec<Entry>,
    /// Non-empty commit metadata, indexed by `Entry::metadata`.
    metadata: Vec<Box<[u8]>>,
    topics: Interner,
    pub(crate) skipped: SkipCounts,
    pub(crate) records: u64,
}

impl<'a> Accumulator<'a> {
    pub(crate) fn new(selector: &'a GroupSelector) -> Self {
        Accumulator {
            selector,
            groups: Interner::default(),
            selected: Vec::new(),
            slots: Vec::new(),
            entries: Vec::new(),
            metadata: Vec::new(),
            topics: Interner::default(),
            skipped: SkipCounts::default(),
            records: 0,
        }
    }

    #[inline]
    fn group_id(&mut self, group: &[u8]) -> (u32, bool) {
        let (id, new) = self.groups.get_or_insert(group);
        if new {
            // Java decodes group ids leniently (invalid UTF-8 becomes U+FFFD); so do we, once
            // per distinct group.
            let name = crate::mm2::utf8::lossy(group);
            let selected = self.selector.matches(&name);
            self.selected.push(selected);
            // Size a selected group's map like the previous group's: groups of one deployment
            // tend to commit alike, and growing a map step by step rehashes it each time.
            // Capped, so a large group followed by small ones wastes little.
            let hint = match self.slots.last() {
                Some(previous) if selected => previous.len().min(1024),
                _ => 0,
            };
            self.slots.push(FxHashMap::with_capacity_and_hasher(
                hint,
                Default::default(),
            ));
        }
        (id, self.selected[id as usize])
    }

    /// Folds in one record of checkpoints partition `partition` at `offset`, by the one rule
    /// of [`fold::classify`].
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
        let index = self.entry(group, (topic, key.partition));
        let entry = &mut self.entries[index];
        entry.timestamp = timestamp;
        entry.partition = partition;
        entry.offset = offset;
        entry.live = value.is_some();
        let stored = entry.metadata;
        let Some(value) = value else {
            // A tombstone: kept as a dead entry, so that a later range's tombstone deletes an
            // earlier range's checkpoint when ranges are combined.
            if stored != NO_METADATA {
                self.metadata[stored as usize] = Box::default();
            }
            return;
        };
        entry.upstream_offset = value.upstream_offset;
        entry.downstream_offset = value.downstream_offset;
        // Reuse the stored metadata when it did not change, which is the common case: a newer
        // checkpoint of the same group then costs no allocation.
        if stored != NO_METADATA {
            let stored = &mut self.metadata[stored as usize];
            if stored.as_ref() != value.metadata {
                *stored = value.metadata.into();
            }
        } else if !value.metadata.is_empty() {
            entry.metadata = self.metadata.len() as u32;
            self.metadata.push(value.metadata.into());
        }
    }

    /// The index in `entries` of `key` in `group`, created (dead, without metadata) on first
    /// sight.
    #[inline]
    fn entry(&mut self, group: u32, key: Key) -> usize {
        let entries = &mut self.entries;
        let index = *self.slots[group as usize].entry(key).or_insert_with(|| {
            // u32 indices: 2^32 distinct keys would take 200 GiB of entries first.
            let index = entries.len() as u32;
            entries.push(Entry {
                upstream_offset: 0,
                downstream_offset: 0,
                timestamp: 0,
                offset: 0,
                partition: 0,
                metadata: NO_METADATA,
                live: false,
            });
            index
        });
        index as usize
    }

    /// What was folded, for [`OffsetTable::build`](super::table::OffsetTable::build), with the
    /// skip counts and the number of records seen.
    pub(crate) fn into_folded(self) -> (Folded, SkipCounts, u64) {
        let folded = Folded {
            group_names: self.groups.names,
            topic_names: self.topics.names,
            slots: self.slots,
            entries: self.entries,
            metadata: self.metadata,
        };
        (folded, self.skipped, self.records)
    }
}

/// One accumulator's latest checkpoints, by interned group and topic ids.
pub(crate) struct Folded {
    /// Group names by id, as read (not yet decoded).
    pub(crate) group_names: Vec<Box<[u8]>>,
    /// Topic names by id, as read.
    pub(crate) topic_names: Vec<Box<[u8]>>,
    /// Per group id: (topic id, partition) -> index in `entries`. Empty for unselected groups.
    pub(crate) slots: Vec<FxHashMap<Key, u32>>,
    pub(crate) entries: Vec<Entry>,
    /// Non-empty commit metadata, indexed by `Entry::metadata`.
    pub(crate) metadata: Vec<Box<[u8]>>,
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
        let (folded, _, _) = acc.into_folded();
        OffsetTable::build(vec![("s".to_string(), folded)])
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
    fn invalid_utf8_group_ids_are_matched_lossily() {
        let selector = GroupSelector::ids(["a\u{fffd}"]);
        let mut acc = Accumulator::new(&selector);
        let mut raw_key = vec![0x00, 0x02, b'a', 0xff];
        raw_key.extend_from_slice(&[0x00, 0x01, b't', 0, 0, 0, 0]);
        acc.add(0, 0, 1, Some(&raw_key), Some(&value(1, 2, "")));
        assert_eq!(result(acc), vec![("a\u{fffd}".into(), "t".into(), 0, 2)]);
    }
}
