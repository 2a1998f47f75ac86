//! The OAuth 2 client-credentials grant for SASL `OAUTHBEARER`: one `POST` to the token endpoint,
//! the token cached for every connection the [`Connector`](super::Connector) opens, and fetched
//! again once 80% of its lifetime has passed (Java's default `sasl.login.refresh.window.factor`).
//!
//! As Java's `ClientCredentialsRequestGenerator`: HTTP Basic authentication with the client id
//! and secret (URL-encoded first only with `sasl.oauthbearer.header.urlencode=true`), a form
//! body `grant_type=client_credentials[&scope=...]`. As Java's `JwtHttpClient`: 5xx and other
//! non-fatal answers are tried again with a doubling back-off, 4xx answers and I/O errors are
//! not. Every wait is bounded by the connection setup deadline as well as by the grant's own
//! connect and read timeouts. When a new token cannot be had but the cached one has not expired
//! yet, the cached one is used (Java keeps its current credential while refreshing fails).
//!
//! # References
//! - RFC 6749 §2.3.1 (client password), §4.4 (client credentials grant), §5 (responses)
//! - Kafka: `ClientCredentialsJwtRetriever`, `ClientCredentialsRequestGenerator`,
//!   `JwtHttpClient`, `JwtResponseParser`, `ExpiringCredentialRefreshingLogin`

pub(crate) mod http;
pub(crate) mod token_response;

use std::io::ErrorKind;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::AuthError;
use super::tls;
use crate::config::token_endpoint::TokenEndpoint;
use crate::config::{OAuthClientCredentials, Secret};
use http::{Parsed, parse_response};
use token_response::{describe_error_response, jwt_expiry, parse_token_response};

/// Java's default `sasl.login.refresh.window.factor`: renew after 80% of the lifetime.
const REFRESH_WINDOW_FACTOR: f64 = 0.8;
/// Java's default `sasl.login.retry.backoff.ms`, the first wait before asking again.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Java's default `sasl.login.retry.backoff.max.ms`.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Gets and caches the `OAUTHBEARER` token of one client configuration.
pub(crate) struct TokenProvider {
    grant: OAuthClientCredentials,
    endpoint: TokenEndpoint,
    tls: Option<tokio_rustls::TlsConnector>,
    cache: Mutex<Option<CachedToken>>,
}

struct CachedToken {
    token: Secret,
    /// When to ask for a new one.
    refresh_at: Instant,
    /// When it stops working, if known.
    expires_at: Option<Instant>,
}

impl std::fmt::Debug for TokenProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenProvider")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.grant.client_id)
            .finish_non_exhaustive()
    }
}

impl TokenProvider {
    /// Checks the endpoint URL and loads the TLS trust for an `https` endpoint.
    pub(crate) fn new(grant: &OAuthClientCredentials) -> Result<TokenProvider, AuthError> {
        let endpoint =
            TokenEndpoint::parse(&grant.token_endpoint).map_err(|message| AuthError::Config {
                message: format!("sasl.oauthbearer.token.endpoint.url: {message}"),
            })?;
        let tls = if endpoint.https {
            let config =
                tls::tls_client_config(&grant.tls).map_err(|e| AuthError::TokenEndpoint {
                    endpoint: endpoint.to_string(),
                    message: format!(
                        "cannot set up TLS for it from the ssl.* options of sasl.jaas.config: {e}"
                    ),
                    status: None,
                    source: None,
                })?;
            Some(tokio_rustls::TlsConnector::from(config))
        } else {
            None
        };
        Ok(TokenProvider {
            grant: grant.clone(),
            endpoint,
            tls,
            cache: Mutex::new(None),
        })
    }

    /// The endpoint, as shown in messages (no credentials, no query).
    pub(crate) fn endpoint(&self) -> String {
        self.endpoint.to_string()
    }

    /// A token: the cached one while it is fresh, else a new one, all before `deadline`.
    /// Concurrent callers wait for one request rather than each sending their own.
    pub(crate) async fn token(&self, deadline: Instant) -> Result<Secret, AuthError> {
        let mut cache = self.cache.lock().await;
        let now = Instant::now();
        if let Some(cached) = cache.as_ref().filter(|c| now < c.refresh_at) {
            return Ok(cached.token.clone());
        }
        match self.fetch(deadline).await {
            Ok(fresh) => {
                let token = fresh.token.clone();
                *cache = Some(fresh);
                Ok(token)
            }
            Err(error) => match cache.as_ref() {
                Some(cached) if cached.expires_at.is_some_and(|at| Instant::now() < at) => {
                    tracing::warn!(
                        endpoint = %self.endpoint,
                        %error,
                        "could not renew the OAUTHBEARER token; using the current one until it expires"
                    );
                    Ok(cached.token.clone())
                }
                _ => Err(error),
            },
        }
    }

