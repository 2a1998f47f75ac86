use std::fmt;

/// A secret string (a password). `Debug` and `Display` never show it; only [`Secret::expose`]
/// does, at the one place that must send it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself. Call it only where the value goes on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A secret file's content without trailing line breaks (as `sasl.password.file` and the other
/// `*.file` keys are read).
/// Reads at most 64 KiB, so a wrong path (a device, a log) fails fast instead of filling memory.
pub(crate) fn read_secret_file(path: &str) -> Result<Secret, super::ConfigError> {
    use std::io::Read;
    const LIMIT: u64 = 64 * 1024;
    let io = |source| super::ConfigError::Io {
        path: path.into(),
        source,
    };
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(LIMIT + 1)
        .read_to_string(&mut text)
        .map_err(io)?;
    if text.len() as u64 > LIMIT {
        return Err(io(std::io::Error::other(
            "larger than 64 KiB, too large for a secret; is this the right file?",
        )));
    }
    Ok(Secret::new(text.trim_end_matches(['\r', '\n'])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_hide_the_value() {
        let secret = Secret::new("hunter2");
        assert!(!format!("{secret:?}").contains("hunter2"));
        assert!(!format!("{secret}").contains("hunter2"));
        assert_eq!(secret.expose(), "hunter2");
    }
}
