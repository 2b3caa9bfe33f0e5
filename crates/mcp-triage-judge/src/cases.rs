//! The cases `judge` runs: which kitchen scenario (with which parameters) a client meets,
//! which tool it is asked to call, and which checks grade what the kitchen saw.

use std::borrow::Cow;

use mcp_triage_core::Outcome;
use serde_json::{json, Value};

/// One graded check kind (see `checks.rs` for what each means).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckKind {
    /// The client sent the tools/call the case asks for.
    ToolCalled,
    /// A tool that is neither read-only nor idempotent is not run again by a resend after an
    /// attempt that may have executed (graded by effect: the journal's `executed` and
    /// `deduplicated`).
    NoUnsafeResend,
    /// A resend after a transport failure waits (at least [`crate::checks::MIN_BACKOFF_MS`]).
    Backoff,
    /// A read-only call: at most 2 resends, the first no sooner than 200 ms.
    BoundedResend,
    /// No new tools/call before Retry-After has passed.
    RetryAfter,
    /// No automatic resend after a tool error or JSON-RPC error.
    NoAutoResend,
    /// A tool error whose failure the server declared (draft SEP #3313 ToolFailure) is resent
    /// only when declared a `retryable` `reliability` failure, of a tool safe to run again,
    /// and not before its `retryNotBefore`.
    HonoursDeclaredClass,
    /// MRTR retry: new id, exact requestState, the inputResponses keys asked for.
    MrtrRetry,
    /// A re-issued call after a cut stream carries a new id.
    ReissueNewId,
    /// 2025-11-25 resumption: GET + Last-Event-ID, not before `retry:`.
    ResumeGet,
    /// A resumed stream that drops again before any event with an id is resumed again with
    /// the same `Last-Event-ID` (not none, not another, not a re-POST).
    ResumeAgain,
    /// After session expiry: a new initialize without the old session id.
    Reinitialize,
    /// 2026-07-28 header rules on every request.
    Headers2026,
    /// The client finished before the judge's timeout.
    InTime,
    /// The client ended with success (exit 0) or a stated failure, not silently.
    ReportedOutcome,
    /// OAuth: bounded 401s, authorizations and token requests (no loop).
    AuthBounded,
    /// OAuth: an expired access token is recovered by exactly one refresh.
    RefreshOnce,
    /// OAuth: 403 insufficient_scope on tools/call, then re-authorized and called again.
    ScopeStepUp,
    /// OAuth: every token presented was asked for this resource (RFC 8707).
    TokenAudience,
    /// Progress past the client's timeout: a client that asked for progress keeps waiting
    /// while it flows and gets the result.
    ProgressKeepsAlive,
    /// OAuth with DPoP (RFC 9449): the calls that got through carried a proof of the bound
    /// key, and no proof was refused.
    DpopProof,
    /// OAuth: no usable token can be had; the client stops with a stated failure.
    GivesUp,
    /// `judge --replay`: the client ends as the captured line it was last served says.
    CapturedOutcome,
    /// Tools that changed: after the server said a tool is unknown, no tools/call without a
    /// tools/list first.
    RelistBeforeCall,
    /// Tasks: `tasks/get` no faster than the `pollInterval` the kitchen asked for.
    PollPace,
    /// Tasks: no `tasks/get` after the task reached a terminal state.
    StopsAtTerminal,
    /// Tasks: the `tools/call` that created a task is not sent again.
    NoCreateResend,
    /// Tasks: a task left unfinished is cancelled with `tasks/cancel`.
    CancelsAbandoned,
}

/// What repeating the case's tool does, by its annotations (the kitchen's catalogue, or the
/// captured `tools/list` of a replay).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ToolSafety {
    /// `readOnlyHint: true`.
    pub read_only: bool,
    /// `idempotentHint: true`.
    pub idempotent: bool,
}

