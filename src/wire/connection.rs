//! A connection to one broker, ready for requests: TCP (no Nagle), then TLS, ApiVersions and
//! SASL as configured, all within `connection_setup_timeout`.
//!
//! # References
//! - <https://kafka.apache.org/protocol#protocol_network>
//! - KIP-35 (ApiVersions), KIP-43 / KIP-152 (SASL), KIP-368 (SASL session lifetime)

use std::fmt;
use std::future::Future;
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::{Request, StrBytes};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// The setup deadline used when `connection_setup_timeout` is too large for the clock: a day.
const LONGEST_SETUP: Duration = Duration::from_secs(86_400);

use super::WireError;
use super::api_versions::{self, ApiVersionTable};
use super::mux::{Multiplexer, MuxSettings};
use super::sasl;
use super::tls_stream;
use crate::auth::oauth::TokenProvider;
use crate::auth::tls;
use crate::config::{ClientConfig, SaslMechanism};

/// A connection to one broker, shared by cheap clones. Requests may be sent concurrently from
/// any number of clones; responses are matched to their requests by correlation id.
///
/// Once anything goes wrong on the socket the connection is broken for good: every waiting and
/// later request fails with [`WireError::ConnectionBroken`] naming the cause, and
/// [`is_broken`](Self::is_broken) turns true so a pool can replace it. The socket closes when the
/// last clone is dropped.
///
/// ```no_run
/// # #[cfg(feature = "unstable-wire")] {
/// use mm2_offsets::wire::kafka_protocol::messages::{ApiKey, MetadataRequest};
/// use mm2_offsets::config::ClientConfig;
/// use mm2_offsets::wire::BrokerConnection;
///
/// # async fn example() -> Result<(), mm2_offsets::wire::WireError> {
/// let config = ClientConfig::plaintext(["127.0.0.1:9092"]);
/// let connection = BrokerConnection::connect("127.0.0.1:9092", &config).await?;
/// let version = connection.negotiate(ApiKey::Metadata, 4..=12)?;
/// let body = connection.send(&MetadataRequest::default(), version).await?;
/// // `body` is the response after its header, for a bounds-checked decoder.
/// # let _ = body;
/// # Ok(())
/// # }
/// # }
/// ```
#[derive(Clone)]
pub struct BrokerConnection {
    inner: Arc<Inner>,
}

struct Inner {
    mux: Multiplexer,
    versions: ApiVersionTable,
    /// When to stop handing out this connection because its SASL session expires (KIP-368).
    retire_at: Option<Instant>,
}

impl fmt::Debug for BrokerConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrokerConnection")
            .field("address", &self.address())
            .field("broken", &self.is_broken())
            .finish_non_exhaustive()
    }
}

impl BrokerConnection {
    /// Connects to `address` (`host:port`, IPv6 as `[::1]:9092`) with `config`'s security
    /// settings. Everything (TCP, TLS, ApiVersions, SASL) is bounded by
    /// `config.connection_setup_timeout`.
    ///
    /// To connect to many brokers, build a [`Connector`] once instead: it loads the TLS
    /// certificates once.
    #[cfg_attr(not(feature = "unstable-wire"), allow(dead_code))]
    pub async fn connect(
        address: &str,
        config: &ClientConfig,
    ) -> Result<BrokerConnection, WireError> {
        Connector::new(config)?.connect(address).await
    }

    /// Sends `request` at `version` and returns the response body, after the response header,
    /// as a zero-copy slice of the response frame. Bounded by `config.request_timeout`; a request
    /// that times out closes the connection (as Java's client does), failing the other requests
    /// in flight on it with the timeout as cause. A caller that drops the future early only frees
    /// its slot, and its late response is dropped.
    ///
    /// Pick `version` with [`negotiate`](Self::negotiate); `send` does not check it against the
    /// broker's table. Every request must get a response (Produce with `acks=0` does not).
    pub async fn send<R: Request>(&self, request: &R, version: i16) -> Result<Bytes, WireError> {
        self.inner.mux.send(request, version).await
    }

    /// The versions of each API the broker supports.
    pub fn api_versions(&self) -> &ApiVersionTable {
        &self.inner.versions
    }

