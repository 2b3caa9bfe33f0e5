//! The journal contract between the kitchen (writer) and the judge (reader): what an
//! in-process kitchen journals for a real request, and serves at `GET /kitchen/journal`, reads
//! back as `JournalEntry` with the values the request and the answer had.

use mcp_triage_kitchen::journal::{arguments_hash, JournalEntry, RetryFields};
use mcp_triage_kitchen::protocol::Era;
use mcp_triage_kitchen::testing::{kitchen, modern, send};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kitchen_written_journal_reads_back_as_journal_entries() {
    let k = kitchen().await;
    let addr = k.local_addr();
    let args = json!({"a": 1, "b": [true]});
    let r = modern(
        addr,
        "/s/baseline/mcp?instance=contract",
        5,
        "tools/call",
        json!({"name": "run_configured_test_scenario", "arguments": args, "idempotencyKey": "k-1"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);

    // What is served: every line is a JournalEntry.
    let served = send(addr, "GET", "/kitchen/journal", &[], None)
        .await
        .unwrap()
        .text();
    let lines: Vec<JournalEntry> = served
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    // ... the same the judge reads in-process.
    assert_eq!(lines, k.kitchen().journal_entries().unwrap());

    let e = lines
        .iter()
        .find(|e| e.method.as_deref() == Some("tools/call"))
        .expect("the tools/call is journaled");
    assert_eq!(e.http_method, "POST");
    assert_eq!(e.scenario, "baseline");
    assert!(
        e.instance
            .as_deref()
            .is_some_and(|i| i.ends_with("#contract")),
        "{:?}",
        e.instance
    );
    assert_eq!(e.era, Some(Era::Modern));
    assert_eq!(e.session, None);
    assert_eq!(e.id, Some(json!(5)));
    assert_eq!(e.tool.as_deref(), Some("run_configured_test_scenario"));
    assert_eq!(e.arguments_hash, Some(arguments_hash(&args)));
    assert_eq!(e.headers["mcp-method"], "tools/call");
    assert_eq!(e.headers["mcp-protocol-version"], "2026-07-28");
    assert_eq!(e.status, Some(200));
    assert!(e.content_type.is_some());
    assert_eq!(
        e.retry,
        Some(RetryFields {
            idempotency_key: Some(json!("k-1")),
            ..RetryFields::default()
        })
    );
    assert_eq!(e.issued, None);
    assert_eq!(e.executed, Some(true));
    assert_eq!(e.replay, None);
    assert!(e.received_ms > 0 && e.time.ends_with('Z'), "{e:?}");
    k.shutdown().await;
}
