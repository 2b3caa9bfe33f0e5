//! The journal: one line per request the kitchen answered.
//!
//! A later issue grades clients from it (did the client retry a destructive call? did it
//! re-initialize after a 404?), so each entry records what came in (method, id, tool, a
//! hash of the arguments, headers with secrets redacted) and what the kitchen did (what it
//! injected, which status it sent). Kept in memory, bounded, served as JSON Lines.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::HeaderMap;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Headers whose values never appear in the journal.
const REDACTED: &[&str] = &[
    "authorization",
    "cookie",
    "proxy-authorization",
    "set-cookie",
];

/// Bounded in-memory journal.
pub struct Journal {
    entries: Mutex<VecDeque<Value>>,
    capacity: usize,
}

impl Journal {
    /// A journal keeping the last `capacity` entries.
    pub fn new(capacity: usize) -> Journal {
        Journal {
            entries: Mutex::new(VecDeque::new()),
            capacity: capacity.max(1),
        }
    }

    /// Append one entry, dropping the oldest when full.
    pub fn push(&self, entry: Value) {
        let mut e = self.entries.lock().expect("journal lock");
        if e.len() >= self.capacity {
            e.pop_front();
        }
        e.push_back(entry);
    }

    /// All entries, oldest first.
    pub fn entries(&self) -> Vec<Value> {
        self.entries
            .lock()
            .expect("journal lock")
            .iter()
            .cloned()
            .collect()
    }

    /// JSON Lines text.
    pub fn to_json_lines(&self) -> String {
        let mut out = String::new();
        for e in self.entries.lock().expect("journal lock").iter() {
            out.push_str(&e.to_string());
            out.push('\n');
        }
        out
    }

    /// Forget everything.
    pub fn clear(&self) {
        self.entries.lock().expect("journal lock").clear();
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
/// recognised without storing the arguments themselves.
pub fn arguments_hash(args: &Value) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(crate::instance::canonical(args).as_bytes());
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 0xf)] as char);
    }
    out
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

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// RFC 3339 UTC timestamp with milliseconds, e.g. `2026-07-28T12:00:00.123Z`.
pub fn rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (H. Hinnant), proleptic Gregorian.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_785_240_000_123), "2026-07-28T12:00:00.123Z");
    }

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
