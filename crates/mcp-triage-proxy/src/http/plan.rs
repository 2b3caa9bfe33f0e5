//! What a response is observed for, once the request's message(s) are known ([`Plan`]): the
//! records the request calls for, the classifier and the batch copy fed the body, and how it all
//! ends in records ([`Plan::finish`], [`Plan::fail`]). The `tools` of a `tools/list` result are
//! read from the response the classifier keeps (`keep_response`): the body is parsed once.

use bytes::Bytes;
use http::Method;
use mcp_triage_core::{
    classify, CallContext, Interruption, Outcome, ProtocolVersion, RequestId, RequestKind,
    RequestSession, ResponseClassifier, ResponseHead, StreamEvent, Verdict, Warning,
};
use serde_json::Value;

use super::exchange::Exchange;
use super::request_body::RequestCopy;
use super::shared::Shared;
use crate::observe::{parse_requests, Call, Message, Origin, Params};
use crate::record::{Record, RecordKind, RecordOutcome};

/// How the response was observed, once the request's message(s) are known.
pub(super) struct Plan {
    pub(super) calls: Vec<Call>,
    /// Notifications and answers: 202 expected, no JSON-RPC response.
    pub(super) messages: Vec<Record>,
    /// GET streams, DELETEs, other HTTP: one record without a JSON-RPC request.
    pub(super) standalone: Option<Record>,
    /// Fed the body: for a single call, a message-only POST, or a GET stream.
    pub(super) classifier: Option<ResponseClassifier>,
    /// A single `tools/list` call: its classifier keeps the response, whose `result.tools`
    /// the observer learns annotations from.
    pub(super) learn_tools: bool,
    /// A bounded copy of a batch response, classified per request at the end.
    pub(super) batch_copy: Option<(Vec<u8>, bool)>,
    /// Why the response is not classified, when it is not (see [`Plan::unclassifiable`]).
    pub(super) unclassified: Option<String>,
    pub(super) request_bytes: u64,
}

pub(super) enum End {
    Finished,
    Broken(String),
    Cancelled,
}

impl Plan {
    /// Decides what to record from the request's message(s), for a response with `head`.
    pub(super) fn new(sh: &Shared, head: &ResponseHead, ex: &Exchange, copy: &RequestCopy) -> Plan {
        let observer = &sh.observer;
        let mut plan = Plan {
            calls: Vec::new(),
            messages: Vec::new(),
            standalone: None,
            classifier: None,
            learn_tools: false,
            batch_copy: None,
            unclassified: None,
            request_bytes: copy.total,
        };
        let is_post = ex.http_method == Method::POST;
        let parsed = if is_post && !copy.overflow {
            parse_requests(&copy.bytes)
        } else {
            None
        };
        let post_count = if is_post {
            observer.count_post(&ex.origin)
        } else {
            None
        };
        match parsed {
            Some((messages, batch)) => {
                plan.record_messages(sh, head, ex, messages, batch, post_count)
            }
            None => plan.record_standalone(sh, head, ex, copy, post_count),
        }
        plan
    }

    /// A request that carries no JSON-RPC message (a GET stream, a DELETE, other HTTP, or a
    /// body that was not read): one record of its own, and for a GET stream a classifier that
    /// observes every message on it.
    fn record_standalone(
        &mut self,
        sh: &Shared,
        head: &ResponseHead,
        ex: &Exchange,
        copy: &RequestCopy,
        post_count: Option<u64>,
    ) {
        let observer = &sh.observer;
        let is_post = ex.http_method == Method::POST;
        let kind = match ex.http_method {
            Method::GET if is_sse(head) => RecordKind::Stream,
            Method::DELETE => RecordKind::SessionEnd,
            _ => RecordKind::Http,
        };
        let mut r = observer.new_record(kind);
        r.session_id = ex
            .origin
            .session_id
            .clone()
            .filter(|_| observer.may_log_session_id());
        r.protocol_version = ex.origin.protocol_version.clone();
        r.session_post_count = post_count;
        if copy.overflow {
            r.classified = false;
            r.warnings.push(Warning {
                code: "REQUEST_NOT_CLASSIFIED".into(),
                detail: format!(
                    "the request body ({} bytes) is larger than maxRequestBytes = {}; it was forwarded whole but not read",
                    copy.total,
                    observer.options().max_request_bytes
                ),
            });
        } else if is_post {
            r.warnings.push(Warning {
                code: "REQUEST_NOT_JSONRPC".into(),
                detail: "the POSTed body is not a JSON-RPC message or batch".into(),
            });
        }
        if kind == RecordKind::Stream {
            self.classifier = Some(ResponseClassifier::new(
                head,
                // No request on a GET stream has this id: every message is observed.
                call_context(sh, RequestId::String("\u{0}get-stream".into()), None),
            ));
        }
        self.standalone = Some(r);
    }

