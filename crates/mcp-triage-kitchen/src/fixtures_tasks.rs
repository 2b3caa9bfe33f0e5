//! The fixture tools of the conformance suite's `tasks-*` server scenarios (0.2.0-alpha,
//! extension `io.modelcontextprotocol/tasks`, SEP-2663), in every instance's catalogue like
//! the other conformance fixtures: the suite looks them up by name, and a client under test
//! meets the same task shapes.
//!
//! | tool | task support | body |
//! |---|---|---|
//! | `greet` | none | `Hello, {name}!` |
//! | `slow_compute` | optional | sleeps `seconds`, then a result; `cancelled` if cancelled meanwhile |
//! | `failing_job` | required | a tool error (`isError`) after ~1 s: the task is `completed` |
//! | `protocol_error_job` | required | a JSON-RPC error (-32603): the task is `failed` |
//! | `confirm_delete` | required | one `elicitation/create` input request, then the verdict |
//! | `multi_input` | required | two input requests at once (partial answers allowed) |
//! | `test_tool_with_task` | required | an MRTR round for `user_name` first, then a task greeting it |
//!
//! "Required" tools answer a request that did not declare the extension with `-32021`; the
//! optional one runs synchronously for it (the extension never returns a task to such a
//! request). The legacy era has no extension, and 2025-11-25's own `execution.taskSupport`
//! means a task-augmented call of that revision, which these fixtures do not serve (only
//! `tasks.deferred` does): so a legacy `tools/list` shows `greet` and `slow_compute` without
//! `execution` (both run synchronously) and not the task-only tools, which answer a legacy
//! call as unknown tools ([`legacy_view`]).

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};

use crate::plugin::ToolReply;
use crate::protocol;
use crate::tasks::{Job, Settled, Stopped, TaskCtl};

/// Whether a tool may or must run as a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskSupport {
    /// May run synchronously for a client without the extension.
    Optional,
    /// Only runs as a task (or, for `test_tool_with_task`, an MRTR round before it).
    Required,
}

/// Longest `slow_compute` sleep accepted, so a call cannot hold a worker for hours.
const MAX_SECONDS: f64 = 600.0;

/// The task support of a fixture tool (`None`: not a task tool of this module).
pub fn task_support(name: &str) -> Option<TaskSupport> {
    match name {
        "slow_compute" => Some(TaskSupport::Optional),
        "failing_job"
        | "protocol_error_job"
        | "confirm_delete"
        | "multi_input"
        | "test_tool_with_task" => Some(TaskSupport::Required),
        _ => None,
    }
}

/// Tool definitions, appended to the catalogue's `tools/list`.
pub fn tools() -> Vec<Value> {
    let exec = |s: &str| json!({ "taskSupport": s });
    let empty = json!({ "type": "object", "properties": {} });
    vec![
        json!({ "name": "greet", "description": "Tasks fixture (sync only): returns `Hello, {name}!`",
            "inputSchema": { "type": "object", "properties": { "name": { "type": "string" } } } }),
        json!({ "name": "slow_compute",
            "description": "Tasks fixture (task optional): sleeps `seconds` then returns a result naming `label`; a task cancelled meanwhile ends `cancelled`. `ttlMs` (kitchen knob) sets the task's lifetime.",
            "inputSchema": { "type": "object", "properties": {
                "seconds": { "type": "number", "minimum": 0, "maximum": MAX_SECONDS },
                "label": { "type": "string" },
                "ttlMs": { "type": "integer", "minimum": 1 } } },
            "execution": exec("optional") }),
        json!({ "name": "failing_job", "description": "Tasks fixture (task required): a tool execution error (isError) after ~1 s, so the task is `completed`",
            "inputSchema": empty.clone(), "execution": exec("required") }),
        json!({ "name": "protocol_error_job", "description": "Tasks fixture (task required): fails with JSON-RPC -32603, so the task is `failed` with the error inlined",
            "inputSchema": empty.clone(), "execution": exec("required") }),
        json!({ "name": "confirm_delete", "description": "Tasks fixture (task required): parks `input_required` with one elicitation (confirm deleting `filename`), answered through tasks/update",
            "inputSchema": { "type": "object", "properties": { "filename": { "type": "string" } } },
            "execution": exec("required") }),
        json!({ "name": "multi_input", "description": "Tasks fixture (task required): parks `input_required` with two elicitations at once; answers may come one at a time",
            "inputSchema": empty.clone(), "execution": exec("required") }),
        json!({ "name": "test_tool_with_task", "description": "Tasks fixture (task required): an MRTR round asks `user_name`, then the retry becomes a task whose result greets that name",
            "inputSchema": empty, "execution": exec("required") }),
    ]
}

fn text(t: impl Into<String>) -> Value {
    json!({ "content": [{ "type": "text", "text": t.into() }], "isError": false })
}

fn elicit(message: String, prop: &str, ty: &str) -> Value {
    json!({ "method": "elicitation/create", "params": { "mode": "form", "message": message,
        "requestedSchema": { "type": "object", "properties": { prop: { "type": ty } }, "required": [prop] } } })
}

/// The `seconds` argument, clamped to `0..=MAX_SECONDS` (absent or not a number: 0).
fn seconds(args: &Value) -> Duration {
    let s = args["seconds"].as_f64().unwrap_or(0.0);
    Duration::from_secs_f64(if s.is_finite() {
        s.clamp(0.0, MAX_SECONDS)
    } else {
        0.0
    })
}

/// Whether an elicitation answer accepted (and, when the form has `confirm`, confirmed).
fn accepted(answer: &Value) -> bool {
    answer["action"] == "accept" && answer["content"]["confirm"].as_bool() != Some(false)
}

