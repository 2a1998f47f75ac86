//! Group calls that survive a moving or loading coordinator, within one deadline and through the
//! one retry policy ([`super::retry`]), as Java's Admin does (`CoordinatorStrategy`,
//! `AlterConsumerGroupOffsetsHandler`, `ListConsumerGroupOffsetsHandler`):
//!
//! - COORDINATOR_LOAD_IN_PROGRESS (14): the same coordinator, after a backoff;
//! - NOT_COORDINATOR (16), COORDINATOR_NOT_AVAILABLE (15), or a connection that failed: find the
//!   coordinator again (FindCoordinator), after a backoff, and ask the new one;
//! - anything else the classifier calls final is reported at once.
//!
//! Reads (FindCoordinator, DescribeGroups, OffsetFetch) are retried on any retriable failure. A
//! commit is retried only when the broker said it wrote nothing: a failure before the request
//! left, or a coordinator error code for a partition (only those partitions are sent again). A
//! commit whose answer was lost is never sent again: it is [`ClientError::CommitOutcomeUnknown`].

use std::collections::BTreeMap;
use std::future::Future;

use super::cluster::KafkaClient;
use super::code::Action;
use super::deadline::Deadline;
use super::error::ClientError;
use super::groups::{
    CommitAttemptError, GroupCallError, GroupCoordinator, GroupDescription, GroupOffsets,
    OffsetToCommit,
};
use super::retry::Retrier;

/// The coordinator codes this module acts on by name.
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const NOT_COORDINATOR: i16 = 16;

impl KafkaClient {
    /// The coordinator of each group. Batched in one FindCoordinator where the broker offers
    /// v4+, one request per group below. Each group's answer stands alone: one group's
    /// authorization failure does not fail the others.
    ///
    /// Groups whose coordinator is loading or not available, and requests whose connection
    /// failed, are asked again with backoff until `deadline`; a group still without an answer
    /// then gets [`ClientError::DeadlineExceeded`] naming its last error. `Err` only for a
    /// failure that no group can get past (authentication, TLS, an unsupported broker).
    pub async fn find_group_coordinators(
        &self,
        groups: &[String],
        deadline: &Deadline,
    ) -> Result<BTreeMap<String, Result<GroupCoordinator, GroupCallError>>, ClientError> {
        let mut out = BTreeMap::new();
        let mut pending: Vec<String> = groups.to_vec();
        let mut retrier = Retrier::new(*deadline);
        let operation = |n: usize| format!("FindCoordinator for {n} group(s)");
        while !pending.is_empty() {
            let attempt = self.find_group_coordinators_once(&pending);
            let answers = match tokio::time::timeout_at(deadline.instant(), attempt).await {
                Ok(Ok(answers)) => answers,
                Ok(Err(error)) => {
                    retrier.after(error, || operation(pending.len())).await?;
                    continue;
                }
                Err(_) => return Err(retrier.expired(operation(pending.len()))),
            };
            pending.clear();
            for (group, answer) in answers {
                if matches!(&answer, Err(e) if e.source.action().is_retriable()) {
                    pending.push(group.clone());
                }
                out.insert(group, answer);
            }
            if !pending.is_empty() && !retrier.pause().await {
                for group in pending.drain(..) {
                    if let Some(Err(last)) = out.remove(&group) {
                        let error = ClientError::deadline(
                            format!("finding the coordinator of group {group:?}"),
                            deadline,
                            Some(*last.source),
                        );
                        out.insert(group.clone(), Err(GroupCallError::new(&group, error)));
                    }
                }
            }
        }
        Ok(out)
    }

    /// A group's protocol, state and member count, asked of its coordinator (`coordinator` is
    /// where to ask first; a coordinator that moved is found again).
    ///
    /// Asks ConsumerGroupDescribe (KIP-848) first where the coordinator offers it, and falls
    /// back to DescribeGroups when the group is not a consumer group (GROUP_ID_NOT_FOUND) or
    /// the version is refused. A 4.x coordinator answers DescribeGroups for an active
    /// new-protocol group with "Dead" and no members, so the old API alone is never trusted
    /// where the new one exists.
    pub async fn describe_group(
        &self,
        coordinator: &GroupCoordinator,
        group: &str,
        deadline: &Deadline,
    ) -> Result<GroupDescription, GroupCallError> {
        self.on_coordinator(
            group,
            coordinator,
            deadline,
            "DescribeGroups",
            |c| async move {
                self.describe_group_once(&c, group)
                    .await
                    .map_err(|e| *e.source)
            },
        )
        .await
    }

