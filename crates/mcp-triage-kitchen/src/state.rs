//! Shared kitchen state: options, instances, the stored selection, sessions, journal and
//! the key that protects MRTR `requestState`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::instance::{canonical, Instance};
use crate::journal::Journal;
use crate::scenarios::{self, Params};
use crate::session::Session;

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
    InvalidParams(String),
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

/// The stored selection served on `/mcp`.
#[derive(Clone, Debug)]
pub struct Selection {
    /// Scenario id.
    pub scenario: String,
    /// Parameters as given.
    pub params: Value,
}

/// State shared by all handlers.
pub struct Shared {
    /// Options.
    pub options: KitchenOptions,
    instances: Mutex<HashMap<String, Arc<Instance>>>,
    /// Recency clock for instance LRU.
    tick: std::sync::atomic::AtomicU64,
    selection: Mutex<Selection>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Journal.
    pub journal: Journal,
    hmac_key: [u8; 32],
    /// Address actually bound (set by [`crate::start`]).
    pub local_addr: Mutex<Option<SocketAddr>>,
    /// The OAuth authorization server of `auth.oauth_flow`.
    pub auth: crate::oauth_as::AuthServer,
}

type HmacSha256 = Hmac<Sha256>;

/// Random bytes from the OS (falls back to time-derived bytes if the OS refuses, which only
/// weakens session-id unpredictability, never correctness).
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    if getrandom::fill(&mut b).is_err() {
        let t = crate::journal::now_ms().to_le_bytes();
        for (i, x) in b.iter_mut().enumerate() {
            *x = t[i % 8] ^ (i as u8).wrapping_mul(31);
        }
    }
    b
}

impl Shared {
    /// New state; fails when the configured default scenario or params are invalid.
    pub fn new(options: KitchenOptions) -> Result<Shared, KitchenError> {
        check_admin_token(&options)?;
        let sel = Selection {
            scenario: options.scenario.clone(),
            params: options.params.clone(),
        };
        check_selection(&sel.scenario, &sel.params)?;
        Ok(Shared {
            journal: Journal::with_limits(
                options.journal_capacity,
                options.journal_max_bytes,
                options.journal_max_field_bytes,
            ),
            options,
            instances: Mutex::new(HashMap::new()),
            tick: std::sync::atomic::AtomicU64::new(0),
            selection: Mutex::new(sel),
            sessions: Mutex::new(HashMap::new()),
            hmac_key: random_bytes::<32>(),
            local_addr: Mutex::new(None),
            auth: crate::oauth_as::AuthServer::default(),
        })
    }

    /// The instance for (scenario, params, tag), created on first use.
    pub fn instance(
        &self,
        scenario: &str,
        params: &Value,
        tag: Option<&str>,
    ) -> Result<Arc<Instance>, KitchenError> {
        check_selection(scenario, params)?;
        let s = scenarios::find(scenario)
            .ok_or_else(|| KitchenError::UnknownScenario(scenario.into()))?;
        let key = match tag {
            Some(t) => format!("{scenario}{}#{t}", canonical(params)),
            None => format!("{scenario}{}", canonical(params)),
        };
        let tick = self.tick.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut map = self.instances.lock().expect("instances lock");
        if let Some(i) = map.get(&key) {
            i.touch(tick);
            return Ok(i.clone());
        }
        while map.len() >= self.options.max_instances.max(1) {
            // Least recently used, preferring instances nobody holds (strong count 1: only
            // the map); O(n), but only when a new instance arrives at the limit.
            let victim = map
                .iter()
                .min_by_key(|(_, i)| {
                    (
                        Arc::strong_count(i) > 1,
                        i.last_used.load(std::sync::atomic::Ordering::Relaxed),
                    )
                })
                .map(|(k, _)| k.clone());
            match victim {
                Some(k) => {
                    map.remove(&k);
                }
                None => break,
            }
        }
        let i = Arc::new(Instance::new(key.clone(), s, params.clone()));
        i.touch(tick);
        map.insert(key, i.clone());
        Ok(i)
    }

    /// Number of instances currently kept.
    pub fn instance_count(&self) -> usize {
        self.instances.lock().expect("instances lock").len()
    }

    /// The instance of the stored selection.
    pub fn selected_instance(&self) -> Result<Arc<Instance>, KitchenError> {
        let sel = self.selection();
        self.instance(&sel.scenario, &sel.params, None)
    }

    /// The stored selection.
    pub fn selection(&self) -> Selection {
        self.selection.lock().expect("selection lock").clone()
    }

