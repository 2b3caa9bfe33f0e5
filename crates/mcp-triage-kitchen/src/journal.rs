//! The journal: one line per request the kitchen answered.
//!
//! `judge` grades clients from it (did the client retry a destructive call? did it
//! re-initialize after a 404?), so each entry records what came in (method, id, tool, a
//! hash of the arguments, headers with secrets redacted) and what the kitchen did (what it
//! injected, which status it sent). Kept in memory, bounded, served as JSON Lines.
//!
//! An entry is a [`JournalEntry`]: the kitchen writes it and `judge` (the
//! `mcp-triage-judge` crate) reads it back as the same type, so the field names live here
//! once and a renamed field is a compile error on both sides rather than a check that
//! silently reads `null` and turns n/a.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use axum::http::HeaderMap;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use mcp_triage_core::{Outcome, ToolFailure, Verdict};

use crate::protocol::Era;

/// Default bound on the journal's serialized size (`--journal-max-bytes`).
pub const DEFAULT_MAX_BYTES: usize = 64 * 1024 * 1024;

/// Default bound on one string of an entry, a header value say (`--journal-max-field`).
pub const DEFAULT_MAX_FIELD_BYTES: usize = 8 * 1024;

/// One request the kitchen answered, as `GET /kitchen/journal` serves it (one JSON object
/// per line, keys in camelCase). Every field is always present, `null` when it does not
/// apply, except `replay`, which only replayed answers carry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalEntry {
    /// When the answer was journaled, RFC 3339 (UTC, milliseconds).
    pub time: String,
    /// When the request arrived, Unix milliseconds: the timings checks measure from this.
    pub received_ms: u64,
    /// The HTTP method (`POST`, `GET`, `DELETE`).
    pub http_method: String,
    /// The scenario instance that answered (`scenario#tag` for URL instances, `replay` for
    /// a replayed capture); `null` when the request was refused before one was chosen.
    pub instance: Option<String>,
    /// The scenario id (`X-Kitchen-Scenario`).
    pub scenario: String,
    /// The legacy session the request named (`Mcp-Session-Id`), if any.
    pub session: Option<String>,
    /// The protocol era the request was served in, once known.
    #[serde(default, deserialize_with = "era_or_null")]
    pub era: Option<Era>,
    /// The JSON-RPC method, when the body was a JSON-RPC message.
    pub method: Option<String>,
    /// The JSON-RPC id, verbatim (a number or a string); `null` for notifications.
    pub id: Option<Value>,
    /// The tool of a `tools/call`.
    pub tool: Option<String>,
    /// Bare hex SHA-256 of the canonical arguments of a `tools/call` ([`arguments_hash`]).
    pub arguments_hash: Option<String>,
    /// Request headers, names lowercased, secrets `"[redacted]"` ([`redacted_headers`]).
    pub headers: BTreeMap<String, String>,
    /// What the kitchen injected or refused, `; `-joined, in its own words.
    pub injected: Option<String>,
    /// The status sent; `null` when the connection was dropped without a response.
    pub status: Option<u16>,
    /// The response's `Content-Type`, when it had one.
    pub content_type: Option<String>,
    /// The request's retry-relevant fields ([`retry_fields`]).
    pub retry: Option<RetryFields>,
    /// The MRTR round the kitchen issued in its answer (`input_required`).
    pub issued: Option<Issued>,
    /// Whether the tool body of a `tools/call` started (its side effect may have happened);
    /// `null` for other requests and for replayed answers (no tool runs there).
    pub executed: Option<bool>,
    /// What the client was given for a `tools/call` or a resumption of one (`GET` with
    /// `Last-Event-ID`), as the core classifier reads the bytes the kitchen sent: filled in
    /// when the body has ended (a stream is journaled when it starts, and this field, the
    /// notes of `injected` and `executed` are brought up to date when it ends). `null` for
    /// other requests, and for a stream still open when the journal was read.
    #[serde(default)]
    pub answer: Option<Answer>,
    /// A `tools/call` whose idempotency key the kitchen honours (`idempotencyKeys: "honour"`):
    /// `true` when it repeated a key already seen and was answered with the stored result
    /// without running the tool again, `false` when it ran. `null` when keys are not honoured
    /// or the call carried none.
    #[serde(default)]
    pub deduplicated: Option<bool>,
    /// `params.taskId` of a tasks-extension request (`tasks/get`, `tasks/update`,
    /// `tasks/cancel`), so a task's requests can be followed; the task a `tools/call` created
    /// is its `answer.taskId`.
    #[serde(default)]
    pub task_id: Option<String>,
    /// Replayed answers only: which captured line was served, or why none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayServed>,
}

