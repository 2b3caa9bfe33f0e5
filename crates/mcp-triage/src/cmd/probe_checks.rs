//! `probe`'s behaviour checks: what real servers get wrong and clients then misread. A server
//! that answers a made-up `Mcp-Session-Id` with 400 instead of 404 leaves its clients stuck
//! after a restart; one that answers an unknown tool or bad arguments with an `isError` result
//! where its spec version asks for a JSON-RPC error makes a client believe the tool ran; a
//! non-standard error code means nothing to a client. None of this shows in `tools/list`.
//!
//! Nothing here may have side effects: the unknown tool is a generated name that is not in
//! `tools/list`, invalid arguments go only to tools annotated `readOnlyHint`, the session
//! check sends `ping`.

use mcp_triage_client::precheck::{check_arguments, ArgumentMismatch};
use mcp_triage_client::{
    CallOptions, CallRecord, Client, ClientOptions, Target, ToolInfo, UnknownSessionAnswer,
    VersionChoice,
};
use mcp_triage_core::{error_code_name, Outcome, ProtocolVersion};
use serde_json::{json, Map, Value};

/// How a check came out. A note is something the spec allows but discourages, or a finding
/// that is not a spec violation; it does not fail the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finding {
    /// As the spec says.
    Pass,
    /// Against what the server's spec version says.
    Problem,
    /// Allowed, but worth knowing.
    Note,
    /// Not applicable or not safe to run here; the detail says which.
    Skip,
}

impl Finding {
    /// The word in JSON and text output.
    pub fn as_str(self) -> &'static str {
        match self {
            Finding::Pass => "pass",
            Finding::Problem => "problem",
            Finding::Note => "note",
            Finding::Skip => "skip",
        }
    }
}

/// Check names, as they appear in output and reports.
pub const UNKNOWN_SESSION: &str = "unknown session id";
/// See [`UNKNOWN_SESSION`].
pub const UNKNOWN_TOOL: &str = "unknown tool";
/// See [`UNKNOWN_SESSION`].
pub const INVALID_ARGUMENTS: &str = "invalid arguments";
/// See [`UNKNOWN_SESSION`].
pub const ERROR_CODES: &str = "error codes";

fn entry(check: &str, finding: Finding, detail: impl Into<String>) -> Value {
    json!({ "check": check, "status": finding.as_str(), "detail": detail.into() })
}

/// Runs every check with the probe's client (already connected, `tools/list` fetched) and,
/// for HTTP, a second client in the legacy era for the session check.
pub async fn run(
    client: &Client,
    tools: &[ToolInfo],
    target: &Target,
    opts: &ClientOptions,
    extra_codes: &[(String, i64)],
) -> Vec<Value> {
    let version = ProtocolVersion::parse(&client.protocol_version().await);
    let mut codes: Vec<(String, i64)> = extra_codes.to_vec();
    let unknown = unknown_tool_name(tools);
    let r = client
        .call_tool(&unknown, json!({}), CallOptions::default())
        .await;
    codes.extend(error_code(&r).map(|c| (UNKNOWN_TOOL.to_string(), c)));
    let (f, d) = judge_unknown_tool(&unknown, &r);
    let mut out = vec![entry(UNKNOWN_TOOL, f, d)];
    match invalid_call(tools) {
        None => out.push(entry(
            INVALID_ARGUMENTS,
            Finding::Skip,
            "no tool annotated readOnlyHint has an inputSchema that arguments can break; \
             tools with side effects are never called",
        )),
        Some((tool, args, mismatch)) => {
            let r = client.call_tool(&tool, args, CallOptions::default()).await;
            codes.extend(error_code(&r).map(|c| (INVALID_ARGUMENTS.to_string(), c)));
            let (f, d) = judge_invalid_arguments(version, &tool, &mismatch, &r);
            out.push(entry(INVALID_ARGUMENTS, f, d));
        }
    }
    let (f, d) = judge_error_codes(&codes);
    out.push(entry(ERROR_CODES, f, d));
    let (f, d) = session_check(target, opts).await;
    out.push(entry(UNKNOWN_SESSION, f, d));
    out
}

