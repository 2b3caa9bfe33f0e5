//! Both protocol eras, transport rules, admin API and journal, over raw HTTP.

mod common;

use common::*;
use mcp_triage_kitchen::{start, KitchenHandle, KitchenOptions};
use serde_json::{json, Value};

#[tokio::test]
async fn legacy_lifecycle_sessions_and_delete() {
    let k = kitchen().await;
    let a = k.local_addr();
    let r = post(a, "/mcp", None, &initialize_msg(1, "2025-06-18", json!({})))
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-kitchen-scenario"), Some("baseline"));
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-06-18");
    // Unknown version → newest legacy version.
    let r = post(a, "/mcp", None, &initialize_msg(1, "1999-01-01", json!({})))
        .await
        .unwrap();
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-11-25");

    let sid = legacy_session(a, "/mcp", json!({})).await;
    let ping = post(
        a,
        "/mcp",
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":5,"method":"ping"}),
    )
    .await
    .unwrap();
    assert_eq!(ping.json(), json!({"jsonrpc":"2.0","id":5,"result":{}}));
    let list = post(
        a,
        "/mcp",
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":6,"method":"tools/list"}),
    )
    .await
    .unwrap();
    let names: Vec<String> = list.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    for n in [
        "run_configured_test_scenario",
        "read_counter",
        "increment_counter",
        "set_value",
        "test_simple_text",
        "test_sampling",
    ] {
        assert!(names.contains(&n.to_string()), "{n} listed");
    }
    // Missing session → 400; unknown → 404; DELETE → then 404.
    let r = post(
        a,
        "/mcp",
        None,
        &json!({"jsonrpc":"2.0","id":7,"method":"tools/list"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 400);
    let r = post(
        a,
        "/mcp",
        Some("nope"),
        &json!({"jsonrpc":"2.0","id":7,"method":"tools/list"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 404);
    let d = send(a, "DELETE", "/mcp", &[("mcp-session-id", &sid)], None)
        .await
        .unwrap();
    assert_eq!(d.status, 200);
    let r = post(
        a,
        "/mcp",
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":8,"method":"ping"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["code"], -32001);
    // Unsupported MCP-Protocol-Version on a legacy session → 400.
    let sid = legacy_session(a, "/mcp", json!({})).await;
    let r = send(
        a,
        "POST",
        "/mcp",
        &[
            ACCEPT,
            CT,
            ("mcp-session-id", &sid),
            ("mcp-protocol-version", "2024-01-01"),
        ],
        Some(&json!({"jsonrpc":"2.0","id":9,"method":"ping"}).to_string()),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 400);
    k.shutdown().await;
}

#[tokio::test]
async fn modern_header_checks_and_discover() {
    let k = kitchen().await;
    let a = k.local_addr();
    let d = modern(a, "/mcp", 1, "server/discover", json!({}))
        .await
        .unwrap();
    assert_eq!(d.status, 200);
    let dr = d.json();
    assert_eq!(dr["result"]["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(dr["result"]["resultType"], "complete");
    assert!(dr["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].is_string());

    let body = |method: &str, params: Value| {
        json!({"jsonrpc":"2.0","id":2,"method":method,"params":params}).to_string()
    };
    let p = json!({"name":"test_simple_text","_meta": meta()});
    // Missing MCP-Protocol-Version.
    let r = send(
        a,
        "POST",
        "/mcp",
        &[
            ACCEPT,
            CT,
            ("mcp-method", "tools/call"),
            ("mcp-name", "test_simple_text"),
        ],
        Some(&body("tools/call", p.clone())),
    )
    .await
    .unwrap();
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, json!(-32020))
    );
    assert_eq!(r.json()["id"], 2);
    // Mcp-Name mismatch.
    let r = send(
        a,
        "POST",
        "/mcp",
        &[
            ACCEPT,
            CT,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "other"),
        ],
        Some(&body("tools/call", p.clone())),
    )
    .await
    .unwrap();
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, json!(-32020))
    );
    // Base64 form of Mcp-Name is accepted ("test_simple_text").
    let r = send(
        a,
        "POST",
        "/mcp",
        &[
            ACCEPT,
            CT,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?dGVzdF9zaW1wbGVfdGV4dA==?="),
        ],
        Some(&body("tools/call", p.clone())),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json()["result"]["content"][0]["text"],
        "This is a simple text response for testing."
    );
    // Mcp-Method mismatch.
    let r = send(
        a,
        "POST",
        "/mcp",
        &[
            ACCEPT,
            CT,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
            ("mcp-name", "test_simple_text"),
        ],
        Some(&body("tools/call", p.clone())),
    )
    .await
    .unwrap();
    assert_eq!(r.json()["error"]["code"], -32020);
    // Unsupported version (header and _meta agree).
    let mut m = meta();
    m["io.modelcontextprotocol/protocolVersion"] = json!("2027-01-01");
    let r = send(
        a,
        "POST",
        "/mcp",
        &[
            ACCEPT,
            CT,
            ("mcp-protocol-version", "2027-01-01"),
            ("mcp-method", "tools/list"),
        ],
        Some(&body("tools/list", json!({"_meta": m}))),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32022);
    assert_eq!(
        r.json()["error"]["data"],
        json!({"supported":["2026-07-28"],"requested":"2027-01-01"})
    );
    // Missing clientCapabilities → -32602, HTTP 400.
    let r = send(
        a,
        "POST",
        "/mcp",
        &[
            ACCEPT,
            CT,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ],
        Some(&body(
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
        )),
    )
    .await
    .unwrap();
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, json!(-32602))
    );
    // Unknown method → 404 + -32601; ping is gone in 2026.
    let r = modern(a, "/mcp", 3, "ping", json!({})).await.unwrap();
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (404, json!(-32601))
    );
    // GET / DELETE → 405.
    for m in ["GET", "DELETE"] {
        let r = send(
            a,
            m,
            "/mcp",
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("accept", "text/event-stream"),
            ],
            None,
        )
        .await
        .unwrap();
        assert_eq!(r.status, 405, "{m}");
    }
    // Cacheable results carry ttlMs/cacheScope.
    let r = modern(a, "/mcp", 4, "tools/list", json!({})).await.unwrap();
    assert_eq!(r.json()["result"]["cacheScope"], "private");
    // Notification → 202.
    let r = send(a, "POST", "/mcp", &[ACCEPT, CT, ("mcp-protocol-version", "2026-07-28")],
        Some(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta": meta(), "requestId": 1}}).to_string())).await.unwrap();
    assert_eq!(r.status, 202);
    k.shutdown().await;
}

#[tokio::test]
async fn progress_goes_on_sse_and_json_mode_is_a_knob() {
    let k = kitchen().await;
    let a = k.local_addr();
    let sid = legacy_session(a, "/mcp", json!({})).await;
    let msg = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_configured_test_scenario","_meta":{"progressToken":"p1"}}});
    let r = post(a, "/mcp", Some(&sid), &msg).await.unwrap();
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let msgs = r.sse_messages();
    assert_eq!(msgs[0]["method"], "notifications/progress");
    assert_eq!(msgs[0]["params"]["progressToken"], "p1");
    assert_eq!(msgs.last().unwrap()["id"], 2);
    assert!(
        r.text().starts_with("id: "),
        "2025-11-25 streams start with a priming event"
    );
    // Same call without a token → plain JSON.
    let r = post(
        a,
        "/mcp",
        Some(&sid),
        &call_msg(3, "run_configured_test_scenario", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(r.header("content-type"), Some("application/json"));
    // responseMode=sse knob on a URL instance.
    let p = "/s/baseline/mcp?responseMode=sse";
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(
        a,
        p,
        Some(&sid),
        &call_msg(2, "test_simple_text", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.rpc()["result"]["content"][0]["type"], "text");
    // In sse mode plain methods stream too (as the reference servers do), one event each.
    let r = post(
        a,
        p,
        Some(&sid),
        &json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" }),
    )
    .await
    .unwrap();
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert!(
        r.text().starts_with("event: message\ndata: {"),
        "{}",
        r.text()
    );
    assert_eq!(r.sse_messages().len(), 1);
    assert_eq!(r.rpc()["id"], 3);
    assert!(r.rpc()["result"]["tools"].is_array());
    k.shutdown().await;
}

#[tokio::test]
async fn origin_size_and_parse_errors() {
    let k = kitchen_with(KitchenOptions {
        max_body_bytes: 1000,
        ..Default::default()
    })
    .await;
    let a = k.local_addr();
    let init = initialize_msg(1, "2025-11-25", json!({})).to_string();
    let r = send(
        a,
        "POST",
        "/mcp",
        &[ACCEPT, CT, ("origin", "http://evil.example.com")],
        Some(&init),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 403);
    assert_eq!(r.header("x-kitchen-scenario"), Some("baseline"));
    let r = send(
        a,
        "POST",
        "/mcp",
        &[ACCEPT, CT, ("origin", "http://localhost:5173")],
        Some(&init),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
        "a".repeat(2000)
    );
    let r = send(a, "POST", "/mcp", &[ACCEPT, CT], Some(&big))
        .await
        .unwrap();
    assert_eq!(r.status, 413);
    assert_eq!(r.json()["error"]["code"], -32600);
    let r = send(a, "POST", "/mcp", &[ACCEPT, CT], Some("{not json"))
        .await
        .unwrap();
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32700);
    assert_eq!(r.json()["id"], Value::Null);
    k.shutdown().await;
}

#[tokio::test]
async fn side_effect_tools_are_counted_and_annotated() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/baseline/mcp?instance=side";
    let sid = legacy_session(a, p, json!({})).await;
    let list = post(
        a,
        p,
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
    )
    .await
    .unwrap()
    .json();
    let tools = list["result"]["tools"].as_array().unwrap();
    let ann = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap()["annotations"].clone();
    assert_eq!(ann("read_counter")["readOnlyHint"], true);
    assert_eq!(
        (
            ann("increment_counter")["destructiveHint"].clone(),
            ann("increment_counter")["idempotentHint"].clone()
        ),
        (json!(true), json!(false))
    );
    assert_eq!(ann("set_value")["idempotentHint"], true);
    for i in 0..3 {
        let r = post(
            a,
            p,
            Some(&sid),
            &call_msg(10 + i, "increment_counter", json!({})),
        )
        .await
        .unwrap();
        assert_eq!(r.json()["result"]["structuredContent"]["counter"], i + 1);
    }
    post(
        a,
        p,
        Some(&sid),
        &call_msg(20, "set_value", json!({"key":"k","value":1})),
    )
    .await
    .unwrap();
    let r = post(a, p, Some(&sid), &call_msg(21, "read_counter", json!({})))
        .await
        .unwrap();
    assert_eq!(r.json()["result"]["structuredContent"]["counter"], 3);
    let key = "baseline{}#side";
    assert_eq!(k.kitchen().counter(key, "increment_counter"), 3);
    assert_eq!(k.kitchen().counter(key, "set_value"), 1);
    assert_eq!(k.kitchen().counter(key, "tools_call"), 5);
    k.shutdown().await;
}

#[tokio::test]
async fn admin_api_selection_counters_journal_reset() {
    let k = kitchen_with_admin_token(Some("s3cret")).await;
    let a = k.local_addr();
    let auth = ("authorization", "Bearer s3cret");
    let r = send(a, "GET", "/kitchen/scenarios", &[], None)
        .await
        .unwrap();
    assert_eq!(r.status, 401);
    let r = send(a, "GET", "/kitchen/scenarios", &[auth], None)
        .await
        .unwrap();
    let ids: Vec<Value> = r.json()["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].clone())
        .collect();
    assert!(ids.contains(&json!("errors.http_status_sequence")));
    let bad = send(
        a,
        "PUT",
        "/kitchen/selection",
        &[auth, CT],
        Some(r#"{"scenarioId":"no.such"}"#),
    )
    .await
    .unwrap();
    assert_eq!(bad.status, 400);
    let bad = send(
        a,
        "PUT",
        "/kitchen/selection",
        &[auth, CT],
        Some(r#"{"scenarioId":"errors.tool_error","params":{"onInvocation":"x"}}"#),
    )
    .await
    .unwrap();
    assert_eq!(bad.status, 400);
    // A running session keeps its instance; a new one gets the new selection.
    let old = legacy_session(a, "/mcp", json!({})).await;
    let ok = send(
        a,
        "PUT",
        "/kitchen/selection",
        &[auth, CT],
        Some(r#"{"scenarioId":"errors.tool_error","paramsJson":"{\"errorMessage\":\"boom\"}"}"#),
    )
    .await
    .unwrap();
    assert_eq!(ok.status, 200);
    let sel = send(a, "GET", "/kitchen/selection", &[auth], None)
        .await
        .unwrap()
        .json();
    assert_eq!(sel["scenarioId"], "errors.tool_error");
    let r = post(
        a,
        "/mcp",
        Some(&old),
        &call_msg(2, "run_configured_test_scenario", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(r.header("x-kitchen-scenario"), Some("baseline"));
    assert!(r.json()["result"].get("isError").is_none());
    let new = legacy_session(a, "/mcp", json!({})).await;
    let r = post(
        a,
        "/mcp",
        Some(&new),
        &call_msg(3, "run_configured_test_scenario", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(r.header("x-kitchen-scenario"), Some("errors.tool_error"));
    assert_eq!(r.json()["result"]["isError"], true);
    assert_eq!(tool_text(&r.json())["errorMessage"], "boom");
    // Modern requests follow the selection immediately.
    let r = modern(
        a,
        "/mcp",
        4,
        "tools/call",
        json!({"name":"run_configured_test_scenario"}),
    )
    .await
    .unwrap();
    assert_eq!(r.header("x-kitchen-scenario"), Some("errors.tool_error"));
    // Counters and journal.
    let c = send(a, "GET", "/kitchen/counters", &[auth], None)
        .await
        .unwrap()
        .json();
    assert!(c["instances"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["scenario"] == "errors.tool_error" && i["counters"]["tools_call"] == 2));
    let _ = send(a, "POST", "/mcp", &[ACCEPT, CT, ("authorization", "Bearer leak-me"), ("cookie", "c=1")],
        Some(&json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x","arguments":{"a":1}}}).to_string())).await.unwrap();
    let j = send(a, "GET", "/kitchen/journal", &[auth], None)
        .await
        .unwrap();
    assert_eq!(j.header("content-type"), Some("application/jsonl"));
    let text = j.text();
    assert!(!text.contains("leak-me") && text.contains("[redacted]"));
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    for key in [
        "time",
        "instance",
        "session",
        "method",
        "id",
        "tool",
        "argumentsHash",
        "headers",
        "injected",
        "status",
    ] {
        assert!(last.get(key).is_some(), "journal has {key}");
    }
    assert_eq!(last["tool"], "x");
    let injected = k.kitchen().journal().iter().any(|e| {
        e["injected"]
            .as_str()
            .is_some_and(|s| s.contains("isError"))
    });
    assert!(injected, "the tool error was journaled as injected");
    let r = send(a, "POST", "/kitchen/reset", &[auth], None)
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(
        send(a, "GET", "/kitchen/journal", &[auth], None)
            .await
            .unwrap()
            .text(),
        ""
    );
    k.shutdown().await;
}

/// A kitchen whose admin API needs `Authorization: Bearer <token>` (none: open).
async fn kitchen_with_admin_token(token: Option<&str>) -> KitchenHandle {
    kitchen_with(KitchenOptions {
        admin_token: token.map(str::to_string),
        ..Default::default()
    })
    .await
}

/// Issue 15 item 2: the admin API applies the DNS-rebinding check of `/mcp`. A page on another
/// site must not change the selection through a browser (`Origin`), nor through a rebound name
/// (`Host`), with or without a token configured; the refused request changes nothing.
#[tokio::test]
async fn admin_api_refuses_foreign_host_and_origin() {
    for token in [None, Some("s3cret")] {
        let k = kitchen_with_admin_token(token).await;
        let a = k.local_addr();
        let auth = ("authorization", "Bearer s3cret");
        let port = a.port();
        let evil_host = format!("evil.example:{port}");
        let put = r#"{"scenarioId":"errors.tool_error"}"#;
        let refused: [&[(&str, &str)]; 3] = [
            &[auth, CT, ("origin", "http://evil.example")],
            &[auth, CT, ("host", &evil_host)],
            &[auth, CT, ("origin", "null")],
        ];
        for headers in refused {
            let r = send(a, "PUT", "/kitchen/selection", headers, Some(put))
                .await
                .unwrap();
            assert_eq!(r.status, 403, "{token:?} {headers:?}");
            assert_eq!(
                r.json()["error"],
                "Forbidden: invalid Host or Origin header"
            );
        }
        for path in [
            "/kitchen/scenarios",
            "/kitchen/selection",
            "/kitchen/counters",
            "/kitchen/journal",
        ] {
            let r = send(
                a,
                "GET",
                path,
                &[auth, ("origin", "https://evil.example")],
                None,
            )
            .await
            .unwrap();
            assert_eq!(r.status, 403, "GET {path}");
        }
        let r = send(
            a,
            "POST",
            "/kitchen/reset",
            &[auth, ("host", &evil_host)],
            None,
        )
        .await
        .unwrap();
        assert_eq!(r.status, 403);
        assert_eq!(k.kitchen().shared().selection().scenario, "baseline");
        // The same request from a loopback page goes through.
        let r = send(
            a,
            "PUT",
            "/kitchen/selection",
            &[auth, CT, ("origin", &format!("http://localhost:{port}"))],
            Some(put),
        )
        .await
        .unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(
            k.kitchen().shared().selection().scenario,
            "errors.tool_error"
        );
        k.shutdown().await;
    }
}

/// The status of an `initialize` POSTed to `/mcp` with this `Host`.
async fn initialize_status(a: std::net::SocketAddr, host: &str) -> u16 {
    let init = initialize_msg(1, "2025-11-25", json!({})).to_string();
    send(
        a,
        "POST",
        "/mcp",
        &[ACCEPT, CT, ("host", host)],
        Some(&init),
    )
    .await
    .unwrap()
    .status
}

/// Issue 15 item 7: `Host` may name loopback in any spelling a client uses (`127.1`, `127.0.1`,
/// `localhost`, `[::1]`, with or without a port), on `/mcp` and on the admin API alike.
#[tokio::test]
async fn loopback_host_spellings_are_accepted() {
    let k = kitchen().await;
    let a = k.local_addr();
    let port = a.port();
    let hosts = [
        "127.1".to_string(),
        format!("127.1:{port}"),
        "127.0.1".to_string(),
        format!("127.0.1:{port}"),
        "localhost".to_string(),
        format!("LOCALHOST:{port}"),
        "[::1]".to_string(),
        format!("[::1]:{port}"),
        format!("127.0.0.1:{port}"),
    ];
    for host in &hosts {
        assert_eq!(
            initialize_status(a, host).await,
            200,
            "POST /mcp, Host {host}"
        );
        let r = send(a, "GET", "/kitchen/selection", &[("host", host)], None)
            .await
            .unwrap();
        assert_eq!(r.status, 200, "GET /kitchen/selection with Host {host}");
        let origin = format!("http://{host}");
        let r = send(a, "GET", "/kitchen/selection", &[("origin", &origin)], None)
            .await
            .unwrap();
        assert_eq!(r.status, 200, "Origin {origin}");
    }
    for host in [
        "127.1.evil.example",
        "128.0.0.1",
        "localhost.evil.example:80",
    ] {
        assert_eq!(
            initialize_status(a, host).await,
            403,
            "POST /mcp, Host {host}"
        );
    }
    k.shutdown().await;
}

/// Issue 15 item 7: the `Bearer` scheme is case-insensitive (RFC 9110 §11.1, RFC 6750 §2.1).
#[tokio::test]
async fn bearer_scheme_is_matched_case_insensitively() {
    let k = kitchen_with_admin_token(Some("s3cret")).await;
    let a = k.local_addr();
    for value in [
        "Bearer s3cret",
        "bearer s3cret",
        "BEARER s3cret",
        "bEaReR  s3cret",
    ] {
        let r = send(
            a,
            "GET",
            "/kitchen/selection",
            &[("authorization", value)],
            None,
        )
        .await
        .unwrap();
        assert_eq!(r.status, 200, "{value}");
    }
    for value in ["bearer S3CRET", "Basic s3cret", "Bearers3cret", "bearer"] {
        let r = send(
            a,
            "GET",
            "/kitchen/selection",
            &[("authorization", value)],
            None,
        )
        .await
        .unwrap();
        assert_eq!(r.status, 401, "{value}");
    }
    k.shutdown().await;
}

/// Issue 15 item 7: an empty admin token is refused by the library (both constructors), not
/// taken as "any `Bearer ` header".
#[tokio::test]
async fn empty_admin_token_is_refused() {
    for token in ["", " ", " s3cret", "s3cret\t"] {
        let options = KitchenOptions {
            admin_token: Some(token.to_string()),
            ..Default::default()
        };
        for addr in ["127.0.0.1:0", "0.0.0.0:0"] {
            let r = start(addr.parse().unwrap(), options.clone()).await;
            assert!(
                matches!(r, Err(mcp_triage_kitchen::KitchenError::UnusableAdminToken)),
                "{token:?} on {addr}"
            );
        }
        assert!(matches!(
            mcp_triage_kitchen::Kitchen::new(options),
            Err(mcp_triage_kitchen::KitchenError::UnusableAdminToken)
        ));
    }
}

#[tokio::test]
async fn non_loopback_needs_admin_token() {
    let r = start("0.0.0.0:0".parse().unwrap(), KitchenOptions::default()).await;
    assert!(matches!(
        r,
        Err(mcp_triage_kitchen::KitchenError::NonLoopback(_))
    ));
    let r = start(
        "127.0.0.1:0".parse().unwrap(),
        KitchenOptions {
            scenario: "nope".into(),
            ..Default::default()
        },
    )
    .await;
    assert!(matches!(
        r,
        Err(mcp_triage_kitchen::KitchenError::UnknownScenario(_))
    ));
}

/// The 2026-07-28 conformance fixtures: removed `initialize`, MRTR rounds with a changing
/// signed `requestState`, a tampered state, -32021 with HTTP 400 even in sse mode.
#[tokio::test]
async fn fixtures_2026_mrtr_and_removed_methods() {
    let k = kitchen_with(KitchenOptions {
        response_mode: mcp_triage_kitchen::ResponseMode::Sse,
        ..Default::default()
    })
    .await;
    let a = k.local_addr();
    let r = modern(a, "/mcp", 1, "initialize", json!({})).await.unwrap();
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], -32601);
    assert_eq!(r.json()["id"], 1);

    let call = |id: i64, extra: Value| {
        let mut p = json!({ "name": "test_input_required_result_multi_round", "arguments": {} });
        if let (Some(o), Some(e)) = (p.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        modern(a, "/mcp", id, "tools/call", p)
    };
    let r1 = call(2, json!({})).await.unwrap().rpc();
    assert_eq!(r1["result"]["resultType"], "input_required");
    assert_eq!(
        r1["result"]["inputRequests"]["step1"]["method"],
        "elicitation/create"
    );
    let s1 = r1["result"]["requestState"].as_str().unwrap().to_string();
    let r2 = call(3, json!({ "inputResponses": { "step1": { "action": "accept", "content": { "name": "Ada" } } }, "requestState": s1 }))
        .await
        .unwrap()
        .rpc();
    assert_eq!(r2["result"]["resultType"], "input_required");
    assert!(r2["result"]["inputRequests"]["step2"].is_object());
    let s2 = r2["result"]["requestState"].as_str().unwrap().to_string();
    assert_ne!(s1, s2, "each round has its own state");
    let r3 = call(4, json!({ "inputResponses": { "step2": { "action": "accept", "content": { "color": "teal" } } }, "requestState": s2 }))
        .await
        .unwrap()
        .rpc();
    assert_eq!(r3["result"]["resultType"], "complete");
    assert_eq!(
        r3["result"]["content"][0]["text"],
        "Done after 2 rounds: name=Ada, color=teal"
    );
    // Tampered state: one character changed → -32602.
    let mut bad = s2.clone().into_bytes();
    let last = bad.len() - 1;
    bad[last] = if bad[last] == b'A' { b'B' } else { b'A' };
    let r = call(
        5,
        json!({ "inputResponses": {}, "requestState": String::from_utf8(bad).unwrap() }),
    )
    .await
    .unwrap();
    assert_eq!(r.rpc()["error"]["code"], -32602);

    // Missing sampling capability: 400 + -32021 as JSON, although the server streams.
    let mut m = meta();
    m["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let r = modern(
        a,
        "/mcp",
        6,
        "tools/call",
        json!({ "name": "test_missing_capability", "arguments": {}, "_meta": m }),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 400);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["error"]["code"], -32021);
    assert_eq!(
        r.json()["error"]["data"]["requiredCapabilities"],
        json!({ "sampling": {} })
    );
    k.shutdown().await;
}

/// Keep-alive connections that stay idle are closed after `header_read_timeout` (hyper applies
/// it while waiting for the next request's headers), so idle clients cannot pin sockets.
#[tokio::test]
async fn idle_keep_alive_connection_is_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let k = kitchen_with(KitchenOptions {
        header_read_timeout: std::time::Duration::from_millis(300),
        ..Default::default()
    })
    .await;
    let mut s = tokio::net::TcpStream::connect(k.local_addr())
        .await
        .unwrap();
    s.write_all(b"GET /kitchen/scenarios HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let n = tokio::time::timeout(STEP, s.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    // Drain the rest of the response, then wait for the server to close the idle connection.
    let t0 = std::time::Instant::now();
    loop {
        let n = tokio::time::timeout(STEP, s.read(&mut buf))
            .await
            .expect("closed within the step")
            .unwrap_or(0);
        if n == 0 {
            break;
        }
    }
    assert!(t0.elapsed() < std::time::Duration::from_secs(5));
    k.shutdown().await;
}

#[tokio::test]
async fn subscriptions_listen_acknowledges_filters_and_tags() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/baseline/mcp?instance=listen";
    let d = modern(a, p, 1, "server/discover", json!({}))
        .await
        .unwrap()
        .json();
    let caps = &d["result"]["capabilities"];
    assert_eq!(
        (
            caps["tools"]["listChanged"].clone(),
            caps["prompts"]["listChanged"].clone(),
            caps["resources"]["subscribe"].clone()
        ),
        (json!(true), json!(true), json!(true))
    );
    // Prompts only: a tools change must not leak onto this stream.
    let mut s = listen(
        a,
        p,
        11,
        json!({ "promptsListChanged": true, "resourcesListChanged": true }),
    )
    .await;
    assert_eq!(s.status, 200);
    assert!(s
        .headers
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let ack = s.next_message().await;
    assert_eq!(
        ack,
        json!({ "jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": { "_meta": { "io.modelcontextprotocol/subscriptionId": 11 }, "notifications": { "promptsListChanged": true } } })
    );
    for tool in ["test_trigger_tool_change", "test_trigger_prompt_change"] {
        let r = modern(
            a,
            p,
            2,
            "tools/call",
            json!({ "name": tool, "arguments": {} }),
        )
        .await
        .unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
    }
    assert_eq!(
        s.next_message().await,
        json!({ "jsonrpc": "2.0", "method": "notifications/prompts/list_changed",
        "params": { "_meta": { "io.modelcontextprotocol/subscriptionId": 11 } } })
    );
    // A malformed filter is a -32602 with HTTP 400.
    let bad = modern(
        a,
        p,
        3,
        "subscriptions/listen",
        json!({ "notifications": { "resourceSubscriptions": "x" } }),
    )
    .await
    .unwrap();
    assert_eq!(
        (
            bad.status,
            bad.json()["error"]["code"].clone(),
            bad.json()["id"].clone()
        ),
        (400, json!(-32602), json!(3))
    );
    // The legacy era has no subscriptions/listen.
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(
        a,
        p,
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":4,"method":"subscriptions/listen","params":{}}),
    )
    .await
    .unwrap();
    assert_eq!(r.json()["error"]["code"], -32601);
    k.shutdown().await;
}

#[tokio::test]
async fn counter_resource_updates_reach_subscribers_in_both_eras() {
    let k = kitchen().await;
    let a = k.local_addr();
    let p = "/s/baseline/mcp?instance=updates";
    let uri = "kitchen://instance/counter";
    // Legacy: resources/subscribe, then the update arrives on the GET stream.
    let sid = legacy_session(a, p, json!({})).await;
    let r = post(
        a,
        p,
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":uri}}),
    )
    .await
    .unwrap();
    assert_eq!(r.json()["result"], json!({}));
    let mut get = get_stream(a, p, &sid).await;
    // 2026: a listen stream on the same instance asks for the same URI.
    let mut s = listen(a, p, 21, json!({ "resourceSubscriptions": [uri] })).await;
    assert_eq!(
        s.next_message().await["params"]["notifications"],
        json!({ "resourceSubscriptions": [uri] })
    );
    let r = post(
        a,
        p,
        Some(&sid),
        &call_msg(3, "increment_counter", json!({ "by": 2 })),
    )
    .await
    .unwrap();
    assert_eq!(r.rpc()["result"]["structuredContent"]["counter"], 2);
    let updated = json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": uri } });
    assert_eq!(get.next_message().await, updated);
    assert_eq!(
        s.next_message().await,
        json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated",
        "params": { "uri": uri, "_meta": { "io.modelcontextprotocol/subscriptionId": 21 } } })
    );
    let r = modern(a, p, 4, "resources/read", json!({ "uri": uri }))
        .await
        .unwrap()
        .json();
    assert_eq!(r["result"]["contents"][0]["text"], "{\"counter\":2}");
    // After unsubscribe the GET stream hears the next change only if it is something else:
    // a tools-list hook arrives, the counter update (now unsubscribed) does not come first.
    let r = post(
        a,
        p,
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":5,"method":"resources/unsubscribe","params":{"uri":uri}}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    post(
        a,
        p,
        Some(&sid),
        &call_msg(6, "increment_counter", json!({})),
    )
    .await
    .unwrap();
    post(
        a,
        p,
        Some(&sid),
        &call_msg(7, "test_trigger_tool_change", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(
        get.next_message().await["method"],
        "notifications/tools/list_changed"
    );
    k.shutdown().await;
}

#[tokio::test]
async fn per_url_instances_are_bounded_with_lru_eviction() {
    let k = kitchen_with(KitchenOptions {
        max_instances: 3,
        ..KitchenOptions::default()
    })
    .await;
    let a = k.local_addr();
    let bump = |tag: &'static str| async move {
        let p = format!("/s/baseline/mcp?instance={tag}");
        let r = modern(
            a,
            &p,
            1,
            "tools/call",
            json!({ "name": "increment_counter", "arguments": {} }),
        )
        .await
        .unwrap();
        r.json()["result"]["structuredContent"]["counter"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(bump("a").await, 1);
    assert_eq!(bump("b").await, 1);
    assert_eq!(bump("c").await, 1);
    assert_eq!(bump("a").await, 2); // a is now the most recently used
    assert_eq!(bump("d").await, 1); // evicts b, the least recently used
    let keys: Vec<String> = k
        .kitchen()
        .counters()
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["instance"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(keys.iter().all(|k| !k.ends_with("#b")), "{keys:?}");
    assert_eq!(bump("a").await, 3, "a kept its state");
    assert_eq!(bump("b").await, 1, "b starts afresh after eviction");
    k.shutdown().await;
}

/// A client that stops in the middle of its headers is disconnected (header read timeout),
/// and one that stops in the middle of its body gets 408 + a JSON-RPC error (body read
/// timeout): neither can hold a connection open.
#[tokio::test]
async fn slow_headers_and_slow_bodies_are_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let k = kitchen_with(KitchenOptions {
        header_read_timeout: std::time::Duration::from_millis(300),
        body_read_timeout: std::time::Duration::from_millis(300),
        ..Default::default()
    })
    .await;
    let read_all = |mut s: tokio::net::TcpStream| async move {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = tokio::time::timeout(STEP, s.read(&mut buf))
                .await
                .expect("server acts within the step")
                .unwrap_or(0);
            if n == 0 {
                return out;
            }
            out.extend_from_slice(&buf[..n]);
        }
    };
    let mut s = tokio::net::TcpStream::connect(k.local_addr())
        .await
        .unwrap();
    s.write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-ty")
        .await
        .unwrap();
    let got = read_all(s).await;
    assert!(
        got.is_empty() || got.starts_with(b"HTTP/1.1 408"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
    let mut s = tokio::net::TcpStream::connect(k.local_addr())
        .await
        .unwrap();
    s.write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 100\r\nconnection: close\r\n\r\n{\"jsonrpc\"")
        .await
        .unwrap();
    let got = String::from_utf8_lossy(&read_all(s).await).into_owned();
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    assert!(got.contains("\"code\":-32600"), "{got}");
    k.shutdown().await;
}

#[tokio::test]
async fn session_table_is_bounded_with_lru_eviction() {
    let k = kitchen_with(KitchenOptions {
        max_sessions: 2,
        ..KitchenOptions::default()
    })
    .await;
    let a = k.local_addr();
    let list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list"});
    let s1 = legacy_session(a, "/mcp", json!({})).await;
    let s2 = legacy_session(a, "/mcp", json!({})).await;
    assert_eq!(post(a, "/mcp", Some(&s1), &list).await.unwrap().status, 200); // s1 most recent
    let s3 = legacy_session(a, "/mcp", json!({})).await; // evicts s2
    assert_eq!(post(a, "/mcp", Some(&s2), &list).await.unwrap().status, 404);
    assert_eq!(post(a, "/mcp", Some(&s1), &list).await.unwrap().status, 200);
    assert_eq!(post(a, "/mcp", Some(&s3), &list).await.unwrap().status, 200);
    k.shutdown().await;
}

/// Issue 23 item 16: a request whose chunked encoding is broken is a bad request (400), not
/// one over the size limit (413), and the answer says which.
#[tokio::test]
async fn invalid_chunked_body_is_400_not_413() {
    let k = kitchen().await;
    let a = k.local_addr();
    let text = post_broken_chunked_body(a).await;
    assert!(text.starts_with("HTTP/1.1 400"), "{text}");
    assert!(text.contains("Request body malformed"), "{text}");
    k.shutdown().await;
}

/// Issue 23 item 9: many requests with big headers keep `GET /kitchen/journal` under the byte
/// cap; the oldest entries go, counted in `X-Kitchen-Journal-Dropped`; long header values are
/// cut with a marker.
#[tokio::test]
async fn journal_stays_under_its_byte_cap_with_big_headers() {
    let cap = 256 * 1024;
    let k = kitchen_with(KitchenOptions {
        journal_max_bytes: cap,
        journal_max_field_bytes: 4096,
        ..KitchenOptions::default()
    })
    .await;
    let a = k.local_addr();
    let big = "h".repeat(100 * 1024);
    let ping = initialize_msg(1, "2025-06-18", json!({})).to_string();
    for i in 0..300 {
        let n = i.to_string();
        let r = send(
            a,
            "POST",
            "/mcp",
            &[ACCEPT, CT, ("x-big", &big), ("x-n", &n)],
            Some(&ping),
        )
        .await
        .unwrap();
        assert_eq!(r.status, 200);
    }
    let j = send(a, "GET", "/kitchen/journal", &[], None).await.unwrap();
    let text = j.text();
    assert!(text.len() <= cap, "journal is {} bytes", text.len());
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() > 20, "{} entries kept", lines.len());
    let last = lines.last().unwrap();
    assert_eq!(last["headers"]["x-n"], "299");
    let v = last["headers"]["x-big"].as_str().unwrap();
    assert!(
        v.ends_with(&format!("…[truncated {} bytes]", 100 * 1024 - 4096)),
        "{}",
        &v[v.len() - 40..]
    );
    let dropped: u64 = j
        .header("x-kitchen-journal-dropped")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(dropped, 300 - lines.len() as u64);
    k.shutdown().await;
}
