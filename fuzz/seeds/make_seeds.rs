//! Writes seed inputs for the fuzz targets of this crate into `<corpus dir>/<target>/`, built
//! with the crate's own encoders (`records::builder`, `mm2::checkpoint`, ...) so the fuzzers
//! start from well-formed data of every shape: each codec, tombstones, control batches,
//! metadata, other versions.
//!
//! Run through `fuzz/seed.sh`, which builds and runs it.

use std::fs;
use std::path::Path;

use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
use mm2_offsets::mm2::heartbeat::{self, HeartbeatKey, HeartbeatValue};
use mm2_offsets::records::builder::{BatchBuilder, SnappyFraming, end_txn_marker};
use mm2_offsets::records::{Batches, Compression, ControlRecordType};
use mm2_offsets::wire::fuzzing::SCRAM_CLIENT_NONCE;
use mm2_offsets_fuzz::decompress_seed;

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "corpus".to_string());
    let dir = Path::new(&dir);
    let mut total = 0;
    for (target, seeds) in [
        ("checkpoint_decode", checkpoint_seeds()),
        ("heartbeat_decode", heartbeat_seeds()),
        ("properties_parse", properties_seeds()),
        ("api_versions_response", api_versions_seeds()),
        ("sasl_scram_server_first", scram_seeds()),
        ("translate_batches", translate_seeds()),
        ("records_batches", records_seeds()),
        ("records_decompress", decompress_seeds()),
        ("sync_snapshot", snapshot_seeds()),
    ] {
        let target_dir = dir.join(target);
        fs::create_dir_all(&target_dir).expect("create the corpus directory");
        for (i, seed) in seeds.iter().enumerate() {
            fs::write(target_dir.join(format!("seed-{i:03}")), seed).expect("write a seed");
        }
        println!("{target}: {} seeds", seeds.len());
        total += seeds.len();
    }
    println!("{total} seeds in {}", dir.display());
}

/// Snapshots of offset-sync histories: empty, one lifetime, a restart, several topics.
fn snapshot_seeds() -> Vec<Vec<u8>> {
    use mm2_offsets::mm2::sync_index::{Interpolation, SyncIndexBuilder};
    use mm2_offsets::precise::SyncSnapshot;
    let histories: [&[(&[u8], i32, &[(i64, i64)])]; 4] = [
        &[],
        &[(b"orders", 0, &[(0, 0), (100, 100), (200, 200)])],
        &[(b"orders", 3, &[(0, 0), (100, 101), (50, 160), (250, 370)])],
        &[
            (b"a", 0, &[(7, 9)]),
            (b"b.c-d", 1, &[(0, 0), (1, 1)]),
            (b"b.c-d", 2, &[(i64::MAX - 1, 1)]),
        ],
    ];
    histories
        .iter()
        .map(|history| {
            let mut builder = SyncIndexBuilder::new();
            for (topic, partition, syncs) in history.iter() {
                builder.extend(topic, *partition, syncs.iter().copied());
            }
            let index = builder.finish(Interpolation::Disabled);
            SyncSnapshot::from_index(&index, "mm2-offset-syncs.backup.internal", 3, 1).encode()
        })
        .collect()
}

/// 2 bytes big-endian key length, key, value: the split the record decoders' targets use.
fn key_value(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = (key.len() as u16).to_be_bytes().to_vec();
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    out
}

fn checkpoint_key(group: &str, topic: &str, partition: i32) -> Vec<u8> {
    checkpoint::encode_key(&CheckpointKey {
        group: group.as_bytes(),
        topic: topic.as_bytes(),
        partition,
    })
    .expect("short names")
}

fn checkpoint_value(version: i16, upstream: i64, downstream: i64, metadata: &str) -> Vec<u8> {
    checkpoint::encode_value(&CheckpointValue {
        version,
        upstream_offset: upstream,
        downstream_offset: downstream,
        metadata: metadata.as_bytes(),
    })
    .expect("short metadata")
}

