//! `mcp-triage udf clickhouse`: the classifier as a ClickHouse executable user-defined function
//! (`executable` or `executable_pool`). ClickHouse writes the function's arguments on standard
//! input, one row a line in the function's `<format>`, and reads exactly one result a line back,
//! in order. Each row becomes an exchange (as a line of an exchange file) and gets the verdict
//! `classify --batch --each` gives that line: the same `classify_exchange`.
//!
//! Row alignment is the protocol's one hard rule (a missing row fails the whole query), so a
//! row that is not an exchange gets a result of its own, `{"error":"...","row":N}`, and nothing
//! goes to stderr (ClickHouse can be set to fail a query on any stderr output). Only a broken
//! stream (a bad chunk header, an input that ends inside a block, an I/O error) ends the process,
//! with a message on stderr and exit status 2: results could no longer be matched to rows.

mod rows;
mod tsv;

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::time::SystemTime;

use clap::{Args, Subcommand, ValueEnum};
use mcp_triage_core::exchange::Exchange;
use mcp_triage_core::{CallContext, RequestId};

use super::classify::{parse_now, LimitArgs};
use mcp_triage_proxy::batch::classify_exchange;
use rows::{Row, RowReader};
use tsv::RowError;

pub const EXAMPLES: &str = "\
Examples:
  printf '200\\tapplication/json\\t{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\\t1\\n' \\
    | mcp-triage udf clickhouse
  mcp-triage udf clickhouse --format JSONEachRow --form full
  mcp-triage udf clickhouse --chunk-header       (an executable_pool with send_chunk_header)

The function XML and how to install it: integrations/clickhouse/README.md.

Exit status: 0 at the end of the input; 2 when the stream broke (bad chunk header, input ended
inside a block, I/O error), with the reason on stderr. A bad row is not an exit: it gets
{\"error\":\"...\",\"row\":N} as its result (with --chunk-header also \"block\":B, the block's
number since the worker started, and N counts within the block), so every row keeps its result.";

#[derive(Args)]
pub struct UdfArgs {
    #[command(subcommand)]
    engine: Engine,
}

#[derive(Subcommand)]
enum Engine {
    /// ClickHouse's executable UDF protocol: rows on stdin, one verdict JSON a row on stdout.
    #[command(after_help = EXAMPLES)]
    Clickhouse(ClickhouseArgs),
}

/// The function's `<format>`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum RowFormat {
    TabSeparated,
    JsonEachRow,
}

/// A `--format` that is none of the supported ones.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a supported format (TabSeparated or JSONEachRow)")]
pub struct UnknownFormat(String);

fn parse_format(s: &str) -> Result<RowFormat, UnknownFormat> {
    match s.to_ascii_lowercase().as_str() {
        "tabseparated" | "tsv" => Ok(RowFormat::TabSeparated),
        "jsoneachrow" | "ndjson" | "jsonlines" => Ok(RowFormat::JsonEachRow),
        _ => Err(UnknownFormat(s.to_string())),
    }
}

/// Why the stream broke: results could no longer be matched to rows.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UdfError {
    /// Reading rows or writing results failed.
    #[error("udf clickhouse: {0}")]
    Io(#[source] io::Error),
    /// A chunk header that is not a row count.
    #[error("chunk header {0:?} is not a row count (is send_chunk_header set without --chunk-header, or the reverse?)")]
    ChunkHeader(String),
    /// A chunk header longer than a row may be.
    #[error("a chunk header longer than --max-row-bytes {0}")]
    ChunkHeaderTooLong(usize),
    /// The input ended inside a block.
    #[error("the input ended after {done} of a block's {rows} rows")]
    EndedInBlock {
        /// Rows of the block answered.
        done: u64,
        /// Rows its chunk header announced.
        rows: u64,
    },
}

/// Which arguments the function declares.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum Form {
    /// mcp_classify(status UInt16, contentType String, body String, expectId Int64)
    Basic,
    /// mcp_classify_full(..., headers Map(String,String), protocolVersion String)
    Full,
    /// mcp_classify_capture(status UInt16, contentType String, body String, expectId String,
    /// headers Map(String,String), protocolVersion String, method String, end String): a
    /// capture line's columns; the result names the exchange's kind and what it counts as
    Capture,
}

impl Form {
    fn arity(self) -> usize {
        match self {
            Form::Basic => 4,
            Form::Full => 6,
            Form::Capture => 8,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Form::Basic => "basic",
            Form::Full => "full",
            Form::Capture => "capture",
        }
    }

    fn signature(self) -> &'static str {
        match self {
            Form::Basic => "status, contentType, body, expectId",
            Form::Full => "status, contentType, body, expectId, headers, protocolVersion",
            Form::Capture => {
                "status, contentType, body, expectId, headers, protocolVersion, method, end"
            }
        }
    }
}

#[derive(Args)]
pub struct ClickhouseArgs {
    /// The function's <format>: TabSeparated (alias TSV; bodies pass as bytes) or JSONEachRow
    /// (arguments by name, as in an exchange file; bodies must be UTF-8).
    #[arg(long, value_name = "FORMAT", default_value = "TabSeparated", value_parser = parse_format)]
    format: RowFormat,

