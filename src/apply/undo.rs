//! Undo: a plan that puts back what an execute changed.
//!
//! Before an execute writes, [`read_before`] reads every partition it may write (committed
//! offset and metadata, or none); after it, [`undo_plan`] keeps the partitions the report says
//! were committed (or may have been: outcome unknown) with what was written and what was there
//! before. [`execute_undo`] restores that state later, with the re-checks of any plan: the group
//! must still have no members (and be a consumer group), and each partition must still hold what
//! the execute wrote, else it is refused (`changed-since`), since someone committed after the
//! execute and putting the old offset back would undo their work too. A partition that had no
//! committed offset before has it deleted (OffsetDelete), so the group reads from
//! `auto.offset.reset` again, as it did.
//!
//! ```
//! use mm2_offsets::apply::undo::{UndoPlan, UNDO_KIND};
//!
//! let text = r#"{"schema_version":1,"kind":"undo","created_at_ms":0,"groups":[
//!   {"group":"orders-app","partitions":[
//!     {"topic":"orders","partition":0,"written":120,"before":{"offset":100,"metadata":""}},
//!     {"topic":"orders","partition":1,"written":80,"before":null}]}]}"#;
//! let undo: UndoPlan = serde_json::from_str(text).unwrap();
//! assert_eq!(undo.kind, UNDO_KIND);
//! assert!(undo.groups[0].partitions[1].before.is_none()); // deleted by the undo
//! ```

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;
use serde::{Deserialize, Serialize};

use super::execute::{ApplyReport, CommitState, WAVE};
use super::read::{GroupRead, checked, non_consumer_groups, partitions_of, read_groups};
use super::{
    ApplyOptions, ApplyPlan, GroupError, GroupPlan, PLAN_SCHEMA_VERSION, PlanSchemaError, refusal,
};
use crate::client::{
    ClientError, CommitOptions, Coordinators, Deadline, ErrorCode, GroupOffsets, KafkaClient,
    OffsetToCommit, PartitionsWanted, common_failure, found_coordinators, not_a_consumer_group,
};

/// The `kind` of an undo document, which tells it from an apply plan.
pub const UNDO_KIND: &str = "undo";

/// UNKNOWN_MEMBER_ID: on an admin commit, the group has (gained) members.
const UNKNOWN_MEMBER_ID: i16 = 25;
/// GROUP_ID_NOT_FOUND: OffsetDelete on a group the coordinator does not know: nothing to delete.
const GROUP_ID_NOT_FOUND: i16 = 69;

/// A committed offset and its metadata.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Committed {
    /// The offset.
    pub offset: i64,
    /// The metadata committed with it.
    pub metadata: String,
}

/// One partition to put back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UndoPartition {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset the execute wrote (what must still be there for the undo to restore).
    pub written: i64,
    /// What was committed before the execute; `None`: nothing (the undo deletes the offset).
    pub before: Option<Committed>,
}

/// One group's partitions to put back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UndoGroup {
    /// The group id.
    pub group: String,
    /// Its partitions, sorted by topic and partition.
    pub partitions: Vec<UndoPartition>,
}

/// The undo of one execute, as written by `--undo-out` and read by `apply --plan`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UndoPlan {
    /// [`PLAN_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// [`UNDO_KIND`].
    pub kind: String,
    /// When the execute it undoes finished (ms since the epoch).
    pub created_at_ms: i64,
    /// Every group the execute changed, sorted by id.
    pub groups: Vec<UndoGroup>,
}

impl UndoPlan {
    /// Whether `text` (a JSON document) is an undo plan rather than an apply plan.
    pub fn is_undo_document(text: &str) -> bool {
        #[derive(Deserialize)]
        struct Kind {
            kind: Option<String>,
        }
        serde_json::from_str::<Kind>(text).is_ok_and(|k| k.kind.as_deref() == Some(UNDO_KIND))
    }

