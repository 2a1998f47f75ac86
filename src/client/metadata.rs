//! What the client knows about the cluster: brokers, topics, partitions and their leaders.

use std::sync::Arc;

/// A broker as the cluster metadata describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BrokerInfo {
    /// The broker's node id.
    pub node_id: i32,
    /// The advertised host.
    pub host: String,
    /// The advertised port.
    pub port: i32,
    /// The broker's rack, if set.
    pub rack: Option<String>,
}

impl BrokerInfo {
    /// `host:port`, with brackets around an IPv6 host.
    pub fn address(&self) -> String {
        if self.host.contains(':') && !self.host.starts_with('[') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// One partition of a topic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PartitionInfo {
    /// The partition number.
    pub partition: i32,
    /// The leader's node id, or -1 when there is none.
    pub leader: i32,
    /// The leader epoch (KIP-320), or -1 when the broker does not report it.
    pub leader_epoch: i32,
}

/// A topic and its partitions, as of the metadata request that described it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TopicInfo {
    /// The topic name.
    pub name: String,
    /// The topic id (Metadata v10+); all zeros when the broker does not report one.
    pub topic_id: [u8; 16],
    /// Whether the broker marks it internal (e.g. `__consumer_offsets`).
    pub is_internal: bool,
    /// Partitions, sorted by number.
    pub partitions: Vec<PartitionInfo>,
}

impl TopicInfo {
    /// Whether the broker gave the topic an id, which Fetch v13+ needs.
    pub fn has_topic_id(&self) -> bool {
        self.topic_id != [0u8; 16]
    }

    /// The topic id as Kafka prints it (`Uuid.toString`: URL-safe base64 without padding, as
    /// `kafka-topics.sh --describe` shows it), or `None` when the broker reports no id.
    pub fn topic_id_text(&self) -> Option<String> {
        use base64::Engine;
        self.has_topic_id()
            .then(|| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(self.topic_id))
    }

    /// The partition with this number, if the topic has it.
    pub fn partition(&self, partition: i32) -> Option<&PartitionInfo> {
        self.partitions.iter().find(|p| p.partition == partition)
    }
}

/// Shared handle to a topic's metadata.
pub type SharedTopic = Arc<TopicInfo>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_hosts_are_bracketed() {
        let b = BrokerInfo {
            node_id: 1,
            host: "::1".into(),
            port: 9092,
            rack: None,
        };
        assert_eq!(b.address(), "[::1]:9092");
        let b = BrokerInfo {
            host: "127.0.0.1".into(),
            ..b
        };
        assert_eq!(b.address(), "127.0.0.1:9092");
    }
}
