//! `kitchen --stdio` as a process: MCP over stdin/stdout, the journal file readable while the
//! server runs, stdio's faults, and the scenarios it refuses.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

fn kitchen(args: &[&str], journal: &PathBuf) -> Child {
    Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .args(["kitchen", "--stdio", "--journal"])
        .arg(journal)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start kitchen --stdio")
}

fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("kitchen-stdio-{}-{name}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

fn send(c: &mut Child, v: Value) {
    let stdin = c.stdin.as_mut().unwrap();
    writeln!(stdin, "{v}").unwrap();
    stdin.flush().unwrap();
}

fn initialize() -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})
}

fn call(id: u64, tool: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":{"message":"m"}}})
}

#[test]
fn a_tool_error_over_stdio_is_journaled_while_the_server_runs() {
    let j = scratch("tool-error");
    let mut c = kitchen(&["--scenario", "errors.tool_error"], &j);
    let mut out = BufReader::new(c.stdout.take().unwrap());
    let mut line = String::new();
    send(&mut c, initialize());
    out.read_line(&mut line).unwrap();
    let init: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{line}");
    send(
        &mut c,
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    );
    send(&mut c, json!("not a request"));
    send(&mut c, call(2, "run_configured_test_scenario"));
    let mut answers = Vec::new();
    for _ in 0..2 {
        line.clear();
        out.read_line(&mut line).unwrap();
        answers.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    let result = answers
        .iter()
        .find(|a| a["id"] == 2)
        .expect("the call's answer");
    assert_eq!(result["result"]["isError"], true, "{answers:?}");
    // The server still runs (stdin open): the call's entry is in the file already.
    let text = std::fs::read_to_string(&j).unwrap();
    let call_entry: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["method"] == "tools/call")
        .unwrap_or_else(|| panic!("no call entry yet:\n{text}"));
    assert_eq!(
        call_entry["answer"]["outcome"], "TOOL_ERROR",
        "{call_entry}"
    );
    assert_eq!(call_entry["executed"], true);
    drop(c.stdin.take());
    assert!(c.wait().unwrap().success());
    let _ = std::fs::remove_file(&j);
}

#[test]
fn exit_mid_call_runs_the_tool_and_ends_the_process_without_an_answer() {
    let j = scratch("exit");
    let mut c = kitchen(&["--scenario", "stdio.exit_mid_call"], &j);
    send(&mut c, initialize());
    send(&mut c, call(2, "increment_counter"));
    let status = c.wait().unwrap();
    assert_eq!(status.code(), Some(3));
    let mut out = String::new();
    std::io::Read::read_to_string(c.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(!out.contains("\"id\":2"), "the call was answered: {out}");
    let text = std::fs::read_to_string(&j).unwrap();
    assert!(
        text.contains("exited after the tool ran") && text.contains("\"CONNECTION_ERROR\""),
        "{text}"
    );
    assert!(text.contains("\"stdioEvent\":\"exited\""), "{text}");
    let _ = std::fs::remove_file(&j);
}

#[test]
fn the_banner_comes_before_any_message() {
    let j = scratch("banner");
    let mut c = kitchen(&["--scenario", "stdio.banner"], &j);
    let mut out = BufReader::new(c.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with("kitchen stdio server ready"), "{line}");
    drop(c.stdin.take());
    assert!(c.wait().unwrap().success());
    let _ = std::fs::remove_file(&j);
}

#[test]
fn http_only_scenarios_and_unbounded_faults_are_refused_by_name() {
    let j = scratch("refused");
    for (args, want) in [
        (
            vec!["--scenario", "sse.cut_mid_event"],
            "is not served over stdio",
        ),
        (
            vec![
                "--scenario",
                "stdio.slow_answer",
                "--params",
                r#"{"delayMs":9999999}"#,
            ],
            "delayMs",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
            .args(["kitchen", "--stdio", "--journal"])
            .arg(&j)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(want),
            "{args:?}: {err}"
        );
    }
    let _ = std::fs::remove_file(&j);
}

#[test]
fn an_input_round_reaches_the_client_while_the_call_waits() {
    let j = scratch("elicit");
    let mut c = kitchen(&["--scenario", "elicitation.approval"], &j);
    let mut out = BufReader::new(c.stdout.take().unwrap());
    let mut line = String::new();
    let mut init = initialize();
    init["params"]["capabilities"] = json!({ "elicitation": {} });
    send(&mut c, init);
    out.read_line(&mut line).unwrap();
    send(
        &mut c,
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    );
    send(&mut c, call(2, "run_configured_test_scenario"));
    // The server's question comes first; the call's answer only after ours.
    line.clear();
    out.read_line(&mut line).unwrap();
    let ask: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(ask["method"], "elicitation/create", "{line}");
    send(
        &mut c,
        json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"decline"}}),
    );
    line.clear();
    out.read_line(&mut line).unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["id"], 2, "{line}");
    drop(c.stdin.take());
    assert!(c.wait().unwrap().success());
    let _ = std::fs::remove_file(&j);
}

#[test]
fn a_catalog_change_reaches_the_stdio_client_as_a_notification() {
    let j = scratch("catalog");
    let mut c = kitchen(
        &[
            "--scenario",
            "catalog.mutation",
            "--params",
            r#"{"mutations":[{"action":"add","toolName":"extra_tool","afterMs":300}]}"#,
        ],
        &j,
    );
    let mut out = BufReader::new(c.stdout.take().unwrap());
    let mut line = String::new();
    send(&mut c, initialize());
    out.read_line(&mut line).unwrap();
    send(
        &mut c,
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    );
    send(&mut c, call(2, "run_configured_test_scenario"));
    let mut seen = Vec::new();
    for _ in 0..2 {
        line.clear();
        out.read_line(&mut line).unwrap();
        seen.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    assert!(
        seen.iter()
            .any(|m| m["method"] == "notifications/tools/list_changed"),
        "{seen:?}"
    );
    drop(c.stdin.take());
    let _ = c.wait();
    let _ = std::fs::remove_file(&j);
}
