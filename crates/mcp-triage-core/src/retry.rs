//! The retry policy: after each attempt of a call, decide whether to send it again, resume a
//! stream, re-establish state, answer an input round, drive a task, or stop — and say why in
//! one sentence.
//!
//! The policy is pure: the caller passes the attempt's [`Verdict`], what it knows about the tool
//! and about delivery, how many resends and input rounds it already made, what it is able to do
//! (answer input, drive tasks), the options, and a random source for jitter. Nothing here sleeps
//! or sends; the client executes the returned [`RetryAction`] (building the answers, polling
//! the task), and only an execution that fails (no answer to give) ends a call otherwise.
//!
//! [`RetryAction`] is not `#[non_exhaustive]`: a caller that executes actions (the client) must
//! match every one, so that a new action fails its build instead of falling into a default arm.
//!
//! The rules (issue 4 §4), in the order they apply:
//! 1. a final answer ends the call (`TOOL_SUCCESS`, `TOOL_ERROR`; a tool error the server
//!    declared a retryable `reliability` failure, draft SEP #3313, is resent when the call is
//!    safe, not before its `retryNotBefore`, and a declared non-retryable one never); so do
//!    `INPUT_REQUIRED` and `TASK_CREATED`, unless the caller says it answers input rounds
//!    ([`RetryInput::input_rounds`]: answer and resend, or give up once `max` rounds were
//!    answered) or drives tasks ([`RetryInput::drives_tasks`]: poll the task). Callers that do
//!    not (the C ABI, the bindings) get `done` for both, the answer being theirs to act on;
//! 2. 401/403: never resend — the challenge says what to fix;
//! 3. a legacy stream that carried event ids and broke off is **resumed** (GET + `Last-Event-ID`),
//!    which re-executes nothing, so it needs no safety, only its own bound;
//! 4. a legacy 404 on a session → re-initialize, then resend once; `-32020` HeaderMismatch →
//!    re-list tools, then resend once;
//! 5. a request that **never reached** the server (connect refused, DNS) may always be resent;
//! 6. a `-32023` RateLimited error (the draft SEP-3304, as a JSON-RPC error or in a 429's body)
//!    was refused unrun, so it is resent whatever the tool does, after its `retryAfterMs` plus
//!    up to a tenth of jitter;
//! 7. otherwise only a **safe** call is resent (read-only or idempotent annotations when trusted,
//!    a tool named safe, or an idempotency key), and only after 408, 429, 502, 503, 504,
//!    `CONNECTION_ERROR`, `TIMEOUT` or `STREAM_INCOMPLETE`;
//! 8. everything else is given up: tool errors, JSON-RPC errors, invalid responses, other 4xx.
//!
//! At most `max_retries` resends; the delay is exponential backoff from `base` with jitter over
//! the whole doubling step (the n-th resend waits uniformly between `base × factor^n` and
//! `base × factor^(n+1)`), unless the server sent `Retry-After`, which takes precedence. The
//! floor matters: "backoff from 200 ms" means no resend sooner than 200 ms (the seed's and
//! `judge`'s `bounded_resend` check), while the jitter still spreads a herd of clients over
//! the step. A `Retry-After` beyond `max_wait` gives up rather than wait that long or ignore it.

use serde::Deserialize;

use crate::protocol::ProtocolVersion;
use crate::verdict::{FailureClass, Outcome, Verdict};

/// The JSON-RPC error code of a 2026-07-28 `HeaderMismatch` (headers disagree with the body).
pub const HEADER_MISMATCH: i64 = -32020;

/// The JSON-RPC error code of a rate-limited request in the draft SEP-3304 (in no released spec
/// version yet): the server refused the request before running it, `error.data.retryAfterMs`
/// says how long to wait, and over HTTP it comes with a 429. Rate limits an upstream API hit
/// inside a tool stay tool errors (`isError`, its rule RL-6), so this code means "not run".
pub const RATE_LIMITED: i64 = -32023;

/// What the client knows about whether the request reached the server. Its wire names
/// (`never_sent`, `sent`, `maybe_executed`) are what embedders (the Python and Node bindings) pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// The request never left: connect refused, DNS failure, TLS failure before sending.
    NeverSent,
    /// The server received the request and answered with a response head (a status), so it
    /// decided on the request; whether the tool ran is not known.
    Sent,
    /// The request was written but the exchange broke before a complete answer (reset, cut
    /// stream, timeout): the tool may well have run.
    MaybeExecuted,
}

impl Delivery {
    fn describe(self) -> &'static str {
        match self {
            Delivery::NeverSent => "the request never reached the server",
            Delivery::Sent => "the server received the request",
            Delivery::MaybeExecuted => "the request was sent and may have run",
        }
    }
}

/// The tool's behaviour hints from `tools/list` (absent hints are `None`). It deserialises from
/// the tool's `annotations` object as MCP sends it; the members the policy does not read (`title`,
/// `destructiveHint`, `openWorldHint`, ...) are ignored there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct ToolHints {
    /// `annotations.readOnlyHint`.
    #[serde(rename = "readOnlyHint", default)]
    pub read_only: Option<bool>,
    /// `annotations.idempotentHint`.
    #[serde(rename = "idempotentHint", default)]
    pub idempotent: Option<bool>,
}

/// Whether the tool's annotations may be believed (wire names `local_only`, `trust`, `distrust`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnnotationTrust {
    /// Believe them for local servers (stdio, loopback), not for remote ones: annotations are
    /// hints from the server, and only a server the user runs is trusted by default.
    #[default]
    LocalOnly,
    /// `--trust-annotations`.
    Trust,
    /// `--distrust-annotations`.
    Distrust,
}

/// Policy options; the defaults are the issue's (2 resends, 200 ms ×2 backoff, 30 s max wait).
/// It deserialises from an object with camelCase members (`maxRetries`, `backoffBaseMs`,
/// `trust`, `safeTools`, ...), each optional; an unknown member is an error, so that a misspelt
/// option is reported rather than silently left at its default.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct RetryOptions {
    /// Most resends of the request (resumes and re-initialisation are bounded separately).
    pub max_retries: u32,
    /// Most stream resumptions per call.
    pub max_resumes: u32,
    /// Backoff base in milliseconds.
    pub backoff_base_ms: u64,
    /// Backoff growth factor per resend.
    pub backoff_factor: u32,
    /// Longest single wait in milliseconds; a longer `Retry-After` gives up.
    pub max_wait_ms: u64,
    /// Whether to believe tool annotations.
    pub trust: AnnotationTrust,
    /// Tools the user declared safe to resend (`--safe-tool`).
    pub safe_tools: Vec<String>,
    /// Whether the call carries an idempotency key (`--idempotency-key`), letting the server
    /// deduplicate resends.
    pub idempotency_key: bool,
}

