//! The translated offsets of one read, kept compact: every name once, and each offset the
//! 40-byte entry its accumulator folded, renumbered and sorted in place.
//!
//! A million offsets used to be a million structs with four owned strings each: about 300 bytes
//! and four allocations per offset. Then rows of ids pointing into the accumulators' values,
//! which still held a hash map slot per key and a 16-byte row on top of a 48-byte value. Here
//! the accumulators drop their lookup tables when they finish, their entries carry their keys,
//! names are decoded and sorted once per distinct name, each part is sorted in place, and the
//! parts of a source are merged as the output is written, a key's winner picked on the way.

use std::borrow::Cow;

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::offset::OffsetRef;
use super::translator::{Folded, Latest, Part, PartKey, WIDE_OFFSET};
use crate::client::{CONSUMER, GroupType};
use crate::mm2::utf8;

/// One part of the table: one accumulator's latest checkpoints, keys renumbered to the
/// table's name ranks and sorted, so that the parts of a source merge in order.
#[derive(Clone, Debug)]
struct SortedPart {
    checkpoint_partition: i32,
    base: i64,
    entries: Vec<Latest>,
    /// Decoded non-empty metadata, by (group rank, topic rank, partition).
    metadata: FxHashMap<PartKey, Box<str>>,
    /// Checkpoint offsets that are not `base + u32`, by (group rank, topic rank, partition).
    wide: FxHashMap<PartKey, i64>,
}

impl SortedPart {
    fn offset(&self, e: &Latest) -> i64 {
        match e.offset {
            WIDE_OFFSET => self.wide.get(&e.key()).copied().unwrap_or(self.base),
            delta => self.base + i64::from(delta),
        }
    }
}

/// The translated offsets of a read: sorted by source, group, topic and partition, one per key,
/// tombstoned keys left out. The parts are kept as the accumulators made them (40 bytes a key,
/// sorted in place); the winner of a key seen by several parts is picked as they are merged.
#[derive(Clone, Debug, Default)]
pub(crate) struct OffsetTable {
    sources: Vec<Box<str>>,
    groups: Vec<Box<str>>,
    topics: Vec<Box<str>>,
    /// Sorted by source (plan order within a source).
    parts: Vec<SortedPart>,
    /// Per source, in name order: its range of `parts`.
    blocks: Vec<(u32, std::ops::Range<usize>)>,
    /// Offsets (live winners).
    len: usize,
    /// The group ranks with at least one offset, sorted.
    live_groups: Vec<u32>,
    /// The groups whose id, as read, is not valid UTF-8: each decoded name (Java's, with
    /// U+FFFD) and the distinct byte strings behind it. Rare: empty in any sane read.
    not_utf8: std::collections::BTreeMap<Box<str>, Vec<Box<[u8]>>>,
    /// Each group's type, by group rank, where one is not a consumer group; empty when every
    /// group is (any checkpoint read: MirrorMaker 2 checkpoints consumer groups only).
    group_types: Vec<GroupType>,
}

/// Where one offset is: (part, entry).
type At = (usize, usize);

impl OffsetTable {
    /// Builds the table from the live map's [`Folded`] outputs, each given with its source alias.
    pub(crate) fn build(folded: Vec<(String, Folded)>) -> OffsetTable {
        let parts = folded
            .into_iter()
            .flat_map(|(source, f)| {
                Part::from_folded(f)
                    .into_iter()
                    .map(move |p| (source.clone(), p))
            })
            .collect();
        OffsetTable::from_parts(parts)
    }

