//! `baseline`: a correct server. The reference every other scenario deviates from.

use futures_util::future::BoxFuture;
use serde_json::{json, Map};

use crate::plugin::ToolCx;
use crate::plugin::{Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, ToolReply};

/// `baseline`.
pub struct Baseline;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "baseline",
    summary: "A well-behaved server: the tool succeeds, optionally after a delay.",
    docs: "`run_configured_test_scenario` returns a success result `{scenarioId, invocation, [delayMs], [message]}` after `slowReportDelayMs`. \
           With a progress token the call reports progress 0/1 and 1/1 (so in `auto` mode it is answered as SSE). Counts `run_configured_test_scenario`.",
    params: &[ParamSpec {
        name: "slowReportDelayMs",
        kind: ParamKind::Integer,
        default: "0",
        choices: &[],
        doc: "Delay before the result, in ms. A client that goes away cancels it.",
    }],
    outcome: Outcome::ToolSuccess,
    origin: Origin::Cakewalk,
};

impl Scenario for Baseline {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn validate(&self, p: &crate::plugin::Params) -> Result<(), crate::plugin::ParamsError> {
        if p.i64("slowReportDelayMs") < 0 {
            return Err(crate::plugin::ParamsError::Negative {
                name: "slowReportDelayMs",
            });
        }
        Ok(())
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        Box::pin(async move {
            cx.progress(0.0, Some(1.0), Some("started"));
            let delay = cx.p().u64("slowReportDelayMs");
            let mut extra = Map::new();
            if delay > 0 {
                tokio::select! {
                    _ = cx.sleep(std::time::Duration::from_millis(delay)) => {}
                    _ = cx.out.closed() => return ToolReply::EndStream,
                }
                extra.insert("delayMs".into(), json!(delay));
            }
            cx.progress(1.0, Some(1.0), Some("done"));
            ToolReply::json_text(&cx.scenario_result(Some(extra)), false)
        })
    }
}
