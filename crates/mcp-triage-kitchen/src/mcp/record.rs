//! The journal entry of one exchange in the making ([`Pending`]), written when the answer
//! goes out or, when the client leaves first, when the request is dropped.
//!
//! `receive` fills in a [`Record`] as facts become known (scenario, instance, session,
//! method, id, tool, era), and `mcp::handle` turns it, with the trace of what was injected,
//! into the journal entry. Keeping it apart means no handler writes the journal itself, and a
//! client that hangs up mid-request still leaves an entry.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Response};
use serde_json::Value;

use crate::journal;
use crate::protocol::Era;
use crate::state::Shared;
use crate::trace::Trace;

/// What the journal needs to know about one exchange.
#[derive(Default)]
pub(super) struct Record {
    /// The scenario id, once the instance is known.
    pub(super) scenario: Option<String>,
    pub(super) instance: Option<String>,
    pub(super) session: Option<String>,
    pub(super) method: Option<String>,
    pub(super) id: Option<Value>,
    pub(super) tool: Option<String>,
    pub(super) args_hash: Option<String>,
    pub(super) era: Option<Era>,
    /// MRTR retry fields and an idempotency key, so `judge` can grade retries.
    pub(super) retry: Option<journal::RetryFields>,
    /// `params.taskId` of a tasks-extension request.
    pub(super) task_id: Option<String>,
    /// How the answer is compressed (the instance's `contentEncoding`), once the instance is
    /// known.
    pub(super) coding: Option<super::coding::ResponseCoding>,
}

/// One request's journal entry in the making. A client that goes away while the kitchen is
/// still answering (a tool that takes longer than its patience) drops the request's future;
/// the entry is journaled then too, without a status, so `judge` sees the request it sent
/// instead of a call that never came.
pub(super) struct Pending {
    pub(super) shared: Arc<Shared>,
    pub(super) received: u64,
    pub(super) method: Method,
    pub(super) headers: HeaderMap,
    pub(super) trace: Arc<Trace>,
    pub(super) rec: Record,
    pub(super) done: bool,
}

impl Pending {
    /// The entry as far as it is known; `head` is the response, `None` when none was sent.
    pub(super) fn entry(
        &mut self,
        scenario: String,
        head: Option<&Response<Body>>,
    ) -> journal::JournalEntry {
        let rec = std::mem::take(&mut self.rec);
        let ctype = head
            .and_then(|r| r.headers().get(header::CONTENT_TYPE))
            .and_then(|v| v.to_str().ok())
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        journal::JournalEntry {
            time: journal::rfc3339(journal::now_ms()),
            received_ms: self.received,
            http_method: self.method.as_str().to_string(),
            instance: rec.instance,
            scenario,
            session: rec.session,
            era: rec.era,
            executed: rec.tool.is_some().then(|| self.trace.executed()),
            method: rec.method,
            id: rec.id,
            tool: rec.tool,
            arguments_hash: rec.args_hash,
            headers: journal::redacted_headers(&self.headers),
            injected: self.trace.joined(),
            status: head.map(|r| r.status().as_u16()),
            content_type: ctype,
            retry: rec.retry,
            issued: journal::issued_of(self.trace.issued()),
            answer: None,
            deduplicated: self.trace.deduplicated(),
            task_id: rec.task_id,
            replay: None,
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.trace
            .note("the client closed the connection before the answer was sent");
        let scenario = self
            .rec
            .scenario
            .clone()
            .unwrap_or_else(|| "unknown".into());
        let entry = self.entry(scenario, None);
        self.shared.journal.push(entry);
    }
}
