//! Precise translation on real MirrorMaker 2 output: the frozen flows of
//! `protocol-tests/harness/mm2-flows.sh` (default policy, separator `_`, Identity policy; the
//! offset-syncs topics are on the source cluster `primary`).
//!
//! For every checkpointed (group, partition) the test finds the **true position**: it reads the
//! upstream partition and its replica downstream and aligns them record by record (key, value,
//! timestamp), which is exact when MM2 copied the partition one for one — the test checks that
//! and fails otherwise. It then asserts `mm2 <= precise <= truth`, prints the per-group table and
//! the rule counts. Interpolation is enabled only for partitions the test has read gapless
//! (contiguous offsets, no control batches): the premise the caller must vouch for.
//!
//! Run `protocol-tests/harness/mm2-flows.sh up` first; without it every test fails saying so.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use mm2_offsets::client::{Deadline, KafkaClient, ReadOptions};
use mm2_offsets::config::ClientConfig;
use mm2_offsets::mm2::sync_index::{Interpolation, Rule};
use mm2_offsets::records::{Batches, Scratch};
use mm2_offsets::translate::{GroupSelector, SyncsSource, TranslateRequest};
use support::mm2::{Flow, flows};

const TIMEOUT: Duration = Duration::from_secs(30);

/// One record as the alignment compares it.
type Fingerprint = (Option<Vec<u8>>, Option<Vec<u8>>, i64);

/// Every record of `topic`-`partition` (offset, fingerprint), and whether any control batch or
/// offset gap was seen.
async fn read_partition(
    client: &KafkaClient,
    topic: &str,
    partition: i32,
) -> (Vec<(i64, Fingerprint)>, bool) {
    let deadline = Deadline::after(TIMEOUT);
    let info = client
        .describe_topic(topic, &deadline)
        .await
        .unwrap_or_else(|e| panic!("describing {topic}: {e}"));
    let ends = client
        .list_offsets(
            &info,
            &[partition],
            mm2_offsets::client::OffsetSpec::Latest,
            mm2_offsets::client::IsolationLevel::ReadUncommitted,
            &deadline,
        )
        .await
        .unwrap();
    let end = ends[&partition];
    let mut stream = client.read_range(info, partition, 0, end, ReadOptions::default(), deadline);
    let mut scratch = Scratch::new();
    let mut out = Vec::new();
    let mut gaps = false;
    let mut next = 0;
    while let Some(chunk) = stream.next_chunk().await {
        let chunk = chunk.unwrap_or_else(|e| panic!("reading {topic}-{partition}: {e}"));
        for batch in Batches::new(&chunk.records) {
            let batch = batch.unwrap();
            if batch.is_control() {
                gaps = true;
                continue;
            }
            for record in batch.records(&mut scratch).unwrap() {
                let record = record.unwrap();
                gaps |= record.offset != next;
                next = record.offset + 1;
                let print = (
                    record.key.map(<[u8]>::to_vec),
                    record.value.map(<[u8]>::to_vec),
                    record.timestamp,
                );
                out.push((record.offset, print));
            }
        }
    }
    (out, gaps || next != end)
}

/// For each upstream offset U in `0..=upstream end`, the downstream offset of the first
/// replicated record at or after U (the downstream end if none): exact for a one-for-one copy,
/// which this asserts.
fn truth(
    upstream: &[(i64, Fingerprint)],
    downstream: &[(i64, Fingerprint)],
    what: &str,
) -> Vec<i64> {
    assert_eq!(
        upstream.len(),
        downstream.len(),
        "{what}: MM2 did not copy one for one; the alignment would be a guess"
    );
    for (u, d) in upstream.iter().zip(downstream) {
        assert_eq!(
            u.1, d.1,
            "{what}: records differ at upstream {} / downstream {}",
            u.0, d.0
        );
    }
    let up_end = upstream.last().map_or(0, |r| r.0 + 1);
    let down_end = downstream.last().map_or(0, |r| r.0 + 1);
    let mut next = 0;
    (0..=up_end)
        .map(|u| {
            while next < upstream.len() && upstream[next].0 < u {
                next += 1;
            }
            downstream.get(next).map_or(down_end, |r| r.0)
        })
        .collect()
}

