//! The upstream's response head ([`take_response_head`]): read with `httparse` into the
//! [`ResponseParts`] the observer and the client side take, with how its body is framed.

use std::mem::MaybeUninit;

use bytes::BytesMut;
use http::StatusCode;

use super::fields::{connection_lists, Fields, Located, MAX_HEADERS};
pub(crate) use super::framing::Framing;
use super::framing::{response_body_framing, ResponseFramingError};
use super::parts::ResponseParts;

/// The longest response head the proxy reads: a longer one fails the exchange (`502`'s cousin:
/// the client's connection is closed, as for any upstream that breaks before a response).
pub(crate) const MAX_HEAD_BYTES: usize = 256 * 1024;

/// Why a response head could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum HeadError {
    #[error("the response head does not parse: {0}")]
    Syntax(httparse::Error),
    #[error("the response head is longer than {MAX_HEAD_BYTES} bytes")]
    TooLong,
    #[error("the response has an invalid status code {0}")]
    Status(u16),
    #[error("the response head has more than {MAX_HEADERS} header lines")]
    TooManyFields,
    #[error(transparent)]
    Framing(#[from] ResponseFramingError),
    #[error("the upstream switched protocols (101), which the proxy does not forward")]
    SwitchingProtocols,
}

/// A response head as read.
#[derive(Debug)]
pub(crate) struct ParsedResponse {
    pub(crate) parts: ResponseParts,
    pub(crate) framing: Framing,
    /// The connection may carry another exchange after this one.
    pub(crate) keep_alive: bool,
}

/// Parses the response head at the start of `buf` and takes it off: `Ok(None)` while it is
/// incomplete (nothing is taken), else the head. Interim (1xx) heads come back like final ones;
/// the caller skips them.
///
/// The fields stay in the head's bytes (one allocation for the head's places, none per field).
pub(crate) fn take_response_head(
    buf: &mut BytesMut,
    request_was_head: bool,
) -> Result<Option<ParsedResponse>, HeadError> {
    // Uninitialised slots, and the fields' places in a vector of their count: zeroing two
    // arrays of MAX_HEADERS per head cost more than the parse itself.
    let mut fields = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut resp,
        buf,
        &mut fields,
    );
    let n = match parsed {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD_BYTES => {
            return Err(HeadError::TooLong)
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooManyFields),
        Err(e) => return Err(HeadError::Syntax(e)),
    };
    if n > MAX_HEAD_BYTES {
        return Err(HeadError::TooLong);
    }
    let code = resp.code.unwrap_or(0);
    let status = StatusCode::from_u16(code).map_err(|_| HeadError::Status(code))?;
    if status == StatusCode::SWITCHING_PROTOCOLS {
        return Err(HeadError::SwitchingProtocols);
    }
    let http_10 = resp.version == Some(0);
    let reason = resp.reason.filter(|r| !r.is_empty()).map(|r| {
        let start = r.as_ptr() as usize - buf.as_ptr() as usize;
        (start, start + r.len())
    });
    let mut at = Located::of(buf, resp.headers);
    at.lowercase_names(&mut buf[..n]);
    let head = buf.split_to(n).freeze();
    // httparse let only visible characters, spaces and tabs through: safe to write.
    let reason = reason
        .map(|(s, e)| head.slice(s..e))
        .filter(|r| Some(&r[..]) != status.canonical_reason().map(str::as_bytes));
    let mut fields = Fields::new(head, at);
    let framing = response_body_framing(status, request_was_head, &mut fields)?;
    let keep_alive = framing.framing != Framing::UntilClose && keeps_alive(http_10, &fields);
    Ok(Some(ParsedResponse {
        parts: ResponseParts {
            status,
            reason,
            fields,
            codings: framing.codings,
        },
        framing: framing.framing,
        keep_alive,
    }))
}

