//! The client commands as a user runs them: `call`, `list`, `probe` and `demo` in a real
//! process against an in-process kitchen, exit codes, JSON output, reports, `--log`,
//! `--config` and `--stdio`; and `call`'s refusal of a tool whose inputSchema breaks the
//! 2026-07-28 `x-mcp-header` rules, against a tiny axum server that lists such a tool and
//! counts the calls it gets (so a refusal is told from a call that happened).

mod common;

use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use mcp_triage_kitchen::{start, KitchenOptions};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .args(args)
        .env_remove("MCP_TRIAGE_BEARER")
        .output()
        .expect("mcp-triage runs")
}

/// A runtime and a kitchen with default options on a free loopback port.
fn runtime_and_kitchen() -> (tokio::runtime::Runtime, mcp_triage_kitchen::KitchenHandle) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let k = rt
        .block_on(start(
            "127.0.0.1:0".parse().unwrap(),
            KitchenOptions::default(),
        ))
        .unwrap();
    (rt, k)
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// `(testcase elements, their <failure> elements, the root's tests= and failures=)` of a JUnit
/// file, by a real XML parse: a malformed file fails the test.
fn junit_counts(xml: &str) -> (usize, usize, String, String) {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let (mut cases, mut failures) = (0, 0);
    let (mut tests, mut failed) = (String::new(), String::new());
    loop {
        match reader.read_event().expect("well-formed JUnit XML") {
            Event::Start(e) | Event::Empty(e) => match e.name().as_ref() {
                b"testcase" => cases += 1,
                b"failure" => failures += 1,
                b"testsuites" => {
                    for a in e.attributes() {
                        let a = a.expect("well-formed attribute");
                        let v = a.unescape_value().unwrap().into_owned();
                        match a.key.as_ref() {
                            b"tests" => tests = v,
                            b"failures" => failed = v,
                            _ => {}
                        }
                    }
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    (cases, failures, tests, failed)
}

#[test]
fn demo_matrix_all_rows_match() {
    let dir = std::env::temp_dir().join(format!("mcp-triage-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (junit, html) = (dir.join("demo.xml"), dir.join("demo.html"));
    let o = run(&[
        "demo",
        "--report",
        &format!("junit:{}", junit.display()),
        "--report",
        &format!("html:{}", html.display()),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 0, "{out}\n{err}");
    assert!(err.contains("rows match"), "{err}");
    assert!(
        out.contains("chaos.mix") && out.contains("expected"),
        "{out}"
    );
    assert!(!out.contains('✗'));
    // One testcase per scenario × era row of the matrix (its lines minus the header).
    let rows = out.lines().count() - 1;
    let (cases, failures, tests, failed) = junit_counts(&std::fs::read_to_string(&junit).unwrap());
    assert_eq!(cases, rows);
    assert_eq!(tests, rows.to_string());
    assert_eq!((failures, failed.as_str()), (0, "0"));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("chaos.mix"), "the HTML names the rows");
    assert!(
        page.contains(&format!(">{rows}<")),
        "the HTML shows the row count {rows}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `demo --kitchen URL` runs the plan's rows against a kitchen that runs elsewhere (here: one on
/// this test's runtime), and refuses a URL
/// with a path instead of silently doubling it.
#[test]
fn demo_runs_against_an_external_kitchen() {
    let (_rt, k) = runtime_and_kitchen();
    let base = k.base_url();
    let o = run(&[
        "demo",
        "--kitchen",
        &format!("{base}/"),
        "--instance-prefix",
        "ext-",
        "--only",
        "errors.tool_error",
        "--format",
        "json",
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let records: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2, "both eras of errors.tool_error");
    // the record's target is the URL without its query, so the instance name is not in it
    for r in &records {
        assert_eq!(r["outcome"], "TOOL_ERROR");
        let target = r["target"].as_str().unwrap();
        assert_eq!(target, format!("{base}/s/errors.tool_error/mcp"));
    }
    let o = run(&["demo", "--kitchen", &format!("{base}/mcp")]);
    assert_eq!(code(&o), 2, "a base URL with a path is a usage error");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--kitchen") && err.contains("no path"),
        "{err}"
    );
}

#[test]
fn call_and_list_against_the_kitchen() {
    let (rt, k) = runtime_and_kitchen();
    let base = k.base_url();
    let dir = std::env::temp_dir().join(format!("mcp-triage-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("calls.jsonl");
    let log_s = log.to_str().unwrap();

    // Success, JSON output, appended to the log.
    let url = format!("{base}/s/baseline/mcp");
    let o = run(&[
        "call",
        &url,
        "read_counter",
        "--format",
        "json",
        "--log",
        log_s,
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let rec: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rec["outcome"], "TOOL_SUCCESS");
    assert_eq!(rec["protocolVersion"], "2026-07-28");
    // Tool error → 6, JSON-RPC error (unknown tool) → 4, unanswered input → 5.
    let o = run(&[
        "call",
        &format!("{base}/s/errors.tool_error/mcp"),
        "run_configured_test_scenario",
        "--log",
        log_s,
    ]);
    assert_eq!(code(&o), 6);
    assert!(String::from_utf8_lossy(&o.stdout).contains("application / TOOL_ERROR"));
    assert_eq!(code(&run(&["call", &url, "no_such_tool"])), 4);
    assert_eq!(
        code(&run(&[
            "call",
            &format!("{base}/s/elicitation.approval/mcp"),
            "run_configured_test_scenario"
        ])),
        5
    );
    // Answered: success, in the legacy era too.
    let answer = r#"elicitation/create={"action":"accept","content":{"reason":"ok"}}"#;
    for v in ["2026-07-28", "2025-11-25"] {
        let o = run(&[
            "call",
            &format!("{base}/s/elicitation.approval/mcp"),
            "run_configured_test_scenario",
            "--answer",
            answer,
            "--protocol-version",
            v,
        ]);
        assert_eq!(code(&o), 0, "{v}: {}", String::from_utf8_lossy(&o.stdout));
    }
    // Transport: 401 without the token → 3; with --bearer → 0.
    let auth = format!("{base}/s/auth.oauth_challenge/mcp");
    assert_eq!(code(&run(&["call", &auth, "read_counter"])), 3);
    assert_eq!(
        code(&run(&[
            "call",
            &auth,
            "read_counter",
            "--bearer",
            "kitchen-token"
        ])),
        0
    );
    let lines = std::fs::read_to_string(&log).unwrap();
    assert_eq!(lines.lines().count(), 2);
    assert!(lines
        .lines()
        .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));
    assert!(!lines.contains("kitchen-token"));

    // --config in both shapes.
    let cfg = dir.join("mcp.json");
    std::fs::write(
        &cfg,
        format!(r#"{{"mcpServers":{{"k":{{"url":"{url}"}}}}}}"#),
    )
    .unwrap();
    let o = run(&[
        "call",
        "--config",
        cfg.to_str().unwrap(),
        "--server",
        "k",
        "read_counter",
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(
        &cfg,
        format!(r#"{{"servers":{{"k":{{"type":"http","url":"{url}"}}}}}}"#),
    )
    .unwrap();
    assert_eq!(
        code(&run(&[
            "list",
            "--config",
            cfg.to_str().unwrap(),
            "--server",
            "k"
        ])),
        0
    );

    // list shows annotations after each signature.
    let o = run(&["list", &url]);
    assert_eq!(code(&o), 0);
    assert!(String::from_utf8_lossy(&o.stdout).contains("read_counter() [read-only, idempotent]"));
    // probe: both eras, the read-only tool called, a clean tool list.
    let probe_xml = dir.join("probe.xml");
    let o = run(&[
        "probe",
        &url,
        "--call-read-only",
        "--format",
        "json",
        "--report",
        &format!("junit:{}", probe_xml.display()),
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stdout));
    let p: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The report: a testcase per era, capability and tool, plus one per read-only call and
    // one per behaviour check; none fails.
    let xml = std::fs::read_to_string(&probe_xml).unwrap();
    let (cases, failures, _, _) = junit_counts(&xml);
    let tools = p["tools"].as_array().unwrap();
    let called = tools.iter().filter(|t| t.get("call").is_some()).count();
    let caps = p["capabilities"].as_object().map_or(0, |c| c.len());
    let checks = p["checks"].as_array().unwrap().len();
    assert_eq!(checks, 4);
    assert_eq!(cases, 2 + caps + tools.len() + called + checks);
    assert_eq!(failures, 0);
    assert!(xml.contains(r#"classname="probe: "#) && xml.contains("tool read_counter"));
    assert_eq!(p["eras"]["2026-07-28"]["supported"], true);
    assert_eq!(
        p["eras"]["legacy (initialize 2025-11-25)"]["negotiated"],
        "2025-11-25"
    );
    let read = p["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "read_counter")
        .unwrap();
    assert_eq!(read["call"]["outcome"], "TOOL_SUCCESS");
    assert!(p["tools"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["problems"].as_array().unwrap().is_empty()));
    rt.block_on(k.shutdown());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 24 item 4: `list` shows each tool's arguments as a signature from its inputSchema
/// (required first, `?` for optional, enums, nested objects and local `$ref`s), with the
/// description on the next line, so a first `call --arg` needs no `--format json`.
/// `call` against a kitchen that compresses every answer (`contentEncoding`), in each coding
/// the core decodes, JSON and SSE, both protocol eras, directly and through `mcp-triage proxy`:
/// the client sends no Accept-Encoding (reqwest without its decoding features) and reads the
/// compressed answer through the core's classifier, and the proxy records the decoded verdict.
#[test]
fn call_reads_compressed_answers_directly_and_through_the_proxy() {
    let (_rt, k) = runtime_and_kitchen();
    let base = k.base_url();
    let dir = std::env::temp_dir().join(format!("mcp-triage-coded-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("proxy.jsonl");
    let _ = std::fs::remove_file(&log);
    let proxy = common::start_proxy(&base, &[std::ffi::OsStr::new("--log"), log.as_os_str()]);
    let via = format!("http://{}", proxy.addr);
    let cases = [
        ("gzip", "json", "2026-07-28"),
        ("br", "sse", "2026-07-28"),
        ("zstd", "json", "2025-11-25"),
        ("deflate", "sse", "2025-11-25"),
    ];
    let mut through_proxy = 0;
    for (coding, mode, version) in cases {
        for (side, server) in [("direct", &base), ("proxy", &via)] {
            // an instance per side: errors.tool_error fails the first call of its instance
            let query = format!(
                "contentEncoding={coding}&responseMode={mode}&instance={side}-{coding}-{mode}"
            );
            let url = format!("{server}/s/baseline/mcp?{query}");
            let o = run(&[
                "call",
                &url,
                "read_counter",
                "--format",
                "json",
                "--protocol-version",
                version,
            ]);
            let out = String::from_utf8_lossy(&o.stdout);
            assert_eq!(code(&o), 0, "{coding} {mode} {version} {side}: {out}");
            let rec: Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(rec["outcome"], "TOOL_SUCCESS", "{coding} {mode}: {rec}");
            let err = format!("{server}/s/errors.tool_error/mcp?{query}");
            let o = run(&[
                "call",
                &err,
                "run_configured_test_scenario",
                "--protocol-version",
                version,
            ]);
            assert_eq!(
                code(&o),
                6,
                "{coding} {mode} {version}: a tool error, decoded"
            );
            through_proxy += usize::from(server == &via);
        }
    }
    let (status, stderr) = common::stop(proxy);
    assert!(status.success(), "{stderr}");
    let text = std::fs::read_to_string(&log).unwrap();
    let outcomes: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["method"] == "tools/call")
        .map(|r| r["outcome"].as_str().unwrap_or("").to_string())
        .collect();
    let want: Vec<&str> = ["TOOL_SUCCESS", "TOOL_ERROR"].repeat(through_proxy);
    assert_eq!(outcomes, want, "{text}");
}

#[test]
fn list_shows_each_tools_arguments() {
    let (rt, k) = runtime_and_kitchen();
    let url = format!("{}/s/baseline/mcp", k.base_url());
    let o = run(&["list", &url]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 0, "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<&str> = out.lines().collect();
    let set = lines
        .iter()
        .position(|l| l.trim_start().starts_with("set_value("))
        .unwrap_or_else(|| panic!("no set_value line: {out}"));
    assert_eq!(
        lines[set].trim(),
        "set_value(key: string, value: any) [idempotent, destructive]"
    );
    assert!(
        lines[set + 1]
            .trim()
            .starts_with("Stores `value` under `key`"),
        "the description follows: {out}"
    );
    for expected in [
        "  increment_counter(by?: integer) [destructive]",
        "  test_sampling(prompt: string)",
        "  test_simple_text()",
        "address?: {city?: string, street?: string}",
        "contactMethod?: \"phone\"|\"email\"",
    ] {
        assert!(out.contains(expected), "{expected:?} in {out}");
    }
    rt.block_on(k.shutdown());
}

/// A 404 to the very first request (no session yet) is a wrong URL; only a 404 in a session
/// means the session expired (issue 24, item 3).
#[test]
fn a_404_before_any_session_names_the_url_not_an_expired_session() {
    let (_rt, k) = runtime_and_kitchen();
    let url = format!("{}/no/such/endpoint", k.base_url());
    for era in [&[][..], &["--protocol-version", "2025-11-25"][..]] {
        let mut args = vec!["call", &url, "read_counter"];
        args.extend_from_slice(era);
        let o = run(&args);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_ne!(code(&o), 0, "{out}");
        assert!(out.contains("404"), "{out}");
        assert!(out.contains("endpoint URL is wrong"), "{out}");
        assert!(!out.contains("expired"), "{out}");
    }
}

/// INVALID_TOOL_RESULT's summary names why the result is broken, then the tool's text as
/// such (issue 24, item 3): the data alone did not say what was wrong with it.
#[test]
fn an_invalid_tool_result_shows_the_reason_as_its_detail() {
    let (_rt, k) = runtime_and_kitchen();
    let url = format!("{}/s/compat.output_schema_mismatch/mcp", k.base_url());
    let o = run(&["call", &url, "run_configured_test_scenario"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("INVALID_TOOL_RESULT"), "{out}");
    let detail = out
        .lines()
        .find(|l| l.starts_with("detail: "))
        .unwrap_or("");
    assert!(detail.contains("does not match the outputSchema"), "{out}");
    let text = out
        .lines()
        .find(|l| l.starts_with("tool text: "))
        .unwrap_or("");
    assert!(text.contains("compat.output_schema_mismatch"), "{out}");
}

/// A stdio server that dies before answering: `list` shows its last stderr lines as `call`
/// does (issue 24, item 3), since they usually say why.
#[test]
fn list_shows_a_dying_stdio_servers_stderr() {
    // A traceback reads by its indentation: it is kept (issue 46, item 6).
    let server = "sh -c 'echo fatal: no config file >&2; printf \"  File x.py, line 3\\n    raise Boom\\n\" >&2; exit 3'";
    let o = run(&["list", "--stdio", server]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(&o), 3, "{err}");
    assert!(err.contains("CONNECTION_ERROR"), "{err}");
    assert!(err.contains("server stderr (last lines):"), "{err}");
    assert!(err.contains("| fatal: no config file"), "{err}");
    assert!(
        err.contains("  |   File x.py, line 3\n  |     raise Boom\n"),
        "{err}"
    );
}

/// `probe` of a server that never lists its tools: the failure once, the server's stderr,
/// no "0 problem(s)" that reads as a clean result, exit 3 as docs/commands/probe.md says
/// (issue 24, item 3). Over HTTP, the era probes that failed the same way say so instead of
/// repeating the failure.
#[test]
fn probe_of_a_server_that_lists_nothing_says_so_once() {
    let o = run(&[
        "probe",
        "--stdio",
        "sh -c 'echo fatal: no config file >&2; exit 3'",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 3, "{out}");
    assert_eq!(out.matches("CONNECTION_ERROR").count(), 1, "{out}");
    assert!(out.contains("| fatal: no config file"), "{out}");
    assert!(!out.contains("0 problem(s)"), "{out}");
    assert!(out.contains("tools/list was not checked"), "{out}");

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let o = run(&["probe", &format!("http://127.0.0.1:{port}/mcp")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 3, "{out}");
    assert_eq!(out.matches("Connection refused").count(), 1, "{out}");
    assert!(!out.contains("0 problem(s)"), "{out}");
}

/// A task's end gets the verdict the same answer to `tools/call` would get (issue 25, item 3):
/// a completed task carrying an `isError` result is a tool error, a failed task carries the
/// JSON-RPC error it failed with. Before, the client called every failed task a tool error.
#[test]
fn a_tasks_end_is_judged_by_what_it_carries() {
    let (_rt, k) = runtime_and_kitchen();
    let url = format!("{}/mcp", k.base_url());
    let o = run(&["call", &url, "protocol_error_job", "--task"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 4, "{out}");
    assert!(out.contains("protocol / JSONRPC_ERROR"), "{out}");
    assert!(out.contains("[poll]"), "{out}");
    let o = run(&["call", &url, "failing_job", "--task"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 6, "{out}");
    assert!(out.contains("application / TOOL_ERROR"), "{out}");
    let o = run(&["call", &url, "slow_compute", "--task"]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn stdio_and_usage_errors() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../mcp-triage-client/tests/fixtures/sh_server.sh"
    );
    let o = run(&[
        "call",
        "--stdio",
        &format!("sh {script} ok"),
        "echo",
        "--format",
        "json",
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let rec: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rec["transport"], "stdio");
    // Usage: 2.
    assert_eq!(
        code(&run(&[
            "call",
            "http://127.0.0.1:9/mcp",
            "t",
            "--args",
            "[1]"
        ])),
        2
    );
    assert_eq!(code(&run(&["call", "not-a-url", "t"])), 2);
    assert_eq!(code(&run(&["call", "--stdio", "sh 'x", "t"])), 2);
    assert_eq!(
        code(&run(&[
            "call",
            "http://127.0.0.1:9/mcp",
            "t",
            "--answer",
            "nojson"
        ])),
        2
    );
    // Connection refused on a port nobody listens on: transport, 3.
    let o = run(&[
        "call",
        "http://127.0.0.1:9/mcp",
        "t",
        "--max-retries",
        "0",
        "--no-list",
    ]);
    assert_eq!(code(&o), 3, "{}", String::from_utf8_lossy(&o.stdout));
}

/// Answers `tools/list` with one good and one bad tool, `tools/call` with a text result
/// (counted), `initialize` at 2025-11-25, any other request with `{}`, notifications with 202.
async fn mcp(State(calls): State<Arc<AtomicUsize>>, Json(msg): Json<Value>) -> Response {
    let Some(id) = msg.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match msg["method"].as_str().unwrap_or("") {
        "initialize" => json!({ "protocolVersion": "2025-11-25", "capabilities": { "tools": {} },
            "serverInfo": { "name": "bad-headers", "version": "0" } }),
        "tools/list" => json!({ "tools": [
            { "name": "good", "inputSchema": { "type": "object", "properties": {
                "region": { "type": "string", "x-mcp-header": "Region" } } } },
            { "name": "bad", "inputSchema": { "type": "object", "properties": {
                "amount": { "type": "number", "x-mcp-header": "Amount" } } } }
        ] }),
        "tools/call" => {
            calls.fetch_add(1, Ordering::SeqCst);
            json!({ "content": [{ "type": "text", "text": "ran" }] })
        }
        _ => json!({}),
    };
    Json(json!({ "jsonrpc": "2.0", "id": id, "result": result })).into_response()
}

/// A server that answers the first `tools/call` with a 503 (`Connection: close`,
/// `Retry-After: 1`) and is gone after it: the resends cannot connect, and "tools/call sent"
/// counts only the one that left (issue 46, item 6).
#[test]
fn resends_that_never_connected_are_not_counted_as_sent() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (gone_tx, mut gone_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let app = Router::new().route(
        "/mcp",
        post(move |Json(msg): Json<Value>| {
            let gone = gone_tx.clone();
            async move {
                let id = msg["id"].clone();
                if msg["method"] == "tools/call" {
                    let _ = gone.send(());
                    return (
                        StatusCode::SERVICE_UNAVAILABLE,
                        [("retry-after", "1"), ("connection", "close")],
                        "down for maintenance",
                    )
                        .into_response();
                }
                let tools = json!({ "tools": [{ "name": "look", "inputSchema": { "type": "object" },
                    "annotations": { "readOnlyHint": true } }] });
                Json(json!({ "jsonrpc": "2.0", "id": id, "result": tools })).into_response()
            }
        }),
    );
    let server = rt.spawn(async move { axum::serve(listener, app).await });
    // The first 503 takes the server (and its listening socket) away.
    rt.spawn(async move {
        gone_rx.recv().await;
        server.abort();
    });
    let o = run(&[
        "call",
        &url,
        "look",
        "--max-retries",
        "2",
        "--format",
        "json",
    ]);
    let r: Value = serde_json::from_slice(&o.stdout).expect("a JSON record");
    assert_eq!(r["attempts"].as_array().map(Vec::len), Some(3), "{r}");
    assert_eq!(r["postCount"], 1, "{r}");
    assert_eq!(r["outcome"], "CONNECTION_ERROR", "{r}");
}

#[test]
fn call_refuses_a_tool_with_an_invalid_x_mcp_header() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let app = Router::new()
        .route("/mcp", post(mcp))
        .with_state(calls.clone());
    let server = rt.spawn(async move { axum::serve(listener, app).await });

    // Refused: exit 2, the tool and the broken rule named, nothing called.
    let o = run(&["call", &url, "bad", "--arg", "amount=1.5"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("\"bad\"") && err.contains("x-mcp-header"),
        "{err}"
    );
    assert!(
        err.contains("only string, integer and boolean can be headers"),
        "{err}"
    );
    assert!(err.contains("--allow-invalid-tool"), "{err}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // Called: a valid tool; the bad one with --allow-invalid-tool; the bad one at 2025-11-25,
    // where x-mcp-header means nothing. Each call reaches the server exactly once.
    let called: [&[&str]; 3] = [
        &["good", "--arg", "region=eu"],
        &["bad", "--arg", "amount=1.5", "--allow-invalid-tool"],
        &[
            "bad",
            "--arg",
            "amount=1.5",
            "--protocol-version",
            "2025-11-25",
        ],
    ];
    for (n, extra) in called.into_iter().enumerate() {
        let o = run(&[&["call", url.as_str()], extra].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {err}");
        assert_eq!(calls.load(Ordering::SeqCst), n + 1, "{extra:?}");
    }
    server.abort();
}

/// OAuth through the CLI, and the canary: `call` against the kitchen's `auth.oauth_challenge`
/// (whose metadata names the test authorization server) authorizes by following the
/// auto-approving redirect, caches the token in `--token-store`, and the token strings appear
/// nowhere in stdout (the record), stderr, or the `--log` file; the second `call` reuses the
/// cache. `--no-oauth` leaves the 401 as it was (exit 3: a transport/HTTP failure).
#[test]
fn call_authorizes_with_oauth_and_never_prints_a_token() {
    use mcp_triage_kitchen::testing_oauth::{TestAs, TestAsOptions};
    const ACCESS: &str = "cli-canary-access-90b1";
    const REFRESH: &str = "cli-canary-refresh-4c7e";
    let (rt, k) = runtime_and_kitchen();
    let auth = rt.block_on(TestAs::start(TestAsOptions {
        access_tokens: vec![ACCESS.into()],
        refresh_token: Some(REFRESH.into()),
        expires_in: 3600,
        refreshed_expires_in: None,
    }));
    k.kitchen()
        .set_selection(
            "auth.oauth_challenge",
            json!({ "token": ACCESS, "authorizationServer": auth.url }),
        )
        .unwrap();
    let dir = std::env::temp_dir().join(format!("mcp-triage-cli-oauth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("tokens.json");
    let log = dir.join("calls.jsonl");
    let url = k.mcp_url();
    let args = [
        "call",
        url.as_str(),
        "read_counter",
        "--format",
        "json",
        "--authorize",
        "follow",
        "--token-store",
        store.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ];
    for round in 0..2 {
        let o = run(&args);
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert_eq!(code(&o), 0, "round {round}: {err}");
        let rec: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(rec["outcome"], "TOOL_SUCCESS");
        for secret in [ACCESS, REFRESH] {
            assert!(!out.contains(secret), "stdout holds {secret}");
            assert!(!err.contains(secret), "stderr holds {secret}");
        }
    }
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(logged.lines().count(), 2);
    assert!(!logged.contains(ACCESS) && !logged.contains(REFRESH));
    // One authorization for both calls: the second used the cache.
    assert_eq!(auth.seen().authorizations, 1);
    assert!(std::fs::read_to_string(&store).unwrap().contains(ACCESS));
    let o = run(&["call", url.as_str(), "read_counter", "--no-oauth"]);
    assert_eq!(code(&o), 3, "{}", String::from_utf8_lossy(&o.stdout));
    let _ = std::fs::remove_dir_all(&dir);
    drop(auth);
    rt.block_on(k.shutdown());
}

/// Bad OAuth flags are usage errors (exit 2) that name the flag, before any request.
#[test]
fn oauth_flags_are_checked() {
    let url = "http://127.0.0.1:9/mcp";
    let dir = std::env::temp_dir().join(format!("mcp-triage-oauth-flags-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let token_file = dir.join("id.jwt");
    std::fs::write(&token_file, "a.b.c\n").unwrap();
    let empty_file = dir.join("empty.jwt");
    std::fs::write(&empty_file, "\n").unwrap();
    let (token_file, empty_file) = (
        token_file.to_str().unwrap().to_string(),
        empty_file.to_str().unwrap().to_string(),
    );
    for (args, says) in [
        (
            vec!["--grant", "jwt-bearer"],
            "--grant jwt-bearer needs --identity-token-file",
        ),
        (
            vec![
                "--grant",
                "enterprise-managed",
                "--identity-token-file",
                &token_file,
            ],
            "--grant enterprise-managed needs",
        ),
        (
            vec!["--identity-token-file", "/nonexistent/id.jwt"],
            "--identity-token-file /nonexistent/id.jwt",
        ),
        (
            vec!["--identity-token-file", &empty_file],
            "the file is empty",
        ),
        (
            vec![
                "--idp-token-endpoint",
                "http://127.0.0.1:9/token",
                "--idp-client-id",
                "i",
                "--idp-client-secret-env",
                "MCP_TRIAGE_TEST_UNSET_SECRET",
            ],
            "--idp-client-secret-env MCP_TRIAGE_TEST_UNSET_SECRET",
        ),
        (vec!["--dpop", "sometimes"], "auto, always or never"),
        (
            vec![
                "--client-id",
                "c",
                "--client-secret-env",
                "MCP_TRIAGE_TEST_UNSET_SECRET",
            ],
            "--client-secret-env MCP_TRIAGE_TEST_UNSET_SECRET",
        ),
        (
            vec!["--grant", "client-credentials"],
            "--grant client-credentials needs",
        ),
        (
            vec!["--oauth", "--max-authorizations", "0"],
            "--max-authorizations",
        ),
        (
            vec!["--oauth", "--authorize-timeout", "0"],
            "--authorize-timeout",
        ),
        (vec!["--authorize", "sometimes"], "browser, print or follow"),
        (
            vec![
                "--client-id",
                "c",
                "--client-key-file",
                "/nonexistent/key.pem",
            ],
            "--client-key-file /nonexistent/key.pem",
        ),
    ] {
        let mut full = vec!["call", url, "read_counter"];
        full.extend(args.iter().copied());
        let o = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
            .args(&full)
            .env_remove("MCP_TRIAGE_TEST_UNSET_SECRET")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(code(&o), 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("a.b.c"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `tools/call` requests the kitchen's journal holds for `tool`.
fn journaled_calls(k: &mcp_triage_kitchen::KitchenHandle, tool: &str) -> usize {
    k.kitchen()
        .journal()
        .iter()
        .filter(|e| e["method"] == "tools/call" && e["tool"] == tool)
        .count()
}

/// Issue 24, item 2: `call` checks a call against the tools/list it fetched first. An unknown
/// tool is sent (the server answers it) and the advice names it with close names; arguments
/// that break the inputSchema are refused with exit 7 and nothing reaches the kitchen; with
/// `--send-invalid-args` they are sent and the advice names the schema, not "the tool ran".
#[test]
fn call_advice_comes_from_tools_list() {
    let (rt, k) = runtime_and_kitchen();
    let url = format!("{}/s/baseline/mcp", k.base_url());

    let o = run(&["call", &url, "read_countr"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 4, "{out}");
    assert!(
        out.contains("protocol / JSONRPC_ERROR"),
        "the verdict stays: {out}"
    );
    assert!(
        out.contains(r#"next: "read_countr" is not in tools/list (close: "read_counter")"#),
        "{out}"
    );
    assert!(!out.contains("fix the arguments or the method"), "{out}");

    let o = run(&[
        "call",
        &url,
        "set_value",
        "--args",
        r#"{"key":1,"value":2}"#,
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(&o), 7, "{err}");
    assert!(
        err.contains(
            r#"arguments do not match the inputSchema of "set_value" (at /key: expected string)"#
        ),
        "{err}"
    );
    assert!(
        err.contains("nothing was sent") && err.contains("--send-invalid-args"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    assert_eq!(
        journaled_calls(&k, "set_value"),
        0,
        "a refused call is not sent"
    );

    let o = run(&[
        "call",
        &url,
        "set_value",
        "--args",
        r#"{"value":2}"#,
        "--send-invalid-args",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 6, "{out}");
    assert_eq!(journaled_calls(&k, "set_value"), 1, "sent anyway");
    assert!(out.contains("application / TOOL_ERROR"), "{out}");
    assert!(
        out.contains(r#"→ done: arguments do not match the inputSchema of "set_value" (at /key: required but missing)"#),
        "{out}"
    );
    assert!(!out.contains("resending would run it again"), "{out}");
    assert!(!out.contains("the tool ran and failed"), "{out}");

    // JSON output keeps the core's verdict and carries the cause as a warning.
    let o = run(&[
        "call",
        &url,
        "set_value",
        "--args",
        r#"{"value":2}"#,
        "--send-invalid-args",
        "--format",
        "json",
    ]);
    let rec: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rec["outcome"], "TOOL_ERROR");
    assert!(rec["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["code"] == "ARGUMENTS_DO_NOT_MATCH_INPUT_SCHEMA"));
    rt.block_on(k.shutdown());
}

/// Issue 46, item 2: an `--arg` VALUE takes the type the tool's inputSchema asks for when
/// that is only a string (`key=123` is the string "123", and so is an Optional[str] written as
/// anyOf), numbers stay numbers, a quoted string still works; and when the reading still does
/// not fit (a string enum behind a `$ref`), the refusal names the quoting. Needs python3.
#[test]
fn arg_values_take_the_type_of_the_input_schema() {
    let (rt, k) = runtime_and_kitchen();
    let url = format!("{}/s/baseline/mcp", k.base_url());
    let o = run(&[
        "call",
        &url,
        "set_value",
        "--arg",
        "key=123",
        "--arg",
        "value=3",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(&o), 0, "{err}{}", String::from_utf8_lossy(&o.stdout));
    assert_eq!(journaled_calls(&k, "set_value"), 1);
    rt.block_on(k.shutdown());

    let server = sloppy_server("");
    let o = run(&[
        "call",
        "--stdio",
        &server,
        "ship",
        "--arg",
        "zip=02139",
        "--arg",
        "grade=\"2\"",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 0, "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains(r#"tool text: {"grade": "2", "zip": "02139"}"#),
        "{out}"
    );
    let o = run(&["call", "--stdio", &server, "ship", "--arg", "zip=12345"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(r#"tool text: {"zip": "12345"}"#), "{out}");

    let o = run(&[
        "call", "--stdio", &server, "ship", "--arg", "zip=1", "--arg", "grade=2",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(&o), 7, "{err}");
    assert!(
        err.contains(
            r#"--arg read grade=2 as JSON number; to pass it as a string, quote it: --arg 'grade="2"' or --args '{"grade":"2"}'"#
        ),
        "{err}"
    );
}

/// Issue 46, item 3: a call refused before sending (exit 7) still leaves a record, on stdout
/// with `--format json` and in `--log`: `CALL_REFUSED`, no attempts, `postCount` 0, valid
/// against docs/record.schema.json; the kitchen gets no call.
#[test]
fn a_refused_call_prints_and_logs_its_record() {
    let (rt, k) = runtime_and_kitchen();
    let url = format!("{}/s/baseline/mcp", k.base_url());
    let dir = std::env::temp_dir().join(format!("mcp-triage-refused-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("calls.jsonl");
    let args = r#"{"key":1,"value":2}"#;
    let log_arg = log.to_str().unwrap();
    let o = run(&[
        "call",
        &url,
        "set_value",
        "--args",
        args,
        "--format",
        "json",
        "--log",
        log_arg,
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(code(&o), 7, "{err}");
    assert!(err.contains("nothing was sent"), "{err}");
    assert_eq!(
        journaled_calls(&k, "set_value"),
        0,
        "a refused call is not sent"
    );
    let rec: Value = serde_json::from_slice(&o.stdout).expect("a JSON record on stdout");
    let logged = std::fs::read_to_string(&log).expect("the log was written");
    assert_eq!(logged.lines().count(), 1, "{logged}");
    assert_eq!(serde_json::from_str::<Value>(&logged).unwrap(), rec);
    let codes: Vec<&str> = rec["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes[0], "CALL_REFUSED", "{rec}");
    assert!(
        codes.contains(&"ARGUMENTS_DO_NOT_MATCH_INPUT_SCHEMA"),
        "{rec}"
    );
    assert_eq!(rec["postCount"], 0);
    assert_eq!(rec["attempts"], json!([]));
    assert_eq!(rec["tool"], "set_value");
    assert!(
        rec["message"]
            .as_str()
            .unwrap()
            .starts_with("refused before sending: arguments do not match"),
        "{rec}"
    );
    let schema: Value = serde_json::from_str(include_str!("../../../docs/record.schema.json"))
        .expect("the record schema is JSON");
    let invalid = mcp_triage_client::precheck::check_arguments(&schema, &rec).unwrap();
    assert_eq!(invalid, None, "{rec}");
    // Text output keeps the refusal on stderr alone, and still logs the record.
    let o = run(&["call", &url, "set_value", "--args", args, "--log", log_arg]);
    assert_eq!(code(&o), 7);
    assert!(o.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 2);
    let _ = std::fs::remove_dir_all(&dir);
    rt.block_on(k.shutdown());
}

/// A JSON-RPC error code that neither JSON-RPC nor MCP defines (here `0`, as the Python
/// low-level server sends for an exception) gets a warning, not "fix the arguments".
#[test]
fn call_warns_about_a_nonstandard_error_code() {
    let (rt, k) = runtime_and_kitchen();
    let url = format!(
        "{}/s/errors.jsonrpc_error/mcp?code=0&message=ValueError",
        k.base_url()
    );
    let o = run(&["call", &url, "read_counter"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 4, "{out}");
    assert!(
        out.contains("warning NONSTANDARD_ERROR_CODE: JSON-RPC error code 0 is neither"),
        "{out}"
    );
    assert!(
        out.contains("read the message and the server's log"),
        "{out}"
    );
    assert!(!out.contains("fix the arguments"), "{out}");
    rt.block_on(k.shutdown());
}

fn sloppy_server(mode: &str) -> String {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sloppy_server.py"
    );
    format!("python3 '{script}' {mode}")
}

/// Against a stdio server that wraps protocol errors in isError results (as the TypeScript
/// SDK and FastMCP do): a task-only tool called without --task, an unknown tool and a
/// non-standard code each get advice naming the real cause; the verdict stays TOOL_ERROR.
/// Needs python3.
#[test]
fn call_names_the_cause_when_a_server_wraps_errors_in_is_error() {
    let dir = std::env::temp_dir().join(format!("mcp-triage-sloppy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let calls = dir.join("calls.txt");
    let server = sloppy_server("");
    let run_env = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
            .args(args)
            .env("SLOPPY_CALLS", &calls)
            .output()
            .expect("mcp-triage runs")
    };
    let o = run_env(&["call", "--stdio", &server, "deploy"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 6, "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("application / TOOL_ERROR"), "{out}");
    assert!(
        out.contains(r#"next: "deploy" needs --task (its execution.taskSupport is "required"): call it again with --task"#),
        "{out}"
    );
    assert!(!out.contains("resending would run it again"), "{out}");

    let o = run_env(&["call", "--stdio", &server, "lookpu", "--no-list"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 6, "{out}");
    assert!(
        out.contains("wrapped JSON-RPC error -32602 (Invalid params) in an isError result"),
        "without tools/list the tool text still tells: {out}"
    );

    let o = run_env(&["call", "--stdio", &server, "lookup", "--args", r#"{"q":7}"#]);
    assert_eq!(code(&o), 7, "{}", String::from_utf8_lossy(&o.stderr));
    let sent = std::fs::read_to_string(&calls).unwrap_or_default();
    assert_eq!(sent.lines().collect::<Vec<_>>(), ["deploy", "lookpu"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `next:` line of `call`'s text output.
fn next_line(out: &str) -> &str {
    out.lines()
        .find(|l| l.starts_with("next: "))
        .unwrap_or_else(|| panic!("no next: line in\n{out}"))
}

/// Issue 46, defect 4: the advice after a JSON-RPC error follows who caused it. `-32603
/// Internal error` and an implementation-defined `-32001` are the server's (check its logs,
/// resend only a tool safe to run twice), not "fix the arguments or the method"; `-32602`
/// stays the request's. Against the kitchen's `errors.jsonrpc_error`.
#[test]
fn call_advice_after_a_jsonrpc_error_follows_who_caused_it() {
    let (rt, k) = runtime_and_kitchen();
    let next = |query: &str| {
        let url = format!("{}/s/errors.jsonrpc_error/mcp?{query}", k.base_url());
        let o = run(&["call", &url, "run_configured_test_scenario"]);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert_eq!(code(&o), 4, "{out}");
        next_line(&out).to_string()
    };
    let server = "the server failed, not the request: check the server's logs; resend only if \
                  the tool is safe to run twice (--safe-tool, or its annotations), as it may \
                  have acted before it failed.";
    assert_eq!(
        next("code=-32603&message=Internal%20error"),
        format!("next: JSON-RPC error -32603 (Internal error): {server}")
    );
    assert_eq!(
        next("code=-32001&message=Database%20busy"),
        format!("next: JSON-RPC error -32001: {server}")
    );
    assert_eq!(
        next("code=-32602&message=Invalid%20params"),
        "next: JSON-RPC error -32602 (Invalid params): the server refused the arguments, so \
         the tool most likely never ran: fix them against the tool's inputSchema (mcp-triage \
         list); resending unchanged fails the same way."
    );
    rt.block_on(k.shutdown());
}

/// Issue 46, defect 4: when mcp-triage itself refused a server request for want of an answer
/// (a legacy sampling request, a form elicitation), the advice names the `--answer` to give,
/// whether the tool then failed (the kitchen's `elicitation.approval`) or finished without it
/// (the kitchen's `test_sampling`, which says "Sampling not supported").
#[test]
fn call_advice_after_a_refused_server_request_names_the_answer() {
    let (rt, k) = runtime_and_kitchen();
    let legacy = |url: &str, tool: &str, extra: &[&str]| {
        let mut args = vec![
            "call",
            "--no-prompt",
            "--protocol-version",
            "2025-06-18",
            url,
            tool,
        ];
        args.extend_from_slice(extra);
        let o = run(&args);
        (code(&o), String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let url = format!("{}/s/elicitation.approval/mcp", k.base_url());
    let (exit, out) = legacy(&url, "run_configured_test_scenario", &[]);
    assert_eq!(exit, 6, "{out}");
    assert_eq!(
        next_line(&out),
        "next: mcp-triage refused the server's elicitation/create request (no answer was \
         configured); the failure follows from that, not from the tool name or the arguments: \
         call again with --answer elicitation/create=JSON (or --input FILE)."
    );
    let url = format!("{}/mcp", k.base_url());
    let (exit, out) = legacy(&url, "test_sampling", &["--arg", "prompt=hi"]);
    assert_eq!(exit, 0, "{out}");
    assert!(out.contains("warning INPUT_UNANSWERED: the server asked sampling/createMessage"));
    assert_eq!(
        next_line(&out),
        "next: mcp-triage refused the server's sampling/createMessage request (no answer was \
         configured) and the tool finished without it: to give one, call again with --answer \
         sampling/createMessage=JSON (or --input FILE)."
    );
    rt.block_on(k.shutdown());
}

/// Issue 46, defect 4, as reported: a server that wraps errors in isError results (the
/// TypeScript SDK's way: tests/fixtures/sampling_server.py) fails a tool whose sampling request
/// mcp-triage refused with "MCP error -1: User rejected …", and another with "MCP error
/// -32603: Internal error …". Neither is "check the tool name and the arguments"; with the
/// answer given, the call succeeds. Needs python3.
#[test]
fn call_advice_when_a_server_wraps_a_refusal_or_an_internal_error() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sampling_server.py"
    );
    let server = format!("python3 '{script}'");
    let o = run(&["call", "--no-prompt", "--stdio", &server, "summarize"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 6, "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("tool text: MCP error -1: User rejected sampling request"),
        "{out}"
    );
    assert_eq!(
        next_line(&out),
        "next: mcp-triage refused the server's sampling/createMessage request (no answer was \
         configured); the failure follows from that, not from the tool name or the arguments: \
         call again with --answer sampling/createMessage=JSON (or --input FILE)."
    );
    let answer = r#"sampling/createMessage={"role":"assistant","content":{"type":"text","text":"Paris"},"model":"m","stopReason":"endTurn"}"#;
    let o = run(&["call", "--stdio", &server, "summarize", "--answer", answer]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 0, "{out}");
    assert_eq!(next_line(&out), "next: nothing to do.");

    let o = run(&["call", "--stdio", &server, "crash"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 6, "{out}");
    assert_eq!(
        next_line(&out),
        "next: the server wrapped JSON-RPC error -32603 (Internal error) in an isError result: \
         the server failed, not the request: check the server's logs; resend only if the tool \
         is safe to run twice (--safe-tool, or its annotations), as it may have acted before \
         it failed."
    );
}

/// The probe's behaviour checks as JSON: check name → (status, detail).
fn checks(probe_json: &[u8]) -> std::collections::BTreeMap<String, (String, String)> {
    let p: Value = serde_json::from_slice(probe_json).expect("probe JSON");
    p["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (s("check"), (s("status"), s("detail")))
        })
        .collect()
}

/// Issue 24, item 4: the kitchen passes the probe's behaviour checks in both eras: an unknown
/// tool gets -32602, a made-up session id 404; it has no read-only tool whose schema arguments
/// can break, so that check is skipped and says why.
#[test]
fn probe_checks_pass_against_the_kitchen() {
    let (rt, k) = runtime_and_kitchen();
    let url = format!("{}/s/baseline/mcp", k.base_url());
    for era in [&[][..], &["--protocol-version", "2025-11-25"][..]] {
        let o = run(&[&["probe", url.as_str(), "--format", "json"], era].concat());
        assert_eq!(
            code(&o),
            0,
            "{era:?}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        // Both eras name the capabilities: from initialize, or from server/discover at
        // 2026-07-28, which has no handshake.
        let p: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(p["capabilities"]["tools"].is_object(), "{era:?}: {p}");
        let c = checks(&o.stdout);
        assert_eq!(c["unknown tool"].0, "pass", "{c:?}");
        assert!(c["unknown tool"].1.contains("-32602"), "{c:?}");
        assert_eq!(c["unknown session id"].0, "pass", "{c:?}");
        assert!(c["unknown session id"].1.contains("HTTP 404"), "{c:?}");
        assert_eq!(c["error codes"].0, "pass", "{c:?}");
        assert_eq!(c["invalid arguments"].0, "skip", "{c:?}");
        assert!(c["invalid arguments"].1.contains("readOnlyHint"), "{c:?}");
    }
    // --no-checks: no checks in the output, no tools/call sent.
    let o = run(&["probe", url.as_str(), "--format", "json", "--no-checks"]);
    assert_eq!(code(&o), 0);
    let p: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(p.get("checks").is_none(), "{p}");
    // Only the generated unknown name was called (once per era): no catalogue tool ran.
    let called: Vec<Value> = k
        .kitchen()
        .journal()
        .into_iter()
        .filter(|e| e["method"] == "tools/call")
        .collect();
    assert_eq!(called.len(), 2, "{called:?}");
    assert!(called
        .iter()
        .all(|e| e["tool"] == "mcp-triage-probe-no-such-tool"));
    rt.block_on(k.shutdown());
}

/// Against the stdio server that wraps errors in isError results (2025-06-18): the invalid
/// arguments (sent to the read-only `lookup` only) are a problem, and in the "zero" mode the
/// code 0 is; the unknown tool's isError result is a note (SEP-2145); tools with side effects
/// are never called. Needs python3.
#[test]
fn probe_checks_flag_is_error_answers_and_nonstandard_codes() {
    let dir = std::env::temp_dir().join(format!("mcp-triage-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let calls = dir.join("calls.txt");
    let probe = |mode: &str| {
        Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
            .args(["probe", "--stdio", &sloppy_server(mode), "--format", "json"])
            .env("SLOPPY_CALLS", &calls)
            .output()
            .expect("mcp-triage runs")
    };
    let o = probe("");
    assert_eq!(code(&o), 4, "{}", String::from_utf8_lossy(&o.stderr));
    let c = checks(&o.stdout);
    assert_eq!(c["unknown tool"].0, "note", "{c:?}");
    assert!(c["unknown tool"].1.contains("isError"), "{c:?}");
    assert_eq!(c["invalid arguments"].0, "problem", "{c:?}");
    assert!(
        c["invalid arguments"]
            .1
            .contains("at /q: required but missing")
            && c["invalid arguments"].1.contains("2025-06-18"),
        "{c:?}"
    );
    assert_eq!(c["unknown session id"].0, "skip", "{c:?}");

    let o = probe("zero");
    assert_eq!(code(&o), 4);
    let c = checks(&o.stdout);
    assert_eq!(c["error codes"].0, "problem", "{c:?}");
    assert!(
        c["error codes"].1.starts_with("0 (invalid arguments)"),
        "{c:?}"
    );
    assert_eq!(c["invalid arguments"].0, "note", "{c:?}");

    let sent = std::fs::read_to_string(&calls).unwrap();
    assert!(
        sent.lines()
            .all(|t| t == "lookup" || t == "mcp-triage-probe-no-such-tool"),
        "{sent}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 46, item 5: a server that answers as the official reference servers do (2025-11-25,
/// an unknown tool and bad arguments both as isError results) passes `probe`: exit 0, the
/// unknown tool a note naming SEP-2145, so `probe` in CI fails only a broken server.
/// Needs python3.
#[test]
fn probe_passes_a_server_answering_an_unknown_tool_as_is_error() {
    let o = run(&[
        "probe",
        "--stdio",
        &sloppy_server("reference"),
        "--format",
        "json",
    ]);
    let c = checks(&o.stdout);
    assert_eq!(code(&o), 0, "{c:?}\n{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(c["unknown tool"].0, "note", "{c:?}");
    assert!(c["unknown tool"].1.contains("SEP-2145"), "{c:?}");
    assert_eq!(c["invalid arguments"].0, "pass", "{c:?}");
    let o = run(&["probe", "--stdio", &sloppy_server("reference")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 0, "{out}");
    assert!(out.contains("check unknown tool: note"), "{out}");
    assert!(out.contains("0 problem(s) in the checks"), "{out}");
}

/// A legacy server that answers any request without its session id with 400, a made-up one
/// included (a common Streamable HTTP server bug).
async fn session_400(headers: axum::http::HeaderMap, Json(msg): Json<Value>) -> Response {
    let id = msg.get("id").cloned();
    if msg["method"] == "initialize" {
        let result = json!({ "protocolVersion": "2025-11-25", "capabilities": { "tools": {} },
            "serverInfo": { "name": "session-400", "version": "0" } });
        let body = json!({ "jsonrpc": "2.0", "id": id, "result": result });
        return ([("mcp-session-id", "s-1")], Json(body)).into_response();
    }
    if headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) != Some("s-1") {
        return (StatusCode::BAD_REQUEST, "Bad Request: No valid session ID").into_response();
    }
    let Some(id) = id else {
        return StatusCode::ACCEPTED.into_response();
    };
    let body = match msg["method"].as_str().unwrap_or("") {
        "tools/list" => json!({ "jsonrpc": "2.0", "id": id, "result": { "tools": [] } }),
        "tools/call" => json!({ "jsonrpc": "2.0", "id": id,
            "error": { "code": -32602, "message": "Unknown tool" } }),
        _ => json!({ "jsonrpc": "2.0", "id": id, "result": {} }),
    };
    Json(body).into_response()
}

/// The session check fails against a server that answers a made-up session id with 400.
#[test]
fn probe_flags_a_400_for_an_unknown_session() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let app = Router::new().route("/mcp", post(session_400));
    let server = rt.spawn(async move { axum::serve(listener, app).await });
    let o = run(&["probe", &url, "--format", "json"]);
    assert_eq!(code(&o), 4, "{}", String::from_utf8_lossy(&o.stdout));
    let c = checks(&o.stdout);
    assert_eq!(c["unknown session id"].0, "problem", "{c:?}");
    assert!(
        c["unknown session id"].1.contains("HTTP 400")
            && c["unknown session id"].1.contains("MUST answer 404"),
        "{c:?}"
    );
    assert_eq!(c["unknown tool"].0, "pass", "{c:?}");
    let o = run(&["probe", &url]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("check unknown session id: problem"), "{out}");
    assert!(out.contains("1 problem(s) in the checks"), "{out}");
    server.abort();
}

/// The kitchen's journal entries of `method`.
fn journaled(k: &mcp_triage_kitchen::KitchenHandle, method: &str) -> usize {
    k.kitchen()
        .journal_entries()
        .unwrap()
        .iter()
        .filter(|e| e.method.as_deref() == Some(method))
        .count()
}

/// Issue 25, item 2: a task the client stops waiting for is cancelled, not abandoned. Past
/// `--task-timeout` the record is a `TIMEOUT` (exit 3) with `TASK_CANCELLED`; on Ctrl-C
/// (SIGINT) the task is cancelled, the record printed and the exit status is 130.
#[test]
fn a_task_is_cancelled_at_the_deadline_and_on_ctrl_c() {
    let (_rt, k) = runtime_and_kitchen();
    let url = format!("{}/mcp", k.base_url());
    let args = [
        "call",
        &url,
        "slow_compute",
        "--task",
        "--arg",
        "seconds=30",
    ];
    let mut deadline = args.to_vec();
    deadline.extend(["--task-timeout", "0.6", "--format", "json"]);
    let o = run(&deadline);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 3, "{out}");
    let rec: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(rec["outcome"], "TIMEOUT", "{out}");
    let kinds: Vec<&str> = rec["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"cancel") && kinds.contains(&"poll"),
        "{kinds:?}"
    );
    assert!(rec["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["code"] == "TASK_CANCELLED"));
    assert_eq!(journaled(&k, "tasks/cancel"), 1);

    let mut sigint = args.to_vec();
    sigint.extend(["--format", "json"]);
    let child = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .args(&sigint)
        .env_remove("MCP_TRIAGE_BEARER")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let polls_before = journaled(&k, "tasks/get");
    for _ in 0..500 {
        if journaled(&k, "tasks/get") > polls_before {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        journaled(&k, "tasks/get") > polls_before,
        "the task was never polled"
    );
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 130, "{out}");
    assert_eq!(journaled(&k, "tasks/cancel"), 2, "{out}");
    let rec: Value = serde_json::from_str(out.trim()).unwrap();
    let w = rec["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "TASK_CANCELLED")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(w["detail"].as_str().unwrap().contains("SIGINT"), "{out}");

    // Without a task there is nothing to cancel: Ctrl-C stops the call at once, exit 130.
    let child = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .args(["call", &url, "slow_compute", "--arg", "seconds=30"])
        .env_remove("MCP_TRIAGE_BEARER")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // the journal has an exchange once it is answered: tools/list comes just before the call,
    // which is answered only after 30 s, so soon after the list the call is in flight
    let lists_before = journaled(&k, "tools/list");
    for _ in 0..500 {
        if journaled(&k, "tools/list") > lists_before {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 130, "{}", String::from_utf8_lossy(&o.stderr));
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no task was open"));
    assert_eq!(journaled(&k, "tasks/cancel"), 2);
}
