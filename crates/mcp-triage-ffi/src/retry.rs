//! `mcpt_decide_retry`: the core's retry policy over one JSON object, with the argument names
//! and defaults of the Python and Node bindings' `decide_retry` / `decideRetry`.

use std::ffi::{c_char, CString};
use std::hash::{BuildHasher, RandomState};

use mcp_triage_core::retry::{self, Delivery, RetryAction, RetryInput, RetryOptions, ToolHints};
use mcp_triage_core::Verdict;
use serde::Deserialize;

use crate::args::c_text;
use crate::error::{guard, guard_value, FfiError, FfiResult};

/// The input object. The members are the keyword arguments of the Python binding in camelCase;
/// `null` is the same as absent. The shapes of `verdict`, `hints` and `options` are the core's
/// own serde forms (a verdict JSON, a tool's `annotations`, `RetryOptions`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RetryRequest {
    verdict: Verdict,
    #[serde(default)]
    hints: Option<ToolHints>,
    #[serde(default)]
    delivery: Option<Delivery>,
    #[serde(default)]
    attempt: Option<u32>,
    #[serde(default)]
    options: Option<RetryOptions>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    resumes: Option<u32>,
    #[serde(default)]
    local_server: Option<bool>,
    #[serde(default)]
    legacy_session: Option<bool>,
    #[serde(default)]
    legacy_stream: Option<bool>,
    #[serde(default)]
    reinitialized: Option<bool>,
    #[serde(default)]
    relisted: Option<bool>,
    #[serde(default)]
    jitter: Option<f64>,
}

/// A uniform number in [0, 1) from the standard library's randomly keyed hasher, for a request
/// without `jitter` (the Python binding draws `random.random()` there): the core draws no random
/// numbers itself.
fn random_unit() -> f64 {
    let bits = RandomState::new().hash_one(0u64);
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

fn decide_json(input_json: &str) -> FfiResult<String> {
    let r: RetryRequest = serde_json::from_str(input_json)
        .map_err(|e| FfiError::invalid(format!("input_json: {e}")))?;
    let attempt = r.attempt.unwrap_or(1);
    if attempt < 1 {
        return Err(FfiError::invalid(format!(
            "attempt counts the sends so far (1 after the first), got {attempt}"
        )));
    }
    if let Some(j) = r.jitter {
        if !(0.0..=1.0).contains(&j) {
            return Err(FfiError::invalid(format!(
                "jitter must be in [0, 1], got {j}"
            )));
        }
    }
    let tool = r.tool.unwrap_or_default();
    let input = RetryInput {
        verdict: &r.verdict,
        tool: &tool,
        hints: r.hints.unwrap_or_default(),
        delivery: r.delivery.unwrap_or(Delivery::Sent),
        resends: attempt - 1,
        resumes: r.resumes.unwrap_or(0),
        local_server: r.local_server.unwrap_or(false),
        legacy_session: r.legacy_session.unwrap_or(false),
        legacy_stream: r.legacy_stream.unwrap_or(false),
        reinitialized: r.reinitialized.unwrap_or(false),
        relisted: r.relisted.unwrap_or(false),
        // this caller does not read -32022 refusals: the policy never resends for one
        revision_offered: None,
        revision_resent: false,
        // nor answers input or drives tasks: input_required and task_created are `done`
        input_rounds: None,
        drives_tasks: false,
    };
    let options = r.options.unwrap_or_default();
    let decision = retry::decide(&input, &options, &mut || {
        r.jitter.unwrap_or_else(random_unit)
    });
    let mut out = serde_json::to_value(decision.to_record()).expect("a decision serialises");
    if let RetryAction::Resume { last_event_id, .. } = &decision.action {
        out["lastEventId"] = serde_json::Value::String(last_event_id.clone());
    }
    Ok(out.to_string())
}

/// The retry policy after one attempt of a call. `input_json` (NUL-terminated) is an object
/// `{verdict, hints?, delivery?, attempt?, options?, tool?, resumes?, localServer?,
/// legacySession?, legacyStream?, reinitialized?, relisted?, jitter?}`: `verdict` is a verdict
/// JSON (`mcpt_verdict_json`), `hints` the tool's `annotations` (`readOnlyHint`,
/// `idempotentHint`), `delivery` "never_sent", "sent" (default) or "maybe_executed", `attempt`
/// the sends so far (default 1), `options` the policy's camelCase options (`maxRetries`,
/// `maxResumes`, `backoffBaseMs`, `backoffFactor`, `maxWaitMs`, `trust`, `safeTools`,
/// `idempotencyKey`), `jitter` in [0, 1] fixes the backoff jitter (default: a random number).
/// An unknown member is an error.
///
/// On success `*out_json` receives the decision `{"action", "delayMs"?, "reason",
/// "lastEventId"?}`, NUL-terminated, owned by the caller: free it with `mcpt_string_free`. On
/// error `*out_json` is set to NULL (when `out_json` is not NULL).
///
/// # Safety
/// `input_json` is NULL or NUL-terminated; `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mcpt_decide_retry(
    input_json: *const c_char,
    out_json: *mut *mut c_char,
) -> i32 {
    guard("mcpt_decide_retry", || {
        if out_json.is_null() {
            return Err(FfiError::null("out_json"));
        }
        // SAFETY: checked non-NULL.
        unsafe { out_json.write(std::ptr::null_mut()) };
        let input = unsafe { c_text("input_json", input_json) }?
            .ok_or_else(|| FfiError::null("input_json"))?;
        let text = decide_json(input)?;
        let c = CString::new(text).expect("JSON text has no NUL byte");
        unsafe { out_json.write(c.into_raw()) };
        Ok(())
    })
}

