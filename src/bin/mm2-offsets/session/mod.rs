//! What every command that reads shares: the group selection its flags describe, connecting
//! within the run's budget (with the same diagnoses for every cluster), finding the sources, and
//! reading the checkpoints with a progress line.

pub mod at_risk;
pub mod precise;
pub mod sync_clusters;

use std::sync::Arc;

use mm2_offsets::client::{Deadline, IsolationLevel};
use mm2_offsets::mm2::topology;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, ReadProgress, TranslateRequest, Translation};

use crate::args::{GroupArgs, Isolation, TopologyArgs, TranslateArgs};
use crate::exit::{EXIT_ERROR, EXIT_USAGE};
use crate::{connection, diagnose, escape, groups_file, hints, progress};

/// The exact ids asked for with --group and --groups-file.
fn requested_ids(args: &GroupArgs) -> Result<Vec<String>, String> {
    let mut ids = args.groups.clone();
    if let Some(path) = &args.groups_file {
        let text = read_bounded(
            path,
            "--groups-file",
            groups_file::MAX_BYTES,
            "a groups file holds one group id a line; this is probably the wrong file",
        )?;
        ids.extend(groups_file::parse(&text));
    }
    Ok(ids)
}

/// The UTF-8 text of the regular file `path` given as `flag`, at most `limit` bytes: a FIFO or
/// a device is refused by name, as is a larger file (`why` says what such a file holds).
pub fn read_bounded(
    path: &std::path::Path,
    flag: &str,
    limit: u64,
    why: &'static str,
) -> Result<String, String> {
    let shown = escape::for_terminal(&path.display().to_string()).to_string();
    use mm2_offsets::config::files::{FileError, read_regular_file};
    let bytes = read_regular_file(path, limit, why).map_err(|e| match e {
        FileError::Io(e) => format!("cannot read {flag} {shown}: {e}"),
        other => format!("{flag} {shown} {other}"),
    })?;
    String::from_utf8(bytes).map_err(|_| format!("{flag} {shown} is not UTF-8 text"))
}

/// The selection the flags describe, from the ids already read (`--group`, `--groups-file`).
/// Every error is a usage error: no selection at all, or a pattern Java rejects or we refuse.
pub fn group_selector(args: &GroupArgs, ids: Vec<String>) -> Result<GroupSelector, String> {
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

/// The groups the flags select, from the ids of `--group` and `--groups-file` and the patterns.
/// Errors name the flag; the caller decides the exit code.
pub fn selector(args: &GroupArgs) -> Result<GroupSelector, String> {
    let ids = if args.all_groups {
        Vec::new()
    } else {
        requested_ids(args)?
    };
    group_selector(args, ids)
}

/// Connects within `timeout`: connection setup (TCP, TLS, SASL, the first metadata) is bounded
/// by the command's budget, not only by its own default.
pub async fn connect(
    settings: connection::Settings,
    timeout: std::time::Duration,
) -> Result<MirrorClient, String> {
    let policy = settings.policy;
    let (client, servers) = bounded(settings.client, timeout);
    let connecting = MirrorClient::connect(client, policy);
    within(connecting, timeout, &servers, "--timeout").await
}

/// Connects a plain client to another cluster of the run (`what`: "offset-syncs cluster",
/// "source cluster") within what is left of the run's `budget`, with the same bounds and the
/// same diagnoses as the target's connection.
pub async fn connect_other(
    settings: connection::Settings,
    budget: &Deadline,
    what: &str,
) -> Result<mm2_offsets::client::KafkaClient, String> {
    let timeout = budget.remaining();
    let (client, servers) = bounded(settings.client, timeout);
    let connecting = mm2_offsets::client::KafkaClient::connect(client);
    within(connecting, timeout, &servers, "what was left of --timeout")
        .await
        .map_err(|e| format!("{what}: {e}"))
}

/// `client` with its setup and request timeouts cut to `timeout`, and its servers in words. The
/// client retries bootstrap (refused, reset, stalled) until its request timeout: cut to the
/// budget, it gives up in time with its own error, which names the last cause ("connection
/// refused", a TLS failure).
fn bounded(
    mut client: mm2_offsets::config::ClientConfig,
    timeout: std::time::Duration,
) -> (mm2_offsets::config::ClientConfig, String) {
    client.connection_setup_timeout = client.connection_setup_timeout.min(timeout);
    client.request_timeout = client.request_timeout.min(timeout);
    let servers = client.bootstrap_servers.join(",");
    (client, servers)
}

/// `connecting` within `timeout` and a little grace (the outer timer only catches what hangs
/// anyway), its failure diagnosed the same way for every cluster.
async fn within<T>(
    connecting: impl std::future::Future<Output = Result<T, mm2_offsets::client::ClientError>>,
    timeout: std::time::Duration,
    servers: &str,
    budget: &str,
) -> Result<T, String> {
    let grace = std::time::Duration::from_millis(500);
    match tokio::time::timeout(timeout.saturating_add(grace), connecting).await {
        Ok(connected) => connected.map_err(|e| diagnose::connect_error(&e)),
        Err(_) => Err(format!(
            "could not connect to {servers} within {budget} {}: probable cause: {}",
            // What was left of the run's budget, to the millisecond.
            humantime::format_duration(std::time::Duration::from_millis(
                u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)
            )),
            diagnose::SLOW_SETUP_HINT
        )),
    }
}

