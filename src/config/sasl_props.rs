//! The `sasl.*` keys: mechanism and credentials.
//!
//! Credentials come from `sasl.jaas.config`, as for Kafka's tools, and can be overridden by our
//! own keys: `sasl.username`, and `sasl.password` or `sasl.password.file` (the file's content
//! without trailing line breaks). These keys let a password come from a file or from the
//! `MM2_OFFSETS_SASL_PASSWORD` environment variable instead of a command line.
//!
//! Java's `sasl.mechanism` defaults to GSSAPI (Kerberos), which we do not speak, so the mechanism
//! must be given.
//!
//! # References
//! - RFC 4616 (PLAIN), RFC 5802 and RFC 7677 (SCRAM)
//! - KIP-85 (`sasl.jaas.config`): <https://cwiki.apache.org/confluence/display/KAFKA/KIP-85%3A+Dynamic+JAAS+configuration+for+Kafka+clients>

use super::keys::*;
use super::secret::read_secret_file;
use super::settings::{Settings, parse_millis};
use super::token_endpoint::TokenEndpoint;
use super::{
    ConfigError, ConfigWarning, IgnoredBecause, OAuthClientCredentials, Properties, SaslMechanism,
    SaslSettings, Secret, SecurityProtocol, TlsSettings, jaas,
};

const PLAIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
const OAUTHBEARER_MODULE: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

const CREDENTIALS_HINT: &str = "set sasl.jaas.config as for Kafka's tools, or sasl.username with \
     sasl.password.file (or the MM2_OFFSETS_SASL_PASSWORD environment variable)";

/// Reads the SASL settings: `None` when the protocol does not use SASL (then `sasl.*` keys only
/// draw a warning).
pub(crate) fn read(
    s: &mut Settings<'_>,
    protocol: SecurityProtocol,
) -> Result<Option<SaslSettings>, ConfigError> {
    if !protocol.uses_sasl() {
        s.ignore_family("sasl.", IgnoredBecause::NoSasl(protocol));
        return Ok(None);
    }
    let mechanism = mechanism(s)?;
    if mechanism == SaslMechanism::OAuthBearer {
        return oauthbearer(s).map(Some);
    }
    let (mut username, mut password) = (None, None);
    if let Some(setting) = s.get(SASL_JAAS_CONFIG) {
        let entry = jaas::parse(setting.value)
            .map_err(|reason| ConfigError::invalid(setting.key, reason))?;
        check_login_module(setting.key, &entry.login_module, mechanism)?;
        let mut ignored = 0;
        for (option, value) in &entry.options {
            match option.as_str() {
                "username" | "password" => {}
                "tokenauth" if value.expose().eq_ignore_ascii_case("true") => {
                    return Err(ConfigError::unsupported(
                        setting.key,
                        "delegation-token authentication (tokenauth=true) is not supported",
                    ));
                }
                _ => ignored += 1,
            }
        }
        if ignored > 0 {
            // Not named: in a mangled entry an option name may be part of a password.
            s.warn(ConfigWarning::JaasOptionsIgnored {
                key: setting.key.to_string(),
                count: ignored,
                used: "username and password",
            });
        }
        username = entry.option("username").map(|u| u.expose().to_string());
        password = entry.option("password").cloned();
    }
    if let Some(setting) = s.get(SASL_USERNAME) {
        username = Some(setting.value.to_string());
    }
    match (s.get(SASL_PASSWORD), s.get(SASL_PASSWORD_FILE)) {
        (Some(p), Some(f)) => {
            return Err(ConfigError::conflict(
                p.key,
                f.key,
                "give the password one way only (sasl.password.file is the safer)",
            ));
        }
        (Some(p), None) => password = Some(Secret::new(p.value)),
        (None, Some(f)) => password = Some(read_secret_file(f.value.trim())?),
        (None, None) => {}
    }
    let username = username.ok_or_else(|| ConfigError::Missing {
        key: "SASL user name".into(),
        hint: CREDENTIALS_HINT.into(),
    })?;
    let password = password.ok_or_else(|| ConfigError::Missing {
        key: "SASL password".into(),
        hint: CREDENTIALS_HINT.into(),
    })?;
    Ok(Some(SaslSettings {
        mechanism,
        username,
        password,
        oauthbearer_token_file: None,
        oauthbearer_client_credentials: None,
    }))
}