impl Default for RetryOptions {
    fn default() -> Self {
        RetryOptions {
            max_retries: 2,
            max_resumes: 5,
            backoff_base_ms: 200,
            backoff_factor: 2,
            max_wait_ms: 30_000,
            trust: AnnotationTrust::LocalOnly,
            safe_tools: Vec::new(),
            idempotency_key: false,
        }
    }
}

/// How far a caller that answers MRTR `input_required` results has gone in this call, so that
/// the policy, not the caller, decides between another input round and giving up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputRounds {
    /// Input rounds already answered in this call (each an answered request of the server).
    pub answered: u32,
    /// Most input rounds per call (the client's `--max-rounds`).
    pub max: u32,
}

/// Everything the policy looks at for one decision.
#[derive(Debug, Clone)]
pub struct RetryInput<'a> {
    /// The verdict of the attempt just made.
    pub verdict: &'a Verdict,
    /// The tool name (for the safe-tool list).
    pub tool: &'a str,
    /// The tool's hints, if `tools/list` was read.
    pub hints: ToolHints,
    /// What is known about delivery.
    pub delivery: Delivery,
    /// Resends already made for this call (0 after the first attempt).
    pub resends: u32,
    /// Resumptions already made for this call.
    pub resumes: u32,
    /// The server is local (stdio or a loopback address), for [`AnnotationTrust::LocalOnly`].
    pub local_server: bool,
    /// The exchange used a legacy session (`Mcp-Session-Id`).
    pub legacy_session: bool,
    /// The response was a legacy (≤ 2025-11-25) SSE stream, which may be resumed.
    pub legacy_stream: bool,
    /// The session was already re-initialised once during this call.
    pub reinitialized: bool,
    /// Tools were already re-listed once during this call.
    pub relisted: bool,
    /// A revision this caller speaks that a -32022 `UnsupportedProtocolVersion` answer lists as
    /// supported (`error.data.supported`): the server refused the request before it ran, so
    /// sending it again with that revision runs the tool at most once. `None` when the answer
    /// is no such refusal, or the caller does not read refusals (the C ABI and the bindings).
    pub revision_offered: Option<ProtocolVersion>,
    /// The call was already resent once after such a refusal.
    pub revision_resent: bool,
    /// `Some` when the caller answers an `input_required` result in a new round (the client):
    /// the policy then says whether another round is allowed. `None` when it does not answer
    /// input requests (the C ABI and the bindings), or the answer carries no result to read
    /// them from: `input_required` is then the call's end (`done`).
    pub input_rounds: Option<InputRounds>,
    /// The caller drives a created task to its end by polling it (the client); when false a
    /// `task_created` answer is the call's end (`done`), the task the caller's to follow.
    pub drives_tasks: bool,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryAction {
    /// The attempt ended the call (a final answer, or one for the caller to act on).
    Done,
    /// Send the request again with a new id after `delay_ms`.
    Resend {
        /// Milliseconds to wait first.
        delay_ms: u64,
    },
    /// GET the stream again with `Last-Event-ID` after `delay_ms`.
    Resume {
        /// The last event id seen.
        last_event_id: String,
        /// Milliseconds to wait first (the server's `retry:` when it sent one).
        delay_ms: u64,
    },
    /// Initialise a new session, then resend once.
    Reinitialize,
    /// Call `tools/list` again, then resend once.
    RelistTools,
    /// Stop; the verdict stands.
    GiveUp,
    /// Send the request again at once, with a new id and the revision a -32022 refusal named
    /// (see [`RetryInput::revision_offered`]). Recorded as `resend`, since it is one; its own
    /// variant because the caller changes the revision, and does not count it against
    /// `max_retries` (nothing ran).
    ResendWithRevision(ProtocolVersion),
    /// Answer the server's input requests and send the request again with a new id, the
    /// answers and the exact `requestState` (an MRTR input round; see
    /// [`RetryInput::input_rounds`]). Recorded as `answer_input`. Building the answers is the
    /// caller's: when it has none to give, it gives up itself and records why.
    AnswerInput,
    /// Drive the task the server created to its end: poll it, never resend the request (the
    /// server is already running it; see [`RetryInput::drives_tasks`]). Recorded as `poll`,
    /// without a delay: the wait before the first poll is the task's `pollIntervalMs` or the
    /// caller's backoff, which the caller knows, so it records its own decision in its place.
    DriveTask,
}

impl RetryAction {
    /// The record's wire name (`done`, `resend`, `resume`, `reinitialize`, `relist_tools`,
    /// `give_up`, `answer_input`, `poll`).
    pub fn as_str(&self) -> &'static str {
        self.recorded().as_str()
    }

    /// The record's word for this action (`ResendWithRevision` is a resend, `DriveTask` a poll).
    pub fn recorded(&self) -> crate::record::DecisionAction {
        use crate::record::DecisionAction as D;
        match self {
            RetryAction::Done => D::Done,
            RetryAction::Resend { .. } | RetryAction::ResendWithRevision(_) => D::Resend,
            RetryAction::Resume { .. } => D::Resume,
            RetryAction::Reinitialize => D::Reinitialize,
            RetryAction::RelistTools => D::RelistTools,
            RetryAction::GiveUp => D::GiveUp,
            RetryAction::AnswerInput => D::AnswerInput,
            RetryAction::DriveTask => D::Poll,
        }
    }

    /// The wait before the next attempt, when there is one.
    pub fn delay_ms(&self) -> Option<u64> {
        match self {
            RetryAction::Resend { delay_ms } | RetryAction::Resume { delay_ms, .. } => {
                Some(*delay_ms)
            }
            RetryAction::ResendWithRevision(_) => Some(0),
            _ => None,
        }
    }
}

/// The policy's answer: an action and the sentence that justifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryDecision {
    /// What to do.
    pub action: RetryAction,
    /// Why, in one sentence a person can check against the rules.
    pub reason: String,
}

impl RetryDecision {
    fn new(action: RetryAction, reason: impl Into<String>) -> Self {
        RetryDecision {
            action,
            reason: reason.into(),
        }
    }

    /// The record form of this decision.
    pub fn to_record(&self) -> crate::record::Decision {
        crate::record::Decision {
            action: self.action.recorded(),
            delay_ms: self.action.delay_ms(),
            reason: self.reason.clone(),
        }
    }
}

