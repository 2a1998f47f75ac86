//! The `mm2-offsets` command: the `cli` layer. It parses arguments, builds the client settings,
//! runs the library, prints results and maps outcomes to exit codes.
//!
//! It lives in the binary, not in the library: it is one user of the `mm2_offsets` crate, and
//! nothing here is a promise to programs that embed the crate.

mod apply;
mod args;
mod chunked;
mod connection;
mod diagnose;
mod escape;
mod generate;
mod groups_file;
mod hints;
mod output;
mod precise;
mod progress;
mod reset_files;
mod validate;
mod watch;

use args::{Cli, Command, OutputFormat, TopologyArgs, TranslateArgs};

use std::io::{IsTerminal, Write};
use std::os::fd::AsFd;
use std::sync::Arc;

use clap::Parser;

use mm2_offsets::client::{Deadline, IsolationLevel};
use mm2_offsets::mm2::topology;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, ReadProgress, TranslateRequest, Translation};

/// Exit code: every requested partition was read to its end.
pub const EXIT_OK: i32 = 0;
/// Exit code: an error; nothing or nothing trustworthy was printed.
pub const EXIT_ERROR: i32 = 1;
/// Exit code: wrong usage (clap's own code).
pub const EXIT_USAGE: i32 = 2;
/// Exit code: an incomplete result was printed because `--allow-partial` was given.
pub const EXIT_INCOMPLETE: i32 = 3;
/// Exit code: stdout's reader went away (`| head`). What a shell reports for a process that
/// SIGPIPE ends (128 + 13), as it would for `cat` or `grep`: quiet, yet a `set -o pipefail`
/// script can still tell that the output was cut short.
pub const EXIT_BROKEN_PIPE: i32 = 141;

/// Why a command stopped without its normal result.
enum Stop {
    /// An error, printed on stderr.
    Error(String),
    /// Stdout's reader is gone: stop quietly.
    BrokenPipe,
}

impl From<String> for Stop {
    fn from(message: String) -> Self {
        Stop::Error(message)
    }
}

/// A failed write of the output: quiet on a broken pipe, otherwise an error that says so.
fn output_failed(error: std::io::Error) -> Stop {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        Stop::BrokenPipe
    } else {
        Stop::Error(format!("cannot write the output: {error}"))
    }
}

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
    if let Err(message) = validate::usage(&cli.command) {
        eprintln!("error: {message}\n\nFor more information, try '--help'.");
        return EXIT_USAGE;
    }
    if let Some(problem) = stdout_closed() {
        eprintln!(
            "error: standard output is {problem}; nothing could be printed. Redirect it (> FILE, or > /dev/null to discard)"
        );
        return EXIT_ERROR;
    }
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
        Err(Stop::BrokenPipe) => EXIT_BROKEN_PIPE,
        Err(Stop::Error(message)) => {
            // Messages quote group ids, topics and broker answers: untrusted on a terminal.
            eprintln!("error: {}", escape::for_terminal(&message));
            EXIT_ERROR
        }
    }
}

/// Whether the caller closed stdout (`>&-`). Rust's runtime puts /dev/null, opened for reading
/// and writing, on a closed standard descriptor before `main`, so the output would vanish with
/// exit code 0. A shell's `> /dev/null` opens it write-only, so the two can be told apart.
fn stdout_closed() -> Option<&'static str> {
    let fd = match std::io::stdout().as_fd().try_clone_to_owned() {
        Ok(fd) => std::fs::File::from(fd),
        Err(_) => return Some("closed"),
    };
    let (Ok(ours), Ok(null)) = (fd.metadata(), std::fs::metadata("/dev/null")) else {
        return None;
    };
    use std::os::unix::fs::MetadataExt;
    if ours.rdev() != null.rdev() || ours.ino() != null.ino() {
        return None;
    }
    // The access mode, from the kernel's description of descriptor 1 (Linux): O_RDWR is 2.
    let info = std::fs::read_to_string("/proc/self/fdinfo/1").ok()?;
    let flags = info.lines().find_map(|l| l.strip_prefix("flags:"))?.trim();
    let flags = u32::from_str_radix(flags, 8).ok()?;
    (flags & 3 == 2).then_some("closed (>&-)")
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
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}

async fn run(command: Command) -> Result<i32, Stop> {
    match command {
        Command::Translate(args) => run_translate(args).await,
        Command::Apply(args) => apply::run(*args).await,
        Command::Watch(args) => watch::run(*args).await.map_err(Stop::from),
        Command::Topics(args) => run_topics(args).await,
        Command::Upstream(args) => run_upstream(args).await,
        Command::Completions { shell } => {
            generate::completions(shell, &mut std::io::stdout()).map_err(Stop::from)
        }
        Command::Man => generate::man_page(&mut std::io::stdout()).map_err(Stop::from),
    }
}

