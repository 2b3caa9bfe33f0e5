//! `session.expire`: the legacy session ends after N requests.

use std::sync::atomic::Ordering;

use serde_json::Value;

use crate::plugin::WireCx;
use crate::plugin::{Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, Wire};
use crate::protocol;

/// `session.expire`.
pub struct SessionExpire;

/// Instance counter: sessions this instance has expired (bounded by `sessions`).
const EXPIRED: &str = "sessions_expired";

static INFO: ScenarioInfo = ScenarioInfo {
    id: "session.expire",
    summary: "After afterRequests POSTs in a legacy session, the session is terminated: 404 from then on.",
    docs: "Counts POSTs carrying the session's `Mcp-Session-Id` (initialize itself is not in the session; \
           `notifications/initialized` is). With `countMethod` only requests of that JSON-RPC method count, so the 404 \
           lands on that method whatever a client sends first (the judge uses `tools/call`: a client that lists tools \
           first still meets the expiry on its call). Request afterRequests+1 (of that method) and every later request \
           of the session get 404 with JSON-RPC -32001; a new initialize starts a fresh session. `sessions` bounds how \
           many sessions of the instance expire (0: every one), so a client that re-initializes can finish its call. \
           Modern requests have no session and pass.",
    params: &[
        ParamSpec { name: "afterRequests", kind: ParamKind::Integer, default: "3", choices: &[], doc: "Requests (of `countMethod`, when set) the session survives." },
        ParamSpec { name: "countMethod", kind: ParamKind::String, default: "\"\"", choices: &[], doc: "Count only requests of this JSON-RPC method (empty: every POST)." },
        ParamSpec { name: "sessions", kind: ParamKind::Integer, default: "0", choices: &[], doc: "Sessions of the instance that expire; later ones live on (0: every session)." },
    ],
    outcome: Outcome::HttpError,
    origin: Origin::Kitchen,
};

fn expired(cx: &WireCx<'_>) -> Wire {
    Wire::json(
        404,
        &protocol::error_response(cx.id, protocol::SESSION_NOT_FOUND, "Session expired", None),
    )
}

impl Scenario for SessionExpire {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        let Some(s) = cx.session else {
            return Wire::Continue;
        };
        if s.is_terminated() {
            return expired(cx);
        }
        let method = cx.p().str("countMethod");
        let seen = if method.is_empty() {
            s.requests.load(Ordering::SeqCst)
        } else if cx.method == Some(method) && cx.is_request() {
            // Per-session count of that method, kept in the instance's scenario state.
            let mut bag = cx.instance.bag.lock().expect("bag lock");
            let slot = bag
                .entry(format!("session.expire/{}", s.id))
                .or_insert(Value::from(0u64));
            let n = slot.as_u64().unwrap_or(0) + 1;
            *slot = Value::from(n);
            n
        } else {
            return Wire::Continue;
        };
        if seen <= cx.p().u64("afterRequests") {
            return Wire::Continue;
        }
        let limit = cx.p().u64("sessions");
        if limit > 0 && cx.instance.count(EXPIRED) >= limit {
            return Wire::Continue;
        }
        cx.instance.bump(EXPIRED);
        s.terminated.store(true, Ordering::SeqCst);
        expired(cx)
    }
}
