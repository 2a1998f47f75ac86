//! Fuzzes ApiVersions response decoding as a connection runs it (with its v0 fallbacks).
//! Input: 2 bytes big-endian API version, then the response body. Decoding must never panic
//! nor allocate beyond the input, and a decoded table lists each API once, in key order.
//! The body is `mm2_offsets_fuzz::api_versions_response` (fuzz/src/lib.rs), which the stable regression test
//! runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mm2_offsets_fuzz::api_versions_response(data);
});
