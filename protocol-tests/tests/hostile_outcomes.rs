//! Hostile outcomes on a real Kafka 4.4 (k4), issue 29's second half: one group never blocks the
//! others (a real exactly-once producer holds a transaction open on one group), the summary is
//! counted from the outcomes (and the JSON, the stderr line and the exit code say the same
//! thing), standard output on a read-write /dev/null, and checkpoints apply must not write from
//! (a group id that is not UTF-8, a value version other than 0).
//!
//! Each case runs the CLI as a user would, asserts its exit code and words, then reads the
//! cluster back with a raw OffsetFetch (`support/raw.rs`, not the code under test). Every case
//! runs even when an earlier one fails; the table is printed, then the failures are asserted.
//! `MM2O_APPLY_BIN` runs the table against another build (to record what it did).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};

use crate::support::child::{Run, run_bounded};
use crate::support::cluster;
use crate::support::raw::{Raw, Record};

type Held = BTreeMap<(String, i32), i64>;

struct Row {
    case: String,
    code: Option<i32>,
    seconds: f64,
    held: String,
    words: String,
    failure: Option<String>,
}

struct Table {
    bin: PathBuf,
    rows: Vec<Row>,
}

impl Table {
    fn run(&self, args: &[String]) -> Run {
        run_bounded(&self.bin, args, Duration::from_secs(90))
    }

    /// Records a case: exit `code`, every one of `needles` in the output, `found == wanted`,
    /// plus whatever `extra` found wrong.
    fn check(
        &mut self,
        case: &str,
        run: &Run,
        code: i32,
        needles: &[&str],
        (found, wanted): (Held, Held),
        mut extra: Vec<String>,
    ) {
        let stdout = String::from_utf8_lossy(&run.stdout);
        let all = format!("{}\n{stdout}", run.stderr);
        if run.code != Some(code) {
            extra.push(format!("exit {:?}, wanted {code}", run.code));
        }
        for needle in needles {
            if !all.contains(needle) {
                extra.push(format!("no {needle:?} in the output"));
            }
        }
        if found != wanted {
            extra.push(format!("cluster holds {found:?}, wanted {wanted:?}"));
        }
        let words = run
            .stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        self.rows.push(Row {
            case: case.to_string(),
            code: run.code,
            seconds: run.elapsed.as_secs_f64(),
            held: show(&found),
            words,
            failure: (!extra.is_empty()).then(|| {
                format!(
                    "{}\n--- stderr:\n{}\n--- stdout:\n{}",
                    extra.join("; "),
                    run.stderr,
                    stdout.chars().take(3000).collect::<String>()
                )
            }),
        });
    }

    fn finish(&self, started: Instant, setup: Duration) {
        eprintln!(
            "\n{:<64} | exit | secs  | cluster after        | stderr's last line",
            "case"
        );
        for r in &self.rows {
            eprintln!(
                "{:<64} | {:>4} | {:>5.1} | {:<20} | {}{}",
                r.case,
                r.code.map_or("-".into(), |c| c.to_string()),
                r.seconds,
                r.held,
                r.words,
                if r.failure.is_some() {
                    "  <-- FAILED"
                } else {
                    ""
                }
            );
        }
        eprintln!(
            "hostile_outcomes: {} cases, setup {setup:.1?}, suite {:.1?}",
            self.rows.len(),
            started.elapsed()
        );
        let failures: Vec<String> = self
            .rows
            .iter()
            .filter_map(|r| r.failure.as_ref().map(|f| format!("== {}: {f}", r.case)))
            .collect();
        assert!(
            failures.is_empty(),
            "{} case(s) failed:\n{}",
            failures.len(),
            failures.join("\n\n")
        );
    }
}

