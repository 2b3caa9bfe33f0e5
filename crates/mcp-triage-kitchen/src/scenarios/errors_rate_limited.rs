//! `errors.rate_limited`: 429 with `Retry-After`.

use bytes::Bytes;

use super::{Origin, Outcome, ParamKind, ParamSpec, Params, Scenario, ScenarioInfo, Wire};
use crate::context::WireCx;
use crate::instance::TOOLS_CALL;
use crate::protocol;

/// `errors.rate_limited`.
pub struct RateLimited;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "errors.rate_limited",
    summary: "The Nth tools/call (or every one with onInvocation 0) gets 429 with Retry-After.",
    docs: "Counts `tools_call`. The body is a JSON-RPC error (-32000 \"Too many requests\") with the request id. \
           `retryAfter` is sent verbatim: delta-seconds or an HTTP-date.",
    params: &[
        ParamSpec { name: "retryAfter", kind: ParamKind::String, default: "\"2\"", choices: &[], doc: "Retry-After value (delta-seconds or HTTP-date)." },
        ParamSpec { name: "onInvocation", kind: ParamKind::Integer, default: "1", choices: &[], doc: "Which tools/call (once); 0 = every call." },
    ],
    outcome: Outcome::HttpError,
    origin: Origin::Kitchen,
};

impl Scenario for RateLimited {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn validate(&self, p: &Params) -> Result<(), String> {
        let v = p.str("retryAfter");
        let delta = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
        if delta || httpdate::parse_http_date(v).is_ok() {
            Ok(())
        } else {
            Err("retryAfter must be delta-seconds or an HTTP-date".into())
        }
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        if cx.method != Some("tools/call") {
            return Wire::Continue;
        }
        let on = cx.p().u64("onInvocation");
        if on != 0 && cx.count(TOOLS_CALL) != on {
            return Wire::Continue;
        }
        let body = protocol::error_response(cx.id, -32000, "Too many requests", None);
        Wire::Body {
            status: 429,
            content_type: "application/json",
            headers: vec![("retry-after".into(), cx.p().str("retryAfter").to_string())],
            body: Bytes::from(body.to_string()),
        }
    }
}
