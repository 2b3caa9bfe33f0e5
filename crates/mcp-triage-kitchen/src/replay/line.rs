//! One capture line: its JSON text read, in one pass, by the format's one reader
//! (`mcp_triage_wire::capture::LineRead`), then checked into a [`CapturedExchange`].
//!
//! A line may be large (a long stream has thousands of `chunks` and a body of megabytes), so
//! it is not parsed into a JSON tree and then picked apart: the reader decodes `chunks` straight
//! into pairs, with its entry limit checked as they come, and the body is moved out of its
//! string. The member names are the reader's fields, so they have one home with the proxy's
//! writer. The error is what is wrong with the line; `capture` adds the line number.

use base64::Engine as _;
use bytes::Bytes;
use mcp_triage_wire::capture::{BodyEnd, CapturedRequest, ChunksRead, LineRead, ReadError};
use serde_json::Value;

use super::exchange::CapturedExchange;
use super::key::{capture_arguments_hash, path_only, ReplayKey};
use super::options::CaptureLimits;

/// What is wrong with one capture line; [`super::CaptureError::Line`] adds its number.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    /// The line is not UTF-8 text.
    #[error("not UTF-8")]
    NotUtf8,
    /// The line is not JSON text.
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// The line is JSON but not a capture line's shape (not an object, `chunks` not an array).
    #[error("{0}")]
    Shape(#[source] serde_json::Error),
    /// `chunks` has more entries than `--replay-max-chunks`, refused while it was read (the
    /// text says where, as the JSON reader's errors do).
    #[error(
        "\"chunks\" has more than {max} entries (raise --replay-max-chunks) at line {line} column {column}"
    )]
    TooManyChunks {
        /// The limit.
        max: usize,
        /// 1-based line of the text where reading stopped.
        line: usize,
        /// 1-based column of the text where reading stopped.
        column: usize,
    },
    /// `status` is missing or not a non-negative integer.
    #[error("\"status\" is not an HTTP status (an integer, 200-599)")]
    StatusNotHttp,
    /// `status` is a number HTTP does not define as a status (RFC 9110 §15: 100-599). hyper
    /// would send it as `999 <none>`, a status line no client should have to read.
    #[error(
        "\"status\" {status} is not an HTTP status (RFC 9110: 100-599), which replay cannot serve"
    )]
    StatusOutOfRange {
        /// The captured number.
        status: u64,
    },
    /// `status` is an informational head, which replay cannot serve.
    #[error("\"status\" {status} is an informational (1xx) response, which replay cannot serve")]
    StatusInformational {
        /// The captured status.
        status: u16,
    },
    /// `body` and `bodyBase64` are both present.
    #[error("a line has \"body\" or \"bodyBase64\", not both")]
    BodyTwice,
    /// `body` is not a string.
    #[error("\"body\" is not a string")]
    BodyNotString,
    /// `bodyBase64` is not a string.
    #[error("\"bodyBase64\" is not a string")]
    BodyBase64NotString,
    /// `bodyBase64` does not decode.
    #[error("\"bodyBase64\" is not base64: {0}")]
    BodyBase64(#[source] base64::DecodeError),
    /// The decoded body is over `--replay-max-body`.
    #[error(
        "the response body is {size} bytes, over the limit of {max} (raise --replay-max-body)"
    )]
    BodyTooLarge {
        /// The body's size in bytes (for `bodyBase64`, as known from the text's length).
        size: usize,
        /// The limit.
        max: usize,
    },
    /// `seq` is not a non-negative integer.
    #[error("\"seq\" is not a non-negative integer")]
    SeqNotInteger,
    /// A `tools/call` line has no `tool`.
    #[error("a tools/call line has no \"tool\"")]
    ToolMissing,
    /// `method` is present but not a string.
    #[error("\"method\" is not a string")]
    MethodNotString,
    /// Neither `method` nor `request`: the line has no key.
    #[error("a line without \"method\" needs \"request\" (its key is the HTTP method and path)")]
    RequestMissing,
    /// `headers` is not an object.
    #[error("\"headers\" is not an object")]
    HeadersNotObject,
    /// A header's value is not a string.
    #[error("header {name:?} is not a string")]
    HeaderNotString {
        /// The header's name as captured.
        name: String,
    },
    /// `headMs` is not a finite, non-negative number.
    #[error("\"headMs\" is not a non-negative number")]
    HeadMsNotNumber,
    /// A `chunks` entry is not `[atMs, bytes]`.
    #[error("chunks[{index}] is not [atMs, bytes]")]
    ChunkNotPair {
        /// The entry's 0-based index.
        index: usize,
    },
    /// `headMs` is over `--replay-max-delay`.
    #[error("\"headMs\" is {ms} ms, over the limit of {max} ms (raise --replay-max-delay)")]
    HeadTooLate {
        /// The captured delay.
        ms: f64,
        /// The limit.
        max: f64,
    },
    /// A chunk's `atMs` is over `--replay-max-delay`.
    #[error(
        "chunks[{index}] atMs is {ms} ms, over the limit of {max} ms (raise --replay-max-delay)"
    )]
    ChunkTooLate {
        /// The entry's 0-based index.
        index: usize,
        /// The captured offset.
        ms: f64,
        /// The limit.
        max: f64,
    },
    /// `end` is not one of the known endings.
    #[error("\"end\" {end} is not {words}", words = BodyEnd::listed(" or "))]
    EndUnknown {
        /// The captured value, as JSON.
        end: Value,
    },
}

