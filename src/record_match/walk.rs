//! The proof: for every downstream record read, bounds on the upstream record it copies, and
//! from them each row's answer.
//!
//! Write the records MirrorMaker 2 appended downstream, in offset order, as `p1, p2, ...`, and
//! `id(p)` for the upstream record `p` copies. For two consecutive ones `a`, `b`:
//! `id(b) <= next(id(a))`, where `next` is the next record MM2's consumer delivered: one task
//! lifetime reads in order with one request in flight (a retried batch re-sends an earlier
//! one), and a new lifetime resumes at Connect's committed source offset, which never passes
//! the last acknowledged record. Equivalently `id(a) >= prev(id(b))`. A sync `(u, d)` says
//! `id(d) = u`.
//!
//! * **Upper bounds**, walking forward from a sync: `ub(b) = next^k(ub(a))`, `k` being 1 plus
//!   the downstream offsets between `a` and `b` that are neither data nor markers (removed
//!   copies). `next` runs over the upstream records read that are not in aborted
//!   transactions: fewer records than MM2 delivered, so each step goes at least as far. Then
//!   the content narrows it: `id(b)` is at most `x = next^k(ub(a))` and holds `b`'s content, so
//!   it is at most the greatest upstream `j <= x` with that content, if every offset in
//!   `[j, x]` was read and none above `j` is a hole (aborted records count here: a default
//!   MirrorMaker 2 copies them). A hole may have held `id(b)`: the cleaner of a compacted
//!   topic drops aborted records whatever follows them, so an earlier twin proves nothing.
//! * **Lower bounds**, walking backward from a sync: `lb(a) = prev^k(lb(b))`, and at least
//!   `u + 1` for the last sync `(u, d)` with `d < a` (the floor: each task lifetime's first
//!   sync reaches the topic, so the lifetime that wrote `a` also wrote `d`, and after the
//!   acknowledged record `d` it sends only later records, one request in flight); narrowed up
//!   to the least `j >= y` with `a`'s content when `[y, j]` was read and holds no hole (a hole
//!   may have held `id(a)`). The floor is what bounds the records after the partition's last
//!   sync, where no later sync or record does: the tip.
//!
//! When `lb(p) == ub(p)`, `p` is proven to copy that record. A bound that crosses the other,
//! or a sync whose records differ, means the flow is not what this model describes (another
//! writer, converters that change bytes, a recreated topic): the partition is not matched.
//!
//! **A row** with upstream offset `U`: `A` is the first upstream record at or after `U` (no
//! hole between them, or `A` may not be the group's next record). The exact position is the
//! last copy of `A`. The answer is the last window record `w` proven to copy `A` when no record
//! after it in the window may copy `A` (each later record with `A`'s content has
//! `lb > A`), and no later record proves an earlier record re-copied after `w` (which would
//! put a later copy of `A` after it). The window ends where no copy of `A` can follow (see
//! [`super::history`]) or at the log end.

use super::digest::{Digest, full_digest, same_content};
use super::side::{Rec, Side, UNKNOWN_GAP};
use crate::record_match::history::LogOrder;

/// An unknown upper bound.
pub(crate) const HIGH: i64 = i64::MAX;
/// An unknown lower bound.
pub(crate) const LOW: i64 = i64::MIN;
/// No upstream record index.
const NO_RECORD: u32 = u32::MAX;
/// The most records of one quick digest a lookup compares one by one; a longer run (records
/// that differ only between the digest's samples, or identical ones) is told apart by the
/// full digest too, computed for that run alone.
const SPLIT_AFTER: usize = 8;

/// The upstream records read, indexed for the walk.
pub(crate) struct Upstream<'a> {
    pub(crate) side: &'a Side,
    /// Offsets of the records not in aborted transactions, sorted.
    committed: Vec<i64>,
    /// The downstream side read, whose records are compared with these.
    down: &'a Side,
    /// Every record's index by content: `(quick digest, full digest, index)`, sorted, so the
    /// records of one content are a run in offset order. The full digest is 0 except in a
    /// quick digest's run longer than [`SPLIT_AFTER`] (see [`Upstream::candidates`]). Built
    /// at the first lookup: in a one-for-one stretch each record is found at the offset the
    /// walk expects it, and a partition copied one for one needs no index at all.
    by_content: std::sync::OnceLock<Vec<(Digest, u32, u32)>>,
    /// Timestamps say nothing (a LogAppendTime replica): compare contents only.
    ignore_timestamps: bool,
}

