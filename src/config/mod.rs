//! Client settings: where the brokers are, how to secure the connection, and how long to wait.
//!
//! The types here are plain data. Reading them from Java-style settings goes:
//!
//! 1. [`Properties`]: parse a `.properties` file (the same files `kafka-consumer-groups.sh
//!    --command-config` reads), or take one cluster's settings from a MirrorMaker 2 file with
//!    [`mm2_client_properties`];
//! 2. [`layered`]: let command-line flags override the file, and `MM2_OFFSETS_*` environment
//!    variables override both;
//! 3. [`ClientConfig::from_properties`]: validate into a [`ClientConfig`], with warnings for keys
//!    that are ignored. The same properties give the replication policy
//!    ([`ReplicationPolicy::from_properties`](crate::mm2::ReplicationPolicy::from_properties)).
//!
//! ```no_run
//! use mm2_offsets::config::{layered, ClientConfig, Properties};
//!
//! let file = Properties::from_file("client.properties")?;
//! let cli: Properties = [("bootstrap.servers", "broker:9092")].into_iter().collect();
//! let props = layered(file, cli, std::env::vars());
//! let (config, warnings) = ClientConfig::from_properties(&props)?;
//! for warning in warnings {
//!     eprintln!("warning: {warning}");
//! }
//! # let _ = config;
//! # Ok::<(), mm2_offsets::config::ConfigError>(())
//! ```
//!
//! Secrets (passwords, JAAS strings, private keys) never appear in `Debug` output, errors or
//! warnings.

mod builder;
mod client_props;
mod error;
pub mod files;
mod jaas;
pub mod keys;
mod layers;
mod mm2_props;
pub(crate) mod properties;
mod sasl_props;
mod secret;
mod settings;
mod tls_props;
pub(crate) mod token_endpoint;
mod warning;

pub use error::ConfigError;
pub use layers::{ENV_KEYS, ENV_PREFIX, env_properties, env_var_name, layered, overlay};
pub use mm2_props::{mm2_client_properties, mm2_cluster_aliases};
pub use properties::{MAX_FILE_BYTES as MAX_PROPERTIES_FILE_BYTES, Properties, is_sensitive_key};
pub use secret::Secret;
pub use warning::{ConfigWarning, IgnoredBecause};

use std::path::PathBuf;
use std::time::Duration;

/// How a client talks to a broker, as Java's `security.protocol`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SecurityProtocol {
    /// Plain TCP.
    #[default]
    Plaintext,
    /// TLS.
    Ssl,
    /// SASL over plain TCP.
    SaslPlaintext,
    /// SASL over TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Whether the connection is wrapped in TLS.
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Whether the connection authenticates with SASL after connecting.
    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

/// Where a PEM document comes from: a file, or text given inline (Java's
/// `ssl.truststore.certificates` / `ssl.keystore.key`).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PemSource {
    /// A PEM file on disk.
    File(PathBuf),
    /// PEM text given inline.
    Inline(String),
}

impl std::fmt::Debug for PemSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PemSource::File(path) => f.debug_tuple("File").field(path).finish(),
            // Inline PEM may be a private key: never print it.
            PemSource::Inline(_) => f.write_str("Inline(<pem>)"),
        }
    }
}

/// The format of a Java key store file (`ssl.truststore.type` / `ssl.keystore.type`).
///
/// As Java 17 does, either type reads either format: the file's content decides.
///
/// Reading a PKCS12 file (whichever type is declared) needs the crate feature `pkcs12` (on by
/// default). Built without it, such a store fails when the client connects
/// ([`ErrorKind::Config`](crate::client::ErrorKind::Config)), with an error that names the
/// feature; JKS and PEM need no feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyStoreType {
    /// `JKS`, Java's own format and Kafka's default `ssl.*store.type`.
    Jks,
    /// `PKCS12`, `keytool`'s default since JDK 9.
    Pkcs12,
}

/// A JKS or PKCS12 store file and its passwords; `Debug` never shows the passwords.
///
/// PKCS12 content needs the crate feature `pkcs12` (on by default; see [`KeyStoreType`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyStoreFile {
    /// The store file.
    pub path: PathBuf,
    /// The declared type.
    pub store_type: KeyStoreType,
    /// The store password (`ssl.*store.password`). A JKS store without one is read without its
    /// integrity check, as Java does; PKCS12 needs it.
    pub password: Option<Secret>,
    /// The private key's password (`ssl.key.password`) for a JKS key store; it defaults to the
    /// store password. PKCS12 keys are decrypted with the store password, as `keytool` writes
    /// them.
    pub key_password: Option<Secret>,
}

