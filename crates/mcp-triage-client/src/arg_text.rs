//! `--arg KEY=VALUE` text turned into the JSON value a tool expects.
//!
//! Reading VALUE as JSON when it parses (else as a string) turns numeric ids, zip codes,
//! versions (`1.10`) and yes/no answers (`true`) into numbers and booleans, and a tool whose
//! `inputSchema` asks for a string then refuses them (issue 46, item 2). Where `tools/list`
//! gives the property's schema and it asks only for a string, VALUE is that string as typed;
//! every other case keeps the JSON-first reading (numbers, booleans and `null` parse as such,
//! and a property that allows a string and a number cannot say which was meant). When the
//! arguments still do not fit, [`quoting_hint`] says how to quote.

use serde_json::{Map, Value};

use crate::precheck::{check_arguments, ArgumentMismatch};

/// The JSON-first reading: VALUE as JSON when it parses, else the text as a string. Used
/// where no schema says more (no `tools/list`, `--no-list`, an unlisted property).
pub fn json_first(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// The JSON types a property schema allows, from `type` (a name or a list), or, without
/// `type`, from an `anyOf`/`oneOf` whose every branch says (pydantic writes `Optional[str]`
/// as `anyOf: [{type: string}, {type: null}]`), or from an `enum` or `const` whose values
/// are all strings; None when it does not say (a `$ref` is not followed).
fn declared_types(property: &Value) -> Option<Vec<&str>> {
    match property.get("type") {
        Some(Value::String(t)) => return Some(vec![t.as_str()]),
        Some(Value::Array(list)) => return list.iter().map(Value::as_str).collect(),
        Some(_) => return None,
        None => {}
    }
    if let Some(Value::Array(branches)) = property.get("anyOf").or_else(|| property.get("oneOf")) {
        let mut types = Vec::new();
        for b in branches {
            types.extend(declared_types(b)?);
        }
        return (!types.is_empty()).then_some(types);
    }
    let all_strings = |values: &[Value]| !values.is_empty() && values.iter().all(Value::is_string);
    match (property.get("enum"), property.get("const")) {
        (Some(Value::Array(values)), _) if all_strings(values) => Some(vec!["string"]),
        (None, Some(Value::String(_))) => Some(vec!["string"]),
        _ => None,
    }
}

/// One `--arg` VALUE read as `property` asks. A property that allows only a string (or a
/// string and null) gets the text as typed: `123` is `"123"`, and a quoted JSON string
/// (`"123"`) loses its quotes as it always did; `null` stays null where null is allowed.
/// Anything else is read JSON-first ([`json_first`]).
pub fn arg_value(property: Option<&Value>, text: &str) -> Value {
    let Some(types) = property.and_then(declared_types) else {
        return json_first(text);
    };
    let only_string =
        types.contains(&"string") && types.iter().all(|t| matches!(*t, "string" | "null"));
    if !only_string {
        return json_first(text);
    }
    if types.contains(&"null") && text == "null" {
        return Value::Null;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::String(s)) => Value::String(s),
        _ => Value::String(text.to_string()),
    }
}

/// The `--arg` pairs as one arguments object, each VALUE read by its property in
/// `input_schema`'s top-level `properties` (when the tool is listed with one).
pub fn typed_arguments(input_schema: Option<&Value>, pairs: &[(String, String)]) -> Value {
    let properties = input_schema.and_then(|s| s.get("properties"));
    let mut m = Map::new();
    for (key, text) in pairs {
        let property = properties.and_then(|p| p.get(key));
        m.insert(key.clone(), arg_value(property, text));
    }
    Value::Object(m)
}

/// How to pass an `--arg` whose reading made the arguments miss `schema`, or None when the
/// mismatch is not at an `--arg` key or its reading is not the cause. A value read as JSON
/// (a number, a boolean, null) where the text as a string would get past this mismatch gets
/// the string quoting; a value read as a string (its text is not JSON) where the schema
/// wants a number or a boolean gets the JSON spelling.
pub fn quoting_hint(
    schema: &Value,
    pairs: &[(String, String)],
    arguments: &Value,
    mismatch: &ArgumentMismatch,
) -> Option<String> {
    let first = mismatch.pointer.strip_prefix('/')?.split('/').next()?;
    let key = first.replace("~1", "/").replace("~0", "~");
    let (_, text) = pairs.iter().rev().find(|(k, _)| *k == key)?;
    let sent = arguments.get(&key)?;
    if sent.is_string() {
        let wants_json = ["number", "integer", "boolean", "null", "array", "object"]
            .iter()
            .any(|t| mismatch.reason.contains(t));
        return wants_json.then(|| {
            format!(
                "--arg read {key}={text} as a string because it is not JSON; write the value \
                 as JSON without quotes (e.g. --arg {key}=3 or --arg {key}=true) or use --args"
            )
        });
    }
    let mut as_string = arguments.clone();
    as_string[key.as_str()] = Value::String(text.clone());
    let still = check_arguments(schema, &as_string).ok()?;
    if still.is_some_and(|m| m.pointer == mismatch.pointer) {
        return None;
    }
    let quoted = Value::String(text.clone()).to_string();
    let object = Value::Object(Map::from_iter([(key.clone(), Value::String(text.clone()))]));
    Some(format!(
        "--arg read {key}={text} as JSON {}; to pass it as a string, quote it: \
         --arg '{key}={quoted}' or --args '{object}'",
        json_kind(sent)
    ))
}

