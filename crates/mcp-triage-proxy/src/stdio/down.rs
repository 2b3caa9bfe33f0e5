//! Server → client: the server's stdout is relayed chunk by chunk as it arrives, and each line
//! is tapped for its record.
//!
//! Why chunks and not lines: a line is relayed before its newline arrives, so a client sees a
//! long answer as it is written, and the wrapper's memory does not grow with the line (a 1 GB
//! line without a newline used to cost 1 GB). A line up to [`WHOLE_LINE_BYTES`] is kept whole
//! and parsed as before; a longer one is fed to the core's [`ResponseClassifier`] as it passes
//! (the classifier bounds what it keeps), once [`TopLevel`] has found which open call it answers.

use std::io;
use std::time::Duration;

use mcp_triage_core::{
    classify, CallContext, Outcome, ProtocolVersion, RequestId, ResponseClassifier, ResponseHead,
    Verdict,
};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

use super::scan::TopLevel;
use super::{json_head, trim_eol, Pending, RelayReport, CHUNK_BYTES};
use crate::capture::{Capture, ExchangeCapture};
use crate::observe::{Call, Observer, Origin};
use mcp_triage_wire::capture::BodyEnd;

/// Lines up to this many bytes are kept whole and parsed as they are (every ordinary message);
/// past it a line is streamed (see the module doc). Why 1 MiB: it is where the core stops
/// buffering a JSON body whole too, and what a `tools/list` or `initialize` answer needs is
/// far smaller (those are read from the parsed line only).
pub const WHOLE_LINE_BYTES: usize = 1 << 20;

/// After the server exited, how long its stdout may stay open with nothing to read before the
/// relay stops. Why: a process the server started can hold the pipe open for ever after the
/// server itself is gone. The wait is for *reading*: a client that is slow to read what was
/// already written is waited for without limit (delivering it is the point).
pub const IDLE_AFTER_EXIT: Duration = Duration::from_secs(5);

/// The line being read.
enum LineTap {
    /// Up to [`WHOLE_LINE_BYTES`] so far, kept whole.
    Whole(Vec<u8>),
    /// Longer: streamed.
    Streamed(Box<Streamed>),
}

/// A streamed line: what is known of it and, once routed, the call it answers.
struct Streamed {
    bytes: u64,
    scan: TopLevel,
    /// The line's first bytes, kept until it is routed (bounded by about [`WHOLE_LINE_BYTES`]
    /// plus one chunk; `None` once routed or given up).
    head: Option<Vec<u8>>,
    answer: Option<Answer>,
}

/// An open call whose answer is being streamed through the classifier.
struct Answer {
    call: Call,
    capture: Option<Box<ExchangeCapture>>,
    classifier: ResponseClassifier,
}

/// Everything `server_to_client` needs besides its two ends.
pub(super) struct Down<'a> {
    pub observer: &'a Observer,
    pub origin: &'a Origin,
    pub pending: &'a Pending,
    pub capture: Option<&'a Capture>,
    /// Becomes true when the server process exited (see [`IDLE_AFTER_EXIT`]).
    pub exited: watch::Receiver<bool>,
    pub idle_after_exit: Duration,
}

