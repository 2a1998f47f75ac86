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

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::support::mm2::{Flow, flows, read_log};
use mm2_offsets::client::KafkaClient;
use mm2_offsets::config::ClientConfig;
use mm2_offsets::mm2::sync_index::{Interpolation, Rule};
use mm2_offsets::precise::SyncsSource;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::TranslateRequest;

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
    let (records, _, gaps) = read_log(client, topic, partition).await;
    let prints = records
        .into_iter()
        .map(|r| (r.offset, (r.key, r.value, r.timestamp)))
        .collect();
    (prints, gaps)
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
    // MM2's own checkpoints are reproduced by the history they were computed from (issue 20):
    // a real flow's topic is accepted, nearly every checkpoint reproduced.
    let checked = &precise.provenance;
    assert_eq!(
        checked.reproduced + checked.compaction_explained + checked.legacy,
        plain.len() as u64,
        "{checked:?}"
    );
    assert!(checked.reproduced > 0, "{checked:?}");
    println!("flow {name}: provenance {checked:?}");

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

/// Flow A with its source client and `--precise` translation, as the CLI tests compare them.
struct FlowA {
    f: Flow,
    primary: String,
    mirror: mm2_offsets::translate::MirrorClient,
    source: KafkaClient,
    request: TranslateRequest,
    syncs: SyncsSource,
    expected: mm2_offsets::precise::PreciseTranslation,
}

async fn flow_a() -> FlowA {
    let all = flows();
    let f = all.flow("a");
    let primary = all.var("PRIMARY").to_string();
    let mirror = f.client().await;
    let source = KafkaClient::connect(ClientConfig::plaintext([primary.clone()]))
        .await
        .unwrap_or_else(|e| panic!("source cluster {primary} unreachable ({e})"));
    let mut request = TranslateRequest::new(&f.source, GroupSelector::all());
    request.timeout = TIMEOUT;
    let syncs = SyncsSource::new(source.clone(), &f.policy(), "backup");
    let expected = mirror.translate_precise(&request, &syncs).await.unwrap();
    FlowA {
        f,
        primary,
        mirror,
        source,
        request,
        syncs,
        expected,
    }
}

/// The CLI's `translate --precise -o json`: `offset` is the precise offset, `mm2_offset` and
/// `rule` are added, and the rows equal the library's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_precise_json_rows_match_the_library() {
    let FlowA {
        f,
        primary,
        syncs,
        expected,
        ..
    } = flow_a().await;

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

/// `--from-source-offsets` on a frozen flow: the source's groups committed nothing since MM2's
/// last checkpoint, so every row reads the source's offset, equal to the checkpoint's, and the
/// precise offsets equal `--precise`'s. `-o csv` keeps the usual columns (`offset` the precise
/// one) and adds `mm2_offset,rule,input,checkpoint_upstream_offset,max_rereads`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_from_source_offsets_csv_reads_the_source_and_matches_the_library() {
    let FlowA {
        f,
        primary,
        mirror,
        source,
        request,
        syncs,
        expected,
    } = flow_a().await;
    let live = mirror
        .translate_from_source_offsets(&request, &syncs, &source)
        .await
        .unwrap();
    assert_eq!(live.precise, expected.precise);
    assert!(
        live.inputs
            .iter()
            .all(|i| i.input == mm2_offsets::precise::Input::SourceOffset)
    );
    // app-mixed also committed on "unmirrored", which MM2 does not mirror (no checkpoint and
    // no offset-sync history): counted as not mirrored, not translated. `source_only` counts
    // the partitions of mirrored topics that MM2 never checkpointed, and are translated.
    let mixed = &live.source_groups["app-mixed"];
    assert_eq!((mixed.not_mirrored, mixed.source_only), (1, 0));

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mm2-offsets"))
        .args(["translate", "--bootstrap-server", &f.target])
        .args(["--source", &f.source, "--all-groups", "-o", "csv"])
        .args(["--no-progress", "--precise", "--from-source-offsets"])
        .args(["--syncs-bootstrap-server", &primary])
        .args(["--syncs-topic", &syncs.topic])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("from the source's committed offsets"),
        "{stderr}"
    );
    let rows = crate::support::csv::parse(&String::from_utf8(output.stdout).unwrap());
    assert_eq!(
        rows[0],
        [
            "source",
            "group",
            "topic",
            "partition",
            "offset",
            "upstream_offset",
            "metadata",
            "checkpoint_timestamp",
            "mm2_offset",
            "rule",
            "input",
            "checkpoint_upstream_offset",
            "max_rereads",
            "group_type"
        ]
    );
    assert_eq!(rows.len() - 1, expected.precise.len());
    for ((row, (o, p)), bound) in rows[1..].iter().zip(expected.iter()).zip(&live.max_rereads) {
        assert_eq!(row[1], o.group);
        assert_eq!(row[4], p.offset.to_string());
        assert_eq!(row[8], p.mm2_offset.to_string());
        assert_eq!(row[9], p.rule.name());
        assert_eq!(row[10], "source-offset");
        assert_eq!(row[5], row[11]);
        // The bound on re-reads, empty when unknown, as the library computes it.
        assert_eq!(row[12], bound.map_or(String::new(), |b| b.to_string()));
    }
}

