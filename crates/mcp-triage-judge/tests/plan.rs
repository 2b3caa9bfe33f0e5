//! Every kitchen scenario, both eras where it has both, through the real client against an
//! in-process kitchen: the final outcome and the attempt count the plan derives from the
//! scenario's documentation, plus details of the interesting rows.

use std::collections::BTreeSet;
use std::time::Duration;

use mcp_triage_client::{CallRecord, ClientOptions};
use mcp_triage_core::Outcome;
use mcp_triage_judge::plan::{plan, run_row, PlanEra, RowResult};
use mcp_triage_kitchen::{start, KitchenOptions};

/// Client options with short waits, so resends do not slow the run.
fn fast_options() -> ClientOptions {
    let mut o = ClientOptions {
        timeout: Duration::from_secs(5),
        jitter_seed: Some(7),
        ..ClientOptions::default()
    };
    o.retry.backoff_base_ms = 2;
    o.retry.max_wait_ms = 3_000;
    o
}

fn statuses(r: &CallRecord) -> Vec<u16> {
    r.attempts.iter().filter_map(|a| a.status).collect()
}

fn actions(r: &CallRecord) -> Vec<String> {
    r.attempts
        .iter()
        .map(|a| {
            a.decision
                .as_ref()
                .map_or("-".into(), |d| d.action.to_string())
        })
        .collect()
}

