//! The four `timeout.*` scenarios: answers that come late, or not in time.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Map};

use crate::plugin::{
    on_invocation, Origin, Outcome, ParamKind, ParamSpec, Params, ParamsError, Scenario,
    ScenarioInfo, ToolReply, Wire,
};
use crate::plugin::{ToolCx, WireCx};

fn non_negative(p: &Params, names: &[&'static str]) -> Result<(), ParamsError> {
    for n in names {
        if p.i64(n) < 0 {
            return Err(ParamsError::Negative { name: n });
        }
    }
    Ok(())
}

fn delayed_success(cx: &ToolCx, ms: u64) -> ToolReply {
    let mut m = Map::new();
    m.insert("delayMs".into(), json!(ms));
    ToolReply::json_text(&cx.scenario_result(Some(m)), false)
}

/// `timeout.uncooperative_hang`.
pub struct UncooperativeHang;

static HANG: ScenarioInfo = ScenarioInfo {
    id: "timeout.uncooperative_hang",
    summary: "Invocation N hangs for hangDurationMs, ignoring cancellation, then succeeds.",
    docs: "Counts `run_configured_test_scenario`. The hang ignores a client that has gone away (the tool keeps running).",
    params: &[
        ParamSpec { name: "hangOnInvocation", kind: ParamKind::Integer, default: "1", choices: &[], doc: "Which invocation hangs (once)." },
        ParamSpec { name: "hangDurationMs", kind: ParamKind::Integer, default: "60000", choices: &[], doc: "How long (>= 0)." },
    ],
    outcome: Outcome::Timeout,
    origin: Origin::Cakewalk,
};

impl Scenario for UncooperativeHang {
    fn info(&self) -> &'static ScenarioInfo {
        &HANG
    }
    fn validate(&self, p: &Params) -> Result<(), ParamsError> {
        non_negative(p, &["hangDurationMs", "hangOnInvocation"])
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        Box::pin(async move {
            if on_invocation(cx.invocation, cx.p().u64("hangOnInvocation")) {
                let ms = cx.p().u64("hangDurationMs");
                cx.trace.note(format!("hang {ms} ms"));
                cx.sleep(Duration::from_millis(ms)).await;
                return delayed_success(&cx, ms);
            }
            ToolReply::json_text(&cx.scenario_result(None), false)
        })
    }
}

/// `timeout.cooperative_deadline`.
pub struct CooperativeDeadline;

static DEADLINE: ScenarioInfo = ScenarioInfo {
    id: "timeout.cooperative_deadline",
    summary: "Every call is delayed by delayMs; a client that gives up cancels the work.",
    docs: "Counts `run_configured_test_scenario`. With `honorCancellation`, the tool stops when the client closes the response.",
    params: &[
        ParamSpec { name: "delayMs", kind: ParamKind::Integer, default: "1000", choices: &[], doc: "Delay per call." },
        ParamSpec { name: "honorCancellation", kind: ParamKind::Boolean, default: "true", choices: &[], doc: "Stop when the client goes away." },
    ],
    outcome: Outcome::Timeout,
    origin: Origin::Cakewalk,
};

impl Scenario for CooperativeDeadline {
    fn info(&self) -> &'static ScenarioInfo {
        &DEADLINE
    }
    fn validate(&self, p: &Params) -> Result<(), ParamsError> {
        non_negative(p, &["delayMs"])
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        Box::pin(async move {
            let ms = cx.p().u64("delayMs");
            if cx.p().bool("honorCancellation") {
                tokio::select! {
                    _ = cx.sleep(Duration::from_millis(ms)) => {}
                    _ = cx.out.closed() => {
                        cx.trace.note("cancelled by client");
                        return ToolReply::EndStream;
                    }
                }
            } else {
                cx.sleep(Duration::from_millis(ms)).await;
            }
            delayed_success(&cx, ms)
        })
    }
}

/// `timeout.late_response`.
pub struct LateResponse;

