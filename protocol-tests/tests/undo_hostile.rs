//! The way back, tried as a hostile operator would (issue 29), on a real Kafka 4.4 (k4; k39 as
//! "another cluster"): `--undo-out` on every kind of bad path, edited undo files, and a
//! 2,000-group `apply --execute --undo-out` interrupted by SIGINT, killed by SIGKILL and stopped
//! by a file-size limit at several points, each then undone. Every case asserts the exit code
//! and the words, then reads the cluster back with a raw OffsetFetch (`support/raw.rs`, not the
//! code under test).
//!
//! Every case runs even when an earlier one fails; the tables are printed (`--nocapture`), then
//! the failures are asserted.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
use serde_json::Value;

use crate::support::child::{Run, run_bounded};
use crate::support::cluster;
use crate::support::mm2_records::sync_record;
use crate::support::raw::{Raw, Records};

type Held = BTreeMap<(String, i32), i64>;

/// The build under test: this one, or `MM2O_APPLY_BIN` (e.g. an older one, to record what it
/// did: its failures are that build's answers).
fn bin() -> PathBuf {
    std::env::var_os("MM2O_APPLY_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_mm2-offsets")))
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn show(held: &Held) -> String {
    if held.is_empty() {
        return "nothing".to_string();
    }
    held.iter()
        .map(|((t, p), o)| format!("{}-{p}={o}", t.rsplit('.').next().unwrap_or(t)))
        .collect::<Vec<_>>()
        .join(",")
}

/// A checkpoint of `group` on partition 0 of `topic` at `downstream`, with metadata "src".
fn checkpoint_record(group: &str, topic: &str, downstream: i64) -> crate::support::raw::Record {
    crate::support::mm2_records::checkpoint_record(
        group,
        topic,
        (downstream + 1000, downstream),
        b"src",
    )
}

/// One row of the table of cases.
struct Row {
    case: String,
    code: Option<i32>,
    before: String,
    after: String,
    words: String,
    failure: Option<String>,
}

#[derive(Default)]
struct Table {
    rows: Vec<Row>,
}

impl Table {
    /// Records a case: `run` must have exited `code` with `needle` in its output, and the
    /// cluster must hold `want` (read back: `found`).
    fn check(&mut self, case: &str, run: &Run, code: i32, needle: &str, held: [&Held; 3]) {
        let [before, found, want] = held;
        let stdout = String::from_utf8_lossy(&run.stdout);
        let all = format!("{}\n{stdout}", run.stderr);
        let words: String = all
            .lines()
            .find(|l| l.contains(needle))
            .or_else(|| run.stderr.lines().rev().find(|l| !l.trim().is_empty()))
            .unwrap_or("")
            .trim()
            .chars()
            .take(200)
            .collect();
        let mut failure = Vec::new();
        if run.code != Some(code) {
            failure.push(format!("exit {:?}, wanted {code}", run.code));
        }
        if !all.contains(needle) {
            failure.push(format!("no {needle:?} in the output"));
        }
        if found != want {
            failure.push(format!("cluster holds {found:?}, wanted {want:?}"));
        }
        self.rows.push(Row {
            case: case.to_string(),
            code: run.code,
            before: show(before),
            after: show(found),
            words,
            failure: (!failure.is_empty()).then(|| {
                format!(
                    "{}\n--- stderr:\n{}\n--- stdout:\n{}",
                    failure.join("; "),
                    run.stderr,
                    stdout.chars().take(2000).collect::<String>()
                )
            }),
        });
    }

    fn print(&self) {
        eprintln!(
            "\n{:<64} | exit | {:<13} | {:<13} | words",
            "case", "before", "after"
        );
        for r in &self.rows {
            eprintln!(
                "{:<64} | {:>4} | {:<13} | {:<13} | {}{}",
                r.case,
                r.code.map_or("-".to_string(), |c| c.to_string()),
                r.before,
                r.after,
                r.words,
                if r.failure.is_some() {
                    "  <-- FAILED"
                } else {
                    ""
                }
            );
        }
    }

    fn failures(&self) -> Vec<String> {
        self.rows
            .iter()
            .filter_map(|r| r.failure.as_ref().map(|f| format!("== {}: {f}", r.case)))
            .collect()
    }
}

