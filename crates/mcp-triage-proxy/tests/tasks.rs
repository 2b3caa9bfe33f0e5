//! Tasks through the proxy (issue 25, item 5), in front of the in-process kitchen: the
//! `tasks/*` exchanges of a task link to the `tools/call` that created it, the task's end is
//! a `taskEnd` record naming that call with its final verdict, and the table of open tasks is
//! bounded in count and in time.

mod common;

use std::time::Duration;

use common::*;
use mcp_triage_proxy::record::RecordKind;
use mcp_triage_proxy::Record;
use serde_json::{json, Value};

/// `_meta` of a modern request from `proxy-test` declaring the tasks extension.
fn ext_meta() -> Value {
    json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "elicitation": {},
                "extensions": { "io.modelcontextprotocol/tasks": {} } },
            "io.modelcontextprotocol/clientInfo": { "name": "proxy-test", "version": "0" } })
}

async fn create(rig: &Rig, id: i64, tool: &str, args: Value) -> String {
    let p = json!({ "name": tool, "arguments": args, "_meta": ext_meta() });
    let r = modern(rig.via(), "/mcp", id, "tools/call", p)
        .await
        .unwrap();
    let res = r.rpc()["result"].clone();
    assert_eq!(res["resultType"], "task", "{}", r.text());
    res["taskId"].as_str().unwrap().to_string()
}

async fn task_rpc(rig: &Rig, id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = ext_meta();
    let r = modern(rig.via(), "/mcp", id, method, params).await.unwrap();
    r.rpc()
}

