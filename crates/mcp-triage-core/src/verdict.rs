//! The verdict model: what the classifier says about one `tools/call` response.
//!
//! A [`Verdict`] names the failing [`Layer`] and the [`Outcome`], plus the detail fields that apply.
//! Its JSON form is the stable contract of mcp-triage: layers and outcomes use the seed article's
//! wire names (`transport`, `TOOL_SUCCESS`, ...), detail fields are camelCase and omitted when they
//! do not apply, so that a verdict of the seed's eight cases is a superset of the seed's own object.

use serde::{Deserialize, Serialize};

/// The layer on which a call ended. Ordered from the outside in: a failure on an outer layer hides
/// everything inside it (an HTTP 500 with a success-looking body is a transport failure).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// HTTP status, connection, content framing, SSE stream completeness.
    Transport,
    /// The JSON-RPC envelope and the shape of the result object.
    Protocol,
    /// Neither success nor failure: the server needs more from the client (input, polling).
    Interaction,
    /// The tool itself ran and reported success or failure.
    Application,
}

impl Layer {
    /// The wire name (`transport`, `protocol`, `interaction`, `application`).
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Transport => "transport",
            Layer::Protocol => "protocol",
            Layer::Interaction => "interaction",
            Layer::Application => "application",
        }
    }

    /// Parses a wire name.
    pub fn from_wire(name: &str) -> Option<Layer> {
        [
            Layer::Transport,
            Layer::Protocol,
            Layer::Interaction,
            Layer::Application,
        ]
        .into_iter()
        .find(|l| l.as_str() == name)
    }
}

/// What happened to the call. Each outcome belongs to exactly one [`Layer`] ([`Outcome::layer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Outcome {
    /// A complete result without `isError: true`.
    ToolSuccess,
    /// A complete result with `isError: true`: the tool ran and failed; the model should see it.
    ToolError,
    /// A JSON-RPC `error` response to the request.
    JsonrpcError,
    /// `resultType: "input_required"`: answer the input requests in a new request with a new id.
    InputRequired,
    /// The server accepted the call as a task; poll it for the result.
    TaskCreated,
    /// HTTP status outside 200-299.
    HttpError,
    /// A 2xx response without a body (202, 204, or an empty 200): no answer to the request.
    MissingResponse,
    /// An SSE stream that ended before the response to the request.
    StreamIncomplete,
    /// The connection failed (refused, reset) before a complete response arrived.
    ConnectionError,
    /// No complete response within the time allowed.
    Timeout,
    /// A response larger or deeper than the configured limits; it was not classified further.
    LimitExceeded,
    /// A 2xx body whose media type is neither `application/json` nor `text/event-stream`.
    UnexpectedContentType,
    /// Not valid JSON (syntax, UTF-8, trailing data).
    MalformedJson,
    /// Valid JSON, but not a valid JSON-RPC response to this request.
    InvalidEnvelope,
    /// A response to this request whose result is not a valid tool result.
    InvalidToolResult,
}

impl Outcome {
    /// Every outcome, in documentation order.
    pub const ALL: [Outcome; 15] = [
        Outcome::ToolSuccess,
        Outcome::ToolError,
        Outcome::JsonrpcError,
        Outcome::InputRequired,
        Outcome::TaskCreated,
        Outcome::HttpError,
        Outcome::MissingResponse,
        Outcome::StreamIncomplete,
        Outcome::ConnectionError,
        Outcome::Timeout,
        Outcome::LimitExceeded,
        Outcome::UnexpectedContentType,
        Outcome::MalformedJson,
        Outcome::InvalidEnvelope,
        Outcome::InvalidToolResult,
    ];

    /// The layer this outcome belongs to.
    pub fn layer(self) -> Layer {
        match self {
            Outcome::ToolSuccess | Outcome::ToolError => Layer::Application,
            Outcome::InputRequired | Outcome::TaskCreated => Layer::Interaction,
            Outcome::HttpError
            | Outcome::MissingResponse
            | Outcome::StreamIncomplete
            | Outcome::ConnectionError
            | Outcome::Timeout
            | Outcome::LimitExceeded => Layer::Transport,
            Outcome::UnexpectedContentType
            | Outcome::MalformedJson
            | Outcome::InvalidEnvelope
            | Outcome::JsonrpcError
            | Outcome::InvalidToolResult => Layer::Protocol,
        }
    }

