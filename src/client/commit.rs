//! Admin commits for many groups: one OffsetCommit per group (the protocol's unit), pipelined
//! on each coordinator with a bounded number in flight, every coordinator at once.
//!
//! A commit is retried only when the broker said it wrote nothing: a failure before the request
//! left, or a coordinator code on a partition (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR,
//! COORDINATOR_NOT_AVAILABLE; only those partitions are sent again, in the next round, after
//! one batched lookup for the groups whose coordinator moved). A commit whose answer was lost
//! is never sent again: it is [`ClientError::CommitOutcomeUnknown`], and with
//! [`CommitOptions::stop_after_unknown`] no commit starts after it.
//!
//! Each coordinator gets [`CommitOptions::in_flight_per_coordinator`] workers, spread over the
//! connection lanes other than the first (which carries the reads): a connection that breaks
//! or times out fails every request in flight on it, so a worker per lane bounds how many
//! commits one broken connection can make "unknown".
//!
//! # References
//! - Kafka's `AlterConsumerGroupOffsetsHandler` (the admin commit),
//!   `ClassicGroup.validateOffsetCommit`, `ConsumerGroup.validateOffsetCommit`

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use kafka_protocol::messages::{
    ApiKey, GroupId, OffsetCommitRequest, TopicName,
    offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic},
};
use kafka_protocol::protocol::StrBytes;

use super::batch::{Answers, AtDeadline, Coordinators, workers};
use super::cluster::KafkaClient;
use super::deadline::Deadline;
use super::error::ClientError;
use super::groups::GroupResults;
use super::groups::{GroupCallError, GroupCoordinator, OffsetToCommit, decode};
use crate::responses::{self, offset_commit::OffsetCommitResponse};
use crate::wire::BrokerConnection;

/// The codes this module acts on by name.
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const NOT_COORDINATOR: i16 = 16;
/// Partition codes after which the commit may or may not have been written: REQUEST_TIMED_OUT
/// (after the append, which may still complete) and UNKNOWN_SERVER_ERROR.
const OUTCOME_UNKNOWN: [i16; 2] = [7, -1];

/// Each partition's error code in a commit's answer (0 = committed).
pub type CommitCodes = BTreeMap<(String, i32), i16>;

/// How [`KafkaClient::commit_offsets`] paces its commits.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommitOptions {
    /// OffsetCommits in flight per coordinator (at least 1).
    pub in_flight_per_coordinator: usize,
    /// Once a commit's outcome is unknown (its answer lost, or a partition answered
    /// REQUEST_TIMED_OUT or UNKNOWN_SERVER_ERROR, or left out of the answer), start no further
    /// commit: those groups get [`ClientError::Halted`]. Commits already in flight finish.
    pub stop_after_unknown: bool,
}

impl Default for CommitOptions {
    fn default() -> Self {
        CommitOptions {
            in_flight_per_coordinator: 8,
            stop_after_unknown: true,
        }
    }
}

/// One group's commit as it goes: what is left to send, and what the broker answered.
#[derive(Default)]
struct Progress {
    remaining: Vec<OffsetToCommit>,
    answered: CommitCodes,
    /// The last coordinator code that refused a partition, for partitions still unsent.
    refusal: Option<i16>,
}

impl KafkaClient {
    /// Commits each group's offsets as an admin (no member id, generation / member epoch -1),
    /// one OffsetCommit per group, on its coordinator (`known`, or looked up in one batched
    /// FindCoordinator), pipelined as [`CommitOptions`] says.
    ///
    /// Each group's answer is each partition's error code (0 = committed, as the broker said;
    /// UNKNOWN_MEMBER_ID = the group has members, nothing written). Partitions the coordinator
    /// refused with a coordinator code and that `deadline` left unsent keep that code. `Err`
    /// when no partition was answered: [`GroupCallError::is_outcome_unknown`] tells the one
    /// case where the group may have been written (its request left and the answer was lost;
    /// read its offsets back before committing again); [`GroupCallError::is_halted`] a group
    /// never sent because of such a loss; anything else wrote nothing.
    ///
    /// A commit already sent when `deadline` passes is not cut: it waits for its answer, up to
    /// the client's request timeout. No commit starts after the deadline.
    ///
    /// ```no_run
    /// # async fn example(client: mm2_offsets::client::KafkaClient) {
    /// use std::collections::BTreeMap;
    /// use std::time::Duration;
    /// use mm2_offsets::client::{CommitOptions, Coordinators, Deadline, OffsetToCommit};
    ///
    /// let commits = BTreeMap::from([(
    ///     "orders-app".to_string(),
    ///     vec![OffsetToCommit::new("orders", 0, 42)],
    /// )]);
    /// let deadline = Deadline::after(Duration::from_secs(30));
    /// let results = client
    ///     .commit_offsets(&commits, &Coordinators::new(), &CommitOptions::default(), &deadline)
    ///     .await;
    /// for (group, result) in results {
    ///     match result {
    ///         Ok(codes) => println!("{group}: {codes:?}"),
    ///         Err(e) if e.is_outcome_unknown() => println!("{group}: UNKNOWN, read it back: {e}"),
    ///         Err(e) => println!("{group}: not written: {e}"),
    ///     }
    /// }
    /// # }
    /// ```
    pub async fn commit_offsets(
        &self,
        commits: &BTreeMap<String, Vec<OffsetToCommit>>,
        known: &Coordinators,
        options: &CommitOptions,
        deadline: &Deadline,
    ) -> GroupResults<CommitCodes> {
        let progress: Mutex<BTreeMap<String, Progress>> = Mutex::new(
            commits
                .iter()
                .map(|(g, offsets)| {
                    let p = Progress {
                        remaining: offsets.clone(),
                        ..Progress::default()
                    };
                    (g.clone(), p)
                })
                .collect(),
        );
        let stop = AtomicBool::new(false);
        let outcomes = self
            .per_coordinator(
                "OffsetCommit",
                commits.keys().cloned(),
                known,
                deadline,
                AtDeadline::LetFinish,
                |c, groups| self.commit_on(c, groups, &progress, &stop, options, deadline),
            )
            .await;
        let mut progress = progress.into_inner().unwrap_or_else(|e| e.into_inner());
        outcomes
            .into_iter()
            .map(|(group, outcome)| {
                let p = progress.remove(&group).unwrap_or_default();
                let result = match outcome {
                    Ok(()) => Ok(p.answered),
                    Err(e) if e.is_outcome_unknown() => Err(e),
                    Err(e) => unwritten(p, e),
                };
                (group, result)
            })
            .collect()
    }

