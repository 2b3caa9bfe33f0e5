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
    /// The body bytes the client's head announced and not yet passed (see
    /// [`ResponseTap::announce`]).
    announced: Option<Announced>,
}

/// A length the client was told, and how the body has kept to it.
#[derive(Debug, Clone, Copy)]
struct Announced {
    length: u64,
    left: u64,
    /// The body had more bytes than announced: they were not passed; the next poll fails.
    overrun: bool,
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
            announced: None,
        }
    }

    /// The body as the upstream sent it, for the observer.
    pub(super) fn upstream(
        body: Box<UpstreamBody>,
        observed: (Arc<Mutex<TapState>>, Arc<Deferred>),
    ) -> ResponseTap {
        ResponseTap {
            inner: TapInner::Upstream(body),
            observed: Some(observed),
            in_flight: None,
            announced: None,
        }
    }

    /// The client's head announced `length` body bytes: never more are passed, and a body
    /// that has more or fewer ends with an error (so the connection closes) and a record that
    /// says so. A client that counted bytes the proxy did not send, or got bytes it did not
    /// count, would read the rest of the connection out of step.
    pub(super) fn announce(&mut self, length: u64) {
        self.announced = Some(Announced {
            length,
            left: length,
            overrun: false,
        });
    }

    /// Holds a data frame to the announced length: the bytes within it.
    fn within_announced(&mut self, data: Bytes) -> Bytes {
        let Some(a) = self.announced.as_mut() else {
            return data;
        };
        let n = data.len() as u64;
        if n <= a.left {
            a.left -= n;
            return data;
        }
        let kept = data.slice(..a.left as usize);
        let why = format!(
            "the upstream's body had more than the {} bytes the client was told (Content-Length); the proxy sent those and closed the connection",
            a.length
        );
        a.left = 0;
        a.overrun = true;
        if !kept.is_empty() {
            self.note(Some(&kept), None);
        }
        self.ended(End::Broken(why));
        kept
    }

    /// The body ended: short of the announced length, it is an error.
    fn end_within_announced(&mut self) -> Option<String> {
        let a = self.announced?;
        (a.left > 0).then(|| {
            format!(
                "the upstream's body ended {} bytes short of the {} the client was told (Content-Length); the proxy closed the connection",
                a.left, a.length
            )
        })
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
        if this.announced.is_some_and(|a| a.overrun) {
            return Poll::Ready(Some(Err(FramingBroken.into())));
        }
        let r = std::task::ready!(Pin::new(inner).poll_frame(cx));
        match r {
            Some(Ok(frame)) => {
                let data = match frame.into_data() {
                    Ok(data) => this.within_announced(data),
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                };
                // An overrun noted and ended the body already.
                if !this.announced.is_some_and(|a| a.overrun) {
                    this.note(Some(&data), None);
                }
                Poll::Ready(Some(Ok(Frame::data(data))))
            }
            Some(Err(e)) => {
                this.ended(End::Broken(format!(
                    "the upstream connection broke: {}",
                    error_chain(&e)
                )));
                Poll::Ready(Some(Err(e.into())))
            }
            None => match this.end_within_announced() {
                Some(why) => {
                    this.ended(End::Broken(why));
                    Poll::Ready(Some(Err(FramingBroken.into())))
                }
                None => {
                    this.ended(End::Finished);
                    Poll::Ready(None)
                }
            },
        }
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

/// The body did not keep to the length the client was told (see [`ResponseTap::announce`]).
#[derive(Debug, thiserror::Error)]
#[error("the response body did not keep to the length announced to the client")]
struct FramingBroken;

impl Drop for ResponseTap {
    fn drop(&mut self) {
        if self.observed.is_some() {
            // A body at its end may be dropped without a last poll (its length was reached).
            let done = matches!(&self.inner, TapInner::Upstream(i) if i.is_end_stream());
            self.ended(if done { End::Finished } else { End::Cancelled });
        }
    }
}