/// The exact ids asked for with --group and --groups-file.
fn requested_ids(args: &TranslateArgs) -> Result<Vec<String>, String> {
    let mut ids = args.groups.clone();
    if let Some(path) = &args.groups_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read --groups-file {}: {e}", path.display()))?;
        ids.extend(groups_file::parse(&text));
    }
    Ok(ids)
}

/// The selection the flags describe, from the ids already read (`--group`, `--groups-file`).
/// Every error is a usage error: no selection at all, or a pattern Java rejects or we refuse.
fn group_selector(args: &TranslateArgs, ids: Vec<String>) -> Result<GroupSelector, String> {
    if args.all_groups {
        return Ok(GroupSelector::all());
    }
    if ids.is_empty() && args.group_regexes.is_empty() {
        return Err(
            "no groups selected: pass --group, --group-regex, --groups-file or --all-groups"
                .to_string(),
        );
    }
    GroupSelector::new(
        ids.iter().map(String::as_str),
        args.group_regexes.iter().map(String::as_str),
    )
    .map_err(|e| format!("--group-regex: {e}"))
}

/// Connects within `timeout`: connection setup (TCP, TLS, SASL, the first metadata) is bounded
/// by the command's budget, not only by its own default.
async fn connect(
    settings: connection::Settings,
    timeout: std::time::Duration,
) -> Result<MirrorClient, String> {
    let mut client = settings.client;
    client.connection_setup_timeout = client.connection_setup_timeout.min(timeout);
    // The client retries bootstrap (refused, reset, stalled) until its request timeout: cut
    // that to the budget too, so it gives up in time with its own error, which names the last
    // cause ("connection refused", a TLS failure). The outer timer, a little later, only
    // catches what hangs anyway.
    client.request_timeout = client.request_timeout.min(timeout);
    let servers = client.bootstrap_servers.join(",");
    let connecting = MirrorClient::connect(client, settings.policy);
    let grace = std::time::Duration::from_millis(500);
    match tokio::time::timeout(timeout.saturating_add(grace), connecting).await {
        Ok(connected) => connected.map_err(|e| diagnose::connect_error(&e)),
        Err(_) => Err(format!(
            "could not connect to {servers} within --timeout {}: probable cause: {}",
            // What was left of the run's budget, to the millisecond.
            humantime::format_duration(std::time::Duration::from_millis(
                u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)
            )),
            diagnose::SLOW_SETUP_HINT
        )),
    }
}

/// Connects as the translate options say and builds their request for the groups `groups`
/// selects: the client, the request, and the counters its progress line follows.
async fn prepare_read(
    args: &TranslateArgs,
    groups: GroupSelector,
) -> Result<(MirrorClient, TranslateRequest, Arc<ReadProgress>), String> {
    // --timeout is the budget of the whole run: connecting and finding the sources spend from
    // it, and the read gets what is left (so a slow bootstrap cannot triple the wait).
    let budget = Deadline::after(args.timeout);
    let settings = connection::settings(&args.connection)?;
    let client = connect(settings, budget.remaining()).await?;
    let sources = if args.sources.is_empty() {
        discover_sources(&client, budget.remaining()).await?
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
        timeout: budget.remaining(),
        parallelism: usize::from(args.parallelism),
        allow_partial: args.allow_partial,
        max_bytes_per_fetch: args.max_fetch_bytes,
        progress: Some(progress.clone()),
        min_split_offsets: mm2_offsets::translate::MIN_SPLIT_OFFSETS,
    };
    Ok((client, request, progress))
}

/// Reads the checkpoints of the groups `groups` selects, with the translate options: the
/// client, the translation, the sources read.
async fn read_translation(
    args: &TranslateArgs,
    groups: GroupSelector,
) -> Result<(MirrorClient, Translation, Vec<String>), String> {
    let (client, request, progress) = prepare_read(args, groups).await?;
    let translation = {
        let _line = progress::ProgressLine::start(progress, !args.no_progress);
        client.translate(&request).await
    };
    let translation = match translation {
        Ok(t) => t,
        Err(e) => return Err(hints::explain(&e)),
    };
    Ok((client, translation, request.sources))
}

