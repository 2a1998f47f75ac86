//! Throughput of the `records` layer: the batch walk with CRC32C checks, and record iteration
//! per codec. Data is built with `records::builder` in setup, shaped like MirrorMaker 2
//! checkpoints (a ~45-byte key, a ~30-byte value, batches of ~16 KiB as the Java producer
//! writes by default).
//!
//! Run: `cargo bench --bench records`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mm2_offsets::records::builder::BatchBuilder;
use mm2_offsets::records::{Batches, Compression, Scratch};

/// Records per batch: ~16 KiB uncompressed, the Java producer's default `batch.size`.
const RECORDS_PER_BATCH: usize = 200;

/// Builds back-to-back batches holding `records` records in total.
fn fetched(codec: Compression, records: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut offset = 0i64;
    while (offset as usize) < records {
        let mut b = BatchBuilder::new(offset).compression(codec);
        for i in 0..RECORDS_PER_BATCH {
            let n = offset as usize + i;
            let key = format!(
                "group-{:05}\u{0}source.topic-{:03}\u{0}{:04}",
                n % 5000,
                n % 300,
                n % 64
            );
            let value = format!("{:016}{:016}meta", n * 7, n * 5);
            b = b.record(Some(key.as_bytes()), Some(value.as_bytes()));
        }
        offset += RECORDS_PER_BATCH as i64;
        b.write_to(&mut out);
    }
    out
}

/// Walks every batch and iterates every record; returns the number of records.
fn read_all(data: &[u8], scratch: &mut Scratch) -> usize {
    let mut n = 0;
    for batch in Batches::new(data) {
        let batch = batch.expect("valid batch");
        for record in batch.records(scratch).expect("valid records") {
            let record = record.expect("valid record");
            black_box((record.offset, record.key, record.value));
            n += 1;
        }
    }
    n
}

fn batch_walk(c: &mut Criterion) {
    // ~64 MiB of uncompressed batches.
    let data = fetched(Compression::None, 64 * 1024 * 1024 / 82);
    let mut group = c.benchmark_group("batch_walk");
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("crc32c_64MiB", |b| {
        b.iter(|| {
            Batches::new(black_box(&data))
                .map(|r| r.expect("valid").as_bytes().len())
                .sum::<usize>()
        })
    });
    // No case for the walk without CRC: it hops from header to header, so bytes per second
    // would count bytes it never reads.
    let records = read_all(&data, &mut Scratch::new());
    group.throughput(Throughput::Elements(records as u64));
    group.bench_function("walk_and_iterate_records_64MiB", |b| {
        let mut scratch = Scratch::new();
        b.iter(|| read_all(black_box(&data), &mut scratch))
    });
    group.finish();
}

fn record_iteration(c: &mut Criterion) {
    const RECORDS: usize = 200_000;
    let mut group = c.benchmark_group("records_per_codec");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(RECORDS as u64));
    for codec in Compression::ALL {
        let data = fetched(codec, RECORDS);
        let mut scratch = Scratch::new();
        assert_eq!(read_all(&data, &mut scratch), RECORDS);
        group.bench_function(codec.to_string(), |b| {
            b.iter(|| read_all(black_box(&data), &mut scratch))
        });
    }
    group.finish();
}

criterion_group!(benches, batch_walk, record_iteration);
criterion_main!(benches);
