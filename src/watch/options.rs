//! How a watch runs: which sources and groups, and its polls and windows.

use std::time::Duration;

use crate::client::{DEFAULT_FETCH_MAX_BYTES, IsolationLevel};
use crate::select::GroupSelector;

/// How to watch.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct WatchOptions {
    /// Source cluster aliases; each names a checkpoints topic through the replication policy.
    pub sources: Vec<String>,
    /// Which groups the map keeps.
    pub groups: GroupSelector,
    /// read_uncommitted (Java's choice) or read_committed.
    pub isolation: IsolationLevel,
    /// How long the broker may hold a Fetch when there is nothing new: the tail's poll.
    pub max_wait: Duration,
    /// Upper bound on one Fetch's bytes per partition.
    pub max_bytes_per_fetch: i32,
    /// Budget for the start: metadata of the topics and their log start offsets.
    pub start_timeout: Duration,
    /// A partition whose last successful Fetch is older than this is not live (the tail cannot
    /// reach its leader). Must exceed `max_wait`.
    pub live_window: Duration,
}

impl WatchOptions {
    /// Options for `groups` of one source alias, with defaults: read_uncommitted, 1 s polls,
    /// 30 s to start, a partition live while it answered in the last 10 s.
    pub fn new(source: impl Into<String>, groups: GroupSelector) -> Self {
        WatchOptions {
            sources: vec![source.into()],
            groups,
            isolation: IsolationLevel::ReadUncommitted,
            max_wait: Duration::from_secs(1),
            max_bytes_per_fetch: DEFAULT_FETCH_MAX_BYTES,
            start_timeout: Duration::from_secs(30),
            live_window: Duration::from_secs(10),
        }
    }
}
