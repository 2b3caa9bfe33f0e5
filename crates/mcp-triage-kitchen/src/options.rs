//! The kitchen's options and configuration errors: what `mcp-triage kitchen` and the tests
//! set before a server starts.
//!
//! Kept apart from the shared state ([`crate::state`]) so that the low-level modules that
//! only read an option (the SSE writer reads [`ResponseMode`]) need not import the state,
//! which knows the scenario registry.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};

/// How requests are answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponseMode {
    /// `application/json`, unless the handler emits a notification or server request before
    /// its result, in which case the answer becomes an SSE stream.
    #[default]
    Auto,
    /// Always `application/json` (messages before the result are dropped; server→client
    /// requests are impossible).
    Json,
    /// Always `text/event-stream`.
    Sse,
}

impl ResponseMode {
    /// Parse `auto` / `json` / `sse`.
    pub fn parse(s: &str) -> Option<ResponseMode> {
        match s {
            "auto" => Some(ResponseMode::Auto),
            "json" => Some(ResponseMode::Json),
            "sse" => Some(ResponseMode::Sse),
            _ => None,
        }
    }
}

/// Options of a kitchen server.
#[derive(Clone, Debug)]
pub struct KitchenOptions {
    /// Token required on `/kitchen/*` when set (`Authorization: Bearer <token>`). Required
    /// to listen on a non-loopback address.
    pub admin_token: Option<String>,
    /// Scenario served on `/mcp` until `PUT /kitchen/selection` changes it.
    pub scenario: String,
    /// Its parameters.
    pub params: Value,
    /// Default response mode (a scenario parameter `responseMode` overrides it).
    pub response_mode: ResponseMode,
    /// Largest accepted POST body; larger ones get 413 and a JSON-RPC error.
    pub max_body_bytes: usize,
    /// Extra allowed `Origin` values (loopback origins are always allowed).
    pub allowed_origins: Vec<String>,
    /// Extra allowed `Host` names (loopback names and the listen address are always allowed).
    pub allowed_hosts: Vec<String>,
    /// Journal entries kept in memory.
    pub journal_capacity: usize,
    /// The journal's bound in bytes of JSON Lines (`--journal-max-bytes`): past it the oldest
    /// entries are dropped, and counted in `X-Kitchen-Journal-Dropped`.
    pub journal_max_bytes: usize,
    /// The longest string (a header value, say) kept in one journal entry
    /// (`--journal-max-field`); longer ones are cut with a `…[truncated N bytes]` marker.
    pub journal_max_field_bytes: usize,
    /// Scenario instances kept at once (per-URL instances and the stored selection's). When a
    /// new one would exceed it, the least recently used is evicted, preferring instances no
    /// session or request holds; an evicted instance's counters disappear from
    /// `/kitchen/counters`, and its URL starts a fresh instance. Holders of an evicted instance
    /// (a running legacy session) keep using it.
    pub max_instances: usize,
    /// Legacy sessions kept at once. When a new `initialize` would exceed it, the least
    /// recently used session is terminated (its requests then get 404, which tells a client to
    /// re-initialize), so clients that never send DELETE cannot grow the table without bound.
    pub max_sessions: usize,
    /// A client must send its request headers within this time.
    pub header_read_timeout: Duration,
    /// A client must send its request body within this time.
    pub body_read_timeout: Duration,
    /// How long a tool waits for the client's answer to a server→client request.
    pub server_request_timeout: Duration,
    /// `retry:` value (ms) sent before the kitchen closes an SSE stream for polling.
    pub sse_retry_ms: u64,
    /// Idempotency keys remembered at once, by all instances together
    /// (`--idempotency-max-keys`); past it the oldest is forgotten.
    pub idempotency_max_keys: usize,
    /// Bytes of idempotency keys and stored results kept at once, by all instances together
    /// (`--idempotency-max-bytes`, default 16 MiB); past it the oldest entries are forgotten,
    /// and a result larger than the whole bound is not stored (the journal's `injected` says
    /// so). Keys over [`crate::idempotency::MAX_KEY_BYTES`] are refused with `-32602`.
    pub idempotency_max_bytes: usize,
}

impl Default for KitchenOptions {
    fn default() -> Self {
        KitchenOptions {
            admin_token: None,
            scenario: "baseline".into(),
            params: json!({}),
            response_mode: ResponseMode::Auto,
            max_body_bytes: 1024 * 1024,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            journal_capacity: 10_000,
            journal_max_bytes: crate::journal::DEFAULT_MAX_BYTES,
            journal_max_field_bytes: crate::journal::DEFAULT_MAX_FIELD_BYTES,
            max_instances: 1024,
            max_sessions: 10_000,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(10),
            server_request_timeout: Duration::from_secs(60),
            sse_retry_ms: 500,
            idempotency_max_keys: crate::idempotency::DEFAULT_MAX_KEYS,
            idempotency_max_bytes: crate::idempotency::DEFAULT_MAX_BYTES,
        }
    }
}

/// Errors of configuration and selection.
#[derive(Debug, thiserror::Error)]
pub enum KitchenError {
    /// No scenario with that id.
    #[error("unknown scenario {0:?}")]
    UnknownScenario(String),
    /// Parameters do not fit the scenario's schema.
    #[error("invalid params: {0}")]
    InvalidParams(#[source] crate::plugin::ParamsError),
    /// Refused listen address.
    #[error("refusing to listen on non-loopback address {0} without an admin token")]
    NonLoopback(SocketAddr),
    /// An admin token no request could present: empty, or with white space at either end.
    #[error("the admin token is empty or begins or ends with white space: no Authorization header could carry it, give a non-empty token")]
    UnusableAdminToken,
    /// Socket error.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// Refuses an admin token that no request could match. An empty token would otherwise turn
/// `Bearer ` (or, after header trimming, `Bearer`) into a credential, and a token with white space
/// at its ends can never arrive intact: HTTP strips that white space from header values.
pub(crate) fn check_admin_token(options: &KitchenOptions) -> Result<(), KitchenError> {
    match options.admin_token.as_deref() {
        Some(t) if t.is_empty() || t.trim() != t => Err(KitchenError::UnusableAdminToken),
        _ => Ok(()),
    }
}
