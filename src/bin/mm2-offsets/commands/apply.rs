//! `mm2-offsets apply`: translate, plan the commits on the target, print the plan, and with
//! `--execute` commit it. Dry run by default.

use std::io::{IsTerminal, Write};

use mm2_offsets::apply::{
    self, ApplyOptions, ApplyPlan, ApplyReport, ApplyVerdict, CommitState, GroupOutcome,
    GroupStatus, PlanInput,
};
use mm2_offsets::client::{Deadline, GroupProtocol, KafkaClient};
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{MirrorClient, Translation};

use super::source_plan::SourceBinding;
use crate::args::{ApplyArgs, OutputFormat};
use crate::exit::{EXIT_ERROR, EXIT_INCOMPLETE, EXIT_USAGE, Stop, output_failed};
use crate::session;

/// The largest plan file read: a plan row is about 400 bytes, so this holds some 600,000
/// partitions.
const MAX_PLAN_BYTES: u64 = 256 << 20;

/// Runs `apply` and returns the exit code. A closed stdout (`| head`) stops quietly with the
/// broken-pipe exit code, as translate does, after the summary on stderr.
pub(crate) async fn run(args: ApplyArgs) -> Result<i32, Stop> {
    // --timeout is the budget of the whole run: connecting, reading the checkpoints, planning,
    // the re-checks, the commits and the read-back all spend from this one deadline.
    let mut deadline = Deadline::after(args.translate.run.timeout);
    // The undo file first, before anything is read from the cluster: a place it cannot be
    // created is found out before any commit could need it.
    let mut undo_out = match super::undo::open_undo_out(
        args.undo_out.as_deref(),
        args.plan_out.as_deref(),
        args.execute,
    ) {
        Ok(undo_out) => undo_out,
        Err(code) => return Ok(code),
    };
    let p = &args.translate.precise;
    let mut options = ApplyOptions::default();
    options.rules.allow_rewind = args.allow_rewind;
    options.streams_on_kafka_4_2 = args.streams_on_kafka_4_2;
    options.rules.clamp = args.clamp;
    options.rules.max_checkpoint_age_ms = args
        .max_checkpoint_age
        .map(|d| d.as_millis().min(i64::MAX as u128) as i64);
    options.input = match (p.precise, p.from_source_offsets) {
        (true, true) => PlanInput::SourceOffsets,
        (true, false) => PlanInput::Precise,
        _ => PlanInput::Checkpoints,
    };
    let mut at_risk = None;
    let (client, plan, report) = match &args.plan {
        Some(path) => match saved_plan(
            &args,
            path,
            &options,
            &mut undo_out,
            &mut at_risk,
            &deadline,
        )
        .await?
        {
            Ok(done) => done,
            Err(code) => return Ok(code),
        },
        None => {
            let groups = match session::group_selection(&args.translate.select) {
                Ok(groups) => groups,
                Err(code) => return Ok(code),
            };
            let commits = args.execute.then_some(options.concurrency);
            // With --precise the plan's input is the precise translation: each row's offset is
            // the precise one (from the checkpoint or, with --from-source-offsets, the source).
            let (mirror, translation, _) = if let Some(wait) = args.wait_until_copied {
                let read = super::wait_copied::wait(&args, groups, wait, commits).await?;
                match read {
                    Ok(read) => {
                        // The wait had DURATION of its own: the plan and the writes get a
                        // whole --timeout after it, as without the wait.
                        deadline = Deadline::after(args.translate.run.timeout);
                        read
                    }
                    Err(code) => return Ok(code),
                }
            } else if args.translate.precise.precise {
                session::precise::read_for_apply(&args.translate, groups, &deadline, commits)
                    .await?
            } else {
                session::read_translation(&args.translate, groups, &deadline, commits).await?
            };
            if let Some(code) =
                missing_groups(&translation, args.translate.run.fail_on_missing_groups)
            {
                return Ok(code);
            }
            phase("checkpoints read", &deadline);
            // What this failover leaves behind on the primary, said before anything is written.
            at_risk = session::at_risk::measure_for(
                &args.translate.precise.syncs,
                args.translate.precise.replication_snapshot.as_deref(),
                &args.translate.connection,
                &mirror,
                &translation,
                args.translate.max_fetch_bytes,
                &deadline,
            )
            .await;
            if let Some(at_risk) = &at_risk {
                at_risk.print();
            }
            let mut plan = mirror
                .plan_apply(&translation, &options, &deadline)
                .await
                .map_err(|e| e.to_string())?;
            phase("planned", &deadline);
            if let Some(path) = &args.plan_out {
                // A plan from the source's offsets says how it translated them, so that
                // --plan can translate them again the same way.
                let binding = (options.input == PlanInput::SourceOffsets)
                    .then(|| SourceBinding::of(&args.translate));
                let doc = super::source_plan::document(&plan, binding.as_ref())?;
                let json = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
                std::fs::write(path, json + "\n")
                    .map_err(|e| format!("cannot write --plan-out {}: {e}", path.display()))?;
            }
            if args.execute
                && let Some(code) = super::undo::check_undo_before_writing(
                    mirror.kafka(),
                    &mut plan,
                    &mut undo_out,
                    args.allow_undo_without_delete,
                    &deadline,
                )
                .await
            {
                return Ok(code);
            }
            let report = if args.execute {
                Some(
                    super::undo::execute_with_undo(
                        mirror.kafka(),
                        &plan,
                        None,
                        &options,
                        undo_out.as_mut(),
                        &deadline,
                    )
                    .await?,
                )
            } else {
                None
            };
            phase("executed", &deadline);
            (mirror.kafka().clone(), plan, report)
        }
    };
    drop(client);
    // Buffered: stdout is line-buffered, and a pretty plan of thousands of groups has hundreds
    // of thousands of lines (one write each).
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    // The one summary, counted from the outcomes: the JSON, the CSV's rows, the stderr line
    // and the exit code all say what it says.
    let summary = match &report {
        Some(report) => apply::Summary::of_execute(&plan, report),
        None => apply::Summary::of_plan(&plan),
    };
    let written = match args.translate.output.format {
        OutputFormat::Json => crate::answer_json::write_answer(
            &mut out,
            args.execute,
            &plan,
            report.as_ref(),
            &summary,
            at_risk
                .as_ref()
                .map(session::at_risk::AtRiskReport::to_json),
        ),
        OutputFormat::Csv => crate::plan_csv::write(
            &mut out,
            &plan,
            report.as_ref(),
            true,
            None,
            std::io::stdout().is_terminal(),
        ),
        _ => write_table(&mut out, &plan, report.as_ref()),
    };
    // The stderr summary says what was written even when stdout's reader went away (`| head`):
    // the commits happened whatever became of the table.
    let printed = written.and_then(|_| out.flush());
    drop(out);
    phase("answer written", &deadline);
    let code = crate::signals::exit_code(crate::exit::summarize("apply", &summary));
    printed.map_err(output_failed)?;
    Ok(code)
}

