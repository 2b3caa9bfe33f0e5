//! Grading: each check reads the journal entries of one case (oldest first) and returns a
//! pass, a fail with the journal lines that prove it, or n/a with the reason. Checks only
//! fail on what the journal shows; where a timing is only known from below (the kitchen
//! stamps when a request arrived, not when the client read the previous response) the
//! bound is applied so that a correct client always passes.
//!
//! The entries are the kitchen's own [`JournalEntry`] type, so every field a check reads is
//! checked by the compiler against what the kitchen writes.

use mcp_triage_core::{FailureClass, Outcome};
use mcp_triage_kitchen::journal::{Answer, JournalEntry};
use mcp_triage_kitchen::protocol::Era;
use mcp_triage_report::{Check, Status};
use serde_json::{json, Map, Value};

use crate::cases::CheckKind;
use crate::ctx::{header, is_expiry, method, received, served_seq};
pub use crate::ctx::{journal_line, Ctx, MIN_BACKOFF_MS};

/// `after - before` for every numeric counter of `after`.
pub fn counter_delta(before: &Value, after: &Value) -> Value {
    let mut m = Map::new();
    for (k, v) in after.as_object().into_iter().flatten() {
        let a = v.as_u64().unwrap_or(0);
        let b = before[k].as_u64().unwrap_or(0);
        m.insert(k.clone(), json!(a.saturating_sub(b)));
    }
    Value::Object(m)
}

/// Token requests an OAuth client may make in one case: one authorization code, one refresh,
/// one more authorization when the refresh is refused or the scope must grow.
const MAX_TOKEN_REQUESTS: u64 = 3;
/// Authorizations (visits to the authorize endpoint) an OAuth client may make in one case.
const MAX_AUTHORIZATIONS: u64 = 2;
/// 401 answers one request may collect: the first challenge, and one per token the client
/// tried with it (first, refreshed, re-authorized).
const MAX_UNAUTHORIZED: usize = 4;

/// The protocol version the client's requests carried (`MCP-Protocol-Version` of its first
/// tools/call, else of any request): what it negotiated, for the matrix.
pub fn negotiated_version(entries: &[JournalEntry]) -> Option<String> {
    let version = |e: &&JournalEntry| header(e, "mcp-protocol-version").map(str::to_owned);
    entries
        .iter()
        .filter(|e| method(e) == Some("tools/call"))
        .find_map(|e| version(&e))
        .or_else(|| entries.iter().find_map(|e| version(&e)))
}

/// Grade a case: every check of `kinds`. When the client exited without an outcome
/// (`reported_outcome` fails), a pass that only says it did nothing more (sent once, not
/// resent, finished) proves nothing, and is n/a instead: a client that died after its
/// first request must not collect the resend checks.
pub fn grade_all(kinds: &[CheckKind], cx: &Ctx<'_>) -> Vec<Check> {
    let outcome = reported_outcome(cx);
    let silent = outcome.status == Status::Fail;
    kinds
        .iter()
        .map(|&k| {
            let c = if k == CheckKind::ReportedOutcome {
                outcome.clone()
            } else {
                grade(k, cx)
            };
            if silent && c.status == Status::Pass && vacuous_without_outcome(k, cx) {
                return cx.skip(
                    k,
                    format!(
                        "{}, but the client exited without an outcome (see reported_outcome): that proves nothing",
                        c.message
                    ),
                );
            }
            c
        })
        .collect()
}

/// Whether a pass of `k` rests only on what the client did not do.
fn vacuous_without_outcome(k: CheckKind, cx: &Ctx<'_>) -> bool {
    match k {
        CheckKind::InTime => true,
        CheckKind::NoUnsafeResend
        | CheckKind::Backoff
        | CheckKind::BoundedResend
        | CheckKind::RetryAfter
        | CheckKind::NoAutoResend
        | CheckKind::HonoursDeclaredClass
        | CheckKind::ReissueNewId => cx.calls().len() <= 1,
        _ => false,
    }
}

/// Run one check.
pub fn grade(kind: CheckKind, cx: &Ctx<'_>) -> Check {
    match kind {
        CheckKind::ToolCalled => tool_called(cx),
        CheckKind::NoUnsafeResend => no_unsafe_resend(cx),
        CheckKind::Backoff => backoff(cx),
        CheckKind::BoundedResend => bounded_resend(cx),
        CheckKind::RetryAfter => retry_after(cx),
        CheckKind::NoAutoResend => no_auto_resend(cx),
        CheckKind::HonoursDeclaredClass => honours_declared_class(cx),
        CheckKind::MrtrRetry => mrtr_retry(cx),
        CheckKind::ReissueNewId => reissue_new_id(cx),
        CheckKind::ResumeGet => resume_get(cx),
        CheckKind::ResumeAgain => resume_again(cx),
        CheckKind::Reinitialize => reinitialize(cx),
        CheckKind::Headers2026 => headers_2026(cx),
        CheckKind::InTime => in_time(cx),
        CheckKind::ReportedOutcome => reported_outcome(cx),
        CheckKind::AuthBounded => auth_bounded(cx),
        CheckKind::RefreshOnce => refresh_once(cx),
        CheckKind::ScopeStepUp => scope_step_up(cx),
        CheckKind::TokenAudience => token_audience(cx),
        CheckKind::DpopProof => dpop_proof(cx),
        CheckKind::ProgressKeepsAlive => progress_keeps_alive(cx),
        CheckKind::GivesUp => gives_up(cx),
        CheckKind::CapturedOutcome => captured_outcome(cx),
        CheckKind::RelistBeforeCall => relist_before_call(cx),
        CheckKind::PollPace => crate::task_checks::poll_pace(cx),
        CheckKind::StopsAtTerminal => crate::task_checks::stops_at_terminal(cx),
        CheckKind::NoCreateResend => crate::task_checks::no_create_resend(cx),
        CheckKind::CancelsAbandoned => crate::task_checks::cancels_abandoned(cx),
    }
}

fn counter(cx: &Ctx<'_>, k: &str) -> u64 {
    cx.oauth.and_then(|o| o[k].as_u64()).unwrap_or(0)
}

/// The authorization server's counters as evidence.
fn counters_line(cx: &Ctx<'_>) -> String {
    format!(
        "authorization server during the case: {}",
        cx.oauth.cloned().unwrap_or(Value::Null)
    )
}

fn token_requests(cx: &Ctx<'_>) -> u64 {
    counter(cx, "codeGrants") + counter(cx, "refreshGrants") + counter(cx, "refusedTokenRequests")
}

fn auth_fail(cx: &Ctx<'_>, k: CheckKind, m: String, ev: &[&JournalEntry]) -> Check {
    let mut lines: Vec<String> = ev.iter().map(|e| journal_line(e)).collect();
    lines.push(counters_line(cx));
    cx.check(k, Status::Fail, m).with_evidence(lines)
}

fn unauthorized<'a>(cx: &Ctx<'a>) -> Vec<&'a JournalEntry> {
    cx.entries
        .iter()
        .filter(|e| e.status == Some(401))
        .collect()
}

fn auth_bounded(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::AuthBounded;
    let refused = unauthorized(cx);
    // The same request (method and id) sent again and again after 401s is the loop; a client
    // that gave up on one request and goes on to its next meets one 401 there, which is not.
    let mut most: Vec<&JournalEntry> = Vec::new();
    for e in &refused {
        let same: Vec<&JournalEntry> = refused
            .iter()
            .copied()
            .filter(|o| o.method == e.method && o.id == e.id && o.session == e.session)
            .collect();
        if same.len() > most.len() {
            most = same;
        }
    }
    let (tokens, authorizations) = (token_requests(cx), counter(cx, "authorizations"));
    if most.len() > MAX_UNAUTHORIZED {
        return auth_fail(
            cx,
            k,
            format!(
                "one {} request answered 401 {} times (at most {MAX_UNAUTHORIZED}): the client loops on a refused token",
                method(most[0]).unwrap_or("HTTP"),
                most.len()
            ),
            &[most[0], most[MAX_UNAUTHORIZED]],
        );
    }
    if tokens > MAX_TOKEN_REQUESTS {
        return auth_fail(
            cx,
            k,
            format!("{tokens} token requests (at most {MAX_TOKEN_REQUESTS})"),
            &[],
        );
    }
    if authorizations > MAX_AUTHORIZATIONS {
        return auth_fail(
            cx,
            k,
            format!("{authorizations} authorizations (at most {MAX_AUTHORIZATIONS})"),
            &[],
        );
    }
    cx.pass(
        k,
        format!(
            "{} answers 401 (at most {} for one request), {tokens} token requests, {authorizations} authorizations",
            refused.len(),
            most.len()
        ),
    )
}

fn refresh_once(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::RefreshOnce;
    let (refreshes, codes) = (counter(cx, "refreshGrants"), counter(cx, "codeGrants"));
    if codes == 0 {
        if did_no_oauth(cx) {
            return no_authorization(cx, k, "refreshing an expired token");
        }
        return cx.skip(k, "no authorization code was exchanged: no token to expire");
    }
    match refreshes {
        1 if codes == 1 => cx.pass(k, "the expired token was replaced by one refresh"),
        1 => auth_fail(
            cx,
            k,
            format!("refreshed once, yet authorized {codes} times"),
            &[],
        ),
        0 => auth_fail(
            cx,
            k,
            format!(
                "no refresh: the expired access token was {}",
                if codes > 1 {
                    "replaced by a new authorization although the refresh token was good"
                } else {
                    "not replaced"
                }
            ),
            &unauthorized(cx),
        ),
        n => auth_fail(cx, k, format!("{n} refreshes (one is enough)"), &[]),
    }
}

