//! What one record of a checkpoints topic does to a translation: the one rule that both the
//! one-shot read (`translate`'s translator) and the live map (`watch`) apply, so that the same
//! records give the same offsets and the same counters in both.
//!
//! The rule, in order:
//! 1. a record without a key, or whose key is not a checkpoint key, is skipped and counted
//!    (`null_key`, `undecodable_key`): its group cannot be known;
//! 2. a record whose group is not selected changes nothing and is **not counted**, whatever its
//!    value: the value is never decoded (so a malformed value or a tombstone of a group nobody
//!    asked for says nothing about the answer);
//! 3. a tombstone (null value) deletes the key's checkpoint, and is counted (`tombstone`);
//! 4. a value that does not decode, or whose downstream offset is negative, is skipped and
//!    counted (`undecodable_value`, `negative_downstream_offset`); the key keeps its earlier
//!    checkpoint, where Java's `MirrorClient` would throw;
//! 5. anything else becomes the key's checkpoint; a value whose version is not 0 is read as
//!    version 0, as Java does, and counted (`non_zero_version`).
//!
//! Each record is counted under one reason at most.

use serde::Serialize;

use super::checkpoint::{self, CheckpointKey, CheckpointValue};

/// Why a checkpoint record was not used, or was used with a caveat: the reasons a read's
/// report counts (`skipped` in the JSON document, by these names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SkipReason {
    /// The record has no key.
    NullKey,
    /// The key is not a valid checkpoint key.
    UndecodableKey,
    /// The value is not a valid checkpoint value (selected groups only: values of other groups
    /// are never decoded).
    UndecodableValue,
    /// The downstream offset is negative; Java throws here, we skip the record.
    NegativeDownstreamOffset,
    /// A tombstone (null value) of a selected group: it deletes the key's earlier checkpoint.
    /// Counted, not an error.
    Tombstone,
    /// The value's version is not 0; decoded as version 0 anyway, as Java does. Counted only.
    NonZeroVersion,
}

impl SkipReason {
    /// Every reason, in report order.
    pub const ALL: [SkipReason; 6] = [
        SkipReason::NullKey,
        SkipReason::UndecodableKey,
        SkipReason::UndecodableValue,
        SkipReason::NegativeDownstreamOffset,
        SkipReason::Tombstone,
        SkipReason::NonZeroVersion,
    ];

    /// The name in reports and metrics, e.g. `null_key`.
    pub fn name(self) -> &'static str {
        match self {
            SkipReason::NullKey => "null_key",
            SkipReason::UndecodableKey => "undecodable_key",
            SkipReason::UndecodableValue => "undecodable_value",
            SkipReason::NegativeDownstreamOffset => "negative_downstream_offset",
            SkipReason::Tombstone => "tombstone",
            SkipReason::NonZeroVersion => "non_zero_version",
        }
    }
}

/// What one record does to the checkpoints of the selected groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fold<'a> {
    /// The key's latest checkpoint is now this one.
    Set(CheckpointKey<'a>, CheckpointValue<'a>),
    /// A tombstone: the key has no checkpoint any more.
    Delete(CheckpointKey<'a>),
    /// Nothing changes, for this reason.
    Skip(SkipReason),
    /// The record's group is not selected: nothing changes, nothing is counted.
    Unselected,
}

impl Fold<'_> {
    /// The reason the record is counted under in a read's report, if any (see the
    /// [module docs](self) for the rule).
    #[inline]
    pub fn counted(&self) -> Option<SkipReason> {
        match self {
            Fold::Set(_, value) if value.version != 0 => Some(SkipReason::NonZeroVersion),
            Fold::Set(..) | Fold::Unselected => None,
            Fold::Delete(_) => Some(SkipReason::Tombstone),
            Fold::Skip(reason) => Some(*reason),
        }
    }
}

