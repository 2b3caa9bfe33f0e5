//! The invariants of the C ABI's entry points on arbitrary input, called as C calls them:
//! `mcpt_classify` on a body whole equals `mcpt_classifier_new` + `feed` in pieces + `finish`;
//! the verdict's JSON is JSON and its getters (outcome, retry-after) agree with it; `mcpt_request_parse` takes the
//! tool name serde_json reads; `mcpt_record_write` writes a JSON line, asking for more room
//! when the buffer is short. Shared by the fuzz target `ffi_exchange` and the corpus test of
//! `mcp-triage-ffi` (`tests/fuzz_corpus.rs`), which includes this file by path.
//!
//! Input: two bytes of status (big-endian), one byte choosing the content type, one byte of
//! knobs (bits 0-5: the piece size less one; bits 6-7: no `Retry-After`, `2`, an overflowing
//! number, an HTTP date), then the body.

use std::ffi::CStr;

use mcp_triage_ffi::*;
use serde_json::Value;

const CONTENT_TYPES: [&str; 4] = [
    "application/json",
    "text/event-stream",
    "text/plain",
    "application/json; charset=utf-8",
];

/// Panics when an invariant of the C ABI breaks on `data`.
pub fn check(data: &[u8]) {
    let [hi, lo, ct, knobs, body @ ..] = data else {
        return;
    };
    let status = u16::from_be_bytes([*hi, *lo]);
    let ct = CONTENT_TYPES[usize::from(*ct) % CONTENT_TYPES.len()];
    let header = |name: &'static str, value: &'static str| McptHeader {
        name: name.as_ptr(),
        name_len: name.len(),
        value: value.as_ptr(),
        value_len: value.len(),
    };
    let retry_after = match knobs >> 6 {
        0 => None,
        1 => Some("2"),
        2 => Some("99999999999999999999"),
        _ => Some("Wed, 21 Oct 2015 07:28:00 GMT"),
    };
    let mut headers = vec![header("content-type", ct)];
    headers.extend(retry_after.map(|v| header("retry-after", v)));
    let step = usize::from(*knobs % 64) + 1;
    let Some(whole) = classify(status, &headers, body) else {
        return;
    };
    let pieces = classify_in_pieces(status, &headers, body, step);
    // SAFETY: both are live verdicts from this library, freed below.
    let (a, b) = unsafe { (json(whole), json(pieces)) };
    assert_eq!(a, b, "whole and in pieces of {step}");
    let v: Value = serde_json::from_str(&a).expect("the verdict JSON is JSON");
    // SAFETY: a live verdict.
    let outcome = unsafe { CStr::from_ptr(mcpt_outcome_name(mcpt_verdict_outcome(whole))) };
    assert_eq!(v["outcome"].as_str(), outcome.to_str().ok());
    let mut wait = 0u64;
    // SAFETY: a live verdict and a writable out.
    let present = unsafe { mcpt_verdict_retry_after_ms(whole, &mut wait) };
    let json_wait = v["retryAfterMs"].as_u64();
    assert_eq!(
        (present == 1).then_some(wait),
        json_wait,
        "the getter says the JSON's number"
    );
    request_and_record(body, whole);
    // SAFETY: live verdicts, not used again.
    unsafe {
        mcpt_verdict_free(whole);
        mcpt_verdict_free(pieces);
    }
}

fn classify(status: u16, headers: &[McptHeader], body: &[u8]) -> Option<*mut McptVerdict> {
    let mut v = std::ptr::null_mut();
    // SAFETY: valid headers, a body of its length, default options, a writable out.
    let code = unsafe {
        mcpt_classify(
            status,
            headers.as_ptr(),
            headers.len(),
            body.as_ptr(),
            body.len(),
            std::ptr::null(),
            &mut v,
        )
    };
    if code != MCPT_OK {
        assert!(v.is_null(), "no verdict with an error");
        return None;
    }
    Some(v)
}

