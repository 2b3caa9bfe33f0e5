//! `elicitation.approval`, `elicitation.decline`, `elicitation.url_mode`: the tool needs the
//! user's input before it can finish.
//!
//! Modern clients get MRTR: an `input_required` result with `inputRequests.elicitation`
//! and a signed `requestState`; the retry carries `inputResponses.elicitation`. Legacy
//! clients that declared `elicitation` get a server→client `elicitation/create` on the POST's
//! SSE stream, answered by their POST. A client that cannot elicit gets `isError: true` with
//! `elicitationOutcome: "unsupported"` (Cakewalk's `!IsMrtrSupported` branch).

use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};

use crate::plugin::{Asked, ToolCx};
use crate::plugin::{Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, ToolReply};
use crate::protocol::Era;

const STATE: &str = "awaiting-elicitation";

/// Ask for `params` (an `ElicitRequest` params object) and turn the answer into Cakewalk's
/// result: accept → success with `elicitationOutcome: "accepted"` (plus `extra(content)`),
/// decline/cancel → `isError` with the outcome.
async fn elicit(cx: ToolCx, params: Value, extra: fn(&Value) -> Map<String, Value>) -> ToolReply {
    let state_ok = cx.request_state.as_ref().is_some_and(|s| s == STATE);
    if cx.era == Era::Modern && cx.input_responses.is_some() && !state_ok {
        cx.trace
            .note("retry without the issued requestState: asking again");
    }
    if !cx.has_capability("elicitation") {
        let mut m = Map::new();
        m.insert("elicitationOutcome".into(), json!("unsupported"));
        return ToolReply::json_text(&cx.scenario_result(Some(m)), true);
    }
    let cx_for_answer = cx.clone();
    let answer = if cx.era == Era::Modern && !state_ok {
        // First round (or a retry that lost its state): always ask.
        ToolCx {
            input_responses: None,
            ..cx
        }
        .ask(
            "elicitation",
            "elicitation/create",
            params,
            "elicitation",
            json!(STATE),
        )
        .await
    } else {
        cx.ask(
            "elicitation",
            "elicitation/create",
            params,
            "elicitation",
            json!(STATE),
        )
        .await
    };
    let cx = cx_for_answer;
    match answer {
        Asked::Pending(reply) => {
            cx.trace.note("elicitation requested");
            reply
        }
        Asked::Failed(reason) => {
            let mut m = Map::new();
            m.insert("elicitationOutcome".into(), json!("unsupported"));
            m.insert("reason".into(), json!(reason));
            ToolReply::json_text(&cx.scenario_result(Some(m)), true)
        }
        Asked::Answer(r) => {
            let action = r["action"].as_str().unwrap_or("cancel");
            let mut m = Map::new();
            if action == "accept" {
                m.insert("elicitationOutcome".into(), json!("accepted"));
                m.extend(extra(r.get("content").unwrap_or(&Value::Null)));
                ToolReply::json_text(&cx.scenario_result(Some(m)), false)
            } else {
                m.insert(
                    "elicitationOutcome".into(),
                    json!(if action == "decline" {
                        "declined"
                    } else {
                        "cancelled"
                    }),
                );
                ToolReply::json_text(&cx.scenario_result(Some(m)), true)
            }
        }
    }
}

fn no_extra(_: &Value) -> Map<String, Value> {
    Map::new()
}

/// `elicitation.approval`.
pub struct Approval;

static APPROVAL: ScenarioInfo = ScenarioInfo {
    id: "elicitation.approval",
    summary: "The tool asks for approval (form elicitation with a reason) before it succeeds.",
    docs: "First call: MRTR `input_required` (modern) or `elicitation/create` on the SSE stream (legacy), form schema \
           `{reason: string(title, maxLength)}`, required when `requireReason`. Accept → success with `elicitationOutcome: \"accepted\"` and \
           `approvalReason`; decline/cancel → isError with the outcome; no elicitation capability → isError `unsupported`.",
    params: &[
        ParamSpec { name: "promptMessage", kind: ParamKind::String, default: "\"Approve running the configured test scenario?\"", choices: &[], doc: "Message shown to the user." },
        ParamSpec { name: "reasonFieldTitle", kind: ParamKind::String, default: "\"Reason\"", choices: &[], doc: "Title of the reason field." },
        ParamSpec { name: "reasonMaxLength", kind: ParamKind::Integer, default: "200", choices: &[], doc: "maxLength of the reason." },
        ParamSpec { name: "requireReason", kind: ParamKind::Boolean, default: "true", choices: &[], doc: "Whether the reason is required." },
        ParamSpec { name: "elicitationTimeoutMs", kind: ParamKind::Integer, default: "300000", choices: &[], doc: "Declared, informational (as in Cakewalk)." },
    ],
    outcome: Outcome::InputRequired,
    origin: Origin::Cakewalk,
};

