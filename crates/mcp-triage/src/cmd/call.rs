//! `mcp-triage call`: call one tool and say on which layer it ended, what was retried and why.

use crate::exit::Exit;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use mcp_triage_client::precheck::{check_call, CallProblem};
use mcp_triage_client::{
    CallOptions, CallRecord, Client, ClientOptions, Interrupt, RetryOrigin, Target,
};
use mcp_triage_core::{error_code_name, Outcome, ProtocolVersion};
use serde_json::{Map, Value};

use super::client_args::{
    runtime, ArgsError, ConnArgs, InputArgs, LimitArgs, OAuthArgs, RetryArgs,
};

pub const EXAMPLES: &str = "\
Examples:
  mcp-triage call http://127.0.0.1:8765/mcp read_counter
  mcp-triage call http://127.0.0.1:8765/mcp set_value --arg key=a --arg value=3
  mcp-triage call --stdio 'npx -y @modelcontextprotocol/server-everything' echo --args '{\"message\":\"hi\"}'
  mcp-triage call --config ~/.cursor/mcp.json --server github search_issues --arg q=bug --format json
  mcp-triage call URL run_configured_test_scenario --answer 'elicitation/create={\"action\":\"accept\",\"content\":{\"reason\":\"ok\"}}'

Exit codes: 0 success, 2 usage, 3 transport, 4 protocol, 5 interaction left unanswered, 6 tool error,
  7 arguments do not match the tool's inputSchema (nothing sent; --send-invalid-args sends them),
  130 interrupted (Ctrl-C; an open task is cancelled first).";

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// A readable account.
    Text,
    /// JSON for programs: call's record, list's tool definitions, probe's findings, demo's
    /// records (one a line).
    Json,
}

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

    /// One argument KEY=VALUE; VALUE is JSON when it parses, else a string (repeatable).
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

    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub retry: RetryArgs,

    #[command(flatten)]
    pub oauth: OAuthArgs,

    #[command(flatten)]
    pub limits: LimitArgs,
}

/// How the connection ended before there was anything to print.
enum Ended {
    /// The call was made.
    Called(Box<CallRecord>, Option<CallProblem>),
    /// The server could not be reached at all.
    Unreachable(String),
    /// The arguments do not match the inputSchema: nothing was sent.
    Refused(CallProblem),
    /// Ctrl-C while no task was open (or twice): the call was dropped without a record.
    Interrupted,
}

/// The usage error for a listed tool whose `x-mcp-header`s break the 2026-07-28 rules, or
/// None when the tool is fine or not listed (an unlisted tool is the server's to answer).
fn invalid_tool(tools: &[mcp_triage_client::ToolInfo], name: &str) -> Option<CallError> {
    let t = tools.iter().find(|t| t.name == name)?;
    let problems = super::probe::header_problems(&t.definition);
    if problems.is_empty() {
        return None;
    }
    Some(CallError::InvalidHeader {
        tool: name.to_string(),
        problems: problems.join("; "),
    })
}