fn checkpoint_seeds() -> Vec<Vec<u8>> {
    let key = checkpoint_key("app-team-1", "primary.orders-0", 3);
    let value = checkpoint_value(0, 120, 100, "");
    vec![
        key_value(&key, &value),
        key_value(
            &checkpoint_key("g", "t", 0),
            &checkpoint_value(0, 7, 8, "m"),
        ),
        key_value(&key, &checkpoint_value(1, 120, 100, "{\"commit\":1}")),
        key_value(&key, &checkpoint_value(0, 5, -1, "")),
        key_value(&key[..key.len() - 1], &value[..value.len() - 1]),
        key_value(&[0xff, 0xff, 0, 1, b't', 0, 0, 0, 0], &value),
        key_value(
            &checkpoint_key("\u{fffd}", "", i32::MIN),
            &checkpoint_value(-1, i64::MAX, i64::MIN, "x"),
        ),
    ]
}

fn heartbeat_seeds() -> Vec<Vec<u8>> {
    let key = heartbeat::encode_key(&HeartbeatKey {
        source_cluster_alias: b"primary",
        target_cluster_alias: b"backup",
    })
    .expect("short aliases");
    let value = heartbeat::encode_value(&HeartbeatValue {
        version: 0,
        timestamp: 1_700_000_000_000,
    });
    vec![
        key_value(&key, &value),
        key_value(&key[..3], &value[..9]),
        key_value(
            &[0x80, 0x00],
            &heartbeat::encode_value(&HeartbeatValue {
                version: 3,
                timestamp: -1,
            }),
        ),
    ]
}

