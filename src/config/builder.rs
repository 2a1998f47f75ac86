//! Building a [`ClientConfig`] in code, and checking it before anything connects.
//!
//! The `.properties` path ([`ClientConfig::from_properties`]) checks as it reads; a configuration
//! written in code has no such step, so a SASL protocol without credentials would only fail at
//! connect time. The builders here set the security protocol together with its settings, and
//! [`ClientConfig::validate`] reports a missing or contradictory piece by its Java key.
//!
//! ```
//! use mm2_offsets::config::{ClientConfig, PemSource, Secret, SecurityProtocol, TlsSettings};
//!
//! let config = ClientConfig::plaintext(["broker-1:9093", "broker-2:9093"])
//!     .with_tls(TlsSettings::trusting(PemSource::File("ca.pem".into())))
//!     .with_sasl_scram_sha512("mirror-reader", Secret::new("s3cret"));
//! assert_eq!(config.security_protocol, SecurityProtocol::SaslSsl);
//!
//! // A SASL protocol chosen by hand, without credentials, is caught before connecting.
//! let mut incomplete = ClientConfig::plaintext(["broker-1:9092"]);
//! incomplete.security_protocol = SecurityProtocol::SaslPlaintext;
//! let error = incomplete.validate().unwrap_err();
//! assert!(error.to_string().starts_with("sasl.mechanism is not set"), "{error}");
//! ```

use std::path::PathBuf;
use std::time::Duration;

use super::keys::{
    BOOTSTRAP_SERVERS, REQUEST_TIMEOUT_MS, SASL_JAAS_CONFIG, SASL_LOGIN_CONNECT_TIMEOUT_MS,
    SASL_LOGIN_READ_TIMEOUT_MS, SASL_MECHANISM, SASL_OAUTHBEARER_CLIENT_ID,
    SASL_OAUTHBEARER_CLIENT_SECRET, SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL,
    SASL_OAUTHBEARER_TOKEN_FILE, SECURITY_PROTOCOL, SOCKET_CONNECTION_SETUP_TIMEOUT_MS,
    SSL_KEYSTORE_CERTIFICATE_CHAIN, SSL_KEYSTORE_KEY,
};
use super::token_endpoint::TokenEndpoint;
use super::{
    ClientConfig, ConfigError, OAuthClientCredentials, PemSource, SaslMechanism, SaslSettings,
    Secret, SecurityProtocol, TlsSettings,
};

impl TlsSettings {
    /// TLS that trusts the CA certificates in `ca` (instead of the system's roots) and verifies
    /// the broker's host name.
    pub fn trusting(ca: PemSource) -> Self {
        TlsSettings {
            trusted_certificates: Some(ca),
            ..TlsSettings::default()
        }
    }

    /// Adds a client certificate chain and its private key, for brokers that require mutual TLS
    /// (`ssl.client.auth=required`).
    pub fn with_client_identity(mut self, certificate_chain: PemSource, key: PemSource) -> Self {
        self.client_certificate_chain = Some(certificate_chain);
        self.client_key = Some(key);
        self
    }
}

impl ClientConfig {
    /// Connects over TLS with `tls`: the protocol becomes `SSL`, or `SASL_SSL` when SASL is
    /// already set. [`TlsSettings::default()`] trusts the system's roots.
    pub fn with_tls(mut self, tls: TlsSettings) -> Self {
        self.tls = tls;
        self.security_protocol = if self.security_protocol.uses_sasl() {
            SecurityProtocol::SaslSsl
        } else {
            SecurityProtocol::Ssl
        };
        self
    }

    /// Authenticates with `sasl`: the protocol becomes `SASL_PLAINTEXT`, or `SASL_SSL` when TLS
    /// is already set.
    pub fn with_sasl(mut self, sasl: SaslSettings) -> Self {
        self.sasl = Some(sasl);
        self.security_protocol = if self.security_protocol.uses_tls() {
            SecurityProtocol::SaslSsl
        } else {
            SecurityProtocol::SaslPlaintext
        };
        self
    }

    /// SASL `PLAIN`: the password travels as is, so combine it with [`with_tls`](Self::with_tls).
    pub fn with_sasl_plain(self, username: impl Into<String>, password: Secret) -> Self {
        self.with_sasl_mechanism(SaslMechanism::Plain, username, password)
    }

