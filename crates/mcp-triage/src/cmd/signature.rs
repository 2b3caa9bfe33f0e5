//! A tool's `inputSchema` as a one-line signature, `set_value(key: string, value: any)`, so that
//! `list` tells a user which `--arg KEY=VALUE` a call needs without reading the JSON Schema.
//!
//! The schema comes from the server and may be anything: not an object, `properties` that is
//! an array, `required` naming absent properties, `$ref` cycles, thousands of enum values. The
//! rendering never fails and stays bounded: nesting, fields, alternatives and the text of each
//! parameter are capped (shown as `…`), local `$ref`s are followed only to a fixed depth, and
//! every server string is made one-line safe before it reaches the terminal.

use mcp_triage_core::sanitize_line;
use serde_json::{Map, Value};

/// Nesting levels shown before a type becomes `…` (a `$ref` followed counts as one).
const MAX_DEPTH: usize = 3;
/// Top-level parameters shown: the user needs them all, so this only stops absurd schemas.
const MAX_PARAMS: usize = 32;
/// Fields shown of a nested object.
const MAX_FIELDS: usize = 6;
/// Enum values or `anyOf`/`oneOf` variants shown.
const MAX_ALTERNATIVES: usize = 6;
/// Characters of one parameter's type, and of one literal or name.
const MAX_TYPE_CHARS: usize = 120;
const MAX_LITERAL_CHARS: usize = 24;

/// `name(a: number, b?: string)`: required parameters first, then optional ones (marked `?`),
/// each group in the schema's key order; `()` when the schema lists no properties.
pub fn signature(name: &str, input_schema: &Value) -> String {
    let r = Renderer { root: input_schema };
    let params = input_schema
        .as_object()
        .and_then(|s| r.fields(s, 0, MAX_PARAMS))
        .unwrap_or_default();
    format!("{}({params})", sanitize_line(name, 128))
}

/// A rendered type and whether it is a top-level union (so `T[]` needs parentheses).
struct Ty {
    text: String,
    union: bool,
}

impl Ty {
    fn plain(text: impl Into<String>) -> Ty {
        Ty {
            text: text.into(),
            union: false,
        }
    }
}

struct Renderer<'a> {
    /// The whole `inputSchema`, against which local `$ref`s (`#/$defs/x`) resolve.
    root: &'a Value,
}

impl Renderer<'_> {
    /// `a: T, b?: U` for an object schema, or `None` when it has no usable `properties` and
    /// `required`. A required name without a property schema is shown as `any`: the server
    /// still insists on it.
    fn fields(&self, schema: &Map<String, Value>, depth: usize, max: usize) -> Option<String> {
        let empty = Map::new();
        let props = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut required: Vec<&str> = Vec::new();
        for r in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !required.contains(&r) {
                required.push(r);
            }
        }
        if props.is_empty() && required.is_empty() {
            return None;
        }
        let any = Value::Bool(true);
        let mut entries: Vec<(&str, &Value, bool)> = required
            .iter()
            .map(|r| (*r, props.get(*r).unwrap_or(&any), true))
            .collect();
        entries.extend(
            props
                .iter()
                .filter(|(k, _)| !required.contains(&k.as_str()))
                .map(|(k, v)| (k.as_str(), v, false)),
        );
        let total = entries.len();
        let mut parts: Vec<String> = entries
            .into_iter()
            .take(max)
            .map(|(k, v, req)| {
                let ty = self.ty(v, depth + 1).text;
                let mark = if req { "" } else { "?" };
                format!("{}{mark}: {}", key(k), sanitize_line(&ty, MAX_TYPE_CHARS))
            })
            .collect();
        if total > max {
            parts.push(format!("…{} more", total - max));
        }
        Some(parts.join(", "))
    }

    /// The type of one schema: `const`/`enum` literals, unions, `T[]`, `{…}`, or the JSON type.
    fn ty(&self, schema: &Value, depth: usize) -> Ty {
        let s = match schema {
            Value::Object(m) => m,
            Value::Bool(false) => return Ty::plain("never"),
            _ => return Ty::plain("any"),
        };
        if depth > MAX_DEPTH {
            return Ty::plain("…");
        }
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            return match self.resolve(r) {
                Some(target) => self.ty(target, depth + 1),
                None => Ty::plain(ref_name(r)),
            };
        }
        if let Some(c) = s.get("const") {
            return Ty::plain(literal(c));
        }
        if let Some(values) = s.get("enum").and_then(Value::as_array) {
            return union(values.iter().map(|v| Ty::plain(literal(v))).collect());
        }
        for (k, sep) in [("anyOf", "|"), ("oneOf", "|"), ("allOf", " & ")] {
            if let Some(vs) = s.get(k).and_then(Value::as_array).filter(|v| !v.is_empty()) {
                if s.contains_key("type") || s.contains_key("properties") {
                    break; // The variants only add constraints to a type given beside them.
                }
                let parts = vs.iter().map(|v| self.ty(v, depth + 1)).collect();
                return if sep == "|" {
                    union(parts)
                } else {
                    join(parts, sep)
                };
            }
        }
        match s.get("type") {
            Some(Value::String(t)) => self.named(t, s, depth),
            Some(Value::Array(ts)) => union(
                ts.iter()
                    .map(|t| match t.as_str() {
                        Some(t) => self.named(t, s, depth),
                        None => Ty::plain("any"),
                    })
                    .collect(),
            ),
            _ if s.contains_key("properties") => self.named("object", s, depth),
            _ if s.contains_key("items") => self.named("array", s, depth),
            _ => Ty::plain("any"),
        }
    }

    /// One JSON Schema type name: arrays show their items, objects their fields.
    fn named(&self, t: &str, s: &Map<String, Value>, depth: usize) -> Ty {
        match t {
            "array" => match s.get("items").or_else(|| s.get("prefixItems")) {
                Some(Value::Array(tuple)) => {
                    let parts: Vec<String> = tuple
                        .iter()
                        .take(MAX_FIELDS)
                        .map(|i| self.ty(i, depth + 1).text)
                        .collect();
                    Ty::plain(format!("[{}]", parts.join(", ")))
                }
                Some(items) => {
                    let inner = self.ty(items, depth + 1);
                    Ty::plain(if inner.union {
                        format!("({})[]", inner.text)
                    } else {
                        format!("{}[]", inner.text)
                    })
                }
                None => Ty::plain("any[]"),
            },
            "object" if depth >= MAX_DEPTH => Ty::plain(if s.contains_key("properties") {
                "{…}"
            } else {
                "object"
            }),
            "object" => match self.fields(s, depth, MAX_FIELDS) {
                Some(f) => Ty::plain(format!("{{{f}}}")),
                None => Ty::plain("object"),
            },
            other => Ty::plain(sanitize_line(other, MAX_LITERAL_CHARS)),
        }
    }

    /// A local reference (`#`, `#/$defs/x`) in the root schema; remote ones are not fetched.
    fn resolve(&self, r: &str) -> Option<&Value> {
        let pointer = r.strip_prefix('#')?;
        self.root.pointer(pointer)
    }
}

