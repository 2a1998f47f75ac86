//! AlterShareGroupOffsets response (API key 91, KIP-932): the answer to setting a share group's
//! start offsets, as `Admin.alterShareGroupOffsets` and `kafka-share-groups.sh --reset-offsets`
//! do. On an id that is no group the coordinator creates an empty share group; with a live
//! member it answers GROUP_NOT_EMPTY; on a group of another type, GROUP_ID_NOT_FOUND. Always
//! flexible.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_AlterShareGroupOffsets>
//! - KIP-932 (queues for Kafka: share groups)

use bytes::Bytes;

use super::{array, finish, start};
use crate::wire::decode::DecodeError;

/// A decoded AlterShareGroupOffsets response.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AlterShareGroupOffsetsResponse {
    /// How long the broker throttled the request.
    pub throttle_time_ms: i32,
    /// Group-level error (0 = none): GROUP_NOT_EMPTY, GROUP_ID_NOT_FOUND, NOT_COORDINATOR, ...
    pub error_code: i16,
    /// The broker's message for the error, if any.
    pub error_message: Option<String>,
    /// Each topic's partitions, with their errors.
    pub topics: Vec<AlterShareTopic>,
}

/// One topic of an AlterShareGroupOffsets response.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AlterShareTopic {
    /// The topic name.
    pub name: String,
    /// The topic id.
    pub topic_id: [u8; 16],
    /// (partition, error code, error message); 0 = set.
    pub partitions: Vec<(i32, i16, Option<String>)>,
}

impl AlterShareGroupOffsetsResponse {
    /// Decodes an AlterShareGroupOffsets response body sent in answer to a request at
    /// `version`.
    ///
    /// Fails on versions outside [`super::ALTER_SHARE_GROUP_OFFSETS_VERSIONS`], on any
    /// malformed or truncated field, and on trailing bytes.
    pub fn decode(body: Bytes, version: i16) -> Result<Self, DecodeError> {
        let mut d = start(
            body,
            "AlterShareGroupOffsets",
            version,
            &super::ALTER_SHARE_GROUP_OFFSETS_VERSIONS,
        )?;
        let throttle_time_ms = d.i32()?;
        let error_code = d.i16()?;
        let error_message = d.nullable_string(true)?;
        // A topic: name (1), id (16), partitions (1), tags (1).
        let topics = array(&mut d, true, 1 + 16 + 1 + 1, |d| {
            let name = d.string(true)?;
            let topic_id = d.uuid()?;
            // A partition: index (4), error (2), message (1), tags (1).
            let partitions = array(d, true, 4 + 2 + 1 + 1, |d| {
                let partition = d.i32()?;
                let code = d.i16()?;
                let message = d.nullable_string(true)?;
                d.tagged_fields()?;
                Ok((partition, code, message))
            })?;
            d.tagged_fields()?;
            Ok(AlterShareTopic {
                name,
                topic_id,
                partitions,
            })
        })?;
        d.tagged_fields()?;
        finish(&d)?;
        Ok(AlterShareGroupOffsetsResponse {
            throttle_time_ms,
            error_code,
            error_message,
            topics,
        })
    }
}

#[cfg(test)]
mod tests;