    /// Replace the stored selection (validated first).
    pub fn set_selection(&self, scenario: String, params: Value) -> Result<(), KitchenError> {
        check_selection(&scenario, &params)?;
        *self.selection.lock().expect("selection lock") = Selection { scenario, params };
        Ok(())
    }

    /// All instances' counters.
    pub fn counters(&self) -> Value {
        let map = self.instances.lock().expect("instances lock");
        let mut v: Vec<Value> = map.values().map(|i| i.snapshot()).collect();
        v.sort_by(|a, b| a["instance"].as_str().cmp(&b["instance"].as_str()));
        Value::Array(v)
    }

    /// Reset every instance's counters and state, drop all sessions, clear the journal.
    pub fn reset(&self) {
        for i in self.instances.lock().expect("instances lock").values() {
            i.reset();
        }
        self.sessions.lock().expect("sessions lock").clear();
        self.journal.clear();
    }

    /// Register a session.
    pub fn insert_session(&self, s: Arc<Session>) {
        let mut map = self.sessions.lock().expect("sessions lock");
        map.retain(|_, v| !v.is_terminated());
        while map.len() >= self.options.max_sessions.max(1) {
            let victim = map
                .iter()
                .min_by_key(|(_, v)| v.last_used.load(std::sync::atomic::Ordering::Relaxed))
                .map(|(k, _)| k.clone());
            let Some(k) = victim else { break };
            if let Some(old) = map.remove(&k) {
                old.terminated
                    .store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        s.last_used.store(
            self.tick.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            std::sync::atomic::Ordering::Relaxed,
        );
        map.insert(s.id.clone(), s);
    }

    /// Live session by id (terminated sessions are reported as absent).
    pub fn session(&self, id: &str) -> Option<Arc<Session>> {
        let s = self
            .sessions
            .lock()
            .expect("sessions lock")
            .get(id)
            .filter(|s| !s.is_terminated())
            .cloned()?;
        s.last_used.store(
            self.tick.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            std::sync::atomic::Ordering::Relaxed,
        );
        Some(s)
    }

    /// Forget a session.
    pub fn remove_session(&self, id: &str) -> Option<Arc<Session>> {
        let s = self.sessions.lock().expect("sessions lock").remove(id);
        if let Some(s) = &s {
            s.terminated
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        s
    }

    /// A new random session id (visible ASCII, as the transport requires).
    pub fn new_session_id(&self) -> String {
        random_bytes::<16>()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// Sign MRTR state bound to an instance and tool, so a client cannot forge or move it.
    pub fn sign_state(&self, binding: &str, state: &Value) -> String {
        let payload = URL_SAFE_NO_PAD.encode(state.to_string());
        let mut mac = HmacSha256::new_from_slice(&self.hmac_key).expect("hmac key");
        mac.update(binding.as_bytes());
        mac.update(b".");
        mac.update(payload.as_bytes());
        let tag = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        format!("{payload}.{tag}")
    }

    /// Verify and decode state from [`Shared::sign_state`].
    pub fn verify_state(&self, binding: &str, token: &str) -> Option<Value> {
        let (payload, tag) = token.split_once('.')?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        let mut mac = HmacSha256::new_from_slice(&self.hmac_key).expect("hmac key");
        mac.update(binding.as_bytes());
        mac.update(b".");
        mac.update(payload.as_bytes());
        mac.verify_slice(&tag).ok()?;
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
    }
}

/// Validate a (scenario, params) pair against the registry.
pub fn check_selection(scenario: &str, params: &Value) -> Result<(), KitchenError> {
    let s =
        scenarios::find(scenario).ok_or_else(|| KitchenError::UnknownScenario(scenario.into()))?;
    scenarios::validate_params(s.info(), params).map_err(KitchenError::InvalidParams)?;
    s.validate(&Params::resolve(s.info(), params))
        .map_err(KitchenError::InvalidParams)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_state_round_trips_and_rejects_tampering() {
        let s = Shared::new(KitchenOptions::default()).unwrap();
        let tok = s.sign_state("i/t", &json!({"step": 1}));
        assert_eq!(s.verify_state("i/t", &tok), Some(json!({"step": 1})));
        assert_eq!(s.verify_state("other", &tok), None);
        let (p, t) = tok.split_once('.').unwrap();
        let forged = format!("{}.{t}", URL_SAFE_NO_PAD.encode("{\"step\":2}"));
        assert_ne!(forged, tok);
        assert_eq!(s.verify_state("i/t", &forged), None);
        assert_eq!(s.verify_state("i/t", p), None);
    }
}
