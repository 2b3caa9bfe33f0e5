//! `McptClassifier`: the incremental classifier (new → feed* → is_decided? → finish or
//! interrupted → free), and the one-shot `mcpt_classify`.

use std::ffi::c_char;

use mcp_triage_core::{Interruption, ResponseClassifier};

use crate::args::{self, McptCallOptions, McptHeader};
use crate::error::{guard, guard_value, FfiError, FfiResult, MCPT_ERR_INVALID_ARGUMENT};
use crate::verdict::McptVerdict;

/// `mcpt_classifier_interrupted`: the connection was reset or closed before the body ended.
pub const MCPT_INTERRUPT_CONNECTION_LOST: i32 = 1;
/// `mcpt_classifier_interrupted`: the caller's deadline passed before the body ended.
pub const MCPT_INTERRUPT_TIMED_OUT: i32 = 2;

/// Set in a live classifier, cleared when it is freed (best effort, as for verdicts).
const LIVE: u64 = 0x6d63_7074_636c_6173; // "mcptclas"

/// The incremental classifier of one response (opaque). Owned by the caller from
/// `mcpt_classifier_new` until `mcpt_classifier_free`; used by one thread at a time (it may move
/// between threads between calls); classifiers are independent of one another.
pub struct McptClassifier {
    magic: u64,
    /// `None` once finish or interrupted took the verdict.
    inner: Option<ResponseClassifier>,
}

/// The classifier behind a pointer from C.
///
/// # Safety
/// `c` is NULL or a classifier from `mcpt_classifier_new` that was not freed.
unsafe fn live<'a>(c: *const McptClassifier) -> FfiResult<&'a McptClassifier> {
    // SAFETY: the caller's contract.
    let c = unsafe { c.as_ref() }.ok_or_else(|| FfiError::null("classifier"))?;
    if c.magic != LIVE {
        return Err(FfiError::invalid(
            "classifier is not a live classifier (freed, or not from mcpt_classifier_new)",
        ));
    }
    Ok(c)
}

/// # Safety
/// As [`live`], and no other reference to `*c` exists during the call.
unsafe fn live_mut<'a>(c: *mut McptClassifier) -> FfiResult<&'a mut McptClassifier> {
    unsafe { live(c) }?;
    // SAFETY: checked non-NULL and live above; exclusive by the caller's contract.
    Ok(unsafe { &mut *c })
}

fn out_ptr<T>(what: &str, out: *mut *mut T) -> FfiResult<()> {
    if out.is_null() {
        return Err(FfiError::null(what));
    }
    Ok(())
}

/// Starts classifying a response with this status (100-999) and `header_count` headers
/// (`headers` may be NULL when the count is 0). `opts` may be NULL: expected id number 1,
/// protocol version "unknown", now 0, default limits, no output schema. Every argument is read
/// during the call only.
///
/// On success `*out` receives a classifier owned by the caller: free it with
/// `mcpt_classifier_free` (also after finish or interrupted). On error `*out` is set to NULL
/// (when `out` is not NULL) and the code says why: `MCPT_ERR_NULL_ARGUMENT`,
/// `MCPT_ERR_INVALID_ARGUMENT` (status, header `i` not UTF-8, id kind, protocol version, `now`,
/// limits JSON, schema).
///
/// # Safety
/// `headers` points to `header_count` valid `McptHeader`s; `opts` is NULL or valid (see
/// `McptCallOptions`); `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mcpt_classifier_new(
    status: u16,
    headers: *const McptHeader,
    header_count: usize,
    opts: *const McptCallOptions,
    out: *mut *mut McptClassifier,
) -> i32 {
    guard("mcpt_classifier_new", || {
        out_ptr("out", out)?;
        // SAFETY: checked non-NULL; cleared first so that an error leaves no stale pointer.
        unsafe { out.write(std::ptr::null_mut()) };
        let head = unsafe { args::head(status, headers, header_count) }?;
        let ctx = unsafe { args::context(opts) }?;
        let c = Box::new(McptClassifier {
            magic: LIVE,
            inner: Some(ResponseClassifier::with_headers(status, &head, ctx)),
        });
        unsafe { out.write(Box::into_raw(c)) };
        Ok(())
    })
}

/// Feeds the next `len` bytes of the body (`chunk` may be NULL when `len` is 0). The bytes are
/// read during the call only. Bytes after the verdict is decided are counted but change nothing.
/// `MCPT_ERR_FINISHED` after finish or interrupted.
///
/// # Safety
/// `c` is a live classifier not used by another thread meanwhile; `chunk` points to `len`
/// readable bytes.
#[no_mangle]
pub unsafe extern "C" fn mcpt_classifier_feed(
    c: *mut McptClassifier,
    chunk: *const u8,
    len: usize,
) -> i32 {
    guard("mcpt_classifier_feed", || {
        let c = unsafe { live_mut(c) }?;
        let bytes = unsafe { args::bytes("chunk", chunk, len) }?;
        c.inner.as_mut().ok_or_else(FfiError::finished)?.feed(bytes);
        Ok(())
    })
}

