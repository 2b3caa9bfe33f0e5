//! `classify`'s command line as clap reads it (the "low" arguments): the options, their
//! value parsers and the errors those parsers name. `config.rs` turns them into what
//! the core and the batch engine take; nothing here reads a file.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use clap::{Args, ValueEnum};
use mcp_triage_core::{Limits, ProtocolVersion, RequestId};
use mcp_triage_proxy::batch::VerdictFormat;

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// One line a person can read.
    Text,
    /// The verdict as JSON (one object a line).
    Json,
}

#[derive(Args)]
pub struct ClassifyArgs {
    /// The response body (`-` for standard input). Not with --batch.
    #[arg(value_name = "FILE", conflicts_with = "batch")]
    pub(super) file: Option<PathBuf>,

    /// An exchange file (JSON Lines, see bench/README.md) to classify line by line.
    #[arg(long, value_name = "FILE.jsonl")]
    pub(super) batch: Option<PathBuf>,

    /// With --batch: print one verdict a line, in input order, instead of the summary (a bad
    /// line prints {"line":N,"error":"..."} in its place).
    #[arg(long)]
    pub(super) each: bool,

    /// With --batch: stop at the first bad line (exit 2, naming it) instead of reporting it and
    /// going on.
    #[arg(long)]
    pub(super) fail_fast: bool,

    /// HTTP status of the response.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u16).range(100..=999))]
    pub(super) status: u16,

    /// Content-Type of the response; an empty string means no header.
    #[arg(long, value_name = "CT", default_value = "application/json")]
    pub(super) content_type: String,

    /// A further response header, `Name: value` (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE", value_parser = parse_header)]
    pub(super) headers: Vec<(String, String)>,

    /// The request id the response must answer: an integer, or a string (quote it as JSON,
    /// e.g. '"1"', to make a digit string a string id).
    #[arg(long, value_name = "ID", default_value = "1", value_parser = parse_id)]
    pub(super) expect_id: RequestId,

    /// The negotiated protocol version (2024-11-05 … 2026-07-28), or `unknown` to be lenient.
    #[arg(long, value_name = "V", default_value = "unknown", value_parser = parse_version)]
    pub(super) protocol_version: ProtocolVersion,

    /// The tool's outputSchema (a JSON file) to validate structuredContent against.
    #[arg(long, value_name = "FILE")]
    pub(super) output_schema: Option<PathBuf>,

    /// Output format (default: text for one response, the summary line for --batch).
    #[arg(long, value_enum)]
    pub(super) format: Option<Format>,

    /// "Now" for Retry-After dates and a declared retryNotBefore: an HTTP-date or Unix
    /// seconds (default: the system clock).
    #[arg(long, value_name = "DATE", value_parser = parse_now)]
    pub(super) now: Option<SystemTime>,

    /// Read draft proposals, comma-separated: `tool-failure` (SEP #3313: the failure class a
    /// server declares in an isError result, as toolFailure in the verdict), `sep-2145`
    /// (unknown-tool and output-schema failures as isError results: toolErrorKind); `all`,
    /// `none`.
    #[arg(long, value_name = "LIST", default_value = "none")]
    pub(super) draft: mcp_triage_core::Drafts,

    #[command(flatten)]
    pub(super) limits: LimitArgs,

    /// With --batch: worker threads (default: the number of cores, at most 8).
    #[arg(long, value_name = "N")]
    pub(super) jobs: Option<usize>,

    /// With --batch: the longest line accepted.
    #[arg(long, value_name = "BYTES", default_value_t = 256 << 20)]
    pub(super) max_line_bytes: usize,
}

/// The classifier's limits as options, shared by every command that classifies recorded
/// responses (`classify`, `udf clickhouse`), so they are spelled and defaulted alike.
#[derive(Args, Clone)]
pub struct LimitArgs {
    /// Largest application/json body classified.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT.max_body_bytes)]
    max_body_bytes: u64,

    /// Largest single SSE event.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT.max_event_bytes)]
    max_event_bytes: u64,

    /// Largest SSE stream read before its response.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT.max_stream_bytes)]
    max_stream_bytes: u64,

    /// Deepest JSON nesting classified.
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT.max_depth)]
    max_depth: usize,

    /// Most bytes a body with a Content-Encoding may decode to [default: the body's own limit,
    /// --max-body-bytes or --max-stream-bytes, counts decoded bytes].
    #[arg(long, value_name = "BYTES")]
    max_decoded_bytes: Option<u64>,

    /// Largest ratio of decoded to received bytes once 1 MiB is decoded (a decompression
    /// bomb); 0: not checked.
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT.max_decoded_ratio)]
    max_decoded_ratio: u64,
}

impl LimitArgs {
    /// The core's limits these options set (the others at their defaults).
    pub fn limits(&self) -> Limits {
        Limits {
            max_body_bytes: self.max_body_bytes,
            max_event_bytes: self.max_event_bytes,
            max_stream_bytes: self.max_stream_bytes,
            max_depth: self.max_depth,
            max_decoded_bytes: self.max_decoded_bytes,
            max_decoded_ratio: self.max_decoded_ratio,
            ..Limits::DEFAULT
        }
    }
}

/// A value on `classify`'s command line (or `udf`'s, which shares `--now`) that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// `--header` without a colon.
    #[error("{0:?} is not `Name: value`")]
    NotAHeader(String),
    /// `--header` with an empty name or one with spaces or controls.
    #[error("{0:?} is not a header name")]
    HeaderName(String),
    /// `--expect-id` that starts with a quote but is no JSON string.
    #[error("{text} is not a JSON string: {source}")]
    IdNotJsonString {
        /// The value given.
        text: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// `--protocol-version` that names none.
    #[error("{0:?} is not a protocol version (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28, unknown)")]
    ProtocolVersion(String),
    /// `--now` that is neither form.
    #[error("{0:?} is neither an HTTP-date nor Unix seconds")]
    Now(String),
}

fn parse_header(s: &str) -> Result<(String, String), ValueError> {
    let (name, value) = s
        .split_once(':')
        .ok_or_else(|| ValueError::NotAHeader(s.to_string()))?;
    let name = name.trim();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ValueError::HeaderName(name.to_string()));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

fn parse_id(s: &str) -> Result<RequestId, ValueError> {
    if let Ok(n) = s.parse::<i64>() {
        return Ok(RequestId::Number(n));
    }
    if s.starts_with('"') {
        return serde_json::from_str::<String>(s)
            .map(RequestId::String)
            .map_err(|source| ValueError::IdNotJsonString {
                text: s.to_string(),
                source,
            });
    }
    Ok(RequestId::String(s.to_string()))
}

fn parse_version(s: &str) -> Result<ProtocolVersion, ValueError> {
    ProtocolVersion::parse(s).ok_or_else(|| ValueError::ProtocolVersion(s.to_string()))
}

pub fn parse_now(s: &str) -> Result<SystemTime, ValueError> {
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
    }
    httpdate::parse_http_date(s).map_err(|_| ValueError::Now(s.to_string()))
}

impl From<Format> for VerdictFormat {
    fn from(f: Format) -> VerdictFormat {
        match f {
            Format::Text => VerdictFormat::Text,
            Format::Json => VerdictFormat::Json,
        }
    }
}
