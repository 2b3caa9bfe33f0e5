//! Shared helpers: an in-process kitchen and a client with short waits.
#![allow(dead_code)]

use std::time::Duration;

use mcp_triage_client::{CallOptions, CallRecord, Client, ClientOptions, Target, VersionChoice};
use mcp_triage_core::ProtocolVersion;
use mcp_triage_kitchen::{start, KitchenHandle, KitchenOptions};
use serde_json::{json, Value};

pub async fn kitchen() -> KitchenHandle {
    start("127.0.0.1:0".parse().unwrap(), KitchenOptions::default())
        .await
        .expect("kitchen starts")
}

pub fn fast_options(era: Option<ProtocolVersion>) -> ClientOptions {
    let mut o = ClientOptions {
        timeout: Duration::from_secs(5),
        jitter_seed: Some(7),
        ..ClientOptions::default()
    };
    o.retry.backoff_base_ms = 2;
    o.retry.max_wait_ms = 3_000;
    if let Some(v) = era {
        o.protocol = VersionChoice::Fixed(v);
    }
    o
}

pub const MODERN: Option<ProtocolVersion> = Some(ProtocolVersion::V2026_07_28);
pub const LEGACY: Option<ProtocolVersion> = Some(ProtocolVersion::V2025_11_25);

pub async fn call(url: &str, opts: ClientOptions, tool: &str, args: Value) -> CallRecord {
    let c = Client::connect(Target::url(url).unwrap(), opts)
        .await
        .unwrap();
    let r = c.call_tool(tool, args, CallOptions::default()).await;
    c.close().await;
    r
}

pub async fn run(url: &str, opts: ClientOptions) -> CallRecord {
    call(url, opts, "run_configured_test_scenario", json!({})).await
}

pub fn statuses(r: &CallRecord) -> Vec<u16> {
    r.attempts.iter().filter_map(|a| a.status).collect()
}

pub fn actions(r: &CallRecord) -> Vec<String> {
    r.attempts
        .iter()
        .map(|a| {
            a.decision
                .as_ref()
                .map_or("-".into(), |d| d.action.to_string())
        })
        .collect()
}