    /// The arguments the function declares, in this order. JSONEachRow reads them by name and
    /// accepts either form.
    #[arg(long, value_enum, default_value_t = Form::Basic)]
    form: Form,

    /// The function sets <send_chunk_header>1</send_chunk_header>: each block starts with a line
    /// holding its row count.
    #[arg(long)]
    chunk_header: bool,

    /// JSONEachRow: the result's name, the function's <return_name>.
    #[arg(long, value_name = "NAME", default_value = "result")]
    return_name: String,

    /// The longest row accepted; a longer one is read past and gets an error result.
    #[arg(long, value_name = "BYTES", default_value_t = 256 << 20)]
    max_row_bytes: usize,

    /// "Now" for Retry-After dates: an HTTP-date or Unix seconds (default: the system clock).
    #[arg(long, value_name = "DATE", value_parser = parse_now)]
    now: Option<SystemTime>,

    #[command(flatten)]
    limits: LimitArgs,
}

/// `udf`'s arguments resolved once: one engine's configuration.
#[derive(Debug)]
pub enum UdfConfig {
    /// `udf clickhouse`.
    Clickhouse(ClickhouseConfig),
}

/// `udf clickhouse`'s arguments resolved once into what answering a row needs: the context
/// every row is classified in (`--now`, the limits) and the JSONEachRow result key, built
/// here once instead of per row. Every value was checked by its clap parser, so this cannot
/// fail.
#[derive(Debug)]
pub struct ClickhouseConfig {
    /// The function's `<format>`.
    format: RowFormat,
    /// The arguments the function declares.
    form: Form,
    /// `--chunk-header`: each block starts with its row count.
    chunk_header: bool,
    /// `{"<return_name>":` for JSONEachRow.
    json_key: Vec<u8>,
    /// The longest row accepted.
    max_row_bytes: usize,
    /// The context of every row: expected id 1 (a row brings its own), `--now`, the limits.
    context: CallContext,
}

impl From<UdfArgs> for UdfConfig {
    fn from(args: UdfArgs) -> UdfConfig {
        match args.engine {
            Engine::Clickhouse(a) => UdfConfig::Clickhouse(a.into()),
        }
    }
}

impl From<ClickhouseArgs> for ClickhouseConfig {
    fn from(args: ClickhouseArgs) -> ClickhouseConfig {
        ClickhouseConfig {
            format: args.format,
            form: args.form,
            chunk_header: args.chunk_header,
            json_key: format!("{{{}:", serde_json::Value::from(args.return_name.as_str()))
                .into_bytes(),
            max_row_bytes: args.max_row_bytes,
            context: CallContext::new(RequestId::Number(1))
                .with_now(args.now.unwrap_or_else(SystemTime::now))
                .with_limits(args.limits.limits()),
        }
    }
}

pub fn run(config: UdfConfig) -> Result<ExitCode, UdfError> {
    match config {
        UdfConfig::Clickhouse(c) => run_clickhouse(&c),
    }
}

/// Turns rows into result lines in the function's format.
struct Answerer<'a> {
    config: &'a ClickhouseConfig,
    /// Rows answered in this block (in this run without chunk headers), for error results.
    rows_seen: u64,
    /// Blocks begun, with chunk headers: a pool worker lives across queries, so a row number
    /// alone would count from the worker's start and name no row a user can find.
    blocks_seen: Option<u64>,
}

impl Answerer<'_> {
    fn exchange<'r>(&self, line: &'r [u8]) -> Result<Exchange<'r>, RowError> {
        match self.config.format {
            RowFormat::TabSeparated => tsv::parse_row(line, self.config.form),
            RowFormat::JsonEachRow if self.config.form == Form::Capture => {
                let mut x = Exchange::parse(line)?;
                // The row is a capture line's columns: a row without a method answers no
                // single JSON-RPC request (a GET stream), and expectId is a String column.
                x.captured = true;
                if let RequestId::String(s) = &x.expected_id {
                    x.expected_id = tsv::capture_id(s);
                }
                Ok(x)
            }
            RowFormat::JsonEachRow => {
                let mut x = Exchange::parse(line)?;
                // The argument is an Int64; ClickHouse quotes 64-bit integers in JSON unless
                // output_format_json_quote_64bit_integers = 0, so a digit string is that Int64.
                if let RequestId::String(s) = &x.expected_id {
                    let n = s
                        .parse::<i64>()
                        .map_err(|_| RowError::JsonExpectId(s.clone()))?;
                    x.expected_id = RequestId::Number(n);
                }
                Ok(x)
            }
        }
    }

    fn answer(&mut self, row: Row<'_>, out: &mut impl Write) -> io::Result<()> {
        self.rows_seen += 1;
        let result = match row {
            Row::TooLong { limit } => Err(RowError::TooLong(limit)),
            Row::Line(line) => self.exchange(line).map(|x| self.result_of(&x)),
        };
        let text = match (result, self.blocks_seen) {
            (Ok(text), _) => text,
            (Err(e), None) => serde_json::to_string(&serde_json::json!({
                "error": format!("row {}: {e}", self.rows_seen),
                "row": self.rows_seen,
            })),
            (Err(e), Some(block)) => serde_json::to_string(&serde_json::json!({
                "error": format!("block {block} row {}: {e}", self.rows_seen),
                "block": block,
                "row": self.rows_seen,
            })),
        }
        .map_err(io::Error::other)?;
        match self.config.format {
            RowFormat::TabSeparated => tsv::write_escaped(out, text.as_bytes())?,
            RowFormat::JsonEachRow => {
                out.write_all(&self.config.json_key)?;
                serde_json::to_writer(&mut *out, &text).map_err(io::Error::other)?;
                out.write_all(b"}")?;
            }
        }
        out.write_all(b"\n")
    }
}

