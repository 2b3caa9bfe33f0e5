//! Rule 4: an SSE response stream to one `tools/call`, judged event by event.

use std::collections::VecDeque;

use crate::json::{self, HeldValue, Node, ParseFailure};
use crate::protocol::{CallContext, ProtocolVersion};
use crate::rules::{classify_response_object, id_matches, Findings, IdMatch};
use crate::verdict::{sanitize_line, LimitHit, Outcome, StreamStats, Verdict};

use super::parser::{Flow, SseItem, SseParser};

/// A JSON-RPC message seen on the stream before the terminal response, for callers that set
/// [`CallContext::observe_messages`] (a client answers server requests; a proxy logs them).
/// Non-exhaustive, as are its variants: match with `..`, new kinds and fields may come.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// A notification (`notifications/progress`, `notifications/message`, ...).
    #[non_exhaustive]
    Notification {
        /// The method.
        method: String,
        /// The event's data: the message as sent.
        data: String,
        /// The last event id at this event.
        event_id: Option<String>,
    },
    /// A request from the server (legacy `elicitation/create`, `sampling/createMessage`,
    /// `roots/list`): the client answers it by POSTing a response with this id.
    #[non_exhaustive]
    ServerRequest {
        /// The request id, as JSON.
        id: serde_json::Value,
        /// The method.
        method: String,
        /// Its `params`, as JSON (`None` when absent), from the classifier's own parse: a
        /// client answering the request needs them and need not parse `data` again.
        params: Option<serde_json::Value>,
        /// The event's data: the message as sent.
        data: String,
        /// The last event id at this event.
        event_id: Option<String>,
    },
    /// A response to another request id.
    #[non_exhaustive]
    OtherResponse {
        /// The event's data.
        data: String,
    },
}

/// The state machine for one `text/event-stream` response body: the event-stream parser and
/// the judge of what it yields, in separate fields so that the parser can hand events to the
/// judge while both are borrowed (no moving the parser out and back per chunk).
#[derive(Debug)]
pub struct SseClassifier {
    parser: SseParser,
    judge: StreamJudge,
}

/// Everything but the parser: what the stream carried so far and the verdict once known.
#[derive(Debug)]
struct StreamJudge {
    ctx: CallContext,
    stats: StreamStats,
    findings: Findings,
    verdict: Option<Verdict>,
    first_other_id: Option<String>,
    events: VecDeque<StreamEvent>,
    /// The response for the expected id, with [`CallContext::keep_response`].
    kept: HeldValue,
}

impl SseClassifier {
    /// A classifier for the stream answering `ctx.expected_id`.
    pub fn new(ctx: CallContext) -> SseClassifier {
        SseClassifier {
            parser: SseParser::new(ctx.limits.max_event_bytes),
            judge: StreamJudge {
                ctx,
                stats: StreamStats::default(),
                findings: Findings::default(),
                verdict: None,
                first_other_id: None,
                events: VecDeque::new(),
                kept: HeldValue::default(),
            },
        }
    }

    /// True once the verdict is known: the caller may stop reading.
    pub fn is_decided(&self) -> bool {
        self.judge.verdict.is_some()
    }

    /// The counts so far (once decided, those the verdict carries).
    pub fn stats(&self) -> &StreamStats {
        match self.judge.verdict.as_ref().and_then(|v| v.stream.as_ref()) {
            Some(stats) => stats,
            None => &self.judge.stats,
        }
    }

    /// The next observed message, if [`CallContext::observe_messages`] is set.
    pub fn poll_event(&mut self) -> Option<StreamEvent> {
        self.judge.events.pop_front()
    }

    /// The response message for the expected id, once the stream reached it, if
    /// [`CallContext::keep_response`] is set: built from the parse the verdict was read from.
    /// Kept whatever the verdict (an `INVALID_ENVELOPE` response too); taken once.
    pub fn take_response(&mut self) -> Option<serde_json::Value> {
        self.judge.kept.take()
    }

