//! The reverse rule: from a group's offset on a replica (downstream, the backup) back to the
//! original topic (upstream, the primary), for failback.
//!
//! After a failover the consumers read `primary.orders` on the backup and commit there. MM2 never
//! copies a replica back to its origin (its cycle check), so no checkpoint of the reverse flow
//! covers those offsets; the forward flow's offset syncs do. A group at downstream offset `D` has
//! read every record below `D`; the offset to resume from upstream must never pass the smallest
//! upstream offset whose record has no copy below `D`.
//!
//! ```
//! use mm2_offsets::failback::{FailbackRule, ReverseIndexBuilder};
//!
//! let mut builder = ReverseIndexBuilder::new();
//! builder.add(b"orders", 0, 0, 0);
//! builder.add(b"orders", 0, 100, 100);
//! let index = builder.finish();
//! let part = index.partition(b"orders", 0).unwrap();
//! // A sync at exactly D: its record is the first one the group has not read.
//! assert_eq!(part.translate(100).map(|a| (a.offset, a.rule)), Some((100, FailbackRule::ExactSync)));
//! // Between syncs: one past the greatest sync below D.
//! assert_eq!(part.translate(40).map(|a| (a.offset, a.rule)), Some((1, FailbackRule::ReverseRule)));
//! // Nothing below the first sync is known.
//! let empty = ReverseIndexBuilder::new().finish();
//! assert!(empty.partition(b"orders", 0).is_none());
//! ```
//!
//! # The rule, and why it never skips a record
//!
//! **Greatest sync `(u, d)` with `d <= D`** in the history (log order, after dropping everything
//! before a downstream regression): `u` when `d == D`, else `u + 1`. Not the greatest `u`: see
//! the book's page "The reverse rule, proven" (docs/src/semantics/reverse-rule.md) for the whole argument; in short,
//! from `MirrorSourceTask` and `OffsetSyncWriter`:
//!
//! * a sync `(u, d)` comes from the producer's acknowledgement: record `u` was written at `d`;
//! * **no skip**: for two data records `a`, `b` written one after the other downstream, `b`
//!   holds at most the record MM2's consumer delivered right after `a`'s. Within a lifetime the
//!   consumer reads in order and the producer has one request in flight (a retry re-sends an
//!   earlier batch); a new lifetime resumes from Connect's committed source offset, which never
//!   passes the last acknowledged record. So the records copied below `D` are every record MM2
//!   delivered from its first one up to the greatest one copied below `D`;
//! * `d < D`: record `u` is below `D`, so everything up to `u` was read: `u + 1` is safe.
//!   `d == D`: the data record just below `D` holds at least the record delivered before `u`, so
//!   everything below `u` was read: `u` is safe. Transaction markers below `D` hold no record and
//!   change nothing; duplicates (retries, restarts) only repeat records already counted.
//! * downstream offsets grow in log order (one writer, appends only): the greatest `d <= D` is
//!   also the latest such sync, so a compacted history (a log-order suffix) either still holds it
//!   or holds none at or below `D` (no answer: `no-sync`), never an older substitute.
//!
//! The greatest `u` over `d < D` would be tighter across restarts (an earlier lifetime may have
//! got further) but it is wrong after the upstream topic was truncated or recreated: an older
//! incarnation's `u` would be applied to the new one. The greatest `d` is always the newest
//! sync, so an upstream reset before it does not matter; one between it and `D` (its first sync
//! lost or not sent yet) is the residual assumption, named in the book's page on the reverse rule.
//!
//! # Exact answers: a one-for-one stretch proven with the primary's records
//!
//! Between the sync below `D`, `(u1, d1)`, and the next one, `(u2, d2)`, the upstream records
//! read now from the primary (read_committed: no markers, no aborted records; every one of them
//! was delivered to MM2) give more ([`refine`](ReverseAnswer::refine)). Going back from `d2`,
//! each written data record holds at least the record delivered before the next one's, so the
//! record just below `D` holds at least the `k`-th known record below `u2`, `k = d2 - D + 1`:
//! one past it is safe ([`FailbackRule::Counted`]). When the records between `u1` and `u2` are
//! exactly as many as the offsets between `d1` and `d2` (a one-for-one stretch), no marker,
//! duplicate or gap can hide in it: offset `d1 + j` holds the `j`-th record, and the answer is
//! the record at `D` itself ([`FailbackRule::Interpolated`]).
//!
//! # References
//! - Kafka: `connect/mirror/.../MirrorSourceTask.java` (`commitRecord`, `initializeConsumer`),
//!   `OffsetSyncWriter.java`, `OffsetSyncStore.java`
//! - KIP-1098 (reverse checkpointing, not adopted)

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::mm2::sync_index::{HistoryStats, Sync, SyncChunks};

