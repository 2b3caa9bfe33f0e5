//! The 2024-11-05 HTTP+SSE transport, reached through the spec's fallback probe: a GET opens
//! an event stream whose first `endpoint` event names the URL to POST messages to; responses
//! (and server requests) arrive as `message` events on that one stream.
//!
//! A reader task owns the stream: it routes each response to the request waiting for its id
//! (bounded by the classifier's event limit), answers server requests by POST, and fails every
//! waiting request when the stream ends, which the caller reports as `CONNECTION_ERROR`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mcp_triage_core::retry::Delivery;
use mcp_triage_core::sse::{Flow, SseItem, SseParser};
use mcp_triage_core::{CallContext, Verdict};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::options::ClientOptions;
use crate::wire::{self, Incoming, Sent};

type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Vec<u8>>>>>;

/// An open HTTP+SSE session.
pub(crate) struct SseSession {
    http: reqwest::Client,
    pub post_url: String,
    headers: Vec<(String, String)>,
    opts: Arc<ClientOptions>,
    pending: Pending,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseSession {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

fn resolve(base: &str, endpoint: &str) -> Option<String> {
    if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
        return Some(endpoint.to_string());
    }
    let (scheme, rest) = base.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    if endpoint.starts_with('/') {
        return Some(format!("{scheme}://{authority}{endpoint}"));
    }
    let path = rest[authority.len()..]
        .split(['?', '#'])
        .next()
        .unwrap_or("");
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    Some(format!("{scheme}://{authority}{dir}/{endpoint}"))
}

fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    Some(format!(
        "{}://{}",
        scheme.to_ascii_lowercase(),
        authority.to_ascii_lowercase()
    ))
}

/// Why a 2024-11-05 HTTP+SSE session could not be opened: the server is not an HTTP+SSE
/// server, or its stream did not name a usable message endpoint.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SseOpenError {
    /// The target is not an HTTP URL.
    #[error("HTTP+SSE needs an HTTP target")]
    NotHttp,
    /// No answer to the GET before the timeout.
    #[error("the GET for an HTTP+SSE stream timed out")]
    TimedOut,
    /// The GET failed on the transport.
    #[error("the GET for an HTTP+SSE stream failed: {}", wire::error_chain(.0))]
    Get(#[source] reqwest::Error),
    /// The answer is not an event stream.
    #[error("GET answered {status} {content_type}: not an HTTP+SSE (2024-11-05) server")]
    NotAnEventStream {
        /// The HTTP status.
        status: u16,
        /// The `Content-Type` (empty when absent or not text).
        content_type: String,
    },
    /// No `endpoint` event before the timeout.
    #[error("no endpoint event on the HTTP+SSE stream")]
    NoEndpoint,
    /// The stream ended before an `endpoint` event.
    #[error("the HTTP+SSE stream ended before its endpoint event")]
    EndedEarly,
    /// The `endpoint` event does not resolve to a URL.
    #[error("the endpoint event is not a URL")]
    BadEndpoint,
    /// The `endpoint` is on another origin than the stream.
    #[error("the endpoint {endpoint} is on another origin; refusing it")]
    OtherOrigin {
        /// The resolved endpoint URL.
        endpoint: String,
    },
}

impl SseSession {
    fn request(&self, b: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        crate::headers::with_auth(b, &self.headers, self.opts.bearer.as_deref())
    }

    /// GETs `url` and waits for the `endpoint` event. `Err` says why the server is not an
    /// HTTP+SSE server.
    pub async fn open(
        http: reqwest::Client,
        url: &str,
        headers: Vec<(String, String)>,
        opts: Arc<ClientOptions>,
    ) -> Result<SseSession, SseOpenError> {
        let mut req = http.get(url).header("Accept", "text/event-stream");
        req = crate::headers::with_auth(req, &headers, opts.bearer.as_deref());
        let resp = tokio::time::timeout(opts.timeout, req.send())
            .await
            .map_err(|_| SseOpenError::TimedOut)?
            .map_err(SseOpenError::Get)?;
        if !crate::headers::is_event_stream(&resp) {
            return Err(SseOpenError::NotAnEventStream {
                status: resp.status().as_u16(),
                content_type: resp
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string(),
            });
        }
        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        let (endpoint_tx, endpoint_rx) = oneshot::channel::<String>();
        let reader = tokio::spawn(read_stream(
            resp,
            pending.clone(),
            endpoint_tx,
            http.clone(),
            url.to_string(),
            headers.clone(),
            opts.clone(),
        ));
        let endpoint = tokio::time::timeout(opts.timeout, endpoint_rx)
            .await
            .map_err(|_| SseOpenError::NoEndpoint)?
            .map_err(|_| SseOpenError::EndedEarly)?;
        let post_url = resolve(url, &endpoint).ok_or(SseOpenError::BadEndpoint)?;
        if origin(&post_url) != origin(url) {
            reader.abort();
            return Err(SseOpenError::OtherOrigin { endpoint: post_url });
        }
        Ok(SseSession {
            http,
            post_url,
            headers,
            opts,
            pending,
            reader,
        })
    }

