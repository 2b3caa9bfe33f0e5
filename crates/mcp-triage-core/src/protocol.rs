//! What the classifier must know about the call it judges: the request id, the negotiated
//! protocol version, the tool's output schema, the clock, and the limits.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::limits::Limits;
use crate::schema::OutputSchema;

/// An MCP protocol revision. The classifier's rules differ by revision (batches only in
/// 2025-03-26, `structuredContent` any JSON only in 2026-07-28, ...); `Unknown` is a lenient
/// superset for callers that do not know what was negotiated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum ProtocolVersion {
    /// 2024-11-05: HTTP+SSE era, no annotations, no structured content.
    V2024_11_05,
    /// 2025-03-26: Streamable HTTP, JSON-RPC batches, tool annotations.
    V2025_03_26,
    /// 2025-06-18: structured content (objects), elicitation, no batches.
    V2025_06_18,
    /// 2025-11-25: tasks, SSE polling with priming events, URL elicitation.
    V2025_11_25,
    /// 2026-07-28: stateless, per-request `_meta`, `resultType`, MRTR.
    V2026_07_28,
    /// Not known: accept what any revision allows.
    #[default]
    Unknown,
}

impl ProtocolVersion {
    /// The revisions this crate knows, oldest first.
    pub const KNOWN: [ProtocolVersion; 5] = [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2026_07_28,
    ];

    /// The latest revision.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2026_07_28;

    /// The revision string, e.g. `2025-06-18`, or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
            ProtocolVersion::Unknown => "unknown",
        }
    }

    /// Parses a revision string; `None` for anything not known (use [`ProtocolVersion::Unknown`]
    /// explicitly to be lenient).
    pub fn parse(s: &str) -> Option<ProtocolVersion> {
        match s {
            "unknown" => Some(ProtocolVersion::Unknown),
            _ => ProtocolVersion::KNOWN.into_iter().find(|v| v.as_str() == s),
        }
    }

    /// True for the stateless revisions that carry version and capabilities per request.
    pub fn is_modern(self) -> bool {
        self == ProtocolVersion::V2026_07_28
    }

    /// True when this is a known revision at or after `other`. `Unknown` is never "at least".
    pub fn at_least(self, other: ProtocolVersion) -> bool {
        self != ProtocolVersion::Unknown && self >= other
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ProtocolVersion::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown protocol version {s:?} (known: 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28, unknown)"
            ))
        })
    }
}

/// A JSON-RPC request id. MCP forbids `null` ids on requests, so an id is an integer or a string,
/// and `1` and `"1"` are different ids.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_string())
    }
}

/// Whether the request carried an `Mcp-Session-Id`, as far as the caller knows.
///
/// Why: a 404 means "session expired" only for a request sent in a session; a 404 to the first
/// `initialize` (no session yet) means the endpoint is wrong, and advising a new session there
/// sends a user the wrong way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestSession {
    /// The caller does not know (an exchange file without request headers).
    #[default]
    Unknown,
    /// The request was sent without a session id.
    Absent,
    /// The request carried a session id.
    Present,
}

impl RequestSession {
    /// `Present` when `session_id` is some, `Absent` otherwise.
    pub fn from_header(session_id: Option<&str>) -> RequestSession {
        match session_id {
            Some(_) => RequestSession::Present,
            None => RequestSession::Absent,
        }
    }
}

/// Which request the response answers, as far as its rules differ.
///
/// Why: a `tasks/get` result is a task's state, not a tool result; judged as a tool result it
/// would be "missing content". The terminal state of a task carries the call's real outcome
/// (a tool result, or the JSON-RPC error it failed with), which must get the verdict the same
/// answer would get to the `tools/call` itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestKind {
    /// `tools/call`, and every other method (judged by the tool-call rules, as always).
    #[default]
    ToolCall,
    /// `tasks/get`: a poll of the task a `tools/call` created.
    TaskPoll,
}

