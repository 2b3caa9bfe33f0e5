//! Turning the messages of one request into an HTTP response: a single JSON body, or an
//! SSE stream whose events are logged so a 2025-11-25 client can resume them.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderValue, Response, StatusCode};
use bytes::Bytes;
use futures_util::stream;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::options::ResponseMode;
use crate::plugin::Out;
use crate::session::{Chunk, Session, StreamLog};

/// Marker in a response's extensions: the server loop drops the connection instead of
/// writing this response (see [`crate::server`]).
#[derive(Clone, Copy, Debug)]
pub struct AbortConnection;

/// A response that makes the kitchen's server loop close the connection without answering.
pub fn abort_response() -> Response<Body> {
    let body = Body::from_stream(stream::once(async {
        Err::<Bytes, std::io::Error>(std::io::Error::other("connection closed by scenario"))
    }));
    let mut r = Response::new(body);
    r.extensions_mut().insert(AbortConnection);
    r
}

/// One SSE event carrying a JSON-RPC message.
pub fn event(id: Option<&str>, msg: &Value) -> Bytes {
    let mut s = String::new();
    if let Some(id) = id {
        s.push_str("id: ");
        s.push_str(id);
        s.push('\n');
    }
    s.push_str("event: message\ndata: ");
    s.push_str(&msg.to_string());
    s.push_str("\n\n");
    Bytes::from(s)
}

