//! `errors.tool_failure`: a tool error carrying the failure class the server declares, in the
//! form the draft SEP #3313 (ToolFailure, PR modelcontextprotocol#3313) proposes, and the
//! "wrong but valid" forms of it: a result whose `structuredContent` matches the tool's
//! `outputSchema` while the server declares that the call failed.
//!
//! Why the scenario's tool is read-only here: a client that resends read-only calls after a
//! failure would resend this one, and a declared `retryable: false` is then the only thing that
//! says not to (judge case `errors.declared_non_retryable`, check `honours_declared_class`).

use std::time::{SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};

use crate::plugin::{
    Origin, Outcome, ParamKind, ParamSpec, Params, ParamsError, Scenario, ScenarioInfo, ToolCx,
    ToolReply,
};

/// `errors.tool_failure`.
pub struct ToolFailure;

/// The `_meta` key of the draft. Written out, not taken from the core: the kitchen is the
/// classifier's independent counterpart.
pub const TOOL_FAILURE_KEY: &str = "io.modelcontextprotocol/toolFailure";

static INFO: ScenarioInfo = ScenarioInfo {
    id: "errors.tool_failure",
    summary: "The Nth run_configured_test_scenario fails with a declared ToolFailure class (draft SEP #3313).",
    docs: "Counts `run_configured_test_scenario`, which this scenario lists as read-only and idempotent \
           (`readOnlyHint`, `idempotentHint`) with an `outputSchema` `{scenarioId: string, invocation: integer}`; \
           every success returns conforming `structuredContent`. Invocation `onInvocation` (0: every one) fails: \
           its result carries `_meta[\"io.modelcontextprotocol/toolFailure\"]` = `{class, code, retryable, \
           retryNotBefore?, correlationId, agentGuidance?}` (draft SEP #3313), `retryNotBefore` being the Unix \
           epoch milliseconds `retryNotBeforeMs` after the failure (-1 leaves it out), `correlationId` \
           `kitchen-<scenario>-<invocation>`, and a text block naming class and code. `form` `error`: `isError: \
           true`, no structuredContent; `structured` (wrong but valid): `isError: true` with structuredContent \
           that matches the outputSchema, so a client that reads the data and not the flag takes a failure for \
           an answer; `unflagged` (wrong but valid): no `isError`, conforming structuredContent and the declared \
           failure, which the draft allows only on error results (a TOOL_SUCCESS, with a warning from a \
           classifier that reads the draft). A client that honours the draft never resends a `capability` or \
           `governance` failure nor one declared `retryable: false`, and resends a `retryable` `reliability` \
           failure no sooner than `retryNotBefore`.",
    params: &[
        ParamSpec { name: "class", kind: ParamKind::String, default: "\"reliability\"", choices: &["capability", "reliability", "governance"], doc: "The declared class." },
        ParamSpec { name: "code", kind: ParamKind::String, default: "\"retryable_transient_error\"", choices: &[], doc: "The declared code (open vocabulary; the draft's baseline: capability_unsupported, resource_not_found, invalid_input, retryable_transient_error, auth_required, permission_denied, policy_blocked, user_action_required)." },
        ParamSpec { name: "retryable", kind: ParamKind::Boolean, default: "false", choices: &[], doc: "The declared retryable." },
        ParamSpec { name: "retryNotBeforeMs", kind: ParamKind::Integer, default: "-1", choices: &[], doc: "retryNotBefore as milliseconds after the failure (sent as Unix epoch ms); -1 leaves it out." },
        ParamSpec { name: "agentGuidance", kind: ParamKind::String, default: "\"\"", choices: &[], doc: "The declared agentGuidance; empty leaves it out." },
        ParamSpec { name: "onInvocation", kind: ParamKind::Integer, default: "1", choices: &[], doc: "Which invocation fails (1-based, once); 0 = every one." },
        ParamSpec { name: "form", kind: ParamKind::String, default: "\"error\"", choices: &["error", "structured", "unflagged"], doc: "isError without data; isError with conforming structuredContent; conforming data without isError (wrong but valid)." },
    ],
    outcome: Outcome::ToolError,
    origin: Origin::Kitchen,
};

impl Scenario for ToolFailure {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn validate(&self, p: &Params) -> Result<(), ParamsError> {
        if p.i64("retryNotBeforeMs") < -1 {
            return Err(ParamsError::Rule {
                name: "retryNotBeforeMs",
                rule: "be -1 (left out) or a number >= 0",
            });
        }
        if p.i64("onInvocation") < 0 {
            return Err(ParamsError::Negative {
                name: "onInvocation",
            });
        }
        Ok(())
    }
    fn run_tool_definition(&self) -> Option<Value> {
        let mut d = crate::catalogue::run_tool_definition();
        d["annotations"] =
            json!({ "readOnlyHint": true, "idempotentHint": true, "destructiveHint": false });
        d["outputSchema"] = json!({
            "type": "object",
            "properties": { "scenarioId": { "type": "string" }, "invocation": { "type": "integer" } },
            "required": ["scenarioId", "invocation"]
        });
        Some(d)
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        Box::pin(async move {
            let data = json!({ "scenarioId": INFO.id, "invocation": cx.invocation });
            let on = cx.p().u64("onInvocation");
            if on != 0 && cx.invocation != on {
                return ToolReply::Result(json!({
                    "content": [{ "type": "text", "text": data.to_string() }],
                    "structuredContent": data,
                }));
            }
            let p = cx.p();
            let failure = declared(p, cx.invocation);
            let text = format!(
                "{} failure {}: the kitchen declares it (draft SEP #3313)",
                p.str("class"),
                p.str("code")
            );
            let form = p.str("form");
            cx.trace.note(format!("declared ToolFailure ({form})"));
            ToolReply::Result(failed_result(form, &text, data, failure))
        })
    }
}

/// The ToolFailure object of invocation `n`.
fn declared(p: &Params, n: u64) -> Value {
    let mut f = Map::new();
    f.insert("class".into(), json!(p.str("class")));
    f.insert("code".into(), json!(p.str("code")));
    f.insert("retryable".into(), json!(p.bool("retryable")));
    if let Ok(after) = u64::try_from(p.i64("retryNotBeforeMs")) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        f.insert("retryNotBefore".into(), json!(now.saturating_add(after)));
    }
    f.insert(
        "correlationId".into(),
        json!(format!("kitchen-{}-{n}", INFO.id)),
    );
    if !p.str("agentGuidance").is_empty() {
        f.insert("agentGuidance".into(), json!(p.str("agentGuidance")));
    }
    Value::Object(f)
}

/// The failed call's result in `form` (see the scenario's docs).
fn failed_result(form: &str, text: &str, data: Value, failure: Value) -> Value {
    let mut r = json!({
        "content": [{ "type": "text", "text": text }],
        "_meta": { TOOL_FAILURE_KEY: failure },
    });
    match form {
        "structured" => {
            r["isError"] = json!(true);
            r["structuredContent"] = data;
        }
        "unflagged" => r["structuredContent"] = data,
        _ => r["isError"] = json!(true),
    }
    r
}