    /// Feeds the next chunk of the body.
    pub fn feed(&mut self, chunk: &[u8]) {
        let judge = &mut self.judge;
        if judge.verdict.is_some() {
            return;
        }
        let limits = judge.ctx.limits;
        if judge.stats.bytes + chunk.len() as u64 > limits.max_stream_bytes {
            judge.limit("maxStreamBytes", limits.max_stream_bytes);
            return;
        }
        let before = judge.stats.bytes;
        let result = self.parser.feed(chunk, &mut |item| judge.on_item(item));
        match result {
            Ok(consumed) => {
                let bytes = before + consumed as u64;
                judge.stats.bytes = bytes;
                // A verdict taken inside the chunk holds the stats as they were before the
                // chunk's count; correct it.
                if let Some(s) = judge.verdict.as_mut().and_then(|v| v.stream.as_mut()) {
                    s.bytes = bytes;
                }
            }
            Err(e) => {
                judge.stats.bytes = before + chunk.len() as u64;
                judge.limit("maxEventBytes", e.max);
            }
        }
    }

    /// The verdict, when it is already decided, taken where the classifier lives: a caller
    /// holding it in a `Box` (the response classifier) gets the usual case without moving the
    /// whole classifier out first, as [`SseClassifier::finish`]'s `self` would.
    pub(crate) fn take_verdict(&mut self) -> Option<Verdict> {
        self.judge.verdict.take()
    }

    /// The stream ended (EOF). Returns the verdict.
    pub fn finish(mut self) -> Verdict {
        if let Some(v) = self.judge.verdict.take() {
            return v;
        }
        if self.parser.finish() {
            self.judge.findings.warn(
                "PARTIAL_EVENT_DISCARDED",
                "the stream ended inside an event (no blank line after it), which SSE discards",
            );
        }
        self.judge.incomplete("the stream ended")
    }

    /// The stream broke off (connection lost, deadline). `timed_out` selects `TIMEOUT` over
    /// `STREAM_INCOMPLETE`.
    pub fn interrupted(self, timed_out: bool, why: &str) -> Verdict {
        self.judge.interrupted(timed_out, why)
    }
}

impl StreamJudge {
    fn interrupted(mut self, timed_out: bool, why: &str) -> Verdict {
        if let Some(v) = self.verdict.take() {
            return v;
        }
        if timed_out {
            let mut v = Verdict::new(Outcome::Timeout).with_detail(format!(
                "{why} after {} events on the stream, before the response to id {}",
                self.stats.events, self.ctx.expected_id
            ));
            v.stream = Some(self.stats);
            v.warnings = self.findings.into_warnings();
            return v;
        }
        self.incomplete(why)
    }

    fn incomplete(self, why: &str) -> Verdict {
        let s = &self.stats;
        let mut detail = format!(
            "{why} after {} event(s) ({} notification(s), {} server request(s)) without the response to id {}",
            s.events, s.notifications, s.server_requests, self.ctx.expected_id
        );
        if let Some(other) = &self.first_other_id {
            detail.push_str(&format!(
                "; {} response(s) carried another id (first: {other})",
                s.other_responses
            ));
        }
        match (&s.last_event_id, self.ctx.protocol_version) {
            (_, ProtocolVersion::V2026_07_28) => detail.push_str(
                "; 2026-07-28 streams are not resumable: re-issue the request with a new id",
            ),
            (Some(id), _) => {
                detail.push_str(&format!(
                    "; the stream can be resumed with GET and Last-Event-ID {:?}",
                    sanitize_line(id, 64)
                ));
                if let Some(ms) = s.retry_ms {
                    detail.push_str(&format!(" after {ms} ms"));
                }
            }
            (None, _) => detail.push_str("; no event id was sent, so it cannot be resumed"),
        }
        let mut v = Verdict::new(Outcome::StreamIncomplete).with_detail(detail);
        v.stream = Some(self.stats);
        v.warnings = self.findings.into_warnings();
        v
    }

    fn limit(&mut self, name: &str, max: u64) {
        let mut v = Verdict::new(Outcome::LimitExceeded).with_detail(format!(
            "the SSE stream exceeded {name} = {max} before the response to id {}; it was not classified further",
            self.ctx.expected_id
        ));
        v.limit = Some(LimitHit {
            name: name.to_string(),
            max,
        });
        // moved, not cloned: once decided the stats live in the verdict (see `stats`)
        v.stream = Some(std::mem::take(&mut self.stats));
        v.warnings = std::mem::take(&mut self.findings).into_warnings();
        self.verdict = Some(v);
    }

