//! Java `.properties` files, read as `java.util.Properties.load` reads them.
//!
//! The syntax, in short (Java's javadoc has the long form):
//! * a line whose first non-blank character is `#` or `!` is a comment; blank lines are skipped;
//! * the key ends at the first unescaped `=`, `:` or whitespace; whitespace around the separator is
//!   skipped, and at most one `=`/`:` is taken as the separator;
//! * a line ending in an odd number of backslashes continues on the next line, whose leading
//!   whitespace is dropped;
//! * escapes: `\t`, `\n`, `\r`, `\f`, `\uXXXX` (exactly four hex digits, or the file is rejected),
//!   and `\x` for any other `x` stands for `x`;
//! * a key given twice keeps its last value.
//!
//! Where we differ from Java, on purpose:
//! * A file is decoded as UTF-8 when it is valid UTF-8, and as ISO-8859-1 (Java's reading of a
//!   `.properties` stream) otherwise; a leading UTF-8 byte-order mark is skipped. Java reads every
//!   file as ISO-8859-1, so a UTF-8 file with non-ASCII text means the same to us as to a human,
//!   where Java would see mojibake.
//! * `\uXXXX` escapes that leave an unpaired UTF-16 surrogate become U+FFFD (a Rust string cannot
//!   hold a lone surrogate).
//!
//! [`Properties`] keeps keys in the order they first appear. Its `Debug` output redacts the values
//! of keys that may hold secrets (see [`is_sensitive_key`]).
//!
//! ```
//! use mm2_offsets::config::Properties;
//!
//! let props = Properties::parse(
//!     "# a comment\n\
//!      bootstrap.servers = broker-1:9092,\\\n\
//!      \x20                   broker-2:9092\n\
//!      client.id:mm2-offsets\n",
//! )?;
//! assert_eq!(props.get("bootstrap.servers"), Some("broker-1:9092,broker-2:9092"));
//! assert_eq!(props.get("client.id"), Some("mm2-offsets"));
//! # Ok::<(), mm2_offsets::config::ConfigError>(())
//! ```
//!
//! # References
//! - <https://docs.oracle.com/en/java/javase/17/docs/api/java.base/java/util/Properties.html#load(java.io.Reader)>

use super::ConfigError;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;

/// The largest `.properties` file [`Properties::from_file`] reads: 4 MiB, a thousand times a
/// real client or MirrorMaker 2 config. Parsing holds the text as `char`s, so the limit also
/// bounds memory.
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// An ordered map of string keys to string values, as loaded from a `.properties` file.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Properties {
    entries: Vec<(String, String)>,
    index: HashMap<String, usize>,
}

impl Properties {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `.properties` text.
    ///
    /// # Errors
    /// [`ConfigError::Syntax`] with the line number for a malformed `\uXXXX` escape, the only
    /// error Java's format has.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        Self::parse_named(text, "<text>")
    }

    /// Reads and parses a `.properties` file (UTF-8, or ISO-8859-1 if it is not valid UTF-8).
    ///
    /// # Errors
    /// [`ConfigError::Io`] if the file cannot be read, [`ConfigError::Syntax`] naming the file and
    /// line for a malformed escape.
    /// A file larger than [`MAX_FILE_BYTES`] is refused with [`ConfigError::Invalid`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        // Only a regular file, read at most one byte past the limit: a FIFO would block and
        // /dev/zero never ends.
        let bytes = super::files::read_regular_file(
            path,
            MAX_FILE_BYTES,
            "client and MirrorMaker 2 properties files are a few KiB, so this is probably the \
             wrong file",
        )
        .map_err(|e| match e {
            super::files::FileError::Io(source) => ConfigError::Io {
                path: path.to_path_buf(),
                source,
            },
            other => ConfigError::invalid(path.display().to_string(), other.to_string()),
        })?;
        Self::parse_named(&decode_file(&bytes), &path.display().to_string())
    }

    fn parse_named(text: &str, origin: &str) -> Result<Self, ConfigError> {
        let chars: Vec<char> = text.chars().collect();
        let mut reader = LineReader {
            chars: &chars,
            pos: 0,
            line: 1,
        };
        let mut props = Properties::new();
        let mut buf = Vec::new();
        while let Some(line) = reader.read_line(&mut buf) {
            let (key, value) = split_key_value(&buf);
            let syntax = |reason: String| ConfigError::Syntax {
                origin: origin.to_string(),
                line,
                reason,
            };
            let key = unescape(key).map_err(|e| syntax(format!("{e} in a key")))?;
            let value = unescape(value)
                .map_err(|e| syntax(format!("{e} in the value of {}", printable_key(&key))))?;
            props.set(key, value);
        }
        Ok(props)
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.index.get(key).map(|&i| self.entries[i].1.as_str())
    }

    /// The stored key and its value, if `key` is set.
    pub fn get_key_value(&self, key: &str) -> Option<(&str, &str)> {
        self.index.get(key).map(|&i| {
            let (k, v) = &self.entries[i];
            (k.as_str(), v.as_str())
        })
    }

    /// Whether `key` is set (possibly to the empty string).
    pub fn contains_key(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    /// Sets `key` to `value`, returning the old value. A key already present keeps its position.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) -> Option<String> {
        let key = key.into();
        let value = value.into();
        match self.index.get(&key) {
            Some(&i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            None => {
                self.index.insert(key.clone(), self.entries.len());
                self.entries.push((key, value));
                None
            }
        }
    }

    /// Sets `key` only if it is not set yet (Java's `putIfAbsent`).
    pub fn set_if_absent(&mut self, key: &str, value: &str) {
        if !self.contains_key(key) {
            self.set(key, value);
        }
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let i = self.index.remove(key)?;
        let (_, value) = self.entries.remove(i);
        for slot in self.index.values_mut() {
            if *slot > i {
                *slot -= 1;
            }
        }
        Some(value)
    }

    /// Keys and values in the order the keys first appeared.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Keys in the order they first appeared.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_str())
    }

    /// How many keys are set.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key is set.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries whose key starts with `prefix`, with the prefix removed (Kafka's
    /// `Utils.entriesWithPrefix(map, prefix)`).
    ///
    /// ```
    /// use mm2_offsets::config::Properties;
    ///
    /// let props = Properties::parse("A.bootstrap.servers=a:9092\nB.bootstrap.servers=b:9092")?;
    /// assert_eq!(props.strip_prefix("A.").get("bootstrap.servers"), Some("a:9092"));
    /// # Ok::<(), mm2_offsets::config::ConfigError>(())
    /// ```
    pub fn strip_prefix(&self, prefix: &str) -> Properties {
        self.iter()
            .filter_map(|(k, v)| k.strip_prefix(prefix).map(|k| (k, v)))
            .collect()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Properties {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut props = Properties::new();
        props.extend(iter);
        props
    }
}

