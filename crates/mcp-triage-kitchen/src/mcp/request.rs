//! One parsed POST as the endpoint's handlers pass it on ([`Req`]), and how a result is
//! finished and sent.
//!
//! `receive` builds the `Req` once and the era handlers, `dispatch` and `tools_call` pass it
//! along, so a handler's inputs are one value rather than a dozen arguments. Finishing a result
//! here (era fields, the scenario's shaping) keeps every method's answer shaped alike.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Response};
use serde_json::{json, Value};

use crate::instance::{CatalogClock, Instance};
use crate::plugin::WireCx;
use crate::protocol::{self, Era};
use crate::session::Session;
use crate::sse::{self};
use crate::state::{ResponseMode, Shared};
use crate::trace::Trace;

use super::capabilities::server_info;

/// A request past the wire hook.
pub(super) struct Req {
    pub(super) shared: Arc<Shared>,
    pub(super) instance: Arc<Instance>,
    pub(super) session: Option<Arc<Session>>,
    pub(super) session_header: Option<String>,
    pub(super) era: Era,
    pub(super) headers: HeaderMap,
    pub(super) msg: Option<Value>,
    pub(super) method: Option<String>,
    pub(super) id: Option<Value>,
    pub(super) params: Value,
    pub(super) tool: Option<String>,
    pub(super) trace: Arc<Trace>,
    pub(super) endpoint_url: String,
    pub(super) base_url: String,
    /// Catalogue time of this request (a legacy session's timeline, or the instance's 2026
    /// timeline).
    pub(super) clock: CatalogClock,
    /// 1-based number of this POST on the instance.
    pub(super) post: u64,
}

impl Req {
    /// The scenario's view of this request (its `handle_method` hook takes it).
    pub(super) fn wire_cx(&self) -> WireCx<'_> {
        WireCx {
            method: self.method.as_deref(),
            id: self.id.as_ref(),
            params: &self.params,
            tool: self.tool.as_deref(),
            headers: &self.headers,
            instance: &self.instance.state,
            post: self.post,
            era: self.era,
            session: self.session.as_deref(),
            endpoint_url: &self.endpoint_url,
            base_url: &self.base_url,
            auth: &self.shared.auth,
        }
    }

    /// JSON or SSE for this request: the instance's `responseMode` parameter, else the
    /// kitchen's option.
    pub(super) fn response_mode(&self) -> ResponseMode {
        ResponseMode::parse(self.instance.state.params.str("responseMode"))
            .filter(|m| *m != ResponseMode::Auto)
            .unwrap_or(self.shared.options.response_mode)
    }
}

pub(super) const CACHEABLE: &[&str] = &[
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// Add the modern-era result members (and let the scenario reshape).
pub(super) fn finish_result(req: &Req, method: &str, mut result: Value) -> Value {
    if req.era == Era::Modern {
        if let Some(obj) = result.as_object_mut() {
            obj.entry("resultType").or_insert(json!("complete"));
            if CACHEABLE.contains(&method) {
                obj.entry("ttlMs").or_insert(json!(0));
                obj.entry("cacheScope").or_insert(json!("private"));
            }
            let meta = obj.entry("_meta").or_insert(json!({}));
            if let Some(m) = meta.as_object_mut() {
                m.insert(protocol::META_SERVER_INFO.into(), server_info());
            }
        }
    }
    req.instance.scenario.shape_result(method, &mut result);
    result
}

/// The HTTP status of a `-32601`: 404 in the modern era (a method is a route there), 200 in
/// the legacy one.
pub(super) fn not_found_status(era: Era) -> u16 {
    match era {
        Era::Modern => 404,
        Era::Legacy => 200,
    }
}

/// A 200 answer to a request that emits nothing before its response: one JSON body, or, when
/// the server or the scenario is set to `sse`, a one-event SSE stream. The reference
/// servers (TS SDK) stream every POST response, and a client's SSE parser is only exercised
/// if the kitchen can do the same for plain methods such as `tools/list`; `auto` keeps JSON.
pub(super) fn reply_ok(req: &Req, msg: Value) -> Response<Body> {
    if req.response_mode() == ResponseMode::Sse {
        sse::sse_headers(Response::new(Body::from(sse::event(None, &msg))))
    } else {
        sse::json_response(200, &msg)
    }
}
