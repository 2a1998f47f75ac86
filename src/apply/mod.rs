//! `apply`: commit translated offsets on the target cluster, safely, for many groups at once.
//!
//! [`plan`] reads the target (group states, committed offsets, log ranges, topic ids, the
//! cluster id) and decides each partition ([`ApplyVerdict`]) without writing anything; the
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
//! - the book's chapter on apply (what the peers do, and the traps)
//! - Kafka's `AlterConsumerGroupOffsetsHandler`, `ClassicGroup.validateOffsetCommit`,
//!   `ConsumerGroup.validateOffsetCommit`

pub(crate) mod authz;
mod execute;
pub mod journal;
mod logs;
mod probe;
pub(crate) mod read;
mod reason;
mod recheck;
pub(crate) mod share;
pub(crate) mod streams;
mod summary;
mod verdict;

pub(crate) use execute::WAVE;
pub use execute::{
    ApplyReport, CommitState, GroupOutcome, GroupResult, PartitionResult, WriteAhead, execute,
    execute_with, execute_write_ahead,
};
pub(crate) use logs::{TargetLogs, TopicLogs, target_partition, topic_id};
pub use probe::probe_undo_deletes;
pub use reason::{Change, GroupCause, GroupError, GroupRefusal, GroupSkip};
pub use recheck::recheck;
pub use summary::{RunResult, Summary};
pub use verdict::{ApplyVerdict, Decision, TargetPartition, VerdictRules, decide};

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

use crate::client::{
    ClientError, Coordinators, Deadline, GroupDescription, GroupOffsets, GroupProtocol, GroupType,
    IsolationLevel, KafkaClient, OffsetSpec, PartitionsWanted, ReadOptions, found_coordinators,
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
    /// Re-translated from the offset-sync history ([`crate::precise`]): the fresh checkpoint must
    /// have the same upstream offset and a downstream offset no greater than the plan's.
    Precise,
    /// Translated from the source's committed offsets (a share group's start offsets)
    /// ([`PreciseRequest::source_offsets`](crate::precise::PreciseRequest::source_offsets)): the
    /// caller translates the plan's groups from the source's offsets again (as
    /// [`Failback`](Self::Failback) derives from the backup), and the fresh row must give the
    /// same offset from the same source offset. MirrorMaker 2 checkpoints no Streams or share
    /// group, so a checkpoint is no proof here.
    SourceOffsets,
    /// Failed back from the groups' offsets on the backup (`failback`): the caller derives
    /// every row again from the backup and the offset-sync history now, and the fresh row must
    /// give the same offset from the same backup offset.
    Failback,
}

/// How to plan and execute.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ApplyOptions {
    /// The per-partition rules.
    pub rules: VerdictRules,
    /// Where the offsets planned come from (saved in the plan).
    pub input: PlanInput,
    /// OffsetCommits in flight per coordinator (at least 1), each worker on a connection lane
    /// after the first (see [`CommitOptions`](crate::client::CommitOptions)): give the client
    /// `connections_per_broker` of at least `concurrency + 1` for one commit per connection, so
    /// that a connection that breaks makes only its own commit's outcome unknown. The reads
    /// (plan, re-check, read-back) are batched per coordinator and need no window.
    pub concurrency: usize,
    /// Write a Kafka Streams group by the classic route (a fresh id, or an empty classic
    /// group) even on Kafka 4.2 brokers, whose patch release the wire does not tell: set only
    /// when every broker runs 4.2.1 or later ([`GroupRefusal::Kafka20254`]).
    pub streams_on_kafka_4_2: bool,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            rules: VerdictRules::default(),
            input: PlanInput::Checkpoints,
            concurrency: 16,
            streams_on_kafka_4_2: false,
        }
    }
}

