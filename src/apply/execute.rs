//! Executing a plan: re-derive, commit what both the plan and the target allow, read back, in
//! waves of groups, each step one batched call.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use super::authz::{self, GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED};
use super::journal::{
    Committed, UndoEnd, UndoGroup, UndoHeader, UndoJournal, UndoPartition, mark, new_run_id,
};
use super::read::{non_consumer_groups, partitions_of};
use super::recheck::{Context, Fresh, check_partition, fresh_groups, moved_offsets, other_cluster};
use super::{
    ApplyOptions, ApplyPlan, ApplyVerdict, Change, GroupCause, GroupError, GroupPlan, GroupRefusal,
    GroupSkip, GroupStatus, PartitionPlan, refusal,
};
use crate::client::{
    CommitCodes, CommitOptions, Coordinators, Deadline, ErrorCode, GroupCallError,
    GroupCoordinator, GroupOffsets, GroupResults, GroupType, KafkaClient, OffsetToCommit,
    PartitionsWanted, found_coordinators,
};
use crate::translate::Translation;

/// UNKNOWN_MEMBER_ID: on an admin commit, the group has (gained) members.
const UNKNOWN_MEMBER_ID: i16 = 25;
/// Per-partition codes after which the commit may or may not have been written:
/// REQUEST_TIMED_OUT and UNKNOWN_SERVER_ERROR.
const OUTCOME_UNKNOWN: [i16; 2] = [7, -1];

/// What became of one partition's commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CommitState {
    /// The coordinator accepted it (see `read_back` for the verification).
    Committed,
    /// The coordinator refused it with an error: not written.
    Failed,
    /// No answer says what happened (lost, timed out, left out of the answer): the offset may
    /// or may not have been written. Read the group's offsets before trying again.
    Unknown,
    /// Not sent: the re-check just before the commit refused it (see `error` for both views).
    Refused,
}

/// What happened to one group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
#[non_exhaustive]
pub enum GroupOutcome {
    /// Every partition sent was committed and read back as planned (partitions the re-check
    /// refused were not sent: their rows say `refused`).
    Applied,
    /// Nothing to write for this group.
    NothingToDo,
    /// Not written: refused when planned, or changed since (members, offsets, topics).
    Skipped {
        /// Why (serialized as the words for the operator).
        reason: GroupSkip,
    },
    /// Some partitions failed (see their results); the others were committed.
    Partial,
    /// Every partition sent was committed (the coordinator acknowledged it), but the read-back
    /// did not find them all as written (it ran out of time, or found another offset): written,
    /// not verified. Read the group's offsets.
    Unverified,
    /// Failed before writing, or its state after the commit is unknown.
    Error {
        /// What failed (serialized as the words for the operator).
        message: GroupError,
        /// Whether the commit may have been written (the answer was lost): its offsets are
        /// unknown and no further group was written after it.
        state_unknown: bool,
    },
}

/// One partition's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PartitionResult {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset sent.
    pub offset: i64,
    /// What became of it.
    pub state: CommitState,
    /// Why it failed or is unknown, if it did not commit (e.g. `TOPIC_AUTHORIZATION_FAILED
    /// (code 29)` and the missing permission).
    pub error: Option<String>,
    /// The offset read back after the commit (`None`: not read back or none).
    pub read_back: Option<i64>,
    /// The group's committed offset the re-check saw just before the commit (`None`: none),
    /// so that the write can be undone.
    pub committed_before: Option<i64>,
    /// The verdict the re-check derived just before the commit: `commit` for a partition sent,
    /// the refusal for one the re-check refused.
    pub verdict: ApplyVerdict,
}

/// One group's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GroupResult {
    /// The group id.
    pub group: String,
    /// What happened.
    #[serde(flatten)]
    pub outcome: GroupOutcome,
    /// The partitions committed (empty unless a commit was sent).
    pub partitions: Vec<PartitionResult>,
}

impl PartitionResult {
    /// Partition `partition` of `topic`, `offset` sent with `verdict` and ending in `state`;
    /// no error, nothing read back, nothing committed before.
    pub fn new(
        topic: impl Into<String>,
        partition: i32,
        offset: i64,
        state: CommitState,
        verdict: ApplyVerdict,
    ) -> Self {
        PartitionResult {
            topic: topic.into(),
            partition,
            offset,
            state,
            error: None,
            read_back: None,
            committed_before: None,
            verdict,
        }
    }
}

impl GroupResult {
    /// Group `group` with `outcome` and the `partitions` committed.
    pub fn new(
        group: impl Into<String>,
        outcome: GroupOutcome,
        partitions: Vec<PartitionResult>,
    ) -> Self {
        GroupResult {
            group: group.into(),
            outcome,
            partitions,
        }
    }
}

/// What an execute did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ApplyReport {
    /// Every group of the plan, sorted by id.
    pub groups: Vec<GroupResult>,
}

impl ApplyReport {
    /// Partitions committed and verified.
    pub fn committed(&self) -> usize {
        self.groups
            .iter()
            .flat_map(|g| &g.partitions)
            .filter(|p| p.state == CommitState::Committed && p.read_back == Some(p.offset))
            .count()
    }

    /// Whether any group failed with an error.
    pub fn has_errors(&self) -> bool {
        self.groups.iter().any(|g| {
            matches!(
                g.outcome,
                GroupOutcome::Error { .. } | GroupOutcome::Partial
            )
        })
    }