    /// The committed offsets of each group (all its partitions). Batched in one OffsetFetch
    /// to `coordinator` where it offers v8+; a group whose answer says the coordinator moved or
    /// is loading, or whose request failed in transit, is then asked on its own, on its
    /// current coordinator, until `deadline`. Per-partition error codes are kept in
    /// [`CommittedOffset::error_code`](super::CommittedOffset::error_code).
    pub async fn fetch_group_offsets(
        &self,
        coordinator: &GroupCoordinator,
        groups: &[String],
        deadline: &Deadline,
    ) -> Result<BTreeMap<String, Result<GroupOffsets, GroupCallError>>, ClientError> {
        let first = self.fetch_group_offsets_once(coordinator, groups);
        let mut out = match tokio::time::timeout_at(deadline.instant(), first).await {
            Ok(Ok(out)) => out,
            Ok(Err(e)) if !e.action().is_retriable() => return Err(e),
            // Every group is asked again below.
            Ok(Err(_)) | Err(_) => BTreeMap::new(),
        };
        for group in groups {
            let settled = match out.get(group) {
                Some(Ok(_)) => true,
                Some(Err(e)) => !e.source.action().is_retriable(),
                None => false,
            };
            if settled {
                continue;
            }
            let answer = self
                .on_coordinator(
                    group,
                    coordinator,
                    deadline,
                    "OffsetFetch",
                    |c| async move {
                        let mut one = self
                            .fetch_group_offsets_once(&c, std::slice::from_ref(&group.to_string()))
                            .await?;
                        match one.remove(group) {
                            Some(answer) => answer.map_err(|e| *e.source),
                            None => Err(ClientError::Protocol {
                                broker: c.address.clone(),
                                request: "OffsetFetch",
                                problem: format!("no answer for group {group:?}"),
                            }),
                        }
                    },
                )
                .await;
            out.insert(group.clone(), answer);
        }
        Ok(out)
    }

    /// Commits `offsets` for `group` as an admin (see `commit_group_offsets_once` for the
    /// request), on its coordinator (`coordinator` is where to ask first).
    ///
    /// Returns each partition's error code (0 = committed, as the broker said). Partitions the
    /// coordinator refused with COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR or
    /// COORDINATOR_NOT_AVAILABLE were not written and are sent again (alone) until `deadline`;
    /// if it passes, they keep that code. UNKNOWN_MEMBER_ID means the group has (gained)
    /// members.
    ///
    /// `Err` when no partition was written: [`GroupCallError::is_outcome_unknown`] tells the
    /// one case where that is not known, a request sent whose answer was lost; the caller must
    /// then treat the group's offsets as unknown (this call never sends it again).
    pub async fn commit_group_offsets(
        &self,
        coordinator: &GroupCoordinator,
        group: &str,
        offsets: &[OffsetToCommit],
        deadline: &Deadline,
    ) -> Result<BTreeMap<(String, i32), i16>, GroupCallError> {
        let wrap = |e: ClientError| GroupCallError::new(group, e);
        let operation = || format!("OffsetCommit for group {group:?}");
        let mut retrier = Retrier::new(*deadline);
        let mut known: Option<GroupCoordinator> = Some(coordinator.clone());
        let mut answered: BTreeMap<(String, i32), i16> = BTreeMap::new();
        let mut remaining: Vec<OffsetToCommit> = offsets.to_vec();
        loop {
            // Nothing has left yet: any failure up to the send is safe to retry.
            let ready = async {
                let c = match known.clone() {
                    Some(c) => c,
                    None => self.coordinator_of(group).await?,
                };
                let conn = self.connection_to(&c.address).await?;
                Ok::<_, ClientError>((c, conn))
            };
            let before_send = match tokio::time::timeout_at(deadline.instant(), ready).await {
                Ok(Ok((c, conn))) => Ok((c, conn)),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(retrier.expired(operation())),
            };
            let (c, conn) = match before_send {
                Ok(ready) => ready,
                Err(e @ ClientError::DeadlineExceeded { .. }) => {
                    return unwritten(answered, &remaining, e, group);
                }
                Err(e) => match retrier.after(e, operation).await {
                    Ok(action) => {
                        known = keep_coordinator(known, action);
                        continue;
                    }
                    Err(e) => return unwritten(answered, &remaining, e, group),
                },
            };
            let attempt = Self::commit_group_offsets_once(&conn, group, &remaining);
            let codes = match tokio::time::timeout_at(deadline.instant(), attempt).await {
                Ok(Ok(codes)) => codes,
                Ok(Err(CommitAttemptError::NotSent(e))) => {
                    return unwritten(answered, &remaining, e, group);
                }
                Ok(Err(CommitAttemptError::AnswerLost(e))) => {
                    return Err(wrap(lost(group, &c, e)));
                }
                Err(_) => {
                    let e = retrier.expired(operation());
                    return Err(wrap(lost(group, &c, e)));
                }
            };
            let mut refused = Vec::new();
            let mut refusal = 0;
            for o in remaining {
                // A partition left out of the answer stays out of `answered`: its outcome is
                // unknown to us, and sending it again could not tell us more.
                let Some(&code) = codes.get(&(o.topic.clone(), o.partition)) else {
                    continue;
                };
                if coordinator_refused(code) {
                    refusal = code;
                    refused.push(o);
                } else {
                    answered.insert((o.topic.clone(), o.partition), code);
                }
            }
            remaining = refused;
            if remaining.is_empty() {
                return Ok(answered);
            }
            let error = ClientError::broker(
                "OffsetCommit",
                &format!("group {group:?}"),
                &c.address,
                refusal,
            );
            match retrier.after(error, operation).await {
                Ok(action) => known = keep_coordinator(Some(c), action),
                Err(e) => return unwritten(answered, &remaining, e, group),
            }
        }
    }

