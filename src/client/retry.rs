//! The client's one retry policy: what each Kafka error code means for the caller ([`classify`]),
//! and one way to retry with backoff inside a [`Deadline`] ([`Retrier`], [`retry_with_backoff`]).
//!
//! Every error code that Fetch, ListOffsets, Metadata, FindCoordinator, OffsetFetch,
//! OffsetCommit, DescribeGroups and ConsumerGroupDescribe can return is named once in `RULES`
//! with the [`Action`] it calls for. Retriability agrees with Kafka's own table (taken from
//! `kafka-protocol`'s `ResponseError::is_retriable`, which mirrors Java's `RetriableException`
//! hierarchy); where we deliberately differ, the rule says why. A code not in the table falls back
//! to that protocol table: retriable codes back off, the rest fail.
//!
//! # Using it from a new request
//! 1. Turn a non-zero error code into a [`ClientError::Broker`] with the request name and the
//!    resource (topic-partition, group): `broker_error("OffsetFetch", group, broker, code)` inside
//!    the crate. Its [`ClientError::action`] comes from [`classify`].
//! 2. Loop with a [`Retrier`] (or call [`retry_with_backoff`] when there is nothing to refresh):
//!    on `Err(e)`, `retrier.after(e, || "what we were doing".into()).await?` sleeps the backoff and
//!    returns the [`Action`] to take before the next attempt, or the error to report: the error
//!    itself when it is not retriable, [`ClientError::DeadlineExceeded`] (with the last failure
//!    as its source) when the deadline passed.
//! 3. Act on the returned [`Action`]: [`Action::RefreshMetadata`] re-reads the topic's leaders,
//!    [`Action::RediscoverCoordinator`] sends FindCoordinator again, [`Action::Backoff`] simply
//!    tries again.
//!
//! # References
//! - Java: `org.apache.kafka.common.protocol.Errors`, `RetriableException` and its subclasses,
//!   `InvalidMetadataException` (the errors that call for a metadata refresh)
//! - KIP-580 (exponential backoff), KIP-320 (leader epochs)

use std::future::Future;

use kafka_protocol::error::ResponseError;

use super::deadline::{Backoff, Deadline};
use super::error::ClientError;

/// What to do about a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Retrying cannot help: report it.
    Fail,
    /// Transient (a load, a timeout, a throttle): back off and try again.
    Backoff,
    /// Leadership or topology changed (Java's `InvalidMetadataException`): refresh metadata,
    /// back off and try again, on the partition's new leader.
    RefreshMetadata,
    /// The group coordinator moved or is unavailable: find the coordinator again, back off and
    /// try again.
    RediscoverCoordinator,
}

impl Action {
    /// Whether another attempt can succeed.
    pub fn is_retriable(self) -> bool {
        self != Action::Fail
    }
}

/// One error code, the action it calls for, and which requests return it.
struct Rule {
    code: i16,
    action: Action,
    /// The requests that return it, and why this action when it is not obvious.
    note: &'static str,
}

const fn rule(code: i16, action: Action, note: &'static str) -> Rule {
    Rule { code, action, note }
}

use Action::{Backoff as B, Fail as F, RediscoverCoordinator as C, RefreshMetadata as M};

