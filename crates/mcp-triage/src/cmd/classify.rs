//! `mcp-triage classify`: the offline classifier, for one response or an exchange file. The
//! arguments are parsed here; `--batch` runs `mcp_triage_proxy::batch`, the core classifies.

use crate::exit::Exit;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use clap::{Args, ValueEnum};
use mcp_triage_core::{
    classify, CallContext, Limits, OutputSchema, ProtocolVersion, RequestId, ResponseHead,
    SchemaError,
};
use mcp_triage_proxy::batch::{self, BatchError, BatchOptions, VerdictFormat};

pub const EXAMPLES: &str = "\
Examples:
  mcp-triage classify response.json
  mcp-triage classify --status 503 --header 'Retry-After: 2' body.json --format json
  curl -s ... | mcp-triage classify --content-type text/event-stream --expect-id 7 -
  mcp-triage classify --batch exchanges.jsonl
  mcp-triage classify --batch exchanges.jsonl --each --format text

Exit status: 0 when it classified (whatever the verdict); 1 when --batch skipped bad lines (each
reported in place, counted in the summary and on stderr); 2 on bad usage, unreadable input, or the
first bad line with --fail-fast.";

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
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
    file: Option<PathBuf>,

    /// An exchange file (JSON Lines, see bench/README.md) to classify line by line.
    #[arg(long, value_name = "FILE.jsonl")]
    batch: Option<PathBuf>,

    /// With --batch: print one verdict a line, in input order, instead of the summary (a bad
    /// line prints {"line":N,"error":"..."} in its place).
    #[arg(long)]
    each: bool,

    /// With --batch: stop at the first bad line (exit 2, naming it) instead of reporting it and
    /// going on.
    #[arg(long)]
    fail_fast: bool,

    /// HTTP status of the response.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u16).range(100..=999))]
    status: u16,

    /// Content-Type of the response; an empty string means no header.
    #[arg(long, value_name = "CT", default_value = "application/json")]
    content_type: String,

    /// A further response header, `Name: value` (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE", value_parser = parse_header)]
    headers: Vec<(String, String)>,

    /// The request id the response must answer: an integer, or a string (quote it as JSON,
    /// e.g. '"1"', to make a digit string a string id).
    #[arg(long, value_name = "ID", default_value = "1", value_parser = parse_id)]
    expect_id: RequestId,

    /// The negotiated protocol version (2024-11-05 … 2026-07-28), or `unknown` to be lenient.
    #[arg(long, value_name = "V", default_value = "unknown", value_parser = parse_version)]
    protocol_version: ProtocolVersion,

    /// The tool's outputSchema (a JSON file) to validate structuredContent against.
    #[arg(long, value_name = "FILE")]
    output_schema: Option<PathBuf>,

    /// Output format (default: text for one response, the summary line for --batch).
    #[arg(long, value_enum)]
    format: Option<Format>,

    /// "Now" for Retry-After dates: an HTTP-date or Unix seconds (default: the system clock).
    #[arg(long, value_name = "DATE", value_parser = parse_now)]
    now: Option<SystemTime>,

    #[command(flatten)]
    limits: LimitArgs,

    /// With --batch: worker threads (default: the number of cores, at most 8).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,

    /// With --batch: the longest line accepted.
    #[arg(long, value_name = "BYTES", default_value_t = 256 << 20)]
    max_line_bytes: usize,
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
}

