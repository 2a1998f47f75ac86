//! Record matching, `verify`, never-checkpointed partitions and precise translation after the
//! source is lost, on the live MirrorMaker 2 of `precise_live_mm2` (its flows L, T, E, and P:
//! the suite's own source broker, offset.lag.max at MM2's default, transactions, a compacted
//! topic the cleaner really compacts, syncs on the source). Called from that suite's test, on
//! its MM2: no JVM of its own beyond the one broker P needs.
//!
//! The truth is record identity (key and value): for upstream offset `U`, the least, over the
//! records at or after `U`, of their last copy downstream.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mm2_offsets::client::KafkaClient;
use mm2_offsets::mm2::sync_index::Rule;
use mm2_offsets::precise::{MatchRecords, PreciseRequest, PreciseTranslation, Syncs};
use mm2_offsets::record_match::MatchOptions;
use mm2_offsets::translate::{MirrorClient, TranslateRequest};
use mm2_offsets::verify::VerifyVerdict;

const BIN: &str = env!("CARGO_BIN_EXE_mm2-offsets");

/// This checkout's harness script.
fn own_harness(script: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("protocol-tests/harness")
        .join(script)
}

/// A Kafka broker of the suite's own (`kafka.sh` under this checkout's work dir), stopped
/// when dropped: the source cluster the disaster case stops.
pub struct OwnBroker {
    pub name: String,
    pub addr: String,
    stopped: std::sync::atomic::AtomicBool,
}

impl OwnBroker {
    /// Starts it with a fast log cleaner (a compacted topic is cleaned within seconds).
    pub fn start(name: &str) -> OwnBroker {
        let started = Instant::now();
        // A run that aborted (no unwinding) left it running: it is ours, stop it first.
        let _ = Command::new("bash")
            .arg(own_harness("kafka.sh"))
            .args(["stop", name])
            .output();
        let output = Command::new("bash")
            .arg(own_harness("kafka.sh"))
            .args(["start", name, "4.4.0"])
            .env(
                "MM2O_KAFKA_EXTRA_CONFIG",
                "log.cleaner.backoff.ms=300,log.cleaner.min.cleanable.ratio=0.01",
            )
            .output()
            .expect("run kafka.sh");
        assert!(
            output.status.success(),
            "the suite's broker {name} did not start: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let env = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("protocol-tests/work")
                .join(name)
                .join("env"),
        )
        .expect("the broker's env file");
        let addr = env
            .lines()
            .find_map(|l| l.strip_prefix("PLAINTEXT="))
            .expect("PLAINTEXT in the env file")
            .to_string();
        println!(
            "own broker {name} at {addr} up in {} ms",
            started.elapsed().as_millis()
        );
        OwnBroker {
            name: name.to_string(),
            addr,
            stopped: false.into(),
        }
    }

