//! The live view (`--ui`): a real kitchen, the proxy in front of it, the UI listener, and calls
//! with known verdicts; then `/metrics` and `/events` are read as Prometheus and a browser
//! would. Also: the Grafana dashboard queries only metrics `/metrics` exports.

mod common;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use common::{call, legacy_session, post, send, STEP};
use mcp_triage_kitchen::{start as kitchen_start, KitchenOptions};
use mcp_triage_proxy::http::ProxyOptions;
use mcp_triage_proxy::ui::{self, UiGuard, UiHub, UiOptions};
use mcp_triage_proxy::LogWriter;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The value of the sample `name{labels}` (labels exactly as rendered), if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.parse().expect("a sample value is a number"))
}

/// The sample names of an exposition (`name` of `name{...} value`).
fn sample_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap().to_string())
        .collect()
}

/// Every `mcp_triage_*` name anywhere in the dashboard (panel queries, the `server` variable's
/// `label_values`, descriptions).
fn dashboard_metric_names(dashboard: &Value) -> BTreeSet<String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::String(text) => {
                let mut rest = text.as_str();
                while let Some(at) = rest.find("mcp_triage_") {
                    let name: String = rest[at..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    rest = &rest[at + name.len()..];
                    out.insert(name);
                }
            }
            Value::Object(m) => m.values().for_each(|v| walk(v, out)),
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(dashboard, &mut out);
    out
}

/// An `/events` stream read over a raw socket, as a browser's EventSource reads it.
struct Events {
    stream: tokio::net::TcpStream,
    buf: String,
}