impl Answerer<'_> {
    /// A row's result: the verdict JSON, or for the capture form `{"kind":…,"counted":…,
    /// "verdict":{…}}` (what `classify --batch` counts the line as, under its kind). Written
    /// straight from the verdict, so its members keep the order `classify --each` prints.
    fn result_of(&self, x: &Exchange<'_>) -> serde_json::Result<String> {
        /// The capture form's result.
        #[derive(serde::Serialize)]
        struct Counted<'v> {
            kind: &'v str,
            counted: &'v str,
            verdict: &'v mcp_triage_core::Verdict,
        }
        let v = classify_exchange(x, &self.config.context);
        if self.config.form != Form::Capture {
            return serde_json::to_string(&v);
        }
        let kind = x.kind();
        let (counted, _) = kind.counted(x.head.status, &v);
        serde_json::to_string(&Counted {
            kind: kind.name(),
            counted: counted.as_str(),
            verdict: &v,
        })
    }
}

/// A chunk header: the block's row count, alone on its line.
fn chunk_rows(row: Row<'_>) -> Result<u64, UdfError> {
    match row {
        Row::Line(l) => {
            let text = String::from_utf8_lossy(l);
            text.trim()
                .parse::<u64>()
                .map_err(|_| UdfError::ChunkHeader(text.into_owned()))
        }
        Row::TooLong { limit } => Err(UdfError::ChunkHeaderTooLong(limit)),
    }
}

fn run_clickhouse(config: &ClickhouseConfig) -> Result<ExitCode, UdfError> {
    let mut answerer = Answerer {
        config,
        rows_seen: 0,
        blocks_seen: config.chunk_header.then_some(0),
    };
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut rows = RowReader::new(stdin.lock(), config.max_row_bytes);
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let io_err = UdfError::Io;
    loop {
        let block = if config.chunk_header {
            match rows.next_row(&mut out).map_err(io_err)? {
                None => break,
                Some(header) => Some(chunk_rows(header)?),
            }
        } else {
            None
        };
        if let Some(b) = answerer.blocks_seen.as_mut() {
            *b += 1;
            answerer.rows_seen = 0;
        }
        let mut done = 0u64;
        while block.is_none_or(|n| done < n) {
            match rows.next_row(&mut out).map_err(io_err)? {
                Some(row) => answerer.answer(row, &mut out).map_err(io_err)?,
                None => match block {
                    None => break,
                    Some(rows) => return Err(UdfError::EndedInBlock { done, rows }),
                },
            }
            done += 1;
        }
        out.flush().map_err(io_err)?; // a block's results go out when it is answered
        if block.is_none() {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::args_testing::{parsed, try_parse};

    fn config_of(argv: &[&str]) -> ClickhouseConfig {
        let argv = [&["clickhouse"][..], argv].concat();
        let UdfConfig::Clickhouse(c) = parsed::<UdfArgs>(&argv).into();
        c
    }

    #[test]
    fn defaults_are_tab_separated_basic_rows() {
        let c = config_of(&[]);
        assert_eq!(c.format, RowFormat::TabSeparated);
        assert_eq!(c.form, Form::Basic);
        assert!(!c.chunk_header);
        assert_eq!(c.json_key, br#"{"result":"#);
        assert_eq!(c.max_row_bytes, 256 << 20);
        assert_eq!(c.context.limits, mcp_triage_core::Limits::DEFAULT);
    }

    #[test]
    fn flags_land_in_the_config_and_the_key_is_quoted_once() {
        let c = config_of(&[
            "--format",
            "ndjson",
            "--form",
            "full",
            "--chunk-header",
            "--return-name",
            r#"a"b"#,
            "--now",
            "1000",
            "--max-depth",
            "7",
        ]);
        assert_eq!(c.format, RowFormat::JsonEachRow);
        assert_eq!(c.form, Form::Full);
        assert!(c.chunk_header);
        assert_eq!(c.json_key, br#"{"a\"b":"#);
        assert_eq!(
            c.context.now,
            SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000)
        );
        assert_eq!(c.context.limits.max_depth, 7);
    }

    #[test]
    fn an_unknown_format_is_refused_by_its_parser() {
        let argv = ["udf", "clickhouse", "--format", "CSV"];
        let e = try_parse::<UdfArgs, _, _>(argv).err().expect("refused");
        assert!(e.to_string().contains("is not a supported format"), "{e}");
    }
}
