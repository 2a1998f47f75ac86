//! Fetch response (API key 1): record batches per partition, returned without copying.
//!
//! The records of each partition are a [`Bytes`] slice of the response frame, so a Fetch response
//! of many megabytes is decoded with one small allocation per topic and partition, never per
//! record or per byte. Record batches themselves are parsed by the `records` layer.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_Fetch>
//! - KIP-227 (fetch sessions, v7), KIP-392 (preferred read replica, v11),
//!   KIP-482 (flexible versions, v12+), KIP-516 (topic ids, v13+),
//!   KIP-951 (current leader in responses, tagged field)

use std::fmt;

use bytes::Bytes;

use super::{array, array_len_size, finish, start, string_len_size, tags_size};
use crate::wire::decode::{DecodeError, Decoder};

/// First flexible (compact, tagged) version.
const FIRST_FLEXIBLE: i16 = 12;

/// First version that names topics by id instead of by name.
const FIRST_TOPIC_ID: i16 = 13;

/// Tag of `CurrentLeader` in a flexible partition's tagged fields.
const CURRENT_LEADER_TAG: u32 = 1;

/// A decoded Fetch response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResponse {
    /// How long the broker throttled the request.
    pub throttle_time_ms: i32,
    /// Top-level error (v7+; else 0), e.g. a fetch session error.
    pub error_code: i16,
    /// The fetch session id (v7+; else 0). 0 means no session.
    pub session_id: i32,
    /// One entry per topic with data or errors.
    pub responses: Vec<FetchTopic>,
}

/// How a Fetch response names a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicRef {
    /// By name (v4 to v12).
    Name(String),
    /// By topic id (v13+); map it to a name with Metadata v10+.
    Id([u8; 16]),
}

/// One topic of a Fetch response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchTopic {
    /// The topic, by name before v13 and by id from v13.
    pub topic: TopicRef,
    /// The topic's partitions.
    pub partitions: Vec<FetchPartition>,
}

/// A leader hint sent with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH (flexible versions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderIdAndEpoch {
    /// The new leader's broker id (-1 if unknown).
    pub leader_id: i32,
    /// The new leader's epoch (-1 if unknown).
    pub leader_epoch: i32,
}

/// An aborted transaction overlapping the returned records (READ_COMMITTED fetches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AbortedTransaction {
    /// The producer that aborted.
    pub producer_id: i64,
    /// The first offset of the aborted transaction.
    pub first_offset: i64,
}

/// One partition of a Fetch response.
#[derive(Clone, PartialEq, Eq)]
pub struct FetchPartition {
    /// The partition number.
    pub partition_index: i32,
    /// Partition-level error, e.g. OFFSET_OUT_OF_RANGE.
    pub error_code: i16,
    /// The high watermark: the offset after the last committed record.
    pub high_watermark: i64,
    /// The last stable offset (-1 if unknown).
    pub last_stable_offset: i64,
    /// The log start offset (v5+; else -1).
    pub log_start_offset: i64,
    /// Aborted transactions in the returned range (null on the wire reads as empty).
    pub aborted_transactions: Vec<AbortedTransaction>,
    /// The replica to fetch from instead, or -1 (v11+; else -1).
    pub preferred_read_replica: i32,
    /// The leader hint, if the broker sent one (tagged field, v12+).
    pub current_leader: Option<LeaderIdAndEpoch>,
    /// The record batches: a zero-copy slice of the response body (null reads as empty). The
    /// last batch may be cut short by the broker's size limit.
    pub records: Bytes,
}

impl fmt::Debug for FetchPartition {
    // Records can be megabytes; show their size, not their bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchPartition")
            .field("partition_index", &self.partition_index)
            .field("error_code", &self.error_code)
            .field("high_watermark", &self.high_watermark)
            .field("last_stable_offset", &self.last_stable_offset)
            .field("log_start_offset", &self.log_start_offset)
            .field("aborted_transactions", &self.aborted_transactions)
            .field("preferred_read_replica", &self.preferred_read_replica)
            .field("current_leader", &self.current_leader)
            .field("records", &format_args!("<{} bytes>", self.records.len()))
            .finish()
    }
}