    /// Whether any group was skipped, or any partition refused by the re-check.
    pub fn has_skips(&self) -> bool {
        self.groups.iter().any(|g| {
            matches!(g.outcome, GroupOutcome::Skipped { .. })
                || g.partitions.iter().any(|p| p.state == CommitState::Refused)
        })
    }
}

/// Commits `plan`'s `commit` partitions of its ready groups, where the target still allows it.
///
/// [`execute_with`] without checkpoints read again, within `deadline` (the re-checks, the
/// commits and the read-back share it): each partition's offset and checkpoint age are the
/// plan's claims, everything else is read from the target just before the commit.
pub async fn execute(
    client: &KafkaClient,
    plan: &ApplyPlan,
    options: &ApplyOptions,
    deadline: &Deadline,
) -> ApplyReport {
    execute_with(client, plan, None, options, deadline).await
}

/// Groups re-checked, then committed, then read back together. The re-check reads a wave's
/// groups and topics in a few batched requests just before the wave's commits, so that what it
/// saw is at most one wave's commits old (a fraction of a second on one broker), never the
/// run's; and it keeps each batched request far below the request size limits.
pub(crate) const WAVE: usize = 500;

/// Commits `plan`'s `commit` partitions of its ready groups, where the target still allows it,
/// all within `deadline`.
///
/// First the cluster: a plan made for another cluster (or naming none) is refused whole. Then
/// one batched coordinator lookup and one ListGroups per coordinator (a group that became a
/// share or streams group is not written). Then, wave after wave of 500 groups, just
/// before the wave's commits: a re-read of its groups (still without members, committed offsets
/// those the plan saw, else the group is skipped and named), of its topics' logs and ids, and of
/// `checkpoints` when given (the checkpoints read again from the plan's sources); every
/// partition's verdict derived again with the stricter of the plan's rules and `options.rules`
/// (see [`recheck`](super::recheck)); one admin OffsetCommit per group for the partitions both
/// the plan and the fresh derivation commit, at the same offset, `options.concurrency` in
/// flight per coordinator; one batched OffsetFetch to read them back. A partition the re-check
/// refuses is not sent and its row names both views. Once a commit's outcome is unknown (its
/// answer lost, or a partition's), no further commit is started: groups already sent finish,
/// the others are reported not written.
///
/// Reads stop at `deadline` (those groups are errors, nothing written); no commit starts after
/// it, and a commit already sent waits for its answer.
pub async fn execute_with(
    client: &KafkaClient,
    plan: &ApplyPlan,
    checkpoints: Option<&Translation>,
    options: &ApplyOptions,
    deadline: &Deadline,
) -> ApplyReport {
    execute_in_waves(
        client,
        plan,
        checkpoints,
        options,
        deadline,
        (WAVE, WriteAhead::default()),
    )
    .await
}

/// What guards an execute besides the plan's re-checks: the undo journal written ahead of
/// every commit, and a flag that stops it (an interrupt).
///
/// ```
/// use std::sync::atomic::AtomicBool;
/// use mm2_offsets::apply::WriteAhead;
/// use mm2_offsets::apply::journal::FileJournal;
///
/// # fn main() -> std::io::Result<()> {
/// # let dir = std::env::temp_dir().join(format!("mm2o-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let mut journal = FileJournal::create(&dir.join("undo.jsonl"))?; // refuses an existing path
/// static STOP: AtomicBool = AtomicBool::new(false); // set by a signal handler
/// let mut guard = WriteAhead::default();
/// guard.journal = Some(&mut journal);
/// guard.stop = Some(&STOP);
/// // apply::execute_write_ahead(&client, &plan, None, &options, &deadline, guard).await
/// # drop(guard);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Default)]
#[non_exhaustive]
pub struct WriteAhead<'a> {
    /// Where each wave's previous offsets are recorded, durably, before its commits are sent
    /// (see [`journal`](super::journal)). With it, every commit's metadata also carries the
    /// run id ([`mark`]).
    pub journal: Option<&'a mut dyn UndoJournal>,
    /// Once true, no further wave's commits are sent: those in flight settle, and the groups
    /// not sent are reported not written.
    pub stop: Option<&'a AtomicBool>,
}

impl std::fmt::Debug for WriteAhead<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteAhead")
            .field("journal", &self.journal.is_some())
            .field("stop", &self.stop)
            .finish()
    }
}

/// [`execute_with`], guarded by `guard`: with a journal, each wave's groups (what each held
/// just before the commit, as the re-check's OffsetFetch read it, and what will be written) are
/// recorded and flushed before that wave's commits are sent, after the journal's header (the
/// target's cluster id, a fresh run id, the time). A journal that cannot be written stops the
/// run: no further commit is sent, and the groups not sent are errors that say why (nothing
/// written). A target without a cluster id is not written at all (the undo could not be bound
/// to it). With `stop`, once it is set, no further wave's commits are sent.
pub async fn execute_write_ahead(
    client: &KafkaClient,
    plan: &ApplyPlan,
    checkpoints: Option<&Translation>,
    options: &ApplyOptions,
    deadline: &Deadline,
    guard: WriteAhead<'_>,
) -> ApplyReport {
    execute_in_waves(client, plan, checkpoints, options, deadline, (WAVE, guard)).await
}

