//! A tool call ([`Client::call_tool`]): the call loop that sends, records each attempt, and asks
//! the core retry policy what next (answer input, resend, resume, re-initialize, re-list, give
//! up), until one [`CallRecord`] says how the call ended.

use std::time::{Duration, Instant};

use mcp_triage_core::retry::{
    self, Delivery, InputRounds, RetryAction, RetryDecision, RetryInput, RetryOptions, ToolHints,
};
use mcp_triage_core::{CallRecord, DecisionAction, Outcome, ProtocolVersion, Verdict};
use mcp_triage_wire::canonical::hex;
use serde_json::{json, Value};

use crate::answers::input_responses;
use crate::call_record::{finish_from, finish_setup_failure, push_attempt, set_decision};
use crate::client::{Client, Era, HttpEndpoint, Negotiated, Transport};
use crate::options::CallOptions;
use crate::setup::{modern_version_offered, server_info, Probe};
use crate::task_driver;
use crate::tools::ToolInfo;
use crate::wire::Sent;

/// Outcomes that carry the server's answer to the request.
fn has_answer(o: Outcome) -> bool {
    matches!(
        o,
        Outcome::ToolSuccess
            | Outcome::ToolError
            | Outcome::JsonrpcError
            | Outcome::InputRequired
            | Outcome::TaskCreated
            | Outcome::InvalidToolResult
            | Outcome::StreamIncomplete
    )
}

/// A tool call in progress: what the next attempt sends, and what the loop has done so far
/// (the counts and flags the retry policy reads, a resumption to make, the verdict of the last
/// broken stream).
struct CallLoop<'a> {
    name: &'a str,
    co: &'a CallOptions,
    tool: Option<ToolInfo>,
    /// `{ name, arguments }` as the caller gave them.
    base: Value,
    /// What the next `tools/call` sends: `base`, plus the answers of an input round.
    params: Value,
    /// Each attempt's time limit.
    timeout: Duration,
    hints: ToolHints,
    policy: RetryOptions,
    resends: u32,
    resumes: u32,
    reinitialized: bool,
    relisted: bool,
    /// The modern probe already fell back to `initialize` once.
    fell_back: bool,
    /// The id and `Last-Event-ID` of a stream to resume next, instead of sending.
    resume: Option<(Value, String)>,
    /// The verdict of the last SSE stream that broke before its answer.
    stream_verdict: Option<Verdict>,
    /// Resent once already with the revision a -32022 named.
    version_retried: bool,
    /// The last attempt that sent the call (not a resumption): what a new attempt repeats.
    last_call_attempt: usize,
}

/// One attempt as it came back, and where it stands in the record.
struct Tried {
    sent: Sent,
    id: Value,
    /// The attempt's kind in the record (`call`, `input_round`, `resume`).
    kind: &'static str,
    /// Its index in the record's attempts.
    idx: usize,
}

/// Whether the call loop goes round again.
enum Flow {
    Again,
    Stop,
}

fn st_scenario_missing(rec: &CallRecord) -> bool {
    rec.scenario.is_none()
}

/// `scheme://host:port` of a URL, lower-cased (for same-origin checks).
pub(crate) fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    Some(format!(
        "{}://{}",
        scheme.to_ascii_lowercase(),
        authority.to_ascii_lowercase()
    ))
}

/// The strings of a JSON array from the server, each sanitised to one line of at most `max`
/// characters (they end up in messages a person reads); anything else gives none.
fn sanitized_strings(v: &Value, max: usize) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| mcp_triage_core::sanitize_line(s, max))
        .collect()
}

/// A random record id (16 hex digits), independent of the jitter seed.
fn record_id() -> String {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        b = t.to_le_bytes();
    }
    hex(&b)
}

