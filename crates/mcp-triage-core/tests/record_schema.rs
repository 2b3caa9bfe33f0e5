//! Records serialised by `CallRecord` validate against `docs/record.schema.json`, and each
//! attempt's verdict against `docs/verdict.schema.json`; a record missing a required field or
//! with a wrong enum value does not.

use std::path::Path;

use mcp_triage_core::{
    AttemptRecord, CallRecord, Decision, DecisionAction, JsonRpcInfo, Layer, Outcome, RetryOrigin,
    ServerInfo, StreamStats, Verdict,
};
use serde_json::{json, Value};

fn load(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name);
    let schema: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{name} compiles: {e}"))
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc).map(|e| e.to_string()).collect()
}

fn sample_records() -> Vec<CallRecord> {
    let minimal = CallRecord::new("mcp-triage@0.1.0", "stdio", "tools/list");

    let mut full = CallRecord::new("mcp-triage@0.1.0", "streamable-http", "tools/call");
    full.record_id = Some("r-1".into());
    full.protocol_version = "2025-11-25".into();
    full.target = Some("http://127.0.0.1:1234/mcp".into());
    full.scenario = Some("chaos.mix".into());
    full.tool = Some("read_counter".into());
    full.post_count = 2;
    full.http_statuses = vec![503, 200];
    full.jsonrpc = JsonRpcInfo {
        id: json!(2),
        error_code: None,
    };
    full.result_type = Some("complete".into());
    full.layer = Layer::Application;
    full.outcome = Outcome::ToolSuccess;
    full.retry_origin = RetryOrigin::Sdk;
    full.rounds = 0;
    full.duration_ms = 215;
    full.session_id = Some("abc".into());
    full.server_info = Some(ServerInfo {
        name: "kitchen".into(),
        version: Some("0.1.0".into()),
    });
    full.message = Some("7".into());
    full.arguments_hash = "0".repeat(64);
    full.arguments_size = 2;
    full.arguments = Some(json!({}));
    full.result = Some(json!({"content": [{"type": "text", "text": "7"}]}));
    let mut first = Verdict::new(Outcome::HttpError);
    first.status = Some(503);
    first.retry_after_ms = Some(0);
    full.attempts.push(AttemptRecord {
        id: json!(1),
        kind: "call".into(),
        retry_of: None,
        status: Some(503),
        content_type: Some("application/json".into()),
        stream: None,
        verdict: first,
        duration_ms: 3,
        decision: Some(Decision {
            action: DecisionAction::Resend,
            delay_ms: Some(120),
            reason: "503 on a read-only tool: safe to resend".into(),
        }),
    });
    let mut second = Verdict::new(Outcome::ToolSuccess);
    second.result_type = Some("complete".into());
    second.stream = Some(StreamStats {
        events: 1,
        terminal: true,
        ..StreamStats::default()
    });
    full.attempts.push(AttemptRecord {
        id: json!(2),
        kind: "call".into(),
        retry_of: Some(0),
        status: Some(200),
        content_type: Some("text/event-stream".into()),
        stream: second.stream.clone(),
        verdict: second,
        duration_ms: 4,
        decision: Some(Decision {
            action: DecisionAction::Done,
            delay_ms: None,
            reason: "a final tool result".into(),
        }),
    });
    full.warn("UNSAFE_RETRY", "a proxy saw this call resent after 503");

    let mut manual = CallRecord::new("mcp-triage@0.1.0", "proxy", "tools/call");
    manual.retry_origin = RetryOrigin::Manual;
    manual.retry_of = Some("r-1".into());
    manual.stderr_tail = vec!["server: panicked".into()];
    vec![minimal, full, manual]
}

#[test]
fn serialised_records_validate() {
    let record_schema = load("record.schema.json");
    let verdict_schema = load("verdict.schema.json");
    for r in sample_records() {
        let doc = serde_json::to_value(&r).unwrap();
        assert_eq!(errors(&record_schema, &doc), Vec::<String>::new(), "{doc}");
        for a in doc["attempts"].as_array().unwrap() {
            assert_eq!(errors(&verdict_schema, &a["verdict"]), Vec::<String>::new());
        }
        let back: CallRecord = serde_json::from_value(doc).unwrap();
        assert_eq!(back, r);
    }
}

#[test]
fn schema_rejects_broken_records() {
    let schema = load("record.schema.json");
    let good = serde_json::to_value(&sample_records()[1]).unwrap();
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("outcome");
    assert!(!errors(&schema, &missing).is_empty());
    let mut bad_origin = good.clone();
    bad_origin["retryOrigin"] = json!("robot");
    assert!(!errors(&schema, &bad_origin).is_empty());
    let mut bad_action = good.clone();
    bad_action["attempts"][0]["decision"]["action"] = json!("explode");
    assert!(!errors(&schema, &bad_action).is_empty());
    let mut extra = good;
    extra["password"] = json!("x");
    assert!(!errors(&schema, &extra).is_empty());
}
