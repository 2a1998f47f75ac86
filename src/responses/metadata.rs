//! Metadata response (API key 3): brokers, topics and partition leaders.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_Metadata>
//! - KIP-516 (topic ids, v10+), KIP-482 (flexible versions, v9+)

use bytes::Bytes;

use super::{array, array_len_size, finish, i32_array, start, string_len_size, tags_size};
use crate::wire::decode::{DecodeError, Decoder};

/// First flexible (compact, tagged) version.
const FIRST_FLEXIBLE: i16 = 9;

/// A decoded Metadata response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataResponse {
    /// How long the broker throttled the request (v3+; else 0).
    pub throttle_time_ms: i32,
    /// Brokers in the cluster.
    pub brokers: Vec<MetadataBroker>,
    /// The cluster id (v2+; `None` if absent or null).
    pub cluster_id: Option<String>,
    /// The controller's broker id (v1+; else -1).
    pub controller_id: i32,
    /// Each requested (or every) topic.
    pub topics: Vec<MetadataTopic>,
    /// Top-level error (v13+; else 0), e.g. REBOOTSTRAP_REQUIRED.
    pub error_code: i16,
}

/// One broker of a Metadata response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataBroker {
    /// The broker id.
    pub node_id: i32,
    /// Host name to connect to.
    pub host: String,
    /// Port to connect to.
    pub port: i32,
    /// The broker's rack (v1+; `None` if absent or null).
    pub rack: Option<String>,
}

/// One topic of a Metadata response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataTopic {
    /// Topic-level error, e.g. UNKNOWN_TOPIC_OR_PARTITION.
    pub error_code: i16,
    /// The topic name. Only v12+ may send null (a topic looked up by id that does not exist).
    pub name: Option<String>,
    /// The topic id (v10+; else all zero).
    pub topic_id: [u8; 16],
    /// Whether the topic is internal (v1+; else false).
    pub is_internal: bool,
    /// The topic's partitions.
    pub partitions: Vec<MetadataPartition>,
}

/// One partition of a Metadata topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataPartition {
    /// Partition-level error, e.g. LEADER_NOT_AVAILABLE.
    pub error_code: i16,
    /// The partition number.
    pub partition_index: i32,
    /// The leader's broker id (-1 if none).
    pub leader_id: i32,
    /// The leader epoch (v7+; else -1).
    pub leader_epoch: i32,
    /// All replicas' broker ids.
    pub replica_nodes: Vec<i32>,
    /// In-sync replicas' broker ids.
    pub isr_nodes: Vec<i32>,
    /// Offline replicas' broker ids (v5+; else empty).
    pub offline_replicas: Vec<i32>,
}

impl MetadataResponse {
    /// Decodes a Metadata response body sent in answer to a request at `version`.
    ///
    /// Fails on versions outside [`super::METADATA_VERSIONS`], on any malformed or truncated
    /// field, and on trailing bytes.
    pub fn decode(body: Bytes, version: i16) -> Result<Self, DecodeError> {
        let mut d = start(body, "Metadata", version, &super::METADATA_VERSIONS)?;
        let flexible = version >= FIRST_FLEXIBLE;
        let throttle_time_ms = if version >= 3 { d.i32()? } else { 0 };
        let brokers = array(&mut d, flexible, broker_min_size(version), read_broker)?;
        let cluster_id = if version >= 2 {
            d.nullable_string(flexible)?
        } else {
            None
        };
        let controller_id = if version >= 1 { d.i32()? } else { -1 };
        let topics = array(&mut d, flexible, topic_min_size(version), read_topic)?;
        if (8..=10).contains(&version) {
            let _cluster_authorized_operations = d.i32()?;
        }
        let error_code = if version >= 13 { d.i16()? } else { 0 };
        if flexible {
            d.tagged_fields()?;
        }
        finish(&d)?;
        Ok(MetadataResponse {
            throttle_time_ms,
            brokers,
            cluster_id,
            controller_id,
            topics,
            error_code,
        })
    }
}

fn broker_min_size(version: i16) -> usize {
    let flexible = version >= FIRST_FLEXIBLE;
    let rack = if version >= 1 {
        string_len_size(flexible)
    } else {
        0
    };
    4 + string_len_size(flexible) + 4 + rack + tags_size(flexible)
}

fn read_broker(d: &mut Decoder) -> Result<MetadataBroker, DecodeError> {
    let version = d.version();
    let flexible = version >= FIRST_FLEXIBLE;
    let node_id = d.i32()?;
    let host = d.string(flexible)?;
    let port = d.i32()?;
    let rack = if version >= 1 {
        d.nullable_string(flexible)?
    } else {
        None
    };
    if flexible {
        d.tagged_fields()?;
    }
    Ok(MetadataBroker {
        node_id,
        host,
        port,
        rack,
    })
}

fn topic_min_size(version: i16) -> usize {
    let flexible = version >= FIRST_FLEXIBLE;
    let topic_id = if version >= 10 { 16 } else { 0 };
    let is_internal = if version >= 1 { 1 } else { 0 };
    let authorized_operations = if version >= 8 { 4 } else { 0 };
    2 + string_len_size(flexible)
        + topic_id
        + is_internal
        + array_len_size(flexible)
        + authorized_operations
        + tags_size(flexible)
}

fn read_topic(d: &mut Decoder) -> Result<MetadataTopic, DecodeError> {
    let version = d.version();
    let flexible = version >= FIRST_FLEXIBLE;
    let error_code = d.i16()?;
    let name = d.nullable_string(flexible)?;
    if name.is_none() && version < 12 {
        // Java rejects this too: the field only became nullable in v12.
        return Err(d.error("null topic name, which is only allowed from v12"));
    }
    let topic_id = if version >= 10 { d.uuid()? } else { [0; 16] };
    let is_internal = if version >= 1 { d.bool()? } else { false };
    let partitions = array(d, flexible, partition_min_size(version), read_partition)?;
    if version >= 8 {
        let _topic_authorized_operations = d.i32()?;
    }
    if flexible {
        d.tagged_fields()?;
    }
    Ok(MetadataTopic {
        error_code,
        name,
        topic_id,
        is_internal,
        partitions,
    })
}

fn partition_min_size(version: i16) -> usize {
    let flexible = version >= FIRST_FLEXIBLE;
    let leader_epoch = if version >= 7 { 4 } else { 0 };
    let arrays = if version >= 5 { 3 } else { 2 };
    2 + 4 + 4 + leader_epoch + arrays * array_len_size(flexible) + tags_size(flexible)
}

fn read_partition(d: &mut Decoder) -> Result<MetadataPartition, DecodeError> {
    let version = d.version();
    let flexible = version >= FIRST_FLEXIBLE;
    let error_code = d.i16()?;
    let partition_index = d.i32()?;
    let leader_id = d.i32()?;
    let leader_epoch = if version >= 7 { d.i32()? } else { -1 };
    let replica_nodes = i32_array(d, flexible)?;
    let isr_nodes = i32_array(d, flexible)?;
    let offline_replicas = if version >= 5 {
        i32_array(d, flexible)?
    } else {
        Vec::new()
    };
    if flexible {
        d.tagged_fields()?;
    }
    Ok(MetadataPartition {
        error_code,
        partition_index,
        leader_id,
        leader_epoch,
        replica_nodes,
        isr_nodes,
        offline_replicas,
    })
}

#[cfg(test)]
mod tests;