/// Every code our requests can return. Keep sorted by code.
const RULES: &[Rule] = &[
    rule(
        -1,
        F,
        "any request: the broker hit an unexpected error; Java does not retry",
    ),
    rule(
        1,
        F,
        "Fetch/ListOffsets: the offset left the log (retention, DeleteRecords); looping on it never converges, the caller reports it",
    ),
    rule(
        2,
        B,
        "Fetch: CORRUPT_MESSAGE, a bad batch on the broker side; retriable in Java",
    ),
    rule(
        3,
        M,
        "all: UNKNOWN_TOPIC_OR_PARTITION, stale metadata or a deleted topic; the refresh tells which",
    ),
    rule(4, F, "Fetch: INVALID_FETCH_SIZE, a bug on our side"),
    rule(
        5,
        M,
        "Fetch/ListOffsets/Metadata: a leader election is under way",
    ),
    rule(6, M, "Fetch/ListOffsets: the leader moved"),
    rule(7, B, "all: REQUEST_TIMED_OUT on the broker"),
    rule(9, M, "Fetch/ListOffsets/Metadata: REPLICA_NOT_AVAILABLE"),
    rule(12, F, "OffsetCommit: OFFSET_METADATA_TOO_LARGE"),
    rule(13, B, "all: NETWORK_EXCEPTION inside the cluster"),
    rule(
        14,
        B,
        "coordinator requests: COORDINATOR_LOAD_IN_PROGRESS, same coordinator, later",
    ),
    rule(15, C, "coordinator requests: COORDINATOR_NOT_AVAILABLE"),
    rule(16, C, "coordinator requests: NOT_COORDINATOR, it moved"),
    rule(
        17,
        F,
        "Metadata: INVALID_TOPIC_EXCEPTION, an illegal topic name",
    ),
    rule(22, F, "OffsetCommit: ILLEGAL_GENERATION"),
    rule(24, F, "group requests: INVALID_GROUP_ID"),
    rule(
        25,
        F,
        "OffsetCommit/OffsetFetch: UNKNOWN_MEMBER_ID; for a commit from outside the group it means the group has members",
    ),
    rule(
        27,
        B,
        "OffsetCommit: REBALANCE_IN_PROGRESS; Java's Admin retries it (protocol table: not retriable), and a group that keeps its members then fails with UNKNOWN_MEMBER_ID",
    ),
    rule(28, F, "OffsetCommit: INVALID_COMMIT_OFFSET_SIZE"),
    rule(29, F, "all: TOPIC_AUTHORIZATION_FAILED"),
    rule(30, F, "group requests: GROUP_AUTHORIZATION_FAILED"),
    rule(31, F, "all: CLUSTER_AUTHORIZATION_FAILED"),
    rule(35, F, "all: UNSUPPORTED_VERSION"),
    rule(41, M, "Metadata: NOT_CONTROLLER"),
    rule(42, F, "all: INVALID_REQUEST, a bug on our side"),
    rule(43, F, "ListOffsets: UNSUPPORTED_FOR_MESSAGE_FORMAT"),
    rule(
        56,
        M,
        "Fetch/ListOffsets: KAFKA_STORAGE_ERROR, the replica's disk failed and leadership moves",
    ),
    rule(
        69,
        F,
        "OffsetFetch/OffsetCommit/describe: GROUP_ID_NOT_FOUND",
    ),
    rule(
        70,
        B,
        "Fetch: FETCH_SESSION_ID_NOT_FOUND (we fetch outside sessions; harmless)",
    ),
    rule(71, B, "Fetch: INVALID_FETCH_SESSION_EPOCH"),
    rule(
        72,
        M,
        "Metadata: LISTENER_NOT_FOUND on some broker, during a roll",
    ),
    rule(
        74,
        M,
        "Fetch/ListOffsets: FENCED_LEADER_EPOCH, our epoch is old",
    ),
    rule(
        75,
        M,
        "Fetch/ListOffsets: UNKNOWN_LEADER_EPOCH, the broker is behind us",
    ),
    rule(76, F, "Fetch: UNSUPPORTED_COMPRESSION_TYPE"),
    rule(
        78,
        M,
        "ListOffsets: OFFSET_NOT_AVAILABLE, a new leader is catching up",
    ),
    rule(82, F, "OffsetCommit: FENCED_INSTANCE_ID"),
    rule(
        88,
        B,
        "OffsetFetch: UNSTABLE_OFFSET_COMMIT, a transaction is pending",
    ),
    rule(89, B, "all: THROTTLING_QUOTA_EXCEEDED"),
    rule(100, M, "Fetch/Metadata/OffsetCommit: UNKNOWN_TOPIC_ID"),
    rule(
        103,
        M,
        "Fetch: INCONSISTENT_TOPIC_ID, the topic was recreated",
    ),
    rule(106, M, "Fetch: FETCH_SESSION_TOPIC_ID_ERROR"),
    rule(
        109,
        F,
        "Fetch: OFFSET_MOVED_TO_TIERED_STORAGE; we do not read remote storage",
    ),
    rule(
        110,
        F,
        "ConsumerGroupDescribe/OffsetCommit: FENCED_MEMBER_EPOCH",
    ),
    rule(113, F, "OffsetFetch/OffsetCommit: STALE_MEMBER_EPOCH"),
];

