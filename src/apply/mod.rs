//! `apply`: commit translated offsets on the target cluster, safely, for many groups at once.
//!
//! [`plan`] reads the target (group states, committed offsets, log ranges, topic ids, the
//! cluster id) and decides each partition ([`Verdict`]) without writing anything; the
//! [`ApplyPlan`] can be inspected, printed, or saved as JSON ([`PLAN_SCHEMA_VERSION`]).
//!
//! A plan is a claim, not an authority. [`execute`] commits a plan only where a fresh
//! derivation agrees: just before each group's commit it reads the group, its committed offsets
//! and its topics' logs and ids again, derives every partition's verdict again with the rules of
//! a fresh plan (the stricter of the plan's and the run's), and commits only what both the plan
//! and the fresh check allow; a difference refuses that partition and names both views. A plan
//! made on another cluster is refused whole. [`recheck`] makes the same derivation without
//! writing, for a dry run of a saved plan. The commit is one admin OffsetCommit per group, read
//! back.
//!
//! # References
//! - `../shared/docs/apply-semantics.md` (what the peers do, and the traps)
//! - Kafka's `AlterConsumerGroupOffsetsHandler`, `ClassicGroup.validateOffsetCommit`,
//!   `ConsumerGroup.validateOffsetCommit`

mod authz;
mod execute;
mod reason;
mod recheck;
pub mod undo;
mod verdict;

pub use execute::{
    ApplyReport, CommitState, GroupOutcome, GroupResult, PartitionResult, execute, execute_with,
};
pub use reason::{Change, GroupError, GroupRefusal, SkipReason};
pub use recheck::recheck;
pub use verdict::{Decision, TargetPartition, Verdict, VerdictRules, decide};

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::client::{
    ClientError, Deadline, GroupCallError, GroupCoordinator, GroupDescription, GroupOffsets,
    GroupProtocol, IsolationLevel, KafkaClient, NOT_CONSUMER_GROUP_TYPES, OffsetSpec, ReadOptions,
};
use crate::records::Batches;
use crate::translate::Translation;

/// The version of the plan's JSON schema. Bumped on any incompatible change; a plan file of
/// another version is refused.
pub const PLAN_SCHEMA_VERSION: u32 = 1;

/// Where a plan's offsets came from: what a fresh checkpoint must show for a saved plan's
/// partition to be trusted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum PlanInput {
    /// MM2's checkpoints as they are: the fresh checkpoint must give the same offset.
    #[default]
    Checkpoints,
    /// Re-translated from the offset-sync history (`--precise`): the fresh checkpoint must
    /// have the same upstream offset and a downstream offset no greater than the plan's.
    Precise,
    /// Translated from the source's committed offsets (`--from-source-offsets`): a checkpoint
    /// of the plan's source must still exist for the partition.
    SourceOffsets,
    /// Failed back from the groups' offsets on the backup (`failback`): the caller derives
    /// every row again from the backup and the offset-sync history now, and the fresh row must
    /// give the same offset from the same backup offset.
    Failback,
}

/// How to plan and execute.
#[derive(Clone, Debug)]
pub struct ApplyOptions {
    /// The per-partition rules.
    pub rules: VerdictRules,
    /// Where the offsets planned come from (saved in the plan).
    pub input: PlanInput,
    /// Groups planned or committed at once.
    pub concurrency: usize,
    /// Budget for an execute's coordinator lookups (a plan takes its deadline as an argument).
    pub timeout: std::time::Duration,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            rules: VerdictRules::default(),
            input: PlanInput::Checkpoints,
            concurrency: 16,
            timeout: std::time::Duration::from_secs(60),
        }
    }
}

/// Whether a group may be written, as planned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "status")]
#[non_exhaustive]
pub enum GroupStatus {
    /// No members: its `commit` partitions will be written.
    Ready,
    /// Refused: the group has members, or is of a kind apply does not write.
    Refused {
        /// Why (serialized as the words for the operator).
        reason: GroupRefusal,
    },
    /// The target could not be asked (authorization, coordinator, ...).
    Error {
        /// What failed (serialized as the words for the operator).
        message: GroupError,
    },
}

