//! `auth.oauth_challenge`: 401 with an RFC 9728 `WWW-Authenticate` challenge, plus the
//! protected-resource metadata document it points to.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, Response};
use bytes::Bytes;
use serde_json::json;

use super::{Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, Wire};
use crate::context::WireCx;
use crate::instance::Instance;
use crate::sse::json_response;
use crate::state::Shared;

/// `auth.oauth_challenge`.
pub struct OauthChallenge;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "auth.oauth_challenge",
    summary: "POSTs without `Authorization: Bearer <token>` get 401 + WWW-Authenticate resource_metadata/scope.",
    docs: "`WWW-Authenticate: Bearer resource_metadata=\"<base>/.well-known/oauth-protected-resource<endpoint path>\", scope=\"<scope>\"`. \
           The metadata document (also at the root well-known URL) names `authorizationServer`. A request with the configured token passes. \
           No counter.",
    params: &[
        ParamSpec { name: "token", kind: ParamKind::String, default: "\"kitchen-token\"", choices: &[], doc: "Bearer token that passes." },
        ParamSpec { name: "scope", kind: ParamKind::String, default: "\"mcp:tools\"", choices: &[], doc: "Scope in the challenge." },
        ParamSpec { name: "authorizationServer", kind: ParamKind::String, default: "\"https://auth.kitchen.invalid\"", choices: &[], doc: "Issuer listed in the metadata." },
    ],
    outcome: Outcome::HttpError,
    origin: Origin::Kitchen,
};

/// The resource-metadata URL for an endpoint URL (`base` + well-known + endpoint path).
pub fn metadata_url(base: &str, endpoint_url: &str) -> String {
    let path = endpoint_url.strip_prefix(base).unwrap_or("/mcp");
    format!("{base}/.well-known/oauth-protected-resource{path}")
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

impl Scenario for OauthChallenge {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        if bearer(cx.headers) == Some(cx.p().str("token")) {
            return Wire::Continue;
        }
        let challenge = format!(
            "Bearer resource_metadata=\"{}\", scope=\"{}\"",
            metadata_url(cx.base_url, cx.endpoint_url),
            cx.p().str("scope")
        );
        Wire::Body {
            status: 401,
            content_type: "application/json",
            headers: vec![("www-authenticate".into(), challenge)],
            body: Bytes::from(
                json!({ "error": "invalid_token", "error_description": "Bearer token required" })
                    .to_string(),
            ),
        }
    }
}

fn document(base: &str, resource_path: &str, instance: Option<&Instance>) -> Response<Body> {
    if let Some(i) = instance.filter(|i| i.scenario.info().id == "auth.oauth_flow") {
        let fault = crate::oauth_as::AsFault::parse(i.params.str("fault"))
            .unwrap_or(crate::oauth_as::AsFault::None);
        return json_response(
            200,
            &json!({
                "resource": format!("{base}{resource_path}"),
                "authorization_servers": [crate::oauth_as::issuer(base, fault)],
                "scopes_supported": [crate::oauth_as::BASE_SCOPE],
                "bearer_methods_supported": ["header"],
                "resource_name": "mcp-triage kitchen (auth.oauth_flow)",
            }),
        );
    }
    let (scope, issuer) = match instance.filter(|i| {
        i.scenario.info().id == INFO.id || i.scenario.info().id == "auth.insufficient_scope"
    }) {
        Some(i) => (
            i.params.str("scope").to_string(),
            i.params
                .get("authorizationServer")
                .as_str()
                .unwrap_or("https://auth.kitchen.invalid")
                .to_string(),
        ),
        None => (
            "mcp:tools".to_string(),
            "https://auth.kitchen.invalid".to_string(),
        ),
    };
    json_response(
        200,
        &json!({
            "resource": format!("{base}{resource_path}"),
            "authorization_servers": [issuer],
            "scopes_supported": [scope],
            "bearer_methods_supported": ["header"],
            "resource_name": "mcp-triage kitchen",
        }),
    )
}

/// The same origin the challenge names (a forwarded host behind a loopback proxy).
fn base_of(shared: &Shared, headers: &HeaderMap) -> String {
    crate::mcp::base_url(shared, headers)
}

/// `GET /.well-known/oauth-protected-resource`: metadata for `/mcp` (the stored selection).
pub async fn metadata_root(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response<Body> {
    let base = base_of(&s, &headers);
    let inst = s.selected_instance().ok();
    document(&base, "/mcp", inst.as_deref())
}

/// `GET /.well-known/oauth-protected-resource/{path}`: metadata for that endpoint path
/// (`mcp` or `s/{scenario}/mcp`, with the instance's query).
pub async fn metadata_path(
    State(s): State<Arc<Shared>>,
    Path(rest): Path<String>,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
) -> Response<Body> {
    let base = base_of(&s, &headers);
    let inst = match rest.strip_prefix("s/").and_then(|r| r.strip_suffix("/mcp")) {
        Some(scenario) => crate::mcp::parse_query(scenario, q.as_deref())
            .ok()
            .and_then(|(p, tag)| s.instance(scenario, &p, tag.as_deref()).ok()),
        None if rest == "mcp" => s.selected_instance().ok(),
        None => return json_response(404, &json!({ "error": "no such protected resource" })),
    };
    let path = match &q {
        Some(q) if !q.is_empty() => format!("/{rest}?{q}"),
        _ => format!("/{rest}"),
    };
    document(&base, &path, inst.as_deref())
}