    /// Records the verdict. `terminal` says the response to the request was found (as opposed to
    /// a stream that went wrong before it).
    fn decide(&mut self, mut v: Verdict, terminal: bool) -> Flow {
        self.stats.terminal = terminal;
        let mut warnings = std::mem::take(&mut self.findings).into_warnings();
        warnings.append(&mut v.warnings);
        v.warnings = warnings;
        v.stream = Some(std::mem::take(&mut self.stats));
        self.verdict = Some(v);
        Flow::Stop
    }

    fn on_item(&mut self, item: SseItem<'_>) -> Flow {
        match item {
            SseItem::Comment => {
                self.stats.comments += 1;
                Flow::Continue
            }
            SseItem::Retry(ms) => {
                self.stats.retry_ms = Some(ms);
                Flow::Continue
            }
            SseItem::Priming { last_event_id } => {
                self.stats.priming_events += 1;
                self.set_last_event_id(last_event_id);
                Flow::Continue
            }
            SseItem::Event {
                event_type,
                data,
                last_event_id,
            } => {
                self.stats.events += 1;
                self.set_last_event_id(last_event_id);
                if self.stats.events > self.ctx.limits.max_stream_events {
                    let max = self.ctx.limits.max_stream_events;
                    self.limit("maxStreamEvents", max);
                    return Flow::Stop;
                }
                if event_type != b"message" {
                    self.stats.ignored_events += 1;
                    return Flow::Continue;
                }
                self.on_message(data)
            }
        }
    }

    fn set_last_event_id(&mut self, id: &str) {
        if id.is_empty() {
            self.stats.last_event_id = None;
        } else if self.stats.last_event_id.as_deref() != Some(id) {
            // reuse the previous id's allocation: ids change on every event of a stream
            let last = self.stats.last_event_id.get_or_insert_with(String::new);
            last.clear();
            last.push_str(id);
        }
    }

    fn where_(&self) -> String {
        match &self.stats.last_event_id {
            Some(id) => format!(
                "SSE event #{} (last event id {:?})",
                self.stats.events,
                sanitize_line(id, 64)
            ),
            None => format!("SSE event #{}", self.stats.events),
        }
    }

    fn on_message(&mut self, data: &[u8]) -> Flow {
        let parsed = match json::parse(data, self.ctx.limits.max_depth) {
            Ok(p) => p,
            Err(ParseFailure::Malformed(why)) => {
                let v = Verdict::new(Outcome::MalformedJson)
                    .with_detail(format!("{}: data is not valid JSON: {why}", self.where_()));
                return self.decide(v, false);
            }
            Err(ParseFailure::TooDeep { max }) => {
                let mut v = Verdict::new(Outcome::LimitExceeded).with_detail(format!(
                    "{}: JSON nested deeper than maxDepth = {max}",
                    self.where_()
                ));
                v.limit = Some(LimitHit {
                    name: "maxDepth".to_string(),
                    max: max as u64,
                });
                return self.decide(v, false);
            }
        };
        let depth = parsed.depth;
        with_stack_for_depth(depth, || self.on_json(&parsed, data))
    }

    fn on_json(&mut self, parsed: &json::Parsed, data: &[u8]) -> Flow {
        match &parsed.root {
            Node::Object(o) => self.on_object(o, parsed.has_duplicate, data, ""),
            Node::Array(items) if self.ctx.protocol_version == ProtocolVersion::V2025_03_26 => {
                // 2025-03-26: "responses MAY be batched" on the stream.
                for (i, item) in items.iter().enumerate() {
                    let Some(o) = item.as_object() else {
                        let v = Verdict::new(Outcome::InvalidEnvelope).with_detail(format!(
                            "{}: batch element /{i} is {}, not a JSON-RPC message",
                            self.where_(),
                            item.kind()
                        ));
                        return self.decide(v, false);
                    };
                    if self.on_object(o, parsed.has_duplicate, data, &format!("/{i}")) == Flow::Stop
                    {
                        return Flow::Stop;
                    }
                }
                Flow::Continue
            }
            other => {
                let v = Verdict::new(Outcome::InvalidEnvelope).with_detail(format!(
                    "{}: data is {}, not a JSON-RPC message object",
                    self.where_(),
                    other.kind()
                ));
                self.decide(v, false)
            }
        }
    }

