//! Group types on real brokers (issue 31, first slice): a share group (KIP-932) with a real
//! share consumer and a Streams group (KIP-1071) left by a real Kafka Streams application on
//! Kafka 4.4, beside a consumer group, translated with
//! `--from-source-offsets` and applied to a Kafka 3.9 target; then a Kafka 3.9 source, where
//! every group is a consumer group, as before.
//!
//! The flow is laid by hand as MirrorMaker 2 would have left it (MM2 checkpoints no share
//! group, so the share group has no checkpoint at all): `<u>.orders` (100 records) on the
//! source, its replica `<alias>.<u>.orders` on the target (10 older records, then the 100), the
//! offset syncs `(0,10) (50,60) (99,109)` on the source and one checkpoint of the consumer group
//! (50 -> 60) on the target. The share group's start offset is what Kafka's own
//! `kafka-share-groups.sh --describe --offsets` says (the truth), after a real share consumer
//! read and acknowledged 5 records.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use mm2_offsets::client::KafkaClient;

use crate::support::child::{Run, run_bounded};
use crate::support::mm2_records::{checkpoint_record, sync_record};
use crate::support::raw::Raw;
use crate::support::{Cluster, cluster, harness_dir, unique_topic};

const BIN: &str = env!("CARGO_BIN_EXE_mm2-offsets");

