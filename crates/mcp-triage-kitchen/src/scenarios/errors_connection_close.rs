//! `errors.connection_close`: the connection is dropped with no response.

use crate::instance_state::TOOLS_CALL;
use crate::plugin::WireCx;
use crate::plugin::{
    on_invocation, Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, Wire,
};

/// Counter key for `initialize` POSTs (Cakewalk counts them on its `http_request` key only
/// when the method is `initialize`; the kitchen keeps `http_request` for every POST and uses
/// this key instead).
pub const INITIALIZE: &str = "initialize";

/// `errors.connection_close`.
pub struct ConnectionClose;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "errors.connection_close",
    summary: "The Nth matching request gets its connection dropped (no HTTP response at all).",
    docs: "`closeOn: tool_call` counts `tools_call`; `closeOn: initialize` counts `initialize` POSTs. Fires exactly once.",
    params: &[
        ParamSpec { name: "closeOn", kind: ParamKind::String, default: "\"tool_call\"", choices: &["tool_call", "initialize"], doc: "Which requests count." },
        ParamSpec { name: "onInvocation", kind: ParamKind::Integer, default: "1", choices: &[], doc: "Which one is dropped (once)." },
    ],
    outcome: Outcome::ConnectionError,
    origin: Origin::Cakewalk,
};

impl Scenario for ConnectionClose {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        let on = cx.p().u64("onInvocation");
        let hit = match (cx.p().str("closeOn"), cx.method) {
            ("initialize", Some("initialize")) => on_invocation(cx.instance.bump(INITIALIZE), on),
            ("tool_call", Some("tools/call")) => on_invocation(cx.count(TOOLS_CALL), on),
            _ => false,
        };
        if hit {
            Wire::Close
        } else {
            Wire::Continue
        }
    }
}
