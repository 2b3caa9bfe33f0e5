//! Era detection against a legacy-only server: `auto` sends the call in 2026-07-28 form, gets a
//! 400 without a modern JSON-RPC error, falls back to `initialize` and negotiates down to what
//! the server offers (its answered version, or the `supported` list of a -32602 error).

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use mcp_triage_client::{CallOptions, Client, ClientOptions, Target};
use mcp_triage_core::Outcome;
use serde_json::{json, Value};

#[derive(Clone)]
struct Legacy {
    /// `Some(list)`: initialize with another version gets -32602 naming these.
    only: Option<Vec<&'static str>>,
    seen_versions: Arc<Mutex<Vec<String>>>,
}

async fn handle(State(s): State<Legacy>, headers: HeaderMap, body: Bytes) -> Response {
    let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id = msg["id"].clone();
    let json = |v: Value| ([("content-type", "application/json")], v.to_string()).into_response();
    if headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        == Some("2026-07-28")
    {
        let e = json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32000, "message": "Bad Request: Unsupported protocol version" } });
        return (
            StatusCode::BAD_REQUEST,
            [("content-type", "application/json")],
            e.to_string(),
        )
            .into_response();
    }
    match msg["method"].as_str() {
        Some("initialize") => {
            let asked = msg["params"]["protocolVersion"]
                .as_str()
                .unwrap_or("")
                .to_string();
            s.seen_versions.lock().unwrap().push(asked.clone());
            if let Some(only) = &s.only {
                if !only.contains(&asked.as_str()) {
                    return json(
                        json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32602,
                        "message": "Unsupported protocol version", "data": { "supported": only, "requested": asked } } }),
                    );
                }
                return json(
                    json!({ "jsonrpc": "2.0", "id": id, "result": { "protocolVersion": asked,
                    "capabilities": { "tools": {} }, "serverInfo": { "name": "legacy-only", "version": "1" } } }),
                );
            }
            json(
                json!({ "jsonrpc": "2.0", "id": id, "result": { "protocolVersion": "2025-06-18",
                "capabilities": { "tools": {} }, "serverInfo": { "name": "legacy-only", "version": "1" } } }),
            )
        }
        Some("tools/list") => json(json!({ "jsonrpc": "2.0", "id": id, "result": { "tools": [
            { "name": "hello", "inputSchema": { "type": "object" } } ] } })),
        Some("tools/call") => json(json!({ "jsonrpc": "2.0", "id": id, "result": {
            "content": [{ "type": "text", "text": "hello" }] } })),
        _ => StatusCode::ACCEPTED.into_response(),
    }
}

async fn serve(state: Legacy) -> String {
    let app = Router::new().route("/mcp", post(handle)).with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/mcp")
}

#[tokio::test]
async fn auto_falls_back_and_negotiates_down() {
    // The server answers initialize with 2025-06-18.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let url = serve(Legacy {
        only: None,
        seen_versions: seen.clone(),
    })
    .await;
    let opts = ClientOptions {
        list_tools_first: false,
        ..ClientOptions::default()
    };
    let c = Client::connect(Target::url(&url).unwrap(), opts)
        .await
        .unwrap();
    let r = c
        .call_tool("hello", json!({}), CallOptions::default())
        .await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:?}");
    assert_eq!(r.protocol_version, "2025-06-18");
    assert_eq!(r.attempts.len(), 2);
    assert_eq!(r.attempts[0].status, Some(400));
    let d = r.attempts[0].decision.as_ref().unwrap();
    assert_eq!(d.action, "reinitialize");
    assert!(
        d.reason.contains("falling back to initialize"),
        "{}",
        d.reason
    );
    assert_eq!(*seen.lock().unwrap(), vec!["2025-11-25".to_string()]);

    // The server only speaks 2025-03-26 and says so in -32602 data.supported.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let url = serve(Legacy {
        only: Some(vec!["2025-03-26"]),
        seen_versions: seen.clone(),
    })
    .await;
    let c = Client::connect(Target::url(&url).unwrap(), ClientOptions::default())
        .await
        .unwrap();
    let tools = c.list_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(c.protocol_version().await, "2025-03-26");
    assert_eq!(
        *seen.lock().unwrap(),
        vec!["2025-11-25".to_string(), "2025-03-26".to_string()]
    );
}
