//! The records MirrorMaker 2 writes to its internal topics, encoded with the crate's own
//! encoders, for the suites that lay a flow by hand: one place that knows the key and value of
//! an offset sync and of a checkpoint, so a flow written by hand is byte for byte what MM2 writes.

use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
use mm2_offsets::mm2::offset_sync::{self, OffsetSyncKey, OffsetSyncValue};

use super::raw::Record;

/// An offset sync of `topic`-`partition` (the topic's name on the source): upstream offset `u`
/// was copied to downstream offset `d`.
pub fn offset_sync(topic: &str, partition: i32, u: i64, d: i64) -> Record {
    let key = offset_sync::encode_key(&OffsetSyncKey {
        topic: topic.as_bytes(),
        partition,
    })
    .expect("an offset sync key of a test topic encodes");
    let value = offset_sync::encode_value(&OffsetSyncValue {
        upstream_offset: u,
        downstream_offset: d,
    });
    (Some(key), Some(value))
}

/// An offset sync of partition 0 of `topic`, the partition most hand-laid flows use.
pub fn sync_record(topic: &str, u: i64, d: i64) -> Record {
    offset_sync(topic, 0, u, d)
}

/// A checkpoint of `group` on partition 0 of `topic` (the topic's name on the target, as MM2's
/// checkpoints name it): the group's `upstream` offset translates to `downstream`.
pub fn checkpoint_record(
    group: &str,
    topic: &str,
    (upstream, downstream): (i64, i64),
    metadata: &[u8],
) -> Record {
    let key = checkpoint::encode_key(&CheckpointKey {
        group: group.as_bytes(),
        topic: topic.as_bytes(),
        partition: 0,
    })
    .expect("a checkpoint key of a test group encodes");
    let value = checkpoint::encode_value(&CheckpointValue {
        version: 0,
        upstream_offset: upstream,
        downstream_offset: downstream,
        metadata,
    })
    .expect("a checkpoint value of a test group encodes");
    (Some(key), Some(value))
}
