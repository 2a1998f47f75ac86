//! Group calls against a coordinator that loads, moves, refuses or loses answers: retried within
//! the deadline through the one retry policy, and nothing reported as committed unless the
//! coordinator said so.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use kafka_protocol::messages::ApiKey;

use super::tests::within_a_tick_of;
use super::{FakeCluster, Fault};
use crate::apply::{
    self, ApplyOptions, ApplyPlan, ApplyVerdict, GroupOutcome, GroupPlan, GroupStatus,
    PartitionPlan,
};
use crate::client::{ClientError, Deadline, GroupCoordinator, KafkaClient, OffsetToCommit};
use crate::config::ClientConfig;

const TOPIC: &str = "orders";

async fn client_for(cluster: &FakeCluster) -> KafkaClient {
    let mut config = ClientConfig::plaintext([cluster.address(0)]);
    config.request_timeout = Duration::from_millis(400);
    config.connection_setup_timeout = Duration::from_millis(200);
    KafkaClient::connect(config).await.expect("connect")
}

fn deadline() -> Deadline {
    Deadline::after(Duration::from_secs(10))
}

async fn coordinator(client: &KafkaClient, group: &str) -> GroupCoordinator {
    let mut found = client
        .find_group_coordinators(&[group.to_string()], &deadline())
        .await
        .expect("FindCoordinator");
    found
        .remove(group)
        .expect("an answer")
        .expect("a coordinator")
}

/// A cluster of `brokers` brokers where `node` coordinates group "g", a client, and the
/// coordinator the client found for "g".
async fn group_on(brokers: usize, node: i32) -> (FakeCluster, KafkaClient, GroupCoordinator) {
    let cluster = FakeCluster::start(brokers).await;
    cluster.move_coordinator("g", node);
    let client = client_for(&cluster).await;
    let c = coordinator(&client, "g").await;
    assert_eq!(c.node_id, node);
    (cluster, client, c)
}

fn offsets(partitions: &[(i32, i64)]) -> Vec<OffsetToCommit> {
    partitions
        .iter()
        .map(|&(partition, offset)| OffsetToCommit {
            topic: TOPIC.to_string(),
            partition,
            offset,
            metadata: None,
        })
        .collect()
}

fn written(partitions: &[(i32, i64)]) -> BTreeMap<(String, i32), i64> {
    partitions
        .iter()
        .map(|&(p, o)| ((TOPIC.to_string(), p), o))
        .collect()
}

fn all_ok(partitions: &[i32]) -> BTreeMap<(String, i32), i16> {
    partitions
        .iter()
        .map(|&p| ((TOPIC.to_string(), p), 0))
        .collect()
}

#[tokio::test]
async fn find_coordinator_while_loading_is_asked_again() {
    let cluster = FakeCluster::start(3).await;
    cluster.move_coordinator("g", 2);
    let client = client_for(&cluster).await;
    cluster.inject(ApiKey::FindCoordinator, None, 2, Fault::Error(14));
    let c = coordinator(&client, "g").await;
    assert_eq!(c.node_id, 2);
    assert_eq!(cluster.served(ApiKey::FindCoordinator), 3);
}

#[tokio::test(start_paused = true)]
async fn find_coordinator_unavailable_past_the_deadline_names_the_group() {
    let cluster = FakeCluster::start(1).await;
    let client = client_for(&cluster).await;
    cluster.inject(ApiKey::FindCoordinator, None, 10_000, Fault::Error(15));
    let started = Instant::now();
    let found = client
        .find_group_coordinators(
            &["g".to_string()],
            &Deadline::after(Duration::from_millis(500)),
        )
        .await
        .expect("a per-group answer");
    // On the paused clock: it ends at the deadline, never past it.
    assert!(
        within_a_tick_of(started.elapsed(), Duration::from_millis(500)),
        "{:?}",
        started.elapsed()
    );
    let error = found["g"].as_ref().unwrap_err();
    assert!(matches!(
        *error.source,
        ClientError::DeadlineExceeded { .. }
    ));
    let text = error.to_string();
    assert!(
        text.contains("\"g\"") && text.contains("COORDINATOR_NOT_AVAILABLE"),
        "{text}"
    );
}

