//! One exchange on the wire, judged by the core classifier as its bytes arrive.
//!
//! Both transports end in the same [`Sent`]: the verdict, the JSON-RPC response object for our
//! request id when one arrived (the classifier judges it; we keep a bounded copy to read the
//! result), the response head facts a record needs, and what is known about delivery for the
//! retry policy. Memory is bounded by the classifier's limits: a JSON body is kept up to
//! `maxBodyBytes`, an SSE stream only one event at a time.

use std::time::{Instant, SystemTime};

use mcp_triage_core::retry::Delivery;
use mcp_triage_core::sse::{Flow, SseItem, SseParser};
use mcp_triage_core::{
    classify, CallContext, Interruption, Limits, Outcome, ResponseClassifier, ResponseHead,
    StreamStats, Verdict,
};
use serde_json::Value;

/// The result of one exchange.
#[derive(Debug, Clone)]
pub(crate) struct Sent {
    pub status: Option<u16>,
    pub content_type: Option<String>,
    pub verdict: Verdict,
    /// The JSON-RPC response for our id, when one arrived and parsed.
    pub response: Option<Value>,
    pub session_id: Option<String>,
    pub scenario: Option<String>,
    pub delivery: Delivery,
    pub started: Instant,
    pub finished: Instant,
    pub sse: bool,
    /// Input rounds answered on the stream (legacy server requests).
    pub answered: u32,
    /// Findings of the client itself (not of the classifier), as (code, detail).
    pub notes: Vec<(String, String)>,
}

impl Sent {
    pub fn failed(verdict: Verdict, delivery: Delivery, started: Instant) -> Sent {
        Sent {
            status: None,
            content_type: None,
            verdict,
            response: None,
            session_id: None,
            scenario: None,
            delivery,
            started,
            finished: Instant::now(),
            sse: false,
            answered: 0,
            notes: Vec::new(),
        }
    }

    pub fn duration_ms(&self) -> u64 {
        self.finished.duration_since(self.started).as_millis() as u64
    }

    /// The `result` object of a successful JSON-RPC response.
    pub fn result(&self) -> Option<&Value> {
        self.response.as_ref().and_then(|r| r.get("result"))
    }

    /// The `error` object of a JSON-RPC error response.
    pub fn error(&self) -> Option<&Value> {
        self.response.as_ref().and_then(|r| r.get("error"))
    }

    pub fn stream(&self) -> Option<&StreamStats> {
        self.verdict.stream.as_ref()
    }
}

/// A message the server sent on a stream besides our response.
#[derive(Debug, Clone)]
pub(crate) enum Incoming {
    /// A server→client request (legacy elicitation, sampling, roots, ping).
    Request {
        /// The server's request id, echoed in our response.
        id: Value,
        /// The method, e.g. `elicitation/create`.
        method: String,
        /// Its params.
        params: Value,
    },
}

impl Incoming {
    /// The server→client request in a JSON-RPC message: one with a string `method` and an
    /// `id` (a notification has no id, a response no method). One rule for every transport
    /// (Streamable HTTP, legacy HTTP+SSE, stdio), so they cannot disagree on what to answer.
    pub(crate) fn request_in(m: &Value) -> Option<Incoming> {
        let method = m.get("method").and_then(Value::as_str)?;
        Some(Incoming::Request {
            id: m.get("id")?.clone(),
            method: method.to_string(),
            params: m.get("params").cloned().unwrap_or(Value::Null),
        })
    }
}

/// What the client did with one server request that arrived on a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Answered from what the caller configured; `input_round` when it answered a question
    /// (elicitation, sampling), not a `roots/list` or `ping` answered from configuration.
    Given { input_round: bool },
    /// Nothing was configured: refused the way the spec defines (`crate::answers::refusal`),
    /// so the server can finish; its final answer is still to come. The text says what was
    /// asked and how to answer it.
    Refused(String),
}

/// Why reading a response stops at a server request instead of answering it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum IncomingError {
    /// A server request on a 2026-07-28 stream, which that revision forbids.
    #[error("the server sent a request on a 2026-07-28 stream, which that revision forbids")]
    ModernStream,
}

/// Keeps the response for our id out of a body, bounded, alongside the classifier.
pub(crate) struct Capture {
    expected: Value,
    kind: CaptureKind,
    pub response: Option<Value>,
    pub incoming: Vec<Incoming>,
}

enum CaptureKind {
    Json {
        buf: Vec<u8>,
        max: usize,
        over: bool,
    },
    Sse(Box<SseParser>),
    None,
}

