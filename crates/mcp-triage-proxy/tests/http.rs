//! The HTTP observer against the in-process kitchen: bytes unchanged, one record per request,
//! verdicts equal to the client's, retries observed, limits, unreachable upstream, drain.

mod common;

use common::*;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_and_sse_bodies_pass_byte_for_byte() {
    let rig = Rig::new().await;
    for (i, mode) in ["json", "sse"].into_iter().enumerate() {
        let path = format!("/s/baseline/mcp?responseMode={mode}");
        let p = json!({"name": "test_simple_text", "arguments": {}});
        let d = modern(rig.direct(), &path, 10 + i as i64, "tools/call", p.clone())
            .await
            .unwrap();
        let v = modern(rig.via(), &path, 10 + i as i64, "tools/call", p)
            .await
            .unwrap();
        assert_eq!(d.status, 200);
        assert_eq!(
            (d.status, d.sha()),
            (v.status, v.sha()),
            "{mode}: {}",
            v.text()
        );
        assert_eq!(d.header("content-type"), v.header("content-type"));
        assert_eq!(v.header("x-kitchen-scenario"), Some("baseline"));
    }
    // Other paths and methods pass too.
    let d = send(
        rig.direct(),
        "GET",
        "/.well-known/oauth-protected-resource",
        &[],
        None,
    )
    .await
    .unwrap();
    let v = send(
        rig.via(),
        "GET",
        "/.well-known/oauth-protected-resource",
        &[],
        None,
    )
    .await
    .unwrap();
    // The same document, except that behind the proxy it names the proxy's address (the
    // kitchen honours the X-Forwarded-Host the proxy sends: issue 23 item 15).
    assert_eq!(d.status, v.status);
    let (direct_addr, via_addr) = (rig.direct().to_string(), rig.via().to_string());
    assert!(v.text().contains(&via_addr), "{}", v.text());
    assert!(!v.text().contains(&direct_addr), "{}", v.text());
    assert_eq!(v.text().replace(&via_addr, &direct_addr), d.text());
    let records = rig.finish().await;
    assert_eq!(records.len(), 3, "{records:#?}");
    for id in [10, 11] {
        let r = by_id(&records, id);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].outcome, "TOOL_SUCCESS");
        assert_eq!(r[0].tool.as_deref(), Some("test_simple_text"));
        assert_eq!(r[0].protocol_version.as_deref(), Some("2026-07-28"));
        assert_eq!(
            r[0].client.as_ref().and_then(|c| c.name.as_deref()),
            Some("proxy-test")
        );
        assert!(r[0].response_bytes > 0 && r[0].request_bytes > 0);
        assert!(r[0].arguments.is_none() && r[0].arguments_hash.is_some());
    }
    assert!(records.iter().any(|r| r.path.as_deref()
        == Some("/.well-known/oauth-protected-resource")
        && r.outcome == "FORWARDED"));
}

