//! From HTTP request to the era handlers: resolve the instance, check Host/Origin, read the
//! body within its limits, count, parse, ask the scenario's wire hook, and act on its
//! decision.
//!
//! This is the first part of the endpoint a request meets, and the only one that sees raw
//! HTTP. Its order is the contract of the kitchen (see the folder's docs): counting comes
//! before protocol validation, and the wire hook can answer before any MCP rule runs, so
//! wire faults hit `initialize` and malformed bodies too. Everything after it gets a [`Req`].

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, Response, StatusCode};
use bytes::Bytes;
use serde_json::{json, Value};

use crate::catalogue;
use crate::host_check;
use crate::instance::{self, CatalogClock, Instance};
use crate::journal;
use crate::origin::{base_url, header_str};
use crate::plugin::{Wire, WireCx};
use crate::protocol::{self, Era};
use crate::session::Session;
use crate::sse;
use crate::state::Shared;
use crate::trace::Trace;

use super::legacy::legacy;
use super::modern::modern;
use super::query::parse_query;
use super::record::Record;
use super::request::Req;
use super::respond::{body_over_limit, empty, method_not_allowed, rpc_error};
use super::streams::{get_stream, schedule_modern_timeline};
use super::Target;

/// Serve one HTTP request on an MCP endpoint; returns the response and the scenario id for
/// `X-Kitchen-Scenario`. What the journal needs is written into `rec` as it becomes known.
pub(super) async fn handle_inner(
    shared: &Arc<Shared>,
    target: Target,
    method: &Method,
    headers: &HeaderMap,
    body: Body,
    trace: &Arc<Trace>,
    rec: &mut Record,
) -> (Response<Body>, String) {
    let session_header = header_str(headers, "mcp-session-id").map(str::to_owned);
    let (session, session_instance) = session_of(shared, session_header.as_deref());
    let instance = match resolve_instance(shared, &target, session_instance.clone()) {
        Ok(i) => i,
        Err(refused) => return *refused,
    };
    let sid = instance.scenario.info().id.to_string();
    rec.scenario = Some(sid.clone());
    rec.instance = Some(instance.key.clone());
    rec.session = session_header.clone();
    rec.coding = super::coding::ResponseCoding::choose(
        instance.state.params.str("contentEncoding"),
        header_str(headers, "accept-encoding"),
    );
    if let Some(forbidden) = host_refused(shared, headers, trace) {
        return (forbidden, sid);
    }
    let base = base_url(shared.bound_addr(), headers);
    let endpoint_url = format!("{base}{}", endpoint_path(&target));
    let modern_header =
        header_str(headers, "mcp-protocol-version").is_some_and(protocol::is_modern_version);
    if *method != Method::POST {
        let pinned = session.zip(session_instance);
        let r = not_post(
            shared,
            method,
            session_header.as_deref(),
            pinned,
            modern_header,
            headers,
        );
        return (r, sid);
    }
    let bytes = match read_body(shared, body, trace).await {
        Ok(b) => b,
        Err(r) => return (r, sid),
    };
    let post = instance.state.bump(instance::HTTP_REQUEST);
    if let Some(s) = &session {
        s.requests.fetch_add(1, Ordering::SeqCst);
    }
    let msg = Message::parse(&bytes);
    msg.count(&instance);
    let era = msg.era(modern_header);
    msg.record(rec, era);
    let wire = {
        let cx = WireCx {
            method: msg.method.as_deref(),
            id: msg.id.as_ref(),
            params: &msg.params,
            tool: msg.tool.as_deref(),
            headers,
            instance: &instance.state,
            post,
            era,
            session: session.as_deref(),
            endpoint_url: &endpoint_url,
            base_url: &base,
            auth: &shared.auth,
        };
        // Cakewalk's always-on interceptor for the invalid resource and prompt comes first.
        baseline_interceptor(&cx).unwrap_or_else(|| instance.scenario.on_request(&cx))
    };
    if let Some(d) = wire.describe() {
        trace.note(d);
    }
    let clock = catalogue_clock(era, session.as_deref(), &instance);
    let req = Req {
        clock,
        post,
        shared: shared.clone(),
        instance: instance.clone(),
        session,
        session_header,
        era,
        headers: headers.clone(),
        msg: msg.body,
        method: msg.method,
        id: msg.id,
        params: msg.params,
        tool: msg.tool,
        trace: trace.clone(),
        endpoint_url,
        base_url: base,
    };
    (answer_wire(wire, req).await, sid)
}

