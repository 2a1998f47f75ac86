//! The property keys mm2-offsets understands, and how they group.
//!
//! Most are Kafka's client keys (`CommonClientConfigs`, `SslConfigs`, `SaslConfigs`); some are
//! ours ([`SASL_USERNAME`], [`SASL_PASSWORD`] and the `*_FILE` keys) so a password can come from
//! a file or the environment instead of a command line or a JAAS string.

/// `bootstrap.servers`: comma-separated `host:port` pairs.
pub const BOOTSTRAP_SERVERS: &str = "bootstrap.servers";
/// `client.id`.
pub const CLIENT_ID: &str = "client.id";
/// `security.protocol`: `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT` or `SASL_SSL` (any case).
pub const SECURITY_PROTOCOL: &str = "security.protocol";
/// `request.timeout.ms`.
pub const REQUEST_TIMEOUT_MS: &str = "request.timeout.ms";
/// `socket.connection.setup.timeout.ms`.
pub const SOCKET_CONNECTION_SETUP_TIMEOUT_MS: &str = "socket.connection.setup.timeout.ms";

/// `sasl.mechanism`: `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`.
pub const SASL_MECHANISM: &str = "sasl.mechanism";
/// `sasl.jaas.config`: a `PlainLoginModule` or `ScramLoginModule` entry with `username` and
/// `password` options.
pub const SASL_JAAS_CONFIG: &str = "sasl.jaas.config";
/// Ours: the SASL user name; overrides the JAAS `username` option.
pub const SASL_USERNAME: &str = "sasl.username";
/// Ours: the SASL password; overrides the JAAS `password` option. Prefer
/// [`SASL_PASSWORD_FILE`] or the `MM2_OFFSETS_SASL_PASSWORD` environment variable to a command
/// line, where other users of the machine can read it.
pub const SASL_PASSWORD: &str = "sasl.password";
/// Ours: a file whose content (without trailing line breaks) is the SASL password.
pub const SASL_PASSWORD_FILE: &str = "sasl.password.file";

/// `sasl.oauthbearer.token.endpoint.url`: an OIDC token endpoint (`https://`, or `http://`) for
/// the client-credentials grant, or a `file:` URL naming a token file read at every
/// authentication (KIP-768).
pub const SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: &str = "sasl.oauthbearer.token.endpoint.url";
/// Ours: a file holding the `OAUTHBEARER` token, read at every authentication.
pub const SASL_OAUTHBEARER_TOKEN_FILE: &str = "sasl.oauthbearer.token.file";
/// `sasl.oauthbearer.client.credentials.client.id` (KIP-1139): the client id of the
/// client-credentials grant; overrides the JAAS `clientId` option.
pub const SASL_OAUTHBEARER_CLIENT_ID: &str = "sasl.oauthbearer.client.credentials.client.id";
/// `sasl.oauthbearer.client.credentials.client.secret` (KIP-1139): the client secret; overrides
/// the JAAS `clientSecret` option. Prefer [`SASL_OAUTHBEARER_CLIENT_SECRET_FILE`].
pub const SASL_OAUTHBEARER_CLIENT_SECRET: &str =
    "sasl.oauthbearer.client.credentials.client.secret";
/// Ours: a file whose content (without trailing line breaks) is the client secret.
pub const SASL_OAUTHBEARER_CLIENT_SECRET_FILE: &str =
    "sasl.oauthbearer.client.credentials.client.secret.file";
/// `sasl.oauthbearer.scope` (KIP-1139): the grant's `scope`; overrides the JAAS `scope` option.
pub const SASL_OAUTHBEARER_SCOPE: &str = "sasl.oauthbearer.scope";
/// `sasl.oauthbearer.header.urlencode`: `true` to URL-encode the client id and secret in the
/// `Authorization` header (RFC 6749 §2.3.1); `false` by default, as in Java.
pub const SASL_OAUTHBEARER_HEADER_URLENCODE: &str = "sasl.oauthbearer.header.urlencode";
/// `sasl.login.callback.handler.class`: Java users set Kafka's `OAuthBearerLoginCallbackHandler`
/// for a token endpoint; any other class is refused.
pub const SASL_LOGIN_CALLBACK_HANDLER_CLASS: &str = "sasl.login.callback.handler.class";
/// `sasl.login.connect.timeout.ms`: longest wait to connect to the token endpoint.
pub const SASL_LOGIN_CONNECT_TIMEOUT_MS: &str = "sasl.login.connect.timeout.ms";
/// `sasl.login.read.timeout.ms`: longest wait for the token endpoint's answer.
pub const SASL_LOGIN_READ_TIMEOUT_MS: &str = "sasl.login.read.timeout.ms";

