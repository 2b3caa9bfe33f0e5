//! `call` refuses a tool whose inputSchema breaks the 2026-07-28 `x-mcp-header` rules (exit 2,
//! naming the tool and the rule) unless `--allow-invalid-tool` is given. The server is a tiny
//! axum app on 127.0.0.1 that lists such a tool and counts the calls it gets, so the test can
//! tell a refusal from a call that happened. (An older server's x-mcp-header means nothing,
//! so at 2025-11-25 the call goes ahead.)

use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

/// Answers `tools/list` with one good and one bad tool, `tools/call` with a text result
/// (counted), `initialize` at 2025-11-25, any other request with `{}`, notifications with 202.
async fn mcp(State(calls): State<Arc<AtomicUsize>>, Json(msg): Json<Value>) -> Response {
    let Some(id) = msg.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match msg["method"].as_str().unwrap_or("") {
        "initialize" => json!({ "protocolVersion": "2025-11-25", "capabilities": { "tools": {} },
            "serverInfo": { "name": "bad-headers", "version": "0" } }),
        "tools/list" => json!({ "tools": [
            { "name": "good", "inputSchema": { "type": "object", "properties": {
                "region": { "type": "string", "x-mcp-header": "Region" } } } },
            { "name": "bad", "inputSchema": { "type": "object", "properties": {
                "amount": { "type": "number", "x-mcp-header": "Amount" } } } }
        ] }),
        "tools/call" => {
            calls.fetch_add(1, Ordering::SeqCst);
            json!({ "content": [{ "type": "text", "text": "ran" }] })
        }
        _ => json!({}),
    };
    Json(json!({ "jsonrpc": "2.0", "id": id, "result": result })).into_response()
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .args(args)
        .env_remove("MCP_TRIAGE_BEARER")
        .output()
        .expect("mcp-triage runs")
}

#[test]
fn call_refuses_a_tool_with_an_invalid_x_mcp_header() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let app = Router::new()
        .route("/mcp", post(mcp))
        .with_state(calls.clone());
    let server = rt.spawn(async move { axum::serve(listener, app).await });

    // Refused: exit 2, the tool and the broken rule named, nothing called.
    let o = run(&["call", &url, "bad", "--arg", "amount=1.5"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("\"bad\"") && err.contains("x-mcp-header"),
        "{err}"
    );
    assert!(
        err.contains("only string, integer and boolean can be headers"),
        "{err}"
    );
    assert!(err.contains("--allow-invalid-tool"), "{err}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // Called: a valid tool; the bad one with --allow-invalid-tool; the bad one at 2025-11-25,
    // where x-mcp-header means nothing. Each call reaches the server exactly once.
    let called: [&[&str]; 3] = [
        &["good", "--arg", "region=eu"],
        &["bad", "--arg", "amount=1.5", "--allow-invalid-tool"],
        &[
            "bad",
            "--arg",
            "amount=1.5",
            "--protocol-version",
            "2025-11-25",
        ],
    ];
    for (n, extra) in called.into_iter().enumerate() {
        let o = run(&[&["call", url.as_str()], extra].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {err}");
        assert_eq!(calls.load(Ordering::SeqCst), n + 1, "{extra:?}");
    }
    server.abort();
}
