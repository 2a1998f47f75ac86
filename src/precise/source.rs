//! Where the offset-syncs topic is: the cluster that holds it, its name, and how far its
//! history may be trusted between syncs.

use crate::client::KafkaClient;
use crate::mm2::ReplicationPolicy;
use crate::mm2::sync_index::Interpolation;

/// Where the offset-syncs topic is and how to trust it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SyncsSource {
    /// A client for the cluster that holds the topic: the source cluster by default, the target
    /// with `offset-syncs.topic.location=target`.
    pub client: KafkaClient,
    /// The topic, e.g. `ReplicationPolicy::offset_syncs_topic(target_alias)`.
    pub topic: String,
    /// [`Interpolation::GaplessUpstream`] only if the upstream partitions have no offset gaps
    /// (see [`crate::mm2::sync_index`]).
    pub interpolation: Interpolation,
}

impl SyncsSource {
    /// The offset-syncs topic MM2 writes for the flow towards `target_alias` (on the source
    /// cluster) — or, with `offset-syncs.topic.location=target`, pass the source alias and a
    /// client for the target. Interpolation off.
    pub fn new(client: KafkaClient, policy: &ReplicationPolicy, alias: &str) -> Self {
        SyncsSource::for_topic(client, policy.offset_syncs_topic(alias))
    }

    /// The offset-syncs topic `topic` on the cluster `client` reaches (a topic named by the
    /// user rather than derived from the replication policy). Interpolation off.
    pub fn for_topic(client: KafkaClient, topic: impl Into<String>) -> Self {
        SyncsSource {
            client,
            topic: topic.into(),
            interpolation: Interpolation::Disabled,
        }
    }
}
