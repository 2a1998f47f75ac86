//! A per-partition index of MirrorMaker 2's full offset-sync history, and the precise translation
//! built on it.
//!
//! MM2's checkpoint task keeps 64 sparse syncs per partition and maps an upstream offset `U` to
//! `d + 1` of the greatest kept sync `(u, d)` below it. The offset-syncs topic keeps every sync
//! until compaction; this index reads all of them (in log order) and answers with the highest
//! downstream offset that is still provably at or before the group's next record.
//!
//! ```
//! use mm2_offsets::mm2::sync_index::{Interpolation, Rule, SyncIndexBuilder};
//!
//! let mut builder = SyncIndexBuilder::new();
//! builder.add(b"orders", 0, 0, 0);
//! builder.add(b"orders", 0, 100, 100); // 100 records, 100 offsets
//! // The operator knows "orders" has no transactions and no compaction:
//! let index = builder.finish(Interpolation::GaplessUpstream);
//! let part = index.partition(b"orders", 0).unwrap();
//! assert_eq!(part.translate(40), Some((40, Rule::Interpolated)));
//! assert_eq!(part.translate(100), Some((100, Rule::ExactSync)));
//! assert_eq!(part.translate(150), Some((101, Rule::Mm2Rule)));
//! ```
//!
//! # Why each answer is safe (never past the group's next record)
//!
//! The facts, from `MirrorSourceTask.commitRecord` and `OffsetSyncWriter` (Kafka 3.7 to 4.x):
//! * a sync `(u, d)` is made from the producer's acknowledgement: the record at upstream `u`
//!   really was written at downstream `d`;
//! * one task lifetime reads a partition in offset order and its producer runs with one request in
//!   flight, so within a lifetime both `u` and `d` strictly increase;
//! * a new lifetime resumes from Connect's committed source offset, which never passes the last
//!   acknowledged record, so it re-sends (duplicates) rather than skips, and writes after every
//!   record of the earlier lifetimes.
//!
//! Hence, once replication has caught up, for every sync `(u, d)` each record above `u` has a copy
//! after `d`: `d + 1` is safe for any `U > u` and `d` for `U == u`, whichever lifetime wrote the
//! sync. The index takes the greatest such bound over the whole history ([`Rule::ExactSync`],
//! [`Rule::Mm2Rule`]): MM2's own rule over more syncs, so at least as far as MM2 gets.
//!
//! [`Rule::Interpolated`], `d1 + (U - u1)` between two syncs `(u1, d1)`, `(u2, d2)` that follow
//! each other in the log with `u1 < U < u2` and `u2 - u1 == d2 - d1`, is sound only when the
//! upstream partition has **no offset gaps** (no transaction markers, no compaction, no filtered
//! records, MM2 never fell behind the source's retention). Then each record above `u1` takes at
//! least one downstream offset after `d1`, in the lifetime that wrote `(u1, d1)` or in a later
//! one that resumed no further than it got, so record `r` is at `d1 + (r - u1)` or later,
//! whatever the restarts, duplicates and downstream transaction markers.
//!
//! With gaps upstream, equal steps prove nothing: an upstream gap whose sync MM2 never sent can
//! be cancelled by an extra downstream offset — a transaction marker in exactly-once mode, a
//! retried produce (Connect disables idempotence for at-least-once source producers), or the
//! duplicates a restart re-sends after the stopped task dropped its unsent syncs
//! (`OffsetSyncWriter` keeps at most 10 in flight and drops the pending ones on stop). The
//! proptest below found that last case. So interpolation is off ([`Interpolation::Disabled`])
//! unless the caller vouches for gapless upstream topics
//! ([`Interpolation::GaplessUpstream`]).
//!
//! # Lifetime and history signals, in log order per partition
//! * the same pair again: a re-sent sync; ignored;
//! * `u` not above the previous sync's: a new task lifetime that re-read from its committed
//!   offset (duplicates downstream); no interpolation across it;
//! * `d` not above the previous sync's: the downstream partition was truncated (or recreated, or
//!   two tasks wrote at once); every earlier sync may point past the new log, so the history
//!   before it is dropped.
//!
//! # References
//! - Kafka: `connect/mirror/src/main/java/org/apache/kafka/connect/mirror/OffsetSyncWriter.java`,
//!   `MirrorSourceTask.java`, `OffsetSyncStore.java`
//! - KAFKA-12468 / PR #13178 (why MM2 steps only `+1` past a sync)