    /// Fails unless the undo was written with this build's [`PLAN_SCHEMA_VERSION`].
    pub fn check_schema(&self) -> Result<(), PlanSchemaError> {
        if self.schema_version == PLAN_SCHEMA_VERSION {
            Ok(())
        } else {
            Err(PlanSchemaError(self.schema_version))
        }
    }

    /// The number of partitions to put back.
    pub fn partitions(&self) -> usize {
        self.groups.iter().map(|g| g.partitions.len()).sum()
    }
}

/// What each group held, before an execute, on the partitions its plan may write: per group,
/// per (topic, partition), the committed offset (`None`: none), or why it could not be read.
#[derive(Clone, Debug, Default)]
pub struct Before {
    groups: BTreeMap<String, Result<Held, String>>,
}

/// One group's committed offsets, per (topic, partition) (`None`: nothing committed).
type Held = BTreeMap<(String, i32), Option<Committed>>;

/// Reads, for every group of `plan` that has partitions to commit, what is committed on them
/// now: the "before" an undo restores. One batched coordinator lookup and one batched OffsetFetch
/// of exactly those partitions. A group that cannot be read (or whose coordinator would not say
/// a partition's offset) gets no undo entry (its error is kept); reaching the cluster at all is
/// an `Err`.
pub async fn read_before(
    client: &KafkaClient,
    plan: &ApplyPlan,
    deadline: &Deadline,
) -> Result<Before, ClientError> {
    let writable: Vec<&GroupPlan> = plan
        .groups
        .iter()
        .filter(|g| g.to_commit().next().is_some())
        .collect();
    let ids: Vec<String> = writable.iter().map(|g| g.group.clone()).collect();
    let coordinators = client.find_group_coordinators(&ids, deadline).await?;
    let mut before = Before::default();
    for (group, c) in &coordinators {
        if let Err(e) = c {
            before.groups.insert(group.clone(), Err(e.to_string()));
        }
    }
    let known = found_coordinators(&coordinators);
    let wanted: BTreeMap<String, PartitionsWanted> = writable
        .iter()
        .filter(|g| known.contains_key(&g.group))
        .map(|g| {
            let partitions = g.to_commit().map(|p| (p.topic.as_str(), p.partition));
            (g.group.clone(), partitions_of(partitions))
        })
        .collect();
    let mut fetched = client.fetch_offsets(&wanted, &known, deadline).await;
    if let Some(failure) = common_failure(&fetched) {
        // One failure no group got past (authentication, a broker that does not speak
        // OffsetFetch): the cluster could not be read.
        return Err(failure);
    }
    for g in writable {
        let Some(answer) = fetched.remove(&g.group) else {
            continue;
        };
        let state = answer.map_err(|e| e.to_string()).and_then(|offsets| {
            g.to_commit()
                .map(|p| {
                    let key = (p.topic.clone(), p.partition);
                    match offsets.get(&key) {
                        Some(c) if c.error_code != 0 => Err(format!(
                            "the coordinator did not give the committed offset of {}-{}: {}",
                            p.topic,
                            p.partition,
                            ErrorCode::new(c.error_code)
                        )),
                        now => Ok((
                            key,
                            now.filter(|c| c.offset >= 0).map(|c| Committed {
                                offset: c.offset,
                                metadata: c.metadata.clone().unwrap_or_default(),
                            }),
                        )),
                    }
                })
                .collect()
        });
        before.groups.insert(g.group.clone(), state);
    }
    Ok(before)
}

