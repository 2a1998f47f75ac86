//! A parser for Java's `java.util.regex.Pattern` syntax.
//!
//! It reads the pattern the way `Pattern` does: the same cursor moves, the same places where
//! `COMMENTS` mode skips whitespace and `#` comments, the same literal runs that give up their
//! last character to a quantifier. That is what makes the accepted syntax, and the errors,
//! Java's. Constructs whose meaning we cannot reproduce exactly are refused where they appear.

use regex_syntax::hir::ClassUnicode;

use super::ast::Node;
use super::quote::Unquoted;
use super::refusal::{Construct, Refusal};
use super::sets;

const CASE_INSENSITIVE: u32 = 0x02;
const COMMENTS: u32 = 0x04;
const MULTILINE: u32 = 0x08;
const DOTALL: u32 = 0x20;
const UNICODE_CASE: u32 = 0x40;
const CANON_EQ: u32 = 0x80;
const UNIX_LINES: u32 = 0x01;
const UNICODE_CHARACTER_CLASS: u32 = 0x100;

/// Deeper nesting is refused rather than risking the stack.
const MAX_DEPTH: usize = 250;

const END: u32 = 0;

fn ch(c: char) -> u32 {
    u32::from(c)
}

fn is_ascii_space(c: u32) -> bool {
    matches!(c, 0x09..=0x0D | 0x20)
}

fn is_digit(c: u32) -> bool {
    (0x30..=0x39).contains(&c)
}

/// `value * 10 + digit`, within Java's `int` (a repetition count beyond is a syntax error).
fn with_digit(value: u32, digit: u32) -> Option<u32> {
    value
        .checked_mul(10)
        .and_then(|v| v.checked_add(digit - 0x30))
        .filter(|&v| v <= i32::MAX as u32)
}

fn hex_value(c: u32) -> Option<u32> {
    char::from_u32(c).and_then(|c| c.to_digit(16))
}

fn is_surrogate(c: u32) -> bool {
    (0xD800..=0xDFFF).contains(&c)
}

/// What an escape stands for.
enum Escape {
    Char(u32),
    /// A class such as `\d`; `None` when the caller asked only to skip it.
    Set(Option<ClassUnicode>),
    /// An assertion or another node (only outside classes).
    Node(Option<Node>),
}

pub(super) struct Parser<'a> {
    buf: Vec<u32>,
    origin: &'a [usize],
    len: usize,
    cursor: usize,
    flags: u32,
    depth: usize,
    group_names: Vec<Vec<u32>>,
}

impl<'a> Parser<'a> {
    pub(super) fn new(unquoted: &'a Unquoted) -> Self {
        let len = unquoted.chars.len();
        let mut buf = unquoted.chars.clone();
        // Java ends the pattern with two zeros; reads past them see more zeros here.
        buf.extend([END, END]);
        Parser {
            buf,
            origin: &unquoted.origin,
            len,
            cursor: 0,
            flags: 0,
            depth: 0,
            group_names: Vec::new(),
        }
    }

    pub(super) fn parse(mut self) -> Result<Node, Refusal> {
        let node = self.expr()?;
        if self.cursor != self.len {
            if self.peek() == ch(')') {
                return Err(self.syntax("unmatched closing ')'"));
            }
            return Err(self.syntax("unexpected character"));
        }
        Ok(node)
    }

    // ---- errors ----

    /// The position in the user's pattern of the buffer index `at`.
    fn position(&self, at: usize) -> usize {
        let at = at.min(self.len);
        if at < self.origin.len() {
            self.origin[at]
        } else {
            self.origin.last().map_or(0, |&p| p + 1)
        }
    }

    fn syntax(&self, what: &'static str) -> Refusal {
        Refusal::syntax(self.position(self.cursor.saturating_sub(1)), what)
    }

    fn refuse(&self, at: usize, construct: Construct) -> Refusal {
        Refusal::unsupported(self.position(at), construct)
    }

