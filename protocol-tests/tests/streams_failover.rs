//! A Kafka Streams application (KIP-1071, `group.protocol=streams`) failed over with apply, on
//! real MirrorMaker 2 (issue 31). MM2 never checkpoints a Streams group, so the only route is
//! `apply --from-source-offsets --precise --match-records`: the application's offsets committed
//! on the primary, translated record by record.
//!
//! 1. A Streams application on the primary processes the first 120 of 200 records of partition
//!    0 and 80 of 150 of partition 1 and closes; MM2 wrote no checkpoint for its group. The
//!    records were written in transactions of 10: each commit marker takes an offset on the
//!    primary that MM2 does not copy, so the application's committed offsets (past 12 and 8
//!    markers) are not the replica's, and only the records tell the right one.
//! 2. apply on the backup plans it as a `streams` group and commits, per partition, the replica's
//!    offset of the copy of the record at the committed offset (the truth, read from the
//!    replica's records: every value names its upstream record).
//! 3. The same application (same `application.id`) on the backup, reading the replica topic,
//!    processes first exactly the translated offset: no record re-read, none skipped.
//! 4. While it runs, apply is refused (`group-active`, from StreamsGroupDescribe), nothing
//!    written.
//! 5. Stopped, apply (a rewind to the translation, `--allow-rewind`, `--undo-out`) and its undo
//!    (`apply --plan UNDO --execute`) restore what the application had committed, metadata
//!    included.
//! 6. Failback (`failback --match-records --execute`): the application's offsets on the backup
//!    (the replica's end) back into the primary's empty Streams group: the primary's log end.
//!
//! On the failover suite's clusters (`harness/failover.sh`), holding
//! [`crate::failover_mm2::CLUSTERS`] (the failback suite restarts its MM2).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mm2_offsets::client::KafkaClient;
use mm2_offsets::config::ClientConfig;
use serde_json::Value;

use crate::failover_mm2::{Env, Tp, checkpoints, cli, create_topics, java, plan_group, wait_topic};
use crate::support::groups::{committed, committed_with_metadata};

/// Records per partition on the primary, and how many of them the application processes there.
const TOTAL: [i64; 2] = [200, 150];
const FIRST: [i64; 2] = [120, 80];
/// Records per transaction on the primary (StreamsOnce's `TXN`).
const TXN: i64 = 10;

fn harness() -> PathBuf {
    crate::support::harness_dir()
}

/// The Kafka 4.4 client jars, the kafka-streams jar and StreamsOnce compiled into `classes`:
/// the classpath.
fn compile_streams_once(classes: &Path) -> String {
    let out = Command::new("bash")
        .arg(harness().join("kafka-jars.sh"))
        .args(["4.4.0", "kafka4"])
        .output()
        .expect("run kafka-jars.sh");
    assert!(out.status.success(), "kafka-jars.sh: {out:?}");
    let lib = String::from_utf8(out.stdout).unwrap().trim().to_string();
    crate::group_types::compile_streams_once(Path::new(&lib), classes)
}

fn streams_once(classpath: &str, args: &[&str]) -> Command {
    let mut c = Command::new("java");
    c.args(["-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"])
        .arg(format!(
            "-Dlog4j2.configurationFile={}",
            harness().join("config/log4j2-tool.properties").display()
        ))
        .args(["-cp", classpath, "StreamsOnce"])
        .args(args);
    c
}

fn csv(v: [i64; 2]) -> String {
    format!("{},{}", v[0], v[1])
}