fn properties_seeds() -> Vec<Vec<u8>> {
    [
        "bootstrap.servers=b1:9092,b2:9092\nclient.id=mm2-offsets\n",
        "# comment\n! other comment\nbootstrap.servers = localhost:9092\nsecurity.protocol=SASL_SSL\n\
         sasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.\\\n  \
         ScramLoginModule required username=\"alice\" password=\"s3cr\\u0065t\";\n\
         ssl.truststore.type=PEM\nssl.truststore.location=/etc/ssl/ca.pem\n",
        "bootstrap.servers:b1:9093\nsecurity.protocol SSL\nssl.keystore.type=PEM\n\
         ssl.keystore.certificate.chain=-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\n\
         ssl.keystore.key=-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\n\
         ssl.endpoint.identification.algorithm=\nrequest.timeout.ms=30000\n",
        "bootstrap.servers=b:1\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n\
         sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
         username='u' password='p';\nsocket.connection.setup.timeout.ms=1000\n",
        "key\\ with\\ spaces=value\\\\\n\\u00e9=\\t\\n\ntrailing\\\n",
        "bad.escape=\\u12G4\n",
    ]
    .into_iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

/// ApiVersions response bodies: `(api_key, min, max)` entries, encoded at `version`.
fn api_versions_body(version: i16, error: i16, entries: &[(i16, i16, i16)]) -> Vec<u8> {
    let flexible = version >= 3;
    let mut out = version.to_be_bytes().to_vec();
    out.extend_from_slice(&error.to_be_bytes());
    if flexible {
        out.push(entries.len() as u8 + 1); // compact array length (small)
    } else {
        out.extend_from_slice(&(entries.len() as i32).to_be_bytes());
    }
    for (key, min, max) in entries {
        out.extend_from_slice(&key.to_be_bytes());
        out.extend_from_slice(&min.to_be_bytes());
        out.extend_from_slice(&max.to_be_bytes());
        if flexible {
            out.push(0); // no tagged fields
        }
    }
    if version >= 1 {
        out.extend_from_slice(&0i32.to_be_bytes()); // throttle_time_ms
    }
    if flexible {
        out.push(0);
    }
    out
}

fn api_versions_seeds() -> Vec<Vec<u8>> {
    let apis = [
        (0, 3, 12),
        (1, 4, 17),
        (2, 1, 10),
        (3, 0, 13),
        (18, 0, 4),
        (36, 0, 2),
        (17, 1, 1),
    ];
    let mut seeds: Vec<Vec<u8>> = (0..=4).map(|v| api_versions_body(v, 0, &apis)).collect();
    // UNSUPPORTED_VERSION, v0-encoded, listing the ApiVersions versions the broker knows.
    let mut unsupported = api_versions_body(0, 35, &[(18, 0, 2)]);
    unsupported[..2].copy_from_slice(&3i16.to_be_bytes());
    seeds.push(unsupported);
    seeds.push(api_versions_body(3, 0, &[]));
    seeds
}

fn scram_seeds() -> Vec<Vec<u8>> {
    let server_first = format!(
        "r={SCRAM_CLIENT_NONCE}%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    );
    let mut seeds = Vec::new();
    for (which, message) in [
        (0u8, server_first.clone()),
        (0, format!("{server_first},ext=1")),
        (0, format!("m=ext,{server_first}")),
        (0, server_first.replace("i=4096", "i=8192")),
        (0, format!("r={SCRAM_CLIENT_NONCE},s=,i=4096")),
        (
            1,
            "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".to_string(),
        ),
        (1, "e=invalid-proof".to_string()),
        (1, "v=AAAA".to_string()),
    ] {
        let mut seed = vec![which];
        seed.extend_from_slice(message.as_bytes());
        seeds.push(seed);
    }
    seeds
}

fn translate_seeds() -> Vec<Vec<u8>> {
    let records: Vec<(Vec<u8>, Option<Vec<u8>>)> = (0..6)
        .map(|i| {
            let group = ["g", "app-team-1", "a-team"][i % 3];
            let key = checkpoint_key(group, "primary.orders", (i / 3) as i32);
            let value = (i != 4)
                .then(|| checkpoint_value(0, 100 + i as i64, 90 + i as i64, ["", "m"][i % 2]));
            (key, value)
        })
        .collect();
    let batch = |base: i64, codec: Compression| {
        let mut b = BatchBuilder::new(base).compression(codec);
        for (key, value) in &records {
            b = b.record(Some(key), value.as_deref());
        }
        b
    };
    let mut seeds = Vec::new();
    for codec in Compression::ALL {
        for selector in 0..3u8 {
            let mut seed = vec![selector];
            batch(0, codec).write_to(&mut seed);
            seeds.push(seed);
        }
    }
    // Raw snappy, a transaction and its abort marker, then a null-key record.
    let mut seed = vec![0];
    let mut raw = batch(0, Compression::Snappy);
    raw.snappy_framing = SnappyFraming::Raw;
    raw.write_to(&mut seed);
    let mut txn = batch(6, Compression::None);
    txn = txn.transactional(7, 0);
    txn.write_to(&mut seed);
    seed.extend(end_txn_marker(12, 7, 0, ControlRecordType::Abort));
    BatchBuilder::new(13)
        .record(None, Some(b"x"))
        .record(Some(b"\x00\x01g"), Some(b"\x00"))
        .write_to(&mut seed);
    seeds.push(seed);
    seeds
}

/// The batches of the translate seeds, without their group selector byte.
fn records_seeds() -> Vec<Vec<u8>> {
    translate_seeds()
        .into_iter()
        .filter(|seed| seed[0] == 0)
        .map(|seed| seed[1..].to_vec())
        .collect()
}

/// The compressed payload of each compressed batch of the records seeds, after the byte that
/// picks its codec in `records_decompress` (an index into `Compression::ALL`).
fn decompress_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for section in records_seeds() {
        let batches = Batches::new(&section).flatten();
        seeds.extend(batches.filter_map(|batch| decompress_seed(&batch)));
    }
    seeds
}