/// A tool name that is not in the list.
fn unknown_tool_name(tools: &[ToolInfo]) -> String {
    let mut name = "mcp-triage-probe-no-such-tool".to_string();
    while tools.iter().any(|t| t.name == name) {
        name.push('_');
    }
    name
}

fn error_code(r: &CallRecord) -> Option<i64> {
    r.jsonrpc
        .error_code
        .filter(|_| r.outcome == Outcome::JsonrpcError)
}

fn said(r: &CallRecord) -> String {
    let m = r.message.as_deref().unwrap_or("");
    let m: String = m.chars().take(120).collect();
    format!("{}/{} {m:?}", r.layer, r.outcome)
}

/// Where the `isError` answer to an unknown tool is proposed as the standard: SEP-2145
/// ("Standardize tools/call failure reporting") reports tool resolution failures as
/// `isError` results, and the official reference servers and SDKs already answer so.
pub const SEP_2145: &str =
    "SEP-2145 (https://github.com/modelcontextprotocol/modelcontextprotocol/issues/2145)";

/// Every spec version lists "Unknown tools" among the protocol errors (a JSON-RPC error; the
/// example is `-32602`), so that passes. An `isError` result is a note, not a problem: SEP-2145
/// proposes exactly that answer as the standard and every official reference server gives
/// it, so failing on it would make `probe` fail every correct server (issue 46, item 5). Only
/// a success is a problem: the client then believes a tool ran that does not exist.
pub fn judge_unknown_tool(name: &str, r: &CallRecord) -> (Finding, String) {
    match (r.outcome, error_code(r)) {
        (Outcome::JsonrpcError, Some(-32602)) => (
            Finding::Pass,
            format!("{name:?} (not in tools/list) got JSON-RPC error -32602"),
        ),
        (Outcome::JsonrpcError, Some(code)) => (
            Finding::Note,
            format!(
                "{name:?} (not in tools/list) got JSON-RPC error {code}; the spec's example \
                 for an unknown tool is -32602 (Invalid params)"
            ),
        ),
        (Outcome::ToolError, _) => (
            Finding::Note,
            format!(
                "{name:?} (not in tools/list) got an isError result ({}); the released specs \
                 list unknown tools among protocol errors (JSON-RPC -32602), while {SEP_2145} \
                 proposes this isError answer as the standard and the reference servers give \
                 it, so it is not held against the server",
                said(r)
            ),
        ),
        (Outcome::ToolSuccess, _) => (
            Finding::Problem,
            format!(
                "{name:?} (not in tools/list) got a successful result; an unknown tool is a \
                 protocol error (JSON-RPC -32602)"
            ),
        ),
        _ => (
            Finding::Note,
            format!("{name:?} (not in tools/list) ended in {}", said(r)),
        ),
    }
}

/// 2024-11-05 … 2025-06-18 list "Invalid arguments" among protocol errors (JSON-RPC
/// `-32602`); from 2025-11-25 on the prose moves input validation to `isError` results while
/// the schema's `InvalidParamsError` still allows `-32602`, so there either shape is fine and
/// only the discouraged one is a note.
pub fn judge_invalid_arguments(
    version: Option<ProtocolVersion>,
    tool: &str,
    mismatch: &ArgumentMismatch,
    r: &CallRecord,
) -> (Finding, String) {
    let v = version.map_or("an unknown version", ProtocolVersion::as_str);
    let asks_for_error = version.is_some_and(|v| !v.at_least(ProtocolVersion::V2025_11_25));
    let sent = format!("{tool:?} called with arguments that break its inputSchema ({mismatch})");
    match (r.outcome, error_code(r)) {
        (Outcome::JsonrpcError, Some(-32602)) if asks_for_error => (
            Finding::Pass,
            format!("{sent} got JSON-RPC error -32602, as {v} asks"),
        ),
        (Outcome::JsonrpcError, Some(-32602)) => (
            Finding::Note,
            format!(
                "{sent} got JSON-RPC error -32602; allowed by the schema, but since 2025-11-25 \
                 ({v} negotiated) the spec asks for an isError result so the model can correct \
                 itself"
            ),
        ),
        (Outcome::JsonrpcError, Some(code)) => (
            Finding::Note,
            format!("{sent} got JSON-RPC error {code}; the spec's code is -32602"),
        ),
        (Outcome::ToolError, _) if asks_for_error => (
            Finding::Problem,
            format!(
                "{sent} got an isError result ({}); {v} lists invalid arguments among protocol \
                 errors (JSON-RPC -32602), so a client cannot tell the tool never ran",
                said(r)
            ),
        ),
        (Outcome::ToolError, _) => (
            Finding::Pass,
            format!("{sent} got an isError result, as {v} asks"),
        ),
        (Outcome::ToolSuccess, _) => (
            Finding::Note,
            format!("{sent} succeeded: the server does not hold calls to its inputSchema"),
        ),
        _ => (Finding::Note, format!("{sent} ended in {}", said(r))),
    }
}

