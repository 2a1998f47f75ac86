//! The pure parts of Java's `MirrorClient`: what a cluster's topic names say about the
//! replication topology, given a [`ReplicationPolicy`].
//!
//! Each function takes the cluster's topic names (as `MirrorClient.listTopics()` returns them,
//! without broker-internal topics) and answers like the Java method of the same name. Sets come
//! back sorted and borrow from the inputs.
//!
//! ```
//! use mm2_offsets::mm2::ReplicationPolicy;
//! use mm2_offsets::mm2::topology;
//!
//! let policy = ReplicationPolicy::default();
//! let topics = ["orders", "heartbeats", "A.heartbeats", "B.A.heartbeats", "A.checkpoints.internal"];
//! let upstream: Vec<&str> = topology::upstream_clusters(&policy, topics).into_iter().collect();
//! assert_eq!(upstream, ["A", "B"]);
//! assert_eq!(topology::replication_hops(&policy, topics, "A"), Some(1));
//! assert_eq!(topology::replication_hops(&policy, topics, "C"), None);
//! ```
//!
//! # References
//! - Kafka: `connect/mirror-client/src/main/java/org/apache/kafka/connect/mirror/MirrorClient.java`

use super::ReplicationPolicy;
use std::collections::BTreeSet;

/// Heartbeats topics and their replicas (Java's `heartbeatTopics()`).
pub fn heartbeat_topics<'a>(
    policy: &ReplicationPolicy,
    topics: impl IntoIterator<Item = &'a str>,
) -> BTreeSet<&'a str> {
    topics
        .into_iter()
        .filter(|t| policy.is_heartbeats_topic(t))
        .collect()
}

/// Checkpoints topics (Java's `checkpointTopics()`).
pub fn checkpoint_topics<'a>(
    policy: &ReplicationPolicy,
    topics: impl IntoIterator<Item = &'a str>,
) -> BTreeSet<&'a str> {
    topics
        .into_iter()
        .filter(|t| policy.is_checkpoints_topic(t))
        .collect()
}

/// Every cluster `topic` came through, walking `topic_source`/`upstream_topic` until a topic is
/// not remote or a source repeats (the guard Java keeps for the Identity policy, which cannot
/// prevent cycles). Java's `allSources`.
pub fn all_sources<'a>(policy: &'a ReplicationPolicy, topic: &'a str) -> BTreeSet<&'a str> {
    let mut sources = BTreeSet::new();
    let mut topic = topic;
    while let Some(source) = policy.topic_source(topic) {
        if !sources.insert(source) {
            break;
        }
        match policy.upstream_topic(topic) {
            Some(upstream) => topic = upstream,
            // Unreachable for the built-in policies (a topic with a source has an upstream), but
            // Java would then ask for the source of null and fail; we stop.
            None => break,
        }
    }
    sources
}

/// Clusters upstream of this one, however many hops away, from the heartbeats topics (Java's
/// `upstreamClusters()`).
pub fn upstream_clusters<'a>(
    policy: &'a ReplicationPolicy,
    topics: impl IntoIterator<Item = &'a str>,
) -> BTreeSet<&'a str> {
    topics
        .into_iter()
        .filter(|t| policy.is_heartbeats_topic(t))
        .flat_map(|t| all_sources(policy, t))
        .collect()
}

/// How many hops `topic` travelled from `source_alias`, or `None` if it did not come from there
/// (Java's `countHopsForTopic`, which returns -1 for that).
pub fn count_hops_for_topic(
    policy: &ReplicationPolicy,
    topic: &str,
    source_alias: &str,
) -> Option<u32> {
    let mut visited: Vec<&str> = Vec::new();
    let mut topic = topic;
    let mut hops = 0;
    loop {
        hops += 1;
        let source = policy.topic_source(topic)?;
        if source == source_alias {
            return Some(hops);
        }
        if visited.contains(&source) {
            // A cycle: we would never reach `source_alias`.
            return None;
        }
        visited.push(source);
        topic = policy.upstream_topic(topic)?;
    }
}

/// The fewest hops from `source_alias` to this cluster over all heartbeats topics, or `None` if
/// it is unreachable (Java's `replicationHops`, which returns -1 for that).
pub fn replication_hops<'a>(
    policy: &ReplicationPolicy,
    topics: impl IntoIterator<Item = &'a str>,
    source_alias: &str,
) -> Option<u32> {
    topics
        .into_iter()
        .filter(|t| policy.is_heartbeats_topic(t))
        .filter_map(|t| count_hops_for_topic(policy, t, source_alias))
        .min()
}

/// Whether `topic` is a replicated, non-internal topic (Java's `isRemoteTopic`).
pub fn is_remote_topic(policy: &ReplicationPolicy, topic: &str) -> bool {
    !policy.is_internal_topic(topic) && policy.topic_source(topic).is_some()
}

/// All remote topics (Java's `remoteTopics()`).
pub fn remote_topics<'a>(
    policy: &ReplicationPolicy,
    topics: impl IntoIterator<Item = &'a str>,
) -> BTreeSet<&'a str> {
    topics
        .into_iter()
        .filter(|t| is_remote_topic(policy, t))
        .collect()
}

