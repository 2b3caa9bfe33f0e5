//! The response classifier: rules 1-3 on the HTTP head, then the body by media type.
//!
//! [`ResponseClassifier`] is the sans-IO state machine an I/O layer drives: create it from the
//! response head, [`feed`](ResponseClassifier::feed) body chunks as they arrive, stop reading once
//! [`is_decided`](ResponseClassifier::is_decided), and take the verdict with
//! [`finish`](ResponseClassifier::finish) (end of body) or
//! [`interrupted`](ResponseClassifier::interrupted) (the connection broke or a deadline passed).
//! [`classify`] does all of that for a body already in memory.
//!
//! With [`CallContext::keep_response`] the classifier also keeps the response message the
//! verdict was read from, as a `serde_json::Value` built from its own parse (no second parse of
//! the body): the caller takes it with [`take_response`](ResponseClassifier::take_response) (an
//! SSE stream, once decided), [`finish_with_response`](ResponseClassifier::finish_with_response),
//! [`interrupted_with_response`](ResponseClassifier::interrupted_with_response) or
//! [`classify_with_response`].

use crate::http::decode::{ContentDecoder, DecodeError, DecodeLimits};
use crate::http::{
    parse_retry_after, parse_www_authenticate, reason, MediaType, MediaTypeKind, ResponseHead,
};
use crate::json::{self, Compactor, HeldValue, ParseFailure, ScanFailure, KEEP_SOLID_CHARS};
use crate::protocol::CallContext;
use crate::retry::RATE_LIMITED;
use crate::rules::{classify_document, response_in, Findings};
use crate::sse::{with_stack_for_depth, SseClassifier, StreamEvent};
use crate::verdict::{sanitize_line, LimitHit, Outcome, Verdict};
use std::ops::ControlFlow;

/// Why a body stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interruption {
    /// The connection was reset or closed early; the sentence says how.
    ConnectionLost(String),
    /// The caller's deadline passed.
    TimedOut(String),
}

/// How many bytes of an unexpected body are kept to show in the verdict's detail.
const SNIPPET_BYTES: usize = 160;

/// Past this many buffered bytes a JSON body's buffer is reserved up to `maxBodyBytes` in one step
/// instead of doubling. Doubling copies the body into a block twice its size each time and frees
/// the old block; an allocator that keeps freed pages a while (mimalloc, which the proxy uses) then
/// holds about twice the limit for a body that runs past it. Pages of the one reserved block are
/// only touched as the body fills them, so resident memory stays near the body's size.
const RESERVE_TO_LIMIT_AFTER: usize = 1 << 20;

/// Limits above this keep doubling: reserving gigabytes of address space up front could fail
/// where growing with the body would not.
const RESERVE_TO_LIMIT_MAX: u64 = 1 << 30;

/// Past this many bytes a JSON body is no longer buffered whole: it is scanned as it arrives and
/// only a compacted copy (long string values cut) is kept, so a huge answer costs about this much
/// memory instead of up to `maxBodyBytes`. Smaller bodies are parsed as they are: the compacted
/// path reaches the same verdict, but in words of its own for a body that is not JSON.
const COMPACT_AFTER: usize = 1 << 20;

#[derive(Debug)]
enum State {
    /// Status outside 2xx: keep a bounded prefix of the body to decode a JSON-RPC error.
    HttpError { buf: Vec<u8>, truncated: bool },
    /// `application/json`: buffer up to `maxBodyBytes`.
    Json { buf: Vec<u8> },
    /// `application/json` past [`COMPACT_AFTER`] bytes: scanned as it arrives, only a compacted
    /// copy kept (see `json/compact.rs`).
    JsonCompacted(Box<Compactor>),
    /// `text/event-stream`.
    Sse(Box<SseClassifier>),
    /// Any other media type: keep a snippet for the detail.
    Other {
        snippet: Vec<u8>,
        media: Option<String>,
    },
    /// Decided before the end of the body.
    Decided(Box<Verdict>),
}

/// The sans-IO classifier of one HTTP response to a `tools/call`.
#[derive(Debug)]
pub struct ResponseClassifier {
    ctx: CallContext,
    status: u16,
    state: State,
    /// Bytes of JSON body buffered whole before it is compacted instead (`None`: never).
    compact_after: Option<usize>,
    /// Body bytes read, after any content coding was undone.
    body_bytes: u64,
    /// The body's `Content-Encoding` being undone (`http/decode.rs`); `None` for a plain body.
    decoder: Option<Box<ContentDecoder>>,
    /// Why the body's coding cannot be undone (an unknown coding, a corrupt or cut stream, a
    /// decoding limit); the body is then read no further.
    coding_error: Option<DecodeError>,
    /// Body bytes received as sent (equal to `body_bytes` without a coding).
    encoded_bytes: u64,
    findings: Findings,
    retry_after_ms: Option<u64>,
    auth: Option<Box<crate::verdict::AuthChallenge>>,
    /// The response message, with [`CallContext::keep_response`], once judged.
    kept: HeldValue,
}

impl ResponseClassifier {
    /// Starts classifying a response with this head.
    pub fn new(head: &ResponseHead, ctx: CallContext) -> ResponseClassifier {
        ResponseClassifier::start(
            head.status,
            |name| head.get(name),
            head.get_all("WWW-Authenticate"),
            head.get_all("Content-Encoding"),
            ctx,
        )
    }