impl<'a> Upstream<'a> {
    /// The upstream side `side`, to be compared with the downstream side `down`.
    pub(crate) fn new(side: &'a Side, down: &'a Side) -> Self {
        let committed = side
            .records
            .iter()
            .filter(|r| r.committed)
            .map(|r| r.offset)
            .collect();
        Upstream {
            side,
            committed,
            down,
            by_content: std::sync::OnceLock::new(),
            ignore_timestamps: down.log_append_time,
        }
    }

    /// [`Upstream::by_content`], built on first use.
    fn by_content(&self) -> &[(Digest, u32, u32)] {
        self.by_content.get_or_init(|| {
            let side = self.side;
            let mut by_content: Vec<(Digest, u32, u32)> = (side.records.iter().enumerate())
                .map(|(i, r)| (r.digest, 0, i as u32))
                .collect();
            by_content.sort_unstable();
            let mut at = 0;
            while at < by_content.len() {
                let quick = by_content[at].0;
                let run = by_content[at..].partition_point(|e| e.0 == quick);
                if run > SPLIT_AFTER {
                    let run = &mut by_content[at..at + run];
                    for e in run.iter_mut() {
                        e.1 = full_digest(side.content(&side.records[e.2 as usize]));
                    }
                    run.sort_unstable();
                }
                at += run;
            }
            by_content
        })
    }

    /// The upstream records that may hold `down`'s content, as `by_content` entries in offset
    /// order: those of its quick digest, or, when more than [`SPLIT_AFTER`] share that, those
    /// that also share its full digest. So a lookup compares at most [`SPLIT_AFTER`] records
    /// that differ, unless their CRC32C was made to collide (a cost, never a wrong answer).
    fn candidates(&self, down: &Rec) -> &[(Digest, u32, u32)] {
        let all = self.by_content();
        let start = all.partition_point(|e| e.0 < down.digest);
        let run = &all[start..start + all[start..].partition_point(|e| e.0 == down.digest)];
        if run.len() <= SPLIT_AFTER {
            return run;
        }
        let full = full_digest(self.down.content(down));
        let start = run.partition_point(|e| e.1 < full);
        &run[start..start + run[start..].partition_point(|e| e.1 == full)]
    }

    /// Whether downstream record `down` may be a copy of upstream record `up`: the same
    /// content, byte for byte once the digests agree, and the same timestamp. An upstream
    /// record without a timestamp (-1) was stamped by MM2's producer.
    pub(crate) fn same(&self, up: &Rec, down: &Rec) -> bool {
        (self.ignore_timestamps || up.timestamp < 0 || up.timestamp == down.timestamp)
            && same_content(
                (up.digest, self.side.content(up)),
                (down.digest, self.down.content(down)),
            )
    }

    /// The `n`-th committed record after `v`, or [`HIGH`] past what was read.
    pub(crate) fn next_pow(&self, v: i64, n: i64) -> i64 {
        self.next_pow_near(v, n, &mut 0)
    }

    /// [`Upstream::next_pow`], looking first where `cursor` says the search lands and leaving
    /// it where the next step of a forward walk will land: one step after another mostly moves
    /// one record on, and a binary search per step cost more than the rest of the step.
    fn next_pow_near(&self, v: i64, n: i64, cursor: &mut usize) -> i64 {
        if v == HIGH {
            return HIGH;
        }
        let at = point_near(&self.committed, *cursor, |o| o <= v);
        let Ok(k) = usize::try_from(n - 1) else {
            return HIGH;
        };
        *cursor = at + k + 1;
        self.committed.get(at + k).copied().unwrap_or(HIGH)
    }

