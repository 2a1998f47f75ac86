//! Undo files: created (exclusively, before anything is read from the cluster) and written
//! ahead of every commit by `apply --execute --undo-out FILE` and `failback --execute --undo-out
//! FILE`, run by `apply --plan FILE` (a dry run unless `--execute`).

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use mm2_offsets::apply::journal::{FileJournal, UndoJournal};
use mm2_offsets::apply::{self, ApplyOptions, ApplyPlan, ApplyReport, WriteAhead};
use mm2_offsets::client::{Deadline, KafkaClient};
use mm2_offsets::translate::Translation;
use mm2_offsets::undo::{self, UndoPlan, UndoReport, UndoState};

use crate::args::{ConnectionArgs, OutputFormat};
use crate::escape::for_terminal;
use crate::exit::{EXIT_USAGE, Stop, output_failed};
use crate::session;

/// The undo file of a run, created before anything is read from the cluster.
pub(crate) struct UndoOut {
    journal: FileJournal,
    path: PathBuf,
}

fn shown(path: &Path) -> String {
    for_terminal(&path.display().to_string()).into_owned()
}

/// Where `path` points: its folder resolved (symlinks, `..`), then its name, or itself resolved
/// when it exists.
fn resolved(path: &Path) -> PathBuf {
    if let Ok(full) = path.canonicalize() {
        return full;
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match (absolute.parent(), absolute.file_name()) {
        (Some(folder), Some(name)) => folder
            .canonicalize()
            .map_or_else(|_| absolute.clone(), |f| f.join(name)),
        _ => absolute,
    }
}

/// With `--execute --undo-out FILE`: checks FILE and creates it, exclusively, before anything
/// is read from the cluster. An existing path (file, directory, symlink, even a dangling one),
/// a missing folder, a place that cannot be written, or the same file as `--plan-out` is a
/// usage error (the exit code, after the message): nothing was read or written.
pub(crate) fn open_undo_out(
    undo_out: Option<&Path>,
    plan_out: Option<&Path>,
    execute: bool,
) -> Result<Option<UndoOut>, i32> {
    let Some(path) = undo_out.filter(|_| execute) else {
        return Ok(None);
    };
    let usage = |why: String| {
        eprintln!(
            "error: --undo-out {}: {why}; nothing was read or written",
            shown(path)
        );
        EXIT_USAGE
    };
    if let Some(plan_out) = plan_out
        && resolved(plan_out) == resolved(path)
    {
        return Err(usage(format!(
            "it is the same file as --plan-out {}: the plan would overwrite the undo; give two files",
            shown(plan_out)
        )));
    }
    match FileJournal::create(path) {
        Ok(journal) => Ok(Some(UndoOut {
            journal,
            path: path.to_path_buf(),
        })),
        Err(e) => Err(usage(match e.kind() {
            ErrorKind::AlreadyExists => {
                let what = match std::fs::symlink_metadata(path) {
                    Ok(m) if m.file_type().is_symlink() => "a symlink",
                    Ok(m) if m.is_dir() => "a directory",
                    _ => "a file",
                };
                format!(
                    "{what} of that name exists, and an undo file is never replaced (nor a symlink followed); name a new file"
                )
            }
            ErrorKind::NotFound => "its folder does not exist".to_string(),
            ErrorKind::PermissionDenied => {
                format!("cannot be created there ({e}); name a file in a folder you may write")
            }
            _ => format!("cannot be created ({e})"),
        })),
    }
}

/// Removes the undo file this run created, before anything was recorded in it: the run was
/// refused before writing.
pub(crate) fn discard(undo_out: &mut Option<UndoOut>) {
    if let Some(out) = undo_out.take() {
        let _ = std::fs::remove_file(&out.path);
    }
}

/// With `--execute --undo-out`: refuses the run (exit 2, after the words) when the undo of
/// some group could not run ([`GroupPlan::undo_blocked_reason`]: it would delete offsets and
/// the principal lacks DELETE on the group), unless `allow` (`--allow-undo-without-delete`).
/// The undo file, created by this run and holding no group yet, is removed: nothing was
/// written. Checked per group before the first commit, so that the refusal is never partial.
pub(crate) fn refuse_blocked_undo(
    plan: &ApplyPlan,
    undo_out: &mut Option<UndoOut>,
    allow: bool,
) -> Option<i32> {
    undo_out.as_ref()?;
    let blocked: Vec<(&str, String)> = plan
        .groups
        .iter()
        .filter_map(|g| g.undo_blocked_reason().map(|why| (g.group.as_str(), why)))
        .collect();
    if blocked.is_empty() {
        return None;
    }
    let verb = if allow { "warning" } else { "error" };
    for (group, why) in &blocked {
        eprintln!(
            "{verb}: --undo-out: the undo of group {} could not run: {}",
            for_terminal(group),
            for_terminal(why)
        );
    }
    if allow {
        eprintln!(
            "warning: --allow-undo-without-delete: writing {} group(s) whose undo could not delete what it must",
            blocked.len()
        );
        return None;
    }
    discard(undo_out);
    eprintln!(
        "error: --undo-out refused: the undo of {} group(s) could not run; grant DELETE on them, \
         or pass --allow-undo-without-delete to write without a complete way back; nothing was written",
        blocked.len()
    );
    Some(EXIT_USAGE)
}

/// With `--execute --undo-out`: finds out, before anything is written, whether the undo of
/// every group could run, then refuses the run as [`refuse_blocked_undo`] does. A group the
/// coordinator described says it in its authorized operations; a group the target does not know
/// yet is asked with an OffsetDelete of no partition ([`apply::probe_undo_deletes`], which
/// writes nothing). A group neither says anything about is named in a warning.
pub(crate) async fn check_undo_before_writing(
    client: &KafkaClient,
    plan: &mut ApplyPlan,
    undo_out: &mut Option<UndoOut>,
    allow: bool,
    deadline: &Deadline,
) -> Option<i32> {
    undo_out.as_ref()?;
    for (group, why) in apply::probe_undo_deletes(client, plan, deadline).await {
        eprintln!(
            "warning: --undo-out: could not find out whether the undo of group {} may delete offsets (DELETE on the group): {}",
            for_terminal(&group),
            for_terminal(&why)
        );
    }
    refuse_blocked_undo(plan, undo_out, allow)
}

/// Executes `plan`; with `undo_out` (created by [`open_undo_out`]), guarded by the undo
/// journal: every wave's previous offsets are written and flushed to the file before its
/// commits are sent, and each commit carries the run's marker. An interrupt (SIGINT, SIGTERM)
/// stops further commits; the report says which groups were not sent.
pub(crate) async fn execute_with_undo(
    client: &KafkaClient,
    plan: &ApplyPlan,
    checkpoints: Option<&Translation>,
    options: &ApplyOptions,
    undo_out: Option<&mut UndoOut>,
    deadline: &Deadline,
) -> Result<ApplyReport, Stop> {
    let stop = crate::signals::guard_writes();
    let Some(out) = undo_out else {
        let mut guard = WriteAhead::default();
        guard.stop = Some(stop);
        return Ok(
            apply::execute_write_ahead(client, plan, checkpoints, options, deadline, guard).await,
        );
    };
    let mut guard = WriteAhead::default();
    guard.journal = Some(&mut out.journal as &mut dyn UndoJournal);
    guard.stop = Some(stop);
    let report =
        apply::execute_write_ahead(client, plan, checkpoints, options, deadline, guard).await;
    let recorded = out.journal.groups();
    if let Some(why) = out.journal.failed() {
        eprintln!(
            "error: the undo file {} could not be written ({why}): no commit was sent after it; the groups not sent say so",
            shown(&out.path)
        );
    }
    if recorded == 0 {
        eprintln!(
            "undo: no group was committed, so {} holds no group to undo",
            shown(&out.path)
        );
    } else {
        eprintln!(
            "undo: {recorded} group(s) recorded in {} before their commits (run it with apply --plan)",
            shown(&out.path)
        );
    }
    Ok(report)
}

/// Runs the undo file `text` (read from `path`) against the cluster `connection` names: a dry
/// run that says what would be restored, or with `execute` the restore. Exit code 0 when
/// everything was (or would be) restored, 3 when some partition changed since or a group was
/// skipped, 1 on an error, 2 when `--undo-out` was given too (an undo is not undone in turn).
pub(crate) async fn run_file(
    connection: &ConnectionArgs,
    budget: &Deadline,
    (text, path): (&str, &Path),
    (execute, undo_out): (bool, bool),
    output: OutputFormat,
    options: &ApplyOptions,
) -> Result<i32, Stop> {
    let shown = for_terminal(&path.display().to_string()).into_owned();
    if undo_out {
        eprintln!(
            "error: --plan {shown} is an undo file, run as it is: --undo-out does not apply to it"
        );
        return Ok(crate::exit::EXIT_USAGE);
    }
    let parsed = UndoPlan::parse(text).map_err(|e| format!("--plan {shown}: {e}"))?;
    if let Some(line) = parsed.torn_line {
        eprintln!(
            "note: --plan {shown}: line {line} was cut short (the run stopped while writing it; that wave's commits were not sent): ignored"
        );
    }
    if parsed.end.is_none() {
        eprintln!(
            "note: --plan {shown}: the run did not finish; every group it recorded may or may not have been committed, and each is checked on the cluster"
        );
    }
    let undo = parsed.plan;
    let settings = crate::connection::settings(connection)?.for_commits(options.concurrency);
    let client = session::connect(settings, budget.remaining()).await?;
    let mode = if execute {
        apply::Mode::Execute
    } else {
        apply::Mode::DryRun
    };
    let report = undo::execute_undo(client.kafka(), &undo, options, mode, budget).await;
    let mut out = std::io::stdout().lock();
    let written = match output {
        OutputFormat::Json => {
            let doc = serde_json::json!({
                "schema_version": apply::PLAN_SCHEMA_VERSION,
                "executed": execute,
                "undo": &undo,
                "result": &report,
                "summary": apply::Summary::of_undo(&report),
            });
            serde_json::to_writer(&mut out, &doc)
                .map_err(std::io::Error::other)
                .and_then(|_| writeln!(out))
        }
        OutputFormat::Csv => write_csv(&mut out, &report),
        _ => write_table(&mut out, &report),
    };
    let printed = written.and_then(|_| out.flush());
    drop(out);
    let code = summarize(&report);
    printed.map_err(output_failed)?;
    Ok(code)
}

fn opt(value: Option<i64>) -> String {
    value.map_or_else(|| "none".to_string(), |v| v.to_string())
}

/// `-o csv`: one row per partition, the table's columns (strings exact, escaped on a terminal).
fn write_csv(out: &mut dyn Write, report: &UndoReport) -> std::io::Result<()> {
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let text = |s: &str| crate::plan_csv::field(s, terminal);
    let num = |v: Option<i64>| v.map_or_else(String::new, |v| v.to_string());
    writeln!(
        out,
        "group,topic,partition,written,found,restore,state,error,skipped"
    )?;
    for g in &report.groups {
        for p in &g.partitions {
            writeln!(
                out,
                "{},{},{},{},{},{},{},{},{}",
                text(&g.group),
                text(&p.topic),
                p.partition,
                p.written,
                num(p.found),
                num(p.before),
                name(p.state),
                text(p.error.as_deref().unwrap_or("")),
                text(g.skipped.as_deref().unwrap_or("")),
            )?;
        }
    }
    Ok(())
}

fn write_table(out: &mut dyn Write, report: &UndoReport) -> std::io::Result<()> {
    let mut rows = vec![
        [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "WRITTEN",
            "FOUND",
            "RESTORE",
            "STATE",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for g in &report.groups {
        for p in &g.partitions {
            let state = match (&p.state, &p.error) {
                (state, Some(e)) => format!("{}: {}", name(*state), for_terminal(e)),
                (state, None) => name(*state).to_string(),
            };
            rows.push(vec![
                for_terminal(&g.group).into_owned(),
                for_terminal(&p.topic).into_owned(),
                p.partition.to_string(),
                p.written.to_string(),
                opt(p.found),
                opt(p.before),
                state,
            ]);
        }
    }
    crate::output::write_aligned(out, &rows)?;
    for g in &report.groups {
        if let Some(why) = &g.skipped {
            writeln!(
                out,
                "group {}: skipped: {}",
                for_terminal(&g.group),
                for_terminal(why)
            )?;
        }
    }
    Ok(())
}

fn name(state: UndoState) -> &'static str {
    match state {
        UndoState::WouldRestore => "would-restore",
        UndoState::WouldDelete => "would-delete",
        UndoState::Restored => "restored",
        UndoState::Deleted => "deleted",
        UndoState::AlreadyRestored => "already-restored",
        UndoState::ChangedSince => "changed-since (refused)",
        UndoState::NotWrittenByRun => "not-written-by-run (refused)",
        UndoState::TopicChanged => "topic-changed (refused)",
        UndoState::OutOfRange => "out-of-range (refused)",
        UndoState::Failed => "failed",
        UndoState::Unknown => "UNKNOWN",
    }
}

/// The undo's line on stderr and its exit code, from the one summary apply and failback print
/// too (counted from the partitions' states: restored and read back, refused by state, ...).
fn summarize(report: &UndoReport) -> i32 {
    crate::exit::summarize("undo", &apply::Summary::of_undo(report))
}
