//! Fuzzes reading a snapshot of the offset-sync history (`translate --syncs-snapshot FILE`):
//! a file our tool wrote, read back as untrusted input. Nothing may panic or allocate past the
//! input's size; what decodes must encode back to the same snapshot and index without panic.
//! The body is `mm2_offsets_fuzz::sync_snapshot` (fuzz/src/lib.rs), which the stable
//! regression test runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = mm2_offsets_fuzz::sync_snapshot(data);
});
