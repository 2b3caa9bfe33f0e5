//! `tools/call`: the tool body on its own task, the scenario's fault around it (a cut
//! stream, an input round), idempotency keys, task-augmented calls and MRTR state.
//!
//! `dispatch` hands every `tools/call` here because it is the one method whose answer a
//! scenario bends after the body has run (a lost response, an extra input round, a repeat
//! served from the idempotency store), so the body and the faults around it are kept
//! together, away from the plain method table.

use axum::body::Body;
use axum::http::Response;
use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::catalogue;
use crate::instance::Instance;
use crate::journal;
use crate::plugin::reply::CUT_STREAM_PREFIX;
use crate::plugin::{Asked, Emitter, Out, ToolCx, ToolFault, ToolReply};
use crate::protocol::{self, Era};
use crate::sse::{self, SsePlan};
use crate::state::ResponseMode;
use crate::trace::Trace;

use super::request::{finish_result, reply_ok, Req};
use super::respond::{empty, rpc_error};

/// What a signed `requestState` is bound to: this instance and tool, so a state issued by
/// one cannot be replayed against another.
pub(super) fn state_binding(instance: &Instance, tool: &str) -> String {
    format!("{}|{tool}", instance.key)
}

/// Answer a `tools/call`: check the call, answer it from a task or a repeated idempotency
/// key when either applies, else run the tool body under the scenario's fault and stream
/// what it says.
pub(super) async fn tools_call(req: Req) -> Response<Body> {
    let id = req.id.clone().unwrap_or(Value::Null);
    let (name, binding, request_state) = match checked_call(&req, &id) {
        Ok(call) => call,
        Err(refused) => return *refused,
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
    let client = ClientSide::of(&req);
    let (mode, close_after_priming) = asked_mode(&req, &name);
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
    let out = Emitter::new(tx.clone(), mode != ResponseMode::Json);
    let plan = SsePlan {
        request_id: Some(id.clone()),
        session: (req.era == Era::Legacy)
            .then(|| req.session.clone())
            .flatten(),
        priming: client.version.as_str() >= "2025-11-25" && req.era == Era::Legacy,
        close_after_priming,
        retry_ms: req.shared.options.sse_retry_ms,
    };
    let cx = tool_cx(&req, &name, &id, client, request_state, out);
    let ask_cx = (fault == ToolFault::InputRound).then(|| cx.clone());
    let Some(body) = catalogue::call(&name, req.instance.scenario, cx) else {
        return unknown_tool(&req, &id, &name);
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
    let finish_req = Req { msg: None, ..req };
    if let ToolFault::StatusAfterExecution(status) = fault {
        // The body runs to its end (its side effects and idempotency store included), then
        // its answer is dropped for an empty status, as a gateway past its timeout does.
        let reply = fut.await;
        drop(tool_out(reply, &finish_req, &id, &binding));
        finish_req.trace.note(format!(
            "tool executed; its answer replaced by an empty {status} (chaos gateway_503)"
        ));
        return empty(status);
    }
    run_body(fut, cut, tx, finish_req, id, binding).await;
    sse::render(rx, mode, plan).await
}

/// The call's tool name, its state binding and its verified `requestState` (an MRTR
/// retry's), or the error answer (boxed: the rare path): no tool name, a tool the catalogue
/// does not list at this point of its timeline, or a state that is not a string or fails
/// verification.
fn checked_call(
    req: &Req,
    id: &Value,
) -> Result<(String, String, Option<Value>), Box<Response<Body>>> {
    let invalid = |m: &str| Box::new(rpc_error(200, Some(id), protocol::INVALID_PARAMS, m, None));
    let Some(name) = req.tool.clone() else {
        return Err(invalid("Invalid params: tools/call needs a tool name"));
    };
    // The task-only fixtures are not listed in the legacy era (`fixtures_tasks::legacy_view`).
    let legacy_task_only = req.era == Era::Legacy
        && crate::fixtures_tasks::task_support(&name)
            == Some(crate::fixtures_tasks::TaskSupport::Required);
    if legacy_task_only || catalogue::tool(&req.instance, &req.clock, &name).is_none() {
        return Err(Box::new(unknown_tool(req, id, &name)));
    }
    let binding = state_binding(&req.instance, &name);
    let request_state = match req.params.get("requestState") {
        None | Some(Value::Null) => None,
        Some(Value::String(tok)) => match req.shared.verify_state(&binding, tok) {
            Some(v) => Some(v),
            None => {
                req.trace
                    .note("rejected requestState that failed verification");
                return Err(invalid("Invalid params: requestState failed verification"));
            }
        },
        Some(_) => return Err(invalid("Invalid params: requestState must be a string")),
    };
    Ok((name, binding, request_state))
}

/// The answer for a name the catalogue does not (or no longer) list: `-32602 Unknown tool`,
/// as the released revisions say; with the common parameter `unknownToolAs: "isError"`, the
/// tool execution error draft SEP-2145 asks for instead (an `isError` result whose text is the
/// SEP's recommended `Unknown tool: <name>. Re-run tools/list and retry.`), so a client can be
/// tried on both forms of the same fault.
fn unknown_tool(req: &Req, id: &Value, name: &str) -> Response<Body> {
    if req.instance.state.params.str("unknownToolAs") == "isError" {
        req.trace
            .note("unknown tool answered as an isError result (draft SEP-2145)");
        let text = format!("Unknown tool: {name}. Re-run tools/list and retry.");
        let r = json!({ "content": [{ "type": "text", "text": text }], "isError": true });
        let r = finish_result(req, "tools/call", r);
        return reply_ok(req, protocol::result_response(id, r));
    }
    rpc_error(
        200,
        Some(id),
        protocol::INVALID_PARAMS,
        &format!("Unknown tool: {name}"),
        None,
    )
}

/// What the client said about itself for this call: from its legacy session, or from the
/// modern request's `_meta` (a modern request carries it every time).
struct ClientSide {
    capabilities: Value,
    version: String,
    log_level: Option<String>,
}

impl ClientSide {
    fn of(req: &Req) -> ClientSide {
        let meta = req.params.get("_meta");
        match (req.era, &req.session) {
            (Era::Legacy, Some(s)) => ClientSide {
                capabilities: s.client_capabilities.clone(),
                version: s.protocol_version.clone(),
                log_level: s.log_level.lock().expect("level lock").clone(),
            },
            _ => ClientSide {
                capabilities: meta
                    .and_then(|m| m.get(protocol::META_CLIENT_CAPABILITIES))
                    .cloned()
                    .unwrap_or(json!({})),
                version: protocol::MODERN_VERSION.to_string(),
                log_level: meta
                    .and_then(|m| m.get(protocol::META_LOG_LEVEL))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            },
        }
    }
}

/// The response mode the request and scenario ask for, and whether the legacy stream closes
/// after its priming event (the reconnection tests), before the tool fault has its say.
fn asked_mode(req: &Req, name: &str) -> (ResponseMode, bool) {
    let mode = if req.instance.scenario.forced_sse() {
        ResponseMode::Sse
    } else {
        req.response_mode()
    };
    let close_after_priming = req.era == Era::Legacy
        && (name == "test_reconnection"
            || (name == "run_configured_test_scenario"
                && req.instance.scenario.close_after_priming()));
    (mode, close_after_priming)
}

/// The tool body's context; counts the invocation of `name` on the instance.
fn tool_cx(
    req: &Req,
    name: &str,
    id: &Value,
    client: ClientSide,
    request_state: Option<Value>,
    out: Emitter,
) -> ToolCx {
    let meta = req.params.get("_meta");
    let invocation = req.instance.state.bump(name);
    ToolCx {
        scenario: req.instance.scenario.info(),
        instance: req.instance.state.clone(),
        server_request_timeout: req.shared.options.server_request_timeout,
        session: req.session.clone(),
        era: req.era,
        protocol_version: client.version,
        client_capabilities: client.capabilities,
        tool: name.to_string(),
        args: req
            .params
            .get("arguments")
            .cloned()
            .filter(|a| !a.is_null())
            .unwrap_or(json!({})),
        request_id: id.clone(),
        progress_token: meta.and_then(|m| m.get("progressToken")).cloned(),
        log_level: client.log_level,
        input_responses: req.params.get("inputResponses").cloned(),
        request_state,
        headers: req.headers.clone(),
        out,
        invocation,
        trace: req.trace.clone(),
    }
}

/// Run the tool body and send its answer on `tx`, lost as [`deliver_cut`] says when `cut`
/// is set. Most tool bodies finish without waiting: poll once here and only give the body a
/// task of its own when it has to wait (a spawned task per call was a measurable share of a
/// call's cost). Either way the body runs to completion unless it watches
/// `Emitter::closed()`.
async fn run_body(
    mut fut: futures_util::future::BoxFuture<'static, ToolReply>,
    cut: Option<bool>,
    tx: mpsc::UnboundedSender<Out>,
    finish_req: Req,
    id: Value,
    binding: String,
) {
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
}

/// A 2026 `tools/call` of a task fixture tool (`crate::fixtures_tasks`): with the tasks
/// extension declared on the request, an MRTR round when the tool asks one first, then a
/// `CreateTaskResult`; without it, `-32021` for a tool that only runs as a task. `None`: run
/// the call synchronously (an optional tool for a client without the extension).
pub(super) fn task_call(
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
pub(super) fn honoured_key(req: &Req) -> Option<(String, String)> {
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
pub(super) fn repeated_key(req: &Req, id: &Value) -> Option<Response<Body>> {
    let (key, hash) = honoured_key(req)?;
    let seen = req.instance.state.idempotency.seen(&key, &hash);
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
        crate::idempotency::Seen::TooLong(len) => Some(rpc_error(
            200,
            Some(id),
            protocol::INVALID_PARAMS,
            &format!(
                "Invalid params: the idempotency key is {len} bytes, over the {} this server accepts",
                crate::idempotency::MAX_KEY_BYTES
            ),
            None,
        )),
    }
}

/// Send a finished [`Out`] as a plain 200 answer (or the error status it carries).
pub(super) fn reply_out(req: &Req, out: Out) -> Response<Body> {
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
pub(super) fn input_round(
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

/// Key of the chaos input round in `inputRequests` / `inputResponses`.
pub const CHAOS_INPUT_KEY: &str = "chaos_confirm";

/// [`ToolFault::CutAfterExecution`]: the tool has run; lose its response. `mid_event` sends
/// the first half of the response event and breaks the connection; otherwise the stream ends
/// cleanly after a keepalive comment, without the response.
pub(super) async fn deliver_cut(
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
pub(super) fn tool_out(reply: ToolReply, req: &Req, id: &Value, binding: &str) -> Out {
    match reply {
        ToolReply::Result(r) => {
            let r = finish_result(req, "tools/call", r);
            if let Some((key, hash)) = honoured_key(req) {
                // Stored before it is sent: a cut after execution loses the answer, not the
                // result a repeat of the key is given.
                let stored = req.instance.state.idempotency.store(&key, &hash, &r);
                if let crate::idempotency::Stored::TooLarge(n) = stored {
                    req.trace.note(format!(
                        "idempotency key not stored: the result takes {n} bytes, over \
                         --idempotency-max-bytes; a repeat of the key runs the tool again"
                    ));
                }
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
