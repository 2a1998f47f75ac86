//! The one error type of the `wire` layer, and the one place that decides whether retrying helps.

use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::Duration;

use super::decode::DecodeError;

/// Why talking to a broker failed. Every variant names the broker (`host:port`) it concerns, and
/// requests are named with their API and version (e.g. `Fetch v12`).
///
/// Use [`WireError::is_retriable`] to decide whether a new attempt (usually on a new connection)
/// can help.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The address is not `host:port`.
    #[error("invalid broker address {address:?}: {reason}")]
    InvalidAddress {
        /// The address as given.
        address: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The settings cannot work (e.g. SASL requested without credentials).
    #[error("invalid client configuration: {message}")]
    Config {
        /// What is wrong and how to fix it.
        message: String,
    },

    /// An I/O error on the socket.
    #[error("{operation} {broker} failed: {source}")]
    Io {
        /// The broker.
        broker: String,
        /// What we were doing, e.g. "TCP connect to".
        operation: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// The broker closed the connection.
    #[error("{broker} closed the connection {context}")]
    Closed {
        /// The broker.
        broker: String,
        /// When it happened, e.g. "in the middle of a response frame (got 10 of 100 bytes)".
        context: String,
    },

    /// Something took longer than its deadline.
    #[error("timed out after {:?} waiting for {operation} from {broker}", to_millis(*.after))]
    Timeout {
        /// The broker.
        broker: String,
        /// What we waited for, e.g. "the response to Fetch v12".
        operation: String,
        /// The deadline that passed.
        after: Duration,
    },

    /// The connection failed earlier; this request, and every later one, gets the cause.
    #[error("connection to {broker} is broken: {cause}")]
    ConnectionBroken {
        /// The broker.
        broker: String,
        /// What broke it.
        cause: Arc<WireError>,
    },

    /// A response frame announced more bytes than `max_response_size` allows. Nothing was
    /// allocated for it.
    #[error(
        "{broker} announced a response frame of {size} bytes, more than the limit of {max} bytes \
         (max_response_size){hint}"
    )]
    FrameTooLarge {
        /// The broker.
        broker: String,
        /// The announced size.
        size: u64,
        /// The configured limit.
        max: usize,
        /// A guess at the cause when the size looks like text or TLS, else empty.
        hint: &'static str,
    },

    /// A response frame is malformed (negative size, too short, unknown correlation id).
    #[error("malformed response from {broker}: {problem}")]
    MalformedFrame {
        /// The broker.
        broker: String,
        /// What was wrong.
        problem: String,
    },

    /// A response body could not be decoded.
    #[error("could not decode a response from {broker}: {source}")]
    Decode {
        /// The broker.
        broker: String,
        /// Where and why decoding failed.
        #[source]
        source: DecodeError,
    },

    /// A request could not be encoded (a bug, or a version the message type does not have).
    #[error("could not encode {request} request: {message}")]
    Encode {
        /// The request, e.g. "Fetch v12".
        request: String,
        /// Why.
        message: String,
    },

    /// The broker and we share no version of an API.
    #[error("{broker} {}; we support {api} versions {}..={}", broker_support(.api, .broker_range), .ours.start(), .ours.end())]
    UnsupportedVersion {
        /// The broker.
        broker: String,
        /// The API, e.g. "Fetch".
        api: String,
        /// What the broker supports, `None` if it does not list the API at all.
        broker_range: Option<RangeInclusive<i16>>,
        /// What we support.
        ours: RangeInclusive<i16>,
    },

    /// The broker answered with an error code where the wire layer needs success (ApiVersions).
    #[error("{broker} answered {request} with error {code} ({}){}", error_name(*.code), message_suffix(.message))]
    BrokerError {
        /// The broker.
        broker: String,
        /// The request, e.g. "ApiVersions v3".
        request: String,
        /// Kafka's error code.
        code: i16,
        /// The broker's message, if any.
        message: Option<String>,
    },

    /// TLS could not be set up from the settings (certificate or key files).
    #[error("TLS configuration error: {message}")]
    TlsConfig {
        /// What is wrong, naming the file or setting.
        message: String,
    },

    /// TLS failed: in the handshake (certificate not trusted, wrong host name, ...) or through a
    /// fatal alert from the broker (e.g. it rejected or missed our client certificate, which
    /// TLS 1.3 reports only after the handshake).
    #[error("TLS with {broker} failed: {message}")]
    Tls {
        /// The broker.
        broker: String,
        /// Why, with a hint when one helps.
        message: String,
    },

    /// SASL authentication failed. Retrying with the same credentials fails again.
    #[error("{mechanism} authentication with {broker} failed: {message}")]
    Authentication {
        /// The broker.
        broker: String,
        /// The mechanism, e.g. "SCRAM-SHA-512".
        mechanism: &'static str,
        /// The broker's message or what went wrong in the exchange. Never holds the password.
        message: String,
    },

    /// The OAuth token endpoint (`OAUTHBEARER` with the client-credentials grant) gave no
    /// token: unreachable, too slow, TLS refused, credentials refused, or a malformed answer.
    #[error("getting an OAUTHBEARER token from {endpoint} failed: {message}{}", io_suffix(.source))]
    TokenEndpoint {
        /// The endpoint's URL without its query (never credentials).
        endpoint: String,
        /// What went wrong and what to do. Never holds the client secret or a token.
        message: String,
        /// The HTTP status, when the endpoint answered.
        status: Option<u16>,
        /// The I/O error, when the exchange failed on the network or timed out.
        #[source]
        source: Option<std::io::Error>,
    },
}

