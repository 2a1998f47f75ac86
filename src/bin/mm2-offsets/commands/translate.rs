//! `mm2-offsets translate`: read the checkpoints once and print every selected group's offsets
//! (or, with `--precise`, re-translate them from the offset-sync history).

use std::io::{IsTerminal, Write};

use mm2_offsets::client::Deadline;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::Translation;

use crate::args::{OutputFormat, TranslateArgs};
use crate::exit::{EXIT_ERROR, EXIT_INCOMPLETE, EXIT_OK, Stop, output_failed};
use crate::output::unbuffered_stdout;
use crate::{escape, output, progress, reset_files, session};

pub async fn run(args: TranslateArgs) -> Result<i32, Stop> {
    // --timeout is the budget of the whole run.
    let budget = Deadline::after(args.run.timeout);
    let groups = if args.precise.offsets_file.is_some() {
        // The file's positions are translated, no group's.
        GroupSelector::ids(Vec::<String>::new())
    } else {
        match session::group_selection(&args.select) {
            Ok(groups) => groups,
            Err(code) => return Ok(code),
        }
    };
    if args.precise.precise {
        let (client, request, progress) =
            session::prepare_read(&args, groups, &budget, None).await?;
        let (complete, missing) = {
            let _line = progress::ProgressLine::start(progress, !args.run.no_progress);
            session::precise::run(&args, &client, &request).await?
        };
        // --precise names and counts missing groups as the plain translation does: a runbook
        // that passes --fail-on-missing-groups must not be told 0 when a group has none.
        return Ok(exit_code(&args, &missing, complete));
    }
    let (client, translation, _sources) =
        session::read_translation(&args, groups, &budget, None).await?;
    let at_risk = session::at_risk::measure_for(
        &args.precise.syncs,
        args.precise.replication_snapshot.as_deref(),
        &args.connection,
        &client,
        &translation,
        args.max_fetch_bytes,
        &budget,
    )
    .await;
    let extra = at_risk
        .as_ref()
        .map(session::at_risk::AtRiskReport::json_member);
    print_translation(&args, &translation, extra.as_deref())?;
    summarize(&translation);
    if let Some(at_risk) = &at_risk {
        at_risk.print();
    }
    Ok(exit_code(
        &args,
        translation.missing_groups(),
        translation.report.complete,
    ))
}

/// Names the requested groups without checkpoints on stderr, and the exit code: 1 for them
/// with `--fail-on-missing-groups`, else 0 when the read was complete, 3 when it was not.
fn exit_code(args: &TranslateArgs, missing: &[String], complete: bool) -> i32 {
    for group in missing {
        eprintln!(
            "warning: group {group:?} was requested but has no checkpoints in the sources read"
        );
    }
    if !missing.is_empty() && args.run.fail_on_missing_groups {
        eprintln!(
            "error: {} requested group(s) not found (--fail-on-missing-groups)",
            missing.len()
        );
        EXIT_ERROR
    } else if complete {
        EXIT_OK
    } else {
        EXIT_INCOMPLETE
    }
}

fn print_translation(
    args: &TranslateArgs,
    translation: &Translation,
    extra: Option<&str>,
) -> Result<(), Stop> {
    // What writing the answer costs next to the read (`-v` shows it; benches/compare.sh reads it).
    let started = std::time::Instant::now();
    let printed = print_answer(args, translation, extra);
    tracing::info!(
        rows = translation.len(),
        elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
        "answer written"
    );
    printed
}

/// `extra`: members added to the JSON document (the `replication` section).
fn print_answer(
    args: &TranslateArgs,
    translation: &Translation,
    extra: Option<&str>,
) -> Result<(), Stop> {
    // The large answers are formatted here and written by a thread of their own, so that the
    // copy into a pipe and the formatting of the next chunk overlap.
    let background = match args.output.format {
        OutputFormat::Json | OutputFormat::Csv => output::background_stdout(),
        _ => None,
    };
    if let Some(w) = background {
        let written = match args.output.format {
            OutputFormat::Json => output::write_json_to(w, translation, extra),
            _ => output::write_csv_to(w, translation, std::io::stdout().is_terminal()),
        };
        return written.map_err(output_failed);
    }
    let mut out = unbuffered_stdout();
    let written = match args.output.format {
        OutputFormat::Table => output::write_table(&mut out, translation),
        OutputFormat::Json => output::write_json_to(
            crate::chunked::ChunkedWriter::new(&mut out),
            translation,
            extra,
        ),
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

fn summarize(translation: &Translation) {
    flag_group_ids_not_utf8(translation);
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

/// Names on stderr every group whose id in the checkpoints is not valid UTF-8: its row names it
/// with its invalid bytes escaped (`\xNN`), each byte string a row of its own, and `apply`
/// never writes it.
fn flag_group_ids_not_utf8(translation: &Translation) {
    for group in translation.groups() {
        if translation.group_id_not_utf8(group).is_none() {
            continue;
        }
        eprintln!(
            "warning: group id \"{}\" is not valid UTF-8 in the checkpoints: its row shows the invalid bytes escaped (Java would decode them as U+FFFD, which different ids can share); apply never writes it (group-id-not-utf8)",
            group.escape_debug(),
        );
    }
}
