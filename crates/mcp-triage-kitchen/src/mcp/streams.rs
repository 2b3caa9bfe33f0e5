//! Change notifications and the streams that carry them: the legacy standalone GET stream,
//! 2026 `subscriptions/listen`, and the catalogue timelines that feed them.
//!
//! Unlike the other parts, these answers outlive the request that opened them: `receive`
//! (GET, and the timelines it schedules per session or instance) and `dispatch`
//! (`subscriptions/listen`) start a stream here, and the catalogue's change events arrive
//! on it later.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Response};
use bytes::Bytes;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use crate::answer::{self};
use crate::instance::{CatalogClock, ChangeKind, ChangeScope, Instance};
use crate::origin::header_str;
use crate::protocol::{self};
use crate::session::Session;
use crate::sse::{self};
use crate::state::Shared;

use super::request::Req;
use super::respond::{async_stream_body, method_not_allowed, rpc_error, set_header};

/// The notification a catalogue change event is sent as.
pub(super) fn list_changed_notification(kind: &ChangeKind) -> Value {
    match kind {
        ChangeKind::ToolsListChanged => {
            json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" })
        }
        ChangeKind::PromptsListChanged => {
            json!({ "jsonrpc": "2.0", "method": "notifications/prompts/list_changed" })
        }
        ChangeKind::ResourceUpdated(uri) => {
            json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": uri } })
        }
    }
}

/// A legacy session's catalogue timeline (`catalog.mutation`): at each change, the
/// notifications go on the session's standalone GET stream (dropped when none is open, as
/// a server without a stream to the client has nowhere to send them). The task holds the
/// session weakly and ends with it.
pub(super) fn schedule_session_timeline(session: &Arc<Session>, instance: &Instance) {
    let changes = instance.scenario.tool_list_changes(&instance.state.params);
    if changes.is_empty() {
        return;
    }
    let weak = Arc::downgrade(session);
    let start = tokio::time::Instant::from_std(session.started);
    tokio::spawn(async move {
        for (after, n) in changes {
            tokio::time::sleep_until(start + after).await;
            let Some(s) = weak.upgrade() else { return };
            if s.is_terminated() {
                return;
            }
            for _ in 0..n {
                s.push_get_stream(list_changed_notification(&ChangeKind::ToolsListChanged));
            }
        }
    });
}

/// The 2026 catalogue timeline of an instance, started by its first modern request: changes
/// go to `subscriptions/listen` streams. Ends when the instance is dropped or reset.
pub(super) fn schedule_modern_timeline(
    instance: &Arc<Instance>,
    clock: CatalogClock,
    generation: u64,
) {
    let changes = instance.scenario.tool_list_changes(&instance.state.params);
    let Some(started) = clock.started else { return };
    if changes.is_empty() {
        return;
    }
    let weak = Arc::downgrade(instance);
    let start = tokio::time::Instant::from_std(started);
    tokio::spawn(async move {
        for (after, n) in changes {
            tokio::time::sleep_until(start + after).await;
            let Some(i) = weak.upgrade() else { return };
            if !i.state.modern_generation_is(generation) {
                return;
            }
            for _ in 0..n {
                i.state
                    .emit(ChangeKind::ToolsListChanged, ChangeScope::Modern);
            }
        }
    });
}

/// What a `subscriptions/listen` request asked for, reduced to what the kitchen honours.
pub(super) struct ListenFilter {
    pub(super) tools: bool,
    pub(super) prompts: bool,
    pub(super) resources: Vec<String>,
}