    /// Starts classifying a response with this status and these headers (name, value), in the
    /// order received: the same as [`ResponseClassifier::new`] without building a
    /// [`ResponseHead`]. Why: a gateway holds the header text in its own buffers, and copying
    /// it into owned strings per exchange cost more than reading it (the C ABI, nginx).
    pub fn with_headers(
        status: u16,
        headers: &[(&str, &str)],
        ctx: CallContext,
    ) -> ResponseClassifier {
        let named = |name: &'static str| {
            headers
                .iter()
                .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| *v)
        };
        ResponseClassifier::start(
            status,
            |name| named_first(headers, name),
            named("WWW-Authenticate"),
            named("Content-Encoding"),
            ctx,
        )
    }

    /// `new` over any header store: `get` finds a header's first value; the headers that may
    /// repeat come as every value in order.
    fn start<'h>(
        status: u16,
        get: impl Fn(&'static str) -> Option<&'h str>,
        www_authenticate: impl Iterator<Item = &'h str>,
        content_encoding: impl Iterator<Item = &'h str>,
        ctx: CallContext,
    ) -> ResponseClassifier {
        let mut findings = Findings::default();
        let retry_after_ms = get("Retry-After").and_then(|v| parse_retry_after(v, ctx.now));
        let auth = parse_www_authenticate(www_authenticate).map(Box::new);
        let content_type = get("Content-Type");
        let state = if !(200..300).contains(&status) {
            State::HttpError {
                buf: Vec::new(),
                truncated: false,
            }
        } else {
            // the kind is read in place; only a value with parameters is parsed (for charset)
            match content_type.map(MediaTypeKind::of) {
                Some(MediaTypeKind::Json) => {
                    let media = content_type
                        .filter(|c| c.contains(';'))
                        .map(MediaType::parse);
                    if let Some(cs) = media.as_ref().and_then(|m| m.charset.as_deref()) {
                        if cs != "utf-8" && cs != "utf8" {
                            findings.warn(
                                "CHARSET_NOT_UTF8",
                                format!(
                                    "Content-Type names charset {:?}; JSON is UTF-8 (RFC 8259)",
                                    sanitize_line(cs, 32)
                                ),
                            );
                        }
                    }
                    State::Json { buf: Vec::new() }
                }
                Some(MediaTypeKind::EventStream) => {
                    State::Sse(Box::new(SseClassifier::new(ctx.clone())))
                }
                _ => State::Other {
                    snippet: Vec::new(),
                    media: content_type.map(|c| sanitize_line(c, 100)),
                },
            }
        };
        // The compacted copy cuts long strings: not when a schema reads every character of
        // `structuredContent`, nor when the expected id is itself a long string, nor when the
        // caller keeps the response (its value is built from the body's parse).
        let id_is_long = matches!(&ctx.expected_id, crate::RequestId::String(s) if s.chars().count() >= KEEP_SOLID_CHARS);
        let compact_after = (ctx.output_schema.is_none() && !id_is_long && !ctx.keep_response)
            .then_some(COMPACT_AFTER);
        // Decoded bytes count against the body's own limit (the states check it) unless
        // `maxDecodedBytes` sets one of its own.
        let decode_limits = DecodeLimits {
            max_decoded_bytes: ctx.limits.max_decoded_bytes.unwrap_or(u64::MAX),
            max_ratio: ctx.limits.max_decoded_ratio,
        };
        let (decoder, coding_error) =
            match ContentDecoder::for_codings(content_encoding, decode_limits) {
                Ok(d) => (d.map(Box::new), None),
                Err(e) => (None, Some(e)),
            };
        ResponseClassifier {
            status,
            state,
            compact_after,
            body_bytes: 0,
            decoder,
            coding_error,
            encoded_bytes: 0,
            findings,
            retry_after_ms,
            auth,
            kept: HeldValue::default(),
            ctx,
        }
    }

    /// Sets how many bytes of an `application/json` body are buffered whole before the rest is
    /// scanned as it arrives and only a compacted copy is kept (default 1 MiB; `None`: always
    /// buffer whole). The verdict is the same either way, except that a body that is not JSON
    /// is described in the scanner's words. Tests set `Some(0)` to compare the two paths. Where
    /// the body must stay whole (an output schema, an expected id that is a long string) this
    /// changes nothing.
    pub fn compact_json_after(mut self, bytes: Option<usize>) -> Self {
        if self.compact_after.is_some() {
            self.compact_after = bytes;
        }
        self
    }

    /// True once the verdict is known: the caller may stop reading the body.
    pub fn is_decided(&self) -> bool {
        match &self.state {
            State::Decided(_) => true,
            State::Sse(s) => s.is_decided(),
            _ => false,
        }
    }

    /// The next message observed on an SSE stream (see [`CallContext::observe_messages`]).
    pub fn poll_event(&mut self) -> Option<StreamEvent> {
        match &mut self.state {
            State::Sse(s) => s.poll_event(),
            _ => None,
        }
    }

    /// The response message kept so far (see [`CallContext::keep_response`]), taken once.
    ///
    /// It is the JSON-RPC response object for the expected id (same type and value) that the
    /// verdict was read from, whatever the verdict: check the outcome before reading it as an
    /// answer (after `INVALID_ENVELOPE` it is only what the server sent). A response for another
    /// id, a request or a notification is never kept. On an SSE stream it is here once
    /// [`is_decided`](ResponseClassifier::is_decided); a JSON body, or a non-2xx body (its first
    /// `maxErrorBodyBytes`, depth up to 64, as the error is decoded), is judged at its end:
    /// take it with [`finish_with_response`](ResponseClassifier::finish_with_response).
    /// The value is the classifier's parse converted, not a second parse: a repeated member
    /// name keeps its last value (as in serde_json), and a number beyond f64 range (`1e400`,
    /// which serde_json refuses) becomes `±f64::MAX`.
    pub fn take_response(&mut self) -> Option<serde_json::Value> {
        match &mut self.state {
            State::Sse(s) => self.kept.take().or_else(|| s.take_response()),
            _ => self.kept.take(),
        }
    }

    /// Feeds the next chunk of the body, as sent: a body with a `Content-Encoding` is decoded
    /// here, piece by piece, and the pieces are read as a plain body's chunks would be.
    pub fn feed(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        if self.decoder.is_none() && self.coding_error.is_none() {
            self.feed_body(chunk);
        } else {
            self.feed_coded(chunk);
        }
    }

    /// A chunk of a body with a content coding: decoded into [`feed_body`] until the verdict
    /// is known (or a non-2xx body has given all the classifier keeps of it), so the rest of a
    /// bomb is never decoded.
    fn feed_coded(&mut self, chunk: &[u8]) {
        self.encoded_bytes += chunk.len() as u64;
        if self.stops_decoding() {
            return;
        }
        if let Some(e) = self.coding_error.clone() {
            self.coding_failed(e);
            return;
        }
        let Some(mut d) = self.decoder.take() else {
            return;
        };
        let r = d.feed(chunk, &mut |piece| {
            self.feed_body(piece);
            Ok(if self.stops_decoding() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            })
        });
        self.decoder = Some(d);
        if let Err(e) = r {
            self.coding_failed(e);
        }
    }

    /// Whether no more decoded bytes are needed: the verdict is known, or a non-2xx body's
    /// kept prefix is full.
    fn stops_decoding(&self) -> bool {
        self.is_decided()
            || matches!(
                self.state,
                State::HttpError {
                    truncated: true,
                    ..
                }
            )
    }

    /// The body's coding cannot be undone: a 2xx body gets the coding's verdict now (its media
    /// type's, when that was wrong already); a non-2xx keeps its verdict, with a warning.
    fn coding_failed(&mut self, e: DecodeError) {
        let v = match &self.state {
            State::Decided(_) | State::HttpError { .. } => None,
            State::Other { .. } => Some(self.finish_other_coded(&e)),
            _ => Some(self.coding_verdict(&e)),
        };
        if let Some(v) = v {
            self.state = State::Decided(Box::new(v));
        }
        self.coding_error = Some(e);
    }

    /// The media type's verdict, saying also why the body's coding could not be undone (the
    /// start of the body shown is then only what was decoded of it).
    fn finish_other_coded(&mut self, e: &DecodeError) -> Verdict {
        let mut v = self.finish_other();
        if let Some(d) = v.detail.as_mut() {
            d.push_str(&format!("; and {e}"));
        }
        v
    }

    /// The body ended: every coded stream must have ended with it.
    fn finish_decoding(&mut self) {
        if self.coding_error.is_some() || self.stops_decoding() {
            return;
        }
        if let Some(Err(e)) = self.decoder.as_mut().map(|d| d.finish()) {
            self.coding_failed(e);
        }
    }

    /// The verdict of a 2xx body whose coding cannot be undone: `LIMIT_EXCEEDED` for a
    /// decoding limit; otherwise `UNEXPECTED_CONTENT_TYPE`, as for any body the classifier
    /// cannot read as JSON or SSE (the content coding is part of the representation: RFC
    /// 9110 §8.4), never `MALFORMED_JSON`, which would blame JSON the server never wrote.
    fn coding_verdict(&self, e: &DecodeError) -> Verdict {
        // No byte counts in the sentence: where decoding stops depends on how the body was
        // chunked, and a verdict must not.
        let codings = self.decoder.as_ref().map_or("", |d| d.codings());
        match e {
            DecodeError::Limit { name, max } => {
                let what = if *name == "maxDecodedRatio" {
                    format!(
                        "the body decoded to more than {max} times its size (maxDecodedRatio = {max}: a decompression bomb?)"
                    )
                } else {
                    format!("the body decoded to more than maxDecodedBytes = {max}")
                };
                let mut v = Verdict::new(Outcome::LimitExceeded).with_detail(format!(
                    "{what}, Content-Encoding {codings:?}; it was not classified further"
                ));
                v.limit = Some(LimitHit {
                    name: name.to_string(),
                    max: *max,
                });
                v
            }
            DecodeError::Unknown(_) => {
                let mut v = Verdict::new(Outcome::UnexpectedContentType)
                    .with_detail(format!("{e}; the body was not read"));
                v.status = Some(self.status);
                v
            }
            _ => {
                let mut v = Verdict::new(Outcome::UnexpectedContentType).with_detail(format!(
                    "{e} (Content-Encoding {codings:?}); the body was not classified"
                ));
                v.status = Some(self.status);
                v
            }
        }
    }

    /// A chunk of the body after any content coding was undone.
    fn feed_body(&mut self, chunk: &[u8]) {
        self.body_bytes += chunk.len() as u64;
        let limits = self.ctx.limits;
        match &mut self.state {
            State::Decided(_) => {}
            State::HttpError { buf, truncated } => {
                let room = (limits.max_error_body_bytes as usize).saturating_sub(buf.len());
                if chunk.len() > room {
                    *truncated = true;
                }
                buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            State::Json { buf } => {
                if buf.len() as u64 + chunk.len() as u64 > limits.max_body_bytes {
                    let v = self.limit_verdict("maxBodyBytes", limits.max_body_bytes);
                    self.state = State::Decided(Box::new(v));
                } else if self
                    .compact_after
                    .is_some_and(|after| buf.len() + chunk.len() > after)
                {
                    let mut c = Compactor::new(limits.max_depth, limits.max_body_bytes);
                    c.feed(buf);
                    c.feed(chunk);
                    self.state = State::JsonCompacted(Box::new(c));
                } else {
                    let needed = buf.len() + chunk.len();
                    if needed > buf.capacity()
                        && needed > RESERVE_TO_LIMIT_AFTER
                        && limits.max_body_bytes <= RESERVE_TO_LIMIT_MAX
                    {
                        buf.reserve_exact(limits.max_body_bytes as usize - buf.len());
                    }
                    buf.extend_from_slice(chunk);
                }
            }
            State::JsonCompacted(c) => {
                if self.body_bytes > limits.max_body_bytes {
                    let v = self.limit_verdict("maxBodyBytes", limits.max_body_bytes);
                    self.state = State::Decided(Box::new(v));
                } else {
                    c.feed(chunk);
                }
            }
            State::Sse(s) => s.feed(chunk),
            State::Other { snippet, .. } => {
                let room = SNIPPET_BYTES.saturating_sub(snippet.len());
                snippet.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if snippet.len() >= SNIPPET_BYTES {
                    let v = self.finish_other();
                    self.state = State::Decided(Box::new(v));
                }
            }
        }
    }

    /// The body ended. Returns the verdict.
    pub fn finish(mut self) -> Verdict {
        self.end()
    }

    /// The body ended. Returns the verdict and the response message it was read from, when
    /// [`CallContext::keep_response`] is set (see
    /// [`take_response`](ResponseClassifier::take_response)).
    pub fn finish_with_response(mut self) -> (Verdict, Option<serde_json::Value>) {
        let v = self.end();
        (v, self.kept.take())
    }

    fn end(&mut self) -> Verdict {
        self.finish_decoding();
        let state = std::mem::replace(&mut self.state, State::Json { buf: Vec::new() });
        let v = match state {
            State::Decided(v) => *v,
            State::HttpError { buf, truncated } => self.http_error(&buf, truncated, None),
            _ if self.body_bytes == 0 => self.missing_response(),
            State::Json { buf } => self.json_body(&buf),
            State::JsonCompacted(c) => match c.finish() {
                Ok(copy) => self.json_body(&copy),
                Err(f) => {
                    let hint = scan_hint(&f);
                    failure_verdict(f.failure, hint)
                }
            },
            State::Sse(mut s) => {
                self.keep_from(&mut s);
                match s.take_verdict() {
                    Some(v) => v,
                    None => s.finish(),
                }
            }
            State::Other { snippet, media } => {
                self.state = State::Other { snippet, media };
                self.finish_other()
            }
        };
        self.seal(v)
    }

    /// Moves the response an SSE stream kept into the classifier, before the stream's state
    /// is consumed.
    fn keep_from(&mut self, s: &mut SseClassifier) {
        if let Some(v) = s.take_response() {
            self.kept.0.get_or_insert(v);
        }
    }

    /// The body broke off. Transport precedence holds: a non-2xx status is still `HTTP_ERROR`.
    pub fn interrupted(mut self, why: Interruption) -> Verdict {
        self.break_off(why)
    }

    /// The body broke off. Returns the verdict and the response message it was read from, when
    /// [`CallContext::keep_response`] is set and one was judged before the break (an SSE stream
    /// decided by it, a non-2xx body complete enough to decode).
    pub fn interrupted_with_response(
        mut self,
        why: Interruption,
    ) -> (Verdict, Option<serde_json::Value>) {
        let v = self.break_off(why);
        (v, self.kept.take())
    }

    fn break_off(&mut self, why: Interruption) -> Verdict {
        let (timed_out, text) = match &why {
            Interruption::ConnectionLost(t) => (false, t.as_str()),
            Interruption::TimedOut(t) => (true, t.as_str()),
        };
        let state = std::mem::replace(&mut self.state, State::Json { buf: Vec::new() });
        let v = match state {
            State::Decided(v) => *v,
            State::HttpError { buf, truncated } => self.http_error(&buf, truncated, Some(text)),
            State::Sse(mut s) => {
                self.keep_from(&mut s);
                match s.take_verdict() {
                    Some(v) => v,
                    None => s.interrupted(timed_out, text),
                }
            }
            // The media type was wrong before the body broke off: rule 3 already decided.
            State::Other { snippet, media } if self.body_bytes > 0 => {
                self.state = State::Other { snippet, media };
                self.finish_other()
            }
            _ => {
                let detail = format!(
                    "{text} after {} byte(s) of the body, before the response was complete",
                    self.body_bytes
                );
                if timed_out {
                    Verdict::timeout(detail)
                } else {
                    Verdict::connection_error(detail)
                }
            }
        };
        self.seal(v)
    }

    fn seal(&mut self, mut v: Verdict) -> Verdict {
        if self.status == 202 && self.body_bytes > 0 && v.outcome != Outcome::HttpError {
            self.findings.warn(
                "ACCEPTED_WITH_BODY",
                "202 Accepted carried a body; 202 is for notifications and responses",
            );
        }
        if v.code == Some(RATE_LIMITED) && self.status != 429 {
            self.findings.warn(
                "RATE_LIMITED_NOT_429",
                format!(
                    "a -32023 RateLimited error came with HTTP {}; over HTTP it comes with 429 \
                     Too Many Requests, so that gateways see it too (draft SEP-3304)",
                    self.status
                ),
            );
        }
        let mut warnings = std::mem::take(&mut self.findings).into_warnings();
        warnings.append(&mut v.warnings);
        v.warnings = warnings;
        v
    }

    fn limit_verdict(&self, name: &str, max: u64) -> Verdict {
        let mut v = Verdict::new(Outcome::LimitExceeded).with_detail(format!(
            "the body exceeded {name} = {max}; it was not classified further"
        ));
        v.limit = Some(LimitHit {
            name: name.to_string(),
            max,
        });
        v
    }

    fn missing_response(&self) -> Verdict {
        let why = match self.status {
            202 => "202 Accepted with no body: 202 is for notifications and responses, never the answer to a request",
            204 => "204 No Content: the server sent no answer to the request",
            _ => "a 2xx status with an empty body: the server sent no answer to the request",
        };
        let mut v = Verdict::new(Outcome::MissingResponse).with_detail(why);
        v.status = Some(self.status);
        v
    }

    fn json_body(&mut self, body: &[u8]) -> Verdict {
        json_verdict(body, &self.ctx, &mut self.kept)
    }

    fn finish_other(&mut self) -> Verdict {
        let State::Other { snippet, media } = &self.state else {
            unreachable!("finish_other is called in State::Other only");
        };
        let shown = sanitize_line(&String::from_utf8_lossy(snippet), 80);
        let detail = match media {
            Some(m) => format!(
                "Content-Type {m:?} is neither application/json nor text/event-stream; the body starts {shown:?}"
            ),
            None => format!(
                "the response has no Content-Type; a body must be application/json or text/event-stream; it starts {shown:?}"
            ),
        };
        let mut v = Verdict::new(Outcome::UnexpectedContentType).with_detail(detail);
        v.status = Some(self.status);
        v
    }

    fn http_error(&mut self, body: &[u8], truncated: bool, interrupted: Option<&str>) -> Verdict {
        let status = self.status;
        let mut v = Verdict::new(Outcome::HttpError);
        v.status = Some(status);
        v.retry_after_ms = self.retry_after_ms;
        v.auth_challenge = self.auth.take();
        // Decode a JSON-RPC error from the body when there is one: it says why (-32601 on a 404,
        // -32020..-32022 on a 400) even though the transport verdict stands.
        if let Some(e) = self
            .coding_error
            .as_ref()
            .filter(|_| self.encoded_bytes > 0)
        {
            self.findings.warn(
                "ERROR_BODY_NOT_DECODED",
                format!("the error body was not read for a JSON-RPC error: {e}"),
            );
        }
        if truncated {
            self.findings.warn(
                "ERROR_BODY_TRUNCATED",
                format!(
                    "only the first {} bytes of the error body were read (maxErrorBodyBytes)",
                    self.ctx.limits.max_error_body_bytes
                ),
            );
        } else if let Some(error) = self.decode_error_body(body) {
            v.code = Some(error.code);
            v.message = Some(error.message);
            if error.code == RATE_LIMITED {
                // Draft SEP-3304, RL-9: `retryAfterMs` wins over the `Retry-After` header.
                let wait = crate::rules::rate_limited_wait(
                    error.data.as_ref(),
                    "/error",
                    &mut self.findings,
                );
                if wait.is_some() {
                    v.retry_after_ms = wait;
                }
            }
        }
        let mut detail = format!("HTTP {status}");
        let r = reason(status);
        if !r.is_empty() {
            detail.push_str(&format!(" {r}"));
        }
        if let Some(code) = v.code {
            detail.push_str(&format!(" with JSON-RPC error {code}"));
            if let Some(name) = crate::rules::error_code_name(code) {
                detail.push_str(&format!(" ({name})"));
            }
        }
        detail.push_str(": ");
        detail.push_str(&match (status, v.code) {
            (404, Some(-32601)) => "the server does not implement the method".to_string(),
            (400, Some(-32020)) => {
                "a required MCP header is missing or does not match the body".to_string()
            }
            (400, Some(-32021)) => {
                "the call needs a client capability that was not declared".to_string()
            }
            (400, Some(-32022)) => {
                "the server does not support the requested protocol version".to_string()
            }
            (404, None) => not_found_advice(self.ctx.request_session).to_string(),
            (401, _) => "authorization required or the token is invalid".to_string(),
            (403, _)
                if v.auth_challenge.as_ref().and_then(|a| a.error.as_deref())
                    == Some("insufficient_scope") =>
            {
                "the token lacks the scope this call needs".to_string()
            }
            (403, _) => "forbidden (insufficient scope, or the Origin was rejected)".to_string(),
            (405, _) => "the endpoint does not allow this method".to_string(),
            (413, _) => "the request body is larger than the server accepts".to_string(),
            (429, _) => "rate limited".to_string(),
            (500..=599, _) => "the server or a gateway failed".to_string(),
            _ => "the request was not answered with a 2xx status".to_string(),
        });
        match (v.retry_after_ms, v.code) {
            (Some(ms), Some(RATE_LIMITED)) if self.retry_after_ms != Some(ms) => {
                detail.push_str(&format!("; its retryAfterMs asks to wait {ms} ms"));
            }
            (Some(ms), _) => detail.push_str(&format!("; Retry-After asks to wait {ms} ms")),
            (None, _) => {}
        }
        if let Some(a) = &v.auth_challenge {
            if let Some(rm) = &a.resource_metadata {
                detail.push_str(&format!("; protected-resource metadata at {rm}"));
            }
        }
        if let Some(why) = interrupted {
            detail.push_str(&format!("; the body then broke off ({why})"));
        }
        v.detail = Some(detail);
        v
    }
}

