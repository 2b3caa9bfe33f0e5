//! The upstream side of a client connection ([`Upstream`]): connecting (plain or TLS), sending a
//! request and reusing the connection, and the socket wrapper that keeps an early answer
//! readable ([`EarlyAnswerIo`]). [`super::forward::handle`] sends through it; the connections it
//! opens are driven by the client connection's [`super::paired::Paired`] task.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::client::conn::http1 as client_http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::deferred::Deferred;
use super::errors::error_chain;
use super::request_body::RequestTap;
use super::shared::Shared;

pub(super) type UpstreamConn = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The upstream side of one client connection: at most one HTTP/1.1 connection to the upstream,
/// opened on the first request and again whenever the upstream closed it.
///
/// Why not a pool: a pooled client runs each upstream connection in a task of its own, so every
/// exchange crossed tasks (and, on a multi-threaded runtime, usually threads) four times — request
/// out, response head back, each body chunk, the end. Those wakeups were most of the proxy's added
/// latency. HTTP/1.1 carries one exchange at a time, so a client connection never needs more than
/// one upstream connection, and [`Paired`](super::paired::Paired) drives both in the same task.
#[derive(Clone)]
pub(super) struct Upstream {
    sender: Arc<Mutex<Option<client_http1::SendRequest<RequestTap>>>>,
    /// New upstream connections for [`Paired`](super::paired::Paired) to drive.
    conns: mpsc::UnboundedSender<UpstreamConn>,
    /// Observer work of this connection's responses, run after their bytes were written.
    pub(super) deferred: Arc<Deferred>,
}

/// The upstream could not be reached (connect or handshake failed).
pub(super) struct ConnectFailed(String);

/// What sending a request upstream came to.
pub(super) enum Sent {
    Response(Response<Incoming>),
    ConnectFailed(String),
    /// The upstream took the request and failed before a response head.
    Failed(hyper::Error),
    /// No response head within the response timeout (its value).
    TimedOut(Duration),
}

impl Upstream {
    pub(super) fn new() -> (Upstream, mpsc::UnboundedReceiver<UpstreamConn>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Upstream {
                sender: Arc::new(Mutex::new(None)),
                conns: tx,
                deferred: Arc::new(Deferred::default()),
            },
            rx,
        )
    }

    pub(super) fn take(&self) -> Option<client_http1::SendRequest<RequestTap>> {
        self.sender.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn put(&self, s: client_http1::SendRequest<RequestTap>) {
        *self.sender.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
    }

    async fn connect(
        &self,
        sh: &Shared,
    ) -> Result<client_http1::SendRequest<RequestTap>, ConnectFailed> {
        let limit = sh.connect_timeout;
        tokio::time::timeout(limit, self.connect_unbounded(sh))
            .await
            .unwrap_or_else(|_| {
                Err(ConnectFailed(format!(
                    "no connection within {} ms (connect timeout)",
                    limit.as_millis()
                )))
            })
    }

    async fn connect_unbounded(
        &self,
        sh: &Shared,
    ) -> Result<client_http1::SendRequest<RequestTap>, ConnectFailed> {
        let stream = TcpStream::connect(sh.connect_to.as_str())
            .await
            .map_err(|e| ConnectFailed(e.to_string()))?;
        let _ = stream.set_nodelay(true);
        let stream = EarlyAnswerIo::new(stream);
        let handshake_failed = |e: hyper::Error| ConnectFailed(error_chain(&e));
        let (sender, conn): (_, UpstreamConn) = match &sh.tls {
            None => {
                let (sender, conn) = client_http1::handshake(TokioIo::new(stream))
                    .await
                    .map_err(handshake_failed)?;
                (sender, Box::pin(async move { drop(conn.await) }))
            }
            Some((connector, name)) => {
                let tls = connector
                    .connect(name.clone(), stream)
                    .await
                    .map_err(|e| ConnectFailed(format!("TLS handshake: {}", error_chain(&e))))?;
                let (sender, conn) = client_http1::handshake(TokioIo::new(tls))
                    .await
                    .map_err(handshake_failed)?;
                (sender, Box::pin(async move { drop(conn.await) }))
            }
        };
        // The client connection's task drives it; if that task is gone, so is the exchange.
        let _ = self.conns.send(conn);
        Ok(sender)
    }

    /// Sends `req` on the open connection if it is still usable, else on a new one. A request
    /// that a reused connection refused unsent (the upstream closed it while idle) is sent once
    /// more on a new connection, as a pooled client would.
    pub(super) async fn send(&self, sh: &Shared, mut req: Request<RequestTap>) -> Sent {
        let mut reused = self.take();
        loop {
            let mut open = reused.take();
            if let Some(s) = open.as_mut() {
                if s.ready().await.is_err() {
                    open = None;
                }
            }
            let fresh = open.is_none();
            let mut sender = match open {
                Some(s) => s,
                None => match self.connect(sh).await {
                    Ok(mut s) => {
                        if let Err(e) = s.ready().await {
                            return Sent::ConnectFailed(error_chain(&e));
                        }
                        s
                    }
                    Err(ConnectFailed(why)) => return Sent::ConnectFailed(why),
                },
            };
            let result = sender.try_send_request(req).await;
            match result {
                Ok(resp) => {
                    self.put(sender);
                    return Sent::Response(resp);
                }
                Err(mut e) => match e.take_message() {
                    Some(unsent) if !fresh => req = unsent,
                    _ => return Sent::Failed(e.into_error()),
                },
            }
        }
    }
}

