//! Response bodies made of shared bytes: a large document rendered once is sent to every client
//! as slices of the same buffer (no copy per request), 64 KiB per frame so that a client that
//! reads slowly holds a reference, not a copy; and gzip of such a document with a per-request
//! tail, without compressing the shared part again.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use flate2::{Compress, Compression, Crc, FlushCompress, Status};
use hyper::body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// The most bytes one frame carries.
const FRAME: usize = 64 * 1024;

/// A body of shared byte buffers, sent in frames of at most 64 KiB, failing (which ends the
/// connection) when its deadline passes before it is all sent.
pub struct Body {
    parts: VecDeque<Bytes>,
    remaining: u64,
    deadline: Option<Pin<Box<Sleep>>>,
    /// Kept alive until the body is dropped (a slot, the document it is sent from).
    _hold: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl Body {
    pub fn new(parts: impl IntoIterator<Item = Bytes>) -> Self {
        let parts: VecDeque<Bytes> = parts.into_iter().filter(|p| !p.is_empty()).collect();
        let remaining = parts.iter().map(|p| p.len() as u64).sum();
        Body {
            parts,
            remaining,
            deadline: None,
            _hold: None,
        }
    }

    /// Keeps `value` alive as long as the body.
    pub fn holding(mut self, value: impl std::any::Any + Send + Sync) -> Self {
        self._hold = Some(Box::new(value));
        self
    }

    /// A body that fails when it is not all sent by `deadline`: a client that reads a large
    /// document a few bytes at a time does not hold it (and its slot) forever.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(Box::pin(tokio::time::sleep_until(deadline)));
        self
    }
}

impl From<Bytes> for Body {
    fn from(bytes: Bytes) -> Self {
        Body::new([bytes])
    }
}

impl From<String> for Body {
    fn from(text: String) -> Self {
        Body::from(Bytes::from(text))
    }
}

impl From<&'static str> for Body {
    fn from(text: &'static str) -> Self {
        Body::from(Bytes::from_static(text.as_bytes()))
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = &mut *self;
        if let Some(deadline) = &mut this.deadline
            && !this.parts.is_empty()
            && deadline.as_mut().poll(cx).is_ready()
        {
            this.parts.clear();
            return Poll::Ready(Some(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the response was not sent within its deadline",
            ))));
        }
        let Some(part) = self.parts.front_mut() else {
            return Poll::Ready(None);
        };
        let frame = if part.len() > FRAME {
            part.split_to(FRAME)
        } else {
            self.parts.pop_front().unwrap_or_default()
        };
        self.remaining -= frame.len() as u64;
        Poll::Ready(Some(Ok(Frame::data(frame))))
    }

    fn is_end_stream(&self) -> bool {
        self.parts.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

/// The level for every gzip we make: the documents are large and repetitive, and the CPU is
/// shared with the tail.
fn level() -> Compression {
    Compression::fast()
}

/// Runs `input` through `compress` with `flush`, appending to `out`.
fn deflate(compress: &mut Compress, mut input: &[u8], flush: FlushCompress, out: &mut Vec<u8>) {
    loop {
        if out.capacity() - out.len() < 1024 {
            out.reserve(out.len().max(input.len() / 4).max(4096));
        }
        let before_in = compress.total_in();
        let status = compress
            .compress_vec(input, out, flush)
            // miniz_oxide fails only on misuse (a finished stream), which this loop never does.
            .unwrap_or(Status::StreamEnd);
        let used = (compress.total_in() - before_in) as usize;
        input = &input[used..];
        let room_left = out.capacity() - out.len() >= 1024;
        match (flush, status) {
            (_, Status::StreamEnd) => return,
            (FlushCompress::Finish, _) => {}
            _ if input.is_empty() && room_left => return,
            _ => {}
        }
    }
}

/// The gzip member header: deflate, no name, no time, unknown OS (RFC 1952).
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// A document's shared part compressed once: a gzip header and deflate blocks ending at a byte
/// boundary (a sync flush), to which each response appends its own tail.
pub struct GzipPrefix {
    compressed: Bytes,
    crc: Crc,
}

impl GzipPrefix {
    pub fn new(prefix: &[u8]) -> Self {
        let mut out = Vec::with_capacity(prefix.len() / 5 + 1024);
        out.extend_from_slice(&GZIP_HEADER);
        deflate(
            &mut Compress::new(level(), false),
            prefix,
            FlushCompress::Sync,
            &mut out,
        );
        let mut crc = Crc::new();
        crc.update(prefix);
        GzipPrefix {
            compressed: Bytes::from(out),
            crc,
        }
    }

    /// The gzip of the prefix followed by `tail`, as the parts of a body. The tail's blocks come
    /// from a new compressor, so they refer to nothing before them: appended after a sync flush
    /// they continue the same deflate stream, which the trailer's CRC and length close.
    pub fn with_tail(&self, tail: &[u8]) -> [Bytes; 2] {
        let mut out = Vec::with_capacity(tail.len() + 64);
        deflate(
            &mut Compress::new(level(), false),
            tail,
            FlushCompress::Finish,
            &mut out,
        );
        let mut tail_crc = Crc::new();
        tail_crc.update(tail);
        let mut crc = Crc::new();
        crc.combine(&self.crc);
        crc.combine(&tail_crc);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&crc.amount().to_le_bytes());
        [self.compressed.clone(), Bytes::from(out)]
    }
}

