//! Control records: the transaction markers (and KRaft records) inside control batches.
//!
//! A control record's key is `version: int16, type: int16`. As in Java's `ControlRecordType`,
//! a negative version is corrupt, a newer version is read as version 0, and an unknown type is
//! [`ControlRecordType::Unknown`] (to be ignored, not rejected).
//!
//! # References
//! - <https://kafka.apache.org/documentation/#controlbatch>
//! - KIP-98; Kafka `ControlRecordType`, `EndTransactionMarker`

use super::{Batch, Record, RecordsError, Scratch};

/// What a control record marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControlRecordType {
    /// A transaction was aborted: its producer's earlier records in the transaction are void.
    Abort,
    /// A transaction was committed.
    Commit,
    /// KRaft: the quorum leader changed.
    LeaderChange,
    /// KRaft: a snapshot starts.
    SnapshotHeader,
    /// KRaft: a snapshot ends.
    SnapshotFooter,
    /// KRaft: the kraft.version feature level.
    KraftVersion,
    /// KRaft: the voter set.
    KraftVoters,
    /// A type this crate does not know; Java ignores these.
    Unknown(i16),
}

impl ControlRecordType {
    /// The type for a wire id.
    pub fn from_id(id: i16) -> ControlRecordType {
        match id {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            2 => ControlRecordType::LeaderChange,
            3 => ControlRecordType::SnapshotHeader,
            4 => ControlRecordType::SnapshotFooter,
            5 => ControlRecordType::KraftVersion,
            6 => ControlRecordType::KraftVoters,
            other => ControlRecordType::Unknown(other),
        }
    }

    /// The wire id.
    pub fn id(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::LeaderChange => 2,
            ControlRecordType::SnapshotHeader => 3,
            ControlRecordType::SnapshotFooter => 4,
            ControlRecordType::KraftVersion => 5,
            ControlRecordType::KraftVoters => 6,
            ControlRecordType::Unknown(id) => id,
        }
    }
}

/// A parsed control record key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControlRecord {
    /// Key schema version as written (0 today).
    pub version: i16,
    /// What the record marks.
    pub kind: ControlRecordType,
}

impl ControlRecord {
    /// Parses the key of `record`, a record of a control batch.
    ///
    /// ```
    /// use mm2_offsets::records::builder::BatchBuilder;
    /// use mm2_offsets::records::{Batches, ControlRecord, ControlRecordType, Scratch};
    ///
    /// // A commit marker: a control batch whose one record's key is version 0, type 1.
    /// let bytes = BatchBuilder::new(7).transactional(42, 0).control().record(Some(&[0, 0, 0, 1]), None).build();
    /// let mut scratch = Scratch::new();
    /// let batch = Batches::new(&bytes).next().unwrap().unwrap();
    /// let record = batch.records(&mut scratch).unwrap().next().unwrap().unwrap();
    /// assert_eq!(ControlRecord::parse(&record).unwrap().kind, ControlRecordType::Commit);
    /// ```
    pub fn parse(record: &Record<'_>) -> Result<ControlRecord, RecordsError> {
        let error = |problem| RecordsError::ControlRecord {
            offset: record.offset,
            problem,
        };
        let key = record.key.ok_or_else(|| error("the key is null"))?;
        let &[v0, v1, t0, t1, ..] = key else {
            return Err(error("the key is shorter than 4 bytes (version, type)"));
        };
        let version = i16::from_be_bytes([v0, v1]);
        if version < 0 {
            return Err(error("the key version is negative"));
        }
        Ok(ControlRecord {
            version,
            kind: ControlRecordType::from_id(i16::from_be_bytes([t0, t1])),
        })
    }

    /// The control record that opens `batch`, or `None` if the batch is not a control batch
    /// or holds no records. Java looks at the first record only, and so do we.
    pub fn first_of(
        batch: &Batch<'_>,
        scratch: &mut Scratch,
    ) -> Result<Option<ControlRecord>, RecordsError> {
        if !batch.is_control() {
            return Ok(None);
        }
        match batch.records(scratch)?.next() {
            None => Ok(None),
            Some(record) => ControlRecord::parse(&record?).map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_key(key: Option<&[u8]>) -> Result<ControlRecord, RecordsError> {
        ControlRecord::parse(&Record {
            offset: 42,
            timestamp: 0,
            key,
            value: None,
            headers: &[],
            fields: &[],
        })
    }

    #[test]
    fn abort_and_commit() {
        assert_eq!(
            with_key(Some(&[0, 0, 0, 0])).map(|c| c.kind),
            Ok(ControlRecordType::Abort)
        );
        assert_eq!(
            with_key(Some(&[0, 0, 0, 1])).map(|c| c.kind),
            Ok(ControlRecordType::Commit)
        );
    }

    #[test]
    fn newer_versions_and_unknown_types_are_read() {
        let c = with_key(Some(&[0, 3, 0x01, 0x00, 0xff])).expect("newer version");
        assert_eq!(c.version, 3);
        assert_eq!(c.kind, ControlRecordType::Unknown(256));
        assert_eq!(
            ControlRecordType::from_id(6),
            ControlRecordType::KraftVoters
        );
        for id in -1..8 {
            assert_eq!(ControlRecordType::from_id(id).id(), id);
        }
    }

    #[test]
    fn malformed_keys_are_errors_naming_the_offset() {
        for key in [None, Some(&[0u8, 0, 0][..]), Some(&[0xff, 0xff, 0, 0][..])] {
            let msg = with_key(key).expect_err("malformed").to_string();
            assert!(msg.contains("offset 42"), "{msg}");
        }
    }
}