/// The action a Kafka error code calls for. `0` (no error) is [`Action::Fail`]: there is nothing
/// to retry.
///
/// ```
/// use mm2_offsets::client::{Action, classify};
/// assert_eq!(classify(6), Action::RefreshMetadata); // NOT_LEADER_OR_FOLLOWER
/// assert_eq!(classify(16), Action::RediscoverCoordinator); // NOT_COORDINATOR
/// assert_eq!(classify(1), Action::Fail); // OFFSET_OUT_OF_RANGE is reported, never looped on
/// ```
pub fn classify(code: i16) -> Action {
    match RULES.binary_search_by_key(&code, |r| r.code) {
        Ok(i) => RULES[i].action,
        Err(_) => match ResponseError::try_from_code(code) {
            Some(e) if e.is_retriable() => Action::Backoff,
            _ => Action::Fail,
        },
    }
}

/// Why a code gets its action, for logs; empty when the protocol table decided.
fn rule_note(code: i16) -> &'static str {
    RULES
        .binary_search_by_key(&code, |r| r.code)
        .map_or("", |i| RULES[i].note)
}

/// Retries inside one deadline: each retriable failure waits an exponentially growing, jittered
/// pause ([`Backoff`]) that never runs past the deadline. Call [`progressed`](Self::progressed)
/// after a success that moves the work forward, so a long read does not keep a long pause.
#[derive(Debug)]
pub(crate) struct Retrier {
    deadline: Deadline,
    backoff: Backoff,
    /// The last retriable failure, for the error when the deadline cuts an attempt short.
    last: Option<ClientError>,
}

impl Retrier {
    pub(crate) fn new(deadline: Deadline) -> Self {
        Retrier {
            deadline,
            backoff: Backoff::default(),
            last: None,
        }
    }

    /// The work moved forward: the next failure starts from the shortest pause again.
    pub(crate) fn progressed(&mut self) {
        self.backoff = Backoff::default();
    }

    /// Waits the next pause for a condition that is not an error (e.g. an empty answer below the
    /// end of a range). False once the deadline has passed.
    pub(crate) async fn pause(&mut self) -> bool {
        self.backoff.wait(&self.deadline).await
    }

    /// Decides about `error`. A non-retriable error comes back as it is. A retriable one waits
    /// the next pause and returns the action to take before trying again, or, if the deadline
    /// passes first, [`ClientError::DeadlineExceeded`] naming `operation` with `error` as its
    /// source.
    pub(crate) async fn after(
        &mut self,
        error: ClientError,
        operation: impl FnOnce() -> String,
    ) -> Result<Action, ClientError> {
        let action = error.action();
        if !action.is_retriable() {
            return Err(error);
        }
        let why = match &error {
            ClientError::Broker { code, .. } => rule_note(*code),
            _ => "",
        };
        tracing::debug!(error = %error, ?action, why, "retrying");
        if self.backoff.wait(&self.deadline).await {
            self.last = Some(error);
            Ok(action)
        } else {
            Err(ClientError::deadline(
                operation(),
                &self.deadline,
                Some(error),
            ))
        }
    }

    /// [`ClientError::DeadlineExceeded`] for an attempt the deadline cut short, with the last
    /// retriable failure before it as its source.
    pub(crate) fn expired(&mut self, operation: String) -> ClientError {
        ClientError::deadline(operation, &self.deadline, self.last.take())
    }
}

