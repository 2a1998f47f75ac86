//! What record matching compares: a keyed 128-bit digest of a record's key, value and headers
//! (the timestamp is compared apart, since a LogAppendTime replica rewrites it).
//!
//! MirrorMaker 2 copies each record's key, value and headers as raw bytes (its dedicated mode
//! makes `ByteArrayConverter` the key, value and header converter), null stays null, and the
//! headers keep their order and repeated keys. The digest covers exactly that, in a canonical
//! encoding with lengths, so two records digest alike only if those fields are byte for byte
//! equal (up to a collision).
//!
//! The hash is SipHash-1-3 (the standard library's keyed hasher) run twice with independent
//! random keys drawn per process: upstream contents may be chosen by anyone who can produce to
//! the source topic, and without the keys nobody can build two records that collide. Two 64-bit
//! halves make a false match between any two records of a million-record window about
//! `10^12 / 2^128`.

use std::hash::{BuildHasher, Hasher, RandomState};

use crate::records::Record;

/// A record's content digest (key, value, headers).
pub(crate) type Digest = u128;

/// Digests records with keys drawn once.
#[derive(Clone, Debug)]
pub(crate) struct Digester {
    low: RandomState,
    high: RandomState,
}

impl Default for Digester {
    fn default() -> Self {
        Digester {
            low: RandomState::new(),
            high: RandomState::new(),
        }
    }
}

/// Feeds the canonical encoding of a record's content to both halves.
struct Both<A, B>(A, B);

impl<A: Hasher, B: Hasher> Both<A, B> {
    fn bytes(&mut self, bytes: Option<&[u8]>) {
        match bytes {
            None => {
                self.0.write_i64(-1);
                self.1.write_i64(-1);
            }
            Some(b) => {
                self.0.write_i64(b.len() as i64);
                self.1.write_i64(b.len() as i64);
                self.0.write(b);
                self.1.write(b);
            }
        }
    }
}

impl Digester {
    /// The digest of `record`'s key, value and headers.
    pub(crate) fn digest(&self, record: &Record<'_>) -> Digest {
        let mut h = Both(self.low.build_hasher(), self.high.build_hasher());
        h.bytes(record.key);
        h.bytes(record.value);
        let headers = record.headers();
        h.0.write_i32(headers.declared());
        h.1.write_i32(headers.declared());
        for (key, value) in headers {
            h.bytes(Some(key));
            h.bytes(value);
        }
        (u128::from(h.1.finish()) << 64) | u128::from(h.0.finish())
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
