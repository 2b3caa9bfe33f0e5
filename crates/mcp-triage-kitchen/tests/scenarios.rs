//! One test (at least) per registered scenario, over raw HTTP: statuses, headers, bytes,
//! and Cakewalk's counting rules.

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::*;
use mcp_triage_kitchen::scenarios::{self, Params, REGISTRY};
use serde_json::{json, Value};

fn run(id: i64) -> Value {
    call_msg(
        id,
        "run_configured_test_scenario",
        json!({ "message": "hi" }),
    )
}

#[test]
fn registry_ids_are_unique_defaults_valid_and_documented() {
    let mut seen = HashSet::new();
    for s in REGISTRY {
        let i = s.info();
        assert!(seen.insert(i.id), "duplicate id {}", i.id);
        assert!(
            !i.summary.is_empty() && !i.docs.is_empty(),
            "{} documented",
            i.id
        );
        mcp_triage_kitchen::state::check_selection(i.id, &json!({}))
            .unwrap_or_else(|e| panic!("{}: {e}", i.id));
        let j = scenarios::info_json(i);
        assert!(j["expectedOutcome"]
            .as_str()
            .unwrap()
            .chars()
            .all(|c| c.is_ascii_uppercase() || c == '_'));
        for p in i.params {
            assert!(
                !p.default_value().is_null(),
                "{}.{} has a default",
                i.id,
                p.name
            );
        }
    }
    for id in [
        "baseline",
        "errors.http_status_sequence",
        "errors.jsonrpc_error",
        "errors.tool_error",
        "elicitation.approval",
        "compat.sdk_v2",
        "timeout.uncooperative_hang",
        "timeout.cooperative_deadline",
        "timeout.late_response",
        "timeout.init_hang",
        "errors.connection_close",
        "errors.malformed_payload",
        "errors.http_status_per_method",
        "errors.non_compliant_envelope",
        "auth.token_lifecycle",
        "catalog.pagination",
        "catalog.facet_unavailable",
        "catalog.mutation",
        "elicitation.decline",
        "elicitation.url_mode",
    ] {
        assert!(
            scenarios::find(id).is_some(),
            "Cakewalk scenario {id} registered"
        );
    }
    let p = Params::resolve(
        scenarios::find("errors.jsonrpc_error").unwrap().info(),
        &json!({}),
    );
    assert_eq!(
        (p.i64("code"), p.str("message"), p.u64("onInvocation")),
        (-32602, "Invalid params", 1)
    );
}

/// The acceptance rule "every scenario has a raw-HTTP integration test", kept true as
/// scenarios are added: each registered id is addressed through its per-URL endpoint somewhere
/// in this file.
#[test]
fn every_registered_scenario_is_exercised_here() {
    let src = include_str!("scenarios.rs");
    for s in REGISTRY {
        let url = format!("/s/{}/mcp", s.info().id);
        assert!(src.contains(&url), "no test requests {url}");
    }
}

#[tokio::test]
async fn baseline_success_and_delay() {
    let k = kitchen().await;
    let a = k.local_addr();
    let sid = legacy_session(a, "/s/baseline/mcp?slowReportDelayMs=150", json!({})).await;
    let t = Instant::now();
    let r = post(
        a,
        "/s/baseline/mcp?slowReportDelayMs=150",
        Some(&sid),
        &run(2),
    )
    .await
    .unwrap();
    assert!(t.elapsed() >= Duration::from_millis(150));
    assert_eq!(r.header("x-kitchen-scenario"), Some("baseline"));
    assert_eq!(
        tool_text(&r.json()),
        json!({"scenarioId":"baseline","invocation":1,"delayMs":150,"message":"hi"})
    );
    k.shutdown().await;
}

#[tokio::test]
async fn http_status_sequence_counts_every_post_and_last_code_repeats() {
    let k = kitchen().await;
    let a = k.local_addr();
    // Default [503,200] with a tools/list first: POST 1 (tools/list, no session) gets 503, empty body.
    let p = "/s/errors.http_status_sequence/mcp";
    let r = post(
        a,
        p,
        None,
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 503);
    assert!(r.body.is_empty());
    assert_eq!(
        r.header("x-kitchen-scenario"),
        Some("errors.http_status_sequence")
    );
    // POST 2 (initialize), 3 (initialized), 4 (call) pass: 200 repeats.
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(a, p, Some(&sid), &run(2)).await.unwrap();
    assert_eq!(r.status, 200);
    // [500,429]: initialize gets 500, then 429 forever (notifications too).
    let p = "/s/errors.http_status_sequence/mcp?statusCodes=[500,429]";
    for expected in [500, 429, 429, 429] {
        let r = post(a, p, None, &initialize_msg(1, "2025-11-25", json!({})))
            .await
            .unwrap();
        assert_eq!(r.status, expected);
    }
    let key = "errors.http_status_sequence{\"statusCodes\":[500,429]}";
    assert_eq!(k.kitchen().counter(key, "http_request"), 4);
    k.shutdown().await;
}

#[tokio::test]
async fn jsonrpc_error_fires_once_on_the_configured_call() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/errors.jsonrpc_error/mcp";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(
        a,
        p,
        Some(&sid),
        &call_msg(7, "test_simple_text", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(
        r.text(),
        r#"{"error":{"code":-32602,"message":"Invalid params"},"id":7,"jsonrpc":"2.0"}"#
    );
    let r = post(a, p, Some(&sid), &run(8)).await.unwrap();
    assert!(r.json().get("result").is_some());
    k.shutdown().await;
}

#[tokio::test]
async fn tool_error_then_success() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/errors.tool_error/mcp?onInvocation=2";
    let sid = legacy_session(a, p, json!({})).await;
    let first = post(a, p, Some(&sid), &run(2)).await.unwrap().json();
    assert!(first["result"].get("isError").is_none());
    let second = post(a, p, Some(&sid), &run(3)).await.unwrap().json();
    assert_eq!(second["result"]["isError"], true);
    assert_eq!(
        tool_text(&second),
        json!({"scenarioId":"errors.tool_error","invocation":2,"errorMessage":"Tool-side failure","message":"hi"})
    );
    k.shutdown().await;
}

#[tokio::test]
async fn elicitation_approval_modern_mrtr_with_signed_state() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/elicitation.approval/mcp";
    let r = modern(
        a,
        p,
        1,
        "tools/call",
        json!({"name":"run_configured_test_scenario"}),
    )
    .await
    .unwrap()
    .json();
    assert_eq!(r["result"]["resultType"], "input_required");
    let req = &r["result"]["inputRequests"]["elicitation"];
    assert_eq!(req["method"], "elicitation/create");
    assert_eq!(
        req["params"]["requestedSchema"]["required"],
        json!(["reason"])
    );
    let state = r["result"]["requestState"].as_str().unwrap().to_string();
    // Tampered state is rejected.
    let bad = modern(
        a,
        p,
        2,
        "tools/call",
        json!({"name":"run_configured_test_scenario","requestState": format!("{state}x"),
        "inputResponses": {"elicitation": {"action":"accept","content":{"reason":"ok"}}}}),
    )
    .await
    .unwrap()
    .json();
    assert_eq!(bad["error"]["code"], -32602);
    let ok = modern(
        a,
        p,
        3,
        "tools/call",
        json!({"name":"run_configured_test_scenario","requestState": state,
        "inputResponses": {"elicitation": {"action":"accept","content":{"reason":"ship it"}}}}),
    )
    .await
    .unwrap()
    .json();
    assert_eq!(ok["result"]["resultType"], "complete");
    let t = tool_text(&ok);
    assert_eq!(
        (t["elicitationOutcome"].clone(), t["approvalReason"].clone()),
        (json!("accepted"), json!("ship it"))
    );
    k.shutdown().await;
}

