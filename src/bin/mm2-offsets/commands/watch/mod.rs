//! `mm2-offsets watch`: the library's live translation map ([`Watcher`]) behind an HTTP server
//! with Prometheus metrics, until SIGTERM or SIGINT; with `--apply-interval`, also the library's
//! periodic apply ([`ApplyLoop`]), which writes.

mod basic_auth;
mod body;
mod documents;
mod http;
mod metrics;
mod precise;
mod reload;
mod replication;
pub(crate) mod request;
mod server;
mod tls;
mod web_config;

use std::sync::Arc;
use std::time::Duration;

use mm2_offsets::client::IsolationLevel;
use mm2_offsets::watch::{
    ApplyLoop, ApplyLoopOptions, TickReport, WatchError, WatchOptions, Watcher,
};

use crate::args::{Isolation, WatchArgs};
use crate::escape::for_terminal;
use crate::session;

/// How long in-flight HTTP responses may take to finish after a stop signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Resolves when the process is asked to stop (SIGTERM from a container runtime, SIGINT from a
/// terminal).
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGTERM; only SIGINT stops the watch");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// One line per apply run on stderr, then one per group that failed (always) or was skipped
/// (with -v). Group ids and errors come from the cluster: escaped for the terminal.
fn log_run(run: &TickReport) {
    eprintln!("{}", for_terminal(&run.to_string()));
    for note in &run.notes {
        let (group, message) = (for_terminal(&note.group), for_terminal(&note.message));
        match note.skipped {
            None => tracing::warn!("apply: group {group}: {message}"),
            Some(reason) => {
                tracing::info!(
                    "apply: group {group} skipped ({}): {message}",
                    reason.as_str()
                )
            }
        }
    }
}

/// `--fail-on-missing-groups`: the groups asked for by id that have no checkpoints once the
/// first full read is done (within `timeout`), escaped for the terminal.
async fn missing_after_first_read(
    watcher: &Watcher,
    timeout: Duration,
) -> Result<Vec<String>, String> {
    // Ready (first read done and the tail live) within the start budget; a first read that
    // does not end in time cannot say which groups are missing.
    if !watcher.wait_ready(timeout).await && !watcher.status().first_read_done {
        return Err(format!(
            "--fail-on-missing-groups: the first full read was not done within --timeout {}",
            humantime::format_duration(timeout)
        ));
    }
    let shared = watcher.shared_snapshot().await;
    let found = shared.map.translation.groups();
    Ok(watcher
        .options()
        .groups
        .ids_requested()
        .filter(|id| !found.contains(id))
        .map(|id| format!("{:?}", for_terminal(id)))
        .collect())
}

