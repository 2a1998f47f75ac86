//! Precise translation from the source's live committed offsets (`--from-source-offsets`): for a
//! planned migration, while the source is still up, the groups' offsets committed on the source
//! now are newer than MM2's last checkpoint (written every `emit.checkpoints.interval.seconds`),
//! and the offset-sync history translates them as safely as a checkpoint's.
//!
//! Why each answer is safe: the sync index's bound for an upstream offset `U` is at or before the
//! group's next record whatever `U` is (see [`crate::mm2::sync_index`]). MM2's checkpoint offset
//! is a bound for the checkpoint's upstream offset, so it may be kept as a floor only when the
//! source offset is not behind it: a group moved back on the source (a reset) is translated from
//! the syncs alone, and if no sync proves anything there the row keeps the checkpoint and says so.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{PreciseTranslation, UpstreamTopics};
use crate::client::{
    ClientError, CommittedOffset, Deadline, GroupOffsets, KafkaClient, PartitionsWanted,
    common_failure, found_coordinators,
};
use crate::mm2::ReplicationPolicy;
use crate::mm2::sync_index::{PreciseOffset, Rule, SyncIndex, TopicSyncs};
use crate::translate::{MirrorClient, OffsetRef, TranslateError, TranslateRequest};

/// Which upstream offset a row was translated from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Input {
    /// The upstream offset of MM2's last checkpoint of the group.
    Checkpoint,
    /// The group's offset committed on the source cluster, read during the translation.
    SourceOffset,
}

impl Input {
    /// The name used in reports: `checkpoint` or `source-offset`.
    pub fn name(self) -> &'static str {
        match self {
            Input::Checkpoint => "checkpoint",
            Input::SourceOffset => "source-offset",
        }
    }
}

/// What one row was translated from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RowInput {
    /// Checkpoint or source offset.
    pub input: Input,
    /// The upstream offset translated: the checkpoint's, or the source's committed offset.
    pub upstream_offset: i64,
}

/// Per group: how many of its rows used which input, and why the source could not help.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GroupInputs {
    /// Rows translated from the source's committed offset.
    pub source_offset: usize,
    /// Rows translated from the checkpoint: the source had no usable offset for the partition
    /// (none committed, a pending transactional commit, a partition error), or the group moved
    /// back on the source to where no sync proves a position.
    pub checkpoint: usize,
    /// Of `checkpoint`: rows where the group moved back on the source (below the checkpoint's
    /// upstream offset) to where no sync survives. They keep the checkpoint's offset, which may
    /// be past the group's current position on the source: check these groups by hand.
    pub moved_back_without_sync: usize,
    /// Partitions the group has committed on the source that have no checkpoint (not mirrored,
    /// or not yet checkpointed): not translated.
    pub source_only: usize,
    /// Why the group's offsets could not be read on the source, if they could not.
    pub error: Option<String>,
}

impl MirrorClient {
    /// [`translate_precise`](MirrorClient::translate_precise), but each checkpointed
    /// (group, partition) is translated from the group's offset committed on the `source`
    /// cluster now (OffsetFetch) instead of the checkpoint's, where the source has one.
    /// [`PreciseTranslation::inputs`] says per row which input was used,
    /// [`PreciseTranslation::source_groups`] per group. Group-level failures on the source fall
    /// back to the checkpoints and are named there; failing to reach the source is an error.
    ///
    /// `rereads_saved` may be negative on a source-offset row: the group moved back on the
    /// source since the checkpoint.
    pub async fn translate_from_source_offsets(
        &self,
        request: &TranslateRequest,
        syncs: &super::SyncsSource,
        source: &KafkaClient,
    ) -> Result<PreciseTranslation, TranslateError> {
        let deadline = Deadline::after(request.timeout);
        let (translation, (index, syncs_report, history)) = tokio::try_join!(
            self.translate(request),
            super::read_syncs(syncs, request, deadline)
        )?;
        // The history must be this flow's before any offset comes from it.
        let (provenance, keep) =
            super::check_provenance(&translation, &history, self.replication_policy(), syncs)
                .map_err(|e| *e)?;
        let groups: Vec<String> = translation.groups().iter().map(|g| g.to_string()).collect();
        let fetched = tokio::time::timeout(
            deadline.remaining(),
            fetch_source_offsets(source, &groups, &deadline),
        )
        .await
        .map_err(|_| ClientError::DeadlineExceeded {
            operation: "reading the groups' committed offsets on the source cluster".to_string(),
            timeout: request.timeout,
            last: None,
        })??;
        let (mut precise, inputs, source_groups) =
            retranslate_from_source(&translation, &index, self.replication_policy(), &fetched);
        // Rows translated from a checkpoint the history cannot reproduce keep MM2's offset; a
        // row from the source's offset is translated by the surviving (genuine) history.
        let keep: Vec<bool> = keep
            .iter()
            .zip(&inputs)
            .map(|(&keep, input)| keep && input.input == Input::Checkpoint)
            .collect();
        super::keep_mm2_offsets(&mut precise, &keep);
        Ok(PreciseTranslation {
            translation,
            precise,
            inputs,
            source_groups,
            syncs_report,
            synced_partitions: index.partitions(),
            provenance,
        })
    }
}

