//! What one Fetch returned for one partition. A leaf of the client: the Fetch batches the
//! client holds ([`super::coalescer`]) carry it, and must not import the client to do so.

use bytes::Bytes;

use crate::responses::fetch::AbortedTransaction;

/// The record batches one Fetch returned for one partition.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FetchedChunk {
    /// The partition.
    pub partition: i32,
    /// The offset the fetch asked for.
    pub fetch_offset: i64,
    /// Where the next fetch starts: just past the last complete batch in `records`.
    pub next_offset: i64,
    /// Complete record batches only, as a zero-copy slice of the response frame. A batch the
    /// broker cut short at the end of the response has been dropped; it is fetched again.
    /// When [`malformed`](Self::malformed), the bytes from the malformed batch on are kept, so
    /// that [`Batches`](crate::records::Batches) reports what is wrong with them.
    pub records: Bytes,
    /// Whether `records` ends with a batch that cannot be framed (a bad length or magic). The
    /// stream delivers this chunk and stops: no read can get past such a batch.
    pub malformed: bool,
    /// The partition's high watermark when the broker answered.
    pub high_watermark: i64,
    /// The last stable offset, or -1 when the broker does not report it.
    pub last_stable_offset: i64,
    /// The log start offset, or -1 when the broker does not report it.
    pub log_start_offset: i64,
    /// Aborted transactions overlapping this chunk (read_committed only).
    pub aborted_transactions: Vec<AbortedTransaction>,
}
