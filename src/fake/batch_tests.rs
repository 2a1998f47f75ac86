//! The batched group calls against the fake cluster: how many requests each call makes, which
//! groups each request carries, and what happens to one group that fails inside a batch. No
//! test bounds wall time; deadlines are generous unless a test is about the deadline.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kafka_protocol::messages::ApiKey;

use super::{FakeCluster, Fault};
use crate::client::{
    ClientError, CommitOptions, Coordinators, Deadline, ErrorCode, GroupProtocol, IsolationLevel,
    KafkaClient, OffsetSpec, OffsetToCommit, PartitionsWanted, found_coordinators,
};
use crate::config::ClientConfig;

const TOPIC: &str = "orders";

/// A client of `cluster` with 2 s requests (shared with `apply`'s tests on the fake).
pub(crate) async fn client_for(cluster: &FakeCluster) -> KafkaClient {
    let mut config = ClientConfig::plaintext([cluster.address(0)]);
    config.request_timeout = Duration::from_secs(2);
    config.connection_setup_timeout = Duration::from_millis(500);
    KafkaClient::connect(config).await.expect("connect")
}

/// A deadline no test about other things reaches.
pub(crate) fn deadline() -> Deadline {
    Deadline::after(Duration::from_secs(20))
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:03}")).collect()
}

/// `brokers` brokers; group i coordinated by node i % brokers and holding offset 100 + i on
/// partitions 0 and 1 of `orders`.
async fn groups_on(brokers: usize, groups: &[String]) -> (FakeCluster, KafkaClient) {
    let cluster = FakeCluster::start(brokers).await;
    for (i, g) in groups.iter().enumerate() {
        cluster.move_coordinator(g, (i % brokers) as i32);
        cluster.set_committed(g, TOPIC, 0, 100 + i as i64);
        cluster.set_committed(g, TOPIC, 1, 100 + i as i64);
    }
    let client = client_for(&cluster).await;
    (cluster, client)
}

async fn known(client: &KafkaClient, groups: &[String]) -> Coordinators {
    let found = client
        .find_group_coordinators(groups, &deadline())
        .await
        .expect("FindCoordinator");
    found_coordinators(&found)
}

