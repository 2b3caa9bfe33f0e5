//! `--ui` on the command line: `wrap --ui` serves the live view's `/metrics` for a stdio
//! server, and the `--ui-*` limits need `--ui`. (`proxy --ui` in a browser:
//! interop/ui/ui-test.sh; its metrics and events: crates/mcp-triage-proxy/tests/ui.rs.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-triage");

/// A stdio MCP server in POSIX sh: a tool result for every request, `isError` when the line
/// names the tool `broken`.
const SERVER: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  err=false
  case "$line" in *'"name":"broken"'*) err=true ;; esac
  [ -n "$id" ] && printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"x"}],"isError":%s}}\n' "$id" "$err"
done
"#;

fn get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The address in "mcp-triage wrap: live view on http://127.0.0.1:PORT/ (metrics: …)".
fn live_view_addr(line: &str) -> String {
    line.split("live view on http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no live view address in {line:?}"))
        .to_string()
}

#[test]
fn wrap_ui_serves_metrics_of_the_stdio_calls() {
    let mut child = Command::new(BIN)
        .args(["wrap", "--ui", "127.0.0.1:0", "--ui-max-tools", "5", "--"])
        .args(["sh", "-c", SERVER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = live_view_addr(&line);
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(
            concat!(
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"fine\",\"arguments\":{}}}\n",
                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"broken\",\"arguments\":{}}}\n",
            )
            .as_bytes(),
        )
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    for _ in 0..2 {
        let mut l = String::new();
        out.read_line(&mut l).unwrap();
        assert!(l.contains("\"result\""), "{l}");
    }
    // Records reach the view a writer linger after the response: poll, bounded.
    let want = [
        r#"mcp_triage_calls_total{server="sh",tool="fine",layer="application",outcome="TOOL_SUCCESS"} 1"#,
        r#"mcp_triage_calls_total{server="sh",tool="broken",layer="application",outcome="TOOL_ERROR"} 1"#,
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    let metrics = loop {
        let m = get(&addr, "/metrics");
        if want.iter().all(|w| m.contains(w)) || Instant::now() > deadline {
            break m;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    for w in want {
        assert!(metrics.contains(w), "{w} missing from {metrics}");
    }
    assert!(metrics.starts_with("HTTP/1.1 200"));
    assert!(get(&addr, "/").contains("<title>mcp-triage live</title>"));
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn ui_limits_need_ui() {
    let o = Command::new(BIN)
        .args([
            "proxy",
            "--upstream",
            "http://127.0.0.1:9",
            "--ui-max-tools",
            "3",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--ui"));
}

#[test]
fn ui_token_from_the_environment_guards_the_view() {
    let mut child = Command::new(BIN)
        .args(["wrap", "--ui", "127.0.0.1:0", "--"])
        .args(["sh", "-c", SERVER])
        .env("MCP_TRIAGE_UI_TOKEN", "canary-ui-7d1e")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(!line.contains("canary"), "the token reached stderr: {line}");
    let addr = live_view_addr(&line);
    assert!(get(&addr, "/metrics").starts_with("HTTP/1.1 401"));
    assert!(get(&addr, "/?token=canary-ui-7d1e").starts_with("HTTP/1.1 200"));
    drop(child.stdin.take());
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn an_empty_ui_token_is_refused() {
    let o = Command::new(BIN)
        .args([
            "proxy",
            "--upstream",
            "http://127.0.0.1:9",
            "--ui",
            "127.0.0.1:0",
        ])
        .env("MCP_TRIAGE_UI_TOKEN", "")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("must not be empty"));
}
