//! One client connection, served by the proxy's own HTTP/1.1 ([`serve`]): request heads read
//! (`h1::incoming_request`), each exchange handed to [`super::forward::handle`] with its body
//! as a [`ClientBody`], the response head written (`h1::outgoing_response`) and its body passed
//! on, over and over while the connection stays open.
//!
//! What hyper's server did here before, this keeps (and `tests/client_http.rs` holds): the header read timeout (an idle
//! connection waits at most that long for its next request too), `400`/`431` for heads that
//! cannot be served, `100 Continue` for a client that waits for it, the client's disconnect
//! noticed while the exchange runs (the exchange is dropped, which closes the upstream request
//! and writes the record), and at shutdown no new request on an open connection.

use std::future::poll_fn;
use std::io::{self, IoSlice};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::BytesMut;
use http::Method;
use http_body::Body;
use http_body_util::BodyExt;
use tokio::sync::watch;

use super::activity::{ConnActivity, InFlight};
use super::client_body::{lock, ClientBody, SharedReader};
use super::cork::Cork;
use super::forward::handle;
use super::forward::record_unservable_head;
use super::h1::chunked::LAST_CHUNK;
use super::h1::incoming_request::{
    head_may_be_complete, take_request_head, ParsedRequest, RequestHeadError, MAX_HEAD_BYTES,
};
use super::h1::outgoing_response::{encode_response_head, RequestFacts, ResponseFraming};
use super::response_body::Answer;
use super::shared::Shared;
use super::upstream::Upstream;

/// What a client connection's exchanges share.
pub(super) struct ClientConn {
    pub(super) sh: Arc<Shared>,
    pub(super) upstream: Upstream,
    pub(super) peer: Arc<str>,
    pub(super) activity: Arc<ConnActivity>,
    /// See [`ProxyOptions::header_read_timeout`](super::options::ProxyOptions::header_read_timeout);
    /// zero: none.
    pub(super) header_read_timeout: Duration,
    /// True once the proxy shuts down: no new request is read.
    pub(super) draining: watch::Receiver<bool>,
}

/// What waiting for a request head came to.
enum Next {
    Request(Box<ParsedRequest>),
    Refuse(RequestHeadError),
    Close,
}

/// How long, and for how many bytes at most, the proxy reads and drops what a client still
/// sends after the proxy decided to close (see [`linger`]): nginx's lingering close, with
/// tighter bounds.
const LINGER_TIME: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 1 << 20;

/// Serves the connection until it closes; then writes what is held and shuts it down.
pub(super) async fn serve(mut conn: ClientConn, reader: SharedReader, cork: Arc<Mutex<Cork>>) {
    let mut refused = false;
    loop {
        match next_request(&mut conn, &reader).await {
            Next::Request(req) => {
                if !exchange(&conn, &reader, &cork, *req).await || *conn.draining.borrow() {
                    break;
                }
            }
            Next::Refuse(why) => {
                record_unservable_head(&conn.sh, &conn.peer, &why);
                let _ = write_all(&cork, &refusal(&why)).await;
                refused = true;
                break;
            }
            Next::Close => break,
        }
    }
    // A request body still being read for a record ends with the connection.
    let (io, unread) = {
        let mut r = lock(&reader);
        let unread = refused || r.unread_input();
        (r.close(), unread)
    };
    let closed = poll_fn(|cx| cork_of(&cork).poll_close(cx)).await;
    if let (Some(io), true, Ok(())) = (io, unread, closed) {
        linger(io).await;
    }
}

/// The lingering close (RFC 9112 §9.6): the proxy's answers are out and its side is shut
/// down; what the client still sends (pipelined requests, the rest of a refused body) is
/// read and dropped until the client closes, at most [`LINGER_TIME`] and [`LINGER_BYTES`].
/// Closed at once instead, a socket with unread bytes is reset, and the reset can reach the
/// client before it read the last answers, which it then never gets.
async fn linger(mut io: super::cork::CorkedStream) {
    let mut scratch = BytesMut::new();
    let mut dropped = 0;
    let drain = async {
        while dropped < LINGER_BYTES {
            scratch.clear();
            match poll_fn(|cx| {
                super::read_into::poll_read_into(std::pin::Pin::new(&mut io), cx, &mut scratch)
            })
            .await
            {
                Ok(0) | Err(_) => return,
                Ok(n) => dropped += n,
            }
        }
    };
    let _ = tokio::time::timeout(LINGER_TIME, drain).await;
}

