//! Records inside a batch: an iterator that borrows keys and values from the batch bytes.
//!
//! ```text
//! length: varint              (bytes after this field)
//! attributes: int8            (unused)
//! timestampDelta: varlong
//! offsetDelta: varint
//! keyLength: varint           (negative = null key)
//! key: byte[keyLength]
//! valueLength: varint         (negative = null value)
//! value: byte[valueLength]
//! headerCount: varint
//! headers: [headerKeyLength: varint, key, headerValueLength: varint, value] * headerCount
//! ```
//!
//! As in Java's `DefaultRecord`, any negative key or value length means null, a record's fields
//! must take exactly its declared length, and after `recordCount` records no bytes may remain.
//!
//! # References
//! - <https://kafka.apache.org/documentation/#record>
//! - Kafka `DefaultRecord.readFrom`, `DefaultRecordBatch.RecordIterator`

use super::varint::{VarintError, read_varint, read_varlong};
use super::{BatchHeader, RecordProblem, RecordsError, TimestampType};

/// One record, borrowed from the batch (or from the [`Scratch`](super::Scratch) it was
/// decompressed into).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Record<'a> {
    /// Absolute offset: `base_offset + offsetDelta`.
    pub offset: i64,
    /// Absolute timestamp: `base_timestamp + timestampDelta`, or the batch's `max_timestamp`
    /// for `LogAppendTime` batches.
    pub timestamp: i64,
    /// The key, `None` when null.
    pub key: Option<&'a [u8]>,
    /// The value, `None` when null (a tombstone).
    pub value: Option<&'a [u8]>,
    /// The headers section as written: the header count, then each header. Already checked
    /// when the record was read; [`RecordHeaders`] walks it. Empty for a record built by hand
    /// (no headers).
    pub headers: &'a [u8],
    /// The key, the value and the headers as written, their lengths included: from the key's
    /// length to the record's end. Record matching compares them where they lie when they
    /// are written canonically. Empty for a record built by hand.
    pub(crate) fields: &'a [u8],
}

impl<'a> Record<'a> {
    /// The record's headers, in order (repeated keys kept), as `(key, value)` with a null value
    /// as `None`.
    pub fn headers(&self) -> RecordHeaders<'a> {
        RecordHeaders::new(self.headers)
    }

    /// The key, the value and the headers as written ([`Record::fields`]), when every length
    /// and the header count in them is written the one way Java's producer writes it: the
    /// shortest varint, and a null as -1. Two records' canonical fields are equal byte for byte
    /// exactly when their keys, values and headers are. `None` for any other spelling (a
    /// longer varint, a null written as -2, bits Java drops), which decodes alike but is
    /// written differently.
    pub(crate) fn canonical_fields(&self) -> Option<&'a [u8]> {
        let fields = self.fields;
        let mut pos = 0;
        canonical_length(fields, &mut pos, true)?;
        canonical_length(fields, &mut pos, true)?;
        let count = canonical_varint(fields, &mut pos)?;
        for _ in 0..count {
            canonical_length(fields, &mut pos, false)?;
            canonical_length(fields, &mut pos, true)?;
        }
        (pos == fields.len() && !fields.is_empty()).then_some(fields)
    }
}

/// A length at `*pos` written canonically, and the bytes it counts (none for a null), which
/// parsing already checked are there.
fn canonical_length(buf: &[u8], pos: &mut usize, nullable: bool) -> Option<()> {
    match canonical_varint(buf, pos)? {
        -1 if nullable => Some(()),
        len if len >= 0 => {
            *pos = pos.checked_add(len as usize)?;
            Some(())
        }
        _ => None,
    }
}

/// A varint at `*pos` when it is written as [`write_varint`](super::varint::write_varint)
/// writes its value: the shortest form, with no bits Java drops.
///
/// LEB128 is in its shortest form exactly when its last byte holds some bits (or is the only
/// byte), and a fifth byte holds only the four bits a 32-bit value has left: the test on the
/// last byte alone, rather than encoding the value again to compare (which was 2% of record
/// matching's CPU on 1 KiB records).
fn canonical_varint(buf: &[u8], pos: &mut usize) -> Option<i32> {
    let start = *pos;
    let value = read_varint(buf, pos).ok()?;
    let len = *pos - start;
    let last = *buf.get(pos.checked_sub(1)?)?;
    let shortest = len == 1 || (last != 0 && (len < 5 || last <= 0x0f));
    shortest.then_some(value)
}

