//! Writing a call's [`CallRecord`]: an attempt per exchange, the decision taken after it, and
//! the record's final fields from the last attempt (or from a failed setup step).

use mcp_triage_core::{AttemptRecord, CallRecord, Decision, DecisionAction, JsonRpcInfo, Outcome};
use serde_json::Value;

use crate::setup::SetupFailure;
use crate::wire::Sent;

pub(crate) fn set_decision(
    rec: &mut CallRecord,
    idx: usize,
    action: DecisionAction,
    delay_ms: Option<u64>,
    reason: String,
) {
    rec.attempts[idx].decision = Some(Decision {
        action,
        delay_ms,
        reason,
    });
}

/// Records one exchange as an attempt; `retry_of` is the attempt it repeats or continues.
pub(crate) fn push_attempt(
    rec: &mut CallRecord,
    sent: &Sent,
    id: &Value,
    kind: &str,
    retry_of: Option<usize>,
) {
    if let Some(s) = sent.status {
        rec.http_statuses.push(s);
    }
    rec.attempts.push(AttemptRecord {
        id: id.clone(),
        kind: kind.to_string(),
        retry_of,
        status: sent.status,
        content_type: sent.content_type.clone(),
        stream: sent.stream().cloned(),
        verdict: sent.verdict.clone(),
        duration_ms: sent.duration_ms(),
        decision: None,
    });
}

/// Takes the final fields of the record from an attempt.
pub(crate) fn finish_from(rec: &mut CallRecord, sent: &Sent, id: &Value, keep_result: bool) {
    let v = &sent.verdict;
    rec.outcome = v.outcome;
    rec.layer = v.layer;
    rec.jsonrpc = JsonRpcInfo {
        id: id.clone(),
        error_code: v
            .code
            .or_else(|| sent.error().and_then(|e| e["code"].as_i64())),
    };
    rec.result_type = v.result_type.clone();
    rec.message = v
        .message
        .clone()
        .or_else(|| sent.result().and_then(first_text))
        .or_else(|| v.detail.clone())
        .map(|m| mcp_triage_core::sanitize_line(&m, mcp_triage_core::MAX_MESSAGE_CHARS));
    rec.result = if keep_result {
        sent.result().cloned()
    } else {
        None
    };
}

pub(crate) fn finish_setup_failure(rec: &mut CallRecord, f: SetupFailure) {
    let id = f
        .sent
        .response
        .as_ref()
        .and_then(|r| r.get("id").cloned())
        .unwrap_or(Value::Null);
    push_attempt(rec, &f.sent, &id, f.kind, None);
    finish_from(rec, &f.sent, &id, false);
    if f.sent.verdict.is_success() || matches!(f.sent.verdict.outcome, Outcome::InvalidToolResult) {
        // initialize answered, but unusable (e.g. an unknown version): a protocol failure.
        rec.outcome = Outcome::InvalidEnvelope;
        rec.layer = rec.outcome.layer();
    }
    rec.message = Some(mcp_triage_core::sanitize_line(
        &f.why,
        mcp_triage_core::MAX_MESSAGE_CHARS,
    ));
    let last = rec.attempts.len() - 1;
    set_decision(rec, last, DecisionAction::GiveUp, None, f.why);
}

fn first_text(result: &Value) -> Option<String> {
    result["content"]
        .as_array()?
        .iter()
        .find(|b| b["type"] == "text")
        .and_then(|b| b["text"].as_str())
        .map(str::to_string)
}
