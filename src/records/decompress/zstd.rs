//! Zstandard (KIP-110), through `ruzstd`'s reusable `FrameDecoder`.
//!
//! ruzstd reserves a frame's whole window when the frame starts, so the window a frame may
//! declare is capped too: at the decompression limit, and never above 2^27 bytes (128 MiB),
//! zstd's own default decoder limit and so the largest window the Java consumer accepts. Frames
//! are decoded a block at a time and drained into the output with the limit checked on every
//! drain. Concatenated and skippable frames are read; content checksums are verified.

use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};

use super::super::DecompressError;

/// zstd's default `ZSTD_WINDOWLOG_LIMIT_DEFAULT` (27).
const MAX_WINDOW: usize = 1 << 27;
/// Decode this much before draining, so the window-retaining buffer stays small.
const DRAIN_EVERY: usize = 128 * 1024;

pub(super) fn decompress(
    decoder: &mut FrameDecoder,
    input: &[u8],
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), DecompressError> {
    decoder.set_max_window_size(limit.min(MAX_WINDOW) as u64);
    let mut src = input;
    if src.is_empty() {
        return Err(DecompressError::Truncated);
    }
    while !src.is_empty() {
        match decoder.reset(&mut src) {
            Ok(()) => {}
            Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                length,
                ..
            })) => {
                src = src
                    .get(length as usize..)
                    .ok_or(DecompressError::Truncated)?;
                continue;
            }
            Err(e) => return Err(zstd_error(e, limit)),
        }
        loop {
            decoder
                .decode_blocks(&mut src, BlockDecodingStrategy::UptoBytes(DRAIN_EVERY))
                .map_err(|e| zstd_error(e, limit))?;
            if decoder.can_collect() > limit.saturating_sub(out.len()) {
                return Err(DecompressError::TooLarge { limit });
            }
            decoder
                .collect_to_writer(&mut *out)
                .map_err(|e| DecompressError::Invalid(format!("zstd frame: {e}")))?;
            if decoder.is_finished() {
                break;
            }
        }
        if let (Some(stored), Some(computed)) = (
            decoder.get_checksum_from_data(),
            decoder.get_calculated_checksum(),
        ) && stored != computed
        {
            return Err(DecompressError::Invalid(format!(
                "zstd content checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
            )));
        }
    }
    Ok(())
}

fn zstd_error(e: FrameDecoderError, limit: usize) -> DecompressError {
    let text = e.to_string();
    // ruzstd reports a short input as an I/O "unexpected end of file" somewhere in its chain.
    if format!("{e:?}").contains("UnexpectedEof") {
        return DecompressError::Truncated;
    }
    match e {
        // The limit was the binding cap: raising it is the fix, as for any output too large.
        FrameDecoderError::WindowSizeTooBig { .. } if limit < MAX_WINDOW => {
            DecompressError::TooLarge { limit }
        }
        FrameDecoderError::WindowSizeTooBig { requested, max } => DecompressError::Invalid(
            format!("zstd frame needs a {requested}-byte window, more than the {max} allowed"),
        ),
        _ => DecompressError::Invalid(format!("zstd frame is corrupt: {text}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[u8], limit: usize) -> Result<Vec<u8>, DecompressError> {
        let mut out = Vec::new();
        decompress(&mut FrameDecoder::new(), input, &mut out, limit).map(|()| out)
    }

    #[test]
    fn skippable_and_concatenated_frames() {
        let a = ruzstd::encoding::compress_to_vec(
            &b"first "[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let b = ruzstd::encoding::compress_to_vec(
            &b"second"[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let mut packed = Vec::new();
        // A skippable frame: magic 0x184D2A50, length 3, 3 bytes.
        packed.extend_from_slice(&0x184D_2A50u32.to_le_bytes());
        packed.extend_from_slice(&3u32.to_le_bytes());
        packed.extend_from_slice(b"xyz");
        packed.extend_from_slice(&a);
        packed.extend_from_slice(&b);
        assert_eq!(run(&packed, 1 << 20).expect("frames"), b"first second");
    }

    #[test]
    fn a_window_larger_than_the_limit_is_refused() {
        // Frame header: magic, descriptor 0x00 (window descriptor follows, no checksum),
        // window descriptor 0x58 = 2^(10+11) = 2 MiB window; then nothing.
        let packed = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58];
        assert_eq!(
            run(&packed, 1 << 20),
            Err(DecompressError::TooLarge { limit: 1 << 20 })
        );
        assert!(run(&packed, 4 << 20).is_err(), "truncated after the header");
    }

    #[test]
    fn empty_input_is_truncated() {
        assert_eq!(run(b"", 1 << 20), Err(DecompressError::Truncated));
    }
}