async fn run_plan() -> Vec<RowResult> {
    let k = start("127.0.0.1:0".parse().unwrap(), KitchenOptions::default())
        .await
        .expect("kitchen starts");
    let base = k.base_url();
    let opts = fast_options();
    let mut tasks = Vec::new();
    for (i, row) in plan().into_iter().enumerate() {
        let base = base.clone();
        let opts = opts.clone();
        tasks.push(tokio::spawn(async move {
            run_row(&base, &row, &format!("t{i}"), &opts).await
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    k.shutdown().await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_matches_its_documented_outcome() {
    let results = run_plan().await;
    let mut failures = Vec::new();
    for r in &results {
        if !r.matches {
            failures.push(format!(
                "{} [{}] {}: expected {} ({:?} attempts), got {} with {} attempts: {}",
                r.row.scenario,
                r.row.era.as_str(),
                r.row.variant,
                r.row.expect,
                r.row.attempts,
                r.record.outcome,
                r.record.attempts.len(),
                serde_json::to_string(&r.record).unwrap()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} rows differ:\n{}",
        failures.len(),
        failures.join("\n\n")
    );

    // Coverage: every registered scenario, and both eras for each.
    let covered: BTreeSet<(&str, &str)> = results
        .iter()
        .map(|r| (r.row.scenario, r.row.era.as_str()))
        .collect();
    for s in mcp_triage_kitchen::REGISTRY {
        let id = s.info().id;
        for era in [PlanEra::Modern, PlanEra::Legacy] {
            assert!(
                covered.contains(&(id, era.as_str())),
                "{id} not covered in {}",
                era.as_str()
            );
        }
    }

    let find = |scenario: &str, era: PlanEra, variant: &str| {
        results
            .iter()
            .find(|r| r.row.scenario == scenario && r.row.era == era && r.row.variant == variant)
            .unwrap_or_else(|| panic!("{scenario} {variant}"))
    };
    // Retry decisions are recorded with reasons.
    let chaos = &find("chaos.mix", PlanEra::Modern, "read_counter, all 503").record;
    assert_eq!(statuses(chaos), vec![503, 503, 503]);
    assert_eq!(actions(chaos), vec!["resend", "resend", "give_up"]);
    assert_eq!(chaos.retry_origin, mcp_triage_client::RetryOrigin::Sdk);
    let unsafe_close = &find("errors.connection_close", PlanEra::Legacy, "").record;
    let reason = &unsafe_close.attempts[0].decision.as_ref().unwrap().reason;
    assert!(reason.contains("could run it twice"), "{reason}");
    // 403 names the protected-resource metadata.
    let scope = &find("auth.insufficient_scope", PlanEra::Modern, "").record;
    assert!(scope.attempts[0]
        .decision
        .as_ref()
        .unwrap()
        .reason
        .contains("oauth-protected-resource"));
    // ... and the metadata document (same origin) was read.
    let auth = scope
        .warnings
        .iter()
        .find(|w| w.code == "AUTH_REQUIRED")
        .expect("AUTH_REQUIRED");
    assert!(
        auth.detail.contains("insufficient_scope"),
        "{}",
        auth.detail
    );
    assert!(
        auth.detail.contains("auth.kitchen.invalid"),
        "{}",
        auth.detail
    );
    // MRTR: a new id per round and the answer went through.
    let mrtr = &find("compat.sdk_v2", PlanEra::Modern, "MRTR round").record;
    assert_ne!(mrtr.attempts[0].id, mrtr.attempts[1].id);
    assert_eq!(mrtr.rounds, 1);
    assert!(
        mrtr.message.as_deref().unwrap_or("").contains("mrtr"),
        "{:?}",
        mrtr.message
    );
    // Legacy stream resumption and session repair.
    let primed = &find("sse.priming_then_close", PlanEra::Legacy, "").record;
    assert_eq!(primed.attempts[1].kind, "resume");
    let expired = &find("session.expire", PlanEra::Legacy, "").record;
    assert_eq!(actions(expired)[0], "reinitialize");
    assert_eq!(statuses(expired), vec![404, 200]);
    // Legacy elicitation answered on the stream counts as a round.
    assert_eq!(
        find("sse.server_request", PlanEra::Legacy, "")
            .record
            .rounds,
        1
    );
    // x-mcp-header parameters reached the server as Mcp-Param-Region.
    let region = &find("compat.sdk_v2", PlanEra::Modern, "x-mcp-header").record;
    assert!(
        region
            .message
            .as_deref()
            .unwrap_or("")
            .contains("\"matches\":true"),
        "{:?}",
        region.message
    );
    draft_rows_read_the_declared_failure(&results);
    // Every record validates against the published schema.
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../docs/record.schema.json")).unwrap();
    let schema = jsonschema::validator_for(&schema).unwrap();
    for r in &results {
        let doc = serde_json::to_value(&r.record).unwrap();
        let errors: Vec<String> = schema.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", r.row.scenario);
        assert_ne!(r.record.outcome, Outcome::LimitExceeded);
    }
}

/// The row of `scenario` in `era` with `variant`.
fn row_of<'a>(
    results: &'a [RowResult],
    scenario: &str,
    era: PlanEra,
    variant: &str,
) -> &'a RowResult {
    results
        .iter()
        .find(|r| r.row.scenario == scenario && r.row.era == era && r.row.variant == variant)
        .unwrap_or_else(|| panic!("{scenario} {variant}"))
}

/// Issue 45, draft failure classes, through the real client against the kitchen.
fn draft_rows_read_the_declared_failure(results: &[RowResult]) {
    // Issue 45, draft failure classes: with --draft tool-failure a declared non-retryable
    // failure of a read-only tool is not resent and the reason names the class; a declared
    // retryable one waits its retryNotBefore and is resent.
    let tf = "errors.tool_failure";
    let kept = &row_of(
        results,
        tf,
        PlanEra::Legacy,
        "declared non-retryable, --draft tool-failure",
    )
    .record;
    let reason = &kept.attempts[0].decision.as_ref().unwrap().reason;
    assert!(
        reason.contains("declared a reliability failure (code retryable_transient_error")
            && reason.contains("retryable false: never resent"),
        "{reason}"
    );
    let declared = kept.attempts[0]
        .verdict
        .tool_failure
        .as_ref()
        .expect("read");
    assert!(declared
        .correlation_id
        .starts_with("kitchen-errors.tool_failure-"));
    let resent = &row_of(
        results,
        tf,
        PlanEra::Modern,
        "declared retryable, --draft tool-failure",
    )
    .record;
    assert_eq!(actions(resent), vec!["resend", "done"]);
    let d = resent.attempts[0].decision.as_ref().unwrap();
    assert!(d.reason.contains("retryNotBefore"), "{}", d.reason);
    assert!(d.delay_ms.is_some_and(|ms| ms <= 100), "{d:?}");
    // Without the draft the same failure is any tool error: nothing is read.
    let plain = &row_of(results, tf, PlanEra::Modern, "").record;
    assert!(plain.attempts[0].verdict.tool_failure.is_none());
    let unflagged = &row_of(results, tf, PlanEra::Legacy, "wrong but valid, no isError").record;
    assert!(
        unflagged.attempts[0]
            .verdict
            .warnings
            .iter()
            .any(|w| w.code == "TOOL_FAILURE_WITHOUT_ERROR"),
        "{:?}",
        unflagged.attempts[0].verdict
    );
    // Draft SEP-2145: an unlisted tool answered as an isError result is an unknown tool.
    let unknown = &row_of(
        results,
        "baseline",
        PlanEra::Modern,
        "unknown tool as isError, --draft all",
    )
    .record;
    assert_eq!(
        unknown.attempts[0].verdict.tool_error_kind,
        Some(mcp_triage_core::ToolErrorKind::UnknownTool)
    );
}
