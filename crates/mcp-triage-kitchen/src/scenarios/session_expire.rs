//! `session.expire`: the legacy session ends after N requests.

use std::sync::atomic::Ordering;

use super::{Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, Wire};
use crate::context::WireCx;
use crate::protocol;

/// `session.expire`.
pub struct SessionExpire;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "session.expire",
    summary: "After afterRequests POSTs in a legacy session, the session is terminated: 404 from then on.",
    docs: "Counts POSTs carrying the session's `Mcp-Session-Id` (initialize itself is not in the session). Request afterRequests+1 and \
           every later one get 404 with JSON-RPC -32001; a new initialize starts a fresh session. Modern requests have no session and pass.",
    params: &[ParamSpec { name: "afterRequests", kind: ParamKind::Integer, default: "3", choices: &[], doc: "Requests the session survives." }],
    outcome: Outcome::HttpError,
    origin: Origin::Kitchen,
};

impl Scenario for SessionExpire {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        let Some(s) = cx.session else {
            return Wire::Continue;
        };
        if s.requests.load(Ordering::SeqCst) > cx.p().u64("afterRequests") {
            s.terminated.store(true, Ordering::SeqCst);
            return Wire::json(
                404,
                &protocol::error_response(
                    cx.id,
                    protocol::SESSION_NOT_FOUND,
                    "Session expired",
                    None,
                ),
            );
        }
        Wire::Continue
    }
}