/// The undo file's lines as JSON (a torn last line left out).
fn journal(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Writes `lines` as an undo file.
fn write_journal(path: &Path, lines: &[Value]) -> String {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_undo_is_written_ahead_bound_and_checked_on_kafka_4() {
    let started = Instant::now();
    let k4 = cluster("k4");
    let k39 = cluster("k39");
    let raw = Raw::connect(&k4).await;
    let raw39 = Raw::connect(&k39).await;
    {
        let client = mm2_offsets::client::KafkaClient::connect(k4.plaintext())
            .await
            .unwrap();
        crate::support::wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let unique = crate::support::unique_topic("uh").replace('-', "");
    let alias = unique.clone();
    let g = |name: &str| format!("{unique}-{name}");
    let orders = format!("{alias}.orders");
    let recreated = format!("{alias}.recreated");
    let raised = format!("{alias}.raised");
    let server = k4.var("PLAINTEXT").to_string();
    for t in [&orders, &recreated, &raised] {
        raw.create_topic(t, 1).await;
        raw.fill(t, 1, 100).await;
    }
    // Checkpoints: 10 on orders for the file cases and the edited cases, 95 on recreated, 30
    // on raised; 10 for the 2,000 groups of the interrupt runs.
    const BIG: usize = 2000;
    let files = g("files");
    let edited = ["past-end", "minus5", "cluster", "old-file", "untouched"];
    let mut rows: Records = vec![checkpoint_record(&files, &orders, 10)];
    rows.extend(edited.iter().map(|n| checkpoint_record(&g(n), &orders, 10)));
    rows.push(checkpoint_record(&g("recreated"), &recreated, 95));
    rows.push(checkpoint_record(&g("raised"), &raised, 30));
    let big: Vec<String> = (0..BIG).map(|i| g(&format!("big{i:04}"))).collect();
    rows.extend(big.iter().map(|b| checkpoint_record(b, &orders, 10)));
    let checkpoints = format!("{alias}.checkpoints.internal");
    raw.create_topic(&checkpoints, 1).await;
    for chunk in rows.chunks(500) {
        raw.produce(&checkpoints, 0, chunk).await;
    }
    // Before: the edited cases' groups hold 5 (the undo restores 5), "recreated" holds 90,
    // "raised" 20; every 4th big group holds 5, the others nothing.
    for n in edited {
        raw.commit(&g(n), &orders, 0, 5).await;
    }
    raw.commit(&g("recreated"), &recreated, 0, 90).await;
    raw.commit(&g("raised"), &raised, 0, 20).await;
    for b in big.iter().step_by(4) {
        raw.commit(b, &orders, 0, 5).await;
    }
    let setup = started.elapsed();
    let mut table = Table::default();
    let nothing = Held::new();
    let at = |topic: &str, offset: i64| -> Held { Held::from([((topic.to_string(), 0), offset)]) };
    let apply = |groups: &[&str], extra: &[&str]| -> Vec<String> {
        let mut a = args(&[
            "apply",
            "--bootstrap-server",
            &server,
            "--source",
            &alias,
            "--no-progress",
            "--timeout",
            "120s",
        ]);
        for group in groups {
            a.extend(args(&["--group", group]));
        }
        a.extend(args(extra));
        a
    };
    let run = |a: &[String]| run_bounded(&bin(), a, Duration::from_secs(120));

    // ---- --undo-out on paths it must refuse: exit 2 before anything is read or written.
    let existing = dir.path().join("existing.jsonl");
    std::fs::write(&existing, "the only way back").unwrap();
    let target = dir.path().join("target.jsonl");
    std::fs::write(&target, "a symlink's target").unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let dangling = dir.path().join("dangling.jsonl");
    let nowhere = dir.path().join("nowhere.jsonl");
    std::os::unix::fs::symlink(&nowhere, &dangling).unwrap();
    let folder = dir.path().join("a-folder");
    std::fs::create_dir(&folder).unwrap();
    let missing = dir.path().join("no-such-folder").join("undo.jsonl");
    let same = dir.path().join("same.jsonl");
    let p = |path: &Path| path.display().to_string();
    let bad_paths: Vec<(&str, Vec<String>, &str)> = vec![
        (
            "undo-out: an existing file",
            apply(&[&files], &["--execute", "--undo-out", &p(&existing)]),
            "a file of that name exists",
        ),
        (
            "undo-out: a symlink to a file",
            apply(&[&files], &["--execute", "--undo-out", &p(&link)]),
            "a symlink of that name exists",
        ),
        (
            "undo-out: a dangling symlink",
            apply(&[&files], &["--execute", "--undo-out", &p(&dangling)]),
            "a symlink of that name exists",
        ),
        (
            "undo-out: a directory",
            apply(&[&files], &["--execute", "--undo-out", &p(&folder)]),
            "a directory of that name exists",
        ),
        (
            "undo-out: a missing folder",
            apply(&[&files], &["--execute", "--undo-out", &p(&missing)]),
            "its folder does not exist",
        ),
        (
            "undo-out: an unwritable place (/sys)",
            apply(
                &[&files],
                &["--execute", "--undo-out", "/sys/mm2o-undo.jsonl"],
            ),
            "nothing was read or written",
        ),
        (
            "undo-out: the same file as --plan-out",
            apply(
                &[&files],
                &[
                    "--execute",
                    "--plan-out",
                    &p(&same),
                    "--undo-out",
                    &p(&same),
                ],
            ),
            "same file as --plan-out",
        ),
    ];
    for (case, a, needle) in bad_paths {
        let r = run(&a);
        let found = raw.committed(&files).await;
        table.check(case, &r, 2, needle, [&nothing, &found, &nothing]);
    }
    let kept = [
        std::fs::read_to_string(&existing).unwrap_or_default() == "the only way back",
        std::fs::read_to_string(&target).unwrap_or_default() == "a symlink's target",
        !nowhere.exists(),
        !same.exists(),
        std::fs::read_dir(&folder).map(|d| d.count()).unwrap_or(1) == 0,
    ];
    assert!(
        kept.iter().all(|k| *k),
        "a refused --undo-out changed a file: {kept:?}"
    );

    // ---- One journaled run, then edited copies of its undo file.
    let good = dir.path().join("good.jsonl");
    let groups: Vec<String> = edited
        .iter()
        .map(|n| g(n))
        .chain([g("recreated"), g("raised")])
        .collect();
    let refs: Vec<&str> = groups.iter().map(String::as_str).collect();
    let r = run(&apply(&refs, &["--execute", "--undo-out", &p(&good)]));
    assert_eq!(r.code, Some(0), "the journaled run: {}", r.stderr);
    let lines = journal(&good);
    assert_eq!(lines.len(), groups.len() + 2, "{lines:?}");
    let header = lines[0].clone();
    let line_of = |group: &str| -> Value {
        lines
            .iter()
            .find(|l| l["group"] == group)
            .cloned()
            .unwrap_or_else(|| panic!("{group} not in the undo"))
    };
    // An undo file of the header and the given group lines.
    let undo_of = |name: &str, body: Vec<Value>| {
        let mut all = vec![header.clone()];
        all.extend(body);
        write_journal(&dir.path().join(name), &all)
    };
    let undo_run = |file: &str, server: &str| {
        run(&args(&[
            "apply",
            "--bootstrap-server",
            server,
            "--plan",
            file,
            "--execute",
            "--no-progress",
        ]))
    };
    let edit = |group: &str, f: &dyn Fn(&mut Value)| {
        let mut line = line_of(group);
        f(&mut line["partitions"][0]);
        line
    };
    let before5 = at(&orders, 5);
    let written10 = at(&orders, 10);

    let f = undo_of(
        "past-end.jsonl",
        vec![edit(&g("past-end"), &|p| {
            p["before"]["offset"] = 99999.into()
        })],
    );
    let r = undo_run(&f, &server);
    let found = raw.committed(&g("past-end")).await;
    table.check(
        "edited undo: restore 99999 on a 100-record log",
        &r,
        3,
        "past the log end",
        [&before5, &found, &written10],
    );

    let f = undo_of(
        "minus5.jsonl",
        vec![edit(&g("minus5"), &|p| p["before"]["offset"] = (-5).into())],
    );
    let r = undo_run(&f, &server);
    let found = raw.committed(&g("minus5")).await;
    table.check(
        "edited undo: restore -5",
        &r,
        3,
        "is negative",
        [&before5, &found, &written10],
    );

    // A group the run never wrote: it holds 10, committed by someone else; the edit claims the
    // run wrote 10 over 90.
    let never = g("never-written");
    raw.commit(&never, &orders, 0, 10).await;
    let mut forged = edit(&g("past-end"), &|p| p["before"]["offset"] = 90.into());
    forged["group"] = never.clone().into();
    let f = undo_of("never.jsonl", vec![forged]);
    let r = undo_run(&f, &server);
    let found = raw.committed(&never).await;
    table.check(
        "edited undo: a group the run never wrote (10 -> 90)",
        &r,
        3,
        "not-written-by-run",
        [&written10, &found, &written10],
    );

    // The same partition of a group the run wrote, on another cluster (k39 holds nothing).
    let f = undo_of("cluster.jsonl", vec![line_of(&g("cluster"))]);
    let r = undo_run(&f, k39.var("PLAINTEXT"));
    let found = raw39.committed(&g("cluster")).await;
    table.check(
        "undo written on k4 run on k39",
        &r,
        3,
        "the undo was written on cluster",
        [&nothing, &found, &nothing],
    );
    let found = raw.committed(&g("cluster")).await;
    table.check(
        "  ... and k4 untouched by it",
        &r,
        3,
        "nothing restored",
        [&written10, &found, &written10],
    );

    // An undo file of the older format: one document, no cluster id, no run id.
    let old = serde_json::json!({
        "schema_version": 1, "kind": "undo", "created_at_ms": 0,
        "groups": [{"group": g("old-file"), "partitions": [
            {"topic": orders, "partition": 0, "written": 10, "before": {"offset": 5, "metadata": ""}}]}]
    });
    let f = dir.path().join("old.json");
    std::fs::write(&f, serde_json::to_string_pretty(&old).unwrap()).unwrap();
    let r = undo_run(&p(&f), &server);
    let found = raw.committed(&g("old-file")).await;
    table.check(
        "an undo file without cluster id and run id (older format)",
        &r,
        1,
        "older mm2-offsets",
        [&before5, &found, &written10],
    );

    // A header naming no cluster.
    let mut unbound = header.clone();
    unbound["cluster_id"] = Value::Null;
    let f = write_journal(
        &dir.path().join("unbound.jsonl"),
        &[unbound, line_of(&g("old-file"))],
    );
    let r = undo_run(&f, &server);
    let found = raw.committed(&g("old-file")).await;
    table.check(
        "an undo whose header names no cluster",
        &r,
        1,
        "line 1",
        [&before5, &found, &written10],
    );

    // The topic deleted and recreated with 60 records; someone forges the run's commit (95,
    // with its marker) onto the new topic: the topic id tells them apart.
    let marker = format!(
        "src\u{1f}mm2-offsets-run:{}",
        header["run_id"].as_str().unwrap()
    );
    raw.delete_topic(&recreated).await;
    raw.create_topic(&recreated, 1).await;
    raw.fill(&recreated, 1, 60).await;
    raw.commit_with_metadata(&g("recreated"), &recreated, 0, 95, Some(&marker))
        .await;
    let f = undo_of("recreated.jsonl", vec![line_of(&g("recreated"))]);
    let r = undo_run(&f, &server);
    let found = raw.committed(&g("recreated")).await;
    table.check(
        "undo of 95 -> 90 after the topic was recreated (log end 60)",
        &r,
        3,
        "deleted and recreated",
        [&at(&recreated, 90), &found, &at(&recreated, 95)],
    );

    // The log start raised to 40 past the offset to restore (20).
    raw.delete_records(&raised, 0, 40).await;
    let f = undo_of("raised.jsonl", vec![line_of(&g("raised"))]);
    let r = undo_run(&f, &server);
    let found = raw.committed(&g("raised")).await;
    table.check(
        "undo of 30 -> 20 after DeleteRecords raised the log start to 40",
        &r,
        3,
        "below the log start",
        [&at(&raised, 20), &found, &at(&raised, 30)],
    );

    // The undo file as written: the groups still as the run left them are restored exactly.
    let r = undo_run(&p(&good), &server);
    let mut found = Held::new();
    let mut want = Held::new();
    for n in ["past-end", "minus5", "cluster", "untouched"] {
        for (k, v) in raw.committed(&g(n)).await {
            found.insert((format!("{n}.{}", k.0), k.1), v);
        }
        want.insert((format!("{n}.{orders}"), 0), 5);
    }
    table.check(
        "the undo as written (refusing the changed ones)",
        &r,
        3,
        "restored",
        [&nothing, &found, &want],
    );

    // ---- Interrupted 2,000-group runs, each then undone.
    let big_before: Vec<Held> = {
        let mut v = Vec::with_capacity(BIG);
        for b in &big {
            v.push(raw.committed(b).await);
        }
        v
    };
    assert!(big_before.iter().step_by(4).all(|h| h == &before5));
    let regex = format!("{unique}-big.*");
    let big_apply = |undo: &Path| {
        let mut a = apply(&[], &["--execute", "--undo-out", &p(undo)]);
        a.extend(args(&["--group-regex", &regex]));
        a
    };
    let mut measured: Vec<String> = Vec::new();
    let scenarios: [(&str, Interrupt); 7] = [
        (
            "SIGINT once the header is written",
            Interrupt::Signal("INT", 1),
        ),
        (
            "SIGINT after 1 wave recorded",
            Interrupt::Signal("INT", 1 + 500),
        ),
        (
            "SIGKILL after 2 waves recorded",
            Interrupt::Signal("KILL", 1 + 1000),
        ),
        (
            "SIGTERM after 3 waves recorded",
            Interrupt::Signal("TERM", 1 + 1500),
        ),
        (
            "file-size limit in wave 1 (ulimit -f 100)",
            Interrupt::FileSize(100),
        ),
        (
            "file-size limit in wave 2 (ulimit -f 300)",
            Interrupt::FileSize(300),
        ),
        (
            "SIGINT twice, output blocked (stdout unread)",
            Interrupt::TwiceWhileOutputBlocked,
        ),
    ];
    for (case, how) in scenarios {
        let undo = dir.path().join(format!("big-{}.jsonl", measured.len()));
        let t = Instant::now();
        let r = interrupted_run(&big_apply(&undo), &undo, &how);
        let took = t.elapsed();
        let lines = journal(&undo);
        let recorded: Vec<&str> = lines.iter().filter_map(|l| l["group"].as_str()).collect();
        let mut moved = 0;
        let mut uncovered = Vec::new();
        for (b, was) in big.iter().zip(&big_before) {
            let now = raw.committed(b).await;
            if &now != was {
                moved += 1;
                if !recorded.contains(&b.as_str()) {
                    uncovered.push(b.clone());
                }
            }
        }
        let (code, needle) = match how {
            Interrupt::Signal("INT", _) => (130, "interrupted by signal 2"),
            Interrupt::Signal("TERM", _) => (143, "interrupted by signal 15"),
            Interrupt::Signal(..) => (-9, ""),
            Interrupt::FileSize(_) => (1, "could not be written (File too large"),
            Interrupt::TwiceWhileOutputBlocked => (130, "interrupted again: stopping now"),
        };
        let status_ok = if code == -9 {
            r.code.is_none()
        } else {
            r.code == Some(code) && r.stderr.contains(needle)
        };
        // Then the undo of what the file holds.
        let u = undo_run(&p(&undo), &server);
        let mut restored = 0;
        let mut wrong = Vec::new();
        for (b, was) in big.iter().zip(&big_before) {
            let now = raw.committed(b).await;
            if &now == was {
                restored += 1;
            } else {
                wrong.push(format!("{b}: {now:?}, was {was:?}"));
            }
        }
        let undo_ok = u.code == Some(0) && wrong.is_empty();
        measured.push(format!(
            "{case:<36} | {:>8} | {:>8} | {moved:>9} | {:>9} | {restored:>5}/{BIG} | {:>6.1}s | {}",
            r.code.map_or("killed".to_string(), |c| c.to_string()),
            recorded.len(),
            uncovered.len(),
            took.as_secs_f64(),
            if status_ok && undo_ok && uncovered.is_empty() {
                "ok"
            } else {
                "FAILED"
            }
        ));
        table.rows.push(Row {
            case: case.to_string(),
            code: r.code,
            before: format!("{moved} moved"),
            after: format!("{restored} back"),
            words: r
                .stderr
                .lines()
                .find(|l| !needle.is_empty() && l.contains(needle))
                .unwrap_or("")
                .chars()
                .take(160)
                .collect(),
            failure: (!(status_ok && undo_ok && uncovered.is_empty())).then(|| {
                format!(
                    "run exit {:?} (wanted {code}, {needle:?}); {} moved group(s) not in the undo file {:?}; undo exit {:?}; not restored: {:?}\n--- run stderr:\n{}\n--- undo stderr:\n{}",
                    r.code,
                    uncovered.len(),
                    uncovered.iter().take(5).collect::<Vec<_>>(),
                    u.code,
                    wrong.iter().take(5).collect::<Vec<_>>(),
                    r.stderr.chars().take(3000).collect::<String>(),
                    u.stderr.chars().take(3000).collect::<String>()
                )
            }),
        });
    }
    table.print();
    eprintln!(
        "\n{:<36} | run exit | recorded | committed | uncovered | restored   | run    | result",
        "interrupt (2,000 groups)"
    );
    for m in &measured {
        eprintln!("{m}");
    }
    eprintln!(
        "undo_hostile: {} cases, setup {setup:?}, total {:?}",
        table.rows.len(),
        started.elapsed()
    );
    let failures = table.failures();
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// How a run is cut short.
enum Interrupt {
    /// `kill -SIG` once the undo file has this many whole lines.
    Signal(&'static str, usize),
    /// A file-size limit of this many 512-byte blocks (`ulimit -f` in dash).
    FileSize(u64),
    /// Nobody reads stdout: once a thread of the run waits in `pipe_write` (every group
    /// committed, the answer being printed; the command's one worker thread then waits on its
    /// writer), SIGINT, and SIGINT again, which must stop the run at once all the same.
    TwiceWhileOutputBlocked,
}

/// Runs the CLI with `a`, cut short as `how` says; the undo file is `undo`.
fn interrupted_run(a: &[String], undo: &Path, how: &Interrupt) -> Run {
    let started = Instant::now();
    let mut command = match how {
        Interrupt::FileSize(blocks) => {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!("ulimit -f {blocks}; exec \"$0\" \"$@\""))
                .arg(bin())
                .args(a);
            c
        }
        Interrupt::Signal(..) | Interrupt::TwiceWhileOutputBlocked => {
            let mut c = Command::new(bin());
            c.args(a);
            c
        }
    };
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the CLI");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = child.stdout.take().unwrap();
    // Held open unread until the run ends, for TwiceWhileOutputBlocked (closing it would
    // end the run with a broken pipe instead).
    let (out, mut unread) = match how {
        Interrupt::TwiceWhileOutputBlocked => (None, Some(stdout)),
        _ => (Some(drain(Box::new(stdout))), None),
    };
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let mut sent = false;
    let limit = Duration::from_secs(180);
    let mut killed = false;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if let (Interrupt::Signal(signal, lines), false) = (how, sent) {
            let whole = std::fs::read_to_string(undo)
                .map(|t| t.matches('\n').count())
                .unwrap_or(0);
            if whole >= *lines {
                let _ = Command::new("kill")
                    .arg(format!("-{signal}"))
                    .arg(child.id().to_string())
                    .status();
                sent = true;
            }
        }
        if let (Interrupt::TwiceWhileOutputBlocked, false) = (how, sent)
            && waits_in_pipe_write(child.id())
        {
            std::thread::sleep(Duration::from_millis(300));
            for _ in 0..2 {
                let _ = Command::new("kill")
                    .arg("-INT")
                    .arg(child.id().to_string())
                    .status();
                std::thread::sleep(Duration::from_millis(200));
            }
            sent = true;
        }
        if started.elapsed() > limit {
            killed = true;
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let stdout = match (out, unread.as_mut()) {
        (Some(out), _) => out.join().unwrap_or_default(),
        (None, Some(pipe)) => {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        }
        (None, None) => Vec::new(),
    };
    Run {
        code: status.code(),
        stdout,
        stderr: String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned(),
        elapsed: started.elapsed(),
        killed,
    }
}

/// Whether a thread of process `pid` waits in the kernel to write to a full pipe (`pipe_write`,
/// `anon_pipe_write` on newer kernels).
fn waits_in_pipe_write(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|task| {
        std::fs::read_to_string(task.path().join("wchan"))
            .is_ok_and(|w| w.trim().ends_with("pipe_write"))
    })
}

/// What `raw` holds for each of `groups`, keyed by the group's last name and the topic.
async fn held_by(raw: &Raw, groups: &[(&str, String)]) -> Held {
    let mut held = Held::new();
    for (name, group) in groups {
        for ((topic, partition), offset) in raw.committed(group).await {
            // Shown as `held:orders-0=5` (the table shows what follows the last dot).
            let short = topic.rsplit('.').next().unwrap_or(&topic);
            held.insert((format!("{topic}.{name}:{short}"), partition), offset);
        }
    }
    held
}

/// The write-ahead undo on the paths the first table does not run (issue 29): `apply --plan
/// FILE --execute --undo-out`, `failback --execute --undo-out` and `failback --plan FILE
/// --execute --undo-out`, each given every kind of bad `--undo-out` path (refused before
/// anything is written, the file system left as it was), then a good one: the undo file covers
/// every committed group, and executing it restores them (read back), a group that held no
/// offset before included (its offsets deleted). k4 is the target of `apply` and the primary of
/// `failback`; k39 is the backup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_undo_of_saved_plans_and_of_failback_on_kafka_4() {
    let started = Instant::now();
    let (k4, k39) = (cluster("k4"), cluster("k39"));
    let (raw, raw39) = (Raw::connect(&k4).await, Raw::connect(&k39).await);
    for c in [&k4, &k39] {
        let client = mm2_offsets::client::KafkaClient::connect(c.plaintext())
            .await
            .unwrap();
        crate::support::wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = |path: &Path| path.display().to_string();
    let unique = crate::support::unique_topic("undo3").replace('-', "");
    let g = |name: &str| format!("{unique}-{name}");
    let (k4_server, k39_server) = (
        k4.var("PLAINTEXT").to_string(),
        k39.var("PLAINTEXT").to_string(),
    );
    let run = |a: &[String]| run_bounded(&bin(), a, Duration::from_secs(120));
    let mut table = Table::default();

    // ---- apply's flow: checkpoints of `alias` on k4 to 10; "held" holds 5 before, "fresh"
    // nothing (the group is not on k4: its undo deletes).
    let alias = format!("{unique}a");
    let orders = format!("{alias}.orders");
    raw.create_topic(&orders, 1).await;
    raw.fill(&orders, 1, 100).await;
    let checkpoints = format!("{alias}.checkpoints.internal");
    raw.create_topic(&checkpoints, 1).await;
    let (a_held, a_fresh) = (g("a-held"), g("a-fresh"));
    raw.produce(
        &checkpoints,
        0,
        &[
            checkpoint_record(&a_held, &orders, 10),
            checkpoint_record(&a_fresh, &orders, 10),
        ],
    )
    .await;
    raw.commit(&a_held, &orders, 0, 5).await;
    let apply_groups = [("held", a_held.clone()), ("fresh", a_fresh.clone())];
    let apply_before = held_by(&raw, &apply_groups).await;
    let mut apply_written = Held::new();
    for n in ["held", "fresh"] {
        apply_written.insert((format!("{orders}.{n}:orders"), 0), 10);
    }
    let plan = dir.path().join("apply-plan.json");
    let r = run(&args(&[
        "apply",
        "--bootstrap-server",
        &k4_server,
        "--source",
        &alias,
        "--group",
        &a_held,
        "--group",
        &a_fresh,
        "--no-progress",
        "--plan-out",
        &p(&plan),
    ]));
    assert_eq!(r.code, Some(0), "the plan: {}", r.stderr);
    let apply_plan = |undo: &str| {
        args(&[
            "apply",
            "--bootstrap-server",
            &k4_server,
            "--plan",
            &p(&plan),
            "--execute",
            "--no-progress",
            "--undo-out",
            undo,
        ])
    };

    // ---- failback's flow: `orders` on k4 (the primary), its replica on k39 with 10 older
    // records first, the forward syncs (0,10) (50,60) (99,109) on k4, checkpoints 50 -> 60 on
    // k39; each group committed 70 on the replica: failing back gives 60. "held" holds 5 on
    // k4 before, "fresh" nothing.
    let (primary_alias, backup_alias) = (format!("{unique}p"), format!("{unique}b"));
    let topic = format!("{unique}.orders");
    let replica = format!("{primary_alias}.{topic}");
    raw.create_topic(&topic, 1).await;
    raw.fill(&topic, 1, 100).await;
    raw39.create_topic(&replica, 1).await;
    raw39.fill(&replica, 1, 110).await;
    let syncs_topic = format!("mm2-offset-syncs.{backup_alias}.internal");
    raw.create_topic(&syncs_topic, 1).await;
    raw.produce(
        &syncs_topic,
        0,
        &[
            sync_record(&topic, 0, 10),
            sync_record(&topic, 50, 60),
            sync_record(&topic, 99, 109),
        ],
    )
    .await;
    let (f_held, f_fresh) = (g("f-held"), g("f-fresh"));
    let fb_checkpoints = format!("{primary_alias}.checkpoints.internal");
    raw39.create_topic(&fb_checkpoints, 1).await;
    let forward: Records = [&f_held, &f_fresh]
        .iter()
        .map(|group| {
            let key = checkpoint::encode_key(&CheckpointKey {
                group: group.as_bytes(),
                topic: replica.as_bytes(),
                partition: 0,
            })
            .unwrap();
            let value = checkpoint::encode_value(&CheckpointValue {
                version: 0,
                upstream_offset: 50,
                downstream_offset: 60,
                metadata: b"",
            })
            .unwrap();
            (Some(key), Some(value))
        })
        .collect();
    raw39.produce(&fb_checkpoints, 0, &forward).await;
    for group in [&f_held, &f_fresh] {
        raw39.commit(group, &replica, 0, 70).await;
    }
    raw.commit(&f_held, &topic, 0, 5).await;
    let failback_groups = [("held", f_held.clone()), ("fresh", f_fresh.clone())];
    let failback_before = held_by(&raw, &failback_groups).await;
    let mut failback_written = Held::new();
    for n in ["held", "fresh"] {
        failback_written.insert((format!("{topic}.{n}:orders"), 0), 60);
    }
    let failback = |extra: &[&str]| {
        let mut a = args(&[
            "failback",
            "--bootstrap-server",
            &k4_server,
            "--from-bootstrap-server",
            &k39_server,
            "--source",
            &primary_alias,
            "--target",
            &backup_alias,
            "--timeout",
            "60s",
        ]);
        a.extend(args(extra));
        a
    };
    let fb_plan = dir.path().join("failback-plan.json");
    let r = run(&failback(&[
        "--group",
        &f_held,
        "--group",
        &f_fresh,
        "--plan-out",
        &p(&fb_plan),
    ]));
    assert_eq!(r.code, Some(0), "the failback plan: {}", r.stderr);
    let failback_fresh = |undo: &str| {
        failback(&[
            "--group",
            &f_held,
            "--group",
            &f_fresh,
            "--execute",
            "--undo-out",
            undo,
        ])
    };
    let failback_plan =
        |undo: &str| failback(&["--plan", &p(&fb_plan), "--execute", "--undo-out", undo]);
    let setup = started.elapsed();

    // ---- Every bad --undo-out path, on each of the three paths.
    let existing = dir.path().join("existing.jsonl");
    std::fs::write(&existing, "the only way back").unwrap();
    let target = dir.path().join("target.jsonl");
    std::fs::write(&target, "a symlink's target").unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let dangling = dir.path().join("dangling.jsonl");
    let nowhere = dir.path().join("nowhere.jsonl");
    std::os::unix::fs::symlink(&nowhere, &dangling).unwrap();
    let folder = dir.path().join("a-folder");
    std::fs::create_dir(&folder).unwrap();
    let missing = dir.path().join("no-such-folder").join("undo.jsonl");
    let bad: [(&str, String, &str); 5] = [
        (
            "an existing file",
            p(&existing),
            "a file of that name exists",
        ),
        (
            "a symlink to a file",
            p(&link),
            "a symlink of that name exists",
        ),
        (
            "a dangling symlink",
            p(&dangling),
            "a symlink of that name exists",
        ),
        ("a directory", p(&folder), "a directory of that name exists"),
        ("a missing folder", p(&missing), "its folder does not exist"),
    ];
    type Path3<'a> = (
        &'a str,
        &'a dyn Fn(&str) -> Vec<String>,
        &'a [(&'a str, String)],
        &'a Held,
    );
    let paths: [Path3; 3] = [
        ("apply --plan", &apply_plan, &apply_groups, &apply_before),
        (
            "failback",
            &failback_fresh,
            &failback_groups,
            &failback_before,
        ),
        (
            "failback --plan",
            &failback_plan,
            &failback_groups,
            &failback_before,
        ),
    ];
    for (path, command, groups, before) in paths {
        for (what, undo, needle) in &bad {
            let r = run(&command(undo));
            let found = held_by(&raw, groups).await;
            table.check(
                &format!("{path} --undo-out {what}"),
                &r,
                2,
                needle,
                [before, &found, before],
            );
        }
    }
    let kept = [
        std::fs::read_to_string(&existing).unwrap_or_default() == "the only way back",
        std::fs::read_to_string(&target).unwrap_or_default() == "a symlink's target",
        !nowhere.exists(),
        std::fs::read_dir(&folder).map(|d| d.count()).unwrap_or(1) == 0,
    ];
    assert!(
        kept.iter().all(|k| *k),
        "a refused --undo-out changed a file: {kept:?}"
    );

    // ---- A good --undo-out on each path: every committed group recorded, then the undo
    // executed and the groups read back as they were.
    let undo_run = |file: &str| {
        run(&args(&[
            "apply",
            "--bootstrap-server",
            &k4_server,
            "--plan",
            file,
            "--execute",
            "--no-progress",
        ]))
    };
    let cases: [(&str, Path3, &Held); 3] = [
        ("apply --plan", paths[0], &apply_written),
        ("failback", paths[1], &failback_written),
        ("failback --plan", paths[2], &failback_written),
    ];
    for (i, (path, (_, command, groups, before), written)) in cases.into_iter().enumerate() {
        let undo = dir.path().join(format!("good-{i}.jsonl"));
        let r = run(&command(&p(&undo)));
        let found = held_by(&raw, groups).await;
        table.check(
            &format!("{path} --execute --undo-out NEW"),
            &r,
            0,
            "group(s) recorded in",
            [before, &found, written],
        );
        let lines = journal(&undo);
        let recorded: Vec<&str> = lines.iter().filter_map(|l| l["group"].as_str()).collect();
        let uncovered: Vec<&str> = groups
            .iter()
            .map(|(_, group)| group.as_str())
            .filter(|group| !recorded.contains(group))
            .collect();
        if !uncovered.is_empty() {
            table.rows.push(Row {
                case: format!("{path}: the undo file covers every committed group"),
                code: r.code,
                before: String::new(),
                after: String::new(),
                words: String::new(),
                failure: Some(format!("not recorded: {uncovered:?}; file: {lines:?}")),
            });
        }
        let u = undo_run(&p(&undo));
        let found = held_by(&raw, groups).await;
        table.check(
            "  ... its undo executed",
            &u,
            0,
            "restored",
            [written, &found, before],
        );
    }
    // An undo file given with --undo-out: refused (an undo is not undone in turn), and the
    // file --undo-out created at once is removed again (an older build left it, empty).
    let again = dir.path().join("undo-of-the-undo.jsonl");
    let mut a = args(&[
        "apply",
        "--bootstrap-server",
        &k4_server,
        "--plan",
        &p(&dir.path().join("good-0.jsonl")),
        "--execute",
        "--no-progress",
        "--undo-out",
    ]);
    a.push(p(&again));
    let r = run(&a);
    let found = held_by(&raw, &apply_groups).await;
    table.check(
        "apply --plan UNDO --execute --undo-out NEW",
        &r,
        2,
        "run as it is: --undo-out does not apply to it",
        [&apply_before, &found, &apply_before],
    );
    if again.exists() {
        table.rows.push(Row {
            case: "  ... and NEW is not left behind".to_string(),
            code: r.code,
            before: String::new(),
            after: String::new(),
            words: String::new(),
            failure: Some(format!("{} exists", again.display())),
        });
    }
    table.print();
    eprintln!(
        "undo_hostile (saved plans, failback): {} cases, setup {setup:?}, total {:?}",
        table.rows.len(),
        started.elapsed()
    );
    let failures = table.failures();
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// A checkpoint of the group id `group` (raw bytes) on partition 0 of `topic` at `downstream`.
fn checkpoint_of_bytes(group: &[u8], topic: &str, downstream: i64) -> crate::support::raw::Record {
    let key = checkpoint::encode_key(&CheckpointKey {
        group,
        topic: topic.as_bytes(),
        partition: 0,
    })
    .unwrap();
    let value = checkpoint::encode_value(&CheckpointValue {
        version: 0,
        upstream_offset: downstream + 1000,
        downstream_offset: downstream,
        metadata: b"src",
    })
    .unwrap();
    (Some(key), Some(value))
}

/// Two checkpoint keys whose group ids are different invalid UTF-8 (`<p>-x\xff` at 10 and
/// `<p>-x\xfe` at 20, both decoding leniently to `<p>-x\u{fffd}`, where Java would merge them),
/// beside a valid group: `translate` shows two rows, each named with its invalid byte escaped
/// and with its own offset, and warns of each; `apply --execute` writes neither and says why
/// (`group-id-not-utf8`), exit 3, and the cluster read back holds nothing under the decoded or
/// the escaped names while the valid group is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_ids_not_utf8_are_never_merged_into_a_write_on_kafka_4() {
    let k4 = cluster("k4");
    let raw = Raw::connect(&k4).await;
    {
        let client = mm2_offsets::client::KafkaClient::connect(k4.plaintext())
            .await
            .unwrap();
        crate::support::wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
    }
    let unique = crate::support::unique_topic("undo3u").replace('-', "");
    let orders = format!("{unique}.orders");
    raw.create_topic(&orders, 1).await;
    raw.fill(&orders, 1, 100).await;
    let checkpoints = format!("{unique}.checkpoints.internal");
    raw.create_topic(&checkpoints, 1).await;
    let (ff, fe) = (
        [format!("{unique}-x").as_bytes(), b"\xff"].concat(),
        [format!("{unique}-x").as_bytes(), b"\xfe"].concat(),
    );
    let valid = format!("{unique}-valid");
    raw.produce(
        &checkpoints,
        0,
        &[
            checkpoint_of_bytes(&ff, &orders, 10),
            checkpoint_of_bytes(&fe, &orders, 20),
            checkpoint_of_bytes(valid.as_bytes(), &orders, 30),
        ],
    )
    .await;
    let decoded = format!("{unique}-x\u{fffd}");
    let server = k4.var("PLAINTEXT").to_string();
    let run = |a: &[String]| run_bounded(&bin(), a, Duration::from_secs(60));
    let regex = format!("{unique}-.*");
    let common = |command: &str| {
        args(&[
            command,
            "--bootstrap-server",
            &server,
            "--source",
            &unique,
            "--group-regex",
            &regex,
            "--no-progress",
        ])
    };

    let mut translate = common("translate");
    translate.extend(args(&["-o", "json"]));
    let t = run(&translate);
    let stdout = String::from_utf8_lossy(&t.stdout).into_owned();
    println!("--- translate\n{stdout}{}", t.stderr);
    assert_eq!(t.code, Some(0), "{}", t.stderr);
    let (name_ff, name_fe) = (format!("{unique}-x\\xff"), format!("{unique}-x\\xfe"));
    // Two rows, never one merged: each byte string with its own offset.
    let doc: Value = serde_json::from_str(stdout.trim()).unwrap();
    let mut rows: Vec<(String, i64)> = doc["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["group"].as_str().unwrap().to_string(),
                o["offset"].as_i64().unwrap(),
            )
        })
        .collect();
    rows.sort();
    assert_eq!(
        rows,
        [
            (valid.clone(), 30),
            (name_fe.clone(), 20),
            (name_ff.clone(), 10)
        ],
        "{stdout}"
    );
    assert!(
        t.stderr.contains("is not valid UTF-8 in the checkpoints")
            && t.stderr
                .contains(&format!("\"{}\"", name_ff.escape_debug()))
            && t.stderr
                .contains(&format!("\"{}\"", name_fe.escape_debug()))
            && t.stderr.contains("apply never writes it"),
        "{}",
        t.stderr
    );

    let mut a = common("apply");
    a.extend(args(&["--execute", "-o", "json"]));
    let r = run(&a);
    let stdout = String::from_utf8_lossy(&r.stdout).into_owned();
    println!("--- apply --execute\n{stdout}{}", r.stderr);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    let doc: Value = serde_json::from_str(stdout.trim()).unwrap();
    let text = doc.to_string();
    assert!(
        text.contains("group-id-not-utf8") || text.contains("group_id_not_utf8"),
        "{text}"
    );
    assert!(
        text.contains(&format!("{unique}-x\\\\xff"))
            && text.contains(&format!("{unique}-x\\\\xfe")),
        "both byte strings named: {text}"
    );
    for name in [&decoded, &name_ff, &name_fe] {
        assert!(
            raw.committed(name).await.is_empty(),
            "a group id that is not UTF-8 was written as {name:?}"
        );
    }
    assert_eq!(
        raw.committed(&valid).await,
        Held::from([((orders.clone(), 0), 30)]),
        "the valid group beside it is written"
    );
}

