//! Hostile coordinator answers from a fake broker: per-partition errors are reported one by
//! one, nothing panics, and once a commit's answer is lost no further commit is sent.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponseGroup;
use kafka_protocol::messages::{
    ApiKey, BrokerId, DescribeGroupsResponse, FindCoordinatorRequest, FindCoordinatorResponse,
    GroupId, ListGroupsRequest, ListGroupsResponse, ListOffsetsRequest, ListOffsetsResponse,
    MetadataRequest, MetadataResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetFetchRequest, OffsetFetchResponse, describe_groups_response::DescribedGroup,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use tokio::io::AsyncWriteExt;

use super::*;
use crate::config::ClientConfig;
use crate::wire::testing::{FakeBroker, answer_api_versions, read_request, response_frame};

const RANGES: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Metadata, 0, 12),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::FindCoordinator, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::OffsetFetch, 0, 9),
    (ApiKey::OffsetCommit, 0, 9),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::ListOffsets, 1, 7),
];

/// The cluster id the fake reports.
const CLUSTER: &str = "fake-cluster";

/// What the fake coordinator does with an OffsetCommit for a group.
#[derive(Clone, Copy)]
enum OnCommit {
    /// Partition 0 committed, partition 1 TOPIC_AUTHORIZATION_FAILED.
    PartitionErrors,
    /// The connection closes without an answer.
    Vanish,
    /// Partition 1 is left out of the answer.
    LeaveOut,
    /// Partition 0 answers REQUEST_TIMED_OUT, partition 1 is committed.
    TimedOut,
    /// Never answers: the client's request timeout passes.
    Stall,
    /// Every partition GROUP_AUTHORIZATION_FAILED (the principal lacks READ on the group).
    GroupDenied,
    /// An answer cut short (an undecodable body).
    Garbage,
}

struct Fake {
    address: Mutex<String>,
    commits: AtomicUsize,
    on_commit: OnCommit,
    /// (group, type) that ListGroups lists, filtered by the request's types.
    listed: Vec<(&'static str, &'static str)>,
    /// The types filter of every ListGroups request.
    types_asked: Mutex<Vec<Vec<String>>>,
}