fn cork_of(cork: &Arc<Mutex<Cork>>) -> std::sync::MutexGuard<'_, Cork> {
    cork.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits for the next request head: `Close` when the client closes first, stays silent past
/// the header read timeout, or the proxy shuts down while the connection is idle.
async fn next_request(conn: &mut ClientConn, reader: &SharedReader) -> Next {
    let limit = conn.header_read_timeout;
    let head = poll_fn(|cx| poll_head(reader, cx));
    let timeout = async {
        if limit.is_zero() {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(limit).await;
    };
    let draining = &mut conn.draining;
    tokio::select! {
        next = head => next,
        () = timeout => Next::Close,
        () = shutting_down(draining), if lock(reader).buf.is_empty() => Next::Close,
    }
}

fn poll_head(reader: &SharedReader, cx: &mut Context<'_>) -> Poll<Next> {
    let mut guard = lock(reader);
    let r = &mut *guard;
    loop {
        if !r.buf.is_empty() && head_may_be_complete(&r.buf, &mut r.head_scanned) {
            match take_request_head(&mut r.buf) {
                Ok(Some(req)) => return Poll::Ready(Next::Request(Box::new(req))),
                Ok(None) => {}
                Err(why) => return Poll::Ready(Next::Refuse(why)),
            }
        }
        match std::task::ready!(r.poll_fill(cx)) {
            Ok(0) | Err(_) => return Poll::Ready(Next::Close),
            Ok(_) => {}
        }
    }
}

async fn shutting_down(draining: &mut watch::Receiver<bool>) {
    while !*draining.borrow_and_update() {
        if draining.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// One exchange: handled, answered. True when the connection may carry another.
async fn exchange(
    conn: &ClientConn,
    reader: &SharedReader,
    cork: &Arc<Mutex<Cork>>,
    req: ParsedRequest,
) -> bool {
    let in_flight = InFlight::new(&conn.activity);
    let facts = RequestFacts {
        head_only: req.parts.method == Method::HEAD,
        http_11: req.parts.http_11,
        keep_alive: req.keep_alive && !*conn.draining.borrow(),
    };
    lock(reader).start_body(req.framing, req.expect_continue);
    let handled = handle(
        conn.sh.clone(),
        conn.upstream.clone(),
        conn.peer.clone(),
        req.parts,
        ClientBody::new(reader.clone()),
    );
    let answered = tokio::select! {
        answered = handled => answered,
        // Dropping the exchange closes the upstream request and writes its record.
        () = poll_fn(|cx| poll_client_gone(reader, cx)) => return false,
    };
    // The upstream closed without a response: close the client's connection the same way.
    let Ok(mut answer) = answered else {
        return false;
    };
    answer.body.in_flight = Some(in_flight);
    let keep_alive = write_response(reader, cork, answer, facts).await;
    // A body that broke leaves no known start for a next request (see `ClientReader::broken`).
    keep_alive && lock(reader).reusable()
}

/// Ready when the client closed its connection (or it broke). Only looked at once the request
/// body was read whole (before, the body's reads see the end); bytes that come meanwhile (a
/// pipelined request) wait in the buffer, up to a head's limit.
fn poll_client_gone(reader: &SharedReader, cx: &mut Context<'_>) -> Poll<()> {
    let mut r = lock(reader);
    while r.body_done() && r.buf.len() < MAX_HEAD_BYTES {
        match std::task::ready!(r.poll_fill(cx)) {
            Ok(0) | Err(_) => return Poll::Ready(()),
            Ok(_) => {}
        }
    }
    Poll::Pending
}

/// Writes the response head and passes its body on. True when the connection may carry
/// another exchange.
async fn write_response(
    reader: &SharedReader,
    cork: &Arc<Mutex<Cork>>,
    answer: Answer,
    facts: RequestFacts,
) -> bool {
    let Answer {
        head: parts,
        mut body,
    } = answer;
    let mut head = BytesMut::new();
    let exact = body.size_hint().exact();
    let written = encode_response_head(&parts, body.is_end_stream(), exact, facts, &mut head);
    if write_all(cork, &head).await.is_err() {
        return false;
    }
    match written.framing {
        ResponseFraming::Empty => return written.keep_alive,
        ResponseFraming::Length(n) => body.announce(n),
        ResponseFraming::Chunked | ResponseFraming::UntilClose => {}
    }
    let chunked = written.framing == ResponseFraming::Chunked;
    loop {
        let frame = tokio::select! {
            biased;
            frame = body.frame() => frame,
            // Dropping the body closes the upstream request; the record says cancelled.
            () = poll_fn(|cx| poll_client_gone(reader, cx)) => return false,
        };
        let data = match frame {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) if !data.is_empty() => data,
                _ => continue,
            },
            // The upstream broke mid-body: the client's connection closes without the end.
            Some(Err(_)) => return false,
            None => break,
        };
        let sent = if chunked {
            write_chunk(cork, &data).await
        } else {
            write_all(cork, &data).await
        };
        if sent.is_err() {
            return false;
        }
    }
    if chunked && write_all(cork, LAST_CHUNK).await.is_err() {
        return false;
    }
    written.keep_alive && written.framing != ResponseFraming::UntilClose
}

/// One chunk of a chunked body: its size line, the data, CRLF.
async fn write_chunk(cork: &Arc<Mutex<Cork>>, data: &[u8]) -> io::Result<()> {
    let mut line = [0u8; 18];
    let size = chunk_size_line(data.len(), &mut line);
    write_parts(cork, &[size, data, b"\r\n"]).await
}

/// `len` in hexadecimal and CRLF, in `buf`.
fn chunk_size_line(mut len: usize, buf: &mut [u8; 18]) -> &[u8] {
    let mut i = 16;
    buf[16..].copy_from_slice(b"\r\n");
    loop {
        i -= 1;
        buf[i] = b"0123456789abcdef"[len & 0xf];
        len >>= 4;
        if len == 0 {
            return &buf[i..];
        }
    }
}

/// Hands `data` to the cork, waiting while it is full (the client reads slowly).
async fn write_all(cork: &Arc<Mutex<Cork>>, data: &[u8]) -> io::Result<()> {
    write_parts(cork, &[data]).await
}

/// Hands `parts` to the cork in order, waiting while it is full.
async fn write_parts(cork: &Arc<Mutex<Cork>>, parts: &[&[u8]]) -> io::Result<()> {
    let (mut part, mut at) = (0, 0);
    poll_fn(|cx| {
        let mut c = cork_of(cork);
        while let Some(p) = parts.get(part) {
            if at == p.len() {
                (part, at) = (part + 1, 0);
                continue;
            }
            at += std::task::ready!(c.hold(cx, &[IoSlice::new(&p[at..])]))?;
        }
        Poll::Ready(Ok(()))
    })
    .await
}

/// The answer to a head that cannot be served, naming why; the connection closes after it.
fn refusal(why: &RequestHeadError) -> Vec<u8> {
    let status = http::StatusCode::from_u16(why.status()).unwrap_or(http::StatusCode::BAD_REQUEST);
    let body = format!("mcp-triage proxy: {why}\n");
    format!(
        "HTTP/1.1 {} {}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        status.as_str(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_size_lines_are_hex() {
        let mut buf = [0u8; 18];
        assert_eq!(chunk_size_line(0, &mut buf), b"0\r\n");
        assert_eq!(chunk_size_line(255, &mut buf), b"ff\r\n");
        assert_eq!(chunk_size_line(0x1234_5678, &mut buf), b"12345678\r\n");
        assert_eq!(
            chunk_size_line(usize::MAX, &mut buf),
            b"ffffffffffffffff\r\n"
        );
    }
}
