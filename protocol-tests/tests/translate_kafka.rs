//! Offset translation against real brokers: checkpoint topics written by the Java producer (mixed
//! codecs in one partition, several partitions, tombstones, garbage, 10,000 groups, committed and
//! aborted transactions), translated by mm2-offsets and compared with a straightforward
//! implementation over what the Java consumer reads from the same topic.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use crate::support::{SeenRecord, cluster, hex_or_dash, java_consume, unique_topic, write_raw};
use mm2_offsets::client::IsolationLevel;
use mm2_offsets::config::ClientConfig;
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::mm2::fold::SkipReason;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, TranslateError, TranslateRequest, Translation};

const CHECKPOINT_PARTITIONS: u32 = 3;

// ---------------------------------------------------------------------------------------------
// An independent encoder and decoder of MM2 checkpoints, written from the format description
// (int16-length strings, big-endian), sharing no code with the library.

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as i16).to_be_bytes());
    out.extend_from_slice(s);
}

fn key_bytes(group: &[u8], topic: &str, partition: i32) -> Vec<u8> {
    let mut k = Vec::new();
    put_str(&mut k, group);
    put_str(&mut k, topic.as_bytes());
    k.extend_from_slice(&partition.to_be_bytes());
    k
}

fn value_bytes(version: i16, upstream: i64, downstream: i64, metadata: &str) -> Vec<u8> {
    let mut v = version.to_be_bytes().to_vec();
    v.extend_from_slice(&upstream.to_be_bytes());
    v.extend_from_slice(&downstream.to_be_bytes());
    put_str(&mut v, metadata.as_bytes());
    v
}

fn take_str<'a>(b: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let len = i16::from_be_bytes(b.get(*pos..*pos + 2)?.try_into().ok()?);
    *pos += 2;
    let len = usize::try_from(len).ok()?;
    let s = b.get(*pos..*pos + len)?;
    *pos += len;
    Some(s)
}

fn take_i64(b: &[u8], pos: &mut usize) -> Option<i64> {
    let v = i64::from_be_bytes(b.get(*pos..*pos + 8)?.try_into().ok()?);
    *pos += 8;
    Some(v)
}

type Expected = BTreeMap<(String, String, i32), (i64, String, i64)>;

/// Java's documented semantics, done the plain way: in log order per partition, the last
/// checkpoint wins, a tombstone deletes, undecodable or negative records are skipped.
fn oracle(records: &[SeenRecord], selected: impl Fn(&str) -> bool) -> Expected {
    let mut out = Expected::new();
    for r in records {
        let Some(key) = &r.key else { continue };
        let mut pos = 0;
        let (Some(group), Some(topic)) = (take_str(key, &mut pos), take_str(key, &mut pos)) else {
            continue;
        };
        let Some(partition) = key.get(pos..pos + 4) else {
            continue;
        };
        let partition = i32::from_be_bytes(partition.try_into().unwrap());
        // Selected by Java's lenient decoding (or by the row's name); the rows name an id that
        // is not UTF-8 with each invalid byte as `\xNN`, so that two byte strings stay apart.
        let lenient = String::from_utf8_lossy(group).into_owned();
        let named: String = match std::str::from_utf8(group) {
            Ok(valid) => valid.to_string(),
            Err(_) => group
                .utf8_chunks()
                .map(|chunk| {
                    let bad: String = chunk
                        .invalid()
                        .iter()
                        .map(|b| format!("\\x{b:02x}"))
                        .collect();
                    format!("{}{bad}", chunk.valid())
                })
                .collect(),
        };
        if !selected(&lenient) && !selected(&named) {
            continue;
        }
        let group = named;
        let id = (
            group,
            String::from_utf8_lossy(topic).into_owned(),
            partition,
        );
        let Some(value) = &r.value else {
            out.remove(&id);
            continue;
        };
        let mut pos = 2; // version, decoded as v0 whatever it says
        let (Some(upstream), Some(downstream)) =
            (take_i64(value, &mut pos), take_i64(value, &mut pos))
        else {
            continue;
        };
        let Some(metadata) = take_str(value, &mut pos) else {
            continue;
        };
        if downstream < 0 {
            continue;
        }
        out.insert(
            id,
            (
                downstream,
                String::from_utf8_lossy(metadata).into_owned(),
                upstream,
            ),
        );
    }
    out
}

