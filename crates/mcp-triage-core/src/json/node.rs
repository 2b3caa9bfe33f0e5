use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// Stack the parser keeps free before it recurses one level deeper, and the size of each new
/// segment when it has to grow. Deep documents cost one heap segment per ~1,000 levels.
const RED_ZONE: usize = 128 * 1024;
const STACK_SEGMENT: usize = 2 * 1024 * 1024;

/// A parsed JSON value. Strings borrow from the input when they contain no escapes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node<'a> {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    /// A number beyond the range of an f64 (`1e400`, a 100,000-digit integer), as written.
    /// RFC 8259 §6 makes it valid JSON; it is kept opaque: it has a sign and a kind, and it
    /// equals no request id or error code (see `tests/golden/DECISIONS.md`, 17).
    BigNumber(Cow<'a, str>),
    String(Cow<'a, str>),
    Array(Vec<Node<'a>>),
    Object(Object<'a>),
}

/// A JSON object in member order, with the index of its first repeated member name, if any.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Object<'a> {
    pub members: Vec<(Cow<'a, str>, Node<'a>)>,
    /// Index into `members` of the first member whose name repeats an earlier one.
    pub duplicate: Option<usize>,
    /// True when this object or anything nested in it has a duplicate member name.
    pub has_duplicate_within: bool,
}

/// The kind of a JSON value, for messages ("is an array, must be an object").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonKind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl fmt::Display for JsonKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            JsonKind::Null => "null",
            JsonKind::Bool => "a boolean",
            JsonKind::Number => "a number",
            JsonKind::String => "a string",
            JsonKind::Array => "an array",
            JsonKind::Object => "an object",
        })
    }
}

impl<'a> Node<'a> {
    pub fn kind(&self) -> JsonKind {
        match self {
            Node::Null => JsonKind::Null,
            Node::Bool(_) => JsonKind::Bool,
            Node::Int(_) | Node::UInt(_) | Node::Float(_) | Node::BigNumber(_) => JsonKind::Number,
            Node::String(_) => JsonKind::String,
            Node::Array(_) => JsonKind::Array,
            Node::Object(_) => JsonKind::Object,
        }
    }

    pub fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Node::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::String(s) => Some(s),
            _ => None,
        }
    }

    /// The JSON pointer (below `base`) of the first repeated member name inside this value.
    pub fn first_duplicate_pointer(&self, base: &str) -> Option<String> {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || match self {
            Node::Object(o) if o.has_duplicate_within => {
                if let Some(i) = o.duplicate {
                    return Some(format!("{base}/{}", escape_pointer(&o.members[i].0)));
                }
                o.members.iter().find_map(|(k, v)| {
                    v.first_duplicate_pointer(&format!("{base}/{}", escape_pointer(k)))
                })
            }
            Node::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, v)| v.first_duplicate_pointer(&format!("{base}/{i}"))),
            _ => None,
        })
    }

    /// Converts to a `serde_json::Value` (for JSON Schema validation). A [`Node::BigNumber`]
    /// becomes the largest finite f64 of its sign: still a number (and an integer), and beyond
    /// every finite bound a schema can state except `±f64::MAX` itself.
    pub fn to_value(&self) -> serde_json::Value {
        use serde_json::Value;
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Int(i) => Value::from(*i),
            Node::UInt(u) => Value::from(*u),
            Node::Float(f) => serde_json::Number::from_f64(*f)
                .map(Value::Number)
                .unwrap_or(Value::Null),
            Node::BigNumber(text) => Value::from(if text.starts_with('-') {
                f64::MIN
            } else {
                f64::MAX
            }),
            Node::String(s) => Value::String(s.to_string()),
            Node::Array(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Object(o) => o.to_value(),
        })
    }

    /// An integer value, accepting an integral float (`1.0`) and saying so. `None` for a
    /// [`Node::BigNumber`]: no i64 holds it.
    pub fn as_integer(&self) -> Option<(i64, bool)> {
        match self {
            Node::Int(i) => Some((*i, false)),
            Node::UInt(u) => i64::try_from(*u).ok().map(|i| (i, false)),
            Node::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some((*f as i64, true)),
            _ => None,
        }
    }

    /// The same tree owning all its text (used when the parsed text was a temporary copy).
    fn into_owned(self) -> Node<'static> {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || match self {
            Node::Null => Node::Null,
            Node::Bool(b) => Node::Bool(b),
            Node::Int(i) => Node::Int(i),
            Node::UInt(u) => Node::UInt(u),
            Node::Float(f) => Node::Float(f),
            Node::BigNumber(t) => Node::BigNumber(Cow::Owned(t.into_owned())),
            Node::String(s) => Node::String(Cow::Owned(s.into_owned())),
            Node::Array(items) => Node::Array(items.into_iter().map(Node::into_owned).collect()),
            Node::Object(o) => Node::Object(Object {
                members: o
                    .members
                    .into_iter()
                    .map(|(k, v)| (Cow::Owned(k.into_owned()), v.into_owned()))
                    .collect(),
                duplicate: o.duplicate,
                has_duplicate_within: o.has_duplicate_within,
            }),
        })
    }
}

