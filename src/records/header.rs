//! The fixed 61-byte header of a RecordBatch v2, and what its attribute bits mean.
//!
//! ```text
//! offset  size  field
//!      0     8  baseOffset
//!      8     4  batchLength            (bytes after this field: partitionLeaderEpoch .. end)
//!     12     4  partitionLeaderEpoch
//!     16     1  magic                  (2; v0/v1 message sets also keep their magic here)
//!     17     4  crc                    (CRC32C of attributes .. end of batch)
//!     21     2  attributes
//!     23     4  lastOffsetDelta
//!     27     8  baseTimestamp
//!     35     8  maxTimestamp
//!     43     8  producerId
//!     51     2  producerEpoch
//!     53     4  baseSequence
//!     57     4  recordCount
//!     61        records ...
//! ```
//!
//! # References
//! - <https://kafka.apache.org/documentation/#recordbatch>
//! - KIP-98 (transactions: producer id, transactional and control flags)
//! - Kafka `DefaultRecordBatch` (field offsets and attribute masks)

use super::RecordsError;
use super::compression::Compression;
use super::layout::{ATTRIBUTES_OFFSET, CRC_OFFSET, HEADER_LEN, LOG_OVERHEAD, MAGIC_OFFSET};

const COMPRESSION_MASK: i16 = 0x07;
const TIMESTAMP_TYPE_MASK: i16 = 0x08;
const TRANSACTIONAL_MASK: i16 = 0x10;
const CONTROL_MASK: i16 = 0x20;
const DELETE_HORIZON_MASK: i16 = 0x40;

/// Which clock the batch's timestamps come from (attribute bit 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimestampType {
    /// The producer's create time, per record.
    CreateTime,
    /// The broker's append time: every record's timestamp is the batch's `max_timestamp`.
    LogAppendTime,
}

/// The decoded fixed header of a RecordBatch v2. Plain data: reading it checks nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BatchHeader {
    /// Offset of the first record (or of the first offset the batch once held, after compaction).
    pub base_offset: i64,
    /// Bytes after this field to the end of the batch.
    pub batch_length: i32,
    /// Leader epoch of the broker that appended the batch, or -1.
    pub partition_leader_epoch: i32,
    /// Message format version; always 2 for a batch [`Batches`](super::Batches) yields.
    pub magic: i8,
    /// CRC32C of the bytes from the attributes to the end of the batch.
    pub crc: u32,
    /// Compression, timestamp type, transactional, control and delete-horizon bits.
    pub attributes: i16,
    /// Offset of the last record minus `base_offset`; kept even when compaction removed it.
    pub last_offset_delta: i32,
    /// Timestamp of the first record (the delete horizon when that attribute bit is set).
    pub base_timestamp: i64,
    /// Largest record timestamp (the append time for `LogAppendTime` batches).
    pub max_timestamp: i64,
    /// Idempotent/transactional producer id, or -1.
    pub producer_id: i64,
    /// Producer epoch, or -1.
    pub producer_epoch: i16,
    /// Sequence number of the first record, or -1.
    pub base_sequence: i32,
    /// Number of records the batch declares (checked against what is there when iterating).
    pub record_count: i32,
}

impl BatchHeader {
    /// Reads the header from the first [`HEADER_LEN`] bytes of `bytes`, or `None` if fewer are
    /// given. Nothing is validated here.
    pub fn parse(bytes: &[u8]) -> Option<BatchHeader> {
        let h: &[u8; HEADER_LEN] = bytes.get(..HEADER_LEN)?.try_into().ok()?;
        Some(BatchHeader {
            base_offset: i64::from_be_bytes(array(h, 0)),
            batch_length: i32::from_be_bytes(array(h, 8)),
            partition_leader_epoch: i32::from_be_bytes(array(h, 12)),
            magic: h[MAGIC_OFFSET] as i8,
            crc: u32::from_be_bytes(array(h, CRC_OFFSET)),
            attributes: i16::from_be_bytes(array(h, ATTRIBUTES_OFFSET)),
            last_offset_delta: i32::from_be_bytes(array(h, 23)),
            base_timestamp: i64::from_be_bytes(array(h, 27)),
            max_timestamp: i64::from_be_bytes(array(h, 35)),
            producer_id: i64::from_be_bytes(array(h, 43)),
            producer_epoch: i16::from_be_bytes(array(h, 51)),
            base_sequence: i32::from_be_bytes(array(h, 53)),
            record_count: i32::from_be_bytes(array(h, 57)),
        })
    }

