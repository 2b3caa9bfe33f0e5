//! Draft proposals read into a verdict, each only when its switch in
//! [`crate::Drafts`] is on:
//!
//! - SEP #3313 (ToolFailure, PR modelcontextprotocol#3313, schema in #3312): an `isError`
//!   result may carry `_meta["io.modelcontextprotocol/toolFailure"]` =
//!   `{class, code, retryable?, retryNotBefore?, correlationId, agentGuidance?}`; the verdict
//!   carries it typed ([`ToolFailure`]) so that the retry policy can honour a declared
//!   non-retryable failure. A malformed object is a warning naming what is wrong, and the
//!   verdict is otherwise the one without it: a draft's extension must not turn a tool error
//!   into a protocol failure.
//! - SEP-2145 (PR modelcontextprotocol#2145): an unknown tool, a tool that cannot be called
//!   and an output that breaks the `outputSchema` are `isError` results, not JSON-RPC errors.
//!   Which of these a tool error is ([`ToolErrorKind`]) comes from the message patterns the SEP
//!   recommends (and the SDKs' own), or the declared ToolFailure `code`; a JSON-RPC error that
//!   reports one of them gets a warning.
//!
//! Why apart from `result.rs`: the rules there are the released revisions'; these are drafts
//! that may change or be dropped, so they stay behind their switches in one place.

use std::time::{Duration, SystemTime};

use crate::json::{Node, Object};
use crate::protocol::CallContext;
use crate::verdict::{sanitize_line, FailureClass, Outcome, ToolErrorKind, ToolFailure, Verdict};

use super::Findings;

/// The `_meta` key SEP #3313 defines on `CallToolResult`.
pub(crate) const TOOL_FAILURE_KEY: &str = "io.modelcontextprotocol/toolFailure";

/// Longest `code`, `correlationId` and `agentGuidance` kept (characters, after sanitising).
const MAX_CODE_CHARS: usize = 128;
const MAX_CORRELATION_CHARS: usize = 256;
const MAX_GUIDANCE_CHARS: usize = 512;

/// Reads the drafts that are on into `v`, the verdict of the complete result `r` at `base`.
pub(crate) fn read_result(
    r: &Object,
    ctx: &CallContext,
    base: &str,
    v: &mut Verdict,
    findings: &mut Findings,
) {
    let is_error = v.outcome == Outcome::ToolError;
    if ctx.drafts.tool_failure {
        v.tool_failure = declared_failure(r, ctx.now, base, is_error, findings).map(Box::new);
    }
    if ctx.drafts.sep_2145 && is_error {
        v.tool_error_kind = first_text(r)
            .and_then(kind_of_text)
            .or_else(|| v.tool_failure.as_ref().and_then(|f| kind_of_code(&f.code)));
    }
}

/// The text of the result's first text block, as the verdict's detail reads it.
fn first_text<'r>(r: &'r Object) -> Option<&'r str> {
    let Some(Node::Array(content)) = r.get("content") else {
        return None;
    };
    content.iter().find_map(|b| {
        let b = b.as_object()?;
        (b.get("type")?.as_str()? == "text").then(|| b.get("text")?.as_str())?
    })
}

/// The declared failure of `_meta[TOOL_FAILURE_KEY]`, or `None` (and a warning) when there is
/// none to honour: absent, on a result that is no error, or malformed.
fn declared_failure(
    r: &Object,
    now: SystemTime,
    base: &str,
    is_error: bool,
    findings: &mut Findings,
) -> Option<ToolFailure> {
    let node = r.get("_meta")?.as_object()?.get(TOOL_FAILURE_KEY)?;
    let at = format!("{base}/_meta/{}", TOOL_FAILURE_KEY.replace('/', "~1"));
    if !is_error {
        findings.warn(
            "TOOL_FAILURE_WITHOUT_ERROR",
            format!(
                "{at} declares a failure on a result without isError: true (draft SEP #3313: \
                 only error results carry one); not read"
            ),
        );
        return None;
    }
    match parse_failure(node, &at, now) {
        Ok(f) => {
            consistency(&f, &at, findings);
            Some(f)
        }
        Err(what) => {
            findings.warn(
                "TOOL_FAILURE_INVALID",
                format!("{what} (draft SEP #3313); the declared failure is not read"),
            );
            None
        }
    }
}

/// A required string member, sanitised and cut, or what is wrong with it.
fn required_str(o: &Object, at: &str, name: &str, max: usize) -> Result<String, String> {
    match o.get(name) {
        Some(Node::String(s)) if !s.trim().is_empty() => Ok(sanitize_line(s, max)),
        Some(Node::String(_)) => Err(format!("{at}/{name} is empty")),
        Some(n) => Err(format!("{at}/{name} is {}; it must be a string", n.kind())),
        None => Err(format!("{at}/{name} is missing; it is required")),
    }
}

