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
            Node::Int(_) | Node::UInt(_) | Node::Float(_) => JsonKind::Number,
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

    /// Converts to a `serde_json::Value` (for JSON Schema validation).
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
            Node::String(s) => Value::String(s.to_string()),
            Node::Array(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Object(o) => Value::Object(
                o.members
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_value()))
                    .collect(),
            ),
        })
    }

    /// An integer value, accepting an integral float (`1.0`) and saying so.
    pub fn as_integer(&self) -> Option<(i64, bool)> {
        match self {
            Node::Int(i) => Some((*i, false)),
            Node::UInt(u) => i64::try_from(*u).ok().map(|i| (i, false)),
            Node::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some((*f as i64, true)),
            _ => None,
        }
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
pub(crate) fn parse_str(input: &str, max_depth: usize) -> Result<Parsed<'_>, ParseFailure> {
    let mut de = serde_json::Deserializer::from_str(input);
    de.disable_recursion_limit();
    let mut depth_seen = 0usize;
    let seed = NodeSeed {
        depth: 0,
        max_depth,
        deepest: &mut depth_seen,
    };
    let result = seed.deserialize(&mut de).and_then(|built| {
        de.end()?;
        Ok(built)
    });
    match result {
        Ok((root, has_duplicate)) => Ok(Parsed {
            root,
            depth: depth_seen,
            has_duplicate,
        }),
        Err(e) => {
            if e.to_string().starts_with(TOO_DEEP) {
                Err(ParseFailure::TooDeep { max: max_depth })
            } else {
                Err(ParseFailure::Malformed(describe_error(&e)))
            }
        }
    }
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

struct NodeSeed<'d> {
    depth: usize,
    max_depth: usize,
    deepest: &'d mut usize,
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
        Ok((Node::Int(v), false))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Built<'de>, E> {
        Ok((Node::UInt(v), false))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Built<'de>, E> {
        Ok((Node::Float(v), false))
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
        if depth > *self.deepest {
            *self.deepest = depth;
        }
        let mut items = Vec::new();
        let mut dup = false;
        while let Some((item, item_dup)) = seq.next_element_seed(NodeSeed {
            depth,
            max_depth: self.max_depth,
            deepest: &mut *self.deepest,
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
        if depth > *self.deepest {
            *self.deepest = depth;
        }
        let mut obj = Object::default();
        let mut seen: Option<std::collections::HashSet<Cow<'de, str>>> = None;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let (value, value_dup) = map.next_value_seed(NodeSeed {
                depth,
                max_depth: self.max_depth,
                deepest: &mut *self.deepest,
            })?;
            if obj.duplicate.is_none() {
                let repeated = if obj.members.len() < 16 {
                    obj.members.iter().any(|(k, _)| *k == key)
                } else {
                    let set = seen.get_or_insert_with(|| {
                        obj.members.iter().map(|(k, _)| k.clone()).collect()
                    });
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
        let dup = obj.has_duplicate_within;
        Ok((Node::Object(obj), dup))
    }
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
