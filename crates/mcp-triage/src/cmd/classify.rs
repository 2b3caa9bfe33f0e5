//! `mcp-triage classify`: the offline classifier, for one response or an exchange file.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use clap::{Args, ValueEnum};
use mcp_triage_core::exchange::Exchange;
use mcp_triage_core::{
    classify, CallContext, Limits, Outcome, OutputSchema, ProtocolVersion, RequestId, ResponseHead,
    Verdict,
};

pub const EXAMPLES: &str = "\
Examples:
  mcp-triage classify response.json
  mcp-triage classify --status 503 --header 'Retry-After: 2' body.json --format json
  curl -s ... | mcp-triage classify --content-type text/event-stream --expect-id 7 -
  mcp-triage classify --batch exchanges.jsonl
  mcp-triage classify --batch exchanges.jsonl --each --format text

Exit status: 0 when it classified (whatever the verdict), 2 on bad usage or unreadable input.";

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

    /// With --batch: print one verdict a line, in input order, instead of the summary.
    #[arg(long, requires = "batch")]
    each: bool,

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

    /// With --batch: the longest line accepted.
    #[arg(long, value_name = "BYTES", default_value_t = 256 << 20)]
    max_line_bytes: usize,
}

fn parse_header(s: &str) -> Result<(String, String), String> {
    let (name, value) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?} is not `Name: value`"))?;
    let name = name.trim();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!("{name:?} is not a header name"));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

fn parse_id(s: &str) -> Result<RequestId, String> {
    if let Ok(n) = s.parse::<i64>() {
        return Ok(RequestId::Number(n));
    }
    if s.starts_with('"') {
        return serde_json::from_str::<String>(s)
            .map(RequestId::String)
            .map_err(|e| format!("{s} is not a JSON string: {e}"));
    }
    Ok(RequestId::String(s.to_string()))
}

fn parse_version(s: &str) -> Result<ProtocolVersion, String> {
    ProtocolVersion::parse(s).ok_or_else(|| {
        format!("{s:?} is not a protocol version (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28, unknown)")
    })
}

fn parse_now(s: &str) -> Result<SystemTime, String> {
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
    }
    httpdate::parse_http_date(s)
        .map_err(|_| format!("{s:?} is neither an HTTP-date nor Unix seconds"))
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

fn base_context(args: &ClassifyArgs) -> Result<CallContext, String> {
    let mut ctx = CallContext::new(args.expect_id.clone())
        .with_protocol_version(args.protocol_version)
        .with_now(args.now.unwrap_or_else(SystemTime::now))
        .with_limits(Limits {
            max_body_bytes: args.max_body_bytes,
            max_event_bytes: args.max_event_bytes,
            max_stream_bytes: args.max_stream_bytes,
            max_depth: args.max_depth,
            ..Limits::DEFAULT
        });
    if let Some(path) = &args.output_schema {
        let text = std::fs::read(path)
            .map_err(|e| format!("cannot read --output-schema {}: {e}", path.display()))?;
        let schema: serde_json::Value = serde_json::from_slice(&text)
            .map_err(|e| format!("--output-schema {} is not JSON: {e}", path.display()))?;
        let compiled = OutputSchema::compile(&schema)
            .map_err(|e| format!("--output-schema {}: {e}", path.display()))?;
        ctx = ctx.with_output_schema(Arc::new(compiled));
    }
    Ok(ctx)
}

fn print_verdict(out: &mut impl Write, v: &Verdict, format: Format) -> io::Result<()> {
    match format {
        Format::Text => writeln!(out, "{}", v.to_text_line()),
        Format::Json => {
            serde_json::to_writer(&mut *out, v)?;
            out.write_all(b"\n")
        }
    }
}

