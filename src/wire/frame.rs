//! Kafka's framing: every request and response is a big-endian INT32 size followed by that many
//! bytes.
//!
//! Reading checks the announced size against the configured limit before anything is allocated,
//! and grows the buffer as bytes arrive, so a peer that announces a large frame and then stalls
//! cannot make us reserve it all up front.
//!
//! # References
//! - <https://kafka.apache.org/protocol#protocol_common>

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::WireError;

/// The first allocation for a frame body; later growth follows the bytes that actually arrive.
/// 2 MiB holds a whole Fetch answer of Java's default `max.partition.fetch.bytes` (1 MiB) and
/// record matching's window Fetches, so those arrive in one allocation: growing from 64 KiB
/// by doubling copied about the whole frame once more (`memmove` was the largest cost after
/// the CRC on the match benchmark's spread case, BENCHMARKS.md). What a peer can make us
/// reserve before sending is still bounded, by this, and the pages are touched only as bytes
/// arrive.
const INITIAL_CHUNK: usize = 2 * 1024 * 1024;

/// Reads one size-prefixed frame and returns its body (without the size).
///
/// `max` is `ClientConfig::max_response_size`. A clean end of stream before the size is
/// [`WireError::Closed`]; a negative size is [`WireError::MalformedFrame`]; a size above `max` is
/// [`WireError::FrameTooLarge`].
pub(crate) async fn read_frame<R>(
    reader: &mut R,
    max: usize,
    broker: &str,
) -> Result<Bytes, WireError>
where
    R: AsyncRead + Unpin,
{
    let mut prefix = [0u8; 4];
    let mut got = 0;
    while got < prefix.len() {
        let n = reader
            .read(&mut prefix[got..])
            .await
            .map_err(|source| read_error(broker, source))?;
        if n == 0 {
            return Err(WireError::Closed {
                broker: broker.to_string(),
                context: if got == 0 {
                    "(end of stream before a response)".to_string()
                } else {
                    format!("in the middle of a frame size ({got} of 4 bytes)")
                },
            });
        }
        got += n;
    }

    let size = check_size(prefix, max, broker)?;
    // A Vec with exact reservations: the frame ends up in an allocation of its own size, where
    // doubling growth could leave up to twice that alive for as long as slices of it are.
    let mut buf: Vec<u8> = Vec::with_capacity(size.min(INITIAL_CHUNK));
    while buf.len() < size {
        if buf.len() == buf.capacity() {
            // Double what we have, up to the frame size: growth is paid for by bytes received.
            let left = size - buf.len();
            buf.reserve_exact(left.min(buf.len().max(INITIAL_CHUNK)));
        }
        let want = (size - buf.len()) as u64;
        let n = (&mut *reader)
            .take(want)
            .read_buf(&mut buf)
            .await
            .map_err(|source| read_error(broker, source))?;
        if n == 0 {
            return Err(WireError::Closed {
                broker: broker.to_string(),
                context: format!(
                    "in the middle of a response frame (got {} of {size} bytes)",
                    buf.len()
                ),
            });
        }
    }
    Ok(Bytes::from(buf))
}

fn read_error(broker: &str, source: std::io::Error) -> WireError {
    super::tls_stream::io_error(broker, "reading from", source)
}

/// Validates a size prefix before any allocation.
fn check_size(prefix: [u8; 4], max: usize, broker: &str) -> Result<usize, WireError> {
    let size = i32::from_be_bytes(prefix);
    if size < 0 {
        return Err(WireError::MalformedFrame {
            broker: broker.to_string(),
            problem: format!("negative frame size {size}{}", hint(prefix)),
        });
    }
    // i32 to usize cannot fail on the 32- and 64-bit targets we build for; a failure would mean
    // the frame cannot be held anyway.
    let size_usize = usize::try_from(size).unwrap_or(usize::MAX);
    if size_usize > max {
        return Err(WireError::FrameTooLarge {
            broker: broker.to_string(),
            size: size as u64,
            max,
            hint: hint(prefix),
        });
    }
    Ok(size_usize)
}

/// A guess at why a size prefix is absurd: the peer speaks TLS or a text protocol.
fn hint(prefix: [u8; 4]) -> &'static str {
    match prefix {
        // A TLS record header: content type 0x14..=0x17 and major version 3.
        [0x14..=0x17, 0x03, ..] => {
            "; the peer answered with TLS: use security_protocol SSL or SASL_SSL for this listener"
        }
        [b'H', b'T', b'T', b'P'] => "; the peer answered with HTTP: this is not a Kafka listener",
        _ if prefix.iter().all(|b| b.is_ascii_graphic() || *b == b' ') => {
            "; the peer answered with text: this may not be a Kafka listener"
        }
        _ => "",
    }
}

