//! FOR THE BENCHMARK ONLY (`benches/apply.sh`, the "safety checks off" row): what a failover
//! costs without apply's safety checks. It translates the selected groups in one read of the
//! checkpoints topic and commits every translated offset at once, with no plan (no group state,
//! no current offsets, no log range, no group kind), no re-check before the commit and no read
//! back. Never do this on a real cluster: a group with members, a rewind, an offset outside the
//! log would all be written (or refused by the broker) blindly. The benchmark checks the result
//! afterwards, outside the timed run.
//!
//! ```text
//! cargo build --release --example bench_unchecked_apply
//! target/release/examples/bench_unchecked_apply BOOTSTRAP SOURCE_ALIAS GROUP_REGEX
//! ```
//!
//! The commits go as `apply --execute` sends them: `MM2O_BENCH_IN_FLIGHT` (commits in flight per
//! coordinator, default apply's 16) and `MM2O_BENCH_LANES` (connections per broker, default one
//! per commit in flight plus the reads' one) change the pipeline, to explore it.
//!
//! Prints one JSON line: `{"groups":N,"partitions":P,"translate_ms":..,"commit_ms":..,"failed":F}`;
//! exits 1 when any partition was not committed.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use mm2_offsets::client::{CommitOptions, Coordinators, Deadline, OffsetToCommit};
use mm2_offsets::config::ClientConfig;
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, TranslateRequest};

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [bootstrap, source, regex] = args.as_slice() else {
        eprintln!("usage: bench_unchecked_apply BOOTSTRAP SOURCE_ALIAS GROUP_REGEX");
        return ExitCode::from(2);
    };
    match run(bootstrap, source, regex).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(
    bootstrap: &str,
    source: &str,
    regex: &str,
) -> Result<bool, Box<dyn std::error::Error>> {
    let deadline = Deadline::after(Duration::from_secs(600));
    let knob = |name: &str, default: usize| -> Result<usize, Box<dyn std::error::Error>> {
        match std::env::var(name) {
            Ok(v) => Ok(v.parse::<usize>().map_err(|e| format!("{name}={v}: {e}"))?),
            Err(_) => Ok(default),
        }
    };
    // By default the commit pipeline of `apply --execute`: its window per coordinator, one
    // connection per commit in flight besides the reads' (the checks are what this row drops).
    let in_flight = knob(
        "MM2O_BENCH_IN_FLIGHT",
        mm2_offsets::apply::ApplyOptions::default().concurrency,
    )?;
    let mut config = ClientConfig::plaintext([bootstrap]);
    config.connections_per_broker = knob("MM2O_BENCH_LANES", in_flight + 1)?;
    let mut commit_options = CommitOptions::default();
    commit_options.in_flight_per_coordinator = in_flight;
    let client = MirrorClient::connect(config, ReplicationPolicy::default()).await?;
    let started = Instant::now();
    let mut request = TranslateRequest::new(source.to_string(), GroupSelector::patterns([regex])?);
    request.timeout = deadline.remaining();
    let translation = client.translate(&request).await?;
    let translated = started.elapsed();
    let mut commits: BTreeMap<String, Vec<OffsetToCommit>> = BTreeMap::new();
    for o in translation.iter() {
        commits.entry(o.group.to_string()).or_default().push({
            let mut commit = OffsetToCommit::new(o.topic, o.partition, o.offset);
            commit.metadata = Some(o.metadata.to_string());
            commit
        });
    }
    let partitions: usize = commits.values().map(Vec::len).sum();
    let committing = Instant::now();
    let results = client
        .kafka()
        .commit_offsets(&commits, &Coordinators::new(), &commit_options, &deadline)
        .await;
    let committed = committing.elapsed();
    let failed: usize = results
        .values()
        .map(|r| match r {
            Ok(codes) => codes.values().filter(|&&c| c != 0).count(),
            Err(_) => 1,
        })
        .sum();
    println!(
        "{{\"groups\":{},\"partitions\":{partitions},\"translate_ms\":{:.1},\"commit_ms\":{:.1},\"failed\":{failed}}}",
        commits.len(),
        translated.as_secs_f64() * 1e3,
        committed.as_secs_f64() * 1e3
    );
    Ok(failed == 0)
}
