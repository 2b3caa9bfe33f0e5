//! Bounded memory: a response larger than the configured limits ends in LIMIT_EXCEEDED naming
//! the limit, for a JSON body and for an endless SSE stream, without reading it all.

use axum::body::{Body, Bytes};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use mcp_triage_client::{CallOptions, Client, ClientOptions, Target, VersionChoice};
use mcp_triage_core::{Outcome, ProtocolVersion};
use serde_json::{json, Value};

async fn handle(body: Bytes) -> Response {
    let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id = msg["id"].clone();
    match msg["params"]["name"].as_str() {
        Some("big_json") => {
            let text = "x".repeat(4 << 20);
            let v = json!({ "jsonrpc": "2.0", "id": id, "result": { "content": [{ "type": "text", "text": text }] } });
            ([("content-type", "application/json")], v.to_string()).into_response()
        }
        _ => {
            // An SSE stream of notifications that never ends.
            let note = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"spam\"}}\n\n";
            let stream = futures_util::stream::repeat_with(move || {
                Ok::<_, std::io::Error>(Bytes::from(note))
            });
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap()
        }
    }
}

#[tokio::test]
async fn over_limit_responses_are_a_verdict() {
    let app = Router::new().route("/mcp", post(handle));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let mut opts = ClientOptions {
        protocol: VersionChoice::Fixed(ProtocolVersion::V2026_07_28),
        list_tools_first: false,
        ..ClientOptions::default()
    };
    opts.limits.max_body_bytes = 1 << 20;
    opts.limits.max_stream_bytes = 256 << 10;
    let c = Client::connect(Target::url(&format!("http://{addr}/mcp")).unwrap(), opts)
        .await
        .unwrap();
    let r = c
        .call_tool("big_json", json!({}), CallOptions::default())
        .await;
    assert_eq!(r.outcome, Outcome::LimitExceeded, "{r:?}");
    assert_eq!(
        r.attempts[0].verdict.limit.as_ref().unwrap().name,
        "maxBodyBytes"
    );
    let r = c
        .call_tool("endless_sse", json!({}), CallOptions::default())
        .await;
    assert_eq!(r.outcome, Outcome::LimitExceeded, "{r:?}");
    assert_eq!(
        r.attempts[0].verdict.limit.as_ref().unwrap().name,
        "maxStreamBytes"
    );
}
