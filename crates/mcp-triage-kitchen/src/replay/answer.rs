//! Which answer a request gets: the captured line its key selects, or, when the capture has
//! none, the kitchen's own answer (`initialize`, notifications, `tools/list`, `ping`; else
//! `-32601`).
//!
//! This is where a request meets the capture: it is keyed (`key`), looked up (`lookup`) and
//! the journal entry is told what was served and why; sending the line is `serve`'s.

use axum::body::Body;
use axum::http::{Response, StatusCode};
use serde_json::{json, Value};

use crate::{journal, protocol};

use super::capture::response_message;
use super::key::{rpc_key, ReplayKey};
use super::lookup::{Asker, Replay};
use super::serve::serve;

/// Decide and build the answer to one request; fills the journal entry.
pub(super) fn answer(
    replay: &Replay,
    http_method: &str,
    path: &str,
    body: &[u8],
    entry: &mut journal::JournalEntry,
) -> Response<Body> {
    let msg: Option<Value> = if http_method == "POST" {
        serde_json::from_slice(body).ok().filter(Value::is_object)
    } else {
        None
    };
    let key = msg
        .as_ref()
        .and_then(rpc_key)
        .map(|k| k.at_path(path))
        .unwrap_or(ReplayKey::Http {
            method: http_method.to_string(),
            path: path.to_string(),
        });
    let request_id = msg.as_ref().and_then(|m| m.get("id")).cloned();
    if let Some(m) = &msg {
        entry.method = m["method"].as_str().map(str::to_owned);
        entry.id = request_id.clone();
        if let ReplayKey::Rpc {
            tool,
            arguments_hash,
            ..
        } = &key
        {
            entry.tool = tool.clone();
            // Bare hex, as in every other journal entry (the key's form has `sha256:`).
            entry.arguments_hash = arguments_hash
                .as_deref()
                .map(|h| h.trim_start_matches("sha256:").to_owned());
        }
        entry.retry = journal::retry_fields(&m["params"]);
    }
    let asker = Asker {
        era: entry.era.unwrap_or(protocol::Era::Legacy),
        in_session: entry.session.is_some(),
    };
    let Some((x, nth, of, past_end)) = replay.next(&key, asker) else {
        entry.replay = Some(journal::ReplayServed::Unmatched {
            unmatched: key.to_string(),
        });
        let modern = entry.era == Some(protocol::Era::Modern);
        let (resp, what) = own_answer(replay, modern, msg.as_ref(), &key);
        entry.injected = Some(format!("no captured line for {key}: {what}"));
        return resp;
    };
    entry.replay = Some(journal::ReplayServed::Served {
        seq: x.seq,
        line: x.line,
        nth,
        of,
        past_end,
        end: x.end.as_str().to_string(),
    });
    entry.injected = Some(format!(
        "replayed seq {} ({nth} of {of} for {key}{}; end {})",
        x.seq,
        if past_end {
            ", served again past the end"
        } else {
            ""
        },
        x.end.as_str()
    ));
    if let Some(msg) = response_message(&x.body) {
        let r = &msg["result"];
        if r["resultType"] == "input_required" {
            entry.issued = Some(journal::Issued {
                request_state: r["requestState"].clone(),
                input_request_keys: r["inputRequests"]
                    .as_object()
                    .map(|o| o.keys().cloned().collect())
                    .unwrap_or_default(),
            });
        }
    }
    serve(x, request_id.as_ref(), replay.speed())
}

/// The kitchen's own answer to a request the capture has no line for.
fn own_answer(
    replay: &Replay,
    era_modern: bool,
    msg: Option<&Value>,
    key: &ReplayKey,
) -> (Response<Body>, &'static str) {
    let Some(msg) = msg else {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        return (r, "405");
    };
    let method = msg["method"].as_str().unwrap_or("");
    let id = msg.get("id").filter(|_| !method.is_empty());
    let Some(id) = id else {
        // A notification, or the client's answer to a server request (an elicitation on a
        // legacy SSE stream): accepted, nothing to say.
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::ACCEPTED;
        return (r, "202 for a notification");
    };
    let modern = era_modern
        || msg["params"]["_meta"]
            .get(protocol::META_PROTOCOL_VERSION)
            .is_some();
    let mut result = match method {
        "initialize" => {
            let asked = msg["params"]["protocolVersion"].as_str().unwrap_or("");
            let version = if asked.is_empty() || protocol::is_modern_version(asked) {
                "2025-11-25"
            } else {
                asked
            };
            json!({
                "protocolVersion": version,
                "capabilities": { "tools": { "listChanged": false } },
                "serverInfo": { "name": "mcp-triage-kitchen replay", "version": env!("CARGO_PKG_VERSION") },
            })
        }
        "tools/list" => json!({ "tools": replay.tools() }),
        "ping" => json!({}),
        _ => {
            let resp = protocol::error_response(
                Some(id),
                -32601,
                &format!("the capture has no line for {key}"),
                None,
            );
            return (crate::sse::json_response(200, &resp), "-32601");
        }
    };
    if modern {
        result["resultType"] = json!("complete");
    }
    (
        crate::sse::json_response(200, &protocol::result_response(id, result)),
        "the kitchen's own answer",
    )
}
