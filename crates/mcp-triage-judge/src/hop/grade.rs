//! The grades of a hop and how a call case earns one: what the kitchen's journal says it sent
//! (the core's verdict of its own bytes, which calls ran) against what our client was given
//! through the hop (the same core's verdict, in the client's [`CallRecord`]).
//!
//! Nothing here assumes the hop's front speaks HTTP: the delivered side is read from a
//! [`CallRecord`], which a stdio client fills too, and the accepted mappings are keyed by the
//! front's transport ([`Front`]), so a stdio front adds rows, not a second grader.

use mcp_triage_core::{CallRecord, Outcome};
use mcp_triage_kitchen::journal::{Answer, JournalEntry};
use serde::{Deserialize, Serialize};

use crate::ctx::journal_line;

/// What a hop did to a case, worst first: the order is the severity, and a case shows its
/// worst grade (every finding stays in its evidence). The serde names are stable: reports
/// and scripts key on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Grade {
    /// A failure the kitchen sent reached the client as a success: the worst, because the
    /// caller acts on a result that does not exist.
    SuccessInvented,
    /// The kitchen ran (or was sent) the call more times than our client sent it: the hop
    /// resent it, and a tool that is not idempotent ran again.
    ResentByHop,
    /// No answer reached the client within the case's time, though the kitchen answered.
    Lost,
    /// The kitchen answered a success (or was never asked) and the client got a failure.
    FailureInvented,
    /// A failure reached the client as another failure (another layer, outcome or status)
    /// that the accepted mappings do not list.
    FailureChanged,
    /// `Mcp-Session-Id` was not passed on, or a 404 session expiry did not reach the client
    /// as a 404 (so it cannot know to re-initialize).
    SessionBroken,
    /// The kitchen sent a wait (`Retry-After`, `retryAfterMs`) or a tool's annotations in
    /// `tools/list`, and the client did not get them.
    RetryInfoLost,
    /// The first SSE event reached the client only long after the kitchen sent it (the hop
    /// buffered the stream).
    StreamHeldBack,
    /// The client got what the kitchen sent, or an accepted mapping of it.
    Kept,
}

impl Grade {
    /// The name in the matrix: words, as a reader says it.
    pub fn name(self) -> &'static str {
        match self {
            Grade::SuccessInvented => "success invented",
            Grade::ResentByHop => "resent by the hop",
            Grade::Lost => "lost",
            Grade::FailureInvented => "failure invented",
            Grade::FailureChanged => "failure changed",
            Grade::SessionBroken => "session broken",
            Grade::RetryInfoLost => "retry information lost",
            Grade::StreamHeldBack => "stream held back",
            Grade::Kept => "kept",
        }
    }

    /// The stable serde name (`success_invented`), the check name in the reports.
    pub fn id(self) -> &'static str {
        match self {
            Grade::SuccessInvented => "success_invented",
            Grade::ResentByHop => "resent_by_hop",
            Grade::Lost => "lost",
            Grade::FailureInvented => "failure_invented",
            Grade::FailureChanged => "failure_changed",
            Grade::SessionBroken => "session_broken",
            Grade::RetryInfoLost => "retry_info_lost",
            Grade::StreamHeldBack => "stream_held_back",
            Grade::Kept => "kept",
        }
    }
}

/// One thing the judge found in a case: a grade, a sentence and the lines that prove it
/// (journal lines as the client judge shows them, and what the client got).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The grade.
    pub grade: Grade,
    /// What happened, in one sentence.
    pub message: String,
    /// The proof.
    pub evidence: Vec<String>,
}

impl Finding {
    fn new(grade: Grade, message: impl Into<String>, evidence: Vec<String>) -> Finding {
        Finding {
            grade,
            message: message.into(),
            evidence,
        }
    }
}

/// The transport the hop's front speaks to our client (the accepted mappings depend on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Front {
    /// Streamable HTTP, as the kitchen itself speaks.
    Http,
}

