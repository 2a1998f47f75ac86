//! Every public async fn of the library returns a `Send` future, so a program can
//! `tokio::spawn` it or await it in a web handler on a multi-threaded runtime.
//!
//! The check is the compiler's: [`futures_are_send`] builds each future and hands it to
//! [`send`], which accepts only `Send` values; it is never run. The test beside it reads the
//! sources and fails when a `pub async fn` is not in [`LISTED`], so a new one cannot be added
//! without its check.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use mm2_offsets::apply::{self, ApplyOptions, ApplyPlan};
use mm2_offsets::client::{
    Backoff, CommitOptions, Coordinators, Deadline, GroupCoordinator, IsolationLevel, KafkaClient,
    OffsetSpec, OffsetToCommit, PartitionStream, PartitionsWanted, ReadOptions, SharedTopic,
    TopicInfo,
};
use mm2_offsets::config::ClientConfig;
use mm2_offsets::failback::{self, FailbackRequest, FailbackRow, Ranges, ReverseIndex};
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::precise::{self, Input, PreciseRequest, Syncs, SyncsSource, UpstreamPosition};
use mm2_offsets::record_match::{self, MatchOptions, MatchRow};
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, TranslateRequest, Translation};
use mm2_offsets::undo;
use mm2_offsets::watch::{
    ApplyLoop, SyncsWatchOptions, SyncsWatcher, TickReport, WatchOptions, Watcher,
};

/// Accepts only what may move to another thread.
fn send<T: Send>(_: T) {}

/// Every public async fn, as `file:name`.
const LISTED: &[&str] = &[
    "src/apply/execute.rs:execute",
    "src/apply/execute.rs:execute_with",
    "src/apply/execute.rs:execute_write_ahead",
    "src/apply/mod.rs:plan",
    "src/apply/probe.rs:probe_undo_deletes",
    "src/apply/mod.rs:plan_apply",
    "src/apply/recheck.rs:recheck",
    "src/undo/mod.rs:execute_undo",
    "src/client/cluster.rs:cluster_id",
    "src/client/cluster.rs:connect",
    "src/client/cluster.rs:describe_topic",
    "src/client/cluster.rs:list_topics",
    "src/client/commit.rs:commit_group_offsets",
    "src/client/commit.rs:commit_offsets",
    "src/client/coordinator.rs:find_group_coordinators",
    "src/client/deadline.rs:wait",
    "src/client/describe.rs:describe_group",
    "src/client/describe.rs:describe_groups",
    "src/client/fetch.rs:fetch",
    "src/client/fetch.rs:next_chunk",
    "src/client/list_groups.rs:list_groups",
    "src/client/list_groups.rs:list_groups_on",
    "src/client/list_groups.rs:group_types",
    "src/client/log_offsets.rs:describe_topics",
    "src/client/log_offsets.rs:list_offsets",
    "src/client/log_offsets.rs:list_offsets_many",
    "src/client/log_offsets.rs:log_ranges",
    "src/client/offset_delete.rs:delete_group_offsets",
    "src/client/offset_fetch.rs:fetch_group_offsets",
    "src/client/share_offsets.rs:fetch_share_group_offsets",
    "src/client/share_group.rs:describe_share_groups",
    "src/client/share_group.rs:alter_share_group_offsets",
    "src/client/share_group.rs:delete_share_group_offsets",
    "src/client/streams_describe.rs:describe_streams_groups",
    "src/client/offset_fetch.rs:fetch_offsets",
    "src/failback/translate.rs:sharpen_with_records",
    "src/failback/translate.rs:translate_failback",
    "src/precise/read.rs:read_sync_index",
    "src/record_match/forward.rs:match_rows",
    "src/record_match/reverse.rs:match_reverse",
    "src/record_match/reverse.rs:match_tip",
    "src/replication/mod.rs:measure",
    "src/precise/run.rs:translate_from_source_offsets",
    "src/precise/run.rs:translate_positions",
    "src/precise/run.rs:translate_precise",
    "src/precise/run.rs:translate_precise_with",
    "src/failback/stretch_proof.rs:read_record_offsets",
    "src/verify/mod.rs:verify",
    "src/translate/mirror_client.rs:connect",
    "src/translate/mirror_client.rs:list_topics",
    "src/translate/mirror_client.rs:remote_consumer_offsets",
    "src/translate/mirror_client.rs:remote_consumer_offsets_matching",
    "src/translate/mirror_client.rs:translate",
    "src/watch/apply_loop.rs:run",
    "src/watch/apply_loop.rs:tick",
    "src/watch/mod.rs:shared_snapshot",
    "src/watch/mod.rs:start",
    "src/watch/mod.rs:stop",
    "src/watch/mod.rs:wait_ready",
    "src/watch/precise.rs:start",
    "src/watch/precise.rs:stop",
    "src/wire/connection.rs:connect",
    "src/wire/connection.rs:send",
];

