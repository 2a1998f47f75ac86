//! gzip (RFC 1952): our own header and trailer parsing around a reusable raw-deflate decoder.
//!
//! Parsing the header ourselves lets one `flate2::Decompress` be reset and reused across
//! batches instead of building a new `GzDecoder` (and its inflate state) per batch. As Java's
//! `GZIPInputStream` does, we check the header CRC when present, the trailer's CRC32 and size,
//! read concatenated members, and ignore bytes after a member that do not start another one.

use flate2::{Crc, Decompress, FlushDecompress, Status};

use super::super::DecompressError;

const ID1: u8 = 0x1f;
const ID2: u8 = 0x8b;
const CM_DEFLATE: u8 = 8;
const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;
const TRAILER_LEN: usize = 8;
/// First output reservation; doubled as needed, never past the limit.
const FIRST_CHUNK: usize = 32 * 1024;

pub(super) fn decompress(
    inflate: &mut Decompress,
    input: &[u8],
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), DecompressError> {
    let mut rest = input;
    loop {
        let body_start = header_len(rest)?;
        let member_start = out.len();
        inflate.reset(false);
        let used = inflate_member(inflate, &rest[body_start..], out, limit)?;
        let trailer_at = body_start + used;
        let trailer = rest
            .get(trailer_at..trailer_at + TRAILER_LEN)
            .ok_or(DecompressError::Truncated)?;
        let mut crc = Crc::new();
        crc.update(&out[member_start..]);
        let stored_crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let stored_size = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
        if crc.sum() != stored_crc {
            return Err(invalid(format!(
                "gzip CRC32 mismatch (stored {stored_crc:#010x}, computed {:#010x})",
                crc.sum()
            )));
        }
        // ISIZE is the member's size modulo 2^32.
        if (out.len() - member_start) as u32 != stored_size {
            return Err(invalid(format!(
                "gzip size mismatch (trailer says {stored_size} bytes, stream held {})",
                out.len() - member_start
            )));
        }
        rest = &rest[trailer_at + TRAILER_LEN..];
        if rest.len() < 2 || rest[0] != ID1 || rest[1] != ID2 {
            return Ok(());
        }
    }
}

