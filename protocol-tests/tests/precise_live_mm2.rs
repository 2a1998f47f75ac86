//! Precise translation on a live MirrorMaker 2 that this suite starts itself, for what the
//! frozen flows of `mm2-flows.sh` do not cover: `offset.lag.max=10`, transaction markers and
//! aborted records upstream, MM2 killed mid-flow and restarted (at-least-once duplicates
//! downstream), the offset-syncs topic on the target, exactly-once source support (transaction
//! markers and an aborted transaction downstream), a group 100,000 records behind, a compacted
//! history, and `--from-source-offsets` while the source's groups keep committing.
//!
//! One MM2 process (`protocol-tests/harness/config/mm2-precise.properties`) runs three flows
//! whose five aliases all name the shared k4 broker, with topic, group and alias names no other
//! suite uses, so the frozen flows and every other suite see nothing new. It is stopped at the
//! end (and on failure).
//! - L: `offset.lag.max=10`, transactions upstream, syncs on the source; 2 partitions.
//! - T: the default `offset.lag.max`, syncs on the target, gapless upstream; 1 partition.
//! - E: exactly-once source support on its target alias (a worker setting, so its own herder),
//!   gapless upstream, one partition of 101,300 small records; groups caught up, 10, 1,000 and
//!   100,000 behind, and in the middle. The test proves EOS was in effect from the commit
//!   markers in the replica, and checks interpolation (`Interpolation::GaplessUpstream`) against
//!   those downstream markers. The kill hits E too: a transaction open then is aborted
//!   downstream (the abort markers are counted and printed).
//!
//! Every record's key is unique (`<topic>-<seq>`, `e<seq>` on E), so the test finds each
//! upstream record's copies downstream and the **true position** for every upstream offset `U`:
//! the greatest downstream offset from which a consumer still sees a copy of every record at or
//! after `U` (the minimum, over those records, of their last copy). It asserts, for every
//! partition of every group, `MM2 <= precise <= truth`, counts the rules, and prints the
//! per-group table, the distances and when each step ended.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::precise_live_match::{self as matching, OwnBroker};
use crate::support::mm2::read_log;
use mm2_offsets::client::{Deadline, KafkaClient, OffsetToCommit};
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::mm2::sync_index::{Interpolation, Rule};
use mm2_offsets::precise::{Input, PreciseTranslation, SyncsSource, read_sync_index};
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, TranslateRequest};

const TIMEOUT: Duration = Duration::from_secs(30);
/// Records per partition before the groups commit (about; the restart adds duplicates
/// downstream only).
const PHASE_RECORDS: usize = 1200;
/// Flow E's first records, written at once: enough for a group 100,000 behind.
const BULK_RECORDS: usize = 101_000;
/// Flow E's records written after MM2's restart.
const EOS_TAIL_RECORDS: usize = 300;
/// Flow P's records per partition in each plain phase.
const P_RECORDS: usize = 500;
/// Flow P's compacted topic: records per phase, over `C_KEYS` keys.
const C_RECORDS: usize = 200;
const C_KEYS: usize = 40;

/// This checkout's harness: the MM2 runs under its own work dir, whichever brokers the tests use.
fn own_harness(script: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("protocol-tests/harness")
        .join(script)
}

fn mm2_env(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("protocol-tests/work")
        .join(name)
        .join("env")
}

/// The suite's MirrorMaker 2, stopped when dropped (also when the test fails).
struct Mm2 {
    name: String,
    args: Vec<String>,
}

impl Mm2 {
    fn start(name: &str, args: Vec<String>) -> Mm2 {
        // A run that aborted (no unwinding) left it running: it is the suite's, stop it.
        let _ = Command::new("bash")
            .arg(own_harness("mm2.sh"))
            .arg("stop")
            .arg(name)
            .output();
        let mm2 = Mm2 {
            name: name.to_string(),
            args,
        };
        mm2.launch();
        mm2
    }

    fn launch(&self) {
        let started = Instant::now();
        let output = Command::new("bash")
            .arg(own_harness("mm2.sh"))
            .arg("start")
            .arg(&self.name)
            .arg(own_harness("config/mm2-precise.properties"))
            .args(&self.args)
            .output()
            .expect("run mm2.sh");
        assert!(
            output.status.success(),
            "MirrorMaker 2 did not start: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        println!("MM2 started in {} ms", started.elapsed().as_millis());
    }

    fn pid(&self) -> String {
        let env = std::fs::read_to_string(mm2_env(&self.name)).expect("mm2 env file");
        env.lines()
            .find_map(|l| l.strip_prefix("PID="))
            .expect("PID in the mm2 env file")
            .to_string()
    }

    /// SIGKILL, as a crash: the task's unflushed source offsets and pending syncs are lost, so
    /// the restarted task re-sends records (duplicates downstream).
    fn crash(&self) {
        let pid = self.pid();
        let status = Command::new("kill").args(["-9", &pid]).status().unwrap();
        assert!(status.success(), "kill -9 {pid}");
        // The JVM is gone once /proc forgets it.
        let deadline = Instant::now() + Duration::from_secs(10);
        while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        // The restart writes a new log: keep the killed MM2's next to it.
        let dir = mm2_env(&self.name).with_file_name("");
        let _ = std::fs::rename(dir.join("mm2.log"), dir.join("mm2-killed.log"));
    }
}

impl Drop for Mm2 {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(own_harness("mm2.sh"))
            .arg("stop")
            .arg(&self.name)
            .output();
    }
}

