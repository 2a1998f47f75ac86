//! Record matching backwards against the model of MirrorMaker 2's writer of `tests.rs`
//! (`MirrorSourceTask` with `OffsetSyncWriter`: twins, markers and aborted records upstream,
//! retried batches, restarts that re-copy, lost syncs, downstream markers, compaction and
//! retention after the copy). For every downstream offset `D` (a group that has read every
//! record below it): an answer is never past the group's first unread record, and an answer
//! called exact is that record, with the whole sync history kept; with its oldest syncs
//! compacted away, only where nothing below the oldest kept sync copies the answer or later
//! (the residual assumption).

use proptest::prelude::*;

use super::{
    ReverseMatch, ReverseUnmatched, answer, answer_after_failover, bottom, plan, plan_head,
    reach_below,
};
use crate::failback::ReverseIndexBuilder;
use crate::record_match::history::LogOrder;
use crate::record_match::tests::{
    Event, Flow, Scenario, Slot, copy, distinct, marked_and_aborted, plain, restart_after_commit,
    sample_scenarios, scenario,
};
use crate::record_match::walk::{Upstream, bounds};

/// For each downstream offset `D` (0 to the end): the first record MM2 delivered that has no
/// copy below `D` (every written copy counts: the group read them before any compaction), or
/// the upstream end.
fn truths(flow: &Flow) -> Vec<i64> {
    let n = flow.upstream.len();
    let mut copied = vec![false; n];
    let mut out = Vec::with_capacity(flow.downstream.len() + 1);
    let first_uncopied = |copied: &[bool]| {
        flow.delivered
            .iter()
            .copied()
            .find(|&u| !copied[u as usize])
            .unwrap_or(n as i64)
    };
    out.push(first_uncopied(&copied));
    for slot in &flow.downstream {
        if let Some(u) = slot {
            copied[*u as usize] = true;
        }
        out.push(first_uncopied(&copied));
    }
    out
}

/// One downstream offset's outcome: (D, the reverse rule's answer, truth, match).
type Row = (
    i64,
    Option<i64>,
    i64,
    Result<ReverseMatch, ReverseUnmatched>,
);

/// How a run reads: the oldest `dropped` syncs of the history removed (compaction), each
/// side's read stopped after `cut` offsets (the budget), the part below the oldest kept sync
/// read up to `bottom_max` offsets, `lookback` offsets read below the rule's sync, and the
/// rows below the oldest kept sync read from the replica's log start (`head`).
#[derive(Clone, Copy, Debug)]
struct Reads {
    dropped: usize,
    cut: Option<usize>,
    bottom_max: i64,
    lookback: i64,
    head: bool,
}

const FULL: Reads = Reads {
    dropped: 0,
    cut: None,
    bottom_max: super::BOTTOM_MAX,
    lookback: super::LOOKBACK,
    head: true,
};

/// Every downstream offset matched backwards.
fn run(s: &Scenario, reads: Reads) -> (Flow, Vec<Row>) {
    let flow = copy(s);
    let mut builder = ReverseIndexBuilder::new();
    for &(u, d) in flow.syncs.iter().skip(reads.dropped) {
        builder.add(b"t", 0, u, d);
    }
    let index = builder.finish();
    let part = index.partition(b"t", 0);
    let log = LogOrder::new(part.map(|p| p.log_order()).unwrap_or_default());
    let (n, ends) = (flow.upstream.len() as i64, flow.ends());
    let rows: Vec<i64> = (0..=ends.downstream).collect();
    let below = bottom(&log, 0, reads.bottom_max);
    let (windows, read) = plan(&log, &rows, ends, n, (below, reads.lookback));
    let up = flow.read(&read.upstream, true, reads.cut);
    let down = flow.read(&read.downstream, false, reads.cut);
    let upstream = Upstream::new(&up, &down);
    let truth = truths(&flow);
    let answers: Vec<Result<ReverseMatch, ReverseUnmatched>> =
        match bounds(&upstream, &down, &log, ends.upstream) {
            Ok(b) => {
                let reach = reach_below(&upstream, log.syncs());
                rows.iter()
                    .zip(&windows)
                    .map(|(&d, &w)| {
                        answer(
                            &upstream,
                            &down,
                            &b,
                            &log,
                            &reach,
                            ends,
                            (d, w),
                            (below, None),
                        )
                    })
                    .collect()
            }
            Err(v) => panic!("the model's flow is consistent, yet {v:?}; flow {flow:?}"),
        };
    let answers = if reads.head {
        answer_head(&flow, &log, reads, &rows, answers)
    } else {
        answers
    };
    let out = rows
        .iter()
        .zip(answers)
        .map(|(&d, a)| {
            let rule = part.and_then(|p| p.translate(d)).map(|a| a.offset);
            (d, rule, truth[d as usize], a)
        })
        .collect();
    (flow, out)
}

