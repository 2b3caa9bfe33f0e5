//! `kitchen --stdio`: the kitchen over the MCP stdio transport (newline-delimited JSON-RPC on
//! stdin/stdout, logs on stderr).
//!
//! Why a front over the HTTP endpoint and not a second server: the scenarios are the same
//! ones (their counters, their tools, their journal), so each message read from stdin is handed
//! to the kitchen's own endpoint in-process ([`crate::mcp::handle`], no socket) as the POST an
//! HTTP client would send, and what it answers (a JSON body or an SSE stream) is written to
//! stdout one message per line. The legacy session the endpoint hands out is kept here and
//! named on every later message, as a stdio server has exactly one client.
//!
//! stdio's own faults ([`fault::StdioFault`], the `stdio.*` ids) are applied on top, to the
//! first `tools/call`, over `baseline`. The journal goes to a file ([`sink`]).

pub mod fault;
pub mod sink;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::journal::Answer;
use crate::mcp::{handle, Target};
use crate::state::Shared;
use crate::{Kitchen, KitchenOptions};
use fault::StdioFault;
use sink::{Override, Sink};

/// The longest line read from stdin; a longer one is answered with a parse error and skipped
/// (a client cannot make the server buffer without end).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Messages waiting to be written to stdout; past it readers wait (back-pressure, not memory).
const OUT_QUEUE: usize = 64;

/// Why the stdio kitchen did not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StdioError {
    /// A scenario or a fault parameter that cannot be used.
    #[error("kitchen --stdio: {0}")]
    Params(String),
    /// The kitchen itself refused the options.
    #[error("kitchen --stdio: {0}")]
    Kitchen(#[from] crate::KitchenError),
    /// The journal file cannot be opened.
    #[error("kitchen --stdio: cannot open the journal {}: {source}", path.display())]
    Journal {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What `kitchen --stdio` serves.
#[derive(Clone, Debug, Default)]
pub struct StdioOptions {
    /// A kitchen scenario of [`fault::KITCHEN_SCENARIOS`] or a `stdio.*` fault.
    pub scenario: String,
    /// Its parameters (a JSON object).
    pub params: Value,
    /// Where the journal goes (appended, one JSON line per record).
    pub journal: Option<PathBuf>,
}

/// Shared by the reader and the tasks answering each message.
struct Front {
    shared: Arc<Shared>,
    target_scenario: String,
    query: Option<String>,
    fault: Option<StdioFault>,
    /// The first `tools/call` takes the fault; later calls are served plainly.
    fault_used: Mutex<bool>,
    session: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
    out: mpsc::Sender<Vec<u8>>,
    sink: Sink,
    /// The standalone stream's task, ended when stdin closes (it would hold stdout open).
    listener: Mutex<Option<tokio::task::AbortHandle>>,
}

/// Serve on this process's stdin/stdout until stdin closes (or a fault ends the process).
pub async fn serve(options: StdioOptions) -> Result<(), StdioError> {
    fault::check_scenario(&options.scenario)?;
    let params = if options.params.is_null() {
        Value::Object(Default::default())
    } else {
        options.params.clone()
    };
    let fault = StdioFault::parse(&options.scenario, &params)?;
    let (target_scenario, kitchen_params) = match fault {
        Some(_) => ("baseline".to_string(), Value::Object(Default::default())),
        None => (options.scenario.clone(), params),
    };
    let kitchen = Kitchen::new(KitchenOptions::default())?;
    // The scenario and its params are checked now, so a bad --params is an error at start.
    kitchen.set_selection(&target_scenario, kitchen_params.clone())?;
    let shared = kitchen.shared().clone();
    let sink = Sink::open(options.journal.as_deref(), shared.clone()).map_err(|source| {
        StdioError::Journal {
            path: options.journal.clone().unwrap_or_default(),
            source,
        }
    })?;
    let (out, rx) = mpsc::channel(OUT_QUEUE);
    let writer = tokio::spawn(write_stdout(rx));
    let query = format!(
        "params={}",
        mcp_triage_wire::percent::encode(&kitchen_params.to_string())
    );
    let front = Arc::new(Front {
        shared,
        target_scenario,
        query: Some(query),
        fault,
        fault_used: Mutex::new(false),
        session: Mutex::new(None),
        version: Mutex::new(None),
        out,
        sink,
        listener: Mutex::new(None),
    });
    front
        .sink
        .event("started", None, Some(options.scenario.clone()));
    if fault == Some(StdioFault::Banner) {
        front.write_raw(fault::BANNER.as_bytes().to_vec()).await;
    }
    read_stdin(front.clone()).await;
    if let Some(l) = front.listener.lock().expect("listener lock").take() {
        l.abort();
    }
    front.sink.flush(true);
    front.sink.event("stdinClosed", None, None);
    drop(front);
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    Ok(())
}

/// Read stdin line by line; each message is answered by a task of its own, so a request the
/// kitchen holds open (an elicitation waiting for its answer) does not stop the next line.
async fn read_stdin(front: Arc<Front>) {
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let mut line = Vec::new();
        let n = match (&mut stdin)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(n) => n,
            Err(_) => break,
        };
        if n == 0 {
            break;
        }
        if line.len() > MAX_LINE_BYTES && !line.ends_with(b"\n") {
            front
                .write_error(None, crate::protocol::PARSE_ERROR, "line too long")
                .await;
            // Skip the rest of the line.
            let mut rest = Vec::new();
            let _ = stdin.read_until(b'\n', &mut rest).await;
            continue;
        }
        let text = String::from_utf8_lossy(&line).trim().to_string();
        if text.is_empty() {
            continue;
        }
        let f = front.clone();
        if text.contains("\"initialize\"") {
            // The session and the protocol version it sets are named on every later message,
            // so nothing is sent on before it is answered.
            f.answer(text).await;
            continue;
        }
        tasks.spawn(async move { f.answer(text).await });
        while tasks.try_join_next().is_some() {}
    }
    // stdin closed: the answers still coming are given a moment, then the server ends.
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.abort_all();
}

