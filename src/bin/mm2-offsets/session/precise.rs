//! `translate --precise`: MM2's checkpoints (or, with `--from-source-offsets`, the source's
//! committed offsets) re-translated from the full offset-sync history
//! (`MirrorClient::translate_precise`, `translate_from_source_offsets`), printed with MM2's
//! offset, the rule and the input next to the offset to use; and the plan input of
//! `apply --precise`.

use std::io::{self, IsTerminal, Write};
use std::time::Duration;

use mm2_offsets::client::{Deadline, GroupType};
use mm2_offsets::mm2::sync_index::{Interpolation, PreciseOffset};
use mm2_offsets::precise::{
    Input, MatchRecords, PreciseRequest, PreciseTranslation, RowInput, SyncSnapshot, Syncs,
    SyncsSource, UpstreamPosition,
};
use mm2_offsets::record_match::MatchOptions;
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{
    JSON_SCHEMA_VERSION, MirrorClient, OffsetRef, TranslateRequest, Translation,
};

use super::sync_clusters::{source_cluster, syncs_cluster};
use crate::args::{OutputFormat, TranslateArgs};
use crate::chunked::ChunkedWriter;
use crate::escape::for_terminal;
use crate::output::{json_offset_fields, write_aligned, write_csv_with};

/// Reads the precise translation the flags ask for (from the checkpoints, with
/// `--from-source-offsets` from the source's committed offsets, or the positions of
/// `--offsets-file`; matched with `--match-records`) and prints its summary on stderr.
pub async fn read(
    args: &TranslateArgs,
    client: &MirrorClient,
    request: &TranslateRequest,
) -> Result<PreciseTranslation, String> {
    let [source] = request.sources.as_slice() else {
        return Err(format!(
            "--precise translates one flow at a time; pass exactly one --source (got {})",
            request.sources.join(", ")
        ));
    };
    // The run's one budget: the other connections spend from it, as the target's did.
    let budget = Deadline::after(request.timeout);
    let p = &args.precise;
    let (syncs, syncs_client, name) = match &p.syncs_snapshot {
        Some(path) => {
            let snapshot =
                SyncSnapshot::read_file(path).map_err(|e| format!("--syncs-snapshot: {e}"))?;
            let name = format!(
                "snapshot {} of {} ({} syncs, taken {})",
                path.display(),
                for_terminal(&snapshot.topic),
                snapshot.syncs(),
                humantime::format_rfc3339_millis(
                    std::time::UNIX_EPOCH
                        + Duration::from_millis(u64::try_from(snapshot.created_ms).unwrap_or(0))
                )
            );
            let syncs = Syncs::Snapshot {
                snapshot: std::sync::Arc::new(snapshot),
                interpolation: interpolation(args),
            };
            (syncs, None, name)
        }
        None => {
            let syncs = syncs_source(args, client, source, &budget).await?;
            let (kafka, name) = (syncs.client.clone(), syncs.topic.clone());
            (Syncs::Topic(syncs), Some(kafka), name)
        }
    };
    let needs_source = p.from_source_offsets || p.match_records;
    let source_cluster = if needs_source {
        Some(source_cluster(&p.syncs, syncs_client.as_ref(), &budget).await?)
    } else {
        None
    };
    let mut precise = PreciseRequest::new(syncs);
    precise.source_offsets = source_cluster.clone().filter(|_| p.from_source_offsets);
    precise.match_records = source_cluster.filter(|_| p.match_records).map(|source| {
        let mut options = MatchOptions::default();
        options.parallelism = usize::from(args.parallelism);
        options.max_fetch_bytes = args.max_fetch_bytes;
        MatchRecords::new(source, options)
    });
    let translated = match &p.offsets_file {
        Some(path) => {
            let positions: Vec<UpstreamPosition> = crate::offsets_file::read(path)?
                .into_iter()
                .map(|(topic, partition, offset)| {
                    UpstreamPosition::new("", topic, partition, offset)
                })
                .collect();
            client
                .translate_positions(source, &positions, Input::OffsetsFile, request, &precise)
                .await
        }
        None => client.translate_precise_with(request, &precise).await,
    };
    let translated = translated.map_err(|e| format!("{e} (offset-syncs {name})"))?;
    summarize(&translated, &name, interpolation(args));
    Ok(translated)
}

