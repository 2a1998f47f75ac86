//! `translate --precise`: MM2's checkpoints (or, with `--from-source-offsets`, the source's
//! committed offsets) re-translated from the full offset-sync history
//! (`MirrorClient::translate_precise`, `translate_from_source_offsets`), printed with MM2's
//! offset, the rule and the input next to the offset to use; and the plan input of
//! `apply --precise`.

use std::io::{self, IsTerminal, Write};

use mm2_offsets::client::{Deadline, KafkaClient};
use mm2_offsets::mm2::ReplicationPolicy;
use mm2_offsets::mm2::sync_index::{Interpolation, PreciseOffset};
use mm2_offsets::precise::{PreciseTranslation, RowInput, SyncsSource};
use mm2_offsets::select::GroupSelector;
use mm2_offsets::translate::{
    JSON_SCHEMA_VERSION, MirrorClient, OffsetRef, TranslateRequest, Translation,
};

use crate::args::{ConnectionArgs, OutputFormat, TranslateArgs};
use crate::chunked::ChunkedWriter;
use crate::escape::for_terminal;
use crate::output::{json_offset_fields, write_aligned, write_csv_with};

/// Reads the precise translation the flags ask for (from the checkpoints, or with
/// `--from-source-offsets` from the source's committed offsets) and prints its summary on
/// stderr. Returns it with the offset-syncs topic's name.
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
    let syncs = syncs_source(args, client, source, &budget).await?;
    let precise = if args.precise.from_source_offsets {
        let source_cluster = source_cluster(args, &syncs, &budget).await?;
        client
            .translate_from_source_offsets(request, &syncs, &source_cluster)
            .await
    } else {
        client.translate_precise(request, &syncs).await
    }
    .map_err(|e| format!("{e} (offset-syncs topic {})", syncs.topic))?;
    summarize(&precise, &syncs);
    Ok(precise)
}

/// Runs the precise translation and prints it; returns whether both reads were complete.
pub async fn run(
    args: &TranslateArgs,
    client: &MirrorClient,
    request: &TranslateRequest,
) -> Result<bool, String> {
    let precise = read(args, client, request).await?;
    let mut out = io::stdout().lock();
    let written = match args.output {
        OutputFormat::Table => write_table(&mut out, &precise),
        OutputFormat::Json => write_json(&mut out, &precise),
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
    Ok(precise.translation.report.complete && precise.syncs_report.complete)
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
        let _line = crate::progress::ProgressLine::start(progress, !args.no_progress);
        read(args, &client, &request).await?
    };
    if !precise.syncs_report.complete {
        return Err("the offset-syncs topic was not read to its end: refusing to plan --precise offsets (run without --precise, or with a longer --timeout)".to_string());
    }
    Ok((client, precise.to_translation(), request.sources))
}

