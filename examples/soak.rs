//! The soak of issue 11 (RELIABILITY.md, "Soak"), driven by `benches/soak.sh`; not a usage
//! example. It needs the 3-node cluster of `protocol-tests/harness/cluster3.sh` and shares the
//! fault proxy of the fault suite (`protocol-tests/tests/support/proxy.rs`).
//!
//! ```text
//! soak setup  ENV_FILE                      writes a checkpoints topic, prints its source alias
//! soak faults ENV_FILE SOURCE BIN N_TRANSLATE N_APPLY SEED
//!     runs the command line BIN (translate, then apply without --execute) N times each,
//!     every run under a fault drawn at random from what the proxy can do
//! soak embed  ENV_FILE SOURCE N
//!     translates N times in this process through the library, sampling its open file
//!     descriptors and RSS after every run
//! ```
//!
//! A run is safe if it ends with the answer of the no-fault run, an explicit error (non-zero
//! exit, a message, no answer), or `complete: false`. A different answer, an answer with a failed
//! exit, a panic, or a run still alive 20 s past its `--timeout` is a failure: the program says
//! which and exits 1.

#[path = "../protocol-tests/tests/support/child.rs"]
mod child;
#[path = "../protocol-tests/tests/support/proxy.rs"]
mod proxy;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use child::{Run, run_bounded};
use mm2_offsets::config::ClientConfig;
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, TranslateRequest, Translation};
use proxy::{Fault, FaultProxy};

/// The topic: 300 groups x 4 partitions x 3 rounds over 6 partitions led by 3 brokers; read
/// with small fetches (many round trips per partition) so that one-shot faults land mid-read.
const GROUPS: usize = 300;
const TOPIC_PARTITIONS: i32 = 4;
const ROUNDS: i64 = 3;
const ASSIGNMENT: &str = "1:2:3,2:3:1,3:1:2,1:3:2,2:1:3,3:2:1";
const MAX_FETCH_BYTES: &str = "8192";
/// A run still alive this long after its --timeout is killed and counted as a hang.
const HANG_AFTER: Duration = Duration::from_secs(20);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("setup") if args.len() == 2 => setup(&Env::read(&args[1])),
        Some("faults") if args.len() == 7 => faults(
            &Env::read(&args[1]),
            &args[2],
            Path::new(&args[3]),
            parse(&args[4]),
            parse(&args[5]),
            parse(&args[6]),
        ),
        Some("embed") if args.len() == 4 => embed(&Env::read(&args[1]), &args[2], parse(&args[3])),
        _ => Err("usage: soak setup ENV | faults ENV SOURCE BIN N_TRANSLATE N_APPLY SEED | embed ENV SOURCE N".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("soak: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse<T: std::str::FromStr>(text: &str) -> T {
    text.parse()
        .unwrap_or_else(|_| panic!("not a number: {text}"))
}

/// The cluster's env file (`protocol-tests/work/c3/env`).
struct Env(HashMap<String, String>);

impl Env {
    fn read(path: &str) -> Env {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("{path}: {e}; start it with cluster3.sh up"));
        Env(text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect())
    }
    fn get(&self, key: &str) -> &str {
        self.0
            .get(key)
            .unwrap_or_else(|| panic!("the env file has no {key}"))
    }
}

fn encode_str(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as i16).to_be_bytes());
    out.extend_from_slice(s);
}

