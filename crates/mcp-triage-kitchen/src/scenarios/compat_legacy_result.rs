//! `compat.legacy_result`: modern results without `resultType`.

use serde_json::Value;

use crate::plugin::{Origin, Outcome, Scenario, ScenarioInfo};

/// `compat.legacy_result`.
pub struct LegacyResult;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "compat.legacy_result",
    summary: "Results to 2026-07-28 requests omit `resultType` (as an older server would).",
    docs: "Every result loses `resultType`. Clients MUST treat an absent `resultType` as `complete`, so a compliant client sees success.",
    params: &[],
    outcome: Outcome::ToolSuccess,
    origin: Origin::Kitchen,
};

impl Scenario for LegacyResult {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn shape_result(&self, _method: &str, result: &mut Value) {
        if let Some(o) = result.as_object_mut() {
            o.remove("resultType");
        }
    }
}
