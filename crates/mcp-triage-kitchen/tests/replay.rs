//! `kitchen --replay`: hand-written capture files (tests/fixtures/capture, one per failure
//! kind, in the format of docs/capture-format.md) served back. Raw HTTP, so what is checked is
//! what goes on the wire: ids rewritten, chunks in order and not before their offsets, a cut
//! stream closed without the final chunk, the n-th request answered by the n-th line.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::*;
use mcp_triage_kitchen::replay::{start_replay, Capture, Replay, ReplayOptions};
use mcp_triage_kitchen::{KitchenHandle, KitchenOptions};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOOL: &str = "run_configured_test_scenario";

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/capture/{name}.jsonl"))
}

async fn replay(name: &str, speed: f64) -> KitchenHandle {
    serve(
        Capture::read(&fixture(name), 1 << 20).expect("fixture parses"),
        speed,
    )
    .await
}

async fn serve(capture: Capture, speed: f64) -> KitchenHandle {
    let replay = Replay::new(capture, ReplayOptions { speed }).unwrap();
    start_replay(
        "127.0.0.1:0".parse().unwrap(),
        KitchenOptions::default(),
        replay,
    )
    .await
    .expect("replay starts")
}

fn call(id: Value, extra: Value) -> Value {
    let mut params = json!({ "name": TOOL, "arguments": { "message": "from mcp-triage judge" }, "_meta": meta() });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })
}

const MODERN: [(&str, &str); 3] = [ACCEPT, CT, ("mcp-protocol-version", "2026-07-28")];

async fn post_modern(h: &KitchenHandle, msg: &Value) -> Resp {
    send(
        h.local_addr(),
        "POST",
        "/mcp",
        &MODERN,
        Some(&msg.to_string()),
    )
    .await
    .expect("answered")
}

/// Raw bytes of one response as they arrive, each read with its time since the request.
async fn raw_post(h: &KitchenHandle, msg: &Value) -> (Vec<(Duration, Vec<u8>)>, bool) {
    let body = msg.to_string();
    let mut s = tokio::net::TcpStream::connect(h.local_addr())
        .await
        .unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\naccept: application/json, text/event-stream\r\n\
         content-type: application/json\r\nmcp-protocol-version: 2026-07-28\r\ncontent-length: {}\r\n\r\n",
        h.local_addr(),
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body.as_bytes()).await.unwrap();
    let t0 = Instant::now();
    let mut reads = Vec::new();
    let mut buf = [0u8; 4096];
    let closed = loop {
        match tokio::time::timeout(STEP, s.read(&mut buf)).await {
            Err(_) => break false,
            Ok(Ok(0)) | Ok(Err(_)) => break true,
            Ok(Ok(n)) => reads.push((t0.elapsed(), buf[..n].to_vec())),
        }
    };
    (reads, closed)
}

fn when(reads: &[(Duration, Vec<u8>)], needle: &str) -> Duration {
    let mut seen = Vec::new();
    for (t, b) in reads {
        seen.extend_from_slice(b);
        if String::from_utf8_lossy(&seen).contains(needle) {
            return *t;
        }
    }
    panic!(
        "{needle:?} never arrived: {}",
        String::from_utf8_lossy(&seen)
    );
}

#[tokio::test]
async fn a_cut_stream_keeps_its_chunks_and_closes_without_the_final_chunk() {
    for speed in [1.0, 0.5] {
        let h = replay("sse_cut_before_response", speed).await;
        let (reads, closed) = raw_post(&h, &call(json!(41), json!({}))).await;
        assert!(
            closed,
            "the connection is closed, as the upstream closed it"
        );
        let all: Vec<u8> = reads.iter().flat_map(|(_, b)| b.clone()).collect();
        let text = String::from_utf8_lossy(&all);
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        assert!(text.contains("transfer-encoding: chunked"), "{text}");
        assert!(!text.ends_with("0\r\n\r\n"), "no final chunk: {text:?}");
        // Both events, in order; the second not before its captured offset (150 ms / speed).
        let (one, two) = (when(&reads, "step 1 of 2"), when(&reads, "step 2 of 2"));
        let at_least = Duration::from_secs_f64(0.150 / speed) - Duration::from_millis(10);
        assert!(two >= one + at_least, "speed {speed}: {one:?} then {two:?}");
        let journal = h.kitchen().journal();
        let served = journal
            .iter()
            .find(|e| e["method"] == "tools/call")
            .unwrap();
        assert_eq!(served["replay"]["seq"], 1);
        assert_eq!(served["replay"]["end"], "upstream_closed");
        assert_eq!(served["id"], 41);
        h.shutdown().await;
    }
}

