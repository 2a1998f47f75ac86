//! What record matching compares: a record's key, value and headers, in a canonical encoding,
//! with a quick digest of it to find candidates (the timestamp is compared apart, since a
//! LogAppendTime replica rewrites it).
//!
//! MirrorMaker 2 copies each record's key, value and headers as raw bytes (its dedicated mode
//! makes `ByteArrayConverter` the key, value and header converter), null stays null, and the
//! headers keep their order and repeated keys. The encoding covers exactly that, with lengths,
//! so two records encode alike exactly when those fields are byte for byte equal. It is the
//! record format's own spelling in its one canonical form ([`encode`]): a record written that
//! way (Java's producer, and so MirrorMaker 2, always does) is compared where it lies in the
//! Fetch answer, and any other spelling of the same fields is encoded afresh, so it still
//! compares equal.
//!
//! The digest only narrows the search: two records are the same only if their encodings are
//! equal byte for byte ([`same_content`]). It is a quick one, [`digest_of`]: the encoding's
//! length and its first and last 16 bytes, hashed, so it costs the same for a 1 MiB value as
//! for an empty one. Records that differ only in the middle (one layout, one key, a counter
//! inside the value) share it; the walk's index ([`super::walk::Upstream`]) then tells such a
//! bucket apart by a CRC32C of the whole encoding ([`full_digest`]) once it holds more than a
//! few records, so a lookup never compares more than a few records that differ. Neither
//! digest is trusted: CRC32C is no keyed hash (anyone who can produce to the source topic can
//! make two records with one CRC), so a collision costs a comparison, never a wrong match.
//!
//! History: a keyed 128-bit universal hash (POLYVAL, and before that SipHash twice) trusted
//! alone, until 2026-12-03; then CRC32C of every record's whole encoding; the quick digest
//! since, which spares that CRC pass over every record (BENCHMARKS.md).

use crate::records::Record;
use crate::records::builder::write_varint;

/// A record's quick content digest ([`digest_of`]).
pub(crate) type Digest = u64;

/// Appends `record`'s key, value and headers to `out` in the canonical encoding and returns
/// its digest. The encoding is the record format's own, written the one way Java's producer
/// writes it: each field as a varint length (-1 for null) and its bytes, the header count
/// between the value and the headers, every varint in its shortest form. So a record written
/// that way is already encoded where it lies ([`in_place`]), and one that is not (compressed
/// batches, decompressed into scratch space; another spelling of a length) is copied here.
pub(crate) fn encode(record: &Record<'_>, out: &mut Vec<u8>) -> Digest {
    let start = out.len();
    field(out, record.key);
    field(out, record.value);
    let headers = record.headers();
    write_varint(out, headers.declared());
    for (key, value) in headers {
        field(out, Some(key));
        field(out, value);
    }
    digest_of(&out[start..])
}

/// `record`'s canonical encoding where it lies in the bytes it was read from, and its digest,
/// when it is written canonically: [`encode`] would write exactly these bytes.
pub(crate) fn in_place<'a>(record: &Record<'a>) -> Option<(&'a [u8], Digest)> {
    record
        .canonical_fields()
        .map(|fields| (fields, digest_of(fields)))
}

/// The quick digest of an encoding: its length, its first 16 bytes (the key's length and the
/// key's start) and its last 16 (the end of the value and the headers), hashed. Equal
/// encodings have equal digests; what tells records apart in between is left to
/// [`full_digest`] and the comparison.
pub(crate) fn digest_of(encoding: &[u8]) -> Digest {
    use std::hash::Hasher;
    let len = encoding.len();
    let mut h = rustc_hash::FxHasher::default();
    h.write_u64(len as u64);
    for at in [0, 8, len.saturating_sub(16), len.saturating_sub(8)] {
        h.write_u64(word_at(encoding, at));
    }
    h.finish()
}

/// The CRC32C of a whole encoding: what tells apart the records of a bucket of one quick
/// digest.
pub(crate) fn full_digest(encoding: &[u8]) -> u32 {
    crc32c::crc32c(encoding)
}

/// The 8 bytes at `at` (fewer at the end, zero-padded), little-endian.
fn word_at(bytes: &[u8], at: usize) -> u64 {
    let rest = bytes.get(at..).unwrap_or_default();
    let mut word = [0u8; 8];
    let n = rest.len().min(8);
    word[..n].copy_from_slice(&rest[..n]);
    u64::from_le_bytes(word)
}

/// Whether two encodings are the same content: the digests first (cheap, and almost always
/// what tells two records apart), then every byte.
pub(crate) fn same_content(a: (Digest, &[u8]), b: (Digest, &[u8])) -> bool {
    a.0 == b.0 && a.1 == b.1
}

