//! An incremental JSON scanner that keeps a *compacted* copy of a large body.
//!
//! Why: a JSON body must be whole before the rules can read it, so a large `application/json`
//! answer was buffered up to `maxBodyBytes` (64 MiB by default) — the proxy held that much for
//! every huge answer, where an SSE stream of the same size costs a few KiB. The rules never read
//! more than the first few hundred characters of any string value (details are cut to at most
//! [`crate::verdict::MAX_MESSAGE_CHARS`]), and long strings are what make bodies huge (a text
//! block, an image's base64). So past a size the classifier feeds the body through this scanner,
//! which checks the whole body byte by byte exactly as the parser would (UTF-8, string escapes
//! and surrogates, number grammar, literals, structure, nesting depth) and copies it without
//! insignificant white space, each string *value* cut after [`KEEP_SOLID_CHARS`] characters that
//! are neither white space nor control characters. Member names are kept whole (duplicates are
//! findings) and numbers too. The copy parses to a tree on which every rule reaches the same
//! verdict as on the original: a cut string is still a string, still longer than any value a
//! rule compares it with, and starts with the same characters a detail shows.
//!
//! Two cases keep the whole body instead (the classifier does not use this scanner for them): an
//! output schema (validation reads every character of `structuredContent`), and an expected
//! request id that is itself a string of [`KEEP_SOLID_CHARS`] characters or more.
//!
//! A body the scanner refuses gets a sentence of its own naming line and column, in the words of
//! the parser's messages; which of several faults is reported follows the parser: invalid UTF-8
//! anywhere first, then the first syntax fault or nesting past the limit.

use super::ParseFailure;

/// Characters of a string value (not counting white space and control characters) kept in the
/// compacted copy. Twice the longest cut any detail makes, so every sanitised detail of a cut
/// string equals the one of the whole string.
pub(crate) const KEEP_SOLID_CHARS: usize = 1024;

/// Past this many bytes of compacted copy its buffer is reserved up to the body limit in one step
/// (see `RESERVE_TO_LIMIT_AFTER` in `classify.rs` for why doubling is avoided).
const RESERVE_AFTER: usize = 1 << 20;
const RESERVE_MAX: u64 = 1 << 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A value: the document's start, after `:`, after `,` in an array.
    Value,
    /// A value or `]`: just after `[`.
    ValueOrClose,
    /// A member name or `}`: just after `{`.
    KeyOrClose,
    /// A member name: after `,` in an object.
    Key,
    Colon,
    CommaOrClose,
    /// White space only, after the document's value.
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    /// After `\`.
    Backslash,
    /// Inside `\uXXXX`: digits read so far and their value; `low` when this escape must be the
    /// low half of a surrogate pair.
    Hex {
        digits: u8,
        value: u32,
        low: bool,
    },
    /// After a high surrogate's escape: `\` must follow.
    AfterHigh,
    /// After a high surrogate's escape and `\`: `u` must follow.
    AfterHighBackslash,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Number {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    E,
    ESign,
    Exp,
}