/// Compressed answers (the kitchen's `contentEncoding`, JSON and SSE, each coding the core
/// decodes): the client gets the compressed bytes exactly as the server sent them, and the
/// records hold the verdicts of the decoded bodies (a success and a tool error), not
/// MALFORMED_JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_answers_pass_unchanged_and_are_judged_decoded() {
    let rig = Rig::new().await;
    let cases = [
        ("gzip", "json", "test_simple_text", "TOOL_SUCCESS"),
        ("br", "sse", "test_simple_text", "TOOL_SUCCESS"),
        ("zstd", "json", "test_error_handling", "TOOL_ERROR"),
        ("deflate", "sse", "test_error_handling", "TOOL_ERROR"),
        ("gzip", "sse", "test_simple_text", "TOOL_SUCCESS"),
    ];
    for (i, (coding, mode, tool, _)) in cases.iter().enumerate() {
        let path = format!("/s/baseline/mcp?responseMode={mode}&contentEncoding={coding}");
        let id = 40 + i as i64;
        let p = json!({"name": tool, "arguments": {}});
        let d = modern(rig.direct(), &path, id, "tools/call", p.clone())
            .await
            .unwrap();
        let v = modern(rig.via(), &path, id, "tools/call", p).await.unwrap();
        assert_eq!(d.status, 200, "{coding} {mode}");
        assert_eq!(d.header("content-encoding"), Some(*coding));
        assert_eq!(v.header("content-encoding"), Some(*coding));
        assert_eq!((d.status, d.sha()), (v.status, v.sha()), "{coding} {mode}");
        // compressed on the wire: not the plain JSON or SSE text (a short answer may go out in
        // stored blocks, its text readable inside the coding)
        let plain = ["{", "event:", "data:", ":"]
            .iter()
            .any(|p| v.text().starts_with(p));
        assert!(!plain, "{coding} {mode}: {}", v.text());
    }
    let records = rig.finish().await;
    for (i, (coding, mode, _, outcome)) in cases.iter().enumerate() {
        let r = by_id(&records, 40 + i as i64);
        assert_eq!(r.len(), 1, "{coding} {mode}");
        assert_eq!(r[0].outcome, *outcome, "{coding} {mode}: {:?}", r[0]);
    }
}

/// 50 clients × 20 calls through the proxy to `chaos.mix` (the acceptance size, 200 × 50, with
/// `MCP_TRIAGE_SOAK=full`: about 100 s in a debug build, so `bench/proxy-soak.sh` runs it),
/// each call also sent directly to a twin instance that draws the same faults: every body is
/// identical, every request has exactly one record, and the record's verdict is the client's.
/// Half the clients get JSON responses, half SSE; the faults are 503s, resets, malformed
/// bodies, JSON-RPC errors, delays, SSE streams cut after the tool ran (`sse_cut`: clean end or
/// mid-event break) and input rounds (`input_required`), which the client answers — the retry
/// carrying the answer is compared and recorded like any call. An `input_required` body is
/// compared with its `requestState` masked: the token is an HMAC bound to its instance, so the
/// twin's differs by design; everything else, and the retries, must match byte for byte.
///
/// It runs twice: on two threads (responses observed before they are written) and on one (the
/// CLI's default: observed after).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_chaos_mix_bodies_records_and_verdicts_agree() {
    soak_chaos_mix().await;
}

#[tokio::test(flavor = "current_thread")]
async fn soak_chaos_mix_on_one_forwarding_thread() {
    soak_chaos_mix().await;
}