    /// The `n`-th committed record before `v`, or [`LOW`] before what was read; `cursor` as
    /// for [`Upstream::next_pow_near`], walking backward.
    fn prev_pow_near(&self, v: i64, n: i64, cursor: &mut usize) -> i64 {
        if v == LOW {
            return LOW;
        }
        let at = point_near(&self.committed, *cursor, |o| o < v);
        let Some(i) = usize::try_from(n).ok().and_then(|k| at.checked_sub(k)) else {
            return LOW;
        };
        *cursor = i;
        self.committed[i]
    }

    /// The greatest upstream offset at or below `x` holding `down`'s content, if `[it, x]`
    /// was read and holds no hole above it; else `x`. Also the index of the upstream record
    /// found the same as `down` ([`NO_RECORD`] if none): the walk's later comparisons of that
    /// pair reuse it instead of comparing the bytes again.
    ///
    /// `hint`: the index the record at `x` is expected at (the one after the previous
    /// downstream record's match). The record at `x` itself, when it has `down`'s content, is
    /// that greatest one: in a one-for-one stretch (nearly every record) it is, and the digest
    /// index is not searched at all.
    fn snap_down(&self, x: i64, down: &Rec, hint: usize) -> (i64, u32) {
        let records = &self.side.records;
        if let Some(i) = self.side.index_of(x, hint)
            && self.same(&records[i], down)
        {
            return (self.bound_below(x, x), i as u32);
        }
        let list = self.candidates(down);
        let end = list.partition_point(|&(_, _, i)| records[i as usize].offset <= x);
        for &(_, _, i) in list[..end].iter().rev() {
            let up = &records[i as usize];
            if self.same(up, down) {
                return (self.bound_below(up.offset, x), i);
            }
        }
        (x, NO_RECORD)
    }

    /// `j`, the greatest offset at or below `x` with a downstream record's content, as its
    /// upper bound when `[j, x]` was read and no hole lies above `j`; else `x`. A hole above j
    /// may have held id(b): the cleaner drops aborted records whatever came later, so the
    /// records below are no proof.
    fn bound_below(&self, j: i64, x: i64) -> i64 {
        let end = x.saturating_add(1);
        if self.side.covers(j, end) && !self.side.has_hole(j + 1, end) {
            j
        } else {
            x
        }
    }

    /// [`Upstream::same`] for upstream record index `i`, known the same already when it is
    /// `confirmed` (found by [`Upstream::snap_down`] for this `down`).
    fn same_at(&self, i: u32, confirmed: u32, down: &Rec) -> bool {
        i == confirmed || self.same(&self.side.records[i as usize], down)
    }

    /// The least upstream offset at or above `y` holding `down`'s content, if `[y, it]` was
    /// read and holds no hole; else `y`. `confirmed`: as for [`Upstream::same_at`].
    ///
    /// The record at `y` itself, when it has `down`'s content, is that least one: in a
    /// one-for-one stretch it is the record the forward walk confirmed (`confirmed`, also the
    /// hint where to find it), and neither the digest index nor the bytes are looked at again.
    fn snap_up(&self, y: i64, down: &Rec, confirmed: u32) -> i64 {
        let records = &self.side.records;
        if let Some(i) = self.side.index_of(y, confirmed as usize)
            && self.same_at(i as u32, confirmed, down)
        {
            // [y, y] holds the record read there, so no hole: the least is y either way.
            return y;
        }
        let list = self.candidates(down);
        let start = list.partition_point(|&(_, _, i)| records[i as usize].offset < y);
        for &(_, _, i) in &list[start..] {
            let up = &records[i as usize];
            if self.same_at(i, confirmed, down) {
                let j = up.offset;
                return if self.side.covers(y, j + 1) && !self.side.has_hole(y, j + 1) {
                    j
                } else {
                    y
                };
            }
        }
        y
    }
}

/// `sorted.partition_point(pred)`, trying `guess` first.
fn point_near(sorted: &[i64], guess: usize, pred: impl Fn(i64) -> bool) -> usize {
    let lands = guess <= sorted.len()
        && (guess == 0 || pred(sorted[guess - 1]))
        && sorted.get(guess).is_none_or(|&o| !pred(o));
    if lands {
        guess
    } else {
        sorted.partition_point(|&o| pred(o))
    }
}

