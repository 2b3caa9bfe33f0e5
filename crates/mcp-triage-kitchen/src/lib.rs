//! # mcp-triage-kitchen: a fault-injection MCP server
//!
//! mcp-triage classifies on which layer an MCP `tools/call` failed (HTTP, JSON-RPC, tool
//! result). A classifier is only as good as the failures it was tested against, so this
//! crate is the other half: an MCP server over Streamable HTTP whose every misbehaviour is
//! chosen on purpose. Our own client, our proxy, any SDK or agent can be pointed at it and
//! graded on each failure layer.
//!
//! It offers every scenario of Cakewalk MCP Test Kitchen with the same ids, parameter
//! names, defaults and counting semantics (so configurations move across unchanged), and
//! adds SSE, session, auth and compatibility faults of its own. See [`scenarios::REGISTRY`].
//!
//! ## Where it sits
//! - Tests and `mcp-triage demo` start it in-process with [`start`] on `127.0.0.1:0`.
//! - The `mcp-triage kitchen` subcommand (binary crate) calls [`start`] with options from
//!   the command line.
//! - [`router`] gives the bare axum router for embedding in another server (without the
//!   kitchen's accept loop, [`scenarios::Wire::Close`] cannot drop a connection cleanly; use
//!   [`start`] for that).
//!
//! ## Endpoints
//! - `POST|GET|DELETE /mcp` serves the stored selection. `PUT /kitchen/selection` changes
//!   it; the change applies to legacy sessions that start afterwards (a running session keeps
//!   its instance) and to the next modern request (the modern era has no sessions).
//! - `/s/{scenario}/mcp?param=value&…` (or `?params=<json>`, plus `instance=<tag>`) is an
//!   instance of its own with its own counters, so parallel tests never interfere.
//! - `/kitchen/scenarios`, `/kitchen/selection`, `/kitchen/counters`, `/kitchen/journal`
//!   (JSON Lines), `/kitchen/reset`: the admin API (bearer token when configured).
//! - `/.well-known/oauth-protected-resource[/…]`: protected-resource metadata for the
//!   auth scenarios.
//!
//! Over stdio ([`stdio`], `mcp-triage kitchen --stdio`) there is no socket: each stdin line is
//! handed to the same endpoint in-process and its answer written to stdout, plus stdio's own
//! faults (`stdio.*`) and the journal as a file.
//!
//! Every response carries `X-Kitchen-Scenario`.
//!
//! ## Change notifications
//! Tool/prompt list changes and updates of the counter resource reach legacy clients on their
//! session's standalone GET stream and 2026 clients on `subscriptions/listen` streams (see
//! [`instance::Change`]); `catalog.mutation` drives a tool-list timeline per legacy session and,
//! in 2026, per instance.
//!
//! ## Limits
//! Instances (`max_instances`) and legacy sessions (`max_sessions`) are bounded with LRU
//! eviction; bodies by size and read time, headers by read time (see [`KitchenOptions`]).
//!
//! ## Layers
//! From the bottom up, each importing only what stands below it:
//! - leaves: [`protocol`], [`journal`], [`trace`], [`random`], [`options`], the origin helper,
//!   [`tasks`], [`idempotency`], [`answer`], the authorization server's state ([`oauth_as`]);
//! - what a scenario is handed: [`instance_state`], [`session`], and the plug-in API
//!   [`plugin`] (the [`plugin::Scenario`] trait, [`plugin::WireCx`], [`plugin::ToolCx`]);
//! - the scenarios (`scenarios::*`), the binding of a scenario to its state ([`instance`]), the
//!   built-in tools ([`catalogue`], [`fixtures_2026`], [`fixtures_tasks`]) and the SSE writer
//!   ([`sse`]);
//! - the registry ([`scenarios::REGISTRY`]) and the shared state ([`state`]), which looks
//!   scenarios up in it;
//! - the endpoint ([`mcp`]), the admin API ([`admin`]), the auth endpoints ([`auth_endpoints`]),
//!   the accept loop ([`server`]) and the replay server ([`replay`]).
//!
//! A scenario never sees the shared state or the endpoint, so adding one touches its own module
//! and one line of the registry.
//!
//! ## Both protocol eras on one endpoint
//! A request is *modern* (2026-07-28) when its `MCP-Protocol-Version` header names a modern
//! revision or its `_meta` carries `io.modelcontextprotocol/protocolVersion`; `initialize`
//! and everything else is *legacy* (2025-03-26 … 2025-11-25, with `Mcp-Session-Id`).

#![warn(missing_docs)]