fn mechanism(s: &mut Settings<'_>) -> Result<SaslMechanism, ConfigError> {
    let Some(setting) = s.get(SASL_MECHANISM) else {
        return Err(ConfigError::Missing {
            key: SASL_MECHANISM.into(),
            hint: "Java's default, GSSAPI (Kerberos), is not supported; set PLAIN, \
                   SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
                .into(),
        });
    };
    let value = setting.value.trim();
    [
        SaslMechanism::Plain,
        SaslMechanism::ScramSha256,
        SaslMechanism::ScramSha512,
        SaslMechanism::OAuthBearer,
    ]
    .into_iter()
    .find(|m| value.eq_ignore_ascii_case(m.name()))
    .ok_or_else(|| {
        ConfigError::unsupported(
            setting.key,
            format!(
                "{} is not supported; use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER",
                setting.shown()
            ),
        )
    })
}

fn check_login_module(
    key: &str,
    module: &str,
    mechanism: SaslMechanism,
) -> Result<(), ConfigError> {
    let expected = match mechanism {
        SaslMechanism::Plain => PLAIN_MODULE,
        SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => SCRAM_MODULE,
        SaslMechanism::OAuthBearer => OAUTHBEARER_MODULE,
    };
    if module == expected {
        return Ok(());
    }
    let reason = if [PLAIN_MODULE, SCRAM_MODULE, OAUTHBEARER_MODULE].contains(&module) {
        format!(
            "{module} does not go with sasl.mechanism={}; use {expected}",
            mechanism.name()
        )
    } else {
        // Name the class only if it looks like one: a mangled value may put a password here.
        let looks_like_class = module.ends_with("LoginModule")
            && module
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '$'));
        let named = if looks_like_class {
            format!("login module {module}")
        } else {
            "the login module".to_string()
        };
        format!(
            "{named} is not supported; use {PLAIN_MODULE} (PLAIN) or {SCRAM_MODULE} \
             (SCRAM-SHA-256/512)"
        )
    };
    Err(ConfigError::unsupported(key, reason))
}