/// The rows the first read left `no-sync`, answered from the replica's log start in a read of
/// their own, as `match_partition_for` does (`plan_head`).
fn answer_head(
    flow: &Flow,
    log: &LogOrder,
    reads: Reads,
    rows: &[i64],
    answers: Vec<Result<ReverseMatch, ReverseUnmatched>>,
) -> Vec<Result<ReverseMatch, ReverseUnmatched>> {
    answer_head_from(flow, log, reads, rows, answers, None)
}

/// [`answer_head`], for groups that failed over from `primary_offset` when it is given.
fn answer_head_from(
    flow: &Flow,
    log: &LogOrder,
    reads: Reads,
    rows: &[i64],
    mut answers: Vec<Result<ReverseMatch, ReverseUnmatched>>,
    primary_offset: Option<i64>,
) -> Vec<Result<ReverseMatch, ReverseUnmatched>> {
    let head: Vec<usize> = (0..rows.len())
        .filter(|&i| answers[i] == Err(ReverseUnmatched::NoSync))
        .collect();
    let offsets: Vec<i64> = head.iter().map(|&i| rows[i]).collect();
    let (n, ends) = (flow.upstream.len() as i64, flow.ends());
    let (windows, read) = plan_head(log, &offsets, ends, 0, n);
    if read.downstream.is_empty() {
        return answers;
    }
    let up = flow.read(&read.upstream, true, reads.cut);
    let down = flow.read(&read.downstream, false, reads.cut);
    let upstream = Upstream::new(&up, &down);
    let b = match bounds(&upstream, &down, log, ends.upstream) {
        Ok(b) => b,
        Err(v) => panic!("the model's flow is consistent, yet {v:?} (head); flow {flow:?}"),
    };
    for ((&i, &d), &w) in head.iter().zip(&offsets).zip(&windows) {
        if w.is_some() {
            answers[i] = match primary_offset {
                None => answer(&upstream, &down, &b, log, &[], ends, (d, w), (None, None)),
                Some(p0) => {
                    let (rows, parts) = ((d, p0, w), (None, None));
                    answer_after_failover(&upstream, &down, &b, log, &[], ends, rows, parts)
                }
            };
        }
    }
    answers
}

/// Checks every row: never past the truth; exact unless it says it rests on the residual
/// assumption and something below the oldest kept sync does copy the answer or later.
/// Returns the rows matched.
fn check(s: &Scenario, reads: Reads) -> Result<usize, String> {
    let (flow, rows) = run(s, reads);
    let oldest = flow.syncs.get(reads.dropped).map(|&(_, d)| d);
    let mut matched = 0;
    for (d, rule, truth, answer) in rows {
        let Ok(m) = answer else { continue };
        let x = m.offset;
        if x > truth {
            return Err(format!(
                "D = {d}: matched {x} past the truth {truth}; {flow:?}"
            ));
        }
        if rule.is_some_and(|r| r > x) {
            return Err(format!("D = {d}: matched {x} below the rule's {rule:?}"));
        }
        let residual = m.assumes_history && oldest.is_some_and(|o| copied_at_or_past(&flow, o, x));
        if x != truth && !residual {
            return Err(format!(
                "D = {d}: matched {x}, truth {truth} (rule {rule:?}, oldest sync at {oldest:?}, {reads:?}); {flow:?}"
            ));
        }
        matched += 1;
    }
    Ok(matched)
}

/// Whether a record written below `below` copies `x` or a later record: what the residual
/// assumption rules out below the oldest kept sync.
fn copied_at_or_past(flow: &Flow, below: i64, x: i64) -> bool {
    flow.downstream
        .iter()
        .take(below.max(0) as usize)
        .any(|slot| slot.is_some_and(|u| u >= x))
}

