//! The graders of the task cases (the 2026-07-28 tasks extension, SEP-2663): how a client
//! follows a task it created — polling pace, stopping at the end, not creating it again,
//! cancelling what it leaves. Each task is followed by its id: the `answer.taskId` of the
//! `tools/call` that created it, the `taskId` of every `tasks/*` request after.

use mcp_triage_core::Outcome;
use mcp_triage_kitchen::journal::JournalEntry;
use mcp_triage_report::Check;

use crate::cases::CheckKind;
use crate::ctx::{is_call, method, received, Ctx};

/// What the kitchen asks a poller to wait (`pollInterval` of its tasks).
const POLL_MS: u64 = mcp_triage_kitchen::tasks::DEFAULT_POLL_MS;

/// The least gap accepted between two polls: 80% of [`POLL_MS`] (timer slack).
const MIN_POLL_GAP_MS: u64 = POLL_MS * 4 / 5;

/// The tasks the case's calls created: `(creating call, task id)`.
fn created<'a>(cx: &Ctx<'a>) -> Vec<(&'a JournalEntry, &'a str)> {
    cx.entries
        .iter()
        .filter(|e| is_call(e, &cx.case.tool))
        .filter_map(|e| {
            let a = e.answer.as_ref()?;
            (a.outcome == Outcome::TaskCreated)
                .then_some(())
                .and(a.task_id.as_deref())
                .map(|id| (e, id))
        })
        .collect()
}

/// The requests of `method_name` naming task `id`, oldest first.
fn task_requests<'a>(cx: &Ctx<'a>, method_name: &str, id: &str) -> Vec<&'a JournalEntry> {
    cx.entries
        .iter()
        .filter(|e| method(e) == Some(method_name) && e.task_id.as_deref() == Some(id))
        .collect()
}

/// Whether a `tasks/get` answer says the task is over (anything but working / input
/// required; an error such as "expired" ends it too).
fn terminal(e: &JournalEntry) -> bool {
    e.answer
        .as_ref()
        .is_some_and(|a| !matches!(a.outcome, Outcome::TaskCreated | Outcome::InputRequired))
}

/// n/a when no task was created (a client without the extension; a legacy era).
fn no_task(cx: &Ctx<'_>, k: CheckKind) -> Check {
    cx.skip(
        k,
        "no task was created (the client did not declare the tasks extension, or spoke an era without it)",
    )
}

pub(crate) fn poll_pace(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::PollPace;
    let tasks = created(cx);
    if tasks.is_empty() {
        return no_task(cx, k);
    }
    let mut polls = 0;
    let mut shortest = u64::MAX;
    for (call, id) in tasks {
        let gets = task_requests(cx, "tasks/get", id);
        polls += gets.len();
        let mut before = cx.answered_at(call);
        let mut prev: &JournalEntry = call;
        for g in gets {
            let gap = received(g).saturating_sub(before);
            if gap < MIN_POLL_GAP_MS {
                return cx.fail(
                    k,
                    format!(
                        "tasks/get of {id} {gap} ms after the previous answer (pollInterval {POLL_MS} ms)"
                    ),
                    &[prev, g],
                );
            }
            shortest = shortest.min(gap);
            before = cx.answered_at(g);
            prev = g;
        }
    }
    if polls == 0 {
        return cx.pass(k, "no tasks/get");
    }
    cx.pass(
        k,
        format!("{polls} tasks/get, the closest {shortest} ms after the answer before"),
    )
}

pub(crate) fn stops_at_terminal(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::StopsAtTerminal;
    let tasks = created(cx);
    if tasks.is_empty() {
        return no_task(cx, k);
    }
    for (_, id) in &tasks {
        let gets = task_requests(cx, "tasks/get", id);
        if let Some(end) = gets.iter().position(|g| terminal(g)) {
            if let Some(after) = gets.get(end + 1) {
                let state = gets[end]
                    .answer
                    .as_ref()
                    .map_or("?", |a| a.outcome.as_str());
                return cx.fail(
                    k,
                    format!("tasks/get of {id} again after it answered {state} (terminal)"),
                    &[gets[end], after],
                );
            }
        }
    }
    cx.pass(k, "no tasks/get after a terminal state")
}

pub(crate) fn no_create_resend(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::NoCreateResend;
    let tasks = created(cx);
    let Some((first, id)) = tasks.first() else {
        return no_task(cx, k);
    };
    let later = cx
        .calls()
        .into_iter()
        .find(|e| received(e) >= received(first) && !std::ptr::eq(*e, *first));
    match later {
        Some(again) => cx.fail(
            k,
            format!(
                "{} called again after the call that created task {id}: a second task, the tool runs twice",
                cx.case.tool
            ),
            &[first, again],
        ),
        None => cx.pass(k, format!("one tools/call, task {id}")),
    }
}