impl ToolSafety {
    /// From a tool definition's `annotations` (absent hints are false, as the spec's defaults).
    pub fn of(tool: &Value) -> ToolSafety {
        let hint = |k: &str| tool["annotations"][k] == true;
        ToolSafety {
            read_only: hint("readOnlyHint"),
            idempotent: hint("idempotentHint"),
        }
    }

    /// Whether running it again has no further effect.
    pub fn repeatable(self) -> bool {
        self.read_only || self.idempotent
    }

    /// The kitchen catalogue's annotations of `tool` (none for the scenario tool).
    pub fn kitchen(tool: &str) -> ToolSafety {
        mcp_triage_kitchen::catalogue::static_tools()
            .iter()
            .find(|t| t["name"] == tool)
            .map(ToolSafety::of)
            .unwrap_or_default()
    }
}

impl CheckKind {
    /// Name in the matrix and the reports.
    pub fn name(self) -> &'static str {
        match self {
            CheckKind::ToolCalled => "tool_called",
            CheckKind::NoUnsafeResend => "no_unsafe_resend",
            CheckKind::Backoff => "backoff",
            CheckKind::BoundedResend => "bounded_resend",
            CheckKind::RetryAfter => "retry_after",
            CheckKind::NoAutoResend => "no_auto_resend",
            CheckKind::HonoursDeclaredClass => "honours_declared_class",
            CheckKind::MrtrRetry => "mrtr_retry",
            CheckKind::ReissueNewId => "reissue_new_id",
            CheckKind::ResumeGet => "resume_get",
            CheckKind::ResumeAgain => "resume_again",
            CheckKind::Reinitialize => "reinitialize",
            CheckKind::Headers2026 => "headers_2026",
            CheckKind::InTime => "in_time",
            CheckKind::ReportedOutcome => "reported_outcome",
            CheckKind::AuthBounded => "auth_bounded",
            CheckKind::RefreshOnce => "refresh_once",
            CheckKind::ScopeStepUp => "scope_step_up",
            CheckKind::TokenAudience => "token_audience",
            CheckKind::DpopProof => "dpop_proof",
            CheckKind::ProgressKeepsAlive => "progress_keeps_alive",
            CheckKind::GivesUp => "gives_up",
            CheckKind::CapturedOutcome => "captured_outcome",
            CheckKind::RelistBeforeCall => "relist_before_call",
            CheckKind::PollPace => "poll_pace",
            CheckKind::StopsAtTerminal => "stops_at_terminal",
            CheckKind::NoCreateResend => "no_create_resend",
            CheckKind::CancelsAbandoned => "cancels_abandoned",
        }
    }

    /// Where the expectation comes from.
    pub fn references(self) -> &'static [&'static str] {
        match self {
            CheckKind::ToolCalled => &["judge: a case grades nothing unless the client calls the tool"],
            CheckKind::NoUnsafeResend => &[
                "seed article: payments, database writes and notifications must not be repeated because of a 503 without an idempotency key or server-side deduplication",
                "spec digest §tools annotations: readOnlyHint and idempotentHint default to false, so a tool without annotations is one whose repetition has an effect",
                "judge: graded by effect: a resend fails when the attempt before it may have run (journal executed: true, or no answer) and the resend ran the tool again (not deduplicated by an honoured idempotency key)",
            ],
            CheckKind::Backoff => &[
                "seed article: retries start with a 200 ms initial exponential backoff plus jitter",
                "judge: a resend after a transport failure (5xx, a cut stream, a dropped connection) comes no sooner than 200 ms after the attempt before it; a 429 is graded by retry_after, a 401/403/404 session expiry by the auth and reinitialize checks",
            ],
            CheckKind::BoundedResend => &[
                "seed article: for side-effect-free reads start with at most two retries, 200 ms initial exponential backoff plus jitter",
                "spec digest §tools annotations: readOnlyHint true (read_counter)",
            ],
            CheckKind::RetryAfter => &[
                "seed article: with 429, a real Retry-After takes precedence",
                "RFC 9110 §10.2.3 Retry-After",
            ],
            CheckKind::NoAutoResend => &[
                "seed article: a tool error (isError) and a JSON-RPC error are answers, not transport failures; retryOrigin separates SDK retry, business logic and manual click",
                "sdk-behaviour-and-crates.md §2.5: no SDK retries tools/call on its own",
            ],
            CheckKind::HonoursDeclaredClass => &[
                "draft SEP #3313 (ToolFailure) client behavior: capability and governance failures MUST NOT be auto-retried; a reliability failure MAY be, only when retryable is true and the tool's idempotentHint permits it, and MUST NOT be before retryNotBefore",
                "judge: graded on the kitchen's answer as the core reads it (journal answer.declaredFailure); a call sent after that answer ended is a resend of the declared failure",
            ],
            CheckKind::MrtrRetry => &[
                "spec 2026-07-28 mrtr.mdx: the client MUST echo back the exact value of requestState when retrying",
                "seed article: in the MRTR retry the JSON-RPC id must change",
            ],
            CheckKind::ReissueNewId => &[
                "spec basic/index.mdx: the request ID MUST NOT have been previously used by the requestor within the same session",
                "spec 2026-07-28 transports: streams are not resumable; a lost response means a new request",
            ],
            CheckKind::ResumeGet => &[
                "spec 2025-11-25 transports §resumability: resumption is always via HTTP GET with Last-Event-ID",
                "spec 2025-11-25 transports: the client MUST respect the retry field (wait that long before reconnecting)",
            ],
            CheckKind::ResumeAgain => &[
                "spec 2025-11-25 transports §resumability: the client SHOULD include the ID of the last event it received in Last-Event-ID; no event with an id came since, so that is the same one",
                "typescript-sdk #2499: a second drop after resuming left the client without a Last-Event-ID",
            ],
            CheckKind::Reinitialize => &[
                "spec 2025-11-25 transports §session management: on 404 for a request with Mcp-Session-Id the client MUST start a new session by sending a new InitializeRequest without a session ID",
            ],
            CheckKind::Headers2026 => &[
                "spec 2026-07-28 transports: MCP-Protocol-Version, Mcp-Method and Mcp-Name (tools/call, resources/read, prompts/get) are required on every request",
            ],
            CheckKind::InTime => &[
                "judge: a client that waits for its own timeout on a stream that already ended keeps the user waiting (e.g. a cut SSE stream)",
                "kitchen sse.cut_before_response: a resumption (GET + Last-Event-ID) with nothing left to replay is answered 410 Stream gone, so reconnecting on is not 2025-11-25 polling; sse.cut_mid_event: the resumption delivers the response",
            ],
            CheckKind::ReportedOutcome => &[
                "judge: a client ends with success or a stated failure; one that exits non-zero without a word, or with a runtime's own exit (Node 13: unsettled top-level await), leaves its user without an answer",
            ],
            CheckKind::AuthBounded => &[
                "RFC 6750 §3.1 invalid_token: the client MAY request a new access token and retry; one that is refused again is no reason to try forever",
                "spec 2025-11-25 basic/authorization §Error Handling: 401 means authorization required or token invalid; the client gets a token once, not in a loop",
            ],
            CheckKind::RefreshOnce => &[
                "RFC 6749 §1.5 and §6: a refresh token obtains a new access token when the current one expires, without a new authorization",
                "spec 2025-11-25 basic/authorization §Token Handling; OAuth 2.1 draft §4.3 refresh token grant",
            ],
            CheckKind::ScopeStepUp => &[
                "spec 2025-11-25 basic/authorization §Scope Challenge Handling: on 403 with error=\"insufficient_scope\" the client SHOULD re-authorize with the challenge's scope and retry (with a bound on attempts)",
                "RFC 6750 §3.1 insufficient_scope",
            ],
            CheckKind::ProgressKeepsAlive => &[
                "spec basic/lifecycle §Timeouts (2026: basic/patterns/cancellation): implementations MAY choose to reset the timeout clock when receiving a progress notification … SHOULD always enforce a maximum timeout",
                "opencode #28186: a host gave up at its fixed timeout while progress flowed",
            ],
            CheckKind::DpopProof => &[
                "RFC 9449 §4 and §7.1: a DPoP-bound access token is sent as Authorization: DPoP with a proof of the bound key (ath = hash of the token) on every request",
                "RFC 9449 §8 and §9: a use_dpop_nonce error is answered once with the server's DPoP-Nonce in a new proof",
            ],
            CheckKind::TokenAudience => &[
                "spec 2025-11-25 basic/authorization §Resource Parameter Implementation: clients MUST send the resource parameter (RFC 8707) naming the MCP server in authorization and token requests",
                "spec 2025-11-25 basic/authorization §Access Token Privilege Restriction / security best practices (token passthrough): a token is for the server it was issued for and MUST NOT be sent elsewhere",
            ],
            CheckKind::GivesUp => &[
                "spec 2025-11-25 basic/authorization §Authorization Code Protection: if code_challenge_methods_supported is absent the client MUST refuse to proceed",
                "RFC 9728 §3 / RFC 8414 §3: without the metadata there is no authorization server to ask; the client ends with a stated failure (non-zero exit, a message), not a loop or silence",
            ],
            CheckKind::RelistBeforeCall => &[
                "spec digest §tools list_changed: when the list of tools changes the server sends notifications/tools/list_changed and the client fetches tools/list again",
                "judge: a -32602 \"Unknown tool\" answer says the list the client acted on is stale; a next call (the same name again, or a guessed new one) comes after a fresh tools/list",
            ],
            CheckKind::PollPace => &[
                "tasks extension (SEP-2663): the task's pollInterval is the server's suggestion for how often to poll tasks/get; a client polls no faster",
                "judge: consecutive tasks/get of one task at least 80% of the kitchen's pollInterval apart (250 ms asked, 200 ms accepted: timer slack)",
            ],
            CheckKind::StopsAtTerminal => &[
                "tasks extension (SEP-2663): completed, failed and cancelled are terminal; a terminal task does not change again, so polling on is load without news",
            ],
            CheckKind::NoCreateResend => &[
                "tasks extension (SEP-2663): the result of a task-augmented call is the task; its outcome is read with tasks/get, and a second tools/call starts a second task (the tool runs twice)",
            ],
            CheckKind::CancelsAbandoned => &[
                "tasks extension (SEP-2663): tasks/cancel asks the server to stop a task; a client that stops waiting (its deadline, the user) cancels, so the work does not run on for nobody",
            ],
            CheckKind::CapturedOutcome => &[
                "issue 14: a failure captured in production and replayed gives the client what the server gave it then; the classifier's verdict of the captured line says whether the call succeeded",
                "seed article: a client reports a failed call as failed (with its layer) and a successful one as successful",
            ],
        }
    }
}

