//! The periodic apply's runs against the fake cluster, fed hand-made snapshots: a map that is not
//! ready or too old writes nothing and asks nothing, an empty group is committed and a group with
//! members is not, a rewind is refused, and a failed commit does not stop the loop.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use kafka_protocol::messages::ApiKey;

use super::*;
use crate::client::{KafkaClient, OffsetToCommit};
use crate::config::ClientConfig;
use crate::fake::{FakeCluster, Fault};
use crate::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
use crate::records::builder::BatchBuilder;
use crate::select::GroupSelector;
use crate::translate::BatchTranslator;

const TOPIC: &str = "primary.orders";

/// A map source whose snapshot and readiness the test sets.
struct FakeMap {
    snapshot: Mutex<Snapshot>,
    /// What `status()` answers after the snapshot was taken (`None`: the snapshot's status).
    later: Mutex<Option<WatchStatus>>,
    /// Called by `status()`, which a run asks between its plan and its commits.
    on_recheck: Mutex<Option<Box<dyn Fn() + Send>>>,
}

impl MapSource for FakeMap {
    fn snapshot(&self) -> Snapshot {
        self.snapshot.lock().unwrap().clone()
    }

    fn status(&self) -> WatchStatus {
        if let Some(hook) = &*self.on_recheck.lock().unwrap() {
            hook();
        }
        let later = self.later.lock().unwrap().clone();
        later.unwrap_or_else(|| self.snapshot.lock().unwrap().status.clone())
    }
}

fn status(ready: bool, as_of: Option<SystemTime>) -> WatchStatus {
    WatchStatus {
        first_read_done: ready,
        tail_live: ready,
        ready,
        as_of,
        sources: vec![],
        partitions: vec![],
        heartbeats_topic: None,
        last_error: (!ready).then(|| "connection refused".to_string()),
        stopped: false,
    }
}

/// A map of checkpoints (group, partition, downstream offset) on [`TOPIC`], caught up `age` ago.
fn map(rows: &[(&str, i32, i64)], ready: bool, age: Duration) -> FakeMap {
    let encoded: Vec<(Vec<u8>, Vec<u8>)> = rows
        .iter()
        .map(|&(group, partition, offset)| {
            let key = CheckpointKey {
                group: group.as_bytes(),
                topic: TOPIC.as_bytes(),
                partition,
            };
            let value = CheckpointValue {
                version: 0,
                upstream_offset: offset + 1000,
                downstream_offset: offset,
                metadata: b"m",
            };
            (
                checkpoint::encode_key(&key).unwrap(),
                checkpoint::encode_value(&value).unwrap(),
            )
        })
        .collect();
    let now = SystemTime::now();
    let mut builder = BatchBuilder::new(0).log_append_time(millis(now));
    for (k, v) in &encoded {
        builder = builder.record(Some(k), Some(v));
    }
    let selector = GroupSelector::all();
    let mut translator = BatchTranslator::new(&selector);
    translator.add_batches(0, &builder.build()).unwrap();
    let as_of = now - age;
    FakeMap {
        snapshot: Mutex::new(Snapshot {
            as_of: Some(as_of),
            taken_at: now,
            translation: std::sync::Arc::new(translator.finish("primary")),
            oldest_checkpoint_per_group: std::sync::Arc::new([]),
            status: status(ready, Some(as_of)),
        }),
        later: Mutex::new(None),
        on_recheck: Mutex::new(None),
    }
}

/// A one-broker fake target with [`TOPIC`] (2 partitions, log end 100) and a loop on it.
async fn target() -> (FakeCluster, KafkaClient, ApplyLoop) {
    let cluster = FakeCluster::start(1).await;
    cluster.create_topic(TOPIC, 2, 1, 100);
    let mut config = ClientConfig::plaintext([cluster.address(0)]);
    config.request_timeout = Duration::from_millis(500);
    let client = KafkaClient::connect(config).await.expect("connect");
    let mut options = ApplyLoopOptions::new(Duration::from_millis(20));
    options.tick_timeout = Duration::from_secs(5);
    let apply = ApplyLoop::new(client.clone(), options);
    (cluster, client, apply)
}

fn offsets(rows: &[(i32, i64)]) -> BTreeMap<(String, i32), i64> {
    rows.iter()
        .map(|&(p, o)| ((TOPIC.to_string(), p), o))
        .collect()
}

/// Requests that could lead to a write, or read a group: none may be sent from an unfit map.
fn group_requests(cluster: &FakeCluster) -> usize {
    [
        ApiKey::FindCoordinator,
        ApiKey::DescribeGroups,
        ApiKey::OffsetFetch,
        ApiKey::OffsetCommit,
    ]
    .iter()
    .map(|&api| cluster.served(api))
    .sum()
}

