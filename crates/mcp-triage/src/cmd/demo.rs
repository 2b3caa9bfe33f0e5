//! `mcp-triage demo`: start the kitchen in-process and run the client through every scenario
//! (both eras where both apply), printing what each call ended in next to what the scenario's
//! documentation says it must end in. Exit 0 only when every row matches.

use crate::exit::Exit;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use mcp_triage_client::ClientOptions;
use mcp_triage_judge::plan::{plan, run_row, RowResult};
use mcp_triage_kitchen::{start, KitchenError, KitchenOptions};
use mcp_triage_report::{Case, Check, Report, ReportTarget, Status, Suite, WriteError};

use super::format::Format;
use std::io::IsTerminal;

use super::client_args::{runtime, ArgsError};

pub const EXAMPLES: &str = "\
Examples:
  mcp-triage demo                                   # every scenario, both eras; exit 0 when all match
  mcp-triage demo --only errors.                    # only scenarios whose id contains the text
  mcp-triage demo --format json | head -1           # one call record per row
  mcp-triage demo --report junit:demo.xml --report html:demo.html
  mcp-triage demo --kitchen http://127.0.0.1:8080 --instance-prefix via-nginx
      # the same plan through a gateway in front of a running `mcp-triage kitchen`";

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Only scenarios whose id contains this text.
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,

    /// text: the matrix; json: one record per line.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,

    /// Calls run at the same time.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub concurrency: usize,

    /// Write a report: junit:FILE, html:FILE, json:FILE or tap:FILE (`-` = stdout; repeatable).
    /// One case per scenario × era row, with one check: `outcome`.
    #[arg(long = "report", value_name = "FORMAT:FILE")]
    pub reports: Vec<ReportTarget>,

    /// Run the plan against this base URL (a running `mcp-triage kitchen`, or a gateway or proxy
    /// in front of one) instead of an in-process kitchen, so what sits in between is tested
    /// with the same rows: http://host:port, no path.
    #[arg(long, value_name = "URL")]
    pub kitchen: Option<String>,

    /// Each row calls the kitchen instance `{prefix}{row number}`; two runs against one kitchen
    /// need different prefixes, since instances keep state (counters, sessions, sequences).
    #[arg(long, value_name = "TEXT", default_value = "demo")]
    pub instance_prefix: String,
}

/// `demo`'s arguments resolved once: the kitchen to run against (checked), the client's
/// options for every row, and what to print and write.
#[derive(Debug)]
pub struct DemoConfig {
    /// `--kitchen`'s base URL, checked and without a trailing `/`; None starts a kitchen
    /// in-process.
    pub kitchen: Option<String>,
    /// `--only`: rows whose scenario id contains this text.
    pub only: Option<String>,
    /// Calls at the same time, at least 1.
    pub concurrency: usize,
    /// `--instance-prefix`.
    pub instance_prefix: String,
    /// The client's options for every row: short deadlines and waits, so the whole matrix
    /// takes seconds; the decisions are the same.
    pub client: ClientOptions,
    /// `--format`.
    pub format: Format,
    /// The `--report`s to write.
    pub reports: Vec<ReportTarget>,
}

/// Why `demo`'s arguments cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `--kitchen URL` is not a base URL.
    #[error("--kitchen {url:?}: expected {expected}")]
    KitchenUrl {
        /// The URL given.
        url: String,
        /// What a base URL is.
        expected: &'static str,
    },
}

/// Checks `--kitchen` and resolves the rest: a bad URL is named before a kitchen starts.
pub fn config(args: DemoArgs) -> Result<DemoConfig, ConfigError> {
    let kitchen = args.kitchen.as_deref().map(external_base).transpose()?;
    let mut client = ClientOptions {
        timeout: Duration::from_secs(5),
        ..ClientOptions::default()
    };
    client.retry.backoff_base_ms = 20;
    client.retry.max_wait_ms = 5_000;
    Ok(DemoConfig {
        kitchen,
        only: args.only,
        concurrency: args.concurrency.max(1),
        instance_prefix: args.instance_prefix,
        client,
        format: args.format,
        reports: args.reports,
    })
}