impl<'a> Object<'a> {
    /// The first member with this name.
    pub fn get(&self, name: &str) -> Option<&Node<'a>> {
        self.members
            .iter()
            .find(|(k, _)| k.as_ref() == name)
            .map(|(_, v)| v)
    }

    /// Every member with this name, in order (more than one only in an object with duplicates).
    pub fn get_all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s Node<'a>> + 's {
        self.members
            .iter()
            .filter(move |(k, _)| k.as_ref() == name)
            .map(|(_, v)| v)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn duplicate_name(&self) -> Option<&str> {
        self.duplicate.map(|i| self.members[i].0.as_ref())
    }

    /// Converts to a `serde_json::Value` object, as [`Node::to_value`] does: a repeated member
    /// name keeps its last value, as `serde_json::from_slice` would.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.members
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_value()))
                .collect(),
        )
    }
}

/// A `serde_json::Value` the classifier holds for its caller, dropped without recursion if the
/// caller never takes it (its own `Drop` recurses once per level, and a kept body may nest as
/// deep as `maxDepth`).
#[derive(Debug, Default)]
pub(crate) struct HeldValue(pub Option<serde_json::Value>);

impl HeldValue {
    pub fn take(&mut self) -> Option<serde_json::Value> {
        self.0.take()
    }
}

impl Drop for HeldValue {
    fn drop(&mut self) {
        if let Some(v) = self.0.take() {
            drop_value_iteratively(v);
        }
    }
}

/// RFC 6901 escaping of one reference token.
pub(crate) fn escape_pointer(token: &str) -> Cow<'_, str> {
    if token.contains(['~', '/']) {
        Cow::Owned(token.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(token)
    }
}

/// Why a body is not a classifiable JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ParseFailure {
    /// Not valid JSON: the sentence says what and where (line, column).
    Malformed(String),
    /// Valid so far, but nested deeper than the limit.
    TooDeep { max: usize },
}

/// A parsed document and its greatest nesting depth.
pub(crate) struct Parsed<'a> {
    pub root: Node<'a>,
    pub depth: usize,
    /// True when a member name repeats in some object of the document.
    pub has_duplicate: bool,
}

impl Drop for Parsed<'_> {
    /// Dropping a deep tree recursively could overflow the stack; dismantle it iteratively.
    fn drop(&mut self) {
        if self.depth < 256 {
            return;
        }
        let mut stack = vec![std::mem::replace(&mut self.root, Node::Null)];
        while let Some(node) = stack.pop() {
            match node {
                Node::Array(items) => stack.extend(items),
                Node::Object(o) => stack.extend(o.members.into_iter().map(|(_, v)| v)),
                _ => {}
            }
        }
    }
}

const TOO_DEEP: &str = "\u{0}mcp-triage: nesting limit";

