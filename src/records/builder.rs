//! Encoding RecordBatch v2: public API on purpose, for programs that feed
//! [`BatchTranslator`](crate::translate::BatchTranslator) or test their own readers, and for our
//! tests, benches and fuzz seeds.
//!
//! Not used on the read path. It writes what Kafka's Java producer writes (and, through public
//! fields, what it would never write, so tests can build malformed batches), with every codec
//! through the same pure-Rust crates the reader uses.
//!
//! ```
//! use mm2_offsets::records::{Batches, Compression, Scratch, builder::BatchBuilder};
//!
//! let bytes = BatchBuilder::new(100)
//!     .compression(Compression::Zstd)
//!     .record(Some(b"key"), Some(b"value"))
//!     .record(Some(b"gone"), None)
//!     .build();
//! let batch = Batches::new(&bytes).next().unwrap().unwrap();
//! let mut scratch = Scratch::new();
//! let records: Vec<_> = batch.records(&mut scratch).unwrap().map(Result::unwrap).collect();
//! assert_eq!(records[1].offset, 101);
//! assert_eq!(records[1].value, None);
//! ```
//!
//! # References
//! - <https://kafka.apache.org/documentation/#recordbatch>
//! - Kafka `MemoryRecordsBuilder`, `DefaultRecord.writeTo`, `EndTransactionMarker`

use std::io::Write;

use super::layout::{ATTRIBUTES_OFFSET, CRC_OFFSET};
use super::{Compression, ControlRecordType, MIN_BATCH_LENGTH};

pub use super::varint::{write_varint, write_varlong};

/// The base timestamp a [`BatchBuilder`] starts from: 2023-11-14T22:13:20Z in milliseconds.
/// Not public: a fixed clock for fixtures is no API (a caller sets its own with the builder).
const FIXTURE_TIMESTAMP: i64 = 1_700_000_000_000;

/// How to frame snappy output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnappyFraming {
    /// One raw snappy block (some non-Java producers).
    Raw,
    /// xerial `SnappyOutputStream` framing, as the Java client writes it.
    Xerial,
}

/// One record to encode.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordSpec {
    /// Offset relative to the batch's base offset.
    pub offset_delta: i32,
    /// Timestamp relative to the batch's base timestamp.
    pub timestamp_delta: i64,
    /// Key; `None` is null.
    pub key: Option<Vec<u8>>,
    /// Value; `None` is null.
    pub value: Option<Vec<u8>>,
    /// Headers as (key, value).
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl RecordSpec {
    /// A record at `offset_delta` (timestamp delta the same) without headers.
    pub fn new(offset_delta: i32, key: Option<&[u8]>, value: Option<&[u8]>) -> RecordSpec {
        RecordSpec {
            offset_delta,
            timestamp_delta: i64::from(offset_delta),
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
            headers: Vec::new(),
        }
    }

    /// Adds a header.
    pub fn header(mut self, key: &[u8], value: Option<&[u8]>) -> RecordSpec {
        self.headers.push((key.to_vec(), value.map(<[u8]>::to_vec)));
        self
    }

    /// Appends the encoded record (length prefix included) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut body = Vec::new();
        body.push(0); // attributes
        write_varlong(&mut body, self.timestamp_delta);
        write_varint(&mut body, self.offset_delta);
        write_nullable(&mut body, self.key.as_deref());
        write_nullable(&mut body, self.value.as_deref());
        write_varint(&mut body, len_i32(self.headers.len()));
        for (key, value) in &self.headers {
            write_nullable(&mut body, Some(key));
            write_nullable(&mut body, value.as_deref());
        }
        write_varint(out, len_i32(body.len()));
        out.extend_from_slice(&body);
    }
}

