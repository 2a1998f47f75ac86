//! ListGroups response (API key 16): the groups a broker coordinates, with their protocol type,
//! state (v4+) and group type (v5+: "classic", "consumer", "share", "streams").
//!
//! v5 (KIP-848) added the group type and the request's types filter, so a client can ask a
//! coordinator for its share and streams groups alone: those hold no consumer offsets that an
//! admin OffsetCommit may write (see `client::list_groups`).
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_ListGroups>
//! - KIP-518 (states filter, v4+), KIP-848 (group type and types filter, v5+),
//!   KIP-932 (share groups), KIP-1071 (streams groups)

use bytes::Bytes;

use super::{array, finish, start, string_len_size, tags_size};
use crate::wire::decode::{DecodeError, Decoder};

/// First flexible (compact, tagged) version.
const FIRST_FLEXIBLE: i16 = 3;
/// First version whose groups carry their state.
pub const FIRST_WITH_STATE: i16 = 4;
/// First version whose groups carry their type, and whose request takes a types filter.
pub const FIRST_WITH_TYPE: i16 = 5;

/// A decoded ListGroups response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListGroupsResponse {
    /// How long the broker throttled the request (v1+; else 0).
    pub throttle_time_ms: i32,
    /// The top-level error, e.g. COORDINATOR_LOAD_IN_PROGRESS (0 = none).
    pub error_code: i16,
    /// The groups.
    pub groups: Vec<ListedGroup>,
}

/// One group of a ListGroups response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGroup {
    /// The group id.
    pub group_id: String,
    /// The protocol type: "consumer", "connect", "" for a group that only holds offsets, ...
    pub protocol_type: String,
    /// The state (v4+; else `None`).
    pub group_state: Option<String>,
    /// The group type (v5+; else `None`): "classic", "consumer", "share" or "streams".
    pub group_type: Option<String>,
}

impl ListGroupsResponse {
    /// Decodes a ListGroups response body sent in answer to a request at `version`.
    ///
    /// Fails on versions outside [`super::LIST_GROUPS_VERSIONS`], on any malformed or
    /// truncated field, and on trailing bytes.
    pub fn decode(body: Bytes, version: i16) -> Result<Self, DecodeError> {
        let mut d = start(body, "ListGroups", version, &super::LIST_GROUPS_VERSIONS)?;
        let flexible = version >= FIRST_FLEXIBLE;
        let throttle_time_ms = if version >= 1 { d.i32()? } else { 0 };
        let error_code = d.i16()?;
        let s = string_len_size(flexible);
        let group_min = 2 * s
            + if version >= FIRST_WITH_STATE { s } else { 0 }
            + if version >= FIRST_WITH_TYPE { s } else { 0 }
            + tags_size(flexible);
        let groups = array(&mut d, flexible, group_min, read_group)?;
        if flexible {
            d.tagged_fields()?;
        }
        finish(&d)?;
        Ok(ListGroupsResponse {
            throttle_time_ms,
            error_code,
            groups,
        })
    }
}

fn read_group(d: &mut Decoder) -> Result<ListedGroup, DecodeError> {
    let version = d.version();
    let flexible = version >= FIRST_FLEXIBLE;
    let group_id = d.string(flexible)?;
    let protocol_type = d.string(flexible)?;
    let group_state = if version >= FIRST_WITH_STATE {
        Some(d.string(flexible)?)
    } else {
        None
    };
    let group_type = if version >= FIRST_WITH_TYPE {
        Some(d.string(flexible)?)
    } else {
        None
    };
    if flexible {
        d.tagged_fields()?;
    }
    Ok(ListedGroup {
        group_id,
        protocol_type,
        group_state,
        group_type,
    })
}

#[cfg(test)]
mod tests;
