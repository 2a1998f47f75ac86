//! A plan is a claim, not an authority: the re-derivation of every partition's verdict from the
//! target as it is now, with the rules of a fresh plan, and its comparison with the plan.
//!
//! The rule (the book's apply chapter, "What a write re-checks at the moment it is made"):
//! before a commit, everything the verdict depends on is read again (the group's
//! members and committed offsets, each topic's log start, log end and id, the cluster id, and,
//! where the caller re-read them, the checkpoints), the verdict is derived again with
//! [`decide`] under the stricter of the plan's rules and the run's, and a partition is written
//! only when the plan and the fresh derivation both say `commit` with the same offset. Any
//! difference refuses that partition ([`ApplyVerdict::ChangedSincePlan`] or the fresh refusal),
//! and its row names both views.

use std::collections::{BTreeMap, BTreeSet};

use super::read::{
    checked, denied_topics, non_consumer_groups, partitions_of, read_groups, target_logs,
};
use super::{
    ApplyOptions, ApplyPlan, ApplyVerdict, GroupCause, GroupError, GroupPlan, GroupRefusal,
    GroupStatus, PartitionPlan, PlanInput, TargetLogs, VerdictRules, committed_offset, decide,
    now_ms, refusal, target_partition, topic_id,
};
use crate::client::{
    ClientError, Coordinators, Deadline, GroupDescription, GroupOffsets, KafkaClient,
    PartitionsWanted, found_coordinators,
};
use crate::translate::Translation;

/// A fresh checkpoint: (downstream offset, upstream offset, record timestamp).
type Checkpoint = (i64, i64, i64);

/// What a plan's partitions are checked against besides the target: the run's rules, and the
/// checkpoints as the caller read them again (if it did).
pub(crate) struct Context {
    /// The stricter of the plan's rules and the run's.
    pub(crate) rules: VerdictRules,
    /// Where the plan's offsets came from.
    pub(crate) input: PlanInput,
    /// When the plan was made.
    pub(crate) planned_at_ms: i64,
    /// The sources the plan names (for the words).
    pub(crate) sources: Vec<String>,
    /// (group, topic, partition) -> the checkpoint read now; `None`: not re-read (the plan's
    /// own claims of offset and checkpoint age are used).
    checkpoints: Option<BTreeMap<(String, String, i32), Checkpoint>>,
}

impl Context {
    /// The context of an execute or re-check of `plan` with `options`, against `checkpoints`
    /// read again from the plan's sources (only the plan's rows are kept).
    pub(crate) fn new(
        plan: &ApplyPlan,
        checkpoints: Option<&Translation>,
        options: &ApplyOptions,
    ) -> Self {
        let rules = match plan.rules {
            Some(planned) => planned.strictest(options.rules),
            None => options.rules,
        };
        let checkpoints = checkpoints.map(|fresh| {
            let wanted: BTreeSet<&str> = plan.groups.iter().map(|g| g.group.as_str()).collect();
            fresh
                .iter()
                .filter(|o| wanted.contains(o.group) && plan.sources.iter().any(|s| s == o.source))
                // A checkpoint apply never writes from (a value version other than 0, a group
                // id that is not UTF-8) is no proof for a saved plan's row: as if absent.
                .filter(|o| !o.unknown_version && fresh.group_id_not_utf8(o.group).is_none())
                .map(|o| {
                    (
                        (o.group.to_string(), o.topic.to_string(), o.partition),
                        (o.offset, o.upstream_offset, o.checkpoint_timestamp),
                    )
                })
                .collect()
        });
        Context {
            rules,
            input: plan.input.unwrap_or_default(),
            planned_at_ms: plan.planned_at_ms,
            sources: plan.sources.clone(),
            checkpoints,
        }
    }