fn run(args: &[String]) -> Run {
    let run = run_bounded(std::path::Path::new(BIN), args, Duration::from_secs(60));
    eprintln!(
        "$ mm2-offsets {}\nexit {:?}\n{}\n{}",
        args.join(" "),
        run.code,
        String::from_utf8_lossy(&run.stdout),
        run.stderr
    );
    run
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The Kafka 4.4 jars (the harness's Maven cache).
fn kafka4_lib() -> PathBuf {
    let out = Command::new("bash")
        .arg(harness_dir().join("kafka-jars.sh"))
        .args(["4.4.0", "kafka4"])
        .output()
        .expect("run kafka-jars.sh");
    assert!(out.status.success(), "kafka-jars.sh: {out:?}");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// Runs a Kafka 4.4 tool class: its stdout, after asserting it exited 0.
fn kafka_tool(lib: &std::path::Path, class: &str, args: &[&str]) -> String {
    let out = Command::new("java")
        .args(["-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"])
        .arg(format!(
            "-Dlog4j2.configurationFile={}",
            harness_dir()
                .join("config/log4j2-tool.properties")
                .display()
        ))
        .arg("-cp")
        .arg(format!("{}/*", lib.display()))
        .arg(class)
        .args(args)
        .output()
        .expect("run java");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{class} {args:?}: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The kafka-streams 4.4.0 jar (not in the harness's lib dir: fetched into the local Maven
/// repository once, as the harness resolves its own jars).
pub(crate) fn kafka_streams_jar() -> PathBuf {
    let home = std::env::var_os("HOME").expect("HOME");
    let jar = PathBuf::from(home)
        .join(".m2/repository/org/apache/kafka/kafka-streams/4.4.0/kafka-streams-4.4.0.jar");
    if !jar.exists() {
        let status = Command::new("mvn")
            .args([
                "-q",
                "-B",
                "dependency:get",
                "-Dartifact=org.apache.kafka:kafka-streams:4.4.0",
                "-Dtransitive=false",
            ])
            .status()
            .expect("run mvn");
        assert!(
            status.success() && jar.exists(),
            "mvn dependency:get kafka-streams"
        );
    }
    jar
}

/// Compiles `protocol-tests/java/StreamsOnce.java` into `classes` against the Kafka client jars
/// in `lib` and the kafka-streams jar: the classpath to run it with.
pub(crate) fn compile_streams_once(lib: &std::path::Path, classes: &std::path::Path) -> String {
    let jar = kafka_streams_jar();
    let classpath = format!(
        "{}/*:{}:{}",
        lib.display(),
        jar.display(),
        classes.display()
    );
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("protocol-tests/java/StreamsOnce.java");
    let javac = Command::new("javac")
        .args(["--release", "17", "-cp", &classpath, "-d"])
        .arg(classes)
        .arg(&source)
        .output()
        .expect("run javac");
    assert!(javac.status.success(), "javac: {javac:?}");
    classpath
}

/// Runs `protocol-tests/java/StreamsOnce.java` (compiled into `classes`): a Kafka Streams
/// application on the Streams protocol copies `count` records of `input` to `output`, then
/// closes, leaving an empty Streams group `app_id` with committed offsets.
fn run_streams_once(
    lib: &std::path::Path,
    classes: &std::path::Path,
    bootstrap: &str,
    app_id: &str,
    (input, output): (&str, &str),
    count: usize,
) {
    let classpath = compile_streams_once(lib, classes);
    let state = classes.join("state");
    let out = Command::new("java")
        .args(["-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"])
        .arg(format!(
            "-Dlog4j2.configurationFile={}",
            harness_dir()
                .join("config/log4j2-tool.properties")
                .display()
        ))
        .args([
            "-cp",
            &classpath,
            "StreamsOnce",
            bootstrap,
            app_id,
            input,
            output,
        ])
        .arg(count.to_string())
        .arg(&state)
        .output()
        .expect("run java");
    assert!(
        out.status.success(),
        "StreamsOnce: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The share group's start offset of `topic`-0, as Kafka's `kafka-share-groups.sh --describe
/// --offsets` prints it.
fn java_share_start(lib: &std::path::Path, bootstrap: &str, group: &str, topic: &str) -> i64 {
    let text = kafka_tool(
        lib,
        "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
        &[
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--group",
            group,
            "--offsets",
        ],
    );
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cols| cols.len() >= 4 && cols[0] == group && cols[1] == topic && cols[2] == "0")
        .and_then(|cols| cols[3].parse().ok())
        .unwrap_or_else(|| panic!("no start offset of {group} on {topic}-0 in:\n{text}"))
}

async fn client(cluster: &Cluster) -> KafkaClient {
    let client = KafkaClient::connect(cluster.plaintext()).await.unwrap();
    crate::support::wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
    client
}

/// How ListGroups on `group`'s coordinator lists it: (protocol type, group type, None before
/// v5), or None when the coordinator does not list it.
async fn listed(client: &KafkaClient, group: &str) -> Option<(String, Option<String>)> {
    let deadline = mm2_offsets::client::Deadline::after(Duration::from_secs(20));
    let c = crate::support::groups::coordinator(client, group).await;
    let groups = client
        .list_groups(&c, &[], &deadline)
        .await
        .unwrap()
        .unwrap();
    groups
        .into_iter()
        .find(|g| g.group_id == group)
        .map(|g| (g.protocol_type, g.group_type))
}

/// The flow of the module's header from `source` to `target`: returns (topic, replica, syncs
/// topic).
async fn lay_flow(
    source: &Raw,
    target: &Raw,
    unique: &str,
    alias: &str,
    checkpointed: &str,
) -> (String, String, String) {
    let topic = format!("{unique}.orders");
    let replica = format!("{alias}.{topic}");
    source.create_topic(&topic, 1).await;
    source.fill(&topic, 1, 100).await;
    target.create_topic(&replica, 1).await;
    target.fill(&replica, 1, 110).await;
    let syncs = format!("{unique}.syncs");
    source.create_topic(&syncs, 1).await;
    source
        .produce(
            &syncs,
            0,
            &[
                sync_record(&topic, 0, 10),
                sync_record(&topic, 50, 60),
                sync_record(&topic, 99, 109),
            ],
        )
        .await;
    let checkpoints = format!("{alias}.checkpoints.internal");
    target.create_topic(&checkpoints, 1).await;
    target
        .produce(
            &checkpoints,
            0,
            &[checkpoint_record(checkpointed, &replica, (50, 60), b"")],
        )
        .await;
    (topic, replica, syncs)
}

fn json(run: &Run) -> serde_json::Value {
    serde_json::from_slice(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&run.stdout)))
}

/// The offsets rows of `doc` by group: (group_type, upstream_offset, offset, input).
fn rows(doc: &serde_json::Value) -> BTreeMap<String, (String, i64, i64, String)> {
    doc["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["group"].as_str().unwrap().to_string(),
                (
                    o["group_type"].as_str().unwrap().to_string(),
                    o["upstream_offset"].as_i64().unwrap(),
                    o["offset"].as_i64().unwrap(),
                    o["input"].as_str().unwrap_or("").to_string(),
                ),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_group_on_kafka_4_is_typed_translated_and_never_written_as_a_consumer_group() {
    let started = Instant::now();
    let (k4, k39) = (cluster("k4"), cluster("k39"));
    let (raw4, raw39) = (Raw::connect(&k4).await, Raw::connect(&k39).await);
    let (client4, client39) = (client(&k4).await, client(&k39).await);
    let unique = unique_topic("gtype").replace('-', "");
    let alias = format!("{unique}p");
    let consumer = format!("{unique}-consumer");
    let share = format!("{unique}-share");
    let (topic, replica, syncs) = lay_flow(&raw4, &raw39, &unique, &alias, &consumer).await;
    let (k4_server, k39_server) = (
        k4.var("PLAINTEXT").to_string(),
        k39.var("PLAINTEXT").to_string(),
    );
    // The consumer group is at 70 on the source (checkpointed at 50).
    raw4.commit(&consumer, &topic, 0, 70).await;
    // A real share consumer reads 5 records from the start and acknowledges them.
    let lib = kafka4_lib();
    kafka_tool(
        &lib,
        "org.apache.kafka.tools.ConfigCommand",
        &[
            "--bootstrap-server",
            &k4_server,
            "--alter",
            "--entity-type",
            "groups",
            "--entity-name",
            &share,
            "--add-config",
            "share.auto.offset.reset=earliest",
        ],
    );
    let consumed = kafka_tool(
        &lib,
        "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
        &[
            "--bootstrap-server",
            &k4_server,
            "--topic",
            &topic,
            "--group",
            &share,
            "--max-messages",
            "5",
            "--timeout-ms",
            "30000",
        ],
    );
    assert_eq!(consumed.lines().count(), 5, "{consumed}");
    let start = java_share_start(&lib, &k4_server, &share, &topic);
    assert!((1..=100).contains(&start), "share start offset {start}");
    let listed_share = listed(&client4, &share).await;
    assert_eq!(
        listed_share.as_ref().and_then(|l| l.1.as_deref()),
        Some("share"),
        "{listed_share:?}"
    );
    // A real Kafka Streams application (group.protocol=streams) reads all 100 records and
    // closes: an empty Streams group with committed offsets (OffsetFetch answers for it).
    let streams = format!("{unique}-streams");
    let streams_out = format!("{unique}.streams-out");
    raw4.create_topic(&streams_out, 1).await;
    let classes = tempfile::tempdir().unwrap();
    run_streams_once(
        &lib,
        classes.path(),
        &k4_server,
        &streams,
        (&topic, &streams_out),
        100,
    );
    let listed_streams = listed(&client4, &streams).await;
    assert_eq!(
        listed_streams.as_ref().and_then(|l| l.1.as_deref()),
        Some("streams"),
        "{listed_streams:?}"
    );
    let streams_committed = raw4.committed(&streams).await;
    assert_eq!(
        streams_committed.get(&(topic.clone(), 0)),
        Some(&100),
        "{streams_committed:?}"
    );
    // StreamsGroupDescribe (our own encoder and decoder) on the real broker: the closed
    // application left an empty group whose topology reads the input topic; a consumer
    // group's id is no Streams group.
    let deadline = mm2_offsets::client::Deadline::after(Duration::from_secs(30));
    let described = client4
        .describe_streams_groups(
            &[streams.clone(), consumer.clone()],
            &Default::default(),
            &deadline,
        )
        .await;
    let g = described[&streams]
        .as_ref()
        .unwrap()
        .as_ref()
        .expect("a Streams group");
    assert!(g.group_state.eq_ignore_ascii_case("empty"), "{g:?}");
    assert!(g.members.is_empty(), "{g:?}");
    let reads: Vec<&String> = g
        .topology
        .iter()
        .flat_map(|t| &t.subtopologies)
        .flat_map(|s| &s.source_topics)
        .collect();
    assert_eq!(reads, vec![&topic], "{g:?}");
    assert!(
        matches!(described[&consumer], Ok(None)),
        "{:?}",
        described[&consumer]
    );
    eprintln!(
        "StreamsGroupDescribe: state {}, {} member(s), topology epoch {:?}, reads {reads:?}",
        g.group_state,
        g.members.len(),
        g.topology.as_ref().map(|t| t.epoch)
    );
    eprintln!("setup {:?}", started.elapsed());

    let translate = |output: &str| -> Vec<String> {
        strings(&[
            "translate",
            "--bootstrap-server",
            &k39_server,
            "--source",
            &alias,
            "--group",
            &consumer,
            "--group",
            &share,
            "--group",
            &streams,
            "--precise",
            "--syncs-bootstrap-server",
            &k4_server,
            "--syncs-topic",
            &syncs,
            "--from-source-offsets",
            "--source-bootstrap-server",
            &k4_server,
            "--no-progress",
            "-o",
            output,
        ])
    };
    // JSON: every row typed; the share group's start offset is read (DescribeShareGroupOffsets)
    // and translated from the source alone (MM2 never checkpointed it).
    let out = run(&translate("json"));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let doc = json(&out);
    let by_group = rows(&doc);
    assert_eq!(
        by_group[&consumer],
        ("consumer".to_string(), 70, 61, "source-offset".to_string()),
        "{doc}"
    );
    let (t, upstream, offset, input) = &by_group[&share];
    assert_eq!(
        (t.as_str(), *upstream, input.as_str()),
        ("share", start, "source-only"),
        "{doc}"
    );
    // Below the sync (50, 60), above (0, 10): MM2's rule gives 11 for any start in 1..=50.
    let want = if start <= 50 { 11 } else { 61 };
    assert_eq!(*offset, want, "{doc}");
    for o in doc["offsets"].as_array().unwrap() {
        assert_eq!(o["topic"], replica.as_str());
    }
    // The Streams group's committed 100: past the sync (99, 109), so 110 (the replica's end).
    assert_eq!(
        by_group[&streams],
        ("streams".to_string(), 100, 110, "source-only".to_string()),
        "{doc}"
    );
    // Found on the source: not a missing (mistyped) group, though MM2 never checkpointed it.
    assert_eq!(doc["missing_groups"], serde_json::json!([]), "{doc}");
    assert!(!out.stderr.contains("no checkpoints"), "{}", out.stderr);
    // CSV: the type is the last column; the table has a TYPE column.
    let out = run(&translate("csv"));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let csv = crate::support::csv::parse(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(csv[0].last().map(String::as_str), Some("group_type"));
    let typed: BTreeMap<&str, &str> = csv[1..]
        .iter()
        .map(|r| (r[1].as_str(), r.last().unwrap().as_str()))
        .collect();
    assert_eq!(typed[consumer.as_str()], "consumer");
    assert_eq!(typed[share.as_str()], "share");
    assert_eq!(typed[streams.as_str()], "streams");
    let out = run(&translate("table"));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table.starts_with("GROUP") && table.contains("TYPE"),
        "{table}"
    );
    let share_line = table.lines().find(|l| l.contains(&share)).unwrap();
    assert!(share_line.contains(" share "), "{table}");

    // apply --execute on the Kafka 3.9 target: the share group is refused with its own
    // verdict and words, the consumer group is written and read back.
    let mut apply = translate("json");
    apply[0] = "apply".to_string();
    apply.push("--execute".to_string());
    let out = run(&apply);
    assert_eq!(out.code, Some(3), "refusals exit 3: {}", out.stderr);
    let doc = json(&out);
    let groups = doc["plan"]["groups"]
        .as_array()
        .or_else(|| doc["groups"].as_array())
        .unwrap_or_else(|| panic!("no groups in {doc}"));
    let plan_of = |g: &str| groups.iter().find(|x| x["group"] == g).unwrap().clone();
    let refused = plan_of(&share);
    assert_eq!(refused["status"], "refused", "{refused}");
    let reason = refused["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with(
            "source-not-consumer-group: on the source this is a share group (KIP-932)"
        ),
        "{refused}"
    );
    assert!(
        reason.contains("kafka-share-groups.sh --reset-offsets"),
        "{reason}"
    );
    for p in refused["partitions"].as_array().unwrap() {
        assert_eq!(p["verdict"], "source-not-consumer-group", "{refused}");
    }
    // The Streams group is written (a fresh id on the target: the commit makes an empty
    // classic group of it, which a Streams application converts, or a classic-protocol one
    // uses as is), with its type in the plan.
    let written = plan_of(&streams);
    assert_eq!(written["status"], "ready", "{written}");
    assert_eq!(written["group_type"], "streams", "{written}");
    assert_eq!(plan_of(&consumer)["status"], "ready", "{doc}");
    assert_eq!(plan_of(&consumer)["group_type"], "consumer", "{doc}");
    // Read back with a raw OffsetFetch: the consumer group holds 61, the Streams group its
    // translated 110, the share group id is not on the target at all (no classic group was
    // made of it).
    let held = raw39.committed(&consumer).await;
    assert_eq!(held.get(&(replica.clone(), 0)), Some(&61), "{held:?}");
    let held = raw39.committed(&streams).await;
    assert_eq!(held.get(&(replica.clone(), 0)), Some(&110), "{held:?}");
    assert!(raw39.committed(&share).await.is_empty(), "{share}");
    let on_target = listed(&client39, &share).await;
    assert_eq!(on_target, None, "{share}'s id on the target");
    assert!(
        out.stderr.contains("source-not-consumer-group") || {
            let text = String::from_utf8_lossy(&out.stdout);
            text.contains("source-not-consumer-group")
        }
    );
    eprintln!("k4 source, k39 target: {:?}", started.elapsed());

    // The same Streams group onto a Kafka 4.2.0 target (k42): a fresh id there, so the commit
    // would make a classic group for the application to convert, the case KAFKA-20254 breaks
    // on 4.2.0 (seen on a real one: NOTES.md). Refused, naming the broker, unless
    // --streams-on-kafka-4-2 says every broker runs 4.2.1 or later; then written.
    let k42 = cluster("k42");
    let raw42 = Raw::connect(&k42).await;
    raw42.create_topic(&replica, 1).await;
    raw42.fill(&replica, 1, 110).await;
    let checkpoints = format!("{alias}.checkpoints.internal");
    raw42.create_topic(&checkpoints, 1).await;
    raw42
        .produce(
            &checkpoints,
            0,
            &[checkpoint_record(&consumer, &replica, (50, 60), b"")],
        )
        .await;
    let k42_server = k42.var("PLAINTEXT").to_string();
    // translate's flags, as apply onto k42, for the Streams group alone.
    let onto_k42 = |extra: &[&str]| -> Vec<String> {
        let base = translate("json");
        let mut args = vec!["apply".to_string()];
        let mut rest = base[1..].iter();
        while let Some(a) = rest.next() {
            match a.as_str() {
                "--bootstrap-server" => {
                    rest.next();
                    args.extend([a.clone(), k42_server.clone()]);
                }
                "--group" => {
                    let g = rest.next().unwrap();
                    if *g == streams {
                        args.extend([a.clone(), g.clone()]);
                    }
                }
                _ => args.push(a.clone()),
            }
        }
        args.extend(strings(extra));
        args
    };
    let out = run(&onto_k42(&["--execute"]));
    assert_eq!(out.code, Some(3), "refused on Kafka 4.2: {}", out.stderr);
    let doc = json(&out);
    let refused = doc["plan"]["groups"][0].clone();
    let reason = refused["reason"].as_str().unwrap_or_default();
    assert_eq!(refused["status"], "refused", "{refused}");
    assert!(
        reason.starts_with(&format!(
            "kafka-20254: the target's brokers {k42_server} run Kafka 4.2"
        )),
        "{refused}"
    );
    assert!(reason.contains("--streams-on-kafka-4-2"), "{reason}");
    assert!(
        out.stderr.contains("refused (kafka-20254 1)"),
        "the summary names the rule: {}",
        out.stderr
    );
    assert!(
        raw42.committed(&streams).await.is_empty(),
        "nothing written"
    );
    // A plan saved with the flag is judged again when it runs without it: still refused.
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("k42-plan.json").display().to_string();
    let out = run(&onto_k42(&["--streams-on-kafka-4-2", "--plan-out", &saved]));
    assert_eq!(out.code, Some(0), "planned with the flag: {}", out.stderr);
    let out = run(&strings(&[
        "apply",
        "--bootstrap-server",
        &k42_server,
        "--plan",
        &saved,
        "--source-bootstrap-server",
        &k4_server,
        "--syncs-bootstrap-server",
        &k4_server,
        "--execute",
        "--no-progress",
        "-o",
        "json",
    ]));
    assert_eq!(
        out.code,
        Some(3),
        "the saved plan without the flag: {}",
        out.stderr
    );
    let result = json(&out)["result"]["groups"][0].clone();
    assert_eq!(result["outcome"], "skipped", "{result}");
    let reason = result["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("kafka-20254: the target's brokers"),
        "{result}"
    );
    assert!(
        raw42.committed(&streams).await.is_empty(),
        "nothing written"
    );
    let out = run(&onto_k42(&["--execute", "--streams-on-kafka-4-2"]));
    assert_eq!(
        out.code,
        Some(0),
        "with --streams-on-kafka-4-2: {}",
        out.stderr
    );
    let held = raw42.committed(&streams).await;
    assert_eq!(held.get(&(replica.clone(), 0)), Some(&110), "{held:?}");
    eprintln!(
        "k42 (Kafka 4.2.0) target: refused, then written with --streams-on-kafka-4-2: {:?}",
        started.elapsed()
    );
}

/// Kafka 3.9 as the source: no share nor streams groups exist there, every group is a consumer
/// group, and translate and apply do what they always did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kafka_3_9_source_has_consumer_groups_only() {
    let (k4, k39) = (cluster("k4"), cluster("k39"));
    let (raw4, raw39) = (Raw::connect(&k4).await, Raw::connect(&k39).await);
    let client39 = client(&k39).await;
    let _ = client(&k4).await;
    let unique = unique_topic("gtype39").replace('-', "");
    let alias = format!("{unique}p");
    let checkpointed = format!("{unique}-checkpointed");
    let unseen = format!("{unique}-unseen");
    let (topic, replica, syncs) = lay_flow(&raw39, &raw4, &unique, &alias, &checkpointed).await;
    raw39.commit(&checkpointed, &topic, 0, 70).await;
    // Never checkpointed: found on the source by its pattern.
    raw39.commit(&unseen, &topic, 0, 99).await;
    let on_source = listed(&client39, &checkpointed).await;
    // Kafka 3.9 offers ListGroups v5: an admin commit's group is a classic one of protocol
    // type "" (a consumer group); share and streams groups do not exist there.
    assert_eq!(
        on_source,
        Some((String::new(), Some("classic".to_string()))),
        "{on_source:?}"
    );
    let (k4_server, k39_server) = (
        k4.var("PLAINTEXT").to_string(),
        k39.var("PLAINTEXT").to_string(),
    );
    let pattern = format!("{unique}-.*");
    let mut args = strings(&[
        "translate",
        "--bootstrap-server",
        &k4_server,
        "--source",
        &alias,
        "--group-regex",
        &pattern,
        "--precise",
        "--syncs-bootstrap-server",
        &k39_server,
        "--syncs-topic",
        &syncs,
        "--from-source-offsets",
        "--source-bootstrap-server",
        &k39_server,
        "--no-progress",
        "-o",
        "json",
    ]);
    let out = run(&args);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let by_group = rows(&json(&out));
    assert_eq!(
        by_group[&checkpointed],
        ("consumer".to_string(), 70, 61, "source-offset".to_string())
    );
    assert_eq!(
        by_group[&unseen],
        ("consumer".to_string(), 99, 109, "source-only".to_string())
    );
    args[0] = "apply".to_string();
    args.push("--execute".to_string());
    let out = run(&args);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    for (group, want) in [(&checkpointed, 61), (&unseen, 109)] {
        let held = raw4.committed(group).await;
        assert_eq!(
            held.get(&(replica.clone(), 0)),
            Some(&want),
            "{group}: {held:?}"
        );
    }
}