/// Why the walk refused a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Violation {
    /// At a sync, the downstream record's content is not the upstream record's.
    SyncContent { downstream: i64 },
    /// A bound crossed the other, or a sync contradicts the propagated bound.
    Bounds { downstream: i64 },
}

/// Bounds on `id(p)` for every downstream record read, in `down.records`' order.
pub(crate) struct Bounds {
    pub(crate) ub: Vec<i64>,
    pub(crate) lb: Vec<i64>,
    /// Both never decrease along the records (no restart's re-copies or duplicates among
    /// them): a row's answer is then found by binary search ([`Matched::answer_sorted`]).
    sorted: bool,
}

/// Both walks over the downstream records read. `upstream_end` is the upstream's end, read
/// after the downstream's: every record copied downstream by then lies below it.
pub(crate) fn bounds(
    up: &Upstream<'_>,
    down: &Side,
    log: &LogOrder,
    upstream_end: i64,
) -> Result<Bounds, Violation> {
    debug_assert!(
        std::ptr::eq(up.down, down),
        "the walk compares the downstream side the upstream was paired with"
    );
    let records = &down.records;
    let n = records.len();
    let mut ub = vec![HIGH; n];
    // Per downstream record, the upstream record the forward walk found byte for byte the
    // same: the backward walk and the sync check meet that pair again (in a one-for-one
    // stretch, always), and a second comparison of the same bytes would cost a pass.
    let mut confirmed = vec![NO_RECORD; n];
    // Where the last step's search over the committed records landed (see next_pow_near).
    let mut forward = 0;
    for k in 0..n {
        let r = &records[k];
        // Every record copied downstream by the time the downstream end was read lies below
        // the upstream end read after it: the bound where nothing before `r` gives one (the
        // first record read, as in a window from the replica's log start, or after a gap of
        // unknown size). Its content narrows it when the upstream was read to its end.
        let mut x = upstream_end - 1;
        if k > 0 && r.gap_before != UNKNOWN_GAP && ub[k - 1] != HIGH {
            // Past the last committed record read, the next record can only be one of those
            // after it (aborted, or not read): below the upstream end in any case.
            x = up
                .next_pow_near(ub[k - 1], i64::from(r.gap_before) + 1, &mut forward)
                .min(upstream_end - 1);
        }
        let hint = match k.checked_sub(1).map(|p| confirmed[p]) {
            Some(i) if i != NO_RECORD => i as usize + 1,
            _ => 0,
        };
        let synced = log.upstream_at(r.offset);
        // A synced record whose sync's upstream record has its content, within the bound:
        // the snap would find that record or a later one, both at or above u, and the sync
        // sets the bound to u. So the answer is u without the snap's search, which for a
        // window's first record (no bound before it, and windows start at syncs) would build
        // the digest index for that one record.
        if let Some(u) = synced
            && x >= u
            && let Some(i) = up.side.index_of(u, hint)
            && up.same(&up.side.records[i], r)
        {
            confirmed[k] = i as u32;
            ub[k] = u;
            continue;
        }
        let (snapped, same) = up.snap_down(x, r, hint);
        x = snapped;
        confirmed[k] = same;
        if let Some(u) = synced {
            check_sync(up, r, u, same)?;
            if x < u {
                return Err(Violation::Bounds {
                    downstream: r.offset,
                });
            }
            x = u;
        }
        ub[k] = x;
    }
    let mut lb = vec![LOW; n];
    let syncs = log.syncs();
    let mut backward = up.committed.len();
    for k in (0..n).rev() {
        let r = &records[k];
        let mut y = LOW;
        if let Some(next) = records.get(k + 1)
            && next.gap_before != UNKNOWN_GAP
        {
            y = up.prev_pow_near(lb[k + 1], i64::from(next.gap_before) + 1, &mut backward);
        }
        let synced = log.upstream_at(r.offset);
        // Unless `r` is synced (it may then be a lifetime's first record), the lifetime that
        // wrote it wrote the last sync before it, and after that sync only later records (see
        // the module documentation): a floor where no record after `r` bounds it, as at the
        // partition's tip.
        // A retried first batch of the next lifetime lands before that lifetime's first sync
        // (which names the acknowledged copy), and so does the batch of a lifetime that died
        // before any acknowledgement: those copy records at or after the next sync's (the
        // committed source offset never goes back), so the floor is the lesser of the two.
        let at = syncs.partition_point(|&(_, d)| d < r.offset);
        if synced.is_none()
            && let Some(&(u, _)) = at.checked_sub(1).and_then(|i| syncs.get(i))
        {
            let next = syncs.get(at).map_or(HIGH, |&(u, _)| u);
            y = y.max(u.saturating_add(1).min(next));
        }
        if y != LOW {
            y = up.snap_up(y, r, confirmed[k]);
        }
        if let Some(u) = synced {
            if y > u {
                return Err(Violation::Bounds {
                    downstream: r.offset,
                });
            }
            y = u;
        }
        if y > ub[k] {
            return Err(Violation::Bounds {
                downstream: r.offset,
            });
        }
        lb[k] = y;
    }
    let sorted = ub.is_sorted() && lb.is_sorted();
    Ok(Bounds { ub, lb, sorted })
}