async fn check_flow(name: &str) {
    let started = Instant::now();
    let all = flows();
    let f: Flow = all.flow(name);
    let primary = all.var("PRIMARY").to_string();
    let mirror = f.client().await;
    let policy = f.policy();
    let source = KafkaClient::connect(ClientConfig::plaintext([primary.clone()]))
        .await
        .unwrap_or_else(|e| panic!("source cluster {primary} unreachable ({e})"));
    let target = mirror.kafka().clone();
    let target_alias = match name {
        "a" => "backup",
        "c" => "c",
        "d" => "d",
        other => panic!("flow {other} has no source-side syncs topic here"),
    };

    // The premise for interpolation, checked on the data: every checkpointed upstream partition
    // is gapless. The truth comes from the same reads.
    let mut request = TranslateRequest::new(&f.source, GroupSelector::all());
    request.timeout = TIMEOUT;
    let plain = mirror.translate(&request).await.unwrap();
    let mut truths: BTreeMap<(String, i32), Vec<i64>> = BTreeMap::new();
    let mut gapless = true;
    for o in plain.iter() {
        let key = (o.topic.to_string(), o.partition);
        if truths.contains_key(&key) {
            continue;
        }
        let upstream_topic = policy.upstream_topic(o.topic).unwrap_or(o.topic);
        let (up, up_gaps) = read_partition(&source, upstream_topic, o.partition).await;
        let (down, _) = read_partition(&target, o.topic, o.partition).await;
        gapless &= !up_gaps;
        let what = format!("{upstream_topic}-{} -> {}", o.partition, o.topic);
        truths.insert(key, truth(&up, &down, &what));
    }
    let mut syncs = SyncsSource::new(source.clone(), &policy, target_alias);
    syncs.interpolation = if gapless {
        Interpolation::GaplessUpstream
    } else {
        Interpolation::Disabled
    };
    let precise = mirror.translate_precise(&request, &syncs).await.unwrap();
    assert!(precise.syncs_report.complete);
    assert!(
        precise.synced_partitions > 0,
        "no sync history read from {}",
        syncs.topic
    );
    assert_eq!(precise.precise.len(), plain.len());

    println!(
        "flow {name}: syncs topic {} ({} records), interpolation {:?}",
        syncs.topic, precise.syncs_report.records, syncs.interpolation
    );
    println!("group\ttopic-partition\tupstream\tmm2\tprecise\ttruth\tsaved\trule");
    let (mut mm2_distance, mut precise_distance) = (0i64, 0i64);
    for (o, p) in precise.iter() {
        let truth = truths[&(o.topic.to_string(), o.partition)]
            .get(o.upstream_offset as usize)
            .copied()
            .unwrap_or_else(|| {
                panic!(
                    "{}: upstream offset {} past the upstream end",
                    o.group, o.upstream_offset
                )
            });
        println!(
            "{}\t{}-{}\t{}\t{}\t{}\t{}\t{}\t{}",
            o.group,
            o.topic,
            o.partition,
            o.upstream_offset,
            p.mm2_offset,
            p.offset,
            truth,
            p.rereads_saved(),
            p.rule.name()
        );
        assert_eq!(p.mm2_offset, o.offset);
        assert!(
            p.offset >= p.mm2_offset,
            "{} {}-{}: behind MM2",
            o.group,
            o.topic,
            o.partition
        );
        assert!(
            p.offset <= truth,
            "{} {}-{}: precise {} is past the true position {truth}",
            o.group,
            o.topic,
            o.partition,
            p.offset
        );
        mm2_distance += truth - p.mm2_offset;
        precise_distance += truth - p.offset;
    }
    let rules = precise.rule_counts();
    println!(
        "flow {name}: {} offsets; rules {:?}; distance to truth: mm2 {mm2_distance}, precise {precise_distance}; saved per group {:?}; {} ms",
        precise.precise.len(),
        rules
            .iter()
            .map(|(r, n)| (r.name(), *n))
            .collect::<Vec<_>>(),
        precise.rereads_saved_by_group(),
        started.elapsed().as_millis()
    );
    assert!(precise_distance <= mm2_distance);

    // The default, without interpolation: the syncs alone, also never past the truth.
    syncs.interpolation = Interpolation::Disabled;
    let syncs_only = mirror.translate_precise(&request, &syncs).await.unwrap();
    let mut syncs_only_distance = 0;
    for (o, p) in syncs_only.iter() {
        let truth = truths[&(o.topic.to_string(), o.partition)][o.upstream_offset as usize];
        assert!(
            p.mm2_offset <= p.offset && p.offset <= truth,
            "{} {}-{}",
            o.group,
            o.topic,
            o.partition
        );
        syncs_only_distance += truth - p.offset;
    }
    println!(
        "flow {name}: without interpolation: rules {:?}; distance to truth {syncs_only_distance}",
        syncs_only
            .rule_counts()
            .iter()
            .map(|(r, n)| (r.name(), *n))
            .collect::<Vec<_>>()
    );
    assert!(syncs_only_distance <= mm2_distance);
    if gapless {
        assert!(rules.get(&Rule::Interpolated).copied().unwrap_or(0) > 0 || precise_distance == 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_a_precise_is_between_mm2_and_the_truth() {
    check_flow("a").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_c_separator_precise_is_between_mm2_and_the_truth() {
    check_flow("c").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_d_identity_precise_is_between_mm2_and_the_truth() {
    check_flow("d").await;
}

/// The CLI's `translate --precise -o json`: `offset` is the precise offset, `mm2_offset` and
/// `rule` are added, and the rows equal the library's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_precise_json_rows_match_the_library() {
    let all = flows();
    let f = all.flow("a");
    let primary = all.var("PRIMARY").to_string();
    let mirror = f.client().await;
    let source = KafkaClient::connect(ClientConfig::plaintext([primary.clone()]))
        .await
        .unwrap_or_else(|e| panic!("source cluster {primary} unreachable ({e})"));
    let mut request = TranslateRequest::new(&f.source, GroupSelector::all());
    request.timeout = TIMEOUT;
    let syncs = SyncsSource::new(source, &f.policy(), "backup");
    let expected = mirror.translate_precise(&request, &syncs).await.unwrap();

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mm2-offsets"))
        .args([
            "translate",
            "--bootstrap-server",
            &f.target,
            "--source",
            &f.source,
        ])
        .args(["--all-groups", "-o", "json", "--no-progress", "--precise"])
        .args([
            "--syncs-bootstrap-server",
            &primary,
            "--syncs-topic",
            &syncs.topic,
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["complete"], true);
    let rows = doc["offsets"].as_array().unwrap();
    assert_eq!(rows.len(), expected.precise.len());
    for (row, (o, p)) in rows.iter().zip(expected.iter()) {
        assert_eq!(row["group"], o.group);
        assert_eq!(row["offset"], p.offset);
        assert_eq!(row["mm2_offset"], p.mm2_offset);
        assert_eq!(row["rule"], p.rule.name());
    }
    assert!(rows.iter().any(|r| r["offset"] != r["mm2_offset"]));
}
