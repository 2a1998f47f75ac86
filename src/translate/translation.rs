//! The result of a translation: every selected group's offsets, held compactly, what the read
//! did, and the versioned JSON document it serializes to.

use serde::Serialize;

use super::offset::{OffsetRef, TranslatedOffset};
use super::report::ReadReport;
use super::table::OffsetTable;
use crate::select::GroupSelector;

/// The translated offsets of every selected group, and what the read did.
///
/// The offsets are held compactly (each name once, a small row per offset) and read through
/// [`iter`](Translation::iter), [`group`](Translation::group) or
/// [`to_owned_offsets`](Translation::to_owned_offsets). It serializes (serde) to the versioned
/// document the command line prints as JSON, described at [`JSON_SCHEMA_VERSION`].
///
/// ```
/// use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
/// use mm2_offsets::records::builder::BatchBuilder;
/// use mm2_offsets::translate::BatchTranslator;
/// use mm2_offsets::select::GroupSelector;
///
/// let record = |group: &str, partition, offset| {
///     let key = CheckpointKey { group: group.as_bytes(), topic: b"primary.orders", partition };
///     let value = CheckpointValue { version: 0, upstream_offset: offset + 20, downstream_offset: offset, metadata: b"" };
///     (checkpoint::encode_key(&key).unwrap(), checkpoint::encode_value(&value).unwrap())
/// };
/// let (k1, v1) = record("billing", 0, 100);
/// let (k2, v2) = record("audit", 1, 7);
/// let batches = BatchBuilder::new(0).record(Some(&k1), Some(&v1)).record(Some(&k2), Some(&v2)).build();
///
/// let selector = GroupSelector::all();
/// let mut translator = BatchTranslator::new(&selector);
/// translator.add_batches(0, &batches).unwrap();
/// let translation = translator.finish("primary");
///
/// assert_eq!(translation.len(), 2);
/// assert_eq!(translation.groups(), ["audit", "billing"]); // sorted by name
/// let billing: Vec<_> = translation.group("billing").collect();
/// assert_eq!((billing[0].topic, billing[0].partition, billing[0].offset), ("primary.orders", 0, 100));
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Translation {
    offsets: OffsetTable,
    /// Volumes, skipped records, per-partition progress, completeness.
    pub report: ReadReport,
    missing_groups: Vec<String>,
}

impl Translation {
    pub(crate) fn new(offsets: OffsetTable, report: ReadReport) -> Self {
        Translation {
            offsets,
            report,
            missing_groups: Vec::new(),
        }
    }

    /// Records the ids `selector` asked for by name that have no offset here: a mistyped group
    /// in a failover script must not pass unnoticed.
    pub(crate) fn with_missing_groups(mut self, selector: &GroupSelector) -> Self {
        let found: std::collections::HashSet<&str> = self.offsets.groups().into_iter().collect();
        let missing: std::collections::BTreeSet<&str> = selector
            .ids_requested()
            .filter(|id| !found.contains(id))
            .collect();
        self.missing_groups = missing.into_iter().map(str::to_string).collect();
        self
    }

    /// The group ids requested by name (not by pattern) that have no checkpoint in the sources
    /// read, sorted. Patterns that match nothing are not listed.
    pub fn missing_groups(&self) -> &[String] {
        &self.missing_groups
    }

    /// The number of translated offsets.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// Whether no offset was translated.
    pub fn is_empty(&self) -> bool {
        self.offsets.len() == 0
    }

    /// Every translated offset, sorted by source, group, topic, partition.
    pub fn iter(&self) -> impl Iterator<Item = OffsetRef<'_>> + '_ {
        self.offsets.iter()
    }

    /// The distinct groups with at least one translated offset, sorted.
    pub fn groups(&self) -> Vec<&str> {
        self.offsets.groups()
    }

    /// When `group`'s id in the checkpoints is not valid UTF-8: the byte string behind it,
    /// escaped (`orders\xff`). Such a group is named by that escaped form (its invalid bytes as
    /// `\xNN`), so two different byte strings are two groups, where Java's lenient decoding
    /// (invalid bytes as U+FFFD) would make them one; it is still selected by the lenient name,
    /// as Java selects it. `apply` never writes such a group.
    ///
    /// ```
    /// # fn example(translation: &mm2_offsets::translate::Translation) {
    /// if let Some(raw) = translation.group_id_not_utf8("orders-\\xff") {
    ///     println!("group id not UTF-8: {}", raw.join(", "));
    /// }
    /// # }
    /// ```
    pub fn group_id_not_utf8(&self, group: &str) -> Option<Vec<String>> {
        self.offsets.group_id_bytes(group).map(|raw| {
            raw.iter()
                .map(|bytes| bytes.escape_ascii().to_string())
                .collect()
        })
    }

