//! Grading a stdio client from the stdio kitchen's journal file (the kitchen's own entries and
//! the stdio front's events) and how the client ended.

use std::time::Duration;

use mcp_triage_core::Outcome;
use mcp_triage_kitchen::journal::JournalEntry;
use mcp_triage_kitchen::stdio::sink::{StdioEvent, StdioRecord};

use super::cases::{checks_of, StdioCase, StdioCheck};

/// How the client ended.
#[derive(Clone, Debug)]
pub struct ClientRun {
    /// Its exit code (`None`: killed, or stopped by the judge).
    pub exit: Option<i32>,
    /// The judge stopped it at the case's limit.
    pub timed_out: bool,
    /// What it printed (stdout and stderr, bounded).
    pub output: String,
    /// How long it ran.
    pub elapsed: Duration,
}

/// One check's result: pass, fail, or n/a, with the evidence in words.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The check.
    pub check: StdioCheck,
    /// `Some(true)` pass, `Some(false)` fail, `None` n/a.
    pub pass: Option<bool>,
    /// Why, with the journal's words.
    pub evidence: String,
}

/// The journal file's lines split by kind.
pub struct Records {
    /// The kitchen's entries, in order (every server's, for a host that restarted it).
    pub entries: Vec<JournalEntry>,
    /// The stdio front's events.
    pub events: Vec<StdioEvent>,
}

impl Records {
    /// Read the journal file's text; a line that is neither kind is an error naming it.
    pub fn parse(text: &str) -> Result<Records, String> {
        let mut r = Records {
            entries: Vec::new(),
            events: Vec::new(),
        };
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            match serde_json::from_str::<StdioRecord>(line) {
                Ok(StdioRecord::Event(e)) => r.events.push(e),
                Ok(StdioRecord::Entry(e)) => r.entries.push(*e),
                Err(e) => return Err(format!("journal line {}: {e}", n + 1)),
            }
        }
        Ok(r)
    }

    fn calls<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = &'a JournalEntry> + 'a {
        self.entries.iter().filter(move |e| {
            e.method.as_deref() == Some("tools/call") && e.tool.as_deref() == Some(tool)
        })
    }

    fn servers(&self) -> usize {
        self.events
            .iter()
            .filter(|e| e.stdio_event == "started")
            .count()
    }
}

fn outcome_of(e: &JournalEntry) -> Option<Outcome> {
    e.answer.as_ref().map(|a| a.outcome)
}

/// Grade one case.
pub fn grade(case: &StdioCase, r: &Records, run: &ClientRun) -> Vec<Checked> {
    checks_of(case)
        .into_iter()
        .map(|check| {
            let (pass, evidence) = one(check, case, r, run);
            Checked {
                check,
                pass,
                evidence,
            }
        })
        .collect()
}

fn ended(run: &ClientRun) -> String {
    match (run.timed_out, run.exit) {
        (true, _) => format!(
            "stopped by the judge after {:.1} s",
            run.elapsed.as_secs_f64()
        ),
        (false, Some(c)) => format!("exit {c} after {:.1} s", run.elapsed.as_secs_f64()),
        (false, None) => "killed by a signal".into(),
    }
}

fn one(
    check: StdioCheck,
    case: &StdioCase,
    r: &Records,
    run: &ClientRun,
) -> (Option<bool>, String) {
    let calls: Vec<&JournalEntry> = r.calls(case.tool).collect();
    match check {
        StdioCheck::ToolCalled => match calls.len() {
            0 => (
                Some(false),
                format!("no tools/call of {} in the journal", case.tool),
            ),
            n => (Some(true), format!("{n} tools/call of {}", case.tool)),
        },
        StdioCheck::InTime => (Some(!run.timed_out), ended(run)),
        StdioCheck::ReportedOutcome => reported(case, &calls, run),
        StdioCheck::NoUnsafeResend => {
            let ran: Vec<&&JournalEntry> =
                calls.iter().filter(|e| e.executed == Some(true)).collect();
            let ok = ran.len() <= 1;
            let word = if ok { "ran" } else { "ran again" };
            (
                Some(ok),
                format!(
                    "{} {word}: {} time(s) over {} server start(s) (journal `executed`)",
                    case.tool,
                    ran.len(),
                    r.servers()
                ),
            )
        }
        StdioCheck::NoAutoResend => (
            Some(calls.len() <= 1),
            format!(
                "{} tools/call after a {} answer",
                calls.len(),
                first_outcome(&calls)
            ),
        ),
        StdioCheck::ReportsDeadServer => {
            let said = !run.output.trim().is_empty();
            let ok = !run.timed_out && run.exit.is_some_and(|c| c != 0) && said;
            let what = r
                .events
                .iter()
                .find(|e| e.stdio_event == "exited" || e.stdio_event == "withheld")
                .and_then(|e| e.detail.clone())
                .unwrap_or_else(|| "no answer".into());
            (Some(ok), format!("server: {what}; client: {}", ended(run)))
        }
        StdioCheck::StderrDrained => {
            let done = r.events.iter().find(|e| e.stdio_event == "floodDone");
            match done {
                Some(e) => (Some(true), e.detail.clone().unwrap_or_default()),
                None if calls.is_empty() => (None, "no call reached the server".into()),
                None => (
                    Some(false),
                    "the server blocked writing its stderr (no floodDone record): the client \
                     piped stderr and never drained it"
                        .into(),
                ),
            }
        }
    }
}

