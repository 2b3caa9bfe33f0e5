//! The admin API under `/kitchen/*` (JSON; the Host/Origin check of `/mcp`; bearer token when
//! configured).
//!
//! It lets a test harness choose what `/mcp` serves, read the counters a scenario keeps,
//! and read the journal that later grades a client. Selection semantics: a new selection
//! applies to legacy sessions that start after it (running sessions keep their instance)
//! and to the next modern request (modern requests have no session).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use crate::host_check;
use crate::scenarios;
use crate::sse::json_response;
use crate::state::Shared;

fn authorized(shared: &Shared, headers: &HeaderMap) -> bool {
    match &shared.options.admin_token {
        None => true,
        Some(t) => headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token)
            .is_some_and(|got| constant_time_eq(got.as_bytes(), t.as_bytes())),
    }
}

/// The token of `Authorization: Bearer <token>`. The scheme is matched case-insensitively
/// (RFC 9110 §11.1, RFC 6750 §2.1: `bearer abc` is the same credential) and may be followed by
/// more than one space.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("Bearer")
        .then(|| token.trim_start_matches(' '))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn unauthorized() -> Response<Body> {
    let mut r = json_response(401, &json!({ "error": "admin token required" }));
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"kitchen-admin\""),
    );
    r
}

fn forbidden() -> Response<Body> {
    json_response(403, &json!({ "error": host_check::FORBIDDEN }))
}

/// Every admin route first applies the DNS-rebinding check of `/mcp` (a page on another site
/// must not reconfigure the kitchen through a browser), then the bearer token.
macro_rules! guard {
    ($s:expr, $h:expr) => {
        if !host_check::request_allowed(&$s, &$h) {
            return forbidden();
        }
        if !authorized(&$s, &$h) {
            return unauthorized();
        }
    };
}

async fn scenarios_list(State(s): State<Arc<Shared>>, h: HeaderMap) -> Response<Body> {
    guard!(s, h);
    json_response(
        200,
        &json!({ "scenarios": scenarios::catalogue_json(), "commonParams": common_params() }),
    )
}

fn common_params() -> Value {
    scenarios::COMMON_PARAMS
        .iter()
        .map(|p| (p.name.to_string(), json!({ "type": p.kind, "default": p.default_value(), "choices": p.choices, "doc": p.doc })))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

async fn selection_get(State(s): State<Arc<Shared>>, h: HeaderMap) -> Response<Body> {
    guard!(s, h);
    let sel = s.selection();
    json_response(
        200,
        &json!({ "scenarioId": sel.scenario, "params": sel.params }),
    )
}

/// `PUT /kitchen/selection` with `{"scenarioId": "...", "params": {...}}` (Cakewalk's
/// `paramsJson` string form is accepted too).
async fn selection_put(
    State(s): State<Arc<Shared>>,
    h: HeaderMap,
    body: axum::body::Bytes,
) -> Response<Body> {
    guard!(s, h);
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return json_response(400, &json!({ "error": "body must be JSON" }));
    };
    let Some(id) = v.get("scenarioId").and_then(Value::as_str) else {
        return json_response(400, &json!({ "error": "scenarioId is required" }));
    };
    let params = match (v.get("params"), v.get("paramsJson").and_then(Value::as_str)) {
        (Some(p), _) => p.clone(),
        (None, Some(text)) => match serde_json::from_str(text) {
            Ok(p) => p,
            Err(_) => {
                return json_response(400, &json!({ "error": "paramsJson is not valid JSON" }))
            }
        },
        (None, None) => json!({}),
    };
    match s.set_selection(id.to_string(), params.clone()) {
        Ok(()) => json_response(200, &json!({ "scenarioId": id, "params": params })),
        Err(e) => json_response(400, &json!({ "error": e.to_string() })),
    }
}

async fn counters(State(s): State<Arc<Shared>>, h: HeaderMap) -> Response<Body> {
    guard!(s, h);
    json_response(
        200,
        &json!({ "instances": s.counters(), "oauth": s.auth.counters() }),
    )
}

/// How many journal entries were dropped (by its entry or byte bound) since start or reset.
pub const JOURNAL_DROPPED_HEADER: &str = "x-kitchen-journal-dropped";

async fn journal(State(s): State<Arc<Shared>>, h: HeaderMap) -> Response<Body> {
    guard!(s, h);
    let mut r = Response::new(Body::from(s.journal.to_json_lines()));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/jsonl"),
    );
    // In a header, not a line: every line of the body stays an entry for its readers.
    r.headers_mut().insert(
        JOURNAL_DROPPED_HEADER,
        HeaderValue::from(s.journal.dropped()),
    );
    r
}

async fn reset(State(s): State<Arc<Shared>>, h: HeaderMap) -> Response<Body> {
    guard!(s, h);
    s.reset();
    let mut r = json_response(200, &json!({ "reset": true }));
    *r.status_mut() = StatusCode::OK;
    r
}

/// Routes under `/kitchen`.
pub fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/kitchen/scenarios", get(scenarios_list))
        .route("/kitchen/selection", get(selection_get).put(selection_put))
        .route("/kitchen/counters", get(counters))
        .route("/kitchen/journal", get(journal))
        .route("/kitchen/reset", axum::routing::post(reset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_scheme_is_case_insensitive() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer abc"), Some("abc"));
        assert_eq!(bearer_token("BEARER  abc"), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearerabc"), None);
        assert_eq!(bearer_token("Bearer"), None);
    }
}
