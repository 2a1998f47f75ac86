//! Walks a fetched records section and iterates every record of every batch, as the fetch
//! workers do, over arbitrary bytes. CRC checking is off so the fuzzer reaches the record and
//! decompression code; a small decompression limit keeps runs fast while still exercising it.
//! The body is `mm2_offsets_fuzz::records_batches` (fuzz/src/lib.rs), which the stable regression test
//! runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mm2_offsets_fuzz::records_batches(data);
});