/// apply's JSON document, after asserting its exit code.
fn apply(args: &[&str], want_code: i32) -> Value {
    let (code, out, err) = cli(args);
    assert_eq!(code, want_code, "apply {args:?}: {err}\n{out}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("apply JSON ({e}): {out}\n{err}"))
}

/// Waits until the group's committed offsets on `client` equal `want`.
async fn wait_committed(client: &KafkaClient, group: &str, want: &BTreeMap<Tp, i64>) {
    let give_up = Instant::now() + Duration::from_secs(30);
    loop {
        let got = committed(client, group).await;
        if &got == want {
            return;
        }
        assert!(Instant::now() < give_up, "{group}: {got:?}, want {want:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kafka_streams_application_fails_over_with_apply() {
    let _clusters = crate::failover_mm2::CLUSTERS.lock().await;
    let t0 = Instant::now();
    let env = Env::load();
    let (primary, backup) = (
        env.var("PRIMARY").to_string(),
        env.var("BACKUP").to_string(),
    );
    let alias = env.var("SOURCE_ALIAS").to_string();
    let connect = |b: &str| {
        let mut c = ClientConfig::plaintext([b.to_string()]);
        c.request_timeout = Duration::from_secs(20);
        c.connection_setup_timeout = Duration::from_secs(10);
        c
    };
    let primary_client = KafkaClient::connect(connect(&primary))
        .await
        .expect("the primary answers");
    let backup_client = KafkaClient::connect(connect(&backup))
        .await
        .expect("the backup answers");
    let run = crate::support::unique_topic("s").replace('-', "");
    let run = &run[run.len() - 10..];
    // fo-*: the topics the failover MM2 replicates; fo-streams-* no other suite uses.
    let topic = format!("fo-streams-{run}");
    let replica = format!("{alias}.{topic}");
    let app = format!("fo-streams-app-{run}");
    let dir = tempfile::tempdir().unwrap();
    let classes = dir.path().join("classes");
    std::fs::create_dir_all(&classes).unwrap();
    let classpath = compile_streams_once(&classes);

    // 1. The topic, replicated; the application on the primary.
    create_topics(&env, &primary, &format!("{topic}:2"));
    wait_topic(&backup_client, &replica, Duration::from_secs(90)).await;
    let started = Instant::now();
    let out = streams_once(
        &classpath,
        &[
            "primary",
            &primary,
            &app,
            &topic,
            dir.path().join("state-primary").to_str().unwrap(),
            &csv(FIRST),
            &csv(TOTAL),
        ],
    )
    .output()
    .expect("run StreamsOnce primary");
    assert!(
        out.status.success(),
        "StreamsOnce primary: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "[streams] the application on the primary: {} ({:.1}s)",
        String::from_utf8_lossy(&out.stdout).trim(),
        started.elapsed().as_secs_f64()
    );
    // SEQ s is at offset s + s / 10 on the primary (a marker after every 10 records): the
    // next record, SEQ FIRST[p], at FIRST[p] + FIRST[p] / 10. Kafka Streams commits its
    // consumer's position there (past the last marker), not the last record's offset + 1.
    let source: BTreeMap<Tp, i64> = (0..2)
        .map(|p| ((topic.clone(), p as i32), FIRST[p] + FIRST[p] / TXN))
        .collect();
    assert_eq!(
        committed(&primary_client, &app).await,
        source,
        "the application's commits on the primary"
    );

    // 2. apply on the backup, waiting until the records after the commits are copied.
    crate::support::wait_for_group_coordinator(&backup_client, Duration::from_secs(60)).await;
    let undo1 = dir.path().join("undo-1.json");
    let base = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "apply",
            "--bootstrap-server",
            &backup,
            "--source",
            &alias,
            "--group",
            &app,
            "--from-source-offsets",
            "--precise",
            "--match-records",
            "--syncs-bootstrap-server",
            &primary,
            "--source-bootstrap-server",
            &primary,
            "-o",
            "json",
            "--no-progress",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let args = base(&[
        "--wait-until-copied",
        "60s",
        "--execute",
        "--undo-out",
        undo1.to_str().unwrap(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let doc = apply(&args, 0);
    let g = plan_group(&doc, &app);
    assert_eq!(g["group_type"], "streams", "{g}");
    assert_eq!(g["status"], "ready", "{g}");
    let mut translated: BTreeMap<Tp, i64> = BTreeMap::new();
    let mut sources: BTreeMap<Tp, i64> = BTreeMap::new();
    for p in g["partitions"].as_array().unwrap() {
        assert_eq!(p["verdict"], "commit", "{p}");
        let tp = (
            p["topic"].as_str().unwrap().to_string(),
            p["partition"].as_i64().unwrap() as i32,
        );
        translated.insert(tp.clone(), p["translated"].as_i64().unwrap());
        sources.insert(tp, p["upstream_offset"].as_i64().unwrap_or(-1));
        assert_eq!(p["offset"], p["translated"], "{p}");
    }
    for r in doc["result"]["groups"].as_array().unwrap() {
        assert_eq!(r["outcome"], "applied", "{r}");
    }
    wait_committed(&backup_client, &app, &translated).await;
    // MM2 checkpointed nothing of the group: it lists consumer groups only.
    let groups_file = dir.path().join("groups.txt");
    std::fs::write(&groups_file, format!("{app}\n")).unwrap();
    let cps = checkpoints(&backup, &groups_file);
    assert!(
        !cps.contains_key(&app),
        "MM2 checkpointed a Streams group: {cps:?}"
    );
    // The truth, by record: the replica's offset of the copy of the record at the committed
    // offset (SEQ = the upstream offset, FailoverClient's and StreamsOnce's values).
    let mut replica_log: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
    for l in java(&env, &["dump", "--bootstrap", &backup, "--topic", &replica]) {
        let pairs = l["offset_seq"].as_array().unwrap();
        replica_log.insert(
            l["partition"].as_i64().unwrap() as i32,
            pairs
                .chunks(2)
                .map(|c| (c[0].as_i64().unwrap(), c[1].as_i64().unwrap()))
                .collect(),
        );
    }
    let truth: BTreeMap<Tp, i64> = (0..2)
        .map(|p| {
            let at = replica_log[&(p as i32)]
                .iter()
                .find(|&&(_, seq)| seq == FIRST[p])
                .unwrap_or_else(|| panic!("no copy of {topic}-{p}@{}", FIRST[p]))
                .0;
            ((replica.clone(), p as i32), at)
        })
        .collect();
    assert_eq!(translated, truth, "apply's offsets vs the records");
    let upstream: BTreeMap<Tp, i64> = source
        .iter()
        .map(|((_, p), o)| ((replica.clone(), *p), *o))
        .collect();
    assert_eq!(
        sources, upstream,
        "the plan's upstream offsets: the primary's commits"
    );
    let replica_end: BTreeMap<Tp, i64> = replica_log
        .iter()
        .map(|(p, v)| ((replica.clone(), *p), v.last().map_or(0, |&(o, _)| o + 1)))
        .collect();
    eprintln!(
        "[streams] applied after {:.1}s: {translated:?}",
        t0.elapsed().as_secs_f64()
    );

    // 3. The same application on the backup, from the translated offsets.
    let last: [i64; 2] = [TOTAL[0] - 1, TOTAL[1] - 1];
    let backup_err = dir.path().join("streams-backup.err");
    let mut child = streams_once(
        &classpath,
        &[
            "backup",
            &backup,
            &app,
            &replica,
            dir.path().join("state-backup").to_str().unwrap(),
            &csv(last),
        ],
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    // To a file: an undrained pipe would block the JVM once its logs fill it.
    .stderr(std::fs::File::create(&backup_err).unwrap())
    .spawn()
    .expect("run StreamsOnce backup");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let Some(first_line) = lines.next().and_then(Result::ok) else {
        let status = child.wait().unwrap();
        panic!(
            "StreamsOnce backup printed nothing: {status:?}\n{}",
            std::fs::read_to_string(&backup_err).unwrap_or_default()
        )
    };
    let seen: Value = serde_json::from_str(&first_line).expect("StreamsOnce backup JSON");
    eprintln!(
        "[streams] the application on the backup: {first_line} ({:.1}s)",
        t0.elapsed().as_secs_f64()
    );
    let mut firsts: BTreeMap<Tp, (i64, String)> = BTreeMap::new();
    for p in 0..2i32 {
        let f = &seen["first"][p.to_string()];
        firsts.insert(
            (replica.clone(), p),
            (f[0].as_i64().unwrap(), f[1].as_str().unwrap().to_string()),
        );
        let tp = (replica.clone(), p);
        assert_eq!(
            seen["read"][p.to_string()].as_i64(),
            Some(replica_end[&tp] - translated[&tp]),
            "{tp:?}: read from the translated offset to the end, once"
        );
    }
    // The live application commits what it read: the replica's end.
    wait_committed(&backup_client, &app, &replica_end).await;

    // 4. apply while it runs: refused, nothing written.
    let before = committed_with_metadata(&backup_client, &app).await;
    let args = base(&["--execute"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = cli(&args);
    let refused: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let rg = plan_group(&refused, &app);
    let reason = rg["reason"].as_str().unwrap_or_default().to_string();
    assert_eq!(code, 3, "apply on a live Streams group: {err}\n{out}");
    assert_eq!(rg["status"], "refused", "{rg}");
    assert!(
        reason.starts_with("group is active on the target: a Kafka Streams group, state "),
        "{rg}"
    );
    let after = committed_with_metadata(&backup_client, &app).await;
    assert_eq!(after, before, "a refused apply writes nothing");
    eprintln!("[streams] refused while running (exit {code}): {reason}");

    // Stop the application: an empty Streams group whose topology reads the replica.
    writeln!(child.stdin.as_mut().unwrap()).unwrap();
    let closed = lines.next().and_then(Result::ok).unwrap_or_default();
    let status = child.wait().unwrap();
    assert!(
        status.success() && closed.contains("\"closed\":true"),
        "StreamsOnce backup: {status:?} {closed}"
    );

    // 5. The undo round trip: apply (a rewind to the translation) and its undo.
    let held = committed_with_metadata(&backup_client, &app).await;
    let undo2 = dir.path().join("undo-2.json");
    let args = base(&[
        "--execute",
        "--allow-rewind",
        "--undo-out",
        undo2.to_str().unwrap(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let doc = apply(&args, 0);
    let g = plan_group(&doc, &app);
    assert_eq!(g["group_type"], "streams", "{g}");
    assert_eq!(
        g["state"], "Empty",
        "an empty Streams group on the backup: {g}"
    );
    // Not "absent": the target holds the Streams group (and its offsets).
    assert_eq!(g["protocol"], Value::Null, "{g}");
    eprintln!(
        "[streams] the stopped application's group, planned: protocol {}, state {}",
        g["protocol"], g["state"]
    );
    wait_committed(&backup_client, &app, &translated).await;
    let (code, out, err) = cli(&[
        "apply",
        "--bootstrap-server",
        &backup,
        "--plan",
        undo2.to_str().unwrap(),
        "--execute",
        "-o",
        "json",
        "--no-progress",
    ]);
    assert_eq!(code, 0, "the undo: {err}\n{out}");
    let restored = committed_with_metadata(&backup_client, &app).await;
    assert_eq!(restored, held, "the undo restores offsets and metadata");
    eprintln!(
        "[streams] undo round trip: {:?} -> {translated:?} -> {:?}",
        held.iter().map(|(k, v)| (k, v.0)).collect::<Vec<_>>(),
        restored.iter().map(|(k, v)| (k, v.0)).collect::<Vec<_>>()
    );

    // 6. Failback: the application's offsets on the backup (the replica's end, where it
    //    stopped) back to the primary, record-matched, into the primary's empty Streams group.
    let (code, out, err) = cli(&[
        "failback",
        "--bootstrap-server",
        &primary,
        "--from-bootstrap-server",
        &backup,
        "--source",
        &alias,
        "--group",
        &app,
        "--match-records",
        "--execute",
        "-o",
        "json",
        "--no-progress",
    ]);
    assert_eq!(code, 0, "failback: {err}\n{out}");
    let done: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let fg = plan_group(&done, &app);
    assert_eq!(fg["group_type"], "streams", "{fg}");
    assert_eq!(
        fg["state"], "Empty",
        "the primary's stopped application: {fg}"
    );
    assert_eq!(fg["protocol"], Value::Null, "{fg}");
    // The backup's 200 and 150 are its log ends: no record after the last one read there, so
    // the primary's log end (SEQ 199 at 218, its marker at 219: 220; 165 for partition 1).
    let mut failback_rows: BTreeMap<i32, (i64, i64, i64)> = BTreeMap::new();
    for p in fg["partitions"].as_array().unwrap() {
        let n = p["partition"].as_i64().unwrap() as i32;
        let end = TOTAL[n as usize] + TOTAL[n as usize] / TXN;
        assert_eq!(p["rule"], "record-match", "{p}");
        assert_eq!(p["verdict"], "commit", "{p}");
        assert_eq!(p["from_offset"], replica_end[&(replica.clone(), n)], "{p}");
        assert_eq!(p["translated"], end, "{p}");
        failback_rows.insert(
            n,
            (
                p["from_offset"].as_i64().unwrap(),
                p["current"].as_i64().unwrap(),
                p["translated"].as_i64().unwrap(),
            ),
        );
    }
    for r in done["result"]["groups"].as_array().unwrap() {
        assert_eq!(r["outcome"], "applied", "{r}");
    }
    let back = committed(&primary_client, &app).await;
    let want: BTreeMap<Tp, i64> = (0..2)
        .map(|p| ((topic.clone(), p as i32), TOTAL[p] + TOTAL[p] / TXN))
        .collect();
    assert_eq!(back, want, "the primary after failback");
    println!(
        "{:<36} {:<8} {:>12} {:>18} {:>10} {:>14}",
        "FAILBACK PARTITION", "TYPE", "ON BACKUP", "PRIMARY BEFORE", "WRITTEN", "PRIMARY END"
    );
    for (n, (from, before, written)) in &failback_rows {
        println!(
            "{:<36} {:<8} {:>12} {:>18} {:>10} {:>14}",
            format!("{topic}-{n}"),
            "streams",
            from,
            before,
            written,
            TOTAL[*n as usize] + TOTAL[*n as usize] / TXN
        );
    }

    println!(
        "{:<44} {:<8} {:>7} {:>10} {:>6} {:>32} {:>8}",
        "PARTITION", "TYPE", "SOURCE", "TRANSLATED", "TRUTH", "FIRST READ ON BACKUP", "RE-READS"
    );
    for p in 0..2i32 {
        let tp = (replica.clone(), p);
        let (offset, value) = &firsts[&tp];
        assert_eq!(*offset, truth[&tp], "{tp:?}: first read on the backup");
        assert_eq!(
            value,
            &format!("{topic}|{p}|{}", FIRST[p as usize]),
            "{tp:?}"
        );
        let rereads = translated[&tp] - truth[&tp];
        assert_eq!(rereads, 0);
        println!(
            "{:<44} {:<8} {:>7} {:>10} {:>6} {:>32} {:>8}",
            format!("{}-{p}", tp.0),
            g["group_type"].as_str().unwrap(),
            sources[&tp],
            translated[&tp],
            truth[&tp],
            format!("{offset} ({value})"),
            rereads
        );
    }
    eprintln!(
        "[suite] streams_failover took {:?} (Kafka {}, MirrorMaker 2 {})",
        t0.elapsed(),
        env.var("KAFKA_VERSION"),
        env.var("MM2_VERSION")
    );
}