    /// SASL `SCRAM-SHA-256`.
    pub fn with_sasl_scram_sha256(self, username: impl Into<String>, password: Secret) -> Self {
        self.with_sasl_mechanism(SaslMechanism::ScramSha256, username, password)
    }

    /// SASL `SCRAM-SHA-512`.
    pub fn with_sasl_scram_sha512(self, username: impl Into<String>, password: Secret) -> Self {
        self.with_sasl_mechanism(SaslMechanism::ScramSha512, username, password)
    }

    fn with_sasl_mechanism(
        self,
        mechanism: SaslMechanism,
        username: impl Into<String>,
        password: Secret,
    ) -> Self {
        self.with_sasl(SaslSettings::new(mechanism, username, password))
    }

    /// SASL `OAUTHBEARER` with the token (a JWT) read from `token_file` at every authentication,
    /// so a rotated file reaches the next connection.
    pub fn with_sasl_oauthbearer_token_file(self, token_file: impl Into<PathBuf>) -> Self {
        let mut sasl = SaslSettings::new(SaslMechanism::OAuthBearer, "", Secret::new(""));
        sasl.oauthbearer_token_file = Some(token_file.into());
        self.with_sasl(sasl)
    }

    /// SASL `OAUTHBEARER` with a token from an OIDC token endpoint (the client-credentials
    /// grant). The connector caches the token and fetches a new one before it expires.
    ///
    /// ```
    /// use mm2_offsets::config::{ClientConfig, OAuthClientCredentials, Secret, TlsSettings};
    ///
    /// let grant = OAuthClientCredentials::new(
    ///     "https://idp.example.com/oauth2/token",
    ///     "mm2-offsets",
    ///     Secret::new(std::env::var("CLIENT_SECRET").unwrap_or_default()),
    /// );
    /// let config = ClientConfig::plaintext(["broker:9093"])
    ///     .with_tls(TlsSettings::default())
    ///     .with_sasl_oauthbearer_client_credentials(grant);
    /// # let _ = config;
    /// ```
    pub fn with_sasl_oauthbearer_client_credentials(self, grant: OAuthClientCredentials) -> Self {
        let mut sasl = SaslSettings::new(SaslMechanism::OAuthBearer, "", Secret::new(""));
        sasl.oauthbearer_client_credentials = Some(grant);
        self.with_sasl(sasl)
    }