/// `OAUTHBEARER`: a token file (our `sasl.oauthbearer.token.file`, or Java's
/// `sasl.oauthbearer.token.endpoint.url` with a `file:` URL, KIP-768), or the client-credentials
/// grant against an `https`/`http` token endpoint, configured as Java's
/// `OAuthBearerLoginCallbackHandler` and `ClientCredentialsJwtRetriever` read it: the client id,
/// secret and scope from the KIP-1139 keys or else the JAAS options `clientId`, `clientSecret`
/// and `scope`; trust for the endpoint from the `ssl.*` JAAS options.
fn oauthbearer(s: &mut Settings<'_>) -> Result<SaslSettings, ConfigError> {
    let mut jaas_entry = None;
    if let Some(setting) = s.get(SASL_JAAS_CONFIG) {
        let entry = jaas::parse(setting.value)
            .map_err(|reason| ConfigError::invalid(setting.key, reason))?;
        check_login_module(setting.key, &entry.login_module, SaslMechanism::OAuthBearer)?;
        jaas_entry = Some(entry);
    }
    for key in [SASL_USERNAME, SASL_PASSWORD, SASL_PASSWORD_FILE] {
        if let Some(setting) = s.get(key) {
            s.ignore(setting.key, IgnoredBecause::OAuthBearerUsesAToken);
        }
    }
    if let Some(handler) = s.get(SASL_LOGIN_CALLBACK_HANDLER_CLASS) {
        let class = handler.value.trim();
        if !LOGIN_CALLBACK_HANDLERS.contains(&class) {
            return Err(ConfigError::unsupported(
                handler.key,
                "only Kafka's OAuthBearerLoginCallbackHandler is supported (a token endpoint or \
                 token file); remove the key or set it to \
                 org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
            ));
        }
    }
    let source = match (
        s.get(SASL_OAUTHBEARER_TOKEN_FILE),
        s.get(SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL),
    ) {
        (Some(f), Some(u)) => {
            return Err(ConfigError::conflict(
                f.key,
                u.key,
                "give the token file one way only",
            ));
        }
        (Some(file), None) => TokenSource::File(file.value.trim().to_string()),
        (None, Some(url)) => {
            let value = url.value.trim();
            if let Some(path) = value.strip_prefix("file://") {
                if !path.starts_with('/') {
                    return Err(ConfigError::invalid(
                        url.key,
                        "a file: URL must name an absolute path, as file:///path/to/token",
                    ));
                }
                TokenSource::File(path.to_string())
            } else if has_scheme(value, "https") || has_scheme(value, "http") {
                TokenEndpoint::parse(value)
                    .map_err(|reason| ConfigError::invalid(url.key, reason))?;
                TokenSource::Endpoint(value.to_string())
            } else {
                return Err(ConfigError::invalid(
                    url.key,
                    "must be an https:// (or http://) token endpoint, or a file:///path naming \
                     a token file",
                ));
            }
        }
        (None, None) => {
            return Err(ConfigError::Missing {
                key: SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL.into(),
                hint: "OAUTHBEARER needs a token: set sasl.oauthbearer.token.endpoint.url to the \
                       OIDC token endpoint (with the client id and secret), or to \
                       file:///path/to/token, or set sasl.oauthbearer.token.file"
                    .into(),
            });
        }
    };
    let mut settings = SaslSettings {
        mechanism: SaslMechanism::OAuthBearer,
        username: String::new(),
        password: Secret::new(""),
        oauthbearer_token_file: None,
        oauthbearer_client_credentials: None,
    };
    match source {
        TokenSource::File(path) => {
            if let Some(entry) = &jaas_entry
                && !entry.options.is_empty()
            {
                s.warn(ConfigWarning::JaasOptionsUnusedWithTokenFile);
            }
            for key in CLIENT_CREDENTIALS_KEYS {
                if let Some(setting) = s.get(key) {
                    s.ignore(setting.key, IgnoredBecause::TokenFromFile);
                }
            }
            settings.oauthbearer_token_file = Some(path.into());
        }
        TokenSource::Endpoint(url) => {
            settings.oauthbearer_client_credentials =
                Some(client_credentials(s, url, jaas_entry.as_ref())?);
        }
    }
    Ok(settings)
}

/// Kafka's login callback handler for secured OAUTHBEARER, under its 3.x and 4.x names.
const LOGIN_CALLBACK_HANDLERS: &[&str] = &[
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
];

/// The keys that only matter for the client-credentials grant.
const CLIENT_CREDENTIALS_KEYS: [&str; 7] = [
    SASL_OAUTHBEARER_CLIENT_ID,
    SASL_OAUTHBEARER_CLIENT_SECRET,
    SASL_OAUTHBEARER_CLIENT_SECRET_FILE,
    SASL_OAUTHBEARER_SCOPE,
    SASL_OAUTHBEARER_HEADER_URLENCODE,
    SASL_LOGIN_CONNECT_TIMEOUT_MS,
    SASL_LOGIN_READ_TIMEOUT_MS,
];

enum TokenSource {
    File(String),
    Endpoint(String),
}

fn has_scheme(url: &str, scheme: &str) -> bool {
    url.len() > scheme.len() + 3
        && url[..scheme.len()].eq_ignore_ascii_case(scheme)
        && url[scheme.len()..].starts_with("://")
}

const CLIENT_SECRET_HINT: &str = "set sasl.oauthbearer.client.credentials.client.secret.file (or \
     the MM2_OFFSETS_SASL_OAUTHBEARER_CLIENT_CREDENTIALS_CLIENT_SECRET environment variable), or \
     the clientSecret option of sasl.jaas.config as for Kafka's tools";