impl From<ReadError> for LineError {
    fn from(e: ReadError) -> LineError {
        match e {
            ReadError::Json(e) => match e.classify() {
                serde_json::error::Category::Data => LineError::Shape(e),
                _ => LineError::NotJson(e),
            },
            ReadError::TooManyChunks { max, line, column } => {
                LineError::TooManyChunks { max, line, column }
            }
        }
    }
}

/// One line's text as a [`CapturedExchange`] within `limits`; the error says what is wrong
/// with the line (the caller names its number).
pub(super) fn exchange_of(
    line: usize,
    s: &str,
    limits: &CaptureLimits,
) -> Result<CapturedExchange, LineError> {
    let raw = LineRead::parse(s, limits.max_chunks)?;
    parse_line(line, s, raw, limits)
}

/// A [`LineRead`] as a [`CapturedExchange`]. The members are checked in a fixed order
/// (status, body, seq, key, headers, delays, end), so a line with several faults is always
/// refused for the same one.
fn parse_line(
    line: usize,
    text: &str,
    mut raw: LineRead,
    limits: &CaptureLimits,
) -> Result<CapturedExchange, LineError> {
    let status = status_of(raw.status.as_ref())?;
    let body = take_body(&mut raw, limits.max_body_bytes)?;
    let chunks = raw.chunks.take();
    let seq = match &raw.seq {
        None => line as u64,
        Some(s) => s.as_u64().ok_or(LineError::SeqNotInteger)?,
    };
    let request = raw.request.as_ref().filter(|r| !r.is_null());
    let request_body = request.and_then(request_body_of);
    let key = key_of(&raw, request, request_body.as_ref())?;
    let headers = headers_of(&raw)?;
    let (head_ms, chunks) = delays_of(raw.head_ms.as_ref(), chunks, limits.max_delay_ms)?;
    let end = end_of(&raw)?;
    let keep = limits.keep_for_readers;
    Ok(CapturedExchange {
        line,
        seq,
        key,
        request: request_body.filter(|_| keep),
        path: request.and_then(CapturedRequest::path_of).map(path_only),
        status,
        headers,
        body,
        expect_id: raw.expect_id.clone(),
        head_ms,
        chunks,
        end,
        body_truncated: raw.body_truncated.as_ref().and_then(Value::as_bool) == Some(true),
        verdict: raw
            .verdict
            .as_ref()
            .and_then(Value::as_str)
            .map(str::to_owned),
        text: if keep {
            text.to_string()
        } else {
            String::new()
        },
        era: raw
            .protocol_version
            .as_ref()
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(|v| {
                if crate::protocol::is_modern_version(v) {
                    crate::protocol::Era::Modern
                } else {
                    crate::protocol::Era::Legacy
                }
            }),
        in_session: raw
            .session_id
            .as_ref()
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty()),
    })
}

/// `status`: a final HTTP status (200-599).
fn status_of(status: Option<&Value>) -> Result<u16, LineError> {
    let status = status
        .and_then(Value::as_u64)
        .ok_or(LineError::StatusNotHttp)?;
    let status = u16::try_from(status)
        .ok()
        .filter(|s| (100..=599).contains(s))
        .ok_or(LineError::StatusOutOfRange { status })?;
    if status < 200 {
        // An informational head is not an answer: served as a final status it was an empty
        // reply, and hyper cannot send a 101 switch the kitchen does not perform.
        return Err(LineError::StatusInformational { status });
    }
    Ok(status)
}