fn scope_step_up(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::ScopeStepUp;
    let calls = cx.calls();
    let Some(pos) = calls.iter().position(|e| e.status == Some(403)) else {
        if did_no_oauth(cx) {
            return no_authorization(cx, k, "stepping up scope after 403 insufficient_scope");
        }
        return cx.skip(k, "no tools/call was answered 403 insufficient_scope");
    };
    let forbidden = calls.iter().filter(|e| e.status == Some(403)).count();
    if forbidden > 2 {
        return auth_fail(
            cx,
            k,
            format!("{forbidden} tools/call answered 403 (a step-up is tried once)"),
            &[calls[pos]],
        );
    }
    let ok = calls[pos + 1..]
        .iter()
        .find(|e| e.status.is_some_and(|s| (200..300).contains(&s)));
    match ok {
        Some(_) if counter(cx, "codeGrants") >= 2 => cx.pass(
            k,
            "403 insufficient_scope, re-authorized with more scope, called again",
        ),
        Some(e) => auth_fail(
            cx,
            k,
            "called again without a new authorization".into(),
            &[calls[pos], e],
        ),
        None => auth_fail(
            cx,
            k,
            "not called again with more scope after 403 insufficient_scope".into(),
            &[calls[pos]],
        ),
    }
}

fn token_audience(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::TokenAudience;
    let presented = cx
        .entries
        .iter()
        .filter(|e| header(e, "authorization").is_some())
        .count();
    let misdirected = counter(cx, "misdirectedTokens");
    if misdirected > 0 {
        let with_token: Vec<&JournalEntry> = cx
            .entries
            .iter()
            .filter(|e| header(e, "authorization").is_some())
            .take(2)
            .collect();
        return auth_fail(
            cx,
            k,
            format!("{misdirected} requests carried a token asked for another resource (or for none: no RFC 8707 resource)"),
            &with_token,
        );
    }
    if presented == 0 {
        return cx.skip(k, "no request carried a token");
    }
    cx.pass(
        k,
        format!("{presented} requests with a token, each asked for this resource"),
    )
}

fn progress_keeps_alive(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::ProgressKeepsAlive;
    let calls = cx.calls();
    let Some(call) = calls.first() else {
        return cx.skip(k, "no tools/call");
    };
    let asked = call
        .injected
        .as_deref()
        .is_some_and(|n| n.contains("progress to the call's progressToken"));
    if !asked {
        return cx.skip(
            k,
            "the call carried no progressToken, so no progress flowed (nothing kept it alive)",
        );
    }
    let delivered = call
        .answer
        .as_ref()
        .is_some_and(|a| a.outcome == Outcome::ToolSuccess);
    match (delivered, cx.exit) {
        (true, Some(0)) => cx.pass(
            k,
            "kept waiting while progress flowed past its request timeout, and got the result",
        ),
        (true, _) => cx.fail(
            k,
            "the result was delivered, yet the client did not end with success",
            &[*call],
        ),
        (false, _) => cx.fail(
            k,
            "gave up while progress for its own token was flowing: the result came later to nobody",
            &[*call],
        ),
    }
}

fn dpop_proof(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::DpopProof;
    let refused = counter(cx, "dpopProofsRefused");
    if refused > 0 {
        return auth_fail(
            cx,
            k,
            format!("{refused} DPoP proofs refused (at the token endpoint or the resource)"),
            &unauthorized(cx).into_iter().take(2).collect::<Vec<_>>(),
        );
    }
    if did_no_oauth(cx) {
        return no_authorization(cx, k, "DPoP-bound tokens");
    }
    let calls = cx.calls();
    let proved = calls
        .iter()
        .filter(|e| header(e, "dpop").is_some() && e.status.is_some_and(|s| s < 300))
        .count();
    if proved == 0 {
        return auth_fail(
            cx,
            k,
            "no tools/call with a DPoP proof got through: the DPoP-bound token was sent as a bearer token, or not at all".into(),
            &calls.into_iter().take(3).collect::<Vec<_>>(),
        );
    }
    cx.pass(
        k,
        format!(
            "{proved} tools/call with a proof of the bound key; {} nonce challenge(s) answered",
            counter(cx, "dpopNonceChallenges")
        ),
    )
}

fn gives_up(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::GivesUp;
    if cx.timed_out {
        return auth_fail(
            cx,
            k,
            format!("still trying after {} s", cx.timeout_s),
            &cx.entries.last().into_iter().collect::<Vec<_>>(),
        );
    }
    if cx.case.params["fault"] == "missing_pkce" && counter(cx, "authorizations") > 0 {
        return auth_fail(
            cx,
            k,
            "authorized although the metadata lists no S256 code_challenge_methods_supported"
                .into(),
            &[],
        );
    }
    let lines: Vec<&str> = cx
        .output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let last = stated_line(&lines);
    match (cx.exit, last) {
        (Some(0), _) => auth_fail(
            cx,
            k,
            "exit 0 although no usable token can be had".into(),
            &[],
        ),
        (_, None) => auth_fail(cx, k, "stopped without a word".into(), &[]),
        (code, Some(said)) => cx.pass(
            k,
            format!(
                "exit {}, stated: {said}",
                code.map_or("by signal".into(), |c| c.to_string())
            ),
        ),
    }
}

/// `judge --replay`: the last captured line the replay served for this case's call decides
/// how the client should have ended: exit 0 after a successful call; otherwise a failure (a
/// non-zero exit), or, after a tool error, exit 0 with the tool's error text shown (the tool's
/// answer reached the user, which is what a tool error asks for).
fn captured_outcome(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::CapturedOutcome;
    let Some(captured) = &cx.case.captured else {
        return cx.skip(k, "not a replayed case");
    };
    let Some(last) = cx
        .calls()
        .into_iter()
        .rev()
        .find_map(|e| served_seq(e).map(|seq| (e, seq)))
    else {
        return cx.skip(k, "no captured line was served (see tool_called)");
    };
    let (last, seq) = last;
    let Some(v) = captured.verdict(seq) else {
        return cx.skip(k, format!("served seq {seq}, which is not this case's"));
    };
    if cx.timed_out {
        return cx.skip(k, "stopped at the timeout (graded by in_time)");
    }
    let exit = cx
        .exit
        .map_or("a signal".to_string(), |c| format!("exit {c}"));
    let said = format!(
        "last served seq {seq}: {}; the client ended with {exit}",
        v.text
    );
    let success = v.outcome == mcp_triage_core::Outcome::ToolSuccess;
    let shown = |t: &Option<String>| {
        t.as_deref()
            .is_some_and(|t| !t.is_empty() && cx.output.contains(t))
    };
    let ok = match (success, cx.exit) {
        (true, Some(0)) => true,
        (true, _) => false,
        (false, Some(0)) => v.outcome == mcp_triage_core::Outcome::ToolError && shown(&v.tool_text),
        (false, _) => true,
    };
    if ok {
        cx.pass(k, said)
    } else {
        cx.fail(
            k,
            format!(
                "{said}: {}",
                if success {
                    "the call succeeded, the client did not say so"
                } else {
                    "the call failed, the client reported success"
                }
            ),
            &[last],
        )
    }
}

/// Whether the case's client did no OAuth at all: an OAuth case in which no token was asked
/// for (no code or refresh grant) and no request carried one. Such a client can push a call
/// through the 401s, yet none of it tests what the case is for.
fn did_no_oauth(cx: &Ctx<'_>) -> bool {
    cx.case.oauth
        && counter(cx, "codeGrants") + counter(cx, "refreshGrants") == 0
        && !cx
            .entries
            .iter()
            .any(|e| header(e, "authorization").is_some())
}

/// The failure of an OAuth check when no authorization happened in a case whose point is
/// OAuth (not n/a: "no token to expire" is the client's doing).
fn no_authorization(cx: &Ctx<'_>, k: CheckKind, point: &str) -> Check {
    let refused = unauthorized(cx);
    auth_fail(
        cx,
        k,
        format!(
            "no authorization happened: the client asked the authorization server for no token \
             and presented none ({} requests answered 401), so it does no OAuth; this case's \
             point is {point}",
            refused.len()
        ),
        &refused.into_iter().take(2).collect::<Vec<_>>(),
    )
}

fn tool_called(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::ToolCalled;
    let calls = cx.calls();
    // In an OAuth case a call counts only once it got past authorization: one answered 401
    // reached the server's gate, not the tool.
    let (through, refused): (Vec<&JournalEntry>, Vec<&JournalEntry>) = calls
        .iter()
        .partition(|e| !(cx.case.oauth && e.status == Some(401)));
    let n = through.len();
    if n > 0 {
        return cx.pass(k, format!("{n} tools/call of {}", cx.case.tool));
    }
    if cx.case.checks.contains(&CheckKind::GivesUp) {
        // No usable token: the call cannot get through, and stopping is graded by gives_up.
        return cx.skip(
            k,
            format!(
                "no tools/call of {}: no usable token can be had (graded by gives_up)",
                cx.case.tool
            ),
        );
    }
    if cx.case.checks.contains(&CheckKind::Reinitialize) {
        if let Some(expired) = cx.entries.iter().find(|e| is_expiry(e)) {
            // One failure, one FAIL: not re-initializing is graded by `reinitialize`.
            return cx.skip(
                k,
                format!(
                    "the session expired on {} before any tools/call of {} (graded by reinitialize)",
                    method(expired).unwrap_or("a request"),
                    cx.case.tool
                ),
            );
        }
    }
    if let Some(why) = cx.case.may_decline {
        let lines: Vec<&str> = cx.output.lines().map(str::trim).collect();
        let stated = cx.exit.is_some_and(|c| c != 0)
            && stated_line(&lines).is_some_and(|l| !l.is_empty())
            && crash_before_any_request(cx, &lines).is_none();
        if stated {
            return cx.skip(
                k,
                format!(
                    "no tools/call of {}, with a stated failure: {why} (graded by reported_outcome)",
                    cx.case.tool
                ),
            );
        }
    }
    if !refused.is_empty() {
        let m = format!(
            "{} tools/call of {}, every one answered 401: none got past authorization{}",
            refused.len(),
            cx.case.tool,
            if did_no_oauth(cx) {
                " (the client does no OAuth)"
            } else {
                ""
            }
        );
        return auth_fail(cx, k, m, &refused.into_iter().take(4).collect::<Vec<_>>());
    }
    let seen: Vec<&JournalEntry> = cx.entries.iter().take(8).collect();
    let m = if cx.entries.is_empty() {
        "no request reached the kitchen".to_string()
    } else {
        format!(
            "no tools/call of {} among {} requests",
            cx.case.tool,
            cx.entries.len()
        )
    };
    cx.fail(k, m, &seen)
}

