//! The 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) as every
//! instance serves it: a `tools/call` may be answered with a `CreateTaskResult`
//! (`resultType: "task"`) and the client polls `tasks/get`, answers `input_required` through
//! `tasks/update` and cancels with `tasks/cancel`.
//!
//! Why a worker per task rather than a status derived from the clock: the extension lets a
//! task park on client input, resume on `tasks/update` and stop on `tasks/cancel`; a job is
//! an async body that sleeps and asks through [`TaskCtl`], and both wake it. The store is
//! the single source of truth: `tasks/get` reads it, the job writes it, and a `tasks/cancel`
//! settles the task as `cancelled` at once (the job stops at its next await), so a client
//! never sees a cancelled task complete afterwards.
//!
//! Rules taken from the extension text (ext-tasks `specification/2026-07-28/tasks.md`):
//! - tasks are never returned to a request whose `clientCapabilities.extensions` lacks the
//!   extension; `tasks/get|update|cancel` from such a request get `-32021` with
//!   `data.requiredCapabilities` (HTTP 400);
//! - an unknown or expired `taskId` is `-32602`;
//! - `tasks/update` and `tasks/cancel` answer an empty ack (the era adapter adds
//!   `resultType: "complete"`), a cancel of a terminal task too (idempotent);
//! - answers to keys that are not outstanding are ignored; a partial answer keeps the task
//!   `input_required` with only the unanswered keys; keys are never reused within a task;
//! - `failed` is only for JSON-RPC errors (`error` inlined); a tool error is `completed` with
//!   `result.isError`.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};
use tokio::sync::watch;

use crate::journal::now_ms;
use crate::protocol;
use mcp_triage_wire::time::rfc3339;

/// Extension id.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// Lifetime of a task from its creation unless the creator says otherwise.
pub const DEFAULT_TTL_MS: u64 = 60_000;
/// Suggested polling interval of the kitchen's tasks (0 for a task would leave it out).
pub const DEFAULT_POLL_MS: u64 = 250;
/// Tasks kept per instance; creating one more drops the oldest (bounds memory for clients
/// that create tasks in a loop and never poll them).
const MAX_TASKS: usize = 1024;

/// Whether a request's `_meta.clientCapabilities` declares the extension (per request: the
/// modern era has no session to remember it).
pub fn declares_extension(params: &Value) -> bool {
    params
        .get("_meta")
        .and_then(|m| m.get(protocol::META_CLIENT_CAPABILITIES))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(EXTENSION))
        .is_some_and(|v| !v.is_null())
}

/// `data` of the `-32021` error naming the extension as the missing capability.
pub fn missing_extension_data() -> Value {
    json!({ "requiredCapabilities": { "extensions": { EXTENSION: {} } } })
}

/// Where a task is.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskState {
    /// Running.
    Working,
    /// Waiting for answers to these requests (key → `{method, params}`).
    InputRequired(Map<String, Value>),
    /// Done: the underlying request's result (a `CallToolResult`, `isError` included).
    Completed(Value),
    /// The underlying request ended in this JSON-RPC error object (`{code, message}`).
    Failed(Value),
    /// Cancelled by the client.
    Cancelled,
}

impl TaskState {
    /// Wire name of the status.
    pub fn name(&self) -> &'static str {
        match self {
            TaskState::Working => "working",
            TaskState::InputRequired(_) => "input_required",
            TaskState::Completed(_) => "completed",
            TaskState::Failed(_) => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    /// Completed, failed or cancelled: nothing changes it any more.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskState::Completed(_) | TaskState::Failed(_) | TaskState::Cancelled
        )
    }
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Settled {
    /// A result (a tool error is a result with `isError: true`).
    Completed(Value),
    /// A JSON-RPC error during execution.
    Failed {
        /// JSON-RPC code.
        code: i64,
        /// Message.
        message: String,
    },
}

/// The job stopped because its task was cancelled or discarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped;

