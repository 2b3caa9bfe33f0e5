//! `auth.token_lifecycle`: 401 for the first POSTs (or all of them).

use crate::instance_state::HTTP_REQUEST;
use crate::plugin::WireCx;
use crate::plugin::{Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, Wire};

/// `auth.token_lifecycle`.
pub struct TokenLifecycle;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "auth.token_lifecycle",
    summary:
        "POSTs 1..rejectUntilInvocation (or all with rejectForever) get 401 with an empty body.",
    docs: "Counts `http_request` (every POST).",
    params: &[
        ParamSpec {
            name: "rejectUntilInvocation",
            kind: ParamKind::Integer,
            default: "1",
            choices: &[],
            doc: "Last rejected POST number.",
        },
        ParamSpec {
            name: "rejectForever",
            kind: ParamKind::Boolean,
            default: "false",
            choices: &[],
            doc: "Reject every POST.",
        },
    ],
    outcome: Outcome::HttpError,
    origin: Origin::Cakewalk,
};

impl Scenario for TokenLifecycle {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        if cx.p().bool("rejectForever")
            || cx.count(HTTP_REQUEST) <= cx.p().u64("rejectUntilInvocation")
        {
            Wire::Status(401)
        } else {
            Wire::Continue
        }
    }
}
