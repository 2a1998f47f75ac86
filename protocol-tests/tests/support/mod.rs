//! Shared plumbing for the integration tests: where the harness's brokers are, client settings
//! for each listener, and the Java data writer.
//!
//! The brokers are started by `protocol-tests/harness/up.sh` (`.ci/run` does it). A test that
//! cannot find or reach its broker FAILS with a message saying how to start the harness; it
//! never passes by skipping.
#![allow(dead_code)]

pub mod child;
pub mod csv;
pub mod groups;
pub mod mm2;
pub mod mm2_records;
pub mod proxy;
pub mod raw;
pub mod sync_history;
pub mod tls_front;
pub mod watch_process;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use mm2_offsets::config::{
    ClientConfig, PemSource, SaslMechanism, SaslSettings, Secret, SecurityProtocol, TlsSettings,
};

/// The harness's work directory.
pub fn work_dir() -> PathBuf {
    match std::env::var_os("MM2O_WORK_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol-tests/work"),
    }
}

/// The harness scripts (overridable to run the tests against another checkout's brokers).
pub fn harness_dir() -> PathBuf {
    match std::env::var_os("MM2O_HARNESS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol-tests/harness"),
    }
}

/// One broker started by the harness, as described by its `env` file.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub name: String,
    vars: HashMap<String, String>,
}

/// The cluster the harness started under `name` (`k4`, `k39`, `tansu`, ...).
pub fn cluster(name: &str) -> Cluster {
    let path = work_dir().join(name).join("env");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cluster {name} is not running ({}: {e}); start the brokers with protocol-tests/harness/up.sh",
            path.display()
        )
    });
    let vars = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    Cluster {
        name: name.to_string(),
        vars,
    }
}

impl Cluster {
    /// A variable of the env file; panics (failing the test) when absent.
    pub fn var(&self, key: &str) -> &str {
        self.vars
            .get(key)
            .unwrap_or_else(|| panic!("{} env file has no {key}", self.name))
    }

    /// Whether this is a Tansu broker.
    pub fn is_tansu(&self) -> bool {
        self.vars.get("KIND").map(String::as_str) == Some("tansu")
    }

    fn base(&self, listener: &str, protocol: SecurityProtocol) -> ClientConfig {
        let mut config = ClientConfig::plaintext([self.var(listener)]);
        config.security_protocol = protocol;
        config.request_timeout = Duration::from_secs(20);
        config.connection_setup_timeout = Duration::from_secs(10);
        config
    }

    fn trust(&self) -> TlsSettings {
        let mut tls = TlsSettings::default();
        tls.trusted_certificates = Some(PemSource::File(self.var("CA_PEM").into()));
        tls
    }

    pub fn plaintext(&self) -> ClientConfig {
        self.base("PLAINTEXT", SecurityProtocol::Plaintext)
    }

    pub fn ssl(&self) -> ClientConfig {
        let mut config = self.base("SSL", SecurityProtocol::Ssl);
        config.tls = self.trust();
        config
    }

    pub fn mtls(&self) -> ClientConfig {
        let mut config = self.base("MTLS", SecurityProtocol::Ssl);
        config.tls = self.trust();
        config.tls.client_certificate_chain =
            Some(PemSource::File(self.var("CLIENT_CERT_PEM").into()));
        config.tls.client_key = Some(PemSource::File(self.var("CLIENT_KEY_PEM").into()));
        config
    }

    pub fn sasl_ssl(&self, mechanism: SaslMechanism) -> ClientConfig {
        let (user, password) = match mechanism {
            SaslMechanism::Plain => (self.var("PLAIN_USER"), self.var("PLAIN_PASSWORD")),
            _ => (self.var("SCRAM_USER"), self.var("SCRAM_PASSWORD")),
        };
        let mut config = self.base("SASL_SSL", SecurityProtocol::SaslSsl);
        config.tls = self.trust();
        config.sasl = Some(SaslSettings::new(mechanism, user, Secret::new(password)));
        config
    }

    pub fn sasl_plaintext(&self, mechanism: SaslMechanism) -> ClientConfig {
        let mut config = self.sasl_ssl(mechanism);
        config.security_protocol = SecurityProtocol::SaslPlaintext;
        config.tls = TlsSettings::default();
        config.bootstrap_servers = vec![self.var("SASL_PLAINTEXT").to_string()];
        config
    }
}

/// A topic name unique to this test run, so reruns against the same brokers never collide.
pub fn unique_topic(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{prefix}-{}-{nanos}", std::process::id())
}

/// Runs the harness's Java data writer (`protocol-tests/java/DataWriter.java`, a real Java
/// producer and consumer) against `cluster` and returns what it printed on stdout.
fn run_data_writer(cluster: &Cluster, command: &str, args: &[&str]) -> String {
    let script = harness_dir().join("datawriter.sh");
    let output = Command::new("bash")
        .arg(&script)
        .arg(command)
        // The harness picks the right client jars per cluster (Tansu needs an older client).
        .arg("--cluster")
        .arg(&cluster.name)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        output.status.success(),
        "data writer {command} {args:?} failed on {}: {}",
        cluster.name,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("data writer prints UTF-8 JSON")
}

/// Writes data with the Java producer and returns its JSON summary.
pub fn data_writer(cluster: &Cluster, command: &str, args: &[&str]) -> serde_json::Value {
    let out = run_data_writer(cluster, command, args);
    serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("data writer printed no JSON ({e}): {out}"))
}

/// `count` records over `partitions` partitions of a new `topic`, by the Java producer: log end
/// `count / partitions` on each.
pub fn write_records(cluster: &Cluster, topic: &str, partitions: u32, count: u32) {
    data_writer(
        cluster,
        "records",
        &[
            "--topic",
            topic,
            "--partitions",
            &partitions.to_string(),
            "--count",
            &count.to_string(),
            "--nulls",
            "0",
        ],
    );
}

