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
    idle: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The whole-body deadline
    /// ([`ProxyOptions::body_deadline`](super::options::ProxyOptions::body_deadline)), armed at the
    /// request head.
    deadline: Option<(Duration, Pin<Box<tokio::time::Sleep>>)>,
    /// Set when a timeout ended the body, with which.
    pub(super) timed_out: Arc<std::sync::OnceLock<BodyStalled>>,
    /// Set when the client's body could not be read (a broken chunked encoding), with why.
    pub(super) malformed: Arc<std::sync::OnceLock<String>>,
}

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
    ) -> (RequestTap, oneshot::Receiver<RequestCopy>) {
        let (tx, rx) = oneshot::channel();
        let mut tap = RequestTap {
            inner: Some(body),
            copy: RequestCopy::default(),
            max,
            done: Some(tx),
            idle_limit,
            idle: None,
            deadline: (!deadline.is_zero())
                .then(|| (deadline, Box::pin(tokio::time::sleep(deadline)))),
            timed_out: Arc::new(std::sync::OnceLock::new()),
            malformed: Arc::new(std::sync::OnceLock::new()),
        };
        if tap.inner.as_ref().is_some_and(Body::is_end_stream) {
            tap.complete();
        }
        (tap, rx)
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
        if let Some((limit, sleep)) = this.deadline.as_mut() {
            if !ended && sleep.as_mut().poll(cx).is_ready() {
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