#[tokio::test]
async fn a_map_not_ready_or_too_old_writes_nothing_and_says_why() {
    let (cluster, _client, apply) = target().await;
    let rows = [("idle", 0, 10), ("other", 1, 20)];
    for (ready, age, reason, words) in [
        (false, Duration::ZERO, WatchSkip::MapNotReady, "not ready"),
        (
            true,
            Duration::from_secs(60),
            WatchSkip::MapStale,
            "60.0 s ago",
        ),
    ] {
        let report = apply.tick_on(&map(&rows, ready, age)).await;
        assert_eq!(report.skipped_groups, BTreeMap::from([(reason, 2)]));
        assert_eq!(report.committed_partitions, 0);
        assert!(!report.succeeded());
        let problem = report.problem.as_deref().unwrap();
        assert!(problem.contains(words), "{problem}");
        let line = report.to_string();
        assert!(
            line.contains(reason.as_str()) && line.contains("nothing written"),
            "{line}"
        );
    }
    // An incomplete read is not ready either, whatever the flags say.
    let incomplete = map(&rows, true, Duration::ZERO);
    std::sync::Arc::make_mut(&mut incomplete.snapshot.lock().unwrap().translation)
        .report
        .complete = false;
    let report = apply.tick_on(&incomplete).await;
    assert_eq!(report.skipped_groups[&WatchSkip::MapNotReady], 2);
    assert_eq!(group_requests(&cluster), 0, "an unfit map asked the target");
    assert!(cluster.committed("idle").is_empty());
    let totals = apply.totals();
    assert_eq!(totals.runs, 3);
    assert_eq!(totals.skipped_groups[&WatchSkip::MapNotReady], 4);
    assert_eq!(totals.skipped_groups[&WatchSkip::MapStale], 2);
    assert_eq!(totals.last_success, None);
}

#[tokio::test]
async fn a_map_that_stops_being_ready_while_planning_writes_nothing() {
    let (cluster, _client, apply) = target().await;
    let source = map(&[("idle", 0, 10)], true, Duration::ZERO);
    // The target restarted while the plan was made: the tail is not live any more.
    *source.later.lock().unwrap() = Some(status(false, source.snapshot().as_of));
    let report = apply.tick_on(&source).await;
    assert_eq!(report.skipped_groups[&WatchSkip::MapNotReady], 1);
    assert!(
        report
            .problem
            .as_deref()
            .unwrap()
            .contains("after planning")
    );
    assert_eq!(cluster.served(ApiKey::OffsetCommit), 0);
    assert!(cluster.committed("idle").is_empty());
}

#[tokio::test]
async fn an_empty_group_is_committed_an_active_one_is_not_and_nothing_is_rewound() {
    let (cluster, client, apply) = target().await;
    cluster.add_member("busy");
    // "ahead" consumed further on the target than the checkpoint says.
    let c = client
        .find_group_coordinators(
            &["ahead".to_string()],
            &Deadline::after(Duration::from_secs(5)),
        )
        .await
        .unwrap();
    client
        .commit_group_offsets(
            c["ahead"].as_ref().unwrap(),
            "ahead",
            &[OffsetToCommit {
                topic: TOPIC.to_string(),
                partition: 0,
                offset: 50,
                metadata: None,
            }],
            &Deadline::after(Duration::from_secs(5)),
        )
        .await
        .unwrap();
    let source = map(
        &[
            ("idle", 0, 10),
            ("idle", 1, 20),
            ("busy", 0, 30),
            ("ahead", 0, 40),
        ],
        true,
        Duration::ZERO,
    );
    let report = apply.tick_on(&source).await;
    assert_eq!(report.committed_partitions, 2, "{report}");
    assert_eq!(report.applied_groups, 1);
    assert_eq!(
        report.skipped_groups,
        BTreeMap::from([(WatchSkip::Active, 1)])
    );
    assert_eq!(
        report.refused_partitions,
        BTreeMap::from([(ApplyVerdict::WouldRewind, 1)])
    );
    assert_eq!(report.errors, 0);
    assert!(report.succeeded());
    let busy = report.notes.iter().find(|n| n.group == "busy").unwrap();
    assert_eq!(busy.skipped, Some(WatchSkip::Active));
    assert!(busy.message.contains("member"), "{busy:?}");
    assert_eq!(cluster.committed("idle"), offsets(&[(0, 10), (1, 20)]));
    assert!(cluster.committed("busy").is_empty());
    assert_eq!(cluster.committed("ahead"), offsets(&[(0, 50)]));
    let line = report.to_string();
    assert!(
        line.contains("1 applied; 2 of 2 partition(s) to write committed and read back")
            && line.contains("2 refused (group-active 1, would-rewind 1)")
            && line.contains("skipped groups: active 1")
            && line.contains("refused partitions: would-rewind 1"),
        "{line}"
    );

    // The next run finds the offsets in place: nothing more is written.
    let commits = cluster.served(ApiKey::OffsetCommit);
    let again = apply.tick_on(&source).await;
    assert_eq!((again.committed_partitions, again.applied_groups), (0, 0));
    assert!(again.succeeded());
    assert_eq!(cluster.served(ApiKey::OffsetCommit), commits);
    let totals = apply.totals();
    assert_eq!((totals.runs, totals.committed_partitions), (2, 2));
    assert_eq!(totals.skipped_groups[&WatchSkip::Active], 2);
    assert_eq!(totals.last_success, Some(again.started_at));
}

