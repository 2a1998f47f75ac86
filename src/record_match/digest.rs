//! What record matching compares: a record's key, value and headers, kept in a canonical
//! encoding, with a CRC32C digest of it to find candidates quickly (the timestamp is compared
//! apart, since a LogAppendTime replica rewrites it).
//!
//! MirrorMaker 2 copies each record's key, value and headers as raw bytes (its dedicated mode
//! makes `ByteArrayConverter` the key, value and header converter), null stays null, and the
//! headers keep their order and repeated keys. The encoding covers exactly that, with lengths,
//! so two records encode alike exactly when those fields are byte for byte equal (the header
//! section's varints are decoded, not compared as written: Java's producer re-encodes them).
//!
//! The digest only narrows the search: two records are the same only if their encodings are
//! equal byte for byte ([`same_content`]), so a collision (CRC32C is no keyed hash: anyone who
//! can produce to the source topic can make two records with one CRC) costs a comparison, never
//! a wrong match. Until 2026-12-03 the digest was a keyed 128-bit universal hash (POLYVAL, and
//! before that SipHash twice) trusted alone; hardware CRC32C over the encoding plus the
//! comparison on a digest match is cheaper per byte and exact (BENCHMARKS.md).

use crate::records::Record;

/// A record's content digest: the CRC32C of its encoding and the encoding's length.
pub(crate) type Digest = u64;

/// Appends `record`'s key, value and headers to `out` in the canonical encoding and returns
/// its digest. The encoding: each field as a little-endian `i32` length (-1 for null) and its
/// bytes; the header count between the value and the headers.
pub(crate) fn encode(record: &Record<'_>, out: &mut Vec<u8>) -> Digest {
    let start = out.len();
    field(out, record.key);
    field(out, record.value);
    let headers = record.headers();
    out.extend_from_slice(&headers.declared().to_le_bytes());
    for (key, value) in headers {
        field(out, Some(key));
        field(out, value);
    }
    digest_of(&out[start..])
}

/// The digest of an encoding.
pub(crate) fn digest_of(encoding: &[u8]) -> Digest {
    u64::from(crc32c::crc32c(encoding)) | ((encoding.len() as u64) << 32)
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
    out.extend_from_slice(&len.to_le_bytes());
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

    /// Two different contents with one CRC32C (a collision anyone can make: CRC is linear) are
    /// not the same: the bytes decide.
    #[test]
    fn a_forced_collision_is_not_a_match() {
        let enc = |v: &[u8]| {
            let mut out = Vec::new();
            field(&mut out, Some(b"k"));
            field(&mut out, Some(v));
            out.extend_from_slice(&0i32.to_le_bytes());
            out
        };
        // For encodings of one length, crc(enc(x)) ^ crc(enc(0)) is linear in x over GF(2):
        // the 64 bits of an 8-byte value span at most 32 dimensions, so some nonzero x has
        // crc(enc(x)) == crc(enc(0)). Gaussian elimination of the single-bit deltas finds it.
        let base = enc(&[0; 8]);
        let delta = |i: usize, bit: u8| {
            let mut v = [0u8; 8];
            v[i] = bit;
            crc32c::crc32c(&enc(&v)) ^ crc32c::crc32c(&base)
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
        assert_eq!(da, db, "a forced CRC32C collision");
        assert!(!same_content((da, &a), (db, &b)));
        assert!(same_content((da, &a), (da, &a.clone())));
    }
}
