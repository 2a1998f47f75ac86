//! Fuzzes the SCRAM client's handling of broker messages. Input: one byte choosing the message,
//! then its bytes: even = a server-first message (answered by the RFC 7677 client), odd = a
//! server-final message (checked after the RFC 7677 server-first). Neither may panic; a
//! client-final message is only produced for a nonce that extends ours.
//! The body is `mm2_offsets_fuzz::sasl_scram_server_first` (fuzz/src/lib.rs), which the stable regression test
//! runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mm2_offsets_fuzz::sasl_scram_server_first(data);
});
