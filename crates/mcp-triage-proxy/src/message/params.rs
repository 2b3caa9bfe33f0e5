//! A request's `params` as the observer reads them ([`Params`]): read from the body's text by a
//! visitor ([`crate::message::parse_requests`]), or from a `Value` ([`Params::of`]).
//!
//! Why: the observer reads a handful of members of `params` (a `tools/call`'s `name` and
//! `arguments`, three members of `_meta`, an `initialize`'s `clientInfo`, ...). Building the
//! whole of `params` as a `Value` first, then looking each member up in its maps and dropping
//! it, was most of what reading a `tools/call` cost. The visitor keeps those members only;
//! every other member is still parsed as a `Value` parses it (numbers range-checked, escapes
//! checked), only not built, so the same bodies are accepted and refused.

use std::fmt;

use serde::de::{Deserialize, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use serde_json::Value;

use crate::observe::IDEMPOTENCY_KEY;
use crate::record::ClientId;

/// The `_meta` key of the client's identity (2026-07-28 requests carry it per request).
const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The `_meta` key of the request's protocol revision.
const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// What the observer reads of a request's `params`; all empty when `params` is missing or no
/// object. Where members repeat, the last one counts, as in a `Value`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    /// `name`, when a string (a `tools/call`'s tool).
    pub name: Option<String>,
    /// `arguments`, any JSON (a `tools/call`'s).
    pub arguments: Option<Value>,
    /// `taskId`, when a string (a `tasks/*` request's).
    pub task_id: Option<String>,
    /// `protocolVersion`, when a string (an `initialize`'s).
    pub protocol_version: Option<String>,
    /// `clientInfo` when present: its `name` and `version` where they are strings.
    pub client_info: Option<ClientId>,
    /// `inputResponses` or `requestState` is present: the call is an MRTR round.
    pub mrtr_round: bool,
    /// The members of `_meta` the observer reads.
    pub meta: Meta,
}

/// What the observer reads of `params._meta`; all empty when it is missing or no object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Meta {
    /// `io.modelcontextprotocol/clientInfo` when present (as [`Params::client_info`]).
    pub client_info: Option<ClientId>,
    /// `io.modelcontextprotocol/protocolVersion`, when a string.
    pub protocol_version: Option<String>,
    /// `mcp-triage/idempotencyKey` is present and not null.
    pub idempotency_key: bool,
}

