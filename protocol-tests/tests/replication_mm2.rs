//! `mm2-offsets replication` on REAL MirrorMaker 2 (issue 32, "Tests on real brokers"), on the
//! failover suite's clusters (`harness/failover.sh`: fo-primary -> fo-backup, MM2 4.3.1,
//! `offset.lag.max=1`, 1 s offset flushes). Topics of its own (`fo-rm-*`):
//! `A` (3 partitions, plain), `T` (1 partition, transactional), `K` (1 partition, the kill).
//!
//! a. MM2 running, a producer going on `A`: each figure is at most what the primary held and
//!    the backup did not (both ends read around the command), and it moves between two reads.
//! b. MM2 stopped (SIGTERM), 37 and 50 more records on `A`-0 and `A`-1, none on `A`-2: exactly
//!    those are not copied; copied_to is the first of them; the oldest timestamp is theirs.
//! c. `T` after the stop: a committed and an aborted transaction of 20: 20 not copied, 20
//!    aborted apart, the markers counted nowhere.
//! f. `watch` on that state: its mm2_replication_* series equal the command's rows, a caught-up
//!    partition exports 0; its `--replication-snapshot` keeps the figure.
//! g. The primary unreachable: `apply` shows the snapshot's figure, its age, marked as such;
//!    `apply --plan FILE` with the source connection prints the measured figure.
//! d. MM2 killed (SIGKILL) while 18,000 records are produced on `K`: once the producer is done,
//!    not_copied is exactly the records with no copy on the backup (read from the backup's
//!    payloads, which carry each record's source offset).
//! e. MM2 started again re-copies a block (duplicates on the backup): copied_to never falls back
//!    into the duplicate block; caught up, not_copied is 0 and the rows are still there. A row
//!    not proven during the catch-up is accepted and printed, never a wrong figure (a tip inside
//!    a long re-copied block was `unproven: not-read` before the tip proof read far enough;
//!    `replication_kafka.rs` lays that shape by hand, RELIABILITY.md).
//!
//! Every expected figure comes from the producer's output and the clusters' logs, never from
//! the code under test. It holds `failover_mm2::CLUSTERS` throughout (it stops, kills and
//! starts MM2) and leaves MM2 running and caught up.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use mm2_offsets::client::KafkaClient;
use serde_json::Value;

use crate::failover_mm2::{
    CLUSTERS, Env, checkpoints_of, cli, connect, create_topics, java, log_ends, wait_topic,
};
use crate::replication_kafka::delivered;
use crate::support::watch_process::WatchProcess;
use crate::watch_mm2::{metric, parse_metrics};

const SYNCS_TOPIC: &str = "mm2-offset-syncs.backup.internal";
const A_PARTITIONS: i32 = 3;
const A_PER_PARTITION: i64 = 3000;
/// Records per partition of `A` produced while MM2 is stopped.
const A_AFTER_STOP: [i64; 3] = [37, 50, 0];
const T_BEFORE: i64 = 100;
const K_RECORDS: i64 = 18_000;

