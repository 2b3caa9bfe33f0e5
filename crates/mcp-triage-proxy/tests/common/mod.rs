//! Test helpers: a kitchen, a proxy in front of it, a raw hyper HTTP/1.1 client that sees exactly
//! the bytes on the wire, and the records.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{HeaderMap, Request};
use hyper_util::rt::TokioIo;
use mcp_triage_kitchen::{start, KitchenHandle, KitchenOptions};
use mcp_triage_proxy::http::{ProxyHandle, ProxyOptions};
use mcp_triage_proxy::{LogWriter, MemoryConsumer, Record};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Every network step of a test is bounded by this.
pub const STEP: Duration = Duration::from_secs(10);

pub struct Rig {
    pub kitchen: KitchenHandle,
    pub proxy: ProxyHandle,
    pub records: MemoryConsumer,
    pub writer: LogWriter,
}

impl Rig {
    pub async fn new() -> Rig {
        Rig::with(|_| {}).await
    }

    pub async fn with(f: impl FnOnce(&mut ProxyOptions)) -> Rig {
        let kitchen = start("127.0.0.1:0".parse().unwrap(), KitchenOptions::default())
            .await
            .expect("kitchen starts");
        let mut o = ProxyOptions::new(&kitchen.base_url()).unwrap();
        o.drain_timeout = Duration::from_secs(2);
        f(&mut o);
        let records = MemoryConsumer::default();
        let (sink, writer) = LogWriter::start(None, vec![Box::new(records.clone())]);
        let proxy = mcp_triage_proxy::http::start("127.0.0.1:0".parse().unwrap(), o, sink)
            .await
            .expect("proxy starts");
        Rig {
            kitchen,
            proxy,
            records,
            writer,
        }
    }

    pub fn direct(&self) -> SocketAddr {
        self.kitchen.local_addr()
    }

    pub fn via(&self) -> SocketAddr {
        self.proxy.local_addr()
    }

    /// Stops the proxy, drains the writer and returns every record.
    pub async fn finish(self) -> Vec<Record> {
        self.proxy.shutdown().await;
        let records = self.records.clone();
        tokio::task::spawn_blocking(move || self.writer.drain())
            .await
            .unwrap();
        self.kitchen.shutdown().await;
        let v = records.0.lock().unwrap().clone();
        v
    }
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub body_error: Option<String>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    pub fn sha(&self) -> String {
        sha(&self.body)
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

pub fn sha(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One request on a fresh connection. `Err` = no HTTP response (connection error).
pub async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Result<Resp, String> {
    tokio::time::timeout(STEP, async {
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| e.to_string())?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut b = Request::builder()
            .method(method)
            .uri(path)
            .header("host", addr.to_string());
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let req = b
            .body(Full::new(Bytes::from(body.unwrap_or("").to_string())))
            .map_err(|e| e.to_string())?;
        let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let mut body = resp.into_body();
        let mut buf = Vec::new();
        let mut body_error = None;
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(f) => {
                    if let Some(d) = f.data_ref() {
                        buf.extend_from_slice(d);
                    }
                }
                Err(e) => {
                    body_error = Some(e.to_string());
                    break;
                }
            }
        }
        Ok(Resp {
            status,
            headers,
            body: Bytes::from(buf),
            body_error,
        })
    })
    .await
    .map_err(|_| "timed out".to_string())?
}

pub const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");
pub const CT: (&str, &str) = ("content-type", "application/json");

pub fn meta() -> Value {
    json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
            "io.modelcontextprotocol/clientInfo": { "name": "proxy-test", "version": "0" } })
}

/// A modern (2026-07-28) request body and its headers.
pub async fn modern(
    addr: SocketAddr,
    path: &str,
    id: i64,
    method: &str,
    mut params: Value,
) -> Result<Resp, String> {
    if params.get("_meta").is_none() {
        params["_meta"] = meta();
    }
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let body =
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
    let mut h = vec![
        ACCEPT,
        CT,
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(n) = name.as_deref() {
        h.push(("mcp-name", n));
    }
    send(addr, "POST", path, &h, Some(&body)).await
}

/// POST a JSON-RPC message with legacy headers.
pub async fn post(
    addr: SocketAddr,
    path: &str,
    session: Option<&str>,
    msg: &Value,
) -> Result<Resp, String> {
    let body = msg.to_string();
    let mut h = vec![ACCEPT, CT];
    if let Some(s) = session {
        h.push(("mcp-session-id", s));
    }
    send(addr, "POST", path, &h, Some(&body)).await
}

/// initialize + notifications/initialized; returns the session id.
pub async fn legacy_session(addr: SocketAddr, path: &str, caps: Value) -> String {
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": caps,
                    "clientInfo": { "name": "proxy-test", "version": "1" } } });
    let r = post(addr, path, None, &init)
        .await
        .expect("initialize answered");
    assert_eq!(r.status, 200, "initialize: {}", r.text());
    let sid = r.header("mcp-session-id").expect("session id").to_string();
    let n = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let r = post(addr, path, Some(&sid), &n)
        .await
        .expect("initialized answered");
    assert_eq!(r.status, 202);
    sid
}

pub fn call(id: i64, tool: &str, args: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool, "arguments": args } })
}

/// What a client concludes from what it received: the core's verdict on the bytes.
pub fn client_verdict(r: &Result<Resp, String>, id: i64) -> String {
    match r {
        Err(_) => "CONNECTION_ERROR".into(),
        Ok(r) => {
            let mut head = mcp_triage_core::ResponseHead::new(r.status);
            for (n, v) in &r.headers {
                head = head.header(n.as_str(), v.to_str().unwrap_or(""));
            }
            let ctx = mcp_triage_core::CallContext::new(id);
            let mut c = mcp_triage_core::ResponseClassifier::new(&head, ctx);
            c.feed(&r.body);
            let v = match &r.body_error {
                Some(e) => c.interrupted(mcp_triage_core::Interruption::ConnectionLost(e.clone())),
                None => c.finish(),
            };
            v.outcome.as_str().to_string()
        }
    }
}

pub fn by_id(records: &[Record], id: i64) -> Vec<&Record> {
    records.iter().filter(|r| r.id == Some(json!(id))).collect()
}
