//! `mm2-offsets replication`: what a failover would lose right now, per remote partition of a
//! source on the backup (`mm2_offsets::replication::measure`). Exit 0 when every partition is
//! proven, 3 when some are not (each says why), 1 on an error.

use std::io::{IsTerminal, Write};

use mm2_offsets::client::Deadline;
use mm2_offsets::replication::{Replication, ReplicationRequest, ReplicationRow, measure};
use mm2_offsets::select::GroupSelector;

use crate::args::{OutputFormat, ReplicationArgs};
use crate::exit::{EXIT_INCOMPLETE, EXIT_OK, Stop, output_failed};
use crate::output::write_aligned;
use crate::session;

pub async fn run(args: ReplicationArgs) -> Result<i32, Stop> {
    let topics = if args.topics.is_empty() && args.topic_regexes.is_empty() {
        GroupSelector::all()
    } else {
        GroupSelector::new(
            args.topics.iter().map(String::as_str),
            args.topic_regexes.iter().map(String::as_str),
        )
        .map_err(|e| Stop::Error(format!("--topic-regex: {e}")))?
    };
    let budget = Deadline::after(args.timeout);
    let settings = crate::connection::settings(&args.connection)?;
    let client = session::connect(settings, budget.remaining()).await?;
    let syncs_args = session::sync_clusters::syncs_on_source_by_default(&args.syncs);
    let syncs = session::sync_clusters::syncs_cluster(
        &syncs_args,
        &args.connection,
        &client,
        &args.source,
        &budget,
    )
    .await?;
    let primary =
        session::sync_clusters::source_cluster(&args.syncs, Some(&syncs.client), &budget).await?;
    let mut request = ReplicationRequest::new(args.source.clone(), topics);
    request.timeout = budget.remaining();
    request.max_bytes_per_fetch = args.max_fetch_bytes;
    request.matching.max_fetch_bytes = args.max_fetch_bytes;
    request.matching.parallelism = usize::from(args.parallelism);
    let topic = syncs.topic.clone();
    let report = measure(
        client.kafka(),
        &primary,
        &syncs,
        client.replication_policy(),
        &request,
    )
    .await
    .map_err(|e| format!("{} (offset-syncs topic {topic})", crate::hints::explain(&e)))?;
    let mut out = std::io::stdout().lock();
    let written = match args.output.format {
        OutputFormat::Json => write_json(&mut out, &report),
        OutputFormat::Csv => write_csv(&mut out, &report.rows, std::io::stdout().is_terminal()),
        _ => write_table(&mut out, &report),
    };
    written.and_then(|_| out.flush()).map_err(output_failed)?;
    let t = &report.total;
    let oldest = t
        .oldest_not_copied_timestamp
        .map_or_else(String::new, |ts| format!(", the oldest from {ts} ms"));
    eprintln!(
        "replication: failing over now leaves {} record(s) on the primary that the backup does not have ({} of {} partition(s){oldest}); {} aborted and {} in open transactions not counted",
        t.not_copied, t.partitions_behind, t.partitions, t.aborted_not_copied, t.open_not_copied
    );
    if t.lost_before_copy > 0 {
        eprintln!(
            "warning: {} offset(s) were removed from the primary before MirrorMaker 2 copied them",
            t.lost_before_copy
        );
    }
    if t.unproven > 0 {
        eprintln!(
            "warning: {} partition(s) not proven (column UNPROVEN says why), left out of the total",
            t.unproven
        );
        return Ok(EXIT_INCOMPLETE);
    }
    Ok(EXIT_OK)
}

/// `{"schema_version":1,"measured_at_ms":..,"complete":..,"total":{..},"rows":[..]}`.
fn write_json(out: &mut dyn Write, report: &Replication) -> std::io::Result<()> {
    let doc = serde_json::json!({
        "schema_version": 1,
        "measured_at_ms": report.measured_at_ms,
        "complete": report.is_complete(),
        "total": report.total,
        "rows": report.rows,
        "matching": report.matching,
    });
    serde_json::to_writer(&mut *out, &doc).map_err(std::io::Error::other)?;
    writeln!(out)
}

const CSV_HEADER: &str = "topic,partition,source_topic,source_log_start,source_log_end,source_last_stable,backup_log_end,copied_to,not_copied,aborted_not_copied,open_not_copied,oldest_not_copied_timestamp,seconds_behind,lost_before_copy,unproven,assumes_history";

/// One CSV row per partition, the JSON rows' fields in their order (strings from the cluster
/// exact, escaped only on a `terminal`).
fn write_csv(out: &mut dyn Write, rows: &[ReplicationRow], terminal: bool) -> std::io::Result<()> {
    let text = |s: &str| crate::plan_csv::field(s, terminal);
    let num = |v: Option<i64>| v.map_or_else(String::new, |v| v.to_string());
    let count = |v: Option<u64>| v.map_or_else(String::new, |v| v.to_string());
    writeln!(out, "{CSV_HEADER}")?;
    for r in rows {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            text(&r.topic),
            r.partition,
            text(&r.source_topic),
            r.source_log_start,
            r.source_log_end,
            r.source_last_stable,
            r.backup_log_end,
            num(r.copied_to),
            count(r.not_copied),
            count(r.aborted_not_copied),
            count(r.open_not_copied),
            num(r.oldest_not_copied_timestamp),
            r.seconds_behind
                .map_or_else(String::new, |s| format!("{s:.3}")),
            r.lost_before_copy,
            text(r.unproven.as_deref().unwrap_or("")),
            r.assumes_history,
        )?;
    }
    Ok(())
}

fn write_table(out: &mut dyn Write, report: &Replication) -> std::io::Result<()> {
    let dash = |v: Option<i64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
    let count = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
    let mut table = vec![
        [
            "TOPIC",
            "PARTITION",
            "SOURCE_TOPIC",
            "SOURCE_LOG_END",
            "COPIED_TO",
            "NOT_COPIED",
            "ABORTED",
            "OPEN",
            "OLDEST_NOT_COPIED",
            "SECONDS_BEHIND",
            "UNPROVEN",
        ]
        .map(str::to_string)
        .to_vec(),
    ];
    for r in &report.rows {
        table.push(vec![
            // Names and reasons come from the cluster: escaped for the terminal.
            r.topic.escape_debug().to_string(),
            r.partition.to_string(),
            r.source_topic.escape_debug().to_string(),
            r.source_log_end.to_string(),
            match r.copied_to {
                Some(c) if r.lost_before_copy > 0 => {
                    format!("{c} ({} lost before copy)", r.lost_before_copy)
                }
                other => dash(other),
            },
            count(r.not_copied),
            count(r.aborted_not_copied),
            count(r.open_not_copied),
            dash(r.oldest_not_copied_timestamp),
            r.seconds_behind
                .map_or_else(|| "-".to_string(), |s| format!("{s:.1}")),
            r.unproven
                .as_deref()
                .unwrap_or("")
                .escape_debug()
                .to_string(),
        ]);
    }
    let t = &report.total;
    table.push(vec![
        "TOTAL".to_string(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        t.not_copied.to_string(),
        t.aborted_not_copied.to_string(),
        t.open_not_copied.to_string(),
        dash(t.oldest_not_copied_timestamp),
        format!("{:.1}", t.seconds_behind),
        if t.unproven > 0 {
            format!("{} unproven", t.unproven)
        } else {
            String::new()
        },
    ]);
    write_aligned(out, &table)
}
