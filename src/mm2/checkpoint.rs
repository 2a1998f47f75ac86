//! Checkpoint records: what `MirrorCheckpointTask` writes to `<alias>.checkpoints.internal` and
//! what `RemoteClusterUtils.translateOffsets` reads back.
//!
//! * Key: `group: STRING`, `topic: STRING` (the *downstream* topic name), `partition: INT32`.
//! * Value: `version: INT16` (0), then for v0 `upstreamOffset: INT64`, `offset: INT64` (the
//!   downstream offset) and `metadata: STRING`.
//!
//! Decoding follows Java's `Checkpoint.deserializeRecord`: a version other than 0 is decoded as v0
//! (Java's `assert version == 0` is off in production) and reported in [`CheckpointValue::version`]
//! so the caller can count it; trailing bytes are ignored; a negative string length or a field
//! that runs past the end is an error. Strings come back as raw bytes borrowed from the record;
//! copy them out with the crate's lossy decoder, which replaces invalid UTF-8 exactly as Java does.
//!
//! ```
//! use mm2_offsets::mm2::checkpoint::{decode_key, decode_value};
//!
//! let key = [0, 1, b'g', 0, 1, b't', 0, 0, 0, 0];
//! let value = [0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 8, 0, 1, b'm'];
//! let key = decode_key(&key)?;
//! let value = decode_value(&value)?;
//! assert_eq!((key.group, key.topic, key.partition), (&b"g"[..], &b"t"[..], 0));
//! assert_eq!((value.upstream_offset, value.downstream_offset), (7, 8));
//! # Ok::<(), mm2_offsets::mm2::DecodeError>(())
//! ```
//!
//! # References
//! - Kafka: `connect/mirror-client/src/main/java/org/apache/kafka/connect/mirror/Checkpoint.java`
//! - KIP-382: <https://cwiki.apache.org/confluence/display/KAFKA/KIP-382%3A+MirrorMaker+2.0>

use super::Mm2Error;
use super::codec::{Part, Reader, put_string};
use super::error::DecodeError;

/// The value version MirrorMaker 2 writes (Java's `Checkpoint.VERSION`).
pub const VERSION: i16 = 0;

/// A checkpoint key, borrowed from the record's key bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CheckpointKey<'a> {
    /// The consumer group id (raw bytes; UTF-8 unless the record is odd).
    pub group: &'a [u8],
    /// The downstream (target-cluster) topic name, already renamed by the replication policy.
    pub topic: &'a [u8],
    /// The partition.
    pub partition: i32,
}

/// A checkpoint value, borrowed from the record's value bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CheckpointValue<'a> {
    /// The header's version. Anything other than [`VERSION`] was still decoded as v0, as Java
    /// does; callers may count such records.
    pub version: i16,
    /// The group's committed offset on the source cluster.
    pub upstream_offset: i64,
    /// The translated offset on the target cluster: what the group should resume from there.
    pub downstream_offset: i64,
    /// The source commit's metadata string (raw bytes; empty when there was none).
    pub metadata: &'a [u8],
}

/// Decodes a checkpoint key. Trailing bytes are ignored.
///
/// # Errors
/// [`DecodeFailure::KeyTruncated`](super::DecodeFailure::KeyTruncated) if a field runs past the
/// end, [`DecodeFailure::NegativeLength`](super::DecodeFailure::NegativeLength) for a negative
/// string length.
pub fn decode_key(bytes: &[u8]) -> Result<CheckpointKey<'_>, DecodeError> {
    let mut r = Reader::new(bytes, Part::Key, "checkpoint key");
    Ok(CheckpointKey {
        group: r.string("group")?,
        topic: r.string("topic")?,
        partition: r.i32("partition")?,
    })
}

/// Decodes a checkpoint value (header and v0 body). Trailing bytes are ignored.
///
/// # Errors
/// [`DecodeFailure::ValueTruncated`](super::DecodeFailure::ValueTruncated) if a field runs past
/// the end, [`DecodeFailure::NegativeLength`](super::DecodeFailure::NegativeLength) for a
/// negative metadata length.
pub fn decode_value(bytes: &[u8]) -> Result<CheckpointValue<'_>, DecodeError> {
    let mut r = Reader::new(bytes, Part::Value, "checkpoint value");
    Ok(CheckpointValue {
        version: r.i16("version")?,
        upstream_offset: r.i64("upstreamOffset")?,
        downstream_offset: r.i64("offset")?,
        metadata: r.string("metadata")?,
    })
}

