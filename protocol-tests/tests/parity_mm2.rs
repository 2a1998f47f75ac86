//! Parity with Java on real MirrorMaker 2 output: for each flow of
//! `protocol-tests/harness/mm2-flows.sh` (default policy, a three-cluster chain, separator `_`,
//! Identity policy), what mm2-offsets reads from the checkpoints MM2 wrote must equal what Kafka's
//! own `RemoteClusterUtils` (4.3.1, through `protocol-tests/java-reference`) returns:
//! * every group by id (Java's per-group `translateOffsets` vs our `remote_consumer_offsets`),
//! * by regex (`translateOffsets(Pattern)` vs `remote_consumer_offsets_matching`),
//! * all groups (`.*` vs `GroupSelector::all()`, and our CLI's `--all-groups -o json`),
//! * topology: heartbeat, checkpoint and remote topics, upstream clusters, replication hops (an
//!   unknown alias is Java's -1 and our `None`), and our CLI's `topics` / `upstream`.
//!
//! MM2 is stopped once the flows have settled, so both sides read the same frozen topics. Where we
//! differ on purpose (docs/architecture.md: every partition vs partition 0, a missing checkpoints
//! topic is never auto-created) the tests assert our documented behaviour instead.
//!
//! Run `protocol-tests/harness/mm2-flows.sh up` first; without it every test fails saying so.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::support::mm2::{Flow, GroupOffsets, flows, strings};
use mm2_offsets::client::Deadline;
use mm2_offsets::mm2::topology;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{TranslateError, TranslateRequest, Translation};

const TIMEOUT: Duration = Duration::from_secs(30);

fn flow(name: &str) -> Flow {
    flows().flow(name)
}

fn shape(translation: &Translation) -> GroupOffsets {
    let mut out = GroupOffsets::new();
    for o in translation.iter() {
        out.entry(o.group.to_string()).or_default().insert(
            (o.topic.to_string(), o.partition),
            (o.offset, o.metadata.to_string()),
        );
    }
    out
}

fn non_empty(groups: &GroupOffsets) -> usize {
    groups.values().filter(|g| !g.is_empty()).count()
}

/// The remote name of `topic` from the flow's source under its policy.
fn remote(f: &Flow, topic: &str) -> String {
    f.policy().format_remote_topic(&f.source, topic)
}

// ---------------------------------------------------------------------------------------------
// By group id.

async fn by_id(f: &Flow, extra: &[&str], min_checkpointed: usize) {
    let mut asked: Vec<String> = f.groups.clone();
    asked.extend(extra.iter().map(|s| s.to_string()));
    asked.sort();
    asked.dedup();
    let java = f.java_translate(&asked);
    assert_eq!(
        java.len(),
        asked.len(),
        "Java answers every group asked for"
    );

    let client = f.client().await;
    let mut ours = GroupOffsets::new();
    for g in &asked {
        let offsets = client
            .remote_consumer_offsets(g, &f.source, TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("flow {}: group {g}: {e}", f.name));
        ours.insert(
            g.clone(),
            offsets
                .into_iter()
                .map(|(tp, om)| (tp, (om.offset, om.metadata)))
                .collect(),
        );
    }
    assert_eq!(
        ours, java,
        "flow {}: per-group translation differs from Java",
        f.name
    );
    // Not vacuous: MM2 did checkpoint the flow's groups, and the extras have nothing.
    assert!(
        non_empty(&java) >= min_checkpointed,
        "flow {}: only {} of {} groups have checkpoints",
        f.name,
        non_empty(&java),
        asked.len()
    );
    assert!(java["no-such-group"].is_empty());
}

