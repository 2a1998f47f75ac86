//! `translate --precise`: MM2's checkpoints re-translated from the full offset-sync history
//! (`MirrorClient::translate_precise`), printed with MM2's offset and the rule next to the
//! offset to use.

use std::io::{self, Write};

use mm2_offsets::client::KafkaClient;
use mm2_offsets::mm2::sync_index::{Interpolation, PreciseOffset};
use mm2_offsets::translate::{
    JSON_SCHEMA_VERSION, MirrorClient, OffsetRef, PreciseTranslation, SyncsSource, TranslateRequest,
};

use super::args::{ConnectionArgs, OutputFormat, TranslateArgs};
use super::chunked::ChunkedWriter;
use super::output::{json_offset_fields, write_aligned};

/// Runs the precise translation and prints it; returns whether both reads were complete.
pub async fn run(
    args: &TranslateArgs,
    client: &MirrorClient,
    request: &TranslateRequest,
) -> Result<bool, String> {
    let [source] = request.sources.as_slice() else {
        return Err(format!(
            "--precise translates one flow at a time; pass exactly one --source (got {})",
            request.sources.join(", ")
        ));
    };
    let syncs = syncs_source(args, client, source).await?;
    let precise = client
        .translate_precise(request, &syncs)
        .await
        .map_err(|e| format!("{e} (offset-syncs topic {})", syncs.topic))?;
    let mut out = io::stdout().lock();
    let written = match args.output {
        OutputFormat::Table => write_table(&mut out, &precise),
        OutputFormat::Json => write_json(&mut out, &precise),
        OutputFormat::Csv | OutputFormat::ResetCsv => {
            return Err("--precise prints -o table or -o json only for now".to_string());
        }
    };
    written
        .and_then(|_| out.flush())
        .map_err(|e| format!("cannot write the output: {e}"))?;
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
    if !precise.syncs_report.complete {
        eprintln!(
            "precise: the offset-syncs topic was not read to its end: every offset keeps MM2's (rule no-sync)"
        );
    }
    Ok(precise.translation.report.complete && precise.syncs_report.complete)
}

async fn syncs_source(
    args: &TranslateArgs,
    client: &MirrorClient,
    source: &str,
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
    let settings = super::connection::settings(&connection)
        .map_err(|e| format!("offset-syncs cluster: {e}"))?;
    let policy = client.replication_policy();
    let topic = match (&p.syncs_topic, &args.connection.target) {
        (Some(topic), _) => topic.clone(),
        (None, Some(target)) => policy.offset_syncs_topic(target),
        (None, None) => {
            return Err("--precise needs the offset-syncs topic: pass --syncs-topic, or --target with --mm2-config (the topic is mm2-offset-syncs.<target alias>.internal)".to_string());
        }
    };
    let kafka = KafkaClient::connect(settings.client)
        .await
        .map_err(|e| format!("offset-syncs cluster: {e}"))?;
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

/// The row's offset replaced by the precise one: `offset` is always the offset to use.
fn to_use<'a>(o: &OffsetRef<'a>, p: &PreciseOffset) -> OffsetRef<'a> {
    OffsetRef {
        offset: p.offset,
        ..*o
    }
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
    for (i, (o, p)) in precise.iter().enumerate() {
        if i > 0 {
            w.byte(b',');
        }
        json_offset_fields(&mut w, &to_use(&o, &p));
        w.text(",\"mm2_offset\":");
        w.number(p.mm2_offset);
        w.text(",\"rule\":");
        w.json_string(p.rule.name());
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
    ];
    let mut rows = vec![header.map(str::to_string).to_vec()];
    for (o, p) in precise.iter() {
        rows.push(vec![
            // Names come from the broker: escaped, so control characters cannot reach the
            // terminal.
            o.group.escape_debug().to_string(),
            o.topic.escape_debug().to_string(),
            o.partition.to_string(),
            o.upstream_offset.to_string(),
            p.mm2_offset.to_string(),
            p.offset.to_string(),
            p.rereads_saved().to_string(),
            p.rule.name().to_string(),
        ]);
    }
    write_aligned(out, &rows)
}
