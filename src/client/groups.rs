//! Single attempts of the calls routed to a group's coordinator: FindCoordinator,
//! ConsumerGroupDescribe / DescribeGroups, OffsetFetch and the admin OffsetCommit. The public,
//! retrying versions that find the coordinator again when it moves are in `coordinator.rs`.
//!
//! Each call answers per group and, where the protocol does, per partition: one group's error
//! never hides another's, and a partition's error code is kept, not collapsed.
//!
//! # References
//! - <https://kafka.apache.org/protocol> (FindCoordinator, DescribeGroups, ConsumerGroupDescribe,
//!   OffsetFetch, OffsetCommit)
//! - KIP-699 (batched FindCoordinator), KIP-709 (batched OffsetFetch), KIP-848 (new consumer
//!   group protocol), Kafka's `AlterConsumerGroupOffsetsHandler` (the admin commit)

use std::collections::BTreeMap;

use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, DescribeGroupsRequest, FindCoordinatorRequest, GroupId,
    OffsetCommitRequest, OffsetFetchRequest, TopicName,
    offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic},
    offset_fetch_request::{
        OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
    },
};
use kafka_protocol::protocol::StrBytes;

use super::cluster::KafkaClient;
use super::error::ClientError;
use crate::wire::BrokerConnection;
use crate::wire::responses::{
    self, consumer_group_describe::ConsumerGroupDescribeResponse,
    describe_groups::DescribeGroupsResponse, find_coordinator::FindCoordinatorResponse,
    offset_commit::OffsetCommitResponse, offset_fetch::OffsetFetchResponse,
};

/// GROUP_ID_NOT_FOUND: ConsumerGroupDescribe's answer for a group that is not a consumer group.
const GROUP_ID_NOT_FOUND: i16 = 69;
/// UNSUPPORTED_VERSION.
const UNSUPPORTED_VERSION: i16 = 35;
/// NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS.
const COORDINATOR_MOVED: [i16; 3] = [16, 15, 14];

/// The broker that coordinates a group.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupCoordinator {
    /// Its node id.
    pub node_id: i32,
    /// `host:port` to connect to.
    pub address: String,
}

/// A group-level failure, with the error code when the broker gave one.
#[derive(Debug, thiserror::Error)]
#[error("{source}")]
#[non_exhaustive]
pub struct GroupCallError {
    /// The group.
    pub group: String,
    /// What failed (boxed: group results travel in maps of many groups).
    #[source]
    pub source: Box<ClientError>,
}

impl GroupCallError {
    pub(super) fn new(group: &str, source: ClientError) -> Self {
        GroupCallError {
            group: group.to_string(),
            source: Box::new(source),
        }
    }

    /// The Kafka error code, if the broker answered with one.
    pub fn code(&self) -> Option<i16> {
        match self.source.as_ref() {
            ClientError::Broker { code, .. } => Some(code.code()),
            _ => None,
        }
    }

    /// Whether the coordinator moved or is loading, so that a fresh FindCoordinator and a
    /// retry may succeed. Never true for an answer that was lost in transit.
    pub fn is_coordinator_moved(&self) -> bool {
        self.code().is_some_and(|c| COORDINATOR_MOVED.contains(&c))
    }

    /// Whether a commit was sent and its answer lost, so that the group's committed offsets
    /// are unknown until they are read back. Every other commit failure wrote nothing.
    pub fn is_outcome_unknown(&self) -> bool {
        matches!(
            self.source.as_ref(),
            ClientError::CommitOutcomeUnknown { .. }
        )
    }
}

/// Which rebalance protocol a group on the target uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum GroupProtocol {
    /// The classic protocol (JoinGroup/SyncGroup), or a group that only holds offsets.
    Classic,
    /// The new consumer protocol (KIP-848).
    Consumer,
    /// Unknown to the coordinator: no members and no offsets.
    Absent,
}

