//! The scenario registry: every misbehaviour the kitchen can be asked for.
//!
//! Each scenario lives in its own module and is listed exactly once in [`REGISTRY`].
//! Tests walk that list, the admin API publishes it, and a selection is validated
//! against it, so an id, its parameter names and defaults, and its expected
//! client-visible outcome are stated in one place. Ids, parameter names, defaults and
//! counting semantics of the Cakewalk scenarios match Cakewalk MCP Test Kitchen, so that a
//! configuration moves across unchanged.
//!
//! A scenario acts through three hooks (mirroring Cakewalk's `ScenarioBase`):
//! [`Scenario::on_request`] decides at the wire before the MCP layer sees the request,
//! [`Scenario::run_tool`] is the body of `run_configured_test_scenario`, and the catalogue
//! hooks ([`Scenario::extra_tools`], [`Scenario::call_extra_tool`],
//! [`Scenario::handle_method`]) change what the server offers.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::context::{ToolCx, WireCx};

pub mod auth_insufficient_scope;
pub mod auth_oauth_challenge;
pub mod auth_oauth_flow;
pub mod auth_token_lifecycle;
pub mod baseline;
pub mod catalog_facet_unavailable;
pub mod catalog_mutation;
pub mod catalog_pagination;
pub mod chaos_mix;
pub mod compat_legacy_result;
pub mod compat_output_schema_mismatch;
pub mod compat_sdk_v2;
pub mod elicitation;
pub mod errors_accepted_for_request;
pub mod errors_connection_close;
pub mod errors_content_type;
pub mod errors_http_status_per_method;
pub mod errors_http_status_sequence;
pub mod errors_jsonrpc_error;
pub mod errors_malformed_payload;
pub mod errors_non_compliant_envelope;
pub mod errors_rate_limited;
pub mod errors_tool_error;
pub mod session_expire;
pub mod sse;
pub mod tasks_deferred;
pub mod timeout;

/// What a client should end up seeing when it calls `run_configured_test_scenario` (or
/// the request the scenario targets) against this scenario with its defaults: the
/// classifier's own outcome type, so a scenario's documented outcome and the verdict a client
/// reaches are the same names by construction (the kitchen kept a copy of them before).
pub use mcp_triage_core::Outcome;

/// Where a scenario comes from: kept so users can tell which ids are portable to Cakewalk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Same id, parameters and semantics as Cakewalk MCP Test Kitchen.
    Cakewalk,
    /// Added by the kitchen.
    Kitchen,
}

/// JSON type a parameter must have. Checked when a selection is stored or a URL instance
/// is created, so a typo fails loudly instead of silently falling back to a default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// A JSON integer.
    Integer,
    /// A JSON boolean.
    Boolean,
    /// A JSON string.
    String,
    /// An array of integers.
    IntegerArray,
    /// An array of strings.
    StringArray,
    /// A JSON object.
    Object,
    /// An array of objects.
    ObjectArray,
    /// A JSON number.
    Number,
}

impl ParamKind {
    fn accepts(self, v: &Value) -> bool {
        match self {
            ParamKind::Integer => v.is_i64() || v.is_u64(),
            ParamKind::Boolean => v.is_boolean(),
            ParamKind::String => v.is_string(),
            ParamKind::Number => v.is_number(),
            ParamKind::IntegerArray => v
                .as_array()
                .is_some_and(|a| a.iter().all(|x| x.is_i64() || x.is_u64())),
            ParamKind::StringArray => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            ParamKind::Object => v.is_object(),
            ParamKind::ObjectArray => v.as_array().is_some_and(|a| a.iter().all(Value::is_object)),
        }
    }
}

/// One parameter of a scenario.
#[derive(Debug, Serialize)]
pub struct ParamSpec {
    /// Name as in Cakewalk (camelCase; matched case-insensitively like Cakewalk's binder).
    pub name: &'static str,
    /// JSON type.
    pub kind: ParamKind,
    /// Default as a JSON literal.
    #[serde(skip)]
    pub default: &'static str,
    /// For string parameters with a closed set of values.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub choices: &'static [&'static str],
    /// What it does.
    pub doc: &'static str,
}