impl From<crate::auth::AuthError> for WireError {
    fn from(error: crate::auth::AuthError) -> Self {
        use crate::auth::AuthError;
        match error {
            AuthError::Config { message } => WireError::Config { message },
            AuthError::TlsConfig { message } => WireError::TlsConfig { message },
            AuthError::TokenEndpoint {
                endpoint,
                message,
                status,
                source,
            } => WireError::TokenEndpoint {
                endpoint,
                message,
                status,
                source,
            },
            // AuthError is non_exhaustive only to other crates; this match stays complete.
        }
    }
}

fn io_suffix(source: &Option<std::io::Error>) -> String {
    source
        .as_ref()
        .map(|e| format!(": {e}"))
        .unwrap_or_default()
}

fn broker_support(api: &str, range: &Option<RangeInclusive<i16>>) -> String {
    match range {
        Some(r) => format!(
            "supports {api} versions {}..={}, none of which we support",
            r.start(),
            r.end()
        ),
        None => format!("does not support {api} at all"),
    }
}

/// Kafka's protocol name for an error code, as the protocol guide and Java's `Errors` spell it:
/// `NOT_LEADER_OR_FOLLOWER` for 6, `NONE` for 0, `UNKNOWN_CODE_-42` for a code we do not know.
///
/// The one place codes become names; every layer's errors use it.
///
/// ```
/// # #[cfg(feature = "unstable-wire")] {
/// assert_eq!(mm2_offsets::wire::error_name(6), "NOT_LEADER_OR_FOLLOWER");
/// assert_eq!(mm2_offsets::wire::error_name(-1), "UNKNOWN_SERVER_ERROR");
/// # }
/// ```
pub fn error_name(code: i16) -> String {
    use kafka_protocol::error::ResponseError;
    match ResponseError::try_from_code(code) {
        None => "NONE".to_string(),
        Some(ResponseError::Unknown(c)) => format!("UNKNOWN_CODE_{c}"),
        // kafka-protocol names its variants in CamelCase (`NotLeaderOrFollower`); Kafka's own
        // names are the same words in SCREAMING_SNAKE_CASE.
        Some(known) => screaming_snake(&format!("{known:?}")),
    }
}

fn screaming_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

fn message_suffix(message: &Option<String>) -> String {
    match message {
        Some(m) if !m.is_empty() => format!(": {m}"),
        _ => String::new(),
    }
}

impl WireError {
    /// Whether a new attempt, typically on a new connection, can succeed: yes for I/O errors,
    /// closed connections and timeouts; no for authentication, TLS, configuration, oversized or
    /// malformed frames, decoding and unsupported versions, which would fail the same way again.
    ///
    /// ```
    /// use mm2_offsets::client::WireError;
    /// let timeout = WireError::Timeout {
    ///     broker: "b1:9092".into(),
    ///     operation: "the response to Metadata v12".into(),
    ///     after: std::time::Duration::from_secs(30),
    /// };
    /// assert!(timeout.is_retriable());
    /// ```
    pub fn is_retriable(&self) -> bool {
        match self {
            WireError::Io { .. } | WireError::Closed { .. } | WireError::Timeout { .. } => true,
            // Network trouble and server-side failures may pass; refused credentials do not.
            WireError::TokenEndpoint { status, source, .. } => match status {
                Some(status) => *status >= 500 || matches!(status, 408 | 429),
                // Refused TLS (an untrusted certificate) fails the same way again.
                None => source.as_ref().is_some_and(|e| {
                    e.get_ref()
                        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                        .is_none()
                }),
            },
            // A broken connection is as retriable as what broke it.
            WireError::ConnectionBroken { cause, .. } => cause.is_retriable(),
            WireError::InvalidAddress { .. }
            | WireError::Config { .. }
            | WireError::FrameTooLarge { .. }
            | WireError::MalformedFrame { .. }
            | WireError::Decode { .. }
            | WireError::Encode { .. }
            | WireError::UnsupportedVersion { .. }
            | WireError::BrokerError { .. }
            | WireError::TlsConfig { .. }
            | WireError::Tls { .. }
            | WireError::Authentication { .. } => false,
        }
    }

