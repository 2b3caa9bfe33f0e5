//! JSON Schema 2020-12 through the CLI (issue 46, "Every conformance scenario"): a tool's
//! `inputSchema` reaches the user exactly as the server listed it (`list --format json`),
//! `call` checks arguments by its 2020-12 keywords (`$ref` into `$defs`, `allOf`/`anyOf`,
//! `if`/`then`/`else`, `additionalProperties`) and `conformance-client` echoes the schema it
//! holds, every keyword intact, as the suite's json-schema-2020-12-preservation asks.

use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .args(args)
        .env_remove("MCP_TRIAGE_BEARER")
        .env_remove("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .env_remove("MCP_CONFORMANCE_CONTEXT")
        .output()
        .expect("mcp-triage runs")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The kitchen's `json_schema_2020_12_tool` (the conformance suite's fixture: `$schema`,
/// `$defs` with an `$anchor`, a `$ref`, `allOf`/`anyOf`, `if`/`then`/`else`,
/// `additionalProperties: false`) as its catalogue defines it.
fn kitchen_fixture() -> Value {
    mcp_triage_kitchen::catalogue::static_tools()
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .expect("the kitchen lists json_schema_2020_12_tool")["inputSchema"]
        .clone()
}

#[test]
fn list_prints_the_schema_as_listed_and_call_checks_its_keywords() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let k = rt
        .block_on(mcp_triage_kitchen::start(
            "127.0.0.1:0".parse().unwrap(),
            mcp_triage_kitchen::KitchenOptions::default(),
        ))
        .unwrap();
    let url = format!("{}/s/baseline/mcp", k.base_url());
    let fixture = kitchen_fixture();
    for era in ["2026-07-28", "2025-11-25"] {
        let o = run(&["list", &url, "--protocol-version", era, "--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let doc: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
        let listed = doc["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "json_schema_2020_12_tool")
            .unwrap_or_else(|| panic!("{era}: the tool is listed: {doc}"));
        assert_eq!(listed["inputSchema"], fixture, "{era}: kept as listed");
    }

    let tool = "json_schema_2020_12_tool";
    // Valid: the conditional's `then` (a phone for contactMethod=phone), a `$ref`'d address.
    let ok = r#"{"contactMethod":"phone","phone":"1","address":{"city":"Oslo"}}"#;
    let o = run(&["call", &url, tool, "--args", ok]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Each keyword family refuses its own mistake before anything is sent (exit 7).
    for (args, at) in [
        (r#"{"contactMethod":"phone","email":"a@b"}"#, "at /phone:"),
        (r#"{"phone":"1","fax":"2"}"#, "at /fax: not allowed"),
        (r#"{"phone":"1","address":{"city":7}}"#, "at /address/city:"),
        (r#"{"name":"no way to reach"}"#, "at (root):"),
    ] {
        let o = run(&["call", &url, tool, "--args", args]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(7), "{args}: {}", text(&o));
        assert!(err.contains(at), "{args}: {at} in {err}");
    }
    rt.block_on(k.shutdown());
}

/// The echo server of json-schema-2020-12-preservation: lists the fixture tool and
/// `json_schema_echo` (at 2025-11-25 by `initialize`), keeps the `schema` argument of each
/// echo call.
async fn echo_server(
    State(echoed): State<Arc<Mutex<Vec<Value>>>>,
    Json(msg): Json<Value>,
) -> Response {
    let Some(id) = msg.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match msg["method"].as_str().unwrap_or("") {
        "initialize" => json!({ "protocolVersion": "2025-11-25", "capabilities": { "tools": {} },
            "serverInfo": { "name": "echo", "version": "0" } }),
        "tools/list" => json!({ "tools": [
            { "name": "json_schema_2020_12_tool", "inputSchema": kitchen_fixture() },
            { "name": "json_schema_echo", "inputSchema": { "type": "object",
                "properties": { "schema": { "type": "object" } }, "required": ["schema"] } }
        ] }),
        "tools/call" => {
            echoed
                .lock()
                .unwrap()
                .push(msg["params"]["arguments"]["schema"].clone());
            json!({ "content": [{ "type": "text", "text": "echoed" }] })
        }
        _ => json!({}),
    };
    Json(json!({ "jsonrpc": "2.0", "id": id, "result": result })).into_response()
}

#[test]
fn conformance_client_echoes_the_schema_it_holds() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let echoed = Arc::new(Mutex::new(Vec::new()));
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let app = Router::new()
        .route("/mcp", post(echo_server))
        .with_state(echoed.clone());
    let server = rt.spawn(async move { axum::serve(listener, app).await });
    let o = run(&[
        "conformance-client",
        &url,
        "--scenario",
        "json-schema-2020-12-preservation",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(*echoed.lock().unwrap(), [kitchen_fixture()], "{}", text(&o));
    server.abort();
}