    /// Why the claim of `p` (group `group`) is not what the checkpoints say now, if it is not;
    /// and the checkpoint's age now.
    fn claim(&self, group: &str, p: &PartitionPlan, now_ms: i64) -> (Option<String>, i64) {
        let planned_age = now_ms.saturating_sub(p.checkpoint_timestamp(self.planned_at_ms));
        let Some(checkpoints) = &self.checkpoints else {
            return (None, planned_age);
        };
        let key = (group.to_string(), p.topic.clone(), p.partition);
        let failback = self.input == PlanInput::Failback;
        let from_source = self.input == PlanInput::SourceOffsets;
        let Some(&(offset, upstream, timestamp)) = checkpoints.get(&key) else {
            let why = if failback {
                format!(
                    "the plan commits {} failed back from the backup; failing back now gives no offset (the group's offset on the backup is gone or not failed back)",
                    p.offset
                )
            } else if from_source {
                format!(
                    "the plan commits {} translated from the source's offset {}; translating the source's offsets now gives none for this partition (no offset on the source now, or no history left to translate it)",
                    p.offset,
                    show(p.upstream_offset)
                )
            } else {
                format!(
                    "the plan commits {} from a checkpoint of {}; no such checkpoint exists now",
                    p.offset,
                    sources_words(&self.sources)
                )
            };
            return (Some(why), planned_age);
        };
        let age = now_ms.saturating_sub(timestamp);
        let (planned, now) = if from_source {
            (
                format!(
                    "the plan translates the source's offset {} to {}",
                    show(p.upstream_offset),
                    p.translated
                ),
                format!("the source's offset is {upstream} now, translated to {offset}"),
            )
        } else if failback {
            (
                format!(
                    "the plan fails back to offset {} (from offset {} on the backup)",
                    p.translated,
                    show(p.upstream_offset)
                ),
                format!("failing back now gives offset {offset} (from offset {upstream})"),
            )
        } else {
            (
                format!(
                    "the plan's checkpoint gives offset {} (upstream {})",
                    p.translated,
                    show(p.upstream_offset)
                ),
                format!("the checkpoint now gives offset {offset} (upstream {upstream})"),
            )
        };
        let differs = match self.input {
            // Derived again as a fresh plan would (a failback from the backup, source offsets
            // from the source): any other offset, or another offset it came from, refuses the
            // row. A group that moved on the source since the plan is planned again.
            PlanInput::Checkpoints | PlanInput::Failback | PlanInput::SourceOffsets => {
                offset != p.translated || p.upstream_offset.is_some_and(|u| u != upstream)
            }
            // A precise offset is never before MM2's, and comes from the same checkpoint.
            PlanInput::Precise => {
                offset > p.translated || p.upstream_offset.is_some_and(|u| u != upstream)
            }
        };
        (differs.then(|| format!("{planned}; {now}")), age)
    }
}

fn sources_words(sources: &[String]) -> String {
    match sources {
        [] => "no source (the plan names none)".to_string(),
        [one] => format!("source {one:?}"),
        several => format!("sources {several:?}"),
    }
}

fn show(offset: Option<i64>) -> String {
    offset.map_or_else(|| "none".to_string(), |o| o.to_string())
}

/// One side's view of a partition, for the words of a difference.
fn view(
    verdict: ApplyVerdict,
    offset: i64,
    current: Option<i64>,
    log: (Option<i64>, Option<i64>),
) -> String {
    format!(
        "{} {offset} (committed {}, log {}..{})",
        verdict.as_str(),
        show(current),
        show(log.0),
        show(log.1)
    )
}