    /// The wire name, e.g. `TOOL_SUCCESS`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::ToolSuccess => "TOOL_SUCCESS",
            Outcome::ToolError => "TOOL_ERROR",
            Outcome::JsonrpcError => "JSONRPC_ERROR",
            Outcome::InputRequired => "INPUT_REQUIRED",
            Outcome::TaskCreated => "TASK_CREATED",
            Outcome::HttpError => "HTTP_ERROR",
            Outcome::MissingResponse => "MISSING_RESPONSE",
            Outcome::StreamIncomplete => "STREAM_INCOMPLETE",
            Outcome::ConnectionError => "CONNECTION_ERROR",
            Outcome::Timeout => "TIMEOUT",
            Outcome::LimitExceeded => "LIMIT_EXCEEDED",
            Outcome::UnexpectedContentType => "UNEXPECTED_CONTENT_TYPE",
            Outcome::MalformedJson => "MALFORMED_JSON",
            Outcome::InvalidEnvelope => "INVALID_ENVELOPE",
            Outcome::InvalidToolResult => "INVALID_TOOL_RESULT",
        }
    }

    /// Parses a wire name.
    pub fn from_wire(name: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == name)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parsed `WWW-Authenticate` challenge (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthChallenge {
    /// The auth scheme as sent, e.g. `Bearer`.
    pub scheme: String,
    /// RFC 9728 protected-resource metadata URL, where the client learns which server to ask.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_metadata: Option<String>,
    /// The scope the server says the call needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// RFC 6750 error code, e.g. `invalid_token` or `insufficient_scope`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// RFC 6750 `error_description`, sanitised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_description: Option<String>,
    /// The `realm` parameter, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub realm: Option<String>,
}

/// The behavioural class of a server-declared tool failure (draft SEP #3313): what a client
/// does about it, whatever its `code` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailureClass {
    /// The call cannot succeed as asked (unsupported, not found, invalid input): never resent.
    Capability,
    /// A transient condition: resent only when declared `retryable`, the tool is safe to run
    /// again, and not before `retryNotBefore`.
    Reliability,
    /// Refused by policy (authorization, approval): needs action elsewhere, never resent.
    Governance,
}

impl FailureClass {
    /// The wire name (`capability`, `reliability`, `governance`).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Capability => "capability",
            FailureClass::Reliability => "reliability",
            FailureClass::Governance => "governance",
        }
    }

    /// Parses a wire name.
    pub fn from_wire(name: &str) -> Option<FailureClass> {
        [
            FailureClass::Capability,
            FailureClass::Reliability,
            FailureClass::Governance,
        ]
        .into_iter()
        .find(|c| c.as_str() == name)
    }
}

impl std::fmt::Display for FailureClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure the server declared in an `isError` result's
/// `_meta["io.modelcontextprotocol/toolFailure"]` (draft SEP #3313), read only when
/// [`crate::Drafts::tool_failure`] is on. Its strings are sanitised to one line and cut, as a
/// JSON-RPC error's message is: they are the server's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolFailure {
    /// The behavioural class the client dispatches on.
    pub class: FailureClass,
    /// The server's specific code (open vocabulary, e.g. `auth_required`), at most 128 chars.
    pub code: String,
    /// Whether the server says this exact call may be retried (only meaningful for
    /// `reliability`); absent when not sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
    /// `retryNotBefore` as sent: Unix epoch milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_not_before: Option<u64>,
    /// `retryNotBefore` as a wait from the context's `now`, in milliseconds (0 when it has
    /// passed): what the retry policy waits, as it waits a `Retry-After`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// The server's identifier of the failure in its own logs, at most 256 chars.
    pub correlation_id: String,
    /// The server's short instruction for the calling model, at most 512 chars.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_guidance: Option<String>,
}

/// Which kind of tool-invocation failure an `isError` result reports (draft SEP-2145), read
/// only when [`crate::Drafts::sep_2145`] is on, from the text SEP-2145 recommends or the
/// declared ToolFailure `code`: the tool itself may never have run, which the advice and a
/// model need to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorKind {
    /// The server has no callable tool of that name (`Unknown tool: <name>`): re-list tools.
    UnknownTool,
    /// The tool exists but cannot be called now (disabled, policy): `Tool unavailable: <name>`.
    ToolUnavailable,
    /// The arguments failed the tool's validation (SEP-1303): `Invalid input: <name>`.
    InvalidInput,
    /// The tool's output broke its `outputSchema`:
    /// `Tool produced invalid structured output for <name>`.
    InvalidOutput,
}

impl ToolErrorKind {
    /// The wire name (`unknown_tool`, `tool_unavailable`, `invalid_input`, `invalid_output`).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolErrorKind::UnknownTool => "unknown_tool",
            ToolErrorKind::ToolUnavailable => "tool_unavailable",
            ToolErrorKind::InvalidInput => "invalid_input",
            ToolErrorKind::InvalidOutput => "invalid_output",
        }
    }
}