/// The undo of an execute of `plan` that produced `report`, given what was committed before it
/// (`before`, read just before the execute): every partition committed or whose outcome is
/// unknown, with the offset written and the state to restore. A group whose "before" differs
/// from the plan's `current` was changed in between; the execute's own re-check refused it, so
/// it is not in the undo.
pub fn undo_plan(plan: &ApplyPlan, report: &ApplyReport, before: &Before, now_ms: i64) -> UndoPlan {
    let mut groups = Vec::new();
    for result in &report.groups {
        let (Some(Ok(held)), Some(planned)) = (
            before.groups.get(&result.group),
            plan.groups.iter().find(|g| g.group == result.group),
        ) else {
            continue;
        };
        let mut partitions: Vec<UndoPartition> = result
            .partitions
            .iter()
            .filter(|p| matches!(p.state, CommitState::Committed | CommitState::Unknown))
            .filter_map(|p| {
                let key = (p.topic.clone(), p.partition);
                let was = held.get(&key)?.clone();
                let seen_by_plan = planned
                    .partitions
                    .iter()
                    .find(|x| x.topic == p.topic && x.partition == p.partition)?
                    .current;
                // What the execute's re-check compared: the undo restores only what it saw.
                (was.as_ref().map(|c| c.offset) == seen_by_plan).then(|| UndoPartition {
                    topic: p.topic.clone(),
                    partition: p.partition,
                    written: p.offset,
                    before: was,
                })
            })
            .collect();
        if partitions.is_empty() {
            continue;
        }
        partitions.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        groups.push(UndoGroup {
            group: result.group.clone(),
            partitions,
        });
    }
    groups.sort_by(|a, b| a.group.cmp(&b.group));
    UndoPlan {
        schema_version: PLAN_SCHEMA_VERSION,
        kind: UNDO_KIND.to_string(),
        created_at_ms: now_ms,
        groups,
    }
}

/// What the undo did (or, in a dry run, would do) to one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UndoState {
    /// Dry run: the written offset is still there and would be replaced by the one before.
    WouldRestore,
    /// Dry run: the written offset is still there and would be deleted (none before).
    WouldDelete,
    /// The offset before was committed again and read back.
    Restored,
    /// The offset was deleted and reads back as none.
    Deleted,
    /// The partition already holds what it held before: nothing to do.
    AlreadyRestored,
    /// Refused: the partition holds neither what the execute wrote nor what was there before;
    /// someone committed since.
    ChangedSince,
    /// The coordinator refused it (see `error`).
    Failed,
    /// The answer was lost: it may or may not have been written. Read the group's offsets.
    Unknown,
}

/// One partition's undo.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UndoPartitionResult {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset the execute wrote.
    pub written: i64,
    /// The offset to restore (`None`: none, deleted).
    pub before: Option<i64>,
    /// What the group held when the undo ran (`None`: nothing committed).
    pub found: Option<i64>,
    /// What happened.
    pub state: UndoState,
    /// Why it failed or is unknown.
    pub error: Option<String>,
    /// The offset read back after the undo (`None`: none committed, or not read).
    pub read_back: Option<i64>,
}

/// One group's undo.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UndoGroupResult {
    /// The group id.
    pub group: String,
    /// Not undone at all, and why (members, a kind of group apply never writes, an error).
    pub skipped: Option<String>,
    /// Its partitions (empty when skipped).
    pub partitions: Vec<UndoPartitionResult>,
}

/// What an undo did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UndoReport {
    /// Whether it wrote (false: a dry run that only looked).
    pub executed: bool,
    /// Every group of the undo plan, sorted by id.
    pub groups: Vec<UndoGroupResult>,
}

impl UndoReport {
    /// Partitions restored or deleted (and verified by reading back).
    pub fn restored(&self) -> usize {
        self.states()
            .filter(|s| matches!(s, UndoState::Restored | UndoState::Deleted))
            .count()
    }

    /// Partitions refused (changed since) or groups skipped.
    pub fn has_refusals(&self) -> bool {
        self.groups.iter().any(|g| g.skipped.is_some())
            || self.states().any(|s| s == UndoState::ChangedSince)
    }

    /// Partitions failed or whose outcome is unknown.
    pub fn has_errors(&self) -> bool {
        self.states()
            .any(|s| matches!(s, UndoState::Failed | UndoState::Unknown))
    }

    fn states(&self) -> impl Iterator<Item = UndoState> + '_ {
        self.groups
            .iter()
            .flat_map(|g| &g.partitions)
            .map(|p| p.state)
    }
}

