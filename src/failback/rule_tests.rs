use super::*;
use proptest::prelude::*;

fn partition(syncs: &[(i64, i64)]) -> ReversePartition {
    let mut builder = ReverseIndexBuilder::new();
    for &(u, d) in syncs {
        builder.add(b"t", 0, u, d);
    }
    builder.finish().partition(b"t", 0).unwrap().clone()
}

fn answer(part: &ReversePartition, d: i64) -> Option<(i64, FailbackRule)> {
    part.translate(d).map(|a| (a.offset, a.rule))
}

#[test]
fn greatest_sync_at_or_below() {
    let part = partition(&[(5, 0), (20, 10), (30, 25)]);
    assert_eq!(part.translate(-1), None);
    assert_eq!(answer(&part, 0), Some((5, FailbackRule::ExactSync)));
    assert_eq!(answer(&part, 9), Some((6, FailbackRule::ReverseRule)));
    assert_eq!(answer(&part, 10), Some((20, FailbackRule::ExactSync)));
    assert_eq!(answer(&part, 24), Some((21, FailbackRule::ReverseRule)));
    assert_eq!(answer(&part, 1000), Some((31, FailbackRule::ReverseRule)));
    assert_eq!(
        part.stretch(12),
        Some(Stretch {
            before: (20, 10),
            after: (30, 25)
        })
    );
    // At a sync, past the last one, or between syncs one upstream offset apart: nothing to
    // sharpen.
    assert_eq!(part.stretch(10), None);
    assert_eq!(part.stretch(30), None);
    assert_eq!(partition(&[(0, 0), (1, 5)]).stretch(3), None);
}

/// After a restart the history holds an earlier lifetime that got further upstream at lower
/// downstream offsets. The rule takes the newest sync (greatest d), not the greatest u.
#[test]
fn a_restart_takes_the_newest_sync_not_the_greatest_upstream() {
    // Lifetime A copied 0..=50 at 0..=50; B resumed at 40 (duplicates 40..=50 at 51..=61).
    let part = partition(&[(0, 0), (50, 50), (40, 51), (60, 71)]);
    assert_eq!(part.stats().lifetimes, 2);
    assert_eq!(answer(&part, 55), Some((41, FailbackRule::ReverseRule)));
    assert_eq!(answer(&part, 51), Some((40, FailbackRule::ExactSync)));
}

/// Why not the greatest u: the upstream topic was recreated (offsets start again at 0) after
/// lifetime A reached 500. The new incarnation's records 0..=9 sit at 501..=510. A group at 511
/// has read the new records 0..=9; the greatest u below it is the old incarnation's 500, which
/// would skip the new records 10..=500. The greatest d (the new incarnation's sync) gives 10.
#[test]
fn a_recreated_upstream_defeats_the_greatest_upstream() {
    let part = partition(&[(0, 0), (500, 500), (0, 501), (9, 510)]);
    let greatest_u = 500 + 1;
    let truth = 10;
    assert!(greatest_u > truth);
    assert_eq!(answer(&part, 511), Some((truth, FailbackRule::ReverseRule)));
}

#[test]
fn a_downstream_regression_drops_the_history_before_it() {
    // The replica was recreated: offsets start again at 0, the old syncs point past its log.
    let part = partition(&[(0, 0), (100, 100), (100, 0), (150, 50)]);
    assert_eq!(part.stats().truncations, 1);
    assert_eq!(part.translate(0).map(|a| a.sync), Some((100, 0)));
    assert_eq!(answer(&part, 60), Some((151, FailbackRule::ReverseRule)));
}

#[test]
fn compaction_leaves_a_suffix_and_no_substitute() {
    // Only the last sync survived compaction: below it, nothing is known.
    let part = partition(&[(300, 290)]);
    assert_eq!(part.translate(289), None);
    assert_eq!(answer(&part, 295), Some((301, FailbackRule::ReverseRule)));
}

