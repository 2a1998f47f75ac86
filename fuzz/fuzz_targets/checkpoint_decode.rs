//! Fuzzes checkpoint record decoding. Input: 2 bytes big-endian key length, the key, then the
//! value. Decoding must never panic, and whatever decodes must encode back to the bytes it was
//! read from (trailing bytes are ignored, so to a prefix of them).
//! The body is `mm2_offsets_fuzz::checkpoint_decode` (fuzz/src/lib.rs), which the stable regression test
//! runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mm2_offsets_fuzz::checkpoint_decode(data);
});