/// A JSON value's kind in words.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_string_property_gets_the_text_as_typed() {
        let s = json!({ "type": "string" });
        assert_eq!(arg_value(Some(&s), "123"), json!("123"));
        assert_eq!(arg_value(Some(&s), "007"), json!("007"));
        assert_eq!(arg_value(Some(&s), "1.10"), json!("1.10"));
        assert_eq!(arg_value(Some(&s), "true"), json!("true"));
        assert_eq!(arg_value(Some(&s), "null"), json!("null"));
        assert_eq!(
            arg_value(Some(&s), r#""123""#),
            json!("123"),
            "quotes still work"
        );
        assert_eq!(arg_value(Some(&s), "[1]"), json!("[1]"));
        let nullable = json!({ "type": ["string", "null"] });
        assert_eq!(arg_value(Some(&nullable), "null"), Value::Null);
        assert_eq!(arg_value(Some(&nullable), "42"), json!("42"));
        let choice = json!({ "enum": ["yes", "no", "1"] });
        assert_eq!(arg_value(Some(&choice), "1"), json!("1"));
        assert_eq!(arg_value(Some(&json!({ "const": "2" })), "2"), json!("2"));
    }

    #[test]
    fn other_properties_keep_the_json_first_reading() {
        let n = json!({ "type": "integer" });
        assert_eq!(arg_value(Some(&n), "3"), json!(3));
        assert_eq!(
            arg_value(Some(&json!({ "type": "number" })), "2.5"),
            json!(2.5)
        );
        assert_eq!(
            arg_value(Some(&json!({ "type": "boolean" })), "false"),
            json!(false)
        );
        let either = json!({ "type": ["string", "number"] });
        assert_eq!(arg_value(Some(&either), "123"), json!(123));
        assert_eq!(arg_value(Some(&either), "abc"), json!("abc"));
        assert_eq!(arg_value(Some(&json!({})), "123"), json!(123));
        assert_eq!(arg_value(Some(&json!({ "enum": [1, "a"] })), "1"), json!(1));
        assert_eq!(arg_value(None, "123"), json!(123));
        assert_eq!(arg_value(None, "hi"), json!("hi"));
    }

    #[test]
    fn arguments_are_typed_by_their_properties() {
        let schema = json!({ "type": "object", "properties": {
            "message": { "type": "string" }, "count": { "type": "integer" } } });
        let pairs = [
            ("message".to_string(), "123".to_string()),
            ("count".to_string(), "3".to_string()),
            ("extra".to_string(), "4".to_string()),
        ];
        assert_eq!(
            typed_arguments(Some(&schema), &pairs),
            json!({ "message": "123", "count": 3, "extra": 4 })
        );
        assert_eq!(
            typed_arguments(None, &pairs),
            json!({ "message": 123, "count": 3, "extra": 4 })
        );
    }

    #[test]
    fn the_hint_names_the_quoting() {
        let schema = json!({ "type": "object", "$defs": { "Grade": { "type": "string",
            "enum": ["1", "2"] } }, "properties": {
            "grade": { "$ref": "#/$defs/Grade" }, "n": { "type": "integer" },
            "e": { "enum": [1, 2] } } });
        let pairs = [
            ("grade".to_string(), "1".to_string()),
            ("n".to_string(), "abc".to_string()),
            ("e".to_string(), "3".to_string()),
        ];
        let args = typed_arguments(Some(&schema), &pairs);
        assert_eq!(args, json!({ "grade": 1, "n": "abc", "e": 3 }));
        // The reasons as check_arguments words them for these values.
        let hint = |pointer: &str, reason: &str| {
            let m = ArgumentMismatch {
                pointer: pointer.into(),
                reason: reason.into(),
            };
            quoting_hint(&schema, &pairs, &args, &m)
        };
        assert_eq!(
            hint("/grade", "expected string").unwrap(),
            r#"--arg read grade=1 as JSON number; to pass it as a string, quote it: --arg 'grade="1"' or --args '{"grade":"1"}'"#
        );
        let h = hint("/n", "expected integer").unwrap();
        assert!(
            h.starts_with("--arg read n=abc as a string because it is not JSON"),
            "{h}"
        );
        // 3 is not in the enum as a string either: quoting would not help, so no hint.
        assert_eq!(hint("/e", "expected one of [1,2]"), None);
        let other = ArgumentMismatch {
            pointer: "/other".into(),
            reason: "required but missing".into(),
        };
        assert_eq!(quoting_hint(&schema, &pairs, &args, &other), None);
    }

    #[test]
    fn optional_strings_written_as_any_of_are_strings() {
        let optional = json!({ "anyOf": [{ "type": "string" }, { "type": "null" }] });
        assert_eq!(arg_value(Some(&optional), "12345"), json!("12345"));
        assert_eq!(arg_value(Some(&optional), "null"), Value::Null);
        let mixed = json!({ "oneOf": [{ "type": "string" }, { "type": "integer" }] });
        assert_eq!(arg_value(Some(&mixed), "5"), json!(5));
        let unsaid = json!({ "anyOf": [{ "type": "string" }, { "minLength": 1 }] });
        assert_eq!(arg_value(Some(&unsaid), "5"), json!(5));
    }
}
