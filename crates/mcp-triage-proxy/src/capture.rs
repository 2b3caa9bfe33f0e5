//! `--capture FILE.jsonl`: every exchange the proxy (or the stdio wrapper) forwarded, written as
//! an exchange-file line plus what a replay needs (the request, the response head's delay, the
//! body's chunk timing, how it ended), in the format fixed in `docs/capture-format.md`. The
//! line's type is the format's own, `mcp_triage_wire::capture::CaptureLine` (with `BodyEnd`),
//! which the kitchen's replay reads back with the same crate's reader: this module only fills
//! it.
//!
//! Why a line per exchange and not per record: `classify --batch` reads a capture as it is (each
//! line is one response with its `expectId`), and `kitchen --replay` serves one line per request.
//!
//! Why the proxy copies bodies again instead of reusing the records' copies: records never hold
//! bodies (only verdicts), and the classifier's copy ends where its verdict is decided. The
//! capture keeps its own bounded copy (`--capture-max-body`), only when `--capture` is given:
//! without it no [`ExchangeCapture`] exists and the forwarding path only tests an `Option`.
//!
//! Secrets never reach the file (see [`DROPPED_HEADERS`], [`REDACTED_MEMBERS`], and
//! [`ExchangeCapture::finish`] for bodies of requests that are not JSON-RPC). The writer is the
//! record log's ([`crate::log::LineBatch`]): a write error is reported on stderr at once and
//! counted, and the file rotates at `--capture-max-bytes` keeping `--capture-keep` old files.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use base64::Engine as _;
use serde_json::Value;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::guard::{is_secret_header, redact_query, REDACTED};
use crate::log::{linger_loop, open_append, LineBatch};
use crate::observe::{parse_messages, Message};
use crate::record::{now_ms, rfc3339};
use crate::WriterStats;
use mcp_triage_wire::canonical::ArgumentsDigest;
use mcp_triage_wire::capture::{BodyEnd, CaptureLine, CapturedRequest, FORMAT_VERSION};

/// Default of [`CaptureOptions::max_bytes`]: 256 MiB per file.
pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;

/// Default of [`CaptureOptions::keep`].
pub const DEFAULT_KEEP: u32 = 4;

/// Default of [`CaptureOptions::max_body`]: 1 MiB per body.
pub const DEFAULT_MAX_BODY: u64 = 1 << 20;

/// Request and response headers that never reach a capture (besides `--redact-header` names):
/// the records' list.
pub use crate::guard::SECRET_HEADERS as DROPPED_HEADERS;

/// JSON members whose string values are replaced by `"REDACTED"` in captured bodies: OAuth
/// tokens, client secrets, PKCE verifiers and authorization codes. Only string values: a
/// JSON-RPC error's numeric `code` stays as it is.
pub const REDACTED_MEMBERS: [&str; 6] = [
    "access_token",
    "refresh_token",
    "id_token",
    "client_secret",
    "code_verifier",
    "code",
];

/// Most `chunks` entries per exchange; frames past it are added to the last entry, so a stream
/// that stays open for hours holds at most this many (16 bytes each).
pub const MAX_CHUNKS: usize = 65_536;

/// Capture settings (`--capture`, `--capture-max-bytes`, `--capture-keep`, `--capture-max-body`).
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    /// The file; rotated files are `FILE.1`, `FILE.2`, … (newest first).
    pub path: PathBuf,
    /// Bytes per file before it is rotated (a line is never split: a file ends at most one line
    /// past this).
    pub max_bytes: u64,
    /// Rotated files kept (0: the full file is dropped when a new one begins).
    pub keep: u32,
    /// Bytes of each request and response body kept in the file.
    pub max_body: u64,
    /// Header names dropped besides [`DROPPED_HEADERS`] (`--redact-header`).
    pub redact_headers: Vec<String>,
    /// Query parameters redacted besides the defaults (`--redact-query-param`).
    pub redact_query_params: Vec<String>,
    /// Replace each tool argument's value in captured `tools/call` requests by its hash
    /// (`--capture-hash-arguments`); replay then matches those lines by tool only.
    pub hash_arguments: bool,
}

impl CaptureOptions {
    /// Options with the defaults, writing to `path`.
    pub fn new(path: impl Into<PathBuf>) -> CaptureOptions {
        CaptureOptions {
            path: path.into(),
            max_bytes: DEFAULT_MAX_BYTES,
            keep: DEFAULT_KEEP,
            max_body: DEFAULT_MAX_BODY,
            redact_headers: Vec::new(),
            redact_query_params: Vec::new(),
            hash_arguments: false,
        }
    }
}

/// The proxy's side of a capture: numbers exchanges, renames session ids, queues lines for the
/// writer thread. Cheap to share; the writer ends once every handle is dropped.
pub struct Capture {
    tx: UnboundedSender<Box<Finished>>,
    seq: AtomicU64,
    options: CaptureOptions,
}

/// A captured exchange on its way to the writer thread, which builds its line (redaction,
/// base64, session names, JSON): the forwarding thread only copies bytes and queues this.
struct Finished {
    exchange: ExchangeCapture,
    end: BodyEnd,
    answered: u16,
    verdict: String,
}