#[tokio::test]
async fn group_authorization_failure_is_reported_at_once() {
    let cluster = FakeCluster::start(1).await;
    let client = client_for(&cluster).await;
    cluster.inject(ApiKey::FindCoordinator, None, 1, Fault::Error(30));
    let found = client
        .find_group_coordinators(&["g".to_string(), "h".to_string()], &deadline())
        .await
        .unwrap();
    assert_eq!(found["g"].as_ref().unwrap_err().code(), Some(30));
    assert_eq!(found["h"].as_ref().unwrap_err().code(), Some(30));
    assert_eq!(cluster.served(ApiKey::FindCoordinator), 1);
}

#[tokio::test]
async fn describe_and_fetch_follow_a_coordinator_that_moved() {
    let (cluster, client, old) = group_on(3, 1).await;
    client
        .commit_group_offsets(&old, "g", &offsets(&[(0, 5)]), &deadline())
        .await
        .unwrap();
    cluster.move_coordinator("g", 2);
    let lookups = cluster.served(ApiKey::FindCoordinator);
    let description = client.describe_group(&old, "g", &deadline()).await.unwrap();
    assert_eq!(
        (description.state.as_str(), description.members),
        ("Empty", 0)
    );
    let mut fetched = client
        .fetch_group_offsets(&old, &["g".to_string()], &deadline())
        .await
        .unwrap();
    let fetched = fetched.remove("g").unwrap().unwrap();
    assert_eq!(fetched[&(TOPIC.to_string(), 0)].offset, 5);
    // NOT_COORDINATOR from the old one, each time: a fresh lookup per call.
    assert_eq!(cluster.served(ApiKey::FindCoordinator), lookups + 2);
}

#[tokio::test]
async fn offset_fetch_while_loading_asks_the_same_coordinator_again() {
    let (cluster, client, c) = group_on(2, 0).await;
    let lookups = cluster.served(ApiKey::FindCoordinator);
    cluster.inject(ApiKey::OffsetFetch, None, 2, Fault::Error(14));
    let fetched = client
        .fetch_group_offsets(&c, &["g".to_string(), "h".to_string()], &deadline())
        .await
        .unwrap();
    assert!(fetched["g"].is_ok() && fetched["h"].is_ok(), "{fetched:?}");
    assert_eq!(cluster.served(ApiKey::FindCoordinator), lookups);
    assert_eq!(cluster.pending_faults(), 0);
}

#[tokio::test(start_paused = true)]
async fn describe_while_loading_past_the_deadline_is_an_explicit_error() {
    let (cluster, client, c) = group_on(1, 0).await;
    cluster.inject(ApiKey::DescribeGroups, None, 10_000, Fault::Error(14));
    let started = Instant::now();
    let error = client
        .describe_group(&c, "g", &Deadline::after(Duration::from_millis(500)))
        .await
        .unwrap_err();
    // On the paused clock: it ends at the deadline, never past it.
    assert!(
        within_a_tick_of(started.elapsed(), Duration::from_millis(500)),
        "{:?}",
        started.elapsed()
    );
    let text = error.to_string();
    assert!(
        text.contains("DescribeGroups for group \"g\"")
            && text.contains("COORDINATOR_LOAD_IN_PROGRESS"),
        "{text}"
    );
}

#[tokio::test]
async fn a_commit_refused_while_loading_is_sent_again_and_written_once() {
    let (cluster, client, c) = group_on(2, 0).await;
    cluster.inject(ApiKey::OffsetCommit, None, 2, Fault::Error(14));
    let codes = client
        .commit_group_offsets(&c, "g", &offsets(&[(0, 5), (1, 6)]), &deadline())
        .await
        .unwrap();
    assert_eq!(codes, all_ok(&[0, 1]));
    assert_eq!(cluster.committed("g"), written(&[(0, 5), (1, 6)]));
    assert_eq!(cluster.served(ApiKey::OffsetCommit), 3);
}

#[tokio::test]
async fn a_commit_to_a_coordinator_that_moved_finds_the_new_one() {
    let (cluster, client, old) = group_on(3, 0).await;
    cluster.move_coordinator("g", 2);
    cluster.inject(ApiKey::FindCoordinator, None, 1, Fault::Error(15));
    let codes = client
        .commit_group_offsets(&old, "g", &offsets(&[(0, 5)]), &deadline())
        .await
        .unwrap();
    assert_eq!(codes, all_ok(&[0]));
    assert_eq!(cluster.committed("g"), written(&[(0, 5)]));
    // Refused by the old coordinator (16), then a lookup refused (15), then the new one.
    assert_eq!(cluster.served(ApiKey::OffsetCommit), 2);
}

