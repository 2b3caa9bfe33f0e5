//! `kitchen --replay FILE.jsonl`: serve the exchanges a `proxy --capture` recorded, as a
//! scenario of their own.
//!
//! A failure seen in production can then be met again by any client, and graded by `judge`,
//! without the server that produced it. The rules are fixed in `docs/capture-format.md`
//! (section *Replay*); in short:
//!
//! - Each request has a key: `(method, tool, argumentsHash)` for a JSON-RPC request (`tool`
//!   and `argumentsHash` only for `tools/call`), `(HTTP method, path without query)` otherwise.
//!   The *n*-th request with a key gets the *n*-th captured line with that key (in `seq`
//!   order); past the last one the last is served again, and the journal says so.
//! - A request with no captured line gets the kitchen's own answer for `initialize`,
//!   `notifications/*`, `tools/list` (the tools seen in the capture) and `ping`; anything else a
//!   JSON-RPC `-32601` naming the missing key.
//! - The captured status, headers (hop-by-hop ones dropped, `Content-Length` recomputed) and
//!   body are sent with the response's JSON-RPC `id` rewritten to the new request's id when it
//!   equals the captured `expectId` (a different one, a wrong-id failure, stays). The body goes
//!   out in the captured chunks at their `atMs` offsets (divided by [`ReplayOptions::speed`]),
//!   after `headMs`; an `end` of `upstream_closed` (or `client_cancelled`, or a body cut by the
//!   capture's size limit) closes the connection after the last chunk without the final chunk
//!   of a chunked body, as the upstream did; `timeout` keeps the stream open until the client
//!   gives up; `no_response` with status 502 (the upstream answered nothing) drops the
//!   connection without a response, with 504 or 408 sends that status (the proxy's answer).
//!
//! The kitchen depends on no other crate of this workspace, so the `argumentsHash` of a request
//! is computed here with the journal's canonical JSON (object keys sorted, no white space).
//!
//! Every request is journaled as `/mcp` requests are, as a [`crate::journal::JournalEntry`]
//! (the fields `judge` grades: `httpMethod`, `method`, `id`, `tool`, `era`, `session`, `status`,
//! `retry`, `issued`, headers; `executed` is `null`, no tool runs here), plus `replay`: which
//! captured line was served (`seq`, `nth` of `of`, `pastEnd`), or `unmatched` with the key and
//! what the kitchen answered instead.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue, Response, StatusCode};
use axum::Router;
use base64::Engine as _;
use bytes::Bytes;
use serde_json::{json, Map, Value};

use crate::journal;
use crate::server::KitchenHandle;
use crate::state::{KitchenError, KitchenOptions, Shared};
use crate::{host_check, protocol, Kitchen};

/// Name shown in `X-Kitchen-Scenario` and the journal's `scenario` for replayed answers.
pub const REPLAY_SCENARIO: &str = "replay";

/// Parses `--replay-speed` (the kitchen's and the judge's): a positive, finite number.
pub fn parse_speed(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a positive number")),
    }
}

/// Default bound on a capture file read for replay (the capture's own default file size).
pub const DEFAULT_MAX_CAPTURE_BYTES: u64 = 256 * 1024 * 1024;

/// Default bound on one captured delay (`headMs`, a chunk's `atMs`), in milliseconds: a line
/// asking for more is refused at load, so that a capture cannot hold a connection for a day.
pub const DEFAULT_MAX_DELAY_MS: f64 = 60_000.0;

/// Default bound on the exchanges of one capture file (`--replay-max-lines`).
pub const DEFAULT_MAX_LINES: usize = 1_000_000;

/// Default bound on the `chunks` entries of one line (`--replay-max-chunks`): the capture's
/// own cap (it folds later frames into the last entry), so any capture it wrote loads.
pub const DEFAULT_MAX_CHUNKS: usize = 65_536;

/// Default bound on one line's decoded response body (`--replay-max-body`).
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Parses `--replay-max-delay`: a duration such as `60s`, `1500ms`, `2m` or plain seconds.
pub fn parse_max_delay(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60_000.0)
    } else {
        (t, 1000.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v * scale),
        _ => Err(format!(
            "{s:?} is not a duration (e.g. 60s, 1500ms, 2m, or seconds)"
        )),
    }
}

/// What a capture file may hold, checked at load so that a bad line is named there and not
/// met as a misbehaving replay later.
#[derive(Clone, Copy, Debug)]
pub struct CaptureLimits {
    /// The largest file read, in bytes (`--replay-max-bytes`).
    pub max_bytes: u64,
    /// The largest captured delay, `headMs` or a chunk's `atMs`, in milliseconds
    /// (`--replay-max-delay`).
    pub max_delay_ms: f64,
    /// The most exchanges (non-blank lines) in the file (`--replay-max-lines`).
    pub max_lines: usize,
    /// The most `chunks` entries on one line (`--replay-max-chunks`): each is kept and turned
    /// into a piece of the body per request, so a line of millions would cost that per reader.
    pub max_chunks: usize,
    /// The largest response body of one line, decoded, in bytes (`--replay-max-body`).
    pub max_body_bytes: usize,
}

impl Default for CaptureLimits {
    fn default() -> Self {
        CaptureLimits {
            max_bytes: DEFAULT_MAX_CAPTURE_BYTES,
            max_delay_ms: DEFAULT_MAX_DELAY_MS,
            max_lines: DEFAULT_MAX_LINES,
            max_chunks: DEFAULT_MAX_CHUNKS,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

/// How a replay runs.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// Divides every captured delay (`headMs`, chunk `atMs`): 2 replays twice as fast, 0.5 at
    /// half speed. Must be positive and finite.
    pub speed: f64,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions { speed: 1.0 }
    }
}

/// Why a capture file cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// A line is not a capture line; `line` is 1-based.
    #[error("capture line {line}: {why}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// The file holds no exchange at all.
    #[error("the capture holds no exchange")]
    Empty,
    /// The file is larger than the limit.
    #[error("the capture is {size} bytes, over the limit of {max} (raise --replay-max-bytes)")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// The file has more exchanges than the limit; `line` is the first one over it.
    #[error(
        "capture line {line}: the capture has more than {max} exchanges (raise --replay-max-lines)"
    )]
    TooManyLines {
        /// 1-based line number of the first exchange over the limit.
        line: usize,
        /// The limit.
        max: usize,
    },
    /// The file cannot be read.
    #[error("cannot read the capture: {0}")]
    Io(#[from] std::io::Error),
    /// Speed not positive and finite.
    #[error("--replay-speed must be a positive number, got {0}")]
    Speed(f64),
}

