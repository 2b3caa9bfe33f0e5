//! Idempotency keys on `tools/call`, for scenarios that honour them
//! ([`crate::plugin::Scenario::honours_idempotency_keys`]).
//!
//! Why the kitchen has them at all: a client that resends a call with a key is safe only when
//! the server deduplicates. `judge` grades a keyed resend by what ran, so the kitchen must be
//! able to be either server: one that runs a repeated key once and answers the repeat with
//! the stored result, and one that ignores keys and runs every call.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::http::HeaderMap;
use serde_json::Value;

/// Default of [`crate::KitchenOptions::idempotency_max_keys`]: keys remembered at once, by all
/// instances together.
pub const DEFAULT_MAX_KEYS: usize = 65_536;

/// Default of [`crate::KitchenOptions::idempotency_max_bytes`]: 16 MiB of keys and stored
/// results, by all instances together.
pub const DEFAULT_MAX_BYTES: usize = 16 << 20;

/// The longest key the kitchen accepts, in bytes. Longer ones are refused with `-32602` before
/// the tool runs: keys are UUIDs or short tokens in practice (Stripe caps them at 255
/// characters), and a 200 KB "key" only serves to fill the store.
pub const MAX_KEY_BYTES: usize = 256;

/// What one entry costs beyond its text: the map's and the queue's slots and the strings'
/// headers, so that many tiny entries are not free either.
const ENTRY_OVERHEAD: usize = 128;

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
    /// A key over [`MAX_KEY_BYTES`] (its length): refuse, it is never stored.
    TooLong(usize),
}

/// What [`Keys::store`] did.
#[derive(Debug, PartialEq)]
pub enum Stored {
    /// Kept (or the key already had its first result, which stays).
    Kept,
    /// Not kept: the entry alone (this many bytes) is over the store's byte bound.
    TooLarge(usize),
}

/// One remembered call: its arguments hash and its result as JSON text (text, not a
/// [`Value`], so that the bytes counted are the bytes held: a tree of small values takes
/// several times its text).
struct Entry {
    args_hash: String,
    result: String,
    bytes: usize,
}

/// Results by (instance, key) of every instance, bounded in keys and in bytes (keys, hashes
/// and results counted); the oldest entry is forgotten first.
///
/// Why one store for all instances: the bound is on the kitchen's memory. A store per instance
/// multiplied it by `max_instances` (1,024), and a client can make instances at will
/// (`?instance=<tag>`). The price is that one instance's flood of keys can push another's out,
/// which only the store's bound can cause, and a client that floods it chose that.
pub struct Store {
    entries: HashMap<(u64, String), Entry>,
    order: VecDeque<(u64, String)>,
    bytes: usize,
    max_keys: usize,
    max_bytes: usize,
}

impl Store {
    /// An empty store within `max_keys` entries and `max_bytes` bytes.
    pub fn new(max_keys: usize, max_bytes: usize) -> Store {
        Store {
            entries: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
            max_keys,
            max_bytes,
        }
    }

    /// The bytes the entries are accounted at (never over the bound).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn evict_oldest(&mut self) {
        if let Some(old) = self.order.pop_front() {
            if let Some(e) = self.entries.remove(&old) {
                self.bytes -= e.bytes;
            }
        }
    }
}

static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(1);

/// One instance's view of the shared [`Store`]: its keys are its own (a number no other
/// instance, nor a later instance of the same URL, has).
pub struct Keys {
    instance: u64,
    store: Arc<Mutex<Store>>,
}