impl Client {
    /// Calls a tool: every attempt classified, every resend decided by the core policy, one
    /// record. Never fails: a call that could not even start is a record with its verdict.
    pub async fn call_tool(&self, name: &str, arguments: Value, co: CallOptions) -> CallRecord {
        let started = Instant::now();
        let mut rec = self.new_call_record(name, &arguments, &co);
        self.run_call(name, arguments, &co, &mut rec).await;
        self.stamp_connection(&mut rec).await;
        if let Transport::Stdio(conn) = &self.transport {
            if matches!(rec.layer, mcp_triage_core::Layer::Transport) {
                rec.stderr_tail = conn.lock().await.settled_stderr_tail().await;
            }
        }
        let pending = self
            .pending_notes
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default();
        for (code, detail) in pending {
            rec.warn(&code, detail);
        }
        rec.duration_ms = started.elapsed().as_millis() as u64;
        rec
    }

    /// The record of a call the caller decided not to send (e.g. arguments that do not match
    /// the listed `inputSchema`): why a record at all, because a script reading `--log` or
    /// stdout must tell a refusal from a crash. It names the tool, target, connection and
    /// arguments as a sent call's record does, has no attempts and `postCount` 0, and carries
    /// the warning `CALL_REFUSED` (then `code`'s own) with `detail`. Its outcome is
    /// `JSONRPC_ERROR` on the protocol layer without an `errorCode`: invalid params are a
    /// protocol error, and nothing in the record claims the server said so.
    pub async fn refused_call(
        &self,
        name: &str,
        arguments: Value,
        co: CallOptions,
        code: &str,
        detail: &str,
    ) -> CallRecord {
        let mut rec = self.new_call_record(name, &arguments, &co);
        self.stamp_connection(&mut rec).await;
        rec.outcome = mcp_triage_core::Outcome::JsonrpcError;
        rec.layer = rec.outcome.layer();
        rec.message = Some(mcp_triage_core::sanitize_line(
            &format!("refused before sending: {detail}"),
            mcp_triage_core::MAX_MESSAGE_CHARS,
        ));
        rec.warnings.insert(
            0,
            mcp_triage_core::Warning {
                code: "CALL_REFUSED".into(),
                detail: format!("nothing was sent: {detail}"),
            },
        );
        rec.warn(code, detail);
        rec
    }

    /// A fresh `tools/call` record for this client: id, tool, target, retry origin and the
    /// arguments' digest (the arguments themselves only with `log_arguments`).
    fn new_call_record(&self, name: &str, arguments: &Value, co: &CallOptions) -> CallRecord {
        let mut rec = CallRecord::new(
            format!("{}@{}", self.opts.client_name, self.opts.client_version),
            self.transport_name(),
            "tools/call",
        );
        rec.record_id = Some(record_id());
        rec.tool = Some(name.to_string());
        rec.target = Some(self.target.describe());
        rec.retry_origin = co.retry_origin;
        rec.retry_of = co.retry_of.clone();
        let digest = mcp_triage_wire::canonical::ArgumentsDigest::of(arguments);
        rec.arguments_hash = digest.hex;
        rec.arguments_size = digest.size;
        if self.opts.log_arguments {
            rec.arguments = Some(arguments.clone());
        }
        rec
    }

    /// What the connection says about a record once the call is over: transport, negotiated
    /// version, session, scenario, server, and a failed `tools/list`.
    async fn stamp_connection(&self, rec: &mut CallRecord) {
        rec.transport = self.transport_name().to_string();
        let st = self.state.lock().await;
        rec.protocol_version = st.version.as_str().to_string();
        if st.era.is_none() {
            rec.protocol_version = "unknown".into();
        }
        rec.session_id = st.session_id.clone();
        rec.scenario = self
            .opts
            .scenario
            .clone()
            .or(rec.scenario.take())
            .or(st.scenario.clone());
        if rec.server_info.is_none() {
            rec.server_info = st.server_info.clone();
        }
        if let Some(f) = &st.list_failure {
            rec.warn("TOOLS_LIST_FAILED", f.clone());
        }
    }