#[tokio::test]
async fn elicitation_approval_legacy_round_trip_and_unsupported() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/elicitation.approval/mcp";
    let sid = legacy_session(a, p, json!({"elicitation": {}})).await;
    let sid2 = sid.clone();
    let call = tokio::spawn(async move { post(a, p, Some(&sid2), &run(2)).await.unwrap() });
    // Answer the server's request (id kitchen-1) by POST.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let ans = post(
        a,
        p,
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":"kitchen-1","result":{"action":"decline"}}),
    )
    .await
    .unwrap();
    assert_eq!(ans.status, 202);
    let r = tokio::time::timeout(STEP, call).await.unwrap().unwrap();
    let msgs = r.sse_messages();
    assert!(msgs
        .iter()
        .any(|m| m["method"] == "elicitation/create" && m["id"] == "kitchen-1"));
    let fin = r.rpc();
    assert_eq!(fin["result"]["isError"], true);
    assert_eq!(tool_text(&fin)["elicitationOutcome"], "declined");
    // No capability → unsupported.
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(a, p, Some(&sid), &run(3)).await.unwrap().rpc();
    assert_eq!(tool_text(&r)["elicitationOutcome"], "unsupported");
    k.shutdown().await;
}

#[tokio::test]
async fn elicitation_decline_and_url_mode_shapes() {
    let k = kitchen().await;
    let a = k.local_addr();
    let r = modern(
        a,
        "/s/elicitation.decline/mcp",
        1,
        "tools/call",
        json!({"name":"run_configured_test_scenario"}),
    )
    .await
    .unwrap()
    .json();
    assert_eq!(
        r["result"]["inputRequests"]["elicitation"]["params"]["requestedSchema"]["properties"]
            ["confirm"]["maxLength"],
        32
    );
    let st = r["result"]["requestState"].clone();
    let d = modern(
        a,
        "/s/elicitation.decline/mcp",
        2,
        "tools/call",
        json!({"name":"run_configured_test_scenario","requestState": st,
        "inputResponses": {"elicitation": {"action":"cancel"}}}),
    )
    .await
    .unwrap()
    .json();
    assert_eq!(d["result"]["isError"], true);
    assert_eq!(tool_text(&d)["elicitationOutcome"], "cancelled");
    let u = modern(
        a,
        "/s/elicitation.url_mode/mcp",
        3,
        "tools/call",
        json!({"name":"run_configured_test_scenario"}),
    )
    .await
    .unwrap()
    .json();
    let params = &u["result"]["inputRequests"]["elicitation"]["params"];
    assert_eq!(
        (params["mode"].clone(), params["url"].clone()),
        (json!("url"), json!("https://example.com/approve"))
    );
    k.shutdown().await;
}

#[tokio::test]
async fn compat_sdk_v2_tools() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/compat.sdk_v2/mcp";
    let r = modern(
        a,
        p,
        1,
        "tools/call",
        json!({"name":"simulate_ticket_close_mrtr","arguments":{"ticketId":42}}),
    )
    .await
    .unwrap()
    .json();
    assert_eq!(r["result"]["resultType"], "input_required");
    assert!(
        r["result"]["inputRequests"]["closeReason"]["params"]["message"]
            .as_str()
            .unwrap()
            .contains("'42'")
    );
    let st = r["result"]["requestState"].clone();
    let r = modern(
        a,
        p,
        2,
        "tools/call",
        json!({"name":"simulate_ticket_close_mrtr","arguments":{"ticketId":42},"requestState": st,
        "inputResponses": {"closeReason": {"action":"accept","content":{"closeReason":"done"}}}}),
    )
    .await
    .unwrap()
    .json();
    let t = tool_text(&r);
    assert_eq!(
        (t["path"].clone(), t["compatCell"].clone()),
        (json!("mrtr"), json!("2026-07-28/stateless/native"))
    );
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(
        a,
        p,
        Some(&sid),
        &call_msg(3, "simulate_ticket_close_mrtr", json!({"ticketId": 1})),
    )
    .await
    .unwrap()
    .json();
    assert_eq!(tool_text(&r)["path"], "guidance");
    let r = post(
        a,
        p,
        Some(&sid),
        &call_msg(4, "show_negotiated_mcp_protocol", json!({})),
    )
    .await
    .unwrap()
    .json();
    assert_eq!(tool_text(&r)["negotiatedProtocolVersion"], "2025-11-25");
    // x-mcp-header promotion: a missing/mismatched Mcp-Param-Region is a HeaderMismatch.
    let r = modern(a, p, 5, "tools/call", json!({"name":"verify_order_region_param_header","arguments":{"region":"eu","orderId":"o1"}})).await.unwrap();
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, json!(-32020))
    );
    let body = json!({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"verify_order_region_param_header","arguments":{"region":"eu","orderId":"o1"},"_meta": meta()}}).to_string();
    let r = send(
        a,
        "POST",
        p,
        &[
            ACCEPT,
            CT,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "verify_order_region_param_header"),
            ("mcp-param-region", "eu"),
        ],
        Some(&body),
    )
    .await
    .unwrap();
    assert_eq!(tool_text(&r.json())["matches"], true);
    k.shutdown().await;
}

/// `timeout.progress_keepalive`: with a progress token, progress to that token every
/// `intervalMs` until the result at `totalMs` (rising values, `total` named); without one, the
/// same wait in silence.
#[tokio::test]
async fn progress_flows_until_the_result_when_asked_for() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/timeout.progress_keepalive/mcp?totalMs=300&intervalMs=100";
    let sid = legacy_session(a, p, json!({})).await;
    let mut asked = run(2);
    asked["params"]["_meta"] = json!({ "progressToken": "tok-1" });
    let t = Instant::now();
    let r = post(a, p, Some(&sid), &asked).await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(300));
    let msgs = r.sse_messages();
    let progress: Vec<&Value> = msgs
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 2, "{msgs:?}");
    assert!(progress
        .iter()
        .all(|m| m["params"]["progressToken"] == "tok-1"));
    assert_eq!(progress[0]["params"]["progress"], 100.0);
    assert_eq!(progress[1]["params"]["progress"], 200.0);
    assert_eq!(progress[1]["params"]["total"], 300.0);
    assert_eq!(tool_text(&r.rpc())["delayMs"], 300);
    let r = post(a, p, Some(&sid), &run(3)).await.unwrap();
    assert!(r
        .sse_messages()
        .iter()
        .all(|m| m["method"] != "notifications/progress"));
    assert_eq!(tool_text(&r.rpc())["delayMs"], 300);
    k.shutdown().await;
}

#[tokio::test]
async fn timeouts_delay_the_answer() {
    let k = kitchen().await;
    let a = k.local_addr();
    for (p, min_ms) in [
        ("/s/timeout.uncooperative_hang/mcp?hangDurationMs=200", 200),
        ("/s/timeout.cooperative_deadline/mcp?delayMs=200", 200),
        ("/s/timeout.late_response/mcp?delayMs=200", 200),
    ] {
        let sid = legacy_session(a, p, json!({})).await;
        let t = Instant::now();
        let r = post(a, p, Some(&sid), &run(2)).await.unwrap();
        assert!(t.elapsed() >= Duration::from_millis(min_ms), "{p}");
        assert_eq!(tool_text(&r.json())["delayMs"], min_ms, "{p}");
    }
    // Hang fires once: invocation 2 of uncooperative_hang is immediate.
    let p = "/s/timeout.uncooperative_hang/mcp?hangDurationMs=200";
    let sid = legacy_session(a, p, json!({})).await;
    let t = Instant::now();
    post(a, p, Some(&sid), &run(3)).await.unwrap();
    assert!(t.elapsed() < Duration::from_millis(200));
    let t = Instant::now();
    let r = post(
        a,
        "/s/timeout.init_hang/mcp?initDelayMs=200",
        None,
        &initialize_msg(1, "2025-11-25", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    assert!(t.elapsed() >= Duration::from_millis(200));
    k.shutdown().await;
}

#[tokio::test]
async fn connection_close_drops_without_response_once() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/errors.connection_close/mcp";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(a, p, Some(&sid), &run(2)).await;
    assert!(r.is_err(), "no HTTP response expected, got {r:?}");
    assert!(post(a, p, Some(&sid), &run(3)).await.unwrap().status == 200);
    let r = post(
        a,
        "/s/errors.connection_close/mcp?closeOn=initialize",
        None,
        &initialize_msg(1, "2025-11-25", json!({})),
    )
    .await;
    assert!(r.is_err());
    k.shutdown().await;
}

#[tokio::test]
async fn malformed_payload_kinds() {
    let k = kitchen().await;
    let a = k.local_addr();
    for (kind, check) in [
        (
            "invalid_json",
            Box::new(|b: &str| b == "{ not valid json") as Box<dyn Fn(&str) -> bool>,
        ),
        ("wrong_id", Box::new(|b: &str| b.contains("99999"))),
        (
            "missing_jsonrpc",
            Box::new(|b: &str| b == r#"{"id":2,"result":{}}"#),
        ),
        (
            "duplicate_response",
            Box::new(|b: &str| b.lines().count() == 2 && b.lines().all(|l| l.contains("\"id\":2"))),
        ),
    ] {
        let p = format!("/s/errors.malformed_payload/mcp?kind={kind}");
        let sid = legacy_session(a, &p, json!({})).await;
        let r = post(a, &p, Some(&sid), &run(2)).await.unwrap();
        assert_eq!(
            (r.status, r.header("content-type")),
            (200, Some("application/json"))
        );
        assert!(check(&r.text()), "{kind}: {}", r.text());
    }
    let r = post(
        a,
        "/s/errors.malformed_payload/mcp?target=initialize",
        None,
        &initialize_msg(1, "2025-11-25", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "{ not valid json");
    k.shutdown().await;
}

#[tokio::test]
async fn http_status_per_method_rules() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/errors.http_status_per_method/mcp";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(a, p, Some(&sid), &run(2)).await.unwrap();
    assert_eq!(r.status, 401);
    assert!(r.body.is_empty());
    let r = post(
        a,
        p,
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    k.shutdown().await;
}

#[tokio::test]
async fn non_compliant_envelope_and_token_lifecycle() {
    let k = kitchen().await;
    let a = k.local_addr();
    let r = post(
        a,
        "/s/errors.non_compliant_envelope/mcp",
        None,
        &initialize_msg(1, "2025-11-25", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json(),
        json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}],"isError":false}})
    );
    let p = "/s/auth.token_lifecycle/mcp?rejectUntilInvocation=2";
    for expected in [401, 401, 200] {
        let r = post(a, p, None, &initialize_msg(1, "2025-11-25", json!({})))
            .await
            .unwrap();
        assert_eq!(r.status, expected);
    }
    let r = post(
        a,
        "/s/auth.token_lifecycle/mcp?rejectForever=true&rejectUntilInvocation=0",
        None,
        &initialize_msg(1, "2025-11-25", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 401);
    k.shutdown().await;
}

