//! `mcp-triage call`: call one tool and say on which layer it ended, what was retried and why.
//! The arguments are read in `args.rs` and checked and resolved once in `config.rs`; this
//! connects, calls and prints the record.

mod advice;
mod args;
mod config;

use super::format::Format;
pub use args::CallArgs;
pub use config::{config, CallConfig, ConfigError};

use crate::exit::Exit;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use mcp_triage_client::arg_text::{quoting_hint, typed_arguments};
use mcp_triage_client::precheck::{check_call, CallProblem};
use mcp_triage_client::{CallRecord, Client, Interrupt};
use mcp_triage_core::{error_code_name, Outcome, ProtocolVersion};
use serde_json::Value;

use super::client_args::{runtime, ArgsError};

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

/// How the connection ended before there was anything to print.
enum Ended {
    /// The call was made.
    Called(Box<CallRecord>, Option<CallProblem>),
    /// The server could not be reached at all.
    Unreachable(String),
    /// The arguments do not match the inputSchema: nothing was sent. The record says so;
    /// the text is how to quote an `--arg` that was read as the wrong type, if one was.
    Refused(Box<CallRecord>, CallProblem, Option<String>),
    /// Ctrl-C while no task was open (or twice): the call was dropped without a record.
    Interrupted,
}

/// The usage error for a listed tool whose `x-mcp-header`s break the 2026-07-28 rules, or
/// None when the tool is fine or not listed (an unlisted tool is the server's to answer).
fn invalid_tool(tools: &[mcp_triage_client::ToolInfo], name: &str) -> Option<CallError> {
    let t = tools.iter().find(|t| t.name == name)?;
    let problems = super::tool_checks::header_problems(&t.definition);
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
    /// The async runtime did not start.
    #[error(transparent)]
    Args(#[from] ArgsError),
    /// The arguments cannot be used.
    #[error(transparent)]
    Config(#[from] ConfigError),
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

pub fn run(config: CallConfig) -> Result<ExitCode, CallError> {
    let rt = runtime()?;
    let ended = rt.block_on(connect_and_call(&config))?;
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
        Ended::Refused(record, p, hint) => return refuse(&config, &record, &p, hint),
    };
    write_record(&config, record, problem)
}

/// A call refused before sending (exit 7): the reason and the fix on stderr, with how to
/// quote an `--arg` when its reading caused it; and, so that a script can tell a refusal from
/// a crash, the record (warning `CALL_REFUSED`) to `--log` and, with `--format json`, to
/// stdout. Text output stays on stderr alone, as it always was.
fn refuse(
    config: &CallConfig,
    record: &CallRecord,
    p: &CallProblem,
    hint: Option<String>,
) -> Result<ExitCode, CallError> {
    let quoting = hint
        .map(|h| format!(" {}.", capitalized(&h)))
        .unwrap_or_default();
    eprintln!(
        "mcp-triage: {p}; nothing was sent.{quoting} {}, or pass --send-invalid-args to send \
         them anyway.",
        capitalized(p.fix())
    );
    if let Some(path) = &config.log {
        append_log(path, record)?;
    }
    if config.format == Format::Json {
        let text = serde_json::to_string(record).map_err(CallError::Record)?;
        let _ = writeln!(std::io::stdout().lock(), "{text}");
    }
    Ok(Exit::InvalidArguments.into())
}

/// Connects, checks the tool and the arguments against the server's list (when it is
/// fetched first), and calls. Everything that needs the client is here, so that the client is
/// closed on every way out but Ctrl-C; an invalid tool definition is the one error.
async fn connect_and_call(config: &CallConfig) -> Result<Ended, CallError> {
    let tool = config.tool.as_str();
    let list_first = config.client.list_tools_first;
    let as_task = config.client.use_tasks;
    let client = match Client::connect(config.target.clone(), config.client.clone()).await {
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
        .filter(|_| modern && !config.allow_invalid_tool)
        .and_then(|tools| invalid_tool(tools, tool))
    {
        client.close().await;
        return Err(usage);
    }
    let arguments = arguments_for(config, tools.as_deref());
    let problem = tools
        .as_deref()
        .and_then(|t| check_call(t, tool, &arguments, as_task));
    if let Some(p @ CallProblem::InvalidArguments { mismatch, .. }) = &problem {
        if !config.send_invalid_args {
            let schema = tools
                .iter()
                .flatten()
                .find(|t| t.name == tool)
                .and_then(|t| t.definition.get("inputSchema"));
            let hint =
                schema.and_then(|s| quoting_hint(s, &config.arg_pairs, &arguments, mismatch));
            let detail = p.to_string();
            let mut rec = client
                .refused_call(tool, arguments, config.call.clone(), p.code(), &detail)
                .await;
            if let Some(h) = &hint {
                rec.warn("ARG_QUOTING", h.clone());
            }
            client.close().await;
            return Ok(Ended::Refused(Box::new(rec), p.clone(), hint));
        }
    }
    let call = client.call_tool(tool, arguments, config.call.clone());
    let Some(r) = until_interrupted(call, &config.interrupt).await else {
        return Ok(Ended::Interrupted);
    };
    client.close().await;
    Ok(Ended::Called(Box::new(r), problem))
}

/// The arguments to send: `--args` as given; the `--arg`s read by the listed tool's
/// inputSchema when there is a list (a string property gets VALUE as typed), else JSON-first.
fn arguments_for(config: &CallConfig, tools: Option<&[mcp_triage_client::ToolInfo]>) -> Value {
    let Some(tools) = tools.filter(|_| !config.arg_pairs.is_empty()) else {
        return config.arguments.clone();
    };
    let schema = tools
        .iter()
        .find(|t| t.name == config.tool)
        .and_then(|t| t.definition.get("inputSchema"));
    typed_arguments(schema, &config.arg_pairs)
}

/// The end of a call that was made: the precheck's problem and a nonstandard error code become
/// warnings, the record goes to `--log` and to stdout (`--format`), and the exit status is
/// the record's (or Ctrl-C's, when one came during the call).
fn write_record(
    config: &CallConfig,
    mut record: CallRecord,
    problem: Option<CallProblem>,
) -> Result<ExitCode, CallError> {
    if let Some(p) = &problem {
        record.warn(p.code(), p.to_string());
    }
    if let Some(w) = nonstandard_code(&record) {
        record.warn("NONSTANDARD_ERROR_CODE", w);
    }
    if let Some(path) = &config.log {
        append_log(path, &record)?;
    }
    let mut out = std::io::stdout().lock();
    let text = match config.format {
        Format::Json => serde_json::to_string(&record).map_err(CallError::Record)?,
        Format::Text => account(&record, problem.as_ref()),
    };
    let _ = writeln!(out, "{text}");
    if config.interrupt.is_requested() {
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
/// outcome does, told by who caused it ([`advice`]): the request (what `tools/list` says is
/// wrong with it, `-32602`/`-32601`), the server (`-32603`, `-32000..=-32099`), or mcp-triage's
/// own refusal of a server request. None keeps the outcome's own hint. Only advice: the
/// verdict stays the core's.
fn cause(r: &CallRecord, problem: Option<&CallProblem>) -> Option<String> {
    if !matches!(r.outcome, Outcome::ToolError | Outcome::JsonrpcError) {
        // A success after a refused question still lacks what the server asked for.
        return advice::refused(r);
    }
    if let Some(p) = problem {
        return Some(format!(
            "{p}: {}; resending unchanged fails the same way.",
            p.fix()
        ));
    }
    if let Some(c) = advice::refused(r) {
        return Some(c);
    }
    let code = r
        .jsonrpc
        .error_code
        .filter(|_| r.outcome == Outcome::JsonrpcError);
    if let Some(c) = code.and_then(|c| advice::for_code(c, false)) {
        return Some(c);
    }
    if let Some(code) = nonstandard_code(r).and(r.jsonrpc.error_code) {
        return Some(format!(
            "error code {code} means what the server means by it (see the warning): read the \
             message and the server's log before changing the call."
        ));
    }
    if r.outcome == Outcome::ToolError {
        if let Some(c) = drafted(r) {
            return Some(c);
        }
        let code = wrapped_protocol_code(r.message.as_deref())?;
        if let Some(c) = advice::for_code(code, true) {
            return Some(c);
        }
        // A code that does not say who caused it: the message has to.
        let name = error_code_name(code).map_or(String::new(), |n| format!(" ({n})"));
        return Some(format!(
            "the server wrapped error {code}{name} in an isError result: read its message and \
             the server's log before changing the call."
        ));
    }
    None
}

/// What the drafts read into the final verdict of a tool error say about it (`--draft`): the
/// SEP-2145 kind (an unknown tool is "not listed", as without the draft) before the declared
/// SEP #3313 failure, whose class says whether to resend. None without either.
fn drafted(r: &CallRecord) -> Option<String> {
    let v = &r.attempts.last()?.verdict;
    if let Some(kind) = v.tool_error_kind {
        return Some(advice::for_kind(kind, r.tool.as_deref().unwrap_or("?")));
    }
    v.tool_failure.as_deref().map(advice::declared)
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
        // -32602 is the request's: the advice says so (issue 46).
        let c = cause(&record(Outcome::JsonrpcError, Some(-32602), "x"), None).unwrap();
        assert!(c.contains("the server refused the arguments"), "{c}");
    }

    /// A record whose last attempt's verdict is `v`.
    fn with_verdict(v: mcp_triage_core::Verdict) -> CallRecord {
        let mut r = record(v.outcome, None, "Unknown tool: nope");
        r.tool = Some("nope".into());
        r.attempts.push(mcp_triage_core::AttemptRecord {
            id: serde_json::json!(1),
            kind: "call".into(),
            retry_of: None,
            status: Some(200),
            content_type: None,
            stream: None,
            verdict: v,
            duration_ms: 1,
            decision: None,
        });
        r
    }

    /// Issue 45: with `--draft sep-2145` an unknown tool answered as an isError result is
    /// still "not listed", and the account's last decision line says so instead of "the tool
    /// ran"; a declared failure names its class.
    #[test]
    fn drafted_tool_errors_get_their_own_cause() {
        use mcp_triage_core::{FailureClass, ToolErrorKind, ToolFailure, Verdict};
        let mut v = Verdict::new(Outcome::ToolError);
        v.tool_error_kind = Some(ToolErrorKind::UnknownTool);
        let r = with_verdict(v.clone());
        let c = cause(&r, None).unwrap();
        assert!(
            c.contains("\"nope\" is not listed") && c.contains("re-list"),
            "{c}"
        );
        assert!(account(&r, None).contains("next: the server says \"nope\" is not listed"));
        // The precheck, when the list was read, says it first (and also "not in tools/list").
        let p = CallProblem::UnknownTool {
            tool: "nope".into(),
            close: vec![],
        };
        assert!(cause(&r, Some(&p))
            .unwrap()
            .contains("is not in tools/list"));
        // Without the draft's kind the plain text keeps the outcome's hint.
        let plain = with_verdict(Verdict::new(Outcome::ToolError));
        assert_eq!(cause(&plain, None), None);
        v.tool_error_kind = None;
        v.tool_failure = Some(Box::new(ToolFailure {
            class: FailureClass::Capability,
            code: "resource_not_found".into(),
            retryable: Some(false),
            retry_not_before: None,
            retry_after_ms: None,
            correlation_id: "c-1".into(),
            agent_guidance: None,
        }));
        let c = cause(&with_verdict(v), None).unwrap();
        assert!(
            c.contains("declared a capability failure (resource_not_found"),
            "{c}"
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
