//! `auth.oauth_challenge`: 401 with an RFC 9728 `WWW-Authenticate` challenge. The
//! protected-resource metadata document it points to is served by
//! [`crate::auth_endpoints`], which reads this scenario's parameters.

use axum::http::HeaderMap;
use bytes::Bytes;
use serde_json::json;

use crate::plugin::WireCx;
use crate::plugin::{Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, Wire};

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
