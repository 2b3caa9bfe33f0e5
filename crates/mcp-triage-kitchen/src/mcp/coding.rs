//! The kitchen compresses its answers when asked (`contentEncoding`, a parameter every scenario
//! takes), so that a client's, a proxy's or a gateway's handling of compressed MCP responses
//! can be tested end to end against any scenario: a server behind compressing middleware or
//! nginx's `gzip on` answers so whenever the client asks, and some whether it asks or not.
//!
//! The body is compressed as it goes out, each chunk flushed (a sync flush), so an SSE stream
//! stays a stream: every event reaches the client when the plain one would. Only answers to a
//! POST are compressed (JSON bodies and SSE streams); GET streams, empty answers and responses
//! that cut the connection are left as they are. The journal's `answer` is the core's verdict
//! of the plain bytes (the tap sits inside the compression), and its headers show the coding.

use std::io::Write;

use axum::body::Body;
use axum::http::{header, HeaderValue, Response};
use bytes::Bytes;
use futures_util::StreamExt;

/// A coding the kitchen answers in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ResponseCoding {
    Gzip,
    Deflate,
    Br,
    Zstd,
}

/// The order `accept` prefers codings in.
const PREFERRED: [ResponseCoding; 4] = [
    ResponseCoding::Zstd,
    ResponseCoding::Br,
    ResponseCoding::Gzip,
    ResponseCoding::Deflate,
];

impl ResponseCoding {
    fn name(self) -> &'static str {
        match self {
            ResponseCoding::Gzip => "gzip",
            ResponseCoding::Deflate => "deflate",
            ResponseCoding::Br => "br",
            ResponseCoding::Zstd => "zstd",
        }
    }

    /// The coding for an instance's `contentEncoding` and the request's `Accept-Encoding`.
    pub(super) fn choose(param: &str, accept_encoding: Option<&str>) -> Option<ResponseCoding> {
        match param {
            "accept" => accepted(accept_encoding.unwrap_or("")),
            other => PREFERRED.into_iter().find(|c| c.name() == other),
        }
    }

    /// `resp` with its body compressed as it goes out and `Content-Encoding` set; unchanged
    /// when it has no body or a coding already.
    pub(super) fn apply(self, resp: Response<Body>) -> Response<Body> {
        use axum::body::HttpBody;
        let empty = resp.body().size_hint().exact() == Some(0);
        if empty || resp.headers().contains_key(header::CONTENT_ENCODING) {
            return resp;
        }
        let (mut parts, body) = resp.into_parts();
        parts.headers.remove(header::CONTENT_LENGTH);
        parts.headers.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(self.name()),
        );
        let state = (body.into_data_stream(), Some(Encoder::new(self)));
        let stream = futures_util::stream::unfold(state, |(mut inner, mut enc)| async move {
            loop {
                let e = enc.as_mut()?;
                match inner.next().await {
                    Some(Ok(chunk)) => {
                        let out = e.push(&chunk);
                        if !out.is_empty() {
                            return Some((Ok(out), (inner, enc)));
                        }
                    }
                    // a cut stays a cut: no trailer after it
                    Some(Err(err)) => {
                        let err = std::io::Error::other(err);
                        return Some((Err(err), (inner, None)));
                    }
                    None => {
                        let out = enc.take()?.finish();
                        return Some((Ok(out), (inner, None)));
                    }
                }
            }
        });
        Response::from_parts(parts, Body::from_stream(stream))
    }
}

/// The first coding of [`PREFERRED`] that `Accept-Encoding` allows (RFC 9110 §12.5.3: a
/// coding named, or `*`, with a q-value above 0).
fn accepted(accept_encoding: &str) -> Option<ResponseCoding> {
    let mut allowed: Vec<(String, bool)> = Vec::new();
    for item in accept_encoding.split(',') {
        let mut parts = item.split(';');
        let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let refused = parts.any(|p| {
            let p = p.trim();
            p.strip_prefix("q=")
                .or_else(|| p.strip_prefix("Q="))
                .and_then(|q| q.trim().parse::<f32>().ok())
                .is_some_and(|q| q <= 0.0)
        });
        if !name.is_empty() {
            allowed.push((name, !refused));
        }
    }
    let ok = |name: &str| {
        allowed
            .iter()
            .find(|(n, _)| n == name)
            .or_else(|| allowed.iter().find(|(n, _)| n == "*"))
            .is_some_and(|(_, ok)| *ok)
    };
    PREFERRED.into_iter().find(|c| ok(c.name()))
}

/// One response's compressor; every `push` ends with a flush so what was pushed goes out.
enum Encoder {
    Gzip(flate2::write::GzEncoder<Vec<u8>>),
    Deflate(flate2::write::ZlibEncoder<Vec<u8>>),
    Br(Box<brotli::CompressorWriter<Vec<u8>>>),
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
}

