//! A share group (KIP-932) failed over on real MirrorMaker 2 (issue 31), on the failover
//! suite's clusters (`harness/failover.sh`: two Kafka 4.4 and a dedicated MirrorMaker 2,
//! primary -> backup for `fo-*` topics).
//!
//! 1. On the primary a real `KafkaShareConsumer` (protocol-tests/java/ShareOnce.java) reads
//!    part of `fo-share-*` (written in batches of 30) from the earliest offset and acknowledges
//!    what it keeps; the rest of what it was given is released (delivered again). The start
//!    offset stops at the first batch not fully acknowledged: the acknowledged records of that
//!    batch are received again on the backup, as the book says.
//! 2. MirrorMaker 2 copies the topic and never checkpoints the share group (asserted).
//! 3. `translate --from-source-offsets --precise --match-records` translates its start offsets
//!    (DescribeShareGroupOffsets on the primary); `apply --execute --undo-out` sets them on the
//!    backup with AlterShareGroupOffsets, creating the share group there (read back; no classic
//!    group made of the id). The undo round trip deletes them again; applied once more, a share
//!    consumer on the backup receives first exactly the record the group had next on the
//!    primary. While it runs, apply refuses the live share group (read back).
//!
//! Printed per partition: type, source start offset, translated, truth by record (the SEQ of
//! the first record the backup's consumer received names its upstream offset), first offset
//! received on the backup.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mm2_offsets::client::{Coordinators, Deadline, KafkaClient, ReadOptions};
use mm2_offsets::records::{Batches, Scratch};
use serde_json::Value;

use crate::failover_mm2::{
    CLUSTERS, Env, checkpoints, cli, connect, create_topics, java, log_ends, plan_group, wait_topic,
};

const PER_PARTITION: i64 = 300;
const KEPT_ON_PRIMARY: usize = 250;
/// How many more the share consumer on the backup keeps (of the 350 left), before failback.
const KEPT_ON_BACKUP: i64 = 150;

/// The share group's start offsets on `client`'s cluster: partition -> offset (of `topic`).
async fn start_offsets(client: &KafkaClient, group: &str, topic: &str) -> BTreeMap<i32, i64> {
    let answer = client
        .fetch_share_group_offsets(
            &[group.to_string()],
            &Coordinators::new(),
            &Deadline::after(Duration::from_secs(20)),
        )
        .await
        .remove(group)
        .expect("an answer for the group");
    match answer {
        Ok(offsets) => offsets
            .into_iter()
            .filter(|((t, _), c)| t == topic && c.offset >= 0)
            .map(|((_, p), c)| (p, c.offset))
            .collect(),
        // No share group of that id: no start offsets.
        Err(e) if e.code() == Some(69) => BTreeMap::new(),
        Err(e) => panic!("DescribeShareGroupOffsets {group}: {e}"),
    }
}

/// ShareOnce's command line (through the harness script).
fn share_cmd(env: &Env, args: &[&str]) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg(env.var("CLIENT")).arg("share").args(args);
    cmd
}

/// ShareOnce's JSON lines: partition -> (first offset, first value, kept), and the total kept.
fn share_lines(stdout: &str) -> (BTreeMap<i64, (i64, String, i64)>, i64) {
    let mut per = BTreeMap::new();
    let mut kept = -1;
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        match v["partition"].as_i64() {
            Some(p) => {
                per.insert(
                    p,
                    (
                        v["first_offset"].as_i64().unwrap(),
                        v["first_value"].as_str().unwrap().to_string(),
                        v["kept"].as_i64().unwrap(),
                    ),
                );
            }
            None => kept = v["kept"].as_i64().unwrap(),
        }
    }
    (per, kept)
}

/// The SEQ of a FailoverClient value `TOPIC|PARTITION|SEQ`: its offset on the primary.
fn seq(value: &str) -> i64 {
    value.rsplit('|').next().unwrap().parse().unwrap()
}

fn apply(args: &[&str]) -> (i32, Value, String) {
    let (code, out, err) = cli(args);
    let doc = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("apply JSON ({e}), exit {code}: {out}\n{err}"));
    (code, doc, err)
}

