//! How a message's body is framed, for both directions, in one place (RFC 9112 §6), choosing
//! what nginx 1.22 chooses where the RFC leaves a choice.
//!
//! Why it matters: an intermediary that frames a message differently from the hop before or
//! after it desyncs the connection, and the bytes one side takes for a body the other takes
//! for a request (smuggling) or a response (every later answer goes to the wrong request).
//! So a request whose framing could be read two ways is refused and its connection closed,
//! and a response's framing is rewritten to the one the proxy itself reads.
//!
//! | message | rule | RFC 9112 | nginx 1.22 |
//! |---|---|---|---|
//! | request with `Transfer-Encoding` and `Content-Length` | `400`, connection closed | §6.1: MAY reject, MUST close after | same |
//! | request `Transfer-Encoding` not ending in `chunked` (`gzip`, `xchunked`, `chunked, identity`) | `400`, closed | §6.1: MUST answer 400 and close | `501` |
//! | request `Transfer-Encoding` ending in `chunked` after other codings (`gzip, chunked`) | `501`, closed | §6.1: SHOULD answer 501 to a coding it does not know | `501` |
//! | request `Transfer-Encoding` in HTTP/1.0 | `400`, closed | §6.1: the message is faulty | same |
//! | two `Transfer-Encoding` lines in a request | `400`, closed | choice | `501`/`400` |
//! | request `Content-Length` not one line of digits (`1, 1`, two lines, `+1`) | `400`, closed | §6.3: MUST be treated as unrecoverable | same |
//! | response with `Transfer-Encoding` and `Content-Length` | framed by `Transfer-Encoding`, `Content-Length` removed | §6.3: MUST remove it before forwarding | same |
//! | response `Transfer-Encoding` not ending in `chunked` | read until the upstream closes, `Content-Length` removed | §6.3 | same |
//! | response `Content-Length` repeated with one value (`93`, `93` or `90, 90`) | forwarded as one `Content-Length` | §6.3: MAY accept as one | same |
//! | response `Content-Length` with different values | `502` | §6.3: unrecoverable | same |

use bytes::Bytes;
use http::StatusCode;

use super::fields::{content_length, Fields, InvalidLength, Known};

/// How a request body's end is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFraming {
    Length(u64),
    Chunked,
}

/// Why a request's framing was refused; the connection is closed after the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum RequestFramingError {
    #[error(
        "the request has both Transfer-Encoding and Content-Length (a request smuggling pattern)"
    )]
    LengthAndTransferEncoding,
    #[error("the request's Transfer-Encoding does not end in chunked, so its body's end cannot be found")]
    ChunkedNotLast,
    #[error("the request's Transfer-Encoding has codings besides chunked, which the proxy does not forward")]
    UnknownTransferCoding,
    #[error("the request has Transfer-Encoding in HTTP/1.0")]
    TransferEncodingInHttp10,
    #[error("the request has more than one Transfer-Encoding line")]
    RepeatedTransferEncoding,
    #[error("the request's Content-Length is not one line of decimal digits")]
    ContentLength,
}

impl RequestFramingError {
    /// The status the client gets.
    pub(crate) fn status(self) -> u16 {
        match self {
            RequestFramingError::UnknownTransferCoding => 501,
            _ => 400,
        }
    }
}

/// The request body's framing (see the module's table): `None` for no body.
pub(crate) fn request_body_framing(
    fields: &Fields,
    http_11: bool,
) -> Result<Option<BodyFraming>, RequestFramingError> {
    let mut codings = fields.get_all(Known::TransferEncoding);
    if let Some(coding) = codings.next() {
        if !http_11 {
            return Err(RequestFramingError::TransferEncodingInHttp10);
        }
        if fields.get(Known::ContentLength).is_some() {
            return Err(RequestFramingError::LengthAndTransferEncoding);
        }
        if codings.next().is_some() {
            return Err(RequestFramingError::RepeatedTransferEncoding);
        }
        let last = coding.rsplit(|&b| b == b',').next().unwrap_or_default();
        if !last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
            return Err(RequestFramingError::ChunkedNotLast);
        }
        if !coding.trim_ascii().eq_ignore_ascii_case(b"chunked") {
            return Err(RequestFramingError::UnknownTransferCoding);
        }
        return Ok(Some(BodyFraming::Chunked));
    }
    let mut lengths = fields.get_all(Known::ContentLength);
    let Some(length) = lengths.next() else {
        return Ok(None);
    };
    let digits = length.trim_ascii();
    if lengths.next().is_some() || digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(RequestFramingError::ContentLength);
    }
    match content_length(fields) {
        Ok(Some(0)) => Ok(None),
        Ok(Some(n)) => Ok(Some(BodyFraming::Length(n))),
        // Digits only, one line: only an overflow gets here.
        Ok(None) | Err(InvalidLength) => Err(RequestFramingError::ContentLength),
    }
}

