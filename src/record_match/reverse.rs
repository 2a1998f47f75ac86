//! Record matching backwards, for failback: from a group's offset `D` on a replica (the
//! backup's `primary.orders`) to the first record of the original topic (the primary's
//! `orders`) that the group has not read, proven by the records.
//!
//! MirrorMaker 2 copied the primary's records *to* the backup, so the walk of record matching
//! ([`super`]) runs unchanged: the upstream is the primary, the downstream the
//! backup, and for every backup record read it bounds the primary record it copies
//! (`lb <= id <= ub`). A group at `D` has read
//! every backup record below `D`; the no-skip property (see [`super`]) makes the primary records
//! copied below `D` every record MM2 delivered up to the greatest of them, `M`. The group's first
//! unread record is the first record after `M`.
//!
//! **The answer.** Let `(u0, d0)` be the greatest sync with `d0 < D`, and `a` the last data
//! record below `D` (at or after `d0`). `L` is the greatest upper bound among the records read
//! below `D` when one of them is proven to copy it (`lb == ub == L`; inside or after a restart's
//! duplicate block, the first copies of records past the block), else what the walk proves `a`
//! copies (`lb(a) == ub(a) == L`). Then `M >= L`, and `X`, the first data record of the primary
//! after `L` (nothing but markers between them, no record removed), is never past the group's
//! first unread record: the safety of every answer. At the tip (no sync after `D`) the walk's
//! floor (see [`super`]) is what bounds `a` from below.
//!
//! **Exact** means `M == L`: no record below `D` copies a record past `L`. By no-skip the
//! records copied below `D` are every record MM2 delivered from the replica's first one
//! (`r0 <= L`) up to `M`, so if `M > L` then `X` itself (delivered: a committed record, or an
//! aborted one a later record is proven to copy) has a copy below `D`. So it is enough that no
//! record below `D` copies `X`, checked in three parts of the replica:
//! * `[s, D)`, read, from a sync `s` up to [`LOOKBACK`] offsets below `d0`: every record either
//!   differs from `X` in content or has bounds that exclude `X`, and no offset lacks both a
//!   record and a marker (a record removed since could have been a copy);
//! * below `s`, between two kept syncs `(u_j, d_j)` and `(u_k, d_k)` (consecutive in the
//!   history): by no-skip, the record at `d_j + i` copies at most the `i`-th record MM2
//!   delivered after `u_j`, and the `i`-th committed record read after `u_j` is at or past that
//!   (a subset of what MM2 delivered only goes further), so every record of the stretch copies
//!   at most `R_j`, the `(d_k - d_j - 1)`-th committed record read after `u_j`; every `R_j`
//!   below `s` must lie below `X`. This holds across MM2's restarts (no-skip does), and is what
//!   catches a restart that had copied further before MM2 went back: its stretch holds more
//!   offsets than records up to `X`;
//! * below the oldest kept sync `d1`, where no stretch bounds anything: when the replica still
//!   starts at offset 0 and `d1` is near ([`BOTTOM_MAX`] offsets), `[0, d1)` is read: no record
//!   removed, none that may copy `X`. Otherwise (retention removed the replica's start, or
//!   compaction of the offset-syncs topic left its oldest sync far in) it is the **residual
//!   assumption**: no copy of `X` lies below the oldest kept sync, which would take a restart
//!   of MM2 that went back further than the whole kept history (Connect's committed source
//!   offset lagging the copy by all of it). Such an answer says so
//!   ([`ReverseMatch::assumes_history`]).
//!
//! **After a failover** the group did not read the replica from its start: it processed the
//! primary's records below `P0` ([`ReverseRow::primary_offset`]), then read the replica from
//! where the failover put it. Then `L` is taken only from the records it must have read
//! (`read_since`), never below `P0 - 1`, and the checks below are unchanged: a record it read
//! past `L` would put a copy of `X` below `D`.
//!
//! Then the group has read everything up to `L` and nothing after it, and `X` is its first
//! unread record. A row short of any of this keeps the syncs' answer, with the reason
//! ([`ReverseUnmatched`]). `X` in an aborted transaction that no record read is proven to copy
//! is refused: a read_committed MM2 never delivers it, so the group's next record would be a
//! later one.

use crate::client::{Deadline, KafkaClient};
use crate::record_match::history::LogOrder;
use crate::record_match::plan::{ReadPlan, merged};
use crate::record_match::read::Stopped;
use crate::record_match::side::Side;
use crate::record_match::walk::{Bounds, Ends, HIGH, LOW, Upstream};
use crate::record_match::{
    Clusters, Direction, MatchOptions, MatchStats, PairEnds, PartitionJob, PartitionOutcome,
    by_partition, walk_bounds,
};

