//! [`ErrorKind`]: what an embedder branches on, whatever variant and nesting an error has.
//!
//! A [`ClientError`] says precisely what failed (which request, which broker, which topic), and
//! its variants nest: a failure shared by the groups of one batched request is
//! [`ClientError::Shared`], a retriable failure that outlived its deadline is
//! [`ClientError::DeadlineExceeded`] with the failure as `last`, a lost connection is
//! [`WireError::ConnectionBroken`] with its cause. [`ClientError::kind`] looks through all of
//! them and names the one thing a caller decides on: retry later, fix the credentials, grant a
//! permission, fix the configuration, or give up.

use super::code::ErrorCode;
use super::error::ClientError;
use crate::wire::WireError;

/// UNKNOWN_TOPIC_OR_PARTITION and UNKNOWN_TOPIC_ID (KIP-516).
const NOT_FOUND_CODES: [i16; 2] = [3, 100];
/// TOPIC_, GROUP_, CLUSTER_, TRANSACTIONAL_ID_ and DELEGATION_TOKEN_AUTHORIZATION_FAILED: the
/// authorizer refused the principal an operation (Java's `AuthorizationException` subclasses).
const AUTHORIZATION_CODES: [i16; 5] = [29, 30, 31, 53, 65];
/// UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED: authentication
/// itself failed (Java's `AuthenticationException` subclasses).
const AUTHENTICATION_CODES: [i16; 3] = [33, 34, 58];

/// What kind of failure a [`ClientError`] is, for a caller that decides what to do next.
///
/// Found by [`ClientError::kind`], which looks through [`ClientError::Shared`], through
/// [`ClientError::DeadlineExceeded`] to its last failure, and through a broken connection to
/// what broke it. New kinds may be added; match with a wildcard arm.
///
/// | kind | what failed | [`is_retriable`](ClientError::is_retriable) |
/// |---|---|---|
/// | [`Unreachable`](Self::Unreachable) | no connection: refused, reset, closed, DNS | yes |
/// | [`Timeout`](Self::Timeout) | a broker did not answer in time, or a deadline passed with no other failure | yes |
/// | [`Unavailable`](Self::Unavailable) | the cluster answered but cannot serve yet (no leader, token endpoint overloaded) | yes |
/// | [`Auth`](Self::Auth) | authentication: SASL refused, TLS handshake refused, OAuth credentials refused | no |
/// | [`Authorization`](Self::Authorization) | the authorizer refused the principal (`*_AUTHORIZATION_FAILED`) | no |
/// | [`NotFound`](Self::NotFound) | the topic or partition does not exist | no |
/// | [`OffsetOutOfRange`](Self::OffsetOutOfRange) | the offset asked for is outside the log | no |
/// | [`CommitOutcomeUnknown`](Self::CommitOutcomeUnknown) | a commit's answer was lost, or a commit was held back after one was | no: read the offsets back first |
/// | [`Broker`](Self::Broker) | any other Kafka error code | as [`ErrorCode::action`] |
/// | [`Protocol`](Self::Protocol) | an answer we cannot work with (malformed, no common version) | no |
/// | [`Config`](Self::Config) | the settings cannot work (no servers, bad address, TLS files) | no |
///
/// ```
/// use std::time::Duration;
/// use mm2_offsets::client::{ErrorKind, KafkaClient};
/// use mm2_offsets::config::ClientConfig;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // Port 1 on the loopback: nothing listens there, so every connection is refused and the
/// // call fails within a fraction of a second, not after the 30 s request timeout.
/// let started = std::time::Instant::now();
/// let error = KafkaClient::connect(ClientConfig::plaintext(["127.0.0.1:1"])).await.unwrap_err();
/// assert_eq!(error.kind(), ErrorKind::Unreachable);
/// assert!(error.is_unreachable() && error.is_retriable() && !error.is_auth());
/// assert!(started.elapsed() < Duration::from_secs(5));
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// No connection to the cluster: every bootstrap server refused, a broker reset or closed
    /// the connection, or its name does not resolve. It may come back: retry later.
    Unreachable,
    /// A broker accepted the connection but did not answer in time, or an operation's deadline
    /// passed with no more precise failure to report.
    Timeout,
    /// The cluster answered but cannot serve this yet: a partition without a leader (an
    /// election in progress), a token endpoint that is overloaded or failing (HTTP 5xx, 429).
    Unavailable,
    /// Authentication failed: the SASL credentials were refused, the TLS handshake failed
    /// (certificate not trusted, wrong host name, client certificate refused), or the OAuth
    /// token endpoint refused the client's credentials. The same settings fail again.
    Auth,
    /// The broker's authorizer refused the principal an operation: an ACL is missing. The
    /// code (`TOPIC_AUTHORIZATION_FAILED`, `GROUP_AUTHORIZATION_FAILED`, ...) is
    /// [`ClientError::broker_code`].
    Authorization,
    /// The topic or partition does not exist (never auto-created).
    NotFound,
    /// The offset asked for is outside the partition's log (retention or DeleteRecords moved
    /// the log start): read again from the new start.
    OffsetOutOfRange,
    /// An OffsetCommit was sent but its answer was lost, so whether it was written is unknown;
    /// or a commit was not sent because an earlier one's answer was lost. Read the group's
    /// offsets back before committing again.
    CommitOutcomeUnknown,
    /// The broker answered with this Kafka error code, and it is none of the above.
    Broker(ErrorCode),
    /// The broker answered with something we cannot work with: a malformed or oversized
    /// frame, an undecodable response, no API version in common.
    Protocol,
    /// The settings cannot work: no bootstrap server, an address that is not `host:port`,
    /// SASL without credentials, TLS files that cannot be loaded.
    Config,
}

