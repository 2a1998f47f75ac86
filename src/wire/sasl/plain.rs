//! SASL PLAIN: one message, `authzid NUL authcid NUL passwd`, with an empty authzid (the broker
//! then authorizes as the user name). The password travels as is: use it over TLS.
//!
//! # References
//! - RFC 4616 (PLAIN)
//! - KIP-43 (SASL PLAIN in Kafka)

use crate::config::Secret;

/// The initial (and only) client message. RFC 4616 forbids NUL in either field; the broker would
/// split the message at it, so it is refused here with a clear message.
pub(crate) fn initial_response(username: &str, password: &Secret) -> Result<Vec<u8>, String> {
    if username.contains('\0') {
        return Err("the user name contains a NUL character, which PLAIN cannot carry".to_string());
    }
    if password.expose().contains('\0') {
        return Err("the password contains a NUL character, which PLAIN cannot carry".to_string());
    }
    let password = password.expose().as_bytes();
    let mut message = Vec::with_capacity(2 + username.len() + password.len());
    message.push(0);
    message.extend_from_slice(username.as_bytes());
    message.push(0);
    message.extend_from_slice(password);
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_is_empty_authzid_user_and_password() {
        let message = initial_response("alice", &Secret::new("s3cret")).unwrap();
        assert_eq!(message, b"\0alice\0s3cret");
    }

    #[test]
    fn nul_is_refused_without_echoing_the_password() {
        let err = initial_response("alice", &Secret::new("a\0b")).unwrap_err();
        assert!(err.contains("password contains a NUL"), "{err}");
        assert!(!err.contains("a\0b"));
        assert!(initial_response("a\0", &Secret::new("x")).is_err());
    }
}