fn result_group<'a>(doc: &'a Value, group: &str) -> &'a Value {
    doc["result"]["groups"]
        .as_array()
        .unwrap_or_else(|| panic!("no result in {doc}"))
        .iter()
        .find(|g| g["group"] == group)
        .unwrap_or_else(|| panic!("no {group} in the result {doc}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_group_fails_over_to_its_translated_start_offsets() {
    let _clusters = CLUSTERS.lock().await;
    let t0 = Instant::now();
    let env = Env::load();
    let (primary, backup) = (
        env.var("PRIMARY").to_string(),
        env.var("BACKUP").to_string(),
    );
    let unique = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let topic = format!("fo-share-{unique}");
    let replica = format!("primary.{topic}");
    let group = format!("share-{unique}");
    let (p_client, b_client) = (connect(&primary).await, connect(&backup).await);

    // 1. The topic, and a share consumer on the primary that keeps part of it.
    create_topics(&env, &primary, &format!("{topic}:2"));
    java(
        &env,
        &[
            "produce",
            "--bootstrap",
            &primary,
            "--topic",
            &topic,
            "--partitions",
            "2",
            "--per-partition",
            &PER_PARTITION.to_string(),
            // Ten flushed rounds: batches of 30 records. A share partition's start offset
            // moves only past a fully acknowledged batch, so one batch of 300 would keep it at
            // 0 however many of its records were acknowledged.
            "--rounds",
            "10",
        ],
    );
    let kept = KEPT_ON_PRIMARY.to_string();
    let out = share_cmd(
        &env,
        &[
            "--bootstrap",
            &primary,
            "--group",
            &group,
            "--topic",
            &topic,
            "--max",
            &kept,
            "--earliest",
            // Acquisitions of 30 records: the start offset moves past whole acquired batches.
            "--max-poll",
            "30",
            "--acquire-mode",
            "record_limit",
        ],
    )
    .output()
    .expect("run ShareOnce");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ShareOnce on the primary: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (on_primary, n) = share_lines(&stdout);
    assert_eq!(n, KEPT_ON_PRIMARY as i64, "{stdout}");
    for (p, (first, _, _)) in &on_primary {
        assert_eq!(*first, 0, "partition {p}: earliest");
    }
    let source = start_offsets(&p_client, &group, &topic).await;
    assert!(
        !source.is_empty(),
        "the share group has start offsets on the primary"
    );
    for (p, s) in &source {
        assert!((0..=PER_PARTITION).contains(s), "partition {p}: start {s}");
    }
    let total_start: i64 = source.values().sum();
    assert!(
        total_start <= KEPT_ON_PRIMARY as i64,
        "start offsets {source:?} past what was acknowledged"
    );
    eprintln!(
        "[share] primary consumed: {:.1}s",
        t0.elapsed().as_secs_f64()
    );

    // 2. Copied; never checkpointed (MM2 lists consumer groups only).
    wait_topic(&b_client, &replica, Duration::from_secs(90)).await;
    let dir = tempfile::tempdir().unwrap();
    let groups_file = dir.path().join("groups.txt");
    std::fs::write(&groups_file, format!("{group}\n")).unwrap();
    let copied_by = Instant::now() + Duration::from_secs(60);
    loop {
        let ends = log_ends(&b_client, &replica).await;
        if ends.len() == 2 && ends.values().all(|&e| e == PER_PARTITION) {
            break;
        }
        assert!(Instant::now() < copied_by, "{replica} not copied: {ends:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Several checkpoint intervals (1 s) after the group's commits.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let seen = checkpoints(&backup, &groups_file);
    assert!(
        !seen.contains_key(&group),
        "MirrorMaker 2 checkpointed the share group: {seen:?}"
    );

    // 3. Translated from the source's start offsets, through the syncs and the records.
    let base = [
        "--bootstrap-server",
        backup.as_str(),
        "--source",
        "primary",
        "--group",
        group.as_str(),
        "--precise",
        "--syncs-bootstrap-server",
        primary.as_str(),
        "--from-source-offsets",
        "--source-bootstrap-server",
        primary.as_str(),
        "--match-records",
        "--no-progress",
        "-o",
        "json",
    ];
    let mut args = vec!["translate"];
    args.extend(base);
    let (code, out, err) = cli(&args);
    assert_eq!(code, 0, "translate: {err}\n{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let mut translated: BTreeMap<i32, (String, i64, i64, String)> = BTreeMap::new();
    for o in doc["offsets"].as_array().unwrap() {
        assert_eq!(o["group"], group.as_str());
        assert_eq!(o["topic"], replica.as_str(), "{o}");
        translated.insert(
            o["partition"].as_i64().unwrap() as i32,
            (
                o["group_type"].as_str().unwrap().to_string(),
                o["upstream_offset"].as_i64().unwrap(),
                o["offset"].as_i64().unwrap(),
                o["rule"].as_str().unwrap_or("").to_string(),
            ),
        );
    }
    assert_eq!(
        translated.keys().collect::<Vec<_>>(),
        source.keys().collect::<Vec<_>>(),
        "{out}"
    );
    for (p, (t, upstream, _, _)) in &translated {
        assert_eq!(t, "share");
        assert_eq!(
            *upstream, source[p],
            "partition {p}: the source start offset"
        );
    }
    let wanted: BTreeMap<(String, i32), i64> = translated
        .iter()
        .map(|(p, (_, _, o, _))| ((replica.clone(), *p), *o))
        .collect();

    // 4. apply: dry run writes nothing; --execute creates the share group, read back.
    let mut dry = vec!["apply"];
    dry.extend(base);
    let saved = dir.path().join("plan.json");
    let mut save = dry.clone();
    save.extend(["--plan-out", saved.to_str().unwrap()]);
    let (code, doc, err) = apply(&save);
    assert_eq!(code, 0, "apply dry run: {err}\n{doc}");
    // The saved plan's dry run translates the share group's start offsets from the source
    // again (as its "source_offsets" member says) and re-checks every row against that:
    // unchanged on the primary, so every row stands. Without the source connection it is
    // refused whole: a checkpoint cannot vouch for it (MM2 writes none for a share group).
    let saved_text = std::fs::read_to_string(&saved).unwrap();
    let saved_doc: Value = serde_json::from_str(&saved_text).unwrap();
    assert_eq!(saved_doc["input"], "source-offsets", "{saved_text:.2000}");
    assert_eq!(
        saved_doc["source_offsets"]["match_records"], true,
        "{saved_text:.2000}"
    );
    let (code, rechecked, err) = apply(&[
        "apply",
        "--bootstrap-server",
        backup.as_str(),
        "--plan",
        saved.to_str().unwrap(),
        "--syncs-bootstrap-server",
        primary.as_str(),
        "--source-bootstrap-server",
        primary.as_str(),
        "--no-progress",
        "-o",
        "json",
    ]);
    assert_eq!(code, 0, "apply --plan (dry run): {err}\n{rechecked}");
    let again = plan_group(&rechecked, &group);
    assert_eq!(again["group_type"], "share", "{again}");
    assert_eq!(again["status"], "ready", "{again}");
    for p in again["partitions"].as_array().unwrap() {
        assert_eq!(p["verdict"], "commit", "{again}");
        assert!(p["difference"].is_null(), "{again}");
        let n = p["partition"].as_i64().unwrap() as i32;
        assert_eq!(p["offset"], wanted[&(replica.clone(), n)], "{again}");
    }
    let (code, _, err) = cli(&[
        "apply",
        "--bootstrap-server",
        backup.as_str(),
        "--plan",
        saved.to_str().unwrap(),
        "-o",
        "json",
    ]);
    assert_eq!(code, 2, "a source-offsets plan without the source: {err}");
    assert!(
        err.contains("pass the source cluster"),
        "a source-offsets plan without the source: {err}"
    );
    println!(
        "[share] saved plan re-checked from the source's offsets: {} row(s) stand; without the source connection: exit {code}",
        again["partitions"].as_array().unwrap().len()
    );
    assert!(
        start_offsets(&b_client, &group, &replica).await.is_empty(),
        "a re-check writes nothing"
    );
    let planned = plan_group(&doc, &group);
    assert_eq!(planned["status"], "ready", "{planned}");
    assert_eq!(planned["group_type"], "share", "{planned}");
    assert!(
        start_offsets(&b_client, &group, &replica).await.is_empty(),
        "a dry run writes nothing"
    );
    let undo1 = dir.path().join("undo1.jsonl");
    let mut exec = dry.clone();
    exec.extend(["--execute", "--undo-out", undo1.to_str().unwrap()]);
    let (code, doc, err) = apply(&exec);
    assert_eq!(code, 0, "apply --execute: {err}\n{doc}");
    assert_eq!(result_group(&doc, &group)["outcome"], "applied", "{doc}");
    let held = start_offsets(&b_client, &group, &replica).await;
    let want_held: BTreeMap<i32, i64> = wanted.iter().map(|((_, p), o)| (*p, *o)).collect();
    assert_eq!(held, want_held, "read back on the backup");
    // No consumer group was made of the id: OffsetFetch knows no group there.
    let listed = b_client
        .find_group_coordinators(
            std::slice::from_ref(&group),
            &Deadline::after(Duration::from_secs(20)),
        )
        .await
        .unwrap();
    let coordinator = listed[&group].as_ref().unwrap().clone();
    let types = b_client
        .list_groups(&coordinator, &[], &Deadline::after(Duration::from_secs(20)))
        .await
        .unwrap()
        .unwrap();
    let on_backup = types
        .iter()
        .find(|g| g.group_id == group)
        .expect("listed on the backup");
    assert_eq!(
        on_backup.group_type.as_deref(),
        Some("share"),
        "{on_backup:?}"
    );
    let undo_text = std::fs::read_to_string(&undo1).unwrap();
    assert!(
        undo_text.contains("\"group_type\":\"share\""),
        "{undo_text}"
    );
    eprintln!("[share] applied: {:.1}s", t0.elapsed().as_secs_f64());

    // verify: the backup's start offsets (DescribeShareGroupOffsets) against the primary's,
    // record by record: exact on every partition, typed share.
    let (code, out, err) = verify(&backup, &primary, &group);
    assert_eq!(code, 0, "verify after apply: {err}\n{out}");
    let verified: Value = serde_json::from_str(&out).unwrap();
    let rows = verified["rows"].as_array().unwrap();
    assert_eq!(rows.len(), want_held.len(), "{out}");
    for r in rows {
        assert_eq!(r["group_type"], "share", "{r}");
        assert_eq!(r["verdict"], "exact", "{r}");
        let n = r["partition"].as_i64().unwrap() as i32;
        assert_eq!(r["offset"], want_held[&n], "{r}");
        assert_eq!(r["source_offset"], source[&n], "{r}");
    }
    println!(
        "[share] verify after apply: {} partition(s) exact",
        rows.len()
    );

    // 5. Undo round trip: the run created the start offsets, so the undo deletes them.
    let plan_arg = [
        "apply",
        "--bootstrap-server",
        backup.as_str(),
        "--plan",
        undo1.to_str().unwrap(),
        "-o",
        "json",
    ];
    let (code, out, err) = cli(&plan_arg);
    assert_eq!(code, 0, "undo dry run: {err}\n{out}");
    assert!(out.contains("would-delete"), "{out}");
    assert_eq!(
        start_offsets(&b_client, &group, &replica).await,
        want_held,
        "an undo dry run writes nothing"
    );
    let mut undo_exec = plan_arg.to_vec();
    undo_exec.push("--execute");
    let (code, out, err) = cli(&undo_exec);
    assert_eq!(code, 0, "undo --execute: {err}\n{out}");
    assert!(out.contains("\"deleted\""), "{out}");
    assert!(
        start_offsets(&b_client, &group, &replica).await.is_empty(),
        "undone: no start offsets"
    );
    eprintln!("[share] undone: {:.1}s", t0.elapsed().as_secs_f64());

    // 6. Applied again; a share consumer on the backup; while it runs, apply refuses.
    let undo2 = dir.path().join("undo2.jsonl");
    let mut exec2 = dry.clone();
    exec2.extend(["--execute", "--undo-out", undo2.to_str().unwrap()]);
    let (code, doc, err) = apply(&exec2);
    assert_eq!(code, 0, "apply --execute again: {err}\n{doc}");
    assert_eq!(start_offsets(&b_client, &group, &replica).await, want_held);
    let remaining: i64 = want_held.values().map(|o| PER_PARTITION - o).sum();
    // Part of what is left, in acquisitions of 30, so that the backup's start offsets land
    // mid-log for the failback (step 7) to carry back.
    let remaining = remaining.min(KEPT_ON_BACKUP);
    let child = live_share_consumer(
        &env,
        &b_client,
        (&backup, &group, &replica),
        remaining,
        &["--max-poll", "30", "--acquire-mode", "record_limit"],
    )
    .await;
    let (code, doc, err) = apply(&dry);
    // Refused whatever its rows say (exit 3 only where a row had something to write).
    assert!(
        code == 0 || code == 3,
        "apply dry run on a live share group: {err}\n{doc}"
    );
    assert_eq!(plan_group(&doc, &group)["status"], "refused", "{doc}");
    let undo3 = dir.path().join("undo3.jsonl");
    let mut exec3 = dry.clone();
    exec3.extend(["--execute", "--undo-out", undo3.to_str().unwrap()]);
    let (code, doc, err) = apply(&exec3);
    assert_eq!(
        result_group(&doc, &group)["outcome"],
        "skipped",
        "nothing written to a live share group: {doc}"
    );
    let refused = plan_group(&doc, &group);
    let reason = refused["reason"].as_str().unwrap_or_default();
    eprintln!("[share] live group: exit {code}, {reason}");
    assert!(
        code == 0 || code == 3,
        "apply --execute on a live share group: {err}\n{doc}"
    );
    assert!(
        reason.starts_with("share group is active on the target"),
        "{refused}"
    );
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ShareOnce on the backup: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (on_backup, n) = share_lines(&stdout);
    assert_eq!(n, remaining, "{stdout}");

    println!(
        "[share] partition | type | acknowledged on the primary | source start | translated (rule) | truth by record | first received on the backup | acknowledged records received again"
    );
    let mut again = 0;
    for (p, (t, upstream, offset, rule)) in &translated {
        let (first, value, kept) =
            on_backup
                .get(&(*p as i64))
                .cloned()
                .unwrap_or((-1, String::new(), 0));
        let truth = if value.is_empty() { -1 } else { seq(&value) };
        let acked = on_primary.get(&(*p as i64)).map_or(0, |x| x.2);
        // Acknowledged past the start offset (in the batch it stopped at): received again.
        let redelivered = (acked - upstream).max(0);
        again += redelivered;
        println!(
            "[share] {replica}-{p} | {t} | {acked} | {upstream} | {offset} ({rule}) | upstream record {truth} | offset {first} ({kept} kept) | {redelivered}"
        );
        if *offset < PER_PARTITION {
            assert_eq!(
                first, *offset,
                "partition {p}: the backup's consumer starts at the translated offset"
            );
            assert_eq!(
                truth, *upstream,
                "partition {p}: and that is the record the group had next"
            );
        }
    }
    println!(
        "[share] {} partition(s), {again} acknowledged record(s) received again on the backup, none lost",
        translated.len()
    );
    eprintln!(
        "[share] consumed on the backup: {:.1}s",
        t0.elapsed().as_secs_f64()
    );

    // verify again: the backup's share group now stands past the primary's (its consumer
    // acknowledged more there), so each moved partition is `ahead` by the records between.
    let moved = start_offsets(&b_client, &group, &replica).await;
    let (code, out, err) = verify(&backup, &primary, &group);
    let verified: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let mut any_ahead = false;
    for r in verified["rows"].as_array().unwrap() {
        let n = r["partition"].as_i64().unwrap() as i32;
        assert_eq!(r["offset"], moved[&n], "{r}");
        let skipped = moved[&n] - want_held[&n];
        let verdict = if skipped > 0 { "ahead" } else { "exact" };
        any_ahead |= skipped > 0;
        assert_eq!(r["verdict"], verdict, "{r}");
        assert_eq!(r["records"], skipped, "{r}");
        println!(
            "[share] verify after the backup's consumer: {replica}-{n} start {} vs the primary's {} -> {verdict} {skipped}",
            moved[&n], want_held[&n]
        );
    }
    assert_eq!(code, if any_ahead { 1 } else { 0 }, "verify: {err}\n{out}");

    // 7. Failback: the backup's start offsets (DescribeShareGroupOffsets there) back to the
    //    primary's share group, record-matched, set with AlterShareGroupOffsets.
    failback_round_trip(
        &env,
        (&p_client, &b_client),
        (&topic, &replica, &group),
        &dir,
    )
    .await;
    eprintln!("[suite] share_failover took {:?}", t0.elapsed());
}

/// `mm2-offsets verify -o json` of `group` on the backup against the primary.
fn verify(backup: &str, primary: &str, group: &str) -> (i32, String, String) {
    cli(&[
        "verify",
        "--bootstrap-server",
        backup,
        "--source",
        "primary",
        "--group",
        group,
        "--syncs-bootstrap-server",
        primary,
        "--source-bootstrap-server",
        primary,
        "--no-progress",
        "-o",
        "json",
    ])
}

/// ShareOnce on `bootstrap`, keeping `max` records of `topic` for `group` (`extra` flags
/// beside), lingering 15 s as a member once done; returned once `client` sees the group with a
/// member (a JVM's start on a loaded machine: up to a minute).
// The child goes back to the caller, which waits for it (`wait_with_output`); the lint cannot
// see past the return.
#[allow(clippy::zombie_processes)]
async fn live_share_consumer(
    env: &Env,
    client: &KafkaClient,
    (bootstrap, group, topic): (&str, &str, &str),
    max: i64,
    extra: &[&str],
) -> std::process::Child {
    let max = max.to_string();
    let mut args = vec![
        "--bootstrap",
        bootstrap,
        "--group",
        group,
        "--topic",
        topic,
        "--max",
        &max,
        "--timeout-ms",
        "40000",
        "--linger-ms",
        "15000",
    ];
    args.extend(extra);
    let child = share_cmd(env, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn ShareOnce on {bootstrap}: {e}"));
    let live_by = Instant::now() + Duration::from_secs(60);
    loop {
        let state = client
            .describe_share_groups(
                &[group.to_string()],
                &Coordinators::new(),
                &Deadline::after(Duration::from_secs(10)),
            )
            .await
            .remove(group)
            .unwrap();
        if state.as_ref().is_ok_and(|s| !s.members.is_empty()) {
            return child;
        }
        assert!(
            Instant::now() < live_by,
            "no member of {group} on {bootstrap}: {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The value of the record at `offset` of `topic`-`partition`.
async fn value_at(client: &KafkaClient, topic: &str, partition: i32, offset: i64) -> String {
    let deadline = Deadline::after(Duration::from_secs(20));
    let info = client.describe_topic(topic, &deadline).await.unwrap();
    let chunk = client
        .fetch(&info, partition, offset, &ReadOptions::default())
        .await
        .unwrap_or_else(|e| panic!("fetch {topic}-{partition}@{offset}: {e}"));
    let mut scratch = Scratch::new();
    for batch in Batches::new(&chunk.records) {
        let batch = batch.unwrap();
        if batch.is_control() {
            continue;
        }
        for record in batch.records(&mut scratch).unwrap() {
            let record = record.unwrap();
            if record.offset == offset {
                return String::from_utf8(record.value.unwrap().to_vec()).unwrap();
            }
        }
    }
    panic!("no record at {topic}-{partition}@{offset}")
}

/// Step 7: the backup's share group (stopped, start offsets mid-log) failed back to the
/// primary's (empty, behind), then a share consumer on the primary receives first the record
/// the backup's would have; while it is a member, failback is refused.
async fn failback_round_trip(
    env: &Env,
    (p_client, b_client): (&KafkaClient, &KafkaClient),
    (topic, replica, group): (&str, &str, &str),
    dir: &tempfile::TempDir,
) {
    let t0 = Instant::now();
    let (primary, backup) = (env.var("PRIMARY"), env.var("BACKUP"));
    let on_backup = start_offsets(b_client, group, replica).await;
    let before = start_offsets(p_client, group, topic).await;
    // The truth by record: the SEQ of the record the backup's group has next (its upstream
    // offset); the log end where it has nothing next.
    let mut truth = BTreeMap::new();
    for (p, o) in &on_backup {
        let t = if *o < PER_PARTITION {
            seq(&value_at(b_client, replica, *p, *o).await)
        } else {
            PER_PARTITION
        };
        truth.insert(*p, t);
    }
    let undo = dir.path().join("failback-undo.jsonl");
    let failback = |extra: &[&str]| {
        let mut args = vec![
            "failback",
            "--bootstrap-server",
            primary,
            "--from-bootstrap-server",
            backup,
            "--source",
            "primary",
            "--group",
            group,
            "--match-records",
            "-o",
            "json",
            "--no-progress",
        ];
        args.extend(extra);
        apply(&args)
    };
    let (code, doc, err) = failback(&["--execute", "--undo-out", undo.to_str().unwrap()]);
    assert_eq!(code, 0, "failback --execute: {err}\n{doc}");
    let fg = plan_group(&doc, group);
    assert_eq!(fg["group_type"], "share", "{fg}");
    assert_eq!(result_group(&doc, group)["outcome"], "applied", "{doc}");
    let mut rows: BTreeMap<i32, (i64, String)> = BTreeMap::new();
    for p in fg["partitions"].as_array().unwrap() {
        let n = p["partition"].as_i64().unwrap() as i32;
        assert_eq!(p["from_offset"], on_backup[&n], "{p}");
        assert_eq!(
            p["translated"], truth[&n],
            "partition {n}: the truth by record: {p}"
        );
        rows.insert(
            n,
            (
                p["translated"].as_i64().unwrap(),
                p["rule"].as_str().unwrap_or("").to_string(),
            ),
        );
    }
    let after = start_offsets(p_client, group, topic).await;
    assert_eq!(after, truth, "the primary's start offsets read back");
    let undo_text = std::fs::read_to_string(&undo).unwrap();
    assert!(
        undo_text.contains("\"group_type\":\"share\""),
        "{undo_text}"
    );

    // A share consumer on the primary: a live member, so failback is refused; then what it
    // received first.
    let remaining: i64 = after.values().map(|o| PER_PARTITION - o).sum();
    let child = live_share_consumer(
        env,
        p_client,
        (primary, group, topic),
        remaining.min(60),
        &[],
    )
    .await;
    let undo_live = dir.path().join("failback-undo-live.jsonl");
    let (code, doc, err) = failback(&["--execute", "--undo-out", undo_live.to_str().unwrap()]);
    let refused = plan_group(&doc, group);
    let reason = refused["reason"].as_str().unwrap_or_default().to_string();
    assert!(
        reason.starts_with("share group is active on the target"),
        "failback to a live share group (exit {code}): {err}\n{refused}"
    );
    assert_ne!(
        result_group(&doc, group)["outcome"],
        "applied",
        "nothing written to a live share group: {doc}"
    );
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ShareOnce on the primary: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (first_on_primary, _) = share_lines(&stdout);
    println!(
        "[share] failback partition | type | start on the backup | primary before | failed back (rule) | truth by record | first received on the primary"
    );
    for (p, (offset, rule)) in &rows {
        let first = first_on_primary.get(&(*p as i64));
        println!(
            "[share] {topic}-{p} | share | {} | {} | {offset} ({rule}) | {} | {}",
            on_backup[p],
            before.get(p).map_or(-1, |o| *o),
            truth[p],
            first.map_or_else(
                || "none".to_string(),
                |(o, v, _)| format!("offset {o} ({v})")
            ),
        );
        if let Some((o, v, _)) = first {
            assert_eq!(*o, truth[p], "partition {p}: first received on the primary");
            assert_eq!(seq(v), truth[p], "partition {p}");
        }
    }
    assert!(
        !first_on_primary.is_empty() || remaining == 0,
        "the primary's consumer received nothing: {stdout}"
    );
    println!("[share] failback to a live share group refused: {reason} (exit {code})");
    eprintln!("[share] failback: {:.1}s", t0.elapsed().as_secs_f64());
}