    /// The call loop: an attempt, its record, and what the policy (or the protocol) says to do
    /// next, until the call is done or given up.
    async fn run_call(&self, name: &str, arguments: Value, co: &CallOptions, rec: &mut CallRecord) {
        if !self.list_tools_first(rec).await {
            return;
        }
        let tool = self
            .state
            .lock()
            .await
            .tools
            .as_ref()
            .and_then(|t| t.get(name).cloned());
        let mut policy = self.opts.retry.clone();
        policy.idempotency_key |= co.idempotency_key.is_some();
        let base = json!({ "name": name, "arguments": arguments });
        let mut call = CallLoop {
            name,
            co,
            timeout: co.timeout.unwrap_or(self.opts.timeout),
            hints: tool.as_ref().map(|t| t.hints).unwrap_or_default(),
            tool,
            params: base.clone(),
            base,
            policy,
            resends: 0,
            resumes: 0,
            reinitialized: false,
            relisted: false,
            fell_back: false,
            resume: None,
            stream_verdict: None,
            version_retried: false,
            last_call_attempt: 0,
        };
        loop {
            let (era, version) = match self.ensure_era().await {
                Ok(x) => x,
                Err(f) => return finish_setup_failure(rec, f),
            };
            let session = self.state.lock().await.session_id.clone();
            let with = Negotiated {
                era: era.unwrap_or(Era::Modern),
                version,
                session: session.as_deref(),
            };
            let tried = self.attempt(&mut call, with, rec).await;
            // Era detection on the first modern attempt.
            if era.is_none() && !call.fell_back {
                if let Some(flow) = self.after_first_modern(&mut call, &tried, rec).await {
                    match flow {
                        Flow::Again => continue,
                        Flow::Stop => return,
                    }
                }
            }
            if let Flow::Stop = self.next_step(&mut call, tried, with, rec).await {
                return;
            }
        }
    }

    /// With `list_tools_first`: lists the tools before the first call. False when the call
    /// cannot go on (initialize failed, or the server could not be reached at all): the record
    /// says why.
    async fn list_tools_first(&self, rec: &mut CallRecord) -> bool {
        if self.opts.list_tools_first && self.state.lock().await.tools.is_none() {
            if let Err(f) = self.fetch_tools().await {
                if f.kind == "initialize"
                    || f.sent.verdict.outcome == Outcome::ConnectionError
                        && f.sent.delivery == Delivery::NeverSent
                {
                    finish_setup_failure(rec, f);
                    return false;
                }
                self.state.lock().await.list_failure = Some(f.why);
            }
        }
        true
    }

    /// Sends the call (or resumes its stream) once and records the attempt.
    async fn attempt(
        &self,
        c: &mut CallLoop<'_>,
        with: Negotiated<'_>,
        rec: &mut CallRecord,
    ) -> Tried {
        let (era_now, version, session) = (with.era, with.version, with.session);
        let deadline = tokio::time::Instant::now() + c.timeout;
        let schema = c.tool.as_ref().and_then(|t| t.output_schema.clone());
        let mut resumed_from = None;
        let (mut sent, id, kind) = if let Some((id, last_event_id)) = c.resume.take() {
            let s = self
                .resume_stream(&id, &last_event_id, version, session, schema, deadline)
                .await;
            resumed_from = Some(last_event_id);
            (s, id, "resume")
        } else {
            let id = self.new_id();
            let mut send = c.params.clone();
            if self.opts.use_tasks && era_now == Era::Legacy {
                // 2025-11-25 task augmentation is per request.
                send["task"] = json!({ "ttl": 60_000 });
            }
            let msg = self.build_message("tools/call", &send, &id, era_now, version, Some(c.co));
            let call = self.exchange(&msg, &id, with, schema, deadline, c.tool.as_ref());
            let s = call.await;
            // "sent" means it left: an attempt that could not connect was not sent.
            if s.delivery != Delivery::NeverSent {
                rec.post_count += 1;
            }
            let kind = if rec.rounds > 0 {
                "input_round"
            } else {
                "call"
            };
            (s, id, kind)
        };
        if st_scenario_missing(rec) {
            rec.scenario = sent.scenario.clone();
        }
        let idx = rec.attempts.len();
        push_attempt(
            rec,
            &sent,
            &id,
            kind,
            (idx > 0).then_some(c.last_call_attempt),
        );
        if kind != "resume" {
            c.last_call_attempt = idx;
        }
        rec.rounds += sent.answered;
        for (code, detail) in &sent.notes {
            rec.warn(code, detail.clone());
        }
        for w in &sent.verdict.warnings {
            rec.warn(&w.code, w.detail.clone());
        }
        finish_from(rec, &sent, &id, self.opts.keep_result);
        if kind == "resume" && !has_answer(sent.verdict.outcome) {
            // Resuming found nothing more: the call still ended with the broken stream.
            if let Some(prev) = c.stream_verdict.as_ref() {
                rec.warn(
                    "RESUME_FAILED",
                    format!("resuming the stream gave {}", sent.verdict.to_text_line()),
                );
                rec.outcome = prev.outcome;
                rec.layer = prev.layer;
                rec.message = prev.detail.clone();
            }
        }
        if sent.verdict.outcome == Outcome::StreamIncomplete {
            // A resumed stream that broke again before any event with an id: nothing newer
            // was received, so the next resumption asks from the same Last-Event-ID (the
            // record above keeps what this stream itself carried).
            if let (Some(from), Some(stream)) = (resumed_from, sent.verdict.stream.as_mut()) {
                if stream.last_event_id.is_none() {
                    stream.last_event_id = Some(from);
                }
            }
        }
        if sent.sse && sent.verdict.outcome == Outcome::StreamIncomplete {
            c.stream_verdict = Some(sent.verdict.clone());
        }
        if let Some(info) = sent
            .result()
            .and_then(|r| r["_meta"].get("io.modelcontextprotocol/serverInfo"))
        {
            rec.server_info = server_info(info);
        }
        Tried {
            sent,
            id,
            kind,
            idx,
        }
    }

