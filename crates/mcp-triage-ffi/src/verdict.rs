//! `McptVerdict`: an immutable verdict, its cheap accessors (stable integer codes for layer and
//! outcome) and its JSON text, the very bytes `mcp-triage classify --format json` prints.

use std::ffi::{c_char, CStr, CString};
use std::sync::OnceLock;

use mcp_triage_core::{Layer, Outcome, Verdict};

use crate::error::guard_value;

/// Layer code: HTTP status, connection, framing, stream completeness.
pub const MCPT_LAYER_TRANSPORT: i32 = 1;
/// Layer code: the JSON-RPC envelope and the shape of the result.
pub const MCPT_LAYER_PROTOCOL: i32 = 2;
/// Layer code: the server needs more from the client (input, polling a task).
pub const MCPT_LAYER_INTERACTION: i32 = 3;
/// Layer code: the tool ran and reported success or failure.
pub const MCPT_LAYER_APPLICATION: i32 = 4;

/// Outcome code of `TOOL_SUCCESS`. Outcome codes are stable and follow `Outcome::ALL`.
pub const MCPT_OUTCOME_TOOL_SUCCESS: i32 = 1;
/// Outcome code of `TOOL_ERROR`.
pub const MCPT_OUTCOME_TOOL_ERROR: i32 = 2;
/// Outcome code of `JSONRPC_ERROR`.
pub const MCPT_OUTCOME_JSONRPC_ERROR: i32 = 3;
/// Outcome code of `INPUT_REQUIRED`.
pub const MCPT_OUTCOME_INPUT_REQUIRED: i32 = 4;
/// Outcome code of `TASK_CREATED`.
pub const MCPT_OUTCOME_TASK_CREATED: i32 = 5;
/// Outcome code of `HTTP_ERROR`.
pub const MCPT_OUTCOME_HTTP_ERROR: i32 = 6;
/// Outcome code of `MISSING_RESPONSE`.
pub const MCPT_OUTCOME_MISSING_RESPONSE: i32 = 7;
/// Outcome code of `STREAM_INCOMPLETE`.
pub const MCPT_OUTCOME_STREAM_INCOMPLETE: i32 = 8;
/// Outcome code of `CONNECTION_ERROR`.
pub const MCPT_OUTCOME_CONNECTION_ERROR: i32 = 9;
/// Outcome code of `TIMEOUT`.
pub const MCPT_OUTCOME_TIMEOUT: i32 = 10;
/// Outcome code of `LIMIT_EXCEEDED`.
pub const MCPT_OUTCOME_LIMIT_EXCEEDED: i32 = 11;
/// Outcome code of `UNEXPECTED_CONTENT_TYPE`.
pub const MCPT_OUTCOME_UNEXPECTED_CONTENT_TYPE: i32 = 12;
/// Outcome code of `MALFORMED_JSON`.
pub const MCPT_OUTCOME_MALFORMED_JSON: i32 = 13;
/// Outcome code of `INVALID_ENVELOPE`.
pub const MCPT_OUTCOME_INVALID_ENVELOPE: i32 = 14;
/// Outcome code of `INVALID_TOOL_RESULT`.
pub const MCPT_OUTCOME_INVALID_TOOL_RESULT: i32 = 15;

/// Set in a live verdict, cleared when it is freed: a best-effort check that turns some misuse
/// (a pointer that never was a verdict, a verdict freed twice while its memory is still mapped)
/// into a NULL-like answer. It cannot make use after free safe.
const LIVE: u64 = 0x6d63_7074_7665_7264; // "mcptverd"

/// A verdict (opaque, immutable). Owned by the caller from the call that returned it until
/// `mcpt_verdict_free`; it may be read from several threads at once.
pub struct McptVerdict {
    magic: u64,
    verdict: Verdict,
    /// The JSON text, made on first request (most callers of the accessors never need it).
    json: OnceLock<CString>,
}

impl McptVerdict {
    /// A verdict handed to C (free with `mcpt_verdict_free`).
    pub(crate) fn into_raw(verdict: Verdict) -> *mut McptVerdict {
        Box::into_raw(Box::new(McptVerdict {
            magic: LIVE,
            verdict,
            json: OnceLock::new(),
        }))
    }