/// `apply --execute --undo-out` and its undo on Kafka 2.8 (k28, ZooKeeper mode). Topic ids
/// came with 2.8 (KIP-516: Metadata v10 names them in ZooKeeper mode too), so the undo file is
/// bound to the topic's id there as on 4.x (asserted below); no broker of the harness is older.
/// One group holding 5 before, one holding nothing (its undo deletes, OffsetDelete on 2.8);
/// written to 10, then undone, each read back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_and_its_undo_on_kafka_2_8() {
    let k28 = cluster("k28");
    let raw = Raw::connect(&k28).await;
    {
        let client = mm2_offsets::client::KafkaClient::connect(k28.plaintext())
            .await
            .unwrap();
        crate::support::wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
    }
    let unique = crate::support::unique_topic("undo3k").replace('-', "");
    let orders = format!("{unique}.orders");
    raw.create_topic(&orders, 1).await;
    raw.fill(&orders, 1, 100).await;
    let checkpoints = format!("{unique}.checkpoints.internal");
    raw.create_topic(&checkpoints, 1).await;
    let (held, fresh) = (format!("{unique}-held"), format!("{unique}-fresh"));
    raw.produce(
        &checkpoints,
        0,
        &[
            checkpoint_record(&held, &orders, 10),
            checkpoint_record(&fresh, &orders, 10),
        ],
    )
    .await;
    raw.commit(&held, &orders, 0, 5).await;
    let server = k28.var("PLAINTEXT").to_string();
    let dir = tempfile::tempdir().unwrap();
    let undo = dir.path().join("undo.jsonl");
    let run = |a: &[String]| run_bounded(&bin(), a, Duration::from_secs(60));
    let at = |o: i64| Held::from([((orders.clone(), 0), o)]);
    let r = run(&args(&[
        "apply",
        "--bootstrap-server",
        &server,
        "--source",
        &unique,
        "--group",
        &held,
        "--group",
        &fresh,
        "--no-progress",
        "--execute",
        "--undo-out",
        undo.to_str().unwrap(),
    ]));
    println!("--- apply on k28\n{}", r.stderr);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("2 group(s) recorded in"), "{}", r.stderr);
    assert_eq!(raw.committed(&held).await, at(10));
    assert_eq!(raw.committed(&fresh).await, at(10));
    let lines = journal(&undo);
    println!("--- the undo file\n{lines:#?}");
    let ids: Vec<&Value> = lines
        .iter()
        .filter_map(|l| l["partitions"].as_array())
        .flatten()
        .map(|p| &p["topic_id"])
        .collect();
    assert!(
        ids.len() == 2
            && ids
                .iter()
                .all(|id| id.as_str().is_some_and(|s| s.len() == 22)),
        "each row bound to the topic's id on 2.8: {ids:?}"
    );
    let u = run(&args(&[
        "apply",
        "--bootstrap-server",
        &server,
        "--plan",
        undo.to_str().unwrap(),
        "--execute",
        "--no-progress",
    ]));
    println!(
        "--- its undo on k28\n{}{}",
        String::from_utf8_lossy(&u.stdout),
        u.stderr
    );
    assert_eq!(u.code, Some(0), "{}", u.stderr);
    assert_eq!(raw.committed(&held).await, at(5), "restored to 5");
    assert!(raw.committed(&fresh).await.is_empty(), "its offset deleted");
}

