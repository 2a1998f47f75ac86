//! Where the fields of a v2 record batch are: the sizes and offsets every reader and writer of
//! batches shares.
//!
//! # References
//! - <https://kafka.apache.org/documentation/#recordbatch>
//! - Kafka `DefaultRecordBatch`

/// Bytes before `partitionLeaderEpoch`: `baseOffset` and `batchLength` (Java's `LOG_OVERHEAD`).
pub const LOG_OVERHEAD: usize = 12;
/// Size of the whole v2 batch header; records start here (Java's `RECORD_BATCH_OVERHEAD`).
pub const HEADER_LEN: usize = 61;
/// The smallest valid `batchLength`: a header with no records.
pub const MIN_BATCH_LENGTH: i32 = (HEADER_LEN - LOG_OVERHEAD) as i32;
/// The only message format this crate reads.
pub const MAGIC_V2: i8 = 2;

pub(crate) const MAGIC_OFFSET: usize = 16;
pub(crate) const CRC_OFFSET: usize = 17;
/// The CRC covers everything from the attributes to the end of the batch.
pub(crate) const ATTRIBUTES_OFFSET: usize = 21;