/// Connects as the translate options say and builds their request for the groups `groups`
/// selects: the client, the request, and the counters its progress line follows. `budget` is
/// the run's one deadline (`--timeout`, started by the command): connecting and finding the
/// sources spend from it, and the read gets what is left, so that a slow bootstrap cannot
/// triple the wait, nor a read leave a later step (apply's plan and commits) a fresh budget.
/// `commits`: the OffsetCommits the command will have in flight per coordinator, if it commits
/// (see [`connection::Settings::for_commits`]).
pub async fn prepare_read(
    args: &TranslateArgs,
    groups: GroupSelector,
    budget: &Deadline,
    commits: Option<usize>,
) -> Result<(MirrorClient, TranslateRequest, Arc<ReadProgress>), String> {
    let mut settings = connection::settings(&args.connection)?;
    if let Some(in_flight) = commits {
        settings = settings.for_commits(in_flight);
    }
    let client = connect(settings, budget.remaining()).await?;
    let sources = if args.sources.is_empty() {
        discover_sources(&client, budget.remaining()).await?
    } else {
        args.sources.clone()
    };
    let progress = Arc::new(ReadProgress::default());
    let mut request = TranslateRequest::for_sources(sources, groups);
    request.isolation = match args.isolation {
        Isolation::ReadUncommitted => IsolationLevel::ReadUncommitted,
        Isolation::ReadCommitted => IsolationLevel::ReadCommitted,
    };
    request.timeout = budget.remaining();
    request.parallelism = usize::from(args.parallelism);
    request.allow_partial = args.allow_partial;
    request.max_bytes_per_fetch = args.max_fetch_bytes;
    request.progress = Some(progress.clone());
    Ok((client, request, progress))
}

/// Reads the checkpoints of the groups `groups` selects, with the translate options, within
/// `budget` (see [`prepare_read`], and for `commits`): the client, the translation, the sources
/// read.
pub async fn read_translation(
    args: &TranslateArgs,
    groups: GroupSelector,
    budget: &Deadline,
    commits: Option<usize>,
) -> Result<(MirrorClient, Translation, Vec<String>), String> {
    let (client, request, progress) = prepare_read(args, groups, budget, commits).await?;
    let translation = {
        let _line = progress::ProgressLine::start(progress, !args.run.no_progress);
        client.translate(&request).await
    };
    let translation = match translation {
        Ok(t) => t,
        Err(e) => return Err(hints::explain(&e)),
    };
    Ok((client, translation, request.sources))
}

/// Reads the checkpoints of `sources` for the groups `groups` selects, with the read options of
/// `args` (isolation, parallelism, fetch size, progress line) within what is left of `budget`:
/// what a saved plan is checked against. An incomplete read is an error.
pub async fn read_checkpoints(
    args: &TranslateArgs,
    client: &MirrorClient,
    sources: Vec<String>,
    groups: GroupSelector,
    budget: &Deadline,
) -> Result<Translation, String> {
    let progress = Arc::new(ReadProgress::default());
    let mut request = TranslateRequest::for_sources(sources, groups);
    request.isolation = match args.isolation {
        Isolation::ReadUncommitted => IsolationLevel::ReadUncommitted,
        Isolation::ReadCommitted => IsolationLevel::ReadCommitted,
    };
    request.timeout = budget.remaining();
    request.parallelism = usize::from(args.parallelism);
    request.allow_partial = false;
    request.max_bytes_per_fetch = args.max_fetch_bytes;
    request.progress = Some(progress.clone());
    let _line = progress::ProgressLine::start(progress, !args.run.no_progress);
    client
        .translate(&request)
        .await
        .map_err(|e| hints::explain(&e))
}

/// The group selection, or the exit code of an error already printed: a groups file that
/// cannot be read is an error (exit 1, like any unreadable file); no selection, or a pattern
/// Java rejects or we refuse, is a usage error (exit 2).
pub fn group_selection(args: &GroupArgs) -> Result<GroupSelector, i32> {
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

/// Every source alias with a checkpoints topic on the cluster, when --source is not given.
pub async fn discover_sources(
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

/// Connects and lists the cluster's topics, for the commands that work on topic names alone.
pub async fn cluster_topics(args: &TopologyArgs) -> Result<(MirrorClient, Vec<String>), String> {
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
