//! The HTTP face of the auth scenarios: the protected-resource metadata (RFC 9728) that
//! `auth.oauth_challenge`, `auth.insufficient_scope` and `auth.oauth_flow` point clients
//! to, and the endpoints of the kitchen's authorization server ([`crate::oauth_as`]).
//!
//! These handlers take the shared state (they look instances up and read the bound address),
//! so they stand above the registry; the scenarios and the authorization server below them
//! never import the state.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, RawQuery, State};
use axum::http::{HeaderMap, Response};
use serde_json::json;

use crate::instance::Instance;
use crate::mcp::parse_query;
use crate::oauth_as;
use crate::origin::base_url;
use crate::plugin::Scenario;
use crate::scenarios::auth_oauth_challenge::OauthChallenge;
use crate::sse::json_response;
use crate::state::Shared;

/// The protected-resource metadata for `resource_path` on the kitchen at `base`: it names the
/// kitchen's own authorization server for `auth.oauth_flow`, the configured scope and issuer
/// for the challenge scenarios, and defaults otherwise.
fn document(base: &str, resource_path: &str, instance: Option<&Instance>) -> Response<Body> {
    if let Some(i) = instance.filter(|i| i.scenario.info().id == "auth.oauth_flow") {
        let fault = oauth_as::AsFault::parse(i.state.params.str("fault"))
            .unwrap_or(oauth_as::AsFault::None);
        return json_response(
            200,
            &json!({
                "resource": format!("{base}{resource_path}"),
                "authorization_servers": [oauth_as::issuer(base, fault)],
                "scopes_supported": [oauth_as::BASE_SCOPE],
                "bearer_methods_supported": ["header"],
                "resource_name": "mcp-triage kitchen (auth.oauth_flow)",
            }),
        );
    }
    let (scope, issuer) = match instance.filter(|i| {
        i.scenario.info().id == OauthChallenge.info().id
            || i.scenario.info().id == "auth.insufficient_scope"
    }) {
        Some(i) => (
            i.state.params.str("scope").to_string(),
            i.state
                .params
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
    base_url(shared.bound_addr(), headers)
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
        Some(scenario) => parse_query(scenario, q.as_deref())
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

/// `GET /.well-known/oauth-authorization-server/oauth/{fault}` (RFC 8414 path insertion).
pub async fn as_metadata(
    State(s): State<Arc<Shared>>,
    Path(fault): Path<String>,
    headers: HeaderMap,
) -> Response<Body> {
    oauth_as::metadata(&base_of(&s, &headers), &fault)
}

/// `POST /oauth/{fault}/register`.
pub async fn register(
    State(s): State<Arc<Shared>>,
    Path(fault): Path<String>,
    body: String,
) -> Response<Body> {
    oauth_as::register(&s.auth, &fault, &body)
}

/// `GET /oauth/{fault}/authorize`.
pub async fn authorize(
    State(s): State<Arc<Shared>>,
    Path(fault): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response<Body> {
    oauth_as::authorize(&s.auth, &fault, &q)
}

/// `POST /oauth/{fault}/token`, with its `DPoP` proof (checked against this very URL under the
/// DPoP faults).
pub async fn token(
    State(s): State<Arc<Shared>>,
    Path(fault): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response<Body> {
    let token_url = format!("{}/oauth/{fault}/token", base_of(&s, &headers));
    let proof = headers.get("dpop").and_then(|v| v.to_str().ok());
    oauth_as::token(&s.auth, &fault, &body, proof, &token_url)
}

/// `POST /oauth/{fault}/revoke`.
pub async fn revoke(
    State(s): State<Arc<Shared>>,
    Path(fault): Path<String>,
    body: String,
) -> Response<Body> {
    oauth_as::revoke(&s.auth, &fault, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn big_registrations_are_refused() {
        let s = Arc::new(Shared::new(crate::KitchenOptions::default()).unwrap());
        let doc = json!({"redirect_uris": ["http://127.0.0.1/cb"], "x": "y".repeat(100 * 1024)});
        let r = register(State(s), Path("none".into()), doc.to_string()).await;
        assert_eq!(r.status(), 400);
    }
}