/// How a response body's end is found (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body: a `HEAD` request's response, 1xx, 204, 304, or a length of 0.
    Empty,
    Length(u64),
    Chunked,
    /// Neither length nor chunked: the body ends when the upstream closes the connection.
    UntilClose,
}

/// A response's framing, and the transfer codings other than `chunked` it was sent with (they
/// stay on the body, which the proxy passes on as it came: the client must be told of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResponseFraming {
    pub(crate) framing: Framing,
    pub(crate) codings: Option<Bytes>,
}

/// Why a response's framing cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ResponseFramingError {
    #[error("the response's Content-Length is not one number: {0:?}")]
    ContentLength(String),
}

/// The response body's framing from the status and the fields (see the module's table). Edits
/// `fields` so that what the client gets announces no framing but the proxy's: a
/// `Content-Length` beside a `Transfer-Encoding` is removed, repeated lengths become one.
pub(crate) fn response_body_framing(
    status: StatusCode,
    request_was_head: bool,
    fields: &mut Fields,
) -> Result<ResponseFraming, ResponseFramingError> {
    let bodiless = request_was_head
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    if fields.get(Known::TransferEncoding).is_some() {
        // RFC 9112 §6.3 item 3: Transfer-Encoding overrides Content-Length, which an
        // intermediary removes before forwarding.
        fields.remove(Known::ContentLength);
        if bodiless {
            return Ok(plain(Framing::Empty));
        }
        let (chunked, codings) = transfer_codings(fields);
        let framing = if chunked {
            Framing::Chunked
        } else {
            Framing::UntilClose
        };
        return Ok(ResponseFraming { framing, codings });
    }
    let length = content_length(fields).map_err(|InvalidLength| {
        let values: Vec<_> = fields
            .get_all(Known::ContentLength)
            .map(String::from_utf8_lossy)
            .collect();
        ResponseFramingError::ContentLength(format!("{values:?}"))
    })?;
    if let Some(n) = length {
        normalise_length(fields, n);
    }
    if bodiless {
        return Ok(plain(Framing::Empty));
    }
    Ok(plain(match length {
        Some(0) => Framing::Empty,
        Some(n) => Framing::Length(n),
        None => Framing::UntilClose,
    }))
}

fn plain(framing: Framing) -> ResponseFraming {
    ResponseFraming {
        framing,
        codings: None,
    }
}

/// Whether the last transfer coding is `chunked`, and the codings before it (all of them when
/// the last is not `chunked`) as one list, `identity` left out (RFC 9112 has no such coding;
/// it changes nothing).
fn transfer_codings(fields: &Fields) -> (bool, Option<Bytes>) {
    let mut all: Vec<&[u8]> = fields
        .get_all(Known::TransferEncoding)
        .flat_map(|v| v.split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case(b"identity"))
        .collect();
    let chunked = all
        .last()
        .is_some_and(|c| c.eq_ignore_ascii_case(b"chunked"));
    if chunked {
        all.pop();
    }
    let codings = (!all.is_empty()).then(|| Bytes::from(all.join(&b", "[..])));
    (chunked, codings)
}

/// One `Content-Length: n` in place of repeated lines or a list of one value.
fn normalise_length(fields: &mut Fields, n: u64) {
    let single = {
        let mut values = fields.get_all(Known::ContentLength);
        values.next().is_some_and(|v| !v.contains(&b',')) && values.next().is_none()
    };
    if single {
        return;
    }
    let value = Bytes::from(n.to_string());
    fields.insert(Known::ContentLength, value.into());
}

#[cfg(test)]
mod tests {
    use super::super::fields::tests::fields;
    use super::*;

    fn request(lines: &[(&str, &str)]) -> Result<Option<BodyFraming>, RequestFramingError> {
        request_body_framing(&fields(lines), true)
    }

    #[test]
    fn a_request_is_framed_by_one_length_or_exactly_chunked() {
        assert_eq!(request(&[]), Ok(None));
        assert_eq!(request(&[("content-length", "0")]), Ok(None));
        assert_eq!(
            request(&[("content-length", " 93 ")]),
            Ok(Some(BodyFraming::Length(93)))
        );
        for te in ["chunked", "Chunked", " CHUNKED "] {
            assert_eq!(
                request(&[("transfer-encoding", te)]),
                Ok(Some(BodyFraming::Chunked)),
                "{te:?}"
            );
        }
    }