/// Frees a string this library returned to the caller (`mcpt_decide_retry`'s `*out_json`).
/// NULL is a no-op. Never pass it a pointer from `mcpt_verdict_json`, `mcpt_last_error` or the
/// name functions: those are owned by the library.
///
/// # Safety
/// `s` is NULL or a string from this library's `mcpt_decide_retry`, freed once.
#[no_mangle]
pub unsafe extern "C" fn mcpt_string_free(s: *mut c_char) {
    guard_value("mcpt_string_free", (), || {
        if !s.is_null() {
            // SAFETY: the caller's contract: `s` came from `CString::into_raw`.
            drop(unsafe { CString::from_raw(s) });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_503_on_a_read_only_local_tool_is_resent_after_the_backoff() {
        let verdict = r#"{"layer":"transport","outcome":"HTTP_ERROR","status":503}"#;
        let input = format!(
            r#"{{"verdict":{verdict},"hints":{{"readOnlyHint":true}},"localServer":true,"jitter":0}}"#
        );
        let out: serde_json::Value = serde_json::from_str(&decide_json(&input).unwrap()).unwrap();
        assert_eq!(out["action"], "resend", "{out}");
        assert_eq!(out["delayMs"], 200, "{out}");
        let unsafe_call = format!(r#"{{"verdict":{verdict},"jitter":0}}"#);
        let out: serde_json::Value =
            serde_json::from_str(&decide_json(&unsafe_call).unwrap()).unwrap();
        assert_eq!(out["action"], "give_up", "{out}");
    }

    #[test]
    fn bad_input_names_what_is_wrong() {
        let v = r#"{"layer":"transport","outcome":"HTTP_ERROR","status":503}"#;
        for (input, want) in [
            ("{}".to_string(), "verdict"),
            (format!(r#"{{"verdict":{v},"attempt":0}}"#), "attempt"),
            (format!(r#"{{"verdict":{v},"jitter":2}}"#), "jitter"),
            (format!(r#"{{"verdict":{v},"delivery":"maybe"}}"#), "maybe"),
            (
                format!(r#"{{"verdict":{v},"localserver":true}}"#),
                "localserver",
            ),
        ] {
            let e = decide_json(&input).unwrap_err();
            assert!(e.message.contains(want), "{input}: {}", e.message);
        }
    }

    #[test]
    fn random_jitter_is_in_the_unit_interval() {
        for _ in 0..100 {
            let r = random_unit();
            assert!((0.0..1.0).contains(&r), "{r}");
        }
    }
}
