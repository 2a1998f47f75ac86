//! Client errors. What each one calls for is decided in one place, [`super::retry`].

use std::sync::Arc;
use std::time::Duration;

use super::code::{Action, ErrorCode};
use super::deadline::Deadline;
use crate::wire::WireError;
use crate::wire::decode::DecodeError;

/// What went wrong in the client layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// No bootstrap server (nor known broker) could be reached in one pass over them. Retriable
    /// when the last failure is: the client tries again with backoff until its deadline.
    #[error("could not reach any bootstrap server ({servers}): {last}")]
    Bootstrap {
        /// The servers tried, comma-separated.
        servers: String,
        /// The last failure.
        #[source]
        last: Box<WireError>,
    },
    /// The configuration lists no bootstrap server.
    #[error("no bootstrap servers configured (bootstrap.servers is empty)")]
    NoBootstrapServers,
    /// A transport-level failure.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// A response could not be decoded.
    #[error("from broker {broker}: {source}")]
    Decode {
        /// The broker that sent it.
        broker: String,
        /// What was wrong.
        #[source]
        source: DecodeError,
    },
    /// The broker answered with a Kafka error code.
    #[error("{request} for {resource} failed on broker {broker}: {code}{}", hint_suffix(.hint))]
    Broker {
        /// The request, e.g. `"Fetch"`.
        request: &'static str,
        /// The topic-partition or other resource it was about.
        resource: String,
        /// The broker address.
        broker: String,
        /// The Kafka error code; its [`name`](ErrorCode::name) is e.g. `NOT_LEADER_OR_FOLLOWER`.
        code: ErrorCode,
        /// What the user can do, if we know ([`ErrorCode::hint`]).
        hint: Option<&'static str>,
    },
    /// The topic does not exist. Never auto-created.
    #[error("topic {topic:?} does not exist on the cluster")]
    UnknownTopic {
        /// The topic.
        topic: String,
    },
    /// The partition does not exist.
    #[error("partition {partition} of topic {topic:?} does not exist")]
    UnknownPartition {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
    },
    /// A partition has no leader in the metadata we hold, even after refreshing.
    #[error(
        "partition {topic}-{partition} has no leader (broker id {leader}) in the cluster metadata"
    )]
    NoLeader {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The leader id the metadata gave.
        leader: i32,
    },
    /// The requested offset is outside the partition's log (e.g. deleted by retention).
    #[error(
        "offset {offset} is out of range for {topic}-{partition}: the log was truncated or deleted (retention, DeleteRecords) while reading; read again from the new log start"
    )]
    OffsetOutOfRange {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The offset that was asked for.
        offset: i64,
    },
    /// The operation's deadline passed.
    #[error("{operation} did not finish within {:?}{}", crate::wire::to_millis(*.timeout), last_suffix(.last))]
    DeadlineExceeded {
        /// What was being done, naming the topic-partition or broker.
        operation: String,
        /// The whole budget.
        timeout: Duration,
        /// The last retriable failure, if any.
        #[source]
        last: Option<Box<ClientError>>,
    },
    /// An OffsetCommit was sent but its answer was lost (connection closed, timed out,
    /// undecodable): the coordinator may or may not have written it. Never retried blindly.
    #[error(
        "the OffsetCommit of group {group:?} was sent to {broker} but its answer was lost, so whether it was written is unknown: {source}; read the group's offsets back before committing again"
    )]
    CommitOutcomeUnknown {
        /// The group.
        group: String,
        /// The coordinator it was sent to.
        broker: String,
        /// What lost the answer.
        #[source]
        source: Box<ClientError>,
    },
    /// One failure of a request that carried several groups (or partitions), given to each of
    /// them: a connection that broke under a batched request fails every group in it alike.
    #[error(transparent)]
    Shared(Arc<ClientError>),
    /// An OffsetCommit that was never sent because an earlier commit's outcome is unknown: once
    /// one answer is lost, no further group is written until the offsets are read back.
    #[error(
        "the OffsetCommit of group {group:?} was not sent: an earlier commit's answer was lost, so no further commit was started"
    )]
    Halted {
        /// The group.
        group: String,
    },
    /// A broker answered with something we cannot work with.
    #[error("broker {broker} answered {request} unexpectedly: {problem}")]
    Protocol {
        /// The broker address.
        broker: String,
        /// The request.
        request: &'static str,
        /// What was wrong.
        problem: String,
    },
}