/// One row to match backwards: a group's offset on a replica.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReverseRow<'a> {
    /// The replica on the backup (downstream), e.g. `primary.orders`.
    pub downstream_topic: &'a str,
    /// The original topic on the primary (upstream), e.g. `orders`.
    pub upstream_topic: &'a str,
    /// The partition (the same on both sides).
    pub partition: i32,
    /// The group's committed offset on the replica: it has read every record it holds from
    /// where the group started on the replica up to this offset.
    pub downstream: i64,
    /// The group's committed offset on the primary, left there at the failover (`None`: none,
    /// or not known): the group processed every record below it on the primary, and started
    /// on the replica at a copy of a record at or before it. The records of the replica below
    /// that start (copies made before a restart of MM2 that went back) were never read: with
    /// it, only the replica's records the group must have read count (see the module
    /// documentation). Without it, the group is taken to have read every record below
    /// `downstream`.
    pub primary_offset: Option<i64>,
}

impl<'a> ReverseRow<'a> {
    /// A group's offset `downstream` on partition `partition` of the replica
    /// `downstream_topic` of `upstream_topic`.
    pub fn new(
        downstream_topic: &'a str,
        upstream_topic: &'a str,
        partition: i32,
        downstream: i64,
    ) -> Self {
        ReverseRow {
            downstream_topic,
            upstream_topic,
            partition,
            downstream,
            primary_offset: None,
        }
    }

    /// The same row, with the group's committed offset on the primary
    /// ([`primary_offset`](ReverseRow::primary_offset)).
    ///
    /// ```
    /// use mm2_offsets::record_match::reverse::ReverseRow;
    ///
    /// let row = ReverseRow::new("primary.orders", "orders", 0, 880).with_primary_offset(Some(300));
    /// assert_eq!((row.downstream, row.primary_offset), (880, Some(300)));
    /// ```
    pub fn with_primary_offset(self, primary_offset: Option<i64>) -> Self {
        ReverseRow {
            primary_offset,
            ..self
        }
    }
}

/// Why a failback row keeps the offset the syncs prove.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ReverseUnmatched {
    /// No sync strictly below the group's offset.
    NoSync,
    /// The records to read would exceed the byte budget.
    Budget,
    /// The records were not read (a read failed or the deadline passed).
    NotRead,
    /// Offsets below the group's offset on the replica hold neither a record nor a marker
    /// (compacted): the records removed could have copied anything.
    DownstreamGap,
    /// The record just below the group's offset is not proven to copy one record.
    NotProven,
    /// A record below the group's offset may copy the answer or a later record: MM2 copied
    /// further before it went back (a restart or a retried batch).
    EarlierCopy,
    /// Records removed on the primary right after the last one the group read: its first
    /// unread record is not known.
    UpstreamGap,
    /// The primary's next record is in an aborted transaction and no record read proves MM2
    /// copied it (a read_committed MM2 does not): the group's next one is not known.
    NextAborted,
    /// The partition's records contradict the sync history.
    Inconsistent,
}

impl ReverseUnmatched {
    /// The reason's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            ReverseUnmatched::NoSync => "no-sync",
            ReverseUnmatched::Budget => "budget",
            ReverseUnmatched::NotRead => "not-read",
            ReverseUnmatched::DownstreamGap => "downstream-gap",
            ReverseUnmatched::NotProven => "not-proven",
            ReverseUnmatched::EarlierCopy => "earlier-copy",
            ReverseUnmatched::UpstreamGap => "upstream-gap",
            ReverseUnmatched::NextAborted => "next-aborted",
            ReverseUnmatched::Inconsistent => "inconsistent",
        }
    }
}

/// The most replica offsets below the oldest kept sync read to rule out an earlier copy there
/// (a retried first batch leaves a few); beyond it the residual assumption stands.
pub const BOTTOM_MAX: i64 = 4096;

/// A proven failback answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReverseMatch {
    /// The primary offset of the group's first unread record.
    pub offset: i64,
    /// The replica's records below the oldest kept sync were not read (removed by retention,
    /// or more than [`BOTTOM_MAX`]): the answer rests on the residual assumption that none of
    /// them copies it.
    pub assumes_history: bool,
}

/// How far below the rule's sync the replica is read (offsets, to a sync): there every record
/// is checked by its content, which is tighter than the stretches' bound (that one counts only
/// committed records, so a stretch holding copies of aborted records reaches far).
pub const LOOKBACK: i64 = 1024;

/// One row's window: the rule's sync (its position in the history; `None` below the oldest
/// kept sync, see [`plan_head`]), the sync the downstream read starts at (the stretches below it
/// are bounded without reading), the offset it starts at, and where the read ends (exclusive:
/// past the next sync, whose pin bounds the records before it from below).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) sync: Option<usize>,
    pub(crate) from: usize,
    pub(crate) start: i64,
    pub(crate) end: i64,
}

