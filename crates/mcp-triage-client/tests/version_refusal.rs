//! A 2026-07-28 server that refuses a `tools/call` with -32022 `UnsupportedProtocolVersion`
//! while listing 2026-07-28 as supported (a server mid-rollout): the request never ran, so the
//! retry policy resends it once, at once, with a new id, and records that as its decision; a
//! second refusal in the same call is not resent again.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use mcp_triage_client::{CallOptions, Client, ClientOptions, Target};
use mcp_triage_core::{Outcome, RetryOrigin};
use serde_json::{json, Value};

#[derive(Clone)]
struct Refusing {
    /// How many `tools/call` requests to refuse before answering.
    refusals: u32,
    calls: Arc<AtomicU32>,
}

async fn handle(State(s): State<Refusing>, body: Bytes) -> Response {
    let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id = msg["id"].clone();
    let json = |v: Value| ([("content-type", "application/json")], v.to_string()).into_response();
    match msg["method"].as_str() {
        Some("tools/call") => {
            let n = s.calls.fetch_add(1, Ordering::SeqCst);
            if n < s.refusals {
                return json(json!({ "jsonrpc": "2.0", "id": id, "error": {
                    "code": -32022, "message": "Unsupported protocol version",
                    "data": { "supported": ["2026-07-28"], "requested": "2026-07-28" } } }));
            }
            json(
                json!({ "jsonrpc": "2.0", "id": id, "result": { "resultType": "complete",
                "content": [{ "type": "text", "text": "ran" }] } }),
            )
        }
        _ => json(json!({ "jsonrpc": "2.0", "id": id, "result": { "resultType": "complete" } })),
    }
}

async fn serve(refusals: u32) -> (String, Arc<AtomicU32>) {
    let calls = Arc::new(AtomicU32::new(0));
    let state = Refusing {
        refusals,
        calls: calls.clone(),
    };
    let app = Router::new().route("/mcp", post(handle)).with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/mcp"), calls)
}

async fn client(url: &str) -> Client {
    let opts = ClientOptions {
        list_tools_first: false,
        ..ClientOptions::default()
    };
    Client::connect(Target::url(url).unwrap(), opts)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_refusal_naming_our_revision_is_resent_once_by_the_policy() {
    let (url, calls) = serve(1).await;
    let r = client(&url)
        .await
        .call_tool("hello", json!({}), CallOptions::default())
        .await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(r.attempts.len(), 2);
    assert_ne!(r.attempts[0].id, r.attempts[1].id, "a resend has a new id");
    let d = r.attempts[0].decision.as_ref().unwrap();
    assert_eq!((d.action.as_str(), d.delay_ms), ("resend", Some(0)));
    assert!(d.reason.contains("refused before it ran"), "{}", d.reason);
    // nothing ran, so it is no retry of a failed execution
    assert_eq!(r.retry_origin, RetryOrigin::None);
}

#[tokio::test]
async fn a_second_refusal_in_the_same_call_is_not_resent() {
    let (url, calls) = serve(u32::MAX).await;
    let r = client(&url)
        .await
        .call_tool("hello", json!({}), CallOptions::default())
        .await;
    assert_eq!(r.outcome, Outcome::JsonrpcError, "{r:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(r.attempts.len(), 2);
    let last = r.attempts[1].decision.as_ref().unwrap();
    assert_eq!(last.action, "give_up", "{}", last.reason);
}
