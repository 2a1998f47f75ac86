//! `watch` with a source connection (issue 32): the `mm2_replication_*` metrics against the rows
//! of `mm2-offsets replication -o json`, on a flow laid by hand as `replication_kafka` lays it
//! (primary k4, backup k39, no MirrorMaker 2): records produced on the primary, copies of some
//! of them on the backup, the offset syncs MM2 would have sent. Then more records are produced
//! and the metrics follow; the offset-syncs topic is deleted and a failed round exports no
//! figure, the last measurement's time kept; the snapshot (`--replication-snapshot`) keeps the
//! last figure, which `translate` and `apply` show when the primary cannot be reached.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use mm2_offsets::client::KafkaClient;

use crate::replication_kafka::{copy, delivered, produce, syncs};
use crate::support::mm2_records::checkpoint_record;
use crate::support::raw::Raw;
use crate::support::watch_process::WatchProcess;
use crate::support::{cluster, http_get, unique_topic};
use crate::watch_mm2::{metric, parse_metrics};

type Samples = Vec<(String, serde_json::Value, f64)>;

fn scrape(watch: &WatchProcess) -> Samples {
    let (status, body) = http_get(&watch.address, "/metrics");
    assert_eq!(status, 200, "{body}");
    parse_metrics(&body)
}

