//! Issue 14 acceptance, capture → replay → judge: a failure captured from a kitchen scenario by
//! `proxy --capture`, replayed by `kitchen --replay` (through `judge --replay`), gives the same
//! client verdicts and the same judge checks as the original scenario. For an SSE stream cut
//! before its response, a 503, a tool error and an input round (`input_required`, then the
//! completed call), with `mcp-triage call` as the client, in the 2026-07-28 era and held to
//! 2025-11-25 (sessions, a standalone GET stream, resumption, elicitation on the SSE stream).
//! Real processes on 127.0.0.1 only.
//!
//! Before that, on the hand-written capture files of the kitchen's tests (one per failure kind):
//! `mcp-triage call` passes every check of `judge --replay` and ends with the captured verdict;
//! the resending bad client fails the resend checks with the replay's journal lines as
//! evidence; bad input is a usage error naming what is wrong.

mod common;

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{start_proxy, stop, KillOnDrop, BIN};
use mcp_triage_kitchen::mcp::percent_encode;
use serde_json::Value;

const ANSWER: &str =
    r#"elicitation/create={"action":"accept","content":{"reason":"approved by the test"}}"#;

/// `mcp-triage kitchen` on a free port: the process (killed when dropped) and its base URL.
fn kitchen() -> (KillOnDrop, String) {
    let mut child = KillOnDrop(
        Command::new(BIN)
            .args(["kitchen", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line.trim().trim_end_matches("/mcp").to_string();
    assert!(base.starts_with("http://127.0.0.1:"), "{line}");
    (child, base)
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A hand-written capture file of the kitchen's tests (docs/capture-format.md).
fn fixture(name: &str) -> String {
    repo()
        .join(format!(
            "crates/mcp-triage-kitchen/tests/fixtures/capture/{name}.jsonl"
        ))
        .to_string_lossy()
        .into_owned()
}

/// `mcp-triage call` as the judge runs it; `era` is extra arguments (`--protocol-version …`).
fn client(era: &str) -> String {
    format!(
        "'{BIN}' call {{url}} \"$MCP_TRIAGE_TOOL\" --args \"$MCP_TRIAGE_ARGS\" --answer '{ANSWER}'{era}"
    )
}

/// `mcp-triage judge ARGS --client CLIENT --report json:-`: the exit code and the report's
/// only case.
fn judge_case(args: &[&str], client: &str) -> (Option<i32>, Value) {
    let out = Command::new(BIN)
        .arg("judge")
        .args(args)
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
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = &stdout[stdout.find("\n{").expect("JSON report after the matrix") + 1..];
    let report: Value = serde_json::from_str(json).unwrap();
    let cases = report["suites"][0]["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1, "{args:?}: one case: {stdout}");
    (out.status.code(), cases[0].clone())
}

/// [`judge_case`] with `mcp-triage call` in `era`: the case.
fn judge(args: &[&str], era: &str) -> Value {
    judge_case(args, &client(era)).1
}

/// `(check, status)` of a judged case.
fn checks(case: &Value) -> Vec<(String, String)> {
    case["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap().into(),
                k["status"].as_str().unwrap().into(),
            )
        })
        .collect()
}

/// What `mcp-triage call` concluded, per attempt and overall, without timings: each attempt's
/// verdict (`application/TOOL_ERROR`, with `status=…` when it names one) and the `result:` line
/// up to its duration. (The detail of a verdict may differ: a capture keeps no body of a GET's
/// answer, so a replayed 410 to a resumption has no JSON-RPC error in it.)
fn client_verdicts(case: &Value) -> Vec<String> {
    let output = case["output"].as_str().unwrap();
    let mut v: Vec<String> = output
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.split_once('/').is_some_and(|(layer, _)| {
                ["transport", "protocol", "interaction", "application"].contains(&layer)
            })
        })
        .map(|l| {
            let mut words = l.split_whitespace();
            let verdict = words.next().unwrap_or_default().to_string();
            match words.next().filter(|w| w.starts_with("status=")) {
                Some(status) => format!("{verdict} {status}"),
                None => verdict,
            }
        })
        .collect();
    let result = output
        .lines()
        .find(|l| l.starts_with("result: "))
        .unwrap_or_else(|| panic!("the client states a result: {output}"));
    v.push(
        result
            .rsplit_once(", ")
            .expect("result line with a duration")
            .0
            .to_string(),
    );
    v
}

/// Runs the judge's case `case` (scenario, params, tool, arguments as `judge --list` shows them)
/// through `proxy --capture` with `mcp-triage call`, and returns the capture file.
fn capture(
    dir: &Path,
    era: &str,
    case: &str,
    scenario: &str,
    params: &str,
    tool: &str,
    args: &str,
) -> PathBuf {
    let (_kitchen, upstream) = kitchen();
    let file = dir.join(format!("{case}{}.jsonl", era.replace(' ', "_")));
    let proxy = start_proxy(&upstream, &[OsStr::new("--capture"), file.as_os_str()]);
    let proxy_url = format!("http://{}", proxy.addr);
    let url = format!(
        "{proxy_url}/s/{scenario}/mcp?instance=capture&params={}",
        percent_encode(params)
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(client(era).replace("{url}", &format!("'{url}'")))
        .env("MCP_TRIAGE_TOOL", tool)
        .env("MCP_TRIAGE_ARGS", args)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some(),
        "{case}: the client ran: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (status, stderr) = stop(proxy);
    assert!(status.success(), "{case}: the proxy: {stderr}");
    file
}

#[test]
fn a_captured_failure_replayed_gives_the_same_verdicts_and_checks() {
    let dir = std::env::temp_dir().join(format!("mcp-triage-replay-accept-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let message = r#"{"message":"from mcp-triage judge"}"#;
    for era in ["", " --protocol-version 2025-11-25"] {
        for (case, scenario, params, tool, args, graded) in [
            (
                "sse.cut_before_response",
                "sse.cut_before_response",
                "{}",
                "run_configured_test_scenario",
                message,
                "reissue_new_id",
            ),
            (
                "http_503.increment_counter",
                "errors.http_status_per_method",
                r#"{"rules":{"tools/call":503}}"#,
                "increment_counter",
                r#"{"by":1}"#,
                "no_unsafe_resend",
            ),
            (
                "errors.tool_error",
                "errors.tool_error",
                "{}",
                "run_configured_test_scenario",
                message,
                "no_auto_resend",
            ),
            (
                "elicitation.approval",
                "elicitation.approval",
                "{}",
                "run_configured_test_scenario",
                message,
                "mrtr_retry",
            ),
        ] {
            let original = judge(&["--scenario", case], era);
            let file = capture(&dir, era, case, scenario, params, tool, args);
            let replayed = judge(&["--replay", file.to_str().unwrap()], era);
            let case = format!("{case}{era}");

            // The client concluded the same, attempt by attempt.
            assert_eq!(
                client_verdicts(&replayed),
                client_verdicts(&original),
                "{case}"
            );
            // Every check of the original scenario, with the same status; the replay adds only
            // captured_outcome, which passes.
            let (want, got) = (checks(&original), checks(&replayed));
            // In 2025-11-25 the input round is an elicitation on the SSE stream: no MRTR retry to
            // grade, n/a in both.
            let expected = if era.is_empty() || graded != "mrtr_retry" {
                "pass"
            } else {
                "n/a"
            };
            assert!(
                want.iter().any(|(n, s)| n == graded && s == expected),
                "{case}: {want:?}"
            );
            let same: Vec<(String, String)> = got
                .iter()
                .filter(|(n, _)| want.iter().any(|(w, _)| w == n))
                .cloned()
                .collect();
            assert_eq!(same, want, "{case}");
            let extra: Vec<&(String, String)> = got.iter().filter(|k| !want.contains(k)).collect();
            assert_eq!(
                extra,
                [&("captured_outcome".to_string(), "pass".to_string())],
                "{case}"
            );
            assert_eq!(
                replayed["name"],
                format!(
                    "seq{}.{tool}",
                    replayed["journal"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|e| e["method"] == "tools/call")
                        .unwrap()["replay"]["seq"]
                ),
                "{case}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn call_passes_every_replayed_failure_and_ends_with_the_captured_verdict() {
    // The check a captured verdict calls for (a 503 of a tool that is not read-only or
    // idempotent calls for none beyond the resend checks every case has).
    for (name, check, verdict) in [
        (
            "sse_cut_before_response",
            Some("reissue_new_id"),
            "transport / STREAM_INCOMPLETE",
        ),
        ("http_503_retry_after", None, "transport / HTTP_ERROR"),
        (
            "tool_error",
            Some("no_auto_resend"),
            "application / TOOL_ERROR",
        ),
        (
            "input_required",
            Some("mrtr_retry"),
            "application / TOOL_SUCCESS",
        ),
    ] {
        let (code, case) = judge_case(&["--replay", &fixture(name)], &client(""));
        let all = checks(&case);
        let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
        let mut want = vec!["tool_called"];
        want.extend(check);
        want.extend([
            "captured_outcome",
            "no_unsafe_resend",
            "backoff",
            "headers_2026",
            "in_time",
            "reported_outcome",
        ]);
        assert_eq!(names, want, "{name}");
        assert!(all.iter().all(|(_, s)| s != "fail"), "{name}: {all:?}");
        if let Some(c) = check {
            assert!(
                all.contains(&(c.to_string(), "pass".to_string())),
                "{name}: {all:?}"
            );
        }
        assert_eq!(code, Some(0), "{name}");
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
        // The call may have run before its stream was cut, and a resend runs it again.
        ("sse_cut_before_response", "no_unsafe_resend"),
        // A 503 is answered before anything runs: the burst fails by its spacing.
        ("http_503_retry_after", "backoff"),
        ("tool_error", "no_auto_resend"),
    ] {
        let (code, case) = judge_case(&["--replay", &fixture(name)], &client);
        assert_eq!(code, Some(1), "{name}");
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
        let o = Command::new(BIN).args(args).output().unwrap();
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
    let f = f.as_str();
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

/// Issue 21 item 5: `mcp-triage call`, captured against a seeded `chaos.mix` (503s, JSON-RPC
/// errors, answers cut after the tool ran) and against a second endpoint in the same capture,
/// passes every case `judge --replay` makes of the capture. It used to fail 7 checks: resends
/// of `set_value` (annotated idempotent in the captured tools/list) were called unsafe, and a
/// resend after a 503 was counted as one after the JSON-RPC error it met next. Each case is
/// replayed on the path it was captured on.
#[test]
fn call_passes_every_replayed_case_of_a_chaos_capture_of_itself() {
    let dir = std::env::temp_dir().join(format!("mcp-triage-replay-chaos-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("chaos.jsonl");
    let (_kitchen, upstream) = kitchen();
    let proxy = start_proxy(&upstream, &[OsStr::new("--capture"), file.as_os_str()]);
    let chaos = format!(
        "http://{}/s/chaos.mix/mcp?seed=11&instance=self&rates={}&methods={}",
        proxy.addr,
        percent_encode(r#"{"http_503":0.3,"jsonrpc_error":0.2,"sse_cut":0.3}"#),
        percent_encode(r#"["tools/call"]"#)
    );
    let baseline = format!("http://{}/s/baseline/mcp", proxy.addr);
    let mut calls: Vec<(String, &str, String)> = Vec::new();
    for i in 1..=4 {
        calls.push((
            chaos.clone(),
            "set_value",
            format!(r#"{{"key":"k{i}","value":{i}}}"#),
        ));
        calls.push((
            chaos.clone(),
            "increment_counter",
            format!(r#"{{"by":{i}}}"#),
        ));
        calls.push((chaos.clone(), "read_counter", "{}".into()));
    }
    calls.push((baseline, "set_value", r#"{"key":"k1","value":1}"#.into()));
    for (url, tool, args) in &calls {
        let out = Command::new(BIN)
            .args(["call", url, tool, "--args", args])
            .output()
            .unwrap();
        assert!(out.status.code().is_some(), "{tool}: the client ran");
    }
    let (status, stderr) = stop(proxy);
    assert!(status.success(), "the proxy: {stderr}");
    let out = Command::new(BIN)
        .args(["judge", "--quiet", "--timeout", "20", "--report", "json:-"])
        .arg("--replay")
        .arg(&file)
        .args(["--client", &client("")])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = &stdout[stdout.find("\n{").expect("JSON report after the matrix") + 1..];
    let report: Value = serde_json::from_str(json).unwrap();
    let cases = report["suites"][0]["cases"].as_array().unwrap();
    assert!(
        cases.len() >= 8,
        "a case per captured call: {}",
        cases.len()
    );
    let failed: Vec<(String, String)> = cases
        .iter()
        .flat_map(|c| {
            checks(c)
                .into_iter()
                .filter(|(_, s)| s == "fail")
                .map(move |(k, _)| (c["name"].as_str().unwrap().to_string(), k))
        })
        .collect();
    assert!(failed.is_empty(), "{failed:?}\n{stdout}");
    assert_eq!(out.status.code(), Some(0));
    // The capture held failures to grade, and the second endpoint was replayed on its path.
    let graded: Vec<String> = cases.iter().flat_map(checks).map(|(k, _)| k).collect();
    for k in ["bounded_resend", "no_auto_resend", "reissue_new_id"] {
        assert!(graded.iter().any(|g| g == k), "{k} graded: {graded:?}");
    }
    // The baseline call was captured last; its case is served its own line, not the
    // chaos.mix lines of the same call (another path).
    let last_seq = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["method"] == "tools/call")
        .map(|l| l["seq"].as_u64().unwrap())
        .max()
        .unwrap();
    let last = cases.last().unwrap();
    assert_eq!(last["name"], format!("seq{last_seq}.set_value"));
    let served: Vec<&Value> = last["journal"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["method"] == "tools/call")
        .collect();
    assert_eq!(served[0]["replay"]["seq"], last_seq, "{last}");
    std::fs::remove_dir_all(&dir).unwrap();
}
