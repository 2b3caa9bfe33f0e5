//! `mcp-triage judge --hop` against real processes on 127.0.0.1: four adversarial fake hops
//! (interop/hops/fake-hop.py, Python standard library) must each be caught with evidence;
//! a byte-transparent relay and `mcp-triage proxy` must pass every case (no false fail);
//! a hop that never listens is a usage error (exit 2) within its bound.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fake(mode: &str) -> String {
    format!(
        "exec python3 '{}' {mode} {{listen}} {{upstream}}",
        repo().join("interop/hops/fake-hop.py").display()
    )
}

/// Run `judge --hop CMD` with `extra` arguments; the output and the JSON report.
fn judge(name: &str, hop: &str, extra: &[&str]) -> (Output, Value) {
    let dir = std::env::temp_dir().join(format!("mcp-triage-judge-hop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join(format!("{name}.json"));
    let _ = std::fs::remove_file(&json);
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .args(["judge", "--hop", hop, "--color", "never", "-q"])
        // 15 s per case unless the test sets its own limit.
        .args(if extra.contains(&"--timeout") {
            &[][..]
        } else {
            &["--timeout", "15"][..]
        })
        .args(extra)
        .arg("--report")
        .arg(format!("json:{}", json.display()))
        .output()
        .expect("run mcp-triage judge --hop");
    let report = std::fs::read_to_string(&json)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    (out, report)
}

fn stdout(o: &Output) -> String {
    format!(
        "{}\n--- stderr\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The case's check named `grade` (a grade's id), if the case has it.
fn finding(report: &Value, case: &str, grade: &str) -> Option<Value> {
    report["suites"][0]["cases"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == case)?["checks"]
        .as_array()?
        .iter()
        .find(|k| k["name"] == grade)
        .cloned()
}

fn not_kept(report: &Value) -> Vec<String> {
    report["suites"][0]["cases"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter(|c| {
                    c["checks"]
                        .as_array()
                        .is_some_and(|ks| ks.iter().any(|k| k["status"] == "fail"))
                })
                .map(|c| c["name"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_byte_transparent_relay_keeps_every_case() {
    let (out, report) = judge("relay", &fake("relay"), &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(not_kept(&report).is_empty(), "{text}");
    assert!(
        text.contains("errors.tool_error/modern") && text.contains("kept"),
        "{text}"
    );
}

#[test]
fn our_proxy_keeps_every_case() {
    let hop = format!(
        "exec '{}' proxy --listen {{listen}} --upstream {{upstream}} --log {{labels}}",
        env!("CARGO_BIN_EXE_mcp-triage")
    );
    let (out, report) = judge("proxy", &hop, &["--hop-labels", "mcp-triage-proxy"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(not_kept(&report).is_empty(), "{text}");
    // Its own records label every call as the kitchen's verdict says.
    let right = finding(&report, "errors.tool_error/modern", "label_right").expect(&text);
    assert_eq!(right["status"], "pass", "{right}");
    assert!(text.contains("labels wrong 0"), "{text}");
}

#[test]
fn a_hop_that_labels_every_call_a_success_is_caught() {
    let hop = format!("{} {{labels}}", fake("label-ok"));
    let (out, report) = judge(
        "label-ok",
        &hop,
        &[
            "--hop-labels",
            "mcp-triage-proxy",
            "--scenario",
            "errors.tool_error/modern",
            "--scenario",
            "baseline/modern",
        ],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("LABEL WRONG"), "{text}");
    let wrong = finding(&report, "errors.tool_error/modern", "label_right").expect(&text);
    assert_eq!(wrong["status"], "fail", "{wrong}");
    assert!(
        wrong["message"]
            .as_str()
            .unwrap()
            .contains("[TOOL_SUCCESS]; the kitchen answered 1 [TOOL_ERROR]"),
        "{wrong}"
    );
    assert_eq!(
        finding(&report, "baseline/modern", "label_right").unwrap()["status"],
        "pass"
    );
    // The answers themselves went through unchanged: kept.
    assert!(
        not_kept(&report)
            .iter()
            .all(|c| c == "errors.tool_error/modern"),
        "{text}"
    );
    assert!(
        finding(&report, "errors.tool_error/modern", "kept").is_some(),
        "{text}"
    );
}

#[test]
fn a_relay_on_one_fixed_path_keeps_every_case() {
    let (out, report) = judge(
        "fixed",
        &fake("relay"),
        &[
            "--hop-fixed-path",
            "/mcp",
            "--scenario",
            "errors.tool_error",
            "--scenario",
            "session.expire",
            "--scenario",
            "tools_list.annotations",
        ],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(
        report["suites"][0]["cases"].as_array().map(Vec::len),
        Some(4),
        "{text}"
    );
}

#[test]
fn a_hop_that_turns_failures_into_success_is_caught() {
    let tap = std::env::temp_dir().join(format!("mcp-triage-judge-hop-{}.tap", std::process::id()));
    let tap_arg = format!("tap:{}", tap.display());
    let (out, report) = judge(
        "success",
        &fake("success"),
        &[
            "--scenario",
            "errors.tool_error",
            "--scenario",
            "errors.http_status_sequence",
            "--scenario",
            "baseline/modern",
            "--report",
            &tap_arg,
        ],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    // The other report formats carry the grade as the check's name too.
    let tap = std::fs::read_to_string(&tap).unwrap();
    assert!(
        tap.contains("not ok") && tap.contains("errors.tool_error/modern / success_invented"),
        "{tap}"
    );
    assert!(text.contains("success invented"), "{text}");
    for case in [
        "errors.tool_error/modern",
        "errors.http_status_sequence/modern",
    ] {
        let f =
            finding(&report, case, "success_invented").unwrap_or_else(|| panic!("{case}: {text}"));
        let ev = f["evidence"].to_string();
        assert!(ev.contains("TOOL_SUCCESS"), "{case}: {ev}");
    }
    let ev = finding(&report, "errors.tool_error/modern", "success_invented").unwrap()["evidence"]
        .to_string();
    assert!(
        ev.contains("TOOL_ERROR"),
        "the journal line shows what the kitchen sent: {ev}"
    );
    assert!(
        finding(&report, "baseline/modern", "kept").is_some(),
        "a success stays kept: {text}"
    );
}

#[test]
fn a_hop_that_resends_every_call_is_caught() {
    let (out, report) = judge(
        "resend",
        &fake("resend"),
        &[
            "--scenario",
            "baseline",
            "--scenario",
            "errors.tool_error/modern",
        ],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("resent by the hop"), "{text}");
    for case in [
        "baseline/modern",
        "baseline/legacy",
        "errors.tool_error/modern",
    ] {
        let f = finding(&report, case, "resent_by_hop").unwrap_or_else(|| panic!("{case}: {text}"));
        assert!(
            f["message"]
                .as_str()
                .unwrap()
                .contains("2 time(s); our client sent it 1"),
            "{f}"
        );
        assert!(
            f["evidence"].as_array().unwrap().len() >= 3,
            "two journal lines and the client's: {f}"
        );
    }
}

#[test]
fn a_hop_that_buffers_sse_is_caught() {
    let (out, report) = judge(
        "buffer",
        &fake("buffer"),
        &["--scenario", "sse.first_event"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("stream held back"), "{text}");
    let f = finding(&report, "sse.first_event", "stream_held_back").expect(&text);
    let ev = f["evidence"].to_string();
    assert!(
        ev.contains("directly:") && ev.contains("through the hop:"),
        "{ev}"
    );
}

#[test]
fn a_hop_that_strips_retry_after_is_caught() {
    let (out, report) = judge(
        "strip",
        &fake("strip-retry"),
        &["--scenario", "errors.rate_limited"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("retry information lost"), "{text}");
    let f = finding(&report, "errors.rate_limited/modern", "retry_info_lost").expect(&text);
    let ev = f["evidence"].to_string();
    assert!(
        ev.contains("retryAfterMs") && ev.contains("retry-after ms per attempt [-]"),
        "{ev}"
    );
    // SEP-3304's retryAfterMs is in the body, which this hop passes on: kept.
    assert!(
        finding(
            &report,
            "errors.rate_limited/modern/sep_3304_32023_unannotated_tool",
            "retry_info_lost"
        )
        .is_none(),
        "{text}"
    );
}

#[test]
fn a_hop_that_drops_the_session_or_hides_its_expiry_is_caught() {
    let (out, report) = judge(
        "no-session",
        &fake("no-session"),
        &[
            "--scenario",
            "baseline/legacy",
            "--scenario",
            "baseline/modern",
        ],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let f = finding(&report, "baseline/legacy", "session_broken").expect(&text);
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("without Mcp-Session-Id"),
        "{f}"
    );
    assert!(
        f["evidence"]
            .to_string()
            .contains("Mcp-Session-Id header is required"),
        "{f}"
    );
    assert!(
        finding(&report, "baseline/modern", "kept").is_some(),
        "no session, nothing to break: {text}"
    );

    let (out, report) = judge(
        "hide-expiry",
        &fake("hide-expiry"),
        &["--scenario", "session.expire"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let f = finding(&report, "session.expire/legacy", "session_broken").expect(&text);
    assert!(
        f["message"].as_str().unwrap().contains("never got a 404"),
        "{f}"
    );
}

#[test]
fn a_hop_that_swallows_the_answer_is_caught_within_the_case_limit() {
    let t0 = Instant::now();
    let (out, report) = judge(
        "swallow",
        &fake("swallow"),
        &["--scenario", "baseline/modern", "--timeout", "3"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let f = finding(&report, "baseline/modern", "lost").expect(&text);
    assert!(
        f["message"].as_str().unwrap().contains("TOOL_SUCCESS"),
        "{f}"
    );
    // The hop holds the connection for 60 s; the case ends at its limit and the hop is stopped.
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
}

#[test]
fn a_hop_that_never_listens_is_a_usage_error_within_its_bound() {
    let t0 = Instant::now();
    let (out, _) = judge(
        "deaf",
        "echo not listening on {listen} >&2; sleep 30",
        &["--hop-start-timeout", "1"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("did not start listening") && text.contains("within 1 s"),
        "{text}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    let (out, _) = judge("nolisten", "true {upstream}", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).contains("has no {listen}"), "{}", stdout(&out));
    let (out, _) = judge(
        "nolabels",
        "true {listen}",
        &["--hop-labels", "mcp-triage-proxy"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).contains("go together"), "{}", stdout(&out));
}

#[test]
fn hop_cases_are_listed() {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .args(["judge", "--hop", "x {listen}", "--list"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for id in [
        "errors.tool_error/modern",
        "session.expire/legacy",
        "sse.first_event",
        "tools_list.annotations",
    ] {
        assert!(text.contains(id), "{id}: {text}");
    }
    // docs/hops.md names every case (a pair as `scenario/{modern,legacy}`).
    let page = std::fs::read_to_string(repo().join("docs/hops.md")).unwrap();
    for line in text.lines() {
        let id = line.split_whitespace().next().unwrap();
        let pair = match id.split_once('/') {
            Some((scenario, era)) if !era.contains('/') => {
                format!("`{scenario}/{{modern,legacy}}`")
            }
            _ => String::new(),
        };
        assert!(
            page.contains(&format!("`{id}`")) || (!pair.is_empty() && page.contains(&pair)),
            "docs/hops.md does not list case {id}"
        );
    }
}
