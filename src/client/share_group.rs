//! Share groups on their coordinator (KIP-932): their state and members (ShareGroupDescribe,
//! batched), and setting or deleting their start offsets (AlterShareGroupOffsets,
//! DeleteShareGroupOffsets, one group a request as the protocol has it), as
//! `kafka-share-groups.sh --describe`, `--reset-offsets` and `--delete-offsets` do.
//!
//! A share group keeps no committed offsets: OffsetCommit on its id is refused, and an
//! OffsetCommit on an id that does not exist creates a classic group, after which share
//! consumers of that id fail ("not a share group"). Its start offsets are written with
//! AlterShareGroupOffsets only, which on an id that does not exist creates an empty share group
//! and with a live member answers GROUP_NOT_EMPTY. Both writes are idempotent (a start offset
//! set twice is the same state), so, like OffsetDelete, they may be sent again after a
//! coordinator moved; the caller reads the result back either way.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_ShareGroupDescribe>,
//!   <https://kafka.apache.org/protocol#The_Messages_AlterShareGroupOffsets>,
//!   <https://kafka.apache.org/protocol#The_Messages_DeleteShareGroupOffsets>
//! - Kafka's `DescribeShareGroupsHandler`, `AlterShareGroupOffsetsHandler`,
//!   `DeleteShareGroupOffsetsHandler`; `GroupCoordinatorService.alterShareGroupOffsets`

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, ApiKey, DeleteShareGroupOffsetsRequest, GroupId,
    ShareGroupDescribeRequest, TopicName,
    alter_share_group_offsets_request::{
        AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
    },
    delete_share_group_offsets_request::DeleteShareGroupOffsetsRequestTopic,
};
use kafka_protocol::protocol::StrBytes;

use super::batch::{Answers, AtDeadline, Coordinators, best_answers, chunked_on, spread};
use super::cluster::KafkaClient;
use super::deadline::Deadline;
use super::error::ClientError;
use super::groups::{GroupCallError, GroupCoordinator, GroupResults, decode, missing};
use crate::responses::{
    self, alter_share_group_offsets::AlterShareGroupOffsetsResponse,
    delete_share_group_offsets::DeleteShareGroupOffsetsResponse,
    share_group_describe::ShareGroupDescribeResponse,
};
use crate::wire::BrokerConnection;

/// Groups per ShareGroupDescribe request (answers carry every member's assignment).
const GROUPS_PER_REQUEST: usize = 100;
/// Requests in flight per coordinator connection.
const WINDOW: usize = 2;
/// GROUP_ID_NOT_FOUND: no group of that id, or one that is not a share group.
pub(crate) const GROUP_ID_NOT_FOUND: i16 = 69;

/// A share group's state as its coordinator describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShareGroupState {
    /// The group id.
    pub group_id: String,
    /// Whether the coordinator knows a share group of this id (`false`: GROUP_ID_NOT_FOUND,
    /// which it also answers for a group of another type: tell them apart with ListGroups).
    pub exists: bool,
    /// The state (Empty, Stable, Dead); empty when it does not exist.
    pub state: String,
    /// Each member, as "member id (client id @ host)".
    pub members: Vec<String>,
}

impl ShareGroupState {
    /// A group id the coordinator knows no share group of.
    pub(crate) fn absent(group: &str) -> Self {
        ShareGroupState {
            group_id: group.to_string(),
            exists: false,
            state: String::new(),
            members: Vec::new(),
        }
    }

    /// Whether its start offsets may be written: no member can race the write.
    pub fn is_inactive(&self) -> bool {
        self.members.is_empty() && (!self.exists || self.state == "Empty")
    }
}

/// Each partition's error code in an AlterShareGroupOffsets answer (0 = set).
pub type ShareWriteCodes = BTreeMap<(String, i32), i16>;

impl KafkaClient {
    /// Each share group's state and members, asked of its coordinator (many groups a request,
    /// every coordinator at once; `known` gives coordinators already found). A coordinator
    /// that moved or is loading is asked again until `deadline`. An id the coordinator knows
    /// no share group of is `Ok` with [`ShareGroupState::exists`] false.
    pub async fn describe_share_groups(
        &self,
        groups: &[String],
        known: &Coordinators,
        deadline: &Deadline,
    ) -> GroupResults<ShareGroupState> {
        self.per_coordinator(
            "ShareGroupDescribe",
            groups.iter().cloned(),
            known,
            deadline,
            AtDeadline::Cut,
            |c, groups| self.share_describe_on(c, groups),
        )
        .await
    }