/// Type-checked, never called: each line is one public async fn's future.
#[allow(clippy::too_many_arguments)]
fn futures_are_send(
    kafka: &KafkaClient,
    mirror: &MirrorClient,
    request: &TranslateRequest,
    translation: &Translation,
    plan: &ApplyPlan,
    options: &ApplyOptions,
    deadline: &Deadline,
    coordinator: &GroupCoordinator,
    topic: &TopicInfo,
    shared_topic: &SharedTopic,
    stream: &mut PartitionStream,
    backoff: &mut Backoff,
    syncs: &SyncsSource,
    watcher: &Watcher,
    apply_loop: &ApplyLoop,
    selector: GroupSelector,
    precise_request: &PreciseRequest,
    positions: &[UpstreamPosition],
    verify_syncs: Syncs,
    match_options: MatchOptions,
    match_rows: &[MatchRow<'_>],
    reverse: &ReverseIndex,
    failback_rows: &mut [FailbackRow],
    failback_request: &FailbackRequest,
    ranges: Ranges,
    syncs_watch: SyncsWatchOptions,
    syncs_watcher: SyncsWatcher,
) {
    let groups: Vec<String> = Vec::new();
    let heartbeats: BTreeMap<String, String> = BTreeMap::new();
    let offsets: Vec<OffsetToCommit> = Vec::new();
    let known = Coordinators::new();
    let commits: BTreeMap<String, Vec<OffsetToCommit>> = BTreeMap::new();
    let wanted: BTreeMap<String, PartitionsWanted> = BTreeMap::new();
    let topics: Vec<SharedTopic> = vec![shared_topic.clone()];

    // apply
    send(apply::plan(
        kafka,
        translation,
        &heartbeats,
        options,
        std::time::UNIX_EPOCH,
        deadline,
    ));
    send(apply::execute(
        kafka,
        plan,
        options,
        &mm2_offsets::client::Deadline::after(std::time::Duration::from_secs(60)),
    ));
    send(apply::execute_with(
        kafka,
        plan,
        Some(translation),
        options,
        deadline,
    ));
    send(mirror.plan_apply(translation, options, deadline));
    send(apply::execute_write_ahead(
        kafka,
        plan,
        None,
        options,
        deadline,
        apply::WriteAhead::default(),
    ));
    send(apply::probe_undo_deletes(
        kafka,
        &mut plan.clone(),
        deadline,
    ));

    // client
    send(KafkaClient::connect(ClientConfig::default()));
    send(kafka.list_topics(deadline));
    send(kafka.cluster_id(deadline));
    send(kafka.describe_topics(&["t"], deadline));
    send(kafka.list_offsets_many(
        &topics,
        OffsetSpec::Earliest,
        IsolationLevel::ReadCommitted,
        deadline,
    ));
    send(kafka.log_ranges(&topics, IsolationLevel::ReadCommitted, deadline));
    send(kafka.describe_topic("t", deadline));
    send(kafka.list_offsets(
        topic,
        &[0],
        OffsetSpec::Latest,
        IsolationLevel::ReadUncommitted,
        deadline,
    ));
    send(kafka.find_group_coordinators(&groups, deadline));
    send(kafka.describe_group(coordinator, "g", deadline));
    send(kafka.fetch_group_offsets(coordinator, &groups, deadline));
    send(kafka.fetch_share_group_offsets(&groups, &known, deadline));
    send(kafka.describe_share_groups(&groups, &known, deadline));
    let share_offsets: std::collections::BTreeMap<(String, i32), i64> =
        [(("t".to_string(), 0), 5)].into();
    send(kafka.alter_share_group_offsets(coordinator, "g", &share_offsets, deadline));
    let share_topics: std::collections::BTreeSet<String> = ["t".to_string()].into();
    send(kafka.delete_share_group_offsets(coordinator, "g", &share_topics, deadline));
    send(kafka.commit_group_offsets(coordinator, "g", &offsets, deadline));
    send(kafka.describe_groups(&groups, &known, deadline));
    send(kafka.fetch_offsets(&wanted, &known, deadline));
    send(kafka.commit_offsets(&commits, &known, &CommitOptions::default(), deadline));
    send(kafka.delete_group_offsets(coordinator, "g", &[("t".to_string(), 0)], deadline));
    send(kafka.list_groups(coordinator, &[], deadline));
    send(kafka.list_groups_on([coordinator], &[], deadline));
    send(kafka.group_types(deadline));
    send(kafka.fetch(shared_topic, 0, 0, &ReadOptions::default()));
    send(stream.next_chunk());
    send(backoff.wait(deadline));

    // translate
    send(MirrorClient::connect(
        ClientConfig::default(),
        ReplicationPolicy::default(),
    ));
    send(mirror.list_topics(deadline));
    send(mirror.translate(request));
    send(mirror.remote_consumer_offsets("g", "primary", Duration::ZERO));
    send(mirror.remote_consumer_offsets_matching(".*", "primary", Duration::ZERO));

    // precise
    send(mirror.translate_precise(request, syncs));
    send(mirror.translate_from_source_offsets(request, syncs, kafka));
    send(precise::read_sync_index(syncs, request, *deadline));
    send(mirror.translate_precise_with(request, precise_request));
    send(mirror.translate_positions(
        "primary",
        positions,
        Input::OffsetsFile,
        request,
        precise_request,
    ));
    send(mirror.verify(request, verify_syncs, kafka, match_options.clone()));
    send(record_match::match_rows(
        kafka,
        kafka,
        match_rows,
        |_: &str, _: i32| None,
        &match_options,
        *deadline,
    ));
    send(failback::read_record_offsets(
        kafka, ranges, 1, 1024, *deadline,
    ));
    send(failback::translate_failback(
        mirror,
        kafka,
        failback_request,
    ));
    send(failback::sharpen_with_records(
        kafka,
        reverse,
        failback_rows,
        failback_request,
        *deadline,
    ));
    send(record_match::reverse::match_reverse(
        kafka,
        kafka,
        &[],
        |_: &str, _: i32| None,
        &record_match::MatchOptions::default(),
        *deadline,
    ));
    send(record_match::reverse::match_tip(
        kafka,
        kafka,
        &[],
        |_: &str, _: i32| None,
        &record_match::MatchOptions::default(),
        *deadline,
    ));

    // replication
    send(mm2_offsets::replication::measure(
        kafka,
        kafka,
        syncs,
        &mm2_offsets::mm2::ReplicationPolicy::default(),
        &mm2_offsets::replication::ReplicationRequest::new("primary", GroupSelector::all()),
    ));

    // watch
    send(Watcher::start(
        mirror,
        WatchOptions::new("primary", selector),
    ));
    send(watcher.wait_ready(Duration::ZERO));
    send(watcher.stop());
    send(apply_loop.tick(watcher));
    send(apply_loop.run(watcher, std::future::pending::<()>(), |_: &TickReport| {}));
    send(watcher.shared_snapshot());
    send(SyncsWatcher::start(syncs_watch));
    send(syncs_watcher.stop());
}

/// The batched re-check and undo: each holds its waves' calls across awaits, and must stay `Send`
/// so that an embedder can run a failover in a task of its own.
fn apply_futures_are_send(
    kafka: &KafkaClient,
    translation: &Translation,
    plan: &ApplyPlan,
    options: &ApplyOptions,
    deadline: &Deadline,
    undo_plan: &undo::UndoPlan,
) {
    send(apply::recheck(
        kafka,
        plan,
        Some(translation),
        options,
        deadline,
    ));
    send(undo::execute_undo(
        kafka,
        undo_plan,
        options,
        apply::Mode::DryRun,
        deadline,
    ));
}

/// The wire layer's, an unstable surface public only with the `unstable-wire` feature.
#[cfg(feature = "unstable-wire")]
fn wire_futures_are_send(
    connection: &mm2_offsets::wire::BrokerConnection,
    connector: &mm2_offsets::wire::Connector,
) {
    let request = kafka_protocol::messages::MetadataRequest::default();
    let config = ClientConfig::default();
    send(mm2_offsets::wire::BrokerConnection::connect(
        "b:9092", &config,
    ));
    send(connection.send(&request, 12));
    send(connector.connect("b:9092"));
}

#[test]
fn every_public_async_fn_is_checked() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = BTreeSet::new();
    let mut pending = vec![root.join("src")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "bin") {
                    pending.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for line in text.lines() {
                let Some(rest) = line.trim_start().strip_prefix("pub async fn ") else {
                    continue;
                };
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let file = path.strip_prefix(root).unwrap().display().to_string();
                found.insert(format!("{file}:{name}"));
            }
        }
    }
    let listed: BTreeSet<String> = LISTED.iter().map(|s| s.to_string()).collect();
    let unchecked: Vec<&String> = found.difference(&listed).collect();
    let gone: Vec<&String> = listed.difference(&found).collect();
    assert!(
        unchecked.is_empty() && gone.is_empty(),
        "public async fns without a Send check here: {unchecked:?}; listed but gone: {gone:?}"
    );
}