impl ListenFilter {
    /// Whether a change event goes out on this stream.
    fn wants(&self, kind: &ChangeKind) -> bool {
        match kind {
            ChangeKind::ToolsListChanged => self.tools,
            ChangeKind::PromptsListChanged => self.prompts,
            ChangeKind::ResourceUpdated(uri) => self.resources.iter().any(|r| r == uri),
        }
    }
    /// The `notifications` the stream's first message says it honours.
    fn acknowledged(&self) -> Value {
        let mut n = Map::new();
        if self.tools {
            n.insert("toolsListChanged".into(), json!(true));
        }
        if self.prompts {
            n.insert("promptsListChanged".into(), json!(true));
        }
        if !self.resources.is_empty() {
            n.insert("resourceSubscriptions".into(), json!(self.resources));
        }
        Value::Object(n)
    }
}

/// Most resource URIs one `subscriptions/listen` may name (an explicit bound on per-stream
/// filter work).
pub(super) const MAX_RESOURCE_SUBSCRIPTIONS: usize = 256;

/// 2026 `subscriptions/listen`: an SSE response that stays open. First the
/// `notifications/subscriptions/acknowledged` with the honoured filter, then the instance's
/// changes the filter asks for, each tagged with `_meta.subscriptionId` (the request id).
/// `resourcesListChanged` is never acknowledged: the resource list does not change. The
/// stream ends when the client closes it (that is how a 2026 client cancels).
pub(super) fn listen(req: &Req) -> Response<Body> {
    let id = req.id.clone().unwrap_or(Value::Null);
    let n = &req.params["notifications"];
    if !(n.is_null() || n.is_object()) {
        return rpc_error(
            400,
            Some(&id),
            protocol::INVALID_PARAMS,
            "Invalid params: notifications must be an object",
            None,
        );
    }
    let resources: Vec<String> = match n.get("resourceSubscriptions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) if a.len() <= MAX_RESOURCE_SUBSCRIPTIONS && a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Some(_) => {
            return rpc_error(
                400,
                Some(&id),
                protocol::INVALID_PARAMS,
                &format!("Invalid params: resourceSubscriptions must be an array of at most {MAX_RESOURCE_SUBSCRIPTIONS} URI strings"),
                None,
            )
        }
    };
    let filter = ListenFilter {
        tools: n["toolsListChanged"].as_bool() == Some(true),
        prompts: n["promptsListChanged"].as_bool() == Some(true),
        resources,
    };
    // `null` members become objects on write (serde_json's IndexMut).
    let tag = move |mut msg: Value| {
        msg["params"]["_meta"][protocol::META_SUBSCRIPTION_ID] = id.clone();
        msg
    };
    let ack = tag(json!({
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": { "notifications": filter.acknowledged() },
    }));
    req.trace.note("subscriptions/listen stream opened");
    let mut events = req.instance.state.listen();
    let body = async_stream_body(move |tx| async move {
        if tx.send(sse::event(None, &ack)).is_err() {
            return;
        }
        loop {
            tokio::select! {
                _ = tx.closed() => return,
                ev = events.recv() => match ev {
                    Ok(c) if filter.wants(&c.kind) => {
                        if tx.send(sse::event(None, &tag(list_changed_notification(&c.kind)))).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    });
    sse::sse_headers(Response::new(body))
}

/// GET on the endpoint: the legacy standalone stream, or a resumption with `Last-Event-ID`.
pub(super) fn get_stream(
    shared: &Arc<Shared>,
    session_header: Option<&str>,
    session: Option<(Arc<Session>, Arc<Instance>)>,
    modern_header: bool,
    headers: &HeaderMap,
) -> Response<Body> {
    if modern_header || session_header.is_none() {
        return method_not_allowed();
    }
    let Some((session, session_instance)) = session else {
        return rpc_error(
            404,
            None,
            protocol::SESSION_NOT_FOUND,
            "Session not found",
            None,
        );
    };
    let accepts_sse = header_str(headers, "accept")
        .is_some_and(|a| a.contains("text/event-stream") || a.contains("*/*"));
    if !accepts_sse {
        return rpc_error(
            406,
            None,
            protocol::INVALID_REQUEST,
            "Not Acceptable: GET needs Accept: text/event-stream",
            None,
        );
    }
    let resume = header_str(headers, "last-event-id").and_then(|l| {
        let (a, b) = l.split_once('-')?;
        Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?))
    });
    let mut r = match resume.and_then(|(stream, seq)| session.stream(stream).map(|log| (log, seq)))
    {
        Some((log, seq)) if log.is_gone_after(seq) => {
            let mut r = rpc_error(
                410,
                None,
                protocol::INVALID_REQUEST,
                "Stream gone: it ended without its response, which will not come (re-issue the request)",
                None,
            );
            if let Some(id) = log.request_id() {
                r.extensions_mut().insert(answer::ResumedRequest(id));
            }
            r
        }
        Some((log, _)) if drops_this_resumption(&session_instance) => {
            let mut r = sse::sse_headers(dropped_resumption());
            if let Some(id) = log.request_id() {
                r.extensions_mut().insert(answer::ResumedRequest(id));
            }
            r
        }
        Some((log, seq)) => {
            let start = log.position_after(seq);
            let request = log.request_id();
            let mut r = sse::sse_headers(Response::new(sse::reader(log, start, true, None)));
            if let Some(id) = request {
                // Journaled as the answer the resumed call finally got.
                r.extensions_mut().insert(answer::ResumedRequest(id));
            }
            r
        }
        None => standalone(shared, &session, &session_instance),
    };
    set_header(&mut r, "mcp-session-id", &session.id);
    r
}

/// Counts resumptions per instance (the scenario's `resumptions_dropped`).
const RESUMPTIONS: &str = "resumptions";

/// Whether this resumption is one the instance's scenario drops (counted per instance).
fn drops_this_resumption(instance: &Instance) -> bool {
    let drops = instance
        .scenario
        .resumptions_dropped(&instance.state.params);
    drops > 0 && instance.state.bump(RESUMPTIONS) <= drops
}

/// A resumption that drops again before any event with an id: a comment, then the
/// connection breaks (the body errors, so hyper resets it mid-stream).
fn dropped_resumption() -> Response<Body> {
    use futures_util::StreamExt as _;
    let comment = futures_util::stream::once(async { Ok(Bytes::from_static(b": resumed\n\n")) });
    // Let the head and the comment reach the client before the break, as a real drop does.
    let broken = futures_util::stream::once(async {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        Err::<Bytes, _>(std::io::Error::other("resumed stream dropped by scenario"))
    });
    Response::new(Body::from_stream(comment.chain(broken)))
}

/// The legacy standalone GET stream: the session's own notifications (its
/// `catalog.mutation` timeline) and the instance's changes (list-change hooks; resource
/// updates for URIs the session `resources/subscribe`d).
pub(super) fn standalone(
    _shared: &Arc<Shared>,
    session: &Arc<Session>,
    instance: &Instance,
) -> Response<Body> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    *session.get_stream.lock().expect("get stream lock") = Some(tx);
    let mut events = instance.state.listen();
    let weak = Arc::downgrade(session);
    let s = async_stream_body(move |yield_tx| async move {
        let _ = yield_tx.send(Bytes::from_static(b": kitchen standalone stream\n\n"));
        loop {
            let msg = tokio::select! {
                _ = yield_tx.closed() => break,
                v = rx.recv() => match v {
                    Some(v) => v,
                    None => break,
                },
                ev = events.recv() => match ev {
                    Ok(c) if c.scope == ChangeScope::Instance => {
                        let Some(s) = weak.upgrade() else { break };
                        let wanted = match &c.kind {
                            ChangeKind::ResourceUpdated(uri) => {
                                s.subscriptions.lock().expect("subs lock").contains(uri)
                            }
                            _ => true,
                        };
                        if !wanted {
                            continue;
                        }
                        list_changed_notification(&c.kind)
                    }
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                },
            };
            if yield_tx.send(sse::event(None, &msg)).is_err() {
                break;
            }
        }
    });
    sse::sse_headers(Response::new(s))
}
