//! MRTR input rounds against the kitchen's two-round tool
//! (`test_input_required_result_multi_round`): each `input_required` is answered in a new round
//! up to `max_rounds`, and the call gives up with the bound named once the rounds ran out; with
//! no answer to give, it gives up saying what was not answered. The decisions' actions and
//! reasons are asserted word for word: records and journals must not change with where in the
//! code these decisions are made.

mod common;

use mcp_triage_client::ClientOptions;
use mcp_triage_core::{CallRecord, Outcome};
use serde_json::json;

const TOOL: &str = "test_input_required_result_multi_round";

fn answered(max_rounds: u32) -> ClientOptions {
    let mut o = common::fast_options(common::MODERN);
    o.max_rounds = max_rounds;
    o.answers
        .add_pair(r#"step1={"action":"accept","content":{"name":"Ada"}}"#)
        .unwrap();
    o.answers
        .add_pair(r#"step2={"action":"accept","content":{"color":"green"}}"#)
        .unwrap();
    o
}

async fn call(o: ClientOptions) -> CallRecord {
    let k = common::kitchen().await;
    common::call(&format!("{}/mcp", k.base_url()), o, TOOL, json!({})).await
}

fn reason(r: &CallRecord, idx: usize) -> &str {
    &r.attempts[idx].decision.as_ref().unwrap().reason
}

#[tokio::test]
async fn each_round_is_answered_while_the_policy_allows() {
    let r = call(answered(8)).await;
    assert_eq!(r.outcome, Outcome::ToolSuccess, "{r:#?}");
    assert_eq!(
        common::actions(&r),
        ["answer_input", "answer_input", "done"]
    );
    assert_eq!(r.rounds, 2);
    for i in 0..2 {
        assert_eq!(
            reason(&r, i),
            "the server asked for input; resending with a new id, the answers and the exact requestState"
        );
        assert_eq!(r.attempts[i].decision.as_ref().unwrap().delay_ms, None);
    }
    let kinds: Vec<&str> = r.attempts.iter().map(|a| a.kind.as_str()).collect();
    assert_eq!(kinds, ["call", "input_round", "input_round"]);
}

#[tokio::test]
async fn the_call_gives_up_when_the_rounds_ran_out() {
    let r = call(answered(1)).await;
    assert_eq!(r.outcome, Outcome::InputRequired, "{r:#?}");
    assert_eq!(common::actions(&r), ["answer_input", "give_up"]);
    assert_eq!(
        reason(&r, 1),
        "input still required after 1 round(s) (max-rounds 1)"
    );
    let r = call(answered(0)).await;
    assert_eq!(common::actions(&r), ["give_up"]);
    assert_eq!(
        reason(&r, 0),
        "input still required after 0 round(s) (max-rounds 0)"
    );
}

#[tokio::test]
async fn without_answers_the_call_gives_up_saying_what_was_asked() {
    let r = call(common::fast_options(common::MODERN)).await;
    assert_eq!(r.outcome, Outcome::InputRequired, "{r:#?}");
    assert_eq!(common::actions(&r), ["give_up"]);
    assert!(reason(&r, 0).contains("step1"), "{}", reason(&r, 0));
    assert!(
        r.warnings.iter().any(|w| w.code == "INPUT_UNANSWERED"),
        "{:?}",
        r.warnings
    );
    assert_eq!(r.rounds, 0);
}
