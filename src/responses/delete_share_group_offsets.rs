//! DeleteShareGroupOffsets response (API key 92, KIP-932): the answer to removing a share
//! group's start offsets on whole topics, as `Admin.deleteShareGroupOffsets` does. An undo
//! needs it: a share group `apply` created (or a topic it added) must have no start offset
//! after the undo, so that `share.auto.offset.reset` decides again. Per topic, not per
//! partition. Always flexible.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_DeleteShareGroupOffsets>
//! - KIP-932 (queues for Kafka: share groups)

use bytes::Bytes;

use super::{array, finish, start};
use crate::wire::decode::DecodeError;

/// A decoded DeleteShareGroupOffsets response.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeleteShareGroupOffsetsResponse {
    /// How long the broker throttled the request.
    pub throttle_time_ms: i32,
    /// Group-level error (0 = none): GROUP_NOT_EMPTY, GROUP_ID_NOT_FOUND, NOT_COORDINATOR, ...
    pub error_code: i16,
    /// The broker's message for the error, if any.
    pub error_message: Option<String>,
    /// Each topic's answer.
    pub topics: Vec<DeleteShareTopic>,
}

/// One topic of a DeleteShareGroupOffsets response.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeleteShareTopic {
    /// The topic name.
    pub name: String,
    /// The topic id.
    pub topic_id: [u8; 16],
    /// The topic's error (0 = deleted).
    pub error_code: i16,
    /// The broker's message for the error, if any.
    pub error_message: Option<String>,
}

impl DeleteShareGroupOffsetsResponse {
    /// Decodes a DeleteShareGroupOffsets response body sent in answer to a request at
    /// `version`.
    ///
    /// Fails on versions outside [`super::DELETE_SHARE_GROUP_OFFSETS_VERSIONS`], on any
    /// malformed or truncated field, and on trailing bytes.
    pub fn decode(body: Bytes, version: i16) -> Result<Self, DecodeError> {
        let mut d = start(
            body,
            "DeleteShareGroupOffsets",
            version,
            &super::DELETE_SHARE_GROUP_OFFSETS_VERSIONS,
        )?;
        let throttle_time_ms = d.i32()?;
        let error_code = d.i16()?;
        let error_message = d.nullable_string(true)?;
        // A topic: name (1), id (16), error (2), message (1), tags (1).
        let topics = array(&mut d, true, 1 + 16 + 2 + 1 + 1, |d| {
            let name = d.string(true)?;
            let topic_id = d.uuid()?;
            let error_code = d.i16()?;
            let error_message = d.nullable_string(true)?;
            d.tagged_fields()?;
            Ok(DeleteShareTopic {
                name,
                topic_id,
                error_code,
                error_message,
            })
        })?;
        d.tagged_fields()?;
        finish(&d)?;
        Ok(DeleteShareGroupOffsetsResponse {
            throttle_time_ms,
            error_code,
            error_message,
            topics,
        })
    }
}

#[cfg(test)]
mod tests;