    /// The verdict behind a pointer from C, or `None` for NULL or a pointer that is not a live
    /// verdict (best effort, see [`LIVE`]).
    ///
    /// # Safety
    /// `v` is NULL or a pointer this library returned and that was not freed.
    pub(crate) unsafe fn get<'a>(v: *const McptVerdict) -> Option<&'a Verdict> {
        // SAFETY: the caller's contract.
        let v = unsafe { v.as_ref() }?;
        (v.magic == LIVE).then_some(&v.verdict)
    }
}

/// The stable code of a layer.
pub fn layer_code(l: Layer) -> i32 {
    match l {
        Layer::Transport => MCPT_LAYER_TRANSPORT,
        Layer::Protocol => MCPT_LAYER_PROTOCOL,
        Layer::Interaction => MCPT_LAYER_INTERACTION,
        Layer::Application => MCPT_LAYER_APPLICATION,
    }
}

/// The stable code of an outcome (a match, so that a new outcome does not compile without one).
pub fn outcome_code(o: Outcome) -> i32 {
    match o {
        Outcome::ToolSuccess => MCPT_OUTCOME_TOOL_SUCCESS,
        Outcome::ToolError => MCPT_OUTCOME_TOOL_ERROR,
        Outcome::JsonrpcError => MCPT_OUTCOME_JSONRPC_ERROR,
        Outcome::InputRequired => MCPT_OUTCOME_INPUT_REQUIRED,
        Outcome::TaskCreated => MCPT_OUTCOME_TASK_CREATED,
        Outcome::HttpError => MCPT_OUTCOME_HTTP_ERROR,
        Outcome::MissingResponse => MCPT_OUTCOME_MISSING_RESPONSE,
        Outcome::StreamIncomplete => MCPT_OUTCOME_STREAM_INCOMPLETE,
        Outcome::ConnectionError => MCPT_OUTCOME_CONNECTION_ERROR,
        Outcome::Timeout => MCPT_OUTCOME_TIMEOUT,
        Outcome::LimitExceeded => MCPT_OUTCOME_LIMIT_EXCEEDED,
        Outcome::UnexpectedContentType => MCPT_OUTCOME_UNEXPECTED_CONTENT_TYPE,
        Outcome::MalformedJson => MCPT_OUTCOME_MALFORMED_JSON,
        Outcome::InvalidEnvelope => MCPT_OUTCOME_INVALID_ENVELOPE,
        Outcome::InvalidToolResult => MCPT_OUTCOME_INVALID_TOOL_RESULT,
    }
}

/// NUL-terminated wire names by code - 1 (`as_str` of the core, checked by a test).
const LAYER_NAMES: [&CStr; 4] = [c"transport", c"protocol", c"interaction", c"application"];
const OUTCOME_NAMES: [&CStr; 15] = [
    c"TOOL_SUCCESS",
    c"TOOL_ERROR",
    c"JSONRPC_ERROR",
    c"INPUT_REQUIRED",
    c"TASK_CREATED",
    c"HTTP_ERROR",
    c"MISSING_RESPONSE",
    c"STREAM_INCOMPLETE",
    c"CONNECTION_ERROR",
    c"TIMEOUT",
    c"LIMIT_EXCEEDED",
    c"UNEXPECTED_CONTENT_TYPE",
    c"MALFORMED_JSON",
    c"INVALID_ENVELOPE",
    c"INVALID_TOOL_RESULT",
];