    #[test]
    fn ambiguous_requests_are_refused_with_the_reason() {
        use RequestFramingError as E;
        let cases: &[(&[(&str, &str)], E)] = &[
            (
                &[("content-length", "5"), ("transfer-encoding", "chunked")],
                E::LengthAndTransferEncoding,
            ),
            (
                &[("transfer-encoding", "chunked"), ("content-length", "0")],
                E::LengthAndTransferEncoding,
            ),
            (
                &[("transfer-encoding", "gzip, chunked")],
                E::UnknownTransferCoding,
            ),
            (&[("transfer-encoding", "xchunked")], E::ChunkedNotLast),
            (
                &[("transfer-encoding", "chunked, identity")],
                E::ChunkedNotLast,
            ),
            (&[("transfer-encoding", "identity")], E::ChunkedNotLast),
            (&[("transfer-encoding", "gzip")], E::ChunkedNotLast),
            (&[("transfer-encoding", "chunked,")], E::ChunkedNotLast),
            (
                &[
                    ("transfer-encoding", "chunked"),
                    ("transfer-encoding", "chunked"),
                ],
                E::RepeatedTransferEncoding,
            ),
            (
                &[("content-length", "93"), ("content-length", "93")],
                E::ContentLength,
            ),
            (&[("content-length", "90, 90")], E::ContentLength),
            (&[("content-length", "+1")], E::ContentLength),
            (&[("content-length", "")], E::ContentLength),
            (
                &[("content-length", "99999999999999999999999")],
                E::ContentLength,
            ),
        ];
        for (lines, why) in cases {
            assert_eq!(request(lines), Err(*why), "{lines:?}");
        }
        assert_eq!(E::UnknownTransferCoding.status(), 501);
        assert_eq!(E::LengthAndTransferEncoding.status(), 400);
        assert_eq!(E::ChunkedNotLast.status(), 400);
        assert_eq!(
            request_body_framing(&fields(&[("transfer-encoding", "chunked")]), false),
            Err(E::TransferEncodingInHttp10)
        );
    }

    fn response(status: u16, lines: &[(&str, &str)]) -> (ResponseFraming, Vec<String>) {
        let mut f = fields(lines);
        let status = StatusCode::from_u16(status).unwrap();
        let framing = response_body_framing(status, false, &mut f).unwrap();
        let left = f
            .iter()
            .map(|(n, v)| format!("{n}: {}", String::from_utf8_lossy(v)))
            .collect();
        (framing, left)
    }

    #[test]
    fn transfer_encoding_overrides_and_removes_a_response_length() {
        let (f, left) = response(
            200,
            &[("content-length", "0"), ("transfer-encoding", "chunked")],
        );
        assert_eq!(f, plain(Framing::Chunked));
        assert_eq!(left, ["transfer-encoding: chunked"]);
        let (f, left) = response(
            200,
            &[("transfer-encoding", "identity"), ("content-length", "5")],
        );
        assert_eq!(f, plain(Framing::UntilClose));
        assert_eq!(left, ["transfer-encoding: identity"]);
        let (f, _) = response(
            200,
            &[
                ("transfer-encoding", "gzip, chunked"),
                ("content-length", "5"),
            ],
        );
        assert_eq!(f.framing, Framing::Chunked);
        assert_eq!(f.codings.as_deref(), Some(&b"gzip"[..]));
        let (f, _) = response(200, &[("transfer-encoding", "gzip")]);
        assert_eq!(f.framing, Framing::UntilClose);
        assert_eq!(f.codings.as_deref(), Some(&b"gzip"[..]));
        let (f, left) = response(
            204,
            &[("transfer-encoding", "chunked"), ("content-length", "3")],
        );
        assert_eq!(f, plain(Framing::Empty));
        assert_eq!(left, ["transfer-encoding: chunked"]);
    }

    #[test]
    fn repeated_response_lengths_become_one_or_fail() {
        let (f, left) = response(200, &[("content-length", "93"), ("content-length", "93")]);
        assert_eq!(f, plain(Framing::Length(93)));
        assert_eq!(left, ["content-length: 93"]);
        let (f, left) = response(200, &[("content-length", "90, 90"), ("x", "1")]);
        assert_eq!(f, plain(Framing::Length(90)));
        assert_eq!(left, ["content-length: 90", "x: 1"]);
        let (_, left) = response(200, &[("content-length", " 7 ")]);
        assert_eq!(left, ["content-length: 7"], "one line is left as it came");
        let mut f = fields(&[("content-length", "1, 2")]);
        assert!(matches!(
            response_body_framing(StatusCode::OK, false, &mut f),
            Err(ResponseFramingError::ContentLength(_))
        ));
    }

    #[test]
    fn bodiless_responses_have_no_body() {
        assert_eq!(response(204, &[]).0, plain(Framing::Empty));
        assert_eq!(
            response(304, &[("content-length", "5")]).0,
            plain(Framing::Empty)
        );
        assert_eq!(response(100, &[]).0, plain(Framing::Empty));
        assert_eq!(response(200, &[]).0, plain(Framing::UntilClose));
        assert_eq!(
            response(200, &[("content-length", "0")]).0,
            plain(Framing::Empty)
        );
        let mut f = fields(&[("content-length", "5")]);
        assert_eq!(
            response_body_framing(StatusCode::OK, true, &mut f),
            Ok(plain(Framing::Empty))
        );
    }
}
