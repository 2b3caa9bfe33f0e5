//! Exchanges that got no response head: the upstream could not be reached, closed without
//! answering, timed out, the client's body stalled or broke, or the client went away. Here is
//! what the client gets then ([`answer_failure`]: a status and a sentence, or its connection
//! closed) and the records: they wait (bounded) for the request body; the client's answer does
//! not.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http::StatusCode;
use mcp_triage_core::{Outcome, ResponseHead, Verdict};

use super::errors::{error_chain, Cut};
use super::exchange::Exchange;
use super::h1::fields::Known;
use super::h1::fields::MAX_HEADERS;
use super::h1::parts::ResponseParts;
use super::h1::response_head::{HeadError, MAX_HEAD_BYTES};
use super::plan::Plan;
use super::request_body::{BodyStalled, PendingCopy, RequestCopy, REQUEST_DRAIN};
use super::response_body::{Answer, ResponseTap};
use super::shared::Shared;
use super::upstream::{Sent, UpstreamError};
use crate::capture::ExchangeCapture;
use crate::record::RecordOutcome;
use mcp_triage_wire::capture::BodyEnd;

/// Writes the record of an exchange whose handler was dropped before the response head.
pub(super) struct PendingGuard {
    pub(super) sh: Arc<Shared>,
    pub(super) ex: Option<Exchange>,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        let Some(ex) = self.ex.take() else { return };
        record_without_response(&self.sh, ex, 502, |plan, sh, ex| {
            let v = Verdict::connection_error(
                "the client closed the connection (or the proxy stopped) before the response; the upstream request was closed",
            );
            plan.fail(sh, ex, v, true, None, true)
        });
    }
}

/// Writes the record(s) of an exchange that got no response from the upstream: at once when
/// the request body was read (so the retry state is updated before the client sees the
/// failure and can resend), else once it has been (at most [`REQUEST_DRAIN`] later), off the
/// forwarding path.
///
/// `answered` is the status the client got (for the capture; 502 when its connection was
/// closed instead).
pub(super) fn record_without_response(
    sh: &Arc<Shared>,
    mut ex: Exchange,
    answered: u16,
    write: impl FnOnce(Plan, &Shared, &Exchange) -> RecordOutcome + Send + 'static,
) {
    if let Some(copy) = ex.request.try_take() {
        let capture = ex.capture.take();
        let plan = plan_without_response(sh, &ex, &copy);
        let verdict = write(plan, sh, &ex);
        capture_without_response(sh, capture, copy, answered, verdict);
        return;
    }
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let sh = sh.clone();
    rt.spawn(async move {
        let pending = std::mem::replace(&mut ex.request, PendingCopy::Taken);
        let copy = pending.take_within(REQUEST_DRAIN).await;
        let capture = ex.capture.take();
        let plan = plan_without_response(&sh, &ex, &copy);
        let verdict = write(plan, &sh, &ex);
        capture_without_response(&sh, capture, copy, answered, verdict);
    });
}

/// The capture line of an exchange without a response head (`end: "no_response"`).
fn capture_without_response(
    sh: &Shared,
    capture: Option<Box<ExchangeCapture>>,
    copy: RequestCopy,
    answered: u16,
    verdict: RecordOutcome,
) {
    if let (Some(mut c), Some(to)) = (capture, sh.capture.as_ref()) {
        c.request_body(&copy.bytes, copy.overflow);
        c.finish(to, BodyEnd::NoResponse, answered, verdict.as_str());
    }
}

fn plan_without_response(sh: &Arc<Shared>, ex: &Exchange, copy: &RequestCopy) -> Plan {
    Plan::new(sh, &ResponseHead::new(502), ex, copy)
}

