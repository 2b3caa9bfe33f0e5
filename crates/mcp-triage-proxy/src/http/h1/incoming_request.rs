//! The client's request head ([`take_request_head`]): read with `httparse` into the
//! [`RequestParts`] the exchange works with, and how its body is framed (RFC 9112 §6.3), with
//! the rules hyper's server applied before, so a client sees the same answers to the same bytes.

use std::mem::MaybeUninit;

use bytes::BytesMut;
use http::{Method, Uri};

use super::fields::{connection_lists, Fields, Known, Located, MAX_HEADERS};
pub(crate) use super::framing::BodyFraming;
use super::framing::{request_body_framing, RequestFramingError};
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
    #[error("the request method is not upper-case letters, '_' and '-'")]
    Method,
    #[error("the request method {0} is not served by a proxy of MCP traffic")]
    MethodNotAllowed(&'static str),
    #[error("the request target is not an absolute path or an http(s) URI")]
    Target,
    #[error("the HTTP/1.1 request has no Host")]
    NoHost,
    #[error("the request has more than one Host")]
    RepeatedHost,
    #[error("the request's Host is not a valid host name")]
    InvalidHost,
    #[error(transparent)]
    Framing(#[from] RequestFramingError),
}

impl RequestHeadError {
    /// The status the client gets (nginx's for the same head).
    pub(crate) fn status(&self) -> u16 {
        match self {
            RequestHeadError::TooLarge => 431,
            RequestHeadError::MethodNotAllowed(_) => 405,
            RequestHeadError::Framing(f) => f.status(),
            _ => 400,
        }
    }

    /// A short name for the record's warning.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            RequestHeadError::Syntax(_) => "request_head_syntax",
            RequestHeadError::TooLarge => "request_head_too_large",
            RequestHeadError::Method | RequestHeadError::MethodNotAllowed(_) => "request_method",
            RequestHeadError::Target => "request_target",
            RequestHeadError::NoHost
            | RequestHeadError::RepeatedHost
            | RequestHeadError::InvalidHost => "request_host",
            RequestHeadError::Framing(_) => "request_framing",
        }
    }
}

/// Where the end of a request head may be in `buf`, searched only in the bytes after
/// `*scanned` (which it moves on): a head trickled a byte at a time is then scanned once, not
/// parsed again from its start on every read (which made one 60 KB head cost a second of CPU).
/// True when an empty line (CRLF CRLF, or LF LF as httparse also takes) is in `buf`.
pub(crate) fn head_may_be_complete(buf: &[u8], scanned: &mut usize) -> bool {
    // An LF in the last two bytes may end the head once more bytes come: searched again.
    let from = scanned.saturating_sub(2).min(buf.len());
    let found = memchr::memchr_iter(b'\n', &buf[from..]).any(|i| {
        let after = &buf[from + i + 1..];
        after.first() == Some(&b'\n') || after.starts_with(b"\r\n")
    });
    *scanned = if found { 0 } else { buf.len() };
    found || buf.len() > MAX_HEAD_BYTES
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
    let method = request_method(req.method.unwrap_or(""))?;
    let path = req.path.unwrap_or("");
    check_target(path)?;
    let target_start = path.as_ptr() as usize - buf.as_ptr() as usize;
    let target = target_start..target_start + path.len();
    let http_11 = req.version == Some(1);
    let mut at = Located::of(buf, req.headers);
    at.lowercase_names(&mut buf[..n]);
    let head = buf.split_to(n).freeze();
    let uri = Uri::from_maybe_shared(head.slice(target)).map_err(|_| RequestHeadError::Target)?;
    let fields = Fields::new(head, at);
    check_host(&fields, http_11)?;
    let framing = request_body_framing(&fields, http_11)?;
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

/// The method, as nginx takes it: upper-case letters, `_` and `-` (a lower-case `post` is not
/// `POST`, and an upstream that read it as one would see a different request than a front end
/// that refused it). `CONNECT` and `TRACE` are refused: one opens a tunnel an observer cannot
/// follow, the other echoes credentials back.
fn request_method(m: &str) -> Result<Method, RequestHeadError> {
    if m.is_empty()
        || !m
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b == b'_' || b == b'-')
    {
        return Err(RequestHeadError::Method);
    }
    match m {
        "CONNECT" => Err(RequestHeadError::MethodNotAllowed("CONNECT")),
        "TRACE" => Err(RequestHeadError::MethodNotAllowed("TRACE")),
        _ => Method::from_bytes(m.as_bytes()).map_err(|_| RequestHeadError::Method),
    }
}