    async fn share_describe_on(
        &self,
        coordinator: GroupCoordinator,
        groups: Vec<String>,
    ) -> Answers<ShareGroupState> {
        chunked_on(
            self,
            &coordinator,
            groups,
            (GROUPS_PER_REQUEST, WINDOW),
            |conn| {
                Ok(conn.negotiate(
                    ApiKey::ShareGroupDescribe,
                    responses::SHARE_GROUP_DESCRIBE_VERSIONS,
                )?)
            },
            |conn, version, chunk| async move { share_describe(&conn, version, chunk).await },
        )
        .await
    }

    /// Sets `group`'s start offsets to `offsets` ((topic, partition) → offset) on its
    /// coordinator (`coordinator` is where to ask first; one that moved or is loading is asked
    /// again until `deadline`). On an id the coordinator does not know this creates an empty
    /// share group.
    ///
    /// Returns each partition's error code (0 = set). A group-level refusal is `Err` with its
    /// code: GROUP_NOT_EMPTY (68, the group has members), GROUP_ID_NOT_FOUND (69, a group of
    /// another type holds the id), GROUP_AUTHORIZATION_FAILED.
    pub async fn alter_share_group_offsets(
        &self,
        coordinator: &GroupCoordinator,
        group: &str,
        offsets: &BTreeMap<(String, i32), i64>,
        deadline: &Deadline,
    ) -> Result<ShareWriteCodes, GroupCallError> {
        self.one_share_group_call(
            "AlterShareGroupOffsets",
            coordinator,
            group,
            deadline,
            |c| self.alter_once(c, group, offsets),
        )
        .await
    }

    /// Deletes `group`'s start offsets of whole `topics` on its coordinator, so that
    /// `share.auto.offset.reset` decides again where its consumers start (the way back from a
    /// start offset `apply` created). Returns each topic's error code (0 = deleted); a
    /// group-level refusal is `Err` with its code, as for
    /// [`alter_share_group_offsets`](Self::alter_share_group_offsets).
    pub async fn delete_share_group_offsets(
        &self,
        coordinator: &GroupCoordinator,
        group: &str,
        topics: &BTreeSet<String>,
        deadline: &Deadline,
    ) -> Result<BTreeMap<String, i16>, GroupCallError> {
        self.one_share_group_call(
            "DeleteShareGroupOffsets",
            coordinator,
            group,
            deadline,
            |c| self.delete_once(c, group, topics),
        )
        .await
    }

