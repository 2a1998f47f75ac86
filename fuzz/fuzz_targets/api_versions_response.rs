//! Fuzzes ApiVersions response decoding as a connection runs it (with its v0 fallbacks).
//! Input: 2 bytes big-endian API version, then the response body. Decoding must never panic
//! nor allocate beyond the input, and a decoded table lists each API once, in key order.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm2_offsets::wire::fuzzing::api_versions_response;

fuzz_target!(|data: &[u8]| {
    let Some((version, body)) = data.split_first_chunk::<2>() else {
        return;
    };
    if let Ok((_error_code, table)) = api_versions_response(body, i16::from_be_bytes(*version)) {
        let keys: Vec<i16> = table.iter().map(|(key, _)| key).collect();
        assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "keys not sorted and unique"
        );
        assert!(
            table.len() * 6 <= body.len(),
            "more entries than the body can hold"
        );
    }
});