/// What a 404 without a JSON-RPC error means, by whether the request was sent in a session.
fn not_found_advice(session: crate::protocol::RequestSession) -> &'static str {
    use crate::protocol::RequestSession::*;
    match session {
        Present => "the server no longer knows this session: it expired or was ended (start a new one with initialize)",
        Absent => "no session id was sent, so the endpoint URL is wrong (check the path) or the server is not an MCP endpoint",
        _ => "in a legacy session this means the session expired (start a new one with initialize); otherwise the endpoint is wrong",
    }
}

/// Rules 5-8 for one `application/json` body; with [`CallContext::keep_response`] the response
/// object for the expected id goes into `kept`, built from the same parse.
fn json_verdict(body: &[u8], ctx: &CallContext, kept: &mut HeldValue) -> Verdict {
    match json::parse(body, ctx.limits.max_depth) {
        Ok(parsed) => {
            let depth = parsed.depth;
            if ctx.keep_response {
                kept.0 = response_in(&parsed.root, ctx).map(json::Object::to_value);
            }
            with_stack_for_depth(depth, || classify_document(&parsed, ctx))
        }
        Err(failure) => {
            let hint = if body.starts_with(b"\xEF\xBB\xBF") {
                BOM_HINT
            } else if body.iter().all(u8::is_ascii_whitespace) {
                WHITE_SPACE_HINT
            } else {
                ""
            };
            failure_verdict(failure, hint)
        }
    }
}