/// Classifies one record of a checkpoints topic. `selected` is asked about the group (its
/// bytes as written, not yet decoded as UTF-8) of every record whose key decodes, before the
/// value is looked at; readers keep its answer per distinct group.
///
/// Everything borrows from the record: nothing is allocated.
///
/// ```
/// use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
/// use mm2_offsets::mm2::fold::{Fold, SkipReason, classify};
///
/// let key = checkpoint::encode_key(&CheckpointKey { group: b"billing", topic: b"primary.orders", partition: 0 })?;
/// let value = checkpoint::encode_value(&CheckpointValue { version: 0, upstream_offset: 7, downstream_offset: 5, metadata: b"" })?;
/// let billing = |group: &[u8]| group == b"billing";
/// assert!(matches!(classify(Some(&key), Some(&value), billing), Fold::Set(_, v) if v.downstream_offset == 5));
/// assert_eq!(classify(Some(&key), None, billing).counted(), Some(SkipReason::Tombstone));
/// assert_eq!(classify(Some(&key), None, |_| false), Fold::Unselected);
/// assert_eq!(classify(None, Some(&value), billing), Fold::Skip(SkipReason::NullKey));
/// # Ok::<(), mm2_offsets::mm2::Mm2Error>(())
/// ```
#[inline(always)]
pub fn classify<'a>(
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
    selected: impl FnOnce(&'a [u8]) -> bool,
) -> Fold<'a> {
    let Some(key) = key else {
        return Fold::Skip(SkipReason::NullKey);
    };
    let Ok(key) = checkpoint::decode_key(key) else {
        return Fold::Skip(SkipReason::UndecodableKey);
    };
    if !selected(key.group) {
        return Fold::Unselected;
    }
    let Some(value) = value else {
        return Fold::Delete(key);
    };
    let Ok(value) = checkpoint::decode_value(value) else {
        return Fold::Skip(SkipReason::UndecodableValue);
    };
    if value.downstream_offset < 0 {
        return Fold::Skip(SkipReason::NegativeDownstreamOffset);
    }
    Fold::Set(key, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(group: &[u8]) -> Vec<u8> {
        checkpoint::encode_key(&CheckpointKey {
            group,
            topic: b"t",
            partition: 0,
        })
        .unwrap()
    }

    fn value(version: i16, downstream: i64) -> Vec<u8> {
        checkpoint::encode_value(&CheckpointValue {
            version,
            upstream_offset: 1,
            downstream_offset: downstream,
            metadata: b"",
        })
        .unwrap()
    }

    #[test]
    fn each_record_is_counted_under_one_reason_at_most() {
        let all = |_: &[u8]| true;
        let (k, garbage) = (key(b"g"), b"\x00".as_slice());
        type Case<'a> = (Option<&'a [u8]>, Option<&'a [u8]>, Option<SkipReason>);
        let cases: [Case<'_>; 7] = [
            (None, Some(&value(0, 1)), Some(SkipReason::NullKey)),
            (Some(garbage), None, Some(SkipReason::UndecodableKey)),
            (Some(&k), None, Some(SkipReason::Tombstone)),
            (Some(&k), Some(garbage), Some(SkipReason::UndecodableValue)),
            (
                Some(&k),
                Some(&value(0, -1)),
                Some(SkipReason::NegativeDownstreamOffset),
            ),
            (
                Some(&k),
                Some(&value(3, 1)),
                Some(SkipReason::NonZeroVersion),
            ),
            (Some(&k), Some(&value(0, 1)), None),
        ];
        for (key, value, counted) in cases {
            assert_eq!(
                classify(key, value, all).counted(),
                counted,
                "{key:?} {value:?}"
            );
        }
        // A negative offset in a non-zero version is skipped, under the one reason that decides.
        assert_eq!(
            classify(Some(&k), Some(&value(3, -1)), all),
            Fold::Skip(SkipReason::NegativeDownstreamOffset)
        );
    }

    #[test]
    fn an_unselected_group_is_neither_decoded_nor_counted() {
        let k = key(b"other");
        let mut asked = Vec::new();
        for value in [None, Some(b"\x00".as_slice())] {
            let fold = classify(Some(&k), value, |group| {
                asked.push(group.to_vec());
                false
            });
            assert_eq!((fold, fold.counted()), (Fold::Unselected, None));
        }
        assert_eq!(asked, [b"other".to_vec(), b"other".to_vec()]);
        // Without a decodable key there is no group to ask about.
        assert_eq!(
            classify(None, None, |_| panic!("asked")),
            Fold::Skip(SkipReason::NullKey)
        );
    }

    #[test]
    fn names_are_the_report_names() {
        for reason in SkipReason::ALL {
            assert_eq!(
                serde_json::to_value(reason).unwrap(),
                serde_json::Value::from(reason.name())
            );
        }
    }
}
