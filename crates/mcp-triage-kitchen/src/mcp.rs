//! The MCP endpoint: both eras on one URL.
//!
//! Order of work for a POST (as Cakewalk's middleware chain): Host/Origin check → body
//! size/time limits → counters → the scenario's wire hook → protocol validation → the
//! catalogue. Counting happens before validation on purpose: Cakewalk's
//! `http_status_sequence` counts every POST, including `initialize`, notifications and
//! bodies the MCP layer would reject.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, Response, StatusCode};
use bytes::Bytes;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use crate::answer::{self, Observed};
use crate::catalogue;
use crate::host_check;
use crate::instance::{self, CatalogClock, ChangeKind, ChangeScope, Instance};
use crate::journal;
use crate::origin::{base_url, header_str};
use crate::plugin::{Asked, Emitter, MethodReply, Out, ToolCx, ToolFault, ToolReply, Wire, WireCx};
use crate::protocol::{self, Era};
use crate::session::Session;
use crate::sse::{self, SsePlan};
use crate::state::{ResponseMode, Shared};
use crate::trace::Trace;
use mcp_triage_core::RequestKind;

/// Which instance a URL addresses.
pub enum Target {
    /// `/mcp`: the stored selection (or the instance pinned by the legacy session).
    Stored,
    /// `/s/{scenario}/mcp?…`: an instance of its own.
    Url {
        /// Scenario id from the path.
        scenario: String,
        /// Raw query string.
        query: Option<String>,
    },
}

/// Header carrying the scenario id on every response.
pub const SCENARIO_HEADER: &str = "x-kitchen-scenario";

/// What the journal needs to know about one exchange.
#[derive(Default)]
struct Record {
    /// The scenario id, once the instance is known.
    scenario: Option<String>,
    instance: Option<String>,
    session: Option<String>,
    method: Option<String>,
    id: Option<Value>,
    tool: Option<String>,
    args_hash: Option<String>,
    era: Option<Era>,
    /// MRTR retry fields and an idempotency key, so `judge` can grade retries.
    retry: Option<journal::RetryFields>,
    /// `params.taskId` of a tasks-extension request.
    task_id: Option<String>,
}

/// Parse the URL-instance query: `params=<json>` and/or one `name=value` per parameter
/// (values parsed as JSON when they parse, else taken as strings; a string parameter keeps
/// the raw text). `instance=<tag>` separates otherwise identical instances.
pub fn parse_query(scenario: &str, query: Option<&str>) -> Result<(Value, Option<String>), String> {
    let mut params = Map::new();
    let mut tag = None;
    let info = crate::scenarios::find(scenario).map(|s| s.info());
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let k = percent_decode(k);
        let v = percent_decode(v);
        match k.as_str() {
            "params" => match serde_json::from_str::<Value>(&v) {
                Ok(Value::Object(m)) => params.extend(m),
                _ => return Err("`params` must be a JSON object".into()),
            },
            "instance" => tag = Some(v),
            _ => {
                let is_string = info
                    .and_then(|i| {
                        i.params
                            .iter()
                            .chain(crate::scenarios::COMMON_PARAMS)
                            .find(|p| p.name.eq_ignore_ascii_case(&k))
                    })
                    .is_some_and(|p| p.kind == crate::scenarios::ParamKind::String);
                let value = if is_string {
                    Value::String(v)
                } else {
                    serde_json::from_str(&v).unwrap_or(Value::String(v))
                };
                params.insert(k, value);
            }
        }
    }
    Ok((Value::Object(params), tag))
}

/// Percent-encoding for a value put into a query; the kitchen's authorization server and
/// `judge`'s case URLs use it.
pub use mcp_triage_wire::percent::encode as percent_encode;

/// Form decoding of a query name or value (`+` is a space).
pub(crate) use mcp_triage_wire::percent::decode_form as percent_decode;

fn set_header(r: &mut Response<Body>, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers_mut().insert(name, v);
    }
}

fn empty(status: u16) -> Response<Body> {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r
}

fn rpc_error(
    status: u16,
    id: Option<&Value>,
    code: i64,
    message: &str,
    data: Option<Value>,
) -> Response<Body> {
    sse::json_response(status, &protocol::error_response(id, code, message, data))
}