/// The window of each row's downstream offset in `rows` (`None`: no sync strictly below it),
/// and the ranges to read. `readable_end` is where the upstream can be read to (its last stable
/// offset); `bottom` the part below the oldest sync to read ([`bottom`]); `lookback` how far
/// below the rule's sync to read ([`LOOKBACK`]).
pub(crate) fn plan(
    log: &LogOrder,
    rows: &[i64],
    ends: Ends,
    readable_end: i64,
    (bottom, lookback): (Option<i64>, i64),
) -> (Vec<Option<Window>>, ReadPlan) {
    let syncs = log.syncs();
    let spans = stretch_spans(syncs);
    let mut windows = Vec::with_capacity(rows.len());
    let mut read = ReadPlan::default();
    for &downstream in rows {
        // The greatest sync strictly below D: one at D itself says what the record there
        // copies, not what the group read below it (inside a restart's duplicate block, the
        // first copies of records past it).
        let at = syncs.partition_point(|&(_, d)| d < downstream);
        let Some(k) = at.checked_sub(1) else {
            windows.push(None);
            continue;
        };
        let (u0, d0) = syncs[k];
        let after = syncs.get(k + 1).copied();
        // With a later sync, up to it (its pin gives the records before it a lower bound);
        // without one only the records below D, where a sync at d0 itself is the proof.
        // The record at D too: what the group's next record copies says whether it read any
        // record of the replica after a failover (`read_since`).
        let end = match after {
            Some((_, d2)) => d2.saturating_add(1),
            None => downstream.saturating_add(1),
        }
        .min(ends.downstream);
        if d0 >= downstream || end <= d0 {
            windows.push(None);
            continue;
        }
        let from = syncs[..=k].partition_point(|&(_, d)| d0.saturating_sub(d) > lookback);
        windows.push(Some(Window {
            sync: Some(k),
            from,
            start: syncs[from].1,
            end,
        }));
        read.downstream.push((syncs[from].1, end));
        // Upstream: the window's records (each copies at most the i-th record after u0), and
        // back far enough that the stretches below the read can be bounded: each needs as many
        // committed records after its sync as it has offsets, and the widest one sets how far.
        // Each sync of the window bounds what its records copy: after a restart that went back
        // (a duplicate block, the last sync's upstream offset far below the ones before it),
        // the records copied before the restart copy primary records well above u0, and the
        // first record past them (the first without a copy, at the tip) must be read too.
        let reach = syncs[from..=k]
            .iter()
            .map(|&(u, d)| u.saturating_add(end - 1 - d))
            .max()
            .unwrap_or(u0)
            .max(after.map_or(u0, |(u2, _)| u2))
            .saturating_add(1);
        let lowest = syncs[from..(k + 2).min(syncs.len())]
            .iter()
            .map(|&(u, _)| u)
            .min()
            .unwrap_or(u0)
            .min(u0.saturating_sub(spans[from]));
        let margin = (reach.saturating_sub(lowest)) / 8 + 8;
        let lo = lowest.saturating_sub(margin).max(ends.upstream_start);
        let hi = reach.saturating_add(margin).min(readable_end);
        if lo < hi {
            read.upstream.push((lo, hi));
        }
    }
    if let Some(end) = bottom.filter(|&e| e > 0 && windows.iter().any(Option::is_some)) {
        read.downstream.push((0, end));
    }
    read.downstream = merged(read.downstream);
    read.upstream = merged(read.upstream);
    (windows, read)
}

/// The part below the oldest kept sync to read, when the replica still starts at 0 and it is
/// short ([`BOTTOM_MAX`]); `None`: nothing there to read, or not read (residual assumption).
pub(crate) fn bottom(log: &LogOrder, downstream_start: i64, max: i64) -> Option<i64> {
    let &(_, d1) = log.syncs().first()?;
    (downstream_start == 0 && d1 <= max).then_some(d1)
}

/// The windows of the rows below the partition's oldest kept sync (no sync strictly below the
/// group's offset `D`, the first kept one `(u1, d1)` at or above it), for a read of their own
/// after the other rows are answered, as forward matching's [`super::plan::plan_head`]: the
/// replica from its log start `downstream_start` to past `d1` (whose pin bounds the records
/// before it from below), the primary from its log start to `readable_end`. Nothing bounds the
/// first records of the replica but the upstream end, narrowed by content, which needs the
/// primary read to its end: that read is the price, bounded by the byte budget, and why these
/// windows never share a read with the others.
///
/// The group has then read every record of the replica that is still there; what lies below
/// the replica's log start (removed by retention) is the residual assumption, as below the
/// oldest kept sync elsewhere ([`ReverseMatch::assumes_history`]).
pub(crate) fn plan_head(
    log: &LogOrder,
    rows: &[i64],
    ends: Ends,
    downstream_start: i64,
    readable_end: i64,
) -> (Vec<Option<Window>>, ReadPlan) {
    let mut windows = Vec::with_capacity(rows.len());
    let mut read = ReadPlan::default();
    let oldest = log.syncs().first().map(|&(_, d1)| d1);
    for &downstream in rows {
        let window = oldest
            .filter(|&d1| downstream <= d1 && downstream > downstream_start)
            .map(|d1| Window {
                sync: None,
                from: 0,
                start: downstream_start,
                end: d1.saturating_add(1).min(ends.downstream),
            })
            .filter(|w| downstream <= w.end);
        if let Some(w) = window {
            read.downstream.push((w.start, w.end));
            if ends.upstream_start < readable_end {
                read.upstream.push((ends.upstream_start, readable_end));
            }
        }
        windows.push(window);
    }
    read.downstream = merged(read.downstream);
    read.upstream = merged(read.upstream);
    (windows, read)
}