    /// The offsets of one group (from any source), sorted by source, topic, partition.
    pub fn group<'a>(&'a self, group: &str) -> impl Iterator<Item = OffsetRef<'a>> + 'a {
        self.offsets.group(group)
    }

    /// This translation with each offset's (upstream, downstream) pair replaced, in
    /// [`iter`](Translation::iter)'s order; names, metadata and checkpoint positions are kept.
    pub(crate) fn with_offsets(mut self, pairs: impl IntoIterator<Item = (i64, i64)>) -> Self {
        self.offsets.set_offsets(pairs);
        self
    }

    /// A translation of owned rows (unique keys), as if each were a checkpoint.
    pub(crate) fn from_rows(rows: Vec<TranslatedOffset>, report: ReadReport) -> Self {
        Translation::new(OffsetTable::from_owned(rows), report)
    }

    /// This translation with `extra` offsets added, in the usual order (sorted by source,
    /// group, topic, partition): rows a re-translation adds for partitions without a
    /// checkpoint. Their keys must not be in the translation already.
    pub(crate) fn with_rows(&self, extra: Vec<TranslatedOffset>) -> Self {
        Translation {
            offsets: self.offsets.with_rows(extra),
            report: self.report.clone(),
            missing_groups: self.missing_groups.clone(),
        }
    }

    /// This translation with each group's type on the source (groups `types` does not name
    /// are consumer groups): what a translation from the source's offsets learned from
    /// ListGroups.
    pub(crate) fn with_group_types(
        mut self,
        types: &std::collections::BTreeMap<String, crate::client::GroupType>,
    ) -> Self {
        self.offsets.set_group_types(types);
        self
    }

    /// This translation with the groups that have offsets here taken off
    /// [`missing_groups`](Translation::missing_groups): a group asked for by id that MM2 never
    /// checkpointed (a share or Streams group, a consumer group MM2 skipped) but whose offsets
    /// the source gave is found, not mistyped.
    pub(crate) fn without_found_missing(mut self) -> Self {
        let found: std::collections::HashSet<String> =
            self.groups().into_iter().map(str::to_string).collect();
        self.missing_groups.retain(|g| !found.contains(g));
        self
    }

    /// Every translated offset as an owned value, in [`iter`](Translation::iter)'s order.
    pub fn to_owned_offsets(&self) -> Vec<TranslatedOffset> {
        self.iter().map(|o| o.to_owned_offset()).collect()
    }
}

/// The version of the JSON document a [`Translation`] serializes to (and `mm2-offsets translate
/// -o json` prints). Fields are only ever added within a version; a rename or a removal bumps it.
pub const JSON_SCHEMA_VERSION: u32 = 1;

/// The versioned document, the one definition of it: `{"schema_version": 1, "complete": bool,
/// "offsets": [...], "report": {...}, "missing_groups": [...]}`, each offset with [`TranslatedOffset`]'s fields in their
/// order, and `complete` repeating `report.complete` for readers that look no further. The CLI
/// writes the same bytes through a faster writer, tested against this one.
impl Serialize for Translation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut doc = serializer.serialize_struct("Translation", 5)?;
        doc.serialize_field("schema_version", &JSON_SCHEMA_VERSION)?;
        doc.serialize_field("complete", &self.report.complete)?;
        doc.serialize_field("offsets", &OffsetsJson(self))?;
        doc.serialize_field("report", &self.report)?;
        doc.serialize_field("missing_groups", &self.missing_groups)?;
        doc.end()
    }
}

/// The offsets of a translation as a JSON array, written as they are iterated: a million
/// offsets are never held twice.
struct OffsetsJson<'a>(&'a Translation);

impl Serialize for OffsetsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
    use crate::records::builder::BatchBuilder;
    use crate::translate::BatchTranslator;

    #[test]
    fn translation_serializes_to_the_versioned_document() {
        let key = checkpoint::encode_key(&CheckpointKey {
            group: b"billing",
            topic: b"primary.orders",
            partition: 3,
        })
        .unwrap();
        let value = checkpoint::encode_value(&CheckpointValue {
            version: 0,
            upstream_offset: 120,
            downstream_offset: 100,
            metadata: b"m",
        })
        .unwrap();
        let batch = BatchBuilder::new(5)
            .record(Some(&key), Some(&value))
            .build();
        let selector = GroupSelector::all();
        let mut translator = BatchTranslator::new(&selector);
        translator.add_batches(2, &batch).unwrap();
        let translation = translator.finish("primary");

        let text = serde_json::to_string(&translation).unwrap();
        // Field order is part of the document: version first, then completeness.
        assert!(
            text.starts_with(&format!(
                "{{\"schema_version\":{JSON_SCHEMA_VERSION},\"complete\":true,\"offsets\":[{{"
            )),
            "{text}"
        );
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["complete"], doc["report"]["complete"]);
        let offset = &doc["offsets"][0];
        assert_eq!(offset["source"], "primary");
        assert_eq!(offset["group"], "billing");
        assert_eq!(offset["topic"], "primary.orders");
        assert_eq!(offset["partition"], 3);
        assert_eq!(offset["offset"], 100);
        assert_eq!(offset["upstream_offset"], 120);
        assert_eq!(offset["metadata"], "m");
        assert_eq!(offset["checkpoint_partition"], 2);
        assert_eq!(offset["checkpoint_offset"], 5);
        // Every field of the owned type, and nothing else.
        let owned = serde_json::to_value(&translation.to_owned_offsets()[0]).unwrap();
        assert_eq!(offset, &owned);
    }
}