impl RequestKind {
    /// The kind of a request by its JSON-RPC method.
    pub fn from_method(method: &str) -> RequestKind {
        match method {
            "tasks/get" => RequestKind::TaskPoll,
            _ => RequestKind::ToolCall,
        }
    }
}

/// Draft proposals the classifier reads when asked to: each is a switch, off by default,
/// because a draft may change or be dropped, and a verdict must not change under a caller who
/// did not ask for it (the golden vectors hold the verdicts with every switch off).
///
/// Wire names (`--draft`, the bindings): `tool-failure`, `sep-2145`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drafts {
    /// SEP #3313 (ToolFailure): read `_meta["io.modelcontextprotocol/toolFailure"]` of an
    /// `isError` result into [`crate::Verdict::tool_failure`] (class, code, retryability,
    /// correlation id), and warn about a malformed one.
    pub tool_failure: bool,
    /// SEP-2145: an unknown tool, a tool that cannot be called and an output that breaks the
    /// tool's `outputSchema` are `isError` results; name which one a tool error is
    /// ([`crate::Verdict::tool_error_kind`]) and warn about a JSON-RPC error that reports one.
    pub sep_2145: bool,
}

impl Drafts {
    /// Every draft's wire name, in documentation order.
    pub const NAMES: [&'static str; 2] = ["tool-failure", "sep-2145"];

    /// Every draft on.
    pub const ALL: Drafts = Drafts {
        tool_failure: true,
        sep_2145: true,
    };

    /// Parses a comma-separated list of wire names (`tool-failure,sep-2145`; `all` for every
    /// one, `none` or an empty list for none). An unknown name is an error naming it and the
    /// known ones, so that a misspelt draft is not silently left off.
    pub fn parse(list: &str) -> Result<Drafts, String> {
        let mut d = Drafts::default();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "tool-failure" => d.tool_failure = true,
                "sep-2145" => d.sep_2145 = true,
                "all" => d = Drafts::ALL,
                "none" => {}
                other => {
                    return Err(format!(
                        "unknown draft {other:?} (known: {}, all, none)",
                        Drafts::NAMES.join(", ")
                    ))
                }
            }
        }
        Ok(d)
    }

    /// Whether any draft is on.
    pub fn any(self) -> bool {
        self.tool_failure || self.sep_2145
    }

    /// The wire names of the drafts that are on, comma-separated (`none` when none is).
    pub fn names(self) -> String {
        let on: Vec<&str> = [
            (self.tool_failure, "tool-failure"),
            (self.sep_2145, "sep-2145"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if on.is_empty() {
            "none".to_string()
        } else {
            on.join(",")
        }
    }
}

impl std::str::FromStr for Drafts {
    type Err = String;

    fn from_str(s: &str) -> Result<Drafts, String> {
        Drafts::parse(s)
    }
}

/// Everything the classifier needs to know about the call besides the response itself.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The id of the `tools/call` request this response answers.
    pub expected_id: RequestId,
    /// The negotiated protocol revision.
    pub protocol_version: ProtocolVersion,
    /// The tool's `outputSchema`, compiled; `structuredContent` is validated against it.
    pub output_schema: Option<Arc<OutputSchema>>,
    /// "Now", for `Retry-After` given as an HTTP-date. Supplied by the caller so that the core
    /// reads no clock and verdicts are reproducible.
    pub now: SystemTime,
    /// Size, depth and count limits.
    pub limits: Limits,
    /// Queue the messages seen on an SSE stream as [`crate::StreamEvent`]s for the caller.
    pub observe_messages: bool,
    /// Whether the request carried a session id (it decides what a 404 means).
    pub request_session: RequestSession,
    /// Which request the response answers (a `tasks/get` result is a task's state).
    pub request_kind: RequestKind,
    /// Keep the response message the verdict was read from, as a `serde_json::Value`, for the
    /// caller to take ([`crate::ResponseClassifier::take_response`],
    /// [`crate::ResponseClassifier::finish_with_response`], [`crate::classify_with_response`]),
    /// so that a caller that reads the result (a client, a proxy learning `tools/list`) does
    /// not parse the body a second time. Off by default: building the value costs a copy of the
    /// message, and a JSON body is then kept whole instead of compacted past 1 MiB (the
    /// compacted copy cuts long strings, so no value can be built from it).
    pub keep_response: bool,
    /// The draft proposals to read ([`Drafts`]); all off by default.
    pub drafts: Drafts,
}

