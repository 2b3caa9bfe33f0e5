//! One request body of the common shape read without serde ([`read_one`]): the same
//! [`Message`] with the same [`Params`] that reading it as a `Value` gives ([`Params::of`]),
//! for the body nearly every client sends (one object; strings without escapes; short
//! integers; literals).
//!
//! Why: serde_json's visitor machinery was about 3.5k instructions for a 110-byte
//! `tools/call` (`bench/proxy-overhead.sh --instructions`), most of the observer's reading of a
//! request. The core's [`Scanner`] takes the same members in a fraction of that. Anything
//! outside the common shape (a batch, an escape, a fraction or exponent, a long integer,
//! `params` that are no object, nesting deeper than [`MAX_DEPTH`], any syntax error) makes it
//! give up, and the body is read as a `Value` as before; so what is accepted or refused, and
//! how, stays serde_json's (the tests hold the two equal on generated bodies).

use mcp_triage_core::scan::Scanner;
use serde_json::{Map, Value};

use super::params::{client_key, meta_key, param_key, ClientKey, MetaKey, ParamKey};
use super::{message_of, Members, Message, Meta, Params};
use crate::record::ClientId;

/// Deeper values go to the serde path (which stops at 128 levels).
const MAX_DEPTH: usize = 32;

/// The message of a body of the common shape: `Some(None)` when it is JSON of that shape but
/// no JSON-RPC message; `None` when the serde path must read it.
pub(super) fn read_one(text: &str) -> Option<Option<Message<Box<Params>>>> {
    let mut s = Scanner::new(text, MAX_DEPTH);
    s.ws();
    let mut m = Members::<Box<Params>>::default();
    s.object(|s, key| {
        match key {
            "id" => m.id = Some(value(s, 2)?),
            "method" => m.method = Some(value(s, 2)?),
            "params" => m.params = Some(Box::new(params(s)?)),
            "result" => {
                s.skip(2)?;
                m.has_result = true;
            }
            "error" => {
                s.skip(2)?;
                m.has_error = true;
            }
            _ => s.skip(2)?,
        }
        Some(())
    })?;
    s.at_end().then(|| message_of(m))
}

/// Any value of the common shape at nesting `depth`, built as serde_json builds a `Value`
/// (a repeated member name replaces the earlier value, as `Map::insert` does there).
fn value(s: &mut Scanner<'_>, depth: usize) -> Option<Value> {
    Some(match s.peek()? {
        b'"' => Value::String(s.string()?.to_owned()),
        b'{' => {
            s.check_depth(depth)?;
            let mut map = Map::new();
            s.object(|s, key| {
                let v = value(s, depth + 1)?;
                map.insert(key.to_owned(), v);
                Some(())
            })?;
            Value::Object(map)
        }
        b'[' => {
            s.check_depth(depth)?;
            let mut items = Vec::new();
            s.array(|s| {
                items.push(value(s, depth + 1)?);
                Some(())
            })?;
            Value::Array(items)
        }
        b't' => s.word("true").map(|()| Value::Bool(true))?,
        b'f' => s.word("false").map(|()| Value::Bool(false))?,
        b'n' => s.word("null").map(|()| Value::Null)?,
        // serde_json gives a non-negative integer as u64, a negative one as i64
        _ => match s.integer()? {
            n if n < 0 => Value::from(n),
            n => Value::from(n.unsigned_abs()),
        },
    })
}

/// A string's text (`Some`), or any other value read and left (`None`): `Value::as_str`.
fn text(s: &mut Scanner<'_>, depth: usize) -> Option<Option<String>> {
    if s.peek()? == b'"' {
        return Some(Some(s.string()?.to_owned()));
    }
    s.skip(depth)?;
    Some(None)
}