use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

/// Which rule produced a precise offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// A sync for exactly this upstream offset: its downstream offset.
    ExactSync,
    /// Inside a proven one-for-one stretch between two syncs.
    Interpolated,
    /// MM2's rule over the full history: the best sync below, plus one.
    Mm2Rule,
    /// The history proves nothing beyond MM2's own checkpoint offset (compacted or short
    /// history); MM2's offset is kept.
    Mm2Checkpoint,
    /// No sync at or below the upstream offset survives; MM2's offset is kept.
    NoSync,
    /// The records themselves: the group's next upstream record found downstream, its last
    /// copy proven by content and position (`crate::record_match`). Exact.
    RecordMatch,
}

impl Rule {
    /// The name used in reports (`exact-sync`, `interpolated`, `mm2-rule`, `mm2-checkpoint`,
    /// `no-sync`).
    pub fn name(self) -> &'static str {
        match self {
            Rule::ExactSync => "exact-sync",
            Rule::Interpolated => "interpolated",
            Rule::Mm2Rule => "mm2-rule",
            Rule::Mm2Checkpoint => "mm2-checkpoint",
            Rule::NoSync => "no-sync",
            Rule::RecordMatch => "record-match",
        }
    }
}

/// Whether one-for-one stretches may be interpolated. Off unless the caller vouches for the
/// upstream partitions (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Interpolation {
    /// The upstream partitions have no offset gaps: no transactional producers, no compaction,
    /// no records filtered out by MM2, and MM2 never lagged past the source's retention.
    GaplessUpstream,
    /// Only the syncs themselves are trusted (`exact-sync`, `mm2-rule`).
    #[default]
    Disabled,
}

/// A precise translation of one upstream offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PreciseOffset {
    /// The downstream offset to resume from: the greater of MM2's and the history's.
    pub offset: i64,
    /// MM2's own checkpoint offset.
    pub mm2_offset: i64,
    /// How `offset` was found.
    pub rule: Rule,
}

impl PreciseOffset {
    /// MM2's offset kept because no sync at or below the upstream offset survives
    /// ([`Rule::NoSync`]).
    pub fn no_sync(mm2_offset: i64) -> Self {
        PreciseOffset {
            offset: mm2_offset,
            mm2_offset,
            rule: Rule::NoSync,
        }
    }

    /// Records a consumer no longer re-reads: `offset - mm2_offset` (never negative).
    pub fn rereads_saved(&self) -> i64 {
        self.offset - self.mm2_offset
    }
}

/// Counts of what the history showed for one partition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HistoryStats {
    /// Syncs kept.
    pub syncs: u64,
    /// Re-sent syncs (the same pair again), ignored.
    pub duplicates: u64,
    /// Task lifetimes seen (1 + upstream rewinds) since the last truncation.
    pub lifetimes: u64,
    /// Downstream regressions: history dropped before them.
    pub truncations: u64,
    /// Syncs with a negative offset, ignored.
    pub invalid: u64,
}

/// One offset sync: the record at upstream offset `upstream` was written at downstream offset
/// `downstream`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sync {
    pub(crate) upstream: i64,
    pub(crate) downstream: i64,
}

/// Syncs as a reader collects them, in log order: chunks that double in size up to
/// [`SyncChunks::MAX_CHUNK`] syncs. Growing never copies what was collected (a vector that
/// doubles would copy it again and again, and with a hundred partitions growing side by side
/// the allocator can seldom extend one in place), and a partition with one sync costs one
/// small allocation.
#[derive(Debug, Default)]
pub(crate) struct SyncChunks {
    chunks: Vec<Vec<Sync>>,
    len: usize,
}

impl SyncChunks {
    /// The largest chunk: 64 KiB, big enough that the allocator's cost per sync vanishes.
    const MAX_CHUNK: usize = 4096;
    const FIRST_CHUNK: usize = 8;

    /// Adds the sync that follows the ones collected.
    #[inline]
    pub(crate) fn push(&mut self, sync: Sync) {
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < chunk.capacity() => chunk.push(sync),
            _ => self.push_to_new_chunk(sync),
        }
        self.len += 1;
    }

    #[cold]
    fn push_to_new_chunk(&mut self, sync: Sync) {
        let size = (Self::FIRST_CHUNK << self.chunks.len().min(16)).min(Self::MAX_CHUNK);
        let mut chunk = Vec::with_capacity(size);
        chunk.push(sync);
        self.chunks.push(chunk);
    }

    /// Appends `later`, which follows these syncs in the log; its chunks are moved, not copied.
    pub(crate) fn append(&mut self, later: SyncChunks) {
        self.chunks.extend(later.chunks);
        self.len += later.len;
    }

    /// The syncs in log order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Sync> + '_ {
        self.chunks.iter().flatten().copied()
    }
}

