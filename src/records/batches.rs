//! Walking the record batches of one partition's fetched records section, in place.
//!
//! A Fetch response gives each partition's records as one byte string of back-to-back batches.
//! The broker fills the response by bytes, so the last batch may be cut short; that is normal,
//! not corruption: [`Batches`] stops cleanly before it, and [`Batches::truncated_tail`] and
//! [`Batches::next_offset`] tell the caller where to fetch next. Everything else that does not
//! add up (a length too small for a header, a CRC mismatch, a v0/v1 message set) is an error.
//!
//! # References
//! - <https://kafka.apache.org/documentation/#recordbatch>
//! - <https://kafka.apache.org/protocol#protocol_message_sets> (partial messages at the end)
//! - Kafka `ByteBufferLogInputStream.nextBatch`, `DefaultRecordBatch.ensureValid`

use std::fmt;

use super::layout::{ATTRIBUTES_OFFSET, MAGIC_OFFSET};
use super::{
    BatchHeader, Compression, HEADER_LEN, LOG_OVERHEAD, MAGIC_V2, MIN_BATCH_LENGTH, Records,
    RecordsError, Scratch,
};

/// One complete, CRC-checked record batch, borrowed from the fetched bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Batch<'a> {
    header: BatchHeader,
    bytes: &'a [u8],
}

impl<'a> Batch<'a> {
    /// The decoded header.
    pub fn header(&self) -> &BatchHeader {
        &self.header
    }

    /// The whole batch, header included.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The records section after the 61-byte header (compressed if the batch is).
    pub fn records_section(&self) -> &'a [u8] {
        &self.bytes[HEADER_LEN..]
    }

    /// Shorthand for `header().base_offset`.
    pub fn base_offset(&self) -> i64 {
        self.header.base_offset
    }

    /// Shorthand for `header().next_offset()`.
    pub fn next_offset(&self) -> i64 {
        self.header.next_offset()
    }

    /// Shorthand for `header().is_control()`.
    pub fn is_control(&self) -> bool {
        self.header.is_control()
    }

    /// Iterates the batch's records, decompressing into `scratch` first if needed.
    ///
    /// Uncompressed records borrow from the fetched bytes, compressed ones from `scratch`.
    /// A batch declaring zero records yields nothing without being decompressed (as in Java).
    pub fn records<'s>(&self, scratch: &'s mut Scratch) -> Result<Records<'s>, RecordsError>
    where
        'a: 's,
    {
        let header = &self.header;
        if header.record_count == 0 {
            return Ok(Records::empty(header));
        }
        let section = self.records_section();
        match header.compression()? {
            Compression::None => Records::new(header, section),
            codec => {
                let data = scratch.decompress(codec, section).map_err(|source| {
                    RecordsError::Decompress {
                        base_offset: header.base_offset,
                        codec,
                        source,
                    }
                })?;
                Records::new(header, data)
            }
        }
    }
}

// Debug shows sizes, not the bytes: a fetched section can be megabytes.
impl fmt::Debug for Batch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch")
            .field("header", &self.header)
            .field("len", &self.bytes.len())
            .finish()
    }
}

/// Iterator over the batches of a fetched records section.
///
/// Yields every complete batch, control batches included (their offsets still advance the
/// read position; see [`AbortedFilter`](super::AbortedFilter) to decide which to skip). Stops
/// after the first error.
///
/// ```
/// use mm2_offsets::records::{Batches, Scratch, builder::BatchBuilder};
///
/// let mut fetched = BatchBuilder::new(10).record(Some(b"k"), Some(b"v")).build();
/// fetched.extend_from_slice(&BatchBuilder::new(11).record(None, Some(b"w")).build()[..30]);
///
/// let mut scratch = Scratch::new();
/// let mut batches = Batches::new(&fetched);
/// let batch = batches.next().unwrap().unwrap();
/// let record = batch.records(&mut scratch).unwrap().next().unwrap().unwrap();
/// assert_eq!((record.offset, record.value), (10, Some(&b"v"[..])));
/// assert!(batches.next().is_none());
/// // The second batch was cut short by the broker: fetch again from offset 11.
/// assert!(batches.truncated_tail());
/// assert_eq!(batches.next_offset(), Some(11));
/// ```
#[derive(Clone)]
pub struct Batches<'a> {
    data: &'a [u8],
    pos: usize,
    check_crc: bool,
    finished: bool,
    truncated: bool,
    next_offset: Option<i64>,
}

impl<'a> Batches<'a> {
    /// Walks `data`, checking each batch's CRC32C.
    pub fn new(data: &'a [u8]) -> Batches<'a> {
        Batches {
            data,
            pos: 0,
            check_crc: true,
            finished: false,
            truncated: false,
            next_offset: None,
        }
    }

    /// Turns the CRC32C check on or off (Java's `check.crcs`; on by default).
    pub fn check_crc(mut self, check: bool) -> Batches<'a> {
        self.check_crc = check;
        self
    }

    /// Bytes of complete batches yielded so far.
    pub fn consumed(&self) -> usize {
        self.pos
    }

    /// Whether iteration ended at a batch the broker cut short. If no batch was yielded at all
    /// the batch is larger than the fetch size allowed: fetch again with a larger size.
    pub fn truncated_tail(&self) -> bool {
        self.truncated
    }

