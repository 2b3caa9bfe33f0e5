//! `mcp-triage report` over a call-record log (tests/fixtures/calls.jsonl: 60 records in the
//! record model's shape, one of them an UNSAFE_RETRY).

use std::process::Command;

#[test]
fn report_summarises_a_log_and_flags_the_unsafe_retry() {
    let dir = std::env::temp_dir().join(format!("mcp-triage-report-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let html = dir.join("calls.html");
    let junit = dir.join("calls.xml");
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/calls.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .args(["report", fixture, "--html"])
        .arg(&html)
        .arg("--report")
        .arg(format!("junit:{}", junit.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "an unsafe retry fails the run:\n{stdout}"
    );
    assert!(stdout.contains("records                  60"), "{stdout}");
    assert!(stdout.contains("unsafe retries           1"), "{stdout}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(r#"<b id="count-fail">1</b>"#));
    assert!(page.contains("increment_counter re-called after 503 without an idempotency key"));
    assert!(page.contains("<svg id=\"chart-0\""));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"<testcase name="no_unsafe_retry" classname="call log.increment_counter""#)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn report_rejects_a_broken_log_with_the_line_number() {
    let dir = std::env::temp_dir().join(format!("mcp-triage-report-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("bad.jsonl");
    std::fs::write(&log, "{\"tool\":\"a\"}\n[1]\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .arg("report")
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.jsonl:2: a record is a JSON object"));
    std::fs::remove_dir_all(&dir).unwrap();
}