fn interpolation(args: &TranslateArgs) -> Interpolation {
    if args.precise.gapless_upstream {
        Interpolation::GaplessUpstream
    } else {
        Interpolation::Disabled
    }
}

/// Runs the precise translation and prints it; returns whether both reads were complete, and
/// the groups asked for by name that have no checkpoints (for `--fail-on-missing-groups`).
pub async fn run(
    args: &TranslateArgs,
    client: &MirrorClient,
    request: &TranslateRequest,
) -> Result<(bool, Vec<String>), String> {
    let precise = read(args, client, request).await?;
    let at_risk = super::at_risk::measure_for(
        &args.precise.syncs,
        args.precise.replication_snapshot.as_deref(),
        &args.connection,
        client,
        &precise.translation,
        args.max_fetch_bytes,
        &Deadline::after(request.timeout),
    )
    .await;
    let extra = at_risk
        .as_ref()
        .map(super::at_risk::AtRiskReport::json_member);
    let mut out = io::stdout().lock();
    let written = match args.output.format {
        OutputFormat::Table => write_table(&mut out, &precise),
        OutputFormat::Json => write_json_with(&mut out, &precise, extra.as_deref()),
        OutputFormat::Csv => write_csv(&mut out, &precise, io::stdout().is_terminal()),
        OutputFormat::ResetCsv => {
            let translation = precise.to_translation();
            let files = crate::reset_files::write(&args.reset_dir(), &translation)?;
            eprintln!(
                "precise: the reset files hold the precise offsets (the OFFSET column of the table), not MM2's"
            );
            files.iter().try_for_each(|(file, path)| {
                writeln!(
                    out,
                    "{}\t{}\t{}",
                    for_terminal(file.source),
                    for_terminal(file.group),
                    for_terminal(&path.display().to_string())
                )
            })
        }
    };
    written
        .and_then(|_| out.flush())
        .map_err(|e| format!("cannot write the output: {e}"))?;
    if let Some(at_risk) = &at_risk {
        at_risk.print();
    }
    let complete = precise.translation.report.complete && precise.syncs_report.complete;
    Ok((complete, precise.translation.missing_groups().to_vec()))
}

/// The precise translation's offsets as the translation `apply` plans: `offset` is the precise
/// one, `upstream_offset` the input translated.
pub async fn read_for_apply(
    args: &TranslateArgs,
    groups: GroupSelector,
    budget: &Deadline,
    commits: Option<usize>,
) -> Result<(MirrorClient, Translation, Vec<String>), String> {
    let (client, request, progress) = super::prepare_read(args, groups, budget, commits).await?;
    let precise = {
        let _line = crate::progress::ProgressLine::start(progress, !args.run.no_progress);
        read(args, &client, &request).await?
    };
    if !precise.syncs_report.complete {
        return Err("the offset-syncs topic was not read to its end: refusing to plan --precise offsets (run without --precise, or with a longer --timeout)".to_string());
    }
    Ok((client, precise.to_translation(), request.sources))
}