/// `apply --precise` plans the precise offsets (a dry run: nothing is written).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_apply_precise_plans_the_precise_offsets() {
    let FlowA {
        f,
        primary,
        syncs,
        expected,
        ..
    } = flow_a().await;
    let mut want: BTreeMap<(String, String, i32), i64> = BTreeMap::new();
    for (o, p) in expected.iter() {
        want.insert(
            (o.group.to_string(), o.topic.to_string(), o.partition),
            p.offset,
        );
    }

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mm2-offsets"))
        .args(["apply", "--bootstrap-server", &f.target])
        .args(["--source", &f.source, "--all-groups", "-o", "json"])
        .args(["--no-progress", "--precise"])
        .args(["--syncs-bootstrap-server", &primary])
        .args(["--syncs-topic", &syncs.topic])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "apply printed no JSON ({e}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert_eq!(doc["executed"], false);
    let mut planned = 0;
    for group in doc["plan"]["groups"].as_array().unwrap() {
        for p in group["partitions"].as_array().unwrap() {
            let key = (
                group["group"].as_str().unwrap().to_string(),
                p["topic"].as_str().unwrap().to_string(),
                p["partition"].as_i64().unwrap() as i32,
            );
            assert_eq!(p["translated"], want[&key], "{key:?}");
            planned += 1;
        }
    }
    assert_eq!(planned, want.len());
    assert!(
        want.values()
            .zip(expected.precise.iter())
            .any(|(_, p)| p.rereads_saved() > 0)
    );
}

/// Without `--syncs-topic` or `--target`, `--precise` takes the one offset-syncs topic on the
/// syncs cluster (flow B: backup is the source of backup->c only) and names it; a cluster that
/// is the source of several flows (primary: ->backup, ->d under the default policy, and ->c with
/// `_`) is an error that lists the candidates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_precise_finds_the_only_offset_syncs_topic_or_lists_them() {
    let all = flows();
    let b = all.flow("b");
    let backup = all.var("BACKUP").to_string();
    let primary = all.var("PRIMARY").to_string();
    let precise = |syncs_cluster: &str, extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_mm2-offsets"))
            .args(["translate", "--bootstrap-server", &b.target])
            .args(["--source", &b.source, "--all-groups", "-o", "json"])
            .args(["--no-progress", "--precise", "--syncs-bootstrap-server"])
            .arg(syncs_cluster)
            .args(extra)
            .output()
            .unwrap()
    };

    let found = precise(&backup, &[]);
    let stderr = String::from_utf8_lossy(&found.stderr);
    assert!(found.status.success(), "{stderr}");
    assert!(
        stderr.contains("offset-syncs topic mm2-offset-syncs.c.internal (the only one"),
        "{stderr}"
    );
    let named = precise(&backup, &["--syncs-topic", "mm2-offset-syncs.c.internal"]);
    assert!(
        named.status.success(),
        "{}",
        String::from_utf8_lossy(&named.stderr)
    );
    let rows =
        |out: &[u8]| serde_json::from_slice::<serde_json::Value>(out).unwrap()["offsets"].clone();
    assert_eq!(rows(&found.stdout), rows(&named.stdout));
    assert!(!rows(&found.stdout).as_array().unwrap().is_empty());

    let several = precise(&primary, &[]);
    let stderr = String::from_utf8_lossy(&several.stderr);
    assert_eq!(several.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("offset-syncs topics on the offset-syncs cluster (mm2-offset-syncs.backup.internal, mm2-offset-syncs.d.internal): pass --syncs-topic"),
        "{stderr}"
    );
}
