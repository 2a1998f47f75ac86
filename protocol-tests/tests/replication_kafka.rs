//! `replication` on real brokers: flows laid by hand, the primary on Kafka 4.4 (k4), the backup on
//! Kafka 3.9 (k39). Each source topic gets records (plain, or transactional through the Java
//! producer), its replica on the backup gets copies of some of them, written as MirrorMaker 2
//! writes them (same key, value and timestamp, read_committed: no aborted record, no marker),
//! and the offset syncs MM2 would have sent. Then more records are produced on the source "after
//! the copy stopped", and `measure` (and the command) must count exactly those.
//!
//! The expected figures come from the producer side (what this test wrote and read back from
//! the source), never from the code under test.

use std::collections::BTreeMap;
use std::time::Duration;

use mm2_offsets::client::{Deadline, IsolationLevel, KafkaClient, OffsetSpec, ReadOptions};
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
use mm2_offsets::precise::SyncsSource;
use mm2_offsets::records::builder::{BatchBuilder, RecordSpec};
use mm2_offsets::records::{Batches, Scratch};
use mm2_offsets::replication::{ReplicationRequest, ReplicationRow, measure};
use mm2_offsets::select::GroupSelector;

use crate::support::mm2_records::offset_sync;
use crate::support::raw::{Raw, Records};
use crate::support::{cluster, data_writer, unique_topic};

/// A source record as a read_committed MirrorMaker 2 delivers it.
#[derive(Clone, Debug)]
pub(crate) struct Rec {
    pub(crate) offset: i64,
    pub(crate) timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
}

/// Every record of `topic`-`partition` a read_committed consumer reads, with its offset.
pub(crate) async fn delivered(client: &KafkaClient, topic: &str, partition: i32) -> Vec<Rec> {
    let deadline = Deadline::after(Duration::from_secs(30));
    let info = client.describe_topic(topic, &deadline).await.unwrap();
    let end = client
        .list_offsets(
            &info,
            &[partition],
            OffsetSpec::Latest,
            IsolationLevel::ReadCommitted,
            &deadline,
        )
        .await
        .unwrap()[&partition];
    let mut options = ReadOptions::default();
    options.isolation = IsolationLevel::ReadCommitted;
    let mut stream = client.read_range(info, partition, 0, end, options, deadline);
    let mut scratch = Scratch::new();
    let mut out = Vec::new();
    while let Some(chunk) = stream.next_chunk().await {
        let chunk = chunk.unwrap();
        let mut filter = chunk.aborted_filter(IsolationLevel::ReadCommitted);
        for batch in Batches::new(&chunk.records) {
            let batch = batch.unwrap();
            if !filter.check(&batch, &mut scratch).unwrap().is_deliver() {
                continue;
            }
            for record in batch.records(&mut scratch).unwrap() {
                let r = record.unwrap();
                if r.offset < end {
                    out.push(Rec {
                        offset: r.offset,
                        timestamp: r.timestamp,
                        key: r.key.map(<[u8]>::to_vec),
                        value: r.value.map(<[u8]>::to_vec),
                    });
                }
            }
        }
    }
    assert_eq!(
        stream.position(),
        end,
        "{topic}-{partition} read to its end"
    );
    out
}

/// Appends copies of `records` to the replica, one batch, their timestamps kept (CreateTime).
pub(crate) async fn copy(backup: &Raw, replica: &str, partition: i32, records: &[Rec]) {
    let Some(first) = records.first() else {
        return;
    };
    let mut batch = BatchBuilder::new(0);
    batch.base_timestamp = first.timestamp;
    for (i, r) in records.iter().enumerate() {
        let mut spec = RecordSpec::new(i as i32, r.key.as_deref(), r.value.as_deref());
        spec.timestamp_delta = r.timestamp - first.timestamp;
        batch = batch.push(spec);
    }
    backup.produce_batch(replica, partition, batch).await;
}