/// Why `demo` did not run its matrix (rows that differ are its output and exit 1, not this).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoError {
    /// The arguments cannot be used.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The runtime did not start.
    #[error(transparent)]
    Args(#[from] ArgsError),
    /// The in-process kitchen did not start.
    #[error("the kitchen did not start: {0}")]
    Kitchen(#[source] KitchenError),
    /// A row's task panicked.
    #[error("a demo call panicked: {0}")]
    Panicked(#[source] tokio::task::JoinError),
    /// A record could not be written as JSON.
    #[error(transparent)]
    Record(serde_json::Error),
    /// A `--report` file could not be written.
    #[error(transparent)]
    Report(#[from] WriteError),
}

pub fn run(config: DemoConfig) -> Result<ExitCode, DemoError> {
    let rt = runtime()?;
    let started = mcp_triage_wire::time::rfc3339(mcp_triage_wire::time::now_ms());
    let t0 = std::time::Instant::now();
    let results = rt.block_on(async {
        let (k, base) = match &config.kitchen {
            Some(base) => (None, base.clone()),
            None => {
                let k = start(
                    "127.0.0.1:0".parse().expect("loopback address"),
                    KitchenOptions::default(),
                )
                .await
                .map_err(DemoError::Kitchen)?;
                let base = k.base_url();
                (Some(k), base)
            }
        };
        let rows: Vec<_> = plan()
            .into_iter()
            .filter(|r| {
                config
                    .only
                    .as_deref()
                    .is_none_or(|o| r.scenario.contains(o))
            })
            .collect();
        let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(config.concurrency));
        let mut tasks = Vec::new();
        for (i, row) in rows.into_iter().enumerate() {
            let (base, opts, sem) = (base.clone(), config.client.clone(), sem.clone());
            let tag = format!("{}{i}", config.instance_prefix);
            tasks.push(tokio::spawn(async move {
                let _permit = sem.acquire().await;
                run_row(&base, &row, &tag, &opts).await
            }));
        }
        // Progress on a terminal only (none when piped): rows finished so far, on stderr.
        let progress = std::io::stderr().is_terminal();
        let total = tasks.len();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.map_err(DemoError::Panicked)?);
            if progress {
                eprint!("\r  {}/{total} rows", out.len());
            }
        }
        if progress {
            eprint!("\r{:width$}\r", "", width = 24);
        }
        if let Some(k) = k {
            k.shutdown().await;
        }
        Ok::<_, DemoError>(out)
    })?;
    match config.format {
        Format::Json => {
            for r in &results {
                outln!(
                    "{}",
                    serde_json::to_string(&r.record).map_err(DemoError::Record)?
                );
            }
        }
        Format::Text => outln!("{}", matrix(&results).trim_end()),
    }
    if !config.reports.is_empty() {
        let mut report = report(&results);
        report.started = Some(started);
        report.suites[0].duration_ms = Some(t0.elapsed().as_millis() as u64);
        mcp_triage_report::write_all(&config.reports, &report)?;
    }
    let bad = results.iter().filter(|r| !r.matches).count();
    if bad > 0 {
        eprintln!(
            "{bad} of {} rows differ from the documented outcome",
            results.len()
        );
        return Ok(Exit::Failed.into());
    }
    eprintln!("all {} rows match", results.len());
    Ok(ExitCode::SUCCESS)
}

/// `--kitchen URL` as the base the plan appends `/s/{scenario}/mcp` to: http(s)://host[:port]
/// with no path, query or credentials (a path would be silently doubled or dropped).
fn external_base(url: &str) -> Result<String, ConfigError> {
    let bad = |expected| ConfigError::KitchenUrl {
        url: url.to_string(),
        expected,
    };
    let base = url.trim_end_matches('/');
    let rest = base
        .strip_prefix("http://")
        .or_else(|| base.strip_prefix("https://"))
        .ok_or_else(|| bad("http://host:port or https://host:port"))?;
    if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        return Err(bad(
            "only scheme, host and port (no path, query or credentials)",
        ));
    }
    Ok(base.to_string())
}

/// The row's name as the matrix and the reports show it: the scenario, and the variant when
/// one scenario has several rows in the same era.
fn row_name(r: &RowResult) -> String {
    if r.row.variant.is_empty() {
        r.row.scenario.to_string()
    } else {
        format!("{} ({})", r.row.scenario, r.row.variant)
    }
}

/// What the row was expected to end in: the outcome, and the attempt count when the row fixes one.
fn expected(r: &RowResult) -> String {
    match r.row.attempts {
        Some(n) => format!("{} in {n}", r.row.expect),
        None => r.row.expect.to_string(),
    }
}

