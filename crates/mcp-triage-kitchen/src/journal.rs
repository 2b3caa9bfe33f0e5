//! The journal: one line per request the kitchen answered.
//!
//! A later issue grades clients from it (did the client retry a destructive call? did it
//! re-initialize after a 404?), so each entry records what came in (method, id, tool, a
//! hash of the arguments, headers with secrets redacted) and what the kitchen did (what it
//! injected, which status it sent). Kept in memory, bounded, served as JSON Lines.

use std::collections::VecDeque;
use std::sync::Mutex;

use axum::http::HeaderMap;
use serde_json::{Map, Value};

/// Headers whose values never appear in the journal.
const REDACTED: &[&str] = &[
    "authorization",
    "cookie",
    "proxy-authorization",
    "set-cookie",
];

/// Default bound on the journal's serialized size (`--journal-max-bytes`).
pub const DEFAULT_MAX_BYTES: usize = 64 * 1024 * 1024;

/// Default bound on one string of an entry, a header value say (`--journal-max-field`).
pub const DEFAULT_MAX_FIELD_BYTES: usize = 8 * 1024;

/// Bounded in-memory journal: by entries and by serialized bytes, each entry's strings cut
/// to a bound, so that big headers cannot grow it (or `GET /kitchen/journal`) past the cap.
pub struct Journal {
    inner: Mutex<Inner>,
    capacity: usize,
    max_bytes: usize,
    max_field: usize,
}

/// Entries as their JSON text (what is served and what the byte bound counts).
struct Inner {
    lines: VecDeque<String>,
    bytes: usize,
    dropped: u64,
}

impl Journal {
    /// A journal keeping the last `capacity` entries, with the default byte bounds.
    pub fn new(capacity: usize) -> Journal {
        Journal::with_limits(capacity, DEFAULT_MAX_BYTES, DEFAULT_MAX_FIELD_BYTES)
    }

    /// A journal keeping at most `capacity` entries and `max_bytes` of JSON Lines (one
    /// newline per entry counted), strings of an entry cut to `max_field` bytes.
    pub fn with_limits(capacity: usize, max_bytes: usize, max_field: usize) -> Journal {
        Journal {
            inner: Mutex::new(Inner {
                lines: VecDeque::new(),
                bytes: 0,
                dropped: 0,
            }),
            capacity: capacity.max(1),
            max_bytes,
            max_field,
        }
    }

    /// Append one entry, its long strings cut with a marker, dropping the oldest entries
    /// while it would exceed either bound (an entry alone over the byte bound is dropped too,
    /// and counted).
    pub fn push(&self, mut entry: Value) {
        truncate_strings(&mut entry, self.max_field);
        let line = entry.to_string();
        let size = line.len() + 1;
        let mut e = self.inner.lock().expect("journal lock");
        if size > self.max_bytes {
            e.dropped += 1;
            return;
        }
        while e.lines.len() >= self.capacity || e.bytes + size > self.max_bytes {
            match e.lines.pop_front() {
                Some(old) => {
                    e.bytes -= old.len() + 1;
                    e.dropped += 1;
                }
                None => break,
            }
        }
        e.bytes += size;
        e.lines.push_back(line);
    }