/// JSON-RPC and MCP define the codes the core knows; -32000 … -32019 are implementation
/// defined (2026-07-28: "receivers MUST NOT assume any specific meaning"), a note; anything
/// else in an answer to an unknown tool or bad arguments (the Python low-level server's `0`,
/// say) means nothing to a client, where the spec has -32602.
pub fn judge_error_codes(codes: &[(String, i64)]) -> (Finding, String) {
    if codes.is_empty() {
        return (
            Finding::Skip,
            "no JSON-RPC error was answered to look at".into(),
        );
    }
    let (mut problems, mut notes) = (Vec::new(), Vec::new());
    for (what, code) in codes {
        if error_code_name(*code).is_some() {
            continue;
        }
        if (-32019..=-32000).contains(code) {
            notes.push(format!(
                "{code} ({what}) is implementation-defined: clients must not assume a meaning"
            ));
        } else {
            problems.push(format!(
                "{code} ({what}) is neither a JSON-RPC nor an MCP error code; the spec's code \
                 here is -32602"
            ));
        }
    }
    let seen: Vec<String> = codes.iter().map(|(w, c)| format!("{c} ({w})")).collect();
    match (problems.is_empty(), notes.is_empty()) {
        (false, _) => (Finding::Problem, problems.join("; ")),
        (true, false) => (Finding::Note, notes.join("; ")),
        (true, true) => (
            Finding::Pass,
            format!("every code is a JSON-RPC or MCP code: {}", seen.join(", ")),
        ),
    }
}

/// The first read-only tool and arguments that break its inputSchema, with where they break it.
fn invalid_call(tools: &[ToolInfo]) -> Option<(String, Value, ArgumentMismatch)> {
    tools
        .iter()
        .filter(|t| t.hints.read_only == Some(true))
        .find_map(|t| {
            let (args, m) = invalid_arguments_for(t.definition.get("inputSchema")?)?;
            Some((t.name.clone(), args, m))
        })
}

/// Arguments that break `schema` in the plainest way (a required property left out, a
/// property of the wrong type, a property the schema closes out), confirmed by validating
/// them; None when none of these breaks it (an open schema takes any object).
pub fn invalid_arguments_for(schema: &Value) -> Option<(Value, ArgumentMismatch)> {
    let mut candidates = Vec::new();
    if schema["required"].as_array().is_some_and(|r| !r.is_empty()) {
        candidates.push(json!({}));
    }
    for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
        let wrong = match prop.get("type").and_then(Value::as_str) {
            Some("string") => json!(12345),
            Some("number" | "integer") => json!("not a number"),
            Some("boolean") => json!("not a boolean"),
            Some("array" | "object" | "null") => json!(true),
            _ => continue,
        };
        let mut args = Map::new();
        args.insert(name.clone(), wrong);
        candidates.push(Value::Object(args));
    }
    if schema.get("additionalProperties") == Some(&json!(false)) {
        candidates.push(json!({ "mcp-triage-probe-unexpected": true }));
    }
    candidates.into_iter().find_map(|args| {
        let m = check_arguments(schema, &args).ok()??;
        Some((args, m))
    })
}

