//! Pure-Rust decompression of a batch's records section into reusable buffers.
//!
//! A [`Scratch`] keeps the output buffer and each codec's decoder state between batches, so after
//! the first few batches decompressing costs no allocation. Every codec writes through the same
//! size check: output past the limit fails with [`DecompressError::TooLarge`] before it is
//! allocated, so a small hostile batch cannot make us allocate without bound.
//!
//! # References
//! - gzip: RFC 1952; Java `GZIPInputStream`
//! - snappy: <https://github.com/google/snappy/blob/main/format_description.txt>; xerial
//!   `SnappyOutputStream` framing as the Java client writes it
//! - lz4: <https://github.com/lz4/lz4/blob/dev/doc/lz4_Frame_format.md>; KIP-57
//! - zstd: RFC 8878; KIP-110

mod gzip;
mod lz4;
mod snappy;
mod zstd;

use std::fmt;

use super::{Compression, DecompressError};

/// Largest decompressed records section accepted by default: 128 MiB.
///
/// Kafka bounds a *compressed* batch (`message.max.bytes`, 1 MiB by default) but nothing bounds
/// what it expands to, so a few KiB of zeros could claim gigabytes. Real batches are far below
/// this: MirrorMaker checkpoints are ~100-byte records and a 1 MiB batch of them expands to a
/// few MiB. 128 MiB leaves room for topics with a raised `message.max.bytes` while bounding the
/// memory one fetch worker can be made to use. It also equals zstd's default largest window
/// (2^27 bytes), which is what the Java consumer (zstd-jni) accepts without extra settings.
pub const DEFAULT_DECOMPRESSED_LIMIT: usize = 128 * 1024 * 1024;

/// Reusable decompression state: one output buffer and each codec's decoder.
///
/// Keep one per fetch worker and pass it to [`Batch::records`](super::Batch::records). The
/// output buffer keeps the capacity of the largest batch seen (at most the limit).
///
/// ```
/// use mm2_offsets::records::{Compression, Scratch};
///
/// let mut scratch = Scratch::new();
/// let raw = mm2_offsets::records::builder::compress(Compression::Lz4, b"hello hello hello");
/// assert_eq!(scratch.decompress(Compression::Lz4, &raw).unwrap(), b"hello hello hello");
/// ```
pub struct Scratch {
    out: Vec<u8>,
    limit: usize,
    inflate: Option<flate2::Decompress>,
    snappy: snap::raw::Decoder,
    lz4: lz4::Lz4State,
    zstd: Option<ruzstd::decoding::FrameDecoder>,
}

impl Scratch {
    /// A scratch with the [`DEFAULT_DECOMPRESSED_LIMIT`].
    pub fn new() -> Scratch {
        Scratch::with_limit(DEFAULT_DECOMPRESSED_LIMIT)
    }

    /// A scratch that refuses to decompress one records section to more than `limit` bytes.
    pub fn with_limit(limit: usize) -> Scratch {
        Scratch {
            out: Vec::new(),
            limit,
            inflate: None,
            snappy: snap::raw::Decoder::new(),
            lz4: lz4::Lz4State::default(),
            zstd: None,
        }
    }

    /// The largest decompressed size accepted.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Changes the largest decompressed size accepted.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    /// Decompresses `input` (a batch's records section) with `codec` into the scratch buffer
    /// and returns it. [`Compression::None`] returns an empty slice: uncompressed sections are
    /// read in place, never copied.
    pub fn decompress(
        &mut self,
        codec: Compression,
        input: &[u8],
    ) -> Result<&[u8], DecompressError> {
        self.out.clear();
        let limit = self.limit;
        let result = match codec {
            Compression::None => Ok(()),
            Compression::Gzip => {
                let inflate = self
                    .inflate
                    .get_or_insert_with(|| flate2::Decompress::new(false));
                gzip::decompress(inflate, input, &mut self.out, limit)
            }
            Compression::Snappy => {
                snappy::decompress(&mut self.snappy, input, &mut self.out, limit)
            }
            Compression::Lz4 => self.lz4.decompress(input, &mut self.out, limit),
            Compression::Zstd => {
                let decoder = self
                    .zstd
                    .get_or_insert_with(ruzstd::decoding::FrameDecoder::new);
                zstd::decompress(decoder, input, &mut self.out, limit)
            }
        };
        match result {
            Ok(()) => Ok(&self.out),
            Err(e) => {
                self.out.clear();
                Err(e)
            }
        }
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch::new()
    }
}