fn name_of(table: &[&'static CStr], code: i32) -> *const c_char {
    usize::try_from(code)
        .ok()
        .and_then(|c| c.checked_sub(1))
        .and_then(|i| table.get(i))
        .map_or(std::ptr::null(), |n| n.as_ptr())
}

/// The verdict's layer: an `MCPT_LAYER_*` code; 0 for NULL.
///
/// # Safety
/// `v` is NULL or a live verdict from this library.
#[no_mangle]
pub unsafe extern "C" fn mcpt_verdict_layer(v: *const McptVerdict) -> i32 {
    guard_value("mcpt_verdict_layer", 0, || {
        unsafe { McptVerdict::get(v) }.map_or(0, |v| layer_code(v.layer))
    })
}

/// The verdict's outcome: an `MCPT_OUTCOME_*` code; 0 for NULL.
///
/// # Safety
/// `v` is NULL or a live verdict from this library.
#[no_mangle]
pub unsafe extern "C" fn mcpt_verdict_outcome(v: *const McptVerdict) -> i32 {
    guard_value("mcpt_verdict_outcome", 0, || {
        unsafe { McptVerdict::get(v) }.map_or(0, |v| outcome_code(v.outcome))
    })
}

/// The HTTP status the verdict names (its `status` member); 0 when it has none (e.g. a
/// connection error) and for NULL.
///
/// # Safety
/// `v` is NULL or a live verdict from this library.
#[no_mangle]
pub unsafe extern "C" fn mcpt_verdict_status(v: *const McptVerdict) -> i32 {
    guard_value("mcpt_verdict_status", 0, || {
        unsafe { McptVerdict::get(v) }.map_or(0, |v| v.status.map_or(0, i32::from))
    })
}

/// The JSON-RPC error code (the verdict's `code` member): 1 and `*code` set when present, else
/// 0 and `*code` untouched. `code` may be NULL (then only presence is answered).
///
/// # Safety
/// `v` is NULL or a live verdict from this library; `code` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mcpt_verdict_jsonrpc_code(v: *const McptVerdict, code: *mut i64) -> i32 {
    guard_value("mcpt_verdict_jsonrpc_code", 0, || {
        match unsafe { McptVerdict::get(v) }.and_then(|v| v.code) {
            Some(c) => {
                if !code.is_null() {
                    // SAFETY: the caller's contract.
                    unsafe { code.write(c) };
                }
                1
            }
            None => 0,
        }
    })
}

/// The server's `Retry-After` in milliseconds (the verdict's `retryAfterMs`): 1 and `*ms` set
/// when present, else 0 and `*ms` untouched (also for NULL). `ms` may be NULL (then only
/// presence is answered). Unsigned, as the core keeps it: an absurd `Retry-After` saturates at
/// UINT64_MAX, the very number the JSON text and the CLI print (a signed getter would have to
/// say another one).
///
/// # Safety
/// `v` is NULL or a live verdict from this library; `ms` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mcpt_verdict_retry_after_ms(v: *const McptVerdict, ms: *mut u64) -> i32 {
    guard_value("mcpt_verdict_retry_after_ms", 0, || {
        match unsafe { McptVerdict::get(v) }.and_then(|v| v.retry_after_ms) {
            Some(wait) => {
                if !ms.is_null() {
                    // SAFETY: the caller's contract.
                    unsafe { ms.write(wait) };
                }
                1
            }
            None => 0,
        }
    })
}

/// The verdict as JSON text: exactly the bytes `mcp-triage classify --format json` prints for
/// the same response (without the newline), NUL-terminated. Owned by the verdict: valid until
/// `mcpt_verdict_free(v)`, do not free it. `*len` receives the length in bytes without the NUL
/// (`len` may be NULL). NULL for a NULL verdict (`*len` then 0).
///
/// # Safety
/// `v` is NULL or a live verdict from this library; `len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mcpt_verdict_json(
    v: *const McptVerdict,
    len: *mut usize,
) -> *const c_char {
    let json = guard_value("mcpt_verdict_json", None, || {
        // SAFETY: the caller's contract.
        let holder = unsafe { v.as_ref() }.filter(|h| h.magic == LIVE)?;
        let text = holder.json.get_or_init(|| {
            let s = holder.verdict.to_json();
            // control characters are escaped, so the text holds no NUL.
            CString::new(s).expect("JSON text has no NUL byte")
        });
        Some(text.as_c_str())
    });
    if !len.is_null() {
        // SAFETY: the caller's contract.
        unsafe { len.write(json.map_or(0, |j| j.count_bytes())) };
    }
    json.map_or(std::ptr::null(), CStr::as_ptr)
}

/// Frees a verdict and its JSON text. NULL is a no-op; after this call `v` and every pointer
/// obtained from it are invalid.
///
/// # Safety
/// `v` is NULL or a live verdict from this library, not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn mcpt_verdict_free(v: *mut McptVerdict) {
    guard_value("mcpt_verdict_free", (), || {
        if v.is_null() {
            return;
        }
        // SAFETY: the caller's contract: `v` came from `Box::into_raw` and is freed once.
        let mut b = unsafe { Box::from_raw(v) };
        b.magic = 0;
        drop(b);
    })
}

