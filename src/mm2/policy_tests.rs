use super::*;
use crate::mm2::topology;

fn policy(pairs: &[(&str, &str)]) -> ReplicationPolicy {
    let props: Properties = pairs.iter().copied().collect();
    ReplicationPolicy::from_properties(&props).unwrap()
}

#[test]
fn default_split_edge_cases() {
    // mm2-semantics.md §1.5, separator ".".
    let p = ReplicationPolicy::default();
    let cases: &[(&str, Option<&str>, Option<&str>)] = &[
        ("a.b", Some("a"), Some("b")),
        ("a.b.c", Some("a"), Some("b.c")),
        ("topic", None, None),
        (".b", Some(""), Some("b")),
        ("a.", None, None),
        ("a..b", Some("a"), Some(".b")),
        (".", None, None),
        ("..", None, None),
        ("a..", None, None),
        (".a.", Some(""), Some("a.")),
    ];
    for &(topic, source, upstream) in cases {
        assert_eq!(p.topic_source(topic), source, "topic_source({topic:?})");
        assert_eq!(
            p.upstream_topic(topic),
            upstream,
            "upstream_topic({topic:?})"
        );
    }
}

#[test]
fn internal_topic_names_follow_the_separator_flag() {
    // Kafka's ReplicationPolicyTest.
    let on = policy(&[(SEPARATOR_CONFIG, "__")]);
    assert_eq!(
        on.offset_syncs_topic("CLUSTER"),
        "mm2-offset-syncs__CLUSTER__internal"
    );
    assert_eq!(
        on.checkpoints_topic("CLUSTER"),
        "CLUSTER__checkpoints__internal"
    );
    let off = policy(&[
        (SEPARATOR_CONFIG, "__"),
        (INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG, "false"),
    ]);
    assert_eq!(
        off.offset_syncs_topic("CLUSTER"),
        "mm2-offset-syncs.CLUSTER.internal"
    );
    assert_eq!(
        off.checkpoints_topic("CLUSTER"),
        "CLUSTER.checkpoints.internal"
    );
    assert_eq!(on.heartbeats_topic(), "heartbeats");
    assert_eq!(off.heartbeats_topic(), "heartbeats");
}

#[test]
fn the_flag_is_ignored_without_a_separator_key() {
    let p = policy(&[(INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG, "false")]);
    assert_eq!(p, ReplicationPolicy::default());
}

#[test]
fn the_flag_is_read_with_java_parse_boolean() {
    // " TRUE " passes MirrorClientConfig's validation (trimmed) but Boolean.parseBoolean(" TRUE ")
    // is false, so the internal topics fall back to ".".
    let p = policy(&[
        (SEPARATOR_CONFIG, "_"),
        (INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG, " TRUE "),
    ]);
    assert_eq!(p.checkpoints_topic("A"), "A.checkpoints.internal");
    let p = policy(&[
        (SEPARATOR_CONFIG, "_"),
        (INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG, "True"),
    ]);
    assert_eq!(p.checkpoints_topic("A"), "A_checkpoints_internal");
}

#[test]
fn the_separator_is_not_trimmed() {
    let p = policy(&[(SEPARATOR_CONFIG, "_ ")]);
    assert_eq!(p.separator(), "_ ");
    assert_eq!(p.format_remote_topic("a", "b"), "a_ b");
}

#[test]
fn internal_topics_follow_kafka_4() {
    let p = ReplicationPolicy::default();
    assert!(p.is_internal_topic("__consumer_offsets"));
    assert!(p.is_internal_topic(".hiddentopic"));
    assert!(p.is_internal_topic("mm2-offsets.CLUSTER.internal"));
    assert!(p.is_internal_topic("A.checkpoints.internal"));
    assert!(!p.is_internal_topic("mm2-offsets_CLUSTER_internal"));
    // Kafka 3.x treated these as internal; 4.0 (KAFKA-17200) lets them be replicated.
    assert!(!p.is_internal_topic("mm2-offsets-CLUSTER-internal"));
    assert!(!p.is_internal_topic("orders.internal"));
    let p = policy(&[(SEPARATOR_CONFIG, "__")]);
    assert!(p.is_mm2_internal_topic("mm2-offset-syncs__A__internal"));
    assert!(!p.is_mm2_internal_topic("mm2-offset-syncs.A.internal"));
}

