//! `mm2-offsets watch` against a LIVE MirrorMaker 2 (issue 14): the `watch-flow.sh` flow from
//! the shared `mm2-primary` cluster into a target broker of its own, which the test stops and
//! restarts under the watcher.
//!
//! It starts a JVM broker and MirrorMaker 2 and restarts the broker, so `.ci/run` runs it in a
//! step of its own after the main `cargo test` (which skips `watch_mm2_` tests). One test, in
//! phases, because every phase needs the same slow-to-start flow:
//! 1. live flow: a group's new commit on the source reaches `/offsets` and `/metrics` within one
//!    checkpoint interval plus one poll of MirrorMaker 2 writing it;
//! 2. MirrorMaker 2 stopped: `mm2_source_up` drops to 0 after the heartbeat threshold, while the
//!    idle group's offsets stay served;
//! 3. target broker restarted: `/readyz` is 503 during the outage, `as_of` does not move while
//!    the broker is away (no stale map served as fresh), and the watcher recovers;
//!
//! and every `/metrics` body is parsed with the Prometheus project's Python text parser.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::support::http_get as get;
use crate::support::watch_process::WatchProcess;
use mm2_offsets::client::{Deadline, KafkaClient, OffsetToCommit};

/// Where the active group moves on the source during the test: the end of its 300 records.
const MOVED_TO: i64 = 300;

/// MirrorMaker 2 writes checkpoints and heartbeats every second (mm2.sh's base).
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);
/// The watcher's `--poll`.
const POLL: Duration = Duration::from_millis(500);
/// The watcher's `--heartbeat-stale-after`.
const HEARTBEAT_THRESHOLD: Duration = Duration::from_secs(4);

fn script() -> PathBuf {
    // Our own harness (not MM2O_HARNESS_DIR): the target broker and MM2 live in this checkout's
    // work directory, never in the shared one.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("protocol-tests/harness/watch-flow.sh")
}

fn flow(args: &[&str]) {
    let started = Instant::now();
    let status = Command::new("bash")
        .arg(script())
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("cannot run watch-flow.sh: {e}"));
    assert!(status.success(), "watch-flow.sh {args:?} failed");
    log(&format!(
        "watch-flow.sh {} took {:?}",
        args[0],
        started.elapsed()
    ));
}

/// Stops the flow whatever happens to the test.
struct FlowGuard;

impl Drop for FlowGuard {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(script()).arg("down").status();
    }
}

fn utc(t: SystemTime) -> String {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap();
    let secs = d.as_secs() % 86_400;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        d.subsec_millis()
    )
}