fn all(groups: &[String]) -> BTreeMap<String, PartitionsWanted> {
    groups
        .iter()
        .map(|g| (g.clone(), PartitionsWanted::All))
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// The groups of `groups` that node `node` coordinates in [`groups_on`].
fn of_node(groups: &[String], brokers: usize, node: usize) -> Vec<String> {
    groups
        .iter()
        .enumerate()
        .filter(|(i, _)| i % brokers == node)
        .map(|(_, g)| g.clone())
        .collect()
}

#[tokio::test]
async fn each_coordinator_is_asked_once_for_all_its_groups() {
    let groups = names("g", 30);
    let (cluster, client) = groups_on(3, &groups).await;
    let known = known(&client, &groups).await;
    assert_eq!(cluster.asked(ApiKey::FindCoordinator).len(), 1);
    let described = client.describe_groups(&groups, &known, &deadline()).await;
    let fetched = client
        .fetch_offsets(&all(&groups), &known, &deadline())
        .await;
    for api in [ApiKey::DescribeGroups, ApiKey::OffsetFetch] {
        let asked = cluster.asked(api);
        assert_eq!(asked.len(), 3, "{api:?}: {asked:?}");
        for (node, carried) in asked {
            assert_eq!(
                sorted(carried),
                of_node(&groups, 3, node as usize),
                "{api:?}"
            );
        }
    }
    for (i, g) in groups.iter().enumerate() {
        let d = described[g].as_ref().unwrap();
        assert_eq!(
            (d.protocol, d.state.as_str()),
            (GroupProtocol::Classic, "Empty")
        );
        let o = fetched[g].as_ref().unwrap();
        assert_eq!(o[&(TOPIC.to_string(), 0)].offset, 100 + i as i64);
        assert_eq!(o[&(TOPIC.to_string(), 1)].offset, 100 + i as i64);
    }
    // The coordinators were known: no lookup.
    assert_eq!(cluster.asked(ApiKey::FindCoordinator).len(), 1);
}

#[tokio::test]
async fn unknown_coordinators_are_looked_up_in_one_request() {
    let groups = names("g", 20);
    let (cluster, client) = groups_on(2, &groups).await;
    // Duplicates are asked once.
    let mut asked_for = groups.clone();
    asked_for.extend(groups[..5].iter().cloned());
    let fetched = client
        .fetch_offsets(&all(&asked_for), &Coordinators::new(), &deadline())
        .await;
    assert_eq!(fetched.len(), 20);
    assert!(fetched.values().all(Result::is_ok));
    let lookups = cluster.asked(ApiKey::FindCoordinator);
    assert_eq!(lookups.len(), 1);
    assert_eq!(sorted(lookups[0].1.clone()), groups);
}

#[tokio::test]
async fn consumer_group_describe_first_and_describe_groups_only_for_the_rest() {
    let cluster = FakeCluster::start(1).await;
    cluster.offer(ApiKey::ConsumerGroupDescribe, Some((0, 1)));
    let groups: Vec<String> = ["active-848", "empty-848", "active-classic", "absent"]
        .map(String::from)
        .to_vec();
    cluster.make_consumer_group("active-848");
    cluster.add_member("active-848");
    cluster.add_member("active-848");
    cluster.make_consumer_group("empty-848");
    cluster.add_member("active-classic");
    let client = client_for(&cluster).await;
    let described = client
        .describe_groups(&groups, &Coordinators::new(), &deadline())
        .await;
    let cgd = cluster.asked(ApiKey::ConsumerGroupDescribe);
    assert_eq!(cgd.len(), 1);
    assert_eq!(sorted(cgd[0].1.clone()), sorted(groups.clone()));
    let dg = cluster.asked(ApiKey::DescribeGroups);
    assert_eq!(dg.len(), 1);
    assert_eq!(
        sorted(dg[0].1.clone()),
        vec!["absent".to_string(), "active-classic".to_string()]
    );
    let get = |g: &str| described[g].as_ref().unwrap().clone();
    // DescribeGroups would have called both KIP-848 groups "Dead" with no members.
    assert_eq!(
        (
            get("active-848").protocol,
            get("active-848").state.as_str(),
            get("active-848").members
        ),
        (GroupProtocol::Consumer, "Stable", 2)
    );
    assert!(!get("active-848").is_inactive());
    assert_eq!(get("empty-848").protocol, GroupProtocol::Consumer);
    assert!(get("empty-848").is_inactive());
    assert_eq!(
        (
            get("active-classic").protocol,
            get("active-classic").members
        ),
        (GroupProtocol::Classic, 1)
    );
    assert_eq!(get("absent").protocol, GroupProtocol::Absent);
}

/// Kafka 3.7-3.9 can answer one group twice in a ConsumerGroupDescribe (its real answer and a
/// GROUP_ID_NOT_FOUND from another shard): the real answer must win, or an active KIP-848
/// group would be asked with DescribeGroups and come back "Dead".
#[tokio::test]
async fn a_group_answered_twice_keeps_its_real_answer() {
    let cluster = FakeCluster::start(1).await;
    cluster.offer(ApiKey::ConsumerGroupDescribe, Some((0, 1)));
    cluster.describe_twice();
    cluster.make_consumer_group("active-848");
    cluster.add_member("active-848");
    let client = client_for(&cluster).await;
    let groups = vec!["active-848".to_string(), "classic".to_string()];
    let described = client
        .describe_groups(&groups, &Coordinators::new(), &deadline())
        .await;
    let d = described["active-848"].as_ref().unwrap();
    assert_eq!((d.protocol, d.members), (GroupProtocol::Consumer, 1));
    assert_eq!(
        cluster.asked(ApiKey::DescribeGroups),
        vec![(0, vec!["classic".to_string()])]
    );
}

#[tokio::test]
async fn unsupported_version_for_one_group_falls_back_to_describe_groups_for_it() {
    let cluster = FakeCluster::start(1).await;
    cluster.offer(ApiKey::ConsumerGroupDescribe, Some((0, 1)));
    cluster.make_consumer_group("a");
    cluster.make_consumer_group("b");
    cluster.fail_group(ApiKey::ConsumerGroupDescribe, "b", 35, 1);
    let client = client_for(&cluster).await;
    let groups = vec!["a".to_string(), "b".to_string()];
    let described = client
        .describe_groups(&groups, &Coordinators::new(), &deadline())
        .await;
    assert_eq!(
        described["a"].as_ref().unwrap().protocol,
        GroupProtocol::Consumer
    );
    assert!(described["b"].is_ok());
    assert_eq!(
        cluster.asked(ApiKey::DescribeGroups),
        vec![(0, vec!["b".to_string()])]
    );
}

#[tokio::test]
async fn a_group_loading_inside_a_batch_is_asked_again_alone_on_the_same_coordinator() {
    let groups = names("g", 10);
    let (cluster, client) = groups_on(1, &groups).await;
    let known = known(&client, &groups).await;
    cluster.fail_group(ApiKey::DescribeGroups, "g-003", 14, 2);
    cluster.fail_group(ApiKey::OffsetFetch, "g-007", 14, 2);
    let described = client.describe_groups(&groups, &known, &deadline()).await;
    let fetched = client
        .fetch_offsets(&all(&groups), &known, &deadline())
        .await;
    assert!(described.values().all(Result::is_ok), "{described:?}");
    assert!(fetched.values().all(Result::is_ok), "{fetched:?}");
    let dg = cluster.asked(ApiKey::DescribeGroups);
    assert_eq!(dg.len(), 3);
    assert_eq!(dg[0].1.len(), 10);
    assert_eq!(dg[1].1, vec!["g-003".to_string()]);
    assert_eq!(dg[2].1, vec!["g-003".to_string()]);
    let of = cluster.asked(ApiKey::OffsetFetch);
    assert_eq!(of.len(), 3);
    assert_eq!(of[1].1, vec!["g-007".to_string()]);
    // Loading is not a move: no lookup.
    assert_eq!(cluster.asked(ApiKey::FindCoordinator).len(), 1);
}

#[tokio::test]
async fn a_group_that_moved_inside_a_batch_is_looked_up_alone() {
    let groups = names("g", 12);
    let (cluster, client) = groups_on(2, &groups).await;
    let known = known(&client, &groups).await;
    cluster.move_coordinator("g-004", 1);
    let fetched = client
        .fetch_offsets(&all(&groups), &known, &deadline())
        .await;
    assert!(fetched.values().all(Result::is_ok), "{fetched:?}");
    assert_eq!(
        fetched["g-004"].as_ref().unwrap()[&(TOPIC.to_string(), 0)].offset,
        104
    );
    let lookups = cluster.asked(ApiKey::FindCoordinator);
    assert_eq!(lookups.len(), 2);
    assert_eq!(lookups[1].1, vec!["g-004".to_string()]);
    let of = cluster.asked(ApiKey::OffsetFetch);
    assert_eq!(of.len(), 3, "{of:?}");
    assert_eq!(of[2], (1, vec!["g-004".to_string()]));
}

#[tokio::test]
async fn a_connection_killed_under_a_batch_looks_up_every_group_of_that_request_again() {
    let groups = names("g", 12);
    let (cluster, client) = groups_on(2, &groups).await;
    let known = known(&client, &groups).await;
    cluster.inject(ApiKey::OffsetFetch, Some(0), 1, Fault::Kill);
    let fetched = client
        .fetch_offsets(&all(&groups), &known, &deadline())
        .await;
    for (i, g) in groups.iter().enumerate() {
        let o = fetched[g].as_ref().unwrap();
        assert_eq!(o[&(TOPIC.to_string(), 1)].offset, 100 + i as i64);
    }
    let lookups = cluster.asked(ApiKey::FindCoordinator);
    assert_eq!(lookups.len(), 2);
    assert_eq!(sorted(lookups[1].1.clone()), of_node(&groups, 2, 0));
    // Node 1's groups were answered the first time.
    assert_eq!(
        cluster
            .asked(ApiKey::OffsetFetch)
            .iter()
            .filter(|(node, _)| *node == 1)
            .count(),
        1
    );
}

#[tokio::test]
async fn a_final_error_for_one_group_settles_it_and_leaves_the_others_alone() {
    let groups = names("g", 6);
    let (cluster, client) = groups_on(1, &groups).await;
    let known = known(&client, &groups).await;
    cluster.fail_group(ApiKey::OffsetFetch, "g-002", 30, 1);
    let fetched = client
        .fetch_offsets(&all(&groups), &known, &deadline())
        .await;
    let error = fetched["g-002"].as_ref().unwrap_err();
    assert_eq!(error.code(), Some(30));
    assert_eq!(error.group, "g-002");
    assert_eq!(fetched.values().filter(|r| r.is_ok()).count(), 5);
    assert_eq!(cluster.asked(ApiKey::OffsetFetch).len(), 1);
}

#[tokio::test]
async fn a_pending_transactional_commit_is_asked_again_never_read_as_no_offset() {
    let groups = names("g", 4);
    let (cluster, client) = groups_on(1, &groups).await;
    let known = known(&client, &groups).await;
    cluster.fail_group_partition("g-001", TOPIC, 0, 88, 2);
    let fetched = client
        .fetch_offsets(&all(&groups), &known, &deadline())
        .await;
    let o = fetched["g-001"].as_ref().unwrap();
    assert_eq!(o[&(TOPIC.to_string(), 0)].offset, 101);
    assert_eq!(o[&(TOPIC.to_string(), 0)].error_code, 0);
    let of = cluster.asked(ApiKey::OffsetFetch);
    assert_eq!(of.len(), 3);
    assert_eq!(of[1].1, vec!["g-001".to_string()]);

    // Still pending at the deadline: an error naming the partition and the code, not -1.
    cluster.fail_group_partition("g-002", TOPIC, 1, 88, usize::MAX);
    let fetched = client
        .fetch_offsets(
            &all(&groups),
            &known,
            &Deadline::after(Duration::from_millis(700)),
        )
        .await;
    let error = fetched["g-002"].as_ref().unwrap_err();
    assert!(
        matches!(*error.source, ClientError::DeadlineExceeded { .. }),
        "{error}"
    );
    let text = error.to_string();
    assert!(
        text.contains("UNSTABLE_OFFSET_COMMIT") && text.contains("orders-1"),
        "{text}"
    );
    assert_eq!(error.source.broker_code(), Some(ErrorCode::new(88)));
    assert!(fetched["g-003"].is_ok());
}

#[tokio::test]
async fn a_group_loading_past_the_deadline_names_its_last_error_and_the_others_answer() {
    let groups = names("g", 5);
    let (cluster, client) = groups_on(1, &groups).await;
    let known = known(&client, &groups).await;
    cluster.fail_group(ApiKey::DescribeGroups, "g-001", 14, usize::MAX);
    let described = client
        .describe_groups(
            &groups,
            &known,
            &Deadline::after(Duration::from_millis(700)),
        )
        .await;
    let text = described["g-001"].as_ref().unwrap_err().to_string();
    assert!(
        text.contains("DescribeGroups for group \"g-001\"")
            && text.contains("COORDINATOR_LOAD_IN_PROGRESS"),
        "{text}"
    );
    assert_eq!(described.values().filter(|r| r.is_ok()).count(), 4);
}

#[tokio::test]
async fn older_brokers_get_one_group_per_request_with_the_same_answers() {
    let groups = names("g", 5);
    let (cluster, client) = groups_on(1, &groups).await;
    cluster.offer(ApiKey::FindCoordinator, Some((0, 3)));
    cluster.offer(ApiKey::OffsetFetch, Some((1, 7)));
    // A fresh client: versions are negotiated per connection.
    let client = {
        drop(client);
        client_for(&cluster).await
    };
    let mut wanted = all(&groups);
    wanted.insert(
        "g-004".to_string(),
        PartitionsWanted::Only(BTreeSet::from([
            (TOPIC.to_string(), 1),
            (TOPIC.to_string(), 7),
        ])),
    );
    let fetched = client
        .fetch_offsets(&wanted, &Coordinators::new(), &deadline())
        .await;
    for (i, g) in groups.iter().enumerate().take(4) {
        let o = fetched[g].as_ref().unwrap();
        assert_eq!(o.len(), 2);
        assert_eq!(o[&(TOPIC.to_string(), 0)].offset, 100 + i as i64);
    }
    let named = fetched["g-004"].as_ref().unwrap();
    assert_eq!(named.len(), 2);
    assert_eq!(named[&(TOPIC.to_string(), 1)].offset, 104);
    assert_eq!(named[&(TOPIC.to_string(), 7)].offset, -1);
    let lookups = cluster.asked(ApiKey::FindCoordinator);
    assert_eq!(lookups.len(), 5);
    assert!(lookups.iter().all(|(_, keys)| keys.len() == 1));
    let of = cluster.asked(ApiKey::OffsetFetch);
    assert_eq!(of.len(), 5);
    assert!(of.iter().all(|(_, carried)| carried.len() == 1));
}

#[tokio::test]
async fn named_partitions_are_answered_each_with_minus_one_when_none() {
    let groups = names("g", 2);
    let (_cluster, client) = groups_on(1, &groups).await;
    let wanted = BTreeMap::from([(
        "g-001".to_string(),
        PartitionsWanted::Only(BTreeSet::from([
            (TOPIC.to_string(), 0),
            ("other".to_string(), 3),
        ])),
    )]);
    let fetched = client
        .fetch_offsets(&wanted, &Coordinators::new(), &deadline())
        .await;
    let o = fetched["g-001"].as_ref().unwrap();
    assert_eq!(o.len(), 2);
    assert_eq!(o[&(TOPIC.to_string(), 0)].offset, 101);
    assert_eq!(o[&("other".to_string(), 3)].offset, -1);
}

#[tokio::test]
async fn many_groups_are_split_into_bounded_requests() {
    let groups = names("g", 1_201);
    let (cluster, client) = groups_on(1, &groups).await;
    let known = known(&client, &groups).await;
    let described = client.describe_groups(&groups, &known, &deadline()).await;
    let fetched = client
        .fetch_offsets(&all(&groups), &known, &deadline())
        .await;
    assert!(described.values().all(Result::is_ok));
    assert!(fetched.values().all(Result::is_ok));
    let sizes = |api| {
        let mut s: Vec<usize> = cluster.asked(api).iter().map(|(_, g)| g.len()).collect();
        s.sort_unstable();
        s
    };
    assert_eq!(sizes(ApiKey::FindCoordinator), vec![201, 1000]);
    assert_eq!(sizes(ApiKey::DescribeGroups).len(), 13);
    assert!(sizes(ApiKey::DescribeGroups).iter().all(|&n| n <= 100));
    assert_eq!(sizes(ApiKey::OffsetFetch), vec![201, 500, 500]);
}

fn commit_of(i: usize) -> Vec<OffsetToCommit> {
    (0..2)
        .map(|p| OffsetToCommit {
            topic: TOPIC.to_string(),
            partition: p,
            offset: 1_000 + i as i64,
            metadata: Some(format!("m{i}")),
        })
        .collect()
}

fn commits(groups: &[String]) -> BTreeMap<String, Vec<OffsetToCommit>> {
    groups
        .iter()
        .enumerate()
        .map(|(i, g)| (g.clone(), commit_of(i)))
        .collect()
}

#[tokio::test]
async fn every_group_is_committed_once_on_its_coordinator() {
    let groups = names("g", 40);
    let (cluster, client) = groups_on(2, &groups).await;
    let known = known(&client, &groups).await;
    let results = client
        .commit_offsets(
            &commits(&groups),
            &known,
            &CommitOptions::default(),
            &deadline(),
        )
        .await;
    for (i, g) in groups.iter().enumerate() {
        let codes = results[g].as_ref().unwrap();
        assert_eq!(codes.len(), 2);
        assert!(codes.values().all(|&c| c == 0));
        let held = cluster.committed(g);
        assert_eq!(held[&(TOPIC.to_string(), 0)], 1_000 + i as i64);
    }
    let oc = cluster.asked(ApiKey::OffsetCommit);
    assert_eq!(oc.len(), 40);
    for (node, carried) in oc {
        let i: usize = carried[0][2..].parse().unwrap();
        assert_eq!(node as usize, i % 2);
    }
}

#[tokio::test]
async fn a_commit_refused_for_one_group_is_sent_again_for_it_alone() {
    let groups = names("g", 8);
    let (cluster, client) = groups_on(1, &groups).await;
    let known = known(&client, &groups).await;
    cluster.fail_group(ApiKey::OffsetCommit, "g-005", 14, 1);
    cluster.move_coordinator("g-006", 0);
    let results = client
        .commit_offsets(
            &commits(&groups),
            &known,
            &CommitOptions::default(),
            &deadline(),
        )
        .await;
    assert!(
        results
            .values()
            .all(|r| r.as_ref().is_ok_and(|c| c.values().all(|&c| c == 0)))
    );
    let oc = cluster.asked(ApiKey::OffsetCommit);
    assert_eq!(oc.len(), 9);
    assert_eq!(oc[8].1, vec!["g-005".to_string()]);
}

#[tokio::test]
async fn commits_whose_coordinator_moved_are_looked_up_in_one_request() {
    let groups = names("g", 9);
    let (cluster, client) = groups_on(3, &groups).await;
    let known = known(&client, &groups).await;
    for g in ["g-001", "g-004", "g-007"] {
        cluster.move_coordinator(g, 2);
    }
    let results = client
        .commit_offsets(
            &commits(&groups),
            &known,
            &CommitOptions::default(),
            &deadline(),
        )
        .await;
    assert!(results.values().all(Result::is_ok), "{results:?}");
    assert_eq!(cluster.committed("g-004")[&(TOPIC.to_string(), 1)], 1_004);
    let lookups = cluster.asked(ApiKey::FindCoordinator);
    assert_eq!(lookups.len(), 2);
    assert_eq!(
        sorted(lookups[1].1.clone()),
        vec![
            "g-001".to_string(),
            "g-004".to_string(),
            "g-007".to_string()
        ]
    );
    assert_eq!(cluster.asked(ApiKey::OffsetCommit).len(), 12);
}

/// A connection that dies under pipelined commits loses the answers of every commit in flight
/// on it, and only those: the workers are spread over the lanes after the first, so at most
/// `ceil(window / lanes)` commits are "unknown"; with `stop_after_unknown` nothing starts after
/// a loss, and what never started wrote nothing.
#[tokio::test]
async fn a_broken_connection_makes_only_the_commits_of_its_lane_unknown() {
    let groups = names("g", 30);
    let cluster = FakeCluster::start(1).await;
    let client = client_for(&cluster).await;
    assert_eq!(client.config().connections_per_broker, 4);
    let known = known(&client, &groups).await;
    // Slow answers, so that every worker has a commit in flight; then one connection dies.
    cluster.inject(
        ApiKey::OffsetCommit,
        None,
        6,
        Fault::Delay(Duration::from_millis(100)),
    );
    cluster.inject(ApiKey::OffsetCommit, None, 1, Fault::Kill);
    cluster.inject(
        ApiKey::OffsetCommit,
        None,
        usize::MAX,
        Fault::Delay(Duration::from_millis(100)),
    );
    let options = CommitOptions {
        in_flight_per_coordinator: 6,
        stop_after_unknown: true,
    };
    let results = client
        .commit_offsets(&commits(&groups), &known, &options, &deadline())
        .await;
    let unknown: Vec<&String> = results
        .iter()
        .filter(|(_, r)| r.as_ref().is_err_and(|e| e.is_outcome_unknown()))
        .map(|(g, _)| g)
        .collect();
    // 6 workers over 3 lanes: 2 per connection.
    assert!(!unknown.is_empty() && unknown.len() <= 2, "{unknown:?}");
    let halted = results
        .values()
        .filter(|r| r.as_ref().is_err_and(|e| e.is_halted()))
        .count();
    assert!(halted > 0, "{results:?}");
    for (g, r) in &results {
        match r {
            Ok(codes) => assert!(codes.values().all(|&c| c == 0), "{g}"),
            Err(e) if e.is_halted() => assert!(cluster.committed(g).is_empty(), "{g}"),
            Err(e) => assert!(e.is_outcome_unknown(), "{g}: {e}"),
        }
    }
    assert_eq!(results.len(), 30);
}

#[tokio::test]
async fn a_commit_whose_answer_is_lost_does_not_stop_the_others_unless_asked() {
    let groups = names("g", 6);
    let (cluster, client) = groups_on(1, &groups).await;
    let known = known(&client, &groups).await;
    cluster.inject(ApiKey::OffsetCommit, None, 1, Fault::CutAt(7));
    let options = CommitOptions {
        in_flight_per_coordinator: 1,
        stop_after_unknown: false,
    };
    let results = client
        .commit_offsets(&commits(&groups), &known, &options, &deadline())
        .await;
    let unknown = results
        .values()
        .filter(|r| r.as_ref().is_err_and(|e| e.is_outcome_unknown()))
        .count();
    assert_eq!(unknown, 1);
    assert_eq!(results.values().filter(|r| r.is_ok()).count(), 5);
    // Never sent again.
    assert_eq!(cluster.asked(ApiKey::OffsetCommit).len(), 6);
}

#[tokio::test]
async fn list_offsets_asks_each_leader_once_for_all_its_partitions() {
    let cluster = FakeCluster::start(3).await;
    for (t, batches) in [("a", 1), ("b", 2), ("c", 3)] {
        cluster.create_topic(t, 6, batches, 5);
    }
    cluster.truncate_before("b", 4, 5);
    let client = client_for(&cluster).await;
    let described = client
        .describe_topics(&["a", "b", "c", "missing"], &deadline())
        .await
        .unwrap();
    assert!(matches!(
        described["missing"],
        Err(ClientError::UnknownTopic { .. })
    ));
    let topics: Vec<_> = described.into_values().filter_map(Result::ok).collect();
    assert_eq!(topics.len(), 3);
    let ranges = client
        .log_ranges(&topics, IsolationLevel::ReadUncommitted, &deadline())
        .await;
    for (t, end) in [("a", 5), ("b", 10), ("c", 15)] {
        let r = ranges[t].as_ref().unwrap();
        assert_eq!(r.len(), 6);
        for p in 0..6 {
            let start = if (t, p) == ("b", 4) { 5 } else { 0 };
            assert_eq!((r[&p].start, r[&p].end), (start, end), "{t}-{p}");
        }
    }
    // Earliest and latest, one request per leader each: 6 requests of 6 partitions.
    let listed = cluster.listed();
    assert_eq!(listed.len(), 6, "{listed:?}");
    for (node, partitions) in listed {
        assert_eq!(partitions.len(), 6);
        assert!(partitions.iter().all(|(_, p)| p % 3 == node));
    }
}

#[tokio::test]
async fn list_offsets_follows_a_leader_that_moved() {
    let cluster = FakeCluster::start(2).await;
    cluster.create_topic("a", 4, 2, 5);
    cluster.create_topic("b", 4, 1, 5);
    let client = client_for(&cluster).await;
    let topics: Vec<_> = client
        .describe_topics(&["a", "b"], &deadline())
        .await
        .unwrap()
        .into_values()
        .map(Result::unwrap)
        .collect();
    cluster.move_leader("a", 0, 1);
    let ends = client
        .list_offsets_many(
            &topics,
            OffsetSpec::Latest,
            IsolationLevel::ReadUncommitted,
            &deadline(),
        )
        .await;
    assert_eq!(
        ends["a"].as_ref().unwrap(),
        &BTreeMap::from([(0, 10), (1, 10), (2, 10), (3, 10)])
    );
    assert_eq!(ends["b"].as_ref().unwrap().len(), 4);
    let listed = cluster.listed();
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert_eq!(listed[2], (1, vec![("a".to_string(), 0)]));
}

#[tokio::test]
async fn list_groups_asks_each_coordinator_once() {
    let groups = names("g", 9);
    let (cluster, client) = groups_on(3, &groups).await;
    let known = known(&client, &groups).await;
    let listed = client
        .list_groups_on(known.values(), &["share", "streams"], &deadline())
        .await;
    assert_eq!(listed.len(), 3);
    assert!(
        listed
            .values()
            .all(|l| matches!(l, Ok(Some(g)) if g.is_empty()))
    );
    assert_eq!(cluster.served(ApiKey::ListGroups), 3);
}