/// Builds one RecordBatch v2. Fields left `None` are derived from the records.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BatchBuilder {
    /// `baseOffset`.
    pub base_offset: i64,
    /// `partitionLeaderEpoch`.
    pub partition_leader_epoch: i32,
    /// `baseTimestamp`.
    pub base_timestamp: i64,
    /// `maxTimestamp`; by default the largest record timestamp.
    pub max_timestamp: Option<i64>,
    /// `producerId`; -1 when not idempotent.
    pub producer_id: i64,
    /// `producerEpoch`.
    pub producer_epoch: i16,
    /// `baseSequence`.
    pub base_sequence: i32,
    /// Codec for the records section.
    pub compression: Compression,
    /// Framing when `compression` is snappy.
    pub snappy_framing: SnappyFraming,
    /// Transactional attribute bit.
    pub transactional: bool,
    /// Control attribute bit.
    pub control: bool,
    /// LogAppendTime attribute bit.
    pub log_append_time: bool,
    /// `lastOffsetDelta`; by default the last record's offset delta.
    pub last_offset_delta: Option<i32>,
    /// `recordCount`; by default the number of records.
    pub record_count: Option<i32>,
    /// The records, in order.
    pub records: Vec<RecordSpec>,
}

impl BatchBuilder {
    /// An empty, uncompressed, non-transactional batch at `base_offset`.
    pub fn new(base_offset: i64) -> BatchBuilder {
        BatchBuilder {
            base_offset,
            partition_leader_epoch: 0,
            base_timestamp: FIXTURE_TIMESTAMP,
            max_timestamp: None,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            compression: Compression::None,
            snappy_framing: SnappyFraming::Xerial,
            transactional: false,
            control: false,
            log_append_time: false,
            last_offset_delta: None,
            record_count: None,
            records: Vec::new(),
        }
    }

    /// Sets the codec.
    pub fn compression(mut self, compression: Compression) -> BatchBuilder {
        self.compression = compression;
        self
    }

    /// Marks the batch transactional, written by `producer_id` at `producer_epoch`.
    pub fn transactional(mut self, producer_id: i64, producer_epoch: i16) -> BatchBuilder {
        self.transactional = true;
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = 0;
        self
    }

    /// Marks the batch as a control batch.
    pub fn control(mut self) -> BatchBuilder {
        self.control = true;
        self
    }

    /// Marks the batch LogAppendTime, appended at `append_time`.
    pub fn log_append_time(mut self, append_time: i64) -> BatchBuilder {
        self.log_append_time = true;
        self.max_timestamp = Some(append_time);
        self
    }

    /// Adds a record at the next offset delta.
    pub fn record(self, key: Option<&[u8]>, value: Option<&[u8]>) -> BatchBuilder {
        let delta = len_i32(self.records.len());
        self.push(RecordSpec::new(delta, key, value))
    }

    /// Adds a record as given.
    pub fn push(mut self, record: RecordSpec) -> BatchBuilder {
        self.records.push(record);
        self
    }

    /// The encoded batch.
    pub fn build(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_to(&mut out);
        out
    }

    /// Appends the encoded batch to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let mut raw = Vec::new();
        for record in &self.records {
            record.encode(&mut raw);
        }
        let section = match (self.compression, self.snappy_framing) {
            (Compression::None, _) => raw,
            (Compression::Snappy, framing) => compress_snappy(&raw, framing),
            (codec, _) => compress(codec, &raw),
        };
        let last_offset_delta = self
            .last_offset_delta
            .unwrap_or_else(|| self.records.last().map_or(0, |r| r.offset_delta));
        let max_timestamp = self.max_timestamp.unwrap_or_else(|| {
            self.records
                .iter()
                .map(|r| self.base_timestamp.wrapping_add(r.timestamp_delta))
                .max()
                .unwrap_or(-1)
        });
        let mut attributes = i16::from(self.compression.id());
        if self.log_append_time {
            attributes |= 0x08;
        }
        if self.transactional {
            attributes |= 0x10;
        }
        if self.control {
            attributes |= 0x20;
        }

