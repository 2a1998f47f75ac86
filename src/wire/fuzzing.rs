//! Entry points for the fuzz targets in `fuzz/`: the parsers of broker bytes that are not
//! otherwise public. Hidden from the documentation and not part of the API.

use std::sync::OnceLock;

use bytes::Bytes;

use super::ApiVersionTable;
use super::decode::DecodeError;
use super::sasl::scram::{self, MIN_ITERATIONS, ScramClient, ScramHash};
use crate::config::Secret;

/// Decodes an ApiVersions response body as a connection does (`version` as asked, with the v0
/// fallbacks); returns the error code and the table.
///
/// # Errors
/// The [`DecodeError`] a connection would report.
pub fn api_versions_response(
    body: &[u8],
    version: i16,
) -> Result<(i16, ApiVersionTable), DecodeError> {
    super::api_versions::decode_response(Bytes::copy_from_slice(body), version)
        .map(|answer| (answer.error_code, answer.table))
}

/// The client nonce of the RFC 7677 example, which the fuzz seeds extend.
pub const SCRAM_CLIENT_NONCE: &str = "rOprNGfwEbeRWgbNEkqO";

/// Answers `server_first` as the SCRAM-SHA-256 client of the RFC 7677 example (user `user`,
/// password `pencil`, nonce [`SCRAM_CLIENT_NONCE`]) and returns its client-final message.
///
/// Only a message asking for exactly the minimum 4096 iterations is taken to the PBKDF2
/// step, so one run stays within milliseconds; any other count is checked by the same parser
/// and refused or skipped.
///
/// # Errors
/// The client's error text; `"skipped"` for a count above the minimum.
pub fn scram_server_first(server_first: &[u8]) -> Result<Vec<u8>, String> {
    if let Ok(text) = std::str::from_utf8(server_first)
        && scram::server_first_iterations(text)? > MIN_ITERATIONS
    {
        return Err("skipped".to_string());
    }
    rfc_client().client_final(server_first)
}

/// Checks `server_final` with the RFC 7677 client after its client-final message.
///
/// # Errors
/// The client's error text.
pub fn scram_server_final(server_final: &[u8]) -> Result<(), String> {
    static CLIENT: OnceLock<Result<ScramClient, String>> = OnceLock::new();
    let client = CLIENT.get_or_init(|| {
        let mut client = rfc_client();
        let server_first = format!(
            "r={SCRAM_CLIENT_NONCE}%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        );
        client.client_final(server_first.as_bytes()).map(|_| client)
    });
    client.as_ref()?.verify_server_final(server_final)
}

fn rfc_client() -> ScramClient {
    ScramClient::with_nonce(
        ScramHash::Sha256,
        "user",
        Secret::new("pencil"),
        SCRAM_CLIENT_NONCE.to_string(),
    )
}

/// A SCRAM client with a real user's credentials and the fixed nonce [`SCRAM_CLIENT_NONCE`], so
/// an exchange captured from a real broker (by `fuzz/seeds/capture_seeds.rs`) can be replayed
/// later: the same server-first gives the same client-final, and the broker's server-final must
/// then verify.
#[derive(Debug)]
pub struct ScramReplay(ScramClient);

impl ScramReplay {
    /// A client for `mechanism` (`SCRAM-SHA-256` or `SCRAM-SHA-512`).
    ///
    /// # Errors
    /// Any other mechanism name.
    pub fn new(mechanism: &str, user: &str, password: &str) -> Result<ScramReplay, String> {
        let hash = match mechanism {
            "SCRAM-SHA-256" => ScramHash::Sha256,
            "SCRAM-SHA-512" => ScramHash::Sha512,
            other => return Err(format!("not a SCRAM mechanism: {other}")),
        };
        Ok(ScramReplay(ScramClient::with_nonce(
            hash,
            user,
            Secret::new(password),
            SCRAM_CLIENT_NONCE.to_string(),
        )))
    }

    /// The client-first message.
    pub fn client_first(&self) -> Vec<u8> {
        self.0.client_first()
    }

    /// The client-final message answering `server_first`.
    ///
    /// # Errors
    /// The client's error text.
    pub fn client_final(&mut self, server_first: &[u8]) -> Result<Vec<u8>, String> {
        self.0.client_final(server_first)
    }

    /// Checks the broker's server-final message.
    ///
    /// # Errors
    /// The client's error text.
    pub fn verify_server_final(&self, server_final: &[u8]) -> Result<(), String> {
        self.0.verify_server_final(server_final)
    }
}

/// Decodes a JKS or PKCS12 key store's bytes as a connection does, with `password` (if any) for
/// the integrity check and, for JKS, to recover the key of a key entry. Returns the number of
/// entries (trusted certificates and keys) and of keys recovered.
///
/// # Errors
/// The store error's text.
pub fn key_store(bytes: &[u8], password: Option<&str>) -> Result<(usize, usize), String> {
    let password = password.map(Secret::new);
    let contents =
        crate::auth::keystore::decode(bytes, crate::config::KeyStoreType::Jks, password.as_ref())
            .map_err(|e| e.to_string())?;
    let entries = contents.trusted.len() + contents.keys.len();
    let keys = usize::from(contents.identity(password.as_ref()).is_ok());
    Ok((entries, keys))
}

/// What the OAUTHBEARER client-credentials grant takes from a token endpoint's answer.
#[derive(Debug, PartialEq, Eq)]
pub struct OAuthAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The body's length after de-chunking.
    pub body_len: usize,
    /// For a 2xx answer: the token, or why the body holds none.
    pub token: Option<Result<String, String>>,
    /// The answer's `expires_in`, in seconds.
    pub expires_in: Option<u64>,
    /// The token's JWT `exp` claim.
    pub jwt_exp: Option<u64>,
    /// For another status: the RFC 6749 error, as shown in messages.
    pub error: Option<String>,
}

/// Parses `bytes` as a token endpoint's answer, `eof` telling whether the server has closed
/// the connection: `Ok(None)` when more bytes are needed.
///
/// # Errors
/// Why the HTTP framing is malformed.
pub fn oauth_token_answer(bytes: &[u8], eof: bool) -> Result<Option<OAuthAnswer>, String> {
    use crate::auth::oauth::http::{Parsed, parse_response};
    use crate::auth::oauth::token_response::{
        describe_error_response, jwt_expiry, parse_token_response,
    };
    let response = match parse_response(bytes, eof)? {
        Parsed::Incomplete => return Ok(None),
        Parsed::Complete(response) => response,
    };
    let success = (200..300).contains(&response.status);
    let parsed = success.then(|| parse_token_response(&response.body));
    let (token, expires_in, jwt_exp) = match parsed {
        None => (None, None, None),
        Some(Err(problem)) => (Some(Err(problem)), None, None),
        Some(Ok(answer)) => {
            let exp = jwt_expiry(answer.token.expose());
            (
                Some(Ok(answer.token.expose().to_string())),
                answer.expires_in.map(|d| d.as_secs()),
                exp,
            )
        }
    };
    Ok(Some(OAuthAnswer {
        status: response.status,
        body_len: response.body.len(),
        token,
        expires_in,
        jwt_exp,
        error: (!success)
            .then(|| describe_error_response(&response.body))
            .flatten(),
    }))
}