impl ParamSpec {
    /// The default value, parsed.
    pub fn default_value(&self) -> Value {
        serde_json::from_str(self.default).unwrap_or(Value::Null)
    }
}

/// Static description of a scenario.
#[derive(Debug)]
pub struct ScenarioInfo {
    /// Unique id, e.g. `errors.http_status_sequence`.
    pub id: &'static str,
    /// One line.
    pub summary: &'static str,
    /// What goes on the wire, and what counts.
    pub docs: &'static str,
    /// Parameters with defaults.
    pub params: &'static [ParamSpec],
    /// Expected client-visible outcome with the defaults.
    pub outcome: Outcome,
    /// Cakewalk or kitchen.
    pub origin: Origin,
}

/// Parameter names accepted by every scenario (kitchen knobs, not scenario semantics).
pub const COMMON_PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "responseMode",
    kind: ParamKind::String,
    default: "\"auto\"",
    choices: &["auto", "json", "sse"],
    doc: "How requests are answered: `json` (application/json), `sse` (text/event-stream), or `auto` (JSON unless the handler emits messages before its result). Overrides the server option for this instance.",
}];

/// A scenario's parameters after merging the caller's JSON over the defaults.
#[derive(Clone, Debug, Default)]
pub struct Params {
    values: Map<String, Value>,
}

impl Params {
    /// Merge `given` (an object; anything else means "all defaults", as Cakewalk does) over
    /// the defaults of `info`. Keys match case-insensitively.
    pub fn resolve(info: &ScenarioInfo, given: &Value) -> Params {
        let mut values = Map::new();
        for spec in info.params.iter().chain(COMMON_PARAMS) {
            let v = given
                .as_object()
                .and_then(|o| o.iter().find(|(k, _)| k.eq_ignore_ascii_case(spec.name)))
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| spec.default_value());
            values.insert(spec.name.to_string(), v);
        }
        Params { values }
    }

    /// Raw value.
    pub fn get(&self, name: &str) -> &Value {
        self.values.get(name).unwrap_or(&Value::Null)
    }
    /// Integer value (0 when absent).
    pub fn i64(&self, name: &str) -> i64 {
        self.get(name).as_i64().unwrap_or(0)
    }
    /// Non-negative integer value.
    pub fn u64(&self, name: &str) -> u64 {
        self.get(name).as_u64().unwrap_or(0)
    }
    /// Number value.
    pub fn f64(&self, name: &str) -> f64 {
        self.get(name).as_f64().unwrap_or(0.0)
    }
    /// Boolean value.
    pub fn bool(&self, name: &str) -> bool {
        self.get(name).as_bool().unwrap_or(false)
    }
    /// String value (empty when absent).
    pub fn str(&self, name: &str) -> &str {
        self.get(name).as_str().unwrap_or("")
    }
    /// Milliseconds as a duration.
    pub fn ms(&self, name: &str) -> Duration {
        Duration::from_millis(self.u64(name))
    }
    /// Everything, as a JSON object.
    pub fn to_json(&self) -> Value {
        Value::Object(self.values.clone())
    }
}

/// Check `given` against the parameter schema of `info`: it must be an object, and every
/// key must name a parameter and have the right type (and be one of the listed choices).
pub fn validate_params(info: &ScenarioInfo, given: &Value) -> Result<(), String> {
    let Some(obj) = given.as_object() else {
        return Err("params must be a JSON object".into());
    };
    for (k, v) in obj {
        let Some(spec) = info
            .params
            .iter()
            .chain(COMMON_PARAMS)
            .find(|s| s.name.eq_ignore_ascii_case(k))
        else {
            return Err(format!("scenario {} has no parameter {k:?}", info.id));
        };
        if !spec.kind.accepts(v) {
            return Err(format!(
                "parameter {} must be of type {:?}",
                spec.name, spec.kind
            ));
        }
        if !spec.choices.is_empty() && !v.as_str().is_some_and(|s| spec.choices.contains(&s)) {
            return Err(format!(
                "parameter {} must be one of {:?}",
                spec.name, spec.choices
            ));
        }
    }
    Ok(())
}

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
}

