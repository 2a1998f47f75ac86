//! The batched group calls against real brokers (Kafka 4.4, 3.9, 3.6, 2.8 and Tansu): each
//! batched call gives exactly the answers the one-group calls give, on every broker apply runs
//! on. Kafka 2.8 has neither batched FindCoordinator (v4) nor batched OffsetFetch (v8), so there
//! the client falls back to one group per request; Kafka 4.4 offers ConsumerGroupDescribe, and a
//! KIP-848 member is held there to prove the new API is asked first.
//!
//! Members are held with raw JoinGroup / ConsumerGroupHeartbeat requests (`support/groups.rs`,
//! independent of the code under test).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::support::groups::{coordinator_connection, join_classic, join_consumer};
use crate::support::{cluster, unique_topic, wait_for_group_coordinator, write_records};
use kafka_protocol::messages::ApiKey;
use mm2_offsets::client::{
    CommitOptions, Coordinators, Deadline, GroupProtocol, IsolationLevel, KafkaClient, OffsetSpec,
    OffsetToCommit, PartitionsWanted, found_coordinators,
};

fn deadline() -> Deadline {
    Deadline::after(Duration::from_secs(60))
}

fn offsets(topic: &str, i: usize) -> Vec<OffsetToCommit> {
    let mut first = OffsetToCommit::new(topic, 0, 1 + i as i64);
    first.metadata = Some(format!("meta-{i}"));
    vec![first, OffsetToCommit::new(topic, 1, 2 + i as i64)]
}