/// A proxy in front of one broker's listener (k4 is a single node) through which a client's
/// every connection goes: Metadata and FindCoordinator answers name the proxy's port instead of
/// the broker's. Once the first OffsetCommit request has crossed it, OffsetFetch answers are
/// swallowed: the commit is acknowledged, its read-back never answered.
struct ReadBackProxy {
    port: u16,
    commits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    swallowed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for ReadBackProxy {
    fn drop(&mut self) {
        // Dropped inside the test's async context, where a runtime may not block to stop.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl ReadBackProxy {
    const METADATA: i16 = 3;
    const OFFSET_COMMIT: i16 = 8;
    const OFFSET_FETCH: i16 = 9;
    const FIND_COORDINATOR: i16 = 10;

    fn start(broker: std::net::SocketAddr) -> ReadBackProxy {
        use std::sync::Arc;
        use std::sync::atomic::AtomicUsize;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        // Bound here, served on the proxy's own runtime (the test's runtime may be blocked
        // waiting for the CLI).
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let commits = Arc::new(AtomicUsize::new(0));
        let swallowed = Arc::new(AtomicUsize::new(0));
        let (c, s) = (commits.clone(), swallowed.clone());
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((client, _)) = listener.accept().await {
                let (c, s) = (c.clone(), s.clone());
                tokio::spawn(async move {
                    let _ = Self::connection(client, broker, port, c, s).await;
                });
            }
        });
        ReadBackProxy {
            port,
            commits,
            swallowed,
            runtime: Some(runtime),
        }
    }