#[test]
fn duplicates_and_negative_offsets_are_ignored() {
    let part = partition(&[(0, 0), (0, 0), (-1, 4), (10, 10)]);
    let stats = part.stats();
    assert_eq!((stats.syncs, stats.duplicates, stats.invalid), (2, 1, 1));
}

#[test]
fn refine_counts_back_and_proves_one_for_one_stretches() {
    let part = partition(&[(100, 10), (110, 20)]);
    let stretch = part.stretch(15).unwrap();
    let rule = part.translate(15).unwrap();
    assert_eq!((rule.offset, rule.rule), (101, FailbackRule::ReverseRule));
    // Every record between present: one for one, position 15 holds record 105.
    let all: Vec<i64> = (101..110).collect();
    let exact = rule.refine(&stretch, 15, &all);
    assert_eq!(
        (exact.offset, exact.rule),
        (105, FailbackRule::Interpolated)
    );
    assert_eq!(exact.safe_offset, 101);
    // Records 103 and 104 unknown (compacted, aborted, or not read): count back from 110. Ten
    // offsets (11..=20) for at most nine records: the record below 15 holds at least the 6th
    // known record below 110: 102 (known: 100 101 102 105 .. 110), so 103 is safe.
    let some: Vec<i64> = (101..110).filter(|r| !(103..=104).contains(r)).collect();
    let counted = rule.refine(&stretch, 15, &some);
    assert_eq!((counted.offset, counted.rule), (103, FailbackRule::Counted));
    // Too few records known to pass the rule: the rule stands.
    let none = rule.refine(&stretch, 15, &[]);
    assert_eq!((none.offset, none.rule), (101, FailbackRule::ReverseRule));
    // Records outside the stretch are ignored; a stretch of another offset changes nothing.
    let outside: Vec<i64> = (0..100).chain(111..200).collect();
    assert_eq!(rule.refine(&stretch, 15, &outside), rule);
    assert_eq!(rule.refine(&stretch, 25, &all), rule);
}