/// The answer a request got, as the classifier reads it (`answer` in the journal).
///
/// Why the classifier and not the kitchen's own idea of what it meant to send: a scenario
/// plans a fault, but what reaches the client is bytes (a cut stream, an error inside an
/// SSE event, a result after a resumption). `judge` holds a client's claim ("exit 0", "ok")
/// against this, so it must be the same reading a client would make.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// The outcome (`TOOL_SUCCESS`, `STREAM_INCOMPLETE`, …).
    pub outcome: Outcome,
    /// The HTTP status, when a response head was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The JSON-RPC error code, for a JSON-RPC error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    /// The JSON-RPC error's message (sanitised and bounded by the core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The classifier's sentence on what was wrong (for a tool error, the tool's own text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The task a `TASK_CREATED` answer created (the `tools/call` that created it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// When the answer ended (its last byte went out, or the connection broke), Unix ms: a
    /// resend's backoff is measured from here, not from when the failed attempt was sent.
    pub ended_ms: u64,
    /// The failure a tool error declared (draft SEP #3313's ToolFailure, as the core reads it
    /// with that draft on; its `retryAfterMs` counted from when the kitchen sent it): `judge`
    /// holds a resend against the declared class (`honours_declared_class`). Boxed: only a
    /// declared failure has one, and an answer is moved with every journal entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_failure: Option<Box<ToolFailure>>,
    /// The wait the answer asked for before a resend, in ms, as the core reads it
    /// (`Retry-After`, or SEP-3304's `retryAfterMs`, which wins): `judge --hop` holds what
    /// reached the client through a hop against it (*retry information lost*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl Answer {
    /// The answer the classifier's verdict describes, ended now.
    pub fn of(v: &Verdict) -> Answer {
        Answer {
            ended_ms: now_ms(),
            declared_failure: v.tool_failure.clone(),
            retry_after_ms: v.retry_after_ms,
            task_id: v.task_id.clone(),
            outcome: v.outcome,
            status: v.status,
            code: v.code,
            message: v.message.clone(),
            detail: v.detail.clone(),
        }
    }

    /// A connection dropped before any response head was sent.
    pub fn no_response() -> Answer {
        Answer {
            ended_ms: now_ms(),
            task_id: None,
            outcome: Outcome::ConnectionError,
            status: None,
            code: None,
            message: None,
            detail: Some("the kitchen closed the connection without a response".into()),
            declared_failure: None,
            retry_after_ms: None,
        }
    }

    /// Whether the client was given the tool's successful result: the one answer after
    /// which a client may report success without naming a failure.
    pub fn is_tool_result(&self) -> bool {
        self.outcome == Outcome::ToolSuccess
    }
}

/// The retry-relevant fields of a request (`retry` in the journal): what `judge` compares
/// between a call and its retry. Absent keys are left out, not `null`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryFields {
    /// `params.requestState`, verbatim (it is the kitchen's own token when well-behaved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<Value>,
    /// The keys of `params.inputResponses` (empty when it is not an object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_response_keys: Option<Vec<String>>,
    /// The idempotency key from `params.idempotencyKey` or `params._meta`, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<Value>,
}

