//! Java `java.util.regex.Pattern` syntax and whole-input matching, for selecting group ids.
//!
//! Kafka's KIP-1239 selects groups with `Pattern.matcher(id).matches()`. A Java user's pattern
//! must select here exactly the ids it selects there, or be refused. [`JavaPattern`] parses
//! Java's syntax itself (`parser`), turns it into a `regex-syntax` `Hir` and wraps that in
//! start-of-input and end-of-input assertions; the `regex-automata` engine then finds a match
//! covering the whole id whenever one exists, as Java's backtracking `matches()` does
//! (`a|ab` matches `ab`). No pattern text is pasted together.
//!
//! Everything Java accepts is either supported exactly or refused with a [`Construct`]:
//! look-around, atomic groups, possessive quantifiers, back-references, `\b`/`\B` (whose
//! meaning changed in JDK 19), `\G`, `\R`, `\X`, `\N{..}`, Unicode properties and
//! `UNICODE_CHARACTER_CLASS` classes (they follow the JDK's Unicode version), non-ASCII
//! characters under `(?iu)`, `^` under `MULTILINE`, `$`/`\Z` followed by something that can
//! consume a character (Java's `$` also matches before a final line terminator), `CANON_EQ`.

mod ast;
mod parser;
mod quote;
mod refusal;
mod sets;

pub use refusal::{Construct, Refusal, RefusalKind};

use regex_automata::meta;
use regex_syntax::hir::{Hir, Look};

/// A Java regular expression that matches whole strings, as `Pattern.matches(regex, input)`.
///
/// ```
/// use mm2_offsets::select::JavaPattern;
///
/// let p = JavaPattern::new(r"a|ab").unwrap();
/// assert!(p.matches("ab"));
/// assert!(!JavaPattern::new(r"\w+").unwrap().matches("café"));
/// assert!(JavaPattern::new("app-000)|(.*").is_err());
/// ```
#[derive(Clone, Debug)]
pub struct JavaPattern {
    regex: meta::Regex,
}

impl JavaPattern {
    /// Parses `pattern` with Java's syntax; refuses what Java rejects and what we cannot match
    /// exactly as Java does.
    pub fn new(pattern: &str) -> Result<Self, Refusal> {
        if let Some(at) = pattern.chars().position(|c| c == '\0') {
            return Err(Refusal::unsupported(at, Construct::NulCharacter));
        }
        let unquoted = quote::remove_quotes(pattern);
        let node = parser::Parser::new(&unquoted).parse()?;
        let hir = node.into_hir(true)?;
        let whole = Hir::concat(vec![Hir::look(Look::Start), hir, Hir::look(Look::End)]);
        let regex = meta::Regex::builder()
            .build_from_hir(&whole)
            .map_err(|_| Refusal::unsupported(0, Construct::TooLarge))?;
        Ok(JavaPattern { regex })
    }

    /// Whether the whole of `input` matches (Java's `Pattern.matches`).
    pub fn matches(&self, input: &str) -> bool {
        self.regex.is_match(input)
    }
}

#[cfg(test)]
mod tests;