async fn soak_chaos_mix() {
    let (clients, calls) = match std::env::var("MCP_TRIAGE_SOAK").as_deref() {
        Ok("full") => (200, 50),
        Ok("small") => (20, 10),
        _ => (50, 20),
    };
    let rig = Rig::new().await;
    let (direct, via) = (rig.direct(), rig.via());
    let mut tasks = Vec::new();
    for k in 0..clients {
        tasks.push(tokio::spawn(async move {
            let mode = if k % 2 == 0 { "json" } else { "sse" };
            let params = r#"{"seed":KK,"delayMs":2,"rates":{"http_503":0.1,"connection_close":0.05,"malformed_json":0.05,"jsonrpc_error":0.05,"delay":0.1,"sse_cut":0.1,"input_required":0.1}}"#
                .replace("KK", &k.to_string());
            let q = |tag: &str| {
                format!(
                    "/s/chaos.mix/mcp?responseMode={mode}&instance={k}-{tag}&params={}",
                    urlencode(&params)
                )
            };
            let (pd, pv) = (q("d"), q("p"));
            let mut seen = Vec::new();
            for i in 0..calls {
                let id = (k * 1000 + i) as i64;
                let p = json!({"name": "test_simple_text", "arguments": {"n": i}});
                let d = modern(direct, &pd, id, "tools/call", p.clone()).await;
                let v = modern(via, &pv, id, "tools/call", p.clone()).await;
                same_bodies(&d, &v, id);
                let verdict = client_verdict(&v, id);
                let round = verdict == "INPUT_REQUIRED";
                seen.push((id, verdict));
                if round {
                    // Answer the round on both paths, each with its own requestState.
                    let retry = |r: &Result<Resp, SendError>| {
                        let mut q = p.clone();
                        q["requestState"] = json!(request_state(r).expect("requestState"));
                        q["inputResponses"] = json!({"chaos_confirm":
                            {"action": "accept", "content": {"confirm": true}}});
                        q
                    };
                    let rid = id + 500;
                    let d2 = modern(direct, &pd, rid, "tools/call", retry(&d)).await;
                    let v2 = modern(via, &pv, rid, "tools/call", retry(&v)).await;
                    same_bodies(&d2, &v2, rid);
                    seen.push((rid, client_verdict(&v2, rid)));
                }
            }
            seen
        }));
    }
    let mut expected = Vec::new();
    for t in tasks {
        expected.extend(t.await.unwrap());
    }
    let records = rig.finish().await;
    assert_eq!(records.len(), expected.len(), "one record per request");
    let mut by: std::collections::HashMap<i64, &mcp_triage_proxy::Record> = Default::default();
    for r in &records {
        let id =
            r.id.as_ref()
                .and_then(Value::as_i64)
                .expect("every record has its id");
        assert!(by.insert(id, r).is_none(), "two records for id {id}");
    }
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for (id, verdict) in &expected {
        let r = by[id];
        assert_eq!(&r.outcome, verdict, "id {id}: {r:#?}");
        *outcomes.entry(verdict.clone()).or_default() += 1;
    }
    eprintln!("soak: {} requests, outcomes {outcomes:?}", expected.len());
    // The mix really mixed.
    for o in [
        "TOOL_SUCCESS",
        "HTTP_ERROR",
        "CONNECTION_ERROR",
        "MALFORMED_JSON",
        "JSONRPC_ERROR",
        "STREAM_INCOMPLETE",
        "INPUT_REQUIRED",
    ] {
        assert!(
            outcomes.get(o).copied().unwrap_or(0) > 0,
            "{o} missing: {outcomes:?}"
        );
    }
}

/// The `requestState` token in a response body (JSON or SSE), if any.
fn request_state(r: &Result<Resp, SendError>) -> Option<String> {
    let text = r.as_ref().ok()?.text();
    let start = text.find(r#""requestState":""#)? + r#""requestState":""#.len();
    let len = text[start..].find('"')?;
    Some(text[start..start + len].to_string())
}

/// The direct and the proxied answer are the same bytes (an `input_required` body with its
/// instance-bound `requestState` masked), and both or neither ended with a broken body.
fn same_bodies(d: &Result<Resp, SendError>, v: &Result<Resp, SendError>, id: i64) {
    match (d, v) {
        (Ok(dr), Ok(vr)) => {
            match (request_state(d), request_state(v)) {
                (Some(ds), Some(vs)) => {
                    assert_eq!(dr.status, vr.status, "call {id}");
                    assert_eq!(
                        dr.text().replace(&ds, "<requestState>"),
                        vr.text().replace(&vs, "<requestState>"),
                        "call {id}"
                    );
                }
                (None, None) => {
                    assert_eq!((dr.status, dr.sha()), (vr.status, vr.sha()), "call {id}")
                }
                _ => panic!("call {id}: only one side carries a requestState"),
            }
            assert_eq!(
                dr.body_error.is_some(),
                vr.body_error.is_some(),
                "call {id}"
            );
        }
        (Err(_), Err(_)) => {}
        _ => panic!("call {id}: direct {d:?} but via the proxy {v:?}"),
    }
}

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

/// Several forwarding threads: each response is observed before it is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_after_503_are_observed_and_unsafe_ones_flagged() {
    retries_after_503().await;
}