/// The session check, in a client of its own that speaks the legacy era (the user's legacy
/// version when one is forced, else 2025-11-25), HTTP only.
async fn session_check(target: &Target, opts: &ClientOptions) -> (Finding, String) {
    if !matches!(target, Target::Http { .. }) {
        return (Finding::Skip, "stdio has no sessions".into());
    }
    let version = match opts.protocol {
        VersionChoice::Fixed(ProtocolVersion::V2026_07_28) => {
            return (
                Finding::Skip,
                "--protocol-version 2026-07-28 is stateless: no sessions".into(),
            )
        }
        VersionChoice::Fixed(v) => v,
        VersionChoice::Auto => ProtocolVersion::V2025_11_25,
    };
    let legacy = ClientOptions {
        protocol: VersionChoice::Fixed(version),
        ..opts.clone()
    };
    let Ok(c) = Client::connect(target.clone(), legacy).await else {
        return (Finding::Skip, "could not connect".into());
    };
    let answer = match c.list_tools().await {
        Ok(_) => Some(c.unknown_session_answer().await),
        Err(_) => None,
    };
    c.close().await;
    judge_unknown_session(version, answer)
}

/// A server MUST answer 404 to a session id it does not know (2025-03-26 … 2025-11-25), and
/// only a 404 tells a client to start a new session; a 400 reads as "your request is wrong".
pub fn judge_unknown_session(
    version: ProtocolVersion,
    answer: Option<UnknownSessionAnswer>,
) -> (Finding, String) {
    let v = version.as_str();
    match answer {
        None => (
            Finding::Skip,
            format!("the legacy era ({v}) is not spoken, so there are no sessions"),
        ),
        Some(UnknownSessionAnswer::NoSession) => (
            Finding::Skip,
            format!("the server assigned no Mcp-Session-Id in the legacy era ({v})"),
        ),
        Some(UnknownSessionAnswer::Status(404)) => (
            Finding::Pass,
            "a made-up Mcp-Session-Id got HTTP 404".into(),
        ),
        Some(UnknownSessionAnswer::Status(400)) => (
            Finding::Problem,
            format!(
                "a made-up Mcp-Session-Id got HTTP 400; {v} says the server MUST answer 404, \
                 the answer on which a client starts a new session (a 400 leaves it stuck \
                 after a server restart)"
            ),
        ),
        Some(UnknownSessionAnswer::Status(s @ 200..=299)) => (
            Finding::Note,
            format!(
                "a made-up Mcp-Session-Id got HTTP {s}: the server does not check the session \
                 ids it assigns"
            ),
        ),
        Some(UnknownSessionAnswer::Status(s @ (401 | 403))) => (
            Finding::Skip,
            format!("a made-up Mcp-Session-Id got HTTP {s}: authorization came first"),
        ),
        Some(UnknownSessionAnswer::Status(s)) => (
            Finding::Problem,
            format!("a made-up Mcp-Session-Id got HTTP {s}; {v} says the server MUST answer 404"),
        ),
        Some(UnknownSessionAnswer::Failed(e)) => (
            Finding::Note,
            format!("a request with a made-up Mcp-Session-Id failed: {e}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::cmd::call::tests::record;

    fn mismatch() -> ArgumentMismatch {
        ArgumentMismatch {
            pointer: "/q".into(),
            reason: "expected string".into(),
        }
    }

    #[test]
    fn unknown_tools_want_a_jsonrpc_error() {
        let j = |o, c| judge_unknown_tool("x", &record(o, c, "MCP error -32602: no tool x")).0;
        assert_eq!(j(Outcome::JsonrpcError, Some(-32602)), Finding::Pass);
        assert_eq!(j(Outcome::JsonrpcError, Some(-32601)), Finding::Note);
        assert_eq!(j(Outcome::ToolSuccess, None), Finding::Problem);
    }

    /// Issue 46, item 5: the reference servers' isError answer is a note naming SEP-2145.
    #[test]
    fn an_unknown_tool_answered_with_is_error_is_a_note_citing_sep_2145() {
        let r = record(
            Outcome::ToolError,
            None,
            "MCP error -32602: Tool x not found",
        );
        let (f, d) = judge_unknown_tool("x", &r);
        assert_eq!(f, Finding::Note, "{d}");
        assert!(d.contains("isError") && d.contains("SEP-2145"), "{d}");
        assert!(d.contains("modelcontextprotocol/issues/2145"), "{d}");
    }

    #[test]
    fn invalid_arguments_follow_the_negotiated_version() {
        let old = Some(ProtocolVersion::V2025_06_18);
        let new = Some(ProtocolVersion::V2025_11_25);
        let j = |v, o, c| judge_invalid_arguments(v, "t", &mismatch(), &record(o, c, "bad")).0;
        assert_eq!(j(old, Outcome::JsonrpcError, Some(-32602)), Finding::Pass);
        assert_eq!(j(old, Outcome::ToolError, None), Finding::Problem);
        assert_eq!(j(new, Outcome::ToolError, None), Finding::Pass);
        assert_eq!(j(new, Outcome::JsonrpcError, Some(-32602)), Finding::Note);
        assert_eq!(j(new, Outcome::ToolSuccess, None), Finding::Note);
        let (_, d) = judge_invalid_arguments(
            old,
            "t",
            &mismatch(),
            &record(Outcome::ToolError, None, "bad"),
        );
        assert!(
            d.contains("at /q: expected string") && d.contains("2025-06-18"),
            "{d}"
        );
    }

    #[test]
    fn error_codes_outside_the_specs_are_problems() {
        let c = |list: &[i64]| {
            let v: Vec<(String, i64)> = list.iter().map(|c| ("unknown tool".into(), *c)).collect();
            judge_error_codes(&v)
        };
        assert_eq!(c(&[]).0, Finding::Skip);
        assert_eq!(c(&[-32602, -32601]).0, Finding::Pass);
        assert_eq!(c(&[-32001]).0, Finding::Note);
        let (f, d) = c(&[-32602, 0]);
        assert_eq!(f, Finding::Problem);
        assert!(d.starts_with("0 (unknown tool) is neither"), "{d}");
    }

    #[test]
    fn only_404_passes_the_session_check() {
        let v = ProtocolVersion::V2025_11_25;
        let j = |a| judge_unknown_session(v, Some(a)).0;
        assert_eq!(j(UnknownSessionAnswer::Status(404)), Finding::Pass);
        assert_eq!(j(UnknownSessionAnswer::Status(400)), Finding::Problem);
        assert_eq!(j(UnknownSessionAnswer::Status(500)), Finding::Problem);
        assert_eq!(j(UnknownSessionAnswer::Status(200)), Finding::Note);
        assert_eq!(j(UnknownSessionAnswer::NoSession), Finding::Skip);
        assert_eq!(judge_unknown_session(v, None).0, Finding::Skip);
    }

    #[test]
    fn invalid_arguments_are_built_and_confirmed() {
        let (args, m) = invalid_arguments_for(&json!({ "type": "object",
            "properties": { "q": { "type": "string" } }, "required": ["q"] }))
        .unwrap();
        assert_eq!(
            (args, m.to_string()),
            (json!({}), "at /q: required but missing".into())
        );
        let (args, m) = invalid_arguments_for(&json!({ "type": "object",
            "properties": { "n": { "type": "integer" } } }))
        .unwrap();
        assert_eq!(args, json!({ "n": "not a number" }));
        assert_eq!(m.to_string(), "at /n: expected integer");
        let closed = json!({ "type": "object", "additionalProperties": false });
        assert!(invalid_arguments_for(&closed).is_some());
        let open = json!({ "type": "object", "properties": {} });
        assert_eq!(invalid_arguments_for(&open), None);
    }
}