struct Entry {
    created_ms: u64,
    updated_ms: u64,
    ttl_ms: u64,
    poll_ms: u64,
    state: TaskState,
    status_message: Option<String>,
    /// Every input key issued so far (never reused within the task).
    issued: BTreeSet<String>,
    /// Answers received and not yet taken by the job.
    answers: Map<String, Value>,
    /// Bumped on every change the job must see (answers, cancellation).
    wake: watch::Sender<u64>,
}

impl Entry {
    fn expired(&self, now: u64) -> bool {
        now >= self.created_ms.saturating_add(self.ttl_ms)
    }

    fn touch(&mut self, state: TaskState, message: Option<String>) {
        self.state = state;
        self.status_message = message;
        self.updated_ms = now_ms().max(self.updated_ms);
        self.wake.send_modify(|g| *g += 1);
    }

    /// The `Task` fields (what `CreateTaskResult` carries).
    fn task(&self, id: &str) -> Value {
        let mut t = json!({
            "taskId": id,
            "status": self.state.name(),
            "createdAt": rfc3339(self.created_ms),
            "lastUpdatedAt": rfc3339(self.updated_ms),
            "ttlMs": self.ttl_ms,
        });
        // optional in the extension: 0 leaves it out, so clients meet a task without one
        if self.poll_ms > 0 {
            t["pollIntervalMs"] = json!(self.poll_ms);
        }
        if let Some(m) = &self.status_message {
            t["statusMessage"] = json!(m);
        }
        t
    }

    /// `DetailedTask`: the task plus what its status inlines.
    fn detailed(&self, id: &str) -> Value {
        let mut t = self.task(id);
        match &self.state {
            TaskState::InputRequired(r) => t["inputRequests"] = Value::Object(r.clone()),
            TaskState::Completed(r) => t["result"] = r.clone(),
            TaskState::Failed(e) => t["error"] = e.clone(),
            TaskState::Working | TaskState::Cancelled => {}
        }
        t
    }
}

/// Why a task method failed: `-32602` for an unknown or expired id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskError(pub String);

/// The extension's tasks of one instance.
#[derive(Default)]
pub struct TaskStore {
    tasks: Mutex<HashMap<String, Entry>>,
}

impl TaskStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.tasks.lock().expect("task store lock")
    }

    /// Drop every task (`POST /kitchen/reset`); running jobs stop at their next await.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// Number of tasks held (expired ones included until the next creation sweeps them).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no task is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The live task `id`, or the `-32602` message. An expired task is removed here, so an
    /// id answers "expired" once and "unknown" afterwards.
    fn with_live<T>(&self, id: &str, f: impl FnOnce(&mut Entry) -> T) -> Result<T, TaskError> {
        let mut tasks = self.lock();
        let now = now_ms();
        match tasks.get_mut(id) {
            Some(e) if !e.expired(now) => Ok(f(e)),
            Some(_) => {
                tasks.remove(id);
                Err(TaskError(format!(
                    "Failed to retrieve task: task {id:?} has expired (past its ttlMs)"
                )))
            }
            None => Err(TaskError(format!(
                "Failed to retrieve task: unknown taskId {id:?}"
            ))),
        }
    }

    /// `tasks/get`: the `DetailedTask`.
    pub fn get(&self, id: &str) -> Result<Value, TaskError> {
        self.with_live(id, |e| e.detailed(id))
    }

    /// `tasks/update`: record the answers to outstanding keys (others are ignored). The task
    /// shows the remaining keys at once, and `working` when none remain.
    pub fn update(&self, id: &str, responses: &Map<String, Value>) -> Result<(), TaskError> {
        self.with_live(id, |e| {
            let TaskState::InputRequired(pending) = &e.state else {
                return;
            };
            let mut pending = pending.clone();
            let mut took = false;
            for (k, v) in responses {
                if pending.remove(k).is_some() {
                    e.answers.insert(k.clone(), v.clone());
                    took = true;
                }
            }
            if !took {
                return;
            }
            let state = if pending.is_empty() {
                TaskState::Working
            } else {
                TaskState::InputRequired(pending)
            };
            e.touch(state, None);
        })
    }

    /// `tasks/cancel`: a task that is not terminal becomes `cancelled`; a terminal one stays
    /// as it is (the ack is the same).
    pub fn cancel(&self, id: &str) -> Result<(), TaskError> {
        self.with_live(id, |e| {
            if !e.state.is_terminal() {
                e.touch(TaskState::Cancelled, Some("cancelled by the client".into()));
            }
        })
    }

    fn insert(&self, id: String, entry: Entry) {
        let mut tasks = self.lock();
        let now = now_ms();
        tasks.retain(|_, e| !e.expired(now));
        if tasks.len() >= MAX_TASKS {
            if let Some(oldest) = tasks
                .iter()
                .min_by_key(|(_, e)| e.created_ms)
                .map(|(k, _)| k.clone())
            {
                tasks.remove(&oldest);
            }
        }
        tasks.insert(id, entry);
    }

    fn settle(&self, id: &str, outcome: Settled) {
        let _ = self.with_live(id, |e| {
            if e.state.is_terminal() {
                return;
            }
            match outcome {
                Settled::Completed(r) => e.touch(TaskState::Completed(r), None),
                Settled::Failed { code, message } => e.touch(
                    TaskState::Failed(json!({ "code": code, "message": message })),
                    Some(format!("the request failed: {message}")),
                ),
            }
        });
    }
}

