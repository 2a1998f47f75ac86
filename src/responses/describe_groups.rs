//! DescribeGroups response (API key 15): a classic group's state and members.
//!
//! For a group of the new consumer protocol (KIP-848) a 4.x broker answers this old API with
//! state "Dead" and no members even while the group is active, so callers must not read "Dead"
//! as "safe to write" (see `client::groups`).
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_DescribeGroups>
//! - KIP-345 (group instance id, v4+), KIP-430 (authorized operations, v3+),
//!   KIP-482 (flexible versions, v5+), KIP-1043 (error message, v6+)

use bytes::Bytes;

use super::{array, array_len_size, finish, start, string_len_size, tags_size};
use crate::wire::decode::{DecodeError, Decoder};

/// First flexible (compact, tagged) version.
const FIRST_FLEXIBLE: i16 = 5;

/// A decoded DescribeGroups response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeGroupsResponse {
    /// How long the broker throttled the request (v1+; else 0).
    pub throttle_time_ms: i32,
    /// One entry per group asked about.
    pub groups: Vec<DescribedGroup>,
}

/// One group of a DescribeGroups response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedGroup {
    /// Group-level error, e.g. GROUP_AUTHORIZATION_FAILED or COORDINATOR_LOAD_IN_PROGRESS.
    pub error_code: i16,
    /// The broker's message for the error (v6+), if any.
    pub error_message: Option<String>,
    /// The group id.
    pub group_id: String,
    /// The state: Empty, Stable, PreparingRebalance, CompletingRebalance, Dead, ...
    pub group_state: String,
    /// The protocol type, e.g. "consumer", or "" for a group that only has offsets.
    pub protocol_type: String,
    /// The chosen assignor, e.g. "range".
    pub protocol_data: String,
    /// The members.
    pub members: Vec<ClassicMember>,
    /// The operations the requester may perform, as a bit set (v3+; else `i32::MIN`).
    pub authorized_operations: i32,
}

/// One member of a classic group. Its metadata and assignment bytes are skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicMember {
    /// The member id the coordinator gave it.
    pub member_id: String,
    /// The static member's instance id (v4+), if any.
    pub group_instance_id: Option<String>,
    /// The member's client id.
    pub client_id: String,
    /// The member's host.
    pub client_host: String,
}

impl DescribeGroupsResponse {
    /// Decodes a DescribeGroups response body sent in answer to a request at `version`.
    ///
    /// Fails on versions outside [`super::DESCRIBE_GROUPS_VERSIONS`], on any malformed or
    /// truncated field, and on trailing bytes.
    pub fn decode(body: Bytes, version: i16) -> Result<Self, DecodeError> {
        let mut d = start(
            body,
            "DescribeGroups",
            version,
            &super::DESCRIBE_GROUPS_VERSIONS,
        )?;
        let flexible = version >= FIRST_FLEXIBLE;
        let throttle_time_ms = if version >= 1 { d.i32()? } else { 0 };
        let s = string_len_size(flexible);
        let group_min = 2
            + if version >= 6 { s } else { 0 }
            + 4 * s
            + array_len_size(flexible)
            + if version >= 3 { 4 } else { 0 }
            + tags_size(flexible);
        let groups = array(&mut d, flexible, group_min, read_group)?;
        if flexible {
            d.tagged_fields()?;
        }
        finish(&d)?;
        Ok(DescribeGroupsResponse {
            throttle_time_ms,
            groups,
        })
    }
}

fn read_group(d: &mut Decoder) -> Result<DescribedGroup, DecodeError> {
    let version = d.version();
    let flexible = version >= FIRST_FLEXIBLE;
    let error_code = d.i16()?;
    let error_message = if version >= 6 {
        d.nullable_string(true)?
    } else {
        None
    };
    let group_id = d.string(flexible)?;
    let group_state = d.string(flexible)?;
    let protocol_type = d.string(flexible)?;
    let protocol_data = d.string(flexible)?;
    let s = string_len_size(flexible);
    let b = array_len_size(flexible);
    let member_min = 3 * s + if version >= 4 { s } else { 0 } + 2 * b + tags_size(flexible);
    let members = array(d, flexible, member_min, read_member)?;
    let authorized_operations = if version >= 3 { d.i32()? } else { i32::MIN };
    if flexible {
        d.tagged_fields()?;
    }
    Ok(DescribedGroup {
        error_code,
        error_message,
        group_id,
        group_state,
        protocol_type,
        protocol_data,
        members,
        authorized_operations,
    })
}

fn read_member(d: &mut Decoder) -> Result<ClassicMember, DecodeError> {
    let version = d.version();
    let flexible = version >= FIRST_FLEXIBLE;
    let member_id = d.string(flexible)?;
    let group_instance_id = if version >= 4 {
        d.nullable_string(flexible)?
    } else {
        None
    };
    let client_id = d.string(flexible)?;
    let client_host = d.string(flexible)?;
    // Metadata and assignment: skipped, but their lengths are checked like any other field.
    d.nullable_bytes(flexible)?;
    d.nullable_bytes(flexible)?;
    if flexible {
        d.tagged_fields()?;
    }
    Ok(ClassicMember {
        member_id,
        group_instance_id,
        client_id,
        client_host,
    })
}

#[cfg(test)]
mod tests;