/// Parses one JSON value that must span the whole input (surrounding white space allowed).
/// The input is checked for UTF-8 once, up front (SIMD), so the parser need not check every
/// string again.
pub(crate) fn parse(input: &[u8], max_depth: usize) -> Result<Parsed<'_>, ParseFailure> {
    match simdutf8::compat::from_utf8(input) {
        Ok(text) => parse_str(text, max_depth),
        Err(e) => Err(ParseFailure::Malformed(format!(
            "invalid UTF-8 at byte {} (JSON text is UTF-8)",
            e.valid_up_to()
        ))),
    }
}

/// [`parse`] for input already known to be UTF-8.
///
/// serde_json refuses numbers beyond the range of an f64 ("number out of range"), yet they are
/// valid JSON. Such bodies are rare, so the ordinary parse stays as fast as before and only a
/// body it refuses for that reason is read a second time, by [`parse_with_big_numbers`].
pub(crate) fn parse_str(input: &str, max_depth: usize) -> Result<Parsed<'_>, ParseFailure> {
    // the common shape of a body, without serde; anything else takes the serde path below
    if let Some(parsed) = super::fast::parse_common(input, max_depth) {
        return Ok(parsed);
    }
    match parse_serde(input, max_depth, None) {
        Err(e) if is_out_of_range(&e) => parse_with_big_numbers(input, max_depth),
        other => other.map_err(|e| failure(&e, max_depth)),
    }
}

/// The second reading of a body holding numbers beyond f64 range. Each such number (a valid
/// JSON number token whose value serde_json refuses) is replaced, in a copy, by `0` padded with
/// spaces to the same length, so every later syntax error keeps its line and column; the
/// visitor, counting numbers in document order, puts the original text back as a
/// [`Node::BigNumber`]. The tree owns its text, as the copy does not outlive this call.
fn parse_with_big_numbers(input: &str, max_depth: usize) -> Result<Parsed<'_>, ParseFailure> {
    let (copy, big) = replace_out_of_range_numbers(input);
    let parsed = parse_serde(&copy, max_depth, Some(big)).map_err(|e| failure(&e, max_depth));
    let mut parsed = parsed?;
    let root = std::mem::replace(&mut parsed.root, Node::Null).into_owned();
    Ok(Parsed {
        root,
        depth: parsed.depth,
        has_duplicate: parsed.has_duplicate,
    })
}

fn is_out_of_range(e: &serde_json::Error) -> bool {
    e.is_syntax() && e.to_string().starts_with("number out of range")
}

fn failure(e: &serde_json::Error, max_depth: usize) -> ParseFailure {
    if e.to_string().starts_with(TOO_DEEP) {
        ParseFailure::TooDeep { max: max_depth }
    } else {
        ParseFailure::Malformed(describe_error(e))
    }
}

fn parse_serde<'a>(
    input: &'a str,
    max_depth: usize,
    big_numbers: Option<BigNumbers>,
) -> Result<Parsed<'a>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(input);
    de.disable_recursion_limit();
    let mut state = ParseState {
        deepest: 0,
        big_numbers,
    };
    let seed = NodeSeed {
        depth: 0,
        max_depth,
        state: &mut state,
    };
    let (root, has_duplicate) = seed.deserialize(&mut de)?;
    de.end()?;
    Ok(Parsed {
        root,
        depth: state.deepest,
        has_duplicate,
    })
}

/// The out-of-range numbers of a document: `(n, text)` for the n-th number token (0-based,
/// document order), in reverse order so the next one is at the end.
struct BigNumbers {
    seen: usize,
    pending: Vec<(usize, String)>,
}

impl BigNumbers {
    /// Called for every number the parser meets: its original text when it is the next
    /// out-of-range one.
    fn take_next(&mut self) -> Option<String> {
        let n = self.seen;
        self.seen += 1;
        match self.pending.last() {
            Some((at, _)) if *at == n => self.pending.pop().map(|(_, text)| text),
            _ => None,
        }
    }
}

