//! The `mm2` layer's error type.

use super::codec::DecodeError;

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
