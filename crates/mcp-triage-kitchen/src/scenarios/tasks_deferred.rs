//! `tasks.deferred`: `run_configured_test_scenario` is answered with a task instead of a
//! result, so a client must tell "accepted, not done" from a completed call and poll.
//!
//! - 2025-11-25 (legacy, experimental core tasks, SEP-1686): the server advertises
//!   `tasks: {list, cancel, requests.tools.call}` and the tool `execution.taskSupport:
//!   "optional"`. A `tools/call` with `params.task` gets a `CreateTaskResult {task}`; a call
//!   without it is answered synchronously. `tasks/get`, `tasks/result` (blocks until terminal),
//!   `tasks/list` and `tasks/cancel` serve the instance's tasks.
//! - 2026-07-28 (extension `io.modelcontextprotocol/tasks`): when the request's
//!   `clientCapabilities.extensions` declares the extension, the call is answered
//!   `resultType: "task"` with `taskId`, `status`, `ttlMs`, `pollIntervalMs` (no per-request
//!   flag); `tasks/get` carries `result` once `completed`. A client that did not declare it gets
//!   a normal result ("never return a task to a client that did not declare support"). The
//!   task is one of the instance's extension tasks ([`crate::tasks`]), so `tasks/get`,
//!   `tasks/update` and `tasks/cancel` behave as for every other 2026 task.
//!
//! Tasks live on the instance (so `/s/tasks.deferred/mcp?instance=…` isolates tests) until
//! `POST /kitchen/reset`; expired ones (past `ttl`) answer -32602 like unknown ids.

use mcp_triage_wire::time::rfc3339;
use serde_json::{json, Value};

use crate::instance_state::TaskRecord;
use crate::journal::now_ms;
use crate::plugin::WireCx;
use crate::plugin::{MethodReply, Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo};
use crate::protocol::{self, Era};

/// `tasks.deferred`.
pub struct Deferred;

/// Extension id of 2026 tasks.
pub const TASKS_EXTENSION: &str = crate::tasks::EXTENSION;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "tasks.deferred",
    summary: "run_configured_test_scenario answers with a task (2025-11-25 task-augmented call, or 2026 resultType \"task\"); poll tasks/get.",
    docs: "Legacy: a `tools/call` with `params.task` → `CreateTaskResult` (status `working`); `tasks/get` reports `completed` after `completeAfterMs`, \
           `tasks/result` blocks until then and returns the CallToolResult `{scenarioId, taskId}`; `tasks/list`, `tasks/cancel`. Without `params.task` \
           the call completes synchronously. Modern: only when `clientCapabilities.extensions` declares `io.modelcontextprotocol/tasks`, the call is \
           answered `resultType: \"task\"` and `tasks/get` carries `result` when completed. Counts `run_configured_test_scenario` per call.",
    params: &[
        ParamSpec { name: "completeAfterMs", kind: ParamKind::Integer, default: "1000", choices: &[], doc: "Time from creation until the task is `completed`." },
        ParamSpec { name: "ttlMs", kind: ParamKind::Integer, default: "60000", choices: &[], doc: "Task lifetime after creation (`ttl`/`ttlMs`)." },
        ParamSpec { name: "pollIntervalMs", kind: ParamKind::Integer, default: "250", choices: &[], doc: "Suggested polling interval (`pollInterval`/`pollIntervalMs`); 0 leaves the field out (it is optional), so a client must pick its own pace." },
    ],
    outcome: Outcome::TaskCreated,
    origin: Origin::Kitchen,
};

fn status(t: &TaskRecord, now: u64) -> &'static str {
    if t.cancelled {
        "cancelled"
    } else if now >= t.ready_at_ms {
        "completed"
    } else {
        "working"
    }
}

fn legacy_task(id: &str, t: &TaskRecord, now: u64) -> Value {
    let st = status(t, now);
    let mut task = json!({
        "taskId": id, "status": st,
        "statusMessage": match st { "completed" => "done", "cancelled" => "cancelled by the client", _ => "working on it" },
        "createdAt": rfc3339(t.created_ms),
        "lastUpdatedAt": rfc3339(if st == "completed" { t.ready_at_ms } else { t.created_ms }),
        "ttl": t.ttl_ms,
    });
    if t.poll_ms > 0 {
        task["pollInterval"] = json!(t.poll_ms);
    }
    task
}

/// The live (not expired) task `id` of the instance.
pub fn live_task(
    cx_tasks: &crate::instance_state::InstanceState,
    id: &str,
    now: u64,
) -> Option<TaskRecord> {
    let tasks = cx_tasks.tasks.lock().expect("tasks lock");
    tasks
        .get(id)
        .filter(|t| now < t.created_ms + t.ttl_ms)
        .cloned()
}

