//! `-o reset-csv`: one file per (source, group) for `kafka-consumer-groups.sh --reset-offsets
//! --from-file`, lines `topic,partition,offset`, and an index naming them all.
//!
//! One file per source as well as per group: two sources (Identity policy, a mesh of clusters)
//! may both have checkpoints of one group for one topic-partition, with different offsets, and
//! a file without a source column cannot say which is which.
//!
//! Group ids and aliases come from the cluster's data, so the file names are made, not copied:
//! the safe characters of source and group (`[A-Za-z0-9_-]`, others as `_`), each cut to a
//! bounded length, then a hash of the exact (source, group) bytes, so names are distinct even on
//! case-insensitive file systems, never longer than [`MAX_NAME`] bytes, and stable from run to
//! run. The whole plan is made and checked before the first file is written, so no id can stop
//! a run halfway. `index.csv` maps every file back to its exact source and group.

use std::collections::HashSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::chunked::csv_field;
use mm2_offsets::translate::Translation;

/// The name of the index file in the output directory.
pub const INDEX_FILE: &str = "index.csv";
/// Characters of the source alias kept in a file name.
const SOURCE_CHARS: usize = 40;
/// Characters of the group id kept in a file name.
const GROUP_CHARS: usize = 100;
/// The longest file name made: well under the 255 bytes of common file systems.
pub const MAX_NAME: usize = SOURCE_CHARS + GROUP_CHARS + 2 + 2 + 16 + 4;

/// One file to write.
#[derive(Debug)]
pub struct PlannedFile<'a> {
    /// The source alias, exactly.
    pub source: &'a str,
    /// The group id, exactly.
    pub group: &'a str,
    /// The file name in the output directory.
    pub name: String,
}

/// `text` cut to `max` characters, every byte outside `[A-Za-z0-9_-]` as `_`.
fn safe_part(text: &str, max: usize) -> String {
    text.bytes()
        .take(max)
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-') {
                b as char
            } else {
                '_'
            }
        })
        .collect()
}

/// The file name for (source, group): `SOURCE--GROUP--HASH.csv`.
pub fn file_name(source: &str, group: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(source.len().to_le_bytes());
    hasher.update(source.as_bytes());
    hasher.update(group.as_bytes());
    let digest = hasher.finalize();
    let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}--{}--{hash}.csv",
        safe_part(source, SOURCE_CHARS),
        safe_part(group, GROUP_CHARS)
    )
}

/// Every (source, group) with offsets, and its file name; an error when two names collide (a
/// 64-bit hash collision), before anything is written.
pub fn plan(translation: &Translation) -> Result<Vec<PlannedFile<'_>>, String> {
    let mut planned = Vec::new();
    let mut names = HashSet::new();
    for group in translation.groups() {
        let mut last_source = None;
        for offset in translation.group(group) {
            if last_source == Some(offset.source) {
                continue;
            }
            last_source = Some(offset.source);
            let name = file_name(offset.source, group);
            debug_assert!(name.len() <= MAX_NAME, "{name}");
            if !names.insert(name.clone()) {
                return Err(format!(
                    "two groups map to the reset file name {name}; nothing was written"
                ));
            }
            planned.push(PlannedFile {
                source: offset.source,
                group,
                name,
            });
        }
    }
    Ok(planned)
}

/// Writes the planned files and the index into `dir` (created if needed). Returns the files
/// with their paths.
pub fn write<'a>(
    dir: &Path,
    translation: &'a Translation,
) -> Result<Vec<(PlannedFile<'a>, PathBuf)>, String> {
    let shown = super::escape::for_terminal(&dir.display().to_string()).into_owned();
    let planned = plan(translation)?;
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "--output-dir {shown} is a file, not a directory; name a directory (it is created if missing)"
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create --output-dir {shown}: {e}"))?;
    let mut written = Vec::with_capacity(planned.len());
    for file in planned {
        let path = dir.join(&file.name);
        write_one(&path, translation, &file).map_err(|e| {
            format!(
                "cannot write {} (group {:?} from source {:?}): {e}",
                super::escape::for_terminal(&path.display().to_string()),
                super::escape::shortened(file.group),
                super::escape::shortened(file.source)
            )
        })?;
        written.push((file, path));
    }
    let index = dir.join(INDEX_FILE);
    write_index(&index, &written).map_err(|e| {
        format!(
            "cannot write {}: {e}",
            super::escape::for_terminal(&index.display().to_string())
        )
    })?;
    Ok(written)
}

/// One `topic,partition,offset` file. A topic-partition twice in one file would be a bug in the
/// translation; it is refused rather than handed to a tool that applies the last row.
fn write_one(path: &Path, translation: &Translation, file: &PlannedFile<'_>) -> io::Result<()> {
    let mut out = io::BufWriter::new(std::fs::File::create(path)?);
    let mut seen = HashSet::new();
    for o in translation
        .group(file.group)
        .filter(|o| o.source == file.source)
    {
        if !seen.insert((o.topic, o.partition)) {
            return Err(io::Error::other(format!(
                "two offsets for partition {} of one topic",
                o.partition
            )));
        }
        writeln!(out, "{},{},{}", csv_field(o.topic), o.partition, o.offset)?;
    }
    out.flush()
}

/// `index.csv`: `source,group,file`, CSV-quoted, one line per file.
fn write_index(path: &Path, written: &[(PlannedFile<'_>, PathBuf)]) -> io::Result<()> {
    let mut out = io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(out, "source,group,file")?;
    for (file, _) in written {
        writeln!(
            out,
            "{},{},{}",
            csv_field(file.source),
            csv_field(file.group),
            file.name
        )?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_safe_bounded_distinct_and_stable() {
        let long = "g".repeat(300);
        let cases = [
            ("primary", "app"),
            ("primary", "App"),
            ("primary", "../etc/passwd"),
            ("primary", "a\u{1b}[2J\nb"),
            ("primary", ".."),
            ("primary", "CON"),
            ("primary", long.as_str()),
            ("prim", "ary--app"),
            ("prim--ary", "app"),
        ];
        let mut names = HashSet::new();
        for (source, group) in cases {
            let name = file_name(source, group);
            assert!(name.len() <= MAX_NAME, "{name}");
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')),
                "{name}"
            );
            assert!(name.ends_with(".csv") && !name.starts_with('.'), "{name}");
            assert_eq!(name, file_name(source, group));
            assert!(names.insert(name), "{source} {group}");
        }
        assert!(file_name("primary", "app").starts_with("primary--app--"));
    }
}
