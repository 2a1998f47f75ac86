//! The batched planner and executor on the fake cluster: what each batched request carries, one
//! group failing inside a batch while the others carry on, a coordinator that moves between
//! waves, the re-check made just before each wave's commits, and a lost commit answer that makes
//! only its own group unknown. No test bounds wall time.

use std::collections::BTreeMap;

use kafka_protocol::messages::ApiKey;

use super::execute::{WAVE, execute_in_waves};
use super::journal::{UndoHeader, UndoJournal};
use super::tests::translation;
use super::*;
use crate::fake::batch_tests::{client_for, deadline};
use crate::fake::coordinator_tests::assert_report_matches_the_cluster;
use crate::fake::{FakeCluster, Fault};
use crate::undo::{UndoGroup, UndoPlan, execute_undo};

const TOPIC: &str = "orders";

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("group-{i:02}")).collect()
}

/// `brokers` brokers, topic [`TOPIC`] with 2 partitions (log 0..100), every group of `groups`
/// coordinated by node 0.
async fn cluster_with(brokers: usize, groups: &[String]) -> (FakeCluster, KafkaClient) {
    let cluster = FakeCluster::start(brokers).await;
    cluster.create_topic(TOPIC, 2, 1, 100);
    for g in groups {
        cluster.move_coordinator(g, 0);
    }
    let client = client_for(&cluster).await;
    (cluster, client)
}

/// Checkpoints for partitions 0 and 1 of every group: offsets 10 + i and 20 + i.
fn checkpoints(groups: &[String]) -> Translation {
    let rows: Vec<(&str, &str, i32, i64)> = groups
        .iter()
        .enumerate()
        .flat_map(|(i, g)| {
            [
                (g.as_str(), TOPIC, 0, 10 + i as i64),
                (g.as_str(), TOPIC, 1, 20 + i as i64),
            ]
        })
        .collect();
    translation(&rows)
}

async fn plan_on(client: &KafkaClient, translation: &Translation) -> ApplyPlan {
    plan(
        client,
        translation,
        &BTreeMap::new(),
        &ApplyOptions::default(),
        std::time::SystemTime::now(),
        &deadline(),
    )
    .await
    .expect("plan")
}

/// `plan` executed in waves of `wave` groups with `options`.
async fn run(
    client: &KafkaClient,
    plan: &ApplyPlan,
    options: &ApplyOptions,
    wave: usize,
) -> ApplyReport {
    execute_in_waves(
        client,
        plan,
        None,
        options,
        &deadline(),
        (wave, WriteAhead::default()),
    )
    .await
}

#[tokio::test]
async fn the_plan_reads_in_batches_and_a_group_failing_inside_a_batch_fails_alone() {
    let groups = names(20);
    let (cluster, client) = cluster_with(1, &groups).await;
    // Inside the one OffsetFetch that carries all 20 groups: one group refused by the
    // authorizer, one partition whose topic the principal may not describe, one partition the
    // coordinator would not give; inside the one DescribeGroups: one group refused.
    cluster.fail_group(ApiKey::OffsetFetch, "group-03", 30, 1);
    cluster.fail_group_partition("group-05", TOPIC, 1, 29, 1);
    cluster.fail_group_partition("group-07", TOPIC, 0, 3, 1);
    cluster.fail_group(ApiKey::DescribeGroups, "group-09", 30, 1);
    let planned = plan_on(&client, &checkpoints(&groups)).await;
    for g in &planned.groups {
        let words = match &g.status {
            GroupStatus::Error { message } => message.to_string(),
            GroupStatus::Ready => {
                assert!(
                    g.partitions
                        .iter()
                        .all(|p| p.verdict == ApplyVerdict::Commit),
                    "{g:?}"
                );
                continue;
            }
            other => panic!("{}: {other:?}", g.group),
        };
        match g.group.as_str() {
            "group-03" => assert!(
                words.contains("lacks DESCRIBE on Group \"group-03\" (OffsetFetch needs it)"),
                "{words}"
            ),
            // Never read as "no committed offset": the group is not written.
            "group-05" => assert!(
                words.contains("TOPIC_AUTHORIZATION_FAILED") && words.contains("\"orders\""),
                "{words}"
            ),
            "group-07" => assert!(
                words.contains("orders-0: UNKNOWN_TOPIC_OR_PARTITION (code 3)"),
                "{words}"
            ),
            "group-09" => assert!(
                words.contains("lacks DESCRIBE on Group \"group-09\" (DescribeGroups needs it)"),
                "{words}"
            ),
            other => panic!("{other}: {words}"),
        }
    }
    let ready = planned
        .groups
        .iter()
        .filter(|g| g.status == GroupStatus::Ready)
        .count();
    assert_eq!(ready, 16);
    // One request per call for all 20 groups, each naming every group's partitions.
    for api in [
        ApiKey::FindCoordinator,
        ApiKey::DescribeGroups,
        ApiKey::OffsetFetch,
    ] {
        let asked = cluster.asked(api);
        assert_eq!(asked.len(), 1, "{api:?}: {asked:?}");
        assert_eq!(asked[0].1, groups, "{api:?}");
    }
    // One ListOffsets for the earliest and one for the latest offsets of the leader.
    assert_eq!(cluster.served(ApiKey::ListOffsets), 2);
    assert_eq!(cluster.served(ApiKey::ListGroups), 1);
}

