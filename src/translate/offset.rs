//! One translated offset, as a view borrowed from a [`Translation`](super::Translation) and as
//! an owned value.

use serde::Serialize;

use crate::client::GroupType;

/// One translated offset: where `group` should resume on the target cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TranslatedOffset {
    /// The source cluster alias the checkpoint came from.
    pub source: String,
    /// The consumer group.
    pub group: String,
    /// The group's type on the source (`consumer` for a checkpoint's: MirrorMaker 2 checkpoints
    /// no other type).
    pub group_type: GroupType,
    /// The topic on the target cluster (already renamed by the replication policy).
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The translated (downstream) offset to commit on the target.
    pub offset: i64,
    /// The group's commit metadata on the source.
    pub metadata: String,
    /// The group's committed offset on the source.
    pub upstream_offset: i64,
    /// The checkpoint record's timestamp (ms since the epoch).
    pub checkpoint_timestamp: i64,
    /// The checkpoint record's partition in the checkpoints topic.
    pub checkpoint_partition: i32,
    /// The checkpoint record's offset in the checkpoints topic.
    pub checkpoint_offset: i64,
    /// The checkpoint value's version was not 0 (MirrorMaker 2 writes 0). Decoded as version 0,
    /// as Java does, and shown; `apply` never writes from it (verdict
    /// `unknown-checkpoint-version`). Serialized only when true.
    #[serde(skip_serializing_if = "is_false", default)]
    pub unknown_version: bool,
}

/// One translated offset, borrowed from a [`Translation`](super::Translation). Serializes with
/// the same fields as [`TranslatedOffset`], its owned form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct OffsetRef<'a> {
    /// The source cluster alias the checkpoint came from.
    pub source: &'a str,
    /// The consumer group.
    pub group: &'a str,
    /// The group's type on the source (`consumer` for a checkpoint's: MirrorMaker 2 checkpoints
    /// no other type).
    pub group_type: &'a GroupType,
    /// The topic on the target cluster (already renamed by the replication policy).
    pub topic: &'a str,
    /// The partition.
    pub partition: i32,
    /// The translated (downstream) offset to commit on the target.
    pub offset: i64,
    /// The group's commit metadata on the source.
    pub metadata: &'a str,
    /// The group's committed offset on the source.
    pub upstream_offset: i64,
    /// The checkpoint record's timestamp (ms since the epoch).
    pub checkpoint_timestamp: i64,
    /// The checkpoint record's partition in the checkpoints topic.
    pub checkpoint_partition: i32,
    /// The checkpoint record's offset in the checkpoints topic.
    pub checkpoint_offset: i64,
    /// The checkpoint value's version was not 0 (MirrorMaker 2 writes 0). Decoded as version 0,
    /// as Java does, and shown; `apply` never writes from it (verdict
    /// `unknown-checkpoint-version`). Serialized only when true.
    #[serde(skip_serializing_if = "is_false", default)]
    pub unknown_version: bool,
}

impl OffsetRef<'_> {
    /// An owned copy.
    pub fn to_owned_offset(&self) -> TranslatedOffset {
        TranslatedOffset {
            source: self.source.to_string(),
            group: self.group.to_string(),
            group_type: self.group_type.clone(),
            topic: self.topic.to_string(),
            partition: self.partition,
            offset: self.offset,
            metadata: self.metadata.to_string(),
            upstream_offset: self.upstream_offset,
            checkpoint_timestamp: self.checkpoint_timestamp,
            checkpoint_partition: self.checkpoint_partition,
            checkpoint_offset: self.checkpoint_offset,
            unknown_version: self.unknown_version,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}