/// Why a call is safe to resend, or `None` when it is not.
pub fn safety(input: &RetryInput<'_>, opts: &RetryOptions) -> Option<String> {
    if opts.idempotency_key {
        return Some("the call carries an idempotency key".into());
    }
    if opts.safe_tools.iter().any(|t| t == input.tool) {
        return Some(format!("{:?} is declared safe (--safe-tool)", input.tool));
    }
    let trusted = match opts.trust {
        AnnotationTrust::Trust => true,
        AnnotationTrust::Distrust => false,
        AnnotationTrust::LocalOnly => input.local_server,
    };
    if trusted {
        if input.hints.read_only == Some(true) {
            return Some("the tool is annotated readOnlyHint".into());
        }
        if input.hints.idempotent == Some(true) {
            return Some("the tool is annotated idempotentHint".into());
        }
    }
    None
}

fn unsafe_reason(input: &RetryInput<'_>, opts: &RetryOptions) -> String {
    let annotated = input.hints.read_only == Some(true) || input.hints.idempotent == Some(true);
    if annotated {
        match opts.trust {
            AnnotationTrust::Distrust => {
                "its read-only/idempotent annotations are distrusted (--distrust-annotations)"
                    .into()
            }
            _ => "its read-only/idempotent annotations come from a remote server and are not \
                  trusted (use --trust-annotations)"
                .into(),
        }
    } else {
        "the tool is neither read-only nor idempotent, not declared safe, and the call has no \
         idempotency key"
            .into()
    }
}

/// Exponential backoff with jitter over the doubling step: uniform in
/// `[base × factor^resends, base × factor^(resends+1)]`, both ends capped by `max_wait`.
pub fn backoff_ms(opts: &RetryOptions, resends: u32, random: &mut dyn FnMut() -> f64) -> u64 {
    let factor = u64::from(opts.backoff_factor.max(1));
    let step = |n: u32| {
        factor
            .checked_pow(n)
            .and_then(|f| opts.backoff_base_ms.checked_mul(f))
            .unwrap_or(u64::MAX)
            .min(opts.max_wait_ms)
    };
    let floor = step(resends);
    let ceiling = step(resends.saturating_add(1));
    let r = random().clamp(0.0, 1.0);
    floor + ((ceiling - floor) as f64 * r).round() as u64
}

/// Decides what follows an attempt. `random` returns numbers in `[0, 1)` for the jitter.
pub fn decide(
    input: &RetryInput<'_>,
    opts: &RetryOptions,
    random: &mut dyn FnMut() -> f64,
) -> RetryDecision {
    let v = input.verdict;
    use RetryAction::*;
    match v.outcome {
        Outcome::ToolSuccess => return RetryDecision::new(Done, "a successful tool result"),
        Outcome::ToolError => return tool_error(input, opts, random),
        Outcome::InputRequired => return input_required(input.input_rounds),
        Outcome::TaskCreated if input.drives_tasks => {
            return RetryDecision::new(
                DriveTask,
                "the server created a task; polling it to its end, never resending the call it is running",
            )
        }
        Outcome::TaskCreated => {
            return RetryDecision::new(Done, "the server created a task; poll it for the result")
        }
        _ => {}
    }

    // Refused before it ran, naming a revision we speak: resending runs it at most once.
    if let (Some(revision), false) = (input.revision_offered, input.revision_resent) {
        return RetryDecision::new(
            ResendWithRevision(revision),
            format!(
                "-32022 UnsupportedProtocolVersion lists {}: the request was refused before it ran; resending with that revision",
                revision.as_str()
            ),
        );
    }

    if let Some(status @ (401 | 403)) = v.status {
        let mut reason =
            format!("HTTP {status}: credentials are missing or insufficient; never resent");
        if let Some(c) = &v.auth_challenge {
            reason.push_str(&format!("; challenge {}", c.scheme));
            if let Some(e) = &c.error {
                reason.push_str(&format!(" error={e}"));
            }
            if let Some(s) = &c.scope {
                reason.push_str(&format!(" scope={s:?}"));
            }
            if let Some(m) = &c.resource_metadata {
                reason.push_str(&format!("; protected-resource metadata at {m}"));
            }
        }
        return RetryDecision::new(GiveUp, reason);
    }

    // A broken legacy stream with event ids: resume, which re-executes nothing.
    let broke_off = matches!(
        v.outcome,
        Outcome::StreamIncomplete | Outcome::ConnectionError | Outcome::Timeout
    );
    if broke_off && input.legacy_stream {
        if let Some(id) = v.stream.as_ref().and_then(|s| s.last_event_id.clone()) {
            if !id.is_empty() {
                if input.resumes >= opts.max_resumes {
                    return RetryDecision::new(
                        GiveUp,
                        format!(
                            "the stream broke off again after {} resumption(s) (max {})",
                            input.resumes, opts.max_resumes
                        ),
                    );
                }
                let server_retry = v.stream.as_ref().and_then(|s| s.retry_ms);
                let (delay, why) = match server_retry {
                    Some(ms) if ms > opts.max_wait_ms => {
                        return RetryDecision::new(
                            GiveUp,
                            format!(
                                "the server asked to reconnect after {ms} ms (retry:), beyond max-wait {} ms",
                                opts.max_wait_ms
                            ),
                        )
                    }
                    Some(ms) => (ms, format!("after the server's retry: {ms} ms")),
                    None => {
                        let d = backoff_ms(opts, input.resumes, random);
                        (d, format!("after {d} ms backoff"))
                    }
                };
                return RetryDecision::new(
                    Resume {
                        last_event_id: id.clone(),
                        delay_ms: delay,
                    },
                    format!(
                        "the stream broke off after event {id:?}; resuming with Last-Event-ID re-executes nothing ({why})"
                    ),
                );
            }
        }
    }

    // Lost session / stale tool headers: repair once, then resend once.
    if v.status == Some(404) && input.legacy_session {
        if input.reinitialized {
            return RetryDecision::new(
                GiveUp,
                "HTTP 404 on a session that was already re-initialised during this call",
            );
        }
        return RetryDecision::new(
            Reinitialize,
            "HTTP 404 on a legacy session: the server forgot it; re-initialise, then resend once",
        );
    }
    if v.code == Some(HEADER_MISMATCH) {
        if input.relisted {
            return RetryDecision::new(
                GiveUp,
                "-32020 HeaderMismatch again after re-listing tools",
            );
        }
        return RetryDecision::new(
            RelistTools,
            "-32020 HeaderMismatch: the headers disagree with the body; re-list tools, then resend once",
        );
    }

    let exhausted = || {
        RetryDecision::new(
            GiveUp,
            format!(
                "{} resend(s) already made (max-retries {})",
                input.resends, opts.max_retries
            ),
        )
    };
    let delay = |random: &mut dyn FnMut() -> f64| -> Result<(u64, String), RetryDecision> {
        match v.retry_after_ms {
            Some(ms) if ms > opts.max_wait_ms => Err(RetryDecision::new(
                GiveUp,
                format!(
                    "Retry-After asks for {ms} ms, beyond max-wait {} ms; not waiting that long",
                    opts.max_wait_ms
                ),
            )),
            Some(ms) => Ok((ms, format!("Retry-After {ms} ms"))),
            None => {
                let d = backoff_ms(opts, input.resends, random);
                Ok((d, format!("{d} ms backoff")))
            }
        }
    };

    if input.delivery == Delivery::NeverSent && v.outcome == Outcome::ConnectionError {
        if input.resends >= opts.max_retries {
            return exhausted();
        }
        return match delay(random) {
            Ok((d, why)) => RetryDecision::new(
                Resend { delay_ms: d },
                format!(
                    "{}; resending is always safe ({why})",
                    Delivery::NeverSent.describe()
                ),
            ),
            Err(give_up) => give_up,
        };
    }

    if v.code == Some(RATE_LIMITED)
        && matches!(v.outcome, Outcome::JsonrpcError | Outcome::HttpError)
    {
        return rate_limited(v, input, opts, random);
    }

    let transient = match v.outcome {
        Outcome::HttpError => match v.status {
            Some(s @ (408 | 429 | 502 | 503 | 504)) => Some(format!("HTTP {s}")),
            _ => None,
        },
        Outcome::ConnectionError => Some("the connection failed after sending".into()),
        Outcome::Timeout => Some("the call timed out (and was cancelled)".into()),
        Outcome::StreamIncomplete => Some("the stream ended before the response".into()),
        _ => None,
    };
    let Some(what) = transient else {
        let reason = match v.outcome {
            Outcome::HttpError => format!(
                "HTTP {}: not a transient status (only 408, 429, 502, 503, 504 are resent)",
                v.status.map_or("error".to_string(), |s| s.to_string())
            ),
            Outcome::JsonrpcError => {
                "a JSON-RPC error is the server's answer; resending would get it again".into()
            }
            Outcome::MissingResponse => {
                "the server answered without a response; resending is not known to help".into()
            }
            Outcome::LimitExceeded => "the response exceeded a configured limit".into(),
            other => format!("{other} is a broken response, not a transient failure"),
        };
        return RetryDecision::new(GiveUp, reason);
    };
    let Some(safe_because) = safety(input, opts) else {
        return RetryDecision::new(
            GiveUp,
            format!(
                "{what} and {}, but {}: resending could run it twice",
                input.delivery.describe(),
                unsafe_reason(input, opts)
            ),
        );
    };
    if input.resends >= opts.max_retries {
        return exhausted();
    }
    match delay(random) {
        Ok((d, why)) => RetryDecision::new(
            Resend { delay_ms: d },
            format!("{what}; safe to resend because {safe_because} ({why})"),
        ),
        Err(give_up) => give_up,
    }
}

