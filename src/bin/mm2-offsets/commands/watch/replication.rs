//! `watch` with a source connection (`--source-bootstrap-server` or `--source-command-config`):
//! what a failover would lose, measured every `--replication-interval` with the library's
//! `mm2_offsets::replication::measure`, each round within `--replication-timeout` (one read of
//! the offset-sync topic, a few ListOffsets, per partition one matching read near the tip and
//! the records not copied). The newest figure is exported on `/metrics` and, with
//! `--replication-snapshot FILE`, written to a file that `translate` and `apply` show when the
//! primary cannot be reached.
//!
//! Freshness: the per-partition series are those of the newest round only when it succeeded. A
//! round that fails removes them (no stale figure is served as a fresh one) and sets
//! `mm2_replication_up` to 0; `mm2_replication_last_measurement_timestamp_seconds` keeps the time
//! of the last success, so its age shows how old the last known figure is.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use mm2_offsets::client::{Deadline, GroupType, KafkaClient};
use mm2_offsets::precise::SyncsSource;
use mm2_offsets::record_match::MatchOptions;
use mm2_offsets::replication::{Replication, ReplicationRequest, measure};
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::MirrorClient;

use crate::args::{ConnectionArgs, SyncsArgs, WatchArgs};
use crate::escape::for_terminal;

/// What the rounds found so far.
#[derive(Clone, Default)]
pub struct Figures {
    /// The source alias measured.
    pub source: String,
    /// The newest successful measurement.
    pub last: Option<Arc<Measured>>,
    /// Whether the newest round succeeded (false before the first).
    pub up: bool,
    /// Why the newest round failed.
    pub last_error: Option<String>,
    /// Rounds finished, and of them failed.
    pub rounds: u64,
    pub errors: u64,
    /// How long the newest round took.
    pub last_duration: Option<Duration>,
}

/// A successful measurement, as exported.
pub struct Measured {
    /// When the primary's log ends were read (ms since the epoch).
    pub measured_at_ms: i64,
    /// Rows not proven.
    pub unproven: usize,
    /// Per remote partition.
    pub rows: Vec<RowFigure>,
    /// `measured_at_ms`, `complete`, `total` and `rows` as `replication -o json` prints them.
    pub document: serde_json::Value,
    /// The groups on the source that watch's selection picks, with their types, listed in the
    /// same round: the Kafka Streams and share groups among them are groups MM2 never
    /// checkpoints, which a failover must translate from their offsets on the source.
    pub source_groups: Vec<(String, GroupType)>,
}

/// One remote partition's figure; `None`s when it is not proven.
pub struct RowFigure {
    pub topic: String,
    pub partition: i32,
    pub not_copied: Option<u64>,
    pub seconds_behind: Option<f64>,
}

impl Measured {
    fn new(r: &Replication, source_groups: Vec<(String, GroupType)>) -> Self {
        Measured {
            source_groups,
            measured_at_ms: r.measured_at_ms,
            unproven: r.total.unproven,
            rows: r
                .rows
                .iter()
                .map(|row| RowFigure {
                    topic: row.topic.clone(),
                    partition: row.partition,
                    not_copied: row.not_copied,
                    seconds_behind: row.seconds_behind,
                })
                .collect(),
            document: serde_json::json!({
                "measured_at_ms": r.measured_at_ms,
                "complete": r.is_complete(),
                "total": r.total,
                "rows": r.rows,
            }),
        }
    }
}