impl Encoder {
    fn new(coding: ResponseCoding) -> Encoder {
        let level = flate2::Compression::default();
        match coding {
            ResponseCoding::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(Vec::new(), level)),
            ResponseCoding::Deflate => {
                Encoder::Deflate(flate2::write::ZlibEncoder::new(Vec::new(), level))
            }
            ResponseCoding::Br => Encoder::Br(Box::new(brotli::CompressorWriter::new(
                Vec::new(),
                4096,
                5,
                22,
            ))),
            ResponseCoding::Zstd => Encoder::Zstd(
                zstd::stream::write::Encoder::new(Vec::new(), 3).expect("a zstd context"),
            ),
        }
    }

    /// Compresses `chunk` and flushes: the bytes to send now. Writing into a `Vec` cannot fail.
    fn push(&mut self, chunk: &[u8]) -> Bytes {
        let out = match self {
            Encoder::Gzip(e) => write_flush(e, chunk),
            Encoder::Deflate(e) => write_flush(e, chunk),
            Encoder::Br(e) => write_flush(e.as_mut(), chunk),
            Encoder::Zstd(e) => write_flush(e, chunk),
        };
        Bytes::from(out)
    }

    /// The end of the stream (gzip's trailer, zstd's last block, ...).
    fn finish(self) -> Bytes {
        let out = match self {
            Encoder::Gzip(e) => e.finish().unwrap_or_default(),
            Encoder::Deflate(e) => e.finish().unwrap_or_default(),
            Encoder::Br(e) => e.into_inner(),
            Encoder::Zstd(e) => e.finish().unwrap_or_default(),
        };
        Bytes::from(out)
    }
}

/// Writes and flushes through `w`, whose inner writer is a `Vec`, and takes what it holds.
fn write_flush<W: Write + Inner>(w: &mut W, chunk: &[u8]) -> Vec<u8> {
    let _ = w.write_all(chunk);
    let _ = w.flush();
    std::mem::take(w.inner())
}

/// The output buffer under an encoder.
trait Inner {
    fn inner(&mut self) -> &mut Vec<u8>;
}

impl Inner for flate2::write::GzEncoder<Vec<u8>> {
    fn inner(&mut self) -> &mut Vec<u8> {
        self.get_mut()
    }
}

impl Inner for flate2::write::ZlibEncoder<Vec<u8>> {
    fn inner(&mut self) -> &mut Vec<u8> {
        self.get_mut()
    }
}

impl Inner for brotli::CompressorWriter<Vec<u8>> {
    fn inner(&mut self) -> &mut Vec<u8> {
        self.get_mut()
    }
}

impl Inner for zstd::stream::write::Encoder<'static, Vec<u8>> {
    fn inner(&mut self) -> &mut Vec<u8> {
        self.get_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_triage_core::http::decode::{ContentDecoder, DecodeLimits};

    #[test]
    fn accept_encoding_picks_the_first_preferred_coding_allowed() {
        let c = |a: &str| ResponseCoding::choose("accept", Some(a));
        assert_eq!(c("gzip, deflate"), Some(ResponseCoding::Gzip));
        assert_eq!(c("gzip;q=1, br;q=0.5"), Some(ResponseCoding::Br));
        assert_eq!(c("zstd;q=0, br;q=0, gzip"), Some(ResponseCoding::Gzip));
        assert_eq!(c("*"), Some(ResponseCoding::Zstd));
        assert_eq!(c("*;q=0, deflate"), Some(ResponseCoding::Deflate));
        assert_eq!(c("identity"), None);
        assert_eq!(ResponseCoding::choose("accept", None), None);
        assert_eq!(ResponseCoding::choose("br", None), Some(ResponseCoding::Br));
        assert_eq!(ResponseCoding::choose("identity", Some("gzip")), None);
    }

    #[tokio::test]
    async fn a_streamed_answer_is_compressed_event_by_event() {
        for coding in PREFERRED {
            let events = ["data: 1\n\n", "data: 2\n\n", "data: 3\n\n"];
            let body = Body::from_stream(futures_util::stream::iter(
                events.map(|e| Ok::<_, std::io::Error>(Bytes::from_static(e.as_bytes()))),
            ));
            let resp = coding.apply(Response::new(body));
            assert_eq!(resp.headers()[header::CONTENT_ENCODING], coding.name());
            let mut d = ContentDecoder::for_codings([coding.name()], DecodeLimits::NONE)
                .unwrap()
                .unwrap();
            let mut stream = resp.into_body().into_data_stream();
            let mut decoded = Vec::new();
            // each event decodes from the chunk it went out in, before the stream's end
            for want in events {
                let chunk = stream.next().await.unwrap().unwrap();
                let mut got = Vec::new();
                let _ = d.feed(&chunk, &mut |p| {
                    got.extend_from_slice(p);
                    Ok(std::ops::ControlFlow::Continue(()))
                });
                assert_eq!(String::from_utf8(got).unwrap(), want, "{coding:?}");
                decoded.extend_from_slice(want.as_bytes());
            }
            while let Some(chunk) = stream.next().await {
                let _ = d.feed(&chunk.unwrap(), &mut |_| {
                    Ok(std::ops::ControlFlow::Continue(()))
                });
            }
            assert_eq!(d.finish(), Ok(()), "{coding:?}");
        }
    }

    #[test]
    fn an_empty_answer_is_left_alone() {
        let resp = ResponseCoding::Gzip.apply(Response::new(Body::empty()));
        assert!(resp.headers().get(header::CONTENT_ENCODING).is_none());
    }
}
