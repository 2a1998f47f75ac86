//! Helpers shared by the response decoders' tests.

use bytes::{Bytes, BytesMut};
use kafka_protocol::protocol::{Encodable, StrBytes};

use crate::wire::decode::DecodeError;

/// Encodes a `kafka-protocol` message body at `version`.
pub(super) fn encode<M: Encodable>(message: &M, version: i16) -> Bytes {
    let mut buf = BytesMut::new();
    message
        .encode(&mut buf, version)
        .unwrap_or_else(|e| panic!("kafka-protocol cannot encode v{version}: {e}"));
    buf.freeze()
}

/// A `StrBytes` from an owned string.
pub(super) fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

/// A `kafka-protocol` UUID from 16 bytes. A macro because the `uuid` crate's type, which it
/// takes, is not re-exported; the conversion target is inferred at the call site.
macro_rules! kuuid {
    ($bytes:expr) => {
        $bytes.to_vec().try_into().expect("16 bytes")
    };
}
pub(super) use kuuid;

/// Checks that every strict prefix of a valid `body` and the body plus one byte are rejected
/// (and that none of them panics).
pub(super) fn assert_truncations_and_trailing_rejected<T: std::fmt::Debug>(
    body: &Bytes,
    version: i16,
    decode: impl Fn(Bytes, i16) -> Result<T, DecodeError>,
) {
    for len in 0..body.len() {
        let result = decode(body.slice(..len), version);
        assert!(
            result.is_err(),
            "v{version}: a {len}-byte prefix of a {}-byte body decoded as {result:?}",
            body.len()
        );
    }
    let mut longer = BytesMut::from(&body[..]);
    longer.extend_from_slice(&[0]);
    let err = decode(longer.freeze(), version).expect_err("trailing byte accepted");
    assert!(err.problem.contains("trailing"), "v{version}: {err}");
}

/// For every version in `versions`: `kafka-protocol`'s encoding of `sample(version)` decodes
/// to `expected(version)`, and every truncation of it or trailing byte after it is rejected.
pub(super) fn assert_decodes_every_version<M: Encodable, T: PartialEq + std::fmt::Debug>(
    versions: std::ops::RangeInclusive<i16>,
    sample: impl Fn(i16) -> M,
    expected: impl Fn(i16) -> T,
    decode: impl Fn(Bytes, i16) -> Result<T, DecodeError>,
) {
    for version in versions {
        let body = encode(&sample(version), version);
        let decoded = decode(body.clone(), version).unwrap_or_else(|e| panic!("v{version}: {e}"));
        assert_eq!(decoded, expected(version), "v{version}");
        assert_truncations_and_trailing_rejected(&body, version, &decode);
    }
}
