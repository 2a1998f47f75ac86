use super::*;
use proptest::prelude::*;

fn index(syncs: &[(i64, i64)], interpolation: Interpolation) -> PartitionIndex {
    let mut builder = SyncIndexBuilder::new();
    for &(u, d) in syncs {
        builder.add(b"t", 0, u, d);
    }
    builder
        .finish(interpolation)
        .partition(b"t", 0)
        .unwrap()
        .clone()
}

#[test]
fn rules_on_one_lifetime() {
    // (0,0) -> (10,10) one for one; (10,10) -> (20,25) not (a gap or extra offsets).
    let part = index(
        &[(0, 0), (10, 10), (20, 25)],
        Interpolation::GaplessUpstream,
    );
    assert_eq!(part.translate(-1), None);
    assert_eq!(part.translate(0), Some((0, Rule::ExactSync)));
    assert_eq!(part.translate(7), Some((7, Rule::Interpolated)));
    assert_eq!(part.translate(10), Some((10, Rule::ExactSync)));
    assert_eq!(part.translate(15), Some((11, Rule::Mm2Rule)));
    assert_eq!(part.translate(20), Some((25, Rule::ExactSync)));
    assert_eq!(part.translate(21), Some((26, Rule::Mm2Rule)));
    let off = index(&[(0, 0), (10, 10)], Interpolation::Disabled);
    assert_eq!(off.translate(7), Some((1, Rule::Mm2Rule)));
}

#[test]
fn restart_with_duplicates_is_a_lifetime_boundary() {
    // Lifetime A: 0..=50 at 0..=50. B resumes at 40 (re-sends 40..=50) at 51.., then runs on.
    let part = index(
        &[(0, 0), (50, 50), (40, 51), (60, 71)],
        Interpolation::GaplessUpstream,
    );
    assert_eq!(part.stats().lifetimes, 2);
    // Interpolation inside A, and inside B; never from A's (50, 50) towards B's (40, 51).
    assert_eq!(part.translate(30), Some((30, Rule::Interpolated)));
    assert_eq!(part.translate(45), Some((56, Rule::Interpolated)));
    // Exact sync from A (50) loses to B's later copies of 50 (at 61).
    assert_eq!(part.translate(50), Some((61, Rule::Interpolated)));
    assert_eq!(part.translate(61), Some((72, Rule::Mm2Rule)));
}

#[test]
fn downstream_regression_drops_earlier_history() {
    let part = index(
        &[(0, 100), (50, 150), (60, 10)],
        Interpolation::GaplessUpstream,
    );
    assert_eq!(part.stats().truncations, 1);
    assert_eq!(part.stats().syncs, 1);
    assert_eq!(part.translate(55), None);
    assert_eq!(part.translate(70), Some((11, Rule::Mm2Rule)));
}

#[test]
fn duplicates_and_negative_offsets_are_ignored() {
    let part = index(
        &[(0, 0), (0, 0), (-1, 5), (10, 10)],
        Interpolation::GaplessUpstream,
    );
    let stats = part.stats();
    assert_eq!((stats.syncs, stats.duplicates, stats.invalid), (2, 1, 1));
    assert_eq!(part.translate(5), Some((5, Rule::Interpolated)));
}

#[test]
fn never_below_mm2s_checkpoint() {
    let part = index(&[(0, 0), (100, 100)], Interpolation::GaplessUpstream);
    // History says 51; MM2's checkpoint (from syncs since compacted away) says 60.
    let precise = part.translate_checkpoint(50, 60);
    assert_eq!((precise.offset, precise.rule), (60, Rule::Mm2Checkpoint));
    assert_eq!(precise.rereads_saved(), 0);
    let precise = part.translate_checkpoint(50, 1);
    assert_eq!((precise.offset, precise.rule), (50, Rule::Interpolated));
    assert_eq!(precise.rereads_saved(), 49);
    let none = SyncIndex::default().translate_checkpoint(b"t", 0, 50, 7);
    assert_eq!((none.offset, none.rule), (7, Rule::NoSync));
}

