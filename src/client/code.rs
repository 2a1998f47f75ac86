//! Kafka error codes: each one's name, the [`Action`] it calls for, and what a user can do
//! about it. The one classifier every layer's retry decision goes through.
//!
//! Every error code that Fetch, ListOffsets, Metadata, FindCoordinator, OffsetFetch,
//! OffsetCommit, DescribeGroups and ConsumerGroupDescribe can return is named once in `RULES`
//! with the [`Action`] it calls for. Retriability agrees with Kafka's own table (taken from
//! `kafka-protocol`'s `ResponseError::is_retriable`, which mirrors Java's `RetriableException`
//! hierarchy); where we deliberately differ, the rule says why. A code not in the table falls back
//! to that protocol table: retriable codes back off, the rest fail.
//!
//! # References
//! - Java: `org.apache.kafka.common.protocol.Errors`, `RetriableException` and its subclasses,
//!   `InvalidMetadataException` (the errors that call for a metadata refresh)

use kafka_protocol::error::ResponseError;

/// A Kafka protocol error code, as a broker answered it (`Errors` in Java): what it is called,
/// what it calls for, and what a user can do about it.
///
/// ```
/// use mm2_offsets::client::{Action, ErrorCode};
///
/// let code = ErrorCode::new(6);
/// assert_eq!(code.name(), "NOT_LEADER_OR_FOLLOWER");
/// assert_eq!(code.action(), Action::RefreshMetadata);
/// assert_eq!(code.to_string(), "NOT_LEADER_OR_FOLLOWER (code 6)");
/// assert_eq!(ErrorCode::new(29).hint(), Some("the principal may not read this topic: grant DESCRIBE and READ on it"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode(i16);

impl ErrorCode {
    /// The code as sent on the wire.
    pub const fn new(code: i16) -> Self {
        ErrorCode(code)
    }

    /// The number.
    pub const fn code(self) -> i16 {
        self.0
    }

    /// Kafka's name for it, as the protocol guide and Java's `Errors` spell it:
    /// `NOT_LEADER_OR_FOLLOWER` for 6, `NONE` for 0, `UNKNOWN_CODE_-42` for a code we do not
    /// know.
    pub fn name(self) -> String {
        crate::wire::error_name(self.0)
    }

    /// What a failure with this code calls for. `0` (no error) is [`Action::Fail`]: there is
    /// nothing to retry.
    ///
    /// ```
    /// use mm2_offsets::client::{Action, ErrorCode};
    /// assert_eq!(ErrorCode::new(6).action(), Action::RefreshMetadata); // NOT_LEADER_OR_FOLLOWER
    /// assert_eq!(ErrorCode::new(16).action(), Action::RediscoverCoordinator); // NOT_COORDINATOR
    /// // OFFSET_OUT_OF_RANGE is reported, never looped on
    /// assert_eq!(ErrorCode::new(1).action(), Action::Fail);
    /// ```
    pub fn action(self) -> Action {
        classify(self.0)
    }

    /// What a user can do about a code that will not go away by retrying, if we know.
    pub fn hint(self) -> Option<&'static str> {
        match self.0 {
            29 => Some("the principal may not read this topic: grant DESCRIBE and READ on it"),
            31 => Some("the principal lacks cluster authorization"),
            35 => Some("the broker does not support this request version"),
            _ => None,
        }
    }
}

impl From<i16> for ErrorCode {
    fn from(code: i16) -> Self {
        ErrorCode(code)
    }
}

impl PartialEq<i16> for ErrorCode {
    fn eq(&self, code: &i16) -> bool {
        self.0 == *code
    }
}

/// `NAME (code N)`.
impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.name(), self.0)
    }
}

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

/// How long a group call may keep retrying `code` before the group is given up on, when that is
/// shorter than the group's share of the deadline: for codes that say something about the
/// group's own state, which waiting the whole deadline will not change.
///
/// UNSTABLE_OFFSET_COMMIT (88): a transaction holds offsets of the group that are neither
/// committed nor aborted (KIP-447). A transaction being committed settles in milliseconds; one
/// still open after three seconds is a producer mid-transaction (or a hung one, open until its
/// `transaction.timeout.ms`, 60 s by default), and the caller should say so rather than wait.
pub(crate) fn patience(code: i16) -> Option<std::time::Duration> {
    match code {
        UNSTABLE_OFFSET_COMMIT => Some(std::time::Duration::from_secs(3)),
        _ => None,
    }
}

/// UNSTABLE_OFFSET_COMMIT: an OffsetFetch with `require_stable` found transactional offsets
/// pending for the group (KIP-447).
pub const UNSTABLE_OFFSET_COMMIT: i16 = 88;

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

/// The action a Kafka error code calls for (public as [`ErrorCode::action`]). `0` (no error) is
/// [`Action::Fail`]: there is nothing to retry.
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
pub(super) fn rule_note(code: i16) -> &'static str {
    RULES
        .binary_search_by_key(&code, |r| r.code)
        .map_or("", |i| RULES[i].note)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let name = ErrorCode::new(r.code).name();
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
                ErrorCode::new(r.code).name(),
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

    #[test]
    fn names_follow_kafka() {
        assert_eq!(ErrorCode::new(0).name(), "NONE");
        assert_eq!(ErrorCode::new(-1).name(), "UNKNOWN_SERVER_ERROR");
        assert_eq!(ErrorCode::new(16).name(), "NOT_COORDINATOR");
        assert_eq!(ErrorCode::new(-42).name(), "UNKNOWN_CODE_-42");
    }
}