#[tokio::test]
async fn only_the_partitions_the_coordinator_refused_are_sent_again() {
    let (cluster, client, c) = group_on(1, 0).await;
    cluster.inject(ApiKey::OffsetCommit, None, 1, Fault::PartitionError(1, 14));
    let codes = client
        .commit_group_offsets(&c, "g", &offsets(&[(0, 5), (1, 6)]), &deadline())
        .await
        .unwrap();
    assert_eq!(codes, all_ok(&[0, 1]));
    assert_eq!(cluster.committed("g"), written(&[(0, 5), (1, 6)]));
    assert_eq!(cluster.served(ApiKey::OffsetCommit), 2);

    // A verdict on a partition (not authorized) is final: reported, not sent again.
    cluster.inject(ApiKey::OffsetCommit, None, 1, Fault::PartitionError(1, 29));
    let codes = client
        .commit_group_offsets(&c, "g", &offsets(&[(0, 7), (1, 8)]), &deadline())
        .await
        .unwrap();
    assert_eq!(codes[&(TOPIC.to_string(), 0)], 0);
    assert_eq!(codes[&(TOPIC.to_string(), 1)], 29);
    assert_eq!(cluster.committed("g"), written(&[(0, 7), (1, 6)]));
    assert_eq!(cluster.served(ApiKey::OffsetCommit), 3);
}

#[tokio::test]
async fn a_partition_refused_until_the_deadline_keeps_its_code_the_others_are_committed() {
    let (cluster, client, c) = group_on(1, 0).await;
    cluster.inject(
        ApiKey::OffsetCommit,
        None,
        10_000,
        Fault::PartitionError(1, 14),
    );
    let codes = client
        .commit_group_offsets(
            &c,
            "g",
            &offsets(&[(0, 5), (1, 6)]),
            &Deadline::after(Duration::from_millis(500)),
        )
        .await
        .unwrap();
    assert_eq!(codes[&(TOPIC.to_string(), 0)], 0);
    assert_eq!(codes[&(TOPIC.to_string(), 1)], 14);
    assert_eq!(cluster.committed("g"), written(&[(0, 5)]));
}

