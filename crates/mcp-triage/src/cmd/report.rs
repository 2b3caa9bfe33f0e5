//! `mcp-triage report LOG.jsonl`: summarise records (from `call --log`, `proxy --log` or
//! `wrap --log`) for a person and a CI: tool calls as calls, an observer's other exchanges
//! apart. The log is read and summarised by `mcp_triage_proxy::record_log`
//! into the report model; this prints its properties and tables and writes the reports.

use crate::exit::Exit;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use mcp_triage_proxy::record_log::{self, LogError};
use mcp_triage_report::{Format, Report, ReportTarget, WriteError};

pub const EXAMPLES: &str = "\
Examples:
  mcp-triage report calls.jsonl                       # summary on stdout
  mcp-triage report calls.jsonl --html calls.html     # one self-contained page with charts
  mcp-triage report calls.jsonl --report junit:unsafe.xml --report json:summary.json

Exit 0 unless a record carries an UNSAFE_RETRY warning (then 1); 2 on unreadable input.";

#[derive(Args)]
pub struct ReportArgs {
    /// JSON Lines file of records: `call --log`, `proxy --log` or `wrap --log` (`-` for stdin).
    #[arg(value_name = "LOG.jsonl")]
    log: PathBuf,

    /// Write the HTML report here (same as --report html:FILE).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,

    /// Write a report: junit:FILE, html:FILE, json:FILE or tap:FILE (repeatable).
    #[arg(long = "report", value_name = "FORMAT:FILE")]
    reports: Vec<ReportTarget>,

    /// Records per line of input are capped at this many bytes (longer lines are an error).
    #[arg(long, value_name = "BYTES", default_value = "16777216")]
    max_line_bytes: usize,
}

/// Why `report` did not report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The log cannot be opened, or a line of it read.
    #[error(transparent)]
    Log(#[from] LogError),
    /// A `--report` or `--html` file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// `report`'s arguments resolved once: `--html FILE` is one more report target (after the
/// `--report`s, in the order the reports are written), so the run writes a single list with
/// mcp-triage-report's own [`ReportTarget`]s. Every value was checked by its clap parser, so
/// this cannot fail; the log is opened when the command runs.
#[derive(Debug)]
pub struct ReportConfig {
    /// The call records (`-`: standard input).
    pub log: PathBuf,
    /// Every report to write, `--html` last.
    pub targets: Vec<ReportTarget>,
    /// The longest line of the log read.
    pub max_line_bytes: usize,
}

impl From<ReportArgs> for ReportConfig {
    fn from(args: ReportArgs) -> ReportConfig {
        let mut targets = args.reports;
        if let Some(path) = args.html {
            targets.push(ReportTarget {
                format: Format::Html,
                path,
            });
        }
        ReportConfig {
            log: args.log,
            targets,
            max_line_bytes: args.max_line_bytes,
        }
    }
}

/// The records of the log `config` names (`-`: standard input).
fn read_log(config: &ReportConfig) -> Result<Vec<record_log::LoggedRecord>, LogError> {
    let shown = config.log.display().to_string();
    let reader: Box<dyn BufRead> = if config.log.as_os_str() == "-" {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let f = std::fs::File::open(&config.log).map_err(|source| LogError::Io {
            path: shown.clone(),
            source,
        })?;
        Box::new(std::io::BufReader::new(f))
    };
    record_log::read_calls(reader, &shown, config.max_line_bytes)
}

/// The suite's properties, then each table, aligned, on stdout.
fn print_summary(report: &Report) {
    for p in &report.suites[0].properties {
        println!("{:<24} {}", p.0, p.1);
    }
    for t in &report.tables {
        println!("\n{}", t.title);
        let widths: Vec<usize> = (0..t.columns.len())
            .map(|i| {
                t.rows
                    .iter()
                    .map(|r| r[i].len())
                    .chain([t.columns[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for row in std::iter::once(&t.columns).chain(&t.rows) {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            println!("  {}", cells.join("  ").trim_end());
        }
    }
}

pub fn run(config: ReportConfig) -> Result<ExitCode, ReportError> {
    let records = read_log(&config)?;
    let report = record_log::summarise(&records, &config.log.display().to_string());
    print_summary(&report);
    mcp_triage_report::write_all(&config.targets, &report)?;
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        Exit::Failed.into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::args_testing::{parsed, try_parse};

    fn config(argv: &[&str]) -> ReportConfig {
        parsed::<ReportArgs>(argv).into()
    }

    #[test]
    fn html_is_the_last_report_target() {
        let c = config(&[
            "calls.jsonl",
            "--html",
            "c.html",
            "--report",
            "junit:u.xml",
            "--report",
            "json:s.json",
        ]);
        assert_eq!(c.log, PathBuf::from("calls.jsonl"));
        assert_eq!(c.max_line_bytes, 16 << 20);
        let targets: Vec<_> = c
            .targets
            .iter()
            .map(|t| (t.format, t.path.clone()))
            .collect();
        assert_eq!(
            targets,
            [
                (Format::Junit, PathBuf::from("u.xml")),
                (Format::Json, PathBuf::from("s.json")),
                (Format::Html, PathBuf::from("c.html")),
            ]
        );
    }

    #[test]
    fn without_reports_there_are_no_targets() {
        assert!(config(&["-"]).targets.is_empty());
    }

    #[test]
    fn a_bad_report_target_is_refused_by_its_parser() {
        let argv = ["report", "calls.jsonl", "--report", "junit"];
        assert!(try_parse::<ReportArgs, _, _>(argv).is_err());
    }

    #[test]
    fn an_unreadable_log_is_named() {
        let c = ReportConfig {
            log: PathBuf::from("/nonexistent/mcp-triage-report.jsonl"),
            targets: vec![],
            max_line_bytes: 1024,
        };
        let e = read_log(&c).unwrap_err().to_string();
        assert!(
            e.starts_with("/nonexistent/mcp-triage-report.jsonl: "),
            "{e}"
        );
    }
}