/// The upstream socket, keeping an early answer readable after the upstream stopped reading.
///
/// Why: an upstream that refuses a request body (a `413` for a 100 MB upload, a `401` before
/// the body) answers after reading the head and closes; the proxy, still sending the body,
/// then gets `EPIPE`/`ECONNRESET` on a write. hyper's client fails the whole exchange on that
/// write error, often before it has read the answer that is already in the socket's receive
/// buffer, and the client saw a dropped connection instead of the upstream's `413`. Here a
/// write that fails because the peer is gone does not fail: the write side is marked closed
/// and every later write waits (so no more body is sent, and no byte is discarded as if it had
/// been sent). hyper goes on reading: an answer that came is forwarded; an upstream that closed
/// without one ends the read side, and then the saved write error is returned, which fails the
/// exchange as before.
struct EarlyAnswerIo<T> {
    io: T,
    /// The write error that closed the write side, returned once the read side ended too.
    write_failed: Option<io::Error>,
    /// The read side ended (EOF or an error).
    read_ended: bool,
}

impl<T> EarlyAnswerIo<T> {
    fn new(io: T) -> EarlyAnswerIo<T> {
        EarlyAnswerIo {
            io,
            write_failed: None,
            read_ended: false,
        }
    }

    /// After a failed write: Pending while the read side may still bring an answer, the saved
    /// error once it ended.
    fn write_closed<R>(&mut self) -> Poll<io::Result<R>> {
        match (&self.write_failed, self.read_ended) {
            (Some(e), true) => Poll::Ready(Err(io::Error::new(e.kind(), e.to_string()))),
            // The reader's waker is registered: its end wakes this task.
            _ => Poll::Pending,
        }
    }

    /// A write's result: an error saying the peer stopped reading (perhaps after answering)
    /// closes the write side instead of failing.
    fn after_write<R>(&mut self, r: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        match r {
            Poll::Ready(Err(e))
                if matches!(
                    e.kind(),
                    io::ErrorKind::BrokenPipe
                        | io::ErrorKind::ConnectionReset
                        | io::ErrorKind::ConnectionAborted
                ) =>
            {
                self.write_failed = Some(e);
                self.write_closed()
            }
            r => r,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for EarlyAnswerIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.io).poll_read(cx, buf);
        match &r {
            Poll::Ready(Ok(())) if buf.filled().len() == before => this.read_ended = true,
            Poll::Ready(Err(_)) => this.read_ended = true,
            _ => {}
        }
        if this.read_ended && this.write_failed.is_some() {
            // A write is waiting for this: let it return its error.
            cx.waker().wake_by_ref();
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for EarlyAnswerIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.write_failed.is_some() {
            return this.write_closed();
        }
        let r = Pin::new(&mut this.io).poll_write(cx, data);
        this.after_write(r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        parts: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.write_failed.is_some() {
            return this.write_closed();
        }
        let r = Pin::new(&mut this.io).poll_write_vectored(cx, parts);
        this.after_write(r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.write_failed.is_some() {
            return this.write_closed();
        }
        let r = Pin::new(&mut this.io).poll_flush(cx);
        this.after_write(r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.write_failed.is_some() {
            // Nothing more can be sent; the connection is being closed anyway.
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}
