//! The common shape of a body, read without serde: objects, arrays, strings without escapes or
//! control characters, integers without fraction or exponent, `true`, `false`, `null`.
//!
//! Why: a gateway classifies every exchange, and serde_json's visitor machinery cost about
//! 40 instructions per byte of a small response (bench/nginx-module-overhead.sh). This reader
//! builds the same [`Node`] tree serde_json's path builds for such a body; anything outside that
//! shape (an escape, a fraction, `-0`, a long number, nesting deeper than the limit or than
//! [`MAX_FAST_DEPTH`], any syntax error) makes it give up with `None`, and the body is parsed by
//! serde_json as before, so its verdict and its error messages are exactly those of that path.

use std::borrow::Cow;

use super::node::{note_member, Node, Object, Parsed};

/// Deeper documents go to the serde path, which grows the stack on demand.
const MAX_FAST_DEPTH: usize = 64;

struct Reader<'a> {
    text: &'a str,
    pos: usize,
    max_depth: usize,
    deepest: usize,
}

/// The tree of `input` when it has the common shape, else `None` (see the module comment).
pub(crate) fn parse_common(input: &str, max_depth: usize) -> Option<Parsed<'_>> {
    let mut r = Reader {
        text: input,
        pos: 0,
        max_depth: max_depth.min(MAX_FAST_DEPTH),
        deepest: 0,
    };
    r.skip_ws();
    let (root, has_duplicate) = r.value(0)?;
    r.skip_ws();
    if r.pos != input.len() {
        return None;
    }
    Some(Parsed {
        root,
        depth: r.deepest,
        has_duplicate,
    })
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    /// JSON's white space (what serde_json skips).
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn literal(&mut self, word: &str, node: Node<'a>) -> Option<(Node<'a>, bool)> {
        if self.text.as_bytes()[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Some((node, false))
        } else {
            None
        }
    }

    /// A value at nesting `depth` (the containers around it) and whether a member name repeats
    /// within it.
    fn value(&mut self, depth: usize) -> Option<(Node<'a>, bool)> {
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => Some((Node::String(Cow::Borrowed(self.string()?)), false)),
            b't' => self.literal("true", Node::Bool(true)),
            b'f' => self.literal("false", Node::Bool(false)),
            b'n' => self.literal("null", Node::Null),
            _ => Some((self.integer()?, false)),
        }
    }

    /// A string without escapes or control characters (the input is UTF-8 already).
    fn string(&mut self) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        let start = self.pos + 1;
        let end = start + crate::scan::plain_len(bytes.get(start..)?);
        if *bytes.get(end)? != b'"' {
            return None; // an escape or a control character: the serde path reads it
        }
        self.pos = end + 1;
        Some(&self.text[start..end])
    }

    /// An integer as serde_json reads it: `UInt` when not negative, `Int` when negative; a
    /// fraction, an exponent, `-0`, a leading zero or more than 18 digits give up.
    fn integer(&mut self) -> Option<Node<'a>> {
        let (n, len) = crate::scan::short_integer(&self.text.as_bytes()[self.pos..])?;
        self.pos += len;
        Some(if n < 0 {
            Node::Int(n)
        } else {
            Node::UInt(n.unsigned_abs())
        })
    }

    fn enter(&mut self, depth: usize) -> Option<()> {
        if depth > self.max_depth {
            return None;
        }
        self.deepest = self.deepest.max(depth);
        self.pos += 1;
        self.skip_ws();
        Some(())
    }

    fn array(&mut self, depth: usize) -> Option<(Node<'a>, bool)> {
        self.enter(depth)?;
        let mut items = Vec::new();
        let mut dup = false;
        if self.peek()? == b']' {
            self.pos += 1;
            return Some((Node::Array(items), false));
        }
        loop {
            let (item, item_dup) = self.value(depth)?;
            dup |= item_dup;
            items.push(item);
            self.skip_ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.skip_ws();
                }
                b']' => {
                    self.pos += 1;
                    return Some((Node::Array(items), dup));
                }
                _ => return None,
            }
        }
    }

    fn object(&mut self, depth: usize) -> Option<(Node<'a>, bool)> {
        self.enter(depth)?;
        let mut obj = Object::default();
        let mut seen = None;
        if self.peek()? == b'}' {
            self.pos += 1;
            return Some((Node::Object(obj), false));
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            let key = Cow::Borrowed(self.string()?);
            self.skip_ws();
            if self.peek()? != b':' {
                return None;
            }
            self.pos += 1;
            self.skip_ws();
            let (value, value_dup) = self.value(depth)?;
            note_member(&mut obj, &mut seen, key, value, value_dup);
            self.skip_ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.skip_ws();
                }
                b'}' => {
                    self.pos += 1;
                    let dup = obj.has_duplicate_within;
                    return Some((Node::Object(obj), dup));
                }
                _ => return None,
            }
        }
    }
}