/// [`execute_write_ahead`] in waves of `wave` groups.
pub(crate) async fn execute_in_waves(
    client: &KafkaClient,
    plan: &ApplyPlan,
    checkpoints: Option<&Translation>,
    options: &ApplyOptions,
    deadline: &Deadline,
    (wave, mut guard): (usize, WriteAhead<'_>),
) -> ApplyReport {
    let context = Context::new(plan, checkpoints, options);
    let writable: Vec<String> = plan
        .groups
        .iter()
        .filter(|g| g.to_commit().next().is_some())
        .map(|g| g.group.clone())
        .collect();
    // The cluster first: nothing of a plan made for another cluster is written.
    let mut target_id = None;
    let cluster = if writable.is_empty() {
        Ok(None)
    } else {
        match client.cluster_id(deadline).await {
            Ok(found) => {
                let other = other_cluster(plan, &found);
                target_id = found;
                Ok(other)
            }
            Err(e) => Err(GroupCause::client(
                &e,
                format!("cannot read the target's cluster id: {e}"),
            )),
        }
    };
    // The journal's header before anything else: a run that cannot record its way back
    // writes nothing.
    let run_id = guard.journal.is_some().then(new_run_id);
    let mut journal_error: Option<String> = None;
    if let (Ok(None), false, Some(journal), Some(run_id)) = (
        &cluster,
        writable.is_empty(),
        guard.journal.as_deref_mut(),
        &run_id,
    ) {
        journal_error = match target_id.take() {
            None => Some(
                "the target names no cluster id, so an undo could not be bound to it; nothing committed"
                    .to_string(),
            ),
            Some(id) => journal
                .begin(&UndoHeader::new(id, run_id.clone(), super::now_ms()))
                .err()
                .map(|e| format!("the undo journal could not be written ({e}); nothing committed")),
        };
    }
    let coordinators = match &cluster {
        Ok(None) if !writable.is_empty() && journal_error.is_none() => {
            client.find_group_coordinators(&writable, deadline).await
        }
        _ => Ok(Default::default()),
    };
    // Re-checked like members and offsets: a group that became a share or streams group since
    // the plan is not written.
    let mut kinds = match &coordinators {
        Ok(map) => non_consumer_groups(client, map, deadline).await,
        Err(_) => Default::default(),
    };
    // A Streams group of the plan that is a Streams group on the target: re-read with
    // StreamsGroupDescribe (members, state, topology) rather than refused by kind.
    let streams_targets =
        super::streams::take_streams_targets(&mut kinds, &super::recheck::planned_streams(plan));
    let gates = match &coordinators {
        Ok(map) => {
            super::streams::gates(client, &streams_targets, &found_coordinators(map), deadline)
                .await
        }
        Err(_) => Default::default(),
    };
    // KAFKA-20254 judged from the target now, as the plan did (see streams::kafka_20254).
    let kafka_4_2 = match &coordinators {
        Ok(_) => {
            super::streams::kafka_20254(
                client,
                super::recheck::planned_streams(plan).keys(),
                &gates,
                options.streams_on_kafka_4_2,
                deadline,
            )
            .await
        }
        Err(_) => Default::default(),
    };
    // What every writable group gets when the cluster is not the plan's (or cannot be asked).
    let blocked: Option<GroupOutcome> = match &cluster {
        Ok(None) => journal_error
            .as_ref()
            .map(|e| error(GroupError::NotWritten(e.clone().into()), false)),
        Ok(Some(refusal)) => Some(changed(Change::Refused(refusal.clone()))),
        Err(e) => Some(error(GroupError::Unreadable(e.clone()), false)),
    };
    let known = match &coordinators {
        Ok(map) => found_coordinators(map),
        Err(_) => Coordinators::new(),
    };
    let listed = plan.groups.iter().fold(BTreeMap::new(), |mut n, g| {
        *n.entry(g.group.as_str()).or_insert(0usize) += 1;
        n
    });
    // Each group's outcome decided before any re-read, or the group to write.
    let mut decided: Vec<Option<Outcome>> = Vec::with_capacity(plan.groups.len());
    let mut ready: Vec<&GroupPlan> = Vec::new();
    let mut share_ready: Vec<&GroupPlan> = Vec::new();
    for g in &plan.groups {
        let coordinator = match &coordinators {
            Ok(map) => map
                .get(&g.group)
                .map(|r| r.as_ref().map(|_| ()).map_err(authz::explain)),
            Err(e) => Some(Err(e.to_string())),
        };
        // A share group's target is checked by its own re-read (share.rs): the target's
        // listing it as a share group is what it must be. A Streams group's by its gate.
        let share = g.group_type == GroupType::Share;
        let kind = kinds.get(&g.group).filter(|_| !share);
        let outcome =
            before_reading(g, blocked.as_ref(), kind, coordinator).or_else(|| {
                match gates.get(&g.group) {
                    Some(super::streams::StreamsGate::Refused(reason)) => {
                        Some((changed(Change::Refused(reason.clone())), vec![]))
                    }
                    Some(super::streams::StreamsGate::Unreadable(e)) => {
                        Some((error(e.clone(), false), vec![]))
                    }
                    _ => kafka_4_2
                        .get(&g.group)
                        .map(|reason| (changed(Change::Refused(reason.clone())), vec![])),
                }
            });
        let outcome = match outcome {
            None if listed.get(g.group.as_str()).copied().unwrap_or(0) > 1 => Some((
                error(
                    GroupError::NotWritten(
                        format!(
                            "the plan lists group {:?} more than once; plan again",
                            g.group
                        )
                        .into(),
                    ),
                    false,
                ),
                vec![],
            )),
            other => other,
        };
        match outcome {
            None if share => share_ready.push(g),
            None => ready.push(g),
            Some(_) => {}
        }
        decided.push(outcome);
    }
    let commit_options = options.commit_options();
    let mut written: BTreeMap<String, Outcome> = BTreeMap::new();
    let mut unknown = false;
    let waves: Vec<&[&GroupPlan]> = ready.chunks(wave.max(1)).collect();
    let mut next: Option<Rechecked> = None;
    // Why no further commit is sent (an interrupt, a journal that could not be written).
    let mut stopped: Option<String> = None;
    let mut recorded = 0usize;
    for (i, wave) in waves.iter().enumerate() {
        if unknown {
            for g in *wave {
                written.insert(g.group.clone(), halted());
            }
            continue;
        }
        if stopped.is_none() {
            stopped = interrupted(&guard);
        }
        if let Some(why) = &stopped {
            for g in *wave {
                written.insert(g.group.clone(), not_sent(why));
            }
            continue;
        }
        let started = std::time::Instant::now();
        let mut rechecked = match next.take() {
            Some(rechecked) => rechecked,
            None => Box::pin(recheck_wave(client, wave, &context, &known, deadline)).await,
        };
        let recheck_took = rechecked.took;
        // Checked again just before the commits: the re-check may have taken a while.
        stopped = interrupted(&guard);
        if stopped.is_none()
            && let Some(journal) = guard.journal.as_deref_mut()
        {
            let rows: Vec<UndoGroup> = rechecked.passed.values().map(|p| p.undo.clone()).collect();
            match journal.record(&rows) {
                Ok(()) => recorded += rows.len(),
                Err(e) => {
                    stopped = Some(format!(
                        "not sent: the undo journal could not be written ({e}), so no further commit was made"
                    ));
                }
            }
        }
        if let Some(why) = &stopped {
            for (group, _) in std::mem::take(&mut rechecked.passed) {
                rechecked.outcomes.insert(group.to_string(), not_sent(why));
            }
            written.extend(rechecked.outcomes);
            continue;
        }
        // The next wave is re-read while this one commits (reads on their own connection, the
        // commits on theirs): still just before its own commits, one wave's commits earlier.
        let ahead = async {
            match waves.get(i + 1) {
                Some(following) => Some(
                    Box::pin(recheck_wave(client, following, &context, &known, deadline)).await,
                ),
                None => None,
            }
        };
        // Boxed, as every concurrent pair of calls here: their states stay off the stack
        // (a debug build's nested polls otherwise outgrow a 2 MiB thread stack).
        let (done, ahead) = futures::join!(
            Box::pin(commit_wave(
                client,
                (rechecked, run_id.as_deref()),
                &known,
                &commit_options,
                deadline
            )),
            Box::pin(ahead)
        );
        next = ahead;
        unknown |= done.unknown;
        tracing::debug!(
            groups = wave.len(),
            recheck = ?recheck_took,
            commits = ?done.timings[0],
            read_back = ?done.timings[1],
            elapsed = ?started.elapsed(),
            "apply execute: wave"
        );
        written.extend(done.outcomes);
    }
    // Share groups after the consumer groups, one by one, with the same stops.
    if !share_ready.is_empty() {
        if stopped.is_none() {
            stopped = interrupted(&guard);
        }
        if unknown {
            for g in &share_ready {
                written.insert(g.group.clone(), halted());
            }
        } else if let Some(why) = &stopped {
            for g in &share_ready {
                written.insert(g.group.clone(), not_sent(why));
            }
        } else {
            let (outcomes, n, stop) = execute_share_groups(
                client,
                &share_ready,
                &context,
                guard.journal.as_deref_mut(),
                deadline,
            )
            .await;
            recorded += n;
            if stop.is_some() {
                stopped = stop;
            }
            written.extend(outcomes);
        }
    }
    if let (Some(journal), Some(_)) = (guard.journal.as_deref_mut(), &run_id)
        && journal_error.is_none()
        && !writable.is_empty()
    {
        let end = UndoEnd {
            finished_at_ms: super::now_ms(),
            groups: recorded,
            stopped: stopped.clone(),
        };
        // Best effort: every group is recorded already; a missing last line only says the
        // run did not finish.
        if let Err(e) = journal.finish(&end) {
            tracing::warn!("the undo journal's last line could not be written: {e}");
        }
    }
    let groups = plan
        .groups
        .iter()
        .zip(decided)
        .map(|(g, outcome)| {
            let (outcome, partitions) = outcome
                .or_else(|| written.remove(&g.group))
                .unwrap_or_else(|| {
                    (
                        error(
                            GroupError::NotWritten("the executor reached no outcome".into()),
                            false,
                        ),
                        vec![],
                    )
                });
            GroupResult {
                group: g.group.clone(),
                outcome,
                partitions,
            }
        })
        .collect();
    ApplyReport { groups }
}

/// A group's outcome and its partitions' rows.
type Outcome = (GroupOutcome, Vec<PartitionResult>);

/// The outcome of a group decided without reading it again: refused or failed when planned,
/// nothing to write, another cluster, another kind of group, no coordinator. `None`: the group
/// is to be re-checked and written.
fn before_reading(
    g: &GroupPlan,
    blocked: Option<&GroupOutcome>,
    kind: Option<&Result<String, String>>,
    coordinator: Option<Result<(), String>>,
) -> Option<Outcome> {
    let outcome = match (&g.status, g.to_commit().next(), kind, coordinator) {
        (GroupStatus::Refused { reason }, _, _, _) => skipped(GroupSkip::Refused(reason.clone())),
        // The target could not be asked about the group when planned: an error, not a
        // refusal (authorization, coordinator), and nothing is written.
        (GroupStatus::Error { message }, _, _, _) => error(message.clone(), false),
        (GroupStatus::Ready, None, _, _) => GroupOutcome::NothingToDo,
        // Another cluster, or one whose id could not be read: nothing is written.
        (GroupStatus::Ready, Some(_), _, _) if blocked.is_some() => {
            blocked.cloned().unwrap_or(GroupOutcome::NothingToDo)
        }
        (GroupStatus::Ready, Some(_), Some(Ok(group_type)), _) => {
            changed(Change::Refused(GroupRefusal::NotConsumerGroup {
                group_type: group_type.clone(),
            }))
        }
        (GroupStatus::Ready, Some(_), Some(Err(message)), _) => {
            error(GroupError::KindUnknown(message.clone().into()), false)
        }
        (GroupStatus::Ready, Some(_), None, Some(Ok(()))) => return None,
        (GroupStatus::Ready, Some(_), None, Some(Err(message))) => {
            error(GroupError::Unreadable(message.into()), false)
        }
        (GroupStatus::Ready, Some(_), None, None) => error(
            GroupError::NoCoordinator("no coordinator answer for the group".into()),
            false,
        ),
    };
    Some((outcome, vec![]))
}

/// Writes each share group of `groups` (planned ready, with partitions to commit): re-read
/// and re-derived just before its write, its undo recorded in `journal` first, set with
/// AlterShareGroupOffsets, read back. Returns each group's outcome, how many groups the
/// journal recorded, and why writing stopped (a journal that could not be written).
async fn execute_share_groups(
    client: &KafkaClient,
    groups: &[&GroupPlan],
    context: &Context,
    mut journal: Option<&mut (dyn UndoJournal + '_)>,
    deadline: &Deadline,
) -> (BTreeMap<String, Outcome>, usize, Option<String>) {
    let mut outcomes = BTreeMap::new();
    let mut recorded = 0usize;
    let mut stopped: Option<String> = None;
    for plan in groups {
        if let Some(why) = &stopped {
            outcomes.insert(plan.group.clone(), not_sent(why));
            continue;
        }
        let passed = match recheck_share(client, plan, context, deadline).await {
            Ok(passed) => passed,
            Err(outcome) => {
                outcomes.insert(plan.group.clone(), outcome);
                continue;
            }
        };
        let (passed, coordinator) = passed;
        if let Some(journal) = journal.as_deref_mut() {
            match journal.record(std::slice::from_ref(&passed.undo)) {
                Ok(()) => recorded += 1,
                Err(e) => {
                    let why = format!(
                        "not sent: the undo journal could not be written ({e}), so no further write was made"
                    );
                    outcomes.insert(plan.group.clone(), not_sent(&why));
                    stopped = Some(why);
                    continue;
                }
            }
        }
        let outcome = write_share(client, &plan.group, passed, &coordinator, deadline).await;
        outcomes.insert(plan.group.clone(), outcome);
    }
    (outcomes, recorded, stopped)
}

/// The group read again and every partition derived again, as for a consumer group.
async fn recheck_share<'a>(
    client: &KafkaClient,
    plan: &'a GroupPlan,
    context: &Context,
    deadline: &Deadline,
) -> Result<(Passed<'a>, GroupCoordinator), Outcome> {
    let group = plan.group.clone();
    let topics: BTreeSet<&str> = plan.partitions.iter().map(|p| p.topic.as_str()).collect();
    let logs = super::read::target_logs(client, &topics, deadline)
        .await
        .map_err(|e| {
            (
                error(
                    GroupError::Unreadable(super::GroupCause::client(
                        &e,
                        format!("cannot read the target's logs: {e}"),
                    )),
                    false,
                ),
                vec![],
            )
        })?;
    let coordinators = client
        .find_group_coordinators(std::slice::from_ref(&group), deadline)
        .await
        .map_err(|e| {
            (
                error(
                    GroupError::NoCoordinator(format!("no coordinator: {e}").into()),
                    false,
                ),
                vec![],
            )
        })?;
    let coordinator = match coordinators.get(&group) {
        Some(Ok(c)) => c.clone(),
        Some(Err(e)) => {
            return Err((
                error(GroupError::Unreadable(authz::cause(e)), false),
                vec![],
            ));
        }
        None => {
            return Err((
                error(
                    GroupError::NoCoordinator("no coordinator answer for the group".into()),
                    false,
                ),
                vec![],
            ));
        }
    };
    let mut targets = super::share::read_targets(
        client,
        std::slice::from_ref(&group),
        &coordinators,
        deadline,
    )
    .await;
    let target = targets
        .remove(&group)
        .unwrap_or_else(|| Err(GroupError::Unreadable("no answer for the group".into())));
    let target = target.map_err(|message| (error(message, false), vec![]))?;
    if let Some(reason) = target.refusal() {
        return Err((changed(Change::Refused(reason)), vec![]));
    }
    let moved = moved_offsets(plan, &target.offsets);
    if !moved.is_empty() {
        return Err((changed(Change::OffsetsMoved(moved)), vec![]));
    }
    let now_ms = super::now_ms();
    let fresh: Vec<PartitionPlan> = plan
        .partitions
        .iter()
        .map(|p| check_partition(context, &group, p, &logs, &target.offsets, now_ms))
        .collect();
    let description = target.description(&group);
    let mut passed = recheck_group(plan, Ok((description, target.offsets, fresh)))?;
    passed.undo.group_type = GroupType::Share;
    Ok((passed, coordinator))
}

/// Sets the passed partitions' start offsets and reads them back.
async fn write_share(
    client: &KafkaClient,
    group: &str,
    passed: Passed<'_>,
    coordinator: &GroupCoordinator,
    deadline: &Deadline,
) -> Outcome {
    let offsets: BTreeMap<(String, i32), i64> = passed
        .to_commit
        .iter()
        .map(|(p, _)| ((p.topic.clone(), p.partition), p.offset))
        .collect();
    let codes = match client
        .alter_share_group_offsets(coordinator, group, &offsets, deadline)
        .await
    {
        Ok(codes) => codes,
        // A share consumer joined since the re-check: nothing was written.
        Err(e) if e.code() == Some(super::share::GROUP_NOT_EMPTY) => {
            return (
                changed(Change::Refused(GroupRefusal::ShareGroupActive {
                    state: "GROUP_NOT_EMPTY".into(),
                    members: Vec::new(),
                })),
                vec![],
            );
        }
        Err(e) if e.code() == Some(super::share::GROUP_ID_NOT_FOUND) => {
            return (
                changed(Change::Refused(GroupRefusal::TargetNotShareGroup {
                    group_type: "other (GROUP_ID_NOT_FOUND from AlterShareGroupOffsets)".into(),
                })),
                vec![],
            );
        }
        Err(e) => {
            // A refusal by code wrote nothing; a lost answer may have written it.
            let unknown = e.code().is_none();
            let why = authz::cause(&e);
            let message = if unknown {
                GroupError::OutcomeUnknown(why)
            } else {
                GroupError::NotWritten(why)
            };
            return (error(message, unknown), vec![]);
        }
    };
    let known: Coordinators = std::iter::once((group.to_string(), coordinator.clone())).collect();
    let mut read_back = client
        .fetch_share_group_offsets(&[group.to_string()], &known, deadline)
        .await;
    let read_back = read_back
        .remove(group)
        .and_then(Result::ok)
        .unwrap_or_default();
    committed_rows(group, passed, &codes, &read_back)
}

/// One wave re-checked: the outcomes of the groups that will not be written, and the groups
/// that passed.
struct Rechecked<'a> {
    outcomes: BTreeMap<String, Outcome>,
    passed: BTreeMap<&'a str, Passed<'a>>,
    took: std::time::Duration,
}

