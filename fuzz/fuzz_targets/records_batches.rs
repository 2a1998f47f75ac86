//! Walks a fetched records section and iterates every record of every batch, as the fetch
//! workers do, over arbitrary bytes. CRC checking is off so the fuzzer reaches the record and
//! decompression code; a small decompression limit keeps runs fast while still exercising it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm2_offsets::records::{AbortedFilter, Batches, ControlRecord, Scratch};

fuzz_target!(|data: &[u8]| {
    let mut scratch = Scratch::with_limit(4 << 20);
    let mut filter = AbortedFilter::read_committed([(1, 0), (2, 5)]);
    let mut batches = Batches::new(data).check_crc(false);
    for batch in batches.by_ref() {
        let Ok(batch) = batch else { break };
        let _ = filter.check(&batch, &mut scratch);
        let Ok(records) = batch.records(&mut scratch) else {
            continue;
        };
        for record in records {
            let Ok(record) = record else { break };
            if batch.is_control() {
                let _ = ControlRecord::parse(&record);
            }
        }
    }
    assert!(batches.consumed() <= data.len());
});
