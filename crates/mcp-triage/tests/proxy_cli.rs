//! `mcp-triage wrap` and `mcp-triage proxy` as a host runs them: real processes, real pipes,
//! real signals, bounded in time.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

use common::{converse, start_proxy, stop, KillOnDrop, BIN};

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mcp-triage-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each log line is JSON"))
        .collect()
}

/// A tiny stdio MCP server in POSIX sh: answers every request line with a tool result that
/// echoes its id, says goodbye on stderr at EOF and exits 3.
const SERVER: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  if [ -n "$id" ]; then
    printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok %s"}]}}\n' "$id" "$id"
  fi
done
echo "server: bye" >&2
exit 3
"#;

#[test]
fn wrap_relays_bytes_passes_stderr_returns_the_exit_code_and_logs_each_request() {
    let dir = tmpdir("wrap");
    let log = dir.join("wrap.jsonl");
    let _ = std::fs::remove_file(&log);
    let mut child = Command::new(BIN)
        .args(["wrap", "--log"])
        .arg(&log)
        .args(["--", "sh", "-c", SERVER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = concat!(
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\",\"arguments\":{\"x\":\"\u{e9}\"}}}\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"b\"}}\n",
    );
    let (out, err, status) = converse(&mut child, input);
    assert_eq!(status.code(), Some(3), "the server's exit code");
    assert_eq!(
        out,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok 1\"}]}}\n\
         {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok 2\"}]}}\n"
    );
    assert!(
        err.contains("server: bye"),
        "stderr passes through: {err:?}"
    );
    let recs = records(&log);
    assert_eq!(recs.len(), 3, "{recs:#?}");
    let calls: Vec<_> = recs
        .iter()
        .filter(|r| r["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 2);
    assert!(calls
        .iter()
        .all(|r| r["outcome"] == "TOOL_SUCCESS" && r["transport"] == "stdio"));
    assert!(calls
        .iter()
        .all(|r| r.get("arguments").is_none() && r["argumentsHash"].is_string()));
}

#[test]
fn wrap_install_and_uninstall_rewrite_the_config() {
    let dir = tmpdir("install");
    let cfg = dir.join("mcp.json");
    let original = r#"{"mcpServers":{"echo":{"command":"sh","args":["-c","cat"]}}}"#;
    std::fs::write(&cfg, original).unwrap();
    let ok = Command::new(BIN)
        .args(["wrap", "--install", "echo", "--config"])
        .arg(&cfg)
        .status()
        .unwrap();
    assert!(ok.success());
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    let e = &doc["mcpServers"]["echo"];
    assert_eq!(e["args"][0], "wrap");
    // The rewritten entry really starts the server through the wrapper.
    let mut child = Command::new(e["command"].as_str().unwrap())
        .args(
            e["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap()),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let line = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
    child
        .stdin
        .take()
        .unwrap()
        .write_all(line.as_bytes())
        .unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(out, line);
    let ok = Command::new(BIN)
        .args(["wrap", "--uninstall", "echo", "--config"])
        .arg(&cfg)
        .status()
        .unwrap();
    assert!(ok.success());
    let back: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    assert_eq!(back, serde_json::from_str::<Value>(original).unwrap());
    let bad = Command::new(BIN)
        .args(["wrap", "--uninstall", "nope", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no server \"nope\""));
}

/// Runs `mcp-triage proxy ARGS` (on a free port, upstream never contacted) and checks that it
/// refuses to start: exit 2, `says` on stderr.
fn proxy_refuses(args: &[&std::ffi::OsStr], says: &str) {
    let out = Command::new(BIN)
        .args(["proxy", "--listen", "127.0.0.1:0"])
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
}

/// A scratch folder, a file in it that is not a certificate, and the name of one that does not exist.
fn unusable_pem_files(name: &str) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let dir = tmpdir(name);
    let junk = dir.join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let missing = dir.join("missing.pem");
    (dir, junk, missing)
}

/// `--upstream-ca` problems stop the proxy before it listens, with exit 2 and the reason: a
/// missing file, a file without a certificate, and a CA for a plain-http upstream.
#[test]
fn proxy_refuses_unusable_upstream_ca_files() {
    let (dir, junk, missing) = unusable_pem_files("upstream-ca");
    let pem = dir.join("ca.pem");
    std::fs::write(
        &pem,
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()])
            .unwrap()
            .cert
            .pem(),
    )
    .unwrap();
    let cases: [(&str, &std::path::Path, &str); 4] = [
        ("https://127.0.0.1:9", &missing, "missing.pem"),
        ("https://127.0.0.1:9", &junk, "no CERTIFICATE block"),
        ("http://127.0.0.1:9", &junk, "no CERTIFICATE block"),
        ("http://127.0.0.1:9", &pem, "https:// --upstream only"),
    ];
    for (upstream, ca, says) in cases {
        let args = ["--upstream", upstream, "--upstream-ca"].map(std::ffi::OsStr::new);
        proxy_refuses(&[&args[..], &[ca.as_os_str()]].concat(), says);
    }
}

/// `--otlp-ca` problems stop the proxy before it listens too: a missing file, a file without a
/// certificate, and the flag without `--otlp`.
#[test]
fn proxy_refuses_unusable_otlp_ca_files() {
    let (_, junk, missing) = unusable_pem_files("otlp-ca");
    for (file, says) in [
        (&missing, "cannot read --otlp-ca"),
        (&junk, "no CERTIFICATE block"),
    ] {
        let args = [
            "--upstream",
            "http://127.0.0.1:9",
            "--otlp",
            "https://127.0.0.1:9",
            "--otlp-ca",
        ]
        .map(std::ffi::OsStr::new);
        proxy_refuses(&[&args[..], &[file.as_os_str()]].concat(), says);
    }
    let args = ["--upstream", "http://127.0.0.1:9", "--otlp-ca"].map(std::ffi::OsStr::new);
    proxy_refuses(&[&args[..], &[junk.as_os_str()]].concat(), "--otlp");
}

/// `--spin-us` polls on the one forwarding thread; with more threads it is refused, not ignored,
/// and so is a window over its bound.
#[test]
fn proxy_refuses_spin_with_several_threads() {
    let args = [
        "--upstream",
        "http://127.0.0.1:9",
        "--threads",
        "2",
        "--spin-us",
        "200",
    ]
    .map(std::ffi::OsStr::new);
    proxy_refuses(&args, "--spin-us works with one forwarding thread");
    let args = ["--upstream", "http://127.0.0.1:9", "--spin-us", "20000"].map(std::ffi::OsStr::new);
    proxy_refuses(&args, "--spin-us");
}

/// Polling is the default with one forwarding thread only: with several it is off unless asked
/// for (and then refused, above), and `--spin-us 0` turns it off with one. The start line says so.
#[test]
fn proxy_start_line_names_the_spin_setting() {
    let cases: [(&[&str], &str); 4] = [
        (&[], "spin: adaptive, up to 200 µs)"),
        (&["--spin-us", "50"], "spin: adaptive, up to 50 µs)"),
        (&["--spin-us", "0"], "spin: off)"),
        (&["--threads", "2"], "spin: off)"),
    ];
    for (extra, says) in cases {
        // Nothing is sent, so nothing needs to listen upstream.
        let child = Command::new(BIN)
            .args([
                "proxy",
                "--upstream=http://127.0.0.1:9",
                "--listen=127.0.0.1:0",
            ])
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut child = KillOnDrop(child);
        let mut first = String::new();
        BufReader::new(child.0.stderr.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(first.contains(says), "{extra:?}: {first}");
    }
}

#[test]
fn proxy_refuses_a_connect_timeout_out_of_range() {
    for bad in ["0", "-1", "nan", "7200"] {
        let flag = format!("--connect-timeout={bad}");
        let args = ["--upstream", "http://127.0.0.1:9", flag.as_str()].map(std::ffi::OsStr::new);
        proxy_refuses(&args, "--connect-timeout");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_sigterm_drains_every_record() {
    let kitchen = mcp_triage_kitchen::start(
        "127.0.0.1:0".parse().unwrap(),
        mcp_triage_kitchen::KitchenOptions::default(),
    )
    .await
    .unwrap();
    let dir = tmpdir("proxy");
    let log = dir.join("proxy.jsonl");
    let _ = std::fs::remove_file(&log);
    let mut proxy = start_proxy(
        &kitchen.base_url(),
        &[std::ffi::OsStr::new("--log"), log.as_os_str()],
    );
    let first = proxy.start_line.clone();
    // The proxy runs on mimalloc, chosen before `main` from its arguments (src/allocator.rs).
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        assert!(first.contains("(allocator: mimalloc,"), "{first}");
    }
    // One forwarding thread polls adaptively after traffic unless told otherwise.
    assert!(first.contains("spin: adaptive, up to 200 µs)"), "{first}");
    let addr = proxy.addr.clone();
    let child = &mut proxy.child;
    // 40 calls in a row, then 20 that the kitchen holds for 400 ms, in flight when SIGTERM comes.
    let n = 60;
    async fn one(addr: String, i: usize, path: &str) -> Vec<u8> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"test_simple_text","arguments":{{}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"cli-test","version":"0"}}}}}}}}"#
        );
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let req = format!(
            "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: test_simple_text\r\nauthorization: Bearer secret-token\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut resp = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut resp))
            .await
            .unwrap()
            .unwrap();
        resp
    }
    for i in 0..40 {
        let resp = one(addr.clone(), i, "/mcp").await;
        assert!(
            resp.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&resp)
        );
    }
    let held =
        "/s/chaos.mix/mcp?params=%7B%22delayMs%22%3A400%2C%22rates%22%3A%7B%22delay%22%3A1.0%7D%7D";
    let in_flight: Vec<_> = (40..n)
        .map(|i| tokio::spawn(one(addr.clone(), i, held)))
        .collect();
    // Wait until the kitchen has every held call, so SIGTERM finds them open.
    let deadline = Instant::now() + Duration::from_secs(10);
    let posts = || -> u64 {
        let c = kitchen.kitchen().counters();
        c.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|i| i["counters"]["http_request"].as_u64())
                    .sum()
            })
            .unwrap_or(0)
    };
    while posts() < n as u64 {
        assert!(Instant::now() < deadline, "the held calls did not arrive");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let kill = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the proxy did not stop on SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(status.success());
    for t in in_flight {
        let resp = t.await.unwrap();
        assert!(
            resp.starts_with(b"HTTP/1.1 200"),
            "an open exchange was finished, not cut"
        );
    }
    let recs = records(&log);
    assert_eq!(recs.len(), n, "one record per request, none lost");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains("secret-token"),
        "Authorization never reaches the log"
    );
    assert!(recs.iter().all(|r| r["outcome"] == "TOOL_SUCCESS"));
    kitchen.shutdown().await;
}

