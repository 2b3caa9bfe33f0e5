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
//!
//! The HTTP proxy reads `params` as [`Params`] too ([`parse_requests`]): the members the
//! observer reads of them. A body of the common shape (nearly every one) is read by
//! `message::fast` without serde and without a `Value`; the visitor and a `Value` for the
//! whole body cost about 3.5k instructions per `tools/call`. Any other body is read as here
//! and its `params` by [`Params::of`], which defines what the fast reader must give.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde::Deserializer;
use serde_json::Value;

mod fast;
mod params;
pub use params::{Meta, Params};

/// A client → server JSON-RPC message, as far as the observer needs it: its `params` as a
/// `Value` ([`parse_messages`]) or as the observer's [`Params`] ([`parse_requests`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Message<P = Value> {
    /// A request (method and id).
    Request {
        /// The id as sent.
        id: Value,
        /// The method.
        method: String,
        /// `params`, or null (`Params::default()`).
        params: P,
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
    parse_as(body)
}

/// [`parse_messages`] with each request's `params` read as [`Params`]: the same messages,
/// accepted and refused alike. Boxed: `Params` is a few hundred bytes, and a message moves
/// from the parser into a list and on into the observer's call.
///
/// A body of the common shape (one object, no escapes, short integers) is read without serde
/// (`message::fast`, held equal to the rest by the tests); anything else is read by
/// [`parse_messages`] and each request's `params` by [`Params::of`], which defines them.
pub fn parse_requests(body: &[u8]) -> Option<(Vec<Message<Box<Params>>>, bool)> {
    if let Ok(text) = mcp_triage_core::scan::utf8(body) {
        if let Some(read) = fast::read_one(text) {
            return read.map(|m| (vec![m], false));
        }
    }
    requests_by_value(body)
}

/// [`parse_requests`] for any body: the messages as a `Value` reads them, each request's
/// `params` read by [`Params::of`]. What the fast reader is held to.
fn requests_by_value(body: &[u8]) -> Option<(Vec<Message<Box<Params>>>, bool)> {
    let (messages, batch) = parse_messages(body)?;
    Some((messages.into_iter().map(with_params).collect(), batch))
}

/// A message whose request `params` are read as [`Params`] from their `Value`.
fn with_params(m: Message) -> Message<Box<Params>> {
    match m {
        Message::Request { id, method, params } => Message::Request {
            id,
            method,
            params: Box::new(Params::of(&params)),
        },
        Message::Notification { method } => Message::Notification { method },
        Message::Response { id, is_error } => Message::Response { id, is_error },
    }
}

/// The messages of a body, with `params` read as `P` (a missing `params` is `P::default()`).
fn parse_as<P: DeserializeOwned + Default>(body: &[u8]) -> Option<(Vec<Message<P>>, bool)> {
    let read = match mcp_triage_core::scan::utf8(body) {
        Ok(text) => read_body(&mut serde_json::Deserializer::from_str(text)),
        Err(_) => read_body(&mut serde_json::Deserializer::from_slice(body)),
    }?;
    match read {
        Body::One(m) => m.map(|m| (vec![m], false)),
        Body::Batch(items) => {
            let msgs: Option<Vec<Message<P>>> = items.into_iter().collect();
            msgs.filter(|m| !m.is_empty()).map(|m| (m, true))
        }
    }
}

/// The whole body as a message or a batch, with nothing after it.
fn read_body<'de, R: serde_json::de::Read<'de>, P: DeserializeOwned + Default>(
    de: &mut serde_json::Deserializer<R>,
) -> Option<Body<P>> {
    let read = de.deserialize_any(BodyVisitor(PhantomData)).ok()?;
    de.end().ok()?;
    Some(read)
}

/// The members of one message object that decide what it is.
struct Members<P> {
    id: Option<Value>,
    method: Option<Value>,
    params: Option<P>,
    has_result: bool,
    has_error: bool,
}

impl<P> Default for Members<P> {
    fn default() -> Self {
        Members {
            id: None,
            method: None,
            params: None,
            has_result: false,
            has_error: false,
        }
    }
}

/// What the members make of a message: a request has a string `method` and an `id` (any,
/// even null), a notification a string `method` and no `id`, a response an `id` and a
/// `result` or an `error`; anything else is no JSON-RPC message.
fn message_of<P: Default>(m: Members<P>) -> Option<Message<P>> {
    match (m.method, m.id) {
        (Some(Value::String(method)), Some(id)) => Some(Message::Request {
            id,
            method,
            params: m.params.unwrap_or_default(),
        }),
        (Some(Value::String(method)), None) => Some(Message::Notification { method }),
        (None, Some(id)) if m.has_result || m.has_error => Some(Message::Response {
            id,
            is_error: m.has_error,
        }),
        _ => None,
    }
}

enum Body<P> {
    /// A single message (None: a JSON value that is no message).
    One(Option<Message<P>>),
    /// A batch; None for an element that is no message.
    Batch(Vec<Option<Message<P>>>),
}

/// The body: an object is one message, an array a batch, any other JSON no message.
struct BodyVisitor<P>(PhantomData<P>);

