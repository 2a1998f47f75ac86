//! The translated offsets of one read, kept compact: every name once, one 16-byte row per
//! offset pointing at the value its accumulator already holds.
//!
//! A million offsets used to be a million structs with four owned strings each, built, merged
//! and then printed: about 300 bytes and four allocations per offset, and most of the run time of
//! an all-groups translation. Here the accumulators' values stay where they are, names are
//! decoded and sorted once per distinct name, and the rows are plain integers, so the merge of
//! several ranges is one integer sort and the output is written straight from the rows.

use std::borrow::Cow;

use serde::Serialize;

use super::TranslatedOffset;
use super::translator::{Entry, Folded, NO_METADATA};
use crate::mm2::utf8;

/// One translated offset, borrowed from a [`Translation`](super::Translation). Serializes with
/// the same fields as [`TranslatedOffset`], its owned form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OffsetRef<'a> {
    /// The source cluster alias the checkpoint came from.
    pub source: &'a str,
    /// The consumer group.
    pub group: &'a str,
    /// The topic on the target cluster (already renamed by the replication policy).
    pub topic: &'a str,
    /// The partition.
    pub partition: i32,
    /// The translated (downstream) offset to commit on the target.
    pub offset: i64,
    /// The group's commit metadata on the source.
    pub metadata: &'a str,
    /// The group's committed offset on the source.
    pub upstream_offset: i64,
    /// The checkpoint record's timestamp (ms since the epoch).
    pub checkpoint_timestamp: i64,
    /// The checkpoint record's partition in the checkpoints topic.
    pub checkpoint_partition: i32,
    /// The checkpoint record's offset in the checkpoints topic.
    pub checkpoint_offset: i64,
}

impl OffsetRef<'_> {
    /// An owned copy.
    pub fn to_owned_offset(&self) -> TranslatedOffset {
        TranslatedOffset {
            source: self.source.to_string(),
            group: self.group.to_string(),
            topic: self.topic.to_string(),
            partition: self.partition,
            offset: self.offset,
            metadata: self.metadata.to_string(),
            upstream_offset: self.upstream_offset,
            checkpoint_timestamp: self.checkpoint_timestamp,
            checkpoint_partition: self.checkpoint_partition,
            checkpoint_offset: self.checkpoint_offset,
        }
    }
}

/// One offset: ids into the table's sorted name lists, and where its value is. Ids are ranks in
/// name order, so sorting rows by their ids sorts them by name. 16 bytes: the source is known
/// from the block of rows it is in, the accumulator from the entry index.
#[derive(Clone, Copy, Debug)]
struct Row {
    group: u32,
    topic: u32,
    partition: i32,
    /// Index into the entries of all parts, numbered one part after the other.
    entry: u32,
}

impl Row {
    fn key(&self) -> (u32, u32, i32) {
        (self.group, self.topic, self.partition)
    }
}

/// The values one accumulator folded, kept for the rows that point into them.
#[derive(Clone, Debug)]
struct PartValues {
    /// The number of entries of the parts before this one: this part's first global index.
    first_entry: u32,
    entries: Vec<Entry>,
    /// Commit metadata, decoded as Java decodes it, indexed by `Entry::metadata`.
    metadata: Vec<Box<str>>,
}

/// The rows of one source: `rows[start..end]`.
#[derive(Clone, Copy, Debug)]
struct SourceBlock {
    source: u32,
    start: usize,
    end: usize,
    /// How many parts (sorted runs) the rows came from.
    runs: usize,
}

/// The translated offsets of a read: sorted by source, group, topic and partition, one per key,
/// tombstoned keys left out.
#[derive(Clone, Debug, Default)]
pub(crate) struct OffsetTable {
    sources: Vec<Box<str>>,
    groups: Vec<Box<str>>,
    topics: Vec<Box<str>>,
    parts: Vec<PartValues>,
    blocks: Vec<SourceBlock>,
    rows: Vec<Row>,
}