/// For each sync position `k`: the most offsets strictly inside one stretch between two
/// consecutive syncs below it (`d_{j+1} - d_j - 1`, the widest of `j < k`).
fn stretch_spans(syncs: &[(i64, i64)]) -> Vec<i64> {
    let mut out = Vec::with_capacity(syncs.len());
    let mut widest = 0i64;
    for (k, &(_, d)) in syncs.iter().enumerate() {
        if let Some(&(_, prev)) = k.checked_sub(1).and_then(|j| syncs.get(j)) {
            widest = widest.max(d.saturating_sub(prev).saturating_sub(1));
        }
        out.push(widest);
    }
    out
}

/// For each sync position `k`: an upper bound on the primary record any replica offset in
/// `[d_0, d_k)` copies ([`LOW`] for `k == 0`, [`HIGH`] when what was read cannot bound it),
/// from the committed records read (see the module documentation).
pub(crate) fn reach_below(up: &Upstream<'_>, syncs: &[(i64, i64)]) -> Vec<i64> {
    let mut out = Vec::with_capacity(syncs.len());
    let mut highest = LOW;
    for (k, &(u, _)) in syncs.iter().enumerate() {
        out.push(highest);
        let Some(&(_, next_d)) = syncs.get(k + 1) else {
            break;
        };
        let inside = next_d.saturating_sub(syncs[k].1).saturating_sub(1);
        let stretch = if inside <= 0 {
            u
        } else {
            up.next_pow(u, inside)
        };
        highest = highest.max(stretch);
    }
    out
}

/// `L`, the greatest primary record the group is proven to have read in the replica records
/// read below its offset (`from..to`, `a` the last of them): the greatest upper bound among
/// them, when one record is proven to copy it (then no record read copies a later one, in
/// either copy of a restart's duplicate block); else the record `a` proves, the last one read
/// (a later copy below is then ruled out by content, as `X`'s). `not-proven` when neither is.
fn last_read(bounds: &Bounds, from: usize, to: usize, a: usize) -> Result<i64, ReverseUnmatched> {
    let proven = |k: usize| {
        let (lb, ub) = (bounds.lb[k], bounds.ub[k]);
        (lb == ub && ub != HIGH && lb != LOW).then_some(ub)
    };
    let highest = bounds.ub[from..to].iter().copied().max().unwrap_or(LOW);
    if highest != HIGH && (from..to).any(|k| proven(k) == Some(highest)) {
        return Ok(highest);
    }
    proven(a).ok_or(ReverseUnmatched::NotProven)
}

/// After a failover from `p0` on the primary (`ReverseRow::primary_offset`): the first of the
/// replica's records read in `from..to` (those below the group's offset `D`) that the group
/// must have read, or `None` when it may have read none of them.
///
/// The failover put the group at `A` on the replica, at a copy of a record at or before `p0`
/// (MM2's checkpoint: one past a sync's record, never past `p0`'s copy; an exact translation:
/// `p0`'s copy itself), and it read `[A, D)` there. Nothing says where `A` is, but the first
/// data record at or after it, `A'`, copies at most `p0`:
/// * the group's next record `D'` (the first data record at or after `D`) may copy at most
///   `p0` (its lower bound is not above it, or it was not read, or records were removed
///   before it): then `A'` may be `D'` itself, and the group may have read nothing here;
/// * otherwise `A'` lies below `D`, at or before the last record below `D` that may copy at
///   most `p0`: the group read from there (from the window's start when no record read may,
///   `A'` being below the window then). A replica with no record at or past `D` (the group at
///   its end) is this case too: with nothing at or after `A` copying a record at or past `p0`
///   (no copy of it is lost), every record below `A` that the group never read copies one
///   below `p0`, which it processed on the primary.
///
/// What lies between `A` and that record is not counted, so an answer is never past the
/// group's first unread record; whether it is exact is proven as for any answer, by no record
/// below `D` copying `X`.
fn read_since(
    bounds: &Bounds,
    down: &Side,
    (from, to): (usize, usize),
    (downstream, window_end): (i64, i64),
    ends: Ends,
    p0: i64,
) -> Option<usize> {
    if downstream < ends.downstream {
        let next = down.records.get(to).filter(|r| r.offset < window_end)?;
        let next_read =
            down.covers(downstream, next.offset + 1) && !down.has_hole(downstream, next.offset);
        if !next_read || bounds.lb[to] <= p0 {
            return None;
        }
    }
    Some(
        (from..to)
            .rev()
            .find(|&k| bounds.lb[k] <= p0)
            .unwrap_or(from),
    )
}

