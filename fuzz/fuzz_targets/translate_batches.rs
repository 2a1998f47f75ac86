//! Fuzzes the whole in-memory read path: record batches walked, decompressed, parsed, decoded
//! as checkpoints and translated by `BatchTranslator`. Input: one byte choosing the group
//! selection (all, an exact id, a regex), then a fetched records section. Each batch's CRC32C
//! is recomputed first so the fuzzer reaches the records instead of failing the checksum.
//! Nothing may panic; the result must be sorted and hold only what was read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm2_offsets::translate::{BatchTranslator, GroupSelector};

/// Rewrites the CRC of every batch whose framing is intact, in place.
fn fix_crcs(data: &mut [u8]) {
    let mut pos = 0;
    while let Some(header) = data.get(pos..pos + 61) {
        let length = i32::from_be_bytes([header[8], header[9], header[10], header[11]]);
        let Ok(length) = usize::try_from(length) else {
            return;
        };
        let end = pos + 12 + length;
        if length < 49 || end > data.len() {
            return;
        }
        let crc = crc32c::crc32c(&data[pos + 21..end]);
        data[pos + 17..pos + 21].copy_from_slice(&crc.to_be_bytes());
        pos = end;
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, batches)) = data.split_first() else {
        return;
    };
    let selector = match which % 3 {
        0 => GroupSelector::all(),
        1 => GroupSelector::new(["g"], Vec::<String>::new()).expect("no patterns"),
        _ => GroupSelector::new(Vec::<String>::new(), ["a.*"]).expect("valid regex"),
    };
    let mut batches = batches.to_vec();
    fix_crcs(&mut batches);
    let mut translator = BatchTranslator::new(&selector);
    let _ = translator.add_batches(0, &batches);
    let records = translator.records();
    let offsets = translator.finish("src").to_owned_offsets();
    assert!(offsets.len() as u64 <= records, "more results than records");
    for pair in offsets.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            (&a.group, &a.topic, a.partition) < (&b.group, &b.topic, b.partition),
            "unsorted or repeated key"
        );
    }
    for o in &offsets {
        assert!(o.offset >= 0, "negative translated offset");
        assert!(selector.matches(&o.group), "unselected group {:?}", o.group);
    }
});