impl Keys {
    /// The keys of a new instance in `store`.
    pub fn new(store: Arc<Mutex<Store>>) -> Keys {
        Keys {
            instance: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
            store,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        // A panic elsewhere while the lock was held leaves entries that are still whole.
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What `key` with arguments hashed to `args_hash` has seen.
    pub fn seen(&self, key: &str, args_hash: &str) -> Seen {
        if key.len() > MAX_KEY_BYTES {
            return Seen::TooLong(key.len());
        }
        let store = self.lock();
        match store.entries.get(&(self.instance, key.to_string())) {
            None => Seen::New,
            Some(e) if e.args_hash == args_hash => {
                // The text was written by serde_json from a Value: it reads back.
                Seen::Repeat(serde_json::from_str(&e.result).unwrap_or(Value::Null))
            }
            Some(_) => Seen::OtherArguments,
        }
    }

    /// Keep the result the tool gave for `key` (the first one stays), forgetting the oldest
    /// entries of any instance until the new one fits both bounds.
    pub fn store(&self, key: &str, args_hash: &str, result: &Value) -> Stored {
        if key.len() > MAX_KEY_BYTES {
            // `seen` refused it before the tool ran; nothing to keep.
            return Stored::Kept;
        }
        let mut store = self.lock();
        let id = (self.instance, key.to_string());
        if store.entries.contains_key(&id) {
            return Stored::Kept;
        }
        let result = result.to_string();
        let bytes = ENTRY_OVERHEAD + key.len() + args_hash.len() + result.len();
        if bytes > store.max_bytes {
            return Stored::TooLarge(bytes);
        }
        while !store.order.is_empty()
            && (store.order.len() >= store.max_keys.max(1) || store.bytes + bytes > store.max_bytes)
        {
            store.evict_oldest();
        }
        store.bytes += bytes;
        store.order.push_back(id.clone());
        store.entries.insert(
            id,
            Entry {
                args_hash: args_hash.to_string(),
                result,
                bytes,
            },
        );
        Stored::Kept
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

    fn keys(max_keys: usize, max_bytes: usize) -> (Keys, Arc<Mutex<Store>>) {
        let store = Arc::new(Mutex::new(Store::new(max_keys, max_bytes)));
        (Keys::new(store.clone()), store)
    }

    #[test]
    fn a_repeat_gets_the_stored_result_and_the_store_is_bounded() {
        let (s, store) = keys(1024, DEFAULT_MAX_BYTES);
        assert_eq!(s.seen("k", "h1"), Seen::New);
        assert_eq!(s.store("k", "h1", &json!({"n": 1})), Stored::Kept);
        s.store("k", "h1", &json!({"n": 2}));
        assert_eq!(s.seen("k", "h1"), Seen::Repeat(json!({"n": 1})));
        assert_eq!(s.seen("k", "h2"), Seen::OtherArguments);
        for i in 0..1024 {
            s.store(&format!("k{i}"), "h", &json!(i));
        }
        assert_eq!(s.seen("k", "h1"), Seen::New, "the oldest key is forgotten");
        assert_eq!(store.lock().unwrap().len(), 1024);
    }

    /// The issue-41 flood (keys and results of 200 KB, fewer of them: a debug build serializes
    /// slowly) stays under the byte bound, the oldest leaving first; a key over the longest
    /// accepted is refused, never stored.
    #[test]
    fn large_entries_keep_the_store_under_its_bytes_and_evict_the_oldest() {
        let max = 1 << 20;
        let (s, store) = keys(DEFAULT_MAX_KEYS, max);
        let big = json!({"content": [{"type": "text", "text": "x".repeat(200_000)}]});
        let key = |i: usize| format!("{i:0>200}");
        for i in 0..100 {
            assert_eq!(s.store(&key(i), "h", &big), Stored::Kept);
            assert!(store.lock().unwrap().bytes() <= max);
        }
        let held = store.lock().unwrap().len();
        let entry = ENTRY_OVERHEAD + 200 + 1 + big.to_string().len();
        assert_eq!(held, max / entry, "as many 200 KB entries as fit in 1 MiB");
        assert_eq!(s.seen(&key(99), "h"), Seen::Repeat(big.clone()));
        assert_eq!(s.seen(&key(100 - held), "h"), Seen::Repeat(big.clone()));
        assert_eq!(s.seen(&key(99 - held), "h"), Seen::New, "oldest first");
        let long = "k".repeat(MAX_KEY_BYTES + 1);
        assert_eq!(s.seen(&long, "h"), Seen::TooLong(MAX_KEY_BYTES + 1));
        assert_eq!(s.seen(&"k".repeat(MAX_KEY_BYTES), "h"), Seen::New);
        let huge = json!("y".repeat(max));
        assert!(matches!(s.store("one", "h", &huge), Stored::TooLarge(n) if n > max));
        assert_eq!(s.seen("one", "h"), Seen::New);
    }

    /// Instances share the bound, not their keys: the same key in two instances is two
    /// entries, and a later instance never sees an earlier one's results.
    #[test]
    fn instances_share_the_bound_not_the_keys() {
        let store = Arc::new(Mutex::new(Store::new(2, DEFAULT_MAX_BYTES)));
        let (a, b) = (Keys::new(store.clone()), Keys::new(store.clone()));
        a.store("k", "h", &json!("a"));
        assert_eq!(b.seen("k", "h"), Seen::New);
        b.store("k", "h", &json!("b"));
        assert_eq!(a.seen("k", "h"), Seen::Repeat(json!("a")));
        assert_eq!(b.seen("k", "h"), Seen::Repeat(json!("b")));
        b.store("k2", "h", &json!("b2"));
        assert_eq!(
            a.seen("k", "h"),
            Seen::New,
            "the oldest of all instances left"
        );
    }
}
