mod common;
use common::*;

#[tokio::test]
async fn baseline_both_eras() {
    let k = kitchen().await;
    for era in [MODERN, LEGACY, None] {
        let r = run(&k.scenario_url("baseline"), fast_options(era)).await;
        println!("{}", serde_json::to_string_pretty(&r).unwrap());
        assert_eq!(r.outcome, mcp_triage_core::Outcome::ToolSuccess, "{era:?}");
    }
    k.shutdown().await;
}