/// One case: a scenario instance, the tool to call, the checks.
#[derive(Clone, Debug)]
pub struct CaseDef {
    /// Case id (what `--scenario` selects and `MCP_TRIAGE_SCENARIO` carries).
    pub id: Cow<'static, str>,
    /// Kitchen scenario id ([`REPLAY_SCENARIO`] for a case of `judge --replay`).
    pub scenario: Cow<'static, str>,
    /// Scenario parameters.
    pub params: Value,
    /// Tool the client should call.
    pub tool: Cow<'static, str>,
    /// Its arguments.
    pub arguments: Value,
    /// The checks besides `tool_called`, `headers_2026`, `in_time` and `reported_outcome`
    /// (every case has those).
    pub checks: Cow<'static, [CheckKind]>,
    /// Retry-After the scenario sends, in ms (rate-limited case).
    pub retry_after_ms: u64,
    /// An OAuth case: the client runs with `MCP_TRIAGE_AUTH=oauth` and should authorize
    /// (following the kitchen's auto-approving redirect) when the server asks.
    pub oauth: bool,
    /// A case of `judge --replay`: what the capture says the call's exchanges were.
    pub captured: Option<Captured>,
    /// What repeating the tool does (`no_unsafe_resend` reads it).
    pub safety: ToolSafety,
    /// Why a correct client may decline to call the tool at all (it is not in the list the
    /// client gets; it runs only as a task): then not calling it, with a stated failure, is
    /// `tool_called` n/a rather than a failure.
    pub may_decline: Option<&'static str>,
    /// The request timeout the client is asked to use (`MCP_TRIAGE_REQUEST_TIMEOUT_MS`), where
    /// the case is about what happens past it (`timeout.progress_keepalive`).
    pub client_timeout_ms: Option<u64>,
}

