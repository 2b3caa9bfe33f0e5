//! The scenario plug-in API: what a scenario implements ([`Scenario`]) and what it is handed
//! ([`WireCx`] at the wire, [`ToolCx`] inside a tool, [`InstanceState`] for the catalogue
//! hooks).
//!
//! A scenario acts through three hooks (mirroring Cakewalk's `ScenarioBase`):
//! [`Scenario::on_request`] decides at the wire before the MCP layer sees the request,
//! [`Scenario::run_tool`] is the body of `run_configured_test_scenario`, and the catalogue
//! hooks ([`Scenario::extra_tools`], [`Scenario::call_extra_tool`],
//! [`Scenario::handle_method`]) change what the server offers.
//!
//! ## Its place
//! The API sits below every scenario and imports nothing above it: a scenario is handed
//! narrow handles (its instance's counters and state, its legacy session, the authorization
//! server's token check, the request's output channel and journal notes), never the kitchen's
//! shared state, the endpoint ([`crate::mcp`]) or the registry ([`crate::scenarios`]). That
//! keeps the scenarios out of an import circle with the code that runs them.
//!
//! - [`spec`]: how a scenario describes itself and reads its parameters.
//! - [`reply`]: the values a hook answers with.
//! - [`cx`]: the request as a hook sees it.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;

pub mod cx;
pub mod reply;
pub mod spec;

pub use crate::instance_state::{CatalogClock, InstanceState};
pub use cx::{Asked, Emitter, Out, ToolCx, WireCx};
pub use reply::{MethodReply, ToolFault, ToolReply, Wire};
pub use spec::{
    on_invocation, Origin, Outcome, ParamKind, ParamSpec, Params, ParamsError, ScenarioInfo,
};

/// A scenario. Implementations are unit structs listed in [`crate::scenarios::REGISTRY`].
pub trait Scenario: Send + Sync + 'static {
    /// Static description.
    fn info(&self) -> &'static ScenarioInfo;

    /// Extra checks beyond the parameter types (e.g. non-negative durations).
    fn validate(&self, _params: &Params) -> Result<(), ParamsError> {
        Ok(())
    }

    /// Decide at the wire, before the MCP layer. Counters have already been incremented for
    /// this request.
    fn on_request(&self, _cx: &WireCx<'_>) -> Wire {
        Wire::Continue
    }

    /// A fault around the execution of a `tools/call` (see [`ToolFault`]); `post` is the
    /// 1-based number of this POST on the instance, as in [`WireCx::post`].
    fn tool_fault(&self, _params: &Params, _post: u64) -> ToolFault {
        ToolFault::None
    }

    /// Body of `run_configured_test_scenario`. The default is Cakewalk's success result.
    fn run_tool(&self, cx: ToolCx) -> BoxFuture<'static, ToolReply> {
        Box::pin(async move { ToolReply::json_text(&cx.scenario_result(None), false) })
    }

    /// Definition of `run_configured_test_scenario` when the scenario changes it.
    fn run_tool_definition(&self) -> Option<Value> {
        None
    }

    /// Tools added to the catalogue.
    fn extra_tools(&self) -> Vec<Value> {
        Vec::new()
    }

    /// Body of an extra tool (`None`: not a tool of this scenario).
    fn call_extra_tool(&self, _name: &str, _cx: ToolCx) -> Option<BoxFuture<'static, ToolReply>> {
        None
    }

    /// Answer a method instead of the catalogue (`None`: let the catalogue answer).
    fn handle_method(&self, _cx: &WireCx<'_>) -> Option<MethodReply> {
        None
    }

    /// The whole `tools/list` at catalogue time `clock`, for scenarios whose tool list is not
    /// the fixed catalogue (`None`: the catalogue's list). When it returns `Some`, only the
    /// listed tools can be called.
    fn tool_list(&self, _instance: &InstanceState, _clock: &CatalogClock) -> Option<Vec<Value>> {
        None
    }

    /// When, relative to the start of a catalogue timeline, the tool list changes, and how
    /// many `notifications/tools/list_changed` each change sends (empty: never).
    fn tool_list_changes(&self, _params: &Params) -> Vec<(Duration, u32)> {
        Vec::new()
    }

    /// Change a successful result before it is sent (e.g. drop `resultType`).
    fn shape_result(&self, _method: &str, _result: &mut Value) {}

    /// Whether the scenario serves tasks (legacy: the `tasks` capability is advertised and
    /// `tasks/result` is answered from the instance's tasks).
    fn supports_tasks(&self) -> bool {
        false
    }

    /// Whether `tools/call` idempotency keys are honoured: a call repeating a key already
    /// seen is answered with the stored result and the tool does not run again (the journal
    /// says `deduplicated: true`), and `tools.idempotency` is advertised (the shape of SEP-3182,
    /// a closed draft: no server is obliged to honour keys, so a case can show one that does
    /// and one that ignores them).
    fn honours_idempotency_keys(&self, _params: &Params) -> bool {
        false
    }

    /// Force a response mode for tool calls regardless of the server option.
    fn forced_sse(&self) -> bool {
        false
    }

    /// Whether a `tools/call` of `run_configured_test_scenario` should close its SSE stream
    /// right after the priming event (2025-11-25 polling) and serve the rest on resumption.
    fn close_after_priming(&self) -> bool {
        false
    }

    /// How many resumptions (`GET` + `Last-Event-ID`) of a stream of this instance drop
    /// again before any event with an id: each sends an SSE comment and breaks the connection,
    /// so a client must resume again with the same `Last-Event-ID`.
    fn resumptions_dropped(&self, _p: &Params) -> u64 {
        0
    }
}