    /// The request's message(s): a call per request, a record per notification or answer, and
    /// the classifier (per call for a batch, at the end).
    fn record_messages(
        &mut self,
        sh: &Shared,
        head: &ResponseHead,
        ex: &Exchange,
        messages: Vec<Message<Box<Params>>>,
        batch: bool,
        post_count: Option<u64>,
    ) {
        let observer = &sh.observer;
        for m in messages {
            match m {
                Message::Request { id, method, params } => {
                    if method == "tools/list" && !batch {
                        self.learn_tools = true;
                    }
                    let mut call =
                        observer.start_call_at(id, method, params, &ex.origin, ex.started);
                    call.record.session_post_count = post_count;
                    call.record.http_method = Some(ex.http_method.as_str().to_owned());
                    call.record.path = Some(ex.path.clone());
                    self.calls.push(call);
                }
                other => {
                    let mut r = observer.message_record(&other, &ex.origin);
                    r.session_post_count = post_count;
                    r.http_method = Some(ex.http_method.as_str().to_owned());
                    r.path = Some(ex.path.clone());
                    self.messages.push(r);
                }
            }
        }
        if batch && !self.calls.is_empty() {
            self.batch_copy = Some((Vec::new(), false));
        } else if let Some(call) = self.calls.first() {
            let id = call
                .record
                .id
                .as_ref()
                .and_then(request_id_of)
                .unwrap_or(RequestId::String(String::new()));
            self.classifier = Some(ResponseClassifier::new(
                head,
                call_context(sh, id, call.record.protocol_version.as_deref())
                    .with_request_session(RequestSession::from_header(
                        ex.origin.session_id.as_deref(),
                    ))
                    // a tasks/get answer is a task's state, judged by the task rules
                    .with_request_kind(RequestKind::from_method(
                        call.record.method.as_deref().unwrap_or(""),
                    ))
                    .with_keep_response(self.learn_tools),
            ));
        } else {
            self.classifier = Some(ResponseClassifier::new(
                head,
                call_context(sh, RequestId::String("\u{0}messages".into()), None),
            ));
        }
    }

    /// The response is forwarded but not judged, for `why`: chunks that arrived before the
    /// request was read overflowed the wait buffer (the classifier cannot see the start of the
    /// body), or the body declares a length over the limit (no copy of it is kept at all).
    pub(super) fn unclassifiable(&mut self, why: String) {
        self.unclassified = Some(why);
        self.classifier = None;
        self.learn_tools = false;
        self.batch_copy = None;
        for c in &mut self.calls {
            c.record.classified = false;
        }
    }

    /// Feeds a chunk of the body to the classifier (server requests on it are recorded with
    /// the request's `origin`, the exchange's: not copied into the plan, which lives as long)
    /// and to the batch copy.
    pub(super) fn feed(&mut self, sh: &Shared, origin: &Origin, chunk: &Bytes, max_copy: u64) {
        if let Some(c) = self.classifier.as_mut() {
            if !c.is_decided() {
                c.feed(chunk);
                while let Some(ev) = c.poll_event() {
                    if let StreamEvent::ServerRequest { id, method, .. } = ev {
                        let via = via(&self.calls, &self.messages, self.standalone.as_ref());
                        sh.observer.server_request(id, method, origin, via);
                    }
                }
            }
        }
        if let Some((buf, overflow)) = self.batch_copy.as_mut() {
            if !*overflow {
                if buf.len() as u64 + chunk.len() as u64 > max_copy {
                    *overflow = true;
                    buf.clear();
                } else {
                    buf.extend_from_slice(chunk);
                }
            }
        }
    }

