//! The upstream connection's socket ([`UpstreamIo`]): plain TCP or TLS, under both the
//! [`EarlyAnswerIo`] wrapper that keeps an early answer readable.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::read_into::poll_read_into;

/// The socket of one upstream connection.
pub(super) enum UpstreamIo {
    Plain(EarlyAnswerIo<TcpStream>),
    Tls(Box<TlsStream<EarlyAnswerIo<TcpStream>>>),
}

impl UpstreamIo {
    fn pinned_read(&mut self) -> Pin<&mut (dyn AsyncRead + Send + Unpin)> {
        match self {
            UpstreamIo::Plain(s) => Pin::new(s),
            UpstreamIo::Tls(s) => Pin::new(s.as_mut()),
        }
    }

    fn pinned_write(&mut self) -> Pin<&mut (dyn AsyncWrite + Send + Unpin)> {
        match self {
            UpstreamIo::Plain(s) => Pin::new(s),
            UpstreamIo::Tls(s) => Pin::new(s.as_mut()),
        }
    }

    pub(super) fn poll_write(
        &mut self,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.pinned_write().poll_write(cx, data)
    }

    pub(super) fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.pinned_write().poll_flush(cx)
    }

    /// Reads what the socket has into `buf` (see [`poll_read_into`]).
    pub(super) fn poll_fill(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        poll_read_into(self.pinned_read(), cx, buf)
    }
}

/// The upstream socket, keeping an early answer readable after the upstream stopped reading.
///
/// Why: an upstream that refuses a request body (a `413` for a 100 MB upload, a `401` before
/// the body) answers after reading the head and closes; the proxy, still sending the body,
/// then gets `EPIPE`/`ECONNRESET` on a write. a client that fails the whole exchange on that write error,
/// often before it has read the answer already in the socket's receive buffer (as hyper's did),
/// shows the client a dropped connection instead of the upstream's `413`. Here a
/// write that fails because the peer is gone does not fail: the write side is marked closed
/// and every later write waits (so no more body is sent, and no byte is discarded as if it had
/// been sent). The exchange goes on reading: an answer that came is forwarded; an upstream that closed
/// without one ends the read side, and then the saved write error is returned, which fails the
/// exchange as before.
pub(super) struct EarlyAnswerIo<T> {
    io: T,
    /// The write error that closed the write side, returned once the read side ended too.
    write_failed: Option<io::Error>,
    /// The read side ended (EOF or an error).
    read_ended: bool,
}

impl<T> EarlyAnswerIo<T> {
    pub(super) fn new(io: T) -> EarlyAnswerIo<T> {
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
