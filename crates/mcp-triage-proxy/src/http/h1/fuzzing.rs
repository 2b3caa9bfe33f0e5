//! The invariants of the proxy's HTTP/1.1 parsers, as functions of arbitrary bytes that panic
//! when one breaks: what the fuzz targets of `fuzz/` (`h1_request`, `h1_response`,
//! `h1_chunked`) run, and what `tests/fuzz_corpus.rs` runs over the checked-in corpus on
//! stable, so a crash a fuzzer once found stays a test. Not an API: `#[doc(hidden)]`.
//!
//! Each checks the parser against a second reading of the same bytes: the head fed in pieces
//! against the head whole, and what the proxy writes on against `httparse`'s reading of it,
//! which must frame the body exactly as the proxy does. A head the proxy rewrote so that the
//! next hop frames it differently is how a desync starts.

use bytes::BytesMut;

use super::body::{BodyDecoder, Step};
use super::chunked::{ChunkedDecoder, ChunkedError};
use super::framing::{BodyFraming, Framing};
use super::incoming_request::{head_may_be_complete, take_request_head, RequestHeadError};
use super::outgoing_response::{encode_response_head, RequestFacts, ResponseFraming};
use super::request_head::{encode_request_head, RequestFraming};
use super::response_head::take_response_head;

/// How a message written by the proxy is framed when `httparse` reads its head and RFC 9112
/// §6.3 is applied to it: `None` for a head that does not parse or frames ambiguously.
#[derive(Debug, PartialEq, Eq)]
enum Reread {
    Empty,
    Length(u64),
    Chunked,
    UntilClose,
}

fn reread(head: &[u8], request: bool, bodiless: bool) -> Option<Reread> {
    let mut fields = [httparse::EMPTY_HEADER; 256];
    let headers = if request {
        let mut r = httparse::Request::new(&mut fields);
        match r.parse(head) {
            Ok(httparse::Status::Complete(n)) if n == head.len() => r.headers.to_vec(),
            _ => return None,
        }
    } else {
        let mut r = httparse::Response::new(&mut fields);
        match r.parse(head) {
            Ok(httparse::Status::Complete(n)) if n == head.len() => r.headers.to_vec(),
            _ => return None,
        }
    };
    let all = |name: &str| -> Vec<&[u8]> {
        headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
            .collect()
    };
    let (te, cl) = (all("transfer-encoding"), all("content-length"));
    if !te.is_empty() && !cl.is_empty() || te.len() > 1 || cl.len() > 1 {
        return None;
    }
    if bodiless {
        return Some(Reread::Empty);
    }
    if let Some(te) = te.first() {
        let last = te.rsplit(|&b| b == b',').next()?.trim_ascii();
        return Some(if last.eq_ignore_ascii_case(b"chunked") {
            Reread::Chunked
        } else if request {
            return None;
        } else {
            Reread::UntilClose
        });
    }
    match cl.first() {
        Some(v) => {
            let n: u64 = std::str::from_utf8(v).ok()?.trim().parse().ok()?;
            Some(if n == 0 {
                Reread::Empty
            } else {
                Reread::Length(n)
            })
        }
        None if request => Some(Reread::Empty),
        None => Some(Reread::UntilClose),
    }
}

/// A request head: parsed whole and fed a byte at a time (through the same end-of-head search
/// the connection uses) it gives the same answer; when accepted, the head the upstream gets
/// re-reads with the framing the proxy uses for the body.
pub fn request_head(data: &[u8]) {
    let mut whole = BytesMut::from(data);
    let first = take_request_head(&mut whole);
    let mut scanned = 0;
    let mut fed = BytesMut::new();
    let mut piecewise: Option<Result<usize, RequestHeadError>> = None;
    for (i, &b) in data.iter().enumerate() {
        fed.extend_from_slice(&[b]);
        if !head_may_be_complete(&fed, &mut scanned) {
            continue;
        }
        match take_request_head(&mut fed) {
            Ok(None) => {}
            Ok(Some(_)) => {
                piecewise = Some(Ok(i + 1 - fed.len()));
                break;
            }
            Err(e) => {
                piecewise = Some(Err(e));
                break;
            }
        }
    }
    let parsed = match first {
        Ok(None) => {
            assert!(
                piecewise.is_none(),
                "fed in pieces, a partial head completed"
            );
            return;
        }
        // Refused whole: fed in pieces, refused the same way once its end came (before it,
        // the connection waits for the end, bounded by the head's size limit and timeout).
        Err(e) => {
            assert!(
                piecewise.is_none() || piecewise == Some(Err(e.clone())),
                "refused whole as {e:?}, fed in pieces {piecewise:?}"
            );
            return;
        }
        Ok(Some(parsed)) => parsed,
    };
    assert_eq!(
        piecewise,
        Some(Ok(data.len() - whole.len())),
        "the head ends at the same byte whole and fed in pieces"
    );
    let mut parts = parsed.parts;
    super::super::headers::strip_hop_by_hop(&mut parts.fields);
    let ended = parsed.framing.is_none();
    let exact = match parsed.framing {
        Some(BodyFraming::Length(n)) => Some(n),
        None => Some(0),
        Some(BodyFraming::Chunked) => None,
    };
    let mut out = BytesMut::new();
    let framing = encode_request_head(&mut parts, ended, exact, &mut out);
    let expected = match framing {
        RequestFraming::Empty => Reread::Empty,
        RequestFraming::Length(n) => Reread::Length(n),
        RequestFraming::Chunked => Reread::Chunked,
    };
    assert_eq!(
        reread(&out, true, false),
        Some(expected),
        "the upstream frames the forwarded request as the proxy sends it: {:?}",
        String::from_utf8_lossy(&out)
    );
}

