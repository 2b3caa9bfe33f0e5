//! Small response builders the endpoint's parts share: empty and JSON-RPC error answers,
//! headers, a streamed body, and telling an over-long body from a broken one.
//!
//! They sit at the bottom of the endpoint: every other part imports them and they import
//! none, so an error answer is spelled the same wherever a request is refused.

use axum::body::Body;
use axum::http::{header, HeaderValue, Response, StatusCode};
use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::protocol::{self};
use crate::sse::{self};

/// Set a header, leaving the response as it is when `value` is not a valid header value.
pub(super) fn set_header(r: &mut Response<Body>, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers_mut().insert(name, v);
    }
}

/// A response with `status` and no body.
pub(super) fn empty(status: u16) -> Response<Body> {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r
}

/// A JSON-RPC error answer as a JSON body with HTTP `status`.
pub(super) fn rpc_error(
    status: u16,
    id: Option<&Value>,
    code: i64,
    message: &str,
    data: Option<Value>,
) -> Response<Body> {
    sse::json_response(status, &protocol::error_response(id, code, message, data))
}

/// 405 with `Allow: POST`.
pub(super) fn method_not_allowed() -> Response<Body> {
    let mut r = empty(405);
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    r
}

/// A body fed by a producer task through a channel.
pub(super) fn async_stream_body<F, Fut>(producer: F) -> Body
where
    F: FnOnce(mpsc::UnboundedSender<Bytes>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    tokio::spawn(producer(tx));
    let s = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<Bytes, std::io::Error>(b), rx))
    });
    Body::from_stream(s)
}

/// Whether reading a request body failed on the size limit, not on the body itself: a bad
/// chunked encoding (or a connection cut mid-body) is a malformed request (400), not a large
/// one (413).
pub(crate) fn body_over_limit(e: &axum::Error) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if err.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cur = err.source();
    }
    false
}
