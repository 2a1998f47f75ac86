//! The token endpoint's JSON answer (RFC 6749 §5.1 and §5.2), and the expiry inside a JWT.
//!
//! As Kafka's `JwtResponseParser`, the token is `access_token`, else `id_token`. Its lifetime is
//! the JWT's `exp` claim when the token is a JWT (Kafka's `ClientJwtValidator` requires one),
//! else the answer's `expires_in`. An error answer's `error` and `error_description` are shown,
//! escaped and capped; other parts of a body are never shown, since they may hold a token.
//!
//! # References
//! - RFC 6749 §5.1 (successful response), §5.2 (error response)
//! - RFC 7519 §4.1.4 (`exp`), RFC 7515 §3.1 / §2 (compact serialization, base64url)
//! - RFC 6750 §2.1 (the b64token syntax of a bearer token)

use std::time::Duration;

use base64::Engine;
use serde::Deserialize;

use crate::config::Secret;

/// Longest token accepted: JWTs are a few KiB.
pub(crate) const MAX_TOKEN_LEN: usize = 64 * 1024;

/// What a successful answer gives.
#[derive(Debug)]
pub(crate) struct TokenResponse {
    /// The bearer token; `Debug` hides it.
    pub(crate) token: Secret,
    /// The answer's `expires_in`, if present.
    pub(crate) expires_in: Option<Duration>,
}

#[derive(Deserialize)]
struct RawResponse {
    access_token: Option<serde_json::Value>,
    id_token: Option<serde_json::Value>,
    expires_in: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct RawError {
    error: Option<serde_json::Value>,
    error_description: Option<serde_json::Value>,
}

/// The token in a successful answer's body.
pub(crate) fn parse_token_response(body: &[u8]) -> Result<TokenResponse, String> {
    let raw: RawResponse = serde_json::from_slice(body).map_err(|e| {
        // serde_json's message names a line and column, never the input.
        format!("the answer is not a JSON object as RFC 6749 §5.1 describes: {e}")
    })?;
    let token = [raw.access_token, raw.id_token]
        .into_iter()
        .flatten()
        .find_map(|value| match value {
            serde_json::Value::String(token) if !token.trim().is_empty() => Some(token),
            _ => None,
        })
        .ok_or("the answer holds no access_token (nor id_token)")?;
    let token = token.trim();
    if !is_bearer_token(token) {
        return Err(
            "the access_token is not a bearer token (RFC 6750: letters, digits and -._~+/, \
             then optional '=', at most 64 KiB)"
                .into(),
        );
    }
    let expires_in = match raw.expires_in {
        None | Some(serde_json::Value::Null) => None,
        // Some providers send the number as a string.
        Some(serde_json::Value::String(text)) => text.trim().parse::<u64>().ok(),
        Some(value) => value.as_u64(),
    }
    .map(Duration::from_secs);
    Ok(TokenResponse {
        token: Secret::new(token),
        expires_in,
    })
}

/// `error: error_description` from an RFC 6749 §5.2 error answer, printable and capped; `None`
/// when the body is not one.
pub(crate) fn describe_error_response(body: &[u8]) -> Option<String> {
    let raw: RawError = serde_json::from_slice(body).ok()?;
    let text = |value: Option<serde_json::Value>| match value {
        Some(serde_json::Value::String(text)) => Some(printable(&text, 200)),
        _ => None,
    };
    let error = text(raw.error)?;
    Some(match text(raw.error_description) {
        Some(description) => format!("{error}: {description}"),
        None => error,
    })
}

/// At most `max` characters, control characters escaped (the text comes from the network).
fn printable(text: &str, max: usize) -> String {
    let mut out: String = text
        .chars()
        .take(max)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// RFC 6750 b64token: letters, digits and `-._~+/`, then optional `=` padding.
pub(crate) fn is_bearer_token(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= MAX_TOKEN_LEN
        && token
            .trim_end_matches('=')
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

/// The `exp` claim (seconds since the epoch) of a JWT in compact serialization, `None` if the
/// token is not a JWT or has no numeric `exp`.
pub(crate) fn jwt_expiry(token: &str) -> Option<u64> {
    #[derive(Deserialize)]
    struct Claims {
        exp: Option<serde_json::Value>,
    }
    let mut parts = token.split('.');
    let (_header, payload, _signature) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: Claims = serde_json::from_slice(&json).ok()?;
    let exp = claims.exp?;
    // NumericDate may be fractional (RFC 7519 §2); whole seconds are enough here.
    exp.as_u64()
        .or_else(|| exp.as_f64().filter(|s| *s >= 0.0).map(|s| s as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        format!("{}.{}.c2ln", b64(r#"{"alg":"RS256"}"#), b64(claims))
    }

    #[test]
    fn access_token_then_id_token_with_their_lifetime() {
        let token = jwt(r#"{"sub":"mm2","exp":1900000000}"#);
        let body =
            format!(r#"{{"access_token":"{token}","token_type":"Bearer","expires_in":300}}"#);
        let response = parse_token_response(body.as_bytes()).unwrap();
        assert_eq!(response.token.expose(), token);
        assert_eq!(response.expires_in, Some(Duration::from_secs(300)));
        assert_eq!(jwt_expiry(response.token.expose()), Some(1_900_000_000));
        assert!(!format!("{response:?}").contains(&token));

        let body = r#"{"access_token":"","id_token":"opaque-token","expires_in":"60"}"#;
        let response = parse_token_response(body.as_bytes()).unwrap();
        assert_eq!(response.token.expose(), "opaque-token");
        assert_eq!(response.expires_in, Some(Duration::from_secs(60)));
        assert_eq!(jwt_expiry("opaque-token"), None);
        assert_eq!(jwt_expiry(&jwt(r#"{"exp":1.9e9}"#)), Some(1_900_000_000));
        assert_eq!(jwt_expiry(&jwt(r#"{"exp":"soon"}"#)), None);
    }

    #[test]
    fn bad_answers_are_named_without_echoing_the_body() {
        for (body, expected) in [
            (&b"<html>login</html>"[..], "not a JSON object"),
            (br#"{"token":"secret-part"}"#, "no access_token"),
            (br#"{"access_token":42}"#, "no access_token"),
            (
                br#"{"access_token":"secret part\u0001"}"#,
                "not a bearer token",
            ),
        ] {
            let error = parse_token_response(body).unwrap_err();
            assert!(error.contains(expected), "{error}");
            assert!(!error.contains("secret"), "{error}");
        }
    }

    #[test]
    fn error_answers_are_escaped_and_capped() {
        let body = br#"{"error":"invalid_client","error_description":"Bad secret\u001b[31m"}"#;
        assert_eq!(
            describe_error_response(body).unwrap(),
            "invalid_client: Bad secret\\u{1b}[31m"
        );
        let long = format!(r#"{{"error":"{}"}}"#, "x".repeat(1000));
        assert!(describe_error_response(long.as_bytes()).unwrap().len() < 210);
        assert_eq!(describe_error_response(b"not json"), None);
    }
}