async fn serve(fake: Arc<Fake>, mut stream: tokio::net::TcpStream) {
    answer_api_versions(&mut stream, RANGES).await;
    while let Some((header, mut body)) = read_request(&mut stream).await {
        let (id, v) = (header.correlation_id, header.request_api_version);
        let frame = match ApiKey::try_from(header.request_api_key).unwrap() {
            // One broker (this one), the cluster id, and topic "orders" with partitions 0 and 1.
            ApiKey::Metadata => {
                let request = MetadataRequest::decode(&mut body, v).unwrap();
                let address = fake.address.lock().unwrap().clone();
                let port: i32 = address.rsplit(':').next().unwrap().parse().unwrap();
                let topics = request
                    .topics
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|t| t.name)
                    .map(|name| {
                        let topic = MetadataResponseTopic::default().with_name(Some(name.clone()));
                        if name.0.as_str() != "orders" {
                            return topic.with_error_code(3);
                        }
                        topic.with_partitions(
                            (0..2)
                                .map(|p| {
                                    MetadataResponsePartition::default()
                                        .with_partition_index(p)
                                        .with_leader_id(BrokerId(1))
                                })
                                .collect(),
                        )
                    })
                    .collect();
                let response = MetadataResponse::default()
                    .with_cluster_id(Some(StrBytes::from_static_str(CLUSTER)))
                    .with_brokers(vec![
                        MetadataResponseBroker::default()
                            .with_node_id(BrokerId(1))
                            .with_host(StrBytes::from_static_str("127.0.0.1"))
                            .with_port(port),
                    ])
                    .with_topics(topics);
                response_frame(id, &response, v)
            }
            // Every partition's log is 0..100.
            ApiKey::ListOffsets => {
                let request = ListOffsetsRequest::decode(&mut body, v).unwrap();
                let topics = request
                    .topics
                    .into_iter()
                    .map(|t| {
                        ListOffsetsTopicResponse::default()
                            .with_name(t.name)
                            .with_partitions(
                                t.partitions
                                    .iter()
                                    .map(|p| {
                                        ListOffsetsPartitionResponse::default()
                                            .with_partition_index(p.partition_index)
                                            .with_offset(if p.timestamp == -2 { 0 } else { 100 })
                                    })
                                    .collect(),
                            )
                    })
                    .collect();
                response_frame(id, &ListOffsetsResponse::default().with_topics(topics), v)
            }
            ApiKey::FindCoordinator => {
                let request = FindCoordinatorRequest::decode(&mut body, v).unwrap();
                let address = fake.address.lock().unwrap().clone();
                let port: i32 = address.rsplit(':').next().unwrap().parse().unwrap();
                let coordinator = |key| {
                    Coordinator::default()
                        .with_key(key)
                        .with_node_id(BrokerId(1))
                        .with_host(StrBytes::from_static_str("127.0.0.1"))
                        .with_port(port)
                };
                let response = FindCoordinatorResponse::default().with_coordinators(
                    request
                        .coordinator_keys
                        .into_iter()
                        .map(coordinator)
                        .collect(),
                );
                response_frame(id, &response, v)
            }
            // Every group of the request is Empty.
            ApiKey::DescribeGroups => {
                let groups = kafka_protocol::messages::DescribeGroupsRequest::decode(&mut body, v)
                    .unwrap()
                    .groups
                    .into_iter()
                    .map(|group| {
                        DescribedGroup::default()
                            .with_group_id(group)
                            .with_group_state(StrBytes::from_static_str("Empty"))
                    })
                    .collect();
                let response = DescribeGroupsResponse::default().with_groups(groups);
                response_frame(id, &response, v)
            }
            ApiKey::OffsetFetch => {
                let request = OffsetFetchRequest::decode(&mut body, v).unwrap();
                let groups = request
                    .groups
                    .into_iter()
                    .map(|g| OffsetFetchResponseGroup::default().with_group_id(g.group_id))
                    .collect();
                response_frame(id, &OffsetFetchResponse::default().with_groups(groups), v)
            }
            ApiKey::OffsetCommit => {
                fake.commits.fetch_add(1, Ordering::SeqCst);
                let request = OffsetCommitRequest::decode(&mut body, v).unwrap();
                let code_for = |partition: i32| match (fake.on_commit, partition) {
                    (OnCommit::PartitionErrors, 1) => Some(29),
                    (OnCommit::LeaveOut, 1) => None,
                    (OnCommit::TimedOut, 0) => Some(7),
                    (OnCommit::GroupDenied, _) => Some(30),
                    _ => Some(0),
                };
                match fake.on_commit {
                    OnCommit::Vanish => return,
                    OnCommit::Stall => {
                        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
                        return;
                    }
                    OnCommit::Garbage => {
                        // A response header and two bytes of a body: the topic array is cut.
                        let mut frame = Vec::new();
                        frame.extend_from_slice(&6u32.to_be_bytes());
                        frame.extend_from_slice(&id.to_be_bytes());
                        frame.extend_from_slice(&[0, 0]);
                        frame
                    }
                    _ => {
                        let topics = request
                            .topics
                            .into_iter()
                            .map(|t| {
                                let partitions = t
                                    .partitions
                                    .iter()
                                    .filter_map(|p| {
                                        let code = code_for(p.partition_index)?;
                                        Some(
                                            OffsetCommitResponsePartition::default()
                                                .with_partition_index(p.partition_index)
                                                .with_error_code(code),
                                        )
                                    })
                                    .collect();
                                OffsetCommitResponseTopic::default()
                                    .with_name(t.name)
                                    .with_partitions(partitions)
                            })
                            .collect();
                        response_frame(id, &OffsetCommitResponse::default().with_topics(topics), v)
                    }
                }
            }
            ApiKey::ListGroups => {
                let request = ListGroupsRequest::decode(&mut body, v).unwrap();
                let types: Vec<String> =
                    request.types_filter.iter().map(|t| t.to_string()).collect();
                let groups = fake
                    .listed
                    .iter()
                    .filter(|(_, t)| types.is_empty() || types.iter().any(|x| x == t))
                    .map(|&(g, t)| {
                        ListedGroup::default()
                            .with_group_id(GroupId(StrBytes::from_static_str(g)))
                            .with_protocol_type(StrBytes::from_static_str(t))
                            .with_group_state(StrBytes::from_static_str("Empty"))
                            .with_group_type(StrBytes::from_static_str(t))
                    })
                    .collect();
                fake.types_asked.lock().unwrap().push(types);
                response_frame(id, &ListGroupsResponse::default().with_groups(groups), v)
            }
            other => panic!("unexpected request {other:?}"),
        };
        if stream.write_all(&frame).await.is_err() {
            return;
        }
    }
}

