//! Records of exchanges that got no response head: the upstream could not be reached, closed
//! without answering, timed out, the client's body stalled or broke, or the client went away.
//! The record waits (bounded) for the request body; the client's answer does not.

use std::sync::Arc;

use mcp_triage_core::{ResponseHead, Verdict};
use tokio::sync::oneshot;

use super::exchange::Exchange;
use super::plan::Plan;
use super::request_body::{RequestCopy, REQUEST_DRAIN};
use super::shared::Shared;
use crate::capture::{CaptureEnd, ExchangeCapture};

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
    write: impl FnOnce(Plan, &Shared, &Exchange) -> String + Send + 'static,
) {
    if let Ok(copy) = ex.request.try_recv() {
        let capture = ex.capture.take();
        let plan = plan_without_response(sh, &ex, &copy);
        let verdict = write(plan, sh, &ex);
        capture_without_response(sh, capture, copy, answered, &verdict);
        return;
    }
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let sh = sh.clone();
    rt.spawn(async move {
        let rx = std::mem::replace(&mut ex.request, oneshot::channel().1);
        let copy = tokio::time::timeout(REQUEST_DRAIN, rx)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let capture = ex.capture.take();
        let plan = plan_without_response(&sh, &ex, &copy);
        let verdict = write(plan, &sh, &ex);
        capture_without_response(&sh, capture, copy, answered, &verdict);
    });
}

/// The capture line of an exchange without a response head (`end: "no_response"`).
fn capture_without_response(
    sh: &Shared,
    capture: Option<Box<ExchangeCapture>>,
    copy: RequestCopy,
    answered: u16,
    verdict: &str,
) {
    if let (Some(mut c), Some(to)) = (capture, sh.capture.as_ref()) {
        c.request_body(&copy.bytes, copy.overflow);
        c.finish(to, CaptureEnd::NoResponse, answered, verdict);
    }
}

fn plan_without_response(sh: &Arc<Shared>, ex: &Exchange, copy: &RequestCopy) -> Plan {
    Plan::new(sh, &ResponseHead::new(502), ex, copy)
}