#[test]
fn heartbeat_and_checkpoint_detection() {
    // Kafka's MirrorClientTest.testIsHeartbeatTopic / testIsCheckpointTopic.
    let p = ReplicationPolicy::default();
    for yes in [
        "heartbeats",
        "source1.heartbeats",
        "source2.source1.heartbeats",
    ] {
        assert!(p.is_heartbeats_topic(yes), "{yes}");
    }
    for no in [
        "heartbeats!",
        "!heartbeats",
        "source1heartbeats",
        "source1-heartbeats",
    ] {
        assert!(!p.is_heartbeats_topic(no), "{no}");
    }
    assert!(p.is_checkpoints_topic("source1.checkpoints.internal"));
    for no in [
        "checkpoints.internal",
        "checkpoints-internal",
        "checkpoints.internal!",
        "!checkpoints.internal",
        "source1checkpointsinternal",
    ] {
        assert!(!p.is_checkpoints_topic(no), "{no}");
    }
}

#[test]
fn identity_policy() {
    // Kafka's MirrorClientTest.testIdentityReplicationTopicSource.
    let p = policy(&[
        (CLASS_CONFIG, IDENTITY_CLASS),
        (SOURCE_CLUSTER_ALIAS_CONFIG, "primary"),
    ]);
    assert_eq!(p.format_remote_topic("primary", "topic1"), "topic1");
    assert_eq!(p.topic_source("topic1"), Some("primary"));
    assert_eq!(p.upstream_topic("topic1"), Some("topic1"));
    assert_eq!(p.original_topic("topic1"), "topic1");
    assert_eq!(
        p.format_remote_topic("backup", "heartbeats"),
        "backup.heartbeats"
    );
    assert_eq!(p.topic_source("backup.heartbeats"), Some("backup"));
    // The heartbeat test is a plain suffix test.
    assert_eq!(
        p.format_remote_topic("backup", "my-heartbeats"),
        "backup.my-heartbeats"
    );
    assert_eq!(p.class_name(), IDENTITY_CLASS);
    // Without an alias, ordinary topics have no source.
    let p = policy(&[(CLASS_CONFIG, IDENTITY_CLASS)]);
    assert_eq!(p.topic_source("topic1"), None);
}

#[test]
fn unknown_policy_class_is_a_clear_error() {
    let props: Properties = [(CLASS_CONFIG, "com.example.MyPolicy")]
        .into_iter()
        .collect();
    let err = ReplicationPolicy::from_properties(&props).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("com.example.MyPolicy"), "{text}");
    assert!(
        text.contains(DEFAULT_CLASS) && text.contains(IDENTITY_CLASS),
        "{text}"
    );
}

#[test]
fn invalid_flag_is_rejected_like_mirror_client_config() {
    let props: Properties = [(INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG, "yes")]
        .into_iter()
        .collect();
    let err = ReplicationPolicy::from_properties(&props).unwrap_err();
    assert!(matches!(err, Mm2Error::InvalidPolicyConfig { .. }), "{err}");
}

#[test]
fn checkpoints_topic_alias_inverts_checkpoints_topic() {
    for p in [
        ReplicationPolicy::default(),
        policy(&[(SEPARATOR_CONFIG, "__")]),
        policy(&[(SEPARATOR_CONFIG, "")]),
    ] {
        for alias in ["A", "us-west.1", ""] {
            let topic = p.checkpoints_topic(alias);
            assert!(p.is_checkpoints_topic(&topic));
            assert_eq!(
                p.checkpoints_topic_alias(&topic),
                Some(alias),
                "{p:?} {alias}"
            );
        }
    }
}

fn show_opt(value: Option<&str>) -> String {
    value.map_or("\\N".to_string(), str::to_string)
}

fn show_set(set: &std::collections::BTreeSet<&str>) -> String {
    set.iter().copied().collect::<Vec<_>>().join("|")
}

fn show_hops(hops: Option<u32>) -> String {
    hops.map_or("-1".to_string(), |h| h.to_string())
}

