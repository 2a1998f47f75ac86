//! `watch --precise`: the live offset-sync history beside the checkpoint map
//! (`mm2_offsets::watch::SyncsWatcher`), its snapshot under `--state-dir`, and
//! `/precise/offsets`: the watch's current map re-translated from that history, as
//! `translate --precise -o json` prints it, plus the history's own freshness.

use std::sync::Arc;

use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::mm2::sync_index::Interpolation;
use mm2_offsets::precise::PreciseTranslation;
use mm2_offsets::translate::{MirrorClient, ReadReport};
use mm2_offsets::watch::{Snapshot, SyncsWatchOptions, SyncsWatcher};

use crate::args::WatchArgs;
use crate::escape::for_terminal;

/// The snapshot's file name under `--state-dir`.
pub const SNAPSHOT_FILE: &str = "syncs.snapshot";

/// What `/precise/offsets` needs.
pub struct PreciseServe {
    pub syncs: SyncsWatcher,
    pub policy: ReplicationPolicy,
}

/// Starts the history watch the flags ask for (`None` without `--precise`).
pub async fn start(
    args: &WatchArgs,
    client: &MirrorClient,
    sources: &[String],
) -> Result<Option<Arc<PreciseServe>>, String> {
    let p = &args.precise;
    if !p.precise {
        return Ok(None);
    }
    let [source] = sources else {
        return Err(format!(
            "watch --precise follows one flow; pass exactly one --source (got {})",
            sources.join(", ")
        ));
    };
    let syncs = crate::session::sync_clusters::syncs_cluster(
        &p.syncs,
        &args.connection,
        client,
        source,
        &mm2_offsets::client::Deadline::after(args.run.timeout),
    )
    .await?;
    let snapshot_path = match &p.state_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| {
                format!(
                    "--state-dir {}: {e}",
                    for_terminal(&dir.display().to_string())
                )
            })?;
            Some(dir.join(SNAPSHOT_FILE))
        }
        None => None,
    };
    let mut options = SyncsWatchOptions::new(syncs.client.clone(), syncs.topic.clone());
    options.snapshot_path = snapshot_path.clone();
    options.snapshot_interval = p.snapshot_interval;
    options.max_wait = args.poll;
    options.start_timeout = args.run.timeout;
    let watcher = SyncsWatcher::start(options)
        .await
        .map_err(|e| format!("offset-syncs topic {}: {e}", for_terminal(&syncs.topic)))?;
    eprintln!(
        "precise: following {}{}",
        for_terminal(&syncs.topic),
        match &snapshot_path {
            Some(path) => format!(
                "; snapshot every {} to {}",
                humantime::format_duration(p.snapshot_interval),
                for_terminal(&path.display().to_string())
            ),
            None => String::new(),
        }
    );
    Ok(Some(Arc::new(PreciseServe {
        syncs: watcher,
        policy: client.replication_policy().clone(),
    })))
}

impl PreciseServe {
    /// The map of `snapshot` re-translated from the live history: `translate --precise -o
    /// json`'s document with `syncs_status` added.
    pub fn document(&self, snapshot: &Snapshot) -> Result<Vec<u8>, String> {
        let index = self.syncs.index(Interpolation::Disabled);
        let status = self.syncs.status();
        let mut report = ReadReport::default();
        report.complete = status.caught_up;
        report.records = status.records;
        let precise = PreciseTranslation::offline(
            (*snapshot.translation).clone(),
            &index,
            &self.policy,
            report,
        );
        let millis = |t: Option<std::time::SystemTime>| {
            t.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as u64)
        };
        let extra = serde_json::json!({
            "caught_up": status.caught_up,
            "records": status.records,
            "read_to": status.read_to,
            "snapshot_written_ms": millis(status.snapshot_written),
            "snapshot_error": status.snapshot_error,
            "last_error": status.last_error,
        });
        let mut out = Vec::new();
        crate::session::precise::write_json_with(
            &mut out,
            &precise,
            Some(&format!(",\"syncs_status\":{extra}")),
        )
        .map_err(|e| e.to_string())?;
        Ok(out)
    }

    /// Stops the history watch.
    pub async fn stop(self: Arc<Self>) {
        if let Ok(serve) = Arc::try_unwrap(self) {
            serve.syncs.stop().await;
        }
    }
}
