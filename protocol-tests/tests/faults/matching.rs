//! The record-matching rows of the fault matrix: faults injected while `translate --precise
//! --match-records` reads the records of both sides, on cluster3, through the fault proxy.
//!
//! The layout is MirrorMaker 2's, laid by hand so that the truth is known without MM2: an
//! upstream topic `fm-<run>` (2 partitions, 6,000 distinct records each, ~1 MB a side), its
//! replica `<alias>.fm-<run>` on the same cluster (partition 1 copied one for one; partition 0
//! copied to 3,500, then again from 3,000 after a "restart": a duplicate block of 500), the
//! offset syncs MM2 would have written (every 100 records, and the restart's), and a checkpoint
//! for each of 40 groups per partition. For upstream offset `U` the truth is the least, over the
//! records at or after `U`, of their last copy.
//!
//! Every row must be safe: every offset at or before the truth, every `record-match` row equal
//! to it, and a row left with the syncs' offset saying why (`unmatched`); or an explicit error.
//! The baseline must match nearly every row.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use serde_json::Value;

use super::{Run, Suite, create_topic, hex, last_line, pseudo_fraction, put_str, run_cli};
use crate::support::proxy::Fault;
use crate::support::{Cluster, unique_topic};

const RECORDS: i64 = 6000;
const GROUPS: i64 = 40;
const SYNC_EVERY: i64 = 100;
/// Partition 0: copied to here, then again from `RESTART_FROM` (MM2 restarted from an older
/// committed source offset).
const KILLED_AT: i64 = 3500;
const RESTART_FROM: i64 = 3000;

/// What the rows share: the names, and the truth per (group, replica partition).
struct Layout {
    alias: String,
    syncs_topic: String,
    truth: BTreeMap<(String, i64), i64>,
}

/// The last copy of upstream record `u` of `partition` on the replica.
fn last_copy(partition: i32, u: i64) -> i64 {
    if partition == 0 && u >= RESTART_FROM {
        u + (KILLED_AT - RESTART_FROM)
    } else {
        u
    }
}

/// The replica's records of `partition`, in order: the upstream offset each one copies.
fn copies(partition: i32) -> Vec<i64> {
    if partition == 0 {
        (0..KILLED_AT).chain(RESTART_FROM..RECORDS).collect()
    } else {
        (0..RECORDS).collect()
    }
}

/// A record's key and value: distinct, ~150 bytes.
fn record(partition: i32, u: i64) -> (Vec<u8>, Vec<u8>) {
    let key = format!("k{partition}-{u:06}").into_bytes();
    let value = format!("v{partition}-{u:06}-{}", "x".repeat(140)).into_bytes();
    (key, value)
}

/// Writes `lines` (`PARTITION KEYHEX VALUEHEX`) to `topic` with the data writer.
fn write_raw(c3: &Cluster, topic: &str, partitions: i32, lines: &[String]) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("records.txt");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
    for line in lines {
        writeln!(out, "{line}").unwrap();
    }
    out.flush().unwrap();
    drop(out);
    crate::support::data_writer(
        c3,
        "raw",
        &[
            "--topic",
            topic,
            "--partitions",
            &partitions.to_string(),
            "--no-create",
            "--compression",
            "none",
            "--summary-only",
            "--file",
            file.to_str().unwrap(),
        ],
    );
}

