//! Fuzzes the whole in-memory read path: record batches walked, decompressed, parsed, decoded
//! as checkpoints and translated by `BatchTranslator`. Input: one byte choosing the group
//! selection (all, an exact id, a regex), then a fetched records section. Each batch's CRC32C
//! is recomputed first so the fuzzer reaches the records instead of failing the checksum.
//! Nothing may panic; the result must be sorted and hold only what was read.
//! The body is `mm2_offsets_fuzz::translate_batches` (fuzz/src/lib.rs), which the stable regression test
//! runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mm2_offsets_fuzz::translate_batches(data);
});
