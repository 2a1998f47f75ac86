//! Fuzzes the JKS/PKCS12 store decoder. Input: one byte choosing the password (even = none,
//! odd = "pw"), then the store's bytes. It must not panic nor allocate beyond the input.
//! The body is `mm2_offsets_fuzz::keystore_decode` (fuzz/src/lib.rs), which the stable
//! regression test runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mm2_offsets_fuzz::keystore_decode(data);
});