/// One partition's syncs as read, in log order, nothing filtered yet: the reader hands over
/// each range's chunks without looking at them, and [`PartitionLog::finish`] reads the history
/// once.
#[derive(Debug, Default)]
struct PartitionLog {
    syncs: SyncChunks,
}

impl PartitionLog {
    /// One pass over the history in log order, copying it once into the index's own array:
    /// drops invalid and re-sent syncs and everything before a truncation, counts lifetimes,
    /// builds the one-for-one runs and tells whether the kept syncs are already sorted (one
    /// task lifetime). Then sorts only if they are not, and keeps the running maximum of the
    /// downstream offsets only if they are not increasing. No allocation beyond the array and
    /// the runs in the usual history.
    fn finish(self, interpolation: Interpolation) -> PartitionIndex {
        let mut syncs: Vec<Sync> = Vec::with_capacity(self.syncs.len);
        let mut stats = HistoryStats::default();
        let mut runs: Vec<Run> = Vec::new();
        let mut log_sorted = true;
        for sync in self.syncs.iter() {
            if sync.upstream < 0 || sync.downstream < 0 {
                stats.invalid += 1;
                continue;
            }
            match syncs.last().copied() {
                None => stats.lifetimes = 1,
                Some(last) if last == sync => {
                    stats.duplicates += 1;
                    continue;
                }
                Some(last) if sync.downstream <= last.downstream => {
                    stats.truncations += 1;
                    stats.lifetimes = 1;
                    syncs.clear();
                    runs.clear();
                    log_sorted = true;
                }
                Some(last) if sync.upstream <= last.upstream => {
                    stats.lifetimes += 1;
                    // Downstream offsets only grow past this point, so equal upstream offsets
                    // stay in (upstream, downstream) order.
                    log_sorted &= sync.upstream == last.upstream;
                }
                Some(last) => {
                    if interpolation == Interpolation::GaplessUpstream {
                        extend_runs(&mut runs, last, sync);
                    }
                }
            }
            syncs.push(sync);
        }
        let kept = syncs.len();
        stats.syncs = kept as u64;
        if !log_sorted {
            syncs.sort_unstable_by_key(|s| (s.upstream, s.downstream));
        }
        let best_downstream = if syncs.windows(2).all(|p| p[0].downstream < p[1].downstream) {
            Box::default()
        } else {
            let mut best = i64::MIN;
            syncs
                .iter()
                .map(|s| {
                    best = best.max(s.downstream);
                    best
                })
                .collect()
        };
        PartitionIndex {
            syncs: syncs.into_boxed_slice(),
            best_downstream,
            runs: envelope(runs).into(),
            stats,
        }
    }
}

/// `[start, end)` of upstream offsets that map to `U + delta`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    start: i64,
    end: i64,
    delta: i64,
}

/// Adds the stretch between `a` and the sync `b` that follows it in one lifetime (`a.upstream <
/// b.upstream`) if its steps are equal. The run covers both syncs, `[a.upstream, b.upstream]`:
/// at a sync the line `U + delta` meets the sync's own downstream offset, so including the ends
/// changes no answer (ties go to [`Rule::ExactSync`]) and lets the stretches of one line join
/// into a single run. Stretches that share a sync always share their delta (`d - u` of that
/// sync), so a lifetime's uninterrupted history becomes one run, not one per sync.
fn extend_runs(runs: &mut Vec<Run>, a: Sync, b: Sync) {
    let step = b.upstream - a.upstream;
    if b.downstream - a.downstream != step {
        return;
    }
    let delta = a.downstream - a.upstream;
    // `end` is exclusive; an upstream offset of i64::MAX is still answered as an exact sync.
    let end = b.upstream.saturating_add(1);
    match runs.last_mut() {
        Some(last) if last.end == a.upstream + 1 && last.delta == delta => last.end = end,
        _ => runs.push(Run {
            start: a.upstream,
            end,
            delta,
        }),
    }
}

