//! The fake cluster's group coordinator: FindCoordinator (batched from v4, one key below),
//! ConsumerGroupDescribe, DescribeGroups, OffsetFetch (batched from v8, one group below; all
//! partitions or named ones) and OffsetCommit, for groups that hold committed offsets and a
//! member count. Each group has one coordinating broker; the others answer NOT_COORDINATOR, as a
//! real broker does after `__consumer_offsets` leadership moved. Every group request is logged
//! with its group ids ([`FakeCluster::asked`](super::FakeCluster::asked)).

use std::collections::BTreeMap;

use kafka_protocol::messages::consumer_group_describe_response::{
    DescribedGroup as ConsumerDescribedGroup, Member,
};
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
    DescribeGroupsRequest, DescribeGroupsResponse, FindCoordinatorRequest, FindCoordinatorResponse,
    OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::{Fault, Shared, State};

/// NOT_COORDINATOR.
const NOT_COORDINATOR: i16 = 16;
/// UNKNOWN_MEMBER_ID: an admin commit to a group with members.
const UNKNOWN_MEMBER_ID: i16 = 25;
/// GROUP_ID_NOT_FOUND: ConsumerGroupDescribe for a group that is not a consumer group.
const GROUP_ID_NOT_FOUND: i16 = 69;

/// A group as its coordinator holds it.
#[derive(Default)]
pub(super) struct FakeGroup {
    /// The coordinating broker.
    pub(super) coordinator: i32,
    /// Members (a group with members refuses admin commits).
    pub(super) members: usize,
    /// A consumer-protocol (KIP-848) group rather than a classic one.
    pub(super) consumer: bool,
    /// Committed offsets by (topic, partition).
    pub(super) offsets: BTreeMap<(String, i32), i64>,
    /// The metadata committed with them (none: empty).
    pub(super) metadata: BTreeMap<(String, i32), String>,
}

/// The error a group request of `api` for `group` gets on `node`: the one injected for the
/// whole request, else one injected for the group, else NOT_COORDINATOR when `node` does not
/// coordinate it.
fn group_error(state: &mut State, api: ApiKey, node: i32, group: &str, error: i16) -> i16 {
    if error != 0 {
        return error;
    }
    let injected = state.group_fault(api, group, None);
    if injected != 0 {
        return injected;
    }
    let coordinator = state.groups.get(group).map_or(0, |g| g.coordinator);
    if coordinator == node {
        0
    } else {
        NOT_COORDINATOR
    }
}

fn log(state: &mut State, api: ApiKey, node: i32, groups: Vec<String>) {
    state.asked.push((api as i16, node, groups));
}

