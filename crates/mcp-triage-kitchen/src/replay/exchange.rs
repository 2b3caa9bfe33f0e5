//! One captured exchange as loaded: its key, the response to send (status, headers, body,
//! chunk timing) and how the body ended.
//!
//! This is the data the rest of the replay passes around: `line` builds it, `capture` keeps
//! the file's exchanges in `seq` order, `lookup` picks one per request, and `serve` and
//! `rewrite` turn it back into bytes on the wire. Readers outside the kitchen (the judge's
//! cases, the exchange-file classifier) read it too, so it holds the line's text as well.

use bytes::Bytes;
use mcp_triage_wire::capture::BodyEnd;
use serde_json::Value;

use super::key::ReplayKey;

/// One captured exchange.
#[derive(Clone, Debug)]
pub struct CapturedExchange {
    /// 1-based line in the file.
    pub line: usize,
    /// `seq` (the line number when absent).
    pub seq: u64,
    /// What requests it answers.
    pub key: ReplayKey,
    /// The request's JSON body, when captured and JSON (and kept:
    /// [`super::CaptureLimits::keep_for_readers`]).
    pub request: Option<Value>,
    /// The request's path without the query (`request.path`), when captured.
    pub path: Option<String>,
    /// Response status.
    pub status: u16,
    /// Response headers as captured (`contentType` first as `content-type`).
    pub headers: Vec<(String, String)>,
    /// Response body bytes as captured.
    pub body: Bytes,
    /// The id the response should carry (`expectId`).
    pub expect_id: Option<Value>,
    /// Milliseconds from request head to response head.
    pub head_ms: f64,
    /// `[atMs, bytes]` per frame.
    pub chunks: Vec<(f64, usize)>,
    /// How the body ended (the capture format's own words, `mcp_triage_wire::capture`).
    pub end: BodyEnd,
    /// The body was cut at the capture's size limit.
    pub body_truncated: bool,
    /// The proxy's verdict, if recorded.
    pub verdict: Option<String>,
    /// The line's text, so readers (the exchange-file classifier) can use it as it is; empty
    /// when the capture was read without [`super::CaptureLimits::keep_for_readers`].
    pub text: String,
    /// The era the exchange was made in, from its `protocolVersion` (`None`: not captured).
    /// A request other than a tool call is answered only by lines of its own era: a capture's
    /// 2026-07-28 discovery `tools/list` answered 400 is no answer to a legacy client's.
    pub era: Option<crate::protocol::Era>,
    /// The exchange carried an `Mcp-Session-Id` (`sessionId`): made inside a legacy session.
    pub in_session: bool,
}