    /// Commits `offsets` for `group` as an admin, on its coordinator (`coordinator` is where
    /// to ask first): [`commit_offsets`] for one group.
    ///
    /// [`commit_offsets`]: KafkaClient::commit_offsets
    pub async fn commit_group_offsets(
        &self,
        coordinator: &GroupCoordinator,
        group: &str,
        offsets: &[OffsetToCommit],
        deadline: &Deadline,
    ) -> Result<CommitCodes, GroupCallError> {
        let commits = BTreeMap::from([(group.to_string(), offsets.to_vec())]);
        let known = Coordinators::from([(group.to_string(), coordinator.clone())]);
        let options = CommitOptions {
            in_flight_per_coordinator: 1,
            stop_after_unknown: false,
        };
        let mut results = self
            .commit_offsets(&commits, &known, &options, deadline)
            .await;
        results.remove(group).unwrap_or_else(|| {
            Err(GroupCallError::new(
                group,
                ClientError::Protocol {
                    broker: coordinator.address.clone(),
                    request: "OffsetCommit",
                    problem: format!("no outcome for group {group:?}"),
                },
            ))
        })
    }

    /// One round of commits on one coordinator: its groups through the workers.
    async fn commit_on(
        &self,
        coordinator: GroupCoordinator,
        groups: Vec<String>,
        progress: &Mutex<BTreeMap<String, Progress>>,
        stop: &AtomicBool,
        options: &CommitOptions,
        deadline: &Deadline,
    ) -> Answers<()> {
        let coordinator = &coordinator;
        workers(
            groups,
            options.in_flight_per_coordinator,
            |worker, group| async move {
                let lane = self.commit_lane(worker);
                let outcome = self
                    .commit_one(coordinator, lane, &group, progress, stop, options, deadline)
                    .await;
                (group, outcome)
            },
        )
        .await
        .into_iter()
        .collect()
    }

    /// One OffsetCommit for what is left of `group`'s commit. `Ok` when nothing is left; a
    /// coordinator code (retried by the engine) when partitions were refused unwritten.
    #[allow(clippy::too_many_arguments)]
    async fn commit_one(
        &self,
        coordinator: &GroupCoordinator,
        lane: usize,
        group: &str,
        progress: &Mutex<BTreeMap<String, Progress>>,
        stop: &AtomicBool,
        options: &CommitOptions,
        deadline: &Deadline,
    ) -> Result<(), ClientError> {
        if stop.load(Ordering::SeqCst) {
            return Err(ClientError::Halted {
                group: group.to_string(),
            });
        }
        if deadline.expired() {
            return Err(ClientError::deadline(
                format!("OffsetCommit for group {group:?}"),
                deadline,
                None,
            ));
        }
        let lock = || progress.lock().unwrap_or_else(|e| e.into_inner());
        let remaining = lock()
            .get(group)
            .map(|p| p.remaining.clone())
            .unwrap_or_default();
        // Nothing has left yet: a failure to connect is safe to retry.
        let conn = self.connection_on_lane(&coordinator.address, lane).await?;
        let codes = match commit_once(&conn, group, &remaining).await {
            Ok(codes) => codes,
            Err(CommitAttemptError::NotSent(e)) => return Err(e),
            Err(CommitAttemptError::AnswerLost(e)) => {
                if options.stop_after_unknown {
                    stop.store(true, Ordering::SeqCst);
                }
                return Err(ClientError::CommitOutcomeUnknown {
                    group: group.to_string(),
                    broker: coordinator.address.clone(),
                    source: Box::new(e),
                });
            }
        };
        // A partition answered REQUEST_TIMED_OUT or UNKNOWN_SERVER_ERROR, or left out of the
        // answer, may or may not have been written: as unknown as a lost answer.
        let unknown = remaining.iter().any(|o| {
            codes
                .get(&(o.topic.clone(), o.partition))
                .is_none_or(|c| OUTCOME_UNKNOWN.contains(c))
        });
        if unknown && options.stop_after_unknown {
            stop.store(true, Ordering::SeqCst);
        }
        let mut guard = lock();
        let p = guard.entry(group.to_string()).or_default();
        let mut refused = Vec::new();
        for o in remaining {
            // A partition left out of the answer stays out of `answered`: its outcome is
            // unknown to us, and sending it again could not tell us more.
            let Some(&code) = codes.get(&(o.topic.clone(), o.partition)) else {
                continue;
            };
            if coordinator_refused(code) {
                p.refusal = Some(code);
                refused.push(o);
            } else {
                p.answered.insert((o.topic.clone(), o.partition), code);
            }
        }
        p.remaining = refused;
        match (p.remaining.is_empty(), p.refusal) {
            (true, _) => Ok(()),
            (false, code) => Err(ClientError::broker(
                "OffsetCommit",
                &format!("group {group:?}"),
                &coordinator.address,
                code.unwrap_or(COORDINATOR_NOT_AVAILABLE),
            )),
        }
    }
}

