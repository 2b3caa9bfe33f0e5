//! What a check sees of a case: [`Ctx`] (the case, the kitchen's journal entries, how the
//! client ended) and the readings of the journal that more than one family of checks makes —
//! what a request was answered, whether it may have run the tool, when its answer ended — and
//! [`journal_line`], the evidence form of an entry. The checks (`checks`, `task_checks`) read
//! a case only through these, so a reading is defined once.

use std::collections::BTreeMap;

use mcp_triage_core::Outcome;
use mcp_triage_kitchen::journal::{Answer, Issued, JournalEntry, ReplayServed, RetryFields};
use mcp_triage_kitchen::protocol::Era;
use mcp_triage_report::{Check, Status};
use serde::Serialize;
use serde_json::Value;

use crate::cases::{CaseDef, CheckKind};

/// What a check sees.
pub struct Ctx<'a> {
    /// The case.
    pub case: &'a CaseDef,
    /// Journal entries of the case's instance, oldest first.
    pub entries: &'a [JournalEntry],
    /// The kitchen's `retry:` value on primed streams (ms).
    pub sse_retry_ms: u64,
    /// True when the judge killed the client at the timeout.
    pub timed_out: bool,
    /// The timeout (s), for messages.
    pub timeout_s: f64,
    /// The client's exit code (`None`: ended by a signal).
    pub exit: Option<i32>,
    /// What the client printed: stdout, then stderr.
    pub output: &'a str,
    /// OAuth cases: how much each counter of the kitchen's authorization server grew during
    /// the case (`registrations`, `authorizations`, `codeGrants`, `refreshGrants`,
    /// `refusedTokenRequests`, `misdirectedTokens`, …).
    pub oauth: Option<&'a Value>,
}

/// A journal entry cut down to the fields a reader needs to see why a check decided: `null`s
/// left out, and of the headers only the MCP ones, `Last-Event-ID`, `Idempotency-Key` and
/// (redacted) `Authorization`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Evidence<'a> {
    time: &'a str,
    received_ms: u64,
    http_method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    era: Option<Era>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    injected: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry: Option<&'a RetryFields>,
    #[serde(skip_serializing_if = "Option::is_none")]
    issued: Option<&'a Issued>,
    #[serde(skip_serializing_if = "Option::is_none")]
    replay: Option<&'a ReplayServed>,
    #[serde(skip_serializing_if = "Option::is_none")]
    executed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deduplicated: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<&'a Answer>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    headers: BTreeMap<&'a str, &'a str>,
}

/// A journal entry as one evidence line: [`Evidence`] as JSON, keys sorted as the kitchen
/// serves them.
pub fn journal_line(e: &JournalEntry) -> String {
    let headers = e
        .headers
        .iter()
        .filter(|(k, _)| {
            k.starts_with("mcp-")
                || *k == "last-event-id"
                || *k == "idempotency-key"
                || *k == "authorization"
        })
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let line = Evidence {
        time: &e.time,
        received_ms: e.received_ms,
        http_method: &e.http_method,
        era: e.era,
        session: e.session.as_deref(),
        method: e.method.as_deref(),
        id: e.id.as_ref().filter(|id| !id.is_null()),
        tool: e.tool.as_deref(),
        status: e.status,
        injected: e.injected.as_deref(),
        retry: e.retry.as_ref(),
        issued: e.issued.as_ref(),
        replay: e.replay.as_ref(),
        executed: e.executed,
        deduplicated: e.deduplicated,
        answer: e.answer.as_ref(),
        headers,
    };
    // Through a `Value`: its map sorts the keys.
    serde_json::to_value(line)
        .expect("evidence serializes")
        .to_string()
}

pub(crate) fn header<'a>(e: &'a JournalEntry, k: &str) -> Option<&'a str> {
    e.headers.get(k).map(String::as_str)
}
pub(crate) fn received(e: &JournalEntry) -> u64 {
    e.received_ms
}
pub(crate) fn method(e: &JournalEntry) -> Option<&str> {
    e.method.as_deref()
}
pub(crate) fn is_call(e: &JournalEntry, tool: &str) -> bool {
    method(e) == Some("tools/call") && e.tool.as_deref() == Some(tool)
}
/// The `seq` of the captured line a replay served, if one was.
pub(crate) fn served_seq(e: &JournalEntry) -> Option<u64> {
    match e.replay {
        Some(ReplayServed::Served { seq, .. }) => Some(seq),
        _ => None,
    }
}