/// Inflates one member's deflate stream into `out`; returns the input bytes it used.
fn inflate_member(
    inflate: &mut Decompress,
    input: &[u8],
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<usize, DecompressError> {
    let mut used = 0usize;
    loop {
        if out.len() == out.capacity() {
            grow(out, limit)?;
        }
        let in_before = inflate.total_in();
        let out_before = out.len();
        let status = inflate
            .decompress_vec(&input[used..], out, FlushDecompress::None)
            .map_err(|e| invalid(format!("gzip deflate stream is corrupt: {e}")))?;
        used += (inflate.total_in() - in_before) as usize;
        if out.len() > limit {
            return Err(DecompressError::TooLarge { limit });
        }
        match status {
            Status::StreamEnd => return Ok(used),
            Status::Ok | Status::BufError => {
                let progressed = inflate.total_in() != in_before || out.len() != out_before;
                if !progressed {
                    if used >= input.len() {
                        return Err(DecompressError::Truncated);
                    }
                    if out.len() < out.capacity() {
                        return Err(invalid("gzip deflate stream makes no progress".into()));
                    }
                }
            }
        }
    }
}

/// Reserves more output room: doubling, at least [`FIRST_CHUNK`], at most to `limit + 1` bytes.
/// The one byte past the limit lets a stream that ends exactly at the limit report its end,
/// while one that goes on shows up as `out.len() > limit`.
fn grow(out: &mut Vec<u8>, limit: usize) -> Result<(), DecompressError> {
    let room = limit.saturating_add(1).saturating_sub(out.len());
    if room == 0 {
        return Err(DecompressError::TooLarge { limit });
    }
    let step = out.len().max(FIRST_CHUNK).min(room);
    out.reserve_exact(step);
    Ok(())
}

/// Length of the gzip member header at the start of `input`.
fn header_len(input: &[u8]) -> Result<usize, DecompressError> {
    if input.len() < 10 {
        return Err(if input.is_empty() || input.starts_with(&[ID1]) {
            DecompressError::Truncated
        } else {
            invalid("not a gzip stream (too short for a header)".into())
        });
    }
    if input[0] != ID1 || input[1] != ID2 {
        return Err(invalid(format!(
            "not a gzip stream (magic {:02x} {:02x}, expected 1f 8b)",
            input[0], input[1]
        )));
    }
    if input[2] != CM_DEFLATE {
        return Err(invalid(format!(
            "unsupported gzip compression method {} (only 8, deflate)",
            input[2]
        )));
    }
    let flags = input[3];
    let mut pos = 10;
    if flags & FEXTRA != 0 {
        let xlen = input.get(pos..pos + 2).ok_or(DecompressError::Truncated)?;
        pos += 2 + usize::from(u16::from_le_bytes([xlen[0], xlen[1]]));
    }
    if flags & FNAME != 0 {
        pos = skip_zero_terminated(input, pos)?;
    }
    if flags & FCOMMENT != 0 {
        pos = skip_zero_terminated(input, pos)?;
    }
    if flags & FHCRC != 0 {
        let stored = input.get(pos..pos + 2).ok_or(DecompressError::Truncated)?;
        let stored = u16::from_le_bytes([stored[0], stored[1]]);
        let mut crc = Crc::new();
        crc.update(&input[..pos]);
        if crc.sum() as u16 != stored {
            return Err(invalid("gzip header CRC mismatch".into()));
        }
        pos += 2;
    }
    if pos > input.len() {
        return Err(DecompressError::Truncated);
    }
    Ok(pos)
}

fn skip_zero_terminated(input: &[u8], from: usize) -> Result<usize, DecompressError> {
    let tail = input.get(from..).ok_or(DecompressError::Truncated)?;
    let nul = tail
        .iter()
        .position(|&b| b == 0)
        .ok_or(DecompressError::Truncated)?;
    Ok(from + nul + 1)
}

fn invalid(msg: String) -> DecompressError {
    DecompressError::Invalid(msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip_with_header_fields(data: &[u8]) -> Vec<u8> {
        let mut enc = flate2::GzBuilder::new()
            .filename("f.txt")
            .comment("a comment")
            .extra(vec![1, 2, 3])
            .write(Vec::new(), flate2::Compression::default());
        enc.write_all(data).expect("write to Vec");
        enc.finish().expect("write to Vec")
    }

    fn run(input: &[u8]) -> Result<Vec<u8>, DecompressError> {
        let mut inflate = Decompress::new(false);
        let mut out = Vec::new();
        decompress(&mut inflate, input, &mut out, 1 << 20).map(|()| out)
    }

    #[test]
    fn optional_header_fields_are_skipped() {
        let packed = gzip_with_header_fields(b"payload");
        assert_eq!(run(&packed).expect("valid gzip"), b"payload");
    }

    #[test]
    fn header_crc_is_checked() {
        // Build a header with FHCRC by hand: fixed part, then CRC16 of it.
        let body = crate::records::builder::compress(crate::records::Compression::Gzip, b"abc");
        let mut packed = body[..10].to_vec();
        packed[3] |= FHCRC;
        let mut crc = Crc::new();
        crc.update(&packed);
        packed.extend_from_slice(&(crc.sum() as u16).to_le_bytes());
        packed.extend_from_slice(&body[10..]);
        assert_eq!(run(&packed).expect("valid header crc"), b"abc");
        let at = 10;
        packed[at] ^= 0xff;
        assert!(run(&packed).is_err());
    }

    #[test]
    fn concatenated_members_and_trailing_garbage() {
        let mut packed =
            crate::records::builder::compress(crate::records::Compression::Gzip, b"ab");
        packed.extend(crate::records::builder::compress(
            crate::records::Compression::Gzip,
            b"cd",
        ));
        packed.extend_from_slice(b"junk");
        assert_eq!(run(&packed).expect("two members"), b"abcd");
    }

    #[test]
    fn trailer_crc_and_size_are_checked() {
        let packed = crate::records::builder::compress(crate::records::Compression::Gzip, b"hello");
        let n = packed.len();
        let mut bad_crc = packed.clone();
        bad_crc[n - 8] ^= 1;
        let err = run(&bad_crc).expect_err("bad crc").to_string();
        assert!(err.contains("CRC32"), "{err}");
        let mut bad_size = packed.clone();
        bad_size[n - 4] ^= 1;
        let err = run(&bad_size).expect_err("bad size").to_string();
        assert!(err.contains("size"), "{err}");
    }

    #[test]
    fn wrong_magic_and_method() {
        assert!(run(b"\x1f\x8c\x08\x00\x00\x00\x00\x00\x00\x00").is_err());
        assert!(run(b"\x1f\x8b\x07\x00\x00\x00\x00\x00\x00\x00").is_err());
        assert_eq!(run(b""), Err(DecompressError::Truncated));
    }
}
