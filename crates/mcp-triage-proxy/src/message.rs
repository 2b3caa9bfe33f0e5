//! Client → server JSON-RPC messages as the observer reads them from a request body
//! ([`parse_messages`]): one message or a batch, each a request, a notification or a response.
//!
//! Why a visitor instead of a `serde_json::Value`: the observer needs four members of each
//! message, and building the whole body as a `Value` (a map per object, a string per key) was
//! about 7k instructions per `tools/call` (`bench/proxy-overhead.sh --instructions`). The
//! visitor reads the member names without allocating, keeps `id`, `method` and `params` as
//! values, and skips everything else unbuilt. What it accepts is what the `Value` reading
//! accepted: the same JSON (serde_json's parser either way), the last of duplicate members
//! wins, and a message is judged by the same rules ([`message_of`]).

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use serde_json::Value;

/// A client → server JSON-RPC message, as far as the observer needs it.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request (method and id).
    Request {
        /// The id as sent.
        id: Value,
        /// The method.
        method: String,
        /// `params`, or null.
        params: Value,
    },
    /// A notification (method, no id).
    Notification {
        /// The method.
        method: String,
    },
    /// A response to a server request (id and result or error).
    Response {
        /// The id it answers.
        id: Value,
        /// True for an `error` response.
        is_error: bool,
    },
}

/// Parses a request body: one message or a batch. `None` when it is not JSON-RPC at all.
///
/// A body that is UTF-8 (every JSON-RPC body is) is checked once, word by word, and read as
/// text: read as bytes, serde_json checked every string it parsed on its own, about 700
/// instructions per `tools/call`. Anything else is read as bytes as before, so that bytes
/// serde_json never checks (inside skipped members) are still accepted as they were.
pub fn parse_messages(body: &[u8]) -> Option<(Vec<Message>, bool)> {
    let read = match mcp_triage_core::scan::utf8(body) {
        Ok(text) => read_body(&mut serde_json::Deserializer::from_str(text)),
        Err(_) => read_body(&mut serde_json::Deserializer::from_slice(body)),
    }?;
    match read {
        Body::One(m) => m.map(|m| (vec![m], false)),
        Body::Batch(items) => {
            let msgs: Option<Vec<Message>> = items.into_iter().collect();
            msgs.filter(|m| !m.is_empty()).map(|m| (m, true))
        }
    }
}

/// The whole body as a message or a batch, with nothing after it.
fn read_body<'de, R: serde_json::de::Read<'de>>(
    de: &mut serde_json::Deserializer<R>,
) -> Option<Body> {
    let read = de.deserialize_any(BodyVisitor).ok()?;
    de.end().ok()?;
    Some(read)
}

/// The members of one message object that decide what it is.
#[derive(Default)]
struct Members {
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
    has_result: bool,
    has_error: bool,
}

/// What the members make of a message: a request has a string `method` and an `id` (any,
/// even null), a notification a string `method` and no `id`, a response an `id` and a
/// `result` or an `error`; anything else is no JSON-RPC message.
fn message_of(m: Members) -> Option<Message> {
    match (m.method, m.id) {
        (Some(Value::String(method)), Some(id)) => Some(Message::Request {
            id,
            method,
            params: m.params.unwrap_or(Value::Null),
        }),
        (Some(Value::String(method)), None) => Some(Message::Notification { method }),
        (None, Some(id)) if m.has_result || m.has_error => Some(Message::Response {
            id,
            is_error: m.has_error,
        }),
        _ => None,
    }
}

enum Body {
    /// A single message (None: a JSON value that is no message).
    One(Option<Message>),
    /// A batch; None for an element that is no message.
    Batch(Vec<Option<Message>>),
}

/// The body: an object is one message, an array a batch, any other JSON no message.
struct BodyVisitor;

