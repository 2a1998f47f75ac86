//! OffsetDelete (API key 47, KIP-496): removing a group's committed offsets on some partitions,
//! as `kafka-consumer-groups.sh --delete-offsets` does. An undo needs it: a partition that had
//! no committed offset before a commit must have none after the undo, and no offset value means
//! "none" (a committed offset always wins over `auto.offset.reset`).
//!
//! The coordinator deletes only from a group without members (classic: Empty; KIP-848: not
//! subscribed to the topic), answering NON_EMPTY_GROUP or GROUP_SUBSCRIBED_TO_TOPIC otherwise.
//! Deleting is idempotent, so unlike a commit the request may be sent again after a lost answer.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_OffsetDelete>
//! - Kafka's `DeleteConsumerGroupOffsetsHandler` (the Admin client's retries)

use std::collections::BTreeMap;

use kafka_protocol::messages::{
    ApiKey, GroupId, OffsetDeleteRequest, TopicName,
    offset_delete_request::{OffsetDeleteRequestPartition, OffsetDeleteRequestTopic},
};
use kafka_protocol::protocol::StrBytes;

use super::cluster::KafkaClient;
use super::deadline::Deadline;
use super::error::ClientError;
use super::groups::{GroupCallError, GroupCoordinator};
use crate::responses::{self, offset_delete::OffsetDeleteResponse};

impl KafkaClient {
    /// Deletes `group`'s committed offsets of `partitions` (topic, partition), on its
    /// coordinator (`coordinator` is where to ask first; a coordinator that moved or is loading
    /// is asked again, as for reads, until `deadline`).
    ///
    /// Returns each partition's error code (0 = deleted, or had none). A group-level refusal is
    /// `Err`, with its code: NON_EMPTY_GROUP (the group has members), GROUP_ID_NOT_FOUND (the
    /// coordinator does not know the group: nothing to delete), GROUP_AUTHORIZATION_FAILED
    /// (DELETE on the group is missing).
    pub async fn delete_group_offsets(
        &self,
        coordinator: &GroupCoordinator,
        group: &str,
        partitions: &[(String, i32)],
        deadline: &Deadline,
    ) -> Result<BTreeMap<(String, i32), i16>, GroupCallError> {
        let known: super::Coordinators =
            std::iter::once((group.to_string(), coordinator.clone())).collect();
        let mut answers = self
            .per_coordinator(
                "OffsetDelete",
                std::iter::once(group.to_string()),
                &known,
                deadline,
                // A delete is a write: once sent it gets its answer, as a commit does.
                super::batch::AtDeadline::LetFinish,
                |c, groups| async move {
                    let answer = self.delete_group_offsets_once(&c, group, partitions).await;
                    // One group per OffsetDelete: the attempt answers for exactly that one.
                    groups
                        .into_iter()
                        .next()
                        .map(|g| (g, answer))
                        .into_iter()
                        .collect()
                },
            )
            .await;
        answers.remove(group).unwrap_or_else(|| {
            Err(GroupCallError::new(
                group,
                ClientError::Protocol {
                    broker: coordinator.address.clone(),
                    request: "OffsetDelete",
                    problem: format!("no answer for group {group:?}"),
                },
            ))
        })
    }

    async fn delete_group_offsets_once(
        &self,
        coordinator: &GroupCoordinator,
        group: &str,
        partitions: &[(String, i32)],
    ) -> Result<BTreeMap<(String, i32), i16>, ClientError> {
        let conn = self.connection_to(&coordinator.address).await?;
        let version = conn.negotiate(ApiKey::OffsetDelete, responses::OFFSET_DELETE_VERSIONS)?;
        let mut by_topic: BTreeMap<&str, Vec<OffsetDeleteRequestPartition>> = BTreeMap::new();
        for (topic, partition) in partitions {
            by_topic
                .entry(topic.as_str())
                .or_default()
                .push(OffsetDeleteRequestPartition::default().with_partition_index(*partition));
        }
        let request = OffsetDeleteRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
            .with_topics(
                by_topic
                    .into_iter()
                    .map(|(topic, partitions)| {
                        OffsetDeleteRequestTopic::default()
                            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                            .with_partitions(partitions)
                    })
                    .collect(),
            );
        let body = conn.send(&request, version).await?;
        let response =
            OffsetDeleteResponse::decode(body, version).map_err(|source| ClientError::Decode {
                broker: conn.address().to_string(),
                source,
            })?;
        if response.error_code != 0 {
            return Err(ClientError::broker(
                "OffsetDelete",
                &format!("group {group:?}"),
                conn.address(),
                response.error_code,
            ));
        }
        let mut out = BTreeMap::new();
        for t in &response.topics {
            for &(partition, code) in &t.partitions {
                out.insert((t.name.clone(), partition), code);
            }
        }
        Ok(out)
    }
}
