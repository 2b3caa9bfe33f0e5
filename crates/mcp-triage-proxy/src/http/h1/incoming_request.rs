//! The client's request head ([`take_request_head`]): read with `httparse` into the
//! [`RequestParts`] the exchange works with, and how its body is framed (RFC 9112 §6.3), with
//! the rules hyper's server applied before, so a client sees the same answers to the same bytes.

use std::mem::MaybeUninit;

use bytes::BytesMut;
use http::{Method, Uri};

use super::fields::{
    connection_lists, content_length, ends_in_chunked, Fields, InvalidLength, Known, Located,
    MAX_HEADERS,
};
use super::parts::RequestParts;

/// The longest request head read: a longer one is answered with `431` and the connection
/// closed. 64 KiB is far beyond any MCP request's head and bounds what one client can make
/// the proxy hold before it has sent a whole head.
pub(crate) const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Why a request head was refused; [`RequestHeadError::status`] is the answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum RequestHeadError {
    #[error("the request head does not parse: {0}")]
    Syntax(httparse::Error),
    #[error("the request head is longer than {MAX_HEAD_BYTES} bytes or has more than {MAX_HEADERS} fields")]
    TooLarge,
    #[error("the request method is not valid")]
    Method,
    #[error("the request target is not a valid URI")]
    Target,
    #[error("the request's Content-Length is not one number")]
    ContentLength,
    #[error("the request's Transfer-Encoding does not end in chunked, or comes with HTTP/1.0")]
    TransferEncoding,
}

impl RequestHeadError {
    /// The status the client gets.
    pub(crate) fn status(&self) -> u16 {
        match self {
            RequestHeadError::TooLarge => 431,
            _ => 400,
        }
    }
}

/// How the request body's end is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFraming {
    Length(u64),
    Chunked,
}

/// A request head as read.
#[derive(Debug)]
pub(crate) struct ParsedRequest {
    pub(crate) parts: RequestParts,
    /// `None`: no body.
    pub(crate) framing: Option<BodyFraming>,
    /// The client may send another request on the connection after this one.
    pub(crate) keep_alive: bool,
    /// `Expect: 100-continue`: the client waits for a `100` before it sends the body.
    pub(crate) expect_continue: bool,
}