/// The scenario name of `judge --replay` cases.
pub const REPLAY_SCENARIO: &str = "replay";

/// The captured exchanges of one replayed call (one replay key), each with the verdict the
/// classifier gives its captured line: what the client met, and so how it should have ended.
#[derive(Clone, Debug, Default)]
pub struct Captured {
    /// `(seq, verdict)` per captured line of the call's key, in `seq` order.
    pub lines: Vec<(u64, CapturedVerdict)>,
}

/// The classifier's verdict of one captured line, as far as grading needs it.
#[derive(Clone, Debug)]
pub struct CapturedVerdict {
    /// The outcome.
    pub outcome: Outcome,
    /// The verdict's one-line text (`layer/OUTCOME status=… — detail`).
    pub text: String,
    /// The text of a tool result's content (a tool error's message), if any.
    pub tool_text: Option<String>,
}

impl Captured {
    /// Whether any captured line had `outcome`.
    pub fn has(&self, outcome: Outcome) -> bool {
        self.lines.iter().any(|(_, v)| v.outcome == outcome)
    }
    /// The verdict of the line with `seq`.
    pub fn verdict(&self, seq: u64) -> Option<&CapturedVerdict> {
        self.lines.iter().find(|(s, _)| *s == seq).map(|(_, v)| v)
    }
}