        let start = out.len();
        out.extend_from_slice(&self.base_offset.to_be_bytes());
        out.extend_from_slice(&(MIN_BATCH_LENGTH + len_i32(section.len())).to_be_bytes());
        out.extend_from_slice(&self.partition_leader_epoch.to_be_bytes());
        out.push(2);
        out.extend_from_slice(&[0; 4]); // CRC, filled in below
        out.extend_from_slice(&attributes.to_be_bytes());
        out.extend_from_slice(&last_offset_delta.to_be_bytes());
        out.extend_from_slice(&self.base_timestamp.to_be_bytes());
        out.extend_from_slice(&max_timestamp.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.to_be_bytes());
        out.extend_from_slice(&self.base_sequence.to_be_bytes());
        let count = self
            .record_count
            .unwrap_or_else(|| len_i32(self.records.len()));
        out.extend_from_slice(&count.to_be_bytes());
        out.extend_from_slice(&section);
        let crc = crc32c::crc32c(&out[start + ATTRIBUTES_OFFSET..]);
        out[start + CRC_OFFSET..start + CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    }
}

/// A transaction marker batch as the broker writes it at `offset`: a transactional control
/// batch holding one record whose key is `version 0, kind` and whose value is
/// `version 0, coordinator epoch 0`.
pub fn end_txn_marker(
    offset: i64,
    producer_id: i64,
    producer_epoch: i16,
    kind: ControlRecordType,
) -> Vec<u8> {
    let mut key = vec![0, 0];
    key.extend_from_slice(&kind.id().to_be_bytes());
    let value = [0u8, 0, 0, 0, 0, 0];
    let mut b = BatchBuilder::new(offset)
        .transactional(producer_id, producer_epoch)
        .control()
        .record(Some(&key), Some(&value));
    b.base_sequence = -1;
    b.build()
}

/// Compresses `data` as a Kafka producer would for `codec` (snappy in xerial framing, lz4 as a
/// frame with independent 64 KiB blocks, as Java writes). `Compression::None` returns a copy.
pub fn compress(codec: Compression, data: &[u8]) -> Vec<u8> {
    match codec {
        Compression::None => data.to_vec(),
        Compression::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(data).expect("writing to a Vec cannot fail");
            enc.finish().expect("writing to a Vec cannot fail")
        }
        Compression::Snappy => compress_snappy(data, SnappyFraming::Xerial),
        Compression::Lz4 => {
            use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
            let info = FrameInfo::new()
                .block_size(BlockSize::Max64KB)
                .block_mode(BlockMode::Independent);
            let mut enc = FrameEncoder::with_frame_info(info, Vec::new());
            enc.write_all(data).expect("writing to a Vec cannot fail");
            enc.finish().expect("writing to a Vec cannot fail")
        }
        Compression::Zstd => {
            ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
        }
    }
}

/// Compresses `data` with snappy in the given framing. Xerial chunks are 32 KiB of input, the
/// Java client's default block size.
pub fn compress_snappy(data: &[u8], framing: SnappyFraming) -> Vec<u8> {
    let mut encoder = snap::raw::Encoder::new();
    let mut block = |input: &[u8]| {
        encoder
            .compress_vec(input)
            .expect("snappy accepts any input under 4 GiB")
    };
    match framing {
        SnappyFraming::Raw => block(data),
        SnappyFraming::Xerial => {
            let mut out = vec![0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
            out.extend_from_slice(&1i32.to_be_bytes());
            out.extend_from_slice(&1i32.to_be_bytes());
            for chunk in data.chunks(32 * 1024) {
                let packed = block(chunk);
                out.extend_from_slice(&len_i32(packed.len()).to_be_bytes());
                out.extend_from_slice(&packed);
            }
            out
        }
    }
}

fn write_nullable(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        None => write_varint(out, -1),
        Some(b) => {
            write_varint(out, len_i32(b.len()));
            out.extend_from_slice(b);
        }
    }
}

fn len_i32(len: usize) -> i32 {
    i32::try_from(len).expect("fixture sizes fit in an i32")
}