/// A response head: when accepted, what the client gets (for an HTTP/1.1 keep-alive request)
/// re-reads with the framing the proxy uses to write the body, never both lengths.
pub fn response_head(data: &[u8]) {
    let Some((&knobs, data)) = data.split_first() else {
        return;
    };
    let request_was_head = knobs & 1 == 1;
    let mut buf = BytesMut::from(data);
    let Ok(Some(parsed)) = take_response_head(&mut buf, request_was_head) else {
        return;
    };
    let mut parts = parsed.parts;
    super::super::headers::strip_hop_by_hop(&mut parts.fields);
    let (ended, exact) = match parsed.framing {
        Framing::Empty => (true, Some(0)),
        Framing::Length(n) => (false, Some(n)),
        Framing::Chunked | Framing::UntilClose => (false, None),
    };
    let facts = RequestFacts {
        head_only: request_was_head,
        http_11: true,
        keep_alive: true,
    };
    let mut out = BytesMut::new();
    let written = encode_response_head(&parts, ended, exact, facts, &mut out);
    let status = parts.status;
    let bodiless = request_was_head
        || status.is_informational()
        || status.as_u16() == 204
        || status.as_u16() == 304;
    let expected = match written.framing {
        ResponseFraming::Empty => Reread::Empty,
        ResponseFraming::Length(n) => Reread::Length(n),
        ResponseFraming::Chunked => Reread::Chunked,
        ResponseFraming::UntilClose => Reread::UntilClose,
    };
    assert_eq!(
        reread(&out, false, bodiless),
        Some(expected),
        "the client frames the response as the proxy writes it: {:?}",
        String::from_utf8_lossy(&out)
    );
    if let (Framing::Length(n), ResponseFraming::Length(m)) = (parsed.framing, written.framing) {
        assert_eq!(n, m, "the length the client is told is the length read");
    }
}

/// A chunked body (the first byte is the piece size): decoded fed in pieces of that size it
/// gives the same data, the same error and leaves the same bytes as decoded whole.
pub fn chunked_body(data: &[u8]) {
    let Some((&step, wire)) = data.split_first() else {
        return;
    };
    let step = usize::from(step.max(1));
    let whole = decode(wire, wire.len().max(1));
    let pieces = decode(wire, step);
    assert_eq!(whole, pieces, "whole and in pieces of {step}");
    if let Ok((body, _)) = &whole {
        // What the proxy sends on, chunked again, decodes to the same body.
        let mut again = BytesMut::new();
        super::chunked::encode_chunk(&mut again, body);
        again.extend_from_slice(super::chunked::LAST_CHUNK);
        assert_eq!(decode(&again, 7), Ok((body.clone(), Some(Vec::new()))));
    }
}

/// Decodes `wire` fed `step` bytes at a time through the body decoder: the data, and the
/// bytes left after the end (`None` when the end never came).
fn decode(wire: &[u8], step: usize) -> Result<(Vec<u8>, Option<Vec<u8>>), ChunkedError> {
    let mut d = BodyDecoder::Chunked(ChunkedDecoder::default());
    let mut buf = BytesMut::new();
    let mut data = Vec::new();
    let mut fed = 0;
    loop {
        match d.step(&mut buf)? {
            Step::Data(b) => data.extend_from_slice(&b),
            Step::End => {
                let mut rest = buf.to_vec();
                rest.extend_from_slice(&wire[fed..]);
                return Ok((data, Some(rest)));
            }
            Step::NeedMore if fed < wire.len() => {
                let end = (fed + step).min(wire.len());
                buf.extend_from_slice(&wire[fed..end]);
                fed = end;
            }
            Step::NeedMore => return Ok((data, None)),
        }
    }
}
