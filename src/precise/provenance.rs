//! Whether an offset-sync history belongs to the flow whose checkpoints it re-translates, before
//! a precise translation uses it.
//!
//! Any topic can be named as the offset-syncs topic, and a history of another flow (another
//! target, a recreated topic, another alias) under the same topic names decodes just as well:
//! re-translating with it moves groups past records they never read. So the history must prove
//! it is this flow's:
//!
//! 1. **Every record is an offset sync.** MirrorMaker 2 writes keys of exactly
//!    `{topic STRING, partition INT32}` and values of exactly `{upstreamOffset INT64, offset
//!    INT64}` (16 bytes). A record of any other shape (a checkpoint record, garbage, a null key
//!    or a tombstone, which MM2 never writes) refuses the topic, with counts.
//! 2. **It reproduces MM2's own checkpoints.** MM2 computed each checkpoint (U, D) of upstream
//!    partition K from a sync (u, d) of this topic that its `OffsetSyncStore` held, as
//!    `D = d + (u < U ? 1 : 0)` with `u <= U` (Kafka 3.5+, `OffsetSyncStore.translateDownstream`;
//!    `MirrorCheckpointTask` drops results below 0). A checkpoint is **reproduced** when a
//!    surviving K-sync gives its D that way.
//! 3. **Or compaction explains the gap.** The topic is compacted on (topic, partition) and MM2
//!    writes no tombstones, so what survives of K's history is a suffix in log order: every
//!    removed K-sync lies before the oldest surviving one (log offset o1, downstream d1), and
//!    downstream offsets only grow in log order, so each removed sync had `d < d1`. A checkpoint
//!    that is not reproduced is **explained by compaction** when `D <= d1` (or K has no
//!    surviving sync) AND the log shows removal at or below o1 (a log start above 0, or a hole
//!    between two records' offsets: the producer is not transactional, so holes mean removal).
//!    Such a partition keeps MM2's offset, and the summary says so.
//! 4. **Older forms** (MM2 before 3.5 wrote `D = d + (U - u)` from the latest sync, and before
//!    3.3 `D = U` without a sync) are accepted the same way: MM2's offset is kept and counted.
//! 5. Anything else is **unexplained**: the history cannot be the one MM2 computed these
//!    checkpoints from, and the precise translation is refused.
//!
//! A history of another flow under the same topic names fails 2 (its syncs give other downstream
//! offsets) and, unless compaction left it suspiciously empty, 3 (its oldest syncs lie far below
//! the checkpoints' D). The acceptance test and its argument are in the book ("Where the sync
//! history comes from").

use std::collections::{BTreeMap, HashMap};

use crate::mm2::ReplicationPolicy;
use crate::mm2::checkpoint;
use crate::translate::Translation;

/// What one range of the offset-syncs topic showed: the record offsets (for holes), the records
/// that are not offset syncs, and each partition's raw syncs with the log offset of its first.
#[derive(Debug, Default)]
pub(crate) struct RangeHistory {
    first: Option<i64>,
    last: i64,
    /// The offset of the first record in this range that follows a hole inside the range.
    first_hole: Option<i64>,
    not_syncs: NotSyncs,
    /// (interned topic, partition) -> its syncs in this range.
    partitions: HashMap<(u32, i32), PartitionHistory>,
}

/// Records of the offset-syncs topic that are not offset syncs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NotSyncs {
    /// Records that decode as MirrorMaker 2 checkpoints.
    pub checkpoints: u64,
    /// Records without a key, or without a value (tombstones).
    pub null_key_or_value: u64,
    /// Any other record whose key or value is not of an offset sync's exact shape.
    pub other: u64,
}

impl NotSyncs {
    fn total(&self) -> u64 {
        self.checkpoints + self.null_key_or_value + self.other
    }

    fn add(&mut self, other: NotSyncs) {
        self.checkpoints += other.checkpoints;
        self.null_key_or_value += other.null_key_or_value;
        self.other += other.other;
    }
}

impl RangeHistory {
    /// Notes the record at `offset` (every record of the range, in log order).
    #[inline]
    pub(crate) fn record(&mut self, offset: i64) {
        match self.first {
            None => self.first = Some(offset),
            Some(_) if offset > self.last + 1 && self.first_hole.is_none() => {
                self.first_hole = Some(offset)
            }
            Some(_) => {}
        }
        self.last = self.last.max(offset);
    }

