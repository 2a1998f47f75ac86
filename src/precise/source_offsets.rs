//! Precise translation from the source's live committed offsets (`PreciseRequest::source_offsets`): for a
//! planned migration, while the source is still up, the groups' offsets committed on the source
//! now are newer than MM2's last checkpoint (written every `emit.checkpoints.interval.seconds`),
//! and the offset-sync history translates them as safely as a checkpoint's.
//!
//! Why each answer is safe: the sync index's bound for an upstream offset `U` is at or before the
//! group's next record whatever `U` is (see [`crate::mm2::sync_index`]). MM2's checkpoint offset
//! is a bound for the checkpoint's upstream offset, so it may be kept as a floor only when the
//! source offset is not behind it: a group moved back on the source (a reset) is translated from
//! the syncs alone, and if no sync proves anything there the row keeps the checkpoint and says so.

use std::collections::{BTreeMap, HashSet};

use super::retranslate::UpstreamTopics;
use super::translation::{GroupInputs, Input, RowInput};
use crate::client::{
    ClientError, CommittedOffset, Deadline, GroupOffsets, GroupType, KafkaClient, PartitionsWanted,
    common_failure, found_coordinators,
};
use crate::mm2::ReplicationPolicy;
use crate::mm2::sync_index::{PreciseOffset, Rule, SyncIndex, TopicSyncs};
use crate::select::GroupSelector;
use crate::translate::{OffsetRef, TranslatedOffset};

/// Each group's committed offsets on the source, or why they could not be read.
pub(crate) type SourceOffsets = BTreeMap<String, Result<GroupOffsets, String>>;

