//! `apply` against real brokers (Kafka 4.4 and 3.9): plan, execute, read back, re-run as a
//! no-op, and every refusal a live cluster can produce: a classic group with a member, a
//! new-protocol (KIP-848) group with a member, a rewind, an offset beyond the log end, a topic
//! missing on the target, and a saved plan whose group gained a member or whose offsets moved.
//!
//! Members are held by this test itself with raw JoinGroup / ConsumerGroupHeartbeat requests
//! (`support/members.rs`, independent of the code under test), which keeps each group non-empty
//! for the session timeout, long enough for the assertions.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::groups::{committed, coordinator_connection, join_classic, join_consumer};
use crate::support::{cluster, unique_topic, write_records};
use kafka_protocol::messages::{
    ApiKey, GroupId, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use mm2_offsets::apply::{self, ApplyOptions, ApplyPlan, ApplyVerdict, GroupOutcome, GroupStatus};
use mm2_offsets::client::{Deadline, GroupProtocol, KafkaClient, OffsetToCommit};
use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
use mm2_offsets::records::builder::BatchBuilder;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{BatchTranslator, Translation};

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Checkpoints for (group, topic, partition, downstream offset, metadata), stamped `now`.
fn checkpoints(rows: &[(&str, &str, i32, i64, &str)]) -> Translation {
    let encoded: Vec<(Vec<u8>, Vec<u8>)> = rows
        .iter()
        .map(|&(group, topic, partition, offset, metadata)| {
            let key = CheckpointKey {
                group: group.as_bytes(),
                topic: topic.as_bytes(),
                partition,
            };
            let value = CheckpointValue {
                version: 0,
                upstream_offset: offset + 1000,
                downstream_offset: offset,
                metadata: metadata.as_bytes(),
            };
            (
                checkpoint::encode_key(&key).unwrap(),
                checkpoint::encode_value(&value).unwrap(),
            )
        })
        .collect();
    let mut builder = BatchBuilder::new(0).log_append_time(now_ms());
    for (k, v) in &encoded {
        builder = builder.record(Some(k), Some(v));
    }
    let selector = GroupSelector::all();
    let mut translator = BatchTranslator::new(&selector);
    translator.add_batches(0, &builder.build()).unwrap();
    translator.finish("primary")
}

async fn plan(
    client: &KafkaClient,
    translation: &Translation,
    options: &ApplyOptions,
) -> ApplyPlan {
    let deadline = Deadline::after(Duration::from_secs(30));
    apply::plan(
        client,
        translation,
        &BTreeMap::new(),
        options,
        std::time::SystemTime::now(),
        &deadline,
    )
    .await
    .expect("plan")
}

async fn apply_on(cluster_name: &str) {
    let cluster = cluster(cluster_name);
    let config = cluster.plaintext();
    let client = KafkaClient::connect(config.clone()).await.unwrap();
    let topic = unique_topic("apply-target");
    // 100 records over 2 partitions: log end 50 on each.
    write_records(&cluster, &topic, 2, 100);
    let missing = unique_topic("apply-missing");
    let g = |name: &str| format!("{topic}-{name}");
    let (fresh, ahead, beyond, absent, classic, moved, gains) = (
        g("fresh"),
        g("ahead"),
        g("beyond"),
        g("absent"),
        g("classic"),
        g("moved"),
        g("gains"),
    );

    // Target state before the plan: "ahead" already at 40 on p0, "moved" at 5. First a ready
    // group coordinator: on a fresh __consumer_offsets it answers codes 14-16 for a moment.
    crate::support::wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
    let coordinators = client
        .find_group_coordinators(
            &[ahead.clone(), moved.clone()],
            &Deadline::after(Duration::from_secs(30)),
        )
        .await
        .unwrap();
    // On a broker whose __consumer_offsets this test creates, the coordinator is loading or
    // moving for a moment: the client waits and finds it again (within the deadline).
    for (group, offset) in [(&ahead, 40), (&moved, 5)] {
        let codes = client
            .commit_group_offsets(
                coordinators[group].as_ref().unwrap(),
                group,
                &[OffsetToCommit::new(topic.clone(), 0, offset)],
                &Deadline::after(Duration::from_secs(60)),
            )
            .await
            .unwrap();
        assert!(codes.values().all(|&c| c == 0), "{codes:?}");
    }
    let _classic_member = join_classic(&client, &config, &classic).await;

    let rows = vec![
        (fresh.as_str(), topic.as_str(), 0, 10, "meta-fresh-0"),
        (fresh.as_str(), topic.as_str(), 1, 20, "meta-fresh-1"),
        (ahead.as_str(), topic.as_str(), 0, 10, ""),
        (beyond.as_str(), topic.as_str(), 0, 1000, ""),
        (beyond.as_str(), topic.as_str(), 7, 1, ""),
        (absent.as_str(), missing.as_str(), 0, 3, ""),
        (classic.as_str(), topic.as_str(), 0, 10, ""),
        (moved.as_str(), topic.as_str(), 0, 30, ""),
        (gains.as_str(), topic.as_str(), 1, 30, ""),
    ];
    let translation = checkpoints(&rows);
    let options = ApplyOptions::default();
    let planned = plan(&client, &translation, &options).await;
    let by_group: BTreeMap<&str, &apply::GroupPlan> = planned
        .groups
        .iter()
        .map(|g| (g.group.as_str(), g))
        .collect();
    let verdicts = |group: &str| -> Vec<ApplyVerdict> {
        by_group[group]
            .partitions
            .iter()
            .map(|p| p.verdict)
            .collect()
    };
    assert_eq!(
        verdicts(&fresh),
        [ApplyVerdict::Commit, ApplyVerdict::Commit]
    );
    assert_eq!(
        by_group[fresh.as_str()].protocol,
        Some(GroupProtocol::Absent)
    );
    assert_eq!(verdicts(&ahead), [ApplyVerdict::WouldRewind]);
    assert_eq!(
        verdicts(&beyond),
        [ApplyVerdict::BeyondLogEnd, ApplyVerdict::NoSuchPartition]
    );
    assert_eq!(verdicts(&absent), [ApplyVerdict::NoSuchTopic]);
    assert_eq!(by_group[moved.as_str()].partitions[0].current, Some(5));
    let classic_plan = by_group[classic.as_str()];
    assert_eq!(classic_plan.protocol, Some(GroupProtocol::Classic));
    assert_eq!(classic_plan.members, 1);
    let GroupStatus::Refused { reason } = &classic_plan.status else {
        panic!("classic group with a member not refused: {classic_plan:?}");
    };
    assert!(
        reason.to_string().contains("classic") && reason.to_string().contains("1 member"),
        "{reason}"
    );
    assert!(planned.has_refusals());
    let ages: Vec<i64> = planned
        .groups
        .iter()
        .map(|g| g.oldest_checkpoint_age_ms)
        .collect();
    assert!(ages.iter().all(|&a| (0..60_000).contains(&a)), "{ages:?}");
    // The plan survives its JSON form.
    let json = serde_json::to_string(&planned).unwrap();
    let reread: ApplyPlan = serde_json::from_str(&json).unwrap();
    reread.check_schema().unwrap();
    assert_eq!(reread, planned);

    // After planning: "moved" moves to 7, "gains" gains a member.
    let c = client
        .find_group_coordinators(
            std::slice::from_ref(&moved),
            &Deadline::after(Duration::from_secs(30)),
        )
        .await
        .unwrap();
    client
        .commit_group_offsets(
            c[&moved].as_ref().unwrap(),
            &moved,
            &[OffsetToCommit::new(topic.clone(), 0, 7)],
            &Deadline::after(Duration::from_secs(30)),
        )
        .await
        .unwrap();
    let _gains_member = join_classic(&client, &config, &gains).await;

    let report = apply::execute(
        &client,
        &reread,
        &options,
        &mm2_offsets::client::Deadline::after(std::time::Duration::from_secs(60)),
    )
    .await;
    let outcomes: BTreeMap<&str, &GroupOutcome> = report
        .groups
        .iter()
        .map(|g| (g.group.as_str(), &g.outcome))
        .collect();
    assert_eq!(
        outcomes[fresh.as_str()],
        &GroupOutcome::Applied,
        "{report:?}"
    );
    let fresh_result = report.groups.iter().find(|g| g.group == fresh).unwrap();
    assert!(
        fresh_result
            .partitions
            .iter()
            .all(|p| p.read_back == Some(p.offset))
    );
    for (group, needle) in [(&moved, "moved"), (&gains, "member"), (&classic, "active")] {
        match outcomes[group.as_str()] {
            GroupOutcome::Skipped { reason } => {
                assert!(reason.to_string().contains(needle), "{group}: {reason}")
            }
            other => panic!("{group}: {other:?}"),
        }
    }
    assert!(report.has_skips());
    // Exactly what was planned was written, with the checkpoint's metadata; nothing else.
    let written = committed(&client, &fresh).await;
    assert_eq!(
        written,
        BTreeMap::from([((topic.clone(), 0), 10), ((topic.clone(), 1), 20)])
    );
    assert_eq!(
        committed(&client, &ahead).await,
        BTreeMap::from([((topic.clone(), 0), 40)])
    );
    assert_eq!(
        committed(&client, &moved).await,
        BTreeMap::from([((topic.clone(), 0), 7)])
    );
    assert!(committed(&client, &classic).await.is_empty());
    assert!(committed(&client, &gains).await.is_empty());
    assert!(committed(&client, &beyond).await.is_empty());

    // A re-run of the applied group is a no-op, and says so.
    let fresh_only = checkpoints(&rows[..2]);
    let again = plan(&client, &fresh_only, &options).await;
    assert!(
        again.groups[0]
            .partitions
            .iter()
            .all(|p| p.verdict == ApplyVerdict::Unchanged)
    );
    assert!(again.is_noop() && !again.has_refusals(), "{again:?}");
    let report = apply::execute(
        &client,
        &again,
        &options,
        &mm2_offsets::client::Deadline::after(std::time::Duration::from_secs(60)),
    )
    .await;
    assert_eq!(report.groups[0].outcome, GroupOutcome::NothingToDo);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_on_kafka_4() {
    apply_on("k4").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_on_kafka_3_9() {
    apply_on("k39").await;
}

/// A new-protocol (KIP-848) group with a running member: DescribeGroups calls it "Dead", the
/// plan must still refuse it (ConsumerGroupDescribe first), and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_protocol_group_with_a_member_is_refused_on_kafka_4() {
    let cluster = cluster("k4");
    let config = cluster.plaintext();
    let client = KafkaClient::connect(config.clone()).await.unwrap();
    let topic = unique_topic("apply-848");
    write_records(&cluster, &topic, 1, 20);
    let group = format!("{topic}-g");
    let _member = join_consumer(&client, &config, &group, &topic).await;
    let translation = checkpoints(&[(group.as_str(), topic.as_str(), 0, 5, "")]);
    let options = ApplyOptions::default();
    let planned = plan(&client, &translation, &options).await;
    let g = &planned.groups[0];
    assert_eq!(g.protocol, Some(GroupProtocol::Consumer), "{g:?}");
    assert_eq!(g.members, 1);
    let GroupStatus::Refused { reason } = &g.status else {
        panic!("active consumer-protocol group not refused: {g:?}");
    };
    assert!(reason.to_string().contains("protocol consumer"), "{reason}");
    let report = apply::execute(
        &client,
        &planned,
        &options,
        &mm2_offsets::client::Deadline::after(std::time::Duration::from_secs(60)),
    )
    .await;
    assert!(matches!(
        report.groups[0].outcome,
        GroupOutcome::Skipped { .. }
    ));
    assert!(committed(&client, &group).await.is_empty());
}

/// A share group (KIP-932; Kafka 4.4 finalizes share.version by default) is refused by name,
/// although ConsumerGroupDescribe and DescribeGroups answer for it exactly as for a group the
/// broker has never seen: ListGroups names its type. Nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_group_is_refused_on_kafka_4() {
    let cluster = cluster("k4");
    let config = cluster.plaintext();
    let client = KafkaClient::connect(config.clone()).await.unwrap();
    crate::support::wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
    let topic = unique_topic("apply-share");
    write_records(&cluster, &topic, 1, 20);
    let group = format!("{topic}-g");
    // A share member, by a raw ShareGroupHeartbeat (independent of the code under test).
    let conn = coordinator_connection(&client, &config, &group).await;
    let version = conn.negotiate(ApiKey::ShareGroupHeartbeat, 1..=1).unwrap();
    let request = ShareGroupHeartbeatRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.clone())))
        .with_member_id(StrBytes::from_string(uuid_like()))
        .with_member_epoch(0)
        .with_subscribed_topic_names(Some(vec![TopicName(StrBytes::from_string(topic.clone()))]));
    let mut body = conn.send(&request, version).await.unwrap();
    let response = ShareGroupHeartbeatResponse::decode(&mut body, version).unwrap();
    assert_eq!(
        response.error_code, 0,
        "ShareGroupHeartbeat for {group}: {:?}",
        response.error_message
    );
    let translation = checkpoints(&[(group.as_str(), topic.as_str(), 0, 5, "")]);
    let options = ApplyOptions::default();
    let planned = plan(&client, &translation, &options).await;
    let g = &planned.groups[0];
    let GroupStatus::Refused { reason } = &g.status else {
        panic!("share group not refused: {g:?}");
    };
    assert!(reason.to_string().contains("share group"), "{reason}");
    assert_eq!(g.state.as_deref(), Some("share"));
    let report = apply::execute(
        &client,
        &planned,
        &options,
        &mm2_offsets::client::Deadline::after(std::time::Duration::from_secs(60)),
    )
    .await;
    assert!(
        matches!(report.groups[0].outcome, GroupOutcome::Skipped { .. }),
        "{report:?}"
    );
    drop(conn);
}