/// A tool error: the call's end, unless the server declared it a retryable `reliability`
/// failure (draft SEP #3313, read into [`Verdict::tool_failure`] only when the caller turned
/// that draft on). The class decides first: `capability` and `governance` failures are never
/// resent, whatever `retryable` says (the draft: it MUST be absent or false there); a
/// `reliability` failure is resent only when declared `retryable: true`, and then only when the
/// call is safe to run again (the draft: never for a non-idempotent tool) and not before
/// `retryNotBefore`, within `max_retries` and `max_wait` as any resend.
fn tool_error(
    input: &RetryInput<'_>,
    opts: &RetryOptions,
    random: &mut dyn FnMut() -> f64,
) -> RetryDecision {
    use RetryAction::*;
    let Some(f) = input.verdict.tool_failure.as_deref() else {
        return RetryDecision::new(
            Done,
            "the tool ran and reported an error (isError); resending would run it again",
        );
    };
    let declared = format!(
        "the server declared a {} failure (code {}, correlationId {}; draft SEP #3313)",
        f.class, f.code, f.correlation_id
    );
    match (f.class, f.retryable) {
        (FailureClass::Capability, _) => {
            return RetryDecision::new(
                Done,
                format!("{declared}: the call cannot succeed as asked; never resent"),
            )
        }
        (FailureClass::Governance, _) => {
            return RetryDecision::new(
                Done,
                format!("{declared}: refused by policy, it needs action elsewhere (approval, authorization); never resent"),
            )
        }
        (FailureClass::Reliability, Some(true)) => {}
        (FailureClass::Reliability, r) => {
            return RetryDecision::new(
                Done,
                format!(
                    "{declared}, retryable {}: never resent",
                    if r == Some(false) { "false" } else { "absent" }
                ),
            )
        }
    }
    let Some(safe_because) = safety(input, opts) else {
        return RetryDecision::new(
            GiveUp,
            format!(
                "{declared}, retryable, but {}: resending could run it twice",
                unsafe_reason(input, opts)
            ),
        );
    };
    if input.resends >= opts.max_retries {
        return RetryDecision::new(
            GiveUp,
            format!(
                "{declared}, retryable; {} resend(s) already made (max-retries {})",
                input.resends, opts.max_retries
            ),
        );
    }
    let (delay, why) = match f.retry_after_ms {
        Some(ms) if ms > opts.max_wait_ms => {
            return RetryDecision::new(
                GiveUp,
                format!(
                    "{declared}, retryable not before {ms} ms from now, beyond max-wait {} ms; not waiting that long",
                    opts.max_wait_ms
                ),
            )
        }
        Some(ms) => (ms, format!("retryNotBefore {ms} ms")),
        None => {
            let d = backoff_ms(opts, input.resends, random);
            (d, format!("{d} ms backoff"))
        }
    };
    RetryDecision::new(
        Resend { delay_ms: delay },
        format!("{declared}, retryable; safe to resend because {safe_because} ({why})"),
    )
}

/// An `input_required` answer: the call's end for a caller that does not answer input
/// (`rounds` is `None`), else another round until `max` rounds were answered. The bound is
/// here because a server that keeps asking would otherwise keep the call going for ever.
fn input_required(rounds: Option<InputRounds>) -> RetryDecision {
    use RetryAction::*;
    match rounds {
        None => RetryDecision::new(Done, "the server asks for input; answer it in a new round"),
        Some(r) if r.answered >= r.max => RetryDecision::new(
            GiveUp,
            format!(
                "input still required after {} round(s) (max-rounds {})",
                r.answered, r.max
            ),
        ),
        Some(_) => RetryDecision::new(
            AnswerInput,
            "the server asked for input; resending with a new id, the answers and the exact requestState",
        ),
    }
}

