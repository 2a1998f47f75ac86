//! [`ClientConfig::from_properties`]: Java client properties to a [`ClientConfig`].
//!
//! Keys are read as Java's `MirrorClientConfig` reads them for its consumer: a `consumer.`-prefixed
//! key overrides the unprefixed one. Unlike Java, which keeps only connection keys
//! (`bootstrap.servers`, `security.protocol`, `ssl.*`, `sasl.*`) and silently drops the rest, we
//! also honour `client.id` and the two timeouts, prefixed or not. `admin.`/`producer.`-prefixed
//! keys are accepted without effect: one connection setting serves every request, and a warning
//! says so when such a key differs from the setting in use.
//!
//! Keys we do not use produce warnings, not errors, so a file written for Kafka's tools works as
//! is. Warnings and errors name keys, never the values of keys that may hold secrets.

use super::keys::*;
use super::settings::{Setting, Settings, parse_millis};
use super::{ClientConfig, ConfigError, ConfigWarning, Properties, SecurityProtocol};

impl ClientConfig {
    /// Reads client settings from Java-style properties, as Kafka's own tools read a
    /// client configuration file (or as built by [`layered`](super::layered) and
    /// [`mm2_client_properties`](super::mm2_client_properties)).
    ///
    /// Returns the configuration and warnings ([`ConfigWarning`], one line each when
    /// displayed) about keys that were ignored.
    ///
    /// Supported: `bootstrap.servers` (required), `client.id`, `security.protocol`,
    /// `request.timeout.ms`, `socket.connection.setup.timeout.ms`; SASL `PLAIN` and `SCRAM-SHA-256/512`
    /// with `sasl.jaas.config` or our `sasl.username` + `sasl.password` / `sasl.password.file`;
    /// TLS with PEM, JKS or PKCS12 trust and key stores (`ssl.truststore.type`,
    /// `ssl.truststore.location` or `ssl.truststore.certificates`, `ssl.truststore.password`;
    /// `ssl.keystore.type`, `ssl.keystore.location` or `ssl.keystore.certificate.chain` +
    /// `ssl.keystore.key`, `ssl.keystore.password`, `ssl.key.password`, each password also from
    /// our `*.password.file` keys) and `ssl.endpoint.identification.algorithm`.
    ///
    /// As in Java, `ssl.keystore.location` of type PEM names one file holding both the private
    /// key and its certificate chain. [`TlsSettings`](super::TlsSettings) keeps the chain and the key as
    /// separate [`PemSource`](super::PemSource)s, so both point at that same file; the wire layer
    /// reads the certificates and the key from it separately.
    ///
    /// Where we differ from Java on purpose: `client.id` and the timeouts are honoured (Java's
    /// `MirrorClient` drops them); `ssl.*store.type` is matched in any case; a JKS or PKCS12
    /// key store must hold exactly one private key; and `sasl.mechanism` has no default
    /// (Java's is GSSAPI).
    ///
    /// PKCS12 stores need the crate feature `pkcs12` (on by default); without it they are
    /// accepted here and fail when the client connects, naming the feature.
    ///
    /// ```
    /// use mm2_offsets::config::{ClientConfig, Properties, SaslMechanism, SecurityProtocol};
    ///
    /// let props = Properties::parse(
    ///     "bootstrap.servers=b1:9093,b2:9093\n\
    ///      security.protocol=sasl_ssl\n\
    ///      sasl.mechanism=SCRAM-SHA-512\n\
    ///      sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n\
    ///        username=\"alice\" password=\"alice-secret\";\n\
    ///      ssl.truststore.type=PEM\n\
    ///      ssl.truststore.location=/etc/kafka/ca.pem\n\
    ///      linger.ms=5\n",
    /// )?;
    /// let (config, warnings) = ClientConfig::from_properties(&props)?;
    /// assert_eq!(config.security_protocol, SecurityProtocol::SaslSsl);
    /// let sasl = config.sasl.as_ref().unwrap();
    /// assert_eq!((sasl.mechanism, sasl.username.as_str()), (SaslMechanism::ScramSha512, "alice"));
    /// assert_eq!(warnings[0].to_string(), "`linger.ms` is not used by mm2-offsets; ignored");
    /// assert!(!format!("{config:?}").contains("alice-secret"));
    /// # Ok::<(), mm2_offsets::config::ConfigError>(())
    /// ```
    ///
    /// # Errors
    /// A [`ConfigError`] naming the key for a missing `bootstrap.servers`, an invalid value, a
    /// Java feature we do not support (JCEKS stores, encrypted PEM keys, GSSAPI) with what to do
    /// instead, contradicting keys, or an unreadable password file. Store files themselves are
    /// read when connecting.
    pub fn from_properties(
        props: &Properties,
    ) -> Result<(ClientConfig, Vec<ConfigWarning>), ConfigError> {
        let mut s = Settings::new(props);
        let mut config = ClientConfig::default();

        let servers = s
            .get(BOOTSTRAP_SERVERS)
            .ok_or_else(|| ConfigError::Missing {
                key: BOOTSTRAP_SERVERS.into(),
                hint: "give the brokers to connect to, as host:port[,host:port…]".into(),
            })?;
        config.bootstrap_servers = parse_bootstrap_servers(servers)?;
        if let Some(id) = s.get(CLIENT_ID) {
            config.client_id = id.value.to_string();
        }
        if let Some(protocol) = s.get(SECURITY_PROTOCOL) {
            config.security_protocol = parse_security_protocol(protocol)?;
        }
        if let Some(ms) = s.get(REQUEST_TIMEOUT_MS) {
            config.request_timeout = parse_millis(ms)?;
        }
        if let Some(ms) = s.get(SOCKET_CONNECTION_SETUP_TIMEOUT_MS) {
            config.connection_setup_timeout = parse_millis(ms)?;
        }
        config.tls = super::tls_props::read(&mut s, config.security_protocol)?;
        config.sasl = super::sasl_props::read(&mut s, config.security_protocol)?;
        Ok((config, s.finish()))
    }
}

