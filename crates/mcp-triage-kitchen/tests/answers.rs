//! The journal's `answer` (what the client was given, read by the core classifier), the
//! notes of faults that happen while a stream goes out, and honoured idempotency keys
//! (issue 21: `judge` holds a client's claims and resends against these).

mod common;

use common::*;
use serde_json::{json, Value};

fn calls(k: &mcp_triage_kitchen::KitchenHandle, tool: &str) -> Vec<Value> {
    k.kitchen()
        .journal()
        .into_iter()
        .filter(|e| e["tool"] == tool)
        .collect()
}

fn run(id: i64) -> Value {
    call_msg(
        id,
        "run_configured_test_scenario",
        json!({ "message": "hi" }),
    )
}

#[tokio::test]
async fn a_cut_stream_is_journaled_with_its_fault_and_a_resumption_with_the_result() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/sse.cut_mid_event/mcp?cutAfterBytes=30";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(a, p, Some(&sid), &run(2)).await.unwrap();
    assert!(r.body_error.is_some());
    let call = calls(&k, "run_configured_test_scenario").remove(0);
    assert_eq!(call["answer"]["outcome"], "STREAM_INCOMPLETE", "{call}");
    assert!(
        call["injected"]
            .as_str()
            .unwrap_or("")
            .contains("connection cut mid-response"),
        "the fault is named although it happened after the head went out: {call}"
    );
    let g = resume(a, p, &sid, "1-0").await;
    assert_eq!(g.rpc()["id"], 2);
    let get = k.kitchen().journal().pop().unwrap();
    assert_eq!(get["httpMethod"], "GET");
    assert_eq!(get["answer"]["outcome"], "TOOL_SUCCESS", "{get}");

    // 2026-07-28: not resumable; the cut is noted and the answer is incomplete.
    let r = modern(
        a,
        p,
        7,
        "tools/call",
        json!({"name": "run_configured_test_scenario"}),
    )
    .await
    .unwrap();
    assert!(r.body_error.is_some());
    let call = calls(&k, "run_configured_test_scenario").pop().unwrap();
    assert_eq!(call["answer"]["outcome"], "STREAM_INCOMPLETE", "{call}");
    assert!(
        call["injected"].as_str().unwrap_or("").contains("cut"),
        "{call}"
    );
    k.shutdown().await;
}