impl<'de> Visitor<'de> for BodyVisitor {
    type Value = Body;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC message or batch")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Body, A::Error> {
        MessageVisitor.visit_map(map).map(Body::One)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Body, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(m) = seq.next_element_seed(MessageSeed)? {
            items.push(m);
        }
        Ok(Body::Batch(items))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Body, E> {
        Ok(Body::One(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Body, E> {
        Ok(Body::One(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Body, E> {
        Ok(Body::One(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Body, E> {
        Ok(Body::One(None))
    }
    fn visit_str<E>(self, _: &str) -> Result<Body, E> {
        Ok(Body::One(None))
    }
    fn visit_unit<E>(self) -> Result<Body, E> {
        Ok(Body::One(None))
    }
}

/// One batch element: a message object, or any other JSON (no message).
struct MessageSeed;

impl<'de> DeserializeSeed<'de> for MessageSeed {
    type Value = Option<Message>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Message>, D::Error> {
        d.deserialize_any(MessageVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Option<Message>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Message>, A::Error> {
        let mut m = Members::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Id => m.id = Some(map.next_value()?),
                Key::Method => m.method = Some(map.next_value()?),
                Key::Params => m.params = Some(map.next_value()?),
                Key::Result => {
                    map.next_value::<IgnoredAny>()?;
                    m.has_result = true;
                }
                Key::Error => {
                    map.next_value::<IgnoredAny>()?;
                    m.has_error = true;
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(message_of(m))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Message>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Option<Message>, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Option<Message>, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Option<Message>, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Option<Message>, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Option<Message>, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Option<Message>, E> {
        Ok(None)
    }
}

/// A member name, read without allocating (escaped names arrive unescaped in a scratch
/// buffer, so `"\u0069d"` is `id`, as in a `Value`).
enum Key {
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E>(self, s: &str) -> Result<Key, E> {
                Ok(match s {
                    "id" => Key::Id,
                    "method" => Key::Method,
                    "params" => Key::Params,
                    "result" => Key::Result,
                    "error" => Key::Error,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// The reading this module replaced, kept as the definition the visitor is held to.
    fn by_value(body: &[u8]) -> Option<(Vec<Message>, bool)> {
        fn one(v: Value) -> Option<Message> {
            let Value::Object(mut o) = v else { return None };
            message_of(Members {
                id: o.remove("id"),
                method: o.remove("method"),
                params: o.remove("params"),
                has_result: o.contains_key("result"),
                has_error: o.contains_key("error"),
            })
        }
        match serde_json::from_slice::<Value>(body).ok()? {
            Value::Array(items) => {
                let msgs: Option<Vec<Message>> = items.into_iter().map(one).collect();
                msgs.filter(|m| !m.is_empty()).map(|m| (m, true))
            }
            other => one(other).map(|m| (vec![m], false)),
        }
    }

    #[test]
    fn messages_are_read_as_a_value_reads_them() {
        let bodies: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a","arguments":{}}}"#,
            br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","id":"s-1","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}"#,
            br#"{"jsonrpc":"2.0","id":7,"result":null}"#,
            br#"{"jsonrpc":"2.0","id":7}"#,
            br#"{"id":1,"method":5}"#,
            br#"{"id":1,"method":"a","method":"b","params":1,"params":[2]}"#,
            br#"{"\u0069d":1,"m\u0065thod":"x\ny"}"#,
            br#"[{"id":1,"method":"a"},{"method":"n"},{"id":2,"result":{}}]"#,
            br#"[{"id":1,"method":"a"},3]"#,
            br#"[]"#,
            br#"[[{"id":1,"method":"a"}]]"#,
            br#"3"#,
            br#""text""#,
            br#"null"#,
            br#"{"id":1,"method":"a"} trailing"#,
            br#"{"id":1,"method":"a""#,
            b"",
            b"\xff",
            br#"  {"id":1e400,"method":"a"}  "#,
        ];
        for body in bodies {
            assert_eq!(
                parse_messages(body),
                by_value(body),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        let (m, batch) = parse_messages(bodies[0]).unwrap();
        assert!(!batch);
        assert_eq!(
            m[0],
            Message::Request {
                id: json!(3),
                method: "tools/call".into(),
                params: json!({"name": "a", "arguments": {}}),
            }
        );
    }

    fn any_member() -> impl Strategy<Value = (String, Value)> {
        let name = prop_oneof![
            Just("id".to_string()),
            Just("method".to_string()),
            Just("params".to_string()),
            Just("result".to_string()),
            Just("error".to_string()),
            "[a-z]{1,3}",
        ];
        let value = prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::from),
            "[a-z/]{0,6}".prop_map(Value::from),
            Just(json!({"a": [1, {"b": null}]})),
        ];
        (name, value)
    }

    fn object_text(members: &[(String, Value)]) -> String {
        let inner: Vec<String> = members
            .iter()
            .map(|(k, v)| format!("{}:{v}", Value::from(k.as_str())))
            .collect();
        format!("{{{}}}", inner.join(","))
    }

    proptest! {
        #[test]
        fn generated_bodies_are_read_as_a_value_reads_them(
            objects in proptest::collection::vec(proptest::collection::vec(any_member(), 0..5), 1..4),
            batch in any::<bool>(),
        ) {
            let texts: Vec<String> = objects.iter().map(|o| object_text(o)).collect();
            let body = if batch { format!("[{}]", texts.join(",")) } else { texts[0].clone() };
            prop_assert_eq!(parse_messages(body.as_bytes()), by_value(body.as_bytes()));
        }
    }
}