/// Why gaps upstream disable interpolation (1): upstream has a transaction marker at 1 and
/// downstream one at 2 (exactly-once mode); the gap's sync (2, 1) was throttled away. Equal
/// steps, yet record 2 sits at downstream 1, and interpolating would give 2 and skip it.
#[test]
fn a_marker_on_each_side_defeats_equal_steps() {
    let syncs = [(0, 0), (3, 3)];
    let truth_of_2 = 1;
    let on = index(&syncs, Interpolation::GaplessUpstream);
    assert!(on.translate(2).unwrap().0 > truth_of_2);
    let off = index(&syncs, Interpolation::Disabled);
    assert!(off.translate(2).unwrap().0 <= truth_of_2);
}

/// Why gaps upstream disable interpolation (2), at-least-once, as the proptest shrank it: task A
/// wrote 23, 25, 26 (24 is a gap) at 23, 24, 25; its gap sync (25, 24) was still unsent when it
/// stopped; B resumed at 26 and re-sent it at 26. The restart leaves no trace in the log, and its
/// one duplicate cancels the gap.
#[test]
fn a_restart_duplicate_defeats_equal_steps() {
    let syncs = [(22, 22), (26, 26)];
    let truth_of_25 = 24;
    let on = index(&syncs, Interpolation::GaplessUpstream);
    assert!(on.translate(25).unwrap().0 > truth_of_25);
    let off = index(&syncs, Interpolation::Disabled);
    assert!(off.translate(25).unwrap().0 <= truth_of_25);
}

#[test]
fn overlapping_runs_keep_the_greatest() {
    let runs = envelope(vec![
        Run {
            start: 0,
            end: 10,
            delta: 0,
        },
        Run {
            start: 5,
            end: 8,
            delta: 3,
        },
        Run {
            start: 7,
            end: 20,
            delta: 1,
        },
    ]);
    let expected = [(0, 5, 0), (5, 8, 3), (8, 20, 1)];
    let got: Vec<_> = runs.iter().map(|r| (r.start, r.end, r.delta)).collect();
    assert_eq!(got, expected);
}

/// A model of MirrorSourceTask + OffsetSyncWriter replicating one partition, with upstream gaps,
/// throttled syncs, periodic commits and restarts that resume from the last committed source
/// offset.
mod sim {
    /// One step of the scenario, chosen by proptest.
    #[derive(Clone, Copy, Debug)]
    pub enum Event {
        /// Replicate the next record; `fire` says whether a sync send slot is free.
        Record { fire: bool },
        /// Connect commits source offsets and calls `MirrorSourceTask.commit()`.
        Commit { fire: bool },
        /// The task stops (or crashes): unsent syncs are lost; the next lifetime resumes from
        /// the last committed source offset.
        Restart,
        /// Exactly-once mode commits a transaction: a marker takes a downstream offset.
        DownstreamMarker,
    }

    pub struct Outcome {
        /// Syncs in the order they reached the topic.
        pub syncs: Vec<(i64, i64)>,
        /// For each downstream offset, the upstream offset it holds (None: a marker).
        pub downstream: Vec<Option<i64>>,
        /// Upstream offsets that hold records (the rest are gaps).
        pub upstream: Vec<i64>,
    }

    use crate::mm2::sync_writer_model::SyncState as State;

