//! Forwarding one exchange: [`handle`] checks `Host`/`Origin` (or [`refuse`]s), rewrites the
//! request head for the upstream, taps the body, sends it through the connection's
//! [`super::upstream::Upstream`], and answers the client with the upstream's response, its body
//! tapped for the observer. Without a response head, [`super::no_response::answer_failure`]
//! answers instead.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::StatusCode;
use mcp_triage_core::{ResponseHead, Warning};

use super::client_body::ClientBody;
use super::deferred::TapState;
use super::errors::Cut;
use super::exchange::Exchange;
use super::h1::fields::{FieldValue, Fields, Known};
use super::h1::incoming_request::RequestHeadError;
use super::h1::parts::{RequestParts, ResponseParts};
use super::headers::{header_string, strip_hop_by_hop, MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use super::no_response::{answer_failure, PendingGuard};
use super::request_body::{PendingCopy, RequestTap};
use super::response_body::{Answer, ResponseTap};
use super::response_observer::{ResponseObserver, Stage};
use super::shared::Shared;
use super::upstream::{Sent, Upstream};
use super::upstream_body::UpstreamBody;
use crate::guard::{redact_query, Refusal};
use crate::observe::Origin;
use crate::record::{RecordKind, RecordOutcome};

/// Serves one request of a client connection: refused when `Host` or `Origin` fails the checks,
/// else forwarded upstream and answered with the upstream's response, or with the proxy's own
/// answer (or a closed connection) when none came.
pub(super) async fn handle(
    sh: Arc<Shared>,
    upstream: Upstream,
    peer: Arc<str>,
    mut parts: RequestParts,
    body: ClientBody,
) -> Result<Answer, Cut> {
    let started = Instant::now();
    if let Some(policy) = &sh.host_policy {
        let host = parts.fields.get(Known::Host);
        let origin = parts.fields.get(Known::Origin);
        if let Err(refusal) = policy.check(host, origin) {
            return Ok(refuse(&sh, &parts, &peer, started, refusal));
        }
    }
    let (tap, ex) = begin_exchange(&sh, &mut parts, body, &peer, started);
    let body_stalled = tap.timed_out.clone();
    let body_malformed = tap.malformed.clone();
    // If this future is dropped before the response head arrives (the client went away, or the
    // proxy is shutting down), the guard still writes the exchange's record.
    let mut guard = PendingGuard {
        sh: sh.clone(),
        ex: Some(ex),
    };
    let send = upstream.send(&sh, parts, tap);
    let limit = sh.response_timeout;
    let result = if limit.is_zero() {
        send.await
    } else {
        let ex = guard.ex.as_mut().expect("armed until the response");
        tokio::select! {
            sent = send => sent,
            _ = response_deadline(&mut ex.request, limit) => Sent::TimedOut(limit),
        }
    };
    let ex = guard.ex.take().expect("the guard is disarmed only here");
    match result {
        Sent::Response(head, body) => Ok(answer_response(&sh, &upstream, ex, head, body)),
        failed => answer_failure(&sh, ex, failed, &body_stalled, &body_malformed),
    }
}

/// What is known of the exchange before it is sent (its origin, path, the capture's start), and
/// the request head made ready for the upstream; the body becomes the [`RequestTap`] that copies
/// it for the record on its way.
fn begin_exchange(
    sh: &Shared,
    parts: &mut RequestParts,
    body: ClientBody,
    peer: &str,
    started: Instant,
) -> (RequestTap, Exchange) {
    let origin = Origin {
        session_id: header_string(&parts.fields, MCP_SESSION_ID),
        protocol_version: header_string(&parts.fields, MCP_PROTOCOL_VERSION),
        user_agent: header_string(&parts.fields, Known::UserAgent),
        peer: String::from(peer),
    };
    let observer = &sh.observer;
    let request_headers = observer
        .options()
        .log_headers
        .then(|| observer.loggable_headers(parts.fields.iter()));
    let (tap, request) = RequestTap::new(
        body,
        observer.options().max_request_bytes,
        sh.body_read_timeout,
        sh.body_deadline,
    );
    strip_hop_by_hop(&mut parts.fields);
    let path = parts.path();
    let capture = sh.capture.as_ref().map(|c| {
        c.begin(
            "http",
            parts.method.as_str(),
            path,
            parts.fields.iter(),
            origin.session_id.as_deref(),
        )
    });
    let ex = Exchange {
        started,
        origin,
        http_method: parts.method.clone(),
        path: redact_query(path, &sh.redact_query_params).into_owned(),
        request,
        request_headers,
        capture,
    };
    rewrite_for_upstream(sh, &mut parts.fields);
    (tap, ex)
}

/// The request head's fields as the upstream gets them (the head is written in origin form,
/// HTTP/1.1): the upstream's `Host` (the client's in `X-Forwarded-Host`), `Via`, and no
/// credentials meant for the proxy.
fn rewrite_for_upstream(sh: &Shared, fields: &mut Fields) {
    // Credentials for this proxy, not for the upstream.
    fields.remove(Known::ProxyAuthorization);
    // What the proxy says of the client's host and scheme goes in `X-Forwarded-*` below; a
    // `Forwarded` the client wrote would override it at an upstream that reads both (RFC 7239
    // takes precedence), letting any client name the URLs the upstream advertises.
    fields.remove(Known::Forwarded);
    // The upstream routes on its own name; the client's (checked in `handle` when the proxy checks
    // hosts) goes along, with the scheme the client used (the proxy listens on plain HTTP), so
    // an upstream that advertises its own URLs (OAuth resource metadata, an issuer) can name
    // the proxy's address the client reached instead of one the client cannot use.
    if let Some(client_host) = fields.value_of(Known::Host) {
        fields.insert(Known::XForwardedHost, client_host);
        fields.insert(Known::XForwardedProto, FieldValue::from_static("http"));
    }
    fields.insert(Known::Host, FieldValue::from(sh.host.clone()));
    // RFC 9110 §7.6.3: a gateway sends Via in each request it forwards.
    fields.append(Known::Via, FieldValue::from_static("1.1 mcp-triage"));
}

/// The upstream's response on its way to the client: hop-by-hop headers removed, the head noted
/// for the record and the capture, the body wrapped in a [`ResponseTap`] feeding the observer.
fn answer_response(
    sh: &Arc<Shared>,
    upstream: &Upstream,
    mut ex: Exchange,
    mut head: ResponseParts,
    body: Box<UpstreamBody>,
) -> Answer {
    let observer = &sh.observer;
    let observed = observed_head(&head);
    let response_headers = observer
        .options()
        .log_headers
        .then(|| observer.loggable_headers(head.fields.iter()));
    strip_hop_by_hop(&mut head.fields);
    if let (Some(c), Some(capture)) = (ex.capture.as_mut(), sh.capture.as_ref()) {
        c.response_head(head.status.as_u16(), capture.headers(head.fields.iter()));
    }
    let obs = ResponseObserver {
        sh: sh.clone(),
        session_assigned: header_string(&head.fields, MCP_SESSION_ID),
        head: observed,
        response_headers,
        bytes: 0,
        stage: Stage::Waiting {
            pending: Vec::new(),
            pending_bytes: 0,
            overflow: false,
        },
        ex: Some(ex),
    };
    let body = ResponseTap::upstream(
        body,
        (
            Arc::new(Mutex::new(TapState {
                obs: Some(Box::new(obs)),
                ..TapState::default()
            })),
            upstream.deferred.clone(),
        ),
    );
    Answer { head, body }
}

/// The response's fields the observer reads: those the classifier reads (`Content-Type`,
/// `Content-Encoding`, which it undoes, `Retry-After`, `WWW-Authenticate`) and
/// `Content-Length` (for a body declared over the limit). Why not all: each is copied into
/// owned strings that live as long as the exchange, and the rest were never read.
const OBSERVED_FIELDS: [Known; 5] = [
    Known::ContentType,
    Known::ContentEncoding,
    Known::ContentLength,
    Known::RetryAfter,
    Known::WwwAuthenticate,
];

/// The head the observer and the classifier take (see [`OBSERVED_FIELDS`]).
fn observed_head(head: &ResponseParts) -> ResponseHead {
    let mut observed = ResponseHead::new(head.status.as_u16());
    for name in OBSERVED_FIELDS {
        for v in head.fields.get_all(name) {
            let value = String::from_utf8_lossy(v).into_owned();
            observed.headers.push((name.as_str().to_string(), value));
        }
    }
    observed
}

/// The proxy's own answer to a request it will not forward (DNS-rebinding protection): a `403`
/// whose body is a JSON-RPC error without id (as the MCP transport describes for an invalid
/// `Origin`) naming the reason, and a record saying `REFUSED` with the reason as a warning.
fn refuse(
    sh: &Shared,
    parts: &RequestParts,
    peer: &str,
    started: Instant,
    refusal: Refusal,
) -> Answer {
    let observer = &sh.observer;
    let mut r = observer.new_record(RecordKind::Http);
    r.http_method = Some(parts.method.to_string());
    r.path = Some(redact_query(parts.path(), &sh.redact_query_params).into_owned());
    r.http_statuses = vec![403];
    r.outcome = RecordOutcome::Refused;
    r.layer = Some(mcp_triage_core::Layer::Transport);
    r.classified = false;
    r.client = header_string(&parts.fields, Known::UserAgent).map(|ua| crate::record::ClientId {
        user_agent: Some(ua),
        ..Default::default()
    });
    r.warnings.push(Warning {
        code: refusal.code.into(),
        detail: format!("{} (from {peer})", refusal.reason),
    });
    r.request_headers = observer
        .options()
        .log_headers
        .then(|| observer.loggable_headers(parts.fields.iter()));
    r.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    observer.emit(r);
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "error": {
            "code": -32000,
            "message": format!("Forbidden by the mcp-triage proxy: {}", refusal.reason),
        },
    });
    Answer {
        head: ResponseParts::own(
            StatusCode::FORBIDDEN,
            &[(Known::ContentType, "application/json")],
        ),
        body: ResponseTap::fixed(Bytes::from(body.to_string())),
    }
}

/// The record of a request head the proxy would not serve (it answered with
/// [`RequestHeadError::status`] and closed the connection, forwarding nothing): `REFUSED`, the
/// reason as a warning.
pub(super) fn record_unservable_head(sh: &Shared, peer: &str, why: &RequestHeadError) {
    let observer = &sh.observer;
    let mut r = observer.new_record(RecordKind::Http);
    r.http_statuses = vec![why.status()];
    r.outcome = RecordOutcome::Refused;
    r.layer = Some(mcp_triage_core::Layer::Transport);
    r.classified = false;
    r.warnings.push(Warning {
        code: why.code().into(),
        detail: format!(
            "{why}: answered {} and closed the connection, nothing forwarded (from {peer})",
            why.status()
        ),
    });
    observer.emit(r);
}

/// Completes `limit` after the request body was read whole (the copy for the record arrived;
/// it is put back for the record); never when the body never ends, which the body read
/// timeout covers.
async fn response_deadline(request: &mut PendingCopy, limit: Duration) {
    request.arrived().await;
    tokio::time::sleep(limit).await;
}
