//! A task driven to its end (issue 25, item 2), against the real kitchen in-process: each
//! poll is an attempt, the server's `pollIntervalMs` sets the pace (checked on the kitchen's
//! journal, when each request arrived, not on timers of the test), input inside a task goes
//! through `tasks/update`, the client's deadline sends `tasks/cancel`, and a task's end is
//! judged as the same answer to `tools/call` would be.

mod common;

use std::time::Duration;

use mcp_triage_client::{CallOptions, CallRecord, Client, ClientOptions, Interrupt, Target};
use mcp_triage_core::Outcome;
use mcp_triage_kitchen::journal::JournalEntry;
use mcp_triage_kitchen::KitchenHandle;
use serde_json::{json, Value};

fn task_options() -> ClientOptions {
    let mut o = common::fast_options(common::MODERN);
    o.use_tasks = true;
    o
}

async fn call(url: &str, opts: ClientOptions, tool: &str, args: Value) -> CallRecord {
    call_with(url, opts, tool, args, CallOptions::default()).await
}

async fn call_with(
    url: &str,
    opts: ClientOptions,
    tool: &str,
    args: Value,
    co: CallOptions,
) -> CallRecord {
    let c = Client::connect(Target::url(url).unwrap(), opts)
        .await
        .unwrap();
    let r = c.call_tool(tool, args, co).await;
    c.close().await;
    r
}

/// The journal's requests of `method`, in arrival order.
fn journal(k: &KitchenHandle, method: &str) -> Vec<JournalEntry> {
    let mut v: Vec<JournalEntry> = k
        .kitchen()
        .journal_entries()
        .unwrap()
        .into_iter()
        .filter(|e| e.method.as_deref() == Some(method))
        .collect();
    v.sort_by_key(|e| e.received_ms);
    v
}

fn kinds(r: &CallRecord) -> Vec<&str> {
    r.attempts.iter().map(|a| a.kind.as_str()).collect()
}

fn count(r: &CallRecord, kind: &str) -> usize {
    r.attempts.iter().filter(|a| a.kind == kind).count()
}

fn warning<'a>(r: &'a CallRecord, code: &str) -> Option<&'a str> {
    r.warnings
        .iter()
        .find(|w| w.code == code)
        .map(|w| w.detail.as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_completing_after_several_polls_records_each_poll() {
    let k = common::kitchen().await;
    let url = format!(
        "{}/s/tasks.deferred/mcp?completeAfterMs=500&pollIntervalMs=100",
        k.base_url()
    );
    let r = call(
        &url,
        task_options(),
        "run_configured_test_scenario",
        json!({}),
    )
    .await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:#?}");
    let polls = journal(&k, "tasks/get");
    assert!(polls.len() >= 3, "{} polls", polls.len());
    // every tasks/get the kitchen received is an attempt of kind poll, and the call was sent once
    assert_eq!(count(&r, "poll"), polls.len(), "{:?}", kinds(&r));
    assert_eq!(journal(&k, "tools/call").len(), 1);
    assert_eq!(r.post_count, 1);
    assert_eq!(kinds(&r)[0], "call");
    let working = &r.attempts[1..r.attempts.len() - 1];
    assert!(working
        .iter()
        .all(|a| a.verdict.outcome == Outcome::TaskCreated
            && a.decision.as_ref().is_some_and(|d| d.action == "poll"
                && d.delay_ms == Some(100)
                && d.reason.contains("pollIntervalMs"))));
    let last = r.attempts.last().unwrap();
    assert_eq!(last.verdict.outcome, Outcome::ToolSuccess);
    assert_eq!(last.decision.as_ref().unwrap().action, "done");
}

/// The `tools/call` that created the task is not resent: its decision is the first poll,
/// with the wait the task's `pollIntervalMs` asks for (the driver's, not a default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_creating_call_is_followed_by_a_poll_at_the_tasks_pace() {
    let k = common::kitchen().await;
    let url = format!(
        "{}/s/tasks.deferred/mcp?completeAfterMs=200&pollIntervalMs=100",
        k.base_url()
    );
    let r = call(
        &url,
        task_options(),
        "run_configured_test_scenario",
        json!({}),
    )
    .await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:#?}");
    let created = &r.attempts[0];
    assert_eq!(
        (created.kind.as_str(), created.verdict.outcome),
        ("call", Outcome::TaskCreated)
    );
    let d = created.decision.as_ref().unwrap();
    assert_eq!(
        (d.action.as_str(), d.delay_ms),
        ("poll", Some(100)),
        "{d:?}"
    );
    assert!(
        d.reason.starts_with("the server created task "),
        "{}",
        d.reason
    );
    assert!(d.reason.contains("pollIntervalMs"), "{}", d.reason);
}

