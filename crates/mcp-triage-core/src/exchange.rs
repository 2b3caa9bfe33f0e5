//! The exchange-file format: one recorded HTTP response to a `tools/call` per JSON line
//! (`status`, `contentType`, `body` or `bodyBase64`, `expectId`, `headers`). mcp-triage adds
//! optional `protocolVersion` (`""`: not given), `outputSchema` and `now` (an HTTP-date) per
//! line, and reads `end` of a capture line (`proxy --capture`, docs/capture-format.md): a body
//! that broke off is judged as broken off, as the proxy judged it. Other members (`name`,
//! `expect`, ...) are ignored. The `end` words are the capture format's
//! ([`mcp_triage_wire::capture::BodyEnd`]); the rest of the line is read here, borrowed from
//! the text, since `classify --batch` reads millions of lines and needs no capture member but
//! `end` and `method`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use base64::Engine as _;
use serde::Deserialize;

use crate::record_outcome::{outcome_and_layer, RecordOutcome};
use crate::{
    classify, CallContext, Interruption, Layer, Outcome, OutputSchema, ProtocolVersion, RequestId,
    RequestKind, ResponseClassifier, ResponseHead, Verdict,
};

/// One parsed line.
#[derive(Debug)]
pub struct Exchange<'a> {
    /// Status and headers (`contentType` becomes a `Content-Type` header).
    pub head: ResponseHead,
    /// The body bytes.
    pub body: Cow<'a, [u8]>,
    /// The expected id (default 1).
    pub expected_id: RequestId,
    /// The line's `protocolVersion`, if it names one.
    pub protocol_version: Option<ProtocolVersion>,
    /// The line's compiled `outputSchema`, if any.
    pub output_schema: Option<Arc<OutputSchema>>,
    /// The line's `now`, if any.
    pub now: Option<SystemTime>,
    /// How the body ended, for a capture line (`end`); None: it is the whole body.
    pub end: Option<BodyEnd>,
    /// Which request the line answers, from its `method` (a capture line has it): a
    /// `tasks/get` answer is a task's state. Absent: a `tools/call`, as always.
    pub request_kind: RequestKind,
    /// The line's `method`, if it names one.
    pub method: Option<Cow<'a, str>>,
    /// The line is a capture line (it has `transport`, as every `proxy --capture` and `wrap
    /// --capture` line does): without `method` it answers no single JSON-RPC request.
    pub captured: bool,
}

