//! `sasl.jaas.config`: Kafka's one-entry JAAS syntax,
//! `<LoginModuleClass> <controlFlag> (<option>=<value>)* ;`.
//!
//! Tokens follow `java.io.StreamTokenizer` as Kafka's `JaasConfig` sets it up: whitespace
//! separates; words are letters, digits, `.`, `-`, `_`, `$` and non-ASCII letters; values may be
//! quoted with `"` or `'`, with backslash escapes (`\n`, `\t`, octal `\101`, `\"`, …); `//` and
//! `/* */` start comments. A client entry must hold exactly one login module. One leniency: Java
//! reads an unquoted value starting with a digit as a number and rejects it; we take it as text.
//!
//! Errors name options but never echo anything else from the text, which may be a password in
//! the wrong place.
//!
//! # References
//! - Kafka: `clients/src/main/java/org/apache/kafka/common/security/JaasConfig.java`,
//!   `JaasContext.java`
//! - <https://docs.oracle.com/javase/8/docs/technotes/guides/security/jgss/tutorials/LoginConfigFile.html>

use super::Secret;
use std::fmt;

/// One parsed login-module entry. `Debug` hides option values.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct JaasEntry {
    pub(crate) login_module: String,
    pub(crate) options: Vec<(String, Secret)>,
}

impl JaasEntry {
    pub(crate) fn option(&self, name: &str) -> Option<&Secret> {
        self.options
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }
}

impl fmt::Debug for JaasEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.options.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("JaasEntry")
            .field("login_module", &self.login_module)
            .field("options", &names)
            .finish()
    }
}

#[derive(Debug, PartialEq)]
enum Token {
    /// A word or a quoted string.
    Text(String),
    /// Any other single character, such as `=` or `;`.
    Char(char),
}

struct Tokenizer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '$') || c >= '\u{a0}'
}

impl Tokenizer<'_> {
    fn skip_to_line_end(&mut self) {
        for c in self.chars.by_ref() {
            if c == '\n' || c == '\r' {
                break;
            }
        }
    }

    fn next_token(&mut self) -> Option<Token> {
        loop {
            let c = self.chars.next()?;
            if c <= ' ' {
                continue;
            }
            if c == '/' {
                match self.chars.peek() {
                    Some('*') => {
                        self.chars.next();
                        let mut previous = '\0';
                        for c in self.chars.by_ref() {
                            if previous == '*' && c == '/' {
                                break;
                            }
                            previous = c;
                        }
                    }
                    // `//`, and a lone `/` (StreamTokenizer's default comment character).
                    _ => self.skip_to_line_end(),
                }
                continue;
            }
            if c == '"' || c == '\'' {
                return Some(Token::Text(self.quoted(c)));
            }
            if is_word_char(c) {
                let mut word = String::from(c);
                while let Some(&c) = self.chars.peek() {
                    if !is_word_char(c) {
                        break;
                    }
                    word.push(c);
                    self.chars.next();
                }
                return Some(Token::Text(word));
            }
            return Some(Token::Char(c));
        }
    }

    /// A quoted string up to the closing quote, a line break or the end (as StreamTokenizer).
    fn quoted(&mut self, quote: char) -> String {
        let mut out = String::new();
        while let Some(c) = self.chars.next() {
            if c == quote || c == '\n' || c == '\r' {
                break;
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some(escaped) = self.chars.next() else {
                break;
            };
            let decoded = match escaped {
                'a' => '\x07',
                'b' => '\x08',
                'f' => '\x0c',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'v' => '\x0b',
                '0'..='7' => {
                    let mut value = escaped as u32 - '0' as u32;
                    // Up to three octal digits, the first of a three-digit escape at most 3.
                    let max_digits = if escaped <= '3' { 2 } else { 1 };
                    for _ in 0..max_digits {
                        match self.chars.peek() {
                            Some(&d @ '0'..='7') => {
                                value = value * 8 + (d as u32 - '0' as u32);
                                self.chars.next();
                            }
                            _ => break,
                        }
                    }
                    char::from_u32(value).unwrap_or('\u{fffd}')
                }
                other => other,
            };
            out.push(decoded);
        }
        out
    }
}

/// Why a JAAS configuration could not be parsed. Never contains an option's value.
pub(crate) type JaasError = String;

fn control_flag_is_valid(flag: &str) -> bool {
    ["required", "requisite", "sufficient", "optional"]
        .iter()
        .any(|f| flag.eq_ignore_ascii_case(f))
}

/// An option for an error message: named if it is one we know, since in a mangled entry the
/// token may be part of a password.
fn option_name(key: &str) -> String {
    if matches!(key, "username" | "password" | "tokenauth") {
        format!("option `{key}`")
    } else {
        "an option".to_string()
    }
}