/// A delivered outcome that differs from the kitchen's and is still *kept*: the hop could not
/// pass the failure on as it was, and what it passed on says the same thing to a caller (same
/// layer, same "did it run" answer). `docs/hops.md` shows this table.
#[derive(Clone, Copy, Debug)]
pub struct Mapping {
    /// The hop's front.
    pub front: Front,
    /// What the kitchen sent.
    pub truth: Outcome,
    /// What the client got.
    pub delivered: Outcome,
    /// The delivered HTTP statuses allowed (empty: any).
    pub statuses: &'static [u16],
    /// Why it is kept.
    pub why: &'static str,
}

/// The accepted mappings. Only HTTP fronts are judged so far; a stdio front's rows (an HTTP
/// 503 upstream seen as a JSON-RPC error) come with it.
pub const ACCEPTED: &[Mapping] = &[
    Mapping {
        front: Front::Http,
        truth: Outcome::ConnectionError,
        delivered: Outcome::HttpError,
        statuses: &[502],
        why: "the upstream closed the connection without a response; a gateway must answer its \
              client something, and 502 Bad Gateway says the upstream failed (RFC 9110 15.6.3): \
              still the transport layer, still \"may have run\"",
    },
    Mapping {
        front: Front::Http,
        truth: Outcome::StreamIncomplete,
        delivered: Outcome::ConnectionError,
        statuses: &[],
        why: "the upstream stream broke off before its response; a hop that passes the break on \
              as a broken connection says the same: the transport layer, the answer cut short",
    },
];

/// The accepted mapping that keeps `truth` delivered as `delivered` (with HTTP `status`).
pub fn accepted(
    front: Front,
    truth: Outcome,
    delivered: Outcome,
    status: Option<u16>,
) -> Option<&'static Mapping> {
    ACCEPTED.iter().find(|m| {
        m.front == front
            && m.truth == truth
            && m.delivered == delivered
            && (m.statuses.is_empty() || status.is_some_and(|s| m.statuses.contains(&s)))
    })
}

/// Outcomes after which the caller holds a usable answer (a result, a question, a task).
fn is_success(o: Outcome) -> bool {
    matches!(
        o,
        Outcome::ToolSuccess | Outcome::InputRequired | Outcome::TaskCreated
    )
}

/// What the client was given, in one evidence line.
pub fn delivered_line(r: &CallRecord) -> String {
    let retry: Vec<String> = r
        .attempts
        .iter()
        .map(|a| {
            a.verdict
                .retry_after_ms
                .map_or("-".to_string(), |ms| ms.to_string())
        })
        .collect();
    format!(
        "client got: outcome {} (layer {}), HTTP statuses {:?}, sent the call {} time(s), retry-after ms per attempt [{}]{}",
        r.outcome,
        r.layer,
        r.http_statuses,
        r.post_count,
        retry.join(", "),
        r.message
            .as_deref()
            .map(|m| format!(", message {m:?}"))
            .unwrap_or_default()
    )
}

/// A call case as the grader sees it: the kitchen's journal entries of the case, the tool
/// called, what the client got (`None`: nothing within the case's time).
pub struct CallSeen<'a> {
    /// The hop's front.
    pub front: Front,
    /// The case's journal entries, oldest first.
    pub entries: &'a [JournalEntry],
    /// The tool the client called.
    pub tool: &'a str,
    /// The client's record, or `None` when the case's time ran out.
    pub record: Option<&'a CallRecord>,
    /// The case's time limit (s), for messages.
    pub limit_s: f64,
}