/// What one wave did.
struct Wave {
    outcomes: BTreeMap<String, Outcome>,
    /// Whether a commit's outcome is unknown: no later wave is written.
    unknown: bool,
    /// Commits, read-back.
    timings: [std::time::Duration; 2],
}

/// One group of a wave that passed its re-check: the plan's partitions to commit, each with the
/// committed offset the re-check saw, and the rows of the partitions the re-check refused.
struct Passed<'a> {
    to_commit: Vec<(&'a PartitionPlan, Option<i64>)>,
    refused: Vec<PartitionResult>,
    /// What the journal records before the commit: each partition to commit, what it held.
    undo: UndoGroup,
}

/// Re-checks `wave` in one batched read (members, offsets unchanged since the plan, then every
/// partition derived again from the target as it is now).
async fn recheck_wave<'a>(
    client: &KafkaClient,
    wave: &[&'a GroupPlan],
    context: &Context,
    known: &Coordinators,
    deadline: &Deadline,
) -> Rechecked<'a> {
    let clock = std::time::Instant::now();
    let mut outcomes: BTreeMap<String, Outcome> = BTreeMap::new();
    let mut fresh = fresh_groups(client, wave, context, known, deadline).await;
    let mut passed: BTreeMap<&str, Passed> = BTreeMap::new();
    for plan in wave {
        let read = fresh
            .remove(&plan.group)
            .unwrap_or_else(|| Err(GroupError::Unreadable("no answer for the group".into())));
        match recheck_group(plan, read) {
            Ok(p) => {
                passed.insert(&plan.group, p);
            }
            Err(outcome) => {
                outcomes.insert(plan.group.clone(), outcome);
            }
        }
    }
    Rechecked {
        outcomes,
        passed,
        took: clock.elapsed(),
    }
}

