//! Throughput of the whole read path in memory: batch walk, CRC32C, decompression, record
//! parse, checkpoint decode and translation, through [`BatchTranslator`] (the same code the
//! network read runs per fetched chunk).
//!
//! The data is shaped like a real MirrorMaker 2 checkpoints topic: 10,000 consumer groups
//! (`app-team-<n>`), each committing 100 partitions of 5 topics (`primary.orders-<k>`, 20
//! partitions each), one record per (group, topic, partition): 1,000,000 records. Records of a
//! group are written together, as `MirrorCheckpointTask` emits them group by group; 1 in 100
//! carries commit metadata, the rest none. Batches hold ~16 KiB of uncompressed records, the
//! Java producer's default `batch.size`, compressed with each codec as the Java client frames it.
//!
//! Cases (throughput in records/s):
//! - `fold/<codec>`: every group selected, every batch folded in (the per-record hot path);
//! - `fold_10_emits/none`: 1,000 groups emitted ten times over (100,000 keys), so most records
//!   update a key already held: the per-record cost without the memory of a new key;
//! - `fold_and_finish/none`: the same plus [`BatchTranslator::finish`], which builds the sorted
//!   table of the 1,000,000 results (names once, a 16-byte row per offset);
//! - `exact_1pct/none`, `regex_1pct/none`: 100 groups selected by exact id, and 99 by one
//!   regex; values of the other groups are never decoded.
//!
//! - `sync_index/build_1M`: [`index_from_batches`] over a 1,000,000-record offset-syncs topic
//!   (100 partitions, 10,000 syncs each, interleaved as MirrorSourceTask writes them): the
//!   batch walk, the sync decode and the sorted index of `--precise`;
//! - `sync_index/retranslate_100k`: 100,000 checkpoint offsets re-translated with that index.
//!
//! - `precise_100k/*`, the benchmark of `--precise` (issue 12): a checkpoints topic of 100,000
//!   keys (1,000 groups x 100 partitions, checkpointed 10 times: 1,000,000 records, upstream
//!   offsets inside the synced range) and the 1,000,000-record offset-syncs topic above.
//!   `plain` is the plain translation (fold + finish); `syncs_1M` the index built from the syncs;
//!   `retranslate` the 100,000 re-translations through [`retranslate`] (the replication policy's
//!   topic rename included); `precise` all three in a row on one thread. The goal: `precise`
//!   within 2x of `plain` (the network read runs the two reads in parallel, so one thread is the
//!   conservative case). Under `cargo test --benches` (no `--bench` argument) the data is a
//!   tenth of that, to keep CI's setup short.
//!
//! Run: `cargo bench --bench translate -- --warm-up-time 1 --measurement-time 5`; with
//! `BENCH_CLOCK=cpu` in the environment the benchmark thread's CPU time is measured instead of
//! wall time (group `translate_1M_cpu`), for a machine shared with other work. With
//! `BENCH_RSS=fold/none` (or `fold_and_finish/none`, `fold/zstd`, ...) it runs that case once and
//! prints the peak memory it added instead of benchmarking.

mod support;

use std::hint::black_box;
use std::rc::Rc;

use criterion::measurement::Measurement;
use criterion::{Criterion, Throughput};
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
use mm2_offsets::mm2::offset_sync::{self, OffsetSyncKey, OffsetSyncValue};
use mm2_offsets::mm2::sync_index::Interpolation;
use mm2_offsets::precise::{index_from_batches, retranslate};
use mm2_offsets::records::Compression;
use mm2_offsets::records::builder::{BatchBuilder, RecordSpec};
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::BatchTranslator;

const GROUPS: usize = 10_000;
const TOPICS: usize = 5;
const PARTITIONS_PER_TOPIC: usize = 20;
const RECORDS: usize = GROUPS * TOPICS * PARTITIONS_PER_TOPIC;
/// Uncompressed records-section size at which a batch is closed (Java's `batch.size`).
const BATCH_BYTES: usize = 16 * 1024;