const BOM_HINT: &str = " (the body starts with a byte order mark)";
const WHITE_SPACE_HINT: &str = " (the body is only white space)";

/// The hint for a body the compacting scanner refused (the body itself is gone by then).
fn scan_hint(f: &ScanFailure) -> &'static str {
    if f.starts_with_bom {
        BOM_HINT
    } else if f.only_white_space {
        WHITE_SPACE_HINT
    } else {
        ""
    }
}

/// The verdict for a body that is not a classifiable JSON value.
fn failure_verdict(failure: ParseFailure, hint: &str) -> Verdict {
    match failure {
        ParseFailure::Malformed(why) => Verdict::new(Outcome::MalformedJson)
            .with_detail(format!("the body is not valid JSON: {why}{hint}")),
        ParseFailure::TooDeep { max } => {
            let mut v = Verdict::new(Outcome::LimitExceeded).with_detail(format!(
                "the body nests JSON deeper than maxDepth = {max}; it was not classified further"
            ));
            v.limit = Some(LimitHit {
                name: "maxDepth".to_string(),
                max: max as u64,
            });
            v
        }
    }
}

/// The JSON-RPC error an HTTP error's body carries.
struct ErrorBody<'a> {
    code: i64,
    /// Sanitised to one line.
    message: String,
    /// `error.data`, kept only for the codes whose data the verdict reads (`-32023`).
    data: Option<json::Node<'a>>,
}