    /// Runs `call` on the group's coordinator until it succeeds, fails for good, or `deadline`
    /// passes: loading means the same coordinator later, a move or a failed connection means
    /// a fresh FindCoordinator first. For reads only: `call` is sent again.
    async fn on_coordinator<T, F, Fut>(
        &self,
        group: &str,
        first: &GroupCoordinator,
        deadline: &Deadline,
        request: &'static str,
        mut call: F,
    ) -> Result<T, GroupCallError>
    where
        F: FnMut(GroupCoordinator) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let operation = || format!("{request} for group {group:?}");
        let mut retrier = Retrier::new(*deadline);
        let mut known = Some(first.clone());
        loop {
            let attempt = async {
                let c = match known.clone() {
                    Some(c) => c,
                    None => self.coordinator_of(group).await?,
                };
                call(c.clone()).await.map(|value| (c, value))
            };
            let error = match tokio::time::timeout_at(deadline.instant(), attempt).await {
                Ok(Ok((_, value))) => return Ok(value),
                Ok(Err(error)) => error,
                Err(_) => return Err(GroupCallError::new(group, retrier.expired(operation()))),
            };
            match retrier.after(error, operation).await {
                Ok(action) => known = keep_coordinator(known, action),
                Err(e) => return Err(GroupCallError::new(group, e)),
            }
        }
    }

    /// One FindCoordinator for one group.
    async fn coordinator_of(&self, group: &str) -> Result<GroupCoordinator, ClientError> {
        let mut answers = self
            .find_group_coordinators_once(std::slice::from_ref(&group.to_string()))
            .await?;
        match answers.remove(group) {
            Some(answer) => answer.map_err(|e| *e.source),
            None => Err(ClientError::Protocol {
                broker: "the cluster".into(),
                request: "FindCoordinator",
                problem: format!("no answer for group {group:?}"),
            }),
        }
    }
}

/// The coordinator to ask next: the same one while it is loading (or busy), none (find it
/// again) when it moved or its connection failed, as Java marks the coordinator unknown on a
/// disconnect.
fn keep_coordinator(known: Option<GroupCoordinator>, action: Action) -> Option<GroupCoordinator> {
    match action {
        Action::RediscoverCoordinator | Action::RefreshMetadata => None,
        _ => known,
    }
}

/// Whether the coordinator refused a partition of a commit without writing it: the codes of
/// a coordinator that is loading, moved or unavailable (and a rebalance, which Java's Admin
/// also retries), as opposed to a verdict on the partition.
/// Codes a coordinator answers before it appends anything to `__consumer_offsets`: the
/// partition was certainly not written, so sending it again is safe. REQUEST_TIMED_OUT is not
/// one of them: it comes after the append, which may still complete.
fn coordinator_refused(code: i16) -> bool {
    matches!(
        code,
        COORDINATOR_LOAD_IN_PROGRESS | COORDINATOR_NOT_AVAILABLE | NOT_COORDINATOR
    )
}

fn lost(group: &str, coordinator: &GroupCoordinator, error: ClientError) -> ClientError {
    ClientError::CommitOutcomeUnknown {
        group: group.to_string(),
        broker: coordinator.address.clone(),
        source: Box::new(error),
    }
}

/// The answer when the deadline or a final error stops a commit with partitions not written:
/// what the broker answered for the others, and for these the coordinator's last refusal
/// (COORDINATOR_NOT_AVAILABLE when it could not be reached at all); an error when the broker
/// answered for no partition.
fn unwritten(
    mut answered: BTreeMap<(String, i32), i16>,
    remaining: &[OffsetToCommit],
    error: ClientError,
    group: &str,
) -> Result<BTreeMap<(String, i32), i16>, GroupCallError> {
    if answered.is_empty() {
        return Err(GroupCallError::new(group, error));
    }
    let code = last_code(&error).unwrap_or(COORDINATOR_NOT_AVAILABLE);
    for o in remaining {
        answered.insert((o.topic.clone(), o.partition), code);
    }
    Ok(answered)
}

/// The broker's error code behind `error`, through a deadline's last failure.
fn last_code(error: &ClientError) -> Option<i16> {
    match error {
        ClientError::Broker { code, .. } => Some(code.code()),
        ClientError::DeadlineExceeded {
            last: Some(last), ..
        } => last_code(last),
        _ => None,
    }
}