    /// No response at all: every request gets `verdict`. Returns the first record's outcome
    /// (the exchange's verdict in a capture).
    pub(super) fn fail(
        self,
        sh: &Shared,
        ex: &Exchange,
        verdict: Verdict,
        reached: bool,
        status: Option<u16>,
        cancelled: bool,
    ) -> RecordOutcome {
        let obs = &sh.observer;
        let mut first: Option<RecordOutcome> = None;
        for mut call in self.calls {
            first.get_or_insert_with(|| {
                crate::record::outcome_and_layer(Some(call.method()), verdict.outcome).0
            });
            call.record.request_bytes = self.request_bytes;
            call.record.cancelled = cancelled;
            if let Some(s) = status {
                call.record.http_statuses.push(s);
            }
            obs.finish_call(call, verdict.clone(), reached, None, None);
        }
        for mut r in self.messages.into_iter().chain(self.standalone) {
            r.duration_ms = ex.started.elapsed().as_secs_f64() * 1000.0;
            r.request_bytes = self.request_bytes;
            r.cancelled = cancelled;
            r.http_method
                .get_or_insert_with(|| ex.http_method.as_str().to_owned());
            r.path.get_or_insert_with(|| ex.path.clone());
            r.http_statuses.extend(status);
            r.set_verdict(None, verdict.clone());
            first.get_or_insert(r.outcome);
            obs.emit(r);
        }
        first.unwrap_or_default()
    }

    /// Writes the records once the body ended (or broke, or the client went away). Returns the
    /// first record's outcome: the exchange's verdict in a capture.
    pub(super) fn finish(self, sh: &Shared, ex: &Exchange, seen: Observed<'_>) -> RecordOutcome {
        let obs = &sh.observer;
        let head = seen.head;
        let end = &seen.end;
        let mut first: Option<RecordOutcome> = None;
        let cancelled = matches!(end, End::Cancelled);
        let (mut verdict, response) = match self.classifier.map(|c| match end {
            End::Finished => c.finish_with_response(),
            End::Broken(why) => {
                c.interrupted_with_response(Interruption::ConnectionLost(why.clone()))
            }
            End::Cancelled => c.interrupted_with_response(Interruption::ConnectionLost(
                "the client closed the connection".into(),
            )),
        }) {
            Some((v, response)) => (Some(v), response),
            None => (None, None),
        };
        let tools = response.filter(|_| self.learn_tools).and_then(tools_of);
        let mut batch_verdicts = self.batch_copy.map(|(buf, overflow)| {
            let ids: Vec<Option<&Value>> =
                self.calls.iter().map(|c| c.record.id.as_ref()).collect();
            batch_verdicts(head, &buf, overflow, &ids, obs.options())
        });
        // A single call (no batch, no other record) takes the verdict; several share copies.
        let sole = self.calls.len() == 1 && self.messages.is_empty() && self.standalone.is_none();
        let stamp = |r: &mut Record| {
            r.request_bytes = self.request_bytes;
            r.response_bytes = seen.bytes;
            r.cancelled = cancelled;
            r.http_statuses = vec![head.status];
            r.request_headers = ex.request_headers.clone();
            r.response_headers = seen.response_headers.clone();
        };
        for (i, mut call) in self.calls.into_iter().enumerate() {
            stamp(&mut call.record);
            let v = match batch_verdicts.as_mut() {
                Some(vs) => vs[i].take(),
                None if sole => verdict.take(),
                None => verdict.clone(),
            };
            let unclassified = self.unclassified.as_deref();
            finish_call(
                sh,
                call,
                v,
                unclassified,
                &seen,
                tools.as_deref(),
                &mut first,
            );
        }
        let accepted = head.is_success() && !cancelled && matches!(end, End::Finished);
        for mut r in self.messages {
            stamp(&mut r);
            r.duration_ms = ex.started.elapsed().as_secs_f64() * 1000.0;
            match (&verdict, accepted) {
                (_, true) => {
                    r.outcome = RecordOutcome::Accepted;
                    r.layer = None;
                }
                (Some(v), false) => r.set_verdict(None, v.clone()),
                (None, false) => r.outcome = Outcome::HttpError.into(),
            }
            first.get_or_insert(r.outcome);
            obs.emit(r);
        }
        if let Some(mut r) = self.standalone {
            stamp(&mut r);
            finish_standalone(sh, ex, &mut r, verdict, &seen);
            first.get_or_insert(r.outcome);
            obs.emit(r);
        }
        first.unwrap_or_default()
    }
}