/// Whether the job of task `id` must stop: cancelled, or gone (expired, reset).
fn is_stopped(store: &TaskStore, id: &str) -> bool {
    store
        .with_live(id, |e| e.state == TaskState::Cancelled)
        .unwrap_or(true)
}

/// What a job uses to wait and to ask. Without a task (the synchronous path of a tool that
/// only may run as a task) it just sleeps and cannot ask.
pub struct TaskCtl {
    task: Option<(Arc<TaskStore>, String, watch::Receiver<u64>)>,
}

impl TaskCtl {
    /// For a job run synchronously, outside any task.
    pub fn detached() -> TaskCtl {
        TaskCtl { task: None }
    }

    /// The task id, when the job runs as a task.
    pub fn task_id(&self) -> Option<&str> {
        self.task.as_ref().map(|(_, id, _)| id.as_str())
    }

    fn stopped(&self) -> bool {
        match &self.task {
            None => false,
            Some((store, id, _)) => is_stopped(store, id),
        }
    }

    /// Sleep `d`, or stop early when the task is cancelled or discarded. A zero sleep does not
    /// yield, so a job without waits settles before its `CreateTaskResult` is sent.
    pub async fn sleep(&mut self, d: Duration) -> Result<(), Stopped> {
        if self.stopped() {
            return Err(Stopped);
        }
        if d.is_zero() {
            return Ok(());
        }
        let Some((store, id, rx)) = self.task.as_mut() else {
            tokio::time::sleep(d).await;
            return Ok(());
        };
        let deadline = tokio::time::Instant::now() + d;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return Ok(()),
                changed = rx.changed() => {
                    if changed.is_err() {
                        return Err(Stopped);
                    }
                }
            }
            if is_stopped(store, id) {
                return Err(Stopped);
            }
        }
    }

    /// Park the task `input_required` with `requests` (key → `{method, params}`) until every
    /// key is answered through `tasks/update`; returns the answers by key.
    pub async fn ask(
        &mut self,
        requests: Map<String, Value>,
    ) -> Result<Map<String, Value>, Stopped> {
        let Some((store, id, rx)) = self.task.as_mut() else {
            return Err(Stopped);
        };
        store
            .with_live(id, |e| {
                if e.state.is_terminal() {
                    return Err(Stopped);
                }
                // A key answered once must never name another request (the extension
                // lets servers ignore late answers by key); jobs mint fresh keys.
                debug_assert!(requests.keys().all(|k| !e.issued.contains(k)));
                e.issued.extend(requests.keys().cloned());
                e.touch(TaskState::InputRequired(requests.clone()), None);
                Ok(())
            })
            .map_err(|_| Stopped)??;
        loop {
            let done = store
                .with_live(id, |e| {
                    if e.state.is_terminal() {
                        return Err(Stopped);
                    }
                    if requests.keys().all(|k| e.answers.contains_key(k)) {
                        let got: Map<String, Value> = requests
                            .keys()
                            .filter_map(|k| e.answers.remove(k).map(|v| (k.clone(), v)))
                            .collect();
                        return Ok(Some(got));
                    }
                    Ok(None)
                })
                .map_err(|_| Stopped)??;
            if let Some(got) = done {
                return Ok(got);
            }
            if rx.changed().await.is_err() {
                return Err(Stopped);
            }
        }
    }
}

