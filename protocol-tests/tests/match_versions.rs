//! Record matching on every broker generation the harness runs: Kafka 4.4 (k4), 3.9 (k39), 3.6
//! (k36) and 2.8 (k28, ZooKeeper, no topic ids in Fetch). Matching reads both sides with Fetch
//! and ListOffsets at whatever version each broker speaks; these flows are laid by hand on one
//! cluster (the source topic and its replica side by side), so every broker answers both reads.
//!
//! Two flows per broker, the replica written as MirrorMaker 2 writes it (same key, value and
//! timestamp), with the offset syncs it would have sent:
//! - **restart**: 60 distinct records; a first task lifetime copies 0..40, a second resumes at
//!   the committed 20 and copies 20..60 again (a duplicate block of 20); syncs (0, 0), (30, 30),
//!   then the second lifetime's (20, 40) and (50, 70).
//! - **compacted history**: 60 records copied once, but only the syncs (40, 40) and (50, 50)
//!   are kept (the offset-syncs topic is compacted), so the groups below 40 have no sync below
//!   them.
//!
//! The truth comes from how the test laid the replica, never from the code under test: for an
//! upstream offset `U`, the least, over the records at or after `U`, of their last copy (the
//! log end when there is none); for a failback from replica offset `D`, the first source record
//! no copy below `D` holds. Every upstream offset is matched and must be exactly that; every
//! replica offset is failed back, exactly or with its reason: only a group at 0, which has read
//! nothing, is `no-sync`; below the oldest kept sync the replica is read from its log start.

use std::time::{Duration, Instant};

use mm2_offsets::client::{Deadline, IsolationLevel, KafkaClient, OffsetSpec, ReadOptions};
use mm2_offsets::record_match::reverse::{ReverseRow, match_reverse};
use mm2_offsets::record_match::{MatchOptions, MatchRow, match_rows};
use mm2_offsets::records::builder::{BatchBuilder, RecordSpec};
use mm2_offsets::records::{Batches, Scratch};

use crate::support::mm2_records::sync_record;
use crate::support::raw::{Raw, Records};
use crate::support::{cluster, unique_topic};

/// A source record as MirrorMaker 2 delivers it.
#[derive(Clone, Debug)]
struct Rec {
    timestamp: i64,
    key: Vec<u8>,
    value: Vec<u8>,
}

/// Every record of `topic`-0, in offset order (the test writes no gaps).
async fn read_all(client: &KafkaClient, topic: &str) -> Vec<Rec> {
    let deadline = Deadline::after(Duration::from_secs(30));
    let info = client.describe_topic(topic, &deadline).await.unwrap();
    let end = client
        .list_offsets(
            &info,
            &[0],
            OffsetSpec::Latest,
            IsolationLevel::ReadUncommitted,
            &deadline,
        )
        .await
        .unwrap()[&0];
    let mut stream = client.read_range(info, 0, 0, end, ReadOptions::default(), deadline);
    let mut scratch = Scratch::new();
    let mut out = Vec::new();
    while let Some(chunk) = stream.next_chunk().await {
        let chunk = chunk.unwrap();
        for batch in Batches::new(&chunk.records) {
            for record in batch.unwrap().records(&mut scratch).unwrap() {
                let r = record.unwrap();
                if r.offset < end {
                    assert_eq!(r.offset, out.len() as i64, "{topic}: no gaps");
                    out.push(Rec {
                        timestamp: r.timestamp,
                        key: r.key.unwrap().to_vec(),
                        value: r.value.unwrap().to_vec(),
                    });
                }
            }
        }
    }
    assert_eq!(out.len() as i64, end, "{topic} read to its end");
    out
}

/// Appends copies of `records` to the replica as one batch, their timestamps kept.
async fn copy(raw: &Raw, replica: &str, records: &[Rec]) {
    let first = &records[0];
    let mut batch = BatchBuilder::new(0);
    batch.base_timestamp = first.timestamp;
    for (i, r) in records.iter().enumerate() {
        let mut spec = RecordSpec::new(i as i32, Some(&r.key), Some(&r.value));
        spec.timestamp_delta = r.timestamp - first.timestamp;
        batch = batch.push(spec);
    }
    raw.produce_batch(replica, 0, batch).await;
}

/// One flow: the source topic, its replica, the kept syncs, and where each record's copies are.
struct Flow {
    source: String,
    replica: String,
    syncs: Vec<(i64, i64)>,
    /// For each source offset, the replica offsets of its copies.
    copies: Vec<Vec<i64>>,
    replica_end: i64,
}

impl Flow {
    /// Failback: for a group at replica offset `d` (it read every replica record below it), the
    /// first source record it has not read in any copy.
    fn first_unread(&self, d: i64) -> i64 {
        (0..self.copies.len() as i64)
            .find(|&u| !self.copies[u as usize].iter().any(|&c| c < d))
            .unwrap_or(self.copies.len() as i64)
    }