impl Params {
    /// The members of a `params` value (what the stdio wrapper and the tests have).
    pub fn of(params: &Value) -> Params {
        let meta = params.get("_meta");
        Params {
            name: text(params, "name"),
            arguments: params.get("arguments").cloned(),
            task_id: text(params, "taskId"),
            protocol_version: text(params, "protocolVersion"),
            client_info: params.get("clientInfo").map(client_of),
            mrtr_round: params.get("inputResponses").is_some()
                || params.get("requestState").is_some(),
            meta: Meta {
                client_info: meta.and_then(|m| m.get(META_CLIENT_INFO)).map(client_of),
                protocol_version: meta.and_then(|m| text(m, META_PROTOCOL_VERSION)),
                idempotency_key: meta
                    .and_then(|m| m.get(IDEMPOTENCY_KEY))
                    .is_some_and(|k| !k.is_null()),
            },
        }
    }
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// A `clientInfo` value: its `name` and `version` where they are strings.
fn client_of(v: &Value) -> ClientId {
    ClientId {
        name: text(v, "name"),
        version: text(v, "version"),
        user_agent: None,
    }
}

/// The visitor methods of the JSON scalars, each giving `$value` (a value that is no object
/// reads as an empty one); `but_unit` leaves `visit_unit` to the visitor, `but_str_and_unit`
/// `visit_str` too.
macro_rules! scalars {
    ($value:expr) => {
        scalars!($value, but_unit);
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
    ($value:expr, but_unit) => {
        scalars!($value, but_str_and_unit);
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
    ($value:expr, but_str_and_unit) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
}

/// The member names of `params` the observer reads.
pub(super) enum ParamKey {
    Name,
    Arguments,
    TaskId,
    ProtocolVersion,
    ClientInfo,
    Meta,
    MrtrRound,
    Other,
}

pub(super) fn param_key(name: &str) -> ParamKey {
    match name {
        "name" => ParamKey::Name,
        "arguments" => ParamKey::Arguments,
        "taskId" => ParamKey::TaskId,
        "protocolVersion" => ParamKey::ProtocolVersion,
        "clientInfo" => ParamKey::ClientInfo,
        "_meta" => ParamKey::Meta,
        "inputResponses" | "requestState" => ParamKey::MrtrRound,
        _ => ParamKey::Other,
    }
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Params, D::Error> {
        d.deserialize_any(ParamsVisitor)
    }
}

struct ParamsVisitor;

impl<'de> Visitor<'de> for ParamsVisitor {
    type Value = Params;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON-RPC params")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params, A::Error> {
        let mut p = Params::default();
        while let Some(key) = map.next_key_seed(KeyOf(param_key))? {
            match key {
                ParamKey::Name => p.name = map.next_value::<Text>()?.0,
                ParamKey::Arguments => p.arguments = Some(map.next_value()?),
                ParamKey::TaskId => p.task_id = map.next_value::<Text>()?.0,
                ParamKey::ProtocolVersion => p.protocol_version = map.next_value::<Text>()?.0,
                ParamKey::ClientInfo => p.client_info = Some(map.next_value::<Client>()?.0),
                ParamKey::Meta => p.meta = map.next_value()?,
                ParamKey::MrtrRound => {
                    map.next_value::<Checked>()?;
                    p.mrtr_round = true;
                }
                ParamKey::Other => {
                    map.next_value::<Checked>()?;
                }
            }
        }
        Ok(p)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Params, A::Error> {
        check_seq(seq).map(|()| Params::default())
    }

    scalars!(Params::default());
}

/// The member names of `_meta` the observer reads.
pub(super) enum MetaKey {
    ClientInfo,
    ProtocolVersion,
    IdempotencyKey,
    Other,
}

pub(super) fn meta_key(name: &str) -> MetaKey {
    match name {
        META_CLIENT_INFO => MetaKey::ClientInfo,
        META_PROTOCOL_VERSION => MetaKey::ProtocolVersion,
        IDEMPOTENCY_KEY => MetaKey::IdempotencyKey,
        _ => MetaKey::Other,
    }
}

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Meta, D::Error> {
        d.deserialize_any(MetaVisitor)
    }
}

struct MetaVisitor;

impl<'de> Visitor<'de> for MetaVisitor {
    type Value = Meta;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("_meta")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Meta, A::Error> {
        let mut m = Meta::default();
        while let Some(key) = map.next_key_seed(KeyOf(meta_key))? {
            match key {
                MetaKey::ClientInfo => m.client_info = Some(map.next_value::<Client>()?.0),
                MetaKey::ProtocolVersion => m.protocol_version = map.next_value::<Text>()?.0,
                MetaKey::IdempotencyKey => m.idempotency_key = map.next_value::<NotNull>()?.0,
                MetaKey::Other => {
                    map.next_value::<Checked>()?;
                }
            }
        }
        Ok(m)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Meta, A::Error> {
        check_seq(seq).map(|()| Meta::default())
    }

    scalars!(Meta::default());
}

/// A `clientInfo`: its `name` and `version` where they are strings.
struct Client(ClientId);

/// The member names of a `clientInfo` the observer reads.
pub(super) enum ClientKey {
    Name,
    Version,
    Other,
}

pub(super) fn client_key(name: &str) -> ClientKey {
    match name {
        "name" => ClientKey::Name,
        "version" => ClientKey::Version,
        _ => ClientKey::Other,
    }
}

impl<'de> Deserialize<'de> for Client {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Client, D::Error> {
        d.deserialize_any(ClientVisitor)
    }
}

struct ClientVisitor;

impl<'de> Visitor<'de> for ClientVisitor {
    type Value = Client;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("clientInfo")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Client, A::Error> {
        let mut c = ClientId::default();
        while let Some(key) = map.next_key_seed(KeyOf(client_key))? {
            match key {
                ClientKey::Name => c.name = map.next_value::<Text>()?.0,
                ClientKey::Version => c.version = map.next_value::<Text>()?.0,
                ClientKey::Other => {
                    map.next_value::<Checked>()?;
                }
            }
        }
        Ok(Client(c))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Client, A::Error> {
        check_seq(seq).map(|()| Client(ClientId::default()))
    }

    scalars!(Client(ClientId::default()));
}

/// A member name, told apart by `F` as it is read (no `String` for it).
struct KeyOf<F>(F);

impl<'de, K, F: FnOnce(&str) -> K> DeserializeSeed<'de> for KeyOf<F> {
    type Value = K;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<K, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, K, F: FnOnce(&str) -> K> Visitor<'de> for KeyOf<F> {
    type Value = K;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, s: &str) -> Result<K, E> {
        Ok((self.0)(s))
    }
}

/// Any JSON, a string kept (`Some`), anything else checked and left (`None`): `as_str`.
struct Text(Option<String>);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        d.deserialize_any(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON")
    }

    fn visit_str<E>(self, s: &str) -> Result<Text, E> {
        Ok(Text(Some(s.to_owned())))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Text, A::Error> {
        check_map(map).map(|()| Text(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Text, A::Error> {
        check_seq(seq).map(|()| Text(None))
    }

    fn visit_unit<E>(self) -> Result<Text, E> {
        Ok(Text(None))
    }

    scalars!(Text(None), but_str_and_unit);
}

/// Any JSON: whether it is something other than `null`.
struct NotNull(bool);

impl<'de> Deserialize<'de> for NotNull {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<NotNull, D::Error> {
        d.deserialize_any(NotNullVisitor)
    }
}

struct NotNullVisitor;

impl<'de> Visitor<'de> for NotNullVisitor {
    type Value = NotNull;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON")
    }

    fn visit_unit<E>(self) -> Result<NotNull, E> {
        Ok(NotNull(false))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<NotNull, A::Error> {
        check_map(map).map(|()| NotNull(true))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<NotNull, A::Error> {
        check_seq(seq).map(|()| NotNull(true))
    }

    scalars!(NotNull(true), but_unit);
}

/// Any JSON, parsed as a `Value` parses it (numbers in range, strings with valid escapes,
/// nesting within serde_json's depth limit) and kept nowhere. Not serde's `IgnoredAny`:
/// serde_json skips that without reading its numbers, so a body a `Value` refuses (a member
/// `1e400`) would be accepted.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Checked, D::Error> {
        d.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Checked, A::Error> {
        check_map(map).map(|()| Checked)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Checked, A::Error> {
        check_seq(seq).map(|()| Checked)
    }

    scalars!(Checked);
}

/// Reads every member of an object as [`Checked`].
fn check_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_key::<Checked>()?.is_some() {
        map.next_value::<Checked>()?;
    }
    Ok(())
}

/// Reads every element of an array as [`Checked`].
fn check_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<Checked>()?.is_some() {}
    Ok(())
}
