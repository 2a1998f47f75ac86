//! OffsetFetch response (API key 9): a group's committed offsets.
//!
//! v1-v7 answer for one group; v8+ (KIP-709) for a batch of groups. Both are decoded into the
//! batched shape, with `group_id: None` for the single answer.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_OffsetFetch>
//! - KIP-320 (leader epoch, v5+), KIP-482 (flexible versions, v6+), KIP-709 (batched, v8+)

use bytes::Bytes;

use super::{array, array_len_size, finish, start, string_len_size, tags_size};
use crate::wire::decode::{DecodeError, Decoder};

/// First flexible (compact, tagged) version.
const FIRST_FLEXIBLE: i16 = 6;
/// First version that batches groups.
pub const FIRST_BATCHED: i16 = 8;

/// A decoded OffsetFetch response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchResponse {
    /// How long the broker throttled the request (v3+; else 0).
    pub throttle_time_ms: i32,
    /// One entry per group asked about (exactly one below v8).
    pub groups: Vec<OffsetFetchGroup>,
}

/// One group's committed offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchGroup {
    /// The group id (v8+; `None` in the single-group versions).
    pub group_id: Option<String>,
    /// Group-level error (v2+; else 0), e.g. GROUP_AUTHORIZATION_FAILED.
    pub error_code: i16,
    /// The topics.
    pub topics: Vec<OffsetFetchTopic>,
}

/// One topic of a group's committed offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchTopic {
    /// The topic name.
    pub name: String,
    /// The partitions.
    pub partitions: Vec<OffsetFetchPartition>,
}

/// One partition's committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchPartition {
    /// The partition number.
    pub partition_index: i32,
    /// The committed offset, or -1 when the group has none for this partition.
    pub committed_offset: i64,
    /// The committed leader epoch (v5+; else -1).
    pub committed_leader_epoch: i32,
    /// The committed metadata, if any.
    pub metadata: Option<String>,
    /// Partition-level error, e.g. UNSTABLE_OFFSET_COMMIT or TOPIC_AUTHORIZATION_FAILED.
    pub error_code: i16,
}

impl OffsetFetchResponse {
    /// Decodes an OffsetFetch response body sent in answer to a request at `version`.
    ///
    /// Fails on versions outside [`super::OFFSET_FETCH_VERSIONS`], on any malformed or
    /// truncated field, and on trailing bytes.
    pub fn decode(body: Bytes, version: i16) -> Result<Self, DecodeError> {
        let mut d = start(body, "OffsetFetch", version, &super::OFFSET_FETCH_VERSIONS)?;
        let flexible = version >= FIRST_FLEXIBLE;
        let throttle_time_ms = if version >= 3 { d.i32()? } else { 0 };
        let topic_min = string_len_size(flexible) + array_len_size(flexible) + tags_size(flexible);
        let groups = if version >= FIRST_BATCHED {
            array(&mut d, true, 1 + 1 + 2 + 1, |d| {
                let group_id = Some(d.string(true)?);
                let topics = array(d, true, topic_min, read_topic)?;
                let error_code = d.i16()?;
                d.tagged_fields()?;
                Ok(OffsetFetchGroup {
                    group_id,
                    error_code,
                    topics,
                })
            })?
        } else {
            let topics = array(&mut d, flexible, topic_min, read_topic)?;
            let error_code = if version >= 2 { d.i16()? } else { 0 };
            vec![OffsetFetchGroup {
                group_id: None,
                error_code,
                topics,
            }]
        };
        if flexible {
            d.tagged_fields()?;
        }
        finish(&d)?;
        Ok(OffsetFetchResponse {
            throttle_time_ms,
            groups,
        })
    }
}

fn read_topic(d: &mut Decoder) -> Result<OffsetFetchTopic, DecodeError> {
    let version = d.version();
    let flexible = version >= FIRST_FLEXIBLE;
    let name = d.string(flexible)?;
    let epoch = if version >= 5 { 4 } else { 0 };
    let partition_min = 4 + 8 + epoch + string_len_size(flexible) + 2 + tags_size(flexible);
    let partitions = array(d, flexible, partition_min, read_partition)?;
    if flexible {
        d.tagged_fields()?;
    }
    Ok(OffsetFetchTopic { name, partitions })
}

fn read_partition(d: &mut Decoder) -> Result<OffsetFetchPartition, DecodeError> {
    let version = d.version();
    let flexible = version >= FIRST_FLEXIBLE;
    let partition_index = d.i32()?;
    let committed_offset = d.i64()?;
    let committed_leader_epoch = if version >= 5 { d.i32()? } else { -1 };
    let metadata = d.nullable_string(flexible)?;
    let error_code = d.i16()?;
    if flexible {
        d.tagged_fields()?;
    }
    Ok(OffsetFetchPartition {
        partition_index,
        committed_offset,
        committed_leader_epoch,
        metadata,
        error_code,
    })
}

#[cfg(test)]
mod tests;
