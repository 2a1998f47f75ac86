//! Fuzzes building the offset-sync index from a fetched records section and translating with
//! it. Input: one byte choosing interpolation (even: off), then the records section. Nothing
//! may panic; answers are never negative and never below the checkpoint offset given.
//! The body is `mm2_offsets_fuzz::sync_index_batches` (fuzz/src/lib.rs), which the stable
//! regression test runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mm2_offsets_fuzz::sync_index_batches(data);
});
