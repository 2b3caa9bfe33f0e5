//! `probe`'s arguments resolved once (the "high" arguments): the [`Target`], the client's
//! [`ClientOptions`] (input rounds, retries and tasks for the read-only calls) and what to
//! call and print, checked before anything is started or connected to.

use mcp_triage_client::{ClientOptions, Target};
use mcp_triage_report::ReportTarget;

use super::args::ProbeArgs;
use crate::cmd::client_args::ArgsError;
use crate::cmd::format::Format;

/// Everything `probe` needs to connect, probe and print.
#[derive(Debug)]
pub struct ProbeConfig {
    /// The server.
    pub target: Target,
    /// Connection, input rounds, retries, OAuth, limits; `--task` for the read-only calls.
    pub client: ClientOptions,
    /// `--call-read-only`: call every read-only tool that needs no arguments.
    pub call_read_only: bool,
    /// Run the behaviour checks (not `--no-checks`).
    pub checks: bool,
    /// `--format`.
    pub format: Format,
    /// The `--report`s to write.
    pub reports: Vec<ReportTarget>,
}

/// Checks `probe`'s arguments in the order the command always checked them: the target, the
/// client options, then the `--input` file and `--answer`s, then the retry options.
pub fn config(args: ProbeArgs) -> Result<ProbeConfig, ArgsError> {
    let target = args.conn.target(args.url.as_deref())?;
    let mut client = args.conn.options(&args.oauth, &args.limits)?;
    args.input.apply(&mut client)?;
    args.retry.apply(&mut client)?;
    client.use_tasks = args.task;
    Ok(ProbeConfig {
        target,
        client,
        call_read_only: args.call_read_only,
        checks: !args.no_checks,
        format: args.format,
        reports: args.reports,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::args_testing::parsed;
    use mcp_triage_report::Format as ReportFormat;

    fn config_of(argv: &[&str]) -> Result<ProbeConfig, ArgsError> {
        config(parsed(argv))
    }

    #[test]
    fn flags_become_options_and_switches() {
        let c = config_of(&[
            "--stdio",
            "python server.py",
            "--call-read-only",
            "--task",
            "--no-checks",
            "--max-retries",
            "5",
            "--report",
            "junit:probe.xml",
            "--no-prompt",
        ])
        .unwrap();
        assert!(matches!(c.target, Target::Stdio { .. }), "{:?}", c.target);
        assert!(c.client.use_tasks);
        assert_eq!(c.client.retry.max_retries, 5);
        assert!(c.call_read_only);
        assert!(!c.checks);
        assert_eq!(c.format, Format::Text);
        assert_eq!(c.reports.len(), 1);
        assert_eq!(c.reports[0].format, ReportFormat::Junit);
    }

    #[test]
    fn checks_run_by_default() {
        let c = config_of(&["http://127.0.0.1:9/mcp", "--no-prompt"]).unwrap();
        assert!(c.checks);
        assert!(!c.call_read_only && !c.client.use_tasks);
    }

    #[test]
    fn bad_options_are_named() {
        let e = config_of(&["http://x/mcp", "--max-wait", "0"]).unwrap_err();
        assert!(matches!(e, ArgsError::Seconds("max-wait")), "{e}");
        let e = config_of(&[
            "http://x/mcp",
            "--input",
            "/nonexistent/mcp-triage-input.json",
        ])
        .unwrap_err();
        assert!(matches!(e, ArgsError::Input { .. }), "{e}");
    }
}