/// One `tools/call` through the proxy at `addr` on a fresh connection; the raw response.
fn call_through(addr: &str, id: u32) -> String {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"test_simple_text","arguments":{{}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"cli-test","version":"0"}}}}}}}}"#
    );
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: test_simple_text\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    resp
}

/// A log on a full disk (`/dev/full` refuses every byte): the failure is on stderr while the
/// proxy runs, the final count says no record was written and how many were lost, and the exit
/// status is 1 — not "N record(s) written" and 0.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_on_a_full_disk_says_records_were_lost_and_exits_1() {
    let kitchen = mcp_triage_kitchen::start(
        "127.0.0.1:0".parse().unwrap(),
        mcp_triage_kitchen::KitchenOptions::default(),
    )
    .await
    .unwrap();
    let upstream = kitchen.base_url();
    let (status, err) = tokio::task::spawn_blocking(move || {
        let proxy = start_proxy(&upstream, &["--log", "/dev/full"].map(std::ffi::OsStr::new));
        for id in 0..5 {
            assert!(call_through(&proxy.addr, id).starts_with("HTTP/1.1 200"));
        }
        // The writer hits the full disk within a linger of the last record.
        std::thread::sleep(Duration::from_millis(300));
        stop(proxy)
    })
    .await
    .unwrap();
    // Reported at once: before the proxy was asked to stop.
    let reported = err.find("cannot write the record log");
    let stopping = err.find("stopping");
    assert!(
        reported.is_some() && reported < stopping,
        "the failure is on stderr while the proxy runs: {err}"
    );
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("0 record(s) written, 5 lost"), "{err}");
    kitchen.shutdown().await;
}

