//! Which downstream window can hold each row's answer, and the reads that cover every row of a
//! partition at once: each side's windows merged into as few offset ranges as possible, so
//! that a partition's records are fetched once whatever the number of groups on it.

use super::side::Side;
use super::walk::{Ends, Window};
use crate::record_match::history::LogOrder;

/// Windows closer than this many offsets are read as one range: a Fetch costs more than a
/// few records.
const JOIN_WITHIN: i64 = 64;

/// The offset ranges `[start, end)` to read on each side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReadPlan {
    pub(crate) downstream: Vec<(i64, i64)>,
    pub(crate) upstream: Vec<(i64, i64)>,
}

impl ReadPlan {
    /// Whether either side of this plan would pass `budget` at the bytes per offset `up` and
    /// `down` were read at: then it is not read at all (its rows are `budget`) rather than
    /// read until the budget stops it. A side that read nothing yet gives no estimate.
    pub(crate) fn too_large_for(&self, up: &Side, down: &Side, budget: u64) -> bool {
        let over = |ranges: &[(i64, i64)], side: &Side| {
            let read: i64 = side.covered.iter().map(|&(s, e)| e - s).sum();
            let planned: i64 = ranges.iter().map(|&(s, e)| e - s).sum();
            read > 0 && planned as f64 * (side.bytes as f64 / read as f64) > budget as f64
        };
        over(&self.upstream, up) || over(&self.downstream, down)
    }
}

/// The window of each upstream offset in `rows` (`None`: no sync below it, or nothing to
/// read because it is at the end), and the ranges to read. `readable_end` is where the
/// upstream can be read to (its last stable offset: records after it sit in open
/// transactions).
pub(crate) fn plan(
    log: &LogOrder,
    rows: &[i64],
    ends: Ends,
    readable_end: i64,
) -> (Vec<Option<Window>>, ReadPlan) {
    let mut windows = Vec::with_capacity(rows.len());
    let mut plan = ReadPlan::default();
    let syncs = log.syncs();
    for &upstream in rows {
        if upstream >= ends.upstream {
            windows.push(None);
            continue;
        }
        let span = log.span(upstream);
        // From the last sync below U; with none, from the first sync of U itself (then U is
        // the group's next record, synced).
        let below = span.below.or_else(|| {
            span.bound
                .filter(|&(m, _)| m == upstream)
                .and_then(|(m, _)| syncs.iter().find(|&&(u, _)| u == m).copied())
        });
        let Some((below_u, start)) = below else {
            windows.push(None);
            continue;
        };
        let end = match span.bound {
            Some((_, dm)) => dm.min(ends.downstream - 1),
            None => ends.downstream - 1,
        };
        if end < start {
            windows.push(None);
            continue;
        }
        windows.push(Some(Window { start, end }));
        plan.downstream.push((start, end + 1));
        // Upstream: from the lowest sync of the window (a rewind target) to past the highest
        // record the window's copies can hold: after a sync (u, d), the record at d + k holds
        // at most the k-th record after u, so offsets beyond u + k only where upstream has
        // gaps. A margin on each side covers a few of those, and the committed records the
        // lower bounds step back to over a block of aborted ones.
        let window = &syncs[span.first..=span.last.max(span.first)];
        let lowest = window
            .iter()
            .map(|&(u, _)| u)
            .min()
            .unwrap_or(below_u)
            .min(upstream);
        let reach = window
            .windows(2)
            .map(|pair| pair[0].0 + (pair[1].1 - pair[0].1))
            .chain(window.iter().map(|&(u, _)| u))
            .max()
            .unwrap_or(upstream)
            .max(upstream)
            + 1;
        let margin = (reach - lowest) / 8 + 8;
        let lo = (lowest - margin).max(ends.upstream_start);
        let hi = match span.bound {
            None => readable_end,
            Some(_) => (reach + margin).min(readable_end),
        };
        if lo < hi {
            plan.upstream.push((lo, hi));
        }
    }
    plan.downstream = merged(plan.downstream);
    plan.upstream = merged(plan.upstream);
    (windows, plan)
}