/// `{at}` read as a ToolFailure, or the sentence saying what is wrong with it.
fn parse_failure(node: &Node, at: &str, now: SystemTime) -> Result<ToolFailure, String> {
    let Some(o) = node.as_object() else {
        return Err(format!("{at} is {}; it must be an object", node.kind()));
    };
    let class = match o.get("class") {
        Some(Node::String(s)) => FailureClass::from_wire(s).ok_or_else(|| {
            format!(
                "{at}/class is {:?}; it must be capability, reliability or governance",
                sanitize_line(s, 64)
            )
        })?,
        Some(n) => return Err(format!("{at}/class is {}; it must be a string", n.kind())),
        None => return Err(format!("{at}/class is missing; it is required")),
    };
    let code = required_str(o, at, "code", MAX_CODE_CHARS)?;
    let correlation_id = required_str(o, at, "correlationId", MAX_CORRELATION_CHARS)?;
    let retryable = match o.get("retryable") {
        None => None,
        Some(Node::Bool(b)) => Some(*b),
        Some(n) => {
            return Err(format!(
                "{at}/retryable is {}; it must be a boolean",
                n.kind()
            ))
        }
    };
    let retry_not_before = match o.get("retryNotBefore") {
        None => None,
        Some(n) => Some(epoch_ms(n).ok_or_else(|| {
            format!("{at}/retryNotBefore is not a non-negative number of Unix epoch milliseconds")
        })?),
    };
    let agent_guidance = match o.get("agentGuidance") {
        None => None,
        Some(Node::String(s)) => Some(sanitize_line(s, MAX_GUIDANCE_CHARS)),
        Some(n) => {
            return Err(format!(
                "{at}/agentGuidance is {}; it must be a string",
                n.kind()
            ))
        }
    };
    let retry_after_ms = retry_not_before.map(|ms| wait_from(now, ms));
    Ok(ToolFailure {
        class,
        code,
        retryable,
        retry_not_before,
        retry_after_ms,
        correlation_id,
        agent_guidance,
    })
}

/// A non-negative JSON number as whole milliseconds (a fraction is cut): `retryNotBefore` is a
/// TypeScript `number`, so `1.7e12` is as valid as `1700000000000`.
fn epoch_ms(n: &Node) -> Option<u64> {
    match n {
        Node::Int(i) => u64::try_from(*i).ok(),
        Node::UInt(u) => Some(*u),
        Node::Float(f) if f.is_finite() && *f >= 0.0 && *f < 1.8e19 => Some(*f as u64),
        _ => None,
    }
}

/// Milliseconds from `now` until the epoch time `ms`; 0 when it has passed.
fn wait_from(now: SystemTime, ms: u64) -> u64 {
    let at = SystemTime::UNIX_EPOCH
        .checked_add(Duration::from_millis(ms))
        .unwrap_or(SystemTime::UNIX_EPOCH + Duration::from_secs(u64::MAX / 1000));
    at.duration_since(now)
        .unwrap_or(Duration::ZERO)
        .as_millis()
        .min(u128::from(u64::MAX)) as u64
}

/// The rules of SEP #3313 a well-formed failure can still break: `retryable` is only
/// meaningful for `reliability` (MUST be absent or false otherwise), `retryNotBefore` only when
/// `retryable` is true. Warnings only: the class decides, and the retry policy reads it first.
fn consistency(f: &ToolFailure, at: &str, findings: &mut Findings) {
    if f.retryable == Some(true) && f.class != FailureClass::Reliability {
        findings.warn(
            "TOOL_FAILURE_INCONSISTENT",
            format!(
                "{at}/retryable is true on a {} failure; only reliability failures may be \
                 retried (draft SEP #3313), so it is not honoured",
                f.class
            ),
        );
    }
    if f.retry_not_before.is_some() && f.retryable != Some(true) {
        findings.warn(
            "TOOL_FAILURE_INCONSISTENT",
            format!(
                "{at}/retryNotBefore is set but retryable is not true; it only means something \
                 for a retryable failure (draft SEP #3313)"
            ),
        );
    }
}

