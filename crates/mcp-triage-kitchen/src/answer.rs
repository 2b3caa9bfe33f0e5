//! The journal's `answer`: the core classifier reading the response the kitchen sends, as a
//! client would read it.
//!
//! Why here and not in the scenarios: a scenario plans a fault, but what reaches the client
//! is bytes — a cut event, an error inside an SSE stream, a result that only a resumption
//! delivers. `judge` holds a client's claim ("exit 0", "ok") against what it was given, so
//! the journal says what it was given, read the client's way. A whole body is read at once,
//! before its entry is journaled; a stream is read chunk by chunk as it goes out, and its
//! entry is completed the moment the stream ends (before the client sees its end), so a
//! client that exits after reading a stream finds the entry complete.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{header, Response};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use mcp_triage_core::{
    CallContext, Drafts, Interruption, RequestId, RequestKind, ResponseClassifier, ResponseHead,
};
use serde_json::Value;

use crate::journal::Answer;

/// Marker in a response's extensions: this `GET` resumes the stream of the request with this
/// JSON-RPC id, so its answer is read as that request's.
#[derive(Clone, Debug)]
pub struct ResumedRequest(pub Value);

/// Whether the answer to a request of `method` is journaled: a `tools/call`, and the task
/// requests whose answers carry a call's outcome (`tasks/get`, `tasks/result`).
pub fn is_answered(method: Option<&str>) -> bool {
    matches!(method, Some("tools/call" | "tasks/get" | "tasks/result"))
}

/// The request id a response is read against, when it is one a client could match.
pub fn request_id(id: &Value) -> Option<RequestId> {
    match id {
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        Value::String(s) => Some(RequestId::String(s.clone())),
        _ => None,
    }
}

/// What [`observe`] found: the answer of a whole body, or a stream whose answer comes when
/// it ends.
pub enum Observed {
    /// The body was whole; this is its answer.
    Whole(Answer),
    /// The body streams; [`StreamWatch::on_end`] receives its answer.
    Streaming(StreamWatch),
}

/// Delivers a stream's answer to whoever registered for it, once.
#[derive(Clone, Default)]
pub struct StreamWatch(Arc<Mutex<Slot>>);

type OnEnd = Box<dyn FnOnce(Answer) + Send>;

#[derive(Default)]
enum Slot {
    #[default]
    Empty,
    Waiting(OnEnd),
    Ended(Answer),
    Delivered,
}

impl StreamWatch {
    /// Call `f` with the stream's answer when it ends (at once if it already has).
    pub fn on_end(&self, f: impl FnOnce(Answer) + Send + 'static) {
        let mut slot = self.0.lock().expect("answer slot lock");
        match std::mem::take(&mut *slot) {
            Slot::Ended(a) => {
                *slot = Slot::Delivered;
                drop(slot);
                f(a);
            }
            _ => *slot = Slot::Waiting(Box::new(f)),
        }
    }

    fn end(&self, a: Answer) {
        let mut slot = self.0.lock().expect("answer slot lock");
        match std::mem::take(&mut *slot) {
            Slot::Waiting(f) => {
                *slot = Slot::Delivered;
                drop(slot);
                f(a);
            }
            Slot::Empty => *slot = Slot::Ended(a),
            other => *slot = other,
        }
    }
}

/// Read `resp` as the answer to request `expected`. A body whose size is known (JSON, an
/// empty error) is in memory already and is read whole; anything else is wrapped so that each
/// chunk is read on its way out.
pub async fn observe(
    resp: Response<Body>,
    expected: RequestId,
    kind: RequestKind,
) -> (Response<Body>, Observed) {
    let head = head_of(&resp);
    // A tasks/get answer is a task's state, judged by the task rules (working, failed, …).
    // The draft ToolFailure is read, so that the journal says which class a tool error
    // declared (judge's honours_declared_class); "now" is the clock, so that its
    // retryNotBefore reads as a wait from when the answer went out.
    let ctx = CallContext::new(expected)
        .with_request_kind(kind)
        .with_drafts(Drafts {
            tool_failure: true,
            ..Drafts::default()
        })
        .with_now(std::time::SystemTime::now());
    let (parts, body) = resp.into_parts();
    if axum::body::HttpBody::size_hint(&body).exact().is_some() {
        // Whole: already in memory, so collecting it costs a copy, not a wait.
        return match axum::body::to_bytes(body, usize::MAX).await {
            Ok(bytes) => {
                let v = mcp_triage_core::classify(&head, &bytes, &ctx);
                let resp = Response::from_parts(parts, Body::from(bytes));
                (resp, Observed::Whole(Answer::of(&v)))
            }
            // A sized body that fails to read is passed on as the failure it is (the
            // connection breaks), not as an empty answer.
            Err(e) => {
                let why = format!("the kitchen's own body failed: {e}");
                let v = ResponseClassifier::new(&head, ctx)
                    .interrupted(Interruption::ConnectionLost(why.clone()));
                let broken = futures_util::stream::once(async move {
                    Err::<Bytes, std::io::Error>(std::io::Error::other(why))
                });
                let resp = Response::from_parts(parts, Body::from_stream(broken));
                (resp, Observed::Whole(Answer::of(&v)))
            }
        };
    }
    let watch = StreamWatch::default();
    let tapped = Tapped {
        inner: body.into_data_stream(),
        classifier: Some(ResponseClassifier::new(&head, ctx)),
        watch: watch.clone(),
    };
    let resp = Response::from_parts(parts, Body::from_stream(tapped));
    (resp, Observed::Streaming(watch))
}

