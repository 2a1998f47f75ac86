//! OffsetDelete response (API key 47, KIP-496): a group-level error code and one error code per
//! partition whose committed offset was to be deleted.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_OffsetDelete>
//! - KIP-496 (administrative API to delete consumer offsets)

use bytes::Bytes;

use super::{array, finish, start};
use crate::wire::decode::{DecodeError, Decoder};

/// A decoded OffsetDelete response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetDeleteResponse {
    /// The group-level error code (0 = none): e.g. GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP,
    /// GROUP_AUTHORIZATION_FAILED, or a coordinator error.
    pub error_code: i16,
    /// How long the broker throttled the request.
    pub throttle_time_ms: i32,
    /// One entry per topic.
    pub topics: Vec<OffsetDeleteTopic>,
}

/// One topic of an OffsetDelete response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetDeleteTopic {
    /// The topic name.
    pub name: String,
    /// `(partition, error code)` for each partition (e.g. GROUP_SUBSCRIBED_TO_TOPIC).
    pub partitions: Vec<(i32, i16)>,
}

impl OffsetDeleteResponse {
    /// Decodes an OffsetDelete response body sent in answer to a request at `version`.
    ///
    /// Fails on versions outside [`super::OFFSET_DELETE_VERSIONS`], on any malformed or
    /// truncated field, and on trailing bytes.
    pub fn decode(body: Bytes, version: i16) -> Result<Self, DecodeError> {
        let mut d = start(
            body,
            "OffsetDelete",
            version,
            &super::OFFSET_DELETE_VERSIONS,
        )?;
        let error_code = d.i16()?;
        let throttle_time_ms = d.i32()?;
        // A topic takes at least its name's length (2) and its partitions' count (4).
        let topics = array(&mut d, false, 2 + 4, read_topic)?;
        finish(&d)?;
        Ok(OffsetDeleteResponse {
            error_code,
            throttle_time_ms,
            topics,
        })
    }
}

fn read_topic(d: &mut Decoder) -> Result<OffsetDeleteTopic, DecodeError> {
    let name = d.string(false)?;
    let partitions = array(d, false, 4 + 2, |d| Ok((d.i32()?, d.i16()?)))?;
    Ok(OffsetDeleteTopic { name, partitions })
}

#[cfg(test)]
mod tests;