/// The proven answer for a group at `downstream`, or why there is none. `reach` is
/// [`reach_below`] of the same history; `bottom` what [`bottom`] chose to read (`None`: the
/// part below the oldest sync is assumed); `unread` why a read stopped, if one did.
#[allow(clippy::too_many_arguments)]
#[cfg(test)]
pub(crate) fn answer(
    up: &Upstream<'_>,
    down: &Side,
    bounds: &Bounds,
    log: &LogOrder,
    reach: &[i64],
    ends: Ends,
    (downstream, window): (i64, Option<Window>),
    (bottom, unread): (Option<i64>, Option<ReverseUnmatched>),
) -> Result<ReverseMatch, ReverseUnmatched> {
    answer_for(
        Goal::NextRead,
        (up, down, bounds, log, reach, ends),
        (downstream, None, window),
        (bottom, unread),
    )
}

/// [`answer`] for a group that failed over from `primary_offset` on the primary
/// ([`ReverseRow::primary_offset`]).
#[allow(clippy::too_many_arguments)]
#[cfg(test)]
pub(crate) fn answer_after_failover(
    up: &Upstream<'_>,
    down: &Side,
    bounds: &Bounds,
    log: &LogOrder,
    reach: &[i64],
    ends: Ends,
    (downstream, primary_offset, window): (i64, i64, Option<Window>),
    (bottom, unread): (Option<i64>, Option<ReverseUnmatched>),
) -> Result<ReverseMatch, ReverseUnmatched> {
    answer_for(
        Goal::NextRead,
        (up, down, bounds, log, reach, ends),
        (downstream, Some(primary_offset), window),
        (bottom, unread),
    )
}

/// The first primary record with no copy on the replica, from what was read for the replica's
/// end (`down_end`, the downstream end of `ends`): [`match_tip`]'s answer for one partition, as
/// forward matching's model asks it.
#[allow(clippy::too_many_arguments)]
#[cfg(test)]
pub(crate) fn answer_tip(
    up: &Upstream<'_>,
    down: &Side,
    bounds: &Bounds,
    log: &LogOrder,
    reach: &[i64],
    ends: Ends,
    window: Option<Window>,
    bottom: Option<i64>,
) -> Result<ReverseMatch, ReverseUnmatched> {
    answer_for(
        Goal::FirstNotCopied,
        (up, down, bounds, log, reach, ends),
        (ends.downstream, None, window),
        (bottom, None),
    )
}

/// The first primary record with no copy on the replica, proven at the replica's end: for
/// forward matching's rows whose next record may never have been copied (MM2 stopped or
/// behind). It is [`match_tip`] for `job`'s partition alone, read on its own; the outcome
/// carries what it read.
pub(crate) async fn first_not_copied(
    clusters: Clusters<'_>,
    job: &PartitionJob,
    pair: &PairEnds,
) -> PartitionOutcome<Result<ReverseMatch, ReverseUnmatched>> {
    let tip = PartitionJob {
        downstream_topic: job.downstream_topic.clone(),
        upstream_topic: job.upstream_topic.clone(),
        partition: job.partition,
        members: vec![0],
        offsets: vec![0],
        floors: vec![None],
        history: job.history.clone(),
    };
    match_partition_for(Goal::FirstNotCopied, clusters, &tip, pair).await
}

/// What the answer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Goal {
    /// A group's next record on the primary (failback): an aborted `X` no record copies is
    /// refused, since a read_committed MM2 never delivered it.
    NextRead,
    /// The first primary record with no copy on the backup (`replication`): an aborted `X` is
    /// such a record, and `ends.upstream` is the last stable offset (the first record of the
    /// oldest open transaction has no copy either).
    FirstNotCopied,
}

/// The inputs of [`answer`] that do not change from row to row.
type Read<'a, 'b> = (
    &'a Upstream<'b>,
    &'a Side,
    &'a Bounds,
    &'a LogOrder,
    &'a [i64],
    Ends,
);