    async fn connection(
        client: tokio::net::TcpStream,
        broker: std::net::SocketAddr,
        port: u16,
        commits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
        swallowed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) -> std::io::Result<()> {
        use std::sync::atomic::Ordering;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let server = tokio::net::TcpStream::connect(broker).await?;
        let (mut client_r, mut client_w) = client.into_split();
        let (mut server_r, mut server_w) = server.into_split();
        let in_flight: std::sync::Arc<std::sync::Mutex<BTreeMap<i32, (i16, i16)>>> =
            Default::default();
        let noted = in_flight.clone();
        let counted = commits.clone();
        let up = tokio::spawn(async move {
            loop {
                let mut len = [0u8; 4];
                client_r.read_exact(&mut len).await?;
                let mut body = vec![0u8; i32::from_be_bytes(len).max(8) as usize];
                client_r.read_exact(&mut body).await?;
                let key = i16::from_be_bytes([body[0], body[1]]);
                let version = i16::from_be_bytes([body[2], body[3]]);
                let corr = i32::from_be_bytes([body[4], body[5], body[6], body[7]]);
                noted.lock().unwrap().insert(corr, (key, version));
                if key == Self::OFFSET_COMMIT {
                    counted.fetch_add(1, Ordering::SeqCst);
                }
                server_w.write_all(&len).await?;
                server_w.write_all(&body).await?;
            }
            #[allow(unreachable_code)]
            Ok::<(), std::io::Error>(())
        });
        loop {
            let mut len = [0u8; 4];
            if server_r.read_exact(&mut len).await.is_err() {
                break;
            }
            let mut frame = vec![0u8; i32::from_be_bytes(len).max(4) as usize];
            server_r.read_exact(&mut frame).await?;
            let corr = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
            let (key, version) = in_flight.lock().unwrap().remove(&corr).unwrap_or((-1, -1));
            if key == Self::OFFSET_FETCH && commits.load(Ordering::SeqCst) > 0 {
                swallowed.fetch_add(1, Ordering::SeqCst);
                continue;
            }
            let frame = match key {
                Self::METADATA | Self::FIND_COORDINATOR => {
                    Self::rewrite(key, version, &frame, port).unwrap_or(frame)
                }
                _ => frame,
            };
            client_w
                .write_all(&(frame.len() as i32).to_be_bytes())
                .await?;
            client_w.write_all(&frame).await?;
        }
        up.abort();
        Ok(())
    }

