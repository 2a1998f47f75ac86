//! Which Kafka release line a broker runs, as far as the wire tells: the highest
//! `metadata.version` it supports (ApiVersions' SupportedFeatures) is its release's latest
//! feature level. The software version itself is not sent, so patch releases look alike.

use super::{ClientError, Deadline, KafkaClient};

/// `metadata.version` feature levels of Kafka 4.2 (4.2-IV0 and 4.2-IV1, `MetadataVersion`).
const KAFKA_4_2_LEVELS: std::ops::RangeInclusive<i16> = 28..=29;

impl KafkaClient {
    /// The brokers (addresses) whose highest supported `metadata.version` is a Kafka 4.2
    /// level: they run 4.2.0, 4.2.1 or a later 4.2 patch, which the wire does not tell apart.
    /// KAFKA-20254 (fixed in 4.2.1) lets a 4.2.0 coordinator fail to load a Streams group made
    /// from a classic one after compaction, which is apply's route for a Streams group.
    pub(crate) async fn brokers_on_kafka_4_2(
        &self,
        deadline: &Deadline,
    ) -> Result<Vec<String>, ClientError> {
        let mut on_4_2 = Vec::new();
        for broker in self.brokers() {
            let address = broker.address();
            let conn = tokio::time::timeout(deadline.remaining(), self.connection_to(&address))
                .await
                .map_err(|_| ClientError::DeadlineExceeded {
                    operation: format!("connecting to broker {address} for its ApiVersions"),
                    timeout: deadline.budget(),
                    last: None,
                })??;
            let max = conn
                .api_versions()
                .supported_feature("metadata.version")
                .map(|range| *range.end());
            if max.is_some_and(|level| KAFKA_4_2_LEVELS.contains(&level)) {
                on_4_2.push(address);
            }
        }
        Ok(on_4_2)
    }
}