/// A model of MirrorSourceTask + OffsetSyncWriter copying one upstream partition, as in the
/// forward index's tests, with what failback meets besides: upstream markers and aborted
/// records, producer retries that write a batch twice, downstream markers, lost syncs, restarts
/// from the committed source offset, the upstream topic recreated, and a compacted history.
mod model {
    /// What one upstream offset holds.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Kind {
        /// A record MM2 copies and a read_committed reader sees.
        Data,
        /// A record of an aborted transaction: MM2 (read_uncommitted, its default) copies it,
        /// a read_committed reader does not see it.
        Aborted,
        /// A transaction marker: no record, never copied.
        Marker,
    }

    /// One step of the scenario.
    #[derive(Clone, Copy, Debug)]
    pub enum Event {
        /// Copy the next delivered record; `fire`: whether a sync send slot is free.
        Record { fire: bool },
        /// The next `n` records go out in a batch whose first attempt landed but whose answer
        /// was lost: written twice, back to back; the acknowledgements (and syncs) are the
        /// second copies'.
        Retry { n: usize, fire: bool },
        /// Connect commits the source offsets of every acknowledged record; MM2 promotes its
        /// delayed syncs.
        Commit { fire: bool },
        /// The task stops: unsent syncs are lost; the next lifetime resumes at the committed
        /// source offset.
        Restart,
        /// Exactly-once mode commits a transaction: a marker downstream.
        DownstreamMarker,
        /// The upstream topic is deleted and recreated: MM2's consumer resets to the new
        /// topic's start.
        Recreate,
    }

    pub struct Outcome {
        /// The syncs in the order they reached the topic, with their incarnation.
        pub syncs: Vec<((i64, i64), usize)>,
        /// Each downstream offset: the (incarnation, upstream offset) it holds, or a marker.
        pub downstream: Vec<Option<(usize, i64)>>,
        /// Each incarnation's upstream offsets.
        pub incarnations: Vec<Vec<Kind>>,
    }

    struct Writer {
        max_lag: i64,
        prev_u: i64,
        prev_d: i64,
        last_sync_d: i64,
        /// Each sync with the incarnation it was made in.
        pending: Option<((i64, i64), usize)>,
        delayed: Option<((i64, i64), usize)>,
    }

    impl Writer {
        fn new(max_lag: i64) -> Self {
            Writer {
                max_lag,
                prev_u: -1,
                prev_d: -1,
                last_sync_d: -1,
                pending: None,
                delayed: None,
            }
        }

        /// `OffsetSyncWriter.maybeQueueOffsetSyncs` with `PartitionState.update`.
        fn queue(&mut self, u: i64, d: i64, incarnation: usize) {
            let now = self.last_sync_d == -1
                || d - (self.last_sync_d + 1) >= self.max_lag
                || u - self.prev_u != 1
                || d < self.prev_d;
            self.prev_u = u;
            self.prev_d = d;
            if now {
                self.last_sync_d = d;
                self.delayed = None;
                self.pending = Some(((u, d), incarnation));
            } else {
                self.delayed = Some(((u, d), incarnation));
            }
        }
    }

    pub fn run(upstream: &[Vec<Kind>], events: &[Event], max_lag: i64) -> Outcome {
        let delivered: Vec<Vec<i64>> = upstream
            .iter()
            .map(|kinds| {
                (0..kinds.len())
                    .filter(|&o| kinds[o] != Kind::Marker)
                    .map(|o| o as i64)
                    .collect()
            })
            .collect();
        let mut out = Outcome {
            syncs: Vec::new(),
            downstream: Vec::new(),
            incarnations: upstream.to_vec(),
        };
        let (mut incarnation, mut next, mut committed) = (0usize, 0usize, 0usize);
        let mut writer = Writer::new(max_lag);
        let fire = |writer: &mut Writer, fire: bool, out: &mut Outcome| {
            if fire && let Some(sync) = writer.pending.take() {
                out.syncs.push(sync);
            }
        };
        for &event in events {
            let records = &delivered[incarnation];
            match event {
                Event::Record { fire: f } => {
                    if next < records.len() {
                        let u = records[next];
                        let d = out.downstream.len() as i64;
                        out.downstream.push(Some((incarnation, u)));
                        writer.queue(u, d, incarnation);
                        next += 1;
                    }
                    fire(&mut writer, f, &mut out);
                }
                Event::Retry { n, fire: f } => {
                    let batch = &records[next..(next + n).min(records.len())];
                    for &u in batch {
                        out.downstream.push(Some((incarnation, u)));
                    }
                    for &u in batch {
                        let d = out.downstream.len() as i64;
                        out.downstream.push(Some((incarnation, u)));
                        writer.queue(u, d, incarnation);
                    }
                    next += batch.len();
                    fire(&mut writer, f, &mut out);
                }
                Event::Commit { fire: f } => {
                    committed = next;
                    if let Some(delayed) = writer.delayed.take() {
                        writer.pending = Some(delayed);
                    }
                    fire(&mut writer, f, &mut out);
                }
                Event::Restart => {
                    next = committed;
                    writer = Writer::new(max_lag);
                }
                Event::DownstreamMarker => out.downstream.push(None),
                Event::Recreate if incarnation + 1 < delivered.len() => {
                    incarnation += 1;
                    // The stored source offset is past the new topic's end (or names another
                    // record): the consumer resets to the start, and the next commit stores it.
                    next = 0;
                    committed = 0;
                }
                Event::Recreate => {}
            }
        }
        out
    }

    impl Outcome {
        /// The last incarnation written to (the upstream topic as it is now).
        pub fn current(&self) -> usize {
            self.downstream
                .iter()
                .flatten()
                .map(|&(i, _)| i)
                .max()
                .unwrap_or(0)
        }

        /// For a group at downstream `d`: the smallest upstream offset of the current
        /// incarnation that MM2 delivers and that has no copy below `d` (the upstream end if
        /// every one has).
        pub fn truth(&self, d: usize) -> i64 {
            let current = self.current();
            let kinds = &self.incarnations[current];
            let mut read = vec![false; kinds.len()];
            for &(i, u) in self.downstream[..d].iter().flatten() {
                if i == current {
                    read[u as usize] = true;
                }
            }
            (0..kinds.len())
                .find(|&o| kinds[o] != Kind::Marker && !read[o])
                .unwrap_or(kinds.len()) as i64
        }

        /// The upstream offsets a read_committed reader sees in the current incarnation.
        pub fn committed_view(&self) -> Vec<i64> {
            let kinds = &self.incarnations[self.current()];
            (0..kinds.len())
                .filter(|&o| kinds[o] == Kind::Data)
                .map(|o| o as i64)
                .collect()
        }
    }
}

