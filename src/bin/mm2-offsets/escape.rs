//! Untrusted strings on the terminal. Group ids, topics, metadata and aliases come from the
//! cluster's data; printed raw, an escape sequence in one could rewrite the operator's
//! terminal, and a line break could forge a line of output. Everything human-readable (tables,
//! listings, messages on stderr) goes through [`for_terminal`]; JSON and CSV have their own,
//! lossless quoting.

use std::borrow::Cow;

/// Whether `c` must not reach a terminal raw: C0 and C1 controls, DEL, and the Unicode
/// controls that reorder or hide text (bidi overrides and isolates, zero-width marks).
fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

/// `text` with every unsafe character written as a Rust-style escape (`\n`, `\u{1b}`), and `\`
/// doubled so an escape cannot be faked. Borrowed when nothing needs escaping.
pub fn for_terminal(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| unsafe_char(c) || c == '\\') {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c == '\\' || unsafe_char(c) {
            escaped.extend(c.escape_default());
        } else {
            escaped.push(c);
        }
    }
    Cow::Owned(escaped)
}

/// The number of characters [`for_terminal`] writes for `text`, without building it.
pub fn terminal_width(text: &str) -> usize {
    text.chars()
        .map(|c| {
            if c == '\\' || unsafe_char(c) {
                c.escape_default().count()
            } else {
                1
            }
        })
        .sum()
}

/// At most 100 characters of `text`, escaped, with `…` when cut: what a message quotes of a
/// value that may be huge.
pub fn shortened(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(100) {
        Some((end, _)) => Cow::Owned(format!("{}…", for_terminal(&text[..end]))),
        None => for_terminal(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_reordering_marks_are_escaped() {
        assert_eq!(for_terminal("app"), "app");
        assert_eq!(for_terminal("a\u{1b}[2Jb\nc"), "a\\u{1b}[2Jb\\nc");
        assert_eq!(for_terminal("x\u{202E}y"), "x\\u{202e}y");
        assert_eq!(for_terminal("a\\nb"), "a\\\\nb");
        assert_eq!(for_terminal("groupe-é"), "groupe-é");
        for text in ["a\u{1b}\u{9b}b", "\\", "plain", "x\u{2066}"] {
            assert_eq!(terminal_width(text), for_terminal(text).chars().count());
        }
    }

    #[test]
    fn long_values_are_cut() {
        let long = "x".repeat(100_000);
        assert_eq!(shortened(&long).chars().count(), 101);
    }
}
