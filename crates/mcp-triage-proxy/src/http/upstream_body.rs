//! One exchange on an upstream connection: [`RequestWriter`] sends the request (head, then the
//! body as the client sends it) and reads until the response head; [`UpstreamBody`], the
//! response body hyper's server side passes to the client, reads the rest, finishes sending
//! the request body meanwhile, and puts the connection back when both ended cleanly.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use http::Response;
use http_body::{Body, Frame, SizeHint};

use super::h1::chunked::{encode_chunk, ChunkedDecoder, Decoded, LAST_CHUNK};
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

    /// Writes what there is to write: `Ready(Ok)` once the whole request went out.
    fn poll_write(
        &mut self,
        conn: &mut Conn,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), UpstreamError>> {
        if self.done {
            return Poll::Ready(Ok(()));
        }
        loop {
            self.fill(cx)?;
            if self.out.is_empty() {
                if self.body.is_some() {
                    // Waiting for the client's next bytes (its waker is registered).
                    return Poll::Pending;
                }
                ready!(conn.io.poll_flush(cx)).map_err(UpstreamError::Write)?;
                self.done = true;
                return Poll::Ready(Ok(()));
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
        }
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
    pub(super) fn poll_until_head(
        &mut self,
        conn: &mut Conn,
        head_only: bool,
        cx: &mut Context<'_>,
    ) -> Poll<Result<ParsedResponse, UpstreamError>> {
        if let Poll::Ready(Err(e)) = self.poll_write(conn, cx) {
            return Poll::Ready(Err(e));
        }
        loop {
            if !conn.read_buf.is_empty() {
                if let Some(head) = take_response_head(&mut conn.read_buf, head_only)? {
                    if head.parts.status.is_informational() {
                        continue;
                    }
                    return Poll::Ready(Ok(head));
                }
            }
            let n =
                ready!(conn.io.poll_fill(cx, &mut conn.read_buf)).map_err(UpstreamError::Read)?;
            if n == 0 {
                return Poll::Ready(Err(if conn.read_buf.is_empty() {
                    UpstreamError::ClosedBeforeResponse
                } else {
                    UpstreamError::ClosedInsideHead
                }));
            }
        }
    }
}

/// How the response body's end is found, and how far it is.
enum Decoder {
    Length(u64),
    Chunked(ChunkedDecoder),
    UntilClose,
}

/// What one step of decoding found.
enum Step {
    Data(Bytes),
    NeedMore,
    End,
}

impl Decoder {
    fn at_end(&self) -> bool {
        match self {
            Decoder::Length(left) => *left == 0,
            Decoder::Chunked(d) => d.is_done(),
            Decoder::UntilClose => false,
        }
    }

    fn step(&mut self, buf: &mut BytesMut) -> Result<Step, UpstreamError> {
        Ok(match self {
            Decoder::Length(0) => Step::End,
            Decoder::Length(_) | Decoder::UntilClose if buf.is_empty() => Step::NeedMore,
            Decoder::Length(left) => {
                let n = (*left).min(buf.len() as u64);
                *left -= n;
                Step::Data(buf.split_to(n as usize).freeze())
            }
            Decoder::UntilClose => Step::Data(buf.split().freeze()),
            Decoder::Chunked(d) => match d.decode(buf)? {
                Decoded::Data(b) => Step::Data(b),
                Decoded::NeedMore => Step::NeedMore,
                Decoded::End => Step::End,
            },
        })
    }
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
    decoder: Decoder,
    /// The connection may carry another exchange once this one ended cleanly.
    keep_alive: bool,
    home: Upstream,
    /// A failure held back for one poll (see [`Body::poll_frame`]).
    failed: Option<UpstreamError>,
}

impl UpstreamBody {
    /// The response whose head is `head`, its body read from `conn` from now on.
    pub(super) fn response(
        head: ParsedResponse,
        conn: Conn,
        writer: RequestWriter,
        home: Upstream,
    ) -> Response<Box<UpstreamBody>> {
        let decoder = match head.framing {
            Framing::Empty => Decoder::Length(0),
            Framing::Length(n) => Decoder::Length(n),
            Framing::Chunked => Decoder::Chunked(ChunkedDecoder::default()),
            Framing::UntilClose => Decoder::UntilClose,
        };
        let mut body = Box::new(UpstreamBody {
            conn: Some(conn),
            writer: Some(writer),
            decoder,
            keep_alive: head.keep_alive,
            home,
            failed: None,
        });
        if body.decoder.at_end() {
            body.finish();
        }
        Response::from_parts(head.parts, body)
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

    /// The body broke: the connection is closed, and the error is held back for one poll.
    ///
    /// Why: hyper's server side writes the response head and the chunks it polls into its own
    /// buffer and flushes when the body has nothing ready; a body error in the same round drops
    /// the buffer with the connection, and a client would lose the head and the bytes that did
    /// come (when hyper's client forwarded, each chunk crossed a channel and was flushed before
    /// the next poll saw the error). Returning `Pending` once, already woken, lets it flush.
    fn fail(
        &mut self,
        e: UpstreamError,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, UpstreamError>>> {
        self.writer = None;
        self.conn = None;
        self.failed = Some(e);
        cx.waker().wake_by_ref();
        Poll::Pending
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
        if let Some(e) = this.failed.take() {
            return Poll::Ready(Some(Err(e)));
        }
        let Some(conn) = this.conn.as_mut() else {
            return Poll::Ready(None);
        };
        if let Some(w) = this.writer.as_mut() {
            match w.poll_write(conn, cx) {
                Poll::Ready(Ok(())) => this.writer = None,
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
                Err(e) => return this.fail(e, cx),
            }
            match conn.io.poll_fill(cx, &mut conn.read_buf) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(0)) if matches!(this.decoder, Decoder::UntilClose) => {
                    this.keep_alive = false;
                    break None;
                }
                Poll::Ready(Ok(0)) => return this.fail(UpstreamError::ClosedMidBody, cx),
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return this.fail(UpstreamError::Read(e), cx),
            }
        };
        if data.is_none() || this.decoder.at_end() {
            this.finish();
        }
        Poll::Ready(data.map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.failed.is_none() && (self.conn.is_none() || self.decoder.at_end())
    }

    fn size_hint(&self) -> SizeHint {
        match (&self.decoder, &self.conn) {
            (_, None) => SizeHint::with_exact(0),
            (Decoder::Length(left), _) => SizeHint::with_exact(*left),
            _ => SizeHint::default(),
        }
    }
}