/// The checkpoint records of `groups` groups in the order MirrorMaker 2 writes them: group by
/// group, `emits` times over (one pass per emit interval). Generated as they are consumed, so
/// building the input leaves no freed heap behind for the measured code to reuse.
fn checkpoints(groups: usize, emits: usize) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> {
    let per_group = TOPICS * PARTITIONS_PER_TOPIC;
    (0..groups * per_group * emits).map(move |n| {
        let group = format!("app-team-{}", (n / per_group) % groups);
        let topic = format!("primary.orders-{}", (n / PARTITIONS_PER_TOPIC) % TOPICS);
        let n = n as i64;
        let metadata = if n % 100 == 7 {
            format!("{{\"commit\":{n}}}")
        } else {
            String::new()
        };
        let key = checkpoint::encode_key(&CheckpointKey {
            group: group.as_bytes(),
            topic: topic.as_bytes(),
            partition: (n % PARTITIONS_PER_TOPIC as i64) as i32,
        })
        .expect("short names");
        let value = checkpoint::encode_value(&CheckpointValue {
            version: 0,
            upstream_offset: 1_000_000 + n * 13,
            downstream_offset: 900_000 + n * 11,
            metadata: metadata.as_bytes(),
        })
        .expect("short metadata");
        (key, value)
    })
}

/// Back-to-back batches of `records` in `codec`, each closed once its records reach
/// [`BATCH_BYTES`] uncompressed.
fn batches(codec: Compression, records: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut batch = BatchBuilder::new(0).compression(codec);
    let mut batch_bytes = 0;
    let mut section = Vec::new();
    for (offset, (key, value)) in records.into_iter().enumerate() {
        let delta = offset as i64 - batch.base_offset;
        let mut spec = RecordSpec::new(delta as i32, Some(&key), Some(&value));
        // Checkpoints of one emit pass are a few milliseconds apart.
        spec.timestamp_delta = delta / 50;
        section.clear();
        spec.encode(&mut section);
        batch_bytes += section.len();
        batch = batch.push(spec);
        if batch_bytes >= BATCH_BYTES {
            batch.write_to(&mut out);
            batch = BatchBuilder::new(offset as i64 + 1).compression(codec);
            batch_bytes = 0;
        }
    }
    if !batch.records.is_empty() {
        batch.write_to(&mut out);
    }
    out
}

/// The offset syncs of `TOPICS * PARTITIONS_PER_TOPIC` partitions, `records` in all, in the
/// order MirrorSourceTask interleaves them: every 100th record upstream synced, and every
/// 1,000th sync after a restart that shifted the downstream by 5 (unequal steps).
fn offset_syncs(records: usize) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> {
    let partitions = TOPICS * PARTITIONS_PER_TOPIC;
    (0..records).map(move |n| {
        let topic = format!("orders-{}", (n / PARTITIONS_PER_TOPIC) % TOPICS);
        let k = (n / partitions) as i64;
        let key = offset_sync::encode_key(&OffsetSyncKey {
            topic: topic.as_bytes(),
            partition: (n % PARTITIONS_PER_TOPIC) as i32,
        })
        .expect("short names");
        let value = offset_sync::encode_value(&OffsetSyncValue {
            upstream_offset: k * 100,
            downstream_offset: k * 100 + 5 * (k / 1000),
        });
        (key, value)
    })
}

fn sync_index<M: Measurement>(c: &mut Criterion<M>) {
    let mut group = c.benchmark_group("sync_index");
    group.sample_size(10);
    let data = batches(Compression::None, offset_syncs(RECORDS));
    let build = || {
        index_from_batches([black_box(&data[..])], Interpolation::GaplessUpstream)
            .expect("valid batches")
            .0
    };
    let index = build();
    assert_eq!(index.partitions(), TOPICS * PARTITIONS_PER_TOPIC);
    group.throughput(Throughput::Elements(RECORDS as u64));
    group.bench_function("build_1M", |b| b.iter(|| black_box(build().partitions())));
    let lookups: Vec<(Vec<u8>, i32, i64)> = (0..100_000usize)
        .map(|n| {
            let topic = format!("orders-{}", n % TOPICS).into_bytes();
            (
                topic,
                (n % PARTITIONS_PER_TOPIC) as i32,
                (n as i64 * 7_919) % 1_000_000,
            )
        })
        .collect();
    group.throughput(Throughput::Elements(lookups.len() as u64));
    group.bench_function("retranslate_100k", |b| {
        b.iter(|| {
            lookups
                .iter()
                .map(|(t, p, u)| index.translate_checkpoint(t, *p, *u, 0).offset)
                .sum::<i64>()
        })
    });
    group.finish();
}

