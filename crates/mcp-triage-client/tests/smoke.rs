//! The shortest path: baseline succeeds in the modern, legacy and auto eras.

mod common;
use common::*;

#[tokio::test]
async fn baseline_both_eras() {
    let k = kitchen().await;
    for era in [MODERN, LEGACY, None] {
        let r = run(&k.scenario_url("baseline"), fast_options(era)).await;
        assert_eq!(r.outcome, mcp_triage_core::Outcome::ToolSuccess, "{era:?}");
    }
    k.shutdown().await;
}
