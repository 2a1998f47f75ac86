//! The fault matrix (RELIABILITY.md): every fault injected during a `translate --all-groups` read,
//! by the command line a user runs, of a ~3.5 MB checkpoints topic on the 3-node KRaft cluster
//! that `protocol-tests/harness/cluster3.sh up` starts (replication factor 3, six partitions led
//! by three different brokers), reached only through the fault proxy in `support/proxy.rs`.
//!
//! The `apply-*` rows (`faults/apply.rs`) inject faults aimed at the group coordinator's answers
//! during `apply --execute` of 40 groups, and check the report, partition by partition, against
//! what the coordinator holds afterwards.
//!
//! For each row the outcome must be the exact answer of the no-fault read, or an explicit error
//! (or `complete: false`) within the deadline; never a silent partial answer, a hang past the
//! deadline or a panic. The rows run one after the other in ONE test (they share the cluster,
//! the proxy and a topic whose state later rows change), and each prints a markdown row; the
//! matrix is also written to `protocol-tests/work/faults-matrix.md` for RELIABILITY.md.
//!
//! The `match-*` rows (`faults/matching.rs`) inject faults while `translate --precise
//! --match-records` reads the records of both sides of a hand-laid MM2 layout, and check every
//! row against the truth.
//!
//! `MM2O_FAULTS_ONLY=name,name` runs a subset (the baseline always runs). Every row runs by
//! default; a row whose outcome is unsafe fails the suite.

mod apply;
mod matching;

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::child::Run;
use crate::support::proxy::{Fault, FaultProxy};
use crate::support::{Cluster, cluster, unique_topic};