/// Entry point for every HTTP method on an MCP endpoint.
pub async fn handle(
    shared: Arc<Shared>,
    target: Target,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response<Body> {
    let mut pending = Pending {
        shared,
        received: journal::now_ms(),
        method,
        headers,
        trace: Arc::new(Trace::default()),
        rec: Record::default(),
        done: false,
    };
    let (mut resp, scenario_id) = handle_inner(
        &pending.shared,
        target,
        &pending.method,
        &pending.headers,
        body,
        &pending.trace,
        &mut pending.rec,
    )
    .await;
    set_header(&mut resp, SCENARIO_HEADER, &scenario_id);
    let aborted = resp.extensions().get::<sse::AbortConnection>().is_some();
    let expected = match resp.extensions().get::<answer::ResumedRequest>() {
        Some(answer::ResumedRequest(id)) => Some(id.clone()),
        None if answer::is_answered(pending.rec.method.as_deref()) => pending.rec.id.clone(),
        None => None,
    };
    let kind = RequestKind::from_method(pending.rec.method.as_deref().unwrap_or("tools/call"));
    let (resp, observed) = match expected.as_ref().and_then(answer::request_id) {
        Some(_) if aborted => (resp, Some(Observed::Whole(journal::Answer::no_response()))),
        Some(id) => {
            let (r, o) = answer::observe(resp, id, kind).await;
            (r, Some(o))
        }
        None => (resp, None),
    };
    let (answer_now, watch) = match observed {
        Some(Observed::Whole(a)) => (Some(a), None),
        Some(Observed::Streaming(w)) => (None, Some(w)),
        None => (None, None),
    };
    let head = (!aborted).then_some(&resp);
    let mut entry = pending.entry(scenario_id, head);
    entry.answer = answer_now;
    let has_tool = entry.tool.is_some();
    let ticket = pending.shared.journal.push(entry);
    pending.done = true;
    if let Some(watch) = watch {
        // What the scenario noted, ran or issued while the stream went out is part of the
        // entry too (a cut is noted when it happens, after the head was sent).
        let (shared, trace) = (pending.shared.clone(), pending.trace.clone());
        watch.on_end(move |a| {
            shared.journal.amend(ticket, |e| {
                e.answer = Some(a);
                e.injected = trace.joined();
                e.executed = has_tool.then(|| trace.executed());
                e.issued = journal::issued_of(trace.issued());
                e.deduplicated = trace.deduplicated();
            })
        });
    }
    resp
}

/// One request's journal entry in the making. A client that goes away while the kitchen is
/// still answering (a tool that takes longer than its patience) drops the request's future;
/// the entry is journaled then too, without a status, so `judge` sees the request it sent
/// instead of a call that never came.
struct Pending {
    shared: Arc<Shared>,
    received: u64,
    method: Method,
    headers: HeaderMap,
    trace: Arc<Trace>,
    rec: Record,
    done: bool,
}

impl Pending {
    /// The entry as far as it is known; `head` is the response, `None` when none was sent.
    fn entry(&mut self, scenario: String, head: Option<&Response<Body>>) -> journal::JournalEntry {
        let rec = std::mem::take(&mut self.rec);
        let ctype = head
            .and_then(|r| r.headers().get(header::CONTENT_TYPE))
            .and_then(|v| v.to_str().ok())
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        journal::JournalEntry {
            time: journal::rfc3339(journal::now_ms()),
            received_ms: self.received,
            http_method: self.method.as_str().to_string(),
            instance: rec.instance,
            scenario,
            session: rec.session,
            era: rec.era,
            executed: rec.tool.is_some().then(|| self.trace.executed()),
            method: rec.method,
            id: rec.id,
            tool: rec.tool,
            arguments_hash: rec.args_hash,
            headers: journal::redacted_headers(&self.headers),
            injected: self.trace.joined(),
            status: head.map(|r| r.status().as_u16()),
            content_type: ctype,
            retry: rec.retry,
            issued: journal::issued_of(self.trace.issued()),
            answer: None,
            deduplicated: self.trace.deduplicated(),
            task_id: rec.task_id,
            replay: None,
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.trace
            .note("the client closed the connection before the answer was sent");
        let scenario = self
            .rec
            .scenario
            .clone()
            .unwrap_or_else(|| "unknown".into());
        let entry = self.entry(scenario, None);
        self.shared.journal.push(entry);
    }
}

async fn handle_inner(
    shared: &Arc<Shared>,
    target: Target,
    method: &Method,
    headers: &HeaderMap,
    body: Body,
    trace: &Arc<Trace>,
    rec: &mut Record,
) -> (Response<Body>, String) {
    let session_header = header_str(headers, "mcp-session-id").map(str::to_owned);
    let (session, session_instance) =
        match session_header.as_deref().and_then(|id| shared.session(id)) {
            Some((s, i)) => (Some(s), Some(i)),
            None => (None, None),
        };
    // Resolve the instance: URL instance, else the session's pinned one, else the selection.
    let instance = match &target {
        Target::Url { scenario, query } => {
            match parse_query(scenario, query.as_deref()).and_then(|(p, tag)| {
                shared
                    .instance(scenario, &p, tag.as_deref())
                    .map_err(|e| e.to_string())
            }) {
                Ok(i) => i,
                Err(e) => {
                    let code = if crate::scenarios::find(scenario).is_none() {
                        404
                    } else {
                        400
                    };
                    return (
                        rpc_error(
                            code,
                            None,
                            protocol::INVALID_PARAMS,
                            &format!("kitchen: {e}"),
                            None,
                        ),
                        scenario.clone(),
                    );
                }
            }
        }
        Target::Stored => match session_instance
            .clone()
            .map(Ok)
            .unwrap_or_else(|| shared.selected_instance())
        {
            Ok(i) => i,
            Err(e) => {
                return (
                    rpc_error(
                        500,
                        None,
                        protocol::INTERNAL_ERROR,
                        &format!("kitchen: {e}"),
                        None,
                    ),
                    "unknown".into(),
                )
            }
        },
    };
    let sid = instance.scenario.info().id.to_string();
    rec.scenario = Some(sid.clone());
    rec.instance = Some(instance.key.clone());
    rec.session = session_header.clone();
    if !host_check::request_allowed(shared, headers) {
        trace.note("rejected Host/Origin");
        return (
            rpc_error(
                403,
                None,
                protocol::INVALID_REQUEST,
                host_check::FORBIDDEN,
                None,
            ),
            sid,
        );
    }
    let endpoint = match &target {
        Target::Stored => "/mcp".to_string(),
        Target::Url { scenario, query } => match query {
            Some(q) if !q.is_empty() => format!("/s/{scenario}/mcp?{q}"),
            _ => format!("/s/{scenario}/mcp"),
        },
    };
    let base = base_url(shared.bound_addr(), headers);
    let endpoint_url = format!("{base}{endpoint}");
    let modern_header =
        header_str(headers, "mcp-protocol-version").is_some_and(protocol::is_modern_version);
    match *method {
        Method::POST => {}
        Method::GET => {
            return (
                get_stream(
                    shared,
                    session_header.as_deref(),
                    session.zip(session_instance),
                    modern_header,
                    headers,
                ),
                sid,
            )
        }
        Method::DELETE => {
            let r = match (&session_header, modern_header) {
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
            };
            return (r, sid);
        }
        _ => return (method_not_allowed(), sid),
    }

    // Body: size and time limits.
    let limit = shared.options.max_body_bytes;
    let bytes = match tokio::time::timeout(
        shared.options.body_read_timeout,
        axum::body::to_bytes(body, limit),
    )
    .await
    {
        Err(_) => {
            return (
                rpc_error(
                    408,
                    None,
                    protocol::INVALID_REQUEST,
                    "Request body not received in time",
                    None,
                ),
                sid,
            )
        }
        Ok(Err(e)) if !body_over_limit(&e) => {
            trace.note("request body malformed");
            return (
                rpc_error(
                    400,
                    None,
                    protocol::INVALID_REQUEST,
                    &format!("Request body malformed: {e}"),
                    None,
                ),
                sid,
            );
        }
        Ok(Err(_)) => {
            trace.note("request body over the size limit");
            return (
                rpc_error(
                    413,
                    None,
                    protocol::INVALID_REQUEST,
                    &format!("Request body larger than {limit} bytes"),
                    None,
                ),
                sid,
            );
        }
        Ok(Ok(b)) => b,
    };
    let post = instance.state.bump(instance::HTTP_REQUEST);
    if let Some(s) = &session {
        s.requests.fetch_add(1, Ordering::SeqCst);
    }

    let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
    let msg = parsed.as_ref().filter(|v| v.is_object());
    let rpc_method = msg
        .and_then(|m| m.get("method"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let rpc_id = msg
        .and_then(|m| m.get("id"))
        .filter(|v| v.is_string() || v.is_number())
        .cloned();
    let params = msg
        .and_then(|m| m.get("params"))
        .cloned()
        .unwrap_or(Value::Null);
    let tool = if rpc_method.as_deref() == Some("tools/call") {
        params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
    } else {
        None
    };
    match rpc_method.as_deref() {
        Some("tools/call") => {
            instance.state.bump(instance::TOOLS_CALL);
        }
        Some("resources/list") => {
            instance.state.bump(instance::RESOURCES_LIST);
        }
        Some("prompts/list") => {
            instance.state.bump(instance::PROMPTS_LIST);
        }
        _ => {}
    }
    let meta_version = params
        .get("_meta")
        .and_then(|m| m.get(protocol::META_PROTOCOL_VERSION))
        .and_then(Value::as_str);
    // `initialize` is the legacy handshake, unless the request carries the 2026 `_meta`
    // protocolVersion: then it is a removed method of the stateless era (404 + -32601).
    let era = if rpc_method.as_deref() == Some("initialize")
        && meta_version != Some(protocol::MODERN_VERSION)
    {
        Era::Legacy
    } else if modern_header || meta_version.is_some() {
        Era::Modern
    } else {
        Era::Legacy
    };
    rec.method = rpc_method.clone();
    rec.id = rpc_id.clone();
    rec.tool = tool.clone();
    rec.era = Some(era);
    if tool.is_some() {
        rec.args_hash = Some(journal::arguments_hash(
            params.get("arguments").unwrap_or(&json!({})),
        ));
    }
    rec.retry = journal::retry_fields(&params);
    rec.task_id = params
        .get("taskId")
        .and_then(Value::as_str)
        .map(str::to_owned);

    let wire = {
        let cx = WireCx {
            method: rpc_method.as_deref(),
            id: rpc_id.as_ref(),
            params: &params,
            tool: tool.as_deref(),
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
    let clock = match (era, &session) {
        (Era::Legacy, Some(s)) => s.clock(),
        (Era::Legacy, None) => CatalogClock::default(),
        (Era::Modern, _) => {
            let (clock, started) = instance.state.modern_clock();
            if let Some(generation) = started {
                schedule_modern_timeline(&instance, clock, generation);
            }
            clock
        }
    };
    let req = Req {
        clock,
        post,
        shared: shared.clone(),
        instance: instance.clone(),
        session,
        session_header,
        era,
        headers: headers.clone(),
        msg: parsed,
        method: rpc_method,
        id: rpc_id,
        params,
        tool,
        trace: trace.clone(),
        endpoint_url,
        base_url: base,
    };
    let resp = match wire {
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
    };
    (resp, sid)
}

fn method_not_allowed() -> Response<Body> {
    let mut r = empty(405);
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    r
}

/// Cakewalk's `BaselineCatalogWireInterceptor`: the always-on invalid resource and prompt
/// are answered at the wire with HTTP 200 and a schema-invalid result.
fn baseline_interceptor(cx: &WireCx<'_>) -> Option<Wire> {
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

/// A request past the wire hook.
struct Req {
    shared: Arc<Shared>,
    instance: Arc<Instance>,
    session: Option<Arc<Session>>,
    session_header: Option<String>,
    era: Era,
    headers: HeaderMap,
    msg: Option<Value>,
    method: Option<String>,
    id: Option<Value>,
    params: Value,
    tool: Option<String>,
    trace: Arc<Trace>,
    endpoint_url: String,
    base_url: String,
    /// Catalogue time of this request (a legacy session's timeline, or the instance's 2026
    /// timeline).
    clock: CatalogClock,
    /// 1-based number of this POST on the instance.
    post: u64,
}

impl Req {
    fn wire_cx(&self) -> WireCx<'_> {
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

    fn response_mode(&self) -> ResponseMode {
        ResponseMode::parse(self.instance.state.params.str("responseMode"))
            .filter(|m| *m != ResponseMode::Auto)
            .unwrap_or(self.shared.options.response_mode)
    }
}

/// Protocol validation and dispatch.
async fn proceed(req: Req) -> Response<Body> {
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

async fn legacy(req: Req, is_response: bool) -> Response<Body> {
    if req.method.as_deref() == Some("initialize") {
        return initialize(req);
    }
    let Some(sid) = req.session_header.as_deref() else {
        return rpc_error(
            400,
            req.id.as_ref(),
            -32000,
            "Bad Request: Mcp-Session-Id header is required",
            None,
        );
    };
    let Some(session) = req.session.clone() else {
        return rpc_error(
            404,
            req.id.as_ref(),
            protocol::SESSION_NOT_FOUND,
            &format!("Session not found: {sid}"),
            None,
        );
    };
    if let Some(v) = header_str(&req.headers, "mcp-protocol-version") {
        if !protocol::LEGACY_VERSIONS.contains(&v) {
            return rpc_error(
                400,
                req.id.as_ref(),
                -32000,
                &format!("Bad Request: unsupported MCP-Protocol-Version {v}"),
                None,
            );
        }
    }
    let mut r = if is_response {
        // The client's answer to a server→client request.
        let key = req
            .msg
            .as_ref()
            .and_then(|m| m.get("id"))
            .map(|id| match id {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        if let Some(tx) = key.and_then(|k| session.pending.lock().expect("pending lock").remove(&k))
        {
            let _ = tx.send(req.msg.clone().unwrap_or(Value::Null));
        }
        empty(202)
    } else if req.id.is_none() {
        // A notification (initialized, cancelled, roots/list_changed …).
        empty(202)
    } else {
        dispatch(req).await
    };
    set_header(&mut r, "mcp-session-id", &session.id);
    r
}

/// Capabilities by era. Legacy change notifications go on the session's GET stream; 2026
/// ones on `subscriptions/listen` streams. What can change: the tool list (`catalog.mutation`,
/// `test_trigger_tool_change`), the prompt list (`test_trigger_prompt_change`) and the counter
/// resource (`increment_counter`); the resource list never changes, so the 2026 era (where a
/// listen stream acknowledges only what the server honours) does not claim
/// `resources.listChanged`.
fn server_capabilities(era: Era) -> Value {
    match era {
        Era::Legacy => json!({
            "tools": { "listChanged": true },
            "resources": { "subscribe": true, "listChanged": true },
            "prompts": { "listChanged": true },
            "completions": {},
            "logging": {},
        }),
        Era::Modern => json!({
            "tools": { "listChanged": true },
            "resources": { "subscribe": true },
            "prompts": { "listChanged": true },
            "completions": {},
        }),
    }
}

fn list_changed_notification(kind: &ChangeKind) -> Value {
    match kind {
        ChangeKind::ToolsListChanged => {
            json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" })
        }
        ChangeKind::PromptsListChanged => {
            json!({ "jsonrpc": "2.0", "method": "notifications/prompts/list_changed" })
        }
        ChangeKind::ResourceUpdated(uri) => {
            json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": uri } })
        }
    }
}

/// A legacy session's catalogue timeline (`catalog.mutation`): at each change, the
/// notifications go on the session's standalone GET stream (dropped when none is open, as
/// a server without a stream to the client has nowhere to send them). The task holds the
/// session weakly and ends with it.
fn schedule_session_timeline(session: &Arc<Session>, instance: &Instance) {
    let changes = instance.scenario.tool_list_changes(&instance.state.params);
    if changes.is_empty() {
        return;
    }
    let weak = Arc::downgrade(session);
    let start = tokio::time::Instant::from_std(session.started);
    tokio::spawn(async move {
        for (after, n) in changes {
            tokio::time::sleep_until(start + after).await;
            let Some(s) = weak.upgrade() else { return };
            if s.is_terminated() {
                return;
            }
            for _ in 0..n {
                s.push_get_stream(list_changed_notification(&ChangeKind::ToolsListChanged));
            }
        }
    });
}

/// The 2026 catalogue timeline of an instance, started by its first modern request: changes
/// go to `subscriptions/listen` streams. Ends when the instance is dropped or reset.
fn schedule_modern_timeline(instance: &Arc<Instance>, clock: CatalogClock, generation: u64) {
    let changes = instance.scenario.tool_list_changes(&instance.state.params);
    let Some(started) = clock.started else { return };
    if changes.is_empty() {
        return;
    }
    let weak = Arc::downgrade(instance);
    let start = tokio::time::Instant::from_std(started);
    tokio::spawn(async move {
        for (after, n) in changes {
            tokio::time::sleep_until(start + after).await;
            let Some(i) = weak.upgrade() else { return };
            if !i.state.modern_generation_is(generation) {
                return;
            }
            for _ in 0..n {
                i.state
                    .emit(ChangeKind::ToolsListChanged, ChangeScope::Modern);
            }
        }
    });
}

/// What a `subscriptions/listen` request asked for, reduced to what the kitchen honours.
struct ListenFilter {
    tools: bool,
    prompts: bool,
    resources: Vec<String>,
}

impl ListenFilter {
    fn wants(&self, kind: &ChangeKind) -> bool {
        match kind {
            ChangeKind::ToolsListChanged => self.tools,
            ChangeKind::PromptsListChanged => self.prompts,
            ChangeKind::ResourceUpdated(uri) => self.resources.iter().any(|r| r == uri),
        }
    }
    fn acknowledged(&self) -> Value {
        let mut n = Map::new();
        if self.tools {
            n.insert("toolsListChanged".into(), json!(true));
        }
        if self.prompts {
            n.insert("promptsListChanged".into(), json!(true));
        }
        if !self.resources.is_empty() {
            n.insert("resourceSubscriptions".into(), json!(self.resources));
        }
        Value::Object(n)
    }
}

/// Most resource URIs one `subscriptions/listen` may name (an explicit bound on per-stream
/// filter work).
const MAX_RESOURCE_SUBSCRIPTIONS: usize = 256;

/// 2026 `subscriptions/listen`: an SSE response that stays open. First the
/// `notifications/subscriptions/acknowledged` with the honoured filter, then the instance's
/// changes the filter asks for, each tagged with `_meta.subscriptionId` (the request id).
/// `resourcesListChanged` is never acknowledged: the resource list does not change. The
/// stream ends when the client closes it (that is how a 2026 client cancels).
fn listen(req: &Req) -> Response<Body> {
    let id = req.id.clone().unwrap_or(Value::Null);
    let n = &req.params["notifications"];
    if !(n.is_null() || n.is_object()) {
        return rpc_error(
            400,
            Some(&id),
            protocol::INVALID_PARAMS,
            "Invalid params: notifications must be an object",
            None,
        );
    }
    let resources: Vec<String> = match n.get("resourceSubscriptions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) if a.len() <= MAX_RESOURCE_SUBSCRIPTIONS && a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Some(_) => {
            return rpc_error(
                400,
                Some(&id),
                protocol::INVALID_PARAMS,
                &format!("Invalid params: resourceSubscriptions must be an array of at most {MAX_RESOURCE_SUBSCRIPTIONS} URI strings"),
                None,
            )
        }
    };
    let filter = ListenFilter {
        tools: n["toolsListChanged"].as_bool() == Some(true),
        prompts: n["promptsListChanged"].as_bool() == Some(true),
        resources,
    };
    // `null` members become objects on write (serde_json's IndexMut).
    let tag = move |mut msg: Value| {
        msg["params"]["_meta"][protocol::META_SUBSCRIPTION_ID] = id.clone();
        msg
    };
    let ack = tag(json!({
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": { "notifications": filter.acknowledged() },
    }));
    req.trace.note("subscriptions/listen stream opened");
    let mut events = req.instance.state.listen();
    let body = async_stream_body(move |tx| async move {
        if tx.send(sse::event(None, &ack)).is_err() {
            return;
        }
        loop {
            tokio::select! {
                _ = tx.closed() => return,
                ev = events.recv() => match ev {
                    Ok(c) if filter.wants(&c.kind) => {
                        if tx.send(sse::event(None, &tag(list_changed_notification(&c.kind)))).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    });
    sse::sse_headers(Response::new(body))
}

/// Add the tasks capability (2025-11-25) for scenarios that serve legacy tasks, or the tasks
/// extension (2026), which every instance serves (its fixture tools are in every catalogue).
fn with_tasks(mut caps: Value, instance: &Instance, era: Era) -> Value {
    match era {
        Era::Legacy if instance.scenario.supports_tasks() => {
            caps["tasks"] =
                json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } })
        }
        Era::Legacy => {}
        Era::Modern => caps["extensions"] = json!({ crate::tasks::EXTENSION: {} }),
    }
    if instance
        .scenario
        .honours_idempotency_keys(&instance.state.params)
    {
        // SEP-3182's shape (a closed draft): say so, so a client may rely on it.
        caps["tools"]["idempotency"] = json!({});
    }
    caps
}

fn server_info() -> Value {
    json!({ "name": "mcp-triage-kitchen", "title": "mcp-triage kitchen (fault-injection MCP server)", "version": env!("CARGO_PKG_VERSION") })
}

fn instructions(instance: &Instance) -> String {
    format!(
        "mcp-triage kitchen, scenario `{}`: {} Call `run_configured_test_scenario` to exercise it.",
        instance.scenario.info().id,
        instance.scenario.info().summary
    )
}

fn initialize(req: Req) -> Response<Body> {
    let Some(id) = req.id.clone() else {
        return rpc_error(
            400,
            None,
            protocol::INVALID_REQUEST,
            "initialize must be a request",
            None,
        );
    };
    let requested = req
        .params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = if protocol::LEGACY_VERSIONS.contains(&requested) {
        requested
    } else {
        protocol::LEGACY_VERSIONS[0]
    };
    let session_id = req.shared.new_session_id();
    let session = Arc::new(Session::new(
        session_id.clone(),
        version.to_string(),
        req.params.get("capabilities").cloned().unwrap_or(json!({})),
        req.params.get("clientInfo").cloned().unwrap_or(Value::Null),
    ));
    schedule_session_timeline(&session, &req.instance);
    req.shared.insert_session(session, req.instance.clone());
    let result = json!({
        "protocolVersion": version,
        "capabilities": with_tasks(server_capabilities(Era::Legacy), &req.instance, Era::Legacy),
        "serverInfo": server_info(),
        "instructions": instructions(&req.instance),
    });
    let msg = protocol::result_response(&id, result);
    let mut r = if req.response_mode() == ResponseMode::Sse {
        sse::sse_headers(Response::new(Body::from(sse::event(None, &msg))))
    } else {
        sse::json_response(200, &msg)
    };
    set_header(&mut r, "mcp-session-id", &session_id);
    r
}

async fn modern(req: Req, is_response: bool) -> Response<Body> {
    let id = req.id.as_ref();
    let bad = |code: i64, m: &str| rpc_error(400, id, code, m, None);
    let Some(hv) = header_str(&req.headers, "mcp-protocol-version") else {
        return bad(
            protocol::HEADER_MISMATCH,
            "Missing MCP-Protocol-Version header",
        );
    };
    if is_response {
        return bad(
            protocol::INVALID_REQUEST,
            "Clients must not send JSON-RPC responses in 2026-07-28",
        );
    }
    let meta = req.params.get("_meta");
    let missing: Vec<&str> = [
        protocol::META_PROTOCOL_VERSION,
        protocol::META_CLIENT_CAPABILITIES,
    ]
    .into_iter()
    .filter(|k| meta.and_then(|m| m.get(*k)).is_none())
    .collect();
    if !missing.is_empty() {
        return bad(
            protocol::INVALID_PARAMS,
            &format!("Invalid params: missing _meta keys: {}", missing.join(", ")),
        );
    }
    let mv = meta
        .and_then(|m| m.get(protocol::META_PROTOCOL_VERSION))
        .and_then(Value::as_str)
        .unwrap_or("");
    if mv != hv {
        return bad(
            protocol::HEADER_MISMATCH,
            &format!("Header mismatch: MCP-Protocol-Version header value '{hv}' does not match _meta protocolVersion '{mv}'"),
        );
    }
    if !protocol::MODERN_VERSIONS.contains(&hv) {
        return rpc_error(
            400,
            id,
            protocol::UNSUPPORTED_VERSION,
            "Unsupported protocol version",
            Some(json!({ "supported": protocol::MODERN_VERSIONS, "requested": hv })),
        );
    }
    if req.id.is_none() {
        return empty(202);
    }
    let method = req.method.as_deref().unwrap_or("");
    match header_str(&req.headers, "mcp-method") {
        None => return bad(protocol::HEADER_MISMATCH, "Header mismatch: missing Mcp-Method header"),
        Some(m) if m != method => {
            return bad(
                protocol::HEADER_MISMATCH,
                &format!("Header mismatch: Mcp-Method header value '{m}' does not match body value '{method}'"),
            )
        }
        _ => {}
    }
    let name_source = match method {
        "tools/call" | "prompts/get" => req.params.get("name").and_then(Value::as_str),
        "resources/read" => req.params.get("uri").and_then(Value::as_str),
        // SEP-2663 "Routing Headers": Mcp-Name carries the taskId, so intermediaries can
        // route a task's requests to the server holding it.
        "tasks/get" | "tasks/update" | "tasks/cancel" => {
            req.params.get("taskId").and_then(Value::as_str)
        }
        _ => None,
    };
    if let Some(body_name) = name_source {
        match header_str(&req.headers, "mcp-name").map(protocol::decode_header_value) {
            None => return bad(protocol::HEADER_MISMATCH, "Header mismatch: missing Mcp-Name header"),
            Some(None) => return bad(protocol::HEADER_MISMATCH, "Header mismatch: Mcp-Name header is not valid base64"),
            Some(Some(h)) if h != body_name => {
                return bad(
                    protocol::HEADER_MISMATCH,
                    &format!("Header mismatch: Mcp-Name header value '{h}' does not match body value '{body_name}'"),
                )
            }
            _ => {}
        }
    }
    if method == "tools/call" {
        if let Some(def) = req
            .tool
            .as_deref()
            .and_then(|t| catalogue::tool(&req.instance, &req.clock, t))
        {
            if let Err(m) = check_param_headers(
                &def,
                req.params.get("arguments").unwrap_or(&Value::Null),
                &req.headers,
            ) {
                return bad(protocol::HEADER_MISMATCH, &m);
            }
        }
    }
    dispatch(req).await
}

/// `Mcp-Param-{Name}` headers for input properties annotated `x-mcp-header`.
fn check_param_headers(def: &Value, args: &Value, headers: &HeaderMap) -> Result<(), String> {
    let Some(props) = def["inputSchema"]["properties"].as_object() else {
        return Ok(());
    };
    for (prop, schema) in props {
        let Some(hname) = schema.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let header_name = format!("mcp-param-{}", hname.to_ascii_lowercase());
        let expected = args.get(prop).and_then(protocol::header_form_of);
        let got = header_str(headers, &header_name).map(protocol::decode_header_value);
        match (expected, got) {
            (None, None) => {}
            (Some(_), None) => return Err(format!("Header mismatch: missing Mcp-Param-{hname} header")),
            (None, Some(_)) => return Err(format!("Header mismatch: Mcp-Param-{hname} header present but argument '{prop}' is absent")),
            (Some(_), Some(None)) => return Err(format!("Header mismatch: Mcp-Param-{hname} header is not valid base64")),
            (Some(e), Some(Some(g))) if e != g => {
                return Err(format!("Header mismatch: Mcp-Param-{hname} header value '{g}' does not match body value '{e}'"))
            }
            _ => {}
        }
    }
    Ok(())
}

const CACHEABLE: &[&str] = &[
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// Add the modern-era result members (and let the scenario reshape).
fn finish_result(req: &Req, method: &str, mut result: Value) -> Value {
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

fn not_found_status(era: Era) -> u16 {
    match era {
        Era::Modern => 404,
        Era::Legacy => 200,
    }
}

/// A 200 answer to a request that emits nothing before its response: one JSON body, or, when
/// the server or the scenario is set to `sse`, a one-event SSE stream. The reference
/// servers (TS SDK) stream every POST response, and a client's SSE parser is only exercised
/// if the kitchen can do the same for plain methods such as `tools/list`; `auto` keeps JSON.
fn reply_ok(req: &Req, msg: Value) -> Response<Body> {
    if req.response_mode() == ResponseMode::Sse {
        sse::sse_headers(Response::new(Body::from(sse::event(None, &msg))))
    } else {
        sse::json_response(200, &msg)
    }
}

/// Answer a JSON-RPC request.
async fn dispatch(req: Req) -> Response<Body> {
    let id = req.id.clone().unwrap_or(Value::Null);
    let method = req.method.clone().unwrap_or_default();
    if let Some(reply) = req.instance.scenario.handle_method(&req.wire_cx()) {
        return match reply {
            MethodReply::Result(r) => {
                let r = finish_result(&req, &method, r);
                reply_ok(&req, protocol::result_response(&id, r))
            }
            MethodReply::Error(code, m) => rpc_error(200, Some(&id), code, &m, None),
        };
    }
    let legacy = req.era == Era::Legacy;
    let result: Result<Value, (u16, i64, String)> = match method.as_str() {
        "tools/call" => return tools_call(req).await,
        "tasks/result" if legacy && req.instance.scenario.supports_tasks() => {
            task_result(&req).await
        }
        "ping" if legacy => Ok(json!({})),
        "tasks/get" | "tasks/update" | "tasks/cancel" if !legacy => {
            match crate::tasks::handle(&req.instance.state.ext_tasks, &method, &req.params) {
                Ok(r) => Ok(r),
                Err((status, code, m, data)) => {
                    return rpc_error(status, Some(&id), code, &m, data)
                }
            }
        }
        "server/discover" if !legacy => Ok(json!({
            "supportedVersions": protocol::MODERN_VERSIONS,
            "capabilities": with_tasks(server_capabilities(Era::Modern), &req.instance, Era::Modern),
            "instructions": instructions(&req.instance),
        })),
        "tools/list" => Ok(json!({ "tools": catalogue::tools(&req.instance, &req.clock) })),
        "resources/list" => Ok(json!({ "resources": catalogue::resources() })),
        "subscriptions/listen" if !legacy => return listen(&req),
        "resources/templates/list" => {
            Ok(json!({ "resourceTemplates": catalogue::resource_templates() }))
        }
        "resources/read" => {
            let uri = req.params.get("uri").and_then(Value::as_str).unwrap_or("");
            match catalogue::read_resource(&req.instance, uri) {
                Ok(r) => Ok(r),
                Err((c, m)) => {
                    return rpc_error(
                        200,
                        Some(&id),
                        c,
                        &m,
                        Some(catalogue::resource_not_found_data(uri)),
                    )
                }
            }
        }
        "resources/subscribe" | "resources/unsubscribe" if legacy => {
            let uri = req
                .params
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if let Some(s) = &req.session {
                let mut subs = s.subscriptions.lock().expect("subs lock");
                if method == "resources/subscribe" {
                    subs.insert(uri);
                } else {
                    subs.remove(&uri);
                }
            }
            Ok(json!({}))
        }
        "prompts/list" => Ok(json!({ "prompts": catalogue::prompts() })),
        "prompts/get"
            if req.params.get("name").and_then(Value::as_str)
                == Some(crate::fixtures_2026::MRTR_PROMPT) =>
        {
            if !legacy {
                return match crate::fixtures_2026::mrtr_prompt(&req.params) {
                    Ok(r) => {
                        let r = finish_result(&req, &method, r);
                        reply_ok(&req, protocol::result_response(&id, r))
                    }
                    Err(input_requests) => {
                        let binding = format!("{}|prompt", req.instance.key);
                        let token = req.shared.sign_state(
                            &binding,
                            &json!({ "prompt": crate::fixtures_2026::MRTR_PROMPT }),
                        );
                        req.trace.note("input_required (MRTR, prompts/get)");
                        let r = finish_result(
                            &req,
                            &method,
                            json!({ "resultType": "input_required", "inputRequests": input_requests, "requestState": token }),
                        );
                        reply_ok(&req, protocol::result_response(&id, r))
                    }
                };
            }
            Err((
                200,
                protocol::INVALID_PARAMS,
                "Invalid params: this prompt needs input_required (protocol 2026-07-28)".into(),
            ))
        }
        "prompts/get" => {
            let name = req.params.get("name").and_then(Value::as_str).unwrap_or("");
            catalogue::get_prompt(name, req.params.get("arguments").unwrap_or(&Value::Null))
                .map_err(|(c, m)| (200, c, m))
        }
        "completion/complete" => Ok(catalogue::complete(&req.params)),
        "logging/setLevel" if legacy => {
            let level = req
                .params
                .get("level")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if let Some(s) = &req.session {
                *s.log_level.lock().expect("level lock") = level;
            }
            Ok(json!({}))
        }
        _ => Err((
            not_found_status(req.era),
            protocol::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )),
    };
    match result {
        Ok(r) => {
            let r = finish_result(&req, &method, r);
            reply_ok(&req, protocol::result_response(&id, r))
        }
        Err((status, code, m)) => rpc_error(status, Some(&id), code, &m, None),
    }
}

/// 2025-11-25 `tasks/result`: the underlying call's result once the task is terminal; for a
/// working task the response waits until it completes (bounded by its `ttl`).
async fn task_result(req: &Req) -> Result<Value, (u16, i64, String)> {
    use crate::scenarios::tasks_deferred::live_task;
    let id = req
        .params
        .get("taskId")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let unknown = || {
        (
            200,
            protocol::INVALID_PARAMS,
            format!("Invalid params: unknown or expired taskId {id:?}"),
        )
    };
    let now = crate::journal::now_ms();
    let t = live_task(&req.instance.state, &id, now).ok_or_else(unknown)?;
    if t.cancelled {
        return Err((
            200,
            protocol::INVALID_REQUEST,
            format!("Task {id:?} was cancelled"),
        ));
    }
    if now < t.ready_at_ms {
        req.trace
            .note("tasks/result waits for the task to complete");
        tokio::time::sleep(std::time::Duration::from_millis(t.ready_at_ms - now)).await;
    }
    let t = live_task(&req.instance.state, &id, crate::journal::now_ms()).ok_or_else(unknown)?;
    if t.cancelled {
        return Err((
            200,
            protocol::INVALID_REQUEST,
            format!("Task {id:?} was cancelled"),
        ));
    }
    let mut r = t.result;
    r["_meta"] = json!({ "io.modelcontextprotocol/related-task": { "taskId": id } });
    Ok(r)
}

fn state_binding(instance: &Instance, tool: &str) -> String {
    format!("{}|{tool}", instance.key)
}

async fn tools_call(req: Req) -> Response<Body> {
    let id = req.id.clone().unwrap_or(Value::Null);
    let Some(name) = req.tool.clone() else {
        return rpc_error(
            200,
            Some(&id),
            protocol::INVALID_PARAMS,
            "Invalid params: tools/call needs a tool name",
            None,
        );
    };
    if catalogue::tool(&req.instance, &req.clock, &name).is_none() {
        return rpc_error(
            200,
            Some(&id),
            protocol::INVALID_PARAMS,
            &format!("Unknown tool: {name}"),
            None,
        );
    }
    let binding = state_binding(&req.instance, &name);
    let request_state = match req.params.get("requestState") {
        None | Some(Value::Null) => None,
        Some(Value::String(tok)) => match req.shared.verify_state(&binding, tok) {
            Some(v) => Some(v),
            None => {
                req.trace
                    .note("rejected requestState that failed verification");
                return rpc_error(
                    200,
                    Some(&id),
                    protocol::INVALID_PARAMS,
                    "Invalid params: requestState failed verification",
                    None,
                );
            }
        },
        Some(_) => {
            return rpc_error(
                200,
                Some(&id),
                protocol::INVALID_PARAMS,
                "Invalid params: requestState must be a string",
                None,
            )
        }
    };
    if req.era == Era::Modern {
        if let Some(support) = crate::fixtures_tasks::task_support(&name) {
            if let Some(r) = task_call(&req, &name, support, &binding) {
                return r;
            }
        }
    }
    if let Some(stored) = repeated_key(&req, &id) {
        return stored;
    }
    let meta = req.params.get("_meta");
    let (caps, version, log_level) = match (req.era, &req.session) {
        (Era::Legacy, Some(s)) => (
            s.client_capabilities.clone(),
            s.protocol_version.clone(),
            s.log_level.lock().expect("level lock").clone(),
        ),
        _ => (
            meta.and_then(|m| m.get(protocol::META_CLIENT_CAPABILITIES))
                .cloned()
                .unwrap_or(json!({})),
            protocol::MODERN_VERSION.to_string(),
            meta.and_then(|m| m.get(protocol::META_LOG_LEVEL))
                .and_then(Value::as_str)
                .map(str::to_owned),
        ),
    };
    let mode = if req.instance.scenario.forced_sse() {
        ResponseMode::Sse
    } else {
        req.response_mode()
    };
    let close_after_priming = req.era == Era::Legacy
        && (name == "test_reconnection"
            || (name == "run_configured_test_scenario"
                && req.instance.scenario.close_after_priming()));
    let fault = req
        .instance
        .scenario
        .tool_fault(&req.instance.state.params, req.post);
    // A cut after execution is a fault of the SSE stream, and a legacy input round is a
    // server request on it: both need a stream whatever the response mode.
    let mode = if close_after_priming
        || matches!(fault, ToolFault::CutAfterExecution { .. })
        || (fault == ToolFault::InputRound && req.era == Era::Legacy)
    {
        ResponseMode::Sse
    } else {
        mode
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let invocation = req.instance.state.bump(&name);
    let cx = ToolCx {
        scenario: req.instance.scenario.info(),
        instance: req.instance.state.clone(),
        server_request_timeout: req.shared.options.server_request_timeout,
        session: req.session.clone(),
        era: req.era,
        protocol_version: version.clone(),
        client_capabilities: caps,
        tool: name.clone(),
        args: req
            .params
            .get("arguments")
            .cloned()
            .filter(|a| !a.is_null())
            .unwrap_or(json!({})),
        request_id: id.clone(),
        progress_token: meta.and_then(|m| m.get("progressToken")).cloned(),
        log_level,
        input_responses: req.params.get("inputResponses").cloned(),
        request_state,
        headers: req.headers.clone(),
        out: Emitter::new(tx.clone(), mode != ResponseMode::Json),
        invocation,
        trace: req.trace.clone(),
    };
    let ask_cx = (fault == ToolFault::InputRound).then(|| cx.clone());
    let Some(body) = catalogue::call(&name, req.instance.scenario, cx) else {
        return rpc_error(
            200,
            Some(&id),
            protocol::INVALID_PARAMS,
            &format!("Unknown tool: {name}"),
            None,
        );
    };
    let fut = match ask_cx {
        Some(acx) => input_round(acx, body),
        None => {
            req.trace.mark_executed();
            body
        }
    };
    let cut = match fault {
        ToolFault::CutAfterExecution { mid_event } => Some(mid_event),
        _ => None,
    };
    let era = req.era;
    let plan_session = if era == Era::Legacy {
        req.session.clone()
    } else {
        None
    };
    let retry_ms = req.shared.options.sse_retry_ms;
    let finish_req = Req { msg: None, ..req };
    // Most tool bodies finish without waiting: poll once here and only give the body a task
    // of its own when it has to wait (a spawned task per call was a measurable share of a
    // call's cost). Either way the body runs to completion unless it watches
    // `Emitter::closed()`, as before.
    let mut fut = fut;
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(fut.as_mut().poll(cx))).await;
    match (first, cut) {
        (std::task::Poll::Ready(reply), None) => {
            let _ = tx.send(tool_out(reply, &finish_req, &id, &binding));
        }
        (std::task::Poll::Ready(reply), Some(mid_event)) => {
            let out = tool_out(reply, &finish_req, &id, &binding);
            tokio::spawn(deliver_cut(tx, out, mid_event, finish_req.trace.clone()));
        }
        (std::task::Poll::Pending, cut) => {
            let id = id.clone();
            tokio::spawn(async move {
                let reply = fut.await;
                let out = tool_out(reply, &finish_req, &id, &binding);
                match cut {
                    None => {
                        let _ = tx.send(out);
                    }
                    Some(mid_event) => {
                        deliver_cut(tx, out, mid_event, finish_req.trace.clone()).await
                    }
                }
            });
        }
    }
    let priming = version.as_str() >= "2025-11-25" && era == Era::Legacy;
    let plan = SsePlan {
        request_id: Some(id.clone()),
        session: plan_session,
        priming,
        close_after_priming,
        retry_ms,
    };
    sse::render(rx, mode, plan).await
}

/// A 2026 `tools/call` of a task fixture tool (`crate::fixtures_tasks`): with the tasks
/// extension declared on the request, an MRTR round when the tool asks one first, then a
/// `CreateTaskResult`; without it, `-32021` for a tool that only runs as a task. `None`: run
/// the call synchronously (an optional tool for a client without the extension).
fn task_call(
    req: &Req,
    name: &str,
    support: crate::fixtures_tasks::TaskSupport,
    binding: &str,
) -> Option<Response<Body>> {
    let id = req.id.clone().unwrap_or(Value::Null);
    if !crate::tasks::declares_extension(&req.params) {
        if support == crate::fixtures_tasks::TaskSupport::Optional {
            return None;
        }
        req.trace
            .note("tools/call of a task-only tool without the tasks extension: -32021");
        return Some(rpc_error(
            400,
            Some(&id),
            protocol::MISSING_CAPABILITY,
            &format!("Missing required client capability: {name} runs only as a task and needs the {} extension in _meta clientCapabilities.extensions", crate::tasks::EXTENSION),
            Some(crate::tasks::missing_extension_data()),
        ));
    }
    let answers = match crate::fixtures_tasks::mrtr_prelude(name, req.params.get("inputResponses"))
    {
        Ok(a) => a,
        Err(reply) => return Some(reply_out(req, tool_out(reply, req, &id, binding))),
    };
    req.instance.state.bump(name);
    let args = req
        .params
        .get("arguments")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or(json!({}));
    let ttl = args["ttlMs"]
        .as_u64()
        .filter(|t| *t > 0 && name == "slow_compute")
        .unwrap_or(crate::tasks::DEFAULT_TTL_MS);
    let job = crate::fixtures_tasks::job(name, args, answers)?;
    req.trace.mark_executed();
    let mut r = crate::tasks::create(
        &req.instance.state.ext_tasks,
        ttl,
        crate::tasks::DEFAULT_POLL_MS,
        job,
    );
    req.trace.note(format!(
        "created task {} (tasks extension)",
        r["taskId"].as_str().unwrap_or("")
    ));
    r["resultType"] = json!("task");
    let r = finish_result(req, "tools/call", r);
    Some(reply_ok(req, protocol::result_response(&id, r)))
}

/// The call's idempotency key and arguments hash, when its scenario honours keys.
fn honoured_key(req: &Req) -> Option<(String, String)> {
    let scenario = req.instance.scenario;
    if !scenario.honours_idempotency_keys(&req.instance.state.params) {
        return None;
    }
    let key = crate::idempotency::key_of(&req.params, &req.headers)?;
    let args = req.params.get("arguments").cloned().unwrap_or(json!({}));
    Some((key, journal::arguments_hash(&args)))
}

/// A call repeating an honoured idempotency key: the stored result, without running the
/// tool again (or a refusal when the key comes with other arguments). `None`: run the tool.
fn repeated_key(req: &Req, id: &Value) -> Option<Response<Body>> {
    let (key, hash) = honoured_key(req)?;
    let seen = req
        .instance
        .state
        .idempotency
        .lock()
        .expect("idempotency lock")
        .seen(&key, &hash);
    match seen {
        crate::idempotency::Seen::New => {
            req.trace.set_deduplicated(false);
            None
        }
        crate::idempotency::Seen::Repeat(result) => {
            req.trace.set_deduplicated(true);
            req.trace
                .note("idempotency key repeated: the stored result, the tool did not run again");
            Some(reply_ok(req, protocol::result_response(id, result)))
        }
        crate::idempotency::Seen::OtherArguments => Some(rpc_error(
            200,
            Some(id),
            protocol::INVALID_PARAMS,
            "Invalid params: this idempotency key was used with other arguments",
            None,
        )),
    }
}

/// Send a finished [`Out`] as a plain 200 answer (or the error status it carries).
fn reply_out(req: &Req, out: Out) -> Response<Body> {
    match out {
        Out::Final(200, msg) => reply_ok(req, msg),
        Out::Final(status, msg) => sse::json_response(status, &msg),
        _ => empty(500),
    }
}

/// [`ToolFault::InputRound`]: ask for a confirmation (MRTR round in 2026-07-28, an
/// `elicitation/create` on the stream in legacy), then run `body`. Clients without the
/// `elicitation` capability, or legacy requests without a session, get the plain call: the
/// fault is skipped (and noted) rather than turned into an error the client could not avoid.
fn input_round(
    cx: ToolCx,
    body: futures_util::future::BoxFuture<'static, ToolReply>,
) -> futures_util::future::BoxFuture<'static, ToolReply> {
    Box::pin(async move {
        let possible =
            cx.has_capability("elicitation") && (cx.era == Era::Modern || cx.session.is_some());
        if !possible {
            cx.trace
                .note("chaos input round skipped: no elicitation capability or session");
            cx.trace.mark_executed();
            return body.await;
        }
        let params = json!({
            "mode": "form",
            "message": format!("chaos.mix input round: confirm the call of {}", cx.tool),
            "requestedSchema": { "type": "object", "properties": {
                "confirm": { "type": "boolean", "default": true } } },
        });
        let state = json!({ "chaos": "input_required" });
        match cx
            .ask(
                CHAOS_INPUT_KEY,
                "elicitation/create",
                params,
                "elicitation",
                state,
            )
            .await
        {
            Asked::Answer(a) => {
                let action = a["action"].as_str().unwrap_or("?");
                cx.trace
                    .note(format!("chaos input round answered ({action})"));
                cx.trace.mark_executed();
                body.await
            }
            Asked::Pending(reply) => reply,
            Asked::Failed(e) => ToolReply::error_text(format!(
                "chaos.mix input round failed, the tool did not run: {e}"
            )),
        }
    })
}

pub use crate::plugin::reply::CUT_STREAM_PREFIX;

/// Key of the chaos input round in `inputRequests` / `inputResponses`.
pub const CHAOS_INPUT_KEY: &str = "chaos_confirm";

/// [`ToolFault::CutAfterExecution`]: the tool has run; lose its response. `mid_event` sends
/// the first half of the response event and breaks the connection; otherwise the stream ends
/// cleanly after a keepalive comment, without the response.
async fn deliver_cut(
    tx: mpsc::UnboundedSender<Out>,
    out: Out,
    mid_event: bool,
    trace: std::sync::Arc<Trace>,
) {
    match out {
        Out::Final(_, msg) if mid_event => {
            trace.note("tool executed; connection cut mid-response (chaos sse_cut)");
            let full = sse::event(None, &msg);
            let _ = tx.send(Out::Raw(full.slice(..full.len() / 2)));
            // Let the partial bytes reach the socket before the cut.
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            let _ = tx.send(Out::Abort);
        }
        Out::Final(..) => {
            trace.note("tool executed; stream ended without response (chaos sse_cut)");
            // The stream has begun (a keepalive comment, as servers send while a tool runs):
            // a 200 with an empty body would be a missing response, not a cut stream.
            let _ = tx.send(Out::Raw(Bytes::from_static(CUT_STREAM_PREFIX.as_bytes())));
            let _ = tx.send(Out::End);
        }
        // Already a cut of the tool's own making.
        other => {
            let _ = tx.send(other);
        }
    }
}

/// The response message for a tool body's reply.
fn tool_out(reply: ToolReply, req: &Req, id: &Value, binding: &str) -> Out {
    match reply {
        ToolReply::Result(r) => {
            let r = finish_result(req, "tools/call", r);
            if let Some((key, hash)) = honoured_key(req) {
                // Stored before it is sent: a cut after execution loses the answer, not the
                // result a repeat of the key is given.
                let mut store = req
                    .instance
                    .state
                    .idempotency
                    .lock()
                    .expect("idempotency lock");
                store.store(&key, &hash, &r);
            }
            Out::Final(200, protocol::result_response(id, r))
        }
        ToolReply::RpcError {
            status,
            code,
            message,
            data,
        } => Out::Final(
            status,
            protocol::error_response(Some(id), code, &message, data),
        ),
        ToolReply::InputRequired {
            input_requests,
            state,
        } if req.era == Era::Modern => {
            let token = req.shared.sign_state(binding, &state);
            req.trace.note("input_required (MRTR)");
            req.trace.issue(&token, &input_requests);
            let r = finish_result(
                req,
                "tools/call",
                json!({ "resultType": "input_required", "inputRequests": input_requests, "requestState": token }),
            );
            Out::Final(200, protocol::result_response(id, r))
        }
        ToolReply::InputRequired { .. } => {
            let r = json!({ "content": [{ "type": "text", "text": "input_required results need protocol 2026-07-28" }], "isError": true });
            Out::Final(200, protocol::result_response(id, r))
        }
        ToolReply::EndStream => {
            req.trace.note("stream ended without response");
            Out::End
        }
        ToolReply::Abort => {
            req.trace.note("connection cut mid-response");
            Out::Abort
        }
    }
}

/// GET on the endpoint: the legacy standalone stream, or a resumption with `Last-Event-ID`.
fn get_stream(
    shared: &Arc<Shared>,
    session_header: Option<&str>,
    session: Option<(Arc<Session>, Arc<Instance>)>,
    modern_header: bool,
    headers: &HeaderMap,
) -> Response<Body> {
    if modern_header || session_header.is_none() {
        return method_not_allowed();
    }
    let Some((session, session_instance)) = session else {
        return rpc_error(
            404,
            None,
            protocol::SESSION_NOT_FOUND,
            "Session not found",
            None,
        );
    };
    let accepts_sse = header_str(headers, "accept")
        .is_some_and(|a| a.contains("text/event-stream") || a.contains("*/*"));
    if !accepts_sse {
        return rpc_error(
            406,
            None,
            protocol::INVALID_REQUEST,
            "Not Acceptable: GET needs Accept: text/event-stream",
            None,
        );
    }
    let resume = header_str(headers, "last-event-id").and_then(|l| {
        let (a, b) = l.split_once('-')?;
        Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?))
    });
    let mut r = match resume.and_then(|(stream, seq)| session.stream(stream).map(|log| (log, seq)))
    {
        Some((log, seq)) if log.is_gone_after(seq) => {
            let mut r = rpc_error(
                410,
                None,
                protocol::INVALID_REQUEST,
                "Stream gone: it ended without its response, which will not come (re-issue the request)",
                None,
            );
            if let Some(id) = log.request_id() {
                r.extensions_mut().insert(answer::ResumedRequest(id));
            }
            r
        }
        Some((log, seq)) => {
            let start = log.position_after(seq);
            let request = log.request_id();
            let mut r = sse::sse_headers(Response::new(sse::reader(log, start, true, None)));
            if let Some(id) = request {
                // Journaled as the answer the resumed call finally got.
                r.extensions_mut().insert(answer::ResumedRequest(id));
            }
            r
        }
        None => standalone(shared, &session, &session_instance),
    };
    set_header(&mut r, "mcp-session-id", &session.id);
    r
}

/// The legacy standalone GET stream: the session's own notifications (its
/// `catalog.mutation` timeline) and the instance's changes (list-change hooks; resource
/// updates for URIs the session `resources/subscribe`d).
fn standalone(
    _shared: &Arc<Shared>,
    session: &Arc<Session>,
    instance: &Instance,
) -> Response<Body> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    *session.get_stream.lock().expect("get stream lock") = Some(tx);
    let mut events = instance.state.listen();
    let weak = Arc::downgrade(session);
    let s = async_stream_body(move |yield_tx| async move {
        let _ = yield_tx.send(Bytes::from_static(b": kitchen standalone stream\n\n"));
        loop {
            let msg = tokio::select! {
                _ = yield_tx.closed() => break,
                v = rx.recv() => match v {
                    Some(v) => v,
                    None => break,
                },
                ev = events.recv() => match ev {
                    Ok(c) if c.scope == ChangeScope::Instance => {
                        let Some(s) = weak.upgrade() else { break };
                        let wanted = match &c.kind {
                            ChangeKind::ResourceUpdated(uri) => {
                                s.subscriptions.lock().expect("subs lock").contains(uri)
                            }
                            _ => true,
                        };
                        if !wanted {
                            continue;
                        }
                        list_changed_notification(&c.kind)
                    }
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                },
            };
            if yield_tx.send(sse::event(None, &msg)).is_err() {
                break;
            }
        }
    });
    sse::sse_headers(Response::new(s))
}

/// A body fed by a producer task through a channel.
fn async_stream_body<F, Fut>(producer: F) -> Body
where
    F: FnOnce(mpsc::UnboundedSender<Bytes>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    tokio::spawn(producer(tx));
    let s = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<Bytes, std::io::Error>(b), rx))
    });
    Body::from_stream(s)
}

/// Whether reading a request body failed on the size limit, not on the body itself: a bad
/// chunked encoding (or a connection cut mid-body) is a malformed request (400), not a large
/// one (413).
pub(crate) fn body_over_limit(e: &axum::Error) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if err.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cur = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_params_are_typed_by_schema() {
        let (p, tag) = parse_query(
            "errors.http_status_sequence",
            Some("statusCodes=%5B503%2C200%5D&instance=a"),
        )
        .unwrap();
        assert_eq!(p, json!({ "statusCodes": [503, 200] }));
        assert_eq!(tag.as_deref(), Some("a"));
        let (p, _) = parse_query("errors.rate_limited", Some("retryAfter=2")).unwrap();
        assert_eq!(p, json!({ "retryAfter": "2" }));
        let (p, _) = parse_query(
            "errors.tool_error",
            Some("params=%7B%22onInvocation%22%3A2%7D"),
        )
        .unwrap();
        assert_eq!(p, json!({ "onInvocation": 2 }));
        assert!(parse_query("baseline", Some("params=[1]")).is_err());
    }
}