pub(super) fn find_coordinator(
    shared: &Shared,
    node: i32,
    request: &FindCoordinatorRequest,
    version: i16,
    error: i16,
) -> FindCoordinatorResponse {
    let mut state = shared.lock();
    let keys: Vec<String> = if version >= 4 {
        request
            .coordinator_keys
            .iter()
            .map(|k| k.to_string())
            .collect()
    } else {
        vec![request.key.to_string()]
    };
    log(&mut state, ApiKey::FindCoordinator, node, keys.clone());
    let coordinators: Vec<Coordinator> = keys
        .iter()
        .map(|key| {
            let node = state.groups.get(key.as_str()).map_or(0, |g| g.coordinator);
            let port = shared
                .brokers
                .iter()
                .find(|(id, _)| *id == node)
                .map_or(0, |b| b.1);
            let code = match error {
                0 => state.group_fault(ApiKey::FindCoordinator, key, None),
                e => e,
            };
            let base = Coordinator::default().with_key(StrBytes::from_string(key.clone()));
            if code != 0 {
                base.with_error_code(code).with_node_id(BrokerId(-1))
            } else {
                base.with_node_id(BrokerId(node))
                    .with_host(StrBytes::from_static_str("127.0.0.1"))
                    .with_port(i32::from(port))
            }
        })
        .collect();
    if version >= 4 {
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let c = coordinators.into_iter().next().unwrap_or_default();
    FindCoordinatorResponse::default()
        .with_error_code(c.error_code)
        .with_node_id(c.node_id)
        .with_host(c.host)
        .with_port(c.port)
}

pub(super) fn consumer_group_describe(
    shared: &Shared,
    node: i32,
    request: &ConsumerGroupDescribeRequest,
    error: i16,
) -> ConsumerGroupDescribeResponse {
    let mut state = shared.lock();
    let ids: Vec<String> = request.group_ids.iter().map(|g| g.to_string()).collect();
    log(&mut state, ApiKey::ConsumerGroupDescribe, node, ids);
    let twice = state.describe_twice;
    let mut groups = Vec::new();
    for id in &request.group_ids {
        let base = ConsumerDescribedGroup::default().with_group_id(id.clone());
        if twice {
            groups.push(base.clone().with_error_code(GROUP_ID_NOT_FOUND));
        }
        let code = group_error(&mut state, ApiKey::ConsumerGroupDescribe, node, id, error);
        let answer = match state.groups.get(id.as_str()) {
            _ if code != 0 => base.with_error_code(code),
            Some(g) if g.consumer => base
                .with_group_state(StrBytes::from_static_str(if g.members == 0 {
                    "Empty"
                } else {
                    "Stable"
                }))
                .with_members(vec![Member::default(); g.members]),
            // Not a consumer group: a classic one, or one the coordinator has never seen.
            _ => base.with_error_code(GROUP_ID_NOT_FOUND),
        };
        groups.push(answer);
    }
    ConsumerGroupDescribeResponse::default().with_groups(groups)
}

pub(super) fn describe_groups(
    shared: &Shared,
    node: i32,
    request: &DescribeGroupsRequest,
    error: i16,
) -> DescribeGroupsResponse {
    let mut state = shared.lock();
    let ids: Vec<String> = request.groups.iter().map(|g| g.to_string()).collect();
    log(&mut state, ApiKey::DescribeGroups, node, ids);
    let groups = request
        .groups
        .iter()
        .map(|id| {
            let base = DescribedGroup::default().with_group_id(id.clone());
            let code = group_error(&mut state, ApiKey::DescribeGroups, node, id, error);
            if code != 0 {
                return base.with_error_code(code);
            }
            match state.groups.get(id.as_str()) {
                // A 4.x coordinator's answer for a new-protocol group: "Dead", no members,
                // whatever the group's real state.
                None => base.with_group_state(StrBytes::from_static_str("Dead")),
                Some(g) if g.consumer => base.with_group_state(StrBytes::from_static_str("Dead")),
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

/// One group's committed offsets as the coordinator answers them: `wanted` names the
/// partitions (each answered, -1 when none), `None` means every partition with an offset.
/// A partition fault answers that partition with its code and offset -1.
/// One partition of an OffsetFetch answer: (partition, offset, error code, metadata).
type FetchedPartition = (i32, i64, i16, Option<String>);

fn committed_partitions(
    state: &mut State,
    group: &str,
    wanted: Option<Vec<(String, i32)>>,
) -> BTreeMap<String, Vec<FetchedPartition>> {
    let (held, metadata) = state
        .groups
        .get(group)
        .map(|g| (g.offsets.clone(), g.metadata.clone()))
        .unwrap_or_default();
    let partitions: Vec<((String, i32), i64)> = match wanted {
        None => held.into_iter().collect(),
        Some(wanted) => wanted
            .into_iter()
            .map(|key| {
                let offset = held.get(&key).copied().unwrap_or(-1);
                (key, offset)
            })
            .collect(),
    };
    let mut by_topic: BTreeMap<String, Vec<FetchedPartition>> = BTreeMap::new();
    for ((topic, partition), offset) in partitions {
        let code = state.group_fault(ApiKey::OffsetFetch, group, Some((&topic, partition)));
        let offset = if code != 0 { -1 } else { offset };
        let committed = metadata.get(&(topic.clone(), partition)).cloned();
        by_topic
            .entry(topic)
            .or_default()
            .push((partition, offset, code, committed));
    }
    by_topic
}

/// The (topic, partition)s an OffsetFetch names.
fn named<'a>(topics: impl Iterator<Item = (&'a str, &'a [i32])>) -> Vec<(String, i32)> {
    topics
        .flat_map(|(name, partitions)| partitions.iter().map(move |&p| (name.to_string(), p)))
        .collect()
}

pub(super) fn offset_fetch(
    shared: &Shared,
    node: i32,
    request: &OffsetFetchRequest,
    version: i16,
    error: i16,
) -> OffsetFetchResponse {
    let mut state = shared.lock();
    if version < 8 {
        let group = request.group_id.to_string();
        log(&mut state, ApiKey::OffsetFetch, node, vec![group.clone()]);
        let code = group_error(&mut state, ApiKey::OffsetFetch, node, &group, error);
        if code != 0 {
            return OffsetFetchResponse::default().with_error_code(code);
        }
        let wanted = request.topics.as_ref().map(|topics| {
            named(
                topics
                    .iter()
                    .map(|t| (t.name.as_str(), &t.partition_indexes[..])),
            )
        });
        let topics = committed_partitions(&mut state, &group, wanted)
            .into_iter()
            .map(|(name, partitions)| {
                OffsetFetchResponseTopic::default()
                    .with_name(TopicName(StrBytes::from_string(name)))
                    .with_partitions(
                        partitions
                            .into_iter()
                            .map(|(p, offset, code, metadata)| {
                                OffsetFetchResponsePartition::default()
                                    .with_partition_index(p)
                                    .with_committed_offset(offset)
                                    .with_metadata(metadata.map(StrBytes::from_string))
                                    .with_committed_leader_epoch(-1)
                                    .with_error_code(code)
                            })
                            .collect(),
                    )
            })
            .collect();
        return OffsetFetchResponse::default().with_topics(topics);
    }
    let ids: Vec<String> = request
        .groups
        .iter()
        .map(|g| g.group_id.to_string())
        .collect();
    log(&mut state, ApiKey::OffsetFetch, node, ids);
    let groups = request
        .groups
        .iter()
        .map(|g| {
            let base = OffsetFetchResponseGroup::default().with_group_id(g.group_id.clone());
            let code = group_error(&mut state, ApiKey::OffsetFetch, node, &g.group_id, error);
            if code != 0 {
                return base.with_error_code(code);
            }
            let wanted = g.topics.as_ref().map(|topics| {
                named(
                    topics
                        .iter()
                        .map(|t| (t.name.as_str(), &t.partition_indexes[..])),
                )
            });
            base.with_topics(
                committed_partitions(&mut state, &g.group_id, wanted)
                    .into_iter()
                    .map(|(name, partitions)| {
                        OffsetFetchResponseTopics::default()
                            .with_name(TopicName(StrBytes::from_string(name)))
                            .with_partitions(
                                partitions
                                    .into_iter()
                                    .map(|(p, offset, code, metadata)| {
                                        OffsetFetchResponsePartitions::default()
                                            .with_partition_index(p)
                                            .with_committed_offset(offset)
                                            .with_metadata(metadata.map(StrBytes::from_string))
                                            .with_committed_leader_epoch(-1)
                                            .with_error_code(code)
                                    })
                                    .collect(),
                            )
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
    let mut state = shared.lock();
    log(
        &mut state,
        ApiKey::OffsetCommit,
        node,
        vec![group.to_string()],
    );
    let mut code = group_error(&mut state, ApiKey::OffsetCommit, node, group, whole);
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
                            let key = (t.name.to_string(), p.partition_index);
                            let metadata = p.committed_metadata.as_deref().unwrap_or("");
                            entry.metadata.insert(key.clone(), metadata.to_string());
                            entry.offsets.insert(key, p.committed_offset);
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
