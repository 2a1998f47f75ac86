//! DescribeShareGroupOffsets response (API key 90, KIP-932): each share group's start offset
//! per topic partition, the position `Admin.listShareGroupOffsets` and `kafka-share-groups.sh
//! --describe --offsets` show.
//!
//! A share group keeps no committed offsets (OffsetFetch answers GROUP_ID_NOT_FOUND for it):
//! its share-partition start offset is the first record not yet delivered and acknowledged,
//! and records past it may be acknowledged already (in-flight or acknowledged out of order).
//! Every version is flexible (compact strings and arrays, tagged fields).
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_DescribeShareGroupOffsets>
//! - KIP-932 (queues for Kafka: share groups)

use bytes::Bytes;

use super::{array, finish, start};
use crate::wire::decode::{DecodeError, Decoder};

/// A decoded DescribeShareGroupOffsets response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeShareGroupOffsetsResponse {
    /// How long the broker throttled the request.
    pub throttle_time_ms: i32,
    /// One entry per group asked for.
    pub groups: Vec<ShareGroupOffsets>,
}

/// One group of a DescribeShareGroupOffsets response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupOffsets {
    /// The group id.
    pub group_id: String,
    /// The group's topics (only those with share-partition state when all were asked for).
    pub topics: Vec<ShareGroupTopicOffsets>,
    /// The group-level error (0 = none): GROUP_ID_NOT_FOUND, GROUP_AUTHORIZATION_FAILED,
    /// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...
    pub error_code: i16,
    /// The group-level error message, if any.
    pub error_message: Option<String>,
}

/// One topic of a share group's offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupTopicOffsets {
    /// The topic name.
    pub name: String,
    /// The topic id.
    pub topic_id: [u8; 16],
    /// Its partitions.
    pub partitions: Vec<SharePartitionOffset>,
}

/// One share partition's start offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePartitionOffset {
    /// The partition index.
    pub partition: i32,
    /// The share-partition start offset (-1: none initialized yet).
    pub start_offset: i64,
    /// The leader epoch of the partition (-1 unknown).
    pub leader_epoch: i32,
    /// The partition-level error (0 = none).
    pub error_code: i16,
    /// The partition-level error message, if any.
    pub error_message: Option<String>,
}

impl DescribeShareGroupOffsetsResponse {
    /// Decodes a DescribeShareGroupOffsets response body sent in answer to a request at
    /// `version`.
    ///
    /// Fails on versions outside [`super::DESCRIBE_SHARE_GROUP_OFFSETS_VERSIONS`], on any
    /// malformed or truncated field, and on trailing bytes.
    pub fn decode(body: Bytes, version: i16) -> Result<Self, DecodeError> {
        let mut d = start(
            body,
            "DescribeShareGroupOffsets",
            version,
            &super::DESCRIBE_SHARE_GROUP_OFFSETS_VERSIONS,
        )?;
        let throttle_time_ms = d.i32()?;
        // A group: its id (1), topics (1), error code (2), message (1), tags (1).
        let groups = array(&mut d, true, 1 + 1 + 2 + 1 + 1, read_group)?;
        d.tagged_fields()?;
        finish(&d)?;
        Ok(DescribeShareGroupOffsetsResponse {
            throttle_time_ms,
            groups,
        })
    }
}

fn read_group(d: &mut Decoder) -> Result<ShareGroupOffsets, DecodeError> {
    let group_id = d.string(true)?;
    // A topic: its name (1), id (16), partitions (1), tags (1).
    let topics = array(d, true, 1 + 16 + 1 + 1, read_topic)?;
    let error_code = d.i16()?;
    let error_message = d.nullable_string(true)?;
    d.tagged_fields()?;
    Ok(ShareGroupOffsets {
        group_id,
        topics,
        error_code,
        error_message,
    })
}

fn read_topic(d: &mut Decoder) -> Result<ShareGroupTopicOffsets, DecodeError> {
    let name = d.string(true)?;
    let topic_id = d.uuid()?;
    // A partition: index (4), start offset (8), epoch (4), error (2), message (1), tags (1).
    let partitions = array(d, true, 4 + 8 + 4 + 2 + 1 + 1, |d| {
        let partition = d.i32()?;
        let start_offset = d.i64()?;
        let leader_epoch = d.i32()?;
        let error_code = d.i16()?;
        let error_message = d.nullable_string(true)?;
        d.tagged_fields()?;
        Ok(SharePartitionOffset {
            partition,
            start_offset,
            leader_epoch,
            error_code,
            error_message,
        })
    })?;
    d.tagged_fields()?;
    Ok(ShareGroupTopicOffsets {
        name,
        topic_id,
        partitions,
    })
}

#[cfg(test)]
mod tests;
