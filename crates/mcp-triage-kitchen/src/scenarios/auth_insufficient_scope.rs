//! `auth.insufficient_scope`: 403 with an `insufficient_scope` challenge on tools/call.

use bytes::Bytes;
use serde_json::json;

use super::auth_oauth_challenge::metadata_url;
use crate::instance_state::TOOLS_CALL;
use crate::plugin::WireCx;
use crate::plugin::{Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, Wire};

/// `auth.insufficient_scope`.
pub struct InsufficientScope;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "auth.insufficient_scope",
    summary: "tools/call gets 403 with `WWW-Authenticate: Bearer error=\"insufficient_scope\", scope=…, resource_metadata=…`.",
    docs: "Counts `tools_call`; `onInvocation` 0 (default) = every call, N = only the Nth (once). Other methods pass.",
    params: &[
        ParamSpec { name: "scope", kind: ParamKind::String, default: "\"mcp:admin\"", choices: &[], doc: "Scope the call needs." },
        ParamSpec { name: "onInvocation", kind: ParamKind::Integer, default: "0", choices: &[], doc: "Which tools/call; 0 = every call." },
    ],
    outcome: Outcome::HttpError,
    origin: Origin::Kitchen,
};

impl Scenario for InsufficientScope {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        if cx.method != Some("tools/call") {
            return Wire::Continue;
        }
        let on = cx.p().u64("onInvocation");
        if on != 0 && cx.count(TOOLS_CALL) != on {
            return Wire::Continue;
        }
        let scope = cx.p().str("scope");
        let challenge = format!(
            "Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{}\", error_description=\"The tool needs scope {scope}\"",
            metadata_url(cx.base_url, cx.endpoint_url)
        );
        Wire::Body {
            status: 403,
            content_type: "application/json",
            headers: vec![("www-authenticate".into(), challenge)],
            body: Bytes::from(json!({ "error": "insufficient_scope", "scope": scope }).to_string()),
        }
    }
}