/// Draft SEP-3304: a `-32023` RateLimited answer means the server refused the request before
/// running it (its rule RL-6 keeps an upstream API's rate limit inside a tool an `isError`
/// result), so resending is safe whatever the tool does: after `retryAfterMs` plus up to a
/// tenth more as jitter (RL-7), so that clients refused together do not return together. A wait
/// beyond `max_wait` gives up, as a `Retry-After` does: resending sooner than asked would be
/// refused again, and waiting that long is what RL-8 tells clients not to do.
fn rate_limited(
    v: &Verdict,
    input: &RetryInput<'_>,
    opts: &RetryOptions,
    random: &mut dyn FnMut() -> f64,
) -> RetryDecision {
    use RetryAction::*;
    let what =
        "-32023 RateLimited (draft SEP-3304): the server refused the request without running it";
    if input.resends >= opts.max_retries {
        return RetryDecision::new(
            GiveUp,
            format!(
                "{what}; {} resend(s) already made (max-retries {})",
                input.resends, opts.max_retries
            ),
        );
    }
    let (delay, why) = match v.retry_after_ms {
        Some(ms) if ms > opts.max_wait_ms => {
            return RetryDecision::new(
                GiveUp,
                format!(
                "{what}, but it asks to wait {ms} ms, beyond max-wait {} ms; not waiting that long",
                opts.max_wait_ms
            ),
            )
        }
        Some(ms) => {
            let jitter = (ms as f64 / 10.0 * random().clamp(0.0, 1.0)).round() as u64;
            let d = ms.saturating_add(jitter).min(opts.max_wait_ms.max(ms));
            (d, format!("it asks to wait {ms} ms; {d} ms with jitter"))
        }
        None => {
            let d = backoff_ms(opts, input.resends, random);
            (d, format!("it named no wait; {d} ms backoff"))
        }
    };
    RetryDecision::new(
        Resend { delay_ms: delay },
        format!("{what}, so resending is safe ({why})"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{AuthChallenge, StreamStats};

    fn verdict(outcome: Outcome, status: Option<u16>) -> Verdict {
        let mut v = Verdict::new(outcome);
        v.status = status;
        v
    }

    fn input(v: &Verdict) -> RetryInput<'_> {
        RetryInput {
            verdict: v,
            tool: "t",
            hints: ToolHints::default(),
            delivery: Delivery::Sent,
            resends: 0,
            resumes: 0,
            local_server: true,
            legacy_session: false,
            legacy_stream: false,
            reinitialized: false,
            relisted: false,
            revision_offered: None,
            revision_resent: false,
            input_rounds: None,
            drives_tasks: false,
        }
    }

    /// A caller that answers input rounds gets another round until `max` were answered, then a
    /// give-up naming the bound; one that does not (the C ABI, the bindings) gets `done`.
    #[test]
    fn input_required_is_answered_only_by_a_caller_that_opts_in() {
        let v = verdict(Outcome::InputRequired, Some(200));
        let mut i = input(&v);
        let d = decide(&i, &RetryOptions::default(), &mut half());
        assert_eq!(d.action, RetryAction::Done);
        i.input_rounds = Some(InputRounds {
            answered: 1,
            max: 2,
        });
        let d = decide(&i, &RetryOptions::default(), &mut half());
        assert_eq!(d.action, RetryAction::AnswerInput);
        let rec = d.to_record();
        assert_eq!((rec.action.as_str(), rec.delay_ms), ("answer_input", None));
        assert!(rec.reason.contains("exact requestState"), "{}", rec.reason);
        i.input_rounds = Some(InputRounds {
            answered: 2,
            max: 2,
        });
        let d = decide(&i, &RetryOptions::default(), &mut half());
        assert_eq!(d.action, RetryAction::GiveUp);
        assert_eq!(
            d.reason,
            "input still required after 2 round(s) (max-rounds 2)"
        );
        // max 0: not even one round
        i.input_rounds = Some(InputRounds {
            answered: 0,
            max: 0,
        });
        assert_eq!(
            decide(&i, &RetryOptions::default(), &mut half()).action,
            RetryAction::GiveUp
        );
    }

    /// A caller that drives tasks is told to poll (recorded as `poll`, its delay the caller's);
    /// one that does not gets `done`, as before there was a choice.
    #[test]
    fn task_created_is_driven_only_by_a_caller_that_opts_in() {
        let v = verdict(Outcome::TaskCreated, Some(200));
        let mut i = input(&v);
        let d = decide(&i, &RetryOptions::default(), &mut half());
        assert_eq!(d.action, RetryAction::Done);
        i.drives_tasks = true;
        let d = decide(&i, &RetryOptions::default(), &mut half());
        assert_eq!(d.action, RetryAction::DriveTask);
        let rec = d.to_record();
        assert_eq!((rec.action.as_str(), rec.delay_ms), ("poll", None));
        // answering input is a separate choice from driving tasks
        i.input_rounds = Some(InputRounds {
            answered: 0,
            max: 8,
        });
        i.drives_tasks = false;
        assert_eq!(
            decide(&i, &RetryOptions::default(), &mut half()).action,
            RetryAction::Done
        );
    }

    /// A -32022 refusal naming a revision we speak is resent once, at once, whatever the
    /// tool's safety (nothing ran); a second refusal is judged as any JSON-RPC error.
    #[test]
    fn a_refusal_naming_our_revision_is_resent_once() {
        let mut v = verdict(Outcome::JsonrpcError, Some(200));
        v.code = Some(-32022);
        let mut i = input(&v);
        i.local_server = false;
        i.revision_offered = Some(ProtocolVersion::V2026_07_28);
        let d = decide(&i, &RetryOptions::default(), &mut half());
        assert_eq!(
            d.action,
            RetryAction::ResendWithRevision(ProtocolVersion::V2026_07_28)
        );
        let rec = d.to_record();
        assert_eq!((rec.action.as_str(), rec.delay_ms), ("resend", Some(0)));
        assert!(rec.reason.contains("lists 2026-07-28"), "{}", rec.reason);
        i.revision_resent = true;
        let again = decide(&i, &RetryOptions::default(), &mut half());
        assert_eq!(again.action, RetryAction::GiveUp, "{}", again.reason);
        i.revision_resent = false;
        i.revision_offered = None;
        assert_eq!(
            decide(&i, &RetryOptions::default(), &mut half()).action,
            RetryAction::GiveUp
        );
    }

    const READ_ONLY: ToolHints = ToolHints {
        read_only: Some(true),
        idempotent: None,
    };

    fn half() -> impl FnMut() -> f64 {
        || 0.5
    }

    /// The wire forms embedders pass (the Python and Node bindings): annotations as MCP sends
    /// them, snake_case enums, camelCase options with unknown members refused.
    #[test]
    fn inputs_deserialise_from_their_wire_forms() {
        let hints: ToolHints =
            serde_json::from_str(r#"{"title":"Read","readOnlyHint":true,"destructiveHint":false}"#)
                .unwrap();
        assert_eq!(hints, READ_ONLY);
        let d: Delivery = serde_json::from_str(r#""maybe_executed""#).unwrap();
        assert_eq!(d, Delivery::MaybeExecuted);
        assert!(serde_json::from_str::<Delivery>(r#""maybe""#).is_err());
        let o: RetryOptions = serde_json::from_str(
            r#"{"maxRetries":5,"trust":"distrust","safeTools":["get"],"idempotencyKey":true}"#,
        )
        .unwrap();
        assert_eq!(o.max_retries, 5);
        assert_eq!(o.trust, AnnotationTrust::Distrust);
        assert_eq!(o.safe_tools, ["get"]);
        assert_eq!(o.backoff_base_ms, RetryOptions::default().backoff_base_ms);
        let typo = serde_json::from_str::<RetryOptions>(r#"{"maxRetry":5}"#).unwrap_err();
        assert!(
            typo.to_string().contains("unknown field `maxRetry`"),
            "{typo}"
        );
    }

    /// The table: (outcome, status, delivery, safe?, expected action name).
    #[test]
    fn decision_table() {
        use Delivery::*;
        use Outcome::*;
        let cases: &[(Outcome, Option<u16>, Delivery, bool, &str)] = &[
            (ToolSuccess, None, Sent, false, "done"),
            (ToolError, None, Sent, true, "done"),
            (InputRequired, None, Sent, false, "done"),
            (TaskCreated, None, Sent, false, "done"),
            (ConnectionError, None, NeverSent, false, "resend"),
            (ConnectionError, None, MaybeExecuted, false, "give_up"),
            (ConnectionError, None, MaybeExecuted, true, "resend"),
            (HttpError, Some(503), Sent, false, "give_up"),
            (HttpError, Some(503), Sent, true, "resend"),
            (HttpError, Some(502), Sent, true, "resend"),
            (HttpError, Some(504), Sent, true, "resend"),
            (HttpError, Some(429), Sent, true, "resend"),
            (HttpError, Some(408), Sent, true, "resend"),
            (HttpError, Some(500), Sent, true, "give_up"),
            (HttpError, Some(400), Sent, true, "give_up"),
            (HttpError, Some(404), Sent, true, "give_up"),
            (HttpError, Some(401), Sent, true, "give_up"),
            (HttpError, Some(403), NeverSent, true, "give_up"),
            (Timeout, None, MaybeExecuted, true, "resend"),
            (Timeout, None, MaybeExecuted, false, "give_up"),
            (StreamIncomplete, Some(200), MaybeExecuted, true, "resend"),
            (StreamIncomplete, Some(200), MaybeExecuted, false, "give_up"),
            (JsonrpcError, Some(200), Sent, true, "give_up"),
            (InvalidEnvelope, Some(200), Sent, true, "give_up"),
            (InvalidToolResult, Some(200), Sent, true, "give_up"),
            (MalformedJson, Some(200), Sent, true, "give_up"),
            (UnexpectedContentType, Some(200), Sent, true, "give_up"),
            (MissingResponse, Some(202), Sent, true, "give_up"),
            (LimitExceeded, Some(200), Sent, true, "give_up"),
        ];
        for &(outcome, status, delivery, safe, want) in cases {
            let v = verdict(outcome, status);
            let mut i = input(&v);
            i.delivery = delivery;
            if safe {
                i.hints = READ_ONLY;
            }
            let d = decide(&i, &RetryOptions::default(), &mut half());
            assert_eq!(
                d.action.as_str(),
                want,
                "{outcome} {status:?} {delivery:?} safe={safe}: {}",
                d.reason
            );
            assert!(!d.reason.is_empty());
        }
    }

    #[test]
    fn safety_sources() {
        let v = verdict(Outcome::HttpError, Some(503));
        let opts = RetryOptions::default();
        // Annotations from a remote server are not trusted by default.
        let mut i = input(&v);
        i.hints = READ_ONLY;
        i.local_server = false;
        let d = decide(&i, &opts, &mut half());
        assert_eq!(d.action, RetryAction::GiveUp);
        assert!(d.reason.contains("--trust-annotations"), "{}", d.reason);
        let trust = RetryOptions {
            trust: AnnotationTrust::Trust,
            ..RetryOptions::default()
        };
        assert_eq!(decide(&i, &trust, &mut half()).action.as_str(), "resend");
        // Distrust beats a local server.
        i.local_server = true;
        let distrust = RetryOptions {
            trust: AnnotationTrust::Distrust,
            ..RetryOptions::default()
        };
        let d = decide(&i, &distrust, &mut half());
        assert_eq!(d.action, RetryAction::GiveUp);
        assert!(d.reason.contains("distrusted"));
        // idempotentHint counts.
        i.hints = ToolHints {
            read_only: Some(false),
            idempotent: Some(true),
        };
        assert!(decide(&i, &opts, &mut half())
            .reason
            .contains("idempotentHint"));
        // The safe-tool list and the idempotency key work without annotations.
        i.hints = ToolHints::default();
        let listed = RetryOptions {
            safe_tools: vec!["t".into()],
            ..distrust.clone()
        };
        assert!(decide(&i, &listed, &mut half())
            .reason
            .contains("--safe-tool"));
        let keyed = RetryOptions {
            idempotency_key: true,
            ..distrust
        };
        assert!(decide(&i, &keyed, &mut half())
            .reason
            .contains("idempotency key"));
    }

    #[test]
    fn at_most_max_retries() {
        let v = verdict(Outcome::HttpError, Some(503));
        let mut i = input(&v);
        i.hints = READ_ONLY;
        let opts = RetryOptions::default();
        i.resends = 1;
        assert_eq!(decide(&i, &opts, &mut half()).action.as_str(), "resend");
        i.resends = 2;
        let d = decide(&i, &opts, &mut half());
        assert_eq!(d.action, RetryAction::GiveUp);
        assert!(d.reason.contains("max-retries 2"));
        // Never-sent requests are bounded too.
        let refused = verdict(Outcome::ConnectionError, None);
        let mut i = input(&refused);
        i.delivery = Delivery::NeverSent;
        i.resends = 2;
        assert_eq!(decide(&i, &opts, &mut half()).action, RetryAction::GiveUp);
    }

    #[test]
    fn backoff_is_exponential_from_base_with_jitter_over_the_step() {
        let opts = RetryOptions::default();
        // First resend: 200..=400 ms, never sooner than the base.
        assert_eq!(backoff_ms(&opts, 0, &mut || 0.0), 200);
        assert_eq!(backoff_ms(&opts, 0, &mut || 1.0), 400);
        assert_eq!(backoff_ms(&opts, 1, &mut || 0.0), 400);
        assert_eq!(backoff_ms(&opts, 1, &mut || 0.5), 600);
        assert_eq!(backoff_ms(&opts, 2, &mut || 1.0), 1_600);
        // Capped by max-wait at both ends, no overflow for huge exponents.
        assert_eq!(backoff_ms(&opts, 60, &mut || 1.0), 30_000);
        assert_eq!(backoff_ms(&opts, 60, &mut || 0.0), 30_000);
        assert_eq!(backoff_ms(&opts, 7, &mut || 1.0), 30_000);
        let v = verdict(Outcome::HttpError, Some(503));
        let mut i = input(&v);
        i.hints = READ_ONLY;
        i.resends = 1;
        assert_eq!(
            decide(&i, &opts, &mut || 0.25).action,
            RetryAction::Resend { delay_ms: 500 }
        );
    }

    #[test]
    fn retry_after_takes_precedence_up_to_max_wait() {
        let mut v = verdict(Outcome::HttpError, Some(429));
        v.retry_after_ms = Some(1_500);
        let mut i = input(&v);
        i.hints = READ_ONLY;
        let d = decide(&i, &RetryOptions::default(), &mut || 0.0);
        assert_eq!(d.action, RetryAction::Resend { delay_ms: 1_500 });
        assert!(d.reason.contains("Retry-After"));
        let mut v = verdict(Outcome::HttpError, Some(503));
        v.retry_after_ms = Some(60_000);
        let mut i = input(&v);
        i.hints = READ_ONLY;
        let d = decide(&i, &RetryOptions::default(), &mut || 0.0);
        assert_eq!(d.action, RetryAction::GiveUp);
        assert!(d.reason.contains("beyond max-wait"), "{}", d.reason);
        // Retry-After never makes an unsafe call safe (no hints: not safe).
        v.retry_after_ms = Some(10);
        let i = input(&v);
        assert_eq!(
            decide(&i, &RetryOptions::default(), &mut half()).action,
            RetryAction::GiveUp
        );
    }

    #[test]
    fn rate_limited_is_resent_after_its_wait_whatever_the_tool_does() {
        // A JSON-RPC -32023 with retryAfterMs, for a tool with no annotations (unsafe to resend
        // after a 503): resent after the wait plus jitter (a tenth at most).
        let mut v = verdict(Outcome::JsonrpcError, None);
        v.code = Some(RATE_LIMITED);
        v.retry_after_ms = Some(2_000);
        let i = input(&v);
        let d = decide(&i, &RetryOptions::default(), &mut half());
        assert_eq!(d.action, RetryAction::Resend { delay_ms: 2_100 });
        assert!(d.reason.contains("SEP-3304"), "{}", d.reason);
        assert!(d.reason.contains("without running it"), "{}", d.reason);
        let d = decide(&i, &RetryOptions::default(), &mut || 0.0);
        assert_eq!(d.action, RetryAction::Resend { delay_ms: 2_000 });
        // The same in a 429's body.
        let mut v429 = verdict(Outcome::HttpError, Some(429));
        v429.code = Some(RATE_LIMITED);
        v429.retry_after_ms = Some(500);
        let d = decide(&input(&v429), &RetryOptions::default(), &mut || 1.0);
        assert_eq!(d.action, RetryAction::Resend { delay_ms: 550 });
        // No wait named: the backoff.
        v.retry_after_ms = None;
        let d = decide(&input(&v), &RetryOptions::default(), &mut || 0.0);
        assert_eq!(
            d.action,
            RetryAction::Resend {
                delay_ms: RetryOptions::default().backoff_base_ms
            }
        );
        // Beyond max-wait: give up, naming the wait.
        v.retry_after_ms = Some(RetryOptions::default().max_wait_ms + 1);
        let d = decide(&input(&v), &RetryOptions::default(), &mut half());
        assert_eq!(d.action, RetryAction::GiveUp);
        assert!(d.reason.contains("beyond max-wait"), "{}", d.reason);
        // Bounded by max-retries like every resend.
        v.retry_after_ms = Some(10);
        let mut i = input(&v);
        i.resends = RetryOptions::default().max_retries;
        let d = decide(&i, &RetryOptions::default(), &mut half());
        assert_eq!(d.action, RetryAction::GiveUp);
        assert!(d.reason.contains("max-retries"), "{}", d.reason);
        // Another JSON-RPC error is still the server's answer.
        v.code = Some(-32603);
        assert_eq!(
            decide(&input(&v), &RetryOptions::default(), &mut half()).action,
            RetryAction::GiveUp
        );
    }

    #[test]
    fn auth_challenge_is_reported() {
        let mut v = verdict(Outcome::HttpError, Some(401));
        v.auth_challenge = Some(Box::new(AuthChallenge {
            scheme: "Bearer".into(),
            resource_metadata: Some("http://127.0.0.1/.well-known/oauth-protected-resource".into()),
            error: Some("invalid_token".into()),
            ..AuthChallenge::default()
        }));
        let mut i = input(&v);
        i.hints = READ_ONLY;
        let d = decide(&i, &RetryOptions::default(), &mut half());
        assert_eq!(d.action, RetryAction::GiveUp);
        assert!(d.reason.contains("invalid_token"));
        assert!(d.reason.contains("oauth-protected-resource"));
    }

    #[test]
    fn legacy_stream_is_resumed_without_safety() {
        let mut v = verdict(Outcome::StreamIncomplete, Some(200));
        v.stream = Some(StreamStats {
            last_event_id: Some("ev-3".into()),
            retry_ms: Some(50),
            ..StreamStats::default()
        });
        let mut i = input(&v);
        i.legacy_stream = true;
        i.delivery = Delivery::MaybeExecuted;
        let d = decide(&i, &RetryOptions::default(), &mut half());
        assert_eq!(
            d.action,
            RetryAction::Resume {
                last_event_id: "ev-3".into(),
                delay_ms: 50
            }
        );
        i.resumes = 5;
        assert_eq!(
            decide(&i, &RetryOptions::default(), &mut half()).action,
            RetryAction::GiveUp
        );
        // A modern stream is not resumable: falls back to the safety rules.
        i.resumes = 0;
        i.legacy_stream = false;
        assert_eq!(
            decide(&i, &RetryOptions::default(), &mut half()).action,
            RetryAction::GiveUp
        );
        // A retry: beyond max-wait gives up.
        v.stream.as_mut().unwrap().retry_ms = Some(40_000);
        let mut i = input(&v);
        i.legacy_stream = true;
        assert!(decide(&i, &RetryOptions::default(), &mut half())
            .reason
            .contains("max-wait"));
    }

    #[test]
    fn session_and_header_repairs_happen_once() {
        let v = verdict(Outcome::HttpError, Some(404));
        let mut i = input(&v);
        i.legacy_session = true;
        assert_eq!(
            decide(&i, &RetryOptions::default(), &mut half()).action,
            RetryAction::Reinitialize
        );
        i.reinitialized = true;
        assert_eq!(
            decide(&i, &RetryOptions::default(), &mut half()).action,
            RetryAction::GiveUp
        );
        let mut v = verdict(Outcome::HttpError, Some(400));
        v.code = Some(HEADER_MISMATCH);
        let mut i = input(&v);
        assert_eq!(
            decide(&i, &RetryOptions::default(), &mut half()).action,
            RetryAction::RelistTools
        );
        i.relisted = true;
        assert_eq!(
            decide(&i, &RetryOptions::default(), &mut half()).action,
            RetryAction::GiveUp
        );
        let mut v = verdict(Outcome::JsonrpcError, Some(200));
        v.code = Some(-32602);
        assert_eq!(
            decide(&input(&v), &RetryOptions::default(), &mut half()).action,
            RetryAction::GiveUp
        );
    }

    fn declared(class: FailureClass, retryable: Option<bool>, wait: Option<u64>) -> Verdict {
        let mut v = verdict(Outcome::ToolError, Some(200));
        v.tool_failure = Some(Box::new(crate::verdict::ToolFailure {
            class,
            code: "c0de".into(),
            retryable,
            retry_not_before: wait.map(|w| 1_000 + w),
            retry_after_ms: wait,
            correlation_id: "corr-1".into(),
            agent_guidance: None,
        }));
        v
    }

    /// Draft SEP #3313: a declared `retryable: false` is never resent, even for a read-only
    /// tool that a transient failure would resend; the reason names the class and the code.
    #[test]
    fn a_declared_non_retryable_failure_is_never_resent() {
        use FailureClass::*;
        for (class, retryable) in [
            (Reliability, Some(false)),
            (Reliability, None),
            (Capability, Some(false)),
            // retryable true breaks the draft's rule there: the class wins
            (Capability, Some(true)),
            (Governance, Some(true)),
            (Governance, None),
        ] {
            let v = declared(class, retryable, Some(10));
            let mut i = input(&v);
            i.hints = READ_ONLY;
            let d = decide(&i, &RetryOptions::default(), &mut half());
            assert_eq!(
                d.action,
                RetryAction::Done,
                "{class} {retryable:?}: {}",
                d.reason
            );
            assert!(
                d.reason.contains(&format!(
                    "declared a {class} failure (code c0de, correlationId corr-1"
                )),
                "{}",
                d.reason
            );
            assert!(d.reason.contains("never resent"), "{}", d.reason);
        }
        // Without a declared failure a tool error ends the call as before.
        let d = decide(
            &input(&verdict(Outcome::ToolError, None)),
            &RetryOptions::default(),
            &mut half(),
        );
        assert_eq!(d.action, RetryAction::Done);
        assert!(d.reason.contains("isError"), "{}", d.reason);
    }

    /// A declared retryable reliability failure of a safe call waits `retryNotBefore`; of an
    /// unsafe call it is not resent; past max-wait or max-retries it gives up.
    #[test]
    fn a_declared_retryable_failure_waits_its_not_before() {
        let v = declared(FailureClass::Reliability, Some(true), Some(1_250));
        let mut i = input(&v);
        i.hints = READ_ONLY;
        let d = decide(&i, &RetryOptions::default(), &mut half());
        assert_eq!(
            d.action,
            RetryAction::Resend { delay_ms: 1_250 },
            "{}",
            d.reason
        );
        assert!(d.reason.contains("reliability failure"), "{}", d.reason);
        assert!(d.reason.contains("retryNotBefore 1250 ms"), "{}", d.reason);
        // No retryNotBefore: the backoff.
        let v = declared(FailureClass::Reliability, Some(true), None);
        let mut i = input(&v);
        i.hints = READ_ONLY;
        let d = decide(&i, &RetryOptions::default(), &mut || 0.0);
        assert_eq!(d.action, RetryAction::Resend { delay_ms: 200 });
        // Not safe: declared retryable does not make a call with side effects safe.
        i.hints = ToolHints::default();
        let d = decide(&i, &RetryOptions::default(), &mut half());
        assert_eq!(d.action, RetryAction::GiveUp);
        assert!(d.reason.contains("could run it twice"), "{}", d.reason);
        // Beyond max-wait, or out of resends: give up, saying which.
        let v = declared(FailureClass::Reliability, Some(true), Some(60_000));
        let mut i = input(&v);
        i.hints = READ_ONLY;
        let d = decide(&i, &RetryOptions::default(), &mut half());
        assert_eq!(d.action, RetryAction::GiveUp);
        assert!(d.reason.contains("beyond max-wait"), "{}", d.reason);
        let v = declared(FailureClass::Reliability, Some(true), Some(10));
        let mut i = input(&v);
        i.hints = READ_ONLY;
        i.resends = 2;
        let d = decide(&i, &RetryOptions::default(), &mut half());
        assert_eq!(d.action, RetryAction::GiveUp);
        assert!(d.reason.contains("max-retries 2"), "{}", d.reason);
    }

    #[test]
    fn decision_records_carry_delay() {
        let d = RetryDecision::new(RetryAction::Resend { delay_ms: 7 }, "x");
        let r = d.to_record();
        assert_eq!(r.action, "resend");
        assert_eq!(r.delay_ms, Some(7));
        assert_eq!(
            RetryDecision::new(RetryAction::GiveUp, "y")
                .to_record()
                .delay_ms,
            None
        );
    }
}