/// Whether the connection stays open after this response (RFC 9112 §9.3).
fn keeps_alive(http_10: bool, fields: &Fields) -> bool {
    if http_10 {
        connection_lists(fields, b"keep-alive")
    } else {
        !connection_lists(fields, b"close")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(head: &str, request_was_head: bool) -> Result<Option<ParsedResponse>, HeadError> {
        let mut buf = BytesMut::from(head.as_bytes());
        buf.extend_from_slice(b"BODY");
        let r = take_response_head(&mut buf, request_was_head);
        match &r {
            Ok(Some(_)) => assert_eq!(&buf[..], b"BODY", "the head, and only it, is taken"),
            Ok(None) => assert_eq!(buf.len(), head.len() + 4, "nothing is taken"),
            // The connection is dropped: what was taken does not matter.
            Err(_) => {}
        }
        r
    }

    fn parse(head: &str) -> ParsedResponse {
        take(head, false).unwrap().unwrap()
    }

    #[test]
    fn length_chunked_and_until_close() {
        let r = parse("HTTP/1.1 200 OK\r\nContent-Length: 12\r\nX-A: 1\r\nx-a: 2\r\n\r\n");
        assert_eq!(r.framing, Framing::Length(12));
        assert!(r.keep_alive);
        assert_eq!(
            r.parts.fields.iter().filter(|(n, _)| *n == "x-a").count(),
            2
        );
        let r = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
        assert_eq!(r.framing, Framing::Chunked);
        assert_eq!(r.parts.codings.as_deref(), Some(&b"gzip"[..]));
        let r = parse("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(
            r.framing,
            Framing::Chunked,
            "Transfer-Encoding overrides the length"
        );
        assert_eq!(
            r.parts
                .fields
                .get(super::super::fields::Known::ContentLength),
            None
        );
        let r = parse("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n");
        assert_eq!(r.framing, Framing::UntilClose);
        assert!(!r.keep_alive);
        let r = parse("HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        assert_eq!(r.framing, Framing::Empty);
        assert!(!r.keep_alive);
    }

    #[test]
    fn bodiless_statuses_and_head_requests_have_no_body() {
        assert_eq!(
            parse("HTTP/1.1 204 No Content\r\n\r\n").framing,
            Framing::Empty
        );
        assert_eq!(
            parse("HTTP/1.1 100 Continue\r\n\r\n").framing,
            Framing::Empty
        );
        let head = "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n";
        assert_eq!(take(head, true).unwrap().unwrap().framing, Framing::Empty);
    }

    #[test]
    fn http_1_0_closes_unless_kept_alive() {
        assert!(!parse("HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\n").keep_alive);
        let r = parse("HTTP/1.0 200 OK\r\ncontent-length: 1\r\nconnection: keep-alive\r\n\r\n");
        assert!(r.keep_alive);
    }

    #[test]
    fn a_custom_reason_is_kept_for_the_client() {
        let r = parse("HTTP/1.1 404 Gone Fishing\r\ncontent-length: 0\r\n\r\n");
        assert_eq!(r.parts.reason.as_deref(), Some(&b"Gone Fishing"[..]));
        let r = parse("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
        assert_eq!(r.parts.reason, None);
    }

    #[test]
    fn bad_heads_are_named() {
        let err = |h: &str| take(h, false).unwrap_err();
        assert!(matches!(
            err("HTTP/1.1 2x0 OK\r\n\r\n"),
            HeadError::Syntax(_)
        ));
        assert!(matches!(
            err("HTTP/1.1 200 OK\r\ncontent-length: 1, 2\r\n\r\n"),
            HeadError::Framing(ResponseFramingError::ContentLength(_))
        ));
        assert!(matches!(
            err("HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n"),
            HeadError::Framing(ResponseFramingError::ContentLength(_))
        ));
        let many: String = (0..=MAX_HEADERS).map(|i| format!("x{i}: 1\r\n")).collect();
        assert_eq!(
            err(&format!("HTTP/1.1 200 OK\r\n{many}\r\n")),
            HeadError::TooManyFields
        );
        assert_eq!(
            err("HTTP/1.1 101 Switching Protocols\r\n\r\n"),
            HeadError::SwitchingProtocols
        );
        let mut partial = BytesMut::from(&b"HTTP/1.1 200 OK\r\nx: 1\r\n"[..]);
        assert!(take_response_head(&mut partial, false).unwrap().is_none());
        assert_eq!(partial.len(), 23, "nothing is taken");
        let long = format!("HTTP/1.1 200 OK\r\nx: {}", "a".repeat(MAX_HEAD_BYTES));
        assert_eq!(err(&long), HeadError::TooLong);
    }
}
