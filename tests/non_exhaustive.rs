//! Every public struct with public fields is `#[non_exhaustive]`, so a new field is not a
//! breaking change, and every option or request struct among them has a constructor or
//! `Default` to build it from outside the crate.
//!
//! Two checks, as `tests/send_futures.rs` does for `Send`:
//! - [`options_are_built_without_struct_literals`] is the compiler's: it builds each option and
//!   request struct with its constructor and sets a field, as an embedder does (a struct literal
//!   of a `#[non_exhaustive]` struct would not compile here, in another crate). It is never run.
//! - [`every_struct_with_public_fields_is_non_exhaustive`] reads `public-api.txt` (the list of
//!   public items that `.ci/public_api.py` regenerates from rustdoc and CI compares) and fails
//!   when a struct with public fields is not marked, or is not listed in [`OPTIONS`] or
//!   [`RESULTS`] below, so a new one cannot be added without being classified here.
//!
//! The one exception: the MM2 record schemas of `mm2` (`CheckpointKey`, ...: the version 0
//! formats Kafka fixes; another version would be another type), listed in [`SCHEMAS`].

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use mm2_offsets::apply::{ApplyOptions, VerdictRules, WriteAhead};
use mm2_offsets::client::{CommitOptions, KafkaClient, ReadOptions};
use mm2_offsets::config::{
    ClientConfig, KeyStoreFile, KeyStoreType, OAuthClientCredentials, SaslMechanism, SaslSettings,
    Secret, TlsSettings,
};
use mm2_offsets::failback::FailbackRequest;
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::precise::{MatchRecords, PreciseRequest, Syncs, SyncsSource, UpstreamPosition};
use mm2_offsets::record_match::reverse::{ReverseRow, TipRow};
use mm2_offsets::record_match::{MatchOptions, MatchRow};
use mm2_offsets::replication::ReplicationRequest;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::TranslateRequest;
use mm2_offsets::watch::{ApplyLoopOptions, SyncsWatchOptions, WatchOptions};

/// Option and request structs: built by the caller, each in
/// [`options_are_built_without_struct_literals`].
const OPTIONS: &[&str] = &[
    "apply::ApplyOptions",
    "apply::VerdictRules",
    "apply::WriteAhead",
    "client::CommitOptions",
    "client::ReadOptions",
    "config::ClientConfig",
    "config::KeyStoreFile",
    "config::OAuthClientCredentials",
    "config::SaslSettings",
    "config::TlsSettings",
    "failback::FailbackRequest",
    "precise::MatchRecords",
    "precise::PreciseRequest",
    "precise::SyncsSource",
    "precise::UpstreamPosition",
    "record_match::MatchOptions",
    "record_match::MatchRow",
    "record_match::reverse::ReverseRow",
    "record_match::reverse::TipRow",
    "replication::ReplicationRequest",
    "translate::TranslateRequest",
    "watch::ApplyLoopOptions",
    "watch::SyncsWatchOptions",
    "watch::WatchOptions",
];

/// Results, reports, rows and errors: built by the library, read field by field.
const RESULTS: &[&str] = &[
    "apply::ApplyPlan",
    "apply::ApplyReport",
    "apply::Decision",
    "apply::GroupPlan",
    "apply::GroupResult",
    "apply::PartitionPlan",
    "apply::PartitionResult",
    "apply::PlanSchemaError",
    "apply::Summary",
    "apply::journal::Committed",
    "apply::journal::UndoEnd",
    "apply::journal::UndoGroup",
    "apply::journal::UndoHeader",
    "apply::journal::UndoPartition",
    "client::AbortedTransaction",
    "client::BrokerInfo",
    "client::CommittedOffset",
    "client::FetchedChunk",
    "client::GroupCallError",
    "client::GroupCoordinator",
    "client::GroupDescription",
    "client::ListedGroup",
    "client::LogRange",
    "client::OffsetToCommit",
    "client::PartitionInfo",
    "client::ShareGroupState",
    "client::TopicInfo",
    "failback::FailbackRow",
    "failback::FailbackTranslation",
    "failback::ProofReport",
    "failback::ReverseAnswer",
    "failback::Stretch",
    "failback::UntranslatedRow",
    "mm2::DecodeError",
    "mm2::sync_index::HistoryStats",
    "mm2::sync_index::PreciseOffset",
    "precise::GroupInputs",
    "precise::Matching",
    "precise::NotSyncs",
    "precise::PreciseTranslation",
    "precise::Provenance",
    "precise::RowInput",
    "precise::RowMatch",
    "precise::SyncSnapshot",
    "replication::Counts",
    "replication::Replication",
    "replication::ReplicationRow",
    "replication::Totals",
    "record_match::MatchStats",
    "record_match::reverse::ReverseMatch",
    "records::BatchHeader",
    "records::ControlRecord",
    "records::Record",
    "records::WholeBatches",
    "records::builder::BatchBuilder",
    "records::builder::RecordSpec",
    "select::InvalidGroupPattern",
    "select::Refusal",
    "translate::OffsetAndMetadata",
    "translate::OffsetRef",
    "translate::PartitionProgress",
    "translate::ReadReport",
    "translate::SkipCount",
    "translate::SkipCounts",
    "translate::TranslatedOffset",
    "translate::Translation",
    "undo::ParsedUndo",
    "undo::UndoGroupResult",
    "undo::UndoPartitionResult",
    "undo::UndoPlan",
    "undo::UndoReport",
    "verify::VerifyRow",
    "watch::ApplyTotals",
    "watch::GroupAge",
    "watch::GroupNote",
    "watch::PartitionStatus",
    "watch::SharedSnapshot",
    "watch::Snapshot",
    "watch::SourceStatus",
    "watch::SyncsStatus",
    "watch::TickReport",
    "watch::WatchStatus",
];