impl ApplyOptions {
    /// How the executor and the undo pace their commits: `concurrency` in flight per
    /// coordinator, and no commit started once one's outcome is unknown.
    pub(crate) fn commit_options(&self) -> crate::client::CommitOptions {
        crate::client::CommitOptions {
            in_flight_per_coordinator: self.concurrency.max(1),
            stop_after_unknown: true,
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
#[non_exhaustive]
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
    pub verdict: ApplyVerdict,
    /// Set when [`VerdictRules::clamp`] moved the offset into the log: the verdict it would
    /// have had.
    pub clamped_from: Option<ApplyVerdict>,
    /// The checkpoint's age when planned (now minus its record timestamp), in ms.
    pub checkpoint_age_ms: i64,
    /// The metadata committed with the offset (the source group's).
    pub metadata: String,
    /// The topic's id on the target when planned (Kafka's text form), `None` where the broker
    /// has none or the topic was missing: a recreated topic gets a new id.
    #[serde(default)]
    pub topic_id: Option<String>,
    /// The upstream offset the translated offset came from (the checkpoint's, or the source
    /// group's with [`PlanInput::SourceOffsets`]); `None` in plans of older builds.
    #[serde(default)]
    pub upstream_offset: Option<i64>,
    /// In a re-checked plan ([`recheck`]): how the saved plan's view of this partition and the
    /// target's now differ, naming both. `None` when they agree or in a fresh plan.
    #[serde(default)]
    pub difference: Option<String>,
}

impl PartitionPlan {
    /// A partition to commit at `offset` with `verdict`, translated to the same offset, with
    /// nothing else known (no committed offset, no log ends, no metadata): set the other
    /// fields as needed, e.g. to build a plan by hand or in a test.
    pub fn new(
        topic: impl Into<String>,
        partition: i32,
        offset: i64,
        verdict: ApplyVerdict,
    ) -> Self {
        PartitionPlan {
            topic: topic.into(),
            partition,
            translated: offset,
            offset,
            current: None,
            log_start: None,
            log_end: None,
            verdict,
            clamped_from: None,
            checkpoint_age_ms: 0,
            metadata: String::new(),
            topic_id: None,
            upstream_offset: None,
            difference: None,
        }
    }

    /// The checkpoint's timestamp, from the plan's time and the age it saw.
    pub(crate) fn checkpoint_timestamp(&self, planned_at_ms: i64) -> i64 {
        planned_at_ms.saturating_sub(self.checkpoint_age_ms)
    }
}

/// One group's plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GroupPlan {
    /// The group id.
    pub group: String,
    /// The group's type on the source (`consumer` for every checkpointed group, `streams` or
    /// `share` for a group read with `--from-source-offsets`): what the execute-time re-check,
    /// undo and failback re-read the target as. A share group's start offsets are set with
    /// AlterShareGroupOffsets ([`share`](self)), never committed. A plan without it (of an older
    /// build) is of consumer groups.
    #[serde(default)]
    pub group_type: crate::client::GroupType,
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
    /// Whether the principal may delete the group's offsets (DELETE on the group), as the
    /// coordinator's authorized operations said when planned; `None`: it did not say (the
    /// group does not exist yet, or a broker before 2.3). An undo of a partition that had no
    /// offset deletes it (OffsetDelete), so [`undo_blocked`](Self::undo_blocked) needs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub may_delete_offsets: Option<bool>,
}

impl GroupPlan {
    /// Group `group` with `status` and `partitions` (sorted here), no members, its oldest
    /// checkpoint age the partitions' greatest; protocol, state and DELETE permission unknown.
    pub fn new(
        group: impl Into<String>,
        status: GroupStatus,
        mut partitions: Vec<PartitionPlan>,
    ) -> Self {
        partitions.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        GroupPlan {
            group: group.into(),
            group_type: crate::client::GroupType::Consumer,
            protocol: None,
            state: None,
            members: 0,
            status,
            oldest_checkpoint_age_ms: partitions
                .iter()
                .map(|p| p.checkpoint_age_ms)
                .max()
                .unwrap_or(0),
            partitions,
            may_delete_offsets: None,
        }
    }

    /// Whether an undo of this group's execute could not run: a partition it writes had no
    /// committed offset (the undo deletes it, OffsetDelete) and the coordinator said the
    /// principal lacks DELETE on the group. `false` when it did not say.
    pub fn undo_blocked(&self) -> bool {
        self.may_delete_offsets == Some(false) && self.to_commit().any(|p| p.current.is_none())
    }