/// OffsetFetch for every group, batched per coordinator, every coordinator at once (groups that
/// moved or are loading are asked again alone). `Err` when the cluster could not be asked at all:
/// no coordinator lookup, or one failure no group could get past (authentication, TLS).
pub(crate) async fn fetch_committed_offsets(
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

/// [`fetch_committed_offsets`] for the groups `types` names as consumer or streams groups (or
/// not at all), DescribeShareGroupOffsets for its share groups: a share group's start offset
/// stands where a committed offset would (the first record not yet delivered and
/// acknowledged), and OffsetFetch has nothing for it.
pub(crate) async fn fetch_source_offsets(
    client: &KafkaClient,
    groups: &[String],
    types: &BTreeMap<String, GroupType>,
    deadline: &Deadline,
) -> Result<SourceOffsets, ClientError> {
    let (share, committed): (Vec<String>, Vec<String>) = groups
        .iter()
        .cloned()
        .partition(|g| types.get(g) == Some(&GroupType::Share));
    let mut out = if committed.is_empty() {
        SourceOffsets::new()
    } else {
        fetch_committed_offsets(client, &committed, deadline).await?
    };
    if !share.is_empty() {
        out.extend(fetch_share_offsets(client, &share, deadline).await?);
    }
    Ok(out)
}

/// Each share group's start offsets (DescribeShareGroupOffsets), as [`fetch_committed_offsets`]
/// reads committed ones.
pub(crate) async fn fetch_share_offsets(
    client: &KafkaClient,
    groups: &[String],
    deadline: &Deadline,
) -> Result<SourceOffsets, ClientError> {
    let mut out = SourceOffsets::new();
    let coordinators = client.find_group_coordinators(groups, deadline).await?;
    let known = found_coordinators(&coordinators);
    let mut asked = Vec::new();
    for (group, answer) in coordinators {
        match answer {
            Ok(_) => asked.push(group),
            Err(e) => {
                out.insert(group, Err(e.to_string()));
            }
        }
    }
    let fetched = client
        .fetch_share_group_offsets(&asked, &known, deadline)
        .await;
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

/// Translates one row from the source's committed offset `source_offset`, if any, with the
/// sync histories of its upstream topic (`None`: no sync of that topic survives). A row
/// without a checkpoint (`checkpointed` false) has only the source's offset and no MM2 floor:
/// the syncs' answer, or the log's first offset (rule no-sync) where no sync lies below it.
fn translate_row(
    o: &OffsetRef<'_>,
    syncs: Option<&TopicSyncs>,
    source_offset: Option<i64>,
    checkpointed: bool,
) -> (PreciseOffset, RowInput) {
    if !checkpointed {
        let upstream = source_offset.unwrap_or(o.upstream_offset);
        let answer = syncs
            .and_then(|t| t.partition(o.partition))
            .and_then(|p| p.translate(upstream));
        let (offset, rule) = answer.unwrap_or((0, Rule::NoSync));
        return (
            PreciseOffset {
                offset,
                mm2_offset: -1,
                rule,
            },
            RowInput {
                input: Input::SourceOnly,
                upstream_offset: upstream,
            },
        );
    }
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

/// The rows to add for the partitions each group committed on the source that have no
/// checkpoint, on topics this flow mirrors (the offset-sync history knows them): offset 0 as
/// a placeholder, the source's offset and metadata, `checkpoint_timestamp` the time the
/// source was read, no checkpoint position (-1).
pub(crate) fn source_only_rows(
    translation: &crate::translate::Translation,
    index: &SyncIndex,
    policy: &ReplicationPolicy,
    source_alias: &str,
    fetched: &SourceOffsets,
    read_at_ms: i64,
) -> Vec<TranslatedOffset> {
    let checkpointed: HashSet<(&str, &str, i32)> = translation
        .iter()
        .map(|o| (o.group, o.topic, o.partition))
        .collect();
    let mut rows = Vec::new();
    for (group, answer) in fetched {
        let Ok(offsets) = answer else { continue };
        for ((topic, partition), committed) in offsets {
            let Some(offset) = usable(Some(committed)) else {
                continue;
            };
            if index.topic(topic.as_bytes()).is_none() {
                continue;
            }
            let remote = policy.format_remote_topic(source_alias, topic);
            if checkpointed.contains(&(group.as_str(), remote.as_str(), *partition)) {
                continue;
            }
            rows.push(TranslatedOffset {
                source: source_alias.to_string(),
                group: group.clone(),
                group_type: GroupType::Consumer,
                topic: remote,
                partition: *partition,
                offset: 0,
                metadata: committed.metadata.clone().unwrap_or_default(),
                upstream_offset: offset,
                checkpoint_timestamp: read_at_ms,
                checkpoint_partition: -1,
                checkpoint_offset: -1,
                unknown_version: false,
            });
        }
    }
    rows
}

/// Every row of `translation` re-translated from the source's offsets where usable, from its
/// checkpoint otherwise, with the per-group account. Rows without a checkpoint
/// (`checkpoint_partition` -1, added by [`source_only_rows`]) use the source's offset alone.
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
        let checkpointed = o.checkpoint_partition >= 0;
        let (p, input) = translate_row(&o, syncs, committed, checkpointed);
        // A group's name is copied once, on its first row.
        if !groups.contains_key(o.group) {
            groups.insert(o.group.to_string(), GroupInputs::default());
        }
        let account = groups.get_mut(o.group).expect("inserted above");
        match input.input {
            Input::SourceOffset => account.source_offset += 1,
            Input::Checkpoint => account.checkpoint += 1,
            Input::SourceOnly | Input::OffsetsFile => account.source_only += 1,
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
                account.not_mirrored = offsets
                    .iter()
                    .filter(|(_, c)| usable(Some(c)).is_some())
                    .filter(|((topic, _), _)| index.topic(topic.as_bytes()).is_none())
                    .count();
            }
            Err(e) => account.error = Some(e.clone()),
        }
    }
    (precise, inputs, groups)
}

/// The groups on the source cluster: those a selection picks, and every listed group's type.
#[derive(Clone, Debug, Default)]
pub(crate) struct SourceGroups {
    /// The listed groups `selector` selects, sorted.
    pub(crate) selected: Vec<String>,
    /// Every listed group's type (ListGroups on every broker), selected or not.
    pub(crate) types: BTreeMap<String, GroupType>,
}

