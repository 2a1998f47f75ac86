//! Errors of the `records` layer. Every message names the batch (by base offset) and says what to
//! do, because these bytes come from a broker and a person has to act on the failure.

use std::fmt;

use super::compression::Compression;

/// Why a records section, a batch or a record could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordsError {
    /// A v0/v1 message set (Kafka before 0.11), which this crate does not read.
    #[error(
        "record batch at offset {base_offset} uses message format v{magic}, which is not supported \
         (only v2, written by Kafka 0.11 and later); upgrade the topic's message.format.version to \
         0.11 or later and wait for older segments to expire, or read it with a Java client"
    )]
    UnsupportedMagic {
        /// Offset in the batch's first field.
        base_offset: i64,
        /// The magic byte found (0 or 1).
        magic: i8,
    },
    /// A magic byte no Kafka version writes.
    #[error(
        "record batch at offset {base_offset} has magic byte {magic}, not 2; the fetch response is \
         corrupt or was written by a newer Kafka than this tool understands"
    )]
    UnknownMagic {
        /// Offset in the batch's first field.
        base_offset: i64,
        /// The magic byte found.
        magic: i8,
    },
    /// `batchLength` cannot even hold the v2 header.
    #[error(
        "record batch at offset {base_offset} declares a length of {length} bytes, smaller than \
         the {min}-byte v2 header; the fetch response is corrupt",
        min = super::layout::MIN_BATCH_LENGTH
    )]
    LengthTooSmall {
        /// Offset in the batch's first field.
        base_offset: i64,
        /// The declared `batchLength`.
        length: i32,
    },
    /// The stored CRC32C does not match the bytes.
    #[error(
        "record batch at offset {base_offset} failed its CRC32C check (stored {stored:#010x}, \
         computed {computed:#010x}); the data was corrupted on the broker or in transit: fetch it \
         again, and if it persists check the broker's log segment"
    )]
    CrcMismatch {
        /// Batch base offset.
        base_offset: i64,
        /// CRC in the header.
        stored: u32,
        /// CRC of the bytes received.
        computed: u32,
    },
    /// Compression attribute bits 5-7, which Kafka does not define.
    #[error(
        "record batch at offset {base_offset} uses compression codec id {id}, which Kafka does not \
         define; the batch is corrupt or from a newer Kafka"
    )]
    UnknownCompression {
        /// Batch base offset.
        base_offset: i64,
        /// The codec id (0-7).
        id: u8,
    },
    /// The compressed records section could not be decompressed.
    #[error("record batch at offset {base_offset}: {codec} decompression failed: {source}")]
    Decompress {
        /// Batch base offset.
        base_offset: i64,
        /// The batch's codec.
        codec: Compression,
        /// What went wrong.
        #[source]
        source: DecompressError,
    },
    /// `recordCount` is negative.
    #[error("record batch at offset {base_offset} declares {count} records; the batch is corrupt")]
    NegativeRecordCount {
        /// Batch base offset.
        base_offset: i64,
        /// The declared count.
        count: i32,
    },
    /// The records section ended before `recordCount` records were read.
    #[error(
        "record batch at offset {base_offset} declares {declared} records but its data ends after \
         {found}; the batch is corrupt"
    )]
    MissingRecords {
        /// Batch base offset.
        base_offset: i64,
        /// The declared count.
        declared: i32,
        /// Records fully present.
        found: u32,
    },
    /// Bytes were left after `recordCount` records.
    #[error(
        "record batch at offset {base_offset} has {trailing} bytes after its {declared} declared \
         records; the batch is corrupt"
    )]
    TrailingBytes {
        /// Batch base offset.
        base_offset: i64,
        /// The declared count.
        declared: i32,
        /// Bytes left over.
        trailing: usize,
    },
    /// One record inside a batch is malformed.
    #[error(
        "record batch at offset {base_offset}, record #{index}: {problem}; the batch is corrupt"
    )]
    Record {
        /// Batch base offset.
        base_offset: i64,
        /// Position of the record in the batch (0-based).
        index: u32,
        /// What was wrong.
        problem: RecordProblem,
    },
    /// A control record's key is not a valid `version:int16 type:int16`.
    #[error("control record at offset {offset}: {problem}; the batch is corrupt")]
    ControlRecord {
        /// The record's absolute offset.
        offset: i64,
        /// What was wrong.
        problem: &'static str,
    },
}

/// What was wrong with one record (see [`RecordsError::Record`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordProblem {
    /// A varint ran past the data it lives in.
    TruncatedVarint {
        /// The field being read.
        field: &'static str,
    },
    /// A varint longer than 5 bytes (or a varlong longer than 10).
    VarintTooLong {
        /// The field being read.
        field: &'static str,
    },
    /// A length field is negative where that is not allowed.
    NegativeLength {
        /// The field being read.
        field: &'static str,
        /// The value found.
        value: i32,
    },
    /// A field's bytes run past the end of the record.
    FieldOverrun {
        /// The field being read.
        field: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left.
        remaining: usize,
    },
    /// The record's declared length differs from what its fields take.
    LengthMismatch {
        /// The record's declared length.
        declared: usize,
        /// Bytes its fields take.
        used: usize,
    },
    /// `baseOffset + offsetDelta` does not fit in an i64.
    OffsetOverflow {
        /// The record's offset delta.
        offset_delta: i32,
    },
}

impl fmt::Display for RecordProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RecordProblem::TruncatedVarint { field } => {
                write!(f, "varint {field} runs past the end of the data")
            }
            RecordProblem::VarintTooLong { field } => write!(f, "varint {field} is too long"),
            RecordProblem::NegativeLength { field, value } => {
                write!(f, "{field} is negative ({value})")
            }
            RecordProblem::FieldOverrun {
                field,
                needed,
                remaining,
            } => write!(
                f,
                "{field} needs {needed} bytes but only {remaining} remain in the record"
            ),
            RecordProblem::LengthMismatch { declared, used } => write!(
                f,
                "record declares {declared} bytes but its fields take {used}"
            ),
            RecordProblem::OffsetOverflow { offset_delta } => {
                write!(f, "offset delta {offset_delta} overflows the 64-bit offset")
            }
        }
    }
}

/// Why a compressed records section could not be decompressed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecompressError {
    /// The output would exceed the configured limit (a decompression bomb, or a limit too low).
    #[error(
        "decompressed data exceeds the limit of {limit} bytes; if the data is trusted, raise the \
         decompression limit"
    )]
    TooLarge {
        /// The limit in force.
        limit: usize,
    },
    /// The input ended before the compressed stream did.
    #[error("the compressed data ends before the end of its stream")]
    Truncated,
    /// The compressed data is malformed or fails its checksum.
    #[error("{0}")]
    Invalid(String),
}
