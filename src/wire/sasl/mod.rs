//! SASL authentication after connecting: SaslHandshake v1 names the mechanism, then the
//! mechanism's messages travel in SaslAuthenticate requests (v0..=2, negotiated).
//!
//! A failure is [`WireError::Authentication`], which is not retriable: the same credentials fail
//! the same way. The broker's own message is kept. The password never appears in a message.
//!
//! # References
//! - KIP-43 (SASL handshake), KIP-152 (SaslAuthenticate), KIP-84 (SCRAM), KIP-255
//!   (OAUTHBEARER), KIP-368 (session lifetime and re-authentication)
//! - Kafka's `SaslClientAuthenticator`

mod oauthbearer;
mod plain;
pub(crate) mod scram;

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::StrBytes;

use super::WireError;
use super::api_versions::ApiVersionTable;
use super::decode::{DecodeError, Decoder};
use super::error::error_name;
use super::mux::Multiplexer;
use crate::auth::oauth::TokenProvider;
use crate::config::{SaslMechanism, SaslSettings, Secret};
use scram::{ScramClient, ScramHash};

/// Kafka's UNSUPPORTED_SASL_MECHANISM error code.
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;

/// What a successful authentication tells us.
#[derive(Debug)]
pub(crate) struct SaslOutcome {
    /// How long the broker keeps the session (KIP-368); `None` when it does not expire.
    pub session_lifetime: Option<Duration>,
}

/// Runs the handshake and the mechanism's exchange on a fresh connection.
pub(crate) async fn authenticate(
    mux: &Multiplexer,
    versions: &ApiVersionTable,
    settings: &SaslSettings,
    granted: Option<(&Secret, &TokenProvider)>,
) -> Result<SaslOutcome, WireError> {
    let mechanism = settings.mechanism.name();
    let fail = |message: String| WireError::Authentication {
        broker: mux.broker().to_string(),
        mechanism,
        message,
    };
    // v0 sent raw tokens instead of SaslAuthenticate frames; every broker since 1.0 has v1.
    let handshake_version = versions.negotiate(ApiKey::SaslHandshake, 1..=1, mux.broker())?;
    handshake(mux, handshake_version, mechanism).await?;
    let mut exchange = Exchange {
        mux,
        version: versions.negotiate(ApiKey::SaslAuthenticate, 0..=2, mux.broker())?,
        mechanism,
        session_lifetime: None,
    };

    match settings.mechanism {
        SaslMechanism::Plain => {
            let message =
                plain::initial_response(&settings.username, &settings.password).map_err(fail)?;
            exchange.step(message).await?;
        }
        SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => {
            let hash = if settings.mechanism == SaslMechanism::ScramSha256 {
                ScramHash::Sha256
            } else {
                ScramHash::Sha512
            };
            let mut client = ScramClient::new(hash, &settings.username, settings.password.clone());
            let server_first = exchange.step(client.client_first()).await?;
            // PBKDF2 takes milliseconds to a second: keep it off the async worker threads.
            let (client, client_final) = tokio::task::spawn_blocking(move || {
                let client_final = client.client_final(&server_first);
                (client, client_final)
            })
            .await
            .map_err(|e| fail(format!("the SCRAM computation did not finish: {e}")))?;
            let server_final = exchange.step(client_final.map_err(&fail)?).await?;
            client.verify_server_final(&server_final).map_err(fail)?;
        }
        SaslMechanism::OAuthBearer => {
            let (token, origin) = match granted {
                Some((token, provider)) => (
                    token.clone(),
                    format!("the token endpoint {}", provider.endpoint()),
                ),
                None => {
                    let path = settings.oauthbearer_token_file.as_deref().ok_or_else(|| {
                        fail(
                            "no token file or token endpoint is configured \
                             (sasl.oauthbearer.token.file or sasl.oauthbearer.token.endpoint.url)"
                                .to_string(),
                        )
                    })?;
                    let token = oauthbearer::read_token_blocking(path)
                        .await
                        .map_err(&fail)?;
                    (Secret::new(token), path.display().to_string())
                }
            };
            let challenge = exchange
                .step(oauthbearer::initial_response(token.expose()))
                .await?;
            if !challenge.is_empty() {
                // The broker refused the token; it ends the exchange after our acknowledgement,
                // normally with an error that `step` reports. Keep its JSON reason either way.
                let reason = oauthbearer::describe_challenge(&challenge);
                let ended = exchange
                    .step(oauthbearer::ERROR_ACKNOWLEDGEMENT.to_vec())
                    .await;
                let broker_message = match ended {
                    Err(WireError::Authentication { message, .. }) => format!("; {message}"),
                    Err(other) => return Err(other),
                    Ok(_) => String::new(),
                };
                return Err(fail(format!(
                    "the broker refused the token from {origin}: {reason}{broker_message}"
                )));
            }
        }
    }
    Ok(SaslOutcome {
        session_lifetime: exchange.session_lifetime,
    })
}