    /// POSTs a message that expects no answer (notification, reply to a server request).
    pub async fn post(&self, msg: &Value) {
        let req = self
            .request(self.http.post(&self.post_url))
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(msg).unwrap_or_default());
        let _ = tokio::time::timeout(self.opts.timeout, async {
            if let Ok(r) = req.send().await {
                let _ = r.bytes().await;
            }
        })
        .await;
    }

    /// POSTs a request and waits for its response on the stream.
    pub async fn exchange(
        &self,
        msg: &Value,
        ctx: &CallContext,
        deadline: tokio::time::Instant,
    ) -> Sent {
        let started = Instant::now();
        let key = msg["id"].to_string();
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .expect("pending lock")
            .insert(key.clone(), tx);
        let req = self
            .request(self.http.post(&self.post_url))
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(msg).unwrap_or_default());
        let status = match tokio::time::timeout_at(deadline, req.send()).await {
            Err(_) => {
                self.pending.lock().expect("pending lock").remove(&key);
                return Sent::failed(
                    Verdict::timeout("no answer to the POST before the deadline"),
                    Delivery::MaybeExecuted,
                    started,
                );
            }
            Ok(Err(e)) => {
                self.pending.lock().expect("pending lock").remove(&key);
                let d = if e.is_connect() {
                    Delivery::NeverSent
                } else {
                    Delivery::MaybeExecuted
                };
                return Sent::failed(Verdict::connection_error(wire::error_chain(&e)), d, started);
            }
            Ok(Ok(r)) => {
                let status = r.status().as_u16();
                if !r.status().is_success() {
                    self.pending.lock().expect("pending lock").remove(&key);
                    let mut v = Verdict::new(mcp_triage_core::Outcome::HttpError)
                        .with_detail(format!("the message POST got HTTP {status}"));
                    v.status = Some(status);
                    let mut s = Sent::failed(v, Delivery::Sent, started);
                    s.status = Some(status);
                    return s;
                }
                let _ = r.bytes().await;
                status
            }
        };
        let line = match tokio::time::timeout_at(deadline, rx).await {
            Err(_) => {
                self.pending.lock().expect("pending lock").remove(&key);
                let cancel = serde_json::json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": { "requestId": msg["id"], "reason": "timeout" } });
                self.post(&cancel).await;
                let mut s = Sent::failed(
                    Verdict::timeout("no response on the HTTP+SSE stream before the deadline; notifications/cancelled sent"),
                    Delivery::MaybeExecuted,
                    started,
                );
                s.status = Some(status);
                return s;
            }
            Ok(Err(_)) => {
                let mut s = Sent::failed(
                    Verdict::connection_error("the HTTP+SSE stream ended before the response"),
                    Delivery::MaybeExecuted,
                    started,
                );
                s.status = Some(status);
                return s;
            }
            Ok(Ok(line)) => line,
        };
        let (verdict, response) = wire::classify_line(&line, ctx);
        let mut s = Sent::failed(verdict, Delivery::Sent, started);
        s.response = response;
        s.status = Some(status);
        s.content_type = Some("text/event-stream".into());
        s.sse = false;
        s
    }
}

async fn read_stream(
    mut resp: reqwest::Response,
    pending: Pending,
    endpoint: oneshot::Sender<String>,
    http: reqwest::Client,
    url: String,
    headers: Vec<(String, String)>,
    opts: Arc<ClientOptions>,
) {
    let mut parser = SseParser::new(opts.limits.max_event_bytes);
    let mut endpoint = Some(endpoint);
    let mut post_url: Option<String> = None;
    while let Ok(Some(chunk)) = resp.chunk().await {
        let mut events: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        if parser
            .feed(&chunk, &mut |item| {
                if let SseItem::Event {
                    event_type, data, ..
                } = item
                {
                    events.push((event_type.to_vec(), data.to_vec()));
                }
                Flow::Continue
            })
            .is_err()
        {
            break; // an event over maxEventBytes: the stream cannot be trusted further
        }
        for (ty, data) in events {
            if ty == b"endpoint" {
                let e = String::from_utf8_lossy(&data).trim().to_string();
                post_url = resolve(&url, &e);
                if let Some(tx) = endpoint.take() {
                    let _ = tx.send(e);
                }
                continue;
            }
            if ty != b"message" {
                continue;
            }
            let Ok(v) = serde_json::from_slice::<Value>(&data) else {
                continue;
            };
            if let Some(inc) = Incoming::request_in(&v) {
                let reply = crate::answers::answer_or_error(&opts, &inc);
                if let Some(p) = &post_url {
                    let mut req = http.post(p).header("Content-Type", "application/json");
                    req = crate::headers::with_auth(req, &headers, opts.bearer.as_deref());
                    let req = req.body(serde_json::to_vec(&reply).unwrap_or_default());
                    let _ = tokio::time::timeout(opts.timeout, req.send()).await;
                }
                continue;
            }
            if let Some(id) = v.get("id") {
                if let Some(tx) = pending
                    .lock()
                    .expect("pending lock")
                    .remove(&id.to_string())
                {
                    let _ = tx.send(data);
                }
            }
        }
    }
    // The stream ended: every waiting request fails (its sender is dropped).
    pending.lock().expect("pending lock").clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_json_answer_to_the_get_is_not_an_sse_server() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/sse", l.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut sock, _) = l.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = sock.read(&mut buf).await;
            let _ = sock
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
                .await;
        });
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let opts = Arc::new(ClientOptions::default());
        let e = SseSession::open(http, &url, Vec::new(), opts)
            .await
            .err()
            .expect("not an event stream");
        assert!(matches!(
            e,
            SseOpenError::NotAnEventStream { status: 200, ref content_type } if content_type == "application/json"
        ));
        assert_eq!(
            e.to_string(),
            "GET answered 200 application/json: not an HTTP+SSE (2024-11-05) server"
        );
    }

    #[test]
    fn endpoints_resolve_against_the_stream_url() {
        assert_eq!(
            resolve("http://h:1/sse", "/messages?s=1").unwrap(),
            "http://h:1/messages?s=1"
        );
        assert_eq!(
            resolve("http://h:1/a/sse", "msg").unwrap(),
            "http://h:1/a/msg"
        );
        assert_eq!(
            resolve("http://h:1/sse", "http://h:1/x").unwrap(),
            "http://h:1/x"
        );
    }
}