/// The MRTR round an answer issued (`issued` in the journal): the retry must echo
/// `requestState` exactly and answer every key of `inputRequests`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Issued {
    /// The `requestState` sent (a string from the kitchen; whatever the captured server
    /// sent on replay).
    #[serde(default)]
    pub request_state: Value,
    /// The keys of the `inputRequests` sent.
    pub input_request_keys: Vec<String>,
}

/// What a replayed answer was (`replay` in the journal).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ReplayServed {
    /// A captured line was served.
    Served {
        /// The line's `seq`.
        seq: u64,
        /// Its 1-based line in the capture file.
        line: usize,
        /// This is the `nth` request with the line's key …
        nth: usize,
        /// … of `of` captured lines with that key.
        of: usize,
        /// Past the last captured line of the key: the last one was served again.
        #[serde(rename = "pastEnd")]
        past_end: bool,
        /// How the captured body ended (`complete`, `upstream_closed`, …).
        end: String,
    },
    /// No captured line has the request's key: the kitchen answered on its own.
    Unmatched {
        /// The key, as the replay writes it.
        unmatched: String,
    },
}

/// `era` accepts what [`Era`] serializes to (`legacy`, `modern`) or `null`. `Era` itself is
/// the protocol module's, which only needs to serialize; reading it back is the journal's
/// business, so the mapping lives here.
fn era_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Era>, D::Error> {
    match Option::<String>::deserialize(d)?.as_deref() {
        None => Ok(None),
        Some("legacy") => Ok(Some(Era::Legacy)),
        Some("modern") => Ok(Some(Era::Modern)),
        Some(other) => Err(serde::de::Error::unknown_variant(
            other,
            &["legacy", "modern"],
        )),
    }
}

impl JournalEntry {
    /// An entry for a request that arrived at `received_ms` (and stamped with that time), with
    /// nothing known yet but its HTTP method, scenario and headers: for writers that learn the
    /// rest as they go, as the replay does.
    pub fn new(
        received_ms: u64,
        http_method: &str,
        scenario: &str,
        headers: BTreeMap<String, String>,
    ) -> JournalEntry {
        JournalEntry {
            time: rfc3339(received_ms),
            received_ms,
            http_method: http_method.to_string(),
            instance: None,
            scenario: scenario.to_string(),
            session: None,
            era: None,
            method: None,
            id: None,
            tool: None,
            arguments_hash: None,
            headers,
            injected: None,
            status: None,
            content_type: None,
            retry: None,
            issued: None,
            executed: None,
            answer: None,
            deduplicated: None,
            task_id: None,
            replay: None,
        }
    }

    /// Cut every string a client or a capture controls to `max` bytes (with a marker), so
    /// one big header cannot fill the journal. The fixed vocabulary (`era`, `time`, the
    /// replay's `end`) is left alone: it is short, and cutting it would make the entry
    /// unreadable as a `JournalEntry`.
    fn cut_strings(&mut self, max: usize) {
        let cut = |s: &mut String| truncate(s, max);
        let cut_opt = |s: &mut Option<String>| s.iter_mut().for_each(|s| truncate(s, max));
        let cut_value = |v: &mut Option<Value>| v.iter_mut().for_each(|v| truncate_value(v, max));
        cut(&mut self.http_method);
        cut(&mut self.scenario);
        cut_opt(&mut self.instance);
        cut_opt(&mut self.session);
        cut_opt(&mut self.method);
        cut_value(&mut self.id);
        cut_opt(&mut self.tool);
        cut_opt(&mut self.arguments_hash);
        self.headers.values_mut().for_each(|v| truncate(v, max));
        cut_opt(&mut self.injected);
        cut_opt(&mut self.task_id);
        cut_opt(&mut self.content_type);
        if let Some(r) = &mut self.retry {
            cut_value(&mut r.request_state);
            r.input_response_keys
                .iter_mut()
                .flatten()
                .for_each(|k| truncate(k, max));
            cut_value(&mut r.idempotency_key);
        }
        if let Some(i) = &mut self.issued {
            truncate_value(&mut i.request_state, max);
            i.input_request_keys
                .iter_mut()
                .for_each(|k| truncate(k, max));
        }
        if let Some(a) = &mut self.answer {
            cut_opt(&mut a.message);
            cut_opt(&mut a.detail);
            if let Some(f) = &mut a.declared_failure {
                cut(&mut f.code);
                cut(&mut f.correlation_id);
                cut_opt(&mut f.agent_guidance);
            }
        }
        if let Some(ReplayServed::Unmatched { unmatched }) = &mut self.replay {
            truncate(unmatched, max);
        }
    }
}

