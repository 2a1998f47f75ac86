//! Heartbeat records: what `MirrorHeartbeatTask` writes to the `heartbeats` topic of each target
//! cluster. Their replicas (`<source>.heartbeats`, …) are how `MirrorClient` discovers upstream
//! clusters (see [`crate::mm2::topology`]).
//!
//! * Key: `sourceClusterAlias: STRING`, `targetClusterAlias: STRING`.
//! * Value: `version: INT16` (0), then for v0 `timestamp: INT64` (milliseconds since the epoch).
//!
//! As for checkpoints, another version is decoded as v0 and reported, and trailing bytes are
//! ignored.
//!
//! ```
//! use mm2_offsets::mm2::heartbeat::{decode_key, decode_value};
//!
//! let key = decode_key(&[0, 1, b'a', 0, 1, b'b'])?;
//! assert_eq!((key.source_cluster_alias, key.target_cluster_alias), (&b"a"[..], &b"b"[..]));
//! assert_eq!(decode_value(&[0, 0, 0, 0, 0, 0, 0, 0, 0x04, 0xd2])?.timestamp, 1234);
//! # Ok::<(), mm2_offsets::mm2::DecodeError>(())
//! ```
//!
//! # References
//! - Kafka: `connect/mirror-client/src/main/java/org/apache/kafka/connect/mirror/Heartbeat.java`

use super::Mm2Error;
use super::codec::{Part, Reader, put_string};
use super::error::DecodeError;

/// The value version MirrorMaker 2 writes (Java's `Heartbeat.VERSION`).
pub const VERSION: i16 = 0;

/// A heartbeat key, borrowed from the record's key bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HeartbeatKey<'a> {
    /// The alias of the cluster the heartbeat flow starts from.
    pub source_cluster_alias: &'a [u8],
    /// The alias of the cluster it was written to.
    pub target_cluster_alias: &'a [u8],
}

/// A heartbeat value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HeartbeatValue {
    /// The header's version; another than [`VERSION`] was still decoded as v0.
    pub version: i16,
    /// When the heartbeat was emitted, in milliseconds since the Unix epoch.
    pub timestamp: i64,
}

/// Decodes a heartbeat key. Trailing bytes are ignored.
///
/// # Errors
/// A [`DecodeError`] naming the field that is truncated or has a negative length.
pub fn decode_key(bytes: &[u8]) -> Result<HeartbeatKey<'_>, DecodeError> {
    let mut r = Reader::new(bytes, Part::Key, "heartbeat key");
    Ok(HeartbeatKey {
        source_cluster_alias: r.string("sourceClusterAlias")?,
        target_cluster_alias: r.string("targetClusterAlias")?,
    })
}

/// Decodes a heartbeat value. Trailing bytes are ignored.
///
/// # Errors
/// A [`DecodeError`] if the value is shorter than 10 bytes.
pub fn decode_value(bytes: &[u8]) -> Result<HeartbeatValue, DecodeError> {
    let mut r = Reader::new(bytes, Part::Value, "heartbeat value");
    Ok(HeartbeatValue {
        version: r.i16("version")?,
        timestamp: r.i64("timestamp")?,
    })
}

/// Encodes a heartbeat key as MirrorMaker 2 writes it.
///
/// # Errors
/// [`Mm2Error::StringTooLong`] if an alias is longer than 32767 bytes.
pub fn encode_key(key: &HeartbeatKey<'_>) -> Result<Vec<u8>, Mm2Error> {
    let mut out =
        Vec::with_capacity(4 + key.source_cluster_alias.len() + key.target_cluster_alias.len());
    put_string(&mut out, "sourceClusterAlias", key.source_cluster_alias)?;
    put_string(&mut out, "targetClusterAlias", key.target_cluster_alias)?;
    Ok(out)
}

/// Encodes a heartbeat value (header with `value.version`, then the v0 body).
pub fn encode_value(value: &HeartbeatValue) -> Vec<u8> {
    let mut out = Vec::with_capacity(10);
    out.extend_from_slice(&value.version.to_be_bytes());
    out.extend_from_slice(&value.timestamp.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm2::DecodeFailure;
    use proptest::prelude::*;

    // Heartbeat("a", "b", 1234).recordKey()/recordValue(), printed by Kafka 4.3.1's jar.
    const KEY: [u8; 6] = [0x00, 0x01, 0x61, 0x00, 0x01, 0x62];
    const VALUE: [u8; 10] = [0x00, 0x00, 0, 0, 0, 0, 0, 0, 0x04, 0xd2];

    #[test]
    fn matches_javas_bytes() {
        let key = HeartbeatKey {
            source_cluster_alias: b"a",
            target_cluster_alias: b"b",
        };
        let value = HeartbeatValue {
            version: 0,
            timestamp: 1234,
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
        let err = decode_key(&[0x00, 0x01, 0x61, 0xff, 0xfe]).unwrap_err();
        assert_eq!(
            (err.reason, err.field),
            (DecodeFailure::NegativeLength, "targetClusterAlias")
        );
    }

    #[test]
    fn other_versions_decode_as_v0() {
        let mut value = VALUE.to_vec();
        value[0] = 0x7f;
        value.push(0); // trailing byte, ignored
        let decoded = decode_value(&value).unwrap();
        assert_eq!((decoded.version, decoded.timestamp), (0x7f00, 1234));
    }

    proptest! {
        #[test]
        fn round_trips(source in proptest::collection::vec(any::<u8>(), 0..100),
                       target in proptest::collection::vec(any::<u8>(), 0..100),
                       version: i16, timestamp: i64) {
            let key = HeartbeatKey { source_cluster_alias: &source, target_cluster_alias: &target };
            let encoded = encode_key(&key).unwrap();
            prop_assert_eq!(decode_key(&encoded).unwrap(), key);
            let value = HeartbeatValue { version, timestamp };
            prop_assert_eq!(decode_value(&encode_value(&value)).unwrap(), value);
        }
    }
}
