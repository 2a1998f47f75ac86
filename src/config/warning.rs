//! What reading a configuration warns about: keys that are present but have no effect. Never an
//! error, so a file written for Kafka's tools works as is; each warning displays as one line
//! that names keys, never the value of a key that may hold a secret.

use super::SecurityProtocol;
use super::keys::SASL_JAAS_CONFIG;
use super::properties::printable_key;

/// A warning from [`ClientConfig::from_properties`](super::ClientConfig::from_properties).
///
/// ```
/// use mm2_offsets::config::{ClientConfig, ConfigWarning, Properties};
///
/// let props = Properties::parse("bootstrap.servers=b1:9092\nlinger.ms=5\n")?;
/// let (_, warnings) = ClientConfig::from_properties(&props)?;
/// assert_eq!(warnings, [ConfigWarning::UnusedKey { key: "linger.ms".into() }]);
/// assert_eq!(warnings[0].to_string(), "`linger.ms` is not used by mm2-offsets; ignored");
/// # Ok::<(), mm2_offsets::config::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigWarning {
    /// A key mm2-offsets does not read.
    UnusedKey {
        /// The key as written.
        key: String,
    },
    /// A line that is not a setting (no key of a setting's form, or no `=`): its text is never
    /// shown, as it may be a secret (a password file or a PEM key given as a properties file).
    NotASetting,
    /// More unused keys than are named one by one (the first 50 are).
    MoreUnusedKeys {
        /// How many more.
        count: usize,
    },
    /// A Java class other than the default, which cannot be loaded here
    /// (`forwarding.admin.class`).
    JavaClass {
        /// The key.
        key: String,
    },
    /// An `admin.` or `producer.` key that differs from the setting in use: one connection
    /// setting serves every request.
    DiffersFromSettingInUse {
        /// The key as written.
        key: String,
    },
    /// A value that looks like a Java config provider reference (`${provider:path:key}`): not
    /// resolved, used as text.
    ConfigProviderReference {
        /// The key whose value it is.
        key: String,
    },
    /// Keys that are read but have no effect in this configuration.
    Ignored {
        /// The keys as written.
        keys: Vec<String>,
        /// Why they have no effect.
        because: IgnoredBecause,
    },
    /// Options of the `sasl.jaas.config` login module that are not used (not named: in a
    /// mangled entry, an option name may be part of a password).
    JaasOptionsIgnored {
        /// The key the entry came from.
        key: String,
        /// How many options.
        count: usize,
        /// Which options are used, e.g. `username and password`.
        used: &'static str,
    },
    /// `OAuthBearerLoginModule` options in `sasl.jaas.config`, which a token file does not use.
    JaasOptionsUnusedWithTokenFile,
    /// A warning about the token endpoint's TLS options (the `ssl.*` options inside
    /// `sasl.jaas.config`).
    TokenEndpointTls(Box<ConfigWarning>),
}

/// Why present keys have no effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IgnoredBecause {
    /// `security.protocol` does not use TLS (the `ssl.*` keys).
    NoTls(SecurityProtocol),
    /// `security.protocol` does not use SASL (the `sasl.*` keys).
    NoSasl(SecurityProtocol),
    /// OAUTHBEARER authenticates with a token, not a user name and password.
    OAuthBearerUsesAToken,
    /// The OAUTHBEARER token comes from a file, not from a token endpoint.
    TokenFromFile,
    /// A trust store password without a trust store.
    NoTrustStore,
    /// A key store or key password without a key store.
    NoKeyStore,
}

impl std::fmt::Display for IgnoredBecause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IgnoredBecause::NoTls(p) => {
                write!(f, "security.protocol is {p:?}, which does not use TLS")
            }
            IgnoredBecause::NoSasl(p) => {
                write!(f, "security.protocol is {p:?}, which does not use SASL")
            }
            IgnoredBecause::OAuthBearerUsesAToken => f.write_str("OAUTHBEARER uses a token"),
            IgnoredBecause::TokenFromFile => f.write_str("the token comes from a file"),
            IgnoredBecause::NoTrustStore => f.write_str("no trust store is configured"),
            IgnoredBecause::NoKeyStore => f.write_str("no key store is configured"),
        }
    }
}

impl std::fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigWarning::UnusedKey { key } => {
                write!(
                    f,
                    "{} is not used by mm2-offsets; ignored",
                    printable_key(key)
                )?;
                if matches!(key.as_str(), "username" | "password") || key.ends_with("LoginModule") {
                    f.write_str(
                        " (a sasl.jaas.config spread over several lines needs a backslash at the \
                         end of each line but the last)",
                    )?;
                }
                Ok(())
            }
            ConfigWarning::NotASetting => f.write_str(
                "a line that is not a setting (no known key form) is ignored; its text is not \
                 shown, as it may be a secret: is this a properties file?",
            ),
            ConfigWarning::MoreUnusedKeys { count } => {
                write!(f, "{count} more keys are not used by mm2-offsets; ignored")
            }
            ConfigWarning::JavaClass { key } => {
                write!(
                    f,
                    "{} is a Java class and cannot be used; ignored",
                    printable_key(key)
                )
            }
            ConfigWarning::DiffersFromSettingInUse { key } => write!(
                f,
                "{} differs from the setting in use; mm2-offsets uses one connection setting for \
                 every request (the unprefixed or `consumer.` key), so it is ignored",
                printable_key(key)
            ),
            ConfigWarning::ConfigProviderReference { key } => write!(
                f,
                "{} looks like a Java config provider reference (${{provider:path:key}}); \
                 mm2-offsets does not resolve those and uses the text as is",
                printable_key(key)
            ),
            ConfigWarning::Ignored { keys, because } => {
                for (i, key) in keys.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(&printable_key(key))?;
                }
                write!(f, " ignored: {because}")
            }
            ConfigWarning::JaasOptionsIgnored { key, count, used } => write!(
                f,
                "{key}: {count} login module option(s) other than {used} ignored"
            ),
            ConfigWarning::JaasOptionsUnusedWithTokenFile => write!(
                f,
                "{SASL_JAAS_CONFIG}: OAuthBearerLoginModule options are not used with a token file"
            ),
            ConfigWarning::TokenEndpointTls(warning) => {
                write!(
                    f,
                    "{SASL_JAAS_CONFIG} (token endpoint TLS options): {warning}"
                )
            }
        }
    }
}