    /// The offset after the last batch yielded (`base_offset + last_offset_delta + 1`): where the
    /// next fetch starts. `None` before any batch.
    pub fn next_offset(&self) -> Option<i64> {
        self.next_offset
    }

    fn fail(&mut self, err: RecordsError) -> Option<Result<Batch<'a>, RecordsError>> {
        self.finished = true;
        Some(Err(err))
    }

    fn stop_truncated(&mut self) -> Option<Result<Batch<'a>, RecordsError>> {
        self.finished = true;
        self.truncated = true;
        None
    }
}

impl<'a> Iterator for Batches<'a> {
    type Item = Result<Batch<'a>, RecordsError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.finished {
            return None;
        }
        let rest = &self.data[self.pos..];
        if rest.is_empty() {
            self.finished = true;
            return None;
        }
        let size = match frame(rest) {
            Ok(Some(size)) => size,
            Ok(None) => return self.stop_truncated(),
            Err(err) => return self.fail(err),
        };
        let bytes = &rest[..size];
        let Some(header) = BatchHeader::parse(bytes) else {
            // Unreachable: size >= HEADER_LEN was checked above.
            return self.stop_truncated();
        };
        if self.check_crc {
            let computed = crc32c::crc32c(&bytes[ATTRIBUTES_OFFSET..]);
            if computed != header.crc {
                return self.fail(RecordsError::CrcMismatch {
                    base_offset: header.base_offset,
                    stored: header.crc,
                    computed,
                });
            }
        }
        self.pos += size;
        self.next_offset = Some(header.next_offset());
        Some(Ok(Batch { header, bytes }))
    }
}

impl std::iter::FusedIterator for Batches<'_> {}

/// The size of the batch at the front of `rest`, from its fixed-position framing fields only
/// (base offset, batch length, magic): `None` when the broker cut it short. This is the crate's
/// one framing rule, shared by [`Batches`] and [`whole_batches`], so the client's cut of a Fetch
/// response and the reader's walk over it can never disagree.
fn frame(rest: &[u8]) -> Result<Option<usize>, RecordsError> {
    if rest.len() < LOG_OVERHEAD {
        return Ok(None);
    }
    let base_offset = i64::from_be_bytes(rest[..8].try_into().unwrap_or([0; 8]));
    let length = i32::from_be_bytes(rest[8..12].try_into().unwrap_or([0; 4]));
    // Check the magic before the length, so a v0/v1 message set (whose sizes differ) gets
    // the error that says what to do.
    if let Some(&magic) = rest.get(MAGIC_OFFSET) {
        let magic = magic as i8;
        match magic {
            MAGIC_V2 => {}
            0 | 1 => return Err(RecordsError::UnsupportedMagic { base_offset, magic }),
            _ => return Err(RecordsError::UnknownMagic { base_offset, magic }),
        }
    }
    if length < MIN_BATCH_LENGTH {
        return Err(RecordsError::LengthTooSmall {
            base_offset,
            length,
        });
    }
    let size = LOG_OVERHEAD + length as usize;
    Ok((size <= rest.len()).then_some(size))
}

/// Where the whole batches at the front of a fetched records section end, found by
/// [`Batches`]' framing rule without decoding or checking them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WholeBatches {
    /// The bytes to hand to the reader: the whole batches, and, when one is
    /// [`malformed`](Self::malformed), everything from it on, so that [`Batches`] reports it.
    pub bytes: usize,
    /// The offset after the last whole batch (`None` if there is none): where the next read
    /// starts.
    pub next_offset: Option<i64>,
    /// Whether framing stopped at a batch that can never frame (a bad length or magic) rather
    /// than at the end or at a batch the broker cut short. Reading further cannot get past it.
    pub malformed: bool,
}

/// Frames the whole batches at the front of `data` (a Fetch response's records for one
/// partition), as [`Batches`] will walk them. A batch the broker cut short at the end is left
/// out, to be fetched again.
///
/// ```
/// use mm2_offsets::records::{whole_batches, builder::BatchBuilder};
///
/// let mut fetched = BatchBuilder::new(10).record(None, Some(b"v")).build();
/// let whole = fetched.len();
/// fetched.extend_from_slice(&BatchBuilder::new(11).record(None, Some(b"w")).build()[..30]);
/// let framed = whole_batches(&fetched);
/// assert_eq!((framed.bytes, framed.next_offset, framed.malformed), (whole, Some(11), false));
/// ```
pub fn whole_batches(data: &[u8]) -> WholeBatches {
    let mut pos = 0;
    let mut next_offset = None;
    loop {
        let rest = &data[pos..];
        match frame(rest) {
            Ok(Some(size)) => {
                // A whole frame holds at least the 61-byte header, which always parses.
                if let Some(header) = BatchHeader::parse(&rest[..size]) {
                    next_offset = Some(header.next_offset());
                }
                pos += size;
            }
            Ok(None) => {
                return WholeBatches {
                    bytes: pos,
                    next_offset,
                    malformed: false,
                };
            }
            Err(_) => {
                return WholeBatches {
                    bytes: data.len(),
                    next_offset,
                    malformed: true,
                };
            }
        }
    }
}

impl fmt::Debug for Batches<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batches")
            .field("len", &self.data.len())
            .field("consumed", &self.pos)
            .field("check_crc", &self.check_crc)
            .field("finished", &self.finished)
            .field("truncated", &self.truncated)
            .field("next_offset", &self.next_offset)
            .finish()
    }
}