    /// Why an undo of this group's execute could not run ([`undo_blocked`](Self::undo_blocked)),
    /// with the ACL to add; `None` when it could, or when the coordinator did not say.
    pub fn undo_blocked_reason(&self) -> Option<String> {
        if !self.undo_blocked() {
            return None;
        }
        let deletes = self.to_commit().filter(|p| p.current.is_none()).count();
        Some(format!(
            "{deletes} partition(s) it writes had no committed offset, so its undo deletes them \
             (OffsetDelete), and {}",
            authz::lacks("OffsetDelete", &self.group)
        ))
    }

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
#[non_exhaustive]
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
    /// A plan of this build's [`PLAN_SCHEMA_VERSION`], made at `planned_at_ms`, of `groups`
    /// (sorted here), with no heartbeats, sources, cluster id, rules or input recorded.
    pub fn new(planned_at_ms: i64, mut groups: Vec<GroupPlan>) -> Self {
        groups.sort_by(|a, b| a.group.cmp(&b.group));
        ApplyPlan {
            schema_version: PLAN_SCHEMA_VERSION,
            planned_at_ms,
            heartbeat_age_ms: BTreeMap::new(),
            groups,
            cluster_id: None,
            sources: Vec::new(),
            rules: None,
            input: None,
        }
    }

    /// The plan with every field but its groups (none): its head, e.g. to write the groups
    /// apart. A field added to the plan is added here.
    pub fn without_groups(&self) -> ApplyPlan {
        ApplyPlan {
            schema_version: self.schema_version,
            planned_at_ms: self.planned_at_ms,
            heartbeat_age_ms: self.heartbeat_age_ms.clone(),
            groups: Vec::new(),
            cluster_id: self.cluster_id.clone(),
            sources: self.sources.clone(),
            rules: self.rules,
            input: self.input,
        }
    }

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
#[non_exhaustive]
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
            std::time::SystemTime::now(),
            deadline,
        )
        .await
    }
}

/// Milliseconds since the epoch, now.
pub(crate) fn now_ms() -> i64 {
    epoch_ms(std::time::SystemTime::now())
}