async fn write_stdout(mut rx: mpsc::Receiver<Vec<u8>>) {
    let mut stdout = tokio::io::stdout();
    while let Some(mut line) = rx.recv().await {
        line.push(b'\n');
        if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
            break;
        }
    }
}

impl Front {
    async fn write_raw(&self, line: Vec<u8>) {
        let _ = self.out.send(line).await;
    }

    async fn write_error(&self, id: Option<&Value>, code: i64, message: &str) {
        let v = crate::protocol::error_response(id, code, message, None);
        self.write_raw(v.to_string().into_bytes()).await;
    }

    fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        if let Some(s) = self.session.lock().expect("session lock").as_deref() {
            if let Ok(v) = HeaderValue::from_str(s) {
                h.insert("mcp-session-id", v);
            }
        }
        if let Some(s) = self.version.lock().expect("version lock").as_deref() {
            if let Ok(v) = HeaderValue::from_str(s) {
                h.insert("mcp-protocol-version", v);
            }
        }
        h
    }

    /// The fault this message takes: the first `tools/call` takes the scenario's.
    fn fault_for(&self, msg: &Value) -> Option<StdioFault> {
        let f = self.fault?;
        if msg["method"] != "tools/call" {
            return None;
        }
        let mut used = self.fault_used.lock().expect("fault lock");
        if *used && f != StdioFault::NeverAnswers {
            return None;
        }
        *used = true;
        Some(f)
    }

    /// Hand one message to the kitchen's endpoint and write what it answers.
    async fn answer(self: Arc<Self>, text: String) {
        let msg: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(_) => {
                return self
                    .write_error(None, crate::protocol::PARSE_ERROR, "not JSON")
                    .await
            }
        };
        let fault = self.fault_for(&msg);
        if msg["method"] == "notifications/initialized" {
            self.clone().listen();
        }
        let target = Target::Url {
            scenario: self.target_scenario.clone(),
            query: self.query.clone(),
        };
        let resp = handle(
            self.shared.clone(),
            target,
            Method::POST,
            self.headers(),
            Body::from(text),
        )
        .await;
        if let Some(s) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            *self.session.lock().expect("session lock") = Some(s.to_string());
        }
        let status = resp.status().as_u16();
        let mut messages = message_stream(resp);
        let mut lines = Vec::new();
        while let Some(line) = messages.recv().await {
            if fault.is_none() && msg["method"] != "initialize" {
                // Passed on as it comes: a stream may ask the client something (an
                // elicitation) and wait for the answer before it ends.
                self.write_raw(line).await;
            } else {
                lines.push(line);
            }
        }
        if msg["method"] == "initialize" {
            self.learn_version(&lines);
        }
        let lines = if lines.is_empty() && status >= 400 && msg.get("id").is_some() {
            // An HTTP refusal without a JSON-RPC body: stdio can only carry it as an error.
            let e = crate::protocol::error_response(
                msg.get("id"),
                crate::protocol::INTERNAL_ERROR,
                &format!("the kitchen answered HTTP {status}"),
                Some(serde_json::json!({ "httpStatus": status })),
            );
            vec![e.to_string().into_bytes()]
        } else {
            lines
        };
        match fault {
            Some(f) => self.deliver_faulty(f, &msg, lines).await,
            None => self.deliver(&msg, lines).await,
        }
    }

    /// Open the session's standalone stream (the GET an HTTP client opens after the
    /// handshake) and pass on what it carries: list changes and resource updates reach a
    /// stdio client as they reach an HTTP one.
    fn listen(self: Arc<Self>) {
        if self.session.lock().expect("session lock").is_none() {
            return;
        }
        let me = self.clone();
        let task = tokio::spawn(async move {
            let mut headers = me.headers();
            headers.insert(
                header::ACCEPT,
                HeaderValue::from_static("text/event-stream"),
            );
            headers.remove(header::CONTENT_TYPE);
            let target = Target::Url {
                scenario: me.target_scenario.clone(),
                query: me.query.clone(),
            };
            let resp = handle(
                me.shared.clone(),
                target,
                Method::GET,
                headers,
                Body::empty(),
            )
            .await;
            if !resp.status().is_success() {
                return;
            }
            let mut messages = message_stream(resp);
            while let Some(line) = messages.recv().await {
                me.write_raw(line).await;
            }
        });
        *self.listener.lock().expect("listener lock") = Some(task.abort_handle());
    }

    fn learn_version(&self, lines: &[Vec<u8>]) {
        for l in lines {
            if let Ok(v) = serde_json::from_slice::<Value>(l) {
                if let Some(pv) = v["result"]["protocolVersion"].as_str() {
                    *self.version.lock().expect("version lock") = Some(pv.to_string());
                }
            }
        }
    }

    async fn deliver(&self, msg: &Value, lines: Vec<Vec<u8>>) {
        self.sink.flush(false);
        for l in lines {
            self.write_raw(l).await;
        }
        if let Some(id) = msg.get("id").filter(|_| msg.get("method").is_some()) {
            self.sink.event("answered", Some(id), None);
        }
    }
}