pub mod admin;
pub mod answer;
pub mod auth_endpoints;
pub mod catalogue;
pub mod dpop_check;
pub mod fixtures_2026;
pub mod fixtures_tasks;
mod host_check;
pub mod idempotency;
pub mod instance;
pub mod instance_state;
pub mod journal;
pub mod mcp;
pub mod oauth_as;
pub mod options;
mod origin;
pub mod plugin;
pub mod protocol;
pub mod random;
pub mod replay;
pub mod scenarios;
pub mod server;
pub mod session;
pub mod sse;
pub mod state;
pub mod stdio;
pub mod tasks;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(feature = "testing")]
pub mod testing_oauth;
pub mod trace;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{HeaderValue, Response};
use axum::middleware::Next;
use axum::routing::{any, get, post};
use axum::Router;
use serde_json::Value;

pub use scenarios::{Outcome, REGISTRY};
pub use server::{start, KitchenHandle};
pub use state::{KitchenError, KitchenOptions, ResponseMode};

/// Handle on the kitchen's state: counters, journal, selection. Cheap to clone.
#[derive(Clone)]
pub struct Kitchen {
    shared: Arc<Shared>,
}

use state::Shared;

impl Kitchen {
    /// New state from options (fails on an unknown default scenario or invalid params).
    pub fn new(options: KitchenOptions) -> Result<Kitchen, KitchenError> {
        Ok(Kitchen {
            shared: Arc::new(Shared::new(options)?),
        })
    }
    /// The shared state (crate-internal handlers use it).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
    /// Counters of every instance, as `GET /kitchen/counters` shows them.
    pub fn counters(&self) -> Value {
        self.shared.counters()
    }
    /// The counters of the authorization server of `auth.oauth_flow` (also `oauth` in
    /// `GET /kitchen/counters`).
    pub fn oauth_counters(&self) -> Value {
        self.shared.auth.counters()
    }
    /// One counter of one instance (0 when the instance or counter does not exist).
    /// `instance` is the instance key as shown by [`Kitchen::counters`].
    pub fn counter(&self, instance: &str, key: &str) -> u64 {
        self.counters()
            .as_array()
            .and_then(|a| a.iter().find(|i| i["instance"] == instance))
            .and_then(|i| i["counters"][key].as_u64())
            .unwrap_or(0)
    }
    /// Journal entries, oldest first, as the JSON `GET /kitchen/journal` serves.
    pub fn journal(&self) -> Vec<Value> {
        self.shared.journal.entries()
    }
    /// Journal entries, oldest first, typed: what `judge` grades (the field names are the
    /// type's, so writer and reader cannot drift apart).
    pub fn journal_entries(&self) -> Result<Vec<journal::JournalEntry>, journal::JournalError> {
        self.shared.journal.typed_entries()
    }
    /// Change the stored selection served on `/mcp`.
    pub fn set_selection(&self, scenario: &str, params: Value) -> Result<(), KitchenError> {
        self.shared.set_selection(scenario.to_string(), params)
    }
    /// Reset counters, state, sessions and journal.
    pub fn reset(&self) {
        self.shared.reset()
    }
}

async fn stored(State(s): State<Arc<Shared>>, req: Request) -> Response<Body> {
    let (parts, body) = req.into_parts();
    mcp::handle(s, mcp::Target::Stored, parts.method, parts.headers, body).await
}

async fn per_url(
    State(s): State<Arc<Shared>>,
    Path(scenario): Path<String>,
    RawQuery(q): RawQuery,
    req: Request,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    mcp::handle(
        s,
        mcp::Target::Url { scenario, query: q },
        parts.method,
        parts.headers,
        body,
    )
    .await
}

async fn scenario_header(State(s): State<Arc<Shared>>, req: Request, next: Next) -> Response<Body> {
    let mut r = next.run(req).await;
    if !r.headers().contains_key(mcp::SCENARIO_HEADER) {
        if let Ok(v) = HeaderValue::from_str(&s.selection().scenario) {
            r.headers_mut().insert(mcp::SCENARIO_HEADER, v);
        }
    }
    r
}

/// The kitchen's axum router: MCP endpoints, admin API, well-known documents.
pub fn router(kitchen: Kitchen) -> Router {
    let shared = kitchen.shared.clone();
    Router::new()
        .route("/mcp", any(stored))
        .route("/s/{scenario}/mcp", any(per_url))
        .route(
            "/.well-known/oauth-protected-resource",
            any(auth_endpoints::metadata_root),
        )
        .route(
            "/.well-known/oauth-protected-resource/{*rest}",
            any(auth_endpoints::metadata_path),
        )
        .route(
            "/.well-known/oauth-authorization-server/oauth/{fault}",
            get(auth_endpoints::as_metadata),
        )
        .route("/oauth/{fault}/register", post(auth_endpoints::register))
        .route("/oauth/{fault}/authorize", get(auth_endpoints::authorize))
        .route("/oauth/{fault}/token", post(auth_endpoints::token))
        .route("/oauth/{fault}/revoke", post(auth_endpoints::revoke))
        .merge(admin::routes())
        .layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            scenario_header,
        ))
        .with_state(shared)
}
