//! Fuzzes `StreamsGroupDescribeResponse::decode`: the first two bytes pick the version (big-endian), the rest is the
//! body. Decoding must never panic nor allocate beyond the input; the result is ignored.
//! The body is `mm2_offsets_fuzz::response_streams_group_describe` (fuzz/src/lib.rs), which the stable regression test
//! runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mm2_offsets_fuzz::response_streams_group_describe(data);
});