/// `a|b|c`, at most [`MAX_ALTERNATIVES`] of them, duplicates dropped; one alone is itself.
fn union(parts: Vec<Ty>) -> Ty {
    let mut texts: Vec<String> = Vec::new();
    for p in parts {
        if !texts.contains(&p.text) {
            texts.push(p.text);
        }
    }
    if texts.is_empty() {
        return Ty::plain("never");
    }
    if texts.len() == 1 {
        return Ty::plain(texts.remove(0));
    }
    let shown = texts.len().min(MAX_ALTERNATIVES);
    let mut text = texts[..shown].join("|");
    if texts.len() > shown {
        text.push_str("|…");
    }
    Ty { text, union: true }
}

/// `A & B` for `allOf`: each part must hold.
fn join(parts: Vec<Ty>, sep: &str) -> Ty {
    let texts: Vec<String> = parts
        .into_iter()
        .take(MAX_ALTERNATIVES)
        .map(|p| {
            if p.union {
                format!("({})", p.text)
            } else {
                p.text
            }
        })
        .collect();
    Ty {
        union: texts.len() > 1,
        text: texts.join(sep),
    }
}

/// A literal as JSON (`"phone"`, `3`, `null`), cut and made one-line safe.
fn literal(v: &Value) -> String {
    match v {
        Value::String(s) => {
            serde_json::to_string(&sanitize_line(s, MAX_LITERAL_CHARS)).unwrap_or_default()
        }
        other => sanitize_line(&other.to_string(), MAX_LITERAL_CHARS),
    }
}

/// A property name as typed after `--arg`, or JSON-quoted when it is not a plain word.
fn key(k: &str) -> String {
    let plain = !k.is_empty()
        && k.chars().count() <= MAX_TYPE_CHARS
        && k.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '$' | '@'));
    if plain {
        k.to_string()
    } else {
        serde_json::to_string(&sanitize_line(k, MAX_TYPE_CHARS)).unwrap_or_default()
    }
}

/// The last segment of an unresolved `$ref`, so `https://x/y.json#/$defs/Point` shows `Point`.
fn ref_name(r: &str) -> String {
    let last = r
        .rsplit(['/', '#'])
        .find(|s| !s.is_empty())
        .unwrap_or("ref");
    sanitize_line(last, MAX_LITERAL_CHARS)
}

#[cfg(test)]
mod tests {
    use super::signature;
    use serde_json::{json, Value};

    fn sig(schema: Value) -> String {
        signature("t", &schema)
    }

