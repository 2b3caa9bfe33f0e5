//! The record of one logical call: what a client sent, every attempt it made, what the retry
//! policy decided after each, and the final verdict.
//!
//! A [`CallRecord`] is a superset of the seed article's log structure (`client`,
//! `protocolVersion`, `scenario`, `method`, `postCount`, `httpStatuses`, `jsonrpc`, `resultType`,
//! `outcome`, `retryOrigin`), so a seed-era log reader keeps working. It is plain data: the client
//! fills it while calling, a proxy fills it from the exchanges it forwards, and both print it as
//! one JSON line. Its JSON Schema is `docs/record.schema.json`.
//!
//! Nothing here does I/O. Arguments are kept only as a hash and a size unless the caller opts in
//! ([`CallRecord::arguments`]), because tool arguments often carry personal data.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::verdict::{Layer, Outcome, StreamStats, Verdict, Warning};

/// Who re-sent a call (the seed's `retryOrigin`): a person reading a log must be able to tell an
/// automatic resend from a caller's deliberate one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RetryOrigin {
    /// A single logical call; any resends inside it are listed in `attempts`.
    #[default]
    None,
    /// The retry policy resent the request (more than one attempt in this record).
    Sdk,
    /// A library caller called again after an earlier record (its `retryOf` names it).
    BusinessLogic,
    /// A person re-ran the call by hand (`--retry-of ID`).
    Manual,
}

/// The JSON-RPC identity of the final attempt (seed `jsonrpc {id, errorCode}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct JsonRpcInfo {
    /// The request id of the final attempt (number or string as sent).
    pub id: Value,
    /// The JSON-RPC error code, when the final answer was an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<i64>,
}

/// What was decided after an attempt: the record's `decision.action` words.
///
/// Why a type: these words were strings written in a dozen places (the policy's, the task
/// driver's `poll` and `cancel`), so a misspelt one was a new action no reader knew. Each is
/// written once here; the record still holds the same words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DecisionAction {
    /// The attempt ended the call.
    Done,
    /// Send the call again (a new id).
    Resend,
    /// GET the stream again with `Last-Event-ID`.
    Resume,
    /// Start a new session, then resend once.
    Reinitialize,
    /// `tools/list` again, then resend once.
    RelistTools,
    /// Stop; the verdict stands.
    GiveUp,
    /// An MRTR input round follows.
    AnswerInput,
    /// Poll the task the call created (`tasks/get`).
    Poll,
    /// Cancel the task (`tasks/cancel`).
    Cancel,
}

impl DecisionAction {
    /// Every action, in the order above.
    pub const ALL: [DecisionAction; 9] = [
        DecisionAction::Done,
        DecisionAction::Resend,
        DecisionAction::Resume,
        DecisionAction::Reinitialize,
        DecisionAction::RelistTools,
        DecisionAction::GiveUp,
        DecisionAction::AnswerInput,
        DecisionAction::Poll,
        DecisionAction::Cancel,
    ];

    /// The record's word.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionAction::Done => "done",
            DecisionAction::Resend => "resend",
            DecisionAction::Resume => "resume",
            DecisionAction::Reinitialize => "reinitialize",
            DecisionAction::RelistTools => "relist_tools",
            DecisionAction::GiveUp => "give_up",
            DecisionAction::AnswerInput => "answer_input",
            DecisionAction::Poll => "poll",
            DecisionAction::Cancel => "cancel",
        }
    }
}