/// The legacy session named by `Mcp-Session-Id`, and the instance it is pinned to; neither
/// when the header is absent or names no live session.
fn session_of(
    shared: &Arc<Shared>,
    session_header: Option<&str>,
) -> (Option<Arc<Session>>, Option<Arc<Instance>>) {
    match session_header.and_then(|id| shared.session(id)) {
        Some((s, i)) => (Some(s), Some(i)),
        None => (None, None),
    }
}

/// The 403 for a request whose `Host` or `Origin` is not allowed (DNS rebinding), checked
/// once the instance is known so the refusal is journaled under its scenario.
fn host_refused(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    trace: &Trace,
) -> Option<Response<Body>> {
    if host_check::request_allowed(shared, headers) {
        return None;
    }
    trace.note("rejected Host/Origin");
    Some(rpc_error(
        403,
        None,
        protocol::INVALID_REQUEST,
        host_check::FORBIDDEN,
        None,
    ))
}

/// The instance a request addresses: the URL instance, else the legacy session's pinned
/// one, else the stored selection. A refusal comes with the scenario id to report (boxed:
/// it is the rare path).
fn resolve_instance(
    shared: &Arc<Shared>,
    target: &Target,
    session_instance: Option<Arc<Instance>>,
) -> Result<Arc<Instance>, Box<(Response<Body>, String)>> {
    match target {
        Target::Url { scenario, query } => parse_query(scenario, query.as_deref())
            .map_err(|e| e.to_string())
            .and_then(|(p, tag)| {
                shared
                    .instance(scenario, &p, tag.as_deref())
                    .map_err(|e| e.to_string())
            })
            .map_err(|e| {
                let code = if crate::scenarios::find(scenario).is_none() {
                    404
                } else {
                    400
                };
                let msg = format!("kitchen: {e}");
                let r = rpc_error(code, None, protocol::INVALID_PARAMS, &msg, None);
                Box::new((r, scenario.clone()))
            }),
        Target::Stored => session_instance
            .map(Ok)
            .unwrap_or_else(|| shared.selected_instance())
            .map_err(|e| {
                let msg = format!("kitchen: {e}");
                let r = rpc_error(500, None, protocol::INTERNAL_ERROR, &msg, None);
                Box::new((r, "unknown".into()))
            }),
    }
}

/// The path of the endpoint a request came to, query included (for absolute URLs).
fn endpoint_path(target: &Target) -> String {
    match target {
        Target::Stored => "/mcp".to_string(),
        Target::Url { scenario, query } => match query {
            Some(q) if !q.is_empty() => format!("/s/{scenario}/mcp?{q}"),
            _ => format!("/s/{scenario}/mcp"),
        },
    }
}

/// GET (the legacy standalone stream), DELETE (ends a legacy session) and anything else
/// (405): none of them reaches the scenario's wire hook or the counters.
fn not_post(
    shared: &Arc<Shared>,
    method: &Method,
    session_header: Option<&str>,
    pinned: Option<(Arc<Session>, Arc<Instance>)>,
    modern_header: bool,
    headers: &HeaderMap,
) -> Response<Body> {
    match *method {
        Method::GET => get_stream(shared, session_header, pinned, modern_header, headers),
        Method::DELETE => match (session_header, modern_header) {
            (None, _) | (_, true) => method_not_allowed(),
            (Some(id), false) => match shared.remove_session(id) {
                Some(_) => empty(200),
                None => rpc_error(
                    404,
                    None,
                    protocol::SESSION_NOT_FOUND,
                    "Session not found",
                    None,
                ),
            },
        },
        _ => method_not_allowed(),
    }
}