fn summarize(precise: &PreciseTranslation, syncs: &SyncsSource) {
    let rules: Vec<String> = precise
        .rule_counts()
        .iter()
        .map(|(rule, n)| format!("{}={n}", rule.name()))
        .collect();
    let saved: i64 = precise
        .precise
        .iter()
        .map(PreciseOffset::rereads_saved)
        .sum();
    eprintln!(
        "precise: {} offsets from {} offset-sync records of {} ({} partitions with history, {}); rules {}; {saved} re-reads saved",
        precise.precise.len(),
        precise.syncs_report.records,
        syncs.topic,
        precise.synced_partitions,
        match syncs.interpolation {
            Interpolation::GaplessUpstream => "interpolating",
            Interpolation::Disabled => "not interpolating",
        },
        rules.join(" "),
    );
    for (group, inputs) in &precise.source_groups {
        let group = for_terminal(group);
        eprintln!(
            "precise: group {group}: {} partition(s) from the source's committed offsets, {} from the checkpoint{}{}",
            inputs.source_offset,
            inputs.checkpoint,
            if inputs.source_only > 0 {
                format!(
                    "; {} committed partition(s) on the source have no checkpoint and are not translated",
                    inputs.source_only
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
    if precise.syncs_report.complete {
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

/// The source cluster for `--from-source-offsets`: its own flags, else the offset-syncs
/// cluster (the source unless offset-syncs.topic.location=target).
async fn source_cluster(
    args: &TranslateArgs,
    syncs: &SyncsSource,
    budget: &Deadline,
) -> Result<KafkaClient, String> {
    let p = &args.precise;
    if p.source_bootstrap_server.is_none() && p.source_command_config.is_none() {
        return Ok(syncs.client.clone());
    }
    let connection = ConnectionArgs {
        bootstrap_server: p.source_bootstrap_server.clone(),
        command_config: p.source_command_config.clone(),
        ..ConnectionArgs::default()
    };
    let settings =
        crate::connection::settings(&connection).map_err(|e| format!("source cluster: {e}"))?;
    super::connect_other(settings, budget, "source cluster").await
}

async fn syncs_source(
    args: &TranslateArgs,
    client: &MirrorClient,
    source: &str,
    budget: &Deadline,
) -> Result<SyncsSource, String> {
    let p = &args.precise;
    let connection = if p.syncs_bootstrap_server.is_some() || p.syncs_command_config.is_some() {
        ConnectionArgs {
            bootstrap_server: p.syncs_bootstrap_server.clone(),
            command_config: p.syncs_command_config.clone(),
            ..ConnectionArgs::default()
        }
    } else if args.connection.mm2_config.is_some() {
        ConnectionArgs {
            mm2_config: args.connection.mm2_config.clone(),
            target: Some(source.to_string()),
            ..ConnectionArgs::default()
        }
    } else {
        return Err("--precise needs the cluster holding the offset-syncs topic: pass --syncs-bootstrap-server or --syncs-command-config (the source cluster, or the target with offset-syncs.topic.location=target), or --mm2-config".to_string());
    };
    let settings = crate::connection::settings(&connection)
        .map_err(|e| format!("offset-syncs cluster: {e}"))?;
    let policy = client.replication_policy();
    let kafka = super::connect_other(settings, budget, "offset-syncs cluster").await?;
    let topic = match (&p.syncs_topic, &args.connection.target) {
        (Some(topic), _) => topic.clone(),
        (None, Some(target)) => policy.offset_syncs_topic(target),
        (None, None) => the_only_offset_syncs_topic(&kafka, policy, budget).await?,
    };
    Ok(SyncsSource {
        client: kafka,
        topic,
        interpolation: if p.gapless_upstream {
            Interpolation::GaplessUpstream
        } else {
            Interpolation::Disabled
        },
    })
}

/// Without `--syncs-topic` or `--target`, the offset-syncs topic is the one topic on the
/// offset-syncs cluster that the replication policy names `mm2-offset-syncs.<alias>.internal`.
/// A cluster that is the source of several flows holds one per target: then the operator must
/// say which, and the error lists them.
async fn the_only_offset_syncs_topic(
    kafka: &KafkaClient,
    policy: &ReplicationPolicy,
    budget: &Deadline,
) -> Result<String, String> {
    let topics = kafka
        .list_topics(budget)
        .await
        .map_err(|e| format!("offset-syncs cluster: listing its topics: {e}"))?;
    let found = offset_syncs_topics(policy, topics.iter().map(|t| t.name.as_str()));
    match found.as_slice() {
        [one] => {
            eprintln!(
                "precise: offset-syncs topic {} (the only one on the offset-syncs cluster; --syncs-topic names another)",
                for_terminal(one)
            );
            Ok(one.to_string())
        }
        [] => Err(format!(
            "--precise found no offset-syncs topic ({}) on the offset-syncs cluster: point --syncs-bootstrap-server at the cluster holding it (the source, or the target with offset-syncs.topic.location=target), or pass --syncs-topic",
            policy.offset_syncs_topic("<alias>")
        )),
        several => Err(format!(
            "--precise found {} offset-syncs topics on the offset-syncs cluster ({}): pass --syncs-topic, or --target with --mm2-config",
            several.len(),
            // Escaped for the terminal with the whole message, where it is printed.
            several.join(", ")
        )),
    }
}

/// The names among `topics` that `policy` gives to an offset-syncs topic of some alias.
pub(crate) fn offset_syncs_topics<'a>(
    policy: &ReplicationPolicy,
    topics: impl Iterator<Item = &'a str>,
) -> Vec<&'a str> {
    topics
        .filter(|name| offset_syncs_alias(policy, name).is_some())
        .collect()
}

/// The alias whose offset-syncs topic `policy` names `name`, if it names one.
pub(crate) fn offset_syncs_alias<'a>(policy: &ReplicationPolicy, name: &'a str) -> Option<&'a str> {
    // The policy builds the name around the alias; a probe alias shows the parts around it
    // (the internal separator is configurable).
    const PROBE: &str = "\u{0}";
    let probe = policy.offset_syncs_topic(PROBE);
    let (prefix, suffix) = probe.split_once(PROBE).unwrap_or((&probe, ""));
    name.strip_prefix(prefix)
        .and_then(|rest| rest.strip_suffix(suffix))
        .filter(|alias| !alias.is_empty() && policy.offset_syncs_topic(alias) == name)
}

/// The row's offset replaced by the precise one (`offset` is always the offset to use), and
/// its upstream offset by the input translated.
fn to_use<'a>(o: &OffsetRef<'a>, p: &PreciseOffset, input: &RowInput) -> OffsetRef<'a> {
    OffsetRef {
        offset: p.offset,
        upstream_offset: input.upstream_offset,
        ..*o
    }
}

