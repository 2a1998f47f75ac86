//! Translating checkpoint record batches already in hand, with no connection: bytes a program
//! fetched itself, read from a dump, or (here, when no file is given) built in memory.
//!
//! ```text
//! cargo run --example batch_translate                 # a batch built here
//! cargo run --example batch_translate -- records.bin  # a Fetch records section from a file
//! ```
//!
//! The result is printed as the same versioned JSON document `mm2-offsets translate -o json`
//! writes, through `Translation`'s `Serialize`.

use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
use mm2_offsets::records::builder::BatchBuilder;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::BatchTranslator;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bytes = match std::env::args_os().nth(1) {
        Some(path) => std::fs::read(path)?,
        None => sample_batch()?,
    };

    // Only the billing groups; every other group's checkpoints are skipped while decoding.
    let selector = GroupSelector::patterns(["billing-.*"])?;
    let mut translator = BatchTranslator::new(&selector);
    // The checkpoints topic partition these batches came from, for the report.
    translator.add_batches(0, &bytes)?;
    let translation = translator.finish("primary");

    println!("{}", serde_json::to_string_pretty(&translation)?);
    Ok(())
}

/// One record batch of three checkpoints, as MirrorMaker 2's checkpoint task writes them.
fn sample_batch() -> Result<Vec<u8>, mm2_offsets::mm2::Mm2Error> {
    let mut batch = BatchBuilder::new(0);
    for (group, partition, downstream) in [
        ("billing-eu", 0, 1200),
        ("billing-us", 3, 98),
        ("audit", 0, 7),
    ] {
        let key = checkpoint::encode_key(&CheckpointKey {
            group: group.as_bytes(),
            topic: b"primary.invoices",
            partition,
        })?;
        let value = checkpoint::encode_value(&CheckpointValue {
            version: 0,
            upstream_offset: downstream + 500,
            downstream_offset: downstream,
            metadata: b"",
        })?;
        batch = batch.record(Some(&key), Some(&value));
    }
    Ok(batch.build())
}
