//! How `--groups-file` is read: one group id per line, exactly as written.
//!
//! - The file must be UTF-8. A UTF-8 byte order mark at the start is dropped (it would
//!   otherwise become part of the first id and that group would silently not be found).
//! - Lines end at `\n`; one `\r` before it is dropped too (files written on Windows).
//! - Nothing else is trimmed: spaces inside, before or after an id are part of it.
//! - A line that is empty or only spaces and tabs is skipped.
//! - A line whose first character is `#` is a comment. An id that starts with `#` must be
//!   given with `--group`.

/// The largest groups file read: 64 MiB holds a million ids of 60 characters.
pub const MAX_BYTES: u64 = 64 << 20;

/// The group ids in the text of a groups file.
pub fn parse(text: &str) -> Vec<String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .filter(|line| !line.trim_matches([' ', '\t']).is_empty() && !line.starts_with('#'))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn ids_are_kept_as_written() {
        assert_eq!(
            parse("orders app\n  padded  \nlast"),
            ["orders app", "  padded  ", "last"]
        );
    }

    #[test]
    fn bom_crlf_blank_lines_and_comments() {
        assert_eq!(
            parse("\u{feff}first\r\n\r\n   \n# a comment\nsecond\r\n\t\nthird#not-a-comment\n"),
            ["first", "second", "third#not-a-comment"]
        );
    }

    #[test]
    fn a_lone_cr_inside_an_id_is_kept() {
        assert_eq!(parse("a\rb\n"), ["a\rb"]);
    }
}
