//! `errors.content_type`: HTTP 200 with `text/html`.

use bytes::Bytes;

use crate::instance_state::TOOLS_CALL;
use crate::plugin::WireCx;
use crate::plugin::{
    on_invocation, Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, Wire,
};

/// `errors.content_type`.
pub struct ContentType;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "errors.content_type",
    summary: "The Nth tools/call gets HTTP 200 with Content-Type text/html (a captive portal or proxy error page).",
    docs: "Counts `tools_call`; fires exactly once.",
    params: &[ParamSpec { name: "onInvocation", kind: ParamKind::Integer, default: "1", choices: &[], doc: "Which tools/call (once)." }],
    outcome: Outcome::UnexpectedContentType,
    origin: Origin::Kitchen,
};

/// The HTML body sent.
pub const HTML: &str = "<!doctype html><html><head><title>Gateway</title></head><body><h1>Please sign in</h1></body></html>";

impl Scenario for ContentType {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        if cx.method == Some("tools/call")
            && on_invocation(cx.count(TOOLS_CALL), cx.p().u64("onInvocation"))
        {
            return Wire::Body {
                status: 200,
                content_type: "text/html; charset=utf-8",
                headers: Vec::new(),
                body: Bytes::from_static(HTML.as_bytes()),
            };
        }
        Wire::Continue
    }
}