    /// All entries, oldest first.
    pub fn entries(&self) -> Vec<Value> {
        self.inner
            .lock()
            .expect("journal lock")
            .lines
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// JSON Lines text.
    pub fn to_json_lines(&self) -> String {
        let e = self.inner.lock().expect("journal lock");
        let mut out = String::with_capacity(e.bytes);
        for l in &e.lines {
            out.push_str(l);
            out.push('\n');
        }
        out
    }

    /// Entries dropped (oldest first, or too big alone) since the start or the last reset.
    pub fn dropped(&self) -> u64 {
        self.inner.lock().expect("journal lock").dropped
    }

    /// Forget everything.
    pub fn clear(&self) {
        let mut e = self.inner.lock().expect("journal lock");
        e.lines.clear();
        e.bytes = 0;
        e.dropped = 0;
    }
}

/// Cut every string in `v` longer than `max` bytes (at a character boundary), marking it with
/// how many bytes were cut, so a journal reader sees the value was longer.
fn truncate_strings(v: &mut Value, max: usize) {
    match v {
        Value::String(s) if s.len() > max => {
            let mut at = max;
            while !s.is_char_boundary(at) {
                at -= 1;
            }
            let cut = s.len() - at;
            s.truncate(at);
            s.push_str(&format!("…[truncated {cut} bytes]"));
        }
        Value::Array(a) => a.iter_mut().for_each(|x| truncate_strings(x, max)),
        Value::Object(o) => o.values_mut().for_each(|x| truncate_strings(x, max)),
        _ => {}
    }
}

/// Headers as a JSON object, names lowercased, secrets replaced by `"[redacted]"`.
pub fn redacted_headers(headers: &HeaderMap) -> Value {
    let mut m = Map::new();
    for (name, value) in headers {
        let n = name.as_str().to_ascii_lowercase();
        let v = if REDACTED.contains(&n.as_str()) {
            "[redacted]".to_string()
        } else {
            String::from_utf8_lossy(value.as_bytes()).into_owned()
        };
        m.insert(n, Value::String(v));
    }
    Value::Object(m)
}

/// SHA-256 (hex) of the canonical JSON text of tool arguments, so identical retries can be
/// recognised without storing the arguments themselves (the digest records and captures
/// carry too: [`mcp_triage_wire::canonical::ArgumentsDigest`]).
pub fn arguments_hash(args: &Value) -> String {
    mcp_triage_wire::canonical::ArgumentsDigest::of(args).hex
}

/// The retry-relevant request fields: `requestState` (verbatim, it is the kitchen's own
/// token), the keys of `inputResponses`, and an idempotency key from `params.idempotencyKey`
/// or a `params._meta` key `idempotencyKey` / `…/idempotencyKey` (SEP-3182's shape; the
/// header `Idempotency-Key` is in `headers`). `None` when the request has none of them.
pub fn retry_fields(params: &Value) -> Option<Value> {
    let mut m = Map::new();
    if let Some(s) = params.get("requestState") {
        m.insert("requestState".into(), s.clone());
    }
    if let Some(r) = params.get("inputResponses") {
        let keys: Vec<Value> = r
            .as_object()
            .map(|o| o.keys().map(|k| Value::String(k.clone())).collect())
            .unwrap_or_default();
        m.insert("inputResponseKeys".into(), Value::Array(keys));
    }
    // `_meta` keys may carry a prefix (`mcp-triage/idempotencyKey`), as `_meta` keys do.
    let key = params.get("idempotencyKey").or_else(|| {
        params
            .get("_meta")
            .and_then(Value::as_object)
            .and_then(|m| {
                m.iter()
                    .find(|(k, _)| *k == "idempotencyKey" || k.ends_with("/idempotencyKey"))
                    .map(|(_, v)| v)
            })
    });
    if let Some(k) = key {
        m.insert("idempotencyKey".into(), k.clone());
    }
    (!m.is_empty()).then_some(Value::Object(m))
}

pub use mcp_triage_wire::time::{now_ms, rfc3339};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_and_journal_is_bounded() {
        let mut h = HeaderMap::new();
        h.insert("Authorization", "Bearer secret".parse().unwrap());
        h.insert("Cookie", "a=b".parse().unwrap());
        h.insert("Mcp-Method", "tools/call".parse().unwrap());
        let v = redacted_headers(&h);
        assert_eq!(v["authorization"], "[redacted]");
        assert_eq!(v["cookie"], "[redacted]");
        assert_eq!(v["mcp-method"], "tools/call");
        let j = Journal::new(2);
        for i in 0..3 {
            j.push(serde_json::json!({ "n": i }));
        }
        assert_eq!(j.to_json_lines(), "{\"n\":1}\n{\"n\":2}\n");
    }

    /// Issue 23 item 9: big headers keep the journal under its byte cap; long strings are cut
    /// with a marker; the dropped entries are counted.
    #[test]
    fn journal_is_bounded_in_bytes_and_per_field() {
        let j = Journal::with_limits(10_000, 64 * 1024, 1024);
        let big = "x".repeat(390 * 1024);
        for i in 0..200 {
            j.push(serde_json::json!({ "n": i, "headers": { "x-big": big, "x-small": "s" } }));
        }
        let text = j.to_json_lines();
        assert!(text.len() <= 64 * 1024, "{} bytes", text.len());
        let entries = j.entries();
        assert!(entries.len() > 10, "{} entries kept", entries.len());
        let last = entries.last().unwrap();
        assert_eq!(last["n"], 199);
        assert_eq!(last["headers"]["x-small"], "s");
        let v = last["headers"]["x-big"].as_str().unwrap();
        assert!(v.starts_with(&"x".repeat(1024)), "{v}");
        assert!(
            v.ends_with(&format!("…[truncated {} bytes]", 390 * 1024 - 1024)),
            "{v}"
        );
        assert_eq!(j.dropped(), 200 - entries.len() as u64);
        // Multi-byte characters are cut at a boundary.
        let j = Journal::with_limits(10, 1 << 20, 5);
        j.push(serde_json::json!({ "s": "ééééé" }));
        assert_eq!(j.entries()[0]["s"], "éé…[truncated 6 bytes]");
        // One entry larger than the whole bound is dropped and counted, not kept.
        let j = Journal::with_limits(10, 100, 1 << 20);
        j.push(serde_json::json!({ "s": "y".repeat(200) }));
        assert_eq!((j.entries().len(), j.dropped()), (0, 1));
        j.clear();
        assert_eq!(j.dropped(), 0);
    }

    #[test]
    fn retry_fields_pick_state_keys_and_idempotency_key() {
        let p = serde_json::json!({"name": "t", "requestState": "tok",
            "inputResponses": {"elicitation": {"action": "accept"}}, "_meta": {"idempotencyKey": "k1"}});
        assert_eq!(
            retry_fields(&p).unwrap(),
            serde_json::json!({"requestState": "tok", "inputResponseKeys": ["elicitation"], "idempotencyKey": "k1"})
        );
        assert_eq!(retry_fields(&serde_json::json!({"name": "t"})), None);
        let prefixed = serde_json::json!({"_meta": {"mcp-triage/idempotencyKey": "k2"}});
        assert_eq!(retry_fields(&prefixed).unwrap()["idempotencyKey"], "k2");
    }

    #[test]
    fn argument_hash_ignores_key_order() {
        let a = serde_json::json!({"a": 1, "b": [1, 2]});
        let b = serde_json::json!({"b": [1, 2], "a": 1});
        assert_eq!(arguments_hash(&a), arguments_hash(&b));
        assert_ne!(
            arguments_hash(&a),
            arguments_hash(&serde_json::json!({"a": 2}))
        );
    }
}