impl Number {
    fn is_complete(self) -> bool {
        matches!(
            self,
            Number::Zero | Number::Int | Number::Frac | Number::Exp
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    Between,
    String {
        key: bool,
        escape: Escape,
        solid: usize,
        cut: bool,
    },
    Number(Number),
    Literal {
        word: &'static [u8],
        at: usize,
    },
}

/// UTF-8 decoding state: bytes still needed, the allowed range of the next one, the code point
/// so far, and where the sequence began.
#[derive(Debug, Clone, Copy, Default)]
struct Utf8 {
    need: u8,
    lo: u8,
    hi: u8,
    cp: u32,
    start: u64,
}

/// What one UTF-8 byte did.
enum Utf8Step {
    /// A character is complete.
    Char(u32),
    /// More bytes are needed.
    More,
    /// Not UTF-8 at the sequence's start.
    Invalid(u64),
}

impl Utf8 {
    fn step(&mut self, b: u8, pos: u64) -> Utf8Step {
        if self.need == 0 {
            let (need, lo, hi, cp) = match b {
                0x00..=0x7F => return Utf8Step::Char(b as u32),
                0xC2..=0xDF => (1, 0x80, 0xBF, (b & 0x1F) as u32),
                0xE0 => (2, 0xA0, 0xBF, (b & 0x0F) as u32),
                0xE1..=0xEC | 0xEE..=0xEF => (2, 0x80, 0xBF, (b & 0x0F) as u32),
                0xED => (2, 0x80, 0x9F, (b & 0x0F) as u32),
                0xF0 => (3, 0x90, 0xBF, (b & 0x07) as u32),
                0xF1..=0xF3 => (3, 0x80, 0xBF, (b & 0x07) as u32),
                0xF4 => (3, 0x80, 0x8F, (b & 0x07) as u32),
                _ => return Utf8Step::Invalid(pos),
            };
            *self = Utf8 {
                need,
                lo,
                hi,
                cp,
                start: pos,
            };
            return Utf8Step::More;
        }
        if b < self.lo || b > self.hi {
            return Utf8Step::Invalid(self.start);
        }
        self.cp = (self.cp << 6) | (b & 0x3F) as u32;
        self.need -= 1;
        self.lo = 0x80;
        self.hi = 0xBF;
        if self.need == 0 {
            Utf8Step::Char(self.cp)
        } else {
            Utf8Step::More
        }
    }
}

/// Bytes a string may hold as they are, with no escape, UTF-8 sequence or fault to look at: the
/// scanner skips runs of them in a tight loop.
static PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0x20;
    while b < 0x80 {
        t[b] = b != b'"' as usize && b != b'\\' as usize;
        b += 1;
    }
    t
};

/// True for a character that `sanitize_line` always counts (not white space, not control).
fn is_solid(cp: u32) -> bool {
    char::from_u32(cp).is_some_and(|c| !c.is_whitespace() && !c.is_control())
}

/// The scanner. Feed it the body in chunks, then [`finish`](Compactor::finish).
#[derive(Debug)]
pub(crate) struct Compactor {
    out: Vec<u8>,
    max_depth: usize,
    limit: u64,
    /// Open containers, `b'{'` or `b'['`.
    stack: Vec<u8>,
    expect: Expect,
    lex: Lex,
    utf8: Utf8,
    /// Bytes seen.
    pos: u64,
    line: u64,
    line_start: u64,
    /// The first syntax fault or nesting past the limit; later bytes are only checked for UTF-8.
    failure: Option<ParseFailure>,
    /// Invalid UTF-8 was seen: the verdict is fixed, nothing more is read.
    utf8_failure: Option<ParseFailure>,
    first_bytes: Vec<u8>,
    only_white_space: bool,
}

/// What a failed scan says, with the facts the classifier's hints need.
#[derive(Debug)]
pub(crate) struct ScanFailure {
    pub failure: ParseFailure,
    pub starts_with_bom: bool,
    pub only_white_space: bool,
}

impl Compactor {
    /// A scanner for a body of at most `limit` bytes nested at most `max_depth` deep.
    pub(crate) fn new(max_depth: usize, limit: u64) -> Compactor {
        Compactor {
            out: Vec::new(),
            max_depth,
            limit,
            stack: Vec::new(),
            expect: Expect::Value,
            lex: Lex::Between,
            utf8: Utf8::default(),
            pos: 0,
            line: 1,
            line_start: 0,
            failure: None,
            utf8_failure: None,
            first_bytes: Vec::with_capacity(3),
            only_white_space: true,
        }
    }