/// A group's state as its coordinator describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupDescription {
    /// The group id.
    pub group_id: String,
    /// The protocol the group uses.
    pub protocol: GroupProtocol,
    /// The protocol type for classic groups ("consumer", "connect", or "" when the group only
    /// holds offsets); "consumer" for new-protocol groups.
    pub protocol_type: String,
    /// The state the coordinator reports (Empty, Stable, Dead, Assigning, ...).
    pub state: String,
    /// How many members the group has.
    pub members: usize,
}

impl GroupDescription {
    /// Whether the group has no members, so that an admin commit cannot race a consumer.
    /// "Dead" from DescribeGroups counts only when ConsumerGroupDescribe did not know the group
    /// (see [`KafkaClient::describe_group`]); a "Dead" new-protocol group is not trusted.
    pub fn is_inactive(&self) -> bool {
        self.members == 0
            && match self.protocol {
                GroupProtocol::Absent => true,
                GroupProtocol::Classic => self.state == "Empty",
                GroupProtocol::Consumer => self.state == "Empty",
            }
    }
}

/// One partition's committed offset, or the error the coordinator gave for it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommittedOffset {
    /// The committed offset, or -1 when the group has none.
    pub offset: i64,
    /// The committed leader epoch, or -1.
    pub leader_epoch: i32,
    /// The committed metadata, if any.
    pub metadata: Option<String>,
    /// The partition's error code (0 = none).
    pub error_code: i16,
}

/// A group's committed offsets by (topic, partition).
pub type GroupOffsets = BTreeMap<(String, i32), CommittedOffset>;

/// One partition of an admin commit.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OffsetToCommit {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset to commit.
    pub offset: i64,
    /// The metadata to commit with it (MM2's checkpoint carries the source's).
    pub metadata: Option<String>,
}

impl OffsetToCommit {
    /// `offset` for `topic`-`partition`, without metadata.
    pub fn new(topic: impl Into<String>, partition: i32, offset: i64) -> Self {
        OffsetToCommit {
            topic: topic.into(),
            partition,
            offset,
            metadata: None,
        }
    }
}

impl KafkaClient {
    /// One FindCoordinator round for `groups`: batched in one request where the broker offers
    /// v4+, one request per group below. Each group's answer stands alone: one group's
    /// authorization failure does not fail the others.
    pub(super) async fn find_group_coordinators_once(
        &self,
        groups: &[String],
    ) -> Result<BTreeMap<String, Result<GroupCoordinator, GroupCallError>>, ClientError> {
        let conn = self.any_connection().await?;
        let version = conn.negotiate(
            ApiKey::FindCoordinator,
            responses::FIND_COORDINATOR_VERSIONS,
        )?;
        let mut out = BTreeMap::new();
        if version >= responses::find_coordinator::FIRST_BATCHED {
            // Kafka's coordinator caps nothing, but a huge request is one big failure domain.
            for chunk in groups.chunks(1000) {
                let request = FindCoordinatorRequest::default()
                    .with_key_type(0)
                    .with_coordinator_keys(
                        chunk
                            .iter()
                            .map(|g| StrBytes::from_string(g.clone()))
                            .collect(),
                    );
                let response = decode(
                    &conn,
                    FindCoordinatorResponse::decode,
                    conn.send(&request, version).await?,
                    version,
                )?;
                for group in chunk {
                    let answer = response
                        .coordinators
                        .iter()
                        .find(|c| c.key.as_deref() == Some(group.as_str()));
                    let outcome = match answer {
                        None => Err(GroupCallError::new(
                            group,
                            missing(&conn, "FindCoordinator", group),
                        )),
                        Some(c) => coordinator_outcome(&conn, group, c),
                    };
                    out.insert(group.clone(), outcome);
                }
            }
        } else {
            for group in groups {
                let request = FindCoordinatorRequest::default()
                    .with_key(StrBytes::from_string(group.clone()))
                    .with_key_type(0);
                let body = conn.send(&request, version).await?;
                let response = decode(&conn, FindCoordinatorResponse::decode, body, version)?;
                let outcome = match response.coordinators.first() {
                    None => Err(GroupCallError::new(
                        group,
                        missing(&conn, "FindCoordinator", group),
                    )),
                    Some(c) => coordinator_outcome(&conn, group, c),
                };
                out.insert(group.clone(), outcome);
            }
        }
        Ok(out)
    }

