//! Whose the failure was, for `call`'s `next:` line: the caller's request (its arguments or its
//! method), the server (it failed on a request it accepted), or mcp-triage itself (it refused a
//! question of the server for want of an answer). Issue 46 found the advice blind to that: a
//! `-32603 Internal error` was told "fix the arguments or the method", and a tool that failed
//! because the client refused its sampling request was told "check the tool name and the
//! arguments" while the warning above said `--answer sampling/createMessage=JSON`.

use mcp_triage_client::{refused_request_method, CallRecord};
use mcp_triage_core::{error_code_name, FailureClass, Outcome, ToolErrorKind, ToolFailure};

/// Who caused a JSON-RPC error, by its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Party {
    /// The request: `-32602 Invalid params` (the arguments), `-32601 Method not found`.
    Request,
    /// The server: `-32603 Internal error`, and the implementation-defined server errors
    /// `-32000..=-32099` that MCP gives no name.
    Server,
}

/// Who caused the JSON-RPC error `code`; None for the codes that say nothing of it (MCP's own,
/// `0`, `-1`, …), whose advice stays the outcome's or the warning's.
pub(super) fn party(code: i64) -> Option<Party> {
    match code {
        -32602 | -32601 => Some(Party::Request),
        -32603 => Some(Party::Server),
        c if (-32099..=-32000).contains(&c) && error_code_name(c).is_none() => Some(Party::Server),
        _ => None,
    }
}

/// `-32603 (Internal error)`, or the bare code when it has no name.
fn named(code: i64) -> String {
    error_code_name(code).map_or(code.to_string(), |n| format!("{code} ({n})"))
}

/// The advice for a JSON-RPC error `code` the server answered with (`wrapped`: inside an
/// `isError` result, as the TypeScript SDK and FastMCP send them), by who caused it.
pub(super) fn for_code(code: i64, wrapped: bool) -> Option<String> {
    let how = if wrapped {
        format!(
            "the server wrapped JSON-RPC error {} in an isError result",
            named(code)
        )
    } else {
        format!("JSON-RPC error {}", named(code))
    };
    Some(match party(code)? {
        Party::Request if code == -32601 => format!(
            "{how}: the server has no such method, so the tool never ran: check the tool name \
             against tools/list and the method; resending unchanged fails the same way."
        ),
        Party::Request => format!(
            "{how}: the server refused the arguments, so the tool most likely never ran: fix \
             them against the tool's inputSchema (mcp-triage list); resending unchanged fails \
             the same way."
        ),
        Party::Server => format!(
            "{how}: the server failed, not the request: check the server's logs; resend only if \
             the tool is safe to run twice (--safe-tool, or its annotations), as it may have \
             acted before it failed."
        ),
    })
}

/// The advice for a tool error that reports a failure to invoke the tool (draft SEP-2145,
/// read with `--draft sep-2145`): the server answers these as `isError` results now, where it
/// used to send a JSON-RPC error, and the generic "the tool ran and failed" would then be
/// wrong. An unknown tool keeps the advice a JSON-RPC "Unknown tool" and the precheck give:
/// the name is not listed, so re-list the tools.
pub(super) fn for_kind(kind: ToolErrorKind, tool: &str) -> String {
    match kind {
        ToolErrorKind::UnknownTool => format!(
            "the server says {tool:?} is not listed (an unknown tool, reported as an isError \
             result as draft SEP-2145 does), so the tool never ran: re-list the tools \
             (mcp-triage list) and check the name; resending unchanged fails the same way."
        ),
        ToolErrorKind::ToolUnavailable => format!(
            "the server says {tool:?} cannot be called now (disabled or restricted by policy; \
             draft SEP-2145), so the tool never ran: use another tool or ask the server's \
             operator; resending unchanged fails the same way."
        ),
        ToolErrorKind::InvalidInput => "the server refused the arguments (input validation, \
             an isError result; SEP-1303, draft SEP-2145), so the tool most likely never ran: \
             fix them against the tool's inputSchema (mcp-triage list); resending unchanged \
             fails the same way."
            .to_string(),
        ToolErrorKind::InvalidOutput => "the tool ran, but its output broke its own \
             outputSchema (draft SEP-2145 reports that as a tool error): its structured result \
             cannot be used; report it to the server's authors with the record, or read the \
             text content; resending runs the tool again."
            .to_string(),
    }
}

/// The advice for a tool error whose failure the server declared (draft SEP #3313, read with
/// `--draft tool-failure`): what its class asks of the caller, the server's own guidance, and
/// the correlation id that finds the failure in the server's logs.
pub(super) fn declared(f: &ToolFailure) -> String {
    let what = match (f.class, f.retryable) {
        (FailureClass::Capability, _) => {
            "the call cannot succeed as asked: change the request or the approach; resending \
             unchanged fails the same way"
        }
        (FailureClass::Governance, _) => {
            "a policy refused it (authorization, approval): it needs action outside this \
             call, not a resend"
        }
        (FailureClass::Reliability, Some(true)) => {
            "a transient failure the server says may be retried: resend later if the tool is \
             safe to run twice"
        }
        (FailureClass::Reliability, _) => {
            "a transient failure the server says not to retry: do not resend it"
        }
    };
    let guidance = f
        .agent_guidance
        .as_deref()
        .map(|g| format!(" The server's guidance: {g}"))
        .unwrap_or_default();
    format!(
        "the server declared a {} failure ({}; draft SEP #3313): {what}.{guidance} Quote \
         correlationId {:?} to the server's operator.",
        f.class, f.code, f.correlation_id
    )
}

