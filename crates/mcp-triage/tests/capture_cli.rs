//! `mcp-triage proxy --capture` and `mcp-triage wrap --capture` as real processes in front of
//! the kitchen (127.0.0.1 only, bounded in time): the capture classifies to the proxy's own
//! verdicts, keeps no secret, rotates, bounds bodies, reports a file it cannot write, and times
//! SSE chunks (docs/capture-format.md).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-triage");

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

/// Kills the process if the test fails before it stopped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// A `mcp-triage proxy` started by a test.
struct RunningProxy {
    child: KillOnDrop,
    stderr: BufReader<std::process::ChildStderr>,
    addr: String,
}

fn start_proxy(upstream: &str, extra: &[&OsStr]) -> RunningProxy {
    let child = Command::new(BIN)
        .args(["proxy", "--listen", "127.0.0.1:0", "--upstream", upstream])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let mut stderr = BufReader::new(child.0.stderr.take().unwrap());
    let mut start_line = String::new();
    stderr.read_line(&mut start_line).unwrap();
    let addr = start_line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("the proxy prints its URL: {start_line}"))
        .trim_start_matches("http://")
        .to_string();
    RunningProxy {
        child,
        stderr,
        addr,
    }
}

/// SIGTERM, then the exit status and the rest of stderr (bounded in time).
fn stop(p: RunningProxy) -> (std::process::ExitStatus, String) {
    let RunningProxy {
        mut child,
        mut stderr,
        ..
    } = p;
    let kill = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            return (s, rest);
        }
        assert!(Instant::now() < deadline, "the proxy did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
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
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
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
    let (cap2, log2) = (cap.clone(), log.clone());
    let (clients, calls) = (6usize, 50usize);
    let (status, err) = tokio::task::spawn_blocking(move || {
        let proxy = start_proxy(
            &upstream,
            &[
                OsStr::new("--capture"),
                cap2.as_os_str(),
                OsStr::new("--log"),
                log2.as_os_str(),
            ],
        );
        let threads: Vec<_> = (0..clients)
            .map(|k| {
                let addr = proxy.addr.clone();
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
        stop(proxy)
    })
    .await
    .unwrap();
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
    let cap2 = cap.clone();
    let (status, err, canaries) = tokio::task::spawn_blocking(move || {
        let proxy = start_proxy(&upstream, &[OsStr::new("--capture"), cap2.as_os_str()]);
        let addr = proxy.addr.clone();
        let mut canaries = vec![
            "CANARY-BEARER-1f3a".to_string(),
            "CANARY-QUERY-77b2".to_string(),
            "CANARY-COOKIE-0c9d".to_string(),
            "CANARY-APIKEY-5e11".to_string(),
        ];
        let r = call(
            &addr,
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
            &addr,
            "GET",
            "/.well-known/oauth-protected-resource?access_token=CANARY-QUERY-77b2",
            &[("authorization", "Bearer CANARY-BEARER-1f3a")],
            "",
        );
        // The OAuth flow of the kitchen's authorization server, through the proxy.
        let redirect = "http://127.0.0.1:9/callback";
        let reg = http(
            &addr,
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
            &addr,
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
            &addr,
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
            &addr,
            "/s/baseline/mcp?responseMode=sse",
            2,
            "test_simple_text",
            "{}",
            &[("authorization", &format!("Bearer {access}"))],
        );
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        canaries.push(access);
        canaries.push(refresh);
        let (status, err) = stop(proxy);
        (status, err, canaries)
    })
    .await
    .unwrap();
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
