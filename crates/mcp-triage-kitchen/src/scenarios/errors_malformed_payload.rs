//! `errors.malformed_payload`: HTTP 200 with a body that is not a valid response.

use bytes::Bytes;
use serde_json::json;

use super::errors_connection_close::INITIALIZE;
use crate::instance_state::{HTTP_REQUEST, TOOLS_CALL};
use crate::plugin::WireCx;
use crate::plugin::{
    on_invocation, Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, Wire,
};

/// `errors.malformed_payload`.
pub struct MalformedPayload;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "errors.malformed_payload",
    summary: "The Nth matching request gets HTTP 200 application/json with a broken body.",
    docs: "`kind`: `invalid_json` → `{ not valid json`; `wrong_id` → an error response with id 99999; `missing_jsonrpc` → \
           `{\"id\":<id>,\"result\":{}}`; `duplicate_response` → two newline-separated results. `target` chooses the counter: \
           `tool_call` (`tools_call`), `initialize` (initialize POSTs), `http_request` (every POST). Fires exactly once.",
    params: &[
        ParamSpec { name: "kind", kind: ParamKind::String, default: "\"invalid_json\"", choices: &["invalid_json", "wrong_id", "missing_jsonrpc", "duplicate_response"], doc: "Which breakage." },
        ParamSpec { name: "target", kind: ParamKind::String, default: "\"tool_call\"", choices: &["tool_call", "initialize", "http_request"], doc: "Which requests count." },
        ParamSpec { name: "onInvocation", kind: ParamKind::Integer, default: "1", choices: &[], doc: "Which one is broken (once)." },
    ],
    outcome: Outcome::MalformedJson,
    origin: Origin::Cakewalk,
};

/// The body for `kind` answering request `id`.
pub fn body(kind: &str, id: &serde_json::Value) -> Bytes {
    let ok = json!({ "jsonrpc": "2.0", "id": id, "result": { "content": [{ "type": "text", "text": "ok" }] } });
    match kind {
        "wrong_id" => Bytes::from(json!({ "jsonrpc": "2.0", "id": 99999, "error": { "code": -32603, "message": "Internal error" } }).to_string()),
        "missing_jsonrpc" => Bytes::from(json!({ "id": id, "result": {} }).to_string()),
        "duplicate_response" => Bytes::from(format!("{ok}\n{ok}")),
        _ => Bytes::from_static(b"{ not valid json"),
    }
}

impl Scenario for MalformedPayload {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        let on = cx.p().u64("onInvocation");
        let hit = match (cx.p().str("target"), cx.method) {
            ("tool_call", Some("tools/call")) => on_invocation(cx.count(TOOLS_CALL), on),
            ("initialize", Some("initialize")) => on_invocation(cx.instance.bump(INITIALIZE), on),
            ("http_request", _) => on_invocation(cx.count(HTTP_REQUEST), on),
            _ => false,
        };
        if !hit {
            return Wire::Continue;
        }
        Wire::Body {
            status: 200,
            content_type: "application/json",
            headers: Vec::new(),
            body: body(cx.p().str("kind"), &cx.id_or_null()),
        }
    }
}