#[tokio::test]
async fn catalog_pagination_and_facets() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/catalog.pagination/mcp";
    let sid = legacy_session(a, p, json!({})).await;
    let mut uris = Vec::new();
    let mut cursor = Some(Value::Null);
    while let Some(c) = cursor {
        let mut params = json!({});
        if !c.is_null() {
            params["cursor"] = c;
        }
        let r = post(
            a,
            p,
            Some(&sid),
            &json!({"jsonrpc":"2.0","id":2,"method":"resources/list","params":params}),
        )
        .await
        .unwrap()
        .json();
        uris.extend(
            r["result"]["resources"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x["uri"].as_str().unwrap().to_string()),
        );
        cursor = r["result"].get("nextCursor").cloned();
    }
    assert_eq!(uris.len(), 10);
    assert_eq!(uris[9], "test://resource/9");
    let p = "/s/catalog.pagination/mcp?facet=prompts&fault=error_after_page_n&faultAtPage=1";
    let sid = legacy_session(a, p, json!({})).await;
    let list = json!({"jsonrpc":"2.0","id":3,"method":"prompts/list"});
    assert!(post(a, p, Some(&sid), &list).await.unwrap().json()["result"]["prompts"].is_array());
    assert_eq!(
        post(a, p, Some(&sid), &list).await.unwrap().json()["error"]["code"],
        -32603
    );
    let p = "/s/catalog.pagination/mcp?fault=cursor_loop";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(
        a,
        p,
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":4,"method":"resources/list"}),
    )
    .await
    .unwrap()
    .json();
    assert_eq!(r["result"]["nextCursor"], "loop");
    let p = "/s/catalog.facet_unavailable/mcp";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(
        a,
        p,
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":5,"method":"resources/list"}),
    )
    .await
    .unwrap();
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (200, json!(-32601))
    );
    let r = post(
        a,
        p,
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":6,"method":"prompts/list"}),
    )
    .await
    .unwrap();
    assert!(r.json()["result"]["prompts"].is_array());
    k.shutdown().await;
}