fn summarize(precise: &PreciseTranslation, syncs: &str, interpolation: Interpolation) {
    let rules: Vec<String> = precise
        .rule_counts()
        .iter()
        .map(|(rule, n)| format!("{}={n}", rule.name()))
        .collect();
    let saved: i64 = precise.rereads_saved_by_group().values().sum();
    eprintln!(
        "precise: {} offsets from {} offset-sync records of {} ({} partitions with history, {}); rules {}; {saved} re-reads saved",
        precise.precise.len(),
        precise.syncs_report.records,
        for_terminal(syncs),
        precise.synced_partitions,
        match interpolation {
            Interpolation::GaplessUpstream => "interpolating",
            _ => "not interpolating",
        },
        rules.join(" "),
    );
    if let Some(matching) = &precise.matching {
        let stats = &matching.stats;
        let mut reasons: std::collections::BTreeMap<&str, usize> = Default::default();
        for row in &matching.rows {
            if let Some(why) = row.unmatched {
                *reasons.entry(why.name()).or_default() += 1;
            }
        }
        let matched = matching
            .rows
            .iter()
            .filter(|r| r.unmatched.is_none())
            .count();
        eprintln!(
            "precise: record matching: {matched} of {} rows exact over {} partitions, {:.1} KiB read from the source and {:.1} KiB from the target in {} ranges{}",
            matching.rows.len(),
            stats.partitions,
            stats.upstream_bytes as f64 / 1024.0,
            stats.downstream_bytes as f64 / 1024.0,
            stats.ranges,
            if reasons.is_empty() {
                String::new()
            } else {
                format!(
                    "; kept the syncs' offset: {}",
                    reasons
                        .iter()
                        .map(|(why, n)| format!("{why}={n}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            }
        );
        for partition in &stats.inconsistent {
            eprintln!(
                "warning: {}: its records contradict the offset-sync history (another writer, converters that change bytes, a recreated topic?): not matched",
                for_terminal(partition)
            );
        }
        for partition in &stats.unread {
            eprintln!(
                "precise: not matched, the read stopped: {}",
                for_terminal(partition)
            );
        }
    }
    for (group, inputs) in &precise.source_groups {
        let group = for_terminal(group);
        let (kind, offsets) = match &inputs.group_type {
            GroupType::Consumer => (String::new(), "committed offsets"),
            GroupType::Share => (
                "share ".to_string(),
                "start offsets (DescribeShareGroupOffsets; MM2 never checkpoints share groups)",
            ),
            other => (
                format!("{} ", for_terminal(other.name())),
                "committed offsets (MM2 never checkpoints this type)",
            ),
        };
        eprintln!(
            "precise: {kind}group {group}: {} partition(s) from the source's {offsets}, {} from the checkpoint{}{}{}",
            inputs.source_offset
                + if inputs.group_type.is_consumer() {
                    0
                } else {
                    inputs.source_only
                },
            inputs.checkpoint,
            if inputs.source_only > 0 && inputs.group_type.is_consumer() {
                format!(
                    "; {} committed partition(s) MM2 never checkpointed, translated from the source's offset (input source-only)",
                    inputs.source_only
                )
            } else {
                String::new()
            },
            if inputs.not_mirrored > 0 {
                format!(
                    "; {} committed partition(s) on topics without offset-sync history, not translated",
                    inputs.not_mirrored
                )
            } else {
                String::new()
            },
            match &inputs.error {
                Some(e) => format!("; the source could not be read: {}", for_terminal(e)),
                None => String::new(),
            },
        );
        if inputs.moved_back_without_sync > 0 {
            eprintln!(
                "warning: group {group} moved back on the source on {} partition(s) to where no offset sync survives: those keep the checkpoint's offset, which may be past the group's position; check them",
                inputs.moved_back_without_sync
            );
        }
    }
    let checked = &precise.provenance;
    if precise.syncs_report.complete && checked.reproduced > 0 {
        eprintln!(
            "precise: the offset-sync history reproduces {} of MM2's checkpoints{}{}",
            checked.reproduced,
            if checked.compaction_explained > 0 {
                format!(
                    "; {} partition(s) keep MM2's offset because compaction removed the syncs their checkpoint was computed from",
                    checked.compaction_explained
                )
            } else {
                String::new()
            },
            if checked.legacy > 0 {
                format!(
                    "; {} partition(s) keep MM2's offset: their checkpoint follows the rules of MirrorMaker 2 before 3.5",
                    checked.legacy
                )
            } else {
                String::new()
            },
        );
    }
    if !precise.syncs_report.complete {
        eprintln!(
            "precise: the offset-syncs topic was not read to its end: every offset keeps MM2's (rule no-sync)"
        );
    }
}

async fn syncs_source(
    args: &TranslateArgs,
    client: &MirrorClient,
    source: &str,
    budget: &Deadline,
) -> Result<SyncsSource, String> {
    let mut source_syncs = syncs_cluster(
        &args.precise.syncs,
        &args.connection,
        client,
        source,
        budget,
    )
    .await?;
    source_syncs.interpolation = interpolation(args);
    Ok(source_syncs)
}

/// The row's offset replaced by the precise one (`offset` is always the offset to use), and
/// its upstream offset by the input translated.
fn to_use<'a>(o: &OffsetRef<'a>, p: &PreciseOffset, input: &RowInput) -> OffsetRef<'a> {
    let mut row = *o;
    row.offset = p.offset;
    row.upstream_offset = input.upstream_offset;
    row
}

/// `-o csv`: the usual columns, `offset` being the precise one, then `mm2_offset`, `rule`,
/// `input`, `checkpoint_upstream_offset` and `max_rereads` (empty when unknown); with
/// `--match-records` also `syncs_offset`, `syncs_rule` and `unmatched`.
fn write_csv(out: &mut dyn Write, precise: &PreciseTranslation, terminal: bool) -> io::Result<()> {
    let translation = precise.to_translation();
    let checkpoint_upstream: Vec<i64> = precise
        .translation
        .iter()
        .map(|o| o.upstream_offset)
        .collect();
    let matching = precise.matching.as_ref();
    let header = if matching.is_some() {
        ",mm2_offset,rule,input,checkpoint_upstream_offset,max_rereads,syncs_offset,syncs_rule,unmatched"
    } else {
        ",mm2_offset,rule,input,checkpoint_upstream_offset,max_rereads"
    };
    write_csv_with(out, &translation, terminal, header, |i, w| {
        let p = precise.precise[i];
        w.byte(b',');
        w.number(p.mm2_offset);
        w.byte(b',');
        w.text(p.rule.name());
        w.byte(b',');
        w.text(precise.inputs[i].input.name());
        w.byte(b',');
        w.number(checkpoint_upstream[i]);
        w.byte(b',');
        if let Some(bound) = precise.max_rereads.get(i).copied().flatten() {
            w.number(bound);
        }
        if let Some(row) = matching.and_then(|m| m.rows.get(i)) {
            w.byte(b',');
            w.number(row.syncs_offset);
            w.byte(b',');
            w.text(row.syncs_rule.name());
            w.byte(b',');
            w.text(row.unmatched.map_or("", |why| why.name()));
        }
    })
}

/// The `-o json` document of schema version 1, each row with `mm2_offset`, `rule`, `input`,
/// `checkpoint_upstream_offset` and `max_rereads` added, `syncs_report` and `missing_groups`
/// beside `report`; with `--match-records` also
/// `syncs_offset`, `syncs_rule` and `unmatched` per row and `matching` at the top.
/// `extra`: members (`,"name":value...`) added before the closing brace.
pub fn write_json_with(
    out: &mut dyn Write,
    precise: &PreciseTranslation,
    extra: Option<&str>,
) -> io::Result<()> {
    let mut w = ChunkedWriter::new(out);
    w.text("{\"schema_version\":");
    w.number(JSON_SCHEMA_VERSION);
    w.text(",\"complete\":");
    let complete = precise.translation.report.complete && precise.syncs_report.complete;
    w.text(if complete { "true" } else { "false" });
    w.text(",\"offsets\":[");
    let matching = precise.matching.as_ref();
    for (i, ((o, p), input)) in precise
        .iter()
        .zip(precise.inputs.iter().copied())
        .enumerate()
    {
        if i > 0 {
            w.byte(b',');
        }
        json_offset_fields(&mut w, &to_use(&o, &p, &input));
        w.text(",\"mm2_offset\":");
        w.number(p.mm2_offset);
        w.text(",\"rule\":");
        w.json_string(p.rule.name());
        w.text(",\"input\":");
        w.json_string(input.input.name());
        w.text(",\"checkpoint_upstream_offset\":");
        w.number(o.upstream_offset);
        w.text(",\"max_rereads\":");
        match precise.max_rereads.get(i).copied().flatten() {
            Some(bound) => w.number(bound),
            None => w.text("null"),
        }
        if let Some(row) = matching.and_then(|m| m.rows.get(i)) {
            w.text(",\"syncs_offset\":");
            w.number(row.syncs_offset);
            w.text(",\"syncs_rule\":");
            w.json_string(row.syncs_rule.name());
            w.text(",\"unmatched\":");
            match row.unmatched {
                Some(why) => w.json_string(why.name()),
                None => w.text("null"),
            }
        }
        w.byte(b'}');
        w.end_row()?;
    }
    w.text("],\"report\":");
    w.display(serde_json::to_string(&precise.translation.report).map_err(io::Error::other)?);
    w.text(",\"syncs_report\":");
    w.display(serde_json::to_string(&precise.syncs_report).map_err(io::Error::other)?);
    // As in `translate -o json` (docs/schemas/translate.schema.json requires it).
    w.text(",\"missing_groups\":[");
    for (i, group) in precise.translation.missing_groups().iter().enumerate() {
        if i > 0 {
            w.byte(b',');
        }
        w.json_string(group);
    }
    w.byte(b']');
    if let Some(matching) = matching {
        w.text(",\"matching\":");
        w.display(serde_json::to_string(&matching.stats).map_err(io::Error::other)?);
    }
    if let Some(extra) = extra {
        w.text(extra);
    }
    w.text("}\n");
    w.finish()
}

/// The table: one row per partition (MM2's offset, with `--match-records` the syncs' offset,
/// the offset to use, the re-reads saved and their bound, the rule, the input and why a row
/// was not matched), then per group the sums.
fn write_table(out: &mut dyn Write, precise: &PreciseTranslation) -> io::Result<()> {
    let matching = precise.matching.as_ref();
    let mut header = vec![
        "GROUP",
        "TYPE",
        "TOPIC",
        "PARTITION",
        "UPSTREAM",
        "MM2_OFFSET",
    ];
    if matching.is_some() {
        header.push("PRECISE");
    }
    header.extend(["OFFSET", "SAVED", "MAX_REREADS", "RULE", "INPUT"]);
    if matching.is_some() {
        header.push("UNMATCHED");
    }
    let mut rows = vec![header.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    for (i, ((o, p), input)) in precise.iter().zip(&precise.inputs).enumerate() {
        let no_mm2 = p.mm2_offset < 0;
        let mut row = vec![
            // Names come from the broker: escaped, so control characters cannot reach the
            // terminal.
            group_label(o.group),
            o.group_type.name().escape_debug().to_string(),
            o.topic.escape_debug().to_string(),
            o.partition.to_string(),
            input.upstream_offset.to_string(),
            if no_mm2 {
                "-".into()
            } else {
                p.mm2_offset.to_string()
            },
        ];
        let row_match = matching.and_then(|m| m.rows.get(i));
        if let Some(m) = row_match {
            row.push(m.syncs_offset.to_string());
        }
        row.extend([
            p.offset.to_string(),
            if no_mm2 {
                "-".into()
            } else {
                p.rereads_saved().to_string()
            },
            precise
                .max_rereads
                .get(i)
                .copied()
                .flatten()
                .map_or_else(|| "?".to_string(), |b| b.to_string()),
            p.rule.name().to_string(),
            input.input.name().to_string(),
        ]);
        if matching.is_some() {
            row.push(
                row_match
                    .and_then(|m| m.unmatched)
                    .map_or("", |why| why.name())
                    .to_string(),
            );
        }
        rows.push(row);
    }
    write_aligned(out, &rows)?;
    // Per group: partitions, re-reads saved, and the bound on what is still re-read.
    let saved = precise.rereads_saved_by_group();
    let bounds = precise.max_rereads_by_group();
    let mut sums = vec![
        ["GROUP", "PARTITIONS", "SAVED", "MAX_REREADS"]
            .map(str::to_string)
            .to_vec(),
    ];
    let mut partitions: std::collections::BTreeMap<&str, usize> = Default::default();
    for o in precise.translation.iter() {
        *partitions.entry(o.group).or_default() += 1;
    }
    for (group, count) in partitions {
        let (bound, unknown) = bounds.get(group).copied().unwrap_or_default();
        sums.push(vec![
            group_label(group),
            count.to_string(),
            saved.get(group).copied().unwrap_or_default().to_string(),
            if unknown > 0 {
                format!("{bound} + {unknown} unknown")
            } else {
                bound.to_string()
            },
        ]);
    }
    writeln!(out)?;
    write_aligned(out, &sums)
}

/// A group id for the table: escaped, and the positions of `--offsets-file` (no group) named.
fn group_label(group: &str) -> String {
    if group.is_empty() {
        "(offsets-file)".to_string()
    } else {
        group.escape_debug().to_string()
    }
}