impl OffsetTable {
    /// Builds the table from each accumulator's output, given with its source alias, in plan
    /// order (the order does not decide winners: log position and timestamps do).
    pub(crate) fn build(mut folded: Vec<(String, Folded)>) -> OffsetTable {
        let sources = sorted_unique(folded.iter().map(|(source, _)| source.as_str().into()));
        // Names are decoded leniently, as Java does, and compared decoded: two byte strings
        // that decode alike are one group to Java, and one here.
        let groups = sorted_unique(folded.iter().flat_map(|(_, f)| {
            f.group_names
                .iter()
                .zip(&f.slots)
                .filter(|(_, slots)| !slots.is_empty())
                .map(|(name, _)| decode(name))
        }));
        let topics = sorted_unique(
            folded
                .iter()
                .flat_map(|(_, f)| f.topic_names.iter().map(|name| decode(name))),
        );
        // One source's parts together, in plan order within it.
        folded.sort_by_cached_key(|(source, _)| rank(&sources, source));

        let total: usize = folded.iter().map(|(_, f)| f.entries.len()).sum();
        let mut rows = Vec::with_capacity(total);
        let mut parts = Vec::with_capacity(folded.len());
        let mut blocks: Vec<SourceBlock> = Vec::new();
        let mut first_entry = 0u32;
        for (source, mut f) in folded {
            let source = rank(&sources, &source);
            if blocks.last().is_none_or(|block| block.source != source) {
                blocks.push(SourceBlock {
                    source,
                    start: rows.len(),
                    end: rows.len(),
                    runs: 0,
                });
            }
            append_sorted_rows(&mut rows, &mut f, &groups, &topics, first_entry);
            if let Some(block) = blocks.last_mut() {
                block.end = rows.len();
                block.runs += 1;
            }
            parts.push(PartValues {
                first_entry,
                metadata: f.metadata.iter().map(|m| decode(m).into()).collect(),
                entries: f.entries,
            });
            // u32 indices: 2^32 keys would take 200 GiB of entries first.
            first_entry += parts
                .last()
                .map_or(0, |p: &PartValues| p.entries.len() as u32);
        }
        for block in blocks.iter().filter(|block| block.runs > 1) {
            // Several parts of one source (ranges or partitions): each part's rows are a sorted
            // run, which the stable sort finds and merges instead of sorting from scratch.
            rows[block.start..block.end].sort_by_key(Row::key);
        }
        let mut table = OffsetTable {
            sources,
            groups,
            topics,
            parts,
            blocks,
            rows,
        };
        table.keep_winners();
        table
    }