/// Answers an exchange that got no response head: the client gets the proxy's answer now (or
/// its connection closed, as the upstream closed the proxy's), the record follows once the
/// request body was read.
pub(super) fn answer_failure(
    sh: &Arc<Shared>,
    ex: Exchange,
    failed: Sent,
    body_stalled: &OnceLock<BodyStalled>,
    body_malformed: &OnceLock<String>,
) -> Result<Answer, Cut> {
    let (status, verdict, reached) = failure_verdict(sh, failed, body_stalled, body_malformed);
    let detail = verdict.detail.clone().unwrap_or_default();
    // The record waits for the rest of the request body (at most REQUEST_DRAIN), the
    // client does not: it gets its answer now, and a shutdown that drops this handler
    // cannot drop the record with it.
    let code = status.map(|s| s.as_u16());
    // Nothing answered (the client's connection is closed): 502 in a capture.
    let answered = code.unwrap_or(502);
    record_without_response(sh, ex, answered, move |plan, sh, ex| {
        plan.fail(sh, ex, verdict, reached, code, false)
    });
    match status {
        Some(status) => {
            let body = format!("mcp-triage proxy: {detail}\n");
            let text = (Known::ContentType, "text/plain; charset=utf-8");
            // After a 408 or 400 the rest of the body is unread: the connection cannot carry
            // another request.
            let fields: &[_] =
                if status == StatusCode::REQUEST_TIMEOUT || status == StatusCode::BAD_REQUEST {
                    &[text, (Known::Connection, "close")]
                } else {
                    &[text]
                };
            Ok(Answer {
                head: ResponseParts::own(status, fields),
                body: ResponseTap::fixed(Bytes::from(body)),
            })
        }
        None => Err(Cut),
    }
}

/// What the client gets: a status and a sentence, or its connection closed as the
/// upstream closed the proxy's; what the record says; whether the upstream may have
/// acted on the request.
fn failure_verdict(
    sh: &Shared,
    failed: Sent,
    body_stalled: &OnceLock<BodyStalled>,
    body_malformed: &OnceLock<String>,
) -> (Option<StatusCode>, Verdict, bool) {
    match failed {
        Sent::ConnectFailed(why) => {
            let detail = format!(
                "the proxy could not connect to the upstream {}: {why}",
                sh.authority
            );
            (
                Some(StatusCode::BAD_GATEWAY),
                Verdict::connection_error(detail),
                false,
            )
        }
        Sent::Failed(_) if body_stalled.get().is_some() => {
            let stalled = body_stalled.get().expect("checked");
            let mut v = Verdict::timeout(
                stalled.to_string() + "; the upstream request was closed before its body ended",
            );
            v.limit = Some(stalled.limit());
            // An incomplete body is not a request the upstream can act on.
            (Some(StatusCode::REQUEST_TIMEOUT), v, false)
        }
        Sent::Failed(_) if body_malformed.get().is_some() => {
            let why = body_malformed.get().expect("checked");
            let v = Verdict::connection_error(format!(
                "the client's request body could not be read ({why}); the upstream request was closed before its body ended"
            ));
            // An incomplete body is not a request the upstream can act on.
            (Some(StatusCode::BAD_REQUEST), v, false)
        }
        Sent::Failed(UpstreamError::Head(e)) => {
            // The upstream answered, in bytes the proxy cannot pass on as a response: the
            // client gets a 502 naming why (as nginx's "upstream sent invalid header"), not a
            // closed connection that reads as the upstream closing.
            let detail = format!(
                "the upstream's response head could not be read: {e}; the proxy answered 502"
            );
            let limit = match e {
                HeadError::TooManyFields => Some(("maxResponseHeaderLines", MAX_HEADERS as u64)),
                HeadError::TooLong => Some(("maxResponseHeadBytes", MAX_HEAD_BYTES as u64)),
                _ => None,
            };
            let v = match limit {
                Some((name, max)) => {
                    let mut v = Verdict::new(Outcome::LimitExceeded).with_detail(detail);
                    v.limit = Some(mcp_triage_core::LimitHit {
                        name: name.into(),
                        max,
                    });
                    v
                }
                None => Verdict::connection_error(detail),
            };
            (Some(StatusCode::BAD_GATEWAY), v, true)
        }
        Sent::Failed(e) => {
            let detail = format!(
                "the upstream closed the connection before a response: {}",
                error_chain(&e)
            );
            (None, Verdict::connection_error(detail), true)
        }
        Sent::TimedOut(limit) => {
            let mut v = Verdict::timeout(format!(
                "the upstream sent no response head within {} ms of the request (response timeout); the upstream request was closed",
                limit.as_millis()
            ));
            v.limit = Some(mcp_triage_core::LimitHit {
                name: "responseTimeoutMs".into(),
                max: limit.as_millis() as u64,
            });
            (Some(StatusCode::GATEWAY_TIMEOUT), v, true)
        }
        Sent::Response(..) => unreachable!("matched above"),
    }
}