    /// Checks that the configuration is complete and consistent, without connecting: bootstrap
    /// servers given as `host:port`, SASL settings present exactly when the protocol uses SASL,
    /// a client certificate and key given together, and non-zero timeouts and limits.
    ///
    /// The error names the Java key to set ([`ConfigError::Missing`] or
    /// [`ConfigError::Invalid`]). Files named by the TLS settings are read only when connecting.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.bootstrap_servers.is_empty() {
            return Err(ConfigError::Missing {
                key: BOOTSTRAP_SERVERS.to_string(),
                hint: "give at least one host:port of the cluster".to_string(),
            });
        }
        for server in &self.bootstrap_servers {
            check_host_port(server)?;
        }
        match (self.security_protocol.uses_sasl(), &self.sasl) {
            (true, None) => {
                return Err(ConfigError::Missing {
                    key: SASL_MECHANISM.to_string(),
                    hint: format!(
                        "security protocol {:?} authenticates with SASL: give SASL settings \
                         (mechanism, user name, password)",
                        self.security_protocol
                    ),
                });
            }
            (false, Some(_)) => {
                return Err(ConfigError::invalid(
                    SECURITY_PROTOCOL,
                    format!(
                        "SASL settings are given but security protocol {:?} does not use SASL: \
                         choose SaslPlaintext or SaslSsl, or drop the SASL settings",
                        self.security_protocol
                    ),
                ));
            }
            (true, Some(sasl)) if sasl.mechanism == SaslMechanism::OAuthBearer => {
                match (
                    &sasl.oauthbearer_token_file,
                    &sasl.oauthbearer_client_credentials,
                ) {
                    (None, None) => {
                        return Err(ConfigError::Missing {
                            key: SASL_OAUTHBEARER_TOKEN_FILE.to_string(),
                            hint: "SASL OAUTHBEARER reads its token (a JWT) from this file, or                                    gets it from a token endpoint                                    (oauthbearer_client_credentials)"
                                .to_string(),
                        });
                    }
                    (Some(_), Some(_)) => {
                        return Err(ConfigError::conflict(
                            SASL_OAUTHBEARER_TOKEN_FILE,
                            SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL,
                            "give the token one way: a file or a token endpoint",
                        ));
                    }
                    (None, Some(grant)) => validate_grant(grant)?,
                    (Some(_), None) => {}
                }
            }
            (true, Some(sasl))
                if sasl.mechanism != SaslMechanism::OAuthBearer && sasl.username.is_empty() =>
            {
                return Err(ConfigError::invalid(
                    SASL_JAAS_CONFIG,
                    "the SASL user name is empty",
                ));
            }
            _ => {}
        }
        if self.security_protocol.uses_tls() {
            match (&self.tls.client_certificate_chain, &self.tls.client_key) {
                (Some(_), None) => {
                    return Err(ConfigError::Missing {
                        key: SSL_KEYSTORE_KEY.to_string(),
                        hint: "a client certificate chain needs its private key".to_string(),
                    });
                }
                (None, Some(_)) => {
                    return Err(ConfigError::Missing {
                        key: SSL_KEYSTORE_CERTIFICATE_CHAIN.to_string(),
                        hint: "a client private key needs its certificate chain".to_string(),
                    });
                }
                _ => {}
            }
        }
        non_zero(REQUEST_TIMEOUT_MS, self.request_timeout)?;
        non_zero(
            SOCKET_CONNECTION_SETUP_TIMEOUT_MS,
            self.connection_setup_timeout,
        )?;
        if self.connections_per_broker == 0 {
            return Err(ConfigError::invalid(
                "connections_per_broker",
                "must be at least 1",
            ));
        }
        if self.max_response_size == 0 {
            return Err(ConfigError::invalid(
                "max_response_size",
                "must be at least 1 byte",
            ));
        }
        Ok(())
    }
}

fn check_host_port(server: &str) -> Result<(), ConfigError> {
    let port = server
        .rsplit_once(':')
        .filter(|(host, _)| !host.is_empty())
        .map(|(_, port)| port);
    match port.map(str::parse::<u16>) {
        Some(Ok(port)) if port > 0 => Ok(()),
        _ => Err(ConfigError::invalid(
            BOOTSTRAP_SERVERS,
            format!("{server:?} is not host:port with a port from 1 to 65535"),
        )),
    }
}

/// The client-credentials grant: a token endpoint URL we can use, a client id and a secret.
fn validate_grant(grant: &OAuthClientCredentials) -> Result<(), ConfigError> {
    TokenEndpoint::parse(&grant.token_endpoint)
        .map_err(|reason| ConfigError::invalid(SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL, reason))?;
    if grant.client_id.trim().is_empty() {
        return Err(ConfigError::Missing {
            key: SASL_OAUTHBEARER_CLIENT_ID.to_string(),
            hint: "the token endpoint needs the client id".to_string(),
        });
    }
    if grant.client_secret.expose().trim().is_empty() {
        return Err(ConfigError::Missing {
            key: SASL_OAUTHBEARER_CLIENT_SECRET.to_string(),
            hint: "the token endpoint needs the client secret".to_string(),
        });
    }
    non_zero(SASL_LOGIN_CONNECT_TIMEOUT_MS, grant.connect_timeout)?;
    non_zero(SASL_LOGIN_READ_TIMEOUT_MS, grant.read_timeout)
}