    /// After the first attempt in modern form to a server of unknown era: falls back to
    /// `initialize` when the answer says the server does not speak it (`None`: it does).
    async fn after_first_modern(
        &self,
        c: &mut CallLoop<'_>,
        tried: &Tried,
        rec: &mut CallRecord,
    ) -> Option<Flow> {
        let (sent, idx) = (&tried.sent, tried.idx);
        let Probe::FallBack(v) = self.after_modern_probe(sent).await else {
            return None;
        };
        c.fell_back = true;
        set_decision(rec, idx, DecisionAction::Reinitialize, None, format!(
            "HTTP {} without a 2026-07-28 JSON-RPC error: the server does not speak the modern revision; falling back to initialize ({})",
            sent.status.unwrap_or(0), v.as_str()));
        let mut st = self.state.lock().await;
        if st.era.is_none() {
            if let Err(f) = self.initialize_locked(&mut st, v).await {
                drop(st);
                finish_setup_failure(rec, f);
                return Some(Flow::Stop);
            }
        }
        Some(Flow::Again)
    }

    /// What follows an attempt: the retry policy decides (answer input, drive a task, resend,
    /// resume, re-initialize, re-list, give up or stop), its decision goes into the attempt, and
    /// the client carries it out. The client decides nothing itself about what comes next;
    /// it gives up on its own only when it cannot carry out a decision (no answer to give).
    async fn next_step(
        &self,
        c: &mut CallLoop<'_>,
        tried: Tried,
        with: Negotiated<'_>,
        rec: &mut CallRecord,
    ) -> Flow {
        let d = self.decide(c, &tried, with, rec);
        rec.attempts[tried.idx].decision = Some(d.to_record());
        self.carry_out(c, tried, with, d.action, rec).await
    }