use model::{Event, Kind};

/// Upstream offsets, `markers` and `aborted` in percent.
fn kinds(markers: u32, aborted: u32) -> impl Strategy<Value = Vec<Kind>> {
    proptest::collection::vec(
        prop_oneof![
            100 - markers - aborted => Just(Kind::Data),
            markers => Just(Kind::Marker),
            aborted => Just(Kind::Aborted),
        ],
        1..100,
    )
}

fn event(restarts: u32, retries: u32, recreates: u32) -> impl Strategy<Value = Event> {
    prop_oneof![
        20 => any::<bool>().prop_map(|fire| Event::Record { fire }),
        3 => any::<bool>().prop_map(|fire| Event::Commit { fire }),
        restarts => Just(Event::Restart),
        retries => (1usize..4, any::<bool>()).prop_map(|(n, fire)| Event::Retry { n, fire }),
        1 => Just(Event::DownstreamMarker),
        recreates => Just(Event::Recreate),
    ]
}

fn max_lag() -> impl Strategy<Value = i64> {
    prop_oneof![Just(1i64), Just(3), Just(10), Just(100)]
}

/// Checks every downstream position of `outcome` (with the history compacted to the suffix
/// from `keep_from`): the rule, and the rule sharpened with the primary's committed records,
/// never pass the truth; an `interpolated` or `exact-sync` answer is the record the group meets
/// next. Positions whose sync is of an earlier incarnation than the upstream topic's current
/// one are the residual assumption (the reset's first sync lost or not sent yet) and are not
/// checked; returns how many were.
fn check(outcome: &model::Outcome, keep_from: usize) -> Result<usize, String> {
    let current = outcome.current();
    let kept = &outcome.syncs[keep_from.min(outcome.syncs.len())..];
    let mut builder = ReverseIndexBuilder::new();
    for &((u, d), _) in kept {
        builder.add(b"t", 0, u, d);
    }
    let index = builder.finish();
    let Some(part) = index.partition(b"t", 0) else {
        return Ok(0);
    };
    let incarnation_of =
        |sync: (i64, i64)| kept.iter().rev().find(|(s, _)| *s == sync).map(|&(_, i)| i);
    let view = outcome.committed_view();
    let mut checked = 0;
    for d in 0..=outcome.downstream.len() {
        let Some(rule) = part.translate(d as i64) else {
            continue;
        };
        if incarnation_of(rule.sync) != Some(current) {
            continue;
        }
        checked += 1;
        let mut answers = vec![rule];
        if let Some(stretch) = part.stretch(d as i64)
            && incarnation_of(stretch.after) == Some(current)
        {
            answers.push(rule.refine(&stretch, d as i64, &view));
        }
        let truth = outcome.truth(d);
        for a in answers {
            if a.offset > truth {
                return Err(format!(
                    "downstream {d}: {} by {:?} is past the truth {truth}; syncs {:?}",
                    a.offset, a.rule, kept
                ));
            }
            if a.rule.is_exact() && outcome.downstream.get(d) != Some(&Some((current, a.offset))) {
                return Err(format!(
                    "downstream {d}: {:?} says {} is the next record, but {:?} is there",
                    a.rule,
                    a.offset,
                    outcome.downstream.get(d)
                ));
            }
        }
    }
    Ok(checked)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Markers and aborted records upstream, retries, restarts, markers downstream, lost syncs,
    /// a compacted history: never past the truth, at every downstream offset.
    #[test]
    fn the_reverse_rule_is_never_past_the_truth(
        upstream in kinds(10, 10),
        events in proptest::collection::vec(event(1, 1, 0), 0..300),
        max_lag in max_lag(),
        keep_from in 0usize..8,
    ) {
        let outcome = model::run(&[upstream], &events, max_lag);
        prop_assert!(check(&outcome, keep_from).is_ok(), "{:?}", check(&outcome, keep_from));
    }

    /// The upstream topic recreated (once or twice) while MM2 copies it: checked wherever the
    /// sync the rule starts from is of the current topic.
    #[test]
    fn a_recreated_upstream_is_safe_from_its_first_sync_on(
        first in kinds(10, 5),
        second in kinds(10, 5),
        third in kinds(0, 0),
        events in proptest::collection::vec(event(1, 1, 1), 0..300),
        max_lag in max_lag(),
    ) {
        let outcome = model::run(&[first, second, third], &events, max_lag);
        prop_assert!(check(&outcome, 0).is_ok(), "{:?}", check(&outcome, 0));
    }

    /// One lifetime, no retries, no markers anywhere: every exact answer is the truth itself
    /// (no record of it was copied before), and the stretches are all one-for-one.
    #[test]
    fn one_clean_lifetime_gives_the_truth_exactly(
        len in 1usize..100,
        events in proptest::collection::vec(event(0, 0, 0).prop_filter(
            "no downstream markers", |e| !matches!(e, Event::DownstreamMarker)), 0..300),
        max_lag in max_lag(),
    ) {
        let outcome = model::run(&[vec![Kind::Data; len]], &events, max_lag);
        let mut builder = ReverseIndexBuilder::new();
        for &((u, d), _) in &outcome.syncs {
            builder.add(b"t", 0, u, d);
        }
        let index = builder.finish();
        let view = outcome.committed_view();
        for d in 0..outcome.downstream.len() {
            let Some(part) = index.partition(b"t", 0) else { break };
            let Some(rule) = part.translate(d as i64) else { continue };
            let best = match part.stretch(d as i64) {
                Some(stretch) => rule.refine(&stretch, d as i64, &view),
                None => rule,
            };
            if best.rule.is_exact() {
                prop_assert_eq!(best.offset, outcome.truth(d), "downstream {}", d);
            }
            if part.stretch(d as i64).is_some() {
                prop_assert_eq!(best.rule, FailbackRule::Interpolated, "downstream {}", d);
            }
        }
    }
}