/// Every downstream offset matched backwards for groups that failed over from `p0` on the
/// primary ([`super::ReverseRow::primary_offset`]).
fn answers_after_failover(
    flow: &Flow,
    reads: Reads,
    p0: i64,
) -> Vec<Result<ReverseMatch, ReverseUnmatched>> {
    let mut builder = ReverseIndexBuilder::new();
    for &(u, d) in flow.syncs.iter().skip(reads.dropped) {
        builder.add(b"t", 0, u, d);
    }
    let index = builder.finish();
    let log = LogOrder::new(
        index
            .partition(b"t", 0)
            .map(|p| p.log_order())
            .unwrap_or_default(),
    );
    let (n, ends) = (flow.upstream.len() as i64, flow.ends());
    let rows: Vec<i64> = (0..=ends.downstream).collect();
    let below = bottom(&log, 0, reads.bottom_max);
    let (windows, read) = plan(&log, &rows, ends, n, (below, reads.lookback));
    let up = flow.read(&read.upstream, true, reads.cut);
    let down = flow.read(&read.downstream, false, reads.cut);
    let upstream = Upstream::new(&up, &down);
    let b = bounds(&upstream, &down, &log, ends.upstream)
        .unwrap_or_else(|v| panic!("the model's flow is consistent, yet {v:?}; flow {flow:?}"));
    let reach = reach_below(&upstream, log.syncs());
    let answers = rows
        .iter()
        .zip(&windows)
        .map(|(&d, &w)| {
            let parts = (below, None);
            answer_after_failover(&upstream, &down, &b, &log, &reach, ends, (d, p0, w), parts)
        })
        .collect();
    if reads.head {
        answer_head_from(flow, &log, reads, &rows, answers, Some(p0))
    } else {
        answers
    }
}

/// Where a sound failover from `p0` may have put a group on the replica: every `A` whose first
/// data record at or after it copies at most `p0` (MM2's checkpoint and an exact translation
/// both do), and from which every record at or past `p0` with a copy has one (nothing
/// skipped). Up to `most` of them, spread over the replica.
fn failover_starts(flow: &Flow, p0: i64, most: usize) -> Vec<usize> {
    let len = flow.downstream.len();
    let mut last_copy: Vec<Option<usize>> = vec![None; flow.upstream.len()];
    for (at, slot) in flow.downstream.iter().enumerate() {
        if let Some(u) = slot {
            last_copy[*u as usize] = Some(at);
        }
    }
    let highest = last_copy
        .iter()
        .skip(p0.max(0) as usize)
        .flatten()
        .min()
        .copied()
        .unwrap_or(len);
    let mut next_copies = vec![None; len + 1];
    for at in (0..len).rev() {
        next_copies[at] = flow.downstream[at].or(next_copies[at + 1]);
    }
    let sound: Vec<usize> = (0..=highest.min(len))
        .filter(|&a| next_copies[a].is_none_or(|u| u <= p0))
        .collect();
    if sound.len() <= most {
        return sound;
    }
    (0..most)
        .map(|i| sound[i * (sound.len() - 1) / (most - 1)])
        .collect()
}

/// The `P0` the failover checks try: five of the records MM2 delivered, spread, and both ends.
fn primary_offsets(flow: &Flow) -> Vec<i64> {
    let step = (flow.delivered.len() / 4).max(1);
    let mut p0s: Vec<i64> = flow.delivered.iter().step_by(step).copied().collect();
    p0s.extend([0, flow.upstream.len() as i64]);
    p0s
}

/// For a group that processed the primary's records below `p0` and started on the replica at
/// `a`: for each `D` from `a` to the replica's end, the first record MM2 delivered that it has
/// not processed (the upstream end when none), index `D - a`.
fn truths_after_failover(flow: &Flow, p0: i64, a: usize) -> Vec<i64> {
    let n = flow.upstream.len() as i64;
    let mut processed: Vec<bool> = (0..n).map(|u| u < p0).collect();
    let mut first = 0;
    let mut out = Vec::with_capacity(flow.downstream.len() + 1 - a);
    for d in a..=flow.downstream.len() {
        if d > a
            && let Some(u) = flow.downstream[d - 1]
        {
            processed[u as usize] = true;
        }
        while flow
            .delivered
            .get(first)
            .is_some_and(|&u| processed[u as usize])
        {
            first += 1;
        }
        out.push(flow.delivered.get(first).copied().unwrap_or(n));
    }
    out
}