/// Milliseconds since the epoch at `time` (0 before it).
pub(crate) fn epoch_ms(time: std::time::SystemTime) -> i64 {
    time.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Whether a run writes, or only says what it would write (a dry run: every check is made and
/// reported, nothing is committed or deleted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Check and report; write nothing.
    DryRun,
    /// Check, then write what the checks allow.
    Execute,
}

impl Mode {
    /// Whether this mode writes.
    pub fn is_execute(self) -> bool {
        self == Mode::Execute
    }
}

/// Plans the commit of `translation` on the target `client` as of `now` (the checkpoints' and
/// heartbeats' ages are taken against it, and it is the plan's `planned_at_ms`), writing
/// nothing.
///
/// `heartbeat_topics` maps each source alias to its heartbeats topic on the target (e.g.
/// `primary.heartbeats`; [`MirrorClient::plan_apply`](crate::translate::MirrorClient::plan_apply)
/// derives them). A failure to reach the cluster is an `Err`; a group-level failure
/// (authorization, coordinator) is that group's [`GroupStatus::Error`].
///
/// Every read is batched: one Metadata for all topics and ListOffsets once per
/// leader, FindCoordinator for up to 1,000 groups a request, one ListGroups per coordinator,
/// then ConsumerGroupDescribe / DescribeGroups and OffsetFetch for many groups a request, every
/// coordinator at once; no read is left in the per-group decisions.
pub async fn plan(
    client: &KafkaClient,
    translation: &Translation,
    heartbeat_topics: &BTreeMap<String, String>,
    options: &ApplyOptions,
    now: std::time::SystemTime,
    deadline: &Deadline,
) -> Result<ApplyPlan, ClientError> {
    let now_ms = epoch_ms(now);
    let topics: BTreeSet<&str> = translation.iter().map(|o| o.topic).collect();
    let groups: Vec<String> = translation.groups().iter().map(|g| g.to_string()).collect();
    let heartbeats = async {
        let mut ages = BTreeMap::new();
        for (source, topic) in heartbeat_topics {
            let newest = newest_timestamp(client, topic, deadline).await?;
            ages.insert(source.clone(), newest.map(|t| now_ms - t));
        }
        Ok::<_, ClientError>(ages)
    };
    let started = std::time::Instant::now();
    // Boxed: their states stay off the stack (see `execute`).
    let (cluster_id, logs, coordinators, heartbeat_age_ms) = futures::try_join!(
        Box::pin(client.cluster_id(deadline)),
        Box::pin(read::target_logs(client, &topics, deadline)),
        Box::pin(client.find_group_coordinators(&groups, deadline)),
        Box::pin(heartbeats),
    )?;
    let mut kinds = read::non_consumer_groups(client, &coordinators, deadline).await;
    // A group that is no consumer or Streams group on the source is refused whatever the
    // target holds, but for a share group, planned against the target's start offsets below.
    let source_types = source_group_types(translation);
    // A source Streams group that is a Streams group on the target too is let through only
    // as far as StreamsGroupDescribe allows (streams.rs).
    let streams_targets = streams::take_streams_targets(&mut kinds, &source_streams(translation));
    let gates = streams::gates(
        client,
        &streams_targets,
        &found_coordinators(&coordinators),
        deadline,
    )
    .await;
    // The Streams groups the commit would create as classic groups, on Kafka 4.2 brokers.
    let kafka_4_2 = streams::kafka_20254(
        client,
        source_streams(translation).keys(),
        &gates,
        options.streams_on_kafka_4_2,
        deadline,
    )
    .await;
    // A share group (or a streams group of a consumer source) is refused before anything
    // else is asked of it.
    let known: Coordinators = found_coordinators(&coordinators)
        .into_iter()
        .filter(|(g, _)| {
            !kinds.contains_key(g)
                && !source_types.contains_key(g.as_str())
                && !matches!(
                    gates.get(g),
                    Some(streams::StreamsGate::Refused(_) | streams::StreamsGate::Unreadable(_))
                )
        })
        .collect();
    let denied = read::denied_topics(&logs);
    let wanted: BTreeMap<String, PartitionsWanted> = known
        .keys()
        .map(|g| {
            let partitions = translation
                .group(g)
                .filter(|o| !denied.contains(o.topic))
                .map(|o| (o.topic, o.partition));
            (g.clone(), read::partitions_of(partitions))
        })
        .collect();
    let mut reads = read::read_groups(client, &wanted, &known, deadline).await;
    // A share group on the source is planned as one: its start offsets against the target's
    // (share::plan_group), never as a consumer group's committed offsets.
    let share_groups: Vec<String> = source_types
        .iter()
        .filter(|(_, t)| ***t == GroupType::Share)
        .map(|(g, _)| g.to_string())
        .collect();
    let mut share_targets =
        share::read_targets(client, &share_groups, &coordinators, deadline).await;
    tracing::debug!(
        groups = groups.len(),
        topics = topics.len(),
        elapsed = ?started.elapsed(),
        "apply plan: target read"
    );
    let planned: Vec<GroupPlan> = groups
        .iter()
        .map(|group| {
            if let Some(target) = share_targets.remove(group) {
                return plan_share_group(translation, group, target, &logs, options.rules, now_ms);
            }
            let kind = kinds.get(group);
            let source_type = source_types.get(group.as_str());
            let gate = gates.get(group);
            let target = match (kind, coordinators.get(group)) {
                _ if source_type.is_some() => Err(GroupError::Other(String::new())),
                _ if matches!(gate, Some(streams::StreamsGate::Refused(_))) => {
                    Err(GroupError::Other(String::new()))
                }
                _ if let Some(streams::StreamsGate::Unreadable(e)) = gate => Err(e.clone()),
                (Some(_), _) => Err(GroupError::Other(String::new())),
                (None, Some(Ok(_))) => match reads.remove(group) {
                    Some(read) => read::checked(read, &denied),
                    None => Err(GroupError::Unreadable(
                        format!("no answer for group {group:?}").into(),
                    )),
                },
                (None, Some(Err(e))) => Err(GroupError::Unreadable(authz::cause(e))),
                (None, None) => Err(GroupError::NoCoordinator(
                    format!("no coordinator answer for group {group:?}").into(),
                )),
            };
            let mut planned = plan_group(translation, group, target, &logs, options.rules, now_ms);
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
                        message: GroupError::KindUnknown(message.clone().into()),
                    }
                }
                None => {}
            }
            match gate {
                Some(streams::StreamsGate::Refused(reason)) => {
                    planned.status = GroupStatus::Refused {
                        reason: reason.clone(),
                    };
                }
                Some(streams::StreamsGate::Open {
                    state,
                    may_delete_offsets,
                    exists,
                }) => {
                    // DescribeGroups does not know a Streams group: show what
                    // StreamsGroupDescribe said. Its "absent" would tell the reader that the
                    // target has no such group, when it holds an empty Streams group (and its
                    // offsets): no classic or consumer protocol, so none (null), as for the
                    // other group types ListGroups names.
                    planned.state = Some(state.clone());
                    planned.may_delete_offsets = *may_delete_offsets;
                    if *exists {
                        planned.protocol = None;
                    }
                }
                _ => {}
            }
            if let Some(group_type) = source_type {
                refuse_source_type(&mut planned, group_type);
            }
            if let Some(refusal) = kafka_4_2.get(group)
                && planned.status == GroupStatus::Ready
            {
                planned.status = GroupStatus::Refused {
                    reason: refusal.clone(),
                };
            }
            planned
        })
        .collect();
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