/// Runs of different lifetimes may overlap; each is safe alone, so the upper envelope (greatest
/// delta per offset) is too. Returns disjoint runs sorted by start.
fn envelope(runs: Vec<Run>) -> Vec<Run> {
    // One task lifetime (the usual history) gives runs that are already sorted and disjoint:
    // their envelope is themselves, with touching runs of one delta joined, in one pass.
    if runs.windows(2).all(|pair| pair[0].end <= pair[1].start) {
        return join_touching(runs);
    }
    overlapping_envelope(runs)
}

/// Joins each run to the one before it when they touch and share a delta, in place.
fn join_touching(mut runs: Vec<Run>) -> Vec<Run> {
    runs.dedup_by(|next, last| {
        let touching = last.end == next.start && last.delta == next.delta;
        if touching {
            last.end = next.end;
        }
        touching
    });
    runs
}

/// [`envelope`] of runs that may overlap: cut at every start and end, keep the greatest delta
/// per piece.
fn overlapping_envelope(mut runs: Vec<Run>) -> Vec<Run> {
    runs.sort_unstable_by_key(|r| r.start);
    let mut cuts: Vec<i64> = runs.iter().flat_map(|r| [r.start, r.end]).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out: Vec<Run> = Vec::with_capacity(runs.len());
    // Max-heap of (delta, end) over the runs covering the current piece; stale ones are popped
    // lazily.
    let mut active: BinaryHeap<(i64, i64)> = BinaryHeap::new();
    let mut next = 0;
    for piece in cuts.windows(2) {
        let (start, end) = (piece[0], piece[1]);
        while next < runs.len() && runs[next].start <= start {
            active.push((runs[next].delta, runs[next].end));
            next += 1;
        }
        while active.peek().is_some_and(|&(_, run_end)| run_end <= start) {
            active.pop();
        }
        let Some(&(delta, _)) = active.peek() else {
            continue;
        };
        match out.last_mut() {
            Some(last) if last.end == start && last.delta == delta => last.end = end,
            _ => out.push(Run { start, end, delta }),
        }
    }
    out
}

/// The sync history of one partition, ready for lookups.
///
/// The kept syncs sit in one sorted array that a lookup binary-searches. The running maximum of
/// the downstream offsets exists only when they are not already increasing (a history with
/// restarts); a lifetime's one-for-one stretches are one run each.
#[derive(Clone, Debug)]
pub struct PartitionIndex {
    /// Every kept sync, sorted by upstream offset, then downstream offset.
    syncs: Box<[Sync]>,
    /// For each sync, the greatest downstream offset among it and all before it; empty when
    /// the downstream offsets increase along `syncs` (then each is its own maximum).
    best_downstream: Box<[i64]>,
    /// The interpolation runs, disjoint and sorted by start.
    runs: Box<[Run]>,
    stats: HistoryStats,
}

impl PartitionIndex {
    /// What the history showed.
    pub fn stats(&self) -> HistoryStats {
        self.stats
    }

    /// The greatest downstream offset the history proves at or before the next record at or
    /// after `upstream`, and the rule that proved it; `None` if no sync at or below `upstream`.
    pub fn translate(&self, upstream: i64) -> Option<(i64, Rule)> {
        self.translate_from(0, upstream).1
    }

    /// [`translate`](Self::translate), searching the syncs from position `from` on, which must
    /// be at or below the answer's position: a caller that looks up increasing offsets passes
    /// the position the previous lookup returned, and each search covers only the syncs
    /// between the two offsets. Returns the position of the first sync at or above `upstream`.
    pub(crate) fn translate_from(
        &self,
        from: usize,
        upstream: i64,
    ) -> (usize, Option<(i64, Rule)>) {
        let below = from + self.syncs[from..].partition_point(|s| s.upstream < upstream);
        // Syncs of `upstream` itself follow `below`; they are sorted by downstream offset, so
        // the last one holds the greatest. More than one only after restarts.
        let equal = self.syncs[below..]
            .iter()
            .take_while(|s| s.upstream == upstream)
            .count();
        let exact = (equal > 0).then(|| self.syncs[below + equal - 1].downstream);
        let after_sync = below.checked_sub(1).map(|i| self.best_downstream(i) + 1);
        let interpolated = if self.runs.is_empty() {
            None
        } else {
            let run = self.runs.partition_point(|r| r.start <= upstream);
            run.checked_sub(1)
                .map(|i| self.runs[i])
                .filter(|r| upstream < r.end)
                .map(|r| upstream + r.delta)
        };
        // Ties go to the most specific rule.
        let answer = [
            (exact, Rule::ExactSync),
            (interpolated, Rule::Interpolated),
            (after_sync, Rule::Mm2Rule),
        ]
        .into_iter()
        .filter_map(|(offset, rule)| offset.map(|o| (o, rule)))
        .fold(None, |best: Option<(i64, Rule)>, (o, rule)| match best {
            Some((b, _)) if b >= o => best,
            _ => Some((o, rule)),
        });
        (below, answer)
    }