    #[test]
    fn required_first_then_optional_with_types() {
        let s = json!({ "type": "object", "properties": {
            "note": { "type": "string" }, "a": { "type": "number" }, "b": { "type": "number" } },
            "required": ["a", "b"] });
        assert_eq!(sig(s), "t(a: number, b: number, note?: string)");
    }

    #[test]
    fn no_properties_is_empty_parentheses() {
        for s in [
            json!({ "type": "object" }),
            json!({ "type": "object", "properties": {} }),
            json!({}),
            Value::Null,
            json!("object"),
            json!([1, 2]),
            json!({ "properties": [1, 2], "required": "a" }),
        ] {
            assert_eq!(sig(s.clone()), "t()", "{s}");
        }
    }

    #[test]
    fn enums_consts_arrays_and_unions() {
        let s = json!({ "type": "object", "required": ["mode"], "properties": {
            "mode": { "type": "string", "enum": ["fast", "safe"] },
            "tags": { "type": "array", "items": { "type": "string" } },
            "ids": { "type": "array", "items": { "type": ["integer", "null"] } },
            "pair": { "type": "array", "items": [{ "type": "string" }, { "type": "number" }] },
            "kind": { "const": 3 },
            "maybe": { "anyOf": [{ "type": "string" }, { "type": "null" }] },
            "list": { "type": "array" },
            "free": {} } });
        assert_eq!(
            sig(s),
            "t(mode: \"fast\"|\"safe\", free?: any, ids?: (integer|null)[], kind?: 3, \
             list?: any[], maybe?: string|null, pair?: [string, number], tags?: string[])"
        );
    }

    #[test]
    fn nested_objects_are_compact_and_bounded() {
        let s = json!({ "type": "object", "properties": {
            "point": { "type": "object", "required": ["x"],
                "properties": { "x": { "type": "number" }, "y": { "type": "number" } } },
            "deep": { "type": "object", "properties": { "a": { "type": "object",
                "properties": { "b": { "type": "object", "properties": { "c": { "type": "string" } } } } } } },
            "bag": { "type": "object" } } });
        assert_eq!(
            sig(s),
            "t(bag?: object, deep?: {a?: {b?: {…}}}, point?: {x: number, y?: number})"
        );
    }

    #[test]
    fn refs_resolve_locally_and_cycles_end() {
        let s = json!({ "type": "object", "$defs": {
            "address": { "type": "object", "properties": { "city": { "type": "string" } } },
            "node": { "type": "object", "properties": { "next": { "$ref": "#/$defs/node" } } } },
            "properties": {
                "home": { "$ref": "#/$defs/address" },
                "list": { "$ref": "#/$defs/node" },
                "self": { "$ref": "#" },
                "remote": { "$ref": "https://example.com/s.json#/$defs/Point" },
                "broken": { "$ref": "#/$defs/nope" } } });
        let out = sig(s);
        assert!(out.contains("home?: {city?: string}"), "{out}");
        assert!(
            out.contains("remote?: Point") && out.contains("broken?: nope"),
            "{out}"
        );
        assert!(
            out.contains("list?: {next?: ") && out.contains('…'),
            "{out}"
        );
    }

    #[test]
    fn odd_names_values_and_sizes_stay_one_bounded_line() {
        let many: Vec<Value> = (0..1000).map(|i| json!(format!("v{i}"))).collect();
        let props: serde_json::Map<String, Value> = (0..100)
            .map(|i| (format!("p{i:03}"), json!({ "type": "integer" })))
            .collect();
        let s = json!({ "type": "object", "required": ["missing", 7, "missing"],
            "properties": {
                "with space": { "type": "string" },
                "evil\u{1b}[31m\nname": { "enum": ["a\nb", "x".repeat(500)] },
                "big": { "enum": many },
                "weird": { "type": 42 },
                "never": false } });
        let out = sig(s);
        assert!(out.starts_with("t(missing: any, "), "{out}");
        assert!(out.contains("\"with space\"?: string"), "{out}");
        assert!(
            out.contains("never?: never") && out.contains("weird?: any"),
            "{out}"
        );
        assert!(out.contains("big?: \"v0\"|") && out.contains("|…"), "{out}");
        assert!(!out.contains('\n') && !out.contains('\u{1b}'), "{out}");
        assert!(out.len() < 600, "{} chars", out.len());
        let wide = sig(json!({ "type": "object", "properties": props }));
        assert!(wide.ends_with(", …68 more)"), "{wide}");
    }

    #[test]
    fn deep_nesting_does_not_recurse_without_bound() {
        let mut s = json!({ "type": "string" });
        for _ in 0..200 {
            s = json!({ "type": "array", "items": s });
        }
        let out = sig(json!({ "type": "object", "properties": { "a": s } }));
        assert_eq!(out, "t(a?: …[][][])");
    }
}