/// A topic the principal may not describe hides the group's offsets on it (OffsetFetch leaves
/// it out): nothing of the group can be proven safe, so `status` becomes an error naming the
/// topics, unless it is one already.
fn deny_hidden_topics(status: &mut GroupStatus, denied: &BTreeSet<&str>, logs: &TargetLogs) {
    if denied.is_empty() || matches!(status, GroupStatus::Error { .. }) {
        return;
    }
    let reasons: Vec<String> = denied
        .iter()
        .filter_map(|t| match logs.get(*t) {
            Some(TopicLogs::Denied(why)) => Some(why.clone()),
            _ => None,
        })
        .collect();
    *status = GroupStatus::Error {
        message: GroupError::TopicsDenied(reasons),
    };
}

/// One share group's plan: each partition decided against the group's start offsets now.
fn plan_share_group(
    translation: &Translation,
    group: &str,
    target: Result<share::ShareTarget, GroupError>,
    logs: &TargetLogs,
    rules: VerdictRules,
    now_ms: i64,
) -> GroupPlan {
    let (target, mut status) = match target {
        Ok(t) => {
            let status = match t.refusal() {
                None => GroupStatus::Ready,
                Some(reason) => GroupStatus::Refused { reason },
            };
            (Some(t), status)
        }
        Err(message) => (None, status_of_error(message)),
    };
    let empty = GroupOffsets::new();
    let offsets = target.as_ref().map_or(&empty, |t| &t.offsets);
    let mut denied: BTreeSet<&str> = BTreeSet::new();
    let mut partitions: Vec<PartitionPlan> = Vec::new();
    for o in translation.group(group) {
        let age = now_ms.saturating_sub(o.checkpoint_timestamp);
        let (where_, log) = target_partition(logs, o.topic, o.partition);
        if where_ == TargetPartition::NotAuthorized {
            denied.insert(o.topic);
        }
        let current = committed_offset(offsets, o.topic, o.partition);
        let decision = decide(o.offset, current, where_, age, rules);
        let mut p = PartitionPlan::new(o.topic, o.partition, decision.offset, decision.verdict);
        p.translated = o.offset;
        p.current = current;
        p.log_start = log.map(|l| l.0);
        p.log_end = log.map(|l| l.1);
        p.clamped_from = decision.clamped_from;
        p.checkpoint_age_ms = age;
        p.topic_id = topic_id(logs, o.topic);
        p.upstream_offset = Some(o.upstream_offset);
        partitions.push(p);
    }
    deny_hidden_topics(&mut status, &denied, logs);
    let mut plan = GroupPlan::new(group, status, partitions);
    plan.group_type = GroupType::Share;
    if target.as_ref().is_some_and(|t| !t.supported) {
        // Nothing of the target was read: every row says why, as for any other type.
        refuse_source_type(&mut plan, &GroupType::Share);
        return plan;
    }
    if let Some(t) = &target {
        plan.state = Some(t.state.state.clone()).filter(|s| !s.is_empty());
        plan.members = t.state.members.len();
        plan.protocol = (!t.state.exists).then_some(GroupProtocol::Absent);
    }
    plan
}