pub fn run(args: ClassifyArgs) -> Result<ExitCode, String> {
    let ctx = base_context(&args)?;
    if let Some(batch) = &args.batch {
        return run_batch(batch, &args, &ctx);
    }
    let Some(file) = &args.file else {
        return Err("give a FILE (or - for standard input), or --batch FILE.jsonl".to_string());
    };
    let body = read_input(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let mut head = ResponseHead::new(args.status).content_type(&args.content_type);
    for (name, value) in &args.headers {
        head = head.header(name.clone(), value.clone());
    }
    let v = classify(&head, &body, &ctx);
    let stdout = io::stdout();
    print_verdict(&mut stdout.lock(), &v, args.format.unwrap_or(Format::Text))
        .map_err(|e| format!("cannot write the verdict: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// Outcome counts in first-seen order, as the seed's `classify-batch.mjs` prints them.
#[derive(Default)]
struct Summary {
    verdicts: u64,
    bytes: u64,
    outcomes: Vec<(Outcome, u64)>,
}

impl Summary {
    fn add(&mut self, outcome: Outcome, bytes: usize) {
        self.verdicts += 1;
        self.bytes += bytes as u64;
        match self.outcomes.iter_mut().find(|(o, _)| *o == outcome) {
            Some((_, n)) => *n += 1,
            None => self.outcomes.push((outcome, 1)),
        }
    }

    fn to_json_line(&self) -> String {
        let outcomes: Vec<String> = self
            .outcomes
            .iter()
            .map(|(o, n)| format!("\"{o}\":{n}"))
            .collect();
        format!(
            "{{\"verdicts\":{},\"bytes\":{},\"outcomes\":{{{}}}}}",
            self.verdicts,
            self.bytes,
            outcomes.join(",")
        )
    }
}

fn run_batch(path: &PathBuf, args: &ClassifyArgs, base: &CallContext) -> Result<ExitCode, String> {
    let file = File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let format = args.format.unwrap_or(Format::Json);
    let mut summary = Summary::default();
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        let n = read_bounded_line(&mut reader, &mut line, args.max_line_bytes)
            .map_err(|e| format!("{}:{}: {e}", path.display(), number + 1))?;
        if n == 0 {
            break;
        }
        number += 1;
        let text = trim_line_end(&line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue; // blank lines separate nothing; the seed skips them too
        }
        let x = Exchange::parse(text).map_err(|e| format!("{}:{number}: {e}", path.display()))?;
        let ctx = x.context(base);
        let v = classify(&x.head, &x.body, &ctx);
        summary.add(v.outcome, x.body.len());
        if args.each {
            print_verdict(&mut out, &v, format).map_err(|e| format!("cannot write: {e}"))?;
        }
    }
    if !args.each {
        match format {
            Format::Json => writeln!(out, "{}", summary.to_json_line()),
            Format::Text => {
                let parts: Vec<String> = summary
                    .outcomes
                    .iter()
                    .map(|(o, n)| format!("{}/{o} {n}", o.layer()))
                    .collect();
                writeln!(
                    out,
                    "{} verdicts, {} body bytes: {}",
                    summary.verdicts,
                    summary.bytes,
                    parts.join(", ")
                )
            }
        }
        .map_err(|e| format!("cannot write: {e}"))?;
    }
    out.flush().map_err(|e| format!("cannot write: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && (line[end - 1] == b'\n' || line[end - 1] == b'\r') {
        end -= 1;
    }
    &line[..end]
}

/// Reads one line (with its `\n`) into `buf`, refusing lines longer than `max`.
fn read_bounded_line(r: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<usize> {
    let mut total = 0;
    loop {
        let available = r.fill_buf()?;
        if available.is_empty() {
            return Ok(total);
        }
        let (used, done) = match memchr_newline(available) {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if buf.len() + used > max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("line longer than --max-line-bytes {max}"),
            ));
        }
        buf.extend_from_slice(&available[..used]);
        r.consume(used);
        total += used;
        if done {
            return Ok(total);
        }
    }
}

fn memchr_newline(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}
