//! Test helpers: the broker side of the protocol, built on `kafka-protocol`'s broker feature, and
//! a fake broker listening on 127.0.0.1.

use std::future::Future;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Encodable, HeaderVersion, decode_request_header_from_buffer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Reads one request frame and decodes its header; returns the header and the request body.
/// `None` at end of stream.
pub(crate) async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
) -> Option<(RequestHeader, Bytes)> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).await.ok()?;
    let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut frame).await.ok()?;
    let mut buf = Bytes::from(frame);
    let header = decode_request_header_from_buffer(&mut buf).expect("request header");
    Some((header, buf))
}

/// Encodes a response frame with the header version the response type uses at `version`.
pub(crate) fn response_frame<R: Encodable + HeaderVersion>(
    correlation_id: i32,
    response: &R,
    version: i16,
) -> Vec<u8> {
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut buf, R::header_version(version))
        .expect("response header");
    response.encode(&mut buf, version).expect("response");
    let size = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    buf.to_vec()
}

/// An ApiVersions response listing `ranges`.
pub(crate) fn api_versions_response(ranges: &[(ApiKey, i16, i16)]) -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_api_keys(
        ranges
            .iter()
            .map(|(key, min, max)| {
                ApiVersion::default()
                    .with_api_key(*key as i16)
                    .with_min_version(*min)
                    .with_max_version(*max)
            })
            .collect(),
    )
}

/// What a Kafka 4.x broker lists for the APIs we use (KIP-896 floors).
pub(crate) const KAFKA_4_RANGES: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Fetch, 4, 17),
    (ApiKey::ListOffsets, 1, 10),
    (ApiKey::Metadata, 0, 13),
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::SaslAuthenticate, 0, 2),
];

/// Reads an ApiVersions request and answers it with `ranges`, at the version asked.
pub(crate) async fn answer_api_versions<S>(stream: &mut S, ranges: &[(ApiKey, i16, i16)])
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (header, _) = read_request(stream).await.expect("ApiVersions request");
    assert_eq!(header.request_api_key, ApiKey::ApiVersions as i16);
    let frame = response_frame(
        header.correlation_id,
        &api_versions_response(ranges),
        header.request_api_version,
    );
    stream.write_all(&frame).await.expect("write response");
}

/// A broker on 127.0.0.1 that hands each accepted connection to `handler`.
pub(crate) struct FakeBroker {
    pub address: String,
    task: JoinHandle<()>,
}

impl FakeBroker {
    pub(crate) async fn start<F, Fut>(handler: F) -> FakeBroker
    where
        F: Fn(TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("local address").to_string();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(handler(stream));
            }
        });
        FakeBroker { address, task }
    }
}

impl Drop for FakeBroker {
    fn drop(&mut self) {
        self.task.abort();
    }
}