    /// Bytes held by the compacted copy (for tests and memory accounting).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.out.capacity()
    }

    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        if self.utf8_failure.is_some() {
            return;
        }
        if self.first_bytes.len() < 3 {
            let n = (3 - self.first_bytes.len()).min(chunk.len());
            self.first_bytes.extend_from_slice(&chunk[..n]);
        }
        if self.failure.is_some() {
            self.feed_utf8_only(chunk);
            return;
        }
        let needed = self.out.len() + chunk.len();
        if needed > self.out.capacity() && needed > RESERVE_AFTER && self.limit <= RESERVE_MAX {
            let want = (self.limit as usize).max(needed);
            self.out.reserve_exact(want - self.out.len());
        }
        let mut i = 0;
        while i < chunk.len() {
            if self.failure.is_some() {
                self.feed_utf8_only(&chunk[i..]);
                return;
            }
            if self.utf8_failure.is_some() {
                return;
            }
            i += self.step(chunk, i);
        }
    }

    /// The compacted copy, or why the body is not one JSON value.
    pub(crate) fn finish(mut self) -> Result<Vec<u8>, ScanFailure> {
        if let Some(f) = self.utf8_failure.take() {
            return Err(self.failed(f));
        }
        if self.utf8.need > 0 {
            let f = utf8_failure(self.utf8.start);
            return Err(self.failed(f));
        }
        if let Some(f) = self.failure.take() {
            return Err(self.failed(f));
        }
        match self.lex {
            Lex::Number(n) if n.is_complete() => self.value_done(),
            Lex::Number(_) => {
                let f = self.syntax("EOF while parsing a value");
                return Err(self.failed(f));
            }
            Lex::String { .. } => {
                let f = self.syntax("EOF while parsing a string");
                return Err(self.failed(f));
            }
            Lex::Literal { .. } => {
                let f = self.syntax("EOF while parsing a value");
                return Err(self.failed(f));
            }
            Lex::Between => {}
        }
        if self.expect != Expect::End {
            let what = match self.stack.last() {
                Some(b'{') => "EOF while parsing an object",
                Some(_) => "EOF while parsing a list",
                None => "EOF while parsing a value",
            };
            let f = self.syntax(what);
            return Err(self.failed(f));
        }
        Ok(std::mem::take(&mut self.out))
    }

    fn failed(&self, failure: ParseFailure) -> ScanFailure {
        ScanFailure {
            failure,
            starts_with_bom: self.first_bytes.starts_with(b"\xEF\xBB\xBF"),
            only_white_space: self.only_white_space,
        }
    }

    /// A syntax fault at the current byte, in the parser's words.
    fn syntax(&self, what: &str) -> ParseFailure {
        let column = self.pos.saturating_sub(self.line_start);
        let text = if what == "trailing characters" {
            format!(
                "more data after the first JSON value (line {} column {}): a body is exactly one JSON value",
                self.line,
                column + 1
            )
        } else if what.starts_with("EOF while parsing") {
            format!(
                "{what} at line {} column {column}: the body ends before the JSON value does (truncated?)",
                self.line
            )
        } else {
            format!("{what} at line {} column {}", self.line, column + 1)
        };
        ParseFailure::Malformed(text)
    }

    fn fail(&mut self, what: &str) {
        self.failure = Some(self.syntax(what));
    }

    fn feed_utf8_only(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if let Utf8Step::Invalid(at) = self.utf8.step(b, self.pos) {
                self.utf8_failure = Some(utf8_failure(at));
                return;
            }
            self.pos += 1;
        }
    }

    /// Processes the byte at `chunk[i]` (and, inside a long string, the run of ordinary bytes
    /// after it). Returns how many bytes were consumed.
    fn step(&mut self, chunk: &[u8], i: usize) -> usize {
        let b = chunk[i];
        match self.lex {
            Lex::Between => {
                self.between(b);
                if self.failure.is_some() {
                    // The byte is checked again for UTF-8 by `feed_utf8_only`.
                    return 0;
                }
                self.pos += 1;
                1
            }
            Lex::Number(n) => {
                let next = match (n, b) {
                    (Number::Minus, b'0') => Some(Number::Zero),
                    (Number::Minus, b'1'..=b'9') => Some(Number::Int),
                    (Number::Int, b'0'..=b'9') => Some(Number::Int),
                    (Number::Zero | Number::Int, b'.') => Some(Number::Dot),
                    (Number::Zero | Number::Int | Number::Frac, b'e' | b'E') => Some(Number::E),
                    (Number::Dot | Number::Frac, b'0'..=b'9') => Some(Number::Frac),
                    (Number::E, b'+' | b'-') => Some(Number::ESign),
                    (Number::E | Number::ESign | Number::Exp, b'0'..=b'9') => Some(Number::Exp),
                    _ => None,
                };
                match next {
                    Some(n) => {
                        self.lex = Lex::Number(n);
                        self.out.push(b);
                        self.pos += 1;
                        1
                    }
                    None if n.is_complete() => {
                        // The number ended; this byte belongs to what follows.
                        self.lex = Lex::Between;
                        self.value_done();
                        0
                    }
                    None => {
                        self.fail("invalid number");
                        0
                    }
                }
            }
            Lex::Literal { word, at } => {
                if b != word[at] {
                    self.fail("expected ident");
                    return 0;
                }
                self.out.push(b);
                self.pos += 1;
                if at + 1 == word.len() {
                    self.lex = Lex::Between;
                    self.value_done();
                } else {
                    self.lex = Lex::Literal { word, at: at + 1 };
                }
                1
            }
            Lex::String { .. } => self.string(chunk, i),
        }
    }

    fn between(&mut self, b: u8) {
        if matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
            if b == b'\n' {
                self.line += 1;
                self.line_start = self.pos + 1;
            }
            return;
        }
        self.only_white_space = false;
        match self.expect {
            Expect::Value | Expect::ValueOrClose => match b {
                b'{' | b'[' => {
                    if self.stack.len() >= self.max_depth {
                        self.failure = Some(ParseFailure::TooDeep {
                            max: self.max_depth,
                        });
                        return;
                    }
                    self.stack.push(b);
                    self.out.push(b);
                    self.expect = if b == b'{' {
                        Expect::KeyOrClose
                    } else {
                        Expect::ValueOrClose
                    };
                }
                b'"' => self.open_string(false),
                b'-' => {
                    self.out.push(b);
                    self.lex = Lex::Number(Number::Minus);
                }
                b'0' => {
                    self.out.push(b);
                    self.lex = Lex::Number(Number::Zero);
                }
                b'1'..=b'9' => {
                    self.out.push(b);
                    self.lex = Lex::Number(Number::Int);
                }
                b't' | b'f' | b'n' => {
                    let word: &'static [u8] = match b {
                        b't' => b"true",
                        b'f' => b"false",
                        _ => b"null",
                    };
                    self.out.push(b);
                    self.lex = Lex::Literal { word, at: 1 };
                }
                b']' if self.expect == Expect::ValueOrClose => self.close(b),
                b']' if !self.stack.is_empty() => self.fail("trailing comma"),
                _ => self.fail("expected value"),
            },
            Expect::KeyOrClose | Expect::Key => match b {
                b'"' => self.open_string(true),
                b'}' if self.expect == Expect::KeyOrClose => self.close(b),
                b'}' => self.fail("trailing comma"),
                _ => self.fail("key must be a string"),
            },
            Expect::Colon => {
                if b == b':' {
                    self.out.push(b);
                    self.expect = Expect::Value;
                } else {
                    self.fail("expected `:`");
                }
            }
            Expect::CommaOrClose => {
                let open = *self.stack.last().expect("CommaOrClose inside a container");
                match (open, b) {
                    (b'[', b',') => {
                        self.out.push(b);
                        self.expect = Expect::Value;
                    }
                    (b'{', b',') => {
                        self.out.push(b);
                        self.expect = Expect::Key;
                    }
                    (b'[', b']') | (b'{', b'}') => self.close(b),
                    (b'[', _) => self.fail("expected `,` or `]`"),
                    _ => self.fail("expected `,` or `}`"),
                }
            }
            Expect::End => self.fail("trailing characters"),
        }
    }

    fn open_string(&mut self, key: bool) {
        self.out.push(b'"');
        self.lex = Lex::String {
            key,
            escape: Escape::None,
            solid: 0,
            cut: false,
        };
    }

    fn close(&mut self, b: u8) {
        self.stack.pop();
        self.out.push(b);
        self.value_done();
    }

    fn value_done(&mut self) {
        self.expect = if self.stack.is_empty() {
            Expect::End
        } else {
            Expect::CommaOrClose
        };
    }

    /// Bytes inside a string: one byte, or a run of ordinary ASCII.
    fn string(&mut self, chunk: &[u8], i: usize) -> usize {
        let Lex::String {
            key,
            mut escape,
            mut solid,
            mut cut,
        } = self.lex
        else {
            unreachable!("string() is called inside a string");
        };
        let b = chunk[i];
        let mut consumed = 1;
        if self.utf8.need > 0 || b >= 0x80 {
            match self.utf8.step(b, self.pos) {
                Utf8Step::Invalid(at) => {
                    self.utf8_failure = Some(utf8_failure(at));
                    return 1;
                }
                Utf8Step::More => {
                    if !cut {
                        self.out.push(b);
                    }
                }
                Utf8Step::Char(cp) => {
                    if !cut {
                        self.out.push(b);
                    }
                    if is_solid(cp) {
                        solid += 1;
                    }
                }
            }
        } else {
            match escape {
                Escape::None => match b {
                    b'"' => {
                        self.out.push(b'"');
                        self.pos += 1;
                        self.lex = Lex::Between;
                        if key {
                            self.expect = Expect::Colon;
                        } else {
                            self.value_done();
                        }
                        return 1;
                    }
                    b'\\' => {
                        escape = Escape::Backslash;
                        if !cut {
                            self.out.push(b);
                        }
                    }
                    0x00..=0x1F => {
                        self.fail(
                            "control character (\\u0000-\\u001F) found while parsing a string",
                        );
                        return 0;
                    }
                    _ => {
                        // A run of ordinary ASCII: copy (or skip) it at once.
                        let rest = &chunk[i..];
                        let mut run = 0;
                        while run < rest.len() && PLAIN[rest[run] as usize] {
                            run += 1;
                        }
                        let bytes = &chunk[i..i + run];
                        if !cut {
                            let room = KEEP_SOLID_CHARS.saturating_sub(solid);
                            // Copy at most as many bytes as could still be needed; the rest of
                            // the run is checked like any other byte on the next call.
                            let take = if key { run } else { run.min(room.max(1)) };
                            let taken = &bytes[..take];
                            self.out.extend_from_slice(taken);
                            solid += taken.iter().filter(|&&c| c != b' ' && c != 0x7F).count();
                            consumed = take;
                        } else {
                            consumed = run;
                        }
                    }
                },
                Escape::Backslash => {
                    if !cut {
                        self.out.push(b);
                    }
                    escape = match b {
                        b'"' | b'\\' | b'/' => {
                            solid += 1;
                            Escape::None
                        }
                        b'b' | b'f' | b'n' | b'r' | b't' => Escape::None,
                        b'u' => Escape::Hex {
                            digits: 0,
                            value: 0,
                            low: false,
                        },
                        _ => {
                            self.fail("invalid escape");
                            return 0;
                        }
                    };
                }
                Escape::Hex { digits, value, low } => {
                    let Some(d) = (b as char).to_digit(16) else {
                        self.fail("invalid escape");
                        return 0;
                    };
                    if !cut {
                        self.out.push(b);
                    }
                    let value = value * 16 + d;
                    escape = if digits < 3 {
                        Escape::Hex {
                            digits: digits + 1,
                            value,
                            low,
                        }
                    } else if low {
                        if !(0xDC00..=0xDFFF).contains(&value) {
                            self.fail("lone leading surrogate in hex escape");
                            return 0;
                        }
                        solid += 1;
                        Escape::None
                    } else if (0xD800..=0xDBFF).contains(&value) {
                        Escape::AfterHigh
                    } else if (0xDC00..=0xDFFF).contains(&value) {
                        self.fail("lone leading surrogate in hex escape");
                        return 0;
                    } else {
                        if is_solid(value) {
                            solid += 1;
                        }
                        Escape::None
                    };
                }
                Escape::AfterHigh => {
                    if b != b'\\' {
                        self.fail("unexpected end of hex escape");
                        return 0;
                    }
                    if !cut {
                        self.out.push(b);
                    }
                    escape = Escape::AfterHighBackslash;
                }
                Escape::AfterHighBackslash => {
                    if b != b'u' {
                        self.fail("unexpected end of hex escape");
                        return 0;
                    }
                    if !cut {
                        self.out.push(b);
                    }
                    escape = Escape::Hex {
                        digits: 0,
                        value: 0,
                        low: true,
                    };
                }
            }
        }
        self.pos += consumed as u64;
        // Cut a value string once enough of it is kept, at a character boundary.
        if !key
            && !cut
            && solid >= KEEP_SOLID_CHARS
            && escape == Escape::None
            && self.utf8.need == 0
        {
            cut = true;
        }
        self.lex = Lex::String {
            key,
            escape,
            solid,
            cut,
        };
        consumed
    }
}