impl ErrorKind {
    /// Whether trying the same call again later can succeed without changing the settings, the
    /// cluster's ACLs or its topics.
    pub fn is_retriable(self) -> bool {
        match self {
            ErrorKind::Unreachable | ErrorKind::Timeout | ErrorKind::Unavailable => true,
            ErrorKind::Broker(code) => code.action().is_retriable(),
            ErrorKind::Auth
            | ErrorKind::Authorization
            | ErrorKind::NotFound
            | ErrorKind::OffsetOutOfRange
            | ErrorKind::CommitOutcomeUnknown
            | ErrorKind::Protocol
            | ErrorKind::Config => false,
        }
    }

    fn of_code(code: ErrorCode) -> ErrorKind {
        let number = code.code();
        if AUTHORIZATION_CODES.contains(&number) {
            ErrorKind::Authorization
        } else if AUTHENTICATION_CODES.contains(&number) {
            ErrorKind::Auth
        } else if NOT_FOUND_CODES.contains(&number) {
            ErrorKind::NotFound
        } else {
            ErrorKind::Broker(code)
        }
    }

    fn of_wire(error: &WireError) -> ErrorKind {
        match error {
            WireError::Io { .. } | WireError::Closed { .. } => ErrorKind::Unreachable,
            WireError::Timeout { .. } => ErrorKind::Timeout,
            WireError::ConnectionBroken { cause, .. } => ErrorKind::of_wire(cause),
            WireError::InvalidAddress { .. }
            | WireError::Config { .. }
            | WireError::TlsConfig { .. } => ErrorKind::Config,
            WireError::Tls { .. } | WireError::Authentication { .. } => ErrorKind::Auth,
            WireError::TokenEndpoint { status, .. } => match (status, error.is_retriable()) {
                (_, false) => ErrorKind::Auth,
                (Some(_), true) => ErrorKind::Unavailable,
                (None, true) => ErrorKind::Unreachable,
            },
            WireError::BrokerError { code, .. } => ErrorKind::of_code(ErrorCode::new(*code)),
            WireError::FrameTooLarge { .. }
            | WireError::MalformedFrame { .. }
            | WireError::Decode { .. }
            | WireError::Encode { .. }
            | WireError::UnsupportedVersion { .. } => ErrorKind::Protocol,
        }
    }
}