/// What a line answers, as `classify --batch`, the ClickHouse function and the packages count
/// it: a tool call apart from every other kind, so a capture's totals of `initialize`,
/// `tools/list`, notifications and GET streams do not read as failed tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExchangeKind<'m> {
    /// `tools/call`, or a line of an exchange file that names no method (the seed's format:
    /// every line is a tool call).
    ToolCall,
    /// `tasks/get`: a poll of a task a `tools/call` created.
    TaskPoll,
    /// Another JSON-RPC request (`initialize`, `tools/list`, ...): its method.
    Request(&'m str),
    /// A notification (`notifications/...`): the client expects no JSON-RPC answer.
    Notification(&'m str),
    /// A capture line without `method`: a GET stream, a batch, a request that is not
    /// JSON-RPC (`/.well-known/...`, a token endpoint).
    NotJsonRpc,
}

/// The kind name of [`ExchangeKind::NotJsonRpc`] in counts.
pub const NOT_JSON_RPC: &str = "(not JSON-RPC)";

impl<'m> ExchangeKind<'m> {
    /// The kind of a line by its `method` (None: not named) and whether it is a capture line.
    pub fn of(method: Option<&'m str>, captured: bool) -> ExchangeKind<'m> {
        match method {
            None | Some("") if captured => ExchangeKind::NotJsonRpc,
            None | Some("") | Some("tools/call") => ExchangeKind::ToolCall,
            Some("tasks/get") => ExchangeKind::TaskPoll,
            Some(m) if m.starts_with("notifications/") => ExchangeKind::Notification(m),
            Some(m) => ExchangeKind::Request(m),
        }
    }

    /// The name counts are kept under: the method, or [`NOT_JSON_RPC`].
    pub fn name(self) -> &'m str {
        match self {
            ExchangeKind::ToolCall => "tools/call",
            ExchangeKind::TaskPoll => "tasks/get",
            ExchangeKind::Request(m) | ExchangeKind::Notification(m) => m,
            ExchangeKind::NotJsonRpc => NOT_JSON_RPC,
        }
    }

    /// What a line of this kind with `status` and verdict `v` is counted as: the verdict's
    /// outcome for a tool call; for a request's result `RESULT` (a result to another method is
    /// no tool result, as the proxy's records say); a 2xx to a notification `ACCEPTED` and a
    /// 2xx to a request that is not JSON-RPC `FORWARDED` (no JSON-RPC answer was due); any
    /// other answer keeps the verdict's outcome (an `HTTP_ERROR`, a `CONNECTION_ERROR` hold
    /// for every kind).
    pub fn counted(self, status: u16, v: &Verdict) -> (RecordOutcome, Layer) {
        let answered_2xx = (200..300).contains(&status)
            && !matches!(
                v.outcome,
                Outcome::ConnectionError | Outcome::Timeout | Outcome::LimitExceeded
            );
        match self {
            ExchangeKind::ToolCall => outcome_and_layer(None, v.outcome),
            ExchangeKind::TaskPoll | ExchangeKind::Request(_) => {
                outcome_and_layer(Some(self.name()), v.outcome)
            }
            ExchangeKind::Notification(_) if answered_2xx => {
                (RecordOutcome::Accepted, Layer::Transport)
            }
            ExchangeKind::NotJsonRpc if answered_2xx => {
                (RecordOutcome::Forwarded, Layer::Transport)
            }
            ExchangeKind::Notification(_) | ExchangeKind::NotJsonRpc => {
                (RecordOutcome::Verdict(v.outcome), v.outcome.layer())
            }
        }
    }
}

/// How a captured response body ended (a capture line's `end`): the capture format's own type,
/// so the words the proxy writes and the ones read here have one home.
pub use mcp_triage_wire::capture::BodyEnd;

/// Why a line is not an exchange: one variant per rule of the format, so a caller (the
/// judge's replay, a test) can tell which rule a line broke without reading the sentence. The
/// sentences are what `classify --batch` reports for a bad line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExchangeError {
    /// The line is not UTF-8.
    InvalidUtf8 {
        /// Where the invalid bytes begin.
        at: usize,
    },
    /// The line is not a JSON object with the members' types (serde_json's sentence).
    NotAnObject(String),
    /// `status` is an integer outside 100-999.
    StatusOutOfRange(String),
    /// `status` is not an integer (the JSON value as given).
    StatusNotAnInteger(String),
    /// Both `body` and `bodyBase64`.
    TwoBodies,
    /// `bodyBase64` is not base64 (the decoder's sentence).
    BadBase64(String),
    /// `protocolVersion` names no revision the core knows.
    UnknownProtocolVersion(String),
    /// `outputSchema` does not compile.
    OutputSchema(crate::SchemaError),
    /// `now` is not an HTTP-date.
    BadNow(String),
    /// `end` is none of the capture format's words.
    UnknownEnd(String),
}