fn head_of(resp: &Response<Body>) -> ResponseHead {
    let mut head = ResponseHead::new(resp.status().as_u16());
    if let Some(ct) = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        head = head.content_type(ct);
    }
    // The wait the answer asks for is part of what a client is given (the journal's
    // `retryAfterMs`: `judge --hop` holds a hop that drops it to account).
    if let Some(ra) = resp
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
    {
        head = head.header("Retry-After", ra);
    }
    head
}

/// A response body passed through unchanged while the classifier reads it.
struct Tapped {
    inner: axum::body::BodyDataStream,
    /// `None` once the answer is given.
    classifier: Option<ResponseClassifier>,
    watch: StreamWatch,
}

impl Tapped {
    fn settle(&mut self, cut: Option<String>) {
        if let Some(c) = self.classifier.take() {
            let v = match cut {
                None => c.finish(),
                Some(why) => c.interrupted(Interruption::ConnectionLost(why)),
            };
            self.watch.end(Answer::of(&v));
        }
    }
}

impl Stream for Tapped {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.inner.poll_next_unpin(cx);
        match &next {
            Poll::Ready(Some(Ok(chunk))) => {
                if let Some(c) = self.classifier.as_mut() {
                    c.feed(chunk);
                }
            }
            Poll::Ready(Some(Err(e))) => {
                let why = format!("the kitchen broke the connection ({e})");
                self.settle(Some(why));
            }
            Poll::Ready(None) => self.settle(None),
            Poll::Pending => {}
        }
        next
    }
}

impl Drop for Tapped {
    /// The client went away before the stream ended: what it was given up to then.
    fn drop(&mut self) {
        self.settle(Some("the client closed the connection".into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_triage_core::Outcome;

    fn sse(body: &'static str) -> Response<Body> {
        let s = futures_util::stream::iter(
            body.as_bytes()
                .chunks(7)
                .map(|c| Ok::<_, std::io::Error>(Bytes::copy_from_slice(c)))
                .collect::<Vec<_>>(),
        );
        let mut r = Response::new(Body::from_stream(s));
        r.headers_mut()
            .insert(header::CONTENT_TYPE, "text/event-stream".parse().unwrap());
        r
    }

    async fn drain(r: Response<Body>) -> Bytes {
        axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_whole_json_body_is_read_at_once_and_passed_on_unchanged() {
        let body = r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}"#;
        let mut r = Response::new(Body::from(body));
        r.headers_mut()
            .insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        let (r, seen) = observe(r, RequestId::Number(3), RequestKind::ToolCall).await;
        let Observed::Whole(a) = seen else {
            panic!("a JSON body is whole")
        };
        assert_eq!(a.outcome, Outcome::JsonrpcError);
        assert_eq!(a.code, Some(-32602));
        assert_eq!(drain(r).await, body.as_bytes());
    }

    /// `judge --hop` grades a hop that drops `Retry-After` against this value.
    #[tokio::test]
    async fn the_wait_a_429_asks_for_is_in_the_answer() {
        let body = r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"slow down"}}"#;
        let mut r = Response::new(Body::from(body));
        *r.status_mut() = axum::http::StatusCode::TOO_MANY_REQUESTS;
        r.headers_mut()
            .insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        r.headers_mut()
            .insert(header::RETRY_AFTER, "2".parse().unwrap());
        let (_, seen) = observe(r, RequestId::Number(3), RequestKind::ToolCall).await;
        let Observed::Whole(a) = seen else {
            panic!("a JSON body is whole")
        };
        assert_eq!((a.status, a.retry_after_ms), (Some(429), Some(2000)));
    }

    #[tokio::test]
    async fn a_stream_is_answered_when_it_ends() {
        let body = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[],\"isError\":true}}\n\n";
        let (r, seen) = observe(sse(body), RequestId::Number(1), RequestKind::ToolCall).await;
        let Observed::Streaming(watch) = seen else {
            panic!("an SSE body streams")
        };
        let got = Arc::new(Mutex::new(None));
        let g = got.clone();
        watch.on_end(move |a| *g.lock().unwrap() = Some(a));
        assert!(
            got.lock().unwrap().is_none(),
            "not before the stream is read"
        );
        assert_eq!(drain(r).await, body.as_bytes());
        let a = got.lock().unwrap().clone().expect("answered at the end");
        assert_eq!(a.outcome, Outcome::ToolError);
    }

    #[tokio::test]
    async fn a_stream_dropped_before_its_response_is_incomplete() {
        let (r, seen) = observe(
            sse(": keepalive\n\n"),
            RequestId::String("a".into()),
            RequestKind::ToolCall,
        )
        .await;
        let Observed::Streaming(watch) = seen else {
            panic!("streams")
        };
        drop(r);
        let got = Arc::new(Mutex::new(None));
        let g = got.clone();
        watch.on_end(move |a| *g.lock().unwrap() = Some(a));
        let a = got.lock().unwrap().clone().expect("answered on drop");
        assert!(!a.is_tool_result(), "{a:?}");
    }
}