    // ---- the cursor, with Java's moves ----

    fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    fn at(&self, i: usize) -> u32 {
        self.buf.get(i).copied().unwrap_or(END)
    }

    fn is_line_separator(&self, c: u32) -> bool {
        if self.has(UNIX_LINES) {
            c == 0x0A
        } else {
            matches!(c, 0x0A | 0x0D | 0x85 | 0x2028 | 0x2029)
        }
    }

    fn peek(&mut self) -> u32 {
        let c = self.at(self.cursor);
        if self.has(COMMENTS) {
            self.peek_past_whitespace(c)
        } else {
            c
        }
    }

    fn read(&mut self) -> u32 {
        let c = self.at(self.cursor);
        self.cursor += 1;
        if self.has(COMMENTS) {
            self.read_past_whitespace(c)
        } else {
            c
        }
    }

    fn next(&mut self) -> u32 {
        self.cursor += 1;
        let c = self.at(self.cursor);
        if self.has(COMMENTS) {
            self.peek_past_whitespace(c)
        } else {
            c
        }
    }

    fn next_escaped(&mut self) -> u32 {
        self.cursor += 1;
        self.at(self.cursor)
    }

    /// The character after the next one; the cursor moves past both.
    fn skip(&mut self) -> u32 {
        let c = self.at(self.cursor + 1);
        self.cursor += 2;
        c
    }

    fn unread(&mut self) {
        self.cursor = self.cursor.saturating_sub(1);
    }

    fn peek_past_whitespace(&mut self, mut c: u32) -> u32 {
        while is_ascii_space(c) || c == ch('#') {
            while is_ascii_space(c) {
                self.cursor += 1;
                c = self.at(self.cursor);
            }
            if c == ch('#') {
                self.cursor += 1;
                c = self.at(self.cursor);
                while c != END && !self.is_line_separator(c) {
                    self.cursor += 1;
                    c = self.at(self.cursor);
                }
                if c == END && self.cursor > self.len {
                    self.cursor = self.len;
                    c = self.at(self.cursor);
                }
            }
        }
        c
    }

    fn read_past_whitespace(&mut self, mut c: u32) -> u32 {
        while is_ascii_space(c) || c == ch('#') {
            while is_ascii_space(c) {
                c = self.at(self.cursor);
                self.cursor += 1;
            }
            if c == ch('#') {
                c = self.at(self.cursor);
                self.cursor += 1;
                while c != END && !self.is_line_separator(c) {
                    c = self.at(self.cursor);
                    self.cursor += 1;
                }
                if c == END && self.cursor > self.len {
                    self.cursor = self.len;
                    c = self.at(self.cursor);
                    self.cursor += 1;
                }
            }
        }
        c
    }

    fn at_end(&self) -> bool {
        self.cursor >= self.len
    }

    // ---- structure ----