    /// Whether a record of this key and value has the exact shape of an offset sync; if not, it
    /// is counted by kind.
    #[inline]
    pub(crate) fn is_sync(&mut self, key: Option<&[u8]>, value: Option<&[u8]>) -> bool {
        let (Some(key), Some(value)) = (key, value) else {
            self.not_syncs.null_key_or_value += 1;
            return false;
        };
        let exact_key = key.len() >= 2 && {
            let len = i16::from_be_bytes([key[0], key[1]]);
            len >= 0 && key.len() == 2 + len as usize + 4
        };
        if exact_key && value.len() == 16 {
            return true;
        }
        if checkpoint::decode_key(key).is_ok() && checkpoint::decode_value(value).is_ok() {
            self.not_syncs.checkpoints += 1;
        } else {
            self.not_syncs.other += 1;
        }
        false
    }

    /// Notes a decoded sync of (interned) `topic`-`partition` at `offset`.
    #[inline]
    pub(crate) fn sync(&mut self, topic: u32, partition: i32, offset: i64, u: i64, d: i64) {
        self.partitions
            .entry((topic, partition))
            .or_insert_with(|| PartitionHistory {
                first_offset: offset,
                syncs: Vec::new(),
            })
            .syncs
            .push((u, d));
    }
}

/// One upstream partition's surviving history, in log order.
#[derive(Debug, Default)]
struct PartitionHistory {
    /// Log offset of the oldest surviving sync.
    first_offset: i64,
    /// Raw (u, d), nothing filtered.
    syncs: Vec<(i64, i64)>,
}

/// The whole topic's surviving history, merged from the ranges in log order.
#[derive(Debug, Default)]
pub(crate) struct SyncHistory {
    /// The offset of the first record that follows a removal (a log start above 0 counts).
    first_removal: Option<i64>,
    not_syncs: NotSyncs,
    partitions: HashMap<(Box<[u8]>, i32), PartitionHistory>,
    /// The last record offset seen so far while merging.
    last: Option<i64>,
    /// Whether the history was read (false when the read was partial and nothing is trusted).
    complete: bool,
}

impl SyncHistory {
    /// An empty, complete history (the topic had no records).
    pub(crate) fn new() -> Self {
        SyncHistory {
            complete: true,
            ..SyncHistory::default()
        }
    }

    /// Appends one range's history; ranges must come in log order. `topics` resolves the
    /// range's interned topic numbers.
    pub(crate) fn append(&mut self, range: RangeHistory, topics: &[Box<[u8]>]) {
        if let Some(first) = range.first {
            let hole_before = match self.last {
                None => first > 0,
                Some(last) => first > last + 1,
            };
            let hole = if hole_before {
                Some(first)
            } else {
                range.first_hole
            };
            if self.first_removal.is_none() {
                self.first_removal = hole;
            }
            self.last = Some(self.last.map_or(range.last, |l| l.max(range.last)));
        }
        self.not_syncs.add(range.not_syncs);
        for ((topic, partition), part) in range.partitions {
            let name = topics[topic as usize].clone();
            match self.partitions.entry((name, partition)) {
                std::collections::hash_map::Entry::Occupied(mut e) => {
                    e.get_mut().syncs.extend(part.syncs)
                }
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(part);
                }
            }
        }
    }

    /// Marks the history as not read to its end: nothing in it is checked or trusted.
    pub(crate) fn incomplete(&mut self) {
        self.complete = false;
    }
}

/// How the checkpoints compared with the history.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Provenance {
    /// Checkpoints a surviving sync reproduces (MM2 3.5+'s rule).
    pub reproduced: u64,
    /// Checkpoints the history cannot reproduce because compaction removed the syncs MM2 used:
    /// they keep MM2's offset.
    pub compaction_explained: u64,
    /// Checkpoints of the rules of MM2 before 3.5: they keep MM2's offset.
    pub legacy: u64,
}

/// Why a history was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Records that are not offset syncs.
    NotSyncs(NotSyncs),
    /// Checkpoints the history cannot have produced: how many, and the first few.
    Unexplained { count: u64, examples: Vec<String> },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotSyncs(n) => write!(
                f,
                "{} record(s) of the topic are not offset syncs ({} checkpoint record(s), {} without a key or value, {} of another shape): it is not an offset-syncs topic",
                n.total(),
                n.checkpoints,
                n.null_key_or_value,
                n.other
            ),
            Refusal::Unexplained { count, examples } => write!(
                f,
                "its syncs do not reproduce {count} of MirrorMaker 2's own checkpoints, and compaction does not explain it (e.g. {}): it is not the history these checkpoints were computed from (another flow, alias or cluster, or a recreated topic)",
                examples.join("; ")
            ),
        }
    }
}