/// The POST body within the size and time limits; a refusal is the answer to send.
async fn read_body(shared: &Shared, body: Body, trace: &Trace) -> Result<Bytes, Response<Body>> {
    let limit = shared.options.max_body_bytes;
    let read = axum::body::to_bytes(body, limit);
    match tokio::time::timeout(shared.options.body_read_timeout, read).await {
        Err(_) => Err(rpc_error(
            408,
            None,
            protocol::INVALID_REQUEST,
            "Request body not received in time",
            None,
        )),
        Ok(Err(e)) if !body_over_limit(&e) => {
            trace.note("request body malformed");
            let msg = format!("Request body malformed: {e}");
            Err(rpc_error(400, None, protocol::INVALID_REQUEST, &msg, None))
        }
        Ok(Err(_)) => {
            trace.note("request body over the size limit");
            let msg = format!("Request body larger than {limit} bytes");
            Err(rpc_error(413, None, protocol::INVALID_REQUEST, &msg, None))
        }
        Ok(Ok(b)) => Ok(b),
    }
}

/// A POST body read as JSON-RPC, as far as it reads: counting and the wire hook see even
/// bodies the MCP layer would reject.
struct Message {
    /// The parsed body (`None` when it is not JSON).
    body: Option<Value>,
    method: Option<String>,
    /// A string or number id (`None` for notifications and malformed ids).
    id: Option<Value>,
    /// `params` (`Null` when absent).
    params: Value,
    /// `params.name` of a `tools/call`.
    tool: Option<String>,
}