impl std::fmt::Display for DecisionAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for DecisionAction {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for DecisionAction {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// What the retry policy did after an attempt, in words a person can check against the rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// What was decided (see [`DecisionAction`]).
    pub action: DecisionAction,
    /// Milliseconds waited before the next attempt, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// One sentence: why.
    pub reason: String,
}

/// One HTTP exchange (or one stdio request/response pair) within a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptRecord {
    /// The JSON-RPC id this attempt used (a resend or an input round uses a new one).
    pub id: Value,
    /// What the attempt was: `call` (a `tools/call` POST), `resume` (GET with `Last-Event-ID`),
    /// `input_round` (a resend with `inputResponses`), `poll` (`tasks/get`), or a proxy's own kind.
    pub kind: String,
    /// The attempt this one repeats or continues (its index in `attempts`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_of: Option<usize>,
    /// HTTP status; absent for stdio or when no response head arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The response `Content-Type`, sanitised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// SSE stream counts, for event-stream responses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamStats>,
    /// The classifier's verdict for this attempt (see `docs/verdict.schema.json`).
    pub verdict: Verdict,
    /// Wall time of the attempt in milliseconds.
    pub duration_ms: u64,
    /// What the retry policy decided after this attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

/// The server as it introduced itself (`serverInfo` of `initialize`, or a modern discovery).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    /// The server's name, sanitised.
    pub name: String,
    /// The server's version, sanitised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// One logical `tools/call` (or other method) from the first attempt to the final verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRecord {
    /// The record format's version, so readers can tell future additions apart.
    pub record_version: u32,
    /// A unique id for this record, so a later call can name it in `retryOf`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_id: Option<String>,
    /// The client as `name@version`.
    pub client: String,
    /// The protocol revision used (`2026-07-28`, `2025-11-25`, ..., or `unknown`).
    pub protocol_version: String,
    /// The transport: `streamable-http`, `stdio`, or `proxy`.
    pub transport: String,
    /// The target as given (URL or command line), with credentials removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The kitchen scenario (`X-Kitchen-Scenario`) or `--scenario`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// The JSON-RPC method, e.g. `tools/call`.
    pub method: String,
    /// The tool name, for `tools/call`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// How many times the request itself was sent (seed field): first attempt, resends and
    /// input rounds. Setup requests (initialize, tools/list), answers to server requests,
    /// resumption GETs and attempts that could not connect (nothing left) are not counted.
    pub post_count: u32,
    /// The HTTP status of every attempt in `attempts`, in order (empty for stdio).
    pub http_statuses: Vec<u16>,
    /// The final attempt's JSON-RPC id and error code.
    pub jsonrpc: JsonRpcInfo,
    /// The final result's `resultType` (`complete`, `input_required`, `task`), or null.
    pub result_type: Option<String>,
    /// The final layer.
    pub layer: Layer,
    /// The final outcome.
    pub outcome: Outcome,
    /// Who resent (seed field).
    pub retry_origin: RetryOrigin,
    /// The record this call repeats, for `business_logic` and `manual` origins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_of: Option<String>,
    /// Every attempt, in order.
    pub attempts: Vec<AttemptRecord>,
    /// Input rounds answered (MRTR resends with `inputResponses`, or legacy server requests).
    pub rounds: u32,
    /// Wall time of the whole call in milliseconds.
    pub duration_ms: u64,
    /// The legacy `Mcp-Session-Id`, if one was used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The server's self-description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_info: Option<ServerInfo>,
    /// The final JSON-RPC error message or the tool's first text, sanitised and bounded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Last lines of a stdio server's stderr, sanitised, when the call failed on transport.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr_tail: Vec<String>,
    /// Non-fatal findings: the verdicts' warnings plus the caller's own (e.g. `UNSAFE_RETRY`
    /// when a proxy saw a non-idempotent call resent).
    #[serde(default)]
    pub warnings: Vec<Warning>,
    /// SHA-256 (hex) of the canonical JSON of the arguments.
    pub arguments_hash: String,
    /// Size in bytes of that canonical JSON.
    pub arguments_size: u64,
    /// The arguments themselves, only when the caller asked to log them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The final result object (for `TOOL_SUCCESS`/`TOOL_ERROR`), only when the caller asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

/// The current [`CallRecord::record_version`].
pub const RECORD_VERSION: u32 = 1;

impl CallRecord {
    /// An empty record for `method` that has not sent anything yet. The outcome starts as
    /// `CONNECTION_ERROR` ("nothing arrived") until an attempt says otherwise.
    pub fn new(client: impl Into<String>, transport: impl Into<String>, method: &str) -> Self {
        CallRecord {
            record_version: RECORD_VERSION,
            record_id: None,
            client: client.into(),
            protocol_version: "unknown".to_string(),
            transport: transport.into(),
            target: None,
            scenario: None,
            method: method.to_string(),
            tool: None,
            post_count: 0,
            http_statuses: Vec::new(),
            jsonrpc: JsonRpcInfo::default(),
            result_type: None,
            layer: Outcome::ConnectionError.layer(),
            outcome: Outcome::ConnectionError,
            retry_origin: RetryOrigin::None,
            retry_of: None,
            attempts: Vec::new(),
            rounds: 0,
            duration_ms: 0,
            session_id: None,
            server_info: None,
            message: None,
            stderr_tail: Vec::new(),
            warnings: Vec::new(),
            arguments_hash: String::new(),
            arguments_size: 0,
            arguments: None,
            result: None,
        }
    }

    /// Adds a warning unless one with the same code and detail is already there.
    pub fn warn(&mut self, code: &str, detail: impl Into<String>) {
        let w = Warning {
            code: code.to_string(),
            detail: detail.into(),
        };
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_fields_keep_their_names() {
        let mut r = CallRecord::new("mcp-triage@0.1.0", "streamable-http", "tools/call");
        r.outcome = Outcome::JsonrpcError;
        r.layer = Layer::Protocol;
        r.jsonrpc = JsonRpcInfo {
            id: Value::from(1),
            error_code: Some(-32602),
        };
        r.http_statuses = vec![200];
        r.post_count = 1;
        let v = serde_json::to_value(&r).unwrap();
        for key in [
            "client",
            "protocolVersion",
            "method",
            "postCount",
            "httpStatuses",
            "jsonrpc",
            "resultType",
            "outcome",
            "retryOrigin",
        ] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert_eq!(v["jsonrpc"]["errorCode"], -32602);
        assert_eq!(v["retryOrigin"], "none");
        assert_eq!(v["resultType"], Value::Null);
        let back: CallRecord = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn warn_deduplicates() {
        let mut r = CallRecord::new("c", "proxy", "tools/call");
        r.warn(
            "UNSAFE_RETRY",
            "resent after 503 without an idempotency key",
        );
        r.warn(
            "UNSAFE_RETRY",
            "resent after 503 without an idempotency key",
        );
        assert_eq!(r.warnings.len(), 1);
    }
}

#[cfg(test)]
mod decision_action_tests {
    use super::DecisionAction;

    /// The words a record holds are the serde names, each read back to its action; a word no
    /// action has is an error naming it, not a new action.
    #[test]
    fn every_action_is_its_word_both_ways() {
        for a in DecisionAction::ALL {
            let word = serde_json::to_value(a).unwrap();
            assert_eq!(word, a.as_str(), "{a:?}");
            assert_eq!(a.to_string(), a.as_str());
            let back: DecisionAction = serde_json::from_value(word).unwrap();
            assert_eq!(back, a);
        }
        let e = serde_json::from_str::<DecisionAction>("\"retry_later\"").unwrap_err();
        assert!(e.to_string().contains("retry_later"), "{e}");
    }
}
