//! Undo: a plan that puts back what an execute changed.
//!
//! A journaled execute ([`execute_write_ahead`](crate::apply::execute_write_ahead) with an
//! [`UndoJournal`](crate::apply::journal::UndoJournal)) records, before each wave's commits, every
//! group's previous offsets (offset and metadata, or none) and what it will write; a
//! [`FileJournal`](crate::apply::journal::FileJournal) is the undo file. [`UndoPlan::parse`] reads it
//! back. [`execute_undo`] restores that state later, as a plan, with every row derived again:
//!
//! - the undo names the cluster it was written on (else it is refused, as a file of an older
//!   version is), and on any other cluster it is refused whole;
//! - the group must still have no members (and be a consumer group);
//! - each partition must hold now exactly the offset the run wrote (else `changed-since`:
//!   someone committed after the run, and putting the old offset back would undo their work),
//!   and that commit's metadata must end with the run's marker
//!   ([`journal::run_marker`](crate::apply::journal::run_marker)): the cluster, not the file, says that this
//!   run wrote it (else `not-written-by-run`);
//! - the topic must be the same topic (its id; where the broker has no ids, a log end that
//!   never went back below the one seen at the run) and the offset to restore must lie within
//!   the log now (else `out-of-range`, as `apply` refuses it).
//!
//! A partition that had no committed offset before has it deleted (OffsetDelete), so the group
//! reads from `auto.offset.reset` again, as it did.
//!
//! ```
//! use mm2_offsets::undo::UndoPlan;
//!
//! let text = concat!(
//!     r#"{"schema_version":1,"kind":"undo","format":"jsonl","cluster_id":"c1","run_id":"0123456789abcdef","created_at_ms":0}"#, "\n",
//!     r#"{"group":"orders-app","partitions":["#,
//!     r#"{"topic":"orders","partition":0,"topic_id":null,"log_end":500,"written":120,"before":{"offset":100,"metadata":""}},"#,
//!     r#"{"topic":"orders","partition":1,"topic_id":null,"log_end":500,"written":80,"before":null}]}"#, "\n",
//!     r#"{"group":"torn","part"#,
//! );
//! assert!(UndoPlan::is_undo_document(text));
//! let parsed = UndoPlan::parse(text).unwrap();
//! assert_eq!(parsed.plan.cluster_id.as_deref(), Some("c1"));
//! assert!(parsed.plan.groups[0].partitions[1].before.is_none()); // deleted by the undo
//! assert_eq!(parsed.torn_line, Some(3)); // the run was cut while writing line 3
//! ```

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::apply::authz::{
    GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED, group_denied, topic_denied,
};
use crate::apply::journal::{JOURNAL_FORMAT, UndoEnd, UndoHeader, run_marker};
use crate::apply::read::{
    GroupRead, checked, denied_topics, non_consumer_groups, partitions_of, read_groups, target_logs,
};
use crate::apply::{
    ApplyOptions, GroupError, Mode, PLAN_SCHEMA_VERSION, PlanSchemaError, TargetLogs, WAVE,
    refusal, target_partition, topic_id,
};
use crate::client::{
    CommitOptions, Coordinators, Deadline, ErrorCode, GroupOffsets, KafkaClient, OffsetToCommit,
    PartitionsWanted, found_coordinators, not_a_consumer_group,
};

// Owned by `apply::journal` (the one public path, where the journal is written).
pub(crate) use crate::apply::journal::{UNDO_KIND, UndoGroup, UndoPartition};

/// UNKNOWN_MEMBER_ID: on an admin commit, the group has (gained) members.
const UNKNOWN_MEMBER_ID: i16 = 25;
/// GROUP_ID_NOT_FOUND: OffsetDelete on a group the coordinator does not know: nothing to delete.
const GROUP_ID_NOT_FOUND: i16 = 69;

/// The undo of one execute, as [`UndoPlan::parse`] reads it from the journal a
/// [`FileJournal`](crate::apply::journal::FileJournal) wrote, and as [`execute_undo`] runs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UndoPlan {
    /// [`PLAN_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// [`UNDO_KIND`].
    pub kind: String,
    /// The cluster the run wrote to (`None` in a file of an older version: refused).
    #[serde(default)]
    pub cluster_id: Option<String>,
    /// The run's id, which its commits carry in their metadata (`None`: an older file).
    #[serde(default)]
    pub run_id: Option<String>,
    /// When the execute it undoes began writing (ms since the epoch).
    pub created_at_ms: i64,
    /// Every group the execute recorded before its commits, in the order recorded.
    pub groups: Vec<UndoGroup>,
}