/// Creates `<source>.checkpoints.internal` and writes it with the Java producer.
fn setup(env: &Env) -> Result<(), String> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_nanos();
    let source = format!("soak-{}-{nanos}", std::process::id());
    let topic = format!("{source}.checkpoints.internal");
    let harness = Path::new(env.get("CLUSTER3")).parent().unwrap().to_owned();
    run_tool(Command::new("bash").arg(env.get("CLUSTER3")).args([
        "tool",
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        env.get("INTERNAL_BOOTSTRAP"),
        "--create",
        "--topic",
        &topic,
        "--replica-assignment",
        ASSIGNMENT,
    ]))?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("checkpoints.txt");
    let mut lines = String::new();
    for round in 0..ROUNDS {
        for g in 0..GROUPS {
            for p in 0..TOPIC_PARTITIONS {
                let (mut key, mut value) = (Vec::new(), 0i16.to_be_bytes().to_vec());
                encode_str(&mut key, format!("soak-group-{g:04}").as_bytes());
                encode_str(&mut key, b"primary.orders");
                key.extend_from_slice(&p.to_be_bytes());
                let downstream = expected_offset(round, g, p);
                value.extend_from_slice(&(downstream + 7).to_be_bytes());
                value.extend_from_slice(&downstream.to_be_bytes());
                encode_str(&mut value, b"");
                let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
                lines.push_str(&format!("{} {} {}\n", g % 6, hex(&key), hex(&value)));
            }
        }
    }
    std::fs::write(&file, lines).map_err(|e| e.to_string())?;
    run_tool(
        Command::new("bash")
            .arg(harness.join("datawriter.sh"))
            .args(["raw", "--cluster", "c3", "--topic", &topic])
            .args(["--partitions", "6", "--no-create", "--compression", "none"])
            .args(["--summary-only", "--file"])
            .arg(&file),
    )?;
    println!("{source}");
    Ok(())
}

/// What the last round wrote for a key: the answer of a complete read.
fn expected_offset(round: i64, group: usize, partition: i32) -> i64 {
    round * 100_000 + group as i64 * 10 + i64::from(partition)
}

fn run_tool(command: &mut Command) -> Result<(), String> {
    let out = command.output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// One fault of the draw, with the run's --timeout and extra flags.
struct Draw {
    name: &'static str,
    fault: Fault,
    timeout_s: u64,
    extra: &'static [&'static str],
}

/// A small xorshift: the draw is reproducible from the printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn draw(rng: &mut Rng) -> Draw {
    let skip = rng.below(12) as u32;
    let d = |name, fault, timeout_s, extra| Draw {
        name,
        fault,
        timeout_s,
        extra,
    };
    match rng.below(9) {
        0 => d("none", Fault::None, 20, &[]),
        1 => d(
            "latency-200ms",
            Fault::Latency(Duration::from_millis(200)),
            20,
            &[],
        ),
        2 => d(
            "latency-over-request-timeout",
            Fault::Latency(Duration::from_secs(2)),
            8,
            &["-X", "request.timeout.ms=1000"],
        ),
        3 => d("bandwidth-300KB/s", Fault::Bandwidth(300_000), 20, &[]),
        4 => d(
            "reset-in-fetch",
            Fault::ResetInFetch {
                skip,
                at_fraction: 0.05 + rng.below(90) as f64 / 100.0,
            },
            20,
            &[],
        ),
        5 => d("half-open", Fault::HalfOpen, 3, &[]),
        6 => d("slices", Fault::Slice { first: 4096 }, 20, &[]),
        7 => d("flip-in-records", Fault::FlipInRecords { skip }, 20, &[]),
        _ => d("flip-in-header", Fault::FlipInHeader { skip }, 20, &[]),
    }
}

/// How a run ended.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Kind {
    Complete,
    ExplicitError,
    Incomplete,
    // Failures:
    Wrong,
    Panic,
    Hang,
}

/// The part of a document that must not depend on when or how fast it was read: translate's
/// offsets, apply's planned groups, with every `*_ms` field (ages, timestamps, durations) dropped.
fn answer(doc: &serde_json::Value, apply: bool) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.retain(|k, _| !k.ends_with("_ms"));
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut part = if apply {
        doc["plan"]["groups"].clone()
    } else {
        doc["offsets"].clone()
    };
    strip(&mut part);
    part
}