/// Puts back what `undo` lists (`execute`), or only says what it would do (dry run), within
/// `deadline`. Each wave of groups is re-checked just before it is written, in one batched read:
/// no members, a consumer group, and per partition the offset the execute wrote still there
/// (else `changed-since`, untouched). The offsets before are committed in one admin OffsetCommit
/// per group (with their metadata, `options.concurrency` in flight per coordinator), those that
/// had none are deleted in one OffsetDelete per group, and everything is read back in one
/// batched OffsetFetch. Once an answer is lost, no further group is written.
pub async fn execute_undo(
    client: &KafkaClient,
    undo: &UndoPlan,
    options: &ApplyOptions,
    execute: bool,
    deadline: &Deadline,
) -> UndoReport {
    let ids: Vec<String> = undo.groups.iter().map(|g| g.group.clone()).collect();
    let coordinators = client.find_group_coordinators(&ids, deadline).await;
    let kinds = match &coordinators {
        Ok(map) => non_consumer_groups(client, map, deadline).await,
        Err(_) => BTreeMap::new(),
    };
    let known = match &coordinators {
        Ok(map) => found_coordinators(map),
        Err(_) => Coordinators::new(),
    };
    let mut decided: Vec<Option<UndoGroupResult>> = Vec::with_capacity(undo.groups.len());
    let mut ready: Vec<&UndoGroup> = Vec::new();
    for g in &undo.groups {
        let coordinator = match &coordinators {
            Ok(map) => map
                .get(&g.group)
                .map(|r| r.as_ref().map(|_| ()).map_err(|e| e.to_string())),
            Err(e) => Some(Err(e.to_string())),
        };
        let why = match (kinds.get(&g.group), coordinator) {
            (Some(Ok(group_type)), _) => Some(
                not_a_consumer_group(group_type)
                    .unwrap_or_else(|| format!("group is a {group_type} group")),
            ),
            (Some(Err(why)), _) => Some(why.clone()),
            (None, Some(Err(why))) => Some(why),
            (None, None) => Some("no coordinator answer for the group".into()),
            (None, Some(Ok(()))) => None,
        };
        match why {
            Some(why) => decided.push(Some(skip(g, why))),
            None => {
                ready.push(g);
                decided.push(None);
            }
        }
    }
    let commit_options = options.commit_options();
    let mut done: BTreeMap<String, UndoGroupResult> = BTreeMap::new();
    let mut unknown = false;
    for wave in ready.chunks(WAVE) {
        if execute && unknown {
            for g in wave {
                done.insert(g.group.clone(), skip(g, HALTED.into()));
            }
            continue;
        }
        let (results, lost) = undo_wave(
            client,
            wave,
            &known,
            execute,
            &commit_options,
            options,
            deadline,
        )
        .await;
        unknown |= lost;
        done.extend(results.into_iter().map(|r| (r.group.clone(), r)));
    }
    let groups = undo
        .groups
        .iter()
        .zip(decided)
        .map(|(g, result)| {
            result
                .or_else(|| done.remove(&g.group))
                .unwrap_or_else(|| skip(g, "no outcome for the group".into()))
        })
        .collect();
    UndoReport {
        executed: execute,
        groups,
    }
}

/// Why a group is not written once an earlier write's outcome is unknown.
const HALTED: &str = "not written: an earlier write's outcome is unknown";

fn skip(g: &UndoGroup, why: String) -> UndoGroupResult {
    UndoGroupResult {
        group: g.group.clone(),
        skipped: Some(why),
        partitions: Vec::new(),
    }
}

/// Each partition's write in an undo: the commit's or the delete's code, or why it has none.
type Codes = BTreeMap<(String, i32), Result<i16, String>>;