    /// Asks the core retry policy what to do after the attempt, with what the call loop knows:
    /// the counts and flags so far, and what this client is able to do (answer input rounds up
    /// to `max_rounds`, drive tasks).
    fn decide(
        &self,
        c: &CallLoop<'_>,
        tried: &Tried,
        with: Negotiated<'_>,
        rec: &CallRecord,
    ) -> RetryDecision {
        let (sent, kind) = (&tried.sent, tried.kind);
        let (era_now, session) = (with.era, with.session);
        // A resumption the server refused (the kitchen's `410 Stream gone`: the stream
        // ended without its response) leaves the call where the broken stream left it:
        // decide as for that stream, minus the resumption (resend if safe, else give up),
        // not as for an HTTP error of its own.
        // A resumption whose connection broke before any answer (no status) refused
        // nothing: the stream may be resumed again from the same event.
        let refused_resume = (kind == "resume" && !sent.sse && !has_answer(sent.verdict.outcome))
            .then(|| c.stream_verdict.clone())
            .flatten()
            .map(|mut v| {
                if let Some(s) = v.stream.as_mut().filter(|_| sent.status.is_some()) {
                    s.last_event_id = None;
                }
                v
            });
        let input = RetryInput {
            verdict: refused_resume.as_ref().unwrap_or(&sent.verdict),
            tool: c.name,
            hints: c.hints,
            delivery: sent.delivery,
            resends: c.resends,
            resumes: c.resumes,
            local_server: self.target.is_local(),
            legacy_session: era_now == Era::Legacy && session.is_some(),
            legacy_stream: era_now == Era::Legacy && sent.sse,
            reinitialized: c.reinitialized,
            relisted: c.relisted,
            // the only revision this client sends in modern form is 2026-07-28
            revision_offered: (era_now == Era::Modern && modern_version_offered(sent))
                .then_some(ProtocolVersion::V2026_07_28),
            revision_resent: c.version_retried,
            // the input requests are read from the result: without one there is nothing to answer
            input_rounds: sent.result().is_some().then_some(InputRounds {
                answered: rec.rounds,
                max: self.opts.max_rounds,
            }),
            drives_tasks: true,
        };
        retry::decide(&input, &c.policy, &mut || self.random())
    }

    /// Carries out the policy's action (already recorded in the attempt): stop, answer input,
    /// drive the task, or wait and resend, resume, re-initialize or re-list before the next
    /// attempt.
    async fn carry_out(
        &self,
        c: &mut CallLoop<'_>,
        tried: Tried,
        with: Negotiated<'_>,
        action: RetryAction,
        rec: &mut CallRecord,
    ) -> Flow {
        let Tried { sent, id, idx, .. } = tried;
        match action {
            RetryAction::Done => return Flow::Stop,
            RetryAction::AnswerInput => return self.input_round(c, &sent, idx, rec),
            RetryAction::DriveTask => {
                self.drive_created_task(c, &sent, with, rec).await;
                return Flow::Stop;
            }
            // the same request again, at once: it was refused before it ran
            RetryAction::ResendWithRevision(_) => c.version_retried = true,
            RetryAction::GiveUp => {
                if matches!(sent.verdict.status, Some(401 | 403)) {
                    self.report_auth(&sent.verdict, rec).await;
                }
                return Flow::Stop;
            }
            RetryAction::Resend { delay_ms } => {
                c.resends += 1;
                rec.retry_origin = if rec.retry_origin == mcp_triage_core::RetryOrigin::None {
                    mcp_triage_core::RetryOrigin::Sdk
                } else {
                    rec.retry_origin
                };
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            }
            RetryAction::Resume {
                last_event_id,
                delay_ms,
            } => {
                c.resumes += 1;
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                c.resume = Some((id, last_event_id));
            }
            RetryAction::Reinitialize => {
                c.reinitialized = true;
                if let Err(f) = self.reinitialize(with.session).await {
                    finish_setup_failure(rec, f);
                    return Flow::Stop;
                }
            }
            RetryAction::RelistTools => {
                c.relisted = true;
                if let Err(f) = self.fetch_tools().await {
                    self.state.lock().await.list_failure = Some(f.why);
                }
            }
        }
        Flow::Again
    }

    /// The policy's `answer_input`: the next attempt resends with the answers and the exact
    /// `requestState`. When there are no answers to give, the call gives up here, and the
    /// attempt's decision says why in place of the policy's.
    fn input_round(
        &self,
        c: &mut CallLoop<'_>,
        sent: &Sent,
        idx: usize,
        rec: &mut CallRecord,
    ) -> Flow {
        let result = sent.result().cloned().unwrap_or(Value::Null);
        match input_responses(&self.opts, &result) {
            Ok(responses) => {
                c.params = c.base.clone();
                if let Some(r) = responses {
                    c.params["inputResponses"] = r;
                }
                if let Some(state) = result.get("requestState") {
                    c.params["requestState"] = state.clone();
                }
                rec.rounds += 1;
                Flow::Again
            }
            Err(why) => {
                let why = why.to_string();
                rec.warn("INPUT_UNANSWERED", why.clone());
                set_decision(rec, idx, DecisionAction::GiveUp, None, why);
                Flow::Stop
            }
        }
    }