pub(crate) fn cancels_abandoned(cx: &Ctx<'_>) -> Check {
    let k = CheckKind::CancelsAbandoned;
    let tasks = created(cx);
    if tasks.is_empty() {
        return no_task(cx, k);
    }
    for (call, id) in &tasks {
        let gets = task_requests(cx, "tasks/get", id);
        if gets.iter().any(|g| terminal(g)) {
            continue;
        }
        if !task_requests(cx, "tasks/cancel", id).is_empty() {
            continue;
        }
        let mut evidence = vec![*call];
        evidence.extend(gets.last());
        return cx.fail(
            k,
            format!(
                "task {id} was left unfinished ({} tasks/get, none terminal) and not cancelled",
                gets.len()
            ),
            &evidence,
        );
    }
    cx.pass(k, "every task reached its end or was cancelled")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::{self, CaseDef};
    use mcp_triage_report::Status;
    use serde_json::{json, Value};

    fn case(id: &str) -> CaseDef {
        cases::all().into_iter().find(|c| c.id == id).unwrap()
    }
    /// A journal entry the way the kitchen writes one, from the fields a test sets.
    fn entry(v: Value) -> JournalEntry {
        let mut e = json!({"time": "2026-01-01T00:00:00.000Z", "receivedMs": 0,
                           "httpMethod": "POST", "scenario": "baseline", "headers": {}});
        for (k, x) in v.as_object().unwrap() {
            e[k] = x.clone();
        }
        serde_json::from_value(e).unwrap()
    }
    fn create(t: u64, id: u64) -> JournalEntry {
        entry(
            json!({"receivedMs": t, "method": "tools/call", "id": id, "tool": "slow_compute",
                     "answer": {"outcome": "TASK_CREATED", "taskId": "T", "endedMs": t + 2}}),
        )
    }
    fn request(t: u64, method: &str, outcome: Option<&str>) -> JournalEntry {
        let answer = outcome.map(|o| json!({"outcome": o, "endedMs": t + 2}));
        entry(json!({"receivedMs": t, "method": method, "id": t, "taskId": "T", "answer": answer}))
    }
    fn grade(kind: CheckKind, entries: &[JournalEntry]) -> Check {
        let c = case("tasks.completed");
        let check = match kind {
            CheckKind::PollPace => poll_pace,
            CheckKind::StopsAtTerminal => stops_at_terminal,
            CheckKind::NoCreateResend => no_create_resend,
            CheckKind::CancelsAbandoned => cancels_abandoned,
            other => panic!("not a task check: {other:?}"),
        };
        check(&Ctx {
            case: &c,
            entries,
            sse_retry_ms: 500,
            timed_out: false,
            timeout_s: 20.0,
            exit: Some(0),
            output: "result: ok",
            oauth: None,
        })
    }

    #[test]
    fn polls_are_paced_by_the_poll_interval() {
        let paced = [
            create(0, 1),
            request(300, "tasks/get", Some("TASK_CREATED")),
            request(560, "tasks/get", Some("TOOL_SUCCESS")),
        ];
        assert_eq!(grade(CheckKind::PollPace, &paced).status, Status::Pass);
        let tight = [
            create(0, 1),
            request(300, "tasks/get", Some("TASK_CREATED")),
            request(305, "tasks/get", Some("TOOL_SUCCESS")),
        ];
        let r = grade(CheckKind::PollPace, &tight);
        assert_eq!(r.status, Status::Fail, "{r:?}");
        assert_eq!(r.evidence.len(), 2);
        // The first poll is measured from the task's creation.
        let eager = [create(0, 1), request(10, "tasks/get", Some("TOOL_SUCCESS"))];
        assert_eq!(grade(CheckKind::PollPace, &eager).status, Status::Fail);
        assert_eq!(grade(CheckKind::PollPace, &[]).status, Status::Skip);
    }

    #[test]
    fn polling_stops_at_the_end_and_the_creating_call_is_not_resent() {
        let on = [
            create(0, 1),
            request(300, "tasks/get", Some("JSONRPC_ERROR")),
            request(600, "tasks/get", Some("JSONRPC_ERROR")),
        ];
        assert_eq!(grade(CheckKind::StopsAtTerminal, &on).status, Status::Fail);
        assert_eq!(
            grade(CheckKind::StopsAtTerminal, &on[..2]).status,
            Status::Pass
        );
        let again = [create(0, 1), create(5, 2)];
        let r = grade(CheckKind::NoCreateResend, &again);
        assert_eq!(r.status, Status::Fail);
        assert!(r.message.contains("runs twice"), "{}", r.message);
        assert_eq!(
            grade(CheckKind::NoCreateResend, &again[..1]).status,
            Status::Pass
        );
    }

    #[test]
    fn a_task_left_running_must_be_cancelled() {
        let left = [
            create(0, 1),
            request(300, "tasks/get", Some("INPUT_REQUIRED")),
        ];
        assert_eq!(
            grade(CheckKind::CancelsAbandoned, &left).status,
            Status::Fail
        );
        let mut cancelled = left.to_vec();
        cancelled.push(request(600, "tasks/cancel", None));
        assert_eq!(
            grade(CheckKind::CancelsAbandoned, &cancelled).status,
            Status::Pass
        );
        let ended = [create(0, 1), request(300, "tasks/get", Some("TOOL_ERROR"))];
        assert_eq!(
            grade(CheckKind::CancelsAbandoned, &ended).status,
            Status::Pass
        );
    }
}