async fn slow_compute(mut ctl: TaskCtl, args: Value) -> Result<Settled, Stopped> {
    let d = seconds(&args);
    ctl.sleep(d).await?;
    let label = args["label"].as_str().unwrap_or("").to_string();
    Ok(Settled::Completed(text(format!(
        "slow_compute finished after {}s (label: {label:?})",
        d.as_secs_f64()
    ))))
}

async fn confirm_delete(mut ctl: TaskCtl, args: Value) -> Result<Settled, Stopped> {
    let file = args["filename"].as_str().unwrap_or("the file").to_string();
    let mut req = Map::new();
    req.insert(
        "confirm_delete".into(),
        elicit(format!("Delete {file}?"), "confirm", "boolean"),
    );
    let got = ctl.ask(req).await?;
    Ok(Settled::Completed(if accepted(&got["confirm_delete"]) {
        text(format!("Deleted {file}"))
    } else {
        text(format!("Kept {file}: the deletion was not confirmed"))
    }))
}

async fn multi_input(mut ctl: TaskCtl) -> Result<Settled, Stopped> {
    let mut req = Map::new();
    req.insert(
        "name".into(),
        elicit("What is your name?".into(), "name", "string"),
    );
    req.insert(
        "confirm".into(),
        elicit("Proceed?".into(), "confirm", "boolean"),
    );
    let got = ctl.ask(req).await?;
    Ok(Settled::Completed(text(format!(
        "name={}, confirmed={}",
        got["name"]["content"]["name"].as_str().unwrap_or(""),
        accepted(&got["confirm"])
    ))))
}

/// The job of a task tool. `answers` are the verified MRTR answers of the call that creates
/// the task (`test_tool_with_task`'s round 2).
pub fn job(name: &str, args: Value, answers: Map<String, Value>) -> Option<Job> {
    let job: Job = match name {
        "slow_compute" => Box::new(move |ctl| Box::pin(slow_compute(ctl, args))),
        "failing_job" => Box::new(|mut ctl| {
            Box::pin(async move {
                ctl.sleep(Duration::from_secs(1)).await?;
                Ok(Settled::Completed(json!({
                    "content": [{ "type": "text", "text": "failing_job: the job failed on purpose (a tool execution error)" }],
                    "isError": true })))
            })
        }),
        "protocol_error_job" => Box::new(|mut ctl| {
            Box::pin(async move {
                ctl.sleep(Duration::from_millis(300)).await?;
                Ok(Settled::Failed {
                    code: protocol::INTERNAL_ERROR,
                    message: "Internal error: protocol_error_job crashed on purpose".into(),
                })
            })
        }),
        "confirm_delete" => Box::new(move |ctl| Box::pin(confirm_delete(ctl, args))),
        "multi_input" => Box::new(|ctl| Box::pin(multi_input(ctl))),
        "test_tool_with_task" => Box::new(move |mut ctl| {
            Box::pin(async move {
                ctl.sleep(Duration::from_millis(300)).await?;
                let who = answers["user_name"]["content"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                Ok(Settled::Completed(text(format!("Hello, {who}!"))))
            })
        }),
        _ => return None,
    };
    Some(job)
}

/// `test_tool_with_task`'s MRTR round before the task: the verified answers when the retry
/// carries `user_name`, else the `input_required` reply asking for it.
pub fn mrtr_prelude(
    name: &str,
    input_responses: Option<&Value>,
) -> Result<Map<String, Value>, ToolReply> {
    if name != "test_tool_with_task" {
        return Ok(Map::new());
    }
    match input_responses
        .and_then(|r| r.get("user_name"))
        .filter(|v| v.is_object())
    {
        Some(a) => Ok(Map::from_iter([("user_name".to_string(), a.clone())])),
        None => {
            let mut req = Map::new();
            req.insert(
                "user_name".into(),
                elicit("What is your name?".into(), "name", "string"),
            );
            Err(ToolReply::InputRequired {
                input_requests: Value::Object(req),
                state: json!({ "tool": name }),
            })
        }
    }
}

/// A `tools/list` as the legacy era sees it: the task-only fixtures left out and the
/// optional one without `execution` (listing 2025-11-25's `taskSupport` without serving its
/// task-augmented calls told a 2025-11-25 task client to make calls that were refused).
pub fn legacy_view(tools: Vec<Value>) -> Vec<Value> {
    tools
        .into_iter()
        .filter_map(|mut t| {
            match t["name"].as_str().and_then(task_support) {
                Some(TaskSupport::Required) => return None,
                Some(TaskSupport::Optional) => {
                    if let Some(o) = t.as_object_mut() {
                        o.remove("execution");
                    }
                }
                None => {}
            }
            Some(t)
        })
        .collect()
}

/// Synchronous body (no task): `greet` always, `slow_compute` for a request without the
/// extension. The task-only tools have none (a legacy call of one is an unknown tool).
pub fn call_sync(name: &str, args: Value) -> Option<BoxFuture<'static, ToolReply>> {
    let fut: BoxFuture<'static, ToolReply> = match name {
        "greet" => {
            let who = args["name"].as_str().unwrap_or("World").to_string();
            Box::pin(async move { ToolReply::text(format!("Hello, {who}!")) })
        }
        "slow_compute" => Box::pin(async move {
            match slow_compute(TaskCtl::detached(), args).await {
                Ok(Settled::Completed(r)) => ToolReply::Result(r),
                _ => ToolReply::error_text("slow_compute stopped"),
            }
        }),
        _ => return None,
    };
    Some(fut)
}
