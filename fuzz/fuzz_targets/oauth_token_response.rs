//! Fuzzes the OAUTHBEARER token endpoint's answer as the client-credentials grant reads it: the
//! HTTP/1.1 framing (Content-Length, chunked, read-until-close, 1xx), then the JSON token or
//! error document and the JWT's `exp`. Input: one flag byte (low bit: the server has closed),
//! then the answer. The body is `mm2_offsets_fuzz::oauth_token_response` (fuzz/src/lib.rs),
//! which the stable regression test runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mm2_offsets_fuzz::oauth_token_response(data);
});