/// `ssl.truststore.type`: `PEM`, `JKS` (Java's default) or `PKCS12` (PKCS12 content needs the
/// crate feature `pkcs12`, on by default).
pub const SSL_TRUSTSTORE_TYPE: &str = "ssl.truststore.type";
/// `ssl.truststore.location`: a PEM file of CA certificates, or a JKS or PKCS12 store.
pub const SSL_TRUSTSTORE_LOCATION: &str = "ssl.truststore.location";
/// `ssl.truststore.certificates`: CA certificates as inline PEM.
pub const SSL_TRUSTSTORE_CERTIFICATES: &str = "ssl.truststore.certificates";
/// `ssl.truststore.password`: the JKS or PKCS12 trust store's password (not used with PEM).
pub const SSL_TRUSTSTORE_PASSWORD: &str = "ssl.truststore.password";
/// Ours: a file whose content (without trailing line breaks) is `ssl.truststore.password`.
pub const SSL_TRUSTSTORE_PASSWORD_FILE: &str = "ssl.truststore.password.file";
/// `ssl.keystore.type`: `PEM`, `JKS` (Java's default) or `PKCS12` (PKCS12 content needs the
/// crate feature `pkcs12`, on by default).
pub const SSL_KEYSTORE_TYPE: &str = "ssl.keystore.type";
/// `ssl.keystore.location`: one PEM file holding the private key and the certificate chain, or
/// a JKS or PKCS12 store with one private key entry.
pub const SSL_KEYSTORE_LOCATION: &str = "ssl.keystore.location";
/// `ssl.keystore.certificate.chain`: the client certificate chain as inline PEM.
pub const SSL_KEYSTORE_CERTIFICATE_CHAIN: &str = "ssl.keystore.certificate.chain";
/// `ssl.keystore.key`: the client private key as inline PEM.
pub const SSL_KEYSTORE_KEY: &str = "ssl.keystore.key";
/// `ssl.keystore.password`: the JKS or PKCS12 key store's password (not used with PEM).
pub const SSL_KEYSTORE_PASSWORD: &str = "ssl.keystore.password";
/// Ours: a file whose content (without trailing line breaks) is `ssl.keystore.password`.
pub const SSL_KEYSTORE_PASSWORD_FILE: &str = "ssl.keystore.password.file";
/// `ssl.key.password`: the password of the private key in a JKS key store (defaults to the
/// store password). Encrypted PEM keys are not supported.
pub const SSL_KEY_PASSWORD: &str = "ssl.key.password";
/// Ours: a file whose content (without trailing line breaks) is `ssl.key.password`.
pub const SSL_KEY_PASSWORD_FILE: &str = "ssl.key.password.file";
/// `ssl.endpoint.identification.algorithm`: `https` (the default) or empty to skip host name
/// verification.
pub const SSL_ENDPOINT_IDENTIFICATION_ALGORITHM: &str = "ssl.endpoint.identification.algorithm";

/// `forwarding.admin.class` (a `MirrorClientConfig` key; only Kafka's default is honoured).
pub const FORWARDING_ADMIN_CLASS: &str = "forwarding.admin.class";
/// The default `forwarding.admin.class`.
pub const DEFAULT_FORWARDING_ADMIN_CLASS: &str = "org.apache.kafka.clients.admin.ForwardingAdmin";

/// Every key [`ClientConfig::from_properties`](super::ClientConfig::from_properties) reads.
pub const CLIENT_KEYS: &[&str] = &[
    BOOTSTRAP_SERVERS,
    CLIENT_ID,
    SECURITY_PROTOCOL,
    REQUEST_TIMEOUT_MS,
    SOCKET_CONNECTION_SETUP_TIMEOUT_MS,
    SASL_MECHANISM,
    SASL_JAAS_CONFIG,
    SASL_USERNAME,
    SASL_PASSWORD,
    SASL_PASSWORD_FILE,
    SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL,
    SASL_OAUTHBEARER_TOKEN_FILE,
    SASL_OAUTHBEARER_CLIENT_ID,
    SASL_OAUTHBEARER_CLIENT_SECRET,
    SASL_OAUTHBEARER_CLIENT_SECRET_FILE,
    SASL_OAUTHBEARER_SCOPE,
    SASL_OAUTHBEARER_HEADER_URLENCODE,
    SASL_LOGIN_CALLBACK_HANDLER_CLASS,
    SASL_LOGIN_CONNECT_TIMEOUT_MS,
    SASL_LOGIN_READ_TIMEOUT_MS,
    SSL_TRUSTSTORE_TYPE,
    SSL_TRUSTSTORE_LOCATION,
    SSL_TRUSTSTORE_CERTIFICATES,
    SSL_TRUSTSTORE_PASSWORD,
    SSL_TRUSTSTORE_PASSWORD_FILE,
    SSL_KEYSTORE_TYPE,
    SSL_KEYSTORE_LOCATION,
    SSL_KEYSTORE_CERTIFICATE_CHAIN,
    SSL_KEYSTORE_KEY,
    SSL_KEYSTORE_PASSWORD,
    SSL_KEYSTORE_PASSWORD_FILE,
    SSL_KEY_PASSWORD,
    SSL_KEY_PASSWORD_FILE,
    SSL_ENDPOINT_IDENTIFICATION_ALGORITHM,
];

/// `replication.policy.class`, the replication policy's Java class.
pub const CLASS_CONFIG: &str = "replication.policy.class";
/// `replication.policy.separator`.
pub const SEPARATOR_CONFIG: &str = "replication.policy.separator";
/// `replication.policy.internal.topic.separator.enabled` (KIP-949).
pub const INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG: &str =
    "replication.policy.internal.topic.separator.enabled";