/// `params` as [`Params`] (depth 2: inside the message). Only an object: other `params` are
/// rare and the serde path reads them.
fn params(s: &mut Scanner<'_>) -> Option<Params> {
    s.check_depth(2)?;
    let mut p = Params::default();
    s.object(|s, key| {
        match param_key(key) {
            ParamKey::Name => p.name = text(s, 3)?,
            ParamKey::Arguments => p.arguments = Some(value(s, 3)?),
            ParamKey::TaskId => p.task_id = text(s, 3)?,
            ParamKey::ProtocolVersion => p.protocol_version = text(s, 3)?,
            ParamKey::ClientInfo => p.client_info = Some(client(s, 3)?),
            ParamKey::Meta => p.meta = meta(s, 3)?,
            ParamKey::MrtrRound => {
                s.skip(3)?;
                p.mrtr_round = true;
            }
            ParamKey::Other => s.skip(3)?,
        }
        Some(())
    })?;
    Some(p)
}

/// An object at `depth` read into a `T` member by member (`member` reads each value, at
/// `depth + 1`); any other value is read and left, and reads as `T::default()`, as
/// `Params::of` reads a `_meta` or `clientInfo` that is no object.
fn object_or_default<'a, T: Default>(
    s: &mut Scanner<'a>,
    depth: usize,
    mut member: impl FnMut(&mut Scanner<'a>, &'a str, &mut T) -> Option<()>,
) -> Option<T> {
    let mut t = T::default();
    if s.peek()? != b'{' {
        s.skip(depth)?;
        return Some(t);
    }
    s.check_depth(depth)?;
    s.object(|s, key| member(s, key, &mut t))?;
    Some(t)
}

/// `_meta` as [`Meta`].
fn meta(s: &mut Scanner<'_>, depth: usize) -> Option<Meta> {
    object_or_default(s, depth, |s, key, m: &mut Meta| {
        match meta_key(key) {
            MetaKey::ClientInfo => m.client_info = Some(client(s, depth + 1)?),
            MetaKey::ProtocolVersion => m.protocol_version = text(s, depth + 1)?,
            MetaKey::IdempotencyKey => {
                m.idempotency_key = s.word("null").is_none();
                if m.idempotency_key {
                    s.skip(depth + 1)?;
                }
            }
            MetaKey::Other => s.skip(depth + 1)?,
        }
        Some(())
    })
}

