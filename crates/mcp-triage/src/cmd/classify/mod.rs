//! `mcp-triage classify`: the offline classifier, for one response or an exchange file. The
//! arguments are read in `args.rs` and resolved once in `config.rs`; `--batch` runs
//! `mcp_triage_proxy::batch`, the core classifies.

mod args;
mod config;

pub use args::{parse_now, ClassifyArgs, LimitArgs};
pub use config::{config, ClassifyConfig, ConfigError};

use crate::exit::Exit;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use mcp_triage_core::{classify, CallContext, ResponseHead};
use mcp_triage_proxy::batch::{self, BatchError, BatchOptions, VerdictFormat};

use args::Format;
use config::Input;

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

/// Why `classify` did not classify.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClassifyError {
    /// The arguments cannot be used.
    #[error(transparent)]
    Config(#[from] ConfigError),
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

fn read_input(path: &PathBuf) -> io::Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        io::stdin().lock().read_to_end(&mut buf)?;
        Ok(buf)
    } else {
        std::fs::read(path)
    }
}

pub fn run(config: ClassifyConfig) -> Result<ExitCode, ClassifyError> {
    match config.input {
        Input::Batch {
            path,
            options,
            summary,
        } => run_batch(&path, &options, summary, &config.context),
        Input::One { file, head, format } => run_one(&file, &head, format, &config.context),
    }
}

/// One response: its body read, classified and its verdict printed.
fn run_one(
    file: &PathBuf,
    head: &ResponseHead,
    format: VerdictFormat,
    ctx: &CallContext,
) -> Result<ExitCode, ClassifyError> {
    let body = read_input(file).map_err(|source| ClassifyError::Unreadable {
        path: file.clone(),
        source,
    })?;
    let v = classify(head, &body, ctx);
    batch::write_verdict(&mut io::stdout().lock(), &v, format)
        .map_err(ClassifyError::WriteVerdict)?;
    Ok(ExitCode::SUCCESS)
}

/// `--batch`: the exchange file classified by `mcp_triage_proxy::batch`, then the summary
/// line (unless `--each`) and, when lines were skipped, a word on stderr and exit 1.
fn run_batch(
    path: &Path,
    opts: &BatchOptions,
    summary_format: Option<Format>,
    base: &CallContext,
) -> Result<ExitCode, ClassifyError> {
    let summary = batch::classify_file(path, opts, base, io::stdout())?;
    if let Some(format) = summary_format {
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