fn approval_extra(content: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "approvalReason".into(),
        content.get("reason").cloned().unwrap_or(Value::Null),
    );
    m
}

impl Scenario for Approval {
    fn info(&self) -> &'static ScenarioInfo {
        &APPROVAL
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        let p = cx.p();
        let mut schema = json!({ "type": "object", "properties": { "reason": {
            "type": "string", "title": p.str("reasonFieldTitle"), "maxLength": p.u64("reasonMaxLength") } } });
        if p.bool("requireReason") {
            schema["required"] = json!(["reason"]);
        }
        let params =
            json!({ "mode": "form", "message": p.str("promptMessage"), "requestedSchema": schema });
        Box::pin(elicit(cx, params, approval_extra))
    }
}

/// `elicitation.decline`.
pub struct Decline;

static DECLINE: ScenarioInfo = ScenarioInfo {
    id: "elicitation.decline",
    summary: "A form elicitation meant to be declined or cancelled.",
    docs: "Form schema `{confirm: string(maxLength 32)}`. The outcome is built as in `elicitation.approval`; `expectedOutcome` only documents \
           what the test expects the client to do.",
    params: &[
        ParamSpec { name: "expectedOutcome", kind: ParamKind::String, default: "\"decline\"", choices: &["decline", "cancel", "timeout"], doc: "Informational." },
        ParamSpec { name: "promptMessage", kind: ParamKind::String, default: "\"Please decline this request.\"", choices: &[], doc: "Message shown to the user." },
        ParamSpec { name: "elicitationTimeoutMs", kind: ParamKind::Integer, default: "5000", choices: &[], doc: "Declared, informational (as in Cakewalk)." },
    ],
    outcome: Outcome::InputRequired,
    origin: Origin::Cakewalk,
};

impl Scenario for Decline {
    fn info(&self) -> &'static ScenarioInfo {
        &DECLINE
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        let schema = json!({ "type": "object", "properties": { "confirm": { "type": "string", "maxLength": 32 } } });
        let params = json!({ "mode": "form", "message": cx.p().str("promptMessage"), "requestedSchema": schema });
        Box::pin(elicit(cx, params, no_extra))
    }
}

/// `elicitation.url_mode`.
pub struct UrlMode;

static URL_MODE: ScenarioInfo = ScenarioInfo {
    id: "elicitation.url_mode",
    summary: "A URL-mode elicitation (the user completes a step in a browser).",
    docs: "Elicitation `{mode: \"url\", message, url}` (legacy 2025-11-25 adds an `elicitationId`). Outcome as in `elicitation.approval`.",
    params: &[
        ParamSpec { name: "url", kind: ParamKind::String, default: "\"https://example.com/approve\"", choices: &[], doc: "URL to open." },
        ParamSpec { name: "promptMessage", kind: ParamKind::String, default: "\"Open the link to approve.\"", choices: &[], doc: "Message shown to the user." },
        ParamSpec { name: "elicitationTimeoutMs", kind: ParamKind::Integer, default: "300000", choices: &[], doc: "Declared, informational (as in Cakewalk)." },
    ],
    outcome: Outcome::InputRequired,
    origin: Origin::Cakewalk,
};

impl Scenario for UrlMode {
    fn info(&self) -> &'static ScenarioInfo {
        &URL_MODE
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        let mut params = json!({ "mode": "url", "message": cx.p().str("promptMessage"), "url": cx.p().str("url") });
        if cx.era == Era::Legacy {
            params["elicitationId"] = json!(format!("kitchen-elicitation-{}", cx.invocation));
        }
        Box::pin(elicit(cx, params, no_extra))
    }
}
