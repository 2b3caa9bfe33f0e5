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
                return bad(protocol::HEADER_MISMATCH, &m.to_string());
            }
        }
    }
    None
}

/// How an `Mcp-Param-{Name}` header disagrees with the argument it mirrors; the text is the
/// JSON-RPC error's message. `name` is the `x-mcp-header` annotation as written.
#[derive(Debug, thiserror::Error)]
pub(super) enum ParamHeaderMismatch {
    /// The argument is there, its header is not.
    #[error("Header mismatch: missing Mcp-Param-{name} header")]
    Missing { name: String },
    /// The header is there, its argument is not.
    #[error(
        "Header mismatch: Mcp-Param-{name} header present but argument '{argument}' is absent"
    )]
    Unexpected { name: String, argument: String },
    /// The header's `=?base64?...?=` value does not decode.
    #[error("Header mismatch: Mcp-Param-{name} header is not valid base64")]
    NotBase64 { name: String },
    /// The header and the argument say different things.
    #[error("Header mismatch: Mcp-Param-{name} header value '{got}' does not match body value '{expected}'")]
    Differs {
        name: String,
        got: String,
        expected: String,
    },
}

/// `Mcp-Param-{Name}` headers for input properties annotated `x-mcp-header`.
pub(super) fn check_param_headers(
    def: &Value,
    args: &Value,
    headers: &HeaderMap,
) -> Result<(), ParamHeaderMismatch> {
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
        let name = hname.to_string();
        match (expected, got) {
            (None, None) => {}
            (Some(_), None) => return Err(ParamHeaderMismatch::Missing { name }),
            (None, Some(_)) => {
                return Err(ParamHeaderMismatch::Unexpected {
                    name,
                    argument: prop.clone(),
                })
            }
            (Some(_), Some(None)) => return Err(ParamHeaderMismatch::NotBase64 { name }),
            (Some(expected), Some(Some(got))) if expected != got => {
                return Err(ParamHeaderMismatch::Differs {
                    name,
                    got,
                    expected,
                })
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each disagreement is its own variant, with the message clients have always been sent.
    #[test]
    fn param_header_mismatches_are_typed() {
        let def = json!({ "inputSchema": { "properties": { "region": { "type": "string", "x-mcp-header": "Region" } } } });
        let mut h = HeaderMap::new();
        let e = check_param_headers(&def, &json!({ "region": "eu" }), &h).unwrap_err();
        assert!(matches!(&e, ParamHeaderMismatch::Missing { name } if name == "Region"));
        assert_eq!(
            e.to_string(),
            "Header mismatch: missing Mcp-Param-Region header"
        );
        h.insert("mcp-param-region", "us".parse().unwrap());
        let e = check_param_headers(&def, &json!({ "region": "eu" }), &h).unwrap_err();
        assert!(
            matches!(&e, ParamHeaderMismatch::Differs { got, expected, .. } if got == "us" && expected == "eu")
        );
        assert_eq!(
            e.to_string(),
            "Header mismatch: Mcp-Param-Region header value 'us' does not match body value 'eu'"
        );
        let e = check_param_headers(&def, &json!({}), &h).unwrap_err();
        assert!(
            matches!(&e, ParamHeaderMismatch::Unexpected { argument, .. } if argument == "region")
        );
        assert_eq!(
            e.to_string(),
            "Header mismatch: Mcp-Param-Region header present but argument 'region' is absent"
        );
        assert!(check_param_headers(&def, &json!({ "region": "us" }), &h).is_ok());
    }
}