/// Each group's committed offsets on the source, or why they could not be read.
pub(crate) type SourceOffsets = BTreeMap<String, Result<GroupOffsets, String>>;

/// OffsetFetch for every group, batched per coordinator, every coordinator at once (groups that
/// moved or are loading are asked again alone). `Err` when the cluster could not be asked at all:
/// no coordinator lookup, or one failure no group could get past (authentication, TLS).
pub(crate) async fn fetch_source_offsets(
    client: &KafkaClient,
    groups: &[String],
    deadline: &Deadline,
) -> Result<SourceOffsets, ClientError> {
    let mut out = SourceOffsets::new();
    let coordinators = client.find_group_coordinators(groups, deadline).await?;
    let known = found_coordinators(&coordinators);
    let mut wanted: BTreeMap<String, PartitionsWanted> = BTreeMap::new();
    for (group, answer) in coordinators {
        match answer {
            Ok(_) => {
                wanted.insert(group, PartitionsWanted::All);
            }
            Err(e) => {
                out.insert(group, Err(e.to_string()));
            }
        }
    }
    let fetched = client.fetch_offsets(&wanted, &known, deadline).await;
    if let Some(failure) = common_failure(&fetched) {
        return Err(failure);
    }
    for (group, answer) in fetched {
        out.insert(group, answer.map_err(|e| e.to_string()));
    }
    Ok(out)
}

/// The committed offset, if the source gave a usable one for the partition.
fn usable(committed: Option<&CommittedOffset>) -> Option<i64> {
    committed
        .filter(|c| c.error_code == 0 && c.offset >= 0)
        .map(|c| c.offset)
}

/// Translates one checkpointed row from the source's committed offset `source_offset`, if any,
/// with the sync histories of its upstream topic (`None`: no sync of that topic survives).
fn translate_row(
    o: &OffsetRef<'_>,
    syncs: Option<&TopicSyncs>,
    source_offset: Option<i64>,
) -> (PreciseOffset, RowInput) {
    let translate = |upstream: i64| match syncs {
        Some(syncs) => syncs.translate_checkpoint(o.partition, upstream, o.offset),
        None => PreciseOffset::no_sync(o.offset),
    };
    let from_checkpoint = || {
        (
            translate(o.upstream_offset),
            RowInput {
                input: Input::Checkpoint,
                upstream_offset: o.upstream_offset,
            },
        )
    };
    let Some(upstream) = source_offset else {
        return from_checkpoint();
    };
    let input = RowInput {
        input: Input::SourceOffset,
        upstream_offset: upstream,
    };
    if upstream >= o.upstream_offset {
        // MM2's offset bounds the checkpoint's upstream offset, so it bounds this later one too.
        return (translate(upstream), input);
    }
    // The group moved back on the source: MM2's offset may be past its next record now.
    match syncs
        .and_then(|t| t.partition(o.partition))
        .and_then(|p| p.translate(upstream))
    {
        Some((offset, rule)) => (
            PreciseOffset {
                offset,
                mm2_offset: o.offset,
                rule,
            },
            input,
        ),
        None => {
            let (mut precise, row) = from_checkpoint();
            precise.rule = Rule::NoSync;
            (precise, row)
        }
    }
}