    /// The least, over the records at or after `u`, of their last copy; the log end if none.
    fn truth(&self, u: i64) -> i64 {
        self.copies[u as usize..]
            .iter()
            .filter_map(|c| c.last().copied())
            .min()
            .unwrap_or(self.replica_end)
    }
}

/// Lays a flow on `raw`'s cluster: 60 distinct source records, then the replica from
/// `lifetimes` (each a source range `[from, to)` copied in order), and the `syncs` kept.
async fn lay(
    raw: &Raw,
    client: &KafkaClient,
    name: &str,
    lifetimes: &[(usize, usize)],
    syncs: &[(i64, i64)],
) -> Flow {
    let source = unique_topic(&format!("mv-{name}"));
    let replica = format!("src.{source}");
    raw.create_topic(&source, 1).await;
    raw.create_topic(&replica, 1).await;
    let records: Records = (0..60)
        .map(|i| {
            (
                Some(format!("{name}-key-{i}").into_bytes()),
                Some(format!("value-{i}").into_bytes()),
            )
        })
        .collect();
    raw.produce(&source, 0, &records).await;
    let written = read_all(client, &source).await;
    assert_eq!(written.len(), 60);
    let mut copies = vec![Vec::new(); written.len()];
    let mut at = 0i64;
    for &(from, to) in lifetimes {
        copy(raw, &replica, &written[from..to]).await;
        for record_copies in &mut copies[from..to] {
            record_copies.push(at);
            at += 1;
        }
    }
    assert_eq!(read_all(client, &replica).await.len() as i64, at);
    Flow {
        source,
        replica,
        syncs: syncs.to_vec(),
        copies,
        replica_end: at,
    }
}

/// The syncs as MM2 encodes them, decoded again: what the offset-syncs topic would hand
/// matching (the encoding is checked here so the flow's history is a real one).
fn history(flow: &Flow) -> Vec<(i64, i64)> {
    flow.syncs
        .iter()
        .map(|&(u, d)| {
            let (key, value) = sync_record(&flow.source, u, d);
            assert!(key.is_some_and(|key| !key.is_empty()));
            let decoded = mm2_offsets::mm2::offset_sync::decode_value(&value.unwrap()).unwrap();
            (decoded.upstream_offset, decoded.downstream_offset)
        })
        .collect()
}

/// Matches every upstream offset of `flow` and checks each against the truth.
async fn every_offset_exact(client: &KafkaClient, broker: &str, flow: &Flow) -> usize {
    let history = history(flow);
    let rows: Vec<MatchRow<'_>> = (0..=60)
        .map(|u| MatchRow::new(&flow.replica, &flow.source, 0, u))
        .collect();
    let deadline = Deadline::after(Duration::from_secs(60));
    let (answers, stats) = match_rows(
        client,
        client,
        &rows,
        |topic, partition| (topic == flow.source && partition == 0).then(|| history.clone()),
        &MatchOptions::default(),
        deadline,
    )
    .await;
    assert!(
        stats.inconsistent.is_empty() && stats.unread.is_empty(),
        "{broker}: {stats:?}"
    );
    let mut exact = 0;
    for (row, answer) in rows.iter().zip(&answers) {
        let truth = flow.truth(row.upstream);
        assert_eq!(
            answer,
            &Ok(truth),
            "{broker} {}: U = {}",
            flow.source,
            row.upstream
        );
        exact += 1;
    }
    exact
}