/// What a request is matched by.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReplayKey {
    /// One JSON-RPC request or notification.
    Rpc {
        /// Its method.
        method: String,
        /// `params.name` of a `tools/call`.
        tool: Option<String>,
        /// `sha256:<hex>` of the canonical JSON of a `tools/call`'s arguments.
        arguments_hash: Option<String>,
        /// The endpoint's path without the query, so a gateway's capture of several servers
        /// replays each on its own path; `None` for a line captured without `request.path`
        /// (it answers on any path).
        path: Option<String>,
    },
    /// Anything else: a GET stream, a batch, a non-MCP path.
    Http {
        /// HTTP method.
        method: String,
        /// Path without the query.
        path: String,
    },
}

impl ReplayKey {
    /// The key without its arguments hash, for a `tools/call` that has one (None otherwise):
    /// what a line captured with `--capture-hash-arguments` is keyed by.
    fn by_tool_only(&self) -> Option<ReplayKey> {
        match self {
            ReplayKey::Rpc {
                method,
                tool,
                arguments_hash: Some(_),
                path,
            } => Some(ReplayKey::Rpc {
                method: method.clone(),
                tool: tool.clone(),
                arguments_hash: None,
                path: path.clone(),
            }),
            _ => None,
        }
    }

    /// The key without its path, for an Rpc key that has one: what a line captured without
    /// `request.path` is keyed by.
    fn on_any_path(&self) -> Option<ReplayKey> {
        match self {
            ReplayKey::Rpc {
                method,
                tool,
                arguments_hash,
                path: Some(_),
            } => Some(ReplayKey::Rpc {
                method: method.clone(),
                tool: tool.clone(),
                arguments_hash: arguments_hash.clone(),
                path: None,
            }),
            _ => None,
        }
    }

    /// This key for a request on `path` (an Rpc key's path; other keys have theirs).
    pub fn at_path(self, at: &str) -> ReplayKey {
        match self {
            ReplayKey::Rpc {
                method,
                tool,
                arguments_hash,
                ..
            } => ReplayKey::Rpc {
                method,
                tool,
                arguments_hash,
                path: Some(path_only(at)),
            },
            other => other,
        }
    }

    /// The keys a request's key may have been captured under besides itself, most specific
    /// first: without its path, by tool only, by tool only without its path.
    fn fallbacks(&self) -> impl Iterator<Item = ReplayKey> + '_ {
        let by_tool = self.by_tool_only();
        let by_tool_any = by_tool.as_ref().and_then(ReplayKey::on_any_path);
        self.on_any_path()
            .into_iter()
            .chain(by_tool)
            .chain(by_tool_any)
    }
}

impl std::fmt::Display for ReplayKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayKey::Rpc {
                method,
                tool,
                arguments_hash,
                path,
            } => {
                f.write_str(method)?;
                if let Some(t) = tool {
                    write!(f, " {t}")?;
                }
                if let Some(h) = arguments_hash {
                    write!(f, " {h}")?;
                }
                if let Some(p) = path {
                    write!(f, " on {p}")?;
                }
                Ok(())
            }
            ReplayKey::Http { method, path } => write!(f, "{method} {path}"),
        }
    }
}

/// How a captured response body ended (`end`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The whole body arrived.
    Complete,
    /// The upstream ended it early (a cut stream).
    UpstreamClosed,
    /// The client went away first.
    ClientCancelled,
    /// The proxy stopped waiting.
    Timeout,
    /// No response head came; `status` is the proxy's own 502/504.
    NoResponse,
}

impl End {
    fn parse(s: &str) -> Option<End> {
        Some(match s {
            "complete" => End::Complete,
            "upstream_closed" => End::UpstreamClosed,
            "client_cancelled" => End::ClientCancelled,
            "timeout" => End::Timeout,
            "no_response" => End::NoResponse,
            _ => return None,
        })
    }
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            End::Complete => "complete",
            End::UpstreamClosed => "upstream_closed",
            End::ClientCancelled => "client_cancelled",
            End::Timeout => "timeout",
            End::NoResponse => "no_response",
        }
    }
}

/// One captured exchange.
#[derive(Clone, Debug)]
pub struct CapturedExchange {
    /// 1-based line in the file.
    pub line: usize,
    /// `seq` (the line number when absent).
    pub seq: u64,
    /// What requests it answers.
    pub key: ReplayKey,
    /// The request's JSON body, when captured and JSON.
    pub request: Option<Value>,
    /// The request's path without the query (`request.path`), when captured.
    pub path: Option<String>,
    /// Response status.
    pub status: u16,
    /// Response headers as captured (`contentType` first as `content-type`).
    pub headers: Vec<(String, String)>,
    /// Response body bytes as captured.
    pub body: Bytes,
    /// The id the response should carry (`expectId`).
    pub expect_id: Option<Value>,
    /// Milliseconds from request head to response head.
    pub head_ms: f64,
    /// `[atMs, bytes]` per frame.
    pub chunks: Vec<(f64, usize)>,
    /// How the body ended.
    pub end: End,
    /// The body was cut at the capture's size limit.
    pub body_truncated: bool,
    /// The proxy's verdict, if recorded.
    pub verdict: Option<String>,
    /// The line's text, so readers (the exchange-file classifier) can use it as it is.
    pub text: String,
}

/// A parsed capture file.
#[derive(Clone, Debug)]
pub struct Capture {
    /// Exchanges in `seq` order.
    pub exchanges: Vec<CapturedExchange>,
}

/// `sha256:<hex>` of the canonical JSON of tool arguments (absent arguments hash as `{}`):
/// the capture's `argumentsHash`.
pub fn capture_arguments_hash(arguments: Option<&Value>) -> String {
    let empty = Value::Object(Map::new());
    mcp_triage_wire::canonical::ArgumentsDigest::of(arguments.unwrap_or(&empty)).prefixed()
}

