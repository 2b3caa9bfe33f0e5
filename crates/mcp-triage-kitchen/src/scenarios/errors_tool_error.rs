//! `errors.tool_error`: a valid result with `isError: true`.

use futures_util::future::BoxFuture;
use serde_json::{json, Map};

use crate::plugin::ToolCx;
use crate::plugin::{
    on_invocation, Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, ToolReply,
};

/// `errors.tool_error`.
pub struct ToolError;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "errors.tool_error",
    summary: "The Nth run_configured_test_scenario returns isError:true.",
    docs: "Counts `run_configured_test_scenario`. Invocation `onInvocation` (exactly once) returns a valid CallToolResult with `isError: true` \
           and text `{scenarioId, invocation, errorMessage[, message]}`; other invocations succeed.",
    params: &[
        ParamSpec { name: "errorMessage", kind: ParamKind::String, default: "\"Tool-side failure\"", choices: &[], doc: "Text of the failure." },
        ParamSpec { name: "onInvocation", kind: ParamKind::Integer, default: "1", choices: &[], doc: "Which invocation fails (1-based, once)." },
    ],
    outcome: Outcome::ToolError,
    origin: Origin::Cakewalk,
};

impl Scenario for ToolError {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        Box::pin(async move {
            if on_invocation(cx.invocation, cx.p().u64("onInvocation")) {
                let mut extra = Map::new();
                extra.insert("errorMessage".into(), json!(cx.p().str("errorMessage")));
                cx.trace.note("isError result");
                return ToolReply::json_text(&cx.scenario_result(Some(extra)), true);
            }
            ToolReply::json_text(&cx.scenario_result(None), false)
        })
    }
}