fn answer_for(
    goal: Goal,
    (up, down, bounds, log, reach, ends): Read<'_, '_>,
    (downstream, primary_offset, window): (i64, Option<i64>, Option<Window>),
    (bottom, unread): (Option<i64>, Option<ReverseUnmatched>),
) -> Result<ReverseMatch, ReverseUnmatched> {
    let window = window.ok_or(ReverseUnmatched::NoSync)?;
    let not_read = unread.unwrap_or(ReverseUnmatched::NotRead);
    // The rule's sync; below the oldest kept sync there is none, and the read starts at the
    // replica's log start.
    let rule = window.sync.map(|k| log.syncs()[k]);
    let start = window.start;
    if !down.covers(start, downstream) {
        return Err(not_read);
    }
    if down.has_hole(start, downstream) {
        return Err(ReverseUnmatched::DownstreamGap);
    }
    let records = &down.records;
    let (from, to) = (down.first_at(start), down.first_at(downstream));
    let floor = rule.map_or(from, |(_, d0)| down.first_at(d0));
    let Some(a) = to.checked_sub(1).filter(|&a| a >= floor && a >= from) else {
        return Err(ReverseUnmatched::DownstreamGap);
    };
    // The records the group must have read: all of them below D, or, after a failover from
    // `P0` on the primary, those from where it must have started on the replica.
    let read_from = match primary_offset {
        None => Some(from),
        Some(p0) => read_since(bounds, down, (from, to), (downstream, window.end), ends, p0),
    };
    // Below P0 the group processed everything, on the primary.
    let processed_upstream = primary_offset.map_or(LOW, |p0| p0.saturating_sub(1));
    let last = match read_from {
        Some(k) => last_read(bounds, k, to, a)?.max(processed_upstream),
        // Perhaps nothing read on the replica (`read_from` is `None` only with a P0).
        None => processed_upstream,
    };
    // X: the first data record after L, nothing between them but markers.
    let side = up.side;
    let next = side.records.get(side.first_at(last + 1));
    let (x, x_record) = match next {
        Some(r) if side.covers(last + 1, r.offset + 1) => {
            if side.has_hole(last + 1, r.offset + 1) {
                return Err(ReverseUnmatched::UpstreamGap);
            }
            // An aborted record is the group's next only if MM2 delivered it: proven when a
            // record at or after D in the window copies it.
            let copied_later = || {
                (to..down.first_at(window.end))
                    .any(|k| bounds.lb[k] == r.offset && bounds.ub[k] == r.offset)
            };
            if goal == Goal::NextRead && !r.committed && !copied_later() {
                return Err(ReverseUnmatched::NextAborted);
            }
            (r.offset, Some(r))
        }
        _ if side.covers(last + 1, ends.upstream) => {
            if side.has_hole(last + 1, ends.upstream) {
                return Err(ReverseUnmatched::UpstreamGap);
            }
            (ends.upstream, None)
        }
        _ => return Err(not_read),
    };
    // The rule's sync d0 < D holds u0, so the group read u0: an exact answer is past it. One
    // that is not means a part below was assumed wrongly (see the module documentation).
    // (After a failover, only when the sync's record is among those the group read.)
    let sync_read = |d0: i64| read_from.is_some_and(|k| down.first_at(d0) >= k);
    if rule.is_some_and(|(u0, d0)| sync_read(d0) && x <= u0) {
        return Err(ReverseUnmatched::Inconsistent);
    }
    // A record that may copy X (X past the upstream end has no copy anywhere).
    //
    // An aborted X needs more when the answer is where copying stopped: a read_committed MM2
    // never delivers it, so "no copy of X" does not say that no later record was copied (a
    // restart may have re-copied earlier records after copies of later ones: the records
    // below the rule's sync that the lookback reads). A committed X needs nothing more: MM2
    // delivers it, and a lifetime that copied a later record copied it first, or started past
    // it, which its committed source offset allows only once X was acknowledged (copied).
    let stopped_at_aborted = goal == Goal::FirstNotCopied && x_record.is_some_and(|r| !r.committed);
    let may_copy_x = |k: usize| {
        x_record
            .is_some_and(|xr| up.same(xr, &records[k]) && bounds.lb[k] <= x && bounds.ub[k] >= x)
            || (stopped_at_aborted && bounds.ub[k] > x)
    };
    if (from..to).any(may_copy_x) {
        return Err(ReverseUnmatched::EarlierCopy);
    }
    // A window from the replica's log start: nothing below it but what retention removed.
    if rule.is_none() {
        tracing::trace!(downstream, last, x, start, "failback record match, head");
        return Ok(ReverseMatch {
            offset: x,
            assumes_history: start > 0,
        });
    }
    // Below the read: every stretch of the history bounded below X.
    match reach.get(window.from) {
        Some(&r) if r < x => {}
        Some(&HIGH) | None => return Err(not_read),
        Some(_) => return Err(ReverseUnmatched::EarlierCopy),
    }
    // Below the oldest kept sync: read, or assumed.
    let oldest = log.syncs().first().map_or(0, |&(_, d)| d);
    let assumes_history = match bottom {
        _ if oldest == 0 => false,
        Some(end) => {
            if !down.covers(0, end) {
                return Err(not_read);
            }
            if down.has_hole(0, end) {
                return Err(ReverseUnmatched::DownstreamGap);
            }
            if (0..down.first_at(end)).any(may_copy_x) {
                return Err(ReverseUnmatched::EarlierCopy);
            }
            false
        }
        None => true,
    };
    tracing::trace!(
        downstream,
        last,
        x,
        assumes_history,
        "failback record match"
    );
    Ok(ReverseMatch {
        offset: x,
        assumes_history,
    })
}

