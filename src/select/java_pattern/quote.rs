//! Java's `\Q...\E` removal, done before parsing exactly as `Pattern` does it.
//!
//! Java rewrites the pattern first: inside a quote, ASCII punctuation and spaces get a backslash,
//! letters and non-ASCII characters stay as they are, and the first character of a quote, if a
//! digit, becomes `\x3N` so that it cannot extend an escape before the quote. Doing the same
//! rewrite keeps the odd cases identical (`[\Qa\E-z]` is the range `a-z` in Java too).

/// The rewritten pattern as code points, and for each one the index (in characters) of the
/// user's pattern it came from, for error messages.
pub(super) struct Unquoted {
    pub(super) chars: Vec<u32>,
    pub(super) origin: Vec<usize>,
}

pub(super) fn remove_quotes(pattern: &str) -> Unquoted {
    let input: Vec<u32> = pattern.chars().map(u32::from).collect();
    let mut out = Unquoted {
        chars: Vec::with_capacity(input.len()),
        origin: Vec::with_capacity(input.len()),
    };
    let push = |c: u32, at: usize, out: &mut Unquoted| {
        out.chars.push(c);
        out.origin.push(at);
    };
    let backslash = u32::from('\\');
    let mut i = 0;
    let mut in_quote = false;
    let mut begin_quote = false;
    while i < input.len() {
        let c = input[i];
        let at = i;
        i += 1;
        if !in_quote {
            if c == backslash && input.get(i) == Some(&u32::from('Q')) {
                i += 1;
                in_quote = true;
                begin_quote = true;
                continue;
            }
            push(c, at, &mut out);
            if c == backslash && i < input.len() {
                // The escaped character is copied as is, so `\\Q` stays a backslash and a Q.
                push(input[i], i, &mut out);
                i += 1;
            }
        } else if c == backslash {
            if input.get(i) == Some(&u32::from('E')) {
                i += 1;
                in_quote = false;
            } else {
                push(backslash, at, &mut out);
                push(backslash, at, &mut out);
            }
        } else if c >= 0x80 || char::from_u32(c).is_some_and(|c| c.is_ascii_alphabetic()) {
            push(c, at, &mut out);
        } else if char::from_u32(c).is_some_and(|c| c.is_ascii_digit()) {
            if begin_quote {
                for p in ['\\', 'x', '3'] {
                    push(u32::from(p), at, &mut out);
                }
            }
            push(c, at, &mut out);
        } else {
            push(backslash, at, &mut out);
            push(c, at, &mut out);
        }
        begin_quote = false;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(u: &Unquoted) -> String {
        u.chars
            .iter()
            .map(|&c| char::from_u32(c).unwrap())
            .collect()
    }

    #[test]
    fn quotes_become_escapes_as_in_java() {
        assert_eq!(text(&remove_quotes(r"a\Q.*\Eb")), r"a\.\*b");
        assert_eq!(text(&remove_quotes(r"\Q1a\E")), r"\x31a");
        assert_eq!(text(&remove_quotes(r"\Qa\b")), r"a\\b");
        assert_eq!(text(&remove_quotes(r"\\Q.")), r"\\Q.");
        assert_eq!(text(&remove_quotes(r"\Qé \E")), "é\\ ");
    }
}
