//! `mcp-triage judge` against a deliberately bad client (interop/judge/bad-client.py, Python
//! standard library): it resends every call at once, so each resend check must fail and show
//! the journal line that proves it; the checks it cannot fail must not.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn bad_client_fails_every_resend_check_with_evidence() {
    let dir = std::env::temp_dir().join(format!("mcp-triage-judge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("judge.json");
    let junit = dir.join("judge.xml");
    let script = repo().join("interop/judge/bad-client.py");
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .arg("judge")
        .arg("--client")
        .arg(format!("python3 '{}' {{url}}", script.display()))
        .args(["--name", "bad-client", "--timeout", "15"])
        .args(["--expect-output", "errors.tool_error=Tool-side failure"])
        .arg("--report")
        .arg(format!("json:{}", json.display()))
        .arg("--report")
        .arg(format!("junit:{}", junit.display()))
        .output()
        .expect("run mcp-triage judge (needs python3 on PATH)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "exit 1 on failures:\n{stdout}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cases = report["suites"][0]["cases"].as_array().unwrap();
    let check = |case: &str, name: &str| -> Value {
        let c = cases
            .iter()
            .find(|c| c["name"] == case)
            .unwrap_or_else(|| panic!("case {case}"));
        c["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["name"] == name)
            .unwrap_or_else(|| panic!("{case} / {name}"))
            .clone()
    };
    for (case, name) in [
        // The 503s never ran the tool, so the burst adds nothing: it fails by its spacing.
        ("http_503.increment_counter", "backoff"),
        ("http_503.read_counter", "bounded_resend"),
        ("http_503.read_counter", "backoff"),
        ("sse_cut.increment_counter", "no_unsafe_resend"),
        ("sse_cut.increment_counter", "backoff"),
        // Issue 45 defect 4: a 503 after the tool ran (a gateway's): the burst runs it again.
        ("gateway_503.increment_counter", "no_unsafe_resend"),
        ("sse.cut_before_response", "backoff"),
        ("errors.rate_limited", "retry_after"),
        ("errors.tool_error", "no_auto_resend"),
        // Issue 45, draft failure classes: the burst resends a failure declared not
        // retryable, and one declared retryable before its retryNotBefore.
        ("errors.declared_non_retryable", "honours_declared_class"),
        ("errors.declared_retryable", "honours_declared_class"),
        ("errors.jsonrpc_error", "no_auto_resend"),
        // Issue 21 item 6: a tool gone from the list is an answer, not a reason to resend.
        ("catalog.mutation.renamed", "no_auto_resend"),
        ("catalog.mutation.removed", "no_auto_resend"),
        ("catalog.mutation.renamed", "relist_before_call"),
        ("sse.cut_before_response", "reissue_new_id"),
        ("sse.cut_mid_event", "reissue_new_id"),
        ("sse.priming_then_close", "resume_get"),
        ("session.expire", "reinitialize"),
    ] {
        let k = check(case, name);
        assert_eq!(k["status"], "fail", "{case} / {name}: {k}");
        let ev = k["evidence"].as_array().unwrap();
        assert!(!ev.is_empty(), "{case} / {name} has evidence");
        for line in ev {
            let entry: Value = serde_json::from_str(line.as_str().unwrap()).unwrap();
            assert_eq!(entry["method"], "tools/call", "{case} / {name}: {line}");
        }
        assert!(!k["references"].as_array().unwrap().is_empty());
        assert!(
            stdout.contains(&format!("FAIL {case} / {name}")),
            "{stdout}"
        );
    }
    // What it cannot get wrong: it calls the tool, finishes in time, and prints the tool error.
    // Except where the call must get past OAuth, which it does not do (issue 45, defect 1):
    // a call answered 401 is no call of the tool.
    let oauth_cases = [
        "auth.expired_token",
        "auth.revoked_refresh",
        "auth.scope_step_up",
        "auth.dpop",
        "auth.dpop_nonce",
    ];
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let called = if oauth_cases.contains(&name) {
            "fail"
        } else if name.starts_with("auth.") {
            // No usable token can be had there: graded by gives_up.
            "n/a"
        } else {
            "pass"
        };
        assert_eq!(check(name, "tool_called")["status"], called, "{name}");
        // n/a where it also claimed success it did not get (reported_outcome fails there).
        assert_ne!(check(name, "in_time")["status"], "fail", "{name}");
        assert_eq!(
            check(name, "headers_2026")["status"],
            "n/a",
            "{name}: legacy client"
        );
    }
    assert_eq!(
        check("errors.tool_error", "output_mentions")["status"],
        "pass"
    );
    assert_eq!(check("elicitation.approval", "mrtr_retry")["status"], "n/a");
    // It says what came back and exits 0: an outcome, reported.
    assert_eq!(check("baseline", "reported_outcome")["status"], "pass");
    // By effect: the 503'd increments never ran, so resending them added nothing.
    assert_eq!(
        check("http_503.increment_counter", "no_unsafe_resend")["status"],
        "pass"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(
        r#"<testcase name="no_unsafe_resend" classname="bad-client.sse_cut.increment_counter""#
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 16 item 1: a client that calls the tool and then exits non-zero without a word is
/// not graded as one that handled the case: it fails `reported_outcome`, and `in_time` and the
/// resend checks it met by doing nothing are n/a (they used to pass).
#[test]
fn silent_exit_fails_reported_outcome() {
    let script = repo().join("interop/judge/bad-client.py");
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .arg("judge")
        .arg("--client")
        .arg(format!(
            "python3 '{}' {{url}} --silent-exit 13",
            script.display()
        ))
        .args([
            "--scenario",
            "errors.tool_error",
            "--scenario",
            "http_503.read_counter",
        ])
        .args(["--timeout", "15", "--report", "json:-", "--quiet"])
        .output()
        .expect("run mcp-triage judge (needs python3 on PATH)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        out.stderr.is_empty(),
        "--quiet: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = &stdout[stdout.find("\n{").expect("JSON report after the matrix") + 1..];
    let report: Value = serde_json::from_str(json).unwrap();
    for case in report["suites"][0]["cases"].as_array().unwrap() {
        let status = |name: &str| {
            case["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|k| k["name"] == name)
                .unwrap_or_else(|| panic!("{} / {name}", case["name"]))["status"]
                .clone()
        };
        assert_eq!(status("tool_called"), "pass", "{case}");
        assert_eq!(status("reported_outcome"), "fail", "{case}");
        assert_eq!(status("in_time"), "n/a", "{case}");
        for resend in ["no_auto_resend", "bounded_resend"] {
            if case["checks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["name"] == resend)
            {
                assert_eq!(status(resend), "n/a", "{case}");
            }
        }
        // The journal of every case is in the report, passing or not.
        assert!(
            case["journal"].as_array().is_some_and(|j| !j.is_empty()),
            "{case}"
        );
    }
}

/// `judge` with `client` on `cases`, quietly: the exit code and `(case, check, status)`.
fn judge_cases(client: &str, cases: &[&str]) -> (Option<i32>, Vec<(String, String, String)>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-triage"));
    cmd.arg("judge").args(["--client", client]);
    for c in cases {
        cmd.args(["--scenario", c]);
    }
    let out = cmd
        .args(["--timeout", "20", "--report", "json:-", "--quiet"])
        .output()
        .expect("run mcp-triage judge");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = &stdout[stdout.find("\n{").expect("JSON report after the matrix") + 1..];
    let report: Value = serde_json::from_str(json).unwrap();
    // Issue 21 item 8: every case says which protocol the client negotiated.
    for c in report["suites"][0]["cases"].as_array().unwrap() {
        assert_eq!(c["properties"][0][0], "protocol", "{c}");
    }
    (out.status.code(), statuses(&report))
}

fn status_of(all: &[(String, String, String)], case: &str, check: &str) -> String {
    all.iter()
        .find(|(c, k, _)| c == case && k == check)
        .unwrap_or_else(|| panic!("{case} / {check}: {all:?}"))
        .2
        .clone()
}

/// Issue 21 item 1: a client that claims success ("result: ok", exit 0) after an answer that
/// was not a tool result fails `reported_outcome`; after a result it passes. One that exits 0
/// without a word (a call dropped unawaited) fails too.
#[test]
fn a_liar_and_a_silent_success_fail_reported_outcome() {
    let script = repo().join("interop/judge/bad-client.py");
    let liar = format!("python3 '{}' {{url}} --liar", script.display());
    let failing = [
        "http_503.read_counter",
        "errors.rate_limited",
        "errors.jsonrpc_error",
        "errors.tool_error",
        "sse.cut_before_response",
        "sse.cut_mid_event",
        "catalog.mutation.removed",
    ];
    let mut cases = failing.to_vec();
    cases.push("baseline");
    let (code, all) = judge_cases(&liar, &cases);
    assert_eq!(code, Some(1));
    for case in failing {
        assert_eq!(status_of(&all, case, "reported_outcome"), "fail", "{case}");
    }
    assert_eq!(status_of(&all, "baseline", "reported_outcome"), "pass");

    let silent = format!("python3 '{}' {{url}} --silent-exit 0", script.display());
    let (code, all) = judge_cases(&silent, &["baseline"]);
    assert_eq!(code, Some(1));
    assert_eq!(status_of(&all, "baseline", "reported_outcome"), "fail");
    assert_eq!(status_of(&all, "baseline", "in_time"), "n/a");
}

/// Issue 21 items 2 and 3: a client resending a call that runs and loses its answer, with an
/// idempotency key, is safe where the kitchen honours the key (the repeat is answered from the
/// stored result, journaled `deduplicated`) and fails where it ignores it (the tool ran again).
#[test]
fn keyed_resends_are_graded_by_what_ran() {
    let script = repo().join("interop/judge/bad-client.py");
    let keyed = format!("python3 '{}' {{url}} --keyed", script.display());
    let (_, all) = judge_cases(
        &keyed,
        &[
            "sse_cut.increment_counter",
            "sse_cut.increment_counter.keys_honoured",
        ],
    );
    assert_eq!(
        status_of(&all, "sse_cut.increment_counter", "no_unsafe_resend"),
        "fail"
    );
    assert_eq!(
        status_of(
            &all,
            "sse_cut.increment_counter.keys_honoured",
            "no_unsafe_resend"
        ),
        "pass"
    );
    for case in [
        "sse_cut.increment_counter",
        "sse_cut.increment_counter.keys_honoured",
    ] {
        assert_eq!(
            status_of(&all, case, "backoff"),
            "pass",
            "{case}: 300 ms apart"
        );
    }
}

/// Issue 21 item 4: a client that ran (its requests reached the kitchen) and then exited 127
/// is graded, not reported as one that could not start.
#[test]
fn exit_127_after_the_client_ran_is_graded() {
    let script = repo().join("interop/judge/bad-client.py");
    let client = format!("python3 '{}' {{url}} --silent-exit 127", script.display());
    let (code, all) = judge_cases(&client, &["baseline"]);
    assert_eq!(code, Some(1), "graded (reported_outcome fails), not exit 2");
    assert_eq!(status_of(&all, "baseline", "tool_called"), "pass");
    assert_eq!(status_of(&all, "baseline", "reported_outcome"), "fail");
}

/// Issue 16 item 1: a client command that cannot start is the run's startup error (exit 2),
/// not eleven failed cases.
#[test]
fn client_that_cannot_start_is_a_startup_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .arg("judge")
        .args([
            "--client",
            "mcp-triage-no-such-client {url}",
            "--scenario",
            "baseline",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the client could not start (sh -c exit 127: command not found)"),
        "{stderr}"
    );
}

#[test]
fn judge_rejects_bad_arguments() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
            .arg("judge")
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&["--client", "true", "--scenario", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown case \"nope\""));
    let o = run(&["--client", "true", "--report", "xml:x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown report format"));
    let o = run(&["--list"]);
    assert!(o.status.success());
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(listed.contains("session.expire"));
    assert!(listed.contains("auth.wrong_audience"));
}

/// Runs `judge` on the `auth.*` cases with `client`, quietly; the exit code and the report.
fn judge_auth_cases(client: &str) -> (Option<i32>, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .arg("judge")
        .args(["--client", client, "--scenario", "auth.oauth_flow"])
        .args(["--timeout", "20", "--report", "json:-", "--quiet"])
        .output()
        .expect("run mcp-triage judge");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = &stdout[stdout.find("\n{").expect("JSON report after the matrix") + 1..];
    (out.status.code(), serde_json::from_str(json).unwrap())
}

/// The status of every check of every case: `(case, check, status)`.
fn statuses(report: &Value) -> Vec<(String, String, String)> {
    let mut v = Vec::new();
    for c in report["suites"][0]["cases"].as_array().unwrap() {
        for k in c["checks"].as_array().unwrap() {
            v.push((
                c["name"].as_str().unwrap().to_string(),
                k["name"].as_str().unwrap().to_string(),
                k["status"].as_str().unwrap().to_string(),
            ));
        }
    }
    v
}

/// Issue 13 item 3: `mcp-triage call` with OAuth (following the kitchen's auto-approving
/// redirect, no token cache between cases) passes every auth case, in both eras: it refreshes
/// an expired token once, re-authorizes when the refresh is revoked, steps up scope, asks each
/// token for this resource, and gives up with a message on wrong_audience, missing_pkce and
/// metadata_404 (wrong_audience failed auth_bounded with 15 refused requests before the
/// client stopped re-authorizing after a request gave up).
#[test]
fn call_with_oauth_passes_every_auth_case() {
    let bin = env!("CARGO_BIN_EXE_mcp-triage");
    for era in ["", " --protocol-version 2025-11-25"] {
        let client = format!(
            "'{bin}' call {{url}} \"$MCP_TRIAGE_TOOL\" --args \"$MCP_TRIAGE_ARGS\" --oauth --authorize follow --no-token-store{era}"
        );
        let (code, report) = judge_auth_cases(&client);
        let all = statuses(&report);
        let failed: Vec<_> = all.iter().filter(|(_, _, s)| s == "fail").collect();
        assert!(failed.is_empty(), "{era}: {failed:?}");
        assert_eq!(code, Some(0), "{era}");
        let cases: std::collections::BTreeSet<&str> =
            all.iter().map(|(c, _, _)| c.as_str()).collect();
        assert_eq!(cases.len(), 8, "{cases:?}");
        for (case, check) in [
            ("auth.expired_token", "refresh_once"),
            ("auth.scope_step_up", "scope_step_up"),
            ("auth.expired_token", "token_audience"),
            ("auth.wrong_audience", "auth_bounded"),
            ("auth.wrong_audience", "gives_up"),
            ("auth.missing_pkce", "gives_up"),
            ("auth.metadata_404", "gives_up"),
            ("auth.dpop", "dpop_proof"),
            ("auth.dpop_nonce", "dpop_proof"),
        ] {
            assert!(
                all.iter()
                    .any(|(c, k, s)| c == case && k == check && s == "pass"),
                "{era}: {case} / {check}: {all:?}"
            );
        }
    }
}

/// Issue 45 defect 1: a client with no OAuth at all that pushes its call through the 401s
/// (resent with a new id) fails the three cases whose point is OAuth: `tool_called` (a call
/// answered 401 never got past authorization) and the refresh and step-up checks (no
/// authorization happened), each saying the client does no OAuth; the cases where no token
/// can be had stay graded by `gives_up`.
#[test]
fn a_client_without_oauth_fails_the_oauth_cases() {
    let script = repo().join("interop/judge/bad-client.py");
    let (code, report) = judge_auth_cases(&format!(
        "python3 '{}' {{url}} --no-oauth",
        script.display()
    ));
    assert_eq!(code, Some(1));
    let all = statuses(&report);
    let status = |case: &str, check: &str| {
        all.iter()
            .find(|(c, k, _)| c == case && k == check)
            .unwrap_or_else(|| panic!("{case} / {check}: {all:?}"))
            .2
            .as_str()
    };
    for case in [
        "auth.expired_token",
        "auth.revoked_refresh",
        "auth.scope_step_up",
    ] {
        assert_eq!(status(case, "tool_called"), "fail", "{case}");
    }
    assert_eq!(status("auth.expired_token", "refresh_once"), "fail");
    assert_eq!(status("auth.scope_step_up", "scope_step_up"), "fail");
    for case in ["auth.dpop", "auth.dpop_nonce"] {
        assert_eq!(status(case, "tool_called"), "fail", "{case}");
        assert_eq!(status(case, "dpop_proof"), "fail", "{case}");
    }
    assert_eq!(status("auth.missing_pkce", "tool_called"), "n/a");
    let case = report["suites"][0]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "auth.expired_token")
        .unwrap();
    let called = case["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "tool_called")
        .unwrap();
    let msg = called["message"].as_str().unwrap();
    assert!(
        msg.contains("every one answered 401") && msg.contains("does no OAuth"),
        "{msg}"
    );
    assert!(called["evidence"][0]
        .as_str()
        .unwrap()
        .contains("\"status\":401"));
}

/// Issue 13 item 3: a client that resends a request refused with 401 (same token) fails
/// `auth_bounded` with the journal lines; one that asks its token for another resource fails
/// `token_audience`; neither refreshes, and both authorize without PKCE in the metadata.
#[test]
fn bad_oauth_clients_fail_the_right_checks() {
    let script = repo().join("interop/judge/bad-client.py");
    let status = |all: &[(String, String, String)], case: &str, check: &str| {
        all.iter()
            .find(|(c, k, _)| c == case && k == check)
            .unwrap_or_else(|| panic!("{case} / {check}: {all:?}"))
            .2
            .clone()
    };
    // bad-client.py in `mode` exits 1 on the auth cases and fails `check` in each of `cases`.
    let bad_run = |mode: &str, check: &str, cases: &[&str]| {
        let (code, report) =
            judge_auth_cases(&format!("python3 '{}' {{url}} {mode}", script.display()));
        assert_eq!(code, Some(1), "{mode}");
        let all = statuses(&report);
        for case in cases {
            assert_eq!(
                status(&all, case, check),
                "fail",
                "{mode}: {case} / {check}"
            );
        }
        (report, all)
    };
    let (report, all) = bad_run(
        "--oauth-loop",
        "auth_bounded",
        &[
            "auth.expired_token",
            "auth.revoked_refresh",
            "auth.wrong_audience",
        ],
    );
    let loop_check = report["suites"][0]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "auth.wrong_audience")
        .unwrap()["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "auth_bounded")
        .unwrap()
        .clone();
    let evidence = loop_check["evidence"].as_array().unwrap();
    assert!(evidence[0].as_str().unwrap().contains("\"status\":401"));
    assert!(evidence.iter().any(|e| e
        .as_str()
        .unwrap()
        .contains("authorization server during the case")));
    assert!(!loop_check["references"].as_array().unwrap().is_empty());
    assert_eq!(status(&all, "auth.expired_token", "refresh_once"), "fail");
    assert_eq!(status(&all, "auth.missing_pkce", "gives_up"), "fail");
    assert_eq!(status(&all, "auth.wrong_audience", "gives_up"), "fail");
    // It asks each token for this resource.
    assert_eq!(status(&all, "auth.expired_token", "token_audience"), "pass");

    let (report, all) = bad_run(
        "--oauth-wrong-resource",
        "token_audience",
        &[
            "auth.expired_token",
            "auth.scope_step_up",
            "auth.wrong_audience",
        ],
    );
    // It does not loop.
    assert_eq!(status(&all, "auth.expired_token", "auth_bounded"), "pass");
    // No token ever reaches a record: the journal shows the header redacted.
    let text = report.to_string();
    assert!(text.contains("[redacted]"));
}

/// Issue 25 item 4: the task cases fail a client that polls a task in a tight loop, and one
/// that sends the creating `tools/call` again (which also leaves the second task running).
#[test]
fn task_cases_fail_tight_polling_and_a_resent_creating_call() {
    let script = repo().join("interop/judge/bad-client.py");
    let cases = ["tasks.completed", "tasks.failed"];
    let tight = format!("python3 '{}' {{url}} --task-tight", script.display());
    let (code, all) = judge_cases(&tight, &cases);
    assert_eq!(code, Some(1));
    for case in cases {
        assert_eq!(status_of(&all, case, "poll_pace"), "fail", "{case}");
        assert_eq!(status_of(&all, case, "stops_at_terminal"), "pass", "{case}");
        assert_eq!(status_of(&all, case, "no_create_resend"), "pass", "{case}");
    }
    let resend = format!("python3 '{}' {{url}} --task-resend", script.display());
    let (code, all) = judge_cases(&resend, &cases);
    assert_eq!(code, Some(1));
    for case in cases {
        assert_eq!(status_of(&all, case, "no_create_resend"), "fail", "{case}");
        assert_eq!(status_of(&all, case, "cancels_abandoned"), "fail", "{case}");
        assert_eq!(status_of(&all, case, "poll_pace"), "pass", "{case}");
    }
}

/// Issue 25 item 4: `mcp-triage call --task` follows every task case to its end: paced by the
/// task's pollInterval, stopping at the terminal state, never creating the task twice,
/// answering input inside the task and cancelling nothing it finished.
#[test]
fn call_passes_every_task_case() {
    let bin = env!("CARGO_BIN_EXE_mcp-triage");
    let answer = r#"elicitation/create={"action":"accept","content":{"confirm":true}}"#;
    let client = format!(
        "'{bin}' call {{url}} \"$MCP_TRIAGE_TOOL\" --args \"$MCP_TRIAGE_ARGS\" --task --answer '{answer}'"
    );
    let cases = [
        "tasks.completed",
        "tasks.tool_error",
        "tasks.failed",
        "tasks.input",
        "tasks.expired",
    ];
    let (code, all) = judge_cases(&client, &cases);
    let failed: Vec<_> = all.iter().filter(|(_, _, s)| s == "fail").collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(code, Some(0));
    for case in cases {
        for check in [
            "poll_pace",
            "stops_at_terminal",
            "no_create_resend",
            "cancels_abandoned",
        ] {
            assert_eq!(status_of(&all, case, check), "pass", "{case} / {check}");
        }
    }
}

/// Issue 45 defect 4: a 503 that comes after the tool ran (a gateway's) is not a reason to
/// resend increment_counter: our client gives up after it and passes; the bad client's burst
/// (above) runs the tool again and fails `no_unsafe_resend`.
#[test]
fn call_does_not_resend_a_call_with_side_effects_after_a_gateways_503() {
    let bin = env!("CARGO_BIN_EXE_mcp-triage");
    let client = format!("'{bin}' call {{url}} \"$MCP_TRIAGE_TOOL\" --args \"$MCP_TRIAGE_ARGS\"");
    let (code, all) = judge_cases(&client, &["gateway_503.increment_counter"]);
    let failed: Vec<_> = all.iter().filter(|(_, _, s)| s == "fail").collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(code, Some(0));
    assert_eq!(
        status_of(&all, "gateway_503.increment_counter", "no_unsafe_resend"),
        "pass"
    );
}

/// Issue 45, "a second drop after resume": the resumption drops again before any event with
/// an id. A client that resumes once and gives up fails `resume_again` with the dropped GET
/// as evidence; `mcp-triage call` resumes again with the same Last-Event-ID and passes.
#[test]
fn a_second_drop_after_resume_is_resumed_again() {
    let script = repo().join("interop/judge/bad-client.py");
    let (code, all) = judge_cases(
        &format!("python3 '{}' {{url}} --resume-once", script.display()),
        &["sse.second_drop"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(status_of(&all, "sse.second_drop", "resume_get"), "pass");
    assert_eq!(status_of(&all, "sse.second_drop", "resume_again"), "fail");
    let bin = env!("CARGO_BIN_EXE_mcp-triage");
    let ours = format!(
        "'{bin}' call {{url}} \"$MCP_TRIAGE_TOOL\" --args \"$MCP_TRIAGE_ARGS\" --protocol-version 2025-11-25"
    );
    let (code, all) = judge_cases(&ours, &["sse.second_drop"]);
    let failed: Vec<_> = all.iter().filter(|(_, _, s)| s == "fail").collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(code, Some(0));
    assert_eq!(status_of(&all, "sse.second_drop", "resume_again"), "pass");
}

/// Issue 45, "progress keeps a call alive": progress every 250 ms for 4 s, past the 1.5 s
/// request timeout the case asks for. A client that asks for progress but gives up at its
/// fixed deadline fails `progress_keeps_alive`; `mcp-triage call`, whose deadline progress
/// moves, gets the result and passes.
#[test]
fn progress_keeps_a_call_alive() {
    let script = repo().join("interop/judge/bad-client.py");
    let (code, all) = judge_cases(
        &format!("python3 '{}' {{url}} --progress-ignored", script.display()),
        &["timeout.progress_keepalive"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(
        status_of(&all, "timeout.progress_keepalive", "progress_keeps_alive"),
        "fail"
    );
    let bin = env!("CARGO_BIN_EXE_mcp-triage");
    let ours = format!(
        "'{bin}' call {{url}} \"$MCP_TRIAGE_TOOL\" --args \"$MCP_TRIAGE_ARGS\" --timeout \"$(( MCP_TRIAGE_REQUEST_TIMEOUT_MS / 1000 ))\""
    );
    let (code, all) = judge_cases(&ours, &["timeout.progress_keepalive"]);
    let failed: Vec<_> = all.iter().filter(|(_, _, s)| s == "fail").collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(code, Some(0));
    assert_eq!(
        status_of(&all, "timeout.progress_keepalive", "progress_keeps_alive"),
        "pass"
    );
}

/// Issue 45, draft failure classes: `mcp-triage call --draft tool-failure` reads the failure
/// the kitchen declares on a read-only tool: it does not resend the one declared not
/// retryable (its annotations alone would allow a resend after a transient failure), and
/// resends the one declared retryable no sooner than its retryNotBefore. The bad client's
/// burst fails both (above).
#[test]
fn call_with_the_draft_honours_a_declared_failure_class() {
    let bin = env!("CARGO_BIN_EXE_mcp-triage");
    let client = format!(
        "'{bin}' call {{url}} \"$MCP_TRIAGE_TOOL\" --args \"$MCP_TRIAGE_ARGS\" --draft tool-failure"
    );
    let cases = ["errors.declared_non_retryable", "errors.declared_retryable"];
    let (code, all) = judge_cases(&client, &cases);
    let failed: Vec<_> = all.iter().filter(|(_, _, s)| s == "fail").collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(code, Some(0));
    for case in cases {
        assert_eq!(
            status_of(&all, case, "honours_declared_class"),
            "pass",
            "{case}"
        );
        assert_eq!(status_of(&all, case, "reported_outcome"), "pass", "{case}");
    }
}