/// The headers of a record, in the order written: `(key, value)`, a null value as `None`.
///
/// Walks [`Record::headers`]; a section that is not well formed (only possible for a
/// [`Record`] built by hand, since reading a record checks it) ends the walk early, and
/// [`RecordHeaders::complete`] then says so.
///
/// ```
/// use mm2_offsets::records::{Batches, Scratch, builder::{BatchBuilder, RecordSpec}};
///
/// let record = RecordSpec::new(0, Some(b"k"), Some(b"v"))
///     .header(b"trace", Some(b"42"))
///     .header(b"gone", None);
/// let batch = BatchBuilder::new(0).push(record).build();
/// let mut scratch = Scratch::new();
/// let batch = Batches::new(&batch).next().unwrap()?;
/// let record = batch.records(&mut scratch)?.next().unwrap()?;
/// let headers: Vec<_> = record.headers().collect();
/// assert_eq!(headers, [(&b"trace"[..], Some(&b"42"[..])), (&b"gone"[..], None)]);
/// # Ok::<(), mm2_offsets::records::RecordsError>(())
/// ```
#[derive(Clone, Debug)]
pub struct RecordHeaders<'a> {
    data: &'a [u8],
    pos: usize,
    left: i32,
    broken: bool,
}

impl<'a> RecordHeaders<'a> {
    /// Walks a headers section (the count, then the headers). An empty slice has no headers.
    pub fn new(data: &'a [u8]) -> Self {
        let mut pos = 0;
        let (left, broken) = if data.is_empty() {
            (0, false)
        } else {
            match read_varint(data, &mut pos) {
                Ok(count) if count >= 0 => (count, false),
                _ => (0, true),
            }
        };
        RecordHeaders {
            data,
            pos,
            left,
            broken,
        }
    }

    /// The number of headers the section declares (0 for a broken one).
    pub fn declared(&self) -> i32 {
        if self.broken { 0 } else { self.left }
    }

    /// False if the walk stopped at bytes that are not a header (never for a record read from
    /// a batch).
    pub fn complete(&self) -> bool {
        !self.broken
    }

    fn parse(&mut self) -> Result<(&'a [u8], Option<&'a [u8]>), RecordProblem> {
        let data = self.data;
        let mut pos = self.pos;
        let key_len =
            read_varint(data, &mut pos).map_err(|e| varint_problem(e, "header key length"))?;
        if key_len < 0 {
            return Err(RecordProblem::NegativeLength {
                field: "header key length",
                value: key_len,
            });
        }
        let start = pos;
        skip(data, &mut pos, key_len as usize, "header key")?;
        let key = &data[start..pos];
        let value = read_nullable_bytes(data, &mut pos, "header value")?;
        self.pos = pos;
        Ok((key, value))
    }
}

impl<'a> Iterator for RecordHeaders<'a> {
    type Item = (&'a [u8], Option<&'a [u8]>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.broken || self.left <= 0 {
            return None;
        }
        match self.parse() {
            Ok(header) => {
                self.left -= 1;
                Some(header)
            }
            Err(_) => {
                self.broken = true;
                None
            }
        }
    }
}

/// Iterator over the records of one batch. Yields at most `record_count` items and stops after
/// the first error.
#[derive(Clone)]
pub struct Records<'a> {
    data: &'a [u8],
    pos: usize,
    declared: i32,
    read: u32,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
    done: bool,
}

