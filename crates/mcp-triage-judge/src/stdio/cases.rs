//! The cases `judge --client-stdio` runs: the kitchen scenarios that carry over to stdio (their
//! faults are JSON-RPC messages) and stdio's own faults, each with the checks that apply.

use serde_json::{json, Value};

/// One check of a stdio case (see [`super::grade`] for what each means).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StdioCheck {
    /// The client sent the tools/call the case asks for.
    ToolCalled,
    /// The client ended before the case's limit (did not hang on a dead or silent server).
    InTime,
    /// The client ended as what it was given says: exit 0 for a tool success, a non-zero exit
    /// with something printed for a failure (never a success it was not given).
    ReportedOutcome,
    /// A destructive, non-idempotent tool that ran is not run again (also not by a server
    /// the client started again after the first one died).
    NoUnsafeResend,
    /// No automatic resend after a tool error or a JSON-RPC error.
    NoAutoResend,
    /// The server died or went silent: the client says so (a non-zero exit with a message)
    /// instead of hanging or claiming success.
    ReportsDeadServer,
    /// The server's stderr was drained: its flood finished and the answer went out (a client
    /// that pipes stderr and never reads it blocks the server on a full pipe).
    StderrDrained,
}

impl StdioCheck {
    /// Name in the output.
    pub fn name(self) -> &'static str {
        match self {
            StdioCheck::ToolCalled => "tool_called",
            StdioCheck::InTime => "in_time",
            StdioCheck::ReportedOutcome => "reported_outcome",
            StdioCheck::NoUnsafeResend => "no_unsafe_resend",
            StdioCheck::NoAutoResend => "no_auto_resend",
            StdioCheck::ReportsDeadServer => "reports_dead_server",
            StdioCheck::StderrDrained => "stderr_drained",
        }
    }
}

/// One stdio case.
#[derive(Clone, Debug)]
pub struct StdioCase {
    /// Case id (what `--scenario` selects; `MCP_TRIAGE_SCENARIO`).
    pub id: &'static str,
    /// The scenario `kitchen --stdio` serves (a kitchen id or a `stdio.*` fault).
    pub scenario: &'static str,
    /// Its parameters.
    pub params: Value,
    /// The tool the client is asked to call.
    pub tool: &'static str,
    /// Its arguments.
    pub arguments: Value,
    /// Checks besides `tool_called`, `in_time` and `reported_outcome` (every case has those).
    pub checks: &'static [StdioCheck],
    /// A stated failure is accepted even where the server did answer: why (a server that
    /// breaks the transport, a line over a client's limit).
    pub failure_accepted: Option<&'static str>,
}

const RUN_TOOL: &str = "run_configured_test_scenario";
/// Destructive and not idempotent in the kitchen's catalogue: running it twice is harm.
const DESTRUCTIVE_TOOL: &str = "increment_counter";

fn case(
    id: &'static str,
    params: Value,
    tool: &'static str,
    checks: &'static [StdioCheck],
) -> StdioCase {
    let arguments = if tool == RUN_TOOL {
        json!({ "message": "from mcp-triage judge" })
    } else {
        json!({})
    };
    StdioCase {
        id,
        scenario: id,
        params,
        tool,
        arguments,
        checks,
        failure_accepted: None,
    }
}

/// Every stdio case, in the order they run.
pub fn all() -> Vec<StdioCase> {
    use StdioCheck::*;
    vec![
        case("baseline", json!({}), RUN_TOOL, &[]),
        case("errors.tool_error", json!({}), RUN_TOOL, &[NoAutoResend]),
        case("errors.jsonrpc_error", json!({}), RUN_TOOL, &[NoAutoResend]),
        case("errors.tool_failure", json!({}), RUN_TOOL, &[NoAutoResend]),
        // An input round over stdio: the server's elicitation/create arrives on stdout while
        // the call waits; a host that answers (accept or decline) gets the call's end.
        case("elicitation.approval", json!({}), RUN_TOOL, &[]),
        case("timeout.late_response", json!({ "delayMs": 1500 }), RUN_TOOL, &[]),
        case("stdio.exit_mid_call", json!({}), DESTRUCTIVE_TOOL, &[NoUnsafeResend, ReportsDeadServer]),
        case("stdio.partial_line", json!({}), DESTRUCTIVE_TOOL, &[NoUnsafeResend, ReportsDeadServer]),
        StdioCase {
            failure_accepted: Some("the server broke the stdio transport (a non-JSON line on stdout); refusing it is also right"),
            ..case("stdio.banner", json!({}), RUN_TOOL, &[])
        },
        case("stdio.stderr_flood", json!({ "floodBytes": 1_048_576 }), RUN_TOOL, &[StderrDrained]),
        case("stdio.slow_answer", json!({ "delayMs": 2000 }), RUN_TOOL, &[]),
        StdioCase {
            failure_accepted: Some("one 1 MiB line may be over a client's stated line limit"),
            ..case("stdio.huge_line", json!({ "lineBytes": 1_048_576 }), RUN_TOOL, &[])
        },
        case("stdio.never_answers", json!({}), DESTRUCTIVE_TOOL, &[NoUnsafeResend, ReportsDeadServer]),
    ]
}

/// Every check a case is graded on.
pub fn checks_of(c: &StdioCase) -> Vec<StdioCheck> {
    let mut v = vec![
        StdioCheck::ToolCalled,
        StdioCheck::InTime,
        StdioCheck::ReportedOutcome,
    ];
    v.extend_from_slice(c.checks);
    v
}
