//! What a scenario answers with: a wire decision ([`Wire`]), a tool body's reply
//! ([`ToolReply`]), a fault around a tool call ([`ToolFault`]) and a method it answers
//! itself ([`MethodReply`]).
//!
//! Part of the plug-in API ([`crate::plugin`]); a leaf: these are plain values the endpoint
//! turns into HTTP.

use std::time::Duration;

use bytes::Bytes;
use serde_json::{json, Value};

/// What a cleanly ended chaos `sse_cut` stream carries before it ends.
pub const CUT_STREAM_PREFIX: &str = ": keepalive\n\n";

/// What the wire hook decided for one POST.
pub enum Wire {
    /// Let the MCP layer answer.
    Continue,
    /// Answer with this status and an empty body (Cakewalk's `RespondWithStatus`).
    Status(u16),
    /// Answer with this status, content type, extra headers and body.
    Body {
        /// HTTP status.
        status: u16,
        /// Content-Type.
        content_type: &'static str,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// Body bytes.
        body: Bytes,
    },
    /// Drop the connection without any response (Cakewalk's `HttpContext.Abort()`).
    Close,
    /// Wait, then continue. When `honor_cancellation` is false the request is served to the
    /// end even if the client has gone.
    Delay {
        /// How long.
        duration: Duration,
        /// Whether a client disconnect stops the work.
        honor_cancellation: bool,
    },
}

impl Wire {
    /// An `application/json` body.
    pub fn json(status: u16, body: &Value) -> Wire {
        Wire::Body {
            status,
            content_type: "application/json",
            headers: Vec::new(),
            body: Bytes::from(body.to_string()),
        }
    }
    /// Short description for the journal (`None` for [`Wire::Continue`]).
    pub fn describe(&self) -> Option<String> {
        match self {
            Wire::Continue => None,
            Wire::Status(s) => Some(format!("status {s} (empty body)")),
            Wire::Body {
                status,
                content_type,
                body,
                ..
            } => Some(match jsonrpc_error_code(body) {
                // Named, so a reader of the journal sees which fault this was without the body.
                Some(code) => format!("JSON-RPC error {code} (status {status}, {content_type})"),
                None => format!("status {status} body ({content_type})"),
            }),
            Wire::Close => Some("connection closed without response".into()),
            Wire::Delay {
                duration,
                honor_cancellation,
            } => Some(format!(
                "delay {} ms (honour cancellation: {honor_cancellation})",
                duration.as_millis()
            )),
        }
    }
}

/// The outcome of a tool body.
pub enum ToolReply {
    /// A `CallToolResult` (the era adapter adds `resultType` for modern clients).
    Result(Value),
    /// A JSON-RPC error for the call.
    RpcError {
        /// HTTP status (200 for ordinary errors; 400 for the modern header/capability errors).
        status: u16,
        /// JSON-RPC code.
        code: i64,
        /// Message.
        message: String,
        /// Optional data.
        data: Option<Value>,
    },
    /// MRTR: the client must answer `input_requests` and retry; `state` is signed into
    /// `requestState` by the kitchen and handed back verified on the retry.
    InputRequired {
        /// Map of key → `{method, params}`.
        input_requests: Value,
        /// Server state to carry across the round trip.
        state: Value,
    },
    /// End the SSE stream cleanly without sending a response.
    EndStream,
    /// Break the connection in the middle of the response.
    Abort,
}

impl ToolReply {
    /// A text result.
    pub fn text(text: impl Into<String>) -> ToolReply {
        ToolReply::Result(json!({ "content": [{ "type": "text", "text": text.into() }] }))
    }
    /// A text result with `isError: true`.
    pub fn error_text(text: impl Into<String>) -> ToolReply {
        ToolReply::Result(
            json!({ "content": [{ "type": "text", "text": text.into() }], "isError": true }),
        )
    }
    /// Cakewalk's result shape: a text block holding a JSON object.
    pub fn json_text(v: &Value, is_error: bool) -> ToolReply {
        let mut r = json!({ "content": [{ "type": "text", "text": v.to_string() }] });
        if is_error {
            r["isError"] = Value::Bool(true);
        }
        ToolReply::Result(r)
    }
    /// A plain JSON-RPC error with HTTP 200.
    pub fn rpc_error(code: i64, message: impl Into<String>) -> ToolReply {
        ToolReply::RpcError {
            status: 200,
            code,
            message: message.into(),
            data: None,
        }
    }
}

/// A fault a scenario wraps around the execution of one `tools/call` (any tool, the
/// catalogue's `increment_counter` and `read_counter` included), decided per POST.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolFault {
    /// Run the call normally.
    None,
    /// Run the tool (its side effect happens and is journaled as executed), then lose the
    /// response: the SSE stream ends cleanly without it (`mid_event: false`) or breaks after
    /// part of the response event (`mid_event: true`). The client cannot know whether the
    /// tool ran — the realistic case exactly-once policies must survive.
    CutAfterExecution {
        /// Break inside the response event instead of ending the stream cleanly.
        mid_event: bool,
    },
    /// One input round before the tool runs: 2026-07-28 answers `input_required` with an
    /// elicitation input request and a signed `requestState`, and the retry carrying the
    /// answer runs the tool; legacy sends `elicitation/create` on the POST's SSE stream and
    /// runs the tool once it is answered. Skipped when the client lacks the `elicitation`
    /// capability.
    InputRound,
    /// Run the tool to its end (journaled as executed), drop its answer and send an empty
    /// response with this status: what a gateway does whose upstream answered after the
    /// gateway's own timeout. Unlike a server's own 503 the call *did* run, so a client that
    /// resends a call with side effects after a 5xx runs it twice.
    StatusAfterExecution(u16),
}

/// A method answered by a scenario instead of the catalogue.
pub enum MethodReply {
    /// A JSON-RPC result.
    Result(Value),
    /// A JSON-RPC error (HTTP 200).
    Error(i64, String),
}

/// The `error.code` of a body that is one JSON-RPC error response, for [`Wire::describe`].
fn jsonrpc_error_code(body: &Bytes) -> Option<i64> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v.get("error")?.get("code")?.as_i64()
}
