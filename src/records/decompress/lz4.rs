//! LZ4 frame format, through `lz4_flex::frame`.
//!
//! Since KIP-57 (message format v1 and later) the Java client writes frames with a correct
//! header checksum, so v2 batches are standard LZ4 frames and the library checks every checksum
//! the frame declares.
//!
//! `lz4_flex`'s `FrameDecoder` owns its reader, so to keep its block buffers between batches we
//! give it a cursor over a buffer we own and refill that buffer per batch. Copying the compressed
//! bytes once is cheap next to decompressing them, and allocates nothing after warm-up.
//!
//! `lz4_flex` treats input that ends where a block header should be as a clean end, even in the
//! middle of a frame, and would then carry that half-read frame into the next batch. So before
//! decoding we walk the frame structure (headers and block sizes only, no data) and refuse input
//! that stops before a frame's end mark.

use std::io::{BufRead, Cursor};

use lz4_flex::frame::FrameDecoder;

use super::super::DecompressError;

/// The decoder and its input buffer, kept between batches.
#[derive(Default)]
pub(super) struct Lz4State {
    decoder: Option<FrameDecoder<Cursor<Vec<u8>>>>,
}

impl Lz4State {
    pub(super) fn decompress(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), DecompressError> {
        check_complete(input)?;
        let decoder = self
            .decoder
            .get_or_insert_with(|| FrameDecoder::new(Cursor::new(Vec::new())));
        let cursor = decoder.get_mut();
        cursor.get_mut().clear();
        cursor.get_mut().extend_from_slice(input);
        cursor.set_position(0);
        let result = drain(decoder, out, limit);
        if result.is_err() {
            // After an error the decoder may be mid-frame; start the next batch from a fresh one
            // (keeping the input buffer).
            let buffer = std::mem::take(decoder.get_mut().get_mut());
            *decoder = FrameDecoder::new(Cursor::new(buffer));
        }
        result
    }
}

fn drain(
    decoder: &mut FrameDecoder<Cursor<Vec<u8>>>,
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), DecompressError> {
    loop {
        let chunk = decoder.fill_buf().map_err(lz4_error)?;
        if chunk.is_empty() {
            return Ok(());
        }
        let n = chunk.len();
        append_limited(out, chunk, limit)?;
        decoder.consume(n);
    }
}

const FRAME_MAGIC: u32 = 0x184D_2204;
const SKIPPABLE_MAGIC_MASK: u32 = 0xFFFF_FFF0;
const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;
const FLG_BLOCK_CHECKSUM: u8 = 0x10;
const FLG_CONTENT_SIZE: u8 = 0x08;
const FLG_CONTENT_CHECKSUM: u8 = 0x04;
const FLG_DICT_ID: u8 = 0x01;

/// Checks that `input` is a sequence of whole LZ4 frames (or skippable frames): every frame
/// reaches its end mark (and content checksum, if declared). Only magics and sizes are read;
/// the decoder checks everything else.
fn check_complete(input: &[u8]) -> Result<(), DecompressError> {
    if input.is_empty() {
        return Err(DecompressError::Truncated);
    }
    let mut pos = 0usize;
    while pos < input.len() {
        let magic = read_u32(input, pos)?;
        if magic & SKIPPABLE_MAGIC_MASK == SKIPPABLE_MAGIC {
            let len = read_u32(input, pos + 4)? as usize;
            pos = need(input, pos + 8, len)?;
            continue;
        }
        if magic != FRAME_MAGIC {
            // Kafka writes only LZ4 frames (KIP-57), and Java's KafkaLZ4BlockInputStream refuses
            // any other magic. lz4_flex would also read the legacy format (magic 0x184C2102),
            // which has no end mark: the decoder then stays inside that frame and reads the next
            // batch's bytes as legacy blocks, so one batch's answer would depend on the one
            // before (found by the records_decompress fuzz target).
            return Err(DecompressError::Invalid(format!(
                "not an LZ4 frame (magic {magic:#010x}, expected {FRAME_MAGIC:#010x})"
            )));
        }
        let flg = *input.get(pos + 4).ok_or(DecompressError::Truncated)?;
        let mut header = 4 + 2 + 1; // magic, FLG, BD, header checksum
        if flg & FLG_CONTENT_SIZE != 0 {
            header += 8;
        }
        if flg & FLG_DICT_ID != 0 {
            header += 4;
        }
        pos = need(input, pos, header)?;
        loop {
            let block = read_u32(input, pos)?;
            pos += 4;
            if block == 0 {
                break;
            }
            let mut len = (block & 0x7FFF_FFFF) as usize;
            if flg & FLG_BLOCK_CHECKSUM != 0 {
                len += 4;
            }
            pos = need(input, pos, len)?;
        }
        if flg & FLG_CONTENT_CHECKSUM != 0 {
            pos = need(input, pos, 4)?;
        }
    }
    Ok(())
}