/// `host:port` entries, comma separated; blanks around entries and empty entries are skipped, as
/// Java does.
fn parse_bootstrap_servers(setting: Setting<'_>) -> Result<Vec<String>, ConfigError> {
    let mut servers = Vec::new();
    for entry in setting
        .value
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
    {
        if let Some(problem) = bootstrap_entry_problem(entry) {
            return Err(ConfigError::invalid(
                setting.key,
                format!("`{}` {problem}", shortened(entry).escape_debug()),
            ));
        }
        servers.push(entry.to_string());
    }
    if servers.is_empty() {
        return Err(ConfigError::Missing {
            key: setting.key.to_string(),
            hint: "it is empty; give the brokers to connect to, as host:port[,host:port…]".into(),
        });
    }
    Ok(servers)
}

/// What is wrong with one `host:port` entry, worded for the likely mistake.
fn bootstrap_entry_problem(entry: &str) -> Option<String> {
    if let Some((scheme, _)) = entry.split_once("://") {
        return Some(format!(
            "has a scheme ({scheme}://): Kafka addresses are host:port; drop the scheme (the \
             protocol is set by security.protocol)"
        ));
    }
    let Some((host, port)) = entry.rsplit_once(':') else {
        return Some("has no port: write host:port, e.g. broker:9092".to_string());
    };
    if host.is_empty() || host == "[]" {
        return Some("has no host: write host:port".to_string());
    }
    if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) {
        return match port.parse::<u16>() {
            Ok(0) | Err(_) => Some("has a port outside 1..=65535".to_string()),
            Ok(_) if host.contains(':') && !host.starts_with('[') => {
                Some("is not host:port (IPv6 addresses go in brackets: [::1]:9092)".to_string())
            }
            Ok(_) => None,
        };
    }
    Some(format!(
        "is not host:port: the port `{}` is not a number (IPv6 addresses go in brackets: [::1]:9092)",
        shortened(port).escape_debug()
    ))
}

/// At most 100 characters of a value quoted in a message, so a huge one is not echoed whole.
fn shortened(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(100) {
        Some((end, _)) => format!("{}…", &text[..end]).into(),
        None => text.into(),
    }
}

fn parse_security_protocol(setting: Setting<'_>) -> Result<SecurityProtocol, ConfigError> {
    let value = setting.value.trim();
    let protocols = [
        ("PLAINTEXT", SecurityProtocol::Plaintext),
        ("SSL", SecurityProtocol::Ssl),
        ("SASL_PLAINTEXT", SecurityProtocol::SaslPlaintext),
        ("SASL_SSL", SecurityProtocol::SaslSsl),
    ];
    protocols
        .iter()
        .find(|(name, _)| value.eq_ignore_ascii_case(name))
        .map(|&(_, protocol)| protocol)
        .ok_or_else(|| {
            ConfigError::invalid(
                setting.key,
                format!(
                    "{} is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
                    setting.shown()
                ),
            )
        })
}

#[cfg(test)]
#[path = "client_props_tests.rs"]
mod tests;
