//! The verdict of a `tasks/get` result: the state of the task a `tools/call` created
//! (`io.modelcontextprotocol/tasks`, SEP-2663, for 2026-07-28; the 2025-11-25 experimental
//! tasks have the same states).
//!
//! A task that is still running is not an outcome of the call: `working` is `TASK_CREATED`
//! (poll again), `input_required` is `INPUT_REQUIRED` (answer with `tasks/update`). A terminal
//! task is judged by what it carries, so the call gets the verdict the same answer would have
//! got to the `tools/call` itself: `completed` by its `result` (rules 7 and 8: `TOOL_SUCCESS`,
//! `TOOL_ERROR` for `isError`, `INVALID_TOOL_RESULT`), `failed` by its `error`
//! (`JSONRPC_ERROR`: the extension keeps `failed` for JSON-RPC errors). `cancelled` has no
//! result: `JSONRPC_ERROR` with code -32800, as a JSON-RPC request cancelled before its answer
//! (`tests/golden/DECISIONS.md` 33). An expired task is a `-32602` error to `tasks/get`, judged by the
//! envelope rules with a hint.

use crate::json::{Node, Object};
use crate::protocol::{CallContext, ProtocolVersion as V};
use crate::verdict::{sanitize_line, Outcome, Verdict, MAX_MESSAGE_CHARS};

use super::envelope::error_object_verdict;
use super::result::{asked_inputs, classify_result, finish, invalid, task_id_of};
use super::Findings;

/// Rules 7 and 8 for the result of a `tasks/get`.
pub(crate) fn classify_task_state(
    result: &Node,
    ctx: &CallContext,
    base: &str,
    mut findings: Findings,
) -> Verdict {
    let Some(r) = result.as_object() else {
        return invalid(
            format!("{base} is {}; a task must be an object", result.kind()),
            findings,
        );
    };
    check_result_type(r, ctx, base, &mut findings);
    let task_id = match task_id_of(r, base) {
        Ok(id) => id,
        Err(detail) => return invalid(detail.to_string(), findings),
    };
    let status = match r.get("status") {
        Some(Node::String(s)) => s.to_string(),
        Some(n) => {
            return invalid(
                format!("{base}/status is {}; it must be a string", n.kind()),
                findings,
            )
        }
        None => return invalid(format!("{base}/status is missing"), findings),
    };
    let id = sanitize_line(&task_id, 128);
    let mut v = match status.as_str() {
        "working" => running(r, &id, findings),
        "input_required" => needs_input(r, &id, base, findings),
        "completed" => completed(r, ctx, &id, base, findings),
        "failed" => failed(r, ctx, &id, base, findings),
        "cancelled" => cancelled(r, &id, findings),
        other => invalid(
            format!(
                "{base}/status is {:?}, not a task status (working, input_required, completed, \
                 failed, cancelled)",
                sanitize_line(other, 64)
            ),
            findings,
        ),
    };
    v.task_id = Some(task_id);
    v
}

/// 2026-07-28: "The `resultType` field MUST be set to `complete`" on a `tasks/get` result.
fn check_result_type(r: &Object, ctx: &CallContext, base: &str, findings: &mut Findings) {
    match r.get("resultType") {
        Some(Node::String(s)) if s.as_ref() == "complete" => {}
        Some(n) => findings.warn(
            "TASK_RESULT_TYPE",
            format!(
                "{base}/resultType is {}; a tasks/get result MUST say \"complete\"",
                match n {
                    Node::String(s) => format!("{:?}", sanitize_line(s, 64)),
                    other => other.kind().to_string(),
                }
            ),
        ),
        None if ctx.protocol_version == V::V2026_07_28 => findings.warn(
            "RESULT_TYPE_ABSENT",
            format!(
                "{base}/resultType is absent; a 2026-07-28 tasks/get result MUST say \"complete\""
            ),
        ),
        None => {}
    }
}

fn status_message(r: &Object) -> String {
    match r.get("statusMessage") {
        Some(Node::String(s)) if !s.is_empty() => format!(" ({})", sanitize_line(s, 200)),
        _ => String::new(),
    }
}