/// Scrapes every 200 ms until `check` accepts a scrape, or fails after `limit`.
fn wait_scrape(
    watch: &WatchProcess,
    what: &str,
    limit: Duration,
    check: impl Fn(&Samples) -> bool,
) -> Samples {
    let started = Instant::now();
    loop {
        let samples = scrape(watch);
        if check(&samples) {
            return samples;
        }
        assert!(
            started.elapsed() < limit,
            "{what}: not within {limit:?}; log:\n{}",
            watch.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn series<'a>(samples: &'a Samples, name: &str) -> Vec<&'a (String, serde_json::Value, f64)> {
    samples.iter().filter(|(n, _, _)| n == name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_replication_metrics_equal_the_command_rows() {
    let (k4, k39) = (cluster("k4"), cluster("k39"));
    let (primary_raw, backup_raw) = (Raw::connect(&k4).await, Raw::connect(&k39).await);
    let primary = KafkaClient::connect(k4.plaintext()).await.unwrap();
    let alias = unique_topic("watchrep").replace('-', "");
    let syncs_topic = format!("mm2-offset-syncs.{alias}-backup.internal");
    primary_raw.create_topic(&syncs_topic, 1).await;
    let name = |case: &str| format!("{alias}-{case}");
    let replica = |case: &str| format!("{alias}.{alias}-{case}");
    // Records produced on the primary after the copy stopped, per replica (the producer's
    // figure), and the oldest of them.
    let mut produced_after: BTreeMap<String, (u64, Option<i64>)> = BTreeMap::new();

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
    produced_after.insert(replica(case), (0, None));

    // behind: 30 copied, then 7 produced.
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
    produce(&primary_raw, &name(case), 0, "after", 7).await;
    let all = delivered(&primary, &name(case), 0).await;
    produced_after.insert(replica(case), (7, Some(all[30].timestamp)));

    // nothing copied yet: 6 records, an empty replica.
    let case = "fresh";
    primary_raw.create_topic(&name(case), 1).await;
    backup_raw.create_topic(&replica(case), 1).await;
    produce(&primary_raw, &name(case), 0, case, 6).await;
    let source = delivered(&primary, &name(case), 0).await;
    produced_after.insert(replica(case), (6, Some(source[0].timestamp)));

    // empty on both sides: a 0 series, never no series.
    let case = "empty";
    primary_raw.create_topic(&name(case), 1).await;
    backup_raw.create_topic(&replica(case), 1).await;
    produced_after.insert(replica(case), (0, None));

    // A checkpoint of a group on the "behind" replica: the watch has a flow to follow, and
    // translate/apply a group to fail over.
    let group = format!("{alias}-group");
    let checkpoints = format!("{alias}.checkpoints.internal");
    backup_raw.create_topic(&checkpoints, 1).await;
    let checkpoint = checkpoint_record(&group, &replica("behind"), (20, 20), b"");
    backup_raw.produce(&checkpoints, 0, &[checkpoint]).await;
    // The group on the source too, where watch lists it with its type.
    primary_raw.commit(&group, &name("behind"), 0, 20).await;

    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("replication.json");
    let snapshot_arg = snapshot.display().to_string();
    let watch = crate::support::watch_process::start(&[
        "--bootstrap-server",
        k39.var("PLAINTEXT"),
        "--source",
        &alias,
        "--all-groups",
        "--poll",
        "200ms",
        "--source-bootstrap-server",
        k4.var("PLAINTEXT"),
        "--syncs-topic",
        &syncs_topic,
        "--replication-interval",
        "1s",
        "--replication-snapshot",
        &snapshot_arg,
    ]);
    let up = |s: &Samples| metric(s, "mm2_replication_up", &[("source", &alias)]) == Some(1.0);
    wait_scrape(&watch, "a first measurement", Duration::from_secs(60), up);
    // The source's groups, typed: the flow's group is a consumer group (committed offsets,
    // no members), and the per-type counts include it.
    let samples = scrape(&watch);
    let info = |group_type: &str| {
        metric(
            &samples,
            "mm2_source_group_info",
            &[
                ("source", &alias),
                ("group", &group),
                ("group_type", group_type),
            ],
        )
    };
    assert_eq!(
        info("consumer"),
        Some(1.0),
        "{:?}",
        series(&samples, "mm2_source_group_info").len()
    );
    assert_eq!(info("streams"), None);
    let consumers = metric(
        &samples,
        "mm2_source_groups",
        &[("source", &alias), ("group_type", "consumer")],
    )
    .unwrap();
    assert!(consumers >= 1.0, "mm2_source_groups consumer {consumers}");
    println!(
        "source groups: {} listed, {consumers} consumer, {} streams, {} share",
        series(&samples, "mm2_source_group_info").len(),
        metric(&samples, "mm2_source_groups", &[("group_type", "streams")]).unwrap(),
        metric(&samples, "mm2_source_groups", &[("group_type", "share")]).unwrap(),
    );

    // The command's rows, then a scrape: the flow does not move meanwhile, so the figures are
    // the same; seconds_behind moves with the clock, so the oldest timestamp it implies
    // (measurement time minus seconds behind) is compared.
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
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{doc}");
    let samples = scrape(&watch);
    assert_eq!(
        series(&samples, "mm2_replication_records_behind").len(),
        4,
        "one series per remote partition"
    );
    let measured_at = metric(
        &samples,
        "mm2_replication_last_measurement_timestamp_seconds",
        &[("source", &alias)],
    )
    .unwrap();
    println!(
        "{:<8} {:>14} {:>10} {:>14} {:>9} {:>14} {:>14} {:>14}",
        "case",
        "produced_after",
        "not_copied",
        "records_behind",
        "copied_to",
        "oldest(row)",
        "seconds(row)",
        "seconds(metric)"
    );
    for row in rows {
        let topic = row["topic"].as_str().unwrap();
        let labels = [
            ("source", alias.as_str()),
            ("topic", topic),
            ("partition", "0"),
        ];
        let behind = metric(&samples, "mm2_replication_records_behind", &labels).unwrap();
        let seconds = metric(&samples, "mm2_replication_seconds_behind", &labels).unwrap();
        let (produced, oldest) = produced_after[topic];
        println!(
            "{:<8} {:>14} {:>10} {:>14} {:>9} {:>14} {:>14} {:>14.3}",
            topic.rsplit('-').next().unwrap(),
            produced,
            row["not_copied"].to_string(),
            behind,
            row["copied_to"].to_string(),
            row["oldest_not_copied_timestamp"].to_string(),
            row["seconds_behind"].to_string(),
            seconds
        );
        assert_eq!(
            row["not_copied"], produced,
            "{topic}: the producer's figure"
        );
        assert_eq!(behind, produced as f64, "{topic}: metric = row");
        assert_eq!(
            row["oldest_not_copied_timestamp"],
            serde_json::json!(oldest),
            "{topic}"
        );
        match oldest {
            None => assert_eq!(seconds, 0.0, "{topic}: caught up exports 0"),
            Some(ts) => {
                let implied = measured_at * 1000.0 - seconds * 1000.0;
                assert!(
                    (implied - ts as f64).abs() <= 1.0,
                    "{topic}: {measured_at} - {seconds} s is not {ts} ms"
                );
            }
        }
    }

    // The figure moves: 3 more records on "behind" make 10.
    produce(&primary_raw, &name("behind"), 0, "more", 3).await;
    let behind_topic = replica("behind");
    let labels = [
        ("source", alias.as_str()),
        ("topic", behind_topic.as_str()),
        ("partition", "0"),
    ];
    wait_scrape(&watch, "10 records behind", Duration::from_secs(30), |s| {
        metric(s, "mm2_replication_records_behind", &labels) == Some(10.0)
    });
    println!("behind after 3 more produced: mm2_replication_records_behind 10");

    // The snapshot holds the last figure and its time.
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&snapshot).unwrap()).unwrap();
    assert_eq!(written["kind"], "mm2-offsets-replication-snapshot");
    assert_eq!(written["source"], alias.as_str());
    assert_eq!(written["newest_round"]["measured"], true, "{written}");
    let last = &written["last_measurement"];
    assert!(last["measured_at_ms"].as_i64().unwrap() > 0, "{written}");
    let total = last["total"]["not_copied"].as_u64().unwrap();
    assert!(total == 7 + 6 || total == 10 + 6, "{written}");

    // A round that fails (the offset-syncs topic is gone): no per-partition figure, up 0, the
    // last success's time kept.
    primary_raw.delete_topic(&syncs_topic).await;
    let failed = wait_scrape(&watch, "a failed round", Duration::from_secs(60), |s| {
        metric(s, "mm2_replication_up", &[("source", &alias)]) == Some(0.0)
    });
    assert!(
        series(&failed, "mm2_replication_records_behind").is_empty(),
        "a failed round exports no figure"
    );
    assert!(series(&failed, "mm2_replication_seconds_behind").is_empty());
    let kept = metric(
        &failed,
        "mm2_replication_last_measurement_timestamp_seconds",
        &[("source", &alias)],
    )
    .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let later = scrape(&watch);
    assert_eq!(
        metric(
            &later,
            "mm2_replication_last_measurement_timestamp_seconds",
            &[("source", &alias)],
        ),
        Some(kept),
        "the last measurement's time does not move while rounds fail"
    );
    assert!(
        metric(
            &later,
            "mm2_replication_measurement_errors_total",
            &[("source", &alias)]
        )
        .unwrap()
            >= 1.0
    );
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&snapshot).unwrap()).unwrap();
    assert_eq!(written["newest_round"]["measured"], false, "{written}");
    assert!(written["newest_round"]["error"].is_string(), "{written}");
    assert_eq!(
        written["last_measurement"]["total"]["not_copied"], 16,
        "the last figure kept: {written}"
    );
    println!(
        "failed round: mm2_replication_up 0, no records_behind series, last measurement kept at {kept}; snapshot error: {}",
        written["newest_round"]["error"]
    );
    drop(watch);

    // The primary unreachable: translate and apply show the snapshot's figure for the group's
    // partition ("behind": 10), marked as the watch's, with its age; in JSON beside the error.
    // Without any source connection the snapshot is shown too.
    let doc_dir = tempfile::tempdir().unwrap();
    let unreachable = [
        "--source-bootstrap-server",
        "127.0.0.1:1",
        "--syncs-topic",
        syncs_topic.as_str(),
        "--timeout",
        "10s",
    ];
    for (command, source_flags) in [
        ("translate", &unreachable[..]),
        ("apply", &unreachable[..]),
        ("apply", &[][..]),
    ] {
        let out = std::process::Command::new(bin)
            .args([
                command,
                "--bootstrap-server",
                k39.var("PLAINTEXT"),
                "--source",
                &alias,
                "--group",
                &group,
                "--no-progress",
                "-o",
                "json",
                "--replication-snapshot",
                &snapshot_arg,
            ])
            .args(source_flags)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{command}: {stderr}");
        let line = stderr
            .lines()
            .find(|l| l.contains("LAST FIGURE `watch` RECORDED"))
            .unwrap_or_else(|| panic!("{command}: no snapshot figure in {stderr}"));
        assert!(line.contains("NOT MEASURED now"), "{line}");
        assert!(line.contains(" old (measured at "), "{line}");
        assert!(line.contains("at least 10 records"), "{line}");
        assert!(line.contains("(1 partitions, the oldest from "), "{line}");
        assert!(
            line.contains("the watch's newest measurement failed too"),
            "{line}"
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let section = &doc["replication"][alias.as_str()];
        assert_eq!(section["measured"], false, "{command}: {section}");
        let snap = &section["watch_snapshot"];
        assert_eq!(snap["total"]["not_copied"], 10, "{command}: {section}");
        assert_eq!(snap["rows"][0]["topic"], replica("behind"), "{section}");
        let at = snap["measured_at_ms"].as_f64().unwrap();
        assert!((at - kept * 1000.0).abs() < 1.0, "{section}");
        assert!(snap["age_seconds"].as_f64().unwrap() >= 2.0, "{section}");
        println!(
            "{command} {}: {line}",
            if source_flags.is_empty() {
                "without a source connection"
            } else {
                "primary unreachable"
            }
        );
        let label = format!("{command}__watch-snapshot-{}.json", source_flags.len());
        std::fs::write(doc_dir.path().join(label), &out.stdout).unwrap();
    }
    // The documents against their schemas (docs/schemas/).
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schemas/validate.py");
    let check = std::process::Command::new("python3")
        .arg(&script)
        .arg(doc_dir.path())
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}