async fn handshake(
    mux: &Multiplexer,
    version: i16,
    mechanism: &'static str,
) -> Result<(), WireError> {
    let request =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
    let body = mux.send(&request, version).await?;
    let (code, offered) = decode_handshake(body, version).map_err(|source| WireError::Decode {
        broker: mux.broker().to_string(),
        source,
    })?;
    let offered = if offered.is_empty() {
        "none".to_string()
    } else {
        offered.join(", ")
    };
    let message = match code {
        0 => return Ok(()),
        // A broker answers this way on a listener without SASL too, listing the mechanisms
        // its SASL listeners enable: then the one we asked for is in the list.
        UNSUPPORTED_SASL_MECHANISM if offered.split(", ").any(|m| m == mechanism) => format!(
            "the listener refused {mechanism} although the broker enables it ({offered}): this \
             listener probably does not use SASL (security.protocol PLAINTEXT or SSL), or the \
             broker has another listener for SASL"
        ),
        UNSUPPORTED_SASL_MECHANISM => {
            format!("the broker does not enable {mechanism} on this listener; it offers: {offered}")
        }
        code => format!(
            "SaslHandshake failed with error {code} ({}); the broker offers: {offered}",
            error_name(code)
        ),
    };
    Err(WireError::Authentication {
        broker: mux.broker().to_string(),
        mechanism,
        message,
    })
}

/// Sends mechanism messages in SaslAuthenticate requests.
struct Exchange<'a> {
    mux: &'a Multiplexer,
    version: i16,
    mechanism: &'static str,
    session_lifetime: Option<Duration>,
}

impl Exchange<'_> {
    /// Sends one client message; returns the server's message.
    async fn step(&mut self, message: Vec<u8>) -> Result<Bytes, WireError> {
        let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(message));
        let body = self.mux.send(&request, self.version).await?;
        let answer =
            decode_authenticate(body, self.version).map_err(|source| WireError::Decode {
                broker: self.mux.broker().to_string(),
                source,
            })?;
        if answer.error_code != 0 {
            let message = match answer.error_message {
                Some(message) if !message.is_empty() => message,
                _ => format!(
                    "error {} ({})",
                    answer.error_code,
                    error_name(answer.error_code)
                ),
            };
            return Err(WireError::Authentication {
                broker: self.mux.broker().to_string(),
                mechanism: self.mechanism,
                message,
            });
        }
        if answer.session_lifetime_ms > 0 {
            self.session_lifetime = Some(Duration::from_millis(answer.session_lifetime_ms as u64));
        }
        Ok(answer.auth_bytes)
    }
}

/// SaslHandshake response (v0 and v1 are the same): error code and the enabled mechanisms.
fn decode_handshake(body: Bytes, version: i16) -> Result<(i16, Vec<String>), DecodeError> {
    let mut d = Decoder::new(body, "SaslHandshake", version);
    let code = d.i16()?;
    let count = d.array_len(false, 2)?;
    let mut mechanisms = Vec::with_capacity(count);
    for _ in 0..count {
        mechanisms.push(d.string(false)?);
    }
    Ok((code, mechanisms))
}

struct AuthenticateAnswer {
    error_code: i16,
    error_message: Option<String>,
    auth_bytes: Bytes,
    session_lifetime_ms: i64,
}

/// SaslAuthenticate response, v0..=2 (v1 adds the session lifetime, v2 is flexible).
fn decode_authenticate(body: Bytes, version: i16) -> Result<AuthenticateAnswer, DecodeError> {
    let flexible = version >= 2;
    let mut d = Decoder::new(body, "SaslAuthenticate", version);
    let error_code = d.i16()?;
    let error_message = d.nullable_string(flexible)?;
    let auth_bytes = d.nullable_bytes(flexible)?.unwrap_or_default();
    let session_lifetime_ms = if version >= 1 { d.i64()? } else { 0 };
    if flexible {
        d.tagged_fields()?;
    }
    Ok(AuthenticateAnswer {
        error_code,
        error_message,
        auth_bytes,
        session_lifetime_ms,
    })
}

#[cfg(test)]
mod tests;