/// How a failback offset was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailbackRule {
    /// A sync at exactly the group's downstream offset: its upstream offset (exact).
    ExactSync,
    /// Inside a one-for-one stretch proven with the primary's records (exact).
    Interpolated,
    /// Counted back from the next sync over the primary's records: safe, short of exact.
    Counted,
    /// The greatest sync at or below the group's offset, plus one: safe.
    ReverseRule,
    /// A topic local to the backup, from a reverse MM2 flow's checkpoint (MM2's translation).
    ReverseCheckpoint,
    /// A topic local to the backup: the group's offset there now, translated with the reverse
    /// flow's offset-sync history (more than its checkpoint proves; never less).
    ReverseFlowSync,
    /// Proven by the records of both clusters ([`FailbackRequest::match_records`](crate::failback::FailbackRequest::match_records)): the primary offset of the
    /// first record the group has not read on the backup (exact).
    RecordMatch,
}

impl FailbackRule {
    /// The name used in reports (`exact-sync`, `interpolated`, `counted`, `reverse-rule`,
    /// `reverse-checkpoint`, `reverse-flow-sync`, `record-match`).
    pub fn name(self) -> &'static str {
        match self {
            FailbackRule::ExactSync => "exact-sync",
            FailbackRule::Interpolated => "interpolated",
            FailbackRule::Counted => "counted",
            FailbackRule::ReverseRule => "reverse-rule",
            FailbackRule::ReverseCheckpoint => "reverse-checkpoint",
            FailbackRule::ReverseFlowSync => "reverse-flow-sync",
            FailbackRule::RecordMatch => "record-match",
        }
    }

    /// Whether the answer is proven to be the record the group meets next on the backup (a copy
    /// of it is at the group's offset there), not only a position at or before its next one.
    /// For `exact-sync` and `interpolated` it is the group's first unread record unless an
    /// earlier copy of it lies below that offset too (a retry, or a restart of MM2 that had
    /// copied further before); `record-match` rules that out too.
    pub fn is_exact(self) -> bool {
        matches!(
            self,
            FailbackRule::ExactSync | FailbackRule::Interpolated | FailbackRule::RecordMatch
        )
    }
}

/// The upstream offset to resume from for one downstream offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReverseAnswer {
    /// The offset to commit upstream.
    pub offset: i64,
    /// How it was found.
    pub rule: FailbackRule,
    /// What the syncs alone give (the greatest sync at or below, plus one unless equal): never
    /// above `offset`.
    pub safe_offset: i64,
    /// The sync `(upstream, downstream)` the answer starts from.
    pub sync: (i64, i64),
}

/// The syncs around a downstream offset that lies strictly between two of them, with room for
/// records in between: what the primary's records can sharpen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stretch {
    /// The greatest sync below the offset: `(upstream, downstream)`.
    pub before: (i64, i64),
    /// The next sync in the history: `(upstream, downstream)`, its upstream offset at least two
    /// above `before`'s.
    pub after: (i64, i64),
}

impl Stretch {
    /// The upstream offsets strictly between the two syncs, `[start, end)`: the records to read.
    pub fn between(&self) -> (i64, i64) {
        (self.before.0 + 1, self.after.0)
    }
}