    /// Builds the table from each accumulator's output, given with its source alias, in plan
    /// order (the order does not decide winners: log position and timestamps do).
    pub(crate) fn from_parts(mut parts: Vec<(String, Part)>) -> OffsetTable {
        let sources = sorted_unique(parts.iter().map(|(source, _)| source.as_str().into()));
        // Group names as the rows show them: valid UTF-8 as it is, and an id that is not
        // valid UTF-8 with its invalid bytes escaped, so that two different byte strings stay
        // two groups (Java's lenient decoding would make them one: apply never writes either).
        // Only groups with an entry count (the others were not selected).
        let groups = sorted_unique(parts.iter().flat_map(|(_, p)| {
            let mut used = vec![false; p.group_names.len()];
            for e in &p.entries {
                used[e.group as usize] = true;
            }
            p.group_names
                .iter()
                .zip(used)
                .filter(|(_, used)| *used)
                .map(|(name, _)| group_name(name))
                .collect::<Vec<_>>()
        }));
        let topics = sorted_unique(
            parts
                .iter()
                .flat_map(|(_, p)| p.topic_names.iter().map(|name| decode(name))),
        );
        // Decoded alike, they are one group to Java (and to the translation); apply must know
        // that the name is not what the checkpoints hold.
        let mut not_utf8: std::collections::BTreeMap<Box<str>, Vec<Box<[u8]>>> =
            std::collections::BTreeMap::new();
        for (_, p) in &parts {
            for name in p
                .group_names
                .iter()
                .filter(|n| std::str::from_utf8(n).is_err())
            {
                let raw = not_utf8.entry(group_name(name).into()).or_default();
                if !raw.contains(name) {
                    raw.push(name.clone());
                }
            }
        }
        // One source's parts together, in plan order within it.
        parts.sort_by_cached_key(|(source, _)| rank(&sources, source));
        let mut sorted = Vec::with_capacity(parts.len());
        let mut blocks: Vec<(u32, std::ops::Range<usize>)> = Vec::new();
        for (source, part) in parts {
            let source = rank(&sources, &source);
            match blocks.last_mut() {
                Some((s, range)) if *s == source => range.end += 1,
                _ => blocks.push((source, sorted.len()..sorted.len() + 1)),
            }
            sorted.push(sort_part(part, &groups, &topics));
        }
        let mut table = OffsetTable {
            sources,
            groups,
            topics,
            parts: sorted,
            blocks,
            len: 0,
            live_groups: Vec::new(),
            not_utf8,
            group_types: Vec::new(),
        };
        let mut live_groups: Vec<u32> = Vec::new();
        let mut len = 0;
        table.for_each_winner(None, |table, (p, i)| {
            len += 1;
            let group = table.parts[p].entries[i].group;
            if live_groups.last() != Some(&group) {
                live_groups.push(group);
            }
        });
        // Each source's winners are sorted by group; several sources need a sort.
        live_groups.sort_unstable();
        live_groups.dedup();
        table.len = len;
        table.live_groups = live_groups;
        table
    }