/// The least wait before a resend after a transport failure (the seed article's initial
/// backoff).
pub const MIN_BACKOFF_MS: u64 = 200;

impl Ctx<'_> {
    /// What the client was given for `e`: the kitchen's reading of its own answer, or, in a
    /// replay, the classifier's verdict of the captured line served.
    pub(crate) fn outcome_of(&self, e: &JournalEntry) -> Option<Outcome> {
        if let Some(a) = &e.answer {
            return Some(a.outcome);
        }
        let captured = self.case.captured.as_ref()?;
        captured.verdict(served_seq(e)?).map(|v| v.outcome)
    }

    /// Whether the tool may have run for the attempt `e` although its answer was not a result
    /// the client could use. Live, the journal knows (`executed`); in a replay no tool runs,
    /// so an answer that broke off (or never came) counts as one that may have run.
    pub(crate) fn may_have_run(&self, e: &JournalEntry) -> bool {
        let outcome = self.outcome_of(e);
        if matches!(
            outcome,
            Some(Outcome::ToolSuccess | Outcome::InputRequired | Outcome::TaskCreated)
        ) {
            return false;
        }
        match e.executed {
            Some(ran) => ran,
            None => matches!(
                outcome,
                None | Some(
                    Outcome::StreamIncomplete
                        | Outcome::ConnectionError
                        | Outcome::Timeout
                        | Outcome::MissingResponse
                )
            ),
        }
    }

    /// Whether the attempt `e` ran the tool (again): not when the kitchen says it did not,
    /// nor when an honoured idempotency key answered it from the stored result.
    pub(crate) fn ran(&self, e: &JournalEntry) -> bool {
        e.executed != Some(false) && e.deduplicated != Some(true)
    }

    /// Whether `e` failed on the transport in a way a resend answers (5xx, a cut or dropped
    /// answer), as opposed to a 429 (Retry-After), a 401/403 (authorization) or a 404 in a
    /// session (expiry), which other checks grade.
    pub(crate) fn transport_failure(&self, e: &JournalEntry) -> bool {
        let status = e.answer.as_ref().and_then(|a| a.status).or(e.status);
        if matches!(status, Some(429 | 401 | 403)) || is_expiry(e) {
            return false;
        }
        match self.outcome_of(e) {
            Some(o) => o.layer() == mcp_triage_core::Layer::Transport,
            None => e.status.is_none_or(|s| s >= 500),
        }
    }

    /// When the answer to `e` ended: the answer's own stamp, else when the request arrived.
    pub(crate) fn answered_at(&self, e: &JournalEntry) -> u64 {
        e.answer.as_ref().map_or(e.received_ms, |a| a.ended_ms)
    }

    /// The last answer the kitchen gave for the case's call: its tools/call entries and the
    /// resumptions of their streams, latest last.
    pub(crate) fn last_answer(&self) -> Option<(&JournalEntry, &Answer)> {
        self.entries
            .iter()
            .filter(|e| {
                is_call(e, &self.case.tool)
                    || e.http_method == "GET"
                    || matches!(method(e), Some("tasks/get" | "tasks/result"))
            })
            .filter_map(|e| e.answer.as_ref().map(|a| (e, a)))
            .next_back()
    }

    pub(crate) fn calls(&self) -> Vec<&JournalEntry> {
        self.entries
            .iter()
            .filter(|e| is_call(e, &self.case.tool))
            .collect()
    }
    pub(crate) fn check(
        &self,
        kind: CheckKind,
        status: Status,
        message: impl Into<String>,
    ) -> Check {
        Check::new(kind.name(), status, message).with_references(kind.references().iter().copied())
    }
    pub(crate) fn pass(&self, kind: CheckKind, m: impl Into<String>) -> Check {
        self.check(kind, Status::Pass, m)
    }
    pub(crate) fn skip(&self, kind: CheckKind, m: impl Into<String>) -> Check {
        self.check(kind, Status::Skip, m)
    }
    pub(crate) fn fail(
        &self,
        kind: CheckKind,
        m: impl Into<String>,
        ev: &[&JournalEntry],
    ) -> Check {
        self.check(kind, Status::Fail, m)
            .with_evidence(ev.iter().map(|e| journal_line(e)))
    }
}

/// A request answered 404 in a legacy session: the session expired.
pub(crate) fn is_expiry(e: &JournalEntry) -> bool {
    e.status == Some(404) && e.session.is_some()
}
