//! OffsetCommit response (API key 8): one error code per committed partition.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_OffsetCommit>
//! - KIP-482 (flexible versions, v8+)

use bytes::Bytes;

use super::{array, array_len_size, finish, start, string_len_size, tags_size};
use crate::wire::decode::{DecodeError, Decoder};

/// First flexible (compact, tagged) version.
const FIRST_FLEXIBLE: i16 = 8;

/// A decoded OffsetCommit response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitResponse {
    /// How long the broker throttled the request (v3+; else 0).
    pub throttle_time_ms: i32,
    /// One entry per committed topic.
    pub topics: Vec<OffsetCommitTopic>,
}

/// One topic of an OffsetCommit response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitTopic {
    /// The topic name.
    pub name: String,
    /// `(partition, error code)` for each committed partition.
    pub partitions: Vec<(i32, i16)>,
}

impl OffsetCommitResponse {
    /// Decodes an OffsetCommit response body sent in answer to a request at `version`.
    ///
    /// Fails on versions outside [`super::OFFSET_COMMIT_VERSIONS`], on any malformed or
    /// truncated field, and on trailing bytes.
    pub fn decode(body: Bytes, version: i16) -> Result<Self, DecodeError> {
        let mut d = start(
            body,
            "OffsetCommit",
            version,
            &super::OFFSET_COMMIT_VERSIONS,
        )?;
        let flexible = version >= FIRST_FLEXIBLE;
        let throttle_time_ms = if version >= 3 { d.i32()? } else { 0 };
        let topic_min = string_len_size(flexible) + array_len_size(flexible) + tags_size(flexible);
        let topics = array(&mut d, flexible, topic_min, read_topic)?;
        if flexible {
            d.tagged_fields()?;
        }
        finish(&d)?;
        Ok(OffsetCommitResponse {
            throttle_time_ms,
            topics,
        })
    }
}

fn read_topic(d: &mut Decoder) -> Result<OffsetCommitTopic, DecodeError> {
    let flexible = d.version() >= FIRST_FLEXIBLE;
    let name = d.string(flexible)?;
    let partitions = array(d, flexible, 4 + 2 + tags_size(flexible), |d| {
        let partition = d.i32()?;
        let error_code = d.i16()?;
        if flexible {
            d.tagged_fields()?;
        }
        Ok((partition, error_code))
    })?;
    if flexible {
        d.tagged_fields()?;
    }
    Ok(OffsetCommitTopic { name, partitions })
}

#[cfg(test)]
mod tests;
