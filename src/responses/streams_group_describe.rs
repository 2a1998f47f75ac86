//! StreamsGroupDescribe response (API key 89, KIP-1071): a Kafka Streams group's state, its
//! members and the topology the coordinator initialized for it. Always flexible.
//!
//! `kafka-protocol` 0.18 has no StreamsGroupDescribe, so the request is encoded by
//! our own small encoder in the wire layer and the answer decoded here. Members' task offsets,
//! client tags and assignments are checked and counted, not kept: apply needs to know whether
//! the group has members and which topics its topology reads.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_StreamsGroupDescribe>
//! - KIP-1071 (Streams rebalance protocol); Kafka's `StreamsGroupDescribeResponse.json`

use bytes::Bytes;

use super::{array, finish, start};
use crate::wire::decode::{DecodeError, Decoder};

/// A decoded StreamsGroupDescribe response.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamsGroupDescribeResponse {
    /// How long the broker throttled the request.
    pub throttle_time_ms: i32,
    /// One entry per group asked about.
    pub groups: Vec<StreamsGroup>,
}

/// One group of a StreamsGroupDescribe response.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamsGroup {
    /// Group-level error: GROUP_ID_NOT_FOUND for an id that is no Streams group,
    /// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, GROUP_AUTHORIZATION_FAILED, ...
    pub error_code: i16,
    /// The broker's message for the error, if any.
    pub error_message: Option<String>,
    /// The group id.
    pub group_id: String,
    /// The state as the coordinator names it (`Empty`, `NotReady`, `Assigning`,
    /// `Reconciling`, `Stable`, `Dead`).
    pub group_state: String,
    /// The group epoch.
    pub group_epoch: i32,
    /// The assignment epoch.
    pub assignment_epoch: i32,
    /// The topology initialized for the group (`None`: not sent, e.g. with an error).
    pub topology: Option<StreamsTopology>,
    /// The members.
    pub members: Vec<StreamsMember>,
    /// The operations the requester may perform, as a bit set (`i32::MIN`: not known).
    pub authorized_operations: i32,
}

/// The topology a Streams group was initialized with.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamsTopology {
    /// The topology epoch.
    pub epoch: i32,
    /// Its subtopologies (empty also when the coordinator sends null: not configured yet, or
    /// source topics missing).
    pub subtopologies: Vec<Subtopology>,
}

/// One subtopology: what it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Subtopology {
    /// The subtopology id (deterministic from the topology, e.g. `0`).
    pub subtopology_id: String,
    /// The user topics it reads.
    pub source_topics: Vec<String>,
    /// The internal repartition topics it reads.
    pub repartition_source_topics: Vec<String>,
}

/// One member of a Streams group. Its tasks and offsets are checked and counted, not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamsMember {
    /// The member id.
    pub member_id: String,
    /// The member epoch.
    pub member_epoch: i32,
    /// The static member's instance id, if any.
    pub instance_id: Option<String>,
    /// The member's client id.
    pub client_id: String,
    /// The member's host.
    pub client_host: String,
    /// The topology epoch the member runs.
    pub topology_epoch: i32,
    /// The Streams process the member belongs to.
    pub process_id: String,
    /// Active tasks currently assigned (counted by partition).
    pub active_tasks: usize,
    /// Whether the member is a classic member not upgraded yet.
    pub is_classic: bool,
}

impl StreamsGroupDescribeResponse {
    /// Decodes a StreamsGroupDescribe response body sent in answer to a request at `version`.
    ///
    /// Fails on versions outside [`super::STREAMS_GROUP_DESCRIBE_VERSIONS`], on any malformed
    /// or truncated field, and on trailing bytes.
    pub fn decode(body: Bytes, version: i16) -> Result<Self, DecodeError> {
        let mut d = start(
            body,
            "StreamsGroupDescribe",
            version,
            &super::STREAMS_GROUP_DESCRIBE_VERSIONS,
        )?;
        let throttle_time_ms = d.i32()?;
        // error, message, id, state, 2 epochs, topology, members, operations, tags.
        let groups = array(&mut d, true, 2 + 1 + 1 + 1 + 8 + 1 + 1 + 4 + 1, read_group)?;
        d.tagged_fields()?;
        finish(&d)?;
        Ok(StreamsGroupDescribeResponse {
            throttle_time_ms,
            groups,
        })
    }
}