    /// A group's protocol, state and member count, asked of `coordinator` once.
    ///
    /// Asks ConsumerGroupDescribe (KIP-848) first where the coordinator offers it, and falls
    /// back to DescribeGroups when the group is not a consumer group (GROUP_ID_NOT_FOUND) or
    /// the version is refused. A 4.x coordinator answers DescribeGroups for an active
    /// new-protocol group with "Dead" and no members, so the old API alone is never trusted
    /// where the new one exists.
    pub(super) async fn describe_group_once(
        &self,
        coordinator: &GroupCoordinator,
        group: &str,
    ) -> Result<GroupDescription, GroupCallError> {
        let conn = self
            .connection_to(&coordinator.address)
            .await
            .map_err(|e| GroupCallError::new(group, e))?;
        let wrap = |e: ClientError| GroupCallError::new(group, e);
        if conn
            .api_versions()
            .get(ApiKey::ConsumerGroupDescribe)
            .is_some()
        {
            let version = conn
                .negotiate(
                    ApiKey::ConsumerGroupDescribe,
                    responses::CONSUMER_GROUP_DESCRIBE_VERSIONS,
                )
                .map_err(|e| wrap(e.into()))?;
            let request = ConsumerGroupDescribeRequest::default()
                .with_group_ids(vec![GroupId(StrBytes::from_string(group.to_string()))]);
            let body = conn
                .send(&request, version)
                .await
                .map_err(|e| wrap(e.into()))?;
            let response = decode(&conn, ConsumerGroupDescribeResponse::decode, body, version)
                .map_err(wrap)?;
            let answer = response.groups.iter().find(|g| g.group_id == group);
            match answer {
                None => return Err(wrap(missing(&conn, "ConsumerGroupDescribe", group))),
                Some(g) if g.error_code == 0 => {
                    return Ok(GroupDescription {
                        group_id: group.to_string(),
                        protocol: GroupProtocol::Consumer,
                        protocol_type: "consumer".to_string(),
                        state: g.group_state.clone(),
                        members: g.members.len(),
                    });
                }
                Some(g)
                    if g.error_code == GROUP_ID_NOT_FOUND
                        || g.error_code == UNSUPPORTED_VERSION => {}
                Some(g) => {
                    return Err(wrap(ClientError::broker(
                        "ConsumerGroupDescribe",
                        &format!("group {group:?}"),
                        conn.address(),
                        g.error_code,
                    )));
                }
            }
        }
        let version = conn
            .negotiate(ApiKey::DescribeGroups, responses::DESCRIBE_GROUPS_VERSIONS)
            .map_err(|e| wrap(e.into()))?;
        let request = DescribeGroupsRequest::default()
            .with_groups(vec![GroupId(StrBytes::from_string(group.to_string()))]);
        let body = conn
            .send(&request, version)
            .await
            .map_err(|e| wrap(e.into()))?;
        let response =
            decode(&conn, DescribeGroupsResponse::decode, body, version).map_err(wrap)?;
        match response.groups.iter().find(|g| g.group_id == group) {
            None => Err(wrap(missing(&conn, "DescribeGroups", group))),
            // v6+ says GROUP_ID_NOT_FOUND for a group it does not know; older versions say Dead.
            Some(g) if g.error_code == GROUP_ID_NOT_FOUND => Ok(absent(group)),
            Some(g) if g.error_code != 0 => Err(wrap(ClientError::broker(
                "DescribeGroups",
                &format!("group {group:?}"),
                conn.address(),
                g.error_code,
            ))),
            Some(g)
                if g.group_state == "Dead"
                    && g.members.is_empty()
                    && g.protocol_type.is_empty() =>
            {
                Ok(absent(group))
            }
            Some(g) => Ok(GroupDescription {
                group_id: group.to_string(),
                protocol: GroupProtocol::Classic,
                protocol_type: g.protocol_type.clone(),
                state: g.group_state.clone(),
                members: g.members.len(),
            }),
        }
    }