/// One partition of a group's plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionPlan {
    /// The topic on the target.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The translated offset from the checkpoint.
    pub translated: i64,
    /// The offset an execute commits (differs from `translated` only when clamped).
    pub offset: i64,
    /// The group's committed offset on the target when planned (`None`: none).
    pub current: Option<i64>,
    /// The target's log start and end when planned (`None`: no such topic or partition).
    pub log_start: Option<i64>,
    /// See `log_start`.
    pub log_end: Option<i64>,
    /// The decision.
    pub verdict: Verdict,
    /// Set when `--clamp` moved the offset into the log: the verdict it would have had.
    pub clamped_from: Option<Verdict>,
    /// The checkpoint's age when planned (now minus its record timestamp), in ms.
    pub checkpoint_age_ms: i64,
    /// The metadata committed with the offset (the source group's).
    pub metadata: String,
    /// The topic's id on the target when planned (Kafka's text form), `None` where the broker
    /// has none or the topic was missing: a recreated topic gets a new id.
    #[serde(default)]
    pub topic_id: Option<String>,
    /// The upstream offset the translated offset came from (the checkpoint's, or the source
    /// group's with `--from-source-offsets`); `None` in plans of older builds.
    #[serde(default)]
    pub upstream_offset: Option<i64>,
    /// In a re-checked plan ([`recheck`]): how the saved plan's view of this partition and the
    /// target's now differ, naming both. `None` when they agree or in a fresh plan.
    #[serde(default)]
    pub difference: Option<String>,
}

impl PartitionPlan {
    /// The checkpoint's timestamp, from the plan's time and the age it saw.
    pub(crate) fn checkpoint_timestamp(&self, planned_at_ms: i64) -> i64 {
        planned_at_ms.saturating_sub(self.checkpoint_age_ms)
    }
}

/// One group's plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupPlan {
    /// The group id.
    pub group: String,
    /// The protocol on the target (`absent` when the target does not know the group yet).
    pub protocol: Option<GroupProtocol>,
    /// The state the coordinator reported.
    pub state: Option<String>,
    /// Members when planned.
    pub members: usize,
    /// Whether it may be written.
    #[serde(flatten)]
    pub status: GroupStatus,
    /// The oldest checkpoint among its partitions, in ms.
    pub oldest_checkpoint_age_ms: i64,
    /// Its partitions, sorted by topic and partition.
    pub partitions: Vec<PartitionPlan>,
}

impl GroupPlan {
    /// The partitions an execute writes (none unless the group is ready).
    pub fn to_commit(&self) -> impl Iterator<Item = &PartitionPlan> {
        let ready = self.status == GroupStatus::Ready;
        self.partitions
            .iter()
            .filter(move |p| ready && p.verdict.writes())
    }
}

/// The whole plan: what an execute would write, and why not elsewhere.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplyPlan {
    /// [`PLAN_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// When it was planned (ms since the epoch).
    pub planned_at_ms: i64,
    /// Per source alias: age in ms of the newest heartbeat on the target (`None`: no
    /// heartbeat found), so that an idle group can be told from a stopped MirrorMaker 2.
    pub heartbeat_age_ms: BTreeMap<String, Option<i64>>,
    /// Every group, sorted by id.
    pub groups: Vec<GroupPlan>,
    /// The target cluster's id when planned: an execute on another cluster is refused.
    /// `None` in plans of older builds (refused too) or from a broker that reports none.
    #[serde(default)]
    pub cluster_id: Option<String>,
    /// The source cluster aliases whose checkpoints were planned.
    #[serde(default)]
    pub sources: Vec<String>,
    /// The rules the plan was made with; an execute applies the stricter of these and its own.
    /// `None` in plans of older builds (then only the run's rules).
    #[serde(default)]
    pub rules: Option<VerdictRules>,
    /// Where the planned offsets came from. `None` in plans of older builds.
    #[serde(default)]
    pub input: Option<PlanInput>,
}

impl ApplyPlan {
    /// Whether nothing would be written.
    pub fn is_noop(&self) -> bool {
        self.groups.iter().all(|g| g.to_commit().next().is_none())
    }

    /// Whether the target could not be asked about some group (authorization, coordinator):
    /// an error, not a refusal.
    pub fn has_errors(&self) -> bool {
        self.groups
            .iter()
            .any(|g| matches!(g.status, GroupStatus::Error { .. }))
    }