/// When the kitchen received the task's requests: the creating call, then each poll.
fn request_times(k: &KitchenHandle) -> Vec<u64> {
    let mut times: Vec<u64> = journal(k, "tools/call")
        .iter()
        .map(|e| e.received_ms)
        .collect();
    times.extend(journal(k, "tasks/get").iter().map(|e| e.received_ms));
    times
}

/// `pollIntervalMs` is honoured even above `max_poll_interval`, which bounds only the backoff
/// used when the server gives none: the kitchen received no two requests of the task closer
/// than the interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_poll_interval_is_never_undercut() {
    let k = common::kitchen().await;
    let url = format!(
        "{}/s/tasks.deferred/mcp?completeAfterMs=900&pollIntervalMs=300",
        k.base_url()
    );
    let mut o = task_options();
    o.max_poll_interval = Duration::from_millis(20);
    let r = call(&url, o, "run_configured_test_scenario", json!({})).await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:#?}");
    let times = request_times(&k);
    assert!(times.len() >= 3, "{times:?}");
    for w in times.windows(2) {
        // receivedMs is whole milliseconds: allow the one lost to truncation
        assert!(
            w[1] - w[0] >= 299,
            "polled faster than pollIntervalMs: {times:?}"
        );
    }
    // and not needlessly slowly: 900 ms of work at 300 ms a poll is at most 4 polls
    assert!(times.len() - 1 <= 4, "{times:?}");
    assert_eq!(count(&r, "poll"), times.len() - 1);
}