impl<'a> Records<'a> {
    /// Iterates the uncompressed records section `data` of the batch described by `header`.
    pub(crate) fn new(header: &BatchHeader, data: &'a [u8]) -> Result<Records<'a>, RecordsError> {
        if header.record_count < 0 {
            return Err(RecordsError::NegativeRecordCount {
                base_offset: header.base_offset,
                count: header.record_count,
            });
        }
        Ok(Records {
            data,
            pos: 0,
            declared: header.record_count,
            read: 0,
            base_offset: header.base_offset,
            base_timestamp: header.base_timestamp,
            log_append_time: match header.timestamp_type() {
                TimestampType::LogAppendTime => Some(header.max_timestamp),
                TimestampType::CreateTime => None,
            },
            done: header.record_count == 0,
        })
    }

    /// An iterator that yields nothing (a batch with `record_count` 0, read without
    /// decompressing, as Java does).
    pub(crate) fn empty(header: &BatchHeader) -> Records<'a> {
        Records {
            data: &[],
            pos: 0,
            declared: 0,
            read: 0,
            base_offset: header.base_offset,
            base_timestamp: header.base_timestamp,
            log_append_time: None,
            done: true,
        }
    }

    /// Records read so far.
    pub fn read_count(&self) -> u32 {
        self.read
    }

    fn fail(&mut self, err: RecordsError) -> Option<Result<Record<'a>, RecordsError>> {
        self.done = true;
        Some(Err(err))
    }

    fn record_error(&self, problem: RecordProblem) -> RecordsError {
        RecordsError::Record {
            base_offset: self.base_offset,
            index: self.read,
            problem,
        }
    }

    /// Parses one record starting at `self.pos`; on success `self.pos` is past it.
    #[inline(always)]
    fn parse(&mut self) -> Result<Record<'a>, RecordProblem> {
        let data = self.data;
        let mut pos = self.pos;
        let length = read_varint(data, &mut pos).map_err(|e| varint_problem(e, "record length"))?;
        let length = usize::try_from(length).map_err(|_| RecordProblem::NegativeLength {
            field: "record length",
            value: length,
        })?;
        let end = pos
            .checked_add(length)
            .filter(|&end| end <= data.len())
            .ok_or(RecordProblem::FieldOverrun {
                field: "record body",
                needed: length,
                remaining: data.len() - pos,
            })?;
        // Every field below is read from the record's own bytes only.
        let body = &data[..end];

        // Attributes: one byte, unused by format v2.
        if pos >= end {
            return Err(RecordProblem::FieldOverrun {
                field: "attributes",
                needed: 1,
                remaining: 0,
            });
        }
        pos += 1;
        let timestamp_delta =
            read_varlong(body, &mut pos).map_err(|e| varint_problem(e, "timestamp delta"))?;
        let offset_delta =
            read_varint(body, &mut pos).map_err(|e| varint_problem(e, "offset delta"))?;
        let fields_start = pos;
        let key = read_nullable_bytes(body, &mut pos, "key")?;
        let value = read_nullable_bytes(body, &mut pos, "value")?;
        let headers_start = pos;
        let header_count =
            read_varint(body, &mut pos).map_err(|e| varint_problem(e, "header count"))?;
        if header_count < 0 {
            return Err(RecordProblem::NegativeLength {
                field: "header count",
                value: header_count,
            });
        }
        // Each header takes at least two bytes, so this loop is bounded by the record's size.
        for _ in 0..header_count {
            let key_len =
                read_varint(body, &mut pos).map_err(|e| varint_problem(e, "header key length"))?;
            if key_len < 0 {
                return Err(RecordProblem::NegativeLength {
                    field: "header key length",
                    value: key_len,
                });
            }
            skip(body, &mut pos, key_len as usize, "header key")?;
            read_nullable_bytes(body, &mut pos, "header value")?;
        }
        if pos != end {
            return Err(RecordProblem::LengthMismatch {
                declared: length,
                used: length - (end - pos),
            });
        }

        let offset = self
            .base_offset
            .checked_add(i64::from(offset_delta))
            .ok_or(RecordProblem::OffsetOverflow { offset_delta })?;
        let timestamp = match self.log_append_time {
            Some(t) => t,
            // Java adds without overflow checks; do the same rather than reject the record.
            None => self.base_timestamp.wrapping_add(timestamp_delta),
        };
        self.pos = end;
        Ok(Record {
            offset,
            timestamp,
            key,
            value,
            headers: &body[headers_start..end],
            fields: &body[fields_start..end],
        })
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, RecordsError>;

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.pos >= self.data.len() {
            let err = RecordsError::MissingRecords {
                base_offset: self.base_offset,
                declared: self.declared,
                found: self.read,
            };
            return self.fail(err);
        }
        let record = match self.parse() {
            Ok(r) => r,
            Err(problem) => {
                let err = self.record_error(problem);
                return self.fail(err);
            }
        };
        self.read += 1;
        if i64::from(self.read) == i64::from(self.declared) {
            self.done = true;
            // Like Java, the last record is refused if bytes are left over: the declared
            // count and the data disagree, so neither can be trusted.
            if self.pos != self.data.len() {
                return Some(Err(RecordsError::TrailingBytes {
                    base_offset: self.base_offset,
                    declared: self.declared,
                    trailing: self.data.len() - self.pos,
                }));
            }
        }
        Some(Ok(record))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        let left = (i64::from(self.declared) - i64::from(self.read)).max(0);
        // Each record takes at least 7 bytes, so the data also bounds what can come.
        let by_bytes = (self.data.len() - self.pos) / 7 + 1;
        (0, Some((left as usize).min(by_bytes)))
    }
}

