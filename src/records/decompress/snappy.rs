//! Snappy, in the two shapes Kafka producers write.
//!
//! The Java client writes snappy through xerial's `SnappyOutputStream`: an 8-byte magic
//! `82 'S' 'N' 'A' 'P' 'P' 'Y' 00`, two big-endian int32 versions, then chunks of
//! `[length: int32 BE][raw snappy block]`. Some non-Java producers write one raw snappy block.
//! Java's `SnappyInputStream` reads input without the magic as a raw block, and so do we.
//!
//! A raw block starts with its uncompressed length, so the limit is checked before the output
//! buffer grows.

use super::super::DecompressError;

const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// Magic, then `version` and `compatible version`.
const XERIAL_HEADER_LEN: usize = 16;

pub(super) fn decompress(
    decoder: &mut snap::raw::Decoder,
    input: &[u8],
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), DecompressError> {
    if !input.starts_with(&XERIAL_MAGIC) {
        return raw_block(decoder, input, out, limit);
    }
    let mut rest = input
        .get(XERIAL_HEADER_LEN..)
        .ok_or(DecompressError::Truncated)?;
    while !rest.is_empty() {
        let len_bytes = rest.get(..4).ok_or(DecompressError::Truncated)?;
        let len = i32::from_be_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]);
        let len = usize::try_from(len).map_err(|_| {
            DecompressError::Invalid(format!("xerial snappy chunk has negative length {len}"))
        })?;
        let block = rest.get(4..4 + len).ok_or(DecompressError::Truncated)?;
        raw_block(decoder, block, out, limit)?;
        rest = &rest[4 + len..];
    }
    Ok(())
}

fn raw_block(
    decoder: &mut snap::raw::Decoder,
    block: &[u8],
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), DecompressError> {
    let len = snap::raw::decompress_len(block).map_err(snappy_error)?;
    if len > limit.saturating_sub(out.len()) {
        return Err(DecompressError::TooLarge { limit });
    }
    let start = out.len();
    out.resize(start + len, 0);
    let written = decoder
        .decompress(block, &mut out[start..])
        .map_err(snappy_error)?;
    out.truncate(start + written);
    Ok(())
}

fn snappy_error(e: snap::Error) -> DecompressError {
    match e {
        snap::Error::Header | snap::Error::Empty => DecompressError::Truncated,
        e => DecompressError::Invalid(format!("snappy block is corrupt: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[u8]) -> Result<Vec<u8>, DecompressError> {
        let mut out = Vec::new();
        decompress(&mut snap::raw::Decoder::new(), input, &mut out, 1 << 20).map(|()| out)
    }

    #[test]
    fn xerial_bytes_as_the_java_client_writes_them() {
        // SnappyOutputStream of "abc": magic, version 1, compatible 1, one 5-byte chunk.
        let mut packed = XERIAL_MAGIC.to_vec();
        packed.extend_from_slice(&1i32.to_be_bytes());
        packed.extend_from_slice(&1i32.to_be_bytes());
        packed.extend_from_slice(&5i32.to_be_bytes());
        packed.extend_from_slice(&[0x03, 0x08, b'a', b'b', b'c']);
        assert_eq!(run(&packed).expect("xerial"), b"abc");
    }

    #[test]
    fn xerial_header_only_is_empty() {
        let mut packed = XERIAL_MAGIC.to_vec();
        packed.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1]);
        assert_eq!(run(&packed).expect("no chunks"), b"");
        assert_eq!(run(&packed[..12]), Err(DecompressError::Truncated));
    }

    #[test]
    fn xerial_chunk_errors() {
        let mut packed = XERIAL_MAGIC.to_vec();
        packed.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1]);
        let mut negative = packed.clone();
        negative.extend_from_slice(&(-1i32).to_be_bytes());
        assert!(matches!(run(&negative), Err(DecompressError::Invalid(_))));
        let mut short = packed.clone();
        short.extend_from_slice(&100i32.to_be_bytes());
        short.extend_from_slice(&[0; 10]);
        assert_eq!(run(&short), Err(DecompressError::Truncated));
    }

    #[test]
    fn raw_block_declaring_a_huge_length_is_refused_before_allocating() {
        // Varint 0xffffffff... as the uncompressed length, nothing else.
        let packed = [0xff, 0xff, 0xff, 0xff, 0x0f];
        let mut out = Vec::new();
        let err = decompress(&mut snap::raw::Decoder::new(), &packed, &mut out, 1 << 20);
        assert!(err.is_err());
        assert_eq!(out.capacity(), 0);
    }
}