    /// Whether any group or partition is refused, stale, or failed.
    pub fn has_refusals(&self) -> bool {
        self.groups.iter().any(|g| {
            g.status != GroupStatus::Ready || g.partitions.iter().any(|p| p.verdict.is_refusal())
        })
    }

    /// Fails unless the plan was written with this build's [`PLAN_SCHEMA_VERSION`]: a plan
    /// read from a file must be checked before it is executed.
    pub fn check_schema(&self) -> Result<(), PlanSchemaError> {
        if self.schema_version == PLAN_SCHEMA_VERSION {
            Ok(())
        } else {
            Err(PlanSchemaError(self.schema_version))
        }
    }
}

/// A plan written with another schema version.
#[derive(Debug, thiserror::Error)]
#[error(
    "plan schema version {0} is not supported (this build reads version {PLAN_SCHEMA_VERSION})"
)]
pub struct PlanSchemaError(pub u32);

impl crate::translate::MirrorClient {
    /// [`plan`] on this client's cluster, now, reading the heartbeats of each source of
    /// `translation` from its heartbeats topic under this client's replication policy (e.g.
    /// `primary.heartbeats`).
    pub async fn plan_apply(
        &self,
        translation: &Translation,
        options: &ApplyOptions,
        deadline: &Deadline,
    ) -> Result<ApplyPlan, ClientError> {
        let policy = self.replication_policy();
        let sources: BTreeSet<&str> = translation.iter().map(|o| o.source).collect();
        let heartbeats: BTreeMap<String, String> = sources
            .into_iter()
            .map(|s| {
                (
                    s.to_string(),
                    policy.format_remote_topic(s, policy.heartbeats_topic()),
                )
            })
            .collect();
        plan(
            self.kafka(),
            translation,
            &heartbeats,
            options,
            now_ms(),
            deadline,
        )
        .await
    }
}

/// Milliseconds since the epoch, now.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Plans the commit of `translation` on the target `client` at `now_ms`, writing nothing.
///
/// `heartbeat_topics` maps each source alias to its heartbeats topic on the target (e.g.
/// `primary.heartbeats`; [`MirrorClient::plan_apply`](crate::translate::MirrorClient::plan_apply)
/// derives them). A failure to reach the cluster is an `Err`; a group-level failure
/// (authorization, coordinator) is that group's [`GroupStatus::Error`].
pub async fn plan(
    client: &KafkaClient,
    translation: &Translation,
    heartbeat_topics: &BTreeMap<String, String>,
    options: &ApplyOptions,
    now_ms: i64,
    deadline: &Deadline,
) -> Result<ApplyPlan, ClientError> {
    let cluster_id = client.cluster_id(deadline).await?;
    let topics: BTreeSet<&str> = translation.iter().map(|o| o.topic).collect();
    let logs = Arc::new(target_logs(client, &topics, deadline).await?);
    let groups: Vec<String> = translation.groups().iter().map(|g| g.to_string()).collect();
    let coordinators = client.find_group_coordinators(&groups, deadline).await?;
    let mut heartbeat_age_ms = BTreeMap::new();
    for (source, topic) in heartbeat_topics {
        let newest = newest_timestamp(client, topic, deadline).await?;
        heartbeat_age_ms.insert(source.clone(), newest.map(|t| now_ms - t));
    }
    let kinds = non_consumer_groups(client, &coordinators, deadline).await;
    let planned: Vec<GroupPlan> = futures::stream::iter(
        groups
            .iter()
            .map(|group| {
                let coordinator = coordinators.get(group);
                let logs = logs.clone();
                let kind = kinds.get(group);
                async move {
                    let target = match (kind, coordinator) {
                        // A share or streams group is refused before anything else is asked of it.
                        (Some(_), _) => Err(GroupError::Other(String::new())),
                        (None, Some(Ok(c))) => read_group(client, c, group, deadline).await,
                        (None, Some(Err(e))) => Err(GroupError::Unreadable(authz::explain(e))),
                        (None, None) => Err(GroupError::NoCoordinator(format!(
                            "no coordinator answer for group {group:?}"
                        ))),
                    };
                    let mut planned =
                        plan_group(translation, group, target, &logs, options.rules, now_ms);
                    match kind {
                        Some(Ok(group_type)) => {
                            planned.state = Some(group_type.clone());
                            planned.status = GroupStatus::Refused {
                                reason: GroupRefusal::NotConsumerGroup {
                                    group_type: group_type.clone(),
                                },
                            };
                        }
                        Some(Err(message)) => {
                            planned.status = GroupStatus::Error {
                                message: GroupError::KindUnknown(message.clone()),
                            }
                        }
                        None => {}
                    }
                    planned
                }
            })
            // Collected first: a stream that holds the closure across awaits makes rustc fail to
            // prove the whole future `Send` (rust-lang/rust#102211), and `tokio::spawn` refuse it
            // (tests/send_futures.rs). The futures are lazy; collecting them starts nothing.
            .collect::<Vec<_>>(),
    )
    .buffered(options.concurrency.max(1))
    .collect()
    .await;
    let sources: BTreeSet<&str> = translation.iter().map(|o| o.source).collect();
    Ok(ApplyPlan {
        schema_version: PLAN_SCHEMA_VERSION,
        planned_at_ms: now_ms,
        heartbeat_age_ms,
        groups: planned,
        cluster_id,
        sources: sources.into_iter().map(str::to_string).collect(),
        rules: Some(options.rules),
        input: Some(options.input),
    })
}

