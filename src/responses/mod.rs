//! Bounded, zero-copy decoders for the response bodies the client consumes.
//!
//! `kafka-protocol` encodes our requests, but its response decoders pre-allocate whatever element
//! count the wire claims and copy byte fields. A hostile or corrupt response could therefore force
//! a huge allocation, and a Fetch response would be copied record by record. These decoders read
//! with [`Decoder`], which caps every count by the bytes left, and hand out byte fields (Fetch
//! records) as zero-copy slices of the response frame.
//!
//! Each decoder takes the response *body* (the frame after the response header) and the API
//! version the request was sent with, accepts exactly the versions listed in the `*_VERSIONS`
//! constants here, and rejects trailing bytes: a body that is longer than its schema means we
//! disagree with the broker about the version, and guessing would misread every field.
//!
//! # References
//! - <https://kafka.apache.org/protocol#protocol_messages>
//! - KIP-482 (flexible versions, tagged fields)

use std::ops::RangeInclusive;

use bytes::Bytes;

use crate::wire::decode::{DecodeError, Decoder};

pub mod alter_share_group_offsets;
pub mod consumer_group_describe;
pub mod delete_share_group_offsets;
pub mod describe_groups;
pub mod describe_share_group_offsets;
pub mod fetch;
pub mod find_coordinator;
pub mod list_groups;
pub mod list_offsets;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod share_group_describe;
pub mod streams_group_describe;
#[cfg(test)]
mod test_support;

// Short paths for the fuzz targets (unstable-fuzzing); the crate itself names the modules.
#[cfg(feature = "unstable-fuzzing")]
pub use alter_share_group_offsets::AlterShareGroupOffsetsResponse;
#[cfg(feature = "unstable-fuzzing")]
pub use consumer_group_describe::ConsumerGroupDescribeResponse;
#[cfg(feature = "unstable-fuzzing")]
pub use delete_share_group_offsets::DeleteShareGroupOffsetsResponse;
#[cfg(feature = "unstable-fuzzing")]
pub use describe_groups::DescribeGroupsResponse;
#[cfg(feature = "unstable-fuzzing")]
pub use describe_share_group_offsets::DescribeShareGroupOffsetsResponse;
#[cfg(feature = "unstable-fuzzing")]
pub use fetch::FetchResponse;
#[cfg(feature = "unstable-fuzzing")]
pub use find_coordinator::FindCoordinatorResponse;
#[cfg(feature = "unstable-fuzzing")]
pub use list_groups::ListGroupsResponse;
#[cfg(feature = "unstable-fuzzing")]
pub use list_offsets::ListOffsetsResponse;
#[cfg(feature = "unstable-fuzzing")]
pub use metadata::MetadataResponse;
#[cfg(feature = "unstable-fuzzing")]
pub use offset_commit::OffsetCommitResponse;
#[cfg(feature = "unstable-fuzzing")]
pub use offset_delete::OffsetDeleteResponse;
#[cfg(feature = "unstable-fuzzing")]
pub use offset_fetch::OffsetFetchResponse;
#[cfg(feature = "unstable-fuzzing")]
pub use share_group_describe::ShareGroupDescribeResponse;
#[cfg(feature = "unstable-fuzzing")]
pub use streams_group_describe::StreamsGroupDescribeResponse;

/// Metadata (API key 3) versions we can send with `kafka-protocol` and decode here.
pub const METADATA_VERSIONS: RangeInclusive<i16> = 0..=13;

/// ListOffsets (API key 2) versions we can send and decode. v0 (old-style offsets) is not
/// defined by `kafka-protocol` 0.18, so we start at v1.
pub const LIST_OFFSETS_VERSIONS: RangeInclusive<i16> = 1..=10;

/// Fetch (API key 1) versions we can send and decode. `kafka-protocol` 0.18 defines v4 onwards.
pub const FETCH_VERSIONS: RangeInclusive<i16> = 4..=18;

/// FindCoordinator (API key 10) versions we can send and decode (v4+ batches group ids).
pub const FIND_COORDINATOR_VERSIONS: RangeInclusive<i16> = 0..=6;

/// DescribeGroups (API key 15) versions we can send and decode.
pub const DESCRIBE_GROUPS_VERSIONS: RangeInclusive<i16> = 0..=6;

/// ListGroups (API key 16) versions we can send and decode (v5+ carries group types and takes
/// a types filter).
pub const LIST_GROUPS_VERSIONS: RangeInclusive<i16> = 0..=5;

/// ConsumerGroupDescribe (API key 69, KIP-848) versions we can send and decode.
pub const CONSUMER_GROUP_DESCRIBE_VERSIONS: RangeInclusive<i16> = 0..=1;

