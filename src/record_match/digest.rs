//! What record matching compares: a keyed 128-bit digest of a record's key, value and headers
//! (the timestamp is compared apart, since a LogAppendTime replica rewrites it).
//!
//! MirrorMaker 2 copies each record's key, value and headers as raw bytes (its dedicated mode
//! makes `ByteArrayConverter` the key, value and header converter), null stays null, and the
//! headers keep their order and repeated keys. The digest covers exactly that, in a canonical
//! encoding with lengths, so two records digest alike only if those fields are byte for byte
//! equal (up to a collision).
//!
//! The hash is POLYVAL (RFC 8452, the universal hash of AES-GCM-SIV: GHASH with the bytes in
//! little-endian order) under a random key drawn per process. Upstream contents may be chosen
//! by anyone who can produce to the source topic, so the digest must stay keyed: POLYVAL reads
//! the blocks `X_1..X_s` as the polynomial `X_1 H^s + ... + X_s H` and evaluates it at the key
//! `H`. The encoding below is injective and its first block is never zero, so two different
//! records give two different polynomials of degree at most `s` (a longer one has a nonzero
//! leading coefficient, one as long differs in some coefficient), which agree on at most `s`
//! keys: for any two records chosen without knowing `H`, a collision has probability at most
//! `s / 2^128` (`s` is about 70 for a 1 KiB record), and a million-record window holds about
//! `10^12` pairs. That holds only while `H` stays secret, and a digest would give it away (the
//! polynomial of a known record can be solved for `H`): digests never leave the process (no
//! log, no report, no file), and a new process draws a new key. SipHash-1-3 run twice (the
//! digest until 2026-12-02) gave that guarantee too, at several times the cost per byte, and was
//! the largest item of our CPU in `benches/match.sh` (BENCHMARKS.md, 2026-12-02). POLYVAL runs
//! on the carry-less multiply instruction (PCLMULQDQ, PMULL), detected at run time, with a
//! constant-time software fallback.

use polyval::Polyval;
use polyval::universal_hash::UniversalHash;

use crate::records::Record;

/// A record's content digest (key, value, headers).
pub(crate) type Digest = u128;

/// Marks a length block (the second half of the 16 bytes, the first half being the length):
/// never zero, so the encoding's first block is never zero (see the module documentation).
const LENGTH_TAG: [u8; 8] = *b"mm2o-len";

/// Digests records under a key drawn once.
#[derive(Clone)]
pub(crate) struct Digester {
    /// The hash keyed, with nothing fed: each digest starts from a copy.
    keyed: Polyval,
}

/// Shows no key material.
impl std::fmt::Debug for Digester {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Digester").finish_non_exhaustive()
    }
}

impl Default for Digester {
    fn default() -> Self {
        // A zero key would map every record to zero.
        let key = loop {
            let key: [u8; 16] = rand::random();
            if key != [0; 16] {
                break key;
            }
        };
        Digester {
            keyed: Polyval::new(&key.into()),
        }
    }
}

/// Feeds `bytes` (null as length -1) as one length block and the bytes zero-padded to whole
/// blocks: the lengths make the padding unambiguous.
fn field(h: &mut Polyval, bytes: Option<&[u8]>) {
    let len = bytes.map_or(-1, |b| b.len() as i64);
    length(h, len);
    if let Some(b) = bytes {
        h.update_padded(b);
    }
}

fn length(h: &mut Polyval, len: i64) {
    let mut block = [0u8; 16];
    block[..8].copy_from_slice(&len.to_le_bytes());
    block[8..].copy_from_slice(&LENGTH_TAG);
    h.update(&[block.into()]);
}

impl Digester {
    /// The digest of `record`'s key, value and headers.
    pub(crate) fn digest(&self, record: &Record<'_>) -> Digest {
        let mut h = self.keyed.clone();
        field(&mut h, record.key);
        field(&mut h, record.value);
        let headers = record.headers();
        length(&mut h, i64::from(headers.declared()));
        for (key, value) in headers {
            field(&mut h, Some(key));
            field(&mut h, value);
        }
        u128::from_le_bytes(h.finalize().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Batches, Scratch, builder::BatchBuilder, builder::RecordSpec};

    fn digests(digester: &Digester, specs: Vec<RecordSpec>) -> Vec<Digest> {
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
            .map(|r| digester.digest(&r.unwrap()))
            .collect()
    }

    #[test]
    fn fields_are_told_apart() {
        let d = Digester::default();
        let got = digests(
            &d,
            vec![
                RecordSpec::new(0, Some(b"k"), Some(b"v")),
                RecordSpec::new(0, Some(b"k"), Some(b"v")),
                RecordSpec::new(0, None, Some(b"kv")),
                RecordSpec::new(0, Some(b""), Some(b"kv")),
                RecordSpec::new(0, Some(b"kv"), None),
                // Zero padding to whole blocks is told apart by the lengths.
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
            ],
        );
        assert_eq!(got[0], got[1], "equal records digest alike");
        for i in 1..got.len() {
            for j in i + 1..got.len() {
                assert_ne!(got[i], got[j], "{i} and {j}");
            }
        }
        // Another process (other keys) digests differently.
        let other = digests(
            &Digester::default(),
            vec![RecordSpec::new(0, Some(b"k"), Some(b"v"))],
        );
        assert_ne!(other[0], got[0]);
    }
}
