//! What was probably wrong when a connection fails. The library's errors carry the facts (which
//! broker, which stage, what the socket or TLS said); the command line adds the likely cause in
//! its own words, with its flag names, so library errors stay free of CLI vocabulary.

use std::error::Error;

use mm2_offsets::client::ClientError;

/// Said when connection setup does not finish in time: the usual causes, all silent ones.
pub const SLOW_SETUP_HINT: &str = "connection setup did not finish. A TLS client on a plaintext \
     port, or a port that speaks another protocol, often waits like this: check \
     security.protocol (--security-protocol) against the listener, and the host and port";

/// The message for a failed connect, with a hint when the cause is recognisable.
pub fn connect_error(error: &ClientError) -> String {
    let mut text = error.to_string();
    let mut source: Option<&dyn Error> = error.source();
    while let Some(e) = source {
        text.push_str(" | ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    let message = error.to_string();
    match hint(&text) {
        Some(hint) => format!("{message}; probable cause: {hint}"),
        _ => message,
    }
}

/// A likely cause, from the words of the error chain.
fn hint(text: &str) -> Option<&'static str> {
    let lower = text.to_ascii_lowercase();
    let has = |needle: &str| lower.contains(needle);
    if has("connection refused") {
        Some(
            "nothing accepts connections on that host and port: check the address and that the broker runs",
        )
    } else if has("invalidcontenttype") || has("corrupt message") || has("during the tls handshake")
    {
        Some(
            "the port did not answer with TLS: it is probably a plaintext listener (security.protocol PLAINTEXT or SASL_PLAINTEXT), or not Kafka at all",
        )
    } else if has("answered with http") {
        Some(
            "this port serves HTTP (a REST proxy, Connect, a web server?): use the broker's Kafka listener",
        )
    } else if has("answered with tls") {
        Some("the listener speaks TLS: set --security-protocol SSL (or SASL_SSL) and --ssl-ca")
    } else if has("illegal_sasl_state") || has("refused plain although") || has("refused scram") {
        Some(
            "the listener does not use SASL, or uses another mechanism: compare security.protocol and sasl.mechanism with the broker's listener",
        )
    } else if has("waiting for connection setup") || has("waiting for the response to apiversions")
    {
        Some(
            "the port accepted the connection but never answered Kafka's first request: it is probably a TLS listener (--security-protocol SSL) or not a Kafka port (HTTP, another service)",
        )
    } else if has("failed to lookup address") || has("name or service not known") {
        Some("the host name does not resolve: check the spelling and DNS")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_mistakes_get_a_cause() {
        assert!(hint("TCP connect to x:1 failed: Connection refused (os error 111)").is_some());
        assert!(
            hint("received corrupt message of type InvalidContentType")
                .unwrap()
                .contains("plaintext")
        );
        assert!(
            hint("the peer answered with HTTP: this is not")
                .unwrap()
                .contains("HTTP")
        );
        assert_eq!(hint("some other failure"), None);
    }
}
