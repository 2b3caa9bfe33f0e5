//! `mcpt_verdict_no_response`: the verdict of a call that got no response head at all.
//!
//! Why it exists: a gateway that sent the request upstream and then saw the connection close,
//! or its own deadline pass, before any status line has nothing to build a classifier from
//! (`mcpt_classifier_new` needs a status). The proxy records such a call as the core's
//! `Verdict::connection_error` / `Verdict::timeout`; this hands the same verdicts to C, so an
//! engine never writes the verdict itself.

use std::ffi::c_char;

use mcp_triage_core::Verdict;

use crate::args;
use crate::classifier::{MCPT_INTERRUPT_CONNECTION_LOST, MCPT_INTERRUPT_TIMED_OUT};
use crate::error::{guard, FfiError, MCPT_ERR_INVALID_ARGUMENT};
use crate::verdict::McptVerdict;

/// The verdict of a call whose response head never arrived: `kind`
/// `MCPT_INTERRUPT_CONNECTION_LOST` gives `CONNECTION_ERROR`, `MCPT_INTERRUPT_TIMED_OUT` gives
/// `TIMEOUT`; `reason` (NUL-terminated UTF-8, NULL = no words) becomes its detail. `*out`
/// receives a verdict owned by the caller (free with `mcpt_verdict_free`), NULL on error
/// (`MCPT_ERR_NULL_ARGUMENT` for `out`, `MCPT_ERR_INVALID_ARGUMENT` for `kind` or `reason`).
///
/// # Safety
/// `reason` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mcpt_verdict_no_response(
    kind: i32,
    reason: *const c_char,
    out: *mut *mut McptVerdict,
) -> i32 {
    guard("mcpt_verdict_no_response", || {
        if out.is_null() {
            return Err(FfiError::null("out"));
        }
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(std::ptr::null_mut()) };
        let reason = unsafe { args::c_text("reason", reason) }?;
        let detail = reason.unwrap_or("no response head arrived").to_string();
        let v = match kind {
            MCPT_INTERRUPT_CONNECTION_LOST => Verdict::connection_error(detail),
            MCPT_INTERRUPT_TIMED_OUT => Verdict::timeout(detail),
            k => {
                return Err(FfiError {
                    code: MCPT_ERR_INVALID_ARGUMENT,
                    message: format!(
                        "kind must be MCPT_INTERRUPT_CONNECTION_LOST (1) or \
                         MCPT_INTERRUPT_TIMED_OUT (2), got {k}"
                    ),
                })
            }
        };
        // SAFETY: checked non-NULL above.
        unsafe { out.write(McptVerdict::into_raw(v)) };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{MCPT_ERR_NULL_ARGUMENT, MCPT_OK};
    use crate::verdict::{
        mcpt_verdict_free, mcpt_verdict_json, mcpt_verdict_outcome, MCPT_OUTCOME_CONNECTION_ERROR,
        MCPT_OUTCOME_TIMEOUT,
    };
    use std::ffi::CStr;

    fn json_of(kind: i32, reason: &CStr) -> (i32, String) {
        let mut v = std::ptr::null_mut();
        assert_eq!(
            unsafe { mcpt_verdict_no_response(kind, reason.as_ptr(), &mut v) },
            MCPT_OK
        );
        let outcome = unsafe { mcpt_verdict_outcome(v) };
        let text = unsafe { CStr::from_ptr(mcpt_verdict_json(v, std::ptr::null_mut())) }
            .to_str()
            .unwrap()
            .to_string();
        unsafe { mcpt_verdict_free(v) };
        (outcome, text)
    }

    #[test]
    fn the_verdicts_are_the_cores_connection_error_and_timeout() {
        let (o, text) = json_of(MCPT_INTERRUPT_CONNECTION_LOST, c"upstream closed");
        assert_eq!(o, MCPT_OUTCOME_CONNECTION_ERROR);
        let want = serde_json::to_string(&Verdict::connection_error("upstream closed")).unwrap();
        assert_eq!(text, want);
        let (o, text) = json_of(MCPT_INTERRUPT_TIMED_OUT, c"no head in 60 s");
        assert_eq!(o, MCPT_OUTCOME_TIMEOUT);
        assert_eq!(
            text,
            serde_json::to_string(&Verdict::timeout("no head in 60 s")).unwrap()
        );
    }

    #[test]
    fn a_bad_kind_or_a_null_out_is_an_error_and_out_is_cleared() {
        let mut v = std::ptr::dangling_mut::<McptVerdict>();
        let rc = unsafe { mcpt_verdict_no_response(7, std::ptr::null(), &mut v) };
        assert_eq!(rc, MCPT_ERR_INVALID_ARGUMENT);
        assert!(v.is_null());
        let rc = unsafe {
            mcpt_verdict_no_response(
                MCPT_INTERRUPT_TIMED_OUT,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(rc, MCPT_ERR_NULL_ARGUMENT);
    }
}