/// What a checkpoint's (U, D) is to the history of its upstream partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Reproduced,
    CompactionExplained,
    Legacy,
    Unexplained,
}

fn judge(
    history: Option<&PartitionHistory>,
    first_removal: Option<i64>,
    u: i64,
    d: i64,
) -> Verdict {
    let syncs = history.map_or(&[][..], |h| h.syncs.as_slice());
    // Offsets from the network: no arithmetic may overflow (an i64::MAX sync is just no match).
    let reproduced = syncs
        .iter()
        .any(|&(su, sd)| su <= u && sd.checked_add(i64::from(su < u)) == Some(d));
    if reproduced {
        return Verdict::Reproduced;
    }
    // The oldest surviving sync bounds what compaction can have removed.
    let below_oldest = syncs.first().is_none_or(|&(_, d1)| d <= d1);
    let removed = match (first_removal, history) {
        (Some(at), Some(h)) => at <= h.first_offset,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if below_oldest && removed {
        return Verdict::CompactionExplained;
    }
    let legacy = d == u
        || syncs.iter().any(|&(su, sd)| {
            su <= u && u.checked_sub(su).and_then(|gap| sd.checked_add(gap)) == Some(d)
        });
    if legacy {
        Verdict::Legacy
    } else {
        Verdict::Unexplained
    }
}

/// Part 1 alone: every record of the topic is an offset sync (failback checks it even where no
/// checkpoints can be compared).
pub(crate) fn check_shape(history: &SyncHistory) -> Result<(), Refusal> {
    if history.not_syncs.total() > 0 {
        return Err(Refusal::NotSyncs(history.not_syncs));
    }
    Ok(())
}

/// Checks `history` against the checkpoints of `translation` (MM2's offsets, before any
/// re-translation). Returns the counts and the rows (in `translation`'s order) that must keep
/// MM2's offset, or why the history is refused.
pub(crate) fn check(
    translation: &Translation,
    history: &SyncHistory,
    policy: &ReplicationPolicy,
) -> Result<(Provenance, Vec<bool>), Refusal> {
    check_shape(history)?;
    let mut out = Provenance::default();
    let mut keep = Vec::with_capacity(translation.len());
    if !history.complete {
        // Not read to its end: the caller keeps MM2's offset everywhere already.
        keep.resize(translation.len(), true);
        return Ok((out, keep));
    }
    let mut unexplained = 0u64;
    let mut examples = Vec::new();
    let mut upstream_names: BTreeMap<&str, &str> = BTreeMap::new();
    for o in translation.iter() {
        let upstream = *upstream_names
            .entry(o.topic)
            .or_insert_with(|| policy.upstream_topic(o.topic).unwrap_or(o.topic));
        let key = (Box::<[u8]>::from(upstream.as_bytes()), o.partition);
        let verdict = judge(
            history.partitions.get(&key),
            history.first_removal,
            o.upstream_offset,
            o.offset,
        );
        keep.push(verdict != Verdict::Reproduced);
        match verdict {
            Verdict::Reproduced => out.reproduced += 1,
            Verdict::CompactionExplained => out.compaction_explained += 1,
            Verdict::Legacy => out.legacy += 1,
            Verdict::Unexplained => {
                unexplained += 1;
                if examples.len() < 3 {
                    examples.push(format!(
                        "group {:?} {}-{}: checkpoint upstream {} -> downstream {}",
                        o.group, upstream, o.partition, o.upstream_offset, o.offset
                    ));
                }
            }
        }
    }
    if unexplained > 0 {
        return Err(Refusal::Unexplained {
            count: unexplained,
            examples,
        });
    }
    Ok((out, keep))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(first_offset: i64, syncs: &[(i64, i64)]) -> PartitionHistory {
        PartitionHistory {
            first_offset,
            syncs: syncs.to_vec(),
        }
    }

    #[test]
    fn mm2_rule_reproduces_with_any_surviving_sync_at_or_below() {
        // Syncs (0,0), (100,100), (200,250): MM2's store may have used any of them.
        let h = history(0, &[(0, 0), (100, 100), (200, 250)]);
        assert_eq!(judge(Some(&h), None, 150, 101), Verdict::Reproduced);
        assert_eq!(judge(Some(&h), None, 200, 250), Verdict::Reproduced);
        assert_eq!(judge(Some(&h), None, 250, 251), Verdict::Reproduced);
        // An older sync of the same lifetime, still in the 64 slots.
        assert_eq!(judge(Some(&h), None, 250, 101), Verdict::Reproduced);
        // A sync above U cannot have been used.
        assert_eq!(judge(Some(&h), None, 150, 251), Verdict::Unexplained);
    }

    #[test]
    fn compaction_explains_only_below_the_oldest_survivor_and_with_removal() {
        let h = history(40, &[(500, 480)]);
        // D below the oldest survivor and removal before it: kept as MM2's.
        assert_eq!(
            judge(Some(&h), Some(3), 300, 290),
            Verdict::CompactionExplained
        );
        // No removal shown by the log: another history.
        assert_eq!(judge(Some(&h), None, 300, 290), Verdict::Unexplained);
        // Removal only after the oldest survivor's offset cannot explain it.
        assert_eq!(judge(Some(&h), Some(41), 300, 290), Verdict::Unexplained);
        // Above the oldest survivor compaction removed nothing that mattered.
        assert_eq!(judge(Some(&h), Some(3), 600, 590), Verdict::Unexplained);
        // No surviving sync at all for the partition: removal anywhere explains it.
        assert_eq!(judge(None, Some(0), 300, 290), Verdict::CompactionExplained);
        assert_eq!(judge(None, None, 300, 290), Verdict::Unexplained);
    }

    #[test]
    fn another_flows_history_under_the_same_names_is_unexplained() {
        // This flow: syncs every 100 with downstream = upstream + 7.
        // The decoy: the same topic and partition, downstream = upstream - 46.
        let decoy = history(0, &[(0, 0), (100, 54), (200, 154)]);
        assert_eq!(judge(Some(&decoy), None, 150, 108), Verdict::Unexplained);
    }

    #[test]
    fn extreme_offsets_never_overflow() {
        let h = history(0, &[(i64::MIN, i64::MAX), (0, i64::MAX), (i64::MAX, 0)]);
        for (u, d) in [(i64::MAX, i64::MAX), (0, i64::MIN), (i64::MAX, 1), (-1, -1)] {
            let _ = judge(Some(&h), Some(0), u, d);
        }
    }

    #[test]
    fn older_mm2_rules_are_legacy() {
        let h = history(0, &[(100, 120)]);
        assert_eq!(judge(Some(&h), None, 130, 150), Verdict::Legacy);
        assert_eq!(judge(Some(&h), None, 130, 130), Verdict::Legacy);
    }

    #[test]
    fn shapes_other_than_a_sync_are_counted_by_kind() {
        use crate::mm2::checkpoint::{CheckpointKey, CheckpointValue};
        use crate::mm2::offset_sync::{OffsetSyncKey, OffsetSyncValue, encode_key, encode_value};
        let mut range = RangeHistory::default();
        let key = encode_key(&OffsetSyncKey {
            topic: b"orders",
            partition: 0,
        })
        .unwrap();
        let value = encode_value(&OffsetSyncValue {
            upstream_offset: 1,
            downstream_offset: 2,
        });
        assert!(range.is_sync(Some(&key), Some(&value)));
        let ck = checkpoint::encode_key(&CheckpointKey {
            group: b"g",
            topic: b"orders",
            partition: 0,
        })
        .unwrap();
        let cv = checkpoint::encode_value(&CheckpointValue {
            version: 0,
            upstream_offset: 5,
            downstream_offset: 5,
            metadata: b"",
        })
        .unwrap();
        assert!(!range.is_sync(Some(&ck), Some(&cv)));
        assert!(!range.is_sync(Some(b"garbage"), Some(b"x")));
        assert!(!range.is_sync(Some(&key), None));
        assert!(!range.is_sync(Some(&key), Some(&[0u8; 17])));
        assert_eq!(
            range.not_syncs,
            NotSyncs {
                checkpoints: 1,
                null_key_or_value: 1,
                other: 2
            }
        );
    }

    #[test]
    fn holes_between_and_inside_ranges_mark_removal() {
        let topics: Vec<Box<[u8]>> = vec![Box::from(&b"t"[..])];
        let mut a = RangeHistory::default();
        for o in [0, 1, 2] {
            a.record(o);
        }
        let mut b = RangeHistory::default();
        for o in [5, 6, 9] {
            b.record(o);
        }
        b.sync(0, 0, 9, 10, 10);
        let mut whole = SyncHistory::new();
        whole.append(a, &topics);
        whole.append(b, &topics);
        assert_eq!(whole.first_removal, Some(5));
        let mut late = RangeHistory::default();
        late.record(7);
        let mut h = SyncHistory::new();
        h.append(late, &topics);
        assert_eq!(h.first_removal, Some(7), "a log start above 0 is removal");
    }
}