/// Sends one admin OffsetCommit of `offsets` for `group` on `conn`: no member id,
/// generation / member epoch -1, no instance id, the metadata carried. The coordinator accepts
/// it only while the group has no members; UNKNOWN_MEMBER_ID means the group has (gained)
/// members.
///
/// Returns each partition's error code; a partition the coordinator left out of its answer is
/// missing from the map. [`CommitAttemptError::NotSent`] wrote nothing (the version could not be
/// negotiated), [`CommitAttemptError::AnswerLost`] may have written (the request left, its
/// answer was lost or undecodable).
async fn commit_once(
    conn: &BrokerConnection,
    group: &str,
    offsets: &[OffsetToCommit],
) -> Result<CommitCodes, CommitAttemptError> {
    let version = conn
        .negotiate(ApiKey::OffsetCommit, responses::OFFSET_COMMIT_VERSIONS)
        .map_err(|e| CommitAttemptError::NotSent(e.into()))?;
    let mut by_topic: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
    for o in offsets {
        by_topic.entry(o.topic.as_str()).or_default().push(
            OffsetCommitRequestPartition::default()
                .with_partition_index(o.partition)
                .with_committed_offset(o.offset)
                .with_committed_leader_epoch(-1)
                .with_committed_metadata(Some(StrBytes::from_string(
                    o.metadata.clone().unwrap_or_default(),
                ))),
        );
    }
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(StrBytes::from_static_str(""))
        .with_group_instance_id(None)
        .with_retention_time_ms(-1)
        .with_topics(
            by_topic
                .into_iter()
                .map(|(topic, partitions)| {
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                        .with_partitions(partitions)
                })
                .collect(),
        );
    let lost = CommitAttemptError::AnswerLost;
    let body = conn
        .send(&request, version)
        .await
        .map_err(|e| lost(e.into()))?;
    let response = decode(conn, OffsetCommitResponse::decode, body, version).map_err(lost)?;
    let mut out = BTreeMap::new();
    for t in &response.topics {
        for &(partition, code) in &t.partitions {
            out.insert((t.name.clone(), partition), code);
        }
    }
    Ok(out)
}

/// Why one OffsetCommit attempt has no per-partition answer.
#[derive(Debug)]
enum CommitAttemptError {
    /// Nothing was sent: retrying is safe.
    NotSent(ClientError),
    /// The request was sent and its answer lost: the group's offsets are unknown.
    AnswerLost(ClientError),
}

/// Codes a coordinator answers before it appends anything to `__consumer_offsets`: the
/// partition was certainly not written, so sending it again is safe. REQUEST_TIMED_OUT is not
/// one of them: it comes after the append, which may still complete.
fn coordinator_refused(code: i16) -> bool {
    matches!(
        code,
        COORDINATOR_LOAD_IN_PROGRESS | COORDINATOR_NOT_AVAILABLE | NOT_COORDINATOR
    )
}

/// The answer when the deadline or a final error stops a commit with partitions not written:
/// what the broker answered for the others, and for these the coordinator's last refusal
/// (COORDINATOR_NOT_AVAILABLE when it could not be reached at all); an error when the broker
/// answered for no partition.
fn unwritten(p: Progress, error: GroupCallError) -> Result<CommitCodes, GroupCallError> {
    if p.answered.is_empty() {
        return Err(error);
    }
    let code = error
        .source
        .broker_code()
        .map(|c| c.code())
        .or(p.refusal)
        .unwrap_or(COORDINATOR_NOT_AVAILABLE);
    let mut answered = p.answered;
    for o in &p.remaining {
        answered.insert((o.topic.clone(), o.partition), code);
    }
    Ok(answered)
}
