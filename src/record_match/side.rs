//! What was read of one side (the upstream partition, or its replica downstream): the data
//! records, each as its content's encoding (where it lies in the Fetch answer it came in, or
//! copied into one buffer for the side) and its digest, which offset ranges were read
//! completely, and which offsets inside them
//! hold neither a data record nor a transaction marker (holes: records removed by compaction,
//! or never there).

use bytes::Bytes;

use super::digest::{self, Digest};
use crate::records::Record;

/// `gap_before` of a record with no read predecessor: the first of its interval.
pub(crate) const UNKNOWN_GAP: u32 = u32::MAX;

/// One data record, as matching sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rec {
    pub(crate) offset: i64,
    pub(crate) timestamp: i64,
    pub(crate) digest: Digest,
    /// Where its content's encoding lies ([`Side::content`]): `(buffer, at, len)`, buffer 0
    /// being [`Side::contents`] and `k` the `k`-th of [`Side::chunks`] (empty for a record
    /// built by a test with a digest alone).
    pub(crate) content: (u32, usize, u32),
    /// Not part of an aborted transaction (upstream; downstream every record was written).
    pub(crate) committed: bool,
    /// Offsets between the previous data record of the same read interval and this one that
    /// are neither data nor markers, or [`UNKNOWN_GAP`].
    pub(crate) gap_before: u32,
}

/// One side's read.
#[derive(Clone, Debug, Default)]
pub(crate) struct Side {
    /// Sorted by offset, each offset once.
    pub(crate) records: Vec<Rec>,
    /// `[start, end)` ranges read completely, sorted and disjoint.
    pub(crate) covered: Vec<(i64, i64)>,
    /// `[start, end)` holes inside `covered`, sorted and disjoint.
    pub(crate) holes: Vec<(i64, i64)>,
    /// A batch with LogAppendTime timestamps was seen: timestamps say nothing here.
    pub(crate) log_append_time: bool,
    /// Record bytes fetched.
    pub(crate) bytes: u64,
    /// The content encodings ([`digest::encode`]) of the records not written canonically in
    /// the bytes fetched (those of compressed batches, mostly), one after another: kept so
    /// that a digest match is confirmed byte for byte. At most the size of the record bytes
    /// fetched, so bounded by the side's read budget.
    pub(crate) contents: Vec<u8>,
    /// The Fetch answers' record bytes that hold encodings of records read (uncompressed
    /// batches), kept instead of copying the encodings out: shared, not copied, and bounded by
    /// the read budget too.
    pub(crate) chunks: Vec<Bytes>,
}

impl Side {
    /// Whether `[start, end)` was read completely.
    pub(crate) fn covers(&self, start: i64, end: i64) -> bool {
        if start >= end {
            return true;
        }
        let at = self.covered.partition_point(|&(_, e)| e <= start);
        self.covered
            .get(at)
            .is_some_and(|&(s, e)| s <= start && end <= e)
    }

    /// Whether a hole lies in `[start, end)`.
    pub(crate) fn has_hole(&self, start: i64, end: i64) -> bool {
        let at = self.holes.partition_point(|&(_, e)| e <= start);
        self.holes.get(at).is_some_and(|&(s, _)| s < end)
    }

    /// `r`'s content encoding (a record of this side).
    pub(crate) fn content(&self, r: &Rec) -> &[u8] {
        let (buffer, at, len) = r.content;
        let bytes: &[u8] = match buffer {
            0 => &self.contents,
            k => self.chunks.get(k as usize - 1).map_or(&[], |c| &c[..]),
        };
        bytes.get(at..at + len as usize).unwrap_or_default()
    }

    /// The index of the first record at or after `offset`.
    pub(crate) fn first_at(&self, offset: i64) -> usize {
        self.records.partition_point(|r| r.offset < offset)
    }

    /// The index of the record at `offset`, if one was read there, looked for at `hint` first
    /// (a walk in offset order mostly knows where the next record lies).
    pub(crate) fn index_of(&self, offset: i64, hint: usize) -> Option<usize> {
        if self.records.get(hint).is_some_and(|r| r.offset == offset) {
            return Some(hint);
        }
        let at = self.first_at(offset);
        self.records
            .get(at)
            .is_some_and(|r| r.offset == offset)
            .then_some(at)
    }

    /// The record at `offset`, if one was read there.
    #[cfg(test)]
    pub(crate) fn at(&self, offset: i64) -> Option<&Rec> {
        self.records
            .get(self.first_at(offset))
            .filter(|r| r.offset == offset)
    }
}

/// Builds a [`Side`] from what a read delivers, interval by interval, in offset order.
#[derive(Debug, Default)]
pub(crate) struct SideBuilder {
    side: Side,
    /// The open interval: its start, the next offset not yet accounted for, and the
    /// unexplained offsets since the last data record (or [`UNKNOWN_GAP`] before the first).
    open: Option<(i64, i64, u32)>,
    /// A record lies in the last of [`Side::chunks`] (else the next chunk replaces it).
    chunk_used: bool,
}

