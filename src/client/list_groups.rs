//! ListGroups on a group coordinator, and what it says about the kind of each group.
//!
//! Only consumer groups (classic or KIP-848) keep the committed offsets an admin OffsetCommit
//! writes. A share group (KIP-932) tracks its progress as share-partition state, not committed
//! offsets; a streams group (KIP-1071) belongs to a Kafka Streams application, whose offsets
//! and internal topics move together (Kafka's streams reset tool is the way to reset them). Both
//! answer ConsumerGroupDescribe and DescribeGroups with GROUP_ID_NOT_FOUND, exactly as a group
//! the coordinator has never seen, so only ListGroups v5+ (which carries the group type) tells
//! them apart.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_ListGroups>
//! - KIP-848 (group types, the types filter), KIP-932 (share groups), KIP-1071 (streams groups)

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::{ApiKey, ListGroupsRequest};
use kafka_protocol::protocol::StrBytes;

use super::cluster::KafkaClient;
use super::deadline::Deadline;
use super::error::ClientError;
use super::groups::GroupCoordinator;
use super::retry::retry_with_backoff;
use crate::responses::{
    self,
    list_groups::{FIRST_WITH_TYPE, ListGroupsResponse},
};

/// The group types apply refuses to write, as ListGroups v5+ names them.
pub const NOT_CONSUMER_GROUP_TYPES: [&str; 2] = ["share", "streams"];

/// One group a coordinator listed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListedGroup {
    /// The group id.
    pub group_id: String,
    /// The protocol type ("consumer", "connect", "" for offsets only, ...).
    pub protocol_type: String,
    /// The state, where the coordinator says it (ListGroups v4+).
    pub state: Option<String>,
    /// The group type ("classic", "consumer", "share", "streams"), where the coordinator says
    /// it (ListGroups v5+).
    pub group_type: Option<String>,
}

impl KafkaClient {
    /// The groups `coordinator` coordinates. With `types`, only groups of those types
    /// ("classic", "consumer", "share", "streams") where the coordinator offers ListGroups v5+;
    /// an older coordinator cannot filter nor name types, and `Ok(None)` says so, as it does
    /// for a coordinator that does not offer ListGroups at all (a broker older than v5 has no
    /// share nor streams groups: both arrived with Kafka 4.x, which offers v5).
    ///
    /// A coordinator that is still loading (COORDINATOR_LOAD_IN_PROGRESS, as right after
    /// `__consumer_offsets` is created) or a failed connection is asked again with backoff until
    /// `deadline`, as Java's Admin retries a retriable ListGroups error.
    pub async fn list_groups(
        &self,
        coordinator: &GroupCoordinator,
        types: &[&str],
        deadline: &Deadline,
    ) -> Result<Option<Vec<ListedGroup>>, ClientError> {
        retry_with_backoff(
            deadline,
            || format!("ListGroups on coordinator {}", coordinator.node_id),
            || self.list_groups_once(coordinator, types),
        )
        .await
    }