/// The failover model: for a few `P0` (the group's offset on the primary), each sound start
/// `A` on the replica ([`failover_starts`]) and every `D` from `A`, the group processed the
/// primary's records below `P0` and the replica's in `[A, D)`. An answer (found from `P0` and
/// `D`, never `A`) is never past the first record MM2 delivered that the group did not
/// process, and one called exact is it, whatever `A` was (unless it says it rests on the
/// residual assumption and something below the oldest kept sync does copy the answer or
/// later). Returns the rows matched.
fn check_after_failover(s: &Scenario, reads: Reads) -> Result<usize, String> {
    let flow = copy(s);
    let oldest = flow.syncs.get(reads.dropped).map(|&(_, d)| d);
    let mut matched = 0;
    for p0 in primary_offsets(&flow) {
        let answers = answers_after_failover(&flow, reads, p0);
        for a in failover_starts(&flow, p0, 6) {
            let truths = truths_after_failover(&flow, p0, a);
            for ((d, answer), &truth) in answers.iter().enumerate().skip(a).zip(&truths) {
                let Ok(m) = answer else { continue };
                let x = m.offset;
                if x > truth {
                    return Err(format!(
                        "P0 {p0}, A {a}, D {d}: matched {x} past the truth {truth}; {flow:?}"
                    ));
                }
                let residual =
                    m.assumes_history && oldest.is_some_and(|o| copied_at_or_past(&flow, o, x));
                if x != truth && !residual {
                    return Err(format!(
                        "P0 {p0}, A {a}, D {d}: matched {x}, truth {truth} ({reads:?}); {flow:?}"
                    ));
                }
                matched += 1;
            }
        }
    }
    Ok(matched)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(768))]

    /// After a failover, whatever the flow and wherever a sound failover put the group on the
    /// replica: never past the group's first unprocessed record, and exact when it says so.
    #[test]
    fn after_a_failover_a_reverse_match_is_the_first_unprocessed_record(s in scenario()) {
        prop_assert_eq!(check_after_failover(&s, FULL).map(|_| ()), Ok(()));
        prop_assert_eq!(check_after_failover(&s, Reads { lookback: 0, ..FULL }).map(|_| ()), Ok(()));
    }

    /// The same with the reads cut short and the oldest syncs compacted away.
    #[test]
    fn after_a_failover_a_cut_read_or_a_compacted_history_is_never_wrong(
        s in scenario(),
        cut in 0usize..60,
        dropped in 0usize..6,
        bottom_max in prop_oneof![Just(0i64), Just(super::BOTTOM_MAX)],
    ) {
        let reads = Reads { dropped, cut: Some(cut), bottom_max, lookback: super::LOOKBACK, head: true };
        prop_assert_eq!(check_after_failover(&s, reads).map(|_| ()), Ok(()));
    }

    /// Whatever the flow, an answer is never past the group's first unread record, and one
    /// called exact is it; also when only the stretches' bound covers what lies below the
    /// rule's sync.
    #[test]
    fn a_reverse_match_is_the_first_unread_record(s in scenario()) {
        prop_assert_eq!(check(&s, FULL).map(|_| ()), Ok(()));
        prop_assert_eq!(check(&s, Reads { lookback: 0, ..FULL }).map(|_| ()), Ok(()));
    }

    /// The same with the reads cut short, with the oldest syncs compacted away, and with the
    /// part below the oldest kept sync not read (the residual assumption).
    #[test]
    fn a_cut_read_or_a_compacted_history_is_never_wrong(
        s in scenario(),
        cut in 0usize..60,
        dropped in 0usize..6,
        bottom_max in prop_oneof![Just(0i64), Just(super::BOTTOM_MAX)],
        lookback in prop_oneof![Just(0i64), Just(7), Just(super::LOOKBACK)],
    ) {
        let reads = Reads { dropped, cut: Some(cut), bottom_max, lookback, head: true };
        prop_assert_eq!(check(&s, reads).map(|_| ()), Ok(()));
        let reads = Reads { cut: None, ..reads };
        prop_assert_eq!(check(&s, reads).map(|_| ()), Ok(()));
    }
}

fn matched(answer: &Result<ReverseMatch, ReverseUnmatched>) -> Option<i64> {
    answer.as_ref().ok().map(|m| m.offset)
}

/// Not vacuous: one lifetime of distinct records, syncs every 10: most offsets are matched,
/// each to the truth.
#[test]
fn distinct_records_match_backwards() {
    let s = plain(distinct(120), vec![], 10);
    let (_, rows) = run(&s, FULL);
    let exact: Vec<_> = rows.iter().filter(|r| r.3.is_ok()).collect();
    assert!(exact.len() > 100, "{} of {}", exact.len(), rows.len());
    for (d, _, truth, answer) in &rows {
        if let Some(x) = matched(answer) {
            assert_eq!(x, *truth, "D = {d}");
        }
    }
    // Between two syncs ((0, 0), (11, 11)) the rule says one past the sync; matching says the
    // record.
    let (_, rule, truth, answer) = rows[15];
    assert_eq!((rule, truth, matched(&answer)), (Some(12), 15, Some(15)));
}