/// `s1`, `s2`, … for session ids in the order first seen (on the writer thread).
#[derive(Default)]
struct SessionNames(HashMap<String, String>);

impl SessionNames {
    fn alias(&mut self, id: &str) -> String {
        let n = self.0.len() + 1;
        self.0
            .entry(id.to_string())
            .or_insert_with(|| format!("s{n}"))
            .clone()
    }
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// The writer thread; [`CaptureWriter::drain`] waits until every queued line is written.
pub struct CaptureWriter {
    thread: Option<JoinHandle<WriterStats>>,
}

impl CaptureWriter {
    /// Waits for the writer to write every line queued by handles that are now dropped (every
    /// [`Capture`] handle must be dropped first). `records` in the stats counts lines.
    pub fn drain(mut self) -> WriterStats {
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

/// Why a capture did not start. Each message is a whole sentence naming the flag or the file,
/// which the binary prints after `mcp-triage: `; the I/O cause is also the error's source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// [`CaptureOptions::max_bytes`] is 0: no line would fit in a file.
    #[error("--capture-max-bytes must be at least 1")]
    MaxBytesZero,
    /// The capture file cannot be opened for appending.
    #[error("cannot open --capture {}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Why it cannot be opened.
        #[source]
        source: io::Error,
    },
    /// The writer thread cannot be spawned.
    #[error("cannot start the capture writer: {0}")]
    Writer(#[source] io::Error),
}

/// Opens (or appends to) the capture file and starts its writer. An unopenable path is an error
/// naming it, before anything runs.
pub fn start(options: CaptureOptions) -> Result<(Arc<Capture>, CaptureWriter), CaptureError> {
    if options.max_bytes == 0 {
        return Err(CaptureError::MaxBytesZero);
    }
    let log = open_append(&options.path).map_err(|source| CaptureError::Open {
        path: options.path.clone(),
        source,
    })?;
    let size = log.file.metadata().map(|m| m.len()).unwrap_or(0);
    start_on(options, Box::new(log.file), log.torn, size, open_new)
}

/// Opens the file a rotation begins (see [`Rotation::open`]).
type OpenFn = fn(&Path) -> io::Result<Box<dyn Write + Send>>;

/// The real [`OpenFn`]: creates (or appends to) the file.
fn open_new(path: &Path) -> io::Result<Box<dyn Write + Send>> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    Ok(Box::new(file))
}

/// [`start`] on an opened output holding `size` bytes already; `open` begins each rotated file
/// (tests give a full disk here).
fn start_on(
    options: CaptureOptions,
    out: Box<dyn Write + Send>,
    torn: bool,
    size: u64,
    open: OpenFn,
) -> Result<(Arc<Capture>, CaptureWriter), CaptureError> {
    let (tx, rx) = unbounded_channel();
    let files = Rotation {
        path: options.path.clone(),
        max_bytes: options.max_bytes,
        keep: options.keep,
        existing: size,
        open,
        hash_arguments: options.hash_arguments,
        batch: LineBatch::new(out, torn, "the capture file"),
        stats: WriterStats::default(),
        scratch: Vec::new(),
        sessions: SessionNames::default(),
    };
    let thread = std::thread::Builder::new()
        .name("mcp-triage-capture".into())
        .spawn(move || write_loop(rx, files))
        .map_err(CaptureError::Writer)?;
    Ok((
        Arc::new(Capture {
            tx,
            seq: AtomicU64::new(0),
            options,
        }),
        CaptureWriter {
            thread: Some(thread),
        },
    ))
}

impl Capture {
    /// Starts the capture of an exchange whose request head just arrived. `headers` are the
    /// request's end-to-end headers; secrets are dropped here.
    pub fn begin<'a>(
        &self,
        transport: &'static str,
        http_method: &str,
        path: &str,
        headers: impl Iterator<Item = (&'a str, &'a [u8])>,
        session_id: Option<&str>,
    ) -> Box<ExchangeCapture> {
        let path = redact_query(path, &self.options.redact_query_params).into_owned();
        self.start(
            transport,
            Some((http_method.to_string(), path)),
            self.headers(headers),
            session_id,
        )
    }

    /// Starts the capture of a request line the stdio wrapper just wrote to the server (no HTTP
    /// method, path or headers: `request` holds only the body).
    pub fn begin_stdio(&self, session_id: Option<&str>) -> Box<ExchangeCapture> {
        self.start("stdio", None, BTreeMap::new(), session_id)
    }

    fn start(
        &self,
        transport: &'static str,
        method_and_path: Option<(String, String)>,
        headers: BTreeMap<String, String>,
        session_id: Option<&str>,
    ) -> Box<ExchangeCapture> {
        let (method, path) = method_and_path.unzip();
        Box::new(ExchangeCapture {
            seq: self.seq.fetch_add(1, Ordering::Relaxed) + 1,
            at: rfc3339(now_ms()),
            transport,
            started: Instant::now(),
            request: CapturedRequest {
                method,
                path,
                headers,
                body: None,
                body_base64: None,
                body_truncated: false,
                body_omitted: false,
            },
            request_body: None,
            rpc: None,
            request_overflow: false,
            session_id: session_id.map(str::to_string),
            protocol_version: None,
            head: None,
            chunks: Vec::new(),
            body: Vec::new(),
            body_truncated: false,
            max_body: self.options.max_body,
        })
    }