    /// Drops `token` from the cache (the broker refused it), so the next connection asks anew.
    pub(crate) async fn forget(&self, token: &Secret) {
        let mut cache = self.cache.lock().await;
        if cache.as_ref().is_some_and(|c| &c.token == token) {
            *cache = None;
        }
    }

    /// Asks the endpoint, again after a back-off while its answers are worth retrying.
    async fn fetch(&self, deadline: Instant) -> Result<CachedToken, AuthError> {
        let mut backoff = FIRST_BACKOFF;
        loop {
            match self.request_once(deadline).await {
                Err(
                    error @ AuthError::TokenEndpoint {
                        status: Some(status),
                        ..
                    },
                ) if retry_status(status) && Instant::now() + backoff < deadline => {
                    tracing::debug!(%error, wait = ?backoff, "asking the token endpoint again");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                other => return other,
            }
        }
    }

    async fn request_once(&self, deadline: Instant) -> Result<CachedToken, AuthError> {
        let now = Instant::now();
        let connect_by = deadline.min(
            now.checked_add(self.grant.connect_timeout)
                .unwrap_or(deadline),
        );
        let (limit, which) = if connect_by < deadline {
            (self.grant.connect_timeout, "sasl.login.connect.timeout.ms")
        } else {
            (
                deadline.saturating_duration_since(now),
                "the connection setup timeout",
            )
        };
        let timed_out = |what: &str, limit: Duration, which: &str| {
            self.error(
                format!(
                    "no {what} within {:?} ({which}); is the endpoint up and reachable?",
                    super::to_millis(limit)
                ),
                None,
                Some(std::io::Error::from(ErrorKind::TimedOut)),
            )
        };
        let address = self.endpoint.address();
        let tcp = tokio::time::timeout_at(connect_by, TcpStream::connect(&address))
            .await
            .map_err(|_| timed_out("connection", limit, which))?
            .map_err(|e| {
                self.error(
                    "cannot connect; is the endpoint up, and the URL right?".to_string(),
                    None,
                    Some(e),
                )
            })?;
        let request = self.request();
        let now = Instant::now();
        let read_by = deadline.min(now.checked_add(self.grant.read_timeout).unwrap_or(deadline));
        let (limit, which) = if read_by < deadline {
            (self.grant.read_timeout, "sasl.login.read.timeout.ms")
        } else {
            (
                deadline.saturating_duration_since(now),
                "the connection setup timeout",
            )
        };
        let answer = match &self.tls {
            None => tokio::time::timeout_at(read_by, self.exchange(tcp, &request))
                .await
                .map_err(|_| timed_out("answer", limit, which))??,
            Some(connector) => {
                let name = tls::server_name(&self.endpoint.host)?;
                let stream = tokio::time::timeout_at(connect_by, connector.connect(name, tcp))
                    .await
                    .map_err(|_| timed_out("TLS handshake", limit, which))?
                    .map_err(|e| self.tls_error(e))?;
                tokio::time::timeout_at(read_by, self.exchange(stream, &request))
                    .await
                    .map_err(|_| timed_out("answer", limit, which))??
            }
        };
        self.token_from(answer)
    }

    /// The request, with the client's credentials in it: never logged.
    fn request(&self) -> Vec<u8> {
        let encode = |text: &str| {
            if self.grant.urlencode_header {
                http::form_urlencode(text)
            } else {
                text.to_string()
            }
        };
        let credentials = format!(
            "{}:{}",
            encode(&self.grant.client_id),
            encode(self.grant.client_secret.expose())
        );
        let basic = base64::engine::general_purpose::STANDARD.encode(credentials);
        let mut body = String::from("grant_type=client_credentials");
        if let Some(scope) = &self.grant.scope {
            body.push_str("&scope=");
            body.push_str(&http::form_urlencode(scope));
        }
        format!(
            "POST {target} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\n\
             Authorization: Basic {basic}\r\nCache-Control: no-cache\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {length}\r\n\
             Connection: close\r\nUser-Agent: mm2-offsets/{version}\r\n\r\n{body}",
            target = self.endpoint.target,
            host = self.endpoint.host_header(),
            length = body.len(),
            version = env!("CARGO_PKG_VERSION"),
        )
        .into_bytes()
    }

    /// Sends the request and reads one bounded answer.
    async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        mut stream: S,
        request: &[u8],
    ) -> Result<http::HttpResponse, AuthError> {
        let io = |e: std::io::Error| self.error("the exchange failed".to_string(), None, Some(e));
        stream.write_all(request).await.map_err(io)?;
        stream.flush().await.map_err(io)?;
        let mut buffer = Vec::with_capacity(4096);
        let mut chunk = [0u8; 8192];
        loop {
            let read = match stream.read(&mut chunk).await {
                Ok(read) => read,
                // A TLS peer that closes without close_notify: the framing decides below.
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => 0,
                Err(e) => return Err(io(e)),
            };
            buffer.extend_from_slice(&chunk[..read]);
            if buffer.len() > http::MAX_HEADER_BYTES + 2 * http::MAX_BODY_BYTES {
                return Err(self.error("the answer is too large".to_string(), None, None));
            }
            match parse_response(&buffer, read == 0) {
                Ok(Parsed::Complete(response)) => return Ok(response),
                Ok(Parsed::Incomplete) => {}
                Err(problem) => {
                    return Err(self.error(
                        format!("malformed HTTP answer: {problem}"),
                        None,
                        None,
                    ));
                }
            }
        }
    }