impl std::iter::FusedIterator for Records<'_> {}

// Debug shows positions, not the (possibly large) records section.
impl std::fmt::Debug for Records<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("base_offset", &self.base_offset)
            .field("declared", &self.declared)
            .field("read", &self.read)
            .field("pos", &self.pos)
            .field("len", &self.data.len())
            .finish()
    }
}

fn varint_problem(e: VarintError, field: &'static str) -> RecordProblem {
    match e {
        VarintError::Truncated => RecordProblem::TruncatedVarint { field },
        VarintError::TooLong => RecordProblem::VarintTooLong { field },
    }
}

#[inline(always)]
fn skip(
    body: &[u8],
    pos: &mut usize,
    len: usize,
    field: &'static str,
) -> Result<(), RecordProblem> {
    let remaining = body.len() - *pos;
    if len > remaining {
        return Err(RecordProblem::FieldOverrun {
            field,
            needed: len,
            remaining,
        });
    }
    *pos += len;
    Ok(())
}

#[inline(always)]
fn read_nullable_bytes<'a>(
    body: &'a [u8],
    pos: &mut usize,
    field: &'static str,
) -> Result<Option<&'a [u8]>, RecordProblem> {
    let len = read_varint(body, pos).map_err(|e| varint_problem(e, field))?;
    if len < 0 {
        return Ok(None);
    }
    let start = *pos;
    skip(body, pos, len as usize, field)?;
    Ok(Some(&body[start..*pos]))
}

#[cfg(test)]
mod canonical_tests {
    use super::*;
    use proptest::prelude::*;

    /// The varint's canonical spelling by definition: what `write_varint` writes for the
    /// value read (the test `canonical_varint` replaced).
    fn rewritten(buf: &[u8]) -> Option<i32> {
        let mut pos = 0;
        let value = read_varint(buf, &mut pos).ok()?;
        let mut out = Vec::new();
        super::super::varint::write_varint(&mut out, value);
        (out[..] == buf[..pos]).then_some(value)
    }

    proptest! {
        /// Any 1 to 6 bytes: the last-byte test accepts exactly what writing the value again
        /// reproduces.
        #[test]
        fn the_last_byte_decides_as_rewriting_does(bytes in proptest::collection::vec(any::<u8>(), 1..7)) {
            let mut pos = 0;
            prop_assert_eq!(canonical_varint(&bytes, &mut pos), rewritten(&bytes));
        }

        /// Every value's own spelling is canonical.
        #[test]
        fn every_written_value_is_canonical(value in any::<i32>()) {
            let mut out = Vec::new();
            super::super::varint::write_varint(&mut out, value);
            let mut pos = 0;
            prop_assert_eq!(canonical_varint(&out, &mut pos), Some(value));
            prop_assert_eq!(pos, out.len());
        }
    }
}