impl Capture {
    pub fn new(expected: Value, media_sse: bool, media_json: bool, limits: &Limits) -> Capture {
        let kind = if media_sse {
            CaptureKind::Sse(Box::new(SseParser::new(limits.max_event_bytes)))
        } else if media_json {
            CaptureKind::Json {
                buf: Vec::new(),
                max: usize::try_from(limits.max_body_bytes).unwrap_or(usize::MAX),
                over: false,
            }
        } else {
            CaptureKind::None
        };
        Capture {
            expected,
            kind,
            response: None,
            incoming: Vec::new(),
        }
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        match &mut self.kind {
            CaptureKind::Json { buf, max, over } => {
                if *over || buf.len() + chunk.len() > *max {
                    *over = true;
                    buf.clear();
                } else {
                    buf.extend_from_slice(chunk);
                }
            }
            CaptureKind::Sse(p) => {
                let mut messages: Vec<Value> = Vec::new();
                let _ = p.feed(chunk, &mut |item| {
                    if let SseItem::Event {
                        event_type, data, ..
                    } = item
                    {
                        if event_type == b"message" {
                            if let Ok(v) = serde_json::from_slice::<Value>(data) {
                                messages.push(v);
                            }
                        }
                    }
                    Flow::Continue
                });
                for m in messages {
                    self.take_message(m);
                }
            }
            CaptureKind::None => {}
        }
    }

    fn take_message(&mut self, m: Value) {
        let Some(o) = m.as_object() else { return };
        if let Some(inc) = Incoming::request_in(&m) {
            self.incoming.push(inc);
            return;
        }
        if o.get("id") == Some(&self.expected)
            && (o.contains_key("result") || o.contains_key("error"))
            && self.response.is_none()
        {
            self.response = Some(m);
        }
    }

    pub fn finish(&mut self) {
        if let CaptureKind::Json { buf, over, .. } = &mut self.kind {
            if !*over {
                if let Ok(v) = serde_json::from_slice::<Value>(buf) {
                    if v.get("id") == Some(&self.expected) {
                        self.response = Some(v);
                    }
                }
            }
            buf.clear();
        }
    }
}

/// The classification context for a request.
pub(crate) fn context(
    id: &Value,
    version: mcp_triage_core::ProtocolVersion,
    limits: Limits,
    schema: Option<std::sync::Arc<mcp_triage_core::OutputSchema>>,
    session: mcp_triage_core::RequestSession,
) -> CallContext {
    let rid: mcp_triage_core::RequestId =
        serde_json::from_value(id.clone()).unwrap_or(mcp_triage_core::RequestId::Number(0));
    let mut ctx = CallContext::new(rid)
        .with_protocol_version(version)
        .with_limits(limits)
        .with_now(SystemTime::now())
        .with_request_session(session);
    ctx.output_schema = schema;
    ctx
}

/// Reads a reqwest response through the classifier until decided, the end, an error or the
/// deadline. Server requests found on the stream are handed to `on_incoming`, which answers them
/// (legacy) and returns false to stop reading (no answer available).
pub(crate) async fn read_response<F, Fut>(
    resp: reqwest::Response,
    ctx: CallContext,
    deadline: tokio::time::Instant,
    started: Instant,
    on_incoming: F,
) -> Sent
where
    F: FnMut(Incoming) -> Fut,
    Fut: std::future::Future<Output = Result<Answer, IncomingError>>,
{
    let status = resp.status().as_u16();
    let head = response_head(&resp);
    let facts = HeadFacts::of(&head);
    let mut capture = Capture::new(
        expected_id_json(&ctx),
        facts.is_sse && head.is_success(),
        facts.is_json,
        &ctx.limits,
    );
    let cls = ResponseClassifier::new(&head, ctx);
    let mut answers = StreamAnswers::default();
    let verdict = read_body(
        resp,
        deadline,
        status,
        cls,
        &mut capture,
        &mut answers,
        on_incoming,
    )
    .await;
    capture.finish();
    let response = kept_response(&verdict, &mut capture);
    Sent {
        status: Some(status),
        content_type: facts.content_type,
        verdict,
        response,
        session_id: facts.session_id,
        scenario: facts.scenario,
        delivery: Delivery::Sent,
        started,
        finished: Instant::now(),
        sse: facts.is_sse,
        answered: answers.rounds,
        notes: answers.notes,
    }
}

/// The response head as the core reads it: reqwest's status and every header whose value is
/// text (a header of other bytes is no rule's input).
fn response_head(resp: &reqwest::Response) -> ResponseHead {
    let mut head = ResponseHead::new(resp.status().as_u16());
    for (k, v) in resp.headers() {
        if let Ok(v) = v.to_str() {
            head = head.header(k.as_str(), v);
        }
    }
    head
}

/// What the client itself reads from the response head, besides the classifier: the values a
/// record shows (sanitized, since they are the server's text) and the body's media kind, which
/// picks what [`Capture`] keeps.
struct HeadFacts {
    content_type: Option<String>,
    session_id: Option<String>,
    scenario: Option<String>,
    is_sse: bool,
    is_json: bool,
}