/// A sync `(u, d)`: the record read at `d` must have the content of upstream `u`, when `u`
/// was read. `confirmed`: as for [`Upstream::same_at`].
fn check_sync(up: &Upstream<'_>, down: &Rec, u: i64, confirmed: u32) -> Result<(), Violation> {
    let at = up.side.first_at(u);
    match up.side.records.get(at) {
        Some(record) if record.offset == u && !up.same_at(at as u32, confirmed, down) => {
            Err(Violation::SyncContent {
                downstream: down.offset,
            })
        }
        _ => Ok(()),
    }
}

/// Why a row keeps the offset the syncs prove.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unmatched {
    /// No sync below the upstream offset: no window.
    NoSync,
    /// The window's records would exceed the byte budget.
    Budget,
    /// The upstream records at the offset are gone (retention).
    PastRetention,
    /// The window was not read (a read failed or the deadline passed).
    NotRead,
    /// Records between the upstream offset and the next record were removed (compaction):
    /// the group's next record is not known.
    UpstreamGap,
    /// No record of the window is proven to copy the group's next record (not copied yet,
    /// or the records differ).
    NoMatch,
    /// Several records may copy it and none is proven the last.
    Ambiguous,
    /// The partition's records contradict the sync history: a sync whose two records differ,
    /// or bounds that cross.
    Inconsistent,
}

impl Unmatched {
    /// The reason's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Unmatched::NoSync => "no-sync",
            Unmatched::Budget => "budget",
            Unmatched::PastRetention => "past-retention",
            Unmatched::NotRead => "not-read",
            Unmatched::UpstreamGap => "upstream-gap",
            Unmatched::NoMatch => "no-match",
            Unmatched::Ambiguous => "ambiguous",
            Unmatched::Inconsistent => "inconsistent",
        }
    }
}

/// One row's window: downstream `[start, end]` (`end` inclusive, or the log end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) start: i64,
    /// Inclusive; [`Ends::downstream`] - 1 or less.
    pub(crate) end: i64,
}

/// The partition's ends as read before matching: downstream first, so that every record
/// copied by then existed upstream when the upstream end was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ends {
    pub(crate) downstream: i64,
    pub(crate) upstream: i64,
    pub(crate) upstream_start: i64,
}

/// A partition's read, ready for rows.
pub(crate) struct Matched<'a> {
    pub(crate) up: Upstream<'a>,
    pub(crate) down: &'a Side,
    pub(crate) bounds: Bounds,
    pub(crate) ends: Ends,
}