#[tokio::test]
async fn the_nth_call_gets_the_nth_line_with_its_id_rewritten() {
    let h = replay("input_required", 1.0).await;
    let first = post_modern(&h, &call(json!("first"), json!({}))).await;
    let rpc = first.json();
    assert_eq!(rpc["id"], "first", "captured id 2 became the request's");
    assert_eq!(rpc["result"]["resultType"], "input_required");
    let state = rpc["result"]["requestState"].clone();
    let answer = json!({ "requestState": state,
        "inputResponses": { "elicitation": { "action": "accept", "content": { "reason": "ok" } } } });
    let second = post_modern(&h, &call(json!(1234567), answer.clone())).await;
    assert_eq!(
        second.json()["id"],
        1234567,
        "captured id 3 became the request's"
    );
    assert_eq!(second.json()["result"]["resultType"], "complete");
    // Content-Length recomputed for the longer id.
    assert_eq!(
        second.header("content-length").unwrap(),
        second.body.len().to_string()
    );
    // Past the last line: the last again, and the journal says so.
    let third = post_modern(&h, &call(json!(8), answer)).await;
    assert_eq!(third.json()["id"], 8);
    let calls: Vec<Value> = h
        .kitchen()
        .journal()
        .into_iter()
        .filter(|e| e["method"] == "tools/call")
        .collect();
    let served: Vec<(Value, Value)> = calls
        .iter()
        .map(|e| (e["replay"]["seq"].clone(), e["replay"]["pastEnd"].clone()))
        .collect();
    assert_eq!(
        served,
        vec![
            (json!(1), json!(false)),
            (json!(2), json!(false)),
            (json!(2), json!(true))
        ]
    );
    // POST /kitchen/reset starts the capture over (and empties the journal).
    let reset = send(h.local_addr(), "POST", "/kitchen/reset", &[], None)
        .await
        .unwrap();
    assert_eq!(reset.status, 200);
    let again = post_modern(&h, &call(json!(9), json!({}))).await;
    assert_eq!(again.json()["result"]["resultType"], "input_required");
    assert_eq!(h.kitchen().journal()[0]["replay"]["seq"], 1);
    // What judge grades: the MRTR round issued, and the retry's echo.
    assert_eq!(calls[0]["issued"]["requestState"], state);
    assert_eq!(
        calls[0]["issued"]["inputRequestKeys"],
        json!(["elicitation"])
    );
    assert_eq!(calls[1]["retry"]["requestState"], state);
    assert_eq!(calls[0]["era"], "modern");
    h.shutdown().await;
}

#[tokio::test]
async fn uncaptured_requests_get_the_kitchens_own_answers() {
    let h = replay("tool_error", 1.0).await;
    let list = post_modern(
        &h,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}}),
    )
    .await;
    assert_eq!(list.json()["result"]["tools"][0]["name"], TOOL);
    assert_eq!(list.json()["result"]["resultType"], "complete");
    let init = post(
        h.local_addr(),
        "/mcp",
        None,
        &initialize_msg(0, "2025-06-18", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(init.json()["result"]["protocolVersion"], "2025-06-18");
    let ping = post_modern(&h, &json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).await;
    assert_eq!(ping.json()["result"]["resultType"], "complete");
    let note = post(
        h.local_addr(),
        "/mcp",
        None,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await
    .unwrap();
    assert_eq!(note.status, 202);
    let other = post_modern(
        &h,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "resources/list"}),
    )
    .await;
    assert_eq!(other.json()["error"]["code"], -32601);
    assert!(other.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("resources/list"));
    // Another tool, or other arguments, is another key: not the captured line.
    let args = post_modern(
        &h,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": TOOL, "arguments": {"message": "other"}}}),
    )
    .await;
    assert_eq!(args.json()["error"]["code"], -32601);
    let tool_error = post_modern(&h, &call(json!(5), json!({}))).await;
    assert_eq!(tool_error.json()["result"]["isError"], true);
    assert_eq!(tool_error.json()["id"], 5);
    let journal = h.kitchen().journal();
    let unmatched: Vec<&Value> = journal
        .iter()
        .filter(|e| e["replay"]["unmatched"].is_string())
        .collect();
    assert_eq!(unmatched.len(), 6, "{journal:?}");
    assert!(unmatched[5]["replay"]["unmatched"]
        .as_str()
        .unwrap()
        .starts_with("tools/call run_configured_test_scenario sha256:"));
    h.shutdown().await;
}

#[tokio::test]
async fn a_503_keeps_its_status_headers_and_body() {
    let h = replay("http_503_retry_after", 1.0).await;
    let r = post_modern(&h, &call(json!(9), json!({}))).await;
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(r.text(), "Service Unavailable");
    assert_eq!(r.header("x-kitchen-scenario"), Some("replay"));
    h.shutdown().await;
}

#[tokio::test]
async fn no_response_drops_the_connection_or_sends_the_proxys_timeout() {
    let line = |seq: u64, status: u16, tool: &str| {
        json!({"capture": 1, "seq": seq, "method": "tools/call", "tool": tool,
               "argumentsHash": mcp_triage_kitchen::replay::capture_arguments_hash(None),
               "status": status, "body": "", "expectId": 1, "end": "no_response"})
        .to_string()
    };
    let text = format!("{}\n{}\n", line(1, 502, "dropped"), line(2, 504, "slow"));
    let h = serve(Capture::parse(text.as_bytes()).unwrap(), 1.0).await;
    let call = |tool: &str| json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": tool}});
    let (reads, closed) = raw_post(&h, &call("dropped")).await;
    assert!(closed && reads.is_empty(), "no response at all: {reads:?}");
    let slow = post_modern(&h, &call("slow")).await;
    assert_eq!(slow.status, 504);
    assert!(slow.body.is_empty());
    let journal = h.kitchen().journal();
    assert_eq!(journal[0]["status"], Value::Null, "{:?}", journal[0]);
    assert_eq!(journal[0]["replay"]["end"], "no_response");
    h.shutdown().await;
}

/// Issue 23 item 16: a malformed chunked request body gets a 400 from the replay server (its
/// own answer, naming the fault), not a 413 or a dropped connection, like the kitchen's.
#[tokio::test]
async fn a_malformed_chunked_body_gets_a_400_from_replay() {
    let h = replay("tool_error", 1.0).await;
    let a = h.local_addr();
    let text = post_broken_chunked_body(a).await;
    assert!(text.starts_with("HTTP/1.1 400"), "{text}");
    assert!(text.contains("Request body malformed"), "{text}");
    h.shutdown().await;
}