    /// Headers minus secrets, one value per name (repeated ones joined with `, `).
    pub fn headers<'a>(
        &self,
        headers: impl Iterator<Item = (&'a str, &'a [u8])>,
    ) -> BTreeMap<String, String> {
        let mut out: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in headers {
            let lower = name.to_ascii_lowercase();
            if is_secret_header(&lower, &self.options.redact_headers) {
                continue;
            }
            let mut value = String::from_utf8_lossy(value).into_owned();
            if lower == "location" {
                // An authorization redirect carries its one-use code there.
                value = redact_query(&value, &self.options.redact_query_params).into_owned();
            }
            out.entry(lower)
                .and_modify(|v| {
                    v.push_str(", ");
                    v.push_str(&value);
                })
                .or_insert(value);
        }
        out
    }

    fn send(&self, finished: Box<Finished>) {
        // The writer ends only once every handle is gone, so this cannot fail while `self` lives.
        let _ = self.tx.send(finished);
    }
}

/// One exchange being captured: filled as the request and the response pass, written by
/// [`ExchangeCapture::finish`].
pub struct ExchangeCapture {
    seq: u64,
    at: String,
    transport: &'static str,
    started: Instant,
    request: CapturedRequest,
    request_body: Option<Vec<u8>>,
    /// What the request is, when it is JSON-RPC (None: not read, or not JSON-RPC).
    rpc: Option<Rpc>,
    /// The request body was larger than the proxy reads (`--max-request-bytes`): not kept.
    request_overflow: bool,
    session_id: Option<String>,
    protocol_version: Option<String>,
    /// Status, headers (secrets dropped), when the head arrived, and its delay in ms.
    head: Option<(u16, BTreeMap<String, String>, Instant, f64)>,
    chunks: Vec<(f64, u64)>,
    body: Vec<u8>,
    body_truncated: bool,
    max_body: u64,
}

impl ExchangeCapture {
    /// The request body as the proxy read it (`overflow`: it was larger than the proxy reads;
    /// then nothing of it is kept).
    pub fn request_body(&mut self, bytes: &[u8], overflow: bool) {
        let keep = bytes.len().min(self.max_body as usize);
        self.request.body_truncated = overflow || keep < bytes.len();
        self.request_overflow = overflow;
        self.request_body = Some(bytes[..keep].to_vec());
        if !overflow {
            // Read from the whole body, not the kept part: the replay key must not depend on
            // --capture-max-body.
            self.rpc = parse_messages(bytes).map(|(messages, batch)| rpc_of(&messages, batch));
            if self.protocol_version.is_none() {
                self.protocol_version = protocol_version_of(bytes);
            }
        }
    }

    /// The protocol version the proxy's records give this exchange (header, `_meta` or the
    /// session's), which beats the body's own.
    pub fn protocol_version(&mut self, version: Option<String>) {
        if version.is_some() {
            self.protocol_version = version;
        }
    }

    /// The response head arrived now (secrets already dropped from `headers` by
    /// [`Capture::headers`]).
    pub fn response_head(&mut self, status: u16, headers: BTreeMap<String, String>) {
        let now = Instant::now();
        let ms = ms_between(self.started, now);
        self.head = Some((status, headers, now, ms));
    }

    /// A frame of the response body arrived now.
    pub fn chunk(&mut self, data: &[u8]) {
        if self.chunks.len() >= MAX_CHUNKS {
            // A stream open for hours: later frames add to the last entry (bounded memory).
            if let Some(last) = self.chunks.last_mut() {
                last.1 += data.len() as u64;
            }
        } else {
            let at = self
                .head
                .as_ref()
                .map_or(0.0, |(_, _, t, _)| ms_between(*t, Instant::now()));
            self.chunks.push((at, data.len() as u64));
        }
        let room = (self.max_body as usize).saturating_sub(self.body.len());
        if data.len() > room {
            self.body_truncated = true;
        }
        self.body.extend_from_slice(&data[..data.len().min(room)]);
    }

    /// Writes the line: `end` says how the body ended, `answered` is the status the proxy gave
    /// when no head came (`end` is then [`BodyEnd::NoResponse`]), `verdict` the proxy's
    /// outcome for the exchange (its record's `outcome`).
    pub fn finish(self, capture: &Capture, end: BodyEnd, answered: u16, verdict: &str) {
        capture.send(Box::new(Finished {
            exchange: self,
            end,
            answered,
            verdict: verdict.to_string(),
        }));
    }

