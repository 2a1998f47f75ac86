//! Fuzzes the request fields `watch` parses itself from untrusted bytes: the percent-encoded
//! group of `/offsets/GROUP`, `Authorization: Basic` credentials and `Accept-Encoding`
//! (src/bin/mm2-offsets/commands/watch/request.rs). Nothing may panic; decoded values are
//! bounded by the input and credentials survive a re-encoding.
//! The body is `mm2_offsets_fuzz::http_request_fields` (fuzz/src/lib.rs), which the stable
//! regression test runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mm2_offsets_fuzz::http_request_fields(data);
});
