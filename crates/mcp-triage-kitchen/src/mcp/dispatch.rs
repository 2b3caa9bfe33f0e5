//! Method dispatch shared by both eras: the scenario's own methods first, then the
//! catalogue, tasks and prompts.
//!
//! A request reaches it once its era handler (`legacy` or `modern`) has accepted it, so
//! nothing here checks sessions or headers: this is the table of what each method answers.
//! `tools/call`, the one method with a fault around its body, is handed on to `tools_call`.

use axum::body::Body;
use axum::http::Response;
use serde_json::{json, Value};

use crate::catalogue;
use crate::plugin::MethodReply;
use crate::protocol::{self, Era};

use super::capabilities::{instructions, server_capabilities, with_tasks};
use super::request::{finish_result, not_found_status, reply_ok, Req};
use super::respond::rpc_error;
use super::streams::listen;
use super::tools_call::tools_call;

/// What a method answers before it is wrapped: a result, or `(HTTP status, code, message)`.
type Answered = Result<Value, (u16, i64, String)>;

/// Answer a JSON-RPC request: the scenario's own method first, then the kitchen's. Methods
/// that answer in their own way (`tools/call`, task and resource errors with data, the
/// `subscriptions/listen` stream, the MRTR prompt) return their response; the rest give a
/// result or an error that [`reply`] wraps.
pub(super) async fn dispatch(req: Req) -> Response<Body> {
    let id = req.id.clone().unwrap_or(Value::Null);
    let method = req.method.clone().unwrap_or_default();
    if let Some(reply) = req.instance.scenario.handle_method(&req.wire_cx()) {
        return match reply {
            MethodReply::Result(r) => reply_result(&req, &method, &id, r),
            MethodReply::Error(code, m) => rpc_error(200, Some(&id), code, &m, None),
        };
    }
    let legacy = req.era == Era::Legacy;
    let result: Answered = match method.as_str() {
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
        "tools/list" if legacy => Ok(json!({ "tools": crate::fixtures_tasks::legacy_view(
            catalogue::tools(&req.instance, &req.clock)
        ) })),
        "tools/list" => Ok(json!({ "tools": catalogue::tools(&req.instance, &req.clock) })),
        "resources/list" => Ok(json!({ "resources": catalogue::resources() })),
        "subscriptions/listen" if !legacy => return listen(&req),
        "resources/templates/list" => {
            Ok(json!({ "resourceTemplates": catalogue::resource_templates() }))
        }
        "resources/read" => match read_resource(&req, &id) {
            Ok(r) => Ok(r),
            Err(refused) => return *refused,
        },
        "resources/subscribe" | "resources/unsubscribe" if legacy => Ok(subscribe(&req, &method)),
        "prompts/list" => Ok(json!({ "prompts": catalogue::prompts() })),
        "prompts/get"
            if req.params.get("name").and_then(Value::as_str)
                == Some(crate::fixtures_2026::MRTR_PROMPT) =>
        {
            if !legacy {
                return mrtr_prompt(&req, &method, &id);
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
        "logging/setLevel" if legacy => Ok(set_log_level(&req)),
        _ => Err((
            not_found_status(req.era),
            protocol::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )),
    };
    reply(&req, &method, &id, result)
}

/// Wrap a method's [`Answered`]: a result finished for the era (its `resultType`, cache
/// hints), an error with its status.
fn reply(req: &Req, method: &str, id: &Value, result: Answered) -> Response<Body> {
    match result {
        Ok(r) => reply_result(req, method, id, r),
        Err((status, code, m)) => rpc_error(status, Some(id), code, &m, None),
    }
}

/// A result finished for the era and sent as a 200 answer.
fn reply_result(req: &Req, method: &str, id: &Value, r: Value) -> Response<Body> {
    let r = finish_result(req, method, r);
    reply_ok(req, protocol::result_response(id, r))
}

/// `resources/read`: the resource, or the not-found error with the URI in its data.
/// (The refusal is boxed: it is the rare path.)
fn read_resource(req: &Req, id: &Value) -> Result<Value, Box<Response<Body>>> {
    let uri = req.params.get("uri").and_then(Value::as_str).unwrap_or("");
    catalogue::read_resource(&req.instance, uri).map_err(|(c, m)| {
        Box::new(rpc_error(
            200,
            Some(id),
            c,
            &m,
            Some(catalogue::resource_not_found_data(uri)),
        ))
    })
}

/// Legacy `resources/subscribe` and `resources/unsubscribe`: the session's subscriptions
/// (a request without a session is answered all the same).
fn subscribe(req: &Req, method: &str) -> Value {
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
    json!({})
}

/// Legacy `logging/setLevel`: the level the session's tool calls log at.
fn set_log_level(req: &Req) -> Value {
    let level = req
        .params
        .get("level")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(s) = &req.session {
        *s.log_level.lock().expect("level lock") = level;
    }
    json!({})
}

/// The 2026 MRTR prompt (`crate::fixtures_2026::MRTR_PROMPT`): its messages once the
/// client's answers come with the request, else an `input_required` round whose signed
/// `requestState` is bound to this instance's prompt.
fn mrtr_prompt(req: &Req, method: &str, id: &Value) -> Response<Body> {
    match crate::fixtures_2026::mrtr_prompt(&req.params) {
        Ok(r) => reply_result(req, method, id, r),
        Err(input_requests) => {
            let binding = format!("{}|prompt", req.instance.key);
            let token = req.shared.sign_state(
                &binding,
                &json!({ "prompt": crate::fixtures_2026::MRTR_PROMPT }),
            );
            req.trace.note("input_required (MRTR, prompts/get)");
            reply_result(
                req,
                method,
                id,
                json!({ "resultType": "input_required", "inputRequests": input_requests, "requestState": token }),
            )
        }
    }
}

/// 2025-11-25 `tasks/result`: the underlying call's result once the task is terminal; for a
/// working task the response waits until it completes (bounded by its `ttl`).
pub(super) async fn task_result(req: &Req) -> Answered {
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