impl FetchResponse {
    /// Decodes a Fetch response body sent in answer to a request at `version`.
    ///
    /// Fails on versions outside [`super::FETCH_VERSIONS`], on any malformed or truncated field,
    /// and on trailing bytes. Records are not copied: each partition's `records` shares the
    /// body's buffer.
    pub fn decode(body: Bytes, version: i16) -> Result<Self, DecodeError> {
        let mut d = start(body, "Fetch", version, &super::FETCH_VERSIONS)?;
        let flexible = version >= FIRST_FLEXIBLE;
        let throttle_time_ms = d.i32()?;
        let (error_code, session_id) = if version >= 7 {
            (d.i16()?, d.i32()?)
        } else {
            (0, 0)
        };
        let responses = array(&mut d, flexible, topic_min_size(version), read_topic)?;
        if flexible {
            // Tag 0 (v16+) is NodeEndpoints, which we do not use: the client routes by Metadata.
            d.tagged_fields()?;
        }
        finish(&d)?;
        Ok(FetchResponse {
            throttle_time_ms,
            error_code,
            session_id,
            responses,
        })
    }
}

fn topic_min_size(version: i16) -> usize {
    let flexible = version >= FIRST_FLEXIBLE;
    let topic = if version >= FIRST_TOPIC_ID {
        16
    } else {
        string_len_size(flexible)
    };
    topic + array_len_size(flexible) + tags_size(flexible)
}

fn read_topic(d: &mut Decoder) -> Result<FetchTopic, DecodeError> {
    let version = d.version();
    let flexible = version >= FIRST_FLEXIBLE;
    let topic = if version >= FIRST_TOPIC_ID {
        TopicRef::Id(d.uuid()?)
    } else {
        TopicRef::Name(d.string(flexible)?)
    };
    let partitions = array(d, flexible, partition_min_size(version), read_partition)?;
    if flexible {
        d.tagged_fields()?;
    }
    Ok(FetchTopic { topic, partitions })
}

fn partition_min_size(version: i16) -> usize {
    let flexible = version >= FIRST_FLEXIBLE;
    let log_start_offset = if version >= 5 { 8 } else { 0 };
    let preferred_read_replica = if version >= 11 { 4 } else { 0 };
    4 + 2
        + 8
        + 8
        + log_start_offset
        + array_len_size(flexible)
        + preferred_read_replica
        + array_len_size(flexible) // records: same prefix size as an array
        + tags_size(flexible)
}

fn read_partition(d: &mut Decoder) -> Result<FetchPartition, DecodeError> {
    let version = d.version();
    let flexible = version >= FIRST_FLEXIBLE;
    let partition_index = d.i32()?;
    let error_code = d.i16()?;
    let high_watermark = d.i64()?;
    let last_stable_offset = d.i64()?;
    let log_start_offset = if version >= 5 { d.i64()? } else { -1 };
    let aborted_min_size = 8 + 8 + tags_size(flexible);
    let aborted_transactions = array(d, flexible, aborted_min_size, read_aborted_transaction)?;
    let preferred_read_replica = if version >= 11 { d.i32()? } else { -1 };
    let records = d.nullable_bytes(flexible)?.unwrap_or_default();
    let current_leader = if flexible {
        read_partition_tags(d)?
    } else {
        None
    };
    Ok(FetchPartition {
        partition_index,
        error_code,
        high_watermark,
        last_stable_offset,
        log_start_offset,
        aborted_transactions,
        preferred_read_replica,
        current_leader,
        records,
    })
}

fn read_aborted_transaction(d: &mut Decoder) -> Result<AbortedTransaction, DecodeError> {
    let producer_id = d.i64()?;
    let first_offset = d.i64()?;
    if d.version() >= FIRST_FLEXIBLE {
        d.tagged_fields()?;
    }
    Ok(AbortedTransaction {
        producer_id,
        first_offset,
    })
}

/// Reads a partition's tagged fields, keeping `CurrentLeader` (tag 1) and skipping the rest
/// (`DivergingEpoch`, `SnapshotId`: only followers and KRaft voters use them).
fn read_partition_tags(d: &mut Decoder) -> Result<Option<LeaderIdAndEpoch>, DecodeError> {
    let mut current_leader = None;
    let count = d.unsigned_varint()?;
    for _ in 0..count {
        let tag = d.unsigned_varint()?;
        let size = d.unsigned_varint()? as usize;
        if tag != CURRENT_LEADER_TAG {
            d.skip(size, "tagged field")?;
            continue;
        }
        let before = d.remaining();
        if size > before {
            return Err(d.error(format!(
                "CurrentLeader tagged field claims {size} bytes but only {before} remain"
            )));
        }
        let leader_id = d.i32()?;
        let leader_epoch = d.i32()?;
        d.tagged_fields()?;
        let used = before - d.remaining();
        if used != size {
            return Err(d.error(format!(
                "CurrentLeader tagged field claims {size} bytes but its fields take {used}"
            )));
        }
        current_leader = Some(LeaderIdAndEpoch {
            leader_id,
            leader_epoch,
        });
    }
    Ok(current_leader)
}

#[cfg(test)]
mod tests;