/// A restart re-copied records: a group inside the duplicate block has read, below it, the
/// first lifetime's copies of every record of the block; it fails back past them (the greatest
/// record proven read below it), whichever copy it stopped in. Past the block too.
#[test]
fn a_restart_block_fails_back_past_both_copies() {
    let s = plain(distinct(60), restart_after_commit(), 100);
    let (flow, rows) = run(&s, FULL);
    // 30 written, committed at 12, so 12..30 are copied twice (at 30..48).
    assert_eq!(flow.downstream.len(), 60 + 18);
    let inside: Vec<_> = rows.iter().filter(|r| (31..49).contains(&r.0)).collect();
    for (d, rule, truth, answer) in &inside {
        assert_eq!(*truth, 30, "D = {d}: the first lifetime read up to 29");
        assert_eq!(matched(answer), Some(30), "D = {d} (rule {rule:?})");
    }
    // The rule alone goes back into the block.
    assert!(inside.iter().any(|r| r.1.is_some_and(|rule| rule < 30)));
    assert!(rows.iter().any(|r| r.0 > 50 && matched(&r.3) == Some(r.2)));
    check(&s, FULL).unwrap();
}

/// The failback suite's case on real MM2 (a CI run of stop 42): MM2 killed while it copied, a
/// restart that went back and re-copied a block, the group failed over from inside the block
/// to a copy in its second half, and read on past it. The first copies below where it started
/// were never read: taking them as read fails it back past records it never processed. Its
/// offset on the primary rules them out; past the block the answer is exact again.
#[test]
fn a_group_that_failed_over_into_a_restart_block_never_counts_the_first_copies() {
    let s = plain(distinct(60), restart_after_commit(), 100);
    let flow = copy(&s);
    // 0..30 copied at 0..30, then 12..30 again at 30..48, then 30.. at 48...
    assert_eq!(flow.downstream[30], Some(12));
    assert_eq!(flow.downstream[48], Some(30));
    let p0 = 15;
    // MM2's checkpoint for 15: one past the restart's sync (12 at 30), a copy of 13.
    let a = 31;
    assert!(failover_starts(&flow, p0, usize::MAX).contains(&a));
    let (_, before) = run(&s, FULL);
    let after = answers_after_failover(&flow, FULL, p0);
    // At D = 40 (a copy of 22) the group processed 0..15 on the primary and 13..22 here.
    let truth = 22;
    assert_eq!(flow.downstream[40], Some(truth));
    assert_eq!(
        matched(&before[40].3),
        Some(30),
        "without P0: past the first copies"
    );
    assert!(
        matched(&after[40]).is_none_or(|x| x <= truth),
        "{:?}",
        after[40]
    );
    // Past the block (D = 55, a copy of 37): exact with or without P0.
    assert_eq!(flow.downstream[55], Some(37));
    assert_eq!(matched(&after[55]), Some(37));
    assert_eq!(matched(&before[55].3), Some(37));
    // A group still at A: it may have read nothing since, or (from a start in the first copies)
    // up to 30; never past P0. Without duplicates a group still at its start fails back to P0.
    assert!(matched(&after[a]).is_none_or(|x| x <= p0), "{:?}", after[a]);
    check_after_failover(&s, FULL).unwrap();
    let plain_flow = copy(&plain(distinct(120), vec![], 10));
    let at_start = answers_after_failover(&plain_flow, FULL, 50);
    assert_eq!(matched(&at_start[50]), Some(50));
    assert_eq!(matched(&at_start[80]), Some(80));
}

/// Not vacuous: after a failover many offsets of the random flows are still matched.
#[test]
fn random_flows_are_often_matched_after_a_failover() {
    let (mut matched_rows, mut flows) = (0usize, 0usize);
    for s in sample_scenarios(100) {
        matched_rows += check_after_failover(&s, FULL).unwrap();
        flows += 1;
    }
    eprintln!("{matched_rows} (P0, A, D) rows matched after a failover over {flows} flows");
    assert!(
        matched_rows > flows * 50,
        "{matched_rows} over {flows} flows"
    );
}