fn first_outcome(calls: &[&JournalEntry]) -> String {
    calls
        .first()
        .and_then(|e| outcome_of(e))
        .map(|o| format!("{o:?}"))
        .unwrap_or_else(|| "missing".into())
}

/// What the client was given (the last call's answer) against how it ended.
fn reported(case: &StdioCase, calls: &[&JournalEntry], run: &ClientRun) -> (Option<bool>, String) {
    let Some(last) = calls.last() else {
        return (None, "no call, nothing to report".into());
    };
    let Some(given) = outcome_of(last) else {
        return (None, "the call's answer is not in the journal".into());
    };
    if run.timed_out {
        return (Some(false), format!("given {given:?}; {}", ended(run)));
    }
    let said = !run.output.trim().is_empty();
    let success = run.exit == Some(0);
    let ok = match given {
        Outcome::ToolSuccess => success || (case.failure_accepted.is_some() && said),
        _ => !success && said,
    };
    let mut why = format!("given {given:?}; client {}", ended(run));
    if given != Outcome::ToolSuccess && success {
        why.push_str(": success invented");
    } else if given != Outcome::ToolSuccess && !said {
        why.push_str(": failed silently");
    } else if let (Outcome::ToolSuccess, false, Some(a)) = (given, success, case.failure_accepted) {
        why.push_str(&format!(" (accepted: {a})"));
    }
    (Some(ok), why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stdio::cases;

    fn case(id: &str) -> StdioCase {
        cases::all().into_iter().find(|c| c.id == id).unwrap()
    }

    /// A journal file's text: one `started` event and a call of `tool` answered `outcome`.
    fn journal(tool: &str, outcome: &str, executed: bool) -> String {
        let entry = serde_json::json!({
            "time": "2026-01-01T00:00:00.000Z", "receivedMs": 1, "httpMethod": "POST",
            "instance": "x", "scenario": "x", "session": null, "era": "legacy",
            "method": "tools/call", "id": 2, "tool": tool, "argumentsHash": null,
            "headers": {}, "injected": null, "status": 200, "contentType": null, "retry": null,
            "issued": null, "executed": executed,
            "answer": { "outcome": outcome, "endedMs": 2 }
        });
        format!("{{\"stdioEvent\":\"started\",\"timeMs\":1,\"pid\":7}}\n{entry}\n")
    }

    fn run(exit: Option<i32>, timed_out: bool, output: &str) -> ClientRun {
        ClientRun {
            exit,
            timed_out,
            output: output.into(),
            elapsed: Duration::from_millis(10),
        }
    }

    fn verdict(checked: &[Checked], check: StdioCheck) -> &Checked {
        checked.iter().find(|c| c.check == check).unwrap()
    }

    #[test]
    fn exit_0_after_a_dead_server_is_success_invented() {
        let c = case("stdio.exit_mid_call");
        let r = Records::parse(&journal("increment_counter", "CONNECTION_ERROR", true)).unwrap();
        let g = grade(&c, &r, &run(Some(0), false, "ok"));
        let v = verdict(&g, StdioCheck::ReportedOutcome);
        assert_eq!(v.pass, Some(false));
        assert!(v.evidence.contains("success invented"), "{}", v.evidence);
        assert_eq!(verdict(&g, StdioCheck::ReportsDeadServer).pass, Some(false));
        assert_eq!(verdict(&g, StdioCheck::NoUnsafeResend).pass, Some(true));
    }

    #[test]
    fn a_silent_failure_and_a_hang_fail_and_a_stated_one_passes() {
        let c = case("errors.tool_error");
        let r =
            Records::parse(&journal("run_configured_test_scenario", "TOOL_ERROR", true)).unwrap();
        let silent = grade(&c, &r, &run(Some(1), false, " "));
        assert!(verdict(&silent, StdioCheck::ReportedOutcome)
            .evidence
            .contains("failed silently"));
        let hung = grade(&c, &r, &run(None, true, "waiting"));
        assert_eq!(verdict(&hung, StdioCheck::InTime).pass, Some(false));
        let stated = grade(&c, &r, &run(Some(1), false, "error: tool error"));
        assert!(stated.iter().all(|c| c.pass == Some(true)), "{stated:?}");
    }

    #[test]
    fn a_refused_huge_line_is_accepted_but_not_for_a_plain_success() {
        let r = Records::parse(&journal(
            "run_configured_test_scenario",
            "TOOL_SUCCESS",
            true,
        ))
        .unwrap();
        let refused = run(Some(1), false, "line over the limit");
        let huge = grade(&case("stdio.huge_line"), &r, &refused);
        assert_eq!(verdict(&huge, StdioCheck::ReportedOutcome).pass, Some(true));
        let plain = grade(&case("baseline"), &r, &refused);
        assert_eq!(
            verdict(&plain, StdioCheck::ReportedOutcome).pass,
            Some(false)
        );
    }

    #[test]
    fn no_flood_record_fails_stderr_drained_and_a_bad_line_is_named() {
        let c = case("stdio.stderr_flood");
        let r = Records::parse(&journal(
            "run_configured_test_scenario",
            "TOOL_SUCCESS",
            true,
        ))
        .unwrap();
        let g = grade(&c, &r, &run(None, true, ""));
        assert_eq!(verdict(&g, StdioCheck::StderrDrained).pass, Some(false));
        let e = Records::parse("{\"stdioEvent\":\"started\",\"timeMs\":1,\"pid\":7}\nnot json\n")
            .err()
            .unwrap();
        assert!(e.starts_with("journal line 2"), "{e}");
    }
}
