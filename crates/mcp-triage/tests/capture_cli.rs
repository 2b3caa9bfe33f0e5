//! `mcp-triage proxy --capture` and `mcp-triage wrap --capture` as real processes in front of
//! the kitchen (127.0.0.1 only, bounded in time): the capture classifies to the proxy's own
//! verdicts, keeps no secret, rotates, bounds bodies, reports a file it cannot write, and times
//! SSE chunks (docs/capture-format.md).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use serde_json::Value;

mod common;

use common::{converse, start_proxy, stop, KillOnDrop, BIN};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mcp-triage-capture-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

/// Runs `calls` (on a blocking thread, given the proxy's `host:port`) against a
/// `mcp-triage proxy` in front of `upstream` started with `args`, then stops it with SIGTERM:
/// its exit status, the rest of its stderr, and what `calls` returned.
async fn through_proxy<T: Send + 'static>(
    upstream: String,
    args: Vec<OsString>,
    calls: impl FnOnce(&str) -> T + Send + 'static,
) -> (ExitStatus, String, T) {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
        let proxy = start_proxy(&upstream, &args);
        let out = calls(&proxy.addr);
        let (status, err) = stop(proxy);
        (status, err, out)
    })
    .await
    .unwrap()
}

/// `--capture FILE` (and `--log RECORDS` when given) followed by `more`.
fn capture_args(cap: &Path, log: Option<&Path>, more: &[&str]) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec!["--capture".into(), cap.into()];
    if let Some(log) = log {
        a.extend(["--log".into(), log.into()]);
    }
    a.extend(more.iter().map(OsString::from));
    a
}

/// One HTTP/1.1 exchange on a fresh connection (`connection: close`): the raw response, or
/// what was read before the connection ended.
fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    String::from_utf8_lossy(&resp).into_owned()
}

/// A 2026-07-28 `tools/call` of `tool` with `arguments`, through `addr` to `path`.
fn call(
    addr: &str,
    path: &str,
    id: i64,
    tool: &str,
    arguments: &str,
    extra: &[(&str, &str)],
) -> String {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"elicitation":{{}}}},"io.modelcontextprotocol/clientInfo":{{"name":"capture-test","version":"0"}}}}}}}}"#
    );
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", tool),
    ];
    headers.extend_from_slice(extra);
    http(addr, "POST", path, &headers, &body)
}

fn urlencode(s: &str) -> String {
    mcp_triage_kitchen::mcp::percent_encode(s)
}

async fn kitchen() -> mcp_triage_kitchen::KitchenHandle {
    mcp_triage_kitchen::start(
        "127.0.0.1:0".parse().unwrap(),
        mcp_triage_kitchen::KitchenOptions::default(),
    )
    .await
    .unwrap()
}

/// `classify --batch FILE --each`: one verdict per line, in line order.
fn classify_batch(path: &Path) -> Vec<Value> {
    let out = Command::new(BIN)
        .args(["classify", "--each", "--format", "json", "--batch"])
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("outcome").is_some() && v.get("layer").is_some())
        .collect()
}