impl std::fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExchangeError::InvalidUtf8 { at } => {
                write!(f, "invalid UTF-8 at byte {at} (an exchange file is UTF-8)")
            }
            ExchangeError::NotAnObject(e) => write!(f, "not an exchange object: {e}"),
            ExchangeError::StatusOutOfRange(n) => {
                write!(f, "\"status\" {n} is not an HTTP status (100-999)")
            }
            ExchangeError::StatusNotAnInteger(v) => {
                write!(f, "\"status\" must be an integer, got {v}")
            }
            ExchangeError::TwoBodies => {
                f.write_str("a line has \"body\" or \"bodyBase64\", not both")
            }
            ExchangeError::BadBase64(e) => write!(f, "\"bodyBase64\" is not base64: {e}"),
            ExchangeError::UnknownProtocolVersion(v) => {
                write!(f, "\"protocolVersion\" {v:?} is not a known revision")
            }
            ExchangeError::OutputSchema(e) => write!(f, "{e}"),
            ExchangeError::BadNow(d) => write!(f, "\"now\" {d:?} is not an HTTP-date"),
            ExchangeError::UnknownEnd(e) => {
                write!(f, "\"end\" {e:?} is not one of {}", BodyEnd::listed(", "))
            }
        }
    }
}

impl std::error::Error for ExchangeError {}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    status: serde_json::Value,
    #[serde(borrow, default)]
    content_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    body: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    body_base64: Option<Cow<'a, str>>,
    #[serde(default)]
    expect_id: Option<RequestId>,
    #[serde(default)]
    headers: Option<BTreeMap<String, String>>,
    #[serde(default)]
    protocol_version: Option<String>,
    #[serde(default)]
    output_schema: Option<serde_json::Value>,
    #[serde(default)]
    now: Option<String>,
    #[serde(borrow, default)]
    end: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    transport: Option<Cow<'a, str>>,
}

impl<'a> Exchange<'a> {
    /// Parses one line of an exchange file.
    pub fn parse(line: &'a [u8]) -> Result<Exchange<'a>, ExchangeError> {
        let text = simdutf8::basic::from_utf8(line).map_err(|_| {
            let at = simdutf8::compat::from_utf8(line)
                .err()
                .map_or(0, |e| e.valid_up_to());
            ExchangeError::InvalidUtf8 { at }
        })?;
        let l: Line<'a> =
            serde_json::from_str(text).map_err(|e| ExchangeError::NotAnObject(e.to_string()))?;
        let status = match &l.status {
            serde_json::Value::Number(n) => n
                .as_u64()
                .and_then(|s| u16::try_from(s).ok())
                .filter(|s| (100..=999).contains(s))
                .ok_or_else(|| ExchangeError::StatusOutOfRange(n.to_string()))?,
            other => return Err(ExchangeError::StatusNotAnInteger(other.to_string())),
        };
        let mut head = ResponseHead::new(status);
        if let Some(ct) = l.content_type.as_deref() {
            head = head.content_type(ct);
        }
        for (name, value) in l.headers.unwrap_or_default() {
            if name.eq_ignore_ascii_case("content-type") && l.content_type.is_some() {
                continue;
            }
            head = head.header(name, value);
        }
        let body: Cow<'a, [u8]> = match (l.body, l.body_base64) {
            (Some(_), Some(_)) => return Err(ExchangeError::TwoBodies),
            (Some(Cow::Borrowed(s)), None) => Cow::Borrowed(s.as_bytes()),
            (Some(Cow::Owned(s)), None) => Cow::Owned(s.into_bytes()),
            (None, Some(b)) => Cow::Owned(
                base64::engine::general_purpose::STANDARD
                    .decode(b.as_bytes())
                    .map_err(|e| ExchangeError::BadBase64(e.to_string()))?,
            ),
            (None, None) => Cow::Borrowed(&b""[..]),
        };
        // `""` is "not given", as for `contentType`: a table column (a ClickHouse UDF's
        // argument) has a value on every row, and an empty one must not make the row bad.
        let protocol_version = match l.protocol_version.filter(|v| !v.is_empty()) {
            None => None,
            Some(v) => Some(
                ProtocolVersion::parse(&v)
                    .ok_or_else(|| ExchangeError::UnknownProtocolVersion(v.clone()))?,
            ),
        };
        let output_schema = match l.output_schema {
            None => None,
            Some(s) => Some(Arc::new(
                OutputSchema::compile(&s).map_err(ExchangeError::OutputSchema)?,
            )),
        };
        let now = match l.now {
            None => None,
            Some(d) => {
                Some(httpdate::parse_http_date(&d).map_err(|_| ExchangeError::BadNow(d.clone()))?)
            }
        };
        let end = match l.end.as_deref() {
            None => None,
            Some(e) => {
                Some(BodyEnd::parse(e).ok_or_else(|| ExchangeError::UnknownEnd(e.to_string()))?)
            }
        };
        Ok(Exchange {
            head,
            body,
            expected_id: l.expect_id.unwrap_or(RequestId::Number(1)),
            protocol_version,
            output_schema,
            now,
            end,
            request_kind: l
                .method
                .as_deref()
                .map_or(RequestKind::ToolCall, RequestKind::from_method),
            method: l.method,
            captured: l.transport.is_some(),
        })
    }