#[tokio::test]
async fn always_on_invalid_resource_and_prompt() {
    let k = kitchen().await;
    let a = k.local_addr();
    let sid = legacy_session(a, "/mcp", json!({})).await;
    let r = post(a, "/mcp", Some(&sid), &json!({"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test://resources/invalid"}})).await.unwrap();
    assert_eq!(
        r.json()["result"]["contents"][0]["blob"],
        "not-valid-base64!!!"
    );
    let r = post(
        a,
        "/mcp",
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"invalid_prompt"}}),
    )
    .await
    .unwrap();
    assert_eq!(
        r.json()["result"]["messages"][0]["content"]["type"],
        "unknown_type"
    );
    let r = post(a, "/mcp", Some(&sid), &json!({"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"test://resources/valid"}})).await.unwrap();
    assert_eq!(r.json()["result"]["contents"][0]["mimeType"], "text/plain");
    k.shutdown().await;
}

#[tokio::test]
async fn sse_cut_before_response_and_mid_event() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/sse.cut_before_response/mcp?notifications=2";
    let r = modern(
        a,
        p,
        1,
        "tools/call",
        json!({"name":"run_configured_test_scenario"}),
    )
    .await
    .unwrap();
    assert_eq!(
        (r.status, r.header("content-type")),
        (200, Some("text/event-stream"))
    );
    let msgs = r.sse_messages();
    assert_eq!(msgs.len(), 2);
    assert!(msgs.iter().all(|m| m["method"] == "notifications/message"));
    assert!(r.body_error.is_none(), "clean end");
    let p = "/s/sse.cut_mid_event/mcp?cutAfterBytes=30";
    let r = modern(
        a,
        p,
        1,
        "tools/call",
        json!({"name":"run_configured_test_scenario"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "event: message\ndata: {\"id\":1,\"");
    assert!(r.body_error.is_some(), "connection broken inside the event");
    k.shutdown().await;
}

/// Issue 16 item 2: resuming a 2025-11-25 stream cut mid-event replays whole events only and
/// then delivers the response (it used to replay the same id-less fragment and cut again).
#[tokio::test]
async fn sse_cut_mid_event_resumption_delivers_the_whole_response() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/sse.cut_mid_event/mcp?cutAfterBytes=30";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(a, p, Some(&sid), &run(2)).await.unwrap();
    assert_eq!(
        r.text(),
        "id: 1-0\ndata: \n\nevent: message\ndata: {\"id\":2,\""
    );
    assert!(r.body_error.is_some(), "connection broken inside the event");
    let g = resume(a, p, &sid, "1-0").await;
    assert_eq!(g.status, 200);
    assert!(g.body_error.is_none(), "the resumption ends cleanly: {g:?}");
    assert!(
        g.text().starts_with("id: 1-1\nevent: message\ndata: {"),
        "{}",
        g.text()
    );
    let fin = g.rpc();
    assert_eq!(fin["id"], 2);
    assert_eq!(tool_text(&fin)["scenarioId"], "sse.cut_mid_event");
    k.shutdown().await;
}

/// Issue 16 item 3: a resumption of a 2025-11-25 stream that ended without its response
/// replays the events missed, and one with nothing left is told the stream is gone (410)
/// instead of ending cleanly again like a poll that may be retried forever.
#[tokio::test]
async fn sse_cut_before_response_resumption_says_the_stream_is_gone() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/sse.cut_before_response/mcp?notifications=2";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(a, p, Some(&sid), &run(2)).await.unwrap();
    assert!(
        r.text().starts_with("id: 1-0\ndata: \n\nid: 1-1\n"),
        "{}",
        r.text()
    );
    assert_eq!(r.sse_messages().len(), 2);
    assert!(r.body_error.is_none(), "clean end");
    let missed = resume(a, p, &sid, "1-1").await;
    assert_eq!(missed.status, 200);
    assert_eq!(missed.sse_messages().len(), 1, "{}", missed.text());
    let gone = resume(a, p, &sid, "1-2").await;
    assert_eq!(gone.status, 410);
    assert!(gone.rpc()["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("Stream gone"));
    k.shutdown().await;
}

#[tokio::test]
async fn sse_priming_then_close_resumes_on_get() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/sse.priming_then_close/mcp";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(a, p, Some(&sid), &run(2)).await.unwrap();
    assert_eq!(r.text(), "id: 1-0\nretry: 500\ndata: \n\n");
    let g = resume(a, p, &sid, "1-0").await;
    assert_eq!(g.status, 200);
    let fin = g.rpc();
    assert_eq!(fin["id"], 2);
    assert_eq!(tool_text(&fin)["scenarioId"], "sse.priming_then_close");
    k.shutdown().await;
}

/// Issue 16 item 5: a 2026-07-28 request to `sse.priming_then_close` gets an empty stream, and
/// the journal says "stream ended without response" once (it used to say it twice).
#[tokio::test]
async fn sse_priming_then_close_modern_notes_the_end_once() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/sse.priming_then_close/mcp?instance=note-once";
    let r = modern(
        a,
        p,
        1,
        "tools/call",
        json!({"name":"run_configured_test_scenario"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    let journal = k.kitchen().journal();
    let call = journal
        .iter()
        .find(|e| {
            e["method"] == "tools/call"
                && e["instance"]
                    .as_str()
                    .is_some_and(|i| i.ends_with("#note-once"))
        })
        .expect("the call's journal entry");
    let injected = call["injected"].as_str().unwrap();
    assert_eq!(
        injected.matches("stream ended without response").count(),
        1,
        "{injected}"
    );
    assert!(injected.contains("not resumable"), "{injected}");
    k.shutdown().await;
}

#[tokio::test]
async fn sse_keepalive_comments_then_result() {
    let k = kitchen().await;
    let a = k.local_addr();
    let r = modern(
        a,
        "/s/sse.keepalive/mcp?comments=2&intervalMs=10",
        1,
        "tools/call",
        json!({"name":"run_configured_test_scenario"}),
    )
    .await
    .unwrap();
    assert!(
        r.text()
            .starts_with(": keepalive\n\n: keepalive\n\nevent: message\ndata: "),
        "{}",
        r.text()
    );
    assert_eq!(r.rpc()["result"]["resultType"], "complete");
    k.shutdown().await;
}

#[tokio::test]
async fn sse_server_request_on_post_stream() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/sse.server_request/mcp";
    let sid = legacy_session(a, p, json!({"elicitation": {}})).await;
    let sid2 = sid.clone();
    let call = tokio::spawn(async move { post(a, p, Some(&sid2), &run(2)).await.unwrap() });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let ans = post(a, p, Some(&sid), &json!({"jsonrpc":"2.0","id":"kitchen-1","result":{"action":"accept","content":{"confirm":true}}})).await.unwrap();
    assert_eq!(ans.status, 202);
    let r = tokio::time::timeout(STEP, call).await.unwrap().unwrap();
    assert_eq!(r.sse_messages()[0]["method"], "elicitation/create");
    let t = tool_text(&r.rpc());
    assert_eq!(
        (
            t["elicitationAction"].clone(),
            t["content"]["confirm"].clone()
        ),
        (json!("accept"), json!(true))
    );
    k.shutdown().await;
}

#[tokio::test]
async fn rate_limited_429_with_retry_after() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/errors.rate_limited/mcp";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(a, p, Some(&sid), &run(2)).await.unwrap();
    assert_eq!((r.status, r.header("retry-after")), (429, Some("2")));
    assert_eq!(r.json()["id"], 2);
    assert_eq!(post(a, p, Some(&sid), &run(3)).await.unwrap().status, 200);
    let p = "/s/errors.rate_limited/mcp?onInvocation=0&retryAfter=Wed,%2021%20Oct%202026%2007:28:00%20GMT";
    let sid = legacy_session(a, p, json!({})).await;
    for i in 0..2 {
        let r = post(a, p, Some(&sid), &run(4 + i)).await.unwrap();
        assert_eq!(
            (r.status, r.header("retry-after")),
            (429, Some("Wed, 21 Oct 2026 07:28:00 GMT"))
        );
    }
    let bad = post(
        a,
        "/s/errors.rate_limited/mcp?retryAfter=soon",
        None,
        &initialize_msg(1, "2025-11-25", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(bad.status, 400);
    k.shutdown().await;
}

/// The draft SEP #3313 ToolFailure on a read-only tool with an outputSchema: invocation 1
/// fails with the declared class in `_meta`, in each form; the journal's answer carries the
/// declared failure as the core reads it.
#[tokio::test]
async fn tool_failure_declares_its_class_in_each_form() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/errors.tool_failure/mcp?class=governance&code=policy_blocked&agentGuidance=ask";
    let sid = legacy_session(a, p, json!({})).await;
    let list = post(
        a,
        p,
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":9,"method":"tools/list"}),
    )
    .await
    .unwrap()
    .json();
    let tool = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "run_configured_test_scenario")
        .unwrap()
        .clone();
    assert_eq!(tool["annotations"]["readOnlyHint"], true);
    assert_eq!(
        tool["outputSchema"]["required"],
        json!(["scenarioId", "invocation"])
    );
    let r = post(a, p, Some(&sid), &run(2)).await.unwrap().json();
    let failure = &r["result"]["_meta"]["io.modelcontextprotocol/toolFailure"];
    assert_eq!(r["result"]["isError"], true);
    assert!(r["result"].get("structuredContent").is_none());
    assert_eq!(failure["class"], "governance");
    assert_eq!(failure["code"], "policy_blocked");
    assert_eq!(failure["retryable"], false);
    assert_eq!(failure["agentGuidance"], "ask");
    assert_eq!(failure["correlationId"], "kitchen-errors.tool_failure-1");
    assert!(failure.get("retryNotBefore").is_none());
    // invocation 2 succeeds with data that conforms
    let ok = post(a, p, Some(&sid), &run(3)).await.unwrap().json();
    assert_eq!(
        ok["result"]["structuredContent"],
        json!({"scenarioId": "errors.tool_failure", "invocation": 2})
    );
    let journal = k.kitchen().journal_entries().unwrap();
    let answer = journal
        .iter()
        .find(|e| e.id == Some(json!(2)) && e.method.as_deref() == Some("tools/call"))
        .and_then(|e| e.answer.clone())
        .expect("journaled answer");
    let declared = answer
        .declared_failure
        .expect("the core read the declared failure");
    assert_eq!(declared.class, mcp_triage_core::FailureClass::Governance);
    // Wrong but valid: conforming data on a failure, flagged or not; retryNotBefore ahead.
    let p = "/s/errors.tool_failure/mcp?form=structured&retryable=true&retryNotBeforeMs=5000";
    let r = modern(a, p, 1, "tools/call", run(1)["params"].clone())
        .await
        .unwrap()
        .json();
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(r["result"]["structuredContent"]["invocation"], 1);
    let meta = &r["result"]["_meta"];
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let not_before = meta["io.modelcontextprotocol/toolFailure"]["retryNotBefore"]
        .as_u64()
        .unwrap();
    assert!(
        not_before > now_ms && not_before <= now_ms + 5_000,
        "{not_before}"
    );
    assert!(
        meta.get("io.modelcontextprotocol/serverInfo").is_some(),
        "{meta}"
    );
    let p = "/s/errors.tool_failure/mcp?form=unflagged";
    let r = modern(a, p, 1, "tools/call", run(1)["params"].clone())
        .await
        .unwrap()
        .json();
    assert!(r["result"].get("isError").is_none());
    assert_eq!(r["result"]["structuredContent"]["invocation"], 1);
    assert!(r["result"]["_meta"]["io.modelcontextprotocol/toolFailure"].is_object());
    // retryNotBeforeMs below -1 is refused
    let bad = post(
        a,
        "/s/errors.tool_failure/mcp?retryNotBeforeMs=-2",
        None,
        &initialize_msg(1, "2025-11-25", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(bad.status, 400);
    k.shutdown().await;
}

/// The common `unknownToolAs` parameter: an unlisted tool is the JSON-RPC error -32602 by
/// default, and with `isError` the tool execution error draft SEP-2145 asks for.
#[tokio::test]
async fn unknown_tool_as_a_jsonrpc_error_or_an_is_error_result() {
    let k = kitchen().await;
    let a = k.local_addr();
    let call = call_msg(5, "no_such_tool", json!({}));
    let sid = legacy_session(a, "/s/baseline/mcp", json!({})).await;
    let r = post(a, "/s/baseline/mcp", Some(&sid), &call)
        .await
        .unwrap()
        .json();
    assert_eq!(r["error"]["code"], -32602);
    let p = "/s/baseline/mcp?unknownToolAs=isError";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(a, p, Some(&sid), &call).await.unwrap();
    assert_eq!(r.status, 200);
    let r = r.json();
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(
        r["result"]["content"][0]["text"],
        "Unknown tool: no_such_tool. Re-run tools/list and retry."
    );
    let r = modern(a, p, 6, "tools/call", call["params"].clone())
        .await
        .unwrap()
        .json();
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["isError"], true);
    let bad = post(
        a,
        "/s/baseline/mcp?unknownToolAs=error",
        None,
        &initialize_msg(1, "2025-11-25", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(bad.status, 400);
    k.shutdown().await;
}

/// The draft SEP-3304 forms: -32023 with `data.retryAfterMs` on a 429, or on a 200.
#[tokio::test]
async fn rate_limited_sep3304_forms() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/errors.rate_limited/mcp?form=sep3304&retryAfterMs=1500&limit=10&remaining=0";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(a, p, Some(&sid), &run(2)).await.unwrap();
    assert_eq!((r.status, r.header("retry-after")), (429, Some("2")));
    let body = r.json();
    assert_eq!(body["id"], 2);
    assert_eq!(body["error"]["code"], -32023);
    assert_eq!(
        body["error"]["data"],
        json!({ "retryAfterMs": 1500, "limit": 10, "remaining": 0 })
    );
    // On a 200, without the optional members, and without Retry-After.
    let p = "/s/errors.rate_limited/mcp?form=sep3304_200&retryAfter=";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(a, p, Some(&sid), &run(3)).await.unwrap();
    assert_eq!((r.status, r.header("retry-after")), (200, None));
    assert_eq!(r.json()["error"]["data"], json!({ "retryAfterMs": 2000 }));
    // retryAfterMs -1 leaves it out (a server breaking the SEP's RL-1).
    let p = "/s/errors.rate_limited/mcp?form=sep3304&retryAfterMs=-1";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(a, p, Some(&sid), &run(4)).await.unwrap();
    assert_eq!(r.json()["error"]["data"], json!({}));
    // An empty Retry-After is only for the SEP forms; numbers below -1 are refused.
    for bad in [
        "/s/errors.rate_limited/mcp?retryAfter=",
        "/s/errors.rate_limited/mcp?form=sep3304&retryAfterMs=-2",
        "/s/errors.rate_limited/mcp?form=sep3305",
    ] {
        let r = post(a, bad, None, &initialize_msg(1, "2025-11-25", json!({})))
            .await
            .unwrap();
        assert_eq!(r.status, 400, "{bad}");
    }
    k.shutdown().await;
}

#[tokio::test]
async fn oauth_challenge_and_metadata() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/auth.oauth_challenge/mcp";
    let init = initialize_msg(1, "2025-11-25", json!({})).to_string();
    let r = send(a, "POST", p, &[ACCEPT, CT], Some(&init))
        .await
        .unwrap();
    assert_eq!(r.status, 401);
    let expected = format!("Bearer resource_metadata=\"http://{a}/.well-known/oauth-protected-resource/s/auth.oauth_challenge/mcp\", scope=\"mcp:tools\"");
    assert_eq!(r.header("www-authenticate"), Some(expected.as_str()));
    let m = send(
        a,
        "GET",
        "/.well-known/oauth-protected-resource/s/auth.oauth_challenge/mcp",
        &[],
        None,
    )
    .await
    .unwrap()
    .json();
    assert_eq!(
        m["resource"],
        format!("http://{a}/s/auth.oauth_challenge/mcp")
    );
    assert_eq!(m["scopes_supported"], json!(["mcp:tools"]));
    let r = send(
        a,
        "POST",
        p,
        &[ACCEPT, CT, ("authorization", "Bearer kitchen-token")],
        Some(&init),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    let p = "/s/auth.insufficient_scope/mcp";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(a, p, Some(&sid), &run(2)).await.unwrap();
    assert_eq!(r.status, 403);
    let h = r.header("www-authenticate").unwrap();
    assert!(
        h.starts_with(
            "Bearer error=\"insufficient_scope\", scope=\"mcp:admin\", resource_metadata=\"http://"
        ),
        "{h}"
    );
    k.shutdown().await;
}

#[tokio::test]
async fn session_expire_after_n_requests() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/session.expire/mcp?afterRequests=2";
    let sid = legacy_session(a, p, json!({})).await; // request 1: initialized
    assert_eq!(post(a, p, Some(&sid), &run(2)).await.unwrap().status, 200); // 2
    let r = post(a, p, Some(&sid), &run(3)).await.unwrap(); // 3 → expired
    assert_eq!(r.status, 404);
    assert_eq!(post(a, p, Some(&sid), &run(4)).await.unwrap().status, 404);
    let fresh = legacy_session(a, p, json!({})).await;
    assert_eq!(post(a, p, Some(&fresh), &run(5)).await.unwrap().status, 200);
    k.shutdown().await;
}

/// Issue 16 item 4: with `countMethod` the 404 lands on the first request of that method
/// (not on `notifications/initialized` or a `tools/list` sent first), and `sessions` lets the
/// re-initialized session finish its call.
#[tokio::test]
async fn session_expire_counts_one_method_and_bounds_the_sessions() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/session.expire/mcp?params=%7B%22afterRequests%22%3A0%2C%22countMethod%22%3A%22tools%2Fcall%22%2C%22sessions%22%3A1%7D";
    let sid = legacy_session(a, p, json!({})).await; // notifications/initialized: not counted
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    assert_eq!(post(a, p, Some(&sid), &list).await.unwrap().status, 200);
    let r = post(a, p, Some(&sid), &run(3)).await.unwrap(); // the first tools/call → expired
    assert_eq!(r.status, 404);
    assert_eq!(r.rpc()["error"]["code"], -32001);
    assert_eq!(post(a, p, Some(&sid), &list).await.unwrap().status, 404);
    // One session expires per instance here: the new session's call goes through.
    let fresh = legacy_session(a, p, json!({})).await;
    assert_eq!(post(a, p, Some(&fresh), &run(4)).await.unwrap().status, 200);
    k.shutdown().await;
}

#[tokio::test]
async fn content_type_and_accepted_for_request() {
    let k = kitchen().await;
    let a = k.local_addr();
    let r = modern(
        a,
        "/s/errors.content_type/mcp",
        1,
        "tools/call",
        json!({"name":"run_configured_test_scenario"}),
    )
    .await
    .unwrap();
    assert_eq!(
        (r.status, r.header("content-type")),
        (200, Some("text/html; charset=utf-8"))
    );
    assert!(r.text().starts_with("<!doctype html>"));
    let r = modern(
        a,
        "/s/errors.accepted_for_request/mcp",
        1,
        "tools/call",
        json!({"name":"run_configured_test_scenario"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 202);
    assert!(r.body.is_empty());
    let r = modern(
        a,
        "/s/errors.accepted_for_request/mcp",
        2,
        "tools/call",
        json!({"name":"run_configured_test_scenario"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    k.shutdown().await;
}

#[tokio::test]
async fn compat_legacy_result_and_output_schema_mismatch() {
    let k = kitchen().await;
    let a = k.local_addr();
    let r = modern(
        a,
        "/s/compat.legacy_result/mcp",
        1,
        "tools/call",
        json!({"name":"run_configured_test_scenario"}),
    )
    .await
    .unwrap()
    .json();
    assert!(r["result"].get("resultType").is_none());
    assert!(r["result"]["content"].is_array());
    let p = "/s/compat.output_schema_mismatch/mcp";
    let l = modern(a, p, 2, "tools/list", json!({}))
        .await
        .unwrap()
        .json();
    let def = l["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "run_configured_test_scenario")
        .unwrap()
        .clone();
    assert_eq!(
        def["outputSchema"]["properties"]["invocation"]["type"],
        "integer"
    );
    let r = modern(
        a,
        p,
        3,
        "tools/call",
        json!({"name":"run_configured_test_scenario"}),
    )
    .await
    .unwrap()
    .json();
    assert_eq!(r["result"]["structuredContent"]["invocation"], "1");
    k.shutdown().await;
}

#[tokio::test]
async fn chaos_mix_is_seeded() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/chaos.mix/mcp?rates=%7B%22http_503%22%3A1.0%7D";
    let sid = legacy_session(a, p, json!({})).await; // initialize and notifications always pass
    let r = post(a, p, Some(&sid), &run(2)).await.unwrap();
    assert_eq!(r.status, 503);
    let p = "/s/chaos.mix/mcp?rates=%7B%7D";
    let sid = legacy_session(a, p, json!({})).await;
    assert_eq!(post(a, p, Some(&sid), &run(2)).await.unwrap().status, 200);
    // Same seed, same POST numbers → same statuses.
    let mut seqs = Vec::new();
    for tag in ["x", "y"] {
        let p = format!("/s/chaos.mix/mcp?seed=9&rates=%7B%22http_503%22%3A0.5%7D&instance={tag}");
        let sid = legacy_session(a, &p, json!({})).await;
        let mut s = Vec::new();
        for i in 0..8 {
            s.push(
                post(
                    a,
                    &p,
                    Some(&sid),
                    &json!({"jsonrpc":"2.0","id":i,"method":"tools/list"}),
                )
                .await
                .unwrap()
                .status,
            );
        }
        seqs.push(s);
    }
    assert_eq!(seqs[0], seqs[1]);
    k.shutdown().await;
}

/// `state.counter` of the chaos.mix instance tagged `tag`.
fn chaos_counter(k: &mcp_triage_kitchen::KitchenHandle, tag: &str) -> i64 {
    k.kitchen()
        .counters()
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["instance"].as_str().is_some_and(|s| s.contains(tag)))
        .map(|i| i["state"]["counter"].as_i64().unwrap_or(0))
        .unwrap_or(0)
}

#[tokio::test]
async fn chaos_mix_sse_cut_executes_then_loses_the_response() {
    let k = kitchen().await;
    let a = k.local_addr();
    // JSON response mode: the cut forces SSE anyway.
    let p = format!(
        "/s/chaos.mix/mcp?seed=5&responseMode=json&rates={}&instance=cut",
        urlencode(r#"{"sse_cut":1.0}"#)
    );
    let (mut clean, mut broken) = (0, 0);
    for i in 1..=12 {
        let r = modern(
            a,
            &p,
            i,
            "tools/call",
            json!({"name":"increment_counter","arguments":{"by":1}}),
        )
        .await
        .unwrap();
        assert_eq!(
            (r.status, r.header("content-type")),
            (200, Some("text/event-stream"))
        );
        // Never a complete response: the client cannot tell whether the increment ran.
        assert!(r.sse_messages().is_empty(), "{}", r.text());
        if r.body_error.is_some() {
            broken += 1;
            assert!(
                r.text().starts_with("event: message\ndata: {"),
                "half an event: {}",
                r.text()
            );
        } else {
            clean += 1;
            assert_eq!(r.text(), ": keepalive\n\n", "clean end without any event");
        }
    }
    assert!(
        clean > 0 && broken > 0,
        "both kinds of cut ({clean} clean, {broken} broken)"
    );
    // Every call really ran, and the journal says so.
    assert_eq!(chaos_counter(&k, "cut"), 12);
    let calls: Vec<Value> = k
        .kitchen()
        .journal()
        .into_iter()
        .filter(|e| e["tool"] == "increment_counter")
        .collect();
    assert_eq!(calls.len(), 12);
    assert!(calls.iter().all(|e| e["executed"] == true), "{calls:?}");
    assert!(calls
        .iter()
        .all(|e| e["injected"].as_str().unwrap_or("").contains("sse_cut")));
    // A request that is not a tool call gets a stream with no event (nothing executes).
    let r = modern(a, &p, 20, "tools/list", json!({})).await.unwrap();
    assert_eq!(
        (r.status, r.header("content-type"), r.text()),
        (
            200,
            Some("text/event-stream"),
            ": keepalive\n\n".to_string()
        )
    );
    k.shutdown().await;
}

#[tokio::test]
async fn chaos_mix_input_required_modern_round_then_the_call_runs() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = format!(
        "/s/chaos.mix/mcp?rates={}&instance=round",
        urlencode(r#"{"input_required":1.0}"#)
    );
    let call = json!({"name":"increment_counter","arguments":{"by":2}});
    let r = modern(a, &p, 1, "tools/call", call.clone())
        .await
        .unwrap()
        .json();
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    let ask = &r["result"]["inputRequests"]["chaos_confirm"];
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["mode"], "form");
    let state = r["result"]["requestState"].as_str().unwrap().to_string();
    assert_eq!(
        chaos_counter(&k, "round"),
        0,
        "not executed before the answer"
    );
    // The retry's own POST also draws input_required; carrying the answer, it runs.
    let mut retry = call.clone();
    retry["requestState"] = json!(state);
    retry["inputResponses"] =
        json!({"chaos_confirm": {"action":"accept","content":{"confirm":true}}});
    let ok = modern(a, &p, 2, "tools/call", retry).await.unwrap().json();
    assert_eq!(ok["result"]["resultType"], "complete", "{ok}");
    assert_eq!(ok["result"]["structuredContent"]["counter"], 2);
    // A tampered state is refused before anything runs.
    let mut bad = call.clone();
    bad["requestState"] = json!(format!("{state}x"));
    bad["inputResponses"] = json!({"chaos_confirm": {"action":"accept"}});
    let r = modern(a, &p, 3, "tools/call", bad).await.unwrap().json();
    assert_eq!(r["error"]["code"], -32602);
    // Without the elicitation capability the round is skipped: the call runs at once.
    let mut plain = call.clone();
    plain["_meta"] = meta();
    plain["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let r = modern(a, &p, 4, "tools/call", plain).await.unwrap().json();
    assert_eq!(r["result"]["structuredContent"]["counter"], 4, "{r}");
    let executed: Vec<Value> = k
        .kitchen()
        .journal()
        .into_iter()
        .filter(|e| e["tool"] == "increment_counter")
        .map(|e| e["executed"].clone())
        .collect();
    assert_eq!(
        executed,
        vec![json!(false), json!(true), json!(false), json!(true)]
    );
    k.shutdown().await;
}

#[tokio::test]
async fn chaos_mix_input_required_legacy_server_request() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = format!(
        "/s/chaos.mix/mcp?rates={}&instance=legacy",
        urlencode(r#"{"input_required":1.0}"#)
    );
    let sid = legacy_session(a, &p, json!({"elicitation": {}})).await;
    let (sid2, p2) = (sid.clone(), p.clone());
    let call = tokio::spawn(async move {
        post(
            a,
            &p2,
            Some(&sid2),
            &call_msg(2, "increment_counter", json!({})),
        )
        .await
        .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(chaos_counter(&k, "legacy"), 0, "waits for the answer");
    let ans = post(
        a,
        &p,
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":"kitchen-1","result":{"action":"accept","content":{"confirm":true}}}),
    )
    .await
    .unwrap();
    assert_eq!(ans.status, 202);
    let r = tokio::time::timeout(STEP, call).await.unwrap().unwrap();
    assert_eq!(r.sse_messages()[0]["method"], "elicitation/create");
    assert_eq!(r.rpc()["result"]["structuredContent"]["counter"], 1);
    // No capability: the round is skipped.
    let sid = legacy_session(a, &p, json!({})).await;
    let r = post(
        a,
        &p,
        Some(&sid),
        &call_msg(3, "increment_counter", json!({})),
    )
    .await
    .unwrap()
    .rpc();
    assert_eq!(r["result"]["structuredContent"]["counter"], 2);
    k.shutdown().await;
}

#[tokio::test]
async fn tasks_deferred_legacy_task_augmented_call_and_2026_extension() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/tasks.deferred/mcp?completeAfterMs=300&pollIntervalMs=100";
    let init = post(a, p, None, &initialize_msg(1, "2025-11-25", json!({})))
        .await
        .unwrap();
    assert_eq!(
        init.json()["result"]["capabilities"]["tasks"],
        json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } })
    );
    let sid = legacy_session(a, p, json!({})).await;
    let list = post(
        a,
        p,
        Some(&sid),
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }),
    )
    .await
    .unwrap();
    assert_eq!(
        list.json()["result"]["tools"][0]["execution"]["taskSupport"],
        "optional"
    );
    // Task-augmented call → CreateTaskResult, no content.
    let mut call = run(3);
    call["params"]["task"] = json!({ "ttl": 30000 });
    let r = post(a, p, Some(&sid), &call).await.unwrap();
    assert_eq!(r.status, 200);
    let task = r.json()["result"]["task"].clone();
    assert!(r.json()["result"].get("content").is_none(), "{}", r.text());
    assert_eq!(task["status"], "working");
    assert_eq!(
        (task["ttl"].as_u64(), task["pollInterval"].as_u64()),
        (Some(30000), Some(100))
    );
    assert!(task["createdAt"].as_str().unwrap().ends_with('Z'));
    let id = task["taskId"].as_str().unwrap().to_string();
    let get = |n: i64, m: &'static str| json!({ "jsonrpc": "2.0", "id": n, "method": m, "params": { "taskId": id } });
    let r = post(a, p, Some(&sid), &get(4, "tasks/get")).await.unwrap();
    assert_eq!(r.json()["result"]["status"], "working");
    // tasks/result blocks until completed, then returns the CallToolResult.
    let t0 = std::time::Instant::now();
    let r = post(a, p, Some(&sid), &get(5, "tasks/result"))
        .await
        .unwrap();
    assert!(
        t0.elapsed() >= Duration::from_millis(150),
        "blocked until completion"
    );
    assert_eq!(r.json()["result"]["isError"], false);
    assert_eq!(tool_text(&r.json())["taskId"], id.as_str());
    assert_eq!(
        r.json()["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    let r = post(a, p, Some(&sid), &get(6, "tasks/get")).await.unwrap();
    assert_eq!(r.json()["result"]["status"], "completed");
    let r = post(a, p, Some(&sid), &get(7, "tasks/cancel"))
        .await
        .unwrap();
    assert_eq!(
        r.json()["error"]["code"],
        -32602,
        "terminal task cannot be cancelled"
    );
    let r = post(
        a,
        p,
        Some(&sid),
        &json!({ "jsonrpc": "2.0", "id": 8, "method": "tasks/list" }),
    )
    .await
    .unwrap();
    assert_eq!(r.json()["result"]["tasks"].as_array().unwrap().len(), 1);
    let r = post(a, p, Some(&sid), &json!({ "jsonrpc": "2.0", "id": 9, "method": "tasks/get", "params": { "taskId": "nope" } }))
        .await
        .unwrap();
    assert_eq!(r.json()["error"]["code"], -32602);
    // Without params.task the call completes synchronously.
    let r = post(a, p, Some(&sid), &run(10)).await.unwrap();
    assert_eq!(tool_text(&r.json())["scenarioId"], "tasks.deferred");

    // 2026: no extension declared → a complete result; declared → resultType "task".
    let q = "/s/tasks.deferred/mcp?completeAfterMs=0&instance=modern";
    let args = json!({ "name": "run_configured_test_scenario", "arguments": {} });
    let r = modern(a, q, 11, "tools/call", args.clone()).await.unwrap();
    assert_eq!(r.json()["result"]["resultType"], "complete");
    let mut m = meta();
    m["io.modelcontextprotocol/clientCapabilities"]["extensions"] =
        json!({ "io.modelcontextprotocol/tasks": {} });
    let mut with_ext = args.clone();
    with_ext["_meta"] = m.clone();
    let r = modern(a, q, 12, "tools/call", with_ext).await.unwrap();
    let res = r.json()["result"].clone();
    assert_eq!(res["resultType"], "task", "{}", r.text());
    assert!(res["ttlMs"].is_u64() && res["pollIntervalMs"].is_u64());
    let id = res["taskId"].as_str().unwrap();
    let r = modern(a, q, 13, "tasks/get", json!({ "taskId": id, "_meta": m }))
        .await
        .unwrap();
    assert_eq!(r.json()["result"]["status"], "completed");
    assert_eq!(r.json()["result"]["result"]["isError"], false);
    let d = modern(a, q, 14, "server/discover", json!({}))
        .await
        .unwrap();
    assert!(
        d.json()["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"]
            .is_object()
    );
    // pollIntervalMs=0 leaves the (optional) field out, on the task and on every poll
    let q0 = "/s/tasks.deferred/mcp?completeAfterMs=0&pollIntervalMs=0&instance=nopoll";
    let mut with_ext = args.clone();
    with_ext["_meta"] = m.clone();
    let r = modern(a, q0, 15, "tools/call", with_ext).await.unwrap();
    let res = r.json()["result"].clone();
    assert!(res.get("pollIntervalMs").is_none(), "{res}");
    let id = res["taskId"].as_str().unwrap();
    let r = modern(a, q0, 16, "tasks/get", json!({ "taskId": id, "_meta": m }))
        .await
        .unwrap();
    assert!(r.json()["result"].get("pollIntervalMs").is_none());
    k.shutdown().await;
}

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn catalog_mutation_initial_list_is_cakewalks() {
    let k = kitchen().await;
    let a = k.local_addr();
    // Far-future mutation: the list stays initial for the whole test.
    let p =
        "/s/catalog.mutation/mcp?params=%7B%22mutations%22%3A%5B%7B%22afterMs%22%3A600000%7D%5D%7D";
    let r = post(a, p, None, &initialize_msg(1, "2025-11-25", json!({})))
        .await
        .unwrap();
    assert_eq!(
        r.json()["result"]["capabilities"]["tools"]["listChanged"],
        true
    );
    let sid = r.header("mcp-session-id").unwrap().to_string();
    let list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list"});
    let l = post(a, p, Some(&sid), &list).await.unwrap().json();
    assert_eq!(tool_names(&l), vec!["run_configured_test_scenario"]);
    // Unlisted tools cannot be called, not even the catalogue's.
    for tool in ["extra_tool", "read_counter"] {
        let r = post(a, p, Some(&sid), &call_msg(3, tool, json!({})))
            .await
            .unwrap();
        assert_eq!(
            (r.status, r.json()["error"]["code"].clone()),
            (200, json!(-32602)),
            "{tool}"
        );
    }
    let r = post(a, p, Some(&sid), &run(4)).await.unwrap().json();
    assert_eq!(tool_text(&r)["scenarioId"], "catalog.mutation");
    // includeCatalogue lists the kitchen's tools after the run tool.
    let p2 = "/s/catalog.mutation/mcp?includeCatalogue=true";
    let sid2 = legacy_session(a, p2, json!({})).await;
    let names = tool_names(&post(a, p2, Some(&sid2), &list).await.unwrap().json());
    assert_eq!(names[0], "run_configured_test_scenario");
    assert!(names.iter().any(|n| n == "increment_counter"));
    // Bad mutations are refused when the instance is created.
    let bad = post(a, "/s/catalog.mutation/mcp?params=%7B%22mutations%22%3A%5B%7B%22action%22%3A%22explode%22%7D%5D%7D",
        None, &initialize_msg(1, "2025-11-25", json!({}))).await.unwrap();
    assert_eq!(bad.status, 400);
    assert!(bad.text().contains("action"), "{}", bad.text());
    k.shutdown().await;
}

#[tokio::test]
async fn catalog_mutation_legacy_timeline_on_the_get_stream() {
    let k = kitchen().await;
    let a = k.local_addr();
    let muts = json!({ "mutations": [
        { "action": "add", "toolName": "extra_tool", "afterMs": 1500, "listChangedNotifications": 2 },
        { "action": "remove", "toolName": "not_listed", "afterMs": 1600 },
        { "action": "rename", "toolName": "extra_tool", "newName": "renamed_tool", "afterMs": 1700 },
        { "action": "remove", "toolName": "renamed_tool", "afterMs": 1900 }
    ] });
    let q = format!("params={}", urlencode(&muts.to_string()));
    let p = format!("/s/catalog.mutation/mcp?{q}");
    // The GET stream must be open before the first mutation is due (1.5 s after initialize;
    // notifications are not queued without a stream): a wide margin even on a loaded machine.
    let sid = legacy_session(a, &p, json!({})).await;
    let mut get = get_stream(a, &p, &sid).await;
    assert_eq!(get.status, 200);
    let list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list"});
    let changed = json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"});
    // add: two notifications, then the stub is listed and callable.
    assert_eq!(get.next_message().await, changed);
    assert_eq!(get.next_message().await, changed);
    let names = tool_names(&post(a, &p, Some(&sid), &list).await.unwrap().json());
    assert_eq!(names, vec!["run_configured_test_scenario", "extra_tool"]);
    let r = post(a, &p, Some(&sid), &call_msg(3, "extra_tool", json!({})))
        .await
        .unwrap()
        .json();
    assert_eq!(
        tool_text(&r),
        json!({ "tool": "extra_tool", "message": "Stub tool executed." })
    );
    // The no-op remove sends nothing: the next notification is the rename's.
    assert_eq!(get.next_message().await, changed);
    let names = tool_names(&post(a, &p, Some(&sid), &list).await.unwrap().json());
    assert_eq!(names, vec!["run_configured_test_scenario", "renamed_tool"]);
    let r = post(a, &p, Some(&sid), &call_msg(4, "extra_tool", json!({})))
        .await
        .unwrap()
        .json();
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(get.next_message().await, changed);
    let names = tool_names(&post(a, &p, Some(&sid), &list).await.unwrap().json());
    assert_eq!(names, vec!["run_configured_test_scenario"]);
    // A second session has its own timeline, starting at its initialize.
    let sid2 = legacy_session(a, &p, json!({})).await;
    let names = tool_names(&post(a, &p, Some(&sid2), &list).await.unwrap().json());
    assert_eq!(names, vec!["run_configured_test_scenario"]);
    k.shutdown().await;
}

#[tokio::test]
async fn catalog_mutation_modern_timeline_on_listen_streams() {
    let k = kitchen().await;
    let a = k.local_addr();
    // The timeline starts with the first modern request (server/discover below); the listen
    // stream must be open before the mutation is due, hence the margin.
    let muts =
        json!({ "mutations": [{ "action": "add", "toolName": "late_tool", "afterMs": 1000 }] });
    let p = format!(
        "/s/catalog.mutation/mcp?params={}",
        urlencode(&muts.to_string())
    );
    let d = modern(a, &p, 1, "server/discover", json!({}))
        .await
        .unwrap()
        .json();
    assert_eq!(d["result"]["capabilities"]["tools"]["listChanged"], true);
    let mut s = listen(a, &p, 7, json!({ "toolsListChanged": true })).await;
    assert_eq!(s.status, 200);
    let ack = s.next_message().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    let n = s.next_message().await;
    assert_eq!(n["method"], "notifications/tools/list_changed");
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    let l = modern(a, &p, 2, "tools/list", json!({}))
        .await
        .unwrap()
        .json();
    assert_eq!(
        tool_names(&l),
        vec!["run_configured_test_scenario", "late_tool"]
    );
    let r = modern(
        a,
        &p,
        3,
        "tools/call",
        json!({ "name": "late_tool", "arguments": {} }),
    )
    .await
    .unwrap()
    .json();
    assert_eq!(tool_text(&r)["tool"], "late_tool");
    k.shutdown().await;
}

/// Percent-encode a query value.
fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `auth.oauth_flow` by hand: the challenge, the resource metadata naming the kitchen's
/// authorization server, its metadata, registration, an authorization that redirects at once
/// with a code, the token exchange with PKCE (a wrong verifier refused), the token accepted by
/// the resource, and revocation; then the metadata faults.
#[tokio::test]
async fn oauth_flow_with_the_kitchen_authorization_server() {
    use base64::Engine;
    use sha2::Digest;
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/auth.oauth_flow/mcp";
    let init = initialize_msg(1, "2025-11-25", json!({})).to_string();
    let r = send(a, "POST", p, &[ACCEPT, CT], Some(&init))
        .await
        .unwrap();
    assert_eq!(r.status, 401);
    let expected = format!("Bearer resource_metadata=\"http://{a}/.well-known/oauth-protected-resource/s/auth.oauth_flow/mcp\", scope=\"mcp:tools\"");
    assert_eq!(r.header("www-authenticate"), Some(expected.as_str()));
    let prm = send(
        a,
        "GET",
        "/.well-known/oauth-protected-resource/s/auth.oauth_flow/mcp",
        &[],
        None,
    )
    .await
    .unwrap()
    .json();
    assert_eq!(
        prm["authorization_servers"],
        json!([format!("http://{a}/oauth/none")])
    );
    let meta = send(
        a,
        "GET",
        "/.well-known/oauth-authorization-server/oauth/none",
        &[],
        None,
    )
    .await
    .unwrap()
    .json();
    assert_eq!(meta["issuer"], format!("http://{a}/oauth/none"));
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    let reg = send(
        a,
        "POST",
        "/oauth/none/register",
        &[CT],
        Some(r#"{"redirect_uris":["http://127.0.0.1:9/callback"]}"#),
    )
    .await
    .unwrap();
    assert_eq!(reg.status, 201);
    let client_id = reg.json()["client_id"].as_str().unwrap().to_string();
    let verifier = "kitchen-test-verifier-0123456789-abcdefghijklmnop";
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()));
    let resource = format!("http://{a}{p}");
    let q = format!(
        "/oauth/none/authorize?response_type=code&client_id={client_id}&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback&code_challenge={challenge}&code_challenge_method=S256&state=st1&scope=mcp%3Atools&resource={}",
        resource.replace(':', "%3A").replace('/', "%2F")
    );
    let r = send(a, "GET", &q, &[], None).await.unwrap();
    assert_eq!(r.status, 302);
    let loc = r.header("location").unwrap().to_string();
    assert!(
        loc.starts_with("http://127.0.0.1:9/callback?code=") && loc.ends_with("&state=st1"),
        "{loc}"
    );
    let code = loc
        .split("code=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_string();
    let form = |code: &str, v: &str| {
        format!(
            "grant_type=authorization_code&code={code}&client_id={client_id}&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback&code_verifier={v}&resource={}",
            resource.replace(':', "%3A").replace('/', "%2F")
        )
    };
    let fct = ("content-type", "application/x-www-form-urlencoded");
    let bad = send(
        a,
        "POST",
        "/oauth/none/token",
        &[fct],
        Some(&form(&code, "wrong-verifier")),
    )
    .await
    .unwrap();
    assert_eq!(
        (bad.status, bad.json()["error"].clone()),
        (400, json!("invalid_grant"))
    );
    // A refused exchange used the code up: authorize again.
    let r = send(a, "GET", &q, &[], None).await.unwrap();
    let loc = r.header("location").unwrap().to_string();
    let code = loc
        .split("code=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_string();
    let form = form(&code, verifier);
    let tok = send(a, "POST", "/oauth/none/token", &[fct], Some(&form))
        .await
        .unwrap();
    assert_eq!(tok.status, 200);
    let tok = tok.json();
    let access = tok["access_token"].as_str().unwrap().to_string();
    assert_eq!(tok["token_type"], "Bearer");
    assert!(tok["refresh_token"].is_string());
    let bearer = format!("Bearer {access}");
    let auth = ("authorization", bearer.as_str());
    let r = send(a, "POST", p, &[ACCEPT, CT, auth], Some(&init))
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    // The journal never holds the token.
    assert!(!serde_json::to_string(&k.kitchen().journal())
        .unwrap()
        .contains(&access));
    let rv = send(
        a,
        "POST",
        "/oauth/none/revoke",
        &[fct],
        Some(&format!("token={access}")),
    )
    .await
    .unwrap();
    assert_eq!(rv.status, 200);
    let r = send(a, "POST", p, &[ACCEPT, CT, auth], Some(&init))
        .await
        .unwrap();
    assert_eq!(r.status, 401);
    assert!(r
        .header("www-authenticate")
        .unwrap()
        .contains("error=\"invalid_token\""));
    let counters = k.kitchen().oauth_counters();
    assert_eq!(
        (
            counters["registrations"].clone(),
            counters["codeGrants"].clone(),
            counters["revocations"].clone()
        ),
        (json!(1), json!(1), json!(1))
    );
    // Metadata faults.
    let m = send(
        a,
        "GET",
        "/.well-known/oauth-authorization-server/oauth/missing_pkce",
        &[],
        None,
    )
    .await
    .unwrap()
    .json();
    assert!(m.get("code_challenge_methods_supported").is_none());
    let r = send(
        a,
        "GET",
        "/.well-known/oauth-authorization-server/oauth/metadata_404",
        &[],
        None,
    )
    .await
    .unwrap();
    assert_eq!(r.status, 404);
    let r = send(
        a,
        "GET",
        "/.well-known/oauth-authorization-server/oauth/nope",
        &[],
        None,
    )
    .await
    .unwrap();
    assert_eq!(r.status, 404);
    k.shutdown().await;
}
