//! `translate --offsets-file FILE`: upstream positions that are not consumer groups' (the
//! source offsets a Flink, Spark or Kafka Streams application keeps in its own checkpoints),
//! as CSV lines `topic,partition,offset` with the source's topic names; `-` reads stdin.
//!
//! The file is untrusted input: at most [`MAX_BYTES`], a regular file or stdin (a FIFO or a
//! device could block or never end), UTF-8, every field checked, each (topic, partition) once.
//! A leading byte order mark, `\r` line ends, blank lines, `#` comments and a header line
//! `topic,partition,offset` are accepted.

use std::io::Read;
use std::path::Path;

/// The largest offsets file read: about two million lines.
pub const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Reads and parses the positions of `path` (`-`: stdin).
pub fn read(path: &Path) -> Result<Vec<(String, i32, i64)>, String> {
    let shown = path.display();
    let mut bytes = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin()
            .lock()
            .take(MAX_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("--offsets-file -: reading stdin: {e}"))?;
    } else {
        // Checked before opening: opening a FIFO blocks until a writer comes.
        let regular = |m: std::fs::Metadata| {
            if m.is_file() {
                Ok(m.len())
            } else {
                Err(format!(
                    "--offsets-file {shown}: not a regular file (a FIFO, device or directory is refused; use - for stdin)"
                ))
            }
        };
        regular(std::fs::metadata(path).map_err(|e| format!("--offsets-file {shown}: {e}"))?)?;
        let file = std::fs::File::open(path).map_err(|e| format!("--offsets-file {shown}: {e}"))?;
        let len = regular(
            file.metadata()
                .map_err(|e| format!("--offsets-file {shown}: {e}"))?,
        )?;
        if len > MAX_BYTES {
            return Err(format!(
                "--offsets-file {shown}: {len} bytes, more than the {MAX_BYTES} accepted"
            ));
        }
        file.take(MAX_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("--offsets-file {shown}: {e}"))?;
    }
    if bytes.len() as u64 > MAX_BYTES {
        return Err(format!(
            "--offsets-file {shown}: more than the {MAX_BYTES} bytes accepted"
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "--offsets-file {shown}: not UTF-8 (byte {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    parse(&text).map_err(|e| format!("--offsets-file {shown}: {e}"))
}

/// Parses the CSV text (see the module documentation).
pub fn parse(text: &str) -> Result<Vec<(String, i32, i64)>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut header_allowed = true;
    for (number, line) in text.split('\n').enumerate() {
        let number = number + 1;
        let line = line.strip_suffix('\r').unwrap_or(line).trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if header_allowed
            && fields.len() == 3
            && fields[0].eq_ignore_ascii_case("topic")
            && fields[1].eq_ignore_ascii_case("partition")
            && fields[2].eq_ignore_ascii_case("offset")
        {
            header_allowed = false;
            continue;
        }
        header_allowed = false;
        let [topic, partition, offset] = fields[..] else {
            return Err(format!(
                "line {number}: expected topic,partition,offset ({} fields)",
                fields.len()
            ));
        };
        let legal = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
        if topic.is_empty() || topic.len() > 249 || !topic.bytes().all(legal) {
            return Err(format!(
                "line {number}: {:?} is not a topic name (1 to 249 of A-Z a-z 0-9 . _ -)",
                crate::escape::shortened(topic)
            ));
        }
        let partition: i32 = partition.parse().ok().filter(|p| *p >= 0).ok_or_else(|| {
            format!("line {number}: partition {partition:?} is not 0 to 2147483647")
        })?;
        let offset: i64 = offset.parse().ok().filter(|o| *o >= 0).ok_or_else(|| {
            format!("line {number}: offset {offset:?} is not a non-negative integer")
        })?;
        if !seen.insert((topic.to_string(), partition)) {
            return Err(format!(
                "line {number}: {topic}-{partition} is listed twice; give each partition once"
            ));
        }
        out.push((topic.to_string(), partition, offset));
    }
    if out.is_empty() {
        return Err("no positions (expected lines topic,partition,offset)".to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_headers_and_comments() {
        let text = "\u{feff}topic,partition,offset\r\n# a comment\n\norders,0,100\r\norders, 1 ,7\npay-ments.v2,3,0\n";
        assert_eq!(
            parse(text).unwrap(),
            [
                ("orders".to_string(), 0, 100),
                ("orders".to_string(), 1, 7),
                ("pay-ments.v2".to_string(), 3, 0)
            ]
        );
    }

    #[test]
    fn bad_lines_are_named() {
        for (text, expect) in [
            ("orders,0\n", "line 1: expected"),
            ("orders,-1,5\n", "line 1: partition"),
            ("orders,0,x\n", "line 1: offset"),
            ("orders,0,-3\n", "line 1: offset"),
            ("or ders,0,1\n", "line 1: \"or ders\""),
            ("a,0,1\nb,0,1\na,0,2\n", "line 3: a-0 is listed twice"),
            ("\n# only comments\n", "no positions"),
            ("x,0,1\ntopic,partition,offset\n", "line 2: partition"),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(expect), "{text:?}: {error}");
        }
    }

    #[test]
    fn fifos_and_directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let error = read(dir.path()).unwrap_err();
        assert!(error.contains("not a regular file"), "{error}");
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let error = read(&fifo).unwrap_err();
            assert!(error.contains("not a regular file"), "{error}");
        }
        let file = dir.path().join("ok.csv");
        std::fs::write(&file, "t,0,5\n").unwrap();
        assert_eq!(read(&file).unwrap(), [("t".to_string(), 0, 5)]);
    }
}