fn ours(translation: &Translation) -> Expected {
    translation
        .iter()
        .map(|o| {
            (
                (o.group.to_string(), o.topic.to_string(), o.partition),
                (o.offset, o.metadata.to_string(), o.upstream_offset),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The fixture: one checkpoints topic per cluster, written once per test binary.

struct Fixture {
    source: String,
    records: Vec<SeenRecord>,
    tombstones: u64,
}

fn partition_for(key: &[u8]) -> u32 {
    key.iter().map(|&b| u32::from(b)).sum::<u32>() % CHECKPOINT_PARTITIONS
}

fn line(key: Option<&[u8]>, value: Option<&[u8]>) -> String {
    let p = key.map_or(0, partition_for);
    format!("{p} {} {}", hex_or_dash(key), hex_or_dash(value))
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    (text != "-").then(|| {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    })
}

/// Writes `lines` with the Java producer and returns the records as the broker acknowledged them
/// (partition and offset from each send's metadata): the ground truth, independent of any reader.
fn write_and_record(
    c: &crate::support::Cluster,
    topic: &str,
    partitions: u32,
    codec: &str,
    lines: &[String],
    extra: &[&str],
) -> Vec<SeenRecord> {
    let summary = write_raw(c, topic, partitions, codec, lines, extra);
    acked(&summary, lines)
        .into_iter()
        .map(|(record, _)| record)
        .collect()
}

/// The records of a `raw` write as the broker acknowledged them, each with the number of the
/// transaction it was sent in (`None` outside one).
fn acked(summary: &serde_json::Value, lines: &[String]) -> Vec<(SeenRecord, Option<u64>)> {
    let acks = summary["offsets"]
        .as_array()
        .expect("raw prints each line's offset");
    assert_eq!(acks.len(), lines.len());
    acks.iter()
        .map(|ack| {
            let n = ack["line"].as_u64().unwrap() as usize - 1;
            let fields: Vec<&str> = lines[n].split(' ').collect();
            let record = SeenRecord {
                partition: ack["partition"].as_i64().unwrap() as i32,
                offset: ack["offset"].as_i64().unwrap(),
                key: unhex(fields[1]),
                value: unhex(fields[2]),
            };
            (record, ack["txn"].as_u64())
        })
        .collect()
}

fn build_fixture(name: &str) -> Fixture {
    let c = cluster(name);
    let source = unique_topic("src");
    let topic = format!("{source}.checkpoints.internal");
    let topics = [("primary.orders", 4), ("primary.payments", 2)];
    let mut groups: Vec<Vec<u8>> = (0..120).map(|i| format!("app-{i}").into_bytes()).collect();
    groups.push(b"meta-group".to_vec());
    groups.push(b"bad\xffgroup".to_vec());
    let mut tombstones = 0;
    let mut written = Vec::new();
    let codecs = ["gzip", "snappy", "zstd"];
    for (round, codec) in codecs.iter().enumerate() {
        let round = round as i64;
        let mut lines = Vec::new();
        for (g, group) in groups.iter().enumerate() {
            for (topic_name, partitions) in topics {
                for p in 0..partitions {
                    let key = key_bytes(group, topic_name, p);
                    let g = g as i64;
                    // Deletions: tombstoned in round 1 and never rewritten, or rewritten in 2.
                    if round == 1 && topic_name == "primary.payments" && p == 1 && g % 10 < 2 {
                        lines.push(line(Some(&key), None));
                        tombstones += 1;
                        continue;
                    }
                    if round == 2 && topic_name == "primary.payments" && p == 1 && g % 10 == 0 {
                        continue;
                    }
                    let metadata = if group == b"meta-group" {
                        "commit, \"meta\" \u{e9}"
                    } else {
                        ""
                    };
                    // Round 2 moves some groups BACK: the last record wins regardless.
                    let downstream = if round == 2 && g % 7 == 3 {
                        5 + g
                    } else {
                        round * 900 + g * 3 + i64::from(p)
                    };
                    let version = if round == 2 && g == 11 { 1 } else { 0 };
                    let value = value_bytes(version, round * 1000 + g, downstream, metadata);
                    lines.push(line(Some(&key), Some(&value)));
                }
            }
        }
        let extra: &[&str] = if round == 0 { &[] } else { &["--no-create"] };
        written.extend(write_and_record(
            &c,
            &topic,
            CHECKPOINT_PARTITIONS,
            codec,
            &lines,
            extra,
        ));
    }
    // Garbage, uncompressed and lz4, after the rounds.
    let app3 = key_bytes(b"app-3", "primary.orders", 0);
    let garbage = vec![
        line(None, Some(&value_bytes(0, 1, 2, ""))),
        format!(
            "0 0005616263 {}",
            hex_or_dash(Some(&value_bytes(0, 1, 2, "")))
        ),
        line(
            Some(&key_bytes(b"app-4", "primary.orders", 1)),
            Some(b"\x00\x00\x01"),
        ),
        line(Some(&app3), Some(&value_bytes(0, 7, -5, ""))),
    ];
    written.extend(write_and_record(
        &c,
        &topic,
        CHECKPOINT_PARTITIONS,
        "lz4",
        &garbage,
        &["--no-create"],
    ));
    written.extend(write_and_record(
        &c,
        &topic,
        CHECKPOINT_PARTITIONS,
        "none",
        &garbage[..1],
        &["--no-create"],
    ));
    written.sort();
    // The Java consumer must read the same records back, except on Tansu, whose ListOffsets
    // LATEST (last batch's base offset + 1) makes a consumer that stops at the end offsets miss
    // the rest of each partition's last batch. Our reader takes whole batches, so it sees them.
    if !c.is_tansu() {
        assert_eq!(java_consume(&c, &topic, "read_uncommitted"), written);
    }
    let records = written;
    Fixture {
        source,
        records,
        tombstones,
    }
}

fn fixture(name: &str) -> &'static Fixture {
    static K4: OnceLock<Fixture> = OnceLock::new();
    static TANSU: OnceLock<Fixture> = OnceLock::new();
    static K36: OnceLock<Fixture> = OnceLock::new();
    static K28: OnceLock<Fixture> = OnceLock::new();
    match name {
        "k4" => K4.get_or_init(|| build_fixture("k4")),
        "tansu" => TANSU.get_or_init(|| build_fixture("tansu")),
        "k36" => K36.get_or_init(|| build_fixture("k36")),
        "k28" => K28.get_or_init(|| build_fixture("k28")),
        other => panic!("no fixture for {other}"),
    }
}

async fn mirror_client(config: ClientConfig) -> MirrorClient {
    MirrorClient::connect(config, ReplicationPolicy::default())
        .await
        .expect("connect")
}

async fn translate(name: &str, request: TranslateRequest) -> Result<Translation, TranslateError> {
    let client = mirror_client(cluster(name).plaintext()).await;
    client.translate(&request).await
}

async fn all_groups_match_the_oracle(name: &str) {
    let f = fixture(name);
    let mut request = TranslateRequest::new(f.source.clone(), GroupSelector::all());
    request.timeout = Duration::from_secs(60);
    let t = translate(name, request).await.unwrap();
    assert!(t.report.complete);
    let expected = oracle(&f.records, |_| true);
    assert_eq!(ours(&t), expected);
    // 122 groups x 6 partitions, less the 13 keys tombstoned and never rewritten (g % 10 == 0).
    assert_eq!(expected.len(), 122 * 6 - 13);
    assert!(expected.contains_key(&("bad\\xffgroup".into(), "primary.orders".into(), 0)));
    let skipped = &t.report.skipped;
    assert_eq!(skipped.count(SkipReason::Tombstone), f.tombstones);
    assert_eq!(skipped.count(SkipReason::NullKey), 2);
    assert_eq!(skipped.count(SkipReason::UndecodableKey), 1);
    assert_eq!(skipped.count(SkipReason::UndecodableValue), 1);
    assert_eq!(skipped.count(SkipReason::NegativeDownstreamOffset), 1);
    assert_eq!(skipped.count(SkipReason::NonZeroVersion), 6);
    assert_eq!(t.report.records as usize, f.records.len());
    assert_eq!(t.report.partitions.len(), CHECKPOINT_PARTITIONS as usize);
}

#[tokio::test]
async fn kafka4_all_groups_match_the_oracle() {
    all_groups_match_the_oracle("k4").await;
}

#[tokio::test]
async fn tansu_all_groups_match_the_oracle() {
    all_groups_match_the_oracle("tansu").await;
}

/// Kafka 3.6.2, KRaft with a static `controller.quorum.voters`: the oldest 3.x line the harness
/// starts, and the floor of the brokers MirrorMaker 2 deployments still run on KRaft.
#[tokio::test]
async fn kafka36_all_groups_match_the_oracle() {
    all_groups_match_the_oracle("k36").await;
}

/// Kafka 2.8.2 with ZooKeeper: the supported floor (see README, "Brokers tested").
#[tokio::test]
async fn kafka28_all_groups_match_the_oracle() {
    all_groups_match_the_oracle("k28").await;
}

/// The command line as a user runs it against the old brokers: complete JSON, equal to the oracle.
#[tokio::test]
async fn cli_translates_on_old_brokers() {
    for name in ["k36", "k28"] {
        let f = fixture(name);
        let bootstrap = cluster(name).var("PLAINTEXT").to_string();
        let doc = cli_json(&[
            "translate",
            "--bootstrap-server",
            &bootstrap,
            "--source",
            &f.source,
            "--all-groups",
            "-o",
            "json",
        ]);
        assert_eq!(json_offsets(&doc), oracle(&f.records, |_| true), "{name}");
    }
}

#[tokio::test]
async fn exact_ids_and_full_match_regexes_select_like_java() {
    let f = fixture("k4");
    let selector = GroupSelector::new(["app-1", "meta-group", "nope"], ["app-1[0-9]"]).unwrap();
    let t = translate(
        "k4",
        TranslateRequest::new(f.source.clone(), selector.clone()),
    )
    .await
    .unwrap();
    let expected = oracle(&f.records, |g| selector.matches(g));
    assert_eq!(ours(&t), expected);
    let groups = t.groups();
    assert!(groups.contains(&"app-15") && groups.contains(&"meta-group"));
    // Full match: "app-1[0-9]" must not select app-100..app-119.
    assert!(!groups.contains(&"app-100"), "{groups:?}");
    let meta = t.group("meta-group").next().unwrap();
    assert_eq!(meta.metadata, "commit, \"meta\" \u{e9}");
}

#[tokio::test]
async fn ranges_split_across_workers_merge_in_log_order() {
    let f = fixture("k4");
    let mut request = TranslateRequest::new(f.source.clone(), GroupSelector::all());
    request.parallelism = 9;
    // Force several ranges per partition so range boundaries and the merge are exercised.
    request.min_split_offsets = 50;
    request.max_bytes_per_fetch = 1024;
    let t = translate("k4", request).await.unwrap();
    assert!(t.report.complete);
    assert_eq!(ours(&t), oracle(&f.records, |_| true));
}

#[tokio::test]
async fn ten_thousand_groups_in_one_read() {
    let c = cluster("k4");
    let source = unique_topic("many");
    let topic = format!("{source}.checkpoints.internal");
    let lines: Vec<String> = (0..10_000)
        .flat_map(|g| {
            (0..2).map(move |p| {
                let key = key_bytes(format!("group-{g:05}").as_bytes(), "primary.events", p);
                line(
                    Some(&key),
                    Some(&value_bytes(0, g * 10, g * 10 + i64::from(p), "")),
                )
            })
        })
        .collect();
    let mut records = write_and_record(&c, &topic, CHECKPOINT_PARTITIONS, "lz4", &lines, &[]);
    records.sort();
    let t = translate("k4", TranslateRequest::new(source, GroupSelector::all()))
        .await
        .unwrap();
    assert_eq!(t.groups().len(), 10_000);
    assert_eq!(ours(&t), oracle(&records, |_| true));
}

#[tokio::test]
async fn a_missing_checkpoints_topic_is_named_and_never_created() {
    let f = fixture("k4");
    let client = mirror_client(cluster("k4").plaintext()).await;
    let missing = unique_topic("nosuchsource");
    let error = client
        .translate(&TranslateRequest::new(
            missing.clone(),
            GroupSelector::all(),
        ))
        .await
        .expect_err("no such topic");
    let text = error.to_string();
    assert!(
        matches!(error, TranslateError::MissingCheckpointsTopic { .. }),
        "{text}"
    );
    assert!(
        text.contains(&format!("{missing}.checkpoints.internal")),
        "{text}"
    );
    // The existing checkpoints topics are listed to help the user.
    assert!(
        text.contains(&format!("{}.checkpoints.internal", f.source)),
        "{text}"
    );
    let deadline = mm2_offsets::client::Deadline::after(Duration::from_secs(10));
    let topics = client.list_topics(&deadline).await.unwrap();
    assert!(
        !topics.iter().any(|t| t.starts_with(&missing)),
        "it was auto-created"
    );
}

#[tokio::test]
async fn a_deadline_fails_the_read_or_marks_it_incomplete() {
    let c = cluster("k4");
    let source = unique_topic("slow");
    let topic = format!("{source}.checkpoints.internal");
    let lines: Vec<String> = (0..6000)
        .map(|g| {
            let key = key_bytes(format!("g{g}").as_bytes(), "primary.t", 0);
            format!(
                "0 {} {}",
                hex_or_dash(Some(&key)),
                hex_or_dash(Some(&value_bytes(0, 1, 2, "")))
            )
        })
        .collect();
    // Tiny producer batches: thousands of Fetch round trips to read it all. Writing 6,000
    // one-record batches takes ~20 s on a loaded 2-core machine, close to the writer's default
    // 30 s budget, so this write gets more.
    write_raw(
        &c,
        &topic,
        1,
        "none",
        &lines,
        &[
            "--batch-size",
            "64",
            "--linger-ms",
            "0",
            "--timeout-ms",
            "120000",
        ],
    );
    let mut request = TranslateRequest::new(source, GroupSelector::all());
    request.parallelism = 1;
    request.max_bytes_per_fetch = 64;
    request.timeout = Duration::from_millis(700);
    let error = translate("k4", request.clone())
        .await
        .expect_err("too slow on purpose");
    let text = error.to_string();
    assert!(matches!(error, TranslateError::Incomplete { .. }), "{text}");
    assert!(text.contains("read to offset"), "{text}");
    // The library names what was not read; the command line adds which flags help.
    assert!(!text.contains("--"), "{text}");

    request.allow_partial = true;
    let partial = translate("k4", request).await.unwrap();
    assert!(!partial.report.complete);
    let p = &partial.report.partitions[0];
    assert!(p.read_to < p.end, "{p:?}");
    assert!(partial.len() < 6000);
}

// ---------------------------------------------------------------------------------------------
// Checkpoints written in transactions. MirrorMaker 2 on a Connect cluster with exactly-once source
// support (`exactly.once.source.support=enabled`) writes its checkpoint records in transactions,
// and a task that fails or is fenced leaves aborted ones behind; plain writes of the same keys
// (another MirrorMaker 2, or the same one before the switch) may land between them, even inside
// an open transaction.

/// Lines for `datawriter.sh raw` and the `--plan` that sends them.
#[derive(Default)]
struct TxnPlan {
    lines: Vec<String>,
    steps: Vec<String>,
}

impl TxnPlan {
    /// One plan step (`plain` or `txn`) writing `keys` of primary.orders, with downstream offset
    /// 1000 x `round` + partition (so every record of a key is told apart), or tombstones.
    fn send(&mut self, kind: &str, round: i64, keys: &[(&str, i32)], tombstone: bool) {
        for &(group, p) in keys {
            let key = key_bytes(group.as_bytes(), "primary.orders", p);
            let value =
                (!tombstone).then(|| value_bytes(0, round, 1000 * round + i64::from(p), ""));
            self.lines.push(line(Some(&key), value.as_deref()));
        }
        self.steps.push(format!("{kind}:{}", keys.len()));
    }

    /// Ends the open transaction: `commit` or `abort`.
    fn end(&mut self, outcome: &str) {
        self.steps.push(outcome.to_string());
    }
}

/// Partitions 0, 1 and 2 of `group`.
fn three(group: &str) -> Vec<(&str, i32)> {
    (0..3).map(|p| (group, p)).collect()
}

#[tokio::test]
async fn transactional_checkpoints_read_like_the_java_consumer_at_each_isolation() {
    let c = cluster("k4");
    let source = unique_topic("txn");
    let topic = format!("{source}.checkpoints.internal");
    let groups: Vec<String> = (0..8).map(|g| format!("txn-g{g}")).collect();
    let g = |i: usize| groups[i].as_str();
    let mut plan = TxnPlan::default();
    // 1. Every key, plain.
    let every: Vec<(&str, i32)> = groups.iter().flat_map(|name| three(name)).collect();
    plan.send("plain", 1, &every, false);
    // 2. A committed transaction with plain records inside it (g1 in both: the plain one is later).
    plan.send("txn", 2, &[three(g(0)), three(g(1))].concat(), false);
    plan.send("plain", 3, &[three(g(1)), three(g(2))].concat(), false);
    plan.send("txn", 4, &three(g(3)), false);
    plan.end("commit");
    // 3. An aborted transaction: new offsets for g4 and g6, a tombstone for g5/0, and plain records
    //    inside it, g4/1 among them, which the transaction then overwrites again.
    plan.send("txn", 5, &[three(g(4)), three(g(6))].concat(), false);
    plan.send("txn", 5, &[(g(5), 0)], true);
    plan.send("plain", 6, &[three(g(7)), vec![(g(4), 1)]].concat(), false);
    plan.send("txn", 7, &[(g(4), 1)], false);
    plan.end("abort");
    // 4. After the abort, a plain record for one of its keys.
    plan.send("plain", 8, &[(g(6), 1)], false);
    // 5. A committed tombstone and a group seen only in a committed transaction.
    plan.send("txn", 9, &[(g(2), 2)], true);
    plan.send("txn", 9, &three("txn-committed-only"), false);
    plan.end("commit");
    // 6. An aborted transaction: a group seen only there, and g0 again.
    plan.send(
        "txn",
        10,
        &[three("txn-aborted-only"), three(g(0))].concat(),
        false,
    );
    plan.end("abort");
    // 7. One last plain record, so the log does not end with a transaction marker.
    plan.send("plain", 11, &[(g(3), 0)], false);

    let steps = plan.steps.join(",");
    let txn_id = unique_topic("txn-id");
    let summary = write_raw(
        &c,
        &topic,
        CHECKPOINT_PARTITIONS,
        "zstd",
        &plan.lines,
        &["--plan", &steps, "--transactional-id", &txn_id],
    );
    let aborted: Vec<u64> = summary["transactions"]
        .as_array()
        .expect("raw --plan prints its transactions")
        .iter()
        .filter(|t| t["outcome"] == "abort")
        .map(|t| t["txn"].as_u64().unwrap())
        .collect();
    assert_eq!(aborted.len(), 2, "{summary}");
    let mut written = acked(&summary, &plan.lines);
    written.sort();
    let all_records: Vec<SeenRecord> = written.iter().map(|(r, _)| r.clone()).collect();
    let committed_records: Vec<SeenRecord> = written
        .iter()
        .filter(|(_, txn)| !txn.is_some_and(|t| aborted.contains(&t)))
        .map(|(r, _)| r.clone())
        .collect();

    let client = mirror_client(c.plaintext()).await;
    let mut answers = Vec::new();
    for (isolation, level, acked_visible) in [
        (
            "read_uncommitted",
            IsolationLevel::ReadUncommitted,
            &all_records,
        ),
        (
            "read_committed",
            IsolationLevel::ReadCommitted,
            &committed_records,
        ),
    ] {
        // The Java consumer sees exactly the records the plan makes visible at this level.
        let java = java_consume(&c, &topic, isolation);
        assert_eq!(&java, acked_visible, "{isolation}");
        let expected = oracle(&java, |_| true);
        let mut request = TranslateRequest::new(source.clone(), GroupSelector::all());
        request.isolation = level;
        request.timeout = Duration::from_secs(60);
        let t = client.translate(&request).await.unwrap();
        assert!(t.report.complete, "{isolation}");
        assert_eq!(ours(&t), expected, "{isolation}");
        answers.push(expected);
    }
    let (uncommitted, committed) = (&answers[0], &answers[1]);

    // The two answers differ exactly on the keys whose last record in the log is an aborted one.
    let mut last: BTreeMap<Vec<u8>, bool> = BTreeMap::new();
    for (r, txn) in &written {
        let in_aborted = txn.is_some_and(|t| aborted.contains(&t));
        last.insert(r.key.clone().unwrap(), in_aborted);
    }
    let differ_expected: Vec<Vec<u8>> = last
        .into_iter()
        .filter_map(|(key, in_aborted)| in_aborted.then_some(key))
        .collect();
    let mut differ: Vec<Vec<u8>> = uncommitted
        .keys()
        .chain(committed.keys())
        .filter(|k| uncommitted.get(*k) != committed.get(*k))
        .map(|(g, t, p)| key_bytes(g.as_bytes(), t, *p))
        .collect();
    differ.sort();
    differ.dedup();
    assert_eq!(differ, differ_expected);
    // Spot checks of what that means.
    let id = |g: &str, p: i32| (g.to_string(), "primary.orders".to_string(), p);
    // An aborted tombstone deletes only for read_uncommitted.
    assert!(!uncommitted.contains_key(&id(g(5), 0)));
    assert_eq!(committed[&id(g(5), 0)].0, 1000);
    // A group checkpointed only in an aborted transaction exists only for read_uncommitted.
    assert!(uncommitted.contains_key(&id("txn-aborted-only", 0)));
    assert!(!committed.keys().any(|(g, _, _)| g == "txn-aborted-only"));
    // A plain record inside an aborted transaction stays visible to read_committed, and the
    // transaction's later record of the same key wins for read_uncommitted.
    assert_eq!(committed[&id(g(4), 1)].0, 6001);
    assert_eq!(uncommitted[&id(g(4), 1)].0, 7001);
    // A committed tombstone deletes for both; a plain record after an abort wins for both.
    assert!(!uncommitted.contains_key(&id(g(2), 2)) && !committed.contains_key(&id(g(2), 2)));
    assert_eq!(committed[&id(g(6), 1)], uncommitted[&id(g(6), 1)]);

    // The command line passes the isolation level on.
    let bootstrap = c.var("PLAINTEXT").to_string();
    let doc = cli_json(&[
        "translate",
        "--bootstrap-server",
        &bootstrap,
        "--source",
        &source,
        "--all-groups",
        "--isolation",
        "read_committed",
        "-o",
        "json",
    ]);
    assert_eq!(json_offsets(&doc), *committed);
}

// ---------------------------------------------------------------------------------------------
// The command line, run as a user would.

fn cli(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_mm2-offsets"))
        .args(args)
        .output()
        .expect("run mm2-offsets")
}

/// Runs the command line, which must succeed, and parses its `-o json` document.
fn cli_json(args: &[&str]) -> serde_json::Value {
    let out = cli(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON document on stdout")
}

/// The offsets of a complete `-o json` answer, in the compared shape.
fn json_offsets(doc: &serde_json::Value) -> Expected {
    assert_eq!(doc["complete"], true, "{doc}");
    doc["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                (
                    o["group"].as_str().unwrap().to_string(),
                    o["topic"].as_str().unwrap().to_string(),
                    o["partition"].as_i64().unwrap() as i32,
                ),
                (
                    o["offset"].as_i64().unwrap(),
                    o["metadata"].as_str().unwrap().to_string(),
                    o["upstream_offset"].as_i64().unwrap(),
                ),
            )
        })
        .collect()
}

#[tokio::test]
async fn cli_outputs_agree_with_the_library() {
    let f = fixture("k4");
    let bootstrap = cluster("k4").var("PLAINTEXT").to_string();
    let base = [
        "translate",
        "--bootstrap-server",
        &bootstrap,
        "--source",
        &f.source,
        "--all-groups",
    ];
    let expected = oracle(&f.records, |_| true);

    let json = cli(&[&base[..], &["-o", "json"]].concat());
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(json_offsets(&doc), expected);

    let csv = cli(&[&base[..], &["-o", "csv"]].concat());
    assert!(csv.status.success());
    let text = String::from_utf8(csv.stdout).unwrap();
    assert_eq!(text.lines().count(), expected.len() + 1);
    assert!(
        text.contains("\"commit, \"\"meta\"\" \u{e9}\""),
        "metadata is CSV-quoted"
    );

    let table = cli(&[&base[..], &["-o", "table"]].concat());
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(text.starts_with("GROUP"), "{text}");
    assert!(String::from_utf8_lossy(&table.stderr).contains("complete"));

    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().to_str().unwrap();
    let reset = cli(&[&base[..], &["-o", "reset-csv", "--output-dir", out_dir]].concat());
    assert!(reset.status.success());
    // One file per (source, group), found through the index by its exact ids.
    let index = std::fs::read_to_string(dir.path().join("index.csv")).unwrap();
    let file = crate::support::csv::parse(&index)
        .into_iter()
        .find(|row| row[0] == f.source && row[1] == "app-7")
        .map(|row| row[2].clone())
        .unwrap_or_else(|| panic!("app-7 is not in the index: {index}"));
    let app7 = std::fs::read_to_string(dir.path().join(file)).unwrap();
    let mut want: Vec<String> = expected
        .iter()
        .filter(|((g, _, _), _)| g == "app-7")
        .map(|((_, t, p), (o, _, _))| format!("{t},{p},{o}"))
        .collect();
    want.sort();
    let mut got: Vec<String> = app7.lines().map(str::to_string).collect();
    got.sort();
    assert_eq!(got, want);
}

#[tokio::test]
async fn cli_exit_codes_say_what_happened() {
    let bootstrap = cluster("k4").var("PLAINTEXT").to_string();
    let missing = cli(&[
        "translate",
        "--bootstrap-server",
        &bootstrap,
        "--source",
        "no-such-alias-x",
        "--all-groups",
    ]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("no-such-alias-x.checkpoints.internal")
    );

    let usage = cli(&["translate", "--all-groups", "--group", "g"]);
    assert_eq!(usage.status.code(), Some(2));

    let unreachable = cli(&[
        "translate",
        "--bootstrap-server",
        "127.0.0.1:1",
        "--source",
        "x",
        "--all-groups",
        "--timeout",
        "3s",
    ]);
    assert_eq!(unreachable.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unreachable.stderr).contains("127.0.0.1:1"));
}