/// Why the journal could not be read back as [`JournalEntry`]s: a line the kitchen wrote
/// does not parse as the type it was written from (a bug in this module, never the client's).
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Entry `index` (0-based, among those kept) did not parse.
    #[error("journal entry {index} does not read back as a JournalEntry: {source}")]
    Unreadable {
        /// 0-based position among the entries kept.
        index: usize,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
}

/// Bounded in-memory journal: by entries and by serialized bytes, each entry's strings cut
/// to a bound, so that big headers cannot grow it (or `GET /kitchen/journal`) past the cap.
pub struct Journal {
    inner: Mutex<Inner>,
    capacity: usize,
    max_bytes: usize,
    max_field: usize,
}

/// Entries as their JSON text (what is served and what the byte bound counts), each with
/// the sequence number its [`EntryTicket`] names.
struct Inner {
    lines: VecDeque<(u64, String)>,
    bytes: usize,
    dropped: u64,
    next_seq: u64,
}

/// Names one pushed entry, so its writer can bring it up to date later ([`Journal::amend`]):
/// a streamed answer is journaled when it starts (so the entry is there, in arrival order,
/// while the stream runs) and completed when it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryTicket(u64);

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
                next_seq: 0,
            }),
            capacity: capacity.max(1),
            max_bytes,
            max_field,
        }
    }

    /// Append one entry, its long strings cut with a marker, dropping the oldest entries
    /// while it would exceed either bound (an entry alone over the byte bound is dropped too,
    /// and counted).
    pub fn push(&self, entry: JournalEntry) -> EntryTicket {
        let line = self.line_of(entry);
        self.push_line(line)
    }

    /// Bring a pushed entry up to date (a stream's answer, once it has ended). An entry
    /// already dropped by the bounds is not brought back; the call is then a no-op.
    pub fn amend(&self, ticket: EntryTicket, update: impl FnOnce(&mut JournalEntry)) {
        let mut e = self.inner.lock().expect("journal lock");
        let Some(pos) = e.lines.iter().rposition(|(seq, _)| *seq == ticket.0) else {
            return;
        };
        let Ok(mut entry) = serde_json::from_str::<JournalEntry>(&e.lines[pos].1) else {
            return;
        };
        update(&mut entry);
        let line = self.line_of(entry);
        let old = std::mem::replace(&mut e.lines[pos].1, line);
        e.bytes = e.bytes - old.len() + e.lines[pos].1.len();
        // A grown entry may push the journal over its byte bound: drop the oldest, as a push does.
        while e.bytes > self.max_bytes {
            match e.lines.pop_front() {
                Some((_, old)) => {
                    e.bytes -= old.len() + 1;
                    e.dropped += 1;
                }
                None => break,
            }
        }
    }

    /// An entry as its journal line: long strings cut with a marker, keys sorted (through a
    /// `Value`, as they always have been served).
    fn line_of(&self, mut entry: JournalEntry) -> String {
        entry.cut_strings(self.max_field);
        serde_json::to_value(&entry)
            .expect("a JournalEntry serializes")
            .to_string()
    }

    fn push_line(&self, line: String) -> EntryTicket {
        let size = line.len() + 1;
        let mut e = self.inner.lock().expect("journal lock");
        let ticket = EntryTicket(e.next_seq);
        e.next_seq += 1;
        if size > self.max_bytes {
            e.dropped += 1;
            return ticket;
        }
        while e.lines.len() >= self.capacity || e.bytes + size > self.max_bytes {
            match e.lines.pop_front() {
                Some((_, old)) => {
                    e.bytes -= old.len() + 1;
                    e.dropped += 1;
                }
                None => break,
            }
        }
        e.bytes += size;
        e.lines.push_back((ticket.0, line));
        ticket
    }

    /// All entries as JSON values, oldest first: exactly what `GET /kitchen/journal` serves,
    /// for readers that want the wire form (tests asserting on the served JSON).
    pub fn entries(&self) -> Vec<Value> {
        self.inner
            .lock()
            .expect("journal lock")
            .lines
            .iter()
            .filter_map(|(_, l)| serde_json::from_str(l).ok())
            .collect()
    }

    /// All entries as [`JournalEntry`], oldest first: what `judge` grades. An entry that does
    /// not read back is an error, not skipped, so a writer/reader mismatch cannot hide.
    pub fn typed_entries(&self) -> Result<Vec<JournalEntry>, JournalError> {
        self.inner
            .lock()
            .expect("journal lock")
            .lines
            .iter()
            .enumerate()
            .map(|(index, (_, l))| {
                serde_json::from_str(l).map_err(|source| JournalError::Unreadable { index, source })
            })
            .collect()
    }

    /// JSON Lines text.
    pub fn to_json_lines(&self) -> String {
        let e = self.inner.lock().expect("journal lock");
        let mut out = String::with_capacity(e.bytes);
        for (_, l) in &e.lines {
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

/// Cut `s` to at most `max` bytes (at a character boundary), marking it with how many bytes
/// were cut, so a journal reader sees the value was longer.
fn truncate(s: &mut String, max: usize) {
    if s.len() <= max {
        return;
    }
    let mut at = max;
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    let cut = s.len() - at;
    s.truncate(at);
    s.push_str(&format!("…[truncated {cut} bytes]"));
}

/// [`truncate`] every string inside a verbatim JSON value (an id, a `requestState`).
fn truncate_value(v: &mut Value, max: usize) {
    match v {
        Value::String(s) => truncate(s, max),
        Value::Array(a) => a.iter_mut().for_each(|x| truncate_value(x, max)),
        Value::Object(o) => o.values_mut().for_each(|x| truncate_value(x, max)),
        _ => {}
    }
}

/// Headers as the journal keeps them: names lowercased, secrets replaced by `"[redacted]"`
/// (a repeated header keeps its last value).
pub fn redacted_headers(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for (name, value) in headers {
        let n = name.as_str().to_ascii_lowercase();
        // The proxy's own list: a journal never keeps what a record hides.
        let v = if mcp_triage_wire::redact::is_secret_header(&n, &[]) {
            "[redacted]".to_string()
        } else {
            String::from_utf8_lossy(value.as_bytes()).into_owned()
        };
        m.insert(n, v);
    }
    m
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
pub fn retry_fields(params: &Value) -> Option<RetryFields> {
    let input_response_keys = params.get("inputResponses").map(|r| {
        r.as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    });
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
    let r = RetryFields {
        request_state: params.get("requestState").cloned(),
        input_response_keys,
        idempotency_key: key.cloned(),
    };
    (r != RetryFields::default()).then_some(r)
}

/// The MRTR round a [`crate::trace::Trace`] recorded, as the journal's [`Issued`]. The trace
/// keeps it as the JSON it builds (`requestState`, `inputRequestKeys`); a shape that does not
/// read as `Issued` would lose the field, which the tests below guard.
pub fn issued_of(trace: Option<Value>) -> Option<Issued> {
    trace.and_then(|v| serde_json::from_value(v).ok())
}

pub use mcp_triage_wire::time::{now_ms, rfc3339};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An entry as `mcp.rs` writes one for a `tools/call` with an MRTR retry.
    fn full() -> JournalEntry {
        JournalEntry {
            time: "2026-01-02T03:04:05.006Z".into(),
            received_ms: 1_767_322_245_006,
            http_method: "POST".into(),
            instance: Some("errors.tool_error#judge-0".into()),
            scenario: "errors.tool_error".into(),
            session: Some("s1".into()),
            era: Some(Era::Modern),
            method: Some("tools/call".into()),
            id: Some(json!(7)),
            tool: Some("run_configured_test_scenario".into()),
            arguments_hash: Some("ab".repeat(32)),
            headers: [("mcp-method".to_string(), "tools/call".to_string())].into(),
            injected: Some("503 before the call".into()),
            status: Some(503),
            content_type: Some("application/json".into()),
            retry: Some(RetryFields {
                request_state: Some(json!("tok")),
                input_response_keys: Some(vec!["elicitation".into()]),
                idempotency_key: Some(json!("k1")),
            }),
            issued: Some(Issued {
                request_state: json!("tok2"),
                input_request_keys: vec!["elicitation".into()],
            }),
            executed: Some(false),
            answer: Some(Answer {
                outcome: Outcome::ToolError,
                status: Some(200),
                code: None,
                message: None,
                detail: Some("the tool reported an error: boom".into()),
                ended_ms: 1_767_322_245_010,
                task_id: None,
                declared_failure: None,
                retry_after_ms: None,
            }),
            deduplicated: None,
            task_id: None,
            replay: None,
        }
    }

    fn entry(n: u64) -> JournalEntry {
        JournalEntry::new(n, "POST", "baseline", BTreeMap::new())
    }

    /// The documented field names, exactly: a rename in the struct breaks this test (and the
    /// judge's build), not a check at run time.
    #[test]
    fn serialized_entry_has_exactly_the_documented_field_names() {
        let v = serde_json::to_value(full()).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "answer",
                "argumentsHash",
                "contentType",
                "deduplicated",
                "era",
                "executed",
                "headers",
                "httpMethod",
                "id",
                "injected",
                "instance",
                "issued",
                "method",
                "receivedMs",
                "retry",
                "scenario",
                "session",
                "status",
                "taskId",
                "time",
                "tool",
            ]
        );
        assert_eq!(
            v["retry"],
            json!({"requestState": "tok", "inputResponseKeys": ["elicitation"], "idempotencyKey": "k1"})
        );
        assert_eq!(
            v["issued"],
            json!({"requestState": "tok2", "inputRequestKeys": ["elicitation"]})
        );
        assert_eq!(v["era"], "modern");
        let served = JournalEntry {
            replay: Some(ReplayServed::Served {
                seq: 3,
                line: 4,
                nth: 1,
                of: 2,
                past_end: false,
                end: "complete".into(),
            }),
            ..full()
        };
        assert_eq!(
            serde_json::to_value(served).unwrap()["replay"],
            json!({"seq": 3, "line": 4, "nth": 1, "of": 2, "pastEnd": false, "end": "complete"})
        );
        let unmatched = JournalEntry {
            replay: Some(ReplayServed::Unmatched {
                unmatched: "k".into(),
            }),
            ..full()
        };
        assert_eq!(
            serde_json::to_value(unmatched).unwrap()["replay"],
            json!({"unmatched": "k"})
        );
    }

    /// The line a typed entry becomes is the one the `json!` object the kitchen wrote before
    /// the type became: same keys, same values, same order; plus `answer` and
    /// `deduplicated`, added with the judge's claim and idempotency checks (issue 21).
    #[test]
    fn a_typed_entry_serves_the_same_line_as_before() {
        let before = json!({
            "answer": null, "deduplicated": null, "taskId": null,
            "time": "2026-01-02T03:04:05.006Z", "receivedMs": 1_767_322_245_006_u64,
            "httpMethod": "GET", "instance": null, "scenario": "baseline", "session": null,
            "era": "legacy", "method": null, "id": null, "tool": null, "argumentsHash": null,
            "headers": {"accept": "text/event-stream"}, "injected": null, "status": null,
            "contentType": null, "retry": null, "issued": null, "executed": null,
        });
        let mut e = JournalEntry::new(1_767_322_245_006, "GET", "baseline", BTreeMap::new());
        e.time = "2026-01-02T03:04:05.006Z".into();
        e.era = Some(Era::Legacy);
        e.headers
            .insert("accept".into(), "text/event-stream".into());
        let j = Journal::new(4);
        j.push(e.clone());
        assert_eq!(j.to_json_lines(), format!("{before}\n"));
        assert_eq!(j.typed_entries().unwrap(), vec![e]);
        j.push(full());
        assert_eq!(j.typed_entries().unwrap()[1], full());
    }

    #[test]
    fn era_reads_back_as_written_and_rejects_others() {
        for era in [Era::Legacy, Era::Modern] {
            let e = JournalEntry {
                era: Some(era),
                ..full()
            };
            let back: JournalEntry =
                serde_json::from_value(serde_json::to_value(&e).unwrap()).unwrap();
            assert_eq!(back.era, Some(era));
        }
        let mut v = serde_json::to_value(full()).unwrap();
        v["era"] = json!("future");
        assert!(serde_json::from_value::<JournalEntry>(v).is_err());
    }

    /// The trace's MRTR record (built as JSON in `context.rs`) reads as `Issued`.
    #[test]
    fn the_traced_round_reads_as_issued() {
        let t = crate::trace::Trace::default();
        assert_eq!(issued_of(t.issued()), None);
        t.issue("tok", &json!({"elicitation": {}, "sampling": {}}));
        assert_eq!(
            issued_of(t.issued()),
            Some(Issued {
                request_state: json!("tok"),
                input_request_keys: vec!["elicitation".into(), "sampling".into()],
            })
        );
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
        // Every secret header the proxy hides, the journal hides too (issue 47: one list).
        let mut all = HeaderMap::new();
        for name in mcp_triage_wire::redact::SECRET_HEADERS {
            all.insert(
                axum::http::HeaderName::from_static(name),
                "canary-7d1f".parse().unwrap(),
            );
        }
        let v = redacted_headers(&all);
        assert_eq!(v.len(), mcp_triage_wire::redact::SECRET_HEADERS.len());
        assert!(v.values().all(|x| x == "[redacted]"), "{v:?}");
        let j = Journal::new(2);
        for i in 0..3 {
            j.push(entry(i));
        }
        let kept: Vec<u64> = j
            .typed_entries()
            .unwrap()
            .iter()
            .map(|e| e.received_ms)
            .collect();
        assert_eq!(kept, [1, 2]);
        assert_eq!(j.dropped(), 1);
    }

    /// Issue 23 item 9: big headers keep the journal under its byte cap; long strings are cut
    /// with a marker; the dropped entries are counted.
    #[test]
    fn journal_is_bounded_in_bytes_and_per_field() {
        let j = Journal::with_limits(10_000, 64 * 1024, 1024);
        let big = "x".repeat(390 * 1024);
        for i in 0..200 {
            let mut e = entry(i);
            e.headers.insert("x-big".into(), big.clone());
            e.headers.insert("x-small".into(), "s".into());
            j.push(e);
        }
        let text = j.to_json_lines();
        assert!(text.len() <= 64 * 1024, "{} bytes", text.len());
        let entries = j.typed_entries().unwrap();
        assert!(entries.len() > 10, "{} entries kept", entries.len());
        let last = entries.last().unwrap();
        assert_eq!(last.received_ms, 199);
        assert_eq!(last.headers["x-small"], "s");
        let v = &last.headers["x-big"];
        assert!(v.starts_with(&"x".repeat(1024)), "{v}");
        assert!(
            v.ends_with(&format!("…[truncated {} bytes]", 390 * 1024 - 1024)),
            "{v}"
        );
        assert_eq!(j.dropped(), 200 - entries.len() as u64);
        // Multi-byte characters are cut at a boundary; verbatim JSON (the id) is cut too, and
        // the fixed vocabulary (era) never, so the entry still reads back.
        let j = Journal::with_limits(10, 1 << 20, 5);
        let mut e = entry(0);
        e.injected = Some("ééééé".into());
        e.id = Some(json!(["abcdefgh"]));
        e.era = Some(Era::Modern);
        j.push(e);
        let back = &j.typed_entries().unwrap()[0];
        assert_eq!(back.injected.as_deref(), Some("éé…[truncated 6 bytes]"));
        assert_eq!(back.id, Some(json!(["abcde…[truncated 3 bytes]"])));
        assert_eq!(back.era, Some(Era::Modern));
        // One entry larger than the whole bound is dropped and counted, not kept.
        let j = Journal::with_limits(10, 100, 1 << 20);
        let mut e = entry(0);
        e.injected = Some("y".repeat(200));
        j.push(e);
        assert_eq!((j.entries().len(), j.dropped()), (0, 1));
        j.clear();
        assert_eq!(j.dropped(), 0);
    }

    #[test]
    fn retry_fields_pick_state_keys_and_idempotency_key() {
        let p = json!({"name": "t", "requestState": "tok",
            "inputResponses": {"elicitation": {"action": "accept"}}, "_meta": {"idempotencyKey": "k1"}});
        assert_eq!(
            serde_json::to_value(retry_fields(&p).unwrap()).unwrap(),
            json!({"requestState": "tok", "inputResponseKeys": ["elicitation"], "idempotencyKey": "k1"})
        );
        assert_eq!(retry_fields(&json!({"name": "t"})), None);
        let prefixed = json!({"_meta": {"mcp-triage/idempotencyKey": "k2"}});
        assert_eq!(
            retry_fields(&prefixed).unwrap().idempotency_key,
            Some(json!("k2"))
        );
        // Only what the request has is journaled: no `null` for the rest.
        assert_eq!(
            serde_json::to_value(retry_fields(&json!({"inputResponses": 3})).unwrap()).unwrap(),
            json!({"inputResponseKeys": []})
        );
    }

    #[test]
    fn argument_hash_ignores_key_order() {
        let a = json!({"a": 1, "b": [1, 2]});
        let b = json!({"b": [1, 2], "a": 1});
        assert_eq!(arguments_hash(&a), arguments_hash(&b));
        assert_ne!(arguments_hash(&a), arguments_hash(&json!({"a": 2})));
    }

    /// A streamed answer is journaled when it starts and completed when it ends; an entry the
    /// bounds already dropped is not brought back.
    #[test]
    fn amend_completes_an_entry_in_place() {
        let j = Journal::new(2);
        let t = j.push(entry(1));
        let other = j.push(entry(2));
        j.amend(t, |e| e.injected = Some("cut".into()));
        let got = j.typed_entries().unwrap();
        assert_eq!(got[0].injected.as_deref(), Some("cut"));
        assert_eq!(got[0].received_ms, 1, "in place, order kept");
        assert_eq!(got[1].injected, None);
        j.push(entry(3));
        j.amend(t, |e| e.injected = Some("late".into()));
        let got = j.typed_entries().unwrap();
        assert!(got.iter().all(|e| e.injected.is_none()), "{got:?}");
        j.amend(other, |e| e.status = Some(200));
        assert_eq!(j.typed_entries().unwrap()[0].status, Some(200));
        assert_eq!(
            j.to_json_lines().len(),
            j.inner.lock().unwrap().bytes,
            "the byte count follows the amended line"
        );
    }
}