/// With an undo folder, a run that writes records its way back first, in a journal of its own
/// that `undo` reads back (the groups as they were before the run); a run with nothing to write
/// leaves no file; a folder that cannot take the journal means nothing is written.
#[tokio::test]
async fn each_run_records_its_undo_before_it_writes() {
    let (cluster, client, _) = target().await;
    let dir = tempfile::tempdir().unwrap();
    let mut options = ApplyLoopOptions::new(Duration::from_millis(20));
    options.tick_timeout = Duration::from_secs(5);
    options.undo_dir = Some(dir.path().to_path_buf());
    let apply = ApplyLoop::new(client.clone(), options.clone());
    let source = map(&[("idle", 0, 10), ("idle", 1, 20)], true, Duration::ZERO);

    let report = apply.tick_on(&source).await;
    assert_eq!(report.committed_partitions, 2, "{report}");
    assert_eq!(cluster.committed("idle"), offsets(&[(0, 10), (1, 20)]));
    let path = report
        .undo_file
        .clone()
        .expect("an undo journal for a run that wrote");
    assert!(report.to_string().contains("undo: "), "{report}");
    let text = std::fs::read_to_string(&path).unwrap();
    let undo = crate::undo::UndoPlan::parse(&text).unwrap().plan;
    assert_eq!(undo.groups.len(), 1, "{text}");
    let restore: Vec<(i32, Option<i64>)> = undo.groups[0]
        .partitions
        .iter()
        .map(|p| (p.partition, p.before.as_ref().map(|b| b.offset)))
        .collect();
    // Nothing was committed before the run: the undo deletes both.
    assert_eq!(restore, [(0, None), (1, None)], "{text}");

    // Already applied: nothing to write, so no journal is left.
    let again = apply.tick_on(&source).await;
    assert_eq!(again.committed_partitions, 0, "{again}");
    assert_eq!(again.undo_file, None);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    // A folder that is gone: the run writes nothing and says why.
    let mut gone = options;
    gone.undo_dir = Some(dir.path().join("missing"));
    let apply = ApplyLoop::new(client.clone(), gone);
    let moved = map(&[("idle", 0, 15)], true, Duration::ZERO);
    let report = apply.tick_on(&moved).await;
    assert_eq!(report.committed_partitions, 0, "{report}");
    assert!(
        report
            .problem
            .as_deref()
            .is_some_and(|p| p.contains("cannot create the undo journal")),
        "{report}"
    );
    assert_eq!(cluster.committed("idle"), offsets(&[(0, 10), (1, 20)]));
}

#[tokio::test]
async fn a_group_that_gains_a_member_after_the_plan_is_skipped_as_changed() {
    let (cluster, _client, apply) = target().await;
    let cluster = std::sync::Arc::new(cluster);
    let source = map(&[("idle", 0, 10), ("joins", 0, 10)], true, Duration::ZERO);
    let joining = cluster.clone();
    *source.on_recheck.lock().unwrap() = Some(Box::new(move || joining.add_member("joins")));
    let report = apply.tick_on(&source).await;
    assert_eq!(
        report.skipped_groups,
        BTreeMap::from([(WatchSkip::ChangedSincePlan, 1)]),
        "{report}"
    );
    let note = report.notes.iter().find(|n| n.group == "joins").unwrap();
    assert!(note.message.contains("changed since the plan"), "{note:?}");
    assert_eq!(report.committed_partitions, 1);
    assert!(cluster.committed("joins").is_empty());
    assert_eq!(cluster.committed("idle"), offsets(&[(0, 10)]));
}