/// 1 once the verdict is known (the caller may stop reading the body; an SSE stream can be
/// decided by its response event before it ends), 0 not yet, or a negative error
/// (`MCPT_ERR_FINISHED` after finish or interrupted).
///
/// # Safety
/// `c` is a live classifier not used by another thread meanwhile.
#[no_mangle]
pub unsafe extern "C" fn mcpt_classifier_is_decided(c: *const McptClassifier) -> i32 {
    let mut decided = false;
    let code = guard("mcpt_classifier_is_decided", || {
        let c = unsafe { live(c) }?;
        decided = c
            .inner
            .as_ref()
            .ok_or_else(FfiError::finished)?
            .is_decided();
        Ok(())
    });
    if code < 0 {
        code
    } else {
        i32::from(decided)
    }
}

/// Hands the verdict out of a finished classifier: `*out` is set on success.
fn emit(out: *mut *mut McptVerdict, v: mcp_triage_core::Verdict) {
    // SAFETY: `out` was checked non-NULL by the caller of `emit`.
    unsafe { out.write(McptVerdict::into_raw(v)) };
}

/// The body ended: `*out` receives the verdict, owned by the caller (free it with
/// `mcpt_verdict_free`). The classifier's state is consumed; the handle itself must still be
/// freed with `mcpt_classifier_free`, and any further call on it but free returns
/// `MCPT_ERR_FINISHED`. On error `*out` is set to NULL (when `out` is not NULL).
///
/// # Safety
/// `c` is a live classifier not used by another thread meanwhile; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mcpt_classifier_finish(
    c: *mut McptClassifier,
    out: *mut *mut McptVerdict,
) -> i32 {
    guard("mcpt_classifier_finish", || {
        out_ptr("out", out)?;
        unsafe { out.write(std::ptr::null_mut()) };
        let c = unsafe { live_mut(c) }?;
        let inner = c.inner.take().ok_or_else(FfiError::finished)?;
        emit(out, inner.finish());
        Ok(())
    })
}

/// The body broke off: `kind` is `MCPT_INTERRUPT_CONNECTION_LOST` or `MCPT_INTERRUPT_TIMED_OUT`,
/// `reason` (NUL-terminated UTF-8, NULL = no words) says how, for the verdict's detail. `*out`
/// receives the verdict as for `mcpt_classifier_finish` (a non-2xx status is still
/// `HTTP_ERROR`; an SSE stream without its response `CONNECTION_ERROR` or `TIMEOUT`).
///
/// # Safety
/// As `mcpt_classifier_finish`; `reason` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcpt_classifier_interrupted(
    c: *mut McptClassifier,
    kind: i32,
    reason: *const c_char,
    out: *mut *mut McptVerdict,
) -> i32 {
    guard("mcpt_classifier_interrupted", || {
        out_ptr("out", out)?;
        unsafe { out.write(std::ptr::null_mut()) };
        let c = unsafe { live_mut(c) }?;
        let reason = unsafe { args::c_text("reason", reason) }?
            .unwrap_or("")
            .to_string();
        let why = match kind {
            MCPT_INTERRUPT_CONNECTION_LOST => Interruption::ConnectionLost(reason),
            MCPT_INTERRUPT_TIMED_OUT => Interruption::TimedOut(reason),
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
        let inner = c.inner.take().ok_or_else(FfiError::finished)?;
        emit(out, inner.interrupted(why));
        Ok(())
    })
}

/// Frees a classifier (finished or not). NULL is a no-op; `c` is invalid afterwards.
///
/// # Safety
/// `c` is NULL or a classifier from `mcpt_classifier_new`, freed once and not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn mcpt_classifier_free(c: *mut McptClassifier) {
    guard_value("mcpt_classifier_free", (), || {
        if c.is_null() {
            return;
        }
        // SAFETY: the caller's contract: `c` came from `Box::into_raw` and is freed once.
        let mut b = unsafe { Box::from_raw(c) };
        b.magic = 0;
        drop(b);
    })
}

/// Classifies one complete response (`body` may be NULL when `body_len` is 0): the verdict of
/// new + feed(body) + finish, computed in place. Arguments as `mcpt_classifier_new`; `*out`
/// receives a verdict owned by the caller (free with `mcpt_verdict_free`), NULL on error.
///
/// # Safety
/// As `mcpt_classifier_new`; `body` points to `body_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn mcpt_classify(
    status: u16,
    headers: *const McptHeader,
    header_count: usize,
    body: *const u8,
    body_len: usize,
    opts: *const McptCallOptions,
    out: *mut *mut McptVerdict,
) -> i32 {
    guard("mcpt_classify", || {
        out_ptr("out", out)?;
        unsafe { out.write(std::ptr::null_mut()) };
        let head = unsafe { args::head(status, headers, header_count) }?;
        let ctx = unsafe { args::context(opts) }?;
        let body = unsafe { args::bytes("body", body, body_len) }?;
        emit(
            out,
            ResponseClassifier::with_headers(status, &head, ctx).classify_whole(body),
        );
        Ok(())
    })
}
