//! `mcp-triage classify`: the offline classifier, for one response or an exchange file.

use crate::exit::Exit;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
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

/// One exchange's verdict under `base`, with the exchange's own settings (id, protocol version,
/// schema, now) over it: the single place where a batch line or a UDF row is classified.
pub fn classify_exchange(x: &Exchange<'_>, base: &CallContext) -> Verdict {
    x.classify(&x.context(base))
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

pub fn parse_now(s: &str) -> Result<SystemTime, String> {
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
        .with_limits(args.limits.limits());
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
    if args.batch.is_none() && (args.each || args.jobs.is_some() || args.fail_fast) {
        return Err("--each, --jobs and --fail-fast go with --batch FILE.jsonl".to_string());
    }
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

/// Outcome counts in first-seen order, as the seed's `classify-batch.mjs` prints them, and the
/// bad lines skipped (their number and the first [`FIRST_BAD_LINES_SHOWN`] of them).
#[derive(Default)]
struct Summary {
    verdicts: u64,
    bytes: u64,
    outcomes: Vec<(Outcome, u64)>,
    bad_lines: u64,
    first_bad_lines: Vec<BadLine>,
}

/// How many bad lines the summary quotes; the rest are only counted (all are in `--each`).
const FIRST_BAD_LINES_SHOWN: usize = 5;

/// A line that is not an exchange: its number (1-based) and why.
#[derive(Clone)]
struct BadLine {
    line: u64,
    error: String,
}

impl BadLine {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "line": self.line, "error": self.error })
    }

    fn to_text(&self) -> String {
        format!("line {}: bad exchange: {}", self.line, self.error)
    }
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

    fn add_bad_line(&mut self, bad: BadLine) {
        self.bad_lines += 1;
        if self.first_bad_lines.len() < FIRST_BAD_LINES_SHOWN {
            self.first_bad_lines.push(bad);
        }
    }

    /// Adds a later part's counts; first-seen order is kept because parts merge in input order.
    fn merge(&mut self, other: &Summary) {
        self.verdicts += other.verdicts;
        self.bytes += other.bytes;
        self.bad_lines += other.bad_lines;
        let room = FIRST_BAD_LINES_SHOWN.saturating_sub(self.first_bad_lines.len());
        self.first_bad_lines
            .extend(other.first_bad_lines.iter().take(room).cloned());
        for (o, n) in &other.outcomes {
            match self.outcomes.iter_mut().find(|(x, _)| x == o) {
                Some((_, m)) => *m += n,
                None => self.outcomes.push((*o, *n)),
            }
        }
    }

    fn to_json_line(&self) -> String {
        let outcomes: Vec<String> = self
            .outcomes
            .iter()
            .map(|(o, n)| format!("\"{o}\":{n}"))
            .collect();
        // Without bad lines the line is exactly the seed's, so the two can be compared.
        let bad = if self.bad_lines == 0 {
            String::new()
        } else {
            let first: Vec<serde_json::Value> =
                self.first_bad_lines.iter().map(BadLine::to_json).collect();
            format!(
                ",\"badLines\":{},\"firstBadLines\":{}",
                self.bad_lines,
                serde_json::Value::Array(first)
            )
        };
        format!(
            "{{\"verdicts\":{},\"bytes\":{},\"outcomes\":{{{}}}{bad}}}",
            self.verdicts,
            self.bytes,
            outcomes.join(",")
        )
    }

    fn to_text_line(&self) -> String {
        let parts: Vec<String> = self
            .outcomes
            .iter()
            .map(|(o, n)| format!("{}/{o} {n}", o.layer()))
            .collect();
        let mut line = format!(
            "{} verdicts, {} body bytes: {}",
            self.verdicts,
            self.bytes,
            parts.join(", ")
        );
        if let Some(first) = self.first_bad_lines.first() {
            line.push_str(&format!(
                "; {} bad line(s) skipped, the first {}",
                self.bad_lines,
                first.to_text()
            ));
        }
        line
    }
}

/// A run of whole lines read together, so that workers and channels see few, large units; or
/// one line longer than `--max-line-bytes`, which the reader skipped (`too_long` says why).
struct Block {
    first_line: u64,
    bytes: Vec<u8>,
    too_long: Option<String>,
}

/// What a worker made of one block: its share of the summary (bad lines included), its printed
/// verdicts and bad-line records, and with `--fail-fast` the first bad line (the block stops
/// there).
struct BlockResult {
    summary: Summary,
    printed: Vec<u8>,
    error: Option<String>,
}

/// How a worker treats a line that is not an exchange.
#[derive(Clone, Copy)]
struct BatchOutput {
    /// `--each`: print every verdict, and every bad line in its place, in this format.
    each: Option<Format>,
    /// `--fail-fast`: stop at the first bad line.
    fail_fast: bool,
}