    /// The number of offsets.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Every offset, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = OffsetRef<'_>> + '_ {
        self.blocks.iter().flat_map(move |block| {
            self.rows[block.start..block.end]
                .iter()
                .map(move |row| self.view(block.source, row))
        })
    }

    /// The distinct groups with at least one offset, sorted.
    pub(crate) fn groups(&self) -> Vec<&str> {
        let mut ids: Vec<u32> = self.rows.iter().map(|r| r.group).collect();
        // Each source's rows are sorted by group; several sources need a sort.
        if self.blocks.len() > 1 {
            ids.sort_unstable();
        }
        ids.dedup();
        ids.into_iter()
            .map(|id| &*self.groups[id as usize])
            .collect()
    }

    /// The offsets of one group, from every source, found by binary search.
    pub(crate) fn group<'t>(&'t self, group: &str) -> impl Iterator<Item = OffsetRef<'t>> + 't {
        let id = self.groups.binary_search_by(|g| (**g).cmp(group)).ok();
        // An unknown group has no rows in any source.
        let blocks = if id.is_some() { &self.blocks[..] } else { &[] };
        let id = id.unwrap_or_default() as u32;
        blocks.iter().flat_map(move |block| {
            let rows = &self.rows[block.start..block.end];
            let start = rows.partition_point(|r| r.group < id);
            let end = rows.partition_point(|r| r.group <= id);
            rows[start..end]
                .iter()
                .map(move |row| self.view(block.source, row))
        })
    }

    /// Replaces each offset's (upstream, downstream) pair, in [`iter`](Self::iter)'s order:
    /// a re-translation (precise, or from the source's live offsets) turned back into a table
    /// the writers and `apply` already take. Each row owns its entry (winners are unique).
    pub(crate) fn set_offsets(&mut self, pairs: impl IntoIterator<Item = (i64, i64)>) {
        let mut pairs = pairs.into_iter();
        for block in &self.blocks {
            for row in &self.rows[block.start..block.end] {
                let Some((upstream, downstream)) = pairs.next() else {
                    return;
                };
                let index = self.parts.partition_point(|p| p.first_entry <= row.entry) - 1;
                let part = &mut self.parts[index];
                let entry = &mut part.entries[(row.entry - part.first_entry) as usize];
                entry.upstream_offset = upstream;
                entry.downstream_offset = downstream;
            }
        }
    }

    fn part(&self, entry: u32) -> &PartValues {
        // One part is the common case (one partition, read by one worker).
        if let [only] = &self.parts[..] {
            return only;
        }
        let index = self.parts.partition_point(|p| p.first_entry <= entry) - 1;
        &self.parts[index]
    }

    fn entry(&self, row: &Row) -> &Entry {
        let part = self.part(row.entry);
        &part.entries[(row.entry - part.first_entry) as usize]
    }

    fn view(&self, source: u32, row: &Row) -> OffsetRef<'_> {
        let part = self.part(row.entry);
        let entry = &part.entries[(row.entry - part.first_entry) as usize];
        OffsetRef {
            source: &self.sources[source as usize],
            group: &self.groups[row.group as usize],
            topic: &self.topics[row.topic as usize],
            partition: row.partition,
            offset: entry.downstream_offset,
            metadata: match entry.metadata {
                NO_METADATA => "",
                index => &part.metadata[index as usize],
            },
            upstream_offset: entry.upstream_offset,
            checkpoint_timestamp: entry.timestamp,
            checkpoint_partition: entry.partition,
            checkpoint_offset: entry.offset,
        }
    }

    /// In each source's sorted rows, keeps the winner of each key, then drops keys whose
    /// winner is a tombstone. A key has several rows when ranges of a partition, or
    /// partitions, saw it.
    fn keep_winners(&mut self) {
        let mut kept = 0;
        for b in 0..self.blocks.len() {
            let SourceBlock { start, end, .. } = self.blocks[b];
            self.blocks[b].start = kept;
            let mut i = start;
            while i < end {
                let mut winner = self.rows[i];
                let mut j = i + 1;
                while j < end && self.rows[j].key() == winner.key() {
                    if wins(self.entry(&self.rows[j]), self.entry(&winner)) {
                        winner = self.rows[j];
                    }
                    j += 1;
                }
                if self.entry(&winner).live {
                    self.rows[kept] = winner;
                    kept += 1;
                }
                i = j;
            }
            self.blocks[b].end = kept;
        }
        self.rows.truncate(kept);
        self.rows.shrink_to_fit();
    }
}

/// Appends one part's rows sorted by (group, topic, partition): groups in name order, each
/// group's keys sorted on their own (a hundred keys, not a million), each group's map dropped
/// as soon as its rows are out so the maps and the rows are not all held at once.
fn append_sorted_rows(
    rows: &mut Vec<Row>,
    f: &mut Folded,
    groups: &[Box<str>],
    topics: &[Box<str>],
    first_entry: u32,
) {
    let topic_ids: Vec<u32> = f
        .topic_names
        .iter()
        .map(|name| rank(topics, &decode(name)))
        .collect();
    let mut order: Vec<(u32, usize)> = f
        .group_names
        .iter()
        .zip(&f.slots)
        .enumerate()
        .filter(|(_, (_, slots))| !slots.is_empty())
        .map(|(local, (name, _))| (rank(groups, &decode(name)), local))
        .collect();
    order.sort_unstable();
    let mut group_start = rows.len();
    for (i, &(group, local)) in order.iter().enumerate() {
        let slots = std::mem::take(&mut f.slots[local]);
        rows.extend(slots.into_iter().map(|((topic, partition), entry)| Row {
            group,
            topic: topic_ids[topic as usize],
            partition,
            entry: first_entry + entry,
        }));
        // Local groups that decode to the same name are sorted together.
        if order.get(i + 1).is_none_or(|next| next.0 != group) {
            rows[group_start..].sort_unstable_by_key(Row::key);
            group_start = rows.len();
        }
    }
}