/// The group selection, or the exit code of an error already printed: a groups file that
/// cannot be read is an error (exit 1, like any unreadable file); no selection, or a pattern
/// Java rejects or we refuse, is a usage error (exit 2).
fn group_selection(args: &TranslateArgs) -> Result<GroupSelector, i32> {
    let fail = |message: String, code: i32| {
        eprintln!("error: {message}");
        code
    };
    let ids = if args.all_groups {
        Vec::new()
    } else {
        requested_ids(args).map_err(|message| fail(message, EXIT_ERROR))?
    };
    group_selector(args, ids).map_err(|message| fail(message, EXIT_USAGE))
}

async fn run_translate(args: TranslateArgs) -> Result<i32, Stop> {
    let groups = match group_selection(&args) {
        Ok(groups) => groups,
        Err(code) => return Ok(code),
    };
    if args.precise.precise {
        let (client, request, progress) = prepare_read(&args, groups).await?;
        let complete = {
            let _line = progress::ProgressLine::start(progress, !args.no_progress);
            precise::run(&args, &client, &request).await?
        };
        return Ok(if complete { EXIT_OK } else { EXIT_INCOMPLETE });
    }
    let (_client, translation, _sources) = read_translation(&args, groups).await?;
    print_translation(&args, &translation)?;
    let missing = translation.missing_groups();
    summarize(&translation);
    for group in missing {
        eprintln!(
            "warning: group {group:?} was requested but has no checkpoints in the sources read"
        );
    }
    Ok(if !missing.is_empty() && args.fail_on_missing_groups {
        eprintln!(
            "error: {} requested group(s) not found (--fail-on-missing-groups)",
            missing.len()
        );
        EXIT_ERROR
    } else if translation.report.complete {
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
        .map_err(|e| hints::explain(&e))?;
    let policy = client.replication_policy();
    let sources: Vec<String> =
        topology::checkpoint_topics(policy, topics.iter().map(String::as_str))
            .into_iter()
            .filter_map(|t| policy.checkpoints_topic_alias(t))
            .map(str::to_string)
            .collect();
    if sources.is_empty() {
        // Topics that look like checkpoints topics under another separator or policy: naming
        // them points at replication.policy.separator rather than at MirrorMaker 2.
        let lookalikes: Vec<String> = topics
            .iter()
            .filter(|t| t.contains("checkpoints"))
            .take(10)
            .map(|t| format!("{:?}", escape::shortened(t)))
            .collect();
        if !lookalikes.is_empty() {
            return Err(format!(
                "no checkpoints topics for the replication policy in use (separator {:?}), but the cluster has {}: set replication.policy.separator (or .class) as MirrorMaker 2 has it, or pass --source ALIAS",
                policy.separator(),
                lookalikes.join(", ")
            ));
        }
        return Err("no checkpoints topics on this cluster: is MirrorMaker 2 writing checkpoints here (emit.checkpoints.enabled), and is this the target cluster? Pass --source ALIAS to name one".to_string());
    }
    Ok(sources)
}

fn print_translation(args: &TranslateArgs, translation: &Translation) -> Result<(), Stop> {
    let mut out = unbuffered_stdout();
    let written = match args.output {
        OutputFormat::Table => output::write_table(&mut out, translation),
        OutputFormat::Json => output::write_json(&mut out, translation),
        OutputFormat::Csv => {
            output::write_csv(&mut out, translation, std::io::stdout().is_terminal())
        }
        OutputFormat::ResetCsv => {
            let files = reset_files::write(&args.reset_dir(), translation)?;
            // SOURCE, GROUP, FILE per line; the exact ids are in the directory's index.csv.
            files.iter().try_for_each(|(file, path)| {
                writeln!(
                    out,
                    "{}\t{}\t{}",
                    escape::for_terminal(file.source),
                    escape::for_terminal(file.group),
                    escape::for_terminal(&path.display().to_string())
                )
            })
        }
    };
    written.and_then(|_| out.flush()).map_err(output_failed)
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
    // One budget for the whole run, as for translate.
    let budget = Deadline::after(args.timeout);
    let client = connect(settings, budget.remaining()).await?;
    let topics = client
        .list_topics(&budget)
        .await
        .map_err(|e| hints::explain(&e))?;
    Ok((client, topics))
}

async fn run_topics(args: TopologyArgs) -> Result<i32, Stop> {
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
    .and_then(|_| std::io::stdout().flush())
    .map_err(output_failed)?;
    Ok(EXIT_OK)
}

async fn run_upstream(args: TopologyArgs) -> Result<i32, Stop> {
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
    .and_then(|_| std::io::stdout().flush())
    .map_err(output_failed)?;
    Ok(EXIT_OK)
}
