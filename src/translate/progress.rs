//! Live progress of a read, for a progress line: offsets covered out of the total planned.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters shared between the read's workers and whoever displays progress.
#[derive(Debug, Default)]
pub struct ReadProgress {
    total_offsets: AtomicU64,
    done_offsets: AtomicU64,
    bytes: AtomicU64,
}

impl ReadProgress {
    pub(crate) fn set_total(&self, total: u64) {
        self.total_offsets.store(total, Ordering::Relaxed);
    }

    pub(crate) fn advance(&self, offsets: u64, bytes: u64) {
        self.done_offsets.fetch_add(offsets, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Offsets planned in all partitions.
    pub fn total_offsets(&self) -> u64 {
        self.total_offsets.load(Ordering::Relaxed)
    }

    /// Offsets read so far (never more than the total).
    pub fn done_offsets(&self) -> u64 {
        self.done_offsets
            .load(Ordering::Relaxed)
            .min(self.total_offsets())
    }

    /// Record-batch bytes fetched so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}
