//! The client's side of a connection as the exchange reads it: [`ClientReader`], the socket's
//! read half and the bytes read but not yet used, shared by the connection's loop (request
//! heads, the client's disconnect) and [`ClientBody`] (the request body, read as the upstream
//! takes it).

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};

use super::cork::CorkedStream;
use super::h1::body::{BodyDecoder, Step};
use super::h1::chunked::{ChunkedDecoder, ChunkedError};
use super::h1::incoming_request::BodyFraming;
use super::read_into::{poll_read_into, READ_ROOM};

/// The answer a client that sent `Expect: 100-continue` waits for before it sends the body.
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// Why the client's request body could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ClientBodyError {
    #[error("the chunked request body is malformed: {0}")]
    Chunked(#[from] ChunkedError),
    #[error("the client closed the connection before the body ended")]
    ClosedInsideBody,
    #[error("reading from the client")]
    Read(#[source] std::io::Error),
    #[error("the connection to the client was closed")]
    ConnectionClosed,
}

/// The read side of a client connection.
pub(super) struct ClientReader {
    /// `None` once the connection's loop ended: a body still being read for a record ends.
    io: Option<CorkedStream>,
    /// Bytes read and not used yet: the start of a head, body bytes, a pipelined request.
    pub(super) buf: BytesMut,
    /// The current request's body, until it ended (or broke).
    body: Option<BodyDecoder>,
    /// A `100 Continue` is owed before the body is read.
    continue_owed: bool,
    /// A request body broke (malformed framing, or the client's side failed mid-body): where
    /// the next request would start is unknown, so the connection carries no other.
    broken: bool,
    /// How far the buffer was searched for a head's end (see
    /// [`head_may_be_complete`](super::h1::incoming_request::head_may_be_complete)).
    pub(super) head_scanned: usize,
}

/// A [`ClientReader`] shared by the connection's loop and the request body.
pub(super) type SharedReader = Arc<Mutex<ClientReader>>;

pub(super) fn lock(r: &SharedReader) -> MutexGuard<'_, ClientReader> {
    r.lock().unwrap_or_else(|e| e.into_inner())
}

impl ClientReader {
    pub(super) fn new(io: CorkedStream) -> SharedReader {
        Arc::new(Mutex::new(ClientReader {
            io: Some(io),
            buf: BytesMut::with_capacity(READ_ROOM),
            body: None,
            continue_owed: false,
            broken: false,
            head_scanned: 0,
        }))
    }

    /// Reads more into `buf`: 0 at the end of the stream or once the connection was closed.
    pub(super) fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<usize>> {
        match self.io.as_mut() {
            Some(io) => poll_read_into(Pin::new(io), cx, &mut self.buf),
            None => Poll::Ready(Ok(0)),
        }
    }

    /// The request body that follows the head just read.
    pub(super) fn start_body(&mut self, framing: Option<BodyFraming>, expect_continue: bool) {
        self.body = framing.map(|f| match f {
            BodyFraming::Length(n) => BodyDecoder::Length(n),
            BodyFraming::Chunked => BodyDecoder::Chunked(ChunkedDecoder::default()),
        });
        self.continue_owed = expect_continue && self.body.is_some();
    }

    /// The request body was read to its end, broke, or there was none: no more of it is
    /// read.
    pub(super) fn body_done(&self) -> bool {
        self.body.is_none()
    }

    /// The request body was read to its end (or there was none) and did not break: the next
    /// bytes are the next request's, and the connection may carry it.
    pub(super) fn reusable(&self) -> bool {
        self.body.is_none() && !self.broken
    }

    /// The body ended without its end: see [`ClientReader::broken`].
    fn break_body(&mut self) {
        self.body = None;
        self.broken = true;
    }

    /// The connection's loop ended: a body still being read (for a record) ends now. The
    /// socket is handed back for the lingering close (see `client_conn::linger`).
    pub(super) fn close(&mut self) -> Option<CorkedStream> {
        self.io.take()
    }

    /// Whether the client may still be sending what the proxy will not read: bytes of a body
    /// left unread or broken, or of requests after the last one served. Closing the socket
    /// with such bytes unread makes the kernel reset the connection, and a reset throws away
    /// what the client had not read yet, the last response included (RFC 9112 §9.6).
    pub(super) fn unread_input(&self) -> bool {
        !self.buf.is_empty() || !self.reusable()
    }

    /// The writing side, for the `100 Continue` and the connection's end.
    pub(super) fn stream(&self) -> Option<&CorkedStream> {
        self.io.as_ref()
    }
}

/// The client's request body, read from the connection as the exchange asks for it.
pub(crate) struct ClientBody {
    reader: SharedReader,
    ended: bool,
    /// Bytes still to come, when the length is known.
    left: Option<u64>,
}

impl ClientBody {
    /// The body of the request whose head was just read (`start_body` was called).
    pub(super) fn new(reader: SharedReader) -> ClientBody {
        let (ended, left) = {
            let r = lock(&reader);
            (
                r.body.is_none(),
                r.body.as_ref().and_then(BodyDecoder::remaining),
            )
        };
        ClientBody {
            reader,
            ended,
            left: if ended { Some(0) } else { left },
        }
    }

    fn read(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, ClientBodyError>>> {
        let mut guard = lock(&self.reader);
        let r = &mut *guard;
        loop {
            let Some(decoder) = r.body.as_mut() else {
                return Poll::Ready(None);
            };
            match decoder.step(&mut r.buf) {
                Ok(Step::Data(b)) => {
                    if decoder.at_end() {
                        r.body = None;
                    }
                    return Poll::Ready(Some(Ok(b)));
                }
                Ok(Step::End) => {
                    r.body = None;
                    return Poll::Ready(None);
                }
                Ok(Step::NeedMore) => {}
                Err(e) => {
                    r.break_body();
                    return Poll::Ready(Some(Err(e.into())));
                }
            }
            if r.continue_owed {
                r.continue_owed = false;
                if let Some(io) = r.stream() {
                    io.hold_bytes(CONTINUE);
                }
            }
            let closed = r.io.is_none();
            match r.poll_fill(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(0)) => {
                    r.break_body();
                    return Poll::Ready(Some(Err(if closed {
                        ClientBodyError::ConnectionClosed
                    } else {
                        ClientBodyError::ClosedInsideBody
                    })));
                }
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => {
                    r.break_body();
                    return Poll::Ready(Some(Err(ClientBodyError::Read(e))));
                }
            }
        }
    }
}

impl Body for ClientBody {
    type Data = Bytes;
    type Error = ClientBodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ClientBodyError>>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        let r = std::task::ready!(this.read(cx));
        match &r {
            Some(Ok(b)) => {
                if let Some(left) = this.left.as_mut() {
                    *left = left.saturating_sub(b.len() as u64);
                    this.ended = *left == 0;
                }
            }
            Some(Err(_)) | None => this.ended = true,
        }
        Poll::Ready(r.map(|r| r.map(Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }

    fn size_hint(&self) -> SizeHint {
        match self.left {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}