/// A `clientInfo`: its `name` and `version` where they are strings.
fn client(s: &mut Scanner<'_>, depth: usize) -> Option<ClientId> {
    object_or_default(s, depth, |s, key, c: &mut ClientId| {
        match client_key(key) {
            ClientKey::Name => c.name = text(s, depth + 1)?,
            ClientKey::Version => c.version = text(s, depth + 1)?,
            ClientKey::Other => s.skip(depth + 1)?,
        }
        Some(())
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The definition the fast path is held to (the messages as a `Value` reads them, each
    /// request's `params` by `Params::of`).
    fn by_serde(body: &str) -> Option<(Vec<Message<Box<Params>>>, bool)> {
        super::super::requests_by_value(body.as_bytes())
    }

    fn read(body: &str) -> Option<(Vec<Message<Box<Params>>>, bool)> {
        super::super::parse_requests(body.as_bytes())
    }

    #[test]
    fn a_plain_tools_call_is_read_without_serde() {
        let body = r#"{"jsonrpc": "2.0", "id": 400, "method": "tools/call", "params": {"name": "test_simple_text", "arguments": {"b": [1, -2, true, null], "a": {"x": "y"}}, "_meta": {"mcp-triage/idempotencyKey": "k-1", "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"}, "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}"#;
        let fast = read_one(body)
            .expect("the common shape")
            .expect("a message");
        let Message::Request { id, method, params } = &fast else {
            panic!("a request: {fast:?}")
        };
        assert_eq!((id, method.as_str()), (&Value::from(400), "tools/call"));
        assert_eq!(params.name.as_deref(), Some("test_simple_text"));
        assert_eq!(
            params.arguments,
            Some(serde_json::json!({"a": {"x": "y"}, "b": [1, -2, true, null]}))
        );
        assert!(params.meta.idempotency_key);
        assert_eq!(params.meta.protocol_version.as_deref(), Some("2026-07-28"));
        let c = params.meta.client_info.as_ref().unwrap();
        assert_eq!(
            (c.name.as_deref(), c.version.as_deref()),
            (Some("c"), Some("1"))
        );
        assert_eq!(read(body), by_serde(body));
    }

    #[test]
    fn other_shapes_are_left_to_serde() {
        for body in [
            r#"[{"id":1,"method":"a"}]"#,
            r#"{"id":1,"method":"a\/b"}"#,
            r#"{"id":1.5,"method":"a"}"#,
            r#"{"id":-0,"method":"a"}"#,
            r#"{"id":12345678901234567890,"method":"a"}"#,
            r#"{"id":1,"method":"a","params":[1]}"#,
            r#"{"id":1,"method":"a"} x"#,
            r#"{"id":1,"method":"a",}"#,
        ] {
            assert_eq!(read_one(body), None, "{body}");
            assert_eq!(read(body), by_serde(body), "{body}");
        }
    }

    #[test]
    fn a_null_idempotency_key_is_no_key() {
        let body = r#"{"id":1,"method":"tools/call","params":{"_meta":{"mcp-triage/idempotencyKey":null}}}"#;
        assert!(read_one(body).is_some());
        assert_eq!(read(body), by_serde(body));
        let Some((m, _)) = read(body) else { panic!() };
        let Message::Request { params, .. } = &m[0] else {
            panic!()
        };
        assert!(!params.meta.idempotency_key);
    }

    const NAMES: &[&str] = &[
        "jsonrpc",
        "id",
        "method",
        "params",
        "result",
        "error",
        "name",
        "arguments",
        "taskId",
        "protocolVersion",
        "clientInfo",
        "version",
        "_meta",
        "inputResponses",
        "requestState",
        "io.modelcontextprotocol/clientInfo",
        "io.modelcontextprotocol/protocolVersion",
        "mcp-triage/idempotencyKey",
        "x",
    ];

    /// JSON text: mostly the common shape, sometimes not (escapes, fractions, `-0`, long
    /// integers, control characters), with any white space between tokens.
    fn any_json() -> impl Strategy<Value = String> {
        let scalar = prop_oneof![
            "\"[a-z/.-]{0,8}\"",
            Just(r#""e\"sc""#.to_string()),
            Just("\"tab\there\"".to_string()),
            "-?[1-9][0-9]{0,4}",
            Just("0".to_string()),
            Just("-0".to_string()),
            Just("1.5".to_string()),
            Just("2e3".to_string()),
            Just("123456789012345678901".to_string()),
            Just("true".to_string()),
            Just("false".to_string()),
            Just("null".to_string()),
        ];
        scalar.prop_recursive(5, 48, 6, |inner| {
            let ws = prop_oneof![Just(""), Just(" "), Just("\n\t ")];
            prop_oneof![
                (proptest::collection::vec(inner.clone(), 0..4), ws.clone())
                    .prop_map(|(items, ws)| format!("[{ws}{}{ws}]", items.join(","))),
                (
                    proptest::collection::vec((proptest::sample::select(NAMES), inner), 0..6),
                    ws
                )
                    .prop_map(|(members, ws)| {
                        let inner: Vec<String> = members
                            .iter()
                            .map(|(k, v)| format!("{ws}\"{k}\"{ws}:{ws}{v}{ws}"))
                            .collect();
                        format!("{{{}}}", inner.join(","))
                    }),
            ]
        })
    }

    /// A message object whose members are drawn from the names the readers look for.
    fn any_message() -> impl Strategy<Value = String> {
        let member = (proptest::sample::select(NAMES), any_json());
        (proptest::collection::vec(member, 0..7), any::<bool>()).prop_map(|(members, tail)| {
            let inner: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("\"{k}\": {v}"))
                .collect();
            format!("{{{}}}{}", inner.join(", "), if tail { "\n" } else { "" })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn generated_bodies_are_read_as_the_serde_path_reads_them(body in any_message()) {
            prop_assert_eq!(read(&body), by_serde(&body));
        }
    }
}