#[tokio::test]
async fn flow_a_every_group_by_id_matches_java() {
    let f = flow("a");
    let all = f.all_groups.clone();
    let extra: Vec<&str> = all
        .iter()
        .map(String::as_str)
        .chain(["no-such-group", "app-.*"])
        .collect();
    by_id(&f, &extra, 50).await;
    // Real MM2 semantics on our side, beyond agreeing with Java: commit metadata travels, a
    // group at the end of a partition translates exactly, an unmirrored topic has no checkpoint.
    let client = f.client().await;
    let meta = client
        .remote_consumer_offsets("app-meta", &f.source, TIMEOUT)
        .await
        .unwrap();
    let orders = remote(&f, "orders");
    assert_eq!(
        meta[&(orders.clone(), 0)].metadata,
        "commit metadata, with spaces \"quotes\" and \u{e9}"
    );
    let at_end = client
        .remote_consumer_offsets("app-003", &f.source, TIMEOUT)
        .await
        .unwrap();
    let ends: Vec<i64> = (0..4)
        .map(|p| at_end[&(orders.clone(), p)].offset)
        .collect();
    assert_eq!(ends, [253, 253, 253, 253]);
    assert!(
        client
            .remote_consumer_offsets("app-unmirrored", &f.source, TIMEOUT)
            .await
            .unwrap()
            .is_empty()
    );
    let mixed = client
        .remote_consumer_offsets("app-mixed", &f.source, TIMEOUT)
        .await
        .unwrap();
    assert_eq!(
        mixed.keys().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
        [orders.as_str()]
    );
}

#[tokio::test]
async fn flow_b_chain_every_group_by_id_matches_java() {
    let f = flow("b");
    by_id(&f, &["app-000", "no-such-group"], 6).await;
    // Checkpoints of the second hop name the twice-renamed topic.
    let client = f.client().await;
    let chain0 = client
        .remote_consumer_offsets("chain-0", &f.source, TIMEOUT)
        .await
        .unwrap();
    assert!(
        chain0.keys().any(|(t, _)| t == "backup.primary.orders"),
        "{chain0:?}"
    );
}

#[tokio::test]
async fn flow_c_separator_every_group_by_id_matches_java() {
    let f = flow("c");
    by_id(&f, &["app-010", "app-unmirrored", "no-such-group"], 5).await;
}

#[tokio::test]
async fn flow_d_identity_every_group_by_id_matches_java() {
    let f = flow("d");
    by_id(&f, &["app-000", "no-such-group"], 5).await;
}

// ---------------------------------------------------------------------------------------------
// By regex and all groups.

async fn by_pattern_and_all(f: &Flow, pattern: &str, min_matched: usize) {
    let client = f.client().await;

    // All groups: Java's `.*` pattern, our GroupSelector::all() and our CLI.
    let java_all = f.java_translate_pattern(".*");
    let mut request = TranslateRequest::new(f.source.clone(), GroupSelector::all());
    request.timeout = TIMEOUT;
    let t = client.translate(&request).await.unwrap();
    assert!(t.report.complete);
    assert_eq!(
        shape(&t),
        java_all,
        "flow {}: all groups differ from Java",
        f.name
    );
    assert!(non_empty(&java_all) >= f.groups.len().min(min_matched));
    let cli_all = cli_translate_all(f);
    assert_eq!(
        cli_all, java_all,
        "flow {}: CLI --all-groups differs from Java",
        f.name
    );

    // Documented difference: we read every partition of the checkpoints topic, Java only
    // partition 0. MM2 creates it with one partition, so the answers agree here.
    let topic = f.policy().checkpoints_topic(&f.source);
    let deadline = Deadline::after(TIMEOUT);
    let described = client
        .kafka()
        .describe_topic(&topic, &deadline)
        .await
        .unwrap();
    assert_eq!(
        described.partitions.len(),
        1,
        "MM2 creates {topic} with one partition"
    );
    assert_eq!(t.report.partitions.len(), described.partitions.len());

    // A regex, full-match like Java's Pattern.matches.
    let java = f.java_translate_pattern(pattern);
    let ours = to_shape(
        client
            .remote_consumer_offsets_matching(pattern, &f.source, TIMEOUT)
            .await
            .unwrap(),
    );
    assert_eq!(
        ours, java,
        "flow {}: pattern {pattern} differs from Java",
        f.name
    );
    assert!(
        java.len() >= min_matched,
        "flow {}: {pattern} matched only {:?}",
        f.name,
        java.keys()
    );

    // A prefix is not a full match: nothing, on both sides.
    let java_prefix = f.java_translate_pattern("app-0");
    let ours_prefix = client
        .remote_consumer_offsets_matching("app-0", &f.source, TIMEOUT)
        .await
        .unwrap();
    assert!(java_prefix.is_empty() && ours_prefix.is_empty());
}

