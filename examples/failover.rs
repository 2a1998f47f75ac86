//! Failover: translate every consumer group replicated from a source cluster, in one read of
//! the target cluster's checkpoints topic, and print where each group should resume there.
//!
//! ```text
//! cargo run --example failover -- TARGET_HOST:PORT SOURCE_ALIAS
//! ```
//!
//! Group ids and topic names come from the cluster, so they are printed escaped (`{:?}`): a name
//! holding terminal control characters cannot rewrite the screen.

use std::process::ExitCode;
use std::time::Duration;

use mm2_offsets::config::ClientConfig;
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, TranslateRequest};

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(target), Some(source)) = (args.next(), args.next()) else {
        eprintln!("usage: failover TARGET_HOST:PORT SOURCE_ALIAS");
        return ExitCode::from(2);
    };
    match run(target, source).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(target: String, source: String) -> Result<(), Box<dyn std::error::Error>> {
    let config = ClientConfig::plaintext([target]);
    // A configuration written in code is checked before anything connects.
    config.validate()?;
    let client = MirrorClient::connect(config, ReplicationPolicy::default()).await?;

    let mut request = TranslateRequest::new(source, GroupSelector::all());
    request.timeout = Duration::from_secs(60);
    // Without `allow_partial`, a read that runs out of time is an error, never a silently
    // partial answer: a failover must not commit half of a group's offsets.
    let translation = client.translate(&request).await?;

    for group in translation.groups() {
        println!("group {group:?}");
        for offset in translation.group(group) {
            println!(
                "  {:?} partition {} -> offset {} (source offset {})",
                offset.topic, offset.partition, offset.offset, offset.upstream_offset
            );
        }
    }
    let report = &translation.report;
    eprintln!(
        "{} offsets of {} groups from {} checkpoint records in {:?}",
        translation.len(),
        translation.groups().len(),
        report.records,
        report.elapsed
    );
    Ok(())
}