/// Logs (`-v`) that a phase of the run is done, with the time spent since the run started and,
/// where the system says it, the process's peak memory so far.
fn phase(done: &'static str, deadline: &Deadline) {
    let spent = deadline.budget().saturating_sub(deadline.remaining());
    tracing::info!(
        elapsed_ms = spent.as_secs_f64() * 1000.0,
        peak_rss_kib = peak_rss_kib(),
        "apply: {done}"
    );
}

/// The process's peak resident memory so far (Linux's `VmHWM`), in KiB; 0 where unknown.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Names the groups asked for by id that have no checkpoint; with --fail-on-missing-groups,
/// the exit code (1) that stops the run before anything is planned or written.
fn missing_groups(translation: &Translation, fail: bool) -> Option<i32> {
    let missing = translation.missing_groups();
    if missing.is_empty() {
        return None;
    }
    let names: Vec<String> = missing.iter().map(|g| format!("{:?}", esc(g))).collect();
    if fail {
        eprintln!(
            "error: no checkpoints for group(s) {} (--fail-on-missing-groups): nothing planned or written",
            names.join(", ")
        );
        return Some(EXIT_ERROR);
    }
    eprintln!(
        "warning: no checkpoints for group(s) {}: they are not planned",
        names.join(", ")
    );
    None
}

