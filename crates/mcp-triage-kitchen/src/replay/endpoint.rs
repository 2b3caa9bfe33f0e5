//! The replay's HTTP side: the router (admin API under `/kitchen/*`, every other path
//! replayed) and the handler that takes one request through the kitchen's own checks
//! (Host/Origin, body size and read time) and journals it.
//!
//! It is the entry of the per-request flow, and its end: the journal entry is begun here,
//! filled in by `answer`, and pushed once the response head (after its captured delay) is
//! ready, so a replayed exchange is journaled as `/mcp` requests are.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, Response};
use axum::Router;
use serde_json::Value;

use crate::journal;
use crate::server::KitchenHandle;
use crate::state::{KitchenError, KitchenOptions, Shared};
use crate::{host_check, protocol, Kitchen};

use super::answer::answer;
use super::lookup::Replay;
use super::serve::{HeadDelay, REPLAY_SCENARIO};

/// Serve `replay` on `addr` with the kitchen's accept loop, admin API and journal.
pub async fn start_replay(
    addr: SocketAddr,
    options: KitchenOptions,
    replay: Replay,
) -> Result<KitchenHandle, KitchenError> {
    let replay = Arc::new(replay);
    crate::server::start_with(addr, options, move |kitchen| router(kitchen, replay)).await
}

/// The replay router: the admin API under `/kitchen/*`, every other path replayed. A
/// successful `POST /kitchen/reset` also starts every key over at its first captured line.
pub fn router(kitchen: Kitchen, replay: Arc<Replay>) -> Router {
    let shared = kitchen.shared().clone();
    let on_reset = replay.clone();
    Router::new()
        .merge(crate::admin::routes())
        .with_state(shared.clone())
        .fallback(move |req: Request| {
            let (shared, replay) = (shared.clone(), replay.clone());
            async move { handle(State((shared, replay)), req).await }
        })
        .layer(axum::middleware::from_fn(
            move |req: Request, next: axum::middleware::Next| {
                let replay = on_reset.clone();
                async move {
                    let reset = req.method() == axum::http::Method::POST
                        && req.uri().path() == "/kitchen/reset";
                    let resp = next.run(req).await;
                    if reset && resp.status().is_success() {
                        replay.start_over();
                    }
                    resp
                }
            },
        ))
}

async fn handle(
    State((shared, replay)): State<(Arc<Shared>, Arc<Replay>)>,
    req: Request,
) -> Response<Body> {
    let received = journal::now_ms();
    let (parts, body) = req.into_parts();
    let headers = parts.headers;
    let http_method = parts.method.as_str().to_string();
    let mut entry = journal::JournalEntry::new(
        received,
        &http_method,
        REPLAY_SCENARIO,
        journal::redacted_headers(&headers),
    );
    entry.instance = Some(REPLAY_SCENARIO.to_string());
    entry.session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    entry.era = Some(
        if headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
            .is_some_and(protocol::is_modern_version)
        {
            protocol::Era::Modern
        } else {
            protocol::Era::Legacy
        },
    );
    let resp = if !host_check::request_allowed(&shared, &headers) {
        entry.injected = Some("rejected Host/Origin".into());
        crate::sse::json_response(
            403,
            &protocol::error_response(None, protocol::INVALID_REQUEST, host_check::FORBIDDEN, None),
        )
    } else {
        let limit = shared.options.max_body_bytes;
        match tokio::time::timeout(
            shared.options.body_read_timeout,
            axum::body::to_bytes(body, limit),
        )
        .await
        {
            Err(_) => {
                entry.injected = Some("request body not received in time".into());
                own_error(408, None, "Request body not received in time")
            }
            Ok(Err(e)) if !crate::mcp::body_over_limit(&e) => {
                entry.injected = Some("request body malformed".into());
                own_error(400, None, &format!("Request body malformed: {e}"))
            }
            Ok(Err(_)) => {
                entry.injected = Some("request body over the size limit".into());
                own_error(
                    413,
                    None,
                    &format!("Request body larger than {limit} bytes"),
                )
            }
            Ok(Ok(bytes)) => answer(&replay, &http_method, parts.uri.path(), &bytes, &mut entry),
        }
    };
    if let Some(HeadDelay(d)) = resp.extensions().get::<HeadDelay>().copied() {
        tokio::time::sleep(d).await;
    }
    let aborted = resp
        .extensions()
        .get::<crate::sse::AbortConnection>()
        .is_some();
    entry.status = (!aborted).then(|| resp.status().as_u16());
    entry.content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    shared.journal.push(entry);
    resp
}

fn own_error(status: u16, id: Option<&Value>, message: &str) -> Response<Body> {
    crate::sse::json_response(
        status,
        &protocol::error_response(id, protocol::INVALID_REQUEST, message, None),
    )
}