fn by_kind(records: &[Record], kind: RecordKind) -> Vec<&Record> {
    records.iter().filter(|r| r.kind == kind).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_exchanges_link_to_the_call_and_its_end_carries_the_verdict() {
    let rig = Rig::new().await;
    let task = create(&rig, 1, "confirm_delete", json!({ "filename": "x" })).await;
    let mut id = 10;
    let mut polls = 0;
    loop {
        id += 1;
        let t = task_rpc(&rig, id, "tasks/get", json!({ "taskId": task })).await;
        polls += 1;
        match t["result"]["status"].as_str().unwrap() {
            "completed" => break,
            "input_required" => {
                let answer = json!({ "confirm_delete": { "action": "accept", "content": { "confirm": true } } });
                id += 1;
                let ack = task_rpc(
                    &rig,
                    id,
                    "tasks/update",
                    json!({ "taskId": task, "inputResponses": answer }),
                )
                .await;
                assert!(ack.get("result").is_some(), "{ack}");
            }
            _ => {}
        }
        assert!(polls < 100, "the task never completed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let records = rig.finish().await;

    let created = by_id(&records, 1)[0];
    assert_eq!(created.outcome, "TASK_CREATED");
    assert_eq!(created.task_id.as_deref(), Some(task.as_str()));
    let tasks: Vec<&Record> = records
        .iter()
        .filter(|r| r.method.as_deref().is_some_and(|m| m.starts_with("tasks/")))
        .collect();
    assert_eq!(tasks.len(), polls + 1, "{tasks:#?}");
    for r in &tasks {
        assert_eq!(
            r.links_to.as_deref(),
            Some(created.record_id.as_str()),
            "{r:#?}"
        );
        assert_eq!(r.task_id.as_deref(), Some(task.as_str()));
    }
    let ends = by_kind(&records, RecordKind::TaskEnd);
    assert_eq!(ends.len(), 1, "{records:#?}");
    let end = ends[0];
    assert_eq!(end.links_to.as_deref(), Some(created.record_id.as_str()));
    assert_eq!(
        (end.outcome.as_str(), end.layer.map(|l| l.as_str())),
        ("TOOL_SUCCESS", Some("application"))
    );
    assert_eq!(end.method.as_deref(), Some("tools/call"));
    assert_eq!(end.task_polls, Some(polls as u32));
    let last_poll = tasks
        .iter()
        .rev()
        .find(|r| r.method.as_deref() == Some("tasks/get"))
        .unwrap();
    assert_eq!(
        end.via_record_id.as_deref(),
        Some(last_poll.record_id.as_str())
    );
    assert!(end.duration_ms >= created.duration_ms);
    // the fields as written
    let line = serde_json::to_value(end).unwrap();
    assert_eq!(line["kind"], "taskEnd");
    assert_eq!(line["linksTo"], json!(created.record_id));
    assert_eq!(line["taskId"], json!(task));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_ends_with_its_jsonrpc_error_on_the_call() {
    let rig = Rig::new().await;
    let task = create(&rig, 1, "protocol_error_job", json!({})).await;
    for id in 2..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let t = task_rpc(&rig, id, "tasks/get", json!({ "taskId": task })).await;
        if t["result"]["status"] == "failed" {
            break;
        }
    }
    let records = rig.finish().await;
    let end = by_kind(&records, RecordKind::TaskEnd)[0];
    assert_eq!(end.outcome, "JSONRPC_ERROR");
    assert_eq!(end.verdict.as_ref().unwrap().code, Some(-32603));
    assert_eq!(
        end.links_to.as_ref(),
        Some(&by_id(&records, 1)[0].record_id)
    );
}

/// Past `max_open_tasks` the least recently polled task leaves with a `TASK_UNFINISHED` end;
/// past `open_task_ttl` a task is no longer linked and is reported at the next creation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_open_task_table_is_bounded_in_count_and_time() {
    let rig = Rig::with(|o| {
        o.observe.max_open_tasks = 1;
        o.observe.open_task_ttl = Duration::from_millis(1500);
    })
    .await;
    let first = create(&rig, 1, "slow_compute", json!({ "seconds": 30 })).await;
    let second = create(&rig, 2, "slow_compute", json!({ "seconds": 30 })).await;
    task_rpc(&rig, 3, "tasks/get", json!({ "taskId": first })).await;
    task_rpc(&rig, 4, "tasks/get", json!({ "taskId": second })).await;
    tokio::time::sleep(Duration::from_millis(2000)).await;
    task_rpc(&rig, 5, "tasks/get", json!({ "taskId": second })).await;
    let third = create(&rig, 6, "slow_compute", json!({ "seconds": 30 })).await;
    for t in [&first, &second, &third] {
        task_rpc(&rig, 50, "tasks/cancel", json!({ "taskId": t })).await;
    }
    // the third is still open when the proxy stops: its end is written then
    let records = rig.finish().await;
    let (c1, c2) = (by_id(&records, 1)[0], by_id(&records, 2)[0]);
    // the first was let go when the second came: its poll is not linked
    assert!(by_id(&records, 3)[0].links_to.is_none());
    assert_eq!(by_id(&records, 4)[0].links_to.as_ref(), Some(&c2.record_id));
    // the second expired before poll 5
    assert!(by_id(&records, 5)[0].links_to.is_none());
    let ends = by_kind(&records, RecordKind::TaskEnd);
    assert_eq!(ends.len(), 3, "{ends:#?}");
    let c3 = by_id(&records, 6)[0];
    let stopped = ends
        .iter()
        .find(|e| e.links_to.as_ref() == Some(&c3.record_id))
        .unwrap();
    assert!(
        stopped
            .warnings
            .iter()
            .any(|w| w.detail.contains("the proxy stopped")),
        "{stopped:#?}"
    );
    let full = ends
        .iter()
        .find(|e| e.links_to.as_ref() == Some(&c1.record_id))
        .unwrap();
    let expired = ends
        .iter()
        .find(|e| e.links_to.as_ref() == Some(&c2.record_id))
        .unwrap();
    for (e, flag) in [(full, "--max-open-tasks"), (expired, "--open-task-ttl")] {
        assert_eq!(e.outcome, "TASK_UNFINISHED");
        assert!(
            e.warnings
                .iter()
                .any(|w| w.code == "TASK_UNFINISHED" && w.detail.contains(flag)),
            "{e:#?}"
        );
    }
    assert_eq!(expired.task_polls, Some(1));
}