/// Commits the groups of a re-checked wave and reads them back.
async fn commit_wave(
    client: &KafkaClient,
    (rechecked, run_id): (Rechecked<'_>, Option<&str>),
    known: &Coordinators,
    commit_options: &CommitOptions,
    deadline: &Deadline,
) -> Wave {
    let clock = std::time::Instant::now();
    let Rechecked {
        mut outcomes,
        passed,
        ..
    } = rechecked;
    let commits: BTreeMap<String, Vec<OffsetToCommit>> = passed
        .iter()
        .map(|(group, p)| {
            let offsets = p
                .to_commit
                .iter()
                .map(|(p, _)| OffsetToCommit {
                    topic: p.topic.clone(),
                    partition: p.partition,
                    offset: p.offset,
                    // A journaled run marks its commits: the undo's proof that it wrote them.
                    metadata: Some(match run_id {
                        Some(run_id) => mark(&p.metadata, run_id),
                        None => p.metadata.clone(),
                    }),
                })
                .collect();
            (group.to_string(), offsets)
        })
        .collect();
    let mut answers = client
        .commit_offsets(&commits, known, commit_options, deadline)
        .await;
    let committed = clock.elapsed();
    let mut unknown = false;
    // The groups whose commit the coordinator answered, read back below.
    let mut answered: BTreeMap<&str, (Passed, CommitCodes)> = BTreeMap::new();
    for (group, p) in passed {
        let answer = answers.remove(group).unwrap_or_else(|| {
            Err(GroupCallError {
                group: group.to_string(),
                source: Box::new(crate::client::ClientError::Protocol {
                    broker: "the coordinator".into(),
                    request: "OffsetCommit",
                    problem: format!("no outcome for group {group:?}"),
                }),
            })
        });
        let outcome = match answer {
            Ok(codes) if codes.values().any(|&c| c == UNKNOWN_MEMBER_ID) => {
                (skipped(GroupSkip::GainedMembers), vec![])
            }
            Ok(codes) => {
                answered.insert(group, (p, codes));
                continue;
            }
            // Only a commit whose answer was lost may have written; every other failure (a
            // coordinator that kept refusing until the deadline, no connection) wrote nothing.
            Err(e) if e.is_outcome_unknown() => {
                unknown = true;
                let why = format!("no answer from the coordinator ({e})");
                let mut partitions: Vec<PartitionResult> = p
                    .to_commit
                    .iter()
                    .map(|(p, before)| unknown_result(p, *before, &why))
                    .collect();
                partitions.extend(p.refused);
                (
                    error(
                        GroupError::OutcomeUnknown(GroupCause::client(&e.source, e.to_string())),
                        true,
                    ),
                    partitions,
                )
            }
            Err(e) if e.is_halted() => halted(),
            Err(e) => (
                error(
                    GroupError::NotWritten(GroupCause::client(&e.source, e.to_string())),
                    false,
                ),
                p.refused,
            ),
        };
        outcomes.insert(group.to_string(), outcome);
    }
    // Read back what the coordinator answered, in one batched OffsetFetch of those partitions.
    let wanted: BTreeMap<String, PartitionsWanted> = answered
        .iter()
        .map(|(group, (p, _))| {
            let partitions = p
                .to_commit
                .iter()
                .map(|(p, _)| (p.topic.as_str(), p.partition));
            (group.to_string(), partitions_of(partitions))
        })
        .collect();
    let mut read_back = if wanted.is_empty() {
        GroupResults::new()
    } else {
        client.fetch_offsets(&wanted, known, deadline).await
    };
    for (group, (p, codes)) in answered {
        let read_back = read_back
            .remove(group)
            .and_then(Result::ok)
            .unwrap_or_default();
        let (outcome, partitions) = committed_rows(group, p, &codes, &read_back);
        unknown |= matches!(
            outcome,
            GroupOutcome::Error {
                state_unknown: true,
                ..
            }
        );
        outcomes.insert(group.to_string(), (outcome, partitions));
    }
    Wave {
        outcomes,
        unknown,
        timings: [committed, clock.elapsed() - committed],
    }
}

/// A group's re-check: the partitions to commit, or the outcome that writes nothing.
fn recheck_group(plan: &GroupPlan, read: Result<Fresh, GroupError>) -> Result<Passed<'_>, Outcome> {
    let (description, current, fresh) = read.map_err(|message| match message.as_refusal() {
        // A transaction opened since the plan: refused by name, as the plan would refuse it.
        Some(reason) => (changed(Change::Refused(reason.clone())), vec![]),
        None => (error(message, false), vec![]),
    })?;
    if let Some(reason) = refusal(&description) {
        return Err((changed(Change::Refused(reason)), vec![]));
    }
    let moved = moved_offsets(plan, &current);
    if !moved.is_empty() {
        return Err((changed(Change::OffsetsMoved(moved)), vec![]));
    }
    // The plan's partitions to commit, each with its fresh derivation.
    let planned: Vec<(&PartitionPlan, PartitionPlan)> = plan
        .partitions
        .iter()
        .zip(fresh)
        .filter(|(p, _)| p.verdict.writes())
        .collect();
    let refused: Vec<PartitionResult> = planned
        .iter()
        .filter(|(_, f)| f.verdict != ApplyVerdict::Commit)
        .map(|(p, f)| PartitionResult {
            topic: p.topic.clone(),
            partition: p.partition,
            offset: p.offset,
            state: CommitState::Refused,
            error: Some(format!(
                "{}: {}",
                f.verdict.as_str(),
                f.difference.as_deref().unwrap_or("refused by the re-check")
            )),
            read_back: None,
            committed_before: f.current,
            verdict: f.verdict,
        })
        .collect();
    let to_commit: Vec<(&PartitionPlan, Option<i64>)> = planned
        .iter()
        .filter(|(_, f)| f.verdict == ApplyVerdict::Commit)
        .map(|(p, f)| (*p, f.current))
        .collect();
    if to_commit.is_empty() {
        return Err((
            changed(Change::EveryPartitionRefused(refused.len())),
            refused,
        ));
    }
    let undo = UndoGroup {
        group: plan.group.clone(),
        group_type: plan.group_type.clone(),
        partitions: planned
            .iter()
            .filter(|(_, f)| f.verdict == ApplyVerdict::Commit)
            .map(|(p, f)| UndoPartition {
                topic: p.topic.clone(),
                partition: p.partition,
                topic_id: f.topic_id.clone(),
                log_end: f.log_end,
                written: p.offset,
                // What the re-check's OffsetFetch read, with its metadata.
                before: current
                    .get(&(p.topic.clone(), p.partition))
                    .filter(|c| c.error_code == 0 && c.offset >= 0)
                    .map(|c| Committed {
                        offset: c.offset,
                        metadata: c.metadata.clone().unwrap_or_default(),
                    }),
            })
            .collect(),
    };
    Ok(Passed {
        to_commit,
        refused,
        undo,
    })
}

