//! ListOffsets response (API key 2): the offset for a timestamp, or the earliest/latest offset.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_ListOffsets>
//! - KIP-79 (timestamps, v1), KIP-320 (leader epoch, v4), KIP-482 (flexible versions, v6+)

use bytes::Bytes;

use super::{array, array_len_size, finish, start, string_len_size, tags_size};
use crate::wire::decode::{DecodeError, Decoder};

/// First flexible (compact, tagged) version.
const FIRST_FLEXIBLE: i16 = 6;

/// A decoded ListOffsets response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsResponse {
    /// How long the broker throttled the request (v2+; else 0).
    pub throttle_time_ms: i32,
    /// One entry per requested topic.
    pub topics: Vec<ListOffsetsTopic>,
}

/// One topic of a ListOffsets response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsTopic {
    /// The topic name.
    pub name: String,
    /// One entry per requested partition.
    pub partitions: Vec<ListOffsetsPartition>,
}

/// One partition of a ListOffsets response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsPartition {
    /// The partition number.
    pub partition_index: i32,
    /// Partition-level error, e.g. NOT_LEADER_OR_FOLLOWER.
    pub error_code: i16,
    /// The timestamp of the returned offset (-1 when listing earliest/latest).
    pub timestamp: i64,
    /// The returned offset (-1 if none, e.g. no record at or after the timestamp).
    pub offset: i64,
    /// The leader epoch of the returned offset (v4+; else -1).
    pub leader_epoch: i32,
}

impl ListOffsetsResponse {
    /// Decodes a ListOffsets response body sent in answer to a request at `version`.
    ///
    /// Fails on versions outside [`super::LIST_OFFSETS_VERSIONS`], on any malformed or
    /// truncated field, and on trailing bytes.
    pub fn decode(body: Bytes, version: i16) -> Result<Self, DecodeError> {
        let mut d = start(body, "ListOffsets", version, &super::LIST_OFFSETS_VERSIONS)?;
        let flexible = version >= FIRST_FLEXIBLE;
        let throttle_time_ms = if version >= 2 { d.i32()? } else { 0 };
        let topic_min_size =
            string_len_size(flexible) + array_len_size(flexible) + tags_size(flexible);
        let topics = array(&mut d, flexible, topic_min_size, read_topic)?;
        if flexible {
            d.tagged_fields()?;
        }
        finish(&d)?;
        Ok(ListOffsetsResponse {
            throttle_time_ms,
            topics,
        })
    }
}

fn read_topic(d: &mut Decoder) -> Result<ListOffsetsTopic, DecodeError> {
    let version = d.version();
    let flexible = version >= FIRST_FLEXIBLE;
    let name = d.string(flexible)?;
    let leader_epoch = if version >= 4 { 4 } else { 0 };
    let partition_min_size = 4 + 2 + 8 + 8 + leader_epoch + tags_size(flexible);
    let partitions = array(d, flexible, partition_min_size, read_partition)?;
    if flexible {
        d.tagged_fields()?;
    }
    Ok(ListOffsetsTopic { name, partitions })
}

fn read_partition(d: &mut Decoder) -> Result<ListOffsetsPartition, DecodeError> {
    let version = d.version();
    let partition_index = d.i32()?;
    let error_code = d.i16()?;
    let timestamp = d.i64()?;
    let offset = d.i64()?;
    let leader_epoch = if version >= 4 { d.i32()? } else { -1 };
    if version >= FIRST_FLEXIBLE {
        d.tagged_fields()?;
    }
    Ok(ListOffsetsPartition {
        partition_index,
        error_code,
        timestamp,
        offset,
        leader_epoch,
    })
}

#[cfg(test)]
mod tests;
