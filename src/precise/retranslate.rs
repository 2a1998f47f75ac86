//! MM2's checkpoints re-translated with the full offset-sync history: each row's upstream offset
//! looked up in the [`SyncIndex`], partition by partition.

use crate::mm2::ReplicationPolicy;
use crate::mm2::sync_index::{
    PartitionIndex, PreciseOffset, SyncIndex, TopicSyncs, checkpoint_answer,
};
use crate::translate::Translation;

/// Re-translates every offset of `translation` with `index`. A checkpoint names the topic on the
/// target; the syncs name it on the source, one replication hop up.
///
/// The lookups are made partition by partition, in increasing upstream offset, not in the
/// translation's (group) order: each search then starts where the previous one ended, in a
/// history that stays in cache, instead of a binary search from the top of a random partition's
/// history (the cost that dominated when 100,000 rows each missed the cache a dozen times).
pub fn retranslate(
    translation: &Translation,
    index: &SyncIndex,
    policy: &ReplicationPolicy,
) -> Vec<PreciseOffset> {
    let mut topics = UpstreamTopics::new(index, policy);
    let mut out = Vec::with_capacity(translation.len());
    let mut partitions: Vec<Option<&PartitionIndex>> = vec![None; index.partitions()];
    let mut lookups = Vec::with_capacity(translation.len());
    for (row, o) in translation.iter().enumerate() {
        out.push(PreciseOffset::no_sync(o.offset));
        if let Some((number, part)) = topics
            .get(o.topic)
            .1
            .and_then(|syncs| syncs.numbered(o.partition))
        {
            partitions[number] = Some(part);
            lookups.push(Lookup {
                partition: number as u32,
                row: row as u32,
                upstream: o.upstream_offset,
            });
        }
    }
    for bucket in
        by_partition(lookups, partitions.len()).chunk_by_mut(|a, b| a.partition == b.partition)
    {
        bucket.sort_unstable_by_key(|l| l.upstream);
        let Some(part) = partitions[bucket[0].partition as usize] else {
            continue;
        };
        let mut from = 0;
        for lookup in bucket.iter() {
            let (at, answer) = part.translate_from(from, lookup.upstream);
            from = at;
            let row = &mut out[lookup.row as usize];
            *row = checkpoint_answer(answer, row.mm2_offset);
        }
    }
    out
}

/// One row to look up: its partition's number in the index, its place in the translation and
/// its upstream offset.
#[derive(Clone, Copy)]
struct Lookup {
    partition: u32,
    row: u32,
    upstream: i64,
}

/// `lookups` grouped by partition number (below `partitions`), in two linear passes (a counting
/// sort): each partition's rows keep their order.
fn by_partition(lookups: Vec<Lookup>, partitions: usize) -> Vec<Lookup> {
    let mut starts = vec![0usize; partitions + 1];
    for l in &lookups {
        starts[l.partition as usize + 1] += 1;
    }
    for p in 0..partitions {
        starts[p + 1] += starts[p];
    }
    let mut sorted = lookups.clone();
    for l in lookups {
        let at = &mut starts[l.partition as usize];
        sorted[*at] = l;
        *at += 1;
    }
    sorted
}

/// The upstream name and sync histories of the rows' topics, looked up once per run of rows of
/// one topic: a translation's rows come sorted by group, then topic, so a group's partitions of
/// one topic follow each other and share the lookup (the policy's rename and the hash of the
/// name).
pub(crate) struct UpstreamTopics<'a> {
    index: &'a SyncIndex,
    policy: &'a ReplicationPolicy,
    /// The last topic looked up: (target name, upstream name, its histories).
    last: Option<(&'a str, &'a str, Option<&'a TopicSyncs>)>,
}

impl<'a> UpstreamTopics<'a> {
    pub(crate) fn new(index: &'a SyncIndex, policy: &'a ReplicationPolicy) -> Self {
        UpstreamTopics {
            index,
            policy,
            last: None,
        }
    }

    /// The upstream name of target topic `topic` (itself if it is not remote) and the sync
    /// histories of that upstream topic.
    #[inline]
    pub(crate) fn get(&mut self, topic: &'a str) -> (&'a str, Option<&'a TopicSyncs>) {
        if let Some((name, upstream, syncs)) = self.last
            && name == topic
        {
            return (upstream, syncs);
        }
        let upstream = self.policy.upstream_topic(topic).unwrap_or(topic);
        let syncs = self.index.topic(upstream.as_bytes());
        self.last = Some((topic, upstream, syncs));
        (upstream, syncs)
    }
}