    /// Stops it (the source is lost).
    pub fn stop(&self) {
        if !self.stopped.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let _ = Command::new("bash")
                .arg(own_harness("kafka.sh"))
                .args(["stop", &self.name])
                .output();
        }
    }

    /// A client for it.
    pub async fn client(&self) -> KafkaClient {
        KafkaClient::connect(mm2_offsets::config::ClientConfig::plaintext([self
            .addr
            .clone()]))
        .await
        .unwrap_or_else(|e| panic!("{} unreachable: {e}", self.name))
    }

    /// DataWriter `raw` on this broker.
    pub fn write(&self, topic: &str, partitions: u32, lines: &[String], extra: &[&str]) {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("records.txt");
        std::fs::write(&file, lines.join("\n") + "\n").expect("write records file");
        let output = Command::new("bash")
            .arg(crate::support::harness_dir().join("datawriter.sh"))
            .args(["raw", "--bootstrap", &self.addr, "--topic", topic])
            .args(["--partitions", &partitions.to_string(), "--summary-only"])
            .arg("--file")
            .arg(&file)
            .args(extra)
            .output()
            .expect("run datawriter.sh");
        assert!(
            output.status.success(),
            "data writer on {topic}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Topic settings that make the cleaner compact `topic` within seconds: a segment a
    /// second, any dirt cleanable.
    pub fn compact_fast(&self, topic: &str) {
        let output = Command::new("bash")
            .arg(own_harness("kafka.sh"))
            .args(["tool", "org.apache.kafka.tools.ConfigCommand"])
            .args(["--bootstrap-server", &self.addr, "--alter"])
            .args(["--entity-type", "topics", "--entity-name", topic])
            .args([
                "--add-config",
                "segment.ms=1000,min.cleanable.dirty.ratio=0.01,min.compaction.lag.ms=0",
            ])
            .output()
            .expect("run ConfigCommand");
        assert!(
            output.status.success(),
            "ConfigCommand on {topic}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

impl Drop for OwnBroker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The truth of each (upstream topic, partition), and the downstream data records' offsets
/// of its replica (re-reads are records, not offsets: compaction leaves holes).
#[derive(Debug, Default)]
pub struct Truths {
    pub by_upstream: BTreeMap<(String, i32), Vec<i64>>,
    pub downstream: BTreeMap<(String, i32), Vec<i64>>,
    /// (downstream offset, upstream offset) of the last copy of each record that compaction
    /// removed upstream after MM2 copied it, in downstream order.
    pub removed: BTreeMap<(String, i32), Vec<(i64, i64)>>,
}

impl Truths {
    /// The truth for upstream offset `u` (the end's truth past it).
    pub fn at(&self, topic: &str, partition: i32, u: i64) -> i64 {
        let t = &self.by_upstream[&(topic.to_string(), partition)];
        t[(u as usize).min(t.len() - 1)]
    }

    /// Data records in `[from, to)` of the replica of `topic`-`partition`.
    pub fn records_between(&self, topic: &str, partition: i32, from: i64, to: i64) -> i64 {
        let d = &self.downstream[&(topic.to_string(), partition)];
        (d.partition_point(|&o| o < to) - d.partition_point(|&o| o < from)) as i64
    }

    /// What a group at upstream offset `upstream` re-reads when it resumes at `from` instead
    /// of `to` (its truth): the data records in between, except the last copies of records at
    /// or after `upstream` that compaction removed upstream since they were copied (the group
    /// never read those: they are new to it, however they left the source).
    pub fn rereads(&self, topic: &str, partition: i32, upstream: i64, from: i64, to: i64) -> i64 {
        let new_to_the_group = self
            .removed
            .get(&(topic.to_string(), partition))
            .into_iter()
            .flatten()
            .filter(|&&(d, u)| (from..to).contains(&d) && u >= upstream)
            .count() as i64;
        self.records_between(topic, partition, from, to) - new_to_the_group
    }
}

/// What one flow's matching showed.
#[derive(Debug, Default)]
pub struct Distances {
    pub rows: usize,
    pub matched: usize,
    pub mm2: i64,
    pub precise: i64,
    pub matched_distance: i64,
}

/// Record matching on one flow: every row at or before the truth, every `record-match` row
/// exactly the truth, every bound holding. Prints the per-partition table and returns the
/// summed distances.
pub async fn check_matching(
    label: &str,
    mirror: &MirrorClient,
    request: &TranslateRequest,
    syncs: Syncs,
    source: &KafkaClient,
    source_offsets: bool,
    truths: &Truths,
) -> (PreciseTranslation, Distances) {
    // Where the offset syncs are read, to check a refusal against them.
    let syncs_read = match &syncs {
        Syncs::Topic(source) => Some((source.client.clone(), source.topic.clone())),
        _ => None,
    };
    let mut precise = PreciseRequest::new(syncs);
    precise.source_offsets = source_offsets.then(|| source.clone());
    precise.match_records = Some(MatchRecords::new(source.clone(), MatchOptions::default()));
    let started = Instant::now();
    let out = Box::pin(mirror.translate_precise_with(request, &precise))
        .await
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let elapsed = started.elapsed();
    let matching = out.matching.as_ref().expect("matching asked");
    println!(
        "{label}: group\ttopic\tpartition\tupstream\tmm2\tprecise\trecord-match\ttruth\trule\tmax_rereads\tinput\tunmatched"
    );
    let mut d = Distances::default();
    for (i, ((o, p), input)) in out.iter().zip(&out.inputs).enumerate() {
        let upstream_topic = o.topic.split_once('.').map_or(o.topic, |(_, t)| t);
        let truth = truths.at(upstream_topic, o.partition, input.upstream_offset);
        let row = matching.rows[i];
        let bound = out.max_rereads[i];
        println!(
            "{label}: {}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            o.group,
            o.topic,
            o.partition,
            input.upstream_offset,
            if p.mm2_offset < 0 {
                "-".to_string()
            } else {
                p.mm2_offset.to_string()
            },
            row.syncs_offset,
            if p.rule == Rule::RecordMatch {
                p.offset.to_string()
            } else {
                "-".to_string()
            },
            truth,
            p.rule.name(),
            bound.map_or("?".to_string(), |b| b.to_string()),
            input.input.name(),
            row.unmatched.map_or("", |w| w.name())
        );
        assert!(
            p.offset <= truth,
            "{label} {} {}-{}: {} ({}) is past the truth {truth}",
            o.group,
            o.topic,
            o.partition,
            p.offset,
            p.rule.name()
        );
        if p.rule == Rule::RecordMatch {
            assert_eq!(
                p.offset, truth,
                "{label} {} {}-{}: record-match is not the truth",
                o.group, o.topic, o.partition
            );
            d.matched += 1;
        }
        if let Some(bound) = bound {
            let rereads = truths.rereads(
                upstream_topic,
                o.partition,
                input.upstream_offset,
                p.offset,
                truth,
            );
            assert!(
                rereads <= bound,
                "{label} {} {}-{}: {rereads} re-reads, beyond the bound {bound}",
                o.group,
                o.topic,
                o.partition,
            );
        }
        d.rows += 1;
        if p.mm2_offset >= 0 {
            // MM2's offset answers its own checkpoint's upstream offset.
            d.mm2 += truths.at(upstream_topic, o.partition, o.upstream_offset) - p.mm2_offset;
        }
        d.precise += truth - row.syncs_offset;
        d.matched_distance += truth - p.offset;
    }
    println!(
        "{label}: {} rows, {} matched exactly; distance to the truth: MM2 {}, --precise {}, --match-records {}; read {} B upstream, {} B downstream in {} ranges, {} ms",
        d.rows,
        d.matched,
        d.mm2,
        d.precise,
        d.matched_distance,
        matching.stats.upstream_bytes,
        matching.stats.downstream_bytes,
        matching.stats.ranges,
        elapsed.as_millis()
    );
    // A partition refused because its records contradict the history: only where the history
    // shows a restart of MM2 that went back, whose first sync may have been replaced before MM2
    // sent it (more than 10 in flight). The CI run of stop 43 saw it on L-1 (443 duplicates).
    if !matching.stats.inconsistent.is_empty() {
        let (client, topic) = syncs_read
            .as_ref()
            .unwrap_or_else(|| panic!("{label}: {:?}", matching.stats.inconsistent));
        let restarted = crate::support::sync_history::restarted(
            &crate::support::sync_history::read(client, topic).await,
        );
        for refused in &matching.stats.inconsistent {
            let (partition, _) = refused.rsplit_once('@').unwrap();
            let (remote, p) = partition.rsplit_once('-').unwrap();
            let upstream = remote.split_once('.').map_or(remote, |(_, t)| t);
            assert!(
                restarted.contains(&(upstream.to_string(), p.parse().unwrap())),
                "{label}: {refused} refused, yet its offset syncs show no restart ({restarted:?})"
            );
            println!(
                "{label}: {refused}: inconsistent, after a restart of MM2 (its rows keep the syncs' offset)"
            );
        }
    }
    (out, d)
}

/// `verify` on offsets set exact, behind and ahead of the truth: the verdicts must be those.
/// `rows` are (group, upstream topic, remote topic, partition, upstream offset, truth) of
/// partitions whose truth is proven, `commit` commits a group's offsets on a topic.
pub async fn check_verify<F, Fut>(
    mirror: &MirrorClient,
    syncs: Syncs,
    source_alias: &str,
    id: &str,
    rows: &[(String, i32, i64, i64)],
    commit: F,
) where
    F: Fn(String, String, Vec<(i32, i64)>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let kinds = [("exact", 0i64), ("behind", -7), ("ahead", 5)];
    let mut expected = BTreeMap::new();
    for (kind, shift) in kinds {
        let group = format!("pvf-{id}-{kind}");
        for (topic, partition, upstream, truth) in rows {
            let remote = format!("{source_alias}.{topic}");
            commit(group.clone(), topic.clone(), vec![(*partition, *upstream)]).await;
            commit(
                group.clone(),
                remote.clone(),
                vec![(*partition, (truth + shift).max(0))],
            )
            .await;
            expected.insert((group.clone(), remote, *partition), (kind, shift.abs()));
        }
    }
    let mut request = TranslateRequest::new(
        source_alias,
        mm2_offsets::select::GroupSelector::patterns([format!("pvf-{id}-.*")]).unwrap(),
    );
    request.timeout = Duration::from_secs(30);
    let source = mirror.kafka().clone();
    let verified = Box::pin(mirror.verify(&request, syncs, &source, MatchOptions::default()))
        .await
        .expect("verify");
    let mut seen = 0;
    for row in &verified {
        println!(
            "verify: {}\t{}\t{}\toffset {:?}\tsource {:?}\t{}\trecords {:?}{}\t{}",
            row.group,
            row.topic,
            row.partition,
            row.offset,
            row.source_offset,
            row.verdict.name(),
            row.records,
            if row.at_least { " (at least)" } else { "" },
            row.reason.as_deref().unwrap_or("")
        );
        let Some(&(kind, records)) =
            expected.get(&(row.group.clone(), row.topic.clone(), row.partition))
        else {
            continue;
        };
        seen += 1;
        let want = match kind {
            "exact" => VerifyVerdict::Exact,
            "behind" => VerifyVerdict::Behind,
            _ => VerifyVerdict::Ahead,
        };
        assert_eq!(row.verdict, want, "verify {row:?}");
        assert_eq!(row.records, Some(records), "verify {row:?}");
    }
    assert_eq!(seen, expected.len(), "every partition set was verified");
}

/// `watch --precise` as a user runs it, until its snapshot is written (at most 60 s); also
/// asks its `/precise/offsets`. Returns the snapshot's path and the precise document.
pub fn watch_snapshot(
    target: &str,
    source_alias: &str,
    syncs_server: &str,
    syncs_topic: &str,
    groups: &str,
    state_dir: &Path,
) -> (PathBuf, serde_json::Value) {
    let mut child: Child = Command::new(BIN)
        .args([
            "watch",
            "--bootstrap-server",
            target,
            "--source",
            source_alias,
        ])
        .args(["--group-regex", groups, "--listen", "127.0.0.1:0"])
        .args(["--precise", "--syncs-bootstrap-server", syncs_server])
        .args(["--syncs-topic", syncs_topic, "--snapshot-interval", "1s"])
        .arg("--state-dir")
        .arg(state_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mm2-offsets watch");
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut all = String::new();
        let mut buf = [0u8; 4096];
        let mut stderr = stderr;
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.push_str(&String::from_utf8_lossy(&buf[..n]));
            let _ = tx.send(all.clone());
        }
    });
    let path = state_dir.join("syncs.snapshot");
    let started = Instant::now();
    let mut log = String::new();
    let address = loop {
        while let Ok(text) = rx.try_recv() {
            log = text;
        }
        if let Some(a) = log
            .split("on http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
        {
            break a.to_string();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60) && child.try_wait().unwrap().is_none(),
            "watch did not start: {log}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    while !path.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no snapshot after 60 s: {log}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let document = http_get(&address, "/precise/offsets");
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let status = child.wait().expect("watch exits");
    assert!(status.success(), "watch on SIGTERM: {status}");
    println!(
        "watch --precise wrote {} after {} ms",
        path.display(),
        started.elapsed().as_millis()
    );
    (path, document)
}

fn http_get(address: &str, path: &str) -> serde_json::Value {
    let mut stream = std::net::TcpStream::connect(address).expect("connect to watch");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// Waits (up to 90 s) until the replica of `topic` holds a copy of each partition's last
/// record (same key and value): the truth must count every record MM2 will sync.
pub async fn wait_replicated(
    up: &KafkaClient,
    topic: &str,
    down: &KafkaClient,
    remote: &str,
    partitions: i32,
) {
    let started = Instant::now();
    for p in 0..partitions {
        let (records, _, _) = crate::support::mm2::read_log(up, topic, p).await;
        let Some(last) = records.last() else { continue };
        loop {
            let (copies, _, _) = crate::support::mm2::read_log(down, remote, p).await;
            if copies
                .iter()
                .rev()
                .any(|c| c.key == last.key && c.value == last.value)
            {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "{remote}-{p}: the last record of {topic} not copied within 90 s"
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
}

/// Waits (up to 90 s) until MM2 checkpointed some group of `request` at each of `ends` (the
/// upstream end of each partition of `remote`'s upstream topic).
pub async fn wait_checkpointed(
    mirror: &MirrorClient,
    request: &TranslateRequest,
    remote: &str,
    ends: &[i64],
) {
    let started = Instant::now();
    loop {
        let t = mirror.translate(request).await.expect("translate");
        let at_end = (0..ends.len()).all(|p| {
            t.iter().any(|o| {
                o.topic == remote && o.partition == p as i32 && o.upstream_offset == ends[p]
            })
        });
        if at_end {
            println!(
                "checkpoints of {remote} at its new end after {} ms",
                started.elapsed().as_millis()
            );
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "no checkpoint of {remote} at {ends:?} within 90 s"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits until at least `min` checkpoints of `request` are in and their number held for 5 s
/// (up to 90 s): MM2 may never checkpoint a partition below a restart's rewind.
pub async fn wait_checkpoints_settled(
    mirror: &MirrorClient,
    request: &TranslateRequest,
    min: usize,
) {
    let started = Instant::now();
    let (mut last, mut since) = (0, Instant::now());
    loop {
        let n = mirror.translate(request).await.expect("translate").len();
        if n != last {
            (last, since) = (n, Instant::now());
        }
        if n >= min && since.elapsed() >= Duration::from_secs(5) {
            println!(
                "{n} checkpoints settled after {} ms",
                started.elapsed().as_millis()
            );
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "{n} checkpoints after 90 s, {min} expected"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// `mm2-offsets` with `args`; its exit code and stdout.
pub fn cli(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(BIN)
        .args(args)
        .output()
        .expect("run mm2-offsets");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