    fn on_object(&mut self, o: &json::Object, may_dup: bool, data: &[u8], base: &str) -> Flow {
        if let Some(method) = o.get("method") {
            let Some(method) = method.as_str() else {
                let v = Verdict::new(Outcome::InvalidEnvelope).with_detail(format!(
                    "{}: {base}/method is {}, not a string",
                    self.where_(),
                    method.kind()
                ));
                return self.decide(v, false);
            };
            if !matches!(o.get("jsonrpc").and_then(Node::as_str), Some("2.0")) {
                self.findings.warn(
                    "INVALID_STREAM_MESSAGE",
                    format!(
                        "{}: {method} message lacks \"jsonrpc\": \"2.0\"",
                        self.where_()
                    ),
                );
            }
            let event_id = self.stats.last_event_id.clone();
            match o.get("id") {
                None => {
                    self.stats.notifications += 1;
                    if self.ctx.observe_messages {
                        self.events.push_back(StreamEvent::Notification {
                            method: method.to_string(),
                            data: String::from_utf8_lossy(data).into_owned(),
                            event_id,
                        });
                    }
                }
                Some(id) => {
                    self.stats.server_requests += 1;
                    if self.ctx.protocol_version == ProtocolVersion::V2026_07_28 {
                        self.findings.warn(
                            "SERVER_REQUEST_ON_STREAM",
                            format!(
                                "{}: the server sent a {method} request; 2026-07-28 servers MUST NOT send requests on a response stream (use input_required)",
                                self.where_()
                            ),
                        );
                    }
                    if self.ctx.observe_messages {
                        self.events.push_back(StreamEvent::ServerRequest {
                            id: id.to_value(),
                            method: method.to_string(),
                            params: o.get("params").map(Node::to_value),
                            data: String::from_utf8_lossy(data).into_owned(),
                            event_id,
                        });
                    }
                }
            }
            return Flow::Continue;
        }
        if !o.contains("id") && !o.contains("result") && !o.contains("error") {
            let v = Verdict::new(Outcome::InvalidEnvelope).with_detail(format!(
                "{}: data is an object with neither method, id, result nor error: not a JSON-RPC message",
                self.where_()
            ));
            return self.decide(v, false);
        }
        // An envelope that repeats `id` is routed by any of its ids: a last-wins parser
        // (JSON.parse, serde_json) would read `{"id":2,"id":1,…}` as the answer to request 1,
        // so it must not be skipped as "another id" but judged (rule 5: INVALID_ENVELOPE).
        let mut routed = id_matches(o.get("id"), &self.ctx.expected_id);
        if o.duplicate.is_some() && matches!(routed, IdMatch::Other(_)) {
            if let Some(same) = o
                .get_all("id")
                .map(|id| id_matches(Some(id), &self.ctx.expected_id))
                .find(|m| matches!(m, IdMatch::Same { .. }))
            {
                routed = same;
            }
        }
        if self.ctx.keep_response && matches!(routed, IdMatch::Same { .. }) {
            self.kept.0 = Some(o.to_value());
        }
        match routed {
            IdMatch::Other(got) => {
                self.stats.other_responses += 1;
                self.first_other_id.get_or_insert(got);
                if self.ctx.observe_messages {
                    self.events.push_back(StreamEvent::OtherResponse {
                        data: String::from_utf8_lossy(data).into_owned(),
                    });
                }
                Flow::Continue
            }
            IdMatch::Same { .. } | IdMatch::Missing => {
                let v = classify_response_object(o, may_dup, &self.ctx, base);
                self.decide(v, true)
            }
        }
    }
}

/// Runs `f` with enough stack for recursive walks over a tree `depth` levels deep.
pub(crate) fn with_stack_for_depth<R>(depth: usize, f: impl FnOnce() -> R) -> R {
    if depth < 128 {
        f()
    } else {
        stacker::grow(depth.saturating_mul(1024) + (1 << 20), f)
    }
}