impl CallContext {
    /// A context for request id `expected_id`, unknown protocol version, default limits, and the
    /// Unix epoch as "now" (set [`CallContext::now`] when `Retry-After` dates matter).
    pub fn new(expected_id: impl Into<RequestId>) -> CallContext {
        CallContext {
            expected_id: expected_id.into(),
            protocol_version: ProtocolVersion::Unknown,
            output_schema: None,
            now: SystemTime::UNIX_EPOCH,
            limits: Limits::default(),
            observe_messages: false,
            request_session: RequestSession::Unknown,
            request_kind: RequestKind::ToolCall,
            keep_response: false,
            drafts: Drafts::default(),
        }
    }

    /// Sets the draft proposals to read.
    pub fn with_drafts(mut self, drafts: Drafts) -> Self {
        self.drafts = drafts;
        self
    }

    /// Sets whether the response message is kept for the caller (see
    /// [`CallContext::keep_response`]).
    pub fn with_keep_response(mut self, keep: bool) -> Self {
        self.keep_response = keep;
        self
    }

    /// Sets which request the response answers.
    pub fn with_request_kind(mut self, k: RequestKind) -> Self {
        self.request_kind = k;
        self
    }

    /// Sets whether the request carried a session id.
    pub fn with_request_session(mut self, s: RequestSession) -> Self {
        self.request_session = s;
        self
    }

    /// Sets the protocol version.
    pub fn with_protocol_version(mut self, v: ProtocolVersion) -> Self {
        self.protocol_version = v;
        self
    }

    /// Sets the output schema.
    pub fn with_output_schema(mut self, schema: Arc<OutputSchema>) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Sets "now".
    pub fn with_now(mut self, now: SystemTime) -> Self {
        self.now = now;
        self
    }

    /// Sets the limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order() {
        for v in ProtocolVersion::KNOWN {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
        }
        assert_eq!(ProtocolVersion::parse("2025-13-01"), None);
        assert!(ProtocolVersion::V2026_07_28.at_least(ProtocolVersion::V2025_06_18));
        assert!(!ProtocolVersion::Unknown.at_least(ProtocolVersion::V2024_11_05));
    }

    #[test]
    fn drafts_parse_from_their_wire_names() {
        assert_eq!(Drafts::parse(""), Ok(Drafts::default()));
        assert_eq!(Drafts::parse("none"), Ok(Drafts::default()));
        let tf = Drafts::parse("tool-failure").unwrap();
        assert!(tf.tool_failure && !tf.sep_2145);
        assert_eq!(Drafts::parse(" tool-failure , sep-2145 "), Ok(Drafts::ALL));
        assert_eq!(Drafts::parse("all"), Ok(Drafts::ALL));
        let e = Drafts::parse("tool-failure,sep2145").unwrap_err();
        assert!(e.contains("\"sep2145\"") && e.contains("sep-2145"), "{e}");
        assert_eq!(Drafts::ALL.names(), "tool-failure,sep-2145");
        assert_eq!(Drafts::default().names(), "none");
        assert!(!Drafts::default().any());
    }

    #[test]
    fn ids_keep_their_type() {
        let a: RequestId = serde_json::from_str("1").unwrap();
        let b: RequestId = serde_json::from_str("\"1\"").unwrap();
        assert_ne!(a, b);
    }
}