/// A plan saved with --plan-out, read again and re-checked against the target and the
/// checkpoints as they are now (a plan made from the source's offsets: against their
/// translation made again, `source_plan`): the re-checked plan (dry run) or the plan and what
/// its execute wrote; or the exit code of a refusal already printed. With a source connection (or
/// `--replication-snapshot`), `at_risk` gets what failing over the plan's groups now leaves on
/// the primary, printed before anything is written, as when apply plans itself.
async fn saved_plan(
    args: &ApplyArgs,
    path: &std::path::Path,
    options: &ApplyOptions,
    undo_out: &mut Option<super::undo::UndoOut>,
    at_risk: &mut Option<session::at_risk::AtRiskReport>,
    budget: &Deadline,
) -> Result<Result<(KafkaClient, ApplyPlan, Option<ApplyReport>), i32>, Stop> {
    let shown = crate::escape::for_terminal(&path.display().to_string()).to_string();
    let text = session::read_bounded(
        path,
        "--plan",
        MAX_PLAN_BYTES,
        "a plan is the JSON that apply --plan-out writes; this is probably the wrong file",
    )?;
    if mm2_offsets::undo::UndoPlan::is_undo_document(&text) {
        // An undo file (apply/failback --undo-out): restored with its own re-checks.
        let t = &args.translate;
        if feeds_the_figure(args) {
            // An undo puts groups back where they were, on whichever cluster: no failover, so
            // no figure of what one would leave behind; refused rather than ignored.
            super::undo::discard(undo_out);
            eprintln!(
                "error: --plan {shown} is an undo file: --source-bootstrap-server, --source-command-config, --syncs-* and --replication-snapshot only feed the replication figure of a failover plan, and an undo has none. Run it without them. Nothing written"
            );
            return Ok(Err(crate::exit::EXIT_USAGE));
        }
        let flags = (args.execute, args.undo_out.is_some());
        // Refused below (an undo is not undone in turn): the file this run created goes.
        super::undo::discard(undo_out);
        let code = super::undo::run_file(
            &t.connection,
            budget,
            (&text, path),
            flags,
            t.output.format,
            options,
        )
        .await?;
        return Ok(Err(code));
    }
    // Nothing is recorded until the execute: a plan refused or unreadable up to here removes
    // the --undo-out file this run created, so the same path can be given again.
    let (plan, mirror, translation) =
        match read_plan_inputs(args, &text, &shown, options, budget).await {
            Ok(Ok(read)) => read,
            Ok(Err(code)) => {
                super::undo::discard(undo_out);
                return Ok(Err(code));
            }
            Err(stop) => {
                super::undo::discard(undo_out);
                return Err(stop);
            }
        };
    // What failing over the plan's groups now leaves on the primary, said before anything is
    // written (the figure only: the plan's offsets stay the plan's).
    *at_risk = session::at_risk::measure_for(
        &args.translate.precise.syncs,
        args.translate.precise.replication_snapshot.as_deref(),
        &args.translate.connection,
        &mirror,
        &translation,
        args.translate.max_fetch_bytes,
        budget,
    )
    .await;
    if let Some(at_risk) = at_risk.as_ref() {
        at_risk.print();
    }
    let client = mirror.kafka().clone();
    if args.execute {
        // The undo's needs judged from the target now (a file is a claim, not an authority).
        if undo_out.is_some() {
            let mut now = apply::recheck(&client, &plan, Some(&translation), options, budget)
                .await
                .map_err(|e| format!("re-checking --plan {shown}: {e}"))?;
            if let Some(code) = super::undo::check_undo_before_writing(
                &client,
                &mut now,
                undo_out,
                args.allow_undo_without_delete,
                budget,
            )
            .await
            {
                return Ok(Err(code));
            }
        }
        let report = super::undo::execute_with_undo(
            &client,
            &plan,
            Some(&translation),
            options,
            undo_out.as_mut(),
            budget,
        )
        .await?;
        return Ok(Ok((client, plan, Some(report))));
    }
    // The dry run shows what an execute started now would do, never the plan's old view.
    let fresh = apply::recheck(&client, &plan, Some(&translation), options, budget)
        .await
        .map_err(|e| format!("re-checking --plan {shown}: {e}"))?;
    let changed = changed_rows(&fresh);
    if changed > 0 {
        eprintln!(
            "--plan {shown}: {changed} partition(s) differ from the plan on the target now (rows marked changed); only what both allow would be committed"
        );
    }
    Ok(Ok((client, fresh, None)))
}

