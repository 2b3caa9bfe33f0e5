//! The capture line (`proxy --capture`, `docs/capture-format.md`, format version 1): its type,
//! which the proxy writes, and its reader, which the kitchen's replay loads.
//!
//! Why here: the proxy writes the line, and the kitchen (`kitchen --replay`) and the core
//! (`classify --batch`, the `end` words) read it. Each used to have its own copy of the member
//! names and of the `end` words, so a rename on one side would have been found by a failing
//! replay, if at all. Now [`CaptureLine`] is the one writer's type and [`LineRead`] the one
//! reader, and the tests of this module tie the two spellings together: a line written and read
//! back is equal, and the golden file (`tests/data/capture-v1.jsonl`, written by the proxy's
//! writer before it moved here) is read and written again byte for byte.
//!
//! Why a reader that gives members as JSON values instead of a `Deserialize` of
//! [`CaptureLine`]: a replay loads hand-written lines too (an exchange-file line with a
//! `method` is enough), reports one fault per line chosen in its own fixed order, and must not
//! hold a huge `chunks` array or copy a body of megabytes. So [`LineRead::parse`] reads the
//! text in one pass, decodes `chunks` straight into pairs with their entry limit checked while
//! they are read, keeps every other member as the JSON value found (the body's string is moved
//! out of it later, not copied), and leaves the checks to its caller. [`CaptureLine::read`] is
//! that reader followed by the format's types, for readers that want the whole typed line.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{DeserializeOwned, DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The `capture` member: the format's version.
pub const FORMAT_VERSION: u32 = 1;

/// How a response body ended, at the HTTP level (`end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyEnd {
    /// `complete`: the body ended normally (an SSE stream that ends cleanly without its
    /// response too; its verdict says so).
    Complete,
    /// `upstream_closed`: the upstream's connection broke the body off (a cut stream, a reset;
    /// for `wrap`, the server closed its stdout before answering).
    UpstreamClosed,
    /// `client_cancelled`: the client went away before the end.
    ClientCancelled,
    /// `timeout`: a time limit of the recorder ended it.
    Timeout,
    /// `no_response`: no response head came; `status` is the recorder's own answer.
    NoResponse,
}

impl BodyEnd {
    /// Every ending, in the order the format lists them.
    pub const ALL: [BodyEnd; 5] = [
        BodyEnd::Complete,
        BodyEnd::UpstreamClosed,
        BodyEnd::ClientCancelled,
        BodyEnd::Timeout,
        BodyEnd::NoResponse,
    ];

    /// The word in the line (serde writes the same; a test checks it).
    pub fn as_str(self) -> &'static str {
        match self {
            BodyEnd::Complete => "complete",
            BodyEnd::UpstreamClosed => "upstream_closed",
            BodyEnd::ClientCancelled => "client_cancelled",
            BodyEnd::Timeout => "timeout",
            BodyEnd::NoResponse => "no_response",
        }
    }

    /// Every word, in order, joined by `, ` except the last, joined by `last` (for messages
    /// that name what `end` may be).
    pub fn listed(last: &str) -> String {
        let mut out = String::new();
        for (i, e) in BodyEnd::ALL.iter().enumerate() {
            if i + 1 == BodyEnd::ALL.len() {
                out.push_str(last);
            } else if i > 0 {
                out.push_str(", ");
            }
            out.push_str(e.as_str());
        }
        out
    }

    /// The ending a word names; None for any other word.
    pub fn parse(word: &str) -> Option<BodyEnd> {
        BodyEnd::ALL.into_iter().find(|e| e.as_str() == word)
    }
}

impl fmt::Display for BodyEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `request` member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CapturedRequest {
    /// The HTTP method (absent for stdio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Path and query, query secrets redacted (absent for stdio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Headers minus secrets, lower-cased, one value per name.
    pub headers: BTreeMap<String, String>,
    /// The body, when it is UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The body in base64, when it is not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
    /// The body was cut (or, larger than the proxy reads, not kept at all).
    pub body_truncated: bool,
    /// The body was left out (a request that is not JSON-RPC); written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub body_omitted: bool,
}