/// The groups among `coordinators`' keys that their coordinator lists as share or streams
/// groups (with that type), or, for every group of a coordinator that could not be asked, why:
/// without the answer such a group cannot be told from one the target does not know yet.
/// One ListGroups per coordinator, filtered by type where the coordinator offers v5+ (a
/// coordinator without v5 has neither kind).
pub(crate) async fn non_consumer_groups(
    client: &KafkaClient,
    coordinators: &BTreeMap<String, Result<GroupCoordinator, GroupCallError>>,
    deadline: &Deadline,
) -> BTreeMap<String, Result<String, String>> {
    let mut by_coordinator: BTreeMap<&str, (&GroupCoordinator, Vec<&str>)> = BTreeMap::new();
    for (group, coordinator) in coordinators {
        if let Ok(c) = coordinator {
            by_coordinator
                .entry(c.address.as_str())
                .or_insert_with(|| (c, Vec::new()))
                .1
                .push(group);
        }
    }
    let mut out = BTreeMap::new();
    for (coordinator, groups) in by_coordinator.values() {
        match client
            .list_groups(coordinator, &NOT_CONSUMER_GROUP_TYPES, deadline)
            .await
        {
            Ok(None) => {}
            Ok(Some(listed)) => {
                let ours: BTreeSet<&str> = groups.iter().copied().collect();
                for g in listed {
                    let group_type = g.group_type.unwrap_or_default();
                    // The filter already asked for these types; a broker that ignored it still
                    // has its consumer groups pass.
                    if ours.contains(g.group_id.as_str())
                        && NOT_CONSUMER_GROUP_TYPES.contains(&group_type.as_str())
                    {
                        out.insert(g.group_id, Ok(group_type));
                    }
                }
            }
            Err(e) => {
                for group in groups {
                    out.insert(
                        group.to_string(),
                        Err(format!(
                            "cannot list the coordinator's share and streams groups, so the group's kind is unknown: {e}"
                        )),
                    );
                }
            }
        }
    }
    out
}

/// A group's description and committed offsets, or why they could not be read.
pub(crate) async fn read_group(
    client: &KafkaClient,
    coordinator: &GroupCoordinator,
    group: &str,
    deadline: &Deadline,
) -> Result<(GroupDescription, GroupOffsets), GroupError> {
    let description = client
        .describe_group(coordinator, group, deadline)
        .await
        .map_err(|e| GroupError::Unreadable(authz::explain(&e)))?;
    let mut fetched = client
        .fetch_group_offsets(coordinator, &[group.to_string()], deadline)
        .await
        .map_err(|e| GroupError::Unreadable(e.to_string()))?;
    let offsets = fetched
        .remove(group)
        .unwrap_or_else(|| {
            Err(crate::client::GroupCallError {
                group: group.to_string(),
                source: Box::new(ClientError::Protocol {
                    broker: coordinator.address.clone(),
                    request: "OffsetFetch",
                    problem: "no answer for the group".into(),
                }),
            })
        })
        .map_err(|e| GroupError::Unreadable(authz::explain(&e)))?;
    Ok((description, offsets))
}

