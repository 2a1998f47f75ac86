//! Rendering a translation: an aligned table, JSON, CSV, or per-group reset files for
//! `kafka-consumer-groups.sh --reset-offsets --from-file`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::chunked::ChunkedWriter;
use mm2_offsets::translate::{OffsetRef, Translation};
#[cfg(test)]
use mm2_offsets::translate::{OffsetsJson, ReadReport};

/// The version of the JSON document `-o json` writes. Fields are only ever added within a
/// version; a rename or removal bumps it.
pub const JSON_SCHEMA_VERSION: u32 = 1;

/// The document `-o json` writes, for serde; [`write_json`] writes the same bytes faster and is
/// checked against it.
#[cfg(test)]
#[derive(serde::Serialize)]
struct JsonDocument<'a> {
    schema_version: u32,
    complete: bool,
    offsets: OffsetsJson<'a>,
    report: &'a ReadReport,
}

/// Writes the translation as one compact JSON document (pipe to `jq .` for reading), offset
/// by offset: the same bytes serde_json writes for [`TranslatedOffset`](mm2_offsets::translate::TranslatedOffset)s,
/// without a call per piece.
pub fn write_json(out: &mut dyn Write, translation: &Translation) -> io::Result<()> {
    let mut w = ChunkedWriter::new(out);
    w.text("{\"schema_version\":");
    w.number(JSON_SCHEMA_VERSION);
    w.text(",\"complete\":");
    w.text(if translation.report.complete {
        "true"
    } else {
        "false"
    });
    w.text(",\"offsets\":[");
    for (i, o) in translation.iter().enumerate() {
        if i > 0 {
            w.byte(b',');
        }
        json_offset(&mut w, &o);
        w.end_row()?;
    }
    w.text("],\"report\":");
    w.display(serde_json::to_string(&translation.report).map_err(io::Error::other)?);
    w.text("}\n");
    w.finish()
}

/// One offset as a JSON object, fields in `TranslatedOffset`'s order.
fn json_offset(w: &mut ChunkedWriter<'_>, o: &OffsetRef<'_>) {
    json_offset_fields(w, o);
    w.byte(b'}');
}

/// [`json_offset`] without the closing brace, for callers that add fields.
pub fn json_offset_fields(w: &mut ChunkedWriter<'_>, o: &OffsetRef<'_>) {
    w.text("{\"source\":");
    w.json_string(o.source);
    w.text(",\"group\":");
    w.json_string(o.group);
    w.text(",\"topic\":");
    w.json_string(o.topic);
    w.text(",\"partition\":");
    w.number(o.partition);
    w.text(",\"offset\":");
    w.number(o.offset);
    w.text(",\"metadata\":");
    w.json_string(o.metadata);
    w.text(",\"upstream_offset\":");
    w.number(o.upstream_offset);
    w.text(",\"checkpoint_timestamp\":");
    w.number(o.checkpoint_timestamp);
    w.text(",\"checkpoint_partition\":");
    w.number(o.checkpoint_partition);
    w.text(",\"checkpoint_offset\":");
    w.number(o.checkpoint_offset);
}

/// Quotes a CSV field when it holds a comma, quote or line break (RFC 4180).
pub fn csv_field(value: &str) -> std::borrow::Cow<'_, str> {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\"")).into()
    } else {
        value.into()
    }
}

/// Writes one CSV row per translated offset, with a header.
pub fn write_csv(out: &mut dyn Write, translation: &Translation) -> io::Result<()> {
    let mut w = ChunkedWriter::new(out);
    w.text("source,group,topic,partition,offset,upstream_offset,metadata,checkpoint_timestamp\n");
    for o in translation.iter() {
        w.csv_field(o.source);
        w.byte(b',');
        w.csv_field(o.group);
        w.byte(b',');
        w.csv_field(o.topic);
        w.byte(b',');
        w.number(o.partition);
        w.byte(b',');
        w.number(o.offset);
        w.byte(b',');
        w.number(o.upstream_offset);
        w.byte(b',');
        w.csv_field(o.metadata);
        w.byte(b',');
        w.number(o.checkpoint_timestamp);
        w.byte(b'\n');
        w.end_row()?;
    }
    w.finish()
}

/// One cell of the offsets table, formatted only when written: a million rows are measured and
/// printed without a string per cell.
enum Cell<'a> {
    Text(&'a str),
    Number(i64),
    /// Commit metadata, escaped so a line break or control character cannot break the layout.
    Escaped(&'a str),
}

impl Cell<'_> {
    fn width(&self) -> usize {
        match self {
            Cell::Text(text) => text.chars().count(),
            Cell::Number(n) => decimal_width(*n),
            Cell::Escaped(text) => text.escape_debug().count(),
        }
    }

    fn write(&self, w: &mut ChunkedWriter<'_>) {
        match self {
            Cell::Text(text) => w.text(text),
            Cell::Number(n) => w.number(*n),
            Cell::Escaped(text) => w.display(text.escape_debug()),
        }
    }
}