    /// The committed offsets of each group (all its partitions), asked of `coordinator` once.
    /// Batched in one OffsetFetch where the coordinator offers v8+, one request per group
    /// below. Per-partition error codes are kept in [`CommittedOffset::error_code`].
    pub(super) async fn fetch_group_offsets_once(
        &self,
        coordinator: &GroupCoordinator,
        groups: &[String],
    ) -> Result<BTreeMap<String, Result<GroupOffsets, GroupCallError>>, ClientError> {
        let conn = self.connection_to(&coordinator.address).await?;
        let version = conn.negotiate(ApiKey::OffsetFetch, responses::OFFSET_FETCH_VERSIONS)?;
        let mut out = BTreeMap::new();
        // require_stable (v7+) makes the coordinator answer UNSTABLE_OFFSET_COMMIT instead of
        // hiding a pending transactional commit.
        if version >= responses::offset_fetch::FIRST_BATCHED {
            for chunk in groups.chunks(500) {
                let request = OffsetFetchRequest::default()
                    .with_require_stable(true)
                    .with_groups(
                        chunk
                            .iter()
                            .map(|g| {
                                OffsetFetchRequestGroup::default()
                                    .with_group_id(GroupId(StrBytes::from_string(g.clone())))
                                    .with_topics(None::<Vec<OffsetFetchRequestTopics>>)
                            })
                            .collect(),
                    );
                let body = conn.send(&request, version).await?;
                let response = decode(&conn, OffsetFetchResponse::decode, body, version)?;
                for group in chunk {
                    let answer = response
                        .groups
                        .iter()
                        .find(|g| g.group_id.as_deref() == Some(group.as_str()));
                    out.insert(group.clone(), group_offsets(&conn, group, answer));
                }
            }
        } else {
            for group in groups {
                let request = OffsetFetchRequest::default()
                    .with_group_id(GroupId(StrBytes::from_string(group.clone())))
                    .with_topics(None::<Vec<OffsetFetchRequestTopic>>)
                    .with_require_stable(version >= 7);
                let body = conn.send(&request, version).await?;
                let response = decode(&conn, OffsetFetchResponse::decode, body, version)?;
                out.insert(
                    group.clone(),
                    group_offsets(&conn, group, response.groups.first()),
                );
            }
        }
        Ok(out)
    }

    /// Sends one admin OffsetCommit of `offsets` for `group` on `conn`: no member id,
    /// generation / member epoch -1, no instance id, the metadata carried. The coordinator
    /// accepts it only while the group has no members; UNKNOWN_MEMBER_ID means the group has
    /// (gained) members.
    ///
    /// Returns each partition's error code (0 = committed); a partition the coordinator left out
    /// of its answer is missing from the map: its outcome is unknown. The two errors differ in what they
    /// leave behind: [`CommitAttemptError::NotSent`] wrote nothing (the version could not be
    /// negotiated), [`CommitAttemptError::AnswerLost`] may have written (the request left, its
    /// answer was lost or undecodable).
    pub(super) async fn commit_group_offsets_once(
        conn: &BrokerConnection,
        group: &str,
        offsets: &[OffsetToCommit],
    ) -> Result<BTreeMap<(String, i32), i16>, CommitAttemptError> {
        let version = conn
            .negotiate(ApiKey::OffsetCommit, responses::OFFSET_COMMIT_VERSIONS)
            .map_err(|e| CommitAttemptError::NotSent(e.into()))?;
        let mut by_topic: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        for o in offsets {
            by_topic.entry(o.topic.as_str()).or_default().push(
                OffsetCommitRequestPartition::default()
                    .with_partition_index(o.partition)
                    .with_committed_offset(o.offset)
                    .with_committed_leader_epoch(-1)
                    .with_committed_metadata(Some(StrBytes::from_string(
                        o.metadata.clone().unwrap_or_default(),
                    ))),
            );
        }
        let request = OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
            .with_generation_id_or_member_epoch(-1)
            .with_member_id(StrBytes::from_static_str(""))
            .with_group_instance_id(None)
            .with_retention_time_ms(-1)
            .with_topics(
                by_topic
                    .into_iter()
                    .map(|(topic, partitions)| {
                        OffsetCommitRequestTopic::default()
                            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                            .with_partitions(partitions)
                    })
                    .collect(),
            );
        let lost = CommitAttemptError::AnswerLost;
        let body = conn
            .send(&request, version)
            .await
            .map_err(|e| lost(e.into()))?;
        let response = decode(conn, OffsetCommitResponse::decode, body, version).map_err(lost)?;
        let mut out = BTreeMap::new();
        for t in &response.topics {
            for &(partition, code) in &t.partitions {
                out.insert((t.name.clone(), partition), code);
            }
        }
        Ok(out)
    }
}