/// The idempotency key a request carried (params, `_meta` or header), for messages.
fn idempotency_key(e: &JournalEntry) -> Option<String> {
    e.retry
        .as_ref()
        .and_then(|r| r.idempotency_key.as_ref())
        .and_then(Value::as_str)
        .or_else(|| header(e, "idempotency-key"))
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
}

/// Graded by effect: a resend fails when the attempt before it may have run the tool and
/// the resend ran it again, for a tool whose annotations do not say that is harmless. A resend
/// after a 503 that never ran, or one an honoured idempotency key answered from the stored
/// result, added nothing and passes; a keyed resend to a server that ignores keys ran twice
/// and fails.
fn no_unsafe_resend(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::NoUnsafeResend;
    let calls = cx.calls();
    let tool = &cx.case.tool;
    match calls.len() {
        0 => return cx.skip(k, "no tools/call: nothing to resend"),
        1 => return cx.pass(k, "sent once"),
        _ => {}
    }
    if cx.case.safety.repeatable() {
        return cx.pass(
            k,
            format!(
                "{tool} is annotated read-only or idempotent: {} sends, no further effect",
                calls.len()
            ),
        );
    }
    let mut harmless = 0;
    for pair in calls.windows(2) {
        let (before, again) = (pair[0], pair[1]);
        if !cx.may_have_run(before) {
            continue;
        }
        if !cx.ran(again) {
            harmless += 1;
            continue;
        }
        let outcome = cx
            .outcome_of(before)
            .map_or("no answer".to_string(), |o| o.as_str().to_string());
        let keyed = match idempotency_key(again) {
            Some(key) => {
                format!(" (it carried idempotency key {key:?}, which this server does not honour)")
            }
            None => String::new(),
        };
        return cx.fail(
            k,
            format!(
                "{tool} (neither read-only nor idempotent) was resent after an attempt that may have run ({outcome}), and the resend ran it again{keyed}"
            ),
            &[before, again],
        );
    }
    cx.pass(
        k,
        if harmless > 0 {
            format!(
                "{} sends; {harmless} resend(s) after an attempt that may have run were answered from the stored result (idempotency key honoured)",
                calls.len()
            )
        } else {
            format!(
                "{} sends, none after an attempt that ran: no duplicate effect",
                calls.len()
            )
        },
    )
}

/// A resend after a transport failure waits at least [`MIN_BACKOFF_MS`] after the failed
/// answer ended: a burst of resends is what turns a server's overload into an outage.
fn backoff(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::Backoff;
    let calls = cx.calls();
    let mut resends = 0;
    let mut shortest = u64::MAX;
    for pair in calls.windows(2) {
        let (before, again) = (pair[0], pair[1]);
        if !cx.transport_failure(before) {
            continue;
        }
        resends += 1;
        let gap = received(again).saturating_sub(cx.answered_at(before));
        if gap < MIN_BACKOFF_MS {
            let what = cx
                .outcome_of(before)
                .map_or("failed".to_string(), |o| o.as_str().to_string());
            return cx.fail(
                k,
                format!(
                    "resent {gap} ms after a {what} answer ended (at least {MIN_BACKOFF_MS} ms)"
                ),
                &[before, again],
            );
        }
        shortest = shortest.min(gap);
    }
    if resends == 0 {
        return cx.skip(k, "no resend after a transport failure");
    }
    cx.pass(
        k,
        format!("{resends} resend(s), the soonest {shortest} ms after the failure"),
    )
}

fn bounded_resend(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::BoundedResend;
    let calls = cx.calls();
    let Some(first) = calls.first() else {
        return cx.skip(k, "no tools/call: nothing to resend");
    };
    if calls.len() > 3 {
        return cx.fail(
            k,
            format!(
                "{} resends of a read after 503 (at most 2)",
                calls.len() - 1
            ),
            &[first, calls[3]],
        );
    }
    if let Some(second) = calls.get(1) {
        let gap = received(second).saturating_sub(received(first));
        if gap < 200 {
            return cx.fail(
                k,
                format!("first resend {gap} ms after the 503'd request (at least 200 ms)"),
                &[first, second],
            );
        }
        return cx.pass(
            k,
            format!("{} resend(s), the first after {gap} ms", calls.len() - 1),
        );
    }
    cx.pass(k, "not resent")
}

fn retry_after(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::RetryAfter;
    let calls = cx.calls();
    let Some(limited) = calls.iter().find(|e| e.status == Some(429)) else {
        return cx.skip(k, "no tools/call got the injected 429");
    };
    let t0 = received(limited);
    let next = calls
        .iter()
        .find(|e| received(e) >= t0 && !std::ptr::eq(**e, *limited));
    let Some(e) = next else {
        return cx.pass(k, "not retried");
    };
    let gap = received(e) - t0;
    if gap < cx.case.retry_after_ms {
        return cx.fail(
            k,
            format!(
                "tools/call {gap} ms after the 429 (Retry-After {} ms)",
                cx.case.retry_after_ms
            ),
            &[limited, e],
        );
    }
    cx.pass(k, format!("retried after {gap} ms"))
}

/// No resend after an answer that was an answer: a tool error or a JSON-RPC error. Each
/// send is judged by the answer the send before it got, so a resend after a 503 that then
/// meets the error is not counted against the client.
fn no_auto_resend(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::NoAutoResend;
    let calls = cx.calls();
    if calls.is_empty() {
        return cx.skip(k, "no tools/call");
    }
    for pair in calls.windows(2) {
        let what = match cx.outcome_of(pair[0]) {
            Some(Outcome::ToolError) => "tool error (isError)",
            Some(Outcome::JsonrpcError) => "JSON-RPC error",
            _ => continue,
        };
        return cx.fail(
            k,
            format!("tools/call sent again after a {what} answer"),
            &[pair[0], pair[1]],
        );
    }
    match calls.len() {
        1 => cx.pass(k, "sent once"),
        n => cx.pass(k, format!("sent {n} times, never after an error answer")),
    }
}

/// Slack on `retryNotBefore` for the clocks' millisecond rounding (the kitchen's epoch ms, the
/// client's wait in whole ms): a resend this close counts as on time.
const NOT_BEFORE_SLACK_MS: u64 = 10;

/// After a tool error whose failure the server declared (draft SEP #3313), a later call of
/// the tool (one that arrived after that answer ended, so the client had it) must be allowed
/// by the declaration: only a `reliability` failure declared `retryable`, of a tool safe to run
/// again, no sooner than `retryNotBefore`.
fn honours_declared_class(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::HonoursDeclaredClass;
    let calls = cx.calls();
    let declared: Vec<_> = calls
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let a = e.answer.as_ref()?;
            Some((i, a, a.declared_failure.as_deref()?))
        })
        .collect();
    let Some(&(_, _, first)) = declared.first() else {
        return cx.skip(k, "no call was answered with a declared failure");
    };
    for &(i, answer, f) in &declared {
        let Some(resend) = calls[i + 1..]
            .iter()
            .find(|e| e.received_ms >= answer.ended_ms)
        else {
            continue;
        };
        let what = format!(
            "a declared {} failure ({}, retryable {})",
            f.class,
            f.code,
            f.retryable.map_or("absent".to_string(), |r| r.to_string())
        );
        let allowed = f.class == FailureClass::Reliability && f.retryable == Some(true);
        if !allowed {
            return cx.fail(
                k,
                format!("tools/call sent again after {what}: the server said not to retry it"),
                &[calls[i], resend],
            );
        }
        if !cx.case.safety.repeatable() {
            return cx.fail(
                k,
                format!("tools/call sent again after {what}, but the tool is neither read-only nor idempotent"),
                &[calls[i], resend],
            );
        }
        if let Some(not_before) = f.retry_not_before {
            if resend.received_ms + NOT_BEFORE_SLACK_MS < not_before {
                return cx.fail(
                    k,
                    format!(
                        "tools/call sent again {} ms before the retryNotBefore of {what}",
                        not_before - resend.received_ms
                    ),
                    &[calls[i], resend],
                );
            }
        }
    }
    let message = if calls.len() > 1 {
        format!(
            "sent {} times, each as the declared {} failure allows",
            calls.len(),
            first.class
        )
    } else {
        format!(
            "not sent again after the declared {} failure ({})",
            first.class, first.code
        )
    };
    cx.pass(k, message)
}

