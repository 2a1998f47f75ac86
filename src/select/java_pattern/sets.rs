//! Character sets with Java's meaning: the ASCII classes, and Java's case-insensitive matching
//! of single characters and ranges.
//!
//! Java compares characters under `CASE_INSENSITIVE` with rules that are not Unicode case
//! folding: ASCII-only folding by default, and `Character.toUpperCase`/`toLowerCase` round trips
//! with `UNICODE_CASE`. We build the exact set of characters each rule accepts. For
//! `UNICODE_CASE` this is only done for ASCII pattern characters, where the set is known for
//! every JDK (the four non-ASCII characters whose case mappings reach ASCII are listed below);
//! the parser refuses non-ASCII characters under `(?iu)`.

use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange};

/// A set of code points. Surrogates are left out: a group id is a valid string and never holds
/// one, so leaving them out changes no answer.
pub(super) fn range(lo: u32, hi: u32) -> ClassUnicode {
    let mut set = ClassUnicode::empty();
    add_range(&mut set, lo, hi);
    set
}

pub(super) fn add_range(set: &mut ClassUnicode, lo: u32, hi: u32) {
    let lo = if (0xD800..=0xDFFF).contains(&lo) {
        0xE000
    } else {
        lo
    };
    let hi = if (0xD800..=0xDFFF).contains(&hi) {
        0xD7FF
    } else {
        hi
    };
    // A range that starts above its end after clamping held only surrogates.
    if let (Some(a), Some(b)) = (char::from_u32(lo), char::from_u32(hi))
        && a <= b
    {
        set.union(&ClassUnicode::new([ClassUnicodeRange::new(a, b)]));
    }
}

fn of(chars: &[u32]) -> ClassUnicode {
    let mut set = ClassUnicode::empty();
    for &c in chars {
        add_range(&mut set, c, c);
    }
    set
}

pub(super) fn negate(mut set: ClassUnicode) -> ClassUnicode {
    set.negate();
    set
}

/// `\d` without `UNICODE_CHARACTER_CLASS`.
pub(super) fn ascii_digit() -> ClassUnicode {
    range(0x30, 0x39)
}

/// `\w` without `UNICODE_CHARACTER_CLASS`: `[a-zA-Z_0-9]`.
pub(super) fn ascii_word() -> ClassUnicode {
    let mut set = ascii_alnum();
    add_range(&mut set, 0x5F, 0x5F);
    set
}

/// `\s` and `\p{Space}`: space, `\t \n \x0B \f \r`.
pub(super) fn ascii_space() -> ClassUnicode {
    let mut set = range(0x09, 0x0D);
    add_range(&mut set, 0x20, 0x20);
    set
}

pub(super) fn ascii_lower() -> ClassUnicode {
    range(0x61, 0x7A)
}

pub(super) fn ascii_upper() -> ClassUnicode {
    range(0x41, 0x5A)
}

pub(super) fn ascii_alpha() -> ClassUnicode {
    let mut set = ascii_lower();
    set.union(&ascii_upper());
    set
}

pub(super) fn ascii_alnum() -> ClassUnicode {
    let mut set = ascii_alpha();
    set.union(&ascii_digit());
    set
}

/// `\p{Punct}`: the 32 ASCII punctuation characters.
pub(super) fn ascii_punct() -> ClassUnicode {
    let mut set = range(0x21, 0x2F);
    add_range(&mut set, 0x3A, 0x40);
    add_range(&mut set, 0x5B, 0x60);
    add_range(&mut set, 0x7B, 0x7E);
    set
}

pub(super) fn ascii_graph() -> ClassUnicode {
    range(0x21, 0x7E)
}

pub(super) fn ascii_cntrl() -> ClassUnicode {
    let mut set = range(0x00, 0x1F);
    add_range(&mut set, 0x7F, 0x7F);
    set
}

pub(super) fn ascii_xdigit() -> ClassUnicode {
    let mut set = ascii_digit();
    add_range(&mut set, 0x41, 0x46);
    add_range(&mut set, 0x61, 0x66);
    set
}

/// `\h`: Java's fixed list of horizontal whitespace.
pub(super) fn horizontal_space() -> ClassUnicode {
    let mut set = of(&[0x09, 0x20, 0xA0, 0x1680, 0x180E, 0x202F, 0x205F, 0x3000]);
    add_range(&mut set, 0x2000, 0x200A);
    set
}