/// The key of a JSON-RPC message (`None` when `msg` is not one request or notification).
pub fn rpc_key(msg: &Value) -> Option<ReplayKey> {
    let method = msg.get("method")?.as_str()?.to_string();
    let (tool, arguments_hash) = if method == "tools/call" {
        let params = msg.get("params");
        (
            params
                .and_then(|p| p.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            Some(capture_arguments_hash(
                params.and_then(|p| p.get("arguments")),
            )),
        )
    } else {
        (None, None)
    };
    Some(ReplayKey::Rpc {
        method,
        tool,
        arguments_hash,
        path: None,
    })
}

fn path_only(path: &str) -> String {
    path.split('?').next().unwrap_or("").to_string()
}

impl Capture {
    /// The MCP endpoint's path in the capture: the path of its first JSON-RPC request (so a
    /// client replayed at the same path meets the `(HTTP method, path)` keys of GET streams and
    /// answers), `/mcp` when none was captured.
    pub fn mcp_path(&self) -> String {
        self.exchanges
            .iter()
            .filter(|x| matches!(x.key, ReplayKey::Rpc { .. }))
            .find_map(|x| x.path.clone())
            .unwrap_or_else(|| "/mcp".to_string())
    }

    /// Read and parse a capture file of at most `max_bytes` (other limits: their defaults).
    pub fn read(path: &std::path::Path, max_bytes: u64) -> Result<Capture, CaptureError> {
        let limits = CaptureLimits {
            max_bytes,
            ..CaptureLimits::default()
        };
        Capture::read_with(path, &limits)
    }

    /// Read and parse a capture file within `limits`.
    pub fn read_with(
        path: &std::path::Path,
        limits: &CaptureLimits,
    ) -> Result<Capture, CaptureError> {
        let size = std::fs::metadata(path)?.len();
        if size > limits.max_bytes {
            return Err(CaptureError::TooLarge {
                size,
                max: limits.max_bytes,
            });
        }
        let text = std::fs::read(path)?;
        Capture::parse_with(&text, limits)
    }

    /// Parse capture lines (blank lines are skipped) with the default limits.
    pub fn parse(text: &[u8]) -> Result<Capture, CaptureError> {
        Capture::parse_with(text, &CaptureLimits::default())
    }

    /// Parse capture lines (blank lines are skipped). Each line is parsed once, in one pass,
    /// with its `chunks` decoded straight into pairs (no JSON tree of them) and its body moved,
    /// not copied, into the exchange: load time and memory are linear in the file.
    pub fn parse_with(text: &[u8], limits: &CaptureLimits) -> Result<Capture, CaptureError> {
        let mut exchanges = Vec::new();
        for (i, raw) in text.split(|b| *b == b'\n').enumerate() {
            let line = i + 1;
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            if raw.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let err = |why: String| CaptureError::Line { line, why };
            let s = std::str::from_utf8(raw).map_err(|_| err("not UTF-8".into()))?;
            if exchanges.len() == limits.max_lines {
                return Err(CaptureError::TooManyLines {
                    line,
                    max: limits.max_lines,
                });
            }
            let raw = raw_line(s, limits.max_chunks).map_err(|e| {
                err(match e.classify() {
                    serde_json::error::Category::Data => e.to_string(),
                    _ => format!("not JSON: {e}"),
                })
            })?;
            exchanges.push(parse_line(line, s, raw, limits).map_err(err)?);
        }
        if exchanges.is_empty() {
            return Err(CaptureError::Empty);
        }
        exchanges.sort_by_key(|x| x.seq);
        Ok(Capture { exchanges })
    }

    /// The tools the capture shows: the last captured `tools/list` result's tools, else one
    /// entry (name, an open object schema) per tool called.
    pub fn tools(&self) -> Vec<Value> {
        self.tools_at(None)
    }

    /// [`Capture::tools`] of the endpoint at `path`: its own last `tools/list` (a gateway's
    /// capture holds several servers, each with its tools), else any endpoint's.
    pub fn tools_at(&self, path: Option<&str>) -> Vec<Value> {
        let on_path = |x: &&CapturedExchange| path.is_none() || x.path.as_deref() == path;
        let lists = || {
            self.exchanges.iter().rev().filter(
                |x| matches!(&x.key, ReplayKey::Rpc { method, .. } if method == "tools/list"),
            )
        };
        for x in lists().filter(on_path).chain(lists()) {
            if let Some(msg) = response_message(&x.body) {
                if let Some(t) = msg["result"]["tools"].as_array() {
                    return t.clone();
                }
            }
        }
        // A set beside the list: a capture with 100k tools must not cost 100k² compares.
        let mut names: Vec<&str> = Vec::new();
        let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        for x in &self.exchanges {
            if let ReplayKey::Rpc {
                tool: Some(t),
                method,
                ..
            } = &x.key
            {
                if method == "tools/call" && seen.insert(t.as_str()) {
                    names.push(t);
                }
            }
        }
        names
            .into_iter()
            .map(|n| json!({ "name": n, "inputSchema": { "type": "object" } }))
            .collect()
    }
}

/// One capture line as parsed: every member as JSON except `chunks`, which a long stream can
/// have many of, decoded straight into `(atMs, bytes)` pairs.
struct RawLine {
    members: Map<String, Value>,
    chunks: Option<Result<Vec<(f64, usize)>, String>>,
}

/// Parses a [`RawLine`] with the chunk limit at hand (a seed, as the limit is not in the text).
struct LineSeed(usize);

impl<'de> serde::de::DeserializeSeed<'de> for LineSeed {
    type Value = RawLine;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<RawLine, D::Error> {
        struct V(usize);
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawLine;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a capture line (a JSON object)")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<RawLine, A::Error> {
                let mut raw = RawLine {
                    members: Map::new(),
                    chunks: None,
                };
                while let Some(k) = m.next_key::<String>()? {
                    if k == "chunks" {
                        raw.chunks = Some(m.next_value_seed(ChunksSeed(self.0))?);
                    } else {
                        let v: Value = m.next_value()?;
                        raw.members.insert(k, v);
                    }
                }
                Ok(raw)
            }
        }
        d.deserialize_map(V(self.0))
    }
}

/// `chunks`: the pairs, or what is wrong with the first bad entry; more than the limit
/// (`.0`) is an error as soon as it is seen, so a huge array is never held.
struct ChunksSeed(usize);

impl<'de> serde::de::DeserializeSeed<'de> for ChunksSeed {
    type Value = Result<Vec<(f64, usize)>, String>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V(usize);
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Result<Vec<(f64, usize)>, String>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"chunks\" as an array of [atMs, bytes]")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<Self::Value, A::Error> {
                let max = self.0;
                let mut out = Vec::with_capacity(s.size_hint().unwrap_or(0).min(max).min(1 << 16));
                let mut bad = None;
                let mut i = 0usize;
                // Each entry is a two-element JSON value, dropped as soon as it is checked.
                while let Some(pair) = s.next_element::<Value>()? {
                    if i == max {
                        return Err(serde::de::Error::custom(format!(
                            "\"chunks\" has more than {max} entries (raise --replay-max-chunks)"
                        )));
                    }
                    if bad.is_none() {
                        match chunk_pair(&pair) {
                            Some(p) => out.push(p),
                            None => bad = Some(format!("chunks[{i}] is not [atMs, bytes]")),
                        }
                    }
                    i += 1;
                }
                Ok(bad.map_or(Ok(out), Err))
            }
        }
        d.deserialize_seq(V(self.0))
    }
}

/// One line's text as a [`RawLine`], `chunks` limited to `max_chunks` entries.
fn raw_line(s: &str, max_chunks: usize) -> Result<RawLine, serde_json::Error> {
    use serde::de::DeserializeSeed as _;
    let mut de = serde_json::Deserializer::from_str(s);
    let raw = LineSeed(max_chunks).deserialize(&mut de)?;
    de.end()?;
    Ok(raw)
}

fn chunk_pair(pair: &Value) -> Option<(f64, usize)> {
    let p = pair.as_array().filter(|p| p.len() == 2)?;
    let at = p[0].as_f64().filter(|f| f.is_finite() && *f >= 0.0)?;
    let n = p[1].as_u64().and_then(|n| usize::try_from(n).ok())?;
    Some((at, n))
}