#[tokio::test]
async fn waves_recheck_just_before_their_commits_and_follow_a_coordinator_that_moved() {
    let groups = names(6);
    let (cluster, client) = cluster_with(3, &groups).await;
    let planned = plan_on(&client, &checkpoints(&groups)).await;
    assert!(!planned.has_refusals(), "{planned:?}");
    // Once the first wave (2 groups) is committed, a group of each later wave moves.
    cluster.move_coordinator_after(ApiKey::OffsetCommit, 2, "group-02", 1);
    cluster.move_coordinator_after(ApiKey::OffsetCommit, 2, "group-05", 2);
    let before = cluster.group_requests().len();
    let report = run(&client, &planned, &ApplyOptions::default(), 2).await;
    for g in &report.groups {
        assert_eq!(g.outcome, GroupOutcome::Applied, "{}: {g:?}", g.group);
    }
    assert_eq!(report.committed(), 12);
    assert_report_matches_the_cluster(&report, &cluster);
    let requests: Vec<(ApiKey, i32, Vec<String>)> =
        cluster.group_requests().into_iter().skip(before).collect();
    // Each wave: its groups re-read together, then committed, then read back; a wave is re-read
    // while the one before it commits, never earlier.
    let position = |api: ApiKey, group: &str, nth: usize| {
        requests
            .iter()
            .enumerate()
            .filter(|(_, (a, _, carried))| *a == api && carried.iter().any(|g| g == group))
            .map(|(i, _)| i)
            .nth(nth)
            .unwrap_or_else(|| panic!("no {api:?} #{nth} for {group}: {requests:?}"))
    };
    let waves: Vec<&[String]> = groups.chunks(2).collect();
    for (w, wave) in waves.iter().enumerate() {
        let rechecked = position(ApiKey::OffsetFetch, &wave[0], 0);
        assert!(
            requests[rechecked].2 == *wave,
            "the wave's re-check is one request: {requests:?}"
        );
        let described = position(ApiKey::DescribeGroups, &wave[0], 0);
        assert_eq!(requests[described].2, *wave, "{requests:?}");
        for g in *wave {
            let commit = position(ApiKey::OffsetCommit, g, 0);
            assert!(rechecked < commit && described < commit, "{requests:?}");
        }
        // Not re-read before the wave two before it was committed.
        if w >= 2 {
            let earlier = waves[w - 2]
                .iter()
                .map(|g| position(ApiKey::OffsetCommit, g, 0))
                .max()
                .unwrap();
            assert!(earlier < rechecked && earlier < described, "{requests:?}");
        }
    }
    // The moved groups were committed on their new coordinators, found again.
    for (group, node) in [("group-02", 1), ("group-05", 2)] {
        let commits: Vec<i32> = requests
            .iter()
            .filter(|(a, _, carried)| *a == ApiKey::OffsetCommit && carried[0] == group)
            .map(|(_, n, _)| *n)
            .collect();
        assert_eq!(commits.last(), Some(&node), "{group}: {requests:?}");
    }
    assert!(
        requests
            .iter()
            .any(|(a, _, carried)| *a == ApiKey::FindCoordinator
                && carried.iter().any(|g| g == "group-02")),
        "{requests:?}"
    );
}

#[tokio::test]
async fn a_group_failing_inside_the_recheck_batch_is_not_written_and_the_others_are() {
    let groups = names(8);
    let (cluster, client) = cluster_with(1, &groups).await;
    let planned = plan_on(&client, &checkpoints(&groups)).await;
    // Between plan and execute: one group gains a member, another's offsets are moved, and the
    // authorizer refuses a third's description; each is in the same batched re-check.
    cluster.add_member("group-01");
    cluster.set_committed("group-04", TOPIC, 0, 3);
    cluster.fail_group(ApiKey::DescribeGroups, "group-06", 30, 1);
    let report = run(&client, &planned, &ApplyOptions::default(), WAVE).await;
    for g in &report.groups {
        let words = match &g.outcome {
            GroupOutcome::Applied => continue,
            GroupOutcome::Skipped { reason } => reason.to_string(),
            GroupOutcome::Error {
                message,
                state_unknown: false,
            } => message.to_string(),
            other => panic!("{}: {other:?}", g.group),
        };
        let expected = match g.group.as_str() {
            "group-01" => "1 member(s)",
            "group-04" => "committed offsets moved (orders-0 none -> 3)",
            "group-06" => "lacks DESCRIBE on Group \"group-06\"",
            other => panic!("{other}: {words}"),
        };
        assert!(words.contains(expected), "{}: {words}", g.group);
    }
    assert_eq!(report.committed(), 5 * 2);
    assert_eq!(cluster.served(ApiKey::OffsetCommit), 5);
    // group-04 holds only what its consumer committed.
    assert_eq!(cluster.committed("group-04").len(), 1);
    let mut report = report;
    report.groups.retain(|g| g.group != "group-04");
    assert_report_matches_the_cluster(&report, &cluster);
}

