//! The upstream's response body on its way to the client ([`ResponseTap`]): forwarded frame by
//! frame, each chunk and the end noted for the observer and queued in the connection's
//! [`Deferred`] list, never held back.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use super::activity::InFlight;
use super::deferred::{Deferred, TapState};
use super::errors::error_chain;
use super::h1::parts::ResponseParts;
use super::plan::End;
use super::upstream_body::UpstreamBody;

/// The answer to one request: the response head for the client and its body. Made by
/// [`super::forward`] (the upstream's response, or the proxy's refusal) and
/// [`super::no_response`] (the proxy's own answer), written by [`super::client_conn`].
pub(super) struct Answer {
    pub(super) head: ResponseParts,
    pub(super) body: ResponseTap,
}

/// The upstream's response body on its way to the client, fed to the observer as it passes.
pub struct ResponseTap {
    pub(super) inner: TapInner,
    /// What the observer has yet to see and the connection's queue it waits in; `None` for
    /// the proxy's own responses and once the body ended.
    pub(super) observed: Option<(Arc<Mutex<TapState>>, Arc<Deferred>)>,
    /// Marks the connection busy until this response is dropped (see
    /// [`ConnActivity`](super::activity::ConnActivity)).
    pub(super) in_flight: Option<InFlight>,
}

pub(super) enum TapInner {
    /// Boxed: the body carries the upstream connection and the request still being sent.
    Upstream(Box<UpstreamBody>),
    Fixed(Option<Bytes>),
}

impl ResponseTap {
    pub(super) fn fixed(b: Bytes) -> ResponseTap {
        ResponseTap {
            inner: TapInner::Fixed(Some(b)),
            observed: None,
            in_flight: None,
        }
    }

    /// Notes a chunk and/or the end for the observer, and queues the work (see [`Deferred`]).
    fn note(&mut self, chunk: Option<&Bytes>, end: Option<End>) {
        let Some((state, deferred)) = self.observed.as_ref() else {
            return;
        };
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = chunk {
            st.passed.push(c.clone());
        }
        if end.is_some() {
            st.end = end;
        }
        if !st.queued {
            st.queued = true;
            deferred.push(state);
        }
    }

    fn ended(&mut self, end: End) {
        self.note(None, Some(end));
        // Nothing more will pass: later calls (Drop) must not record a second end.
        self.observed = None;
    }
}

impl Body for ResponseTap {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let inner = match &mut this.inner {
            TapInner::Fixed(b) => return Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            TapInner::Upstream(i) => i,
        };
        let r = Pin::new(inner).poll_frame(cx);
        match &r {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(d) = frame.data_ref() {
                    this.note(Some(d), None);
                }
            }
            Poll::Ready(Some(Err(e))) => this.ended(End::Broken(format!(
                "the upstream connection broke: {}",
                error_chain(e)
            ))),
            Poll::Ready(None) => this.ended(End::Finished),
            Poll::Pending => {}
        }
        r.map(|f| f.map(|f| f.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            TapInner::Upstream(i) => i.is_end_stream(),
            TapInner::Fixed(b) => b.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            TapInner::Upstream(i) => i.size_hint(),
            TapInner::Fixed(Some(b)) => SizeHint::with_exact(b.len() as u64),
            TapInner::Fixed(None) => SizeHint::with_exact(0),
        }
    }
}

impl Drop for ResponseTap {
    fn drop(&mut self) {
        if self.observed.is_some() {
            // A body at its end may be dropped without a last poll (its length was reached).
            let done = matches!(&self.inner, TapInner::Upstream(i) if i.is_end_stream());
            self.ended(if done { End::Finished } else { End::Cancelled });
        }
    }
}