impl<K: Into<String>, V: Into<String>> Extend<(K, V)> for Properties {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.set(k, v);
        }
    }
}

impl fmt::Debug for Properties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (k, v) in self.iter() {
            if is_sensitive_key(k) {
                map.entry(&k, &format_args!("<redacted>"));
            } else {
                map.entry(&k, &v);
            }
        }
        map.finish()
    }
}

/// Whether the value of `key` may be a secret, and must never be printed: every key of the one
/// list of secret keys ([`keys::is_secret`](super::keys::is_secret), which `-X` refuses), and
/// besides them, to be safe when redacting, any key that names a password, JAAS, secret,
/// credential or token setting (file paths and endpoints included) and inline certificates.
/// Prefixed keys (`consumer.sasl.jaas.config`, `A.ssl.key.password`) count too.
///
/// ```
/// use mm2_offsets::config::is_sensitive_key;
///
/// assert!(is_sensitive_key("sasl.jaas.config"));
/// assert!(is_sensitive_key("A.ssl.keystore.key"));
/// assert!(!is_sensitive_key("bootstrap.servers"));
/// ```
pub fn is_sensitive_key(key: &str) -> bool {
    if super::keys::is_secret(key) {
        return true;
    }
    let key = key.to_ascii_lowercase();
    ["password", "jaas", "secret", "credential", "token"]
        .iter()
        .any(|word| key.contains(word))
        || key.ends_with(".key")
        || key.ends_with("keystore.certificate.chain")
        || key.ends_with("truststore.certificates")
}