fn hint_suffix(hint: &Option<&'static str>) -> String {
    hint.map(|h| format!("; {h}")).unwrap_or_default()
}

fn last_suffix(last: &Option<Box<ClientError>>) -> String {
    match last {
        Some(last) => format!("; last error: {last}"),
        None => String::new(),
    }
}

impl ClientError {
    /// What this failure calls for: the one retry decision for every client operation (see
    /// [`ErrorCode::action`](super::ErrorCode::action) for broker error codes).
    pub fn action(&self) -> Action {
        match self {
            // A connection that failed or timed out may mean the broker is gone: ask the cluster
            // who leads now, as Java marks the node disconnected and requests a metadata update.
            ClientError::Wire(e) if e.is_retriable() => Action::RefreshMetadata,
            ClientError::Bootstrap { last, .. } if last.is_retriable() => Action::Backoff,
            ClientError::Broker { code, .. } => code.action(),
            ClientError::NoLeader { .. } => Action::RefreshMetadata,
            ClientError::Shared(inner) => inner.action(),
            _ => Action::Fail,
        }
    }

    /// The Kafka error code behind this error, if a broker answered with one: directly, through
    /// a request shared by several groups, or as the last failure before a deadline.
    ///
    /// ```
    /// use mm2_offsets::client::{ClientError, ErrorCode, ErrorKind};
    ///
    /// # fn check(error: &ClientError) {
    /// if error.broker_code() == Some(ErrorCode::new(30)) {
    ///     // GROUP_AUTHORIZATION_FAILED, also reported as ErrorKind::Authorization.
    ///     assert_eq!(error.kind(), ErrorKind::Authorization);
    /// }
    /// # }
    /// ```
    pub fn broker_code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Broker { code, .. } => Some(*code),
            ClientError::Shared(inner) => inner.broker_code(),
            ClientError::DeadlineExceeded {
                last: Some(last), ..
            } => last.broker_code(),
            _ => None,
        }
    }

    /// This error, to be given to each of several groups or partitions.
    pub(crate) fn shared(self) -> Arc<ClientError> {
        match self {
            ClientError::Shared(inner) => inner,
            other => Arc::new(other),
        }
    }

    /// [`ClientError::DeadlineExceeded`] for `operation`, with the last failure as its source.
    pub(crate) fn deadline(
        operation: String,
        deadline: &Deadline,
        last: Option<ClientError>,
    ) -> ClientError {
        ClientError::DeadlineExceeded {
            operation,
            timeout: deadline.budget(),
            last: last.map(Box::new),
        }
    }

    /// [`ClientError::Broker`] for a non-zero error code.
    pub(crate) fn broker(
        request: &'static str,
        resource: &str,
        broker: &str,
        code: i16,
    ) -> ClientError {
        let code = ErrorCode::new(code);
        ClientError::Broker {
            request,
            resource: resource.to_string(),
            broker: broker.to_string(),
            code,
            hint: code.hint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_errors_name_the_code_and_follow_the_classifier() {
        let e = ClientError::broker("Fetch", "t-0", "b:9092", 6);
        assert_eq!(e.action(), Action::RefreshMetadata);
        assert_eq!(
            e.to_string(),
            "Fetch for t-0 failed on broker b:9092: NOT_LEADER_OR_FOLLOWER (code 6)"
        );
        assert_eq!(
            ClientError::broker("Fetch", "t-0", "b:9092", 29).to_string(),
            "Fetch for t-0 failed on broker b:9092: TOPIC_AUTHORIZATION_FAILED (code 29); \
             the principal may not read this topic: grant DESCRIBE and READ on it"
        );
        assert_eq!(
            ClientError::broker("Fetch", "t-0", "b:9092", 1).action(),
            Action::Fail
        );
    }

    #[test]
    fn library_errors_name_no_command_line_flags() {
        let e = ClientError::NoBootstrapServers.to_string();
        assert!(!e.contains("--"), "{e}");
    }
}
