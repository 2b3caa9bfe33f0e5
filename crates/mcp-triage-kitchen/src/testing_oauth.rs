//! A small OAuth 2.1 authorization server for client tests (feature `testing`): RFC 8414
//! metadata, dynamic registration, an authorization endpoint that approves at once by
//! redirecting, and a token endpoint (authorization code with PKCE S256 checked, refresh).
//! It pairs with the kitchen's `auth.oauth_challenge` scenario (whose metadata names this
//! server): the tokens it issues are the ones a test configures, so a test knows exactly which
//! secret strings must never show up in records or output.
//!
//! It counts what clients do (registrations, authorizations, grants) and keeps the last
//! `resource` and `scope` asked for, for assertions.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// What the server hands out.
#[derive(Debug, Clone)]
pub struct TestAsOptions {
    /// Access tokens, issued in order (the last one repeats).
    pub access_tokens: Vec<String>,
    /// The refresh token issued with each access token (`None`: no refresh tokens).
    pub refresh_token: Option<String>,
    /// `expires_in` of a token issued for an authorization code.
    pub expires_in: u64,
    /// `expires_in` of a token issued for a refresh token (`None`: `expires_in`). A test of
    /// refresh-before-expiry gives the refreshed token a long life, so a slow machine that
    /// takes more than half a short lifetime for one run does not refresh a second time.
    pub refreshed_expires_in: Option<u64>,
}

/// Counters and the last request values.
#[derive(Debug, Clone, Default)]
pub struct TestAsSeen {
    /// Dynamic registrations.
    pub registrations: u32,
    /// Authorization requests.
    pub authorizations: u32,
    /// authorization_code grants that passed PKCE.
    pub code_grants: u32,
    /// refresh_token grants.
    pub refresh_grants: u32,
    /// Token requests refused (bad PKCE, unknown code, missing resource).
    pub refused: u32,
    /// `resource` of the last authorization request.
    pub last_resource: Option<String>,
    /// `scope` of the last authorization request.
    pub last_scope: Option<String>,
}

struct AsState {
    issuer: String,
    opts: TestAsOptions,
    tokens: Mutex<VecDeque<String>>,
    /// code → (code_challenge, resource)
    codes: Mutex<HashMap<String, (String, String)>>,
    seen: Mutex<TestAsSeen>,
}

/// A running test authorization server.
pub struct TestAs {
    /// Its issuer URL (`http://127.0.0.1:PORT`).
    pub url: String,
    state: Arc<AsState>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestAs {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestAs {
    /// Starts on a free loopback port.
    pub async fn start(opts: TestAsOptions) -> TestAs {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .expect("bind the test AS");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let state = Arc::new(AsState {
            issuer: url.clone(),
            tokens: Mutex::new(opts.access_tokens.iter().cloned().collect()),
            opts,
            codes: Mutex::new(HashMap::new()),
            seen: Mutex::new(TestAsSeen::default()),
        });
        let app = Router::new()
            .route("/.well-known/oauth-authorization-server", get(metadata))
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        TestAs { url, state, task }
    }

    /// What clients did so far.
    pub fn seen(&self) -> TestAsSeen {
        self.state.seen.lock().expect("seen lock").clone()
    }
}

async fn metadata(State(s): State<Arc<AsState>>) -> Json<Value> {
    let i = &s.issuer;
    Json(json!({
        "issuer": i,
        "authorization_endpoint": format!("{i}/authorize"),
        "token_endpoint": format!("{i}/token"),
        "registration_endpoint": format!("{i}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    }))
}

async fn register(State(s): State<Arc<AsState>>, Json(body): Json<Value>) -> Response {
    let n = {
        let mut seen = s.seen.lock().expect("seen lock");
        seen.registrations += 1;
        seen.registrations
    };
    (
        StatusCode::CREATED,
        Json(json!({
            "client_id": format!("test-client-{n}"),
            "redirect_uris": body["redirect_uris"],
            "token_endpoint_auth_method": "none",
        })),
    )
        .into_response()
}

async fn authorize(
    State(s): State<Arc<AsState>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let n = {
        let mut seen = s.seen.lock().expect("seen lock");
        seen.authorizations += 1;
        seen.last_resource = q.get("resource").cloned();
        seen.last_scope = q.get("scope").cloned();
        seen.authorizations
    };
    let (Some(redirect), Some(challenge)) = (q.get("redirect_uri"), q.get("code_challenge")) else {
        return (
            StatusCode::BAD_REQUEST,
            "redirect_uri and code_challenge required",
        )
            .into_response();
    };
    if q.get("code_challenge_method").map(String::as_str) != Some("S256") {
        return (StatusCode::BAD_REQUEST, "S256 required").into_response();
    }
    let code = format!("code-{n}");
    s.codes.lock().expect("codes lock").insert(
        code.clone(),
        (
            challenge.clone(),
            q.get("resource").cloned().unwrap_or_default(),
        ),
    );
    let state = q.get("state").cloned().unwrap_or_default();
    let location = format!("{redirect}?code={code}&state={state}");
    (StatusCode::FOUND, [("location", location)]).into_response()
}

fn refuse(s: &AsState, error: &str) -> Response {
    s.seen.lock().expect("seen lock").refused += 1;
    (StatusCode::BAD_REQUEST, Json(json!({ "error": error }))).into_response()
}

async fn token(State(s): State<Arc<AsState>>, _headers: HeaderMap, body: String) -> Response {
    let f = crate::oauth_as::form_pairs(&body);
    match f.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let Some((challenge, resource)) = f
                .get("code")
                .and_then(|c| s.codes.lock().expect("codes lock").remove(c))
            else {
                return refuse(&s, "invalid_grant");
            };
            let verifier = f.get("code_verifier").cloned().unwrap_or_default();
            let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
            if computed != challenge || f.get("resource") != Some(&resource) || resource.is_empty()
            {
                return refuse(&s, "invalid_grant");
            }
            s.seen.lock().expect("seen lock").code_grants += 1;
        }
        Some("refresh_token") => {
            if s.opts.refresh_token.is_none()
                || f.get("refresh_token") != s.opts.refresh_token.as_ref()
            {
                return refuse(&s, "invalid_grant");
            }
            s.seen.lock().expect("seen lock").refresh_grants += 1;
        }
        _ => return refuse(&s, "unsupported_grant_type"),
    }
    let expires_in = match f.get("grant_type").map(String::as_str) {
        Some("refresh_token") => s.opts.refreshed_expires_in.unwrap_or(s.opts.expires_in),
        _ => s.opts.expires_in,
    };
    let access = {
        let mut t = s.tokens.lock().expect("tokens lock");
        if t.len() > 1 {
            t.pop_front().unwrap_or_default()
        } else {
            t.front().cloned().unwrap_or_default()
        }
    };
    let mut body = json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": expires_in,
    });
    if let Some(r) = &s.opts.refresh_token {
        body["refresh_token"] = json!(r);
    }
    Json(body).into_response()
}