/// What an SSE response stream carried up to the verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamStats {
    /// Events dispatched with data (any event type).
    pub events: u64,
    /// JSON-RPC notifications (messages with a `method` and no `id`).
    pub notifications: u64,
    /// JSON-RPC requests from the server (a `method` and an `id`).
    pub server_requests: u64,
    /// Responses for other request ids, skipped.
    pub other_responses: u64,
    /// Events with an `event:` type other than `message`, ignored.
    pub ignored_events: u64,
    /// Events without data (2025-11-25 priming events), ignored.
    pub priming_events: u64,
    /// Comment lines (`:` keep-alives).
    pub comments: u64,
    /// Bytes of the stream read up to the verdict.
    pub bytes: u64,
    /// The last event id buffer (WHATWG), for `Last-Event-ID` resumption.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_event_id: Option<String>,
    /// The reconnection time the server asked for with `retry:`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_ms: Option<u64>,
    /// Whether the response to the request arrived on the stream.
    pub terminal: bool,
}

/// A non-fatal deviation from the spec, with a stable code for machines and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// Stable SCREAMING_SNAKE identifier, e.g. `RESULT_TYPE_ABSENT`.
    pub code: String,
    /// One sentence saying what was seen and where.
    pub detail: String,
}

/// Which configured limit stopped classification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitHit {
    /// The limit's name as in [`crate::Limits`] (`maxBodyBytes`, `maxEventBytes`, ...).
    pub name: String,
    /// The configured value.
    pub max: u64,
}

/// The classifier's answer for one response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// The failing layer (or `application` for a tool that ran).
    pub layer: Layer,
    /// What happened.
    pub outcome: Outcome,
    /// HTTP status, for transport outcomes that have one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// JSON-RPC error code (also decoded from an HTTP error's body).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    /// JSON-RPC error message: one line, at most 512 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The result's type as the client must read it (`complete` when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<String>,
    /// The result's `isError` as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// How long the server asks the client to wait: `Retry-After` as milliseconds from the
    /// supplied `now`, or a `-32023` error's `data.retryAfterMs` (the draft SEP-3304), which wins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// The parsed `WWW-Authenticate` challenge. Boxed: only a 401 or 403 has one, and
    /// unboxed its six strings were a third of every verdict's size, copied on every move of
    /// every verdict (a gateway classifies each exchange; bench/nginx-module-overhead.sh).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_challenge: Option<Box<AuthChallenge>>,
    /// SSE stream counts, for `text/event-stream` responses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamStats>,
    /// The task to poll, for `TASK_CREATED`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The failure the server declared in a `TOOL_ERROR` (draft SEP #3313; only with
    /// [`crate::Drafts::tool_failure`]). Boxed: only a declared failure has one, and its
    /// strings would otherwise grow every verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_failure: Option<Box<ToolFailure>>,
    /// Which invocation failure a `TOOL_ERROR` reports (draft SEP-2145; only with
    /// [`crate::Drafts::sep_2145`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_error_kind: Option<ToolErrorKind>,
    /// The limit that stopped classification, for `LIMIT_EXCEEDED`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<LimitHit>,
    /// Non-fatal spec deviations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    /// One sentence saying exactly what was wrong and where (a JSON pointer where it helps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Verdict {
    /// A verdict with only layer and outcome set.
    pub fn new(outcome: Outcome) -> Verdict {
        Verdict {
            layer: outcome.layer(),
            outcome,
            status: None,
            code: None,
            message: None,
            result_type: None,
            is_error: None,
            retry_after_ms: None,
            auth_challenge: None,
            stream: None,
            task_id: None,
            tool_failure: None,
            tool_error_kind: None,
            limit: None,
            warnings: Vec::new(),
            detail: None,
        }
    }

    /// Sets the detail sentence.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Verdict {
        self.detail = Some(detail.into());
        self
    }

    /// A connection failure seen by the I/O layer (refused, reset, DNS, TLS).
    pub fn connection_error(detail: impl Into<String>) -> Verdict {
        Verdict::new(Outcome::ConnectionError).with_detail(detail)
    }

    /// A deadline that passed before a complete response arrived.
    pub fn timeout(detail: impl Into<String>) -> Verdict {
        Verdict::new(Outcome::Timeout).with_detail(detail)
    }

    /// True when the outcome is a final, successful tool result.
    pub fn is_success(&self) -> bool {
        self.outcome == Outcome::ToolSuccess
    }

    /// Adds a warning.
    pub fn warn(&mut self, code: &str, detail: impl Into<String>) {
        self.warnings.push(Warning {
            code: code.to_string(),
            detail: detail.into(),
        });
    }

    /// One line a person can read: `layer/OUTCOME key=value … — detail`.
    pub fn to_text_line(&self) -> String {
        let mut out = format!("{}/{}", self.layer, self.outcome);
        if let Some(s) = self.status {
            out.push_str(&format!(" status={s}"));
        }
        if let Some(c) = self.code {
            out.push_str(&format!(" code={c}"));
        }
        if let Some(m) = &self.message {
            out.push_str(&format!(" message={m:?}"));
        }
        if let Some(r) = &self.result_type {
            out.push_str(&format!(" resultType={r}"));
        }
        if let Some(ms) = self.retry_after_ms {
            out.push_str(&format!(" retryAfterMs={ms}"));
        }
        if let Some(t) = &self.task_id {
            out.push_str(&format!(" taskId={t:?}"));
        }
        if let Some(f) = &self.tool_failure {
            out.push_str(&format!(" failure={}/{}", f.class, f.code));
            if let Some(r) = f.retryable {
                out.push_str(&format!(" retryable={r}"));
            }
            if let Some(ms) = f.retry_after_ms {
                out.push_str(&format!(" retryAfterMs={ms}"));
            }
            out.push_str(&format!(" correlationId={:?}", f.correlation_id));
        }
        if let Some(k) = self.tool_error_kind {
            out.push_str(&format!(" kind={}", k.as_str()));
        }
        if let Some(a) = &self.auth_challenge {
            out.push_str(&format!(" auth={}", a.scheme));
            if let Some(e) = &a.error {
                out.push_str(&format!(" error={e}"));
            }
            if let Some(r) = &a.resource_metadata {
                out.push_str(&format!(" resource_metadata={r}"));
            }
        }
        if let Some(s) = &self.stream {
            out.push_str(&format!(
                " events={} notifications={} serverRequests={}",
                s.events, s.notifications, s.server_requests
            ));
            if let Some(id) = &s.last_event_id {
                out.push_str(&format!(" lastEventId={id:?}"));
            }
            if let Some(r) = s.retry_ms {
                out.push_str(&format!(" retryMs={r}"));
            }
        }
        if let Some(d) = &self.detail {
            out.push_str(" — ");
            out.push_str(d);
        }
        for w in &self.warnings {
            out.push_str(&format!(" [warning {}: {}]", w.code, w.detail));
        }
        out
    }
}