/// A job: the body of a task.
pub type Job = Box<dyn FnOnce(TaskCtl) -> BoxFuture<'static, Result<Settled, Stopped>> + Send>;

/// Create a task running `job` and return its `CreateTaskResult` (without `resultType`,
/// which the caller sets). The task is in the store before this returns, so an immediate
/// `tasks/get` resolves; a job that finishes without waiting has already settled.
pub fn create(store: &Arc<TaskStore>, ttl_ms: u64, poll_ms: u64, job: Job) -> Value {
    let id = format!(
        "task-{}",
        mcp_triage_wire::canonical::hex(&crate::random::random_bytes::<16>())
    );
    let now = now_ms();
    let (wake, rx) = watch::channel(0);
    store.insert(
        id.clone(),
        Entry {
            created_ms: now,
            updated_ms: now,
            ttl_ms,
            poll_ms,
            state: TaskState::Working,
            status_message: None,
            issued: BTreeSet::new(),
            answers: Map::new(),
            wake,
        },
    );
    let ctl = TaskCtl {
        task: Some((store.clone(), id.clone(), rx)),
    };
    let mut fut = job(ctl);
    let first = futures_util::FutureExt::now_or_never(&mut fut);
    match first {
        Some(outcome) => {
            if let Ok(o) = outcome {
                store.settle(&id, o);
            }
        }
        None => {
            let store2 = store.clone();
            let id2 = id.clone();
            tokio::spawn(async move {
                if let Ok(o) = fut.await {
                    store2.settle(&id2, o);
                }
            });
        }
    }
    store
        .with_live(&id, |e| e.task(&id))
        .unwrap_or_else(|_| json!({ "taskId": id, "status": "working" }))
}

/// Answer `tasks/get`, `tasks/update` or `tasks/cancel` (modern era): `Ok(result)` or
/// `Err((http status, code, message, data))`.
pub fn handle(
    store: &TaskStore,
    method: &str,
    params: &Value,
) -> Result<Value, (u16, i64, String, Option<Value>)> {
    if !declares_extension(params) {
        return Err((
            400,
            protocol::MISSING_CAPABILITY,
            format!("Missing required client capability: {method} needs the {EXTENSION} extension in _meta clientCapabilities.extensions"),
            Some(missing_extension_data()),
        ));
    }
    let invalid = |m: String| (200, protocol::INVALID_PARAMS, m, None);
    let Some(id) = params.get("taskId").and_then(Value::as_str) else {
        return Err(invalid(format!(
            "Invalid params: {method} needs a string taskId"
        )));
    };
    let r = match method {
        "tasks/get" => store.get(id),
        "tasks/update" => {
            let Some(responses) = params.get("inputResponses").and_then(Value::as_object) else {
                return Err(invalid(
                    "Invalid params: tasks/update needs an inputResponses object".into(),
                ));
            };
            store.update(id, responses).map(|()| json!({}))
        }
        "tasks/cancel" => store.cancel(id).map(|()| json!({})),
        _ => {
            return Err((
                404,
                protocol::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
                None,
            ))
        }
    };
    r.map_err(|TaskError(m)| invalid(m))
}