/// Matches every row backwards, partition by partition: for each row, the primary offset of the
/// group's first unread record, proven, or why there is none. `source` reads the original topics
/// (the primary), `target` their replicas (the backup); `histories` gives each original
/// partition's kept syncs in log order, downstream offsets increasing (`None`: no history).
///
/// Rows are answered in their order; a partition that cannot be read fails its rows, not the
/// call.
pub async fn match_reverse<'a, F>(
    source: &KafkaClient,
    target: &KafkaClient,
    rows: &[ReverseRow<'a>],
    histories: F,
    options: &MatchOptions,
    deadline: Deadline,
) -> (Vec<Result<ReverseMatch, ReverseUnmatched>>, MatchStats)
where
    F: Fn(&str, i32) -> Option<Vec<(i64, i64)>>,
{
    let backward = Direction {
        not_read: Err(ReverseUnmatched::NotRead),
        partition: |c, job, pair| Box::pin(match_partition(c, job, pair)),
    };
    let keys = rows
        .iter()
        .map(|r| (r.downstream_topic, r.upstream_topic, r.partition));
    let offsets = rows.iter().map(|r| (r.downstream, r.primary_offset));
    let clusters = Clusters {
        source,
        target,
        options,
        deadline,
    };
    by_partition(backward, clusters, keys.zip(offsets), histories).await
}

/// One remote partition whose copy is checked at its tip: the replica on the backup and the
/// original on the primary.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TipRow<'a> {
    /// The replica on the backup (downstream), e.g. `primary.orders`.
    pub downstream_topic: &'a str,
    /// The original topic on the primary (upstream), e.g. `orders`.
    pub upstream_topic: &'a str,
    /// The partition (the same on both sides).
    pub partition: i32,
}

impl<'a> TipRow<'a> {
    /// Partition `partition` of the replica `downstream_topic` of `upstream_topic`.
    pub fn new(downstream_topic: &'a str, upstream_topic: &'a str, partition: i32) -> Self {
        TipRow {
            downstream_topic,
            upstream_topic,
            partition,
        }
    }
}

/// How far the backup's copy of each partition reaches, proven by the records: for each row,
/// the primary offset of the first record (committed, aborted, or the first of the oldest open
/// transaction) that has no copy on the backup, the primary's log end when every record has one.
///
/// It is [`match_reverse`] asked at the replica's log end, read when the partition is matched
/// (before the primary's ends, so every record copied by then existed upstream): a reader at the
/// log end has read every copy, so the answer follows the greatest primary record copied, the
/// first copies past a restart's duplicate block included, never the replica's log end nor the
/// last sync. An aborted record no record copies is such a first record (a read_committed MM2
/// never copies it) rather than a refusal, and the read stops at the primary's last stable
/// offset. `ReverseUnmatched::NoSync`: the replica holds no sync below its end (empty, or
/// nothing synced yet).
pub async fn match_tip<'a, F>(
    source: &KafkaClient,
    target: &KafkaClient,
    rows: &[TipRow<'a>],
    histories: F,
    options: &MatchOptions,
    deadline: Deadline,
) -> (Vec<Result<ReverseMatch, ReverseUnmatched>>, MatchStats)
where
    F: Fn(&str, i32) -> Option<Vec<(i64, i64)>>,
{
    let tip = Direction {
        not_read: Err(ReverseUnmatched::NotRead),
        partition: |c, job, pair| Box::pin(match_partition_for(Goal::FirstNotCopied, c, job, pair)),
    };
    let keys = rows
        .iter()
        .map(|r| (r.downstream_topic, r.upstream_topic, r.partition));
    let clusters = Clusters {
        source,
        target,
        options,
        deadline,
    };
    // The offset is read with the ends (`match_partition_for`).
    by_partition(
        tip,
        clusters,
        keys.zip(std::iter::repeat((0, None))),
        histories,
    )
    .await
}

async fn match_partition(
    clusters: Clusters<'_>,
    job: &PartitionJob,
    pair: &PairEnds,
) -> PartitionOutcome<Result<ReverseMatch, ReverseUnmatched>> {
    match_partition_for(Goal::NextRead, clusters, job, pair).await
}