/// The offset syncs `(upstream, downstream)` of `topic`-`partition`, as MM2 writes them.
pub(crate) async fn syncs(
    primary: &Raw,
    syncs_topic: &str,
    topic: &str,
    partition: i32,
    list: &[(i64, i64)],
) {
    let records: Records = list
        .iter()
        .map(|&(u, d)| offset_sync(topic, partition, u, d))
        .collect();
    primary.produce(syncs_topic, 0, &records).await;
}

/// `count` plain records on `topic`-`partition`, one batch stamped now.
pub(crate) async fn produce(raw: &Raw, topic: &str, partition: i32, tag: &str, count: usize) {
    let records: Records = (0..count)
        .map(|i| (Some(format!("{tag}-{i}").into_bytes()), Some(b"v".to_vec())))
        .collect();
    raw.produce(topic, partition, &records).await;
}

/// What a case must measure.
#[derive(Debug, PartialEq)]
struct Want {
    copied_to: i64,
    not_copied: u64,
    aborted: u64,
    oldest: Option<i64>,
}

fn got(row: &ReplicationRow) -> Want {
    Want {
        copied_to: row.copied_to.unwrap_or(-1),
        not_copied: row.not_copied.unwrap_or(u64::MAX),
        aborted: row.aborted_not_copied.unwrap_or(u64::MAX),
        oldest: row.oldest_not_copied_timestamp,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replication_counts_what_the_backup_lacks() {
    let (k4, k39) = (cluster("k4"), cluster("k39"));
    let (primary_raw, backup_raw) = (Raw::connect(&k4).await, Raw::connect(&k39).await);
    let primary = KafkaClient::connect(k4.plaintext()).await.unwrap();
    let backup = KafkaClient::connect(k39.plaintext()).await.unwrap();
    // One alias per run: its replicas are the only topics on the backup with its prefix.
    let alias = unique_topic("rp").replace('-', "");
    let syncs_topic = format!("mm2-offset-syncs.{alias}-backup.internal");
    primary_raw.create_topic(&syncs_topic, 1).await;
    let name = |case: &str| format!("{alias}-{case}");
    let replica = |case: &str| format!("{alias}.{alias}-{case}");
    let mut want: BTreeMap<String, Want> = BTreeMap::new();
    let mut produced_after: BTreeMap<String, usize> = BTreeMap::new();

    // caught up: 20 records, all copied.
    let case = "caught";
    primary_raw.create_topic(&name(case), 1).await;
    backup_raw.create_topic(&replica(case), 1).await;
    produce(&primary_raw, &name(case), 0, case, 20).await;
    let source = delivered(&primary, &name(case), 0).await;
    copy(&backup_raw, &replica(case), 0, &source).await;
    syncs(
        &primary_raw,
        &syncs_topic,
        &name(case),
        0,
        &[(0, 0), (10, 10)],
    )
    .await;
    want.insert(
        replica(case),
        Want {
            copied_to: 20,
            not_copied: 0,
            aborted: 0,
            oldest: None,
        },
    );
    produced_after.insert(replica(case), 0);

    // behind: 30 copied, then 7 produced after the copy stopped (two batches).
    let case = "behind";
    primary_raw.create_topic(&name(case), 1).await;
    backup_raw.create_topic(&replica(case), 1).await;
    produce(&primary_raw, &name(case), 0, case, 30).await;
    let source = delivered(&primary, &name(case), 0).await;
    copy(&backup_raw, &replica(case), 0, &source).await;
    syncs(
        &primary_raw,
        &syncs_topic,
        &name(case),
        0,
        &[(0, 0), (20, 20)],
    )
    .await;
    produce(&primary_raw, &name(case), 0, "after", 4).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    produce(&primary_raw, &name(case), 0, "later", 3).await;
    let all = delivered(&primary, &name(case), 0).await;
    assert_eq!(all.len(), 37);
    want.insert(
        replica(case),
        Want {
            copied_to: 30,
            not_copied: 7,
            aborted: 0,
            oldest: Some(all[30].timestamp),
        },
    );
    produced_after.insert(replica(case), 7);

    // transactional: commit, abort, commit (5 records each, a marker after each); the first
    // transaction copied, then the copy stopped. 0-4 data, 5 marker, 6-10 aborted, 11 marker,
    // 12-16 committed, 17 marker.
    let case = "txn";
    backup_raw.create_topic(&replica(case), 1).await;
    data_writer(
        &k4,
        "transactions",
        &[
            "--topic",
            &name(case),
            "--txn-size",
            "5",
            "--plan",
            "commit,abort,commit",
            "--transactional-id",
            &name(case),
        ],
    );
    let source = delivered(&primary, &name(case), 0).await;
    let offsets: Vec<i64> = source.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [0, 1, 2, 3, 4, 12, 13, 14, 15, 16], "the log laid");
    copy(&backup_raw, &replica(case), 0, &source[..5]).await;
    syncs(&primary_raw, &syncs_topic, &name(case), 0, &[(0, 0)]).await;
    want.insert(
        replica(case),
        Want {
            // The first record with no copy: the first aborted one.
            copied_to: 6,
            not_copied: 5,
            aborted: 5,
            oldest: Some(source[5].timestamp),
        },
    );
    produced_after.insert(replica(case), 5);

    // a restart's duplicate block, passed: 0-29 copied at 0-29, MM2 restarted at 20 (sync
    // (20, 30)) and copied 20-34 at 30-44; the source holds 40.
    let case = "restart";
    primary_raw.create_topic(&name(case), 1).await;
    backup_raw.create_topic(&replica(case), 1).await;
    produce(&primary_raw, &name(case), 0, case, 40).await;
    let source = delivered(&primary, &name(case), 0).await;
    copy(&backup_raw, &replica(case), 0, &source[..30]).await;
    copy(&backup_raw, &replica(case), 0, &source[20..35]).await;
    syncs(
        &primary_raw,
        &syncs_topic,
        &name(case),
        0,
        &[(0, 0), (20, 30), (30, 40)],
    )
    .await;
    want.insert(
        replica(case),
        Want {
            copied_to: 35,
            not_copied: 5,
            aborted: 0,
            oldest: Some(source[35].timestamp),
        },
    );
    produced_after.insert(replica(case), 5);

    // a restart's duplicate block at the tip, not passed yet: 0-29 copied at 0-29, MM2
    // restarted at 20 and re-copied 20-24 at 30-34. The backup's last record copies 24 and the
    // last sync is (20, 30), but 25-29 have copies: copied_to is 30, not 25 nor 21.
    let case = "tail";
    primary_raw.create_topic(&name(case), 1).await;
    backup_raw.create_topic(&replica(case), 1).await;
    produce(&primary_raw, &name(case), 0, case, 40).await;
    let source = delivered(&primary, &name(case), 0).await;
    copy(&backup_raw, &replica(case), 0, &source[..30]).await;
    copy(&backup_raw, &replica(case), 0, &source[20..25]).await;
    syncs(
        &primary_raw,
        &syncs_topic,
        &name(case),
        0,
        &[(0, 0), (20, 30)],
    )
    .await;
    want.insert(
        replica(case),
        Want {
            copied_to: 30,
            not_copied: 10,
            aborted: 0,
            oldest: Some(source[30].timestamp),
        },
    );
    produced_after.insert(replica(case), 10);

    // a restart's LONG duplicate block at the tip (as real MirrorMaker 2 left one, see
    // replication_mm2.rs): 0-3599 copied at 0-3599, MM2 restarted at 215 (its flushed source
    // offset lagged) and re-copied 215-570 at 3600-3955 so far. The first record without a copy
    // is 3600, more than the read's lookback above the last sync's upstream offset.
    let case = "longblock";
    primary_raw.create_topic(&name(case), 1).await;
    backup_raw.create_topic(&replica(case), 1).await;
    // In batches of 100: a batch's records are stamped a millisecond apart from its base, and
    // the first not copied (3600) opens one, so its timestamp is not in the future.
    for n in 0..40 {
        produce(&primary_raw, &name(case), 0, &format!("{case}{n}"), 100).await;
    }
    let source = delivered(&primary, &name(case), 0).await;
    copy(&backup_raw, &replica(case), 0, &source[..3600]).await;
    copy(&backup_raw, &replica(case), 0, &source[215..571]).await;
    syncs(
        &primary_raw,
        &syncs_topic,
        &name(case),
        0,
        &[
            (0, 0),
            (1000, 1000),
            (2000, 2000),
            (3000, 3000),
            (3590, 3590),
            (215, 3600),
        ],
    )
    .await;
    want.insert(
        replica(case),
        Want {
            copied_to: 3600,
            not_copied: 400,
            aborted: 0,
            oldest: Some(source[3600].timestamp),
        },
    );
    produced_after.insert(replica(case), 400);

    // an empty remote partition (and an empty source): 0.
    let case = "empty";
    primary_raw.create_topic(&name(case), 1).await;
    backup_raw.create_topic(&replica(case), 1).await;
    want.insert(
        replica(case),
        Want {
            copied_to: 0,
            not_copied: 0,
            aborted: 0,
            oldest: None,
        },
    );
    produced_after.insert(replica(case), 0);

    // nothing copied yet: an empty replica of a source with 6 records.
    let case = "fresh";
    primary_raw.create_topic(&name(case), 1).await;
    backup_raw.create_topic(&replica(case), 1).await;
    produce(&primary_raw, &name(case), 0, case, 6).await;
    let source = delivered(&primary, &name(case), 0).await;
    want.insert(
        replica(case),
        Want {
            copied_to: 0,
            not_copied: 6,
            aborted: 0,
            oldest: Some(source[0].timestamp),
        },
    );
    produced_after.insert(replica(case), 6);

    let policy = ReplicationPolicy::default();
    let syncs_source = SyncsSource::for_topic(primary.clone(), syncs_topic.clone());
    let mut request = ReplicationRequest::new(alias.clone(), GroupSelector::all());
    request.timeout = Duration::from_secs(60);
    let report = measure(&backup, &primary, &syncs_source, &policy, &request)
        .await
        .unwrap();
    println!(
        "{:<8} {:>14} {:>10} {:>9} {:>7} {:>14} unproven",
        "case", "produced_after", "not_copied", "copied_to", "aborted", "oldest"
    );
    let show = |v: Option<String>| v.unwrap_or_else(|| "-".to_string());
    for row in &report.rows {
        println!(
            "{:<8} {:>14} {:>10} {:>9} {:>7} {:>14} {}",
            row.topic.rsplit('-').next().unwrap(),
            produced_after.get(&row.topic).copied().unwrap_or(0),
            show(row.not_copied.map(|v| v.to_string())),
            show(row.copied_to.map(|v| v.to_string())),
            show(row.aborted_not_copied.map(|v| v.to_string())),
            show(row.oldest_not_copied_timestamp.map(|v| v.to_string())),
            show(row.unproven.clone()),
        );
    }
    let found: BTreeMap<String, Want> = report
        .rows
        .iter()
        .map(|r| (r.topic.clone(), got(r)))
        .collect();
    assert_eq!(found, want);
    for row in &report.rows {
        assert_eq!(row.partition, 0);
        assert_eq!(row.open_not_copied, Some(0), "{}", row.topic);
        assert_eq!(row.lost_before_copy, 0, "{}", row.topic);
        assert_eq!(
            row.seconds_behind == Some(0.0),
            row.oldest_not_copied_timestamp.is_none(),
            "{}",
            row.topic
        );
    }
    assert_eq!(report.total.not_copied, 7 + 5 + 5 + 10 + 400 + 6);
    assert_eq!(report.total.aborted_not_copied, 5);
    assert_eq!(report.total.partitions, 8);
    assert_eq!(report.total.partitions_behind, 6);
    assert!(report.is_complete());

    // The command prints the same rows.
    let bin = env!("CARGO_BIN_EXE_mm2-offsets");
    let out = std::process::Command::new(bin)
        .args([
            "replication",
            "--bootstrap-server",
            k39.var("PLAINTEXT"),
            "--source",
            &alias,
            "--source-bootstrap-server",
            k4.var("PLAINTEXT"),
            "--syncs-topic",
            &syncs_topic,
            "--topic-regex",
            &format!("{alias}-(behind|txn)"),
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema_version"], 1);
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{doc}");
    for row in rows {
        let topic = row["topic"].as_str().unwrap();
        let w = &want[topic];
        assert_eq!(row["copied_to"], w.copied_to, "{topic}");
        assert_eq!(row["not_copied"], w.not_copied, "{topic}");
        assert_eq!(row["aborted_not_copied"], w.aborted, "{topic}");
        assert_eq!(
            row["oldest_not_copied_timestamp"],
            serde_json::json!(w.oldest),
            "{topic}"
        );
    }
    assert_eq!(doc["total"]["not_copied"], 12);

    // Every failover says it: a group that resumes on the "behind" replica, translated and
    // planned with a source connection, is told the 7 records its partition lacks, on stderr
    // and in the JSON's `replication` section, for its partitions only (not "caught" nor the
    // others of the flow).
    let group = format!("{alias}-group");
    let checkpoints = format!("{alias}.checkpoints.internal");
    backup_raw.create_topic(&checkpoints, 1).await;
    let key = checkpoint::encode_key(&CheckpointKey {
        group: group.as_bytes(),
        // MirrorMaker 2's checkpoints name the topic on the backup.
        topic: replica("behind").as_bytes(),
        partition: 0,
    })
    .unwrap();
    let value = checkpoint::encode_value(&CheckpointValue {
        version: 0,
        upstream_offset: 20,
        downstream_offset: 20,
        metadata: b"",
    })
    .unwrap();
    backup_raw
        .produce(&checkpoints, 0, &[(Some(key), Some(value))])
        .await;
    for command in ["translate", "apply"] {
        let out = std::process::Command::new(bin)
            .args([
                command,
                "--bootstrap-server",
                k39.var("PLAINTEXT"),
                "--source",
                &alias,
                "--group",
                &group,
                "--source-bootstrap-server",
                k4.var("PLAINTEXT"),
                "--syncs-topic",
                &syncs_topic,
                "--no-progress",
                "-o",
                "json",
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{command}: {stderr}");
        let behind = &want[&replica("behind")];
        assert_eq!(behind.not_copied, 7, "the producer's figure");
        let oldest = humantime::format_rfc3339_millis(
            std::time::UNIX_EPOCH + Duration::from_millis(behind.oldest.unwrap() as u64),
        );
        let line = format!(
            "failing over now leaves 7 records on the primary that the backup does not have (1 partitions, the oldest from {oldest})"
        );
        assert!(stderr.contains(&line), "{command}: {stderr}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let section = &doc["replication"][alias.as_str()];
        assert_eq!(section["measured"], true, "{command}: {doc}");
        assert_eq!(section["total"]["not_copied"], 7, "{command}: {section}");
        assert_eq!(section["total"]["partitions"], 1, "{command}: {section}");
        let rows = section["rows"].as_array().unwrap();
        assert_eq!(rows[0]["topic"], replica("behind"), "{command}: {section}");
        assert_eq!(
            rows[0]["copied_to"], behind.copied_to,
            "{command}: {section}"
        );
        println!("{command}: {line}");
    }
    // A primary that cannot be reached is said plainly, never a 0.
    let unreachable = std::process::Command::new(bin)
        .args([
            "translate",
            "--bootstrap-server",
            k39.var("PLAINTEXT"),
            "--source",
            &alias,
            "--group",
            &group,
            "--source-bootstrap-server",
            "127.0.0.1:1",
            "--syncs-topic",
            &syncs_topic,
            "--timeout",
            "10s",
            "--no-progress",
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&unreachable.stderr);
    assert!(stderr.contains("NOT MEASURED"), "{stderr}");
    assert!(!stderr.contains("leaves 0"), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&unreachable.stdout).unwrap();
    assert_eq!(
        doc["replication"][alias.as_str()]["measured"],
        false,
        "{doc}"
    );
    println!(
        "unreachable primary: {}",
        stderr.lines().last().unwrap_or("")
    );
    // The document against its schema (docs/schemas/replication.schema.json).
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("replication__01-cli.json"), &out.stdout).unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schemas/validate.py");
    let check = std::process::Command::new("python3")
        .arg(&script)
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}

/// The checkpoint MM2 would write for `group` on `replica`-0 (upstream, downstream).
async fn checkpoint_for(backup: &Raw, alias: &str, group: &str, replica: &str, at: (i64, i64)) {
    let checkpoints = format!("{alias}.checkpoints.internal");
    let key = checkpoint::encode_key(&CheckpointKey {
        group: group.as_bytes(),
        topic: replica.as_bytes(),
        partition: 0,
    })
    .unwrap();
    let value = checkpoint::encode_value(&CheckpointValue {
        version: 0,
        upstream_offset: at.0,
        downstream_offset: at.1,
        metadata: b"",
    })
    .unwrap();
    backup
        .produce(&checkpoints, 0, &[(Some(key), Some(value))])
        .await;
}

/// `apply --wait-until-copied` (a planned failover: consumers stopped on the primary, MM2 still
/// copying): it waits, saying for what, while the group's next record has no copy; the test
/// then appends the copies on the backup (as MM2 would) and the command plans and commits the
/// exact offset. A second group whose records never come is refused at the end of its
/// DURATION, exit 3, its partition named, nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_waits_until_copied() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let (k4, k39) = (cluster("k4"), cluster("k39"));
    let (primary_raw, backup_raw) = (Raw::connect(&k4).await, Raw::connect(&k39).await);
    let primary = KafkaClient::connect(k4.plaintext()).await.unwrap();
    let alias = unique_topic("watchrepw").replace('-', "");
    let syncs_topic = format!("mm2-offset-syncs.{alias}-backup.internal");
    primary_raw.create_topic(&syncs_topic, 1).await;
    backup_raw
        .create_topic(&format!("{alias}.checkpoints.internal"), 1)
        .await;
    let bin = env!("CARGO_BIN_EXE_mm2-offsets");
    let apply = |group: &str, wait: &str| {
        let mut command = Command::new(bin);
        command
            .args([
                "apply",
                "--bootstrap-server",
                k39.var("PLAINTEXT"),
                "--source",
                &alias,
                "--group",
                group,
                "--precise",
                "--match-records",
                "--syncs-bootstrap-server",
                k4.var("PLAINTEXT"),
                "--syncs-topic",
                &syncs_topic,
                "--wait-until-copied",
                wait,
                "--execute",
                "--no-progress",
                "-o",
                "json",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    };

    // orders: 40 records on the primary, 0-19 copied, the group stopped at 30 (its committed
    // offset there, and MM2's checkpoint of it: downstream 11 from the sync (10, 10)).
    let topic = format!("{alias}-orders");
    let replica = format!("{alias}.{topic}");
    primary_raw.create_topic(&topic, 1).await;
    backup_raw.create_topic(&replica, 1).await;
    produce(&primary_raw, &topic, 0, "orders", 40).await;
    let source = delivered(&primary, &topic, 0).await;
    copy(&backup_raw, &replica, 0, &source[..20]).await;
    syncs(&primary_raw, &syncs_topic, &topic, 0, &[(0, 0), (10, 10)]).await;
    let group = format!("{alias}-app");
    primary_raw.commit(&group, &topic, 0, 30).await;
    checkpoint_for(&backup_raw, &alias, &group, &replica, (30, 11)).await;

    let started = std::time::Instant::now();
    let mut child = apply(&group, "90s").spawn().unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let drain = std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut log = Vec::new();
    let waiting = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("no waiting line ({e}): {log:?}"));
        log.push(line.clone());
        if line.contains("wait-until-copied: waiting for") {
            break line;
        }
    };
    println!("{waiting}");
    assert!(
        waiting.contains("waiting for 1 of 1 partition(s)"),
        "{waiting}"
    );
    assert!(
        waiting.contains(&format!("{group} {replica}-0 at 30 (copied to 20, 11 record offset(s) to go, primary log end 40)")),
        "{waiting}"
    );
    // MM2 copies on: 20-34 appear on the backup while the command waits.
    copy(&backup_raw, &replica, 0, &source[20..35]).await;
    let out = child.wait_with_output().unwrap();
    drain.join().unwrap();
    log.extend(rx.try_iter());
    let log = log.join("\n");
    assert_eq!(out.status.code(), Some(0), "{log}");
    assert!(
        log.contains("every selected group's next record has a copy on the backup (1 partition(s)"),
        "{log}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["executed"], true, "{doc}");
    let committed = backup_raw.committed(&group).await;
    assert_eq!(
        committed.get(&(replica.clone(), 0)),
        Some(&30),
        "the exact offset (record matching), not MM2's 11: {log}"
    );
    println!(
        "waited {:?}, then committed {group} {replica}-0 at 30 (MM2's checkpoint: 11)",
        started.elapsed()
    );

    // stuck: the copy never reaches the group's next record: refused after 5 s, nothing written.
    let topic = format!("{alias}-stuck");
    let replica = format!("{alias}.{topic}");
    primary_raw.create_topic(&topic, 1).await;
    backup_raw.create_topic(&replica, 1).await;
    produce(&primary_raw, &topic, 0, "stuck", 20).await;
    let source = delivered(&primary, &topic, 0).await;
    copy(&backup_raw, &replica, 0, &source[..10]).await;
    syncs(&primary_raw, &syncs_topic, &topic, 0, &[(0, 0)]).await;
    let group = format!("{alias}-stuck-app");
    primary_raw.commit(&group, &topic, 0, 15).await;
    checkpoint_for(&backup_raw, &alias, &group, &replica, (15, 1)).await;
    let out = apply(&group, "5s").output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{log}");
    let line = log
        .lines()
        .find(|l| l.starts_with("error: --wait-until-copied 5s"))
        .unwrap_or_else(|| panic!("no refusal: {log}"));
    assert!(
        line.contains(&format!("1 partition(s) still without a copy of the group's next record: {group} {replica}-0 at 15 (copied to 10")),
        "{line}"
    );
    assert!(line.ends_with("Nothing planned or written"), "{line}");
    assert!(
        backup_raw.committed(&group).await.is_empty(),
        "nothing written"
    );
    assert!(out.stdout.is_empty(), "no plan printed");
    println!("{line}");

    // A group without checkpoints, with --fail-on-missing-groups: refused at once (exit 1), not
    // after the wait.
    let started = std::time::Instant::now();
    let out = apply(&format!("{alias}-nobody"), "60s")
        .arg("--fail-on-missing-groups")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{log}");
    assert!(log.contains("--fail-on-missing-groups"), "{log}");
    assert!(started.elapsed() < Duration::from_secs(30), "{log}");
}