/// A proxy killed mid-write leaves a torn last line; the next proxy appending to that log starts
/// a new line, so every record it writes parses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_appending_to_a_torn_log_starts_a_new_line() {
    let kitchen = mcp_triage_kitchen::start(
        "127.0.0.1:0".parse().unwrap(),
        mcp_triage_kitchen::KitchenOptions::default(),
    )
    .await
    .unwrap();
    let dir = tmpdir("torn");
    let log = dir.join("torn.jsonl");
    std::fs::write(
        &log,
        "{\"recordId\":\"before\"}\n{\"recordId\":\"torn-by-sigki",
    )
    .unwrap();
    let upstream = kitchen.base_url();
    let log2 = log.clone();
    let (status, err) = tokio::task::spawn_blocking(move || {
        let proxy = start_proxy(
            &upstream,
            &[std::ffi::OsStr::new("--log"), log2.as_os_str()],
        );
        for id in 0..3 {
            assert!(call_through(&proxy.addr, id).starts_with("HTTP/1.1 200"));
        }
        stop(proxy)
    })
    .await
    .unwrap();
    assert!(status.success(), "{err}");
    assert!(err.contains("3 record(s) written"), "{err}");
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert_eq!(lines[1], "{\"recordId\":\"torn-by-sigki");
    for l in &lines[2..] {
        let r: Value = serde_json::from_str(l).expect("each new record is a line of its own");
        assert_eq!(r["outcome"], "TOOL_SUCCESS");
    }
    kitchen.shutdown().await;
}

