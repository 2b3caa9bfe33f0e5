//! Sending one captured exchange: its status and headers (hop-by-hop ones dropped,
//! `Content-Length` recomputed), then its body in the captured chunks at their offsets, ended
//! as the capture's `end` says (cleanly, cut, held open, or no response at all).
//!
//! It is the last step of a request: `answer` has chosen the line, `rewrite` gives the body
//! the new request's id, and this module turns the result into a timed response that
//! `endpoint` hands to hyper after the captured head delay.

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderName, HeaderValue, Response, StatusCode};
use bytes::Bytes;
use serde_json::Value;

use mcp_triage_wire::capture::BodyEnd;

use super::exchange::CapturedExchange;
use super::rewrite::rewrite_ids;

/// Name shown in `X-Kitchen-Scenario` and the journal's `scenario` for replayed answers.
pub const REPLAY_SCENARIO: &str = "replay";

const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "content-length",
];

/// Send one captured exchange: status, headers, the id-rewritten body in its chunks.
pub(super) fn serve(
    x: &CapturedExchange,
    request_id: Option<&Value>,
    speed: f64,
) -> Response<Body> {
    if x.end == BodyEnd::NoResponse && x.status == 502 {
        // The upstream answered nothing (it closed, or the client did first): the proxy closed
        // the client's connection too, so the replay drops it without a response.
        return crate::sse::abort_response();
    }
    let (body, ends) = rewrite_ids(x, request_id);
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::from_u16(x.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut had_length = false;
    for (name, value) in &x.headers {
        if HOP_BY_HOP.contains(&name.as_str()) {
            had_length |= name == "content-length";
            continue;
        }
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            r.headers_mut().append(n, v);
        }
    }
    if !r.headers().contains_key(crate::mcp::SCENARIO_HEADER) {
        r.headers_mut().insert(
            crate::mcp::SCENARIO_HEADER,
            HeaderValue::from_static(REPLAY_SCENARIO),
        );
    }
    let cut =
        matches!(x.end, BodyEnd::UpstreamClosed | BodyEnd::ClientCancelled) || x.body_truncated;
    let hold = x.end == BodyEnd::Timeout;
    if had_length && !cut && !hold {
        r.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    }
    let scale = |ms: f64| Duration::from_secs_f64((ms / speed / 1000.0).min(86_400.0));
    let head_delay = scale(x.head_ms);
    let pieces: Vec<(Duration, Bytes)> = ends
        .into_iter()
        .map(|(at, range)| (scale(at), body.slice(range)))
        .collect();
    // The head waits `headMs` (the handler sleeps it); chunk offsets count from the head.
    let head_at = tokio::time::Instant::now() + head_delay;
    *r.body_mut() = Body::from_stream(body_stream(head_at, pieces, cut, hold));
    r.extensions_mut().insert(HeadDelay(head_delay));
    r
}

/// How long the handler waits before handing the response (its head) to hyper: `headMs`.
#[derive(Clone, Copy, Debug)]
pub(super) struct HeadDelay(pub(super) Duration);

/// The body as a stream: each piece at its offset from the head; then end cleanly, with an
/// error (hyper closes the connection without the final chunk of a chunked body), or never
/// (held open until the client goes away or the kitchen shuts down).
fn body_stream(
    head_at: tokio::time::Instant,
    pieces: Vec<(Duration, Bytes)>,
    cut: bool,
    hold: bool,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    use futures_util::StreamExt;
    let body = futures_util::stream::iter(pieces).then(move |(at, bytes)| async move {
        tokio::time::sleep_until(head_at + at).await;
        Ok::<Bytes, std::io::Error>(bytes)
    });
    let tail = futures_util::stream::once(async move {
        if hold {
            std::future::pending::<()>().await;
        }
        if cut {
            // Pending once before the error, so hyper flushes the bytes it already took
            // (as the kitchen's own cuts do, see `sse::ABORT_FLUSH_GRACE`).
            tokio::time::sleep(crate::sse::ABORT_FLUSH_GRACE).await;
        }
        cut.then(|| {
            Err(std::io::Error::other(
                "replayed stream cut as the upstream cut it",
            ))
        })
    })
    .filter_map(|x| async move { x });
    body.chain(tail)
}
