//! Failover: translate every consumer group replicated from a source cluster, in one read of
//! the target cluster's checkpoints topic, plan the commit of each group's offsets on the
//! target, and (only with `--execute`) commit them; everything runs in a task of its own
//! (`tokio::spawn`), as in a service that embeds the library.
//!
//! ```text
//! cargo run --example failover -- TARGET_HOST:PORT SOURCE_ALIAS [--execute]
//! ```
//!
//! Without `--execute` nothing is written: each group's line says what an execute would do.
//! Group ids and topic names come from the cluster, so they are printed escaped (`{:?}`): a name
//! holding terminal control characters cannot rewrite the screen.

use std::process::ExitCode;
use std::time::Duration;

use mm2_offsets::apply::{self, ApplyOptions, ApplyPlan, ApplyReport};
use mm2_offsets::client::Deadline;
use mm2_offsets::config::ClientConfig;
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, TranslateRequest, Translation};

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let execute = args.iter().any(|a| a == "--execute");
    let positional: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let [target, source] = positional[..] else {
        eprintln!("usage: failover TARGET_HOST:PORT SOURCE_ALIAS [--execute]");
        return ExitCode::from(2);
    };
    let (target, source) = (target.clone(), source.clone());
    // The whole failover in a task of its own: every future of the library is `Send`.
    let task = tokio::spawn(failover(target, source, execute));
    match task.await {
        Ok(Ok((translation, plan, report))) => {
            print(&translation, &plan, report.as_ref());
            ExitCode::SUCCESS
        }
        Ok(Err(error)) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
        Err(panicked) => {
            eprintln!("error: the failover task failed: {panicked}");
            ExitCode::FAILURE
        }
    }
}

async fn failover(
    target: String,
    source: String,
    execute: bool,
) -> Result<(Translation, ApplyPlan, Option<ApplyReport>), Error> {
    let config = ClientConfig::plaintext([target]);
    // A configuration written in code is checked before anything connects.
    config.validate()?;
    // Connecting is bounded by the configuration's request timeout (30 s by default).
    let client = MirrorClient::connect(config, ReplicationPolicy::default()).await?;

    let mut request = TranslateRequest::new(source.clone(), GroupSelector::all());
    request.timeout = Duration::from_secs(60);
    // Without `allow_partial`, a read that runs out of time is an error, never a silently
    // partial answer: a failover must not commit half of a group's offsets.
    let translation = client.translate(&request).await?;

    // The plan reads the target (group states, committed offsets, log ranges) and writes
    // nothing. The heartbeats topic MM2 replicates from each source (`primary.heartbeats` under
    // the default policy) tells a stopped MirrorMaker 2 from an idle group: `plan_apply` reads
    // it under the client's replication policy.
    let options = ApplyOptions::default();
    let deadline = Deadline::after(Duration::from_secs(60));
    let plan = client.plan_apply(&translation, &options, &deadline).await?;
    // Only groups without members, no rewinds, each group re-checked just before its commit.
    let report = if execute {
        Some(
            apply::execute(
                client.kafka(),
                &plan,
                &options,
                &mm2_offsets::client::Deadline::after(std::time::Duration::from_secs(60)),
            )
            .await,
        )
    } else {
        None
    };
    Ok((translation, plan, report))
}

fn print(translation: &Translation, plan: &ApplyPlan, report: Option<&ApplyReport>) {
    for group in &plan.groups {
        let outcome = report
            .and_then(|r| r.groups.iter().find(|g| g.group == group.group))
            .map_or_else(
                || format!("planned {:?} (dry run)", group.status),
                |result| format!("{:?}", result.outcome),
            );
        println!("group {:?}: {outcome}", group.group);
        for offset in translation.group(&group.group) {
            println!(
                "  {:?} partition {} -> offset {} (source offset {})",
                offset.topic, offset.partition, offset.offset, offset.upstream_offset
            );
        }
    }
    let read = &translation.report;
    eprintln!(
        "{} offsets of {} groups from {} checkpoint records in {:?}; {}",
        translation.len(),
        plan.groups.len(),
        read.records,
        read.elapsed,
        if report.is_some() {
            "executed"
        } else {
            "nothing written (dry run; --execute commits)"
        }
    );
}
