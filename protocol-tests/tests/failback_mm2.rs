//! The way back, end to end, on real MirrorMaker 2 (issue 22), on the failover suite's clusters
//! (`harness/failover.sh`: primary -> backup for `fo-*` topics, and the reverse flow backup ->
//! primary for topics local to the backup).
//!
//! 1. On the primary: `O` (2 partitions, written in one burst, so MM2's offset syncs are
//!    sparse), `X` (transactional: markers, and aborted transactions that MM2 copies as plain
//!    records) and `C` (MM2 killed with SIGKILL while it copies it, then started again: a
//!    restart that re-copies records). Six groups (classic and KIP-848) consume to different
//!    positions with the Java consumer.
//! 2. Failover: `apply --execute` on the backup; new data is written to `N`, a topic of the
//!    backup's own, which the reverse flow copies to the primary as `backup.N`; the groups
//!    consume on the backup (the remote topics and `N`) to new positions.
//! 3. Failback: `failback` (dry run, then `--execute --undo-out`) commits on the primary; the
//!    groups read the primary again from there with the Java consumer.
//!
//! Per group and partition the suite prints and asserts: the group's offset on the backup, the
//! failback offset by the syncs alone (safe) and sharpened (exact where the primary's records
//! prove a one-for-one stretch), the truth (the first record the group never processed, from
//! both clusters' logs), and the re-reads. No record is lost; every answer is at or before the
//! truth; an exact answer is the record the group meets next on the backup.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use mm2_offsets::client::{Deadline, KafkaClient};
use mm2_offsets::failback::{ReverseIndex, ReverseIndexBuilder};
use mm2_offsets::record_match::reverse::{
    ReverseMatch, ReverseRow, ReverseUnmatched, match_reverse,
};
use mm2_offsets::record_match::{MatchOptions, MatchStats};
use serde_json::Value;

use crate::failover_mm2::{
    CLUSTERS, Env, Tp, checkpoints_of, cli, connect, create_topics, java, log_ends, read_to_end,
    wait_topic,
};

const GROUPS: usize = 6;
const O_PER_PARTITION: i64 = 3000;
const X_RECORDS: i64 = 1500;
const C_RECORDS: i64 = 3000;
const N_PER_PARTITION: i64 = 1000;

fn key(tp: &Tp) -> String {
    format!("{}/{}", tp.0, tp.1)
}

/// Waits until `topic`'s log ends reach `at_least` on every partition and stay put for a second.
async fn wait_copied(client: &KafkaClient, topic: &str, at_least: i64, within: Duration) {
    let give_up = Instant::now() + within;
    let mut last = BTreeMap::new();
    loop {
        if describe_ok(client, topic).await {
            let ends = log_ends(client, topic).await;
            if ends.values().all(|&e| e >= at_least) && ends == last {
                return;
            }
            last = ends;
        }
        assert!(
            Instant::now() < give_up,
            "{topic} not copied within {within:?}: {last:?}"
        );
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
}

async fn describe_ok(client: &KafkaClient, topic: &str) -> bool {
    client
        .describe_topic(topic, &Deadline::after(Duration::from_secs(10)))
        .await
        .is_ok()
}

/// Whether a plan row says its record-match rests on the residual assumption.
fn r_assumes(row: Option<&Value>) -> bool {
    row.is_some_and(|r| r["assumes_history"] == true)
}

/// Every group's committed offsets: group -> tp -> offset.
async fn committed(client: &KafkaClient, groups: &[String]) -> BTreeMap<String, BTreeMap<Tp, i64>> {
    let deadline = Deadline::after(Duration::from_secs(30));
    let coordinators = client
        .find_group_coordinators(groups, &deadline)
        .await
        .unwrap();
    let mut out = BTreeMap::new();
    for g in groups {
        let c = coordinators[g].as_ref().unwrap();
        let offsets = client
            .fetch_group_offsets(c, std::slice::from_ref(g), &deadline)
            .await
            .unwrap()
            .remove(g)
            .unwrap()
            .unwrap();
        out.insert(
            g.clone(),
            offsets
                .into_iter()
                .filter(|(_, c)| c.offset >= 0)
                .map(|(k, c)| (k, c.offset))
                .collect(),
        );
    }
    out
}

/// `dump` of topics: tp -> [(offset, seq)] in offset order.
fn dump(env: &Env, bootstrap: &str, topics: &[&str]) -> BTreeMap<Tp, Vec<(i64, i64)>> {
    let mut out = BTreeMap::new();
    for l in java(
        env,
        &[
            "dump",
            "--bootstrap",
            bootstrap,
            "--topic",
            &topics.join(","),
        ],
    ) {
        let pairs = l["offset_seq"].as_array().unwrap();
        let v = pairs
            .chunks(2)
            .map(|c| (c[0].as_i64().unwrap(), c[1].as_i64().unwrap()))
            .collect();
        out.insert(
            (
                l["topic"].as_str().unwrap().to_string(),
                l["partition"].as_i64().unwrap() as i32,
            ),
            v,
        );
    }
    out
}

/// One line of a consume-to spec: group, protocol, topics, stops.
type SpecLine<'a> = (String, &'a str, Vec<String>, BTreeMap<Tp, i64>);

