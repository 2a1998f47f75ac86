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
    Backoff, Deadline, GroupCoordinator, IsolationLevel, KafkaClient, OffsetSpec, OffsetToCommit,
    PartitionStream, ReadOptions, SharedTopic, TopicInfo,
};
use mm2_offsets::config::ClientConfig;
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::precise::{self, SyncsSource};
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, TranslateRequest, Translation};
use mm2_offsets::watch::{ApplyLoop, TickReport, WatchOptions, Watcher};

/// Accepts only what may move to another thread.
fn send<T: Send>(_: T) {}

/// Every public async fn, as `file:name`.
const LISTED: &[&str] = &[
    "src/apply/execute.rs:execute",
    "src/apply/mod.rs:plan",
    "src/client/cluster.rs:connect",
    "src/client/cluster.rs:describe_topic",
    "src/client/cluster.rs:list_offsets",
    "src/client/cluster.rs:list_topics",
    "src/client/coordinator.rs:commit_group_offsets",
    "src/client/coordinator.rs:describe_group",
    "src/client/coordinator.rs:fetch_group_offsets",
    "src/client/coordinator.rs:find_group_coordinators",
    "src/client/deadline.rs:wait",
    "src/client/fetch.rs:fetch",
    "src/client/fetch.rs:next_chunk",
    "src/client/list_groups.rs:list_groups",
    "src/precise/mod.rs:read_sync_index",
    "src/precise/mod.rs:translate_precise",
    "src/precise/record_match/reverse.rs:match_reverse",
    "src/precise/source_offsets.rs:translate_from_source_offsets",
    "src/translate/mirror_client.rs:connect",
    "src/translate/mirror_client.rs:list_topics",
    "src/translate/mirror_client.rs:remote_consumer_offsets",
    "src/translate/mirror_client.rs:remote_consumer_offsets_matching",
    "src/translate/mirror_client.rs:translate",
    "src/watch/apply_loop.rs:run",
    "src/watch/apply_loop.rs:tick",
    "src/watch/mod.rs:start",
    "src/watch/mod.rs:stop",
    "src/watch/mod.rs:wait_ready",
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
) {
    let groups: Vec<String> = Vec::new();
    let heartbeats: BTreeMap<String, String> = BTreeMap::new();
    let offsets: Vec<OffsetToCommit> = Vec::new();

    // apply
    send(apply::plan(
        kafka,
        translation,
        &heartbeats,
        options,
        0,
        deadline,
    ));
    send(apply::execute(kafka, plan, options));

    // client
    send(KafkaClient::connect(ClientConfig::default()));
    send(kafka.list_topics(deadline));
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
    send(kafka.commit_group_offsets(coordinator, "g", &offsets, deadline));
    send(kafka.list_groups(coordinator, &[], deadline));
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
    send(precise::record_match::reverse::match_reverse(
        kafka,
        kafka,
        &[],
        |_: &str, _: i32| None,
        &precise::record_match::MatchOptions::default(),
        *deadline,
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
