//! Layering settings: the properties file, then command-line flags, then environment variables,
//! each overriding the one before.
//!
//! Environment variables are named `MM2_OFFSETS_` plus the key in upper case with `.` and `-`
//! turned into `_`: `MM2_OFFSETS_BOOTSTRAP_SERVERS`, `MM2_OFFSETS_SASL_PASSWORD`,
//! `MM2_OFFSETS_SASL_PASSWORD_FILE`. Only the keys in [`ENV_KEYS`] are taken from the environment,
//! so other `MM2_OFFSETS_*` variables (say, ones the command line reads itself) are left alone.
//!
//! A key set in a higher layer replaces it in the lower layers in both its plain and its
//! `consumer.` form (otherwise a file's `consumer.bootstrap.servers` would beat a
//! `--bootstrap-server` flag). It also drops the lower layers' *alternatives* to it, so a password
//! from the environment replaces a `sasl.password.file` from the file instead of clashing with it;
//! likewise `ssl.truststore.location` and `ssl.truststore.certificates`, and
//! `ssl.keystore.location` and the inline `ssl.keystore.key` + `ssl.keystore.certificate.chain`.
//!
//! ```
//! use mm2_offsets::config::{layered, Properties};
//!
//! let file = Properties::parse(
//!     "bootstrap.servers=file:9092\nconsumer.client.id=from-file\nsasl.password.file=/run/pw",
//! )?;
//! let cli: Properties = [("client.id", "from-cli")].into_iter().collect();
//! let env = [
//!     ("MM2_OFFSETS_SASL_PASSWORD".to_string(), "from-env".to_string()),
//!     ("HOME".to_string(), "/root".to_string()),
//! ];
//! let props = layered(file, cli, env);
//! assert_eq!(props.get("bootstrap.servers"), Some("file:9092"));
//! assert_eq!(props.get("client.id"), Some("from-cli"));
//! assert_eq!(props.get("consumer.client.id"), None);
//! assert_eq!(props.get("sasl.password"), Some("from-env"));
//! assert_eq!(props.get("sasl.password.file"), None);
//! # Ok::<(), mm2_offsets::config::ConfigError>(())
//! ```

use super::Properties;
use super::keys::{ALTERNATIVES, CLIENT_KEYS, CONSUMER_PREFIX, MIRROR_CLIENT_KEYS};

/// The prefix of the environment variables that set properties.
pub const ENV_PREFIX: &str = "MM2_OFFSETS_";

/// The keys that can be set from the environment: every client key (see
/// [`ClientConfig::from_properties`](super::ClientConfig::from_properties)) and the replication
/// policy's.
pub const ENV_KEYS: &[&[&str]] = &[CLIENT_KEYS, MIRROR_CLIENT_KEYS];

/// The environment variable for `key`: `MM2_OFFSETS_` + the key in upper case, `.` and `-` as
/// `_`.
///
/// ```
/// assert_eq!(
///     mm2_offsets::config::env_var_name("sasl.password.file"),
///     "MM2_OFFSETS_SASL_PASSWORD_FILE"
/// );
/// ```
pub fn env_var_name(key: &str) -> String {
    let mut name = String::from(ENV_PREFIX);
    name.extend(key.chars().map(|c| match c {
        '.' | '-' => '_',
        c => c.to_ascii_uppercase(),
    }));
    name
}

/// The properties set by `MM2_OFFSETS_*` variables for the keys in [`ENV_KEYS`]; other variables
/// are ignored.
pub fn env_properties<I, K, V>(vars: I) -> Properties
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: Into<String>,
{
    let mut props = Properties::new();
    for (name, value) in vars {
        let name = name.as_ref();
        if !name.starts_with(ENV_PREFIX) {
            continue;
        }
        let key = ENV_KEYS
            .iter()
            .flat_map(|keys| keys.iter())
            .find(|key| env_var_name(key) == name);
        if let Some(key) = key {
            props.set(*key, value);
        }
    }
    props
}

/// `file`, overridden by `cli`, overridden by the `MM2_OFFSETS_*` variables among `env` (pass
/// `std::env::vars()`).
pub fn layered<I, K, V>(file: Properties, cli: Properties, env: I) -> Properties
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: Into<String>,
{
    let mut props = file;
    overlay(&mut props, &cli);
    overlay(&mut props, &env_properties(env));
    props
}