/// A field's length and bytes. Record fields come from a batch's varint lengths, which a
/// record reader bounds to the batch (far below `i32::MAX`).
fn field(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    let len = bytes.map_or(-1, |b| i32::try_from(b.len()).unwrap_or(i32::MAX));
    write_varint(out, len);
    if let Some(b) = bytes {
        out.extend_from_slice(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Batches, Scratch, builder::BatchBuilder, builder::RecordSpec};

    fn encodings(specs: Vec<RecordSpec>) -> Vec<(Digest, Vec<u8>)> {
        let mut batch = BatchBuilder::new(0);
        for (i, mut spec) in specs.into_iter().enumerate() {
            spec.offset_delta = i as i32;
            batch = batch.push(spec);
        }
        let bytes = batch.build();
        let mut scratch = Scratch::new();
        let batch = Batches::new(&bytes).next().unwrap().unwrap();
        batch
            .records(&mut scratch)
            .unwrap()
            .map(|r| {
                let mut out = Vec::new();
                let d = encode(&r.unwrap(), &mut out);
                (d, out)
            })
            .collect()
    }

    #[test]
    fn fields_are_told_apart() {
        let got = encodings(vec![
            RecordSpec::new(0, Some(b"k"), Some(b"v")),
            RecordSpec::new(0, Some(b"k"), Some(b"v")),
            RecordSpec::new(0, None, Some(b"kv")),
            RecordSpec::new(0, Some(b""), Some(b"kv")),
            RecordSpec::new(0, Some(b"kv"), None),
            RecordSpec::new(0, Some(b"k"), Some(b"v\0")),
            RecordSpec::new(0, Some(b"k"), Some(&[0; 16])),
            RecordSpec::new(0, Some(b"k"), Some(b"")),
            RecordSpec::new(0, Some(b"k"), Some(b"v")).header(b"h", None),
            RecordSpec::new(0, Some(b"k"), Some(b"v")).header(b"h", Some(b"")),
            RecordSpec::new(0, Some(b"k"), Some(b"v"))
                .header(b"a", Some(b"1"))
                .header(b"b", Some(b"2")),
            RecordSpec::new(0, Some(b"k"), Some(b"v"))
                .header(b"b", Some(b"2"))
                .header(b"a", Some(b"1")),
        ]);
        let same = |i: usize, j: usize| same_content((got[i].0, &got[i].1), (got[j].0, &got[j].1));
        assert!(same(0, 1), "equal records are the same content");
        for i in 1..got.len() {
            for j in i + 1..got.len() {
                assert!(!same(i, j), "{i} and {j}");
                assert_ne!(got[i].1, got[j].1, "{i} and {j}: the encoding is injective");
            }
        }
    }

    /// Two different contents with one quick digest and one CRC32C (a collision anyone can
    /// make: the bytes between the first and last 16 are not sampled, and CRC is linear) are
    /// not the same: the bytes decide.
    #[test]
    fn a_forced_collision_is_not_a_match() {
        // The 8 bytes that vary sit in the middle of a 40-byte value: outside both samples.
        let enc = |v: &[u8]| {
            let mut value = vec![b'x'; 40];
            value[16..24].copy_from_slice(v);
            let mut out = Vec::new();
            field(&mut out, Some(b"k"));
            field(&mut out, Some(&value));
            write_varint(&mut out, 0);
            out
        };
        // For encodings of one length, crc(enc(x)) ^ crc(enc(0)) is linear in x over GF(2):
        // the 64 bits of an 8-byte value span at most 32 dimensions, so some nonzero x has
        // crc(enc(x)) == crc(enc(0)). Gaussian elimination of the single-bit deltas finds it.
        let base = enc(&[0; 8]);
        let delta = |i: usize, bit: u8| {
            let mut v = [0u8; 8];
            v[i] = bit;
            full_digest(&enc(&v)) ^ full_digest(&base)
        };
        // 64 single-bit deltas in a 32-dimensional space: Gaussian elimination finds a
        // nonzero combination that sums to zero, i.e. a nonzero x with crc(enc(x)) ==
        // crc(enc(0)).
        let mut basis: Vec<(u32, u64)> = Vec::new();
        let mut found = None;
        'bits: for i in 0..8 {
            for b in 0..8 {
                let (mut d, mut mask) = (delta(i, 1 << b), 1u64 << (i * 8 + b));
                for &(bd, bm) in &basis {
                    if d ^ bd < d {
                        d ^= bd;
                        mask ^= bm;
                    }
                }
                if d == 0 {
                    found = Some(mask);
                    break 'bits;
                }
                basis.push((d, mask));
                basis.sort_by_key(|b| std::cmp::Reverse(b.0));
            }
        }
        let x = found.expect("more vectors than dimensions").to_le_bytes();
        let (a, b) = (base, enc(&x));
        assert_ne!(a, b);
        let (da, db) = (digest_of(&a), digest_of(&b));
        assert_eq!(da, db, "the quick digest does not see the middle");
        assert_eq!(
            full_digest(&a),
            full_digest(&b),
            "a forced CRC32C collision"
        );
        assert!(!same_content((da, &a), (db, &b)));
        assert!(same_content((da, &a), (da, &a.clone())));
    }
}