/// The captured request's body as JSON (`request.body`, else `request.bodyBase64`); `None`
/// when it was not captured or is not JSON, which is no fault of the line.
fn request_body_of(request: &Value) -> Option<Value> {
    match CapturedRequest::bodies_of(request) {
        (Some(Value::String(b)), _) => serde_json::from_str(b).ok(),
        (_, Some(Value::String(b))) => base64::engine::general_purpose::STANDARD
            .decode(b)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok()),
        _ => None,
    }
}

/// The line's [`ReplayKey`]: from `method` (and `tool`, `argumentsHash`, the request's path)
/// for a JSON-RPC line; from the request's HTTP method and path for one without `method`.
/// A `tools/call` captured without `argumentsHash` gets it from the captured request's
/// arguments, unless `argumentsHashed` says the line stands for every call of its tool.
fn key_of(
    o: &LineRead,
    request: Option<&Value>,
    request_body: Option<&Value>,
) -> Result<ReplayKey, LineError> {
    let key = match &o.method {
        Some(Value::String(method)) => {
            let tool = o.tool.as_ref().and_then(Value::as_str).map(str::to_owned);
            // `--capture-hash-arguments`: the line stands for every call of its tool.
            let by_tool_only = o.arguments_hashed == Some(Value::Bool(true));
            let mut arguments_hash = o
                .arguments_hash
                .as_ref()
                .and_then(Value::as_str)
                .filter(|_| !by_tool_only)
                .map(str::to_owned);
            if method == "tools/call" && arguments_hash.is_none() && !by_tool_only {
                arguments_hash = Some(capture_arguments_hash(
                    request_body
                        .and_then(|b| b.get("params"))
                        .and_then(|p| p.get("arguments")),
                ));
            }
            if method == "tools/call" && tool.is_none() {
                return Err(LineError::ToolMissing);
            }
            ReplayKey::Rpc {
                method: method.clone(),
                tool,
                arguments_hash,
                path: request.and_then(CapturedRequest::path_of).map(path_only),
            }
        }
        Some(_) => return Err(LineError::MethodNotString),
        None => {
            let r = request.ok_or(LineError::RequestMissing)?;
            ReplayKey::Http {
                method: CapturedRequest::method_of(r)
                    .unwrap_or("POST")
                    .to_ascii_uppercase(),
                path: path_only(CapturedRequest::path_of(r).unwrap_or("/mcp")),
            }
        }
    };
    Ok(key)
}

/// The response headers, lower-cased: `contentType` first as `content-type`, then
/// `headers` (whose own `content-type` then gives way to it).
fn headers_of(o: &LineRead) -> Result<Vec<(String, String)>, LineError> {
    let mut headers = Vec::new();
    if let Some(ct) = o.content_type.as_ref().and_then(Value::as_str) {
        if !ct.is_empty() {
            headers.push(("content-type".to_string(), ct.to_string()));
        }
    }
    if let Some(h) = &o.headers {
        let h = h.as_object().ok_or(LineError::HeadersNotObject)?;
        for (name, value) in h {
            let value = value
                .as_str()
                .ok_or_else(|| LineError::HeaderNotString { name: name.clone() })?;
            if name.eq_ignore_ascii_case("content-type") && !headers.is_empty() {
                continue;
            }
            headers.push((name.to_ascii_lowercase(), value.to_string()));
        }
    }
    Ok(headers)
}