    /// Runs the scenario, then one last lifetime to the end of the upstream log (replication
    /// caught up) with a final commit.
    pub fn run(gaps: &[bool], events: &[Event], max_lag: i64) -> Outcome {
        let upstream: Vec<i64> = gaps
            .iter()
            .enumerate()
            .filter(|(_, gap)| !**gap)
            .map(|(o, _)| o as i64)
            .collect();
        let mut downstream = Vec::new();
        let mut syncs = Vec::new();
        let mut committed = 0usize; // index into `upstream` of the next record to read
        let mut next = 0usize;
        let mut state = State::new(max_lag, false);
        let replicate = |next: &mut usize, state: &mut State, downstream: &mut Vec<_>| {
            let u = upstream[*next];
            let d = downstream.len() as i64;
            downstream.push(Some(u));
            state.queue(u, d);
            *next += 1;
        };
        for &event in events {
            match event {
                Event::Record { fire } if next < upstream.len() => {
                    replicate(&mut next, &mut state, &mut downstream);
                    state.fire(fire, &mut syncs);
                }
                Event::Record { .. } => {}
                Event::Commit { fire } => {
                    committed = next;
                    state.promote();
                    state.fire(fire, &mut syncs);
                }
                Event::Restart => {
                    next = committed;
                    state = State::new(max_lag, false);
                }
                Event::DownstreamMarker => downstream.push(None),
            }
        }
        while next < upstream.len() {
            replicate(&mut next, &mut state, &mut downstream);
            state.fire(true, &mut syncs);
        }
        state.promote();
        state.fire(true, &mut syncs);
        Outcome {
            syncs,
            downstream,
            upstream: upstream.clone(),
        }
    }

    impl Outcome {
        /// For each upstream position `U` in `0..=len`, the greatest downstream offset from which
        /// a consumer still reads every record at or after `U` at least once.
        pub fn truth(&self, len: usize) -> Vec<i64> {
            let mut last_copy = vec![i64::MIN; len];
            for (d, u) in self.downstream.iter().enumerate() {
                if let Some(u) = u {
                    last_copy[*u as usize] = d as i64;
                }
            }
            let mut truth = vec![self.downstream.len() as i64; len + 1];
            for u in (0..len).rev() {
                truth[u] = truth[u + 1];
                if self.upstream.binary_search(&(u as i64)).is_ok() {
                    truth[u] = truth[u].min(last_copy[u]);
                }
            }
            truth
        }
    }
}

fn event() -> impl Strategy<Value = sim::Event> {
    prop_oneof![
        20 => any::<bool>().prop_map(|fire| sim::Event::Record { fire }),
        3 => any::<bool>().prop_map(|fire| sim::Event::Commit { fire }),
        1 => Just(sim::Event::Restart),
    ]
}

fn check(outcome: &sim::Outcome, len: usize, interpolation: Interpolation) -> Result<(), String> {
    let mut builder = SyncIndexBuilder::new();
    for &(u, d) in &outcome.syncs {
        builder.add(b"t", 0, u, d);
    }
    let index = builder.finish(interpolation);
    let truth = outcome.truth(len);
    for (u, &t) in truth.iter().enumerate() {
        if let Some((p, rule)) = index.partition(b"t", 0).and_then(|p| p.translate(u as i64))
            && p > t
        {
            return Err(format!(
                "upstream {u}: {p} by {rule:?} is past the truth {t}; syncs {:?}",
                outcome.syncs
            ));
        }
    }
    Ok(())
}

fn gaps(weight: f64) -> impl Strategy<Value = Vec<bool>> {
    proptest::collection::vec(proptest::bool::weighted(weight), 1..120)
}

fn max_lag() -> impl Strategy<Value = i64> {
    prop_oneof![Just(1i64), Just(3), Just(10), Just(100)]
}