/// A method answered by a scenario instead of the catalogue.
pub enum MethodReply {
    /// A JSON-RPC result.
    Result(Value),
    /// A JSON-RPC error (HTTP 200).
    Error(i64, String),
}

/// A scenario. Implementations are unit structs listed in [`REGISTRY`].
pub trait Scenario: Send + Sync + 'static {
    /// Static description.
    fn info(&self) -> &'static ScenarioInfo;

    /// Extra checks beyond the parameter types (e.g. non-negative durations).
    fn validate(&self, _params: &Params) -> Result<(), String> {
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
    fn tool_list(
        &self,
        _instance: &crate::instance::Instance,
        _clock: &crate::instance::CatalogClock,
    ) -> Option<Vec<Value>> {
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
}

/// Every scenario the kitchen offers, in catalogue order. Ids are unique (tested).
pub static REGISTRY: &[&dyn Scenario] = &[
    &baseline::Baseline,
    &errors_http_status_sequence::HttpStatusSequence,
    &errors_jsonrpc_error::JsonRpcError,
    &errors_tool_error::ToolError,
    &elicitation::Approval,
    &compat_sdk_v2::SdkV2,
    &timeout::UncooperativeHang,
    &timeout::CooperativeDeadline,
    &timeout::LateResponse,
    &timeout::InitHang,
    &errors_connection_close::ConnectionClose,
    &errors_malformed_payload::MalformedPayload,
    &errors_http_status_per_method::HttpStatusPerMethod,
    &errors_non_compliant_envelope::NonCompliantEnvelope,
    &auth_token_lifecycle::TokenLifecycle,
    &catalog_pagination::Pagination,
    &catalog_facet_unavailable::FacetUnavailable,
    &catalog_mutation::Mutation,
    &elicitation::Decline,
    &elicitation::UrlMode,
    &sse::CutBeforeResponse,
    &sse::CutMidEvent,
    &sse::PrimingThenClose,
    &sse::Keepalive,
    &sse::ServerRequest,
    &errors_rate_limited::RateLimited,
    &auth_oauth_challenge::OauthChallenge,
    &auth_insufficient_scope::InsufficientScope,
    &auth_oauth_flow::OauthFlow,
    &session_expire::SessionExpire,
    &errors_content_type::ContentType,
    &errors_accepted_for_request::AcceptedForRequest,
    &compat_legacy_result::LegacyResult,
    &compat_output_schema_mismatch::OutputSchemaMismatch,
    &chaos_mix::ChaosMix,
    &tasks_deferred::Deferred,
];

/// Look a scenario up by id.
pub fn find(id: &str) -> Option<&'static dyn Scenario> {
    REGISTRY.iter().copied().find(|s| s.info().id == id)
}

/// The registry as JSON (for `GET /kitchen/scenarios`).
pub fn catalogue_json() -> Value {
    Value::Array(REGISTRY.iter().map(|s| info_json(s.info())).collect())
}

/// One scenario as JSON.
pub fn info_json(info: &ScenarioInfo) -> Value {
    let params: BTreeMap<&str, Value> = info
        .params
        .iter()
        .map(|p| {
            let mut v = json!({ "type": p.kind, "default": p.default_value(), "doc": p.doc });
            if !p.choices.is_empty() {
                v["choices"] = json!(p.choices);
            }
            (p.name, v)
        })
        .collect();
    json!({
        "id": info.id,
        "summary": info.summary,
        "docs": info.docs,
        "params": params,
        "expectedOutcome": info.outcome,
        "origin": info.origin,
    })
}

/// Cakewalk's `ShouldApplyOnInvocation`: a fault configured for invocation N fires exactly
/// once, on the Nth counted event. `0` is the kitchen's "every time" where a scenario
/// documents it.
pub fn on_invocation(count: u64, on: u64) -> bool {
    count == on
}

/// The `error.code` of a body that is one JSON-RPC error response, for [`Wire::describe`].
fn jsonrpc_error_code(body: &Bytes) -> Option<i64> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v.get("error")?.get("code")?.as_i64()
}
