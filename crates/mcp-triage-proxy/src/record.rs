//! The proxy's record: one JSON line per observed exchange.
//!
//! It follows the client's record vocabulary (`client`, `httpStatuses`, `outcome`, `retryOrigin`)
//! so that reports read both; fields that only an observer knows (which stream carried a server
//! request, which POST answered it, the session's POST count) are optional and omitted when they
//! do not apply. Arguments appear only as a hash and a size unless the operator asked for them.

use std::ops::Range;

use mcp_triage_core::record::RECORD_VERSION;
use mcp_triage_core::{
    AttemptText, Attempts, CallRecord, CallRecordText, Layer, Outcome, RetryOrigin, Verdict,
    Warning,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use mcp_triage_core::record_outcome::{outcome_and_layer, RecordOutcome, UnknownOutcome};

/// What kind of exchange a record describes (read back from a log by `report`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RecordKind {
    /// A client request and the response to it.
    Request,
    /// A client notification (answered by 202 Accepted).
    Notification,
    /// A client's answer to a server request (POSTed, answered by 202).
    Response,
    /// A request the server sent on a stream (legacy elicitation, sampling, roots).
    ServerRequest,
    /// A GET stream the client opened for server messages.
    Stream,
    /// A DELETE ending a legacy session.
    SessionEnd,
    /// Any other HTTP exchange (`/.well-known/…`, unparsable bodies).
    Http,
    /// The end of a task a `tools/call` created: written when a `tasks/get` (or
    /// `tasks/result`) shows a terminal state, or when the proxy stops waiting for one
    /// (`TASK_UNFINISHED`); `linksTo` names the creating call, the verdict is the call's final
    /// one. Records are append-only, so the call's end is a record of its own.
    TaskEnd,
}

/// The kind of the one attempt in a proxy's [`CallRecord`]: the words the client writes for
/// the same exchanges (the core's `AttemptRecord::kind` is a string shared by both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AttemptKind {
    /// `call`: a `tools/call` as first sent.
    Call,
    /// `input_round`: a resend carrying MRTR `inputResponses`.
    InputRound,
}

impl AttemptKind {
    fn as_str(self) -> &'static str {
        match self {
            AttemptKind::Call => "call",
            AttemptKind::InputRound => "input_round",
        }
    }
}

/// Who sent the traffic, as far as the observer can tell.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientId {
    /// `clientInfo.name` from `initialize` (legacy) or `_meta` (2026-07-28).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `clientInfo.version`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The `User-Agent` header, when no `clientInfo` is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
}

/// How an MRTR round (2026-07-28 `inputResponses`/`requestState`) relates to its call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MrtrLink {
    /// 1 for the first retry carrying input responses, 2 for the next, ...
    pub round: u32,
    /// The record of the call that first answered `input_required`.
    pub original_record_id: String,
}

