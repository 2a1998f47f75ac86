//! `mm2-offsets apply`: translate, plan the commits on the target, print the plan, and with
//! `--execute` commit it. Dry run by default.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use mm2_offsets::apply::{
    self, ApplyOptions, ApplyPlan, ApplyReport, CommitState, GroupOutcome, GroupStatus,
    VerdictRules,
};
use mm2_offsets::client::{Deadline, GroupProtocol, KafkaClient};

use crate::args::{ApplyArgs, OutputFormat};
use crate::exit::{EXIT_ERROR, EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE, Stop, output_failed};
use crate::session;

/// Runs `apply` and returns the exit code. A closed stdout (`| head`) stops quietly with the
/// broken-pipe exit code, as translate does, after the summary on stderr.
pub(crate) async fn run(args: ApplyArgs) -> Result<i32, Stop> {
    if !matches!(
        args.translate.output,
        OutputFormat::Table | OutputFormat::Json
    ) {
        eprintln!("error: apply prints its plan as -o table or -o json");
        return Ok(EXIT_USAGE);
    }
    let options = ApplyOptions {
        rules: VerdictRules {
            allow_rewind: args.allow_rewind,
            clamp: args.clamp,
            max_checkpoint_age_ms: args
                .max_checkpoint_age
                .map(|d| d.as_millis().min(i64::MAX as u128) as i64),
        },
        timeout: args.translate.timeout,
        ..ApplyOptions::default()
    };
    let (client, plan) = match &args.plan {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read --plan {}: {e}", path.display()))?;
            let plan: ApplyPlan = serde_json::from_str(&text)
                .map_err(|e| format!("--plan {} is not an apply plan: {e}", path.display()))?;
            plan.check_schema()
                .map_err(|e| format!("--plan {}: {e}", path.display()))?;
            let settings = crate::connection::settings(&args.translate.connection)?;
            let mut config = settings.client;
            // As translate's connect: the setup never outlasts --timeout.
            config.connection_setup_timeout =
                config.connection_setup_timeout.min(args.translate.timeout);
            config.request_timeout = config.request_timeout.min(args.translate.timeout);
            let client = KafkaClient::connect(config)
                .await
                .map_err(|e| crate::diagnose::connect_error(&e))?;
            (client, plan)
        }
        None => {
            let groups = match session::group_selection(&args.translate.select) {
                Ok(groups) => groups,
                Err(code) => return Ok(code),
            };
            // With --precise the plan's input is the precise translation: each row's offset is
            // the precise one (from the checkpoint or, with --from-source-offsets, the source).
            let (mirror, translation, sources) = if args.translate.precise.precise {
                session::precise::read_for_apply(&args.translate, groups).await?
            } else {
                session::read_translation(&args.translate, groups).await?
            };
            let policy = mirror.replication_policy();
            let heartbeats: BTreeMap<String, String> = sources
                .iter()
                .map(|s| {
                    (
                        s.clone(),
                        policy.format_remote_topic(s, policy.heartbeats_topic()),
                    )
                })
                .collect();
            let deadline = Deadline::after(args.translate.timeout);
            let plan = apply::plan(
                mirror.kafka(),
                &translation,
                &heartbeats,
                &options,
                now_ms(),
                &deadline,
            )
            .await
            .map_err(|e| e.to_string())?;
            (mirror.kafka().clone(), plan)
        }
    };
    if let Some(path) = &args.plan_out {
        let json = serde_json::to_string_pretty(&plan).map_err(|e| e.to_string())?;
        std::fs::write(path, json + "\n")
            .map_err(|e| format!("cannot write --plan-out {}: {e}", path.display()))?;
    }
    let report = if args.execute {
        Some(apply::execute(&client, &plan, &options).await)
    } else {
        None
    };
    let mut out = std::io::stdout().lock();
    let written = match args.translate.output {
        OutputFormat::Json => {
            let doc = serde_json::json!({ "schema_version": apply::PLAN_SCHEMA_VERSION, "executed": args.execute, "plan": &plan, "result": &report });
            serde_json::to_writer_pretty(&mut out, &doc)
                .map_err(std::io::Error::other)
                .and_then(|_| writeln!(out))
        }
        _ => write_table(&mut out, &plan, report.as_ref()),
    };
    // The stderr summary says what was written even when stdout's reader went away (`| head`):
    // the commits happened whatever became of the table.
    let printed = written.and_then(|_| out.flush());
    drop(out);
    let code = summarize(&plan, report.as_ref(), args.execute);
    printed.map_err(output_failed)?;
    Ok(code)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Escapes a broker-supplied string for the terminal: no control character reaches it.
fn esc(text: &str) -> String {
    text.escape_debug().to_string()
}