/// `-o csv`: the usual columns, `offset` being the precise one, then `mm2_offset`, `rule`,
/// `input` and `checkpoint_upstream_offset`.
fn write_csv(out: &mut dyn Write, precise: &PreciseTranslation, terminal: bool) -> io::Result<()> {
    let translation = precise.to_translation();
    let checkpoint_upstream: Vec<i64> = precise
        .translation
        .iter()
        .map(|o| o.upstream_offset)
        .collect();
    write_csv_with(
        out,
        &translation,
        terminal,
        ",mm2_offset,rule,input,checkpoint_upstream_offset",
        |i, w| {
            let p = precise.precise[i];
            w.byte(b',');
            w.number(p.mm2_offset);
            w.byte(b',');
            w.text(p.rule.name());
            w.byte(b',');
            w.text(precise.inputs[i].input.name());
            w.byte(b',');
            w.number(checkpoint_upstream[i]);
        },
    )
}

/// The `-o json` document of schema version 1, each row with `mm2_offset` and `rule` added.
fn write_json(out: &mut dyn Write, precise: &PreciseTranslation) -> io::Result<()> {
    let mut w = ChunkedWriter::new(out);
    w.text("{\"schema_version\":");
    w.number(JSON_SCHEMA_VERSION);
    w.text(",\"complete\":");
    let complete = precise.translation.report.complete && precise.syncs_report.complete;
    w.text(if complete { "true" } else { "false" });
    w.text(",\"offsets\":[");
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
        w.byte(b'}');
        w.end_row()?;
    }
    w.text("],\"report\":");
    w.display(serde_json::to_string(&precise.translation.report).map_err(io::Error::other)?);
    w.text(",\"syncs_report\":");
    w.display(serde_json::to_string(&precise.syncs_report).map_err(io::Error::other)?);
    w.text("}\n");
    w.finish()
}

fn write_table(out: &mut dyn Write, precise: &PreciseTranslation) -> io::Result<()> {
    let header = [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "UPSTREAM",
        "MM2_OFFSET",
        "OFFSET",
        "SAVED",
        "RULE",
        "INPUT",
    ];
    let mut rows = vec![header.map(str::to_string).to_vec()];
    for ((o, p), input) in precise.iter().zip(&precise.inputs) {
        rows.push(vec![
            // Names come from the broker: escaped, so control characters cannot reach the
            // terminal.
            o.group.escape_debug().to_string(),
            o.topic.escape_debug().to_string(),
            o.partition.to_string(),
            input.upstream_offset.to_string(),
            p.mm2_offset.to_string(),
            p.offset.to_string(),
            p.rereads_saved().to_string(),
            p.rule.name().to_string(),
            input.input.name().to_string(),
        ]);
    }
    write_aligned(out, &rows)
}

#[cfg(test)]
mod tests {
    use super::offset_syncs_topics;
    use mm2_offsets::mm2::ReplicationPolicy;
    use mm2_offsets::mm2::policy::DefaultReplicationPolicy;

    const TOPICS: [&str; 7] = [
        "mm2-offset-syncs.backup.internal",
        "mm2-offset-syncs..internal",
        "mm2-offset-syncs_dr_internal",
        "orders",
        "primary.checkpoints.internal",
        "mm2-offset-syncs.backup.internal.extra",
        "xmm2-offset-syncs.backup.internal",
    ];

    #[test]
    fn the_default_policy_finds_its_offset_syncs_topics_only() {
        let found = offset_syncs_topics(&ReplicationPolicy::default(), TOPICS.into_iter());
        assert_eq!(found, ["mm2-offset-syncs.backup.internal"]);
    }

    #[test]
    fn a_custom_internal_separator_is_followed() {
        let policy = ReplicationPolicy::Default(DefaultReplicationPolicy::new("_", true));
        let found = offset_syncs_topics(&policy, TOPICS.into_iter());
        assert_eq!(found, ["mm2-offset-syncs_dr_internal"]);
    }

    #[test]
    fn several_targets_are_all_listed() {
        let topics = [
            "mm2-offset-syncs.dr-east.internal",
            "mm2-offset-syncs.dr-west.internal",
        ];
        let found = offset_syncs_topics(&ReplicationPolicy::default(), topics.into_iter());
        assert_eq!(found, topics);
    }
}