impl ReverseAnswer {
    /// Sharpens this answer for downstream offset `downstream`, inside `stretch`, with
    /// `records`: the sorted upstream offsets of data records known to lie strictly between the
    /// stretch's syncs (read_committed, so every one was delivered to MM2; a subset is fine, it
    /// only makes the answer less sharp).
    ///
    /// ```
    /// use mm2_offsets::failback::{FailbackRule, ReverseIndexBuilder};
    ///
    /// let mut builder = ReverseIndexBuilder::new();
    /// builder.add(b"t", 0, 10, 100);
    /// builder.add(b"t", 0, 20, 110); // ten offsets for ten records
    /// let part = builder.finish().partition(b"t", 0).unwrap().clone();
    /// let (answer, stretch) = (part.translate(104).unwrap(), part.stretch(104).unwrap());
    /// let gapless: Vec<i64> = (11..20).collect();
    /// let exact = answer.refine(&stretch, 104, &gapless);
    /// assert_eq!((exact.offset, exact.rule), (14, FailbackRule::Interpolated));
    /// // A marker at upstream 15: nine records for ten offsets, so no longer one-for-one.
    /// let marked: Vec<i64> = (11..20).filter(|&u| u != 15).collect();
    /// let counted = answer.refine(&stretch, 104, &marked);
    /// assert_eq!((counted.offset, counted.rule), (13, FailbackRule::Counted));
    /// ```
    pub fn refine(self, stretch: &Stretch, downstream: i64, records: &[i64]) -> ReverseAnswer {
        let ((u1, d1), (u2, d2)) = (stretch.before, stretch.after);
        if !(d1 < downstream && downstream < d2 && self.sync == stretch.before) {
            return self;
        }
        // The known records: u1, those between, u2 (both syncs name delivered records).
        let inside = records.iter().copied().filter(|&r| u1 < r && r < u2);
        let known: Vec<i64> = std::iter::once(u1)
            .chain(inside)
            .chain(std::iter::once(u2))
            .collect();
        let last = known.len() - 1;
        // One-for-one: as many records after u1 (up to u2) as offsets after d1 (up to d2).
        if i64::try_from(last).ok() == Some(d2 - d1) {
            let at = (downstream - d1) as usize;
            return ReverseAnswer {
                offset: known[at],
                rule: FailbackRule::Interpolated,
                ..self
            };
        }
        // The data record just below `downstream` holds at least the k-th known record below u2.
        let k = d2 - downstream + 1;
        let Some(at) = usize::try_from(k).ok().and_then(|k| last.checked_sub(k)) else {
            return self;
        };
        let counted = known[at] + 1;
        if counted > self.offset {
            ReverseAnswer {
                offset: counted,
                rule: FailbackRule::Counted,
                ..self
            }
        } else {
            self
        }
    }
}

/// One partition's sync history for reverse lookups: the kept syncs in log order, whose
/// downstream offsets strictly increase.
#[derive(Clone, Debug, Default)]
pub struct ReversePartition {
    syncs: Box<[Sync]>,
    stats: HistoryStats,
}

impl ReversePartition {
    /// Reads the history in log order: drops syncs with a negative offset and re-sent ones,
    /// counts lifetimes (an upstream offset not above the previous sync's), and drops
    /// everything before a downstream regression (a truncated or recreated replica, or two
    /// writers), as the forward index does.
    fn from_log(log: impl Iterator<Item = Sync>) -> ReversePartition {
        let mut syncs: Vec<Sync> = Vec::new();
        let mut stats = HistoryStats::default();
        for sync in log {
            if sync.upstream < 0 || sync.downstream < 0 {
                stats.invalid += 1;
                continue;
            }
            match syncs.last() {
                None => stats.lifetimes = 1,
                Some(&last) if last == sync => {
                    stats.duplicates += 1;
                    continue;
                }
                Some(last) if sync.downstream <= last.downstream => {
                    stats.truncations += 1;
                    stats.lifetimes = 1;
                    syncs.clear();
                }
                Some(last) if sync.upstream <= last.upstream => stats.lifetimes += 1,
                Some(_) => {}
            }
            syncs.push(sync);
        }
        stats.syncs = syncs.len() as u64;
        ReversePartition {
            syncs: syncs.into_boxed_slice(),
            stats,
        }
    }

    /// What the history showed.
    pub fn stats(&self) -> HistoryStats {
        self.stats
    }