async fn fake(on_commit: OnCommit) -> (FakeBroker, Arc<Fake>, KafkaClient) {
    fake_listing(on_commit, vec![]).await
}

async fn fake_listing(
    on_commit: OnCommit,
    listed: Vec<(&'static str, &'static str)>,
) -> (FakeBroker, Arc<Fake>, KafkaClient) {
    let fake = Arc::new(Fake {
        address: Mutex::new(String::new()),
        commits: AtomicUsize::new(0),
        on_commit,
        listed,
        types_asked: Mutex::new(Vec::new()),
    });
    let shared = fake.clone();
    let broker = FakeBroker::start(move |stream| serve(shared.clone(), stream)).await;
    *fake.address.lock().unwrap() = broker.address.clone();
    let mut config = ClientConfig::plaintext([broker.address.clone()]);
    config.request_timeout = std::time::Duration::from_millis(500);
    let client = KafkaClient::connect(config).await.unwrap();
    (broker, fake, client)
}

fn partition(topic: &str, partition: i32, offset: i64) -> PartitionPlan {
    PartitionPlan {
        topic: topic.to_string(),
        partition,
        translated: offset,
        offset,
        current: None,
        log_start: Some(0),
        log_end: Some(100),
        verdict: ApplyVerdict::Commit,
        clamped_from: None,
        checkpoint_age_ms: 1,
        metadata: String::new(),
        topic_id: None,
        upstream_offset: Some(offset + 1000),
        difference: None,
    }
}

fn ready_plan(groups: &[&str]) -> ApplyPlan {
    ApplyPlan {
        schema_version: PLAN_SCHEMA_VERSION,
        planned_at_ms: 0,
        heartbeat_age_ms: BTreeMap::new(),
        groups: groups
            .iter()
            .map(|g| GroupPlan {
                group: g.to_string(),
                group_type: crate::client::GroupType::Consumer,
                protocol: Some(GroupProtocol::Absent),
                state: Some("Dead".into()),
                members: 0,
                status: GroupStatus::Ready,
                oldest_checkpoint_age_ms: 1,
                partitions: vec![partition("orders", 0, 10), partition("orders", 1, 20)],
                may_delete_offsets: None,
            })
            .collect(),
        cluster_id: Some(CLUSTER.to_string()),
        sources: vec!["primary".to_string()],
        rules: Some(VerdictRules::default()),
        input: Some(PlanInput::Checkpoints),
    }
}