/// One forwarding thread (the CLI's default): responses are observed after they are written,
/// and the resend still finds the failed attempt recorded.
#[tokio::test(flavor = "current_thread")]
async fn retries_after_503_are_observed_on_one_forwarding_thread() {
    retries_after_503().await;
}

/// `spin`: the forwarding thread polls for a while after traffic instead of sleeping. Bodies
/// still pass unchanged, records are written, and the spinner stops with the proxy.
#[tokio::test(flavor = "current_thread")]
async fn a_spinning_forwarding_thread_forwards_and_stops() {
    let rig = Rig::with(|o| o.spin = std::time::Duration::from_micros(200)).await;
    for (i, mode) in ["json", "sse", "json", "sse"].into_iter().enumerate() {
        let path = format!("/s/baseline/mcp?responseMode={mode}");
        let p = json!({"name": "test_simple_text", "arguments": {}});
        let id = 50 + i as i64;
        let d = modern(rig.direct(), &path, id, "tools/call", p.clone())
            .await
            .unwrap();
        let v = modern(rig.via(), &path, id, "tools/call", p).await.unwrap();
        assert_eq!((d.status, d.sha()), (v.status, v.sha()), "{mode}");
    }
    let records = tokio::time::timeout(STEP, rig.finish())
        .await
        .expect("the proxy, spinner included, stops");
    assert_eq!(records.len(), 4, "{records:#?}");
    assert!(records.iter().all(|r| r.outcome == "TOOL_SUCCESS"));
}

