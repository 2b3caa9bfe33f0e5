//! `errors.jsonrpc_error`: a JSON-RPC error for the configured `tools/call`.

use crate::instance_state::TOOLS_CALL;
use crate::plugin::WireCx;
use crate::plugin::{
    on_invocation, Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, Wire,
};
use crate::protocol;

/// `errors.jsonrpc_error`.
pub struct JsonRpcError;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "errors.jsonrpc_error",
    summary: "The Nth tools/call gets HTTP 200 with a JSON-RPC error.",
    docs: "Counts `tools_call` (any tool). On invocation `onInvocation` (exactly once) the body is \
           `{\"jsonrpc\":\"2.0\",\"id\":<req id>,\"error\":{\"code\":C,\"message\":M}}` with HTTP 200; the tool never runs. Other calls pass.",
    params: &[
        ParamSpec { name: "code", kind: ParamKind::Integer, default: "-32602", choices: &[], doc: "JSON-RPC error code." },
        ParamSpec { name: "message", kind: ParamKind::String, default: "\"Invalid params\"", choices: &[], doc: "Error message." },
        ParamSpec { name: "onInvocation", kind: ParamKind::Integer, default: "1", choices: &[], doc: "Which tools/call fails (1-based, once)." },
    ],
    outcome: Outcome::JsonrpcError,
    origin: Origin::Cakewalk,
};

impl Scenario for JsonRpcError {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        if cx.method == Some("tools/call")
            && on_invocation(cx.count(TOOLS_CALL), cx.p().u64("onInvocation"))
        {
            let body =
                protocol::error_response(cx.id, cx.p().i64("code"), cx.p().str("message"), None);
            return Wire::json(200, &body);
        }
        Wire::Continue
    }
}