fn classify(ran: &Run, apply: bool, expected: &serde_json::Value) -> (Kind, String) {
    let last = ran.stderr.lines().rev().find(|l| !l.trim().is_empty());
    let last = last.unwrap_or("").chars().take(200).collect::<String>();
    if ran.killed {
        return (Kind::Hang, "killed past the deadline".into());
    }
    if ran.stderr.contains("panicked at") || ran.code == Some(101) {
        return (Kind::Panic, last);
    }
    let doc: Option<serde_json::Value> = serde_json::from_slice(&ran.stdout).ok();
    let has_answer = doc
        .as_ref()
        .is_some_and(|d| answer(d, apply).as_array().is_some_and(|a| !a.is_empty()));
    match (ran.code, doc) {
        // translate: 0 is complete; apply's dry run: 0, or 3 when the plan refuses something.
        (Some(0), Some(d)) | (Some(3), Some(d)) if apply || d["complete"] == true => {
            let got = answer(&d, apply);
            if got == *expected {
                (Kind::Complete, String::new())
            } else if apply && groups_in_error(&got, expected) > 0 {
                // Groups the plan marks `error` (e.g. not asked before the deadline), every
                // other group as planned without the fault: explicit, not silent.
                let n = groups_in_error(&got, expected);
                (Kind::Incomplete, format!("{n} groups in error; {last}"))
            } else {
                (Kind::Wrong, format!("exit {:?}, answer differs", ran.code))
            }
        }
        (Some(3), Some(d)) if d["complete"] == false => (Kind::Incomplete, last),
        (Some(code), _) if code != 0 && !has_answer && !last.is_empty() => {
            (Kind::ExplicitError, last)
        }
        (code, _) => (
            Kind::Wrong,
            format!("exit {code:?} with answer: {has_answer}, stderr: {last}"),
        ),
    }
}

/// How many groups of an apply plan are marked `error` when every other group equals the
/// no-fault plan; 0 when any group differs otherwise.
fn groups_in_error(got: &serde_json::Value, expected: &serde_json::Value) -> usize {
    let (Some(got), Some(expected)) = (got.as_array(), expected.as_array()) else {
        return 0;
    };
    if got.len() != expected.len() {
        return 0;
    }
    let mut errors = 0;
    for (g, e) in got.iter().zip(expected) {
        if g["group"] != e["group"] {
            return 0;
        }
        if g["status"] == "error" && g["message"].as_str().is_some_and(|m| !m.is_empty()) {
            errors += 1;
        } else if g != e {
            return 0;
        }
    }
    errors
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64()
}