/// `\v`: Java's vertical whitespace (since JDK 8; not the single `\x0B`).
pub(super) fn vertical_space() -> ClassUnicode {
    let mut set = range(0x0A, 0x0D);
    set.union(&of(&[0x85, 0x2028, 0x2029]));
    set
}

/// `.` without `DOTALL`: anything but Java's line terminators (only `\n` with `UNIX_LINES`).
pub(super) fn dot(unix_lines: bool) -> ClassUnicode {
    if unix_lines {
        negate(of(&[0x0A]))
    } else {
        negate(of(&[0x0A, 0x0D, 0x85, 0x2028, 0x2029]))
    }
}

/// Every character (`.` with `DOTALL`, `\p{all}`).
pub(super) fn all() -> ClassUnicode {
    range(0, 0x10FFFF)
}

fn ascii_swap_case(c: u32) -> u32 {
    match c {
        0x41..=0x5A => c + 0x20,
        0x61..=0x7A => c - 0x20,
        _ => c,
    }
}

/// Java's `CASE_INSENSITIVE` (ASCII-only) match of the pattern character `c`.
pub(super) fn ascii_case_insensitive(c: u32) -> ClassUnicode {
    of(&[c, ascii_swap_case(c)])
}

/// Java's `CASE_INSENSITIVE` range: in the range, or an ASCII character whose other case is.
pub(super) fn ascii_case_insensitive_range(lo: u32, hi: u32) -> ClassUnicode {
    let mut set = range(lo, hi);
    for c in 0..0x80 {
        let other = ascii_swap_case(c);
        if (lo..=hi).contains(&other) {
            add_range(&mut set, c, c);
        }
    }
    set
}

/// The characters that can reach ASCII through Java's `Character.toUpperCase` or
/// `toLowerCase`, as (character, toUpperCase, toLowerCase). Listed from a scan of every code
/// point with JDK 17 and JDK 25 (the same four): İ, ı, ſ and the Kelvin sign.
const NON_ASCII_TO_ASCII: [(u32, u32, u32); 4] = [
    (0x0130, 0x0130, 0x69),
    (0x0131, 0x49, 0x0131),
    (0x017F, 0x53, 0x017F),
    (0x212A, 0x212A, 0x6B),
];

/// `Character.toUpperCase` and `toLowerCase` for the characters that can matter when the
/// pattern side is ASCII: ASCII itself and [`NON_ASCII_TO_ASCII`].
fn unicode_cases() -> impl Iterator<Item = (u32, u32, u32)> {
    (0..0x80u32)
        .map(|c| {
            let upper = if (0x61..=0x7A).contains(&c) {
                c - 0x20
            } else {
                c
            };
            let lower = if (0x41..=0x5A).contains(&c) {
                c + 0x20
            } else {
                c
            };
            (c, upper, lower)
        })
        .chain(NON_ASCII_TO_ASCII)
}

fn java_lower(c: u32) -> u32 {
    unicode_cases()
        .find(|&(x, _, _)| x == c)
        .map_or(c, |(_, _, lower)| lower)
}

/// Java's `UNICODE_CASE` match of the ASCII pattern character `c`: `x` matches when
/// `toLowerCase(toUpperCase(x))` equals that of `c`.
pub(super) fn unicode_case_insensitive(c: u32) -> ClassUnicode {
    debug_assert!(c < 0x80);
    let key = java_lower(ascii_upper_of(c));
    let mut set = of(&[key]);
    for (x, upper, _) in unicode_cases() {
        if java_lower(upper) == key {
            add_range(&mut set, x, x);
        }
    }
    set
}

fn ascii_upper_of(c: u32) -> u32 {
    if (0x61..=0x7A).contains(&c) {
        c - 0x20
    } else {
        c
    }
}

/// Java's `UNICODE_CASE` range with ASCII ends: `x` in the range, or `toUpperCase(x)` is, or
/// `toLowerCase(toUpperCase(x))` is.
pub(super) fn unicode_case_insensitive_range(lo: u32, hi: u32) -> ClassUnicode {
    debug_assert!(hi < 0x80);
    let mut set = range(lo, hi);
    for (x, upper, _) in unicode_cases() {
        if (lo..=hi).contains(&upper) || (lo..=hi).contains(&java_lower(upper)) {
            add_range(&mut set, x, x);
        }
    }
    set
}

/// Java's `BitClass` with `CASE_INSENSITIVE`: an ASCII character in a class adds both cases.
pub(super) fn class_bit(c: u32, case_insensitive: bool) -> ClassUnicode {
    if case_insensitive && c < 0x80 {
        ascii_case_insensitive(c)
    } else {
        of(&[c])
    }
}
