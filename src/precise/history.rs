//! One partition's kept offset syncs in log order, and the two questions asked of that order:
//! how far past an answer the group's next record can lie (`max_rereads`), and which
//! downstream window holds the last copy of that record (record matching).
//!
//! # The bound
//! Let `S` be the last sync in log order with `u < U`, and `(m, dm)` the sync after `S` with the
//! smallest upstream offset `m` (the last one in log order if several share it). Every sync
//! after `S` has `u >= U`, so the group's next delivered record `A` (the first at or after `U`
//! MirrorMaker 2 read) satisfies `A <= m`. A copy of `A` after `dm` would need a task lifetime
//! that starts at or below `A` after `S`: its first sync would have `u <= A <= m`, so `u == m`
//! and it would come after `dm`, which is the last such. The lifetime that wrote `dm` passed `A`
//! before `dm` (in order) or wrote `A` at `dm`. So the last copy of `A`, the exact position,
//! is at or before `dm`: a consumer resuming at offset `o` re-reads at most `dm - o` records.
//! Compaction keeps a log-order suffix of the history, which changes none of this. The one
//! assumption: each lifetime's first sync reached the topic (MirrorMaker 2 sends it at once;
//! it is lost only when more than 10 syncs are in flight at a restart, or when the task dies
//! again before sending it).

/// What the history says about one upstream offset `U`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    /// The last sync in log order with `u < U`: `(u, d)`.
    pub(crate) below: Option<(i64, i64)>,
    /// `(m, dm)`: the smallest upstream offset among the syncs after `below` and the last
    /// downstream offset it was synced at; the exact position is at or before `dm`.
    pub(crate) bound: Option<(i64, i64)>,
    /// The syncs of the window `below ..= bound`, as positions in log order.
    pub(crate) first: usize,
    pub(crate) last: usize,
}

/// The kept syncs of one partition in log (downstream) order, with suffix minima.
#[derive(Clone, Debug, Default)]
pub(crate) struct LogOrder {
    syncs: Vec<(i64, i64)>,
    /// For each position `i`: the smallest upstream offset among `syncs[i..]` and the last
    /// downstream offset with it.
    suffix_min: Vec<(i64, i64)>,
}

impl LogOrder {
    /// From `(upstream, downstream)` pairs in log order (downstream offsets increasing).
    pub(crate) fn new(syncs: Vec<(i64, i64)>) -> Self {
        let mut suffix_min = vec![(0, 0); syncs.len()];
        let mut best: Option<(i64, i64)> = None;
        for (i, &(u, d)) in syncs.iter().enumerate().rev() {
            // Walking backwards, a later sync of the same upstream offset is already kept.
            best = match best {
                Some((m, dm)) if m <= u => Some((m, dm)),
                _ => Some((u, d)),
            };
            suffix_min[i] = best.expect("set above");
        }
        LogOrder { syncs, suffix_min }
    }

    /// The syncs, in log order.
    pub(crate) fn syncs(&self) -> &[(i64, i64)] {
        &self.syncs
    }

    /// Where `upstream` falls in the history (see the module documentation).
    pub(crate) fn span(&self, upstream: i64) -> Span {
        // suffix_min's upstream offsets never decrease along the log.
        let after = self.suffix_min.partition_point(|&(m, _)| m < upstream);
        let below = after.checked_sub(1).map(|i| self.syncs[i]);
        let bound = self.suffix_min.get(after).copied();
        let last = match bound {
            Some((_, dm)) => self.position_of(dm).unwrap_or(self.syncs.len() - 1),
            None => self.syncs.len().saturating_sub(1),
        };
        Span {
            below,
            bound,
            first: after.saturating_sub(1),
            last,
        }
    }

    /// The position of the sync at downstream offset `d`, if one is there.
    pub(crate) fn position_of(&self, d: i64) -> Option<usize> {
        self.syncs.binary_search_by_key(&d, |&(_, sd)| sd).ok()
    }

    /// The sync written at downstream offset `d`: its upstream offset.
    pub(crate) fn upstream_at(&self, d: i64) -> Option<i64> {
        self.position_of(d).map(|i| self.syncs[i].0)
    }

    /// The most records a consumer resuming at `offset` re-reads for upstream offset
    /// `upstream`: `dm - offset`, or `None` when no sync lies after the last one below
    /// `upstream` (or the history contradicts `offset`).
    pub(crate) fn max_rereads(&self, upstream: i64, offset: i64) -> Option<i64> {
        let (_, dm) = self.span(upstream).bound?;
        (dm >= offset).then_some(dm - offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_lifetime() {
        let log = LogOrder::new(vec![(0, 0), (100, 100), (200, 200)]);
        let span = log.span(150);
        assert_eq!(span.below, Some((100, 100)));
        assert_eq!(span.bound, Some((200, 200)));
        assert_eq!((span.first, span.last), (1, 2));
        assert_eq!(log.max_rereads(100, 100), Some(0));
        assert_eq!(log.max_rereads(150, 101), Some(99));
        assert_eq!(log.max_rereads(250, 201), None);
        assert_eq!(log.span(0).below, None);
        assert_eq!(log.span(0).bound, Some((0, 0)));
    }

    #[test]
    fn a_restart_bounds_by_its_rewind_target() {
        // Lifetime 1 to 200; lifetime 2 resumes at 150 (at 201) and runs on.
        let log = LogOrder::new(vec![(0, 0), (100, 100), (200, 200), (150, 201), (250, 301)]);
        // 120: lifetime 2 started above it, so its last copy is lifetime 1's, before 201.
        let span = log.span(120);
        assert_eq!(
            (span.below, span.bound),
            (Some((100, 100)), Some((150, 201)))
        );
        // 180: the last sync below is lifetime 2's (150, 201); bound (250, 301).
        let span = log.span(180);
        assert_eq!(
            (span.below, span.bound),
            (Some((150, 201)), Some((250, 301)))
        );
        assert_eq!((span.first, span.last), (3, 4));
        assert_eq!(log.upstream_at(201), Some(150));
        assert_eq!(log.upstream_at(202), None);
    }

    #[test]
    fn equal_upstream_offsets_bound_at_the_last_copy() {
        // A restart re-sent 100 at 150: its last copy is at 150.
        let log = LogOrder::new(vec![(0, 0), (100, 100), (120, 120), (100, 150), (130, 180)]);
        assert_eq!(log.span(100).bound, Some((100, 150)));
        assert_eq!(log.max_rereads(100, 150), Some(0));
    }
}