/// Whether the client takes gzip: `gzip` (or `*`) in Accept-Encoding with a non-zero quality.
pub fn accepts_gzip(headers: &hyper::HeaderMap) -> bool {
    super::request::gzip_accepted(
        headers
            .get_all(hyper::header::ACCEPT_ENCODING)
            .iter()
            .map(|v| v.as_bytes()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn gunzip(parts: &[Bytes]) -> Vec<u8> {
        let all: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        let mut out = Vec::new();
        // One member: a single-member decoder must read it all.
        flate2::read::GzDecoder::new(&all[..])
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn a_shared_prefix_and_a_fresh_tail_make_one_gzip_member() {
        let prefix: Vec<u8> = (0..300_000u32)
            .flat_map(|i| format!("{{\"group\":\"g{}\",\"offset\":{i}}},", i % 977).into_bytes())
            .collect();
        let gz = GzipPrefix::new(&prefix);
        for tail in [&b""[..], b"\"as_of\":1}\n", &[7u8; 100_000][..]] {
            let parts = gz.with_tail(tail);
            let mut expected = prefix.clone();
            expected.extend_from_slice(tail);
            assert_eq!(gunzip(&parts), expected);
        }
        assert!(gz.compressed.len() < prefix.len() / 4);
    }

    #[tokio::test]
    async fn bodies_are_sent_in_frames_of_the_shared_bytes() {
        use http_body_util::BodyExt;
        let shared = Bytes::from(vec![1u8; FRAME * 2 + 5]);
        let mut body = Body::new([shared.clone(), Bytes::from_static(b"end")]);
        assert_eq!(
            hyper::body::Body::size_hint(&body).exact(),
            Some(FRAME as u64 * 2 + 8)
        );
        let mut sizes = Vec::new();
        while let Some(frame) = body.frame().await {
            let data = frame.unwrap().into_data().unwrap();
            sizes.push(data.len());
        }
        assert_eq!(sizes, vec![FRAME, FRAME, 5, 3]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_fails_after_its_deadline() {
        use http_body_util::BodyExt;
        let mut body = Body::new([Bytes::from(vec![0u8; FRAME * 3])])
            .with_deadline(Instant::now() + std::time::Duration::from_secs(5));
        assert!(body.frame().await.unwrap().is_ok());
        tokio::time::sleep(std::time::Duration::from_secs(6)).await;
        let e = body.frame().await.unwrap().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(body.frame().await.is_none());
    }
}