/// Prints how far into the suite a step ended: where its time goes.
fn phase(started: Instant, what: &str) {
    println!("[{:6.1} s] {what}", started.elapsed().as_secs_f64());
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `count` raw lines for `topic`, round robin over `partitions`, each key unique.
fn lines(topic: &str, partitions: usize, first: usize, count: usize) -> Vec<String> {
    (first..first + count)
        .map(|seq| {
            let key = format!("{topic}-{seq}");
            format!(
                "{} {} {}",
                seq % partitions,
                hex(key.as_bytes()),
                hex(format!("payload of {key}").as_bytes())
            )
        })
        .collect()
}

/// `count` records for a compacted topic's partition 0: keys repeat (`<topic>-k<seq % C_KEYS>`),
/// values never (`v<seq>`), so each record is still its key and value.
fn compacted_lines(topic: &str, first: usize, count: usize) -> Vec<String> {
    (first..first + count)
        .map(|seq| {
            let key = format!("{topic}-k{}", seq % C_KEYS);
            format!(
                "0 {} {}",
                hex(key.as_bytes()),
                hex(format!("v{seq}").as_bytes())
            )
        })
        .collect()
}

/// `count` small records for partition 0 (key `e<seq>`, null value), for flow E's bulk: the
/// key stays unique within the topic, and 100,000 of them take a few MB.
fn small_lines(first: usize, count: usize) -> Vec<String> {
    (first..first + count)
        .map(|seq| format!("0 {} -", hex(format!("e{seq}").as_bytes())))
        .collect()
}

/// Writes many small records fast: one producer batch holds thousands of them.
fn write_bulk(k4: &crate::support::Cluster, topic: &str, lines: &[String]) {
    let started = Instant::now();
    let extra = [
        "--summary-only",
        "--batch-size",
        "500000",
        "--linger-ms",
        "20",
    ];
    crate::support::write_raw(k4, topic, 1, "none", lines, &extra);
    println!(
        "wrote {} records to {topic} in {} ms",
        lines.len(),
        started.elapsed().as_millis()
    );
}

fn write(
    k4: &crate::support::Cluster,
    topic: &str,
    partitions: u32,
    lines: &[String],
    plan: Option<&str>,
) {
    let mut extra = vec!["--summary-only"];
    if let Some(plan) = plan {
        extra.extend(["--plan", plan]);
    }
    crate::support::write_raw(k4, topic, partitions, "none", lines, &extra);
}

/// For each upstream offset `U` in `0..=end`: the greatest downstream offset from which every
/// record at or after `U` still has a copy (the minimum of their last copies), or the
/// downstream end when none was copied. Also the records copied more than once, and, for each
/// record compaction has removed upstream since it was copied, its last copy's downstream offset
/// and its upstream offset (from its value, see [`removed_upstream_offset`]): a group before
/// such a record never read it, so reading its copy is no re-read.
fn truth(
    upstream: &[crate::support::mm2::LogRecord],
    up_end: i64,
    downstream: &[crate::support::mm2::LogRecord],
    down_end: i64,
) -> (Vec<i64>, usize, Vec<(i64, i64)>) {
    // A record is its key and value: keys repeat on a compacted topic, values never.
    type Identity = (Option<Vec<u8>>, Option<Vec<u8>>);
    let identity =
        |r: &crate::support::mm2::LogRecord| -> Identity { (r.key.clone(), r.value.clone()) };
    let mut last_copy: HashMap<Identity, i64> = HashMap::new();
    for r in downstream {
        last_copy.insert(identity(r), r.offset);
    }
    let duplicates = downstream.len() - last_copy.len();
    let mut out = vec![down_end; up_end as usize + 1];
    let mut best = down_end;
    let mut records = upstream.iter().rev().peekable();
    for u in (0..=up_end).rev() {
        while let Some(r) = records.peek().filter(|r| r.offset >= u) {
            if let Some(&d) = last_copy.get(&identity(r)) {
                best = best.min(d);
            }
            records.next();
        }
        out[u as usize] = best;
    }
    // The upstream offset a surviving record's value names must be its offset: that is what
    // makes the value a removed record's upstream offset.
    for r in upstream {
        if let Some(named) = removed_upstream_offset(r) {
            assert_eq!(
                named, r.offset,
                "a compacted record's value is its upstream offset"
            );
        }
    }
    let surviving: std::collections::HashSet<Identity> = upstream.iter().map(identity).collect();
    let mut removed: Vec<(i64, i64)> = downstream
        .iter()
        .filter(|r| !surviving.contains(&identity(r)) && last_copy[&identity(r)] == r.offset)
        .filter_map(|r| removed_upstream_offset(r).map(|u| (r.offset, u)))
        .collect();
    removed.sort_unstable();
    (out, duplicates, removed)
}

/// The upstream offset of a record of the compacted topic, named by its value (`v<seq>`, see
/// [`compacted_lines`]): one plain producer writes that partition, one record per offset, so
/// `seq` is its offset (checked on the records that survive). `None` for other topics' records.
fn removed_upstream_offset(r: &crate::support::mm2::LogRecord) -> Option<i64> {
    let value = std::str::from_utf8(r.value.as_deref()?).ok()?;
    let seq = value.strip_prefix('v')?;
    (!seq.is_empty() && seq.bytes().all(|b| b.is_ascii_digit()))
        .then(|| seq.parse().ok())
        .flatten()
}

/// The truth of every partition of `topic` (upstream on `up`) and its replica `remote` (on
/// `down`), with the replica's record offsets; whether the upstream has gaps.
async fn truths_of(
    up: &KafkaClient,
    topic: &str,
    down: &KafkaClient,
    remote: &str,
    partitions: i32,
    out: &mut matching::Truths,
) -> bool {
    let mut gaps = false;
    for p in 0..partitions {
        let (up_records, up_end, up_gaps) = read_log(up, topic, p).await;
        let (down_records, down_end, down_gaps) = read_log(down, remote, p).await;
        let (t, duplicates, removed) = truth(&up_records, up_end, &down_records, down_end);
        println!(
            "{topic}-{p}: upstream {} records to offset {up_end} (gaps: {up_gaps}), downstream {} records to {down_end} (gaps: {down_gaps}), {duplicates} copied more than once",
            up_records.len(),
            down_records.len()
        );
        gaps |= up_gaps;
        out.by_upstream.insert((topic.to_string(), p), t);
        out.downstream.insert(
            (topic.to_string(), p),
            down_records.iter().map(|r| r.offset).collect(),
        );
        out.removed.insert((topic.to_string(), p), removed);
    }
    gaps
}

/// What a flow's upstream topic holds, and so what the test expects of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Upstream {
    /// Transactions upstream (markers, aborted records): offset gaps.
    Transactions,
    /// No gaps; at-least-once replication.
    Gapless,
    /// No gaps; MM2 writes with exactly-once source support (markers downstream).
    GaplessExactlyOnce,
}

/// One flow of the suite's MM2.
struct FlowUnderTest {
    label: &'static str,
    source_alias: &'static str,
    topic: String,
    partitions: u32,
    groups: String,
    /// Groups committed on the upstream topic (each checkpoints every partition).
    group_count: usize,
    upstream: Upstream,
    syncs: SyncsSource,
}

impl FlowUnderTest {
    fn remote_topic(&self) -> String {
        format!("{}.{}", self.source_alias, self.topic)
    }
}

/// Whether each side of a flow has offset gaps (control batches, aborted or missing offsets).
#[derive(Clone, Copy, Debug)]
struct Gaps {
    upstream: bool,
    downstream: bool,
}

/// Truth per partition of the flow's topic, and which sides have offset gaps.
async fn truths(k4: &KafkaClient, flow: &FlowUnderTest) -> (BTreeMap<i32, Vec<i64>>, Gaps) {
    let mut out = BTreeMap::new();
    let mut gaps = Gaps {
        upstream: false,
        downstream: false,
    };
    for p in 0..flow.partitions as i32 {
        let (up, up_end, up_gaps) = read_log(k4, &flow.topic, p).await;
        let (down, down_end, down_gaps) = read_log(k4, &flow.remote_topic(), p).await;
        let (t, duplicates, _) = truth(&up, up_end, &down, down_end);
        println!(
            "{} {}-{p}: upstream {} records to offset {up_end} (gaps: {up_gaps}), downstream {} records to {down_end} (gaps: {down_gaps}), {duplicates} records copied more than once",
            flow.label,
            flow.topic,
            up.len(),
            down.len()
        );
        gaps.upstream |= up_gaps;
        gaps.downstream |= down_gaps;
        out.insert(p, t);
    }
    (out, gaps)
}

/// What a scan of partition 0 found: whether a record with the wanted key is there, and the
/// transaction markers (first record of each control batch) by kind.
#[derive(Debug, Default)]
struct Scan {
    found: bool,
    data_records: u64,
    commits: u64,
    aborts: u64,
}

