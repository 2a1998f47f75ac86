//! Failback: the groups that ran on the backup after a failover, translated back to the
//! primary (the forward flow's offset-sync history reversed, the primary's records where they
//! prove more), then planned on the primary as a dry run. It only reads.
//!
//! ```text
//! cargo run --example failback -- PRIMARY_HOST:PORT BACKUP_HOST:PORT [GROUP...]
//! ```
//!
//! The aliases are `primary` and `backup`, as MirrorMaker 2's configuration names the clusters
//! (the offset-syncs topic `mm2-offset-syncs.backup.internal` on the primary). Without groups,
//! every group on the backup. Names from the cluster are printed escaped.

use std::process::ExitCode;
use std::time::Duration;

use mm2_offsets::failback;
use mm2_offsets::prelude::*;

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [primary, backup, groups @ ..] = &args[..] else {
        eprintln!("usage: failback PRIMARY_HOST:PORT BACKUP_HOST:PORT [GROUP...]");
        return ExitCode::from(2);
    };
    let groups = if groups.is_empty() {
        GroupSelector::all()
    } else {
        GroupSelector::ids(groups.to_vec())
    };
    let run = fail_back(primary.clone(), backup.clone(), groups);
    match tokio::spawn(run).await {
        Ok(Ok((failback, plan))) => {
            print(&failback, &plan);
            ExitCode::SUCCESS
        }
        Ok(Err(error)) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
        Err(panicked) => {
            eprintln!("error: the failback task failed: {panicked}");
            ExitCode::FAILURE
        }
    }
}

async fn fail_back(
    primary: String,
    backup: String,
    groups: GroupSelector,
) -> Result<(FailbackTranslation, ApplyPlan), Error> {
    let primary = MirrorClient::connect(
        ClientConfig::plaintext([primary]),
        ReplicationPolicy::default(),
    )
    .await?;
    let backup = KafkaClient::connect(ClientConfig::plaintext([backup])).await?;
    let mut request = FailbackRequest::new("primary", "backup", groups);
    request.timeout = Duration::from_secs(60);
    // Boxed: the translation's future is large, and a task keeps it on the heap anyway.
    let failback = Box::pin(failback::translate_failback(&primary, &backup, &request)).await?;

    // The way back is planned like a failover, on the primary: every rule of apply holds (no
    // members, no rewind, nothing outside the log). A dry run: nothing is executed here.
    let mut options = ApplyOptions::default();
    options.input = PlanInput::Failback;
    let deadline = Deadline::after(Duration::from_secs(60));
    let plan = primary
        .plan_apply(&failback.to_translation("backup"), &options, &deadline)
        .await?;
    Ok((failback, plan))
}

fn print(failback: &FailbackTranslation, plan: &ApplyPlan) {
    for row in &failback.rows {
        println!(
            "failback {:?} {:?} {}: {} on the backup ({:?}) -> {} on the primary ({})",
            row.group,
            row.topic,
            row.partition,
            row.from_offset,
            row.from_topic,
            row.offset,
            row.rule.name(),
        );
    }
    for row in &failback.untranslated {
        println!(
            "untranslated {:?} {:?} {} at {}: {:?}",
            row.group, row.from_topic, row.partition, row.from_offset, row.reason
        );
    }
    for (group, error) in &failback.group_errors {
        println!("group error {group:?}: {error:?}");
    }
    let writes: usize = plan.groups.iter().map(|g| g.to_commit().count()).sum();
    eprintln!(
        "{} rows, {} untranslated, {} group errors; the plan on the primary writes {writes} partitions (dry run)",
        failback.rows.len(),
        failback.untranslated.len(),
        failback.group_errors.len(),
    );
}