/// After an answer saying the tool is unknown (`-32602` naming an unknown tool), every later
/// tools/call — of any tool — comes after a tools/list sent after that answer: the client acts
/// on the list as it is now, not on the stale one.
fn relist_before_call(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::RelistBeforeCall;
    let unknown = |e: &JournalEntry| {
        e.answer.as_ref().is_some_and(|a| {
            a.code == Some(-32602)
                && a.message
                    .as_deref()
                    .is_some_and(|m| m.to_lowercase().contains("unknown tool"))
        })
    };
    let Some(stale) = cx
        .entries
        .iter()
        .position(|e| method(e) == Some("tools/call") && unknown(e))
    else {
        return cx.skip(k, "no call met an unknown tool");
    };
    let mut listed = false;
    let mut later_calls = 0;
    for e in &cx.entries[stale + 1..] {
        match method(e) {
            Some("tools/list") => listed = true,
            Some("tools/call") => {
                later_calls += 1;
                if !listed {
                    return cx.fail(
                        k,
                        format!(
                            "tools/call of {} after \"unknown tool\" without a tools/list first",
                            e.tool.as_deref().unwrap_or("?")
                        ),
                        &[&cx.entries[stale], e],
                    );
                }
            }
            _ => {}
        }
    }
    match later_calls {
        0 => cx.pass(k, "did not call again after \"unknown tool\""),
        n => cx.pass(
            k,
            format!("{n} later call(s), each after a fresh tools/list"),
        ),
    }
}

fn mrtr_retry(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::MrtrRetry;
    let calls = cx.calls();
    let Some(pos) = calls.iter().position(|e| e.issued.is_some()) else {
        if calls.iter().any(|e| e.era == Some(Era::Modern)) {
            return cx.skip(
                k,
                "the kitchen issued no input_required (client declared no elicitation?)",
            );
        }
        return cx.skip(
            k,
            "legacy era: elicitation/create on the SSE stream, no MRTR retry",
        );
    };
    let asked = calls[pos];
    let Some(retry) = calls.get(pos + 1) else {
        return cx.fail(k, "no retry after input_required", &[asked]);
    };
    if retry.id == asked.id {
        return cx.fail(k, "the retry reuses the JSON-RPC id", &[asked, retry]);
    }
    let issued = asked.issued.clone().unwrap_or_default();
    let echoed = retry.retry.clone().unwrap_or_default();
    if echoed.request_state.unwrap_or(Value::Null) != issued.request_state {
        return cx.fail(
            k,
            "the retry does not echo the exact requestState",
            &[asked, retry],
        );
    }
    let sent = echoed.input_response_keys.unwrap_or_default();
    let missing: Vec<&str> = issued
        .input_request_keys
        .iter()
        .filter(|k| !sent.contains(k))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return cx.fail(
            k,
            format!("inputResponses lacks {}", missing.join(", ")),
            &[asked, retry],
        );
    }
    cx.pass(k, "new id, exact requestState, every inputResponses key")
}

fn reissue_new_id(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::ReissueNewId;
    let calls = cx.calls();
    for (i, a) in calls.iter().enumerate() {
        for b in &calls[i + 1..] {
            // Legacy ids are scoped by session; modern requests have none.
            if a.id == b.id && a.session == b.session {
                return cx.fail(k, "re-issued with the same JSON-RPC id", &[a, b]);
            }
        }
    }
    match calls.len() {
        0 => cx.skip(k, "no tools/call"),
        1 => cx.pass(k, "not re-issued"),
        n => cx.pass(
            k,
            format!("re-issued {} time(s), each with a new id", n - 1),
        ),
    }
}

/// The call whose stream a resumption check grades: the first `tools/call`, in the legacy
/// era (2026-07-28 streams are not resumable); else the check's n/a.
fn resumable_call<'c>(cx: &'c Ctx<'_>, k: CheckKind) -> Result<&'c JournalEntry, Check> {
    let Some(post) = cx.calls().first().copied() else {
        return Err(cx.skip(k, "no tools/call"));
    };
    if post.era != Some(Era::Legacy) {
        return Err(cx.skip(k, "2026-07-28: streams are not resumable"));
    }
    Ok(post)
}

fn resume_get(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::ResumeGet;
    let calls = cx.calls();
    let post = match resumable_call(cx, k) {
        Ok(post) => post,
        Err(na) => return na,
    };
    let version = header(post, "mcp-protocol-version").unwrap_or("");
    if version < "2025-11-25" {
        return cx.skip(
            k,
            format!("negotiated {version:?}: no priming event before 2025-11-25"),
        );
    }
    let t0 = received(post);
    let Some(get) = cx.entries.iter().find(|e| {
        e.http_method == "GET" && header(e, "last-event-id").is_some() && received(e) >= t0
    }) else {
        let repost = calls.get(1);
        let mut ev = vec![post];
        ev.extend(repost);
        return cx.fail(
            k,
            if repost.is_some() {
                "re-POSTed instead of resuming with GET + Last-Event-ID"
            } else {
                "no GET with Last-Event-ID after the primed stream closed"
            },
            &ev,
        );
    };
    let gap = received(get) - t0;
    if gap < cx.sse_retry_ms {
        return cx.fail(
            k,
            format!(
                "resumed {gap} ms after the POST, before retry: {} ms",
                cx.sse_retry_ms
            ),
            &[post, get],
        );
    }
    cx.pass(k, format!("GET + Last-Event-ID after {gap} ms"))
}

fn resume_again(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::ResumeAgain;
    let calls = cx.calls();
    let post = match resumable_call(cx, k) {
        Ok(post) => post,
        Err(na) => return na,
    };
    let t0 = received(post);
    // Resumptions only: a standalone GET (no Last-Event-ID) is another stream.
    let resumptions: Vec<&JournalEntry> = cx
        .entries
        .iter()
        .filter(|e| {
            e.http_method == "GET" && received(e) >= t0 && header(e, "last-event-id").is_some()
        })
        .collect();
    let Some(&dropped) = resumptions.first() else {
        return cx.skip(k, "never resumed (graded by resume_get)");
    };
    let id = header(dropped, "last-event-id").unwrap_or("");
    let after = received(dropped);
    if let Some(&again) = resumptions.get(1) {
        let other = header(again, "last-event-id").unwrap_or("");
        if other == id {
            return cx.pass(
                k,
                format!(
                    "resumed again with Last-Event-ID {id} {} ms after the drop",
                    received(again) - after
                ),
            );
        }
        return cx.fail(
            k,
            format!("resumed again with Last-Event-ID {other}, not {id}: no event with an id came since"),
            &[dropped, again],
        );
    }
    if let Some(repost) = calls.iter().find(|c| received(c) > after) {
        return cx.fail(
            k,
            "re-POSTed the call instead of resuming again with the same Last-Event-ID",
            &[dropped, repost],
        );
    }
    cx.fail(
        k,
        "did not resume again after the resumed stream dropped before any event with an id",
        &[dropped],
    )
}

fn reinitialize(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::Reinitialize;
    let Some(expired) = cx.entries.iter().find(|e| is_expiry(e)) else {
        if cx.entries.iter().any(|e| e.era == Some(Era::Modern)) {
            return cx.skip(k, "2026-07-28 has no sessions");
        }
        return cx.skip(k, "the session did not expire (no tools/call in a session)");
    };
    let t0 = received(expired);
    let Some(init) = cx
        .entries
        .iter()
        .find(|e| method(e) == Some("initialize") && received(e) >= t0)
    else {
        return cx.fail(k, "no new initialize after the 404", &[expired]);
    };
    if init.session.is_some() {
        return cx.fail(
            k,
            "the new initialize carries a session id",
            &[expired, init],
        );
    }
    cx.pass(k, "new initialize without a session id")
}

/// Decode `=?base64?…?=` (2026-07-28 header encoding for non-ASCII-safe values).
fn decode_header_value(v: &str) -> String {
    use base64::Engine;
    if let Some(inner) = v
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        if let Ok(b) = base64::engine::general_purpose::STANDARD.decode(inner) {
            return String::from_utf8_lossy(&b).into_owned();
        }
    }
    v.to_string()
}

fn headers_2026(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::Headers2026;
    let modern: Vec<&JournalEntry> = cx
        .entries
        .iter()
        .filter(|e| {
            e.era == Some(Era::Modern)
                && e.http_method == "POST"
                && e.method.is_some()
                && e.id.as_ref().is_some_and(|id| !id.is_null())
        })
        .collect();
    if modern.is_empty() {
        return cx.skip(k, "no 2026-07-28 requests");
    }
    for e in &modern {
        let method = method(e).unwrap_or("");
        let problem = if header(e, "mcp-protocol-version").is_none() {
            Some("MCP-Protocol-Version missing".to_string())
        } else if header(e, "mcp-method") != Some(method) {
            Some(format!(
                "Mcp-Method {:?} for method {method}",
                header(e, "mcp-method")
            ))
        } else if matches!(method, "tools/call" | "resources/read" | "prompts/get") {
            match header(e, "mcp-name").map(decode_header_value) {
                None => Some(format!("Mcp-Name missing on {method}")),
                Some(n) if method == "tools/call" && Some(n.as_str()) != e.tool.as_deref() => {
                    Some(format!("Mcp-Name {n:?} is not the tool name"))
                }
                _ => None,
            }
        } else {
            None
        };
        if let Some(p) = problem {
            return cx.fail(k, p, &[e]);
        }
    }
    cx.pass(
        k,
        format!("{} requests with the required headers", modern.len()),
    )
}

fn in_time(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::InTime;
    if cx.timed_out {
        let last: Vec<&JournalEntry> = cx.entries.last().into_iter().collect();
        return cx.fail(
            k,
            format!(
                "still running after {} s: stopped by the judge",
                cx.timeout_s
            ),
            &last,
        );
    }
    cx.pass(k, "finished")
}

/// What a runtime prints when it ends a program whose work never settled: an exit with
/// this is not the client stating a failure.
const RUNTIME_GAVE_UP: &[(i32, &str, &str)] = &[(
    13,
    "unsettled top-level await",
    "Node exit 13, unsettled top-level await: the event loop emptied while the call was pending",
)];