/// An undo journal read back.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParsedUndo {
    /// The undo.
    pub plan: UndoPlan,
    /// The 1-based number of a last line cut short (the run was killed or its disk full while
    /// writing it; its commits were not sent): ignored.
    pub torn_line: Option<usize>,
    /// The journal's last line, if the run wrote it (`None`: the run did not finish; every
    /// group recorded may or may not have been committed).
    pub end: Option<UndoEnd>,
}

/// Why a file is not an undo that can be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UndoFileError {
    /// Nothing in it: the run stopped before its first commit.
    #[error(
        "it is empty: the run that created it stopped before its first commit, so there is nothing to undo"
    )]
    Empty,
    /// One JSON document without cluster id or run id: written after the commits by an older
    /// version, and provable against neither the cluster nor the commits.
    #[error(
        "it is an undo file of an older mm2-offsets (no cluster id, no run id): it cannot be bound to a cluster nor proven against the commits, so it is not run. Read the groups' offsets and set them with a plan of your own"
    )]
    Unbound,
    /// A line that does not parse (other than a torn last line).
    #[error("line {line}: {problem}")]
    Line {
        /// The 1-based line.
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// Another schema version.
    #[error("{}", PlanSchemaError(*.0))]
    Schema(u32),
}

/// One line after the header.
#[derive(Deserialize)]
#[serde(untagged)]
enum JournalLine {
    Group(UndoGroup),
    End { end: UndoEnd },
}

impl UndoPlan {
    /// Whether `text` is an undo (a journal, or an older single document, or empty) rather
    /// than an apply plan.
    pub fn is_undo_document(text: &str) -> bool {
        #[derive(Deserialize)]
        struct Kind {
            kind: Option<String>,
        }
        let kind = |t: &str| {
            serde_json::from_str::<Kind>(t).is_ok_and(|k| k.kind.as_deref() == Some(UNDO_KIND))
        };
        text.trim().is_empty() || kind(text) || kind(text.lines().next().unwrap_or(""))
    }

    /// Reads an undo journal: its header (cluster id, run id), then one group per line. A
    /// last line cut short is ignored and reported ([`ParsedUndo::torn_line`]); any other
    /// line that does not parse, a group or partition listed twice, a file without header, or
    /// an older file without cluster id or run id, is an error.
    pub fn parse(text: &str) -> Result<ParsedUndo, UndoFileError> {
        if text.trim().is_empty() {
            return Err(UndoFileError::Empty);
        }
        let complete = text.ends_with('\n');
        let lines: Vec<&str> = text.split_terminator('\n').collect();
        let last = lines.len();
        let mut torn_line = None;
        let mut header: Option<UndoHeader> = None;
        let mut groups: Vec<UndoGroup> = Vec::new();
        let mut end = None;
        let mut seen: BTreeSet<(String, String, i32)> = BTreeSet::new();
        for (i, line) in lines.iter().enumerate() {
            let number = i + 1;
            let torn = |problem: String| {
                if number == last && !complete {
                    Ok(())
                } else {
                    Err(UndoFileError::Line {
                        line: number,
                        problem,
                    })
                }
            };
            if header.is_none() {
                match serde_json::from_str::<UndoHeader>(line) {
                    Ok(h) => {
                        if h.schema_version != PLAN_SCHEMA_VERSION {
                            return Err(UndoFileError::Schema(h.schema_version));
                        }
                        if h.kind != UNDO_KIND || h.format != JOURNAL_FORMAT {
                            return Err(UndoFileError::Line {
                                line: 1,
                                problem: format!(
                                    "not an undo journal (kind {:?}, format {:?})",
                                    h.kind, h.format
                                ),
                            });
                        }
                        header = Some(h);
                    }
                    Err(_) if UndoPlan::is_undo_document(text) && !line.contains("\"format\"") => {
                        return Err(UndoFileError::Unbound);
                    }
                    Err(e) => {
                        torn(e.to_string())?;
                        torn_line = Some(number);
                    }
                }
                continue;
            }
            if end.is_some() {
                return Err(UndoFileError::Line {
                    line: number,
                    problem: "a line after the journal's last line".into(),
                });
            }
            match serde_json::from_str::<JournalLine>(line) {
                Ok(JournalLine::Group(g)) => {
                    for p in &g.partitions {
                        if !seen.insert((g.group.clone(), p.topic.clone(), p.partition)) {
                            return Err(UndoFileError::Line {
                                line: number,
                                problem: format!(
                                    "group {:?} partition {}-{} is listed twice",
                                    g.group, p.topic, p.partition
                                ),
                            });
                        }
                    }
                    groups.push(g);
                }
                Ok(JournalLine::End { end: e }) => end = Some(e),
                Err(e) => {
                    torn(e.to_string())?;
                    torn_line = Some(number);
                }
            }
        }
        let Some(header) = header else {
            // Only a torn header: the run stopped before its first commit.
            return Err(UndoFileError::Empty);
        };
        Ok(ParsedUndo {
            plan: UndoPlan {
                schema_version: header.schema_version,
                kind: header.kind,
                cluster_id: Some(header.cluster_id),
                run_id: Some(header.run_id),
                created_at_ms: header.created_at_ms,
                groups,
            },
            torn_line,
            end,
        })
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
    /// Refused: the partition holds the offset the undo names, but its metadata does not carry
    /// the run's marker: this run did not write it (an edited undo, or another writer).
    NotWrittenByRun,
    /// Refused: the topic is not the one the run wrote (another id, or a log end that went
    /// back), or it is gone.
    TopicChanged,
    /// Refused: the offset to restore is negative, below the log start or past the log end now.
    OutOfRange,
    /// The coordinator refused it (see `error`).
    Failed,
    /// The answer was lost: it may or may not have been written. Read the group's offsets.
    Unknown,
}

/// One partition's undo.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
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