/// A JSON response.
pub fn json_response(status: u16, v: &Value) -> Response<Body> {
    let mut r = Response::new(Body::from(v.to_string()));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// How an SSE response is laid out.
pub struct SsePlan {
    /// The JSON-RPC id of the request the stream answers (kept in the stream log, so a
    /// resumption's answer is journaled as this request's).
    pub request_id: Option<Value>,
    /// Legacy session whose stream log keeps the events for resumption.
    pub session: Option<Arc<Session>>,
    /// Send a priming event (event id, empty data) first (2025-11-25).
    pub priming: bool,
    /// Close the POST connection right after the priming event, with a `retry:` field; the
    /// rest is served to a `GET` with `Last-Event-ID`.
    pub close_after_priming: bool,
    /// `retry:` value in ms.
    pub retry_ms: u64,
}

/// Render the messages arriving on `rx` according to `mode`.
pub async fn render(
    mut rx: mpsc::UnboundedReceiver<Out>,
    mode: ResponseMode,
    plan: SsePlan,
) -> Response<Body> {
    let first = match mode {
        ResponseMode::Json => loop {
            match rx.recv().await {
                Some(Out::Final(status, v)) => return json_response(status, &v),
                Some(Out::Message(_)) | Some(Out::Raw(_)) => continue,
                Some(Out::End) | Some(Out::Abort) | None => return abort_response(),
            }
        },
        ResponseMode::Auto => match rx.recv().await {
            Some(Out::Final(status, v)) => return json_response(status, &v),
            Some(other) => Some(other),
            None => return abort_response(),
        },
        // Without a priming event to send first, the status line can wait for the first
        // message: an HTTP error status (e.g. 400 + -32021 for a missing client capability)
        // must not be hidden behind `200 text/event-stream`.
        ResponseMode::Sse if !(plan.priming && plan.session.is_some()) => match rx.recv().await {
            Some(Out::Final(status, v)) if status != 200 => return json_response(status, &v),
            Some(other) => Some(other),
            None => return abort_response(),
        },
        ResponseMode::Sse => None,
    };
    sse_response(first, rx, plan)
}

fn sse_response(
    first: Option<Out>,
    mut rx: mpsc::UnboundedReceiver<Out>,
    plan: SsePlan,
) -> Response<Body> {
    let log = match &plan.session {
        Some(s) => s.open_stream(),
        None => Arc::new(StreamLog::new(0)),
    };
    let resumable = plan.session.is_some();
    if let Some(id) = &plan.request_id {
        log.set_request_id(id.clone());
    }
    let stream_id = log.id;
    if plan.priming && resumable {
        let mut s = format!("id: {stream_id}-0\n");
        if plan.close_after_priming {
            s.push_str(&format!("retry: {}\n", plan.retry_ms));
        }
        s.push_str("data: \n\n");
        log.push(0, Chunk::Data(Bytes::from(s)));
        if plan.close_after_priming {
            log.push(0, Chunk::Detach);
        }
    }
    let (alive_tx, alive_rx) = oneshot::channel::<()>();
    let pump_log = log.clone();
    tokio::spawn(async move {
        let mut seq = 0u64;
        let mut pending = first;
        let mut alive_rx = alive_rx;
        loop {
            let next = match pending.take() {
                Some(o) => Some(o),
                None if resumable => rx.recv().await,
                None => tokio::select! {
                    o = rx.recv() => o,
                    _ = &mut alive_rx => None,
                },
            };
            let Some(out) = next else { break };
            match out {
                Out::Message(v) | Out::Final(_, v) => {
                    let is_final = v.get("method").is_none();
                    seq += 1;
                    let id = resumable.then(|| format!("{stream_id}-{seq}"));
                    pump_log.push(seq, Chunk::Data(event(id.as_deref(), &v)));
                    if is_final {
                        pump_log.mark_answered();
                        break;
                    }
                }
                Out::Raw(b) => pump_log.push(0, Chunk::Fragment(b)),
                Out::End => break,
                Out::Abort => {
                    pump_log.push(0, Chunk::Abort);
                    // The cut is the connection's; a resumable stream goes on in its log, so
                    // what the scenario sends after the cut is served to a resumption.
                    if !resumable {
                        break;
                    }
                }
            }
        }
        pump_log.finish();
    });
    let body = reader(log, 0, false, Some(alive_tx));
    sse_headers(Response::new(body))
}

/// Add the SSE response headers.
pub fn sse_headers(mut r: Response<Body>) -> Response<Body> {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// How long a body waits between its last bytes and a scenario's cut (see [`reader`]).
pub const ABORT_FLUSH_GRACE: std::time::Duration = std::time::Duration::from_millis(10);

/// A body that reads `log` from chunk `start`. A POST reader stops at a
/// [`Chunk::Detach`] and breaks its connection at a [`Chunk::Abort`]; a resuming reader
/// (`resumed`) skips both, and the [`Chunk::Fragment`]s, so it sends whole events only.
pub fn reader(
    log: Arc<StreamLog>,
    start: usize,
    resumed: bool,
    guard: Option<oneshot::Sender<()>>,
) -> Body {
    let s = stream::unfold(
        (log, start, guard, false),
        move |(log, i, guard, stop)| async move {
            if stop {
                return None;
            }
            let mut i = i;
            loop {
                match log.next(i).await? {
                    Chunk::Data(b) => {
                        return Some((Ok::<Bytes, std::io::Error>(b), (log, i + 1, guard, false)))
                    }
                    // A resumption replays whole events only: a partial event written before
                    // a cut would reach the client again, cut again and without an id.
                    Chunk::Fragment(_) | Chunk::Abort if resumed => i += 1,
                    Chunk::Fragment(b) => {
                        return Some((Ok::<Bytes, std::io::Error>(b), (log, i + 1, guard, false)))
                    }
                    Chunk::Abort => {
                        // Pending once before the error, so that hyper flushes the bytes it
                        // already took from this body: otherwise, when the partial event and
                        // the cut are both ready in one poll (a loaded machine), the
                        // connection is dropped with them still in its write buffer and the
                        // client sees no partial event at all.
                        tokio::time::sleep(ABORT_FLUSH_GRACE).await;
                        return Some((
                            Err(std::io::Error::other("stream cut by scenario")),
                            (log, i + 1, guard, true),
                        ));
                    }
                    Chunk::Detach if resumed => i += 1,
                    Chunk::Detach => return None,
                }
            }
        },
    );
    Body::from_stream(s)
}