/// The rows of a group whose commit the coordinator answered (`codes`), with what was read back.
fn committed_rows(
    group: &str,
    p: Passed,
    codes: &CommitCodes,
    read_back: &GroupOffsets,
) -> Outcome {
    let mut partitions: Vec<PartitionResult> = p
        .to_commit
        .iter()
        .map(|(p, before)| {
            let key = (p.topic.clone(), p.partition);
            // A partition read back with an error code was not read back.
            let read_back = read_back
                .get(&key)
                .filter(|c| c.error_code == 0)
                .map(|c| c.offset)
                .filter(|&c| c >= 0);
            let (state, error) = match codes.get(&key).copied() {
                None => (
                    CommitState::Unknown,
                    Some("left out of the coordinator's answer".to_string()),
                ),
                Some(0) => (CommitState::Committed, None),
                Some(code) if OUTCOME_UNKNOWN.contains(&code) => {
                    (CommitState::Unknown, Some(ErrorCode::new(code).to_string()))
                }
                Some(GROUP_AUTHORIZATION_FAILED) => (
                    CommitState::Failed,
                    Some(authz::group_denied("OffsetCommit", group)),
                ),
                Some(TOPIC_AUTHORIZATION_FAILED) => (
                    CommitState::Failed,
                    Some(authz::topic_denied("OffsetCommit", &p.topic)),
                ),
                Some(code) => (CommitState::Failed, Some(ErrorCode::new(code).to_string())),
            };
            PartitionResult {
                topic: p.topic.clone(),
                partition: p.partition,
                offset: p.offset,
                state,
                error,
                read_back,
                committed_before: *before,
                verdict: ApplyVerdict::Commit,
            }
        })
        .collect();
    let outcome = group_outcome(&partitions);
    partitions.extend(p.refused);
    (outcome, partitions)
}