/// Why a group with this description must not be written, if it must not.
pub(crate) fn refusal(description: &GroupDescription) -> Option<GroupRefusal> {
    if description.is_inactive() {
        return None;
    }
    Some(GroupRefusal::Active {
        protocol: description.protocol,
        state: description.state.clone(),
        members: description.members,
    })
}

fn plan_group(
    translation: &Translation,
    group: &str,
    target: Result<(GroupDescription, GroupOffsets), GroupError>,
    logs: &TargetLogs,
    rules: VerdictRules,
    now_ms: i64,
) -> GroupPlan {
    let (description, offsets, mut status) = match target {
        Ok((d, o)) => {
            let status = match refusal(&d) {
                None => GroupStatus::Ready,
                Some(reason) => GroupStatus::Refused { reason },
            };
            (Some(d), o, status)
        }
        Err(message) => (None, GroupOffsets::new(), GroupStatus::Error { message }),
    };
    let mut denied: BTreeSet<&str> = BTreeSet::new();
    let mut partitions = Vec::new();
    for o in translation.group(group) {
        let age = now_ms.saturating_sub(o.checkpoint_timestamp);
        let (target, log) = target_partition(logs, o.topic, o.partition);
        if target == TargetPartition::NotAuthorized {
            denied.insert(o.topic);
        }
        let current = committed_offset(&offsets, o.topic, o.partition);
        let decision = decide(o.offset, current, target, age, rules);
        partitions.push(PartitionPlan {
            topic: o.topic.to_string(),
            partition: o.partition,
            translated: o.offset,
            offset: decision.offset,
            current,
            log_start: log.map(|l| l.0),
            log_end: log.map(|l| l.1),
            verdict: decision.verdict,
            clamped_from: decision.clamped_from,
            checkpoint_age_ms: age,
            metadata: o.metadata.to_string(),
            topic_id: topic_id(logs, o.topic),
            upstream_offset: Some(o.upstream_offset),
            difference: None,
        });
    }
    partitions.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    // A topic the principal may not describe hides the group's offsets on it (OffsetFetch
    // leaves it out): nothing of the group can be proven safe, so none of it is written.
    if !denied.is_empty() && !matches!(status, GroupStatus::Error { .. }) {
        let reasons: Vec<String> = denied
            .iter()
            .filter_map(|t| match logs.get(*t) {
                Some(TopicLogs::Denied(why)) => Some(why.clone()),
                _ => None,
            })
            .collect();
        status = GroupStatus::Error {
            message: GroupError::TopicsDenied(reasons),
        };
    }
    let oldest_checkpoint_age_ms = partitions
        .iter()
        .map(|p| p.checkpoint_age_ms)
        .max()
        .unwrap_or(0);
    GroupPlan {
        group: group.to_string(),
        protocol: description.as_ref().map(|d| d.protocol),
        state: description.as_ref().map(|d| d.state.clone()),
        members: description.as_ref().map_or(0, |d| d.members),
        status,
        oldest_checkpoint_age_ms,
        partitions,
    }
}

/// What the target says about one topic.
pub(crate) enum TopicLogs {
    /// The topic does not exist.
    Missing,
    /// The principal may not describe it: why, for the operator.
    Denied(String),
    /// Each partition's (log start, log end), and the topic's id (`None`: the broker has none).
    Present(BTreeMap<i32, (i64, i64)>, Option<String>),
}

/// Each target topic, as the target describes it.
pub(crate) type TargetLogs = BTreeMap<String, TopicLogs>;

/// What the target knows of `topic`-`partition`, and its (log start, log end) if it has it.
pub(crate) fn target_partition(
    logs: &TargetLogs,
    topic: &str,
    partition: i32,
) -> (TargetPartition, Option<(i64, i64)>) {
    match logs.get(topic) {
        Some(TopicLogs::Present(parts, _)) => match parts.get(&partition) {
            Some(&(start, end)) => (TargetPartition::Log { start, end }, Some((start, end))),
            None => (TargetPartition::NoPartition, None),
        },
        Some(TopicLogs::Denied(_)) => (TargetPartition::NotAuthorized, None),
        _ => (TargetPartition::NoTopic, None),
    }
}

