//! The translated offsets of one read, kept compact: every name once, one 24-byte row per
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
/// name order, so sorting rows by their ids sorts them by name.
#[derive(Clone, Copy, Debug)]
struct Row {
    source: u32,
    group: u32,
    topic: u32,
    partition: i32,
    /// Which accumulator holds the value, and where in its entries.
    part: u32,
    entry: u32,
}

impl Row {
    fn key(&self) -> (u32, u32, u32, i32) {
        (self.source, self.group, self.topic, self.partition)
    }
}

/// The values one accumulator folded, kept for the rows that point into them.
#[derive(Clone, Debug)]
struct PartValues {
    entries: Vec<Entry>,
    /// Commit metadata, decoded as Java decodes it, indexed by `Entry::metadata`.
    metadata: Vec<Box<str>>,
}

/// The translated offsets of a read: sorted by source, group, topic and partition, one per key,
/// tombstoned keys left out.
#[derive(Clone, Debug, Default)]
pub(crate) struct OffsetTable {
    sources: Vec<Box<str>>,
    groups: Vec<Box<str>>,
    topics: Vec<Box<str>>,
    parts: Vec<PartValues>,
    rows: Vec<Row>,
}

impl OffsetTable {
    /// Builds the table from each accumulator's output, given with its source alias, in plan
    /// order (the order does not decide winners: log position and timestamps do).
    pub(crate) fn build(folded: Vec<(String, Folded)>) -> OffsetTable {
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

        let mut rows = Vec::with_capacity(folded.iter().map(|(_, f)| f.entries.len()).sum());
        let mut parts = Vec::with_capacity(folded.len());
        for (part, (source, f)) in folded.into_iter().enumerate() {
            let source = rank(&sources, &source);
            let topic_ids: Vec<u32> = f
                .topic_names
                .iter()
                .map(|name| rank(&topics, &decode(name)))
                .collect();
            for (name, slots) in f.group_names.iter().zip(f.slots) {
                if slots.is_empty() {
                    continue;
                }
                let group = rank(&groups, &decode(name));
                // Each group's map is dropped as soon as its rows are out, so the maps and the
                // rows are not all held at once.
                rows.extend(slots.into_iter().map(|((topic, partition), entry)| Row {
                    source,
                    group,
                    topic: topic_ids[topic as usize],
                    partition,
                    part: part as u32,
                    entry,
                }));
            }
            parts.push(PartValues {
                entries: f.entries,
                metadata: f.metadata.iter().map(|m| decode(m).into()).collect(),
            });
        }

        rows.sort_unstable_by_key(Row::key);
        let rows = keep_winners(rows, &parts);
        OffsetTable {
            sources,
            groups,
            topics,
            parts,
            rows,
        }
    }

    /// The number of offsets.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Every offset, in order.
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = OffsetRef<'_>> + '_ {
        self.rows.iter().map(|row| self.view(row))
    }

    /// The distinct groups with at least one offset, sorted.
    pub(crate) fn groups(&self) -> Vec<&str> {
        let mut ids: Vec<u32> = self.rows.iter().map(|r| r.group).collect();
        // Rows are grouped by source first, so one source needs no sort; several may.
        if self.sources.len() > 1 {
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
        let sources = if id.is_some() { self.sources.len() } else { 0 };
        let id = id.unwrap_or_default() as u32;
        let rows = &self.rows;
        (0..sources as u32)
            .flat_map(move |source| {
                let start = rows.partition_point(|r| (r.source, r.group) < (source, id));
                let end = rows.partition_point(|r| (r.source, r.group) <= (source, id));
                rows[start..end].iter()
            })
            .map(move |row| self.view(row))
    }

    fn view(&self, row: &Row) -> OffsetRef<'_> {
        let part = &self.parts[row.part as usize];
        let entry = &part.entries[row.entry as usize];
        OffsetRef {
            source: &self.sources[row.source as usize],
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
}

/// Among sorted rows, keeps the winner of each key, then drops keys whose winner is a
/// tombstone. A key has several rows when ranges of a partition, or partitions, saw it.
fn keep_winners(mut rows: Vec<Row>, parts: &[PartValues]) -> Vec<Row> {
    let entry = |row: &Row| &parts[row.part as usize].entries[row.entry as usize];
    let mut kept = 0;
    let mut i = 0;
    while i < rows.len() {
        let mut winner = rows[i];
        let mut j = i + 1;
        while j < rows.len() && rows[j].key() == winner.key() {
            if wins(entry(&rows[j]), entry(&winner)) {
                winner = rows[j];
            }
            j += 1;
        }
        if entry(&winner).live {
            rows[kept] = winner;
            kept += 1;
        }
        i = j;
    }
    rows.truncate(kept);
    rows.shrink_to_fit();
    rows
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
    use crate::translate::GroupSelector;
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
}