    /// One write for one group on its coordinator, asked again where it moved or is loading.
    async fn one_share_group_call<T, F, Fut>(
        &self,
        request: &'static str,
        coordinator: &GroupCoordinator,
        group: &str,
        deadline: &Deadline,
        attempt: F,
    ) -> Result<T, GroupCallError>
    where
        F: Fn(GroupCoordinator) -> Fut,
        Fut: std::future::Future<Output = Result<T, ClientError>>,
    {
        let known: Coordinators =
            std::iter::once((group.to_string(), coordinator.clone())).collect();
        let attempt = &attempt;
        let mut answers = self
            .per_coordinator(
                request,
                std::iter::once(group.to_string()),
                &known,
                deadline,
                // A write: once sent it gets its answer.
                AtDeadline::LetFinish,
                |c, groups| async move {
                    let answer = attempt(c).await;
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
                    request,
                    problem: format!("no answer for group {group:?}"),
                },
            ))
        })
    }

    async fn alter_once(
        &self,
        coordinator: GroupCoordinator,
        group: &str,
        offsets: &BTreeMap<(String, i32), i64>,
    ) -> Result<ShareWriteCodes, ClientError> {
        let conn = self.connection_to(&coordinator.address).await?;
        let version = conn.negotiate(
            ApiKey::AlterShareGroupOffsets,
            responses::ALTER_SHARE_GROUP_OFFSETS_VERSIONS,
        )?;
        let mut by_topic: BTreeMap<&str, Vec<AlterShareGroupOffsetsRequestPartition>> =
            BTreeMap::new();
        for ((topic, partition), offset) in offsets {
            by_topic.entry(topic.as_str()).or_default().push(
                AlterShareGroupOffsetsRequestPartition::default()
                    .with_partition_index(*partition)
                    .with_start_offset(*offset),
            );
        }
        let request = AlterShareGroupOffsetsRequest::default()
            .with_group_id(group_id(group))
            .with_topics(
                by_topic
                    .into_iter()
                    .map(|(topic, partitions)| {
                        AlterShareGroupOffsetsRequestTopic::default()
                            .with_topic_name(topic_name(topic))
                            .with_partitions(partitions)
                    })
                    .collect(),
            );
        let body = conn.send(&request, version).await?;
        let response = decode(&conn, AlterShareGroupOffsetsResponse::decode, body, version)?;
        if response.error_code != 0 {
            return Err(ClientError::broker(
                "AlterShareGroupOffsets",
                &format!("group {group:?}"),
                conn.address(),
                response.error_code,
            ));
        }
        let mut out = BTreeMap::new();
        for t in &response.topics {
            for (partition, code, _) in &t.partitions {
                out.insert((t.name.clone(), *partition), *code);
            }
        }
        Ok(out)
    }

    async fn delete_once(
        &self,
        coordinator: GroupCoordinator,
        group: &str,
        topics: &BTreeSet<String>,
    ) -> Result<BTreeMap<String, i16>, ClientError> {
        let conn = self.connection_to(&coordinator.address).await?;
        let version = conn.negotiate(
            ApiKey::DeleteShareGroupOffsets,
            responses::DELETE_SHARE_GROUP_OFFSETS_VERSIONS,
        )?;
        let request = DeleteShareGroupOffsetsRequest::default()
            .with_group_id(group_id(group))
            .with_topics(
                topics
                    .iter()
                    .map(|t| {
                        DeleteShareGroupOffsetsRequestTopic::default()
                            .with_topic_name(topic_name(t))
                    })
                    .collect(),
            );
        let body = conn.send(&request, version).await?;
        let response = decode(
            &conn,
            DeleteShareGroupOffsetsResponse::decode,
            body,
            version,
        )?;
        if response.error_code != 0 {
            return Err(ClientError::broker(
                "DeleteShareGroupOffsets",
                &format!("group {group:?}"),
                conn.address(),
                response.error_code,
            ));
        }
        Ok(response
            .topics
            .into_iter()
            .map(|t| (t.name, t.error_code))
            .collect())
    }
}

fn group_id(group: &str) -> GroupId {
    GroupId(StrBytes::from_string(group.to_string()))
}

fn topic_name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

async fn share_describe(
    conn: &BrokerConnection,
    version: i16,
    groups: Vec<String>,
) -> Answers<ShareGroupState> {
    let request = ShareGroupDescribeRequest::default()
        .with_group_ids(groups.iter().map(|g| group_id(g)).collect());
    let response = match conn.send(&request, version).await {
        Ok(body) => decode(conn, ShareGroupDescribeResponse::decode, body, version),
        Err(e) => Err(e.into()),
    };
    let response = match response {
        Ok(response) => response,
        Err(e) => return spread(&groups, e),
    };
    let best = best_answers(
        &response.groups,
        |g| Some(g.group_id.as_str()),
        |g| g.error_code,
    );
    groups
        .into_iter()
        .map(|g| {
            let answer = match best.get(g.as_str()).copied() {
                None => Err(missing(conn, "ShareGroupDescribe", &g)),
                Some(a) if a.error_code == GROUP_ID_NOT_FOUND => Ok(ShareGroupState::absent(&g)),
                Some(a) if a.error_code != 0 => Err(ClientError::broker(
                    "ShareGroupDescribe",
                    &format!("group {g:?}"),
                    conn.address(),
                    a.error_code,
                )),
                Some(a) => Ok(ShareGroupState {
                    group_id: g.clone(),
                    exists: true,
                    state: a.group_state.clone(),
                    members: a
                        .members
                        .iter()
                        .map(|m| format!("{} ({} @ {})", m.member_id, m.client_id, m.client_host))
                        .collect(),
                }),
            };
            (g, answer)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a share group without members may be written: an absent one (AlterShareGroupOffsets
    /// creates it) or an Empty one.
    #[test]
    fn only_a_share_group_without_members_is_inactive() {
        let mut s = ShareGroupState::absent("q");
        assert!(s.is_inactive());
        s.exists = true;
        s.state = "Empty".into();
        assert!(s.is_inactive());
        s.state = "Stable".into();
        s.members = vec!["m (c @ h)".into()];
        assert!(!s.is_inactive());
        s.members.clear();
        assert!(!s.is_inactive(), "Stable without members is still not idle");
    }
}