/// The SEP-2145 kind a tool error's text names: the patterns the SEP recommends
/// (`Unknown tool: <name>`, `Tool unavailable: <name>`, `Invalid input: …`,
/// `Tool produced invalid structured output for <name>`) and those of the SDKs that already
/// answer so (`Tool <name> not found`, `Tool <name> disabled`, `Input validation error`,
/// `Output validation error`), after an `MCP error <code>: ` prefix the SDKs add.
pub(crate) fn kind_of_text(text: &str) -> Option<ToolErrorKind> {
    let t = text.trim_start().to_ascii_lowercase();
    let t = strip_mcp_error_prefix(&t);
    let starts = |p: &[&str]| p.iter().any(|p| t.starts_with(p));
    if starts(&["unknown tool"]) || tool_named_then(t, &["not found", "does not exist"]) {
        return Some(ToolErrorKind::UnknownTool);
    }
    if starts(&["tool unavailable"]) || tool_named_then(t, &["disabled", "is disabled"]) {
        return Some(ToolErrorKind::ToolUnavailable);
    }
    if starts(&["invalid input", "input validation error"]) {
        return Some(ToolErrorKind::InvalidInput);
    }
    if starts(&[
        "tool produced invalid structured output",
        "output validation error",
    ]) {
        return Some(ToolErrorKind::InvalidOutput);
    }
    None
}

/// `t` without a leading `mcp error <code>: ` (the TypeScript SDK's and FastMCP's form).
fn strip_mcp_error_prefix(t: &str) -> &str {
    let Some(rest) = t.strip_prefix("mcp error ") else {
        return t;
    };
    match rest.split_once(':') {
        Some((code, after)) if code.trim().parse::<i64>().is_ok() => after.trim_start(),
        _ => t,
    }
}

/// `tool <one word> <ending>…`: the SDKs' `Tool x not found` / `Tool x disabled`, with the name
/// one word so that a tool's own sentence ("tool run failed: file not found") does not match.
fn tool_named_then(t: &str, endings: &[&str]) -> bool {
    let Some(rest) = t.strip_prefix("tool ") else {
        return false;
    };
    let Some((_, after)) = rest.trim_start().split_once(' ') else {
        return false;
    };
    endings.iter().any(|e| after.starts_with(e))
}

/// The SEP-2145 kind a declared ToolFailure `code` names (SEP #3313's open vocabulary has no
/// code for these; these are the names servers use).
fn kind_of_code(code: &str) -> Option<ToolErrorKind> {
    Some(match code {
        "unknown_tool" | "tool_not_found" => ToolErrorKind::UnknownTool,
        "tool_unavailable" | "tool_disabled" => ToolErrorKind::ToolUnavailable,
        "invalid_input" => ToolErrorKind::InvalidInput,
        "invalid_output" | "invalid_structured_output" | "output_schema_mismatch" => {
            ToolErrorKind::InvalidOutput
        }
        _ => return None,
    })
}

/// SEP-2145: a JSON-RPC error answering a `tools/call` with what that draft reports as an
/// `isError` result (an unknown tool, a disabled one, an output schema failure) gets a
/// warning; the verdict stays the error it is.
pub(crate) fn warn_protocol_error(v: &mut Verdict) {
    let Some(kind) = v.message.as_deref().and_then(kind_of_text) else {
        return;
    };
    if kind == ToolErrorKind::InvalidInput {
        // SEP-1303's rule, not this draft's; released revisions already say so.
        return;
    }
    v.warn(
        "SEP_2145_PROTOCOL_ERROR",
        format!(
            "the JSON-RPC error reports {} ({}), which draft SEP-2145 reports as a tool \
             execution error (an isError result the model can read)",
            match kind {
                ToolErrorKind::UnknownTool => "an unknown tool",
                ToolErrorKind::ToolUnavailable => "a tool that cannot be called",
                _ => "an output that breaks the outputSchema",
            },
            kind.as_str()
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_name_their_kind() {
        use ToolErrorKind::*;
        for (text, want) in [
            (
                "Unknown tool: x. Re-run tools/list and retry.",
                Some(UnknownTool),
            ),
            ("MCP error -32602: Tool x not found", Some(UnknownTool)),
            (
                "Tool unavailable: x. Reason: disabled.",
                Some(ToolUnavailable),
            ),
            ("Tool x disabled", Some(ToolUnavailable)),
            ("Invalid input: x. a must be a number.", Some(InvalidInput)),
            (
                "MCP error -32602: Input validation error: bad",
                Some(InvalidInput),
            ),
            (
                "Tool produced invalid structured output for x: nope",
                Some(InvalidOutput),
            ),
            ("Output validation error: missing", Some(InvalidOutput)),
            ("tool run failed: file not found", None),
            ("disk full", None),
            ("MCP error x: Unknown tool", None),
        ] {
            assert_eq!(kind_of_text(text), want, "{text}");
        }
    }

    #[test]
    fn retry_not_before_is_a_wait_from_now() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_millis(1_000);
        assert_eq!(wait_from(now, 3_500), 2_500);
        assert_eq!(wait_from(now, 10), 0);
        assert!(wait_from(now, u64::MAX) > 0);
        assert_eq!(epoch_ms(&Node::Float(1.5e3)), Some(1_500));
        assert_eq!(epoch_ms(&Node::Int(-1)), None);
        assert_eq!(epoch_ms(&Node::Float(f64::NAN)), None);
    }
}