#[tokio::test]
async fn partition_errors_are_reported_one_by_one() {
    let (_broker, fake, client) = fake(OnCommit::PartitionErrors).await;
    let report = execute(
        &client,
        &ready_plan(&["g"]),
        &ApplyOptions::default(),
        &crate::client::Deadline::after(std::time::Duration::from_secs(60)),
    )
    .await;
    let group = &report.groups[0];
    assert_eq!(group.outcome, GroupOutcome::Partial, "{report:?}");
    // The summary counts the rows: partition 0 acknowledged but not read back (the fake's
    // OffsetFetch answers nothing), partition 1 refused by the coordinator.
    let summary = super::Summary::of_execute(&ready_plan(&["g"]), &report);
    assert_eq!(
        (
            summary.to_write,
            summary.committed,
            summary.unverified,
            summary.failed
        ),
        (2, 0, 1, 1),
        "{summary:?}"
    );
    assert_eq!(summary.result(), super::RunResult::Failed);
    assert!(
        summary
            .to_string()
            .contains("1 committed (the coordinator acknowledged it) but not read back")
    );
    assert_eq!(group.partitions[0].error, None);
    assert_eq!(group.partitions[0].state, CommitState::Committed);
    assert_eq!(group.partitions[1].state, CommitState::Failed);
    let error = group.partitions[1].error.as_deref().unwrap();
    assert!(
        error.contains("TOPIC_AUTHORIZATION_FAILED")
            && error.contains("lacks READ on Topic \"orders\""),
        "{error}"
    );
    assert!(report.has_errors());
    assert_eq!(fake.commits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn nothing_is_written_after_a_lost_commit_answer() {
    let (_broker, fake, client) = fake(OnCommit::Vanish).await;
    let options = ApplyOptions {
        concurrency: 1,
        ..ApplyOptions::default()
    };
    let report = execute(
        &client,
        &ready_plan(&["a", "b", "c"]),
        &options,
        &crate::client::Deadline::after(std::time::Duration::from_secs(60)),
    )
    .await;
    match &report.groups[0].outcome {
        GroupOutcome::Error { state_unknown, .. } => assert!(state_unknown, "{report:?}"),
        other => panic!("{other:?}"),
    }
    for later in &report.groups[1..] {
        match &later.outcome {
            GroupOutcome::Error {
                message,
                state_unknown,
            } => {
                assert!(
                    !state_unknown && message.to_string().contains("unknown"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        fake.commits.load(Ordering::SeqCst),
        1,
        "a commit was sent after the lost one"
    );
}

#[test]
fn a_plan_of_another_schema_is_refused() {
    let mut plan = ready_plan(&["g"]);
    plan.check_schema().unwrap();
    plan.schema_version = 2;
    assert!(
        plan.check_schema()
            .unwrap_err()
            .to_string()
            .contains("version 2")
    );
}

/// Runs `plan` one group at a time against a fake that answers commits with `on_commit`;
/// returns the report and how many commits the fake received.
async fn run_one_at_a_time(on_commit: OnCommit, groups: &[&str]) -> (ApplyReport, usize) {
    let (_broker, fake, client) = fake(on_commit).await;
    let options = ApplyOptions {
        concurrency: 1,
        ..ApplyOptions::default()
    };
    let report = execute(
        &client,
        &ready_plan(groups),
        &options,
        &crate::client::Deadline::after(std::time::Duration::from_secs(60)),
    )
    .await;
    let commits = fake.commits.load(Ordering::SeqCst);
    (report, commits)
}

/// The first group's outcome is unknown, and no later group was sent a commit.
fn assert_unknown_and_stopped(report: &ApplyReport, commits: usize) {
    match &report.groups[0].outcome {
        GroupOutcome::Error { state_unknown, .. } => assert!(state_unknown, "{report:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(commits, 1, "a commit was sent after an unknown outcome");
    for later in &report.groups[1..] {
        assert!(later.partitions.is_empty(), "{later:?}");
        assert!(
            matches!(&later.outcome, GroupOutcome::Error { message, state_unknown: false } if message.to_string().contains("unknown")),
            "{later:?}"
        );
    }
    // The fake reads nothing back, so nothing counts as committed and verified.
    assert_eq!(report.committed(), 0);
}

#[tokio::test]
async fn a_partition_left_out_of_the_answer_is_unknown_never_committed() {
    let (report, commits) = run_one_at_a_time(OnCommit::LeaveOut, &["a", "b"]).await;
    let first = &report.groups[0];
    assert_eq!(first.partitions[0].state, CommitState::Committed);
    assert_eq!(first.partitions[1].state, CommitState::Unknown, "{first:?}");
    assert!(
        first.partitions[1]
            .error
            .as_deref()
            .unwrap()
            .contains("left out"),
        "{first:?}"
    );
    assert_unknown_and_stopped(&report, commits);
}

#[tokio::test]
async fn a_partition_timed_out_on_the_coordinator_is_unknown() {
    let (report, commits) = run_one_at_a_time(OnCommit::TimedOut, &["a", "b"]).await;
    let first = &report.groups[0];
    assert_eq!(first.partitions[0].state, CommitState::Unknown, "{first:?}");
    assert!(
        first.partitions[0]
            .error
            .as_deref()
            .unwrap()
            .contains("REQUEST_TIMED_OUT"),
        "{first:?}"
    );
    assert_eq!(first.partitions[1].state, CommitState::Committed);
    assert_unknown_and_stopped(&report, commits);
}

#[tokio::test]
async fn a_commit_without_answer_in_time_leaves_every_partition_unknown() {
    let (report, commits) = run_one_at_a_time(OnCommit::Stall, &["a", "b"]).await;
    let first = &report.groups[0];
    assert_eq!(first.partitions.len(), 2, "{first:?}");
    assert!(
        first
            .partitions
            .iter()
            .all(|p| p.state == CommitState::Unknown && p.read_back.is_none()),
        "{first:?}"
    );
    assert_eq!(report.committed(), 0);
    assert_unknown_and_stopped(&report, commits);
}

#[tokio::test]
async fn an_undecodable_commit_answer_is_unknown_and_does_not_panic() {
    let (report, commits) = run_one_at_a_time(OnCommit::Garbage, &["a", "b"]).await;
    assert!(
        report.groups[0]
            .partitions
            .iter()
            .all(|p| p.state == CommitState::Unknown),
        "{report:?}"
    );
    assert_unknown_and_stopped(&report, commits);
}

#[tokio::test]
async fn a_group_refused_by_the_authorizer_names_the_missing_permission_and_others_carry_on() {
    let (report, commits) = run_one_at_a_time(OnCommit::GroupDenied, &["a", "b"]).await;
    // Not an unknown outcome: the coordinator said no, so the next group is still tried.
    assert_eq!(commits, 2);
    for g in &report.groups {
        match &g.outcome {
            GroupOutcome::Error {
                message,
                state_unknown: false,
            } => assert!(
                message.to_string().contains("GROUP_AUTHORIZATION_FAILED")
                    && message
                        .to_string()
                        .contains(&format!("lacks READ on Group {:?}", g.group)),
                "{message}"
            ),
            other => panic!("{other:?}"),
        }
        assert!(g.partitions.iter().all(|p| p.state == CommitState::Failed));
    }
}

/// Checkpoints of (group, topic, partition, offset), stamped now.
pub(super) fn translation(rows: &[(&str, &str, i32, i64)]) -> Translation {
    use crate::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
    use crate::records::builder::BatchBuilder;
    use crate::select::GroupSelector;
    use crate::translate::BatchTranslator;
    let encoded: Vec<(Vec<u8>, Vec<u8>)> = rows
        .iter()
        .map(|&(group, topic, partition, offset)| {
            let key = CheckpointKey {
                group: group.as_bytes(),
                topic: topic.as_bytes(),
                partition,
            };
            let value = CheckpointValue {
                version: 0,
                upstream_offset: offset,
                downstream_offset: offset,
                metadata: b"",
            };
            (
                checkpoint::encode_key(&key).unwrap(),
                checkpoint::encode_value(&value).unwrap(),
            )
        })
        .collect();
    let mut builder = BatchBuilder::new(0).log_append_time(1);
    for (k, v) in &encoded {
        builder = builder.record(Some(k), Some(v));
    }
    let selector = GroupSelector::all();
    let mut translator = BatchTranslator::new(&selector);
    translator.add_batches(0, &builder.build()).unwrap();
    translator.finish("primary")
}

#[tokio::test]
async fn share_and_streams_groups_are_refused_with_their_kind() {
    let listed = vec![("word-count", "streams"), ("shared-work", "share")];
    let (_broker, fake, client) = fake_listing(OnCommit::PartitionErrors, listed).await;
    let translation = translation(&[
        ("word-count", "orders", 0, 5),
        ("shared-work", "orders", 0, 5),
        ("orders-app", "orders", 0, 5),
    ]);
    let deadline = Deadline::after(std::time::Duration::from_secs(10));
    let planned = plan(
        &client,
        &translation,
        &BTreeMap::new(),
        &ApplyOptions::default(),
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(2),
        &deadline,
    )
    .await
    .unwrap();
    let by_group: BTreeMap<&str, &GroupPlan> = planned
        .groups
        .iter()
        .map(|g| (g.group.as_str(), g))
        .collect();
    for (group, kind, tool) in [
        ("word-count", "streams", "streams reset tool"),
        ("shared-work", "share", "share-partition state"),
    ] {
        let g = by_group[group];
        match &g.status {
            GroupStatus::Refused { reason } => assert!(
                reason.to_string().contains(&format!("{kind} group"))
                    && reason.to_string().contains(tool),
                "{reason}"
            ),
            other => panic!("{group}: {other:?}"),
        }
        assert_eq!(g.state.as_deref(), Some(kind));
    }
    // A consumer group is not refused for its kind.
    assert_eq!(by_group["orders-app"].status, GroupStatus::Ready);
    // One ListGroups for the one coordinator, filtered to the two kinds.
    assert_eq!(
        *fake.types_asked.lock().unwrap(),
        vec![vec!["share".to_string(), "streams".to_string()]]
    );
    // Only the consumer group is written: one commit.
    let report = execute(
        &client,
        &planned,
        &ApplyOptions::default(),
        &crate::client::Deadline::after(std::time::Duration::from_secs(60)),
    )
    .await;
    assert_eq!(fake.commits.load(Ordering::SeqCst), 1, "{report:?}");
    for g in &report.groups {
        assert_eq!(
            g.partitions.is_empty(),
            g.group != "orders-app",
            "{report:?}"
        );
    }
}

/// Groups that are neither consumer nor Streams groups on the source (what
/// `--from-source-offsets` found) are refused before the target is asked, even where the target
/// has never seen them (an OffsetCommit would make a classic group of them); the consumer group
/// is written, and so is the Streams group (a fresh id: the empty classic group the commit
/// creates is converted by the Streams application on its first join).
#[tokio::test]
async fn groups_of_another_type_on_the_source_are_refused_on_a_fresh_target() {
    use crate::client::GroupType;
    let (_broker, fake, client) = fake_listing(OnCommit::PartitionErrors, Vec::new()).await;
    let types: BTreeMap<String, GroupType> = [
        ("word-count", GroupType::Streams),
        ("shared-work", GroupType::Share),
        ("connect-workers", GroupType::Other("connect".into())),
    ]
    .into_iter()
    .map(|(g, t)| (g.to_string(), t))
    .collect();
    let translation = translation(&[
        ("word-count", "orders", 0, 5),
        ("shared-work", "orders", 0, 5),
        ("shared-work", "orders", 1, 7),
        ("connect-workers", "orders", 0, 5),
        ("orders-app", "orders", 0, 5),
    ])
    .with_group_types(&types);
    let deadline = Deadline::after(std::time::Duration::from_secs(10));
    let planned = plan(
        &client,
        &translation,
        &BTreeMap::new(),
        &ApplyOptions::default(),
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(2),
        &deadline,
    )
    .await
    .unwrap();
    let by_group: BTreeMap<&str, &GroupPlan> = planned
        .groups
        .iter()
        .map(|g| (g.group.as_str(), g))
        .collect();
    assert_eq!(by_group["word-count"].status, GroupStatus::Ready);
    assert_eq!(by_group["word-count"].group_type, GroupType::Streams);
    assert_eq!(by_group["orders-app"].group_type, GroupType::Consumer);
    for (group, words) in [
        ("shared-work", "a share group (KIP-932)"),
        (
            "connect-workers",
            "a group of type connect, not a consumer group",
        ),
    ] {
        let g = by_group[group];
        match &g.status {
            GroupStatus::Refused {
                reason: reason @ GroupRefusal::SourceNotConsumerGroup { .. },
            } => {
                let text = reason.to_string();
                assert!(
                    text.starts_with("source-not-consumer-group: on the source this is ")
                        && text.contains(words),
                    "{text}"
                );
            }
            other => panic!("{group}: {other:?}"),
        }
        assert!(!g.partitions.is_empty());
        for p in &g.partitions {
            assert_eq!(p.verdict, ApplyVerdict::SourceNotConsumerGroup, "{group}");
        }
        // The target was not read for it.
        assert_eq!((g.protocol, g.state.as_deref()), (None, None));
    }
    assert_eq!(by_group["orders-app"].status, GroupStatus::Ready);
    // The plan's words read back as the same refusal (a saved plan keeps refusing).
    let text = serde_json::to_string(&planned).unwrap();
    let back: ApplyPlan = serde_json::from_str(&text).unwrap();
    assert_eq!(back.groups, planned.groups);
    let report = execute(
        &client,
        &planned,
        &ApplyOptions::default(),
        &crate::client::Deadline::after(std::time::Duration::from_secs(60)),
    )
    .await;
    // One OffsetCommit each for the consumer group and the Streams group.
    assert_eq!(fake.commits.load(Ordering::SeqCst), 2, "{report:?}");
    for g in &report.groups {
        let written = g.group == "orders-app" || g.group == "word-count";
        assert_eq!(!g.partitions.is_empty(), written, "{report:?}");
    }
}

#[tokio::test]
async fn a_group_that_became_a_streams_group_since_the_plan_is_skipped() {
    let (_broker, fake, client) =
        fake_listing(OnCommit::PartitionErrors, vec![("word-count", "streams")]).await;
    let report = execute(
        &client,
        &ready_plan(&["g", "word-count"]),
        &ApplyOptions::default(),
        &crate::client::Deadline::after(std::time::Duration::from_secs(60)),
    )
    .await;
    let outcome = &report
        .groups
        .iter()
        .find(|g| g.group == "word-count")
        .unwrap()
        .outcome;
    match outcome {
        GroupOutcome::Skipped { reason } => assert!(
            reason.to_string().contains("changed since the plan")
                && reason.to_string().contains("streams group"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    // Only "g" was committed.
    assert_eq!(fake.commits.load(Ordering::SeqCst), 1);
}

/// The re-check just before the commit refuses what the target no longer allows, per
/// partition: a plan row past the log end (0..100 on this fake) is not sent, its row says
/// `refused` with both views, and the others are committed.
#[tokio::test]
async fn the_recheck_refuses_per_partition_and_commits_the_rest() {
    let (_broker, first, client) = fake(OnCommit::LeaveOut).await;
    let mut plan = ready_plan(&["g"]);
    // Partition 1 claims 150 on a log that ends at 100 (a hand edit, or a truncated topic).
    plan.groups[0].partitions[1].translated = 150;
    plan.groups[0].partitions[1].offset = 150;
    plan.groups[0].partitions[1].log_end = Some(200);
    let report = execute(
        &client,
        &plan,
        &ApplyOptions::default(),
        &crate::client::Deadline::after(std::time::Duration::from_secs(60)),
    )
    .await;
    let group = &report.groups[0];
    let refused = group.partitions.iter().find(|p| p.partition == 1).unwrap();
    assert_eq!(refused.state, CommitState::Refused, "{report:?}");
    assert_eq!(refused.verdict, ApplyVerdict::ChangedSincePlan);
    let words = refused.error.as_deref().unwrap();
    assert!(words.contains("went back from 200 to 100"), "{words}");
    assert_eq!(refused.committed_before, None);
    // Partition 0 was sent (the fake answers it), in one commit.
    assert_eq!(first.commits.load(Ordering::SeqCst), 1);
    assert!(report.has_skips());

    // Every partition refused: nothing is sent and the group says why.
    let (_other, second, client) = fake(OnCommit::LeaveOut).await;
    let mut plan = ready_plan(&["g"]);
    for p in &mut plan.groups[0].partitions {
        p.translated = -5;
        p.offset = -5;
    }
    let report = execute(
        &client,
        &plan,
        &ApplyOptions::default(),
        &crate::client::Deadline::after(std::time::Duration::from_secs(60)),
    )
    .await;
    assert_eq!(second.commits.load(Ordering::SeqCst), 0, "{report:?}");
    match &report.groups[0].outcome {
        GroupOutcome::Skipped {
            reason: GroupSkip::ChangedSincePlan(Change::EveryPartitionRefused(2)),
        } => {}
        other => panic!("{other:?}"),
    }
    assert!(
        report.groups[0]
            .partitions
            .iter()
            .all(|p| p.verdict == ApplyVerdict::InvalidOffset)
    );
}

/// A plan made on another cluster writes nothing, whatever its groups.
#[tokio::test]
async fn a_plan_of_another_cluster_writes_nothing() {
    let (_broker, fake, client) = fake(OnCommit::LeaveOut).await;
    let mut plan = ready_plan(&["a", "b"]);
    plan.cluster_id = Some("another".into());
    let report = execute(
        &client,
        &plan,
        &ApplyOptions::default(),
        &crate::client::Deadline::after(std::time::Duration::from_secs(60)),
    )
    .await;
    assert_eq!(fake.commits.load(Ordering::SeqCst), 0);
    for g in &report.groups {
        assert!(
            matches!(&g.outcome, GroupOutcome::Skipped { reason }
                if reason.to_string().contains("the plan was made for cluster \"another\"")),
            "{report:?}"
        );
    }
}