impl KeyStoreFile {
    /// The store at `path` of type `store_type`, without passwords (set `password` and
    /// `key_password` as needed).
    pub fn new(path: impl Into<PathBuf>, store_type: KeyStoreType) -> Self {
        KeyStoreFile {
            path: path.into(),
            store_type,
            password: None,
            key_password: None,
        }
    }
}

/// TLS settings, as Java's `ssl.*` keys with PEM, JKS or PKCS12 stores.
///
/// Trust comes from `trusted_certificates` or `trust_store` (not both); the client identity from
/// `client_certificate_chain` + `client_key` or `key_store` (not both).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TlsSettings {
    /// CA certificates to trust. `None` (and no `trust_store`) trusts the system's roots.
    pub trusted_certificates: Option<PemSource>,
    /// A JKS or PKCS12 trust store.
    pub trust_store: Option<KeyStoreFile>,
    /// A JKS or PKCS12 key store holding the client's private key and certificate chain for
    /// mutual TLS.
    pub key_store: Option<KeyStoreFile>,
    /// Client certificate chain for mutual TLS.
    pub client_certificate_chain: Option<PemSource>,
    /// Client private key (PKCS#8, PKCS#1 or SEC1 PEM) for mutual TLS. It may hold a secret, so it
    /// is never printed.
    pub client_key: Option<PemSource>,
    /// Verify that the broker's certificate names the host we connect to. On by default; Java's
    /// `ssl.endpoint.identification.algorithm=` (empty) turns it off.
    pub verify_hostname: bool,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            trusted_certificates: None,
            trust_store: None,
            key_store: None,
            client_certificate_chain: None,
            client_key: None,
            verify_hostname: true,
        }
    }
}

/// A SASL mechanism we can speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SaslMechanism {
    /// `PLAIN` (RFC 4616): the password travels as is, so use it over TLS only.
    Plain,
    /// `SCRAM-SHA-256` (RFC 5802, RFC 7677).
    ScramSha256,
    /// `SCRAM-SHA-512`.
    ScramSha512,
    /// `OAUTHBEARER` (RFC 7628, KIP-255) with a token read from a file or obtained from an
    /// OIDC token endpoint with the client-credentials grant.
    OAuthBearer,
}

impl SaslMechanism {
    /// The mechanism's name on the wire, as the broker lists it in SaslHandshake.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
        }
    }
}

/// SASL credentials.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SaslSettings {
    /// The mechanism.
    pub mechanism: SaslMechanism,
    /// The user name.
    pub username: String,
    /// The password; redacted in `Debug`.
    pub password: Secret,
    /// For `OAUTHBEARER`: the file holding the token (a JWT). It is read at every
    /// authentication, so a rotated file is used by the next connection.
    pub oauthbearer_token_file: Option<PathBuf>,
    /// For `OAUTHBEARER`: get the token from an OIDC token endpoint instead of a file.
    pub oauthbearer_client_credentials: Option<OAuthClientCredentials>,
}

impl SaslSettings {
    /// `mechanism` with a user name and password (PLAIN, SCRAM), no OAUTHBEARER token source.
    ///
    /// ```
    /// use mm2_offsets::config::{SaslMechanism, SaslSettings, Secret};
    ///
    /// let sasl = SaslSettings::new(SaslMechanism::ScramSha512, "alice", Secret::new("s3cret"));
    /// assert!(!format!("{sasl:?}").contains("s3cret"));
    /// ```
    pub fn new(mechanism: SaslMechanism, username: impl Into<String>, password: Secret) -> Self {
        SaslSettings {
            mechanism,
            username: username.into(),
            password,
            oauthbearer_token_file: None,
            oauthbearer_client_credentials: None,
        }
    }
}

