//! Apply with an undo, then the undo: translate the named groups from a source cluster on the
//! target, plan their commit, execute it with the undo journal written ahead of every commit
//! (a file, created exclusively), read that journal back as an [`UndoPlan`], and put every
//! group back as it was before (the offsets it held restored, those it did not have deleted),
//! each partition re-checked first. Everything runs in a task of its own (`tokio::spawn`).
//!
//! ```text
//! cargo run --example undo -- TARGET_HOST:PORT SOURCE_ALIAS GROUP [GROUP...]
//! ```
//!
//! This writes to the target: name groups that have no members there and that nothing else
//! reads while it runs. Names from the cluster are printed escaped.

use std::process::ExitCode;
use std::time::Duration;

use mm2_offsets::apply;
use mm2_offsets::prelude::*;
use mm2_offsets::undo;

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [target, source, groups @ ..] = &args[..] else {
        eprintln!("usage: undo TARGET_HOST:PORT SOURCE_ALIAS GROUP [GROUP...]");
        return ExitCode::from(2);
    };
    if groups.is_empty() {
        eprintln!("usage: undo TARGET_HOST:PORT SOURCE_ALIAS GROUP [GROUP...]");
        return ExitCode::from(2);
    }
    let run = apply_then_undo(target.clone(), source.clone(), groups.to_vec());
    match tokio::spawn(run).await {
        Ok(Ok((report, undone))) => {
            print(&report, &undone);
            if undone.has_errors() || undone.has_refusals() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Ok(Err(error)) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
        Err(panicked) => {
            eprintln!("error: the undo task failed: {panicked}");
            ExitCode::FAILURE
        }
    }
}

async fn apply_then_undo(
    target: String,
    source: String,
    groups: Vec<String>,
) -> Result<(ApplyReport, UndoReport), Error> {
    let client = MirrorClient::connect(
        ClientConfig::plaintext([target]),
        ReplicationPolicy::default(),
    )
    .await?;
    let mut request = TranslateRequest::new(source, GroupSelector::ids(groups));
    request.timeout = Duration::from_secs(60);
    let translation = client.translate(&request).await?;

    // One deadline for the whole run: the plan, the re-checks, the commits and the read-back.
    let options = ApplyOptions::default();
    let deadline = Deadline::after(Duration::from_secs(60));
    let plan = client.plan_apply(&translation, &options, &deadline).await?;

    // The journal: every wave's previous offsets are flushed to it before its commits go out,
    // so that the undo exists even if the process dies in the middle.
    let dir = std::env::temp_dir().join(format!("mm2o-undo-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("undo.jsonl");
    let mut journal = FileJournal::create(&path)?;
    let mut guard = WriteAhead::default();
    guard.journal = Some(&mut journal);
    let report =
        apply::execute_write_ahead(client.kafka(), &plan, None, &options, &deadline, guard).await;
    drop(journal);

    // The journal read back is the undo: bound to this cluster and this run.
    let text = std::fs::read_to_string(&path)?;
    let parsed = UndoPlan::parse(&text)?;
    std::fs::remove_dir_all(&dir)?;
    println!(
        "undo journal: {} groups, {} partitions, run finished: {}",
        parsed.plan.groups.len(),
        parsed.plan.partitions(),
        parsed.end.is_some()
    );
    let undo_deadline = Deadline::after(Duration::from_secs(60));
    let dry = undo::execute_undo(
        client.kafka(),
        &parsed.plan,
        &options,
        Mode::DryRun,
        &undo_deadline,
    )
    .await;
    println!(
        "dry run: {} partitions would be put back, nothing written: {}",
        dry.groups.iter().map(|g| g.partitions.len()).sum::<usize>(),
        !dry.executed
    );
    let undone = undo::execute_undo(
        client.kafka(),
        &parsed.plan,
        &options,
        Mode::Execute,
        &undo_deadline,
    )
    .await;
    Ok((report, undone))
}

fn print(report: &ApplyReport, undone: &UndoReport) {
    for group in &report.groups {
        println!("applied {:?}: {:?}", group.group, group.outcome);
    }
    for group in &undone.groups {
        if let Some(why) = &group.skipped {
            println!("undo {:?}: skipped: {why:?}", group.group);
        }
        for p in &group.partitions {
            println!(
                "undo {:?} {:?} {}: written {} -> {} ({:?})",
                group.group,
                p.topic,
                p.partition,
                p.written,
                p.before
                    .map_or_else(|| "deleted".to_string(), |o| o.to_string()),
                p.state,
            );
        }
    }
    eprintln!(
        "{} partitions committed, {} put back",
        report.committed(),
        undone.restored()
    );
}
