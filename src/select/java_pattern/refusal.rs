//! What a Java pattern can be refused for: Java's own syntax errors, and the constructs we refuse
//! because we cannot match them exactly as Java does.

/// A Java construct we refuse because we cannot match it exactly as Java does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Construct {
    /// `(?=`, `(?!`, `(?<=`, `(?<!`.
    LookAround,
    /// `(?>...)`.
    AtomicGroup,
    /// `*+`, `++`, `?+`, `{n,m}+`.
    Possessive,
    /// `\1`, `\k<name>`.
    BackReference,
    /// `\b`, `\B`: ASCII word characters since JDK 19, Unicode letters and digits before.
    WordBoundary,
    /// `\G`.
    LastMatchEnd,
    /// `\R`.
    LineBreak,
    /// `\X`.
    Grapheme,
    /// `\N{name}`.
    NamedCharacter,
    /// `\p{...}` other than the ASCII POSIX classes, `L1` and `all`.
    UnicodeProperty,
    /// `\w \d \s` and POSIX classes under `(?U)` (`UNICODE_CHARACTER_CLASS`).
    UnicodeCharacterClass,
    /// A non-ASCII character under `(?iu)`.
    UnicodeCaseNonAscii,
    /// `^` under `(?m)`.
    MultilineCaret,
    /// `$` or `\Z` with something after it that can consume a character.
    DollarBeforeInput,
    /// `(?c)`.
    CanonEq,
    /// An escaped half of a surrogate pair outside a class.
    LoneSurrogate,
    /// A NUL character in the pattern text.
    NulCharacter,
    /// Nesting deeper than we parse.
    TooDeep,
    /// A pattern whose automaton is larger than the engine's limit.
    TooLarge,
}

impl Construct {
    /// A short stable name, e.g. `look-around`.
    pub fn name(self) -> &'static str {
        match self {
            Construct::LookAround => "look-around",
            Construct::AtomicGroup => "atomic group",
            Construct::Possessive => "possessive quantifier",
            Construct::BackReference => "back-reference",
            Construct::WordBoundary => r"word boundary \b or \B",
            Construct::LastMatchEnd => r"\G",
            Construct::LineBreak => r"\R",
            Construct::Grapheme => r"\X",
            Construct::NamedCharacter => r"\N{...}",
            Construct::UnicodeProperty => r"Unicode or Java character property \p{...}",
            Construct::UnicodeCharacterClass => "Unicode character class under (?U)",
            Construct::UnicodeCaseNonAscii => "non-ASCII character under (?iu)",
            Construct::MultilineCaret => "^ under (?m)",
            Construct::DollarBeforeInput => r"$ or \Z before more input",
            Construct::CanonEq => "(?c) canonical equivalence",
            Construct::LoneSurrogate => "lone surrogate",
            Construct::NulCharacter => "NUL character",
            Construct::TooDeep => "nesting too deep",
            Construct::TooLarge => "pattern too large",
        }
    }

    fn why(self) -> &'static str {
        match self {
            Construct::WordBoundary => "its meaning differs between JDK versions",
            Construct::UnicodeProperty
            | Construct::UnicodeCharacterClass
            | Construct::UnicodeCaseNonAscii => "it follows the JDK's own Unicode tables",
            Construct::DollarBeforeInput => {
                "Java's $ also matches before a final line terminator; put it at the end"
            }
            Construct::TooDeep | Construct::TooLarge => "it is beyond our limits",
            _ => "it cannot be matched exactly as Java does",
        }
    }
}

/// Why a pattern was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefusalKind {
    /// Java rejects the pattern too (`PatternSyntaxException`).
    Syntax(&'static str),
    /// Java accepts it, we refuse it rather than select different ids.
    Unsupported(Construct),
}

/// What is wrong, and where (an index in characters into the pattern, from 0, as in Java's
/// `PatternSyntaxException.getIndex()`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refusal {
    /// Index of the construct, in characters from 0.
    pub position: usize,
    /// What is wrong.
    pub kind: RefusalKind,
}

impl Refusal {
    pub(super) fn syntax(position: usize, what: &'static str) -> Self {
        Refusal {
            position,
            kind: RefusalKind::Syntax(what),
        }
    }

    pub(super) fn unsupported(position: usize, construct: Construct) -> Self {
        Refusal {
            position,
            kind: RefusalKind::Unsupported(construct),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            RefusalKind::Syntax(what) => {
                write!(f, "{what} at index {} (Java rejects it too)", self.position)
            }
            RefusalKind::Unsupported(construct) => write!(
                f,
                "{} at index {} is not supported: {}",
                construct.name(),
                self.position,
                construct.why()
            ),
        }
    }
}