/// Every row of `translation` re-translated from the source's offsets where usable, from its
/// checkpoint otherwise, with the per-group account.
pub(crate) fn retranslate_from_source(
    translation: &crate::translate::Translation,
    index: &SyncIndex,
    policy: &ReplicationPolicy,
    fetched: &SourceOffsets,
) -> (
    Vec<PreciseOffset>,
    Vec<RowInput>,
    BTreeMap<String, GroupInputs>,
) {
    let mut precise = Vec::with_capacity(translation.len());
    let mut inputs = Vec::with_capacity(translation.len());
    let mut groups: BTreeMap<String, GroupInputs> = BTreeMap::new();
    let mut topics = UpstreamTopics::new(index, policy);
    // The source's offsets are keyed by an owned (topic, partition): one key reused for every
    // row's lookup, so a row allocates nothing.
    let mut key = (String::new(), 0);
    for o in translation.iter() {
        let (upstream_topic, syncs) = topics.get(o.topic);
        let committed = match fetched.get(o.group) {
            Some(Ok(offsets)) => {
                key.0.clear();
                key.0.push_str(upstream_topic);
                key.1 = o.partition;
                usable(offsets.get(&key))
            }
            _ => None,
        };
        let (p, input) = translate_row(&o, syncs, committed);
        // A group's name is copied once, on its first row.
        if !groups.contains_key(o.group) {
            groups.insert(o.group.to_string(), GroupInputs::default());
        }
        let account = groups.get_mut(o.group).expect("inserted above");
        match input.input {
            Input::SourceOffset => account.source_offset += 1,
            Input::Checkpoint => account.checkpoint += 1,
        }
        if committed.is_some() && input.input == Input::Checkpoint {
            account.moved_back_without_sync += 1;
        }
        precise.push(p);
        inputs.push(input);
    }
    for (group, answer) in fetched {
        let account = groups.entry(group.clone()).or_default();
        match answer {
            Ok(offsets) => {
                let committed = offsets
                    .values()
                    .filter(|c| usable(Some(c)).is_some())
                    .count();
                account.source_only = committed.saturating_sub(account.source_offset);
            }
            Err(e) => account.error = Some(e.clone()),
        }
    }
    (precise, inputs, groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::CommittedOffset;
    use crate::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
    use crate::mm2::sync_index::SyncIndexBuilder;
    use crate::records::builder::BatchBuilder;
    use crate::select::GroupSelector;
    use crate::translate::{BatchTranslator, Translation};

    /// Checkpoints of `orders-0` on the target (`primary.orders`): (group, upstream, downstream).
    fn translation(rows: &[(&str, i64, i64)]) -> Translation {
        let records: Vec<(Vec<u8>, Vec<u8>)> = rows
            .iter()
            .map(|&(group, upstream, downstream)| {
                let key = CheckpointKey {
                    group: group.as_bytes(),
                    topic: b"primary.orders",
                    partition: 0,
                };
                let value = CheckpointValue {
                    version: 0,
                    upstream_offset: upstream,
                    downstream_offset: downstream,
                    metadata: b"",
                };
                (
                    checkpoint::encode_key(&key).unwrap(),
                    checkpoint::encode_value(&value).unwrap(),
                )
            })
            .collect();
        let mut batch = BatchBuilder::new(0);
        for (k, v) in &records {
            batch = batch.record(Some(k), Some(v));
        }
        let selector = GroupSelector::all();
        let mut translator = BatchTranslator::new(&selector);
        translator.add_batches(0, &batch.build()).unwrap();
        translator.finish("primary")
    }

    fn committed(offset: i64, error_code: i16) -> CommittedOffset {
        CommittedOffset {
            offset,
            leader_epoch: -1,
            metadata: None,
            error_code,
        }
    }

    fn offsets(entries: &[(&str, i32, CommittedOffset)]) -> GroupOffsets {
        entries
            .iter()
            .map(|(t, p, c)| ((t.to_string(), *p), c.clone()))
            .collect()
    }

    #[test]
    fn each_row_says_which_input_it_used_and_never_passes_the_syncs() {
        // Syncs (upstream, downstream): 0->0, 100->150, 200->260 (gaps upstream: no
        // interpolation).
        let mut builder = SyncIndexBuilder::new();
        for (u, d) in [(0, 0), (100, 150), (200, 260)] {
            builder.add(b"orders", 0, u, d);
        }
        let index = builder.finish(Default::default());
        // MM2 checkpointed every group at upstream 120 -> downstream 151.
        let t = translation(&[
            ("ahead", 120, 151),
            ("exact", 120, 151),
            ("none", 120, 151),
            ("pending", 120, 151),
            ("rewound", 120, 151),
            ("failed", 120, 151),
        ]);
        let mut fetched = SourceOffsets::new();
        fetched.insert(
            "ahead".into(),
            Ok(offsets(&[
                ("orders", 0, committed(250, 0)),
                ("audit", 3, committed(7, 0)),
            ])),
        );
        fetched.insert(
            "exact".into(),
            Ok(offsets(&[("orders", 0, committed(200, 0))])),
        );
        fetched.insert(
            "none".into(),
            Ok(offsets(&[("orders", 0, committed(-1, 0))])),
        );
        // UNSTABLE_OFFSET_COMMIT: a transactional commit is pending.
        fetched.insert(
            "pending".into(),
            Ok(offsets(&[("orders", 0, committed(300, 88))])),
        );
        fetched.insert(
            "rewound".into(),
            Ok(offsets(&[("orders", 0, committed(50, 0))])),
        );
        fetched.insert("failed".into(), Err("GROUP_AUTHORIZATION_FAILED".into()));
        let policy = ReplicationPolicy::default();
        let (precise, inputs, groups) = retranslate_from_source(&t, &index, &policy, &fetched);
        let by_group: BTreeMap<&str, (PreciseOffset, RowInput)> = t
            .iter()
            .zip(precise.iter().copied().zip(inputs.iter().copied()))
            .map(|(o, row)| (o.group, row))
            .collect();

        let (p, i) = by_group["ahead"];
        assert_eq!(
            (p.offset, p.rule, i.input, i.upstream_offset),
            (261, Rule::Mm2Rule, Input::SourceOffset, 250)
        );
        let (p, i) = by_group["exact"];
        assert_eq!(
            (p.offset, p.rule, i.input),
            (260, Rule::ExactSync, Input::SourceOffset)
        );
        for group in ["none", "pending", "failed"] {
            let (p, i) = by_group[group];
            // The checkpoint's own re-translation: 120 is past the sync (100, 150).
            assert_eq!(
                (p.offset, i.input, i.upstream_offset),
                (151, Input::Checkpoint, 120),
                "{group}"
            );
        }
        // Moved back to 50: MM2's 151 would skip records 50..120; the syncs give 1.
        let (p, i) = by_group["rewound"];
        assert_eq!(
            (p.offset, p.rule, i.input),
            (1, Rule::Mm2Rule, Input::SourceOffset)
        );
        assert_eq!(p.rereads_saved(), -150);

        assert_eq!(groups["ahead"].source_offset, 1);
        assert_eq!(groups["ahead"].source_only, 1);
        assert_eq!(groups["pending"].checkpoint, 1);
        assert_eq!(
            groups["failed"].error.as_deref(),
            Some("GROUP_AUTHORIZATION_FAILED")
        );
        assert_eq!(groups["failed"].checkpoint, 1);
    }

    #[test]
    fn a_group_moved_back_before_every_sync_keeps_the_checkpoint_and_says_no_sync() {
        let mut builder = SyncIndexBuilder::new();
        builder.add(b"orders", 0, 100, 150);
        let index = builder.finish(Default::default());
        let t = translation(&[("g", 120, 151)]);
        let mut fetched = SourceOffsets::new();
        fetched.insert("g".into(), Ok(offsets(&[("orders", 0, committed(10, 0))])));
        let (precise, inputs, groups) =
            retranslate_from_source(&t, &index, &ReplicationPolicy::default(), &fetched);
        assert_eq!(precise[0].rule, Rule::NoSync);
        assert_eq!(precise[0].offset, 151);
        assert_eq!(inputs[0].input, Input::Checkpoint);
        assert_eq!(groups["g"].moved_back_without_sync, 1);
    }
}