fn running(r: &Object, id: &str, findings: Findings) -> Verdict {
    let mut detail = format!("task {id:?} is still working{}", status_message(r));
    let poll = r
        .get("pollIntervalMs")
        .or_else(|| r.get("pollInterval"))
        .and_then(Node::as_integer);
    if let Some((ms, _)) = poll {
        detail.push_str(&format!("; poll tasks/get again in {ms} ms"));
    } else {
        detail.push_str("; poll tasks/get again");
    }
    finish(
        Verdict::new(Outcome::TaskCreated).with_detail(detail),
        findings,
    )
}

fn needs_input(r: &Object, id: &str, base: &str, findings: Findings) -> Verdict {
    let detail = match r.get("inputRequests") {
        // 2025-11-25: the requests come on the stream of tasks/result, not inline
        None => format!(
            "task {id:?} needs input{}; its requests come with tasks/result",
            status_message(r)
        ),
        Some(reqs) => match asked_inputs(reqs, base) {
            Err(detail) => return invalid(detail.to_string(), findings),
            Ok(asked) if asked.is_empty() => {
                return invalid(
                    format!(
                        "{base}/inputRequests is empty; an input_required task MUST list the \
                         requests it waits for"
                    ),
                    findings,
                )
            }
            Ok(asked) => format!(
                "task {id:?} needs input{}: {}; answer them with tasks/update",
                status_message(r),
                asked.join(", ")
            ),
        },
    };
    finish(
        Verdict::new(Outcome::InputRequired).with_detail(detail),
        findings,
    )
}

/// A terminal task without its payload inline: 2025-11-25 fetches it with `tasks/result`;
/// 2026-07-28 MUST inline it.
fn payload_elsewhere(
    ctx: &CallContext,
    id: &str,
    status: &str,
    field: &str,
    base: &str,
    findings: Findings,
) -> Verdict {
    if ctx.protocol_version == V::V2026_07_28 {
        return invalid(
            format!("{base}/{field} is missing; a {status} task MUST carry its {field} (tasks extension)"),
            findings,
        );
    }
    let v = Verdict::new(Outcome::TaskCreated).with_detail(format!(
        "task {id:?} is {status}; its outcome comes from tasks/result"
    ));
    finish(v, findings)
}

fn completed(r: &Object, ctx: &CallContext, id: &str, base: &str, findings: Findings) -> Verdict {
    let Some(result) = r.get("result") else {
        return payload_elsewhere(ctx, id, "completed", "result", base, findings);
    };
    let mut v = classify_result(result, ctx, &format!("{base}/result"), findings);
    prefix(&mut v, &format!("task {id:?} completed: "));
    v
}

fn failed(r: &Object, ctx: &CallContext, id: &str, base: &str, findings: Findings) -> Verdict {
    let Some(error) = r.get("error") else {
        return payload_elsewhere(ctx, id, "failed", "error", base, findings);
    };
    let mut v = error_object_verdict(error, &format!("{base}/error"), findings);
    prefix(&mut v, &format!("task {id:?} failed: "));
    v
}

/// JSON-RPC error code of a cancelled request. Neither JSON-RPC nor MCP defines one; -32800 is
/// the one LSP gives a cancelled request, and the verdict of a `JSONRPC_ERROR` carries a code.
pub(crate) const REQUEST_CANCELLED: i64 = -32800;

fn cancelled(r: &Object, id: &str, findings: Findings) -> Verdict {
    let mut v = Verdict::new(Outcome::JsonrpcError).with_detail(format!(
        "task {id:?} was cancelled before it completed{}: the call has no result \
         (code {REQUEST_CANCELLED}, RequestCancelled)",
        status_message(r)
    ));
    v.code = Some(REQUEST_CANCELLED);
    v.message = Some(match r.get("statusMessage") {
        Some(Node::String(s)) if !s.is_empty() => sanitize_line(s, MAX_MESSAGE_CHARS),
        _ => "task cancelled".to_string(),
    });
    finish(v, findings)
}

fn prefix(v: &mut Verdict, p: &str) {
    let d = v.detail.take().unwrap_or_default();
    v.detail = Some(format!("{p}{d}"));
}