    fn expr(&mut self) -> Result<Node, Refusal> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.refuse(self.cursor, Construct::TooDeep));
        }
        let mut branches = Vec::new();
        loop {
            branches.push(self.sequence()?);
            if self.peek() != ch('|') {
                break;
            }
            self.next();
        }
        self.depth -= 1;
        Ok(if branches.len() == 1 {
            branches.pop().unwrap_or(Node::Empty)
        } else {
            Node::Alternation(branches)
        })
    }

    fn sequence(&mut self) -> Result<Node, Refusal> {
        let mut items = Vec::new();
        loop {
            let c = self.peek();
            let start = self.cursor;
            let node = match char::from_u32(c).unwrap_or('\0') {
                '(' => {
                    if let Some(group) = self.group()? {
                        items.push(group);
                    }
                    continue;
                }
                '[' => Node::Set(self.class(true)?),
                '\\' => {
                    let e = self.next_escaped();
                    if e == ch('p') || e == ch('P') {
                        Node::Set(self.property_after_p(e == ch('P'))?)
                    } else {
                        self.unread();
                        self.atom()?
                    }
                }
                '^' => {
                    self.next();
                    if self.has(MULTILINE) {
                        return Err(self.refuse(start, Construct::MultilineCaret));
                    }
                    Node::Start
                }
                '$' => {
                    self.next();
                    Node::Dollar {
                        position: self.position(start),
                    }
                }
                '.' => {
                    self.next();
                    if self.has(DOTALL) {
                        Node::Set(sets::all())
                    } else {
                        Node::Set(sets::dot(self.has(UNIX_LINES)))
                    }
                }
                '|' | ')' => break,
                '?' | '*' | '+' => {
                    self.next();
                    return Err(self.syntax("dangling meta character"));
                }
                '\0' if self.at_end() => break,
                _ => self.atom()?,
            };
            items.push(self.closure(node)?);
        }
        Ok(match items.len() {
            0 => Node::Empty,
            1 => items.pop().unwrap_or(Node::Empty),
            _ => Node::Concat(items),
        })
    }

    /// A run of literal characters, or one escape that is not a character.
    fn atom(&mut self) -> Result<Node, Refusal> {
        let mut chars: Vec<(u32, usize)> = Vec::new();
        let mut previous = 0;
        let mut c = self.peek();
        loop {
            match char::from_u32(c).unwrap_or('\0') {
                '*' | '+' | '?' | '{' => {
                    // The quantifier takes the last character; give it back.
                    if chars.len() > 1 {
                        self.cursor = previous;
                        chars.pop();
                    }
                    break;
                }
                '$' | '.' | '^' | '(' | '[' | '|' | ')' => break,
                '\\' => {
                    let e = self.next_escaped();
                    if e == ch('p') || e == ch('P') {
                        if !chars.is_empty() {
                            self.unread();
                            break;
                        }
                        return Ok(Node::Set(self.property_after_p(e == ch('P'))?));
                    }
                    self.unread();
                    previous = self.cursor;
                    match self.escape(false, chars.is_empty(), false)? {
                        Escape::Char(x) => {
                            chars.push((x, previous));
                            c = self.peek();
                            continue;
                        }
                        Escape::Set(Some(set)) if chars.is_empty() => return Ok(Node::Set(set)),
                        Escape::Node(Some(node)) if chars.is_empty() => return Ok(node),
                        _ => {
                            // Not a character: end the run here, it is read again next.
                            self.cursor = previous;
                            break;
                        }
                    }
                }
                '\0' if self.at_end() => break,
                _ => {
                    previous = self.cursor;
                    chars.push((c, previous));
                    c = self.next();
                    continue;
                }
            }
        }
        let nodes = chars
            .into_iter()
            .map(|(c, at)| self.literal(c, at).map(Node::Set))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(match nodes.len() {
            0 => Node::Empty,
            1 => nodes.into_iter().next().unwrap_or(Node::Empty),
            _ => Node::Concat(nodes),
        })
    }

    /// The set one literal character matches under the current flags (Java's `single`).
    fn literal(&self, c: u32, at: usize) -> Result<ClassUnicode, Refusal> {
        if is_surrogate(c) {
            // Java compares runs of literals by UTF-16 unit: two escaped halves match a pair.
            return Err(self.refuse(at, Construct::LoneSurrogate));
        }
        if self.has(CASE_INSENSITIVE) {
            if self.has(UNICODE_CASE) {
                if c >= 0x80 {
                    return Err(self.refuse(at, Construct::UnicodeCaseNonAscii));
                }
                return Ok(sets::unicode_case_insensitive(c));
            }
            return Ok(sets::ascii_case_insensitive(c));
        }
        Ok(sets::range(c, c))
    }

    fn closure(&mut self, node: Node) -> Result<Node, Refusal> {
        let c = self.peek();
        let start = self.cursor;
        let (min, max) = match char::from_u32(c).unwrap_or('\0') {
            '?' => (0, Some(1)),
            '*' => (0, None),
            '+' => (1, None),
            '{' => {
                let mut c = self.skip();
                if !is_digit(c) {
                    return Err(self.syntax("illegal repetition"));
                }
                let mut min: u32 = 0;
                let overflow_at = self.position(start);
                let overflow = || Refusal::syntax(overflow_at, "illegal repetition range");
                loop {
                    min = with_digit(min, c).ok_or_else(overflow)?;
                    c = self.read();
                    if !is_digit(c) {
                        break;
                    }
                }
                let max = if c == ch(',') {
                    c = self.read();
                    if c == ch('}') {
                        None
                    } else {
                        let mut max: u32 = 0;
                        while is_digit(c) {
                            max = with_digit(max, c).ok_or_else(overflow)?;
                            c = self.read();
                        }
                        Some(max)
                    }
                } else {
                    Some(min)
                };
                if c != ch('}') {
                    return Err(self.syntax("unclosed counted closure"));
                }
                if max.is_some_and(|max| max < min) {
                    return Err(self.syntax("illegal repetition range"));
                }
                self.unread();
                (min, max)
            }
            _ => return Ok(node),
        };
        // What follows the quantifier: `?` lazy, `+` possessive.
        let q = self.next();
        if q == ch('?') {
            self.next();
        } else if q == ch('+') {
            return Err(self.refuse(self.cursor, Construct::Possessive));
        }
        Ok(Node::Repeat {
            node: Box::new(node),
            min,
            max,
        })
    }

    /// `(` ... `)`; `None` for a flags-only group such as `(?i)`, whose flags stay in force
    /// until the end of the enclosing group.
    fn group(&mut self) -> Result<Option<Node>, Refusal> {
        let saved = self.flags;
        let start = self.cursor;
        let c = self.next();
        let inner = if c == ch('?') {
            let kind = self.skip();
            match char::from_u32(kind).unwrap_or('\0') {
                ':' => self.expr()?,
                '=' | '!' => return Err(self.refuse(start, Construct::LookAround)),
                '>' => return Err(self.refuse(start, Construct::AtomicGroup)),
                '<' => {
                    let c = self.read();
                    if c == ch('=') || c == ch('!') {
                        return Err(self.refuse(start, Construct::LookAround));
                    }
                    self.group_name(c)?;
                    self.expr()?
                }
                '$' | '@' => return Err(self.syntax("unknown group type")),
                _ => {
                    self.unread();
                    self.add_flags(start)?;
                    let c = self.read();
                    if c == ch(')') {
                        return Ok(None);
                    }
                    if c != ch(':') {
                        return Err(self.syntax("unknown inline modifier"));
                    }
                    self.expr()?
                }
            }
        } else {
            self.expr()?
        };
        let c = self.read();
        if c != ch(')') {
            return Err(self.syntax("unclosed group"));
        }
        self.flags = saved;
        self.closure(inner).map(Some)
    }

    fn group_name(&mut self, first: u32) -> Result<(), Refusal> {
        let is_alpha = |c: u32| char::from_u32(c).is_some_and(|c| c.is_ascii_alphabetic());
        let is_alnum = |c: u32| char::from_u32(c).is_some_and(|c| c.is_ascii_alphanumeric());
        if !is_alpha(first) {
            return Err(self.syntax("capturing group name does not start with a Latin letter"));
        }
        let mut name = vec![first];
        let mut c = self.read();
        while is_alnum(c) {
            name.push(c);
            c = self.read();
        }
        if c != ch('>') {
            return Err(self.syntax("named capturing group is missing trailing '>'"));
        }
        if self.group_names.contains(&name) {
            return Err(self.syntax("named capturing group is already defined"));
        }
        self.group_names.push(name);
        Ok(())
    }

    fn add_flags(&mut self, start: usize) -> Result<(), Refusal> {
        let mut c = self.peek();
        let mut adding = true;
        loop {
            let flag = match char::from_u32(c).unwrap_or('\0') {
                'i' => CASE_INSENSITIVE,
                'm' => MULTILINE,
                's' => DOTALL,
                'd' => UNIX_LINES,
                'u' => UNICODE_CASE,
                'c' => CANON_EQ,
                'x' => COMMENTS,
                'U' => UNICODE_CHARACTER_CLASS | UNICODE_CASE,
                '-' if adding => {
                    adding = false;
                    c = self.next();
                    continue;
                }
                _ => return Ok(()),
            };
            if adding {
                if flag == CANON_EQ {
                    return Err(self.refuse(start, Construct::CanonEq));
                }
                self.flags |= flag;
            } else {
                self.flags &= !flag;
            }
            c = self.next();
        }
    }

    // ---- escapes ----

    fn escape(&mut self, in_class: bool, create: bool, is_range: bool) -> Result<Escape, Refusal> {
        let start = self.cursor;
        let c = self.skip();
        let unicode_classes = self.has(UNICODE_CHARACTER_CLASS);
        let set = |s: ClassUnicode| Escape::Set(create.then_some(s));
        let outside = |this: &Self, construct: Construct| -> Result<Escape, Refusal> {
            if in_class {
                Err(this.syntax("illegal/unsupported escape sequence"))
            } else if create {
                Err(this.refuse(start, construct))
            } else {
                Ok(Escape::Node(None))
            }
        };
        Ok(match char::from_u32(c).unwrap_or('\0') {
            '0' => Escape::Char(self.octal()?),
            '1'..='9' => return outside(self, Construct::BackReference),
            'A' if !in_class => Escape::Node(create.then_some(Node::Start)),
            'z' if !in_class => Escape::Node(create.then_some(Node::End)),
            'Z' if !in_class => Escape::Node(create.then(|| Node::Dollar {
                position: self.position(start),
            })),
            'B' | 'b' => return outside(self, Construct::WordBoundary),
            'G' => return outside(self, Construct::LastMatchEnd),
            'R' => return outside(self, Construct::LineBreak),
            'X' => return outside(self, Construct::Grapheme),
            'k' => return outside(self, Construct::BackReference),
            'N' => return Err(self.refuse(start, Construct::NamedCharacter)),
            'd' | 'D' | 's' | 'S' | 'w' | 'W' if unicode_classes => {
                if create {
                    return Err(self.refuse(start, Construct::UnicodeCharacterClass));
                }
                Escape::Set(None)
            }
            'd' => set(sets::ascii_digit()),
            'D' => set(sets::negate(sets::ascii_digit())),
            's' => set(sets::ascii_space()),
            'S' => set(sets::negate(sets::ascii_space())),
            'w' => set(sets::ascii_word()),
            'W' => set(sets::negate(sets::ascii_word())),
            'h' => set(sets::horizontal_space()),
            'H' => set(sets::negate(sets::horizontal_space())),
            'v' if is_range => Escape::Char(0x0B),
            'v' => set(sets::vertical_space()),
            'V' => set(sets::negate(sets::vertical_space())),
            'a' => Escape::Char(0x07),
            'c' => {
                if self.cursor < self.len {
                    Escape::Char(self.read() ^ 64)
                } else {
                    return Err(self.syntax("illegal control escape sequence"));
                }
            }
            'e' => Escape::Char(0x1B),
            'f' => Escape::Char(0x0C),
            'n' => Escape::Char(0x0A),
            'r' => Escape::Char(0x0D),
            't' => Escape::Char(0x09),
            'u' => Escape::Char(self.unicode_escape()?),
            'x' => Escape::Char(self.hex_escape()?),
            '\0' if self.cursor > self.len => return Err(self.syntax("trailing backslash")),
            x if x.is_ascii_alphabetic() => {
                return Err(self.syntax("illegal/unsupported escape sequence"));
            }
            _ => Escape::Char(c),
        })
    }

    fn octal(&mut self) -> Result<u32, Refusal> {
        let is_octal = |c: u32| (0x30..=0x37).contains(&c);
        let n = self.read();
        if !is_octal(n) {
            return Err(self.syntax("illegal octal escape sequence"));
        }
        let m = self.read();
        if !is_octal(m) {
            self.unread();
            return Ok(n - 0x30);
        }
        let o = self.read();
        if is_octal(o) && n <= ch('3') {
            return Ok((n - 0x30) * 64 + (m - 0x30) * 8 + (o - 0x30));
        }
        self.unread();
        Ok((n - 0x30) * 8 + (m - 0x30))
    }

    fn hex_escape(&mut self) -> Result<u32, Refusal> {
        let n = self.read();
        if let Some(high) = hex_value(n) {
            if let Some(low) = hex_value(self.read()) {
                return Ok(high * 16 + low);
            }
        } else if n == ch('{') {
            let first = self.peek();
            if hex_value(first).is_some() {
                let mut value: u32 = 0;
                let mut c = self.read();
                while let Some(d) = hex_value(c) {
                    value = (value << 4) + d;
                    if value > 0x10FFFF {
                        return Err(self.syntax("hexadecimal codepoint is too big"));
                    }
                    c = self.read();
                }
                if c != ch('}') {
                    return Err(self.syntax("unclosed hexadecimal escape sequence"));
                }
                return Ok(value);
            }
        }
        Err(self.syntax("illegal hexadecimal escape sequence"))
    }

    fn four_hex(&mut self) -> Result<u32, Refusal> {
        let mut value = 0;
        for _ in 0..4 {
            let d = hex_value(self.read())
                .ok_or_else(|| self.syntax("illegal Unicode escape sequence"))?;
            value = value * 16 + d;
        }
        Ok(value)
    }

    fn unicode_escape(&mut self) -> Result<u32, Refusal> {
        let n = self.four_hex()?;
        if (0xD800..=0xDBFF).contains(&n) {
            let saved = self.cursor;
            if self.read() == ch('\\') && self.read() == ch('u') {
                let low = self.four_hex()?;
                if (0xDC00..=0xDFFF).contains(&low) {
                    return Ok(0x10000 + ((n - 0xD800) << 10) + (low - 0xDC00));
                }
            }
            self.cursor = saved;
        }
        Ok(n)
    }

    // ---- properties ----

    /// `\p` or `\P` was read (the cursor is on the `p`): the property that follows.
    fn property_after_p(&mut self, complement: bool) -> Result<ClassUnicode, Refusal> {
        let start = self.cursor.saturating_sub(1);
        let c = self.next();
        let one_letter = c != ch('{');
        if one_letter {
            self.unread();
        }
        let set = self.property(start, one_letter)?;
        Ok(if complement { sets::negate(set) } else { set })
    }

    fn property(&mut self, start: usize, one_letter: bool) -> Result<ClassUnicode, Refusal> {
        self.next();
        let name: Vec<u32> = if one_letter {
            let c = self.at(self.cursor);
            self.read();
            vec![c]
        } else {
            let first = self.cursor;
            // Java marks the end of the pattern with '}' so this loop ends.
            self.buf[self.len] = ch('}');
            while self.cursor <= self.len + 1 && self.read() != ch('}') {}
            self.buf[self.len] = END;
            let after = self.cursor;
            if after > self.len {
                return Err(self.syntax("unclosed character family"));
            }
            if first + 1 >= after {
                return Err(self.syntax("empty character family"));
            }
            self.buf[first..after - 1].to_vec()
        };
        let name: String = name.iter().filter_map(|&c| char::from_u32(c)).collect();
        let case_insensitive = self.has(CASE_INSENSITIVE);
        let unsupported = || self.refuse(start, Construct::UnicodeProperty);
        if name.contains('=') || name.starts_with("In") || name.starts_with("Is") {
            return Err(unsupported());
        }
        if self.has(UNICODE_CHARACTER_CLASS)
            && matches!(
                name.to_ascii_uppercase().as_str(),
                "ALPHA"
                    | "LOWER"
                    | "UPPER"
                    | "SPACE"
                    | "PUNCT"
                    | "XDIGIT"
                    | "ALNUM"
                    | "CNTRL"
                    | "DIGIT"
                    | "BLANK"
                    | "GRAPH"
                    | "PRINT"
            )
        {
            return Err(self.refuse(start, Construct::UnicodeCharacterClass));
        }
        Ok(match name.as_str() {
            "ASCII" => sets::range(0, 0x7F),
            "Alnum" => sets::ascii_alnum(),
            "Alpha" => sets::ascii_alpha(),
            "Blank" => {
                let mut s = sets::range(0x09, 0x09);
                sets::add_range(&mut s, 0x20, 0x20);
                s
            }
            "Cntrl" => sets::ascii_cntrl(),
            "Digit" => sets::ascii_digit(),
            "Graph" => sets::ascii_graph(),
            "Lower" if case_insensitive => sets::ascii_alpha(),
            "Lower" => sets::ascii_lower(),
            "Upper" if case_insensitive => sets::ascii_alpha(),
            "Upper" => sets::ascii_upper(),
            "Print" => sets::range(0x20, 0x7E),
            "Punct" => sets::ascii_punct(),
            "Space" => sets::ascii_space(),
            "XDigit" => sets::ascii_xdigit(),
            "L1" => sets::range(0, 0xFF),
            "all" => sets::all(),
            _ => return Err(unsupported()),
        })
    }

    // ---- character classes ----

    /// `[...]`, with Java's unions, `&&` intersections and nested classes. The cursor is on
    /// the `[`; with `consume` the closing `]` is consumed too.
    fn class(&mut self, consume: bool) -> Result<ClassUnicode, Refusal> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.refuse(self.cursor, Construct::TooDeep));
        }
        let mut prev: Option<ClassUnicode> = None;
        let mut curr: Option<ClassUnicode> = None;
        let mut bits = ClassUnicode::empty();
        let mut has_bits = false;
        let mut negated = false;
        let mut c = self.next();
        if c == ch('^') && self.at(self.cursor.wrapping_sub(1)) == ch('[') {
            c = self.next();
            negated = true;
        }
        let union = |a: Option<ClassUnicode>, b: &ClassUnicode| {
            let mut a = a.unwrap_or_else(ClassUnicode::empty);
            a.union(b);
            Some(a)
        };
        loop {
            match char::from_u32(c).unwrap_or('\0') {
                '[' => {
                    let nested = self.class(true)?;
                    prev = union(prev, &nested);
                    curr = Some(nested);
                    c = self.peek();
                    continue;
                }
                '&' => {
                    c = self.next();
                    if c == ch('&') {
                        c = self.next();
                        let mut right: Option<ClassUnicode> = None;
                        while c != ch(']') && c != ch('&') {
                            let part = if c == ch('[') {
                                self.class(true)?
                            } else {
                                self.unread();
                                self.class(false)?
                            };
                            right = union(right, &part);
                            c = self.peek();
                        }
                        if has_bits {
                            if prev.is_none() {
                                curr = Some(bits.clone());
                            }
                            prev = union(prev, &bits);
                            has_bits = false;
                        }
                        if right.is_some() {
                            curr = right.clone();
                        }
                        match (prev.take(), right) {
                            (None, None) => return Err(self.syntax("bad class syntax")),
                            (None, Some(right)) => prev = Some(right),
                            (Some(mut p), _) => {
                                let Some(cur) = curr.as_ref() else {
                                    return Err(self.syntax("bad intersection syntax"));
                                };
                                p.intersect(cur);
                                prev = Some(p);
                            }
                        }
                        continue;
                    }
                    // A single '&' is a literal.
                    self.unread();
                }
                '\0' if self.cursor >= self.len => {
                    return Err(self.syntax("unclosed character class"));
                }
                ']' if prev.is_some() || has_bits => {
                    if consume {
                        self.next();
                    }
                    let mut set = prev.unwrap_or_else(ClassUnicode::empty);
                    if has_bits {
                        set.union(&bits);
                    }
                    self.depth -= 1;
                    return Ok(if negated { sets::negate(set) } else { set });
                }
                _ => {}
            }
            match self.range(&mut bits)? {
                None => has_bits = true,
                Some(set) => {
                    prev = union(prev, &set);
                    curr = Some(set);
                }
            }
            c = self.peek();
        }
    }

    /// One member of a class: a character (added to `bits`, `None` returned), a range or a
    /// predefined class.
    fn range(&mut self, bits: &mut ClassUnicode) -> Result<Option<ClassUnicode>, Refusal> {
        let start = self.cursor;
        let mut c = self.peek();
        if c == ch('\\') {
            let e = self.next_escaped();
            if e == ch('p') || e == ch('P') {
                return self.property_after_p(e == ch('P')).map(Some);
            }
            let is_range = self.at(self.cursor + 1) == ch('-');
            self.unread();
            match self.escape(true, true, is_range)? {
                Escape::Char(x) => c = x,
                Escape::Set(Some(set)) => return Ok(Some(set)),
                Escape::Set(None) | Escape::Node(_) => {
                    return Err(self.syntax("illegal/unsupported escape sequence"));
                }
            }
        } else {
            self.next();
        }
        if self.peek() == ch('-') {
            let end = self.at(self.cursor + 1);
            if end != ch('[') && end != ch(']') {
                self.next();
                let m = self.peek();
                let m = if m == ch('\\') {
                    match self.escape(true, false, true)? {
                        Escape::Char(m) => Some(m),
                        _ => None,
                    }
                } else {
                    self.next();
                    Some(m)
                };
                let Some(m) = m.filter(|&m| m >= c) else {
                    return Err(self.syntax("illegal character range"));
                };
                return self.class_range(c, m, start).map(Some);
            }
        }
        self.class_char(c, start, bits)
    }

    fn class_range(&self, lo: u32, hi: u32, at: usize) -> Result<ClassUnicode, Refusal> {
        if !self.has(CASE_INSENSITIVE) {
            return Ok(sets::range(lo, hi));
        }
        if self.has(UNICODE_CASE) {
            if hi >= 0x80 {
                return Err(self.refuse(at, Construct::UnicodeCaseNonAscii));
            }
            return Ok(sets::unicode_case_insensitive_range(lo, hi));
        }
        Ok(sets::ascii_case_insensitive_range(lo, hi))
    }

    /// Java's `bitsOrSingle`: most characters go into the class's bit set, with both ASCII
    /// cases under `CASE_INSENSITIVE`; under `UNICODE_CASE` a few use the single-character rule.
    fn class_char(
        &self,
        c: u32,
        at: usize,
        bits: &mut ClassUnicode,
    ) -> Result<Option<ClassUnicode>, Refusal> {
        let case_insensitive = self.has(CASE_INSENSITIVE);
        let unicode_case = case_insensitive && self.has(UNICODE_CASE);
        if unicode_case && c >= 0x80 {
            return Err(self.refuse(at, Construct::UnicodeCaseNonAscii));
        }
        if unicode_case && b"IiSsKk".contains(&(c as u8)) {
            return Ok(Some(sets::unicode_case_insensitive(c)));
        }
        if c < 0x100 {
            bits.union(&sets::class_bit(c, case_insensitive));
            return Ok(None);
        }
        Ok(Some(sets::range(c, c)))
    }
}