#[tokio::test]
async fn a_lost_commit_answer_makes_only_its_group_unknown_and_stops_later_waves() {
    let groups = names(8);
    let (cluster, client) = cluster_with(1, &groups).await;
    let planned = plan_on(&client, &checkpoints(&groups)).await;
    // The first commit's answer is cut after the coordinator wrote it; the other commit of the
    // wave is on another lane, in flight at the same time.
    cluster.inject(ApiKey::OffsetCommit, None, 1, Fault::CutAt(7));
    let options = ApplyOptions {
        concurrency: 2,
        ..ApplyOptions::default()
    };
    let report = run(&client, &planned, &options, 2).await;
    let unknown: Vec<&str> = report
        .groups
        .iter()
        .filter(|g| {
            matches!(
                g.outcome,
                GroupOutcome::Error {
                    state_unknown: true,
                    ..
                }
            )
        })
        .map(|g| g.group.as_str())
        .collect();
    assert_eq!(unknown.len(), 1, "{report:?}");
    let lost = &report
        .groups
        .iter()
        .find(|g| g.group == unknown[0])
        .unwrap();
    assert!(
        lost.partitions
            .iter()
            .all(|p| p.state == CommitState::Unknown),
        "{lost:?}"
    );
    // The other group of the first wave was sent on its own lane and answered: applied.
    let first_wave: Vec<&GroupResult> = report.groups[..2].iter().collect();
    assert!(
        first_wave
            .iter()
            .any(|g| g.outcome == GroupOutcome::Applied),
        "{first_wave:?}"
    );
    // No later wave was re-checked or written.
    for g in &report.groups[2..] {
        assert_eq!(
            g.outcome,
            GroupOutcome::Error {
                message: GroupError::Halted,
                state_unknown: false
            },
            "{}",
            g.group
        );
    }
    assert_eq!(cluster.served(ApiKey::OffsetCommit), 2);
    assert_report_matches_the_cluster(&report, &cluster);
    // The unknown group was in fact written (the fake writes before cutting the answer).
    assert_eq!(cluster.committed(unknown[0]).len(), 2);
}

/// A journal in memory; `fail_after` waves recorded, the next record fails.
#[derive(Default)]
struct Remembered {
    header: Option<UndoHeader>,
    groups: Vec<UndoGroup>,
    records: usize,
    fail_after: Option<usize>,
}

impl UndoJournal for Remembered {
    fn begin(&mut self, header: &UndoHeader) -> std::io::Result<()> {
        self.header = Some(header.clone());
        Ok(())
    }
    fn record(&mut self, groups: &[UndoGroup]) -> std::io::Result<()> {
        if self.fail_after == Some(self.records) {
            return Err(std::io::Error::other("disk full"));
        }
        self.records += 1;
        self.groups.extend_from_slice(groups);
        Ok(())
    }
}

impl Remembered {
    fn undo(&self) -> UndoPlan {
        let header = self.header.clone().expect("header");
        UndoPlan {
            schema_version: header.schema_version,
            kind: header.kind,
            cluster_id: Some(header.cluster_id),
            run_id: Some(header.run_id),
            created_at_ms: header.created_at_ms,
            groups: self.groups.clone(),
        }
    }
}

