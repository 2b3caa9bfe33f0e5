//! Issue 41: query secrets (`?access_token=…`) reached the nginx modules' `$mcp_record`
//! verbatim while `mcp-triage proxy` redacts them. The line is written by `mcpt_record_write`
//! for both modules, with the redaction the proxy's records use (`mcp_triage_wire::redact`).

use std::ffi::CStr;
use std::ptr::{null, null_mut};

use mcp_triage_ffi::*;

#[test]
fn the_record_line_redacts_query_secrets() {
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#;
    let mut r = null_mut();
    assert_eq!(
        unsafe { mcpt_request_parse(body.as_ptr(), body.len(), &mut r) },
        1
    );
    let resp = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
    let ct = ("content-type", "application/json");
    let h = McptHeader {
        name: ct.0.as_ptr(),
        name_len: ct.0.len(),
        value: ct.1.as_ptr(),
        value_len: ct.1.len(),
    };
    let mut v = null_mut();
    let rc = unsafe { mcpt_classify(200, &h, 1, resp.as_ptr(), resp.len(), null(), &mut v) };
    assert_eq!(rc, MCPT_OK);
    let path = "/mcp?instance=a&access_token=SECRET-1&Client_Secret=SECRET-2";
    let f = McptRecordFields {
        record_id: b"r".as_ptr(),
        record_id_len: 1,
        start_unix_s: 1.0,
        duration_ms: 1.0,
        path: path.as_ptr(),
        path_len: path.len(),
        session_id: null(),
        session_id_len: 0,
        protocol_version: null(),
        protocol_version_len: 0,
        http_status: 200,
        request_bytes: body.len() as u64,
        response_bytes: resp.len() as u64,
        cancelled: 0,
    };
    let mut buf = vec![0u8; 4096];
    let mut len = 0;
    let rc = unsafe { mcpt_record_write(r, v, &f, buf.as_mut_ptr(), buf.len(), &mut len) };
    let err = unsafe { CStr::from_ptr(mcpt_last_error()) };
    assert_eq!(rc, MCPT_OK, "{err:?}");
    unsafe {
        mcpt_verdict_free(v);
        mcpt_request_free(r);
    }
    let line: serde_json::Value = serde_json::from_slice(&buf[..len]).unwrap();
    assert_eq!(
        line["path"],
        "/mcp?instance=a&access_token=REDACTED&Client_Secret=REDACTED"
    );
}
