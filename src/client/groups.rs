//! What the group calls share: the types they answer with, and one FindCoordinator round for
//! many groups. The calls themselves are `describe.rs`, `offset_fetch.rs` and `commit.rs`, on
//! the engine of `batch.rs`; `coordinator.rs` retries the lookup alone.
//!
//! Each call answers per group and, where the protocol does, per partition: one group's error
//! never hides another's, and a partition's error code is kept, not collapsed.
//!
//! # References
//! - <https://kafka.apache.org/protocol> (FindCoordinator)
//! - KIP-699 (batched FindCoordinator)

use std::collections::{BTreeMap, HashMap};

use futures::StreamExt;
use kafka_protocol::messages::{ApiKey, FindCoordinatorRequest};
use kafka_protocol::protocol::StrBytes;

use super::cluster::KafkaClient;
use super::code::ErrorCode;
use super::error::ClientError;
use super::kind::ErrorKind;
use crate::responses::{self, find_coordinator::FindCoordinatorResponse};
use crate::wire::BrokerConnection;

/// Each group's answer, or why it has none.
pub type GroupResults<T> = BTreeMap<String, Result<T, GroupCallError>>;

/// GROUP_ID_NOT_FOUND: ConsumerGroupDescribe's answer for a group that is not a consumer group.
pub(super) const GROUP_ID_NOT_FOUND: i16 = 69;
/// UNSUPPORTED_VERSION.
pub(super) const UNSUPPORTED_VERSION: i16 = 35;
/// NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS.
const COORDINATOR_MOVED: [i16; 3] = [16, 15, 14];

/// The broker that coordinates a group.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

    /// What kind of failure this is ([`ClientError::kind`]): an embedder's branch on it.
    pub fn kind(&self) -> ErrorKind {
        self.source.kind()
    }

    /// The Kafka error code behind the failure, if a broker answered with one, looking through
    /// a shared batch failure and a deadline ([`ClientError::broker_code`]).
    pub fn broker_code(&self) -> Option<ErrorCode> {
        self.source.broker_code()
    }

    /// The raw Kafka error code, if the broker answered this group with one directly (not
    /// through a deadline or a shared failure; see [`broker_code`](Self::broker_code)).
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

    /// Whether a commit was never sent because an earlier commit's answer was lost
    /// ([`ClientError::Halted`]): nothing of it was written.
    pub fn is_halted(&self) -> bool {
        matches!(self.source.as_ref(), ClientError::Halted { .. })
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
    /// The ACL operations the principal may perform on the group, as the bit field
    /// DescribeGroups (v3+) and ConsumerGroupDescribe return with `include_authorized_operations`
    /// (KIP-430: bit `1 << n` for Kafka's `AclOperation` code `n`). `None` when the coordinator
    /// did not say: the group does not exist yet, or DescribeGroups before v3.
    pub authorized_operations: Option<i32>,
}

/// Kafka's `AclOperation` code for DELETE.
const ACL_DELETE: i32 = 6;

impl GroupDescription {
    /// Whether the principal may delete the group's offsets (OffsetDelete, KIP-496, needs
    /// DELETE on the group): `None` when the coordinator did not say
    /// ([`authorized_operations`](Self::authorized_operations)).
    pub fn may_delete_offsets(&self) -> Option<bool> {
        self.authorized_operations
            .map(|ops| ops & (1 << ACL_DELETE) != 0)
    }

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
    /// One FindCoordinator round for `groups`: batched (up to 1,000 keys per request, two
    /// requests in flight) where the broker offers v4+, one request per group below (eight in
    /// flight). Each group's answer stands alone: one group's authorization failure does not
    /// fail the others. `Err` when no request could be sent or one failed as a whole.
    pub(super) async fn find_group_coordinators_once(
        &self,
        groups: &[String],
    ) -> Result<GroupResults<GroupCoordinator>, ClientError> {
        let conn = self.any_connection().await?;
        let version = conn.negotiate(
            ApiKey::FindCoordinator,
            responses::FIND_COORDINATOR_VERSIONS,
        )?;
        let mut unique: Vec<String> = groups.to_vec();
        unique.sort_unstable();
        unique.dedup();
        let batched = version >= responses::find_coordinator::FIRST_BATCHED;
        // Kafka's coordinator caps nothing, but a huge request is one big failure domain.
        let (per_request, window) = if batched { (1000, 2) } else { (1, 8) };
        let requests: Vec<Vec<String>> =
            unique.chunks(per_request).map(<[String]>::to_vec).collect();
        let conn = &conn;
        let answered: Vec<Result<GroupResults<GroupCoordinator>, ClientError>> =
            futures::stream::iter(requests)
                .map(|chunk| async move {
                    let request = if batched {
                        FindCoordinatorRequest::default()
                            .with_key_type(0)
                            .with_coordinator_keys(
                                chunk
                                    .iter()
                                    .map(|g| StrBytes::from_string(g.clone()))
                                    .collect(),
                            )
                    } else {
                        FindCoordinatorRequest::default()
                            .with_key(StrBytes::from_string(chunk[0].clone()))
                            .with_key_type(0)
                    };
                    let body = conn.send(&request, version).await?;
                    let response = decode(conn, FindCoordinatorResponse::decode, body, version)?;
                    let by_key: HashMap<&str, &responses::find_coordinator::Coordinator> =
                        if batched {
                            response
                                .coordinators
                                .iter()
                                .filter_map(|c| c.key.as_deref().map(|k| (k, c)))
                                .collect()
                        } else {
                            response
                                .coordinators
                                .first()
                                .map(|c| (chunk[0].as_str(), c))
                                .into_iter()
                                .collect()
                        };
                    Ok(chunk
                        .iter()
                        .map(|group| {
                            let outcome = match by_key.get(group.as_str()) {
                                None => Err(GroupCallError::new(
                                    group,
                                    missing(conn, "FindCoordinator", group),
                                )),
                                Some(c) => coordinator_outcome(conn, group, c),
                            };
                            (group.clone(), outcome)
                        })
                        .collect())
                })
                .buffer_unordered(window)
                .collect()
                .await;
        let mut out = BTreeMap::new();
        for chunk in answered {
            out.extend(chunk?);
        }
        Ok(out)
    }
}

pub(super) fn decode<T>(
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

pub(super) fn missing(conn: &BrokerConnection, request: &'static str, group: &str) -> ClientError {
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