/// A copy of `input` in which every valid JSON number token outside strings that serde_json
/// refuses as out of range is overwritten by `0` and spaces (same length), and those tokens with
/// their number index. Only ASCII bytes are overwritten, with ASCII, so the copy stays UTF-8.
/// The scan needs no full parse: in valid JSON a number is a maximal run of `0-9 + - . e E`
/// starting with `-` or a digit outside a string; in invalid JSON what it replaces does not
/// matter, because the second parse reports the same first error anyway (an invalid token is
/// never replaced).
fn replace_out_of_range_numbers(input: &str) -> (String, BigNumbers) {
    let bytes = input.as_bytes();
    let mut copy = bytes.to_vec();
    let mut pending = Vec::new();
    let mut number = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // Skip the string: to the next quote that no backslash escapes.
                i += 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                        Some(at) if bytes[i + at] == b'"' => {
                            i += at + 1;
                            break;
                        }
                        Some(at) => i = (i + at + 2).min(bytes.len()),
                        None => {
                            i = bytes.len();
                            break;
                        }
                    }
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    i += 1;
                }
                let token = &input[start..i];
                if is_json_number(token)
                    && serde_json::from_str::<f64>(token).is_err_and(|e| is_out_of_range(&e))
                {
                    copy[start] = b'0';
                    copy[start + 1..i].fill(b' ');
                    pending.push((number, token.to_string()));
                }
                number += 1;
            }
            _ => i += 1,
        }
    }
    pending.reverse();
    let copy = String::from_utf8(copy).expect("only ASCII bytes were overwritten, with ASCII");
    (copy, BigNumbers { seen: 0, pending })
}

/// RFC 8259's `number`: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, whole.
fn is_json_number(t: &str) -> bool {
    let digits = |s: &[u8]| s.iter().take_while(|b| b.is_ascii_digit()).count();
    let b = t.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i += digits(&b[i..]),
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        let n = digits(&b[i + 1..]);
        if n == 0 {
            return false;
        }
        i += 1 + n;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let n = digits(&b[i..]);
        if n == 0 {
            return false;
        }
        i += n;
    }
    i == b.len()
}

fn describe_error(e: &serde_json::Error) -> String {
    let text = e.to_string();
    // serde_json says "... at line L column C"; keep it, it is the pointer a reader needs.
    if text.contains("trailing characters") {
        format!(
            "more data after the first JSON value (line {} column {}): a body is exactly one JSON value",
            e.line(),
            e.column()
        )
    } else if text.starts_with("EOF while parsing") {
        format!("{text}: the body ends before the JSON value does (truncated?)")
    } else {
        text
    }
}

/// What the visitor carries through the whole document.
struct ParseState {
    deepest: usize,
    /// Set on the second reading of a body with out-of-range numbers only.
    big_numbers: Option<BigNumbers>,
}

struct NodeSeed<'d> {
    depth: usize,
    max_depth: usize,
    state: &'d mut ParseState,
}

impl NodeSeed<'_> {
    /// A number node, or the out-of-range number the copy's `0` stands for.
    fn number<'de>(self, n: Node<'de>) -> Built<'de> {
        if let Some(big) = &mut self.state.big_numbers {
            if let Some(text) = big.take_next() {
                return (Node::BigNumber(Cow::Owned(text)), false);
            }
        }
        (n, false)
    }
}

/// A node and whether a duplicate member name occurs anywhere within it.
type Built<'de> = (Node<'de>, bool);