/// Writes a consume-to spec: `GROUP PROTOCOL TOPICS STOPS` per group.
fn spec(dir: &Path, name: &str, lines: &[SpecLine<'_>]) -> String {
    let path = dir.join(name);
    let text: Vec<String> = lines
        .iter()
        .map(|(g, protocol, topics, stops)| {
            let stops: Vec<String> = stops
                .iter()
                .map(|(tp, s)| format!("{}={s}", key(tp)))
                .collect();
            let stops = if stops.is_empty() {
                "-".to_string()
            } else {
                stops.join(",")
            };
            format!("{g} {protocol} {} {stops}", topics.join(","))
        })
        .collect();
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
    path.to_str().unwrap().to_string()
}

/// Polls `source`'s checkpoints until every (group, tp) committed in `want` has one whose
/// upstream offset is the committed one or none (a commit below MM2's oldest sync gets none),
/// those in `must` (commits at the log end, which MM2 always translates) have one, and nothing
/// changed for three polls.
async fn settle(
    bootstrap: &str,
    source: &str,
    groups_file: &Path,
    want: &BTreeMap<(String, Tp), i64>,
    must: &BTreeSet<(String, Tp)>,
) {
    let started = Instant::now();
    let (mut last, mut unchanged) = (None, 0);
    loop {
        let cps = checkpoints_of(bootstrap, source, groups_file);
        let have = |g: &String, tp: &Tp| cps.get(g).and_then(|m| m.get(tp)).cloned();
        let stale: Vec<_> = want
            .iter()
            .filter(|((g, tp), u)| {
                have(g, tp).is_some_and(|c| c.1 != **u)
                    || (must.contains(&(g.clone(), tp.clone())) && have(g, tp).is_none())
            })
            .collect();
        unchanged = if last.as_ref() == Some(&cps) {
            unchanged + 1
        } else {
            0
        };
        last = Some(cps);
        if stale.is_empty() && unchanged >= 3 {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{source}'s checkpoints did not settle: {stale:?}"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// FailoverClient `produce` in a thread of its own: `per_partition` records on each of
/// `partitions` partitions of `topic`, in `rounds` flushed rounds.
fn spawn_produce(
    env: &Env,
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    per_partition: i64,
    rounds: u32,
) -> std::thread::JoinHandle<std::process::Output> {
    let client = env.var("CLIENT").to_string();
    let args: Vec<String> = [
        "client",
        "produce",
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--partitions",
        &partitions.to_string(),
        "--per-partition",
        &per_partition.to_string(),
        "--rounds",
        &rounds.to_string(),
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    std::thread::spawn(move || {
        Command::new("bash")
            .arg(&client)
            .args(&args)
            .output()
            .unwrap()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failback_round_trip_on_real_mirrormaker2() {
    let _clusters = CLUSTERS.lock().await;
    let t0 = Instant::now();
    let step = |what: &str| eprintln!("[failback] {what} after {:.1}s", t0.elapsed().as_secs_f64());
    let env = Env::load();
    let (primary, backup) = (
        env.var("PRIMARY").to_string(),
        env.var("BACKUP").to_string(),
    );
    let (p_client, b_client) = (connect(&primary).await, connect(&backup).await);
    let run = crate::support::unique_topic("r").replace('-', "");
    let run = run[run.len() - 10..].to_string();
    let (o, x, c, n) = (
        format!("fo-fb-o-{run}"),
        format!("fo-fb-x-{run}"),
        format!("fo-fb-c-{run}"),
        format!("fo-fb-n-{run}"),
    );
    let remote = |t: &str| format!("primary.{t}");
    let replica = |t: &str| format!("backup.{t}");
    let dir = tempfile::tempdir().unwrap();

    // 1. The primary's topics, copied to the backup.
    create_topics(&env, &primary, &format!("{o}:2,{x}:1,{c}:1"));
    for t in [&o, &x, &c] {
        wait_topic(&b_client, &remote(t), Duration::from_secs(90)).await;
    }
    step("topics replicated");
    let produce_o = spawn_produce(&env, &primary, &o, 2, O_PER_PARTITION, 1);
    java(
        &env,
        &[
            "produce-tx",
            "--bootstrap",
            &primary,
            "--topic",
            &x,
            "--records",
            &X_RECORDS.to_string(),
            "--txn-size",
            "50",
            "--abort-every",
            "4",
        ],
    );
    let out = produce_o.join().unwrap();
    assert!(
        out.status.success(),
        "produce {o}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_copied(
        &b_client,
        &remote(&o),
        O_PER_PARTITION,
        Duration::from_secs(60),
    )
    .await;
    // The committed records at least: MM2 copies aborted ones too only under read_uncommitted.
    let committed_x = X_RECORDS - X_RECORDS / 50 / 4 * 50;
    wait_copied(&b_client, &remote(&x), committed_x, Duration::from_secs(60)).await;
    step("O and X copied");

    // C while MM2 copies it: kill MM2 once the replica has grown 600 records, start it again.
    let produce_c = spawn_produce(&env, &primary, &c, 1, C_RECORDS, 15);
    let give_up = Instant::now() + Duration::from_secs(60);
    while log_ends(&b_client, &remote(&c)).await[&0] < 600 {
        assert!(
            Instant::now() < give_up,
            "{} never reached 600 records",
            remote(&c)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let killed_at = log_ends(&b_client, &remote(&c)).await[&0];
    let status = Command::new("bash")
        .arg(env.var("CLIENT"))
        .arg("mm2-kill")
        .status()
        .unwrap();
    assert!(status.success(), "failover.sh mm2-kill");
    step(&format!(
        "MM2 killed at {killed_at} records of {}",
        remote(&c)
    ));
    let status = Command::new("bash")
        .arg(env.var("CLIENT"))
        .arg("mm2-start")
        .status()
        .unwrap();
    assert!(status.success(), "failover.sh mm2-start");
    step("MM2 started again");
    let out = produce_c.join().unwrap();
    assert!(
        out.status.success(),
        "produce {c}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_copied(&b_client, &remote(&c), C_RECORDS, Duration::from_secs(120)).await;
    step("C copied");

    // 2. The groups on the primary.
    let x_end = log_ends(&p_client, &x).await[&0];
    let ids: Vec<String> = (0..GROUPS).map(|i| format!("fo-fb-{run}-g{i}")).collect();
    let protocol = |i: usize| {
        if i.is_multiple_of(2) {
            "classic"
        } else {
            "consumer"
        }
    };
    let tp = |t: &str, p: i32| (t.to_string(), p);
    let primary_stops: Vec<BTreeMap<Tp, i64>> = (0..GROUPS)
        .map(|i| {
            let pick = |values: [i64; GROUPS]| values[i];
            let mut m = BTreeMap::new();
            m.insert(tp(&o, 0), pick([3000, 137, 1517, 2500, 10, 2999]));
            m.insert(tp(&o, 1), pick([3000, 1000, 40, 2000, 2999, 1]));
            m.insert(
                tp(&x, 0),
                pick([x_end, x_end / 10, x_end / 2, x_end * 3 / 4, 0, x_end / 3]),
            );
            m.insert(tp(&c, 0), pick([3000, 300, 1500, 2222, 700, 2900]));
            m.retain(|_, s| *s > 0);
            m
        })
        .collect();
    let topics_p = vec![o.clone(), x.clone(), c.clone()];
    let lines: Vec<_> = (0..GROUPS)
        .map(|i| {
            (
                ids[i].clone(),
                protocol(i),
                topics_p.clone(),
                primary_stops[i].clone(),
            )
        })
        .collect();
    java(
        &env,
        &[
            "consume-to",
            "--bootstrap",
            &primary,
            "--spec",
            &spec(dir.path(), "p.spec", &lines),
        ],
    );
    let on_primary = committed(&p_client, &ids).await;
    for (i, g) in ids.iter().enumerate() {
        assert_eq!(on_primary[g], primary_stops[i], "{g} on the primary");
    }
    step("groups consumed on the primary");

    // 3. Failover: settled checkpoints, then apply on the backup.
    let groups_file = dir.path().join("groups.txt");
    std::fs::write(&groups_file, ids.join("\n") + "\n").unwrap();
    let groups_path = groups_file.to_str().unwrap().to_string();
    let want: BTreeMap<(String, Tp), i64> = ids
        .iter()
        .zip(&primary_stops)
        .flat_map(|(g, stops)| {
            stops
                .iter()
                .map(move |(tp, s)| ((g.clone(), (remote(&tp.0), tp.1)), *s))
        })
        .collect();
    // The caught-up commits (at the log end) are translated by MM2 whatever its sync store.
    let mut ends_p: BTreeMap<Tp, i64> = BTreeMap::new();
    for t in [&o, &x, &c] {
        for (p, e) in log_ends(&p_client, t).await {
            ends_p.insert((t.to_string(), p), e);
        }
    }
    let must: BTreeSet<(String, Tp)> = ids
        .iter()
        .zip(&primary_stops)
        .flat_map(|(g, stops)| {
            stops
                .iter()
                .filter(|(tp, s)| ends_p.get(*tp) == Some(*s))
                .map(move |(tp, _)| (g.clone(), (remote(&tp.0), tp.1)))
        })
        .collect();
    assert!(!must.is_empty());
    settle(&backup, "primary", &groups_file, &want, &must).await;
    crate::support::wait_for_group_coordinator(&b_client, Duration::from_secs(60)).await;
    let (code, out, err) = cli(&[
        "apply",
        "--bootstrap-server",
        &backup,
        "--source",
        "primary",
        "--groups-file",
        &groups_path,
        "--execute",
        "-o",
        "json",
        "--no-progress",
    ]);
    assert_eq!(code, 0, "apply --execute: {err}\n{out}");
    let applied = committed(&b_client, &ids).await;
    step("failover applied");

    // 4. New data on the backup (copied back by the reverse flow), and the groups on the backup.
    create_topics(&env, &backup, &format!("{n}:2"));
    wait_topic(&p_client, &replica(&n), Duration::from_secs(90)).await;
    java(
        &env,
        &[
            "produce",
            "--bootstrap",
            &backup,
            "--topic",
            &n,
            "--partitions",
            "2",
            "--per-partition",
            &N_PER_PARTITION.to_string(),
            "--rounds",
            "2",
        ],
    );
    let mut b_ends: BTreeMap<Tp, i64> = BTreeMap::new();
    for t in [remote(&o), remote(&x), remote(&c)] {
        for (p, e) in log_ends(&b_client, &t).await {
            b_ends.insert((t.clone(), p), e);
        }
    }
    let fraction = [1.0, 0.1, 0.5, 0.0, 0.9, 0.33];
    let backup_stops: Vec<BTreeMap<Tp, i64>> = (0..GROUPS)
        .map(|i| {
            let mut m = BTreeMap::new();
            for (btp, &end) in &b_ends {
                let from = applied[&ids[i]].get(btp).copied().unwrap_or(0);
                let stop = from + ((end - from) as f64 * fraction[i]) as i64;
                if stop > from {
                    m.insert(btp.clone(), stop);
                }
            }
            let n_stops = [
                [1000, 1000],
                [100, 0],
                [500, 501],
                [0, 0],
                [999, 1],
                [250, 750],
            ][i];
            for (p, s) in n_stops.into_iter().enumerate() {
                if s > 0 {
                    m.insert(tp(&n, p as i32), s);
                }
            }
            m
        })
        .collect();
    let topics_b = vec![remote(&o), remote(&x), remote(&c), n.clone()];
    let lines: Vec<_> = (0..GROUPS)
        .map(|i| {
            (
                ids[i].clone(),
                protocol(i),
                topics_b.clone(),
                backup_stops[i].clone(),
            )
        })
        .collect();
    java(
        &env,
        &[
            "consume-to",
            "--bootstrap",
            &backup,
            "--spec",
            &spec(dir.path(), "b.spec", &lines),
        ],
    );
    let on_backup = committed(&b_client, &ids).await;
    step("groups consumed on the backup");

    // 5. The reverse flow has copied N and checkpointed the groups on it.
    wait_copied(
        &p_client,
        &replica(&n),
        N_PER_PARTITION,
        Duration::from_secs(90),
    )
    .await;
    let want_reverse: BTreeMap<(String, Tp), i64> = on_backup
        .iter()
        .flat_map(|(g, m)| {
            m.iter()
                .filter(|(tp, _)| tp.0 == n)
                .map(move |(tp, &d)| ((g.clone(), (replica(&tp.0), tp.1)), d))
        })
        .collect();
    let must_reverse: BTreeSet<(String, Tp)> = want_reverse
        .iter()
        .filter(|(_, d)| **d == N_PER_PARTITION)
        .map(|(k, _)| k.clone())
        .collect();
    assert!(!must_reverse.is_empty());
    settle(
        &primary,
        "backup",
        &groups_file,
        &want_reverse,
        &must_reverse,
    )
    .await;
    step("reverse checkpoints settled");

    // 6. Failback: dry run (the syncs and the stretch proofs), then with record matching, and
    // execute that with an undo file.
    let undo = dir.path().join("undo.json");
    let base = vec![
        "failback".to_string(),
        "--bootstrap-server".into(),
        primary.clone(),
        "--from-bootstrap-server".into(),
        backup.clone(),
        "--source".into(),
        "primary".into(),
        "--groups-file".into(),
        groups_path.clone(),
        "-o".into(),
        "json".into(),
    ];
    let args: Vec<&str> = base.iter().map(String::as_str).collect();
    let (code, out, err) = cli(&args);
    assert!(code == 0 || code == 3, "failback dry run: {err}\n{out}");
    let dry: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(dry["executed"], false);
    assert_eq!(
        committed(&p_client, &ids).await,
        on_primary,
        "a dry run writes nothing"
    );
    let mut exec = args.clone();
    exec.extend([
        "--match-records",
        "--execute",
        "--undo-out",
        undo.to_str().unwrap(),
    ]);
    let (code, out, err) = cli(&exec);
    assert!(
        code == 0 || code == 3,
        "failback --match-records --execute: {err}\n{out}"
    );
    let done: Value = serde_json::from_str(&out).unwrap();
    eprintln!("{err}");
    for r in done["result"]["groups"].as_array().unwrap() {
        assert!(
            r["outcome"] == "applied" || r["outcome"] == "nothing-to-do",
            "{r}"
        );
    }
    let untranslated = done["untranslated"].as_array().unwrap();
    let after = committed(&p_client, &ids).await;
    step("failback executed");

    // 7. The groups read the primary again, from where failback put them.
    let topics_again = [o.clone(), x.clone(), c.clone(), replica(&n)];
    let lines: Vec<String> = ids
        .iter()
        .enumerate()
        .map(|(i, g)| format!("{g} {} {}", protocol(i), topics_again.join(",")))
        .collect();
    let again_spec = dir.path().join("again.spec");
    std::fs::write(&again_spec, lines.join("\n") + "\n").unwrap();
    let read = read_to_end(&env, &primary, &again_spec);
    let backup_log = dump(&env, &backup, &[&remote(&o), &remote(&x), &remote(&c)]);
    let mut primary_log = dump(&env, &primary, &[&o, &x, &c, &replica(&n)]);
    let replica_log: BTreeMap<Tp, Vec<(i64, i64)>> = (0..2)
        .map(|p| {
            let rtp = tp(&replica(&n), p);
            let log = primary_log.remove(&rtp).unwrap();
            (rtp, log)
        })
        .collect();
    step("read again on the primary");

    // 8. Per group and partition: processed, truth, answers, re-reads.
    let plan_rows = |doc: &Value| -> BTreeMap<(String, Tp), Value> {
        doc["plan"]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| {
                let group = g["group"].as_str().unwrap().to_string();
                g["partitions"].as_array().unwrap().iter().map(move |p| {
                    (
                        (
                            group.clone(),
                            (
                                p["topic"].as_str().unwrap().to_string(),
                                p["partition"].as_i64().unwrap() as i32,
                            ),
                        ),
                        p.clone(),
                    )
                })
            })
            .collect()
    };
    // `rows`: with record matching (what was executed); `stretched`: the dry run without it.
    let rows = plan_rows(&done);
    let stretched = plan_rows(&dry);
    // Keyed by the topic on the backup.
    let dry_untranslated: BTreeMap<(String, Tp), String> = dry["untranslated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                (
                    u["group"].as_str().unwrap().to_string(),
                    (
                        u["from_topic"].as_str().unwrap().to_string(),
                        u["partition"].as_i64().unwrap() as i32,
                    ),
                ),
                u["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    println!(
        "{:<22} {:<26} {:>6} {:>6} {:>7} {:>6} {:>6} {:>6} {:>26} {:>6} {:>6} {:>7} {:>7} {:>8} {:>8}",
        "GROUP",
        "PARTITION (PRIMARY)",
        "P0",
        "APPLY",
        "BACKUP",
        "SAFE",
        "EXACT",
        "MATCH",
        "RULE (--match-records)",
        "TRUTH",
        "FINAL",
        "REREAD",
        "R(SAFE)",
        "R(EXACT)",
        "R(MATCH)"
    );
    let (mut total_rereads, mut total_safe_rereads, mut exact_rows, mut rows_seen) = (0, 0, 0, 0);
    let (mut matched_rows, mut assumed_rows, mut stretch_rereads, mut match_rereads) = (0, 0, 0, 0);
    let mut unmatched: BTreeMap<String, usize> = BTreeMap::new();
    let mut not_copied = 0;
    let mut per_group: BTreeMap<String, i64> = BTreeMap::new();
    for (i, g) in ids.iter().enumerate() {
        for (ptp, plog) in &primary_log {
            let btp = (remote(&ptp.0), ptp.1);
            let seq_to_offset: BTreeMap<i64, i64> =
                plog.iter().map(|&(off, seq)| (seq, off)).collect();
            let p0 = primary_stops[i].get(ptp).copied().unwrap_or(0);
            let start = applied[g].get(&btp).copied().unwrap_or(0);
            let d = on_backup[g].get(&btp).copied();
            // Processed: the primary's records below P0, and the backup's from the start to D.
            let mut processed: BTreeSet<i64> = plog
                .iter()
                .filter(|(off, _)| *off < p0)
                .map(|&(off, _)| off)
                .collect();
            if let Some(d) = d {
                for &(boff, seq) in &backup_log[&btp] {
                    if boff >= start && boff < d {
                        processed.insert(seq_to_offset[&seq]);
                    }
                }
            }
            // The records MM2 delivered (and copied): under read_committed, not the aborted ones.
            let copied: BTreeSet<i64> = backup_log[&btp]
                .iter()
                .map(|&(_, seq)| seq_to_offset[&seq])
                .collect();
            not_copied += plog.len() - copied.len();
            let end = log_ends(&p_client, &ptp.0).await[&ptp.1];
            let truth = copied
                .iter()
                .copied()
                .find(|off| !processed.contains(off))
                .unwrap_or(end);
            let final_offset = after[g].get(ptp).copied();
            let rereads_from = |x: i64| processed.iter().filter(|&&off| off >= x).count() as i64;
            // What the group read again on the primary.
            let seen = &read[g][key(ptp)];
            let seqs: BTreeSet<i64> = seen["seqs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect();
            let read_offsets: BTreeSet<i64> = seqs.iter().map(|s| seq_to_offset[s]).collect();
            for &off in &copied {
                assert!(
                    processed.contains(&off) || read_offsets.contains(&off),
                    "{g} {ptp:?}: record at {off} lost (P0 {p0}, applied {start}, backup {d:?}, truth {truth}, final {final_offset:?}); with records {}; dry run {}",
                    rows.get(&(g.clone(), ptp.clone()))
                        .map_or("-".into(), Value::to_string),
                    stretched
                        .get(&(g.clone(), ptp.clone()))
                        .map_or("-".into(), Value::to_string),
                );
            }
            let rereads = read_offsets
                .iter()
                .filter(|off| processed.contains(off))
                .count() as i64;
            if let Some(f) = final_offset {
                assert!(
                    f <= truth,
                    "{g} {ptp:?}: committed {f} is past the truth {truth}; with records {}",
                    rows.get(&(g.clone(), ptp.clone()))
                        .map_or("-".into(), Value::to_string),
                );
                assert_eq!(
                    rereads,
                    rereads_from(f),
                    "{g} {ptp:?}: re-reads vs the committed offset"
                );
            }
            let row = rows.get(&(g.clone(), ptp.clone()));
            let key = (g.clone(), ptp.clone());
            let stretch = stretched
                .get(&key)
                .map_or(-1, |r| r["translated"].as_i64().unwrap());
            let (safe, best, rule, why) = match row {
                Some(r) => (
                    r["safe_offset"].as_i64().unwrap(),
                    r["translated"].as_i64().unwrap(),
                    r["rule"].as_str().unwrap().to_string(),
                    r["unmatched"].as_str().map(str::to_string),
                ),
                None => (-1, -1, "-".to_string(), None),
            };
            if row.is_some() {
                rows_seen += 1;
                if stretch < 0 {
                    // Below the first sync MM2 kept for the partition (it drops a partition's
                    // first syncs when many are in flight): the syncs alone cannot fail the row
                    // back, and only the records can, read from the log start.
                    let why_dry = dry_untranslated
                        .get(&(g.clone(), btp.clone()))
                        .map_or("not in the dry run at all", String::as_str);
                    assert_eq!(
                        (why_dry, rule.as_str()),
                        ("no-sync", "record-match"),
                        "{g} {ptp:?}: no answer from the syncs alone, and {rule} with records"
                    );
                }
                let stretch = if stretch < 0 { safe } else { stretch };
                assert!(
                    safe <= stretch && stretch <= best && best <= truth,
                    "{g} {ptp:?}: safe {safe}, exact {stretch}, matched {best}, truth {truth}"
                );
                if rule == "exact-sync" || rule == "interpolated" {
                    exact_rows += 1;
                    // The claim: the group's next record on the backup is a copy of this one.
                    let at_d = backup_log[&btp]
                        .iter()
                        .find(|&&(boff, _)| boff == d.unwrap());
                    assert_eq!(
                        at_d.map(|&(_, seq)| seq_to_offset[&seq]),
                        Some(best),
                        "{g} {ptp:?} {rule}"
                    );
                }
                if rule == "record-match" {
                    // The claim: the first record the group has not read, on either cluster.
                    // Below P0 the plan keeps P0 (no rewind), so where the group resumes is
                    // the first record at or after the greater of the two: the truth.
                    exact_rows += 1;
                    matched_rows += 1;
                    let resumes = copied
                        .iter()
                        .copied()
                        .find(|&o| o >= best.max(p0))
                        .unwrap_or(end);
                    assert_eq!(
                        resumes, truth,
                        "{g} {ptp:?}: record-match {best} (P0 {p0}) resumes at {resumes}, the truth is {truth}"
                    );
                    if best >= p0 {
                        assert_eq!(best, truth, "{g} {ptp:?}: record-match above P0");
                    }
                    if r_assumes(row) {
                        assumed_rows += 1;
                    }
                }
                if let Some(why) = &why {
                    *unmatched.entry(why.clone()).or_default() += 1;
                }
                total_safe_rereads += rereads_from(safe);
                stretch_rereads += rereads_from(stretch);
                match_rereads += rereads_from(best);
            }
            total_rereads += rereads;
            *per_group.entry(g.clone()).or_insert(0) += rereads;
            let or_dash = |v: i64, f: &dyn Fn(i64) -> String| {
                if v >= 0 { f(v) } else { "-".to_string() }
            };
            let own = |v: i64| v.to_string();
            let rereads_of = |v: i64| rereads_from(v).to_string();
            println!(
                "{:<22} {:<26} {:>6} {:>6} {:>7} {:>6} {:>6} {:>6} {:>26} {:>6} {:>6} {:>7} {:>7} {:>8} {:>8}",
                g,
                format!("{}-{}", ptp.0, ptp.1),
                p0,
                applied[g].get(&btp).map_or("-".into(), |a| a.to_string()),
                d.map_or("-".into(), |d| d.to_string()),
                or_dash(safe, &own),
                or_dash(stretch, &own),
                or_dash(best, &own),
                match &why {
                    Some(why) => format!("{rule} ({why})"),
                    None => rule.clone(),
                },
                truth,
                final_offset.map_or("-".into(), |f| f.to_string()),
                rereads,
                or_dash(safe, &rereads_of),
                or_dash(stretch, &rereads_of),
                or_dash(best, &rereads_of),
            );
        }
        // N, the backup's own topic: failed back from the reverse flow's checkpoints.
        for p in 0..2 {
            let ntp = tp(&n, p);
            let rtp = tp(&replica(&n), p);
            let d = on_backup[g].get(&ntp).copied().unwrap_or(0);
            let seen = &read[g][key(&rtp)];
            let seqs: Vec<i64> = seen["seqs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect();
            let got: BTreeSet<i64> = seqs.iter().copied().collect();
            for s in d..N_PER_PARTITION {
                assert!(
                    got.contains(&s),
                    "{g} {rtp:?}: record {s} of {n} lost (backup offset {d})"
                );
            }
            let rereads = seqs.iter().filter(|&&s| s < d).count() as i64;
            total_rereads += rereads;
            *per_group.entry(g.clone()).or_insert(0) += rereads;
            // The truth on the replica: the first offset from which every record not processed
            // on the backup (SEQ >= d) is read, at its last copy.
            let mut last_copy: BTreeMap<i64, i64> = BTreeMap::new();
            for &(off, seq) in &replica_log[&rtp] {
                last_copy.insert(seq, off);
            }
            let replica_end = replica_log[&rtp].last().map_or(0, |&(off, _)| off + 1);
            let truth = last_copy
                .range(d..)
                .map(|(_, &off)| off)
                .min()
                .unwrap_or(replica_end);
            let row = rows.get(&(g.clone(), rtp.clone()));
            if let Some(r) = row {
                let (safe, best) = (
                    r["safe_offset"].as_i64().unwrap(),
                    r["translated"].as_i64().unwrap(),
                );
                assert!(
                    safe <= best && best <= truth,
                    "{g} {rtp:?}: safe {safe}, best {best}, truth {truth}"
                );
            }
            println!(
                "{:<22} {:<26} {:>6} {:>6} {:>7} {:>6} {:>6} {:>6} {:>26} {:>6} {:>6} {:>7} {:>7} {:>8} {:>8}",
                g,
                format!("{}-{p}", rtp.0),
                "-",
                "-",
                on_backup[g].get(&ntp).map_or("-".into(), |d| d.to_string()),
                row.map_or("-".into(), |r| r["safe_offset"].to_string()),
                row.map_or("-".into(), |r| r["translated"].to_string()),
                row.map_or("-".into(), |r| r["translated"].to_string()),
                row.map_or("-".into(), |r| r["rule"].as_str().unwrap().to_string()),
                truth,
                after[g].get(&rtp).map_or("-".into(), |f| f.to_string()),
                rereads,
                "-",
                "-",
                "-",
            );
        }
    }
    // Not failed back, and named: an offset below the first sync of its partition (`no-sync`:
    // the group keeps what it had on the primary, or reads from the start), or one MM2 did not
    // checkpoint on the reverse flow (below the oldest sync its store keeps). Nothing was lost
    // (checked above); a caught-up partition is always failed back.
    // (MM2 loses a partition's first syncs when more than 10 are in flight, as when O's two
    // partitions and X are written at once on a loaded machine: its history then starts later,
    // and a group below it is `no-sync`.)
    for u in untranslated {
        let from_offset = u["from_offset"].as_i64().unwrap();
        let end = match u["reason"].as_str() {
            Some("no-sync") => {
                b_ends[&(
                    u["from_topic"].as_str().unwrap().to_string(),
                    u["partition"].as_i64().unwrap() as i32,
                )]
            }
            Some("no-reverse-checkpoint") => N_PER_PARTITION,
            _ => panic!("not failed back for another reason: {u}"),
        };
        assert!(
            from_offset < end,
            "a caught-up partition not failed back: {u}"
        );
    }
    assert!(exact_rows > 0, "no exact answer at all");
    assert!(
        matched_rows > 0,
        "record matching proved no row (left as they were: {unmatched:?})"
    );
    let matching = &done["matching"];
    println!(
        "[failback] --match-records: {matched_rows} row(s) record-match ({assumed_rows} assuming the history), left as they were: {unmatched:?}; read {} B on the primary, {} B on the backup; re-reads on the primary's topics from the answers: safe {total_safe_rereads}, exact (stretches) {stretch_rereads}, with matching {match_rereads}",
        matching["upstream_bytes"], matching["downstream_bytes"]
    );
    for (g, n) in &per_group {
        println!("[failback] {g}: {n} record(s) read again on the primary");
    }
    let undo_text = std::fs::read_to_string(&undo).unwrap();
    let undo_doc: Value = serde_json::from_str(undo_text.lines().next().unwrap_or("")).unwrap();
    assert_eq!(undo_doc["kind"], "undo");
    every_offset_matched(
        &p_client,
        &b_client,
        &primary_log,
        &backup_log,
        &[&o, &x, &c],
    )
    .await;
    step("record matching checked at every offset of the replicas");
    let starts: Vec<FailoverStart> = ids
        .iter()
        .zip(&primary_stops)
        .map(|(g, stops)| (stops.clone(), applied[g].clone()))
        .collect();
    every_offset_after_failover(
        &p_client,
        &b_client,
        (&primary_log, &backup_log),
        &[&o, &x, &c],
        &starts,
    )
    .await;
    step("record matching checked after each group's failover at every offset");
    println!(
        "[failback] {GROUPS} groups, {rows_seen} partitions failed back from the syncs ({exact_rows} exact), {} without a reverse checkpoint, no record lost ({not_copied} aborted records MM2 did not copy); re-reads {total_rereads} (the syncs alone: {total_safe_rereads} on the primary's topics); MM2 killed at {killed_at}; {:.1}s",
        untranslated.len(),
        t0.elapsed().as_secs_f64()
    );
}

/// The forward flow's offset syncs of `topics` on the primary, in log order, as the reverse
/// index reads them.
async fn reverse_index(primary: &KafkaClient, topics: &[&str]) -> ReverseIndex {
    let histories =
        crate::support::sync_history::read(primary, "mm2-offset-syncs.backup.internal").await;
    let mut builder = ReverseIndexBuilder::new();
    for ((topic, partition), syncs) in &histories {
        if topics.contains(&topic.as_str()) {
            for &(upstream, downstream) in syncs {
                builder.add(topic.as_bytes(), *partition, upstream, downstream);
            }
        }
    }
    builder.finish()
}

/// Record matching backwards at every offset `D` of every replica partition of the run (a group
/// that has read the whole replica below `D`): an answer is never past the first record with no
/// copy below `D`, and every answer (all `record-match`) is that record. Prints per partition
/// how many offsets were matched, and how many past the reverse rule.
async fn every_offset_matched(
    p_client: &KafkaClient,
    b_client: &KafkaClient,
    primary_log: &BTreeMap<Tp, Vec<(i64, i64)>>,
    backup_log: &BTreeMap<Tp, Vec<(i64, i64)>>,
    topics: &[&str],
) {
    let started = Instant::now();
    let index = reverse_index(p_client, topics).await;
    let mut names: Vec<(String, String, i32, i64)> = Vec::new();
    for (ptp, plog) in primary_log {
        if !topics.contains(&ptp.0.as_str()) {
            continue;
        }
        let btp = (format!("primary.{}", ptp.0), ptp.1);
        let end = backup_log[&btp].last().map_or(0, |&(off, _)| off + 1);
        assert!(!plog.is_empty());
        for d in 0..=end {
            names.push((btp.0.clone(), ptp.0.clone(), ptp.1, d));
        }
    }
    let rows: Vec<ReverseRow<'_>> = names
        .iter()
        .map(|(down, up, p, d)| ReverseRow::new(down, up, *p, *d))
        .collect();
    let (answers, stats) = match_all(p_client, b_client, &index, &rows).await;
    // Per partition: (rows, matched, past the rule, assuming the history), and why not.
    let mut summary: BTreeMap<String, (usize, usize, usize, usize)> = BTreeMap::new();
    let mut reasons: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut truths: BTreeMap<Tp, Vec<i64>> = BTreeMap::new();
    for (row, answer) in rows.iter().zip(&answers) {
        let ptp = (row.upstream_topic.to_string(), row.partition);
        if !truths.contains_key(&ptp) {
            let end = log_ends(p_client, &ptp.0).await[&ptp.1];
            let btp = (row.downstream_topic.to_string(), row.partition);
            truths.insert(
                ptp.clone(),
                first_unread(&primary_log[&ptp], &backup_log[&btp], end),
            );
        }
        let truth = truths[&ptp][row.downstream as usize];
        let rule = index
            .partition(row.upstream_topic.as_bytes(), row.partition)
            .and_then(|p| p.translate(row.downstream))
            .map(|a| a.offset);
        let entry = summary
            .entry(format!("{}-{}", row.downstream_topic, row.partition))
            .or_default();
        entry.0 += 1;
        match answer {
            Ok(m) => {
                assert_eq!(
                    m.offset, truth,
                    "{}-{} at {}: record-match {} but the first record with no copy below is {truth} (rule {rule:?})",
                    row.downstream_topic, row.partition, row.downstream, m.offset
                );
                assert!(rule.is_none_or(|r| r <= m.offset));
                entry.1 += 1;
                entry.2 += usize::from(rule.is_none_or(|r| r < m.offset));
                entry.3 += usize::from(m.assumes_history);
            }
            Err(why) => {
                *reasons.entry(why.name()).or_default() += 1;
                if let Some(r) = rule {
                    assert!(r <= truth, "the rule {r} passes the truth {truth}");
                }
            }
        }
    }
    for (name, (n, matched, past, assumed)) in &summary {
        println!(
            "[failback] every offset of {name}: {n} offsets, {matched} record-match ({past} past the reverse rule, {assumed} assuming the history)"
        );
    }
    let matched: usize = summary.values().map(|s| s.1).sum();
    let all: usize = summary.values().map(|s| s.0).sum();
    println!(
        "[failback] record matching at every offset: {matched} of {all} matched, none past the truth; left as they were: {reasons:?}; read {} B on the primary, {} B on the backup; {:.1}s",
        stats.upstream_bytes,
        stats.downstream_bytes,
        started.elapsed().as_secs_f64()
    );
    assert!(
        matched * 2 > all,
        "{matched} of {all} offsets matched: {reasons:?}"
    );
}

/// `rows` matched backwards with the forward flow's history `index`, every partition read
/// whole and consistent with it: the answers, and what was read.
async fn match_all(
    p_client: &KafkaClient,
    b_client: &KafkaClient,
    index: &ReverseIndex,
    rows: &[ReverseRow<'_>],
) -> (Vec<Result<ReverseMatch, ReverseUnmatched>>, MatchStats) {
    let (answers, stats) = match_reverse(
        p_client,
        b_client,
        rows,
        |topic, partition| {
            index
                .partition(topic.as_bytes(), partition)
                .map(|p| p.log_order())
        },
        &MatchOptions::default(),
        Deadline::after(Duration::from_secs(60)),
    )
    .await;
    assert!(
        stats.inconsistent.is_empty() && stats.unread.is_empty(),
        "{stats:?}"
    );
    (answers, stats)
}

/// A cluster's records by partition: (offset, SEQ), SEQ the primary offset of the original.
type Dump = BTreeMap<Tp, Vec<(i64, i64)>>;

/// One group's failover: its offset on the primary by partition, and where the failover put it
/// on the backup (by the backup's topic).
type FailoverStart = (BTreeMap<Tp, i64>, BTreeMap<Tp, i64>);

/// The same at every offset `D` of the replicas after each group's real failover, with its
/// offset `P0` on the primary (`ReverseRow::primary_offset`) and where the failover put it on
/// the backup, `A`: the group processed the primary's records below `P0` and the backup's in
/// `[A, D)`. Every `record-match` is the first copied record it did not process.
async fn every_offset_after_failover(
    p_client: &KafkaClient,
    b_client: &KafkaClient,
    (primary_log, backup_log): (&Dump, &Dump),
    topics: &[&str],
    starts: &[FailoverStart],
) {
    let started = Instant::now();
    let index = reverse_index(p_client, topics).await;
    // Per partition and group: (replica, topic, partition, P0, A), and its rows' D from A on.
    let mut runs: Vec<(String, String, i32, i64, i64)> = Vec::new();
    let mut names: Vec<(usize, i64)> = Vec::new();
    for (ptp, _) in primary_log
        .iter()
        .filter(|(tp, _)| topics.contains(&tp.0.as_str()))
    {
        let btp = (format!("primary.{}", ptp.0), ptp.1);
        let end = backup_log[&btp].last().map_or(0, |&(off, _)| off + 1);
        for (p0s, applied) in starts {
            let (Some(&p0), Some(&a)) = (p0s.get(ptp), applied.get(&btp)) else {
                continue;
            };
            runs.push((btp.0.clone(), ptp.0.clone(), ptp.1, p0, a));
            names.extend((a..=end).map(|d| (runs.len() - 1, d)));
        }
    }
    let rows: Vec<ReverseRow<'_>> = names
        .iter()
        .map(|&(run, d)| {
            let (down, up, p, p0, _) = &runs[run];
            ReverseRow::new(down, up, *p, d).with_primary_offset(Some(*p0))
        })
        .collect();
    let (answers, _) = match_all(p_client, b_client, &index, &rows).await;
    let (mut matched, mut reasons) = (0usize, BTreeMap::<&'static str, usize>::new());
    let mut at = 0;
    for (run, (down, up, p, p0, a)) in runs.iter().enumerate() {
        let ptp = (up.clone(), *p);
        let end = log_ends(p_client, up).await[p];
        let seq_to_offset: BTreeMap<i64, i64> = primary_log[&ptp]
            .iter()
            .map(|&(off, seq)| (seq, off))
            .collect();
        let replica: BTreeMap<i64, i64> = backup_log[&(down.clone(), *p)]
            .iter()
            .map(|&(off, seq)| (off, seq_to_offset[&seq]))
            .collect();
        let copied: BTreeSet<i64> = replica.values().copied().collect();
        let mut processed: BTreeSet<i64> = BTreeSet::new();
        while let Some(&(_, d)) = names.get(at).filter(|(r, _)| *r == run) {
            if d > *a
                && let Some(&u) = replica.get(&(d - 1))
            {
                processed.insert(u);
            }
            let truth = copied
                .range(*p0..)
                .copied()
                .find(|u| !processed.contains(u))
                .unwrap_or(end);
            match &answers[at] {
                Ok(m) => {
                    assert_eq!(
                        m.offset, truth,
                        "{down}-{p} at {d} (P0 {p0}, failed over to {a}): record-match {} but the first record not processed is {truth}",
                        m.offset
                    );
                    matched += 1;
                }
                Err(why) => *reasons.entry(why.name()).or_default() += 1,
            }
            at += 1;
        }
    }
    println!(
        "[failback] after each group's failover, every offset: {matched} of {} (D, P0, A) rows matched, none past the truth; left as they were: {reasons:?}; {:.1}s",
        names.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        matched * 2 > names.len(),
        "{matched} of {} matched: {reasons:?}",
        names.len()
    );
}

/// For each offset `D` of a replica (0 to its end): the primary offset of the first record MM2
/// copied that has no copy below `D`, or the primary's log `end` when every copied record has
/// one.
fn first_unread(primary: &[(i64, i64)], replica: &[(i64, i64)], end: i64) -> Vec<i64> {
    let seq_to_offset: BTreeMap<i64, i64> = primary.iter().map(|&(off, seq)| (seq, off)).collect();
    let copied: BTreeSet<i64> = replica
        .iter()
        .map(|&(_, seq)| seq_to_offset[&seq])
        .collect();
    let replica_end = replica.last().map_or(0, |&(off, _)| off + 1);
    let at: BTreeMap<i64, i64> = replica
        .iter()
        .map(|&(off, seq)| (off, seq_to_offset[&seq]))
        .collect();
    let mut read: BTreeSet<i64> = BTreeSet::new();
    let mut out = Vec::with_capacity(replica_end as usize + 1);
    let mut first = copied.iter().next().copied().unwrap_or(end);
    for d in 0..=replica_end {
        while read.contains(&first) {
            first = copied.range(first + 1..).next().copied().unwrap_or(end);
        }
        out.push(first);
        if let Some(&u) = at.get(&d) {
            read.insert(u);
        }
    }
    out
}
