//! The MirrorMaker 2 flows of `protocol-tests/harness/mm2-flows.sh` and the Java reference
//! (`protocol-tests/java-reference`, Kafka's own `RemoteClusterUtils`) that the parity tests run
//! against them.
//!
//! A flow that is not up, or whose cluster does not answer, FAILS the test with a message saying
//! to run `protocol-tests/harness/mm2-flows.sh up`; nothing is ever skipped.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use mm2_offsets::config::ClientConfig;
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::translate::MirrorClient;

use super::work_dir;

const HOW: &str = "start the MirrorMaker 2 flows with protocol-tests/harness/mm2-flows.sh up";

/// Group -> (topic, partition) -> (offset, metadata): the shape both sides are compared in.
pub type GroupOffsets = BTreeMap<String, BTreeMap<(String, i32), (i64, String)>>;

/// `protocol-tests/work/mm2-flows.env`.
#[derive(Clone, Debug)]
pub struct Flows {
    vars: HashMap<String, String>,
}

/// One MirrorMaker 2 flow: where its checkpoints are and the policy settings it ran with.
#[derive(Clone, Debug)]
pub struct Flow {
    /// `a`, `b`, `c` or `d` (see `protocol-tests/harness/config/mm2-flows.properties`).
    pub name: String,
    /// Bootstrap address of the cluster holding the flow's checkpoints.
    pub target: String,
    /// The source cluster alias.
    pub source: String,
    /// The `replication.policy.*` properties MirrorMaker 2 ran with.
    pub props: Vec<(String, String)>,
    /// Groups MirrorMaker 2 was given for this flow.
    pub groups: Vec<String>,
    /// Aliases to ask `replicationHops` about, one of them unknown.
    pub aliases: Vec<String>,
    /// Every group committed on any cluster of the flows.
    pub all_groups: Vec<String>,
    /// The Java reference jar.
    pub reference_jar: PathBuf,
}

/// The flows `mm2-flows.sh up` wrote down; panics (failing the test) when they are not up.
pub fn flows() -> Flows {
    let path = work_dir().join("mm2-flows.env");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "the MirrorMaker 2 flows are not up ({}: {e}); {HOW}",
            path.display()
        )
    });
    let vars = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    Flows { vars }
}

fn read_lines(path: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {path} ({e}); {HOW}"))
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

impl Flows {
    /// A variable of the env file; panics when absent.
    pub fn var(&self, key: &str) -> &str {
        self.vars
            .get(key)
            .unwrap_or_else(|| panic!("mm2-flows.env has no {key}; {HOW}"))
    }

    /// Flow `name` (`a`..`d`).
    pub fn flow(&self, name: &str) -> Flow {
        let key = |k: &str| format!("FLOW_{}_{k}", name.to_uppercase());
        let props = self
            .var(&key("PROPS"))
            .split(',')
            .filter(|kv| !kv.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once('=').expect("PROPS holds K=V pairs");
                (k.to_string(), v.to_string())
            })
            .collect();
        Flow {
            name: name.to_string(),
            target: self.var(&key("TARGET")).to_string(),
            source: self.var(&key("SOURCE")).to_string(),
            props,
            groups: read_lines(self.var(&key("GROUPS"))),
            aliases: self
                .var(&key("ALIASES"))
                .split(',')
                .map(str::to_string)
                .collect(),
            all_groups: read_lines(self.var("GROUPS_ALL")),
            reference_jar: PathBuf::from(self.var("REFERENCE_JAR")),
        }
    }
}

impl Flow {
    /// The replication policy the flow ran with, built from its properties like Java does.
    pub fn policy(&self) -> ReplicationPolicy {
        ReplicationPolicy::from_lookup(|k| {
            self.props
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        })
        .expect("the flow's policy properties are valid")
    }

    /// Client settings for the flow's target cluster.
    pub fn client_config(&self) -> ClientConfig {
        let mut config = ClientConfig::plaintext([self.target.clone()]);
        config.request_timeout = Duration::from_secs(20);
        config.connection_setup_timeout = Duration::from_secs(10);
        config
    }