/// A retried first batch leaves copies below the oldest sync: read when the replica still
/// starts at 0, assumed (and said so) when it does not.
#[test]
fn a_retried_first_batch_is_read_below_the_oldest_sync() {
    let events = vec![
        Event::Batch {
            len: 3,
            retried: true,
            fire: true,
        },
        Event::Commit { fire: true },
    ];
    let s = plain(distinct(40), events, 10);
    let (flow, rows) = run(&s, FULL);
    assert_eq!(flow.syncs.first().map(|&(_, d)| d), Some(3), "{flow:?}");
    // D = 4: read 0, 1, 2 (first copies) and 0 again; the first unread record is 3.
    assert_eq!(rows[4].2, 3);
    assert_ne!(matched(&rows[4].3), Some(1));
    for (d, _, truth, answer) in &rows {
        if let Ok(m) = answer {
            assert!(!m.assumes_history);
            assert_eq!(m.offset, *truth, "D = {d}");
        }
    }
    let blind = Reads {
        bottom_max: 0,
        ..FULL
    };
    let (_, rows) = run(&s, blind);
    assert!(rows.iter().any(|r| r.3.is_ok_and(|m| m.assumes_history)));
    check(&s, blind).unwrap();
}

/// Markers and aborted records upstream: the answer skips a trailing marker; a next record in
/// an aborted transaction is the answer where a later record is proven to copy it (a
/// read_uncommitted MM2), and refused where none is (a read_committed one never copies it).
#[test]
fn markers_are_skipped_and_aborted_next_records_proven_or_refused() {
    let mut upstream = marked_and_aborted();
    upstream.push(Slot::Marker);
    let s = plain(upstream.clone(), vec![], 10);
    let (flow, rows) = run(&s, FULL);
    // At the end: the last record read, then a marker: the upstream end.
    let end = rows.last().unwrap();
    assert_eq!((end.2, matched(&end.3)), (61, Some(61)), "{flow:?}");
    // Copied by a read_uncommitted MM2: the first aborted record is a group's next.
    let at30: Vec<_> = rows.iter().filter(|r| r.2 == 30).collect();
    assert!(
        at30.iter().any(|r| matched(&r.3) == Some(30)),
        "{at30:?} {flow:?}"
    );
    check(&s, FULL).unwrap();
    // A read_committed MM2, whose syncs after the jump over the aborted records were replaced
    // before they were sent (no send slot free): nothing proves the aborted record copied.
    let quiet = vec![
        Event::Batch {
            len: 3,
            retried: false,
            fire: false,
        };
        30
    ];
    let s = Scenario {
        mm2_read_committed: true,
        ..plain(upstream, quiet, 10)
    };
    let (flow, rows) = run(&s, FULL);
    assert!(
        rows.iter()
            .any(|r| r.3 == Err(ReverseUnmatched::NextAborted)),
        "{rows:?} {flow:?}"
    );
    check(&s, FULL).unwrap();
}

/// Not vacuous over the random flows either: many offsets matched, many past the rule.
#[test]
fn random_flows_are_often_matched_backwards() {
    let (mut rows, mut exact, mut improved) = (0usize, 0usize, 0usize);
    for s in sample_scenarios(300) {
        let (_, out) = run(&s, FULL);
        for (d, rule, truth, answer) in out {
            rows += 1;
            if let Some(x) = matched(&answer) {
                assert_eq!(x, truth, "D = {d}, rule {rule:?}, {s:?}");
                exact += 1;
                improved += usize::from(rule.is_none_or(|r| r < x));
            }
        }
    }
    eprintln!("{exact} of {rows} offsets matched backwards, {improved} past the rule");
    assert!(exact * 3 > rows, "{exact} of {rows}");
    assert!(improved * 5 > rows, "{improved} of {rows}");
}