    /// The number of offsets.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Every offset, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = OffsetRef<'_>> + '_ {
        self.blocks.iter().flat_map(move |(source, range)| {
            let cursors = range
                .clone()
                .map(|p| (p, 0..self.parts[p].entries.len()))
                .collect();
            Winners::new(self, cursors).map(move |at| self.view(*source, at))
        })
    }

    /// The byte strings behind `group` when its id, as read, was not valid UTF-8 (`group` is
    /// then Java's lossy decoding of each of them).
    pub(crate) fn group_id_bytes(&self, group: &str) -> Option<&[Box<[u8]>]> {
        self.not_utf8.get(group).map(Vec::as_slice)
    }

    /// The distinct groups with at least one offset, sorted.
    pub(crate) fn groups(&self) -> Vec<&str> {
        self.live_groups
            .iter()
            .map(|&id| &*self.groups[id as usize])
            .collect()
    }

    /// The offsets of one group, from every source, found by binary search.
    pub(crate) fn group<'t>(&'t self, group: &str) -> impl Iterator<Item = OffsetRef<'t>> + 't {
        let id = self.groups.binary_search_by(|g| (**g).cmp(group)).ok();
        // An unknown group has no rows in any source.
        let blocks = if id.is_some() { &self.blocks[..] } else { &[] };
        let id = id.unwrap_or_default() as u32;
        blocks.iter().flat_map(move |(source, range)| {
            let cursors = range
                .clone()
                .map(|p| (p, self.group_range(p, id)))
                .collect();
            Winners::new(self, cursors).map(move |at| self.view(*source, at))
        })
    }

    /// Replaces each offset's (upstream, downstream) pair, in [`iter`](Self::iter)'s order:
    /// a re-translation (precise, or from the source's live offsets) turned back into a table
    /// the writers and `apply` already take. Each offset owns its entry (winners are unique).
    pub(crate) fn set_offsets(&mut self, pairs: impl IntoIterator<Item = (i64, i64)>) {
        // (part, entry) as u32s: 8 bytes an offset while the pairs are applied.
        let mut order: Vec<(u32, u32)> = Vec::with_capacity(self.len);
        self.for_each_winner(None, |_, (p, i)| order.push((p as u32, i as u32)));
        for ((p, i), (upstream, downstream)) in order.into_iter().zip(pairs) {
            let entry = &mut self.parts[p as usize].entries[i as usize];
            entry.upstream_offset = upstream;
            entry.downstream_offset = downstream;
        }
    }

    /// Sets each group's type from `types` (groups it does not name are consumer groups).
    pub(crate) fn set_group_types(&mut self, types: &BTreeMap<String, GroupType>) {
        if types.values().all(GroupType::is_consumer) && self.group_types.is_empty() {
            return;
        }
        self.group_types = self
            .groups
            .iter()
            .map(|g| types.get(&**g).cloned().unwrap_or_default())
            .collect();
    }

    /// Calls `f` with every winner, in order (of `group` only, when given).
    fn for_each_winner(&self, group: Option<u32>, mut f: impl FnMut(&OffsetTable, At)) {
        for (_, range) in &self.blocks {
            let cursors = range
                .clone()
                .map(|p| match group {
                    Some(g) => (p, self.group_range(p, g)),
                    None => (p, 0..self.parts[p].entries.len()),
                })
                .collect();
            for at in Winners::new(self, cursors) {
                f(self, at);
            }
        }
    }

    /// The entries of part `p` that belong to `group`.
    fn group_range(&self, p: usize, group: u32) -> std::ops::Range<usize> {
        let entries = &self.parts[p].entries;
        let start = entries.partition_point(|e| e.group < group);
        let end = entries.partition_point(|e| e.group <= group);
        start..end
    }

    fn view(&self, source: u32, (p, i): At) -> OffsetRef<'_> {
        let part = &self.parts[p];
        let entry = &part.entries[i];
        OffsetRef {
            source: &self.sources[source as usize],
            group: &self.groups[entry.group as usize],
            group_type: self
                .group_types
                .get(entry.group as usize)
                .unwrap_or(&CONSUMER),
            topic: &self.topics[entry.topic() as usize],
            partition: entry.partition,
            offset: entry.downstream_offset,
            metadata: if entry.has_metadata() {
                part.metadata.get(&entry.key()).map_or("", |m| m)
            } else {
                ""
            },
            upstream_offset: entry.upstream_offset,
            checkpoint_timestamp: entry.timestamp,
            checkpoint_partition: part.checkpoint_partition,
            checkpoint_offset: part.offset(entry),
            unknown_version: entry.nonzero_version(),
        }
    }

    /// Whether the checkpoint at `new` replaces the one at `old` for the same key.
    fn wins(&self, (np, ni): At, (op, oi): At) -> bool {
        let (new_part, old_part) = (&self.parts[np], &self.parts[op]);
        let (new, old) = (&new_part.entries[ni], &old_part.entries[oi]);
        wins(
            (
                new.timestamp,
                new_part.checkpoint_partition,
                new_part.offset(new),
            ),
            (
                old.timestamp,
                old_part.checkpoint_partition,
                old_part.offset(old),
            ),
        )
    }
}

/// The live winner of each key of one source, in key order: the parts' sorted entries merged,
/// each key's candidates (from several ranges or partitions, or names that decode alike)
/// reduced to the one [`wins`] picks, and the key skipped when that one is a tombstone.
struct Winners<'t> {
    table: &'t OffsetTable,
    cursors: Vec<(usize, std::ops::Range<usize>)>,
}

impl<'t> Winners<'t> {
    fn new(table: &'t OffsetTable, cursors: Vec<(usize, std::ops::Range<usize>)>) -> Self {
        Winners { table, cursors }
    }
}

impl Iterator for Winners<'_> {
    type Item = At;

    fn next(&mut self) -> Option<At> {
        let parts = &self.table.parts;
        loop {
            // The smallest key among the heads (parts are few: one per range and partition).
            let key = self
                .cursors
                .iter()
                .filter(|(_, r)| !r.is_empty())
                .map(|(p, r)| parts[*p].entries[r.start].key())
                .min()?;
            let mut winner: Option<At> = None;
            for (p, range) in &mut self.cursors {
                while range.start < range.end && parts[*p].entries[range.start].key() == key {
                    let at = (*p, range.start);
                    if winner.is_none_or(|w| self.table.wins(at, w)) {
                        winner = Some(at);
                    }
                    range.start += 1;
                }
            }
            if let Some((p, i)) = winner
                && parts[p].entries[i].live()
            {
                return Some((p, i));
            }
        }
    }
}

