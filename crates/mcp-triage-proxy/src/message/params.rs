//! A request's `params` as the observer reads them ([`Params`]): defined by [`Params::of`],
//! which reads them from a `Value`; the body's text of the common shape is read into the same
//! `Params` without a `Value` (`message::fast`, which the tests hold to `Params::of`).
//!
//! Why: the observer reads a handful of members of `params` (a `tools/call`'s `name` and
//! `arguments`, three members of `_meta`, an `initialize`'s `clientInfo`, ...). Building the
//! whole of `params` as a `Value` first, then looking each member up in its maps and dropping
//! it, was most of what reading a `tools/call` cost; bodies of another shape (escapes, batches,
//! fractions) are rare enough to take that way.

use mcp_triage_wire::meta::{
    CLIENT_INFO as META_CLIENT_INFO, IDEMPOTENCY_KEY, PROTOCOL_VERSION as META_PROTOCOL_VERSION,
};
use serde_json::Value;

use crate::record::ClientId;

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