// ---------------------------------------------------------------------------------------------
// Group selection as a Java user means it (issue 10), end to end through the CLI.

/// A checkpoints topic whose group ids exercise Java's pattern semantics: one checkpoint each.
fn selection_fixture() -> (String, String) {
    let c = cluster("k4");
    let source = unique_topic("sel");
    let topic = format!("{source}.checkpoints.internal");
    let lines: Vec<String> = SELECTION_GROUPS
        .iter()
        .enumerate()
        .map(|(i, group)| {
            let key = key_bytes(group.as_bytes(), "primary.orders", 0);
            line(Some(&key), Some(&value_bytes(0, 10, 100 + i as i64, "")))
        })
        .collect();
    write_and_record(&c, &topic, CHECKPOINT_PARTITIONS, "none", &lines, &[]);
    (c.var("PLAINTEXT").to_string(), source)
}

const SELECTION_GROUPS: &[&str] = &[
    "app-000",
    "app-001",
    "other",
    "café",
    "cafe",
    "KELVIN-K",
    "kelvin-\u{212a}",
    "v\u{2028}v",
    "v\u{b}v",
    "app-(1)",
    "orders app",
];

/// `translate -o json` of the selection fixture, with `extra` arguments.
fn translate_selection(bootstrap: &str, source: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "translate",
        "--bootstrap-server",
        bootstrap,
        "--source",
        source,
        "-o",
        "json",
        "--no-progress",
    ];
    args.extend_from_slice(extra);
    cli(&args)
}