const PARTITIONS: i32 = 6;
/// Preferred replicas per partition: leaders 1, 2, 3, 1, 2, 3.
const ASSIGNMENT: &str = "1:2:3,2:3:1,3:1:2,1:3:2,2:1:3,3:2:1";
const GROUPS: i64 = 2500;
const TOPIC_PARTITIONS: i32 = 4;
const ROUNDS: i64 = 5;
/// Slack for the process to print and exit once its deadline has passed.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// Past `--timeout` + this, the run is killed and counted as a hang
/// (`MM2O_FAULTS_HANG_AFTER_S` changes it, to measure how long a hang really lasts).
fn hang_after() -> Duration {
    let secs = std::env::var("MM2O_FAULTS_HANG_AFTER_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    Duration::from_secs(secs)
}

type Answer = BTreeMap<(String, String, i64), i64>;

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as i16).to_be_bytes());
    out.extend_from_slice(s);
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Writes the checkpoints topic (RF 3, spread leaders) and returns the answer a complete read
/// must give: per key, the last round's downstream offset.
fn write_topic(c3: &Cluster, source: &str) -> Answer {
    let topic = format!("{source}.checkpoints.internal");
    create_topic(c3, &topic, &["--replica-assignment", ASSIGNMENT]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("checkpoints.txt");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
    let mut answer = Answer::new();
    for round in 0..ROUNDS {
        for g in 0..GROUPS {
            let group = format!("fault-group-{g:05}");
            for p in 0..TOPIC_PARTITIONS {
                let mut key = Vec::new();
                put_str(&mut key, group.as_bytes());
                put_str(&mut key, b"primary.orders");
                key.extend_from_slice(&p.to_be_bytes());
                let downstream = round * 100_000 + g * 10 + i64::from(p);
                let mut value = 0i16.to_be_bytes().to_vec();
                value.extend_from_slice(&(downstream + 7).to_be_bytes());
                value.extend_from_slice(&downstream.to_be_bytes());
                put_str(&mut value, b"");
                writeln!(
                    out,
                    "{} {} {}",
                    g % i64::from(PARTITIONS),
                    hex(&key),
                    hex(&value)
                )
                .unwrap();
                answer.insert(
                    (group.clone(), "primary.orders".into(), i64::from(p)),
                    downstream,
                );
            }
        }
    }
    out.flush().unwrap();
    drop(out);
    let partitions = PARTITIONS.to_string();
    crate::support::data_writer(
        c3,
        "raw",
        &[
            "--topic",
            &topic,
            "--partitions",
            &partitions,
            "--no-create",
            "--compression",
            "none",
            "--summary-only",
            "--file",
            file.to_str().unwrap(),
        ],
    );
    answer
}

/// Creates `topic` on the cluster with TopicCommand (`layout`: partitions and replicas).
fn create_topic(c3: &Cluster, topic: &str, layout: &[&str]) {
    let bootstrap = c3.var("INTERNAL_BOOTSTRAP");
    let mut args = vec![
        "--bootstrap-server",
        bootstrap,
        "--create",
        "--topic",
        topic,
    ];
    args.extend_from_slice(layout);
    tool(c3, "org.apache.kafka.tools.TopicCommand", &args);
}

/// Runs a Kafka tool from the cluster's jars (cluster3.sh tool) and returns its stdout.
fn tool(c3: &Cluster, class: &str, args: &[&str]) -> String {
    let out = Command::new("bash")
        .arg(c3.var("CLUSTER3"))
        .arg("tool")
        .arg(class)
        .args(args)
        .output()
        .expect("run cluster3.sh tool");
    assert!(
        out.status.success(),
        "{class} {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn cluster3(c3: &Cluster, verb: &str, node: u32) {
    let out = Command::new("bash")
        .arg(c3.var("CLUSTER3"))
        .arg(verb)
        .arg(node.to_string())
        .output()
        .expect("run cluster3.sh");
    assert!(
        out.status.success(),
        "cluster3.sh {verb} {node} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn reassign(c3: &Cluster, topic: &str, replicas: &[[u32; 3]], rf: usize, verify: bool) {
    let parts: Vec<String> = replicas
        .iter()
        .enumerate()
        .map(|(p, r)| {
            let r: Vec<String> = r[..rf].iter().map(u32::to_string).collect();
            format!(
                "{{\"topic\":\"{topic}\",\"partition\":{p},\"replicas\":[{}]}}",
                r.join(",")
            )
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("reassign.json");
    std::fs::write(
        &file,
        format!("{{\"version\":1,\"partitions\":[{}]}}", parts.join(",")),
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let class = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand";
    let bootstrap = c3.var("INTERNAL_BOOTSTRAP");
    tool(
        c3,
        class,
        &[
            "--bootstrap-server",
            bootstrap,
            "--reassignment-json-file",
            file,
            "--execute",
        ],
    );
    if verify {
        for _ in 0..60 {
            let out = tool(
                c3,
                class,
                &[
                    "--bootstrap-server",
                    bootstrap,
                    "--reassignment-json-file",
                    file,
                    "--verify",
                ],
            );
            if !out.contains("still in progress") {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        panic!("reassignment of {topic} did not finish");
    }
}

fn run_cli(args: &[String], timeout: Duration) -> Run {
    crate::support::child::run_bounded(
        Path::new(env!("CARGO_BIN_EXE_mm2-offsets")),
        args,
        timeout + hang_after(),
    )
}

/// The outcome classes of the matrix.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    /// Exit 0, `complete: true`, equal to the no-fault answer.
    Exact,
    /// Non-zero exit with a message and no answer on stdout.
    Error(String),
    /// Exit 3, `complete: false` (only with --allow-partial).
    Incomplete(String),
    /// UNSAFE: an answer that is not the no-fault answer, or a failure without a message.
    Wrong(String),
    /// UNSAFE: still running past the deadline + HANG_AFTER; killed.
    Hang,
    /// UNSAFE.
    Panic(String),
}

impl Outcome {
    fn safe(&self) -> bool {
        matches!(
            self,
            Outcome::Exact | Outcome::Error(_) | Outcome::Incomplete(_)
        )
    }
    fn cell(&self) -> String {
        match self {
            Outcome::Exact => "exact answer".into(),
            Outcome::Error(m) => format!("explicit error: `{m}`"),
            Outcome::Incomplete(m) => format!("complete: false: {m}"),
            Outcome::Wrong(m) => format!("**UNSAFE, wrong answer**: {m}"),
            Outcome::Hang => "**UNSAFE, hang** (killed)".into(),
            Outcome::Panic(m) => format!("**UNSAFE, panic**: `{m}`"),
        }
    }
}

fn last_line(text: &str) -> String {
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let line = line.replace('|', "\\|").replace('`', "'");
    if line.chars().count() > 220 {
        format!("{}...", line.chars().take(220).collect::<String>())
    } else {
        line
    }
}

fn answer_of(doc: &serde_json::Value) -> Option<Answer> {
    doc["offsets"].as_array().map(|offsets| {
        offsets
            .iter()
            .map(|o| {
                (
                    (
                        o["group"].as_str().unwrap_or("").to_string(),
                        o["topic"].as_str().unwrap_or("").to_string(),
                        o["partition"].as_i64().unwrap_or(-1),
                    ),
                    o["offset"].as_i64().unwrap_or(-1),
                )
            })
            .collect()
    })
}

fn classify(run: &Run, expected: &Answer) -> Outcome {
    if run.killed {
        return Outcome::Hang;
    }
    if run.stderr.contains("panicked at") || run.code == Some(101) {
        return Outcome::Panic(last_line(&run.stderr));
    }
    let doc: Option<serde_json::Value> = serde_json::from_slice(&run.stdout).ok();
    match run.code {
        Some(0) => {
            let Some(doc) = doc else {
                return Outcome::Wrong("exit 0 without a JSON document".into());
            };
            let answer = answer_of(&doc).unwrap_or_default();
            if doc["complete"] != true {
                return Outcome::Wrong("exit 0 with complete != true".into());
            }
            if answer == *expected {
                Outcome::Exact
            } else {
                let missing = expected.keys().filter(|k| !answer.contains_key(k)).count();
                let differ = expected
                    .iter()
                    .filter(|(k, v)| answer.get(k).is_some_and(|a| a != *v))
                    .count();
                Outcome::Wrong(format!(
                    "exit 0, complete: true, {} offsets: {missing} of {} missing, {differ} differ",
                    answer.len(),
                    expected.len()
                ))
            }
        }
        Some(3) => match doc {
            Some(d) if d["complete"] == false => Outcome::Incomplete(last_line(&run.stderr)),
            _ => Outcome::Wrong("exit 3 without a complete: false document".into()),
        },
        code => {
            if doc
                .as_ref()
                .and_then(answer_of)
                .is_some_and(|a| !a.is_empty())
            {
                return Outcome::Wrong(format!("exit {code:?} but offsets printed"));
            }
            if run.stderr.trim().is_empty() {
                return Outcome::Wrong(format!("exit {code:?} with no message"));
            }
            Outcome::Error(last_line(&run.stderr))
        }
    }
}

/// What a row accepts.
#[derive(Clone, Copy, PartialEq)]
enum Want {
    /// Only the exact answer (a fault the client must ride out, or no fault at all).
    Exact,
    /// Only an explicit error (nothing can be answered).
    Error,
    /// Either, as the matrix's rule says.
    Safe,
}

struct Suite {
    c3: Cluster,
    proxy: FaultProxy,
    bootstrap: String,
    source: String,
    topic: String,
    expected: Answer,
    rows: Vec<String>,
    failures: Vec<String>,
    baseline: Duration,
}

impl Suite {
    fn args(&self, timeout: &str, extra: &[&str]) -> Vec<String> {
        let mut a: Vec<String> = [
            "translate",
            "--bootstrap-server",
            &self.bootstrap,
            "--source",
            &self.source,
            "--all-groups",
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
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    }

    /// Records one row: checks the outcome against `want` and the deadline.
    fn record(
        &mut self,
        name: &str,
        fault: &str,
        landed: &str,
        run: &Run,
        deadline: Duration,
        want: Want,
    ) {
        let outcome = classify(run, &self.expected);
        let mut verdict = Vec::new();
        if !outcome.safe() {
            verdict.push("unsafe outcome".to_string());
        }
        match want {
            Want::Exact if outcome != Outcome::Exact => {
                verdict.push("expected the exact answer".into())
            }
            Want::Error if !matches!(outcome, Outcome::Error(_)) => {
                verdict.push("expected an explicit error".into())
            }
            _ => {}
        }
        self.push_row(name, fault, landed, &outcome.cell(), run, deadline, verdict);
    }

    /// Prints and keeps one row; `verdict` lists what is wrong with it (empty: the row passed).
    /// A run past its deadline is added to the verdict here.
    #[allow(clippy::too_many_arguments)]
    fn push_row(
        &mut self,
        name: &str,
        fault: &str,
        landed: &str,
        outcome: &str,
        run: &Run,
        deadline: Duration,
        mut verdict: Vec<String>,
    ) {
        if run.elapsed > deadline + EXIT_GRACE && !run.killed {
            verdict.push(format!("past the deadline ({:?})", deadline));
        }
        let row = format!(
            "| {name} | {fault} | {landed} | {outcome} | {:.1} s (deadline {} s) |",
            run.elapsed.as_secs_f64(),
            deadline.as_secs()
        );
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "[faults] {row}");
        if !verdict.is_empty() {
            let _ = writeln!(
                err,
                "[faults] {name} FAILED: {}; stderr: {}",
                verdict.join(", "),
                run.stderr.trim()
            );
            self.failures
                .push(format!("{name}: {}", verdict.join(", ")));
        }
        self.rows.push(row);
    }
}

fn wanted(name: &str) -> bool {
    match std::env::var("MM2O_FAULTS_ONLY") {
        Ok(list) if !list.trim().is_empty() => list.split(',').any(|n| n.trim() == name),
        _ => true,
    }
}

fn addr(text: &str) -> SocketAddr {
    text.parse()
        .unwrap_or_else(|e| panic!("bad address {text}: {e}"))
}

/// Runs `action` `after` the read started, while the read runs; returns when it finished,
/// relative to the read's start.
fn during<F: FnOnce() + Send + 'static>(
    after: Duration,
    action: F,
) -> std::thread::JoinHandle<Duration> {
    let start = Instant::now();
    std::thread::spawn(move || {
        std::thread::sleep(after);
        action();
        start.elapsed()
    })
}

/// Leaves the read slow enough (10-20 s for the topic: the limit is per connection, and the
/// client reads from three brokers at once) for a tool JVM (3-8 s to start here) to act mid-read.
const SLOW_READ: Fault = Fault::Bandwidth(100_000);

#[test]
fn fault_matrix() {
    let suite_started = Instant::now();
    let c3 = cluster("c3");
    let routes: Vec<(SocketAddr, SocketAddr)> = (1..=3)
        .map(|n| {
            (
                addr(c3.var(&format!("NODE_{n}_PROXY"))),
                addr(c3.var(&format!("NODE_{n}_EXTERNAL"))),
            )
        })
        .collect();
    let proxy = FaultProxy::start(&routes);
    let source = unique_topic("faults");
    let t = Instant::now();
    // The apply rows' checkpoints (their own topic, pointing at this one) are written beside it:
    // two JVMs at once cost less wall time than one after the other.
    let apply_writer = {
        let (c3, target) = (c3.clone(), format!("{source}.checkpoints.internal"));
        std::thread::spawn(move || apply::write_checkpoints(&c3, &target))
    };
    let expected = write_topic(&c3, &source);
    let apply_data = apply_writer.join().expect("apply checkpoints written");
    let _ = writeln!(
        std::io::stderr(),
        "[faults] topic written in {:?}",
        t.elapsed()
    );
    let mut s = Suite {
        bootstrap: c3.var("PROXY_BOOTSTRAP").to_string(),
        topic: format!("{source}.checkpoints.internal"),
        c3,
        proxy,
        source,
        expected,
        rows: Vec::new(),
        failures: Vec::new(),
        baseline: Duration::ZERO,
    };

    // ---- baseline: the answer every row is compared with -------------------------------
    let run = run_cli(&s.args("60s", &[]), Duration::from_secs(60));
    s.baseline = run.elapsed;
    let bytes = s.proxy.downstream_bytes();
    s.record(
        "baseline",
        "none",
        &format!("{bytes} response bytes through the proxy"),
        &run,
        Duration::from_secs(60),
        Want::Exact,
    );
    assert_eq!(
        classify(&run, &s.expected),
        Outcome::Exact,
        "the no-fault read must be exact: {}",
        run.stderr
    );

    if wanted("bandwidth") {
        s.proxy.arm(Fault::Bandwidth(1_000_000));
        let run = run_cli(&s.args("60s", &[]), Duration::from_secs(60));
        s.proxy.arm(Fault::None);
        s.record(
            "bandwidth",
            "responses throttled to 1 MB/s",
            "whole read",
            &run,
            Duration::from_secs(60),
            Want::Exact,
        );
    }
    if wanted("slices") {
        s.proxy.arm(Fault::Slice { first: 4096 });
        let run = run_cli(&s.args("60s", &[]), Duration::from_secs(60));
        s.proxy.arm(Fault::None);
        s.record(
            "slices",
            "first 4096 bytes of every response in 1-byte writes (TCP_NODELAY)",
            "whole read",
            &run,
            Duration::from_secs(60),
            Want::Exact,
        );
    }
    for (name, fault, what) in [
        (
            "reset-in-fetch",
            Fault::ResetInFetch {
                skip: 5,
                at_fraction: pseudo_fraction(),
            },
            "connection reset (RST) inside a Fetch response",
        ),
        (
            "flip-in-records",
            Fault::FlipInRecords { skip: 5 },
            "one byte flipped inside a record batch (CRC-covered)",
        ),
        (
            "flip-in-header",
            Fault::FlipInHeader { skip: 5 },
            "one byte of a Fetch response's correlation id flipped",
        ),
    ] {
        if !wanted(name) {
            continue;
        }
        s.proxy.arm(fault);
        let run = run_cli(&s.args("30s", &[]), Duration::from_secs(30));
        let landed = s.proxy.landed();
        s.proxy.arm(Fault::None);
        let where_ = match &landed {
            Some(l) => format!(
                "node {}, Fetch v{} response of {} bytes, at byte {}, after {} response bytes",
                l.node, l.api_version, l.frame_len, l.at, l.bytes_before
            ),
            None => {
                s.failures.push(format!("{name}: the fault never landed"));
                "never landed".into()
            }
        };
        s.record(
            name,
            what,
            &where_,
            &run,
            Duration::from_secs(30),
            Want::Safe,
        );
    }
    if wanted("latency") {
        s.proxy.arm(Fault::Latency(Duration::from_secs(3)));
        let run = run_cli(
            &s.args("15s", &["-X", "request.timeout.ms=1000"]),
            Duration::from_secs(15),
        );
        s.proxy.arm(Fault::None);
        s.record(
            "latency",
            "3 s added to every response, request.timeout.ms=1000",
            "every response",
            &run,
            Duration::from_secs(15),
            Want::Error,
        );
    }
    // Was OPEN (RELIABILITY.md): the client waited the 10 s connection-setup timeout per
    // bootstrap server, one after the other, 30 s for a 10 s --timeout. Since --timeout bounds
    // the whole run (connect included), it must end within the deadline like every row.
    if wanted("half-open") {
        s.proxy.arm(Fault::HalfOpen);
        let run = run_cli(&s.args("10s", &[]), Duration::from_secs(10));
        s.proxy.arm(Fault::None);
        s.record(
            "half-open",
            "connections accepted, requests read, nothing ever answered",
            "from the first connection",
            &run,
            Duration::from_secs(10),
            Want::Error,
        );
    }

    if wanted("reauth-due") {
        reauth_row(&mut s);
    }
    if wanted("sasl-rotated") {
        rotation_row(&mut s);
    }

    // The record-matching rows: a layout of their own, read through the same proxy.
    if wanted("match") {
        matching::rows(&mut s);
    }

    // The apply rows commit to the topic the rows above read: before the rows below move its
    // log start (delete-records) or delete it.
    apply::rows(&mut s, &apply_data);

    let c3 = s.c3.clone();
    if wanted("leader-killed") {
        // Node 1 leads partitions 0 and 3: SIGKILL it 2 s into a slow read, start it again at once.
        let c = c3.clone();
        let restart = Arc::new(std::sync::Mutex::new(None));
        let r = restart.clone();
        timed_row(
            &mut s,
            "leader-killed",
            "leader's broker SIGKILLed mid-read, restarted at once",
            "node 1 (leader of p0, p3) SIGKILLed",
            Duration::from_secs(2),
            60,
            move || {
                cluster3(&c, "kill-node", 1);
                let c = c.clone();
                *r.lock().unwrap() =
                    Some(std::thread::spawn(move || cluster3(&c, "start-node", 1)));
            },
        );
        let restarted = restart.lock().unwrap().take().expect("restart thread");
        restarted.join().unwrap();
    }
    let replicas: Vec<[u32; 3]> = ASSIGNMENT
        .split(',')
        .map(|p| {
            let v: Vec<u32> = p.split(':').map(|n| n.parse().unwrap()).collect();
            [v[0], v[1], v[2]]
        })
        .collect();
    if wanted("reassignment") {
        // Drop every partition's preferred leader from its replicas: all six leaders move.
        let dropped: Vec<[u32; 3]> = replicas.iter().map(|r| [r[1], r[2], 0]).collect();
        let (c, topic) = (c3.clone(), s.topic.clone());
        timed_row(
            &mut s,
            "reassignment",
            "kafka-reassign-partitions moves all 6 leaders mid-read",
            "reassignment to RF 2 without the leader submitted",
            Duration::ZERO,
            60,
            move || reassign(&c, &topic, &dropped, 2, false),
        );
        // Back to RF 3 in the original order; leaders stay where they are, off their preferred replica.
        reassign(&c3, &s.topic, &replicas, 3, true);
    }
    if wanted("preferred-election") {
        let (c, topic) = (c3.clone(), s.topic.clone());
        timed_row(
            &mut s,
            "preferred-election",
            "kafka-leader-election PREFERRED mid-read",
            "preferred election done",
            Duration::ZERO,
            60,
            move || {
                let json = format!("{{\"partitions\":{}}}", partition_list(&topic, ""));
                tool_with_file(
                    &c,
                    "org.apache.kafka.tools.LeaderElectionCommand",
                    "--path-to-json-file",
                    &json,
                    &["--election-type", "PREFERRED"],
                );
            },
        );
    }
    if wanted("broker-stopped") {
        // Node 2 stopped (controlled shutdown) 2 s into a read with a 20 s deadline, and kept
        // down until the deadline has passed.
        let c = c3.clone();
        let stopped_at = Arc::new(std::sync::Mutex::new(None));
        let st = stopped_at.clone();
        timed_row(
            &mut s,
            "broker-stopped",
            "a whole broker stopped for longer than the 20 s deadline",
            "node 2 stopped (SIGTERM)",
            Duration::from_secs(2),
            20,
            move || {
                cluster3(&c, "stop-node", 2);
                *st.lock().unwrap() = Some(Instant::now());
            },
        );
        let stopped = stopped_at.lock().unwrap().expect("node 2 was stopped");
        let down_for = Duration::from_secs(21);
        if stopped.elapsed() < down_for {
            std::thread::sleep(down_for - stopped.elapsed());
        }
        cluster3(&c3, "start-node", 2);
    }
    if wanted("concurrent-20") {
        // Twenty runs at once, all bootstrapped from node 1.
        let node1 = s.c3.var("NODE_1_PROXY").to_string();
        let mut args = s.args("120s", &[]);
        args[2] = node1;
        let started = Instant::now();
        let handles: Vec<_> = (0..20)
            .map(|_| {
                let a = args.clone();
                std::thread::spawn(move || run_cli(&a, Duration::from_secs(120)))
            })
            .collect();
        let runs: Vec<Run> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let exact = runs
            .iter()
            .filter(|r| classify(r, &s.expected) == Outcome::Exact)
            .count();
        let slowest = runs.iter().map(|r| r.elapsed).max().unwrap();
        let worst = runs
            .iter()
            .find(|r| classify(r, &s.expected) != Outcome::Exact)
            .unwrap_or(&runs[0]);
        let summary = Run {
            code: worst.code,
            stdout: worst.stdout.clone(),
            stderr: worst.stderr.clone(),
            elapsed: slowest,
            killed: worst.killed,
        };
        s.record(
            "concurrent-20",
            "20 translations at once, one bootstrap broker",
            &format!(
                "{exact} of 20 exact, all done in {:.1} s",
                started.elapsed().as_secs_f64()
            ),
            &summary,
            Duration::from_secs(120),
            Want::Exact,
        );
    }
    if wanted("tls-expired") || wanted("tls-wrong-host") {
        tls_rows(&mut s);
    }
    if wanted("delete-records") {
        // Log start moved to the high watermark (-1) on every partition, mid-read.
        let (c, topic) = (c3.clone(), s.topic.clone());
        timed_row(
            &mut s,
            "delete-records",
            "log start advanced past the read position (DeleteRecords)",
            "DeleteRecords to the high watermark done",
            Duration::ZERO,
            60,
            move || {
                let list = partition_list(&topic, ",\"offset\":-1");
                let json = format!("{{\"version\":1,\"partitions\":{list}}}");
                tool_with_file(
                    &c,
                    "org.apache.kafka.tools.DeleteRecordsCommand",
                    "--offset-json-file",
                    &json,
                    &[],
                );
            },
        );
    }
    if wanted("topic-deleted") {
        // A topic of its own: the delete-records row above emptied the shared one.
        let t = Instant::now();
        let source = unique_topic("faults-del");
        s.expected = write_topic(&c3, &source);
        s.topic = format!("{source}.checkpoints.internal");
        s.source = source;
        let _ = writeln!(
            std::io::stderr(),
            "[faults] second topic written in {:?}",
            t.elapsed()
        );
        let (c, topic) = (c3.clone(), s.topic.clone());
        timed_row(
            &mut s,
            "topic-deleted",
            "checkpoints topic deleted mid-read",
            "topic deleted",
            Duration::ZERO,
            60,
            move || {
                tool(
                    &c,
                    "org.apache.kafka.tools.TopicCommand",
                    &[
                        "--bootstrap-server",
                        c.var("INTERNAL_BOOTSTRAP"),
                        "--delete",
                        "--topic",
                        &topic,
                    ],
                );
            },
        );
    }

    let total = suite_started.elapsed();
    let matrix = format!(
        "| row | fault | where it landed | outcome | time to outcome |\n|---|---|---|---|---|\n{}\n",
        s.rows.join("\n")
    );
    let path = crate::support::work_dir().join("faults-matrix.md");
    let _ = std::fs::write(&path, &matrix);
    let _ = writeln!(
        std::io::stderr(),
        "[faults] matrix ({} rows) in {}:\n{matrix}[faults] suite total {:.1} s",
        s.rows.len(),
        path.display(),
        total.as_secs_f64()
    );
    assert!(
        s.failures.is_empty(),
        "fault rows failed:\n{}",
        s.failures.join("\n")
    );
}

/// One row whose fault is an action on the cluster (`after` the read started) during a read slowed
/// by [`SLOW_READ`], with a `timeout_s` deadline; records it (either safe outcome is accepted).
#[allow(clippy::too_many_arguments)]
fn timed_row<F: FnOnce() + Send + 'static>(
    s: &mut Suite,
    name: &str,
    fault: &str,
    what: &str,
    after: Duration,
    timeout_s: u64,
    action: F,
) {
    s.proxy.arm(SLOW_READ);
    let handle = during(after, action);
    let deadline = Duration::from_secs(timeout_s);
    let run = run_cli(&s.args(&format!("{timeout_s}s"), &[]), deadline);
    s.proxy.arm(Fault::None);
    let at = handle.join().unwrap();
    let landed = mid_read(at, &run, what);
    s.record(name, fault, &landed, &run, deadline, Want::Safe);
}

/// `[{"topic":T,"partition":0<extra>},...]` over every partition, for the tools' JSON inputs.
fn partition_list(topic: &str, extra: &str) -> String {
    let parts: Vec<String> = (0..PARTITIONS)
        .map(|p| format!("{{\"topic\":\"{topic}\",\"partition\":{p}{extra}}}"))
        .collect();
    format!("[{}]", parts.join(","))
}

/// Runs a Kafka tool that takes its input as a JSON file (`flag FILE`) against the cluster.
fn tool_with_file(c3: &Cluster, class: &str, flag: &str, json: &str, extra: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("input.json");
    std::fs::write(&file, json).unwrap();
    let mut args = vec![
        "--bootstrap-server",
        c3.var("INTERNAL_BOOTSTRAP"),
        flag,
        file.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    tool(c3, class, &args);
}

/// Where a timed action landed relative to the read, and an honest word when it did not.
fn mid_read(done_at: Duration, run: &Run, what: &str) -> String {
    if done_at < run.elapsed {
        format!(
            "{what} by {:.1} s of a {:.1} s read",
            done_at.as_secs_f64(),
            run.elapsed.as_secs_f64()
        )
    } else {
        format!(
            "{what} by {:.1} s (the tool's exit), the read ended at {:.1} s",
            done_at.as_secs_f64(),
            run.elapsed.as_secs_f64()
        )
    }
}

/// A fraction in [0.05, 0.95) that differs between runs, printed with the row (the byte).
fn pseudo_fraction() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    0.05 + f64::from(nanos % 9000) / 10_000.0
}

/// Re-authentication due mid-read (KIP-368): cluster3's SASL listener sets
/// `connections.max.reauth.ms` (REAUTH_MS, 3 s), and the read through it is slowed to span
/// several sessions. The client retires a connection at 85% of the session the broker granted
/// and opens a new one for new work (where Java re-authenticates in band); the broker closes a
/// connection whose session has expired at its next request. Either way the answer must be the
/// exact one, and more connections than brokers must have been made (else no session ran out).
fn reauth_row(s: &mut Suite) {
    let sasl_proxy = sasl_proxy(&s.c3);
    let session = Duration::from_millis(s.c3.var("REAUTH_MS").parse().expect("REAUTH_MS"));
    let dir = tempfile::tempdir().unwrap();
    let password = dir.path().join("sasl-password");
    std::fs::write(&password, s.c3.var("SASL_PASSWORD")).unwrap();
    let mut args = s.args(
        "60s",
        &[
            "--security-protocol",
            "SASL_PLAINTEXT",
            "--sasl-mechanism",
            "PLAIN",
            "--sasl-username",
            s.c3.var("SASL_USER"),
            "--sasl-password-file",
            password.to_str().unwrap(),
        ],
    );
    args[2] = s.c3.var("SASL_PROXY_BOOTSTRAP").to_string();
    let run = run_cli(&args, Duration::from_secs(60));
    let connections = sasl_proxy.connections();
    let sessions = run.elapsed.as_secs_f64() / session.as_secs_f64();
    s.record(
        "reauth-due",
        &format!(
            "SASL PLAIN sessions of {} s (connections.max.reauth.ms), read slowed to 100 KB/s per connection",
            session.as_secs_f64()
        ),
        &format!(
            "{sessions:.1} session lifetimes in the read; {connections} SASL connections made"
        ),
        &run,
        Duration::from_secs(60),
        Want::Exact,
    );
    if sessions < 3.0 {
        s.failures.push(format!(
            "reauth-due: the read lasted {:.1} s, under 3 sessions: re-authentication was never due",
            run.elapsed.as_secs_f64()
        ));
    }
    // Bootstrap plus one connection per leader is 4 when no session runs out.
    if connections <= 4 {
        s.failures.push(format!(
            "reauth-due: {connections} connections for {sessions:.1} sessions: none was renewed"
        ));
    }
}

/// The proxy routes to the SASL listeners, slowed like the other mid-read rows.
fn sasl_proxy(c3: &Cluster) -> FaultProxy {
    let routes: Vec<(SocketAddr, SocketAddr)> = (1..=3)
        .map(|n| {
            (
                addr(c3.var(&format!("NODE_{n}_SASL_PROXY"))),
                addr(c3.var(&format!("NODE_{n}_SASL"))),
            )
        })
        .collect();
    let proxy = FaultProxy::start(&routes);
    proxy.arm(SLOW_READ);
    proxy
}

/// Sets `user`'s SCRAM-SHA-256 password on the cluster (kafka-configs; makes the user if new).
fn set_scram_password(c3: &Cluster, user: &str, password: &str) {
    let credential = format!("SCRAM-SHA-256=[iterations=4096,password={password}]");
    tool(
        c3,
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--bootstrap-server",
            c3.var("INTERNAL_BOOTSTRAP"),
            "--alter",
            "--add-config",
            &credential,
            "--entity-type",
            "users",
            "--entity-name",
            user,
        ],
    );
}

/// The SASL password rotated on the broker mid-read (SCRAM, `kafka-configs --alter`). Sessions
/// already authenticated go on until they end (`connections.max.reauth.ms`, 3 s); every new
/// connection, which the client opens when a session is due, presents the password it was given
/// and the broker no longer accepts it. The answer must be the exact one (read on the old
/// sessions) or an explicit authentication error within the deadline, never a partial answer
/// taken for a whole one; and a run with the new password must then give the exact answer.
fn rotation_row(s: &mut Suite) {
    let user = format!("c3rotor-{}", std::process::id());
    let (old, new) = ("rotor-old-secret", "rotor-new-secret");
    set_scram_password(&s.c3, &user, old);
    let proxy = sasl_proxy(&s.c3);
    // Slower than the other rows: the whole read would take about 50 s, so the tool JVM that
    // changes the password (seconds here, up to 25 s on a loaded two-core machine) still lands
    // mid-read.
    proxy.arm(Fault::Bandwidth(25_000));
    let dir = tempfile::tempdir().unwrap();
    let scram_args = |s: &Suite, password: &str, file: &str| {
        let path = dir.path().join(file);
        std::fs::write(&path, password).unwrap();
        let mut args = s.args(
            "120s",
            &[
                "--security-protocol",
                "SASL_PLAINTEXT",
                "--sasl-mechanism",
                "SCRAM-SHA-256",
                "--sasl-username",
                &user,
                "--sasl-password-file",
                path.to_str().unwrap(),
            ],
        );
        args[2] = s.c3.var("SASL_PROXY_BOOTSTRAP").to_string();
        args
    };
    let old_args = scram_args(s, old, "old-password");
    let c3 = s.c3.clone();
    let rotated_user = user.clone();
    let handle = during(Duration::from_secs(2), move || {
        set_scram_password(&c3, &rotated_user, new)
    });
    let run = run_cli(&old_args, Duration::from_secs(120));
    let at = handle.join().unwrap();
    let landed = mid_read(at, &run, "password changed (kafka-configs --alter)");
    s.record(
        "sasl-rotated",
        "SCRAM password rotated on the broker mid-read; sessions of 3 s (connections.max.reauth.ms)",
        &landed,
        &run,
        Duration::from_secs(120),
        Want::Safe,
    );
    if at >= run.elapsed {
        s.failures.push(format!(
            "sasl-rotated: the password changed at {:.1} s, after the {:.1} s read: nothing was tested",
            at.as_secs_f64(),
            run.elapsed.as_secs_f64()
        ));
    }
    // The client holds no stale state: the new password reads the exact answer.
    proxy.arm(Fault::None);
    let after = run_cli(
        &scram_args(s, new, "new-password"),
        Duration::from_secs(120),
    );
    if classify(&after, &s.expected) != Outcome::Exact {
        s.failures.push(format!(
            "sasl-rotated: with the new password the read was not exact: {}",
            last_line(&after.stderr)
        ));
    }
}

/// TLS rows: a TLS front presenting the chosen certificate, forwarding to node 1 in plaintext.
fn tls_rows(s: &mut Suite) {
    let ca = s.c3.var("CA_PEM").to_string();
    let upstream = addr(s.c3.var("NODE_1_EXTERNAL"));
    for (name, cert, key, host, what) in [
        (
            "tls-expired",
            "EXPIRED_CERT_PEM",
            "EXPIRED_KEY_PEM",
            "127.0.0.1",
            "broker certificate expired (valid 2025-01-01..2025-02-01)",
        ),
        (
            "tls-wrong-host",
            "BROKER_CERT_PEM",
            "BROKER_KEY_PEM",
            "localhost",
            "certificate for IP 127.0.0.1 only, client connects to localhost",
        ),
    ] {
        if !wanted(name) {
            continue;
        }
        let front = crate::support::tls_front::start(
            s.proxy.runtime(),
            Path::new(s.c3.var(cert)),
            Path::new(s.c3.var(key)),
            upstream,
        );
        let bootstrap = format!("{host}:{}", front.port);
        let args: Vec<String> = [
            "translate",
            "--bootstrap-server",
            &bootstrap,
            "--source",
            &s.source,
            "--all-groups",
            "-o",
            "json",
            "--no-progress",
            "--timeout",
            "15s",
            "--security-protocol",
            "SSL",
            "--ssl-ca",
            &ca,
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        let run = run_cli(&args, Duration::from_secs(15));
        let landed = format!(
            "handshake, {} TLS sessions completed by the front",
            front.handshakes()
        );
        s.record(
            name,
            what,
            &landed,
            &run,
            Duration::from_secs(15),
            Want::Error,
        );
        if front.handshakes() != 0 {
            s.failures
                .push(format!("{name}: a TLS session was established"));
        }
    }
}
