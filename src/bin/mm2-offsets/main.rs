//! The `mm2-offsets` command: the `cli` layer. It parses arguments, builds the client settings,
//! runs the library, prints results and maps outcomes to exit codes.
//!
//! It lives in the binary, not in the library: it is one user of the `mm2_offsets` crate, and
//! nothing here is a promise to programs that embed the crate.

mod args;
mod chunked;
mod connection;
mod output;
mod precise;
mod progress;

use args::{Cli, Command, OutputFormat, TopologyArgs, TranslateArgs};

use std::io::Write;
use std::sync::Arc;

use clap::Parser;

use mm2_offsets::client::{Deadline, IsolationLevel};
use mm2_offsets::mm2::topology;
use mm2_offsets::translate::{
    GroupSelector, MirrorClient, ReadProgress, TranslateError, TranslateRequest, Translation,
};

/// Exit code: every requested partition was read to its end.
pub const EXIT_OK: i32 = 0;
/// Exit code: an error; nothing or nothing trustworthy was printed.
pub const EXIT_ERROR: i32 = 1;
/// Exit code: wrong usage (clap's own code).
pub const EXIT_USAGE: i32 = 2;
/// Exit code: an incomplete result was printed because `--allow-partial` was given.
pub const EXIT_INCOMPLETE: i32 = 3;

fn main() {
    std::process::exit(run_cli());
}

/// Runs the command line and returns the process exit code.
fn run_cli() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
        }
    };
    init_logging(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return EXIT_ERROR;
        }
    };
    let outcome = runtime.block_on(run(cli.command));
    match outcome {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            EXIT_ERROR
        }
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "mm2_offsets=info",
        2 => "mm2_offsets=debug",
        _ => "mm2_offsets=trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

async fn run(command: Command) -> Result<i32, String> {
    match command {
        Command::Translate(args) => run_translate(args).await,
        Command::Topics(args) => run_topics(args).await,
        Command::Upstream(args) => run_upstream(args).await,
    }
}

fn group_selector(args: &TranslateArgs) -> Result<GroupSelector, String> {
    if args.all_groups {
        return Ok(GroupSelector::all());
    }
    let mut ids = args.groups.clone();
    if let Some(path) = &args.groups_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read --groups-file {}: {e}", path.display()))?;
        ids.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string),
        );
    }
    if ids.is_empty() && args.group_regexes.is_empty() {
        return Err(
            "no groups selected: pass --group, --group-regex, --groups-file or --all-groups"
                .to_string(),
        );
    }
    GroupSelector::new(ids, &args.group_regexes).map_err(|e| e.to_string())
}

async fn run_translate(args: TranslateArgs) -> Result<i32, String> {
    let groups = group_selector(&args)?;
    let settings = connection::settings(&args.connection)?;
    let client = MirrorClient::connect(settings.client, settings.policy)
        .await
        .map_err(|e| e.to_string())?;
    let sources = if args.sources.is_empty() {
        discover_sources(&client, args.timeout).await?
    } else {
        args.sources.clone()
    };
    let progress = Arc::new(ReadProgress::default());
    let request = TranslateRequest {
        sources,
        groups,
        isolation: match args.isolation {
            args::Isolation::ReadUncommitted => IsolationLevel::ReadUncommitted,
            args::Isolation::ReadCommitted => IsolationLevel::ReadCommitted,
        },
        timeout: args.timeout,
        parallelism: usize::from(args.parallelism),
        allow_partial: args.allow_partial,
        max_bytes_per_fetch: args.max_fetch_bytes,
        progress: Some(progress.clone()),
        min_split_offsets: mm2_offsets::translate::MIN_SPLIT_OFFSETS,
    };
    if args.precise.precise {
        let complete = {
            let _line = progress::ProgressLine::start(progress, !args.no_progress);
            precise::run(&args, &client, &request).await?
        };
        return Ok(if complete { EXIT_OK } else { EXIT_INCOMPLETE });
    }
    let translation = {
        let _line = progress::ProgressLine::start(progress, !args.no_progress);
        client.translate(&request).await
    };
    let translation = match translation {
        Ok(t) => t,
        Err(e @ TranslateError::Incomplete { .. }) => return Err(e.to_string()),
        Err(e) => return Err(e.to_string()),
    };
    print_translation(&args, &translation)?;
    summarize(&translation);
    Ok(if translation.report.complete {
        EXIT_OK
    } else {
        EXIT_INCOMPLETE
    })
}

/// Every source alias with a checkpoints topic on the cluster, when --source is not given.
async fn discover_sources(
    client: &MirrorClient,
    timeout: std::time::Duration,
) -> Result<Vec<String>, String> {
    let deadline = Deadline::after(timeout);
    let topics = client
        .list_topics(&deadline)
        .await
        .map_err(|e| e.to_string())?;
    let policy = client.replication_policy();
    let sources: Vec<String> =
        topology::checkpoint_topics(policy, topics.iter().map(String::as_str))
            .into_iter()
            .filter_map(|t| policy.checkpoints_topic_alias(t))
            .map(str::to_string)
            .collect();
    if sources.is_empty() {
        return Err("no checkpoints topics on this cluster: is MirrorMaker 2 writing checkpoints here (emit.checkpoints.enabled), and is this the target cluster? Pass --source ALIAS to name one".to_string());
    }
    Ok(sources)
}

