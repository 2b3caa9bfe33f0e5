//! `judge --replay FILE.jsonl` and `kitchen --replay FILE.jsonl` on the hand-written capture
//! files of the kitchen's tests (crates/mcp-triage-kitchen/tests/fixtures/capture, the format
//! of docs/capture-format.md): `mcp-triage call` passes every check and ends with the verdict
//! the captured line has; the resending bad client fails the resend checks with the replay's
//! journal lines as evidence; bad input is a usage error naming what is wrong.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

const ANSWER: &str = r#"elicitation/create={"action":"accept","content":{"reason":"ok"}}"#;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> PathBuf {
    repo().join(format!(
        "crates/mcp-triage-kitchen/tests/fixtures/capture/{name}.jsonl"
    ))
}

fn call_client() -> String {
    format!(
        "'{}' call {{url}} \"$MCP_TRIAGE_TOOL\" --args \"$MCP_TRIAGE_ARGS\" --answer '{ANSWER}'",
        env!("CARGO_BIN_EXE_mcp-triage")
    )
}

/// Runs `judge --replay capture` with `client`; exit code and the JSON report.
fn judge_replay(capture: &PathBuf, client: &str) -> (Option<i32>, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .arg("judge")
        .arg("--replay")
        .arg(capture)
        .args([
            "--client",
            client,
            "--timeout",
            "15",
            "--report",
            "json:-",
            "--quiet",
        ])
        .output()
        .expect("run mcp-triage judge");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = &stdout[stdout.find("\n{").expect("JSON report after the matrix") + 1..];
    (out.status.code(), serde_json::from_str(json).unwrap())
}

/// `(check, status)` of the one case of a report.
fn checks(report: &Value) -> Vec<(String, String)> {
    let cases = report["suites"][0]["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1, "one captured call, one case");
    cases[0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap().to_string(),
                k["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn call_passes_every_replayed_failure_and_ends_with_the_captured_verdict() {
    for (name, check, verdict) in [
        (
            "sse_cut_before_response",
            "reissue_new_id",
            "transport / STREAM_INCOMPLETE",
        ),
        (
            "http_503_retry_after",
            "no_unsafe_resend",
            "transport / HTTP_ERROR",
        ),
        ("tool_error", "no_auto_resend", "application / TOOL_ERROR"),
        ("input_required", "mrtr_retry", "application / TOOL_SUCCESS"),
    ] {
        let (code, report) = judge_replay(&fixture(name), &call_client());
        let all = checks(&report);
        let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "tool_called",
                check,
                "captured_outcome",
                "headers_2026",
                "in_time",
                "reported_outcome"
            ],
            "{name}"
        );
        assert!(all.iter().all(|(_, s)| s == "pass"), "{name}: {all:?}");
        assert_eq!(code, Some(0), "{name}");
        let case = &report["suites"][0]["cases"][0];
        assert_eq!(case["name"], "seq1.run_configured_test_scenario");
        let output = case["output"].as_str().unwrap();
        assert!(
            output.contains(&format!("result: {verdict}")),
            "{name}: {output}"
        );
        // The journal in the report shows which captured line was served.
        let served: Vec<&Value> = case["journal"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["method"] == "tools/call")
            .collect();
        assert_eq!(served[0]["replay"]["seq"], 1, "{name}");
        if name == "input_required" {
            assert_eq!(served[1]["replay"]["seq"], 2);
        }
    }
}

#[test]
fn the_resending_client_fails_the_replayed_resend_checks() {
    let client = format!(
        "python3 '{}' {{url}}",
        repo().join("interop/judge/bad-client.py").display()
    );
    for (name, check) in [
        ("sse_cut_before_response", "reissue_new_id"),
        ("http_503_retry_after", "no_unsafe_resend"),
        ("tool_error", "no_auto_resend"),
    ] {
        let (code, report) = judge_replay(&fixture(name), &client);
        assert_eq!(code, Some(1), "{name}");
        let case = &report["suites"][0]["cases"][0];
        let k = case["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["name"] == check)
            .unwrap();
        assert_eq!(k["status"], "fail", "{name}: {k}");
        let evidence = k["evidence"].as_array().unwrap();
        assert!(
            evidence
                .iter()
                .any(|e| e.as_str().unwrap().contains("\"pastEnd\":true")),
            "{name}: the resend was served the last line again: {evidence:?}"
        );
    }
}

#[test]
fn bad_replay_input_is_a_usage_error_naming_it() {
    let dir = std::env::temp_dir().join(format!("mcp-triage-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"status\":200,\"method\":\"ping\"}\n{\"status\":\"x\"}\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
            .args(args)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let bad = bad.to_str().unwrap();
    let (code, err) = run(&["judge", "--client", "true", "--replay", bad]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("capture line 2") && err.contains("status"),
        "{err}"
    );
    let (code, err) = run(&["kitchen", "--listen", "127.0.0.1:0", "--replay", bad]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("capture line 2"), "{err}");
    let (code, err) = run(&[
        "judge",
        "--client",
        "true",
        "--replay",
        "/nonexistent/c.jsonl",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot read the capture"), "{err}");
    let f = fixture("tool_error");
    let f = f.to_str().unwrap();
    let (code, err) = run(&[
        "judge",
        "--client",
        "true",
        "--replay",
        f,
        "--replay-speed",
        "0",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not a positive number"), "{err}");
    let (code, err) = run(&[
        "judge",
        "--client",
        "true",
        "--replay",
        f,
        "--replay-max-bytes",
        "100",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("over the limit of 100"), "{err}");
    // A capture with a call whose request body was not captured: named, not dropped.
    let omitted = dir.join("omitted.jsonl");
    std::fs::write(
        &omitted,
        "{\"seq\":3,\"status\":200,\"method\":\"tools/call\",\"tool\":\"t\",\"request\":{\"method\":\"POST\",\"path\":\"/mcp\",\"bodyTruncated\":true},\"body\":\"{}\"}\n",
    )
    .unwrap();
    let (code, err) = run(&[
        "judge",
        "--client",
        "true",
        "--replay",
        omitted.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("seq 3") && err.contains("not in the capture"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
