//! Drives a task to its end (tasks extension, SEP-2663; 2025-11-25 core tasks): polls
//! `tasks/get`, answers input inside the task through `tasks/update`, cancels with
//! `tasks/cancel` when the client stops waiting, and never resends the `tools/call` that
//! created the task (the server is already running it).
//!
//! Why a module of its own: the retry policy decides about *sending the call*, up to telling
//! the call loop (`call.rs`) to drive a created task (`DriveTask`, recorded as `poll`); a task
//! is past that point, and its rules are different (a poll is always safe to send, its pace is
//! the server's `pollIntervalMs`, the client's way out is `tasks/cancel`), so they live here.
//!
//! Every exchange is an attempt in the record (`poll`, `update`, `cancel`, `task_result`),
//! so a record shows how the task went; working polls beyond
//! [`ClientOptions::max_task_attempts`](crate::ClientOptions) are elided (counted in a
//! `TASK_POLLS_ELIDED` warning), because a long task polled every 250 ms would otherwise
//! make a record of megabytes.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_triage_core::{CallRecord, DecisionAction, Outcome, ProtocolVersion, Verdict};
use serde_json::{json, Map, Value};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::answers::{answer_from, refusal_result};
use crate::call_record::{finish_from, push_attempt, set_decision};
use crate::client::{Client, Era, Negotiated};
use crate::options::CallOptions;
use crate::tools::ToolInfo;
use crate::wire::Sent;

/// First wait of the backoff used when the server suggests no `pollIntervalMs`.
pub const BACKOFF_START: Duration = Duration::from_millis(100);

/// A request to stop waiting (Ctrl-C), shared between whoever catches the signal and the
/// call. Why not just drop the call's future: a task the client walks away from keeps
/// running on the server; the driver must get the chance to send `tasks/cancel`.
#[derive(Debug, Clone)]
pub struct Interrupt {
    tx: Arc<watch::Sender<bool>>,
    task_open: Arc<AtomicBool>,
}

impl Default for Interrupt {
    fn default() -> Self {
        Interrupt {
            tx: Arc::new(watch::channel(false).0),
            task_open: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl Interrupt {
    /// A fresh, unrequested interrupt.
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// Asks the call to stop. Returns whether a task is open, i.e. whether the call will now
    /// cancel it and return soon (otherwise the caller should stop the call itself).
    pub fn request(&self) -> bool {
        // Read before signalling: once signalled, the driver may cancel the task and close it
        // before this thread runs again, and the caller would drop a call about to return.
        let open = self.task_open.load(Ordering::SeqCst);
        self.tx.send_replace(true);
        open
    }

    /// Whether [`Interrupt::request`] was called.
    pub fn is_requested(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once an interrupt is requested (at once if it already was).
    async fn requested(&self) {
        let mut rx = self.tx.subscribe();
        let _ = rx.wait_for(|v| *v).await;
    }

    fn set_task_open(&self, open: bool) {
        self.task_open.store(open, Ordering::SeqCst);
    }
}

/// The pace of polls: the server's `pollIntervalMs` whenever it gave one (never polling
/// faster than it asked, whatever `max_poll_interval` says), else an exponential backoff from
/// [`BACKOFF_START`] doubling up to `max_poll_interval`.
#[derive(Debug, Clone)]
pub(crate) struct PollPace {
    server: Option<Duration>,
    backoff: Duration,
    max_backoff: Duration,
}

/// Where the next wait comes from, for the attempt's decision reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PaceSource {
    Server,
    Backoff,
}

impl PollPace {
    pub(crate) fn new(max_backoff: Duration) -> PollPace {
        PollPace {
            server: None,
            backoff: BACKOFF_START.min(max_backoff),
            max_backoff,
        }
    }

    /// Takes the interval a task state suggests (`pollIntervalMs`, 2025-11-25 `pollInterval`);
    /// a state without one keeps the last one the server gave (it still stands).
    pub(crate) fn observe(&mut self, task: &Value) {
        if let Some(ms) = task["pollIntervalMs"]
            .as_u64()
            .or(task["pollInterval"].as_u64())
        {
            self.server = Some(Duration::from_millis(ms));
        }
    }

    /// The wait before the next poll, and where it comes from.
    pub(crate) fn next(&mut self) -> (Duration, PaceSource) {
        if let Some(d) = self.server {
            return (d, PaceSource::Server);
        }
        let d = self.backoff;
        self.backoff = (self.backoff * 2).min(self.max_backoff);
        (d, PaceSource::Backoff)
    }
}

/// Why the client stopped waiting for a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopReason {
    Deadline(Duration),
    Interrupted,
    PollLimit(u32),
    InputUnanswered,
}

impl StopReason {
    fn text(self) -> String {
        match self {
            StopReason::Deadline(d) => format!(
                "the client's deadline ({} ms, --task-timeout or --timeout) passed",
                d.as_millis()
            ),
            StopReason::Interrupted => "the client was interrupted (SIGINT)".to_string(),
            StopReason::PollLimit(n) => format!("the task was still running after {n} polls"),
            StopReason::InputUnanswered => {
                "the task needs input the client cannot give".to_string()
            }
        }
    }
}

/// Why a task's `inputRequests` could not be answered: the call then cancels the task and
/// records the text as an `INPUT_UNANSWERED` warning.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum TaskInputError {
    /// A request that can be neither answered nor refused (sampling without an answer).
    #[error("the task asked {key} ({method}) and no answer was given (use --answer {key}=JSON or --input FILE)")]
    Unanswered { key: String, method: String },
    /// `--max-rounds` reached.
    #[error("input still required after {rounds} round(s) (max-rounds {max})")]
    TooManyRounds { rounds: u32, max: u32 },
    /// The `tasks/update` carrying the answers did not go out.
    #[error("{}", .0.text())]
    Update(StopReason),
}

/// What the driver knows about one task while driving it.
pub(crate) struct TaskRun<'a> {
    task_id: String,
    era: Era,
    version: ProtocolVersion,
    tool: &'a Option<ToolInfo>,
    deadline: Instant,
    budget: Duration,
    interrupt: Option<Interrupt>,
    /// `inputRequests` keys already answered (the extension: answer each key once).
    answered: BTreeSet<String>,
    /// Working polls removed from the record to keep it bounded.
    elided: u32,
}

