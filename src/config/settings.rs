//! Reading client properties: each key's effective value (a `consumer.` prefix overrides the
//! plain key, as in Java's `MirrorClientConfig`), which keys were read, and the warnings about
//! the others. Shared by the readers of the connection, `ssl.*` and `sasl.*` keys.

use std::collections::HashSet;
use std::time::Duration;

use super::keys::*;
use super::properties::is_sensitive_key;
use super::warning::{ConfigWarning, IgnoredBecause};
use super::{ConfigError, Properties};

/// A value and the key it came from (`consumer.x` or `x`).
#[derive(Clone, Copy)]
pub(crate) struct Setting<'a> {
    pub(crate) key: &'a str,
    pub(crate) value: &'a str,
}

impl Setting<'_> {
    /// The value quoted for a message, or a placeholder if the key may hold a secret.
    pub(crate) fn shown(&self) -> String {
        if is_sensitive_key(self.key) {
            "<redacted>".to_string()
        } else {
            format!("`{}`", self.value.escape_debug())
        }
    }
}

/// The most keys named one by one in "not used" warnings; the rest are counted.
pub(crate) const MAX_UNUSED_KEY_WARNINGS: usize = 50;

/// Reads settings with `consumer.` overrides, remembers what was read, and collects warnings.
pub(crate) struct Settings<'a> {
    props: &'a Properties,
    /// Keys looked at, in use or not.
    read: HashSet<&'static str>,
    /// Keys looked at but not in use (`ssl.*` without TLS, `sasl.*` without SASL).
    unused: HashSet<&'static str>,
    warnings: Vec<ConfigWarning>,
}

impl<'a> Settings<'a> {
    pub(crate) fn new(props: &'a Properties) -> Self {
        Settings {
            props,
            read: HashSet::new(),
            unused: HashSet::new(),
            warnings: Vec::new(),
        }
    }

    fn lookup(&self, key: &str) -> Option<Setting<'a>> {
        let props = self.props;
        props
            .get_key_value(&format!("{CONSUMER_PREFIX}{key}"))
            .or_else(|| props.get_key_value(key))
            .map(|(key, value)| Setting { key, value })
    }

    /// The effective value of `key`, marking it as read.
    pub(crate) fn get(&mut self, key: &'static str) -> Option<Setting<'a>> {
        self.read.insert(key);
        let setting = self.lookup(key)?;
        if setting.value.contains("${") && setting.value.contains('}') {
            self.warn(ConfigWarning::ConfigProviderReference {
                key: setting.key.to_string(),
            });
        }
        Some(setting)
    }

    /// Marks every present key starting with `prefix` as read, and warns once that they are
    /// ignored because of `why`.
    pub(crate) fn ignore_family(&mut self, prefix: &str, why: IgnoredBecause) {
        let mut present = Vec::new();
        for key in CLIENT_KEYS.iter().filter(|k| k.starts_with(prefix)) {
            self.read.insert(key);
            self.unused.insert(key);
            if let Some(setting) = self.lookup(key) {
                present.push(setting.key.to_string());
            }
        }
        if !present.is_empty() {
            self.warn(ConfigWarning::Ignored {
                keys: present,
                because: why,
            });
        }
    }

    /// Warns that the present key `key` is ignored because of `why`.
    pub(crate) fn ignore(&mut self, key: &str, why: IgnoredBecause) {
        self.warn(ConfigWarning::Ignored {
            keys: vec![key.to_string()],
            because: why,
        });
    }

    pub(crate) fn warn(&mut self, warning: ConfigWarning) {
        self.warnings.push(warning);
    }

    /// Warnings, including one for each key nobody read, up to [`MAX_UNUSED_KEY_WARNINGS`];
    /// the rest are counted in one more line, so a huge file of unknown keys cannot flood the
    /// caller with warnings or memory.
    pub(crate) fn finish(mut self) -> Vec<ConfigWarning> {
        let mut more = 0usize;
        let mut shown = 0usize;
        for (key, value) in self.props.iter() {
            if shown == MAX_UNUSED_KEY_WARNINGS {
                // Counting needs no message: only whether the key warns.
                more += usize::from(self.unused_key_warning(key, value).is_some());
            } else if let Some(warning) = self.unused_key_warning(key, value) {
                self.warnings.push(warning);
                shown += 1;
            }
        }
        if more > 0 {
            self.warnings
                .push(ConfigWarning::MoreUnusedKeys { count: more });
        }
        self.warnings
    }

    fn unused_key_warning(&self, key: &str, value: &str) -> Option<ConfigWarning> {
        let plain = key.strip_prefix(CONSUMER_PREFIX).unwrap_or(key);
        if self.read.contains(plain) {
            return None;
        }
        if key == FORWARDING_ADMIN_CLASS {
            return (value.trim() != DEFAULT_FORWARDING_ADMIN_CLASS).then(|| {
                ConfigWarning::JavaClass {
                    key: FORWARDING_ADMIN_CLASS.to_string(),
                }
            });
        }
        if MIRROR_CLIENT_KEYS.contains(&key) {
            return None;
        }
        if let Some(other) = OTHER_CLIENT_PREFIXES
            .iter()
            .find_map(|prefix| key.strip_prefix(prefix))
        {
            // Settings for MirrorClient's admin or producer: harmless unless they contradict ours.
            let differs = self.read.contains(other)
                && !self.unused.contains(other)
                && self.lookup(other).map(|s| s.value) != Some(value);
            return differs.then(|| ConfigWarning::DiffersFromSettingInUse {
                key: key.to_string(),
            });
        }
        // An unknown key without a value is a line without `=`: a line of text, not a setting.
        if !looks_like_a_setting(key)
            || (value.is_empty() && !matches!(key, "username" | "password"))
        {
            // A line of a password file or a PEM key read as a properties file parses as a key:
            // its text may be the secret itself, so it is never shown.
            return Some(ConfigWarning::NotASetting);
        }
        Some(ConfigWarning::UnusedKey {
            key: key.to_string(),
        })
    }
}

/// Whether `key` has the form of a client property (`linger.ms`, `consumer.group.id`), or is a
/// JAAS option or login module of a `sasl.jaas.config` spread over lines: lower-case ASCII
/// words joined by dots with at least one dot, or one of those JAAS words. Anything else is not
/// named in a warning.
fn looks_like_a_setting(key: &str) -> bool {
    if matches!(key, "username" | "password") {
        return true;
    }
    if key.ends_with("LoginModule") {
        return key.len() <= 120 && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.');
    }
    key.len() <= 120
        && key.contains('.')
        && key.split('.').all(|word| {
            !word.is_empty()
                && word
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        })
}

/// A positive number of milliseconds.
pub(crate) fn parse_millis(setting: Setting<'_>) -> Result<Duration, ConfigError> {
    match setting.value.trim().parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(ConfigError::invalid(
            setting.key,
            format!(
                "{} is not a positive number of milliseconds",
                setting.shown()
            ),
        )),
    }
}