    fn into_line(
        mut self,
        sessions: &mut SessionNames,
        end: BodyEnd,
        answered: u16,
        verdict: String,
        hash_arguments: bool,
    ) -> CaptureLine {
        let mut request_bytes = self.request_body.take().unwrap_or_default();
        let rpc = self.rpc.take();
        let arguments_hashed = hash_arguments && rpc.as_ref().is_some_and(|r| r.tool.is_some());
        if arguments_hashed {
            match hashed_arguments(&request_bytes) {
                Some(bytes) => request_bytes = bytes,
                None => {
                    // A body cut short does not parse: its arguments cannot be hashed, so none
                    // of it is kept.
                    request_bytes.clear();
                    self.request.body_omitted = true;
                }
            }
        }
        // Bodies go into the file only for JSON-RPC requests (and streams the server opens on a
        // GET): what a token endpoint or a registration sends and answers stays out.
        let is_jsonrpc = rpc.is_some();
        let (status, headers, head_ms) = match self.head.take() {
            Some((s, h, _, ms)) => (s, h, Some(ms)),
            None => (answered, BTreeMap::new(), None),
        };
        let content_type = headers.get("content-type").cloned();
        let is_stream = content_type.as_deref().is_some_and(|c| {
            c.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        });
        let body_kept = is_jsonrpc || self.request_overflow || is_stream;
        if (is_jsonrpc || self.request_overflow) && !self.request.body_omitted {
            let (body, base64) = body_text(redact_members(&request_bytes));
            self.request.body = body;
            self.request.body_base64 = base64;
        } else if !request_bytes.is_empty() {
            self.request.body_omitted = true;
            self.request.body_truncated = false;
        }
        let rpc = rpc.unwrap_or_default();
        let (body, body_base64, body_omitted) = if body_kept {
            let (b, b64) = body_text(redact_members(&self.body));
            (b, b64, false)
        } else {
            (None, None, !self.body.is_empty())
        };
        let session_id = self
            .session_id
            .clone()
            .or_else(|| headers.get("mcp-session-id").cloned())
            .map(|s| sessions.alias(&s));
        let mut rename = |h: &mut BTreeMap<String, String>| {
            if let Some(v) = h.get_mut("mcp-session-id") {
                *v = sessions.alias(v);
            }
        };
        let mut headers = headers;
        rename(&mut headers);
        rename(&mut self.request.headers);
        CaptureLine {
            capture: FORMAT_VERSION,
            seq: self.seq,
            at: self.at,
            transport: self.transport.to_string(),
            status,
            content_type,
            body,
            body_base64,
            body_omitted,
            expect_id: rpc.expect_id,
            headers,
            protocol_version: self.protocol_version,
            method: rpc.method,
            tool: rpc.tool,
            arguments_hash: rpc.arguments_hash,
            arguments_hashed,
            request: self.request,
            head_ms,
            chunks: self.chunks,
            end,
            body_truncated: self.body_truncated,
            verdict,
            session_id,
        }
    }
}

/// The members a JSON-RPC request gives a line (all absent for a batch).
#[derive(Debug, Default)]
struct Rpc {
    method: Option<String>,
    tool: Option<String>,
    arguments_hash: Option<String>,
    expect_id: Option<Value>,
}

fn rpc_of(messages: &[Message], batch: bool) -> Rpc {
    let mut rpc = Rpc::default();
    if batch {
        return rpc;
    }
    match messages.first() {
        Some(Message::Request { id, method, params }) => {
            rpc.method = Some(method.clone());
            rpc.expect_id = Some(id.clone());
            if method == "tools/call" {
                let name = params.get("name").and_then(Value::as_str).unwrap_or("");
                rpc.tool = Some(name.to_string());
                // Absent arguments hash as `{}`, as the format says.
                let empty = Value::Object(Default::default());
                let args = params.get("arguments").unwrap_or(&empty);
                rpc.arguments_hash = Some(ArgumentsDigest::of(args).prefixed());
            }
        }
        Some(Message::Notification { method }) => rpc.method = Some(method.clone()),
        _ => {}
    }
    rpc
}

/// A `tools/call` request body with each value of `params.arguments` replaced by
/// `"sha256:<hex>"` of its canonical JSON (`--capture-hash-arguments`); None when the body does
/// not parse (cut at `--capture-max-body`). Arguments that are not an object are hashed whole.
fn hashed_arguments(body: &[u8]) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(body).ok()?;
    let hash = |x: &Value| Value::String(ArgumentsDigest::of(x).prefixed());
    if let Some(args) = v.pointer_mut("/params/arguments") {
        match args {
            Value::Object(map) => map.values_mut().for_each(|x| *x = hash(x)),
            other => *other = hash(other),
        }
    }
    serde_json::to_vec(&v).ok()
}

/// Milliseconds from `a` to `b`, to the microsecond.
fn ms_between(a: Instant, b: Instant) -> f64 {
    (b.saturating_duration_since(a).as_micros() as f64) / 1000.0
}

/// `body` for UTF-8 bytes, `bodyBase64` otherwise (a body cut mid-character included).
fn body_text(bytes: Vec<u8>) -> (Option<String>, Option<String>) {
    match String::from_utf8(bytes) {
        Ok(s) => (Some(s), None),
        Err(e) => (
            None,
            Some(base64::engine::general_purpose::STANDARD.encode(e.as_bytes())),
        ),
    }
}

/// The request's protocol version from its `_meta` (2026-07-28 requests carry it there).
fn protocol_version_of(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Replaces the string values of [`REDACTED_MEMBERS`] by `"REDACTED"`, wherever they are in
/// the text: JSON, SSE `data:` lines, or a body cut short (which does not parse). Works on the
/// bytes, so everything else stays byte for byte as it passed. A member name is compared as it
/// decodes (`"access\u005ftoken"` is `access_token` to every JSON reader, so a raw comparison
/// would let a client or server slip a secret past the capture by spelling its name with
/// escapes).
fn redact_members(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i] == b'"' && !escaped(body, i) {
            if let Some((j, k)) = secret_value_at(body, i) {
                out.extend_from_slice(&body[i..=j]);
                out.extend_from_slice(REDACTED.as_bytes());
                if k < body.len() {
                    out.push(b'"');
                }
                i = k + 1;
                continue;
            }
        }
        out.push(body[i]);
        i += 1;
    }
    out
}