impl Matched<'_> {
    /// The exact downstream offset for upstream offset `upstream`, or why there is none.
    pub(crate) fn answer(&self, upstream: i64, window: Option<Window>) -> Result<i64, Unmatched> {
        if window.is_none() && upstream < self.ends.upstream {
            return Err(Unmatched::NoSync);
        }
        let up = &self.up;
        let side = up.side;
        // Where the group's next record is: the first record at or after U, with nothing
        // but markers between them.
        let next = side.records.get(side.first_at(upstream));
        let read_from_u = |to: i64| side.covers(upstream, to) && !side.has_hole(upstream, to);
        let a = match next {
            Some(a) if read_from_u(a.offset + 1) => a,
            _ if upstream >= self.ends.upstream || read_from_u(self.ends.upstream) => {
                // No record at or after U existed when the downstream end was read (only
                // markers, if anything): every copy there is of a record before U.
                return Ok(self.ends.downstream);
            }
            _ if upstream < self.ends.upstream_start => return Err(Unmatched::PastRetention),
            // A hole right after U: the group's next record may have been in it.
            _ if side.covers(upstream, upstream + 1) && side.has_hole(upstream, upstream + 1) => {
                return Err(Unmatched::UpstreamGap);
            }
            Some(a) if side.covers(upstream, a.offset + 1) => return Err(Unmatched::UpstreamGap),
            _ => return Err(Unmatched::NotRead),
        };
        let window = window.ok_or(Unmatched::NoSync)?;
        if !self.down.covers(window.start, window.end + 1) {
            return Err(Unmatched::NotRead);
        }
        let records = &self.down.records;
        let from = self.down.first_at(window.start);
        let to = self.down.first_at(window.end + 1);
        if let Some(at) = self.answer_sorted(a, from, to) {
            return Ok(at);
        }
        let (ub, lb) = (&self.bounds.ub, &self.bounds.lb);
        let mut witness: Option<usize> = None;
        let mut best: Option<i64> = None;
        for k in from..to {
            if ub[k] <= a.offset {
                let candidate = records[k].offset + i64::from(ub[k] < a.offset);
                best = Some(best.map_or(candidate, |b| b.max(candidate)));
                if ub[k] == a.offset && lb[k] == a.offset {
                    witness = Some(k);
                }
            }
        }
        let copies = || {
            (from..to)
                .filter(|&k| up.same(a, &records[k]))
                .map(|k| (records[k].offset, lb[k], ub[k]))
                .collect::<Vec<_>>()
        };
        let Some(w) = witness else {
            let copies = copies();
            tracing::debug!(
                upstream,
                next = a.offset,
                ?window,
                ?copies,
                "no copy proven"
            );
            return Err(if copies.is_empty() {
                Unmatched::NoMatch
            } else {
                Unmatched::Ambiguous
            });
        };
        let at = records[w].offset;
        if best.is_some_and(|b| b > at) {
            tracing::debug!(
                upstream,
                at,
                ?best,
                "a later record proves an earlier one re-copied"
            );
            return Err(Unmatched::Ambiguous);
        }
        if (w + 1..to).any(|k| up.same(a, &records[k]) && lb[k] <= a.offset) {
            tracing::debug!(upstream, at, copies = ?copies(), "a later copy is not ruled out");
            return Err(Unmatched::Ambiguous);
        }
        Ok(at)
    }

    /// [`Matched::answer`]'s proven answer for next record `a` over window records
    /// `from..to`, found by binary search where the bounds never decrease; `None` when they do,
    /// or when the answer is not the plain one (then the scan decides, and says why).
    ///
    /// With sorted bounds the records whose upper bound is at most `A` are a prefix of the
    /// window; the last of them, `w`, is the last that can be the witness, and being the
    /// greatest offset among them it is the greatest candidate too. It answers when both its
    /// bounds are `A` and no record after it with a lower bound at most `A` (a prefix of the
    /// rest) has `a`'s content: exactly the scan's conditions.
    fn answer_sorted(&self, a: &Rec, from: usize, to: usize) -> Option<i64> {
        if !self.bounds.sorted {
            return None;
        }
        let (ub, lb) = (&self.bounds.ub, &self.bounds.lb);
        let w = (from + ub[from..to].partition_point(|&u| u <= a.offset)).checked_sub(1)?;
        if w < from || ub[w] != a.offset || lb[w] != a.offset {
            return None;
        }
        let rest = w + 1..to;
        let may_copy_later = rest.start + lb[rest.clone()].partition_point(|&l| l <= a.offset);
        let records = &self.down.records;
        if (rest.start..may_copy_later).any(|k| self.up.same(a, &records[k])) {
            return None;
        }
        Some(records[w].offset)
    }
}