fn faults(
    env: &Env,
    source: &str,
    bin: &Path,
    n_translate: usize,
    n_apply: usize,
    seed: u64,
) -> Result<(), String> {
    let addr = |k: String| -> SocketAddr { env.get(&k).parse().expect("address") };
    let routes: Vec<_> = (1..=3)
        .map(|n| {
            (
                addr(format!("NODE_{n}_PROXY")),
                addr(format!("NODE_{n}_EXTERNAL")),
            )
        })
        .collect();
    let proxy = FaultProxy::start(&routes);
    let bootstrap = env.get("PROXY_BOOTSTRAP");
    let args = |apply: bool, d: &Draw| -> Vec<String> {
        let timeout = format!("{}s", d.timeout_s);
        let mut a = vec![if apply { "apply" } else { "translate" }];
        a.extend([
            "--bootstrap-server",
            bootstrap,
            "--source",
            source,
            "--all-groups",
            "-o",
            "json",
            "--no-progress",
            "--max-fetch-bytes",
            MAX_FETCH_BYTES,
            "--timeout",
            &timeout,
        ]);
        a.extend(d.extra);
        a.iter().map(|s| s.to_string()).collect()
    };
    let clean = Draw {
        name: "none",
        fault: Fault::None,
        timeout_s: 60,
        extra: &[],
    };
    // The no-fault answers, and a check of translate's against what setup wrote.
    let mut expected = [serde_json::Value::Null, serde_json::Value::Null];
    for (apply, slot) in [(false, 0), (true, 1)] {
        let ran = run_bounded(
            bin,
            &args(apply, &clean),
            Duration::from_secs(60) + HANG_AFTER,
        );
        let doc: serde_json::Value = serde_json::from_slice(&ran.stdout).map_err(|e| {
            format!(
                "the no-fault {slot} run printed no JSON ({e}): {}",
                ran.stderr
            )
        })?;
        expected[slot] = answer(&doc, apply);
    }
    let offsets = expected[0].as_array().cloned().unwrap_or_default();
    let exact = offsets.len() == GROUPS * TOPIC_PARTITIONS as usize
        && offsets.iter().all(|o| {
            let group = o["group"].as_str().unwrap_or("");
            let g: usize = group
                .trim_start_matches("soak-group-")
                .parse()
                .unwrap_or(usize::MAX);
            let p = o["partition"].as_i64().unwrap_or(-1) as i32;
            o["offset"].as_i64() == Some(expected_offset(ROUNDS - 1, g, p))
        });
    if !exact {
        return Err(format!(
            "the no-fault translation is not what was written ({} offsets)",
            offsets.len()
        ));
    }
    if expected[1].as_array().is_none_or(|g| g.len() != GROUPS) {
        return Err("the no-fault apply plan does not name every group".into());
    }

    eprintln!("soak: seed {seed}, {n_translate} translate + {n_apply} apply dry runs");
    let mut rng = Rng(seed.max(1));
    let mut kinds: BTreeMap<(&str, Kind), usize> = BTreeMap::new();
    let mut by_fault: BTreeMap<(&str, String, Kind), usize> = BTreeMap::new();
    let mut times: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    let mut failures = Vec::new();
    let started = Instant::now();
    for i in 0..n_translate + n_apply {
        let apply = i >= n_translate;
        let op = if apply {
            "apply (dry run)"
        } else {
            "translate"
        };
        let d = draw(&mut rng);
        proxy.arm(d.fault.clone());
        let ran = run_bounded(
            bin,
            &args(apply, &d),
            Duration::from_secs(d.timeout_s) + HANG_AFTER,
        );
        // A one-shot fault whose skip outran the read's Fetch responses never fired.
        let one_shot = matches!(
            d.fault,
            Fault::ResetInFetch { .. } | Fault::FlipInRecords { .. } | Fault::FlipInHeader { .. }
        );
        let fault_name = if one_shot && proxy.landed().is_none() {
            format!("{} (did not land)", d.name)
        } else {
            d.name.to_string()
        };
        proxy.arm(Fault::None);
        let (kind, detail) = classify(&ran, apply, &expected[usize::from(apply)]);
        let late = ran.elapsed > Duration::from_secs(d.timeout_s + 5);
        if kind >= Kind::Wrong || late {
            let msg = format!(
                "run {i} {op} under {} ({:?}): {kind:?} after {:.1} s: {detail}",
                d.name,
                d.fault,
                ran.elapsed.as_secs_f64()
            );
            eprintln!("soak: {msg}");
            failures.push(msg);
        }
        *kinds.entry((op, kind)).or_default() += 1;
        *by_fault.entry((op, fault_name, kind)).or_default() += 1;
        times.entry(op).or_default().push(ran.elapsed);
        if (i + 1) % 50 == 0 {
            eprintln!(
                "soak: {} runs in {:.0} s",
                i + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }

    println!(
        "## soak: outcomes (seed {seed}, {:.0} s)\n",
        started.elapsed().as_secs_f64()
    );
    println!(
        "| command | complete answer | explicit error | complete: false (apply: groups in error) | wrong | panic | hang | p50 | p99 | max |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (op, t) in &mut times {
        t.sort();
        let c = |k| kinds.get(&(*op, k)).copied().unwrap_or(0);
        println!(
            "| {op} ({} runs) | {} | {} | {} | {} | {} | {} | {:.2} s | {:.2} s | {:.2} s |",
            t.len(),
            c(Kind::Complete),
            c(Kind::ExplicitError),
            c(Kind::Incomplete),
            c(Kind::Wrong),
            c(Kind::Panic),
            c(Kind::Hang),
            percentile(t, 0.5),
            percentile(t, 0.99),
            percentile(t, 1.0)
        );
    }
    println!("\n| command | fault | outcome | runs |\n|---|---|---|---|");
    for ((op, fault, kind), n) in &by_fault {
        println!("| {op} | {fault} | {kind:?} | {n} |");
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} unsafe runs:\n{}",
            failures.len(),
            failures.join("\n")
        ))
    }
}

