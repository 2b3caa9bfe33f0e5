//! The stdio transport against a small shell server: success, tool error, a non-JSON-RPC line
//! on stdout (a protocol violation, reported), and a server that exits mid-call
//! (CONNECTION_ERROR with its stderr in the record).

mod common;

use std::collections::BTreeMap;

use mcp_triage_client::{CallOptions, Client, Target};
use mcp_triage_core::Outcome;
use serde_json::json;

fn target(mode: &str) -> Target {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sh_server.sh");
    Target::Stdio {
        command: "sh".into(),
        args: vec![script.into(), mode.into()],
        env: BTreeMap::new(),
    }
}

async fn call(mode: &str) -> mcp_triage_client::CallRecord {
    let c = Client::connect(target(mode), common::fast_options(None))
        .await
        .unwrap();
    let r = c.call_tool("echo", json!({}), CallOptions::default()).await;
    c.close().await;
    r
}

#[tokio::test]
async fn stdio_outcomes() {
    let ok = call("ok").await;
    assert_eq!(ok.outcome, Outcome::ToolSuccess, "{ok:?}");
    assert_eq!(ok.transport, "stdio");
    assert_eq!(ok.protocol_version, "2025-11-25");
    assert_eq!(ok.server_info.as_ref().unwrap().name, "sh-server");
    assert_eq!(ok.message.as_deref(), Some("hi"));
    assert!(ok.http_statuses.is_empty());

    assert_eq!(call("error").await.outcome, Outcome::ToolError);

    let garbage = call("garbage").await;
    assert_eq!(garbage.outcome, Outcome::ToolSuccess);
    assert!(
        garbage
            .warnings
            .iter()
            .any(|w| w.code == "STDOUT_NOT_JSONRPC"),
        "{:?}",
        garbage.warnings
    );

    let died = call("exit").await;
    assert_eq!(died.outcome, Outcome::ConnectionError, "{died:?}");
    assert!(
        died.stderr_tail.iter().any(|l| l.contains("fatal")),
        "{:?}",
        died.stderr_tail
    );
    // read-only on a local server: resent, but a dead process never answers.
    assert_eq!(died.attempts.len(), 3);
    assert_eq!(
        died.attempts
            .last()
            .unwrap()
            .decision
            .as_ref()
            .unwrap()
            .action,
        "give_up"
    );
}

#[tokio::test]
async fn spawn_failure_is_an_error() {
    let t = Target::Stdio {
        command: "/nonexistent/mcp-server".into(),
        args: vec![],
        env: BTreeMap::new(),
    };
    assert!(Client::connect(t, common::fast_options(None))
        .await
        .is_err());
}
