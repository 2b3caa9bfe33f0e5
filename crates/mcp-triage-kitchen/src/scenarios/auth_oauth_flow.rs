//! `auth.oauth_flow`: a resource protected by the kitchen's own OAuth authorization server
//! ([`crate::oauth_as`]), with the fault a client has to get through: its protected-resource
//! metadata names the server variant for `fault`, and the resource judges every token by that
//! server's records (expiry, revocation, audience, scope) and, under the DPoP faults, by the
//! request's proof of the key the token is bound to.

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
           (metadata without S256: a client must refuse), `metadata_404`, `scope_step_up` (tools/call needs `mcp:write` too), \
           `dpop` (RFC 9449: the token request needs a DPoP proof, tokens are DPoP-bound, every POST needs `Authorization: DPoP` and a proof of the \
           bound key with `ath`; challenges use the DPoP scheme), `dpop_nonce` (and both the token endpoint and the resource demand their nonce: \
           `use_dpop_nonce` with `DPoP-Nonce`). \
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
            "dpop",
            "dpop_nonce",
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

/// A 401 or 403 with a `WWW-Authenticate` challenge of `scheme` (`Bearer`, or `DPoP` where
/// tokens are DPoP-bound: RFC 9449 §7.1) and, for `use_dpop_nonce`, the nonce.
fn challenge(
    status: u16,
    scheme: &str,
    params: String,
    error: &str,
    nonce: Option<String>,
) -> Wire {
    let mut headers = vec![("www-authenticate".into(), format!("{scheme} {params}"))];
    if let Some(n) = nonce {
        headers.push(("dpop-nonce".into(), n));
    }
    Wire::Body {
        status,
        content_type: "application/json",
        headers,
        body: Bytes::from(json!({ "error": error }).to_string()),
    }
}

/// The token of the request's `Authorization` header and whether its scheme is DPoP (schemes
/// compare case-insensitively, RFC 9110 §11.1).
fn presented<'a>(cx: &WireCx<'a>) -> Option<(&'a str, bool)> {
    let v = cx.headers.get("authorization")?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    let token = token.trim();
    if scheme.eq_ignore_ascii_case("bearer") {
        Some((token, false))
    } else if scheme.eq_ignore_ascii_case("dpop") {
        Some((token, true))
    } else {
        None
    }
}

impl Scenario for OauthFlow {
    fn info(&self) -> &'static ScenarioInfo {
        &INFO
    }
    fn on_request(&self, cx: &WireCx<'_>) -> Wire {
        let meta = metadata_url(cx.base_url, cx.endpoint_url);
        let fault = fault(cx);
        let scheme = if fault.dpop() { "DPoP" } else { "Bearer" };
        let Some((token, dpop)) = presented(cx) else {
            let algs = if fault.dpop() { "algs=\"ES256\", " } else { "" };
            return challenge(
                401,
                scheme,
                format!("{algs}resource_metadata=\"{meta}\", scope=\"{BASE_SCOPE}\""),
                "invalid_token",
                None,
            );
        };
        let check = if dpop {
            let proof = cx.headers.get("dpop").and_then(|v| v.to_str().ok());
            let want_nonce = fault == AsFault::DpopNonce;
            cx.auth
                .check_dpop(token, proof, "POST", cx.endpoint_url, want_nonce)
        } else {
            cx.auth.check(token, cx.endpoint_url)
        };
        let granted = match check {
            TokenCheck::Valid(scope) => scope,
            TokenCheck::Invalid(why) => {
                return challenge(
                    401,
                    scheme,
                    format!("error=\"invalid_token\", error_description=\"{why}\", resource_metadata=\"{meta}\""),
                    "invalid_token",
                    None,
                )
            }
            TokenCheck::UseNonce(nonce) => {
                return challenge(
                    401,
                    "DPoP",
                    format!("error=\"use_dpop_nonce\", error_description=\"the resource requires a DPoP nonce\", resource_metadata=\"{meta}\""),
                    "use_dpop_nonce",
                    Some(nonce),
                )
            }
        };
        let required: &[&str] = if fault == AsFault::ScopeStepUp && cx.method == Some("tools/call")
        {
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
            scheme,
            format!(
                "error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{meta}\"",
                required.join(" ")
            ),
            "insufficient_scope",
            None,
        )
    }
}
