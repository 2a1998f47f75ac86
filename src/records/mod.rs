//! The `records` layer: Kafka RecordBatch v2 walked in place.
//!
//! A Fetch response carries each partition's data as one byte string of record batches. This
//! module reads it without copying and without allocating per record:
//!
//! - [`Batches`] walks the batches, checking each one's length and CRC32C, refusing message
//!   format v0/v1, and stopping cleanly at a last batch the broker cut short.
//! - [`Batch::records`] iterates a batch's [`Record`]s (offset, timestamp, key, value) as
//!   slices of the fetched bytes, or of a [`Scratch`] buffer when the batch is compressed
//!   (gzip, snappy, lz4 and zstd, all in pure Rust, with a size cap against decompression bombs).
//! - [`AbortedFilter`] decides which batches to skip: control batches, and for `read_committed`
//!   the batches of aborted transactions, as the Java consumer does. [`ControlRecord`] parses
//!   transaction markers.
//! - [`builder`] encodes batches (public on purpose: test data for programs that use the readers).
//!
//! The caller still owns two Java consumer rules: records before the fetch offset (a batch is
//! returned whole even when the fetch starts inside it) are skipped by offset, and the next
//! fetch starts at [`Batches::next_offset`].
//!
//! ```
//! use mm2_offsets::records::{AbortedFilter, Batches, Compression, Scratch, builder::BatchBuilder};
//!
//! let fetched = BatchBuilder::new(0)
//!     .compression(Compression::Gzip)
//!     .record(Some(b"k1"), Some(b"v1"))
//!     .record(Some(b"k2"), None)
//!     .build();
//!
//! let mut scratch = Scratch::new();
//! let mut filter = AbortedFilter::read_uncommitted();
//! let mut seen = Vec::new();
//! for batch in Batches::new(&fetched) {
//!     let batch = batch?;
//!     if !filter.check(&batch, &mut scratch)?.is_deliver() {
//!         continue;
//!     }
//!     for record in batch.records(&mut scratch)? {
//!         let record = record?;
//!         seen.push((record.offset, record.key.map(<[u8]>::to_vec), record.value.is_none()));
//!     }
//! }
//! assert_eq!(seen, [(0, Some(b"k1".to_vec()), false), (1, Some(b"k2".to_vec()), true)]);
//! # Ok::<(), mm2_offsets::records::RecordsError>(())
//! ```
//!
//! # References
//! - <https://kafka.apache.org/documentation/#recordbatch>
//! - KIP-98 (transactions and control batches), KIP-110 (zstd), KIP-57 (lz4 framing)
//! - Kafka `DefaultRecordBatch`, `DefaultRecord`, `ControlRecordType`, and the Java consumer's
//!   `CompletedFetch`

mod aborted;
mod batches;
pub mod builder;
mod compression;
mod control;
mod decompress;
mod error;
mod header;
mod layout;
mod record;
mod varint;

#[cfg(test)]
mod tests;

pub use aborted::{AbortedFilter, BatchVerdict};
pub use batches::{Batch, Batches, WholeBatches, whole_batches};
pub use compression::Compression;
pub use control::{ControlRecord, ControlRecordType};
pub use decompress::{DEFAULT_DECOMPRESSED_LIMIT, Scratch};
pub use error::{DecompressError, RecordProblem, RecordsError};
pub use header::{BatchHeader, TimestampType};
pub use layout::{HEADER_LEN, LOG_OVERHEAD, MAGIC_V2, MIN_BATCH_LENGTH};
pub use record::{Record, RecordHeaders, Records};