impl Message {
    /// Pick out what the counters, the journal and the wire hook need (method, id, params,
    /// tool) without refusing anything: a bad body (not JSON, a batch) is refused later, by
    /// [`proceed`], after the wire hook has had its say.
    fn parse(bytes: &[u8]) -> Message {
        let body: Option<Value> = serde_json::from_slice(bytes).ok();
        let msg = body.as_ref().filter(|v| v.is_object());
        let method = msg
            .and_then(|m| m.get("method"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let id = msg
            .and_then(|m| m.get("id"))
            .filter(|v| v.is_string() || v.is_number())
            .cloned();
        let params = msg
            .and_then(|m| m.get("params"))
            .cloned()
            .unwrap_or(Value::Null);
        let tool = if method.as_deref() == Some("tools/call") {
            params
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_owned)
        } else {
            None
        };
        Message {
            body,
            method,
            id,
            params,
            tool,
        }
    }

    /// Bump the per-method counters Cakewalk keeps.
    fn count(&self, instance: &Instance) {
        let key = match self.method.as_deref() {
            Some("tools/call") => instance::TOOLS_CALL,
            Some("resources/list") => instance::RESOURCES_LIST,
            Some("prompts/list") => instance::PROMPTS_LIST,
            _ => return,
        };
        instance.state.bump(key);
    }

    /// The request's era. `initialize` is the legacy handshake, unless the request carries
    /// the 2026 `_meta` protocolVersion: then it is a removed method of the stateless era
    /// (404 + -32601).
    fn era(&self, modern_header: bool) -> Era {
        let meta_version = self
            .params
            .get("_meta")
            .and_then(|m| m.get(protocol::META_PROTOCOL_VERSION))
            .and_then(Value::as_str);
        if self.method.as_deref() == Some("initialize")
            && meta_version != Some(protocol::MODERN_VERSION)
        {
            Era::Legacy
        } else if modern_header || meta_version.is_some() {
            Era::Modern
        } else {
            Era::Legacy
        }
    }

    /// What the journal keeps of the message.
    fn record(&self, rec: &mut Record, era: Era) {
        rec.method = self.method.clone();
        rec.id = self.id.clone();
        rec.tool = self.tool.clone();
        rec.era = Some(era);
        if self.tool.is_some() {
            rec.args_hash = Some(journal::arguments_hash(
                self.params.get("arguments").unwrap_or(&json!({})),
            ));
        }
        rec.retry = journal::retry_fields(&self.params);
        rec.task_id = self
            .params
            .get("taskId")
            .and_then(Value::as_str)
            .map(str::to_owned);
    }
}

/// The catalogue clock of this request: the legacy session's, none without a session, or
/// the instance's modern timeline (started, and scheduled, by its first modern request).
fn catalogue_clock(era: Era, session: Option<&Session>, instance: &Arc<Instance>) -> CatalogClock {
    match (era, session) {
        (Era::Legacy, Some(s)) => s.clock(),
        (Era::Legacy, None) => CatalogClock::default(),
        (Era::Modern, _) => {
            let (clock, started) = instance.state.modern_clock();
            if let Some(generation) = started {
                schedule_modern_timeline(instance, clock, generation);
            }
            clock
        }
    }
}

/// Act on the wire hook's decision: let the MCP layer answer, answer in its place, break
/// the connection, or wait first.
async fn answer_wire(wire: Wire, req: Req) -> Response<Body> {
    match wire {
        Wire::Continue => proceed(req).await,
        Wire::Status(s) => empty(s),
        Wire::Body {
            status,
            content_type,
            headers: extra,
            body,
        } => {
            let mut r = Response::new(Body::from(body));
            *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            for (k, v) in extra {
                if let (Ok(k), Ok(v)) = (
                    axum::http::HeaderName::try_from(k),
                    HeaderValue::from_str(&v),
                ) {
                    r.headers_mut().insert(k, v);
                }
            }
            r
        }
        Wire::Close => sse::abort_response(),
        Wire::Delay {
            duration,
            honor_cancellation: true,
        } => {
            tokio::time::sleep(duration).await;
            proceed(req).await
        }
        Wire::Delay {
            duration,
            honor_cancellation: false,
        } => {
            let h = tokio::spawn(async move {
                tokio::time::sleep(duration).await;
                proceed(req).await
            });
            h.await.unwrap_or_else(|_| empty(500))
        }
    }
}

/// Cakewalk's `BaselineCatalogWireInterceptor`: the always-on invalid resource and prompt
/// are answered at the wire with HTTP 200 and a schema-invalid result.
pub(super) fn baseline_interceptor(cx: &WireCx<'_>) -> Option<Wire> {
    let id = cx.id?;
    let result = match cx.method? {
        "resources/read"
            if cx.params.get("uri").and_then(Value::as_str)
                == Some(catalogue::INVALID_RESOURCE_URI) =>
        {
            catalogue::invalid_resource_result()
        }
        "prompts/get"
            if cx.params.get("name").and_then(Value::as_str) == Some(catalogue::INVALID_PROMPT) =>
        {
            catalogue::invalid_prompt_result()
        }
        _ => return None,
    };
    Some(Wire::json(200, &protocol::result_response(id, result)))
}

/// Protocol validation and dispatch.
pub(super) async fn proceed(req: Req) -> Response<Body> {
    let Some(msg) = req.msg.as_ref() else {
        return rpc_error(400, None, protocol::PARSE_ERROR, "Parse error", None);
    };
    if msg.is_array() {
        return rpc_error(
            400,
            None,
            protocol::INVALID_REQUEST,
            "Invalid Request: JSON-RPC batches are not supported",
            None,
        );
    }
    if !msg.is_object() || msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return rpc_error(
            400,
            req.id.as_ref(),
            protocol::INVALID_REQUEST,
            "Invalid Request",
            None,
        );
    }
    let is_response =
        req.method.is_none() && (msg.get("result").is_some() || msg.get("error").is_some());
    if req.method.is_none() && !is_response {
        return rpc_error(
            400,
            req.id.as_ref(),
            protocol::INVALID_REQUEST,
            "Invalid Request: no method",
            None,
        );
    }
    match req.era {
        Era::Legacy => legacy(req, is_response).await,
        Era::Modern => modern(req, is_response).await,
    }
}
