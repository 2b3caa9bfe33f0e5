//! `errors.accepted_for_request`: 202 (meant for notifications) answering a request.

use crate::instance_state::TOOLS_CALL;
use crate::plugin::WireCx;
use crate::plugin::{
    on_invocation, Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, Wire,
};

/// `errors.accepted_for_request`.
pub struct AcceptedForRequest;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "errors.accepted_for_request",
    summary: "The Nth tools/call gets 202 Accepted with no body: the response never comes.",
    docs: "Counts `tools_call`; fires exactly once. The tool does not run.",
    params: &[ParamSpec {
        name: "onInvocation",
        kind: ParamKind::Integer,
        default: "1",
        choices: &[],
        doc: "Which tools/call (once).",
    }],
    outcome: Outcome::MissingResponse,
    origin: Origin::Kitchen,
};

impl Scenario for AcceptedForRequest {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        if cx.method == Some("tools/call")
            && on_invocation(cx.count(TOOLS_CALL), cx.p().u64("onInvocation"))
        {
            return Wire::Status(202);
        }
        Wire::Continue
    }
}
