//! SASL OAUTHBEARER (RFC 7628, KIP-255) with a token read from a file.
//!
//! The client's only message is the GS2 header `n,,` then `auth=Bearer <token>` between `\x01`
//! separators, ended by `\x01\x01`. A broker that rejects the token answers with a JSON error
//! instead of an empty message; RFC 7628 §3.2.3 has the client answer that with a lone `\x01`,
//! after which the broker fails the exchange. The token file is read at every authentication,
//! so a rotated file is used by the next connection (and the pool's reconnect before the
//! session lifetime the broker grants ends, KIP-368).

use std::path::Path;

use crate::auth::oauth::token_response::{MAX_TOKEN_LEN, is_bearer_token};

/// The token in `path`, without surrounding white space. Errors name the file, never the token.
pub(crate) fn read_token(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_TOKEN_LEN as u64 + 1).read_to_string(&mut text))
        .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?;
    if text.len() > MAX_TOKEN_LEN {
        return Err(format!(
            "the token file {} is larger than 64 KiB; is it the right file?",
            path.display()
        ));
    }
    let token = text.trim();
    if !is_bearer_token(token) {
        return Err(format!(
            "the token file {} does not hold one bearer token (RFC 6750: letters, digits and \
             -._~+/ only, then optional '=')",
            path.display()
        ));
    }
    Ok(token.to_string())
}

/// [`read_token`] on a blocking thread: it runs at every authentication, inside the async
/// connect, and a file read must not stall the caller's async worker.
pub(crate) async fn read_token_blocking(path: &Path) -> Result<String, String> {
    let owned = path.to_path_buf();
    match tokio::task::spawn_blocking(move || read_token(&owned)).await {
        Ok(token) => token,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // The runtime is shutting down: read it on this thread.
            Err(_) => read_token(path),
        },
    }
}

/// The client's initial response.
pub(crate) fn initial_response(token: &str) -> Vec<u8> {
    format!("n,,\x01auth=Bearer {token}\x01\x01").into_bytes()
}

/// The answer to a server error challenge (RFC 7628 §3.2.3).
pub(crate) const ERROR_ACKNOWLEDGEMENT: &[u8] = b"\x01";

/// The broker's error challenge as a short printable text (it is JSON such as
/// `{"status":"invalid_token"}`, from the network: control characters escaped, length capped).
pub(crate) fn describe_challenge(challenge: &[u8]) -> String {
    let text = String::from_utf8_lossy(&challenge[..challenge.len().min(512)]);
    text.escape_debug().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn message_is_the_gs2_header_and_the_bearer_token() {
        assert_eq!(
            initial_response("eyJ.eyJ.sig"),
            b"n,,\x01auth=Bearer eyJ.eyJ.sig\x01\x01"
        );
    }

    #[test]
    fn token_files_are_trimmed_checked_and_never_echoed() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(b"  abc.DEF-_~+/.x==\n").unwrap();
        assert_eq!(read_token(file.path()).unwrap(), "abc.DEF-_~+/.x==");
        let mut bad = tempfile::NamedTempFile::new().unwrap();
        bad.write_all(b"secret-part \x01injected").unwrap();
        let err = read_token(bad.path()).unwrap_err();
        assert!(err.contains("does not hold one bearer token"), "{err}");
        assert!(!err.contains("secret-part"), "{err}");
        let err = read_token(Path::new("/nonexistent/token")).unwrap_err();
        assert!(
            err.contains("cannot read the token file /nonexistent/token"),
            "{err}"
        );
    }

    #[test]
    fn challenges_are_escaped_and_capped() {
        assert_eq!(
            describe_challenge(b"{\"status\":\"invalid_token\"}\x1b"),
            "{\\\"status\\\":\\\"invalid_token\\\"}\\u{1b}"
        );
        assert!(describe_challenge(&[b'a'; 4000]).len() <= 512);
    }
}
