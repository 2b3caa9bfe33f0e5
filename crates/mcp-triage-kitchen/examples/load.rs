//! A small closed-loop load generator for `bench/kitchen-load.sh`: the same client for every
//! target, so the kitchen and a peer server are measured alike.
//!
//! `load --url URL [--concurrency C] [--seconds S] [--tool NAME] [--args JSON]`
//!   One legacy session (initialize + notifications/initialized) is shared by C keep-alive
//!   HTTP/1.1 connections, each sending `tools/call` back to back for S seconds. A response
//!   counts as OK when it is HTTP 200 and its body (JSON or SSE) carries `"result"`. Prints one
//!   JSON line: requests, errors, rps, p50_ms, p99_ms.
//!
//! `load --idle N --url URL [--hold S]`
//!   Opens N connections, sends one small request on each (so each is a kept-alive HTTP
//!   connection, not a half-open socket), prints `idle-ready N` and holds them S seconds.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

struct Target {
    addr: String,
    path: String,
}

fn parse_url(u: &str) -> Target {
    let rest = u.strip_prefix("http://").expect("http:// URL");
    let (addr, path) = rest.split_once('/').unwrap_or((rest, ""));
    assert!(
        addr.starts_with("127.0.0.1:"),
        "load only talks to 127.0.0.1"
    );
    Target {
        addr: addr.to_string(),
        path: format!("/{path}"),
    }
}

async fn connect(t: &Target) -> Sender {
    let stream = tokio::net::TcpStream::connect(&t.addr)
        .await
        .expect("connect");
    let _ = stream.set_nodelay(true);
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender
}

async fn post(
    s: &mut Sender,
    t: &Target,
    session: Option<&str>,
    body: &Value,
) -> Result<(u16, hyper::HeaderMap, Bytes), String> {
    s.ready().await.map_err(|e| e.to_string())?;
    let mut b = Request::builder()
        .method("POST")
        .uri(&t.path)
        .header("host", &t.addr)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(sid) = session {
        b = b
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let req = b
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|e| e.to_string())?;
    let resp = s.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, headers, body))
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let target = parse_url(&arg(&args, "--url").expect("--url"));
    if let Some(n) = arg(&args, "--idle") {
        let n: usize = n.parse().expect("--idle N");
        let hold: u64 = arg(&args, "--hold").map_or(10, |s| s.parse().expect("--hold S"));
        let mut held = Vec::with_capacity(n);
        for _ in 0..n {
            let mut s = connect(&target).await;
            s.ready().await.expect("ready");
            let req = Request::builder()
                .method("GET")
                .uri("/kitchen/none")
                .header("host", &target.addr)
                .body(Full::new(Bytes::new()))
                .expect("request");
            let resp = s.send_request(req).await.expect("response");
            let _ = resp.into_body().collect().await;
            held.push(s);
        }
        println!("idle-ready {}", held.len());
        tokio::time::sleep(Duration::from_secs(hold)).await;
        return;
    }
    let concurrency: usize = arg(&args, "--concurrency").map_or(64, |s| s.parse().expect("C"));
    let seconds: f64 = arg(&args, "--seconds").map_or(10.0, |s| s.parse().expect("S"));
    let tool = arg(&args, "--tool").unwrap_or_else(|| "test_simple_text".into());
    let tool_args: Value = arg(&args, "--args")
        .map(|s| serde_json::from_str(&s).expect("--args JSON"))
        .unwrap_or(json!({}));

    let mut s = connect(&target).await;
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "kitchen-load", "version": "1" } } });
    let (st, h, body) = post(&mut s, &target, None, &init)
        .await
        .expect("initialize");
    assert_eq!(st, 200, "initialize: {}", String::from_utf8_lossy(&body));
    let sid = h
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("session id")
        .to_string();
    let (st, _, _) = post(
        &mut s,
        &target,
        Some(&sid),
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .await
    .expect("initialized");
    assert!(st == 202 || st == 200, "notifications/initialized: {st}");

    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let mut tasks = Vec::new();
    for w in 0..concurrency {
        let t = Target {
            addr: target.addr.clone(),
            path: target.path.clone(),
        };
        let sid = sid.clone();
        let tool = tool.clone();
        let tool_args = tool_args.clone();
        tasks.push(tokio::spawn(async move {
            let mut s = connect(&t).await;
            let mut lat = Vec::new();
            let mut errors = 0u64;
            let mut id = (w as u64) << 32;
            while Instant::now() < deadline {
                id += 1;
                let msg = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": { "name": tool, "arguments": tool_args } });
                let t0 = Instant::now();
                match post(&mut s, &t, Some(&sid), &msg).await {
                    Ok((200, _, b)) if contains(&b, b"\"result\"") => {
                        lat.push(t0.elapsed().as_micros() as u32)
                    }
                    Ok(_) => errors += 1,
                    Err(_) => {
                        errors += 1;
                        s = connect(&t).await;
                    }
                }
            }
            (lat, errors)
        }));
    }
    let started = Instant::now();
    let mut all = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await.expect("worker");
        all.extend(l);
        errors += e;
    }
    let elapsed = started.elapsed().as_secs_f64().max(seconds);
    all.sort_unstable();
    let pct = |p: f64| {
        if all.is_empty() {
            0.0
        } else {
            all[((all.len() as f64 * p) as usize).min(all.len() - 1)] as f64 / 1000.0
        }
    };
    println!(
        "{}",
        json!({ "requests": all.len(), "errors": errors, "concurrency": concurrency, "seconds": elapsed,
            "rps": (all.len() as f64 / elapsed).round(), "p50_ms": pct(0.50), "p99_ms": pct(0.99) })
    );
}