/// Results of Kafka 4.3.1's own `DefaultReplicationPolicy`, `IdentityReplicationPolicy` and
/// `MirrorClient` over 53 awkward topic names, 12 aliases and 12 configurations, printed by
/// `testdata/PolicyVectors.java`. Every method of the policy and every pure `MirrorClient`
/// method is compared.
#[test]
fn agrees_with_java_on_recorded_vectors() {
    const ALIASES: [&str; 12] = [
        "a", "A", "s", "s1", "s2", "source1", "source2", "primary", "backup", "", "x", "a.b",
    ];
    let text = include_str!("testdata/policy_vectors.tsv");
    let mut policy: Option<ReplicationPolicy> = None;
    let mut topics: Vec<&str> = Vec::new();
    let mut checked = 0;
    // Topic rows come before the MirrorClient rows, so the topic list is complete by then.
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let context = format!("{policy:?}: {line:?}");
        match f[0] {
            "config" => {
                let props: Properties = f[1..].chunks(2).map(|kv| (kv[0], kv[1])).collect();
                policy = Some(ReplicationPolicy::from_properties(&props).unwrap());
                topics.clear();
                continue;
            }
            "rejected" => {
                let props: Properties = [(f[1], f[2])].into_iter().collect();
                assert!(
                    ReplicationPolicy::from_properties(&props).is_err(),
                    "{context}"
                );
                checked += 1;
                continue;
            }
            _ => {}
        }
        let p = policy.as_ref().unwrap();
        match f[0] {
            "heartbeatsTopic" => assert_eq!(p.heartbeats_topic(), f[1], "{context}"),
            "topic" => {
                let t = f[1];
                topics.push(t);
                assert_eq!(show_opt(p.topic_source(t)), f[2], "topicSource {context}");
                assert_eq!(
                    show_opt(p.upstream_topic(t)),
                    f[3],
                    "upstreamTopic {context}"
                );
                assert_eq!(p.original_topic(t), f[4], "originalTopic {context}");
                assert_eq!(p.is_heartbeats_topic(t).to_string(), f[5], "{context}");
                assert_eq!(p.is_checkpoints_topic(t).to_string(), f[6], "{context}");
                assert_eq!(p.is_mm2_internal_topic(t).to_string(), f[7], "{context}");
                assert_eq!(p.is_internal_topic(t).to_string(), f[8], "{context}");
                assert_eq!(p.format_remote_topic("src", t), f[9], "{context}");
                assert_eq!(show_set(&topology::all_sources(p, t)), f[10], "{context}");
                let hops: Vec<String> = ALIASES
                    .iter()
                    .map(|a| show_hops(topology::count_hops_for_topic(p, t, a)))
                    .collect();
                assert_eq!(hops.join(","), f[11], "countHopsForTopic {context}");
            }
            "alias" => {
                let a = f[1];
                assert_eq!(p.checkpoints_topic(a), f[2], "{context}");
                assert_eq!(p.offset_syncs_topic(a), f[3], "{context}");
                let from = topology::remote_topics_from(p, topics.iter().copied(), a);
                assert_eq!(show_set(&from), f[4], "remoteTopics(source) {context}");
                let hops = topology::replication_hops(p, topics.iter().copied(), a);
                assert_eq!(show_hops(hops), f[5], "replicationHops {context}");
            }
            "heartbeatTopics" => {
                let got = topology::heartbeat_topics(p, topics.iter().copied());
                assert_eq!(show_set(&got), f[1], "{context}");
            }
            "checkpointTopics" => {
                let got = topology::checkpoint_topics(p, topics.iter().copied());
                assert_eq!(show_set(&got), f[1], "{context}");
            }
            "upstreamClusters" => {
                let got = topology::upstream_clusters(p, topics.iter().copied());
                assert_eq!(show_set(&got), f[1], "{context}");
            }
            "remoteTopics" => {
                let got = topology::remote_topics(p, topics.iter().copied());
                assert_eq!(show_set(&got), f[1], "{context}");
            }
            other => panic!("unknown row kind {other:?}"),
        }
        checked += 1;
    }
    assert_eq!(checked, 854 - 12, "rows checked");
}