/// Whether a line of a client's output is a runtime's own words, not the client's: the
/// version banner Node prints under an uncaught exception (`Node.js v22.23.3`), a stack frame
/// (`at f (file.js:1:2)`, Python's `File "x.py", line 3, in f`), a traceback header.
fn is_runtime_noise(line: &str) -> bool {
    let version_after = |prefix: &str| {
        line.strip_prefix(prefix)
            .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()) && !v.contains(' '))
    };
    version_after("Node.js v")
        || version_after("Bun v")
        || version_after("Deno ")
        || line.starts_with("at ")
        || line.starts_with("File \"")
        || line.starts_with("Traceback (most recent call last)")
        || line.chars().all(|c| c == '^' || c == '~' || c == ' ')
}

/// The client's last statement: its last output line that is not runtime noise.
fn stated_line<'a>(lines: &[&'a str]) -> Option<&'a str> {
    lines.iter().rev().copied().find(|l| !is_runtime_noise(l))
}

/// When the client crashed before any request reached the kitchen (an uncaught exception at
/// import or start: a stack trace, a traceback), the exception line: that is no statement of
/// the call's outcome, however much it printed.
fn crash_before_any_request<'a>(cx: &Ctx<'_>, lines: &[&'a str]) -> Option<&'a str> {
    let crashed = lines
        .iter()
        .any(|l| l.starts_with("at ") || l.starts_with("Traceback ("));
    (crashed && cx.entries.is_empty())
        .then(|| stated_line(lines).unwrap_or("an uncaught exception"))
}

/// Words that name a failure in a client's output (matched as whole words, case-folded).
const FAILURE_WORDS: &[&str] = &[
    "error",
    "errors",
    "fail",
    "failed",
    "fails",
    "failure",
    "incomplete",
    "cut",
    "closed",
    "lost",
    "timeout",
    "unavailable",
    "refused",
    "denied",
    "cancelled",
    "canceled",
    "aborted",
    "exception",
    "invalid",
    "iserror",
    "unauthorized",
    "forbidden",
];

/// Whether the output names the failure `a` was: a failure word, the outcome's name, the
/// HTTP status, the JSON-RPC code, or (a tool error) the start of the tool's own text.
pub fn names_failure(output: &str, a: &Answer) -> bool {
    let lower = output.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &str| words.iter().any(|x| x.trim_matches('-') == w);
    let status = a.status.filter(|s| !(200..300).contains(s));
    let tool_text = a
        .detail
        .as_deref()
        .and_then(|d| d.strip_prefix("the tool reported an error: "))
        .map(|t| t.chars().take(30).collect::<String>().to_lowercase());
    FAILURE_WORDS.iter().any(|w| has(w))
        || has(&a.outcome.as_str().to_lowercase())
        || status.is_some_and(|s| has(&s.to_string()))
        || a.code
            .is_some_and(|c| has(&c.to_string()) || has(&c.abs().to_string()))
        || tool_text.is_some_and(|t| !t.is_empty() && lower.contains(&t))
}

/// Exit 0 is a claim of success. It holds when the client says something and the last answer
/// it was given for the call was the tool's result; after any other answer the output must
/// name the failure (docs/judge/README.md, "The client contract").
fn exit_zero(cx: &Ctx<'_>, lines: &[&str], fail: impl Fn(String) -> Check) -> Check {
    let k = CheckKind::ReportedOutcome;
    if lines.is_empty() {
        return fail(
            "exit 0 without a word: a client states its outcome (a call dropped unawaited ends like this too)"
                .into(),
        );
    }
    let Some((e, a)) = cx.last_answer() else {
        return cx.pass(k, "exit 0");
    };
    if a.is_tool_result() || names_failure(cx.output, a) {
        return cx.pass(k, format!("exit 0 after {}", a.outcome.as_str()));
    }
    let mut evidence = vec![journal_line(e)];
    evidence.extend(
        lines
            .iter()
            .rev()
            .take(3)
            .rev()
            .map(|l| format!("client: {l}")),
    );
    cx.check(
        k,
        Status::Fail,
        format!(
            "exit 0, but the last answer the call got was {}{}: not a tool result, and the output does not name the failure",
            a.outcome.as_str(),
            a.status.map_or(String::new(), |s| format!(" (status {s})"))
        ),
    )
    .with_evidence(evidence)
}

fn reported_outcome(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::ReportedOutcome;
    if cx.timed_out {
        return cx.skip(k, "stopped at the timeout (graded by in_time)");
    }
    let lines: Vec<&str> = cx
        .output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail: Vec<String> = lines[lines.len().saturating_sub(3)..]
        .iter()
        .map(|l| format!("client: {l}"))
        .collect();
    let fail = |m: String| cx.check(k, Status::Fail, m).with_evidence(tail.clone());
    let Some(code) = cx.exit else {
        return fail("ended by a signal, without an outcome".into());
    };
    if code == 0 {
        return exit_zero(cx, &lines, fail);
    }
    let lower = cx.output.to_lowercase();
    if let Some((_, _, why)) = RUNTIME_GAVE_UP
        .iter()
        .find(|(c, text, _)| *c == code && lower.contains(text))
    {
        return fail(format!("{why}; nothing reported"));
    }
    if let Some(error) = crash_before_any_request(cx, &lines) {
        return fail(format!(
            "exit {code}: crashed before any request reached the server ({error}); a stack trace is no statement of the call's outcome"
        ));
    }
    match stated_line(&lines) {
        None if lines.is_empty() => fail(format!("exit {code} without a word on stdout or stderr")),
        None => fail(format!(
            "exit {code} with only a runtime's stack trace or banner"
        )),
        Some(last) => cx.pass(k, format!("exit {code}, stated: {last}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::{self, CaseDef};

    fn case(id: &str) -> CaseDef {
        cases::all().into_iter().find(|c| c.id == id).unwrap()
    }
    fn call(t: u64, id: u64, tool: &str, status: u16) -> Value {
        json!({"receivedMs": t, "httpMethod": "POST", "era": "legacy", "session": "s1",
               "method": "tools/call", "id": id, "tool": tool, "status": status, "headers": {}})
    }
    /// A journal entry from the fields a test cares about, the rest as a kitchen leaves them
    /// when they do not apply; it goes through the kitchen's own type, as real entries do.
    fn entry(v: Value) -> JournalEntry {
        let mut e = json!({"time": "2026-01-01T00:00:00.000Z", "receivedMs": 0,
                           "httpMethod": "POST", "scenario": "test", "headers": {}});
        for (k, x) in v.as_object().expect("an object") {
            e[k] = x.clone();
        }
        serde_json::from_value(e).expect("a journal entry")
    }
    fn typed(entries: &[Value]) -> Vec<JournalEntry> {
        entries.iter().cloned().map(entry).collect()
    }
    fn run(kind: CheckKind, c: &CaseDef, entries: &[Value]) -> Check {
        grade(
            kind,
            &Ctx {
                case: c,
                entries: &typed(entries),
                sse_retry_ms: 500,
                timed_out: false,
                timeout_s: 20.0,
                exit: Some(0),
                output: "",
                oauth: None,
            },
        )
    }

    /// A tools/call entry as the kitchen journals it: `executed`, and the answer it was given
    /// (ending `ended` ms after the epoch of the test).
    fn answered(t: u64, id: u64, tool: &str, outcome: &str, status: u16, executed: bool) -> Value {
        let mut e = call(t, id, tool, status);
        e["executed"] = json!(executed);
        e["answer"] = json!({"outcome": outcome, "status": status, "endedMs": t + 5});
        e
    }

    /// Issue 21 item 2: no_unsafe_resend is graded by effect.
    #[test]
    fn unsafe_resend_is_graded_by_what_ran() {
        let c = case("sse_cut.increment_counter");
        let tool = "increment_counter";
        let cut = |t, id| answered(t, id, tool, "STREAM_INCOMPLETE", 200, true);
        assert_eq!(
            run(CheckKind::NoUnsafeResend, &c, &[cut(0, 1)]).status,
            Status::Pass
        );
        // Ran, lost its answer, resent and ran again: a second increment.
        let r = run(CheckKind::NoUnsafeResend, &c, &[cut(0, 1), cut(300, 2)]);
        assert_eq!(r.status, Status::Fail, "{r:?}");
        assert_eq!(r.evidence.len(), 2);
        assert!(r.evidence[1].contains("\"id\":2"));
        // A key the server ignores changes nothing, and the message says so.
        let mut keyed = [cut(0, 1), cut(300, 2)];
        for e in &mut keyed {
            e["retry"] = json!({"idempotencyKey": "k"});
        }
        let r = run(CheckKind::NoUnsafeResend, &c, &keyed);
        assert_eq!(r.status, Status::Fail);
        assert!(r.message.contains("does not honour"), "{}", r.message);
        // A key the server honours: the repeat was answered from the stored result.
        keyed[1]["executed"] = json!(false);
        keyed[1]["deduplicated"] = json!(true);
        keyed[1]["answer"]["outcome"] = json!("TOOL_SUCCESS");
        assert_eq!(
            run(CheckKind::NoUnsafeResend, &c, &keyed).status,
            Status::Pass
        );
        // A 503 that never ran: a resend adds nothing.
        let c = case("http_503.increment_counter");
        let refused = |t, id| answered(t, id, tool, "HTTP_ERROR", 503, false);
        let r = run(
            CheckKind::NoUnsafeResend,
            &c,
            &[refused(0, 1), refused(300, 2)],
        );
        assert_eq!(r.status, Status::Pass, "{r:?}");
        // A read-only tool may be resent whatever ran.
        let c = case("http_503.read_counter");
        let cut = |t, id| answered(t, id, "read_counter", "STREAM_INCOMPLETE", 200, true);
        assert_eq!(
            run(CheckKind::NoUnsafeResend, &c, &[cut(0, 1), cut(300, 2)]).status,
            Status::Pass
        );
    }

    /// Issue 21 item 2: resends after a transport failure wait; a burst fails.
    #[test]
    fn resends_after_a_transport_failure_back_off() {
        let c = case("sse.cut_before_response");
        let tool = "run_configured_test_scenario";
        let cut = |t, id| answered(t, id, tool, "STREAM_INCOMPLETE", 200, true);
        let r = run(CheckKind::Backoff, &c, &[cut(0, 1), cut(10, 2), cut(20, 3)]);
        assert_eq!(r.status, Status::Fail, "{r:?}");
        assert!(r.message.contains("5 ms"), "{}", r.message);
        // Measured from the end of the failed answer, not from when it was sent.
        let slow = answered(0, 1, tool, "STREAM_INCOMPLETE", 200, true);
        let mut slow_end = slow.clone();
        slow_end["answer"]["endedMs"] = json!(2000);
        let r = run(CheckKind::Backoff, &c, &[slow_end, cut(2100, 2)]);
        assert_eq!(r.status, Status::Fail, "{r:?}");
        let r = run(CheckKind::Backoff, &c, &[slow, cut(400, 2)]);
        assert_eq!(r.status, Status::Pass, "{r:?}");
        // A 429 is Retry-After's business; a tool error is not a transport failure.
        let limited = answered(0, 1, tool, "HTTP_ERROR", 429, false);
        let ok = answered(10, 2, tool, "TOOL_SUCCESS", 200, true);
        assert_eq!(
            run(CheckKind::Backoff, &c, &[limited, ok.clone()]).status,
            Status::Skip
        );
        let err = answered(0, 1, tool, "TOOL_ERROR", 200, true);
        assert_eq!(run(CheckKind::Backoff, &c, &[err, ok]).status, Status::Skip);
    }

    /// Issue 21 item 5: each send is judged by the answer the send before it got.
    #[test]
    fn no_auto_resend_reads_the_answer_before_each_send() {
        let c = case("errors.jsonrpc_error");
        let tool = "run_configured_test_scenario";
        let refused = answered(0, 1, tool, "HTTP_ERROR", 503, false);
        let error = answered(300, 2, tool, "JSONRPC_ERROR", 200, false);
        let r = run(CheckKind::NoAutoResend, &c, &[refused, error.clone()]);
        assert_eq!(
            r.status,
            Status::Pass,
            "the error came after the resend: {r:?}"
        );
        let again = answered(600, 3, tool, "TOOL_SUCCESS", 200, true);
        let r = run(CheckKind::NoAutoResend, &c, &[error, again]);
        assert_eq!(r.status, Status::Fail);
        assert!(r.message.contains("JSON-RPC error"), "{}", r.message);
    }

    /// A tool-error answer declaring `failure` (the journal's `answer.declaredFailure`),
    /// ended at `t + 5`.
    fn declared(t: u64, id: u64, failure: Value) -> Value {
        let mut e = answered(
            t,
            id,
            "run_configured_test_scenario",
            "TOOL_ERROR",
            200,
            true,
        );
        e["answer"]["declaredFailure"] = failure;
        e
    }

    /// Issue 45, draft failure classes: a resend after a declared non-retryable failure fails
    /// with both calls as evidence, whatever the tool's safety; a retryable one may be resent
    /// from its retryNotBefore on, not sooner; calls that arrived before the answer (a parallel
    /// burst) are not resends of it.
    #[test]
    fn a_declared_failure_is_resent_only_as_declared() {
        let c = case("errors.declared_non_retryable");
        let tool = "run_configured_test_scenario";
        let kept =
            json!({"class": "reliability", "code": "q", "retryable": false, "correlationId": "c"});
        let ok = answered(600, 2, tool, "TOOL_SUCCESS", 200, true);
        let once = run(
            CheckKind::HonoursDeclaredClass,
            &c,
            &[declared(0, 1, kept.clone())],
        );
        assert_eq!(once.status, Status::Pass, "{once:?}");
        assert!(once.message.contains("not sent again"), "{}", once.message);
        let r = run(
            CheckKind::HonoursDeclaredClass,
            &c,
            &[declared(0, 1, kept.clone()), ok.clone()],
        );
        assert_eq!(r.status, Status::Fail, "{r:?}");
        assert!(r.message.contains("retryable false"), "{}", r.message);
        assert_eq!(r.evidence.len(), 2);
        // Sent before the answer ended: not a resend of it.
        let parallel = answered(2, 2, tool, "TOOL_SUCCESS", 200, true);
        let r = run(
            CheckKind::HonoursDeclaredClass,
            &c,
            &[declared(0, 1, kept), parallel],
        );
        assert_eq!(r.status, Status::Pass, "{r:?}");
        // Governance with retryable true: the class wins.
        let gov =
            json!({"class": "governance", "code": "g", "retryable": true, "correlationId": "c"});
        let r = run(
            CheckKind::HonoursDeclaredClass,
            &c,
            &[declared(0, 1, gov), ok.clone()],
        );
        assert_eq!(r.status, Status::Fail, "{r:?}");
        // Retryable from 500 on: a resend at 600 passes, at 100 fails.
        let c = case("errors.declared_retryable");
        let retry = json!({"class": "reliability", "code": "t", "retryable": true,
                           "retryNotBefore": 500, "correlationId": "c"});
        let r = run(
            CheckKind::HonoursDeclaredClass,
            &c,
            &[declared(0, 1, retry.clone()), ok],
        );
        assert_eq!(r.status, Status::Pass, "{r:?}");
        let early = answered(100, 2, tool, "TOOL_SUCCESS", 200, true);
        let r = run(
            CheckKind::HonoursDeclaredClass,
            &c,
            &[declared(0, 1, retry), early],
        );
        assert_eq!(r.status, Status::Fail, "{r:?}");
        assert!(
            r.message.contains("400 ms before the retryNotBefore"),
            "{}",
            r.message
        );
        // No declared failure at all: n/a.
        let plain = answered(0, 1, tool, "TOOL_ERROR", 200, true);
        assert_eq!(
            run(CheckKind::HonoursDeclaredClass, &c, &[plain]).status,
            Status::Skip
        );
    }

    /// Issue 21 item 1: exit 0 is held against the last answer the call got.
    #[test]
    fn a_claim_of_success_is_held_against_the_journal() {
        let c = case("sse.cut_before_response");
        let tool = "run_configured_test_scenario";
        let cut = typed(&[answered(0, 1, tool, "STREAM_INCOMPLETE", 200, true)]);
        let judge = |exit, output| grade(CheckKind::ReportedOutcome, &ctx(&c, &cut, exit, output));
        let r = judge(Some(0), "result: ok\n");
        assert_eq!(r.status, Status::Fail, "the liar: {r:?}");
        assert!(r.message.contains("STREAM_INCOMPLETE"), "{}", r.message);
        assert!(r.evidence[0].contains("\"answer\""), "{:?}", r.evidence);
        for named in [
            "error: the stream was cut",
            "STREAM_INCOMPLETE",
            "call failed",
        ] {
            assert_eq!(judge(Some(0), named).status, Status::Pass, "{named}");
        }
        assert_eq!(judge(Some(1), "stream ended early").status, Status::Pass);
        // Words inside other words do not count: "executed" is no "cut".
        assert_eq!(judge(Some(0), "executed fine").status, Status::Fail);
        // The HTTP status or the JSON-RPC code name a failure too.
        let refused = typed(&[answered(0, 1, tool, "HTTP_ERROR", 503, false)]);
        let r = grade(
            CheckKind::ReportedOutcome,
            &ctx(&c, &refused, Some(0), "got 503"),
        );
        assert_eq!(r.status, Status::Pass);
        let ok = typed(&[answered(0, 1, tool, "TOOL_SUCCESS", 200, true)]);
        let r = grade(
            CheckKind::ReportedOutcome,
            &ctx(&c, &ok, Some(0), "result: ok"),
        );
        assert_eq!(r.status, Status::Pass);
        // A tool error is named by the tool's own text.
        let mut e = answered(0, 1, tool, "TOOL_ERROR", 200, true);
        e["answer"]["detail"] = json!("the tool reported an error: Tool-side failure");
        let e = typed(&[e]);
        let r = grade(
            CheckKind::ReportedOutcome,
            &ctx(&c, &e, Some(0), "Tool-side failure"),
        );
        assert_eq!(r.status, Status::Pass);
        let r = grade(CheckKind::ReportedOutcome, &ctx(&c, &e, Some(0), "done"));
        assert_eq!(r.status, Status::Fail);
    }

    #[test]
    fn read_resends_are_bounded_and_spaced() {
        let c = case("http_503.read_counter");
        let t = |ts: &[u64]| -> Vec<Value> {
            ts.iter()
                .enumerate()
                .map(|(i, t)| call(*t, i as u64, "read_counter", 503))
                .collect()
        };
        assert_eq!(
            run(CheckKind::BoundedResend, &c, &t(&[0, 250, 800])).status,
            Status::Pass
        );
        assert_eq!(
            run(CheckKind::BoundedResend, &c, &t(&[0, 10])).status,
            Status::Fail
        );
        assert_eq!(
            run(CheckKind::BoundedResend, &c, &t(&[0, 250, 800, 2000])).status,
            Status::Fail
        );
    }

    #[test]
    fn retry_after_is_measured_from_the_429() {
        let c = case("errors.rate_limited");
        let run_tool = "run_configured_test_scenario";
        let early = [call(0, 1, run_tool, 429), call(400, 2, run_tool, 200)];
        let r = run(CheckKind::RetryAfter, &c, &early);
        assert_eq!(r.status, Status::Fail);
        assert!(r.message.contains("400 ms"));
        let late = [call(0, 1, run_tool, 429), call(1200, 2, run_tool, 200)];
        assert_eq!(run(CheckKind::RetryAfter, &c, &late).status, Status::Pass);
        assert_eq!(
            run(CheckKind::RetryAfter, &c, &late[..1]).status,
            Status::Pass
        );
    }

    #[test]
    fn mrtr_retry_needs_new_id_state_and_keys() {
        let c = case("elicitation.approval");
        let tool = "run_configured_test_scenario";
        let mut asked = call(0, 1, tool, 200);
        asked["era"] = json!("modern");
        asked["issued"] = json!({"requestState": "tok", "inputRequestKeys": ["elicitation"]});
        let mut good = call(10, 2, tool, 200);
        good["era"] = json!("modern");
        good["retry"] = json!({"requestState": "tok", "inputResponseKeys": ["elicitation"]});
        assert_eq!(
            run(CheckKind::MrtrRetry, &c, &[asked.clone(), good.clone()]).status,
            Status::Pass
        );
        let mut same_id = good.clone();
        same_id["id"] = json!(1);
        assert!(run(CheckKind::MrtrRetry, &c, &[asked.clone(), same_id])
            .message
            .contains("reuses"));
        let mut changed = good.clone();
        changed["retry"]["requestState"] = json!("tok2");
        assert!(run(CheckKind::MrtrRetry, &c, &[asked.clone(), changed])
            .message
            .contains("requestState"));
        let mut no_key = good;
        no_key["retry"]["inputResponseKeys"] = json!([]);
        assert!(run(CheckKind::MrtrRetry, &c, &[asked.clone(), no_key])
            .message
            .contains("elicitation"));
        assert_eq!(run(CheckKind::MrtrRetry, &c, &[asked]).status, Status::Fail);
    }

    #[test]
    fn resumption_and_reinitialize() {
        let c = case("sse.priming_then_close");
        let mut post = call(0, 1, "run_configured_test_scenario", 200);
        post["headers"] = json!({"mcp-protocol-version": "2025-11-25"});
        let get = |t: u64| {
            json!({"receivedMs": t, "httpMethod": "GET", "era": "legacy", "session": "s1",
                                  "headers": {"last-event-id": "x-0"}, "status": 200})
        };
        assert_eq!(
            run(CheckKind::ResumeGet, &c, &[post.clone(), get(600)]).status,
            Status::Pass
        );
        assert_eq!(
            run(CheckKind::ResumeGet, &c, &[post.clone(), get(50)]).status,
            Status::Fail
        );
        assert_eq!(
            run(CheckKind::ResumeGet, &c, &[post.clone()]).status,
            Status::Fail
        );

        // Issue 45: the resumption drops; a second one with the same id passes, one with no
        // id, another id, a re-POST or nothing fails.
        let c2 = case("sse.second_drop");
        let get_id = |t: u64, id: Option<&str>| {
            let mut g = get(t);
            g["headers"] = match id {
                Some(id) => json!({ "last-event-id": id }),
                None => json!({}),
            };
            g
        };
        let again = |second: Value| {
            run(
                CheckKind::ResumeAgain,
                &c2,
                &[post.clone(), get(600), second],
            )
        };
        assert_eq!(again(get_id(1200, Some("x-0"))).status, Status::Pass);
        // A GET without Last-Event-ID is a standalone stream, not a resumption.
        assert_eq!(again(get_id(1200, None)).status, Status::Fail);
        assert_eq!(again(get_id(1200, Some("x-9"))).status, Status::Fail);
        let mut repost = call(1300, 2, "run_configured_test_scenario", 200);
        repost["headers"] = json!({"mcp-protocol-version": "2025-11-25"});
        let r = again(repost);
        assert_eq!(r.status, Status::Fail);
        assert!(r.message.contains("re-POSTed"), "{}", r.message);
        let r = run(CheckKind::ResumeAgain, &c2, &[post.clone(), get(600)]);
        assert_eq!(r.status, Status::Fail);
        assert_eq!(
            run(CheckKind::ResumeAgain, &c2, &[post]).status,
            Status::Skip
        );

        let c = case("session.expire");
        let expired = call(0, 2, "run_configured_test_scenario", 404);
        let init = |session: Value| {
            json!({"receivedMs": 5, "httpMethod": "POST", "era": "legacy",
                                           "session": session, "method": "initialize", "id": 0, "status": 200})
        };
        assert_eq!(
            run(
                CheckKind::Reinitialize,
                &c,
                &[expired.clone(), init(Value::Null)]
            )
            .status,
            Status::Pass
        );
        assert_eq!(
            run(
                CheckKind::Reinitialize,
                &c,
                &[expired.clone(), init(json!("s1"))]
            )
            .status,
            Status::Fail
        );
        assert_eq!(
            run(CheckKind::Reinitialize, &c, &[expired]).status,
            Status::Fail
        );
    }

    fn ctx<'a>(
        c: &'a CaseDef,
        entries: &'a [JournalEntry],
        exit: Option<i32>,
        output: &'a str,
    ) -> Ctx<'a> {
        Ctx {
            case: c,
            entries,
            sse_retry_ms: 500,
            timed_out: false,
            timeout_s: 20.0,
            exit,
            output,
            oauth: None,
        }
    }

    /// Issue 16 item 1: a client that exits without a result (Node's exit 13, or non-zero
    /// without a word) fails reported_outcome, and its "sent once" / "finished" passes turn
    /// n/a; a stated failure or exit 0 passes.
    #[test]
    fn silent_exit_fails_reported_outcome_and_proves_no_resend_check() {
        let c = case("errors.tool_error");
        let once = [call(0, 1, "run_configured_test_scenario", 200)];
        let kinds = [
            CheckKind::ToolCalled,
            CheckKind::NoAutoResend,
            CheckKind::InTime,
            CheckKind::ReportedOutcome,
        ];
        let status =
            |checks: &[Check], name: &str| checks.iter().find(|k| k.name == name).unwrap().status;
        let node13 = "Warning: Detected unsettled top-level await at file:///c.mjs:30\n  await client.callTool()\n";
        for (exit, output) in [(Some(13), node13), (Some(1), ""), (None, "")] {
            let g = grade_all(&kinds, &ctx(&c, &typed(&once), exit, output));
            assert_eq!(status(&g, "reported_outcome"), Status::Fail, "{exit:?}");
            assert_eq!(status(&g, "no_auto_resend"), Status::Skip, "{exit:?}");
            assert_eq!(status(&g, "in_time"), Status::Skip, "{exit:?}");
            assert_eq!(status(&g, "tool_called"), Status::Pass);
        }
        let g = grade_all(&kinds, &ctx(&c, &typed(&once), Some(13), node13));
        let k = g.iter().find(|k| k.name == "reported_outcome").unwrap();
        assert!(
            k.message.contains("unsettled top-level await"),
            "{}",
            k.message
        );
        assert!(k.evidence.iter().any(|e| e.contains("callTool")));
        for (exit, output) in [
            (Some(0), "tool error: Tool-side failure\n"),
            (Some(1), "error: McpError -32603 boom\n"),
        ] {
            let g = grade_all(&kinds, &ctx(&c, &typed(&once), exit, output));
            assert!(
                g.iter().all(|k| k.status == Status::Pass),
                "{exit:?}: {g:?}"
            );
        }
        // Issue 21 item 1: exit 0 without a word is no outcome either (a call dropped
        // unawaited, `main().then()`, ends so).
        let g = grade_all(&kinds, &ctx(&c, &typed(&once), Some(0), ""));
        assert_eq!(status(&g, "reported_outcome"), Status::Fail, "{g:?}");
        assert_eq!(status(&g, "no_auto_resend"), Status::Skip);
        // A resend is still a resend, outcome or not.
        let twice = [
            answered(
                0,
                1,
                "run_configured_test_scenario",
                "TOOL_ERROR",
                200,
                true,
            ),
            call(5, 2, "run_configured_test_scenario", 200),
        ];
        let g = grade_all(&kinds, &ctx(&c, &typed(&twice), Some(1), ""));
        assert_eq!(status(&g, "no_auto_resend"), Status::Fail);
    }

    /// A client may decline to call a tool it cannot call (not listed any more; task-only
    /// without the tasks extension): with a stated failure that is n/a, with exit 0 a failure.
    #[test]
    fn declining_an_uncallable_tool_with_a_stated_failure_is_not_a_failure() {
        let c = case("catalog.mutation.renamed");
        let list = typed(&[
            json!({"receivedMs": 0, "httpMethod": "POST", "era": "modern",
                                  "method": "tools/list", "id": 1, "status": 200, "headers": {}}),
        ]);
        let said = "error: tool run_configured_test_scenario not listed";
        let r = grade(CheckKind::ToolCalled, &ctx(&c, &list, Some(1), said));
        assert_eq!(r.status, Status::Skip, "{r:?}");
        assert!(
            r.message.contains("no longer in tools/list"),
            "{}",
            r.message
        );
        let r = grade(CheckKind::ToolCalled, &ctx(&c, &list, Some(0), "ok"));
        assert_eq!(r.status, Status::Fail);
        // Where a client may not decline, not calling stays a failure.
        let c = case("baseline");
        let r = grade(CheckKind::ToolCalled, &ctx(&c, &list, Some(1), said));
        assert_eq!(r.status, Status::Fail);
        assert!(case("tasks.failed").may_decline.is_some());
        assert!(
            case("tasks.completed").may_decline.is_none(),
            "slow_compute runs without a task"
        );
    }

    /// Issue 45 defect 3: a crash at import (a stack trace and Node's version banner, no
    /// request sent) is no stated outcome, for reported_outcome nor for a case a client may
    /// decline; the same trace after requests names the exception line, not the banner.
    #[test]
    fn a_version_banner_is_not_a_statement() {
        let crash = "file:///app/client.mjs:3\nimport { Client } from 'nope';\n\n\
            Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'nope' imported from /app/client.mjs\n    \
            at packageResolve (node:internal/modules/esm/resolve:873:9)\n    \
            at moduleResolve (node:internal/modules/esm/resolve:946:18)\n\nNode.js v22.23.3\n";
        let c = case("baseline");
        let r = grade(CheckKind::ReportedOutcome, &ctx(&c, &[], Some(1), crash));
        assert_eq!(r.status, Status::Fail, "{r:?}");
        assert!(
            r.message.contains("crashed before any request")
                && r.message.contains("ERR_MODULE_NOT_FOUND")
                && !r.message.contains("Node.js v22"),
            "{}",
            r.message
        );
        let declinable = case("tasks.failed");
        let r = grade(
            CheckKind::ToolCalled,
            &ctx(&declinable, &[], Some(1), crash),
        );
        assert_eq!(r.status, Status::Fail, "{r:?}");
        let list = typed(&[
            json!({"receivedMs": 0, "httpMethod": "POST", "era": "modern",
                   "method": "tools/list", "id": 1, "status": 200, "headers": {}}),
        ]);
        let r = grade(CheckKind::ReportedOutcome, &ctx(&c, &list, Some(1), crash));
        assert_eq!(r.status, Status::Pass, "{r:?}");
        assert!(r.message.contains("ERR_MODULE_NOT_FOUND"), "{}", r.message);
        let r = grade(
            CheckKind::ReportedOutcome,
            &ctx(&c, &list, Some(1), "Node.js v22.23.3"),
        );
        assert_eq!(r.status, Status::Fail, "{r:?}");
    }

    /// Issue 21 item 6: after "unknown tool", a next call needs a fresh tools/list.
    #[test]
    fn a_stale_tool_list_is_relisted_before_the_next_call() {
        let c = case("catalog.mutation.renamed");
        let unknown = json!({"receivedMs": 0, "httpMethod": "POST", "method": "tools/call", "id": 1,
            "tool": "run_configured_test_scenario", "status": 200, "headers": {},
            "answer": {"outcome": "JSONRPC_ERROR", "code": -32602,
                       "message": "Unknown tool: run_configured_test_scenario", "endedMs": 1}});
        let list = json!({"receivedMs": 5, "httpMethod": "POST", "method": "tools/list", "id": 2,
                          "status": 200, "headers": {}});
        let renamed = json!({"receivedMs": 9, "httpMethod": "POST", "method": "tools/call", "id": 3,
            "tool": "run_configured_test_scenario_v2", "status": 200, "headers": {}});
        let r = run(
            CheckKind::RelistBeforeCall,
            &c,
            &[unknown.clone(), renamed.clone()],
        );
        assert_eq!(r.status, Status::Fail, "guessed the new name: {r:?}");
        let r = run(
            CheckKind::RelistBeforeCall,
            &c,
            &[unknown.clone(), list, renamed],
        );
        assert_eq!(r.status, Status::Pass, "{r:?}");
        let r = run(
            CheckKind::RelistBeforeCall,
            &c,
            std::slice::from_ref(&unknown),
        );
        assert_eq!(r.status, Status::Pass);
        let mut again = unknown.clone();
        again["id"] = json!(4);
        again["receivedMs"] = json!(20);
        let r = run(CheckKind::RelistBeforeCall, &c, &[unknown, again]);
        assert_eq!(r.status, Status::Fail, "a resend loop without relisting");
        assert_eq!(
            run(CheckKind::RelistBeforeCall, &c, &[]).status,
            Status::Skip
        );
    }

    /// Issue 16 item 4: a session that expired before the call is one failure
    /// (`reinitialize`), not two.
    #[test]
    fn expiry_before_the_call_fails_reinitialize_only() {
        let c = case("session.expire");
        let list = json!({"receivedMs": 0, "httpMethod": "POST", "era": "legacy", "session": "s1",
                          "method": "tools/list", "id": 1, "status": 404, "headers": {}});
        let kinds = [CheckKind::ToolCalled, CheckKind::Reinitialize];
        let list = typed(&[list]);
        let g = grade_all(&kinds, &ctx(&c, &list, Some(1), "error: session expired"));
        assert_eq!(g[0].status, Status::Skip, "{:?}", g[0]);
        assert!(g[0].message.contains("tools/list"));
        assert_eq!(g[1].status, Status::Fail);
    }

    /// Issue 13 item 3: the auth checks read the journal and the authorization server's
    /// counters grown during the case.
    #[test]
    fn auth_checks_bound_loops_and_need_a_stated_give_up() {
        let c = case("auth.wrong_audience");
        let refused = |id: u64| {
            json!({"receivedMs": id, "httpMethod": "POST", "era": "legacy", "method": "initialize",
                   "id": id, "status": 401, "headers": {"authorization": "[redacted]"}})
        };
        let grown = counter_delta(
            &json!({"authorizations": 5, "codeGrants": 5, "refreshGrants": 1}),
            &json!({"authorizations": 7, "codeGrants": 7, "refreshGrants": 2}),
        );
        assert_eq!(
            grown,
            json!({"authorizations": 2, "codeGrants": 2, "refreshGrants": 1})
        );
        let with = |entries: &[Value], oauth: &Value, exit: Option<i32>, output: &str, k| {
            let entries = typed(entries);
            let mut cx = ctx(&c, &entries, exit, output);
            cx.oauth = Some(oauth);
            grade(k, &cx)
        };
        // One request refused four times, three token requests: within the bounds. The same
        // request a fifth time is a loop; four requests refused once each are not.
        let four = [refused(1), refused(1), refused(1), refused(1)];
        let k = CheckKind::AuthBounded;
        assert_eq!(with(&four, &grown, Some(1), "x", k).status, Status::Pass);
        let mut five = four.to_vec();
        five.push(refused(1));
        let r = with(&five, &grown, Some(1), "x", k);
        assert_eq!(r.status, Status::Fail, "{r:?}");
        assert!(r.evidence.last().unwrap().contains("authorization server"));
        let spread: Vec<Value> = (1..=6).map(refused).collect();
        assert_eq!(with(&spread, &grown, Some(1), "x", k).status, Status::Pass);
        let many = json!({"authorizations": 3, "codeGrants": 3});
        assert_eq!(with(&four, &many, Some(1), "x", k).status, Status::Fail);
        // Giving up: a non-zero exit with a message; exit 0 or silence fail.
        let k = CheckKind::GivesUp;
        assert_eq!(
            with(&four, &grown, Some(1), "gave up: 401", k).status,
            Status::Pass
        );
        assert_eq!(with(&four, &grown, Some(0), "ok", k).status, Status::Fail);
        assert_eq!(with(&four, &grown, Some(1), " \n", k).status, Status::Fail);
        // Under missing_pkce, any authorization is a failure, message or not.
        let c = case("auth.missing_pkce");
        let four = typed(&four);
        let mut cx = ctx(&c, &four, Some(1), "refused");
        let authorized = json!({"authorizations": 1});
        cx.oauth = Some(&authorized);
        assert_eq!(grade(k, &cx).status, Status::Fail);
        // A token asked for another resource fails token_audience.
        let c = case("auth.expired_token");
        let mut cx = ctx(&c, &four, Some(0), "");
        let misdirected = json!({"misdirectedTokens": 1});
        cx.oauth = Some(&misdirected);
        assert_eq!(grade(CheckKind::TokenAudience, &cx).status, Status::Fail);
        cx.oauth = Some(&grown);
        assert_eq!(grade(CheckKind::TokenAudience, &cx).status, Status::Pass);
    }

    /// Evidence lines are what they were when checks read JSON: `null`s dropped, only the
    /// telling headers, keys sorted.
    #[test]
    fn journal_line_keeps_the_telling_fields() {
        let e = entry(
            json!({"receivedMs": 3, "era": "modern", "method": "tools/call", "id": 2,
            "tool": "t", "status": 503, "retry": {"idempotencyKey": "k"}, "session": null,
            "headers": {"accept": "x", "mcp-method": "tools/call", "authorization": "[redacted]"}}),
        );
        assert_eq!(
            journal_line(&e),
            r#"{"era":"modern","headers":{"authorization":"[redacted]","mcp-method":"tools/call"},"httpMethod":"POST","id":2,"method":"tools/call","receivedMs":3,"retry":{"idempotencyKey":"k"},"status":503,"time":"2026-01-01T00:00:00.000Z","tool":"t"}"#
        );
    }

    #[test]
    fn negotiated_version_is_the_calls_header() {
        let mut e = call(0, 1, "t", 200);
        e["headers"] = json!({"mcp-protocol-version": "2025-06-18"});
        let other = json!({"method": "tools/list", "headers": {"mcp-protocol-version": "x"}});
        assert_eq!(
            negotiated_version(&typed(&[other.clone(), e])).as_deref(),
            Some("2025-06-18")
        );
        assert_eq!(negotiated_version(&typed(&[other])).as_deref(), Some("x"));
        assert_eq!(negotiated_version(&[]), None);
    }

    #[test]
    fn headers_2026_on_modern_requests() {
        let c = case("baseline");
        let mut e = call(0, 1, "run_configured_test_scenario", 200);
        e["era"] = json!("modern");
        e["headers"] = json!({"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
                              "mcp-name": "=?base64?cnVuX2NvbmZpZ3VyZWRfdGVzdF9zY2VuYXJpbw==?="});
        assert_eq!(
            run(CheckKind::Headers2026, &c, &[e.clone()]).status,
            Status::Pass
        );
        e["headers"]["mcp-name"] = json!("other");
        assert_eq!(
            run(CheckKind::Headers2026, &c, &[e.clone()]).status,
            Status::Fail
        );
        e["era"] = json!("legacy");
        assert_eq!(run(CheckKind::Headers2026, &c, &[e]).status, Status::Skip);
    }
}