fn decimal_width(n: i64) -> usize {
    let sign = usize::from(n < 0);
    sign + n
        .unsigned_abs()
        .checked_ilog10()
        .map_or(1, |digits| digits as usize + 1)
}

const TABLE_COLUMNS: usize = 7;

fn table_cells<'a>(o: &OffsetRef<'a>) -> [Cell<'a>; TABLE_COLUMNS] {
    [
        Cell::Text(o.source),
        Cell::Text(o.group),
        Cell::Text(o.topic),
        Cell::Number(o.partition.into()),
        Cell::Number(o.offset),
        Cell::Number(o.upstream_offset),
        Cell::Escaped(o.metadata),
    ]
}

/// Writes an aligned, human-readable table, with a SOURCE column when offsets come from more
/// than one source. Two passes over the offsets: widths, then lines.
pub fn write_table(out: &mut dyn Write, translation: &Translation) -> io::Result<()> {
    let first_source = translation.iter().next().map(|o| o.source);
    let multi_source = translation.iter().any(|o| Some(o.source) != first_source);
    let header = [
        "SOURCE",
        "GROUP",
        "TOPIC",
        "PARTITION",
        "OFFSET",
        "UPSTREAM",
        "METADATA",
    ];
    let shown = usize::from(!multi_source)..TABLE_COLUMNS;
    let mut widths = header.map(str::len);
    for o in translation.iter() {
        for (width, cell) in widths.iter_mut().zip(table_cells(&o)) {
            *width = (*width).max(cell.width());
        }
    }
    let mut w = ChunkedWriter::new(out);
    let header_cells = header.map(Cell::Text);
    write_padded_line(&mut w, &header_cells[shown.clone()], &widths[shown.clone()]);
    for o in translation.iter() {
        write_padded_line(
            &mut w,
            &table_cells(&o)[shown.clone()],
            &widths[shown.clone()],
        );
        w.end_row()?;
    }
    w.finish()
}

/// One line of cells, each padded to its column's width with two spaces between columns and
/// nothing after the last non-empty cell.
fn write_padded_line(w: &mut ChunkedWriter<'_>, cells: &[Cell<'_>], widths: &[usize]) {
    let last = cells.iter().rposition(|cell| cell.width() > 0).unwrap_or(0);
    for (c, (cell, width)) in cells.iter().zip(widths).enumerate().take(last + 1) {
        cell.write(w);
        if c < last {
            w.spaces(width - cell.width() + 2);
        }
    }
    w.byte(b'\n');
}

/// Writes rows (the first is the header) as columns padded to their widest cell.
pub fn write_aligned(out: &mut dyn Write, rows: &[Vec<String>]) -> io::Result<()> {
    let Some(columns) = rows.first().map(Vec::len) else {
        return Ok(());
    };
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if c + 1 < columns {
                line.push_str(&" ".repeat(widths[c] - cell.chars().count() + 2));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// Writes a two-column listing (`topics`, `upstream`) as a table, CSV, or the given JSON document.
pub fn write_listing(
    out: &mut dyn Write,
    format: super::OutputFormat,
    header: [&str; 2],
    rows: &[(String, String)],
    json: &serde_json::Value,
) -> io::Result<()> {
    use super::OutputFormat;
    match format {
        OutputFormat::Json => writeln!(out, "{json}"),
        OutputFormat::Csv | OutputFormat::ResetCsv => {
            writeln!(
                out,
                "{},{}",
                header[0].to_lowercase(),
                header[1].to_lowercase()
            )?;
            for (a, b) in rows {
                writeln!(out, "{},{}", csv_field(a), csv_field(b))?;
            }
            Ok(())
        }
        OutputFormat::Table => {
            let mut table = vec![vec![header[0].to_string(), header[1].to_string()]];
            table.extend(rows.iter().map(|(a, b)| vec![a.clone(), b.clone()]));
            write_aligned(out, &table)
        }
    }
}

/// A file name for a group id: characters outside `[A-Za-z0-9._-]` are percent-encoded, so any
/// group id maps to one safe, distinct name.
pub fn reset_file_name(group: &str) -> String {
    let mut name = String::with_capacity(group.len() + 4);
    for byte in group.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-') {
            name.push(byte as char);
        } else {
            name.push_str(&format!("%{byte:02X}"));
        }
    }
    // "." and ".." would name directories.
    if name.chars().all(|c| c == '.') {
        name = name.replace('.', "%2E");
    }
    name.push_str(".csv");
    name
}