/// `keys` checkpoint keys (groups of `TOPICS * PARTITIONS_PER_TOPIC` partitions) checkpointed
/// `emits` times, group by group, with upstream offsets that grow each emit and stay below
/// `synced_to`, the upstream offset the syncs of [`offset_syncs`] reach; MM2's offset lags
/// 10,000 upstream records behind, as from a sparse sync.
fn precise_checkpoints(
    keys: usize,
    emits: usize,
    synced_to: i64,
) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> {
    let per_group = TOPICS * PARTITIONS_PER_TOPIC;
    let step = synced_to / (emits as i64 + 1);
    (0..keys * emits).map(move |n| {
        let (emit, k) = ((n / keys) as i64, n % keys);
        let group = format!("app-team-{}", k / per_group);
        let topic = format!("primary.orders-{}", (k / PARTITIONS_PER_TOPIC) % TOPICS);
        let upstream = emit * step + (k as i64 * 7_919) % step;
        let key = checkpoint::encode_key(&CheckpointKey {
            group: group.as_bytes(),
            topic: topic.as_bytes(),
            partition: (k % PARTITIONS_PER_TOPIC) as i32,
        })
        .expect("short names");
        let value = checkpoint::encode_value(&CheckpointValue {
            version: 0,
            upstream_offset: upstream,
            downstream_offset: (upstream - 10_000).max(0),
            metadata: b"",
        })
        .expect("short metadata");
        (key, value)
    })
}

fn precise<M: Measurement>(c: &mut Criterion<M>, name: &str) {
    // `cargo bench` passes --bench; `cargo test --benches` does not and runs each case once.
    let scale = if std::env::args().any(|a| a == "--bench") {
        1
    } else {
        10
    };
    let (syncs, keys, emits) = (RECORDS / scale, 100_000 / scale, 10);
    let synced_to = (syncs / (TOPICS * PARTITIONS_PER_TOPIC)) as i64 * 100;
    let sync_data = batches(Compression::None, offset_syncs(syncs));
    let checkpoint_data = batches(
        Compression::None,
        precise_checkpoints(keys, emits, synced_to),
    );
    let all = GroupSelector::all();
    let policy = ReplicationPolicy::default();
    let plain = || {
        let mut translator = BatchTranslator::new(&all);
        translator
            .add_batches(0, black_box(&checkpoint_data))
            .expect("valid batches");
        translator.finish("primary")
    };
    let index = || {
        index_from_batches([black_box(&sync_data[..])], Interpolation::GaplessUpstream)
            .expect("valid batches")
            .0
    };
    let translation = plain();
    let synced = index();
    assert_eq!(translation.len(), keys);
    assert_eq!(synced.partitions(), TOPICS * PARTITIONS_PER_TOPIC);
    let precise = retranslate(&translation, &synced, &policy);
    // Every key has a sync below it: none may keep MM2's offset for want of history.
    assert!(precise.iter().all(|p| p.offset > p.mm2_offset));

    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    group.throughput(Throughput::Elements(keys as u64));
    group.bench_function("plain", |b| b.iter(|| black_box(plain().len())));
    group.bench_function("syncs_1M", |b| b.iter(|| black_box(index().partitions())));
    group.bench_function("retranslate", |b| {
        b.iter(|| black_box(retranslate(&translation, &synced, &policy).len()))
    });
    group.bench_function("precise", |b| {
        b.iter(|| {
            let translation = plain();
            let synced = index();
            black_box(retranslate(&translation, &synced, &policy).len())
        })
    });
    group.finish();
}

/// Folds all batches; returns the records seen, which must be all of them.
fn fold(data: &[u8], selector: &GroupSelector) -> u64 {
    let mut translator = BatchTranslator::new(selector);
    translator
        .add_batches(0, black_box(data))
        .expect("valid batches");
    black_box(translator.records())
}

fn selectors() -> (GroupSelector, GroupSelector, GroupSelector) {
    let all = GroupSelector::all();
    let ids: Vec<String> = (0..GROUPS)
        .step_by(100)
        .map(|g| format!("app-team-{g}"))
        .collect();
    let exact = GroupSelector::ids(ids);
    // app-team-100, -200, ... -9900: 99 groups.
    let regex = GroupSelector::patterns(["app-team-[0-9]*00"]).expect("valid");
    (all, exact, regex)
}