/// The OAuth 2 client-credentials grant (RFC 6749 §4.4) that gets `OAUTHBEARER` its token, as
/// Kafka's `OAuthBearerLoginCallbackHandler` does with an `https` (or `http`)
/// `sasl.oauthbearer.token.endpoint.url`.
///
/// The token is cached by the connector and fetched again once 80% of its lifetime (the JWT's
/// `exp`, else the response's `expires_in`) has passed, Java's default
/// `sasl.login.refresh.window.factor`. `Debug` hides the secret.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OAuthClientCredentials {
    /// The token endpoint, `https://host[:port]/path` (or `http://`, for tests and sidecars).
    pub token_endpoint: String,
    /// The client id.
    pub client_id: String,
    /// The client secret.
    pub client_secret: Secret,
    /// The `scope` parameter, if any.
    pub scope: Option<String>,
    /// URL-encode the id and secret in the `Authorization` header (RFC 6749 §2.3.1);
    /// Java's `sasl.oauthbearer.header.urlencode`, off by default.
    pub urlencode_header: bool,
    /// Trust for an `https` endpoint. As in Java, these come from the `ssl.*` options inside
    /// `sasl.jaas.config`, not from the broker connection's `ssl.*` keys; by default the
    /// system's CA certificates are trusted and host names verified.
    pub tls: TlsSettings,
    /// Longest wait for the TCP connection and TLS handshake to the endpoint
    /// (`sasl.login.connect.timeout.ms`). The connection setup deadline bounds it too.
    pub connect_timeout: Duration,
    /// Longest wait for the answer once connected (`sasl.login.read.timeout.ms`). The connection
    /// setup deadline bounds it too.
    pub read_timeout: Duration,
}

impl OAuthClientCredentials {
    /// The grant for `token_endpoint` with `client_id` and `client_secret`, other settings at
    /// their defaults (no scope, no URL-encoding, system CA certificates, 10 s timeouts).
    ///
    /// ```
    /// use mm2_offsets::config::{OAuthClientCredentials, Secret};
    ///
    /// let grant = OAuthClientCredentials::new(
    ///     "https://idp.example.com/oauth2/token",
    ///     "mm2-offsets",
    ///     Secret::new("s3cret"),
    /// );
    /// assert!(!format!("{grant:?}").contains("s3cret"));
    /// ```
    pub fn new(
        token_endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: Secret,
    ) -> Self {
        OAuthClientCredentials {
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            client_secret,
            scope: None,
            urlencode_header: false,
            tls: TlsSettings::default(),
            connect_timeout: DEFAULT_TOKEN_ENDPOINT_TIMEOUT,
            read_timeout: DEFAULT_TOKEN_ENDPOINT_TIMEOUT,
        }
    }
}

/// Default longest wait for the token endpoint, to connect and then for its answer: 10 s.
pub const DEFAULT_TOKEN_ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything a client needs to reach a cluster.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ClientConfig {
    /// `host:port` pairs to bootstrap from.
    pub bootstrap_servers: Vec<String>,
    /// Sent as the request header's client id.
    pub client_id: String,
    /// Plaintext, TLS, SASL or both.
    pub security_protocol: SecurityProtocol,
    /// TLS settings, used when the protocol uses TLS.
    pub tls: TlsSettings,
    /// SASL settings, required when the protocol uses SASL.
    pub sasl: Option<SaslSettings>,
    /// How long one request may wait for its response (`request.timeout.ms`).
    pub request_timeout: Duration,
    /// How long a TCP connect plus TLS and SASL handshakes may take
    /// (`socket.connection.setup.timeout.ms`).
    pub connection_setup_timeout: Duration,
    /// Largest response frame accepted before anything is allocated for it.
    pub max_response_size: usize,
    /// Connections kept per broker, so fetches can run in parallel.
    pub connections_per_broker: usize,
}

/// Default largest response frame: 100 MiB, as Java's `socket.request.max.bytes`.
pub const DEFAULT_MAX_RESPONSE_SIZE: usize = 100 * 1024 * 1024;

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            bootstrap_servers: Vec::new(),
            client_id: "mm2-offsets".to_string(),
            security_protocol: SecurityProtocol::Plaintext,
            tls: TlsSettings::default(),
            sasl: None,
            request_timeout: Duration::from_secs(30),
            connection_setup_timeout: Duration::from_secs(10),
            max_response_size: DEFAULT_MAX_RESPONSE_SIZE,
            connections_per_broker: 4,
        }
    }
}

impl ClientConfig {
    /// A plaintext configuration for the given bootstrap servers, other settings at defaults.
    ///
    /// ```
    /// let config = mm2_offsets::config::ClientConfig::plaintext(["127.0.0.1:9092"]);
    /// assert_eq!(config.bootstrap_servers, vec!["127.0.0.1:9092".to_string()]);
    /// ```
    pub fn plaintext<I, S>(servers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ClientConfig {
            bootstrap_servers: servers.into_iter().map(Into::into).collect(),
            ..ClientConfig::default()
        }
    }
}