fn show(held: &Held) -> String {
    if held.is_empty() {
        return "nothing".into();
    }
    held.iter()
        .map(|((t, p), o)| format!("{}-{p}={o}", t.rsplit('.').next().unwrap_or(t)))
        .collect::<Vec<_>>()
        .join(",")
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A checkpoint of `group` (raw bytes) on partition 0 of `topic` at `downstream`, with value
/// `version`.
fn checkpoint(group: &[u8], topic: &str, downstream: i64, version: i16) -> Record {
    let key = checkpoint::encode_key(&CheckpointKey {
        group,
        topic: topic.as_bytes(),
        partition: 0,
    })
    .unwrap();
    let value = checkpoint::encode_value(&CheckpointValue {
        version,
        upstream_offset: downstream + 1000,
        downstream_offset: downstream,
        metadata: b"outcomes",
    })
    .unwrap();
    (Some(key), Some(value))
}

/// What the summary in `json` says an exit code and stderr line must be: every count that the
/// stderr line carries, and the exit code the counts add up to. Empty when they agree.
fn disagreements(json: &serde_json::Value, run: &Run) -> Vec<String> {
    let s = &json["summary"];
    let mut out = Vec::new();
    if !s.is_object() {
        return vec!["no summary in the JSON".into()];
    }
    let n = |k: &str| s[k].as_u64().unwrap_or(0);
    let refused: u64 = s["refused"]
        .as_object()
        .map_or(0, |m| m.values().filter_map(|v| v.as_u64()).sum());
    let wanted_code = if n("failed") + n("unknown") > 0 {
        1
    } else if refused + n("unverified") + n("not_attempted") > 0 {
        3
    } else {
        0
    };
    if run.code != Some(wanted_code) {
        out.push(format!(
            "the JSON summary adds up to exit {wanted_code}, the run exited {:?}",
            run.code
        ));
    }
    let line = run
        .stderr
        .lines()
        .find(|l| {
            (l.starts_with("apply: ") || l.starts_with("failback: "))
                && (l.contains("to write") || l.contains("nothing to write"))
        })
        .unwrap_or("");
    let executed = s["executed"].as_bool().unwrap_or(false);
    let noop = n("to_write") == 0 && refused == 0 && n("failed") == 0;
    if executed && !noop {
        let head = format!(
            "{} of {} partition(s) to write committed and read back",
            n("committed"),
            n("to_write")
        );
        if !line.contains(&head) {
            out.push(format!("stderr {line:?} lacks {head:?}"));
        }
    }
    if noop && !line.contains("nothing to write") {
        out.push(format!("the JSON says no-op, stderr says {line:?}"));
    }
    if !noop && line.contains("no-op") {
        out.push(format!("stderr says no-op, the JSON does not: {line:?}"));
    }
    if let Some(map) = s["refused"].as_object() {
        for (rule, count) in map {
            let words = format!("{rule} {}", count.as_u64().unwrap_or(0));
            if !line.contains(&words) {
                out.push(format!("stderr {line:?} lacks {words:?}"));
            }
        }
    }
    for (key, words) in [
        ("failed", "failed"),
        ("unknown", "unknown"),
        ("unverified", "not read back"),
    ] {
        if n(key) > 0 && !line.contains(words) {
            out.push(format!("the JSON counts {key} {}, stderr {line:?}", n(key)));
        }
    }
    let wrote = n("committed") + n("unverified") + n("unknown");
    if wrote == 0 && executed && !noop && !line.contains("nothing written") {
        out.push(format!(
            "nothing was written, stderr {line:?} does not say so"
        ));
    }
    out
}

/// A producer that holds a transaction open on `group` (`harness/pendingtxn.sh`), until dropped.
struct PendingTransaction {
    child: std::process::Child,
}

impl PendingTransaction {
    fn start(bootstrap: &str, group: &str, topic: &str, offset: i64) -> PendingTransaction {
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("protocol-tests/harness/pendingtxn.sh");
        let mut child = Command::new(&script)
            .args([
                "--bootstrap",
                bootstrap,
                "--group",
                group,
                "--topic",
                topic,
                "--offset",
                &offset.to_string(),
                "--transactional-id",
                &format!("{group}-txn"),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped stdout");
        BufReader::new(stdout).read_line(&mut line).unwrap();
        assert_eq!(
            line.trim(),
            "pending",
            "the producer did not open its transaction"
        );
        PendingTransaction { child }
    }

    /// Closes its stdin: it aborts the transaction and exits.
    fn end(mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

impl Drop for PendingTransaction {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.child.stdin.take() {
            let _ = stdin.flush();
        }
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_outcomes_on_kafka_4() {
    let started = Instant::now();
    let k4 = cluster("k4");
    let raw = Raw::connect(&k4).await;
    let bin = std::env::var_os("MM2O_APPLY_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_mm2-offsets")));
    let mut table = Table {
        bin,
        rows: Vec::new(),
    };
    let unique = crate::support::unique_topic("ho").replace('-', "");
    let alias = format!("{unique}a");
    let topic = format!("{alias}.orders");
    let g = |name: &str| format!("{unique}-{name}");
    let server = k4.var("PLAINTEXT").to_string();

    // Topic <alias>.orders (1 partition, 100 records), and the checkpoints of each case's groups
    // on its partition 0.
    raw.create_topic(&topic, 1).await;
    raw.fill(&topic, 1, 100).await;
    let checkpoints = format!("{alias}.checkpoints.internal");
    raw.create_topic(&checkpoints, 1).await;
    let mut bad_a = g("bad").into_bytes();
    bad_a.extend_from_slice(b"\xff");
    let mut bad_b = g("bad").into_bytes();
    bad_b.extend_from_slice(b"\xfe");
    let records = vec![
        checkpoint(g("pt-n1").as_bytes(), &topic, 10, 0),
        checkpoint(g("pt-n2").as_bytes(), &topic, 10, 0),
        checkpoint(g("pt-pending").as_bytes(), &topic, 10, 0),
        checkpoint(g("all-refused").as_bytes(), &topic, 50, 0),
        checkpoint(g("noop").as_bytes(), &topic, 10, 0),
        checkpoint(g("mixed").as_bytes(), &topic, 30, 0),
        checkpoint(&bad_a, &topic, 10, 0),
        checkpoint(&bad_b, &topic, 20, 0),
        checkpoint(g("v99").as_bytes(), &topic, 10, 99),
        checkpoint(g("v0").as_bytes(), &topic, 10, 0),
    ];
    raw.produce(&checkpoints, 0, &records).await;
    raw.commit(&g("all-refused"), &topic, 0, 80).await;
    raw.commit(&g("noop"), &topic, 0, 10).await;
    let held = |group: String, want: &[i64]| {
        let raw = &raw;
        let topic = topic.clone();
        let want: Held = want.iter().map(|o| ((topic.clone(), 0), *o)).collect();
        async move { (raw.committed(&group).await, want) }
    };
    let apply = |groups: &[String], extra: &[&str]| -> Vec<String> {
        let mut a = args(&[
            "apply",
            "--bootstrap-server",
            &server,
            "--source",
            &alias,
            "--no-progress",
        ]);
        for group in groups {
            a.push("--group".into());
            a.push(group.clone());
        }
        a.extend(args(extra));
        a
    };
    let json_of = |run: &Run| -> serde_json::Value {
        serde_json::from_slice(&run.stdout).unwrap_or(serde_json::Value::Null)
    };

    // ---- 1. A pending transaction beside normal groups.
    let pending = PendingTransaction::start(&server, &g("pt-pending"), &topic, 7);
    let setup = started.elapsed();
    let groups = [g("pt-n1"), g("pt-n2"), g("pt-pending")];
    let run = table.run(&apply(
        &groups,
        &["--execute", "-o", "json", "--timeout", "40s"],
    ));
    let json = json_of(&run);
    let mut extra = disagreements(&json, &run);
    if run.elapsed > Duration::from_secs(15) {
        extra.push(format!(
            "took {:?}: the pending group held the run",
            run.elapsed
        ));
    }
    if json["summary"]["committed"] != 2 || json["summary"]["refused"]["pending-transaction"] != 1 {
        extra.push(format!("summary {}", json["summary"]));
    }
    let (mut found, mut wanted) = held(g("pt-n1"), &[10]).await;
    for (group, want) in [(g("pt-n2"), &[10][..]), (g("pt-pending"), &[][..])] {
        let (f, w) = held(group.clone(), want).await;
        found.extend(
            f.into_iter()
                .map(|((t, p), o)| ((format!("{group}/{t}"), p), o)),
        );
        wanted.extend(
            w.into_iter()
                .map(|((t, p), o)| ((format!("{group}/{t}"), p), o)),
        );
    }
    table.check(
        "pending transaction on one group of 3: the 2 others applied",
        &run,
        3,
        &["pending-transaction", "kafka-transactions.sh"],
        (found, wanted),
        extra,
    );
    // The table form of the same: the group named as refused, the verdict shown.
    let run = table.run(&apply(&[g("pt-pending")], &["--timeout", "40s"]));
    table.check(
        "pending transaction, dry run, table",
        &run,
        3,
        &["pending-transaction", "refused: pending-transaction"],
        held(g("pt-pending"), &[]).await,
        vec![],
    );
    pending.end();

    // ---- 2. Summaries counted from the outcomes.
    let run = table.run(&apply(&[g("all-refused")], &["--execute", "-o", "json"]));
    let extra = disagreements(&json_of(&run), &run);
    table.check(
        "every partition refused (would-rewind): nothing written, never no-op",
        &run,
        3,
        &["would-rewind 1", "nothing written"],
        held(g("all-refused"), &[80]).await,
        extra,
    );
    let run = table.run(&apply(&[g("all-refused")], &["--execute"]));
    table.check(
        "every partition refused, table: the same words and exit",
        &run,
        3,
        &["0 of 0 partition(s) to write committed", "would-rewind 1"],
        held(g("all-refused"), &[80]).await,
        vec![],
    );
    let run = table.run(&apply(&[g("noop")], &["--execute", "-o", "json"]));
    let extra = disagreements(&json_of(&run), &run);
    table.check(
        "already applied: no-op",
        &run,
        0,
        &["no-op: nothing to write (1 partition(s) already at their offset)"],
        held(g("noop"), &[10]).await,
        extra,
    );
    let run = table.run(&apply(
        &[g("mixed"), g("all-refused")],
        &["--execute", "-o", "json"],
    ));
    let extra = disagreements(&json_of(&run), &run);
    let (mut found, mut wanted) = held(g("mixed"), &[30]).await;
    let (f, w) = held(g("all-refused"), &[80]).await;
    found.extend(f.into_iter().map(|((t, p), o)| ((format!("r/{t}"), p), o)));
    wanted.extend(w.into_iter().map(|((t, p), o)| ((format!("r/{t}"), p), o)));
    table.check(
        "one group committed, one refused",
        &run,
        3,
        &[
            "1 of 1 partition(s) to write committed and read back",
            "would-rewind 1",
        ],
        (found, wanted),
        extra,
    );

    // ---- 4. Inputs: stdout on /dev/null opened read-write (Python's subprocess.DEVNULL).
    let devnull = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .unwrap();
    let clock = Instant::now();
    let out = Command::new(&table.bin)
        .args(apply(&[g("noop")], &[]))
        .stdin(Stdio::null())
        .stdout(Stdio::from(devnull))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let run = Run {
        code: out.status.code(),
        stdout: Vec::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: clock.elapsed(),
        killed: false,
    };
    let mut extra = Vec::new();
    if run.stderr.contains("standard output is closed") {
        extra.push("a read-write /dev/null was called closed".into());
    }
    table.check(
        "stdout on /dev/null opened read-write",
        &run,
        0,
        &["dry run: nothing to write"],
        held(g("noop"), &[10]).await,
        extra,
    );

    // Checkpoints apply must not write from: group ids that are not UTF-8 (two different byte
    // strings that decode to the same lossy name), and a value of version 99.
    let lossy = String::from_utf8_lossy(&bad_a).into_owned();
    let run = table.run(&apply(
        std::slice::from_ref(&lossy),
        &["--execute", "-o", "json"],
    ));
    let extra = disagreements(&json_of(&run), &run);
    table.check(
        "two non-UTF-8 group ids with the same lossy name: shown, not written",
        &run,
        3,
        &["group-id-not-utf8", "\\xff", "\\xfe"],
        held(lossy, &[]).await,
        extra,
    );
    let run = table.run(&apply(&[g("v99"), g("v0")], &["--execute", "-o", "json"]));
    let extra = disagreements(&json_of(&run), &run);
    let (mut found, mut wanted) = held(g("v99"), &[]).await;
    let (f, w) = held(g("v0"), &[10]).await;
    found.extend(f.into_iter().map(|((t, p), o)| ((format!("v0/{t}"), p), o)));
    wanted.extend(w.into_iter().map(|((t, p), o)| ((format!("v0/{t}"), p), o)));
    table.check(
        "checkpoint value version 99 beside a version 0: only the v0 written",
        &run,
        3,
        &["unknown-checkpoint-version 1"],
        (found, wanted),
        extra,
    );

    table.finish(started, setup);
}
