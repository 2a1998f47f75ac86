//! Fuzzes the command line itself: argument vectors (arguments separated by NUL bytes) through
//! clap and the usage checks of `src/bin/mm2-offsets/validate.rs`. Nothing may panic; accepted
//! numbers must lie in their ranges. Properties files are fuzzed by `properties_parse`.
//! The body is `mm2_offsets_fuzz::cli_args` (fuzz/src/lib.rs), which the stable regression test
//! runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mm2_offsets_fuzz::cli_args(data);
});