/// The longest raw spelling of a secret name worth decoding: every character escaped as
/// `\uXXXX` (6 bytes). A longer quoted run cannot decode to one of [`REDACTED_MEMBERS`], and the
/// bound keeps the scan linear on a body of long strings.
const MAX_SECRET_NAME_BYTES: usize = 6 * 13;

/// For a quote at `i` that opens a secret member name followed by `:` and a string value: the
/// index of the value's opening quote and of its closing quote (`body.len()` when the body is
/// cut inside the value).
fn secret_value_at(body: &[u8], i: usize) -> Option<(usize, usize)> {
    let limit = body.len().min(i + 2 + MAX_SECRET_NAME_BYTES);
    let end_quote = (i + 1..limit).find(|&e| body[e] == b'"' && !escaped(body, e))?;
    let raw = &body[i + 1..end_quote];
    let secret = if raw.contains(&b'\\') {
        decode_json_string(raw).is_some_and(|name| REDACTED_MEMBERS.contains(&name.as_str()))
    } else {
        // the common spelling, compared without decoding (and without allocating)
        REDACTED_MEMBERS.iter().any(|n| n.as_bytes() == raw)
    };
    if !secret {
        return None;
    }
    // `"name"`, blanks, `:`, blanks, then a string value?
    let blanks = |mut j: usize| {
        while j < body.len() && body[j].is_ascii_whitespace() {
            j += 1;
        }
        j
    };
    let colon = blanks(end_quote + 1);
    if body.get(colon) != Some(&b':') {
        return None;
    }
    let j = blanks(colon + 1);
    if body.get(j) != Some(&b'"') {
        return None;
    }
    // The value's end: the next quote not escaped (or the end of a cut body).
    let mut k = j + 1;
    while k < body.len() && (body[k] != b'"' || escaped(body, k)) {
        k += 1;
    }
    Some((j, k))
}

/// The text of a JSON string's contents (between its quotes), escapes decoded; `None` when it
/// is not valid (a bad escape, a lone surrogate, a raw control character, not UTF-8), which no
/// secret name is.
fn decode_json_string(raw: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(raw).ok()?;
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(match chars.next()? {
                '"' => '"',
                '\\' => '\\',
                '/' => '/',
                'b' => '\u{8}',
                'f' => '\u{c}',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'u' => {
                    let hi = hex4(&mut chars)?;
                    match hi {
                        0xD800..=0xDBFF => {
                            if (chars.next()?, chars.next()?) != ('\\', 'u') {
                                return None;
                            }
                            let lo = hex4(&mut chars)?;
                            if !(0xDC00..=0xDFFF).contains(&lo) {
                                return None;
                            }
                            char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?
                        }
                        _ => char::from_u32(hi)?,
                    }
                }
                _ => return None,
            }),
            c if c < ' ' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// Four hex digits of a `\u` escape.
fn hex4(chars: &mut std::str::Chars) -> Option<u32> {
    (0..4).try_fold(0, |n, _| Some(n * 16 + chars.next()?.to_digit(16)?))
}

/// True when the byte at `at` follows an odd number of backslashes.
fn escaped(body: &[u8], at: usize) -> bool {
    body[..at].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

/// The capture file and its rotation, on the writer thread.
///
/// Why rotation counts only bytes that reached the file: on a full disk every write fails, and
/// counting what was merely attempted made the file look full again and again, so each
/// rotation pushed a good file out and kept an empty or torn one instead. Now a file rotates
/// only once it really holds `max_bytes`, and an empty file never rotates.
struct Rotation {
    path: PathBuf,
    max_bytes: u64,
    keep: u32,
    /// Bytes the current file held when it was opened (0 for a file a rotation began).
    existing: u64,
    /// Opens the file a rotation begins.
    open: OpenFn,
    /// See [`CaptureOptions::hash_arguments`].
    hash_arguments: bool,
    batch: LineBatch,
    stats: WriterStats,
    scratch: Vec<u8>,
    sessions: SessionNames,
}

impl Rotation {
    /// Bytes in the current file, written or batched (failed writes not included).
    fn size(&self) -> u64 {
        self.existing + self.batch.written() + self.batch.pending()
    }

    fn push(&mut self, line: &CaptureLine) {
        self.scratch.clear();
        line.write_to(&mut self.scratch);
        let n = self.scratch.len() as u64 + 1;
        if self.size() > 0 && self.size() + n > self.max_bytes {
            // Write the batch first: only what reaches the file decides (see the type's doc).
            self.batch.write(&mut self.stats);
            if self.size() > 0 && self.size() + n > self.max_bytes {
                self.rotate();
            }
        }
        let scratch = &self.scratch;
        self.batch
            .push_with(&mut self.stats, |buf| buf.extend_from_slice(scratch));
    }

    /// `FILE` becomes `FILE.1` (older ones shift up, the one past `keep` goes) and a new `FILE`
    /// begins. A failure is a write error like any other: reported and counted; the next
    /// writes try to open `FILE` again (see [`Reopen`]).
    fn rotate(&mut self) {
        self.batch.write(&mut self.stats);
        let out = match rotate_files(&self.path, self.keep).and_then(|()| (self.open)(&self.path)) {
            Ok(out) => out,
            Err(e) => Box::new(Reopen {
                path: self.path.clone(),
                why: format!("rotating {}: {e}", self.path.display()),
                open: self.open,
                out: None,
            }),
        };
        self.batch.switch_to(out, &mut self.stats);
        self.existing = 0;
    }
}

fn rotated(path: &Path, n: u32) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{n}"));
    PathBuf::from(s)
}

/// Shifts the rotated files up and renames `FILE` to `FILE.1` (or removes it with `keep` 0).
fn rotate_files(path: &Path, keep: u32) -> io::Result<()> {
    if keep == 0 {
        std::fs::remove_file(path).or_else(|e| match e.kind() {
            io::ErrorKind::NotFound => Ok(()),
            _ => Err(e),
        })?;
    } else {
        let _ = std::fs::remove_file(rotated(path, keep));
        for n in (1..keep).rev() {
            let from = rotated(path, n);
            if from.exists() {
                std::fs::rename(&from, rotated(path, n + 1))?;
            }
        }
        std::fs::rename(path, rotated(path, 1))?;
    }
    Ok(())
}

/// The output after a rotation failed: each write tries to open `FILE` again (appending), so
/// the capture goes on once the cause is gone instead of losing every later line.
struct Reopen {
    path: PathBuf,
    why: String,
    open: OpenFn,
    out: Option<Box<dyn Write + Send>>,
}

impl Write for Reopen {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.out.is_none() {
            match (self.open)(&self.path) {
                Ok(out) => self.out = Some(out),
                Err(e) => return Err(io::Error::other(format!("{}; reopening: {e}", self.why))),
            }
        }
        self.out.as_mut().expect("just opened").write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.as_mut().map_or(Ok(()), |o| o.flush())
    }
}