/// Every group call, batched and one group at a time, on `name`'s broker: the same answers.
async fn batched_answers_equal_per_group_answers(name: &str) {
    let cluster = cluster(name);
    let config = cluster.plaintext();
    let client = KafkaClient::connect(config.clone()).await.unwrap();
    wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
    let topic = unique_topic("group-calls");
    let other = format!("{topic}-other");
    write_records(&cluster, &topic, 3, 30);
    write_records(&cluster, &other, 2, 10);
    // 0..8 committed in one batched call, 8..10 one group at a time, 10..12 never.
    let groups: Vec<String> = (0..12).map(|i| format!("{topic}-g{i:02}")).collect();

    // FindCoordinator: batched, then one group per call.
    let found = client
        .find_group_coordinators(&groups, &deadline())
        .await
        .unwrap();
    let known = found_coordinators(&found);
    assert_eq!(known.len(), groups.len(), "{found:?}");
    for g in &groups {
        let one = client
            .find_group_coordinators(std::slice::from_ref(g), &deadline())
            .await
            .unwrap();
        assert_eq!(one[g].as_ref().unwrap(), &known[g], "{name}: {g}");
    }
    // Which path this broker takes: 2.8 has no batched OffsetFetch, 4.4 has ConsumerGroupDescribe.
    let conn = coordinator_connection(&client, &config, &groups[0]).await;
    let versions = conn.api_versions();
    let offset_fetch = versions.get(ApiKey::OffsetFetch).unwrap();
    let describe_new = versions.get(ApiKey::ConsumerGroupDescribe).is_some();
    match name {
        "k28" => assert!(*offset_fetch.end() < 8, "{name}: {offset_fetch:?}"),
        "k4" => assert!(*offset_fetch.end() >= 8 && describe_new, "{name}"),
        _ => {}
    }

    // OffsetCommit: batched, then one group per call; every partition answered 0.
    let batch: BTreeMap<String, Vec<OffsetToCommit>> = groups[..8]
        .iter()
        .enumerate()
        .map(|(i, g)| (g.clone(), offsets(&topic, i)))
        .collect();
    let committed = client
        .commit_offsets(&batch, &known, &CommitOptions::default(), &deadline())
        .await;
    for g in &groups[..8] {
        let codes = committed[g].as_ref().unwrap();
        assert_eq!(codes.len(), 2, "{name}: {g}");
        assert!(codes.values().all(|&c| c == 0), "{name}: {g} {codes:?}");
    }
    for (i, g) in groups.iter().enumerate().take(10).skip(8) {
        let codes = client
            .commit_group_offsets(&known[g], g, &offsets(&topic, i), &deadline())
            .await
            .unwrap();
        assert!(codes.values().all(|&c| c == 0), "{name}: {g} {codes:?}");
    }

    // Members: a classic one in g01 (Tansu 0.6 never answers the JoinGroup: no member there),
    // a KIP-848 one in g02 where the broker offers it.
    let member = !cluster.is_tansu();
    let _classic = if member {
        Some(join_classic(&client, &config, &groups[1]).await)
    } else {
        None
    };
    let _consumer = if name == "k4" {
        Some(join_consumer(&client, &config, &groups[2], &topic).await)
    } else {
        None
    };

    // Describe: batched, then one group per call.
    let described = client.describe_groups(&groups, &known, &deadline()).await;
    for g in &groups {
        let one = client
            .describe_group(&known[g], g, &deadline())
            .await
            .unwrap();
        assert_eq!(described[g].as_ref().unwrap(), &one, "{name}: {g}");
    }
    let d = |i: usize| described[&groups[i]].as_ref().unwrap();
    if member {
        assert_eq!(
            (d(1).protocol, d(1).members),
            (GroupProtocol::Classic, 1),
            "{name}"
        );
        assert!(!d(1).is_inactive());
    }
    if name == "k4" {
        assert_eq!((d(2).protocol, d(2).members), (GroupProtocol::Consumer, 1));
        assert!(!d(2).is_inactive());
    }
    for i in [0, 3, 8] {
        assert!(d(i).is_inactive(), "{name}: {:?}", d(i));
    }
    for i in [10, 11] {
        assert!(d(i).is_inactive(), "{name}: {:?}", d(i));
        assert_eq!(d(i).members, 0);
    }

    // OffsetFetch, all partitions: batched, then one group per call, then what was committed.
    let all: BTreeMap<String, PartitionsWanted> = groups
        .iter()
        .map(|g| (g.clone(), PartitionsWanted::All))
        .collect();
    let fetched = client.fetch_offsets(&all, &known, &deadline()).await;
    for (i, g) in groups.iter().enumerate() {
        let mut one = client
            .fetch_group_offsets(&known[g], std::slice::from_ref(g), &deadline())
            .await
            .unwrap();
        let one = one.remove(g).unwrap().unwrap();
        let batched = fetched[g].as_ref().unwrap();
        assert_eq!(batched, &one, "{name}: {g}");
        let held: BTreeMap<(String, i32), i64> = batched
            .iter()
            .filter(|(_, c)| c.offset >= 0)
            .map(|(k, c)| (k.clone(), c.offset))
            .collect();
        let want: BTreeMap<(String, i32), i64> = if i < 10 {
            offsets(&topic, i)
                .into_iter()
                .map(|o| ((o.topic, o.partition), o.offset))
                .collect()
        } else {
            BTreeMap::new()
        };
        assert_eq!(held, want, "{name}: {g}");
        // Tansu 0.6 does not keep commit metadata (OffsetFetch answers null).
        if i < 10 && !cluster.is_tansu() {
            let meta = batched[&(topic.clone(), 0)].metadata.as_deref();
            assert_eq!(meta, Some(format!("meta-{i}").as_str()), "{name}: {g}");
        }
    }

    // OffsetFetch, named partitions: each answered, -1 where nothing is committed.
    let named = PartitionsWanted::Only(BTreeSet::from([
        (topic.clone(), 0),
        (topic.clone(), 2),
        (other.clone(), 1),
    ]));
    let wanted: BTreeMap<String, PartitionsWanted> = [&groups[0], &groups[9], &groups[11]]
        .into_iter()
        .map(|g| (g.clone(), named.clone()))
        .collect();
    let fetched = client.fetch_offsets(&wanted, &known, &deadline()).await;
    for (g, first) in [(&groups[0], 1), (&groups[9], 10), (&groups[11], -1)] {
        let o = fetched[g].as_ref().unwrap();
        let got: Vec<(String, i32, i64)> = o
            .iter()
            .map(|((t, p), c)| (t.clone(), *p, c.offset))
            .collect();
        let want = vec![
            (topic.clone(), 0, first),
            (topic.clone(), 2, -1),
            (other.clone(), 1, -1),
        ];
        let mut got_sorted = got.clone();
        got_sorted.sort();
        let mut want_sorted = want;
        want_sorted.sort();
        assert_eq!(got_sorted, want_sorted, "{name}: {g}");
    }

    // A commit to a group with a member: the same refusal batched and alone (on Tansu, the
    // same acceptance of a group without one).
    let refused = client
        .commit_offsets(
            &BTreeMap::from([(groups[1].clone(), offsets(&topic, 50))]),
            &known,
            &CommitOptions::default(),
            &deadline(),
        )
        .await;
    let alone = client
        .commit_group_offsets(
            &known[&groups[1]],
            &groups[1],
            &offsets(&topic, 50),
            &deadline(),
        )
        .await;
    let batched_codes = refused[&groups[1]]
        .as_ref()
        .map(Clone::clone)
        .map_err(|e| e.to_string());
    assert_eq!(batched_codes, alone.map_err(|e| e.to_string()), "{name}");
    if member {
        // UNKNOWN_MEMBER_ID: the coordinator refuses an admin commit while the group has members.
        assert!(
            batched_codes.as_ref().unwrap().values().all(|&c| c == 25),
            "{name}: {batched_codes:?}"
        );
    }

    // ListGroups: once per coordinator, the same as asked one coordinator at a time.
    let on_all = client
        .list_groups_on(known.values(), &[], &deadline())
        .await;
    let coordinators: BTreeSet<_> = known.values().cloned().collect();
    assert_eq!(on_all.len(), coordinators.len());
    for c in &coordinators {
        let one = client.list_groups(c, &[], &deadline()).await.unwrap();
        let ours = |listed: &Option<Vec<mm2_offsets::client::ListedGroup>>| -> BTreeSet<String> {
            listed
                .iter()
                .flatten()
                .map(|l| l.group_id.clone())
                .filter(|g| g.starts_with(&topic))
                .collect()
        };
        let batched = on_all[c].as_ref().unwrap();
        assert_eq!(ours(batched), ours(&one), "{name}");
    }

    // Log offsets: one ListOffsets per leader for both topics, the same as per topic.
    let described = client
        .describe_topics(&[&topic, &other], &deadline())
        .await
        .unwrap();
    let topics: Vec<_> = described.into_values().map(Result::unwrap).collect();
    let ranges = client
        .log_ranges(&topics, IsolationLevel::ReadUncommitted, &deadline())
        .await;
    for t in &topics {
        let parts: Vec<i32> = t.partitions.iter().map(|p| p.partition).collect();
        let mut per_topic = BTreeMap::new();
        for spec in [OffsetSpec::Earliest, OffsetSpec::Latest] {
            per_topic.insert(
                spec == OffsetSpec::Latest,
                client
                    .list_offsets(
                        t,
                        &parts,
                        spec,
                        IsolationLevel::ReadUncommitted,
                        &deadline(),
                    )
                    .await
                    .unwrap(),
            );
        }
        let r = ranges[&t.name].as_ref().unwrap();
        assert_eq!(r.len(), parts.len(), "{name}: {}", t.name);
        for p in &parts {
            assert_eq!(
                (r[p].start, r[p].end),
                (per_topic[&false][p], per_topic[&true][p]),
                "{name}: {}-{p}",
                t.name
            );
        }
        if !cluster.is_tansu() {
            // Tansu's latest offset is its last batch's base + 1 (harness NOTES.md).
            let per_partition = if t.name == topic { 10 } else { 5 };
            assert!(r.values().all(|l| l.end == per_partition), "{name}: {r:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_group_calls_equal_per_group_calls_on_kafka_4() {
    batched_answers_equal_per_group_answers("k4").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_group_calls_equal_per_group_calls_on_kafka_3_9() {
    batched_answers_equal_per_group_answers("k39").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_group_calls_equal_per_group_calls_on_kafka_3_6() {
    batched_answers_equal_per_group_answers("k36").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_group_calls_fall_back_to_one_group_per_request_on_kafka_2_8() {
    batched_answers_equal_per_group_answers("k28").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_group_calls_equal_per_group_calls_on_tansu() {
    batched_answers_equal_per_group_answers("tansu").await;
}

/// More groups than one request carries (ConsumerGroupDescribe / DescribeGroups take 100 per
/// request, OffsetFetch 500): committed, described and read back in bounded batches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundreds_of_groups_round_trip_in_batches_on_kafka_4() {
    let cluster = cluster("k4");
    let client = KafkaClient::connect(cluster.plaintext()).await.unwrap();
    wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
    let topic = unique_topic("group-calls-many");
    write_records(&cluster, &topic, 2, 20);
    let groups: Vec<String> = (0..700).map(|i| format!("{topic}-g{i:03}")).collect();
    let commits: BTreeMap<String, Vec<OffsetToCommit>> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| (g.clone(), offsets(&topic, i % 8)))
        .collect();
    let committed = client
        .commit_offsets(
            &commits,
            &Coordinators::new(),
            &CommitOptions::default(),
            &deadline(),
        )
        .await;
    assert!(
        committed
            .values()
            .all(|r| r.as_ref().is_ok_and(|c| c.values().all(|&c| c == 0)))
    );
    let described = client
        .describe_groups(&groups, &Coordinators::new(), &deadline())
        .await;
    assert!(
        described
            .values()
            .all(|d| d.as_ref().is_ok_and(|d| d.is_inactive())),
        "{described:?}"
    );
    let all: BTreeMap<String, PartitionsWanted> = groups
        .iter()
        .map(|g| (g.clone(), PartitionsWanted::All))
        .collect();
    let fetched = client
        .fetch_offsets(&all, &Coordinators::new(), &deadline())
        .await;
    for (i, g) in groups.iter().enumerate() {
        let o = fetched[g].as_ref().unwrap();
        assert_eq!(o[&(topic.clone(), 0)].offset, 1 + (i % 8) as i64);
        assert_eq!(o[&(topic.clone(), 1)].offset, 2 + (i % 8) as i64);
    }
}