fn parse_line(
    line: usize,
    text: &str,
    raw: RawLine,
    limits: &CaptureLimits,
) -> Result<CapturedExchange, String> {
    let RawLine {
        mut members,
        chunks,
    } = raw;
    let status = members
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .filter(|s| (100..=999).contains(s))
        .ok_or("\"status\" is not an HTTP status (100-999)")?;
    if status < 200 {
        // An informational head is not an answer: served as a final status it was an empty
        // reply, and hyper cannot send a 101 switch the kitchen does not perform.
        return Err(format!(
            "\"status\" {status} is an informational (1xx) response, which replay cannot serve"
        ));
    }
    let body = take_body(&mut members, limits.max_body_bytes)?;
    let o = &members;
    let seq = match o.get("seq") {
        None => line as u64,
        Some(s) => s.as_u64().ok_or("\"seq\" is not a non-negative integer")?,
    };
    let request = o.get("request").filter(|r| !r.is_null());
    let request_body: Option<Value> = match request {
        Some(r) => match (r.get("body"), r.get("bodyBase64")) {
            (Some(Value::String(b)), _) => serde_json::from_str(b).ok(),
            (_, Some(Value::String(b))) => base64::engine::general_purpose::STANDARD
                .decode(b)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok()),
            _ => None,
        },
        None => None,
    };
    let key = match o.get("method") {
        Some(Value::String(method)) => {
            let tool = o.get("tool").and_then(Value::as_str).map(str::to_owned);
            // `--capture-hash-arguments`: the line stands for every call of its tool.
            let by_tool_only = o.get("argumentsHashed") == Some(&Value::Bool(true));
            let mut arguments_hash = o
                .get("argumentsHash")
                .and_then(Value::as_str)
                .filter(|_| !by_tool_only)
                .map(str::to_owned);
            if method == "tools/call" && arguments_hash.is_none() && !by_tool_only {
                arguments_hash = Some(capture_arguments_hash(
                    request_body
                        .as_ref()
                        .and_then(|b| b.get("params"))
                        .and_then(|p| p.get("arguments")),
                ));
            }
            if method == "tools/call" && tool.is_none() {
                return Err("a tools/call line has no \"tool\"".into());
            }
            ReplayKey::Rpc {
                method: method.clone(),
                tool,
                arguments_hash,
                path: request
                    .and_then(|r| r.get("path"))
                    .and_then(Value::as_str)
                    .map(path_only),
            }
        }
        Some(_) => return Err("\"method\" is not a string".into()),
        None => {
            let r = request.ok_or(
                "a line without \"method\" needs \"request\" (its key is the HTTP method and path)",
            )?;
            ReplayKey::Http {
                method: r
                    .get("method")
                    .and_then(Value::as_str)
                    .unwrap_or("POST")
                    .to_ascii_uppercase(),
                path: path_only(r.get("path").and_then(Value::as_str).unwrap_or("/mcp")),
            }
        }
    };
    let mut headers = Vec::new();
    if let Some(ct) = o.get("contentType").and_then(Value::as_str) {
        if !ct.is_empty() {
            headers.push(("content-type".to_string(), ct.to_string()));
        }
    }
    if let Some(h) = o.get("headers") {
        let h = h.as_object().ok_or("\"headers\" is not an object")?;
        for (name, value) in h {
            let value = value
                .as_str()
                .ok_or_else(|| format!("header {name:?} is not a string"))?;
            if name.eq_ignore_ascii_case("content-type") && !headers.is_empty() {
                continue;
            }
            headers.push((name.to_ascii_lowercase(), value.to_string()));
        }
    }
    let ms = |name: &str| -> Result<f64, String> {
        match o.get(name) {
            None => Ok(0.0),
            Some(v) => v
                .as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .ok_or_else(|| format!("\"{name}\" is not a non-negative number")),
        }
    };
    let head_ms = ms("headMs")?;
    let chunks = chunks.transpose()?.unwrap_or_default();
    let max = limits.max_delay_ms;
    let too_long = |what: &str, ms: f64| {
        format!("{what} is {ms} ms, over the limit of {max} ms (raise --replay-max-delay)")
    };
    if head_ms > max {
        return Err(too_long("\"headMs\"", head_ms));
    }
    if let Some((i, (at, _))) = chunks.iter().enumerate().find(|(_, (at, _))| *at > max) {
        return Err(too_long(&format!("chunks[{i}] atMs"), *at));
    }
    let end = match o.get("end") {
        None => End::Complete,
        Some(e) => e
            .as_str()
            .and_then(End::parse)
            .ok_or_else(|| format!("\"end\" {e} is not complete, upstream_closed, client_cancelled, timeout or no_response"))?,
    };
    Ok(CapturedExchange {
        line,
        seq,
        key,
        request: request_body,
        path: request
            .and_then(|r| r.get("path"))
            .and_then(Value::as_str)
            .map(path_only),
        status,
        headers,
        body,
        expect_id: o.get("expectId").cloned(),
        head_ms,
        chunks,
        end,
        body_truncated: o.get("bodyTruncated").and_then(Value::as_bool) == Some(true),
        verdict: o.get("verdict").and_then(Value::as_str).map(str::to_owned),
        text: text.to_string(),
    })
}

/// The response body of a line, moved out of its JSON string (not copied).
fn take_body(o: &mut Map<String, Value>, max: usize) -> Result<Bytes, String> {
    let too_big = |n: usize| {
        format!("the response body is {n} bytes, over the limit of {max} (raise --replay-max-body)")
    };
    let body = match (o.remove("body"), o.remove("bodyBase64")) {
        (Some(_), Some(_)) => return Err("a line has \"body\" or \"bodyBase64\", not both".into()),
        (Some(Value::String(b)), None) => Bytes::from(b.into_bytes()),
        (Some(_), None) => return Err("\"body\" is not a string".into()),
        (None, Some(Value::String(b))) => {
            // Refused before decoding: the decoded size is known from the text's length.
            let decoded = b.trim_end_matches('=').len() / 4 * 3;
            if decoded > max {
                return Err(too_big(decoded));
            }
            Bytes::from(
                base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .map_err(|e| format!("\"bodyBase64\" is not base64: {e}"))?,
            )
        }
        (None, Some(_)) => return Err("\"bodyBase64\" is not a string".into()),
        (None, None) => Bytes::new(),
    };
    if body.len() > max {
        return Err(too_big(body.len()));
    }
    Ok(body)
}

/// The first JSON-RPC response (an object with `result` or `error`) in a JSON or SSE body.
pub fn response_message(body: &[u8]) -> Option<Value> {
    let is_response = |v: &Value| v.get("result").is_some() || v.get("error").is_some();
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return is_response(&v).then_some(v);
    }
    for line in body.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(data) = line.strip_prefix(b"data:") {
            let data = data.strip_prefix(b" ").unwrap_or(data);
            if let Ok(v) = serde_json::from_slice::<Value>(data) {
                if is_response(&v) {
                    return Some(v);
                }
            }
        }
    }
    None
}