    /// The token in a complete answer, with its refresh time.
    fn token_from(&self, answer: http::HttpResponse) -> Result<CachedToken, AuthError> {
        let status = answer.status;
        if !(status == 200 || status == 201) {
            let detail = describe_error_response(&answer.body)
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            let advice = match status {
                400 | 401 | 403 => {
                    "; check the client id and secret (sasl.oauthbearer.client.credentials.* or \
                     the clientId/clientSecret options of sasl.jaas.config) and the scope"
                }
                404 | 405 => "; check sasl.oauthbearer.token.endpoint.url",
                _ => "",
            };
            return Err(self.error(
                format!("the endpoint answered HTTP {status}{detail}{advice}"),
                Some(status),
                None,
            ));
        }
        let response = parse_token_response(&answer.body)
            .map_err(|problem| self.error(problem, Some(status), None))?;
        let now = Instant::now();
        let lifetime = jwt_expiry(response.token.expose())
            .map(|exp| {
                let unix_now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs();
                Duration::from_secs(exp.saturating_sub(unix_now))
            })
            .or(response.expires_in);
        if lifetime == Some(Duration::ZERO) {
            return Err(self.error(
                "the token it issued has already expired (check this machine's clock)".to_string(),
                Some(status),
                None,
            ));
        }
        Ok(CachedToken {
            token: response.token,
            // Without a known lifetime the token is used once and asked for again next time.
            refresh_at: lifetime
                .and_then(|l| now.checked_add(l.mul_f64(REFRESH_WINDOW_FACTOR)))
                .unwrap_or(now),
            expires_at: lifetime.and_then(|l| now.checked_add(l)),
        })
    }

    fn tls_error(&self, error: std::io::Error) -> AuthError {
        let hint = match error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)) => {
                "; trust its CA with the ssl.truststore.location (or ssl.truststore.certificates) \
                 option inside sasl.jaas.config, as Java's OAuthBearerLoginCallbackHandler reads it"
            }
            Some(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => "; use a host name the certificate lists in the URL",
            _ => "",
        };
        self.error(format!("the TLS handshake failed{hint}"), None, Some(error))
    }

    fn error(
        &self,
        message: String,
        status: Option<u16>,
        source: Option<std::io::Error>,
    ) -> AuthError {
        AuthError::TokenEndpoint {
            endpoint: self.endpoint.to_string(),
            message,
            status,
            source,
        }
    }
}

/// Java's `JwtHttpClient`: fatal 4xx/5xx codes are not retried; the others are.
fn retry_status(status: u16) -> bool {
    !matches!(
        status,
        400 | 401
            | 402
            | 403
            | 404
            | 405
            | 406
            | 407
            | 409
            | 410
            | 411
            | 412
            | 413
            | 414
            | 415
            | 501
            | 505
    ) && !(200..300).contains(&status)
}

#[cfg(test)]
mod tests;