/// Remote topics replicated directly from `source_alias` (Java's `remoteTopics(source)`).
pub fn remote_topics_from<'a>(
    policy: &ReplicationPolicy,
    topics: impl IntoIterator<Item = &'a str>,
    source_alias: &str,
) -> BTreeSet<&'a str> {
    topics
        .into_iter()
        .filter(|t| is_remote_topic(policy, t) && policy.topic_source(t) == Some(source_alias))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Properties;
    use crate::mm2::policy::IDENTITY_CLASS;

    fn identity(alias: &str) -> ReplicationPolicy {
        let mut props = Properties::new();
        props.set("replication.policy.class", IDENTITY_CLASS);
        props.set("source.cluster.alias", alias);
        ReplicationPolicy::from_properties(&props).unwrap()
    }

    fn set<'a>(items: &[&'a str]) -> BTreeSet<&'a str> {
        items.iter().copied().collect()
    }

    // The cases of Kafka's MirrorClientTest.

    #[test]
    fn count_hops_for_topic_java_cases() {
        let p = ReplicationPolicy::default();
        assert_eq!(count_hops_for_topic(&p, "topic", "source"), None);
        assert_eq!(count_hops_for_topic(&p, "source", "source"), None);
        assert_eq!(count_hops_for_topic(&p, "sourcetopic", "source"), None);
        assert_eq!(count_hops_for_topic(&p, "source1.topic", "source2"), None);
        assert_eq!(
            count_hops_for_topic(&p, "source1.topic", "source1"),
            Some(1)
        );
        assert_eq!(
            count_hops_for_topic(&p, "source2.source1.topic", "source2"),
            Some(1)
        );
        assert_eq!(
            count_hops_for_topic(&p, "source2.source1.topic", "source1"),
            Some(2)
        );
        assert_eq!(
            count_hops_for_topic(&p, "source3.source2.source1.topic", "source1"),
            Some(3)
        );
        assert_eq!(
            count_hops_for_topic(&p, "source3.source2.source1.topic", "source4"),
            None
        );
    }

    #[test]
    fn heartbeat_topics_java_case() {
        let p = ReplicationPolicy::default();
        let topics = [
            "topic1",
            "topic2",
            "heartbeats",
            "source1.heartbeats",
            "source2.source1.heartbeats",
            "source3.heartbeats",
        ];
        assert_eq!(heartbeat_topics(&p, topics), set(&topics[2..]));
    }

    #[test]
    fn checkpoint_topics_java_case() {
        let p = ReplicationPolicy::default();
        let topics = [
            "topic1",
            "topic2",
            "checkpoints.internal",
            "source1.checkpoints.internal",
            "source2.source1.checkpoints.internal",
            "source3.checkpoints.internal",
        ];
        assert_eq!(checkpoint_topics(&p, topics), set(&topics[3..]));
    }

    #[test]
    fn replication_hops_java_case() {
        let p = ReplicationPolicy::default();
        let topics = [
            "topic1",
            "topic2",
            "heartbeats",
            "source1.heartbeats",
            "source1.source2.heartbeats",
            "source3.heartbeats",
        ];
        assert_eq!(replication_hops(&p, topics, "source1"), Some(1));
        assert_eq!(replication_hops(&p, topics, "source2"), Some(2));
        assert_eq!(replication_hops(&p, topics, "source3"), Some(1));
        assert_eq!(replication_hops(&p, topics, "source4"), None);
    }

    #[test]
    fn upstream_clusters_java_cases() {
        let topics = [
            "topic1",
            "topic2",
            "heartbeats",
            "source1.heartbeats",
            "source1.source2.heartbeats",
            "source3.source4.source5.heartbeats",
        ];
        let expected = set(&["source1", "source2", "source3", "source4", "source5"]);
        assert_eq!(
            upstream_clusters(&ReplicationPolicy::default(), topics),
            expected
        );
        // The Identity policy names heartbeats like the Default one.
        let p = identity("source");
        assert_eq!(upstream_clusters(&p, topics), expected);
    }

    #[test]
    fn remote_topics_java_cases() {
        let p = ReplicationPolicy::default();
        let topics = [
            "topic1",
            "topic2",
            "topic3",
            "source1.topic4",
            "source1.source2.topic5",
            "source3.source4.source5.topic6",
        ];
        assert_eq!(remote_topics(&p, topics), set(&topics[3..]));
        assert_eq!(
            remote_topics_from(&p, topics, "source1"),
            set(&topics[3..5])
        );

        let sep: Properties = [("replication.policy.separator", "__")]
            .into_iter()
            .collect();
        let p = ReplicationPolicy::from_properties(&sep).unwrap();
        let topics = [
            "topic1",
            "topic2",
            "topic3",
            "source1__topic4",
            "source1__source2__topic5",
            "source3__source4__source5__topic6",
        ];
        assert_eq!(remote_topics(&p, topics), set(&topics[3..]));
    }

    #[test]
    fn identity_remote_topics_java_case() {
        let p = identity("source");
        let topics = [
            "topic1",
            "topic2",
            "topic3",
            "heartbeats",
            "backup.heartbeats",
        ];
        assert_eq!(
            remote_topics(&p, topics),
            set(&["topic1", "topic2", "topic3", "backup.heartbeats"])
        );
    }

    #[test]
    fn identity_cycles_are_cut() {
        let p = identity("primary");
        assert_eq!(count_hops_for_topic(&p, "orders", "primary"), Some(1));
        assert_eq!(count_hops_for_topic(&p, "orders", "other"), None);
        assert_eq!(all_sources(&p, "orders"), set(&["primary"]));
    }
}