/// The record id that server requests seen on a stream point to: the first call's, else the
/// first message's, else the standalone record's. Looked up when a server request is seen
/// rather than copied into every plan.
fn via<'a>(calls: &'a [Call], messages: &'a [Record], standalone: Option<&'a Record>) -> &'a str {
    calls
        .first()
        .map(|c| c.record.record_id.as_str())
        .or_else(|| messages.first().map(|r| r.record_id.as_str()))
        .or_else(|| standalone.map(|r| r.record_id.as_str()))
        .unwrap_or("")
}

/// What the response came to, as [`Plan::finish`] records it.
pub(super) struct Observed<'a> {
    pub(super) head: &'a ResponseHead,
    /// How the body ended.
    pub(super) end: End,
    /// Body bytes that passed to the client.
    pub(super) bytes: u64,
    /// The session id the response assigned, if any.
    pub(super) session: Option<&'a str>,
    /// The response's headers as records may show them (`--log-headers`).
    pub(super) response_headers: Option<Vec<(String, String)>>,
}

/// Ends one call with its verdict, or, when the response was not classified (see
/// [`Plan::unclassifiable`]), with a `LIMIT_EXCEEDED` naming `maxBodyBytes`. Notes the outcome
/// in `first` when it is the exchange's first.
fn finish_call(
    sh: &Shared,
    call: Call,
    v: Option<Verdict>,
    unclassified: Option<&str>,
    seen: &Observed<'_>,
    tools: Option<&[Value]>,
    first: &mut Option<RecordOutcome>,
) {
    let obs = &sh.observer;
    if let Some(v) = &v {
        first.get_or_insert_with(|| {
            crate::record::outcome_and_layer(Some(call.method()), v.outcome).0
        });
    }
    match v {
        Some(v) => obs.finish_call(call, v, true, seen.session, tools),
        None => {
            // Not classifiable (see `unclassifiable`): forwarded, not judged.
            let why = unclassified
                .map(str::to_string)
                .unwrap_or_else(|| "the response was forwarded but not classified".to_string());
            let mut v = Verdict::new(mcp_triage_core::Outcome::LimitExceeded).with_detail(why);
            v.limit = Some(mcp_triage_core::LimitHit {
                name: "maxBodyBytes".into(),
                max: obs.options().limits.max_body_bytes,
            });
            first.get_or_insert(v.outcome.into());
            obs.finish_call(call, v, true, seen.session, None)
        }
    }
}

/// The outcome of a record without a JSON-RPC request: a GET stream closed or broken, a DELETE
/// that ended the session or not, other HTTP forwarded or failed.
fn finish_standalone(
    sh: &Shared,
    ex: &Exchange,
    r: &mut Record,
    verdict: Option<Verdict>,
    seen: &Observed<'_>,
) {
    let obs = &sh.observer;
    let head = seen.head;
    let end = &seen.end;
    r.duration_ms = ex.started.elapsed().as_secs_f64() * 1000.0;
    r.http_method = Some(ex.http_method.as_str().to_owned());
    r.path = Some(ex.path.clone());
    match r.kind {
        RecordKind::Stream => {
            if let Some(v) = verdict {
                r.layer = Some(mcp_triage_core::Layer::Transport);
                r.outcome = match end {
                    End::Finished => RecordOutcome::StreamClosed,
                    End::Broken(_) => Outcome::ConnectionError.into(),
                    End::Cancelled => RecordOutcome::StreamClosed,
                };
                r.verdict = Some(v);
            }
        }
        RecordKind::SessionEnd => {
            if head.is_success() {
                if let Some(sid) = &ex.origin.session_id {
                    obs.session_ended(sid);
                }
            }
            r.outcome = if head.is_success() {
                RecordOutcome::Accepted
            } else {
                Outcome::HttpError.into()
            };
        }
        _ => {
            r.outcome = if head.is_success() {
                RecordOutcome::Forwarded
            } else {
                Outcome::HttpError.into()
            };
        }
    }
    if let End::Broken(why) = end {
        if r.kind != RecordKind::Stream {
            r.set_verdict(None, Verdict::connection_error(why.clone()));
        }
    }
}

