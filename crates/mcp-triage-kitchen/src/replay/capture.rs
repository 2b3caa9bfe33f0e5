//! A capture file: reading it within its limits, one exchange per non-blank line in `seq`
//! order, and what the whole file tells (the MCP path, the tools it shows).
//!
//! The file is loaded once, before any request is served, and everything wrong with it is a
//! [`CaptureError`] naming the line, so a replay never starts from a half-read file. Parsing a
//! single line is `line`'s job; this module walks the file and owns the file-wide limits
//! (size, number of exchanges).

use std::io::Read as _;

use serde_json::{json, Value};

use super::exchange::CapturedExchange;
use super::key::ReplayKey;
use super::line::{exchange_of, LineError};
use super::options::CaptureLimits;

/// Why a capture file cannot be replayed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// A line is not a capture line; `line` is 1-based.
    #[error("capture line {line}: {source}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        #[source]
        source: LineError,
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

/// A parsed capture file.
#[derive(Clone, Debug)]
pub struct Capture {
    /// Exchanges in `seq` order.
    pub exchanges: Vec<CapturedExchange>,
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
        // Read a line at a time: the whole file in memory beside the exchanges made from it
        // was a third of the peak (issue 41). A file that grew since its size was read is cut
        // at the limit, and the line that crosses it refused as too large.
        let file = std::fs::File::open(path)?;
        let reader = std::io::BufReader::with_capacity(1 << 16, file.take(limits.max_bytes + 1));
        Capture::parse_from(reader, limits)
    }

    /// Parse capture lines (blank lines are skipped) with the default limits.
    pub fn parse(text: &[u8]) -> Result<Capture, CaptureError> {
        Capture::parse_with(text, &CaptureLimits::default())
    }

    /// Parse capture lines (blank lines are skipped). Each line is parsed once, in one pass,
    /// with its `chunks` decoded straight into pairs (no JSON tree of them) and its body moved,
    /// not copied, into the exchange: load time and memory are linear in the file.
    pub fn parse_with(text: &[u8], limits: &CaptureLimits) -> Result<Capture, CaptureError> {
        Capture::parse_from(text, limits)
    }

    /// [`Capture::parse_with`] over a reader, one line in memory at a time.
    fn parse_from(
        mut reader: impl std::io::BufRead,
        limits: &CaptureLimits,
    ) -> Result<Capture, CaptureError> {
        let mut exchanges = Vec::new();
        let mut buf = Vec::new();
        let mut read = 0u64;
        for line in 1.. {
            buf.clear();
            let n = reader.read_until(b'\n', &mut buf)?;
            if n == 0 {
                break;
            }
            read += n as u64;
            if read > limits.max_bytes {
                return Err(CaptureError::TooLarge {
                    size: read,
                    max: limits.max_bytes,
                });
            }
            let raw = buf.strip_suffix(b"\n").unwrap_or(&buf);
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            if raw.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let err = |source: LineError| CaptureError::Line { line, source };
            let s = std::str::from_utf8(raw).map_err(|_| err(LineError::NotUtf8))?;
            if exchanges.len() == limits.max_lines {
                return Err(CaptureError::TooManyLines {
                    line,
                    max: limits.max_lines,
                });
            }
            exchanges.push(exchange_of(line, s, limits).map_err(err)?);
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