impl ResponseClassifier {
    /// The JSON-RPC error in a non-2xx `body`, when it is a JSON-RPC error response. With
    /// [`CallContext::keep_response`] the body's response object for the expected id is kept,
    /// from the same parse.
    fn decode_error_body<'b>(&mut self, body: &'b [u8]) -> Option<ErrorBody<'b>> {
        let parsed = json::parse(body, self.ctx.limits.max_depth.min(64)).ok()?;
        if self.ctx.keep_response {
            self.kept.0 = response_in(&parsed.root, &self.ctx).map(json::Object::to_value);
        }
        error_body(&parsed.root)
    }
}

/// The JSON-RPC error in a parsed non-2xx body, when it is a JSON-RPC error response.
fn error_body<'a>(root: &json::Node<'a>) -> Option<ErrorBody<'a>> {
    let error = root.as_object()?.get("error")?.as_object()?;
    let (code, _) = error.get("code")?.as_integer()?;
    let message = error
        .get("message")
        .and_then(json::Node::as_str)
        .map(|m| sanitize_line(m, crate::verdict::MAX_MESSAGE_CHARS))
        .unwrap_or_default();
    let data = (code == RATE_LIMITED)
        .then(|| error.get("data").cloned())
        .flatten();
    Some(ErrorBody {
        code,
        message,
        data,
    })
}

/// The first value of the header `name` (ASCII case-insensitive).
fn named_first<'h>(headers: &[(&'h str, &'h str)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| *v)
}

/// Classifies a complete response: head, whole body, context.
pub fn classify(head: &ResponseHead, body: &[u8], ctx: &CallContext) -> Verdict {
    ResponseClassifier::new(head, ctx.clone()).classify_whole(body)
}

/// Classifies a complete response as [`classify`] does, and returns the response message the
/// verdict was read from (as [`CallContext::keep_response`] keeps it, set here whatever `ctx`
/// says): for a caller that reads the result too, without parsing the body again.
pub fn classify_with_response(
    head: &ResponseHead,
    body: &[u8],
    ctx: &CallContext,
) -> (Verdict, Option<serde_json::Value>) {
    let mut c = ResponseClassifier::new(head, ctx.clone().with_keep_response(true));
    let v = c.judge_whole(body);
    (v, c.take_response())
}

