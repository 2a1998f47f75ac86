//! Did each group resume at the right record? [`MirrorClient::verify`] compares every group's
//! committed offset on the target with its committed offset on the source, record by record
//! (the source offset translated with the offset-sync history and record matching), and says
//! per partition whether the target offset is exact, behind (records read again) or ahead
//! (records skipped). It only reads.
//!
//! ```text
//! cargo run --example verify -- TARGET_HOST:PORT SOURCE_ALIAS SOURCE_HOST:PORT TARGET_ALIAS
//! ```
//!
//! `TARGET_ALIAS` names the offset-syncs topic MirrorMaker 2 writes on the source cluster
//! (`mm2-offset-syncs.TARGET_ALIAS.internal`). Names from the cluster are printed escaped.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use mm2_offsets::client::KafkaClient;
use mm2_offsets::config::ClientConfig;
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::precise::{Syncs, SyncsSource};
use mm2_offsets::record_match::MatchOptions;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, TranslateRequest};
use mm2_offsets::verify::{VerifyRow, VerifyVerdict};

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [target, source_alias, source, target_alias] = &args[..] else {
        eprintln!("usage: verify TARGET_HOST:PORT SOURCE_ALIAS SOURCE_HOST:PORT TARGET_ALIAS");
        return ExitCode::from(2);
    };
    let run = verify(
        target.clone(),
        source_alias.clone(),
        source.clone(),
        target_alias.clone(),
    );
    // The verification in a task of its own: every future of the library is `Send`.
    match tokio::spawn(run).await {
        Ok(Ok(rows)) => {
            print(&rows);
            ExitCode::SUCCESS
        }
        Ok(Err(error)) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
        Err(panicked) => {
            eprintln!("error: the verify task failed: {panicked}");
            ExitCode::FAILURE
        }
    }
}

async fn verify(
    target: String,
    source_alias: String,
    source: String,
    target_alias: String,
) -> Result<Vec<VerifyRow>, Error> {
    let policy = ReplicationPolicy::default();
    let mirror = MirrorClient::connect(ClientConfig::plaintext([target]), policy.clone()).await?;
    let source = KafkaClient::connect(ClientConfig::plaintext([source])).await?;
    // The offset-sync history MM2 writes on the source for the flow towards the target.
    let syncs = Syncs::Topic(SyncsSource::new(source.clone(), &policy, &target_alias));
    let mut request = TranslateRequest::new(source_alias, GroupSelector::all());
    request.timeout = Duration::from_secs(60);
    // Boxed: the verification's future is large, and a task keeps it on the heap anyway.
    let rows = Box::pin(mirror.verify(&request, syncs, &source, MatchOptions::default())).await?;
    Ok(rows)
}

fn print(rows: &[VerifyRow]) {
    let mut verdicts: BTreeMap<&str, usize> = BTreeMap::new();
    for row in rows {
        *verdicts.entry(row.verdict.name()).or_default() += 1;
        let records = match (row.verdict, row.records) {
            (VerifyVerdict::Exact, _) => String::new(),
            (_, Some(n)) => format!(" ({}{n} records)", if row.at_least { ">= " } else { "" }),
            (_, None) => String::new(),
        };
        println!(
            "verify {:?} {:?} {}: target {:?} source {:?} -> {}{records}{}",
            row.group,
            row.topic,
            row.partition,
            row.offset,
            row.source_offset,
            row.verdict.name(),
            row.reason
                .as_deref()
                .map(|r| format!(": {r:?}"))
                .unwrap_or_default(),
        );
    }
    eprintln!("{} partitions verified: {verdicts:?}", rows.len());
}
