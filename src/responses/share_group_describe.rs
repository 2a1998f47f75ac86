//! ShareGroupDescribe response (API key 77, KIP-932): a share group's state and members, what
//! `kafka-share-groups.sh --describe --members` shows. `apply` asks it before writing a share
//! group's start offsets: AlterShareGroupOffsets is refused (GROUP_NOT_EMPTY) while the group
//! has members, and we refuse first, with the members named. Always flexible; Kafka 4.1 removed
//! the early-access v0.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_ShareGroupDescribe>
//! - KIP-932 (queues for Kafka: share groups)

use bytes::Bytes;

use super::{array, finish, start};
use crate::wire::decode::{DecodeError, Decoder};

/// A decoded ShareGroupDescribe response.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShareGroupDescribeResponse {
    /// How long the broker throttled the request.
    pub throttle_time_ms: i32,
    /// One entry per group asked about.
    pub groups: Vec<ShareGroup>,
}

/// One group of a ShareGroupDescribe response.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShareGroup {
    /// Group-level error: GROUP_ID_NOT_FOUND for an id that is no group, or a group of another
    /// type (Kafka answers "Group x is not a share group." with it).
    pub error_code: i16,
    /// The broker's message for the error, if any.
    pub error_message: Option<String>,
    /// The group id.
    pub group_id: String,
    /// The state: Empty, Stable, Dead.
    pub group_state: String,
    /// The group epoch.
    pub group_epoch: i32,
    /// The assignment epoch.
    pub assignment_epoch: i32,
    /// The server-side assignor.
    pub assignor_name: String,
    /// The members.
    pub members: Vec<ShareMember>,
    /// The operations the requester may perform, as a bit set.
    pub authorized_operations: i32,
}

/// One member of a share group. Its assignment is checked and counted, not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShareMember {
    /// The member id.
    pub member_id: String,
    /// The member's rack, if any.
    pub rack_id: Option<String>,
    /// The member epoch.
    pub member_epoch: i32,
    /// The member's client id.
    pub client_id: String,
    /// The member's host.
    pub client_host: String,
    /// Topics the member subscribes to.
    pub subscribed_topics: Vec<String>,
    /// Partitions currently assigned to the member.
    pub assigned_partitions: usize,
}

impl ShareGroupDescribeResponse {
    /// Decodes a ShareGroupDescribe response body sent in answer to a request at `version`.
    ///
    /// Fails on versions outside [`super::SHARE_GROUP_DESCRIBE_VERSIONS`], on any malformed
    /// or truncated field, and on trailing bytes.
    pub fn decode(body: Bytes, version: i16) -> Result<Self, DecodeError> {
        let mut d = start(
            body,
            "ShareGroupDescribe",
            version,
            &super::SHARE_GROUP_DESCRIBE_VERSIONS,
        )?;
        let throttle_time_ms = d.i32()?;
        // error, message, id, state, 2 epochs, assignor, members, operations, tags.
        let groups = array(&mut d, true, 2 + 1 + 1 + 1 + 8 + 1 + 1 + 4 + 1, read_group)?;
        d.tagged_fields()?;
        finish(&d)?;
        Ok(ShareGroupDescribeResponse {
            throttle_time_ms,
            groups,
        })
    }
}

fn read_group(d: &mut Decoder) -> Result<ShareGroup, DecodeError> {
    let error_code = d.i16()?;
    let error_message = d.nullable_string(true)?;
    let group_id = d.string(true)?;
    let group_state = d.string(true)?;
    let group_epoch = d.i32()?;
    let assignment_epoch = d.i32()?;
    let assignor_name = d.string(true)?;
    // member id, rack, epoch, client id, host, topics, assignment (array + tags), tags.
    let members = array(d, true, 2 + 4 + 2 + 1 + 2 + 1, read_member)?;
    let authorized_operations = d.i32()?;
    d.tagged_fields()?;
    Ok(ShareGroup {
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

fn read_member(d: &mut Decoder) -> Result<ShareMember, DecodeError> {
    let member_id = d.string(true)?;
    let rack_id = d.nullable_string(true)?;
    let member_epoch = d.i32()?;
    let client_id = d.string(true)?;
    let client_host = d.string(true)?;
    let subscribed_topics = array(d, true, 1, |d| d.string(true))?;
    let assigned_partitions = read_assignment(d)?;
    d.tagged_fields()?;
    Ok(ShareMember {
        member_id,
        rack_id,
        member_epoch,
        client_id,
        client_host,
        subscribed_topics,
        assigned_partitions,
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
