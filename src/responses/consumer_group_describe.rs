//! ConsumerGroupDescribe response (API key 69, KIP-848): a new-protocol group's state and
//! members. Always flexible.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_ConsumerGroupDescribe>
//! - KIP-848 (the next generation consumer rebalance protocol); v1 adds the member type
//!   (KIP-1099: classic members of a consumer group)

use bytes::Bytes;

use super::{array, finish, start};
use crate::wire::decode::{DecodeError, Decoder};

/// A decoded ConsumerGroupDescribe response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupDescribeResponse {
    /// How long the broker throttled the request.
    pub throttle_time_ms: i32,
    /// One entry per group asked about.
    pub groups: Vec<ConsumerGroup>,
}

/// One group of a ConsumerGroupDescribe response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroup {
    /// Group-level error, e.g. GROUP_ID_NOT_FOUND for a group that is not a consumer group.
    pub error_code: i16,
    /// The broker's message for the error, if any.
    pub error_message: Option<String>,
    /// The group id.
    pub group_id: String,
    /// The state: Empty, Assigning, Reconciling, Stable, Dead.
    pub group_state: String,
    /// The group epoch.
    pub group_epoch: i32,
    /// The assignment epoch.
    pub assignment_epoch: i32,
    /// The server-side assignor.
    pub assignor_name: String,
    /// The members.
    pub members: Vec<ConsumerMember>,
    /// The operations the requester may perform, as a bit set.
    pub authorized_operations: i32,
}

/// One member of a new-protocol group. Its assignments are checked and counted, not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerMember {
    /// The member id.
    pub member_id: String,
    /// The static member's instance id, if any.
    pub instance_id: Option<String>,
    /// The member epoch.
    pub member_epoch: i32,
    /// The member's client id.
    pub client_id: String,
    /// The member's host.
    pub client_host: String,
    /// Partitions currently assigned to the member.
    pub assigned_partitions: usize,
    /// Member type (v1+): 1 = consumer protocol, 0 = classic protocol, -1 = unknown / v0.
    pub member_type: i8,
}

impl ConsumerGroupDescribeResponse {
    /// Decodes a ConsumerGroupDescribe response body sent in answer to a request at `version`.
    ///
    /// Fails on versions outside [`super::CONSUMER_GROUP_DESCRIBE_VERSIONS`], on any malformed
    /// or truncated field, and on trailing bytes.
    pub fn decode(body: Bytes, version: i16) -> Result<Self, DecodeError> {
        let mut d = start(
            body,
            "ConsumerGroupDescribe",
            version,
            &super::CONSUMER_GROUP_DESCRIBE_VERSIONS,
        )?;
        let throttle_time_ms = d.i32()?;
        // error, message, id, state, 2 epochs, assignor, members, operations, tags.
        let groups = array(&mut d, true, 2 + 1 + 1 + 1 + 8 + 1 + 1 + 4 + 1, read_group)?;
        d.tagged_fields()?;
        finish(&d)?;
        Ok(ConsumerGroupDescribeResponse {
            throttle_time_ms,
            groups,
        })
    }
}

fn read_group(d: &mut Decoder) -> Result<ConsumerGroup, DecodeError> {
    let error_code = d.i16()?;
    let error_message = d.nullable_string(true)?;
    let group_id = d.string(true)?;
    let group_state = d.string(true)?;
    let group_epoch = d.i32()?;
    let assignment_epoch = d.i32()?;
    let assignor_name = d.string(true)?;
    // member id, instance, rack, epoch, client id, host, topics, regex, 2 assignments, tags.
    let members = array(d, true, 3 + 4 + 2 + 1 + 1 + 2 * 2 + 1, read_member)?;
    let authorized_operations = d.i32()?;
    d.tagged_fields()?;
    Ok(ConsumerGroup {
        error_code,
        error_message,
        group_id,
        group_state,
        group_epoch,
        assignment_epoch,
        assignor_name,
        members,
        authorized_operations,
    })
}

fn read_member(d: &mut Decoder) -> Result<ConsumerMember, DecodeError> {
    let member_id = d.string(true)?;
    let instance_id = d.nullable_string(true)?;
    let _rack_id = d.nullable_string(true)?;
    let member_epoch = d.i32()?;
    let client_id = d.string(true)?;
    let client_host = d.string(true)?;
    let topics = d.array_len(true, 1)?;
    for _ in 0..topics {
        d.nullable_string_bytes(true)?;
    }
    let _regex = d.nullable_string_bytes(true)?;
    let assigned_partitions = read_assignment(d)?;
    let _target = read_assignment(d)?;
    let member_type = if d.version() >= 1 { d.i8()? } else { -1 };
    d.tagged_fields()?;
    Ok(ConsumerMember {
        member_id,
        instance_id,
        member_epoch,
        client_id,
        client_host,
        assigned_partitions,
        member_type,
    })
}

/// Reads an Assignment struct and returns how many partitions it holds.
fn read_assignment(d: &mut Decoder) -> Result<usize, DecodeError> {
    let mut partitions = 0usize;
    // topic id, name, partitions, tags.
    let topics = d.array_len(true, 16 + 1 + 1 + 1)?;
    for _ in 0..topics {
        d.uuid()?;
        d.nullable_string_bytes(true)?;
        let n = d.array_len(true, 4)?;
        d.skip(4 * n, "partition indexes")?;
        partitions = partitions.saturating_add(n);
        d.tagged_fields()?;
    }
    d.tagged_fields()?;
    Ok(partitions)
}

#[cfg(test)]
mod tests;