/// `headMs` and the chunks, each delay within `max` ms (`--replay-max-delay`), so that a
/// capture cannot hold a connection for a day. A byte count past `usize` (on a 32-bit host)
/// is an entry the kitchen cannot serve, refused as not a pair.
fn delays_of(
    head_ms: Option<&Value>,
    chunks: Option<ChunksRead>,
    max: f64,
) -> Result<(f64, Vec<(f64, usize)>), LineError> {
    let head_ms = match head_ms {
        None => 0.0,
        Some(v) => v
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .ok_or(LineError::HeadMsNotNumber)?,
    };
    let chunks = chunks
        .transpose()
        .map_err(|e| LineError::ChunkNotPair { index: e.index })?
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(index, (at, n))| {
            usize::try_from(n)
                .map(|n| (at, n))
                .map_err(|_| LineError::ChunkNotPair { index })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if head_ms > max {
        return Err(LineError::HeadTooLate { ms: head_ms, max });
    }
    if let Some((index, (at, _))) = chunks.iter().enumerate().find(|(_, (at, _))| *at > max) {
        return Err(LineError::ChunkTooLate {
            index,
            ms: *at,
            max,
        });
    }
    Ok((head_ms, chunks))
}

/// `end`: how the captured body ended ([`BodyEnd::Complete`] when absent).
fn end_of(o: &LineRead) -> Result<BodyEnd, LineError> {
    match o.end() {
        None => Ok(BodyEnd::Complete),
        Some(e) => e.map_err(|e| LineError::EndUnknown { end: e.clone() }),
    }
}

/// The response body of a line, moved out of its JSON string (not copied).
fn take_body(o: &mut LineRead, max: usize) -> Result<Bytes, LineError> {
    let too_big = |size: usize| LineError::BodyTooLarge { size, max };
    let body = match (o.body.take(), o.body_base64.take()) {
        (Some(_), Some(_)) => return Err(LineError::BodyTwice),
        (Some(Value::String(b)), None) => Bytes::from(b.into_bytes()),
        (Some(_), None) => return Err(LineError::BodyNotString),
        (None, Some(Value::String(b))) => {
            // Refused before decoding: the decoded size is known from the text's length.
            let decoded = b.trim_end_matches('=').len() / 4 * 3;
            if decoded > max {
                return Err(too_big(decoded));
            }
            Bytes::from(
                base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .map_err(LineError::BodyBase64)?,
            )
        }
        (None, Some(_)) => return Err(LineError::BodyBase64NotString),
        (None, None) => Bytes::new(),
    };
    if body.len() > max {
        return Err(too_big(body.len()));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::super::capture::{Capture, CaptureError};
    use super::super::options::CaptureLimits;
    use super::LineError;

    /// A bad line is a typed [`CaptureError::Line`]: its number, and what is wrong as a
    /// [`LineError`] carrying the facts (member, index, limit), with the same text as ever.
    #[test]
    fn line_errors_carry_the_line_and_the_fault() {
        let ok = "{\"status\":200,\"method\":\"ping\"}\n";
        let text =
            format!("{ok}\n{ok}{{\"status\":200,\"method\":\"ping\",\"headers\":{{\"x-a\":1}}}}\n");
        let e = Capture::parse(text.as_bytes()).unwrap_err();
        assert!(
            matches!(&e, CaptureError::Line { line: 4, source: LineError::HeaderNotString { name } } if name == "x-a"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "capture line 4: header \"x-a\" is not a string"
        );
        assert!(std::error::Error::source(&e).is_some());

        let limits = CaptureLimits {
            max_delay_ms: 100.0,
            ..CaptureLimits::default()
        };
        let text = b"{\"status\":200,\"method\":\"ping\",\"chunks\":[[1,1],[150.5,1]]}";
        let e = Capture::parse_with(text, &limits).unwrap_err();
        assert!(matches!(
            e,
            CaptureError::Line {
                line: 1,
                source: LineError::ChunkTooLate { index: 1, .. }
            }
        ));
        assert_eq!(
            e.to_string(),
            "capture line 1: chunks[1] atMs is 150.5 ms, over the limit of 100 ms (raise --replay-max-delay)"
        );

        let e = Capture::parse(b"{\"status\":200,\"method\":\"ping\",\"end\":7}").unwrap_err();
        assert!(matches!(
            e,
            CaptureError::Line {
                source: LineError::EndUnknown { .. },
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            "capture line 1: \"end\" 7 is not complete, upstream_closed, client_cancelled, timeout or no_response"
        );
        let e = Capture::parse(b"\xff\n").unwrap_err();
        assert!(matches!(
            e,
            CaptureError::Line {
                line: 1,
                source: LineError::NotUtf8
            }
        ));
        assert_eq!(e.to_string(), "capture line 1: not UTF-8");
        let e = Capture::parse(b"nope").unwrap_err();
        assert!(matches!(
            e,
            CaptureError::Line {
                source: LineError::NotJson(_),
                ..
            }
        ));
        assert!(
            e.to_string().starts_with("capture line 1: not JSON: "),
            "{e}"
        );
    }

    /// A `chunks` over `--replay-max-chunks` is refused while it is read, with the place the
    /// reader stopped, as the JSON reader's own errors say it.
    #[test]
    fn too_many_chunks_says_where_reading_stopped() {
        let limits = CaptureLimits {
            max_chunks: 3,
            ..CaptureLimits::default()
        };
        let text = b"{\"status\":200,\"method\":\"ping\",\"chunks\":[[0,1],[0,1],[0,1],[0,1]]}";
        let e = Capture::parse_with(text, &limits).unwrap_err();
        assert!(matches!(
            e,
            CaptureError::Line {
                line: 1,
                source: LineError::TooManyChunks {
                    max: 3,
                    line: 1,
                    column: 64
                }
            }
        ));
        assert_eq!(
            e.to_string(),
            "capture line 1: \"chunks\" has more than 3 entries (raise --replay-max-chunks) at line 1 column 64"
        );
    }

    /// Issue 41 (replay peaked at ~6x the file): a capture read for serving only keeps no
    /// second copy of its lines and no request trees, and serves the same exchanges; the file
    /// is read a line at a time, with the same answers as the text parsed whole.
    #[test]
    fn a_capture_read_for_serving_keeps_one_copy() {
        let text = include_str!("../../../mcp-triage-wire/tests/data/capture-v1.jsonl");
        let with_crlf_and_blanks = format!("\n{}\r\n\n", text.replace('\n', "\r\n\n"));
        let path = std::env::temp_dir().join(format!("m41-capture-{}.jsonl", std::process::id()));
        std::fs::write(&path, &with_crlf_and_blanks).unwrap();
        let all = Capture::read_with(&path, &CaptureLimits::default()).unwrap();
        let serving = CaptureLimits {
            keep_for_readers: false,
            ..CaptureLimits::default()
        };
        let lean = Capture::read_with(&path, &serving).unwrap();
        let _ = std::fs::remove_file(&path);
        let whole = Capture::parse(text.as_bytes()).unwrap();
        assert_eq!(all.exchanges.len(), whole.exchanges.len());
        assert_eq!(lean.exchanges.len(), whole.exchanges.len());
        assert!(whole.exchanges.iter().any(|x| x.request.is_some()));
        for ((a, l), w) in all
            .exchanges
            .iter()
            .zip(&lean.exchanges)
            .zip(&whole.exchanges)
        {
            assert_eq!((&a.key, &a.body, &a.text), (&w.key, &w.body, &w.text));
            assert_eq!(a.request, w.request);
            assert_eq!(
                (&l.key, &l.body, &l.headers, l.status),
                (&w.key, &w.body, &w.headers, w.status)
            );
            assert!(l.text.is_empty() && l.request.is_none(), "line {}", l.line);
        }
        // the byte bound holds while reading, for a text as for a file
        let small = CaptureLimits {
            max_bytes: 10,
            ..CaptureLimits::default()
        };
        let e = Capture::parse_with(text.as_bytes(), &small).unwrap_err();
        assert!(matches!(e, CaptureError::TooLarge { max: 10, .. }), "{e}");
    }

    /// Lines the proxy wrote (the capture format's golden file) load as the format reads them.
    #[test]
    fn lines_the_proxy_wrote_load() {
        use mcp_triage_wire::capture::CaptureLine;
        let text = include_str!("../../../mcp-triage-wire/tests/data/capture-v1.jsonl");
        let c = Capture::parse(text.as_bytes()).unwrap();
        assert_eq!(c.exchanges.len(), text.lines().count());
        for x in &c.exchanges {
            let line = CaptureLine::read(&x.text).unwrap();
            assert_eq!((x.seq, x.status, x.end), (line.seq, line.status, line.end));
            let chunks: Vec<(f64, u64)> = x.chunks.iter().map(|&(at, n)| (at, n as u64)).collect();
            assert_eq!(chunks, line.chunks);
            assert_eq!(x.head_ms, line.head_ms.unwrap_or(0.0));
            assert_eq!(x.body_truncated, line.body_truncated);
            assert_eq!(x.verdict.as_deref(), Some(line.verdict.as_str()));
            assert_eq!(x.expect_id, line.expect_id);
            if let Some(b) = &line.body {
                assert_eq!(&x.body[..], b.as_bytes());
            }
        }
    }

    /// Each load limit refuses the line over it, naming the line, the limit and its flag.
    #[test]
    fn load_limits_name_the_line_and_the_flag() {
        let ping = |extra: &str| format!("{{\"status\":200,\"method\":\"ping\"{extra}}}\n");
        let limits = CaptureLimits {
            max_lines: 2,
            max_chunks: 3,
            max_body_bytes: 8,
            ..CaptureLimits::default()
        };
        let cases = [
            (ping("").repeat(3), "capture line 3: the capture has more than 2 exchanges (raise --replay-max-lines)"),
            (
                ping(",\"chunks\":[[0,1],[0,1],[0,1],[0,1]]"),
                "\"chunks\" has more than 3 entries (raise --replay-max-chunks)",
            ),
            (
                ping(",\"body\":\"123456789\""),
                "capture line 1: the response body is 9 bytes, over the limit of 8 (raise --replay-max-body)",
            ),
            (
                ping(",\"bodyBase64\":\"MTIzNDU2Nzg5MDEy\""),
                "the response body is 12 bytes, over the limit of 8 (raise --replay-max-body)",
            ),
            (
                ping(",\"headMs\":86400000"),
                "capture line 1: \"headMs\" is 86400000 ms, over the limit of 60000 ms (raise --replay-max-delay)",
            ),
            (
                ping(",\"chunks\":[[1,1],[60001,1]]"),
                "chunks[1] atMs is 60001 ms, over the limit of 60000 ms",
            ),
        ];
        for (text, want) in cases {
            let e = Capture::parse_with(text.as_bytes(), &limits)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{e} / {want}");
        }
        // At the limits, the same lines load.
        let ok = ping(",\"chunks\":[[0,1],[0,1],[60000,1]],\"body\":\"123\"").repeat(2);
        let c = Capture::parse_with(ok.as_bytes(), &limits).unwrap();
        assert_eq!(c.exchanges.len(), 2);
        assert_eq!(c.exchanges[0].chunks.len(), 3);
    }

    /// A 101 (or any 1xx) is not an answer replay can give: refused at load, naming the line.
    #[test]
    fn informational_status_is_refused_at_load() {
        let text = b"{\"status\":200,\"method\":\"ping\"}\n{\"status\":101,\"method\":\"ping\"}\n";
        let e = Capture::parse(text).unwrap_err().to_string();
        assert!(
            e.starts_with("capture line 2: \"status\" 101 is an informational"),
            "{e}"
        );
    }

    /// A status HTTP does not define (RFC 9110 §15: 100-599) was served as `999 <none>`: now
    /// refused at load, naming the line and the status.
    #[test]
    fn status_outside_http_is_refused_at_load() {
        for status in [600, 999, 1000, 70_000, 0] {
            let text = format!(
                "{{\"status\":200,\"method\":\"ping\"}}\n{{\"status\":{status},\"method\":\"ping\"}}\n"
            );
            let e = Capture::parse(text.as_bytes()).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "capture line 2: \"status\" {status} is not an HTTP status"
                )),
                "{e}"
            );
        }
        let ok = b"{\"status\":599,\"method\":\"ping\"}\n";
        assert_eq!(Capture::parse(ok).unwrap().exchanges[0].status, 599);
        let e = Capture::parse(b"{\"status\":\"200\",\"method\":\"ping\"}").unwrap_err();
        assert!(
            e.to_string().contains("\"status\" is not an HTTP status"),
            "{e}"
        );
    }

    #[test]
    fn bad_lines_name_line_and_member() {
        let bad = [
            (
                &b"{\"status\":200,\"method\":\"ping\"}\nnot json\n"[..],
                "capture line 2: not JSON",
            ),
            (
                b"{\"status\":20,\"method\":\"ping\"}",
                "capture line 1: \"status\"",
            ),
            (b"{\"status\":200,\"method\":\"tools/call\"}", "no \"tool\""),
            (
                b"{\"status\":200,\"method\":\"ping\",\"end\":\"later\"}",
                "\"end\"",
            ),
            (
                b"{\"status\":200,\"method\":\"ping\",\"chunks\":[[1]]}",
                "chunks[0]",
            ),
            (b"{\"status\":200}", "needs \"request\""),
            (b"\n\n", "no exchange"),
        ];
        for (text, want) in bad {
            let e = Capture::parse(text).unwrap_err().to_string();
            assert!(e.contains(want), "{e} / {want}");
        }
    }
}