/// One verdict per call of a batch (the calls' request ids, in order), from the batch
/// response's elements.
fn batch_verdicts(
    head: &ResponseHead,
    buf: &[u8],
    overflow: bool,
    ids: &[Option<&Value>],
    options: &crate::ObserveOptions,
) -> Vec<Option<Verdict>> {
    let elements: Option<Vec<Value>> = (!overflow && head.is_success())
        .then(|| serde_json::from_slice::<Value>(&decoded(head, buf, options.limits)?).ok())
        .flatten()
        .and_then(|v| match v {
            Value::Array(a) => Some(a),
            _ => None,
        });
    ids.iter()
        .map(|id_value| {
            let id_value = id_value.cloned().unwrap_or_default();
            let id = request_id_of(&id_value)?;
            let ctx = CallContext::new(id)
                .with_limits(options.limits)
                .with_drafts(options.drafts);
            if overflow {
                return None;
            }
            let own = elements.as_ref().and_then(|els| {
                els.iter()
                    .find(|e| e.get("id") == Some(&id_value))
                    .map(|e| serde_json::to_vec(e).expect("a value serialises"))
            });
            let json_head = ResponseHead::new(head.status).content_type("application/json");
            Some(match own {
                Some(bytes) => classify(&json_head, &bytes, &ctx),
                None => classify(head, buf, &ctx),
            })
        })
        .collect()
}

/// A batch response's body with its `Content-Encoding` undone (within the limits: the body's
/// own and the bomb ratio), to read its elements; `None` when it cannot be undone, and then
/// each call gets the whole response's verdict, which says why.
fn decoded<'b>(
    head: &ResponseHead,
    buf: &'b [u8],
    limits: mcp_triage_core::Limits,
) -> Option<std::borrow::Cow<'b, [u8]>> {
    use mcp_triage_core::http::decode::{ContentDecoder, DecodeLimits};
    let decode_limits = DecodeLimits {
        max_decoded_bytes: limits.max_decoded_bytes.unwrap_or(limits.max_body_bytes),
        max_ratio: limits.max_decoded_ratio,
    };
    match ContentDecoder::for_codings(head.get_all("Content-Encoding"), decode_limits) {
        Ok(None) => Some(std::borrow::Cow::Borrowed(buf)),
        Ok(Some(mut d)) => d.decode_all(buf).ok().map(std::borrow::Cow::Owned),
        Err(_) => None,
    }
}

/// The request id `serde_json::from_value::<RequestId>` reads from `id`, without its detour
/// through serde's buffered untagged enum (a clone of the value and about 200 instructions per
/// exchange): an integer that fits an `i64`, or a string; nothing for floats, larger integers
/// and the other JSON types.
fn request_id_of(id: &Value) -> Option<RequestId> {
    match id {
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        Value::String(s) => Some(RequestId::String(s.clone())),
        _ => None,
    }
}

/// The classifier's context for the request `id`: the observer's limits, the clock, and every
/// message observed (server requests on the stream are linked to the call).
fn call_context(sh: &Shared, id: RequestId, version: Option<&str>) -> CallContext {
    let mut ctx = CallContext::new(id)
        .with_limits(sh.observer.options().limits)
        .with_drafts(sh.observer.options().drafts)
        .with_now(std::time::SystemTime::now());
    if let Some(v) = version.and_then(ProtocolVersion::parse) {
        ctx = ctx.with_protocol_version(v);
    }
    ctx.observe_messages = true;
    ctx
}

/// The `tools` array of a `tools/list` response, whatever its verdict (a `tools/list` result
/// is judged by the tool-call rules, which it need not pass to name tools).
fn tools_of(mut response: Value) -> Option<Vec<Value>> {
    match response.get_mut("result")?.get_mut("tools")?.take() {
        Value::Array(tools) => Some(tools),
        _ => None,
    }
}