fn utf8_failure(at: u64) -> ParseFailure {
    ParseFailure::Malformed(format!("invalid UTF-8 at byte {at} (JSON text is UTF-8)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn scan(body: &[u8], max_depth: usize, chunk: usize) -> Result<Vec<u8>, ScanFailure> {
        let mut c = Compactor::new(max_depth, u64::MAX);
        for part in body.chunks(chunk.max(1)) {
            c.feed(part);
        }
        c.finish()
    }

    #[test]
    fn small_documents_come_back_without_white_space() {
        let body = br#" { "a" : [ 1 , -2.5e+3 , true , null , "x\"y\u00e9" ] , "b" : { } } "#;
        for chunk in [1, 2, 3, 7, 1000] {
            let out = scan(body, 100, chunk).unwrap();
            assert_eq!(
                std::str::from_utf8(&out).unwrap(),
                r#"{"a":[1,-2.5e+3,true,null,"x\"y\u00e9"],"b":{}}"#
            );
        }
    }

    #[test]
    fn long_values_are_cut_keys_are_not() {
        let long = "x".repeat(5000);
        let body = format!(r#"{{"{long}":"{long}","t":"é{long}"}}"#);
        let out = scan(body.as_bytes(), 100, 977).unwrap();
        let parsed = parse(&out, 100).unwrap();
        let o = parsed.root.as_object().unwrap();
        assert_eq!(o.members[0].0.len(), 5000);
        assert_eq!(o.members[0].1.as_str().unwrap().len(), KEEP_SOLID_CHARS);
        assert!(o.members[1].1.as_str().unwrap().starts_with("éxxx"));
        assert!(out.len() < 8000);
    }

    #[test]
    fn faults_are_found_anywhere_in_a_long_string() {
        let long = "y".repeat(3000);
        for (body, what) in [
            (format!(r#"["{long}\q"]"#), "invalid escape"),
            (format!("[\"{long}\u{1}\"]"), "control character"),
            (
                format!(r#"["{long}\ud800x"]"#),
                "unexpected end of hex escape",
            ),
            (format!(r#"["{long}\udc00"]"#), "lone leading surrogate"),
            (
                format!(r#"["{long}\ud800\u0041"]"#),
                "lone leading surrogate",
            ),
            (format!(r#"["{long}"#), "EOF while parsing a string"),
            (format!(r#"["{long}" "#), "EOF while parsing a list"),
            (format!(r#"{{"{long}" 1}}"#), "expected `:`"),
            (format!(r#"["{long}",]"#), "trailing comma"),
            (
                format!(r#"["{long}"] x"#),
                "more data after the first JSON value",
            ),
            (format!(r#"[01,"{long}"]"#), "expected `,` or `]`"),
            (format!(r#"[1.,"{long}"]"#), "invalid number"),
            (format!(r#"[tru,"{long}"]"#), "expected ident"),
        ] {
            let Err(f) = scan(body.as_bytes(), 100, 64) else {
                panic!("accepted {what}");
            };
            let ParseFailure::Malformed(text) = f.failure else {
                panic!("{what}: {:?}", f.failure);
            };
            assert!(text.contains(what), "{what}: {text}");
            assert!(parse(body.as_bytes(), 100).is_err(), "{what}");
        }
    }

    #[test]
    fn invalid_utf8_wins_over_an_earlier_syntax_fault_as_in_the_parser() {
        let mut body = b"[1,,".to_vec();
        body.extend_from_slice(&[b'"', 0xC3, b'(', b'"', b']']);
        let f = scan(&body, 100, 3).unwrap_err();
        assert_eq!(
            f.failure,
            ParseFailure::Malformed("invalid UTF-8 at byte 5 (JSON text is UTF-8)".into())
        );
        assert_eq!(parse(&body, 100).err(), Some(f.failure));
        // An incomplete sequence at the end.
        let f = scan(b"\"\xE2\x82", 100, 1).unwrap_err();
        assert_eq!(
            f.failure,
            ParseFailure::Malformed("invalid UTF-8 at byte 1 (JSON text is UTF-8)".into())
        );
    }

    #[test]
    fn nesting_past_the_limit_is_too_deep() {
        let f = scan(b"[[[1]]]", 2, 1).unwrap_err();
        assert_eq!(f.failure, ParseFailure::TooDeep { max: 2 });
        assert!(scan(b"[[1]]", 2, 1).is_ok());
    }

    #[test]
    fn hints_see_the_first_bytes() {
        let f = scan(b"\xEF\xBB\xBF{}", 10, 1).unwrap_err();
        assert!(f.starts_with_bom);
        let f = scan(b"   \n  ", 10, 2).unwrap_err();
        assert!(f.only_white_space);
    }

    #[test]
    fn a_long_string_holds_little() {
        let mut c = Compactor::new(100, 64 << 20);
        c.feed(br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":""#);
        let block = vec![b'x'; 64 << 10];
        for _ in 0..256 {
            c.feed(&block);
        }
        c.feed(br#""}]}}"#);
        assert!(c.held() < 16 << 10, "{}", c.held());
        let out = c.finish().unwrap();
        assert!(parse(&out, 100).is_ok());
    }
}