/// OffsetFetch (API key 9) versions we can send and decode (v8+ batches groups).
/// `kafka-protocol` 0.18 encodes requests up to v9; v10 (topic ids) is not sent.
pub const OFFSET_FETCH_VERSIONS: RangeInclusive<i16> = 1..=9;

/// OffsetCommit (API key 8) versions we can send and decode. `kafka-protocol` 0.18 encodes
/// requests up to v9, so v10 (topic ids only, KAFKA-14690) is never negotiated: every broker
/// that offers v10 still offers v9, and topic names keep the request readable.
pub const OFFSET_COMMIT_VERSIONS: RangeInclusive<i16> = 2..=9;

/// OffsetDelete (API key 47, KIP-496) versions we can send and decode: `kafka-protocol` 0.18
/// and Kafka 4.x define v0 only.
pub const OFFSET_DELETE_VERSIONS: RangeInclusive<i16> = 0..=0;

/// DescribeShareGroupOffsets (API key 90, KIP-932) versions we can send and decode:
/// `kafka-protocol` 0.18 encodes v0 only (v1, KIP-1226, adds each partition's lag).
pub const DESCRIBE_SHARE_GROUP_OFFSETS_VERSIONS: RangeInclusive<i16> = 0..=0;

/// ShareGroupDescribe (API key 77, KIP-932) versions: Kafka 4.1 removed the early-access v0,
/// and `kafka-protocol` 0.18 encodes v1 only.
pub const SHARE_GROUP_DESCRIBE_VERSIONS: RangeInclusive<i16> = 1..=1;

/// AlterShareGroupOffsets (API key 91, KIP-932) versions: Kafka 4.1+ and `kafka-protocol`
/// 0.18 define v0 only.
pub const ALTER_SHARE_GROUP_OFFSETS_VERSIONS: RangeInclusive<i16> = 0..=0;

/// DeleteShareGroupOffsets (API key 92, KIP-932) versions: Kafka 4.1+ and `kafka-protocol`
/// 0.18 define v0 only.
pub const DELETE_SHARE_GROUP_OFFSETS_VERSIONS: RangeInclusive<i16> = 0..=0;
/// StreamsGroupDescribe (API key 89, KIP-1071) versions we can send (our own encoder,
/// `crate::wire::streams_group_describe`) and decode.
pub const STREAMS_GROUP_DESCRIBE_VERSIONS: RangeInclusive<i16> = 0..=0;

/// Starts decoding `body` as a `what` response at `version`, rejecting unsupported versions.
fn start(
    body: Bytes,
    what: &'static str,
    version: i16,
    supported: &RangeInclusive<i16>,
) -> Result<Decoder, DecodeError> {
    let d = Decoder::new(body, what, version);
    if !supported.contains(&version) {
        return Err(d.error(format!(
            "version {version} is not supported: this client decodes {what} v{} to v{}; \
             pick the request version from that range (intersected with the broker's ApiVersions)",
            supported.start(),
            supported.end()
        )));
    }
    Ok(d)
}

/// Fails if anything is left after the body's last field.
fn finish(d: &Decoder) -> Result<(), DecodeError> {
    match d.remaining() {
        0 => Ok(()),
        n => Err(d.error(format!(
            "{n} trailing bytes after the end of the body; the broker may have answered with \
             a different version than the one requested"
        ))),
    }
}

/// Reads an array whose elements each take at least `min_element_size` bytes on the wire. The
/// count is bounded by the bytes left before anything is allocated.
fn array<T>(
    d: &mut Decoder,
    flexible: bool,
    min_element_size: usize,
    mut read: impl FnMut(&mut Decoder) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    let n = d.array_len(flexible, min_element_size)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(read(d)?);
    }
    Ok(out)
}

/// Reads an array of INT32 (broker ids).
fn i32_array(d: &mut Decoder, flexible: bool) -> Result<Vec<i32>, DecodeError> {
    array(d, flexible, 4, Decoder::i32)
}

/// Smallest encoding of a string or array length prefix: a one-byte varint in flexible
/// versions, else INT16 for strings and INT32 for arrays and bytes.
const fn string_len_size(flexible: bool) -> usize {
    if flexible { 1 } else { 2 }
}

/// See [`string_len_size`].
const fn array_len_size(flexible: bool) -> usize {
    if flexible { 1 } else { 4 }
}

/// Smallest tagged-field section: one byte (count 0) in flexible versions, absent otherwise.
const fn tags_size(flexible: bool) -> usize {
    if flexible { 1 } else { 0 }
}
