//! Decompresses arbitrary bytes with the codec picked by the first byte, with a small limit,
//! and checks the limit holds.
//! The body is `mm2_offsets_fuzz::records_decompress` (fuzz/src/lib.rs), which the stable regression test
//! runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mm2_offsets_fuzz::records_decompress(data);
});