/// One record as the Java consumer saw it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeenRecord {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
}

fn unhex(value: &serde_json::Value) -> Option<Vec<u8>> {
    let text = value.as_str()?;
    Some(
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex from the data writer"))
            .collect(),
    )
}

/// Reads a whole topic with the Java consumer: the independent oracle for what we decode.
pub fn java_consume(cluster: &Cluster, topic: &str, isolation: &str) -> Vec<SeenRecord> {
    java_consume_args(cluster, &["--topic", topic, "--isolation", isolation])
}

/// [`java_consume`] for a topic the caller knows holds `expect` records: the Java consumer
/// reads on until it has them, asking the end offsets again (Tansu can report an end offset
/// short of records it has just acknowledged).
pub fn java_consume_expecting(
    cluster: &Cluster,
    topic: &str,
    isolation: &str,
    expect: usize,
) -> Vec<SeenRecord> {
    let expect = expect.to_string();
    java_consume_args(
        cluster,
        &[
            "--topic",
            topic,
            "--isolation",
            isolation,
            "--expect",
            &expect,
        ],
    )
}

fn java_consume_args(cluster: &Cluster, args: &[&str]) -> Vec<SeenRecord> {
    let out = run_data_writer(cluster, "consume", args);
    let mut records: Vec<SeenRecord> = out
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("consume printed a bad line ({e}): {line}"));
            SeenRecord {
                partition: v["partition"].as_i64().expect("partition") as i32,
                offset: v["offset"].as_i64().expect("offset"),
                key: unhex(&v["key_hex"]),
                value: unhex(&v["value_hex"]),
            }
        })
        .collect();
    records.sort();
    records
}

/// Writes `lines` ("PARTITION KEYHEX|- VALUEHEX|-") with the Java producer.
pub fn write_raw(
    cluster: &Cluster,
    topic: &str,
    partitions: u32,
    compression: &str,
    lines: &[String],
    extra: &[&str],
) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("records.txt");
    std::fs::write(&file, lines.join("\n") + "\n").expect("write records file");
    let partitions = partitions.to_string();
    let mut args = vec![
        "--topic",
        topic,
        "--partitions",
        &partitions,
        "--compression",
        compression,
        "--file",
        file.to_str().expect("utf-8 path"),
    ];
    args.extend_from_slice(extra);
    data_writer(cluster, "raw", &args)
}

/// Hex of bytes, or "-" for null, as the data writer's raw format wants.
pub fn hex_or_dash(bytes: Option<&[u8]>) -> String {
    match bytes {
        None => "-".to_string(),
        Some(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
    }
}

/// One MirrorMaker 2 checkpoint record as a `write_raw` line (partition 0): group, topic and
/// partition in the key, `offset` downstream (and `offset + 1000` upstream) and `meta` in the
/// value.
pub fn checkpoint_line(
    group: &str,
    topic: &str,
    partition: i32,
    offset: i64,
    meta: &str,
) -> String {
    use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
    let key = checkpoint::encode_key(&CheckpointKey {
        group: group.as_bytes(),
        topic: topic.as_bytes(),
        partition,
    })
    .unwrap();
    let value = checkpoint::encode_value(&CheckpointValue {
        version: 0,
        upstream_offset: offset + 1000,
        downstream_offset: offset,
        metadata: meta.as_bytes(),
    })
    .unwrap();
    format!(
        "0 {} {}",
        hex_or_dash(Some(&key)),
        hex_or_dash(Some(&value))
    )
}

/// Waits until `client`'s cluster can coordinate groups: FindCoordinator names a coordinator and
/// that coordinator answers OffsetFetch without COORDINATOR_LOAD_IN_PROGRESS (14),
/// COORDINATOR_NOT_AVAILABLE (15) or NOT_COORDINATOR (16). On a broker whose
/// `__consumer_offsets` is created by the test's first group call, the coordinator answers
/// those codes for a moment; a test's setup asks here first instead of sleeping. Panics after
/// `within`, naming the last answer.
pub async fn wait_for_group_coordinator(
    client: &mm2_offsets::client::KafkaClient,
    within: Duration,
) {
    use mm2_offsets::client::Deadline;
    let probe = format!("mm2o-coordinator-probe-{}", std::process::id());
    let give_up = std::time::Instant::now() + within;
    let mut last = String::from("no answer yet");
    let mut pause = Duration::from_millis(50);
    while std::time::Instant::now() < give_up {
        let deadline = Deadline::after(Duration::from_secs(10));
        match client
            .find_group_coordinators(std::slice::from_ref(&probe), &deadline)
            .await
        {
            Ok(mut found) => match found.remove(&probe) {
                Some(Ok(coordinator)) => {
                    match client
                        .fetch_group_offsets(&coordinator, std::slice::from_ref(&probe), &deadline)
                        .await
                    {
                        Ok(mut fetched) => match fetched.remove(&probe) {
                            Some(Ok(_)) => return,
                            Some(Err(e)) => last = e.to_string(),
                            None => last = "OffsetFetch did not answer for the probe".into(),
                        },
                        Err(e) => last = e.to_string(),
                    }
                }
                Some(Err(e)) => last = e.to_string(),
                None => last = "FindCoordinator did not answer for the probe".into(),
            },
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(1));
    }
    panic!("the group coordinator was not ready within {within:?}: {last}");
}

/// One HTTP/1.1 GET (the watcher's endpoints): status and body. Waits up to 20 s for the answer.
pub fn http_get(address: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream =
        std::net::TcpStream::connect(address).unwrap_or_else(|e| panic!("connect {address}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP head in {response:?}"));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line in {head:?}"));
    (status, body.to_string())
}
