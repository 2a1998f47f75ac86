//! What a precise translation returns: MM2's translation, each offset re-translated from the
//! sync history, and what each row was translated from.

use std::collections::BTreeMap;

use serde::Serialize;

use super::provenance::Provenance;
use crate::mm2::sync_index::{PreciseOffset, Rule};
use crate::record_match::{MatchStats, Unmatched};
use crate::translate::{OffsetRef, ReadReport, Translation};

/// A translation with each offset re-translated from the sync history.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PreciseTranslation {
    /// MM2's translation, as [`MirrorClient::translate`](crate::translate::MirrorClient::translate) returns it.
    pub translation: Translation,
    /// One entry per offset of `translation`, in its iteration order.
    pub precise: Vec<PreciseOffset>,
    /// What each offset was translated from, in the same order: the checkpoint's upstream
    /// offset, or (with [`MirrorClient::translate_from_source_offsets`](crate::translate::MirrorClient::translate_from_source_offsets)) the source's.
    pub inputs: Vec<RowInput>,
    /// Per group, which inputs were used; empty unless translated from the source's offsets.
    pub source_groups: BTreeMap<String, GroupInputs>,
    /// What the read of the offset-syncs topic did.
    pub syncs_report: ReadReport,
    /// Partitions with sync history.
    pub synced_partitions: usize,
    /// How MM2's checkpoints compared with the sync history (see [`Provenance`]): rows the
    /// history does not reproduce keep MM2's offset.
    pub provenance: Provenance,
    /// Per row, in the same order: the most records a consumer resuming at the offset
    /// re-reads (0 when matched; the distance to the sync that bounds the group's next
    /// record otherwise); `None` when unknown.
    pub max_rereads: Vec<Option<i64>>,
    /// With record matching: per row what the syncs alone gave and why a row was not matched,
    /// and what the reads cost.
    pub matching: Option<Matching>,
}

impl PreciseTranslation {
    /// Every offset with its precise translation, in [`Translation::iter`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (OffsetRef<'_>, PreciseOffset)> + '_ {
        self.translation.iter().zip(self.precise.iter().copied())
    }

    /// The offsets to use as a [`Translation`]: each row's `offset` is the precise one and its
    /// `upstream_offset` the input translated; names, metadata and checkpoint positions are
    /// the checkpoint's. What a precise apply plans ([`crate::apply::plan`] takes a
    /// [`Translation`]).
    pub fn to_translation(&self) -> Translation {
        self.translation.clone().with_offsets(
            self.precise
                .iter()
                .zip(&self.inputs)
                .map(|(p, input)| (input.upstream_offset, p.offset)),
        )
    }

    /// Records no longer re-read, per group (summed over its partitions; rows without an MM2
    /// offset count nothing).
    pub fn rereads_saved_by_group(&self) -> BTreeMap<&str, i64> {
        let mut saved = BTreeMap::new();
        for (offset, precise) in self.iter() {
            let row = if precise.mm2_offset < 0 {
                0
            } else {
                precise.rereads_saved()
            };
            *saved.entry(offset.group).or_insert(0) += row;
        }
        saved
    }

    /// The re-read bounds summed per group: `(sum, rows whose bound is unknown)`.
    pub fn max_rereads_by_group(&self) -> BTreeMap<&str, (i64, usize)> {
        let mut sums: BTreeMap<&str, (i64, usize)> = BTreeMap::new();
        for (offset, bound) in self.translation.iter().zip(&self.max_rereads) {
            let entry = sums.entry(offset.group).or_default();
            match bound {
                Some(b) => entry.0 += b,
                None => entry.1 += 1,
            }
        }
        sums
    }

    /// How often each rule was used.
    pub fn rule_counts(&self) -> BTreeMap<Rule, u64> {
        let mut counts = BTreeMap::new();
        for precise in &self.precise {
            *counts.entry(precise.rule).or_insert(0) += 1;
        }
        counts
    }
}

/// Which upstream offset a row was translated from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Input {
    /// The upstream offset of MM2's last checkpoint of the group.
    Checkpoint,
    /// The group's offset committed on the source cluster, read during the translation.
    SourceOffset,
    /// The group's offset committed on the source cluster for a partition MM2 never
    /// checkpointed (after a restart its store forgets what lies below the rewind): there is
    /// no MM2 offset (`mm2_offset` -1).
    SourceOnly,
    /// An upstream position given to [`MirrorClient::translate_positions`](crate::translate::MirrorClient::translate_positions) (not a consumer group's).
    OffsetsFile,
}

impl Input {
    /// The name used in reports: `checkpoint`, `source-offset`, `source-only` or
    /// `offsets-file`.
    pub fn name(self) -> &'static str {
        match self {
            Input::Checkpoint => "checkpoint",
            Input::SourceOffset => "source-offset",
            Input::SourceOnly => "source-only",
            Input::OffsetsFile => "offsets-file",
        }
    }
}

/// What one row was translated from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RowInput {
    /// Checkpoint or source offset.
    pub input: Input,
    /// The upstream offset translated: the checkpoint's, or the source's committed offset.
    pub upstream_offset: i64,
}

/// Per group: how many of its rows used which input, and why the source could not help.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
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
    /// Partitions the group has committed on the source that MM2 never checkpointed, on a
    /// mirrored topic: translated from the source's offset (input `source-only`).
    pub source_only: usize,
    /// Partitions the group has committed on the source whose topic has no offset-sync
    /// history (not mirrored by this flow): not translated.
    pub not_mirrored: usize,
    /// Why the group's offsets could not be read on the source, if they could not.
    pub error: Option<String>,
    /// The group's type on the source (ListGroups): a share group's offsets are its start
    /// offsets (DescribeShareGroupOffsets), not committed ones.
    pub group_type: crate::client::GroupType,
}

/// What record matching did for one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RowMatch {
    /// The offset the syncs prove (the answer without record matching).
    pub syncs_offset: i64,
    /// Its rule.
    pub syncs_rule: Rule,
    /// Why the row kept `syncs_offset`; `None` when matched (rule `record-match`).
    pub unmatched: Option<Unmatched>,
}

/// Record matching's result.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Matching {
    /// One per row of the translation.
    pub rows: Vec<RowMatch>,
    /// What it read.
    pub stats: MatchStats,
}