impl CapturedRequest {
    /// The path of a `request` member as read (`request.path`), when it is a string.
    pub fn path_of(request: &Value) -> Option<&str> {
        request.get("path").and_then(Value::as_str)
    }

    /// The HTTP method of a `request` member as read (`request.method`), when it is a string.
    pub fn method_of(request: &Value) -> Option<&str> {
        request.get("method").and_then(Value::as_str)
    }

    /// The `body` and `bodyBase64` members of a `request` member as read.
    pub fn bodies_of(request: &Value) -> (Option<&Value>, Option<&Value>) {
        (request.get("body"), request.get("bodyBase64"))
    }
}

/// One line of a capture file. Serialised with `serde_json`, it is the line the proxy writes:
/// members in this order, optional ones left out when absent (flags when false).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaptureLine {
    /// [`FORMAT_VERSION`].
    pub capture: u32,
    /// The exchange's number in the proxy run, from 1.
    pub seq: u64,
    /// RFC 3339 UTC time the request head arrived.
    pub at: String,
    /// `http` or `stdio`.
    pub transport: String,
    /// The response status (the proxy's own answer without a response head).
    pub status: u16,
    /// The response's `content-type`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The response body, when it is UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The response body in base64, when it is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
    /// The response body was left out (the request was not JSON-RPC).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub body_omitted: bool,
    /// The request's JSON-RPC id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect_id: Option<Value>,
    /// The response headers minus secrets.
    pub headers: BTreeMap<String, String>,
    /// The exchange's protocol version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// The request's JSON-RPC method.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// For `tools/call`: the tool's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// For `tools/call`: `sha256:` and the hex digest of the canonical arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments_hash: Option<String>,
    /// `--capture-hash-arguments`: the request's argument values are hashes.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub arguments_hashed: bool,
    /// The request.
    pub request: CapturedRequest,
    /// Milliseconds from the request head to the response head (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_ms: Option<f64>,
    /// `[atMs, bytes]` per frame of the response body, `atMs` from the response head.
    pub chunks: Vec<(f64, u64)>,
    /// How the body ended.
    pub end: BodyEnd,
    /// The response body was cut at the capture's per-exchange limit.
    pub body_truncated: bool,
    /// The proxy's verdict for the exchange.
    pub verdict: String,
    /// The exchange's session id, renamed `s1`, `s2`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

impl CaptureLine {
    /// Appends the line's JSON text (no newline) to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        serde_json::to_writer(out, self).expect("a capture line serialises");
    }

    /// Reads a whole line (with [`LineRead::parse`], no chunk limit) into the format's types.
    pub fn read(text: &str) -> Result<CaptureLine, FormatError> {
        LineRead::parse(text, usize::MAX)
            .map_err(FormatError::Read)?
            .into_line()
    }
}

/// Why a line's text could not be read at all (what [`LineRead::parse`] refuses). Not
/// `non_exhaustive`: a reader that maps these to its own errors should fail to build when one
/// is added.
#[derive(Debug)]
pub enum ReadError {
    /// Not JSON text, or JSON of the wrong shape (`serde_json`'s `classify` tells which).
    Json(serde_json::Error),
    /// `chunks` has more entries than the reader was allowed; refused while it was read.
    TooManyChunks {
        /// The limit.
        max: usize,
        /// Where the reader stopped: 1-based line of the text.
        line: usize,
        /// Where the reader stopped: 1-based column of the text.
        column: usize,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Json(e) => e.fmt(f),
            ReadError::TooManyChunks { max, line, column } => write!(
                f,
                "\"chunks\" has more than {max} entries at line {line} column {column}"
            ),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Json(e) => Some(e),
            ReadError::TooManyChunks { .. } => None,
        }
    }
}

/// A `chunks` entry that is not `[atMs, bytes]` (a finite, non-negative number and a count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkNotPair {
    /// The first such entry's 0-based index.
    pub index: usize,
}

impl fmt::Display for ChunkNotPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "chunks[{}] is not [atMs, bytes]", self.index)
    }
}

impl std::error::Error for ChunkNotPair {}