/// The grant's settings: KIP-1139 keys first, then the JAAS options, as Java's
/// `ClientCredentialsJwtRetriever.configOrJaas`.
fn client_credentials(
    s: &mut Settings<'_>,
    token_endpoint: String,
    jaas: Option<&jaas::JaasEntry>,
) -> Result<OAuthClientCredentials, ConfigError> {
    let jaas_option = |name: &str| jaas.and_then(|entry| entry.option(name));
    let client_id = match s.get(SASL_OAUTHBEARER_CLIENT_ID) {
        Some(setting) => setting.value.trim().to_string(),
        None => jaas_option("clientId")
            .map(|id| id.expose().trim().to_string())
            .unwrap_or_default(),
    };
    if client_id.is_empty() {
        return Err(ConfigError::Missing {
            key: SASL_OAUTHBEARER_CLIENT_ID.into(),
            hint: "the token endpoint needs the client id: set this key, or the clientId \
                   option of sasl.jaas.config as for Kafka's tools"
                .into(),
        });
    }
    let client_secret = match (
        s.get(SASL_OAUTHBEARER_CLIENT_SECRET),
        s.get(SASL_OAUTHBEARER_CLIENT_SECRET_FILE),
    ) {
        (Some(p), Some(f)) => {
            return Err(ConfigError::conflict(
                p.key,
                f.key,
                "give the client secret one way only (the file is the safer)",
            ));
        }
        (Some(p), None) => Some(Secret::new(p.value)),
        (None, Some(f)) => Some(read_secret_file(f.value.trim())?),
        (None, None) => jaas_option("clientSecret").cloned(),
    }
    .filter(|secret| !secret.expose().trim().is_empty())
    .ok_or_else(|| ConfigError::Missing {
        key: SASL_OAUTHBEARER_CLIENT_SECRET.into(),
        hint: CLIENT_SECRET_HINT.into(),
    })?;
    let scope = match s.get(SASL_OAUTHBEARER_SCOPE) {
        Some(setting) => Some(setting.value.to_string()),
        None => jaas_option("scope").map(|scope| scope.expose().to_string()),
    }
    .filter(|scope| !scope.trim().is_empty());
    let mut grant = OAuthClientCredentials::new(token_endpoint, client_id, client_secret);
    grant.scope = scope;
    if let Some(setting) = s.get(SASL_OAUTHBEARER_HEADER_URLENCODE) {
        grant.urlencode_header = match setting.value.trim() {
            v if v.eq_ignore_ascii_case("true") => true,
            v if v.eq_ignore_ascii_case("false") => false,
            _ => {
                return Err(ConfigError::invalid(
                    setting.key,
                    format!("{} is not true or false", setting.shown()),
                ));
            }
        };
    }
    if let Some(setting) = s.get(SASL_LOGIN_CONNECT_TIMEOUT_MS) {
        grant.connect_timeout = parse_millis(setting)?;
    }
    if let Some(setting) = s.get(SASL_LOGIN_READ_TIMEOUT_MS) {
        grant.read_timeout = parse_millis(setting)?;
    }
    if let Some(entry) = jaas {
        grant.tls = endpoint_trust(s, entry)?;
    }
    Ok(grant)
}

/// Trust for the token endpoint from the `ssl.*` options inside `sasl.jaas.config`: Java's
/// `OAuthBearerUtils.getSslClientConfig` reads them there, with the client `ssl.*` rules (and
/// without them trusts the JVM's default CA certificates; we trust the system's). Other options
/// draw one warning that counts them without naming them (one may be a misplaced secret).
fn endpoint_trust(
    s: &mut Settings<'_>,
    entry: &jaas::JaasEntry,
) -> Result<TlsSettings, ConfigError> {
    let mut ssl_options = Properties::new();
    let mut ignored = 0;
    for (name, value) in &entry.options {
        match name.as_str() {
            "clientId" | "clientSecret" | "scope" => {}
            name if name.starts_with("ssl.") => {
                ssl_options.set(name, value.expose());
            }
            _ => ignored += 1,
        }
    }
    if ignored > 0 {
        s.warn(ConfigWarning::JaasOptionsIgnored {
            key: SASL_JAAS_CONFIG.to_string(),
            count: ignored,
            used: "clientId, clientSecret, scope and ssl.*",
        });
    }
    if ssl_options.keys().next().is_none() {
        return Ok(TlsSettings::default());
    }
    let mut options = Settings::new(&ssl_options);
    let tls = super::tls_props::read(&mut options, SecurityProtocol::Ssl).map_err(|e| {
        ConfigError::invalid(
            SASL_JAAS_CONFIG,
            format!("the token endpoint's TLS options: {e}"),
        )
    })?;
    for warning in options.finish() {
        s.warn(ConfigWarning::TokenEndpointTls(Box::new(warning)));
    }
    Ok(tls)
}