    /// The line's verdict under `ctx` (see [`Exchange::context`]): the whole body classified,
    /// or, for a capture line whose body broke off, the body so far classified as broken off
    /// (as the recording proxy judged it), or, without a response head, the recorder's failure
    /// (`TIMEOUT` when it answered 408 or 504, `CONNECTION_ERROR` otherwise).
    pub fn classify(&self, ctx: &CallContext) -> Verdict {
        let broken = |why: Interruption| {
            let mut c = ResponseClassifier::new(&self.head, ctx.clone());
            c.feed(&self.body);
            c.interrupted(why)
        };
        match self.end {
            None | Some(BodyEnd::Complete) => classify(&self.head, &self.body, ctx),
            Some(BodyEnd::UpstreamClosed) => broken(Interruption::ConnectionLost(
                "the upstream closed the connection (captured end: upstream_closed)".into(),
            )),
            Some(BodyEnd::ClientCancelled) => broken(Interruption::ConnectionLost(
                "the client closed the connection (captured end: client_cancelled)".into(),
            )),
            Some(BodyEnd::Timeout) => broken(Interruption::TimedOut(
                "a time limit ended the body (captured end: timeout)".into(),
            )),
            Some(BodyEnd::NoResponse) => {
                let detail = format!(
                    "no response head came (captured end: no_response; the recorder answered {})",
                    self.head.status
                );
                if matches!(self.head.status, 408 | 504) {
                    Verdict::timeout(detail)
                } else {
                    Verdict::connection_error(detail)
                }
            }
        }
    }