/// Why a line is not a whole line of the format ([`CaptureLine::read`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum FormatError {
    /// The text could not be read.
    Read(ReadError),
    /// A `chunks` entry is not a pair.
    Chunk(ChunkNotPair),
    /// A member the format requires is absent.
    Missing(&'static str),
    /// A member is not of the format's type.
    Member(&'static str, serde_json::Error),
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::Read(e) => e.fmt(f),
            FormatError::Chunk(e) => e.fmt(f),
            FormatError::Missing(name) => write!(f, "{name:?} is missing"),
            FormatError::Member(name, e) => write!(f, "{name:?}: {e}"),
        }
    }
}

impl std::error::Error for FormatError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FormatError::Read(e) => Some(e),
            FormatError::Chunk(e) => Some(e),
            FormatError::Missing(_) => None,
            FormatError::Member(_, e) => Some(e),
        }
    }
}

/// `chunks` as read: the pairs, or the first entry that is not one.
pub type ChunksRead = Result<Vec<(f64, u64)>, ChunkNotPair>;

/// One capture line as read, before its members are checked: each member of the format as the
/// JSON value found (None: absent), `chunks` already decoded. Members the format does not
/// name are read and dropped; a repeated member keeps its last value.
#[derive(Debug, Default)]
pub struct LineRead {
    /// `capture`.
    pub capture: Option<Value>,
    /// `seq`.
    pub seq: Option<Value>,
    /// `at`.
    pub at: Option<Value>,
    /// `transport`.
    pub transport: Option<Value>,
    /// `status`.
    pub status: Option<Value>,
    /// `contentType`.
    pub content_type: Option<Value>,
    /// `body` (take it to move its string out).
    pub body: Option<Value>,
    /// `bodyBase64`.
    pub body_base64: Option<Value>,
    /// `bodyOmitted`.
    pub body_omitted: Option<Value>,
    /// `expectId`.
    pub expect_id: Option<Value>,
    /// `headers`.
    pub headers: Option<Value>,
    /// `protocolVersion`.
    pub protocol_version: Option<Value>,
    /// `method`.
    pub method: Option<Value>,
    /// `tool`.
    pub tool: Option<Value>,
    /// `argumentsHash`.
    pub arguments_hash: Option<Value>,
    /// `argumentsHashed`.
    pub arguments_hashed: Option<Value>,
    /// `request` (see [`CapturedRequest::path_of`] and its siblings for its members).
    pub request: Option<Value>,
    /// `headMs`.
    pub head_ms: Option<Value>,
    /// `chunks`, decoded as read: the pairs or the first bad entry.
    pub chunks: Option<ChunksRead>,
    /// `end` (see [`LineRead::end`]).
    pub end: Option<Value>,
    /// `bodyTruncated`.
    pub body_truncated: Option<Value>,
    /// `verdict`.
    pub verdict: Option<Value>,
    /// `sessionId`.
    pub session_id: Option<Value>,
}

impl LineRead {
    /// Reads one line's JSON text in one pass, refusing a `chunks` of more than `max_chunks`
    /// entries as soon as the one past the limit is seen (so a huge array is never held).
    pub fn parse(text: &str, max_chunks: usize) -> Result<LineRead, ReadError> {
        let over = Cell::new(false);
        let mut de = serde_json::Deserializer::from_str(text);
        let read = LineSeed {
            max_chunks,
            over: &over,
        }
        .deserialize(&mut de)
        .and_then(|read| de.end().map(|()| read));
        read.map_err(|e| {
            if over.get() {
                ReadError::TooManyChunks {
                    max: max_chunks,
                    line: e.line(),
                    column: e.column(),
                }
            } else {
                ReadError::Json(e)
            }
        })
    }

    /// `end` as the format's word: None when absent, `Err` with the value found when it is not
    /// one of [`BodyEnd::ALL`]'s words.
    pub fn end(&self) -> Option<Result<BodyEnd, &Value>> {
        self.end
            .as_ref()
            .map(|e| e.as_str().and_then(BodyEnd::parse).ok_or(e))
    }