fn print_translation(args: &TranslateArgs, translation: &Translation) -> Result<(), String> {
    let mut out = unbuffered_stdout();
    let written = match args.output {
        OutputFormat::Table => output::write_table(&mut out, translation),
        OutputFormat::Json => output::write_json(&mut out, translation),
        OutputFormat::Csv => output::write_csv(&mut out, translation),
        OutputFormat::ResetCsv => {
            let files = output::write_reset_files(&args.output_dir, translation).map_err(|e| {
                format!(
                    "cannot write reset files in {}: {e}",
                    args.output_dir.display()
                )
            })?;
            files
                .iter()
                .try_for_each(|(group, path)| writeln!(out, "{group}\t{}", path.display()))
        }
    };
    written
        .and_then(|_| out.flush())
        .map_err(|e| format!("cannot write the output: {e}"))
}

/// Standard output without Rust's line buffering. `Stdout` is a `LineWriter`, which searches
/// every write for its last line break: 6% of an all-groups run printing a gigabyte of JSON,
/// whose writers already hand over 64 KiB at a time. A duplicate of descriptor 1 writes to the
/// same place without it; when duplicating fails, the buffered handle does the job.
fn unbuffered_stdout() -> Box<dyn Write> {
    use std::os::fd::AsFd;
    let stdout = std::io::stdout();
    match stdout.as_fd().try_clone_to_owned() {
        Ok(fd) => Box::new(std::fs::File::from(fd)),
        Err(_) => Box::new(std::io::BufWriter::new(stdout.lock())),
    }
}

fn summarize(translation: &Translation) {
    let report = &translation.report;
    let skipped: Vec<String> = report
        .skipped
        .0
        .iter()
        .map(|(reason, count)| format!("{reason:?}={}", count.count))
        .collect();
    eprintln!(
        "{} groups, {} partitions translated from {} checkpoint records ({} batches, {:.1} MiB) in {:.0} ms; {}{}",
        translation.groups().len(),
        translation.len(),
        report.records,
        report.batches,
        report.bytes as f64 / (1024.0 * 1024.0),
        report.elapsed.as_secs_f64() * 1000.0,
        if report.complete {
            "complete"
        } else {
            "INCOMPLETE: not every partition was read to its end"
        },
        if skipped.is_empty() {
            String::new()
        } else {
            format!("; skipped/flagged: {}", skipped.join(", "))
        },
    );
}

/// Connects and lists the cluster's topics, for the commands that work on topic names alone.
async fn cluster_topics(args: &TopologyArgs) -> Result<(MirrorClient, Vec<String>), String> {
    let settings = connection::settings(&args.connection)?;
    let client = MirrorClient::connect(settings.client, settings.policy)
        .await
        .map_err(|e| e.to_string())?;
    let topics = client
        .list_topics(&Deadline::after(args.timeout))
        .await
        .map_err(|e| e.to_string())?;
    Ok((client, topics))
}

async fn run_topics(args: TopologyArgs) -> Result<i32, String> {
    let (client, topics) = cluster_topics(&args).await?;
    let policy = client.replication_policy();
    let names = || topics.iter().map(String::as_str);
    let mut rows: Vec<(&str, &str)> = Vec::new();
    rows.extend(
        topology::checkpoint_topics(policy, names())
            .into_iter()
            .map(|t| ("checkpoints", t)),
    );
    rows.extend(
        topology::heartbeat_topics(policy, names())
            .into_iter()
            .map(|t| ("heartbeats", t)),
    );
    rows.extend(
        topology::remote_topics(policy, names())
            .into_iter()
            .map(|t| ("remote", t)),
    );
    let mut doc = serde_json::Map::new();
    for kind in ["checkpoints", "heartbeats", "remote"] {
        let names: Vec<&str> = rows
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, t)| *t)
            .collect();
        doc.insert(format!("{kind}_topics"), serde_json::json!(names));
    }
    let rows: Vec<(String, String)> = rows
        .iter()
        .map(|(kind, topic)| (kind.to_string(), topic.to_string()))
        .collect();
    output::write_listing(
        &mut std::io::stdout().lock(),
        args.output,
        ["KIND", "TOPIC"],
        &rows,
        &serde_json::Value::Object(doc),
    )
    .map_err(|e| format!("cannot write the output: {e}"))?;
    Ok(EXIT_OK)
}

async fn run_upstream(args: TopologyArgs) -> Result<i32, String> {
    let (client, topics) = cluster_topics(&args).await?;
    let policy = client.replication_policy();
    let names = || topics.iter().map(String::as_str);
    // Java reports an unreachable cluster as -1 hops; so do we, for parity.
    let rows: Vec<(String, i64)> = topology::upstream_clusters(policy, names())
        .into_iter()
        .map(|alias| {
            let hops = topology::replication_hops(policy, names(), alias);
            (alias.to_string(), hops.map_or(-1, i64::from))
        })
        .collect();
    let doc: serde_json::Map<String, serde_json::Value> = rows
        .iter()
        .map(|(alias, hops)| (alias.clone(), serde_json::json!(hops)))
        .collect();
    let rows: Vec<(String, String)> = rows
        .into_iter()
        .map(|(alias, hops)| (alias, hops.to_string()))
        .collect();
    output::write_listing(
        &mut std::io::stdout().lock(),
        args.output,
        ["CLUSTER", "HOPS"],
        &rows,
        &serde_json::json!({ "upstream_clusters": doc }),
    )
    .map_err(|e| format!("cannot write the output: {e}"))?;
    Ok(EXIT_OK)
}
