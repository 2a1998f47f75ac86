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
    /// downstream offset with it. Empty when the upstream offsets increase along the log (one
    /// task lifetime, the usual history): each sync is then its own suffix minimum.
    suffix_min: Vec<(i64, i64)>,
}

impl LogOrder {
    /// From `(upstream, downstream)` pairs in log order (downstream offsets increasing).
    pub(crate) fn new(syncs: Vec<(i64, i64)>) -> Self {
        if syncs.windows(2).all(|w| w[0].0 < w[1].0) {
            return LogOrder {
                syncs,
                suffix_min: Vec::new(),
            };
        }
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

    /// The suffix minima (the syncs themselves when their upstream offsets increase).
    fn minima(&self) -> &[(i64, i64)] {
        if self.suffix_min.is_empty() {
            &self.syncs
        } else {
            &self.suffix_min
        }
    }

    /// Where `upstream` falls in the history (see the module documentation).
    pub(crate) fn span(&self, upstream: i64) -> Span {
        // The minima's upstream offsets never decrease along the log.
        let after = self.minima().partition_point(|&(m, _)| m < upstream);
        let below = after.checked_sub(1).map(|i| self.syncs[i]);
        let bound = self.minima().get(after).copied();
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

    /// The bound `(m, dm)` for `upstream` (see [`Span::bound`]), searching from position
    /// `from` on, which must be at or below the answer's: a caller looking up increasing
    /// offsets passes the position the previous lookup returned, so a partition's lookups walk
    /// its history once instead of each missing the cache down a binary search.
    pub(crate) fn bound_from(&self, from: usize, upstream: i64) -> (usize, Option<(i64, i64)>) {
        let minima = self.minima();
        let from = from.min(minima.len());
        let after = from + minima[from..].partition_point(|&(m, _)| m < upstream);
        (after, minima.get(after).copied())
    }

    /// The position of the sync at downstream offset `d`, if one is there.
    pub(crate) fn position_of(&self, d: i64) -> Option<usize> {
        self.syncs.binary_search_by_key(&d, |&(_, sd)| sd).ok()
    }

    /// The sync written at downstream offset `d`: its upstream offset.
    pub(crate) fn upstream_at(&self, d: i64) -> Option<i64> {
        self.position_of(d).map(|i| self.syncs[i].0)
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
        assert_eq!(log.span(100).bound, Some((100, 100)));
        assert_eq!(log.span(250).bound, None);
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
    fn increasing_lookups_from_the_last_position_agree() {
        let log = LogOrder::new(vec![(0, 0), (100, 100), (200, 200), (150, 201), (250, 301)]);
        let mut from = 0;
        for u in (-5..300).step_by(7) {
            let (at, bound) = log.bound_from(from, u);
            assert_eq!(bound, log.span(u).bound, "U = {u}");
            assert!(at >= from);
            from = at;
        }
    }

    #[test]
    fn equal_upstream_offsets_bound_at_the_last_copy() {
        // A restart re-sent 100 at 150: its last copy is at 150.
        let log = LogOrder::new(vec![(0, 0), (100, 100), (120, 120), (100, 150), (130, 180)]);
        assert_eq!(log.span(100).bound, Some((100, 150)));
    }
}