impl<'de> DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = Built<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Built<'de>, D::Error> {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, move || d.deserialize_any(self))
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_> {
    type Value = Built<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Built<'de>, E> {
        Ok((Node::Bool(v), false))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Built<'de>, E> {
        Ok(self.number(Node::Int(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Built<'de>, E> {
        Ok(self.number(Node::UInt(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Built<'de>, E> {
        Ok(self.number(Node::Float(v)))
    }
    fn visit_unit<E>(self) -> Result<Built<'de>, E> {
        Ok((Node::Null, false))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Built<'de>, E> {
        Ok((Node::String(Cow::Borrowed(v)), false))
    }
    fn visit_str<E>(self, v: &str) -> Result<Built<'de>, E> {
        Ok((Node::String(Cow::Owned(v.to_string())), false))
    }
    fn visit_string<E>(self, v: String) -> Result<Built<'de>, E> {
        Ok((Node::String(Cow::Owned(v)), false))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Built<'de>, A::Error> {
        let depth = self.depth + 1;
        if depth > self.max_depth {
            return Err(de::Error::custom(TOO_DEEP));
        }
        if depth > self.state.deepest {
            self.state.deepest = depth;
        }
        let mut items = Vec::new();
        let mut dup = false;
        while let Some((item, item_dup)) = seq.next_element_seed(NodeSeed {
            depth,
            max_depth: self.max_depth,
            state: &mut *self.state,
        })? {
            dup |= item_dup;
            items.push(item);
        }
        Ok((Node::Array(items), dup))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Built<'de>, A::Error> {
        let depth = self.depth + 1;
        if depth > self.max_depth {
            return Err(de::Error::custom(TOO_DEEP));
        }
        if depth > self.state.deepest {
            self.state.deepest = depth;
        }
        let mut obj = Object::default();
        let mut seen: Option<std::collections::HashSet<Cow<'de, str>>> = None;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let (value, value_dup) = map.next_value_seed(NodeSeed {
                depth,
                max_depth: self.max_depth,
                state: &mut *self.state,
            })?;
            note_member(&mut obj, &mut seen, key, value, value_dup);
        }
        let dup = obj.has_duplicate_within;
        Ok((Node::Object(obj), dup))
    }
}

/// Adds a member to `obj`, noting the first repeated name (`seen`: the names of a large
/// object, built once it has 16 members). Shared by both readers (see `json/fast.rs`).
pub(super) fn note_member<'a>(
    obj: &mut Object<'a>,
    seen: &mut Option<std::collections::HashSet<Cow<'a, str>>>,
    key: Cow<'a, str>,
    value: Node<'a>,
    value_dup: bool,
) {
    if obj.duplicate.is_none() {
        let repeated = if obj.members.len() < 16 {
            obj.members.iter().any(|(k, _)| *k == key)
        } else {
            let set =
                seen.get_or_insert_with(|| obj.members.iter().map(|(k, _)| k.clone()).collect());
            !set.insert(key.clone())
        };
        if repeated {
            obj.duplicate = Some(obj.members.len());
            obj.has_duplicate_within = true;
        }
    }
    obj.has_duplicate_within |= value_dup;
    obj.members.push((key, value));
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
}

