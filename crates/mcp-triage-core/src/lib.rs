//! # mcp-triage-core
//!
//! The classifier at the centre of mcp-triage: pure functions and state machines over bytes that
//! answer *on which layer did this MCP `tools/call` fail?* It does no I/O, reads no clock and
//! spawns nothing, so gateways, proxies, clients and tests can all embed it; the client, kitchen
//! and proxy crates of this workspace feed it the bytes they see.
//!
//! A response is judged outside-in (see `docs/verdicts.md` in the repository):
//! 1. HTTP status outside 2xx is a transport failure, whatever the body says;
//! 2. a 2xx without a body is a missing response;
//! 3. the media type picks the body reader: `application/json` or `text/event-stream`;
//! 4. an SSE stream is read event by event until the response to the request id;
//! 5. the JSON must parse, once, one way (duplicates are findings, depth is bounded);
//! 6. the JSON-RPC envelope must answer this request;
//! 7. the result's `resultType` decides between complete, input required and task;
//! 8. a complete result's content, `isError` and `structuredContent` decide the tool outcome.
//!
//! ```
//! use mcp_triage_core::{classify, CallContext, Outcome, ResponseHead};
//!
//! let head = ResponseHead::new(200).content_type("application/json");
//! let body = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#;
//! let v = classify(&head, body, &CallContext::new(1));
//! assert_eq!(v.outcome, Outcome::ToolError);
//! ```
//!
//! A caller that reads the response too (a client reading the result, a proxy learning a
//! `tools/list`) sets [`CallContext::keep_response`] and takes the message from the classifier
//! ([`classify_with_response`], [`ResponseClassifier::finish_with_response`],
//! [`ResponseClassifier::take_response`]): it is converted from the classifier's own parse, so the
//! body is parsed once.

#![deny(missing_docs)]

mod classify;
pub mod exchange;
pub mod http;
pub mod inline_text;
mod json;
pub mod json_text;
mod limits;
mod protocol;
pub mod record;
mod record_json;
pub mod record_outcome;
pub mod record_text;
pub mod retry;
mod rules;
pub mod scan;
mod schema;
pub mod sse;
mod verdict;
mod verdict_json;

pub use classify::{classify, classify_with_response, Interruption, ResponseClassifier};
pub use http::ResponseHead;
pub use limits::Limits;
pub use protocol::{CallContext, Drafts, ProtocolVersion, RequestId, RequestKind, RequestSession};
pub use record::{
    AttemptRecord, CallRecord, Decision, DecisionAction, JsonRpcInfo, RetryOrigin, ServerInfo,
};
pub use record_text::{AttemptText, Attempts, CallRecordText};
pub use schema::{compile_listed, dialect, OutputSchema, SchemaError, SchemaMismatch};
pub use sse::StreamEvent;
pub use verdict::{
    sanitize_line, AuthChallenge, FailureClass, Layer, LimitHit, Outcome, StreamStats,
    ToolErrorKind, ToolFailure, Verdict, Warning, MAX_MESSAGE_CHARS,
};

/// The name the JSON-RPC and MCP specs give an error code (`-32602` → "Invalid params"), or
/// None for a code neither defines: then only the server knows what it means (an exception it
/// passed through, say), and advice must not guess ("fix the arguments") from it.
pub fn error_code_name(code: i64) -> Option<&'static str> {
    rules::error_code_name(code)
}