#[tokio::test]
async fn a_failed_commit_is_counted_and_the_loop_carries_on() {
    let (cluster, _client, apply) = target().await;
    // The first commit is refused by the coordinator (GROUP_AUTHORIZATION_FAILED).
    cluster.inject(ApiKey::OffsetCommit, None, 1, Fault::Error(30));
    let source = map(&[("idle", 0, 10)], true, Duration::ZERO);
    let mut runs = Vec::new();
    let (done, finished) = tokio::sync::oneshot::channel::<()>();
    let mut done = Some(done);
    let stop = async {
        let _ = finished.await;
    };
    tokio::time::timeout(
        Duration::from_secs(20),
        apply.run_on(&source, stop, |run| {
            runs.push(run.clone());
            if runs.len() == 2 {
                let _ = done.take().map(|d| d.send(()));
            }
        }),
    )
    .await
    .expect("the loop stops when asked");
    assert_eq!(runs.len(), 2);
    let (first, second) = (&runs[0], &runs[1]);
    assert_eq!((first.errors, first.committed_partitions), (1, 0));
    assert!(!first.succeeded());
    let note = &first.notes[0];
    assert!(
        note.skipped.is_none() && note.message.contains("GROUP_AUTHORIZATION_FAILED"),
        "{note:?}"
    );
    assert_eq!((second.errors, second.committed_partitions), (0, 1));
    assert_eq!(cluster.committed("idle"), offsets(&[(0, 10)]));
    let totals = apply.totals();
    assert_eq!((totals.runs, totals.errors), (2, 1));
    assert_eq!(totals.committed_partitions, 1);
    assert_eq!(totals.last_success, Some(second.started_at));
}

#[tokio::test]
async fn an_unreachable_target_is_an_error_not_a_panic() {
    let (cluster, _client, apply) = target().await;
    let source = map(&[("idle", 0, 10)], true, Duration::ZERO);
    let mut options = apply.options().clone();
    options.tick_timeout = Duration::from_millis(300);
    let apply = ApplyLoop::new(apply.client.clone(), options);
    for api in [
        ApiKey::Metadata,
        ApiKey::ListOffsets,
        ApiKey::FindCoordinator,
    ] {
        cluster.inject(api, None, 10_000, Fault::Kill);
    }
    let report = apply.tick_on(&source).await;
    assert_eq!(report.errors, 1, "{report}");
    assert!(report.problem.as_deref().unwrap().contains("plan failed"));
    assert!(!report.succeeded());
}

#[test]
fn fitness_trusts_no_future_and_no_old_map() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let max = Duration::from_secs(10);
    let at = |s: u64| Some(SystemTime::UNIX_EPOCH + Duration::from_secs(s));
    assert!(fitness(&status(true, at(990)), true, now, max).is_ok());
    assert_eq!(
        fitness(&status(true, at(989)), true, now, max)
            .unwrap_err()
            .0,
        WatchSkip::MapStale
    );
    // A clock stepped back does not make the map older than it says.
    assert!(fitness(&status(true, at(1_005)), true, now, max).is_ok());
    assert_eq!(
        fitness(&status(true, None), true, now, max).unwrap_err().0,
        WatchSkip::MapNotReady
    );
    let (reason, why) = fitness(&status(false, at(999)), true, now, max).unwrap_err();
    assert_eq!(reason, WatchSkip::MapNotReady);
    assert!(why.contains("connection refused"), "{why}");
}

/// The run counts a skip by the executor's typed reason: a group that became a share group is
/// `not-consumer-group`, not `changed-since-plan` (issue 24).
#[test]
fn skips_are_counted_by_the_executors_typed_reason() {
    use crate::apply::{Change, GroupRefusal, GroupSkip as Skip};
    use crate::client::GroupProtocol;
    let share = GroupRefusal::NotConsumerGroup {
        group_type: "share".into(),
    };
    let active = GroupRefusal::Active {
        protocol: GroupProtocol::Classic,
        state: "Stable".into(),
        members: 1,
    };
    assert_eq!(
        skip_reason(&Skip::ChangedSincePlan(Change::Refused(share.clone()))),
        WatchSkip::NotConsumerGroup
    );
    assert_eq!(
        skip_reason(&Skip::Refused(share)),
        WatchSkip::NotConsumerGroup
    );
    assert_eq!(
        skip_reason(&Skip::Refused(active.clone())),
        WatchSkip::Active
    );
    assert_eq!(
        skip_reason(&Skip::ChangedSincePlan(Change::Refused(active))),
        WatchSkip::ChangedSincePlan
    );
    assert_eq!(
        skip_reason(&Skip::ChangedSincePlan(Change::OffsetsMoved(vec![]))),
        WatchSkip::ChangedSincePlan
    );
    assert_eq!(
        skip_reason(&Skip::GainedMembers),
        WatchSkip::ChangedSincePlan
    );
}

/// The loop's futures are `Send` (apply's are): an embedder can spawn them. Checked when this
/// compiles.
#[allow(dead_code)]
fn the_loop_is_send(apply: &ApplyLoop, watcher: &crate::watch::Watcher) {
    fn send<T: Send>(_: T) {}
    send(apply.tick(watcher));
    send(apply.run(watcher, std::future::pending::<()>(), |_| {}));
}
