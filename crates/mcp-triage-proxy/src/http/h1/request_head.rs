//! The request head as the upstream gets it ([`encode_request_head`]), written from the
//! [`RequestParts`] the client side made ready (the upstream's `Host`, `Via`), in origin form,
//! and how its body is framed.
//!
//! The framing follows what hyper's client did when it forwarded, so an upstream sees the same
//! bytes as before: a `Content-Length` the client sent is kept; a body whose length is known
//! gets one; a body of unknown length is sent chunked, whatever the method (a `GET` with a
//! chunked body gets it forwarded, as nginx forwards it: a body read from the client and not
//! sent would be counted in the record as a request the upstream never saw).

use bytes::{Bytes, BytesMut};

use super::fields::{content_length, FieldValue, Known};
use super::parts::RequestParts;

/// How the request body goes upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestFraming {
    /// No body bytes are sent (any the client sends are not forwarded).
    Empty,
    /// The body's bytes as they are, this many.
    Length(u64),
    /// Each frame as a chunk, then the last chunk.
    Chunked,
}

/// Bodies up to this size get room behind the head in its buffer (see [`encode_request_head`]).
const SMALL_BODY: usize = 16 * 1024;

/// Writes the head of `parts` to `out` and says how the body follows. `body_ended` is true when
/// the body is known to be empty already; `exact` its length when known.
///
/// May add `Content-Length` or `Transfer-Encoding: chunked` to `parts.fields` (see the module
/// doc); hop-by-hop headers must be gone already.
pub(crate) fn encode_request_head(
    parts: &mut RequestParts,
    body_ended: bool,
    exact: Option<u64>,
    out: &mut BytesMut,
) -> RequestFraming {
    let framing = request_framing(parts, body_ended, exact);
    let path = parts.path();
    // The request line (method, path, version) and the blank line; and room for a small body,
    // which the writer appends to the head to send both at once (growing the buffer then
    // moved the head: about 400 instructions per `tools/call`).
    let body_room = match framing {
        RequestFraming::Length(n) if n <= SMALL_BODY as u64 => n as usize,
        _ => 0,
    };
    out.reserve(parts.fields.written_len_hint() + path.len() + 32 + body_room);
    for part in [
        parts.method.as_str().as_bytes(),
        b" ",
        path.as_bytes(),
        b" HTTP/1.1\r\n",
    ] {
        out.extend_from_slice(part);
    }
    parts.fields.write_to(out);
    out.extend_from_slice(b"\r\n");
    framing
}

fn request_framing(
    parts: &mut RequestParts,
    body_ended: bool,
    exact: Option<u64>,
) -> RequestFraming {
    if body_ended {
        return RequestFraming::Empty;
    }
    if let Ok(Some(n)) = content_length(&parts.fields) {
        return RequestFraming::Length(n);
    }
    match exact {
        Some(n) => {
            let value = FieldValue::from(Bytes::from(n.to_string()));
            parts.fields.insert(Known::ContentLength, value);
            RequestFraming::Length(n)
        }
        None => {
            parts.fields.remove(Known::ContentLength);
            let chunked = FieldValue::from_static("chunked");
            parts.fields.insert(Known::TransferEncoding, chunked);
            RequestFraming::Chunked
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(method: &str, headers: &[(&str, &str)]) -> RequestParts {
        RequestParts {
            method: http::Method::from_bytes(method.as_bytes()).unwrap(),
            uri: http::Uri::from_static("/mcp?x=1"),
            http_11: true,
            fields: super::super::fields::tests::fields(headers),
        }
    }

    fn encode(p: &mut RequestParts, ended: bool, exact: Option<u64>) -> (String, RequestFraming) {
        let mut out = BytesMut::new();
        let f = encode_request_head(p, ended, exact, &mut out);
        (String::from_utf8(out.to_vec()).unwrap(), f)
    }

    #[test]
    fn a_length_the_client_sent_is_kept() {
        let mut p = parts("POST", &[("host", "up:1"), ("content-length", "2")]);
        let (head, f) = encode(&mut p, false, Some(2));
        assert_eq!(f, RequestFraming::Length(2));
        assert_eq!(
            head,
            "POST /mcp?x=1 HTTP/1.1\r\nhost: up:1\r\ncontent-length: 2\r\n\r\n"
        );
    }

    #[test]
    fn an_unknown_length_is_chunked_whatever_the_method() {
        let mut p = parts("POST", &[("host", "up:1")]);
        let (head, f) = encode(&mut p, false, None);
        assert_eq!(f, RequestFraming::Chunked);
        assert!(
            head.ends_with("host: up:1\r\ntransfer-encoding: chunked\r\n\r\n"),
            "{head}"
        );
        let mut p = parts("GET", &[("host", "up:1")]);
        assert_eq!(encode(&mut p, false, None).1, RequestFraming::Chunked);
        let mut p = parts("DELETE", &[]);
        let (head, f) = encode(&mut p, false, Some(3));
        assert_eq!(f, RequestFraming::Length(3));
        assert!(head.contains("content-length: 3\r\n"), "{head}");
    }

    #[test]
    fn an_ended_body_sends_no_bytes() {
        let mut p = parts("POST", &[("content-length", "0")]);
        let (head, f) = encode(&mut p, true, Some(0));
        assert_eq!(f, RequestFraming::Empty);
        assert!(head.contains("content-length: 0\r\n"));
    }
}
