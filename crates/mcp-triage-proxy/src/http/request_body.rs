//! The client's request body on its way upstream ([`RequestTap`]): forwarded frame by frame,
//! copied (bounded) for the record, and ended with an error when the client stalls. The copy
//! reaches the response side ([`super::response_observer`]) through a oneshot once the body ended.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};

use super::client_body::ClientBody;
use super::errors::error_chain;

/// How long a request body that the upstream never read is still read for its record.
pub(super) const REQUEST_DRAIN: Duration = Duration::from_secs(5);

/// The request body as far as it was read, for the record.
#[derive(Debug, Default)]
pub(super) struct RequestCopy {
    pub(super) bytes: Vec<u8>,
    pub(super) total: u64,
    /// More bytes than `max_request_bytes` were sent; `bytes` is a prefix.
    pub(super) overflow: bool,
}

/// The request body's copy as the response side waits for it: still coming through the tap's
/// oneshot, or arrived. Why not the receiver alone: the response timeout starts once the copy
/// arrived, and a receiver cannot be looked at without taking its value (putting it back took
/// a new channel per exchange).
pub(super) enum PendingCopy {
    Coming(oneshot::Receiver<RequestCopy>),
    Arrived(RequestCopy),
    /// Given out by [`PendingCopy::try_take`].
    Taken,
}

impl PendingCopy {
    /// The copy, if it arrived (taken: later calls give `None`).
    pub(super) fn try_take(&mut self) -> Option<RequestCopy> {
        let copy = match self {
            PendingCopy::Coming(rx) => rx.try_recv().ok()?,
            PendingCopy::Arrived(copy) => std::mem::take(copy),
            PendingCopy::Taken => return None,
        };
        *self = PendingCopy::Taken;
        Some(copy)
    }

    /// Completes once the copy arrived (kept for [`PendingCopy::try_take`]), or the tap was
    /// dropped without one (then there is none to take), as awaiting the receiver did.
    pub(super) async fn arrived(&mut self) {
        if let PendingCopy::Coming(rx) = self {
            *self = match rx.await {
                Ok(copy) => PendingCopy::Arrived(copy),
                Err(_) => PendingCopy::Taken,
            };
        }
    }

    /// The copy, waiting at most `limit` for it (empty when it did not come).
    pub(super) async fn take_within(mut self, limit: Duration) -> RequestCopy {
        let _ = tokio::time::timeout(limit, self.arrived()).await;
        self.try_take().unwrap_or_default()
    }
}

/// The client's request body on its way upstream, copied (bounded) as it passes, and ended
/// with an error when the client stalls longer than the body read timeout.
pub struct RequestTap {
    pub(super) inner: Option<ClientBody>,
    copy: RequestCopy,
    pub(super) max: u64,
    done: Option<oneshot::Sender<RequestCopy>>,
    /// See [`ProxyOptions::body_read_timeout`](super::options::ProxyOptions::body_read_timeout).
    idle_limit: Duration,
    /// Armed at the first wait for the client after a frame (not while the upstream is the one
    /// holding the body back: then the tap is not polled).
    idle: Option<Pin<Box<Sleep>>>,
    /// The whole-body deadline
    /// ([`ProxyOptions::body_deadline`](super::options::ProxyOptions::body_deadline)), counted
    /// from the request head: its length, when it passes, and its timer, made at the first poll
    /// that finds the body unfinished (most bodies come whole with their head and need none).
    deadline: Option<BodyDeadline>,
    /// Set when a timeout ended the body, with which.
    pub(super) timed_out: Arc<std::sync::OnceLock<BodyStalled>>,
    /// Set when the client's body could not be read (a broken chunked encoding), with why.
    pub(super) malformed: Arc<std::sync::OnceLock<String>>,
}

/// The whole-body deadline's length, when it passes, and its timer once made.
type BodyDeadline = (Duration, Instant, Option<Pin<Box<Sleep>>>);

/// Why the proxy ended a request body the client was still sending.
#[derive(Debug, Clone, Copy)]
pub(super) enum BodyStalled {
    /// No bytes for
    /// [`ProxyOptions::body_read_timeout`](super::options::ProxyOptions::body_read_timeout).
    Gap(Duration),
    /// The whole body took longer than
    /// [`ProxyOptions::body_deadline`](super::options::ProxyOptions::body_deadline).
    Deadline(Duration),
}

impl BodyStalled {
    /// The limit, as the record names it.
    pub(super) fn limit(self) -> mcp_triage_core::LimitHit {
        let (name, d) = match self {
            BodyStalled::Gap(d) => ("bodyReadTimeoutMs", d),
            BodyStalled::Deadline(d) => ("bodyDeadlineMs", d),
        };
        mcp_triage_core::LimitHit {
            name: name.into(),
            max: d.as_millis() as u64,
        }
    }
}

impl std::fmt::Display for BodyStalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyStalled::Gap(d) => write!(
                f,
                "the client sent no request body bytes for {} ms (body read timeout)",
                d.as_millis()
            ),
            BodyStalled::Deadline(d) => write!(
                f,
                "the client's request body was not complete {} ms after its head (body deadline)",
                d.as_millis()
            ),
        }
    }
}

impl std::error::Error for BodyStalled {}

