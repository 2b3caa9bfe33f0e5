//! `mcp-triage call` against a server built on `rmcp`, the official Rust SDK (a pinned
//! dev-dependency): a succeeding tool, a tool error and an unknown tool, in both eras rmcp serves
//! (2026-07-28 stateless, and the 2025-11-25 session), with SSE and JSON responses.
//!
//! rmcp answers an unknown tool with a JSON-RPC error (-32602 here), unlike the TypeScript and
//! Python SDKs, which send an `isError: true` result: the expected outcomes say so.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use rmcp::{
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
    transport::streamable_http_server::{
        session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
    },
    ErrorData, RoleServer, ServerHandler,
};
use serde_json::{json, Value};

#[derive(Clone)]
struct Interop;

impl ServerHandler for Interop {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = |v: Value| Arc::new(v.as_object().cloned().unwrap_or_default());
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new(
                "echo",
                "Echo the message",
                schema(json!({"type": "object", "properties": {"message": {"type": "string"}}})),
            ),
            Tool::new(
                "fail",
                "Always a tool error",
                schema(json!({"type": "object"})),
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match request.name.as_ref() {
            "echo" => {
                let msg = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                Ok(CallToolResult::success(vec![ContentBlock::text(msg)]).into())
            }
            "fail" => {
                Ok(CallToolResult::error(vec![ContentBlock::text("deliberate failure")]).into())
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool: {other}"),
                None,
            )),
        }
    }
}

/// Serves rmcp on 127.0.0.1 (random port) on a runtime of its own thread; returns the URL.
fn start_rmcp(json_response: bool) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let service = StreamableHttpService::new(
                || Ok(Interop),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default().with_json_response(json_response),
            );
            let router = axum::Router::new().nest_service("/mcp", service);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/mcp", listener.local_addr().unwrap());
            tx.send(url).unwrap();
            axum::serve(listener, router).await.unwrap();
        });
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("rmcp server starts")
}

fn call(url: &str, tool: &str, extra: &[&str]) -> (Value, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .args(["call", url, tool, "--format", "json", "--timeout", "20"])
        .args(extra)
        .output()
        .expect("mcp-triage runs");
    let record: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "call {tool}: no JSON record ({e}); stdout {:?}; stderr {:?}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (record, out.status.code().unwrap_or(-1))
}

fn expect(url: &str, tool: &str, extra: &[&str], layer: &str, outcome: &str, exit: i32) {
    let (r, code) = call(url, tool, extra);
    assert_eq!(
        (r["layer"].as_str(), r["outcome"].as_str(), code),
        (Some(layer), Some(outcome), exit),
        "{tool} {extra:?} against rmcp at {url}: {r:#}"
    );
}

fn three_calls(url: &str, era: &[&str]) {
    let mut echo_args = vec!["--args", r#"{"message":"hi"}"#];
    echo_args.extend_from_slice(era);
    expect(url, "echo", &echo_args, "application", "TOOL_SUCCESS", 0);
    expect(url, "fail", era, "application", "TOOL_ERROR", 6);
    expect(url, "no-such-tool", era, "protocol", "JSONRPC_ERROR", 4);
}

#[test]
fn rmcp_sse_responses_both_eras() {
    let url = start_rmcp(false);
    three_calls(&url, &[]);
    three_calls(&url, &["--protocol-version", "2025-11-25"]);
}

#[test]
fn rmcp_json_responses_both_eras() {
    let url = start_rmcp(true);
    three_calls(&url, &[]);
    three_calls(&url, &["--protocol-version", "2025-11-25"]);
}

#[test]
fn rmcp_modern_era_is_detected() {
    let url = start_rmcp(false);
    let (r, _) = call(&url, "echo", &["--args", r#"{"message":"hi"}"#]);
    assert_eq!(r["protocolVersion"], "2026-07-28", "{r:#}");
}