impl<'a> TaskRun<'a> {
    pub(crate) fn new(
        task_id: String,
        era: Era,
        version: ProtocolVersion,
        tool: &'a Option<ToolInfo>,
        budget: Duration,
        co: &CallOptions,
    ) -> TaskRun<'a> {
        TaskRun {
            task_id,
            era,
            version,
            tool,
            deadline: Instant::now() + budget,
            budget,
            interrupt: co.interrupt.clone(),
            answered: BTreeSet::new(),
            elided: 0,
        }
    }
}

/// How a wait before a poll ended.
enum Waited {
    Elapsed,
    Stop(StopReason),
}

impl Client {
    /// Drives the task the call created (`created`: the `CreateTaskResult`) to a terminal
    /// state; the record's verdict is the task's end, judged as the same answer to
    /// `tools/call` would be.
    pub(crate) async fn drive_task(
        &self,
        run: &mut TaskRun<'_>,
        created: &Value,
        rec: &mut CallRecord,
    ) {
        if let Some(i) = &run.interrupt {
            i.set_task_open(true);
        }
        let mut pace = PollPace::new(self.opts.max_poll_interval);
        pace.observe(created.get("task").unwrap_or(created));
        if let Some(call) = rec.attempts.len().checked_sub(1) {
            let (first, source) = pace.clone().next();
            let why = format!(
                "the server created task {:?}; {}",
                run.task_id,
                poll_reason(source, first)
            );
            set_decision(
                rec,
                call,
                DecisionAction::Poll,
                Some(first.as_millis() as u64),
                why,
            );
        }
        self.drive_loop(run, &mut pace, rec).await;
        if let Some(i) = &run.interrupt {
            i.set_task_open(false);
        }
        if run.elided > 0 {
            rec.warn(
                "TASK_POLLS_ELIDED",
                format!(
                    "{} working poll(s) not kept in attempts (at most {} task attempts are kept: --max-task-attempts)",
                    run.elided, self.opts.max_task_attempts
                ),
            );
        }
    }

