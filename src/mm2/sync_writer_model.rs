//! A model of MirrorMaker 2's `OffsetSyncWriter` for one partition, for the property tests of
//! the sync index and of record matching (test builds only).
//!
//! `PartitionState.update` decides whether a sync is queued at once (first record of the
//! task's lifetime, `offset.lag.max` stale, upstream offsets skip, downstream went back) or
//! kept as the partition's one delayed sync; `firePendingOffsetSyncs` sends the pending one
//! when a send slot is free (at most 10 in flight), and a newer pending sync replaces an
//! unsent one; `commit()` promotes the delayed sync. A stop drops both.

/// One partition's sync state in one task lifetime.
pub(crate) struct SyncState {
    max_lag: i64,
    prev_u: i64,
    prev_d: i64,
    last_sync_d: i64,
    pending: Option<(i64, i64)>,
    delayed: Option<(i64, i64)>,
    /// Send the lifetime's first sync whatever the slots (record matching assumes it arrives).
    force_first: bool,
    first_sent: bool,
}

impl SyncState {
    /// A new lifetime's state; with `force_first`, its first sync always reaches the topic.
    pub(crate) fn new(max_lag: i64, force_first: bool) -> Self {
        SyncState {
            max_lag,
            prev_u: -1,
            prev_d: -1,
            last_sync_d: -1,
            pending: None,
            delayed: None,
            force_first,
            first_sent: false,
        }
    }

    /// `maybeQueueOffsetSyncs` for the record at upstream `u` acknowledged at downstream `d`.
    pub(crate) fn queue(&mut self, u: i64, d: i64) {
        let immediate = self.last_sync_d == -1
            || d - (self.last_sync_d + 1) >= self.max_lag
            || u - self.prev_u != 1
            || d < self.prev_d;
        self.prev_u = u;
        self.prev_d = d;
        if immediate {
            self.last_sync_d = d;
            self.delayed = None;
            self.pending = Some((u, d));
        } else {
            self.delayed = Some((u, d));
        }
    }

    /// `firePendingOffsetSyncs`: sends the pending sync if a slot is free (`fire`).
    pub(crate) fn fire(&mut self, fire: bool, out: &mut Vec<(i64, i64)>) {
        if (fire || (self.force_first && !self.first_sent))
            && let Some(sync) = self.pending.take()
        {
            out.push(sync);
            self.first_sent = true;
        }
    }

    /// `commit()`: the delayed sync becomes pending.
    pub(crate) fn promote(&mut self) {
        if let Some(d) = self.delayed.take() {
            self.pending = Some(d);
        }
    }
}
