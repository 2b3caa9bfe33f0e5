//! Protocol constants and small wire helpers shared by both eras.
//!
//! The kitchen speaks two eras on one endpoint (see the spec digest): *legacy*
//! (2025-03-26 … 2025-11-25, `initialize` handshake and `Mcp-Session-Id` sessions) and
//! *modern* (2026-07-28, stateless, every request carries `_meta`). The helpers here
//! keep the era decision and the JSON-RPC envelope shapes in one place so that
//! scenarios that deliberately break them can be compared against the correct form.

use base64::Engine;
use serde_json::{json, Value};

/// The modern (stateless) revision the kitchen implements.
pub const MODERN_VERSION: &str = "2026-07-28";

/// Legacy revisions accepted by `initialize`, newest first. A request for any other
/// version is answered with the newest one, as the lifecycle rules require.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// Modern revisions accepted per request (listed in `-32022` errors and `server/discover`).
pub const MODERN_VERSIONS: &[&str] = &[MODERN_VERSION];

/// The `_meta` keys the client writes and the proxy reads too (`mcp_triage_wire::meta`).
pub use mcp_triage_wire::meta::{
    CLIENT_CAPABILITIES as META_CLIENT_CAPABILITIES, CLIENT_INFO as META_CLIENT_INFO,
    PROTOCOL_VERSION as META_PROTOCOL_VERSION,
};
/// `_meta` key carrying the per-request log level (modern era).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key carrying the server identity (modern era).
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key tying a notification to its `subscriptions/listen` stream (2026-07-28).
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// JSON-RPC parse error.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC invalid request.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC method not found.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC invalid params.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// 2026-07-28 `HeaderMismatch`.
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28 `MissingRequiredClientCapability`.
pub const MISSING_CAPABILITY: i64 = -32021;
/// 2026-07-28 `UnsupportedProtocolVersion`.
pub const UNSUPPORTED_VERSION: i64 = -32022;
/// Implementation-defined code the kitchen uses for "session not found" (as the TS SDK does).
pub const SESSION_NOT_FOUND: i64 = -32001;

/// Which era a request belongs to. Decided per request, because one endpoint serves both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Era {
    /// 2025-03-26 … 2025-11-25: sessions established by `initialize`.
    Legacy,
    /// 2026-07-28: stateless, per-request `_meta`.
    Modern,
}

/// True for a protocol version string of the modern era (2026-07-28 or later by date order).
pub fn is_modern_version(v: &str) -> bool {
    v >= MODERN_VERSION && v.len() == MODERN_VERSION.len()
}

/// A JSON-RPC error response. `id` is `null` when the request id could not be read.
pub fn error_response(id: Option<&Value>, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut err = json!({ "code": code, "message": message });
    if let Some(d) = data {
        err["data"] = d;
    }
    json!({ "jsonrpc": "2.0", "id": id.cloned().unwrap_or(Value::Null), "error": err })
}

/// A JSON-RPC success response.
pub fn result_response(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// A JSON-RPC notification.
pub fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// Decode an `Mcp-Name` / `Mcp-Param-*` header value: either plain visible ASCII or the
/// `=?base64?…?=` form (markers lowercase, case-sensitive). `None` when the encoded form is
/// not valid base64 or not UTF-8, which the caller reports as a header mismatch.
pub fn decode_header_value(raw: &str) -> Option<String> {
    if let Some(inner) = raw
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(inner)
            .ok()?;
        String::from_utf8(bytes).ok()
    } else {
        Some(raw.to_string())
    }
}

/// The string a client is expected to put into an `Mcp-Param-*` header for a JSON value
/// (primitives only; `None` for values that must not be promoted).
pub fn header_form_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_header_form_decodes() {
        assert_eq!(
            decode_header_value("=?base64?w6lsw6h2ZQ==?=").as_deref(),
            Some("élève")
        );
        assert_eq!(decode_header_value("plain").as_deref(), Some("plain"));
        assert_eq!(decode_header_value("=?base64?!!?="), None);
    }

    #[test]
    fn modern_versions_are_recognised_by_date() {
        assert!(is_modern_version("2026-07-28"));
        assert!(!is_modern_version("2025-11-25"));
        assert!(!is_modern_version("2026-07-28x"));
    }
}