fn write_loop(rx: UnboundedReceiver<Box<Finished>>, mut files: Rotation) -> WriterStats {
    linger_loop(
        rx,
        &mut files,
        |f, done| {
            let Finished {
                exchange,
                end,
                answered,
                verdict,
            } = *done;
            let line =
                exchange.into_line(&mut f.sessions, end, answered, verdict, f.hash_arguments);
            f.push(&line);
        },
        |f| f.batch.write(&mut f.stats),
    );
    files.stats
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_members_are_redacted_and_numeric_codes_stay() {
        let body = br#"{"access_token":"AT-1","refresh_token" : "RT\"2","error":{"code":-32601},"x":"say \"code\":\"no\"","code":"C-3"}"#;
        let out = String::from_utf8(redact_members(body)).unwrap();
        assert!(
            !out.contains("AT-1") && !out.contains("RT") && !out.contains("C-3"),
            "{out}"
        );
        assert!(out.contains(r#""code":-32601"#), "{out}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["access_token"], "REDACTED");
        assert_eq!(v["refresh_token"], "REDACTED");
        // SSE data lines and a body cut inside the secret.
        let sse = b"event: message\ndata: {\"id_token\":\"ID-4\"}\n\n";
        let out = String::from_utf8(redact_members(sse)).unwrap();
        assert_eq!(out, "event: message\ndata: {\"id_token\":\"REDACTED\"}\n\n");
        let cut = br#"{"client_secret":"CS-5"#;
        assert_eq!(redact_members(cut), br#"{"client_secret":"REDACTED"#);
    }

    /// A member name is compared after its JSON escapes are decoded: `"access\u005ftoken"` is
    /// the member `access_token` to every JSON reader, so it is redacted as that spelling is.
    #[test]
    fn escaped_member_names_are_redacted_as_they_decode() {
        let body = br#"{"access_token":"AT-1","access\u005ftoken":"AT-2","\u0061ccess_token":"AT-3","\u0063\u006F\u0064\u0065":"C-4","client\/secret":"keep-1","access\"token":"keep-2","refresh_token\u0000":"keep-3"}"#;
        let out = String::from_utf8(redact_members(body)).unwrap();
        for secret in ["AT-1", "AT-2", "AT-3", "C-4"] {
            assert!(!out.contains(secret), "{secret} in {out}");
        }
        let v: Value = serde_json::from_str(&out).unwrap();
        let decoded: Value = serde_json::from_slice(body).unwrap();
        // serde_json keeps the last of duplicate members: each spelling is checked on its own.
        assert_eq!(v["access_token"], "REDACTED");
        assert_eq!(v["code"], "REDACTED");
        for kept in ["client/secret", "access\"token", "refresh_token\u{0}"] {
            assert_eq!(v[kept], decoded[kept], "{kept}: {out}");
        }
        for (name, value) in [
            (r#""access\u005ftoken""#, "AT-2"),
            (r#""\u0061ccess_token""#, "AT-3"),
        ] {
            let one = format!(r#"{{{name}:"{value}"}}"#);
            let out = String::from_utf8(redact_members(one.as_bytes())).unwrap();
            assert_eq!(out, format!(r#"{{{name}:"REDACTED"}}"#));
        }
    }

    /// The name decoder reads what serde_json reads, and refuses what it refuses.
    #[test]
    fn json_string_contents_decode_as_serde_does() {
        for raw in [
            r#"plain"#,
            r#"a\"b\\c\/d\b\f\n\r\t"#,
            r#"\u0041\u00e9\u20AC"#,
            r#"\ud83d\ude00 é"#,
        ] {
            let want: String = serde_json::from_str(&format!("\"{raw}\"")).unwrap();
            assert_eq!(decode_json_string(raw.as_bytes()), Some(want), "{raw}");
        }
        for bad in [
            r#"\x"#,
            r#"\u12"#,
            r#"\ud83d"#,
            r#"\ud83dx"#,
            r#"\ude00"#,
            "a\u{1}",
            "\\",
        ] {
            assert!(
                serde_json::from_str::<String>(&format!("\"{bad}\"")).is_err(),
                "{bad}"
            );
            assert_eq!(decode_json_string(bad.as_bytes()), None, "{bad}");
        }
    }

    fn capture_in(name: &str, max_bytes: u64, keep: u32) -> (Arc<Capture>, CaptureWriter, PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("mcp-triage-capture-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.jsonl");
        let mut o = CaptureOptions::new(&path);
        o.max_bytes = max_bytes;
        o.keep = keep;
        o.max_body = 16;
        let (c, w) = start(o).unwrap();
        (c, w, path)
    }

    fn exchange(c: &Capture, i: u64) {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"t","arguments":{{"b":1,"a":2}}}}}}"#
        );
        let mut x = c.begin(
            "http",
            "POST",
            "/mcp?access_token=SECRET",
            [
                ("authorization", &b"Bearer SECRET"[..]),
                ("mcp-session-id", b"abc"),
                ("content-type", b"application/json"),
            ]
            .into_iter(),
            Some("abc"),
        );
        x.request_body(body.as_bytes(), false);
        x.response_head(
            200,
            c.headers(
                [
                    ("content-type", &b"application/json"[..]),
                    ("set-cookie", b"SECRET"),
                ]
                .into_iter(),
            ),
        );
        x.chunk(br#"{"jsonrpc":"2.0","id":1,"#);
        x.chunk(br#""result":{}}"#);
        x.finish(c, BodyEnd::Complete, 0, "TOOL_SUCCESS");
    }

    #[test]
    fn a_line_has_the_format_members_and_no_secret() {
        let (c, w, path) = capture_in("line", 1 << 20, 1);
        exchange(&c, 7);
        drop(c);
        assert_eq!(w.drain().records, 1);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("SECRET"), "{text}");
        let v: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(v["capture"], 1);
        assert_eq!(v["seq"], 1);
        assert_eq!(v["method"], "tools/call");
        assert_eq!(v["tool"], "t");
        assert_eq!(v["expectId"], 7);
        // The canonical JSON of the arguments: keys sorted, no blanks.
        let want = mcp_triage_wire::canonical::hex(&<sha2::Sha256 as sha2::Digest>::digest(
            br#"{"a":2,"b":1}"#,
        ));
        assert_eq!(v["argumentsHash"], format!("sha256:{want}"));
        assert_eq!(v["request"]["path"], "/mcp?access_token=REDACTED");
        assert_eq!(v["sessionId"], "s1");
        assert_eq!(v["request"]["headers"]["mcp-session-id"], "s1");
        assert_eq!(v["chunks"].as_array().unwrap().len(), 2);
        assert_eq!(v["bodyTruncated"], true, "16 bytes kept of 37");
        assert_eq!(v["body"].as_str().unwrap().len(), 16);
        assert_eq!(v["request"]["bodyTruncated"], true);
        assert_eq!(v["end"], "complete");
        assert_eq!(v["verdict"], "TOOL_SUCCESS");
        // The format's reader reads the line back as it was written.
        let line = CaptureLine::read(text.trim()).unwrap();
        assert_eq!((line.end, line.seq), (BodyEnd::Complete, 1));
        let mut again = Vec::new();
        line.write_to(&mut again);
        assert_eq!(again, text.trim().as_bytes());
    }

    #[test]
    fn chunks_past_the_limit_add_to_the_last_entry() {
        let (c, w, _) = capture_in("chunks", 1 << 20, 1);
        let mut x = c.begin_stdio(None);
        x.response_head(200, BTreeMap::new());
        for _ in 0..MAX_CHUNKS + 10 {
            x.chunk(b"ab");
        }
        assert_eq!(x.chunks.len(), MAX_CHUNKS);
        let total: u64 = x.chunks.iter().map(|c| c.1).sum();
        assert_eq!(
            total,
            2 * (MAX_CHUNKS as u64 + 10),
            "every byte is still counted"
        );
        assert_eq!(x.chunks.last().unwrap().1, 22);
        drop(c);
        w.drain();
    }

    #[test]
    fn files_rotate_and_only_keep_are_kept() {
        let (c, w, path) = capture_in("rotate", 1500, 2);
        for i in 0..12 {
            exchange(&c, i);
        }
        drop(c);
        let stats = w.drain();
        assert_eq!((stats.records, stats.write_errors), (12, 0));
        let lines = |p: &Path| {
            std::fs::read_to_string(p)
                .map(|t| t.lines().count())
                .unwrap_or(0)
        };
        let (now, one, two) = (
            lines(&path),
            lines(&rotated(&path, 1)),
            lines(&rotated(&path, 2)),
        );
        assert!(now > 0 && one > 0 && two > 0, "{now} {one} {two}");
        assert!(
            !rotated(&path, 3).exists(),
            "only --capture-keep 2 rotated files"
        );
        for p in [path.clone(), rotated(&path, 1), rotated(&path, 2)] {
            assert!(
                std::fs::metadata(&p).unwrap().len() <= 1500,
                "{}",
                p.display()
            );
        }
        // The newest lines are in FILE; seq grows from .2 to .1 to FILE.
        let last_seq = |p: &Path| -> u64 {
            let t = std::fs::read_to_string(p).unwrap();
            serde_json::from_str::<Value>(t.lines().last().unwrap()).unwrap()["seq"]
                .as_u64()
                .unwrap()
        };
        assert!(last_seq(&rotated(&path, 2)) < last_seq(&rotated(&path, 1)));
        assert_eq!(last_seq(&path), 12);
    }

    /// A disk with no room left: every write fails as write(2) does on a full file system.
    struct FullDisk;

    impl Write for FullDisk {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from_raw_os_error(28)) // ENOSPC
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn open_full(_: &Path) -> io::Result<Box<dyn Write + Send>> {
        Ok(Box::new(FullDisk))
    }

    /// Issue 23 item 3: on a full disk the failed writes used to count toward rotation, so
    /// the good files were shifted out and replaced by empty ones. Now nothing rotates: FILE,
    /// FILE.1 and FILE.2 keep what they held, and every line is counted lost.
    #[test]
    fn a_full_disk_never_rotates_the_good_files_away() {
        let dir =
            std::env::temp_dir().join(format!("mcp-triage-capture-{}-full", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.jsonl");
        let good = [
            (path.clone(), "{\"good\":0}\n"),
            (rotated(&path, 1), "{\"good\":1}\n"),
            (rotated(&path, 2), "{\"good\":2}\n"),
        ];
        for (p, text) in &good {
            std::fs::write(p, text).unwrap();
        }
        let mut o = CaptureOptions::new(&path);
        o.max_bytes = 1500;
        o.keep = 2;
        o.max_body = 16;
        let size = good[0].1.len() as u64;
        let (c, w) = start_on(o, Box::new(FullDisk), false, size, open_full).unwrap();
        for i in 0..40 {
            exchange(&c, i);
        }
        drop(c);
        let stats = w.drain();
        assert_eq!((stats.records, stats.lost), (0, 40));
        assert!(stats.write_errors >= 1);
        for (p, text) in &good {
            assert_eq!(
                std::fs::read_to_string(p).unwrap(),
                *text,
                "{} is intact",
                p.display()
            );
        }
        assert!(!rotated(&path, 3).exists());
    }

    /// A file a rotation began on a disk that then fills stays the current file: later
    /// failed lines never rotate it (empty) over the good `.1`.
    #[test]
    fn a_disk_that_fills_after_a_rotation_keeps_the_rotated_file() {
        let (_, _, path) = capture_in("fills", 1, 1);
        std::fs::write(&path, "{\"good\":0}\n").unwrap();
        let mut o = CaptureOptions::new(&path);
        o.max_bytes = 1500;
        o.keep = 1;
        o.max_body = 16;
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        // The current file is full already: the first line rotates it, then the disk is full.
        let (c, w) = start_on(o, Box::new(file), false, 1500, open_full).unwrap();
        for i in 0..40 {
            exchange(&c, i);
        }
        drop(c);
        let stats = w.drain();
        assert_eq!((stats.records, stats.lost), (0, 40));
        assert_eq!(
            std::fs::read_to_string(rotated(&path, 1)).unwrap(),
            "{\"good\":0}\n",
            "the rotated file is the good one, not an empty one"
        );
    }

    /// Issue 22: the start errors are typed, with the same sentences the CLI printed when they
    /// were strings, and the I/O cause as the source.
    #[test]
    fn start_errors_keep_their_sentences_and_sources() {
        let mut o = CaptureOptions::new("unused.jsonl");
        o.max_bytes = 0;
        let Err(e) = start(o) else {
            panic!("a capture started with --capture-max-bytes 0");
        };
        assert!(matches!(e, CaptureError::MaxBytesZero));
        assert_eq!(e.to_string(), "--capture-max-bytes must be at least 1");

        let path = std::env::temp_dir()
            .join(format!("mcp-triage-capture-{}-absent", std::process::id()))
            .join("no-such-dir")
            .join("c.jsonl");
        let Err(e) = start(CaptureOptions::new(&path)) else {
            panic!("a capture started in a directory that does not exist");
        };
        let CaptureError::Open {
            path: named,
            source,
        } = &e
        else {
            panic!("{e:?}");
        };
        assert_eq!(named, &path);
        assert_eq!(source.kind(), io::ErrorKind::NotFound);
        assert_eq!(
            e.to_string(),
            format!("cannot open --capture {}: {source}", path.display())
        );
        assert!(std::error::Error::source(&e).is_some());
    }
}
