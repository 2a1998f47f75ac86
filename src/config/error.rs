//! The `config` layer's error type.
//!
//! Messages name the key (and the file and line, when there is one) and say what to do. They never
//! carry the value of a key that may hold a secret: values appear only for plain settings such as
//! `security.protocol`.

use std::path::PathBuf;

/// What can go wrong while reading configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },

    /// A `.properties` text is malformed (only a bad `\uXXXX` escape is an error in Java's format).
    #[error("{origin}, line {line}: {reason}")]
    Syntax {
        /// Where the text came from: a file path, or `<text>`.
        origin: String,
        /// The 1-based line where the offending logical line starts.
        line: usize,
        /// What is wrong.
        reason: String,
    },

    /// A required setting is missing.
    #[error("{key} is not set: {hint}")]
    Missing {
        /// The property key.
        key: String,
        /// What to set.
        hint: String,
    },

    /// A setting has a value we cannot use.
    #[error("{key}: {reason}")]
    Invalid {
        /// The property key.
        key: String,
        /// What is wrong and what is expected.
        reason: String,
    },

    /// A setting asks for something Java supports but mm2-offsets does not.
    #[error("{key}: {reason}")]
    Unsupported {
        /// The property key.
        key: String,
        /// What is not supported and what to do instead.
        reason: String,
    },

    /// Two settings contradict each other.
    #[error("{first} and {second} are both set: {hint}")]
    Conflict {
        /// One key.
        first: String,
        /// The other key.
        second: String,
        /// Which one to keep.
        hint: String,
    },
}

impl ConfigError {
    pub(crate) fn invalid(key: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError::Invalid {
            key: key.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn unsupported(key: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError::Unsupported {
            key: key.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn conflict(
        first: impl Into<String>,
        second: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        ConfigError::Conflict {
            first: first.into(),
            second: second.into(),
            hint: hint.into(),
        }
    }
}