    /// The kept syncs as `(upstream, downstream)` in log order, which is downstream order: the
    /// history kept after the last downstream regression has strictly increasing downstream
    /// offsets (what record matching and the re-read bound walk).
    pub fn log_order(&self) -> Vec<(i64, i64)> {
        let mut syncs: Vec<(i64, i64)> = self
            .syncs
            .iter()
            .map(|s| (s.upstream, s.downstream))
            .collect();
        if !self.best_downstream.is_empty() {
            syncs.sort_unstable_by_key(|&(_, d)| d);
        }
        syncs
    }

    /// The greatest downstream offset among the syncs `0..=at`.
    #[inline]
    fn best_downstream(&self, at: usize) -> i64 {
        match self.best_downstream.get(at) {
            Some(&best) => best,
            None => self.syncs[at].downstream,
        }
    }

    /// Translates `upstream` and never goes below MM2's checkpoint offset `mm2_offset`.
    ///
    /// Taking the maximum is safe: MM2's offset is at or before the next record by MM2's own
    /// rule, and so is the history's, so the greater one is too. It matters when compaction has
    /// removed syncs MM2 still held in memory when it wrote the checkpoint.
    pub fn translate_checkpoint(&self, upstream: i64, mm2_offset: i64) -> PreciseOffset {
        checkpoint_answer(self.translate(upstream), mm2_offset)
    }
}

/// A lookup's answer for a checkpoint whose MM2 offset is `mm2_offset`: the greater of the two.
pub(crate) fn checkpoint_answer(answer: Option<(i64, Rule)>, mm2_offset: i64) -> PreciseOffset {
    match answer {
        Some((offset, rule)) if offset > mm2_offset => PreciseOffset {
            offset,
            mm2_offset,
            rule,
        },
        Some(_) => PreciseOffset {
            offset: mm2_offset,
            mm2_offset,
            rule: Rule::Mm2Checkpoint,
        },
        None => PreciseOffset::no_sync(mm2_offset),
    }
}

/// Builds a [`SyncIndex`] from offset-sync records fed in log order.
#[derive(Debug, Default)]
pub struct SyncIndexBuilder {
    topics: FxHashMap<Box<[u8]>, FxHashMap<i32, PartitionLog>>,
}

impl SyncIndexBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one sync for upstream `topic`-`partition`. Must be called in log order: the order
    /// carries the lifetime and truncation signals. Allocates only for a partition not seen
    /// before (and as its history grows).
    pub fn add(&mut self, topic: &[u8], partition: i32, upstream: i64, downstream: i64) {
        self.extend(topic, partition, [(upstream, downstream)]);
    }

    /// Adds `syncs` (upstream, downstream) of upstream `topic`-`partition`, in log order, after
    /// the ones added before: what [`add`](Self::add) does for each, with one lookup of the
    /// partition for the whole run. Syncs of different partitions are independent, so a reader
    /// may group each range's syncs by partition and feed the groups range by range.
    pub fn extend(
        &mut self,
        topic: &[u8],
        partition: i32,
        syncs: impl IntoIterator<Item = (i64, i64)>,
    ) {
        let log = self.log(topic, partition);
        for (upstream, downstream) in syncs {
            log.syncs.push(Sync {
                upstream,
                downstream,
            });
        }
    }

    /// [`extend`](Self::extend) with a reader's own collection, whose chunks are moved in.
    pub(crate) fn append(&mut self, topic: &[u8], partition: i32, syncs: SyncChunks) {
        self.log(topic, partition).syncs.append(syncs);
    }

    fn log(&mut self, topic: &[u8], partition: i32) -> &mut PartitionLog {
        // Once per partition and range, so two lookups cost nothing; the name is copied only
        // for a topic not seen before.
        if !self.topics.contains_key(topic) {
            self.topics.insert(topic.into(), FxHashMap::default());
        }
        let partitions = self.topics.get_mut(topic).expect("inserted above");
        partitions.entry(partition).or_default()
    }

    /// Reads every partition's history for lookups.
    pub fn finish(self, interpolation: Interpolation) -> SyncIndex {
        let mut numbered = 0;
        let topics = self
            .topics
            .into_iter()
            .map(|(topic, parts)| {
                let mut partitions: Vec<(i32, PartitionIndex)> = parts
                    .into_iter()
                    .map(|(p, log)| (p, log.finish(interpolation)))
                    .collect();
                partitions.sort_unstable_by_key(|(p, _)| *p);
                let first_number = numbered;
                numbered += partitions.len();
                (
                    topic,
                    TopicSyncs {
                        partitions,
                        first_number,
                    },
                )
            })
            .collect();
        SyncIndex {
            topics,
            interpolation,
            partitions: numbered,
        }
    }
}