    /// [`list_groups`](Self::list_groups) on every coordinator of `coordinators` at once (each
    /// asked once, however often it is named), each within `deadline`: the answer of each.
    ///
    /// ```no_run
    /// # async fn example(client: mm2_offsets::client::KafkaClient) -> Result<(), mm2_offsets::client::ClientError> {
    /// use std::time::Duration;
    /// use mm2_offsets::client::{Deadline, found_coordinators};
    ///
    /// let deadline = Deadline::after(Duration::from_secs(30));
    /// let groups = vec!["orders-app".to_string()];
    /// let known = found_coordinators(&client.find_group_coordinators(&groups, &deadline).await?);
    /// let listed = client
    ///     .list_groups_on(known.values(), &["share", "streams"], &deadline)
    ///     .await;
    /// for (coordinator, answer) in listed {
    ///     println!("{}: {:?}", coordinator.node_id, answer.map(|l| l.map(|l| l.len())));
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_groups_on<'a>(
        &self,
        coordinators: impl IntoIterator<Item = &'a GroupCoordinator>,
        types: &[&str],
        deadline: &Deadline,
    ) -> BTreeMap<GroupCoordinator, Result<Option<Vec<ListedGroup>>, ClientError>> {
        let unique: BTreeSet<&GroupCoordinator> = coordinators.into_iter().collect();
        let asked = unique
            .into_iter()
            .map(|c| async move { (c.clone(), self.list_groups(c, types, deadline).await) });
        futures::future::join_all(asked).await.into_iter().collect()
    }

    /// Every group of the cluster and its type: ListGroups of every type on every broker, each
    /// broker coordinating its own groups. The types come from ListGroups v5 and later (Kafka
    /// 3.8+); an older broker names a classic group's protocol type, so every group there is
    /// [`GroupType::Consumer`] or [`GroupType::Other`]. A broker that does not serve ListGroups
    /// lists nothing.
    ///
    /// ```no_run
    /// # async fn run(client: mm2_offsets::client::KafkaClient) -> Result<(), mm2_offsets::client::ClientError> {
    /// use mm2_offsets::client::{Deadline, GroupType};
    /// let types = client.group_types(&Deadline::after(std::time::Duration::from_secs(30))).await?;
    /// let streams = types.values().filter(|t| **t == GroupType::Streams).count();
    /// println!("{} groups, {streams} of them Kafka Streams groups", types.len());
    /// # Ok(()) }
    /// ```
    pub async fn group_types(
        &self,
        deadline: &Deadline,
    ) -> Result<BTreeMap<String, GroupType>, ClientError> {
        let mut types = BTreeMap::new();
        for broker in self.brokers() {
            let coordinator = GroupCoordinator {
                node_id: broker.node_id,
                address: broker.address(),
            };
            for group in self
                .list_groups(&coordinator, &[], deadline)
                .await?
                .unwrap_or_default()
            {
                let group_type = GroupType::of(&group);
                types.insert(group.group_id, group_type);
            }
        }
        Ok(types)
    }

    async fn list_groups_once(
        &self,
        coordinator: &GroupCoordinator,
        types: &[&str],
    ) -> Result<Option<Vec<ListedGroup>>, ClientError> {
        let conn = self.connection_to(&coordinator.address).await?;
        if conn.api_versions().get(ApiKey::ListGroups).is_none() {
            return Ok(None);
        }
        let version = conn.negotiate(ApiKey::ListGroups, responses::LIST_GROUPS_VERSIONS)?;
        if !types.is_empty() && version < FIRST_WITH_TYPE {
            return Ok(None);
        }
        let request = ListGroupsRequest::default().with_types_filter(
            types
                .iter()
                .map(|t| StrBytes::from_string(t.to_string()))
                .collect(),
        );
        let body = conn.send(&request, version).await?;
        let response =
            ListGroupsResponse::decode(body, version).map_err(|source| ClientError::Decode {
                broker: conn.address().to_string(),
                source,
            })?;
        if response.error_code != 0 {
            return Err(ClientError::broker(
                "ListGroups",
                &format!("coordinator {}", coordinator.node_id),
                conn.address(),
                response.error_code,
            ));
        }
        Ok(Some(
            response
                .groups
                .into_iter()
                .map(|g| ListedGroup {
                    group_id: g.group_id,
                    protocol_type: g.protocol_type,
                    state: g.group_state,
                    group_type: g.group_type,
                })
                .collect(),
        ))
    }
}

/// Why apply must not write a group of `group_type`, or `None` for a consumer group.
pub fn not_a_consumer_group(group_type: &str) -> Option<String> {
    match group_type {
        "share" => Some(
            "group is a share group (KIP-932): its progress is share-partition state, not committed consumer offsets; apply writes consumer groups only".to_string(),
        ),
        "streams" => Some(
            "group is a streams group (KIP-1071): its offsets belong to a Kafka Streams application and move with its internal topics; reset it with Kafka's streams reset tool, not apply".to_string(),
        ),
        _ => None,
    }
}