/// The topic's id on the target, if it exists and has one.
pub(crate) fn topic_id(logs: &TargetLogs, topic: &str) -> Option<String> {
    match logs.get(topic) {
        Some(TopicLogs::Present(_, id)) => id.clone(),
        _ => None,
    }
}

/// The group's committed offset of `topic`-`partition` (`None`: none; a negative stored offset
/// counts as none, as OffsetFetch's -1).
pub(crate) fn committed_offset(offsets: &GroupOffsets, topic: &str, partition: i32) -> Option<i64> {
    offsets
        .get(&(topic.to_string(), partition))
        .map(|c| c.offset)
        .filter(|&c| c >= 0)
}

/// INVALID_TOPIC_EXCEPTION: the broker does not accept the name as a topic name.
const INVALID_TOPIC_EXCEPTION: i16 = 17;

/// Each topic's partitions' (log start, log end) on the target; `None` for a missing topic.
pub(crate) async fn target_logs(
    client: &KafkaClient,
    topics: &BTreeSet<&str>,
    deadline: &Deadline,
) -> Result<TargetLogs, ClientError> {
    let mut out = BTreeMap::new();
    for &topic in topics {
        let info = match client.describe_topic(topic, deadline).await {
            Ok(info) => info,
            Err(ClientError::UnknownTopic { .. }) => {
                out.insert(topic.to_string(), TopicLogs::Missing);
                continue;
            }
            // A name the target refuses as a topic name (INVALID_TOPIC_EXCEPTION: a checkpoint
            // from a source with other naming rules, or a hostile one) cannot exist there:
            // its partitions are `no-such-topic`, and the plan carries on for the others.
            Err(ClientError::Broker { code, .. }) if code == INVALID_TOPIC_EXCEPTION => {
                out.insert(topic.to_string(), TopicLogs::Missing);
                continue;
            }
            // Only the groups on this topic are refused; the others carry on.
            Err(ClientError::Broker { request, code, .. })
                if code == authz::TOPIC_AUTHORIZATION_FAILED =>
            {
                let why = authz::topic_denied(request, topic);
                out.insert(topic.to_string(), TopicLogs::Denied(why));
                continue;
            }
            Err(e) => return Err(e),
        };
        let partitions: Vec<i32> = info.partitions.iter().map(|p| p.partition).collect();
        let isolation = IsolationLevel::ReadUncommitted;
        let starts = client
            .list_offsets(
                &info,
                &partitions,
                OffsetSpec::Earliest,
                isolation,
                deadline,
            )
            .await?;
        let ends = client
            .list_offsets(&info, &partitions, OffsetSpec::Latest, isolation, deadline)
            .await?;
        let logs = starts
            .iter()
            .filter_map(|(p, &start)| ends.get(p).map(|&end| (*p, (start, end))))
            .collect();
        out.insert(
            topic.to_string(),
            TopicLogs::Present(logs, info.topic_id_text()),
        );
    }
    Ok(out)
}

/// The newest batch timestamp among the last records of `topic`'s partitions; `None` when the
/// topic is missing or empty.
async fn newest_timestamp(
    client: &KafkaClient,
    topic: &str,
    deadline: &Deadline,
) -> Result<Option<i64>, ClientError> {
    let info = match client.describe_topic(topic, deadline).await {
        Ok(info) => info,
        Err(ClientError::UnknownTopic { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let partitions: Vec<i32> = info.partitions.iter().map(|p| p.partition).collect();
    let ends = client
        .list_offsets(
            &info,
            &partitions,
            OffsetSpec::Latest,
            IsolationLevel::ReadUncommitted,
            deadline,
        )
        .await?;
    let mut newest = None;
    for (&partition, &end) in &ends {
        if end <= 0 {
            continue;
        }
        let mut stream = client.read_range(
            info.clone(),
            partition,
            end - 1,
            end,
            ReadOptions::default(),
            *deadline,
        );
        while let Some(chunk) = stream.next_chunk().await {
            for batch in Batches::new(&chunk?.records).flatten() {
                let ts = batch.header().max_timestamp;
                newest = Some(newest.map_or(ts, |n: i64| n.max(ts)));
            }
        }
    }
    Ok(newest)
}

#[cfg(test)]
mod tests;