/// A key quoted for a message: at most 80 characters, control characters escaped.
pub(crate) fn printable_key(key: &str) -> String {
    let mut out = String::from("`");
    for (i, c) in key.chars().enumerate() {
        if i == 80 {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out.push('`');
    out
}

/// UTF-8 if valid (without a byte-order mark), otherwise ISO-8859-1 like Java's
/// `Properties.load(InputStream)`.
fn decode_file(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.strip_prefix('\u{feff}').unwrap_or(text).to_string(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\x0c')
}

/// Java's `Properties.LineReader`: yields logical lines (continuations joined, comments and blank
/// lines dropped), escapes still in place.
struct LineReader<'a> {
    chars: &'a [char],
    pos: usize,
    /// The 1-based natural line `pos` is on.
    line: usize,
}

impl LineReader<'_> {
    fn next_char(&mut self) -> Option<char> {
        let c = *self.chars.get(self.pos)?;
        self.pos += 1;
        // "\r\n" is one line break: count it at the '\n'.
        if c == '\n' || (c == '\r' && self.chars.get(self.pos) != Some(&'\n')) {
            self.line += 1;
        }
        Some(c)
    }

    /// Reads the next logical line into `buf`; returns the natural line it starts on, or `None`
    /// at the end.
    fn read_line(&mut self, buf: &mut Vec<char>) -> Option<usize> {
        buf.clear();
        let mut skip_blank = true;
        let mut continued = false;
        let mut preceding_backslash = false;
        let mut start = self.line;
        loop {
            let Some(c) = self.next_char() else {
                if buf.is_empty() {
                    return None;
                }
                if preceding_backslash {
                    buf.pop();
                }
                return Some(start);
            };
            if skip_blank {
                if is_blank(c) || (!continued && (c == '\r' || c == '\n')) {
                    continue;
                }
                skip_blank = false;
                continued = false;
            }
            if buf.is_empty() {
                if c == '#' || c == '!' {
                    // A comment runs to the end of the natural line; it never continues.
                    while let Some(c) = self.next_char() {
                        if c == '\r' || c == '\n' {
                            break;
                        }
                    }
                    skip_blank = true;
                    continue;
                }
                if c != '\r' && c != '\n' {
                    start = self.line;
                }
            }
            if c != '\n' && c != '\r' {
                buf.push(c);
                preceding_backslash = c == '\\' && !preceding_backslash;
                continue;
            }
            // End of a natural line.
            if buf.is_empty() {
                skip_blank = true;
                continue;
            }
            if self.pos >= self.chars.len() {
                if preceding_backslash {
                    buf.pop();
                }
                return Some(start);
            }
            if !preceding_backslash {
                return Some(start);
            }
            // The backslash joins the next natural line, whose leading blanks are dropped.
            buf.pop();
            skip_blank = true;
            continued = true;
            preceding_backslash = false;
            if c == '\r' && self.chars.get(self.pos) == Some(&'\n') {
                self.next_char();
            }
        }
    }
}

/// Java's `Properties.load0`: where the key ends and the value starts.
fn split_key_value(line: &[char]) -> (&[char], &[char]) {
    let mut key_len = 0;
    let mut value_start = line.len();
    let mut has_separator = false;
    let mut preceding_backslash = false;
    while key_len < line.len() {
        let c = line[key_len];
        if (c == '=' || c == ':') && !preceding_backslash {
            value_start = key_len + 1;
            has_separator = true;
            break;
        } else if is_blank(c) && !preceding_backslash {
            value_start = key_len + 1;
            break;
        }
        preceding_backslash = c == '\\' && !preceding_backslash;
        key_len += 1;
    }
    while value_start < line.len() {
        let c = line[value_start];
        if !is_blank(c) {
            if !has_separator && (c == '=' || c == ':') {
                has_separator = true;
            } else {
                break;
            }
        }
        value_start += 1;
    }
    (&line[..key_len], &line[value_start..])
}

/// Java's `Properties.loadConvert`: resolves escapes. UTF-16 surrogate pairs written as two
/// `\uXXXX` escapes are joined; an unpaired surrogate becomes U+FFFD.
fn unescape(raw: &[char]) -> Result<String, &'static str> {
    let mut out = String::with_capacity(raw.len());
    let mut high_surrogate: Option<u16> = None;
    let mut i = 0;
    while i < raw.len() {
        let mut c = raw[i];
        i += 1;
        let mut unit = None;
        if c == '\\' {
            // A lone trailing backslash cannot reach here (the line reader drops it), but the
            // input is untrusted, so it is dropped rather than indexed past.
            let Some(&next) = raw.get(i) else { break };
            i += 1;
            c = match next {
                'u' => {
                    let digits = raw.get(i..i + 4).ok_or("malformed \\uXXXX escape")?;
                    let mut value: u16 = 0;
                    for d in digits {
                        let d = d.to_digit(16).ok_or("malformed \\uXXXX escape")?;
                        value = (value << 4) | d as u16;
                    }
                    i += 4;
                    unit = Some(value);
                    '\0'
                }
                't' => '\t',
                'r' => '\r',
                'n' => '\n',
                'f' => '\x0c',
                other => other,
            };
        }
        match unit {
            Some(u) if (0xd800..0xdc00).contains(&u) => {
                if high_surrogate.replace(u).is_some() {
                    out.push('\u{fffd}');
                }
            }
            Some(u) if (0xdc00..0xe000).contains(&u) => match high_surrogate.take() {
                Some(high) => {
                    let code =
                        0x10000 + ((u32::from(high) - 0xd800) << 10) + (u32::from(u) - 0xdc00);
                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                }
                None => out.push('\u{fffd}'),
            },
            other => {
                if high_surrogate.take().is_some() {
                    out.push('\u{fffd}');
                }
                match other {
                    Some(u) => out.push(char::from_u32(u32::from(u)).unwrap_or('\u{fffd}')),
                    None => out.push(c),
                }
            }
        }
    }
    if high_surrogate.is_some() {
        out.push('\u{fffd}');
    }
    Ok(out)
}

#[cfg(test)]
#[path = "properties_tests.rs"]
mod tests;