fn log(message: &str) {
    eprintln!("[watch_mm2 {} UTC] {message}", utc(SystemTime::now()));
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn get_json(address: &str, path: &str) -> (u16, serde_json::Value) {
    let (status, body) = get(address, path);
    let doc = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
    (status, doc)
}

/// Parses a /metrics body with `prometheus_client.parser` and returns (name, labels, value)
/// per sample. Fails the test when any line does not parse, or when the parser saw fewer
/// samples than the body has sample lines.
pub(crate) fn parse_metrics(body: &str) -> Vec<(String, serde_json::Value, f64)> {
    const PARSER: &str = r##"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
text = sys.stdin.read()
out = []
for family in text_string_to_metric_families(text):
    for s in family.samples:
        out.append([s.name, s.labels, s.value])
lines = [l for l in text.splitlines() if l and not l.startswith("#")]
if len(lines) != len(out):
    sys.exit(f"{len(lines)} sample lines but {len(out)} samples parsed")
print(json.dumps(out))
"##;
    let mut child = Command::new("python3")
        .args(["-c", PARSER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the Prometheus parser refused /metrics: {}\n{body}",
        String::from_utf8_lossy(&output.stderr)
    );
    let samples: Vec<(String, serde_json::Value, f64)> =
        serde_json::from_slice(&output.stdout).unwrap();
    assert!(!samples.is_empty());
    samples
}

pub(crate) fn metric(
    samples: &[(String, serde_json::Value, f64)],
    name: &str,
    labels: &[(&str, &str)],
) -> Option<f64> {
    samples
        .iter()
        .find(|(n, l, _)| n == name && labels.iter().all(|(k, v)| l[k] == *v))
        .map(|(_, _, v)| *v)
}

fn scrape(address: &str) -> Vec<(String, serde_json::Value, f64)> {
    let (status, body) = get(address, "/metrics");
    assert_eq!(status, 200);
    parse_metrics(&body)
}

/// Polls `check` every 100 ms until it returns Some, or fails after `limit`.
fn wait_for<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

async fn commit(source: &KafkaClient, group: &str, topic: &str, offset: i64) {
    let deadline = Deadline::after(Duration::from_secs(30));
    let coordinators = source
        .find_group_coordinators(&[group.to_string()], &deadline)
        .await
        .expect("FindCoordinator on the source");
    let coordinator = coordinators[group].as_ref().expect("a coordinator");
    let codes = source
        .commit_group_offsets(
            coordinator,
            group,
            &[OffsetToCommit::new(topic, 0, offset)],
            &deadline,
        )
        .await
        .expect("OffsetCommit on the source");
    assert!(codes.values().all(|c| *c == 0), "commit {group}: {codes:?}");
}

fn start_watcher(target: &str, groups_regex: &str) -> WatchProcess {
    crate::support::watch_process::start(&[
        "--bootstrap-server",
        target,
        "--source",
        "watchsrc",
        "--group-regex",
        groups_regex,
        "--poll",
        &format!("{}ms", POLL.as_millis()),
        "--heartbeat-stale-after",
        &format!("{}s", HEARTBEAT_THRESHOLD.as_secs()),
        "--partition-metrics",
    ])
}

#[test]
fn watch_mm2_live_flow_mm2_stop_and_broker_restart() {
    let suite_started = Instant::now();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let primary = crate::support::cluster("mm2-primary");
    let unique = format!("{}-{}", std::process::id(), now_ms());
    let topic = format!("watch-orders-{unique}");
    let active = format!("watch-active-{unique}");
    let idle = format!("watch-idle-{unique}");
    let lines: Vec<String> = (0..300).map(|i| format!("0 - {:02x}", i % 256)).collect();
    crate::support::write_raw(&primary, &topic, 1, "none", &lines, &[]);
    let source = runtime
        .block_on(KafkaClient::connect(primary.plaintext()))
        .expect("connect to mm2-primary");
    runtime.block_on(commit(&source, &active, &topic, 100));
    runtime.block_on(commit(&source, &idle, &topic, 200));

    let _guard = FlowGuard;
    flow(&[
        "up",
        primary.var("PLAINTEXT"),
        &format!("watch-orders-{unique}"),
        &format!("watch-(active|idle)-{unique}"),
    ]);
    let env = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("protocol-tests/work/watch-flow.env"),
    )
    .expect("watch-flow.env");
    let target = env
        .lines()
        .find_map(|l| l.strip_prefix("TARGET="))
        .expect("TARGET in watch-flow.env")
        .to_string();

    // The watcher needs the checkpoints topic, which MM2's checkpoint connector creates.
    let target_client = runtime
        .block_on(KafkaClient::connect(
            mm2_offsets::config::ClientConfig::plaintext([target.as_str()]),
        ))
        .expect("connect to the target");
    wait_for("the checkpoints topic", Duration::from_secs(90), || {
        runtime
            .block_on(target_client.describe_topic(
                "watchsrc.checkpoints.internal",
                &Deadline::after(Duration::from_secs(2)),
            ))
            .ok()
    });
    let watcher = start_watcher(&target, &format!("watch-(active|idle)-{unique}"));
    let address = watcher.address.clone();
    log(&format!("watcher on {address}"));
    assert_eq!(get(&address, "/healthz"), (200, "ok\n".to_string()));

    // Phase 1: the live flow.
    let remote_topic = format!("watchsrc.{topic}");
    let entry = |group: &str| -> Option<serde_json::Value> {
        let (status, doc) = get_json(&address, &format!("/offsets/{group}"));
        (status == 200).then(|| doc["offsets"][0].clone())
    };
    wait_for(
        "both groups' first checkpoints",
        Duration::from_secs(90),
        || {
            let ready = get(&address, "/readyz").0 == 200;
            (ready && entry(&active).is_some() && entry(&idle).is_some()).then_some(())
        },
    );
    let before = entry(&active).unwrap();
    assert_eq!(before["upstream_offset"], 100, "{before}");
    assert_eq!(before["topic"], remote_topic.as_str());
    let committed_at = now_ms();
    // The new position is the log end, not a point inside the log: MM2 wrote the 300 records
    // in one burst, and its offset-sync writer (at most 10 syncs in flight; of the rest, only
    // the latest per partition goes out at the next flush) may leave no sync between 10 and
    // 299. A commit at 250 then translates to the same downstream offset as 100, and MM2 emits
    // no new checkpoint for an unchanged downstream offset (seen in CI). The end always has one.
    runtime.block_on(commit(&source, &active, &topic, MOVED_TO));
    log(&format!(
        "committed the active group at {MOVED_TO} on the source"
    ));
    let (after, seen_at) = wait_for(
        "the new checkpoint in /offsets",
        Duration::from_secs(30),
        || {
            entry(&active)
                .filter(|e| e["upstream_offset"] == MOVED_TO)
                .map(|e| (e, now_ms()))
        },
    );
    let written_at = after["checkpoint_timestamp"].as_i64().unwrap();
    let translated = after["offset"].as_i64().unwrap();
    log(&format!(
        "commit -> checkpoint written: {} ms; checkpoint written -> served: {} ms; commit -> served: {} ms (translated offset {translated})",
        written_at - committed_at,
        seen_at - written_at,
        seen_at - committed_at
    ));
    // Served within one poll of MM2 writing it (plus our own 100 ms polling and slack for a
    // loaded machine), and MM2 wrote it within its checkpoint interval of seeing the commit
    // (its group refresh is also 1 s, so two intervals plus slack).
    assert!(
        seen_at - written_at <= (POLL + Duration::from_millis(1500)).as_millis() as i64,
        "served {} ms after MM2 wrote the checkpoint",
        seen_at - written_at
    );
    assert!(
        seen_at - committed_at
            <= (CHECKPOINT_INTERVAL * 2 + POLL + Duration::from_secs(8)).as_millis() as i64,
        "served {} ms after the commit",
        seen_at - committed_at
    );
    assert!(
        translated > before["offset"].as_i64().unwrap() && translated <= MOVED_TO,
        "{after}"
    );
    let samples = scrape(&address);
    let labels = [
        ("group", active.as_str()),
        ("topic", remote_topic.as_str()),
        ("partition", "0"),
    ];
    assert_eq!(
        metric(&samples, "mm2_consumergroup_translated_offset", &labels),
        Some(translated as f64)
    );
    assert_eq!(
        metric(&samples, "mm2_consumergroup_upstream_offset", &labels),
        Some(MOVED_TO as f64)
    );
    let lag = metric(&samples, "mm2_consumergroup_failover_lag", &labels).expect("failover lag");
    assert_eq!(
        lag,
        (300 - translated) as f64,
        "the target has all 300 records"
    );
    assert_eq!(
        metric(&samples, "mm2_source_up", &[("source", "watchsrc")]),
        Some(1.0)
    );
    assert!(
        metric(
            &samples,
            "mm2_heartbeat_age_seconds",
            &[("source", "watchsrc")]
        )
        .unwrap()
            < 3.0
    );
    assert_eq!(metric(&samples, "mm2_watch_ready", &[]), Some(1.0));
    let (status, offsets) = get_json(&address, "/offsets");
    assert_eq!(status, 200);
    assert_eq!(offsets["schema_version"], 1);
    assert_eq!(offsets["ready"], true);
    assert!(offsets["as_of_ms"].as_i64().unwrap() <= now_ms());
    log(&format!("sample /offsets: {offsets}"));
    log(&format!(
        "sample /offsets/{active}: {}",
        get(&address, &format!("/offsets/{active}")).1.trim()
    ));
    log(&format!(
        "sample /readyz: {}",
        get(&address, "/readyz").1.trim()
    ));
    log(&format!(
        "sample /metrics:\n{}",
        get(&address, "/metrics").1
    ));
    let (status, missing) = get_json(&address, "/offsets/no%20such%22group");
    assert_eq!(status, 404);
    assert!(
        missing["error"]
            .as_str()
            .unwrap()
            .contains("no such\\\"group"),
        "{missing}"
    );

    // Phase 2: MirrorMaker 2 stops; heartbeats stop.
    flow(&["stop-mm2"]);
    let stopped_at = now_ms();
    log("MirrorMaker 2 stopped");
    let (down_at, heartbeat_age) = wait_for(
        "mm2_source_up to drop",
        HEARTBEAT_THRESHOLD + Duration::from_secs(15),
        || {
            let samples = scrape(&address);
            let up = metric(&samples, "mm2_source_up", &[("source", "watchsrc")]).unwrap();
            let age = metric(
                &samples,
                "mm2_heartbeat_age_seconds",
                &[("source", "watchsrc")],
            )
            .unwrap();
            // The gauge agrees with the age it is derived from, in every scrape.
            assert_eq!(
                up == 1.0,
                age <= HEARTBEAT_THRESHOLD.as_secs_f64(),
                "up {up}, heartbeat age {age}"
            );
            (up == 0.0).then(|| (now_ms(), age))
        },
    );
    let last_heartbeat = down_at - (heartbeat_age * 1000.0) as i64;
    log(&format!(
        "timeline: last heartbeat {}, MM2 stop returned {}, mm2_source_up 0 at {} ({} ms after the stop, heartbeat age {heartbeat_age:.1} s > threshold {HEARTBEAT_THRESHOLD:?})",
        utc(SystemTime::UNIX_EPOCH + Duration::from_millis(last_heartbeat as u64)),
        utc(SystemTime::UNIX_EPOCH + Duration::from_millis(stopped_at as u64)),
        utc(SystemTime::UNIX_EPOCH + Duration::from_millis(down_at as u64)),
        down_at - stopped_at
    ));
    let idle_entry = entry(&idle).expect("the idle group is still served");
    assert_eq!(idle_entry["upstream_offset"], 200);
    assert_eq!(
        get(&address, "/readyz").0,
        200,
        "the cluster is fine: the map is current"
    );
    let samples = scrape(&address);
    assert!(
        metric(
            &samples,
            "mm2_consumergroup_oldest_checkpoint_age_seconds",
            &[("group", idle.as_str())]
        )
        .unwrap()
            > 0.0
    );

    // Phase 3: the target broker restarts under the watcher.
    let (_, before_outage) = get_json(&address, "/offsets");
    let as_of_before = before_outage["as_of_ms"].as_i64().unwrap();
    flow(&["stop-target"]);
    let broker_stopped_at = now_ms();
    let unready_at = wait_for(
        "/readyz to report the outage",
        Duration::from_secs(20),
        || (get(&address, "/readyz").0 == 503).then(now_ms),
    );
    log(&format!(
        "/readyz 503 {} ms after the broker stopped",
        unready_at - broker_stopped_at
    ));
    std::thread::sleep(Duration::from_secs(2));
    let (status, during) = get_json(&address, "/offsets");
    assert_eq!(
        status, 200,
        "the last known map is still served, marked as such"
    );
    assert_eq!(during["ready"], false);
    let as_of_during = during["as_of_ms"].as_i64().unwrap();
    assert!(
        as_of_during <= broker_stopped_at,
        "as_of {as_of_during} is after the broker stopped at {broker_stopped_at}: the map claims a freshness it cannot have"
    );
    assert!(as_of_during >= as_of_before);
    let samples = scrape(&address);
    assert_eq!(metric(&samples, "mm2_watch_ready", &[]), Some(0.0));
    assert!(metric(&samples, "mm2_read_errors_total", &[("source", "watchsrc")]).unwrap() > 0.0);
    log(&format!(
        "during the outage /readyz: {}",
        get(&address, "/readyz").1.trim()
    ));
    flow(&["start-target"]);
    let restarted_at = now_ms();
    let ready_at = wait_for("/readyz after the restart", Duration::from_secs(60), || {
        (get(&address, "/readyz").0 == 200).then(now_ms)
    });
    log(&format!(
        "/readyz 200 again {} ms after the broker restarted",
        ready_at - restarted_at
    ));
    let (_, recovered) = get_json(&address, "/offsets");
    assert!(
        recovered["as_of_ms"].as_i64().unwrap() > broker_stopped_at,
        "{}",
        recovered["as_of"]
    );
    let entry = entry(&active).expect("the active group after the restart");
    assert_eq!(entry["upstream_offset"], MOVED_TO);

    // Graceful stop: SIGTERM, exit 0.
    let mut watcher = watcher;
    let pid = watcher.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = watcher.child.wait().unwrap();
    assert!(status.success(), "watch exits 0 on SIGTERM: {status:?}");
    log(&format!("suite took {:?}", suite_started.elapsed()));
}