    /// The response `frame` (header and body) with every broker's port replaced by `port`.
    fn rewrite(key: i16, version: i16, frame: &[u8], port: u16) -> Option<Vec<u8>> {
        use kafka_protocol::messages::{
            ApiKey, FindCoordinatorResponse, MetadataResponse, ResponseHeader,
        };
        use kafka_protocol::protocol::{Decodable, Encodable};
        let api = ApiKey::try_from(key).ok()?;
        let header_version = api.response_header_version(version);
        let mut buf = bytes::Bytes::copy_from_slice(frame);
        let header = ResponseHeader::decode(&mut buf, header_version).ok()?;
        let mut out = bytes::BytesMut::new();
        header.encode(&mut out, header_version).ok()?;
        if key == Self::METADATA {
            let mut m = MetadataResponse::decode(&mut buf, version).ok()?;
            for b in &mut m.brokers {
                b.port = i32::from(port);
            }
            m.encode(&mut out, version).ok()?;
        } else {
            let mut f = FindCoordinatorResponse::decode(&mut buf, version).ok()?;
            if f.port > 0 {
                f.port = i32::from(port);
            }
            for c in &mut f.coordinators {
                c.port = i32::from(port);
            }
            f.encode(&mut out, version).ok()?;
        }
        Some(out.to_vec())
    }
}