/// Applies `top` over `base`, first removing from `base` what each key of `top` shadows.
pub fn overlay(base: &mut Properties, top: &Properties) {
    for key in top.keys() {
        let plain = key.strip_prefix(CONSUMER_PREFIX).unwrap_or(key);
        let mut shadowed = vec![plain];
        shadowed.extend(alternatives_to(plain));
        for shadowed in shadowed {
            base.remove(shadowed);
            base.remove(&format!("{CONSUMER_PREFIX}{shadowed}"));
        }
    }
    for (key, value) in top.iter() {
        base.set(key, value);
    }
}

/// The keys that are alternatives to `key` (see [`ALTERNATIVES`]).
fn alternatives_to(key: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    for group in ALTERNATIVES {
        if group.iter().any(|choice| choice.contains(&key)) {
            for choice in group.iter().filter(|choice| !choice.contains(&key)) {
                out.extend_from_slice(choice);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Properties {
        pairs.iter().copied().collect()
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn env_names() {
        assert_eq!(
            env_var_name("bootstrap.servers"),
            "MM2_OFFSETS_BOOTSTRAP_SERVERS"
        );
        assert_eq!(
            env_var_name("replication.policy.internal.topic.separator.enabled"),
            "MM2_OFFSETS_REPLICATION_POLICY_INTERNAL_TOPIC_SEPARATOR_ENABLED"
        );
        // Every env-settable key maps back to itself and to no other.
        let all: Vec<&str> = ENV_KEYS.iter().flat_map(|k| k.iter().copied()).collect();
        for key in &all {
            let name = env_var_name(key);
            let found = env_properties(env(&[(&name, "v")]));
            assert_eq!(found.keys().collect::<Vec<_>>(), [*key], "{name}");
        }
    }

    #[test]
    fn only_known_prefixed_variables_are_taken() {
        let found = env_properties(env(&[
            ("MM2_OFFSETS_SASL_PASSWORD", "pw"),
            ("MM2_OFFSETS_GROUP", "g"),
            ("SASL_PASSWORD", "x"),
            ("mm2_offsets_client_id", "lower"),
            ("MM2_OFFSETS_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM", ""),
        ]));
        assert_eq!(
            found.iter().collect::<Vec<_>>(),
            [
                ("sasl.password", "pw"),
                ("ssl.endpoint.identification.algorithm", "")
            ]
        );
    }

    #[test]
    fn precedence_is_file_then_cli_then_env() {
        let merged = layered(
            props(&[
                ("bootstrap.servers", "file"),
                ("client.id", "file"),
                ("x", "1"),
            ]),
            props(&[("bootstrap.servers", "cli"), ("client.id", "cli")]),
            env(&[("MM2_OFFSETS_CLIENT_ID", "env")]),
        );
        assert_eq!(merged.get("bootstrap.servers"), Some("cli"));
        assert_eq!(merged.get("client.id"), Some("env"));
        assert_eq!(merged.get("x"), Some("1"));
    }

    #[test]
    fn a_higher_layer_beats_a_lower_consumer_override() {
        let merged = layered(
            props(&[("consumer.bootstrap.servers", "file")]),
            props(&[("bootstrap.servers", "cli")]),
            env(&[]),
        );
        assert_eq!(merged.get("consumer.bootstrap.servers"), None);
        assert_eq!(merged.get("bootstrap.servers"), Some("cli"));
    }

    #[test]
    fn alternatives_are_replaced_not_combined() {
        let merged = layered(
            props(&[
                ("sasl.password.file", "/pw"),
                ("ssl.keystore.key", "k"),
                ("consumer.ssl.keystore.certificate.chain", "c"),
                ("ssl.truststore.location", "/ca.pem"),
            ]),
            props(&[("ssl.keystore.location", "/client.pem")]),
            env(&[("MM2_OFFSETS_SASL_PASSWORD", "pw")]),
        );
        assert_eq!(
            merged.iter().collect::<Vec<_>>(),
            [
                ("ssl.truststore.location", "/ca.pem"),
                ("ssl.keystore.location", "/client.pem"),
                ("sasl.password", "pw"),
            ]
        );
        // Setting one half of the inline pair keeps the other half.
        let merged = layered(
            props(&[
                ("ssl.keystore.key", "k"),
                ("ssl.keystore.certificate.chain", "c"),
            ]),
            props(&[("ssl.keystore.key", "k2")]),
            env(&[]),
        );
        assert_eq!(merged.get("ssl.keystore.certificate.chain"), Some("c"));
        assert_eq!(merged.get("ssl.keystore.key"), Some("k2"));
    }
}
