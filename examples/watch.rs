//! A live translation map: start a [`Watcher`] on the target cluster's checkpoints topic, wait
//! for its first full read, read a snapshot (by reference: no copy of the map per read), and
//! drop it, which ends its tail tasks and closes their connections.
//!
//! ```text
//! cargo run --example watch -- TARGET_HOST:PORT SOURCE_ALIAS
//! ```
//!
//! Group ids and topic names come from the cluster, so they are printed escaped (`{:?}`).

use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use mm2_offsets::client::ErrorKind;
use mm2_offsets::config::ClientConfig;
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::MirrorClient;
use mm2_offsets::watch::{WatchError, WatchOptions, Watcher};

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [target, source] = &args[..] else {
        eprintln!("usage: watch TARGET_HOST:PORT SOURCE_ALIAS");
        return ExitCode::from(2);
    };
    match tokio::spawn(watch(target.clone(), source.clone())).await {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(error)) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
        Err(panicked) => {
            eprintln!("error: the watch task failed: {panicked}");
            ExitCode::FAILURE
        }
    }
}

async fn watch(target: String, source: String) -> Result<(), Error> {
    let client = match MirrorClient::connect(
        ClientConfig::plaintext([target.clone()]),
        ReplicationPolicy::default(),
    )
    .await
    {
        Ok(client) => client,
        // What an embedder branches on: a cluster that is not there is worth a retry later,
        // wrong credentials are not.
        Err(e) if e.kind() == ErrorKind::Unreachable => {
            return Err(format!("{target} is unreachable (retry later): {e}").into());
        }
        Err(e) => return Err(e.into()),
    };
    let started = Instant::now();
    let watcher =
        match Watcher::start(&client, WatchOptions::new(source, GroupSelector::all())).await {
            Ok(watcher) => watcher,
            Err(WatchError::Start(e)) => return Err(format!("cannot start watching: {e}").into()),
            Err(e) => return Err(e.into()),
        };
    if !watcher.wait_ready(Duration::from_secs(60)).await {
        return Err(format!("not ready after 60 s: {:?}", watcher.status().last_error).into());
    }
    println!("ready after {:?}", started.elapsed());

    let snapshot = watcher.snapshot();
    for offset in snapshot.translation.iter().take(20) {
        println!(
            "offset {:?} {:?} {} -> {}",
            offset.group, offset.topic, offset.partition, offset.offset
        );
    }
    let age = snapshot
        .as_of
        .and_then(|as_of| SystemTime::now().duration_since(as_of).ok());
    println!(
        "snapshot: {} offsets of {} groups, complete {}, as of {age:?} ago",
        snapshot.translation.len(),
        snapshot.translation.groups().len(),
        snapshot.translation.report.complete,
    );
    for source in &watcher.status().sources {
        println!(
            "source {:?}: {} checkpoint records, last heartbeat {:?}",
            source.source, source.records_read, source.last_heartbeat
        );
    }
    // A second snapshot of an unchanged map shares the first one's copy.
    let again = watcher.snapshot();
    println!(
        "second snapshot shares the map: {}",
        std::sync::Arc::ptr_eq(&snapshot.translation, &again.translation)
    );

    // The last clone dropped ends the tail tasks; the snapshots stay readable.
    let dropped = Instant::now();
    drop(watcher);
    println!(
        "watcher dropped in {:?}; the snapshot still holds {} offsets",
        dropped.elapsed(),
        snapshot.translation.len()
    );
    Ok(())
}
