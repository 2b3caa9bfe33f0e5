//! One exchange on an upstream connection: [`RequestWriter`] sends the request (head, then the
//! body as the client sends it) and reads until the response head; [`UpstreamBody`], the
//! response body the client side ([`super::client_conn`]) passes on, reads the rest, finishes sending
//! the request body meanwhile, and puts the connection back when both ended cleanly.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};

use super::h1::body::{BodyDecoder, Step};
use super::h1::chunked::{encode_chunk, ChunkedDecoder, LAST_CHUNK};
use super::h1::parts::ResponseParts;
use super::h1::request_head::RequestFraming;
use super::h1::response_head::{take_response_head, Framing, ParsedResponse};
use super::request_body::RequestTap;
use super::upstream::{Conn, Upstream, UpstreamError};

/// How many request bytes wait to be written before the client's body is read no further: the
/// upstream's pace holds the client back, no more than this is held in memory.
const WRITE_HIGH: usize = 64 * 1024;

/// The request on its way to the upstream.
pub(super) struct RequestWriter {
    /// Bytes framed and not yet written (the head first).
    out: BytesMut,
    /// The client's body, until it ended.
    body: Option<RequestTap>,
    framing: RequestFraming,
    /// Everything was written and flushed.
    done: bool,
}

impl RequestWriter {
    /// The writer of a request whose head is `head`. A body that is not sent (see
    /// [`RequestFraming::Empty`]) is dropped now: the tap then reads it for the record alone.
    pub(super) fn new(head: BytesMut, body: RequestTap, framing: RequestFraming) -> RequestWriter {
        RequestWriter {
            out: head,
            body: (framing != RequestFraming::Empty).then_some(body),
            framing,
            done: false,
        }
    }

    /// Writes one batch (what the client's body has ready, up to [`WRITE_HIGH`] bytes):
    /// `Done` once the whole request went out, `More` when another batch may be ready now.
    ///
    /// One batch at a time, so that the caller looks at the response between batches: a
    /// client sending a large body fast, to an upstream that reads it as fast, would otherwise
    /// keep this writing (until the runtime's budget runs out, and again at the next poll)
    /// while an early answer waits unread.
    fn poll_write_batch(
        &mut self,
        conn: &mut Conn,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Wrote, UpstreamError>> {
        if self.done {
            return Poll::Ready(Ok(Wrote::Done));
        }
        self.fill(cx)?;
        if self.out.is_empty() {
            if self.body.is_some() {
                // Waiting for the client's next bytes (its waker is registered).
                return Poll::Pending;
            }
            ready!(conn.io.poll_flush(cx)).map_err(UpstreamError::Write)?;
            self.done = true;
            return Poll::Ready(Ok(Wrote::Done));
        }
        while !self.out.is_empty() {
            let n = ready!(conn.io.poll_write(cx, &self.out)).map_err(UpstreamError::Write)?;
            if n == 0 {
                return Poll::Ready(Err(UpstreamError::Write(
                    std::io::ErrorKind::WriteZero.into(),
                )));
            }
            self.out.advance(n);
        }
        Poll::Ready(Ok(Wrote::More))
    }

    /// Frames the client's body into `out` while it has bytes ready and `out` has room.
    fn fill(&mut self, cx: &mut Context<'_>) -> Result<(), UpstreamError> {
        while self.out.len() < WRITE_HIGH {
            let Some(body) = self.body.as_mut() else {
                return Ok(());
            };
            match Pin::new(body).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    match self.framing {
                        RequestFraming::Chunked => encode_chunk(&mut self.out, &data),
                        _ => self.out.extend_from_slice(&data),
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    self.body = None;
                    return Err(UpstreamError::RequestBody(e));
                }
                Poll::Ready(None) => {
                    if self.framing == RequestFraming::Chunked {
                        self.out.extend_from_slice(LAST_CHUNK);
                    }
                    self.body = None;
                }
                Poll::Pending => return Ok(()),
            }
        }
        Ok(())
    }

    /// Sends the request and reads until a final response head (1xx heads are read past).
    /// The response is looked at before each batch of the request: an upstream may answer
    /// before the body ended (a `413`), and then the rest is not sent.
    pub(super) fn poll_until_head(
        &mut self,
        conn: &mut Conn,
        head_only: bool,
        cx: &mut Context<'_>,
    ) -> Poll<Result<ParsedResponse, UpstreamError>> {
        loop {
            while !conn.read_buf.is_empty() {
                match take_response_head(&mut conn.read_buf, head_only)? {
                    Some(head) if head.parts.status.is_informational() => {}
                    Some(head) => return Poll::Ready(Ok(head)),
                    None => break,
                }
            }
            match conn.io.poll_fill(cx, &mut conn.read_buf) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(if conn.read_buf.is_empty() {
                        UpstreamError::ClosedBeforeResponse
                    } else {
                        UpstreamError::ClosedInsideHead
                    }))
                }
                Poll::Ready(Ok(_)) => continue,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(UpstreamError::Read(e))),
                Poll::Pending => {}
            }
            match self.poll_write_batch(conn, cx) {
                Poll::Ready(Ok(Wrote::More)) => {}
                Poll::Ready(Ok(Wrote::Done)) | Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            }
        }
    }
}