/// The saved plan in `text`, checked for its schema and kind, and what it was made from read
/// again: the checkpoints of its sources, or (a source-offsets plan) the translation of the
/// source's offsets made again; with the target's client. `Ok(Err(code))`: refused, the words
/// printed.
async fn read_plan_inputs(
    args: &ApplyArgs,
    text: &str,
    shown: &str,
    options: &ApplyOptions,
    budget: &Deadline,
) -> Result<Result<(ApplyPlan, MirrorClient, Translation), i32>, Stop> {
    let plan: ApplyPlan = serde_json::from_str(text)
        .map_err(|e| format!("--plan {shown} is not an apply plan: {e}"))?;
    plan.check_schema()
        .map_err(|e| format!("--plan {shown}: {e}"))?;
    if plan.input == Some(PlanInput::Failback) {
        // Its rows are re-derived from the backup, which apply does not read.
        return Err(format!(
            "--plan {shown} is a failback plan: run it with mm2-offsets failback --plan {shown}"
        )
        .into());
    }
    if plan.sources.is_empty() {
        eprintln!(
            "error: --plan {shown} names no source cluster (made by an older mm2-offsets?): its checkpoints cannot be read again to check it; plan again. Nothing written"
        );
        return Ok(Err(EXIT_INCOMPLETE));
    }
    // One budget for the run: connecting, reading again what the plan was made from,
    // re-checking, committing.
    let (mirror, translation) = if plan.input == Some(PlanInput::SourceOffsets) {
        match from_source_again(args, &plan, text, shown, options, budget).await? {
            Ok(read) => read,
            Err(code) => return Ok(Err(code)),
        }
    } else {
        let settings = crate::connection::settings(&args.translate.connection)?;
        let settings = if args.execute {
            settings.for_commits(options.concurrency)
        } else {
            settings
        };
        let mirror = session::connect(settings, budget.remaining()).await?;
        // The checkpoints the plan was made from, read again from its sources for its
        // groups: each partition's offset and checkpoint age are checked against them, not
        // taken from the file.
        let ids: Vec<&str> = plan.groups.iter().map(|g| g.group.as_str()).collect();
        let selector = GroupSelector::new(ids, std::iter::empty::<&str>())
            .map_err(|e| format!("--plan {shown}: {e}"))?;
        let translation = session::read_checkpoints(
            &args.translate,
            &mirror,
            plan.sources.clone(),
            selector,
            budget,
        )
        .await
        .map_err(|e| format!("re-reading the checkpoints --plan {shown} was made from: {e}"))?;
        (mirror, translation)
    };
    Ok(Ok((plan, mirror, translation)))
}

/// A plan made from the source's offsets, its groups translated from the source again as it
/// says (`source_plan`): the target's client and the fresh translation; or the exit code of a
/// refusal already printed (no binding saved, no source cluster named).
async fn from_source_again(
    args: &ApplyArgs,
    plan: &ApplyPlan,
    text: &str,
    shown: &str,
    options: &ApplyOptions,
    budget: &Deadline,
) -> Result<Result<(MirrorClient, Translation), i32>, Stop> {
    let Some(binding) =
        super::source_plan::saved_binding(text).map_err(|e| format!("--plan {shown}: {e}"))?
    else {
        eprintln!(
            "error: --plan {shown} was made from the source's offsets by an older mm2-offsets, which did not save how it translated them: plan again. Nothing written"
        );
        return Ok(Err(EXIT_INCOMPLETE));
    };
    if !super::source_plan::names_a_source(&args.translate) {
        eprintln!(
            "error: --plan {shown} was made from the source's committed offsets (--from-source-offsets): pass the source cluster (--source-bootstrap-server or --source-command-config, with --syncs-bootstrap-server where the offset syncs are kept) so that they are read and translated again, as a saved plan is never written on its own word. With the source gone, plan from the checkpoints instead (without --from-source-offsets). Nothing written"
        );
        return Ok(Err(EXIT_USAGE));
    }
    let commits = args.execute.then_some(options.concurrency);
    let read =
        super::source_plan::translate_again(&args.translate, plan, &binding, budget, commits)
            .await
            .map_err(|e| {
                format!("translating --plan {shown}'s groups from the source again: {e}")
            })?;
    Ok(Ok(read))
}