/// Parses the request head at the start of `buf` and takes it off: `Ok(None)` while it is
/// incomplete (nothing is taken). Empty lines before a request line are skipped (RFC 9112
/// §2.2). The fields stay in the head's bytes (one allocation for the head's places, none per
/// field).
pub(crate) fn take_request_head(
    buf: &mut BytesMut,
) -> Result<Option<ParsedRequest>, RequestHeadError> {
    let blank = buf
        .iter()
        .take_while(|&&b| b == b'\r' || b == b'\n')
        .count();
    if blank > 0 {
        let _ = buf.split_to(blank);
    }
    // Uninitialised slots, and the fields' places in a vector of their count: zeroing two
    // arrays of MAX_HEADERS per head cost more than the parse itself.
    let mut fields = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let n = match req.parse_with_uninit_headers(buf, &mut fields) {
        Ok(httparse::Status::Complete(n)) if n <= MAX_HEAD_BYTES => n,
        Ok(httparse::Status::Complete(_)) => return Err(RequestHeadError::TooLarge),
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD_BYTES => {
            return Err(RequestHeadError::TooLarge)
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(RequestHeadError::TooLarge),
        Err(e) => return Err(RequestHeadError::Syntax(e)),
    };
    let method = Method::from_bytes(req.method.unwrap_or("").as_bytes())
        .map_err(|_| RequestHeadError::Method)?;
    let path = req.path.unwrap_or("");
    let target_start = path.as_ptr() as usize - buf.as_ptr() as usize;
    let target = target_start..target_start + path.len();
    let http_11 = req.version == Some(1);
    let mut at = Located::of(buf, req.headers);
    at.lowercase_names(&mut buf[..n]);
    let head = buf.split_to(n).freeze();
    let uri = Uri::from_maybe_shared(head.slice(target)).map_err(|_| RequestHeadError::Target)?;
    let mut fields = Fields::new(head, at);
    let framing = body_framing(&mut fields, http_11)?;
    let keep_alive = keeps_alive(http_11, &fields);
    let expect_continue = http_11
        && fields
            .get(Known::Expect)
            .is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"));
    Ok(Some(ParsedRequest {
        parts: RequestParts {
            method,
            uri,
            http_11,
            fields,
        },
        framing,
        keep_alive,
        expect_continue,
    }))
}

/// The body's framing: chunked when `Transfer-Encoding` ends in chunked (a `Content-Length`
/// beside it is dropped, as hyper did), else the `Content-Length`, else none.
fn body_framing(
    fields: &mut Fields,
    http_11: bool,
) -> Result<Option<BodyFraming>, RequestHeadError> {
    if let Some(chunked) = ends_in_chunked(fields) {
        if !http_11 || !chunked {
            return Err(RequestHeadError::TransferEncoding);
        }
        fields.remove(Known::ContentLength);
        return Ok(Some(BodyFraming::Chunked));
    }
    let length = content_length(fields).map_err(|InvalidLength| RequestHeadError::ContentLength)?;
    Ok(match length {
        Some(0) | None => None,
        Some(n) => Some(BodyFraming::Length(n)),
    })
}

/// Whether the client keeps the connection open (RFC 9112 §9.3): HTTP/1.1 unless it says
/// `close`; HTTP/1.0 only when it says `keep-alive` (and not `close`).
fn keeps_alive(http_11: bool, fields: &Fields) -> bool {
    if connection_lists(fields, b"close") {
        return false;
    }
    http_11 || connection_lists(fields, b"keep-alive")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(head: &str) -> Result<Option<ParsedRequest>, RequestHeadError> {
        let mut buf = BytesMut::from(head.as_bytes());
        buf.extend_from_slice(b"BODY");
        let r = take_request_head(&mut buf);
        if let Ok(Some(_)) = &r {
            assert_eq!(&buf[..], b"BODY", "the head, and only it, is taken");
        }
        r
    }

    fn parse(head: &str) -> ParsedRequest {
        take(head).unwrap().unwrap()
    }

    #[test]
    fn a_post_with_a_length() {
        let r = parse("\r\nPOST /mcp?x=1 HTTP/1.1\r\nHost: p:1\r\nContent-Length: 4\r\nX-A: 1\r\nx-a: 2\r\n\r\n");
        assert_eq!(r.parts.method, Method::POST);
        assert_eq!(r.parts.uri.path_and_query().unwrap().as_str(), "/mcp?x=1");
        assert_eq!(r.framing, Some(BodyFraming::Length(4)));
        assert!(r.keep_alive && !r.expect_continue);
        assert_eq!(
            r.parts.fields.iter().filter(|(n, _)| *n == "x-a").count(),
            2
        );
        assert!(r.parts.http_11);
        let names: Vec<_> = r.parts.fields.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["host", "content-length", "x-a", "x-a"]);
    }

    #[test]
    fn chunked_wins_over_a_length_and_must_come_last() {
        let r = parse("POST / HTTP/1.1\r\ncontent-length: 9\r\ntransfer-encoding: chunked\r\n\r\n");
        assert_eq!(r.framing, Some(BodyFraming::Chunked));
        assert_eq!(r.parts.fields.get(Known::ContentLength), None);
        let e = take("POST / HTTP/1.1\r\ntransfer-encoding: chunked, gzip\r\n\r\n").unwrap_err();
        assert_eq!(e, RequestHeadError::TransferEncoding);
        let e = take("POST / HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n").unwrap_err();
        assert_eq!(e, RequestHeadError::TransferEncoding);
    }

    #[test]
    fn connection_tokens_and_versions() {
        assert!(!parse("GET / HTTP/1.1\r\nconnection: keep-alive, close\r\n\r\n").keep_alive);
        assert!(!parse("GET / HTTP/1.0\r\n\r\n").keep_alive);
        assert!(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
        let r = parse("POST / HTTP/1.1\r\nexpect: 100-Continue\r\ncontent-length: 1\r\n\r\n");
        assert!(r.expect_continue);
        assert_eq!(r.framing, Some(BodyFraming::Length(1)));
        assert_eq!(
            parse("POST / HTTP/1.1\r\ncontent-length: 0\r\n\r\n").framing,
            None
        );
    }

    #[test]
    fn bad_heads_are_named_with_their_status() {
        let e =
            take("POST / HTTP/1.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n").unwrap_err();
        assert_eq!((e.status(), e), (400, RequestHeadError::ContentLength));
        let e = take("GE(T / HTTP/1.1\r\n\r\n").unwrap_err();
        assert_eq!(e.status(), 400);
        let long = format!(
            "GET / HTTP/1.1\r\nx: {}\r\n\r\n",
            "a".repeat(MAX_HEAD_BYTES)
        );
        assert_eq!(take(&long).unwrap_err(), RequestHeadError::TooLarge);
        let many: String = (0..=MAX_HEADERS).map(|i| format!("x{i}: 1\r\n")).collect();
        let e = take(&format!("GET / HTTP/1.1\r\n{many}\r\n")).unwrap_err();
        assert_eq!((e.status(), e), (431, RequestHeadError::TooLarge));
        let mut partial = BytesMut::from(&b"GET / HTTP/1.1\r\nhost: x\r\n"[..]);
        assert!(take_request_head(&mut partial).unwrap().is_none());
        assert_eq!(partial.len(), 25, "nothing is taken");
    }
}