/// Prepends the INT32 size to a frame body written after four reserved bytes.
///
/// Callers reserve the first four bytes of `buf` (e.g. `buf.put_i32(0)`) and write the frame
/// after them; this fills in the size.
pub(crate) fn seal_frame(mut buf: BytesMut) -> Result<Bytes, String> {
    let body = buf.len().saturating_sub(4);
    let size = i32::try_from(body).map_err(|_| format!("frame of {body} bytes is too large"))?;
    if buf.len() < 4 {
        return Err("frame buffer misses its size prefix".to_string());
    }
    buf[..4].copy_from_slice(&size.to_be_bytes());
    Ok(buf.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;
    use tokio::io::AsyncWriteExt;

    async fn read_from(bytes: &[u8], max: usize) -> Result<Bytes, WireError> {
        let mut reader = bytes;
        read_frame(&mut reader, max, "b:1").await
    }

    #[tokio::test]
    async fn reads_a_frame_and_leaves_the_next() {
        let data = [0, 0, 0, 2, 0xaa, 0xbb, 0, 0, 0, 1, 0xcc];
        let mut reader = &data[..];
        let first = read_frame(&mut reader, 100, "b:1").await.unwrap();
        assert_eq!(&first[..], &[0xaa, 0xbb]);
        let second = read_frame(&mut reader, 100, "b:1").await.unwrap();
        assert_eq!(&second[..], &[0xcc]);
        let end = read_frame(&mut reader, 100, "b:1").await.unwrap_err();
        assert!(matches!(end, WireError::Closed { .. }), "{end}");
    }

    #[tokio::test]
    async fn negative_size_is_malformed() {
        let err = read_from(&[0xff, 0xff, 0xff, 0xfe], 100).await.unwrap_err();
        assert!(err.to_string().contains("negative frame size -2"), "{err}");
        assert!(!err.is_retriable());
    }

    #[tokio::test]
    async fn oversized_frame_is_rejected_from_the_prefix_alone() {
        // Only the prefix is present: the check must not wait for (or allocate) the body.
        let err = read_from(&[0x7f, 0xff, 0xff, 0xff], 100 * 1024 * 1024)
            .await
            .unwrap_err();
        match &err {
            WireError::FrameTooLarge { size, max, .. } => {
                assert_eq!(*size, 0x7fff_ffff);
                assert_eq!(*max, 100 * 1024 * 1024);
            }
            other => panic!("unexpected {other}"),
        }
        // The limit is inclusive.
        assert_eq!(read_from(&[0, 0, 0, 3, 1, 2, 3], 3).await.unwrap().len(), 3);
        assert!(read_from(&[0, 0, 0, 4, 1, 2, 3, 4], 3).await.is_err());
    }

    #[tokio::test]
    async fn tls_and_http_answers_get_a_hint() {
        let err = read_from(&[0x15, 0x03, 0x03, 0x00, 0x02], 1 << 20)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("SSL"), "{err}");
        let err = read_from(b"HTTP/1.1 400", 1 << 20).await.unwrap_err();
        assert!(err.to_string().contains("HTTP"), "{err}");
    }

    #[tokio::test]
    async fn truncated_body_reports_how_much_arrived() {
        let err = read_from(&[0, 0, 0, 10, 1, 2, 3], 100).await.unwrap_err();
        assert!(
            err.to_string().contains("got 3 of 10 bytes"),
            "unexpected: {err}"
        );
        let err = read_from(&[0, 0], 100).await.unwrap_err();
        assert!(err.to_string().contains("2 of 4 bytes"), "{err}");
    }

    #[tokio::test]
    async fn large_frame_arriving_in_pieces_is_reassembled() {
        let size = 3 * INITIAL_CHUNK + 17;
        let (mut client, mut server) = tokio::io::duplex(1000);
        let writer = tokio::spawn(async move {
            let mut frame = Vec::with_capacity(size + 4);
            frame.put_i32(size as i32);
            frame.extend((0..size).map(|i| (i % 251) as u8));
            server.write_all(&frame).await.unwrap();
        });
        let body = read_frame(&mut client, size, "b:1").await.unwrap();
        writer.await.unwrap();
        assert_eq!(body.len(), size);
        assert!(body.iter().enumerate().all(|(i, b)| *b == (i % 251) as u8));
    }

    #[test]
    fn seal_writes_the_body_length() {
        let mut buf = BytesMut::new();
        buf.put_i32(0);
        buf.put_slice(b"abc");
        assert_eq!(
            &seal_frame(buf).unwrap()[..],
            &[0, 0, 0, 3, b'a', b'b', b'c']
        );
    }
}
