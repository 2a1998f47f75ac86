//! A write buffer for the output of a million rows: each row is formatted into plain memory and
//! handed to the destination 64 KiB at a time.
//!
//! `write!` into a `&mut dyn Write` costs a virtual call per piece: profiled on an all-groups
//! JSON of one million offsets, a third of the process time went into `BufWriter::write_all`
//! and `memmove` for pieces of a few bytes. Here pieces are appended to a `Vec<u8>` (inlined
//! copies), numbers go through `itoa`, and the destination sees one call per 64 KiB.

use std::io::{self, Write};

const FLUSH_AT: usize = 64 * 1024;

/// Appends pieces of output and passes them on in large writes.
pub(crate) struct ChunkedWriter<'w> {
    out: &'w mut dyn Write,
    buffer: Vec<u8>,
    numbers: itoa::Buffer,
}

impl<'w> ChunkedWriter<'w> {
    pub(crate) fn new(out: &'w mut dyn Write) -> Self {
        ChunkedWriter {
            out,
            buffer: Vec::with_capacity(FLUSH_AT + 4096),
            numbers: itoa::Buffer::new(),
        }
    }

    /// Ends a row: passes the buffer on once it holds enough.
    pub(crate) fn end_row(&mut self) -> io::Result<()> {
        if self.buffer.len() >= FLUSH_AT {
            self.out.write_all(&self.buffer)?;
            self.buffer.clear();
        }
        Ok(())
    }

    /// Writes out what is buffered and flushes the destination.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.out.write_all(&self.buffer)?;
        self.buffer.clear();
        self.out.flush()
    }

    pub(crate) fn text(&mut self, text: &str) {
        self.buffer.extend_from_slice(text.as_bytes());
    }

    pub(crate) fn byte(&mut self, byte: u8) {
        self.buffer.push(byte);
    }

    pub(crate) fn spaces(&mut self, count: usize) {
        self.buffer.resize(self.buffer.len() + count, b' ');
    }

    pub(crate) fn number(&mut self, n: impl itoa::Integer) {
        self.buffer
            .extend_from_slice(self.numbers.format(n).as_bytes());
    }

    /// Anything `Display`; for the rare cell that is neither text nor a number.
    pub(crate) fn display(&mut self, value: impl std::fmt::Display) {
        // Writing into a Vec cannot fail.
        let _ = write!(self.buffer, "{value}");
    }

    /// A JSON string literal, escaped as serde_json escapes: `"`, `\` and control characters,
    /// nothing else.
    pub(crate) fn json_string(&mut self, text: &str) {
        self.buffer.push(b'"');
        let bytes = text.as_bytes();
        // Group and topic names almost never need escaping: test every byte without an early
        // exit (which the compiler vectorises) and copy the whole name at once.
        let plain = bytes.iter().fold(true, |plain, &b| {
            plain & (b >= 0x20) & (b != b'"') & (b != b'\\')
        });
        if plain {
            self.buffer.extend_from_slice(bytes);
            self.buffer.push(b'"');
            return;
        }
        let mut start = 0;
        for (i, &byte) in bytes.iter().enumerate() {
            let escape: &[u8] = match byte {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0x08 => b"\\b",
                0x0c => b"\\f",
                0x00..=0x1f => b"",
                _ => continue,
            };
            self.buffer.extend_from_slice(&bytes[start..i]);
            if escape.is_empty() {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                self.buffer.extend_from_slice(b"\\u00");
                self.buffer.push(HEX[usize::from(byte >> 4)]);
                self.buffer.push(HEX[usize::from(byte & 0xf)]);
            } else {
                self.buffer.extend_from_slice(escape);
            }
            start = i + 1;
        }
        self.buffer.extend_from_slice(&bytes[start..]);
        self.buffer.push(b'"');
    }

    /// A CSV field, quoted as `output::csv_field` quotes it (which allocates only for the rare
    /// field that needs quotes).
    pub(crate) fn csv_field(&mut self, text: &str) {
        self.text(&csv_field(text));
    }
}

/// Quotes a CSV field when it holds a comma, quote or line break (RFC 4180).
pub fn csv_field(value: &str) -> std::borrow::Cow<'_, str> {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\"")).into()
    } else {
        value.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(f: impl FnOnce(&mut ChunkedWriter<'_>)) -> String {
        let mut out = Vec::new();
        let mut writer = ChunkedWriter::new(&mut out);
        f(&mut writer);
        writer.finish().unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn json_strings_are_escaped_exactly_as_serde_json_does() {
        let mut every_control: String = (0u8..0x20).map(char::from).collect();
        every_control.push_str("\u{7f}é\u{fffd}/<>'");
        for text in [
            "",
            "plain",
            "quote \" and backslash \\",
            "line\nbreak\r\ttab",
            every_control.as_str(),
        ] {
            let ours = written(|w| w.json_string(text));
            assert_eq!(ours, serde_json::to_string(text).unwrap(), "{text:?}");
        }
    }

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        let cases = [
            ("plain", "plain"),
            ("a,b", "\"a,b\""),
            ("say \"hi\"", "\"say \"\"hi\"\"\""),
            ("two\nlines", "\"two\nlines\""),
            ("", ""),
        ];
        for (field, expected) in cases {
            assert_eq!(written(|w| w.csv_field(field)), expected, "{field:?}");
        }
    }

    #[test]
    fn large_output_arrives_whole_and_in_order() {
        let text = written(|w| {
            for n in 0..100_000i64 {
                w.number(n);
                w.byte(b'\n');
                w.end_row().unwrap();
            }
        });
        let numbers: Vec<i64> = text.lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(numbers, (0..100_000).collect::<Vec<_>>());
    }
}