    /// What the line answers (see [`ExchangeKind`]).
    pub fn kind(&self) -> ExchangeKind<'_> {
        ExchangeKind::of(self.method.as_deref(), self.captured)
    }

    /// The line's verdict and what it counts as (see [`ExchangeKind::counted`]).
    pub fn classify_counted(&self, ctx: &CallContext) -> (Verdict, RecordOutcome) {
        let v = self.classify(ctx);
        let (counted, _) = self.kind().counted(self.head.status, &v);
        (v, counted)
    }

    /// The context for this line: its own settings over `base`.
    pub fn context(&self, base: &CallContext) -> CallContext {
        let mut ctx = base.clone();
        ctx.expected_id = self.expected_id.clone();
        if let Some(v) = self.protocol_version {
            ctx.protocol_version = v;
        }
        if let Some(s) = &self.output_schema {
            ctx.output_schema = Some(s.clone());
        }
        if let Some(now) = self.now {
            ctx.now = now;
        }
        ctx.request_kind = self.request_kind;
        ctx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_seed_line() {
        let x = Exchange::parse(
            br#"{"status":200,"contentType":"application/json","body":"{\"a\":1}","expectId":7}"#,
        )
        .unwrap();
        assert_eq!(x.head.get("content-type"), Some("application/json"));
        assert_eq!(&*x.body, br#"{"a":1}"#);
        assert_eq!(x.expected_id, RequestId::Number(7));
    }

    /// A capture line's `end` decides how its body is judged: a cut SSE stream is broken off,
    /// not merely short; no response head is the recorder's failure, whatever its status.
    #[test]
    fn captured_ends_are_judged_as_the_proxy_judged_them() {
        let ctx = CallContext::new(RequestId::Number(1));
        let sse = r#""status":200,"contentType":"text/event-stream","body":"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n""#;
        let (whole, cut) = (
            format!("{{{sse}}}"),
            format!(r#"{{{sse},"end":"upstream_closed"}}"#),
        );
        let whole = Exchange::parse(whole.as_bytes()).unwrap();
        let cut = Exchange::parse(cut.as_bytes()).unwrap();
        assert_eq!(cut.end, Some(BodyEnd::UpstreamClosed));
        let (w, c) = (whole.classify(&ctx), cut.classify(&ctx));
        assert_eq!(c.outcome, crate::Outcome::StreamIncomplete, "{c:?}");
        assert!(
            c.detail
                .as_deref()
                .unwrap_or("")
                .contains("upstream_closed"),
            "{c:?}"
        );
        assert!(w.detail != c.detail);
        let none = Exchange::parse(br#"{"status":502,"end":"no_response"}"#).unwrap();
        assert_eq!(none.classify(&ctx).outcome, crate::Outcome::ConnectionError);
        let late = Exchange::parse(br#"{"status":504,"end":"no_response"}"#).unwrap();
        assert_eq!(late.classify(&ctx).outcome, crate::Outcome::Timeout);
        let plain = Exchange::parse(br#"{"status":502}"#).unwrap();
        assert_eq!(plain.classify(&ctx).outcome, crate::Outcome::HttpError);
    }

    /// The members this reader shares with a capture line mean what the writer meant: every
    /// line of the capture format's golden file (written by the proxy) reads here with the
    /// status, content type, body, id, protocol version, `end` and method that the format's
    /// own reader finds in it.
    #[test]
    fn capture_lines_read_as_the_format_wrote_them() {
        use mcp_triage_wire::capture::CaptureLine;
        let golden = include_str!("../../mcp-triage-wire/tests/data/capture-v1.jsonl");
        for text in golden.lines() {
            let line = CaptureLine::read(text).unwrap();
            let x = Exchange::parse(text.as_bytes()).unwrap();
            assert_eq!(x.head.status, line.status, "{text}");
            assert_eq!(x.head.get("content-type"), line.content_type.as_deref());
            let body = match (&line.body, &line.body_base64) {
                (Some(b), _) => b.as_bytes().to_vec(),
                (None, Some(b)) => base64::engine::general_purpose::STANDARD.decode(b).unwrap(),
                (None, None) => Vec::new(),
            };
            assert_eq!(&*x.body, &body[..], "{text}");
            let id = line
                .expect_id
                .map_or(RequestId::Number(1), |v| serde_json::from_value(v).unwrap());
            assert_eq!(x.expected_id, id);
            let version = line.protocol_version.as_deref().map(ProtocolVersion::parse);
            assert_eq!(x.protocol_version, version.flatten());
            assert_eq!(x.end, Some(line.end));
            let kind = line
                .method
                .as_deref()
                .map_or(RequestKind::ToolCall, RequestKind::from_method);
            assert_eq!(x.request_kind, kind);
        }
    }

    #[test]
    fn an_empty_protocol_version_is_not_given() {
        let x = Exchange::parse(br#"{"status":200,"protocolVersion":""}"#).unwrap();
        assert_eq!(x.protocol_version, None);
        let x = Exchange::parse(br#"{"status":200,"protocolVersion":"2025-06-18"}"#).unwrap();
        assert_eq!(x.protocol_version, ProtocolVersion::parse("2025-06-18"));
    }

    /// A capture line is counted by its kind: a line without `method` in a capture answers no
    /// single JSON-RPC request, in an exchange file (the seed's format) it is a tool call.
    #[test]
    fn a_lines_kind_comes_from_its_method_and_whether_it_is_captured() {
        let kind = |line: &[u8]| {
            let x = Exchange::parse(line).unwrap();
            let name = x.kind().name().to_string();
            let v = x.classify(&x.context(&CallContext::new(RequestId::Number(1))));
            let (counted, _) = x.kind().counted(x.head.status, &v);
            (name, counted.as_str())
        };
        let cases: [(&[u8], (&str, &str)); 7] = [
            (br#"{"status":503}"#, ("tools/call", "HTTP_ERROR")),
            (
                br#"{"status":200,"transport":"http"}"#,
                ("(not JSON-RPC)", "FORWARDED"),
            ),
            (
                br#"{"status":404,"transport":"http"}"#,
                ("(not JSON-RPC)", "HTTP_ERROR"),
            ),
            (
                br#"{"status":202,"transport":"http","method":"notifications/initialized"}"#,
                ("notifications/initialized", "ACCEPTED"),
            ),
            (
                br#"{"status":200,"contentType":"application/json","body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}","method":"tools/list","transport":"http"}"#,
                ("tools/list", "RESULT"),
            ),
            (
                br#"{"status":502,"end":"no_response","method":"initialize","transport":"http"}"#,
                ("initialize", "CONNECTION_ERROR"),
            ),
            (
                br#"{"status":200,"contentType":"application/json","body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}","method":"tools/call","transport":"http"}"#,
                ("tools/call", "TOOL_SUCCESS"),
            ),
        ];
        for (line, (name, counted)) in cases {
            let got = kind(line);
            assert_eq!(
                (got.0.as_str(), got.1),
                (name, counted),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn an_unknown_end_names_the_words() {
        let e = Exchange::parse(br#"{"status":200,"end":"finished"}"#).unwrap_err();
        assert_eq!(e, ExchangeError::UnknownEnd("finished".into()));
        assert_eq!(
            e.to_string(),
            "\"end\" \"finished\" is not one of complete, upstream_closed, client_cancelled, timeout, no_response"
        );
    }

    #[test]
    fn base64_and_errors() {
        let x = Exchange::parse(br#"{"status":200,"bodyBase64":"/w==","contentType":""}"#).unwrap();
        assert_eq!(&*x.body, b"\xff");
        assert_eq!(x.head.get("content-type"), None);
        type E = ExchangeError;
        let is = |line: &[u8], want: fn(&E) -> bool, words: &str| {
            let e = Exchange::parse(line).unwrap_err();
            assert!(want(&e), "{}: {e:?}", String::from_utf8_lossy(line));
            assert!(e.to_string().contains(words), "{e}");
        };
        is(
            br#"{"status":"200"}"#,
            |e| matches!(e, E::StatusNotAnInteger(_)),
            "must be an integer",
        );
        is(
            br#"{"status":20}"#,
            |e| matches!(e, E::StatusOutOfRange(_)),
            "100-999",
        );
        is(
            br#"{"status":200,"body":"a","bodyBase64":"YQ=="}"#,
            |e| *e == E::TwoBodies,
            "not both",
        );
        is(
            br#"{"status":200,"bodyBase64":"***"}"#,
            |e| matches!(e, E::BadBase64(_)),
            "not base64",
        );
        is(
            br#"{"status":200,"protocolVersion":"2099-01-01"}"#,
            |e| matches!(e, E::UnknownProtocolVersion(v) if v == "2099-01-01"),
            "not a known revision",
        );
        is(
            br#"{"status":200,"now":"yesterday"}"#,
            |e| matches!(e, E::BadNow(_)),
            "HTTP-date",
        );
        is(
            br#"{"status":200,"outputSchema":{"type":12}}"#,
            |e| matches!(e, E::OutputSchema(_)),
            "",
        );
        is(b"\xff", |e| matches!(e, E::InvalidUtf8 { at: 0 }), "UTF-8");
        for bad in [&br#""text""#[..], b"{"] {
            is(
                bad,
                |e| matches!(e, E::NotAnObject(_)),
                "not an exchange object",
            );
        }
    }
}