impl LimitArgs {
    /// The core's limits these options set (the others at their defaults).
    pub fn limits(&self) -> Limits {
        Limits {
            max_body_bytes: self.max_body_bytes,
            max_event_bytes: self.max_event_bytes,
            max_stream_bytes: self.max_stream_bytes,
            max_depth: self.max_depth,
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

/// Why `classify` did not classify.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClassifyError {
    /// `--each`, `--jobs` or `--fail-fast` without `--batch`.
    #[error("--each, --jobs and --fail-fast go with --batch FILE.jsonl")]
    BatchOnlyOptions,
    /// Neither a FILE nor `--batch`.
    #[error("give a FILE (or - for standard input), or --batch FILE.jsonl")]
    NoInput,
    /// The `--output-schema` file cannot be read.
    #[error("cannot read --output-schema {}: {source}", path.display())]
    SchemaUnreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The `--output-schema` file is not JSON.
    #[error("--output-schema {} is not JSON: {source}", path.display())]
    SchemaNotJson {
        /// The file.
        path: PathBuf,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// The `--output-schema` file is not a schema the core can compile.
    #[error("--output-schema {}: {source}", path.display())]
    Schema {
        /// The file.
        path: PathBuf,
        /// The compiler's error.
        source: SchemaError,
    },
    /// The response body cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        /// The file (`-`: standard input).
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The verdict of one response could not be written.
    #[error("cannot write the verdict: {0}")]
    WriteVerdict(#[source] io::Error),
    /// The batch's summary could not be written.
    #[error("cannot write: {0}")]
    WriteSummary(#[source] io::Error),
    /// The batch did not run to its end.
    #[error(transparent)]
    Batch(#[from] BatchError),
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

fn read_input(path: &PathBuf) -> io::Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        io::stdin().lock().read_to_end(&mut buf)?;
        Ok(buf)
    } else {
        std::fs::read(path)
    }
}

fn base_context(args: &ClassifyArgs) -> Result<CallContext, ClassifyError> {
    let mut ctx = CallContext::new(args.expect_id.clone())
        .with_protocol_version(args.protocol_version)
        .with_now(args.now.unwrap_or_else(SystemTime::now))
        .with_limits(args.limits.limits());
    if let Some(path) = &args.output_schema {
        let path = path.clone();
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(source) => return Err(ClassifyError::SchemaUnreadable { path, source }),
        };
        let schema: serde_json::Value = match serde_json::from_slice(&text) {
            Ok(schema) => schema,
            Err(source) => return Err(ClassifyError::SchemaNotJson { path, source }),
        };
        let compiled = OutputSchema::compile(&schema)
            .map_err(|source| ClassifyError::Schema { path, source })?;
        ctx = ctx.with_output_schema(Arc::new(compiled));
    }
    Ok(ctx)
}

impl From<Format> for VerdictFormat {
    fn from(f: Format) -> VerdictFormat {
        match f {
            Format::Text => VerdictFormat::Text,
            Format::Json => VerdictFormat::Json,
        }
    }
}

pub fn run(args: ClassifyArgs) -> Result<ExitCode, ClassifyError> {
    if args.batch.is_none() && (args.each || args.jobs.is_some() || args.fail_fast) {
        return Err(ClassifyError::BatchOnlyOptions);
    }
    let ctx = base_context(&args)?;
    if let Some(batch) = &args.batch {
        return run_batch(batch, &args, &ctx);
    }
    let Some(file) = &args.file else {
        return Err(ClassifyError::NoInput);
    };
    let body = read_input(file).map_err(|source| ClassifyError::Unreadable {
        path: file.clone(),
        source,
    })?;
    let mut head = ResponseHead::new(args.status).content_type(&args.content_type);
    for (name, value) in &args.headers {
        head = head.header(name.clone(), value.clone());
    }
    let v = classify(&head, &body, &ctx);
    let format = args.format.unwrap_or(Format::Text).into();
    batch::write_verdict(&mut io::stdout().lock(), &v, format)
        .map_err(ClassifyError::WriteVerdict)?;
    Ok(ExitCode::SUCCESS)
}

/// `--batch`: the exchange file classified by `mcp_triage_proxy::batch`, then the summary
/// line (unless `--each`) and, when lines were skipped, a word on stderr and exit 1.
fn run_batch(
    path: &Path,
    args: &ClassifyArgs,
    base: &CallContext,
) -> Result<ExitCode, ClassifyError> {
    let format = args.format.unwrap_or(Format::Json);
    let opts = BatchOptions {
        each: args.each.then_some(format.into()),
        fail_fast: args.fail_fast,
        jobs: args.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(8)
        }),
        max_line_bytes: args.max_line_bytes,
    };
    let summary = batch::classify_file(path, &opts, base, io::stdout())?;
    if !args.each {
        let line = match format {
            Format::Json => summary.to_json_line(),
            Format::Text => summary.to_text_line(),
        };
        writeln!(io::stdout().lock(), "{line}").map_err(ClassifyError::WriteSummary)?;
    }
    match summary.first_bad_lines().first() {
        None => Ok(ExitCode::SUCCESS),
        Some(first) => {
            eprintln!(
                "mcp-triage: {}: {} bad line(s) skipped (reported in the output); the first {} (--fail-fast stops there)",
                path.display(),
                summary.bad_lines(),
                first.to_text()
            );
            // every good line was classified, but the output is not the whole file's: a script
            // must not mistake it for a clean run (0) or for a batch that did not run (2)
            Ok(Exit::Failed.into())
        }
    }
}
