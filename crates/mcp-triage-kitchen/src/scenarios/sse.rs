//! The `sse.*` scenarios: faults inside an SSE response stream.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Map};

use crate::plugin::{Asked, ToolCx};
use crate::plugin::{Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, ToolReply};
use crate::protocol::Era;

fn notify_step(cx: &ToolCx, i: u64, n: u64) {
    if cx.progress_token.is_some() {
        cx.progress(i as f64, Some(n as f64), Some(&format!("step {i} of {n}")));
    } else {
        cx.notify(
            "notifications/message",
            json!({ "level": "info", "logger": "kitchen", "data": format!("step {i} of {n}") }),
        );
    }
}

/// `sse.cut_before_response`.
pub struct CutBeforeResponse;

static CUT_BEFORE: ScenarioInfo = ScenarioInfo {
    id: "sse.cut_before_response",
    summary: "The tools/call SSE stream carries N notifications, then ends without the response.",
    docs: "Always SSE. Notifications are `notifications/progress` when the call has a progress token, else `notifications/message`. \
           The stream then ends cleanly (terminating chunk) without a JSON-RPC response, and the response never comes. \
           What is sent per era: 2026-07-28: `event: message` + `data:` per notification, no event ids (not resumable). \
           Legacy sessions: every notification event carries `id: <stream>-<n>` (n from 1), and at 2025-11-25 the stream starts \
           with a priming event `id: <stream>-0` and empty `data:` (no `retry:`). So a legacy client may try to resume: a GET with \
           `Last-Event-ID` replays the events after that id (the notifications it missed) and ends again without the response; \
           a resumption with nothing left to replay (the id of the last event) is answered `410 Gone` with a JSON-RPC error \
           (\"Stream gone\"): the stream ended without its response, which will not come. So a client that keeps polling is \
           told so, unambiguously, and must re-issue the call or report the failure.",
    params: &[ParamSpec { name: "notifications", kind: ParamKind::Integer, default: "2", choices: &[], doc: "Notifications before the end." }],
    outcome: Outcome::StreamIncomplete,
    origin: Origin::Kitchen,
};

impl Scenario for CutBeforeResponse {
    fn info(&self) -> &'static ScenarioInfo {
        &CUT_BEFORE
    }
    fn forced_sse(&self) -> bool {
        true
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        Box::pin(async move {
            let n = cx.p().u64("notifications");
            for i in 1..=n {
                notify_step(&cx, i, n);
            }
            ToolReply::EndStream
        })
    }
}

/// `sse.cut_mid_event`.
pub struct CutMidEvent;

static CUT_MID: ScenarioInfo = ScenarioInfo {
    id: "sse.cut_mid_event",
    summary: "The connection drops in the middle of the response event.",
    docs: "Always SSE. The body carries the first `cutAfterBytes` bytes of the response event (no event id), then the connection \
           is broken (no terminating chunk). Legacy sessions at 2025-11-25 start the stream with the priming event \
           `id: <stream>-0`, so a client may resume: a GET with `Last-Event-ID` replays only whole events after that id \
           (never the cut fragment) and then delivers the response as a whole event `id: <stream>-<n>`, after which the \
           stream ends. 2026-07-28 streams are not resumable: the response is lost and the call must be re-issued.",
    params: &[ParamSpec { name: "cutAfterBytes", kind: ParamKind::Integer, default: "40", choices: &[], doc: "Bytes of the event sent before the cut." }],
    outcome: Outcome::StreamIncomplete,
    origin: Origin::Kitchen,
};

impl Scenario for CutMidEvent {
    fn info(&self) -> &'static ScenarioInfo {
        &CUT_MID
    }
    fn forced_sse(&self) -> bool {
        true
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        Box::pin(async move {
            let result = cx.scenario_result(None);
            let text = json!({ "content": [{ "type": "text", "text": result.to_string() }] });
            let full = crate::sse::event(
                None,
                &crate::protocol::result_response(&cx.request_id, text),
            );
            let n = (cx.p().u64("cutAfterBytes") as usize).min(full.len().saturating_sub(1));
            cx.raw(full.slice(..n));
            // Let the partial bytes reach the socket before the cut.
            cx.sleep(Duration::from_millis(20)).await;
            if cx.era == Era::Modern || cx.session.is_none() {
                return ToolReply::Abort;
            }
            // A legacy stream is kept for resumption: the cut breaks this connection only,
            // and the response goes into the stream's log as a whole event for a GET with
            // Last-Event-ID (without a priming event before 2025-11-25 the client has no id
            // to resume from, and the response stays lost).
            cx.trace
                .note("connection cut mid-response; a resumption gets the response");
            cx.out.send(crate::plugin::Out::Abort);
            ToolReply::json_text(&result, false)
        })
    }
}

/// `sse.priming_then_close`.
pub struct PrimingThenClose;