fn opt(value: Option<i64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn write_table(
    out: &mut dyn Write,
    plan: &ApplyPlan,
    report: Option<&ApplyReport>,
) -> std::io::Result<()> {
    for (source, age) in &plan.heartbeat_age_ms {
        match age {
            Some(ms) => writeln!(out, "heartbeat from {}: {} ms ago", esc(source), ms)?,
            None => writeln!(
                out,
                "heartbeat from {}: none found on the target",
                esc(source)
            )?,
        }
    }
    let mut rows = vec![
        [
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
        .to_vec(),
    ];
    for g in &plan.groups {
        let result = report.and_then(|r| r.groups.iter().find(|x| x.group == g.group));
        for p in &g.partitions {
            let verdict = match (&g.status, p.clamped_from) {
                (GroupStatus::Ready, Some(from)) => {
                    format!("{:?} (clamped, was {:?})", p.verdict, from)
                }
                (GroupStatus::Ready, None) => p.verdict.as_str().to_string(),
                (GroupStatus::Refused { .. }, _) => "group-refused".to_string(),
                (GroupStatus::Error { .. }, _) => "group-error".to_string(),
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
                                (CommitState::Committed, _, other) => {
                                    format!("committed, read back {}", opt(other))
                                }
                            },
                        )
                })
                .unwrap_or_else(|| "-".to_string());
            rows.push(vec![
                esc(&g.group),
                esc(&p.topic),
                p.partition.to_string(),
                opt(p.current),
                p.offset.to_string(),
                format!("{}..{}", opt(p.log_start), opt(p.log_end)),
                verdict,
                p.checkpoint_age_ms.to_string(),
                outcome,
            ]);
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
            // A share or streams group (named by ListGroups), or a group that could not be read.
            None => g.state.as_deref().map_or_else(
                || "state unknown".to_string(),
                |t| format!("{} group", esc(t)),
            ),
        };
        let state = format!(
            "{state}, {} member(s), oldest checkpoint {} ms",
            g.members, g.oldest_checkpoint_age_ms
        );
        let outcome = report
            .and_then(|r| r.groups.iter().find(|x| x.group == g.group))
            .map(|r| match &r.outcome {
                GroupOutcome::Applied => "applied".to_string(),
                GroupOutcome::NothingToDo => "nothing to do".to_string(),
                GroupOutcome::Skipped { reason } => format!("skipped: {}", esc(reason)),
                GroupOutcome::Partial => "partially applied (see rows)".to_string(),
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
                    esc(message)
                ),
            });
        let status = match &g.status {
            GroupStatus::Ready => "ready".to_string(),
            GroupStatus::Refused { reason } => format!("refused: {}", esc(reason)),
            GroupStatus::Error { message } => format!("error: {}", esc(message)),
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

/// Prints the one-line summary on stderr and returns the exit code.
fn summarize(plan: &ApplyPlan, report: Option<&ApplyReport>, execute: bool) -> i32 {
    let planned: usize = plan.groups.iter().map(|g| g.to_commit().count()).sum();
    let refused = plan.has_refusals();
    if report.is_none() && plan.has_errors() {
        // Authorization or coordinator failures: exit 1, as for any error, even in a dry run.
        eprintln!(
            "dry run: {planned} partition(s) would be committed; some groups could not be read (errors above); nothing written"
        );
        return EXIT_ERROR;
    }
    match report {
        None if plan.is_noop() => {
            eprintln!(
                "dry run: nothing to apply (already applied, or nothing allowed){}",
                if refused {
                    "; some groups or partitions are refused"
                } else {
                    ""
                }
            );
            if refused { EXIT_INCOMPLETE } else { EXIT_OK }
        }
        None => {
            eprintln!(
                "dry run: {planned} partition(s) would be committed; nothing written (pass --execute to commit)"
            );
            if refused { EXIT_INCOMPLETE } else { EXIT_OK }
        }
        Some(report) => {
            let committed = report.committed();
            if report.has_errors() {
                eprintln!(
                    "apply: {committed} partition(s) committed and read back; some groups failed (errors above), the others were applied"
                );
                EXIT_ERROR
            } else if planned == 0 {
                eprintln!(
                    "apply: no-op, every offset is already applied{}",
                    if refused {
                        "; some groups or partitions are refused"
                    } else {
                        ""
                    }
                );
                if refused { EXIT_INCOMPLETE } else { EXIT_OK }
            } else if refused || report.has_skips() {
                eprintln!(
                    "apply: {committed} partition(s) committed and read back; some groups or partitions were refused or skipped (named above)"
                );
                EXIT_INCOMPLETE
            } else {
                debug_assert!(execute);
                eprintln!("apply: {committed} partition(s) committed and read back");
                EXIT_OK
            }
        }
    }
}