impl BlockResult {
    /// Records a bad line: reported and counted, or the end of the batch with `--fail-fast`.
    /// Returns false when the block must stop.
    fn bad_line(&mut self, bad: BadLine, out: BatchOutput) -> bool {
        if out.fail_fast {
            self.error = Some(format!("line {}: {}", bad.line, bad.error));
            return false;
        }
        if let Some(format) = out.each {
            match format {
                Format::Json => {
                    serde_json::to_writer(&mut self.printed, &bad.to_json())
                        .expect("writing to a Vec cannot fail");
                    self.printed.push(b'\n');
                }
                Format::Text => {
                    self.printed.extend_from_slice(bad.to_text().as_bytes());
                    self.printed.push(b'\n');
                }
            }
        }
        self.summary.add_bad_line(bad);
        true
    }
}

/// Bytes per block: large enough that channel traffic is negligible, small enough that the
/// blocks in flight (two per worker plus one being read) keep memory far below 64 MB.
const BLOCK_BYTES: usize = 2 << 20;

fn classify_block(block: &Block, base: &CallContext, out: BatchOutput) -> BlockResult {
    let mut r = BlockResult {
        summary: Summary::default(),
        printed: Vec::new(),
        error: None,
    };
    if let Some(why) = &block.too_long {
        let bad = BadLine {
            line: block.first_line,
            error: why.clone(),
        };
        r.bad_line(bad, out);
        return r;
    }
    for (this, line) in (block.first_line..).zip(SplitLines::new(&block.bytes)) {
        let text = trim_line_end(line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue; // blank lines carry no exchange; the seed skips them too
        }
        let x = match Exchange::parse(text) {
            Ok(x) => x,
            Err(e) => {
                let bad = BadLine {
                    line: this,
                    error: e.to_string(),
                };
                if r.bad_line(bad, out) {
                    continue;
                }
                break;
            }
        };
        let v = classify_exchange(&x, base);
        r.summary.add(v.outcome, x.body.len());
        if let Some(format) = out.each {
            print_verdict(&mut r.printed, &v, format).expect("writing to a Vec cannot fail");
        }
    }
    r
}

/// Classifies an exchange file with `jobs` worker threads. Blocks of lines go to workers
/// round-robin and results are collected round-robin, so output keeps input order without a
/// reorder buffer; channels are bounded, so memory stays at a few blocks whatever the file size.
fn run_batch(path: &PathBuf, args: &ClassifyArgs, base: &CallContext) -> Result<ExitCode, String> {
    use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

    let file = File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut reader = file;
    let format = args.format.unwrap_or(Format::Json);
    let out = BatchOutput {
        each: args.each.then_some(format),
        fail_fast: args.fail_fast,
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(8)
        })
        .max(1);
    let shown = path.display().to_string();

    std::thread::scope(|scope| -> Result<ExitCode, String> {
        let mut to_workers: Vec<SyncSender<Block>> = Vec::new();
        let mut from_workers: Vec<Receiver<BlockResult>> = Vec::new();
        for _ in 0..jobs {
            let (block_tx, block_rx) = sync_channel::<Block>(1);
            let (res_tx, res_rx) = sync_channel::<BlockResult>(1);
            scope.spawn(move || {
                for block in block_rx {
                    if res_tx.send(classify_block(&block, base, out)).is_err() {
                        break;
                    }
                }
            });
            to_workers.push(block_tx);
            from_workers.push(res_rx);
        }

        let writer = scope.spawn(move || -> Result<Summary, String> {
            let stdout = io::stdout();
            let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
            let mut summary = Summary::default();
            let mut turn = 0;
            while let Ok(r) = from_workers[turn].recv() {
                turn = (turn + 1) % from_workers.len();
                summary.merge(&r.summary);
                out.write_all(&r.printed)
                    .map_err(|e| format!("cannot write: {e}"))?;
                if let Some(e) = r.error {
                    out.flush().map_err(|e| format!("cannot write: {e}"))?;
                    return Err(format!("{shown}: {e}"));
                }
            }
            out.flush().map_err(|e| format!("cannot write: {e}"))?;
            Ok(summary)
        });

        let mut sent = 0usize;
        let mut blocks = BlockReader::new(&mut reader, args.max_line_bytes);
        let read_result = loop {
            match blocks.next_block() {
                Ok(Some(block)) => {
                    if to_workers[sent % jobs].send(block).is_err() {
                        break Ok(()); // the writer stopped on an error; it reports it
                    }
                    sent += 1;
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(format!("{}: {e}", path.display())),
            }
        };
        drop(to_workers);
        let summary = writer.join().expect("the writer thread does not panic")?;
        read_result?;
        if !args.each {
            let stdout = io::stdout();
            let mut out = stdout.lock();
            match format {
                Format::Json => writeln!(out, "{}", summary.to_json_line()),
                Format::Text => writeln!(out, "{}", summary.to_text_line()),
            }
            .map_err(|e| format!("cannot write: {e}"))?;
        }
        match summary.first_bad_lines.first() {
            None => Ok(ExitCode::SUCCESS),
            Some(first) => {
                eprintln!(
                    "mcp-triage: {}: {} bad line(s) skipped (reported in the output); the first {} (--fail-fast stops there)",
                    path.display(),
                    summary.bad_lines,
                    first.to_text()
                );
                // every good line was classified, but the output is not the whole file's: a script
                // must not mistake it for a clean run (0) or for a batch that did not run (2)
                Ok(Exit::Failed.into())
            }
        }
    })
}