impl Events {
    async fn open(addr: SocketAddr) -> Events {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req =
            format!("GET /events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
        stream.write_all(req.as_bytes()).await.unwrap();
        Events {
            stream,
            buf: String::new(),
        }
    }

    /// The data of the next event named `name` (events before it are skipped).
    async fn next(&mut self, name: &str) -> Value {
        let marker = format!("event: {name}\ndata: ");
        tokio::time::timeout(STEP, async {
            loop {
                if let Some(at) = self.buf.find(&marker) {
                    let start = at + marker.len();
                    if let Some(len) = self.buf[start..].find('\n') {
                        let data = self.buf[start..start + len].to_string();
                        self.buf.drain(..start + len);
                        return serde_json::from_str(&data).expect("event data is JSON");
                    }
                }
                let mut chunk = [0u8; 8192];
                let n = self.stream.read(&mut chunk).await.unwrap();
                assert!(n > 0, "the event stream ended: {}", self.buf);
                self.buf.push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {name} event; got {}", self.buf))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_events_follow_known_calls() {
    let kitchen = kitchen_start("127.0.0.1:0".parse().unwrap(), KitchenOptions::default())
        .await
        .expect("kitchen starts");
    let mut o = ProxyOptions::new(&kitchen.base_url()).unwrap();
    o.drain_timeout = Duration::from_secs(2);
    let server = kitchen.local_addr().to_string();
    let hub = UiHub::new(UiOptions::new(server.clone()));
    let (sink, writer) = LogWriter::start(None, vec![Box::new(hub.consumer())]);
    let proxy = mcp_triage_proxy::http::start("127.0.0.1:0".parse().unwrap(), o, sink)
        .await
        .expect("proxy starts");
    let ui = ui::start(
        "127.0.0.1:0".parse().unwrap(),
        hub.clone(),
        UiGuard::default(),
    )
    .await
    .expect("ui starts");
    let via = proxy.local_addr();

    // A client connected before any call gets an empty snapshot, then the calls as events.
    let mut events = Events::open(ui.local_addr()).await;
    let snap = events.next("snapshot").await;
    assert_eq!(snap["server"], server);
    assert_eq!(snap["calls"], json!([]));

    // A success and a tool error (application layer).
    let ok = "/s/baseline/mcp?instance=ui-ok";
    let sid = legacy_session(via, ok, json!({})).await;
    let r = post(
        via,
        ok,
        Some(&sid),
        &call(2, "run_configured_test_scenario", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    let te = "/s/errors.tool_error/mcp?instance=ui-te";
    let sid = legacy_session(via, te, json!({})).await;
    let r = post(
        via,
        te,
        Some(&sid),
        &call(2, "run_configured_test_scenario", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);

    // An HTTP 503 (transport), then the client's resend of a tool that is not idempotent:
    // an unsafe retry.
    let seq = format!(
        "/s/errors.http_status_sequence/mcp?instance=ui-503&params={}",
        urlencode(r#"{"statusCodes":[200,200,200,503,200]}"#)
    );
    let sid = legacy_session(via, &seq, json!({})).await;
    let list = post(
        via,
        &seq,
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
    )
    .await
    .unwrap();
    assert_eq!(list.status, 200);
    let first = post(
        via,
        &seq,
        Some(&sid),
        &call(3, "increment_counter", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(first.status, 503);
    let again = post(
        via,
        &seq,
        Some(&sid),
        &call(4, "increment_counter", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(again.status, 200);

    // The events arrive in record order; the tools/call ones carry their labels.
    let mut calls = Vec::new();
    while calls.len() < 4 {
        let e = events.next("record").await;
        if e["call"] == true {
            calls.push(e);
        }
    }
    let seen: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|e| {
            (
                e["tool"].as_str().unwrap(),
                e["layer"].as_str().unwrap(),
                e["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                "run_configured_test_scenario",
                "application",
                "TOOL_SUCCESS"
            ),
            ("run_configured_test_scenario", "application", "TOOL_ERROR"),
            ("increment_counter", "transport", "HTTP_ERROR"),
            ("increment_counter", "application", "TOOL_SUCCESS"),
        ]
    );
    assert_eq!(calls[1]["failure"], true);
    assert_eq!(calls[2]["httpStatus"], 503);
    assert_eq!(calls[3]["retryOf"], calls[2]["recordId"]);
    assert_eq!(calls[3]["unsafeRetry"], true);
    assert!(calls[3]["unsafeDetail"]
        .as_str()
        .unwrap()
        .contains("increment_counter"));

    // /metrics, as Prometheus scrapes it.
    let m = send(ui.local_addr(), "GET", "/metrics", &[], None)
        .await
        .unwrap();
    assert_eq!(m.status, 200);
    assert_eq!(
        m.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = m.text();
    let calls_total = |tool: &str, layer: &str, outcome: &str| {
        sample(
            &text,
            &format!(
                r#"mcp_triage_calls_total{{server="{server}",tool="{tool}",layer="{layer}",outcome="{outcome}"}}"#
            ),
        )
    };
    let run = "run_configured_test_scenario";
    assert_eq!(calls_total(run, "application", "TOOL_SUCCESS"), Some(1.0));
    assert_eq!(calls_total(run, "application", "TOOL_ERROR"), Some(1.0));
    let inc = "increment_counter";
    assert_eq!(calls_total(inc, "transport", "HTTP_ERROR"), Some(1.0));
    assert_eq!(calls_total(inc, "application", "TOOL_SUCCESS"), Some(1.0));
    // tools/list, initialize and notifications are not tool calls.
    assert!(!text.contains("RESULT") && !text.contains("ACCEPTED"));
    let by_tool = |name: &str, tool: &str| {
        sample(
            &text,
            &format!(r#"{name}{{server="{server}",tool="{tool}"}}"#),
        )
    };
    assert_eq!(
        by_tool("mcp_triage_call_duration_seconds_count", inc),
        Some(2.0)
    );
    assert_eq!(
        by_tool("mcp_triage_call_duration_seconds_count", run),
        Some(2.0)
    );
    assert_eq!(
        sample(
            &text,
            &format!(
                r#"mcp_triage_call_duration_seconds_bucket{{server="{server}",tool="{inc}",le="+Inf"}}"#
            )
        ),
        Some(2.0)
    );
    assert!(by_tool("mcp_triage_call_duration_seconds_sum", inc).unwrap() > 0.0);
    assert_eq!(by_tool("mcp_triage_retries_total", inc), Some(1.0));
    assert_eq!(by_tool("mcp_triage_unsafe_retries_total", inc), Some(1.0));
    assert_eq!(by_tool("mcp_triage_unsafe_retries_total", run), None);

    // Every metric the Grafana dashboard queries is one this listener exports.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/grafana/mcp-triage-dashboard.json"
    );
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
        .expect("the dashboard is JSON");
    let queried = dashboard_metric_names(&dashboard);
    let exported = sample_names(&text);
    assert!(queried.len() >= 4, "{queried:?}");
    let missing: Vec<_> = queried.difference(&exported).collect();
    assert!(
        missing.is_empty(),
        "the dashboard queries {missing:?}, not exported: {exported:?}"
    );

    // A second client gets the counts so far in its snapshot.
    let mut late = Events::open(ui.local_addr()).await;
    let snap = late.next("snapshot").await;
    let count = |tool: &str, outcome: &str| {
        snap["calls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["tool"] == tool && c["outcome"] == outcome)
            .map(|c| c["count"].clone())
    };
    assert_eq!(count(inc, "HTTP_ERROR"), Some(json!(1)));
    assert_eq!(snap["unsafeRetries"][inc], 1);
    let failures = snap["recentFailures"].as_array().unwrap();
    assert!(failures.iter().any(|f| f["outcome"] == "TOOL_ERROR"));
    assert!(failures.iter().any(|f| f["outcome"] == "HTTP_ERROR"));
    assert_eq!(snap["recentRetries"][0]["unsafeRetry"], true);

    // The page itself, and the DNS-rebinding check on this listener too.
    let page = send(ui.local_addr(), "GET", "/", &[], None).await.unwrap();
    assert_eq!(page.status, 200);
    assert!(page
        .text()
        .contains("new EventSource(\"/events\" + location.search)"));
    assert!(
        !page.text().contains("https://"),
        "the page loads nothing from elsewhere"
    );
    for h in [
        [("host", "evil.example")],
        [("origin", "http://evil.example")],
    ] {
        let r = send(ui.local_addr(), "GET", "/metrics", &h, None)
            .await
            .unwrap();
        assert_eq!(r.status, 403, "{h:?}");
        assert!(!r.text().contains("mcp_triage_"));
    }
    let r = send(ui.local_addr(), "POST", "/metrics", &[], Some(""))
        .await
        .unwrap();
    assert_eq!(r.status, 405);

    // Stopping: the writer drains, the hub closes, open streams end.
    proxy.shutdown().await;
    tokio::task::spawn_blocking(move || writer.drain())
        .await
        .unwrap();
    assert_eq!(hub.clients(), 0);
    ui.shutdown().await;
    kitchen.shutdown().await;
}

/// A browser that stops reading: its queue fills, the writer drops it instead of waiting, and a
/// client that keeps reading still gets every event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_dropped_without_blocking_records() {
    use mcp_triage_proxy::record::{rfc3339, RecordKind};
    use mcp_triage_proxy::Record;

    let mut o = UiOptions::new("s");
    o.client_queue = 256;
    let hub = UiHub::new(o);
    let ui = ui::start(
        "127.0.0.1:0".parse().unwrap(),
        hub.clone(),
        UiGuard::default(),
    )
    .await
    .unwrap();
    // The stalled client: a small receive buffer, and it never reads past the head.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket.connect(ui.local_addr()).await.unwrap();
    let req = format!("GET /events HTTP/1.1\r\nHost: {}\r\n\r\n", ui.local_addr());
    stalled.write_all(req.as_bytes()).await.unwrap();
    let mut reader = Events::open(ui.local_addr()).await;
    reader.next("snapshot").await;
    let deadline = tokio::time::Instant::now() + STEP;
    while hub.clients() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "both clients connect"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // Records come from the writer thread; here a plain thread plays it, in bursts smaller
    // than the queue with pauses between, so the reading client keeps up. Each event carries a
    // 4 KiB detail: 16 MB in all, more than the kernel buffers the stalled client's socket.
    let total = 4000;
    let detail = "d".repeat(4096);
    let writer = {
        let hub = hub.clone();
        std::thread::spawn(move || {
            let started = std::time::Instant::now();
            for i in 0..total {
                let mut r = Record::new(i.to_string(), rfc3339(0), RecordKind::Request, "http");
                r.method = Some("tools/call".into());
                r.tool = Some("t".repeat(100));
                r.outcome = "TOOL_ERROR".parse().expect("a record outcome");
                r.layer = Some(mcp_triage_core::Layer::Application);
                r.verdict = Some(
                    mcp_triage_core::Verdict::new(mcp_triage_core::Outcome::ToolError)
                        .with_detail(detail.clone()),
                );
                hub.record(&r);
                if i % 8 == 7 {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            started.elapsed()
        })
    };
    for i in 0..total {
        let e = reader.next("record").await;
        assert_eq!(e["recordId"], i.to_string());
    }
    let elapsed = tokio::task::spawn_blocking(move || writer.join().unwrap())
        .await
        .unwrap();
    assert!(
        elapsed < STEP,
        "recording never waited on a client: {elapsed:?}"
    );
    assert_eq!(hub.clients(), 1, "the stalled client was dropped");
    let m = send(ui.local_addr(), "GET", "/metrics", &[], None)
        .await
        .unwrap();
    assert_eq!(
        sample(
            &m.text(),
            r#"mcp_triage_ui_clients_dropped_total{server="s"}"#
        ),
        Some(1.0)
    );
    drop(stalled);
    hub.close();
    ui.shutdown().await;
}