pub async fn run(args: WatchArgs) -> Result<i32, String> {
    let groups = session::selector(&args.select)?;
    let settings = crate::connection::settings(&args.connection)?;
    // The periodic apply commits on connections of its own (see `Settings::for_commits`).
    let settings = match args.apply_interval {
        Some(_) => settings.for_commits(mm2_offsets::apply::ApplyOptions::default().concurrency),
        None => settings,
    };
    let client = session::connect(settings, args.run.timeout).await?;
    let sources = if args.sources.is_empty() {
        session::discover_sources(&client, args.run.timeout).await?
    } else {
        args.sources.clone()
    };
    let isolation = match args.isolation {
        Isolation::ReadUncommitted => IsolationLevel::ReadUncommitted,
        Isolation::ReadCommitted => IsolationLevel::ReadCommitted,
    };
    let mut options = WatchOptions::new(sources[0].clone(), groups);
    options.sources = sources;
    options.isolation = isolation;
    options.max_wait = args.poll;
    options.max_bytes_per_fetch = args.max_fetch_bytes;
    options.start_timeout = args.run.timeout;
    // Live while a Fetch answered within a few polls (the broker answers an idle long poll
    // after `poll`), with room for a slow broker.
    options.live_window = args.poll * 3 + Duration::from_secs(5);
    let live_window = options.live_window;

    // Bind before starting the read: a taken port fails at once, not after a long first read.
    let listener = server::bind(&args.listen).await.map_err(|e| {
        format!(
            "cannot listen on --listen {}: {e}",
            for_terminal(&args.listen)
        )
    })?;
    let address = listener
        .local_addr()
        .map_or_else(|_| args.listen.clone(), |a| a.to_string());
    // The web configuration must be valid at start; later changes that are not keep the last
    // good one (reload.rs).
    let (web_config, web_config_watch) = match &args.web_config_file {
        None => (
            tokio::sync::watch::channel(Arc::new(reload::Active::default())).0,
            None,
        ),
        Some(path) => {
            let (fingerprint, loaded) = reload::load(path);
            let active = loaded.map_err(|e| {
                format!(
                    "--web-config-file {}: {}",
                    for_terminal(&path.display().to_string()),
                    for_terminal(&e)
                )
            })?;
            (
                tokio::sync::watch::channel(Arc::new(active)).0,
                Some((path.clone(), fingerprint)),
            )
        }
    };
    let scheme = if web_config.borrow().tls.is_some() {
        "https"
    } else {
        "http"
    };

    let watcher = Watcher::start(&client, options)
        .await
        .map_err(|e| match e {
            WatchError::Start(e) => crate::hints::explain(&e),
            e => e.to_string(),
        })?;
    eprintln!(
        "watching the checkpoints of {} on {scheme}://{address}/ (/metrics, /offsets, /healthz, /readyz)",
        watcher
            .options()
            .sources
            .iter()
            .map(|s| for_terminal(s).into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if args.run.fail_on_missing_groups {
        let missing = missing_after_first_read(&watcher, args.run.timeout).await?;
        if !missing.is_empty() {
            eprintln!(
                "error: no checkpoints for group(s) {} once the first full read was done (--fail-on-missing-groups)",
                missing.join(", ")
            );
            watcher.stop().await;
            return Ok(crate::exit::EXIT_ERROR);
        }
    }
    let precise = precise::start(&args, &client, &watcher.options().sources).await?;
    let replication = replication::start(&args, &client, &watcher.options().sources)?;
    if let Some(dir) = &args.undo_dir
        && let Err(why) = writable_folder(dir)
    {
        eprintln!(
            "error: --undo-dir {}: {why}; nothing was written",
            crate::escape::for_terminal(&dir.display().to_string())
        );
        return Ok(crate::exit::EXIT_USAGE);
    }
    let apply = args.apply_interval.map(|interval| {
        let mut options = ApplyLoopOptions::new(interval);
        options.undo_dir = args.undo_dir.clone();
        // One budget for each run: plan, re-checks, commits and read-back.
        options.tick_timeout = args.run.timeout;
        // Applied only from a map caught up within the readiness window: as fresh as /readyz
        // demands of a live tail.
        options.max_map_age = live_window;
        eprintln!(
            "applying the map every {} to target groups without members (this writes offsets)",
            humantime::format_duration(interval)
        );
        ApplyLoop::new(client.kafka().clone(), options)
    });
    let app = Arc::new(http::App {
        watcher: watcher.clone(),
        kafka: client.kafka().clone(),
        heartbeat_stale_after: args.heartbeat_stale_after,
        partition_metrics: args.partition_metrics,
        isolation,
        apply: apply.clone(),
        large: Arc::new(tokio::sync::Semaphore::new(args.max_large_responses)),
        offsets: documents::Cache::default(),
        metrics: documents::Cache::default(),
        precise: precise.clone(),
        replication,
    });
    let limits = server::Limits {
        max_connections: args.max_connections,
        write_timeout: args.write_timeout,
    };
    let config = web_config.subscribe();
    if let Some((path, fingerprint)) = web_config_watch {
        tokio::spawn(reload::watch(path, fingerprint, web_config));
    }
    let (stop_apply, mut apply_stopped) = tokio::sync::watch::channel(false);
    let serving = async {
        server::serve(listener, app, config, limits, stop_signal(), SHUTDOWN_GRACE).await;
        stop_apply.send_replace(true);
    };
    // Beside the server in this task: a run in progress when the stop signal comes finishes
    // (within --timeout), so that its line says what it wrote.
    let applying = async {
        if let Some(apply) = &apply {
            let stop = async {
                let _ = apply_stopped.wait_for(|stop| *stop).await;
            };
            apply.run(&watcher, stop, log_run).await;
        }
    };
    tokio::join!(serving, applying);
    if let Some(precise) = precise {
        precise.stop().await;
    }
    watcher.stop().await;
    eprintln!("stopped");
    Ok(crate::exit::EXIT_OK)
}

/// Whether `dir` is an existing folder this process can create files in (the undo journals of
/// the periodic apply): checked at start, so that a run never finds out only when it writes.
fn writable_folder(dir: &std::path::Path) -> Result<(), String> {
    let meta = std::fs::metadata(dir).map_err(|e| format!("cannot use it: {e}"))?;
    if !meta.is_dir() {
        return Err("not a folder".to_string());
    }
    let probe = dir.join(format!(".mm2-offsets-write-check-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|e| format!("cannot create files in it: {e}"))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}