fn to_shape(
    m: BTreeMap<String, BTreeMap<(String, i32), mm2_offsets::translate::OffsetAndMetadata>>,
) -> GroupOffsets {
    m.into_iter()
        .map(|(g, offs)| {
            (
                g,
                offs.into_iter()
                    .map(|(tp, om)| (tp, (om.offset, om.metadata)))
                    .collect(),
            )
        })
        .collect()
}

#[tokio::test]
async fn flow_a_pattern_and_all_groups_match_java() {
    by_pattern_and_all(&flow("a"), "app-0[0-2][0-9]|app-meta", 20).await;
}

#[tokio::test]
async fn flow_b_chain_pattern_and_all_groups_match_java() {
    by_pattern_and_all(&flow("b"), "chain-[0-3]", 4).await;
}

#[tokio::test]
async fn flow_c_separator_pattern_and_all_groups_match_java() {
    by_pattern_and_all(&flow("c"), "app-00[0-5]|app-meta", 4).await;
}

#[tokio::test]
async fn flow_d_identity_pattern_and_all_groups_match_java() {
    by_pattern_and_all(&flow("d"), "app-01[5-9]", 4).await;
}

// ---------------------------------------------------------------------------------------------
// Topology, through the library and the CLI.

fn cli(f: &Flow, args: &[&str]) -> serde_json::Value {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mm2-offsets"));
    cmd.args(args)
        .args(["--bootstrap-server", &f.target, "-o", "json"]);
    for (k, v) in &f.props {
        cmd.arg("-X").arg(format!("{k}={v}"));
    }
    let out = cmd.output().expect("run mm2-offsets");
    assert!(
        out.status.success(),
        "mm2-offsets {args:?} failed on flow {}: {}",
        f.name,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("CLI JSON")
}

fn cli_translate_all(f: &Flow) -> GroupOffsets {
    let doc = cli(
        f,
        &[
            "translate",
            "--source",
            &f.source,
            "--all-groups",
            "--no-progress",
        ],
    );
    assert_eq!(doc["complete"], true);
    let mut out = GroupOffsets::new();
    for o in doc["offsets"].as_array().expect("offsets") {
        out.entry(o["group"].as_str().unwrap().to_string())
            .or_default()
            .insert(
                (
                    o["topic"].as_str().unwrap().to_string(),
                    o["partition"].as_i64().unwrap() as i32,
                ),
                (
                    o["offset"].as_i64().unwrap(),
                    o["metadata"].as_str().unwrap().to_string(),
                ),
            );
    }
    out
}

async fn topology_matches_java(f: &Flow, expect_upstream: &[&str], expect_hops: &[(&str, i64)]) {
    let java = f.java_topology();
    let client = f.client().await;
    let deadline = Deadline::after(TIMEOUT);
    let topics = client.list_topics(&deadline).await.unwrap();
    let policy = f.policy();
    let names = || topics.iter().map(String::as_str);
    let list =
        |s: std::collections::BTreeSet<&str>| s.into_iter().map(str::to_string).collect::<Vec<_>>();

    assert_eq!(
        list(topology::heartbeat_topics(&policy, names())),
        strings(&java["heartbeat_topics"]),
        "flow {}",
        f.name
    );
    assert_eq!(
        list(topology::checkpoint_topics(&policy, names())),
        strings(&java["checkpoint_topics"]),
        "flow {}",
        f.name
    );
    assert_eq!(
        list(topology::remote_topics(&policy, names())),
        strings(&java["remote_topics"]),
        "flow {}",
        f.name
    );
    let upstream = list(topology::upstream_clusters(&policy, names()));
    assert_eq!(
        upstream,
        strings(&java["upstream_clusters"]),
        "flow {}",
        f.name
    );
    assert_eq!(upstream, expect_upstream, "flow {}", f.name);
    for alias in &f.aliases {
        let ours = topology::replication_hops(&policy, names(), alias).map_or(-1, i64::from);
        assert_eq!(
            ours,
            java["replication_hops"][alias.as_str()].as_i64().unwrap(),
            "flow {}: hops to {alias}",
            f.name
        );
        // Ours says None where Java says -1.
        assert_eq!(
            ours == -1,
            topology::replication_hops(&policy, names(), alias).is_none()
        );
    }
    for (alias, hops) in expect_hops {
        assert_eq!(
            java["replication_hops"][*alias].as_i64(),
            Some(*hops),
            "flow {}: {alias}",
            f.name
        );
    }
    assert_eq!(java["replication_hops"]["nowhere"].as_i64(), Some(-1));

    // The CLI, as a user runs it.
    let topics_doc = cli(f, &["topics"]);
    assert_eq!(
        strings(&topics_doc["checkpoints_topics"]),
        strings(&java["checkpoint_topics"])
    );
    assert_eq!(
        strings(&topics_doc["heartbeats_topics"]),
        strings(&java["heartbeat_topics"])
    );
    assert_eq!(
        strings(&topics_doc["remote_topics"]),
        strings(&java["remote_topics"])
    );
    let upstream_doc = cli(f, &["upstream"]);
    let cli_hops = upstream_doc["upstream_clusters"]
        .as_object()
        .expect("upstream_clusters");
    assert_eq!(
        cli_hops.keys().cloned().collect::<Vec<_>>(),
        strings(&java["upstream_clusters"])
    );
    for (alias, hops) in cli_hops {
        assert_eq!(
            Some(hops),
            java["replication_hops"].get(alias),
            "flow {}: CLI hops to {alias}",
            f.name
        );
    }
}

#[tokio::test]
async fn flow_a_topology_matches_java() {
    // backup: heartbeats (from primary->backup), primary.heartbeats (primary's own, replicated).
    topology_matches_java(&flow("a"), &["primary"], &[("primary", 1), ("c", -1)]).await;
}

#[tokio::test]
async fn flow_b_chain_topology_matches_java() {
    // c: backup.heartbeats (1 hop) and backup.primary.heartbeats (2 hops).
    topology_matches_java(
        &flow("b"),
        &["backup", "primary"],
        &[("backup", 1), ("primary", 2)],
    )
    .await;
}

#[tokio::test]
async fn flow_c_separator_topology_matches_java() {
    // Under "_", c's dotted chain topics are not remote: only primary_heartbeats counts.
    topology_matches_java(&flow("c"), &["primary"], &[("primary", 1), ("backup", -1)]).await;
}

#[tokio::test]
async fn flow_d_identity_topology_matches_java() {
    // Identity keeps topic names but still prefixes heartbeats: primary.heartbeats.
    topology_matches_java(&flow("d"), &["primary"], &[("primary", 1)]).await;
}

// ---------------------------------------------------------------------------------------------
// Where we differ on purpose.

#[tokio::test]
async fn a_missing_checkpoints_topic_fails_fast_and_is_never_created() {
    // Java's consumer would auto-create it (or, with auto-creation off as here, retry for 60 s
    // and throw); we name it, list the checkpoints topics that do exist, and create nothing.
    for name in ["a", "c"] {
        let f = flow(name);
        let client = f.client().await;
        let started = std::time::Instant::now();
        let mut request = TranslateRequest::new("nowhere", GroupSelector::all());
        request.timeout = TIMEOUT;
        let error = client
            .translate(&request)
            .await
            .expect_err("no such source");
        let text = error.to_string();
        assert!(
            matches!(error, TranslateError::MissingCheckpointsTopic { .. }),
            "{text}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
        let missing = f.policy().checkpoints_topic("nowhere");
        assert!(text.contains(&missing), "{text}");
        assert!(
            text.contains(&f.policy().checkpoints_topic(&f.source)),
            "{text}"
        );
        let deadline = Deadline::after(TIMEOUT);
        let topics = client.list_topics(&deadline).await.unwrap();
        assert!(!topics.contains(&missing), "{missing} was auto-created");
    }
}
