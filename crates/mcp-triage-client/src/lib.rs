//! # mcp-triage-client
//!
//! An MCP client whose every exchange is judged by the `mcp-triage-core` classifier and whose
//! every resend is decided by the core's retry policy, so that a call ends in exactly one
//! [`CallRecord`]: each attempt with its verdict, what was decided after it and why, and the
//! final layer and outcome.
//!
//! - Transports: Streamable HTTP (reqwest with rustls; JSON and SSE responses read
//!   incrementally with bounded memory, parsed once: the result and the server requests come
//!   from the classifier's own parse) and stdio (a spawned server, newline-delimited JSON-RPC).
//! - Eras: 2026-07-28 (stateless, per-request `_meta`, `Mcp-Method`/`Mcp-Name`/`Mcp-Param-*`
//!   headers) and the legacy `initialize` handshake with `Mcp-Session-Id` (2025-03-26 …
//!   2025-11-25). `auto` tries modern first and falls back on a 400 without a modern error.
//! - Input: MRTR `input_required` rounds (new id, same params, exact `requestState`) and legacy
//!   server requests on the SSE stream, answered from [`Answers`].
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp_triage_client::{CallOptions, Client, ClientOptions, Target};
//! let client = Client::connect(Target::url("http://127.0.0.1:8765/mcp")?, ClientOptions::default()).await?;
//! let record = client.call_tool("read_counter", serde_json::json!({}), CallOptions::default()).await;
//! println!("{} {}", record.layer, record.outcome);
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

mod answers;
pub mod arg_text;
mod call;
mod call_record;
mod client;
mod exchange;
mod headers;
mod http_exchange;
mod keepalive;
pub mod oauth;
mod options;
pub mod precheck;
mod setup;
mod sse_legacy;
mod standalone;
mod stdio;
mod stdio_exchange;
pub mod target;
mod task_driver;
mod tools;
mod wire;

pub use answers::refused_request_method;
pub use client::{Client, ConnectError, UnknownSessionAnswer, IDEMPOTENCY_META};
pub use headers::header_value;
pub use mcp_triage_core::{CallRecord, RetryOrigin};
pub use oauth::dpop::DpopMode;
pub use oauth::{AuthorizeMode, Grant, IdpClient, OAuthOptions};
pub use options::{
    Answers, AnswersError, CallOptions, ClientOptions, Prompter, SharedPrompter, UnknownVersion,
    VersionChoice,
};
pub use setup::ListToolsError;
pub use stdio::STDIO_EXIT_GRACE;
pub use target::{CommandLineError, ConfigError, Target, TargetError};
pub use task_driver::Interrupt;
pub use tools::ToolInfo;