impl fmt::Debug for Scratch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scratch")
            .field("limit", &self.limit)
            .field("capacity", &self.out.capacity())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::builder::{SnappyFraming, compress, compress_snappy};

    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i % 251) as u8 ^ (i / 997) as u8)
            .collect()
    }

    #[test]
    fn every_codec_round_trips_and_reuses_the_scratch() {
        let mut scratch = Scratch::new();
        for round in 0..3 {
            for codec in Compression::ALL {
                for len in [0usize, 1, 100, 70_000, 300_000] {
                    let data = sample(len + round);
                    let packed = compress(codec, &data);
                    let out = scratch.decompress(codec, &packed).expect("round trip");
                    if codec == Compression::None {
                        assert!(out.is_empty());
                    } else {
                        assert_eq!(out, &data[..], "{codec} len {len}");
                    }
                }
            }
        }
    }

    #[test]
    fn snappy_reads_raw_and_xerial() {
        let data = sample(200_000);
        let mut scratch = Scratch::new();
        for framing in [SnappyFraming::Raw, SnappyFraming::Xerial] {
            let packed = compress_snappy(&data, framing);
            let out = scratch
                .decompress(Compression::Snappy, &packed)
                .expect("snappy");
            assert_eq!(out, &data[..], "{framing:?}");
        }
    }

    #[test]
    fn every_codec_enforces_the_limit() {
        let data = vec![0u8; 1 << 20];
        for codec in Compression::ALL {
            if codec == Compression::None {
                continue;
            }
            let packed = compress(codec, &data);
            assert!(packed.len() < 64 << 10, "{codec} compresses zeros well");
            let mut scratch = Scratch::with_limit(1 << 20);
            assert_eq!(
                scratch.decompress(codec, &packed).map(<[u8]>::len),
                Ok(1 << 20),
                "{codec} at the limit"
            );
            scratch.set_limit((1 << 20) - 1);
            assert_eq!(
                scratch.decompress(codec, &packed),
                Err(DecompressError::TooLarge {
                    limit: (1 << 20) - 1
                }),
                "{codec} past the limit"
            );
        }
    }

    #[test]
    fn a_bomb_does_not_grow_the_buffer_past_the_limit() {
        let data = vec![0u8; 32 << 20];
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let packed = compress(codec, &data);
            let mut scratch = Scratch::with_limit(1 << 20);
            assert!(scratch.decompress(codec, &packed).is_err());
            assert!(
                scratch.out.capacity() <= 2 << 20,
                "{codec} grew to {}",
                scratch.out.capacity()
            );
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut scratch = Scratch::new();
        for codec in Compression::ALL {
            for input in [&b"\x00"[..], b"not compressed at all", &[0xff; 64]] {
                let _ = scratch.decompress(codec, input);
            }
        }
        for codec in [Compression::Gzip, Compression::Lz4, Compression::Zstd] {
            assert!(
                scratch.decompress(codec, b"definitely not").is_err(),
                "{codec}"
            );
        }
    }

    #[test]
    fn every_cut_of_a_stream_is_an_error_and_the_scratch_recovers() {
        let data = sample(20_000);
        let mut scratch = Scratch::new();
        let streams = [
            (Compression::Gzip, compress(Compression::Gzip, &data)),
            (Compression::Lz4, compress(Compression::Lz4, &data)),
            (Compression::Zstd, compress(Compression::Zstd, &data)),
            // Xerial framing has no end marker (a cut between chunks reads as fewer bytes, and
            // the record count catches it), so cut the raw form.
            (
                Compression::Snappy,
                compress_snappy(&data, SnappyFraming::Raw),
            ),
        ];
        for (codec, packed) in streams {
            for cut in 0..packed.len() {
                assert!(
                    scratch.decompress(codec, &packed[..cut]).is_err(),
                    "{codec} cut at {cut} of {}",
                    packed.len()
                );
            }
            assert_eq!(
                scratch.decompress(codec, &packed).expect("after errors"),
                &data[..]
            );
        }
    }
}