/// The MM2 record schemas: plain structs on purpose (see `mm2`'s docs).
const SCHEMAS: &[&str] = &[
    "mm2::checkpoint::CheckpointKey",
    "mm2::checkpoint::CheckpointValue",
    "mm2::heartbeat::HeartbeatKey",
    "mm2::heartbeat::HeartbeatValue",
    "mm2::offset_sync::OffsetSyncKey",
    "mm2::offset_sync::OffsetSyncValue",
];

/// Each option struct, built as an embedder builds it: a constructor or `Default`, then fields.
fn options_are_built_without_struct_literals(client: KafkaClient) {
    let mut commit = CommitOptions::default();
    commit.in_flight_per_coordinator = 4;
    let mut read = ReadOptions::default();
    read.max_bytes = 1 << 20;
    let mut config = ClientConfig::plaintext(["127.0.0.1:9092"]);
    config.request_timeout = Duration::from_secs(5);
    let mut store = KeyStoreFile::new("keystore.p12", KeyStoreType::Pkcs12);
    store.password = Some(Secret::new("pw"));
    let grant = OAuthClientCredentials::new("https://idp/token", "id", Secret::new("s"));
    let sasl = SaslSettings::new(SaslMechanism::ScramSha512, "user", Secret::new("pw"));
    let mut tls = TlsSettings::default();
    tls.verify_hostname = false;
    let policy = ReplicationPolicy::default();
    let mut syncs = SyncsSource::new(client.clone(), &policy, "backup");
    syncs.topic = "mm2-offset-syncs.backup.internal".into();
    let matching = MatchRecords::new(client.clone(), MatchOptions::default());
    let mut precise = PreciseRequest::new(Syncs::Topic(syncs));
    precise.match_records = Some(matching);
    let position = UpstreamPosition::new("", "orders", 0, 42);
    let mut request = TranslateRequest::new("primary", GroupSelector::all());
    request.timeout = Duration::from_secs(60);
    let mut apply_loop = ApplyLoopOptions::new(Duration::from_secs(60));
    apply_loop.max_map_age = Duration::from_secs(30);
    let mut syncs_watch = SyncsWatchOptions::new(client, "mm2-offset-syncs.backup.internal");
    syncs_watch.snapshot_path = Some(PathBuf::from("syncs.snapshot"));
    let mut replication = ReplicationRequest::new("primary", GroupSelector::all());
    replication.timeout = Duration::from_secs(30);
    let mut watch = WatchOptions::new("primary", GroupSelector::all());
    watch.max_wait = Duration::from_millis(500);
    let _ = (
        commit,
        read,
        config,
        store,
        grant,
        sasl,
        tls,
        precise,
        position,
        request,
        replication,
    );
    let mut apply = ApplyOptions::default();
    apply.concurrency = 4;
    let mut rules = VerdictRules::default();
    rules.clamp = true;
    apply.rules = rules;
    let mut guard = WriteAhead::default();
    guard.stop = None;
    let mut failback = FailbackRequest::new("primary", "backup", GroupSelector::all());
    let mut matching = MatchOptions::default();
    matching.budget_bytes = 1 << 20;
    failback.match_records = Some(matching);
    let mut row = MatchRow::new("primary.orders", "orders", 0, 42);
    row.upstream = 43;
    let mut reverse = ReverseRow::new("primary.orders", "orders", 0, 42);
    reverse.downstream = 43;
    let mut tip = TipRow::new("primary.orders", "orders", 0);
    tip.partition = 1;
    let _ = (apply_loop, syncs_watch, watch);
    let _ = (apply, guard, failback, row, reverse, tip);
}

/// `(path without the crate name, non_exhaustive)` of every public struct with a public field.
fn structs_with_public_fields() -> Vec<(String, bool)> {
    let list = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("public-api.txt"),
    )
    .expect("public-api.txt (regenerate with `python3 .ci/public_api.py --write`)");
    let with_fields: BTreeSet<&str> = list
        .lines()
        .filter_map(|l| l.strip_prefix("field "))
        .filter_map(|f| f.rsplit_once("::").map(|(owner, _)| owner))
        .collect();
    list.lines()
        .filter_map(|l| l.strip_prefix("struct mm2_offsets::"))
        .map(|rest| match rest.split_once(' ') {
            Some((path, mark)) => (path.to_string(), mark.contains("non_exhaustive")),
            None => (rest.to_string(), false),
        })
        .filter(|(path, _)| with_fields.contains(format!("mm2_offsets::{path}").as_str()))
        .collect()
}

#[test]
fn every_struct_with_public_fields_is_non_exhaustive() {
    let listed: BTreeSet<&str> = OPTIONS.iter().chain(RESULTS).copied().collect();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (path, non_exhaustive) in structs_with_public_fields() {
        if SCHEMAS.contains(&path.as_str()) {
            continue;
        }
        seen.insert(path.clone());
        if !non_exhaustive {
            problems.push(format!(
                "{path} has public fields but is not #[non_exhaustive]"
            ));
        }
        if !listed.contains(path.as_str()) {
            problems.push(format!(
                "{path} is not in OPTIONS (built by the caller: add its constructor to \
                 options_are_built_without_struct_literals) nor in RESULTS"
            ));
        }
    }
    for path in &listed {
        if !seen.contains(*path) {
            problems.push(format!("{path} is listed here but not in public-api.txt"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(seen.len() >= OPTIONS.len() + RESULTS.len());
}