    /// Our `MirrorClient` on the flow's target, with the flow's policy. Fails the test with the
    /// way out when the cluster does not answer.
    pub async fn client(&self) -> MirrorClient {
        let client = MirrorClient::connect(self.client_config(), self.policy())
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "flow {} target {} unreachable ({e}); {HOW}",
                    self.name, self.target
                )
            });
        let deadline = mm2_offsets::client::Deadline::after(Duration::from_secs(15));
        client.list_topics(&deadline).await.unwrap_or_else(|e| {
            panic!(
                "flow {} target {} does not answer ({e}); {HOW}",
                self.name, self.target
            )
        });
        client
    }

    /// Runs the Java reference (`java -jar mm2-reference.jar COMMAND`) against the flow's target,
    /// with the flow's policy properties, and returns its JSON.
    pub fn java(&self, command: &str, args: &[&str]) -> serde_json::Value {
        assert!(
            self.reference_jar.is_file(),
            "no Java reference at {}; {HOW}",
            self.reference_jar.display()
        );
        let mut cmd = Command::new("java");
        cmd.args([
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            "-jar",
        ])
        .arg(&self.reference_jar)
        .arg(command)
        .args(["--bootstrap-server", &self.target]);
        for (k, v) in &self.props {
            cmd.arg("--property").arg(format!("{k}={v}"));
        }
        let output = cmd.args(args).output().expect("run java");
        assert!(
            output.status.success(),
            "Java reference {command} {args:?} failed on flow {} ({}); is the flow up? {HOW}",
            self.name,
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "Java reference printed no JSON ({e}): {}",
                String::from_utf8_lossy(&output.stdout)
            )
        })
    }

    /// Java's per-group `translateOffsets` for each of `groups`, in one JVM.
    pub fn java_translate(&self, groups: &[String]) -> GroupOffsets {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("groups.txt");
        std::fs::write(&file, groups.join("\n") + "\n").expect("write groups file");
        let doc = self.java(
            "translate",
            &[
                "--source",
                &self.source,
                "--groups-file",
                file.to_str().expect("utf-8 path"),
                "--timeout-ms",
                "30000",
            ],
        );
        java_groups(&doc)
    }

    /// Java 4.3's `translateOffsets(Pattern)`.
    pub fn java_translate_pattern(&self, pattern: &str) -> GroupOffsets {
        let doc = self.java(
            "translate-pattern",
            &[
                "--source",
                &self.source,
                "--pattern",
                pattern,
                "--timeout-ms",
                "30000",
            ],
        );
        java_groups(&doc)
    }

    /// Java's topology answers (`topology --alias ...` for the flow's aliases).
    pub fn java_topology(&self) -> serde_json::Value {
        let mut args = Vec::new();
        for a in &self.aliases {
            args.push("--alias");
            args.push(a.as_str());
        }
        self.java("topology", &args)
    }
}

/// The `groups` object of the reference's translate output, in the compared shape.
pub fn java_groups(doc: &serde_json::Value) -> GroupOffsets {
    let groups = doc["groups"]
        .as_object()
        .unwrap_or_else(|| panic!("no groups in {doc}"));
    groups
        .iter()
        .map(|(group, topics)| {
            let mut offsets = BTreeMap::new();
            for (topic, partitions) in topics.as_object().expect("topics object") {
                for (p, om) in partitions.as_object().expect("partitions object") {
                    offsets.insert(
                        (topic.clone(), p.parse::<i32>().expect("partition number")),
                        (
                            om["offset"].as_i64().expect("offset"),
                            om["metadata"].as_str().expect("metadata").to_string(),
                        ),
                    );
                }
            }
            (group.clone(), offsets)
        })
        .collect()
}

/// A JSON array of strings as a sorted list.
pub fn strings(value: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|s| s.as_str().expect("string").to_string())
        .collect();
    v.sort();
    v
}

/// One record of a partition, as the precise suites align upstream and downstream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub timestamp: i64,
}

/// Every data record of `topic`-`partition` (read_uncommitted: aborted records included, control
/// batches left out), the partition's end, and whether its offsets have gaps (a control batch,
/// or an offset skipped).
pub async fn read_log(
    client: &mm2_offsets::client::KafkaClient,
    topic: &str,
    partition: i32,
) -> (Vec<LogRecord>, i64, bool) {
    use mm2_offsets::client::{Deadline, IsolationLevel, OffsetSpec, ReadOptions};
    use mm2_offsets::records::{Batches, Scratch};
    let deadline = Deadline::after(Duration::from_secs(30));
    let info = client
        .describe_topic(topic, &deadline)
        .await
        .unwrap_or_else(|e| panic!("describing {topic}: {e}"));
    let ends = client
        .list_offsets(
            &info,
            &[partition],
            OffsetSpec::Latest,
            IsolationLevel::ReadUncommitted,
            &deadline,
        )
        .await
        .unwrap_or_else(|e| panic!("end offset of {topic}-{partition}: {e}"));
    let end = ends[&partition];
    let mut stream = client.read_range(info, partition, 0, end, ReadOptions::default(), deadline);
    let mut scratch = Scratch::new();
    let mut out = Vec::new();
    let mut gaps = false;
    let mut next = 0;
    while let Some(chunk) = stream.next_chunk().await {
        let chunk = chunk.unwrap_or_else(|e| panic!("reading {topic}-{partition}: {e}"));
        for batch in Batches::new(&chunk.records) {
            let batch = batch.unwrap_or_else(|e| panic!("{topic}-{partition}: {e}"));
            if batch.is_control() {
                gaps = true;
                continue;
            }
            for record in batch.records(&mut scratch).unwrap() {
                let record = record.unwrap();
                gaps |= record.offset != next;
                next = record.offset + 1;
                out.push(LogRecord {
                    offset: record.offset,
                    key: record.key.map(<[u8]>::to_vec),
                    value: record.value.map(<[u8]>::to_vec),
                    timestamp: record.timestamp,
                });
            }
        }
    }
    (out, end, gaps || next != end)
}
