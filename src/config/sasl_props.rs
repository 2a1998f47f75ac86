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

use super::client_props::Settings;
use super::keys::*;
use super::secret::read_secret_file;
use super::{ConfigError, SaslMechanism, SaslSettings, Secret, SecurityProtocol, jaas};

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
        s.ignore_family(
            "sasl.",
            &format!("security.protocol is {protocol:?}, which does not use SASL"),
        );
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
            s.warn(format!(
                "{}: {ignored} login module option(s) other than username and password ignored",
                setting.key
            ));
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

/// `OAUTHBEARER` with a token file: our `sasl.oauthbearer.token.file`, or Java's
/// `sasl.oauthbearer.token.endpoint.url` with a `file:` URL (KIP-768). An OIDC token endpoint
/// (http/https) is not supported yet. A `sasl.jaas.config`, if given, must name
/// `OAuthBearerLoginModule`; its options are not used.
fn oauthbearer(s: &mut Settings<'_>) -> Result<SaslSettings, ConfigError> {
    if let Some(setting) = s.get(SASL_JAAS_CONFIG) {
        let entry = jaas::parse(setting.value)
            .map_err(|reason| ConfigError::invalid(setting.key, reason))?;
        check_login_module(setting.key, &entry.login_module, SaslMechanism::OAuthBearer)?;
        if !entry.options.is_empty() {
            s.warn(format!(
                "{}: OAuthBearerLoginModule options are not used; the token comes from \
                 sasl.oauthbearer.token.file or a file: sasl.oauthbearer.token.endpoint.url",
                setting.key
            ));
        }
    }
    for key in [SASL_USERNAME, SASL_PASSWORD, SASL_PASSWORD_FILE] {
        if let Some(setting) = s.get(key) {
            s.warn(format!("{} ignored: OAUTHBEARER uses a token", setting.key));
        }
    }
    let path = match (
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
        (Some(file), None) => file.value.trim().to_string(),
        (None, Some(url)) => match url.value.trim().strip_prefix("file://") {
            Some(path) if path.starts_with('/') => path.to_string(),
            _ => {
                return Err(ConfigError::unsupported(
                    url.key,
                    "only a file:///absolute/path URL naming a token file is supported; the \
                     OIDC client-credentials grant (an http or https token endpoint) is not \
                     supported yet",
                ));
            }
        },
        (None, None) => {
            return Err(ConfigError::Missing {
                key: SASL_OAUTHBEARER_TOKEN_FILE.into(),
                hint: "OAUTHBEARER needs a token: set sasl.oauthbearer.token.file, or \
                       sasl.oauthbearer.token.endpoint.url=file:///path/to/token"
                    .into(),
            });
        }
    };
    Ok(SaslSettings {
        mechanism: SaslMechanism::OAuthBearer,
        username: String::new(),
        password: Secret::new(""),
        oauthbearer_token_file: Some(path.into()),
    })
}
