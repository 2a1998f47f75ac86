//! The `mm2` layer's error types: why a record could not be decoded ([`DecodeError`], small
//! and `Copy` for counting), and everything else ([`Mm2Error`]).

use std::fmt;

/// Why a record could not be decoded. `Copy` and small, so a reader can count skipped records by
/// reason without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DecodeFailure {
    /// The key ends before all its fields are read (Java: `SchemaException` from a
    /// `BufferUnderflowException`).
    KeyTruncated,
    /// The value ends before all its fields are read.
    ValueTruncated,
    /// A `STRING` length prefix is negative. Java's non-nullable `STRING` rejects it; MirrorMaker 2
    /// never writes a null string.
    NegativeLength,
}

impl DecodeFailure {
    /// A stable, machine-friendly name for reports and metrics, e.g. `"key_truncated"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DecodeFailure::KeyTruncated => "key_truncated",
            DecodeFailure::ValueTruncated => "value_truncated",
            DecodeFailure::NegativeLength => "negative_length",
        }
    }
}

impl fmt::Display for DecodeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A record that could not be decoded: which record type, which field, and why.
///
/// Java's `MirrorClient` logs such a record at INFO and skips it; callers here usually count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[error(
    "cannot decode {record} field `{field}`: {}; the record is not a MirrorMaker 2 {record}, or it \
     is corrupt",
    describe(*reason)
)]
#[non_exhaustive]
pub struct DecodeError {
    /// Why, as a countable reason.
    pub reason: DecodeFailure,
    /// Which record and part, e.g. `"checkpoint key"`.
    pub record: &'static str,
    /// The Java field name that could not be read, e.g. `"topic"`.
    pub field: &'static str,
}

fn describe(reason: DecodeFailure) -> &'static str {
    match reason {
        DecodeFailure::KeyTruncated => "the key ends inside it",
        DecodeFailure::ValueTruncated => "the value ends inside it",
        DecodeFailure::NegativeLength => "its length prefix is negative",
    }
}

/// What can go wrong in the `mm2` layer.
///
/// Decoding a record returns the cheaper, `Copy` [`DecodeError`] directly (the translator counts
/// those by reason); it converts into this type when it must travel further.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Mm2Error {
    /// A record could not be decoded.
    #[error(transparent)]
    Decode(#[from] DecodeError),

    /// `replication.policy.class` names a policy we do not implement.
    #[error(
        "replication.policy.class `{class}` is not supported: mm2-offsets implements only \
         org.apache.kafka.connect.mirror.DefaultReplicationPolicy and \
         org.apache.kafka.connect.mirror.IdentityReplicationPolicy (a custom Java policy cannot be \
         loaded); use one of those, with replication.policy.separator if your topics use another \
         separator"
    )]
    UnsupportedPolicy {
        /// The class name as configured.
        class: String,
    },

    /// A replication-policy setting has a value Java would reject too.
    #[error("{key}: {reason}")]
    InvalidPolicyConfig {
        /// The property key.
        key: &'static str,
        /// What is wrong and what is expected.
        reason: String,
    },

    /// A string is too long for Kafka's `STRING` type (an `int16` length), so it cannot be encoded.
    #[error(
        "cannot encode field `{field}`: {len} bytes of UTF-8, but a Kafka STRING holds at most 32767"
    )]
    StringTooLong {
        /// The Java field name.
        field: &'static str,
        /// The length in bytes.
        len: usize,
    },
}