/// Lays the topics, the syncs and the checkpoints, the four writes at once.
fn lay(c3: &Cluster) -> Layout {
    let run = unique_topic("fm");
    let alias = format!("{run}src");
    let upstream = format!("{run}-orders");
    let replica = format!("{alias}.{upstream}");
    let syncs_topic = format!("mm2-offset-syncs.{run}.internal");
    let checkpoints = format!("{alias}.checkpoints.internal");
    create_topic(c3, &upstream, &["--replica-assignment", "1:2:3,2:3:1"]);
    create_topic(c3, &replica, &["--replica-assignment", "3:1:2,1:2:3"]);
    create_topic(c3, &syncs_topic, &["--replica-assignment", "2:3:1"]);
    create_topic(c3, &checkpoints, &["--replica-assignment", "3:2:1"]);

    // MM2 keeps each record's timestamp, and matching compares it: one per record, the same
    // on both sides (recent: retention by time would remove an old one).
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - 3_600_000;
    let data = |p: i32, u: i64| {
        let (k, v) = record(p, u);
        format!("{p} {} {} {}", hex(&k), hex(&v), stamp + u)
    };
    let up_lines: Vec<String> = (0..2)
        .flat_map(|p| (0..RECORDS).map(move |u| (p, u)))
        .map(|(p, u)| data(p, u))
        .collect();
    let replica_lines: Vec<String> = (0..2)
        .flat_map(|p| copies(p).into_iter().map(move |u| (p, u)))
        .map(|(p, u)| data(p, u))
        .collect();
    // The syncs MM2 would write: every SYNC_EVERY records of each lifetime, in log order.
    let mut syncs: Vec<(i32, i64, i64)> = Vec::new();
    for p in 0..2 {
        for (d, u) in copies(p).into_iter().enumerate() {
            let d = d as i64;
            let lifetime_start = p == 0 && d == KILLED_AT;
            if u % SYNC_EVERY == 0 || lifetime_start {
                syncs.push((p, u, d));
            }
        }
    }
    let sync_lines: Vec<String> = syncs
        .iter()
        .map(|&(p, u, d)| {
            let mut key = Vec::new();
            put_str(&mut key, upstream.as_bytes());
            key.extend_from_slice(&p.to_be_bytes());
            let mut value = u.to_be_bytes().to_vec();
            value.extend_from_slice(&d.to_be_bytes());
            format!("0 {} {}", hex(&key), hex(&value))
        })
        .collect();
    // A checkpoint per group and partition: MM2's translation of U from the syncs, the last
    // one in log order at or below U (one past it when below).
    let mut truth = BTreeMap::new();
    let mut checkpoint_lines = Vec::new();
    for g in 0..GROUPS {
        let group = format!("{run}-g{g:02}");
        for p in 0..2i32 {
            let u = (37 + g * 149 + i64::from(p) * 61) % RECORDS;
            let (su, sd) = syncs
                .iter()
                .filter(|&&(sp, su, _)| sp == p && su <= u)
                .map(|&(_, su, sd)| (su, sd))
                .next_back()
                .expect("a sync at 0");
            let downstream = if su == u { sd } else { sd + 1 };
            let mut key = Vec::new();
            put_str(&mut key, group.as_bytes());
            put_str(&mut key, replica.as_bytes());
            key.extend_from_slice(&p.to_be_bytes());
            let mut value = 0i16.to_be_bytes().to_vec();
            value.extend_from_slice(&u.to_be_bytes());
            value.extend_from_slice(&downstream.to_be_bytes());
            put_str(&mut value, b"");
            checkpoint_lines.push(format!("0 {} {}", hex(&key), hex(&value)));
            let least = (u..RECORDS)
                .map(|r| last_copy(p, r))
                .min()
                .unwrap_or(copies(p).len() as i64);
            truth.insert((group.clone(), i64::from(p)), least);
        }
    }
    std::thread::scope(|scope| {
        scope.spawn(|| write_raw(c3, &upstream, 2, &up_lines));
        scope.spawn(|| write_raw(c3, &replica, 2, &replica_lines));
        scope.spawn(|| write_raw(c3, &syncs_topic, 1, &sync_lines));
        scope.spawn(|| write_raw(c3, &checkpoints, 1, &checkpoint_lines));
    });
    Layout {
        alias,
        syncs_topic,
        truth,
    }
}