/// One wave of an undo: re-read in one batched read, the restores committed (one OffsetCommit
/// per group, pipelined), the deletes sent (one OffsetDelete per group), and what was written
/// read back in one batched OffsetFetch. True when a write's outcome became unknown.
async fn undo_wave(
    client: &KafkaClient,
    wave: &[&UndoGroup],
    known: &Coordinators,
    execute: bool,
    commit_options: &CommitOptions,
    options: &ApplyOptions,
    deadline: &Deadline,
) -> (Vec<UndoGroupResult>, bool) {
    let wanted: BTreeMap<String, PartitionsWanted> = wave
        .iter()
        .map(|g| {
            let partitions = g.partitions.iter().map(|p| (p.topic.as_str(), p.partition));
            (g.group.clone(), partitions_of(partitions))
        })
        .collect();
    let mut reads = read_groups(client, &wanted, known, deadline).await;
    let mut results: Vec<UndoGroupResult> = wave
        .iter()
        .map(|g| {
            let read = reads
                .remove(&g.group)
                .unwrap_or_else(|| Err(GroupError::Unreadable("no answer for the group".into())));
            // No topic is known to be denied here: a partition whose offset the coordinator
            // would not give makes the group unreadable, never "nothing committed".
            let read = checked(read, &BTreeSet::new());
            recheck_undo(g, read)
        })
        .collect();
    if !execute {
        return (results, false);
    }
    // The restores, all groups at once.
    let commits: BTreeMap<String, Vec<OffsetToCommit>> = wave
        .iter()
        .zip(&results)
        .filter(|(_, r)| r.skipped.is_none())
        .filter_map(|(g, r)| {
            let restore: Vec<OffsetToCommit> = g
                .partitions
                .iter()
                .zip(&r.partitions)
                .filter(|(_, r)| r.state == UndoState::WouldRestore)
                .filter_map(|(p, _)| {
                    p.before.as_ref().map(|b| OffsetToCommit {
                        topic: p.topic.clone(),
                        partition: p.partition,
                        offset: b.offset,
                        metadata: Some(b.metadata.clone()),
                    })
                })
                .collect();
            (!restore.is_empty()).then(|| (g.group.clone(), restore))
        })
        .collect();
    let mut answers = if commits.is_empty() {
        Default::default()
    } else {
        client
            .commit_offsets(&commits, known, commit_options, deadline)
            .await
    };
    let mut unknown = false;
    let mut codes: BTreeMap<String, Codes> = BTreeMap::new();
    for r in &mut results {
        let (Some(restore), Some(answer)) = (commits.get(&r.group), answers.remove(&r.group))
        else {
            continue;
        };
        let group_codes = codes.entry(r.group.clone()).or_default();
        match answer {
            Ok(answer) if answer.values().any(|&c| c == UNKNOWN_MEMBER_ID) => {
                r.skipped = Some(
                    "the group gained members since the re-check (UNKNOWN_MEMBER_ID): not written"
                        .into(),
                );
                r.partitions.clear();
            }
            Ok(answer) => {
                // A partition timed out on the coordinator, or left out of its answer, is as
                // unknown as a lost answer.
                unknown |= restore.iter().any(|o| {
                    answer
                        .get(&(o.topic.clone(), o.partition))
                        .is_none_or(|c| matches!(c, 7 | -1))
                });
                group_codes.extend(answer.into_iter().map(|(k, c)| (k, Ok(c))));
            }
            Err(e) if e.is_halted() => {
                r.skipped = Some(HALTED.into());
                r.partitions.clear();
            }
            Err(e) => {
                unknown |= e.is_outcome_unknown();
                let why = e.to_string();
                for o in restore {
                    group_codes.insert((o.topic.clone(), o.partition), Err(why.clone()));
                }
            }
        }
    }
    // The deletes: a group whose commit went out (or that had none to send) finishes its
    // writes; one with nothing sent yet is not written once an outcome is unknown.
    let deletes: Vec<(String, Vec<(String, i32)>)> = results
        .iter_mut()
        .filter(|r| r.skipped.is_none())
        .filter_map(|r| {
            let delete: Vec<(String, i32)> = r
                .partitions
                .iter()
                .filter(|p| p.state == UndoState::WouldDelete)
                .map(|p| (p.topic.clone(), p.partition))
                .collect();
            if delete.is_empty() {
                return None;
            }
            if unknown && !commits.contains_key(&r.group) {
                r.skipped = Some(HALTED.into());
                r.partitions.clear();
                return None;
            }
            Some((r.group.clone(), delete))
        })
        .collect();
    let deleted: Vec<(String, Codes)> = futures::stream::iter(deletes)
        .map(|(group, delete)| async move {
            let mut out = Codes::new();
            let Some(coordinator) = known.get(&group) else {
                return (group, out);
            };
            match client
                .delete_group_offsets(coordinator, &group, &delete, deadline)
                .await
            {
                Ok(answer) => out.extend(answer.into_iter().map(|(k, c)| (k, Ok(c)))),
                // The coordinator does not know the group: it holds no offsets at all.
                Err(e) if e.code() == Some(GROUP_ID_NOT_FOUND) => {
                    out.extend(delete.iter().map(|k| (k.clone(), Ok(0))));
                }
                Err(e) => {
                    let why = e.to_string();
                    out.extend(delete.iter().map(|k| (k.clone(), Err(why.clone()))));
                }
            }
            (group, out)
        })
        .buffer_unordered(options.concurrency.max(1))
        .collect()
        .await;
    for (group, group_codes) in deleted {
        codes.entry(group).or_default().extend(group_codes);
    }
    // Read back every group that wrote something, in one batched OffsetFetch.
    let wanted: BTreeMap<String, PartitionsWanted> = results
        .iter()
        .filter(|r| r.skipped.is_none() && codes.contains_key(&r.group))
        .map(|r| {
            let partitions = r.partitions.iter().map(|p| (p.topic.as_str(), p.partition));
            (r.group.clone(), partitions_of(partitions))
        })
        .collect();
    let mut read_back = if wanted.is_empty() {
        Default::default()
    } else {
        client.fetch_offsets(&wanted, known, deadline).await
    };
    for r in &mut results {
        let Some(group_codes) = codes.get(&r.group) else {
            continue;
        };
        let offsets = read_back.remove(&r.group).and_then(Result::ok);
        settle_undo(r, group_codes, offsets.as_ref());
    }
    (results, unknown)
}