static PRIMING: ScenarioInfo = ScenarioInfo {
    id: "sse.priming_then_close",
    summary: "2025-11-25 polling: priming event with id and retry, the POST stream closes, the response comes on GET + Last-Event-ID.",
    docs: "Legacy sessions at 2025-11-25: the tools/call stream sends `id: <stream>-0`, `retry: <ms>` (`KitchenOptions::sse_retry_ms`, \
           500), empty `data:`, then closes. The result (after `delayMs`) is served to `GET` with `Last-Event-ID: <stream>-0` as event \
           `id: <stream>-1`. Earlier legacy versions have no priming and get a normal stream with the result (`id: <stream>-1`). \
           2026-07-28 requests (no priming, no resumption) get `200 text/event-stream` with an empty body: no event at all, so the \
           client's verdict is MISSING_RESPONSE (an empty 2xx body, rule 2), not STREAM_INCOMPLETE; the documented outcome \
           (TOOL_SUCCESS) is the legacy one. With `dropResumes` N, the first N resumptions of the instance's streams drop again before \
           any event with an id (a `: resumed` comment, then the connection breaks): a client must resume again with the same \
           `Last-Event-ID` (TypeScript SDK #2499: a second drop left it with none).",
    params: &[
        ParamSpec { name: "delayMs", kind: ParamKind::Integer, default: "100", choices: &[], doc: "Delay before the result is ready." },
        ParamSpec { name: "dropResumes", kind: ParamKind::Integer, default: "0", choices: &[], doc: "Resumptions that drop again before any event with an id." },
    ],
    outcome: Outcome::ToolSuccess,
    origin: Origin::Kitchen,
};

impl Scenario for PrimingThenClose {
    fn info(&self) -> &'static ScenarioInfo {
        &PRIMING
    }
    fn forced_sse(&self) -> bool {
        true
    }
    fn close_after_priming(&self) -> bool {
        true
    }
    fn resumptions_dropped(&self, p: &crate::plugin::Params) -> u64 {
        p.u64("dropResumes")
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        Box::pin(async move {
            if cx.era == Era::Modern {
                // tool_out notes "stream ended without response" for the EndStream itself.
                cx.trace.note("modern streams are not resumable");
                return ToolReply::EndStream;
            }
            cx.sleep(Duration::from_millis(cx.p().u64("delayMs"))).await;
            ToolReply::json_text(&cx.scenario_result(None), false)
        })
    }
}

/// `sse.keepalive`.
pub struct Keepalive;

static KEEPALIVE: ScenarioInfo = ScenarioInfo {
    id: "sse.keepalive",
    summary: "SSE comment lines (`: keepalive`) before the response.",
    docs: "Always SSE. `comments` comment lines, `intervalMs` apart, then the normal result. Clients must ignore comments.",
    params: &[
        ParamSpec { name: "comments", kind: ParamKind::Integer, default: "3", choices: &[], doc: "Comment lines." },
        ParamSpec { name: "intervalMs", kind: ParamKind::Integer, default: "50", choices: &[], doc: "Gap between them." },
    ],
    outcome: Outcome::ToolSuccess,
    origin: Origin::Kitchen,
};

impl Scenario for Keepalive {
    fn info(&self) -> &'static ScenarioInfo {
        &KEEPALIVE
    }
    fn forced_sse(&self) -> bool {
        true
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        Box::pin(async move {
            let gap = Duration::from_millis(cx.p().u64("intervalMs"));
            for _ in 0..cx.p().u64("comments") {
                cx.raw(": keepalive\n\n");
                cx.sleep(gap).await;
            }
            ToolReply::json_text(&cx.scenario_result(None), false)
        })
    }
}

/// `sse.server_request`.
pub struct ServerRequest;

static SERVER_REQUEST: ScenarioInfo = ScenarioInfo {
    id: "sse.server_request",
    summary: "Legacy elicitation: an `elicitation/create` request on the POST's SSE stream, answered by the client's POST.",
    docs: "Always SSE. Legacy clients with the `elicitation` capability get the server→client request; the result reports the answer \
           (`elicitationAction`, `content`). Without the capability: isError. Modern requests get the MRTR equivalent.",
    params: &[ParamSpec { name: "promptMessage", kind: ParamKind::String, default: "\"Please confirm.\"", choices: &[], doc: "Message shown to the user." }],
    outcome: Outcome::InputRequired,
    origin: Origin::Kitchen,
};

impl Scenario for ServerRequest {
    fn info(&self) -> &'static ScenarioInfo {
        &SERVER_REQUEST
    }
    fn forced_sse(&self) -> bool {
        true
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        Box::pin(async move {
            let params = json!({ "mode": "form", "message": cx.p().str("promptMessage"),
                "requestedSchema": { "type": "object", "properties": { "confirm": { "type": "boolean" } } } });
            match cx
                .ask(
                    "elicitation",
                    "elicitation/create",
                    params,
                    "elicitation",
                    json!("server-request"),
                )
                .await
            {
                Asked::Answer(r) => {
                    let mut m = Map::new();
                    m.insert("elicitationAction".into(), r["action"].clone());
                    m.insert(
                        "content".into(),
                        r.get("content").cloned().unwrap_or(json!(null)),
                    );
                    ToolReply::json_text(&cx.scenario_result(Some(m)), false)
                }
                Asked::Pending(reply) => reply,
                Asked::Failed(e) => {
                    let mut m = Map::new();
                    m.insert("errorMessage".into(), json!(e));
                    ToolReply::json_text(&cx.scenario_result(Some(m)), true)
                }
            }
        })
    }
}