/// The proof's parts fail when broken on purpose: without the stretches below the window, a
/// restart's earlier copies would be missed.
#[test]
fn the_stretches_below_catch_an_earlier_lifetime() {
    let s = plain(distinct(60), restart_after_commit(), 3);
    let flow = copy(&s);
    let mut builder = ReverseIndexBuilder::new();
    for &(u, d) in &flow.syncs {
        builder.add(b"t", 0, u, d);
    }
    let index = builder.finish();
    let log = LogOrder::new(index.partition(b"t", 0).unwrap().log_order());
    let (n, ends) = (flow.upstream.len() as i64, flow.ends());
    let rows: Vec<i64> = (0..=ends.downstream).collect();
    let (windows, read) = plan(&log, &rows, ends, n, (None, 0));
    let up = flow.read(&read.upstream, true, None);
    let down = flow.read(&read.downstream, false, None);
    let upstream = Upstream::new(&up, &down);
    let b = bounds(&upstream, &down, &log, n).unwrap();
    let truth = truths(&flow);
    let reach = reach_below(&upstream, log.syncs());
    let blind = vec![i64::MIN; log.syncs().len()];
    let wrong = |reach: &[i64]| {
        rows.iter().zip(&windows).any(|(&d, &w)| {
            answer(
                &upstream,
                &down,
                &b,
                &log,
                reach,
                ends,
                (d, w),
                (None, None),
            )
            .is_ok_and(|m| m.offset != truth[d as usize])
        })
    };
    assert!(!wrong(&reach));
    assert!(
        wrong(&blind),
        "ignoring the stretches below should give a wrong answer"
    );
}

/// The sweep backwards over the model: every downstream offset of 300 random flows (40% of
/// them with MM2 killed) and of the hand-laid flow, tallied. `--nocapture` shows it.
#[test]
fn sweep_every_offset_of_the_model_backwards() {
    use crate::record_match::tests::{killed_near_the_tip, tally};
    let count =
        |scenarios: Vec<Scenario>| {
            let mut rows = Vec::new();
            for s in scenarios {
                rows.extend(run(&s, FULL).1);
            }
            tally(rows.iter().map(|(_, rule, t, a)| {
                (matched(a), *t, *rule, a.err().map(ReverseUnmatched::name))
            }))
        };
    let all = count(sample_scenarios(300));
    let tip = count(vec![killed_near_the_tip()]);
    // Re-reads on the primary of the hand-laid flow's groups (one per D): the rule's, and with
    // matching (the rule's where matching leaves a row), total and most for one group.
    let (_, rows) = run(&killed_near_the_tip(), FULL);
    let rereads = |pick: &dyn Fn(&Row) -> Option<i64>| {
        let each: Vec<i64> = rows
            .iter()
            .filter_map(|r| pick(r).map(|x| (r.2 - x).max(0)))
            .collect();
        (
            each.iter().sum::<i64>(),
            each.iter().copied().max().unwrap_or(0),
        )
    };
    let rule = rereads(&|r| r.1);
    let after = rereads(&|r| matched(&r.3).or(r.1));
    eprintln!(
        "backward re-reads, the hand-laid flow (total, most for one group): rule {rule:?}, with matching {after:?}"
    );
    eprintln!("backward sweep, random flows: {all:?}");
    eprintln!("backward sweep, the hand-laid flow: {tip:?}");
    assert!(!all.contains_key("PAST THE TRUTH"));
    assert!(!tip.contains_key("PAST THE TRUTH"));
}

/// MM2 killed: the backup's replica stops growing and its consumers drain it. Every group past
/// the last sync, up to the end, fails back to just after the last record copied below it,
/// proven by the floor the last sync gives that record.
#[test]
fn a_group_that_drained_the_backup_fails_back_exactly() {
    use crate::record_match::tests::killed_near_the_tip;
    let s = killed_near_the_tip();
    let (flow, rows) = run(&s, FULL);
    let &(_, last) = flow.syncs.last().unwrap();
    let tip: Vec<_> = rows.iter().filter(|r| r.0 > last + 1).collect();
    assert!(tip.len() > 40, "{flow:?}");
    for (d, rule, truth, answer) in tip {
        assert_eq!(matched(answer), Some(*truth), "D = {d} (rule {rule:?})");
    }
    // The end of the replica: the first record MM2 never copied.
    assert_eq!(
        rows.last().map(|r| (r.2, matched(&r.3))),
        Some((120, Some(120)))
    );
}

