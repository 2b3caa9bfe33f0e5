//! The common shape of a request body read without serde: one object whose members are plain
//! strings (no escapes), integers, literals, and objects and arrays of those.
//!
//! Why: a gateway parses every request body, and serde_json's visitor machinery cost about 4,000
//! instructions for a 100-byte `tools/call` (bench/nginx-module-overhead.sh). This reader finds
//! the same four members [`crate::request`]'s serde path finds (the last of a repeated member
//! counts, as there); anything else (an escape, a fraction, `jsonrpc`, `method`, `name` or `id`
//! of another type, nesting deeper than [`MAX_DEPTH`], any syntax error, bytes that are not
//! UTF-8) makes it give up with `None`, and the body goes through serde as before.

/// Deeper arguments go to the serde path (which stops at 128 levels).
const MAX_DEPTH: usize = 32;

/// The id as written: an integer that fits 18 digits, or a string without escapes.
pub(crate) enum SkimmedId<'a> {
    Number(i64),
    String(&'a str),
}

/// The members of a request object that decide whether it is a `tools/call` call.
#[derive(Default)]
pub(crate) struct Skimmed<'a> {
    pub jsonrpc: Option<&'a str>,
    pub method: Option<&'a str>,
    pub id: Option<SkimmedId<'a>>,
    pub tool: Option<&'a str>,
}

struct Scanner<'a> {
    text: &'a str,
    pos: usize,
}

/// The members of `body` when it has the common shape, else `None` (see the module comment).
pub(crate) fn skim(body: &[u8]) -> Option<Skimmed<'_>> {
    let mut s = Scanner {
        text: std::str::from_utf8(body).ok()?,
        pos: 0,
    };
    let mut out = Skimmed::default();
    s.ws();
    s.object(|s, key| {
        match key {
            "jsonrpc" => out.jsonrpc = Some(s.string()?),
            "method" => out.method = Some(s.string()?),
            "id" => out.id = Some(s.id()?),
            "params" => out.tool = s.params()?,
            _ => s.skip(1)?,
        }
        Some(())
    })?;
    s.ws();
    (s.pos == s.text.len()).then_some(out)
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    /// A string without escapes or control characters.
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let bytes = self.text.as_bytes();
        let start = self.pos;
        self.pos += mcp_triage_core::scan::plain_len(bytes.get(start..)?);
        if *bytes.get(self.pos)? != b'"' {
            return None; // an escape or a control character: the serde path reads it
        }
        self.pos += 1;
        Some(&self.text[start..self.pos - 1])
    }

    /// An integer of at most 18 digits, no leading zero, not `-0`, no fraction or exponent.
    fn integer(&mut self) -> Option<i64> {
        let (n, len) = mcp_triage_core::scan::short_integer(self.text.as_bytes().get(self.pos..)?)?;
        self.pos += len;
        Some(n)
    }

    fn id(&mut self) -> Option<SkimmedId<'a>> {
        if self.peek()? == b'"' {
            self.string().map(SkimmedId::String)
        } else {
            self.integer().map(SkimmedId::Number)
        }
    }

    /// `params`: an object; its `name` (a string) is the tool.
    fn params(&mut self) -> Option<Option<&'a str>> {
        let mut name = None;
        self.object(|s, key| {
            if key == "name" {
                name = Some(s.string()?);
            } else {
                s.skip(2)?;
            }
            Some(())
        })?;
        Some(name)
    }

    /// An object; `member` reads each member's value (white space around it is skipped here).
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let key = self.string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            member(self, key)?;
            self.ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.ws();
                }
                b'}' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Any value of the common shape at nesting `depth`, read and dropped.
    fn skip(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|s, _| s.skip(depth + 1)),
            b'[' => {
                self.pos += 1;
                self.ws();
                if self.eat(b']').is_some() {
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    self.ws();
                    match self.peek()? {
                        b',' => {
                            self.pos += 1;
                            self.ws();
                        }
                        b']' => {
                            self.pos += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b't' => self.word("true"),
            b'f' => self.word("false"),
            b'n' => self.word("null"),
            _ => self.integer().map(drop),
        }
    }

    fn word(&mut self, word: &str) -> Option<()> {
        self.text[self.pos..]
            .starts_with(word)
            .then(|| self.pos += word.len())
    }
}