    /// Partitions refused (changed since, not written by the run, another topic, out of
    /// range) or groups skipped.
    pub fn has_refusals(&self) -> bool {
        self.groups.iter().any(|g| g.skipped.is_some())
            || self.states().any(|s| {
                matches!(
                    s,
                    UndoState::ChangedSince
                        | UndoState::NotWrittenByRun
                        | UndoState::TopicChanged
                        | UndoState::OutOfRange
                )
            })
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

/// Puts back what `undo` lists ([`Mode::Execute`]), or only says what it would do
/// ([`Mode::DryRun`]), within
/// `deadline`. First the cluster: an undo that names none (an older file) or another cluster is
/// refused whole, nothing written. Then each wave of groups is re-checked just before it is
/// written, in one batched read of its groups and one of its topics: no members, a consumer
/// group, and per partition the offset the run wrote still there (else `changed-since`) with
/// the run's marker in its metadata (else `not-written-by-run`), the same topic (else
/// `topic-changed`) and the offset to restore within its log (else `out-of-range`); a refused
/// partition is left untouched. The offsets before are committed in one admin OffsetCommit
/// per group (with their metadata as it was, `options.concurrency` in flight per coordinator),
/// those that had none are deleted in one OffsetDelete per group, and everything is read back
/// in one batched OffsetFetch. Once an answer is lost, no further group is written.
pub async fn execute_undo(
    client: &KafkaClient,
    undo: &UndoPlan,
    options: &ApplyOptions,
    mode: Mode,
    deadline: &Deadline,
) -> UndoReport {
    let execute = mode.is_execute();
    let refused_whole = |why: String| UndoReport {
        executed: execute,
        groups: undo.groups.iter().map(|g| skip(g, why.clone())).collect(),
    };
    let (Some(cluster), Some(run_id)) = (&undo.cluster_id, &undo.run_id) else {
        return refused_whole(
            "the undo names no cluster id or no run id (a file of an older mm2-offsets): nothing restored"
                .into(),
        );
    };
    match client.cluster_id(deadline).await {
        Ok(Some(found)) if &found == cluster => {}
        Ok(found) => {
            return refused_whole(format!(
                "the undo was written on cluster {cluster:?}; this is cluster {}: nothing restored",
                found.map_or_else(|| "(no id)".to_string(), |id| format!("{id:?}"))
            ));
        }
        Err(e) => {
            return refused_whole(format!(
                "cannot read the cluster id to check the undo's ({cluster:?}): {e}; nothing restored"
            ));
        }
    }
    let ids: Vec<String> = undo.groups.iter().map(|g| g.group.clone()).collect();
    let coordinators = client.find_group_coordinators(&ids, deadline).await;
    let mut kinds = match &coordinators {
        Ok(map) => non_consumer_groups(client, map, deadline).await,
        Err(_) => BTreeMap::new(),
    };
    // A Streams group the run wrote, which its application has since converted: restored only
    // while it is empty (StreamsGroupDescribe), as apply wrote it.
    let streams: BTreeMap<String, BTreeSet<String>> = undo
        .groups
        .iter()
        .filter(|g| g.group_type == crate::client::GroupType::Streams)
        .map(|g| {
            let topics = g.partitions.iter().map(|p| p.topic.clone()).collect();
            (g.group.clone(), topics)
        })
        .collect();
    let streams_targets = crate::apply::streams::take_streams_targets(&mut kinds, &streams);
    let gates = match &coordinators {
        Ok(map) => {
            crate::apply::streams::gates(
                client,
                &streams_targets,
                &crate::client::found_coordinators(map),
                deadline,
            )
            .await
        }
        Err(_) => BTreeMap::new(),
    };
    let known = match &coordinators {
        Ok(map) => found_coordinators(map),
        Err(_) => Coordinators::new(),
    };
    let mut decided: Vec<Option<UndoGroupResult>> = Vec::with_capacity(undo.groups.len());
    let mut ready: Vec<&UndoGroup> = Vec::new();
    let mut share_ready: Vec<&UndoGroup> = Vec::new();
    for g in &undo.groups {
        // A share group is put back as one (share.rs), whose re-read checks its type.
        if g.group_type == crate::client::GroupType::Share {
            match &coordinators {
                Ok(_) => {
                    share_ready.push(g);
                    decided.push(None);
                }
                Err(e) => decided.push(Some(skip(g, e.to_string()))),
            }
            continue;
        }
        let coordinator = match &coordinators {
            Ok(map) => map
                .get(&g.group)
                .map(|r| r.as_ref().map(|_| ()).map_err(|e| e.to_string())),
            Err(e) => Some(Err(e.to_string())),
        };
        let why = match (kinds.get(&g.group), coordinator) {
            _ if let Some(crate::apply::streams::StreamsGate::Refused(reason)) =
                gates.get(&g.group) =>
            {
                Some(reason.to_string())
            }
            _ if let Some(crate::apply::streams::StreamsGate::Unreadable(e)) =
                gates.get(&g.group) =>
            {
                Some(e.to_string())
            }
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
            (wave, run_id),
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
    if let (Ok(map), false) = (&coordinators, share_ready.is_empty()) {
        let results = if execute && unknown {
            share_ready.iter().map(|g| skip(g, HALTED.into())).collect()
        } else {
            undo_share_groups(client, &share_ready, map, execute, deadline).await
        };
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
    (wave, run_id): (&[&UndoGroup], &str),
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
    let topics: BTreeSet<&str> = wave
        .iter()
        .flat_map(|g| g.partitions.iter().map(|p| p.topic.as_str()))
        .collect();
    let (mut reads, logs) = futures::join!(
        Box::pin(read_groups(client, &wanted, known, deadline)),
        Box::pin(target_logs(client, &topics, deadline)),
    );
    let logs = match logs {
        Ok(logs) => logs,
        Err(e) => {
            let why = format!("cannot read the topics' logs to check the undo: {e}");
            return (wave.iter().map(|g| skip(g, why.clone())).collect(), false);
        }
    };
    let denied = denied_topics(&logs);
    let mut results: Vec<UndoGroupResult> = wave
        .iter()
        .map(|g| {
            let read = reads
                .remove(&g.group)
                .unwrap_or_else(|| Err(GroupError::Unreadable("no answer for the group".into())));
            // A partition whose offset the coordinator would not give makes the group
            // unreadable, never "nothing committed".
            let read = checked(read, &denied);
            recheck_undo(g, read, &logs, run_id)
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
            // The authorizer refused the commit: nothing was written, and the words say which
            // ACL to add (see `settle_undo`).
            Err(e) if refused_by_authorizer(&e) => {
                let code = e
                    .broker_code()
                    .map_or(GROUP_AUTHORIZATION_FAILED, |c| c.code());
                for o in restore {
                    group_codes.insert((o.topic.clone(), o.partition), Ok(code));
                }
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
                // The authorizer refused the whole request: a definite "not deleted", kept as
                // its code so that the partition reads `failed` with the ACL to add.
                Err(e) if refused_by_authorizer(&e) => {
                    let code = e
                        .broker_code()
                        .map_or(GROUP_AUTHORIZATION_FAILED, |c| c.code());
                    out.extend(delete.iter().map(|k| (k.clone(), Ok(code))));
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
/// state (`already-restored`, a refusal, or what the undo would write), derived from the
/// cluster now, never from the file alone.
fn recheck_undo(
    undo: &UndoGroup,
    read: GroupRead,
    logs: &TargetLogs,
    run_id: &str,
) -> UndoGroupResult {
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
        let held = current
            .get(&(p.topic.clone(), p.partition))
            .filter(|c| c.error_code == 0 && c.offset >= 0);
        let found = held.map(|c| c.offset);
        let marker = held.and_then(|c| run_marker(c.metadata.as_deref().unwrap_or("")).1);
        let before = p.before.as_ref().map(|b| b.offset);
        let (state, error) = if found == before && marker != Some(run_id) {
            (UndoState::AlreadyRestored, None)
        } else if found != Some(p.written) {
            (UndoState::ChangedSince, None)
        } else if marker != Some(run_id) {
            (
                UndoState::NotWrittenByRun,
                Some(match marker {
                    Some(other) => format!(
                        "offset {} was committed by run {other}, not by this undo's run {run_id}",
                        p.written
                    ),
                    None => format!(
                        "offset {} carries no run marker in its metadata: this undo's run {run_id} did not commit it",
                        p.written
                    ),
                }),
            )
        } else {
            still_held(p, logs)
        };
        result
            .partitions
            .push(found_result(p, found, (state, error)));
    }
    result
}

/// What the undo would do with partition `p`, which still holds the offset the run wrote:
/// restore or delete it, unless its topic changed or the offset to restore left the log.
fn still_held(p: &UndoPartition, logs: &TargetLogs) -> (UndoState, Option<String>) {
    if let Some(why) = other_topic(p, logs) {
        (UndoState::TopicChanged, Some(why))
    } else if let Some(why) = out_of_range(p, logs) {
        (UndoState::OutOfRange, Some(why))
    } else if p.before.is_some() {
        (UndoState::WouldRestore, None)
    } else {
        (UndoState::WouldDelete, None)
    }
}

/// Partition `p`'s result as re-checked: `found` on the target now, nothing written yet.
fn found_result(
    p: &UndoPartition,
    found: Option<i64>,
    (state, error): (UndoState, Option<String>),
) -> UndoPartitionResult {
    UndoPartitionResult {
        topic: p.topic.clone(),
        partition: p.partition,
        written: p.written,
        before: p.before.as_ref().map(|b| b.offset),
        found,
        state,
        error,
        read_back: found,
    }
}

/// Why `p`'s topic is not the one the run wrote, if it is not: another id, no id where it had
/// one, or (where the broker has no ids) a log end below the one the run saw.
fn other_topic(p: &UndoPartition, logs: &TargetLogs) -> Option<String> {
    let (_, log) = target_partition(logs, &p.topic, p.partition);
    let Some((_, end)) = log else {
        return Some(format!(
            "{}-{} does not exist now (or may not be described)",
            p.topic, p.partition
        ));
    };
    match (&p.topic_id, topic_id(logs, &p.topic)) {
        (Some(then), Some(now)) if *then != now => Some(format!(
            "topic {:?} had id {then} when the run wrote it and has id {now} now: it was deleted and recreated",
            p.topic
        )),
        (Some(then), None) => Some(format!(
            "topic {:?} had id {then} when the run wrote it and has no id now",
            p.topic
        )),
        _ if p.log_end.is_some_and(|e| end < e) => Some(format!(
            "the log end of {}-{} went back from {} to {end} since the run: the topic was truncated or recreated",
            p.topic,
            p.partition,
            p.log_end.unwrap_or_default()
        )),
        _ => None,
    }
}

/// Why the offset to restore does not lie within `p`'s log now, if it does not.
fn out_of_range(p: &UndoPartition, logs: &TargetLogs) -> Option<String> {
    let restore = p.before.as_ref()?.offset;
    let (_, log) = target_partition(logs, &p.topic, p.partition);
    let (start, end) = log?;
    if restore < 0 {
        Some(format!("the offset to restore, {restore}, is negative"))
    } else if restore < start {
        Some(format!(
            "the offset to restore, {restore}, is below the log start of {}-{} now ({start})",
            p.topic, p.partition
        ))
    } else if restore > end {
        Some(format!(
            "the offset to restore, {restore}, is past the log end of {}-{} now ({end})",
            p.topic, p.partition
        ))
    } else {
        None
    }
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
            Ok(code) => (
                UndoState::Failed,
                Some(refused_words(*code, r, &result.group)),
            ),
            Err(why) => (UndoState::Unknown, Some(why.clone())),
        };
    }
}

/// Whether the authorizer refused a group's whole request (GROUP_ / TOPIC_AUTHORIZATION_FAILED):
/// a definite refusal, nothing written, never an unknown outcome.
fn refused_by_authorizer(error: &crate::client::GroupCallError) -> bool {
    error.broker_code().is_some_and(|c| {
        matches!(
            c.code(),
            GROUP_AUTHORIZATION_FAILED | TOPIC_AUTHORIZATION_FAILED
        )
    })
}

/// A refused partition's words: the missing ACL by name and what to grant for an authorization
/// refusal (the delete of a partition that had no offset needs DELETE on the group, KIP-496; a
/// restore needs READ), else the error's name.
fn refused_words(code: i16, partition: &UndoPartitionResult, group: &str) -> String {
    let request = if partition.before.is_some() {
        "OffsetCommit"
    } else {
        "OffsetDelete"
    };
    match code {
        GROUP_AUTHORIZATION_FAILED => group_denied(request, group),
        TOPIC_AUTHORIZATION_FAILED => topic_denied(request, &partition.topic),
        _ => ErrorCode::new(code).to_string(),
    }
}

// ---- Share groups (KIP-932) ----
//
// A share group's start offsets as they were before the run are put back with
// AlterShareGroupOffsets, and those the run created (none before) removed with
// DeleteShareGroupOffsets, so that `share.auto.offset.reset` decides again. Never an
// OffsetCommit: that would create a classic group under the id. The checks are the consumer
// groups' except the run marker: a share group's start offset carries no metadata, so "the
// run wrote it" is the written offset still there. DeleteShareGroupOffsets removes a whole
// topic's state, so a topic is deleted only when every partition with a start offset on it
// is one this undo deletes or restores (the delete is sent first, the restores after it).

/// Undoes (or, without `execute`, checks) each share group of `groups`, one by one.
async fn undo_share_groups(
    client: &KafkaClient,
    groups: &[&UndoGroup],
    coordinators: &crate::client::GroupResults<crate::client::GroupCoordinator>,
    execute: bool,
    deadline: &Deadline,
) -> Vec<UndoGroupResult> {
    let mut out = Vec::with_capacity(groups.len());
    for g in groups {
        out.push(undo_share_group(client, g, coordinators, execute, deadline).await);
    }
    out
}

async fn undo_share_group(
    client: &KafkaClient,
    undo: &UndoGroup,
    coordinators: &crate::client::GroupResults<crate::client::GroupCoordinator>,
    execute: bool,
    deadline: &Deadline,
) -> UndoGroupResult {
    let topics: BTreeSet<&str> = undo.partitions.iter().map(|p| p.topic.as_str()).collect();
    let logs = match target_logs(client, &topics, deadline).await {
        Ok(logs) => logs,
        Err(e) => {
            return skip(
                undo,
                format!("cannot read the topics' logs to check the undo: {e}"),
            );
        }
    };
    let group = undo.group.clone();
    let mut targets = crate::apply::share::read_targets(
        client,
        std::slice::from_ref(&group),
        coordinators,
        deadline,
    )
    .await;
    let target = match targets.remove(&group) {
        Some(Ok(t)) => t,
        Some(Err(message)) => return skip(undo, message.to_string()),
        None => return skip(undo, "no answer for the group".into()),
    };
    if let Some(reason) = target.refusal() {
        return skip(undo, reason.to_string());
    }
    let mut result = recheck_share_undo(undo, &target.offsets, &logs);
    if !execute {
        return result;
    }
    let Some(Ok(coordinator)) = coordinators.get(&group) else {
        return skip(undo, "no coordinator answer for the group".into());
    };
    let restore: BTreeMap<(String, i32), i64> = result
        .partitions
        .iter()
        .filter(|r| r.state == UndoState::WouldRestore)
        .filter_map(|r| r.before.map(|b| ((r.topic.clone(), r.partition), b)))
        .collect();
    let delete: BTreeSet<String> = result
        .partitions
        .iter()
        .filter(|r| r.state == UndoState::WouldDelete)
        .map(|r| r.topic.clone())
        .collect();
    let mut codes = Codes::new();
    // The deletes first: they clear a whole topic, which the restores then set again.
    if !delete.is_empty() {
        let answer = client
            .delete_share_group_offsets(coordinator, &group, &delete, deadline)
            .await;
        for r in result
            .partitions
            .iter()
            .filter(|r| r.state == UndoState::WouldDelete)
        {
            let code = match &answer {
                Ok(codes) => codes
                    .get(&r.topic)
                    .copied()
                    .ok_or_else(|| "left out of the coordinator's answer".to_string()),
                Err(e) => match e.code() {
                    Some(code) => Ok(code),
                    None => Err(e.to_string()),
                },
            };
            codes.insert((r.topic.clone(), r.partition), code);
        }
    }
    if !restore.is_empty() {
        let answer = client
            .alter_share_group_offsets(coordinator, &group, &restore, deadline)
            .await;
        for key in restore.keys() {
            let code = match &answer {
                Ok(codes) => codes
                    .get(key)
                    .copied()
                    .ok_or_else(|| "left out of the coordinator's answer".to_string()),
                Err(e) => match e.code() {
                    Some(code) => Ok(code),
                    None => Err(e.to_string()),
                },
            };
            codes.insert(key.clone(), code);
        }
    }
    let known: Coordinators = std::iter::once((group.clone(), coordinator.clone())).collect();
    let mut read = client
        .fetch_share_group_offsets(std::slice::from_ref(&group), &known, deadline)
        .await;
    // A share group whose last start offsets were deleted may be gone: nothing to read back.
    let read_back = match read.remove(&group) {
        Some(Ok(offsets)) => Some(offsets),
        Some(Err(e)) if e.code() == Some(69) => Some(Default::default()),
        _ => None,
    };
    settle_undo(&mut result, &codes, read_back.as_ref());
    result
}

/// Each partition's state as the target shows it now.
fn recheck_share_undo(
    undo: &UndoGroup,
    current: &crate::client::GroupOffsets,
    logs: &TargetLogs,
) -> UndoGroupResult {
    let mut result = UndoGroupResult {
        group: undo.group.clone(),
        skipped: None,
        partitions: Vec::new(),
    };
    for p in &undo.partitions {
        let found = crate::apply::committed_offset(current, &p.topic, p.partition);
        let before = p.before.as_ref().map(|b| b.offset);
        let (state, error) = if found == before {
            (UndoState::AlreadyRestored, None)
        } else if found != Some(p.written) {
            (UndoState::ChangedSince, None)
        } else {
            still_held(p, logs)
        };
        result
            .partitions
            .push(found_result(p, found, (state, error)));
    }
    // A topic's start offsets are deleted whole: only where every partition holding one is
    // deleted or restored by this undo (the delete goes first, the restores after it); else
    // the others would lose theirs.
    let deleting: BTreeSet<(String, i32)> = result
        .partitions
        .iter()
        .filter(|r| matches!(r.state, UndoState::WouldDelete | UndoState::WouldRestore))
        .map(|r| (r.topic.clone(), r.partition))
        .collect();
    for r in &mut result.partitions {
        if r.state != UndoState::WouldDelete {
            continue;
        }
        let others: Vec<i32> = current
            .iter()
            .filter(|((t, part), c)| {
                *t == r.topic && c.offset >= 0 && !deleting.contains(&(t.clone(), *part))
            })
            .map(|((_, part), _)| *part)
            .collect();
        if !others.is_empty() {
            r.state = UndoState::Failed;
            r.error = Some(format!(
                "DeleteShareGroupOffsets removes the whole topic {:?}, and the share group holds start offsets on partitions {others:?} that this undo neither deletes nor restores: not deleted; reset this partition with kafka-share-groups.sh --reset-offsets",
                r.topic
            ));
        }
    }
    result
}

#[cfg(test)]
mod share_tests;
mod summary;
#[cfg(test)]
mod tests;