/// A server that suggests no interval gets an exponential backoff from 100 ms doubling up to
/// `max_poll_interval`: the gaps between the requests the kitchen received grow so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_poll_interval_the_client_backs_off() {
    let k = common::kitchen().await;
    let url = format!(
        "{}/s/tasks.deferred/mcp?completeAfterMs=1200&pollIntervalMs=0",
        k.base_url()
    );
    let mut o = task_options();
    o.max_poll_interval = Duration::from_millis(400);
    let r = call(&url, o, "run_configured_test_scenario", json!({})).await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:#?}");
    let times = request_times(&k);
    // 100, 200, 400, 400, ... ms after one another; 1.2 s of work takes 4 or 5 polls
    let floor = [100u64, 200, 400, 400, 400, 400];
    assert!((3..=6).contains(&(times.len() - 1)), "{times:?}");
    for (i, w) in times.windows(2).enumerate() {
        assert!(w[1] - w[0] >= floor[i] - 1, "gap {i} too short: {times:?}");
    }
    let reasons: Vec<&str> = r
        .attempts
        .iter()
        .filter_map(|a| a.decision.as_ref())
        .filter(|d| d.action == "poll")
        .map(|d| d.reason.as_str())
        .collect();
    assert!(reasons.iter().all(|x| x.contains("backoff")), "{reasons:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_inside_a_task_is_answered_by_tasks_update() {
    let k = common::kitchen().await;
    let url = format!("{}/mcp", k.base_url());
    let mut o = task_options();
    o.answers
        .add_pair(r#"confirm_delete={"action":"accept","content":{"confirm":true}}"#)
        .unwrap();
    let r = call(&url, o, "confirm_delete", json!({ "filename": "a.txt" })).await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:#?}");
    assert_eq!(r.message.as_deref(), Some("Deleted a.txt"));
    let updates = journal(&k, "tasks/update");
    assert_eq!(updates.len(), 1, "answered once, not on every poll");
    assert_eq!(count(&r, "update"), 1, "{:?}", kinds(&r));
    // the empty acknowledgement is not judged as a (broken) tool result
    let update = r.attempts.iter().find(|a| a.kind == "update").unwrap();
    assert_eq!(update.verdict.outcome, Outcome::TaskCreated, "{update:#?}");
    assert!(update.verdict.warnings.is_empty(), "{update:#?}");
    assert_eq!(r.rounds, 1);
    let asked = r
        .attempts
        .iter()
        .find(|a| a.verdict.outcome == Outcome::InputRequired)
        .expect("the poll that saw input_required");
    assert_eq!(asked.decision.as_ref().unwrap().action, "answer_input");
    // the update names the task in Mcp-Name (the extension's routing header)
    assert!(updates[0]
        .headers
        .get("mcp-name")
        .is_some_and(|n| n.starts_with("task-")));
    assert_eq!(journal(&k, "tools/call").len(), 1);
}

/// Nothing configured: the elicitation is declined, as a standalone request would be, so
/// the task can end; the record says it was refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unanswered_input_inside_a_task_is_declined() {
    let k = common::kitchen().await;
    let url = format!("{}/mcp", k.base_url());
    let r = call(
        &url,
        task_options(),
        "confirm_delete",
        json!({ "filename": "b" }),
    )
    .await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:#?}");
    assert_eq!(
        r.message.as_deref(),
        Some("Kept b: the deletion was not confirmed")
    );
    assert!(warning(&r, "INPUT_UNANSWERED").is_some_and(|w| w.contains("declined")));
    assert_eq!(journal(&k, "tasks/update").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_deadline_cancels_the_task() {
    let k = common::kitchen().await;
    let url = format!("{}/mcp", k.base_url());
    let mut o = task_options();
    o.task_timeout = Some(Duration::from_millis(700));
    let r = call(&url, o, "slow_compute", json!({ "seconds": 30 })).await;
    let cancels = journal(&k, "tasks/cancel");
    assert_eq!(cancels.len(), 1, "{:?}", kinds(&r));
    assert_eq!(count(&r, "cancel"), 1);
    let cancel = r.attempts.iter().find(|a| a.kind == "cancel").unwrap();
    assert_eq!(cancel.verdict.outcome, Outcome::TaskCreated, "{cancel:#?}");
    assert_eq!(r.outcome, Outcome::Timeout, "{r:#?}");
    let w = warning(&r, "TASK_CANCELLED").expect("TASK_CANCELLED");
    assert!(
        w.contains("cancelled by the client") && w.contains("deadline"),
        "{w}"
    );
    // the state read after the cancel shows the kitchen settled it
    let last = r.attempts.last().unwrap();
    assert_eq!(last.kind, "poll");
    assert_eq!(last.verdict.code, Some(-32800), "{last:#?}");
    // the cancel came at the deadline, not at the poll after it
    let created = journal(&k, "tools/call")[0].received_ms;
    let at = cancels[0].received_ms - created;
    assert!(
        (650..5000).contains(&at),
        "cancelled {at} ms after creation"
    );
    assert_eq!(journal(&k, "tools/call").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_cancels_the_task() {
    let k = common::kitchen().await;
    let url = format!("{}/mcp", k.base_url());
    let interrupt = Interrupt::new();
    let co = CallOptions {
        interrupt: Some(interrupt.clone()),
        ..CallOptions::default()
    };
    // no deadline of its own before the interrupt, however slow a loaded machine is
    let mut o = task_options();
    o.task_timeout = Some(Duration::from_secs(120));
    let call = tokio::spawn(async move {
        call_with(&url, o, "slow_compute", json!({ "seconds": 30 }), co).await
    });
    // interrupt once the task exists and has been polled (the journal says when)
    for _ in 0..1500 {
        if !journal(&k, "tasks/get").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        interrupt.request(),
        "a task is open: the call will cancel it"
    );
    let r = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the call returns after the interrupt")
        .unwrap();
    assert_eq!(journal(&k, "tasks/cancel").len(), 1);
    let w = warning(&r, "TASK_CANCELLED").expect("TASK_CANCELLED");
    assert!(w.contains("SIGINT"), "{w}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_is_its_jsonrpc_error_and_is_error_a_tool_error() {
    let k = common::kitchen().await;
    let url = format!("{}/mcp", k.base_url());
    let r = call(&url, task_options(), "protocol_error_job", json!({})).await;
    assert_eq!(r.outcome, Outcome::JsonrpcError, "{r:#?}");
    assert_eq!(r.jsonrpc.error_code, Some(-32603));
    let protocol_polls = journal(&k, "tasks/get").len();
    assert_eq!(count(&r, "poll"), protocol_polls);

    let r = call(&url, task_options(), "failing_job", json!({})).await;
    assert_eq!(r.outcome, Outcome::ToolError, "{r:#?}");
    assert!(r.message.as_deref().unwrap().contains("failed on purpose"));
    // ~1 s of work at 250 ms a poll: the working polls are recorded too
    assert!(count(&r, "poll") >= 2, "{:?}", kinds(&r));
    assert_eq!(
        count(&r, "poll"),
        journal(&k, "tasks/get").len() - protocol_polls
    );
    assert_eq!(journal(&k, "tools/call").len(), 2);
}

/// Many polls keep a bounded record: the first poll, the latest ones and the end stay, the
/// elided working polls are counted, and `httpStatuses` matches the kept attempts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_polls_keep_a_bounded_record() {
    let k = common::kitchen().await;
    let url = format!(
        "{}/s/tasks.deferred/mcp?completeAfterMs=400&pollIntervalMs=20",
        k.base_url()
    );
    let mut o = task_options();
    o.max_task_attempts = 4;
    let r = call(&url, o, "run_configured_test_scenario", json!({})).await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:#?}");
    let sent = journal(&k, "tasks/get").len();
    assert!(sent > 6, "{sent}");
    assert_eq!(count(&r, "poll"), 4, "{:?}", kinds(&r));
    let w = warning(&r, "TASK_POLLS_ELIDED").expect("TASK_POLLS_ELIDED");
    assert!(
        w.starts_with(&format!("{} working poll(s)", sent - 4)),
        "{w}"
    );
    assert_eq!(r.http_statuses.len(), r.attempts.len());
    assert_eq!(
        r.attempts.last().unwrap().verdict.outcome,
        Outcome::ToolSuccess
    );
}
