//! Rendering a translation: an aligned table, JSON, CSV, or per-group reset files for
//! `kafka-consumer-groups.sh --reset-offsets --from-file`.

use std::io::{self, Write};

use super::chunked::{ChunkedWriter, csv_field};
use super::escape::{for_terminal, terminal_width};
use mm2_offsets::translate::{JSON_SCHEMA_VERSION, OffsetRef, Translation};

/// Writes the translation as one compact JSON document (pipe to `jq .` for reading), offset
/// by offset: the same bytes serde_json writes for the library's `Serialize` of [`Translation`]
/// (the one definition of the document), without a call per piece.
pub fn write_json(out: &mut dyn Write, translation: &Translation) -> io::Result<()> {
    write_json_to(ChunkedWriter::new(out), translation, None)
}

/// [`write_json`] into `w` (e.g. a [`ChunkedWriter::background`] writer), with `extra`
/// members (`,"name":value...`) before the closing brace.
pub fn write_json_to(
    mut w: ChunkedWriter<'_>,
    translation: &Translation,
    extra: Option<&str>,
) -> io::Result<()> {
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
    w.text(",\"missing_groups\":[");
    for (i, group) in translation.missing_groups().iter().enumerate() {
        if i > 0 {
            w.byte(b',');
        }
        w.json_string(group);
    }
    w.byte(b']');
    if let Some(extra) = extra {
        w.text(extra);
    }
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
    w.text(",\"group_type\":");
    w.json_string(o.group_type.name());
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

/// Writes one CSV row per translated offset, with a header. To a file or pipe the fields are
/// exact (RFC 4180 quoting only); on a `terminal` the strings from the cluster are escaped as in
/// the table, as `ls` quotes names only on a terminal, so no escape sequence reaches it.
pub fn write_csv(out: &mut dyn Write, translation: &Translation, terminal: bool) -> io::Result<()> {
    write_csv_with(out, translation, terminal, "", |_, _| {})
}

/// [`write_csv`] into `w` (e.g. a [`ChunkedWriter::background`] writer).
pub fn write_csv_to(
    w: ChunkedWriter<'_>,
    translation: &Translation,
    terminal: bool,
) -> io::Result<()> {
    write_csv_rows(w, translation, terminal, "", |_, _| {})
}

/// [`write_csv`] with more columns after the usual ones: `extra_header` (starting with a comma)
/// and, per row (by index in iteration order), `extra` writing its cells (each after a comma).
pub fn write_csv_with(
    out: &mut dyn Write,
    translation: &Translation,
    terminal: bool,
    extra_header: &str,
    extra: impl FnMut(usize, &mut ChunkedWriter<'_>),
) -> io::Result<()> {
    write_csv_rows(
        ChunkedWriter::new(out),
        translation,
        terminal,
        extra_header,
        extra,
    )
}

fn write_csv_rows(
    mut w: ChunkedWriter<'_>,
    translation: &Translation,
    terminal: bool,
    extra_header: &str,
    mut extra: impl FnMut(usize, &mut ChunkedWriter<'_>),
) -> io::Result<()> {
    let field = |w: &mut ChunkedWriter<'_>, text: &str| {
        if terminal {
            w.csv_field(&for_terminal(text));
        } else {
            w.csv_field(text);
        }
    };
    w.text("source,group,topic,partition,offset,upstream_offset,metadata,checkpoint_timestamp");
    w.text(extra_header);
    // Last, after any extra columns: every earlier column keeps its place.
    w.text(",group_type");
    w.byte(b'\n');
    for (i, o) in translation.iter().enumerate() {
        field(&mut w, o.source);
        w.byte(b',');
        field(&mut w, o.group);
        w.byte(b',');
        field(&mut w, o.topic);
        w.byte(b',');
        w.number(o.partition);
        w.byte(b',');
        w.number(o.offset);
        w.byte(b',');
        w.number(o.upstream_offset);
        w.byte(b',');
        field(&mut w, o.metadata);
        w.byte(b',');
        w.number(o.checkpoint_timestamp);
        extra(i, &mut w);
        w.byte(b',');
        field(&mut w, o.group_type.name());
        w.byte(b'\n');
        w.end_row()?;
    }
    w.finish()
}

/// One cell of the offsets table, formatted only when written: a million rows are measured and
/// printed without a string per cell.
enum Cell<'a> {
    /// Our own words (headers).
    Text(&'a str),
    Number(i64),
    /// A string from the cluster's data (alias, group, topic, metadata), escaped so a line
    /// break, control character or escape sequence cannot break the layout or reach the
    /// terminal.
    Untrusted(&'a str),
}

impl Cell<'_> {
    fn width(&self) -> usize {
        match self {
            Cell::Text(text) => text.chars().count(),
            Cell::Number(n) => decimal_width(*n),
            Cell::Untrusted(text) => terminal_width(text),
        }
    }

    fn write(&self, w: &mut ChunkedWriter<'_>) {
        match self {
            Cell::Text(text) => w.text(text),
            Cell::Number(n) => w.number(*n),
            Cell::Untrusted(text) => w.text(&for_terminal(text)),
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

const TABLE_COLUMNS: usize = 8;

fn table_cells<'a>(o: &OffsetRef<'a>) -> [Cell<'a>; TABLE_COLUMNS] {
    [
        Cell::Untrusted(o.source),
        Cell::Untrusted(o.group),
        Cell::Untrusted(o.group_type.name()),
        Cell::Untrusted(o.topic),
        Cell::Number(o.partition.into()),
        Cell::Number(o.offset),
        Cell::Number(o.upstream_offset),
        Cell::Untrusted(o.metadata),
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
        "TYPE",
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
    format: crate::args::OutputFormat,
    header: [&str; 2],
    rows: &[(String, String)],
    json: &serde_json::Value,
) -> io::Result<()> {
    use crate::args::OutputFormat;
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
            table
                .extend(rows.iter().map(|(a, b)| {
                    vec![for_terminal(a).into_owned(), for_terminal(b).into_owned()]
                }));
            write_aligned(out, &table)
        }
    }
}

/// Standard output without Rust's line buffering. `Stdout` is a `LineWriter`, which searches
/// every write for its last line break: 6% of an all-groups run printing a gigabyte of JSON,
/// whose writers already hand over 64 KiB at a time. A duplicate of descriptor 1 writes to the
/// same place without it; when duplicating fails, the buffered handle does the job.
pub fn unbuffered_stdout() -> Box<dyn Write> {
    match stdout_file() {
        Some(file) => Box::new(file),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    }
}

/// A duplicate of descriptor 1 (see [`unbuffered_stdout`]), if one can be made.
fn stdout_file() -> Option<std::fs::File> {
    use std::os::fd::AsFd;
    let fd = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    Some(std::fs::File::from(fd))
}

/// A writer of standard output for a large answer: formatted here, written by a thread of its
/// own ([`ChunkedWriter::background`]), without Rust's line buffering. `None` when descriptor 1
/// cannot be duplicated: use [`unbuffered_stdout`] then.
pub fn background_stdout() -> Option<ChunkedWriter<'static>> {
    stdout_file().map(ChunkedWriter::background)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A translation of three checkpoints of source "primary", each upstream offset 100 above
    /// its translated one; the builder stamps record i at 1_700_000_000_000 + i ms.
    fn sample() -> Translation {
        sample_asking_for(&[])
    }

    /// The sample checkpoints, translated for every group plus `extra_ids` asked for by name.
    fn sample_asking_for(extra_ids: &[&str]) -> Translation {
        use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
        use mm2_offsets::records::builder::BatchBuilder;
        use mm2_offsets::select::GroupSelector;
        use mm2_offsets::translate::BatchTranslator;

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
        let selector = if extra_ids.is_empty() {
            GroupSelector::all()
        } else {
            let ids = ["app", "g/x"].iter().chain(extra_ids).copied();
            GroupSelector::ids(ids)
        };
        let mut translator = BatchTranslator::new(&selector);
        translator.add_batches(0, &batch.build()).unwrap();
        translator.finish("primary")
    }

    #[test]
    fn csv_quotes_fields_that_need_it() {
        let mut out = Vec::new();
        write_csv(&mut out, &sample(), false).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[2],
            "primary,app,primary.orders,1,7,107,\"a,\"\"b\"\"\",1700000000001,consumer"
        );
        // The type comes last, so every earlier column keeps its place.
        assert!(
            lines[0].ends_with(",checkpoint_timestamp,group_type"),
            "{}",
            lines[0]
        );
    }

    #[test]
    fn json_has_schema_version_and_completeness() {
        let mut out = Vec::new();
        write_json(&mut out, &sample_asking_for(&["no\"pe", "b\u{7}"])).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["schema_version"], 1);
        assert_eq!(value["complete"], true);
        assert_eq!(value["offsets"][0]["offset"], 42);
        assert_eq!(value["offsets"][2]["group"], "g/x");
        assert_eq!(value["missing_groups"][0], "b\u{7}");
        assert_eq!(value["missing_groups"][1], "no\"pe");
    }

    #[test]
    fn json_is_what_serde_writes_for_the_library_type() {
        // The library's `Serialize for Translation` defines the document; the CLI's streaming
        // writer must give the same bytes, complete and incomplete alike.
        let mut translation = sample_asking_for(&["missing\u{7}"]);
        for complete in [true, false] {
            translation.report.complete = complete;
            assert_same_json(&translation);
        }
    }

    fn assert_same_json(translation: &Translation) {
        let mut fast = Vec::new();
        write_json(&mut fast, translation).unwrap();
        let mut reference = serde_json::to_vec(translation).unwrap();
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
        assert!(
            lines[0].starts_with("GROUP  TYPE      TOPIC"),
            "{}",
            lines[0]
        );
        let col = lines[0].find("TYPE").unwrap();
        assert_eq!(&lines[1][col..col + 9], "consumer ");
        let col = lines[0].find("PARTITION").unwrap();
        assert_eq!(&lines[1][col..col + 1], "0");
        let col = lines[0].find("METADATA").unwrap();
        // Escaped as written, and nothing trails the last cell.
        assert_eq!(&lines[2][col..], "a,\"b\"");
        assert_eq!(lines[1].len(), lines[1].trim_end().len());
        assert!(!lines[0].contains("SOURCE"));
    }

    /// A translation of one checkpoint with the given strings.
    fn one(group: &str, topic: &str, metadata: &str) -> Translation {
        use mm2_offsets::mm2::checkpoint::{self, CheckpointKey, CheckpointValue};
        use mm2_offsets::records::builder::BatchBuilder;
        use mm2_offsets::select::GroupSelector;
        use mm2_offsets::translate::BatchTranslator;

        let key = checkpoint::encode_key(&CheckpointKey {
            group: group.as_bytes(),
            topic: topic.as_bytes(),
            partition: 3,
        })
        .unwrap();
        let value = checkpoint::encode_value(&CheckpointValue {
            version: 0,
            upstream_offset: 10,
            downstream_offset: 7,
            metadata: metadata.as_bytes(),
        })
        .unwrap();
        let batch = BatchBuilder::new(0).record(Some(&key), Some(&value));
        let selector = GroupSelector::all();
        let mut translator = BatchTranslator::new(&selector);
        translator.add_batches(0, &batch.build()).unwrap();
        translator.finish("src")
    }

    mod csv_reader {
        include!("../../../protocol-tests/tests/support/csv.rs");
    }

    /// Strings from the cluster: any Unicode, weighted towards controls, quotes, separators,
    /// escape sequences and reordering marks.
    fn hostile() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            "\\PC{0,40}",
            "[\\x00-\\x1f\\x7f-\\x9f\"',;\\\\ a-z\u{202e}\u{2066}\u{feff}\u{2028}]{0,40}",
            any::<String>().prop_map(|s| s.chars().take(60).collect()),
        ]
    }

    proptest::proptest! {
        #[test]
        fn any_string_round_trips_through_every_format(
            group in hostile(), topic in hostile(), metadata in hostile()
        ) {
            let translation = one(&group, &topic, &metadata);
            proptest::prop_assume!(translation.len() == 1);

            let mut json = Vec::new();
            write_json(&mut json, &translation).unwrap();
            let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
            proptest::prop_assert_eq!(doc["offsets"][0]["group"].as_str(), Some(group.as_str()));
            proptest::prop_assert_eq!(doc["offsets"][0]["topic"].as_str(), Some(topic.as_str()));
            proptest::prop_assert_eq!(
                doc["offsets"][0]["metadata"].as_str(),
                Some(metadata.as_str())
            );

            let mut csv = Vec::new();
            write_csv(&mut csv, &translation, false).unwrap();
            let records = csv_reader::parse(std::str::from_utf8(&csv).unwrap());
            proptest::prop_assert_eq!(records.len(), 2);
            let row = &records[1];
            proptest::prop_assert_eq!(
                (&row[1], &row[2], &row[6]),
                (&group, &topic, &metadata)
            );
            proptest::prop_assert_eq!(&row[3], "3");

            let mut table = Vec::new();
            write_table(&mut table, &translation).unwrap();
            let table = String::from_utf8(table).unwrap();
            proptest::prop_assert_eq!(table.lines().count(), 2, "{:?}", table);
            for line in table.lines() {
                proptest::prop_assert!(
                    !line.chars().any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
                    "{:?}", table
                );
            }

            let mut on_terminal = Vec::new();
            write_csv(&mut on_terminal, &translation, true).unwrap();
            let on_terminal = String::from_utf8(on_terminal).unwrap();
            proptest::prop_assert!(
                !on_terminal.chars().any(|c| c.is_control() && c != '\n'),
                "{:?}", on_terminal
            );

            let rows = vec![(group.clone(), topic.clone())];
            let mut listing = Vec::new();
            write_listing(&mut listing, crate::args::OutputFormat::Table, ["A", "B"], &rows, &serde_json::Value::Null).unwrap();
            let listing = String::from_utf8(listing).unwrap();
            proptest::prop_assert_eq!(listing.lines().count(), 2);
            proptest::prop_assert!(!listing.lines().any(|l| l.chars().any(char::is_control)));
        }
    }
}