fn read_group(d: &mut Decoder) -> Result<StreamsGroup, DecodeError> {
    let error_code = d.i16()?;
    let error_message = d.nullable_string(true)?;
    let group_id = d.string(true)?;
    let group_state = d.string(true)?;
    let group_epoch = d.i32()?;
    let assignment_epoch = d.i32()?;
    let topology = if present(d)? {
        Some(read_topology(d)?)
    } else {
        None
    };
    // id, epoch, instance, rack, client id, host, topology epoch, process, endpoint, tags,
    // 2 task offset arrays, 2 assignments (3 arrays + tags each), is_classic, tags.
    let members = array(
        d,
        true,
        1 + 4 + 1 + 1 + 1 + 1 + 4 + 1 + 1 + 1 + 2 + 8 + 1 + 1,
        read_member,
    )?;
    let authorized_operations = d.i32()?;
    d.tagged_fields()?;
    Ok(StreamsGroup {
        error_code,
        error_message,
        group_id,
        group_state,
        group_epoch,
        assignment_epoch,
        topology,
        members,
        authorized_operations,
    })
}

/// A nullable struct's marker: -1 is null, anything else (1) a struct follows.
fn present(d: &mut Decoder) -> Result<bool, DecodeError> {
    Ok(d.i8()? >= 0)
}

fn read_topology(d: &mut Decoder) -> Result<StreamsTopology, DecodeError> {
    let epoch = d.i32()?;
    // Nullable array: null reads as empty. Id, 2 string arrays, 2 TopicInfo arrays, tags.
    let subtopologies = array(d, true, 1 + 2 + 2 + 1, read_subtopology)?;
    d.tagged_fields()?;
    Ok(StreamsTopology {
        epoch,
        subtopologies,
    })
}

fn read_subtopology(d: &mut Decoder) -> Result<Subtopology, DecodeError> {
    let subtopology_id = d.string(true)?;
    let source_topics = strings(d)?;
    let _repartition_sinks = strings(d)?;
    let _changelogs = array(d, true, 1 + 4 + 2 + 1 + 1, read_topic_info)?;
    let repartition_source_topics = array(d, true, 1 + 4 + 2 + 1 + 1, read_topic_info)?;
    d.tagged_fields()?;
    Ok(Subtopology {
        subtopology_id,
        source_topics,
        repartition_source_topics,
    })
}

fn strings(d: &mut Decoder) -> Result<Vec<String>, DecodeError> {
    array(d, true, 1, |d| d.string(true))
}

/// A TopicInfo: its name (partitions, replication factor and configs are checked, not kept).
fn read_topic_info(d: &mut Decoder) -> Result<String, DecodeError> {
    let name = d.string(true)?;
    let _partitions = d.i32()?;
    let _replication_factor = d.i16()?;
    let configs = d.array_len(true, 3)?;
    for _ in 0..configs {
        read_key_value(d)?;
    }
    d.tagged_fields()?;
    Ok(name)
}

fn read_key_value(d: &mut Decoder) -> Result<(), DecodeError> {
    d.nullable_string_bytes(true)?;
    d.nullable_string_bytes(true)?;
    d.tagged_fields()
}

fn read_member(d: &mut Decoder) -> Result<StreamsMember, DecodeError> {
    let member_id = d.string(true)?;
    let member_epoch = d.i32()?;
    let instance_id = d.nullable_string(true)?;
    let _rack_id = d.nullable_string(true)?;
    let client_id = d.string(true)?;
    let client_host = d.string(true)?;
    let topology_epoch = d.i32()?;
    let process_id = d.string(true)?;
    if present(d)? {
        // Endpoint: host, port (uint16), tags.
        d.nullable_string_bytes(true)?;
        d.i16()?;
        d.tagged_fields()?;
    }
    let tags = d.array_len(true, 3)?;
    for _ in 0..tags {
        read_key_value(d)?;
    }
    for _ in 0..2 {
        // TaskOffsets, TaskEndOffsets: subtopology, partition, offset, tags.
        let n = d.array_len(true, 1 + 4 + 8 + 1)?;
        for _ in 0..n {
            d.nullable_string_bytes(true)?;
            d.i32()?;
            d.i64()?;
            d.tagged_fields()?;
        }
    }
    let active_tasks = read_assignment(d)?;
    let _target = read_assignment(d)?;
    let is_classic = d.bool()?;
    d.tagged_fields()?;
    Ok(StreamsMember {
        member_id,
        member_epoch,
        instance_id,
        client_id,
        client_host,
        topology_epoch,
        process_id,
        active_tasks,
        is_classic,
    })
}

/// Reads an Assignment (active, standby, warm-up tasks) and returns how many active task
/// partitions it holds.
fn read_assignment(d: &mut Decoder) -> Result<usize, DecodeError> {
    let mut counts = [0usize; 3];
    for count in &mut counts {
        // TaskIds: subtopology, partitions, tags.
        let n = d.array_len(true, 1 + 1 + 1)?;
        for _ in 0..n {
            d.nullable_string_bytes(true)?;
            let partitions = d.array_len(true, 4)?;
            d.skip(4 * partitions, "task partitions")?;
            *count = count.saturating_add(partitions);
            d.tagged_fields()?;
        }
    }
    d.tagged_fields()?;
    Ok(counts[0])
}

#[cfg(test)]
mod tests;