/// Why `call` did not call (a call that failed is a record and an exit status, not this).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The connection, client or input options cannot be used.
    #[error(transparent)]
    Args(#[from] ArgsError),
    /// `--args` is not JSON.
    #[error("--args is not JSON: {0}")]
    ArgsNotJson(#[source] serde_json::Error),
    /// `--args` is JSON but not an object.
    #[error("--args must be a JSON object")]
    ArgsNotObject,
    /// An `--arg` without `=`.
    #[error("--arg {0:?} is not KEY=VALUE")]
    Arg(String),
    /// A URL positional besides --stdio or --config.
    #[error("with --stdio or --config give only the TOOL")]
    OnlyTheTool,
    /// Not a URL and a tool.
    #[error("give the URL and the TOOL (or --stdio/--config and the TOOL)")]
    UrlAndTool,
    /// `--task-timeout` out of range.
    #[error("--task-timeout must be a positive number of seconds below a day")]
    TaskTimeout,
    /// `--max-task-attempts` below 2.
    #[error("--max-task-attempts must be at least 2")]
    MaxTaskAttempts,
    /// The listed tool's `x-mcp-header`s break the 2026-07-28 rules.
    #[error("tool {tool:?} has an invalid x-mcp-header in its inputSchema, so a 2026-07-28 client must not call it: {problems}; pass --allow-invalid-tool to call it anyway")]
    InvalidHeader {
        /// The tool.
        tool: String,
        /// What is wrong, `; `-separated.
        problems: String,
    },
    /// The record could not be written as JSON.
    #[error(transparent)]
    Record(serde_json::Error),
    /// The `--log` file could not be appended to.
    #[error("--log {}: {source}", path.display())]
    Log {
        /// The log file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

fn arguments(args: &CallArgs) -> Result<Value, CallError> {
    if let Some(text) = &args.args {
        let v: Value = serde_json::from_str(text).map_err(CallError::ArgsNotJson)?;
        if !v.is_object() {
            return Err(CallError::ArgsNotObject);
        }
        return Ok(v);
    }
    let mut m = Map::new();
    for a in &args.arg {
        let (k, v) = a.split_once('=').ok_or_else(|| CallError::Arg(a.clone()))?;
        let value = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()));
        m.insert(k.to_string(), value);
    }
    Ok(Value::Object(m))
}

/// The client options `call`'s flags set: connection, input, retries, tasks, logging.
fn client_options(args: &CallArgs) -> Result<ClientOptions, CallError> {
    let mut opts = args.conn.options(&args.oauth, &args.limits)?;
    args.input.apply(&mut opts)?;
    args.retry.apply(&mut opts)?;
    opts.use_tasks = args.task;
    opts.task_timeout = match args.task_timeout {
        Some(s) if s.is_finite() && s > 0.0 && s < 86_400.0 => Some(Duration::from_secs_f64(s)),
        Some(_) => return Err(CallError::TaskTimeout),
        None => None,
    };
    if args.max_task_attempts < 2 {
        return Err(CallError::MaxTaskAttempts);
    }
    opts.max_task_attempts = args.max_task_attempts;
    opts.scenario = args.scenario.clone();
    opts.list_tools_first = !args.no_list;
    opts.log_arguments = args.log_arguments;
    opts.keep_result = args.log_result;
    Ok(opts)
}

pub fn run(args: CallArgs) -> Result<ExitCode, CallError> {
    let (url, tool) = url_and_tool(&args)?;
    let target = args.conn.target(url.as_deref())?;
    let opts = client_options(&args)?;
    let arguments = arguments(&args)?;
    let interrupt = Interrupt::new();
    let co = call_options(&args, &interrupt);
    let rt = runtime()?;
    let ended = rt.block_on(connect_and_call(
        target, opts, &args, &tool, arguments, co, &interrupt,
    ))?;
    let (record, problem) = match ended {
        Ended::Called(r, p) => (*r, p),
        Ended::Unreachable(e) => {
            eprintln!("mcp-triage: {e}");
            return Ok(Exit::Transport.into());
        }
        Ended::Interrupted => {
            eprintln!("mcp-triage: interrupted; no task was open, nothing to cancel");
            return Ok(Exit::Interrupted.into());
        }
        Ended::Refused(p) => {
            eprintln!(
                "mcp-triage: {p}; nothing was sent. {}, or pass --send-invalid-args to send \
                 them anyway.",
                capitalized(p.fix())
            );
            return Ok(Exit::InvalidArguments.into());
        }
    };
    write_record(&args, record, problem, &interrupt)
}

/// The positional arguments: `URL TOOL`, or only `TOOL` when a target flag (`--stdio`,
/// `--config`) names the server; any other count is a usage error.
fn url_and_tool(args: &CallArgs) -> Result<(Option<String>, String), CallError> {
    match (args.conn.has_target_flag(), args.positional.as_slice()) {
        (true, [tool]) => Ok((None, tool.clone())),
        (false, [url, tool]) => Ok((Some(url.clone()), tool.clone())),
        (true, _) => Err(CallError::OnlyTheTool),
        (false, _) => Err(CallError::UrlAndTool),
    }
}

/// This call's options: `--retry-of` makes it a manual retry of that record, and Ctrl-C is
/// the `interrupt` the call watches (to cancel a task it created).
fn call_options(args: &CallArgs, interrupt: &Interrupt) -> CallOptions {
    CallOptions {
        retry_origin: if args.retry_of.is_some() {
            RetryOrigin::Manual
        } else {
            RetryOrigin::None
        },
        retry_of: args.retry_of.clone(),
        idempotency_key: args.idempotency_key.clone(),
        interrupt: Some(interrupt.clone()),
        ..CallOptions::default()
    }
}

/// Connects, checks the tool and the arguments against the server's list (when it is
/// fetched first), and calls. Everything that needs the client is here, so that the client is
/// closed on every way out but Ctrl-C; an invalid tool definition is the one error.
async fn connect_and_call(
    target: Target,
    opts: ClientOptions,
    args: &CallArgs,
    tool: &str,
    arguments: Value,
    co: CallOptions,
    interrupt: &Interrupt,
) -> Result<Ended, CallError> {
    let list_first = opts.list_tools_first;
    let as_task = opts.use_tasks;
    let client = match Client::connect(target, opts).await {
        Ok(c) => c,
        Err(e) => return Ok(Ended::Unreachable(e.to_string())),
    };
    // The list the call would fetch first anyway (it is cached). When it fails, the call
    // goes ahead unchecked and its record says why the list failed.
    let tools = match list_first {
        true => client.list_tools().await.ok(),
        false => None,
    };
    // The x-mcp-header rules are 2026-07-28's: an older server's x-mcp-header means
    // nothing and no Mcp-Param header is sent.
    let modern = client.protocol_version().await == ProtocolVersion::V2026_07_28.as_str();
    if let Some(usage) = tools
        .as_deref()
        .filter(|_| modern && !args.allow_invalid_tool)
        .and_then(|tools| invalid_tool(tools, tool))
    {
        client.close().await;
        return Err(usage);
    }
    let problem = tools
        .as_deref()
        .and_then(|t| check_call(t, tool, &arguments, as_task));
    if let Some(p @ CallProblem::InvalidArguments { .. }) = &problem {
        if !args.send_invalid_args {
            client.close().await;
            return Ok(Ended::Refused(p.clone()));
        }
    }
    let Some(r) = until_interrupted(client.call_tool(tool, arguments, co), interrupt).await else {
        return Ok(Ended::Interrupted);
    };
    client.close().await;
    Ok(Ended::Called(Box::new(r), problem))
}

/// The end of a call that was made: the precheck's problem and a nonstandard error code become
/// warnings, the record goes to `--log` and to stdout (`--format`), and the exit status is
/// the record's (or Ctrl-C's, when one came during the call).
fn write_record(
    args: &CallArgs,
    mut record: CallRecord,
    problem: Option<CallProblem>,
    interrupt: &Interrupt,
) -> Result<ExitCode, CallError> {
    if let Some(p) = &problem {
        record.warn(p.code(), p.to_string());
    }
    if let Some(w) = nonstandard_code(&record) {
        record.warn("NONSTANDARD_ERROR_CODE", w);
    }
    if let Some(path) = &args.log {
        append_log(path, &record)?;
    }
    let mut out = std::io::stdout().lock();
    let text = match args.format {
        Format::Json => serde_json::to_string(&record).map_err(CallError::Record)?,
        Format::Text => account(&record, problem.as_ref()),
    };
    let _ = writeln!(out, "{text}");
    if interrupt.is_requested() {
        return Ok(Exit::Interrupted.into());
    }
    Ok(crate::exit::of_call(&record).into())
}

/// Runs the call until it returns, or until Ctrl-C. Why not let SIGINT kill the process: a
/// task the call created runs on in the server; on Ctrl-C the call cancels it
/// (`tasks/cancel`) and returns its record. Without an open task there is nothing to cancel
/// and the call is dropped at once (`None`); a second Ctrl-C stops waiting for the cancel.
async fn until_interrupted<F: std::future::Future<Output = CallRecord>>(
    call: F,
    interrupt: &Interrupt,
) -> Option<CallRecord> {
    tokio::pin!(call);
    tokio::select! {
        r = &mut call => return Some(r),
        s = tokio::signal::ctrl_c() => {
            if s.is_err() {
                // no signal handling here: wait for the call as without it
                return Some(call.await);
            }
        }
    }
    if !interrupt.request() {
        return None;
    }
    tokio::select! {
        r = &mut call => Some(r),
        _ = tokio::signal::ctrl_c() => None,
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// A warning for a JSON-RPC error whose code neither JSON-RPC nor MCP defines (the Python
/// low-level server answers a raised exception with `0`, say): its meaning is the server's
/// own, so the usual "fix the arguments" would be a guess.
fn nonstandard_code(r: &CallRecord) -> Option<String> {
    let code = r
        .jsonrpc
        .error_code
        .filter(|_| r.outcome == Outcome::JsonrpcError)?;
    if error_code_name(code).is_some() {
        return None;
    }
    let kind = if (-32099..=-32000).contains(&code) {
        "an implementation-defined server error (-32000 to -32099): clients must not assume \
         a meaning"
    } else {
        "neither a JSON-RPC nor an MCP error code (servers often send such codes for an \
         exception inside the tool)"
    };
    Some(format!("JSON-RPC error code {code} is {kind}"))
}

/// The code of a protocol error a server wrapped in an `isError` result, from its text
/// (the TypeScript SDK and FastMCP write `MCP error -32602: …`): such a tool never ran.
fn wrapped_protocol_code(message: Option<&str>) -> Option<i64> {
    let rest = message?.trim_start().strip_prefix("MCP error ")?;
    let end = rest
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
        .map_or(rest.len(), |(i, _)| i);
    rest[..end].parse().ok()
}

/// The real cause of a failed call when `tools/list` or the answer itself says more than the
/// outcome does; None keeps the outcome's own hint. Only advice: the verdict stays the core's.
fn cause(r: &CallRecord, problem: Option<&CallProblem>) -> Option<String> {
    if !matches!(r.outcome, Outcome::ToolError | Outcome::JsonrpcError) {
        return None;
    }
    if let Some(p) = problem {
        return Some(format!(
            "{p}: {}; resending unchanged fails the same way.",
            p.fix()
        ));
    }
    if let Some(code) = nonstandard_code(r).and(r.jsonrpc.error_code) {
        return Some(format!(
            "error code {code} means what the server means by it (see the warning): read the \
             message and the server's log before changing the call."
        ));
    }
    if r.outcome == Outcome::ToolError {
        let code = wrapped_protocol_code(r.message.as_deref())?;
        let name = error_code_name(code).map_or(String::new(), |n| format!(" ({n})"));
        return Some(format!(
            "the server wrapped JSON-RPC error {code}{name} in an isError result, so the tool \
             most likely never ran: check the tool name and the arguments against tools/list."
        ));
    }
    None
}

fn append_log(path: &std::path::Path, record: &CallRecord) -> Result<(), CallError> {
    let mut line = serde_json::to_string(record).map_err(CallError::Record)?;
    line.push('\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(|source| CallError::Log {
            path: path.to_path_buf(),
            source,
        })
}

/// The readable account: target, each attempt and the decision after it, the end, a hint.
/// When what `tools/list` said about the call (or the answer itself) explains a failure, the
/// explanation replaces the generic "the tool ran …" reason and hint.
fn account(r: &CallRecord, problem: Option<&CallProblem>) -> String {
    let cause = cause(r, problem);
    let mut s = String::new();
    s.push_str(&format!(
        "call {} on {} ({}, {})\n",
        r.tool.as_deref().unwrap_or("?"),
        r.target.as_deref().unwrap_or("?"),
        r.protocol_version,
        r.transport
    ));
    if let Some(info) = &r.server_info {
        s.push_str(&format!(
            "  server {} {}\n",
            info.name,
            info.version.as_deref().unwrap_or("")
        ));
    }
    for (i, a) in r.attempts.iter().enumerate() {
        let status = a.status.map_or("-".to_string(), |s| format!("HTTP {s}"));
        s.push_str(&format!(
            "  attempt {} [{}] id={} {} {} {}ms\n    {}\n",
            i + 1,
            a.kind,
            a.id,
            status,
            a.content_type.as_deref().unwrap_or(""),
            a.duration_ms,
            a.verdict.to_text_line()
        ));
        if let Some(d) = &a.decision {
            let delay = d
                .delay_ms
                .map(|ms| format!(" after {ms} ms"))
                .unwrap_or_default();
            // "the tool ran …" is not so when the cause says the call could not succeed.
            let last_tool_error = i + 1 == r.attempts.len() && r.outcome == Outcome::ToolError;
            let reason = match &cause {
                Some(c) if last_tool_error => c.as_str(),
                _ => d.reason.as_str(),
            };
            s.push_str(&format!("    → {}{}: {}\n", d.action, delay, reason));
        }
    }
    s.push_str(&format!(
        "result: {} / {}  ({} attempt(s), {} tools/call sent, {} input round(s), {} ms)\n",
        r.layer,
        r.outcome,
        r.attempts.len(),
        r.post_count,
        r.rounds,
        r.duration_ms
    ));
    summary_texts(r, &mut s);
    for w in &r.warnings {
        // The cause line below says it again, with the fix.
        if cause.as_deref().is_some_and(|c| c.starts_with(&w.detail)) {
            continue;
        }
        s.push_str(&format!("warning {}: {}\n", w.code, w.detail));
    }
    s.push_str(&super::client_args::stderr_block(&r.stderr_tail));
    let cancelled = r.warnings.iter().any(|w| w.code == "TASK_CANCELLED");
    match &cause {
        Some(c) => s.push_str(&format!("next: {c}")),
        // the generic timeout hint would say the tool may still run; the task was cancelled
        None if cancelled && r.outcome == Outcome::Timeout => s.push_str(
            "next: the task was cancelled before it ended; give it longer with --task-timeout.",
        ),
        None => s.push_str(&format!("next: {}", hint(r.outcome))),
    }
    s
}

/// The `detail:` and `tool text:` lines of the summary. For INVALID_TOOL_RESULT the detail is
/// why the result is broken (the final verdict's detail), and the tool's own text follows as
/// such: showing only the tool's text there hid the reason behind the data that broke it.
fn summary_texts(r: &CallRecord, s: &mut String) {
    let message = r.message.as_deref();
    match r.outcome {
        Outcome::ToolSuccess | Outcome::ToolError => {
            if let Some(m) = message {
                s.push_str(&format!("tool text: {m}\n"));
            }
        }
        Outcome::InvalidToolResult => {
            let reason = r.attempts.last().and_then(|a| a.verdict.detail.as_deref());
            if let Some(d) = reason {
                s.push_str(&format!("detail: {d}\n"));
            }
            if let Some(m) = message {
                s.push_str(&format!("tool text: {m}\n"));
            }
        }
        _ => {
            if let Some(m) = message {
                s.push_str(&format!("detail: {m}\n"));
            }
        }
    }
}

fn hint(o: Outcome) -> &'static str {
    match o {
        Outcome::ToolSuccess => "nothing to do.",
        Outcome::ToolError => "the tool ran and failed; show its text to the model or the user, do not resend blindly.",
        Outcome::JsonrpcError => "the server rejected the request (see code and message): fix the arguments or the method.",
        Outcome::InputRequired => "the server needs input: pass --answer KEY=JSON or --input FILE.",
        Outcome::TaskCreated => "the server runs the call as a task; poll it with tasks/get.",
        Outcome::HttpError => "a transport failure: check the status (auth, rate limit, gateway) before the tool.",
        Outcome::MissingResponse => "the server never answered this request; check server logs for the call.",
        Outcome::StreamIncomplete => "the stream ended early; resend only if the tool is safe to run twice.",
        Outcome::ConnectionError => "the connection failed; check that the server runs and is reachable.",
        Outcome::Timeout => "no answer in time; raise --timeout or check the server; the tool may still have run.",
        Outcome::LimitExceeded => "the response exceeded a limit (--max-body-bytes).",
        Outcome::UnexpectedContentType => "a proxy or portal answered instead of the MCP server; check the URL.",
        Outcome::MalformedJson | Outcome::InvalidEnvelope | Outcome::InvalidToolResult => {
            "the server broke the protocol; report it to the server's authors with the record."
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A final record with this outcome, JSON-RPC code and message (also for probe's tests).
    pub(crate) fn record(outcome: Outcome, code: Option<i64>, message: &str) -> CallRecord {
        let mut r = CallRecord::new("t", "stdio", "tools/call");
        r.outcome = outcome;
        r.layer = outcome.layer();
        r.jsonrpc.error_code = code;
        r.message = Some(message.into());
        r
    }

    #[test]
    fn wrapped_protocol_codes_are_read_from_the_tool_text() {
        let w = |m: &str| wrapped_protocol_code(Some(m));
        assert_eq!(w("MCP error -32602: Tool x not found"), Some(-32602));
        assert_eq!(w("  MCP error -32601: no"), Some(-32601));
        assert_eq!(w("MCP error 0"), Some(0));
        assert_eq!(w("MCP error -: x"), None);
        assert_eq!(w("the tool failed: MCP error -32602"), None);
        assert_eq!(wrapped_protocol_code(None), None);
    }

    #[test]
    fn nonstandard_codes_get_a_warning_not_fix_the_arguments() {
        let r = record(Outcome::JsonrpcError, Some(0), "ValueError");
        let w = nonstandard_code(&r).unwrap();
        assert!(w.contains("code 0 is neither a JSON-RPC nor an MCP"), "{w}");
        let c = cause(&r, None).unwrap();
        assert!(!c.contains("fix the arguments"), "{c}");
        let w = nonstandard_code(&record(Outcome::JsonrpcError, Some(-32001), "x")).unwrap();
        assert!(w.contains("implementation-defined"), "{w}");
        assert_eq!(
            nonstandard_code(&record(Outcome::JsonrpcError, Some(-32602), "x")),
            None
        );
        assert_eq!(
            cause(&record(Outcome::JsonrpcError, Some(-32602), "x"), None),
            None
        );
    }

    #[test]
    fn the_cause_replaces_the_tool_ran_advice() {
        let r = record(
            Outcome::ToolError,
            None,
            "MCP error -32602: Tool x not found",
        );
        let c = cause(&r, None).unwrap();
        assert!(
            c.contains("-32602 (Invalid params)") && c.contains("never ran"),
            "{c}"
        );
        let p = CallProblem::UnknownTool {
            tool: "x".into(),
            close: vec!["y".into()],
        };
        let c = cause(&r, Some(&p)).unwrap();
        assert!(
            c.starts_with(r#""x" is not in tools/list (close: "y"): check"#),
            "{c}"
        );
        // Without a cause a plain tool error keeps the outcome's hint.
        assert_eq!(
            cause(&record(Outcome::ToolError, None, "disk full"), None),
            None
        );
        // A success is not explained away by a precheck that turned out wrong.
        assert_eq!(
            cause(&record(Outcome::ToolSuccess, None, "ok"), Some(&p)),
            None
        );
    }
}