/// Renumbers a part's keys to the table's name ranks and sorts its entries by key, in place.
fn sort_part(part: Part, groups: &[Box<str>], topics: &[Box<str>]) -> SortedPart {
    let group_rank: Vec<u32> = part
        .group_names
        .iter()
        .map(|name| {
            groups
                .binary_search_by(|g| (**g).cmp(&group_name(name)))
                .map_or(u32::MAX, |r| r as u32)
        })
        .collect();
    let topic_rank: Vec<u32> = part
        .topic_names
        .iter()
        .map(|name| rank(topics, &decode(name)))
        .collect();
    let renumber = |(g, t, p): PartKey| (group_rank[g as usize], topic_rank[t as usize], p);
    let mut part = part;
    if !distinct(&group_rank) || !distinct(&topic_rank) {
        // Names that decode alike make two local keys one (Java sees one group): only the
        // later checkpoint of such a key stays, decided while the rare maps still know both.
        let mut best: FxHashMap<PartKey, usize> = FxHashMap::default();
        for (i, e) in part.entries.iter().enumerate() {
            let key = renumber(e.key());
            match best.get(&key) {
                Some(&j) if part.offset(&part.entries[j]) > part.offset(e) => {}
                _ => {
                    best.insert(key, i);
                }
            }
        }
        let mut i = 0;
        part.entries.retain(|e| {
            let keep = best.get(&renumber(e.key())) == Some(&i);
            i += 1;
            keep
        });
    }
    let Part {
        checkpoint_partition,
        base,
        mut entries,
        metadata,
        wide,
        ..
    } = part;
    let mut sorted_metadata: FxHashMap<PartKey, Box<str>> = FxHashMap::default();
    let mut sorted_wide: FxHashMap<PartKey, i64> = FxHashMap::default();
    for e in &mut entries {
        let old = e.key();
        let new = renumber(old);
        if e.has_metadata()
            && let Some(m) = metadata.get(&old)
        {
            sorted_metadata.insert(new, decode(m).into());
        }
        if e.offset == WIDE_OFFSET
            && let Some(&o) = wide.get(&old)
        {
            sorted_wide.insert(new, o);
        }
        e.group = new.0;
        e.set_topic(new.1);
    }
    drop((metadata, wide));
    entries.sort_unstable_by_key(Latest::key);
    SortedPart {
        checkpoint_partition,
        base,
        entries,
        metadata: sorted_metadata,
        wide: sorted_wide,
    }
}

/// Whether no two local ids got the same rank (unselected groups, ranked `u32::MAX`, have no
/// entries and do not count).
fn distinct(ranks: &[u32]) -> bool {
    let mut sorted: Vec<u32> = ranks.iter().copied().filter(|&r| r != u32::MAX).collect();
    sorted.sort_unstable();
    sorted.windows(2).all(|w| w[0] != w[1])
}

/// Whether checkpoint `new` replaces `old` for the same key, each given as (timestamp,
/// checkpoints partition, offset). Within one checkpoints partition the later log position
/// wins, as in Java. Across partitions (MM2 writes one, but a topic may have been given more)
/// the later record timestamp wins, then the higher position.
fn wins(new: (i64, i32, i64), old: (i64, i32, i64)) -> bool {
    if new.1 == old.1 {
        new.2 > old.2
    } else {
        new > old
    }
}

fn decode(bytes: &[u8]) -> Cow<'_, str> {
    utf8::lossy(bytes)
}

/// A group id as the rows name it (see [`utf8::escaped`]).
fn group_name(bytes: &[u8]) -> Cow<'_, str> {
    utf8::escaped(bytes)
}