static LATE: ScenarioInfo = ScenarioInfo {
    id: "timeout.late_response",
    summary: "The result comes after delayMs, even if the client (or a gateway) gave up.",
    docs: "Counts `run_configured_test_scenario`. The delay ignores cancellation: the side effect happens and a late result is produced.",
    params: &[ParamSpec { name: "delayMs", kind: ParamKind::Integer, default: "5000", choices: &[], doc: "Delay before the result." }],
    outcome: Outcome::Timeout,
    origin: Origin::Cakewalk,
};

impl Scenario for LateResponse {
    fn info(&self) -> &'static ScenarioInfo {
        &LATE
    }
    fn validate(&self, p: &Params) -> Result<(), ParamsError> {
        non_negative(p, &["delayMs"])
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        Box::pin(async move {
            let ms = cx.p().u64("delayMs");
            cx.sleep(Duration::from_millis(ms)).await;
            delayed_success(&cx, ms)
        })
    }
}

/// `timeout.progress_keepalive`.
pub struct ProgressKeepalive;

static PROGRESS: ScenarioInfo = ScenarioInfo {
    id: "timeout.progress_keepalive",
    summary: "The result comes after totalMs; meanwhile notifications/progress every intervalMs when the call has a progress token.",
    docs: "Always SSE. Counts `run_configured_test_scenario`. With a `progressToken` in the call's `_meta`, a `notifications/progress` \
           (progress = elapsed ms, total = totalMs) goes out every `intervalMs` until `totalMs`, then the result: a client whose \
           timeout is shorter than `totalMs` but that resets it on progress gets the result; one that gives up at its timeout while \
           progress flows does not (opencode #28186). Without a token the tool is silent for `totalMs`, then answers.",
    params: &[
        ParamSpec { name: "totalMs", kind: ParamKind::Integer, default: "3000", choices: &[], doc: "Time until the result." },
        ParamSpec { name: "intervalMs", kind: ParamKind::Integer, default: "250", choices: &[], doc: "Gap between progress notifications (at least 10)." },
    ],
    outcome: Outcome::ToolSuccess,
    origin: Origin::Kitchen,
};

impl Scenario for ProgressKeepalive {
    fn info(&self) -> &'static ScenarioInfo {
        &PROGRESS
    }
    fn validate(&self, p: &Params) -> Result<(), ParamsError> {
        non_negative(p, &["totalMs", "intervalMs"])
    }
    fn forced_sse(&self) -> bool {
        true
    }
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        Box::pin(async move {
            let total = cx.p().u64("totalMs");
            let step = cx.p().u64("intervalMs").max(10);
            cx.trace.note(if cx.progress_token.is_some() {
                "progress to the call's progressToken until the result"
            } else {
                "no progressToken: silent until the result"
            });
            let mut elapsed = 0;
            while elapsed < total {
                let wait = step.min(total - elapsed);
                cx.sleep(Duration::from_millis(wait)).await;
                elapsed += wait;
                if elapsed < total {
                    cx.progress(elapsed as f64, Some(total as f64), Some("working"));
                }
            }
            delayed_success(&cx, total)
        })
    }
}

/// `timeout.init_hang`.
pub struct InitHang;

static INIT: ScenarioInfo = ScenarioInfo {
    id: "timeout.init_hang",
    summary: "Every initialize POST is delayed by initDelayMs at the wire.",
    docs: "No counter: every `initialize` waits, then is answered normally.",
    params: &[
        ParamSpec {
            name: "initDelayMs",
            kind: ParamKind::Integer,
            default: "2000",
            choices: &[],
            doc: "Delay per initialize.",
        },
        ParamSpec {
            name: "honorCancellation",
            kind: ParamKind::Boolean,
            default: "true",
            choices: &[],
            doc: "Stop when the client goes away.",
        },
    ],
    outcome: Outcome::Timeout,
    origin: Origin::Cakewalk,
};

impl Scenario for InitHang {
    fn info(&self) -> &'static ScenarioInfo {
        &INIT
    }
    fn validate(&self, p: &Params) -> Result<(), ParamsError> {
        non_negative(p, &["initDelayMs"])
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        if cx.method == Some("initialize") {
            return Wire::Delay {
                duration: cx.p().ms("initDelayMs"),
                honor_cancellation: cx.p().bool("honorCancellation"),
            };
        }
        Wire::Continue
    }
}