/// Makes an untrusted string safe for a one-line log: control characters become spaces, runs of
/// white space collapse, and the result is cut to `max` characters (ending in `…` when cut).
pub fn sanitize_line(input: &str, max: usize) -> String {
    let mut out = String::with_capacity(input.len().min(max * 4));
    let mut count = 0usize;
    let mut last_space = false;
    for c in input.trim().chars() {
        let c = if c.is_control() || c == '\u{2028}' || c == '\u{2029}' {
            ' '
        } else {
            c
        };
        if c == ' ' && last_space {
            continue;
        }
        last_space = c == ' ';
        if count == max {
            out.pop();
            out.push('…');
            return out;
        }
        out.push(c);
        count += 1;
    }
    // A control character at the very end became a space after the trim above.
    out.truncate(out.trim_end().len());
    out
}

/// The sanitised form of a JSON-RPC error message in a verdict.
pub const MAX_MESSAGE_CHARS: usize = 512;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip() {
        for o in Outcome::ALL {
            let json = serde_json::to_string(&o).unwrap();
            assert_eq!(json, format!("\"{}\"", o.as_str()));
            assert_eq!(Outcome::from_wire(o.as_str()), Some(o));
        }
        assert_eq!(
            serde_json::to_string(&Layer::Interaction).unwrap(),
            "\"interaction\""
        );
    }

    #[test]
    fn layer_names_round_trip() {
        for l in [
            Layer::Transport,
            Layer::Protocol,
            Layer::Interaction,
            Layer::Application,
        ] {
            assert_eq!(Layer::from_wire(l.as_str()), Some(l));
            assert_eq!(serde_json::to_value(l).unwrap(), l.as_str());
        }
        assert_eq!(Layer::from_wire("Transport"), None);
    }

    #[test]
    fn seed_layers() {
        assert_eq!(Outcome::InvalidToolResult.layer(), Layer::Protocol);
        assert_eq!(Outcome::MalformedJson.layer(), Layer::Protocol);
        assert_eq!(Outcome::HttpError.layer(), Layer::Transport);
        assert_eq!(Outcome::InputRequired.layer(), Layer::Interaction);
        assert_eq!(Outcome::ToolError.layer(), Layer::Application);
    }

    #[test]
    fn minimal_verdict_is_seed_shaped() {
        let v = Verdict::new(Outcome::ToolSuccess);
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"layer":"application","outcome":"TOOL_SUCCESS"}"#
        );
    }

    #[test]
    fn sanitize_cuts_and_flattens() {
        assert_eq!(sanitize_line("a\nb\t\tc", 512), "a b c");
        let long = "x".repeat(600);
        let s = sanitize_line(&long, 512);
        assert_eq!(s.chars().count(), 512);
        assert!(s.ends_with('…'));
        assert_eq!(sanitize_line(&"y".repeat(512), 512), "y".repeat(512));
        assert_eq!(sanitize_line("  padded  ", 512), "padded");
    }
}