    /// The compression codec, or an error naming this batch if the id is not one Kafka defines.
    pub fn compression(&self) -> Result<Compression, RecordsError> {
        let id = (self.attributes & COMPRESSION_MASK) as u8;
        Compression::from_id(id).ok_or(RecordsError::UnknownCompression {
            base_offset: self.base_offset,
            id,
        })
    }

    /// Whose clock the timestamps come from.
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & TIMESTAMP_TYPE_MASK != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Whether a transactional producer wrote this batch (KIP-98).
    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_MASK != 0
    }

    /// Whether this batch holds control records (transaction markers), not user data.
    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_MASK != 0
    }

    /// Whether `base_timestamp` holds the log cleaner's delete horizon (KIP-534).
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes & DELETE_HORIZON_MASK != 0
    }

    /// Whether an idempotent or transactional producer wrote the batch (Java: `producerId > -1`).
    pub fn has_producer_id(&self) -> bool {
        self.producer_id > -1
    }

    /// Offset of the last record the batch covers. Wraps like Java's `long` on hostile input.
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .wrapping_add(i64::from(self.last_offset_delta))
    }

    /// The offset to fetch after this batch: `base_offset + last_offset_delta + 1`. This skips
    /// offsets compaction removed from the batch's end, as Java's consumer does.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// Total size of the batch in bytes, header included (`batch_length + 12`).
    pub fn size(&self) -> usize {
        LOG_OVERHEAD + usize::try_from(self.batch_length).unwrap_or(0)
    }
}

fn array<const N: usize>(h: &[u8; HEADER_LEN], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&h[at..at + N]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_bytes() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&1234i64.to_be_bytes());
        b.extend_from_slice(&49i32.to_be_bytes());
        b.extend_from_slice(&7i32.to_be_bytes());
        b.push(2);
        b.extend_from_slice(&0xdead_beefu32.to_be_bytes());
        b.extend_from_slice(&(0x10i16 | 0x20 | 0x08 | 4).to_be_bytes());
        b.extend_from_slice(&9i32.to_be_bytes());
        b.extend_from_slice(&100i64.to_be_bytes());
        b.extend_from_slice(&200i64.to_be_bytes());
        b.extend_from_slice(&55i64.to_be_bytes());
        b.extend_from_slice(&3i16.to_be_bytes());
        b.extend_from_slice(&17i32.to_be_bytes());
        b.extend_from_slice(&10i32.to_be_bytes());
        b
    }

    #[test]
    fn parses_every_field_at_its_offset() {
        let h = BatchHeader::parse(&header_bytes()).expect("61 bytes");
        assert_eq!(h.base_offset, 1234);
        assert_eq!(h.batch_length, 49);
        assert_eq!(h.partition_leader_epoch, 7);
        assert_eq!(h.magic, 2);
        assert_eq!(h.crc, 0xdead_beef);
        assert_eq!(h.last_offset_delta, 9);
        assert_eq!(h.base_timestamp, 100);
        assert_eq!(h.max_timestamp, 200);
        assert_eq!(h.producer_id, 55);
        assert_eq!(h.producer_epoch, 3);
        assert_eq!(h.base_sequence, 17);
        assert_eq!(h.record_count, 10);
        assert_eq!(h.compression().ok(), Some(Compression::Zstd));
        assert!(h.is_transactional());
        assert!(h.is_control());
        assert!(!h.has_delete_horizon());
        assert_eq!(h.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(h.last_offset(), 1243);
        assert_eq!(h.next_offset(), 1244);
        assert_eq!(h.size(), 61);
    }

    #[test]
    fn short_input_is_none() {
        assert!(BatchHeader::parse(&header_bytes()[..60]).is_none());
    }

    #[test]
    fn unknown_codec_names_the_batch() {
        let mut b = header_bytes();
        b[22] = 0x05;
        let err = BatchHeader::parse(&b).expect("61 bytes").compression();
        let msg = err.expect_err("id 5 is undefined").to_string();
        assert!(msg.contains("1234") && msg.contains('5'), "{msg}");
    }

    #[test]
    fn codec_ids_round_trip() {
        for c in Compression::ALL {
            assert_eq!(Compression::from_id(c.id()), Some(c));
        }
        assert_eq!(Compression::from_id(7), None);
    }
}