    /// The line in the format's types: every member the format requires present, every
    /// member of its type.
    pub fn into_line(self) -> Result<CaptureLine, FormatError> {
        Ok(CaptureLine {
            capture: required(self.capture, "capture")?,
            seq: required(self.seq, "seq")?,
            at: required(self.at, "at")?,
            transport: required(self.transport, "transport")?,
            status: required(self.status, "status")?,
            content_type: optional(self.content_type, "contentType")?,
            body: optional(self.body, "body")?,
            body_base64: optional(self.body_base64, "bodyBase64")?,
            body_omitted: flag(self.body_omitted, "bodyOmitted")?,
            expect_id: self.expect_id,
            headers: required(self.headers, "headers")?,
            protocol_version: optional(self.protocol_version, "protocolVersion")?,
            method: optional(self.method, "method")?,
            tool: optional(self.tool, "tool")?,
            arguments_hash: optional(self.arguments_hash, "argumentsHash")?,
            arguments_hashed: flag(self.arguments_hashed, "argumentsHashed")?,
            request: required(self.request, "request")?,
            head_ms: optional(self.head_ms, "headMs")?,
            chunks: self
                .chunks
                .ok_or(FormatError::Missing("chunks"))?
                .map_err(FormatError::Chunk)?,
            end: required(self.end, "end")?,
            body_truncated: required(self.body_truncated, "bodyTruncated")?,
            verdict: required(self.verdict, "verdict")?,
            session_id: optional(self.session_id, "sessionId")?,
        })
    }

    /// Where the member named `name` goes (None: a member the format does not name).
    fn slot(&mut self, name: &str) -> Option<&mut Option<Value>> {
        Some(match name {
            "capture" => &mut self.capture,
            "seq" => &mut self.seq,
            "at" => &mut self.at,
            "transport" => &mut self.transport,
            "status" => &mut self.status,
            "contentType" => &mut self.content_type,
            "body" => &mut self.body,
            "bodyBase64" => &mut self.body_base64,
            "bodyOmitted" => &mut self.body_omitted,
            "expectId" => &mut self.expect_id,
            "headers" => &mut self.headers,
            "protocolVersion" => &mut self.protocol_version,
            "method" => &mut self.method,
            "tool" => &mut self.tool,
            "argumentsHash" => &mut self.arguments_hash,
            "argumentsHashed" => &mut self.arguments_hashed,
            "request" => &mut self.request,
            "headMs" => &mut self.head_ms,
            "end" => &mut self.end,
            "bodyTruncated" => &mut self.body_truncated,
            "verdict" => &mut self.verdict,
            "sessionId" => &mut self.session_id,
            _ => return None,
        })
    }
}

fn member<T: DeserializeOwned>(v: Value, name: &'static str) -> Result<T, FormatError> {
    serde_json::from_value(v).map_err(|e| FormatError::Member(name, e))
}

fn required<T: DeserializeOwned>(v: Option<Value>, name: &'static str) -> Result<T, FormatError> {
    member(v.ok_or(FormatError::Missing(name))?, name)
}

fn optional<T: DeserializeOwned>(
    v: Option<Value>,
    name: &'static str,
) -> Result<Option<T>, FormatError> {
    v.map(|v| member(v, name)).transpose()
}

/// A member written only when true.
fn flag(v: Option<Value>, name: &'static str) -> Result<bool, FormatError> {
    Ok(optional(v, name)?.unwrap_or(false))
}

/// Reads a [`LineRead`] with the chunk limit at hand (a seed: the limit is not in the text).
/// `over` says afterwards whether the read stopped at the limit.
struct LineSeed<'c> {
    max_chunks: usize,
    over: &'c Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for LineSeed<'_> {
    type Value = LineRead;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<LineRead, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LineSeed<'_> {
    type Value = LineRead;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a capture line (a JSON object)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<LineRead, A::Error> {
        let mut read = LineRead::default();
        while let Some(k) = m.next_key::<String>()? {
            if k == "chunks" {
                read.chunks = Some(m.next_value_seed(ChunksSeed {
                    max: self.max_chunks,
                    over: self.over,
                })?);
            } else {
                // Unknown members are read as values too (and dropped), so the text a line
                // must be is the same whatever members it has.
                let v: Value = m.next_value()?;
                if let Some(slot) = read.slot(&k) {
                    *slot = Some(v);
                }
            }
        }
        Ok(read)
    }
}