#[tokio::test(start_paused = true)]
async fn a_commit_refused_until_the_deadline_wrote_nothing_and_says_so() {
    let (cluster, client, c) = group_on(1, 0).await;
    cluster.inject(ApiKey::OffsetCommit, None, 10_000, Fault::Error(14));
    let started = Instant::now();
    let error = client
        .commit_group_offsets(
            &c,
            "g",
            &offsets(&[(0, 5)]),
            &Deadline::after(Duration::from_millis(500)),
        )
        .await
        .unwrap_err();
    // On the paused clock: it ends at the deadline, never past it.
    assert!(
        within_a_tick_of(started.elapsed(), Duration::from_millis(500)),
        "{:?}",
        started.elapsed()
    );
    assert!(!error.is_outcome_unknown(), "{error}");
    assert!(
        error.to_string().contains("COORDINATOR_LOAD_IN_PROGRESS"),
        "{error}"
    );
    assert!(cluster.committed("g").is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_commit_whose_answer_is_lost_is_unknown_and_never_sent_again() {
    for fault in [Fault::CutAt(6), Fault::Kill, Fault::Drop] {
        let (cluster, client, c) = group_on(1, 0).await;
        cluster.inject(ApiKey::OffsetCommit, None, 1, fault);
        let started = Instant::now();
        let error = client
            .commit_group_offsets(&c, "g", &offsets(&[(0, 5)]), &deadline())
            .await
            .unwrap_err();
        assert!(error.is_outcome_unknown(), "{fault:?}: {error}");
        assert!(
            error.to_string().contains("answer was lost"),
            "{fault:?}: {error}"
        );
        // The fake wrote before it lost the answer: "unknown" is the truth, never "failed".
        assert_eq!(cluster.committed("g"), written(&[(0, 5)]), "{fault:?}");
        assert_eq!(cluster.served(ApiKey::OffsetCommit), 1, "{fault:?}");
        // A dropped answer ends at the request timeout (400 ms), not the deadline (10 s); a
        // cut or killed connection at once.
        let elapsed = started.elapsed();
        match fault {
            Fault::Drop => assert!(
                within_a_tick_of(elapsed, Duration::from_millis(400)),
                "{elapsed:?}"
            ),
            _ => assert!(
                elapsed < Duration::from_millis(400),
                "{fault:?}: {elapsed:?}"
            ),
        }
    }
}

#[tokio::test]
async fn a_commit_to_a_group_with_members_is_refused_and_writes_nothing() {
    let (cluster, client, c) = group_on(1, 0).await;
    cluster.add_member("g");
    let codes = client
        .commit_group_offsets(&c, "g", &offsets(&[(0, 5)]), &deadline())
        .await
        .unwrap();
    assert_eq!(codes[&(TOPIC.to_string(), 0)], 25);
    assert!(cluster.committed("g").is_empty());
    assert_eq!(cluster.served(ApiKey::OffsetCommit), 1);
}

/// A plan for `groups` on [`TOPIC`], which it creates on `cluster` (2 partitions, log 0..1000):
/// an execute re-reads the topic before committing.
fn plan_for(cluster: &FakeCluster, groups: &[String]) -> ApplyPlan {
    cluster.create_topic(TOPIC, 2, 10, 100);
    let partition = |partition: i32, offset: i64| PartitionPlan {
        topic: TOPIC.to_string(),
        partition,
        translated: offset,
        offset,
        current: None,
        log_start: Some(0),
        log_end: Some(1000),
        verdict: ApplyVerdict::Commit,
        clamped_from: None,
        checkpoint_age_ms: 1,
        metadata: String::new(),
        topic_id: None,
        upstream_offset: None,
        difference: None,
    };
    ApplyPlan {
        schema_version: apply::PLAN_SCHEMA_VERSION,
        planned_at_ms: 0,
        heartbeat_age_ms: BTreeMap::new(),
        groups: groups
            .iter()
            .enumerate()
            .map(|(i, g)| GroupPlan {
                group: g.clone(),
                group_type: crate::client::GroupType::Consumer,
                protocol: None,
                state: Some("Dead".into()),
                members: 0,
                status: GroupStatus::Ready,
                oldest_checkpoint_age_ms: 1,
                partitions: vec![partition(0, 10 + i as i64), partition(1, 20 + i as i64)],
                may_delete_offsets: None,
            })
            .collect(),
        // The plan, made on the fake, names its cluster id.
        cluster_id: Some(crate::fake::FAKE_CLUSTER_ID.into()),
        sources: vec!["primary".into()],
        rules: Some(apply::VerdictRules::default()),
        input: Some(apply::PlanInput::Checkpoints),
    }
}

/// Every group the report calls applied holds exactly its planned offsets on the coordinator,
/// every other group holds nothing: the report is an exact account.
pub(crate) fn assert_report_matches_the_cluster(
    report: &apply::ApplyReport,
    cluster: &FakeCluster,
) {
    for g in &report.groups {
        let on_cluster = cluster.committed(&g.group);
        match &g.outcome {
            GroupOutcome::Applied => {
                let reported: BTreeMap<(String, i32), i64> = g
                    .partitions
                    .iter()
                    .map(|p| {
                        assert_eq!(p.read_back, Some(p.offset), "{}", g.group);
                        ((p.topic.clone(), p.partition), p.offset)
                    })
                    .collect();
                assert_eq!(on_cluster, reported, "{}", g.group);
            }
            GroupOutcome::Error {
                state_unknown: true,
                ..
            } => {}
            other => assert!(
                on_cluster.is_empty(),
                "{}: {other:?} {on_cluster:?}",
                g.group
            ),
        }
    }
}

#[tokio::test]
async fn apply_across_many_groups_survives_moves_and_loads_and_accounts_exactly() {
    let cluster = FakeCluster::start(3).await;
    let groups: Vec<String> = (0..30).map(|i| format!("group-{i:02}")).collect();
    for (i, g) in groups.iter().enumerate() {
        cluster.move_coordinator(g, i as i32 % 3);
    }
    let client = client_for(&cluster).await;
    let plan = plan_for(&cluster, &groups);
    // Between plan and execute: a third of the coordinators move, one group gains a member,
    // and every coordinator loads for a while.
    for (i, g) in groups.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
        cluster.move_coordinator(g, (i as i32 + 1) % 3);
    }
    cluster.add_member("group-07");
    cluster.inject(ApiKey::FindCoordinator, None, 3, Fault::Error(14));
    cluster.inject(ApiKey::OffsetFetch, None, 5, Fault::Error(14));
    cluster.inject(ApiKey::DescribeGroups, None, 5, Fault::Error(15));
    cluster.inject(ApiKey::OffsetCommit, None, 10, Fault::Error(14));
    let options = ApplyOptions::default();
    let report = apply::execute(
        &client,
        &plan,
        &options,
        &crate::client::Deadline::after(Duration::from_secs(20)),
    )
    .await;
    for g in &report.groups {
        let expected_skip = g.group == "group-07";
        match &g.outcome {
            GroupOutcome::Skipped { reason } if expected_skip => {
                assert!(reason.to_string().contains("member"), "{reason}");
            }
            GroupOutcome::Applied if !expected_skip => {}
            other => panic!("{}: {other:?}", g.group),
        }
    }
    assert_eq!(report.committed(), 29 * 2);
    assert_eq!(cluster.pending_faults(), 0);
    assert_report_matches_the_cluster(&report, &cluster);
}

#[tokio::test]
async fn apply_with_a_lost_commit_answer_names_the_unknown_group_and_writes_no_further() {
    let cluster = FakeCluster::start(2).await;
    let groups: Vec<String> = (0..6).map(|i| format!("group-{i}")).collect();
    let client = client_for(&cluster).await;
    let plan = plan_for(&cluster, &groups);
    let options = ApplyOptions {
        concurrency: 1,
        ..ApplyOptions::default()
    };
    // The third commit's answer is cut mid-frame, after the coordinator wrote it.
    cluster.inject(ApiKey::OffsetCommit, None, 2, Fault::Delay(Duration::ZERO));
    cluster.inject(ApiKey::OffsetCommit, None, 1, Fault::CutAt(7));
    let report = apply::execute(
        &client,
        &plan,
        &options,
        &crate::client::Deadline::after(std::time::Duration::from_secs(60)),
    )
    .await;
    let outcomes: Vec<&GroupOutcome> = report.groups.iter().map(|g| &g.outcome).collect();
    assert_eq!(outcomes[0], &GroupOutcome::Applied);
    assert_eq!(outcomes[1], &GroupOutcome::Applied);
    assert!(
        matches!(outcomes[2], GroupOutcome::Error { state_unknown: true, message } if message.to_string().contains("answer was lost")),
        "{outcomes:?}"
    );
    for later in &outcomes[3..] {
        assert!(
            matches!(
                later,
                GroupOutcome::Error {
                    state_unknown: false,
                    ..
                }
            ),
            "{outcomes:?}"
        );
    }
    assert_report_matches_the_cluster(&report, &cluster);
    // The unknown group was in fact written (the fake wrote before cutting the answer).
    assert_eq!(cluster.committed("group-2").len(), 2);
    assert_eq!(report.committed(), 4);
}

#[tokio::test]
async fn apply_while_list_groups_answers_loading_asks_again_and_applies() {
    // Right after `__consumer_offsets` is created, a coordinator answers ListGroups with
    // COORDINATOR_LOAD_IN_PROGRESS for a moment: apply must wait for it, not fail every group.
    let cluster = FakeCluster::start(1).await;
    let groups: Vec<String> = (0..3).map(|i| format!("group-{i}")).collect();
    let client = client_for(&cluster).await;
    let plan = plan_for(&cluster, &groups);
    cluster.inject(ApiKey::ListGroups, None, 2, Fault::Error(14));
    let report = apply::execute(
        &client,
        &plan,
        &ApplyOptions::default(),
        &crate::client::Deadline::after(std::time::Duration::from_secs(60)),
    )
    .await;
    for g in &report.groups {
        assert_eq!(g.outcome, GroupOutcome::Applied, "{}", g.group);
    }
    assert_eq!(cluster.served(ApiKey::ListGroups), 3);
    assert_eq!(cluster.pending_faults(), 0);
    assert_report_matches_the_cluster(&report, &cluster);
}

#[tokio::test]
async fn list_groups_loading_past_the_deadline_writes_nothing() {
    let cluster = FakeCluster::start(1).await;
    let groups: Vec<String> = (0..2).map(|i| format!("group-{i}")).collect();
    let client = client_for(&cluster).await;
    let plan = plan_for(&cluster, &groups);
    cluster.inject(ApiKey::ListGroups, None, 1000, Fault::Error(14));
    let options = ApplyOptions::default();
    let report = apply::execute(
        &client,
        &plan,
        &options,
        &crate::client::Deadline::after(Duration::from_millis(500)),
    )
    .await;
    for g in &report.groups {
        assert!(
            matches!(&g.outcome, GroupOutcome::Error { state_unknown: false, message } if message.to_string().contains("COORDINATOR_LOAD_IN_PROGRESS")),
            "{}: {:?}",
            g.group,
            g.outcome
        );
    }
    assert_eq!(cluster.served(ApiKey::OffsetCommit), 0);
    assert_report_matches_the_cluster(&report, &cluster);
}