/// One observed exchange.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// Unique within this proxy process, in arrival order.
    pub record_id: String,
    /// When the request arrived, RFC 3339 UTC.
    pub time: String,
    /// From request arrival to the end of the response, in milliseconds.
    pub duration_ms: f64,
    /// What this record describes.
    pub kind: RecordKind,
    /// `http` or `stdio`.
    pub transport: &'static str,
    /// The HTTP method (HTTP only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_method: Option<String>,
    /// Path and query as forwarded (HTTP only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The JSON-RPC method.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The JSON-RPC id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// `params.name` of a `tools/call`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// SHA-256 (hex) of the canonical JSON of `params.arguments` (keys sorted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments_hash: Option<String>,
    /// Size in bytes of the canonical JSON of `params.arguments`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments_bytes: Option<usize>,
    /// The arguments themselves, only with `--log-arguments`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// `Mcp-Session-Id` (legacy sessions), unless its header name is redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The protocol revision the request names (header or `_meta`) or its session negotiated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// Who sent it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientId>,
    /// The number of this POST within its legacy session (initialize is 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_post_count: Option<u64>,
    /// HTTP statuses the client received for this exchange (one: the proxy does not retry).
    pub http_statuses: Vec<u16>,
    /// The outcome: a core outcome (`TOOL_SUCCESS`, `HTTP_ERROR`, ...), or `RESULT` for a
    /// result to a method other than `tools/call`, or `ACCEPTED` for a 2xx to a notification or
    /// response, or `OBSERVED` for a server request seen on a stream (see [`RecordOutcome`]).
    pub outcome: RecordOutcome,
    /// The layer of the outcome (`transport`, `protocol`, `interaction`, `application`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<Layer>,
    /// False when a classification limit stopped the classifier (the bytes were still forwarded).
    pub classified: bool,
    /// The core's verdict, when the response was classified.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// `client`: the proxy never retries, so every observed retry came from the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_origin: Option<&'static str>,
    /// The record of the failed attempt this call repeats.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_of: Option<String>,
    /// 1 for a first attempt, 2 for the first retry, ... (tools/call only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The MRTR round this call is, and the call it continues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mrtr: Option<MrtrLink>,
    /// For a server request: the record of the exchange whose stream carried it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via_record_id: Option<String>,
    /// For a client's answer: the record of the server request it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_reply_to: Option<String>,
    /// The task this record is about: the one a `tools/call` created (`TASK_CREATED`), the
    /// one a `tasks/*` request names, or the one a `taskEnd` ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// For `tasks/*` requests and `taskEnd`: the record of the `tools/call` that created the
    /// task (absent when the proxy did not see it, or no longer remembers it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links_to: Option<String>,
    /// For `taskEnd`: the `tasks/get`/`tasks/result` exchanges the proxy saw for the task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_polls: Option<u32>,
    /// Bytes of the request body forwarded.
    pub request_bytes: u64,
    /// Bytes of the response body forwarded.
    pub response_bytes: u64,
    /// True when the client went away before the response ended (the upstream request was closed).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
    /// Observer warnings about the traffic, not about one response's bytes (`UNSAFE_RETRY`,
    /// ...): the core's [`Warning`], as a call record's `warnings` are made of them too.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    /// Request headers (with `--log-headers`), redacted names removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_headers: Option<Vec<(String, String)>>,
    /// Response headers (with `--log-headers`), redacted names removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_headers: Option<Vec<(String, String)>>,
    /// Whether the line carries a `callRecord`: a finished `tools/call` (set by
    /// [`crate::observe::Observer::finish_call`]) does, the same exchange as the core's
    /// [`CallRecord`] (the client's record model, `docs/record.schema.json`), so one reader
    /// handles client and proxy logs. [`Record::call_record_text`] lends the record's own
    /// members to the core's writer; [`Record::to_call_record`] builds it from the same view.
    ///
    /// Why a flag and not the `CallRecord`: building it copied a dozen of the record's strings
    /// and its verdict, about 2.8k instructions per `tools/call` with dropping it again, only
    /// for the writer to turn them into text.
    #[serde(skip)]
    pub with_call_record: bool,
}

impl Record {
    /// A record with only the identifying fields set.
    pub fn new(record_id: String, time: String, kind: RecordKind, transport: &'static str) -> Self {
        Record {
            record_id,
            time,
            duration_ms: 0.0,
            kind,
            transport,
            http_method: None,
            path: None,
            method: None,
            id: None,
            tool: None,
            arguments_hash: None,
            arguments_bytes: None,
            arguments: None,
            session_id: None,
            protocol_version: None,
            client: None,
            session_post_count: None,
            http_statuses: Vec::new(),
            outcome: RecordOutcome::Undecided,
            layer: None,
            classified: true,
            verdict: None,
            retry_origin: None,
            retry_of: None,
            attempt: None,
            mrtr: None,
            via_record_id: None,
            in_reply_to: None,
            task_id: None,
            links_to: None,
            task_polls: None,
            request_bytes: 0,
            response_bytes: 0,
            cancelled: false,
            warnings: Vec::new(),
            request_headers: None,
            response_headers: None,
            with_call_record: false,
        }
    }

    /// The verdict of a finished `tools/call` exchange, which its [`CallRecord`] is made of
    /// (none for another method, or before the verdict).
    pub fn call_verdict(&self) -> Option<&Verdict> {
        self.verdict
            .as_ref()
            .filter(|_| self.method.as_deref() == Some("tools/call"))
    }