/// `chunks`: the pairs, or the first bad entry; more than `max` entries is an error as soon as
/// it is seen.
struct ChunksSeed<'c> {
    max: usize,
    over: &'c Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for ChunksSeed<'_> {
    type Value = ChunksRead;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ChunksRead, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ChunksSeed<'_> {
    type Value = ChunksRead;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("\"chunks\" as an array of [atMs, bytes]")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<ChunksRead, A::Error> {
        let max = self.max;
        let mut out = Vec::with_capacity(s.size_hint().unwrap_or(0).min(max).min(1 << 16));
        let mut bad = None;
        let mut i = 0usize;
        // Each entry is a two-element JSON value, dropped as soon as it is checked.
        while let Some(pair) = s.next_element::<Value>()? {
            if i == max {
                self.over.set(true);
                return Err(A::Error::custom(format!(
                    "\"chunks\" has more than {max} entries"
                )));
            }
            if bad.is_none() {
                match chunk_pair(&pair) {
                    Some(p) => out.push(p),
                    None => bad = Some(ChunkNotPair { index: i }),
                }
            }
            i += 1;
        }
        Ok(bad.map_or(Ok(out), Err))
    }
}

/// One `chunks` entry as `(atMs, bytes)`: a finite, non-negative offset and a byte count.
fn chunk_pair(pair: &Value) -> Option<(f64, u64)> {
    let p = pair.as_array().filter(|p| p.len() == 2)?;
    let at = p[0].as_f64().filter(|f| f.is_finite() && *f >= 0.0)?;
    Some((at, p[1].as_u64()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_words_are_serdes_words() {
        for e in BodyEnd::ALL {
            assert_eq!(serde_json::to_value(e).unwrap(), e.as_str());
            assert_eq!(BodyEnd::parse(e.as_str()), Some(e));
            assert_eq!(e.to_string(), e.as_str());
        }
        assert_eq!(BodyEnd::parse("finished"), None);
        assert_eq!(
            BodyEnd::listed(" or "),
            "complete, upstream_closed, client_cancelled, timeout or no_response"
        );
    }

    #[test]
    fn the_chunk_limit_is_checked_while_reading() {
        let text = r#"{"status":200,"chunks":[[0,1],[0,1],[0,1]],"body":"x"}"#;
        let e = LineRead::parse(text, 2).unwrap_err();
        assert!(
            matches!(
                e,
                ReadError::TooManyChunks {
                    max: 2,
                    line: 1,
                    ..
                }
            ),
            "{e:?}"
        );
        let read = LineRead::parse(text, 3).unwrap();
        assert_eq!(read.chunks.unwrap().unwrap(), vec![(0.0, 1); 3]);
        // A bad entry is reported by index; the limit still counts every entry.
        let text = r#"{"chunks":[[0,1],[-1,1],[0],[0,1]]}"#;
        let read = LineRead::parse(text, 4).unwrap();
        assert!(matches!(read.chunks, Some(Err(ChunkNotPair { index: 1 }))));
        assert!(matches!(
            LineRead::parse(text, 3),
            Err(ReadError::TooManyChunks { max: 3, .. })
        ));
    }

    #[test]
    fn members_land_in_their_slots_and_unknown_ones_are_dropped() {
        let text = r#"{"status":200,"end":"later","outputSchema":{"a":1},"body":"b","body":"c"}"#;
        let read = LineRead::parse(text, 1).unwrap();
        assert_eq!(read.status, Some(Value::from(200)));
        assert_eq!(read.body, Some(Value::from("c")), "the last one wins");
        assert_eq!(read.end(), Some(Err(&Value::from("later"))));
        assert!(read.chunks.is_none());
        assert!(matches!(
            read.into_line(),
            Err(FormatError::Missing("capture"))
        ));
        for (bad, syntax) in [("[1]", false), ("{", true), (r#"{"chunks":3}"#, false)] {
            match LineRead::parse(bad, 1) {
                Err(ReadError::Json(e)) => assert_eq!(e.is_syntax() || e.is_eof(), syntax, "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }
}