impl HeadFacts {
    fn of(head: &ResponseHead) -> HeadFacts {
        let content_type = head
            .get("content-type")
            .map(|c| mcp_triage_core::sanitize_line(c, 100));
        let session_id = head
            .get("mcp-session-id")
            .map(|s| mcp_triage_core::sanitize_line(s, 200));
        let scenario = head
            .get("x-kitchen-scenario")
            .map(|s| mcp_triage_core::sanitize_line(s, 100));
        let media = content_type
            .as_deref()
            .map(mcp_triage_core::http::MediaType::parse);
        let kind = media.as_ref().map(|m| m.kind());
        HeadFacts {
            content_type,
            session_id,
            scenario,
            is_sse: kind == Some(mcp_triage_core::http::MediaTypeKind::EventStream),
            is_json: kind == Some(mcp_triage_core::http::MediaTypeKind::Json),
        }
    }
}

/// The body loop: each chunk goes to the capture and the classifier, and the server requests it
/// held are answered, until the verdict is decided, the body ends, the connection breaks, the
/// deadline passes or a server request cannot be answered. Its own function so that every way
/// the reading ends is one `return` in one place.
async fn read_body<F, Fut>(
    mut resp: reqwest::Response,
    deadline: tokio::time::Instant,
    status: u16,
    mut cls: ResponseClassifier,
    capture: &mut Capture,
    answers: &mut StreamAnswers,
    mut on_incoming: F,
) -> Verdict
where
    F: FnMut(Incoming) -> Fut,
    Fut: std::future::Future<Output = Result<Answer, IncomingError>>,
{
    loop {
        let bytes = match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Err(_) => {
                return cls.interrupted(Interruption::TimedOut(
                    "the deadline passed while reading the response".into(),
                ))
            }
            Ok(Err(e)) => {
                return cls.interrupted(Interruption::ConnectionLost(format!(
                    "the connection broke: {}",
                    error_chain(&e)
                )))
            }
            Ok(Ok(None)) => return cls.finish(),
            Ok(Ok(Some(bytes))) => bytes,
        };
        capture.feed(&bytes);
        cls.feed(&bytes);
        let incoming = std::mem::take(&mut capture.incoming);
        if let Some(why) = answers.answer(incoming, &mut on_incoming).await {
            return answers.unanswered(why, status);
        }
        if cls.is_decided() {
            return cls.finish();
        }
    }
}

/// What answering server requests on the stream left for the record: the input rounds answered
/// and the client's own notes (refusals, the request nobody could answer).
#[derive(Default)]
struct StreamAnswers {
    rounds: u32,
    notes: Vec<(String, String)>,
}

impl StreamAnswers {
    /// Hands the server requests one chunk held to `on_incoming`, in order: an answer given
    /// counts its input round, a refusal is noted. The first request that cannot be answered
    /// is returned and the rest are dropped, since the reading stops there.
    async fn answer<F, Fut>(
        &mut self,
        incoming: Vec<Incoming>,
        on_incoming: &mut F,
    ) -> Option<IncomingError>
    where
        F: FnMut(Incoming) -> Fut,
        Fut: std::future::Future<Output = Result<Answer, IncomingError>>,
    {
        for inc in incoming {
            match on_incoming(inc).await {
                Ok(Answer::Given { input_round }) => self.rounds += u32::from(input_round),
                Ok(Answer::Refused(why)) => self.notes.push(("INPUT_UNANSWERED".into(), why)),
                Err(why) => return Some(why),
            }
        }
        None
    }

    /// The verdict when a server request on the stream cannot be answered: the call needs
    /// input the client does not have (noted, with the response's status).
    fn unanswered(&mut self, why: IncomingError, status: u16) -> Verdict {
        let why = why.to_string();
        self.notes
            .push(("INPUT_UNANSWERED".to_string(), why.clone()));
        let mut v = Verdict::new(Outcome::InputRequired).with_detail(why);
        v.status = Some(status);
        v
    }
}

/// The JSON-RPC response kept for the caller: only for outcomes whose verdict was read from a
/// response object for our id (a result, an error, an HTTP error's body); after a broken
/// envelope, a lost connection or a deadline the copy is not an answer the caller may read.
fn kept_response(verdict: &Verdict, capture: &mut Capture) -> Option<Value> {
    match verdict.outcome {
        Outcome::HttpError
        | Outcome::JsonrpcError
        | Outcome::ToolSuccess
        | Outcome::ToolError
        | Outcome::InputRequired
        | Outcome::TaskCreated
        | Outcome::InvalidToolResult => capture.response.take(),
        _ => None,
    }
}

fn expected_id_json(ctx: &CallContext) -> Value {
    serde_json::to_value(&ctx.expected_id).unwrap_or(Value::Null)
}

/// Judges one stdio line (a complete JSON-RPC message) as a JSON body.
pub(crate) fn classify_line(line: &[u8], ctx: &CallContext) -> (Verdict, Option<Value>) {
    let head = ResponseHead::new(200).content_type("application/json");
    let v = classify(&head, line, ctx);
    let response = serde_json::from_slice::<Value>(line).ok();
    (v, response)
}

/// The error and its sources, one line (reqwest hides the useful part in the chain).
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    mcp_triage_core::sanitize_line(&s, 300)
}