    /// The highest version of `api` that both the broker and `ours` support. The error names the
    /// API, the broker's range and ours.
    pub fn negotiate(&self, api: ApiKey, ours: RangeInclusive<i16>) -> Result<i16, WireError> {
        self.inner.versions.negotiate(api, ours, self.address())
    }

    /// The broker address this connection was opened to.
    pub fn address(&self) -> &str {
        self.inner.mux.broker()
    }

    /// Whether the connection failed, or its SASL session is about to expire (the broker will
    /// close it then); either way, open a new one for new work.
    pub fn is_broken(&self) -> bool {
        self.inner.mux.is_broken()
            || self
                .inner
                .retire_at
                .is_some_and(|retire_at| Instant::now() >= retire_at)
    }
}

/// Opens [`BrokerConnection`]s with one configuration; TLS settings are loaded once, here.
///
/// ```no_run
/// # #[cfg(feature = "unstable-wire")] {
/// use mm2_offsets::config::ClientConfig;
/// use mm2_offsets::wire::Connector;
///
/// # async fn example() -> Result<(), mm2_offsets::wire::WireError> {
/// let config = ClientConfig::plaintext(["b1:9092", "b2:9092"]);
/// let connector = Connector::new(&config)?;
/// for address in &config.bootstrap_servers {
///     let connection = connector.connect(address).await?;
///     println!("{} lists {} APIs", connection.address(), connection.api_versions().len());
/// }
/// # Ok(())
/// # }
/// # }
/// ```
#[derive(Clone)]
pub struct Connector {
    config: Arc<ClientConfig>,
    tls: Option<tokio_rustls::TlsConnector>,
    /// The OAUTHBEARER token source of the client-credentials grant, shared by every connection
    /// so that one token serves them all until it is renewed.
    oauth: Option<Arc<TokenProvider>>,
}

impl fmt::Debug for Connector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connector")
            .field("security_protocol", &self.config.security_protocol)
            .finish_non_exhaustive()
    }
}

impl Connector {
    /// Checks the settings and loads the TLS material, if the protocol uses TLS.
    pub fn new(config: &ClientConfig) -> Result<Connector, WireError> {
        let protocol = config.security_protocol;
        if protocol.uses_sasl() && config.sasl.is_none() {
            return Err(WireError::Config {
                message: format!(
                    "security protocol {protocol:?} needs SASL settings \
                     (sasl.mechanism and sasl.jaas.config)"
                ),
            });
        }
        let tls = if protocol.uses_tls() {
            Some(tokio_rustls::TlsConnector::from(tls::tls_client_config(
                &config.tls,
            )?))
        } else {
            None
        };
        let oauth = match &config.sasl {
            Some(sasl) if protocol.uses_sasl() => sasl
                .oauthbearer_client_credentials
                .as_ref()
                .filter(|_| sasl.mechanism == SaslMechanism::OAuthBearer)
                .map(|grant| TokenProvider::new(grant).map(Arc::new))
                .transpose()?,
            _ => None,
        };
        Ok(Connector {
            config: Arc::new(config.clone()),
            tls,
            oauth,
        })
    }

    /// Connects to `address` (`host:port`); see [`BrokerConnection::connect`].
    pub async fn connect(&self, address: &str) -> Result<BrokerConnection, WireError> {
        let (host, port) = split_host_port(address)?;
        let limit = self.config.connection_setup_timeout;
        // Checked: the limit comes from a setting, which may be any number of milliseconds.
        let now = Instant::now();
        let deadline = now.checked_add(limit).unwrap_or(now + LONGEST_SETUP);
        let stage = |name: &'static str| Stage {
            broker: address,
            name,
            deadline,
            limit,
        };

        let tcp = stage("TCP connect")
            .run(async {
                // By name, every time: a broker whose DNS name moved is found at its new
                // address on the next reconnect (Java's client resolves again when it reconnects).
                TcpStream::connect((host, port))
                    .await
                    .map_err(|source| WireError::Io {
                        broker: address.to_string(),
                        operation: "TCP connect to".to_string(),
                        source,
                    })
            })
            .await?;
        // Requests are small and answered one by one: Nagle's delay would only add latency.
        tcp.set_nodelay(true).map_err(|source| WireError::Io {
            broker: address.to_string(),
            operation: "setting TCP_NODELAY for".to_string(),
            source,
        })?;

