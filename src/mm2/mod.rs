//! The `mm2` layer: MirrorMaker 2's internal record formats and topic-naming rules, as pure
//! functions over bytes and names (no sockets).
//!
//! | module | what it mirrors in Kafka's `connect/mirror-client` |
//! |---|---|
//! | [`checkpoint`] | `Checkpoint`: the records of `<alias>.checkpoints.internal` |
//! | [`heartbeat`] | `Heartbeat`: the records of `heartbeats` |
//! | [`offset_sync`] | `OffsetSync`: the records of `mm2-offset-syncs.<alias>.internal` |
//! | `policy` (re-exported here) | [`ReplicationPolicy`], [`DefaultReplicationPolicy`], [`IdentityReplicationPolicy`] |
//! | [`topology`] | the pure parts of `MirrorClient` (heartbeat and checkpoint topics, hops, remote topics) |
//! | [`fold`] | what one checkpoint record does to a translation: set, delete, or skip with a reason (the rule the translator and `watch`'s live map share) |
//! | `utf8` (internal) | Java's lenient UTF-8 decoding, for copying names out of records |
//!
//! Decoders borrow from the record bytes and never allocate, so the translator can look at every
//! record of a large checkpoints topic and copy out only the ones it keeps.
//!
//! # References
//! - KIP-382 (MirrorMaker 2.0):
//!   <https://cwiki.apache.org/confluence/display/KAFKA/KIP-382%3A+MirrorMaker+2.0>
//! - KIP-690 (custom separator for internal topics):
//!   <https://cwiki.apache.org/confluence/display/KAFKA/KIP-690%3A+Add+additional+configuration+to+control+MirrorMaker+2+internal+topics+naming+convention>
//! - KIP-949 (`replication.policy.internal.topic.separator.enabled`):
//!   <https://cwiki.apache.org/confluence/display/KAFKA/KIP-949%3A+Add+flag+to+enable+the+usage+of+topic+separator+in+MM2+DefaultReplicationPolicy>
//! - Kafka source: `connect/mirror-client/src/main/java/org/apache/kafka/connect/mirror/`

pub mod checkpoint;
mod codec;
mod error;
pub mod fold;
pub mod heartbeat;
pub mod offset_sync;
pub(crate) mod policy;
pub mod sync_index;
#[cfg(test)]
pub(crate) mod sync_writer_model;
pub mod topology;
pub(crate) mod utf8;

pub use error::{DecodeError, DecodeFailure, Mm2Error};
pub use policy::{
    DEFAULT_CLASS, DEFAULT_SEPARATOR, DefaultReplicationPolicy, IDENTITY_CLASS,
    IdentityReplicationPolicy, ReplicationPolicy,
};
