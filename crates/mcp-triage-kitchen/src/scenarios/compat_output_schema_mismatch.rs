//! `compat.output_schema_mismatch`: `structuredContent` that violates the declared
//! `outputSchema`.

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use crate::plugin::ToolCx;
use crate::plugin::{Origin, Outcome, Scenario, ScenarioInfo, ToolReply};

/// `compat.output_schema_mismatch`.
pub struct OutputSchemaMismatch;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "compat.output_schema_mismatch",
    summary: "run_configured_test_scenario declares outputSchema {invocation: integer} and returns invocation as a string.",
    docs: "The result is otherwise valid (text block mirrors the structured content). Servers MUST conform; clients SHOULD validate.",
    params: &[],
    outcome: Outcome::InvalidToolResult,
    origin: Origin::Kitchen,
};

impl Scenario for OutputSchemaMismatch {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn run_tool_definition(&self) -> Option<Value> {
        let mut d = crate::catalogue::run_tool_definition();
        d["outputSchema"] = json!({
            "type": "object",
            "properties": { "scenarioId": { "type": "string" }, "invocation": { "type": "integer" } },
            "required": ["scenarioId", "invocation"]
        });
        Some(d)
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        Box::pin(async move {
            let sc = json!({ "scenarioId": INFO.id, "invocation": cx.invocation.to_string() });
            cx.trace.note("structuredContent violates outputSchema");
            ToolReply::Result(
                json!({ "content": [{ "type": "text", "text": sc.to_string() }], "structuredContent": sc }),
            )
        })
    }
}
