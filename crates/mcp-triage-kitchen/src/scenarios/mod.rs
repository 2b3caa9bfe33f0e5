//! The scenario registry: every misbehaviour the kitchen can be asked for.
//!
//! Each scenario lives in its own module and is listed exactly once in [`REGISTRY`].
//! Tests walk that list, the admin API publishes it, and a selection is validated
//! against it, so an id, its parameter names and defaults, and its expected
//! client-visible outcome are stated in one place. Ids, parameter names, defaults and
//! counting semantics of the Cakewalk scenarios match Cakewalk MCP Test Kitchen, so that a
//! configuration moves across unchanged.
//!
//! What a scenario implements and receives is the plug-in API, [`crate::plugin`]; the
//! scenario modules import it and nothing above it (not the shared state, not the endpoint,
//! not this registry), so the registry stands above every scenario and only the state, the
//! endpoint and the admin API look scenarios up here. The API's types are re-exported here
//! for callers that name them through the registry.

use serde_json::Value;

pub use crate::plugin::spec::{
    info_json, on_invocation, validate_params, Origin, Outcome, ParamKind, ParamSpec, Params,
    ParamsError, ScenarioInfo, COMMON_PARAMS,
};
pub use crate::plugin::{MethodReply, Scenario, ToolFault, ToolReply, Wire};

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
pub mod errors_tool_failure;
pub mod session_expire;
pub mod sse;
pub mod tasks_deferred;
pub mod timeout;

/// Every scenario the kitchen offers, in catalogue order. Ids are unique (tested).
pub static REGISTRY: &[&dyn Scenario] = &[
    &baseline::Baseline,
    &errors_http_status_sequence::HttpStatusSequence,
    &errors_jsonrpc_error::JsonRpcError,
    &errors_tool_error::ToolError,
    &errors_tool_failure::ToolFailure,
    &elicitation::Approval,
    &compat_sdk_v2::SdkV2,
    &timeout::UncooperativeHang,
    &timeout::CooperativeDeadline,
    &timeout::LateResponse,
    &timeout::ProgressKeepalive,
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