/// The tool most cases call: the scenario's own configurable tool.
const RUN_TOOL: &str = "run_configured_test_scenario";

/// The arguments most cases call their tool with.
fn judge_message() -> Value {
    json!({ "message": "from mcp-triage judge" })
}

/// A plain case: `scenario` with `params`, calling `tool` with `arguments`, graded by `checks`
/// (the tool's safety from the kitchen catalogue).
fn case(
    id: &'static str,
    scenario: &'static str,
    params: Value,
    tool: &'static str,
    arguments: Value,
    checks: &'static [CheckKind],
) -> CaseDef {
    CaseDef {
        id: Cow::Borrowed(id),
        scenario: Cow::Borrowed(scenario),
        params,
        tool: Cow::Borrowed(tool),
        arguments,
        checks: Cow::Borrowed(checks),
        retry_after_ms: 0,
        oauth: false,
        captured: None,
        safety: ToolSafety::kitchen(tool),
        may_decline: None,
        client_timeout_ms: None,
    }
}

/// Most cases: the scenario's own id, its run_configured_test_scenario tool, one message.
fn scenario_case(id: &'static str, params: Value, checks: &'static [CheckKind]) -> CaseDef {
    case(id, id, params, RUN_TOOL, judge_message(), checks)
}

/// Every case, in the order the matrix shows them.
pub fn all() -> Vec<CaseDef> {
    let mut all = vec![scenario_case("baseline", json!({}), &[])];
    all.extend(error_answer_cases());
    all.extend(second_request_cases());
    all.extend(tool_changed_cases());
    all.extend(task_extension_cases());
    // Only tools/call counts, so the 404 lands on the call whatever a client sends first
    // (notifications/initialized, tools/list, logging/setLevel); one session expires, so a
    // client that re-initializes can finish its call.
    all.push(scenario_case(
        "session.expire",
        json!({ "afterRequests": 0, "countMethod": "tools/call", "sessions": 1 }),
        &[CheckKind::Reinitialize],
    ));
    all.extend(oauth_cases());
    all
}