fn non_zero(key: &str, value: Duration) -> Result<(), ConfigError> {
    if value.is_zero() {
        return Err(ConfigError::invalid(key, "must be more than zero"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(error: ConfigError) -> String {
        match error {
            ConfigError::Missing { key, .. } | ConfigError::Invalid { key, .. } => key,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn builders_set_the_protocol_with_its_settings() {
        let tls = ClientConfig::plaintext(["b:9093"]).with_tls(TlsSettings::default());
        assert_eq!(tls.security_protocol, SecurityProtocol::Ssl);
        let sasl = ClientConfig::plaintext(["b:9092"]).with_sasl_plain("u", Secret::new("p"));
        assert_eq!(sasl.security_protocol, SecurityProtocol::SaslPlaintext);
        assert_eq!(sasl.sasl.as_ref().unwrap().mechanism, SaslMechanism::Plain);
        // Either order gives SASL over TLS.
        let both = sasl.with_tls(TlsSettings::default());
        assert_eq!(both.security_protocol, SecurityProtocol::SaslSsl);
        let both = ClientConfig::plaintext(["b:9093"])
            .with_tls(TlsSettings::default())
            .with_sasl_scram_sha256("u", Secret::new("p"));
        assert_eq!(both.security_protocol, SecurityProtocol::SaslSsl);
        assert_eq!(
            both.sasl.as_ref().unwrap().mechanism,
            SaslMechanism::ScramSha256
        );
        for config in [tls, both] {
            config.validate().unwrap();
        }
    }

    #[test]
    fn validate_names_the_missing_piece() {
        let ok = ClientConfig::plaintext(["b:9092"]);
        ok.validate().unwrap();

        let mut c = ok.clone();
        c.security_protocol = SecurityProtocol::SaslSsl;
        assert_eq!(key_of(c.validate().unwrap_err()), SASL_MECHANISM);

        let mut c = ok.clone().with_sasl_scram_sha512("u", Secret::new("p"));
        c.security_protocol = SecurityProtocol::Ssl;
        assert_eq!(key_of(c.validate().unwrap_err()), SECURITY_PROTOCOL);

        let oauth = ok
            .clone()
            .with_sasl_oauthbearer_token_file("/run/token.jwt");
        assert!(oauth.validate().is_ok());
        let mut no_file = oauth.clone();
        no_file.sasl.as_mut().unwrap().oauthbearer_token_file = None;
        assert!(
            no_file
                .validate()
                .unwrap_err()
                .to_string()
                .starts_with("sasl.oauthbearer.token.file is not set")
        );
        let c = ok.clone().with_sasl_plain("", Secret::new("p"));
        assert_eq!(key_of(c.validate().unwrap_err()), SASL_JAAS_CONFIG);

        let tls = TlsSettings {
            client_certificate_chain: Some(PemSource::File("client.pem".into())),
            ..TlsSettings::default()
        };
        let c = ok.clone().with_tls(tls);
        assert_eq!(key_of(c.validate().unwrap_err()), SSL_KEYSTORE_KEY);

        let tls = TlsSettings {
            client_key: Some(PemSource::File("client.key".into())),
            ..TlsSettings::default()
        };
        let c = ok.clone().with_tls(tls);
        assert_eq!(
            key_of(c.validate().unwrap_err()),
            SSL_KEYSTORE_CERTIFICATE_CHAIN
        );

        let mut c = ok.clone();
        c.request_timeout = Duration::ZERO;
        assert_eq!(key_of(c.validate().unwrap_err()), REQUEST_TIMEOUT_MS);

        let mut c = ok.clone();
        c.connections_per_broker = 0;
        assert_eq!(key_of(c.validate().unwrap_err()), "connections_per_broker");

        assert_eq!(
            key_of(ClientConfig::default().validate().unwrap_err()),
            BOOTSTRAP_SERVERS
        );
        for bad in ["broker", ":9092", "b:0", "b:65536", "b:x"] {
            let c = ClientConfig::plaintext([bad]);
            assert_eq!(
                key_of(c.validate().unwrap_err()),
                BOOTSTRAP_SERVERS,
                "{bad}"
            );
        }
        // IPv6 literals keep their colons in the host part.
        ClientConfig::plaintext(["[::1]:9092"]).validate().unwrap();
    }

    #[test]
    fn the_password_never_shows_in_a_validation_error() {
        let mut c =
            ClientConfig::plaintext(["b:9092"]).with_sasl_plain("u", Secret::new("hunter2"));
        c.security_protocol = SecurityProtocol::Plaintext;
        let error = c.validate().unwrap_err();
        assert!(!format!("{error} {error:?}").contains("hunter2"));
    }
}