    /// The [`CallRecord`] of a finished `tools/call` exchange (none for another method, or
    /// before the verdict): the owned form of [`Record::call_record_text`], for readers that
    /// need one (tests). The line writer writes the view instead, building nothing.
    pub fn to_call_record(&self) -> Option<CallRecord> {
        Some(self.call_record_text(None)?.to_call_record())
    }

    /// The call record of a finished `tools/call` exchange as a view of the record's own
    /// members: the one mapping from a proxy record to the client's record model, which both
    /// the line's `callRecord` (`record_json`) and [`Record::to_call_record`] are made of. One
    /// attempt (the proxy never resends), `retryOrigin` `business_logic` with `retryOf` when
    /// the client repeated a failed call, the observer's warnings (`UNSAFE_RETRY`) after the
    /// verdict's. The members a proxy never has (`target`, `scenario`, `serverInfo`,
    /// `stderrTail`, `result`, an attempt's `retryOf`, `contentType` and `decision`) are
    /// absent. `verdict_at`: where the verdict's text already is in the output the view will
    /// be written into ([`AttemptText::verdict_at`]).
    pub(crate) fn call_record_text(
        &self,
        verdict_at: Option<Range<usize>>,
    ) -> Option<CallRecordText<'_>> {
        let v = self.call_verdict()?;
        let id = self.id.as_ref().unwrap_or(&Value::Null);
        let duration_ms = self.call_duration_ms();
        let retry_origin = match self.retry_of {
            Some(_) => RetryOrigin::BusinessLogic,
            None => RetryOrigin::None,
        };
        let attempt = AttemptText {
            id,
            kind: self.call_attempt_kind(),
            retry_of: None,
            status: self.http_statuses.first().copied(),
            content_type: None,
            stream: v.stream.as_ref(),
            verdict: v,
            verdict_at,
            duration_ms,
            decision: None,
        };
        Some(CallRecordText {
            record_version: RECORD_VERSION,
            record_id: Some(&self.record_id),
            client: self.call_client(),
            protocol_version: self.call_protocol_version(),
            transport: self.call_transport(),
            target: None,
            scenario: None,
            method: "tools/call",
            tool: self.tool.as_deref(),
            post_count: self.call_post_count(),
            http_statuses: &self.http_statuses,
            id,
            error_code: v.code,
            result_type: v.result_type.as_deref(),
            layer: v.outcome.layer(),
            outcome: v.outcome,
            retry_origin,
            retry_of: self.retry_of.as_deref(),
            attempts: Attempts::One(attempt),
            rounds: self.call_rounds(),
            duration_ms,
            session_id: self.session_id.as_deref(),
            server_info: None,
            message: v.message.as_deref(),
            stderr_tail: &[],
            warnings: [&v.warnings, &self.warnings],
            arguments_hash: self.arguments_hash.as_deref().unwrap_or(""),
            arguments_size: self.arguments_bytes.unwrap_or(0) as u64,
            arguments: self.arguments.as_ref(),
            result: None,
        })
    }

    /// The call record's `client`, in pieces to concatenate: `name@version`, else the name,
    /// else the `User-Agent`, else `unknown`.
    fn call_client(&self) -> [&str; 3] {
        match &self.client {
            Some(ClientId {
                name: Some(n),
                version: Some(v),
                ..
            }) => [n, "@", v],
            Some(ClientId {
                name: Some(n),
                version: None,
                ..
            }) => [n, "", ""],
            Some(ClientId {
                name: None,
                user_agent: Some(ua),
                ..
            }) => [ua, "", ""],
            _ => ["unknown", "", ""],
        }
    }

    /// The call record's `protocolVersion`: the record's, else `unknown`.
    fn call_protocol_version(&self) -> &str {
        self.protocol_version.as_deref().unwrap_or("unknown")
    }

    /// The call record's `transport`: `proxy` for HTTP (the client's word for a proxied call).
    fn call_transport(&self) -> &'static str {
        if self.transport == "http" {
            "proxy"
        } else {
            self.transport
        }
    }

    /// The call record's `postCount`: one POST over HTTP, none over stdio.
    fn call_post_count(&self) -> u32 {
        u32::from(self.transport == "http")
    }

    /// The call record's `durationMs` (and its attempt's): the record's, rounded.
    fn call_duration_ms(&self) -> u64 {
        self.duration_ms.round() as u64
    }

    /// The kind of the call record's one attempt: an MRTR round or a call as first sent.
    fn call_attempt_kind(&self) -> &'static str {
        if self.mrtr.is_some() {
            AttemptKind::InputRound
        } else {
            AttemptKind::Call
        }
        .as_str()
    }

    /// The call record's `rounds`: the MRTR round, 0 for none.
    fn call_rounds(&self) -> u32 {
        self.mrtr.as_ref().map_or(0, |m| m.round)
    }

    /// Takes outcome, layer and `classified` from a verdict for `method`.
    ///
    /// The core judges `tools/call` results; for any other method a response that answers the
    /// request with a result is `RESULT` (its result is not a tool result, so the core's
    /// tool-result rules do not apply), while transport and envelope outcomes stay as judged.
    pub fn set_verdict(&mut self, method: Option<&str>, v: Verdict) {
        let (outcome, layer) = outcome_and_layer(method, v.outcome);
        self.classified = v.outcome != Outcome::LimitExceeded;
        self.outcome = outcome;
        self.layer = Some(layer);
        self.verdict = Some(v);
    }
}