/// Cases where the server answers with an error (503, 429, a tool or JSON-RPC error): their
/// own group because each grades whether, and when, the client may send the call again.
fn error_answer_cases() -> Vec<CaseDef> {
    use CheckKind::*;
    vec![
        // errors.http_status_per_method rather than http_status_sequence: the sequence counts
        // every POST (initialize, notifications), so which request meets the 503 would depend
        // on how many requests a client sends first; per method, the tools/call always does.
        case(
            "http_503.increment_counter",
            "errors.http_status_per_method",
            json!({ "rules": { "tools/call": 503 } }),
            "increment_counter",
            json!({ "by": 1 }),
            &[],
        ),
        // A 503 *after* the tool ran, as a gateway past its own timeout answers: unlike the
        // server's own 503 above, a resend of increment_counter runs it again, so a client
        // that resends a call with side effects after any 5xx fails no_unsafe_resend here.
        case(
            "gateway_503.increment_counter",
            "chaos.mix",
            json!({ "seed": 5, "rates": { "gateway_503": 1.0 }, "methods": ["tools/call"] }),
            "increment_counter",
            json!({ "by": 1 }),
            &[],
        ),
        case(
            "http_503.read_counter",
            "errors.http_status_per_method",
            json!({ "rules": { "tools/call": 503 } }),
            "read_counter",
            json!({}),
            &[BoundedResend],
        ),
        CaseDef {
            retry_after_ms: 1000,
            ..scenario_case(
                "errors.rate_limited",
                json!({ "retryAfter": "1", "onInvocation": 1 }),
                &[RetryAfter],
            )
        },
        scenario_case("errors.tool_error", json!({}), &[NoAutoResend]),
        // Progress every 250 ms for 4 s, past the 1.5 s request timeout the client is asked
        // to use (MCP_TRIAGE_REQUEST_TIMEOUT_MS).
        CaseDef {
            client_timeout_ms: Some(1500),
            ..scenario_case(
                "timeout.progress_keepalive",
                json!({ "totalMs": 4000, "intervalMs": 250 }),
                &[ProgressKeepsAlive],
            )
        },
        // A read-only tool (safe to resend by its annotations) whose failure the server
        // declares not retryable (draft SEP #3313): the declaration, not the annotation, says
        // whether to send it again.
        declared_case(
            "errors.declared_non_retryable",
            json!({ "class": "reliability", "code": "upstream_quota_exhausted", "retryable": false,
                    "agentGuidance": "Do not retry: the upstream quota resets tomorrow." }),
        ),
        // Declared retryable after 1 s: not resending is fine, resending sooner is not.
        declared_case(
            "errors.declared_retryable",
            json!({ "class": "reliability", "code": "retryable_transient_error", "retryable": true,
                    "retryNotBeforeMs": 1000 }),
        ),
        scenario_case("errors.jsonrpc_error", json!({}), &[NoAutoResend]),
    ]
}

