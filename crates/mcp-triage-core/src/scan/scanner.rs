//! [`Scanner`]: JSON text of the common shape read token by token, without serde.
//!
//! Why: the bodies a gateway or proxy reads on every exchange are almost always plain: strings
//! without escapes, short integers, literals, objects and arrays of those. serde_json's visitor
//! machinery costs several thousand instructions for a 100-byte `tools/call`; a reader that
//! knows the members it wants can take them in a few hundred. The C ABI's request reader
//! (`mcp-triage-ffi`) and the proxy's request reader (`mcp-triage-proxy`, `message`) both
//! stand on this one scanner, so the token rules live here once.
//!
//! Every method returns `None` for anything outside the common shape (an escape, a control
//! character, a fraction, an exponent, `-0`, a leading zero, more than 18 digits, nesting
//! deeper than the scanner's limit, any syntax error). `None` means "read this body with
//! serde", never "invalid": the caller's serde path gives the verdict and the error message.

/// A position in JSON text of the common shape (see the module documentation).
pub struct Scanner<'a> {
    text: &'a str,
    pos: usize,
    max_depth: usize,
}

impl<'a> Scanner<'a> {
    /// A scanner at the start of `text`, giving up on values nested deeper than `max_depth`
    /// containers (see [`Scanner::skip`]).
    pub fn new(text: &'a str, max_depth: usize) -> Scanner<'a> {
        Scanner {
            text,
            pos: 0,
            max_depth,
        }
    }

    /// The next byte, if any.
    pub fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    /// Skips JSON's white space (what serde_json skips).
    pub fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// White space, then the end of the text: true when nothing else follows.
    pub fn at_end(&mut self) -> bool {
        self.ws();
        self.pos == self.text.len()
    }

    /// Takes `byte` when it is next.
    pub fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    /// A string without escapes or control characters, without its quotes.
    pub fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let bytes = self.text.as_bytes();
        let start = self.pos;
        self.pos += super::plain_len(bytes.get(start..)?);
        if *bytes.get(self.pos)? != b'"' {
            return None; // an escape or a control character: the serde path reads it
        }
        self.pos += 1;
        // `start` and `pos - 1` are next to ASCII quotes: char boundaries
        Some(&self.text[start..self.pos - 1])
    }

    /// An integer as [`super::short_integer`] takes it.
    pub fn integer(&mut self) -> Option<i64> {
        let (n, len) = super::short_integer(self.text.as_bytes().get(self.pos..)?)?;
        self.pos += len;
        Some(n)
    }

    /// Takes the literal `word` (`true`, `false`, `null`) when it is next.
    pub fn word(&mut self, word: &str) -> Option<()> {
        self.text[self.pos..]
            .starts_with(word)
            .then(|| self.pos += word.len())
    }

    /// An object; `member` reads each member's value (white space around it is skipped here).
    /// Names are handed over in order, repeats included: the caller decides which counts.
    pub fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
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
            if self.after_item(b'}')? {
                return Some(());
            }
        }
    }

    /// An array; `item` reads each element (white space around it is skipped here).
    pub fn array(&mut self, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        self.ws();
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            item(self)?;
            if self.after_item(b']')? {
                return Some(());
            }
        }
    }

    /// After a member or element: `,` (false: another follows) or `close` (true: the end).
    fn after_item(&mut self, close: u8) -> Option<bool> {
        self.ws();
        match self.peek()? {
            b',' => {
                self.pos += 1;
                self.ws();
                Some(false)
            }
            b if b == close => {
                self.pos += 1;
                Some(true)
            }
            _ => None,
        }
    }

    /// Any value of the common shape, read and dropped; `depth` is the number of containers
    /// around it (the value itself counts when it is one), checked against the limit.
    pub fn skip(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => {
                self.check_depth(depth)?;
                self.object(|s, _| s.skip(depth + 1))
            }
            b'[' => {
                self.check_depth(depth)?;
                self.array(|s| s.skip(depth + 1))
            }
            b't' => self.word("true"),
            b'f' => self.word("false"),
            b'n' => self.word("null"),
            _ => self.integer().map(drop),
        }
    }

    /// `None` when a container at `depth` is deeper than the limit.
    pub fn check_depth(&self, depth: usize) -> Option<()> {
        (depth <= self.max_depth).then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skips(text: &str, max_depth: usize) -> bool {
        let mut s = Scanner::new(text, max_depth);
        s.ws();
        s.skip(1).is_some() && s.at_end()
    }

    #[test]
    fn the_common_shape_is_read() {
        for text in [
            r#"{"a":1,"b":[true,false,null,-5,"x"],"c":{}}"#,
            " [ 1 , { \"k\" : [ ] } ]\n",
            r#""plain""#,
            "0",
            "-123456789012345678",
        ] {
            assert!(skips(text, 8), "{text}");
        }
    }

    #[test]
    fn anything_else_gives_up() {
        for text in [
            r#""esc\"aped""#,
            "\"tab\there\"",
            "1.5",
            "1e3",
            "-0",
            "01",
            "1234567890123456789",
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            "[1 2]",
            "tru",
            "nul",
            r#"{"a":1"#,
            "",
        ] {
            assert!(!skips(text, 8), "{text}");
        }
    }

    #[test]
    fn nesting_beyond_the_limit_gives_up() {
        assert!(skips("[[[1]]]", 3));
        assert!(!skips("[[[1]]]", 2));
        assert!(skips(r#"{"a":{"b":{}}}"#, 3));
        assert!(!skips(r#"{"a":{"b":{}}}"#, 2));
    }

    #[test]
    fn members_come_in_order_with_repeats() {
        let mut s = Scanner::new(r#"{"a":"1","b":2,"a":"3"}"#, 4);
        let mut seen = Vec::new();
        s.object(|s, key| {
            let value = if s.peek()? == b'"' {
                s.string()?.to_string()
            } else {
                s.integer()?.to_string()
            };
            seen.push(format!("{key}={value}"));
            Some(())
        })
        .unwrap();
        assert_eq!(seen, ["a=1", "b=2", "a=3"]);
        assert!(s.at_end());
    }

    #[test]
    fn text_after_the_value_is_seen() {
        let mut s = Scanner::new("{} x", 4);
        s.skip(1).unwrap();
        assert!(!s.at_end());
    }
}
