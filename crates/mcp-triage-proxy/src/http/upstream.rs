//! The upstream side of a client connection ([`Upstream`]): connecting (plain or TLS), sending
//! a request on the open connection or a new one, and what that came to ([`Sent`]).
//! [`super::forward::handle`] sends through it; the response body it hands back
//! ([`UpstreamBody`]) reads the rest of the exchange from the same connection.
//!
//! HTTP/1.1 is spoken here by the proxy's own code (heads in [`super::h1`]), not by hyper's
//! client: hyper's client and its connection task cost about a fifth of the proxy's
//! instructions per exchange (a dispatch channel, a `HeaderMap` parse and a body channel each
//! way), where the proxy needs one socket read by whichever side of the exchange is being
//! polled. The client side ([`super::client_conn`]) polls both: [`send`](Upstream::send) until
//! the response head, [`UpstreamBody`] until the body's end, both on the client connection's
//! task.

use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use bytes::BytesMut;
use http::Method;
use http_body::Body;
use tokio::net::TcpStream;

use super::deferred::Deferred;
use super::errors::error_chain;
use super::h1::chunked::ChunkedError;
use super::h1::parts::{RequestParts, ResponseParts};
use super::h1::request_head::encode_request_head;
use super::h1::response_head::HeadError;
use super::read_into::READ_ROOM;
use super::request_body::RequestTap;
use super::shared::Shared;
use super::upstream_body::{RequestWriter, UpstreamBody};
use super::upstream_io::{EarlyAnswerIo, UpstreamIo};

/// The upstream side of one client connection: at most one HTTP/1.1 connection to the upstream,
/// opened on the first request and again whenever the upstream closed it.
///
/// Why not a pool: a pooled client runs each upstream connection in a task of its own, so every
/// exchange crossed tasks (and, on a multi-threaded runtime, usually threads) four times — request
/// out, response head back, each body chunk, the end. Those wakeups were most of the proxy's added
/// latency. HTTP/1.1 carries one exchange at a time, so a client connection never needs more than
/// one upstream connection, read and written on the client connection's own task.
#[derive(Clone)]
pub(super) struct Upstream {
    /// The connection between exchanges (put back by [`UpstreamBody`] at a reusable end).
    idle: Arc<Mutex<Option<Conn>>>,
    /// Observer work of this connection's responses, run after their bytes were written.
    pub(super) deferred: Arc<Deferred>,
}

/// One HTTP/1.1 connection to the upstream and the bytes read from it but not yet used.
pub(super) struct Conn {
    pub(super) io: UpstreamIo,
    pub(super) read_buf: BytesMut,
}

/// The upstream could not be reached (connect or handshake failed).
pub(super) struct ConnectFailed(String);

/// What sending a request upstream came to.
pub(super) enum Sent {
    /// The response head and its body, still to be read.
    Response(ResponseParts, Box<UpstreamBody>),
    ConnectFailed(String),
    /// The upstream took the request and failed before a response head, or the request body
    /// failed (the client's body stalled or broke).
    Failed(UpstreamError),
    /// No response head within the response timeout (its value).
    TimedOut(Duration),
}

/// Why an exchange with the upstream failed after the connection was made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum UpstreamError {
    #[error("end of stream before any byte of a response")]
    ClosedBeforeResponse,
    #[error("end of stream inside the response head")]
    ClosedInsideHead,
    #[error("end of stream before the response body's end")]
    ClosedMidBody,
    #[error(transparent)]
    Head(#[from] HeadError),
    #[error("the chunked response body is malformed: {0}")]
    Chunked(#[from] ChunkedError),
    #[error("reading from the upstream")]
    Read(#[source] std::io::Error),
    #[error("writing to the upstream")]
    Write(#[source] std::io::Error),
    #[error("the request body failed")]
    RequestBody(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl Upstream {
    pub(super) fn new() -> Upstream {
        Upstream {
            idle: Arc::new(Mutex::new(None)),
            deferred: Arc::new(Deferred::default()),
        }
    }

    /// Puts a connection back for the next exchange.
    pub(super) fn put(&self, c: Conn) {
        *self.idle.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
    }

    /// The idle connection, if the upstream has not closed it meanwhile (or sent bytes nobody
    /// asked for): a request is only ever written to a connection that was open a moment ago,
    /// as a pooled client checks before it reuses one.
    async fn take_usable(&self) -> Option<Conn> {
        let mut c = self.idle.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        let usable = std::future::poll_fn(|cx| {
            Poll::Ready(match c.io.poll_fill(cx, &mut c.read_buf) {
                Poll::Pending => c.read_buf.is_empty(),
                Poll::Ready(_) => false,
            })
        })
        .await;
        usable.then_some(c)
    }

    async fn connect(&self, sh: &Shared) -> Result<Conn, ConnectFailed> {
        let limit = sh.connect_timeout;
        tokio::time::timeout(limit, connect_unbounded(sh))
            .await
            .unwrap_or_else(|_| {
                Err(ConnectFailed(format!(
                    "no connection within {} ms (connect timeout)",
                    limit.as_millis()
                )))
            })
    }

    /// Sends the request (`parts`, `body`) on the open connection if it is still usable, else
    /// on a new one, and waits for the response head; the body goes on being sent while the
    /// response is read (an upstream may answer before the request body ended).
    pub(super) async fn send(
        &self,
        sh: &Shared,
        mut parts: RequestParts,
        body: RequestTap,
    ) -> Sent {
        let mut head = BytesMut::new();
        let framing = encode_request_head(
            &mut parts,
            body.is_end_stream(),
            body.size_hint().exact(),
            &mut head,
        );
        let head_only = parts.method == Method::HEAD;
        let mut writer = RequestWriter::new(head, body, framing);
        let mut conn = match self.take_usable().await {
            Some(c) => c,
            None => match self.connect(sh).await {
                Ok(c) => c,
                Err(ConnectFailed(why)) => return Sent::ConnectFailed(why),
            },
        };
        let head =
            std::future::poll_fn(|cx| writer.poll_until_head(&mut conn, head_only, cx)).await;
        match head {
            Ok(head) => {
                let (head, body) = UpstreamBody::response(head, conn, writer, self.clone());
                Sent::Response(head, body)
            }
            Err(e) => Sent::Failed(e),
        }
    }
}

async fn connect_unbounded(sh: &Shared) -> Result<Conn, ConnectFailed> {
    let stream = TcpStream::connect(sh.connect_to.as_str())
        .await
        .map_err(|e| ConnectFailed(e.to_string()))?;
    let _ = stream.set_nodelay(true);
    let stream = EarlyAnswerIo::new(stream);
    let io = match &sh.tls {
        None => UpstreamIo::Plain(stream),
        Some((connector, name)) => {
            let tls = connector
                .connect(name.clone(), stream)
                .await
                .map_err(|e| ConnectFailed(format!("TLS handshake: {}", error_chain(&e))))?;
            UpstreamIo::Tls(Box::new(tls))
        }
    };
    Ok(Conn {
        io,
        read_buf: BytesMut::with_capacity(READ_ROOM),
    })
}