/// A member id of 22 URL-safe characters, as the share protocol wants a client-made one.
fn uuid_like() -> String {
    let n = now_ms() as u128 * 6_364_136_223_846_793_005;
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    (0..22)
        .map(|i| alphabet[((n >> (i * 5)) & 63) as usize] as char)
        .collect()
}

/// The value of the sample `series` (name and labels exactly as exported) in a /metrics body.
fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

/// `watch --apply-interval 1s` as a user runs it, without MirrorMaker 2: checkpoints for a
/// made-up source alias are written straight into its checkpoints topic on Kafka 4.4. The empty
/// group is committed and read back; the group with a member (a raw JoinGroup) is never written;
/// /metrics and the per-run lines on stderr say so; SIGTERM stops it with exit code 0. With
/// `--undo-dir`, the run that wrote left one undo file (the runs that wrote nothing none), and
/// running it restores the group as it was before (no committed offset).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_apply_interval_commits_empty_groups_only_on_kafka_4() {
    use std::process::Command;
    let started = std::time::Instant::now();
    let cluster = cluster("k4");
    let config = cluster.plaintext();
    let client = KafkaClient::connect(config.clone()).await.unwrap();
    crate::support::wait_for_group_coordinator(&client, Duration::from_secs(60)).await;
    let topic = unique_topic("watch-apply");
    write_records(&cluster, &topic, 2, 100);
    let (idle, busy) = (format!("{topic}-idle"), format!("{topic}-busy"));
    let _busy_member = join_classic(&client, &config, &busy).await;
    let alias = unique_topic("wapply");
    let lines: Vec<String> = [(&idle, 0, 10), (&idle, 1, 20), (&busy, 0, 30)]
        .iter()
        .map(|&(group, partition, offset)| {
            crate::support::checkpoint_line(group, &topic, partition, offset, "from-watch")
        })
        .collect();
    crate::support::write_raw(
        &cluster,
        &format!("{alias}.checkpoints.internal"),
        1,
        "none",
        &lines,
        &[],
    );
    let setup = started.elapsed();
    let undo_dir = tempfile::tempdir().unwrap();
    let undo_dir_arg = undo_dir.path().display().to_string();

    let mut watch = crate::support::watch_process::start(&[
        "--bootstrap-server",
        cluster.var("PLAINTEXT"),
        "--source",
        &alias,
        "--group-regex",
        &format!("{topic}-.*"),
        "--poll",
        "200ms",
        "--apply-interval",
        "1s",
        "--undo-dir",
        &undo_dir_arg,
    ]);
    let (address, log) = (watch.address.clone(), watch.log.clone());

    // The empty group's offsets arrive on the target within a few runs.
    let expected = BTreeMap::from([((topic.clone(), 0), 10), ((topic.clone(), 1), 20)]);
    let give_up = std::time::Instant::now() + Duration::from_secs(20);
    while committed(&client, &idle).await != expected {
        assert!(
            std::time::Instant::now() < give_up,
            "the empty group was not committed; watcher said:\n{}",
            log.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let applied_after = started.elapsed();
    // Wait for one more run after the commit: it must find nothing left to write.
    let runs_then = sample(
        &crate::support::http_get(&address, "/metrics").1,
        "mm2_apply_runs_total",
    )
    .unwrap();
    let metrics = loop {
        let (status, body) = crate::support::http_get(&address, "/metrics");
        assert_eq!(status, 200);
        if sample(&body, "mm2_apply_runs_total").unwrap() >= runs_then + 1.0 {
            break body;
        }
        assert!(
            std::time::Instant::now() < give_up,
            "no further run:\n{body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Exactly the empty group's two partitions were committed, once; the active group was
    // skipped in every run after the map was ready, and nothing failed.
    assert_eq!(
        sample(&metrics, "mm2_apply_committed_partitions_total"),
        Some(2.0),
        "{metrics}"
    );
    let active = sample(
        &metrics,
        "mm2_apply_skipped_groups_total{reason=\"active\"}",
    )
    .unwrap();
    assert!(active >= 2.0, "{metrics}");
    assert_eq!(sample(&metrics, "mm2_apply_errors_total"), Some(0.0));
    assert!(
        sample(&metrics, "mm2_apply_last_successful_run_timestamp_seconds").unwrap()
            > (now_ms() / 1000 - 60) as f64,
        "{metrics}"
    );
    assert!(
        committed(&client, &busy).await.is_empty(),
        "the group with a member was written"
    );

    let pid = watch.child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let give_up = std::time::Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = watch.child.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < give_up, "no exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = watch.log_to_end();
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(log.contains("this writes offsets"), "{log}");
    assert!(
        log.contains("1 applied; 2 of 2 partition(s) to write committed and read back")
            && log.contains("skipped groups: active 1"),
        "{log}"
    );
    eprintln!("[watcher stderr]\n{log}");
    // One run wrote: one undo file, which the run's line named.
    let undo_files: Vec<std::path::PathBuf> = std::fs::read_dir(undo_dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(undo_files.len(), 1, "{undo_files:?}\n{log}");
    let undo_file = undo_files[0].display().to_string();
    assert!(log.contains(&format!("undo: {undo_file}")), "{log}");
    let undone = Command::new(env!("CARGO_BIN_EXE_mm2-offsets"))
        .args([
            "apply",
            "--bootstrap-server",
            cluster.var("PLAINTEXT"),
            "--plan",
            &undo_file,
            "--execute",
        ])
        .output()
        .unwrap();
    assert_eq!(
        undone.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&undone.stderr)
    );
    assert!(
        committed(&client, &idle).await.is_empty(),
        "the undo of the watch's run did not delete what it committed"
    );
    eprintln!(
        "watch --apply-interval on k4: setup {setup:?}, empty group committed after {applied_after:?}, undone from {undo_file}, total {:?}",
        started.elapsed()
    );
}