impl SideBuilder {
    /// Opens an interval at `start` (at or after the end of the previous one).
    pub(crate) fn start(&mut self, start: i64) {
        debug_assert!(self.open.is_none());
        self.open = Some((start, start, UNKNOWN_GAP));
    }

    /// Where the open interval has been read to (its next unaccounted offset).
    pub(crate) fn position(&self) -> Option<i64> {
        self.open.map(|(_, at, _)| at)
    }

    fn skip_to(&mut self, offset: i64) -> Option<u32> {
        let (_, at, gap) = self.open.as_mut()?;
        if offset < *at {
            return None;
        }
        if offset > *at {
            push_range(&mut self.side.holes, *at, offset);
            if *gap != UNKNOWN_GAP {
                *gap = gap.saturating_add(u32::try_from(offset - *at).unwrap_or(u32::MAX - 1));
                *gap = (*gap).min(UNKNOWN_GAP - 1);
            }
        }
        Some(*gap)
    }

    /// The record bytes of the Fetch answer whose records are read next: a record written
    /// canonically inside them is kept where it lies.
    pub(crate) fn chunk(&mut self, records: &Bytes) {
        if !self.chunk_used {
            self.side.chunks.pop();
        }
        self.side.chunks.push(records.clone());
        self.chunk_used = false;
    }

    /// A data record read (past everything fed so far; others are ignored): its content
    /// digested once, here, where it lies in the current chunk when it is written canonically
    /// there, else encoded into [`Side::contents`].
    pub(crate) fn read_record(&mut self, record: &Record<'_>, committed: bool) {
        match self.position() {
            Some(at) if record.offset >= at => {}
            _ => return,
        }
        let (content, digest) = match self.in_chunk(record) {
            Some(found) => {
                self.chunk_used = true;
                found
            }
            None => {
                let at = self.side.contents.len();
                let digest = digest::encode(record, &mut self.side.contents);
                let len = u32::try_from(self.side.contents.len() - at).unwrap_or(u32::MAX);
                ((0, at, len), digest)
            }
        };
        self.push(record.offset, record.timestamp, digest, content, committed);
    }

    /// Where `record`'s canonical encoding lies in the current chunk, and its digest.
    fn in_chunk(&self, record: &Record<'_>) -> Option<((u32, usize, u32), Digest)> {
        let chunk = self.side.chunks.last()?;
        // Inside the chunk's bytes, or elsewhere (a compressed batch's scratch space): the
        // cheap test first.
        let fields = record.fields;
        let at = (fields.as_ptr() as usize).checked_sub(chunk.as_ptr() as usize)?;
        if at.checked_add(fields.len())? > chunk.len() {
            return None;
        }
        let len = u32::try_from(fields.len()).ok()?;
        let buffer = u32::try_from(self.side.chunks.len()).ok()?;
        let (_, digest) = digest::in_place(record)?;
        Some(((buffer, at, len), digest))
    }

    /// A data record at `offset` known by its digest alone (past everything fed so far; others
    /// are ignored): the tests' sides.
    #[cfg(test)]
    pub(crate) fn record(&mut self, offset: i64, timestamp: i64, digest: Digest, committed: bool) {
        self.push(offset, timestamp, digest, (0, 0, 0), committed);
    }

    fn push(
        &mut self,
        offset: i64,
        timestamp: i64,
        digest: Digest,
        content: (u32, usize, u32),
        committed: bool,
    ) {
        let Some(gap) = self.skip_to(offset) else {
            return;
        };
        self.side.records.push(Rec {
            offset,
            timestamp,
            digest,
            content,
            committed,
            gap_before: gap,
        });
        if let Some((_, at, gap)) = self.open.as_mut() {
            *at = offset + 1;
            *gap = 0;
        }
    }

    /// A control batch covering `first..=last`: markers, not data, not holes.
    pub(crate) fn marker(&mut self, first: i64, last: i64) {
        let first = match self.open {
            Some((_, at, _)) => first.max(at),
            None => return,
        };
        if last < first || self.skip_to(first).is_none() {
            return;
        }
        if let Some((_, at, _)) = self.open.as_mut() {
            *at = last + 1;
        }
    }

    /// Notes LogAppendTime timestamps and the bytes fetched.
    pub(crate) fn saw_batch(&mut self, log_append_time: bool, bytes: usize) {
        self.side.log_append_time |= log_append_time;
        self.side.bytes += bytes as u64;
    }

    /// Closes the open interval as read completely up to `end` (exclusive).
    pub(crate) fn finish_interval(&mut self, end: i64) {
        if let Some((start, at, _)) = self.open {
            if end > at {
                push_range(&mut self.side.holes, at, end);
            }
            push_range(&mut self.side.covered, start, end.max(start));
        }
        self.open = None;
    }

    /// Abandons the open interval (read stopped): what was read of it stays, as covered up to
    /// where the read got.
    pub(crate) fn abandon_interval(&mut self) {
        if let Some((start, at, _)) = self.open.take()
            && at > start
        {
            push_range(&mut self.side.covered, start, at);
        }
    }