/// Why one OffsetCommit attempt has no per-partition answer.
#[derive(Debug)]
pub(super) enum CommitAttemptError {
    /// Nothing was sent: retrying is safe.
    NotSent(ClientError),
    /// The request was sent and its answer lost: the group's offsets are unknown.
    AnswerLost(ClientError),
}

fn absent(group: &str) -> GroupDescription {
    GroupDescription {
        group_id: group.to_string(),
        protocol: GroupProtocol::Absent,
        protocol_type: String::new(),
        state: "Dead".to_string(),
        members: 0,
    }
}

fn decode<T>(
    conn: &BrokerConnection,
    decoder: fn(bytes::Bytes, i16) -> Result<T, crate::wire::decode::DecodeError>,
    body: bytes::Bytes,
    version: i16,
) -> Result<T, ClientError> {
    decoder(body, version).map_err(|source| ClientError::Decode {
        broker: conn.address().to_string(),
        source,
    })
}

fn missing(conn: &BrokerConnection, request: &'static str, group: &str) -> ClientError {
    ClientError::Protocol {
        broker: conn.address().to_string(),
        request,
        problem: format!("no answer for group {group:?}"),
    }
}

fn coordinator_outcome(
    conn: &BrokerConnection,
    group: &str,
    c: &responses::find_coordinator::Coordinator,
) -> Result<GroupCoordinator, GroupCallError> {
    if c.error_code != 0 {
        return Err(GroupCallError::new(
            group,
            ClientError::broker(
                "FindCoordinator",
                &format!("group {group:?}"),
                conn.address(),
                c.error_code,
            ),
        ));
    }
    let info = super::metadata::BrokerInfo {
        node_id: c.node_id,
        host: c.host.clone(),
        port: c.port,
        rack: None,
    };
    Ok(GroupCoordinator {
        node_id: c.node_id,
        address: info.address(),
    })
}

fn group_offsets(
    conn: &BrokerConnection,
    group: &str,
    answer: Option<&responses::offset_fetch::OffsetFetchGroup>,
) -> Result<GroupOffsets, GroupCallError> {
    let Some(answer) = answer else {
        return Err(GroupCallError::new(
            group,
            missing(conn, "OffsetFetch", group),
        ));
    };
    if answer.error_code != 0 {
        return Err(GroupCallError::new(
            group,
            ClientError::broker(
                "OffsetFetch",
                &format!("group {group:?}"),
                conn.address(),
                answer.error_code,
            ),
        ));
    }
    let mut out = GroupOffsets::new();
    for t in &answer.topics {
        for p in &t.partitions {
            out.insert(
                (t.name.clone(), p.partition_index),
                CommittedOffset {
                    offset: p.committed_offset,
                    leader_epoch: p.committed_leader_epoch,
                    metadata: p.metadata.clone(),
                    error_code: p.error_code,
                },
            );
        }
    }
    Ok(out)
}