/// The JSON-RPC messages of a response, as they come: a JSON body as one, an SSE stream's `data`
/// events each (comments, ids and `retry:` are HTTP's business and are dropped).
fn message_stream(resp: axum::http::Response<Body>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel(OUT_QUEUE);
    let is_sse = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/event-stream"));
    tokio::spawn(async move {
        let mut body = resp.into_body().into_data_stream();
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while let Some(Ok(chunk)) = body.next().await {
            buf.extend_from_slice(&chunk);
            if is_sse {
                sse_events(&mut buf, &mut out);
                for line in out.drain(..) {
                    if tx.send(line).await.is_err() {
                        return;
                    }
                }
            }
        }
        if is_sse {
            buf.extend_from_slice(b"\n\n");
            sse_events(&mut buf, &mut out);
        } else if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
            // Re-serialized compactly: a pretty body would span lines, and stdio is one per line.
            out.push(v.to_string().into_bytes());
        }
        for line in out {
            let _ = tx.send(line).await;
        }
    });
    rx
}

/// Take the complete events off `buf`, pushing each one's data as one line. Split on bytes,
/// so a character cut between two chunks stays whole for the next call.
fn sse_events(buf: &mut Vec<u8>, out: &mut Vec<Vec<u8>>) {
    loop {
        let end = [&b"\n\n"[..], b"\r\n\r\n"]
            .iter()
            .filter_map(|sep| {
                buf.windows(sep.len())
                    .position(|w| w == *sep)
                    .map(|p| (p, sep.len()))
            })
            .min();
        let Some((at, len)) = end else { return };
        let event = String::from_utf8_lossy(&buf[..at]).replace("\r\n", "\n");
        buf.drain(..at + len);
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if data.is_empty() {
            continue;
        }
        if let Ok(v) = serde_json::from_str::<Value>(&data.join("\n")) {
            out.push(v.to_string().into_bytes());
        }
    }
}

mod deliver;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_become_one_line_each() {
        let mut buf =
            b": ping\n\nid: 1\ndata: {\"a\":\ndata:  1}\n\ndata: {\"b\":2}\n\npartial".to_vec();
        let mut out = Vec::new();
        sse_events(&mut buf, &mut out);
        assert_eq!(out, vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec()]);
        assert_eq!(buf, b"partial");
    }
}