/// Runs `attempt` until it succeeds, fails for good, or `deadline` passes (each attempt is also
/// cut at the deadline). For operations that need nothing refreshed between attempts; loops
/// that refresh metadata or a coordinator use [`Retrier`] directly.
pub(crate) async fn retry_with_backoff<T, F, Fut>(
    deadline: &Deadline,
    operation: impl Fn() -> String,
    mut attempt: F,
) -> Result<T, ClientError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ClientError>>,
{
    let mut retrier = Retrier::new(*deadline);
    loop {
        let error = match tokio::time::timeout_at(deadline.instant(), attempt()).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(error)) => error,
            Err(_) => return Err(retrier.expired(operation())),
        };
        retrier.after(error, &operation).await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rules_are_sorted_unique_and_named() {
        for pair in RULES.windows(2) {
            assert!(
                pair[0].code < pair[1].code,
                "{} before {}",
                pair[0].code,
                pair[1].code
            );
        }
        for r in RULES {
            let name = crate::wire::error_name(r.code);
            assert!(!name.starts_with("UNKNOWN_CODE"), "{} has no name", r.code);
            assert!(!r.note.is_empty());
        }
    }

    /// Our retriability agrees with Kafka's table except where a rule says why not.
    #[test]
    fn retriability_follows_the_protocol_table() {
        const DELIBERATE: &[i16] = &[27];
        for r in RULES.iter().filter(|r| !DELIBERATE.contains(&r.code)) {
            let protocol = ResponseError::try_from_code(r.code).is_some_and(|e| e.is_retriable());
            assert_eq!(
                r.action.is_retriable(),
                protocol,
                "{} ({})",
                crate::wire::error_name(r.code),
                r.note
            );
        }
    }

    #[test]
    fn actions_for_the_codes_that_matter() {
        assert_eq!(classify(6), Action::RefreshMetadata);
        assert_eq!(classify(74), Action::RefreshMetadata);
        assert_eq!(classify(7), Action::Backoff);
        assert_eq!(classify(14), Action::Backoff);
        assert_eq!(classify(15), Action::RediscoverCoordinator);
        assert_eq!(classify(1), Action::Fail);
        assert_eq!(classify(29), Action::Fail);
        assert_eq!(classify(0), Action::Fail);
        // Not in our table: the protocol table decides (NOT_ENOUGH_REPLICAS is retriable).
        assert_eq!(classify(19), Action::Backoff);
        assert_eq!(classify(i16::MAX), Action::Fail);
    }

    #[tokio::test]
    async fn retry_with_backoff_retries_then_succeeds() {
        let deadline = Deadline::after(Duration::from_secs(5));
        let mut calls = 0;
        let value = retry_with_backoff(
            &deadline,
            || "test".into(),
            || {
                calls += 1;
                let n = calls;
                async move {
                    if n < 3 {
                        Err(ClientError::NoLeader {
                            topic: "t".into(),
                            partition: 0,
                            leader: -1,
                        })
                    } else {
                        Ok(n)
                    }
                }
            },
        )
        .await
        .unwrap();
        assert_eq!(value, 3);
    }

    #[tokio::test]
    async fn retry_with_backoff_stops_at_the_deadline_naming_the_last_error() {
        let deadline = Deadline::after(Duration::from_millis(250));
        let started = std::time::Instant::now();
        let err = retry_with_backoff::<(), _, _>(
            &deadline,
            || "reading t-0".into(),
            || async {
                Err(ClientError::NoLeader {
                    topic: "t".into(),
                    partition: 0,
                    leader: -1,
                })
            },
        )
        .await
        .unwrap_err();
        assert!(started.elapsed() < Duration::from_millis(600));
        let text = err.to_string();
        assert!(text.contains("reading t-0"), "{text}");
        assert!(text.contains("has no leader"), "{text}");
        assert!(std::error::Error::source(&err).is_some());
    }

    #[tokio::test]
    async fn non_retriable_errors_are_not_retried() {
        let deadline = Deadline::after(Duration::from_secs(5));
        let mut calls = 0;
        let err = retry_with_backoff::<(), _, _>(
            &deadline,
            || "x".into(),
            || {
                calls += 1;
                async { Err(ClientError::UnknownTopic { topic: "t".into() }) }
            },
        )
        .await
        .unwrap_err();
        assert!(matches!(err, ClientError::UnknownTopic { .. }));
        assert_eq!(calls, 1);
    }
}