/// Cases where the client must send a second request for the same call (an MRTR round, a
/// re-issue or resumption after a cut stream): their own group because the checks grade that
/// request's form (new id, requestState, Last-Event-ID) and whether it runs the tool again.
fn second_request_cases() -> Vec<CaseDef> {
    use CheckKind::*;
    vec![
        scenario_case("elicitation.approval", json!({}), &[MrtrRetry]),
        scenario_case("sse.cut_before_response", json!({}), &[ReissueNewId]),
        scenario_case("sse.cut_mid_event", json!({}), &[ReissueNewId]),
        scenario_case("sse.priming_then_close", json!({}), &[ResumeGet]),
        // The resumption drops again before any event with an id: resume again, same id.
        CaseDef {
            id: Cow::Borrowed("sse.second_drop"),
            ..scenario_case(
                "sse.priming_then_close",
                json!({ "dropResumes": 1 }),
                &[ResumeGet, ResumeAgain],
            )
        },
        // Every call runs and then loses its answer: a resend of increment_counter adds again,
        // unless the server honours the client's idempotency key (the second case).
        case(
            "sse_cut.increment_counter",
            "chaos.mix",
            cut_after_execution("ignore"),
            "increment_counter",
            json!({ "by": 1 }),
            &[],
        ),
        case(
            "sse_cut.increment_counter.keys_honoured",
            "chaos.mix",
            cut_after_execution("honour"),
            "increment_counter",
            json!({ "by": 1 }),
            &[],
        ),
    ]
}

/// Cases where the tool asked for is taken away (`catalog.mutation`): their own group because
/// a correct client may decline the call, and the checks grade the relisting instead.
fn tool_changed_cases() -> Vec<CaseDef> {
    vec![
        // The tool the client is asked for is renamed / removed when its timeline starts
        // (legacy: at initialize; 2026-07-28: its first request), before it can call it: the
        // call meets -32602 "Unknown tool", which must end in a stated failure, not a resend.
        scenario_tool_changed(
            "catalog.mutation.renamed",
            json!({ "action": "rename", "toolName": RUN_TOOL, "newName": "run_configured_test_scenario_v2", "afterMs": 0 }),
        ),
        scenario_tool_changed(
            "catalog.mutation.removed",
            json!({ "action": "remove", "toolName": RUN_TOOL, "afterMs": 0 }),
        ),
    ]
}

/// Cases of the 2026-07-28 tasks extension on the fixture tools: their own group because
/// they share the task checks and grade polling, not resends.
fn task_extension_cases() -> Vec<CaseDef> {
    vec![
        // Tasks (2026-07-28 tasks extension, on every instance's fixture tools): a client
        // that declares the extension gets a task and must follow it to its end; one that does
        // not runs slow_compute synchronously or meets -32021 for the task-only tools.
        task_case(
            "tasks.completed",
            "slow_compute",
            json!({ "seconds": 1, "label": "judge" }),
        ),
        task_case("tasks.tool_error", "failing_job", json!({})),
        task_case("tasks.failed", "protocol_error_job", json!({})),
        task_case(
            "tasks.input",
            "confirm_delete",
            json!({ "filename": "judge.txt" }),
        ),
        // Still working when its 1.5 s lifetime ends: tasks/get then answers -32602 (expired).
        task_case(
            "tasks.expired",
            "slow_compute",
            json!({ "seconds": 5, "label": "judge", "ttlMs": 1500 }),
        ),
    ]
}

/// Cases of the kitchen's authorization server misbehaving (`auth.oauth_flow`): their own
/// group because they run with `MCP_TRIAGE_AUTH=oauth` and grade the authorization, not the call.
fn oauth_cases() -> Vec<CaseDef> {
    use CheckKind::*;
    vec![
        oauth_case(
            "auth.expired_token",
            &[AuthBounded, RefreshOnce, TokenAudience],
        ),
        oauth_case("auth.revoked_refresh", &[AuthBounded, TokenAudience]),
        oauth_case(
            "auth.scope_step_up",
            &[ScopeStepUp, AuthBounded, TokenAudience],
        ),
        oauth_case(
            "auth.wrong_audience",
            &[GivesUp, AuthBounded, TokenAudience],
        ),
        // The kitchen's authorization server issues DPoP-bound tokens (and demands nonces).
        oauth_case("auth.dpop", &[DpopProof, AuthBounded, TokenAudience]),
        oauth_case("auth.dpop_nonce", &[DpopProof, AuthBounded, TokenAudience]),
        oauth_case("auth.missing_pkce", &[GivesUp]),
        oauth_case("auth.metadata_404", &[GivesUp]),
    ]
}