/// The windows of the rows below the partition's oldest kept sync, for a second read after
/// [`plan`]'s (`rows`: the upstream offsets [`plan`] gave no window; `None` where there is
/// still none). The offset-syncs topic is compacted, so a long-lived partition keeps only its
/// recent syncs, and a group that lags behind the oldest has no sync below it. Its next record
/// was still copied to the replica before that sync's copy, so the window runs from the
/// replica's log start (`downstream_start`) to the sync that bounds the row. No sync gives the
/// window's first records an upper bound: the walk takes the upstream end and narrows it by
/// content, which needs the upstream read from the row to its end. That read is the price,
/// bounded by the byte budget, which is why these windows are read on their own, after the
/// others are answered, and cannot take the budget from them.
pub(crate) fn plan_head(
    log: &LogOrder,
    rows: &[i64],
    ends: Ends,
    downstream_start: i64,
    readable_end: i64,
) -> (Vec<Option<Window>>, ReadPlan) {
    let mut windows = Vec::with_capacity(rows.len());
    let mut plan = ReadPlan::default();
    for &upstream in rows {
        let span = log.span(upstream);
        let window = match (span.below, span.bound) {
            (None, Some((m, dm))) if upstream < ends.upstream => {
                let end = dm.min(ends.downstream - 1);
                (end >= downstream_start).then_some((
                    m,
                    Window {
                        start: downstream_start,
                        end,
                    },
                ))
            }
            _ => None,
        };
        let Some((m, window)) = window else {
            windows.push(None);
            continue;
        };
        windows.push(Some(window));
        plan.downstream.push((window.start, window.end + 1));
        // A margin below the row, as in `plan`, for the committed records the lower bounds
        // step back to over a block of aborted ones.
        let margin = (m - upstream) / 8 + 8;
        let lo = (upstream - margin).max(ends.upstream_start);
        if lo < readable_end {
            plan.upstream.push((lo, readable_end));
        }
    }
    plan.downstream = merged(plan.downstream);
    plan.upstream = merged(plan.upstream);
    (windows, plan)
}

/// Sorted, with ranges that overlap or lie within [`JOIN_WITHIN`] of each other joined.
pub(crate) fn merged(mut ranges: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    ranges.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
    for (s, e) in ranges {
        match out.last_mut() {
            Some(last) if s <= last.1.saturating_add(JOIN_WITHIN) => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_end_at_the_bound_and_merge() {
        let log = LogOrder::new(vec![(0, 0), (100, 100), (200, 200), (300, 300)]);
        let ends = Ends {
            downstream: 350,
            upstream: 350,
            upstream_start: 0,
        };
        let (windows, plan) = plan(&log, &[150, 160, 250, 320, 350, 0], ends, 350);
        assert_eq!(
            windows,
            [
                Some(Window {
                    start: 100,
                    end: 200
                }),
                Some(Window {
                    start: 100,
                    end: 200
                }),
                Some(Window {
                    start: 200,
                    end: 300
                }),
                Some(Window {
                    start: 300,
                    end: 349
                }),
                None,
                // No sync below 0, but 0 is synced: from that sync.
                Some(Window { start: 0, end: 0 }),
            ]
        );
        assert_eq!(plan.downstream, [(0, 1), (100, 350)]);
        // Each window's upstream with a margin of an eighth (and 8) on each side.
        assert_eq!(plan.upstream, [(0, 9), (80, 350)]);
        let (_, apart) = plan_of(&log, &[50, 250], ends);
        assert_eq!(apart.downstream, [(0, 101), (200, 301)]);
        assert_eq!(
            apart.upstream,
            [(0, 321)],
            "within 64 of each other: one read"
        );
    }

    #[test]
    fn rows_below_the_oldest_sync_read_from_the_log_start_to_the_upstream_end() {
        // The syncs before 200 compacted away.
        let log = LogOrder::new(vec![(200, 200), (300, 300)]);
        let ends = Ends {
            downstream: 350,
            upstream: 350,
            upstream_start: 0,
        };
        let (windows, read) = plan(&log, &[150, 250], ends, 350);
        assert_eq!(windows[0], None, "no sync below 150");
        let (head, read_head) = plan_head(&log, &[150, 250], ends, 20, 340);
        assert_eq!(
            head,
            [
                Some(Window {
                    start: 20,
                    end: 200
                }),
                None
            ]
        );
        assert_eq!(read_head.downstream, [(20, 201)]);
        // From an eighth (and 8) below the row to the last stable offset.
        assert_eq!(read_head.upstream, [(136, 340)]);
        assert_ne!(read.downstream, read_head.downstream);
    }

    fn plan_of(log: &LogOrder, rows: &[i64], ends: Ends) -> (Vec<Option<Window>>, ReadPlan) {
        plan(log, rows, ends, ends.upstream)
    }
}
