//! Which Kafka release line a broker runs, as far as the wire tells: the highest
//! `metadata.version` it supports (ApiVersions' SupportedFeatures) is its release's latest
//! feature level. The software version itself is not sent, so patch releases look alike.

use std::time::Duration;

use super::{Deadline, KafkaClient};

/// `metadata.version` feature levels of Kafka 4.2 (4.2-IV0 and 4.2-IV1, `MetadataVersion`).
const KAFKA_4_2_LEVELS: std::ops::RangeInclusive<i16> = 28..=29;
/// How long one broker is given to answer, so that a dead one does not take the run's budget.
const PER_BROKER: Duration = Duration::from_secs(10);

impl KafkaClient {
    /// The brokers (addresses) whose highest supported `metadata.version` is a Kafka 4.2
    /// level: they run 4.2.0, 4.2.1 or a later 4.2 patch, which the wire does not tell apart;
    /// and, marked `(not reachable: release unknown)`, those that could not be asked (any of
    /// them may be a 4.2.0). KAFKA-20254 (fixed in 4.2.1) lets a 4.2.0 coordinator fail to
    /// load a Streams group made from a classic one after compaction, which is apply's route
    /// for a Streams group. Every broker is asked at once, each for at most 10 s.
    pub(crate) async fn brokers_on_kafka_4_2(&self, deadline: &Deadline) -> Vec<String> {
        let asks = self.brokers().into_iter().map(|broker| async move {
            let address = broker.address();
            let wait = deadline.remaining().min(PER_BROKER);
            match tokio::time::timeout(wait, self.connection_to(&address)).await {
                Ok(Ok(conn)) => {
                    let max = conn
                        .api_versions()
                        .supported_feature("metadata.version")
                        .map(|range| *range.end());
                    max.is_some_and(|level| KAFKA_4_2_LEVELS.contains(&level))
                        .then_some(address)
                }
                _ => Some(format!("{address} (not reachable: release unknown)")),
            }
        });
        futures::future::join_all(asks)
            .await
            .into_iter()
            .flatten()
            .collect()
    }
}