async fn retries_after_503() {
    let rig = Rig::new().await;
    for (tool, unsafe_) in [
        ("increment_counter", true),
        ("read_counter", false),
        ("set_value", false),
    ] {
        // POST 1 initialize, 2 initialized, 3 tools/list, 4 the call (503), 5 its resend.
        let path = format!(
            "/s/errors.http_status_sequence/mcp?instance={tool}&params={}",
            urlencode(r#"{"statusCodes":[200,200,200,503,200]}"#)
        );
        let sid = legacy_session(rig.via(), &path, json!({})).await;
        let list = post(
            rig.via(),
            &path,
            Some(&sid),
            &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
        )
        .await
        .unwrap();
        assert_eq!(list.status, 200);
        let args = if tool == "set_value" {
            json!({"key":"k","value":1})
        } else {
            json!({})
        };
        // Ids repeat across the loop: look only at the records this iteration adds.
        let base = rig.records.0.lock().unwrap().len();
        let first = post(rig.via(), &path, Some(&sid), &call(3, tool, args.clone()))
            .await
            .unwrap();
        assert_eq!(first.status, 503);
        let again = post(rig.via(), &path, Some(&sid), &call(4, tool, args))
            .await
            .unwrap();
        assert_eq!(again.status, 200, "{}", again.text());
        let records = rig
            .records_when(|rs| {
                [3, 4]
                    .iter()
                    .all(|id| rs[base..].iter().any(|r| r.id == Some(json!(id))))
            })
            .await;
        let records = &records[base..];
        let r3 = records.iter().rfind(|r| r.id == Some(json!(3))).unwrap();
        let r4 = records.iter().rfind(|r| r.id == Some(json!(4))).unwrap();
        assert_eq!(r3.outcome, "HTTP_ERROR");
        assert_eq!(r3.attempt, Some(1));
        assert_eq!(
            r4.retry_of.as_deref(),
            Some(r3.record_id.as_str()),
            "{tool}"
        );
        assert_eq!(r4.attempt, Some(2));
        assert_eq!(r4.retry_origin, Some("client"));
        assert_eq!(r4.session_post_count, Some(5));
        assert_eq!(
            r4.warnings.iter().any(|w| w.code == "UNSAFE_RETRY"),
            unsafe_,
            "{tool}: {:?}",
            r4.warnings
        );
    }
    rig.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_upstream_gives_502_and_a_connection_error_record() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let records = mcp_triage_proxy::MemoryConsumer::default();
    let (sink, writer) = mcp_triage_proxy::LogWriter::start(None, vec![Box::new(records.clone())]);
    let o = mcp_triage_proxy::http::ProxyOptions::new(&format!("http://127.0.0.1:{port}")).unwrap();
    let proxy = mcp_triage_proxy::http::start("127.0.0.1:0".parse().unwrap(), o, sink)
        .await
        .unwrap();
    let p = json!({"name": "increment_counter", "arguments": {}});
    let r = modern(proxy.local_addr(), "/mcp", 7, "tools/call", p.clone())
        .await
        .unwrap();
    assert_eq!(r.status, 502);
    // The call never reached a server: resending it is a retry, but not an unsafe one.
    modern(proxy.local_addr(), "/mcp", 8, "tools/call", p)
        .await
        .unwrap();
    proxy.shutdown().await;
    tokio::task::spawn_blocking(move || writer.drain())
        .await
        .unwrap();
    let recs = records.0.lock().unwrap();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].outcome, "CONNECTION_ERROR");
    assert_eq!(recs[0].http_statuses, vec![502]);
    assert_eq!(recs[0].tool.as_deref(), Some("increment_counter"));
    assert_eq!(
        recs[1].retry_of.as_deref(),
        Some(recs[0].record_id.as_str())
    );
    assert!(recs[1].warnings.is_empty(), "{:?}", recs[1].warnings);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_over_the_limit_is_forwarded_whole_and_not_classified() {
    let rig = Rig::with(|o| {
        o.observe.limits.max_body_bytes = 64;
        o.observe.limits.max_stream_bytes = 64;
    })
    .await;
    for (i, mode) in ["json", "sse"].into_iter().enumerate() {
        let path = format!("/s/baseline/mcp?responseMode={mode}");
        let p = json!({"name": "test_multiple_content_types", "arguments": {}});
        let d = modern(rig.direct(), &path, i as i64, "tools/call", p.clone())
            .await
            .unwrap();
        let v = modern(rig.via(), &path, i as i64, "tools/call", p)
            .await
            .unwrap();
        assert!(d.body.len() > 64);
        assert_eq!(d.sha(), v.sha(), "{mode}");
    }
    let records = rig.finish().await;
    assert_eq!(records.len(), 2);
    for r in &records {
        assert!(!r.classified, "{r:#?}");
        assert_eq!(r.outcome, "LIMIT_EXCEEDED");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_requests_answers_and_mrtr_rounds_are_linked() {
    let rig = Rig::new().await;
    // Legacy: elicitation/create arrives on the POST's SSE stream; the client POSTs its answer.
    let path = "/s/elicitation.approval/mcp?instance=legacy";
    let sid = legacy_session(rig.via(), path, json!({"elicitation": {}})).await;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let via = rig.via();
    let sid2 = sid.clone();
    let pending = tokio::spawn(async move {
        let r = post(
            via,
            path,
            Some(&sid2),
            &call(5, "run_configured_test_scenario", json!({})),
        )
        .await;
        let _ = tx.send(());
        r
    });
    // Wait for the server request's record, then answer it.
    let mut asked = None;
    for _ in 0..200 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        asked = rig
            .records
            .0
            .lock()
            .unwrap()
            .iter()
            .find(|r| r.kind == mcp_triage_proxy::record::RecordKind::ServerRequest)
            .cloned();
        if asked.is_some() {
            break;
        }
    }
    let asked = asked.expect("the elicitation/create was observed");
    assert_eq!(asked.method.as_deref(), Some("elicitation/create"));
    let answer = json!({"jsonrpc":"2.0","id": asked.id.clone().unwrap(), "result": {"action":"accept","content":{"approved":true}}});
    let a = post(rig.via(), path, Some(&sid), &answer).await.unwrap();
    assert_eq!(a.status, 202);
    let done = pending.await.unwrap().unwrap();
    let _ = rx.await;
    assert_eq!(done.status, 200);

    // Modern: input_required, then the retry with inputResponses is round 1 of the same call.
    let mpath = "/s/elicitation.approval/mcp?instance=modern";
    let first = modern(
        rig.via(),
        mpath,
        20,
        "tools/call",
        json!({"name":"run_configured_test_scenario","arguments":{}}),
    )
    .await
    .unwrap();
    let rpc: Value = if first
        .header("content-type")
        .is_some_and(|c| c.starts_with("text/event-stream"))
    {
        let t = first.text();
        let data = t
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .next_back()
            .unwrap()
            .trim()
            .to_string();
        serde_json::from_str(&data).unwrap()
    } else {
        serde_json::from_slice(&first.body).unwrap()
    };
    assert_eq!(rpc["result"]["resultType"], "input_required", "{rpc}");
    let mut p = json!({"name":"run_configured_test_scenario","arguments":{},
        "inputResponses": {"elicitation": {"action":"accept","content":{"approved":true}}}});
    if let Some(s) = rpc["result"].get("requestState") {
        p["requestState"] = s.clone();
    }
    let second = modern(rig.via(), mpath, 21, "tools/call", p).await.unwrap();
    assert_eq!(second.status, 200);

    let records = rig.finish().await;
    let answer_rec = records
        .iter()
        .find(|r| r.kind == mcp_triage_proxy::record::RecordKind::Response)
        .unwrap();
    assert_eq!(
        answer_rec.in_reply_to.as_deref(),
        Some(asked.record_id.as_str())
    );
    assert_eq!(answer_rec.outcome, "ACCEPTED");
    let call5 = by_id(&records, 5);
    assert_eq!(
        asked.via_record_id.as_deref(),
        Some(call5[0].record_id.as_str())
    );
    assert_eq!(call5[0].outcome, "TOOL_SUCCESS");
    let r20 = by_id(&records, 20)[0];
    let r21 = by_id(&records, 21)[0];
    assert_eq!(r20.outcome, "INPUT_REQUIRED");
    let link = r21.mrtr.as_ref().expect("round linked");
    assert_eq!(
        (link.round, link.original_record_id.as_str()),
        (1, r20.record_id.as_str())
    );
    assert_eq!(r21.outcome, "TOOL_SUCCESS");
    // initialize, initialized, call, answer, server request + 2 modern calls.
    assert_eq!(records.len(), 7, "{records:#?}");
    let init = records
        .iter()
        .find(|r| r.method.as_deref() == Some("initialize"))
        .unwrap();
    assert_eq!(init.session_id.as_deref(), Some(sid.as_str()));
    assert_eq!(init.outcome, "RESULT");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_open_exchanges_into_records() {
    let rig = Rig::with(|o| o.drain_timeout = std::time::Duration::from_millis(100)).await;
    let via = rig.via();
    // A call the server holds for a long time: still open when the proxy stops.
    let path = "/s/timeout.uncooperative_hang/mcp";
    let hung = tokio::spawn(async move {
        modern(
            via,
            path,
            1,
            "tools/call",
            json!({"name":"run_configured_test_scenario","arguments":{}}),
        )
        .await
    });
    for _ in 0..200 {
        if rig
            .kitchen
            .kitchen()
            .journal()
            .iter()
            .any(|e| e["method"] == "tools/call")
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let records = rig.finish().await;
    assert!(hung.await.unwrap().is_err(), "the held exchange was closed");
    assert_eq!(records.len(), 1, "{records:#?}");
    assert!(records[0].cancelled, "{:#?}", records[0]);
    assert_eq!(records[0].outcome, "CONNECTION_ERROR");
    assert_eq!(
        records[0].tool.as_deref(),
        Some("run_configured_test_scenario")
    );
}

/// The `callRecord` of every tools/call record validates against `docs/record.schema.json`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_records_follow_the_record_schema() {
    let schema_path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/record.schema.json");
    let schema: Value = serde_json::from_slice(&std::fs::read(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let rig = Rig::new().await;
    let path = format!(
        "/s/errors.http_status_sequence/mcp?params={}",
        urlencode(r#"{"statusCodes":[200,200,503,200]}"#)
    );
    let sid = legacy_session(rig.via(), &path, json!({})).await;
    for id in [3, 4] {
        post(
            rig.via(),
            &path,
            Some(&sid),
            &call(id, "increment_counter", json!({"by": 2})),
        )
        .await
        .unwrap();
    }
    let records = rig.finish().await;
    let calls: Vec<_> = records
        .iter()
        .filter(|r| r.with_call_record)
        .filter_map(|r| r.to_call_record())
        .collect();
    assert_eq!(calls.len(), 2);
    for c in &calls {
        let v = serde_json::to_value(c).unwrap();
        let errs: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errs.is_empty(), "{errs:?}\n{v:#}");
        assert_eq!(c.transport, "proxy");
        assert_eq!(c.client, "proxy-test@1");
    }
    assert_eq!(calls[0].outcome, mcp_triage_core::Outcome::HttpError);
    assert_eq!(calls[1].retry_of, calls[0].record_id);
    assert_eq!(
        calls[1].retry_origin,
        mcp_triage_core::RetryOrigin::BusinessLogic
    );
    assert!(calls[1].warnings.iter().any(|w| w.code == "UNSAFE_RETRY"));
    // Nothing here was sent with credentials, but the JSON line never has a header map unless
    // asked for.
    assert!(records.iter().all(|r| r.request_headers.is_none()));
}

/// The client going away mid-stream closes the upstream connection (2026-07-28 cancellation),
/// and the record says the exchange was cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_disconnect_closes_the_upstream_request() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", upstream.local_addr().unwrap());
    let records = mcp_triage_proxy::MemoryConsumer::default();
    let (sink, writer) = mcp_triage_proxy::LogWriter::start(None, vec![Box::new(records.clone())]);
    let o = mcp_triage_proxy::http::ProxyOptions::new(&origin).unwrap();
    let proxy = mcp_triage_proxy::http::start("127.0.0.1:0".parse().unwrap(), o, sink)
        .await
        .unwrap();
    // The server: read the request, start an SSE response with one progress event, then wait
    // for the proxy to close the connection.
    let server = tokio::spawn(async move {
        let (mut s, _) = upstream.accept().await.unwrap();
        let mut buf = vec![0u8; 8192];
        let mut got = Vec::new();
        while !got.windows(4).any(|w| w == b"\r\n\r\n") || !got.ends_with(b"}}") {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0, "request arrives");
            got.extend_from_slice(&buf[..n]);
        }
        let event = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n";
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
            event.len()
        );
        s.write_all(head.as_bytes()).await.unwrap();
        tokio::time::timeout(STEP, s.read(&mut buf))
            .await
            .expect("the proxy closes the upstream connection when the client leaves")
            .map(|n| n == 0)
            .unwrap_or(true)
    });
    let mut c = tokio::net::TcpStream::connect(proxy.local_addr())
        .await
        .unwrap();
    let body =
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","arguments":{}}}"#;
    let req = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    c.write_all(req.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buf = vec![0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("notifications/progress") {
        let n = tokio::time::timeout(STEP, c.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0);
        seen.extend_from_slice(&buf[..n]);
    }
    drop(c);
    assert!(server.await.unwrap(), "upstream saw EOF");
    proxy.shutdown().await;
    tokio::task::spawn_blocking(move || writer.drain())
        .await
        .unwrap();
    let recs = records.0.lock().unwrap();
    assert_eq!(recs.len(), 1, "{recs:#?}");
    assert!(recs[0].cancelled);
    assert_eq!(recs[0].tool.as_deref(), Some("slow"));
    assert_eq!(recs[0].outcome, "STREAM_INCOMPLETE", "{:#?}", recs[0]);
}