/// Capture → classify: a soak of 300 `chaos.mix` calls (503s, resets, malformed bodies,
/// JSON-RPC errors, delays, cut SSE streams, input rounds; half JSON, half SSE) through
/// `proxy --capture X --log R`; `classify --batch X` gives every line the verdict of the proxy's
/// record for the same exchange (matched by JSON-RPC id), and the line's own `verdict` is that
/// record's outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_captured_chaos_soak_classifies_to_the_proxys_verdicts() {
    let kitchen = kitchen().await;
    let dir = tmpdir("soak");
    let (cap, log) = (dir.join("capture.jsonl"), dir.join("records.jsonl"));
    let upstream = kitchen.base_url();
    let (clients, calls) = (6usize, 50usize);
    let args = capture_args(&cap, Some(&log), &[]);
    let (status, err, ()) = through_proxy(upstream, args, move |addr| {
        let threads: Vec<_> = (0..clients)
            .map(|k| {
                let addr = addr.to_string();
                std::thread::spawn(move || {
                    let mode = if k % 2 == 0 { "json" } else { "sse" };
                    let params = r#"{"seed":KK,"delayMs":2,"rates":{"http_503":0.1,"connection_close":0.05,"malformed_json":0.05,"jsonrpc_error":0.05,"delay":0.1,"sse_cut":0.1,"input_required":0.1}}"#
                        .replace("KK", &k.to_string());
                    let path = format!(
                        "/s/chaos.mix/mcp?responseMode={mode}&instance=cap-{k}&params={}",
                        urlencode(&params)
                    );
                    for i in 0..calls {
                        let id = (k * 1000 + i) as i64;
                        call(&addr, &path, id, "test_simple_text", &format!(r#"{{"n":{i}}}"#), &[]);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    })
    .await;
    assert!(status.success(), "{err}");
    let n = clients * calls;
    assert!(err.contains(&format!("{n} exchange(s) captured")), "{err}");
    let lines = json_lines(&cap);
    let records = json_lines(&log);
    assert_eq!(lines.len(), n, "one capture line per exchange");
    assert_eq!(records.len(), n, "one record per exchange");
    let by_id: HashMap<i64, &Value> = records
        .iter()
        .map(|r| (r["id"].as_i64().expect("every record has its id"), r))
        .collect();
    let verdicts = classify_batch(&cap);
    assert_eq!(verdicts.len(), n, "classify reads every capture line");
    let mut seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    seqs.sort_unstable();
    assert_eq!(
        seqs,
        (1..=n as u64).collect::<Vec<_>>(),
        "seq numbers each exchange once"
    );
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for (line, classified) in lines.iter().zip(&verdicts) {
        let id = line["expectId"].as_i64().expect("expectId");
        let record = by_id[&id];
        assert_eq!(line["verdict"], record["outcome"], "id {id}: {line}");
        assert_eq!(
            classified["outcome"], record["outcome"],
            "id {id}: classify says {classified}\nthe proxy's record: {record}\nthe line: {line}"
        );
        assert_eq!(line["method"], "tools/call");
        assert_eq!(line["tool"], "test_simple_text");
        assert!(line["argumentsHash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:"));
        assert_eq!(line["protocolVersion"], "2026-07-28");
        if line["end"] == "complete" && line["bodyTruncated"] == false {
            let sum: u64 = line["chunks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c[1].as_u64().unwrap())
                .sum();
            assert_eq!(
                sum as usize,
                line["body"].as_str().unwrap().len(),
                "id {id}"
            );
        }
        *outcomes
            .entry(record["outcome"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    eprintln!("capture soak: {n} exchanges, outcomes {outcomes:?}");
    for o in [
        "TOOL_SUCCESS",
        "HTTP_ERROR",
        "CONNECTION_ERROR",
        "MALFORMED_JSON",
        "JSONRPC_ERROR",
        "STREAM_INCOMPLETE",
        "INPUT_REQUIRED",
    ] {
        assert!(
            outcomes.get(o).copied().unwrap_or(0) > 0,
            "{o} missing: {outcomes:?}"
        );
    }
    kitchen.shutdown().await;
}

/// Canary: a bearer token, an `access_token` query parameter, a cookie, an API key, and a whole
/// OAuth flow (registration, an authorization redirect carrying its code, the token endpoint's
/// answer with access and refresh tokens, then the access token used) pass through the proxy;
/// none of those strings is anywhere in the capture file, while the exchanges are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_the_capture() {
    let kitchen = kitchen().await;
    let dir = tmpdir("canary");
    let cap = dir.join("capture.jsonl");
    let upstream = kitchen.base_url();
    let args = capture_args(&cap, None, &[]);
    let (status, err, canaries) = through_proxy(upstream, args, |addr| {
        let mut canaries = vec![
            "CANARY-BEARER-1f3a".to_string(),
            "CANARY-QUERY-77b2".to_string(),
            "CANARY-COOKIE-0c9d".to_string(),
            "CANARY-APIKEY-5e11".to_string(),
        ];
        let r = call(
            addr,
            "/s/baseline/mcp?responseMode=json",
            1,
            "test_simple_text",
            "{}",
            &[
                ("authorization", "Bearer CANARY-BEARER-1f3a"),
                ("cookie", "sid=CANARY-COOKIE-0c9d"),
                ("x-api-key", "CANARY-APIKEY-5e11"),
            ],
        );
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        // A secret in the query (the kitchen's MCP paths refuse unknown parameters, its
        // metadata path does not look at them).
        http(
            addr,
            "GET",
            "/.well-known/oauth-protected-resource?access_token=CANARY-QUERY-77b2",
            &[("authorization", "Bearer CANARY-BEARER-1f3a")],
            "",
        );
        // The OAuth flow of the kitchen's authorization server, through the proxy.
        let redirect = "http://127.0.0.1:9/callback";
        let reg = http(
            addr,
            "POST",
            "/oauth/none/register",
            &[("content-type", "application/json")],
            &format!(r#"{{"redirect_uris":["{redirect}"]}}"#),
        );
        let client_id = between(&reg, r#""client_id":""#, "\"").expect("client_id");
        let verifier = "CANARY-VERIFIER-0123456789abcdefghijklmnopqrstuvwxyz";
        canaries.push(verifier.to_string());
        let challenge = mcp_triage_client::oauth::pkce::s256(verifier);
        let auth = http(
            addr,
            "GET",
            &format!(
                "/oauth/none/authorize?response_type=code&client_id={client_id}&redirect_uri={}&code_challenge={challenge}&code_challenge_method=S256&state=st&scope=mcp%3Atools",
                urlencode(redirect)
            ),
            &[],
            "",
        );
        let code = between(&auth, "code=", "&").expect("a code in Location");
        canaries.push(code.clone());
        let token = http(
            addr,
            "POST",
            "/oauth/none/token",
            &[("content-type", "application/x-www-form-urlencoded")],
            &format!(
                "grant_type=authorization_code&code={code}&client_id={client_id}&redirect_uri={}&code_verifier={verifier}",
                urlencode(redirect)
            ),
        );
        assert!(token.starts_with("HTTP/1.1 200"), "{token}");
        let access = between(&token, r#""access_token":""#, "\"").expect("access_token");
        let refresh = between(&token, r#""refresh_token":""#, "\"").expect("refresh_token");
        let r = call(
            addr,
            "/s/baseline/mcp?responseMode=sse",
            2,
            "test_simple_text",
            "{}",
            &[("authorization", &format!("Bearer {access}"))],
        );
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        canaries.push(access);
        canaries.push(refresh);
        canaries
    })
    .await;
    assert!(status.success(), "{err}");
    let text = std::fs::read_to_string(&cap).unwrap();
    for c in &canaries {
        assert!(
            !text.contains(c.as_str()),
            "{c} reached the capture:\n{text}"
        );
    }
    let lines = json_lines(&cap);
    assert_eq!(lines.len(), 6, "{text}");
    let token_line = lines
        .iter()
        .find(|l| l["request"]["path"] == "/oauth/none/token")
        .expect("the token exchange is captured");
    assert_eq!(token_line["request"]["bodyOmitted"], true);
    assert_eq!(token_line["bodyOmitted"], true);
    assert!(token_line.get("body").is_none());
    assert_eq!(lines[0]["verdict"], "TOOL_SUCCESS");
    assert!(lines[0]["body"].as_str().unwrap().contains("jsonrpc"));
    assert_eq!(
        lines[1]["request"]["path"],
        "/.well-known/oauth-protected-resource?access_token=REDACTED"
    );
    // The access token was used on an MCP call, whose SSE answer is captured.
    assert_eq!(lines[5]["contentType"], "text/event-stream");
    assert_eq!(lines[5]["verdict"], "TOOL_SUCCESS");
    kitchen.shutdown().await;
}

/// The text between `start` and the next `end` in `s`.
fn between(s: &str, start: &str, end: &str) -> Option<String> {
    let at = s.find(start)? + start.len();
    let len = s[at..].find(end)?;
    Some(s[at..at + len].to_string())
}

/// SSE timing: `sse.keepalive` (its tool `run_configured_test_scenario`) sends comment lines `intervalMs` apart before its result, and the
/// capture's `chunks` say when each arrived (offsets from the response head, at least the
/// kitchen's delays apart); a stream that ends cleanly before its response
/// (`sse.cut_before_response`) is `complete` and `STREAM_INCOMPLETE`, one broken mid-event
/// (`sse.cut_mid_event`) ends `upstream_closed`, and classify judges every line as the proxy did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_chunks_keep_their_timing_and_a_cut_stream_says_so() {
    let kitchen = kitchen().await;
    let dir = tmpdir("sse");
    let cap = dir.join("capture.jsonl");
    let upstream = kitchen.base_url();
    let args = capture_args(&cap, None, &[]);
    let (status, err, ()) = through_proxy(upstream, args, |addr| {
        let r = call(
            addr,
            "/s/sse.keepalive/mcp?comments=3&intervalMs=150",
            1,
            "run_configured_test_scenario",
            "{}",
            &[],
        );
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        call(
            addr,
            "/s/sse.cut_before_response/mcp",
            2,
            "run_configured_test_scenario",
            "{}",
            &[],
        );
        call(
            addr,
            "/s/sse.cut_mid_event/mcp",
            3,
            "run_configured_test_scenario",
            "{}",
            &[],
        );
    })
    .await;
    assert!(status.success(), "{err}");
    let lines = json_lines(&cap);
    assert_eq!(lines.len(), 3, "{lines:?}");
    let keepalive = &lines[0];
    assert_eq!(keepalive["end"], "complete");
    assert_eq!(keepalive["contentType"], "text/event-stream");
    let at: Vec<f64> = keepalive["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c[0].as_f64().unwrap())
        .collect();
    assert!(at.len() >= 4, "three comments and the result: {at:?}");
    assert!(at.windows(2).all(|w| w[0] <= w[1]), "{at:?}");
    // The three gaps the kitchen slept are in the offsets (lower bounds only: a loaded machine
    // may add to them, never take away).
    let gaps = at.windows(2).filter(|w| w[1] - w[0] >= 140.0).count();
    assert!(gaps >= 2, "{at:?}");
    assert!(*at.last().unwrap() >= 2.0 * 150.0, "{at:?}");
    let sum: u64 = keepalive["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c[1].as_u64().unwrap())
        .sum();
    assert_eq!(sum as usize, keepalive["body"].as_str().unwrap().len());
    assert!(keepalive["headMs"].as_f64().unwrap() >= 0.0);
    // `sse.cut_before_response` ends its body cleanly (the terminating chunk) without the
    // response: HTTP-wise complete, MCP-wise incomplete.
    let short = &lines[1];
    assert_eq!(short["end"], "complete", "{short}");
    assert_eq!(short["verdict"], "STREAM_INCOMPLETE", "{short}");
    // `sse.cut_mid_event` breaks the connection inside an event.
    let cut = &lines[2];
    assert_eq!(cut["end"], "upstream_closed", "{cut}");
    let verdicts = classify_batch(&cap);
    assert_eq!(verdicts.len(), 3);
    for (v, l) in verdicts.iter().zip(&lines) {
        assert_eq!(v["outcome"], l["verdict"], "{l}");
    }
    kitchen.shutdown().await;
}

/// `--capture-max-bytes` rotates the file into FILE.1, FILE.2 (no more than `--capture-keep`),
/// each file at most the limit; `--capture-max-body` cuts bodies and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn captures_rotate_and_bodies_are_bounded() {
    let kitchen = kitchen().await;
    let dir = tmpdir("rotate");
    let cap = dir.join("capture.jsonl");
    let upstream = kitchen.base_url();
    let more = [
        "--capture-max-bytes=2500",
        "--capture-keep=2",
        "--capture-max-body=64",
    ];
    let args = capture_args(&cap, None, &more);
    let (status, err, ()) = through_proxy(upstream, args, |addr| {
        for id in 0..12 {
            let r = call(addr, "/mcp", id, "test_simple_text", "{}", &[]);
            assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        }
    })
    .await;
    assert!(status.success(), "{err}");
    assert!(err.contains("12 exchange(s) captured"), "{err}");
    let rotated = |n: u32| PathBuf::from(format!("{}.{n}", cap.display()));
    let mut seen = 0;
    for p in [cap.clone(), rotated(1), rotated(2)] {
        let len = std::fs::metadata(&p).unwrap().len();
        assert!(len > 0 && len <= 2500, "{}: {len}", p.display());
        for l in json_lines(&p) {
            assert_eq!(l["bodyTruncated"], true, "{l}");
            assert_eq!(l["body"].as_str().unwrap().len(), 64);
            assert_eq!(l["request"]["bodyTruncated"], true);
            assert_eq!(l["verdict"], "TOOL_SUCCESS");
            // The chunks still cover the whole body.
            let sum: u64 = l["chunks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c[1].as_u64().unwrap())
                .sum();
            assert!(sum > 64, "{l}");
            seen += 1;
        }
    }
    assert!(!rotated(3).exists(), "--capture-keep 2");
    assert!(
        seen < 12,
        "the oldest lines went with the third rotated file"
    );
    let newest = json_lines(&cap);
    assert_eq!(newest.last().unwrap()["seq"], 12);
    kitchen.shutdown().await;
}

/// A capture on a full disk (`/dev/full`): the failure is on stderr while the proxy runs, the
/// final count says what was lost, the exit status is 1; a path that cannot be opened stops
/// the proxy before it starts, naming the flag.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unwritable_capture_is_reported_and_fails_the_run() {
    let kitchen = kitchen().await;
    let upstream = kitchen.base_url();
    let args = capture_args(Path::new("/dev/full"), None, &[]);
    let (status, err, ()) = through_proxy(upstream.clone(), args, |addr| {
        for id in 0..4 {
            let r = call(addr, "/mcp", id, "test_simple_text", "{}", &[]);
            assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        }
        // The writer hits the full disk within a linger of the last line.
        std::thread::sleep(Duration::from_millis(300));
    })
    .await;
    let reported = err.find("cannot write the capture file");
    let stopping = err.find("stopping");
    assert!(reported.is_some() && reported < stopping, "{err}");
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("0 exchange(s) captured, 4 lost"), "{err}");
    let out = Command::new(BIN)
        .args(["proxy", "--listen", "127.0.0.1:0", "--upstream", &upstream])
        .args(["--capture", "/nonexistent-dir-of-mcp-triage/c.jsonl"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("cannot open --capture"), "{text}");
    kitchen.shutdown().await;
}

/// A tiny stdio MCP server in POSIX sh: answers every request line with a tool result that
/// echoes its id, and exits at EOF.
const STDIO_SERVER: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  if [ -n "$id" ]; then
    printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok %s"}]}}\n' "$id" "$id"
  fi
done
"#;

/// `wrap --capture`: each request line and the server's answer line are a capture line with
/// `transport: "stdio"`, status 200 and a JSON body, which classify judges as the wrapper did.
#[test]
fn wrap_captures_each_request_and_its_answer_line() {
    let dir = tmpdir("wrap");
    let cap = dir.join("capture.jsonl");
    let mut child = KillOnDrop(
        Command::new(BIN)
            .args(["wrap", "--capture"])
            .arg(&cap)
            .args(["--", "sh", "-c", STDIO_SERVER])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let input = concat!(
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\",\"arguments\":{\"x\":1,\"code\":\"CANARY-CODE\"}}}\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"b\"}}\n",
    );
    let (out, err, status) = converse(&mut child.0, input);
    assert!(status.success(), "{err}");
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(err.contains("2 exchange(s) captured"), "{err}");
    let text = std::fs::read_to_string(&cap).unwrap();
    assert!(!text.contains("CANARY-CODE"), "{text}");
    let lines = json_lines(&cap);
    assert_eq!(lines.len(), 2, "{text}");
    for (l, id) in lines.iter().zip([1, 2]) {
        assert_eq!(l["transport"], "stdio");
        assert_eq!(l["status"], 200);
        assert_eq!(l["contentType"], "application/json");
        assert_eq!(l["expectId"], id);
        assert_eq!(l["method"], "tools/call");
        assert_eq!(l["end"], "complete");
        assert_eq!(l["verdict"], "TOOL_SUCCESS");
        assert_eq!(l["sessionId"], "s1");
        assert!(l["body"].as_str().unwrap().contains(&format!("ok {id}")));
        assert!(l["request"]["body"]
            .as_str()
            .unwrap()
            .contains("tools/call"));
        assert!(l["request"].get("path").is_none());
        assert_eq!(l["chunks"].as_array().unwrap().len(), 1);
    }
    // Absent arguments hash as {}.
    let empty = lines[1]["argumentsHash"].as_str().unwrap();
    assert_eq!(
        empty,
        "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    );
    let verdicts = classify_batch(&cap);
    assert_eq!(verdicts.len(), 2);
    assert!(verdicts.iter().all(|v| v["outcome"] == "TOOL_SUCCESS"));
}

/// A legacy session (initialize, notifications/initialized, tools/list, tools/call, DELETE)
/// through `proxy --capture --log`: every line's `verdict` is its record's `outcome`; the
/// session id is `s1` everywhere; and classify agrees with the proxy's core verdict on each
/// line. Where the wire names differ it is by design: a result to a method other than
/// `tools/call` is `RESULT` in records (classify, which judges every line as a tool call, says
/// `TOOL_SUCCESS`, the record's `verdict.outcome`), and a notification's 202 is `ACCEPTED` in
/// records (no response is expected; classify, judging every line as the answer to a request,
/// says `MISSING_RESPONSE`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_session_is_captured_with_its_methods_and_session() {
    let kitchen = kitchen().await;
    let dir = tmpdir("legacy");
    let (cap, log) = (dir.join("capture.jsonl"), dir.join("records.jsonl"));
    let upstream = kitchen.base_url();
    let args = capture_args(&cap, Some(&log), &[]);
    let (status, err, sid) = through_proxy(upstream, args, |addr| {
        let base = [
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        let init = http(
            addr,
            "POST",
            "/mcp",
            &base,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"capture-test","version":"0"}}}"#,
        );
        assert!(init.starts_with("HTTP/1.1 200"), "{init}");
        let sid = between(&init.to_ascii_lowercase(), "mcp-session-id: ", "\r\n").expect("sid");
        let mut h = base.to_vec();
        h.push(("mcp-session-id", &sid));
        h.push(("mcp-protocol-version", "2025-11-25"));
        for body in [
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_simple_text"}}"#,
        ] {
            http(addr, "POST", "/mcp", &h, body);
        }
        http(addr, "DELETE", "/mcp", &h, "");
        sid
    })
    .await;
    assert!(status.success(), "{err}");
    let lines = json_lines(&cap);
    let records = json_lines(&log);
    assert_eq!((lines.len(), records.len()), (5, 5), "{lines:#?}");
    let text = std::fs::read_to_string(&cap).unwrap();
    assert!(!text.contains(&sid), "session ids are renamed");
    let verdicts = classify_batch(&cap);
    assert_eq!(verdicts.len(), 5);
    let methods: Vec<&str> = lines
        .iter()
        .map(|l| l["method"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
            "-"
        ]
    );
    for (i, (line, classified)) in lines.iter().zip(&verdicts).enumerate() {
        // Records are written in the order exchanges end; these ran one after another.
        let record = &records[i];
        assert_eq!(line["verdict"], record["outcome"], "{line}\n{record}");
        assert_eq!(line["sessionId"], "s1", "{line}");
        match line["method"].as_str() {
            Some("tools/call") => assert_eq!(classified["outcome"], record["outcome"]),
            Some("initialize") | Some("tools/list") => {
                assert_eq!(record["outcome"], "RESULT");
                assert_eq!(classified["outcome"], record["verdict"]["outcome"]);
            }
            Some("notifications/initialized") => {
                assert_eq!(record["outcome"], "ACCEPTED");
                assert_eq!(line["status"], 202);
                // No response was due; classify, judging the line as a request's answer, says
                // none came.
                assert_eq!(classified["outcome"], "MISSING_RESPONSE");
            }
            _ => {
                assert_eq!(line["request"]["method"], "DELETE");
                assert_eq!(record["outcome"], "ACCEPTED");
            }
        }
    }
    assert_eq!(lines[0]["headers"]["mcp-session-id"], "s1");
    assert_eq!(lines[2]["request"]["headers"]["mcp-session-id"], "s1");
    kitchen.shutdown().await;
}

/// No response head: a response timeout (the proxy answers 504) and an unreachable upstream
/// (502) are lines with `end: "no_response"`, the proxy's status and an empty body, and
/// classify judges them as the proxy did (`TIMEOUT`, `CONNECTION_ERROR`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exchanges_without_a_response_head_are_captured_as_the_proxy_answered() {
    let kitchen = kitchen().await;
    let dir = tmpdir("noresponse");
    let cap = dir.join("capture.jsonl");
    let held =
        "/s/chaos.mix/mcp?params=%7B%22delayMs%22%3A3000%2C%22rates%22%3A%7B%22delay%22%3A1.0%7D%7D";
    let args = capture_args(&cap, None, &["--response-timeout=0.3"]);
    let (status, err, ()) = through_proxy(kitchen.base_url(), args, move |addr| {
        let r = call(addr, held, 1, "test_simple_text", "{}", &[]);
        assert!(r.starts_with("HTTP/1.1 504"), "{r}");
    })
    .await;
    assert!(status.success(), "{err}");
    // An upstream nobody listens on: bind a port, then free it.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gone = format!("http://{}", free.local_addr().unwrap());
    drop(free);
    let cap2 = dir.join("capture2.jsonl");
    let args = capture_args(&cap2, None, &[]);
    let (status, err, ()) = through_proxy(gone, args, |addr| {
        let r = call(addr, "/mcp", 2, "test_simple_text", "{}", &[]);
        assert!(r.starts_with("HTTP/1.1 502"), "{r}");
    })
    .await;
    assert!(status.success(), "{err}");
    for (path, want_status, want) in [(&cap, 504, "TIMEOUT"), (&cap2, 502, "CONNECTION_ERROR")] {
        let lines = json_lines(path);
        assert_eq!(lines.len(), 1);
        let l = &lines[0];
        assert_eq!(l["end"], "no_response", "{l}");
        assert_eq!(l["status"], want_status, "{l}");
        assert_eq!(l["body"], "", "{l}");
        assert!(l.get("headMs").is_none(), "{l}");
        assert_eq!(l["verdict"], want, "{l}");
        assert_eq!(l["method"], "tools/call");
        let v = classify_batch(path);
        assert_eq!(v[0]["outcome"], want, "{}", v[0]);
    }
    kitchen.shutdown().await;
}

/// Issue 23 item 7: every name of the shared secret lists, as a query parameter and as a
/// header, with a canary value: none reaches the capture nor the records (`--log-headers` on),
/// while the exchange and the harmless parameter are there. The help names every one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_listed_secret_name_stays_out_of_capture_and_records() {
    use mcp_triage_proxy::guard::{SECRET_HEADERS, SECRET_QUERY_PARAMS};
    let kitchen = kitchen().await;
    let dir = tmpdir("names");
    let (cap, log) = (dir.join("capture.jsonl"), dir.join("records.jsonl"));
    let args = capture_args(&cap, Some(&log), &["--log-headers"]);
    let (status, err, ()) = through_proxy(kitchen.base_url(), args, |addr| {
        let query: Vec<String> = SECRET_QUERY_PARAMS
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{n}=CANARY-Q{i}-x"))
            .collect();
        let path = format!(
            "/.well-known/oauth-protected-resource?{}&a=1",
            query.join("&")
        );
        let headers: Vec<(String, String)> = SECRET_HEADERS
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_ascii_uppercase(), format!("CANARY-H{i}-x")))
            .collect();
        let refs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        http(addr, "GET", &path, &refs, "");
        let r = call(
            addr,
            "/s/baseline/mcp?responseMode=json",
            1,
            "test_simple_text",
            "{}",
            &refs,
        );
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    })
    .await;
    assert!(status.success(), "{err}");
    let capture = std::fs::read_to_string(&cap).unwrap();
    let records = std::fs::read_to_string(&log).unwrap();
    for (what, text) in [("capture", &capture), ("records", &records)] {
        assert!(
            !text.contains("CANARY-"),
            "a canary reached the {what}:\n{text}"
        );
        assert!(text.contains("a=1"), "the {what} keeps the rest:\n{text}");
    }
    assert_eq!(json_lines(&cap).len(), 2, "{capture}");
    let help = Command::new(BIN)
        .args(["proxy", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout).to_ascii_lowercase();
    for name in SECRET_HEADERS.iter().chain(SECRET_QUERY_PARAMS.iter()) {
        assert!(help.contains(name), "proxy --help names {name}");
    }
    kitchen.shutdown().await;
}

/// `--capture-hash-arguments`: the argument values never reach the capture (each is a hash),
/// the line says `argumentsHashed`, and `kitchen --replay` answers it to a call of the same
/// tool with other arguments (a capture without the flag would not match them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hashed_arguments_stay_out_and_replay_matches_by_tool() {
    use mcp_triage_kitchen::replay::{start_replay, Capture, Replay, ReplayOptions};
    let kitchen = kitchen().await;
    let dir = tmpdir("hashargs");
    let cap = dir.join("capture.jsonl");
    let args = capture_args(&cap, None, &["--capture-hash-arguments"]);
    let (status, err, ()) = through_proxy(kitchen.base_url(), args, |addr| {
        let r = call(
            addr,
            "/s/baseline/mcp?responseMode=json",
            1,
            "test_simple_text",
            r#"{"note":"CANARY-ARG-9a1","n":42}"#,
            &[],
        );
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    })
    .await;
    assert!(status.success(), "{err}");
    kitchen.shutdown().await;
    let text = std::fs::read_to_string(&cap).unwrap();
    assert!(!text.contains("CANARY-ARG-9a1"), "{text}");
    let line = &json_lines(&cap)[0];
    assert_eq!(line["argumentsHashed"], true, "{text}");
    let body: Value = serde_json::from_str(line["request"]["body"].as_str().unwrap()).unwrap();
    let hashed = &body["params"]["arguments"];
    assert!(
        hashed["note"].as_str().unwrap().starts_with("sha256:"),
        "{body}"
    );
    assert!(
        hashed["n"].as_str().unwrap().starts_with("sha256:"),
        "{body}"
    );
    let replay = Replay::new(
        Capture::read(&cap, 1 << 20).unwrap(),
        ReplayOptions { speed: 1.0 },
    )
    .unwrap();
    let h = start_replay(
        "127.0.0.1:0".parse().unwrap(),
        mcp_triage_kitchen::KitchenOptions::default(),
        replay,
    )
    .await
    .unwrap();
    let addr = h.local_addr().to_string();
    let r = tokio::task::spawn_blocking(move || {
        call(
            &addr,
            "/mcp",
            7,
            "test_simple_text",
            r#"{"other":true}"#,
            &[],
        )
    })
    .await
    .unwrap();
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    let served: Vec<Value> = h
        .kitchen()
        .journal()
        .into_iter()
        .filter(|e| e["method"] == "tools/call")
        .collect();
    assert_eq!(served[0]["replay"]["seq"], 1, "{served:?}");
    h.shutdown().await;
}