/// The wire name of a layer code ("transport", ...): a static NUL-terminated string, never
/// freed; NULL for an unknown code.
#[no_mangle]
pub extern "C" fn mcpt_layer_name(code: i32) -> *const c_char {
    name_of(&LAYER_NAMES, code)
}

/// The wire name of an outcome code ("TOOL_SUCCESS", ...): a static NUL-terminated string,
/// never freed; NULL for an unknown code.
#[no_mangle]
pub extern "C" fn mcpt_outcome_name(code: i32) -> *const c_char {
    name_of(&OUTCOME_NAMES, code)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header promises outcome codes in the order of `Outcome::ALL`, names as the core's.
    #[test]
    fn codes_and_names_follow_the_core() {
        for (i, o) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(outcome_code(o), i as i32 + 1, "{o}");
            let name = unsafe { CStr::from_ptr(mcpt_outcome_name(outcome_code(o))) };
            assert_eq!(name.to_str().unwrap(), o.as_str());
            let layer = unsafe { CStr::from_ptr(mcpt_layer_name(layer_code(o.layer()))) };
            assert_eq!(layer.to_str().unwrap(), o.layer().as_str());
        }
        let layers = [
            Layer::Transport,
            Layer::Protocol,
            Layer::Interaction,
            Layer::Application,
        ];
        for (i, l) in layers.into_iter().enumerate() {
            assert_eq!(layer_code(l), i as i32 + 1);
        }
        for bad in [0, -1, 16, i32::MIN, i32::MAX] {
            assert!(mcpt_outcome_name(bad).is_null(), "{bad}");
        }
        for bad in [0, 5, -3] {
            assert!(mcpt_layer_name(bad).is_null(), "{bad}");
        }
    }

    #[test]
    fn null_verdicts_answer_the_documented_defaults() {
        let null = std::ptr::null();
        let mut len = 99usize;
        let mut code = 7i64;
        let mut wait = 9u64;
        unsafe {
            assert_eq!(mcpt_verdict_layer(null), 0);
            assert_eq!(mcpt_verdict_outcome(null), 0);
            assert_eq!(mcpt_verdict_status(null), 0);
            assert_eq!(mcpt_verdict_jsonrpc_code(null, &mut code), 0);
            assert_eq!(mcpt_verdict_retry_after_ms(null, &mut wait), 0);
            assert!(mcpt_verdict_json(null, &mut len).is_null());
            mcpt_verdict_free(std::ptr::null_mut());
        }
        assert_eq!((len, code, wait), (0, 7, 9));
    }

    /// A 429 whose `Retry-After` overflows: the core saturates at `u64::MAX` (the CLI prints
    /// 18446744073709551615); the getter and the JSON text must say the same number.
    fn huge_retry_after() -> *mut McptVerdict {
        let (name, value) = ("retry-after", "99999999999999999999");
        let h = crate::McptHeader {
            name: name.as_ptr(),
            name_len: name.len(),
            value: value.as_ptr(),
            value_len: value.len(),
        };
        let mut v = std::ptr::null_mut();
        let rc = unsafe {
            crate::mcpt_classify(429, &h, 1, std::ptr::null(), 0, std::ptr::null(), &mut v)
        };
        assert_eq!(rc, crate::MCPT_OK);
        v
    }

    fn json_retry_after(v: *const McptVerdict) -> u64 {
        let text = unsafe { CStr::from_ptr(mcpt_verdict_json(v, std::ptr::null_mut())) };
        let json: serde_json::Value = serde_json::from_slice(text.to_bytes()).unwrap();
        json["retryAfterMs"]
            .as_u64()
            .expect("retryAfterMs is an unsigned integer")
    }

    #[test]
    fn saturated_retry_after_is_one_number_in_the_getter_and_the_json() {
        let v = huge_retry_after();
        let from_json = json_retry_after(v);
        let mut got = 0u64;
        let present = unsafe { mcpt_verdict_retry_after_ms(v, &mut got) };
        let present_without_out = unsafe { mcpt_verdict_retry_after_ms(v, std::ptr::null_mut()) };
        unsafe { mcpt_verdict_free(v) };
        assert_eq!(
            from_json,
            u64::MAX,
            "the core's saturated value, as the CLI prints it"
        );
        assert_eq!((present, present_without_out, got), (1, 1, from_json));
    }
}