/// The `unverified` outcome on a real Kafka 4.4: the coordinator acknowledges the commit, the
/// read-back (OffsetFetch) is never answered (swallowed by a proxy in front of k4 once the
/// commit was sent; `request.timeout.ms=1000`). `apply --execute --undo-out` must say
/// "unverified" (not committed-and-read-back, not failed), exit 3, count it in the JSON
/// summary; the cluster read back directly holds what was written, the undo file covers the
/// group, and the undo (run directly) deletes it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acknowledged_commit_not_read_back_is_unverified_on_kafka_4() {
    let k4 = cluster("k4");
    let raw = Raw::connect(&k4).await;
    {
        let client = mm2_offsets::client::KafkaClient::connect(k4.plaintext())
            .await
            .unwrap();
        crate::support::wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
    }
    let unique = crate::support::unique_topic("undo3v").replace('-', "");
    let orders = format!("{unique}.orders");
    raw.create_topic(&orders, 1).await;
    raw.fill(&orders, 1, 100).await;
    let checkpoints = format!("{unique}.checkpoints.internal");
    raw.create_topic(&checkpoints, 1).await;
    let group = format!("{unique}-g");
    raw.produce(&checkpoints, 0, &[checkpoint_record(&group, &orders, 10)])
        .await;
    let broker: std::net::SocketAddr = k4.var("PLAINTEXT").parse().unwrap();
    let proxy = ReadBackProxy::start(broker);
    let dir = tempfile::tempdir().unwrap();
    let undo = dir.path().join("undo.jsonl");
    let through = format!("127.0.0.1:{}", proxy.port);
    let r = run_bounded(
        &bin(),
        &args(&[
            "apply",
            "--bootstrap-server",
            &through,
            "--source",
            &unique,
            "--group",
            &group,
            "--no-progress",
            "--timeout",
            "15s",
            "-X",
            "request.timeout.ms=1000",
            "--execute",
            "--undo-out",
            undo.to_str().unwrap(),
            "-o",
            "json",
        ]),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&r.stdout).into_owned();
    println!(
        "--- apply through the proxy ({} OffsetCommit request(s), {} OffsetFetch answer(s) swallowed)\n{}",
        proxy.commits.load(std::sync::atomic::Ordering::SeqCst),
        proxy.swallowed.load(std::sync::atomic::Ordering::SeqCst),
        r.stderr
    );
    assert!(
        proxy.swallowed.load(std::sync::atomic::Ordering::SeqCst) > 0,
        "no read-back crossed the proxy: {}",
        r.stderr
    );
    assert_eq!(r.code, Some(3), "{}\n{stdout}", r.stderr);
    assert!(
        r.stderr.contains(
            "1 committed (the coordinator acknowledged it) but not read back: unverified"
        ),
        "{}",
        r.stderr
    );
    let doc: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(doc["summary"]["unverified"], 1, "{}", doc["summary"]);
    assert_eq!(doc["summary"]["committed"], 0, "{}", doc["summary"]);
    assert_eq!(doc["summary"]["failed"], 0, "{}", doc["summary"]);
    let held = Held::from([((orders.clone(), 0), 10)]);
    assert_eq!(
        raw.committed(&group).await,
        held,
        "what the broker acknowledged"
    );
    let lines = journal(&undo);
    assert!(
        lines.iter().any(|l| l["group"] == group.as_str()),
        "the undo file covers the group: {lines:?}"
    );
    let u = run_bounded(
        &bin(),
        &args(&[
            "apply",
            "--bootstrap-server",
            k4.var("PLAINTEXT"),
            "--plan",
            undo.to_str().unwrap(),
            "--execute",
            "--no-progress",
        ]),
        Duration::from_secs(60),
    );
    println!(
        "--- its undo (directly)\n{}{}",
        String::from_utf8_lossy(&u.stdout),
        u.stderr
    );
    assert_eq!(u.code, Some(0), "{}", u.stderr);
    assert!(
        raw.committed(&group).await.is_empty(),
        "the undo deleted it"
    );
}