fn skipped(reason: GroupSkip) -> GroupOutcome {
    GroupOutcome::Skipped { reason }
}

fn changed(change: Change) -> GroupOutcome {
    skipped(GroupSkip::ChangedSincePlan(change))
}

fn error(message: GroupError, state_unknown: bool) -> GroupOutcome {
    GroupOutcome::Error {
        message,
        state_unknown,
    }
}

/// A partition whose commit was sent but whose answer never came.
fn unknown_result(p: &PartitionPlan, before: Option<i64>, why: &str) -> PartitionResult {
    PartitionResult {
        topic: p.topic.clone(),
        partition: p.partition,
        offset: p.offset,
        state: CommitState::Unknown,
        error: Some(why.to_string()),
        read_back: None,
        committed_before: before,
        verdict: ApplyVerdict::Commit,
    }
}

/// The group's outcome from its sent partitions' results.
fn group_outcome(partitions: &[PartitionResult]) -> GroupOutcome {
    let unknown = partitions
        .iter()
        .filter(|p| p.state == CommitState::Unknown)
        .count();
    if unknown > 0 {
        return error(GroupError::PartitionsUnknown(unknown), true);
    }
    let all_failed = partitions.iter().all(|p| p.state == CommitState::Failed);
    if all_failed && let Some(first) = partitions.first().and_then(|p| p.error.clone()) {
        // The coordinator refused the whole group (e.g. READ on the group is missing).
        let same = partitions
            .iter()
            .all(|p| p.error.as_deref() == Some(&first));
        if same {
            return error(GroupError::NotWritten(first.into()), false);
        }
    }
    let all_good = partitions
        .iter()
        .all(|p| p.state == CommitState::Committed && p.read_back == Some(p.offset));
    let all_acknowledged = partitions.iter().all(|p| p.state == CommitState::Committed);
    if all_good {
        GroupOutcome::Applied
    } else if all_acknowledged {
        GroupOutcome::Unverified
    } else {
        GroupOutcome::Partial
    }
}

/// Why no further commit is to be sent, once `guard`'s stop flag is set.
fn interrupted(guard: &WriteAhead<'_>) -> Option<String> {
    guard
        .stop
        .is_some_and(|stop| stop.load(Ordering::SeqCst))
        .then(|| "not sent: the run was interrupted before this group's commit".to_string())
}

/// A group whose commit was not sent, and why.
fn not_sent(why: &str) -> Outcome {
    (error(GroupError::NotWritten(why.into()), false), vec![])
}

/// A group not written because an earlier commit's outcome is unknown.
fn halted() -> Outcome {
    (error(GroupError::Halted, false), vec![])
}
