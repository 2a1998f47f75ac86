//! The large documents (`/offsets`, `/metrics`), rendered once and shared by every response
//! that asks for them meanwhile.
//!
//! - `/offsets` is rendered once per copy of the map (the map changes only when checkpoints
//!   arrive); each response adds its own freshness members (`as_of`, `ready`) at the end.
//! - `/metrics` is rendered at most once a second: the ages it exports move with the clock.
//!   Concurrent scrapes share one render and one set of log-end lookups on the cluster.
//!
//! One render of each at a time (the others wait for it), off the async workers. A document
//! that responses still send is kept alive by them; while [`MAX_PINNED`] older ones are, no new
//! one is rendered and the newest is served again (with the freshness of its own map), so slow
//! clients cannot make the process hold one document per change of the map.

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use tokio::sync::OnceCell;
use tokio::time::Instant;

use mm2_offsets::watch::{SharedSnapshot, Snapshot};

use super::body::GzipPrefix;

/// Older documents that responses may still hold before a new render waits for them to finish.
const MAX_PINNED: usize = 2;

/// How long a `/metrics` render is served again to the scrapes that come after it.
pub const METRICS_REUSE: Duration = Duration::from_secs(1);

/// One rendered document and, made on first demand, its gzip.
pub struct Document {
    /// The map it was rendered from.
    pub map: Arc<Snapshot>,
    /// When it was rendered.
    pub rendered: Instant,
    /// The bytes every response shares.
    pub bytes: Bytes,
    gzip: OnceCell<Arc<GzipPrefix>>,
}

impl Document {
    pub fn new(map: Arc<Snapshot>, bytes: Bytes) -> Self {
        Document {
            map,
            rendered: Instant::now(),
            bytes,
            gzip: OnceCell::new(),
        }
    }

    /// The document's bytes compressed once (off the async workers), shared by every gzip
    /// response.
    pub async fn gzip(&self) -> Arc<GzipPrefix> {
        self.gzip
            .get_or_init(|| async {
                let bytes = self.bytes.clone();
                match tokio::task::spawn_blocking(move || Arc::new(GzipPrefix::new(&bytes))).await {
                    Ok(gz) => gz,
                    Err(_) => Arc::new(GzipPrefix::new(&self.bytes)),
                }
            })
            .await
            .clone()
    }
}

/// A cache of one kind of document.
#[derive(Default)]
pub struct Cache {
    /// Held while rendering: one render at a time.
    newest: tokio::sync::Mutex<Option<Arc<Document>>>,
    /// Documents replaced but maybe still being sent.
    older: Mutex<Vec<Weak<Document>>>,
}

impl Cache {
    /// The newest document if `fresh` says it may be served, else a new one from `render` (unless
    /// too many older ones are still being sent; then the newest anyway).
    pub async fn get<F, Fut>(
        &self,
        fresh: impl Fn(&Document) -> bool,
        render: F,
    ) -> Result<Arc<Document>, String>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Document, String>>,
    {
        let mut newest = self.newest.lock().await;
        if let Some(doc) = &*newest
            && (fresh(doc) || self.pinned() >= MAX_PINNED)
        {
            return Ok(doc.clone());
        }
        let doc = Arc::new(render().await?);
        if let Some(old) = newest.replace(doc.clone()) {
            self.older
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Arc::downgrade(&old));
        }
        Ok(doc)
    }

    /// Older documents still alive (held by responses), forgetting the others.
    fn pinned(&self) -> usize {
        let mut older = self.older.lock().unwrap_or_else(|e| e.into_inner());
        older.retain(|w| w.strong_count() > 0);
        older.len()
    }
}

/// Renders on a blocking thread (large documents take CPU time the async workers need for
/// health checks and the tail).
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| format!("rendering failed: {e}"))
}

/// The freshness members every offsets document ends with, for `map` served at `shared`'s
/// moment: the current status when `map` is the current copy, else the copy's own.
pub fn freshness(map: &Arc<Snapshot>, shared: &SharedSnapshot) -> (Option<SystemTime>, bool) {
    if Arc::ptr_eq(map, &shared.map) {
        (shared.status.as_of, shared.status.ready)
    } else {
        (map.as_of, false)
    }
}
