//! Client errors, and the one place that decides what is worth retrying.

use std::time::Duration;

use kafka_protocol::error::ResponseError;

use crate::wire::WireError;
use crate::wire::decode::DecodeError;

/// What went wrong in the client layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// No bootstrap server could be reached.
    #[error(
        "could not reach any bootstrap server ({servers}): {last}; check --bootstrap-server and that the brokers are running"
    )]
    Bootstrap {
        /// The servers tried, comma-separated.
        servers: String,
        /// The last failure.
        last: Box<WireError>,
    },
    /// The configuration lists no bootstrap server.
    #[error(
        "no bootstrap servers configured; pass --bootstrap-server HOST:PORT or set bootstrap.servers"
    )]
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
        source: DecodeError,
    },
    /// The broker answered with a Kafka error code.
    #[error("{request} for {resource} failed on broker {broker}: {name} (code {code}){hint}")]
    Broker {
        /// The request, e.g. `"Fetch"`.
        request: &'static str,
        /// The topic-partition or other resource it was about.
        resource: String,
        /// The broker address.
        broker: String,
        /// The Kafka error code.
        code: i16,
        /// The error's name, e.g. `NOT_LEADER_OR_FOLLOWER`.
        name: String,
        /// What the user can do, if anything (starts with "; ").
        hint: &'static str,
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
        "offset {offset} is out of range for {topic}-{partition}; the log may have been truncated or deleted by retention while reading; retry the read"
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
    #[error("{operation} did not finish within {timeout:?}{last}")]
    DeadlineExceeded {
        /// What was being done.
        operation: String,
        /// The whole budget.
        timeout: Duration,
        /// The last retriable failure, if any (starts with "; last error: ").
        last: String,
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

/// How to react to a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// Give up and report it.
    Never,
    /// Back off and try again.
    After,
    /// Refresh metadata (leaders moved), back off, and try again.
    AfterMetadataRefresh,
}

impl ClientError {
    /// The single retry decision for every client operation.
    pub fn retry(&self) -> Retry {
        match self {
            ClientError::Wire(e) if e.is_retriable() => Retry::AfterMetadataRefresh,
            ClientError::Broker { code, .. } => retry_for_code(*code),
            ClientError::NoLeader { .. } => Retry::AfterMetadataRefresh,
            _ => Retry::Never,
        }
    }
}

/// Classifies a Kafka error code. Leadership and topology changes need fresh metadata; transient
/// load or timing problems only need a pause.
pub fn retry_for_code(code: i16) -> Retry {
    match code {
        // NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH,
        // NOT_CONTROLLER, REPLICA_NOT_AVAILABLE, OFFSET_NOT_AVAILABLE, UNKNOWN_TOPIC_ID,
        // INCONSISTENT_TOPIC_ID, KAFKA_STORAGE_ERROR
        6 | 5 | 74 | 76 | 41 | 9 | 78 | 100 | 103 | 56 => Retry::AfterMetadataRefresh,
        // REQUEST_TIMED_OUT, NETWORK_EXCEPTION, COORDINATOR_LOAD_IN_PROGRESS,
        // COORDINATOR_NOT_AVAILABLE, NOT_ENOUGH_REPLICAS, THROTTLING_QUOTA_EXCEEDED,
        // CONCURRENT_TRANSACTIONS
        7 | 13 | 14 | 15 | 19 | 89 | 51 => Retry::After,
        _ => Retry::Never,
    }
}

/// The protocol name of an error code, e.g. `NOT_LEADER_OR_FOLLOWER`.
pub fn error_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        None => "NONE".to_string(),
        Some(ResponseError::Unknown(c)) => format!("UNKNOWN_CODE_{c}"),
        Some(e) => format!("{e:?}"),
    }
}

/// What a user can do about an error code that will not go away by retrying.
pub(crate) fn hint_for_code(code: i16) -> &'static str {
    match code {
        29 => "; the principal may not read this topic: grant DESCRIBE and READ on it",
        31 => "; the principal lacks cluster authorization",
        35 => "; the broker does not support this request version",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leadership_errors_refresh_metadata() {
        assert_eq!(retry_for_code(6), Retry::AfterMetadataRefresh);
        assert_eq!(retry_for_code(74), Retry::AfterMetadataRefresh);
        assert_eq!(retry_for_code(7), Retry::After);
        // OFFSET_OUT_OF_RANGE is reported, never looped on.
        assert_eq!(retry_for_code(1), Retry::Never);
        // TOPIC_AUTHORIZATION_FAILED
        assert_eq!(retry_for_code(29), Retry::Never);
    }

    #[test]
    fn names_come_from_the_protocol_table() {
        assert_eq!(error_name(6), "NotLeaderOrFollower");
        assert_eq!(error_name(0), "NONE");
        assert_eq!(error_name(-12345), "UNKNOWN_CODE_-12345");
    }
}