async fn match_partition_for(
    goal: Goal,
    clusters: Clusters<'_>,
    job: &PartitionJob,
    pair: &PairEnds,
) -> PartitionOutcome<Result<ReverseMatch, ReverseUnmatched>> {
    let (Some(&(ends, stable)), Some(&start)) = (
        pair.ends.get(&job.partition),
        pair.downstream_start.get(&job.partition),
    ) else {
        return PartitionOutcome::failed(
            job,
            Err(ReverseUnmatched::NotRead),
            "a partition missing from the ends".to_string(),
        );
    };
    let offsets = match goal {
        Goal::NextRead => job.offsets.clone(),
        Goal::FirstNotCopied => vec![ends.downstream; job.offsets.len()],
    };
    let bottom = bottom(&job.history, start, BOTTOM_MAX);
    let (windows, read) = plan(&job.history, &offsets, ends, stable, (bottom, LOOKBACK));
    let (up, down, stopped) = job.read(clusters, pair, &read).await;
    let unread = stopped.as_ref().map(unmatched_by);
    let mut outcome = PartitionOutcome::read(&up, &down, &read);
    let upstream = Upstream::new(&up, &down);
    let bounds = match walk_bounds(&upstream, &down, &job.history, ends.upstream) {
        Ok(bounds) => bounds,
        Err(at) => return outcome.inconsistent(job, Err(ReverseUnmatched::Inconsistent), at),
    };
    let reach = reach_below(&upstream, job.history.syncs());
    // Past the last stable offset nothing was read (read_committed): there the first record of
    // the oldest open transaction has no copy.
    let answer_ends = match goal {
        Goal::NextRead => ends,
        Goal::FirstNotCopied => Ends {
            upstream: stable.min(ends.upstream),
            ..ends
        },
    };
    let read_parts = (
        &upstream,
        &down,
        &bounds,
        &job.history,
        &reach[..],
        answer_ends,
    );
    let floors = match goal {
        Goal::NextRead => job.floors.clone(),
        Goal::FirstNotCopied => vec![None; offsets.len()],
    };
    let mut answers: Vec<_> = offsets
        .iter()
        .zip(&floors)
        .zip(&windows)
        .map(|((&d, &p0), &w)| answer_for(goal, read_parts, (d, p0, w), (bottom, unread)))
        .collect();
    // The rows below the oldest kept sync, read on their own (see `plan_head`). At the tip
    // (`replication`) no sync below the log end means nothing was synced yet: left as it is.
    let mut head_unread = None;
    if goal == Goal::NextRead {
        let head = Head {
            ends,
            stable,
            downstream_start: start,
            first: (&up, &down),
        };
        match head
            .answer(clusters, job, pair, &offsets, &mut answers, &mut outcome)
            .await
        {
            Ok(why) => head_unread = why,
            Err(at) => {
                return outcome.inconsistent(job, Err(ReverseUnmatched::Inconsistent), at);
            }
        }
    }
    outcome.answers = answers;
    // The first read's stop is named with what stopped it; the head read's was named there.
    match (&stopped, head_unread) {
        (Some(stopped), _) => outcome.unread = Some(stopped.describe(unmatched_by(stopped).name())),
        (None, Some(why)) if outcome.unread.is_none() => {
            outcome.unread = Some(why.name().to_string())
        }
        _ => {}
    }
    outcome
}

/// The rows' reason when a read stopped early.
fn unmatched_by(stopped: &Stopped) -> ReverseUnmatched {
    match stopped {
        Stopped::Budget => ReverseUnmatched::Budget,
        Stopped::Failed(_) => ReverseUnmatched::NotRead,
    }
}

/// What the second read of a partition, for its rows below the oldest kept sync, needs from
/// the first: the ends, and the sides read first (their bytes per offset estimate the second).
struct Head<'a> {
    ends: Ends,
    stable: i64,
    downstream_start: i64,
    first: (&'a Side, &'a Side),
}

impl Head<'_> {
    /// Answers the rows the first read left `no-sync` from the replica's log start
    /// ([`plan_head`]), in place: not read at all (`budget`) when the first read's bytes per
    /// offset put either side past the byte budget. Returns why the read stopped, if it did, or
    /// the downstream offset that shows the records contradict the history.
    #[allow(clippy::too_many_arguments)]
    async fn answer(
        &self,
        clusters: Clusters<'_>,
        job: &PartitionJob,
        pair: &PairEnds,
        offsets: &[i64],
        answers: &mut [Result<ReverseMatch, ReverseUnmatched>],
        outcome: &mut PartitionOutcome<Result<ReverseMatch, ReverseUnmatched>>,
    ) -> Result<Option<ReverseUnmatched>, i64> {
        let head: Vec<usize> = (0..answers.len())
            .filter(|&i| answers[i] == Err(ReverseUnmatched::NoSync))
            .collect();
        if head.is_empty() {
            return Ok(None);
        }
        let rows: Vec<i64> = head.iter().map(|&i| offsets[i]).collect();
        let (windows, plan) = plan_head(
            &job.history,
            &rows,
            self.ends,
            self.downstream_start,
            self.stable,
        );
        if plan.downstream.is_empty() {
            return Ok(None);
        }
        let (first_up, first_down) = self.first;
        if plan.too_large_for(first_up, first_down, clusters.options.budget_bytes) {
            for (&i, w) in head.iter().zip(&windows) {
                if w.is_some() {
                    answers[i] = Err(ReverseUnmatched::Budget);
                }
            }
            return Ok(Some(ReverseUnmatched::Budget));
        }
        let (up, down, stopped) = job.read(clusters, pair, &plan).await;
        outcome.add_read(&up, &down, &plan);
        let unread = stopped.as_ref().map(unmatched_by);
        if let Some(stopped) = &stopped {
            outcome.unread = Some(stopped.describe(unmatched_by(stopped).name()));
        }
        let upstream = Upstream::new(&up, &down);
        let bounds = walk_bounds(&upstream, &down, &job.history, self.ends.upstream)?;
        // No stretch lies below a window from the log start: `reach` is not consulted.
        let parts = (&upstream, &down, &bounds, &job.history, &[][..], self.ends);
        for ((&i, &d), &w) in head.iter().zip(&rows).zip(&windows) {
            if w.is_some() {
                let p0 = job.floors.get(i).copied().flatten();
                answers[i] = answer_for(Goal::NextRead, parts, (d, p0, w), (None, unread));
            }
        }
        Ok(unread)
    }
}

#[cfg(test)]
#[path = "reverse_tests.rs"]
mod tests;
