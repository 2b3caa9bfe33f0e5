//! `call`'s command line as clap reads it (the "low" arguments): the positional target and
//! tool, what the call sends and prints, and the shared client groups of `client_args`.
//! `config.rs` turns them into what the client takes.

use std::path::PathBuf;

use clap::Args;

use crate::cmd::format::Format;

use crate::cmd::client_args::{ConnArgs, InputArgs, LimitArgs, OAuthArgs, RetryArgs};

/// The `--help` heading of what a call sends and what it prints.
const ARGS_AND_OUTPUT: &str = "Arguments and output";

/// `call`'s options, in the order `--help` shows them: what a first call needs (where the
/// server is, the arguments, the output) before how input rounds, retries, OAuth and limits
/// behave.
#[derive(Args, Debug)]
pub struct CallArgs {
    /// [URL] TOOL — the URL is left out with --stdio or --config.
    #[arg(value_name = "TARGET_AND_TOOL", num_args = 1..=2, required = true)]
    pub positional: Vec<String>,

    #[command(flatten)]
    pub conn: ConnArgs,

    /// The arguments as a JSON object.
    #[arg(long, value_name = "JSON", conflicts_with = "arg", help_heading = ARGS_AND_OUTPUT)]
    pub args: Option<String>,

    /// One argument KEY=VALUE (repeatable): a string where the tool's inputSchema wants only
    /// a string (`message=123` sends "123"), else JSON when it parses, else a string.
    /// `mcp-triage list` shows each tool's arguments.
    #[arg(long, value_name = "KEY=VALUE", help_heading = ARGS_AND_OUTPUT)]
    pub arg: Vec<String>,

    /// Output format.
    #[arg(long, value_enum, default_value = "text", help_heading = ARGS_AND_OUTPUT)]
    pub format: Format,

    /// Append the record to this JSON Lines file.
    #[arg(long, value_name = "FILE.jsonl", help_heading = ARGS_AND_OUTPUT)]
    pub log: Option<PathBuf>,

    /// Keep the arguments themselves in the record (default: only their hash and size).
    #[arg(long, help_heading = ARGS_AND_OUTPUT)]
    pub log_arguments: bool,

    /// Keep the result object in the record.
    #[arg(long, help_heading = ARGS_AND_OUTPUT)]
    pub log_result: bool,

    /// Scenario name for the record when the server sends no X-Kitchen-Scenario.
    #[arg(long, value_name = "NAME", help_heading = ARGS_AND_OUTPUT)]
    pub scenario: Option<String>,

    /// Sent in _meta as mcp-triage/idempotencyKey; makes resends safe.
    #[arg(long, value_name = "KEY", help_heading = ARGS_AND_OUTPUT)]
    pub idempotency_key: Option<String>,

    /// This call repeats the record with this id by hand (retryOrigin manual).
    #[arg(long, value_name = "RECORD_ID", help_heading = ARGS_AND_OUTPUT)]
    pub retry_of: Option<String>,

    /// Ask for a task-augmented call and poll the task to its end (tasks/get).
    #[arg(long, help_heading = ARGS_AND_OUTPUT)]
    pub task: bool,

    /// How long to wait for a task from its creation before cancelling it (tasks/cancel);
    /// default: --timeout. Ctrl-C cancels it too.
    #[arg(long, value_name = "SECONDS", help_heading = ARGS_AND_OUTPUT)]
    pub task_timeout: Option<f64>,

    /// How long progress notifications may keep one attempt alive: each one for the call's
    /// progress token moves the deadline to --timeout from then, up to this long after the
    /// attempt began; 0 sends no progress token and keeps the deadline fixed.
    #[arg(long, value_name = "SECONDS", default_value_t = 600.0, help_heading = ARGS_AND_OUTPUT)]
    pub progress_max_wait: f64,

    /// Most task attempts (polls, updates, cancels) kept in the record; older working polls
    /// are dropped and counted in a TASK_POLLS_ELIDED warning.
    #[arg(long, value_name = "N", default_value_t = 64, help_heading = ARGS_AND_OUTPUT)]
    pub max_task_attempts: usize,

    /// Do not call tools/list before the call (no annotations, x-mcp-header or outputSchema).
    #[arg(long, help_heading = ARGS_AND_OUTPUT)]
    pub no_list: bool,

    /// Call the tool even when its inputSchema breaks the 2026-07-28 `x-mcp-header` rules
    /// (a 2026-07-28 client MUST NOT call such a tool; by default `call` refuses with exit 2).
    #[arg(long, help_heading = ARGS_AND_OUTPUT)]
    pub allow_invalid_tool: bool,

    /// Send the arguments even when they do not match the tool's inputSchema in tools/list
    /// (by default `call` refuses with exit 7 and sends nothing).
    #[arg(long, help_heading = ARGS_AND_OUTPUT)]
    pub send_invalid_args: bool,

    /// Read draft proposals, comma-separated: `tool-failure` (SEP #3313: the failure class a
    /// server declares in an isError result; a declared non-retryable one is never resent, a
    /// retryable one waits its retryNotBefore), `sep-2145` (unknown-tool and output-schema
    /// failures as isError results, with their own advice); `all`, `none`.
    #[arg(long, value_name = "LIST", default_value = "none", help_heading = ARGS_AND_OUTPUT)]
    pub draft: mcp_triage_core::Drafts,

    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub retry: RetryArgs,

    #[command(flatten)]
    pub oauth: OAuthArgs,

    #[command(flatten)]
    pub limits: LimitArgs,
}