#[tokio::test]
async fn a_jsonrpc_error_and_a_tool_error_are_named_and_answered() {
    let k = kitchen().await;
    let a = k.local_addr();
    let r = modern(
        a,
        "/s/errors.jsonrpc_error/mcp",
        1,
        "tools/call",
        json!({"name": "run_configured_test_scenario"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    let e = calls(&k, "run_configured_test_scenario").pop().unwrap();
    assert_eq!(
        e["injected"],
        "JSON-RPC error -32602 (status 200, application/json)"
    );
    assert_eq!(e["answer"]["outcome"], "JSONRPC_ERROR");
    assert_eq!(e["answer"]["code"], -32602);
    modern(
        a,
        "/s/errors.tool_error/mcp",
        2,
        "tools/call",
        json!({"name": "run_configured_test_scenario"}),
    )
    .await
    .unwrap();
    let e = calls(&k, "run_configured_test_scenario").pop().unwrap();
    assert_eq!(e["answer"]["outcome"], "TOOL_ERROR", "{e}");
    assert!(
        e["answer"]["detail"]
            .as_str()
            .is_some_and(|m| m.contains("the tool reported an error")),
        "{e}"
    );
    // Not a call: no answer.
    modern(a, "/s/baseline/mcp", 3, "tools/list", json!({}))
        .await
        .unwrap();
    assert_eq!(k.kitchen().journal().pop().unwrap()["answer"], Value::Null);
    k.shutdown().await;
}

/// `chaos.mix` with every call cut after execution, faults on tools/call only.
fn cut_calls(keys: &str, tag: &str) -> String {
    format!(
        "/s/chaos.mix/mcp?seed=5&rates={}&methods={}&idempotencyKeys={keys}&instance={tag}",
        mcp_triage_wire::percent::encode(r#"{"sse_cut":1.0}"#),
        mcp_triage_wire::percent::encode(r#"["tools/call"]"#),
    )
}

fn keyed_increment() -> Value {
    json!({"name": "increment_counter", "arguments": {"by": 1}, "idempotencyKey": "op-1"})
}

#[tokio::test]
async fn an_honoured_key_runs_the_tool_once_and_answers_the_repeat() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = cut_calls("honour", "keys");
    let listed = modern(a, &p, 1, "tools/list", json!({})).await.unwrap();
    assert!(
        listed.rpc()["result"]["tools"].is_array(),
        "methods: only calls are hit"
    );
    let first = modern(a, &p, 2, "tools/call", keyed_increment())
        .await
        .unwrap();
    assert!(first.sse_messages().is_empty(), "the first answer is lost");
    let again = modern(a, &p, 3, "tools/call", keyed_increment())
        .await
        .unwrap();
    assert_eq!(again.rpc()["id"], 3);
    assert!(
        again.rpc()["result"]["content"].is_array(),
        "{}",
        again.text()
    );
    let seen = calls(&k, "increment_counter");
    assert_eq!(
        (seen[0]["executed"].clone(), seen[0]["deduplicated"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(
        (seen[1]["executed"].clone(), seen[1]["deduplicated"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(seen[1]["answer"]["outcome"], "TOOL_SUCCESS");
    // Other arguments under the same key are refused.
    let mut other = keyed_increment();
    other["arguments"]["by"] = json!(2);
    let r = modern(a, &p, 4, "tools/call", other).await.unwrap();
    assert_eq!(r.rpc()["error"]["code"], -32602, "{}", r.text());
    let disc = modern(a, &p, 5, "server/discover", json!({}))
        .await
        .unwrap();
    assert_eq!(
        disc.rpc()["result"]["capabilities"]["tools"]["idempotency"],
        json!({}),
        "advertised"
    );
    k.shutdown().await;
}

/// Issue 41: keys of 200 KB filled the store (1.31 GB RSS). A key over the longest the kitchen
/// keeps is refused with -32602 before the tool runs; one at the limit is honoured.
#[tokio::test]
async fn an_honoured_key_over_the_limit_is_refused_before_the_tool_runs() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = cut_calls("honour", "longkeys");
    let max = mcp_triage_kitchen::idempotency::MAX_KEY_BYTES;
    let mut long = keyed_increment();
    long["idempotencyKey"] = json!("k".repeat(max + 1));
    let r = modern(a, &p, 1, "tools/call", long).await.unwrap();
    assert_eq!(r.rpc()["error"]["code"], -32602, "{}", r.text());
    let message = r.rpc()["error"]["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(message.contains(&format!("{} bytes", max + 1)), "{message}");
    let mut at_limit = keyed_increment();
    at_limit["idempotencyKey"] = json!("k".repeat(max));
    for id in [2, 3] {
        modern(a, &p, id, "tools/call", at_limit.clone())
            .await
            .unwrap();
    }
    let seen = calls(&k, "increment_counter");
    let ran: Vec<Value> = seen.iter().map(|e| e["executed"].clone()).collect();
    assert_eq!(ran, [json!(false), json!(true), json!(false)], "{seen:?}");
    assert_eq!(seen[2]["deduplicated"], true);
    k.shutdown().await;
}

#[tokio::test]
async fn an_ignored_key_runs_the_tool_every_time() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = cut_calls("ignore", "nokeys");
    for id in 1..=2 {
        modern(a, &p, id, "tools/call", keyed_increment())
            .await
            .unwrap();
    }
    let seen = calls(&k, "increment_counter");
    assert!(
        seen.iter()
            .all(|e| e["executed"] == true && e["deduplicated"].is_null()),
        "{seen:?}"
    );
    let disc = modern(a, &p, 5, "server/discover", json!({}))
        .await
        .unwrap();
    assert!(disc.rpc()["result"]["capabilities"]["tools"]["idempotency"].is_null());
    k.shutdown().await;
}

/// Issue 25 item 4: a task is followed in the journal by its id: the creating call's answer
/// names it, and each `tasks/*` request carries it, with the task's state as the answer.
#[tokio::test]
async fn a_task_is_journaled_by_its_id() {
    let k = kitchen().await;
    let a = k.local_addr();
    let mut meta = meta_as(default_client());
    meta["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
        json!({ "io.modelcontextprotocol/tasks": {} });
    let params = json!({"name": "failing_job", "arguments": {}, "_meta": meta.clone()});
    let r = modern(a, "/mcp", 1, "tools/call", params).await.unwrap();
    let task = r.rpc()["result"]["taskId"].as_str().unwrap().to_string();
    let created = calls(&k, "failing_job").pop().unwrap();
    assert_eq!(created["answer"]["outcome"], "TASK_CREATED", "{created}");
    assert_eq!(created["answer"]["taskId"], task.as_str());
    let mut last = Value::Null;
    for id in 2..40 {
        let get = json!({"taskId": task, "_meta": meta.clone()});
        modern(a, "/mcp", id, "tasks/get", get).await.unwrap();
        last = k.kitchen().journal().pop().unwrap();
        assert_eq!(last["taskId"], task.as_str());
        if last["answer"]["outcome"] != "TASK_CREATED" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        last["answer"]["outcome"], "TOOL_ERROR",
        "the task's end: {last}"
    );
    k.shutdown().await;
}

/// A client that gives up on a slow call (its own timeout) still leaves the call in the
/// journal: the request's future is dropped, and the entry is written then, with no status.
/// (Seen in the judge: an agent framework's "tools/call timed out" was graded as a client that
/// never called.)
#[tokio::test]
async fn a_call_the_client_gave_up_on_is_journaled() {
    let k = kitchen().await;
    let a = k.local_addr();
    let slow = json!({"name": "slow_compute", "arguments": {"seconds": 3}});
    let gave_up = tokio::time::timeout(
        std::time::Duration::from_millis(300),
        modern(a, "/mcp", 1, "tools/call", slow),
    )
    .await;
    assert!(gave_up.is_err(), "the call outlasts the client's patience");
    let mut found = None;
    for _ in 0..40 {
        found = calls(&k, "slow_compute").pop();
        if found.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let e = found.expect("journaled when the client went away");
    assert_eq!(e["status"], Value::Null, "{e}");
    assert_eq!(e["scenario"], "baseline");
    assert!(
        e["injected"]
            .as_str()
            .unwrap_or("")
            .contains("closed the connection before the answer"),
        "{e}"
    );
    k.shutdown().await;
}