/// Whether the response is an SSE stream (`text/event-stream`, in any case). Compared in
/// place: lower-casing the header into a new `String` first cost an allocation each time it was
/// asked (twice per exchange).
pub(super) fn is_sse(head: &ResponseHead) -> bool {
    const SSE: &[u8] = b"text/event-stream";
    head.get("content-type").is_some_and(|c| {
        c.trim_start()
            .as_bytes()
            .get(..SSE.len())
            .is_some_and(|start| start.eq_ignore_ascii_case(SSE))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `is_sse` answers as lower-casing the header and comparing its start did.
    #[test]
    fn sse_is_told_by_the_start_of_the_content_type_in_any_case() {
        for (content_type, sse) in [
            ("text/event-stream", true),
            ("  Text/Event-Stream; charset=utf-8", true),
            ("TEXT/EVENT-STREAMING", true),
            ("text/event-strea", false),
            ("application/json", false),
            ("", false),
            ("\u{e9}text/event-stream", false),
        ] {
            let head = ResponseHead::new(200).content_type(content_type);
            let old = content_type
                .trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream");
            assert_eq!(is_sse(&head), sse, "{content_type:?}");
            assert_eq!(old, sse, "{content_type:?}");
        }
        assert!(!is_sse(&ResponseHead::new(200)));
    }

    /// `request_id_of` reads what serde's untagged `RequestId` reads from a value, and refuses
    /// what it refuses.
    #[test]
    fn request_ids_are_read_as_serde_reads_them() {
        let ids = serde_json::json!([
            0,
            1,
            -1,
            9_223_372_036_854_775_807i64,
            -9_223_372_036_854_775_808i64,
            9_223_372_036_854_775_808u64,
            18_446_744_073_709_551_615u64,
            1.0,
            1.5,
            "",
            "7",
            "a\"b",
            null,
            true,
            [],
            {}
        ]);
        for id in ids.as_array().unwrap() {
            let serde = serde_json::from_value::<RequestId>(id.clone()).ok();
            assert_eq!(request_id_of(id), serde, "{id}");
        }
    }

    /// A batch response in gzip gives each call its own element's verdict, as a plain one does.
    #[test]
    fn a_compressed_batch_response_is_read_element_by_element() {
        use std::io::Write;
        let body = br#"[{"jsonrpc":"2.0","id":1,"result":{"content":[]}},{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"no"}}]"#;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(body).unwrap();
        let coded = e.finish().unwrap();
        let (one, two) = (serde_json::json!(1), serde_json::json!(2));
        let ids = [Some(&one), Some(&two)];
        let options = crate::ObserveOptions::default();
        for (head, bytes) in [
            (
                ResponseHead::new(200).content_type("application/json"),
                &body[..],
            ),
            (
                ResponseHead::new(200)
                    .content_type("application/json")
                    .header("Content-Encoding", "gzip"),
                &coded[..],
            ),
        ] {
            let v = batch_verdicts(&head, bytes, false, &ids, &options);
            let outcomes: Vec<_> = v.iter().map(|v| v.as_ref().unwrap().outcome).collect();
            assert_eq!(
                outcomes,
                [
                    mcp_triage_core::Outcome::ToolSuccess,
                    mcp_triage_core::Outcome::JsonrpcError
                ],
                "{head:?}"
            );
        }
    }

    /// What a single `tools/list` call's plan does: the classifier keeps the response, and the
    /// tools are read from it at the end, JSON or SSE; over `maxBodyBytes` nothing is learnt.
    #[test]
    fn tools_are_read_from_the_kept_response_of_json_and_sse() {
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}"#;
        let sse = [&b"event: message\ndata: "[..], body, b"\n\n"].concat();
        let learnt = |content_type: &str, bytes: &[u8], limits: mcp_triage_core::Limits| {
            let head = ResponseHead::new(200).content_type(content_type);
            let ctx = CallContext::new(1)
                .with_limits(limits)
                .with_keep_response(true);
            let mut c = ResponseClassifier::new(&head, ctx);
            for chunk in bytes.chunks(10) {
                c.feed(chunk);
            }
            c.finish_with_response().1.and_then(tools_of)
        };
        let limits = mcp_triage_core::Limits::DEFAULT;
        assert_eq!(
            learnt("application/json", body, limits).unwrap()[0]["name"],
            "a"
        );
        assert_eq!(
            learnt("text/event-stream", &sse, limits).unwrap()[0]["name"],
            "a"
        );
        let small = mcp_triage_core::Limits {
            max_body_bytes: 16,
            ..limits
        };
        assert_eq!(learnt("application/json", body, small), None);
        // a result without a tools array names none
        let other = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":{}}}"#;
        assert_eq!(learnt("application/json", other, limits), None);
    }
}
