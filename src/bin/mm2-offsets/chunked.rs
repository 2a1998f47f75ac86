//! A write buffer for the output of a million rows: each row is formatted into plain memory and
//! handed to the destination 64 KiB at a time.
//!
//! `write!` into a `&mut dyn Write` costs a virtual call per piece: profiled on an all-groups
//! JSON of one million offsets, a third of the process time went into `BufWriter::write_all`
//! and `memmove` for pieces of a few bytes. Here pieces are appended to a `Vec<u8>` (inlined
//! copies), numbers go through `itoa`, and the destination sees one call per 64 KiB. A large
//! answer can be handed to a writer thread instead ([`ChunkedWriter::background`]), so that
//! formatting it and copying it into a pipe overlap.

use std::io::{self, Write};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::thread::JoinHandle;

const FLUSH_AT: usize = 64 * 1024;
/// Chunks handed to a [`ChunkedWriter::background`] writer: larger, so that the thread wakes
/// less often; three of them (one being written, one waiting, one being filled) are 384 KiB,
/// little next to the answer's table (the 1 M-key memory goal is 64 MiB).
const BACKGROUND_FLUSH_AT: usize = 128 * 1024;
/// Chunks a background writer may hold besides the one being filled.
const BACKGROUND_CHUNKS: usize = 2;

/// Appends pieces of output and passes them on in large writes.
pub(crate) struct ChunkedWriter<'w> {
    dest: Dest<'w>,
    buffer: Vec<u8>,
    flush_at: usize,
    numbers: itoa::Buffer,
}

/// Where full chunks go.
enum Dest<'w> {
    /// Written at once, by the thread that formats them.
    Direct(&'w mut dyn Write),
    /// Handed to a thread that writes them while the next chunk is formatted: formatting a
    /// large answer and copying it into a pipe (the reader drains it 64 KiB at a time) then
    /// take the longer of the two, not their sum.
    Background {
        full: Option<SyncSender<Vec<u8>>>,
        empty: Receiver<Vec<u8>>,
        writer: Option<JoinHandle<io::Result<()>>>,
        /// Chunks allocated so far (at most `BACKGROUND_CHUNKS` + 1).
        chunks: usize,
    },
}

impl<'w> ChunkedWriter<'w> {
    pub(crate) fn new(out: &'w mut dyn Write) -> Self {
        ChunkedWriter {
            dest: Dest::Direct(out),
            buffer: Vec::with_capacity(FLUSH_AT + 4096),
            flush_at: FLUSH_AT,
            numbers: itoa::Buffer::new(),
        }
    }

    /// A writer whose chunks `out` receives from a thread of its own (see [`Dest`]), in order.
    /// A write error (a closed pipe) is returned by the next [`end_row`](Self::end_row) or by
    /// [`finish`](Self::finish).
    pub(crate) fn background(mut out: impl Write + Send + 'static) -> ChunkedWriter<'static> {
        let (full, chunks) = sync_channel::<Vec<u8>>(BACKGROUND_CHUNKS);
        let (done, empty) = sync_channel::<Vec<u8>>(BACKGROUND_CHUNKS + 1);
        let writer = std::thread::spawn(move || {
            for mut chunk in chunks {
                out.write_all(&chunk)?;
                chunk.clear();
                // The formatter may have finished: a chunk it no longer needs is dropped.
                let _ = done.try_send(chunk);
            }
            out.flush()
        });
        ChunkedWriter {
            dest: Dest::Background {
                full: Some(full),
                empty,
                writer: Some(writer),
                chunks: 1,
            },
            buffer: Vec::with_capacity(BACKGROUND_FLUSH_AT + 4096),
            flush_at: BACKGROUND_FLUSH_AT,
            numbers: itoa::Buffer::new(),
        }
    }

    /// Ends a row: passes the buffer on once it holds enough.
    pub(crate) fn end_row(&mut self) -> io::Result<()> {
        if self.buffer.len() >= self.flush_at {
            self.pass_on()?;
        }
        Ok(())
    }

    /// Writes out what is buffered and flushes the destination.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.pass_on()?;
        match &mut self.dest {
            Dest::Direct(out) => out.flush(),
            Dest::Background { full, writer, .. } => {
                // Closing the channel ends the thread once it has written every chunk.
                drop(full.take());
                join(writer.take())
            }
        }
    }

    /// Passes the buffer on: written now, or handed to the writer thread for a fresh one.
    fn pass_on(&mut self) -> io::Result<()> {
        match &mut self.dest {
            Dest::Direct(out) => {
                out.write_all(&self.buffer)?;
                self.buffer.clear();
                Ok(())
            }
            Dest::Background {
                full,
                empty,
                writer,
                chunks,
            } => {
                if self.buffer.is_empty() {
                    return Ok(());
                }
                let next = match empty.try_recv() {
                    Ok(chunk) => chunk,
                    Err(TryRecvError::Empty) if *chunks <= BACKGROUND_CHUNKS => {
                        *chunks += 1;
                        Vec::with_capacity(self.flush_at + 4096)
                    }
                    // Every chunk is in the thread's hands: wait for one (or for its end).
                    Err(_) => match empty.recv() {
                        Ok(chunk) => chunk,
                        Err(_) => return join(writer.take()).and(Err(closed())),
                    },
                };
                let chunk = std::mem::replace(&mut self.buffer, next);
                let sent = full.as_ref().map(|f| f.send(chunk));
                match sent {
                    Some(Ok(())) => Ok(()),
                    // The thread stopped: its error says why.
                    _ => join(writer.take()).and(Err(closed())),
                }
            }
        }
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

impl Drop for ChunkedWriter<'_> {
    fn drop(&mut self) {
        // Not finished (an error stopped the rows): let the thread end without waiting for it.
        if let Dest::Background { full, .. } = &mut self.dest {
            drop(full.take());
        }
    }
}

/// The writer thread's outcome.
fn join(writer: Option<JoinHandle<io::Result<()>>>) -> io::Result<()> {
    match writer.map(JoinHandle::join) {
        Some(Ok(result)) => result,
        Some(Err(_)) => Err(io::Error::other("the output writer thread panicked")),
        None => Err(closed()),
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the output writer stopped")
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

    /// A `Write` that keeps what it gets, shared with the test.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_background_writer_delivers_everything_in_order() {
        let out = Shared::default();
        let mut w = ChunkedWriter::background(out.clone());
        for n in 0..300_000i64 {
            w.number(n);
            w.byte(b'\n');
            w.end_row().unwrap();
        }
        w.finish().unwrap();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let numbers: Vec<i64> = text.lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(numbers, (0..300_000).collect::<Vec<_>>());
    }

    /// A `Write` whose reader went away after `left` bytes.
    struct Closing {
        left: usize,
    }

    impl Write for Closing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.left == 0 {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            let n = buf.len().min(self.left);
            self.left -= n;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_background_write_error_reaches_the_formatter() {
        let mut w = ChunkedWriter::background(Closing { left: 100_000 });
        let mut failed = None;
        for n in 0..1_000_000i64 {
            w.number(n);
            w.byte(b'\n');
            if let Err(e) = w.end_row() {
                failed = Some(e);
                break;
            }
        }
        let error = match failed {
            Some(e) => e,
            None => w.finish().unwrap_err(),
        };
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe, "{error}");
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
