//! Undo files: written by `apply --execute --undo-out FILE` and `failback --execute --undo-out
//! FILE`, run by `apply --plan FILE` (a dry run unless `--execute`).

use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use mm2_offsets::apply::undo::{self, UndoPlan, UndoReport, UndoState};
use mm2_offsets::apply::{self, ApplyOptions, ApplyPlan, ApplyReport};
use mm2_offsets::client::{Deadline, KafkaClient};
use mm2_offsets::translate::Translation;

use crate::args::{ConnectionArgs, OutputFormat};
use crate::escape::for_terminal;
use crate::exit::{EXIT_ERROR, EXIT_INCOMPLETE, EXIT_OK, Stop, output_failed};
use crate::session;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Executes `plan`; with `undo_out`, reads first what the partitions to write hold, and after
/// the execute writes the undo of what it changed to that file (even when some groups failed:
/// what was written is what must be undoable). The file is written before the report is
/// printed, and a failure to write it is an error naming the file.
pub(crate) async fn execute_with_undo(
    client: &KafkaClient,
    plan: &ApplyPlan,
    checkpoints: Option<&Translation>,
    options: &ApplyOptions,
    undo_out: Option<&Path>,
    deadline: &Deadline,
) -> Result<ApplyReport, Stop> {
    let Some(path) = undo_out else {
        return Ok(apply::execute_with(client, plan, checkpoints, options, deadline).await);
    };
    let before = undo::read_before(client, plan, deadline)
        .await
        .map_err(|e| {
            format!(
                "cannot read the groups' offsets before committing, so no undo could be written; \
             nothing was committed: {e}"
            )
        })?;
    let report = apply::execute_with(client, plan, checkpoints, options, deadline).await;
    let undo = undo::undo_plan(plan, &report, &before, now_ms());
    let json = serde_json::to_string_pretty(&undo).map_err(|e| e.to_string())?;
    std::fs::write(path, json + "\n").map_err(|e| {
        format!(
            "the commits were made, but the undo file {} could not be written: {e}; read the \
             groups' offsets now if you need to restore them",
            for_terminal(&path.display().to_string())
        )
    })?;
    eprintln!(
        "undo: {} partition(s) of {} group(s) written to {} (run it with apply --plan)",
        undo.partitions(),
        undo.groups.len(),
        for_terminal(&path.display().to_string())
    );
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
    let undo: UndoPlan = serde_json::from_str(text)
        .map_err(|e| format!("--plan {shown} is not an undo plan: {e}"))?;
    undo.check_schema()
        .map_err(|e| format!("--plan {shown}: {e}"))?;
    let settings = crate::connection::settings(connection)?.for_commits(options.concurrency);
    let client = session::connect(settings, budget.remaining()).await?;
    let report = undo::execute_undo(client.kafka(), &undo, options, execute, budget).await;
    let mut out = std::io::stdout().lock();
    let written = match output {
        OutputFormat::Json => {
            let doc = serde_json::json!({
                "schema_version": apply::PLAN_SCHEMA_VERSION,
                "executed": execute,
                "undo": &undo,
                "result": &report,
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
        UndoState::Failed => "failed",
        UndoState::Unknown => "UNKNOWN",
    }
}

fn summarize(report: &UndoReport) -> i32 {
    let total: usize = report.groups.iter().map(|g| g.partitions.len()).sum();
    if report.executed {
        eprintln!(
            "undo: {} of {total} partition(s) restored and read back{}",
            report.restored(),
            if report.has_refusals() {
                "; some were refused or skipped (named above)"
            } else {
                ""
            }
        );
    } else {
        eprintln!(
            "dry run: the undo would restore what is listed; nothing written (pass --execute)"
        );
    }
    if report.has_errors() {
        EXIT_ERROR
    } else if report.has_refusals() {
        EXIT_INCOMPLETE
    } else {
        EXIT_OK
    }
}