/// The command of every row, through the proxy.
fn args(s: &Suite, layout: &Layout, timeout: &str) -> Vec<String> {
    [
        "translate",
        "--bootstrap-server",
        &s.bootstrap,
        "--source",
        &layout.alias,
        "--all-groups",
        "--precise",
        "--match-records",
        "--syncs-bootstrap-server",
        &s.bootstrap,
        "--syncs-topic",
        &layout.syncs_topic,
        "--source-bootstrap-server",
        &s.bootstrap,
        "-o",
        "json",
        "--no-progress",
        "--timeout",
        timeout,
        // Many Fetch round trips per partition, so a fault lands mid-read.
        "--max-fetch-bytes",
        "65536",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect()
}

/// A row's outcome: `Ok((matched, unmatched by reason))` when every row is safe, or an
/// explicit error (`Err(Ok(message))`), or what is unsafe (`Err(Err(why))`).
type Checked = Result<(usize, BTreeMap<String, usize>), Result<String, String>>;

fn check(run: &Run, layout: &Layout) -> Checked {
    if run.killed {
        return Err(Err("hang (killed)".into()));
    }
    if run.stderr.contains("panicked at") || run.code == Some(101) {
        return Err(Err(format!("panic: {}", last_line(&run.stderr))));
    }
    let doc: Option<Value> = serde_json::from_slice(&run.stdout).ok();
    let Some(doc) = doc.filter(|_| matches!(run.code, Some(0) | Some(3))) else {
        if run.stderr.trim().is_empty() {
            return Err(Err(format!("exit {:?} with no message", run.code)));
        }
        return Err(Ok(last_line(&run.stderr)));
    };
    if run.code == Some(0) && doc["complete"] != true {
        return Err(Err("exit 0 with complete != true".into()));
    }
    let mut matched = 0;
    let mut unmatched: BTreeMap<String, usize> = BTreeMap::new();
    let mut seen = 0;
    for row in doc["offsets"].as_array().into_iter().flatten() {
        let key = (
            row["group"].as_str().unwrap_or("").to_string(),
            row["partition"].as_i64().unwrap_or(-1),
        );
        let Some(&truth) = layout.truth.get(&key) else {
            continue;
        };
        seen += 1;
        let offset = row["offset"].as_i64().unwrap_or(i64::MAX);
        if offset > truth {
            return Err(Err(format!(
                "{key:?}: {offset} past the truth {truth}: {row}"
            )));
        }
        if row["rule"] == "record-match" {
            if offset != truth {
                return Err(Err(format!(
                    "{key:?}: record-match {offset}, truth {truth}"
                )));
            }
            matched += 1;
        } else {
            let why = row["unmatched"]
                .as_str()
                .unwrap_or("none given")
                .to_string();
            *unmatched.entry(why).or_default() += 1;
        }
    }
    if run.code == Some(0) && seen != layout.truth.len() {
        return Err(Err(format!(
            "exit 0 with {seen} of {} rows",
            layout.truth.len()
        )));
    }
    Ok((matched, unmatched))
}

/// Runs one row and records it: `exact` asks every row matched (the baseline, or a fault the
/// client must ride out).
fn row(s: &mut Suite, layout: &Layout, name: &str, fault: Fault, what: &str, exact: bool) {
    let one_shot = !matches!(fault, Fault::None | Fault::Slice { .. });
    let before = s.proxy.downstream_bytes();
    s.proxy.arm(fault);
    let run = run_cli(&args(s, layout, "30s"), Duration::from_secs(30));
    let landed = s.proxy.landed();
    s.proxy.arm(Fault::None);
    let bytes = s.proxy.downstream_bytes() - before;
    let where_ = match (&landed, name) {
        (Some(l), _) => format!(
            "node {}, Fetch v{} response of {} bytes, at byte {}, after {} response bytes",
            l.node, l.api_version, l.frame_len, l.at, l.bytes_before
        ),
        (None, "match-baseline") => format!("{bytes} response bytes through the proxy"),
        (None, _) => "whole read".into(),
    };
    let mut verdict = Vec::new();
    let outcome = match check(&run, layout) {
        Ok((matched, unmatched)) => {
            let all = layout.truth.len();
            if exact && matched * 10 < all * 9 {
                verdict.push(format!("{matched} of {all} rows matched"));
            }
            // A read that stopped is named on stderr, with what stopped it.
            let stopped = run
                .stderr
                .lines()
                .find(|l| l.contains("not matched, the read stopped"));
            if unmatched.contains_key("not-read")
                && !stopped.is_some_and(|l| l.contains("not-read: "))
            {
                verdict.push("rows not-read, and stderr does not say what stopped the read".into());
            }
            let said = stopped.map_or(String::new(), |l| format!("; stderr: `{}`", last_line(l)));
            format!(
                "exit {}: {matched} of {all} rows record-match (each the truth), the others keep the syncs' offset ({unmatched:?}){said}",
                run.code.unwrap_or(-1)
            )
        }
        Err(Ok(message)) => {
            if exact {
                verdict.push("expected every row answered".into());
            }
            format!("explicit error: `{message}`")
        }
        Err(Err(why)) => {
            verdict.push("unsafe outcome".into());
            format!("**UNSAFE**: {why}")
        }
    };
    if one_shot && landed.is_none() {
        verdict.push("the fault never landed".into());
    }
    s.push_row(
        name,
        what,
        &where_,
        &outcome,
        &run,
        Duration::from_secs(30),
        verdict,
    );
}

/// The record-matching rows (`match-*`).
pub fn rows(s: &mut Suite) {
    let layout = lay(&s.c3);
    row(
        s,
        &layout,
        "match-baseline",
        Fault::None,
        "none (`translate --precise --match-records`, 80 rows, a duplicate block of 500)",
        true,
    );
    row(
        s,
        &layout,
        "match-slices",
        Fault::Slice { first: 4096 },
        "first 4096 bytes of every response in 1-byte writes, while matching reads",
        true,
    );
    row(
        s,
        &layout,
        "match-reset",
        Fault::ResetInFetch {
            skip: 6,
            at_fraction: pseudo_fraction(),
        },
        "connection reset (RST) inside a Fetch response of the matching reads",
        false,
    );
    row(
        s,
        &layout,
        "match-flip",
        Fault::FlipInRecords { skip: 6 },
        "one byte flipped inside a record batch (CRC-covered) of the matching reads",
        false,
    );
}