/// A group's undo as the re-read shows it: skipped (unreadable, members), or each partition's
/// state (`changed-since`, `already-restored`, or what the undo would write).
fn recheck_undo(undo: &UndoGroup, read: GroupRead) -> UndoGroupResult {
    let mut result = UndoGroupResult {
        group: undo.group.clone(),
        skipped: None,
        partitions: Vec::new(),
    };
    let (description, current) = match read {
        Ok(found) => found,
        Err(message) => {
            result.skipped = Some(message.to_string());
            return result;
        }
    };
    if let Some(reason) = refusal(&description) {
        result.skipped = Some(reason.to_string());
        return result;
    }
    for p in &undo.partitions {
        let found = current
            .get(&(p.topic.clone(), p.partition))
            .filter(|c| c.error_code == 0 && c.offset >= 0)
            .map(|c| c.offset);
        let before = p.before.as_ref().map(|b| b.offset);
        let state = if found == before {
            UndoState::AlreadyRestored
        } else if found != Some(p.written) {
            UndoState::ChangedSince
        } else if before.is_some() {
            UndoState::WouldRestore
        } else {
            UndoState::WouldDelete
        };
        result.partitions.push(UndoPartitionResult {
            topic: p.topic.clone(),
            partition: p.partition,
            written: p.written,
            before,
            found,
            state,
            error: None,
            read_back: found,
        });
    }
    result
}

