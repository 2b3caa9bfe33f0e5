//! # mcp-triage-proxy: the observer
//!
//! Sits between an MCP client and a server, forwards every byte unchanged, and writes one record
//! per exchange saying on which layer it failed (the verdicts of `mcp-triage-core`) and whether
//! the client retried it safely.
//!
//! - [`http`]: a reverse proxy for Streamable HTTP (both protocol eras).
//! - [`guard`]: DNS-rebinding checks (`Host`, `Origin`) and query secrets kept out of records.
//! - [`stdio`]: a wrapper around a stdio server process.
//! - [`install`]: rewriting an `mcp.json` entry to go through the wrapper, and back.
//! - [`observe`]: what both share: message parsing, sessions, tool annotations, retries, MRTR.
//! - [`tasks`]: open tasks, so that `tasks/*` records and the task's end link to the call.
//! - [`log`]: the record writer (drained on shutdown: no record is lost).
//! - [`capture`]: `--capture`, every exchange as an exchange-file line for `classify --batch`
//!   and `kitchen --replay` (off by default).
//! - [`batch`]: `classify --batch`, an exchange file classified offline on worker threads, and
//!   its outcome summary.
//! - [`record_log`]: `report`, a log of records (the proxy's or `call --log`'s) read back and
//!   summarised into the report model of `mcp-triage-report`.
//! - `otel` (feature `otlp`, default): spans and the `mcp.client.operation.duration` histogram
//!   over OTLP/HTTP (http or https collectors).
//! - [`ui`]: the live page, its SSE feed and Prometheus `/metrics` (`--ui ADDR`).
//! - [`tls`]: the rustls client settings shared by https upstreams and https collectors.
//!
//! The core stays sans-IO; this crate is the I/O around it and depends on it, never the other way.

#![deny(missing_docs)]

pub mod batch;
pub mod capture;
pub mod guard;
pub mod http;
pub mod install;
pub mod log;
pub mod message;
pub mod observe;
#[cfg(feature = "otlp")]
pub mod otel;
pub mod record;
mod record_json;
pub mod record_log;
pub mod stdio;
pub mod tasks;
pub mod tls;
pub mod ui;

pub use log::{
    open_append, AppendLog, LogWriter, MemoryConsumer, RecordConsumer, RecordSink, WriterStats,
};
pub use observe::{ObserveOptions, Observer};
pub use record::Record;