/// Re-derives `p` (of group `group`) against the target now: the partition as it stands now,
/// its verdict what both the plan and the fresh derivation allow, and `difference` naming both
/// views where they disagree.
pub(crate) fn check_partition(
    context: &Context,
    group: &str,
    p: &PartitionPlan,
    logs: &TargetLogs,
    offsets: &GroupOffsets,
    now_ms: i64,
) -> PartitionPlan {
    let (claim, age) = context.claim(group, p, now_ms);
    let (target, log) = target_partition(logs, &p.topic, p.partition);
    let current = committed_offset(offsets, &p.topic, p.partition);
    let fresh_id = topic_id(logs, &p.topic);
    let decision = decide(p.translated, current, target, age, context.rules);
    let log_now = (log.map(|l| l.0), log.map(|l| l.1));
    // The same topic: its id, and (where the broker has no ids) a log end that never went back.
    let identity = match (&p.topic_id, &fresh_id, log) {
        (Some(then), Some(now), _) if then != now => Some(format!(
            "topic {:?} had id {then} when planned and has id {now} now: it was deleted and recreated",
            p.topic
        )),
        (Some(then), None, Some(_)) => Some(format!(
            "topic {:?} had id {then} when planned and has no id now",
            p.topic
        )),
        (_, _, Some((_, end))) if p.log_end.is_some_and(|e| end < e) => Some(format!(
            "the log end of {}-{} went back from {} to {end}: the topic was truncated or recreated",
            p.topic,
            p.partition,
            show(p.log_end)
        )),
        _ => None,
    };
    let planned_view = view(p.verdict, p.offset, p.current, (p.log_start, p.log_end));
    let fresh_view = view(decision.verdict, decision.offset, current, log_now);
    let (verdict, difference) = if let Some(why) = claim.or(identity) {
        (ApplyVerdict::ChangedSincePlan, Some(why))
    } else if p.verdict == ApplyVerdict::Commit {
        if decision.verdict == ApplyVerdict::Commit && decision.offset == p.offset {
            (ApplyVerdict::Commit, None)
        } else if decision.verdict == ApplyVerdict::Commit
            || decision.verdict == ApplyVerdict::Unchanged
        {
            (
                ApplyVerdict::ChangedSincePlan,
                Some(format!("planned: {planned_view}; now: {fresh_view}")),
            )
        } else {
            (
                decision.verdict,
                Some(format!("planned: {planned_view}; now: {fresh_view}")),
            )
        }
    } else if decision.verdict == ApplyVerdict::Commit {
        // The plan did not allow it: only what both allow is written.
        (
            ApplyVerdict::ChangedSincePlan,
            Some(format!(
                "planned: {planned_view}, which the plan does not commit; now: {fresh_view}; plan again"
            )),
        )
    } else {
        (decision.verdict, None)
    };
    PartitionPlan {
        topic: p.topic.clone(),
        partition: p.partition,
        translated: p.translated,
        offset: p.offset,
        current,
        log_start: log_now.0,
        log_end: log_now.1,
        verdict,
        clamped_from: decision.clamped_from,
        checkpoint_age_ms: age,
        metadata: p.metadata.clone(),
        topic_id: fresh_id,
        upstream_offset: p.upstream_offset,
        difference,
    }
}

/// The committed offsets of `plan` that are not what the plan saw: `topic-partition then ->
/// now`. Any of them refuses the whole group (its offsets are being moved by someone else).
pub(crate) fn moved_offsets(plan: &GroupPlan, current: &GroupOffsets) -> Vec<String> {
    plan.partitions
        .iter()
        .filter_map(|p| {
            let now = committed_offset(current, &p.topic, p.partition);
            (now != p.current).then(|| {
                format!(
                    "{}-{} {} -> {}",
                    p.topic,
                    p.partition,
                    show(p.current),
                    show(now)
                )
            })
        })
        .collect()
}

/// A group read again: its description, its committed offsets, and every partition of its plan
/// re-derived ([`check_partition`]).
pub(crate) type Fresh = (GroupDescription, GroupOffsets, Vec<PartitionPlan>);

/// The groups of `plans` read again and every partition re-derived ([`check_partition`]), in a
/// few batched requests: their topics' logs and ids (one Metadata, ListOffsets once per leader)
/// and the groups' states and committed offsets (the plan's partitions, many groups a request),
/// all at once, on the coordinators `known` gives. A group is `Err` when it or its topics could
/// not be read.
pub(crate) async fn fresh_groups(
    client: &KafkaClient,
    plans: &[&GroupPlan],
    context: &Context,
    known: &Coordinators,
    deadline: &Deadline,
) -> BTreeMap<String, Result<Fresh, GroupError>> {
    let topics: BTreeSet<&str> = plans
        .iter()
        .flat_map(|g| &g.partitions)
        .map(|p| p.topic.as_str())
        .collect();
    let wanted: BTreeMap<String, PartitionsWanted> = plans
        .iter()
        .map(|g| {
            let partitions = g.partitions.iter().map(|p| (p.topic.as_str(), p.partition));
            (g.group.clone(), partitions_of(partitions))
        })
        .collect();
    // Boxed: their states stay off the stack (see `execute`).
    let (logs, reads) = futures::join!(
        Box::pin(target_logs(client, &topics, deadline)),
        // Which topics Metadata denies is known once both answered: the reads are checked below.
        Box::pin(read_groups(client, &wanted, known, deadline)),
    );
    let logs = match logs {
        Ok(logs) => logs,
        Err(e) => {
            let why = GroupError::Unreadable(GroupCause::client(
                &e,
                format!("re-reading the group's topics: {e}"),
            ));
            return plans
                .iter()
                .map(|g| (g.group.clone(), Err(why.clone())))
                .collect();
        }
    };
    let denied = denied_topics(&logs);
    let now = now_ms();
    let mut reads = reads;
    plans
        .iter()
        .map(|plan| {
            let read = reads.remove(&plan.group).unwrap_or_else(|| {
                Err(GroupError::Unreadable(
                    format!("no answer for group {:?}", plan.group).into(),
                ))
            });
            let fresh = checked(read, &denied).map(|(description, offsets)| {
                let partitions = plan
                    .partitions
                    .iter()
                    .map(|p| check_partition(context, &plan.group, p, &logs, &offsets, now))
                    .collect();
                (description, offsets, partitions)
            });
            (plan.group.clone(), fresh)
        })
        .collect()
}