#[tokio::test]
async fn an_undo_reads_and_writes_in_batches_and_restores_every_group() {
    let groups = names(5);
    let (cluster, client) = cluster_with(1, &groups).await;
    for g in &groups {
        cluster.set_committed(g, TOPIC, 0, 5);
        cluster.set_committed(g, TOPIC, 1, 6);
    }
    let planned = plan_on(&client, &checkpoints(&groups)).await;
    let mut journal = Remembered::default();
    let guard = WriteAhead {
        journal: Some(&mut journal),
        stop: None,
    };
    let options = ApplyOptions::default();
    let report = execute_in_waves(
        &client,
        &planned,
        None,
        &options,
        &deadline(),
        (WAVE, guard),
    )
    .await;
    assert_eq!(report.committed(), 10);
    let undo = journal.undo();
    assert_eq!(undo.partitions(), 10);
    // One group moved since the execute: its partition is refused, the others restored.
    cluster.set_committed("group-02", TOPIC, 1, 50);
    let fetches = cluster.asked(ApiKey::OffsetFetch).len();
    let commits = cluster.served(ApiKey::OffsetCommit);
    let undone = execute_undo(&client, &undo, &options, Mode::Execute, &deadline()).await;
    assert_eq!(undone.restored(), 9, "{undone:?}");
    assert!(undone.has_refusals());
    for g in &groups {
        let held = cluster.committed(g);
        assert_eq!(held[&(TOPIC.to_string(), 0)], 5, "{g}");
        let expected = if g == "group-02" { 50 } else { 6 };
        assert_eq!(held[&(TOPIC.to_string(), 1)], expected, "{g}");
    }
    // The re-read and the read-back are one batched OffsetFetch each; one commit per group.
    assert_eq!(cluster.asked(ApiKey::OffsetFetch).len() - fetches, 2);
    assert_eq!(cluster.served(ApiKey::OffsetCommit) - commits, 5);
    // An undo naming a group the run never wrote (an edited file) is refused from the
    // cluster: the offset is the one named, but its metadata carries no marker of the run.
    cluster.set_committed("group-03", TOPIC, 0, 77);
    let mut edited = undo.clone();
    edited.groups.retain(|g| g.group == "group-03");
    edited.groups[0].partitions.truncate(1);
    edited.groups[0].partitions[0].written = 77;
    let refused = execute_undo(&client, &edited, &options, Mode::Execute, &deadline()).await;
    assert_eq!(
        refused.groups[0].partitions[0].state,
        crate::undo::UndoState::NotWrittenByRun,
        "{refused:?}"
    );
    assert_eq!(cluster.committed("group-03")[&(TOPIC.to_string(), 0)], 77);
    // On another cluster, nothing.
    edited.cluster_id = Some("another".into());
    let other = execute_undo(&client, &edited, &options, Mode::Execute, &deadline()).await;
    assert!(
        other.groups[0]
            .skipped
            .as_deref()
            .unwrap_or("")
            .contains("another"),
        "{other:?}"
    );
}

#[tokio::test]
async fn a_journal_that_cannot_be_written_stops_the_run_before_the_next_commit() {
    let groups = names(6);
    let (cluster, client) = cluster_with(1, &groups).await;
    let planned = plan_on(&client, &checkpoints(&groups)).await;
    let mut journal = Remembered {
        fail_after: Some(1),
        ..Remembered::default()
    };
    let guard = WriteAhead {
        journal: Some(&mut journal),
        stop: None,
    };
    let options = ApplyOptions::default();
    let report = execute_in_waves(&client, &planned, None, &options, &deadline(), (2, guard)).await;
    // The first wave of two groups was recorded, then committed; the second's record failed:
    // nothing more was sent, and every later group says why.
    assert_eq!(journal.groups.len(), 2);
    assert_eq!(cluster.served(ApiKey::OffsetCommit), 2);
    assert_eq!(report.committed(), 4);
    for g in &report.groups[2..] {
        let GroupOutcome::Error { message, .. } = &g.outcome else {
            panic!("{g:?}");
        };
        assert!(message.to_string().contains("disk full"), "{message}");
        assert!(cluster.committed(&g.group).is_empty(), "{}", g.group);
    }
    // A stop set before the run: the header, no commit.
    static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);
    let (cluster, client) = cluster_with(1, &groups).await;
    let mut journal = Remembered::default();
    let guard = WriteAhead {
        journal: Some(&mut journal),
        stop: Some(&STOP),
    };
    let report = execute_in_waves(&client, &planned, None, &options, &deadline(), (2, guard)).await;
    assert_eq!(cluster.served(ApiKey::OffsetCommit), 0);
    assert!(journal.groups.is_empty());
    assert!(
        report
            .groups
            .iter()
            .all(|g| matches!(g.outcome, GroupOutcome::Error { .. }))
    );
}

/// Every future of `apply` is `Send`: an embedder can spawn it. Checked when this compiles.
#[allow(dead_code)]
fn every_apply_future_is_send(
    client: &KafkaClient,
    planned: &ApplyPlan,
    translation: &Translation,
    undo: &crate::undo::UndoPlan,
) {
    fn send<T: Send>(_: T) {}
    let d = deadline();
    let o = ApplyOptions::default();
    send(plan(
        client,
        translation,
        &BTreeMap::new(),
        &o,
        std::time::UNIX_EPOCH,
        &d,
    ));
    send(execute(client, planned, &o, &d));
    send(execute_with(client, planned, None, &o, &d));
    send(recheck(client, planned, None, &o, &d));
    send(execute_undo(client, undo, &o, Mode::Execute, &d));
    send(execute_write_ahead(
        client,
        planned,
        None,
        &o,
        &d,
        WriteAhead::default(),
    ));
}