/// Reads `topic`-0 from `from` to its end, read_uncommitted.
async fn scan(client: &KafkaClient, topic: &str, from: i64, key: &[u8]) -> Scan {
    use mm2_offsets::client::ReadOptions;
    use mm2_offsets::records::{Batches, ControlRecord, ControlRecordType, Scratch};
    let deadline = Deadline::after(TIMEOUT);
    let info = client.describe_topic(topic, &deadline).await.unwrap();
    let end = log_end(client, topic).await;
    let mut stream = client.read_range(info, 0, from, end, ReadOptions::default(), deadline);
    let mut scratch = Scratch::new();
    let mut out = Scan::default();
    while let Some(chunk) = stream.next_chunk().await {
        let chunk = chunk.unwrap_or_else(|e| panic!("reading {topic}-0: {e}"));
        for batch in Batches::new(&chunk.records) {
            let batch = batch.unwrap_or_else(|e| panic!("{topic}-0: {e}"));
            if batch.is_control() {
                match ControlRecord::first_of(&batch, &mut scratch).unwrap() {
                    Some(ControlRecord {
                        kind: ControlRecordType::Commit,
                        ..
                    }) => out.commits += 1,
                    Some(ControlRecord {
                        kind: ControlRecordType::Abort,
                        ..
                    }) => out.aborts += 1,
                    _ => {}
                }
                continue;
            }
            for record in batch.records(&mut scratch).unwrap() {
                let record = record.unwrap();
                out.data_records += 1;
                out.found |= record.key == Some(key);
            }
        }
    }
    out
}