/// The group ids of a `-o json` answer, sorted.
fn selected(out: &std::process::Output) -> Vec<String> {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut groups: Vec<String> = doc["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["group"].as_str().unwrap().to_string())
        .collect();
    groups.sort();
    groups.dedup();
    groups
}

#[tokio::test]
async fn group_patterns_select_what_java_selects_or_are_refused() {
    let (bootstrap, source) = selection_fixture();
    let run = |extra: &[&str]| translate_selection(&bootstrap, &source, extra);
    // Pasted into ^(?:...)$ this selected every group; Java rejects it: a usage error quoting
    // the pattern as typed.
    let pasted = run(&["--group-regex", "app-000)|(.*"]);
    assert_eq!(pasted.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&pasted.stderr);
    assert!(stderr.contains("\"app-000)|(.*\""), "{stderr}");
    assert!(stderr.contains("unmatched closing ')'"), "{stderr}");
    assert!(pasted.stdout.is_empty());
    // A (?x) comment no longer swallows the anchor.
    assert_eq!(
        selected(&run(&["--group-regex", r"(?x)app-\d+ # the app groups"])),
        ["app-000", "app-001"]
    );
    // ASCII classes, ASCII-only (?i), Java's \v, \Q..\E, POSIX \p{Alnum}.
    assert_eq!(selected(&run(&["--group-regex", r"caf\w"])), ["cafe"]);
    assert_eq!(
        selected(&run(&["--group-regex", r"\p{Alpha}+"])),
        ["cafe", "other"]
    );
    assert_eq!(
        selected(&run(&["--group-regex", "(?i)kelvin-k"])),
        ["KELVIN-K"]
    );
    assert_eq!(
        selected(&run(&["--group-regex", "(?iu)kelvin-k"])),
        ["KELVIN-K", "kelvin-\u{212a}"]
    );
    assert_eq!(
        selected(&run(&["--group-regex", r"v\vv"])),
        ["v\u{b}v", "v\u{2028}v"]
    );
    assert_eq!(
        selected(&run(&["--group-regex", r"\Qapp-(1)\E"])),
        ["app-(1)"]
    );
    assert_eq!(
        selected(&run(&["--group-regex", r"\p{Alnum}+ \p{Alnum}+"])),
        ["orders app"]
    );
    // What we cannot match exactly is refused, naming the construct: exit 2.
    for (pattern, construct) in [
        ("a{2}+", "possessive quantifier"),
        ("(?>app-000)", "atomic group"),
        ("app(?=-000)", "look-around"),
        (r"\bapp", "word boundary"),
        (r"\p{IsAlphabetic}+", "Unicode or Java character property"),
    ] {
        let out = run(&["--group-regex", pattern]);
        assert_eq!(out.status.code(), Some(2), "{pattern}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("{pattern:?}")), "{stderr}");
        assert!(stderr.contains(construct), "{stderr}");
    }
}

#[tokio::test]
async fn groups_not_found_are_named_and_can_fail_the_run() {
    let (bootstrap, source) = selection_fixture();
    let base = ["--group", "app-000", "--group", "nope\u{1b}[31m"];
    let out = translate_selection(&bootstrap, &source, &base);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Named, escaped (no raw escape sequence reaches the terminal).
    assert!(stderr.contains(r#""nope\u{1b}[31m""#), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["missing_groups"], serde_json::json!(["nope\u{1b}[31m"]));
    assert_eq!(doc["offsets"].as_array().unwrap().len(), 1);

    let mut failing = base.to_vec();
    failing.push("--fail-on-missing-groups");
    let out = translate_selection(&bootstrap, &source, &failing);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--fail-on-missing-groups"));

    // A groups file written on Windows with a BOM: the first id, the CRs and the spaces inside
    // an id are read as meant.
    let dir = std::env::temp_dir().join(unique_topic("groups-file"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("groups.txt");
    std::fs::write(&file, "\u{feff}app-001\r\n# comment\r\n\r\norders app\r\n").unwrap();
    let out = translate_selection(
        &bootstrap,
        &source,
        &[
            "--groups-file",
            file.to_str().unwrap(),
            "--fail-on-missing-groups",
        ],
    );
    assert_eq!(selected(&out), ["app-001", "orders app"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The one checkpoint rule (`mm2::fold`), end to end: on the same records, `translate`'s
/// `report.skipped`, `watch`'s `/offsets` report and its `/metrics` counters agree, with a
/// selection that leaves out groups whose records are garbage or tombstones.
#[tokio::test]
async fn translate_and_watch_count_the_same_records_alike() {
    let started = std::time::Instant::now();
    let f = fixture("k4");
    let c = cluster("k4");
    let bootstrap = c.var("PLAINTEXT");
    // app-10 to app-19. Of the fixture's records: app-10's and app-11's tombstones and app-11's
    // six version-1 values count; so do the two null keys and the undecodable key (no group to
    // leave out); app-3's negative offset, app-4's bad value and the other groups' tombstones
    // are of groups left out.
    let read = [
        "--bootstrap-server",
        bootstrap,
        "--source",
        &f.source,
        "--group-regex",
        "app-1[0-9]",
    ];
    let doc = cli_json(&[&["translate"], &read[..], &["-o", "json"]].concat());
    let skipped = &doc["report"]["skipped"];
    let count = |reason: &str| skipped[reason]["count"].as_u64().unwrap_or(0);
    let expected = [
        ("null_key", 2),
        ("undecodable_key", 1),
        ("undecodable_value", 0),
        ("negative_downstream_offset", 0),
        ("tombstone", 2),
        ("non_zero_version", 6),
    ];
    for (reason, n) in expected {
        assert_eq!(count(reason), n, "{reason}: {skipped}");
    }

    let watch = crate::support::watch_process::start(&[&read[..], &["--poll", "200ms"]].concat());
    let give_up = std::time::Instant::now() + Duration::from_secs(60);
    while crate::support::http_get(&watch.address, "/readyz").0 != 200 {
        assert!(
            std::time::Instant::now() < give_up,
            "watch not ready in 60 s:\n{}",
            watch.log.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, offsets) = crate::support::http_get(&watch.address, "/offsets");
    let offsets: serde_json::Value = serde_json::from_str(&offsets).unwrap();
    // Counts and example positions alike.
    assert_eq!(offsets["report"]["skipped"], *skipped);
    assert_eq!(json_offsets(&offsets), json_offsets(&doc));
    let (_, metrics) = crate::support::http_get(&watch.address, "/metrics");
    for (reason, n) in expected {
        let series = format!(
            "mm2_checkpoint_records_skipped_total{{source=\"{}\",reason=\"{reason}\"}} ",
            f.source
        );
        let value = metrics
            .lines()
            .find_map(|l| l.strip_prefix(&series))
            .unwrap_or_else(|| panic!("no {series} in\n{metrics}"));
        assert_eq!(value.parse::<u64>().unwrap(), n, "{series}");
    }
    eprintln!(
        "[translate_kafka] translate and watch counted alike in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}