/// Waits until `topic`'s log ends reach `at_least` on every partition and stay put for a second.
async fn wait_copied(client: &KafkaClient, topic: &str, at_least: &[i64], within: Duration) {
    let give_up = Instant::now() + within;
    let mut last = BTreeMap::new();
    loop {
        let ends = log_ends(client, topic).await;
        let reached = at_least
            .iter()
            .enumerate()
            .all(|(p, &want)| ends.get(&(p as i32)).is_some_and(|&e| e >= want));
        if reached && ends == last {
            return;
        }
        last = ends;
        assert!(
            Instant::now() < give_up,
            "{topic} not copied within {within:?}: {last:?}, want {at_least:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// `failover.sh mm2-stop | mm2-kill | mm2-start`.
fn mm2(env: &Env, what: &str) -> Duration {
    let started = Instant::now();
    let status = Command::new("bash")
        .arg(env.var("CLIENT"))
        .arg(what)
        .status()
        .unwrap();
    assert!(status.success(), "failover.sh {what}");
    started.elapsed()
}

/// One read of part a: the backup's ends before it, the rows, the primary's ends after it.
type Read = (
    BTreeMap<i32, i64>,
    BTreeMap<(String, i32), Value>,
    BTreeMap<i32, i64>,
);

/// A FailoverClient command in a thread of its own.
fn spawn_java(env: &Env, args: &[&str]) -> std::thread::JoinHandle<Vec<Value>> {
    let client = env.var("CLIENT").to_string();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    std::thread::spawn(move || {
        let out = Command::new("bash")
            .arg(&client)
            .arg("client")
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "FailoverClient {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    })
}

/// `mm2-offsets replication -o json` for `topics` (names on the primary): (remote topic,
/// partition) -> row. Every row proven (exit 0, complete), but one refused as `inconsistent`
/// where MM2's offset-sync history shows a restart that went back: a lifetime's first sync
/// replaced before MM2 sent it (more than 10 in flight) leaves records the history does not
/// account for, and record matching refuses rather than guess (the CI run of stop 43 saw it
/// after part e's restart re-copied the tail of A-1). Such a row has no figure ([`refused`]).
fn rows(env: &Env, topics: &[&str]) -> BTreeMap<(String, i32), Value> {
    let (rows, complete) = rows_maybe_unproven(env, topics);
    if !complete {
        let restarted =
            crate::support::sync_history::restarted_blocking(env.var("PRIMARY"), SYNCS_TOPIC);
        for ((topic, partition), row) in rows.iter().filter(|(_, r)| r["unproven"].is_string()) {
            let source = (
                row["source_topic"].as_str().unwrap_or("").to_string(),
                *partition,
            );
            assert!(
                refused(row) && restarted.contains(&source),
                "a row not proven: {row} (partitions whose syncs show a restart: {restarted:?})"
            );
            println!(
                "[replication_mm2] {topic}-{partition}: inconsistent (its offset syncs show a restart of MM2): no figure"
            );
        }
    }
    rows
}

/// A row record matching refused because the records contradict the offset-sync history, as
/// [`rows`] accepts only after a restart of MM2.
fn refused(row: &Value) -> bool {
    row["unproven"] == "inconsistent"
}

/// [`rows`], a row not proven allowed (exit 3, `complete` false): the rows and `complete`.
fn rows_maybe_unproven(env: &Env, topics: &[&str]) -> (BTreeMap<(String, i32), Value>, bool) {
    let mut args = vec![
        "replication",
        "--bootstrap-server",
        env.var("BACKUP"),
        "--source",
        "primary",
        "--source-bootstrap-server",
        env.var("PRIMARY"),
        "--syncs-topic",
        SYNCS_TOPIC,
        "-o",
        "json",
        "--timeout",
        "30s",
    ];
    for t in topics {
        args.extend(["--topic", t]);
    }
    let (code, out, err) = cli(&args);
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}\n{out}"));
    let complete = doc["complete"] == true;
    assert_eq!(
        code,
        if complete { 0 } else { 3 },
        "replication: {err}\n{out}"
    );
    let rows = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                (
                    r["topic"].as_str().unwrap().to_string(),
                    r["partition"].as_i64().unwrap() as i32,
                ),
                r.clone(),
            )
        })
        .collect();
    (rows, complete)
}

/// `dump` of one topic: partition -> [(offset, seq)].
fn dump(env: &Env, bootstrap: &str, topic: &str) -> BTreeMap<i32, Vec<(i64, i64)>> {
    java(env, &["dump", "--bootstrap", bootstrap, "--topic", topic])
        .into_iter()
        .map(|l| {
            let pairs = l["offset_seq"].as_array().unwrap();
            (
                l["partition"].as_i64().unwrap() as i32,
                pairs
                    .chunks(2)
                    .map(|c| (c[0].as_i64().unwrap(), c[1].as_i64().unwrap()))
                    .collect(),
            )
        })
        .collect()
}

/// One line of a case's table.
struct Line {
    partition: String,
    produced_after_stop: String,
    not_copied: String,
    copied_to: String,
    oldest: String,
    watch: String,
}

fn table(case: &str, lines: &[Line]) {
    println!("[replication_mm2] case {case}");
    println!(
        "  {:<28} {:>19} {:>10} {:>9} {:>15} {:>13}",
        "partition", "produced_after_stop", "not_copied", "copied_to", "oldest_ts", "watch_metric"
    );
    for l in lines {
        println!(
            "  {:<28} {:>19} {:>10} {:>9} {:>15} {:>13}",
            l.partition, l.produced_after_stop, l.not_copied, l.copied_to, l.oldest, l.watch
        );
    }
}

fn line(tp: &(String, i32), produced: &str, row: &Value, watch: &str) -> Line {
    Line {
        partition: format!("{}-{}", tp.0, tp.1),
        produced_after_stop: produced.to_string(),
        not_copied: row["not_copied"].to_string(),
        copied_to: row["copied_to"].to_string(),
        oldest: row["oldest_not_copied_timestamp"].to_string(),
        watch: watch.to_string(),
    }
}

type Samples = Vec<(String, Value, f64)>;

fn scrape(watch: &WatchProcess) -> Samples {
    let (status, body) = crate::support::http_get(&watch.address, "/metrics");
    assert_eq!(status, 200, "{body}");
    parse_metrics(&body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replication_on_real_mirrormaker2() {
    let _clusters = CLUSTERS.lock().await;
    let t0 = Instant::now();
    let step = |what: &str| {
        eprintln!(
            "[replication_mm2] {what} after {:.1}s",
            t0.elapsed().as_secs_f64()
        )
    };
    let env = Env::load();
    let (primary, backup) = (
        env.var("PRIMARY").to_string(),
        env.var("BACKUP").to_string(),
    );
    let (p_client, b_client) = (connect(&primary).await, connect(&backup).await);
    let run = crate::support::unique_topic("r").replace('-', "");
    let run = run[run.len() - 10..].to_string();
    let (a, t, k) = (
        format!("fo-rm-a-{run}"),
        format!("fo-rm-t-{run}"),
        format!("fo-rm-k-{run}"),
    );
    let remote = |t: &str| format!("primary.{t}");
    let tp = |t: &str, p: i32| (remote(t), p);
    let dir = tempfile::tempdir().unwrap();

    create_topics(&env, &primary, &format!("{a}:{A_PARTITIONS},{t}:1,{k}:1"));
    for topic in [&a, &t, &k] {
        wait_topic(&b_client, &remote(topic), Duration::from_secs(90)).await;
    }
    step("topics replicated");

    // ---- a. MM2 running, the producers going.
    let produce_a = spawn_java(
        &env,
        &[
            "produce",
            "--bootstrap",
            &primary,
            "--topic",
            &a,
            "--partitions",
            &A_PARTITIONS.to_string(),
            "--per-partition",
            &A_PER_PARTITION.to_string(),
            // 10 s of rounds 200 ms apart: still going when the reads below start.
            "--rounds",
            "50",
        ],
    );
    let produce_t = spawn_java(
        &env,
        &[
            "produce-tx",
            "--bootstrap",
            &primary,
            "--topic",
            &t,
            "--records",
            &T_BEFORE.to_string(),
            "--txn-size",
            "20",
            "--abort-every",
            "0",
        ],
    );
    let give_up = Instant::now() + Duration::from_secs(60);
    while log_ends(&b_client, &remote(&a)).await[&0] == 0 {
        assert!(Instant::now() < give_up, "MM2 copies nothing of {a}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Reads with a figure until two of them differ: a row may be not proven while MM2 has
    // copied records of a partition but sent no offset sync for it yet (`no-sync`), said so,
    // never a figure. (Two reads in a row may also agree on a slow machine, where one read
    // takes as long as MM2's copy of a round: the next read differs while the producer goes.)
    let mut reads: Vec<Read> = Vec::new();
    let moved = |reads: &[Read]| {
        reads.len() >= 2
            && (0..A_PARTITIONS)
                .any(|p| reads[0].1[&tp(&a, p)] != reads[reads.len() - 1].1[&tp(&a, p)])
    };
    let give_up = Instant::now() + Duration::from_secs(45);
    while !moved(&reads) {
        let on_backup = log_ends(&b_client, &remote(&a)).await;
        let (got, complete) = rows_maybe_unproven(&env, &[&a]);
        let on_primary = log_ends(&p_client, &a).await;
        if !complete {
            let why: Vec<String> = got
                .values()
                .filter(|r| r["unproven"].is_string())
                .map(|r| format!("{}-{}: {}", r["topic"], r["partition"], r["unproven"]))
                .collect();
            println!("[replication_mm2] a: read while MM2 copies, not proven: {why:?}");
        }
        if got.values().any(|r| r["copied_to"].is_i64()) {
            reads.push((on_backup, got, on_primary));
        }
        assert!(
            Instant::now() < give_up,
            "no two reads with a figure that differ, the producer going: {reads:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let mut lines = Vec::new();
    let last = reads.len() - 1;
    for (i, (on_backup, got, on_primary)) in reads.iter().enumerate() {
        // Every read checked; the first and the last printed.
        let shown = i == 0 || i == last;
        for p in 0..A_PARTITIONS {
            let row = &got[&tp(&a, p)];
            let Some(not_copied) = row["not_copied"].as_i64() else {
                if shown {
                    lines.push(line(&tp(&a, p), &format!("read {i}: not proven"), row, "-"));
                }
                continue;
            };
            let copied_to = row["copied_to"].as_i64().unwrap();
            // A plain topic, no restart yet: the backup holds copies of offsets 0.. in order,
            // one each, so what it held before the command is copied, and what the primary
            // held after it bounds what can be missing.
            let bound = on_primary[&p] - on_backup[&p];
            assert!(
                (0..=bound).contains(&not_copied),
                "read {i} {a}-{p}: not_copied {not_copied} outside 0..={bound}: {row}"
            );
            assert!(
                (on_backup[&p]..=on_primary[&p]).contains(&copied_to),
                "read {i} {a}-{p}: copied_to {copied_to}: {row}"
            );
            if shown {
                lines.push(line(&tp(&a, p), &format!("read {i}: <= {bound}"), row, "-"));
            }
        }
    }
    table("a (MM2 running, producer going)", &lines);
    produce_a.join().unwrap();
    produce_t.join().unwrap();
    wait_copied(
        &b_client,
        &remote(&a),
        &[A_PER_PARTITION; 3],
        Duration::from_secs(60),
    )
    .await;
    wait_copied(&b_client, &remote(&t), &[T_BEFORE], Duration::from_secs(60)).await;
    step("a: A and T copied");

    // A group on the primary, for apply in case g, caught up (MM2 always checkpoints a commit at
    // the log end; one between its kept syncs may get none); its checkpoints on the backup.
    let group = format!("fo-rm-{run}-g");
    let spec = dir.path().join("spec");
    std::fs::write(
        &spec,
        format!("{group} classic {a} {a}/0=3000,{a}/1=3000,{a}/2=3000\n"),
    )
    .unwrap();
    java(
        &env,
        &[
            "consume-to",
            "--bootstrap",
            &primary,
            "--spec",
            spec.to_str().unwrap(),
        ],
    );
    let groups_file = dir.path().join("groups");
    std::fs::write(&groups_file, format!("{group}\n")).unwrap();
    wait_checkpoints(&backup, &groups_file, &group, &a).await;
    step("the group's checkpoints are on the backup");

    // ---- b, c. MM2 stopped; the producers go on.
    let t_end_before = log_ends(&p_client, &t).await[&0];
    let took = mm2(&env, "mm2-stop");
    step(&format!("MM2 stopped (SIGTERM) in {took:?}"));
    let counts: Vec<String> = A_AFTER_STOP.iter().map(|n| n.to_string()).collect();
    let append = spawn_java(
        &env,
        &[
            "append",
            "--bootstrap",
            &primary,
            "--topic",
            &a,
            "--counts",
            &counts.join(","),
        ],
    );
    let tx = java(
        &env,
        &[
            "produce-tx",
            "--bootstrap",
            &primary,
            "--topic",
            &t,
            "--records",
            "40",
            "--txn-size",
            "20",
            "--abort-every",
            "2",
            "--first-seq",
            &T_BEFORE.to_string(),
        ],
    );
    assert_eq!(tx[0]["aborted_transactions"], 1, "{tx:?}");
    let appended = append.join().unwrap();
    let mut stopped_rows = rows(&env, &[&a, &t, &k]);
    let mut lines = Vec::new();
    // What the producer says it wrote, per partition of A, checked against the source's log.
    let mut truth: BTreeMap<(String, i32), (i64, i64, Option<i64>)> = BTreeMap::new();
    for l in &appended {
        let p = l["partition"].as_i64().unwrap() as i32;
        let first = l["first_offset"].as_i64().unwrap();
        let count = l["count"].as_i64().unwrap();
        assert_eq!((first, count), (A_PER_PARTITION, A_AFTER_STOP[p as usize]));
        let stamps: Vec<i64> = l["timestamps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        let source = delivered(&p_client, &a, p).await;
        let after: Vec<i64> = source
            .iter()
            .filter(|r| r.offset >= first)
            .map(|r| r.timestamp)
            .collect();
        assert_eq!(
            after, stamps,
            "{a}-{p}: the source holds what the producer wrote"
        );
        truth.insert(tp(&a, p), (count, first, after.iter().copied().min()));
    }
    for p in 0..A_PARTITIONS {
        let key = tp(&a, p);
        let (count, first, oldest) = truth[&key];
        let row = &stopped_rows[&key];
        assert_eq!(row["not_copied"], count, "{key:?}: {row}");
        assert_eq!(row["copied_to"], first, "{key:?}: {row}");
        assert_eq!(row["aborted_not_copied"], 0, "{key:?}: {row}");
        assert_eq!(
            row["oldest_not_copied_timestamp"],
            serde_json::json!(oldest),
            "{key:?}: {row}"
        );
        if count == 0 {
            assert_eq!(row["seconds_behind"], 0.0, "{key:?}: caught up: {row}");
        }
        lines.push(line(&key, &count.to_string(), row, "-"));
    }
    table("b (MM2 stopped, 37/50/0 more records)", &lines);

    // c: the transactional topic. Committed records after the stop, from the source's
    // read_committed log; the aborted ones are the producer's one aborted transaction of 20.
    let key = tp(&t, 0);
    let committed: Vec<_> = delivered(&p_client, &t, 0)
        .await
        .into_iter()
        .filter(|r| r.offset >= t_end_before)
        .collect();
    assert_eq!(committed.len(), 20, "one committed transaction of 20");
    let row = &stopped_rows[&key];
    let t_end = log_ends(&p_client, &t).await[&0];
    println!(
        "[replication_mm2] {t}: log end {t_end_before} before the stop, {t_end} after (20 committed, 20 aborted, 2 markers)"
    );
    assert_eq!(t_end - t_end_before, 42, "records and markers laid");
    assert_eq!(row["not_copied"], 20, "{row}");
    assert_eq!(row["aborted_not_copied"], 20, "{row}");
    assert_eq!(row["open_not_copied"], 0, "{row}");
    assert_eq!(row["copied_to"], t_end_before, "{row}");
    assert_eq!(
        row["oldest_not_copied_timestamp"],
        committed.iter().map(|r| r.timestamp).min().unwrap(),
        "{row}"
    );
    table(
        "c (transactional, MM2 stopped: 20 committed + 20 aborted)",
        &[line(&key, "20 committed, 20 aborted", row, "-")],
    );
    // The empty topic: a row, 0.
    let key = tp(&k, 0);
    assert_eq!(
        stopped_rows[&key]["not_copied"], 0,
        "{:?}",
        stopped_rows[&key]
    );
    step("b, c measured");

    // ---- f. watch on the same state (MM2 still stopped, nothing produced meanwhile).
    let snapshot = dir.path().join("replication.json");
    let snapshot_arg = snapshot.display().to_string();
    let watch = crate::support::watch_process::start(&[
        "--bootstrap-server",
        &backup,
        "--source",
        "primary",
        "--all-groups",
        "--poll",
        "1s",
        "--source-bootstrap-server",
        &primary,
        "--syncs-topic",
        SYNCS_TOPIC,
        "--replication-interval",
        "1s",
        "--replication-snapshot",
        &snapshot_arg,
    ]);
    let started = Instant::now();
    let samples = loop {
        let s = scrape(&watch);
        if metric(&s, "mm2_replication_up", &[("source", "primary")]) == Some(1.0) {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "watch never measured; log:\n{}",
            watch.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let measured_at = metric(
        &samples,
        "mm2_replication_last_measurement_timestamp_seconds",
        &[("source", "primary")],
    )
    .unwrap();
    let mut lines = Vec::new();
    for (key, row) in &stopped_rows {
        let part = key.1.to_string();
        let labels = [
            ("source", "primary"),
            ("topic", key.0.as_str()),
            ("partition", part.as_str()),
        ];
        let behind = metric(&samples, "mm2_replication_records_behind", &labels)
            .unwrap_or_else(|| panic!("{key:?}: no records_behind series"));
        let seconds = metric(&samples, "mm2_replication_seconds_behind", &labels)
            .unwrap_or_else(|| panic!("{key:?}: no seconds_behind series"));
        assert_eq!(
            behind,
            row["not_copied"].as_f64().unwrap(),
            "{key:?}: metric = row"
        );
        match row["oldest_not_copied_timestamp"].as_i64() {
            None => assert_eq!(seconds, 0.0, "{key:?}: caught up exports 0"),
            Some(ts) => {
                let implied = measured_at * 1000.0 - seconds * 1000.0;
                assert!(
                    (implied - ts as f64).abs() <= 1.0,
                    "{key:?}: {measured_at} - {seconds} s is not {ts} ms"
                );
            }
        }
        let produced = truth.get(key).map(|v| v.0.to_string()).unwrap_or_else(|| {
            if key.0 == remote(&t) {
                "20 (+20 aborted)".to_string()
            } else {
                "0".to_string()
            }
        });
        lines.push(line(
            key,
            &produced,
            row,
            &format!("{behind} / {seconds:.1}s"),
        ));
    }
    table(
        "f (watch: records_behind / seconds_behind beside the rows)",
        &lines,
    );
    // The snapshot holds that figure.
    let give_up = Instant::now() + Duration::from_secs(20);
    while !snapshot.exists() {
        assert!(Instant::now() < give_up, "no snapshot written");
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(watch);
    step("f: watch metrics equal the rows");

    // ---- g. The primary unreachable: apply shows the snapshot's figure for the group's
    // partitions (A: 37 + 50 + 0), marked as the watch's, with its age.
    let a_behind: i64 = A_AFTER_STOP.iter().sum();
    let (code, out, err) = cli(&[
        "apply",
        "--bootstrap-server",
        &backup,
        "--source",
        "primary",
        "--group",
        &group,
        "--no-progress",
        "-o",
        "json",
        "--replication-snapshot",
        &snapshot_arg,
        "--source-bootstrap-server",
        "127.0.0.1:1",
        "--syncs-topic",
        SYNCS_TOPIC,
        "--timeout",
        "10s",
    ]);
    assert_eq!(code, 0, "apply, the primary unreachable: {err}");
    let said = err
        .lines()
        .find(|l| l.contains("LAST FIGURE `watch` RECORDED"))
        .unwrap_or_else(|| panic!("apply: no snapshot figure in {err}"));
    assert!(said.contains("NOT MEASURED now"), "{said}");
    assert!(said.contains(" old (measured at "), "{said}");
    assert!(
        said.contains(&format!("at least {a_behind} records")),
        "{said}"
    );
    let doc: Value = serde_json::from_str(&out).unwrap();
    let snap = &doc["replication"]["primary"]["watch_snapshot"];
    assert_eq!(doc["replication"]["primary"]["measured"], false, "{doc}");
    assert_eq!(snap["total"]["not_copied"], a_behind, "{snap}");
    assert!(snap["age_seconds"].as_f64().unwrap() > 0.0, "{snap}");
    println!("[replication_mm2] case g (primary unreachable): {said}");
    // A saved plan, run with the source connection: the measured figure, the plan as it was.
    let plan = dir.path().join("plan.json");
    let (code, _, err) = cli(&[
        "apply",
        "--bootstrap-server",
        &backup,
        "--source",
        "primary",
        "--group",
        &group,
        "--no-progress",
        "--plan-out",
        plan.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "apply --plan-out: {err}");
    for (how, flags) in [
        (
            "measured",
            vec!["--source-bootstrap-server", primary.as_str()],
        ),
        (
            "primary unreachable",
            vec![
                "--source-bootstrap-server",
                "127.0.0.1:1",
                "--replication-snapshot",
                snapshot_arg.as_str(),
            ],
        ),
    ] {
        let mut args = vec![
            "apply",
            "--bootstrap-server",
            &backup,
            "--plan",
            plan.to_str().unwrap(),
            "--no-progress",
            "-o",
            "json",
            "--syncs-topic",
            SYNCS_TOPIC,
            "--timeout",
            "20s",
        ];
        args.extend(flags);
        let (code, out, err) = cli(&args);
        assert_eq!(code, 0, "apply --plan ({how}): {err}");
        let doc: Value = serde_json::from_str(&out).unwrap();
        let section = &doc["replication"]["primary"];
        let said = err
            .lines()
            .find(|l| l.starts_with("replication (primary)"))
            .unwrap_or_else(|| panic!("apply --plan ({how}): no figure in {err}"));
        if how == "measured" {
            assert_eq!(section["measured"], true, "{section}");
            assert_eq!(section["total"]["not_copied"], a_behind, "{section}");
            assert!(
                said.contains(&format!("leaves {a_behind} records")),
                "{said}"
            );
        } else {
            assert_eq!(
                section["watch_snapshot"]["total"]["not_copied"], a_behind,
                "{section}"
            );
            assert!(said.contains("LAST FIGURE `watch` RECORDED"), "{said}");
        }
        // The plan as saved: the one group, its three partitions.
        let planned = &doc["plan"]["groups"];
        assert_eq!(planned.as_array().map(Vec::len), Some(1), "{doc}");
        assert_eq!(planned[0]["group"], group.as_str(), "{doc}");
        println!("[replication_mm2] apply --plan ({how}): {said}");
    }
    // An undo file is no failover: the flags that only feed the figure are refused beside it,
    // before anything is read or written.
    let undo = dir.path().join("undo.json");
    std::fs::write(&undo, "{\"kind\":\"undo\"}\n").unwrap();
    let (code, _, err) = cli(&[
        "apply",
        "--bootstrap-server",
        &backup,
        "--plan",
        undo.to_str().unwrap(),
        "--source-bootstrap-server",
        &primary,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is an undo file"), "{err}");
    step("g: the snapshot's figure and apply --plan's");

    // ---- MM2 again: A and T caught up, their rows still there.
    let took = mm2(&env, "mm2-start");
    step(&format!("MM2 started again in {took:?}"));
    let a_ends: Vec<i64> = A_AFTER_STOP.iter().map(|n| A_PER_PARTITION + n).collect();
    wait_caught_up(&env, &[&a, &t], Duration::from_secs(60)).await;
    stopped_rows = rows(&env, &[&a, &t]);
    for p in 0..A_PARTITIONS {
        let row = &stopped_rows[&tp(&a, p)];
        if refused(row) {
            continue;
        }
        assert_eq!(row["not_copied"], 0, "{row}");
        assert_eq!(row["copied_to"], a_ends[p as usize], "{row}");
    }
    let row = &stopped_rows[&tp(&t, 0)];
    if !refused(row) {
        assert_eq!(row["not_copied"], 0, "{row}");
    }
    step("A and T caught up after the restart");

    // ---- d. MM2 killed mid-batch.
    let produce_k = spawn_java(
        &env,
        &[
            "produce",
            "--bootstrap",
            &primary,
            "--topic",
            &k,
            "--partitions",
            "1",
            "--per-partition",
            &K_RECORDS.to_string(),
            "--rounds",
            "20",
        ],
    );
    let give_up = Instant::now() + Duration::from_secs(60);
    while log_ends(&b_client, &remote(&k)).await[&0] < 3000 {
        assert!(Instant::now() < give_up, "MM2 never copied 3000 of {k}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    mm2(&env, "mm2-kill");
    let killed_at = log_ends(&b_client, &remote(&k)).await[&0];
    step(&format!(
        "MM2 killed (SIGKILL) at {killed_at} copies of {k}"
    ));
    produce_k.join().unwrap();
    let on_primary = log_ends(&p_client, &k).await[&0];
    assert_eq!(on_primary, K_RECORDS);
    // The truth: which source records (SEQ = source offset) have a copy on the backup.
    let copies = dump(&env, &backup, &remote(&k));
    let seqs: BTreeSet<i64> = copies[&0].iter().map(|&(_, s)| s).collect();
    let copied_prefix = (0..).take_while(|s| seqs.contains(s)).count() as i64;
    assert_eq!(
        seqs.len() as i64,
        copied_prefix,
        "MM2 copies in order: the copies are a prefix"
    );
    let missing = K_RECORDS - copied_prefix;
    let source_k = delivered(&p_client, &k, 0).await;
    let key = tp(&k, 0);
    let row = rows(&env, &[&k]).remove(&key).unwrap();
    assert_eq!(row["not_copied"], missing, "{row}");
    assert_eq!(row["copied_to"], copied_prefix, "{row}");
    assert_eq!(
        row["oldest_not_copied_timestamp"],
        source_k[copied_prefix as usize..]
            .iter()
            .map(|r| r.timestamp)
            .min()
            .unwrap(),
        "{row}"
    );
    table(
        "d (MM2 killed mid-batch of 18,000)",
        &[line(
            &key,
            &format!("{missing} (no copy on the backup)"),
            &row,
            "-",
        )],
    );

    // ---- e. MM2 again: it re-copies from its last flushed source offset.
    let backup_before = copies[&0].len() as i64;
    let took = mm2(&env, "mm2-start");
    step(&format!("MM2 started again in {took:?}"));
    let mut during = Vec::new();
    let give_up = Instant::now() + Duration::from_secs(90);
    loop {
        let end_before = log_ends(&b_client, &remote(&k)).await[&0];
        let row = rows_maybe_unproven(&env, &[&k]).0.remove(&key).unwrap();
        let Some(copied_to) = row["copied_to"].as_i64() else {
            // Not proven while MM2 writes the block: said so, never a wrong figure.
            eprintln!("[replication_mm2] e: during the catch-up, not proven: {row}");
            during.push((end_before, -1, -1));
            assert!(Instant::now() < give_up, "{k} never caught up: {row}");
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        // Copies are never removed: whatever the restart appends, the first record without a
        // copy is at or past the prefix the backup held before it.
        assert!(
            (copied_prefix..=K_RECORDS).contains(&copied_to),
            "copied_to {copied_to} below {copied_prefix}, the copies held before the restart: {row}"
        );
        during.push((end_before, copied_to, row["not_copied"].as_i64().unwrap()));
        if row["not_copied"] == 0 {
            break;
        }
        assert!(Instant::now() < give_up, "{k} never caught up: {row}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let copies = dump(&env, &backup, &remote(&k));
    let after: Vec<i64> = copies[&0].iter().map(|&(_, s)| s).collect();
    let duplicates = after.len() as i64 - K_RECORDS;
    // The restart's first copy: the first record appended after the kill.
    let resumed_at = after.get(backup_before as usize).copied();
    println!(
        "[replication_mm2] e: backup held {backup_before} copies at the restart; MM2 resumed at source {resumed_at:?}, {duplicates} duplicates; reads during the catch-up (backup end before the read, copied_to, not_copied): {during:?}"
    );
    assert_eq!(
        after.iter().collect::<BTreeSet<_>>().len() as i64,
        K_RECORDS,
        "every source record has a copy"
    );
    let in_block = resumed_at.map(|r| {
        during
            .iter()
            .filter(|(end, _, _)| {
                *end > backup_before && *end < backup_before + (copied_prefix - r)
            })
            .count()
    });
    println!(
        "[replication_mm2] e: reads taken while the backup's tip was inside the duplicate block: {in_block:?}"
    );
    let row = rows(&env, &[&k]).remove(&key).unwrap();
    if !refused(&row) {
        assert_eq!(row["not_copied"], 0, "{row}");
        assert_eq!(row["copied_to"], K_RECORDS, "{row}");
        assert_eq!(row["oldest_not_copied_timestamp"], Value::Null, "{row}");
    }
    table(
        &format!("e (restart: {duplicates} duplicates on the backup, caught up)"),
        &[line(&key, "0", &row, "-")],
    );
    // Left as found: MM2 running, every topic of this suite caught up.
    wait_caught_up(&env, &[&a, &t, &k], Duration::from_secs(30)).await;
    eprintln!("[suite] replication_mm2 took {:?}", t0.elapsed());
}

/// Waits until the group's three partitions of `topic` have checkpoints whose upstream offset is
/// the committed one (the log end, 3000).
async fn wait_checkpoints(backup: &str, groups_file: &Path, group: &str, topic: &str) {
    let started = Instant::now();
    loop {
        let cps = checkpoints_of(backup, "primary", groups_file);
        let have: BTreeMap<i32, i64> = cps
            .get(group)
            .map(|m| m.iter().map(|((_, p), c)| (*p, c.1)).collect())
            .unwrap_or_default();
        if have == BTreeMap::from([(0, 3000), (1, 3000), (2, 3000)]) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{group}'s checkpoints on {topic} did not come: {have:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits until every row of `topics` has not_copied 0.
async fn wait_caught_up(env: &Env, topics: &[&str], within: Duration) {
    let started = Instant::now();
    loop {
        let got = rows(env, topics);
        if got.values().all(|r| r["not_copied"] == 0 || refused(r)) {
            return;
        }
        assert!(
            started.elapsed() < within,
            "not caught up within {within:?}: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
