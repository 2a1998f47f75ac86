//! The StreamsGroupDescribe request (API key 89, KIP-1071), which `kafka-protocol` 0.18 does
//! not define: a small hand encoder of its only field set (v0, always flexible), plugged into
//! `kafka-protocol`'s `Request` trait so that it goes through the same framing, correlation and
//! timeouts as every other request. The answer is decoded by the responses layer's own
//! StreamsGroupDescribe decoder, never by this type.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_StreamsGroupDescribe>
//! - Kafka's `StreamsGroupDescribeRequest.json` (v0: GroupIds, IncludeAuthorizedOperations;
//!   header v2)

use bytes::BufMut;
use kafka_protocol::protocol::buf::{ByteBuf, ByteBufMut};
use kafka_protocol::protocol::{
    Decodable, Encodable, HeaderVersion, Message, Request, VersionRange,
};

/// The API key of StreamsGroupDescribe.
pub(crate) const STREAMS_GROUP_DESCRIBE_KEY: i16 = 89;

/// A StreamsGroupDescribe request: the groups to describe.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct StreamsGroupDescribeRequest {
    /// The group ids.
    pub(crate) group_ids: Vec<String>,
    /// Whether the answer carries the requester's authorized operations.
    pub(crate) include_authorized_operations: bool,
}

/// Only the response header version matters here: the body is decoded by our own decoder.
#[derive(Clone, Debug, Default)]
pub(crate) struct StreamsGroupDescribeAnswer;

/// An unsigned varint as the flexible versions write lengths (KIP-482).
fn put_varint<B: BufMut>(buf: &mut B, mut n: u32) {
    while n >= 0x80 {
        buf.put_u8((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    buf.put_u8(n as u8);
}

fn varint_size(mut n: u32) -> usize {
    let mut size = 1;
    while n >= 0x80 {
        n >>= 7;
        size += 1;
    }
    size
}

/// A compact length (n + 1), refusing what does not fit the wire's u32.
fn compact_len(n: usize) -> anyhow::Result<u32> {
    u32::try_from(n)
        .ok()
        .and_then(|n| n.checked_add(1))
        .ok_or_else(|| anyhow::anyhow!("{n} elements do not fit a compact length"))
}

impl Message for StreamsGroupDescribeRequest {
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 0 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}

impl Encodable for StreamsGroupDescribeRequest {
    fn encode<B: ByteBufMut>(&self, buf: &mut B, version: i16) -> anyhow::Result<()> {
        anyhow::ensure!(
            version == 0,
            "StreamsGroupDescribe v{version} is not encoded here"
        );
        put_varint(buf, compact_len(self.group_ids.len())?);
        for id in &self.group_ids {
            put_varint(buf, compact_len(id.len())?);
            buf.put_slice(id.as_bytes());
        }
        buf.put_u8(u8::from(self.include_authorized_operations));
        put_varint(buf, 0); // no tagged fields
        Ok(())
    }

    fn compute_size(&self, _version: i16) -> anyhow::Result<usize> {
        let mut size = varint_size(compact_len(self.group_ids.len())?);
        for id in &self.group_ids {
            size += varint_size(compact_len(id.len())?) + id.len();
        }
        Ok(size + 1 + 1)
    }
}

impl Decodable for StreamsGroupDescribeRequest {
    fn decode<B: ByteBuf>(_buf: &mut B, _version: i16) -> anyhow::Result<Self> {
        anyhow::bail!("StreamsGroupDescribe requests are only sent, never decoded")
    }
}

impl HeaderVersion for StreamsGroupDescribeRequest {
    fn header_version(_version: i16) -> i16 {
        2
    }
}

impl Request for StreamsGroupDescribeRequest {
    const KEY: i16 = STREAMS_GROUP_DESCRIBE_KEY;
    type Response = StreamsGroupDescribeAnswer;
}

impl Message for StreamsGroupDescribeAnswer {
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 0 };
    const DEPRECATED_VERSIONS: Option<VersionRange> = None;
}

impl Encodable for StreamsGroupDescribeAnswer {
    fn encode<B: ByteBufMut>(&self, _buf: &mut B, _version: i16) -> anyhow::Result<()> {
        anyhow::bail!("StreamsGroupDescribe responses are only decoded, never encoded")
    }

    fn compute_size(&self, _version: i16) -> anyhow::Result<usize> {
        anyhow::bail!("StreamsGroupDescribe responses are only decoded, never encoded")
    }
}

impl Decodable for StreamsGroupDescribeAnswer {
    fn decode<B: ByteBuf>(_buf: &mut B, _version: i16) -> anyhow::Result<Self> {
        anyhow::bail!("StreamsGroupDescribe responses are decoded by the responses layer")
    }
}

impl HeaderVersion for StreamsGroupDescribeAnswer {
    fn header_version(_version: i16) -> i16 {
        // Every version is flexible: response header v1 (tagged fields).
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    #[test]
    fn encodes_compact_ids_the_flag_and_no_tags() {
        let request = StreamsGroupDescribeRequest {
            group_ids: vec!["app".into(), "b".into()],
            include_authorized_operations: true,
        };
        let mut buf = BytesMut::new();
        request.encode(&mut buf, 0).unwrap();
        assert_eq!(&buf[..], &[3, 4, b'a', b'p', b'p', 2, b'b', 1, 0]);
        assert_eq!(request.compute_size(0).unwrap(), buf.len());
        assert!(request.encode(&mut BytesMut::new(), 1).is_err());
    }

    #[test]
    fn long_lengths_take_several_varint_bytes() {
        let request = StreamsGroupDescribeRequest {
            group_ids: vec!["x".repeat(200)],
            include_authorized_operations: false,
        };
        let mut buf = BytesMut::new();
        request.encode(&mut buf, 0).unwrap();
        // 201 = 0xc9: 0xc9 0x01.
        assert_eq!(&buf[..3], &[2, 0xc9, 0x01]);
        assert_eq!(request.compute_size(0).unwrap(), buf.len());
    }
}