/// The running measurement.
pub struct ReplicationWatch {
    figures: Arc<Mutex<Figures>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ReplicationWatch {
    /// The rounds end with the server that exports them (a round in progress is dropped).
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What one round needs, connected lazily (the primary may be down when the watch starts).
struct Rounds {
    syncs: SyncsArgs,
    connection: ConnectionArgs,
    max_fetch_bytes: i32,
    client: MirrorClient,
    source: String,
    interval: Duration,
    timeout: Duration,
    snapshot: Option<PathBuf>,
    /// Watch's group selection, for the source's groups listed each round.
    groups: GroupSelector,
    connected: Option<(SyncsSource, KafkaClient)>,
}

/// Starts the rounds the flags ask for: `None` without a source connection.
pub fn start(
    args: &WatchArgs,
    client: &MirrorClient,
    sources: &[String],
) -> Result<Option<ReplicationWatch>, String> {
    if !args.precise.syncs.names_source_cluster() {
        if args.replication.replication_snapshot.is_some() {
            return Err("--replication-snapshot needs a source connection: pass --source-bootstrap-server or --source-command-config".into());
        }
        return Ok(None);
    }
    let [source] = sources else {
        return Err(format!(
            "watch with a source connection measures one flow; pass exactly one --source (got {})",
            sources.join(", ")
        ));
    };
    let r = &args.replication;
    let figures = Arc::new(Mutex::new(Figures {
        source: source.clone(),
        ..Figures::default()
    }));
    let rounds = Rounds {
        syncs: args.precise.syncs.clone(),
        connection: args.connection.clone(),
        max_fetch_bytes: args.max_fetch_bytes,
        client: client.clone(),
        source: source.clone(),
        interval: r.replication_interval,
        timeout: r.replication_timeout,
        snapshot: r.replication_snapshot.clone(),
        groups: crate::session::selector(&args.select)?,
        connected: None,
    };
    eprintln!(
        "replication: measuring what a failover from {} would lose every {} (each round within {}){}",
        for_terminal(source),
        humantime::format_duration(r.replication_interval),
        humantime::format_duration(r.replication_timeout),
        match &r.replication_snapshot {
            Some(path) => format!(
                "; the figure written to {}",
                for_terminal(&path.display().to_string())
            ),
            None => String::new(),
        }
    );
    let task = tokio::spawn(rounds.run(figures.clone()));
    Ok(Some(ReplicationWatch { figures, task }))
}

impl ReplicationWatch {
    /// A copy of the figures now.
    pub fn figures(&self) -> Figures {
        self.figures.lock().map(|f| f.clone()).unwrap_or_default()
    }
}

impl Rounds {
    async fn run(mut self, figures: Arc<Mutex<Figures>>) {
        loop {
            let started = Instant::now();
            let outcome = self.round().await;
            let snapshot = {
                let Ok(mut f) = figures.lock() else { return };
                f.rounds += 1;
                f.last_duration = Some(started.elapsed());
                match outcome {
                    Ok((report, source_groups)) => {
                        f.up = true;
                        f.last_error = None;
                        f.last = Some(Arc::new(Measured::new(&report, source_groups)));
                    }
                    Err(why) => {
                        // The connections may be what failed: made again next round.
                        self.connected = None;
                        tracing::warn!(
                            "replication: round failed (no figure exported until one succeeds): {}",
                            for_terminal(&why)
                        );
                        f.up = false;
                        f.errors += 1;
                        f.last_error = Some(why);
                    }
                }
                self.snapshot.as_ref().map(|_| f.clone())
            };
            if let (Some(path), Some(f)) = (&self.snapshot, snapshot)
                && let Err(e) = write_snapshot(path, &f)
            {
                tracing::warn!(
                    "replication: cannot write --replication-snapshot {}: {e}",
                    for_terminal(&path.display().to_string())
                );
            }
            let wait = self.interval.saturating_sub(started.elapsed());
            tokio::time::sleep(wait).await;
        }
    }

    /// One measurement within `--replication-timeout`, and the source's selected groups with
    /// their types (ListGroups on every broker of the primary).
    async fn round(&mut self) -> Result<(Replication, Vec<(String, GroupType)>), String> {
        let budget = Deadline::after(self.timeout);
        let work = async {
            if self.connected.is_none() {
                let p = &self.syncs;
                let syncs_args = crate::session::sync_clusters::syncs_on_source_by_default(p);
                let syncs = crate::session::sync_clusters::syncs_cluster(
                    &syncs_args,
                    &self.connection,
                    &self.client,
                    &self.source,
                    &budget,
                )
                .await?;
                let primary =
                    crate::session::sync_clusters::source_cluster(p, Some(&syncs.client), &budget)
                        .await?;
                self.connected = Some((syncs, primary));
            }
            let Some((syncs, primary)) = &self.connected else {
                return Err("not connected".to_string());
            };
            let mut request = ReplicationRequest::new(self.source.clone(), GroupSelector::all());
            request.timeout = budget.remaining();
            request.max_bytes_per_fetch = self.max_fetch_bytes;
            let mut matching = MatchOptions::default();
            matching.max_fetch_bytes = self.max_fetch_bytes;
            request.matching = matching;
            let topic = syncs.topic.clone();
            let measured = measure(
                self.client.kafka(),
                primary,
                syncs,
                self.client.replication_policy(),
                &request,
            )
            .await
            .map_err(|e| format!("{} (offset-syncs topic {topic})", crate::hints::explain(&e)))?;
            let types = primary.group_types(&budget).await.map_err(|e| {
                format!("listing the source's groups: {}", crate::hints::explain(&e))
            })?;
            let selected = types
                .into_iter()
                .filter(|(group, _)| self.groups.matches(group))
                .collect();
            Ok((measured, selected))
        };
        match tokio::time::timeout(self.timeout, work).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!(
                "not measured within --replication-timeout {}",
                humantime::format_duration(self.timeout)
            )),
        }
    }
}

fn millis(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The snapshot document: the last successful figure with its time, and how the newest round
/// went (`docs/src/watch.md` describes it; `session::at_risk` reads it).
pub fn snapshot_document(f: &Figures, now: SystemTime) -> serde_json::Value {
    serde_json::json!({
        "schema_version": 1,
        "kind": "mm2-offsets-replication-snapshot",
        "source": f.source,
        "written_at_ms": millis(now),
        "newest_round": {
            "measured": f.up,
            "error": f.last_error,
        },
        "last_measurement": f.last.as_ref().map(|m| &m.document),
    })
}

/// Replaces `path` atomically (a temporary file beside it, then a rename).
fn write_snapshot(path: &std::path::Path, f: &Figures) -> std::io::Result<()> {
    let doc = snapshot_document(f, SystemTime::now());
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(
        &tmp,
        serde_json::to_vec(&doc).map_err(std::io::Error::other)?,
    )?;
    std::fs::rename(&tmp, path)
}