/// Decodes a whole checkpoint record in Java's order (value header, value body, then key), so a
/// record broken in both halves is reported for its value, as `Checkpoint.deserializeRecord`
/// would fail on it.
///
/// ```
/// use mm2_offsets::mm2::{checkpoint, DecodeFailure};
///
/// let err = checkpoint::decode(&[0, 1], &[0]).unwrap_err();
/// assert_eq!(err.reason, DecodeFailure::ValueTruncated);
/// ```
///
/// # Errors
/// As [`decode_value`], then [`decode_key`].
pub fn decode<'k, 'v>(
    key: &'k [u8],
    value: &'v [u8],
) -> Result<(CheckpointKey<'k>, CheckpointValue<'v>), DecodeError> {
    let value = decode_value(value)?;
    Ok((decode_key(key)?, value))
}

/// Encodes a checkpoint key as MirrorMaker 2 writes it: public on purpose, to build the input of
/// [`BatchTranslator`](crate::translate::BatchTranslator) in tests and tools.
///
/// # Errors
/// [`Mm2Error::StringTooLong`] if the group or topic is longer than 32767 bytes.
pub fn encode_key(key: &CheckpointKey<'_>) -> Result<Vec<u8>, Mm2Error> {
    let mut out = Vec::with_capacity(8 + key.group.len() + key.topic.len());
    put_string(&mut out, "group", key.group)?;
    put_string(&mut out, "topic", key.topic)?;
    out.extend_from_slice(&key.partition.to_be_bytes());
    Ok(out)
}

/// Encodes a checkpoint value: the header with `value.version`, then the v0 body (Java writes
/// the v0 body whatever the version). For tests, fixtures and benchmarks.
///
/// # Errors
/// [`Mm2Error::StringTooLong`] if the metadata is longer than 32767 bytes.
pub fn encode_value(value: &CheckpointValue<'_>) -> Result<Vec<u8>, Mm2Error> {
    let mut out = Vec::with_capacity(20 + value.metadata.len());
    out.extend_from_slice(&value.version.to_be_bytes());
    out.extend_from_slice(&value.upstream_offset.to_be_bytes());
    out.extend_from_slice(&value.downstream_offset.to_be_bytes());
    put_string(&mut out, "metadata", value.metadata)?;
    Ok(out)
}