/// Whether the target is the cluster `plan` was made for; the refusal of every group if not.
pub(crate) fn other_cluster(plan: &ApplyPlan, found: &Option<String>) -> Option<GroupRefusal> {
    // A plan of an older build (no rules saved, no cluster named) proves nothing about where it
    // may run; a plan of this build names the cluster id its target reported (none only from a
    // broker without ids, which must then report none now too).
    let unbound = plan.rules.is_none() && plan.cluster_id.is_none();
    (unbound || plan.cluster_id != *found).then(|| GroupRefusal::OtherCluster {
        planned: plan.cluster_id.clone(),
        found: found.clone(),
    })
}

/// Re-checks `plan` against the target now, writing nothing: the plan as a fresh derivation sees
/// it, each group's status and each partition's verdict being what an [`execute`](super::execute)
/// started now would do (rows that differ from the plan name both views in `difference`).
/// `checkpoints`, when given, are the checkpoints read again from the plan's sources (for a
/// plan of [`PlanInput::SourceOffsets`], the translation of the source's offsets made again;
/// for [`PlanInput::Failback`], the failback derived again): each partition's claim is checked
/// against them (see [`PlanInput`]) and its age taken from them.
///
/// The dry run of a saved plan prints this, so that it never shows the plan's old view.
///
/// ```no_run
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use mm2_offsets::apply::{self, ApplyOptions, ApplyPlan};
/// use mm2_offsets::client::{Deadline, KafkaClient};
/// use mm2_offsets::config::ClientConfig;
///
/// let client = KafkaClient::connect(ClientConfig::plaintext(["backup:9092"])).await?;
/// let saved: ApplyPlan = serde_json::from_str(&std::fs::read_to_string("plan.json")?)?;
/// saved.check_schema()?;
/// let options = ApplyOptions::default();
/// let deadline = Deadline::after(Duration::from_secs(30));
/// // What an execute would do now, without writing: rows that differ name both views.
/// let now = apply::recheck(&client, &saved, None, &options, &deadline).await?;
/// for p in now.groups.iter().flat_map(|g| &g.partitions) {
///     if let Some(why) = &p.difference {
///         println!("{}-{}: {} ({why})", p.topic, p.partition, p.verdict.as_str());
///     }
/// }
/// // Commits only what the plan and the target now both allow.
/// let report = apply::execute(&client, &saved, &options, &mm2_offsets::client::Deadline::after(std::time::Duration::from_secs(60))).await;
/// println!("{} partition(s) committed", report.committed());
/// # Ok(())
/// # }
/// ```
pub async fn recheck(
    client: &KafkaClient,
    plan: &ApplyPlan,
    checkpoints: Option<&Translation>,
    options: &ApplyOptions,
    deadline: &Deadline,
) -> Result<ApplyPlan, ClientError> {
    let context = Context::new(plan, checkpoints, options);
    let found = client.cluster_id(deadline).await?;
    let mut fresh = plan.clone();
    fresh.planned_at_ms = now_ms();
    if let Some(refusal) = other_cluster(plan, &found) {
        for g in &mut fresh.groups {
            g.status = GroupStatus::Refused {
                reason: refusal.clone(),
            };
        }
        return Ok(fresh);
    }
    let names: Vec<String> = plan.groups.iter().map(|g| g.group.clone()).collect();
    let coordinators = client.find_group_coordinators(&names, deadline).await?;
    let mut kinds = non_consumer_groups(client, &coordinators, deadline).await;
    let known = found_coordinators(&coordinators);
    // A Streams group of the plan that is a Streams group on the target: re-read with
    // StreamsGroupDescribe, as an execute would.
    let streams_targets = super::streams::take_streams_targets(&mut kinds, &planned_streams(plan));
    let gates = super::streams::gates(client, &streams_targets, &known, deadline).await;
    // KAFKA-20254 judged again from the target now (a Streams group gone since the plan is
    // created as a classic group again; the brokers may have changed).
    let kafka_4_2 = super::streams::kafka_20254(
        client,
        planned_streams(plan).keys(),
        &gates,
        options.streams_on_kafka_4_2,
        deadline,
    )
    .await;
    let gated = |g: &str| {
        matches!(
            gates.get(g),
            Some(
                super::streams::StreamsGate::Refused(_)
                    | super::streams::StreamsGate::Unreadable(_)
            )
        )
    };
    // The groups the target can be asked about again, read in one batched pass.
    let is_share = |g: &GroupPlan| g.group_type == crate::client::GroupType::Share;
    let readable: Vec<&GroupPlan> = plan
        .groups
        .iter()
        .filter(|g| {
            !is_share(g)
                && !kinds.contains_key(&g.group)
                && known.contains_key(&g.group)
                && !gated(&g.group)
        })
        .collect();
    let mut fresh_reads = fresh_groups(client, &readable, &context, &known, deadline).await;
    // Share groups (KIP-932) are read as the execute reads them: type, members, start offsets.
    let share_names: Vec<String> = plan
        .groups
        .iter()
        .filter(|g| is_share(g))
        .map(|g| g.group.clone())
        .collect();
    let mut share_targets =
        super::share::read_targets(client, &share_names, &coordinators, deadline).await;
    let share_topics: BTreeSet<&str> = plan
        .groups
        .iter()
        .filter(|g| is_share(g))
        .flat_map(|g| g.partitions.iter().map(|p| p.topic.as_str()))
        .collect();
    let share_logs = super::read::target_logs(client, &share_topics, deadline).await?;
    let now = now_ms();
    fresh.groups = plan
        .groups
        .iter()
        .map(|g| {
            let mut out = g.clone();
            if let Some(target) = share_targets.remove(&g.group) {
                match target {
                    Ok(t) => {
                        let partitions = g
                            .partitions
                            .iter()
                            .map(|p| {
                                check_partition(&context, &g.group, p, &share_logs, &t.offsets, now)
                            })
                            .collect();
                        let refusal = t.refusal();
                        let (state, members) = (t.state.state.clone(), t.state.members.len());
                        rechecked(
                            g,
                            (t.description(&g.group), t.offsets, partitions),
                            &mut out,
                        );
                        out.protocol = None;
                        out.state = Some(state).filter(|s| !s.is_empty());
                        out.members = members;
                        if let (GroupStatus::Ready, Some(reason)) = (&out.status, refusal) {
                            out.status = GroupStatus::Refused { reason };
                        }
                    }
                    Err(message) => out.status = super::status_of_error(message),
                }
                return out;
            }
            match (kinds.get(&g.group), coordinators.get(&g.group)) {
                _ if let Some(super::streams::StreamsGate::Refused(reason)) =
                    gates.get(&g.group) =>
                {
                    if g.status == GroupStatus::Ready {
                        out.status = GroupStatus::Refused {
                            reason: reason.clone(),
                        };
                    }
                }
                _ if let Some(super::streams::StreamsGate::Unreadable(e)) = gates.get(&g.group) => {
                    out.status = GroupStatus::Error { message: e.clone() };
                }
                (Some(Ok(group_type)), _) => {
                    out.status = GroupStatus::Refused {
                        reason: GroupRefusal::NotConsumerGroup {
                            group_type: group_type.clone(),
                        },
                    };
                }
                (Some(Err(why)), _) => {
                    out.status = GroupStatus::Error {
                        message: GroupError::KindUnknown(why.clone().into()),
                    };
                }
                (None, Some(Err(e))) => {
                    out.status = GroupStatus::Error {
                        message: GroupError::Unreadable(super::authz::cause(e)),
                    };
                }
                (None, None) => {
                    out.status = GroupStatus::Error {
                        message: GroupError::NoCoordinator(
                            format!("no coordinator answer for group {:?}", g.group).into(),
                        ),
                    };
                }
                (None, Some(Ok(_))) => match fresh_reads.remove(&g.group) {
                    Some(Ok(read)) => {
                        rechecked(g, read, &mut out);
                        // An empty Streams group: DescribeGroups calls it absent, the plan shows
                        // what StreamsGroupDescribe said (as planning does).
                        if let Some(super::streams::StreamsGate::Open {
                            state,
                            exists: true,
                            ..
                        }) = gates.get(&g.group)
                        {
                            out.protocol = None;
                            out.state = Some(state.clone());
                        }
                    }
                    Some(Err(message)) => out.status = super::status_of_error(message),
                    None => {
                        out.status = GroupStatus::Error {
                            message: GroupError::Unreadable(
                                format!("no answer for group {:?}", g.group).into(),
                            ),
                        }
                    }
                },
            }
            if out.status == GroupStatus::Ready
                && let Some(reason) = kafka_4_2.get(&g.group)
            {
                out.status = GroupStatus::Refused {
                    reason: reason.clone(),
                };
            }
            out
        })
        .collect();
    Ok(fresh)
}

