//! Shared kitchen state: options, instances, the stored selection, sessions, journal and
//! the key that protects MRTR `requestState`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::instance::{canonical, Instance};
use crate::journal::Journal;
use crate::plugin::Params;
use crate::random::random_bytes;
use crate::scenarios;
use crate::session::Session;

pub(crate) use crate::options::check_admin_token;
pub use crate::options::{KitchenError, KitchenOptions, ResponseMode};

/// The stored selection served on `/mcp`.
#[derive(Clone, Debug)]
pub struct Selection {
    /// Scenario id.
    pub scenario: String,
    /// Parameters as given.
    pub params: Value,
}

/// A legacy session with the instance it pinned when it started (kept beside the session, not
/// in it, so the session a scenario is handed does not reach the scenario served).
type Pinned = (Arc<Session>, Arc<Instance>);

/// State shared by all handlers.
pub struct Shared {
    /// Options.
    pub options: KitchenOptions,
    instances: Mutex<HashMap<String, Arc<Instance>>>,
    /// Recency clock for instance LRU.
    tick: std::sync::atomic::AtomicU64,
    selection: Mutex<Selection>,
    /// Legacy sessions by id, each with the instance it pinned when it started.
    sessions: Mutex<HashMap<String, Pinned>>,
    /// Journal.
    pub journal: Journal,
    hmac_key: [u8; 32],
    /// Address actually bound (set by [`crate::start`]).
    pub local_addr: Mutex<Option<SocketAddr>>,
    /// The OAuth authorization server of `auth.oauth_flow`.
    pub auth: crate::oauth_as::AuthServer,
    /// Results by idempotency key of every instance, bounded as the options say.
    idempotency: Arc<Mutex<crate::idempotency::Store>>,
}

type HmacSha256 = Hmac<Sha256>;

impl Shared {
    /// New state; fails when the configured default scenario or params are invalid.
    pub fn new(options: KitchenOptions) -> Result<Shared, KitchenError> {
        check_admin_token(&options)?;
        let sel = Selection {
            scenario: options.scenario.clone(),
            params: options.params.clone(),
        };
        check_selection(&sel.scenario, &sel.params)?;
        let idempotency = crate::idempotency::Store::new(
            options.idempotency_max_keys,
            options.idempotency_max_bytes,
        );
        Ok(Shared {
            idempotency: Arc::new(Mutex::new(idempotency)),
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
        let keys = crate::idempotency::Keys::new(self.idempotency.clone());
        let i = Arc::new(Instance::new(key.clone(), s, params.clone(), keys));
        i.touch(tick);
        map.insert(key, i.clone());
        Ok(i)
    }

    /// The address actually bound, once [`crate::start`] has set it.
    pub fn bound_addr(&self) -> Option<SocketAddr> {
        *self.local_addr.lock().expect("addr lock")
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
            i.state.reset();
        }
        self.sessions.lock().expect("sessions lock").clear();
        self.journal.clear();
    }

    /// Register a session and the instance it pins.
    pub fn insert_session(&self, s: Arc<Session>, instance: Arc<Instance>) {
        let mut map = self.sessions.lock().expect("sessions lock");
        map.retain(|_, (v, _)| !v.is_terminated());
        while map.len() >= self.options.max_sessions.max(1) {
            let victim = map
                .iter()
                .min_by_key(|(_, (v, _))| v.last_used.load(std::sync::atomic::Ordering::Relaxed))
                .map(|(k, _)| k.clone());
            let Some(k) = victim else { break };
            if let Some((old, _)) = map.remove(&k) {
                old.terminated
                    .store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        s.last_used.store(
            self.tick.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            std::sync::atomic::Ordering::Relaxed,
        );
        map.insert(s.id.clone(), (s, instance));
    }

    /// Live session by id, with the instance it pinned (terminated sessions are reported as
    /// absent).
    pub fn session(&self, id: &str) -> Option<Pinned> {
        let (s, instance) = self
            .sessions
            .lock()
            .expect("sessions lock")
            .get(id)
            .filter(|(s, _)| !s.is_terminated())
            .cloned()?;
        s.last_used.store(
            self.tick.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            std::sync::atomic::Ordering::Relaxed,
        );
        Some((s, instance))
    }

    /// Forget a session.
    pub fn remove_session(&self, id: &str) -> Option<Arc<Session>> {
        let s = self
            .sessions
            .lock()
            .expect("sessions lock")
            .remove(id)
            .map(|(s, _)| s);
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
    use serde_json::json;

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
