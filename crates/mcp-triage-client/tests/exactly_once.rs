//! Exactly-once under chaos: 1,000 `increment_counter` calls through `chaos.mix` — 30 % of
//! requests fail: 15 % empty 503s, 7.5 % SSE streams cut AFTER the tool ran (`sse_cut`: the
//! increment happened, the response is lost, ended cleanly or broken mid-event) and 7.5 %
//! connection resets before it ran — never execute a logical call twice, because the policy
//! does not resend a tool that may have run and is neither read-only nor idempotent (a 503 is
//! not resent either: the policy cannot tell it from a gateway that forwarded the call).
//! 1,000 `read_counter` calls under the same faults succeed in ≥ 97 % (three tries at 30 %:
//! 1 − 0.3³ = 97.3 %). Half of each run is served with `responseMode=sse`, half with
//! `responseMode=json` (the cuts are SSE either way).

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use mcp_triage_client::{CallOptions, Client, Target};
use mcp_triage_core::Outcome;
use serde_json::{json, Value};

const CALLS: usize = 1000;
const RATES: &str = r#"{"http_503":0.15,"sse_cut":0.075,"connection_close":0.075,"delay":0.05}"#;
/// Response mode and seed of each half: different seeds, so the halves are independent
/// samples of the fault draws rather than the same sequence twice.
const MODES: [(&str, u64); 2] = [("sse", 11), ("json", 12)];

fn url(base: &str, (mode, seed): (&str, u64), tag: &str) -> String {
    let rates: String = RATES
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    format!(
        "{base}/s/chaos.mix/mcp?seed={seed}&delayMs=1&responseMode={mode}&rates={rates}&instance={tag}-{mode}"
    )
}

/// `state.counter` of the instance whose key contains `tag`.
fn counter(k: &mcp_triage_kitchen::KitchenHandle, tag: &str) -> i64 {
    k.kitchen()
        .counters()
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["instance"].as_str().is_some_and(|s| s.contains(tag)))
        .map(|i| i["state"]["counter"].as_i64().unwrap())
        .unwrap()
}

async fn connect(url: &str, opts: mcp_triage_client::ClientOptions) -> Arc<Client> {
    let c = Client::connect(Target::url(url).unwrap(), opts)
        .await
        .unwrap();
    // The tool list may itself meet a fault; read it before the calls so that hints are known.
    let mut listed = false;
    for _ in 0..20 {
        if c.list_tools().await.is_ok() {
            listed = true;
            break;
        }
    }
    assert!(listed, "tools/list never got through");
    Arc::new(c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_logical_call_runs_twice_and_reads_get_through() {
    let k = common::kitchen().await;
    let mut opts = common::fast_options(common::MODERN);
    opts.retry.backoff_base_ms = 1;

    // increment_counter: each logical call carries its own callId, so its journal entries can
    // be told apart by argumentsHash. 4 workers per response mode, 500 calls per mode.
    let mut handles = Vec::new();
    for (m, mode) in MODES.into_iter().enumerate() {
        let inc = connect(&url(&k.base_url(), mode, "inc"), opts.clone()).await;
        for worker in 0..4 {
            let c = inc.clone();
            handles.push(tokio::spawn(async move {
                let mut recs = Vec::new();
                for n in (m * CALLS / 2 + worker..(m + 1) * CALLS / 2).step_by(4) {
                    recs.push(
                        c.call_tool(
                            "increment_counter",
                            json!({ "by": 1, "callId": n }),
                            CallOptions::default(),
                        )
                        .await,
                    );
                }
                recs
            }));
        }
    }
    let mut records = Vec::new();
    for h in handles {
        records.extend(h.await.unwrap());
    }
    assert_eq!(records.len(), CALLS);
    let successes = records
        .iter()
        .filter(|r| r.outcome == Outcome::ToolSuccess)
        .count();
    let mut failures_seen = 0;
    let mut lost_after_send = 0;
    for r in &records {
        let posts = r.attempts.iter().filter(|a| a.kind == "call").count();
        assert_eq!(
            posts,
            1,
            "increment_counter was resent: {}",
            serde_json::to_string(r).unwrap()
        );
        if r.outcome != Outcome::ToolSuccess {
            failures_seen += 1;
            lost_after_send += usize::from(r.outcome == Outcome::StreamIncomplete);
            let d = r.attempts[0].decision.as_ref().unwrap();
            assert_eq!(d.action, "give_up", "{d:?}");
        }
    }
    assert!(
        failures_seen > 200,
        "the faults must actually have hit ({failures_seen})"
    );
    assert!(
        lost_after_send > 30,
        "streams were cut after the tool ran ({lost_after_send})"
    );
    // The kitchen's journal: one tools/call per logical call (argumentsHash), never two, and
    // the tool body ran at most once per logical call.
    let mut per_call: HashMap<String, (usize, usize)> = HashMap::new();
    for e in k.kitchen().journal() {
        if e["method"] == "tools/call" && e["tool"] == "increment_counter" {
            let slot = per_call
                .entry(e["argumentsHash"].as_str().unwrap_or("").to_string())
                .or_default();
            slot.0 += 1;
            slot.1 += usize::from(e["executed"] == Value::Bool(true));
        }
    }
    assert_eq!(
        per_call.len(),
        CALLS,
        "every logical call reached the kitchen once"
    );
    assert!(
        per_call.values().all(|&(n, _)| n == 1),
        "a logical call was sent twice"
    );
    assert!(
        per_call.values().all(|&(_, x)| x <= 1),
        "a logical call was executed twice"
    );
    let executed: usize = per_call.values().map(|&(_, x)| x).sum();
    // The side effect: one increment per executed call — the successes plus the calls whose
    // response was cut after they ran (which the client rightly did not resend).
    let total = counter(&k, "inc-sse") + counter(&k, "inc-json");
    assert_eq!(total as usize, executed);
    assert_eq!(
        executed,
        successes + lost_after_send,
        "exactly the successes and the cuts after execution ran"
    );
    eprintln!(
        "increments: {successes} of {CALLS} succeeded, {executed} executed, {lost_after_send} lost after running (not resent)"
    );

    // read_counter: read-only, trusted on loopback, so transient faults are resent — a stream
    // cut after the read ran included.
    // Sequential, so that the kitchen's per-POST draws meet the calls in one fixed order and
    // the count is reproducible. With seeds 11 and 12 it is 970 of 1000 — right at the bound,
    // as expected of a 97.3 % mean with a standard deviation of about 0.5 points.
    let (mut ok, mut resent) = (0, 0);
    for mode in MODES {
        let read = connect(&url(&k.base_url(), mode, "read"), opts.clone()).await;
        for _ in 0..CALLS / 2 {
            let r = read
                .call_tool("read_counter", json!({}), CallOptions::default())
                .await;
            ok += usize::from(r.outcome == Outcome::ToolSuccess);
            resent += usize::from(r.attempts.len() > 1);
            assert!(r.attempts.len() <= 3, "at most 2 resends");
        }
    }
    eprintln!("reads: {ok} of {CALLS} succeeded, {resent} needed a resend");
    assert!(resent > 200, "reads were resent ({resent})");
    assert!(
        ok * 100 >= CALLS * 97,
        "only {ok} of {CALLS} reads succeeded"
    );
    k.shutdown().await;
}
