//! Raw-HTTP test helpers (feature `testing`): a plain hyper HTTP/1.1 client, no MCP client
//! library, so tests see exactly the statuses, headers and bytes on the wire, plus the
//! JSON-RPC messages both eras need. The kitchen's integration tests and the proxy's (which
//! compare bytes through the proxy with bytes straight from the kitchen) share this one copy;
//! it is not part of the kitchen's API for servers.
//!
//! Helpers panic on what a test should never see (a stream that does not open, a response
//! that is not JSON) because that is a failed test, not an error to handle.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{HeaderMap, Request};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

use crate::{start, KitchenHandle, KitchenOptions};

/// Every network step of a test is bounded by this.
pub const STEP: Duration = Duration::from_secs(10);

/// A kitchen with default options on a free loopback port.
pub async fn kitchen() -> KitchenHandle {
    kitchen_with(KitchenOptions::default()).await
}

/// A kitchen with options `o` on a free loopback port.
pub async fn kitchen_with(o: KitchenOptions) -> KitchenHandle {
    start("127.0.0.1:0".parse().unwrap(), o)
        .await
        .expect("kitchen starts")
}

/// A whole response as the wire carried it.
#[derive(Debug)]
pub struct Resp {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: HeaderMap,
    /// Body bytes received (possibly partial).
    pub body: Bytes,
    /// Set when the body ended with an error (connection cut).
    pub body_error: Option<String>,
}

impl Resp {
    /// A header value, when present and visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    /// The body as JSON; panics (failing the test) when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {:?}", self.text()))
    }
    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// JSON-RPC messages in an SSE body (`data:` lines that parse).
    pub fn sse_messages(&self) -> Vec<Value> {
        self.text()
            .split("\n\n")
            .filter_map(|ev| {
                let data: Vec<&str> = ev
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(|d| d.trim_start())
                    .collect();
                serde_json::from_str(&data.join("\n")).ok()
            })
            .collect()
    }
    /// The JSON-RPC response whether the body is JSON or SSE.
    pub fn rpc(&self) -> Value {
        if self
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
        {
            self.sse_messages()
                .into_iter()
                .find(|m| m.get("method").is_none())
                .expect("a response in the SSE stream")
        } else {
            self.json()
        }
    }
}

/// Why a helper got no HTTP response; the text is the underlying error's (or `timed out`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The TCP connection could not be made.
    #[error("{0}")]
    Connect(#[source] std::io::Error),
    /// The HTTP/1.1 handshake failed.
    #[error("{0}")]
    Handshake(#[source] hyper::Error),
    /// The request could not be built (a header the test gave is not valid).
    #[error("{0}")]
    Request(#[source] hyper::http::Error),
    /// Sending the request or reading the response head failed.
    #[error("{0}")]
    Send(#[source] hyper::Error),
    /// No response within [`STEP`].
    #[error("timed out")]
    TimedOut,
}

/// Connect, send one request on a fresh HTTP/1.1 connection and return the response head
/// with its body unread. `Err` = no response head (connect, handshake or send failed).
async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Result<hyper::Response<hyper::body::Incoming>, SendError> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(SendError::Connect)?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(SendError::Handshake)?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut b = Request::builder().method(method).uri(path);
    // `Host` is the address unless the test sends its own (rebinding and loopback-name tests).
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        b = b.header("host", addr.to_string());
    }
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let req = b
        .body(Full::new(Bytes::from(body.unwrap_or("").to_string())))
        .map_err(SendError::Request)?;
    sender.send_request(req).await.map_err(SendError::Send)
}

/// Send one request on a fresh connection. `Err` = no HTTP response (connection error).
pub async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Result<Resp, SendError> {
    tokio::time::timeout(STEP, async {
        let resp = request(addr, method, path, headers, body).await?;
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
    .map_err(|_| SendError::TimedOut)?
}

/// The `Accept` header every MCP POST carries.
pub const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");
/// `Content-Type: application/json`.
pub const CT: (&str, &str) = ("content-type", "application/json");

/// POST a JSON-RPC message (legacy headers; session optional).
pub async fn post(
    addr: SocketAddr,
    path: &str,
    session: Option<&str>,
    msg: &Value,
) -> Result<Resp, SendError> {
    let body = msg.to_string();
    let mut h = vec![ACCEPT, CT];
    if let Some(s) = session {
        h.push(("mcp-session-id", s));
    }
    send(addr, "POST", path, &h, Some(&body)).await
}

/// The `clientInfo` the helpers send unless a test names its own (`*_as`).
pub fn default_client() -> Value {
    json!({ "name": "raw-test", "version": "0" })
}

/// An `initialize` request from [`default_client`].
pub fn initialize_msg(id: i64, version: &str, caps: Value) -> Value {
    initialize_msg_as(id, version, caps, default_client())
}

/// An `initialize` request from `client` (a `clientInfo` object).
pub fn initialize_msg_as(id: i64, version: &str, caps: Value, client: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": { "protocolVersion": version, "capabilities": caps, "clientInfo": client } })
}

/// `GET` + `Last-Event-ID: last` on the legacy session `sid`: a 2025-11-25 resumption.
pub async fn resume(addr: SocketAddr, path: &str, sid: &str, last: &str) -> Resp {
    send(
        addr,
        "GET",
        path,
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", sid),
            ("last-event-id", last),
        ],
        None,
    )
    .await
    .unwrap()
}

/// initialize + notifications/initialized as [`default_client`]; returns the session id.
pub async fn legacy_session(addr: SocketAddr, path: &str, caps: Value) -> String {
    legacy_session_as(addr, path, caps, default_client()).await
}

/// initialize (2025-11-25) + notifications/initialized as `client`; returns the session id.
pub async fn legacy_session_as(addr: SocketAddr, path: &str, caps: Value, client: Value) -> String {
    let r = post(
        addr,
        path,
        None,
        &initialize_msg_as(1, "2025-11-25", caps, client),
    )
    .await
    .expect("initialize answered");
    assert_eq!(r.status, 200, "initialize: {}", r.text());
    let sid = r.header("mcp-session-id").expect("session id").to_string();
    let n = post(
        addr,
        path,
        Some(&sid),
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .await
    .unwrap();
    assert_eq!(n.status, 202);
    sid
}

/// A `tools/call` request (no `_meta`; [`modern`] adds it).
pub fn call_msg(id: i64, tool: &str, args: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool, "arguments": args } })
}

