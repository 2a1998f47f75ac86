//! Fuzzes heartbeat record decoding. Input: 2 bytes big-endian key length, the key, then the
//! value. Decoding must never panic, and whatever decodes must encode back to a prefix of the
//! bytes it was read from.
//! The body is `mm2_offsets_fuzz::heartbeat_decode` (fuzz/src/lib.rs), which the stable regression test
//! runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mm2_offsets_fuzz::heartbeat_decode(data);
});
