//! What the kitchen did to one request, noted while it answers: injected faults, the MRTR
//! round it issued, whether the tool ran and whether an idempotency key repeated.
//!
//! The endpoint writes these notes into the request's journal entry; scenarios add to them
//! through [`crate::plugin::ToolCx::trace`]. A leaf, so the journal and the plug-in API can
//! both name it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde_json::{json, Value};

/// Notes about what the kitchen injected into one request (for the journal).
#[derive(Default)]
pub struct Trace {
    notes: Mutex<Vec<String>>,
    issued: Mutex<Option<Value>>,
    executed: AtomicBool,
    deduplicated: Mutex<Option<bool>>,
}

impl Trace {
    /// Record one injection.
    pub fn note(&self, s: impl Into<String>) {
        self.notes.lock().expect("trace lock").push(s.into());
    }
    /// Record the MRTR round the kitchen issued (`requestState` and the `inputRequests`
    /// keys), so the journal can show whether the retry echoed them.
    pub fn issue(&self, request_state: &str, input_requests: &Value) {
        let keys: Vec<&String> = input_requests
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        *self.issued.lock().expect("trace lock") =
            Some(json!({ "requestState": request_state, "inputRequestKeys": keys }));
    }
    /// The MRTR round issued, if any.
    pub fn issued(&self) -> Option<Value> {
        self.issued.lock().expect("trace lock").clone()
    }
    /// Record that the tool body of this `tools/call` started (its side effect may have
    /// happened, whatever the client ends up seeing).
    pub fn mark_executed(&self) {
        self.executed.store(true, Ordering::SeqCst);
    }
    /// Whether the tool body started.
    pub fn executed(&self) -> bool {
        self.executed.load(Ordering::SeqCst)
    }
    /// Record what an honoured idempotency key did: `true` when the call repeated a key and
    /// was answered from the stored result, `false` when it ran (see the journal's
    /// `deduplicated`).
    pub fn set_deduplicated(&self, repeated: bool) {
        *self.deduplicated.lock().expect("trace lock") = Some(repeated);
    }
    /// What an honoured idempotency key did, if keys are honoured and the call had one.
    pub fn deduplicated(&self) -> Option<bool> {
        *self.deduplicated.lock().expect("trace lock")
    }
    /// Everything recorded, joined.
    pub fn joined(&self) -> Option<String> {
        let n = self.notes.lock().expect("trace lock");
        if n.is_empty() {
            None
        } else {
            Some(n.join("; "))
        }
    }
}
