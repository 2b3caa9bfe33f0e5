//! `auth.oauth_flow`: a resource protected by the kitchen's own OAuth authorization server
//! ([`crate::oauth_as`]), with the fault a client has to get through: its protected-resource
//! metadata names the server variant for `fault`, and the resource judges every bearer token
//! by that server's records (expiry, revocation, audience, scope).

use bytes::Bytes;
use serde_json::json;

use super::auth_oauth_challenge::metadata_url;
use crate::oauth_as::{AsFault, TokenCheck, BASE_SCOPE, WRITE_SCOPE};
use crate::plugin::WireCx;
use crate::plugin::{Origin, Outcome, ParamKind, ParamSpec, Scenario, ScenarioInfo, Wire};

/// `auth.oauth_flow`.
pub struct OauthFlow;

static INFO: ScenarioInfo = ScenarioInfo {
    id: "auth.oauth_flow",
    summary: "Every POST needs a token from the kitchen's authorization server (`/oauth/{fault}`), which misbehaves as `fault` says.",
    docs: "No token: 401 `WWW-Authenticate: Bearer resource_metadata=…, scope=\"mcp:tools\"`; the metadata names the issuer `<base>/oauth/<fault>` \
           (RFC 8414 metadata, registration, an authorize endpoint that approves at once, token, refresh, revocation). \
           A token that is unknown, revoked, expired or for another resource: 401 `invalid_token`; too little scope: 403 `insufficient_scope`. \
           Faults: `expired_token` (a client's first access token is already expired; refreshing helps), `revoked_refresh` (and its refresh token is \
           revoked; only a new authorization helps), `wrong_audience` (tokens for another resource: a client must give up), `missing_pkce` \
           (metadata without S256: a client must refuse), `metadata_404`, `scope_step_up` (tools/call needs `mcp:write` too). \
           The server's counters: `oauth` in `GET /kitchen/counters`.",
    params: &[ParamSpec {
        name: "fault",
        kind: ParamKind::String,
        default: "\"none\"",
        choices: &[
            "none",
            "expired_token",
            "revoked_refresh",
            "wrong_audience",
            "missing_pkce",
            "metadata_404",
            "scope_step_up",
        ],
        doc: "How the authorization server misbehaves.",
    }],
    outcome: Outcome::HttpError,
    origin: Origin::Kitchen,
};

/// The fault of an instance's parameters.
pub fn fault(cx: &WireCx<'_>) -> AsFault {
    AsFault::parse(cx.p().str("fault")).unwrap_or(AsFault::None)
}

fn challenge(status: u16, params: String, error: &str) -> Wire {
    Wire::Body {
        status,
        content_type: "application/json",
        headers: vec![("www-authenticate".into(), format!("Bearer {params}"))],
        body: Bytes::from(json!({ "error": error }).to_string()),
    }
}

impl Scenario for OauthFlow {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        let meta = metadata_url(cx.base_url, cx.endpoint_url);
        let token = cx
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let Some(token) = token else {
            return challenge(
                401,
                format!("resource_metadata=\"{meta}\", scope=\"{BASE_SCOPE}\""),
                "invalid_token",
            );
        };
        let granted = match cx.auth.check(token, cx.endpoint_url) {
            TokenCheck::Valid(scope) => scope,
            TokenCheck::Invalid(why) => {
                return challenge(
                    401,
                    format!("error=\"invalid_token\", error_description=\"{why}\", resource_metadata=\"{meta}\""),
                    "invalid_token",
                )
            }
        };
        let required: &[&str] =
            if fault(cx) == AsFault::ScopeStepUp && cx.method == Some("tools/call") {
                &[BASE_SCOPE, WRITE_SCOPE]
            } else {
                &[BASE_SCOPE]
            };
        let held: Vec<&str> = granted.split(' ').collect();
        if required.iter().all(|r| held.contains(r)) {
            return Wire::Continue;
        }
        challenge(
            403,
            format!(
                "error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{meta}\"",
                required.join(" ")
            ),
            "insufficient_scope",
        )
    }
}
