//! The client side of a connection ([`CorkedStream`]): reads go
//! straight to the socket, writes wait in a bounded [`Cork`] that [`super::paired::Paired`]
//! drains at the end of each poll.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// Bytes for the client held until the end of the connection task's poll (see
/// [`Paired`](super::paired::Paired)): the connection writes after each step, the cork turns the steps of
/// one poll into one write. At most [`CORK_LIMIT`] bytes wait; past that a write waits for the
/// socket, as it would without the cork, so a stream the client reads slowly still holds the proxy
/// back (no unbounded buffer).
pub(super) struct Cork {
    half: OwnedWriteHalf,
    pub(super) buf: Vec<u8>,
    /// A write to the client failed: every later read and write fails the same way.
    failed: Option<(io::ErrorKind, String)>,
}

/// How many bytes the [`Cork`] holds before a write waits for the socket.
pub(super) const CORK_LIMIT: usize = 64 << 10;

impl Cork {
    pub(super) fn new(half: OwnedWriteHalf) -> Cork {
        Cork {
            half,
            buf: Vec::new(),
            failed: None,
        }
    }

    pub(super) fn check(&self) -> io::Result<()> {
        match &self.failed {
            Some((kind, why)) => Err(io::Error::new(*kind, why.clone())),
            None => Ok(()),
        }
    }

    /// Writes what is held; Pending (the waker registered) when the socket is full.
    /// Writes everything held, then shuts the write side down: the connection's end.
    pub(super) fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.drain(cx))?;
        Pin::new(&mut self.half).poll_shutdown(cx)
    }

    pub(super) fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check()?;
        let mut at = 0;
        let result = loop {
            if at == self.buf.len() {
                break Poll::Ready(Ok(()));
            }
            match Pin::new(&mut self.half).poll_write(cx, &self.buf[at..]) {
                Poll::Ready(Ok(0)) => {
                    break Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "the client connection took no bytes",
                    )))
                }
                Poll::Ready(Ok(n)) => at += n,
                Poll::Ready(Err(e)) => break Poll::Ready(Err(e)),
                Poll::Pending => break Poll::Pending,
            }
        };
        self.buf.drain(..at);
        if let Poll::Ready(Err(e)) = &result {
            self.failed = Some((e.kind(), e.to_string()));
            self.buf = Vec::new();
        }
        result
    }

    /// Takes what fits of `parts` (all of it while the cork is below [`CORK_LIMIT`]);
    /// `Pending` while it is full and the socket takes nothing.
    pub(super) fn hold(
        &mut self,
        cx: &mut Context<'_>,
        parts: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.check()?;
        if self.buf.len() >= CORK_LIMIT {
            // Full: try the socket; still full, wait for it (the waker is registered).
            if let Poll::Ready(Err(e)) = self.drain(cx) {
                return Poll::Ready(Err(e));
            }
            if self.buf.len() >= CORK_LIMIT {
                return Poll::Pending;
            }
        }
        // Take what fits (a partial write, which the writer continues), so the cork never holds more
        // than its limit.
        let mut room = CORK_LIMIT - self.buf.len();
        let mut n = 0;
        for p in parts {
            let take = p.len().min(room);
            self.buf.extend_from_slice(&p[..take]);
            n += take;
            room -= take;
            if room == 0 {
                break;
            }
        }
        Poll::Ready(Ok(n))
    }
}

/// The client connection as [`super::client_conn`] sees it: reads straight from the socket, writes into
/// the connection's [`Cork`].
pub(super) struct CorkedStream {
    pub(super) read: OwnedReadHalf,
    pub(super) cork: Arc<Mutex<Cork>>,
}

impl CorkedStream {
    fn cork(&self) -> std::sync::MutexGuard<'_, Cork> {
        self.cork.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `bytes` to the cork whatever its fill (a few bytes the protocol owes now, such as
    /// `100 Continue`); they go out at the end of the task's poll.
    pub(super) fn hold_bytes(&self, bytes: &[u8]) {
        let mut cork = self.cork();
        if cork.check().is_ok() {
            cork.buf.extend_from_slice(bytes);
        }
    }
}

impl AsyncRead for CorkedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.cork().check()?;
        Pin::new(&mut this.read).poll_read(cx, buf)
    }
}

impl AsyncWrite for CorkedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.cork().hold(cx, &[io::IoSlice::new(data)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        parts: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.cork().hold(cx, parts)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The connection's task writes at the end of its poll (see `Paired`).
        Poll::Ready(self.cork().check())
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut cork = self.cork();
        std::task::ready!(cork.drain(cx))?;
        Pin::new(&mut cork.half).poll_shutdown(cx)
    }
}