impl CallSeen<'_> {
    fn calls(&self) -> Vec<&JournalEntry> {
        self.entries
            .iter()
            .filter(|e| {
                e.http_method == "POST"
                    && e.method.as_deref() == Some("tools/call")
                    && e.tool.as_deref() == Some(self.tool)
            })
            .collect()
    }

    /// The last answer the kitchen gave for the call: its tools/call entries and the
    /// resumptions of their streams (GET), latest last.
    fn truth(&self) -> Option<(&JournalEntry, &Answer)> {
        self.entries
            .iter()
            .filter(|e| {
                (e.http_method == "POST"
                    && e.method.as_deref() == Some("tools/call")
                    && e.tool.as_deref() == Some(self.tool))
                    || e.http_method == "GET"
            })
            .filter_map(|e| e.answer.as_ref().map(|a| (e, a)))
            .next_back()
    }

    /// Every finding of the case; empty means kept (an accepted mapping adds a `Kept`
    /// finding that names it).
    pub fn grade(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        let Some(record) = self.record else {
            let ev = self.calls().iter().map(|e| journal_line(e)).collect();
            out.push(Finding::new(
                Grade::Lost,
                format!("no answer reached the client within {} s", self.limit_s),
                ev,
            ));
            return out;
        };
        out.extend(self.resent(record));
        out.extend(self.outcome(record));
        out.extend(self.retry_info(record));
        out.extend(self.session(record));
        out
    }

    fn resent(&self, record: &CallRecord) -> Option<Finding> {
        let calls = self.calls();
        (calls.len() > record.post_count as usize).then(|| {
            let mut ev: Vec<String> = calls.iter().map(|e| journal_line(e)).collect();
            ev.push(delivered_line(record));
            Finding::new(
                Grade::ResentByHop,
                format!(
                    "the kitchen got tools/call {} {} time(s); our client sent it {} time(s)",
                    self.tool,
                    calls.len(),
                    record.post_count
                ),
                ev,
            )
        })
    }

    fn outcome(&self, record: &CallRecord) -> Option<Finding> {
        let got = record.outcome;
        let status = record.http_statuses.last().copied();
        let Some((entry, truth)) = self.truth() else {
            let calls = self.calls();
            // Reached but unanswered: the kitchen was still waiting (for an input round's
            // answer, say) when the client gave up.
            let reached = match calls.last() {
                Some(_) => format!(
                    "the kitchen's answer to the call had not ended ({} journal line(s))",
                    calls.len()
                ),
                None if self.entries.is_empty() => "nothing reached the kitchen".to_string(),
                None => "the call never reached the kitchen".to_string(),
            };
            let mut ev: Vec<String> = calls.iter().map(|e| journal_line(e)).collect();
            ev.push(delivered_line(record));
            let (grade, what) = if is_success(got) {
                (Grade::SuccessInvented, "a success")
            } else if matches!(got, Outcome::Timeout) {
                (Grade::Lost, "no answer")
            } else {
                (Grade::FailureInvented, "a failure")
            };
            return Some(Finding::new(
                grade,
                format!("{reached}, yet the client got {what} ({got})"),
                ev,
            ));
        };
        let ev = || vec![journal_line(entry), delivered_line(record)];
        let same_status = truth.outcome != Outcome::HttpError || truth.status == status;
        if truth.outcome == got && same_status {
            return None;
        }
        if let Some(m) = accepted(self.front, truth.outcome, got, status) {
            return Some(Finding::new(
                Grade::Kept,
                format!("accepted mapping {} → {}: {}", m.truth, m.delivered, m.why),
                ev(),
            ));
        }
        let sent = match truth.status {
            Some(s) if truth.outcome == Outcome::HttpError => format!("{} {s}", truth.outcome),
            _ => truth.outcome.to_string(),
        };
        let (grade, msg) = if is_success(got) && !is_success(truth.outcome) {
            (
                Grade::SuccessInvented,
                format!("the kitchen sent {sent}; the client got {got}"),
            )
        } else if got == Outcome::Timeout {
            (
                Grade::Lost,
                format!("the kitchen sent {sent}; the client got no answer in time"),
            )
        } else if is_success(truth.outcome) {
            (
                Grade::FailureInvented,
                format!("the kitchen sent {sent}; the client got {got}"),
            )
        } else {
            (
                Grade::FailureChanged,
                format!(
                    "the kitchen sent {sent}; the client got {got}{}",
                    status.map(|s| format!(" (HTTP {s})")).unwrap_or_default()
                ),
            )
        };
        Some(Finding::new(grade, msg, ev()))
    }

    fn retry_info(&self, record: &CallRecord) -> Option<Finding> {
        let asked: Vec<&JournalEntry> = self
            .calls()
            .into_iter()
            .filter(|e| {
                e.answer
                    .as_ref()
                    .is_some_and(|a| a.retry_after_ms.is_some())
            })
            .collect();
        let got = record
            .attempts
            .iter()
            .filter(|a| a.verdict.retry_after_ms.is_some())
            .count();
        // Each answer that asked for a wait must reach the client with one.
        (got < asked.len()).then(|| {
            let mut ev: Vec<String> = asked.iter().map(|e| journal_line(e)).collect();
            ev.push(delivered_line(record));
            Finding::new(
                Grade::RetryInfoLost,
                format!(
                    "the kitchen asked for a wait (Retry-After / retryAfterMs) {} time(s); the client got one {got} time(s)",
                    asked.len()
                ),
                ev,
            )
        })
    }

    fn session(&self, record: &CallRecord) -> Option<Finding> {
        // The journal keeps an answer for calls; for `initialize` its status says it went well.
        let initialized = self.entries.iter().any(|e| {
            e.method.as_deref() == Some("initialize")
                && e.status.or(e.answer.as_ref().and_then(|a| a.status)) == Some(200)
        });
        if !initialized {
            return None;
        }
        let calls = self.calls();
        if let Some(bare) = calls.iter().find(|e| e.session.is_none()) {
            return Some(Finding::new(
                Grade::SessionBroken,
                "the kitchen issued a session, and a tools/call reached it without Mcp-Session-Id",
                vec![journal_line(bare), delivered_line(record)],
            ));
        }
        let expired = calls
            .iter()
            .find(|e| e.session.is_some() && e.answer.as_ref().and_then(|a| a.status) == Some(404));
        match expired {
            Some(e) if !record.http_statuses.contains(&404) => Some(Finding::new(
                Grade::SessionBroken,
                "the kitchen answered 404 (session expired); the client never got a 404, so it cannot re-initialize",
                vec![journal_line(e), delivered_line(record)],
            )),
            _ => None,
        }
    }
}