/// What kind of group a group id is on a cluster, as ListGroups says it: the type every output
/// row carries (`group_type`). MirrorMaker 2 checkpoints consumer groups only (its
/// `ListGroupsOptions.forConsumerGroups()`: types classic and consumer, protocol types "" and
/// "consumer"), so a row from a checkpoint is always [`GroupType::Consumer`].
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum GroupType {
    /// A consumer group: a classic group of protocol type "consumer" or "" (offsets only), or a
    /// KIP-848 consumer group. The default: what a checkpoint or an unlisted group id is.
    #[default]
    Consumer,
    /// A Kafka Streams group (KIP-1071, `group.protocol=streams`).
    Streams,
    /// A share group (KIP-932): start offsets, not committed offsets.
    Share,
    /// Any other type, named as the cluster names it: a group type this version does not know,
    /// or the protocol type of a classic group that is not a consumer's (`connect`).
    Other(Box<str>),
}

impl GroupType {
    /// The type of a listed group: its group type where the coordinator says it (ListGroups
    /// v5+), its protocol type otherwise.
    pub fn of(group: &ListedGroup) -> GroupType {
        match group.group_type.as_deref() {
            Some("consumer") => GroupType::Consumer,
            Some("streams") => GroupType::Streams,
            Some("share") => GroupType::Share,
            Some("classic") | None => match group.protocol_type.as_str() {
                "consumer" | "" => GroupType::Consumer,
                other => GroupType::Other(other.into()),
            },
            Some(other) => GroupType::Other(other.into()),
        }
    }

    /// The name in reports: `consumer`, `streams`, `share`, or the cluster's own name.
    pub fn name(&self) -> &str {
        match self {
            GroupType::Consumer => "consumer",
            GroupType::Streams => "streams",
            GroupType::Share => "share",
            GroupType::Other(name) => name,
        }
    }

    /// Whether this is a consumer group, the only type MirrorMaker 2 checkpoints and apply
    /// writes as committed offsets.
    pub fn is_consumer(&self) -> bool {
        matches!(self, GroupType::Consumer)
    }
}

impl std::fmt::Display for GroupType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for GroupType {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for GroupType {
    /// The inverse of `Serialize`: a plan or undo file read back keeps its groups' types.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(GroupType::from_name(&name))
    }
}

impl GroupType {
    /// The type of `name` as [`name`](Self::name) writes it (plans and undo files).
    pub fn from_name(name: &str) -> GroupType {
        match name {
            "consumer" => GroupType::Consumer,
            "streams" => GroupType::Streams,
            "share" => GroupType::Share,
            other => GroupType::Other(other.into()),
        }
    }
}

/// The consumer type, borrowed where a row has no type of its own.
pub(crate) static CONSUMER: GroupType = GroupType::Consumer;

#[cfg(test)]
mod group_type_tests {
    use super::*;

    fn listed(protocol_type: &str, group_type: Option<&str>) -> ListedGroup {
        ListedGroup {
            group_id: "g".into(),
            protocol_type: protocol_type.into(),
            state: None,
            group_type: group_type.map(str::to_string),
        }
    }

    #[test]
    fn each_listed_group_gets_its_type() {
        let cases = [
            (("consumer", Some("classic")), "consumer"),
            (("", Some("classic")), "consumer"),
            (("consumer", Some("consumer")), "consumer"),
            (("streams", Some("streams")), "streams"),
            (("share", Some("share")), "share"),
            (("connect", Some("classic")), "connect"),
            (("", Some("future")), "future"),
            // Before ListGroups v5: the protocol type alone.
            (("consumer", None), "consumer"),
            (("", None), "consumer"),
            (("connect", None), "connect"),
        ];
        for ((protocol, group_type), want) in cases {
            let t = GroupType::of(&listed(protocol, group_type));
            assert_eq!(t.name(), want, "{protocol:?} {group_type:?}");
            assert_eq!(t.is_consumer(), want == "consumer");
        }
    }
}
