//! Test helpers: a kitchen, a proxy in front of it, and the records. The raw hyper HTTP/1.1
//! client that sees exactly the bytes on the wire is the kitchen's (`mcp_triage_kitchen::testing`,
//! feature `testing`), here with this suite's client name.
#![allow(dead_code)]

pub mod tls;

use std::net::SocketAddr;
use std::time::Duration;

use mcp_triage_kitchen::testing;
// Each test binary uses a different part of these (otlp.rs needs no `send`).
#[allow(unused_imports)]
pub use mcp_triage_kitchen::testing::{call_msg as call, post, send, Resp, SendError, STEP};
use mcp_triage_kitchen::{start, KitchenHandle, KitchenOptions};
use mcp_triage_proxy::http::{ProxyHandle, ProxyOptions};
use mcp_triage_proxy::{LogWriter, MemoryConsumer, Record};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

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
        let upstream = kitchen.base_url();
        Rig::around(kitchen, &upstream, f).await
    }

    /// A proxy to `upstream`, which reaches `kitchen` some way (a TLS terminator, say).
    pub async fn around(
        kitchen: KitchenHandle,
        upstream: &str,
        f: impl FnOnce(&mut ProxyOptions),
    ) -> Rig {
        let mut o = ProxyOptions::new(upstream).unwrap();
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

    /// The records so far, once `ready` holds for them (polled; at most [`STEP`]). A record is
    /// written after its response has gone to the client, so a test that reads records while
    /// the proxy runs must wait for them rather than read at once.
    pub async fn records_when(&self, ready: impl Fn(&[Record]) -> bool) -> Vec<Record> {
        let deadline = tokio::time::Instant::now() + STEP;
        loop {
            let v = self.records.0.lock().unwrap().clone();
            if ready(&v) || tokio::time::Instant::now() >= deadline {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
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

/// `Resp::sha`: the proxy's tests compare bodies through the proxy with bodies straight from
/// the kitchen by digest, which the kitchen's shared helpers have no use for.
pub trait BodySha {
    /// SHA-256 of the body, lowercase hex.
    fn sha(&self) -> String;
}

impl BodySha for Resp {
    fn sha(&self) -> String {
        sha(&self.body)
    }
}

pub fn sha(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The `clientInfo` of modern requests (the records name it).
fn modern_client() -> Value {
    json!({ "name": "proxy-test", "version": "0" })
}

/// A modern (2026-07-28) request from `proxy-test`, with the headers it needs.
pub async fn modern(
    addr: SocketAddr,
    path: &str,
    id: i64,
    method: &str,
    params: Value,
) -> Result<Resp, SendError> {
    testing::modern_as(addr, path, id, method, params, modern_client()).await
}

/// initialize + notifications/initialized as `proxy-test@1`; returns the session id.
pub async fn legacy_session(addr: SocketAddr, path: &str, caps: Value) -> String {
    testing::legacy_session_as(
        addr,
        path,
        caps,
        json!({ "name": "proxy-test", "version": "1" }),
    )
    .await
}

/// What a client concludes from what it received: the core's verdict on the bytes.
pub fn client_verdict(r: &Result<Resp, SendError>, id: i64) -> String {
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
