//! `errors.rate_limited`: 429 with `Retry-After`, or the draft SEP-3304 `-32023` RateLimited error.

use bytes::Bytes;

use crate::instance_state::TOOLS_CALL;
use crate::plugin::WireCx;
use crate::plugin::{Origin, Outcome, ParamKind, ParamSpec, Params, Scenario, ScenarioInfo, Wire};
use crate::protocol;

/// `errors.rate_limited`.
pub struct RateLimited;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "errors.rate_limited",
    summary: "The Nth tools/call (or every one with onInvocation 0) gets 429 with Retry-After.",
    docs: "Counts `tools_call`. The body is a JSON-RPC error with the request id: with `form` `legacy` \
           -32000 \"Too many requests\" (what servers send today); with `sep3304` the draft SEP-3304's \
           -32023 RateLimited with `data.retryAfterMs` (and `limit`/`remaining` when set) on the 429; \
           with `sep3304_200` the same error on HTTP 200, as a server that forgets the SEP's 429 sends it \
           (and as stdio carries it). `retryAfter` is sent verbatim as Retry-After (delta-seconds or an \
           HTTP-date; empty: no header, with the sep3304 forms only).",
    params: &[
        ParamSpec { name: "retryAfter", kind: ParamKind::String, default: "\"2\"", choices: &[], doc: "Retry-After value (delta-seconds or HTTP-date)." },
        ParamSpec { name: "onInvocation", kind: ParamKind::Integer, default: "1", choices: &[], doc: "Which tools/call (once); 0 = every call." },
        ParamSpec { name: "form", kind: ParamKind::String, default: "\"legacy\"", choices: &["legacy", "sep3304", "sep3304_200"], doc: "Which error: -32000 on a 429, or the draft SEP-3304 -32023 on a 429 or a 200." },
        ParamSpec { name: "retryAfterMs", kind: ParamKind::Integer, default: "2000", choices: &[], doc: "data.retryAfterMs of the -32023 error (sep3304 forms); -1 leaves it out." },
        ParamSpec { name: "limit", kind: ParamKind::Integer, default: "-1", choices: &[], doc: "data.limit of the -32023 error; -1 leaves it out." },
        ParamSpec { name: "remaining", kind: ParamKind::Integer, default: "-1", choices: &[], doc: "data.remaining of the -32023 error; -1 leaves it out." },
    ],
    outcome: Outcome::HttpError,
    origin: Origin::Kitchen,
};

impl Scenario for RateLimited {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn validate(&self, p: &Params) -> Result<(), crate::plugin::ParamsError> {
        let v = p.str("retryAfter");
        let legacy = p.str("form") == "legacy";
        let delta = !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
        if !(delta || httpdate::parse_http_date(v).is_ok() || (v.is_empty() && !legacy)) {
            return Err(crate::plugin::ParamsError::Rule {
                name: "retryAfter",
                rule: "be delta-seconds or an HTTP-date",
            });
        }
        for name in ["retryAfterMs", "limit", "remaining"] {
            if p.i64(name) < -1 {
                return Err(crate::plugin::ParamsError::Rule {
                    name,
                    rule: "be -1 (left out) or a number >= 0",
                });
            }
        }
        Ok(())
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        if cx.method != Some("tools/call") {
            return Wire::Continue;
        }
        let on = cx.p().u64("onInvocation");
        if on != 0 && cx.count(TOOLS_CALL) != on {
            return Wire::Continue;
        }
        let p = cx.p();
        let (status, body) = match p.str("form") {
            "legacy" => (
                429,
                protocol::error_response(cx.id, -32000, "Too many requests", None),
            ),
            form => (
                if form == "sep3304" { 429 } else { 200 },
                protocol::error_response(
                    cx.id,
                    RATE_LIMITED,
                    "Rate limited",
                    Some(sep3304_data(p)),
                ),
            ),
        };
        let retry_after = p.str("retryAfter");
        let headers = if retry_after.is_empty() {
            Vec::new()
        } else {
            vec![("retry-after".into(), retry_after.to_string())]
        };
        Wire::Body {
            status,
            content_type: "application/json",
            headers,
            body: Bytes::from(body.to_string()),
        }
    }
}

/// The draft SEP-3304's RateLimited code. Written out, not taken from the core: the kitchen is
/// the classifier's independent counterpart and shares none of its code.
const RATE_LIMITED: i64 = -32023;

/// `error.data` of a -32023 error: the members whose parameter is not -1.
fn sep3304_data(p: &Params) -> serde_json::Value {
    let mut data = serde_json::Map::new();
    for name in ["retryAfterMs", "limit", "remaining"] {
        let n = p.i64(name);
        if n >= 0 {
            data.insert(name.into(), n.into());
        }
    }
    serde_json::Value::Object(data)
}