    /// The side read.
    pub(crate) fn finish(mut self) -> Side {
        self.abandon_interval();
        if !self.chunk_used {
            self.side.chunks.pop();
        }
        self.side
    }
}

/// Appends `[start, end)` to sorted, disjoint ranges, joining it to the last when they touch.
fn push_range(ranges: &mut Vec<(i64, i64)>, start: i64, end: i64) {
    if start >= end {
        return;
    }
    match ranges.last_mut() {
        Some(last) if last.1 >= start => last.1 = last.1.max(end),
        _ => ranges.push((start, end)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{
        Batches, Compression, Scratch, builder::BatchBuilder, builder::RecordSpec,
    };

    /// Read records keep their contents, once each, and a record behind the position leaves
    /// nothing in the buffer.
    #[test]
    fn read_records_keep_their_contents() {
        let bytes = BatchBuilder::new(5)
            .push(RecordSpec::new(0, Some(b"k1"), Some(b"v1")))
            .push(RecordSpec::new(1, Some(b"k2"), None).header(b"h", Some(b"x")))
            .build();
        let mut scratch = Scratch::new();
        let batch = Batches::new(&bytes).next().unwrap().unwrap();
        let records: Vec<_> = batch
            .records(&mut scratch)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        let mut b = SideBuilder::default();
        b.start(5);
        b.read_record(&records[0], true);
        b.read_record(&records[1], true);
        let used = b.side.contents.len();
        b.read_record(&records[0], true); // behind: ignored
        assert_eq!(b.side.contents.len(), used);
        b.finish_interval(7);
        let side = b.finish();
        assert_eq!(side.records.len(), 2);
        for (rec, record) in side.records.iter().zip(&records) {
            let mut want = Vec::new();
            assert_eq!(rec.digest, digest::encode(record, &mut want));
            assert_eq!(side.content(rec), &want[..]);
        }
    }

    /// Records of an uncompressed batch in the current chunk are kept where they lie, nothing
    /// copied; those of a compressed batch (decompressed into scratch space) are copied. Both
    /// read back as the one canonical encoding.
    #[test]
    fn canonical_records_stay_in_their_chunk() {
        let specs = || {
            [
                RecordSpec::new(0, Some(b"k1"), Some(b"v1")),
                RecordSpec::new(1, None, Some(&[9u8; 200])).header(b"h", Some(b"x")),
            ]
        };
        for compression in [Compression::None, Compression::Lz4] {
            let mut batch = BatchBuilder::new(0).compression(compression);
            for spec in specs() {
                batch = batch.push(spec);
            }
            let chunk = bytes::Bytes::from(batch.build());
            let mut scratch = Scratch::new();
            let mut b = SideBuilder::default();
            b.start(0);
            b.chunk(&chunk);
            let batch = Batches::new(&chunk).next().unwrap().unwrap();
            let records: Vec<_> = (batch.records(&mut scratch).unwrap())
                .map(|r| r.unwrap())
                .collect();
            for r in &records {
                b.read_record(r, true);
            }
            b.finish_interval(2);
            let side = b.finish();
            let copied = compression != Compression::None;
            assert_eq!(side.contents.is_empty(), !copied, "{compression:?}");
            assert_eq!(side.chunks.len(), usize::from(!copied), "{compression:?}");
            for (rec, record) in side.records.iter().zip(&records) {
                let mut want = Vec::new();
                assert_eq!(rec.digest, digest::encode(record, &mut want));
                assert_eq!(side.content(rec), &want[..], "{compression:?}");
            }
        }
    }

    #[test]
    fn gaps_holes_and_coverage() {
        let mut b = SideBuilder::default();
        b.start(10);
        b.record(10, 0, 1, true);
        b.marker(11, 11);
        b.record(12, 0, 2, true); // the marker is no hole
        b.record(15, 0, 3, false); // 13, 14 are holes
        b.record(14, 0, 9, true); // behind: ignored
        b.finish_interval(18); // 16, 17 holes
        b.start(30);
        b.record(31, 0, 4, true);
        b.abandon_interval();
        let side = b.finish();
        let gaps: Vec<u32> = side.records.iter().map(|r| r.gap_before).collect();
        assert_eq!(gaps, [UNKNOWN_GAP, 0, 2, UNKNOWN_GAP]);
        assert_eq!(side.holes, [(13, 15), (16, 18), (30, 31)]);
        assert_eq!(side.covered, [(10, 18), (30, 32)]);
        assert!(side.covers(10, 18) && side.covers(12, 13) && !side.covers(17, 19));
        assert!(!side.covers(18, 31) && side.covers(31, 32));
        assert!(side.has_hole(11, 14) && !side.has_hole(10, 13) && !side.has_hole(18, 30));
        assert_eq!(side.at(15).map(|r| r.digest), Some(3));
        assert!(side.at(13).is_none());
        assert_eq!(side.first_at(13), 2);
    }
}
