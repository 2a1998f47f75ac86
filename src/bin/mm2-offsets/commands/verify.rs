//! `mm2-offsets verify`: each selected group's committed offset on the target against its
//! committed offset on the source, record by record (`MirrorClient::verify`): exact, behind
//! (records re-read), ahead (records skipped) or unknown. Exit 0 when nothing is ahead or
//! unknown, 1 when a partition is ahead (or on error), 3 when some are unknown.

use std::io::{IsTerminal, Write};

use mm2_offsets::client::{Deadline, IsolationLevel};
use mm2_offsets::precise::Syncs;
use mm2_offsets::record_match::MatchOptions;
use mm2_offsets::translate::TranslateRequest;
use mm2_offsets::verify::{VerifyRow, VerifyVerdict};

use crate::args::{OutputFormat, VerifyArgs};
use crate::exit::{EXIT_ERROR, EXIT_INCOMPLETE, EXIT_OK, Stop, output_failed};
use crate::output::write_aligned;
use crate::session;

pub async fn run(args: VerifyArgs) -> Result<i32, Stop> {
    let groups = match session::group_selection(&args.select) {
        Ok(groups) => groups,
        Err(code) => return Ok(code),
    };
    let budget = Deadline::after(args.run.timeout);
    let settings = crate::connection::settings(&args.connection)?;
    let client = session::connect(settings, budget.remaining()).await?;
    let sources = if args.sources.is_empty() {
        session::discover_sources(&client, budget.remaining()).await?
    } else {
        args.sources.clone()
    };
    let [source] = sources.as_slice() else {
        return Err(Stop::Error(format!(
            "verify checks one flow at a time; pass exactly one --source (found {})",
            sources.join(", ")
        )));
    };
    let syncs = session::sync_clusters::syncs_cluster(
        &args.syncs,
        &args.connection,
        &client,
        source,
        &budget,
    )
    .await?;
    let source_client =
        session::sync_clusters::source_cluster(&args.syncs, Some(&syncs.client), &budget).await?;
    let requested: Vec<String> = groups.ids_requested().map(str::to_string).collect();
    let mut request = TranslateRequest::new(source.clone(), groups);
    request.isolation = IsolationLevel::ReadUncommitted;
    request.timeout = budget.remaining();
    request.max_bytes_per_fetch = args.max_fetch_bytes;
    // The progress line follows the checkpoint read, as translate's does.
    let progress = std::sync::Arc::new(mm2_offsets::translate::ReadProgress::default());
    request.progress = Some(progress.clone());
    let mut options = MatchOptions::default();
    options.max_fetch_bytes = args.max_fetch_bytes;
    let topic = syncs.topic.clone();
    let rows = {
        let _line = crate::progress::ProgressLine::start(progress, !args.run.no_progress);
        client
            .verify(&request, Syncs::Topic(syncs), &source_client, options)
            .await
            .map_err(|e| format!("{} (offset-syncs topic {topic})", crate::hints::explain(&e)))?
    };
    // A group asked for by id with no row: nothing committed on either cluster, no checkpoint.
    let missing: Vec<String> = requested
        .iter()
        .filter(|id| !rows.iter().any(|r| &r.group == *id))
        .map(|id| format!("{:?}", crate::escape::for_terminal(id)))
        .collect();
    if !missing.is_empty() {
        if args.run.fail_on_missing_groups {
            eprintln!(
                "error: group(s) {} have no committed offset on either cluster and no checkpoint (--fail-on-missing-groups)",
                missing.join(", ")
            );
            return Ok(EXIT_ERROR);
        }
        eprintln!(
            "warning: group(s) {} have no committed offset on either cluster and no checkpoint: nothing to verify",
            missing.join(", ")
        );
    }
    let mut out = std::io::stdout().lock();
    let written = match args.output.format {
        OutputFormat::Json => write_json(&mut out, &rows),
        OutputFormat::Csv => write_csv(&mut out, &rows, std::io::stdout().is_terminal()),
        _ => write_table(&mut out, &rows),
    };
    written.and_then(|_| out.flush()).map_err(output_failed)?;
    let count = |v: VerifyVerdict| rows.iter().filter(|r| r.verdict == v).count();
    let (ahead, unknown) = (count(VerifyVerdict::Ahead), count(VerifyVerdict::Unknown));
    eprintln!(
        "verify: {} partition(s): {} exact, {} behind, {ahead} ahead, {unknown} unknown",
        rows.len(),
        count(VerifyVerdict::Exact),
        count(VerifyVerdict::Behind),
    );
    Ok(if ahead > 0 {
        eprintln!(
            "error: {ahead} partition(s) ahead of the group's next record: resuming there skips records"
        );
        EXIT_ERROR
    } else if unknown > 0 {
        EXIT_INCOMPLETE
    } else {
        EXIT_OK
    })
}

/// `{"schema_version":1,"rows":[{group, group_type, topic, partition, offset, source_offset, verdict,
/// records, reason, at_least, exact_offset}]}`.
fn write_json(out: &mut dyn Write, rows: &[VerifyRow]) -> std::io::Result<()> {
    let doc = serde_json::json!({ "schema_version": 1, "rows": rows });
    serde_json::to_writer(&mut *out, &doc).map_err(std::io::Error::other)?;
    writeln!(out)
}

/// One CSV row per partition, the JSON rows' fields in their order (RFC 4180 quoting; strings
/// from the cluster exact, escaped only on a `terminal`, as translate -o csv).
fn write_csv(out: &mut dyn Write, rows: &[VerifyRow], terminal: bool) -> std::io::Result<()> {
    let text = |s: &str| crate::plan_csv::field(s, terminal);
    let num = |v: Option<i64>| v.map_or_else(String::new, |v| v.to_string());
    writeln!(
        out,
        "group,group_type,topic,partition,offset,source_offset,verdict,records,at_least,exact_offset,reason"
    )?;
    for r in rows {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{}",
            text(&r.group),
            text(r.group_type.name()),
            text(&r.topic),
            r.partition,
            num(r.offset),
            num(r.source_offset),
            r.verdict.name(),
            num(r.records),
            r.at_least,
            num(r.exact_offset),
            text(r.reason.as_deref().unwrap_or("")),
        )?;
    }
    Ok(())
}

fn write_table(out: &mut dyn Write, rows: &[VerifyRow]) -> std::io::Result<()> {
    let dash = |v: Option<i64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
    let mut table = vec![
        [
            "GROUP",
            "TYPE",
            "TOPIC",
            "PARTITION",
            "OFFSET",
            "SOURCE_OFFSET",
            "EXACT",
            "VERDICT",
            "RECORDS",
            "REASON",
        ]
        .map(str::to_string)
        .to_vec(),
    ];
    for r in rows {
        table.push(vec![
            // Names and reasons come from the cluster: escaped for the terminal.
            r.group.escape_debug().to_string(),
            r.group_type.name().escape_debug().to_string(),
            r.topic.escape_debug().to_string(),
            r.partition.to_string(),
            dash(r.offset),
            dash(r.source_offset),
            dash(r.exact_offset),
            r.verdict.name().to_string(),
            match r.records {
                Some(n) if r.at_least => format!(">={n}"),
                other => dash(other),
            },
            r.reason.as_deref().unwrap_or("").escape_debug().to_string(),
        ]);
    }
    write_aligned(out, &table)
}