    /// The policy's `poll`: drives the task the call created to its end. The driver replaces
    /// the attempt's decision with its own, which names the wait before the first poll.
    async fn drive_created_task(
        &self,
        c: &CallLoop<'_>,
        sent: &Sent,
        with: Negotiated<'_>,
        rec: &mut CallRecord,
    ) {
        let task_id = sent.verdict.task_id.clone().unwrap_or_default();
        let created = sent.result().cloned().unwrap_or(Value::Null);
        let budget = self
            .opts
            .task_timeout
            .or(c.co.timeout)
            .unwrap_or(self.opts.timeout);
        let mut run =
            task_driver::TaskRun::new(task_id, with.era, with.version, &c.tool, budget, c.co);
        self.drive_task(&mut run, &created, rec).await;
    }

    /// After a 401/403: the challenge, and the protected-resource metadata it names (fetched
    /// only from the target's own origin, bounded), as an `AUTH_REQUIRED` warning.
    async fn report_auth(&self, v: &Verdict, rec: &mut CallRecord) {
        let Some(c) = &v.auth_challenge else {
            rec.warn(
                "AUTH_REQUIRED",
                format!(
                    "HTTP {} without a WWW-Authenticate challenge",
                    v.status.unwrap_or(0)
                ),
            );
            return;
        };
        let mut detail = format!("{} challenge", c.scheme);
        if let Some(e) = &c.error {
            detail.push_str(&format!(", error {e}"));
        }
        if let Some(s) = &c.scope {
            detail.push_str(&format!(", scope {s:?}"));
        }
        if let (Some(meta), Transport::Http(HttpEndpoint { http, url, .. })) =
            (&c.resource_metadata, &self.transport)
        {
            detail.push_str(&format!(", resource metadata {meta}"));
            if origin(meta).is_some() && origin(meta) == origin(url) {
                let fetched = tokio::time::timeout(self.opts.timeout, async {
                    let resp = http
                        .get(meta)
                        .header("Accept", "application/json")
                        .send()
                        .await
                        .ok()?;
                    if !resp.status().is_success() {
                        return None;
                    }
                    let mut resp = resp;
                    let mut body = Vec::new();
                    while let Ok(Some(chunk)) = resp.chunk().await {
                        body.extend_from_slice(&chunk);
                        if body.len() > 64 * 1024 {
                            return None;
                        }
                    }
                    serde_json::from_slice::<Value>(&body).ok()
                })
                .await
                .ok()
                .flatten();
                match fetched {
                    Some(doc) => {
                        let servers = sanitized_strings(&doc["authorization_servers"], 200);
                        let scopes = sanitized_strings(&doc["scopes_supported"], 100);
                        detail.push_str(&format!(
                            ": authorization servers [{}], scopes [{}]",
                            servers.join(", "),
                            scopes.join(", ")
                        ));
                    }
                    None => detail.push_str(" (could not be read)"),
                }
            } else {
                detail.push_str(" (on another origin: not fetched)");
            }
        }
        rec.warn(
            "AUTH_REQUIRED",
            mcp_triage_core::sanitize_line(&detail, 600),
        );
    }

    /// 2025-11-25: the outcome of a terminal task, from `tasks/result` (the call's own answer,
    /// judged as the `tools/call` answer it stands for).
    pub(crate) async fn task_result(
        &self,
        task_id: &str,
        era: Era,
        version: ProtocolVersion,
        session: Option<&str>,
        rec: &mut CallRecord,
        tool: &Option<ToolInfo>,
    ) {
        let rid = self.new_id();
        let msg = self.build_message(
            "tasks/result",
            &json!({ "taskId": task_id }),
            &rid,
            era,
            version,
            None,
        );
        let deadline = tokio::time::Instant::now() + self.opts.timeout;
        let schema = tool.as_ref().and_then(|t| t.output_schema.clone());
        let s = self
            .exchange(
                &msg,
                &rid,
                Negotiated {
                    era,
                    version,
                    session,
                },
                schema,
                deadline,
                None,
            )
            .await;
        push_attempt(rec, &s, &rid, "task_result", None);
        finish_from(rec, &s, &rid, self.opts.keep_result);
    }
}