/// The 2026-07-28 `_meta` of a request from [`default_client`].
pub fn meta() -> Value {
    meta_as(default_client())
}

/// The 2026-07-28 `_meta` of a request from `client` (a `clientInfo` object), offering elicitation.
pub fn meta_as(client: Value) -> Value {
    json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
            "io.modelcontextprotocol/clientInfo": client })
}

/// A modern (2026-07-28) request with correct headers from [`default_client`]. `params` gets
/// `_meta` added unless it has one.
pub async fn modern(
    addr: SocketAddr,
    path: &str,
    id: i64,
    method: &str,
    params: Value,
) -> Result<Resp, SendError> {
    modern_as(addr, path, id, method, params, default_client()).await
}

/// [`modern`] from `client` (a `clientInfo` object, put in the added `_meta`).
pub async fn modern_as(
    addr: SocketAddr,
    path: &str,
    id: i64,
    method: &str,
    mut params: Value,
    client: Value,
) -> Result<Resp, SendError> {
    if params.get("_meta").is_none() {
        params["_meta"] = meta_as(client);
    }
    // Mcp-Name as a client must send it: the tool/prompt name, the resource URI, or (tasks
    // extension, SEP-2663) the taskId.
    let name = match method {
        "tasks/get" | "tasks/update" | "tasks/cancel" => params.get("taskId"),
        _ => params.get("name").or_else(|| params.get("uri")),
    }
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

/// Text of the first content block of a tools/call result, parsed as JSON when it is JSON.
pub fn tool_text(rpc: &Value) -> Value {
    let t = rpc["result"]["content"][0]["text"].as_str().unwrap_or("");
    serde_json::from_str(t).unwrap_or(Value::String(t.to_string()))
}

/// An open streaming response (GET stream, `subscriptions/listen`), read event by event.
pub struct Stream {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: HeaderMap,
    body: hyper::body::Incoming,
    buf: String,
}

/// Send a request and return as soon as the response head arrives; the body stays open.
pub async fn open_stream(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Stream {
    tokio::time::timeout(STEP, async {
        let resp = request(addr, method, path, headers, body)
            .await
            .unwrap_or_else(|e| panic!("no response head: {e}"));
        Stream {
            status: resp.status().as_u16(),
            headers: resp.headers().clone(),
            body: resp.into_body(),
            buf: String::new(),
        }
    })
    .await
    .expect("stream opened in time")
}

impl Stream {
    /// The next JSON-RPC message on the stream (comment-only events are skipped); panics
    /// after [`STEP`] or when the stream ends.
    pub async fn next_message(&mut self) -> Value {
        tokio::time::timeout(STEP, async {
            loop {
                while let Some(end) = self.buf.find("\n\n") {
                    let ev: String = self.buf.drain(..end + 2).collect();
                    let data: Vec<&str> = ev
                        .lines()
                        .filter_map(|l| l.strip_prefix("data:"))
                        .map(|d| d.trim_start())
                        .collect();
                    if let Ok(v) = serde_json::from_str::<Value>(&data.join("\n")) {
                        return v;
                    }
                }
                let frame = self
                    .body
                    .frame()
                    .await
                    .expect("stream still open")
                    .expect("stream not cut");
                if let Some(d) = frame.data_ref() {
                    self.buf.push_str(&String::from_utf8_lossy(d));
                }
            }
        })
        .await
        .expect("a message within the step timeout")
    }
}

/// Open a 2026 `subscriptions/listen` stream with request id `id` and filter `notifications`.
pub async fn listen(addr: SocketAddr, path: &str, id: i64, notifications: Value) -> Stream {
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": { "_meta": meta(), "notifications": notifications } })
    .to_string();
    open_stream(
        addr,
        "POST",
        path,
        &[
            ACCEPT,
            CT,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "subscriptions/listen"),
        ],
        Some(&body),
    )
    .await
}

/// Open a legacy session's standalone GET stream.
pub async fn get_stream(addr: SocketAddr, path: &str, session: &str) -> Stream {
    open_stream(
        addr,
        "GET",
        path,
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", session),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        None,
    )
    .await
}

/// A POST to `/mcp` whose chunked body is broken after its first chunk (a chunk size that is no
/// number), sent as raw bytes since no HTTP client sends that; the answer as text (head and
/// body), read until a JSON body ended or 10 s passed. For the "malformed body is 400" tests
/// of the kitchen and the replay server.
pub async fn post_broken_chunked_body(addr: SocketAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n\
         5\r\n{{\"jso\r\nzz-not-a-size\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        let mut chunk = [0u8; 4096];
        loop {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            if buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.ends_with(b"}") {
                break;
            }
        }
    })
    .await;
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refused connection is `Connect`, with the socket error's text.
    #[tokio::test]
    async fn no_listener_is_a_connect_error() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let e = send(addr, "GET", "/", &[], None).await.unwrap_err();
        let SendError::Connect(io) = &e else {
            panic!("{e:?}");
        };
        assert_eq!(e.to_string(), io.to_string());
    }
}