fn events(markers: u32) -> impl Strategy<Value = Vec<sim::Event>> {
    proptest::collection::vec(
        prop_oneof![4 => event(), markers => Just(sim::Event::DownstreamMarker)],
        0..300,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Gaps upstream, restarts, lost syncs, markers downstream: the syncs alone are never past
    /// the truth.
    #[test]
    fn syncs_alone_are_never_past_the_truth(
        gaps in gaps(0.15), events in events(1), max_lag in max_lag(),
    ) {
        let outcome = sim::run(&gaps, &events, max_lag);
        prop_assert_eq!(check(&outcome, gaps.len(), Interpolation::Disabled), Ok(()));
    }

    /// Gapless upstream, with restarts, lost syncs and markers downstream: interpolation too.
    #[test]
    fn interpolation_is_never_past_the_truth_without_gaps(
        len in 1usize..120, events in events(1), max_lag in max_lag(),
    ) {
        let outcome = sim::run(&vec![false; len], &events, max_lag);
        prop_assert_eq!(check(&outcome, len, Interpolation::GaplessUpstream), Ok(()));
    }
}

/// The greatest candidate, ties going to the most specific rule (listed first).
fn greatest(
    exact: Option<i64>,
    interpolated: Option<i64>,
    after_sync: Option<i64>,
) -> Option<(i64, Rule)> {
    let mut best: Option<(i64, Rule)> = None;
    for (offset, rule) in [
        (exact, Rule::ExactSync),
        (interpolated, Rule::Interpolated),
        (after_sync, Rule::Mm2Rule),
    ] {
        if let Some(o) = offset
            && best.is_none_or(|(b, _)| o > b)
        {
            best = Some((o, rule));
        }
    }
    best
}

/// The lookup's rules stated plainly, by a scan of every kept sync and run: what the binary
/// searches of [`PartitionIndex::translate`] must answer, rule for rule.
fn scanned(part: &PartitionIndex, upstream: i64) -> Option<(i64, Rule)> {
    let exact = part
        .syncs
        .iter()
        .filter(|s| s.upstream == upstream)
        .map(|s| s.downstream)
        .max();
    let after_sync = part
        .syncs
        .iter()
        .filter(|s| s.upstream < upstream)
        .map(|s| s.downstream + 1)
        .max();
    let interpolated = part
        .runs
        .iter()
        .find(|r| r.start <= upstream && upstream < r.end)
        .map(|r| upstream + r.delta);
    greatest(exact, interpolated, after_sync)
}

proptest! {
    #[test]
    fn lookups_agree_with_a_scan_of_the_history(
        syncs in proptest::collection::vec((-1i64..40, -1i64..60), 0..40),
        gapless: bool,
    ) {
        let interpolation = if gapless {
            Interpolation::GaplessUpstream
        } else {
            Interpolation::Disabled
        };
        let mut builder = SyncIndexBuilder::new();
        for &(u, d) in &syncs {
            builder.add(b"t", 0, u, d);
        }
        let index = builder.finish(interpolation);
        let Some(part) = index.partition(b"t", 0) else {
            // Only syncs with a negative offset, or none.
            prop_assert!(syncs.iter().all(|&(u, d)| u < 0 || d < 0));
            return Ok(());
        };
        for upstream in -2..45 {
            prop_assert_eq!(part.translate(upstream), scanned(part, upstream), "U = {}", upstream);
        }
    }
}

proptest! {
    /// Sorted, disjoint runs (one task lifetime) take the one-pass path; it must answer as the
    /// general envelope does, touching runs of one delta joined.
    #[test]
    fn disjoint_runs_envelope_as_the_general_case(
        steps in proptest::collection::vec((0i64..3, 1i64..4, 0i64..2), 0..30),
    ) {
        let mut at = 0;
        let runs: Vec<Run> = steps
            .iter()
            .map(|&(gap, len, delta)| {
                let start = at + gap;
                at = start + len;
                Run { start, end: at, delta }
            })
            .collect();
        let got: Vec<_> = envelope(runs.clone()).iter().map(|r| (r.start, r.end, r.delta)).collect();
        let want: Vec<_> =
            overlapping_envelope(runs).iter().map(|r| (r.start, r.end, r.delta)).collect();
        prop_assert_eq!(got, want);
    }
}

/// The rules as first stated, straight from the log: the history filtered in log order
/// (negative offsets, re-sent syncs, everything before a downstream regression dropped), a run
/// strictly between each two consecutive kept syncs with equal upstream and downstream steps,
/// and every sync and run scanned. The index compresses the runs, sorts in place and keeps the
/// running maximum only after restarts; it must answer exactly this, offset and rule.
fn reference(
    log: &[(i64, i64)],
    interpolation: Interpolation,
    upstream: i64,
) -> Option<(i64, Rule)> {
    let mut kept: Vec<(i64, i64)> = Vec::new();
    for &(u, d) in log {
        if u < 0 || d < 0 || kept.last() == Some(&(u, d)) {
            continue;
        }
        if kept.last().is_some_and(|&(_, last_d)| d <= last_d) {
            kept.clear();
        }
        kept.push((u, d));
    }
    let exact = kept.iter().filter(|s| s.0 == upstream).map(|s| s.1).max();
    let after_sync = kept
        .iter()
        .filter(|s| s.0 < upstream)
        .map(|s| s.1 + 1)
        .max();
    let interpolated = match interpolation {
        Interpolation::Disabled => None,
        Interpolation::GaplessUpstream => kept
            .windows(2)
            .filter(|p| {
                let step = p[1].0 - p[0].0;
                step > 1 && p[1].1 - p[0].1 == step && p[0].0 < upstream && upstream < p[1].0
            })
            .map(|p| upstream + p[0].1 - p[0].0)
            .max(),
    };
    greatest(exact, interpolated, after_sync)
}

/// Histories shaped like MM2's: walks from (0, 0) by steps that are mostly forward, sometimes
/// equal (one-for-one stretches), sometimes rewinding upstream (a restart) or standing still
/// downstream (a truncation).
fn walk() -> impl Strategy<Value = Vec<(i64, i64)>> {
    proptest::collection::vec((-3i64..6, 0i64..6), 0..60).prop_map(|steps| {
        let (mut u, mut d) = (0i64, 0i64);
        steps
            .into_iter()
            .map(|(du, dd)| {
                u = (u + du).max(0);
                d += dd;
                (u, d)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]
    #[test]
    fn lookups_answer_as_the_rules_stated_on_the_log(
        log in prop_oneof![
            walk(),
            proptest::collection::vec((-1i64..40, -1i64..60), 0..40),
        ],
        gapless: bool,
    ) {
        let interpolation = if gapless {
            Interpolation::GaplessUpstream
        } else {
            Interpolation::Disabled
        };
        let top = log.iter().map(|s| s.0).max().unwrap_or(0) + 3;
        let mut builder = SyncIndexBuilder::new();
        builder.extend(b"t", 0, log.iter().copied());
        let index = builder.finish(interpolation);
        let Some(part) = index.partition(b"t", 0) else {
            prop_assert!(log.is_empty());
            return Ok(());
        };
        // Lookups one by one, and the same offsets in increasing order from each previous
        // position, as the batched re-translation does.
        let mut from = 0;
        for upstream in -2..top {
            let want = reference(&log, interpolation, upstream);
            prop_assert_eq!(part.translate(upstream), want, "U = {} in {:?}", upstream, log);
            let (at, got) = part.translate_from(from, upstream);
            prop_assert_eq!(got, want, "from {} U = {}", from, upstream);
            from = at;
        }
    }
}

#[test]
fn one_lifetime_without_gaps_is_one_run() {
    // 1,000 syncs 10 apart, one for one: one run, the syncs kept as they came (no sort, no
    // running maximum).
    let log: Vec<(i64, i64)> = (0..1000).map(|k| (k * 10, 5 + k * 10)).collect();
    let part = index(&log, Interpolation::GaplessUpstream);
    assert_eq!(part.runs.len(), 1);
    assert!(part.best_downstream.is_empty());
    assert_eq!(part.translate(4321), Some((4326, Rule::Interpolated)));
    assert_eq!(part.translate(4320), Some((4325, Rule::ExactSync)));
    // A restart that rewinds: the second lifetime's run lies over the first's, whose
    // envelope is three pieces; the syncs sorted, with the running maximum.
    let mut restarted = log.clone();
    restarted.extend((0..10).map(|k| (9000 + k * 10, 20_000 + k * 10)));
    let part = index(&restarted, Interpolation::GaplessUpstream);
    let runs: Vec<_> = part
        .runs
        .iter()
        .map(|r| (r.start, r.end, r.delta))
        .collect();
    assert_eq!(runs, [(0, 9000, 5), (9000, 9091, 11_000), (9091, 9991, 5)]);
    assert_eq!(part.best_downstream.len(), part.syncs.len());
    assert_eq!(part.translate(9005), Some((20_005, Rule::Interpolated)));
}