/// Relays the server's stdout until its EOF; returns what could not be delivered.
pub(super) async fn server_to_client<SO, CO>(
    mut server_out: SO,
    mut client_out: CO,
    mut d: Down<'_>,
) -> RelayReport
where
    SO: AsyncRead + Unpin,
    CO: AsyncWrite + Unpin,
{
    let mut report = RelayReport::default();
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut line = LineTap::Whole(Vec::new());
    loop {
        let n = match read_or_idle(&mut server_out, &mut buf, &mut d).await {
            Some(Ok(n)) => n,
            Some(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
            Some(Err(_)) => break,
            None => {
                report.held_open = true;
                break;
            }
        };
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        // Every byte is written before it is looked at.
        if report.client_error.is_none() {
            let wrote = match client_out.write_all(chunk).await {
                Ok(()) => client_out.flush().await,
                Err(e) => Err(e),
            };
            if let Err(e) = wrote {
                report.client_error = Some(e);
            }
        }
        if report.client_error.is_some() {
            // The client closed its end: keep reading (the server must not block on a full
            // pipe) and recording, and count what it never got.
            report.undelivered += n as u64;
        }
        let mut rest = chunk;
        while !rest.is_empty() {
            let cut = rest.iter().position(|&b| b == b'\n').map(|i| i + 1);
            let (piece, after) = rest.split_at(cut.unwrap_or(rest.len()));
            line.feed(piece, &d).await;
            if cut.is_some() {
                let ended = std::mem::replace(&mut line, LineTap::Whole(Vec::new()));
                ended.end(&d).await;
            }
            rest = after;
        }
    }
    if !line.is_empty() {
        // The last line had no newline: it is still a message.
        line.end(&d).await;
    }
    if report.client_error.is_none() {
        if let Err(e) = client_out.flush().await {
            report.client_error = Some(e);
        }
    }
    report
}

/// The next read, or None when the server exited and nothing came for `idle_after_exit`.
async fn read_or_idle<SO: AsyncRead + Unpin>(
    server_out: &mut SO,
    buf: &mut [u8],
    d: &mut Down<'_>,
) -> Option<io::Result<usize>> {
    let idle = d.idle_after_exit;
    let mut exited = d.exited.clone();
    let after_exit = async move {
        // A sender that is gone never says "exited": then there is no idle limit.
        if exited.wait_for(|e| *e).await.is_err() {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(idle).await;
    };
    tokio::select! {
        r = server_out.read(buf) => Some(r),
        _ = after_exit => None,
    }
}

impl LineTap {
    fn is_empty(&self) -> bool {
        match self {
            LineTap::Whole(b) => b.is_empty(),
            LineTap::Streamed(_) => false,
        }
    }

    /// The next bytes of the line (the last piece ends with its newline).
    async fn feed(&mut self, piece: &[u8], d: &Down<'_>) {
        match self {
            LineTap::Whole(buf) if buf.len() + piece.len() <= WHOLE_LINE_BYTES => {
                buf.extend_from_slice(piece);
            }
            LineTap::Whole(buf) => {
                let head = std::mem::take(buf);
                let mut s = Box::new(Streamed {
                    bytes: 0,
                    scan: TopLevel::default(),
                    head: Some(Vec::with_capacity(head.len() + piece.len())),
                    answer: None,
                });
                s.feed(&head, d).await;
                s.feed(piece, d).await;
                *self = LineTap::Streamed(s);
            }
            LineTap::Streamed(s) => s.feed(piece, d).await,
        }
    }

    /// The line ended: its record.
    async fn end(self, d: &Down<'_>) {
        match self {
            LineTap::Whole(line) => whole_line(&line, d).await,
            LineTap::Streamed(s) => s.end(d).await,
        }
    }
}

impl Streamed {
    async fn feed(&mut self, piece: &[u8], d: &Down<'_>) {
        self.bytes += piece.len() as u64;
        if let Some(a) = self.answer.as_mut() {
            a.feed(piece);
            return;
        }
        self.scan.feed(piece);
        if let Some(head) = self.head.as_mut() {
            head.extend_from_slice(piece);
        }
        if let Some(id) = self.scan.answer_id().cloned() {
            if let Some(head) = self.head.take() {
                self.answer = route(&id, d).await;
                if let Some(a) = self.answer.as_mut() {
                    a.feed(&head);
                }
            }
        } else if self
            .head
            .as_ref()
            .is_some_and(|h| h.len() > WHOLE_LINE_BYTES)
        {
            // No id in the first WHOLE_LINE_BYTES: the start of the line is gone by the time
            // it is known, so this answer cannot be classified (said in its record).
            self.head = None;
        }
    }

    async fn end(mut self, d: &Down<'_>) {
        self.scan.end();
        if let Some(a) = self.answer.take() {
            a.finish(self.bytes, d);
            return;
        }
        if let (Some(id), Some(method)) = (self.scan.id.clone(), self.scan.method.clone()) {
            d.observer.server_request(id, method, d.origin, "");
            return;
        }
        let Some(id) = self.scan.id.clone() else {
            return;
        };
        let Some((mut call, x)) = d.pending.lock().await.remove(&id.to_string()) else {
            return;
        };
        call.record.response_bytes = self.bytes;
        let v = Verdict::new(Outcome::LimitExceeded).with_detail(format!(
            "the answer ({} bytes on one line) names its id only after its first {WHOLE_LINE_BYTES} bytes; it was relayed whole but not classified",
            self.bytes
        ));
        if let (Some(mut x), Some(to)) = (x, d.capture) {
            x.response_head(200, json_head());
            let name = crate::record::outcome_and_layer(Some(call.method()), v.outcome).0;
            x.finish(to, BodyEnd::Complete, 200, name.as_str());
        }
        d.observer.finish_call(call, v, true, None, None);
    }
}

/// The open call an answer with `id` closes, with a classifier for its body.
async fn route(id: &Value, d: &Down<'_>) -> Option<Answer> {
    let (call, mut capture) = d.pending.lock().await.remove(&id.to_string())?;
    let ctx = context(id, &call, d);
    let head = ResponseHead::new(200).content_type("application/json");
    if let Some(x) = capture.as_mut() {
        x.response_head(200, json_head());
    }
    Some(Answer {
        call,
        capture,
        classifier: ResponseClassifier::new(&head, ctx),
    })
}

fn context(id: &Value, call: &Call, d: &Down<'_>) -> CallContext {
    let rid = serde_json::from_value::<RequestId>(id.clone()).unwrap_or(RequestId::Number(0));
    let mut ctx = CallContext::new(rid)
        .with_limits(d.observer.options().limits)
        .with_drafts(d.observer.options().drafts)
        .with_now(std::time::SystemTime::now())
        // a tasks/get answer is a task's state, judged by the task rules (as over HTTP)
        .with_request_kind(mcp_triage_core::RequestKind::from_method(call.method()));
    if let Some(pv) = call
        .record
        .protocol_version
        .as_deref()
        .and_then(ProtocolVersion::parse)
    {
        ctx = ctx.with_protocol_version(pv);
    }
    ctx
}

impl Answer {
    fn feed(&mut self, piece: &[u8]) {
        let body = piece.strip_suffix(b"\n").unwrap_or(piece);
        if let Some(x) = self.capture.as_mut() {
            x.chunk(body);
        }
        if !self.classifier.is_decided() {
            self.classifier.feed(body);
        }
    }

    fn finish(self, bytes: u64, d: &Down<'_>) {
        let Answer {
            mut call,
            capture,
            classifier,
        } = self;
        let verdict = classifier.finish();
        call.record.response_bytes = bytes;
        if let (Some(x), Some(to)) = (capture, d.capture) {
            let name = crate::record::outcome_and_layer(Some(call.method()), verdict.outcome).0;
            x.finish(to, BodyEnd::Complete, 200, name.as_str());
        }
        d.observer.finish_call(call, verdict, true, None, None);
    }
}

/// A line kept whole: parsed, and recorded as the answer, server request or other message it is.
async fn whole_line(line: &[u8], d: &Down<'_>) {
    let body = trim_eol(line);
    // Only a line that can answer something is parsed; `id` of a message is needed first.
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return;
    };
    let id = v.get("id").cloned();
    let method = v.get("method").and_then(Value::as_str).map(str::to_string);
    let id = match (id, method) {
        (Some(id), Some(method)) => {
            d.observer.server_request(id, method, d.origin, "");
            return;
        }
        (Some(id), None) => id,
        _ => return,
    };
    let Some((mut call, x)) = d.pending.lock().await.remove(&id.to_string()) else {
        return;
    };
    let head = ResponseHead::new(200).content_type("application/json");
    let verdict = classify(&head, body, &context(&id, &call, d));
    call.record.response_bytes = line.len() as u64;
    let tools = (call.method() == "tools/list")
        .then(|| {
            v.pointer("/result/tools")
                .and_then(Value::as_array)
                .cloned()
        })
        .flatten();
    let is_init = call.method() == "initialize";
    if is_init {
        call.record.protocol_version = v
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    if let (Some(mut x), Some(to)) = (x, d.capture) {
        x.response_head(200, json_head());
        x.chunk(body);
        let name = crate::record::outcome_and_layer(Some(call.method()), verdict.outcome).0;
        x.finish(to, BodyEnd::Complete, 200, name.as_str());
    }
    let session = d.origin.session_id.clone();
    d.observer.finish_call(
        call,
        verdict,
        true,
        session.as_deref().filter(|_| is_init),
        tools.as_deref(),
    );
}