/// The checks of a task case.
const TASK_CHECKS: &[CheckKind] = &[
    CheckKind::NoCreateResend,
    CheckKind::PollPace,
    CheckKind::StopsAtTerminal,
    CheckKind::CancelsAbandoned,
];

/// A task case: the `baseline` scenario (its fixture tools), calling `tool`.
fn task_case(id: &'static str, tool: &'static str, arguments: Value) -> CaseDef {
    CaseDef {
        id: Cow::Borrowed(id),
        scenario: Cow::Borrowed("baseline"),
        params: json!({}),
        tool: Cow::Borrowed(tool),
        arguments,
        checks: Cow::Borrowed(TASK_CHECKS),
        retry_after_ms: 0,
        oauth: false,
        captured: None,
        safety: ToolSafety::default(),
        may_decline: (mcp_triage_kitchen::fixtures_tasks::task_support(tool)
            == Some(mcp_triage_kitchen::fixtures_tasks::TaskSupport::Required))
        .then_some(
            "the tool runs only as a task of the 2026-07-28 tasks extension (execution.taskSupport: required; not listed in the legacy era), which a client without that extension cannot call",
        ),
        client_timeout_ms: None,
    }
}

/// An `errors.tool_failure` case with `params`: its tool is read-only and idempotent (the
/// scenario lists it so), and the check is whether the client honours the declared failure.
fn declared_case(id: &'static str, params: Value) -> CaseDef {
    CaseDef {
        safety: ToolSafety {
            read_only: true,
            idempotent: true,
        },
        ..case(
            id,
            "errors.tool_failure",
            params,
            RUN_TOOL,
            judge_message(),
            &[CheckKind::HonoursDeclaredClass],
        )
    }
}

/// A `catalog.mutation` case whose one `mutation` takes the scenario tool away.
fn scenario_tool_changed(id: &'static str, mutation: Value) -> CaseDef {
    CaseDef {
        id: Cow::Borrowed(id),
        scenario: Cow::Borrowed("catalog.mutation"),
        params: json!({ "mutations": [mutation] }),
        tool: Cow::Borrowed("run_configured_test_scenario"),
        arguments: json!({ "message": "from mcp-triage judge" }),
        checks: Cow::Borrowed(&[CheckKind::NoAutoResend, CheckKind::RelistBeforeCall]),
        retry_after_ms: 0,
        oauth: false,
        captured: None,
        safety: ToolSafety::default(),
        may_decline: Some(
            "the tool is no longer in tools/list, and a client (an agent framework) may call only listed tools",
        ),
        client_timeout_ms: None,
    }
}

/// `chaos.mix` cutting the answer of every `tools/call` after the tool ran (other methods
/// pass), with idempotency keys `honour`ed or `ignore`d.
fn cut_after_execution(keys: &str) -> Value {
    json!({ "seed": 5, "rates": { "sse_cut": 1.0 }, "methods": ["tools/call"], "idempotencyKeys": keys })
}

/// An `auth.oauth_flow` case: `auth.<fault>` meets the kitchen's authorization server
/// misbehaving as `fault` says. The kitchen approves every authorization at once by
/// redirecting, so a client that follows the redirect needs no person; one that does no OAuth
/// fails these cases, which is its gap.
fn oauth_case(id: &'static str, checks: &'static [CheckKind]) -> CaseDef {
    let fault = id.strip_prefix("auth.").expect("auth.<fault>");
    CaseDef {
        id: Cow::Borrowed(id),
        scenario: Cow::Borrowed("auth.oauth_flow"),
        params: json!({ "fault": fault }),
        tool: Cow::Borrowed("run_configured_test_scenario"),
        arguments: json!({ "message": "from mcp-triage judge" }),
        checks: Cow::Borrowed(checks),
        retry_after_ms: 0,
        oauth: true,
        captured: None,
        safety: ToolSafety::default(),
        may_decline: None,
        client_timeout_ms: None,
    }
}