/// The 2026 task: an extension task whose job waits `completeAfterMs`, then completes with
/// the scenario's result.
fn modern_call(cx: &WireCx<'_>) -> MethodReply {
    let invocation = cx.instance.bump("run_configured_test_scenario");
    let p = cx.p();
    let wait = std::time::Duration::from_millis(p.u64("completeAfterMs"));
    let job: crate::tasks::Job = Box::new(move |mut ctl| {
        Box::pin(async move {
            ctl.sleep(wait).await?;
            let body =
                json!({ "scenarioId": INFO.id, "invocation": invocation, "taskId": ctl.task_id() });
            Ok(crate::tasks::Settled::Completed(
                json!({ "content": [{ "type": "text", "text": body.to_string() }], "isError": false }),
            ))
        })
    });
    let mut r = crate::tasks::create(
        &cx.instance.ext_tasks,
        p.u64("ttlMs").max(1),
        p.u64("pollIntervalMs"),
        job,
    );
    r["resultType"] = json!("task");
    MethodReply::Result(r)
}

fn unknown(id: &str) -> MethodReply {
    MethodReply::Error(
        protocol::INVALID_PARAMS,
        format!("Invalid params: unknown or expired taskId {id:?}"),
    )
}

impl Scenario for Deferred {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn validate(&self, p: &crate::plugin::Params) -> Result<(), crate::plugin::ParamsError> {
        for k in ["completeAfterMs", "ttlMs", "pollIntervalMs"] {
            if p.i64(k) < 0 {
                return Err(crate::plugin::ParamsError::Negative { name: k });
            }
        }
        Ok(())
    }
    fn run_tool_definition(&self) -> Option<Value> {
        let mut d = crate::catalogue::run_tool_definition();
        d["execution"] = json!({ "taskSupport": "optional" });
        Some(d)
    }
    fn supports_tasks(&self) -> bool {
        true
    }
    fn handle_method(&self, cx: &WireCx<'_>) -> Option<MethodReply> {
        let now = now_ms();
        let task_id = || {
            cx.params
                .get("taskId")
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        match (cx.method?, cx.era) {
            ("tools/call", Era::Modern) if cx.tool == Some("run_configured_test_scenario") => {
                crate::tasks::declares_extension(cx.params).then(|| modern_call(cx))
            }
            ("tools/call", Era::Legacy) if cx.tool == Some("run_configured_test_scenario") => {
                if !cx.params.get("task").is_some_and(Value::is_object) {
                    return None;
                }
                let invocation = cx.instance.bump("run_configured_test_scenario");
                let id = format!(
                    "task-{}",
                    mcp_triage_wire::canonical::hex(&crate::random::random_bytes::<8>())
                );
                let p = cx.p();
                let ttl = cx.params["task"]["ttl"].as_u64().unwrap_or(p.u64("ttlMs"));
                let body = json!({ "scenarioId": INFO.id, "invocation": invocation, "taskId": id });
                let record = TaskRecord {
                    result: json!({ "content": [{ "type": "text", "text": body.to_string() }], "isError": false }),
                    ready_at_ms: now + p.u64("completeAfterMs"),
                    created_ms: now,
                    ttl_ms: ttl,
                    poll_ms: p.u64("pollIntervalMs"),
                    cancelled: false,
                };
                let reply = json!({ "task": legacy_task(&id, &record, now) });
                cx.instance
                    .tasks
                    .lock()
                    .expect("tasks lock")
                    .insert(id, record);
                Some(MethodReply::Result(reply))
            }
            ("tasks/get", Era::Legacy) => {
                let id = task_id();
                let Some(t) = live_task(cx.instance, id, now) else {
                    return Some(unknown(id));
                };
                Some(MethodReply::Result(legacy_task(id, &t, now)))
            }
            ("tasks/list", Era::Legacy) => {
                let tasks = cx.instance.tasks.lock().expect("tasks lock");
                let mut v: Vec<(u64, Value)> = tasks
                    .iter()
                    .filter(|(_, t)| now < t.created_ms + t.ttl_ms)
                    .map(|(id, t)| (t.created_ms, legacy_task(id, t, now)))
                    .collect();
                v.sort_by_key(|(c, _)| *c);
                Some(MethodReply::Result(
                    json!({ "tasks": v.into_iter().map(|(_, t)| t).collect::<Vec<_>>() }),
                ))
            }
            ("tasks/cancel", Era::Legacy) => {
                let id = task_id();
                let mut tasks = cx.instance.tasks.lock().expect("tasks lock");
                let Some(t) = tasks.get_mut(id).filter(|t| now < t.created_ms + t.ttl_ms) else {
                    return Some(unknown(id));
                };
                if status(t, now) != "working" {
                    return Some(MethodReply::Error(
                        protocol::INVALID_PARAMS,
                        format!("Invalid params: task {id:?} is already {}", status(t, now)),
                    ));
                }
                t.cancelled = true;
                Some(MethodReply::Result(legacy_task(id, t, now)))
            }
            _ => None,
        }
    }
}
