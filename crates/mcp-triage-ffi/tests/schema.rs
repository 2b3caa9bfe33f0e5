//! The C ABI's JSON against the documented schemas, over every golden vector of the core (the
//! ones `tests/c_abi.rs` runs through C), calling the exported functions in process:
//!
//! - `mcpt_verdict_json` is a verdict: it must follow `docs/verdict.schema.json`;
//! - `mcpt_record_write`'s line is a gateway's log line, the shape of a `mcp-triage proxy --log`
//!   record (which has no schema file of its own); its `verdict` member must follow
//!   `docs/verdict.schema.json`, and every member it shares with a call record must follow
//!   that member's definition in `docs/record.schema.json` (see [`record_members`] for the two
//!   members a log line carries in its own form).

use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::ptr::{null, null_mut};
use std::time::SystemTime;

use jsonschema::Validator;
use mcp_triage_core::exchange::Exchange;
use mcp_triage_core::RequestId;
use mcp_triage_ffi::*;
use serde_json::{json, Value};

const CRATE: &str = env!("CARGO_MANIFEST_DIR");

fn schema(name: &str) -> Value {
    let path = Path::new(CRATE).join("../../docs").join(name);
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `docs/record.schema.json` as it applies to a log line: the members a line shares with a
/// call record keep their definitions; the members only a call record has are not required,
/// and the line's own members (`kind`, `path`, `verdict`, ...) are allowed. Two shared names
/// are written in the log line's own form, as the proxy writes them too: `durationMs` is
/// milliseconds with three decimals (a call record rounds to an integer), and `protocolVersion`
/// is the request's `MCP-Protocol-Version` header as sent (this test sends valid revisions, so
/// the record's pattern still holds and stays checked).
fn record_members() -> Validator {
    let mut s = schema("record.schema.json");
    s["required"] = json!([]);
    s["additionalProperties"] = json!(true);
    s["properties"]["durationMs"] = json!({ "type": "number", "minimum": 0 });
    jsonschema::validator_for(&s).expect("record.schema.json compiles")
}

fn errors(v: &Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

fn golden_files() -> Vec<PathBuf> {
    let dir = Path::new(CRATE).join("../mcp-triage-core/tests/golden");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "golden files missing in {}",
        dir.display()
    );
    files
}

/// A verdict from the C ABI for one golden exchange; the request passed through
/// `mcpt_request_parse` so that the expected id is set as a gateway sets it.
struct Exchanged {
    request: *mut McptRequest,
    verdict: *mut McptVerdict,
}

impl Drop for Exchanged {
    fn drop(&mut self) {
        unsafe {
            mcpt_verdict_free(self.verdict);
            mcpt_request_free(self.request);
        }
    }
}

fn last_error() -> String {
    unsafe { CStr::from_ptr(mcpt_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn exchange(x: &Exchange, raw: &Value) -> Exchanged {
    let id = match &x.expected_id {
        RequestId::Number(n) => json!(n),
        RequestId::String(s) => json!(s),
    };
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": "golden", "arguments": {}}})
    .to_string();
    let mut request = null_mut();
    let found = unsafe { mcpt_request_parse(body.as_ptr(), body.len(), &mut request) };
    assert_eq!(found, 1, "{body}: {}", last_error());
    let version = x
        .protocol_version
        .map(|v| CString::new(v.as_str()).unwrap());
    let schema = raw
        .get("outputSchema")
        .map(|s| CString::new(s.to_string()).unwrap());
    let now = x.now.unwrap_or(SystemTime::UNIX_EPOCH);
    let mut o = McptCallOptions {
        expect_id_kind: MCPT_ID_NUMBER,
        expect_id_number: 0,
        expect_id_string: null(),
        expect_id_string_len: 0,
        protocol_version: version.as_ref().map_or(null(), |v| v.as_ptr()),
        now_unix_ms: now
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64,
        limits_json: null(),
        output_schema_json: schema.as_ref().map_or(null(), |s| s.as_ptr()),
        request_method: null(),
    };
    let rc = unsafe { mcpt_request_expect_id(request, &mut o) };
    assert_eq!(rc, MCPT_OK, "{}", last_error());
    let headers: Vec<McptHeader> = x
        .head
        .headers
        .iter()
        .map(|(n, v)| McptHeader {
            name: n.as_ptr(),
            name_len: n.len(),
            value: v.as_ptr(),
            value_len: v.len(),
        })
        .collect();
    let mut verdict = null_mut();
    let rc = unsafe {
        mcpt_classify(
            x.head.status,
            headers.as_ptr(),
            headers.len(),
            x.body.as_ptr(),
            x.body.len(),
            &o,
            &mut verdict,
        )
    };
    assert_eq!(rc, MCPT_OK, "{}", last_error());
    Exchanged { request, verdict }
}

fn verdict_json(v: *const McptVerdict) -> Value {
    let text = unsafe { CStr::from_ptr(mcpt_verdict_json(v, null_mut())) };
    serde_json::from_slice(text.to_bytes()).expect("the verdict JSON parses")
}

fn record_line(e: &Exchanged, protocol_version: Option<&str>) -> Value {
    let (rid, path, sid) = ("rid-1", "/mcp?x=1", "session-1");
    let fields = McptRecordFields {
        record_id: rid.as_ptr(),
        record_id_len: rid.len(),
        start_unix_s: 1_796_330_122.174,
        duration_ms: 12.5,
        path: path.as_ptr(),
        path_len: path.len(),
        session_id: sid.as_ptr(),
        session_id_len: sid.len(),
        protocol_version: protocol_version.map_or(null(), str::as_ptr),
        protocol_version_len: protocol_version.map_or(0, str::len),
        http_status: 200,
        request_bytes: 100,
        response_bytes: 200,
        cancelled: 0,
    };
    let mut buf = vec![0u8; 1 << 16];
    let mut len = 0usize;
    let rc = unsafe {
        mcpt_record_write(
            e.request,
            e.verdict,
            &fields,
            buf.as_mut_ptr(),
            buf.len(),
            &mut len,
        )
    };
    assert_eq!(rc, MCPT_OK, "{}", last_error());
    serde_json::from_slice(&buf[..len]).expect("the record line parses")
}

#[test]
fn verdicts_and_record_lines_follow_the_schemas() {
    let verdicts = jsonschema::validator_for(&schema("verdict.schema.json"))
        .expect("verdict.schema.json compiles");
    let records = record_members();
    let mut n = 0;
    for file in golden_files() {
        let text = std::fs::read(&file).unwrap();
        for line in text.split(|&b| b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let raw: Value = serde_json::from_slice(line).unwrap();
            if raw.get("method").is_some() {
                // answers to tasks/get: the C ABI does not take the request kind (issue 25)
                continue;
            }
            let x = Exchange::parse(line).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let name = format!("{}:{}", file.display(), raw["name"]);
            let e = exchange(&x, &raw);
            let v = verdict_json(e.verdict);
            let errs = errors(&verdicts, &v);
            assert!(errs.is_empty(), "{name}: verdict JSON {errs:?}\n{v}");
            let version = x.protocol_version.map(|p| p.as_str());
            let r = record_line(&e, version);
            let errs = errors(&records, &r);
            assert!(errs.is_empty(), "{name}: record line {errs:?}\n{r}");
            let errs = errors(&verdicts, &r["verdict"]);
            assert!(errs.is_empty(), "{name}: the line's verdict {errs:?}\n{r}");
            assert_eq!(r["verdict"], v, "{name}: the line carries the verdict JSON");
            n += 1;
        }
    }
    assert!(n >= 100, "only {n} golden cases");
    eprintln!("{n} golden cases: verdict JSON and record line follow the schemas");
}

/// The schema test is not vacuous: a line whose shared member breaks its definition, and a
/// verdict with a member the schema does not know, are caught.
#[test]
fn the_schemas_catch_a_bad_line_and_a_bad_verdict() {
    let verdicts = jsonschema::validator_for(&schema("verdict.schema.json")).unwrap();
    let records = record_members();
    let bad_line = json!({"recordId": "", "outcome": "NOT_AN_OUTCOME", "httpStatuses": [42]});
    assert_eq!(errors(&records, &bad_line).len(), 3, "{bad_line}");
    let bad_verdict = json!({"layer": "transport", "outcome": "TIMEOUT", "retryAfterMs": -1});
    assert_eq!(errors(&verdicts, &bad_verdict).len(), 1);
}