impl RequestTap {
    pub(super) fn new(
        body: ClientBody,
        max: u64,
        idle_limit: Duration,
        deadline: Duration,
    ) -> (RequestTap, PendingCopy) {
        let (tx, rx) = oneshot::channel();
        let mut tap = RequestTap {
            inner: Some(body),
            copy: RequestCopy::default(),
            max,
            done: Some(tx),
            idle_limit,
            idle: None,
            deadline: (!deadline.is_zero()).then(|| (deadline, Instant::now() + deadline, None)),
            timed_out: Arc::new(std::sync::OnceLock::new()),
            malformed: Arc::new(std::sync::OnceLock::new()),
        };
        if tap.inner.as_ref().is_some_and(Body::is_end_stream) {
            tap.complete();
        }
        (tap, PendingCopy::Coming(rx))
    }

    fn keep(copy: &mut RequestCopy, max: u64, data: &[u8]) {
        copy.total += data.len() as u64;
        if copy.overflow {
            return;
        }
        if copy.bytes.len() as u64 + data.len() as u64 > max {
            copy.overflow = true;
            copy.bytes = Vec::new();
        } else {
            copy.bytes.extend_from_slice(data);
        }
    }

    fn complete(&mut self) {
        if let Some(tx) = self.done.take() {
            let _ = tx.send(std::mem::take(&mut self.copy));
        }
    }

    /// Ends the body for `why`: the error the upstream request fails with.
    fn stall(&mut self, why: BodyStalled) -> Box<dyn std::error::Error + Send + Sync> {
        let _ = self.timed_out.set(why);
        self.complete();
        // The rest of the body is not wanted any more (not even for the record).
        self.inner = None;
        Box::new(why)
    }
}

impl Body for RequestTap {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let ended = Body::is_end_stream(inner);
        let mut expired = None;
        if let (false, Some((limit, at, sleep))) = (ended, this.deadline.as_mut()) {
            let sleep = sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(*at)));
            if sleep.as_mut().poll(cx).is_ready() {
                expired = Some(*limit);
            }
        }
        if let Some(limit) = expired {
            return Poll::Ready(Some(Err(this.stall(BodyStalled::Deadline(limit)))));
        }
        let inner = this.inner.as_mut().expect("checked above");
        let r = Pin::new(inner).poll_frame(cx);
        match &r {
            Poll::Ready(Some(Ok(frame))) => {
                this.idle = None;
                if let Some(d) = frame.data_ref() {
                    Self::keep(&mut this.copy, this.max, d);
                }
                if this.inner.as_ref().is_some_and(Body::is_end_stream) {
                    this.complete();
                }
            }
            Poll::Ready(Some(Err(e))) => {
                let _ = this.malformed.set(error_chain(e));
                this.complete();
            }
            Poll::Ready(None) => this.complete(),
            Poll::Pending => {
                let limit = this.idle_limit;
                let idle = this
                    .idle
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                if idle.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(this.stall(BodyStalled::Gap(limit)))));
                }
            }
        }
        r.map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map(Body::size_hint)
            .unwrap_or_else(|| SizeHint::with_exact(0))
    }
}

impl Drop for RequestTap {
    fn drop(&mut self) {
        let Some(tx) = self.done.take() else { return };
        let mut copy = std::mem::take(&mut self.copy);
        let max = self.max;
        match (self.inner.take(), tokio::runtime::Handle::try_current()) {
            // The upstream stopped reading (refused, closed): read the rest for the record.
            (Some(mut body), Ok(rt)) => {
                rt.spawn(async move {
                    let _ = tokio::time::timeout(REQUEST_DRAIN, async {
                        while let Some(Ok(frame)) = body.frame().await {
                            if let Some(d) = frame.data_ref() {
                                RequestTap::keep(&mut copy, max, d);
                            }
                        }
                    })
                    .await;
                    let _ = tx.send(copy);
                });
            }
            _ => {
                let _ = tx.send(copy);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(bytes: &[u8]) -> RequestCopy {
        RequestCopy {
            bytes: bytes.to_vec(),
            total: bytes.len() as u64,
            overflow: false,
        }
    }

    #[test]
    fn a_copy_is_taken_once_it_came_and_only_once() {
        let (tx, rx) = oneshot::channel();
        let mut pending = PendingCopy::Coming(rx);
        assert!(pending.try_take().is_none(), "not come yet");
        tx.send(copy(b"{}")).unwrap();
        assert_eq!(pending.try_take().unwrap().bytes, b"{}");
        assert!(pending.try_take().is_none(), "taken already");
    }

    #[tokio::test]
    async fn waiting_for_the_copy_keeps_it_for_the_record() {
        let (tx, rx) = oneshot::channel();
        let mut pending = PendingCopy::Coming(rx);
        tx.send(copy(b"abc")).unwrap();
        pending.arrived().await;
        pending.arrived().await;
        assert_eq!(pending.try_take().unwrap().total, 3);
        let (tx, rx) = oneshot::channel::<RequestCopy>();
        drop(tx);
        let mut gone = PendingCopy::Coming(rx);
        gone.arrived().await;
        assert!(gone.try_take().is_none(), "a tap gone without a copy");
        let (_tx, rx) = oneshot::channel::<RequestCopy>();
        let empty = PendingCopy::Coming(rx)
            .take_within(Duration::from_millis(20))
            .await;
        assert_eq!(
            (empty.total, empty.bytes.len()),
            (0, 0),
            "none within the limit"
        );
    }
}