    /// The kept syncs `(upstream, downstream)` in log order (downstream offsets increasing):
    /// what record matching walks.
    pub fn log_order(&self) -> Vec<(i64, i64)> {
        self.syncs
            .iter()
            .map(|s| (s.upstream, s.downstream))
            .collect()
    }

    /// The number of the greatest kept sync at or below `downstream`, if any.
    fn at_or_below(&self, downstream: i64) -> Option<usize> {
        self.syncs
            .partition_point(|s| s.downstream <= downstream)
            .checked_sub(1)
    }

    /// The upstream offset to resume from for a group at `downstream` on the replica, by the
    /// reverse rule; `None` when no sync at or below it survives.
    pub fn translate(&self, downstream: i64) -> Option<ReverseAnswer> {
        let s = self.syncs[self.at_or_below(downstream)?];
        let (offset, rule) = if s.downstream == downstream {
            (s.upstream, FailbackRule::ExactSync)
        } else {
            (s.upstream + 1, FailbackRule::ReverseRule)
        };
        Some(ReverseAnswer {
            offset,
            rule,
            safe_offset: offset,
            sync: (s.upstream, s.downstream),
        })
    }

    /// The syncs around `downstream` when it lies strictly between two kept syncs whose
    /// upstream offsets leave room for records in between (the later at least two above):
    /// the stretch the primary's records can sharpen.
    pub fn stretch(&self, downstream: i64) -> Option<Stretch> {
        let at = self.at_or_below(downstream)?;
        let (before, after) = (self.syncs[at], *self.syncs.get(at + 1)?);
        (before.downstream < downstream && after.upstream - before.upstream >= 2).then_some(
            Stretch {
                before: (before.upstream, before.downstream),
                after: (after.upstream, after.downstream),
            },
        )
    }
}

/// Builds a [`ReverseIndex`] from offset-sync records fed in log order.
#[derive(Debug, Default)]
pub struct ReverseIndexBuilder {
    topics: FxHashMap<Box<[u8]>, FxHashMap<i32, SyncChunks>>,
}

impl ReverseIndexBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one sync of upstream `topic`-`partition`. Must be called in log order.
    pub fn add(&mut self, topic: &[u8], partition: i32, upstream: i64, downstream: i64) {
        self.log(topic, partition).push(Sync {
            upstream,
            downstream,
        });
    }

    /// Appends a reader's syncs of one partition, which follow the ones added before.
    pub(crate) fn append(&mut self, topic: &[u8], partition: i32, syncs: SyncChunks) {
        self.log(topic, partition).append(syncs);
    }

    fn log(&mut self, topic: &[u8], partition: i32) -> &mut SyncChunks {
        if !self.topics.contains_key(topic) {
            self.topics.insert(topic.into(), FxHashMap::default());
        }
        let partitions = self.topics.get_mut(topic).expect("inserted above");
        partitions.entry(partition).or_default()
    }

    /// Reads every partition's history for lookups.
    pub fn finish(self) -> ReverseIndex {
        let topics = self
            .topics
            .into_iter()
            .map(|(topic, parts)| {
                let parts = parts
                    .into_iter()
                    .map(|(p, log)| (p, ReversePartition::from_log(log.iter())))
                    .collect();
                (topic, parts)
            })
            .collect();
        ReverseIndex { topics }
    }
}

/// Every partition's sync history, keyed by upstream topic (raw bytes, as in the sync keys) and
/// partition, for reverse lookups.
#[derive(Clone, Debug, Default)]
pub struct ReverseIndex {
    topics: FxHashMap<Box<[u8]>, FxHashMap<i32, ReversePartition>>,
}

impl ReverseIndex {
    /// One partition's history, if any sync of it survives.
    pub fn partition(&self, topic: &[u8], partition: i32) -> Option<&ReversePartition> {
        self.topics.get(topic)?.get(&partition)
    }

    /// Number of partitions with history.
    pub fn partitions(&self) -> usize {
        self.topics.values().map(FxHashMap::len).sum()
    }
}

#[cfg(test)]
#[path = "rule_tests.rs"]
mod tests;
