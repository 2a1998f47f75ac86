//! Cases checked against JDK 17 by hand; the differential test in protocol-tests covers the
//! rest.

use super::{Construct, JavaPattern, RefusalKind};

fn m(pattern: &str, input: &str) -> bool {
    JavaPattern::new(pattern)
        .unwrap_or_else(|e| panic!("{pattern:?}: {e}"))
        .matches(input)
}

fn refused(pattern: &str) -> Construct {
    match JavaPattern::new(pattern).map(|_| ()).unwrap_err().kind {
        RefusalKind::Unsupported(c) => c,
        RefusalKind::Syntax(s) => panic!("{pattern:?}: syntax error {s}, expected a refusal"),
    }
}

fn syntax_error(pattern: &str) -> usize {
    match JavaPattern::new(pattern).map(|_| ()) {
        Err(e) if matches!(e.kind, RefusalKind::Syntax(_)) => e.position,
        other => panic!("{pattern:?}: {other:?}, expected a syntax error"),
    }
}

#[test]
fn whole_input_with_backtracking() {
    assert!(m("a|ab", "ab"));
    assert!(m("a|ab", "a"));
    assert!(!m("a|ab", "abc"));
    assert!(m("billing-.*", "billing-eu"));
    assert!(!m("billing-.*", "xbilling-eu"));
}

#[test]
fn pattern_is_parsed_on_its_own() {
    assert_eq!(syntax_error("app-000)|(.*"), 6);
    assert!(m("(?x) app - \\d+ # the app groups", "app-12"));
    assert!(!m("(?x) app - \\d+ # the app groups", "app-"));
}

#[test]
fn ascii_classes() {
    assert!(m(r"\w+", "a_Z9"));
    assert!(!m(r"\w", "é"));
    assert!(!m(r"\d", "٣"));
    assert!(!m(r"\s", "\u{a0}"));
    assert!(m(r"\s", "\u{b}"));
    assert!(m(r"\p{Alpha}\p{Punct}\p{Digit}", "a!1"));
    assert!(!m(r"\p{Alpha}", "é"));
    assert!(m(r"\P{Alnum}", "é"));
    assert!(m(r"\v", "\u{2028}"));
    assert!(!m(r"\v", "v"));
    assert!(m(r"\h", "\u{3000}"));
}

#[test]
fn case_folding() {
    assert!(m("(?i)k", "K"));
    assert!(!m("(?i)k", "\u{212a}"));
    assert!(m("(?iu)k", "\u{212a}"));
    assert!(m("(?iu)i", "\u{130}"));
    assert!(m("(?iu)i", "\u{131}"));
    assert!(m("(?iu)[a-z]", "\u{17f}"));
    assert!(!m("(?i)ß", "ẞ"));
    assert_eq!(refused("(?iu)ß"), Construct::UnicodeCaseNonAscii);
    assert!(m("a(?i)b", "aB"));
    assert!(!m("a(?i)b", "AB"));
    assert!(m("(a(?i)b)c", "aBc"));
    assert!(!m("(a(?i)b)c", "aBC"));
    assert!(m("(?i:a)b", "Ab"));
}

#[test]
fn quoting_and_escapes() {
    assert!(m(r"\Q.*\E", ".*"));
    assert!(!m(r"\Q.*\E", "ab"));
    assert!(m(r"\Qa\E-z", "a-z"));
    assert!(m(r"[\Qa\E-z]", "q"));
    assert!(m(r"\x41\u0042\x{43}\0104\cA", "ABCD\u{1}"));
    assert!(m(r"\t\n\r\f\a\e", "\t\n\r\u{c}\u{7}\u{1b}"));
}

#[test]
fn dot_and_anchors() {
    assert!(!m(".", "\n"));
    assert!(!m(".", "\u{85}"));
    assert!(m("(?s).", "\n"));
    assert!(m("(?d).", "\r"));
    assert!(m("^a$", "a"));
    assert!(!m("a$", "a\n"));
    assert_eq!(refused("a$\n"), Construct::DollarBeforeInput);
    assert!(m(r"a\z", "a"));
}

#[test]
fn classes() {
    assert!(m("[a-z&&[^aeiou]]+", "bcd"));
    assert!(!m("[a-z&&[^aeiou]]", "a"));
    assert!(m("[^a]", "b"));
    assert!(m("[]a]", "]"));
    assert!(m("[a-]", "-"));
    assert!(m(r"[\d-z]", "-"));
}

#[test]
fn refusals() {
    assert_eq!(refused("a(?=b)"), Construct::LookAround);
    assert_eq!(refused("(?<=a)b"), Construct::LookAround);
    assert_eq!(refused("(?>a)"), Construct::AtomicGroup);
    assert_eq!(refused("a{2}+"), Construct::Possessive);
    assert_eq!(refused("a*+"), Construct::Possessive);
    assert_eq!(refused(r"(a)\1"), Construct::BackReference);
    assert_eq!(refused(r"\bword\b"), Construct::WordBoundary);
    assert_eq!(refused(r"\p{L}"), Construct::UnicodeProperty);
    assert_eq!(refused(r"\p{IsAlphabetic}"), Construct::UnicodeProperty);
    assert_eq!(refused(r"(?U)\w"), Construct::UnicodeCharacterClass);
    assert_eq!(refused(r"\R"), Construct::LineBreak);
    assert_eq!(refused(r"\X"), Construct::Grapheme);
    assert_eq!(refused(r"(?m)^a"), Construct::MultilineCaret);
    let error = JavaPattern::new("ab(?=c)").map(|_| ()).unwrap_err();
    assert_eq!(error.position, 2);
}

#[test]
fn syntax_errors() {
    syntax_error("(");
    syntax_error("[a");
    syntax_error("*a");
    syntax_error("a{2");
    syntax_error("a{,2}");
    syntax_error(r"\");
    syntax_error("[b-a]");
}

proptest::proptest! {
    /// Any text made of Java's metacharacters, escapes and flag letters is accepted or refused,
    /// never a panic, and an accepted pattern answers for any id.
    #[test]
    fn any_pattern_parses_or_is_refused(
        pattern in r"([\\\[\]\(\)\{\}\?\*\+\|\^\$\.&#:<>=!\-,QEpPxuc0-9a-zA-Z é\n]|\(\?[imsdxuU\-]*[:\)]){0,24}",
        id in r"[a-zA-Z0-9 é\n\r\u{b}\u{2028}.-]{0,8}",
    ) {
        if let Ok(p) = JavaPattern::new(&pattern) {
            p.matches(&id);
        }
    }
}