/// Waits (up to 300 s) until MM2 has copied the record with key `last_key` to `remote`
/// (partition 0): the truth must count every record MM2 will sync, or a sync written after the
/// truth was read could point past it.
async fn wait_copied(client: &KafkaClient, remote: &str, last_key: &[u8]) {
    let started = Instant::now();
    loop {
        let end = log_end(client, remote).await;
        if scan(client, remote, (end - 5000).max(0), last_key)
            .await
            .found
        {
            println!(
                "{remote}: the last record was copied {} ms after the checkpoints came",
                started.elapsed().as_millis()
            );
            return;
        }
        // Generous: on a loaded machine the exactly-once task resumes slowly after the kill.
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "MM2 did not copy {} to {remote} within 300 s (end {end})",
            String::from_utf8_lossy(last_key)
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Asserts `mm2 <= precise <= truth` for every row, prints the table; returns (mm2 distance,
/// precise distance).
fn check(
    label: &str,
    precise: &PreciseTranslation,
    truths: &BTreeMap<i32, Vec<i64>>,
    enforce_mm2_floor: bool,
) -> (i64, i64) {
    println!("{label}: group\tpartition\tupstream\tmm2\tprecise\ttruth\tsaved\trule\tinput");
    let (mut mm2_distance, mut precise_distance) = (0, 0);
    for ((o, p), input) in precise.iter().zip(&precise.inputs) {
        let truth = truths[&o.partition][input.upstream_offset as usize];
        println!(
            "{label}: {}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            o.group,
            o.partition,
            input.upstream_offset,
            p.mm2_offset,
            p.offset,
            truth,
            p.rereads_saved(),
            p.rule.name(),
            input.input.name()
        );
        assert!(
            p.offset <= truth,
            "{label} {} p{}: precise {} is past the true position {truth} (upstream {})",
            o.group,
            o.partition,
            p.offset,
            input.upstream_offset
        );
        if enforce_mm2_floor {
            assert!(p.offset >= p.mm2_offset, "{label} {}: behind MM2", o.group);
        }
        assert!(
            p.mm2_offset <= truths[&o.partition][o.upstream_offset as usize],
            "{label} {}: MM2's own offset is past the truth",
            o.group
        );
        mm2_distance += truths[&o.partition][o.upstream_offset as usize] - p.mm2_offset;
        precise_distance += truth - p.offset;
    }
    let rules: Vec<(&str, u64)> = precise
        .rule_counts()
        .iter()
        .map(|(r, n)| (r.name(), *n))
        .collect();
    println!(
        "{label}: {} offsets, rules {rules:?}, distance to the truth: MM2 {mm2_distance}, precise {precise_distance}",
        precise.precise.len()
    );
    (mm2_distance, precise_distance)
}

/// The sync index alone, for every upstream offset of the flow rather than the groups' few:
/// asserts that no translation passes the truth, and prints the rules and the distance.
async fn check_every_offset(
    label: &str,
    flow: &FlowUnderTest,
    syncs: &SyncsSource,
    request: &TranslateRequest,
    truths: &BTreeMap<i32, Vec<i64>>,
) {
    let (index, report) = read_sync_index(syncs, request, Deadline::after(TIMEOUT))
        .await
        .unwrap();
    assert!(report.complete);
    let mut rules: BTreeMap<&str, u64> = BTreeMap::new();
    let (mut untranslated, mut distance) = (0u64, 0i64);
    for (&p, truth) in truths {
        let part = index
            .partition(flow.topic.as_bytes(), p)
            .unwrap_or_else(|| panic!("{label}: no sync history for partition {p}"));
        for (u, &true_position) in truth.iter().enumerate() {
            let Some((offset, rule)) = part.translate(u as i64) else {
                untranslated += 1;
                continue;
            };
            assert!(
                offset <= true_position,
                "{label} p{p}: upstream {u} translates to {offset} ({}), past the true position {true_position}",
                rule.name()
            );
            *rules.entry(rule.name()).or_insert(0) += 1;
            distance += true_position - offset;
        }
    }
    let translated: u64 = rules.values().sum();
    println!(
        "{label}, every upstream offset: {translated} translated ({untranslated} below the first sync), rules {rules:?}, distance to the truth {distance} ({:.2} per offset)",
        distance as f64 / translated.max(1) as f64
    );
}

async fn commit(k4: &KafkaClient, group: &str, topic: &str, offsets: &[(i32, i64)]) {
    let deadline = Deadline::after(TIMEOUT);
    let coordinators = k4
        .find_group_coordinators(&[group.to_string()], &deadline)
        .await
        .unwrap();
    let coordinator = coordinators[group].as_ref().expect("coordinator");
    let offsets: Vec<OffsetToCommit> = offsets
        .iter()
        .map(|&(partition, offset)| OffsetToCommit::new(topic, partition, offset))
        .collect();
    let answer = k4
        .commit_group_offsets(coordinator, group, &offsets, &deadline)
        .await
        .unwrap();
    assert!(
        answer.values().all(|&code| code == 0),
        "{group}: {answer:?}"
    );
}

/// The end offset of partition 0.
async fn log_end(client: &KafkaClient, topic: &str) -> i64 {
    let deadline = Deadline::after(TIMEOUT);
    let info = client.describe_topic(topic, &deadline).await.unwrap();
    client
        .list_offsets(
            &info,
            &[0],
            mm2_offsets::client::OffsetSpec::Latest,
            mm2_offsets::client::IsolationLevel::ReadUncommitted,
            &deadline,
        )
        .await
        .unwrap()[&0]
}

/// The end offset of partition 0 of a replica MM2 may not have created yet (then 0).
async fn replica_end(client: &KafkaClient, replica: &str) -> i64 {
    let deadline = Deadline::after(TIMEOUT);
    match client.describe_topic(replica, &deadline).await {
        Err(mm2_offsets::client::ClientError::UnknownTopic { .. }) => 0,
        Err(e) => panic!("describing {replica}: {e}"),
        Ok(_) => log_end(client, replica).await,
    }
}

async fn end_offsets(k4: &KafkaClient, topic: &str, partitions: u32) -> Vec<i64> {
    let mut ends = Vec::new();
    for p in 0..partitions as i32 {
        ends.push(read_log(k4, topic, p).await.1);
    }
    ends
}

/// Waits until every expected (group, partition) has a checkpoint, for up to 90 s. MM2 does not
/// checkpoint a group below the oldest sync its checkpoint task holds (after a restart it
/// reloads the history sparsely), so fewer may come: the table shows which.
async fn wait_checkpoints(mirror: &MirrorClient, request: &TranslateRequest, want: usize) {
    let started = Instant::now();
    loop {
        let t = mirror.translate(request).await.unwrap();
        if t.len() >= want || started.elapsed() > Duration::from_secs(90) {
            println!(
                "{} of {want} checkpoints after {} ms: groups {:?}",
                t.len(),
                started.elapsed().as_millis(),
                t.groups()
            );
            assert!(!t.is_empty(), "no checkpoint at all after 90 s");
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[test]
fn live_mm2_lag10_transactions_restart_and_syncs_on_the_target() {
    // The suite's futures are deep and large in a debug build: its own runtime, on threads
    // with room (a test thread has 2 MiB).
    let run = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_stack_size(16 << 20)
                .enable_all()
                .build()
                .expect("a runtime")
                .block_on(Box::pin(suite()));
        })
        .expect("the suite's thread");
    if let Err(panic) = run.join() {
        std::panic::resume_unwind(panic);
    }
}

async fn suite() {
    let started = Instant::now();
    let k4 = crate::support::cluster("k4");
    let addr = k4.var("PLAINTEXT").to_string();
    let client = KafkaClient::connect(k4.plaintext())
        .await
        .unwrap_or_else(|e| panic!("k4 unreachable ({e}); start the harness with up.sh"));
    let id = crate::support::unique_topic("x")
        .rsplit('-')
        .next()
        .unwrap()
        .to_string();
    let topic_l = format!("pl-{id}");
    let topic_t = format!("pt-{id}");
    let topic_e = format!("pe-{id}");
    let groups_l = format!("pgl-{id}");
    let groups_t = format!("pgt-{id}");
    let groups_e = format!("pge-{id}");
    // Flow P's source: a broker of the suite's own, started while the others' data is written
    // (and stopped at the end: the disaster case).
    let topic_p = format!("pp-{id}");
    let topic_c = format!("pc-{id}");
    let groups_p = format!("pgp-{id}");
    let own = std::thread::spawn(|| OwnBroker::start("precise-primary"));

    // Topics first (so MM2 finds them at once), then MM2, then the data.
    write(&k4, &topic_l, 2, &lines(&topic_l, 2, 0, 2), None);
    write(&k4, &topic_t, 1, &lines(&topic_t, 1, 0, 1), None);
    // Flow E's bulk is written while MM2 starts (MM2 finds the topic within a second, at its
    // next refresh), and copied while the other flows' records are written.
    let (k4_e, topic_e_bg) = (k4.clone(), topic_e.clone());
    let bulk_writer = std::thread::spawn(move || {
        write_bulk(&k4_e, &topic_e_bg, &small_lines(0, BULK_RECORDS));
    });
    let pp = std::sync::Arc::new(own.join().expect("the suite's own broker"));
    // P: plain and transactional records on two partitions; C: a compacted topic whose
    // segments roll every second, so the cleaner (every 300 ms on this broker) compacts it.
    pp.write(&topic_p, 2, &lines(&topic_p, 2, 0, 2), &[]);
    pp.write(
        &topic_c,
        1,
        &compacted_lines(&topic_c, 0, 1),
        &["--compact"],
    );
    pp.compact_fast(&topic_c);
    let pp_client = pp.client().await;
    let mut seq_p = 2;
    let mut seq_c = 1;
    phase(started, "own broker up, flow P's topics made");
    let mm2 = Mm2::start(
        "mm2-precise",
        vec![
            format!("PP={}", pp.addr),
            format!("TOPIC_P={topic_p}"),
            format!("TOPIC_C={topic_c}"),
            format!("GROUPS_P={groups_p}-.*"),
            format!("ADDR={addr}"),
            format!("TOPIC_L={topic_l}"),
            format!("TOPIC_T={topic_t}"),
            format!("GROUPS_L={groups_l}-.*"),
            format!("GROUPS_T={groups_t}-.*"),
            format!("TOPIC_E={topic_e}"),
            format!("GROUPS_E={groups_e}-.*"),
        ],
    );
    let mut seq_l = 2;
    let mut seq_t = 1;
    bulk_writer.join().expect("flow E's bulk writer");
    let mut seq_e = BULK_RECORDS;
    phase(started, "MM2 up, flow E's bulk written");
    let replica_e = format!("pup3.{topic_e}");
    println!(
        "flow E's replica: offset {}",
        replica_end(&client, &replica_e).await
    );
    // Plain records, then transactions (markers and aborted records: upstream gaps) on L.
    write(
        &k4,
        &topic_l,
        2,
        &lines(&topic_l, 2, seq_l, 2 * PHASE_RECORDS),
        None,
    );
    seq_l += 2 * PHASE_RECORDS;
    write(
        &k4,
        &topic_t,
        1,
        &lines(&topic_t, 1, seq_t, PHASE_RECORDS),
        None,
    );
    seq_t += PHASE_RECORDS;
    let txn_plan = "plain:100,txn:60,commit,txn:40,abort,plain:50,txn:30,commit,txn:20,abort";
    write(
        &k4,
        &topic_l,
        2,
        &lines(&topic_l, 2, seq_l, 300),
        Some(txn_plan),
    );
    seq_l += 300;
    pp.write(&topic_p, 2, &lines(&topic_p, 2, seq_p, 2 * P_RECORDS), &[]);
    seq_p += 2 * P_RECORDS;
    pp.write(
        &topic_p,
        2,
        &lines(&topic_p, 2, seq_p, 300),
        &[
            "--plan",
            txn_plan,
            "--transactional-id",
            &format!("ptx-{id}"),
        ],
    );
    seq_p += 300;
    pp.write(
        &topic_c,
        1,
        &compacted_lines(&topic_c, seq_c, C_RECORDS),
        &[],
    );
    seq_c += C_RECORDS;

    // MM2 crashes while records flow; then it is started again. The exactly-once task starts
    // copying later than the others (seen: its first produce retried on CONCURRENT_TRANSACTIONS):
    // once it has begun, E's bulk keeps it busy for seconds, so the kill may catch one of its
    // transactions open, aborted downstream once the restarted task fences the old one
    // (counted below, not asserted: the kill can fall between two transactions).
    let waiting = Instant::now();
    while replica_end(&client, &replica_e).await < 1000
        && waiting.elapsed() < Duration::from_secs(60)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    phase(started, "flow E copying");
    let (k4_bg, topic_l_bg, topic_t_bg) = (k4.clone(), topic_l.clone(), topic_t.clone());
    let (pp_bg, topic_p_bg, topic_c_bg) = (pp.clone(), topic_p.clone(), topic_c.clone());
    let writer = std::thread::spawn(move || {
        // P's records go first, beside L's: both flows are copying when the kill comes.
        let p_writer = std::thread::spawn(move || {
            let p_lines = lines(&topic_p_bg, 2, seq_p, 2 * P_RECORDS);
            pp_bg.write(&topic_p_bg, 2, &p_lines, &[]);
            let c_lines = compacted_lines(&topic_c_bg, seq_c, C_RECORDS);
            pp_bg.write(&topic_c_bg, 1, &c_lines, &[]);
        });
        write(
            &k4_bg,
            &topic_l_bg,
            2,
            &lines(&topic_l_bg, 2, seq_l, 2 * PHASE_RECORDS),
            None,
        );
        write(
            &k4_bg,
            &topic_t_bg,
            1,
            &lines(&topic_t_bg, 1, seq_t, PHASE_RECORDS),
            None,
        );
        p_writer.join().expect("flow P's writer");
    });
    // Crash while MM2 is copying: once the replica has grown by 200 records since the writer
    // started, and before Connect's next offset flush covers them.
    let replica = format!("pup.{topic_l}");
    let before = log_end(&client, &replica).await;
    let waiting = Instant::now();
    while log_end(&client, &replica).await < before + 200
        && waiting.elapsed() < Duration::from_secs(60)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    mm2.crash();
    phase(
        started,
        &format!(
            "MM2 killed; flow E's replica then ended at offset {} ({seq_e} records upstream)",
            log_end(&client, &replica_e).await
        ),
    );
    writer.join().expect("writer");
    seq_l += 2 * PHASE_RECORDS;
    seq_t += PHASE_RECORDS;
    seq_p += 2 * P_RECORDS;
    seq_c += C_RECORDS;
    mm2.launch();
    phase(started, "MM2 restarted");
    let (pp_bg, topic_p_bg, topic_c_bg) = (pp.clone(), topic_p.clone(), topic_c.clone());
    let p_tail_writer = std::thread::spawn(move || {
        let plan = ["--plan", txn_plan, "--transactional-id", "ptx-tail"];
        pp_bg.write(&topic_p_bg, 2, &lines(&topic_p_bg, 2, seq_p, 300), &plan);
        let c_lines = compacted_lines(&topic_c_bg, seq_c, C_RECORDS);
        pp_bg.write(&topic_c_bg, 1, &c_lines, &[]);
    });
    let (k4_e, topic_e_bg) = (k4.clone(), topic_e.clone());
    let tail_writer = std::thread::spawn(move || {
        write_bulk(&k4_e, &topic_e_bg, &small_lines(seq_e, EOS_TAIL_RECORDS));
    });
    write(
        &k4,
        &topic_l,
        2,
        &lines(&topic_l, 2, seq_l, 300),
        Some(txn_plan),
    );
    write(&k4, &topic_t, 1, &lines(&topic_t, 1, seq_t, 300), None);
    tail_writer.join().expect("flow E's tail writer");
    seq_e += EOS_TAIL_RECORDS;
    let last_key_e = format!("e{}", seq_e - 1);
    p_tail_writer.join().expect("flow P's tail writer");
    seq_p += 300;

    // Groups at the end, 10 behind, 1,000 behind, and in the middle of the restart.
    let ends_l = end_offsets(&client, &topic_l, 2).await;
    let ends_t = end_offsets(&client, &topic_t, 1).await;
    for (groups, topic, ends) in [
        (&groups_l, &topic_l, &ends_l),
        (&groups_t, &topic_t, &ends_t),
    ] {
        for (name, behind) in [("caught-up", 0), ("lag-10", 10), ("lag-1000", 1000)] {
            let offsets: Vec<(i32, i64)> = ends
                .iter()
                .enumerate()
                .map(|(p, end)| (p as i32, end - behind))
                .collect();
            commit(&client, &format!("{groups}-{name}"), topic, &offsets).await;
        }
        let middle: Vec<(i32, i64)> = ends
            .iter()
            .enumerate()
            .map(|(p, end)| (p as i32, end * 3 / 5))
            .collect();
        commit(&client, &format!("{groups}-middle"), topic, &middle).await;
    }
    // Flow P, on its own broker: the same lags on both topics.
    let ends_p = end_offsets(&pp_client, &topic_p, 2).await;
    let ends_c = end_offsets(&pp_client, &topic_c, 1).await;
    for (name, behind) in [
        ("caught-up", 0),
        ("lag-10", 10),
        ("lag-100", 100),
        ("lag-1000", 1000),
    ] {
        for (topic, ends) in [(&topic_p, &ends_p), (&topic_c, &ends_c)] {
            let offsets: Vec<(i32, i64)> = ends
                .iter()
                .enumerate()
                .map(|(p, end)| (p as i32, (end - behind).max(0)))
                .collect();
            commit(&pp_client, &format!("{groups_p}-{name}"), topic, &offsets).await;
        }
    }
    // Never checkpointed: a group MirrorMaker 2 is not told about (outside its groups
    // pattern), on L's topic, 500 behind.
    let never = format!("pnl-{id}-x");
    let offsets: Vec<(i32, i64)> = ends_l
        .iter()
        .enumerate()
        .map(|(p, end)| (p as i32, end - 500))
        .collect();
    commit(&client, &never, &topic_l, &offsets).await;
    // Flow E: one partition of over 100,000 records, and a group 100,000 behind.
    let end_e = log_end(&client, &topic_e).await;
    assert_eq!(end_e, seq_e as i64, "flow E: one offset per record written");
    assert!(end_e > 100_000, "flow E holds {end_e} offsets");
    for (name, offset) in [
        ("caught-up", end_e),
        ("lag-10", end_e - 10),
        ("lag-1000", end_e - 1000),
        ("lag-100000", end_e - 100_000),
        ("middle", end_e * 3 / 5),
    ] {
        commit(
            &client,
            &format!("{groups_e}-{name}"),
            &topic_e,
            &[(0, offset)],
        )
        .await;
    }

    phase(started, "groups committed");
    let policy = ReplicationPolicy::default();
    let mirror = MirrorClient::new(client.clone(), policy.clone());
    let flows = [
        FlowUnderTest {
            label: "L (lag.max 10, transactions, syncs on the source)",
            source_alias: "pup",
            topic: topic_l.clone(),
            partitions: 2,
            groups: groups_l.clone(),
            group_count: 4,
            upstream: Upstream::Transactions,
            syncs: SyncsSource::new(client.clone(), &policy, "pdn"),
        },
        FlowUnderTest {
            label: "T (lag.max 100, syncs on the target)",
            source_alias: "pup2",
            topic: topic_t.clone(),
            partitions: 1,
            groups: groups_t.clone(),
            group_count: 4,
            upstream: Upstream::Gapless,
            // offset-syncs.topic.location=target: named after the SOURCE alias.
            syncs: SyncsSource::new(client.clone(), &policy, "pup2"),
        },
        FlowUnderTest {
            label: "E (exactly-once, lag.max 100, syncs on the source)",
            source_alias: "pup3",
            topic: topic_e.clone(),
            partitions: 1,
            groups: groups_e.clone(),
            group_count: 5,
            upstream: Upstream::GaplessExactlyOnce,
            syncs: SyncsSource::new(client.clone(), &policy, "pdx"),
        },
    ];
    for flow in &flows {
        let mut request = TranslateRequest::new(
            flow.source_alias,
            GroupSelector::patterns([format!("{}-.*", flow.groups)]).unwrap(),
        );
        request.timeout = TIMEOUT;
        wait_checkpoints(
            &mirror,
            &request,
            flow.group_count * flow.partitions as usize,
        )
        .await;
    }
    // Let MM2 finish copying (the truth counts only what was copied, so this only makes the
    // distances honest), then freeze nothing: MM2 keeps running for the live check below.
    // Flow E's last record must be downstream before its truth is read (see wait_copied).
    let mut request_p = TranslateRequest::new(
        "pp",
        GroupSelector::patterns([format!("{groups_p}-.*")]).unwrap(),
    );
    request_p.timeout = TIMEOUT;
    // 4 groups on 3 partitions. MM2 may never checkpoint the groups far behind (its store
    // forgets what lies below a restart's rewind); the caught-up and 10-behind ones, above any
    // rewind, always come.
    matching::wait_checkpoints_settled(&mirror, &request_p, 2 * 3).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    wait_copied(&client, &flows[2].remote_topic(), last_key_e.as_bytes()).await;
    for (topic, partitions) in [(&topic_p, 2), (&topic_c, 1)] {
        matching::wait_replicated(
            &pp_client,
            topic,
            &client,
            &format!("pp.{topic}"),
            partitions,
        )
        .await;
    }
    phase(started, "checkpoints in, flows E and P copied");

    for flow in &flows {
        let mut request = TranslateRequest::new(
            flow.source_alias,
            GroupSelector::patterns([format!("{}-.*", flow.groups)]).unwrap(),
        );
        request.timeout = TIMEOUT;
        let (truths, gaps) = truths(&client, flow).await;
        let mut syncs = flow.syncs.clone();
        let precise = mirror.translate_precise(&request, &syncs).await.unwrap();
        assert!(precise.syncs_report.complete);
        check(flow.label, &precise, &truths, true);
        // Every upstream offset, not only the groups': the syncs alone are safe on any flow.
        check_every_offset(flow.label, flow, &syncs, &request, &truths).await;
        match flow.upstream {
            Upstream::Transactions => {
                assert!(
                    gaps.upstream,
                    "flow L must have transaction markers upstream"
                );
                continue;
            }
            Upstream::Gapless => {
                assert!(!gaps.upstream, "flow T must be gapless upstream");
                assert!(
                    !gaps.downstream,
                    "flow T is at-least-once: no markers downstream"
                );
            }
            Upstream::GaplessExactlyOnce => {
                assert!(!gaps.upstream, "flow E must be gapless upstream");
                // Exactly-once really was in effect: MM2's transactions left markers in the
                // replica (an at-least-once MM2 writes none into a gapless replica).
                let markers = scan(&client, &flow.remote_topic(), 0, b"").await;
                println!(
                    "{}: {} data records, {} commit and {} abort markers downstream",
                    flow.label, markers.data_records, markers.commits, markers.aborts
                );
                assert!(
                    gaps.downstream && markers.commits > 0,
                    "flow E: no transaction marker in {}: exactly-once source support was not in effect",
                    flow.remote_topic()
                );
                // Its checkpoint task writes in transactions too: the checkpoints just read came
                // through control batches (the topic is shared by every run of the suite).
                let checkpoints = policy.checkpoints_topic(flow.source_alias);
                let markers = scan(&client, &checkpoints, 0, b"").await;
                println!(
                    "{}: {checkpoints} holds {} checkpoints, {} commit and {} abort markers",
                    flow.label, markers.data_records, markers.commits, markers.aborts
                );
                assert!(
                    markers.commits > 0,
                    "no transaction marker in {checkpoints}"
                );
                // MM2 checkpointed every group, the one 100,000 behind included.
                assert_eq!(
                    precise.translation.groups().len(),
                    flow.group_count,
                    "flow E: {:?}",
                    precise.translation.groups()
                );
            }
        }
        // Interpolation is sound on gapless partitions, restarts, duplicates and downstream
        // transaction markers included.
        let label = format!("{} --gapless-upstream", flow.label);
        syncs.interpolation = Interpolation::GaplessUpstream;
        let interpolated = mirror.translate_precise(&request, &syncs).await.unwrap();
        check(&label, &interpolated, &truths, true);
        check_every_offset(&label, flow, &syncs, &request, &truths).await;
    }

    phase(started, "flows checked");

    // Record matching on every flow, on the truths read now (MM2 has copied everything).
    let mut truths_all = matching::Truths::default();
    for flow in &flows {
        truths_of(
            &client,
            &flow.topic,
            &client,
            &flow.remote_topic(),
            flow.partitions as i32,
            &mut truths_all,
        )
        .await;
    }
    truths_of(
        &pp_client,
        &topic_p,
        &client,
        &format!("pp.{topic_p}"),
        2,
        &mut truths_all,
    )
    .await;
    let c_gaps = truths_of(
        &pp_client,
        &topic_c,
        &client,
        &format!("pp.{topic_c}"),
        1,
        &mut truths_all,
    )
    .await;
    assert!(
        c_gaps,
        "the compacted topic {topic_c} was not compacted (no offset gaps)"
    );
    let syncs_p = SyncsSource::new(pp_client.clone(), &policy, "pdn");
    let mut summary = Vec::new();
    let mut matched_l = None;
    let cases = [
        (flows[0].label, "pup", &groups_l, &flows[0].syncs, &client),
        (flows[1].label, "pup2", &groups_t, &flows[1].syncs, &client),
        (flows[2].label, "pup3", &groups_e, &flows[2].syncs, &client),
        (
            "P (lag.max 100, transactions, compacted, own broker)",
            "pp",
            &groups_p,
            &syncs_p,
            &pp_client,
        ),
    ];
    for (flow, alias, groups, syncs, source) in cases {
        // P is translated from the source's offsets: every partition its groups committed,
        // those MM2 never checkpointed included.
        let from_source = alias == "pp";
        let mut request = TranslateRequest::new(
            alias,
            GroupSelector::patterns([format!("{groups}-.*")]).unwrap(),
        );
        request.timeout = TIMEOUT;
        let (out, d) = matching::check_matching(
            flow,
            &mirror,
            &request,
            mm2_offsets::precise::Syncs::Topic(syncs.clone()),
            source,
            from_source,
            &truths_all,
        )
        .await;
        assert!(d.matched > 0, "{flow}: nothing matched");
        if from_source {
            // Every partition each group committed on the source has a row.
            assert_eq!(d.rows, 4 * 3, "{flow}: {:?}", out.source_groups);
        }
        if flow == flows[0].label {
            matched_l = Some(out);
        }
        summary.push((flow, d));
    }
    for (flow, d) in &summary {
        println!(
            "summary {flow}: {} rows, {} record-match; distance to the truth: MM2 {}, --precise {}, --match-records {}",
            d.rows, d.matched, d.mm2, d.precise, d.matched_distance
        );
    }
    phase(started, "record matching checked");

    // Partitions MM2 never checkpointed: --from-source-offsets translates every partition a
    // selected group committed on the source, the group MM2 ignores included.
    let mut request_never = TranslateRequest::new(
        "pup",
        GroupSelector::patterns([format!("{groups_l}-.*"), format!("pnl-{id}-.*")]).unwrap(),
    );
    request_never.timeout = TIMEOUT;
    let (never_out, _) = matching::check_matching(
        "L, --from-source-offsets",
        &mirror,
        &request_never,
        mm2_offsets::precise::Syncs::Topic(flows[0].syncs.clone()),
        &client,
        true,
        &truths_all,
    )
    .await;
    let never_rows: Vec<_> = never_out
        .iter()
        .zip(&never_out.inputs)
        .filter(|((o, _), _)| o.group == never)
        .collect();
    assert_eq!(never_rows.len(), 2, "both partitions of {never} translated");
    assert!(never_rows.iter().all(|(_, i)| i.input == Input::SourceOnly));
    let source_only = never_out
        .inputs
        .iter()
        .filter(|i| i.input == Input::SourceOnly)
        .count();
    println!(
        "never checkpointed: {source_only} partition(s) translated from the source alone ({} of the group MM2 ignores); per group {:?}",
        never_rows.len(),
        never_out.source_groups
    );

    // verify on partitions whose truth record matching proved: set exact, behind and ahead.
    let matched_l = matched_l.expect("flow L matched");
    // One row per partition: the same positions go to --offsets-file below, which takes each
    // partition once. (When MM2 has not checkpointed a group on some partition yet, the two
    // groups' rows can both be on the other.)
    let mut partitions_taken = std::collections::BTreeSet::new();
    let proven: Vec<(String, i32, i64, i64)> = matched_l
        .iter()
        .zip(&matched_l.inputs)
        .filter(|((_, p), _)| p.rule == Rule::RecordMatch)
        .filter(|((o, _), _)| o.group.ends_with("-lag-1000") || o.group.ends_with("-middle"))
        .filter(|((o, _), _)| partitions_taken.insert(o.partition))
        .take(2)
        .map(|((o, p), i)| (topic_l.clone(), o.partition, i.upstream_offset, p.offset))
        .collect();
    assert!(!proven.is_empty(), "no proven partition to verify");
    matching::check_verify(
        &mirror,
        mm2_offsets::precise::Syncs::Topic(flows[0].syncs.clone()),
        "pup",
        &id,
        &proven,
        |group, topic, offsets| {
            let client = client.clone();
            async move { commit(&client, &group, &topic, &offsets).await }
        },
    )
    .await;
    // The same from the command line: verify exits 1 (a partition is ahead) and prints the
    // three verdicts; --offsets-file translates bare positions (a stream processor's own
    // checkpoint), matched, each at its truth.
    let verify_regex = format!("pvf-{id}-.*");
    let (code, stdout, stderr) = matching::cli(&[
        "verify",
        "--bootstrap-server",
        &addr,
        "--source",
        "pup",
        "--group-regex",
        &verify_regex,
        "--syncs-bootstrap-server",
        &addr,
        "--syncs-topic",
        &flows[0].syncs.topic,
        "-o",
        "json",
    ]);
    assert_eq!(
        code, 1,
        "verify exits 1 when a partition is ahead: {stderr}"
    );
    let verdicts: serde_json::Value = serde_json::from_str(&stdout).expect("verify's JSON");
    let mut kinds: Vec<&str> = verdicts["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(kinds, ["ahead", "behind", "exact"], "{stdout}");
    let positions = proven
        .iter()
        .map(|(topic, p, u, _)| format!("{topic},{p},{u}"))
        .collect::<Vec<_>>()
        .join("\n");
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(
        file.path(),
        format!("topic,partition,offset\n{positions}\n"),
    )
    .unwrap();
    let file_arg = file.path().to_str().unwrap().to_string();
    let (code, stdout, stderr) = matching::cli(&[
        "translate",
        "--bootstrap-server",
        &addr,
        "--source",
        "pup",
        "--precise",
        "--match-records",
        "--offsets-file",
        &file_arg,
        "--syncs-bootstrap-server",
        &addr,
        "--syncs-topic",
        &flows[0].syncs.topic,
        "-o",
        "json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    let rows = doc["offsets"].as_array().expect("offsets");
    assert_eq!(rows.len(), proven.len(), "{stdout}");
    for (row, (_, _, _, truth)) in rows.iter().zip(&proven) {
        assert_eq!(row["input"], "offsets-file", "{row}");
        assert_eq!(row["rule"], "record-match", "{row}");
        assert_eq!(row["offset"].as_i64(), Some(*truth), "{row}");
    }
    println!(
        "--offsets-file: {} positions, each matched at its truth",
        rows.len()
    );
    phase(started, "never-checkpointed and verify checked");

    // A compacted offset-syncs topic keeps the last sync per partition: copy exactly that from
    // flow L's history into a topic of its own, and translate with it. Groups below that sync
    // keep MM2's offset and say so (no-sync); the others never pass the truth.
    let l = &flows[0];
    let (sync_records, _, _) = read_log(&client, &l.syncs.topic, 0).await;
    let mut last: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for r in sync_records {
        let (Some(key), Some(value)) = (r.key, r.value) else {
            continue;
        };
        let decoded = mm2_offsets::mm2::offset_sync::decode_key(&key).unwrap();
        if decoded.topic == topic_l.as_bytes() {
            last.insert(key, value);
        }
    }
    assert_eq!(
        last.len(),
        2,
        "one surviving sync per partition of {topic_l}"
    );
    let compacted_topic = format!("psc-{id}");
    // What compaction leaves keeps the survivors' offsets, so the log shows the removal (a hole
    // or a log start above 0), which is what lets a checkpoint below the oldest survivor keep
    // MM2's offset (issue 20's provenance rule): one sync removed by DeleteRecords before them.
    let line = |(k, v): (&Vec<u8>, &Vec<u8>)| format!("0 {} {}", hex(k), hex(v));
    let compacted: Vec<String> = last.iter().take(1).chain(last.iter()).map(line).collect();
    write(&k4, &compacted_topic, 1, &compacted, None);
    crate::support::raw::Raw::connect(&k4)
        .await
        .delete_records(&compacted_topic, 0, 1)
        .await;
    let mut request = TranslateRequest::new(
        "pup",
        GroupSelector::patterns([format!("{}-.*", l.groups)]).unwrap(),
    );
    request.timeout = TIMEOUT;
    let (truths_l, _) = truths(&client, l).await;
    let mut compacted_syncs = l.syncs.clone();
    compacted_syncs.topic = compacted_topic;
    let fallback = mirror
        .translate_precise(&request, &compacted_syncs)
        .await
        .unwrap();
    check("L, compacted history", &fallback, &truths_l, true);
    let counts = fallback.rule_counts();
    assert!(
        counts.get(&Rule::NoSync).copied().unwrap_or(0) > 0,
        "the 1,000-behind group is below the only surviving sync: {counts:?}"
    );
    for p in &fallback.precise {
        if matches!(p.rule, Rule::NoSync | Rule::Mm2Checkpoint) {
            assert_eq!(p.offset, p.mm2_offset);
        }
    }

    // --from-source-offsets while the source's group keeps committing: the 1,000-behind group
    // moves forward 50 records every 100 ms while the translation runs.
    let lagging = format!("{groups_l}-lag-1000");
    let (committer_client, committer_group, committer_topic, ends) = (
        client.clone(),
        lagging.clone(),
        topic_l.clone(),
        ends_l.clone(),
    );
    let committer = tokio::spawn(async move {
        for step in 1..=10 {
            let offsets: Vec<(i32, i64)> = ends
                .iter()
                .enumerate()
                .map(|(p, end)| (p as i32, end - 1000 + 50 * step))
                .collect();
            commit(
                &committer_client,
                &committer_group,
                &committer_topic,
                &offsets,
            )
            .await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let live = mirror
        .translate_from_source_offsets(&request, &l.syncs, &client)
        .await
        .unwrap();
    committer.await.unwrap();
    check("L, --from-source-offsets", &live, &truths_l, false);
    for ((o, p), input) in live.iter().zip(&live.inputs) {
        assert_eq!(input.input, Input::SourceOffset, "{}", o.group);
        assert!(input.upstream_offset >= o.upstream_offset || o.group != lagging);
        if input.upstream_offset >= o.upstream_offset {
            assert!(p.offset >= p.mm2_offset);
        }
    }
    let moved: i64 = live
        .iter()
        .zip(&live.inputs)
        .filter(|((o, _), _)| o.group == lagging)
        .map(|((o, _), i)| i.upstream_offset - o.upstream_offset)
        .sum();
    println!(
        "L, --from-source-offsets: the lagging group's source offsets were {moved} records past its checkpoints; per group {:?}",
        live.source_groups
    );
    if let Some(inputs) = live.source_groups.get(&lagging) {
        assert_eq!(inputs.source_offset, 2, "{inputs:?}");
    }

    // The disaster: flow P's source cluster, and its offset-syncs topic with it, is lost.
    // watch --precise wrote a snapshot of the history while it was up; checkpoints keep
    // coming after the snapshot; then MM2 and the source go.
    let state_dir = tempfile::tempdir().expect("temp dir");
    let syncs_topic_p = policy.offset_syncs_topic("pdn");
    let checkpoints_p = mirror.translate(&request_p).await.unwrap().len();
    let (snapshot_path, served) = matching::watch_snapshot(
        &addr,
        "pp",
        &pp.addr,
        &syncs_topic_p,
        &format!("{groups_p}-.*"),
        state_dir.path(),
    );
    // The watch serves the checkpointed partitions (those MM2 checkpointed: 6 at least).
    let served = served["offsets"].as_array().map_or(0, Vec::len);
    assert_eq!(served, checkpoints_p, "/precise/offsets");
    let snapshot = mm2_offsets::precise::SyncSnapshot::read_file(&snapshot_path).unwrap();
    std::fs::copy(&snapshot_path, work_file("syncs.snapshot")).expect("keep the snapshot");
    println!(
        "the snapshot is kept at {}",
        work_file("syncs.snapshot").display()
    );
    let newest: BTreeMap<(Vec<u8>, i32), i64> = snapshot
        .partitions
        .iter()
        .map(|(t, p, syncs)| {
            (
                (t.clone(), *p),
                syncs.iter().map(|s| s.0).max().unwrap_or(-1),
            )
        })
        .collect();
    phase(started, "snapshot written");
    pp.write(&topic_p, 2, &lines(&topic_p, 2, seq_p, 600), &[]);
    let ends_p2 = end_offsets(&pp_client, &topic_p, 2).await;
    for (name, behind) in [("caught-up", 0), ("lag-10", 10)] {
        let offsets: Vec<(i32, i64)> = ends_p2
            .iter()
            .enumerate()
            .map(|(p, end)| (p as i32, end - behind))
            .collect();
        commit(
            &pp_client,
            &format!("{groups_p}-{name}"),
            &topic_p,
            &offsets,
        )
        .await;
    }
    let remote_p = format!("pp.{topic_p}");
    matching::wait_checkpointed(&mirror, &request_p, &remote_p, &ends_p2).await;
    matching::wait_replicated(&pp_client, &topic_p, &client, &remote_p, 2).await;
    let mut truths_p = matching::Truths::default();
    truths_of(&pp_client, &topic_p, &client, &remote_p, 2, &mut truths_p).await;
    truths_of(
        &pp_client,
        &topic_c,
        &client,
        &format!("pp.{topic_c}"),
        1,
        &mut truths_p,
    )
    .await;
    drop(mm2);
    pp.stop();
    phase(started, "flow P's source stopped");
    let groups_arg = format!("{groups_p}-.*");
    let base = [
        "translate",
        "--bootstrap-server",
        &addr,
        "--source",
        "pp",
        "--group-regex",
        &groups_arg,
        "--precise",
    ];
    // Without the snapshot, precise translation needs the lost cluster.
    let mut args = base.to_vec();
    args.extend([
        "--syncs-bootstrap-server",
        &pp.addr,
        "--syncs-topic",
        &syncs_topic_p,
        "--timeout",
        "5s",
    ]);
    let (code, _, stderr) = matching::cli(&args);
    assert_eq!(code, 1, "the source is gone: {stderr}");
    phase(
        started,
        "without the snapshot: the lost source refused within --timeout 5s",
    );
    let snapshot_arg = snapshot_path.to_str().unwrap().to_string();
    let mut args = base.to_vec();
    args.extend(["--syncs-snapshot", &snapshot_arg, "-o", "json"]);
    let (code, stdout, stderr) = matching::cli(&args);
    assert_eq!(code, 0, "{stderr}");
    let document: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = document["offsets"].as_array().expect("offsets");
    let (mut newer, mut distance) = (0, 0);
    println!(
        "disaster: group\ttopic\tpartition\tupstream\tmm2\tsnapshot precise\ttruth\trule\tnewer than the snapshot"
    );
    for row in rows {
        let topic = row["topic"].as_str().unwrap();
        let upstream_topic = topic.strip_prefix("pp.").unwrap();
        let partition = row["partition"].as_i64().unwrap() as i32;
        let upstream = row["upstream_offset"].as_i64().unwrap();
        let offset = row["offset"].as_i64().unwrap();
        let truth = truths_p.at(upstream_topic, partition, upstream);
        let is_newer = newest
            .get(&(upstream_topic.as_bytes().to_vec(), partition))
            .is_none_or(|&u| upstream > u);
        newer += usize::from(is_newer);
        distance += truth - offset;
        println!(
            "disaster: {}\t{topic}\t{partition}\t{upstream}\t{}\t{offset}\t{truth}\t{}\t{is_newer}",
            row["group"].as_str().unwrap(),
            row["mm2_offset"],
            row["rule"].as_str().unwrap()
        );
        assert!(
            offset <= truth,
            "from the snapshot, {row} is past the truth {truth}"
        );
        assert!(
            row["max_rereads"].is_null(),
            "no bound from a snapshot: {row}"
        );
    }
    assert!(
        rows.len() >= checkpoints_p && newer > 0,
        "{} rows, {newer} newer than the snapshot",
        rows.len()
    );
    println!(
        "disaster: {} rows from the snapshot ({} syncs), {newer} of them checkpoints newer than it; distance to the truth {distance}",
        rows.len(),
        snapshot.syncs()
    );
    // apply plans the same offsets from the snapshot (a dry run: nothing written).
    let mut args = base.to_vec();
    args[0] = "apply";
    args.extend(["--syncs-snapshot", &snapshot_arg, "-o", "json"]);
    let (code, stdout, stderr) = matching::cli(&args);
    assert!(code == 0 || code == 3, "apply --syncs-snapshot: {stderr}");
    let plan: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let planned: usize = plan["plan"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["partitions"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(planned, rows.len(), "apply plans every row");
    println!(
        "precise_live_mm2: {} ms in all",
        started.elapsed().as_millis()
    );
}

/// A file under this checkout's work dir, kept after the run (a fuzz seed, evidence).
fn work_file(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol-tests/work/precise-live");
    std::fs::create_dir_all(&dir).expect("the work dir");
    dir.join(name)
}