/// Parses a `sasl.jaas.config` value holding exactly one login module.
pub(crate) fn parse(text: &str) -> Result<JaasEntry, JaasError> {
    let mut tokens = Tokenizer {
        chars: text.chars().peekable(),
    };
    let mut entries = Vec::new();
    while let Some(token) = tokens.next_token() {
        let Token::Text(login_module) = token else {
            return Err("expected a login module class name".into());
        };
        match tokens.next_token() {
            Some(Token::Text(flag)) if control_flag_is_valid(&flag) => {}
            Some(Token::Text(_)) => {
                return Err(
                    "invalid control flag after the login module: use required, \
                            requisite, sufficient or optional"
                        .into(),
                );
            }
            _ => return Err("no control flag after the login module (e.g. required)".into()),
        }
        let mut options = Vec::new();
        loop {
            let key = match tokens.next_token() {
                None => return Err("the entry does not end with a semicolon".into()),
                Some(Token::Char(';')) => break,
                Some(Token::Text(key)) => key,
                Some(Token::Char(_)) => {
                    return Err("unexpected character among the options (quote values that \
                                contain characters other than letters, digits, . - _ $)"
                        .into());
                }
            };
            if tokens.next_token() != Some(Token::Char('=')) {
                return Err(format!("{} has no `=value`", option_name(&key)));
            }
            match tokens.next_token() {
                Some(Token::Text(value)) => options.push((key, Secret::new(value))),
                _ => {
                    return Err(format!(
                        "{} has no value (quote values that contain characters other than \
                         letters, digits, . - _ $)",
                        option_name(&key)
                    ));
                }
            }
        }
        entries.push(JaasEntry {
            login_module,
            options,
        });
    }
    match entries.len() {
        1 => Ok(entries.remove(0)),
        0 => Err("no login module".into()),
        n => Err(format!("{n} login modules; a client uses exactly one")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";

    fn option<'a>(entry: &'a JaasEntry, name: &str) -> Option<&'a str> {
        entry.option(name).map(Secret::expose)
    }

    #[test]
    fn plain_entry_with_quoted_values() {
        let entry = parse(&format!(
            "{PLAIN} required username=\"alice\" password=\"p@ss w\\\"rd\";"
        ))
        .unwrap();
        assert_eq!(entry.login_module, PLAIN);
        assert_eq!(option(&entry, "username"), Some("alice"));
        assert_eq!(option(&entry, "password"), Some("p@ss w\"rd"));
    }

    #[test]
    fn unquoted_values_single_quotes_comments_and_line_breaks() {
        let entry = parse(
            "org.apache.kafka.common.security.scram.ScramLoginModule REQUIRED\n  \
             // a comment\n  username=bob_1.x /* another */ password='s3cr\\101t';",
        )
        .unwrap();
        assert_eq!(option(&entry, "username"), Some("bob_1.x"));
        assert_eq!(option(&entry, "password"), Some("s3crAt"));
    }

    #[test]
    fn escapes_in_quoted_values() {
        let entry = parse(&format!(
            "{PLAIN} required password=\"a\\tb\\\\c\\nd\\0e\";"
        ))
        .unwrap();
        assert_eq!(option(&entry, "password"), Some("a\tb\\c\nd\0e"));
    }

    #[test]
    fn errors_name_the_problem_but_not_the_value() {
        let cases = [
            (
                format!("{PLAIN} required password=\"hunter2\""),
                "semicolon",
            ),
            (format!("{PLAIN} password=\"hunter2\";"), "control flag"),
            (format!("{PLAIN};"), "control flag"),
            (
                format!("{PLAIN} required password \"hunter2\";"),
                "`password`",
            ),
            (
                format!("{PLAIN} required password=;"),
                "`password` has no value",
            ),
            (
                format!("{PLAIN} required username=a@hunter2;"),
                "unexpected character",
            ),
            (
                format!("{PLAIN} required; {PLAIN} required;"),
                "2 login modules",
            ),
            (String::new(), "no login module"),
        ];
        for (text, expected) in cases {
            let err = parse(&text).unwrap_err();
            assert!(err.contains(expected), "{text:?}: {err}");
            assert!(!err.contains("hunter2"), "{text:?}: {err}");
        }
    }

    #[test]
    fn debug_hides_values() {
        let entry = parse(&format!("{PLAIN} required password=\"hunter2\";")).unwrap();
        let debug = format!("{entry:?}");
        assert!(
            debug.contains("password") && !debug.contains("hunter2"),
            "{debug}"
        );
    }
}
