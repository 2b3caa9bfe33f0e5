//! The observer's side of one response ([`ResponseObserver`]): it keeps the body's first chunks
//! (bounded) while the request body is still read, then builds the [`Plan`] and feeds it, and
//! closes the records and the capture line when the body ends. Run from [`super::deferred`].

use std::sync::Arc;

use bytes::Bytes;
use mcp_triage_core::ResponseHead;

use super::exchange::Exchange;
use super::plan::{is_sse, End, Observed, Plan};
use super::request_body::{PendingCopy, RequestCopy, REQUEST_DRAIN};
use super::shared::Shared;
use mcp_triage_wire::capture::BodyEnd;

pub(super) enum Stage {
    /// The request body has not been read to its end yet: keep response chunks (bounded) until
    /// it has, then replay them into the plan. Forwarding never waits for this.
    Waiting {
        pending: Vec<Bytes>,
        pending_bytes: u64,
        overflow: bool,
    },
    Active(Box<Plan>),
}

pub(super) struct ResponseObserver {
    pub(super) sh: Arc<Shared>,
    pub(super) ex: Option<Exchange>,
    pub(super) head: ResponseHead,
    pub(super) session_assigned: Option<String>,
    pub(super) response_headers: Option<Vec<(String, String)>>,
    pub(super) bytes: u64,
    pub(super) stage: Stage,
}

impl ResponseObserver {
    /// The length a 2xx non-SSE response declares, when it is over `maxBodyBytes`: such a body
    /// is not copied for the classifier at all (a 2 GB JSON answer costs no memory), and its
    /// calls get a `LIMIT_EXCEEDED` verdict naming the limit, as the classifier would give once
    /// it had copied that much.
    fn declared_over_limit(&self) -> Option<u64> {
        if self.head.status / 100 != 2 || is_sse(&self.head) {
            return None;
        }
        self.head
            .get("content-length")
            .and_then(|l| l.trim().parse::<u64>().ok())
            .filter(|&l| l > self.sh.observer.options().limits.max_body_bytes)
    }

    pub(super) fn feed(&mut self, chunk: &Bytes) {
        self.bytes += chunk.len() as u64;
        if let Some(c) = self.ex.as_mut().and_then(|ex| ex.capture.as_mut()) {
            c.chunk(chunk);
        }
        if let Stage::Waiting { .. } = self.stage {
            self.try_activate();
        }
        // Nothing of a body declared over the limit is kept while the request is still read.
        let too_big =
            matches!(self.stage, Stage::Waiting { .. }) && self.declared_over_limit().is_some();
        match &mut self.stage {
            Stage::Waiting {
                pending,
                pending_bytes,
                overflow,
            } => {
                if *overflow {
                    return;
                }
                if too_big
                    || *pending_bytes + chunk.len() as u64
                        > self.sh.observer.options().limits.max_body_bytes
                {
                    *overflow = true;
                    pending.clear();
                } else {
                    *pending_bytes += chunk.len() as u64;
                    pending.push(chunk.clone());
                }
            }
            Stage::Active(plan) => {
                if let Some(ex) = self.ex.as_ref() {
                    plan.feed(
                        &self.sh,
                        &ex.origin,
                        chunk,
                        self.sh.observer.options().limits.max_body_bytes,
                    )
                }
            }
        }
    }

    fn try_activate(&mut self) {
        let Some(ex) = self.ex.as_mut() else { return };
        if let Some(copy) = ex.request.try_take() {
            self.activate(copy);
        }
    }

    fn activate(&mut self, copy: RequestCopy) {
        let Some(ex) = self.ex.as_ref() else { return };
        let mut plan = Box::new(Plan::new(&self.sh, &self.head, ex, &copy));
        if let Some(c) = self.ex.as_mut().and_then(|ex| ex.capture.as_mut()) {
            c.request_body(&copy.bytes, copy.overflow);
            c.protocol_version(
                plan.calls
                    .first()
                    .and_then(|call| call.record.protocol_version.clone()),
            );
        }
        if let Stage::Waiting {
            pending, overflow, ..
        } = std::mem::replace(
            &mut self.stage,
            Stage::Waiting {
                pending: Vec::new(),
                pending_bytes: 0,
                overflow: false,
            },
        ) {
            let max = self.sh.observer.options().limits.max_body_bytes;
            if let Some(declared) = self.declared_over_limit() {
                plan.unclassifiable(format!(
                    "the response declares Content-Length {declared}, more than maxBodyBytes = {max}; it was forwarded whole but not classified (and not copied)"
                ));
            } else if overflow {
                plan.unclassifiable(
                    "the response started before the request was read and outgrew the wait buffer; it was forwarded but not classified".to_string(),
                );
            }
            if let Some(ex) = self.ex.as_ref() {
                for c in &pending {
                    plan.feed(&self.sh, &ex.origin, c, max);
                }
            }
        }
        self.stage = Stage::Active(plan);
    }

    /// The body ended, broke off, or the client went away.
    pub(super) fn end(mut self, end: End) {
        if let Stage::Waiting { .. } = self.stage {
            self.try_activate();
        }
        if let Stage::Waiting { .. } = self.stage {
            // The request body is still being read (the server answered early): finish once it
            // has been, off the forwarding path.
            let Some(ex) = self.ex.as_mut() else { return };
            let pending = std::mem::replace(&mut ex.request, PendingCopy::Taken);
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    let copy = pending.take_within(REQUEST_DRAIN).await;
                    self.activate(copy);
                    self.close(end);
                });
            }
            return;
        }
        self.close(end);
    }

    fn close(self, end: End) {
        let Stage::Active(plan) = self.stage else {
            return;
        };
        let Some(mut ex) = self.ex else { return };
        let capture = ex.capture.take();
        let ended = match &end {
            End::Finished => BodyEnd::Complete,
            End::Broken(_) => BodyEnd::UpstreamClosed,
            End::Cancelled => BodyEnd::ClientCancelled,
        };
        let seen = Observed {
            head: &self.head,
            end,
            bytes: self.bytes,
            session: self.session_assigned.as_deref(),
            response_headers: self.response_headers,
        };
        let verdict = plan.finish(&self.sh, &ex, seen);
        if let (Some(c), Some(to)) = (capture, self.sh.capture.as_ref()) {
            c.finish(to, ended, self.head.status, verdict.as_str());
        }
    }
}