/// The replay state: the capture, its index by key, and how often each key was asked.
pub struct Replay {
    capture: Arc<Capture>,
    index: HashMap<ReplayKey, Vec<usize>>,
    asked: Mutex<HashMap<ReplayKey, usize>>,
    tools: Vec<Value>,
    options: ReplayOptions,
}

impl Replay {
    /// Index a capture for serving.
    pub fn new(
        capture: impl Into<Arc<Capture>>,
        options: ReplayOptions,
    ) -> Result<Replay, CaptureError> {
        let capture = capture.into();
        if !(options.speed.is_finite() && options.speed > 0.0) {
            return Err(CaptureError::Speed(options.speed));
        }
        // A capture of one endpoint answers on any path (replayed where the client is pointed,
        // as before paths were keys); only a capture of several endpoints keys by path.
        let paths: std::collections::HashSet<&str> = capture
            .exchanges
            .iter()
            .filter(|x| matches!(x.key, ReplayKey::Rpc { .. }))
            .filter_map(|x| x.path.as_deref())
            .collect();
        let one_endpoint = paths.len() <= 1;
        let mut index: HashMap<ReplayKey, Vec<usize>> = HashMap::new();
        for (i, x) in capture.exchanges.iter().enumerate() {
            let key = match x.key.on_any_path() {
                Some(any) if one_endpoint => any,
                _ => x.key.clone(),
            };
            index.entry(key).or_default().push(i);
        }
        let tools = capture.tools();
        Ok(Replay {
            capture,
            index,
            asked: Mutex::new(HashMap::new()),
            tools,
            options,
        })
    }

    /// The capture being served.
    pub fn capture(&self) -> &Capture {
        &self.capture
    }

    /// The line for the next request with `key`: `(exchange, nth (1-based), of, past_end)`.
    /// A `tools/call` whose arguments match no line falls back to the lines of its tool that
    /// were captured with `--capture-hash-arguments` (keyed without arguments).
    fn next(&self, key: &ReplayKey) -> Option<(&CapturedExchange, usize, usize, bool)> {
        // The request's own key first; fallback keys are built only when it has no line.
        let (key, lines) = match self.index.get_key_value(key) {
            Some(found) => found,
            None => key.fallbacks().find_map(|k| self.index.get_key_value(&k))?,
        };
        let mut asked = self.asked.lock().expect("replay lock");
        let n = asked.entry(key.clone()).or_insert(0);
        *n += 1;
        let past_end = *n > lines.len();
        let nth = (*n).min(lines.len());
        Some((
            &self.capture.exchanges[lines[nth - 1]],
            nth,
            lines.len(),
            past_end,
        ))
    }
}

/// Serve `replay` on `addr` with the kitchen's accept loop, admin API and journal.
pub async fn start_replay(
    addr: SocketAddr,
    options: KitchenOptions,
    replay: Replay,
) -> Result<KitchenHandle, KitchenError> {
    let replay = Arc::new(replay);
    crate::server::start_with(addr, options, move |kitchen| router(kitchen, replay)).await
}

/// The replay router: the admin API under `/kitchen/*`, every other path replayed. A
/// successful `POST /kitchen/reset` also starts every key over at its first captured line.
pub fn router(kitchen: Kitchen, replay: Arc<Replay>) -> Router {
    let shared = kitchen.shared().clone();
    let on_reset = replay.clone();
    Router::new()
        .merge(crate::admin::routes())
        .with_state(shared.clone())
        .fallback(move |req: Request| {
            let (shared, replay) = (shared.clone(), replay.clone());
            async move { handle(State((shared, replay)), req).await }
        })
        .layer(axum::middleware::from_fn(
            move |req: Request, next: axum::middleware::Next| {
                let replay = on_reset.clone();
                async move {
                    let reset = req.method() == axum::http::Method::POST
                        && req.uri().path() == "/kitchen/reset";
                    let resp = next.run(req).await;
                    if reset && resp.status().is_success() {
                        replay.asked.lock().expect("replay lock").clear();
                    }
                    resp
                }
            },
        ))
}

const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "content-length",
];

async fn handle(
    State((shared, replay)): State<(Arc<Shared>, Arc<Replay>)>,
    req: Request,
) -> Response<Body> {
    let received = journal::now_ms();
    let (parts, body) = req.into_parts();
    let headers = parts.headers;
    let http_method = parts.method.as_str().to_string();
    let mut entry = journal::JournalEntry::new(
        received,
        &http_method,
        REPLAY_SCENARIO,
        journal::redacted_headers(&headers),
    );
    entry.instance = Some(REPLAY_SCENARIO.to_string());
    entry.session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    entry.era = Some(
        if headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
            .is_some_and(protocol::is_modern_version)
        {
            protocol::Era::Modern
        } else {
            protocol::Era::Legacy
        },
    );
    let resp = if !host_check::request_allowed(&shared, &headers) {
        entry.injected = Some("rejected Host/Origin".into());
        crate::sse::json_response(
            403,
            &protocol::error_response(None, protocol::INVALID_REQUEST, host_check::FORBIDDEN, None),
        )
    } else {
        let limit = shared.options.max_body_bytes;
        match tokio::time::timeout(
            shared.options.body_read_timeout,
            axum::body::to_bytes(body, limit),
        )
        .await
        {
            Err(_) => {
                entry.injected = Some("request body not received in time".into());
                own_error(408, None, "Request body not received in time")
            }
            Ok(Err(e)) if !crate::mcp::body_over_limit(&e) => {
                entry.injected = Some("request body malformed".into());
                own_error(400, None, &format!("Request body malformed: {e}"))
            }
            Ok(Err(_)) => {
                entry.injected = Some("request body over the size limit".into());
                own_error(
                    413,
                    None,
                    &format!("Request body larger than {limit} bytes"),
                )
            }
            Ok(Ok(bytes)) => answer(&replay, &http_method, parts.uri.path(), &bytes, &mut entry),
        }
    };
    if let Some(HeadDelay(d)) = resp.extensions().get::<HeadDelay>().copied() {
        tokio::time::sleep(d).await;
    }
    let aborted = resp
        .extensions()
        .get::<crate::sse::AbortConnection>()
        .is_some();
    entry.status = (!aborted).then(|| resp.status().as_u16());
    entry.content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    shared.journal.push(entry);
    resp
}

fn own_error(status: u16, id: Option<&Value>, message: &str) -> Response<Body> {
    crate::sse::json_response(
        status,
        &protocol::error_response(id, protocol::INVALID_REQUEST, message, None),
    )
}

