//! `probe`'s command line as clap reads it (the "low" arguments): the target, what the probe
//! calls and prints, and the shared client groups of `client_args`. `config.rs` turns them
//! into what the client takes.

use clap::Args;
use mcp_triage_report::ReportTarget;

use crate::cmd::client_args::{ConnArgs, InputArgs, LimitArgs, OAuthArgs, RetryArgs};
use crate::cmd::format::Format;

#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// The server URL (left out with --stdio or --config).
    #[arg(value_name = "URL")]
    pub url: Option<String>,

    #[command(flatten)]
    pub conn: ConnArgs,

    /// Also call every read-only tool that needs no arguments.
    #[arg(long, help_heading = "Calls and output")]
    pub call_read_only: bool,

    /// With --call-read-only: ask for task-augmented calls and poll each task to its end.
    #[arg(long, help_heading = "Calls and output")]
    pub task: bool,

    /// Leave out the behaviour checks (unknown session id, unknown tool, invalid arguments to
    /// a read-only tool, error codes): then no tools/call is sent unless --call-read-only.
    #[arg(long, help_heading = "Calls and output")]
    pub no_checks: bool,

    /// Output format.
    #[arg(
        long,
        value_enum,
        default_value = "text",
        help_heading = "Calls and output"
    )]
    pub format: Format,

    /// Write a report: junit:FILE, html:FILE, json:FILE or tap:FILE (`-` = stdout; repeatable).
    /// One case per era, per capability and per tool.
    #[arg(
        long = "report",
        value_name = "FORMAT:FILE",
        help_heading = "Calls and output"
    )]
    pub reports: Vec<ReportTarget>,

    // Answers for what a read-only tool asks while it runs (with --call-read-only).
    #[command(flatten)]
    pub input: InputArgs,

    // How the read-only calls are resent (with --call-read-only).
    #[command(flatten)]
    pub retry: RetryArgs,

    #[command(flatten)]
    pub oauth: OAuthArgs,

    #[command(flatten)]
    pub limits: LimitArgs,
}
