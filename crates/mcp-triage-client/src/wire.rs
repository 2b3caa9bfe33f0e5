//! One exchange on the wire, judged by the core classifier as its bytes arrive.
//!
//! Both transports end in the same [`Sent`]: the verdict, the JSON-RPC response object for our
//! request id when one arrived (the classifier judges it and, with `keep_response`, hands back
//! the message it parsed, so the body is parsed once), the response head facts a record needs,
//! and what is known about delivery for the retry policy. Memory is bounded by the classifier's
//! limits: a JSON body is kept up to `maxBodyBytes`, an SSE stream only one event at a time.

use std::time::{Instant, SystemTime};

use crate::keepalive::Keepalive;
use mcp_triage_core::retry::Delivery;
use mcp_triage_core::{
    classify_with_response, CallContext, Interruption, Limits, Outcome, ResponseClassifier,
    ResponseHead, StreamEvent, StreamStats, Verdict,
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

    /// The server→client request the classifier saw on a Streamable HTTP stream (the same rule
    /// as [`Incoming::request_in`], applied by the core's parse of the event).
    fn from_event(ev: StreamEvent) -> Option<Incoming> {
        match ev {
            StreamEvent::ServerRequest {
                id, method, params, ..
            } => Some(Incoming::Request {
                id,
                method,
                params: params.unwrap_or(Value::Null),
            }),
            _ => None,
        }
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
/// deadline. Server requests found on the stream (the classifier's observed messages) are handed
/// to `on_incoming`, which answers them (legacy) or says why reading stops there. The response
/// for our id is the classifier's kept message (`keep_response`): the body is parsed once.
pub(crate) async fn read_response<F, Fut>(
    resp: reqwest::Response,
    mut ctx: CallContext,
    (deadline, keepalive): (tokio::time::Instant, Option<&Keepalive>),
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
    ctx.keep_response = true;
    ctx.observe_messages = true;
    // "Now" is when the answer came, not when the request left: a wait the server names as a
    // time (a Retry-After date, a declared retryNotBefore) is counted from its answer.
    ctx.now = SystemTime::now();
    let cls = ResponseClassifier::new(&head, ctx);
    let mut answers = StreamAnswers::default();
    let reading = Reading {
        deadline,
        keepalive,
        status,
    };
    let (verdict, response) = read_body(resp, reading, cls, &mut answers, on_incoming).await;
    let response = kept_response(&verdict, response);
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
/// record shows (sanitized, since they are the server's text) and whether the body is a stream.
struct HeadFacts {
    content_type: Option<String>,
    session_id: Option<String>,
    scenario: Option<String>,
    is_sse: bool,
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
        }
    }
}

/// The body loop: each chunk goes to the classifier, and the server requests it saw are
/// answered, until the verdict is decided, the body ends, the connection breaks, the deadline
/// passes or a server request cannot be answered. Returns the verdict and the response the
/// classifier kept. Its own function so that every way the reading ends is one `return` in one
/// place.
async fn read_body<F, Fut>(
    mut resp: reqwest::Response,
    mut reading: Reading<'_>,
    mut cls: ResponseClassifier,
    answers: &mut StreamAnswers,
    mut on_incoming: F,
) -> (Verdict, Option<Value>)
where
    F: FnMut(Incoming) -> Fut,
    Fut: std::future::Future<Output = Result<Answer, IncomingError>>,
{
    let status = reading.status;
    loop {
        let bytes = match tokio::time::timeout_at(reading.deadline, resp.chunk()).await {
            Err(_) => {
                return cls.interrupted_with_response(Interruption::TimedOut(
                    "the deadline passed while reading the response".into(),
                ))
            }
            Ok(Err(e)) => {
                return cls.interrupted_with_response(Interruption::ConnectionLost(format!(
                    "the connection broke: {}",
                    error_chain(&e)
                )))
            }
            Ok(Ok(None)) => return cls.finish_with_response(),
            Ok(Ok(Some(bytes))) => bytes,
        };
        cls.feed(&bytes);
        let incoming: Vec<Incoming> = std::iter::from_fn(|| cls.poll_event())
            .inspect(|ev| reading.saw(ev))
            .filter_map(Incoming::from_event)
            .collect();
        if let Some(why) = answers.answer(incoming, &mut on_incoming).await {
            return (answers.unanswered(why, status), cls.take_response());
        }
        if cls.is_decided() {
            return cls.finish_with_response();
        }
    }
}

/// How a body is read: until `deadline`, which progress for the call's token moves
/// ([`Keepalive`]); `status` is the response's, for a verdict made here.
struct Reading<'k> {
    deadline: tokio::time::Instant,
    keepalive: Option<&'k Keepalive>,
    status: u16,
}

impl Reading<'_> {
    /// A stream event: progress for our token moves the deadline.
    fn saw(&mut self, ev: &StreamEvent) {
        let (Some(k), StreamEvent::Notification { data, .. }) = (self.keepalive, ev) else {
            return;
        };
        let progress = serde_json::from_str::<Value>(data).is_ok_and(|m| k.is_progress(&m));
        if progress {
            self.deadline = k.extended(self.deadline, tokio::time::Instant::now());
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
/// (The classifier keeps the message for our id whatever the verdict; this is the filter.)
fn kept_response(verdict: &Verdict, response: Option<Value>) -> Option<Value> {
    match verdict.outcome {
        Outcome::HttpError
        | Outcome::JsonrpcError
        | Outcome::ToolSuccess
        | Outcome::ToolError
        | Outcome::InputRequired
        | Outcome::TaskCreated
        | Outcome::InvalidToolResult => response,
        _ => None,
    }
}

/// Judges one stdio line (a complete JSON-RPC message, routed to us by its id) as a JSON body,
/// with the response message the classifier parsed from it.
pub(crate) fn classify_line(line: &[u8], ctx: &CallContext) -> (Verdict, Option<Value>) {
    let head = ResponseHead::new(200).content_type("application/json");
    if ctx.drafts.tool_failure {
        // A declared retryNotBefore is a time: count its wait from this line, not from when
        // the request was written (the only rule that reads "now" on a line).
        let now = CallContext {
            now: SystemTime::now(),
            ..ctx.clone()
        };
        return classify_with_response(&head, line, &now);
    }
    classify_with_response(&head, line, ctx)
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