fn read_u32(input: &[u8], at: usize) -> Result<u32, DecompressError> {
    let end = at.checked_add(4).ok_or(DecompressError::Truncated)?;
    let b = input.get(at..end).ok_or(DecompressError::Truncated)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The position after `len` more bytes from `at`, if the input holds them.
fn need(input: &[u8], at: usize, len: usize) -> Result<usize, DecompressError> {
    at.checked_add(len)
        .filter(|&end| end <= input.len())
        .ok_or(DecompressError::Truncated)
}

fn lz4_error(e: std::io::Error) -> DecompressError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        DecompressError::Truncated
    } else {
        DecompressError::Invalid(format!("lz4 frame is corrupt: {e}"))
    }
}

/// Appends `data` to `out` unless that would pass `limit`.
fn append_limited(out: &mut Vec<u8>, data: &[u8], limit: usize) -> Result<(), DecompressError> {
    if data.len() > limit.saturating_sub(out.len()) {
        return Err(DecompressError::TooLarge { limit });
    }
    out.extend_from_slice(data);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linked_blocks_and_checksums_are_read() {
        use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
        use std::io::Write;
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 7 + i / 5000) as u8).collect();
        let info = FrameInfo::new()
            .block_mode(BlockMode::Linked)
            .block_size(BlockSize::Max64KB)
            .block_checksums(true)
            .content_checksum(true);
        let mut enc = FrameEncoder::with_frame_info(info, Vec::new());
        enc.write_all(&data).expect("write to Vec");
        let packed = enc.finish().expect("write to Vec");
        let mut state = Lz4State::default();
        let mut out = Vec::new();
        state
            .decompress(&packed, &mut out, 1 << 20)
            .expect("valid frame");
        assert_eq!(out, data);

        // Flip one byte inside the first block: a checksum catches it.
        let mut bad = packed.clone();
        bad[20] ^= 0x01;
        out.clear();
        assert!(state.decompress(&bad, &mut out, 1 << 20).is_err());
    }

    #[test]
    fn every_cut_of_a_frame_is_truncated_and_the_state_recovers() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 13 + i / 999) as u8).collect();
        let packed = crate::records::builder::compress(crate::records::Compression::Lz4, &data);
        let mut state = Lz4State::default();
        let mut out = Vec::new();
        for cut in 0..packed.len() {
            out.clear();
            assert!(
                state.decompress(&packed[..cut], &mut out, 1 << 20).is_err(),
                "cut {cut}"
            );
        }
        out.clear();
        state
            .decompress(&packed, &mut out, 1 << 20)
            .expect("whole frame");
        assert_eq!(out, data);
    }

    #[test]
    fn legacy_frames_are_refused_and_leave_no_state() {
        // The legacy magic alone, then with a block: both refused, every time, and a real
        // frame decodes after them.
        let legacy = 0x184C_2102u32.to_le_bytes();
        let mut with_block = legacy.to_vec();
        with_block.extend_from_slice(&[1, 0, 0, 0, 0x10]);
        let mut state = Lz4State::default();
        let mut out = Vec::new();
        for input in [&legacy[..], &with_block, &legacy, &with_block] {
            out.clear();
            let err = state.decompress(input, &mut out, 1 << 20);
            assert!(
                matches!(&err, Err(DecompressError::Invalid(m)) if m.contains("0x184c2102")),
                "{err:?}"
            );
        }
        let packed = crate::records::builder::compress(crate::records::Compression::Lz4, b"abc");
        out.clear();
        state
            .decompress(&packed, &mut out, 1 << 20)
            .expect("valid frame");
        assert_eq!(out, b"abc");
    }

    #[test]
    fn bad_magic_is_invalid() {
        let mut state = Lz4State::default();
        let mut out = Vec::new();
        let err = state.decompress(b"\x00\x01\x02\x03\x04\x05\x06", &mut out, 1 << 20);
        assert!(matches!(err, Err(DecompressError::Invalid(_))), "{err:?}");
    }
}