/// Every group on the source cluster that `selector` selects (ListGroups on every broker), so
/// that groups MM2 never checkpointed at all are translated too, with every listed group's type.
pub(crate) async fn list_source_groups(
    client: &KafkaClient,
    selector: &GroupSelector,
    deadline: &Deadline,
) -> Result<SourceGroups, ClientError> {
    let types = client.group_types(deadline).await?;
    let selected = types
        .keys()
        .filter(|g| selector.matches(g))
        .cloned()
        .collect();
    Ok(SourceGroups { selected, types })
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
        // audit-3 has no sync history: not mirrored by this flow, not translated.
        assert_eq!(groups["ahead"].not_mirrored, 1);
        assert_eq!(groups["ahead"].source_only, 0);
        assert_eq!(groups["pending"].checkpoint, 1);
        assert_eq!(
            groups["failed"].error.as_deref(),
            Some("GROUP_AUTHORIZATION_FAILED")
        );
        assert_eq!(groups["failed"].checkpoint, 1);
    }

    /// A partition the group committed on the source that MM2 never checkpointed gets a row
    /// of its own, translated from the source's offset alone (no MM2 floor, MM2 offset -1);
    /// below every sync it starts at 0, which skips nothing.
    #[test]
    fn partitions_never_checkpointed_are_translated_from_the_source() {
        let mut builder = SyncIndexBuilder::new();
        for (u, d) in [(0, 0), (100, 150)] {
            builder.add(b"orders", 0, u, d);
        }
        builder.add(b"orders", 1, 40, 45);
        let index = builder.finish(Default::default());
        let t = translation(&[("g", 120, 151)]);
        let mut fetched = SourceOffsets::new();
        fetched.insert(
            "g".into(),
            Ok(offsets(&[
                ("orders", 0, committed(130, 0)),
                ("orders", 1, committed(60, 0)),
                ("orders", 2, committed(9, 0)),
                ("audit", 0, committed(5, 0)),
            ])),
        );
        let policy = ReplicationPolicy::default();
        let extra = source_only_rows(&t, &index, &policy, "primary", &fetched, 1234);
        assert_eq!(extra.len(), 2, "{extra:?}");
        let t = t.with_rows(extra);
        let (precise, inputs, groups) = retranslate_from_source(&t, &index, &policy, &fetched);
        let rows: Vec<(i32, i64, Rule, Input, i64, i64)> = t
            .iter()
            .zip(precise.iter().zip(&inputs))
            .map(|(o, (p, i))| {
                (
                    o.partition,
                    p.offset,
                    p.rule,
                    i.input,
                    p.mm2_offset,
                    o.checkpoint_timestamp,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (
                    0,
                    151,
                    Rule::Mm2Checkpoint,
                    Input::SourceOffset,
                    151,
                    1_700_000_000_000
                ),
                (1, 46, Rule::Mm2Rule, Input::SourceOnly, -1, 1234),
                (2, 0, Rule::NoSync, Input::SourceOnly, -1, 1234),
            ]
        );
        assert_eq!(t.iter().nth(1).unwrap().topic, "primary.orders");
        assert_eq!((groups["g"].source_only, groups["g"].not_mirrored), (2, 1));
    }

    /// A share group's start offsets (never checkpointed) become rows of their own, translated
    /// from the source alone, and carry the group's type through the rebuilt table; the
    /// checkpointed group stays a consumer group.
    #[test]
    fn a_share_groups_start_offsets_are_typed_source_only_rows() {
        let mut builder = SyncIndexBuilder::new();
        for (u, d) in [(0, 10), (50, 60)] {
            builder.add(b"orders", 0, u, d);
        }
        let index = builder.finish(Default::default());
        let t = translation(&[("app", 50, 60)]);
        let mut fetched = SourceOffsets::new();
        fetched.insert(
            "app".into(),
            Ok(offsets(&[("orders", 0, committed(55, 0))])),
        );
        // Start offset 5 on partition 0; partition 1 not initialized yet (-1): no row.
        fetched.insert(
            "queue".into(),
            Ok(offsets(&[
                ("orders", 0, committed(5, 0)),
                ("orders", 1, committed(-1, 0)),
            ])),
        );
        let types: BTreeMap<String, GroupType> = [
            ("app".to_string(), GroupType::Consumer),
            ("queue".to_string(), GroupType::Share),
        ]
        .into();
        let policy = ReplicationPolicy::default();
        let extra = source_only_rows(&t, &index, &policy, "primary", &fetched, 1234);
        let t = t.with_rows(extra).with_group_types(&types);
        let (precise, inputs, _) = retranslate_from_source(&t, &index, &policy, &fetched);
        let rows: Vec<(&str, &str, i64, i64, Input)> = t
            .iter()
            .zip(precise.iter().zip(&inputs))
            .map(|(o, (p, i))| {
                (
                    o.group,
                    o.group_type.name(),
                    i.upstream_offset,
                    p.offset,
                    i.input,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("app", "consumer", 55, 61, Input::SourceOffset),
                ("queue", "share", 5, 11, Input::SourceOnly),
            ]
        );
        // Kept when the offsets are replaced (what apply plans from).
        let owned = t
            .clone()
            .with_offsets([(55, 61), (5, 11)])
            .to_owned_offsets();
        assert_eq!(owned[1].group_type, GroupType::Share);
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