/// The case's grade: the worst finding, `Kept` when there is none.
pub fn worst(findings: &[Finding]) -> Grade {
    findings
        .iter()
        .map(|f| f.grade)
        .min()
        .unwrap_or(Grade::Kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn answer(outcome: Outcome, status: Option<u16>) -> Answer {
        Answer {
            outcome,
            status,
            code: None,
            message: None,
            detail: None,
            task_id: None,
            ended_ms: 1,
            declared_failure: None,
            retry_after_ms: None,
        }
    }

    fn call(a: Answer, session: Option<&str>) -> JournalEntry {
        let mut e = JournalEntry::new(1, "POST", "s", BTreeMap::new());
        e.method = Some("tools/call".into());
        e.tool = Some("t".into());
        e.status = a.status;
        e.session = session.map(str::to_owned);
        e.answer = Some(a);
        e
    }

    /// As the kitchen journals it: a status, no answer (answers are kept for calls).
    fn initialize() -> JournalEntry {
        let mut e = JournalEntry::new(0, "POST", "s", BTreeMap::new());
        e.method = Some("initialize".into());
        e.status = Some(200);
        e
    }

    fn got(outcome: Outcome, statuses: &[u16], sends: u32) -> CallRecord {
        let mut r = CallRecord::new("mcp-triage", "streamable-http", "tools/call");
        r.outcome = outcome;
        r.http_statuses = statuses.to_vec();
        r.post_count = sends;
        r
    }

    fn grades(entries: &[JournalEntry], record: Option<&CallRecord>) -> Vec<Grade> {
        let seen = CallSeen {
            front: Front::Http,
            entries,
            tool: "t",
            record,
            limit_s: 5.0,
        };
        seen.grade().iter().map(|f| f.grade).collect()
    }

    #[test]
    fn the_same_outcome_is_kept_and_a_failure_made_success_is_the_worst() {
        let e = [call(answer(Outcome::ToolError, Some(200)), None)];
        assert!(grades(&e, Some(&got(Outcome::ToolError, &[200], 1))).is_empty());
        assert_eq!(
            grades(&e, Some(&got(Outcome::ToolSuccess, &[200], 1))),
            [Grade::SuccessInvented]
        );
        let ok = [call(answer(Outcome::ToolSuccess, Some(200)), None)];
        assert_eq!(
            grades(&ok, Some(&got(Outcome::HttpError, &[502], 1))),
            [Grade::FailureInvented]
        );
        assert_eq!(grades(&ok, None), [Grade::Lost]);
    }

    #[test]
    fn an_accepted_mapping_is_kept_with_its_reason_and_another_status_is_a_change() {
        let e = [call(answer(Outcome::ConnectionError, None), None)];
        let seen = CallSeen {
            front: Front::Http,
            entries: &e,
            tool: "t",
            record: Some(&got(Outcome::HttpError, &[502], 1)),
            limit_s: 5.0,
        };
        let f = seen.grade();
        assert_eq!(worst(&f), Grade::Kept);
        assert!(f[0].message.contains("502 Bad Gateway"), "{f:?}");
        let e503 = [call(answer(Outcome::HttpError, Some(503)), None)];
        assert_eq!(
            grades(&e503, Some(&got(Outcome::HttpError, &[502], 1))),
            [Grade::FailureChanged]
        );
    }

    #[test]
    fn more_calls_in_the_journal_than_sent_is_a_resend_by_the_hop() {
        let a = || answer(Outcome::ToolSuccess, Some(200));
        let e = [call(a(), None), call(a(), None)];
        assert_eq!(
            grades(&e, Some(&got(Outcome::ToolSuccess, &[200], 1))),
            [Grade::ResentByHop]
        );
        assert!(grades(&e, Some(&got(Outcome::ToolSuccess, &[200, 200], 2))).is_empty());
    }

    #[test]
    fn a_session_not_passed_or_an_expiry_not_delivered_breaks_the_session() {
        let ok = answer(Outcome::ToolSuccess, Some(200));
        let bare = [initialize(), call(ok.clone(), None)];
        assert_eq!(
            grades(&bare, Some(&got(Outcome::ToolSuccess, &[200], 1))),
            [Grade::SessionBroken]
        );
        let expired = [
            initialize(),
            call(answer(Outcome::HttpError, Some(404)), Some("s1")),
            call(ok, Some("s2")),
        ];
        assert!(grades(&expired, Some(&got(Outcome::ToolSuccess, &[404, 200], 2))).is_empty());
        assert_eq!(
            grades(&expired, Some(&got(Outcome::ToolSuccess, &[502, 200], 2))),
            [Grade::SessionBroken]
        );
    }

    #[test]
    fn a_wait_the_kitchen_sent_must_reach_the_client() {
        let mut a = answer(Outcome::HttpError, Some(429));
        a.retry_after_ms = Some(2000);
        let e = [call(a, None)];
        assert_eq!(
            grades(&e, Some(&got(Outcome::HttpError, &[429], 1))),
            [Grade::RetryInfoLost],
            "no attempt carried a wait"
        );
    }

    #[test]
    fn the_worst_grade_wins_and_names_are_stable() {
        let f = |g| Finding::new(g, "", vec![]);
        assert_eq!(
            worst(&[f(Grade::RetryInfoLost), f(Grade::SuccessInvented)]),
            Grade::SuccessInvented
        );
        assert_eq!(worst(&[]), Grade::Kept);
        assert_eq!(
            serde_json::to_value(Grade::RetryInfoLost).unwrap(),
            Grade::RetryInfoLost.id()
        );
        assert_eq!(Grade::SuccessInvented.name(), "success invented");
    }
}