/// Decide and build the answer to one request; fills the journal entry.
fn answer(
    replay: &Replay,
    http_method: &str,
    path: &str,
    body: &[u8],
    entry: &mut journal::JournalEntry,
) -> Response<Body> {
    let msg: Option<Value> = if http_method == "POST" {
        serde_json::from_slice(body).ok().filter(Value::is_object)
    } else {
        None
    };
    let key = msg
        .as_ref()
        .and_then(rpc_key)
        .map(|k| k.at_path(path))
        .unwrap_or(ReplayKey::Http {
            method: http_method.to_string(),
            path: path.to_string(),
        });
    let request_id = msg.as_ref().and_then(|m| m.get("id")).cloned();
    if let Some(m) = &msg {
        entry.method = m["method"].as_str().map(str::to_owned);
        entry.id = request_id.clone();
        if let ReplayKey::Rpc {
            tool,
            arguments_hash,
            ..
        } = &key
        {
            entry.tool = tool.clone();
            // Bare hex, as in every other journal entry (the key's form has `sha256:`).
            entry.arguments_hash = arguments_hash
                .as_deref()
                .map(|h| h.trim_start_matches("sha256:").to_owned());
        }
        entry.retry = journal::retry_fields(&m["params"]);
    }
    let Some((x, nth, of, past_end)) = replay.next(&key) else {
        entry.replay = Some(journal::ReplayServed::Unmatched {
            unmatched: key.to_string(),
        });
        let modern = entry.era == Some(protocol::Era::Modern);
        let (resp, what) = own_answer(replay, modern, msg.as_ref(), &key);
        entry.injected = Some(format!("no captured line for {key}: {what}"));
        return resp;
    };
    entry.replay = Some(journal::ReplayServed::Served {
        seq: x.seq,
        line: x.line,
        nth,
        of,
        past_end,
        end: x.end.as_str().to_string(),
    });
    entry.injected = Some(format!(
        "replayed seq {} ({nth} of {of} for {key}{}; end {})",
        x.seq,
        if past_end {
            ", served again past the end"
        } else {
            ""
        },
        x.end.as_str()
    ));
    if let Some(msg) = response_message(&x.body) {
        let r = &msg["result"];
        if r["resultType"] == "input_required" {
            entry.issued = Some(journal::Issued {
                request_state: r["requestState"].clone(),
                input_request_keys: r["inputRequests"]
                    .as_object()
                    .map(|o| o.keys().cloned().collect())
                    .unwrap_or_default(),
            });
        }
    }
    serve(x, request_id.as_ref(), replay.options.speed)
}

/// The kitchen's own answer to a request the capture has no line for.
fn own_answer(
    replay: &Replay,
    era_modern: bool,
    msg: Option<&Value>,
    key: &ReplayKey,
) -> (Response<Body>, &'static str) {
    let Some(msg) = msg else {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        return (r, "405");
    };
    let method = msg["method"].as_str().unwrap_or("");
    let id = msg.get("id").filter(|_| !method.is_empty());
    let Some(id) = id else {
        // A notification, or the client's answer to a server request (an elicitation on a
        // legacy SSE stream): accepted, nothing to say.
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::ACCEPTED;
        return (r, "202 for a notification");
    };
    let modern = era_modern
        || msg["params"]["_meta"]
            .get("io.modelcontextprotocol/protocolVersion")
            .is_some();
    let mut result = match method {
        "initialize" => {
            let asked = msg["params"]["protocolVersion"].as_str().unwrap_or("");
            let version = if asked.is_empty() || protocol::is_modern_version(asked) {
                "2025-11-25"
            } else {
                asked
            };
            json!({
                "protocolVersion": version,
                "capabilities": { "tools": { "listChanged": false } },
                "serverInfo": { "name": "mcp-triage-kitchen replay", "version": env!("CARGO_PKG_VERSION") },
            })
        }
        "tools/list" => json!({ "tools": replay.tools }),
        "ping" => json!({}),
        _ => {
            let resp = protocol::error_response(
                Some(id),
                -32601,
                &format!("the capture has no line for {key}"),
                None,
            );
            return (crate::sse::json_response(200, &resp), "-32601");
        }
    };
    if modern {
        result["resultType"] = json!("complete");
    }
    (
        crate::sse::json_response(200, &protocol::result_response(id, result)),
        "the kitchen's own answer",
    )
}

/// Send one captured exchange: status, headers, the id-rewritten body in its chunks.
fn serve(x: &CapturedExchange, request_id: Option<&Value>, speed: f64) -> Response<Body> {
    if x.end == End::NoResponse && x.status == 502 {
        // The upstream answered nothing (it closed, or the client did first): the proxy closed
        // the client's connection too, so the replay drops it without a response.
        return crate::sse::abort_response();
    }
    let (body, ends) = rewrite_ids(x, request_id);
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::from_u16(x.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut had_length = false;
    for (name, value) in &x.headers {
        if HOP_BY_HOP.contains(&name.as_str()) {
            had_length |= name == "content-length";
            continue;
        }
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            r.headers_mut().append(n, v);
        }
    }
    if !r.headers().contains_key(crate::mcp::SCENARIO_HEADER) {
        r.headers_mut().insert(
            crate::mcp::SCENARIO_HEADER,
            HeaderValue::from_static(REPLAY_SCENARIO),
        );
    }
    let cut = matches!(x.end, End::UpstreamClosed | End::ClientCancelled) || x.body_truncated;
    let hold = x.end == End::Timeout;
    if had_length && !cut && !hold {
        r.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    }
    let scale = |ms: f64| Duration::from_secs_f64((ms / speed / 1000.0).min(86_400.0));
    let head_delay = scale(x.head_ms);
    let pieces: Vec<(Duration, Bytes)> = ends
        .into_iter()
        .map(|(at, range)| (scale(at), body.slice(range)))
        .collect();
    // The head waits `headMs` (the handler sleeps it); chunk offsets count from the head.
    let head_at = tokio::time::Instant::now() + head_delay;
    *r.body_mut() = Body::from_stream(body_stream(head_at, pieces, cut, hold));
    r.extensions_mut().insert(HeadDelay(head_delay));
    r
}

/// How long the handler waits before handing the response (its head) to hyper: `headMs`.
#[derive(Clone, Copy, Debug)]
struct HeadDelay(Duration);

/// The body as a stream: each piece at its offset from the head; then end cleanly, with an
/// error (hyper closes the connection without the final chunk of a chunked body), or never
/// (held open until the client goes away or the kitchen shuts down).
fn body_stream(
    head_at: tokio::time::Instant,
    pieces: Vec<(Duration, Bytes)>,
    cut: bool,
    hold: bool,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    use futures_util::StreamExt;
    let body = futures_util::stream::iter(pieces).then(move |(at, bytes)| async move {
        tokio::time::sleep_until(head_at + at).await;
        Ok::<Bytes, std::io::Error>(bytes)
    });
    let tail = futures_util::stream::once(async move {
        if hold {
            std::future::pending::<()>().await;
        }
        if cut {
            // Pending once before the error, so hyper flushes the bytes it already took
            // (as the kitchen's own cuts do, see `sse::ABORT_FLUSH_GRACE`).
            tokio::time::sleep(crate::sse::ABORT_FLUSH_GRACE).await;
        }
        cut.then(|| {
            Err(std::io::Error::other(
                "replayed stream cut as the upstream cut it",
            ))
        })
    })
    .filter_map(|x| async move { x });
    body.chain(tail)
}

