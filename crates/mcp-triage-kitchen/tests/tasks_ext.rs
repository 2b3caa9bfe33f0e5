//! The 2026 tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the default
//! endpoint: its fixture tools, `tasks/get`, `tasks/update`, `tasks/cancel`, the error codes,
//! status transitions, TTL expiry and input inside a task. The conformance suite's `tasks-*`
//! scenarios check the same surface from outside (`interop/conformance-server.sh
//! --requirements 2026-07-28`); these tests pin the kitchen's own choices too (TTL knob,
//! expiry message, ignored answers).

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const P: &str = "/mcp";

/// `_meta` declaring the tasks extension (and elicitation).
fn ext_meta() -> Value {
    let mut m = meta();
    m["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
        json!({ "io.modelcontextprotocol/tasks": {} });
    m
}

async fn call(a: SocketAddr, id: i64, tool: &str, args: Value, ext: bool) -> Resp {
    let mut params = json!({ "name": tool, "arguments": args });
    if ext {
        params["_meta"] = ext_meta();
    }
    modern(a, P, id, "tools/call", params).await.unwrap()
}

/// A tasks method with the extension declared.
async fn task_rpc(a: SocketAddr, id: i64, method: &str, mut params: Value) -> Resp {
    params["_meta"] = ext_meta();
    modern(a, P, id, method, params).await.unwrap()
}

async fn get(a: SocketAddr, id: i64, task: &str) -> Value {
    let r = task_rpc(a, id, "tasks/get", json!({ "taskId": task })).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["result"].clone()
}

/// Create a task with `tool` and return its id (asserting the flat `CreateTaskResult`).
async fn create(a: SocketAddr, id: i64, tool: &str, args: Value) -> String {
    let r = call(a, id, tool, args, true).await;
    let res = r.json()["result"].clone();
    assert_eq!(res["resultType"], "task", "{}", r.text());
    for absent in [
        "task",
        "result",
        "error",
        "inputRequests",
        "ttl",
        "pollInterval",
    ] {
        assert!(res.get(absent).is_none(), "no {absent}: {res}");
    }
    assert!(res["ttlMs"].as_u64().is_some_and(|t| t > 0), "{res}");
    assert!(
        res["pollIntervalMs"].as_u64().is_some_and(|t| t > 0),
        "{res}"
    );
    assert!(res["createdAt"].as_str().unwrap().ends_with('Z'));
    res["taskId"].as_str().unwrap().to_string()
}

/// Poll until the task leaves `from` (or 5 s pass) and return the task.
async fn wait_past(a: SocketAddr, task: &str, from: &[&str]) -> Value {
    let t0 = Instant::now();
    loop {
        let t = get(a, 900, task).await;
        if !from.contains(&t["status"].as_str().unwrap_or("")) || t0.elapsed().as_secs() > 5 {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn discover_advertises_the_extension_and_lists_the_fixtures() {
    let k = kitchen().await;
    let a = k.local_addr();
    let d = modern(a, P, 1, "server/discover", json!({})).await.unwrap();
    let caps = d.json()["result"]["capabilities"].clone();
    assert_eq!(
        caps["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    assert!(caps.get("tasks").is_none(), "no v1 tasks slot: {caps}");
    let list = modern(a, P, 2, "tools/list", json!({}))
        .await
        .unwrap()
        .json();
    let tools = list["result"]["tools"].as_array().unwrap().clone();
    let support = |n: &str| {
        let t = tools
            .iter()
            .find(|t| t["name"] == n)
            .unwrap_or_else(|| panic!("{n} listed"));
        t["execution"]["taskSupport"].clone()
    };
    assert_eq!(support("greet"), Value::Null);
    assert_eq!(support("slow_compute"), "optional");
    for n in [
        "failing_job",
        "protocol_error_job",
        "confirm_delete",
        "multi_input",
        "test_tool_with_task",
    ] {
        assert_eq!(support(n), "required", "{n}");
    }
    k.shutdown().await;
}

#[tokio::test]
async fn unknown_task_ids_are_invalid_params_and_the_methods_need_the_extension() {
    let k = kitchen().await;
    let a = k.local_addr();
    for (i, (m, extra)) in [
        ("tasks/get", json!({})),
        ("tasks/update", json!({ "inputResponses": {} })),
        ("tasks/cancel", json!({})),
    ]
    .into_iter()
    .enumerate()
    {
        let mut params = extra.clone();
        params["taskId"] = json!("no-such-task");
        let r = task_rpc(a, i as i64, m, params.clone()).await;
        assert_eq!(
            (r.status, r.json()["error"]["code"].clone()),
            (200, json!(-32602)),
            "{m}: {}",
            r.text()
        );
        // Without the extension in the request's clientCapabilities: -32021, naming it.
        let r = modern(a, P, 10 + i as i64, m, params).await.unwrap();
        assert_eq!(r.status, 400, "{m}");
        let e = r.json()["error"].clone();
        assert_eq!(e["code"], -32021, "{m}: {e}");
        assert_eq!(
            e["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
            json!({})
        );
    }
    // The v1 methods are gone in 2026.
    for m in ["tasks/result", "tasks/list"] {
        let r = task_rpc(a, 20, m, json!({ "taskId": "x" })).await;
        assert_eq!(r.json()["error"]["code"], -32601, "{m}");
    }
    k.shutdown().await;
}

#[tokio::test]
async fn the_routing_header_must_name_the_task() {
    let k = kitchen().await;
    let a = k.local_addr();
    let id = create(a, 1, "slow_compute", json!({ "seconds": 30 })).await;
    let body = json!({ "jsonrpc": "2.0", "id": 2, "method": "tasks/get",
        "params": { "taskId": id, "_meta": ext_meta() } })
    .to_string();
    let base = [
        ACCEPT,
        CT,
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tasks/get"),
    ];
    let mut wrong = base.to_vec();
    wrong.push(("mcp-name", "another-task"));
    for h in [base.to_vec(), wrong] {
        let r = send(a, "POST", P, &h, Some(&body)).await.unwrap();
        assert_eq!(
            (r.status, r.json()["error"]["code"].clone()),
            (400, json!(-32020)),
            "{}",
            r.text()
        );
    }
    k.shutdown().await;
}

#[tokio::test]
async fn task_only_tools_need_the_extension_and_optional_ones_run_synchronously() {
    let k = kitchen().await;
    let a = k.local_addr();
    let r = call(a, 1, "failing_job", json!({}), false).await;
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, json!(-32021)),
        "{}",
        r.text()
    );
    let r = call(
        a,
        2,
        "slow_compute",
        json!({ "seconds": 0, "label": "sync" }),
        false,
    )
    .await;
    let res = r.json()["result"].clone();
    assert_eq!(res["resultType"], "complete", "{res}");
    assert!(res.get("taskId").is_none());
    assert!(res["content"][0]["text"].as_str().unwrap().contains("sync"));
    // greet never becomes a task, even with the extension and a legacy `task` hint.
    let mut params =
        json!({ "name": "greet", "arguments": { "name": "World" }, "task": { "ttl": 1000 } });
    params["_meta"] = ext_meta();
    let r = modern(a, P, 3, "tools/call", params).await.unwrap();
    assert_eq!(r.json()["result"]["resultType"], "complete");
    assert_eq!(r.json()["result"]["content"][0]["text"], "Hello, World!");
    k.shutdown().await;
}

#[tokio::test]
async fn status_transitions_working_completed_failed_and_tool_errors() {
    let k = kitchen().await;
    let a = k.local_addr();
    let id = create(
        a,
        1,
        "slow_compute",
        json!({ "seconds": 0.3, "label": "t" }),
    )
    .await;
    // Durable create: an immediate tasks/get resolves, and a working task inlines nothing.
    let t = get(a, 2, &id).await;
    assert_eq!(
        (t["taskId"].as_str(), t["status"].as_str()),
        (Some(id.as_str()), Some("working"))
    );
    assert_eq!(t["resultType"], "complete");
    assert!(t.get("result").is_none() && t.get("error").is_none());
    let t = wait_past(a, &id, &["working"]).await;
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(t["result"]["isError"], false);
    assert!(t["result"]["_meta"]
        .get("io.modelcontextprotocol/related-task")
        .is_none());
    assert!(t["lastUpdatedAt"].as_str() >= t["createdAt"].as_str());

    // A tool error is a completed task with isError, not a failed one.
    let id = create(a, 3, "failing_job", json!({})).await;
    let t = wait_past(a, &id, &["working"]).await;
    assert_eq!(
        (t["status"].as_str(), t["result"]["isError"].as_bool()),
        (Some("completed"), Some(true)),
        "{t}"
    );

    // A JSON-RPC error during execution: failed, the error inlined, no result.
    let id = create(a, 4, "protocol_error_job", json!({})).await;
    let t = wait_past(a, &id, &["working"]).await;
    assert_eq!(t["status"], "failed", "{t}");
    assert_eq!(t["error"]["code"], -32603);
    assert!(t["error"]["message"].is_string() && t.get("result").is_none());
    assert!(t["statusMessage"].is_string());
    k.shutdown().await;
}

#[tokio::test]
async fn cancel_acks_are_empty_and_idempotent_and_the_task_ends_cancelled() {
    let k = kitchen().await;
    let a = k.local_addr();
    let id = create(a, 1, "slow_compute", json!({ "seconds": 60 })).await;
    for n in 2..4 {
        // First on a working task, then on the (now terminal) cancelled one: the same ack.
        let r = task_rpc(a, n, "tasks/cancel", json!({ "taskId": id })).await;
        let ack = r.json()["result"].clone();
        assert_eq!(ack["resultType"], "complete", "{}", r.text());
        for absent in ["taskId", "status", "result", "error", "inputRequests"] {
            assert!(ack.get(absent).is_none(), "ack without {absent}: {ack}");
        }
        assert_eq!(get(a, 10 + n, &id).await["status"], "cancelled");
    }
    // A completed task stays completed when cancelled afterwards.
    let id = create(a, 5, "slow_compute", json!({ "seconds": 0 })).await;
    assert_eq!(get(a, 6, &id).await["status"], "completed");
    let r = task_rpc(a, 7, "tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(r.json()["result"]["resultType"], "complete");
    assert_eq!(get(a, 8, &id).await["status"], "completed");
    k.shutdown().await;
}

#[tokio::test]
async fn a_task_expires_after_its_ttl() {
    let k = kitchen().await;
    let a = k.local_addr();
    let r = call(
        a,
        1,
        "slow_compute",
        json!({ "seconds": 0, "ttlMs": 300 }),
        true,
    )
    .await;
    assert_eq!(r.json()["result"]["ttlMs"], 300, "{}", r.text());
    let id = r.json()["result"]["taskId"].as_str().unwrap().to_string();
    assert_eq!(get(a, 2, &id).await["status"], "completed");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let r = task_rpc(a, 3, "tasks/get", json!({ "taskId": id })).await;
    let e = r.json()["error"].clone();
    assert_eq!(e["code"], -32602, "{}", r.text());
    assert!(e["message"].as_str().unwrap().contains("expired"), "{e}");
    // Discarded: the id is unknown from now on, for every method.
    let r = task_rpc(a, 4, "tasks/cancel", json!({ "taskId": id })).await;
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("unknown"));
    k.shutdown().await;
}

#[tokio::test]
async fn input_inside_a_task_goes_through_tasks_update() {
    let k = kitchen().await;
    let a = k.local_addr();
    let id = create(a, 1, "multi_input", json!({})).await;
    let t = wait_past(a, &id, &["working"]).await;
    assert_eq!(t["status"], "input_required", "{t}");
    let keys: Vec<String> = t["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys.len(), 2, "{t}");
    assert!(t["inputRequests"][&keys[0]]["method"] == "elicitation/create");
    let update = |n: i64, responses: Value| {
        task_rpc(
            a,
            n,
            "tasks/update",
            json!({ "taskId": id, "inputResponses": responses }),
        )
    };
    // An answer to a key that was never issued is acknowledged and ignored.
    let r = update(2, json!({ "bogus": { "action": "accept", "content": {} } })).await;
    assert_eq!(r.json()["result"]["resultType"], "complete", "{}", r.text());
    assert_eq!(
        get(a, 3, &id).await["inputRequests"]
            .as_object()
            .unwrap()
            .len(),
        2
    );
    // A partial answer: still input_required, only the other key left.
    let answer = json!({ "action": "accept", "content": { "name": "Ada", "confirm": true } });
    update(4, json!({ "name": answer })).await;
    let t = get(a, 5, &id).await;
    assert_eq!(t["status"], "input_required");
    assert_eq!(
        t["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        vec!["confirm"]
    );
    // Answering the same key again changes nothing; the last answer completes the task.
    update(
        6,
        json!({ "name": { "action": "accept", "content": { "name": "Eve" } } }),
    )
    .await;
    update(7, json!({ "confirm": answer })).await;
    let t = wait_past(a, &id, &["working", "input_required"]).await;
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(
        t["result"]["content"][0]["text"],
        "name=Ada, confirmed=true"
    );

    // confirm_delete: a declined elicitation still completes, with the verdict.
    let id = create(a, 8, "confirm_delete", json!({ "filename": "a.txt" })).await;
    let t = wait_past(a, &id, &["working"]).await;
    let key = t["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    task_rpc(
        a,
        9,
        "tasks/update",
        json!({ "taskId": id, "inputResponses": { key: { "action": "decline" } } }),
    )
    .await;
    let t = wait_past(a, &id, &["working", "input_required"]).await;
    assert!(
        t["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Kept a.txt"),
        "{t}"
    );
    // A task waiting for input can be cancelled.
    let id = create(a, 10, "confirm_delete", json!({})).await;
    wait_past(a, &id, &["working"]).await;
    task_rpc(a, 11, "tasks/cancel", json!({ "taskId": id })).await;
    let t = get(a, 12, &id).await;
    assert_eq!(t["status"], "cancelled");
    assert!(t.get("inputRequests").is_none());
    k.shutdown().await;
}

#[tokio::test]
async fn an_mrtr_round_comes_before_the_task() {
    let k = kitchen().await;
    let a = k.local_addr();
    let r = call(a, 1, "test_tool_with_task", json!({}), true).await;
    let round1 = r.json()["result"].clone();
    assert_eq!(round1["resultType"], "input_required", "{round1}");
    assert!(round1.get("taskId").is_none());
    let mut params = json!({ "name": "test_tool_with_task", "arguments": {},
        "inputResponses": { "user_name": { "action": "accept", "content": { "name": "Alice" } } },
        "requestState": round1["requestState"] });
    params["_meta"] = ext_meta();
    let r = modern(a, P, 2, "tools/call", params).await.unwrap();
    let res = r.json()["result"].clone();
    assert_eq!(res["resultType"], "task", "{res}");
    assert!(res.get("requestState").is_none() && res.get("inputRequests").is_none());
    let t = wait_past(a, res["taskId"].as_str().unwrap(), &["working"]).await;
    assert_eq!(t["result"]["content"][0]["text"], "Hello, Alice!");
    k.shutdown().await;
}

#[tokio::test]
async fn legacy_sessions_get_the_fixtures_synchronously() {
    let k = kitchen().await;
    let a = k.local_addr();
    let sid = legacy_session(a, P, json!({})).await;
    let r = post(
        a,
        P,
        Some(&sid),
        &call_msg(2, "greet", json!({ "name": "Bob" })),
    )
    .await
    .unwrap();
    assert_eq!(r.json()["result"]["content"][0]["text"], "Hello, Bob!");
    let r = post(
        a,
        P,
        Some(&sid),
        &call_msg(3, "slow_compute", json!({ "seconds": 0.05 })),
    )
    .await
    .unwrap();
    assert_eq!(r.json()["result"]["isError"], false, "{}", r.text());
    // Issue 45 defect 3: 2025-11-25's execution.taskSupport means a task-augmented call of
    // that revision, which the fixtures do not serve: a legacy list shows no taskSupport and
    // not the task-only tools, and a legacy call of one is an unknown tool (nothing ran).
    let r = post(a, P, Some(&sid), &call_msg(4, "failing_job", json!({})))
        .await
        .unwrap();
    assert_eq!(r.json()["error"]["code"], -32602, "{}", r.text());
    assert!(
        r.text().contains("Unknown tool: failing_job"),
        "{}",
        r.text()
    );
    let list = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/list" });
    let r = post(a, P, Some(&sid), &list).await.unwrap();
    let tools = r.json()["result"]["tools"].as_array().unwrap().clone();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(
        names.contains(&"slow_compute") && names.contains(&"greet"),
        "{names:?}"
    );
    assert!(!names.contains(&"failing_job"), "{names:?}");
    assert!(
        tools.iter().all(|t| t.get("execution").is_none()),
        "no 2025-11-25 taskSupport without 2025-11-25 tasks: {tools:?}"
    );
    k.shutdown().await;
}