    async fn drive_loop(&self, run: &mut TaskRun<'_>, pace: &mut PollPace, rec: &mut CallRecord) {
        let mut polls = 0u32;
        let mut failures = 0u32;
        loop {
            if polls >= self.opts.max_polls {
                return self
                    .cancel_task(run, StopReason::PollLimit(polls), rec)
                    .await;
            }
            let (wait, _) = pace.next();
            if let Waited::Stop(why) = self.wait_or_stop(run, wait).await {
                return self.cancel_task(run, why, rec).await;
            }
            polls += 1;
            let sent = match self
                .task_request(run, "tasks/get", json!({ "taskId": run.task_id }))
                .await
            {
                Ok(s) => s,
                Err(why) => return self.cancel_task(run, why, rec).await,
            };
            let (sent, id) = sent;
            let idx = self.push_task_attempt(run, rec, &sent, &id, "poll");
            let Some(task) = sent.result().cloned() else {
                // A poll that failed on the transport is safe to send again (tasks/get
                // changes nothing); a JSON-RPC error (unknown or expired task) is the end.
                let transient = sent.verdict.layer == mcp_triage_core::Layer::Transport;
                if transient && failures < self.opts.retry.max_retries {
                    failures += 1;
                    set_decision(rec, idx, DecisionAction::Poll, None, format!("the poll failed on the transport ({}); tasks/get is safe to send again", sent.verdict.outcome));
                    continue;
                }
                finish_from(rec, &sent, &id, self.opts.keep_result);
                set_decision(
                    rec,
                    idx,
                    DecisionAction::GiveUp,
                    None,
                    "the task's state could not be read".to_string(),
                );
                return;
            };
            failures = 0;
            pace.observe(&task);
            match task["status"].as_str().unwrap_or("") {
                "working" | "submitted" => {
                    let (next, source) = pace.clone().next();
                    let why = format!("the task is working; {}", poll_reason(source, next));
                    set_decision(
                        rec,
                        idx,
                        DecisionAction::Poll,
                        Some(next.as_millis() as u64),
                        why,
                    );
                }
                "input_required" if self.version_has_task_update(run) => {
                    if let Err(why) = self.answer_task_input(run, &task, rec, idx).await {
                        finish_from(rec, &sent, &id, self.opts.keep_result);
                        rec.warn("INPUT_UNANSWERED", why.to_string());
                        return self
                            .cancel_task(run, StopReason::InputUnanswered, rec)
                            .await;
                    }
                }
                "input_required" => {
                    // 2025-11-25: the questions come as server requests on a stream, which
                    // the session's listener answers; keep polling.
                    set_decision(
                        rec,
                        idx,
                        DecisionAction::Poll,
                        None,
                        "the task waits for input asked on the session's stream".to_string(),
                    );
                }
                status => return self.task_ended(run, sent, id, &task, status, rec).await,
            }
        }
    }

    /// The task reached a terminal state (or an unknown one): the record's final verdict.
    async fn task_ended(
        &self,
        run: &TaskRun<'_>,
        sent: Sent,
        id: Value,
        task: &Value,
        status: &str,
        rec: &mut CallRecord,
    ) {
        // 2025-11-25 fetches the outcome with tasks/result; otherwise the core has judged the
        // tasks/get answer by the task rules (a completed task by its result, a failed one by
        // its JSON-RPC error, a cancelled one as -32800).
        let inline = task.get("result").or(task.get("error")).is_some();
        if !inline && matches!(status, "completed" | "failed") && !run.version.is_modern() {
            let session = self.state.lock().await.session_id.clone();
            return self
                .task_result(
                    &run.task_id,
                    run.era,
                    run.version,
                    session.as_deref(),
                    rec,
                    run.tool,
                )
                .await;
        }
        let mut s = sent;
        // the record's message and result come from what the task carries
        if let Some(r) = task.get("result") {
            s.response = Some(json!({ "jsonrpc": "2.0", "id": id, "result": r }));
        } else if let Some(e) = task.get("error") {
            s.response = Some(json!({ "jsonrpc": "2.0", "id": id, "error": e }));
        }
        finish_from(rec, &s, &id, self.opts.keep_result);
        if status == "cancelled" {
            rec.message = Some(format!("task ended {status}"));
        }
        if let Some(last) = rec.attempts.len().checked_sub(1) {
            set_decision(
                rec,
                last,
                DecisionAction::Done,
                None,
                format!("the task ended {status}"),
            );
        }
    }