impl ResponseClassifier {
    /// Classifies the whole body at once, on a classifier nothing was fed to yet: the verdict
    /// [`feed`](ResponseClassifier::feed) + [`finish`](ResponseClassifier::finish) give, but a
    /// JSON body is judged in place instead of being copied into the buffer.
    pub fn classify_whole(mut self, body: &[u8]) -> Verdict {
        self.judge_whole(body)
    }

    fn judge_whole(&mut self, body: &[u8]) -> Verdict {
        let plain = self.decoder.is_none() && self.coding_error.is_none();
        if plain
            && matches!(self.state, State::Json { .. })
            && !body.is_empty()
            && self.body_bytes == 0
        {
            let max = self.ctx.limits.max_body_bytes;
            if body.len() as u64 > max {
                let v = self.limit_verdict("maxBodyBytes", max);
                return self.seal(v);
            }
            self.body_bytes = body.len() as u64;
            let v = self.json_body(body);
            return self.seal(v);
        }
        self.feed(body);
        self.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;

    fn ctx() -> CallContext {
        CallContext::new(1)
    }

    #[test]
    fn interruptions_keep_rule_order() {
        let head = ResponseHead::new(503).content_type("application/json");
        let mut c = ResponseClassifier::new(&head, ctx());
        c.feed(b"{\"jsonrpc\"");
        let v = c.interrupted(Interruption::ConnectionLost("reset".into()));
        assert_eq!(v.outcome, Outcome::HttpError);
        assert!(v.detail.unwrap().contains("broke off (reset)"));

        let head = ResponseHead::new(200).content_type("application/json");
        let mut c = ResponseClassifier::new(&head, ctx());
        c.feed(b"{\"jsonrpc\"");
        let v = c.interrupted(Interruption::TimedOut("deadline of 5 s passed".into()));
        assert_eq!(v.outcome, Outcome::Timeout);

        let c = ResponseClassifier::new(&head, ctx());
        let v = c.interrupted(Interruption::ConnectionLost("reset".into()));
        assert_eq!(v.outcome, Outcome::ConnectionError);

        let head = ResponseHead::new(200).content_type("text/html");
        let mut c = ResponseClassifier::new(&head, ctx());
        c.feed(b"<html>");
        let v = c.interrupted(Interruption::ConnectionLost("reset".into()));
        assert_eq!(v.outcome, Outcome::UnexpectedContentType);

        let head = ResponseHead::new(200).content_type("text/event-stream");
        let mut c = ResponseClassifier::new(&head, ctx());
        c.feed(b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n");
        let v = c.interrupted(Interruption::TimedOut("deadline".into()));
        assert_eq!(v.outcome, Outcome::Timeout);
        assert_eq!(v.stream.unwrap().notifications, 1);
    }

    #[test]
    fn a_404_talks_about_sessions_only_when_one_was_sent() {
        use crate::RequestSession;
        let detail = |session| {
            let head = ResponseHead::new(404).content_type("text/plain");
            let mut c = ResponseClassifier::new(&head, ctx().with_request_session(session));
            c.feed(b"Not Found");
            let v = c.finish();
            assert_eq!(v.outcome, Outcome::HttpError);
            v.detail.unwrap()
        };
        let first_initialize = detail(RequestSession::Absent);
        assert!(!first_initialize.contains("expired"), "{first_initialize}");
        assert!(first_initialize.contains("endpoint URL is wrong"));
        let in_session = detail(RequestSession::Present);
        assert!(in_session.contains("expired or was ended"), "{in_session}");
        assert!(!in_session.contains("endpoint"));
        let unknown = detail(RequestSession::Unknown);
        assert!(unknown.contains("in a legacy session") && unknown.contains("endpoint is wrong"));
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn content_codings_come_from_every_header_line_in_both_constructors() {
        // gzip applied first, then gzip again: two header lines are one list
        let body = gzip(&gzip(RESULT));
        let headers = [
            ("content-type", "application/json"),
            ("Content-Encoding", "gzip"),
            ("content-encoding", "GZIP"),
        ];
        let mut c = ResponseClassifier::with_headers(200, &headers, ctx());
        for chunk in body.chunks(3) {
            c.feed(chunk);
        }
        assert_eq!(c.finish().outcome, Outcome::ToolSuccess);
        let mut head = ResponseHead::new(200);
        for (n, v) in headers {
            head = head.header(n, v);
        }
        assert_eq!(classify(&head, &body, &ctx()).outcome, Outcome::ToolSuccess);
        // one coding more than named: what is left after undoing the named ones is gzip data,
        // which is not JSON (the classifier undoes what the header says, and guesses nothing)
        let v = classify(&head, &gzip(&body), &ctx());
        assert_eq!(v.outcome, Outcome::MalformedJson);
    }

    #[test]
    fn a_coded_body_that_breaks_off_is_a_broken_body_not_a_corrupt_stream() {
        let head = ResponseHead::new(200)
            .content_type("application/json")
            .header("Content-Encoding", "gzip");
        let body = gzip(RESULT);
        let mut c = ResponseClassifier::new(&head, ctx());
        c.feed(&body[..body.len() / 2]);
        let v = c.interrupted(Interruption::ConnectionLost("reset".into()));
        assert_eq!(v.outcome, Outcome::ConnectionError, "{v:?}");
        // the same cut at a clean end of the body: the gzip stream is truncated
        let v = classify(&head, &body[..body.len() / 2], &ctx());
        assert_eq!(v.outcome, Outcome::UnexpectedContentType);
        assert!(
            v.detail.unwrap().starts_with("gzip stream is truncated"),
            "truncation named"
        );
    }

    #[test]
    fn a_wrong_media_type_still_decides_when_the_coding_is_unknown() {
        let head = ResponseHead::new(200)
            .content_type("text/html")
            .header("Content-Encoding", "br;q=1");
        let v = classify(&head, b"<html>", &ctx());
        assert_eq!(v.outcome, Outcome::UnexpectedContentType);
        let detail = v.detail.unwrap();
        assert!(detail.starts_with("Content-Type \"text/html\""), "{detail}");
        assert!(
            detail.contains("and Content-Encoding \"br;q=1\" is not"),
            "{detail}"
        );
    }

    fn json_capacity(c: &ResponseClassifier) -> Option<usize> {
        match &c.state {
            State::Json { buf } => Some(buf.capacity()),
            _ => None,
        }
    }

    /// A context whose output schema keeps JSON bodies whole (no compaction).
    fn ctx_keeping_bodies_whole() -> CallContext {
        let schema = crate::OutputSchema::compile(&serde_json::json!({"type": "object"})).unwrap();
        ctx().with_output_schema(std::sync::Arc::new(schema))
    }

    #[test]
    fn a_large_json_body_reserves_up_to_the_limit_once() {
        let limit = 8 << 20;
        let c = ctx_keeping_bodies_whole().with_limits(Limits {
            max_body_bytes: limit,
            ..Limits::DEFAULT
        });
        let json = ResponseHead::new(200).content_type("application/json");
        let mut sm = ResponseClassifier::new(&json, c);
        let chunk = [b' '; 64 << 10];
        for _ in 0..16 {
            sm.feed(&chunk);
        }
        // Up to 1 MiB the buffer grows as a Vec does.
        assert!(json_capacity(&sm).unwrap() < limit as usize);
        sm.feed(&chunk);
        assert_eq!(json_capacity(&sm), Some(limit as usize));
        // Filling it to the limit moves nothing: the capacity stays the one reservation.
        for _ in 17..128 {
            sm.feed(&chunk);
        }
        assert_eq!(json_capacity(&sm), Some(limit as usize));
        sm.feed(b" ");
        assert_eq!(sm.finish().limit.unwrap().name, "maxBodyBytes");

        // A limit too large to reserve keeps the Vec's own growth.
        let c = ctx_keeping_bodies_whole().with_limits(Limits {
            max_body_bytes: 4 << 30,
            ..Limits::DEFAULT
        });
        let mut sm = ResponseClassifier::new(&json, c);
        for _ in 0..17 {
            sm.feed(&chunk);
        }
        assert!(json_capacity(&sm).unwrap() < 4 << 20);
    }

    #[test]
    fn a_large_json_body_is_compacted_as_it_arrives() {
        let json = ResponseHead::new(200).content_type("application/json");
        let limit = 32u64 << 20;
        let c = ctx().with_limits(Limits {
            max_body_bytes: limit,
            ..Limits::DEFAULT
        });
        let mut sm = ResponseClassifier::new(&json, c.clone());
        sm.feed(br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"oops "#);
        let chunk = [b'x'; 64 << 10];
        for _ in 0..256 {
            sm.feed(&chunk);
        }
        // 16 MiB in: the classifier holds the compacted copy, not the body.
        match &sm.state {
            State::JsonCompacted(c) => assert!(c.held() < 64 << 10, "{}", c.held()),
            other => panic!("not compacting: {other:?}"),
        }
        sm.feed(br#""}],"isError":true}}"#);
        let v = sm.finish();
        assert_eq!(v.outcome, Outcome::ToolError);
        assert!(v
            .detail
            .unwrap()
            .starts_with("the tool reported an error: oops xxx"));

        // Past the limit it is still LIMIT_EXCEEDED, at the same byte as before.
        let mut sm = ResponseClassifier::new(&json, c);
        sm.feed(b"[\"");
        for _ in 1..(limit as usize / chunk.len()) {
            sm.feed(&chunk);
        }
        sm.feed(&chunk[2..]);
        assert!(!sm.is_decided());
        sm.feed(b"x");
        assert!(sm.is_decided());
        assert_eq!(sm.finish().limit.unwrap().name, "maxBodyBytes");
    }

    #[test]
    fn limits_are_verdicts() {
        let limits = Limits {
            max_body_bytes: 10,
            max_event_bytes: 16,
            max_stream_bytes: 64,
            max_stream_events: 2,
            ..Limits::DEFAULT
        };
        let c = ctx().with_limits(limits);
        let json = ResponseHead::new(200).content_type("application/json");
        let v = classify(&json, &[b' '; 11], &c);
        assert_eq!(v.limit.unwrap().name, "maxBodyBytes");
        let mut sm = ResponseClassifier::new(&json, c.clone());
        sm.feed(&[b' '; 6]);
        sm.feed(&[b' '; 6]);
        assert!(sm.is_decided());
        assert_eq!(sm.finish().outcome, Outcome::LimitExceeded);

        let sse = ResponseHead::new(200).content_type("text/event-stream");
        let v = classify(&sse, b"data: 0123456789abcdef\n\n", &c);
        assert_eq!(v.limit.unwrap().name, "maxEventBytes");
        let v = classify(&sse, &b": keep-alive\n".repeat(10), &c);
        assert_eq!(v.limit.unwrap().name, "maxStreamBytes");
        let v = classify(
            &sse,
            b"event: x\ndata: 1\n\nevent: x\ndata: 2\n\nevent: x\ndata: 3\n\n",
            &c,
        );
        assert_eq!(v.limit.unwrap().name, "maxStreamEvents");
    }

    #[test]
    fn observed_messages_are_queued_in_order() {
        let mut c = ctx();
        c.observe_messages = true;
        let head = ResponseHead::new(200).content_type("text/event-stream");
        let mut sm = ResponseClassifier::new(&head, c);
        sm.feed(b"id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n");
        sm.feed(b"data: {\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"elicitation/create\",\"params\":{}}\n\n");
        match sm.poll_event() {
            Some(StreamEvent::Notification {
                method, event_id, ..
            }) => {
                assert_eq!(method, "notifications/progress");
                assert_eq!(event_id.as_deref(), Some("1"));
            }
            other => panic!("{other:?}"),
        }
        match sm.poll_event() {
            Some(StreamEvent::ServerRequest { id, method, .. }) => {
                assert_eq!(id, serde_json::json!(9));
                assert_eq!(method, "elicitation/create");
            }
            other => panic!("{other:?}"),
        }
        assert!(sm.poll_event().is_none());
        assert!(!sm.is_decided());
    }

    fn keeping() -> CallContext {
        ctx().with_keep_response(true)
    }

    const RESULT: &[u8] =
        br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#;

    #[test]
    fn the_response_of_a_json_body_is_kept_from_the_classifiers_parse() {
        let head = ResponseHead::new(200).content_type("application/json");
        let want: serde_json::Value = serde_json::from_slice(RESULT).unwrap();
        let mut c = ResponseClassifier::new(&head, keeping());
        c.feed(&RESULT[..20]);
        c.feed(&RESULT[20..]);
        // a JSON body is judged at its end
        assert_eq!(c.take_response(), None);
        let (v, kept) = c.finish_with_response();
        assert_eq!(v.outcome, Outcome::ToolSuccess);
        assert_eq!(kept.as_ref(), Some(&want));

        let (v, kept) = classify_with_response(&head, RESULT, &ctx());
        assert_eq!(v.outcome, Outcome::ToolSuccess);
        assert_eq!(kept, Some(want));

        // kept whatever the verdict: a tool error, an invalid envelope for our id
        let err = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#;
        let (v, kept) = classify_with_response(&head, err, &ctx());
        assert_eq!(v.outcome, Outcome::ToolError);
        assert_eq!(kept.unwrap()["result"]["isError"], true);
        let (v, kept) = classify_with_response(&head, br#"{"id":1,"result":{}}"#, &ctx());
        assert_eq!(v.outcome, Outcome::InvalidEnvelope);
        assert_eq!(kept, Some(serde_json::json!({"id": 1, "result": {}})));
    }

    #[test]
    fn a_kept_json_body_is_not_compacted() {
        // Past 1 MiB a body is compacted (long strings cut) unless the response is kept: the
        // kept value must carry the whole text.
        let head = ResponseHead::new(200).content_type("application/json");
        let text = "x".repeat(3 << 20);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#
        );
        let mut c = ResponseClassifier::new(&head, keeping());
        for chunk in body.as_bytes().chunks(64 << 10) {
            c.feed(chunk);
        }
        assert!(matches!(c.state, State::Json { .. }), "{:?}", c.state);
        let (v, kept) = c.finish_with_response();
        assert_eq!(v.outcome, Outcome::ToolSuccess);
        let kept = kept.unwrap();
        assert_eq!(
            kept["result"]["content"][0]["text"].as_str().unwrap().len(),
            text.len()
        );
    }

    #[test]
    fn the_response_on_an_sse_stream_is_kept_after_a_notification_and_a_server_request() {
        let mut c = keeping();
        c.observe_messages = true;
        let head = ResponseHead::new(200).content_type("text/event-stream");
        let mut sm = ResponseClassifier::new(&head, c);
        sm.feed(b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n");
        sm.feed(b"data: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"name?\"}}\n\n");
        // nothing kept before the response
        assert_eq!(sm.take_response(), None);
        sm.feed(b"data: ");
        sm.feed(RESULT);
        sm.feed(b"\n\n");
        assert!(sm.is_decided());
        assert!(matches!(
            sm.poll_event(),
            Some(StreamEvent::Notification { .. })
        ));
        match sm.poll_event() {
            Some(StreamEvent::ServerRequest {
                id, method, params, ..
            }) => {
                assert_eq!(id, serde_json::json!("s1"));
                assert_eq!(method, "elicitation/create");
                assert_eq!(params, Some(serde_json::json!({"message": "name?"})));
            }
            other => panic!("{other:?}"),
        }
        let want: serde_json::Value = serde_json::from_slice(RESULT).unwrap();
        assert_eq!(sm.take_response(), Some(want.clone()));
        // taken once
        assert_eq!(sm.take_response(), None);

        // not taken before the end: finish hands it over
        let mut sm = ResponseClassifier::new(&head, keeping());
        sm.feed(b"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n\ndata: ");
        sm.feed(RESULT);
        sm.feed(b"\n\n");
        let (v, kept) = sm.finish_with_response();
        assert_eq!(v.outcome, Outcome::ToolSuccess);
        assert_eq!(kept, Some(want.clone()));
        // nor after a break that came once it was decided
        let mut sm = ResponseClassifier::new(&head, keeping());
        sm.feed(b"data: ");
        sm.feed(RESULT);
        sm.feed(b"\n\n");
        let (v, kept) = sm.interrupted_with_response(Interruption::ConnectionLost("reset".into()));
        assert_eq!(v.outcome, Outcome::ToolSuccess);
        assert_eq!(kept, Some(want));
    }

    #[test]
    fn a_response_for_another_id_is_not_kept() {
        let json = ResponseHead::new(200).content_type("application/json");
        let other = br#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#;
        let (v, kept) = classify_with_response(&json, other, &ctx());
        assert_eq!(v.outcome, Outcome::InvalidEnvelope);
        assert_eq!(kept, None);
        // "1" is not 1
        let string_id = br#"{"jsonrpc":"2.0","id":"1","result":{"content":[]}}"#;
        assert_eq!(classify_with_response(&json, string_id, &ctx()).1, None);

        let sse = ResponseHead::new(200).content_type("text/event-stream");
        let mut sm = ResponseClassifier::new(&sse, keeping());
        sm.feed(b"data: ");
        sm.feed(other);
        sm.feed(b"\n\n");
        assert_eq!(sm.take_response(), None);
        let (v, kept) = sm.finish_with_response();
        assert_eq!(v.outcome, Outcome::StreamIncomplete);
        assert_eq!(kept, None);
    }

    #[test]
    fn the_response_in_an_http_error_body_is_kept() {
        let head = ResponseHead::new(400).content_type("application/json");
        let body = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"unsupported","data":{"supported":["2025-06-18"]}}}"#;
        let mut c = ResponseClassifier::new(&head, keeping());
        c.feed(body);
        let (v, kept) = c.finish_with_response();
        assert_eq!(v.outcome, Outcome::HttpError);
        assert_eq!(v.code, Some(-32022));
        assert_eq!(kept.unwrap()["error"]["data"]["supported"][0], "2025-06-18");

        // an error that answers no id (null) is decoded for the verdict, not kept
        let null_id = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}"#;
        let (v, kept) = classify_with_response(&head, null_id, &ctx());
        assert_eq!(v.code, Some(-32700));
        assert_eq!(kept, None);

        // past maxErrorBodyBytes the body is not decoded, so nothing is kept
        let small = keeping().with_limits(Limits {
            max_error_body_bytes: 16,
            ..Limits::DEFAULT
        });
        let mut c = ResponseClassifier::new(&head, small);
        c.feed(body);
        let (v, kept) = c.finish_with_response();
        assert_eq!(v.code, None);
        assert_eq!(kept, None);
    }

    #[test]
    fn nothing_is_kept_without_the_opt_in() {
        let json = ResponseHead::new(200).content_type("application/json");
        let mut c = ResponseClassifier::new(&json, ctx());
        c.feed(RESULT);
        let (v, kept) = c.finish_with_response();
        assert_eq!(v.outcome, Outcome::ToolSuccess);
        assert_eq!(kept, None);

        let sse = ResponseHead::new(200).content_type("text/event-stream");
        let mut c = ResponseClassifier::new(&sse, ctx());
        c.feed(b"data: ");
        c.feed(RESULT);
        c.feed(b"\n\n");
        assert!(c.is_decided());
        assert_eq!(c.take_response(), None);
        assert_eq!(c.finish_with_response().1, None);

        let err = ResponseHead::new(404).content_type("application/json");
        let mut c = ResponseClassifier::new(&err, ctx());
        c.feed(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#);
        let (v, kept) = c.finish_with_response();
        assert_eq!(v.code, Some(-32601));
        assert_eq!(kept, None);
    }
}
