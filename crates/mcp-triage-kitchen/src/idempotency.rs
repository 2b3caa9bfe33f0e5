//! Idempotency keys on `tools/call`, for scenarios that honour them
//! ([`crate::plugin::Scenario::honours_idempotency_keys`]).
//!
//! Why the kitchen has them at all: a client that resends a call with a key is safe only when
//! the server deduplicates. `judge` grades a keyed resend by what ran, so the kitchen must be
//! able to be either server: one that runs a repeated key once and answers the repeat with
//! the stored result, and one that ignores keys and runs every call.

use std::collections::{HashMap, VecDeque};

use axum::http::HeaderMap;
use serde_json::Value;

/// Keys remembered per instance; the oldest is forgotten first.
pub const MAX_KEYS: usize = 1024;

/// The call's idempotency key: `params.idempotencyKey` or a `_meta` key `idempotencyKey` /
/// `…/idempotencyKey` (what the journal's `retry.idempotencyKey` shows), else the
/// `Idempotency-Key` header. A key that is not a non-empty string is none.
pub fn key_of(params: &Value, headers: &HeaderMap) -> Option<String> {
    let from_params = crate::journal::retry_fields(params)
        .and_then(|r| r.idempotency_key)
        .and_then(|k| k.as_str().map(str::to_owned));
    from_params
        .or_else(|| {
            headers
                .get("idempotency-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .filter(|k| !k.is_empty())
}

/// What a key has seen.
#[derive(Debug, PartialEq)]
pub enum Seen {
    /// A new key: run the tool.
    New,
    /// A repeat with the same arguments: answer with this stored result.
    Repeat(Value),
    /// A repeat with other arguments: refuse (a key names one operation).
    OtherArguments,
}

/// The stored results of one instance, bounded to [`MAX_KEYS`].
#[derive(Default)]
pub struct Store {
    results: HashMap<String, (String, Value)>,
    order: VecDeque<String>,
}

impl Store {
    /// What `key` with arguments hashed to `args_hash` has seen.
    pub fn seen(&self, key: &str, args_hash: &str) -> Seen {
        match self.results.get(key) {
            None => Seen::New,
            Some((h, r)) if h == args_hash => Seen::Repeat(r.clone()),
            Some(_) => Seen::OtherArguments,
        }
    }

    /// Keep the result the tool gave for `key` (the first one stays).
    pub fn store(&mut self, key: &str, args_hash: &str, result: &Value) {
        if self.results.contains_key(key) {
            return;
        }
        while self.order.len() >= MAX_KEYS {
            if let Some(old) = self.order.pop_front() {
                self.results.remove(&old);
            }
        }
        self.order.push_back(key.to_string());
        self.results
            .insert(key.to_string(), (args_hash.to_string(), result.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_come_from_params_meta_or_header() {
        let h = HeaderMap::new();
        assert_eq!(
            key_of(&json!({"idempotencyKey": "a"}), &h).as_deref(),
            Some("a")
        );
        assert_eq!(
            key_of(&json!({"_meta": {"x/idempotencyKey": "b"}}), &h).as_deref(),
            Some("b")
        );
        let mut h = HeaderMap::new();
        h.insert("idempotency-key", "c".parse().unwrap());
        assert_eq!(key_of(&json!({}), &h).as_deref(), Some("c"));
        assert_eq!(
            key_of(&json!({"idempotencyKey": ""}), &HeaderMap::new()),
            None
        );
    }

    #[test]
    fn a_repeat_gets_the_stored_result_and_the_store_is_bounded() {
        let mut s = Store::default();
        assert_eq!(s.seen("k", "h1"), Seen::New);
        s.store("k", "h1", &json!({"n": 1}));
        s.store("k", "h1", &json!({"n": 2}));
        assert_eq!(s.seen("k", "h1"), Seen::Repeat(json!({"n": 1})));
        assert_eq!(s.seen("k", "h2"), Seen::OtherArguments);
        for i in 0..MAX_KEYS {
            s.store(&format!("k{i}"), "h", &json!(i));
        }
        assert_eq!(s.seen("k", "h1"), Seen::New, "the oldest key is forgotten");
        assert_eq!(s.results.len(), MAX_KEYS);
    }
}
