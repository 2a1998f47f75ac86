//! The fake cluster's group coordinator: FindCoordinator (v4, batched), DescribeGroups (v5),
//! OffsetFetch (v8, batched) and OffsetCommit (v8), for groups that hold committed offsets and a
//! member count. Each group has one coordinating broker; the others answer NOT_COORDINATOR, as a
//! real broker does after `__consumer_offsets` leadership moved.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartitions, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{
    BrokerId, DescribeGroupsRequest, DescribeGroupsResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
    OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::{Fault, Shared};

/// NOT_COORDINATOR.
const NOT_COORDINATOR: i16 = 16;
/// UNKNOWN_MEMBER_ID: an admin commit to a group with members.
const UNKNOWN_MEMBER_ID: i16 = 25;

/// A group as its coordinator holds it.
#[derive(Default)]
pub(super) struct FakeGroup {
    /// The coordinating broker.
    pub(super) coordinator: i32,
    /// Members (a group with members refuses admin commits).
    pub(super) members: usize,
    /// Committed offsets by (topic, partition).
    pub(super) offsets: BTreeMap<(String, i32), i64>,
}

/// The error a group request for `group` gets on `node`: the injected one, else
/// NOT_COORDINATOR when `node` does not coordinate it.
fn group_error(shared: &Shared, node: i32, group: &str, error: i16) -> i16 {
    if error != 0 {
        return error;
    }
    let coordinator = shared.lock().groups.get(group).map_or(0, |g| g.coordinator);
    if coordinator == node {
        0
    } else {
        NOT_COORDINATOR
    }
}

pub(super) fn find_coordinator(
    shared: &Shared,
    request: &FindCoordinatorRequest,
    error: i16,
) -> FindCoordinatorResponse {
    let state = shared.lock();
    let coordinators = request
        .coordinator_keys
        .iter()
        .map(|key| {
            let node = state.groups.get(key.as_str()).map_or(0, |g| g.coordinator);
            let port = shared
                .brokers
                .iter()
                .find(|(id, _)| *id == node)
                .map_or(0, |b| b.1);
            let base = Coordinator::default().with_key(key.clone());
            if error != 0 {
                base.with_error_code(error).with_node_id(BrokerId(-1))
            } else {
                base.with_node_id(BrokerId(node))
                    .with_host(StrBytes::from_static_str("127.0.0.1"))
                    .with_port(i32::from(port))
            }
        })
        .collect();
    FindCoordinatorResponse::default().with_coordinators(coordinators)
}

pub(super) fn describe_groups(
    shared: &Shared,
    node: i32,
    request: &DescribeGroupsRequest,
    error: i16,
) -> DescribeGroupsResponse {
    let groups = request
        .groups
        .iter()
        .map(|id| {
            let base = DescribedGroup::default().with_group_id(id.clone());
            let code = group_error(shared, node, id, error);
            if code != 0 {
                return base.with_error_code(code);
            }
            let state = shared.lock();
            match state.groups.get(id.as_str()) {
                None => base.with_group_state(StrBytes::from_static_str("Dead")),
                Some(g) if g.members == 0 => base
                    .with_group_state(StrBytes::from_static_str("Empty"))
                    .with_protocol_type(StrBytes::from_static_str("consumer")),
                Some(g) => base
                    .with_group_state(StrBytes::from_static_str("Stable"))
                    .with_protocol_type(StrBytes::from_static_str("consumer"))
                    .with_members(vec![DescribedGroupMember::default(); g.members]),
            }
        })
        .collect();
    DescribeGroupsResponse::default().with_groups(groups)
}

pub(super) fn offset_fetch(
    shared: &Shared,
    node: i32,
    request: &OffsetFetchRequest,
    error: i16,
) -> OffsetFetchResponse {
    let groups = request
        .groups
        .iter()
        .map(|g| {
            let base = OffsetFetchResponseGroup::default().with_group_id(g.group_id.clone());
            let code = group_error(shared, node, &g.group_id, error);
            if code != 0 {
                return base.with_error_code(code);
            }
            let state = shared.lock();
            let mut topics: BTreeMap<&str, Vec<OffsetFetchResponsePartitions>> = BTreeMap::new();
            for ((topic, partition), offset) in state
                .groups
                .get(g.group_id.as_str())
                .map(|g| &g.offsets)
                .into_iter()
                .flatten()
            {
                topics.entry(topic).or_default().push(
                    OffsetFetchResponsePartitions::default()
                        .with_partition_index(*partition)
                        .with_committed_offset(*offset)
                        .with_committed_leader_epoch(-1),
                );
            }
            base.with_topics(
                topics
                    .into_iter()
                    .map(|(name, partitions)| {
                        OffsetFetchResponseTopics::default()
                            .with_name(TopicName(StrBytes::from_string(name.to_string())))
                            .with_partitions(partitions)
                    })
                    .collect(),
            )
        })
        .collect();
    OffsetFetchResponse::default().with_groups(groups)
}

/// Writes what the coordinator accepts and answers per partition. `fault` may refuse the whole
/// commit with a code (nothing written) or one partition ([`Fault::PartitionError`]).
pub(super) fn offset_commit(
    shared: &Shared,
    node: i32,
    request: &OffsetCommitRequest,
    fault: Option<Fault>,
) -> OffsetCommitResponse {
    let whole = match fault {
        Some(Fault::Error(code)) => code,
        _ => 0,
    };
    let group = request.group_id.as_str();
    let mut code = group_error(shared, node, group, whole);
    let mut state = shared.lock();
    let entry = state.groups.entry(group.to_string()).or_default();
    if code == 0 && entry.members > 0 {
        code = UNKNOWN_MEMBER_ID;
    }
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let code = match fault {
                        _ if code != 0 => code,
                        Some(Fault::PartitionError(partition, c))
                            if partition == p.partition_index =>
                        {
                            c
                        }
                        _ => {
                            entry.offsets.insert(
                                (t.name.to_string(), p.partition_index),
                                p.committed_offset,
                            );
                            0
                        }
                    };
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(code)
                })
                .collect();
            OffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}