/// The body with the response id rewritten, and the chunk list mapped onto it:
/// `(atMs, byte range of the new body)`.
fn rewrite_ids(
    x: &CapturedExchange,
    request_id: Option<&Value>,
) -> (Bytes, Vec<(f64, Range<usize>)>) {
    let edits = match (request_id, &x.expect_id) {
        (Some(new), Some(expect)) if new != expect => id_edits(&x.body, expect, new),
        _ => Vec::new(),
    };
    if edits.is_empty() {
        // Nothing to rewrite: every request shares the captured body (a reference count),
        // so eight readers of a 200 MB answer cost 200 MB, not 1.6 GB.
        return (x.body.clone(), chunk_ranges(x, x.body.len(), |o| o));
    }
    let mut out = Vec::with_capacity(x.body.len() + 16);
    let mut at = 0;
    for (range, repl) in &edits {
        out.extend_from_slice(&x.body[at..range.start]);
        out.extend_from_slice(repl);
        at = range.end;
    }
    out.extend_from_slice(&x.body[at..]);
    // The shift of the edits before each one, so mapping an offset is a binary search, not
    // a walk of every edit per chunk (an SSE body can have thousands of each).
    let mut before = Vec::with_capacity(edits.len() + 1);
    before.push(0isize);
    for (range, repl) in &edits {
        let last = *before.last().unwrap_or(&0);
        before.push(last + repl.len() as isize - range.len() as isize);
    }
    let map = |o: usize| -> usize {
        let k = edits.partition_point(|(range, _)| range.end <= o);
        match edits.get(k) {
            Some((range, repl)) if range.start < o => {
                (range.start as isize + before[k]) as usize + repl.len()
            }
            _ => (o as isize + before[k]) as usize,
        }
    };
    let ranges = chunk_ranges(x, out.len(), map);
    (Bytes::from(out), ranges)
}

/// The captured chunks as `(atMs, byte range)` of a new body of `new_len` bytes, `map` taking
/// an offset of the captured body to the new one.
fn chunk_ranges(
    x: &CapturedExchange,
    new_len: usize,
    map: impl Fn(usize) -> usize,
) -> Vec<(f64, Range<usize>)> {
    let total = x.body.len();
    let mut ranges = Vec::new();
    let mut orig_end = 0usize;
    let mut new_start = 0usize;
    for &(at_ms, n) in &x.chunks {
        orig_end = (orig_end + n).min(total);
        let new_end = map(orig_end);
        if new_end > new_start {
            ranges.push((at_ms, new_start..new_end));
            new_start = new_end;
        }
    }
    if new_start < new_len {
        // No chunks captured (or fewer bytes than the body): the rest at the last offset.
        let last = x.chunks.last().map_or(0.0, |c| c.0);
        ranges.push((last, new_start..new_len));
    }
    ranges
}

/// Edits replacing the top-level `id` of every response message (JSON body, or SSE `data:`
/// lines) whose id equals `expect`, with `new`. Requests and notifications the server sent
/// (a `method` member) keep their ids; so does a response with another id (a wrong-id failure).
fn id_edits(body: &[u8], expect: &Value, new: &Value) -> Vec<(Range<usize>, Vec<u8>)> {
    let replacement = new.to_string().into_bytes();
    let mut edits = Vec::new();
    let mut try_message = |offset: usize, text: &[u8]| {
        let scan = scan_object(text);
        if scan.method {
            return;
        }
        if let Some(r) = scan.id {
            let same = serde_json::from_slice::<Value>(&text[r.clone()])
                .ok()
                .as_ref()
                == Some(expect);
            if same {
                edits.push((offset + r.start..offset + r.end, replacement.clone()));
            }
        }
    };
    let first = body.iter().position(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|i| body[i] == b'{') {
        try_message(0, body);
        return edits;
    }
    let mut offset = 0;
    for line in body.split_inclusive(|b| *b == b'\n') {
        if let Some(data) = line.strip_prefix(b"data:") {
            let skip = 5 + usize::from(data.first() == Some(&b' '));
            try_message(offset + skip, &line[skip..]);
        }
        offset += line.len();
    }
    edits
}

/// What [`scan_object`] found at the top level of a JSON object.
#[derive(Debug, Default)]
struct ObjectScan {
    /// Byte range of the `id` member's value.
    id: Option<Range<usize>>,
    /// A `method` member was seen (the message is a request or notification).
    method: bool,
}

