//! The one error type of the `auth` layer. The `wire` layer turns it into a
//! [`WireError`](crate::wire::WireError) variant of the same name and text, so a connection's
//! error reads the same whichever layer found the problem.

/// Why TLS or an OAuth token could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The settings cannot work (e.g. an unusable token endpoint URL).
    #[error("invalid client configuration: {message}")]
    Config {
        /// What is wrong and how to fix it.
        message: String,
    },

    /// TLS could not be set up from the settings (certificate or key files).
    #[error("TLS configuration error: {message}")]
    TlsConfig {
        /// What is wrong, naming the file or setting.
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

fn io_suffix(source: &Option<std::io::Error>) -> String {
    source
        .as_ref()
        .map(|e| format!(": {e}"))
        .unwrap_or_default()
}

/// A duration as whole milliseconds, for messages (`Duration`'s `Debug` prints `1.5s`).
pub(crate) fn to_millis(duration: std::time::Duration) -> std::time::Duration {
    std::time::Duration::from_millis(duration.as_millis().try_into().unwrap_or(u64::MAX))
}