/// The groups of `translation` that are Kafka Streams groups on the source, with the topics
/// the plan writes for each.
fn source_streams(translation: &Translation) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for o in translation.iter() {
        if o.group_type == &crate::client::GroupType::Streams {
            out.entry(o.group.to_string())
                .or_default()
                .insert(o.topic.to_string());
        }
    }
    out
}

/// The groups of `translation` that apply refuses by their type on the source (neither
/// consumer, Streams nor share groups: share groups are planned by [`plan_share_group`]), with
/// their type.
fn source_group_types(translation: &Translation) -> BTreeMap<&str, &crate::client::GroupType> {
    let mut types = BTreeMap::new();
    for o in translation.iter() {
        if !o.group_type.is_consumer() && o.group_type != &crate::client::GroupType::Streams {
            types.insert(o.group, o.group_type);
        }
    }
    types
}

/// Refuses `planned`, a group of `group_type` on the source: every row says
/// `source-not-consumer-group`, the status names the type, and nothing of the target is shown
/// (it was not read).
fn refuse_source_type(planned: &mut GroupPlan, group_type: &crate::client::GroupType) {
    planned.status = GroupStatus::Refused {
        reason: GroupRefusal::SourceNotConsumerGroup {
            group_type: group_type.name().to_string(),
        },
    };
    for p in &mut planned.partitions {
        p.verdict = ApplyVerdict::SourceNotConsumerGroup;
        p.clamped_from = None;
        p.offset = p.translated;
    }
}

/// The status of a group whose read failed: refused when the read found it must not be
/// written (a pending transaction), else an error.
pub(crate) fn status_of_error(message: GroupError) -> GroupStatus {
    match message.as_refusal() {
        Some(reason) => GroupStatus::Refused {
            reason: reason.clone(),
        },
        None => GroupStatus::Error { message },
    }
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
        Err(message) => (None, GroupOffsets::new(), status_of_error(message)),
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
        let mut decision = decide(o.offset, current, target, age, rules);
        if o.unknown_version && decision.verdict != ApplyVerdict::InvalidOffset {
            decision.verdict = ApplyVerdict::UnknownCheckpointVersion;
        }
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
    if let Some(raw) = translation.group_id_not_utf8(group) {
        status = GroupStatus::Refused {
            reason: GroupRefusal::GroupIdNotUtf8 { raw },
        };
    }
    let whole_group = match &status {
        // Nothing of the group can be judged while the transaction is open: every row says so.
        GroupStatus::Refused {
            reason: GroupRefusal::PendingTransaction { .. },
        } => Some(ApplyVerdict::PendingTransaction),
        GroupStatus::Refused {
            reason: GroupRefusal::GroupIdNotUtf8 { .. },
        } => Some(ApplyVerdict::GroupIdNotUtf8),
        _ => None,
    };
    if let Some(verdict) = whole_group {
        for p in &mut partitions {
            p.verdict = verdict;
        }
    }
    deny_hidden_topics(&mut status, &denied, logs);
    let oldest_checkpoint_age_ms = partitions
        .iter()
        .map(|p| p.checkpoint_age_ms)
        .max()
        .unwrap_or(0);
    GroupPlan {
        group: group.to_string(),
        group_type: translation
            .group(group)
            .next()
            .map(|o| o.group_type.clone())
            .unwrap_or_default(),
        protocol: description.as_ref().map(|d| d.protocol),
        state: description.as_ref().map(|d| d.state.clone()),
        members: description.as_ref().map_or(0, |d| d.members),
        status,
        oldest_checkpoint_age_ms,
        partitions,
        may_delete_offsets: description.as_ref().and_then(|d| d.may_delete_offsets()),
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
#[cfg(test)]
mod wave_tests;