/// The sync histories of one upstream topic's partitions.
#[derive(Clone, Debug, Default)]
pub struct TopicSyncs {
    /// Sorted by partition: a topic has tens of partitions, so a binary search over them is a
    /// few compares in one or two cache lines.
    partitions: Vec<(i32, PartitionIndex)>,
    /// The number of this topic's first partition among all of the index's partitions (see
    /// [`TopicSyncs::numbered`]).
    first_number: usize,
}

impl TopicSyncs {
    /// One partition's history and its number among all of the index's partitions (`0..`
    /// [`SyncIndex::partitions`]), for callers that bucket lookups by partition.
    pub(crate) fn numbered(&self, partition: i32) -> Option<(usize, &PartitionIndex)> {
        let at = self
            .partitions
            .binary_search_by_key(&partition, |(p, _)| *p)
            .ok()?;
        Some((self.first_number + at, &self.partitions[at].1))
    }

    /// One partition's history, if any sync for it survives.
    pub fn partition(&self, partition: i32) -> Option<&PartitionIndex> {
        self.numbered(partition).map(|(_, part)| part)
    }

    /// Translates a checkpoint's upstream offset for `partition`, keeping MM2's offset when no
    /// sync helps: [`SyncIndex::translate_checkpoint`] with the topic already looked up.
    pub fn translate_checkpoint(
        &self,
        partition: i32,
        upstream: i64,
        mm2_offset: i64,
    ) -> PreciseOffset {
        match self.partition(partition) {
            Some(part) => part.translate_checkpoint(upstream, mm2_offset),
            None => PreciseOffset::no_sync(mm2_offset),
        }
    }
}

/// Every partition's sync history, keyed by upstream topic (raw bytes, as in the sync keys) and
/// partition.
#[derive(Clone, Debug, Default)]
pub struct SyncIndex {
    topics: FxHashMap<Box<[u8]>, TopicSyncs>,
    interpolation: Interpolation,
    /// Number of partitions with history.
    partitions: usize,
}

impl SyncIndex {
    /// One upstream topic's histories, if any sync for it survives. Rows of one topic can look
    /// it up once and then go through [`TopicSyncs`].
    pub fn topic(&self, topic: &[u8]) -> Option<&TopicSyncs> {
        self.topics.get(topic)
    }

    /// One partition's history, if any sync for it survives.
    pub fn partition(&self, topic: &[u8], partition: i32) -> Option<&PartitionIndex> {
        self.topic(topic)?.partition(partition)
    }

    /// Translates a checkpoint's upstream offset, keeping MM2's offset when no sync helps.
    pub fn translate_checkpoint(
        &self,
        topic: &[u8],
        partition: i32,
        upstream: i64,
        mm2_offset: i64,
    ) -> PreciseOffset {
        match self.topic(topic) {
            Some(topic) => topic.translate_checkpoint(partition, upstream, mm2_offset),
            None => PreciseOffset::no_sync(mm2_offset),
        }
    }

    /// Every partition's history: (upstream topic, partition, history), in no set order.
    pub fn each_partition(&self) -> impl Iterator<Item = (&[u8], i32, &PartitionIndex)> + '_ {
        self.topics.iter().flat_map(|(topic, syncs)| {
            syncs
                .partitions
                .iter()
                .map(move |(p, part)| (&topic[..], *p, part))
        })
    }

    /// Whether one-for-one stretches were interpolated.
    pub fn interpolation(&self) -> Interpolation {
        self.interpolation
    }

    /// Number of partitions with history.
    pub fn partitions(&self) -> usize {
        self.partitions
    }
}

#[cfg(test)]
#[path = "sync_index_tests.rs"]
mod tests;