/// The demo as a report: one case per scenario × era row with one check, `outcome`, whose
/// evidence is every attempt (kind, status, verdict, decision), so a failing row in CI says
/// what the client saw and did without re-running it.
fn report(results: &[RowResult]) -> Report {
    let cases = results
        .iter()
        .map(|r| {
            let got = format!("{} in {}", r.record.outcome, r.record.attempts.len());
            let mut message = format!("expected {}, got {got}", expected(r));
            if let Some(m) = r.record.message.as_deref().filter(|m| !m.is_empty()) {
                message.push_str(&format!(": {m}"));
            }
            let evidence = r.record.attempts.iter().enumerate().map(|(i, a)| {
                let status = a.status.map_or("-".into(), |s| s.to_string());
                let decision = a
                    .decision
                    .as_ref()
                    .map_or("-".into(), |d| match d.delay_ms {
                        Some(ms) => format!("{} after {ms} ms ({})", d.action, d.reason),
                        None => format!("{} ({})", d.action, d.reason),
                    });
                format!(
                    "attempt {} {}: status {status}, {}/{}, decision {decision}",
                    i + 1,
                    a.kind,
                    a.verdict.layer,
                    a.verdict.outcome
                )
            });
            let status = if r.matches {
                Status::Pass
            } else {
                Status::Fail
            };
            Case {
                properties: Vec::new(),
                name: format!("{} [{}]", row_name(r), r.row.era.as_str()),
                checks: vec![Check::new("outcome", status, message)
                    .with_evidence(evidence)
                    .with_references([format!(
                        "kitchen scenario {}: {}",
                        r.row.scenario, r.row.why
                    )])],
                duration_ms: Some(r.record.duration_ms),
                ..Case::default()
            }
        })
        .collect();
    Report {
        title: "mcp-triage demo".into(),
        suites: vec![Suite {
            name: "demo".into(),
            cases,
            properties: vec![("mcp-triage".into(), env!("CARGO_PKG_VERSION").into())],
            ..Suite::default()
        }],
        ..Report::default()
    }
}

fn matrix(results: &[RowResult]) -> String {
    let mut rows: Vec<[String; 8]> = vec![[
        "scenario".into(),
        "era".into(),
        "att".into(),
        "statuses".into(),
        "got".into(),
        "expected".into(),
        "decisions".into(),
        "ok".into(),
    ]];
    for r in results {
        let name = row_name(r);
        let statuses: Vec<String> = r
            .record
            .attempts
            .iter()
            .map(|a| a.status.map_or("-".into(), |s| s.to_string()))
            .collect();
        let decisions: Vec<String> = r
            .record
            .attempts
            .iter()
            .map(|a| {
                a.decision
                    .as_ref()
                    .map_or("-".into(), |d| d.action.to_string())
            })
            .collect();
        let expected = expected(r);
        rows.push([
            name,
            r.row.era.as_str().into(),
            r.record.attempts.len().to_string(),
            statuses.join(","),
            r.record.outcome.to_string(),
            expected,
            decisions.join(","),
            if r.matches {
                "✓".into()
            } else {
                "✗".into()
            },
        ]);
    }
    let widths: Vec<usize> = (0..8)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut s = String::new();
    for r in &rows {
        for (c, cell) in r.iter().enumerate() {
            s.push_str(cell);
            if c < 7 {
                s.push_str(&" ".repeat(widths[c] - cell.chars().count() + 2));
            }
        }
        s.push('\n');
    }
    for r in results.iter().filter(|r| !r.matches) {
        s.push_str(&format!(
            "\n✗ {} [{}]: expected {} because {}; got {}: {}\n",
            r.row.scenario,
            r.row.era.as_str(),
            r.row.expect,
            r.row.why,
            r.record.outcome,
            r.record.message.as_deref().unwrap_or("")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::args_testing::parsed;

    fn config_of(argv: &[&str]) -> Result<DemoConfig, ConfigError> {
        config(parsed(argv))
    }

    #[test]
    fn defaults_run_an_in_process_kitchen_with_short_waits() {
        let c = config_of(&["--concurrency", "0"]).unwrap();
        assert_eq!(c.kitchen, None);
        assert_eq!(c.concurrency, 1);
        assert_eq!(c.instance_prefix, "demo");
        assert_eq!(c.client.timeout, Duration::from_secs(5));
        assert_eq!(c.client.retry.backoff_base_ms, 20);
        assert_eq!(c.client.retry.max_wait_ms, 5_000);
        assert_eq!(c.format, Format::Text);
    }

    #[test]
    fn a_kitchen_url_becomes_its_base() {
        let c = config_of(&["--kitchen", "http://127.0.0.1:8080/", "--only", "errors."]).unwrap();
        assert_eq!(c.kitchen.as_deref(), Some("http://127.0.0.1:8080"));
        assert_eq!(c.only.as_deref(), Some("errors."));
    }

    #[test]
    fn a_kitchen_url_with_a_path_is_refused() {
        for url in ["http://127.0.0.1:8080/mcp", "127.0.0.1:8080", "https://u@h"] {
            let e = config_of(&["--kitchen", url]).unwrap_err();
            assert!(matches!(e, ConfigError::KitchenUrl { .. }), "{url}: {e}");
            assert!(
                e.to_string().starts_with(&format!("--kitchen {url:?}: ")),
                "{e}"
            );
        }
    }
}
