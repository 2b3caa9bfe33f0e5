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
    assert!(
        ok.attempts.iter().all(|a| a.content_type.is_none()),
        "a stdio line has no media type: {:?}",
        ok.attempts
    );

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

/// An elicitation nobody answers is declined as the spec defines, and the verdict is the
/// server's final answer to the call (issue 24, item 1), as over HTTP.
#[tokio::test]
async fn an_unanswered_elicitation_is_declined_and_the_servers_answer_judged() {
    let r = call("elicit").await;
    assert_eq!(r.outcome, Outcome::ToolError, "{r:?}");
    assert_eq!(r.message.as_deref(), Some("declined"));
    assert_eq!(r.rounds, 0, "a refusal is not an input round");
    let w = r.warnings.iter().find(|w| w.code == "INPUT_UNANSWERED");
    assert!(
        w.is_some_and(|w| w.detail.contains("elicitation/create") && w.detail.contains("decline")),
        "{:?}",
        r.warnings
    );
}

/// `roots/list` is answered from configuration: no person was asked, so no input round
/// (issue 24, item 3).
#[tokio::test]
async fn answering_roots_list_is_not_an_input_round() {
    let r = call("roots").await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:?}");
    assert_eq!(r.rounds, 0);
}

/// A banner on stdout before the `initialize` answer is the same protocol violation as one
/// later, and gets the same warning (issue 24, item 3).
#[tokio::test]
async fn a_banner_before_initialize_is_warned_about() {
    let r = call("banner").await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:?}");
    let w = r.warnings.iter().find(|w| w.code == "STDOUT_NOT_JSONRPC");
    assert!(
        w.is_some_and(|w| w.detail.contains("sh-server 1.0 ready")),
        "{:?}",
        r.warnings
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
