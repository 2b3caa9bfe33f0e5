//! The legacy era (2025-03-26 … 2025-11-25): sessions, `initialize`, client responses to
//! server requests.
//!
//! `receive` hands a request here when it carries no modern protocol header. The legacy era
//! is the only stateful one, so the session rules (who may call before `initialize`, which
//! session a request belongs to, a client's answer to an elicitation) live here and not in
//! `dispatch`, which both eras share.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Response;
use serde_json::{json, Value};

use crate::origin::header_str;
use crate::protocol::{self, Era};
use crate::session::Session;
use crate::sse::{self};
use crate::state::ResponseMode;

use super::capabilities::{instructions, server_capabilities, server_info, with_tasks};
use super::dispatch::dispatch;
use super::request::Req;
use super::respond::{empty, rpc_error, set_header};
use super::streams::schedule_session_timeline;

/// Answer a legacy request: `initialize` opens a session; anything else must name a live
/// session (and a legacy protocol version, when it sends one). A client's response goes to
/// the server request waiting for it, a notification is accepted, a request dispatched;
/// every answer carries the session id.
pub(super) async fn legacy(req: Req, is_response: bool) -> Response<Body> {
    if req.method.as_deref() == Some("initialize") {
        return initialize(req);
    }
    let Some(sid) = req.session_header.as_deref() else {
        return rpc_error(
            400,
            req.id.as_ref(),
            -32000,
            "Bad Request: Mcp-Session-Id header is required",
            None,
        );
    };
    let Some(session) = req.session.clone() else {
        return rpc_error(
            404,
            req.id.as_ref(),
            protocol::SESSION_NOT_FOUND,
            &format!("Session not found: {sid}"),
            None,
        );
    };
    if let Some(v) = header_str(&req.headers, "mcp-protocol-version") {
        if !protocol::LEGACY_VERSIONS.contains(&v) {
            return rpc_error(
                400,
                req.id.as_ref(),
                -32000,
                &format!("Bad Request: unsupported MCP-Protocol-Version {v}"),
                None,
            );
        }
    }
    let mut r = if is_response {
        // The client's answer to a server→client request.
        let key = req
            .msg
            .as_ref()
            .and_then(|m| m.get("id"))
            .map(|id| match id {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        if let Some(tx) = key.and_then(|k| session.pending.lock().expect("pending lock").remove(&k))
        {
            let _ = tx.send(req.msg.clone().unwrap_or(Value::Null));
        }
        empty(202)
    } else if req.id.is_none() {
        // A notification (initialized, cancelled, roots/list_changed …).
        empty(202)
    } else {
        dispatch(req).await
    };
    set_header(&mut r, "mcp-session-id", &session.id);
    r
}

/// `initialize`: take the client's version if it is a legacy one (else the first legacy
/// one), open a session pinned to the instance with its catalogue timeline, and answer with
/// the session id in `Mcp-Session-Id`.
pub(super) fn initialize(req: Req) -> Response<Body> {
    let Some(id) = req.id.clone() else {
        return rpc_error(
            400,
            None,
            protocol::INVALID_REQUEST,
            "initialize must be a request",
            None,
        );
    };
    let requested = req
        .params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = if protocol::LEGACY_VERSIONS.contains(&requested) {
        requested
    } else {
        protocol::LEGACY_VERSIONS[0]
    };
    let session_id = req.shared.new_session_id();
    let session = Arc::new(Session::new(
        session_id.clone(),
        version.to_string(),
        req.params.get("capabilities").cloned().unwrap_or(json!({})),
        req.params.get("clientInfo").cloned().unwrap_or(Value::Null),
    ));
    schedule_session_timeline(&session, &req.instance);
    req.shared.insert_session(session, req.instance.clone());
    let result = json!({
        "protocolVersion": version,
        "capabilities": with_tasks(server_capabilities(Era::Legacy), &req.instance, Era::Legacy),
        "serverInfo": server_info(),
        "instructions": instructions(&req.instance),
    });
    let msg = protocol::result_response(&id, result);
    let mut r = if req.response_mode() == ResponseMode::Sse {
        sse::sse_headers(Response::new(Body::from(sse::event(None, &msg))))
    } else {
        sse::json_response(200, &msg)
    };
    set_header(&mut r, "mcp-session-id", &session_id);
    r
}
