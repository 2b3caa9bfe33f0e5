//! # mcp-triage-report: one result model, four formats
//!
//! `judge`, `demo`, `probe` and `report` all produce the same [`Report`] (suites → cases →
//! checks with status, evidence, references, durations; optional charts and tables), and
//! each format is one module that renders it to any [`std::io::Write`] (hurl's pattern):
//! [`junit`], [`tap`], [`json`], [`html`]. Commands take `--report FORMAT:FILE`, parsed by
//! [`ReportTarget`], and call [`ReportTarget::write`] — so adding a report to a command is
//! two lines, and adding a format touches only this crate.
//!
//! No I/O besides the writer, no async: the crate is as easy to test as the data it holds.

#![warn(missing_docs)]

pub mod html;
pub mod json;
pub mod junit;
pub mod model;
pub mod tap;
mod xml;

use std::fmt;
use std::io::{self, Write};
use std::path::PathBuf;
use std::str::FromStr;

pub use model::{Case, Chart, Check, Counts, Report, Series, Status, Suite, Table};

/// A report format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// JUnit XML.
    Junit,
    /// TAP 14.
    Tap,
    /// JSON (the model).
    Json,
    /// Self-contained HTML.
    Html,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 4] = [Format::Junit, Format::Html, Format::Json, Format::Tap];

    /// Name as written on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Junit => "junit",
            Format::Tap => "tap",
            Format::Json => "json",
            Format::Html => "html",
        }
    }

    /// Render `report` in this format.
    pub fn write(self, report: &Report, w: &mut dyn Write) -> io::Result<()> {
        match self {
            Format::Junit => junit::write(report, w),
            Format::Tap => tap::write(report, w),
            Format::Json => json::write(report, w),
            Format::Html => html::write(report, w),
        }
    }
}

/// A `--report` value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReportTargetError {
    /// The format is not one of [`Format::ALL`].
    #[error("unknown report format {0:?} (junit, html, json or tap)")]
    UnknownFormat(String),
    /// No `:` between format and file.
    #[error("{0:?} is not FORMAT:FILE (e.g. junit:report.xml)")]
    NotFormatFile(String),
    /// Nothing after the `:`.
    #[error("{0:?} names no file (use FORMAT:- for stdout)")]
    NoFile(String),
}

/// A report that could not be written: the format and the I/O error (which names the file).
#[derive(Debug, thiserror::Error)]
#[error("cannot write the {format} report: {source}")]
pub struct WriteError {
    /// The report's format.
    pub format: Format,
    /// What failed.
    #[source]
    pub source: io::Error,
}

impl FromStr for Format {
    type Err = ReportTargetError;
    fn from_str(s: &str) -> Result<Format, ReportTargetError> {
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| ReportTargetError::UnknownFormat(s.to_string()))
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `FORMAT:FILE` from the command line; `FILE` `-` is stdout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportTarget {
    /// Format.
    pub format: Format,
    /// Destination (`-` for stdout).
    pub path: PathBuf,
}

impl FromStr for ReportTarget {
    type Err = ReportTargetError;
    fn from_str(s: &str) -> Result<ReportTarget, ReportTargetError> {
        let (f, p) = s
            .split_once(':')
            .ok_or_else(|| ReportTargetError::NotFormatFile(s.to_string()))?;
        if p.is_empty() {
            return Err(ReportTargetError::NoFile(s.to_string()));
        }
        Ok(ReportTarget {
            format: f.parse()?,
            path: PathBuf::from(p),
        })
    }
}

impl ReportTarget {
    /// Render `report` to the target's file (or stdout), buffered.
    pub fn write(&self, report: &Report) -> io::Result<()> {
        if self.path.as_os_str() == "-" {
            let out = io::stdout();
            let mut lock = out.lock();
            self.format.write(report, &mut lock)?;
            return lock.flush();
        }
        let f = std::fs::File::create(&self.path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.path.display())))?;
        let mut w = io::BufWriter::new(f);
        self.format.write(report, &mut w)?;
        w.flush()
    }
}

/// Write `report` to every target (what a command does with its `--report` flags); the
/// error names the format and file that failed.
pub fn write_all(targets: &[ReportTarget], report: &Report) -> Result<(), WriteError> {
    for t in targets {
        t.write(report).map_err(|source| WriteError {
            format: t.format,
            source,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