impl<'de, P: DeserializeOwned + Default> Visitor<'de> for BodyVisitor<P> {
    type Value = Body<P>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC message or batch")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Body<P>, A::Error> {
        MessageVisitor(PhantomData).visit_map(map).map(Body::One)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Body<P>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(m) = seq.next_element_seed(MessageSeed(PhantomData))? {
            items.push(m);
        }
        Ok(Body::Batch(items))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Body<P>, E> {
        Ok(Body::One(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Body<P>, E> {
        Ok(Body::One(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Body<P>, E> {
        Ok(Body::One(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Body<P>, E> {
        Ok(Body::One(None))
    }
    fn visit_str<E>(self, _: &str) -> Result<Body<P>, E> {
        Ok(Body::One(None))
    }
    fn visit_unit<E>(self) -> Result<Body<P>, E> {
        Ok(Body::One(None))
    }
}

/// One batch element: a message object, or any other JSON (no message).
struct MessageSeed<P>(PhantomData<P>);

impl<'de, P: DeserializeOwned + Default> DeserializeSeed<'de> for MessageSeed<P> {
    type Value = Option<Message<P>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Message<P>>, D::Error> {
        d.deserialize_any(MessageVisitor(PhantomData))
    }
}

struct MessageVisitor<P>(PhantomData<P>);

impl<'de, P: DeserializeOwned + Default> Visitor<'de> for MessageVisitor<P> {
    type Value = Option<Message<P>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Message<P>>, A::Error> {
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

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Message<P>>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Option<Message<P>>, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Option<Message<P>>, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Option<Message<P>>, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Option<Message<P>>, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Option<Message<P>>, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Option<Message<P>>, E> {
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
            br#"{"id":1,"method":"tools/call","params":{"name":"t","arguments":{"b":1,"a":[1]},"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"c","version":2},"mcp-triage/idempotencyKey":null,"io.modelcontextprotocol/protocolVersion":"v"}}}"#,
            br#"{"id":1,"method":"tools/call","params":{"name":"a","name":7,"_meta":{"mcp-triage/idempotencyKey":"k"},"_meta":[]}}"#,
            br#"{"id":1,"method":"initialize","params":{"clientInfo":{"name":"c","name":"d","x":{"y":[true]}},"protocolVersion":"p"}}"#,
            br#"{"id":1,"method":"tasks/get","params":{"taskId":"t1","inputResponses":{},"requestState":null}}"#,
            br#"{"id":1,"method":"tools/call","params":{"\u006eame":"t","_meta":{"mcp-triage/idempotencyKey":0}}}"#,
            br#"{"id":1,"method":"tools/call","params":{"name":"t","other":1e400}}"#,
            br#"{"id":1,"method":"tools/call","params":{"_meta":{"x":"\ud800"}}}"#,
            br#"{"id":1,"method":"tools/call","params":[1,{"a":1e400}]}"#,
            br#"{"id":1,"method":"tools/call","params":[{"name":"t"}]}"#,
            br#"{"id":1,"method":"tools/call","params":"text"}"#,
            br#"{"id":1,"method":"tools/call","params":null}"#,
            br#"{"id":1,"method":"tools/call","params":{"clientInfo":5,"_meta":{"io.modelcontextprotocol/clientInfo":[]}}}"#,
        ];
        for body in bodies {
            assert_eq!(
                parse_messages(body),
                by_value(body),
                "{}",
                String::from_utf8_lossy(body)
            );
            assert_eq!(
                parse_requests(body),
                requests_by_value(body),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        let (m, _) = parse_requests(bodies[22]).unwrap();
        let Message::Request { params, .. } = &m[0] else {
            panic!("a request")
        };
        assert_eq!(params.name.as_deref(), Some("t"));
        assert_eq!(params.arguments, Some(json!({"a": [1], "b": 1})));
        assert_eq!(
            params.meta.client_info.as_ref().unwrap().name.as_deref(),
            Some("c")
        );
        assert_eq!(params.meta.client_info.as_ref().unwrap().version, None);
        assert_eq!(params.meta.protocol_version.as_deref(), Some("v"));
        assert!(!params.meta.idempotency_key);
        assert!(parse_requests(bodies[27]).is_none(), "1e400 is refused");
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

    /// Any JSON as a `params` (or a member of it) may be: the members the observer reads, at
    /// two levels, among others.
    fn any_params() -> impl Strategy<Value = Value> {
        let name = prop_oneof![
            Just("name".to_string()),
            Just("version".to_string()),
            Just("arguments".to_string()),
            Just("taskId".to_string()),
            Just("protocolVersion".to_string()),
            Just("clientInfo".to_string()),
            Just("_meta".to_string()),
            Just("inputResponses".to_string()),
            Just("requestState".to_string()),
            Just("io.modelcontextprotocol/clientInfo".to_string()),
            Just("io.modelcontextprotocol/protocolVersion".to_string()),
            Just("mcp-triage/idempotencyKey".to_string()),
            "[a-z]{1,3}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[a-z/]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 5, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                proptest::collection::vec((name.clone(), inner), 0..5)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
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
            prop_assert_eq!(
                parse_requests(body.as_bytes()),
                requests_by_value(body.as_bytes())
            );
        }

        /// `params` of every shape are read as `Params::of` reads their `Value`, duplicate
        /// members included (the last one counts).
        #[test]
        fn generated_params_are_read_as_from_their_value(
            params in any_params(),
            repeat in proptest::collection::vec(any_params(), 0..2),
        ) {
            let mut text = params.to_string();
            // a repeated member: `{"a":1}` becomes `{"a":1,"_meta":…}`
            if let (Some(extra), Some(open)) = (repeat.first(), text.strip_suffix('}')) {
                if open.len() > 1 {
                    text = format!("{open},\"_meta\":{extra},\"name\":{extra}}}");
                }
            }
            let body = format!(r#"{{"id":1,"method":"m","params":{text}}}"#);
            let read = parse_requests(body.as_bytes());
            prop_assert_eq!(read, requests_by_value(body.as_bytes()));
        }
    }
}