/// The plan's groups that are Kafka Streams groups on the source, with the topics it writes.
pub(crate) fn planned_streams(plan: &ApplyPlan) -> BTreeMap<String, BTreeSet<String>> {
    plan.groups
        .iter()
        .filter(|g| g.group_type == crate::client::GroupType::Streams)
        .map(|g| {
            let topics = g.to_commit().map(|p| p.topic.clone()).collect();
            (g.group.clone(), topics)
        })
        .collect()
}

/// `out` (a copy of `planned`) as the re-check `read` sees it: what an execute started now
/// would do with the group.
fn rechecked(planned: &GroupPlan, read: Fresh, out: &mut GroupPlan) {
    let (description, offsets, partitions) = read;
    out.protocol = Some(description.protocol);
    out.state = Some(description.state.clone());
    out.members = description.members;
    // What the principal may do to the group now, never what the file says.
    out.may_delete_offsets = description.may_delete_offsets();
    let moved = moved_offsets(planned, &offsets);
    out.partitions = partitions;
    if !moved.is_empty() {
        // An execute skips the whole group: so does the re-check's view.
        let why = format!(
            "committed offsets moved since the plan ({}); plan again",
            moved.join(", ")
        );
        for p in out
            .partitions
            .iter_mut()
            .filter(|p| !p.verdict.is_refusal())
        {
            p.verdict = ApplyVerdict::ChangedSincePlan;
            p.difference = Some(why.clone());
        }
    }
    out.status = match (&planned.status, refusal(&description)) {
        (GroupStatus::Ready, None) => GroupStatus::Ready,
        (GroupStatus::Ready, Some(reason)) => GroupStatus::Refused { reason },
        // Refused or failed when planned: never written, whatever it is now.
        (status, _) => status.clone(),
    };
    out.oldest_checkpoint_age_ms = out
        .partitions
        .iter()
        .map(|p| p.checkpoint_age_ms)
        .max()
        .unwrap_or(0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::{PLAN_SCHEMA_VERSION, TopicLogs};
    use crate::client::{CommittedOffset, GroupProtocol};

    fn planned(offset: i64, verdict: ApplyVerdict) -> PartitionPlan {
        PartitionPlan {
            topic: "t".into(),
            partition: 0,
            translated: offset,
            offset,
            current: None,
            log_start: Some(0),
            log_end: Some(100),
            verdict,
            clamped_from: None,
            checkpoint_age_ms: 5,
            metadata: String::new(),
            topic_id: Some("ID1".into()),
            upstream_offset: Some(offset.saturating_add(1000)),
            difference: None,
        }
    }

    fn plan(rules: VerdictRules) -> ApplyPlan {
        ApplyPlan {
            schema_version: PLAN_SCHEMA_VERSION,
            planned_at_ms: 1_000,
            heartbeat_age_ms: BTreeMap::new(),
            groups: vec![],
            cluster_id: Some("c".into()),
            sources: vec!["a".into()],
            rules: Some(rules),
            input: Some(PlanInput::Checkpoints),
        }
    }

    fn logs(start: i64, end: i64, id: &str) -> TargetLogs {
        BTreeMap::from([(
            "t".to_string(),
            TopicLogs::Present(BTreeMap::from([(0, (start, end))]), Some(id.to_string())),
        )])
    }

    fn committed(offset: Option<i64>) -> GroupOffsets {
        offset
            .map(|o| {
                (
                    ("t".to_string(), 0),
                    CommittedOffset {
                        offset: o,
                        leader_epoch: -1,
                        metadata: None,
                        error_code: 0,
                    },
                )
            })
            .into_iter()
            .collect()
    }

    fn check(p: &PartitionPlan, logs: &TargetLogs, current: Option<i64>) -> PartitionPlan {
        let context = Context::new(
            &plan(VerdictRules::default()),
            None,
            &ApplyOptions::default(),
        );
        check_partition(&context, "g", p, logs, &committed(current), 2_000)
    }

    /// A saved plan's `may_delete_offsets` is a claim: the re-check takes what the coordinator
    /// says now (here: no DELETE), or nothing when it says nothing (a group not on the target).
    #[test]
    fn what_the_principal_may_delete_comes_from_the_target() {
        let mut saved = GroupPlan {
            group: "g".into(),
            group_type: crate::client::GroupType::Consumer,
            protocol: Some(GroupProtocol::Classic),
            state: Some("Empty".into()),
            members: 0,
            status: GroupStatus::Ready,
            oldest_checkpoint_age_ms: 5,
            partitions: vec![planned(10, ApplyVerdict::Commit)],
            may_delete_offsets: Some(true),
        };
        let described = |ops: Option<i32>| GroupDescription {
            group_id: "g".into(),
            protocol: GroupProtocol::Classic,
            protocol_type: String::new(),
            state: "Empty".into(),
            members: 0,
            authorized_operations: ops,
        };
        // DESCRIBE and READ (bits 8 and 3), not DELETE (bit 6).
        for (ops, want) in [(Some((1 << 8) | (1 << 3)), Some(false)), (None, None)] {
            let mut out = saved.clone();
            let read = (described(ops), committed(None), saved.partitions.clone());
            rechecked(&saved, read, &mut out);
            assert_eq!(out.may_delete_offsets, want, "{ops:?}");
        }
        saved.may_delete_offsets = None;
        let mut out = saved.clone();
        let read = (
            described(Some(1 << 6)),
            committed(None),
            saved.partitions.clone(),
        );
        rechecked(&saved, read, &mut out);
        assert_eq!(out.may_delete_offsets, Some(true));
    }

    #[test]
    fn what_both_allow_is_committed() {
        let fresh = check(
            &planned(10, ApplyVerdict::Commit),
            &logs(0, 100, "ID1"),
            None,
        );
        assert_eq!(
            (fresh.verdict, fresh.difference),
            (ApplyVerdict::Commit, None)
        );
    }

    #[test]
    fn a_target_change_refuses_the_partition_naming_both_views() {
        // DeleteRecords moved the log start past the offset.
        let fresh = check(
            &planned(10, ApplyVerdict::Commit),
            &logs(30, 100, "ID1"),
            None,
        );
        assert_eq!(fresh.verdict, ApplyVerdict::BelowLogStart);
        let words = fresh.difference.unwrap();
        assert!(
            words.contains("planned: commit 10 (committed none, log 0..100)"),
            "{words}"
        );
        assert!(
            words.contains("now: below-log-start 10 (committed none, log 30..100)"),
            "{words}"
        );
        // Recreated: another id.
        let fresh = check(
            &planned(10, ApplyVerdict::Commit),
            &logs(0, 100, "ID2"),
            None,
        );
        assert_eq!(fresh.verdict, ApplyVerdict::ChangedSincePlan);
        assert!(fresh.difference.unwrap().contains("deleted and recreated"));
        // Truncated without ids: the log end went back.
        let mut no_id = planned(10, ApplyVerdict::Commit);
        no_id.topic_id = None;
        let mut truncated = logs(0, 50, "x");
        if let Some(TopicLogs::Present(_, id)) = truncated.get_mut("t") {
            *id = None;
        }
        let fresh = check(&no_id, &truncated, None);
        assert_eq!(fresh.verdict, ApplyVerdict::ChangedSincePlan);
        assert!(
            fresh
                .difference
                .unwrap()
                .contains("went back from 100 to 50")
        );
    }

    #[test]
    fn hand_edits_are_refused() {
        // A would-rewind relabelled commit.
        let mut p = planned(50, ApplyVerdict::Commit);
        p.current = Some(80);
        assert_eq!(
            check(&p, &logs(0, 100, "ID1"), Some(80)).verdict,
            ApplyVerdict::WouldRewind
        );
        // An offset the plan's rules do not give from its translated offset.
        let mut p = planned(10, ApplyVerdict::Commit);
        p.offset = 99;
        let fresh = check(&p, &logs(0, 100, "ID1"), None);
        assert_eq!(fresh.verdict, ApplyVerdict::ChangedSincePlan);
        // Negative, past the log end, the largest offset.
        for bad in [-5, 99_999, i64::MAX] {
            let fresh = check(
                &planned(bad, ApplyVerdict::Commit),
                &logs(0, 100, "ID1"),
                None,
            );
            assert!(fresh.verdict.is_refusal(), "{bad}: {:?}", fresh.verdict);
        }
        // A plan refusal the target would now allow is still not written.
        let fresh = check(
            &planned(10, ApplyVerdict::Stale),
            &logs(0, 100, "ID1"),
            None,
        );
        assert_eq!(fresh.verdict, ApplyVerdict::ChangedSincePlan);
    }

    #[test]
    fn the_stricter_rules_and_the_checkpoint_age_now_apply() {
        // Planned with --allow-rewind, run without: the rewind is refused.
        let mut plan = plan(VerdictRules {
            allow_rewind: true,
            ..VerdictRules::default()
        });
        let mut p = planned(50, ApplyVerdict::Commit);
        p.current = Some(80);
        let context = Context::new(&plan, None, &ApplyOptions::default());
        let fresh = check_partition(
            &context,
            "g",
            &p,
            &logs(0, 100, "ID1"),
            &committed(Some(80)),
            2_000,
        );
        assert_eq!(fresh.verdict, ApplyVerdict::WouldRewind);
        // A checkpoint fresh when planned, too old now (planned at 1000 with age 5: made at 995).
        plan.rules = Some(VerdictRules {
            max_checkpoint_age_ms: Some(500),
            ..VerdictRules::default()
        });
        let context = Context::new(&plan, None, &ApplyOptions::default());
        let p = planned(10, ApplyVerdict::Commit);
        let fresh = check_partition(
            &context,
            "g",
            &p,
            &logs(0, 100, "ID1"),
            &committed(None),
            2_000,
        );
        assert_eq!(
            (fresh.verdict, fresh.checkpoint_age_ms),
            (ApplyVerdict::Stale, 1_005)
        );
    }

    /// A plan from the source's offsets is checked against their translation made again: the
    /// same offset from the same source offset stands, a group that moved on the source (or
    /// a partition the source no longer has) is refused naming both.
    #[test]
    fn a_source_offsets_plan_stands_only_on_the_same_translation() {
        let mut saved = plan(VerdictRules::default());
        saved.input = Some(PlanInput::SourceOffsets);
        let mut p = planned(10, ApplyVerdict::Commit);
        p.upstream_offset = Some(12);
        let context = |fresh: Option<Checkpoint>| {
            let mut c = Context::new(&saved, None, &ApplyOptions::default());
            c.checkpoints = Some(
                fresh
                    .map(|f| (("g".to_string(), "t".to_string(), 0), f))
                    .into_iter()
                    .collect(),
            );
            c
        };
        let verdict = |fresh: Option<Checkpoint>| {
            let c = context(fresh);
            let out = check_partition(&c, "g", &p, &logs(0, 100, "ID1"), &committed(None), 2_000);
            (out.verdict, out.difference.unwrap_or_default())
        };
        assert_eq!(verdict(Some((10, 12, 1_900))).0, ApplyVerdict::Commit);
        let (moved, why) = verdict(Some((15, 17, 1_900)));
        assert_eq!(moved, ApplyVerdict::ChangedSincePlan);
        assert!(
            why.contains("the source's offset is 17 now, translated to 15"),
            "{why}"
        );
        let (gone, why) = verdict(None);
        assert_eq!(gone, ApplyVerdict::ChangedSincePlan);
        assert!(
            why.contains("translated from the source's offset 12"),
            "{why}"
        );
    }

    #[test]
    fn a_plan_is_bound_to_its_cluster() {
        let p = plan(VerdictRules::default());
        assert_eq!(other_cluster(&p, &Some("c".into())), None);
        assert!(other_cluster(&p, &Some("d".into())).is_some());
        let mut old = p.clone();
        old.cluster_id = None;
        old.rules = None;
        assert!(
            other_cluster(&old, &None).is_some(),
            "an unbound plan proves nothing"
        );
    }
}