/// The target must be origin form (`/path?query`) or absolute form (`http://host/path`): the
/// asterisk form (`OPTIONS *`) and the authority form (`host:port`) name no resource an MCP
/// server serves.
fn check_target(path: &str) -> Result<(), RequestHeadError> {
    let b = path.as_bytes();
    let absolute =
        |scheme: &[u8]| b.len() > scheme.len() && b[..scheme.len()].eq_ignore_ascii_case(scheme);
    if b.first() == Some(&b'/') || absolute(b"http://") || absolute(b"https://") {
        Ok(())
    } else {
        Err(RequestHeadError::Target)
    }
}

/// RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without `Host`, and to any
/// request with more than one; the rebinding check reads the one there is. A host name with a
/// path separator, white space or `..` is refused too, as nginx refuses it.
fn check_host(fields: &Fields, http_11: bool) -> Result<(), RequestHeadError> {
    let mut hosts = fields.get_all(Known::Host);
    let Some(host) = hosts.next() else {
        return if http_11 {
            Err(RequestHeadError::NoHost)
        } else {
            Ok(())
        };
    };
    if hosts.next().is_some() {
        return Err(RequestHeadError::RepeatedHost);
    }
    let host = host.trim_ascii();
    let bad_byte = |b: &u8| matches!(b, b'/' | b'\\' | b' ' | b'\t') || *b < 0x20 || *b == 0x7f;
    if host.is_empty()
        || host[0] == b'.'
        || host.iter().any(bad_byte)
        || host.windows(2).any(|w| w == b"..")
    {
        return Err(RequestHeadError::InvalidHost);
    }
    Ok(())
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
    fn a_length_beside_chunked_or_another_coding_is_refused() {
        let e = take(
            "POST / HTTP/1.1\r\nhost: h\r\ncontent-length: 9\r\ntransfer-encoding: chunked\r\n\r\n",
        )
        .unwrap_err();
        assert_eq!(
            (e.status(), e),
            (400, RequestFramingError::LengthAndTransferEncoding.into())
        );
        let e = take("POST / HTTP/1.1\r\nhost: h\r\ntransfer-encoding: gzip, chunked\r\n\r\n")
            .unwrap_err();
        assert_eq!(
            (e.status(), e),
            (501, RequestFramingError::UnknownTransferCoding.into())
        );
        let e = take("POST / HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n").unwrap_err();
        assert_eq!(e, RequestFramingError::TransferEncodingInHttp10.into());
        let r = parse("POST / HTTP/1.1\r\nhost: h\r\ntransfer-encoding: chunked\r\n\r\n");
        assert_eq!(r.framing, Some(BodyFraming::Chunked));
    }

    #[test]
    fn connection_tokens_and_versions() {
        assert!(
            !parse("GET / HTTP/1.1\r\nhost: h\r\nconnection: keep-alive, close\r\n\r\n").keep_alive
        );
        assert!(!parse("GET / HTTP/1.0\r\n\r\n").keep_alive);
        assert!(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
        let r = parse(
            "POST / HTTP/1.1\r\nhost: h\r\nexpect: 100-Continue\r\ncontent-length: 1\r\n\r\n",
        );
        assert!(r.expect_continue);
        assert_eq!(r.framing, Some(BodyFraming::Length(1)));
        assert_eq!(
            parse("POST / HTTP/1.1\r\nhost: h\r\ncontent-length: 0\r\n\r\n").framing,
            None
        );
    }

    #[test]
    fn hosts_methods_and_targets_are_checked_as_nginx_checks_them() {
        let cases: &[(&str, RequestHeadError, u16)] = &[
            ("GET / HTTP/1.1\r\n\r\n", RequestHeadError::NoHost, 400),
            (
                "GET / HTTP/1.1\r\nhost: a\r\nhost: b\r\n\r\n",
                RequestHeadError::RepeatedHost,
                400,
            ),
            (
                "GET / HTTP/1.1\r\nhost: a\r\nHost: a\r\n\r\n",
                RequestHeadError::RepeatedHost,
                400,
            ),
            (
                "GET / HTTP/1.1\r\nhost: a/b\r\n\r\n",
                RequestHeadError::InvalidHost,
                400,
            ),
            (
                "GET / HTTP/1.1\r\nhost: a..b\r\n\r\n",
                RequestHeadError::InvalidHost,
                400,
            ),
            (
                "GET / HTTP/1.1\r\nhost: \r\n\r\n",
                RequestHeadError::InvalidHost,
                400,
            ),
            (
                "post / HTTP/1.1\r\nhost: a\r\n\r\n",
                RequestHeadError::Method,
                400,
            ),
            (
                "Get / HTTP/1.1\r\nhost: a\r\n\r\n",
                RequestHeadError::Method,
                400,
            ),
            (
                "CONNECT a:443 HTTP/1.1\r\nhost: a\r\n\r\n",
                RequestHeadError::MethodNotAllowed("CONNECT"),
                405,
            ),
            (
                "TRACE / HTTP/1.1\r\nhost: a\r\n\r\n",
                RequestHeadError::MethodNotAllowed("TRACE"),
                405,
            ),
            (
                "OPTIONS * HTTP/1.1\r\nhost: a\r\n\r\n",
                RequestHeadError::Target,
                400,
            ),
            (
                "GET a:80 HTTP/1.1\r\nhost: a\r\n\r\n",
                RequestHeadError::Target,
                400,
            ),
        ];
        for (head, why, status) in cases {
            let e = take(head).unwrap_err();
            assert_eq!((&e, e.status()), (why, *status), "{head:?}");
        }
        assert!(parse("GET / HTTP/1.0\r\n\r\n")
            .parts
            .fields
            .get(Known::Host)
            .is_none());
        let r = parse("GET http://a/mcp?x HTTP/1.1\r\nhost: a\r\n\r\n");
        assert_eq!(r.parts.path(), "/mcp?x");
        assert_eq!(
            parse("M-SEARCH_X / HTTP/1.1\r\nhost: 127.0.0.1:80\r\n\r\n")
                .parts
                .method
                .as_str(),
            "M-SEARCH_X"
        );
    }

    #[test]
    fn a_trickled_head_is_scanned_once() {
        let head = format!(
            "GET / HTTP/1.1\r\nhost: a\r\nx: {}\r\n\r\n",
            "y".repeat(1000)
        );
        let mut scanned = 0;
        let mut looked = 0;
        for end in 1..head.len() {
            let before = scanned;
            assert!(
                !head_may_be_complete(&head.as_bytes()[..end], &mut scanned),
                "at {end}"
            );
            looked += end - before.saturating_sub(2).min(end);
        }
        assert!(
            looked < 3 * head.len(),
            "{looked} bytes looked at for a {}-byte head",
            head.len()
        );
        assert!(head_may_be_complete(head.as_bytes(), &mut scanned));
        let mut scanned = 0;
        assert!(head_may_be_complete(
            b"GET / HTTP/1.1\nhost: a\n\n",
            &mut scanned
        ));
        let mut scanned = 0;
        assert!(head_may_be_complete(b"\r\n\r\n", &mut scanned));
        let mut scanned = 0;
        assert!(!head_may_be_complete(
            b"GET / HTTP/1.1\r\nhost: a\r\n",
            &mut scanned
        ));
    }

    #[test]
    fn bad_heads_are_named_with_their_status() {
        let e =
            take("POST / HTTP/1.1\r\nhost: h\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n")
                .unwrap_err();
        assert_eq!(
            (e.status(), e),
            (400, RequestFramingError::ContentLength.into())
        );
        let e = take("GE(T / HTTP/1.1\r\n\r\n").unwrap_err();
        assert_eq!(e.status(), 400);
        // RFC 9112 §5.1, §5.2: no white space before the colon, no obs-fold, no NUL or bare CR.
        for bad in [
            "GET / HTTP/1.1\r\nhost : a\r\n\r\n",
            "GET / HTTP/1.1\r\nhost: a\r\nx: 1\r\n folded\r\n\r\n",
            "GET / HTTP/1.1\r\nhost: a\r\nx: 1\x002\r\n\r\n",
            "GET / HTTP/1.1\r\nhost: a\r\nx: 1\r2\r\n\r\n",
            "GET / HTTP/2.0\r\nhost: a\r\n\r\n",
        ] {
            let e = take(bad).unwrap_err();
            assert!(matches!(e, RequestHeadError::Syntax(_)), "{bad:?}: {e:?}");
            assert_eq!(e.status(), 400);
        }
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
