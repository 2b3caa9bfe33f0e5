//! The 2024-11-05 HTTP+SSE transport through the spec's fallback probe: the modern POST and
//! the initialize POST get 405, the GET stream names the message endpoint, responses arrive
//! on the stream; a server request (roots/list) on the stream is answered by POST.

use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use mcp_triage_client::{CallOptions, Client, ClientOptions, Target};
use mcp_triage_core::Outcome;
use serde_json::{json, Value};
use tokio::sync::mpsc;

#[derive(Clone, Default)]
struct S {
    tx: Arc<Mutex<Option<mpsc::UnboundedSender<String>>>>,
    roots_answer: Arc<Mutex<Option<Value>>>,
}

fn event(v: &Value) -> String {
    format!("event: message\ndata: {v}\n\n")
}

async fn stream(State(s): State<S>) -> Response {
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    tx.send("event: endpoint\ndata: /messages?sessionId=7\n\n".to_string())
        .unwrap();
    *s.tx.lock().unwrap() = Some(tx);
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|m| (Ok::<_, std::io::Error>(Bytes::from(m)), rx))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(body))
        .unwrap()
}

async fn message(State(s): State<S>, body: Bytes) -> Response {
    let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let send = |v: Value| {
        if let Some(tx) = s.tx.lock().unwrap().as_ref() {
            let _ = tx.send(event(&v));
        }
    };
    let id = msg["id"].clone();
    match msg["method"].as_str() {
        Some("initialize") => send(json!({ "jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2024-11-05", "capabilities": { "tools": {} }, "serverInfo": { "name": "old-sse", "version": "0" } } })),
        Some("tools/list") => send(json!({ "jsonrpc": "2.0", "id": id, "result": { "tools": [
            { "name": "roots", "inputSchema": { "type": "object" } } ] } })),
        Some("tools/call") => {
            // Ask the client for its roots first, answer the call afterwards.
            send(json!({ "jsonrpc": "2.0", "id": "srv-1", "method": "roots/list" }));
            let s2 = s.clone();
            tokio::spawn(async move {
                for _ in 0..100 {
                    let got = s2.roots_answer.lock().unwrap().clone();
                    if let Some(a) = got {
                        let text = a["result"]["roots"][0]["uri"]
                            .as_str()
                            .unwrap_or("none")
                            .to_string();
                        if let Some(tx) = s2.tx.lock().unwrap().as_ref() {
                            let _ = tx
                                .send(event(&json!({ "jsonrpc": "2.0", "id": id, "result": {
                                "content": [{ "type": "text", "text": text }] } })));
                        }
                        return;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            });
        }
        _ => {
            if msg["id"] == "srv-1" {
                *s.roots_answer.lock().unwrap() = Some(msg.clone());
            }
        }
    }
    StatusCode::ACCEPTED.into_response()
}

#[tokio::test]
async fn auto_finds_http_sse_and_answers_server_requests() {
    let app = Router::new()
        .route(
            "/sse",
            get(stream).post(|| async { StatusCode::METHOD_NOT_ALLOWED }),
        )
        .route("/messages", post(message))
        .with_state(S::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let opts = ClientOptions {
        roots: vec!["/srv/data".into()],
        ..ClientOptions::default()
    };
    let c = Client::connect(Target::url(&format!("http://{addr}/sse")).unwrap(), opts)
        .await
        .unwrap();
    let r = c
        .call_tool("roots", json!({}), CallOptions::default())
        .await;
    assert_eq!(
        r.outcome,
        Outcome::ToolSuccess,
        "{}",
        serde_json::to_string(&r).unwrap()
    );
    assert_eq!(r.protocol_version, "2024-11-05");
    assert_eq!(r.transport, "http+sse");
    assert_eq!(r.message.as_deref(), Some("file:///srv/data"));
    assert_eq!(r.server_info.as_ref().unwrap().name, "old-sse");
}