fn classify_in_pieces(
    status: u16,
    headers: &[McptHeader],
    body: &[u8],
    step: usize,
) -> *mut McptVerdict {
    let mut c = std::ptr::null_mut();
    // SAFETY: as in `classify`; the classifier is freed below.
    unsafe {
        assert_eq!(
            mcpt_classifier_new(
                status,
                headers.as_ptr(),
                headers.len(),
                std::ptr::null(),
                &mut c
            ),
            MCPT_OK
        );
        for piece in body.chunks(step) {
            assert_eq!(
                mcpt_classifier_feed(c, piece.as_ptr(), piece.len()),
                MCPT_OK
            );
        }
        let mut v = std::ptr::null_mut();
        assert_eq!(mcpt_classifier_finish(c, &mut v), MCPT_OK);
        assert_eq!(mcpt_classifier_feed(c, b"x".as_ptr(), 1), MCPT_ERR_FINISHED);
        mcpt_classifier_free(c);
        v
    }
}

/// # Safety
/// `v` is a live verdict.
unsafe fn json(v: *const McptVerdict) -> String {
    let mut len = 0;
    let p = unsafe { mcpt_verdict_json(v, &mut len) };
    let text = unsafe { CStr::from_ptr(p) }
        .to_str()
        .expect("UTF-8")
        .to_string();
    assert_eq!(text.len(), len);
    text
}

/// The body read as a request: the tool name serde_json reads; a record line that is JSON.
fn request_and_record(body: &[u8], v: *const McptVerdict) {
    let mut r = std::ptr::null_mut();
    // SAFETY: a body of its length and a writable out; the request is freed below.
    let found = unsafe { mcpt_request_parse(body.as_ptr(), body.len(), &mut r) };
    assert!(found == 0 || found == 1, "{found}");
    if found == 0 {
        assert!(r.is_null());
        return;
    }
    let mut len = 0;
    // SAFETY: a live request.
    let tool = unsafe { mcpt_request_tool(r, &mut len) };
    let tool = (!tool.is_null()).then(|| {
        // SAFETY: `len` bytes owned by the live request.
        String::from_utf8(unsafe { std::slice::from_raw_parts(tool, len) }.to_vec()).expect("UTF-8")
    });
    if let Ok(req) = serde_json::from_slice::<Value>(body) {
        let name = req["params"]["name"].as_str().map(str::to_string);
        assert_eq!(tool, name, "the tool name serde_json reads");
    }
    let fields = McptRecordFields {
        record_id: b"r-1".as_ptr(),
        record_id_len: 3,
        start_unix_s: 1.5,
        duration_ms: 2.0,
        path: b"/mcp?access_token=x".as_ptr(),
        path_len: 19,
        session_id: std::ptr::null(),
        session_id_len: 0,
        protocol_version: std::ptr::null(),
        protocol_version_len: 0,
        http_status: 200,
        request_bytes: body.len() as u64,
        response_bytes: 0,
        cancelled: 0,
    };
    let mut small = [0u8; 8];
    let mut need = 0;
    // SAFETY: live request and verdict, valid fields, a buffer of its capacity.
    let code =
        unsafe { mcpt_record_write(r, v, &fields, small.as_mut_ptr(), small.len(), &mut need) };
    assert_eq!(
        code, MCPT_ERR_INVALID_ARGUMENT,
        "8 bytes are too few for a record"
    );
    let mut buf = vec![0u8; need];
    let mut written = 0;
    // SAFETY: as above.
    let code =
        unsafe { mcpt_record_write(r, v, &fields, buf.as_mut_ptr(), buf.len(), &mut written) };
    assert_eq!((code, written), (MCPT_OK, need));
    let line: Value = serde_json::from_slice(&buf).expect("the record line is JSON");
    assert_eq!(line["tool"].as_str().map(str::to_string), tool);
    // SAFETY: a live request, not used again.
    unsafe { mcpt_request_free(r) };
}
