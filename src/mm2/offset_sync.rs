//! Offset-sync records: what `MirrorSourceTask` writes to `mm2-offset-syncs.<alias>.internal` to
//! pair an upstream offset with the downstream offset it was replicated to. The checkpoint task
//! translates group offsets from them.
//!
//! * Key: `topic: STRING` (the *source* topic), `partition: INT32`.
//! * Value: `upstreamOffset: INT64`, `offset: INT64` (the downstream offset). **No version
//!   header**, unlike checkpoints and heartbeats.
//!
//! ```
//! use mm2_offsets::mm2::offset_sync::{decode_key, decode_value};
//!
//! let key = decode_key(&[0, 1, b't', 0, 0, 0, 2])?;
//! assert_eq!((key.topic, key.partition), (&b"t"[..], 2));
//! let value = decode_value(&[0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 9])?;
//! assert_eq!((value.upstream_offset, value.downstream_offset), (5, 9));
//! # Ok::<(), mm2_offsets::mm2::DecodeError>(())
//! ```
//!
//! # References
//! - Kafka: `connect/mirror/src/main/java/org/apache/kafka/connect/mirror/OffsetSync.java`

use super::Mm2Error;
use super::codec::{Part, Reader, put_string};
use super::error::DecodeError;

/// An offset-sync key, borrowed from the record's key bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OffsetSyncKey<'a> {
    /// The upstream (source-cluster) topic.
    pub topic: &'a [u8],
    /// The partition.
    pub partition: i32,
}

/// An offset-sync value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OffsetSyncValue {
    /// The offset of a record on the source cluster.
    pub upstream_offset: i64,
    /// The offset the same record got on the target cluster.
    pub downstream_offset: i64,
}

/// Decodes an offset-sync key. Trailing bytes are ignored.
///
/// # Errors
/// A [`DecodeError`] naming the field that is truncated or has a negative length.
pub fn decode_key(bytes: &[u8]) -> Result<OffsetSyncKey<'_>, DecodeError> {
    let mut r = Reader::new(bytes, Part::Key, "offset-sync key");
    Ok(OffsetSyncKey {
        topic: r.string("topic")?,
        partition: r.i32("partition")?,
    })
}

/// Decodes an offset-sync value. Trailing bytes are ignored.
///
/// # Errors
/// A [`DecodeError`] if the value is shorter than 16 bytes.
pub fn decode_value(bytes: &[u8]) -> Result<OffsetSyncValue, DecodeError> {
    let mut r = Reader::new(bytes, Part::Value, "offset-sync value");
    Ok(OffsetSyncValue {
        upstream_offset: r.i64("upstreamOffset")?,
        downstream_offset: r.i64("offset")?,
    })
}

/// Encodes an offset-sync key as MirrorMaker 2 writes it.
///
/// # Errors
/// [`Mm2Error::StringTooLong`] if the topic is longer than 32767 bytes.
pub fn encode_key(key: &OffsetSyncKey<'_>) -> Result<Vec<u8>, Mm2Error> {
    let mut out = Vec::with_capacity(6 + key.topic.len());
    put_string(&mut out, "topic", key.topic)?;
    out.extend_from_slice(&key.partition.to_be_bytes());
    Ok(out)
}

/// Encodes an offset-sync value.
pub fn encode_value(value: &OffsetSyncValue) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    out.extend_from_slice(&value.upstream_offset.to_be_bytes());
    out.extend_from_slice(&value.downstream_offset.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm2::DecodeFailure;
    use proptest::prelude::*;

    // OffsetSync(("t", 2), 5, 9).recordKey()/recordValue(), printed by Kafka 4.3.1's jar.
    const KEY: [u8; 7] = [0x00, 0x01, 0x74, 0x00, 0x00, 0x00, 0x02];
    const VALUE: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 9];

    #[test]
    fn matches_javas_bytes() {
        let key = OffsetSyncKey {
            topic: b"t",
            partition: 2,
        };
        let value = OffsetSyncValue {
            upstream_offset: 5,
            downstream_offset: 9,
        };
        assert_eq!(encode_key(&key).unwrap(), KEY);
        assert_eq!(encode_value(&value), VALUE);
        assert_eq!(decode_key(&KEY).unwrap(), key);
        assert_eq!(decode_value(&VALUE).unwrap(), value);
    }

    #[test]
    fn truncation_and_negative_lengths_are_errors() {
        for len in 0..KEY.len() {
            assert_eq!(
                decode_key(&KEY[..len]).unwrap_err().reason,
                DecodeFailure::KeyTruncated
            );
        }
        for len in 0..VALUE.len() {
            assert_eq!(
                decode_value(&VALUE[..len]).unwrap_err().reason,
                DecodeFailure::ValueTruncated
            );
        }
        let err = decode_key(&[0x80, 0x00, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(
            (err.reason, err.field),
            (DecodeFailure::NegativeLength, "topic")
        );
    }

    proptest! {
        #[test]
        fn round_trips(topic in proptest::collection::vec(any::<u8>(), 0..100), partition: i32,
                       upstream: i64, downstream: i64) {
            let key = OffsetSyncKey { topic: &topic, partition };
            let encoded = encode_key(&key).unwrap();
            prop_assert_eq!(decode_key(&encoded).unwrap(), key);
            let value = OffsetSyncValue { upstream_offset: upstream, downstream_offset: downstream };
            prop_assert_eq!(decode_value(&encode_value(&value)).unwrap(), value);
        }
    }
}