fn translate<M: Measurement>(c: &mut Criterion<M>, name: &str) {
    let (all, exact, regex) = selectors();
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(RECORDS as u64));
    group.sample_size(10);

    // Data is built on first use, so a filtered run (`-- fold/none`) builds only its own.
    let mut built: [Option<Rc<[u8]>>; 5] = Default::default();
    let mut data = |codec: Compression| -> Rc<[u8]> {
        built[codec.id() as usize]
            .get_or_insert_with(|| {
                let data = batches(codec, checkpoints(GROUPS, 1));
                assert_eq!(fold(&data, &all), RECORDS as u64);
                eprintln!(
                    "{codec}: {} bytes of batches for {RECORDS} records",
                    data.len()
                );
                data.into()
            })
            .clone()
    };
    let mut checked = false;
    let mut check_selectors = |data: &[u8]| {
        if !checked {
            checked = true;
            let mut check = BatchTranslator::new(&exact);
            check.add_batches(0, data).expect("valid");
            assert_eq!(check.finish("primary").len(), 100 * 100);
            let mut check = BatchTranslator::new(&regex);
            check.add_batches(0, data).expect("valid");
            assert_eq!(check.finish("primary").len(), 99 * 100);
        }
    };

    for codec in Compression::ALL {
        group.bench_function(format!("fold/{codec}"), |b| {
            let data = data(codec);
            b.iter(|| fold(&data, &all))
        });
    }
    // The same number of records over a tenth of the keys: what a record costs once its key's
    // memory exists (a topic not yet compacted, read after ten emit intervals).
    let mut repeated = None;
    group.bench_function("fold_10_emits/none", |b| {
        let data = repeated
            .get_or_insert_with(|| batches(Compression::None, checkpoints(GROUPS / 10, 10)));
        b.iter(|| fold(data, &all))
    });
    group.bench_function("fold_and_finish/none", |b| {
        let data = data(Compression::None);
        b.iter(|| {
            let mut translator = BatchTranslator::new(&all);
            translator.add_batches(0, black_box(&data)).expect("valid");
            black_box(translator.finish("primary").len())
        })
    });
    group.bench_function("exact_1pct/none", |b| {
        let data = data(Compression::None);
        check_selectors(&data);
        b.iter(|| fold(&data, &exact))
    });
    group.bench_function("regex_1pct/none", |b| {
        let data = data(Compression::None);
        check_selectors(&data);
        b.iter(|| fold(&data, &regex))
    });
    group.finish();
}

/// `BENCH_RSS=<case>`: runs one case once, outside criterion, and prints the peak resident
/// memory it added to the process (Linux `VmHWM`, reset after the input is built).
/// Cases: `fold/<codec>`, `fold_and_finish/none`. One case per process.
fn peak_memory(case: &str) {
    let (kind, codec) = case
        .split_once('/')
        .expect("BENCH_RSS=fold/none or fold_and_finish/none");
    let codec = Compression::ALL
        .into_iter()
        .find(|c| c.to_string() == codec)
        .expect("a codec name: none, gzip, snappy, lz4, zstd");
    let data = batches(codec, checkpoints(GROUPS, 1));
    let all = GroupSelector::all();
    let before = support::status_kib("VmRSS");
    support::reset_peak_rss();
    let (count, what) = match kind {
        "fold" => (fold(&data, &all) as usize, "records folded"),
        "fold_and_finish" => {
            let mut translator = BatchTranslator::new(&all);
            translator.add_batches(0, &data).expect("valid");
            (translator.finish("primary").len(), "offsets")
        }
        other => panic!("unknown case {other}"),
    };
    let peak = support::status_kib("VmHWM");
    println!(
        "{case}: {count} {what}; peak RSS {} KiB above the {before} KiB held before \
         (input: {} KiB of batches for {RECORDS} records)",
        peak.saturating_sub(before),
        data.len() / 1024
    );
}

fn main() {
    if let Ok(case) = std::env::var("BENCH_RSS") {
        peak_memory(&case);
    } else if support::cpu_clock_requested() {
        let mut c = Criterion::default()
            .with_measurement(support::ThreadCpuTime)
            .configure_from_args();
        translate(&mut c, "translate_1M_cpu");
        precise(&mut c, "precise_100k_cpu");
        c.final_summary();
    } else {
        let mut c = Criterion::default().configure_from_args();
        translate(&mut c, "translate_1M");
        sync_index(&mut c);
        precise(&mut c, "precise_100k");
        c.final_summary();
    }
}