/// What one batch of the request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wrote {
    /// The whole request went out.
    Done,
    /// A batch went out; the next may be ready.
    More,
}

/// The upstream's response body, read from the connection as the client side asks for it.
///
/// Dropping it before its end (the client went away) drops the connection, which closes it:
/// HTTP/1.1 cannot reuse a connection mid-response, and the closed connection is how the
/// upstream learns the request was cancelled.
pub(super) struct UpstreamBody {
    /// The connection, until the body ended.
    conn: Option<Conn>,
    /// The request body, while it is still being sent.
    writer: Option<RequestWriter>,
    decoder: BodyDecoder,
    /// The connection may carry another exchange once this one ended cleanly.
    keep_alive: bool,
    home: Upstream,
}

impl UpstreamBody {
    /// The response whose head is `head`, its body read from `conn` from now on.
    pub(super) fn response(
        head: ParsedResponse,
        conn: Conn,
        writer: RequestWriter,
        home: Upstream,
    ) -> (ResponseParts, Box<UpstreamBody>) {
        let decoder = match head.framing {
            Framing::Empty => BodyDecoder::Length(0),
            Framing::Length(n) => BodyDecoder::Length(n),
            Framing::Chunked => BodyDecoder::Chunked(ChunkedDecoder::default()),
            Framing::UntilClose => BodyDecoder::UntilClose,
        };
        let mut body = Box::new(UpstreamBody {
            conn: Some(conn),
            writer: Some(writer),
            decoder,
            keep_alive: head.keep_alive,
            home,
        });
        if body.decoder.at_end() {
            body.finish();
        }
        (head.parts, body)
    }

    /// The body ended: the connection goes back for the next exchange when the request went
    /// out whole and nothing unasked-for came after the response; else it is closed.
    fn finish(&mut self) {
        let request_sent = self.writer.as_ref().is_none_or(|w| w.done);
        // An early answer: the rest of the request body is not sent (the tap reads it for the
        // record when dropped).
        self.writer = None;
        if let Some(conn) = self.conn.take() {
            if self.keep_alive && request_sent && conn.read_buf.is_empty() {
                self.home.put(conn);
            }
        }
    }

    /// The body broke: the connection is closed.
    fn fail(&mut self, e: UpstreamError) -> Poll<Option<Result<Frame<Bytes>, UpstreamError>>> {
        self.writer = None;
        self.conn = None;
        Poll::Ready(Some(Err(e)))
    }
}

impl Body for UpstreamBody {
    type Data = Bytes;
    type Error = UpstreamError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, UpstreamError>>> {
        let this = self.get_mut();
        let Some(conn) = this.conn.as_mut() else {
            return Poll::Ready(None);
        };
        if let Some(w) = this.writer.as_mut() {
            match w.poll_write_batch(conn, cx) {
                Poll::Ready(Ok(Wrote::Done)) => this.writer = None,
                // Another batch may be ready: come back for it after this frame.
                Poll::Ready(Ok(Wrote::More)) => cx.waker().wake_by_ref(),
                Poll::Ready(Err(_)) => {
                    // The response goes on; the connection cannot carry another exchange.
                    this.writer = None;
                    this.keep_alive = false;
                }
                Poll::Pending => {}
            }
        }
        let data = loop {
            match this.decoder.step(&mut conn.read_buf) {
                Ok(Step::Data(b)) => break Some(b),
                Ok(Step::End) => break None,
                Ok(Step::NeedMore) => {}
                Err(e) => return this.fail(e.into()),
            }
            match conn.io.poll_fill(cx, &mut conn.read_buf) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(0)) if matches!(this.decoder, BodyDecoder::UntilClose) => {
                    this.keep_alive = false;
                    break None;
                }
                Poll::Ready(Ok(0)) => return this.fail(UpstreamError::ClosedMidBody),
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return this.fail(UpstreamError::Read(e)),
            }
        };
        if data.is_none() || this.decoder.at_end() {
            this.finish();
        }
        Poll::Ready(data.map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.conn.is_none() || self.decoder.at_end()
    }

    fn size_hint(&self) -> SizeHint {
        match (self.decoder.remaining(), &self.conn) {
            (_, None) => SizeHint::with_exact(0),
            (Some(left), _) => SizeHint::with_exact(left),
            _ => SizeHint::default(),
        }
    }
}