/// Whether a record is the `tools/call` exchange that created a task (a `request` record
/// answered `TASK_CREATED`). Its call is not over there: the call's end is the `taskEnd`
/// record the proxy writes, and that is the record counted as the call, so a task call counts
/// once, with its final verdict, in the metrics and in `report` alike. The one home of that rule.
pub fn is_task_start(kind: RecordKind, outcome: RecordOutcome) -> bool {
    kind == RecordKind::Request && outcome == Outcome::TaskCreated
}

pub use mcp_triage_wire::time::{now_ms, rfc3339};

#[cfg(test)]
mod tests {
    use super::*;

    /// The type changed nothing on the wire: each outcome serialises to the string records
    /// always carried, and reads back as itself.
    #[test]
    fn outcomes_serialise_to_their_record_strings() {
        let cases = [
            (RecordOutcome::Undecided, ""),
            (RecordOutcome::Verdict(Outcome::ToolSuccess), "TOOL_SUCCESS"),
            (
                RecordOutcome::Verdict(Outcome::ConnectionError),
                "CONNECTION_ERROR",
            ),
            (RecordOutcome::Result, "RESULT"),
            (RecordOutcome::Accepted, "ACCEPTED"),
            (RecordOutcome::Observed, "OBSERVED"),
            (RecordOutcome::Forwarded, "FORWARDED"),
            (RecordOutcome::Refused, "REFUSED"),
            (RecordOutcome::StreamClosed, "STREAM_CLOSED"),
            (RecordOutcome::Sent, "SENT"),
            (RecordOutcome::TaskUnfinished, "TASK_UNFINISHED"),
        ];
        for (o, s) in cases {
            assert_eq!(serde_json::to_value(o).unwrap(), serde_json::json!(s));
            assert_eq!(s.parse::<RecordOutcome>(), Ok(o));
        }
        for o in Outcome::ALL {
            assert_eq!(
                o.as_str().parse::<RecordOutcome>(),
                Ok(RecordOutcome::Verdict(o))
            );
        }
        assert!("TOOL_SUCESS".parse::<RecordOutcome>().is_err());
    }

    #[test]
    fn other_methods_get_result_not_tool_outcomes() {
        let mut r = Record::new("1".into(), rfc3339(0), RecordKind::Request, "http");
        r.set_verdict(
            Some("initialize"),
            Verdict::new(mcp_triage_core::Outcome::InvalidToolResult),
        );
        assert_eq!(r.outcome, "RESULT");
        r.set_verdict(
            Some("tools/call"),
            Verdict::new(mcp_triage_core::Outcome::InvalidToolResult),
        );
        assert_eq!(r.outcome, "INVALID_TOOL_RESULT");
        r.set_verdict(
            Some("tools/list"),
            Verdict::new(mcp_triage_core::Outcome::LimitExceeded),
        );
        assert!(!r.classified);
    }
}