/// The key and value of an MM2 checkpoint of `group` for `orders`-`partition`, for
/// a test that writes checkpoints topics (the client's fake cluster).
#[cfg(test)]
pub(crate) fn record_for_tests(
    group: &str,
    partition: i32,
    upstream_offset: i64,
    downstream_offset: i64,
) -> (Option<Vec<u8>>, Vec<u8>) {
    let key = CheckpointKey {
        group: group.as_bytes(),
        topic: b"orders",
        partition,
    };
    let value = CheckpointValue {
        version: 0,
        upstream_offset,
        downstream_offset,
        metadata: b"",
    };
    (
        Some(encode_key(&key).expect("key")),
        encode_value(&value).expect("value"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm2::DecodeFailure;
    use proptest::prelude::*;

    // The bytes of Checkpoint(group="g", tp=("t",0), upstream=7, downstream=8, metadata="m"), as
    // Java's Checkpoint.recordKey()/recordValue() produce them (mm2-semantics.md §1.4).
    const KEY: [u8; 10] = [0x00, 0x01, 0x67, 0x00, 0x01, 0x74, 0x00, 0x00, 0x00, 0x00];
    const VALUE: [u8; 21] = [
        0x00, 0x00, // version
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, // upstreamOffset
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, // offset
        0x00, 0x01, 0x6d, // metadata
    ];

    #[test]
    fn decodes_the_documented_example() {
        let key = decode_key(&KEY).unwrap();
        assert_eq!(
            key,
            CheckpointKey {
                group: b"g",
                topic: b"t",
                partition: 0
            }
        );
        let value = decode_value(&VALUE).unwrap();
        assert_eq!(
            value,
            CheckpointValue {
                version: 0,
                upstream_offset: 7,
                downstream_offset: 8,
                metadata: b"m"
            }
        );
    }

    #[test]
    fn encodes_the_documented_example() {
        let key = CheckpointKey {
            group: b"g",
            topic: b"t",
            partition: 0,
        };
        let value = CheckpointValue {
            version: 0,
            upstream_offset: 7,
            downstream_offset: 8,
            metadata: b"m",
        };
        assert_eq!(encode_key(&key).unwrap(), KEY);
        assert_eq!(encode_value(&value).unwrap(), VALUE);
    }

    #[test]
    fn whole_records_decode_value_first() {
        let (key, value) = decode(&KEY, &VALUE).unwrap();
        assert_eq!((key.group, value.downstream_offset), (&b"g"[..], 8));
        assert_eq!(
            decode(&[], &[]).unwrap_err().reason,
            DecodeFailure::ValueTruncated
        );
        assert_eq!(
            decode(&[], &VALUE).unwrap_err().reason,
            DecodeFailure::KeyTruncated
        );
    }

    #[test]
    fn other_versions_decode_as_v0_and_say_so() {
        let mut value = VALUE;
        value[1] = 1;
        let decoded = decode_value(&value).unwrap();
        assert_eq!(decoded.version, 1);
        assert_eq!(decoded.downstream_offset, 8);
        assert_eq!(decoded.metadata, b"m");
    }

    #[test]
    fn trailing_bytes_are_ignored() {
        let mut key = KEY.to_vec();
        key.extend_from_slice(b"junk");
        assert_eq!(decode_key(&key).unwrap().topic, b"t");
        let mut value = VALUE.to_vec();
        value.push(0xff);
        assert_eq!(decode_value(&value).unwrap().metadata, b"m");
    }

    #[test]
    fn every_truncation_of_the_key_fails_with_the_field_it_cut() {
        let expected = [
            "group",
            "group",
            "group",
            "topic",
            "topic",
            "topic",
            "partition",
            "partition",
            "partition",
            "partition",
        ];
        for (len, field) in expected.iter().enumerate() {
            let err = decode_key(&KEY[..len]).unwrap_err();
            assert_eq!(err.reason, DecodeFailure::KeyTruncated, "len {len}");
            assert_eq!(err.field, *field, "len {len}");
        }
    }

    #[test]
    fn every_truncation_of_the_value_fails() {
        for len in 0..VALUE.len() {
            let err = decode_value(&VALUE[..len]).unwrap_err();
            assert_eq!(err.reason, DecodeFailure::ValueTruncated, "len {len}");
        }
        assert_eq!(decode_value(&VALUE[..1]).unwrap_err().field, "version");
        assert_eq!(
            decode_value(&VALUE[..9]).unwrap_err().field,
            "upstreamOffset"
        );
        assert_eq!(decode_value(&VALUE[..17]).unwrap_err().field, "offset");
        assert_eq!(decode_value(&VALUE[..20]).unwrap_err().field, "metadata");
    }

    #[test]
    fn negative_string_lengths_are_rejected() {
        let key = [0xff, 0xff, 0x00, 0x01, 0x74, 0, 0, 0, 0];
        let err = decode_key(&key).unwrap_err();
        assert_eq!(
            (err.reason, err.field),
            (DecodeFailure::NegativeLength, "group")
        );

        let mut value = VALUE;
        value[18] = 0x80; // metadata length 0x8001
        let err = decode_value(&value).unwrap_err();
        assert_eq!(
            (err.reason, err.field),
            (DecodeFailure::NegativeLength, "metadata")
        );
    }

    #[test]
    fn invalid_utf8_is_kept_as_bytes() {
        let key = [0x00, 0x01, 0xff, 0x00, 0x00, 0, 0, 0, 3];
        let decoded = decode_key(&key).unwrap();
        assert_eq!(decoded.group, &[0xff]);
        assert_eq!(decoded.topic, b"");
        assert_eq!(decoded.partition, 3);
    }

    #[test]
    fn encoding_refuses_overlong_strings() {
        let long = vec![b'x'; 40_000];
        let key = CheckpointKey {
            group: &long,
            topic: b"t",
            partition: 0,
        };
        assert!(matches!(
            encode_key(&key),
            Err(Mm2Error::StringTooLong { field: "group", .. })
        ));
    }

    fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(any::<u8>(), 0..max)
    }

    proptest! {
        #[test]
        fn key_round_trips(group in bytes(300), topic in bytes(300), partition: i32) {
            let key = CheckpointKey { group: &group, topic: &topic, partition };
            let encoded = encode_key(&key).unwrap();
            prop_assert_eq!(decode_key(&encoded).unwrap(), key);
        }

        #[test]
        fn value_round_trips(version: i16, upstream: i64, downstream: i64, metadata in bytes(300)) {
            let value = CheckpointValue {
                version,
                upstream_offset: upstream,
                downstream_offset: downstream,
                metadata: &metadata,
            };
            let encoded = encode_value(&value).unwrap();
            prop_assert_eq!(decode_value(&encoded).unwrap(), value);
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in bytes(64)) {
            let _ = decode_key(&data);
            let _ = decode_value(&data);
        }
    }
}
