//! The modern era (2026-07-28): stateless requests whose headers must agree with the body.
//!
//! `receive` hands a request here when its `MCP-Protocol-Version` header names a modern
//! version. Every request carries its own context, so instead of a session this checks that
//! what an intermediary routes by (the version, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`)
//! says what the body says, before `dispatch` answers it.

use axum::body::Body;
use axum::http::{HeaderMap, Response};
use serde_json::{json, Value};

use crate::catalogue;
use crate::origin::header_str;
use crate::protocol::{self};

use super::dispatch::dispatch;
use super::request::Req;
use super::respond::{empty, rpc_error};

/// Answer a modern request once its headers agree with its body: the protocol version (header
/// and `_meta`), then, for a request (a notification is accepted here), the routing headers.
pub(super) async fn modern(req: Req, is_response: bool) -> Response<Body> {
    let Some(hv) = header_str(&req.headers, "mcp-protocol-version") else {
        return header_error(
            &req,
            protocol::HEADER_MISMATCH,
            "Missing MCP-Protocol-Version header",
        );
    };
    if is_response {
        return header_error(
            &req,
            protocol::INVALID_REQUEST,
            "Clients must not send JSON-RPC responses in 2026-07-28",
        );
    }
    if let Some(refused) = version_refused(&req, hv) {
        return refused;
    }
    if req.id.is_none() {
        return empty(202);
    }
    if let Some(refused) = routing_refused(&req) {
        return refused;
    }
    dispatch(req).await
}

/// A 400 JSON-RPC error for a request whose headers and body disagree.
fn header_error(req: &Req, code: i64, m: &str) -> Response<Body> {
    rpc_error(400, req.id.as_ref(), code, m, None)
}

/// The refusal of a request that lacks the `_meta` keys every modern request carries, whose
/// `_meta` protocol version differs from the `MCP-Protocol-Version` header `hv`, or whose
/// version the kitchen does not speak; `None` when all is well.
fn version_refused(req: &Req, hv: &str) -> Option<Response<Body>> {
    let meta = req.params.get("_meta");
    let missing: Vec<&str> = [
        protocol::META_PROTOCOL_VERSION,
        protocol::META_CLIENT_CAPABILITIES,
    ]
    .into_iter()
    .filter(|k| meta.and_then(|m| m.get(*k)).is_none())
    .collect();
    if !missing.is_empty() {
        return Some(header_error(
            req,
            protocol::INVALID_PARAMS,
            &format!("Invalid params: missing _meta keys: {}", missing.join(", ")),
        ));
    }
    let mv = meta
        .and_then(|m| m.get(protocol::META_PROTOCOL_VERSION))
        .and_then(Value::as_str)
        .unwrap_or("");
    if mv != hv {
        return Some(header_error(
            req,
            protocol::HEADER_MISMATCH,
            &format!("Header mismatch: MCP-Protocol-Version header value '{hv}' does not match _meta protocolVersion '{mv}'"),
        ));
    }
    if !protocol::MODERN_VERSIONS.contains(&hv) {
        return Some(rpc_error(
            400,
            req.id.as_ref(),
            protocol::UNSUPPORTED_VERSION,
            "Unsupported protocol version",
            Some(json!({ "supported": protocol::MODERN_VERSIONS, "requested": hv })),
        ));
    }
    None
}

/// The refusal of a request whose routing headers (what an intermediary reads instead of
/// the body: `Mcp-Method`, `Mcp-Name` for the tool, prompt, resource or task it is about,
/// and a `tools/call`'s `Mcp-Param-*` headers) are missing or differ from the body's values;
/// `None` when they agree.
fn routing_refused(req: &Req) -> Option<Response<Body>> {
    let bad = |code: i64, m: &str| Some(header_error(req, code, m));
    let method = req.method.as_deref().unwrap_or("");
    match header_str(&req.headers, "mcp-method") {
        None => return bad(protocol::HEADER_MISMATCH, "Header mismatch: missing Mcp-Method header"),
        Some(m) if m != method => {
            return bad(
                protocol::HEADER_MISMATCH,
                &format!("Header mismatch: Mcp-Method header value '{m}' does not match body value '{method}'"),
            )
        }
        _ => {}
    }
    let name_source = match method {
        "tools/call" | "prompts/get" => req.params.get("name").and_then(Value::as_str),
        "resources/read" => req.params.get("uri").and_then(Value::as_str),
        // SEP-2663 "Routing Headers": Mcp-Name carries the taskId, so intermediaries can
        // route a task's requests to the server holding it.
        "tasks/get" | "tasks/update" | "tasks/cancel" => {
            req.params.get("taskId").and_then(Value::as_str)
        }
        _ => None,
    };
    if let Some(body_name) = name_source {
        match header_str(&req.headers, "mcp-name").map(protocol::decode_header_value) {
            None => return bad(protocol::HEADER_MISMATCH, "Header mismatch: missing Mcp-Name header"),
            Some(None) => return bad(protocol::HEADER_MISMATCH, "Header mismatch: Mcp-Name header is not valid base64"),
            Some(Some(h)) if h != body_name => {
                return bad(
                    protocol::HEADER_MISMATCH,
                    &format!("Header mismatch: Mcp-Name header value '{h}' does not match body value '{body_name}'"),
                )
            }
            _ => {}
        }
    }
    if method == "tools/call" {
        if let Some(def) = req
            .tool
            .as_deref()
            .and_then(|t| catalogue::tool(&req.instance, &req.clock, t))
        {
            if let Err(m) = check_param_headers(
                &def,
                req.params.get("arguments").unwrap_or(&Value::Null),
                &req.headers,
            ) {
                return bad(protocol::HEADER_MISMATCH, &m);
            }
        }
    }
    None
}

/// `Mcp-Param-{Name}` headers for input properties annotated `x-mcp-header`.
pub(super) fn check_param_headers(
    def: &Value,
    args: &Value,
    headers: &HeaderMap,
) -> Result<(), String> {
    let Some(props) = def["inputSchema"]["properties"].as_object() else {
        return Ok(());
    };
    for (prop, schema) in props {
        let Some(hname) = schema.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let header_name = format!("mcp-param-{}", hname.to_ascii_lowercase());
        let expected = args.get(prop).and_then(protocol::header_form_of);
        let got = header_str(headers, &header_name).map(protocol::decode_header_value);
        match (expected, got) {
            (None, None) => {}
            (Some(_), None) => return Err(format!("Header mismatch: missing Mcp-Param-{hname} header")),
            (None, Some(_)) => return Err(format!("Header mismatch: Mcp-Param-{hname} header present but argument '{prop}' is absent")),
            (Some(_), Some(None)) => return Err(format!("Header mismatch: Mcp-Param-{hname} header is not valid base64")),
            (Some(e), Some(Some(g))) if e != g => {
                return Err(format!("Header mismatch: Mcp-Param-{hname} header value '{g}' does not match body value '{e}'"))
            }
            _ => {}
        }
    }
    Ok(())
}