        let settings = MuxSettings {
            client_id: StrBytes::from_string(self.config.client_id.clone()),
            request_timeout: self.config.request_timeout,
            max_response_size: self.config.max_response_size,
        };
        let mux = match &self.tls {
            None => Multiplexer::start(tcp, address.to_string(), settings),
            Some(connector) => {
                let name = tls::server_name(host)?;
                let stream = stage("TLS handshake")
                    .run(async {
                        connector
                            .connect(name, tcp)
                            .await
                            .map_err(|e| tls_stream::handshake_error(address, e))
                    })
                    .await?;
                Multiplexer::start(stream, address.to_string(), settings)
            }
        };

        let versions = stage("ApiVersions")
            .run(api_versions::exchange(&mux))
            .await?;

        let mut retire_at = None;
        if let Some(sasl_settings) = self
            .config
            .sasl
            .as_ref()
            .filter(|_| self.config.security_protocol.uses_sasl())
        {
            let token = match &self.oauth {
                // Bounded by the setup deadline inside, with errors naming the endpoint.
                Some(provider) => Some(provider.token(deadline).await?),
                None => None,
            };
            let granted = token.as_ref().zip(self.oauth.as_deref());
            let outcome = stage("SASL authentication")
                .run(sasl::authenticate(&mux, &versions, sasl_settings, granted))
                .await;
            if let (Err(WireError::Authentication { .. }), Some((token, provider))) =
                (&outcome, granted)
            {
                // A refused token may have been revoked or expired early: ask for a new one next.
                provider.forget(token).await;
            }
            let outcome = outcome?;
            // Retire the connection at 85% of the session, as Java re-authenticates by then.
            retire_at = outcome
                .session_lifetime
                // The lifetime is the broker's number: checked, a huge one never retires.
                .and_then(|lifetime| Instant::now().checked_add(lifetime.mul_f64(0.85)));
        }
        tracing::debug!(broker = address, apis = versions.len(), "connected");
        Ok(BrokerConnection {
            inner: Arc::new(Inner {
                mux,
                versions,
                retire_at,
            }),
        })
    }
}

/// One step of connection setup, bounded by what is left of the setup deadline.
struct Stage<'a> {
    broker: &'a str,
    name: &'static str,
    deadline: Instant,
    limit: Duration,
}

impl Stage<'_> {
    async fn run<T>(
        self,
        step: impl Future<Output = Result<T, WireError>>,
    ) -> Result<T, WireError> {
        tokio::time::timeout_at(self.deadline, step)
            .await
            .unwrap_or_else(|_| {
                Err(WireError::Timeout {
                    broker: self.broker.to_string(),
                    operation: format!("connection setup ({})", self.name),
                    after: self.limit,
                })
            })
    }
}

/// Splits `host:port`; an IPv6 host must be bracketed (`[::1]:9092`).
pub(crate) fn split_host_port(address: &str) -> Result<(&str, u16), WireError> {
    let invalid = |reason: &str| WireError::InvalidAddress {
        address: address.to_string(),
        reason: reason.to_string(),
    };
    let (host, port) = address
        .rsplit_once(':')
        .ok_or_else(|| invalid("expected host:port"))?;
    let host = match host.strip_prefix('[') {
        Some(bracketed) => bracketed
            .strip_suffix(']')
            .ok_or_else(|| invalid("unclosed '[' around an IPv6 address"))?,
        None if host.contains(':') => {
            return Err(invalid("write IPv6 addresses in brackets, e.g. [::1]:9092"));
        }
        None => host,
    };
    if host.is_empty() {
        return Err(invalid("the host is empty"));
    }
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|port| *port != 0)
        .ok_or_else(|| invalid("the port must be a number from 1 to 65535"))?;
    Ok((host, port))
}

#[cfg(test)]
mod tests;