/// Cuts a file into [`Block`]s of whole lines, reading straight into the block's buffer (one
/// copy from the kernel) and carrying a partial last line over to the next block. A line longer
/// than `max_line` becomes a block of its own that says so; its bytes are read past without being
/// kept, so memory stays bounded and the next line is read as usual.
struct BlockReader<'r, R> {
    reader: &'r mut R,
    max_line: usize,
    carry: Vec<u8>,
    next_line: u64,
    eof: bool,
    /// The bytes at the reader's position belong to a too-long line already reported.
    skipping: bool,
}

impl<'r, R: Read> BlockReader<'r, R> {
    fn new(reader: &'r mut R, max_line: usize) -> Self {
        BlockReader {
            reader,
            max_line,
            carry: Vec::new(),
            next_line: 1,
            eof: false,
            skipping: false,
        }
    }

    /// Reads into `buf`; 0 at the end of the input.
    fn read_into(&mut self, buf: &mut [u8]) -> Result<usize, String> {
        loop {
            match self.reader.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("line {}: {e}", self.next_line)),
            }
        }
    }

    /// The block standing for the too-long line `next_line`.
    fn too_long(&mut self) -> Block {
        let block = Block {
            first_line: self.next_line,
            bytes: Vec::new(),
            too_long: Some(format!(
                "longer than --max-line-bytes {} (skipped)",
                self.max_line
            )),
        };
        self.next_line += 1;
        block
    }

    /// Reads past the rest of a too-long line, keeping what follows its line end.
    fn skip_rest_of_line(&mut self) -> Result<(), String> {
        let mut scratch = vec![0u8; 64 << 10];
        while self.skipping {
            let n = self.read_into(&mut scratch)?;
            if n == 0 {
                self.eof = true;
                self.skipping = false;
            } else if let Some(i) = memchr::memchr(b'\n', &scratch[..n]) {
                self.carry = scratch[i + 1..n].to_vec();
                self.skipping = false;
            }
        }
        Ok(())
    }

    fn next_block(&mut self) -> Result<Option<Block>, String> {
        if self.skipping {
            self.skip_rest_of_line()?;
        }
        if self.eof && self.carry.is_empty() {
            return Ok(None);
        }
        let mut buf = Vec::with_capacity(BLOCK_BYTES + self.carry.len());
        buf.append(&mut self.carry);
        // Read until the block is full and holds at least one line end, or the input ends.
        loop {
            let have_line = memchr::memchr(b'\n', &buf).is_some();
            if self.eof || (buf.len() >= BLOCK_BYTES && have_line) {
                break;
            }
            if !have_line && buf.len() > self.max_line {
                // `buf` is the start of one line, already too long: report it, read past it.
                self.skipping = true;
                return Ok(Some(self.too_long()));
            }
            let want = BLOCK_BYTES.max(buf.len() / 2).min(64 << 20);
            let start = buf.len();
            buf.resize(start + want, 0);
            let n = self.read_into(&mut buf[start..])?;
            buf.truncate(start + n);
            if n == 0 {
                self.eof = true;
            }
        }
        let cut = if self.eof {
            buf.len()
        } else {
            memchr::memrchr(b'\n', &buf).map_or(buf.len(), |i| i + 1)
        };
        self.carry = buf.split_off(cut);
        if buf.is_empty() {
            return Ok(None);
        }
        let mut lines = 0u64;
        let mut line_start = 0usize;
        let mut too_long_at = None;
        for end in memchr::memchr_iter(b'\n', &buf).chain(std::iter::once(buf.len())) {
            if end - line_start > self.max_line {
                too_long_at = Some((line_start, end));
                break;
            }
            if end > line_start || end < buf.len() {
                lines += 1;
            }
            line_start = end + 1;
        }
        if let Some((start, end)) = too_long_at {
            // A too-long line: the lines before it are this block; it comes next, alone.
            let from = if start == 0 {
                (end + 1).min(buf.len())
            } else {
                start
            };
            let mut rest = buf.split_off(from);
            rest.append(&mut self.carry);
            self.carry = rest;
            if start == 0 {
                return Ok(Some(self.too_long()));
            }
        }
        let block = Block {
            first_line: self.next_line,
            bytes: buf,
            too_long: None,
        };
        self.next_line += lines;
        Ok(Some(block))
    }
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && (line[end - 1] == b'\n' || line[end - 1] == b'\r') {
        end -= 1;
    }
    &line[..end]
}

/// Lines of a block, each with its `\n`, found with memchr.
struct SplitLines<'a> {
    rest: &'a [u8],
}

impl<'a> SplitLines<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        SplitLines { rest: bytes }
    }
}

impl<'a> Iterator for SplitLines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        let end = memchr::memchr(b'\n', self.rest).map_or(self.rest.len(), |i| i + 1);
        let (line, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(line)
    }
}
