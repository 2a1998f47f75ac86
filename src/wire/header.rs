//! Request and response headers.
//!
//! A request is `RequestHeader` (v1, or v2 with tagged fields for flexible versions) followed by
//! the body, both encoded with `kafka-protocol`. A response starts with the correlation id
//! (header v0), followed by tagged fields in header v1. ApiVersions responses always use header
//! v0, whatever the request version (`R::Response::header_version` already says so).
//!
//! # References
//! - <https://kafka.apache.org/protocol#protocol_messages>
//! - KIP-482 (flexible versions and tagged fields)
//! - KIP-511 (ApiVersions response header stays v0)

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::{Encodable, HeaderVersion, Request, StrBytes};

use super::WireError;
use super::decode::Decoder;
use super::frame::seal_frame;

/// The name of a request for messages, e.g. `Fetch v12`.
pub(crate) fn request_name(api_key: i16, version: i16) -> String {
    match ApiKey::try_from(api_key) {
        Ok(api) => format!("{api:?} v{version}"),
        Err(()) => format!("API {api_key} v{version}"),
    }
}

/// Encodes `request` at `version` as one size-prefixed frame, ready to write.
pub(crate) fn encode_request<R: Request>(
    request: &R,
    version: i16,
    correlation_id: i32,
    client_id: &StrBytes,
) -> Result<Bytes, WireError> {
    let name = || request_name(R::KEY, version);
    if version < R::VERSIONS.min || version > R::VERSIONS.max {
        return Err(WireError::Encode {
            request: name(),
            message: format!(
                "this message type only has versions {}..={}",
                R::VERSIONS.min,
                R::VERSIONS.max
            ),
        });
    }
    let header = RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(client_id.clone()));
    let header_version = R::header_version(version);
    let encode_error = |e: &dyn std::fmt::Display| WireError::Encode {
        request: name(),
        message: e.to_string(),
    };
    let size = header
        .compute_size(header_version)
        .and_then(|h| Ok(h + request.compute_size(version)?))
        .map_err(|e| encode_error(&e))?;
    let mut buf = BytesMut::with_capacity(4 + size);
    buf.put_i32(0);
    header
        .encode(&mut buf, header_version)
        .map_err(|e| encode_error(&e))?;
    request
        .encode(&mut buf, version)
        .map_err(|e| encode_error(&e))?;
    seal_frame(buf).map_err(|message| WireError::Encode {
        request: name(),
        message,
    })
}

/// The response header version for request type `R` at `version`.
pub(crate) fn response_header_version<R: Request>(version: i16) -> i16 {
    <R::Response as HeaderVersion>::header_version(version)
}

/// The correlation id of a response frame (its first four bytes), if it has one.
pub(crate) fn correlation_id(frame: &[u8]) -> Option<i32> {
    let bytes: [u8; 4] = frame.get(..4)?.try_into().ok()?;
    Some(i32::from_be_bytes(bytes))
}

/// Strips the response header (`header_version` 0 or 1) and returns the body as a slice of the
/// frame.
pub(crate) fn response_body(
    frame: Bytes,
    header_version: i16,
    request: &'static str,
    version: i16,
) -> Result<Bytes, super::decode::DecodeError> {
    let mut decoder = Decoder::new(frame, request, version);
    decoder.i32()?; // correlation id, already matched by the reader
    if header_version >= 1 {
        decoder.tagged_fields()?;
    }
    Ok(decoder.into_rest())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{ApiVersionsRequest, MetadataRequest};

    #[test]
    fn flexible_request_uses_header_v2_with_tagged_fields() {
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("n"))
            .with_client_software_version(StrBytes::from_static_str("1"));
        let frame = encode_request(&request, 3, 7, &StrBytes::from_static_str("cid")).unwrap();
        let expected: &[u8] = &[
            0, 0, 0, 19, // size
            0, 18, 0, 3, 0, 0, 0, 7, // api key, version, correlation id
            0, 3, b'c', b'i', b'd', // client id (classic string even in header v2)
            0,    // header tagged fields
            2, b'n', 2, b'1', 0, // compact strings, body tagged fields
        ];
        assert_eq!(&frame[..], expected);
    }

    #[test]
    fn classic_request_uses_header_v1() {
        let frame = encode_request(
            &ApiVersionsRequest::default(),
            0,
            -1,
            &StrBytes::from_static_str(""),
        )
        .unwrap();
        assert_eq!(
            &frame[..],
            &[0, 0, 0, 10, 0, 18, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0]
        );
    }

    #[test]
    fn version_outside_the_message_type_is_an_encode_error() {
        let err = encode_request(&MetadataRequest::default(), 99, 1, &StrBytes::new()).unwrap_err();
        assert!(err.to_string().contains("Metadata v99"), "{err}");
        assert!(!err.is_retriable());
    }

    #[test]
    fn response_header_v1_skips_tagged_fields() {
        let frame = Bytes::from_static(&[0, 0, 0, 9, 1, 0, 2, 0xaa, 0xbb, 0x42]);
        let body = response_body(frame, 1, "Test", 0).unwrap();
        assert_eq!(&body[..], &[0x42]);
        let frame = Bytes::from_static(&[0, 0, 0, 9, 0x42]);
        assert_eq!(&response_body(frame, 0, "Test", 0).unwrap()[..], &[0x42]);
    }

    #[test]
    fn truncated_response_header_is_a_decode_error() {
        assert!(response_body(Bytes::from_static(&[0, 0, 0, 9]), 1, "Test", 0).is_err());
        assert_eq!(correlation_id(&[0, 0, 1]), None);
        assert_eq!(correlation_id(&[0, 0, 1, 0, 9]), Some(256));
    }

    #[test]
    fn api_versions_responses_always_use_header_v0() {
        assert_eq!(response_header_version::<ApiVersionsRequest>(3), 0);
        assert_eq!(response_header_version::<MetadataRequest>(12), 1);
    }
}