/// Fails back every replica offset of `flow` and checks each against the truth: the count
/// exact, and the reasons of the others (none is ever a wrong offset).
async fn every_offset_failed_back(
    client: &KafkaClient,
    broker: &str,
    flow: &Flow,
) -> (usize, Vec<String>) {
    let history = history(flow);
    let rows: Vec<ReverseRow<'_>> = (0..=flow.replica_end)
        .map(|d| ReverseRow::new(&flow.replica, &flow.source, 0, d))
        .collect();
    let deadline = Deadline::after(Duration::from_secs(60));
    let (answers, stats) = match_reverse(
        client,
        client,
        &rows,
        |topic, partition| (topic == flow.source && partition == 0).then(|| history.clone()),
        &MatchOptions::default(),
        deadline,
    )
    .await;
    assert!(stats.inconsistent.is_empty(), "{broker}: {stats:?}");
    let (mut exact, mut unmatched) = (0, Vec::new());
    for (row, answer) in rows.iter().zip(&answers) {
        match answer {
            Ok(found) => {
                assert_eq!(
                    found.offset,
                    flow.first_unread(row.downstream),
                    "{broker} {}: failback of D = {}",
                    flow.replica,
                    row.downstream
                );
                exact += 1;
            }
            Err(why) => unmatched.push(format!("D={} {why:?}", row.downstream)),
        }
    }
    (exact, unmatched)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_offset_is_matched_exactly_on_each_broker_generation() {
    let started = Instant::now();
    for broker in ["k4", "k39", "k36", "k28"] {
        let c = cluster(broker);
        let raw = Raw::connect(&c).await;
        let client = KafkaClient::connect(c.plaintext()).await.unwrap();
        let restart = lay(
            &raw,
            &client,
            "restart",
            &[(0, 40), (20, 60)],
            &[(0, 0), (30, 30), (20, 40), (50, 70)],
        )
        .await;
        let compacted = lay(
            &raw,
            &client,
            "compacted",
            &[(0, 60)],
            &[(40, 40), (50, 50)],
        )
        .await;
        let restart_exact = every_offset_exact(&client, broker, &restart).await;
        let compacted_exact = every_offset_exact(&client, broker, &compacted).await;
        let (back_restart, left_restart) =
            every_offset_failed_back(&client, broker, &restart).await;
        let (back_compacted, left_compacted) =
            every_offset_failed_back(&client, broker, &compacted).await;
        eprintln!(
            "match_versions {broker}: forward: restart flow {restart_exact}/61 exact, compacted history {compacted_exact}/61 exact; \
             failback: restart flow {back_restart}/81 exact ({} no-sync), compacted history {back_compacted}/61 exact ({} no-sync)",
            left_restart.len(),
            left_compacted.len()
        );
        // A group at 0 has read nothing and no sync lies strictly below it: the rule's
        // `no-sync`. Every other position of the restart flow is proven.
        assert_eq!(left_restart, ["D=0 NoSync"], "{broker}");
        // Failback below the oldest kept sync (40) too: the replica read from its log start
        // (it still starts at 0) and the source from its own, every position exact but 0.
        assert_eq!(left_compacted, ["D=0 NoSync"], "{broker}");
        assert_eq!(back_compacted, 60, "{broker}");
        if broker == "k4" {
            failback_below_the_oldest_sync_by_the_cli(&raw, &compacted).await;
        }
    }
    eprintln!(
        "match_versions suite: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// `failback --match-records` of a group below the oldest kept sync of the compacted flow: the
/// syncs written to the primary's offset-syncs topic as MM2 writes them, the group committed on
/// the replica at 20 (on the same cluster: the replica's name says its source). Without
/// matching the offset is untranslated (`no-sync`: no sync at or below 20); with it, a row at
/// the group's first unread record (20), rule `record-match`, and the matching count from it.
async fn failback_below_the_oldest_sync_by_the_cli(raw: &Raw, flow: &Flow) {
    let target = unique_topic("mvb");
    let syncs_topic = format!("mm2-offset-syncs.{target}.internal");
    raw.create_topic(&syncs_topic, 1).await;
    let records: Records = flow
        .syncs
        .iter()
        .map(|&(u, d)| sync_record(&flow.source, u, d))
        .collect();
    raw.produce(&syncs_topic, 0, &records).await;
    let group = unique_topic("mv-fb");
    raw.commit(&group, &flow.replica, 0, 20).await;
    let bootstrap = cluster("k4").var("PLAINTEXT").to_string();
    let run = |matching: bool| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mm2-offsets"));
        cmd.args(["failback", "--bootstrap-server", &bootstrap])
            .args(["--from-bootstrap-server", &bootstrap])
            .args(["--source", "src", "--target", &target, "--group", &group])
            .args(["-o", "json", "--no-progress"]);
        if matching {
            cmd.arg("--match-records");
        }
        let out = cmd.output().expect("run mm2-offsets failback");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), stdout, stderr)
    };
    let (code, stdout, stderr) = run(false);
    let doc: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("failback JSON ({e}): {stdout}\n{stderr}"));
    eprintln!("match_versions failback CLI, without matching: exit {code:?}, {doc}");
    let untranslated = doc["untranslated"].as_array().cloned().unwrap_or_default();
    assert!(
        untranslated
            .iter()
            .any(|u| u["reason"] == "no-sync" && u["from_offset"] == 20),
        "{doc}\n{stderr}"
    );
    let (code, stdout, stderr) = run(true);
    let doc: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("failback JSON ({e}): {stdout}\n{stderr}"));
    eprintln!("match_versions failback CLI, --match-records: exit {code:?}, {doc}");
    assert_eq!(code, Some(0), "{stderr}");
    let planned = doc["plan"]["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["group"] == group.as_str()))
        .unwrap_or_else(|| panic!("{group} not planned: {doc}"));
    let partition = &planned["partitions"][0];
    assert_eq!(
        (
            partition["offset"].as_i64(),
            partition["rule"].as_str(),
            partition["from_offset"].as_i64()
        ),
        (Some(flow.first_unread(20)), Some("record-match"), Some(20)),
        "{doc}"
    );
    assert_eq!(doc["untranslated"], serde_json::json!([]), "{doc}");
    assert_eq!(doc["matching"]["rows"]["matched"], 1, "{doc}");
}