impl OffsetTable {
    /// A table of owned offsets, as if each were a checkpoint: what [`OffsetTable::with_rows`]
    /// builds on. Keys must be unique.
    pub(crate) fn from_owned(offsets: Vec<super::TranslatedOffset>) -> OffsetTable {
        let types: BTreeMap<String, GroupType> = offsets
            .iter()
            .filter(|o| !o.group_type.is_consumer())
            .map(|o| (o.group.clone(), o.group_type.clone()))
            .collect();
        let mut by_source: std::collections::BTreeMap<String, Vec<super::TranslatedOffset>> =
            std::collections::BTreeMap::new();
        for o in offsets {
            by_source.entry(o.source.clone()).or_default().push(o);
        }
        let parts = by_source
            .into_iter()
            .flat_map(|(source, rows)| {
                Part::from_owned(&rows)
                    .into_iter()
                    .map(move |p| (source.clone(), p))
            })
            .collect();
        let mut table = OffsetTable::from_parts(parts);
        table.set_group_types(&types);
        table
    }

    /// This table with `extra` offsets added (their keys must not be in the table), in the
    /// usual order. Rebuilds the table from owned rows: for the few partitions a
    /// re-translation adds, not for a hot path.
    pub(crate) fn with_rows(&self, extra: Vec<super::TranslatedOffset>) -> OffsetTable {
        let mut all: Vec<super::TranslatedOffset> =
            self.iter().map(|o| o.to_owned_offset()).collect();
        all.extend(extra);
        OffsetTable::from_owned(all)
    }
}