    /// The broker this error concerns, when it concerns one.
    pub fn broker(&self) -> Option<&str> {
        match self {
            WireError::Io { broker, .. }
            | WireError::Closed { broker, .. }
            | WireError::Timeout { broker, .. }
            | WireError::ConnectionBroken { broker, .. }
            | WireError::FrameTooLarge { broker, .. }
            | WireError::MalformedFrame { broker, .. }
            | WireError::Decode { broker, .. }
            | WireError::UnsupportedVersion { broker, .. }
            | WireError::BrokerError { broker, .. }
            | WireError::Tls { broker, .. }
            | WireError::Authentication { broker, .. } => Some(broker),
            WireError::InvalidAddress { address, .. } => Some(address),
            WireError::Config { .. }
            | WireError::TlsConfig { .. }
            | WireError::Encode { .. }
            | WireError::TokenEndpoint { .. } => None,
        }
    }
}

/// A duration cut to whole milliseconds, for messages: a budget's remainder reads "9.994s", not
/// "9.994623177s".
pub(crate) fn to_millis(duration: std::time::Duration) -> std::time::Duration {
    std::time::Duration::from_millis(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(kind: std::io::ErrorKind) -> WireError {
        WireError::Io {
            broker: "b:1".into(),
            operation: "reading from".into(),
            source: std::io::Error::from(kind),
        }
    }

    #[test]
    fn waits_read_in_whole_milliseconds() {
        let timeout = WireError::Timeout {
            broker: "b:1".into(),
            operation: "the response to Fetch v12".into(),
            after: std::time::Duration::from_nanos(9_994_623_177),
        };
        assert_eq!(
            timeout.to_string(),
            "timed out after 9.994s waiting for the response to Fetch v12 from b:1"
        );
    }

    #[test]
    fn classifier_separates_transient_from_permanent() {
        assert!(io(std::io::ErrorKind::ConnectionReset).is_retriable());
        let auth = WireError::Authentication {
            broker: "b:1".into(),
            mechanism: "PLAIN",
            message: "bad credentials".into(),
        };
        assert!(!auth.is_retriable());
        let too_large = WireError::FrameTooLarge {
            broker: "b:1".into(),
            size: 1 << 30,
            max: 100,
            hint: "",
        };
        assert!(!too_large.is_retriable());
    }

    #[test]
    fn broken_connection_inherits_the_cause_classification() {
        let transient = WireError::ConnectionBroken {
            broker: "b:1".into(),
            cause: Arc::new(io(std::io::ErrorKind::UnexpectedEof)),
        };
        assert!(transient.is_retriable());
        let permanent = WireError::ConnectionBroken {
            broker: "b:1".into(),
            cause: Arc::new(WireError::MalformedFrame {
                broker: "b:1".into(),
                problem: "negative frame size -1".into(),
            }),
        };
        assert!(!permanent.is_retriable());
        assert!(permanent.to_string().contains("negative frame size -1"));
    }

    #[test]
    fn unsupported_version_names_both_ranges() {
        let err = WireError::UnsupportedVersion {
            broker: "b:1".into(),
            api: "Fetch".into(),
            broker_range: Some(4..=17),
            ours: 0..=3,
        };
        assert_eq!(
            err.to_string(),
            "b:1 supports Fetch versions 4..=17, none of which we support; we support Fetch versions 0..=3"
        );
        let missing = WireError::UnsupportedVersion {
            broker: "b:1".into(),
            api: "ListOffsets".into(),
            broker_range: None,
            ours: 1..=9,
        };
        assert!(
            missing
                .to_string()
                .contains("does not support ListOffsets at all")
        );
    }
}