/// A history compacted to its newest syncs: a group below the oldest kept one (no sync below
/// it, the `no-sync` of the rule) fails back from the replica's log start, exactly, where the
/// records decide.
#[test]
fn groups_below_the_oldest_kept_sync_fail_back_exactly() {
    let s = plain(distinct(120), vec![], 10);
    let compacted = Reads { dropped: 6, ..FULL };
    let (flow, rows) = run(&s, compacted);
    let oldest = flow.syncs[6].1;
    assert!(oldest >= 50, "{flow:?}");
    // At the oldest kept sync itself the rule is exact already.
    let below: Vec<_> = rows.iter().filter(|r| r.0 < oldest).collect();
    assert_eq!(below.len() as i64, oldest);
    for (d, rule, truth, answer) in &below {
        assert_eq!(*rule, None, "D = {d}: no sync below it");
        if *d == 0 {
            // The group read nothing of the replica: nothing proves which record it starts at.
            assert_eq!(*answer, Err(ReverseUnmatched::NoSync));
            continue;
        }
        assert_eq!(
            *answer,
            Ok(ReverseMatch {
                offset: *truth,
                assumes_history: false
            }),
            "D = {d}"
        );
    }
    // Without the read from the log start, every one of them is `no-sync`.
    let (_, blind) = run(
        &s,
        Reads {
            head: false,
            ..compacted
        },
    );
    assert!(
        blind
            .iter()
            .filter(|r| r.0 < oldest)
            .all(|r| r.3 == Err(ReverseUnmatched::NoSync))
    );
    check(&s, compacted).unwrap();
}

/// The random flows with their oldest syncs compacted away, with and without the read from the
/// replica's log start: tallied (`--nocapture`), never past the truth, and the read answers
/// most of what was `no-sync`.
#[test]
fn sweep_a_compacted_history_backwards() {
    use crate::record_match::tests::tally;
    let count =
        |reads: Reads| {
            let mut rows = Vec::new();
            for s in sample_scenarios(300) {
                rows.extend(run(&s, reads).1);
            }
            tally(rows.iter().map(|(_, rule, t, a)| {
                (matched(a), *t, *rule, a.err().map(ReverseUnmatched::name))
            }))
        };
    let compacted = Reads { dropped: 3, ..FULL };
    let before = count(Reads {
        head: false,
        ..compacted
    });
    let after = count(compacted);
    eprintln!("backward sweep, 3 oldest syncs compacted, without the head read: {before:?}");
    eprintln!("backward sweep, 3 oldest syncs compacted, with the head read: {after:?}");
    assert!(!before.contains_key("PAST THE TRUTH"));
    assert!(!after.contains_key("PAST THE TRUTH"));
    let no_sync = |t: &std::collections::BTreeMap<String, usize>| {
        t.get("unmatched no-sync").copied().unwrap_or(0)
    };
    assert!(
        no_sync(&after) * 4 < no_sync(&before),
        "no-sync {} -> {}",
        no_sync(&before),
        no_sync(&after)
    );
}

/// The sync rules after a failover that used the same history (MM2's checkpoint: one past the
/// last sync at or below `P0`, or that sync's own offset when it is `P0`) or the exact
/// translation (the latest sound start): for every `D` from the start, the failback offset
/// (never below `P0`: no rewind) is never past the group's first unprocessed record. (With any
/// sound start, not one a translation gives, it can be: a start past a retry's duplicates with
/// the lifetime's first sync lost: 144 of 379,449 rows of these flows with up to six sound starts
/// per `P0`; record matching is right there too.)
#[test]
fn the_sync_rules_after_a_translated_failover_are_never_past_the_truth() {
    let (mut rows, mut past) = (0usize, Vec::new());
    for s in sample_scenarios(300) {
        let flow = copy(&s);
        let mut builder = ReverseIndexBuilder::new();
        for &(u, d) in &flow.syncs {
            builder.add(b"t", 0, u, d);
        }
        let index = builder.finish();
        let Some(part) = index.partition(b"t", 0) else {
            continue;
        };
        for p0 in primary_offsets(&flow) {
            let sound = failover_starts(&flow, p0, usize::MAX);
            let by_mm2 = flow
                .syncs
                .iter()
                .rfind(|&&(u, _)| u <= p0)
                .map(|&(u, d)| if u == p0 { d } else { d + 1 } as usize)
                .filter(|a| sound.contains(a));
            let exact = sound.last().copied();
            for a in by_mm2.into_iter().chain(exact) {
                let truths = truths_after_failover(&flow, p0, a);
                for (d, &truth) in (a..).zip(&truths) {
                    if let Some(rule) = part.translate(d as i64) {
                        rows += 1;
                        if rule.offset.max(p0) > truth {
                            past.push(format!("P0 {p0}, A {a}, D {d}: {} > {truth}", rule.offset));
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "sync rules after a translated failover: {} of {rows} rows past the truth",
        past.len()
    );
    assert!(rows > 10_000, "{rows}");
    assert!(past.is_empty(), "{past:?}");
}