/// The residual assumption, concretely: the upstream topic is recreated right after the last
/// sync of its first incarnation and the new incarnation's first sync is not sent before the
/// group's offset. The rule then answers in the old incarnation's numbering. Found by the model
/// (`a_recreated_upstream_is_safe_from_its_first_sync_on` skips exactly these positions).
#[test]
fn an_unseen_recreation_after_the_last_sync_is_the_residual_assumption() {
    let upstream = [vec![Kind::Data; 10], vec![Kind::Data; 10]];
    let mut events: Vec<Event> = (0..10).map(|_| Event::Record { fire: true }).collect();
    events.push(Event::Commit { fire: true });
    events.push(Event::Recreate);
    events.extend((0..3).map(|_| Event::Record { fire: false }));
    let outcome = model::run(&upstream, &events, 100);
    let part = {
        let mut builder = ReverseIndexBuilder::new();
        for &((u, d), _) in &outcome.syncs {
            builder.add(b"t", 0, u, d);
        }
        builder.finish().partition(b"t", 0).unwrap().clone()
    };
    // A group at 13 read the new incarnation's 0..=2; the last sync is the old (9, 9).
    assert_eq!(outcome.truth(13), 3);
    assert_eq!(answer(&part, 13), Some((10, FailbackRule::ReverseRule)));
}
