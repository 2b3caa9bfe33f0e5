//! `mcp-triage report` over a call-record log (tests/fixtures/calls.jsonl: 60 records in the
//! record model's shape, one of them an UNSAFE_RETRY), and over observers' logs as they write
//! them: tests/fixtures/proxy.jsonl (27 records of `mcp-triage proxy` in front of the kitchen,
//! 26 counted as the task's creating exchange is not: six tool calls, one a task, among `initialize`, `tools/list`, notifications, `tasks/get`
//! polls, a legacy sampling request and its answer, GET streams and DELETEs) and
//! tests/fixtures/wrap.jsonl (12 records of `mcp-triage wrap` around
//! tests/fixtures/sloppy_server.py: three tool calls among `initialize`, `tools/list` and
//! notifications). Observers write `durationMs` with a fraction.

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

/// `report LOG` on stdout, with its exit code.
fn report(fixture: &str) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .args(["report", fixture])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code(), stdout)
}

/// The lines of `stdout` with runs of spaces made one (the table's widths are not the point).
fn squeezed(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

fn assert_lines(stdout: &str, expected: &[&str]) {
    let lines = squeezed(stdout);
    for e in expected {
        assert!(lines.iter().any(|l| l == e), "no line {e:?} in:\n{stdout}");
    }
}

/// Issue 46, defect 1: a proxy log's tool calls are summarised as tool calls, with latency
/// from the fractional `durationMs`; `initialize`, `tools/list`, notifications, polls, streams
/// and DELETEs are counted apart by kind and method, not as failed calls of a tool "unknown".
/// The task call counts once, by its `taskEnd` record (1018 ms from creation to its end).
#[test]
fn report_over_a_proxy_log_counts_tool_calls_apart_from_other_exchanges() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/proxy.jsonl");
    let (code, stdout) = report(fixture);
    assert_eq!(code, Some(0), "{stdout}");
    assert_lines(
        &stdout,
        &[
            "records 26",
            "tool calls 6",
            "other exchanges 20",
            "latency p50 / p90 / p99 2.08 ms / 1018 ms / 1018 ms",
            "read_counter 1 1 0 0 0 2.08 ms 2.08 ms 2.08 ms 2.08 ms",
            "run_configured_test_scenario 2 1 1 0 0 8.17 ms 1018 ms 1018 ms 1018 ms",
            "no_such_tool 1 0 1 0 0 1.67 ms 1.67 ms 1.67 ms 1.67 ms",
            "application 4 66.7 %",
            "protocol 2 33.3 %",
            "other exchanges (not tool calls)",
            "kind method records outcomes p50 max",
            "notification notifications/initialized 2 ACCEPTED 2 1.21 ms 6.89 ms",
            "request initialize 2 RESULT 2 2.31 ms 2.89 ms",
            "request tasks/get 4 TASK_CREATED 3, RESULT 1 2.23 ms 2.35 ms",
            "request tools/list 6 RESULT 6 3.9 ms 10.2 ms",
            "response HTTP POST 1 ACCEPTED 1 2.1 ms 2.1 ms",
            "serverRequest sampling/createMessage 1 OBSERVED 1 0 ms 0 ms",
            "sessionEnd HTTP DELETE 2 ACCEPTED 2 0.89 ms 1.09 ms",
            "stream HTTP GET 2 STREAM_CLOSED 2 21.5 ms 21.9 ms",
        ],
    );
    // Only the retry origin is unknown (observers do not write one); no tool, no layer.
    let unknown: Vec<String> = squeezed(&stdout)
        .into_iter()
        .filter(|l| l.starts_with("unknown "))
        .collect();
    assert_eq!(unknown, ["unknown 6"], "{stdout}");
}

/// Issue 46, defect 1, the same over a `wrap` log (stdio: no streams, no DELETEs).
#[test]
fn report_over_a_wrap_log_counts_tool_calls_apart_from_other_exchanges() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/wrap.jsonl");
    let (code, stdout) = report(fixture);
    assert_eq!(code, Some(0), "{stdout}");
    assert_lines(
        &stdout,
        &[
            "records 12",
            "tool calls 3",
            "other exchanges 9",
            "latency p50 / p90 / p99 1.32 ms / 1.55 ms / 1.55 ms",
            "explode 1 0 1 0 0 1.32 ms 1.32 ms 1.32 ms 1.32 ms",
            "lookup 1 1 0 0 0 1.55 ms 1.55 ms 1.55 ms 1.55 ms",
            "nope 1 0 1 0 0 0.68 ms 0.68 ms 0.68 ms 0.68 ms",
            "application 2 66.7 %",
            "protocol 1 33.3 %",
            "notification notifications/initialized 3 SENT 3 0 ms 0 ms",
            "request initialize 3 RESULT 3 216 ms 226 ms",
            "request tools/list 3 RESULT 3 1.47 ms 2.44 ms",
        ],
    );
    // Only the retry origin is unknown (observers do not write one); no tool, no layer.
    let unknown: Vec<String> = squeezed(&stdout)
        .into_iter()
        .filter(|l| l.starts_with("unknown "))
        .collect();
    assert_eq!(unknown, ["unknown 3"], "{stdout}");
}