/// The advice when mcp-triage refused a server request (sampling, elicitation, anything it had
/// no answer for) during the call and the server's answer came after it: the refusal shaped
/// that answer, so the next step is the answer to give. Only for outcomes the server decided
/// after the refusal (a result or a JSON-RPC error); None when nothing was refused.
pub(super) fn refused(r: &CallRecord) -> Option<String> {
    if !matches!(
        r.outcome,
        Outcome::ToolSuccess | Outcome::ToolError | Outcome::JsonrpcError
    ) {
        return None;
    }
    let mut methods: Vec<&str> = Vec::new();
    let refusals = r.warnings.iter().filter(|w| w.code == "INPUT_UNANSWERED");
    for m in refusals.filter_map(|w| refused_request_method(&w.detail)) {
        if !methods.contains(&m) {
            methods.push(m);
        }
    }
    if methods.is_empty() {
        return None;
    }
    let options: Vec<String> = methods
        .iter()
        .map(|m| format!("--answer {m}=JSON"))
        .collect();
    let (asked, options) = (methods.join(" and "), options.join(" "));
    Some(if r.outcome == Outcome::ToolSuccess {
        format!(
            "mcp-triage refused the server's {asked} request (no answer was configured) and \
             the tool finished without it: to give one, call again with {options} (or --input \
             FILE)."
        )
    } else {
        format!(
            "mcp-triage refused the server's {asked} request (no answer was configured); the \
             failure follows from that, not from the tool name or the arguments: call again \
             with {options} (or --input FILE)."
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::call::tests::record;

    #[test]
    fn codes_are_told_by_who_caused_them() {
        assert_eq!(party(-32602), Some(Party::Request));
        assert_eq!(party(-32601), Some(Party::Request));
        assert_eq!(party(-32603), Some(Party::Server));
        assert_eq!(party(-32001), Some(Party::Server));
        assert_eq!(party(-32099), Some(Party::Server));
        // MCP names these; they say nothing of a server failure.
        assert_eq!(party(-32002), None);
        assert_eq!(party(-32042), None);
        assert_eq!(party(0), None);
        assert_eq!(party(-1), None);
    }

    #[test]
    fn an_internal_error_is_the_servers_wrapped_or_not() {
        let c = for_code(-32603, false).unwrap();
        assert!(
            c.starts_with("JSON-RPC error -32603 (Internal error): the server failed, not the"),
            "{c}"
        );
        assert!(!c.contains("fix the arguments"), "{c}");
        let c = for_code(-32603, true).unwrap();
        assert!(
            c.contains("wrapped JSON-RPC error -32603 (Internal error)"),
            "{c}"
        );
        assert!(!c.contains("never ran"), "{c}");
        assert!(for_code(-32602, true).unwrap().contains("never ran"));
        assert_eq!(for_code(-1, true), None);
    }

    /// Draft SEP-2145: an unknown tool reported as a tool error is still "not listed", with
    /// the way to re-list; an output-schema failure says the tool ran.
    #[test]
    fn sep_2145_kinds_are_told_what_they_are() {
        let c = for_kind(ToolErrorKind::UnknownTool, "nope");
        assert!(c.contains("\"nope\" is not listed"), "{c}");
        assert!(c.contains("re-list the tools (mcp-triage list)"), "{c}");
        assert!(c.contains("never ran"), "{c}");
        let c = for_kind(ToolErrorKind::InvalidOutput, "t");
        assert!(c.starts_with("the tool ran, but its output broke"), "{c}");
        assert!(!c.contains("never ran"), "{c}");
        assert!(for_kind(ToolErrorKind::ToolUnavailable, "t").contains("cannot be called now"));
        assert!(for_kind(ToolErrorKind::InvalidInput, "t").contains("inputSchema"));
    }

    #[test]
    fn a_declared_failure_names_its_class_guidance_and_correlation_id() {
        let mut f = ToolFailure {
            class: FailureClass::Reliability,
            code: "retryable_transient_error".into(),
            retryable: Some(false),
            retry_not_before: None,
            retry_after_ms: None,
            correlation_id: "req-7".into(),
            agent_guidance: Some("Try tomorrow.".into()),
        };
        let c = declared(&f);
        assert!(
            c.starts_with("the server declared a reliability failure (retryable_transient_error"),
            "{c}"
        );
        assert!(c.contains("not to retry"), "{c}");
        assert!(c.contains("The server's guidance: Try tomorrow."), "{c}");
        assert!(c.contains("correlationId \"req-7\""), "{c}");
        f.class = FailureClass::Governance;
        f.agent_guidance = None;
        let c = declared(&f);
        assert!(
            c.contains("a policy refused it") && !c.contains("guidance"),
            "{c}"
        );
    }

    #[test]
    fn a_refused_request_is_answered_with_its_answer_option() {
        let mut r = record(Outcome::ToolError, None, "MCP error -1: User rejected");
        r.warn(
            "INPUT_UNANSWERED",
            "the server asked sampling/createMessage and no answer was given (--answer \
             sampling/createMessage=JSON or --input FILE); mcp-triage refused it (error -1, \
             rejected) so the server could finish the call",
        );
        let c = refused(&r).unwrap();
        assert!(
            c.starts_with("mcp-triage refused the server's sampling/createMessage"),
            "{c}"
        );
        assert!(c.contains("--answer sampling/createMessage=JSON"), "{c}");
        // An MRTR round left unanswered is INPUT_REQUIRED, with its own hint.
        let mut r = record(Outcome::InputRequired, None, "x");
        r.warn(
            "INPUT_UNANSWERED",
            "the server asked elicitation/create and …",
        );
        assert_eq!(refused(&r), None);
        assert_eq!(refused(&record(Outcome::ToolError, None, "x")), None);
    }
}