/// The limits and the rebinding options refuse values that cannot work, naming the flag.
#[test]
fn proxy_refuses_unusable_limits_and_host_options() {
    for (flag, says) in [
        ("--body-read-timeout=0", "--body-read-timeout"),
        ("--body-read-timeout=nan", "--body-read-timeout"),
        ("--response-timeout=-1", "--response-timeout"),
        ("--response-timeout=100000", "--response-timeout"),
        ("--max-connections=0", "--max-connections"),
        ("--allow-origin=evil.example", "--allow-origin"),
        ("--allow-origin=http://a.example/path", "--allow-origin"),
        ("--allow-host=http://a.example", "--allow-host"),
        ("--host-check=sometimes", "--host-check"),
    ] {
        let args = ["--upstream", "http://127.0.0.1:9", flag].map(std::ffi::OsStr::new);
        proxy_refuses(&args, says);
    }
}

/// Issue 23 item 15: `call --authorize follow` through `mcp-triage proxy` in front of the
/// kitchen's `auth.oauth_flow`. The proxy sends the client's Host as `X-Forwarded-Host` (and
/// `X-Forwarded-Proto`); the kitchen, trusting a loopback peer, advertises the proxy's address
/// in the challenge, the resource metadata and its authorization server's issuer, so every
/// step of the flow goes through the proxy and the call succeeds. Before, the metadata named
/// the kitchen's own address and the client refused it (the resource did not match the URL).
#[test]
fn oauth_through_the_proxy_names_the_proxys_address() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let kitchen = rt
        .block_on(mcp_triage_kitchen::start(
            "127.0.0.1:0".parse().unwrap(),
            mcp_triage_kitchen::KitchenOptions::default(),
        ))
        .unwrap();
    let dir = tmpdir("proxy-oauth");
    let log = dir.join("proxy.jsonl");
    let store = dir.join("tokens.json");
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(&store);
    let proxy = start_proxy(
        &kitchen.base_url(),
        &[std::ffi::OsStr::new("--log"), log.as_os_str()],
    );
    let url = format!("http://{}/s/auth.oauth_flow/mcp", proxy.addr);
    let o = Command::new(BIN)
        .args(["call", &url, "read_counter", "--format", "json"])
        .args(["--authorize", "follow", "--token-store"])
        .arg(&store)
        .env_remove("MCP_TRIAGE_BEARER")
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    let rec: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rec["outcome"], "TOOL_SUCCESS", "{out}");
    let (status, rest) = stop(proxy);
    assert!(status.success(), "{rest}");
    // Every step went through the proxy: the metadata, the AS's endpoints and the MCP calls.
    let paths: Vec<String> = records(&log)
        .iter()
        .filter_map(|r| r["path"].as_str().map(str::to_string))
        .collect();
    for want in [
        "/.well-known/oauth-protected-resource/s/auth.oauth_flow/mcp",
        "/.well-known/oauth-authorization-server/oauth/none",
        "/s/auth.oauth_flow/mcp",
    ] {
        assert!(
            paths.iter().any(|p| p.starts_with(want)),
            "{want} not in {paths:?}"
        );
    }
    assert!(
        paths.iter().any(|p| p.starts_with("/oauth/none/token")),
        "{paths:?}"
    );
    // The kitchen's own address appears nowhere the client was told to go.
    let kitchen_addr = kitchen.local_addr().to_string();
    assert!(!err.contains(&kitchen_addr), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
    rt.block_on(kitchen.shutdown());
}