fn sorted_unique<'a>(names: impl Iterator<Item = Cow<'a, str>>) -> Vec<Box<str>> {
    let mut names: Vec<Box<str>> = names.map(Box::from).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The id of a name known to be in `names`.
fn rank(names: &[Box<str>], name: &str) -> u32 {
    names.binary_search_by(|n| (**n).cmp(name)).map_or_else(
        |_| unreachable!("every name was collected first"),
        |id| id as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
    use crate::select::GroupSelector;
    use crate::translate::translator::Accumulator;

    /// (group, topic, partition, downstream offset, record timestamp), `None` for a tombstone.
    type Record<'a> = (&'a [u8], &'a str, i32, Option<i64>, i64);

    /// An accumulator's output after folding `records` of checkpoints partition `partition`
    /// from offset `first` on.
    fn fold(partition: i32, first: i64, records: &[Record<'_>]) -> Part {
        let selector = GroupSelector::all();
        let mut acc = Accumulator::new(&selector);
        for (i, &(group, topic, p, downstream, timestamp)) in records.iter().enumerate() {
            let key = checkpoint::encode_key(&CheckpointKey {
                group,
                topic: topic.as_bytes(),
                partition: p,
            })
            .unwrap();
            let value = downstream.map(|d| {
                checkpoint::encode_value(&CheckpointValue {
                    version: 0,
                    upstream_offset: d + 1,
                    downstream_offset: d,
                    metadata: b"",
                })
                .unwrap()
            });
            let offset = first + i as i64;
            acc.add(partition, offset, timestamp, Some(&key), value.as_deref());
        }
        acc.into_part().0
    }

    fn rows(table: &OffsetTable) -> Vec<(&str, &str, &str, i32, i64)> {
        table
            .iter()
            .map(|o| (o.source, o.group, o.topic, o.partition, o.offset))
            .collect()
    }

    #[test]
    fn later_ranges_of_a_partition_win_and_their_tombstones_delete() {
        let first = fold(
            0,
            0,
            &[
                (b"g", "t", 0, Some(10), 5),
                (b"g", "t", 1, Some(11), 5),
                (b"h", "t", 0, Some(12), 5),
            ],
        );
        // A later range of the same partition, with an older timestamp: position decides.
        let second = fold(
            0,
            100,
            &[(b"g", "t", 0, Some(20), 1), (b"h", "t", 0, None, 1)],
        );
        let table = OffsetTable::from_parts(vec![("s".into(), first), ("s".into(), second)]);
        assert_eq!(
            rows(&table),
            vec![("s", "g", "t", 0, 20), ("s", "g", "t", 1, 11)]
        );
        assert_eq!(table.groups(), ["g"]);
    }

    #[test]
    fn across_partitions_the_later_timestamp_wins() {
        let p0 = fold(0, 50, &[(b"g", "t", 0, Some(1), 900)]);
        let p1 = fold(1, 3, &[(b"g", "t", 0, Some(2), 800)]);
        let table = OffsetTable::from_parts(vec![("s".into(), p0), ("s".into(), p1)]);
        assert_eq!(rows(&table), vec![("s", "g", "t", 0, 1)]);
        let view = table.iter().next().unwrap();
        assert_eq!((view.checkpoint_partition, view.checkpoint_offset), (0, 50));
    }

    #[test]
    fn sources_stay_apart_and_group_lookup_spans_them() {
        let a = fold(
            0,
            0,
            &[(b"g", "a.t", 0, Some(1), 0), (b"z", "a.t", 0, Some(2), 0)],
        );
        let b = fold(0, 0, &[(b"g", "b.t", 0, Some(3), 0)]);
        // Plan order is not name order: "b" first.
        let table = OffsetTable::from_parts(vec![("b".into(), b), ("a".into(), a)]);
        assert_eq!(
            rows(&table),
            vec![
                ("a", "g", "a.t", 0, 1),
                ("a", "z", "a.t", 0, 2),
                ("b", "g", "b.t", 0, 3)
            ]
        );
        assert_eq!(table.groups(), ["g", "z"]);
        let g: Vec<_> = table.group("g").map(|o| (o.source, o.offset)).collect();
        assert_eq!(g, vec![("a", 1), ("b", 3)]);
        assert_eq!(table.group("nope").count(), 0);
        assert_eq!(table.group("z").count(), 1);
    }

    #[test]
    fn group_ids_that_decode_alike_stay_two_groups() {
        // 0xff and 0xfe both decode to U+FFFD, so Java would see one group "a\u{fffd}" where the
        // later checkpoint wins; the rows keep them apart, named with the invalid byte escaped.
        let folded = fold(
            0,
            0,
            &[
                (b"a\xff", "t", 0, Some(1), 0),
                (b"a\xfe", "t", 0, Some(2), 0),
            ],
        );
        let table = OffsetTable::from_parts(vec![("s".into(), folded)]);
        assert_eq!(
            rows(&table),
            vec![("s", "a\\xfe", "t", 0, 2), ("s", "a\\xff", "t", 0, 1)]
        );
        assert_eq!(
            table.group_id_bytes("a\\xff"),
            Some(&[Box::<[u8]>::from(&b"a\xff"[..])][..])
        );
    }

    #[test]
    fn a_key_costs_forty_bytes() {
        assert_eq!(std::mem::size_of::<Latest>(), 40);
    }

    /// A checkpoint offset more than 2^32 past the range's first record is kept exactly (the
    /// rare map), and a key whose later checkpoint fits again leaves that map.
    #[test]
    fn checkpoint_offsets_far_from_the_first_record_are_exact() {
        let selector = GroupSelector::all();
        let mut acc = Accumulator::new(&selector);
        let far = 7_000_000_000i64;
        let key = |p| {
            checkpoint::encode_key(&CheckpointKey {
                group: b"g",
                topic: b"t",
                partition: p,
            })
            .unwrap()
        };
        let value = |d: i64, m: &str| {
            checkpoint::encode_value(&CheckpointValue {
                version: 0,
                upstream_offset: d + 1,
                downstream_offset: d,
                metadata: m.as_bytes(),
            })
            .unwrap()
        };
        acc.add(3, 10, 1, Some(&key(0)), Some(&value(1, "")));
        acc.add(3, far, 2, Some(&key(1)), Some(&value(2, "m1")));
        acc.add(3, far + 1, 3, Some(&key(0)), Some(&value(3, "")));
        acc.add(3, 11, 4, Some(&key(2)), Some(&value(4, "m2")));
        acc.add(3, 12, 5, Some(&key(2)), Some(&value(5, "")));
        let table = OffsetTable::from_parts(vec![("s".into(), acc.into_part().0)]);
        let got: Vec<(i32, i64, i64, i32, &str)> = table
            .iter()
            .map(|o| {
                (
                    o.partition,
                    o.offset,
                    o.checkpoint_offset,
                    o.checkpoint_partition,
                    o.metadata,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 3, far + 1, 3, ""),
                (1, 2, far, 3, "m1"),
                (2, 5, 12, 3, "")
            ]
        );
    }

    /// The live map's form (every checkpoints partition in one, metadata by index) gives the
    /// table the read's form gives for the same checkpoints.
    #[test]
    fn the_live_maps_form_gives_the_same_table() {
        use crate::translate::translator::{Entry, NO_METADATA};
        let entry = |down: i64, partition: i32, offset: i64, metadata: u32, live: bool| Entry {
            upstream_offset: down + 1,
            downstream_offset: down,
            timestamp: 100 + offset,
            offset,
            partition,
            metadata,
            live,
            nonzero_version: false,
        };
        let slot = |pairs: &[((u32, i32), u32)]| pairs.iter().copied().collect::<FxHashMap<_, _>>();
        let folded = Folded {
            group_names: vec![b"b".to_vec().into(), b"a".to_vec().into()],
            topic_names: vec![b"t".to_vec().into()],
            slots: vec![
                slot(&[((0, 0), 0), ((0, 1), 1)]),
                slot(&[((0, 0), 2), ((0, 5), 3)]),
            ],
            entries: vec![
                entry(10, 0, 4, 0, true),
                entry(11, 1, 9_000_000_000, NO_METADATA, true),
                entry(12, 1, 2, NO_METADATA, false),
                entry(13, 0, 5, NO_METADATA, true),
            ],
            metadata: vec![b"meta".to_vec().into()],
        };
        let table = OffsetTable::build(vec![("s".into(), folded)]);
        let got: Vec<_> = table
            .iter()
            .map(|o| {
                (
                    o.group,
                    o.partition,
                    o.offset,
                    o.metadata,
                    o.checkpoint_partition,
                    o.checkpoint_offset,
                    o.checkpoint_timestamp,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", 5, 13, "", 0, 5, 105),
                ("b", 0, 10, "meta", 0, 4, 104),
                ("b", 1, 11, "", 1, 9_000_000_000, 9_000_000_100),
            ]
        );
        assert_eq!(table.len(), 3);
        assert_eq!(table.groups(), ["a", "b"]);
    }

    #[test]
    fn an_empty_read_has_no_rows() {
        let table = OffsetTable::from_parts(vec![("s".into(), fold(0, 0, &[]))]);
        assert_eq!(table.len(), 0);
        assert!(table.groups().is_empty());
        assert_eq!(table.group("g").count(), 0);
    }

    proptest::proptest! {
        /// Ranges of one checkpoints partition per source, split at random points, give what a
        /// plain last-record-wins fold over each source's whole log gives.
        #[test]
        fn ranges_and_sources_agree_with_a_plain_fold(
            logs in proptest::collection::vec(
                proptest::collection::vec((0u8..6, 0u8..3, 0i32..3, proptest::option::of(0i64..1000)), 0..60),
                1..3,
            ),
            cuts in proptest::collection::vec(0usize..60, 0..4),
        ) {
            use std::collections::BTreeMap;
            let names = ["g0", "g1", "g2", "g3", "g4", "g5"];
            let topics = ["ta", "tb", "tc"];
            let mut parts = Vec::new();
            let mut expected = BTreeMap::new();
            for (s, log) in logs.iter().enumerate() {
                let source = format!("src{}", 1 - s as i32);
                let records: Vec<Record<'_>> = log
                    .iter()
                    .map(|&(g, t, p, d)| (names[g as usize].as_bytes(), topics[t as usize], p, d, 0))
                    .collect();
                for &(g, t, p, d, _) in &records {
                    let key = (source.clone(), String::from_utf8(g.to_vec()).unwrap(), t.to_string(), p);
                    match d {
                        Some(d) => { expected.insert(key, d); }
                        None => { expected.remove(&key); }
                    }
                }
                let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (records.len() + 1)).collect();
                bounds.push(0);
                bounds.push(records.len());
                bounds.sort_unstable();
                bounds.dedup();
                for w in bounds.windows(2) {
                    parts.push((source.clone(), fold(0, w[0] as i64, &records[w[0]..w[1]])));
                }
            }
            let table = OffsetTable::from_parts(parts);
            let got: Vec<((String, String, String, i32), i64)> = table
                .iter()
                .map(|o| ((o.source.into(), o.group.into(), o.topic.into(), o.partition), o.offset))
                .collect();
            let expected: Vec<_> = expected.into_iter().collect();
            proptest::prop_assert_eq!(got, expected);
        }
    }
}