/// Whether a flag that only feeds the replication figure is given (allowed beside --plan).
fn feeds_the_figure(args: &ApplyArgs) -> bool {
    let p = &args.translate.precise;
    p.syncs.names_syncs_cluster()
        || p.syncs.names_source_cluster()
        || p.replication_snapshot.is_some()
}

/// The partitions of a re-checked plan whose fresh view differs from the plan's.
pub(crate) fn changed_rows(rechecked: &ApplyPlan) -> usize {
    rechecked
        .groups
        .iter()
        .flat_map(|g| &g.partitions)
        .filter(|p| p.difference.is_some())
        .count()
}

/// Escapes a broker-supplied string for the terminal: no control character reaches it.
fn esc(text: &str) -> String {
    text.escape_debug().to_string()
}

fn opt(value: Option<i64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| v.to_string())
}

pub(crate) fn write_table(
    out: &mut dyn Write,
    plan: &ApplyPlan,
    report: Option<&ApplyReport>,
) -> std::io::Result<()> {
    write_table_of(out, plan, report, true)
}

/// [`write_table`]; `from_checkpoints`: the plan's rows come from MirrorMaker 2's checkpoints,
/// so heartbeats and checkpoint ages say something about them (not in a failback, whose rows
/// come from the backup's committed offsets).
pub(crate) fn write_table_of(
    out: &mut dyn Write,
    plan: &ApplyPlan,
    report: Option<&ApplyReport>,
    from_checkpoints: bool,
) -> std::io::Result<()> {
    let heartbeats = plan.heartbeat_age_ms.iter().filter(|_| from_checkpoints);
    for (source, age) in heartbeats {
        match age {
            Some(ms) => writeln!(out, "heartbeat from {}: {} ms ago", esc(source), ms)?,
            None => writeln!(
                out,
                "heartbeat from {}: none found on the target",
                esc(source)
            )?,
        }
    }
    let mut header = [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT",
        "OFFSET",
        "LOG",
        "VERDICT",
        "AGE_MS",
        "RESULT",
    ]
    .map(String::from)
    .to_vec();
    // The AGE_MS column (the checkpoint's age) is the 8th.
    const AGE_COLUMN: usize = 7;
    if !from_checkpoints {
        header.remove(AGE_COLUMN);
    }
    let mut rows = vec![header];
    for g in &plan.groups {
        let result = report.and_then(|r| r.groups.iter().find(|x| x.group == g.group));
        for p in &g.partitions {
            let verdict = match (&g.status, p.clamped_from) {
                (GroupStatus::Ready, Some(from)) => {
                    format!("{:?} (clamped, was {:?})", p.verdict, from)
                }
                (GroupStatus::Ready, None) => p.verdict.as_str().to_string(),
                (GroupStatus::Refused { .. }, _)
                    if matches!(
                        p.verdict,
                        ApplyVerdict::PendingTransaction
                            | ApplyVerdict::GroupIdNotUtf8
                            | ApplyVerdict::SourceNotConsumerGroup
                    ) =>
                {
                    p.verdict.as_str().to_string()
                }
                (GroupStatus::Refused { .. }, _) => "group-refused".to_string(),
                (GroupStatus::Error { .. }, _) => "group-error".to_string(),
                _ => "group-not-ready".to_string(),
            };
            let outcome = result
                .map(|r| {
                    r.partitions
                        .iter()
                        .find(|x| x.topic == p.topic && x.partition == p.partition)
                        .map_or_else(
                            || "-".to_string(),
                            |x| match (x.state, &x.error, x.read_back) {
                                (CommitState::Unknown, e, _) => {
                                    format!("UNKNOWN: {}", esc(e.as_deref().unwrap_or("no answer")))
                                }
                                (CommitState::Failed, e, _) => {
                                    format!("failed: {}", esc(e.as_deref().unwrap_or("?")))
                                }
                                (CommitState::Committed, _, Some(o)) if o == x.offset => {
                                    "committed, read back".to_string()
                                }
                                (CommitState::Committed, _, other) => format!(
                                    "committed (acknowledged), unverified: read back {}",
                                    opt(other)
                                ),
                                (CommitState::Refused, e, _) => format!(
                                    "refused by the re-check: {}",
                                    esc(e.as_deref().unwrap_or("?"))
                                ),
                                (state, _, _) => format!("{state:?}"),
                            },
                        )
                })
                .or_else(|| {
                    // A re-checked saved plan: how it differs from the target now.
                    p.difference
                        .as_ref()
                        .map(|d| format!("changed: {}", esc(d)))
                })
                .unwrap_or_else(|| "-".to_string());
            let mut row = vec![
                esc(&g.group),
                esc(&p.topic),
                p.partition.to_string(),
                opt(p.current),
                p.offset.to_string(),
                format!("{}..{}", opt(p.log_start), opt(p.log_end)),
                verdict,
                p.checkpoint_age_ms.to_string(),
                outcome,
            ];
            if !from_checkpoints {
                row.remove(AGE_COLUMN);
            }
            rows.push(row);
        }
    }
    crate::output::write_aligned(out, &rows)?;
    for g in &plan.groups {
        let state = match g.protocol {
            Some(GroupProtocol::Absent) => "absent on the target".to_string(),
            Some(GroupProtocol::Classic) => {
                format!("classic, {}", esc(g.state.as_deref().unwrap_or("?")))
            }
            Some(GroupProtocol::Consumer) => {
                format!("consumer, {}", esc(g.state.as_deref().unwrap_or("?")))
            }
            Some(_) => esc(g.state.as_deref().unwrap_or("?")),
            // An empty Streams group the plan may write (StreamsGroupDescribe's state).
            None if g.group_type == mm2_offsets::client::GroupType::Streams
                && matches!(g.status, GroupStatus::Ready) =>
            {
                format!("streams, {}", esc(g.state.as_deref().unwrap_or("?")))
            }
            // A share or streams group (named by ListGroups), or a group that could not be read.
            None => g.state.as_deref().map_or_else(
                || "state unknown".to_string(),
                |t| format!("{} group", esc(t)),
            ),
        };
        let state = if from_checkpoints {
            format!(
                "{state}, {} member(s), oldest checkpoint {} ms",
                g.members, g.oldest_checkpoint_age_ms
            )
        } else {
            format!("{state}, {} member(s)", g.members)
        };
        let outcome = report
            .and_then(|r| r.groups.iter().find(|x| x.group == g.group))
            .map(|r| match &r.outcome {
                GroupOutcome::Applied => "applied".to_string(),
                GroupOutcome::NothingToDo => "nothing to do".to_string(),
                GroupOutcome::Skipped { reason } => {
                    format!("skipped: {}", esc(&reason.to_string()))
                }
                GroupOutcome::Partial => "partially applied (see rows)".to_string(),
                GroupOutcome::Unverified => {
                    "committed (acknowledged), not read back as written: unverified (see rows)"
                        .to_string()
                }
                GroupOutcome::Error {
                    message,
                    state_unknown,
                } => format!(
                    "error{}: {}",
                    if *state_unknown {
                        " (offsets unknown)"
                    } else {
                        ""
                    },
                    esc(&message.to_string())
                ),
                other => esc(&format!("{other:?}")),
            });
        let status = match &g.status {
            GroupStatus::Ready => "ready".to_string(),
            GroupStatus::Refused { reason } => format!("refused: {}", esc(&reason.to_string())),
            GroupStatus::Error { message } => format!("error: {}", esc(&message.to_string())),
            other => esc(&format!("{other:?}")),
        };
        writeln!(
            out,
            "group {}: {state}; {}",
            esc(&g.group),
            outcome.unwrap_or(status)
        )?;
    }
    Ok(())
}
