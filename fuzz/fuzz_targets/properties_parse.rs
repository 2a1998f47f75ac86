//! Fuzzes `.properties` parsing and the client settings read from it. Input: the file's text
//! (invalid UTF-8 is decoded lossily first). Neither step may panic; a parsed file must give
//! back what it holds.
//! The body is `mm2_offsets_fuzz::properties_parse` (fuzz/src/lib.rs), which the stable regression test
//! runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mm2_offsets_fuzz::properties_parse(data);
});