/// Drops a `serde_json::Value` without recursion (its own `Drop` recurses per level).
pub(crate) fn drop_value_iteratively(v: serde_json::Value) {
    use serde_json::Value;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serde-free reader gives serde's tree for every body it takes, and gives up on the
    /// rest (which then take the serde path, as before it existed).
    #[test]
    fn the_common_reader_builds_serdes_tree_or_gives_up() {
        let taken = [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
            " { \"a\" : [ 1 , -2 , true , false , null , [ ] , { } ] ,\n\t\"b\":\"é😀\" } ",
            r#"{"a":1,"a":2}"#,
            r#"[{"x":{"y":0}},{"k":1,"k":1}]"#,
            "123456789012345678",
            "-123456789012345678",
            r#""""#,
            "[[[[[[[[[[1]]]]]]]]]]",
        ];
        for text in taken {
            let fast = super::super::fast::parse_common(text, 64).expect(text);
            let serde = parse_serde(text, 64, None).unwrap();
            assert_eq!(fast.root, serde.root, "{text}");
            assert_eq!(fast.depth, serde.depth, "{text}");
            assert_eq!(fast.has_duplicate, serde.has_duplicate, "{text}");
        }
        let big: String = (0..20).map(|i| format!("\"k{}\":{i},", i % 18)).collect();
        let big = format!("{{{}\"end\":0}}", big);
        let fast = super::super::fast::parse_common(&big, 64).unwrap();
        let serde = parse_serde(&big, 64, None).unwrap();
        assert_eq!(fast.root, serde.root);
        assert!(fast.has_duplicate && serde.has_duplicate);
        let refused = [
            r#"{"a":"esc\"aped"}"#,
            "1.0",
            "1e3",
            "-0",
            "01",
            "1234567890123456789",
            "123456789012345678901234567890",
            "[1,]",
            "{,}",
            r#"{"a" 1}"#,
            "tru",
            "[true1]",
            "{} x",
            "\u{feff}{}",
            "\"tab\there\"",
            "[[[1]]]",
            "",
            "-",
            r#"{"a":1"#,
        ];
        for text in refused {
            assert!(
                super::super::fast::parse_common(text, 2).is_none(),
                "{text}"
            );
        }
    }

    #[test]
    fn parses_and_borrows() {
        let p = parse(br#"{"a":"x","b":[1,2.5,null,true]}"#, 100).unwrap();
        let o = p.root.as_object().unwrap();
        assert!(matches!(o.get("a"), Some(Node::String(Cow::Borrowed("x")))));
        assert_eq!(p.depth, 2);
        assert!(!o.has_duplicate_within);
    }

    #[test]
    fn finds_duplicates_with_pointer() {
        let p = parse(br#"{"a":{"b":[{"c":1,"c":2}]}}"#, 100).unwrap();
        assert_eq!(
            p.root.first_duplicate_pointer("").as_deref(),
            Some("/a/b/0/c")
        );
        let p = parse(br#"{"id":1,"id":2}"#, 100).unwrap();
        assert_eq!(p.root.as_object().unwrap().duplicate_name(), Some("id"));
        let many: String = (0..40).map(|i| format!("\"k{i}\":0,")).collect();
        let body = format!("{{{many}\"k7\":1}}");
        let p = parse(body.as_bytes(), 100).unwrap();
        assert_eq!(p.root.as_object().unwrap().duplicate_name(), Some("k7"));
    }

    #[test]
    fn rejects_trailing_and_truncated() {
        assert!(
            matches!(parse(b"{} {}", 10), Err(ParseFailure::Malformed(m)) if m.contains("more data"))
        );
        assert!(
            matches!(parse(b"{\"a\":", 10), Err(ParseFailure::Malformed(m)) if m.contains("ends before"))
        );
        assert!(matches!(
            parse(b"\"\xff\"", 10),
            Err(ParseFailure::Malformed(_))
        ));
    }

    #[test]
    fn numbers_beyond_f64_range_are_valid_json() {
        let long = format!("1{}", "0".repeat(99_999));
        let body = format!(
            r#"{{"a":1e400,"b":[-1e400,"\"1e400",1,{long}],"c":"x","d":2.5e-400,"e":1.5}}"#
        );
        let p = parse(body.as_bytes(), 100).unwrap();
        let o = p.root.as_object().unwrap();
        assert_eq!(o.get("a"), Some(&Node::BigNumber("1e400".into())));
        let Some(Node::Array(b)) = o.get("b") else {
            panic!("b is an array")
        };
        assert_eq!(b[0], Node::BigNumber("-1e400".into()));
        assert_eq!(b[1], Node::String("\"1e400".into()));
        assert_eq!(b[2], Node::UInt(1));
        assert_eq!(b[3], Node::BigNumber(long.clone().into()));
        assert_eq!(o.get("c").and_then(Node::as_str), Some("x"));
        assert_eq!(o.get("d"), Some(&Node::Float(0.0)));
        assert_eq!(o.get("e"), Some(&Node::Float(1.5)));
        assert_eq!(p.depth, 2);
        assert_eq!(b[0].kind(), JsonKind::Number);
        assert_eq!(b[0].as_integer(), None);
        assert_eq!(b[0].to_value(), serde_json::json!(f64::MIN));
        assert_eq!(b[3].to_value(), serde_json::json!(f64::MAX));
        // Duplicates are still found on the second reading.
        let p = parse(br#"{"x":{"k":1e999,"k":2}}"#, 100).unwrap();
        assert_eq!(p.root.first_duplicate_pointer("").as_deref(), Some("/x/k"));
    }

    #[test]
    fn errors_after_a_big_number_keep_their_position() {
        // The big number is not the problem any more: the error after it is, at its own column.
        for (big, small) in [
            (&br#"{"a":1e400,"b":tru}"#[..], &br#"{"a":1,"b":tru}"#[..]),
            (b"[1e400,\n 2,,]", b"[1,\n 2,,]"),
            (b"[1e400 1]", b"[1 1]"),
        ] {
            let (Err(ParseFailure::Malformed(got)), Err(ParseFailure::Malformed(want))) =
                (parse(big, 100), parse(small, 100))
            else {
                panic!("both malformed")
            };
            let shift = big.len() - small.len();
            let column = |m: &str| -> usize {
                m.rsplit("column ")
                    .next()
                    .unwrap()
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            };
            assert_eq!(got.split(" at line").next(), want.split(" at line").next());
            let same_line = !big.contains(&b'\n');
            assert_eq!(
                column(&got),
                column(&want) + if same_line { shift } else { 0 },
                "{got} / {want}"
            );
        }
        let Err(ParseFailure::Malformed(m)) = parse(b"[1e400]x", 100) else {
            panic!("malformed")
        };
        assert!(m.contains("more data") && m.contains("column 8"), "{m}");
        // Invalid number tokens stay invalid, even when their start overflows.
        for bad in [
            &b"[1e400-5]"[..],
            b"[1e400.5]",
            b"[01e400]",
            b"[1e400e1]",
            b"[-]",
        ] {
            assert!(
                matches!(parse(bad, 100), Err(ParseFailure::Malformed(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        // The limit still applies on the second reading.
        let deep = format!("{}1e400{}", "[".repeat(50), "]".repeat(50));
        assert_eq!(
            parse(deep.as_bytes(), 10).err(),
            Some(ParseFailure::TooDeep { max: 10 })
        );
        assert_eq!(parse(deep.as_bytes(), 50).unwrap().depth, 50);
    }

    #[test]
    fn json_number_grammar() {
        for good in [
            "0", "-0", "1", "-12", "1.5", "1e5", "1E+5", "-1.25e-7", "1e400",
        ] {
            assert!(is_json_number(good), "{good}");
        }
        for bad in [
            "", "-", "01", "1.", ".5", "1e", "1e+", "+1", "1-2", "1.5.5", "--1",
        ] {
            assert!(!is_json_number(bad), "{bad}");
        }
    }

    #[test]
    fn deep_nesting_is_fine_and_bounded() {
        let deep = "[".repeat(5_000) + &"]".repeat(5_000);
        let p = parse(deep.as_bytes(), 10_000).unwrap();
        assert_eq!(p.depth, 5_000);
        drop(p);
        let too_deep = "[".repeat(20_000) + &"]".repeat(20_000);
        assert_eq!(
            parse(too_deep.as_bytes(), 10_000).err(),
            Some(ParseFailure::TooDeep { max: 10_000 })
        );
        // Unclosed deep input is still a limit, found before the end.
        let open = "{\"a\":".repeat(20_000);
        assert_eq!(
            parse(open.as_bytes(), 10_000).err(),
            Some(ParseFailure::TooDeep { max: 10_000 })
        );
    }

    #[test]
    fn deep_tree_converts_and_drops_on_small_stack() {
        let deep = "[".repeat(9_000) + &"]".repeat(9_000);
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let p = parse(deep.as_bytes(), 10_000).unwrap();
                let v = p.root.to_value();
                assert!(v.is_array());
                // serde_json's own drop is recursive: dismantle it the same way.
                crate::json::node::drop_value_iteratively(v);
                drop(p);
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