/// Writes `<dir>/<group>.csv` per group, each line `topic,partition,offset` as
/// `kafka-consumer-groups.sh --reset-offsets --from-file` reads it. Returns (group, file) pairs.
pub fn write_reset_files(
    dir: &Path,
    translation: &Translation,
) -> io::Result<Vec<(String, PathBuf)>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for group in translation.groups() {
        let path = dir.join(reset_file_name(group));
        let mut file = io::BufWriter::new(std::fs::File::create(&path)?);
        for o in translation.group(group) {
            writeln!(file, "{},{},{}", csv_field(o.topic), o.partition, o.offset)?;
        }
        file.flush()?;
        written.push((group.to_string(), path));
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A translation of three checkpoints of source "primary", each upstream offset 100 above
    /// its translated one; the builder stamps record i at 1_700_000_000_000 + i ms.
    fn sample() -> Translation {
        use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
        use mm2_offsets::records::builder::BatchBuilder;
        use mm2_offsets::translate::{BatchTranslator, GroupSelector};

        let mut batch = BatchBuilder::new(0);
        batch.base_timestamp = 1_700_000_000_000;
        let rows = [
            ("app", "primary.orders", 0, 42, ""),
            ("app", "primary.orders", 1, 7, "a,\"b\""),
            ("g/x", "primary.t", 0, 1, ""),
        ];
        for (group, topic, partition, offset, metadata) in rows {
            let key = checkpoint::encode_key(&CheckpointKey {
                group: group.as_bytes(),
                topic: topic.as_bytes(),
                partition,
            })
            .unwrap();
            let value = checkpoint::encode_value(&CheckpointValue {
                version: 0,
                upstream_offset: offset + 100,
                downstream_offset: offset,
                metadata: metadata.as_bytes(),
            })
            .unwrap();
            batch = batch.record(Some(&key), Some(&value));
        }
        let selector = GroupSelector::all();
        let mut translator = BatchTranslator::new(&selector);
        translator.add_batches(0, &batch.build()).unwrap();
        translator.finish("primary")
    }

    #[test]
    fn csv_quotes_fields_that_need_it() {
        let mut out = Vec::new();
        write_csv(&mut out, &sample()).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[2],
            "primary,app,primary.orders,1,7,107,\"a,\"\"b\"\"\",1700000000001"
        );
    }

    #[test]
    fn json_has_schema_version_and_completeness() {
        let mut out = Vec::new();
        write_json(&mut out, &sample()).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["schema_version"], 1);
        assert_eq!(value["complete"], true);
        assert_eq!(value["offsets"][0]["offset"], 42);
        assert_eq!(value["offsets"][2]["group"], "g/x");
    }

    #[test]
    fn json_is_what_serde_writes_for_the_schema() {
        let translation = sample();
        let mut fast = Vec::new();
        write_json(&mut fast, &translation).unwrap();
        let doc = JsonDocument {
            schema_version: JSON_SCHEMA_VERSION,
            complete: translation.report.complete,
            offsets: OffsetsJson(&translation),
            report: &translation.report,
        };
        let mut reference = serde_json::to_vec(&doc).unwrap();
        reference.push(b'\n');
        assert_eq!(
            String::from_utf8(fast).unwrap(),
            String::from_utf8(reference).unwrap()
        );
    }

    #[test]
    fn table_aligns_columns() {
        let mut out = Vec::new();
        write_table(&mut out, &sample()).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[0].starts_with("GROUP  TOPIC"));
        let col = lines[0].find("PARTITION").unwrap();
        assert_eq!(&lines[1][col..col + 1], "0");
        let col = lines[0].find("METADATA").unwrap();
        // Escaped as written, and nothing trails the last cell.
        assert_eq!(&lines[2][col..], "a,\\\"b\\\"");
        assert_eq!(lines[1].len(), lines[1].trim_end().len());
        assert!(!lines[0].contains("SOURCE"));
    }

    #[test]
    fn reset_files_are_one_per_group_with_safe_names() {
        assert_eq!(reset_file_name("g/x"), "g%2Fx.csv");
        assert_eq!(reset_file_name(".."), "%2E%2E.csv");
        let dir = tempfile::tempdir().unwrap();
        let written = write_reset_files(dir.path(), &sample()).unwrap();
        assert_eq!(written.len(), 2);
        let app = std::fs::read_to_string(dir.path().join("app.csv")).unwrap();
        assert_eq!(app, "primary.orders,0,42\nprimary.orders,1,7\n");
    }
}
