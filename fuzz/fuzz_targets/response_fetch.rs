//! Fuzzes `FetchResponse::decode`: the first two bytes pick the version (big-endian), the rest is the
//! body. Decoding must never panic nor allocate beyond the input; the result is ignored.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm2_offsets::wire::responses::FetchResponse;

fuzz_target!(|data: &[u8]| {
    if let [hi, lo, body @ ..] = data {
        let version = i16::from_be_bytes([*hi, *lo]);
        let _ = FetchResponse::decode(bytes::Bytes::copy_from_slice(body), version);
    }
});