/// Walk the top level of the JSON object at the start of `text` (after white space), without
/// building it, so that a message cut in the middle (a cut stream) still shows its `id`.
fn scan_object(text: &[u8]) -> ObjectScan {
    let mut scan = ObjectScan::default();
    let ws = |i: &mut usize| {
        while *i < text.len() && text[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    let mut i = 0;
    ws(&mut i);
    if text.get(i) != Some(&b'{') {
        return scan;
    }
    i += 1;
    loop {
        ws(&mut i);
        if text.get(i) != Some(&b'"') {
            return scan;
        }
        let Some(key_end) = skip_string(text, i) else {
            return scan;
        };
        let key = &text[i + 1..key_end - 1];
        i = key_end;
        ws(&mut i);
        if text.get(i) != Some(&b':') {
            return scan;
        }
        i += 1;
        ws(&mut i);
        let start = i;
        let Some(end) = skip_value(text, i) else {
            if key == b"method" {
                scan.method = true;
            }
            return scan;
        };
        match key {
            b"id" => scan.id = Some(start..end),
            b"method" => scan.method = true,
            _ => {}
        }
        i = end;
        ws(&mut i);
        match text.get(i) {
            Some(b',') => i += 1,
            _ => return scan,
        }
    }
}

/// End (exclusive) of the JSON string starting at `text[i] == '"'`.
fn skip_string(text: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    while i < text.len() {
        match text[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// End (exclusive) of the JSON value starting at `text[i]`; `None` when it is cut off.
fn skip_value(text: &[u8], mut i: usize) -> Option<usize> {
    match text.get(i)? {
        b'"' => skip_string(text, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            while i < text.len() {
                match text[i] {
                    b'"' => {
                        i = skip_string(text, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let start = i;
            while i < text.len()
                && !matches!(text[i], b',' | b'}' | b']')
                && !text[i].is_ascii_whitespace()
            {
                i += 1;
            }
            // A scalar running to the end of the text may be cut (`12` of `123`).
            (i < text.len() && i > start).then_some(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(v: Value) -> CapturedExchange {
        let text = v.to_string();
        let raw = raw_line(&text, usize::MAX).unwrap();
        parse_line(1, &text, raw, &CaptureLimits::default()).unwrap()
    }

    #[test]
    fn arguments_hash_is_canonical_and_prefixed() {
        let a = capture_arguments_hash(Some(&json!({"b": 1, "a": [true, null]})));
        let b = capture_arguments_hash(Some(&json!({"a": [true, null], "b": 1})));
        assert_eq!(a, b);
        assert!(a.starts_with("sha256:") && a.len() == 7 + 64, "{a}");
        assert_eq!(
            capture_arguments_hash(None),
            capture_arguments_hash(Some(&json!({})))
        );
    }

    #[test]
    fn json_response_id_is_rewritten_and_requests_are_not() {
        let x = line(
            json!({"status": 200, "contentType": "application/json", "method": "ping",
            "body": "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"id\":7}}", "expectId": 7}),
        );
        let (b, ranges) = rewrite_ids(&x, Some(&json!("new-1")));
        assert_eq!(
            &b[..],
            br#"{"jsonrpc":"2.0","id":"new-1","result":{"id":7}}"#
        );
        assert_eq!(ranges, vec![(0.0, 0..b.len())]);
        // A wrong-id response stays as captured.
        let (b, _) = rewrite_ids(&x, Some(&json!(7)));
        assert_eq!(&b[..], &x.body[..]);
        let sse = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"elicitation/create\",\"params\":{}}\n\n\
                   event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n";
        let x = line(
            json!({"status": 200, "contentType": "text/event-stream", "method": "ping",
            "body": sse, "expectId": 3, "chunks": [[0, 80], [5, sse.len() - 80]]}),
        );
        let (b, ranges) = rewrite_ids(&x, Some(&json!(12345)));
        let text = String::from_utf8(b.to_vec()).unwrap();
        assert!(text.contains("\"id\":3,\"method\""), "{text}");
        assert!(text.contains("\"id\":12345,\"result\""), "{text}");
        assert_eq!(ranges.len(), 2);
        assert_eq!(ranges[0].1, 0..80);
        assert_eq!(ranges[1].1, 80..text.len());
    }

    #[test]
    fn a_cut_message_still_has_its_id_rewritten() {
        let body = "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"ty";
        let x = line(
            json!({"status": 200, "method": "ping", "body": body, "expectId": 1,
            "end": "upstream_closed", "chunks": [[0, body.len()]]}),
        );
        let (b, _) = rewrite_ids(&x, Some(&json!(9)));
        assert!(String::from_utf8_lossy(&b).contains("\"id\":9,"));
        assert_eq!(x.end, End::UpstreamClosed);
    }

    #[test]
    fn chunk_boundaries_inside_an_edit_move_past_it() {
        // The boundary after `{"id":1` falls inside the id `12`.
        let body = r#"{"id":12,"result":{}}"#;
        let x = line(
            json!({"status": 200, "method": "ping", "body": body, "expectId": 12,
            "chunks": [[0, 7], [10, body.len() - 7]]}),
        );
        let (b, ranges) = rewrite_ids(&x, Some(&json!(1000)));
        assert_eq!(&b[..], br#"{"id":1000,"result":{}}"#);
        assert_eq!(ranges, vec![(0.0, 0..10), (10.0, 10..b.len())]);
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

    /// Serving a line whose id needs no rewrite shares the captured body: no copy per reader.
    #[test]
    fn unrewritten_bodies_are_shared_not_copied() {
        let x = line(json!({"status": 200, "method": "ping", "expectId": 7,
            "body": "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", "chunks": [[0, 10], [5, 30]]}));
        for id in [Some(json!(7)), None] {
            let (b, ranges) = rewrite_ids(&x, id.as_ref());
            assert_eq!(b.as_ptr(), x.body.as_ptr(), "the body was copied");
            assert_eq!(ranges, vec![(0.0, 0..10), (5.0, 10..x.body.len())]);
        }
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

    #[test]
    fn the_nth_request_gets_the_nth_line_then_the_last_again() {
        let cap = Capture::parse(
            br#"{"seq":2,"status":200,"method":"tools/call","tool":"t","body":"b"}
{"seq":1,"status":503,"method":"tools/call","tool":"t","body":"a"}"#,
        )
        .unwrap();
        let r = Replay::new(cap, ReplayOptions::default()).unwrap();
        let key = rpc_key(&json!({"method": "tools/call", "params": {"name": "t"}})).unwrap();
        let got: Vec<(u16, usize, bool)> = (0..3)
            .map(|_| {
                let (x, nth, _, past) = r.next(&key).unwrap();
                (x.status, nth, past)
            })
            .collect();
        assert_eq!(got, vec![(503, 1, false), (200, 2, false), (200, 2, true)]);
        assert!(r
            .next(&rpc_key(&json!({"method": "ping"})).unwrap())
            .is_none());
        assert!(Replay::new(r.capture.clone(), ReplayOptions { speed: 0.0 }).is_err());
    }

    /// Issue 21 item 5: a gateway's capture of several servers replays each on its own path;
    /// a line captured without a path answers on any.
    #[test]
    fn the_endpoint_path_is_part_of_the_key() {
        let cap = Capture::parse(
            br#"{"seq":1,"status":503,"method":"tools/call","tool":"t","request":{"method":"POST","path":"/a/mcp?x=1"},"body":""}
{"seq":2,"status":200,"method":"tools/call","tool":"t","request":{"method":"POST","path":"/b/mcp"},"body":"b"}
{"seq":3,"status":202,"method":"ping","body":""}"#,
        )
        .unwrap();
        assert_eq!(
            cap.exchanges[0].key.to_string().rsplit(' ').next(),
            Some("/a/mcp")
        );
        let r = Replay::new(cap, ReplayOptions::default()).unwrap();
        let call = |p: &str| {
            rpc_key(&json!({"method": "tools/call", "params": {"name": "t"}}))
                .unwrap()
                .at_path(p)
        };
        assert_eq!(r.next(&call("/b/mcp")).unwrap().0.seq, 2);
        assert_eq!(r.next(&call("/a/mcp")).unwrap().0.seq, 1);
        assert!(r.next(&call("/c/mcp")).is_none(), "no line of another path");
        let ping = rpc_key(&json!({"method": "ping"}))
            .unwrap()
            .at_path("/z/mcp");
        assert_eq!(r.next(&ping).unwrap().0.seq, 3);
        // A capture of one endpoint is replayed wherever the client is pointed.
        let one = Capture::parse(
            br#"{"seq":1,"status":503,"method":"tools/call","tool":"t","request":{"method":"POST","path":"/s/x/mcp"},"body":""}"#,
        )
        .unwrap();
        let r = Replay::new(one, ReplayOptions::default()).unwrap();
        assert_eq!(r.next(&call("/mcp")).unwrap().0.seq, 1);
    }
}