impl ClientError {
    /// What kind of failure this is, looking through [`Shared`](ClientError::Shared), through
    /// a [`DeadlineExceeded`](ClientError::DeadlineExceeded) to its last failure (a deadline
    /// with none is [`ErrorKind::Timeout`]), and through a broken connection to its cause.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mm2_offsets::client::{ClientError, ErrorKind};
    ///
    /// fn next_step(error: &ClientError) -> &'static str {
    ///     match error.kind() {
    ///         ErrorKind::Auth => "fix the credentials",
    ///         ErrorKind::Authorization => "grant the ACL",
    ///         _ if error.is_retriable() => "try again later",
    ///         _ => "give up",
    ///     }
    /// }
    /// assert_eq!(next_step(&ClientError::NoBootstrapServers), "give up");
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            ClientError::Bootstrap { last, .. } => match ErrorKind::of_wire(last) {
                // A setup that stalls past its limit is a server we could not reach.
                ErrorKind::Timeout => ErrorKind::Unreachable,
                kind => kind,
            },
            ClientError::NoBootstrapServers => ErrorKind::Config,
            ClientError::Wire(e) => ErrorKind::of_wire(e),
            ClientError::Decode { .. } | ClientError::Protocol { .. } => ErrorKind::Protocol,
            ClientError::Broker { code, .. } => ErrorKind::of_code(*code),
            ClientError::UnknownTopic { .. } | ClientError::UnknownPartition { .. } => {
                ErrorKind::NotFound
            }
            ClientError::NoLeader { .. } => ErrorKind::Unavailable,
            ClientError::OffsetOutOfRange { .. } => ErrorKind::OffsetOutOfRange,
            ClientError::DeadlineExceeded { last, .. } => match last {
                Some(last) => last.kind(),
                None => ErrorKind::Timeout,
            },
            ClientError::CommitOutcomeUnknown { .. } | ClientError::Halted { .. } => {
                ErrorKind::CommitOutcomeUnknown
            }
            ClientError::Shared(inner) => inner.kind(),
        }
    }

    /// Whether no connection to the cluster could be made or kept ([`ErrorKind::Unreachable`]).
    pub fn is_unreachable(&self) -> bool {
        self.kind() == ErrorKind::Unreachable
    }

    /// Whether authentication failed ([`ErrorKind::Auth`]): SASL, TLS or OAuth credentials.
    /// A missing ACL is [`is_authorization`](Self::is_authorization).
    pub fn is_auth(&self) -> bool {
        self.kind() == ErrorKind::Auth
    }

    /// Whether the authorizer refused the principal ([`ErrorKind::Authorization`]).
    pub fn is_authorization(&self) -> bool {
        self.kind() == ErrorKind::Authorization
    }

    /// Whether the same call, tried again later, can succeed ([`ErrorKind::is_retriable`]).
    ///
    /// This is the caller's decision about a call that has already given up (its own retries
    /// and deadline spent); the client's internal retry decision is [`ClientError::action`].
    pub fn is_retriable(&self) -> bool {
        self.kind().is_retriable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    fn refused() -> WireError {
        WireError::Io {
            broker: "b:1".into(),
            operation: "TCP connect to".into(),
            source: std::io::ErrorKind::ConnectionRefused.into(),
        }
    }

    #[test]
    fn the_code_lists_name_what_they_say() {
        let names = |codes: &[i16]| -> Vec<String> {
            codes.iter().map(|c| ErrorCode::new(*c).name()).collect()
        };
        assert!(
            names(&AUTHORIZATION_CODES)
                .iter()
                .all(|n| n.ends_with("_AUTHORIZATION_FAILED")),
            "{:?}",
            names(&AUTHORIZATION_CODES)
        );
        assert_eq!(
            names(&AUTHENTICATION_CODES),
            [
                "UNSUPPORTED_SASL_MECHANISM",
                "ILLEGAL_SASL_STATE",
                "SASL_AUTHENTICATION_FAILED"
            ]
        );
        assert_eq!(
            names(&NOT_FOUND_CODES),
            ["UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID"]
        );
    }

    #[test]
    fn kinds_look_through_shared_deadlines_and_broken_connections() {
        let bootstrap = ClientError::Bootstrap {
            servers: "b:1".into(),
            last: Box::new(refused()),
        };
        assert_eq!(bootstrap.kind(), ErrorKind::Unreachable);
        let late = ClientError::DeadlineExceeded {
            operation: "Metadata request".into(),
            timeout: Duration::from_secs(30),
            last: Some(Box::new(ClientError::Shared(Arc::new(bootstrap)))),
        };
        assert!(late.is_unreachable() && late.is_retriable());
        let broken = ClientError::Wire(WireError::ConnectionBroken {
            broker: "b:1".into(),
            cause: Arc::new(WireError::Authentication {
                broker: "b:1".into(),
                mechanism: "PLAIN",
                message: "refused".into(),
            }),
        });
        assert!(broken.is_auth() && !broken.is_retriable());
        let bare = ClientError::DeadlineExceeded {
            operation: "x".into(),
            timeout: Duration::from_secs(1),
            last: None,
        };
        assert_eq!(bare.kind(), ErrorKind::Timeout);
    }

    #[test]
    fn broker_codes_sort_into_kinds() {
        let kind = |code| ClientError::broker("Fetch", "t-0", "b:1", code).kind();
        assert_eq!(kind(29), ErrorKind::Authorization);
        assert_eq!(kind(30), ErrorKind::Authorization);
        assert_eq!(kind(58), ErrorKind::Auth);
        assert_eq!(kind(3), ErrorKind::NotFound);
        assert_eq!(kind(6), ErrorKind::Broker(ErrorCode::new(6)));
        assert!(ClientError::broker("Fetch", "t-0", "b:1", 6).is_retriable());
        assert!(!ClientError::broker("Fetch", "t-0", "b:1", 87).is_retriable());
        let shared =
            ClientError::Shared(Arc::new(ClientError::broker("OffsetFetch", "g", "b", 30)));
        assert!(shared.is_authorization());
        assert_eq!(shared.broker_code(), Some(ErrorCode::new(30)));
    }

    #[test]
    fn commits_with_a_lost_answer_are_never_retriable() {
        let lost = ClientError::CommitOutcomeUnknown {
            group: "g".into(),
            broker: "b".into(),
            source: Box::new(ClientError::Wire(refused())),
        };
        assert_eq!(lost.kind(), ErrorKind::CommitOutcomeUnknown);
        assert!(!lost.is_retriable());
        assert!(!ClientError::Halted { group: "g".into() }.is_retriable());
    }
}
