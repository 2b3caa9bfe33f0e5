//! The response head as the client gets it ([`encode_response_head`]), written from the
//! [`ResponseParts`] the exchange made ready, and how its body is framed, following what hyper's
//! server wrote when it answered clients: the same framing choice, `Date` added when missing,
//! `Connection` saying what the proxy will do with the connection.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::BytesMut;
use http::StatusCode;

use super::fields::{connection_lists, content_length, put_field, Known};
use super::parts::ResponseParts;

/// How the response body goes to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResponseFraming {
    /// No body bytes (a `HEAD` request's response, 1xx, 204, 304, or an empty body).
    Empty,
    Length(u64),
    Chunked,
    /// An HTTP/1.0 client and no length: the body ends when the proxy closes the connection.
    UntilClose,
}

/// What the request said that shapes its response.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestFacts {
    pub(crate) head_only: bool,
    pub(crate) http_11: bool,
    /// The connection may carry another exchange (the client's wish and the proxy's).
    pub(crate) keep_alive: bool,
}

/// What [`encode_response_head`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Written {
    pub(crate) framing: ResponseFraming,
    /// The connection stays open after this response.
    pub(crate) keep_alive: bool,
}

/// Writes the head of `parts` to `out`. `body_ended` is true when the body is known to be
/// empty already; `exact` its length when known.
pub(crate) fn encode_response_head(
    parts: &ResponseParts,
    body_ended: bool,
    exact: Option<u64>,
    req: RequestFacts,
    out: &mut BytesMut,
) -> Written {
    let status = parts.status;
    // The status line, `Date`, a length or `Connection` the proxy adds, the blank line.
    out.reserve(parts.fields.written_len_hint() + 128);
    out.extend_from_slice(if req.http_11 {
        b"HTTP/1.1 "
    } else {
        b"HTTP/1.0 "
    });
    out.extend_from_slice(status.as_str().as_bytes());
    out.extend_from_slice(b" ");
    match &parts.reason {
        Some(reason) => out.extend_from_slice(reason),
        None => out.extend_from_slice(status.canonical_reason().unwrap_or("<none>").as_bytes()),
    }
    out.extend_from_slice(b"\r\n");
    let no_body_status = status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    let length = content_length(&parts.fields).ok().flatten();
    let has_date = parts.fields.get(Known::Date).is_some();
    let says_close = connection_lists(&parts.fields, b"close");
    if no_body_status && status != StatusCode::NOT_MODIFIED {
        // Such a response has no body: a length would be taken for one.
        for (name, value) in parts.fields.iter() {
            if name != Known::ContentLength.as_str() {
                put_field(out, name, value);
            }
        }
    } else {
        parts.fields.write_to(out);
    }
    let mut keep_alive = req.keep_alive && !says_close;
    let framing = if req.head_only || no_body_status {
        ResponseFraming::Empty
    } else if let Some(n) = length {
        ResponseFraming::Length(n)
    } else if body_ended || exact.is_some() {
        let n = if body_ended { 0 } else { exact.unwrap_or(0) };
        out.extend_from_slice(b"content-length: ");
        out.extend_from_slice(n.to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        ResponseFraming::Length(n)
    } else if req.http_11 {
        // Codings the body came with besides chunked stay on it: the client is told.
        if let Some(codings) = &parts.codings {
            put_field(
                out,
                "transfer-encoding",
                &[&codings[..], b", chunked"].concat(),
            );
        } else {
            out.extend_from_slice(b"transfer-encoding: chunked\r\n");
        }
        ResponseFraming::Chunked
    } else {
        keep_alive = false;
        ResponseFraming::UntilClose
    };
    let framing = match framing {
        ResponseFraming::Length(0) => ResponseFraming::Empty,
        f => f,
    };
    if !keep_alive && req.http_11 && !says_close {
        out.extend_from_slice(b"connection: close\r\n");
    } else if keep_alive && !req.http_11 {
        out.extend_from_slice(b"connection: keep-alive\r\n");
    }
    if !has_date {
        out.extend_from_slice(b"date: ");
        extend_date(out);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    Written {
        framing,
        keep_alive,
    }
}

thread_local! {
    /// The `Date` value of the current second: formatting one costs more than the rest of a
    /// head.
    static DATE: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

fn extend_date(out: &mut BytesMut) {
    let now = SystemTime::now();
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE.with(|d| {
        let mut d = d.borrow_mut();
        if d.0 != secs {
            *d = (secs, httpdate::fmt_http_date(now));
        }
        out.extend_from_slice(d.1.as_bytes());
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEEP: RequestFacts = RequestFacts {
        head_only: false,
        http_11: true,
        keep_alive: true,
    };

    fn head(status: u16, headers: &[(&str, &str)]) -> ResponseParts {
        ResponseParts {
            status: StatusCode::from_u16(status).unwrap(),
            reason: None,
            fields: super::super::fields::tests::fields(headers),
            codings: None,
        }
    }

    fn encode(
        p: &ResponseParts,
        ended: bool,
        exact: Option<u64>,
        req: RequestFacts,
    ) -> (String, Written) {
        let mut out = BytesMut::new();
        let w = encode_response_head(p, ended, exact, req, &mut out);
        (String::from_utf8(out.to_vec()).unwrap(), w)
    }

    #[test]
    fn a_length_passes_and_a_stream_is_chunked() {
        let p = head(
            200,
            &[
                ("content-type", "application/json"),
                ("content-length", "12"),
                ("date", "x"),
            ],
        );
        let (text, w) = encode(&p, false, Some(12), KEEP);
        assert_eq!(text, "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 12\r\ndate: x\r\n\r\n");
        assert_eq!(
            w,
            Written {
                framing: ResponseFraming::Length(12),
                keep_alive: true
            }
        );
        let p = head(200, &[("content-type", "text/event-stream"), ("date", "x")]);
        let (text, w) = encode(&p, false, None, KEEP);
        assert!(
            text.ends_with("date: x\r\ntransfer-encoding: chunked\r\n\r\n"),
            "{text}"
        );
        assert_eq!(w.framing, ResponseFraming::Chunked);
    }

    #[test]
    fn codings_besides_chunked_are_named_to_the_client() {
        let mut p = head(200, &[("date", "x")]);
        p.codings = Some(bytes::Bytes::from_static(b"gzip"));
        let (text, w) = encode(&p, false, None, KEEP);
        assert!(
            text.ends_with("date: x\r\ntransfer-encoding: gzip, chunked\r\n\r\n"),
            "{text}"
        );
        assert_eq!(w.framing, ResponseFraming::Chunked);
    }

    #[test]
    fn an_empty_body_gets_a_zero_length_and_a_date() {
        let p = head(202, &[]);
        let (text, w) = encode(&p, true, Some(0), KEEP);
        assert!(
            text.starts_with("HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\ndate: "),
            "{text}"
        );
        assert!(text.ends_with(" GMT\r\n\r\n"), "{text}");
        assert_eq!(w.framing, ResponseFraming::Empty);
    }

    #[test]
    fn closing_is_said_and_http_1_0_has_no_chunks() {
        let p = head(408, &[("connection", "close"), ("date", "x")]);
        let (text, w) = encode(&p, false, Some(3), KEEP);
        assert!(!w.keep_alive);
        assert_eq!(text.matches("connection").count(), 1, "{text}");
        let old = RequestFacts {
            http_11: false,
            keep_alive: false,
            ..KEEP
        };
        let p = head(200, &[("date", "x")]);
        let (text, w) = encode(&p, false, None, old);
        assert!(text.starts_with("HTTP/1.0 200 OK\r\n"), "{text}");
        assert_eq!(
            w,
            Written {
                framing: ResponseFraming::UntilClose,
                keep_alive: false
            }
        );
        let (text, _) = encode(
            &p,
            false,
            None,
            RequestFacts {
                keep_alive: false,
                ..KEEP
            },
        );
        assert!(text.contains("connection: close\r\n"), "{text}");
    }

    #[test]
    fn the_upstreams_own_reason_reaches_the_client() {
        let mut p = head(404, &[("date", "x")]);
        p.reason = Some(bytes::Bytes::from_static(b"Gone Fishing"));
        let (text, _) = encode(&p, true, Some(0), KEEP);
        assert!(text.starts_with("HTTP/1.1 404 Gone Fishing\r\n"), "{text}");
    }

    #[test]
    fn head_requests_and_bodiless_statuses_send_no_body() {
        let p = head(200, &[("content-length", "5"), ("date", "x")]);
        let (text, w) = encode(
            &p,
            false,
            Some(5),
            RequestFacts {
                head_only: true,
                ..KEEP
            },
        );
        assert!(text.contains("content-length: 5\r\n"));
        assert_eq!(w.framing, ResponseFraming::Empty);
        let p = head(204, &[("content-length", "0"), ("date", "x")]);
        let (text, w) = encode(&p, true, Some(0), KEEP);
        assert_eq!(text, "HTTP/1.1 204 No Content\r\ndate: x\r\n\r\n");
        assert_eq!(w.framing, ResponseFraming::Empty);
    }
}