/// Each written partition's final state: its code and what was read back (`None`: the read-back
/// failed).
fn settle_undo(result: &mut UndoGroupResult, codes: &Codes, read_back: Option<&GroupOffsets>) {
    for r in &mut result.partitions {
        let Some(code) = codes.get(&(r.topic.clone(), r.partition)) else {
            continue;
        };
        r.read_back = read_back.and_then(|offsets| {
            offsets
                .get(&(r.topic.clone(), r.partition))
                .filter(|c| c.error_code == 0 && c.offset >= 0)
                .map(|c| c.offset)
        });
        let verified = read_back.is_some() && r.read_back == r.before;
        (r.state, r.error) = match code {
            Ok(0) if verified && r.before.is_some() => (UndoState::Restored, None),
            Ok(0) if verified => (UndoState::Deleted, None),
            Ok(0) => (
                UndoState::Unknown,
                Some(format!(
                    "accepted, but read back as {}",
                    r.read_back
                        .map_or_else(|| "none".to_string(), |o| o.to_string())
                )),
            ),
            Ok(code) => (UndoState::Failed, Some(ErrorCode::new(*code).to_string())),
            Err(why) => (UndoState::Unknown, Some(why.clone())),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::execute::{GroupOutcome, GroupResult, PartitionResult};
    use crate::apply::{GroupPlan, GroupStatus, PartitionPlan, Verdict};

    fn partition(topic: &str, p: i32, current: Option<i64>, offset: i64) -> PartitionPlan {
        PartitionPlan {
            topic: topic.into(),
            partition: p,
            translated: offset,
            offset,
            current,
            log_start: Some(0),
            log_end: Some(1000),
            verdict: Verdict::Commit,
            clamped_from: None,
            checkpoint_age_ms: 0,
            metadata: String::new(),
            topic_id: None,
            upstream_offset: None,
            difference: None,
        }
    }

    fn result(topic: &str, p: i32, offset: i64, state: CommitState) -> PartitionResult {
        PartitionResult {
            topic: topic.into(),
            partition: p,
            offset,
            state,
            error: None,
            read_back: Some(offset),
            committed_before: None,
            verdict: Verdict::Commit,
        }
    }

    #[test]
    fn the_undo_keeps_what_was_written_and_what_was_there() {
        let plan = ApplyPlan {
            schema_version: PLAN_SCHEMA_VERSION,
            planned_at_ms: 0,
            heartbeat_age_ms: BTreeMap::new(),
            cluster_id: None,
            sources: Vec::new(),
            rules: None,
            input: None,
            groups: vec![GroupPlan {
                group: "g".into(),
                protocol: None,
                state: None,
                members: 0,
                status: GroupStatus::Ready,
                oldest_checkpoint_age_ms: 0,
                partitions: vec![
                    partition("t", 0, Some(5), 10),
                    partition("t", 1, None, 20),
                    partition("t", 2, Some(7), 30),
                    partition("t", 3, Some(1), 40),
                ],
            }],
        };
        let report = ApplyReport {
            groups: vec![GroupResult {
                group: "g".into(),
                outcome: GroupOutcome::Partial,
                partitions: vec![
                    result("t", 0, 10, CommitState::Committed),
                    result("t", 1, 20, CommitState::Unknown),
                    result("t", 2, 30, CommitState::Failed),
                    result("t", 3, 40, CommitState::Committed),
                ],
            }],
        };
        let mut held = BTreeMap::new();
        let c = |offset| {
            Some(Committed {
                offset,
                metadata: "m".into(),
            })
        };
        held.insert(("t".to_string(), 0), c(5));
        held.insert(("t".to_string(), 1), None);
        held.insert(("t".to_string(), 2), c(7));
        // Moved between the plan and the read before: the execute's re-check refused it.
        held.insert(("t".to_string(), 3), c(2));
        let before = Before {
            groups: BTreeMap::from([("g".to_string(), Ok(held))]),
        };
        let undo = undo_plan(&plan, &report, &before, 99);
        assert_eq!(undo.kind, UNDO_KIND);
        let got: Vec<(i32, i64, Option<i64>)> = undo.groups[0]
            .partitions
            .iter()
            .map(|p| (p.partition, p.written, p.before.as_ref().map(|b| b.offset)))
            .collect();
        assert_eq!(got, [(0, 10, Some(5)), (1, 20, None)]);
        let text = serde_json::to_string(&undo).unwrap();
        assert!(UndoPlan::is_undo_document(&text));
        assert!(!UndoPlan::is_undo_document(
            &serde_json::to_string(&plan).unwrap()
        ));
        assert_eq!(serde_json::from_str::<UndoPlan>(&text).unwrap(), undo);
    }
}