/// Open descriptors and resident set size of this process.
fn sample() -> (usize, u64) {
    let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    let rss_kb = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0);
    (fds, rss_kb)
}

/// The same translation `runs` times in one process, as a service embedding the library would:
/// one long-lived client, plus a fresh client (connected, used, dropped) every 10th run so that
/// dropped clients would show as leaked descriptors.
fn embed(env: &Env, source: &str, runs: usize) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    // The INTERNAL listeners advertise themselves: no proxy, no faults here.
    let config = ClientConfig::plaintext(env.get("INTERNAL_BOOTSTRAP").split(','));
    let connect = || MirrorClient::connect(config.clone(), ReplicationPolicy::default());
    let long_lived = runtime.block_on(connect()).map_err(|e| e.to_string())?;
    let mut request = TranslateRequest::new(source, GroupSelector::all());
    request.timeout = Duration::from_secs(30);
    let mut samples = Vec::with_capacity(runs);
    let mut first_sum = None;
    let started = Instant::now();
    for i in 0..runs {
        let translation: Result<Translation, String> = runtime.block_on(async {
            if i % 10 == 9 {
                let fresh = connect().await.map_err(|e| e.to_string())?;
                fresh.translate(&request).await.map_err(|e| e.to_string())
            } else {
                long_lived
                    .translate(&request)
                    .await
                    .map_err(|e| e.to_string())
            }
        });
        let translation = translation.map_err(|e| format!("run {i}: {e}"))?;
        let sum: i64 = translation.iter().map(|o| o.offset).sum();
        let shape = (translation.report.complete, translation.len(), sum);
        if *first_sum.get_or_insert(shape) != shape || !shape.0 {
            return Err(format!("run {i}: answer {shape:?}, first {first_sum:?}"));
        }
        drop(translation);
        samples.push(sample());
    }
    let elapsed = started.elapsed().as_secs_f64();
    let window = 100.min(runs);
    let max = |s: &[(usize, u64)]| {
        (
            s.iter().map(|x| x.0).max().unwrap_or(0),
            s.iter().map(|x| x.1).max().unwrap_or(0),
        )
    };
    let (first, last, all) = (
        max(&samples[..window]),
        max(&samples[runs - window..]),
        max(&samples),
    );
    println!(
        "## soak: one process, {runs} translations of {} offsets ({elapsed:.0} s)\n",
        first_sum.map_or(0, |s| s.1)
    );
    println!("| runs | max open fds | max RSS |\n|---|---|---|");
    println!(
        "| first {window} | {} | {:.1} MiB |",
        first.0,
        first.1 as f64 / 1024.0
    );
    println!(
        "| last {window} | {} | {:.1} MiB |",
        last.0,
        last.1 as f64 / 1024.0
    );
    println!(
        "| all {runs} | {} | {:.1} MiB |",
        all.0,
        all.1 as f64 / 1024.0
    );
    let _ = std::io::stdout().flush();
    // Flat: no descriptor more at the end than at the start, memory within 10% (+2 MiB for
    // allocator noise).
    if last.0 > first.0 || last.1 > first.1 + first.1 / 10 + 2048 {
        return Err(format!(
            "not flat: first {window} {first:?}, last {window} {last:?} (fds, RSS KiB)"
        ));
    }
    Ok(())
}