/// `source.cluster.alias`, read by the Identity policy.
pub const SOURCE_CLUSTER_ALIAS_CONFIG: &str = "source.cluster.alias";

/// `MirrorClientConfig` keys that are not client settings: the replication policy's and the
/// forwarding admin's. They never draw a warning.
pub const MIRROR_CLIENT_KEYS: &[&str] = &[
    CLASS_CONFIG,
    SEPARATOR_CONFIG,
    INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG,
    SOURCE_CLUSTER_ALIAS_CONFIG,
    FORWARDING_ADMIN_CLASS,
];

/// The prefix whose keys override unprefixed ones for our connection, as `MirrorClientConfig`
/// builds its consumer's settings.
pub const CONSUMER_PREFIX: &str = "consumer.";
/// `MirrorClientConfig`'s other client prefixes. mm2-offsets uses one connection setting for
/// every request, so these are accepted but not used.
pub const OTHER_CLIENT_PREFIXES: &[&str] = &["admin.", "producer."];

/// Whether `key` is a connection setting in `MirrorClientConfig`'s sense (its `CLIENT_CONFIG_DEF`:
/// `bootstrap.servers`, `security.protocol`, `ssl.*`, `sasl.*`), the keys it passes to its
/// clients and MirrorMaker copies to each cluster's clients.
pub fn is_connection_key(key: &str) -> bool {
    key == BOOTSTRAP_SERVERS
        || key == SECURITY_PROTOCOL
        || key.starts_with("ssl.")
        || key.starts_with("sasl.")
}

/// Settings that are alternatives to each other: setting one in a higher layer (see
/// [`layered`](super::layered)) drops the others from the lower layers.
pub(crate) const ALTERNATIVES: &[&[&[&str]]] = &[
    &[&[SASL_PASSWORD], &[SASL_PASSWORD_FILE]],
    &[
        &[SASL_OAUTHBEARER_CLIENT_SECRET],
        &[SASL_OAUTHBEARER_CLIENT_SECRET_FILE],
    ],
    &[
        &[SASL_OAUTHBEARER_TOKEN_FILE],
        &[SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL],
    ],
    &[&[SSL_TRUSTSTORE_PASSWORD], &[SSL_TRUSTSTORE_PASSWORD_FILE]],
    &[&[SSL_KEYSTORE_PASSWORD], &[SSL_KEYSTORE_PASSWORD_FILE]],
    &[&[SSL_KEY_PASSWORD], &[SSL_KEY_PASSWORD_FILE]],
    &[&[SSL_TRUSTSTORE_LOCATION], &[SSL_TRUSTSTORE_CERTIFICATES]],
    &[
        &[SSL_KEYSTORE_LOCATION],
        &[SSL_KEYSTORE_KEY, SSL_KEYSTORE_CERTIFICATE_CHAIN],
    ],
];

/// The keys whose values are secrets, besides every key [`is_secret`] recognises by its form.
/// The one list the command line's `-X` check, the configuration's messages and the docs use.
pub const SECRET_KEYS: &[&str] = &[
    SASL_PASSWORD,
    SASL_JAAS_CONFIG,
    SASL_OAUTHBEARER_CLIENT_SECRET,
    "ssl.key.password",
    SSL_KEYSTORE_PASSWORD,
    SSL_TRUSTSTORE_PASSWORD,
    SSL_KEYSTORE_KEY,
];

/// Whether the value of `key` is a secret: a key of [`SECRET_KEYS`], or any key (with or
/// without a `consumer.`, `admin.` or `producer.` prefix) that ends in `.password`, `.secret`
/// or `.key` (key material), or is a JAAS `password` / `clientSecret` option.
pub fn is_secret(key: &str) -> bool {
    let key = key.trim();
    let plain = ["consumer.", "admin.", "producer."]
        .iter()
        .find_map(|p| key.strip_prefix(p))
        .unwrap_or(key);
    let lower = plain.to_ascii_lowercase();
    SECRET_KEYS.contains(&lower.as_str())
        || lower.ends_with(".password")
        || lower.ends_with(".secret")
        || lower.ends_with(".key")
        || lower.ends_with(".jaas.config")
        || matches!(lower.as_str(), "password" | "clientsecret")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_form_is_recognised() {
        for key in [
            "sasl.password",
            "consumer.sasl.password",
            "sasl.oauthbearer.client.credentials.client.secret",
            "ssl.keystore.password",
            "ssl.truststore.password",
            "ssl.key.password",
            "ssl.keystore.key",
            "sasl.jaas.config",
            "admin.sasl.jaas.config",
            "listener.name.x.scram.password",
            "some.vendor.secret",
        ] {
            assert!(is_secret(key), "{key}");
        }
        for key in [
            "bootstrap.servers",
            "sasl.password.file",
            "ssl.keystore.location",
            "sasl.oauthbearer.client.credentials.client.secret.file",
            "ssl.keystore.certificate.chain",
        ] {
            assert!(!is_secret(key), "{key}");
        }
    }
}
