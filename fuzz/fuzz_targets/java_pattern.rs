//! Fuzzes the Java pattern front end of group selection. Input: a pattern, a NUL byte, an id
//! (invalid UTF-8 is decoded lossily). Parsing may refuse but never panic; an accepted pattern
//! must match the id without panicking.
//! The body is `mm2_offsets_fuzz::java_pattern` (fuzz/src/lib.rs), which the stable regression
//! test runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mm2_offsets_fuzz::java_pattern(data);
});