/// Whether checkpoint `new` replaces `old` for the same key. Within one checkpoints partition
/// the later log position wins, as in Java. Across partitions (MM2 writes one, but a topic may
/// have been given more) the later record timestamp wins, then the higher position.
fn wins(new: &Entry, old: &Entry) -> bool {
    if new.partition == old.partition {
        new.offset > old.offset
    } else {
        (new.timestamp, new.partition, new.offset) > (old.timestamp, old.partition, old.offset)
    }
}

fn decode(bytes: &[u8]) -> Cow<'_, str> {
    utf8::lossy(bytes)
}

impl OffsetTable {
    /// A table of owned offsets, as if each were a checkpoint: what [`OffsetTable::with_rows`]
    /// builds on. Keys must be unique.
    pub(crate) fn from_owned(offsets: Vec<super::TranslatedOffset>) -> OffsetTable {
        let sources = sorted_unique(offsets.iter().map(|o| o.source.as_str().into()));
        let groups = sorted_unique(offsets.iter().map(|o| o.group.as_str().into()));
        let topics = sorted_unique(offsets.iter().map(|o| o.topic.as_str().into()));
        let mut metadata: Vec<Box<str>> = Vec::new();
        let mut entries = Vec::with_capacity(offsets.len());
        let mut keyed: Vec<(u32, Row)> = Vec::with_capacity(offsets.len());
        for (i, o) in offsets.into_iter().enumerate() {
            let metadata_index = if o.metadata.is_empty() {
                NO_METADATA
            } else {
                metadata.push(o.metadata.into());
                (metadata.len() - 1) as u32
            };
            entries.push(Entry {
                upstream_offset: o.upstream_offset,
                downstream_offset: o.offset,
                timestamp: o.checkpoint_timestamp,
                offset: o.checkpoint_offset,
                partition: o.checkpoint_partition,
                metadata: metadata_index,
                live: true,
            });
            let row = Row {
                group: rank(&groups, &o.group),
                topic: rank(&topics, &o.topic),
                partition: o.partition,
                entry: i as u32,
            };
            keyed.push((rank(&sources, &o.source), row));
        }
        keyed.sort_by_key(|(source, row)| (*source, row.key()));
        let mut blocks: Vec<SourceBlock> = Vec::new();
        for (i, (source, _)) in keyed.iter().enumerate() {
            match blocks.last_mut() {
                Some(block) if block.source == *source => block.end = i + 1,
                _ => blocks.push(SourceBlock {
                    source: *source,
                    start: i,
                    end: i + 1,
                    runs: 1,
                }),
            }
        }
        OffsetTable {
            sources,
            groups,
            topics,
            parts: vec![PartValues {
                first_entry: 0,
                entries,
                metadata,
            }],
            blocks,
            rows: keyed.into_iter().map(|(_, row)| row).collect(),
        }
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
    fn fold(partition: i32, first: i64, records: &[Record<'_>]) -> Folded {
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
        acc.into_folded().0
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
        let table = OffsetTable::build(vec![("s".into(), first), ("s".into(), second)]);
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
        let table = OffsetTable::build(vec![("s".into(), p0), ("s".into(), p1)]);
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
        let table = OffsetTable::build(vec![("b".into(), b), ("a".into(), a)]);
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
    fn group_ids_that_decode_alike_are_one_group() {
        // 0xff and 0xfe both decode to U+FFFD, so Java sees one group "a\u{fffd}" and the later
        // checkpoint wins.
        let folded = fold(
            0,
            0,
            &[
                (b"a\xff", "t", 0, Some(1), 0),
                (b"a\xfe", "t", 0, Some(2), 0),
            ],
        );
        let table = OffsetTable::build(vec![("s".into(), folded)]);
        assert_eq!(rows(&table), vec![("s", "a\u{fffd}", "t", 0, 2)]);
    }

    #[test]
    fn an_empty_read_has_no_rows() {
        let table = OffsetTable::build(vec![("s".into(), fold(0, 0, &[]))]);
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
            let table = OffsetTable::build(parts);
            let got: Vec<((String, String, String, i32), i64)> = table
                .iter()
                .map(|o| ((o.source.into(), o.group.into(), o.topic.into(), o.partition), o.offset))
                .collect();
            let expected: Vec<_> = expected.into_iter().collect();
            proptest::prop_assert_eq!(got, expected);
        }
    }
}
