//! `errors.non_compliant_envelope`: an error status carrying a success body.

use bytes::Bytes;
use serde_json::{json, Value};

use crate::instance_state::HTTP_REQUEST;
use crate::plugin::WireCx;
use crate::plugin::{
    on_invocation, Origin, Outcome, ParamKind, ParamSpec, Params, Scenario, ScenarioInfo, Wire,
};

/// `errors.non_compliant_envelope`.
pub struct NonCompliantEnvelope;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "errors.non_compliant_envelope",
    summary: "The Nth POST gets a non-2xx status with a valid JSON-RPC result body.",
    docs: "Counts `http_request` (every POST). Body: `{\"jsonrpc\":\"2.0\",\"id\":<id>,\"result\":<resultPayload>}`. Fires exactly once.",
    params: &[
        ParamSpec { name: "httpStatus", kind: ParamKind::Integer, default: "400", choices: &[], doc: "HTTP status." },
        ParamSpec {
            name: "resultPayload",
            kind: ParamKind::String,
            default: r#""{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],\"isError\":false}""#,
            choices: &[],
            doc: "JSON text of the result.",
        },
        ParamSpec { name: "onInvocation", kind: ParamKind::Integer, default: "1", choices: &[], doc: "Which POST (once)." },
    ],
    outcome: Outcome::HttpError,
    origin: Origin::Cakewalk,
};

impl Scenario for NonCompliantEnvelope {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn validate(&self, p: &Params) -> Result<(), crate::plugin::ParamsError> {
        serde_json::from_str::<Value>(p.str("resultPayload"))
            .map(|_| ())
            .map_err(|source| crate::plugin::ParamsError::NotJson {
                name: "resultPayload",
                source,
            })
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        if !on_invocation(cx.count(HTTP_REQUEST), cx.p().u64("onInvocation")) {
            return Wire::Continue;
        }
        let result: Value =
            serde_json::from_str(cx.p().str("resultPayload")).unwrap_or(Value::Null);
        let body = json!({ "jsonrpc": "2.0", "id": cx.id_or_null(), "result": result });
        Wire::Body {
            status: cx.p().u64("httpStatus") as u16,
            content_type: "application/json",
            headers: Vec::new(),
            body: Bytes::from(body.to_string()),
        }
    }
}