    fn version_has_task_update(&self, run: &TaskRun<'_>) -> bool {
        run.version.is_modern()
    }

    /// Answers the task's outstanding `inputRequests` (keys not answered before) with one
    /// `tasks/update`, from the same sources as MRTR rounds (`--answer`, `--input`, schema
    /// defaults, the prompter); a question nobody answers is refused as a standalone request
    /// would be (elicitation `decline`). `Err` when a request can be neither answered nor
    /// refused (sampling without an answer): the task would wait forever.
    async fn answer_task_input(
        &self,
        run: &mut TaskRun<'_>,
        task: &Value,
        rec: &mut CallRecord,
        idx: usize,
    ) -> Result<(), TaskInputError> {
        let Some(reqs) = task.get("inputRequests").and_then(Value::as_object) else {
            set_decision(
                rec,
                idx,
                DecisionAction::Poll,
                None,
                "input_required without inputRequests".to_string(),
            );
            return Ok(());
        };
        let fresh: Map<String, Value> = reqs
            .iter()
            .filter(|(k, _)| !run.answered.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if fresh.is_empty() {
            // Answered already; the server has not shown it yet (the ack is eventually
            // consistent). Do not answer twice.
            set_decision(
                rec,
                idx,
                DecisionAction::Poll,
                None,
                "every input request was answered; waiting for the task to move on".to_string(),
            );
            return Ok(());
        }
        let (responses, refused) = self.task_input_responses(&fresh)?;
        if rec.rounds >= self.opts.max_rounds {
            return Err(TaskInputError::TooManyRounds {
                rounds: rec.rounds,
                max: self.opts.max_rounds,
            });
        }
        let keys: Vec<String> = responses.keys().cloned().collect();
        set_decision(
            rec,
            idx,
            DecisionAction::AnswerInput,
            None,
            format!(
                "the task asks for input ({}); answering with tasks/update",
                keys.join(", ")
            ),
        );
        for r in refused {
            rec.warn("INPUT_UNANSWERED", r);
        }
        let params = json!({ "taskId": run.task_id, "inputResponses": responses });
        let (sent, id) = match self.task_request(run, "tasks/update", params).await {
            Ok(x) => x,
            Err(why) => return Err(TaskInputError::Update(why)),
        };
        let uidx = self.push_task_attempt(run, rec, &sent, &id, "update");
        rec.rounds += 1;
        if sent.error().is_some() || sent.response.is_none() {
            set_decision(
                rec,
                uidx,
                DecisionAction::Poll,
                None,
                format!(
                    "tasks/update was not acknowledged ({}); polling to see the task's state",
                    sent.verdict.outcome
                ),
            );
        } else {
            run.answered.extend(keys);
            set_decision(
                rec,
                uidx,
                DecisionAction::Poll,
                None,
                "tasks/update acknowledged; polling until the task ends".to_string(),
            );
        }
        Ok(())
    }

    /// The `inputResponses` for `reqs`, and the warnings for requests refused for want of an
    /// answer. Reuses the MRTR answer sources and the refusal of standalone requests.
    fn task_input_responses(
        &self,
        reqs: &Map<String, Value>,
    ) -> Result<(Map<String, Value>, Vec<String>), TaskInputError> {
        let mut out = Map::new();
        let mut refused = Vec::new();
        for (key, req) in reqs {
            let method = req["method"].as_str().unwrap_or("");
            if let Some(a) = answer_from(&self.opts, Some(key), method, &req["params"]) {
                out.insert(key.clone(), a);
                continue;
            }
            match refusal_result(method) {
                Some(r) => {
                    out.insert(key.clone(), r);
                    refused.push(format!("the task asked {key} ({method}) and no answer was given (--answer {key}=JSON or --input FILE); mcp-triage declined it so the task could go on"));
                }
                None => {
                    return Err(TaskInputError::Unanswered {
                        key: key.clone(),
                        method: method.to_string(),
                    });
                }
            }
        }
        Ok((out, refused))
    }

    /// Sleeps `wait` unless the deadline comes first or an interrupt arrives.
    async fn wait_or_stop(&self, run: &TaskRun<'_>, wait: Duration) -> Waited {
        let now = Instant::now();
        if let Some(i) = &run.interrupt {
            if i.is_requested() {
                return Waited::Stop(StopReason::Interrupted);
            }
        }
        if now + wait > run.deadline {
            // The next poll would come after the deadline: the client stops waiting at it.
            return match self.sleep_interruptible(run, run.deadline).await {
                true => Waited::Stop(StopReason::Deadline(run.budget)),
                false => Waited::Stop(StopReason::Interrupted),
            };
        }
        match self.sleep_interruptible(run, now + wait).await {
            true => Waited::Elapsed,
            false => Waited::Stop(StopReason::Interrupted),
        }
    }

    /// `true` when `until` came, `false` when an interrupt came first.
    async fn sleep_interruptible(&self, run: &TaskRun<'_>, until: Instant) -> bool {
        match &run.interrupt {
            None => {
                tokio::time::sleep_until(until).await;
                true
            }
            Some(i) => tokio::select! {
                _ = tokio::time::sleep_until(until) => true,
                _ = i.requested() => false,
            },
        }
    }

    /// One tasks/* exchange, bounded by the attempt timeout and the task's deadline, and
    /// abandoned on an interrupt. `Err` says why the client stopped instead.
    async fn task_request(
        &self,
        run: &TaskRun<'_>,
        method: &str,
        params: Value,
    ) -> Result<(Sent, Value), StopReason> {
        let deadline = (Instant::now() + self.opts.timeout).min(run.deadline);
        let exchange = self.task_exchange(run, method, &params, deadline);
        let sent = match &run.interrupt {
            None => exchange.await,
            Some(i) => tokio::select! {
                s = exchange => s,
                _ = i.requested() => return Err(StopReason::Interrupted),
            },
        };
        if sent.0.verdict.outcome == Outcome::Timeout && Instant::now() >= run.deadline {
            return Err(StopReason::Deadline(run.budget));
        }
        let (mut sent, id) = sent;
        if method != "tasks/get" {
            judge_ack(&mut sent, run, method);
        }
        Ok((sent, id))
    }

    /// One exchange of a tasks/* request with a given deadline (the tool's outputSchema goes
    /// with it: a completed task's result is judged against it, once).
    async fn task_exchange(
        &self,
        run: &TaskRun<'_>,
        method: &str,
        params: &Value,
        deadline: Instant,
    ) -> (Sent, Value) {
        let id = self.new_id();
        let session = self.state.lock().await.session_id.clone();
        let msg = self.build_message(method, params, &id, run.era, run.version, None);
        let schema = run.tool.as_ref().and_then(|t| t.output_schema.clone());
        let sent = self
            .exchange(
                &msg,
                &id,
                Negotiated {
                    era: run.era,
                    version: run.version,
                    session: session.as_deref(),
                },
                schema,
                deadline,
                None,
            )
            .await;
        (sent, id)
    }

    /// Sends `tasks/cancel` (the client stops waiting; the task must not run on for nobody),
    /// then reads the task once: if it finished before the cancel took effect, that is the
    /// call's verdict; otherwise the call ended without a result (`TIMEOUT`, or the
    /// `INPUT_REQUIRED` the task was left in). Either way a `TASK_CANCELLED` warning says
    /// who cancelled and why.
    async fn cancel_task(&self, run: &mut TaskRun<'_>, why: StopReason, rec: &mut CallRecord) {
        if let Some(last) = rec.attempts.len().checked_sub(1) {
            set_decision(
                rec,
                last,
                DecisionAction::Cancel,
                None,
                format!("{}; cancelling the task with tasks/cancel", why.text()),
            );
        }
        // The cancel gets its own deadline: the task's may be what has just passed.
        run.deadline = Instant::now() + self.opts.timeout;
        let saved = run.interrupt.take();
        let acked = match self
            .task_request(run, "tasks/cancel", json!({ "taskId": run.task_id }))
            .await
        {
            Ok((sent, id)) => {
                let idx = self.push_task_attempt(run, rec, &sent, &id, "cancel");
                let ok = sent.result().is_some();
                let reason = if ok {
                    "tasks/cancel acknowledged; reading the task's state once"
                } else {
                    "tasks/cancel was not acknowledged; reading the task's state once"
                };
                set_decision(rec, idx, DecisionAction::Poll, None, reason.to_string());
                ok
            }
            Err(_) => false,
        };
        rec.warn(
            "TASK_CANCELLED",
            format!(
                "cancelled by the client: {}; tasks/cancel {} for task {:?}",
                why.text(),
                if acked {
                    "acknowledged"
                } else {
                    "not acknowledged"
                },
                run.task_id
            ),
        );
        let finished = self.read_after_cancel(run, rec).await;
        run.interrupt = saved;
        if finished || why == StopReason::InputUnanswered {
            return;
        }
        let v = Verdict::timeout(format!(
            "{}; the task {:?} was cancelled (tasks/cancel) without a result",
            why.text(),
            run.task_id
        ));
        rec.outcome = v.outcome;
        rec.layer = v.layer;
        rec.result_type = None;
        rec.message = v.detail.clone();
    }

    /// Reads the task once after `tasks/cancel` (the extension lets a cancelled task still
    /// end otherwise). `true` when it had completed or failed: that end is the call's verdict.
    async fn read_after_cancel(&self, run: &mut TaskRun<'_>, rec: &mut CallRecord) -> bool {
        let end = self
            .task_request(run, "tasks/get", json!({ "taskId": run.task_id }))
            .await;
        let Ok((sent, id)) = end else {
            return false;
        };
        let idx = self.push_task_attempt(run, rec, &sent, &id, "poll");
        let status = sent
            .result()
            .and_then(|t| t["status"].as_str())
            .unwrap_or("")
            .to_string();
        if matches!(status.as_str(), "completed" | "failed") {
            let task = sent.result().cloned().unwrap_or(Value::Null);
            self.task_ended(run, sent, id, &task, &status, rec).await;
            // after task_ended, whose generic reason this one replaces (2025-11-25 may have
            // added a task_result attempt: the decision stays on this poll)
            let why = format!("the task ended {status} before the cancellation took effect");
            set_decision(rec, idx, DecisionAction::Done, None, why);
            return true;
        }
        let state = if status.is_empty() {
            "unknown"
        } else {
            &status
        };
        let why = format!("the task is {state}; the call has no result");
        set_decision(rec, idx, DecisionAction::GiveUp, None, why);
        false
    }

    /// Records a task exchange as an attempt, eliding the oldest working poll when the task's
    /// attempts exceed the cap. Returns the new attempt's index.
    fn push_task_attempt(
        &self,
        run: &mut TaskRun<'_>,
        rec: &mut CallRecord,
        sent: &Sent,
        id: &Value,
        kind: &str,
    ) -> usize {
        push_attempt(rec, sent, id, kind, None);
        let cap = self.opts.max_task_attempts.max(2);
        let task_kinds = |k: &str| matches!(k, "poll" | "update" | "cancel" | "task_result");
        let count = rec.attempts.iter().filter(|a| task_kinds(&a.kind)).count();
        if count > cap {
            elide_one_poll(rec, &mut run.elided);
        }
        rec.attempts.len() - 1
    }
}

/// Removes the oldest working poll after the first one (its HTTP status too, so
/// `httpStatuses` still lists the kept attempts' statuses in order). Only working polls go:
/// the first poll, input, updates, cancels and the final state stay.
fn elide_one_poll(rec: &mut CallRecord, elided: &mut u32) {
    let last = rec.attempts.len().saturating_sub(1);
    let mut first_poll_seen = false;
    let mut pick = None;
    for (i, a) in rec.attempts.iter().enumerate() {
        if a.kind != "poll" {
            continue;
        }
        if !first_poll_seen {
            first_poll_seen = true;
            continue;
        }
        if i < last && a.verdict.outcome == Outcome::TaskCreated {
            pick = Some(i);
            break;
        }
    }
    let Some(i) = pick else { return };
    if rec.attempts[i].status.is_some() {
        let pos = rec.attempts[..i]
            .iter()
            .filter(|a| a.status.is_some())
            .count();
        if pos < rec.http_statuses.len() {
            rec.http_statuses.remove(pos);
        }
    }
    rec.attempts.remove(i);
    for a in rec.attempts.iter_mut().skip(i) {
        // no task attempt names another; keep any index that pointed past the removed one right
        if let Some(r) = a.retry_of.as_mut() {
            if *r > i {
                *r -= 1;
            }
        }
    }
    *elided += 1;
}

/// The verdict of a `tasks/update` or `tasks/cancel` answer. The core judges every answer
/// but a poll by the tool-result rules, which would call the extension's empty
/// acknowledgement an invalid tool result; an acknowledgement says the task goes on (its
/// state is read with `tasks/get`), so it is recorded as `TASK_CREATED` for that task.
/// Transport failures and JSON-RPC errors keep the core's verdict.
fn judge_ack(sent: &mut Sent, run: &TaskRun<'_>, method: &str) {
    let Some(result) = sent.result().filter(|r| r.is_object()) else {
        return;
    };
    let mut v = Verdict::new(Outcome::TaskCreated).with_detail(format!(
        "{method} acknowledged; the state of task {:?} is read with tasks/get",
        run.task_id
    ));
    v.task_id = Some(run.task_id.clone());
    v.status = sent.verdict.status;
    if run.version.is_modern()
        && result.get("resultType").and_then(Value::as_str) != Some("complete")
    {
        v.warn(
            "TASK_RESULT_TYPE",
            format!("the {method} acknowledgement's resultType is not \"complete\", which the extension requires"),
        );
    }
    sent.verdict = v;
}

fn poll_reason(source: PaceSource, next: Duration) -> String {
    let why = match source {
        PaceSource::Server => "the server's pollIntervalMs",
        PaceSource::Backoff => "no pollIntervalMs: exponential backoff",
    };
    format!("next tasks/get in {} ms ({why})", next.as_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unanswerable_task_question_is_typed() {
        let target = crate::Target::url("http://127.0.0.1:9/mcp").unwrap();
        let c = Client::connect(target, crate::ClientOptions::default())
            .await
            .unwrap();
        let reqs: Map<String, Value> = serde_json::from_value(json!({
            "s": { "method": "sampling/createMessage", "params": {} } }))
        .unwrap();
        let e = c.task_input_responses(&reqs).unwrap_err();
        assert!(matches!(e, TaskInputError::Unanswered { ref key, .. } if key == "s"));
        assert_eq!(
            e.to_string(),
            "the task asked s (sampling/createMessage) and no answer was given (use --answer s=JSON or --input FILE)"
        );
        let e = TaskInputError::TooManyRounds { rounds: 8, max: 8 };
        assert_eq!(
            e.to_string(),
            "input still required after 8 round(s) (max-rounds 8)"
        );
        let e = TaskInputError::Update(StopReason::Interrupted);
        assert_eq!(e.to_string(), "the client was interrupted (SIGINT)");
    }

    #[test]
    fn the_servers_interval_wins_and_backoff_doubles_to_its_cap() {
        let mut p = PollPace::new(Duration::from_millis(500));
        let waits: Vec<u128> = (0..5).map(|_| p.next().0.as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 500, 500]);
        // a server's interval above the cap is honoured as it is: never poll faster than asked
        p.observe(&json!({ "pollIntervalMs": 2000 }));
        assert_eq!(p.next(), (Duration::from_millis(2000), PaceSource::Server));
        // a later state without one keeps it; the legacy name is read too
        p.observe(&json!({ "status": "working" }));
        assert_eq!(p.next().0, Duration::from_millis(2000));
        p.observe(&json!({ "pollInterval": 30 }));
        assert_eq!(p.next().0, Duration::from_millis(30));
    }

    #[test]
    fn an_interrupt_says_whether_a_task_will_be_cancelled() {
        let i = Interrupt::new();
        assert!(!i.is_requested());
        assert!(
            !i.request(),
            "no task open: the caller must stop the call itself"
        );
        assert!(i.is_requested());
        let j = Interrupt::new();
        j.set_task_open(true);
        assert!(j.request());
    }
}
