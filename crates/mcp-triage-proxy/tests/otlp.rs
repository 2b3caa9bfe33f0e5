//! Spans and the duration histogram reach a real OTLP/HTTP receiver (a hyper server here),
//! decoded with the official protobuf definitions (`opentelemetry-proto`), with the attributes
//! of the MCP semantic conventions.
#![cfg(feature = "otlp")]

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Full};
use mcp_triage_proxy::otel::{OtlpConsumer, Peer};
use mcp_triage_proxy::{LogWriter, MemoryConsumer};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::metric;
use prost::Message;
use serde_json::json;

type Received = Arc<Mutex<Vec<(String, Bytes)>>>;

async fn receiver(got: Received) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    serve(listener, got);
    url
}

/// The same receiver behind TLS, with a certificate of a CA made here: (its https URL, the CA).
async fn https_receiver(got: Received) -> (String, Vec<u8>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let plain = listener.local_addr().unwrap();
    serve(listener, got);
    let (ca_pem, chain, key) = common::tls::certificates();
    let tls = common::tls::tls_terminator(chain, key, plain).await;
    (format!("https://{tls}"), ca_pem.into_bytes())
}

fn serve(listener: tokio::net::TcpListener, got: Received) {
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let got = got.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let got = got.clone();
                        async move {
                            let path = req.uri().path().to_string();
                            let body = req.into_body().collect().await.unwrap().to_bytes();
                            got.lock().unwrap().push((path, body));
                            Ok::<_, std::convert::Infallible>(
                                hyper::Response::builder()
                                    .header("content-type", "application/x-protobuf")
                                    .body(Full::new(Bytes::new()))
                                    .unwrap(),
                            )
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
}

/// A runtime the test drives from outside (the exporters' blocking client must not live on it)
/// and a kitchen on it.
fn runtime_and_kitchen() -> (tokio::runtime::Runtime, mcp_triage_kitchen::KitchenHandle) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let kitchen = rt.block_on(async {
        mcp_triage_kitchen::start(
            "127.0.0.1:0".parse().unwrap(),
            mcp_triage_kitchen::KitchenOptions::default(),
        )
        .await
        .unwrap()
    });
    (rt, kitchen)
}

/// A proxy in front of `kitchen` whose records go to memory and to `otlp`: the records, the
/// proxy and the writer (dropping or draining it flushes the exporters).
fn proxy_exporting_to(
    rt: &tokio::runtime::Runtime,
    kitchen: &mcp_triage_kitchen::KitchenHandle,
    otlp: OtlpConsumer,
) -> (
    MemoryConsumer,
    mcp_triage_proxy::http::ProxyHandle,
    LogWriter,
) {
    let mem = MemoryConsumer::default();
    let (sink, writer) = LogWriter::start(None, vec![Box::new(mem.clone()), Box::new(otlp)]);
    let proxy = rt.block_on(async {
        let o = mcp_triage_proxy::http::ProxyOptions::new(&kitchen.base_url()).unwrap();
        mcp_triage_proxy::http::start("127.0.0.1:0".parse().unwrap(), o, sink)
            .await
            .unwrap()
    });
    (mem, proxy, writer)
}

fn attrs(kv: &[KeyValue]) -> HashMap<String, String> {
    kv.iter()
        .map(|k| {
            let v = match k.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(any_value::Value::StringValue(s)) => s.clone(),
                Some(any_value::Value::IntValue(i)) => i.to_string(),
                Some(any_value::Value::BoolValue(b)) => b.to_string(),
                Some(any_value::Value::DoubleValue(d)) => d.to_string(),
                other => format!("{other:?}"),
            };
            (k.key.clone(), v)
        })
        .collect()
}

#[test]
fn spans_and_duration_histogram_reach_an_otlp_http_receiver() {
    let (rt, kitchen) = runtime_and_kitchen();
    let got: Received = Arc::default();
    let url = rt.block_on(receiver(got.clone()));
    let kport = kitchen.local_addr().port();
    // Built outside the runtime: the exporter's blocking HTTP client must not live on it.
    let otlp = OtlpConsumer::new(
        &url,
        Peer {
            address: Some("127.0.0.1".into()),
            port: Some(kport),
        },
        Duration::from_millis(200),
        &[],
    )
    .unwrap();
    let (mem, proxy, writer) = proxy_exporting_to(&rt, &kitchen, otlp);
    rt.block_on(async {
        let via = proxy.local_addr();
        let ok = modern(via, "/mcp", 1, "tools/call", json!({"name":"test_simple_text","arguments":{}})).await.unwrap();
        assert_eq!(ok.status, 200);
        let te = modern(via, "/s/errors.tool_error/mcp", 2, "tools/call",
            json!({"name":"run_configured_test_scenario","arguments":{}})).await.unwrap();
        assert_eq!(te.status, 200);
        let sid = legacy_session(via, "/s/errors.http_status_sequence/mcp?params=%7B%22statusCodes%22%3A%5B200%2C200%2C503%5D%7D", json!({})).await;
        let e = post(via, "/s/errors.http_status_sequence/mcp?params=%7B%22statusCodes%22%3A%5B200%2C200%2C503%5D%7D", Some(&sid), &call(3, "read_counter", json!({}))).await.unwrap();
        assert_eq!(e.status, 503);
        proxy.shutdown().await;
    });
    // Closing the writer flushes and shuts the exporters down (outside the runtime).
    writer.drain();
    let received = got.lock().unwrap().clone();
    let mut spans = Vec::new();
    let mut points = Vec::new();
    for (path, body) in &received {
        match path.as_str() {
            "/v1/traces" => {
                let req =
                    ExportTraceServiceRequest::decode(body.as_ref()).expect("OTLP traces decode");
                for rs in req.resource_spans {
                    let res = attrs(&rs.resource.map(|r| r.attributes).unwrap_or_default());
                    assert_eq!(
                        res.get("service.name").map(String::as_str),
                        Some("mcp-triage-proxy")
                    );
                    for ss in rs.scope_spans {
                        spans.extend(ss.spans);
                    }
                }
            }
            "/v1/metrics" => {
                let req = ExportMetricsServiceRequest::decode(body.as_ref())
                    .expect("OTLP metrics decode");
                for rm in req.resource_metrics {
                    for sm in rm.scope_metrics {
                        for m in sm.metrics {
                            if m.name == "mcp.client.operation.duration" {
                                assert_eq!(m.unit, "s");
                                if let Some(metric::Data::Histogram(h)) = m.data {
                                    points.extend(h.data_points);
                                }
                            }
                        }
                    }
                }
            }
            other => panic!("unexpected OTLP path {other}"),
        }
    }
    let by_name: HashMap<String, HashMap<String, String>> = spans
        .iter()
        .map(|s| {
            (
                format!(
                    "{} #{}",
                    s.name,
                    attrs(&s.attributes)
                        .get("jsonrpc.request.id")
                        .cloned()
                        .unwrap_or_default()
                ),
                attrs(&s.attributes),
            )
        })
        .collect();
    let names: Vec<&String> = by_name.keys().collect();
    let paths: Vec<&String> = received.iter().map(|(p, _)| p).collect();
    assert!(
        by_name.contains_key("tools/call test_simple_text #1"),
        "spans {names:?}, requests {paths:?}"
    );
    let ok = &by_name["tools/call test_simple_text #1"];
    assert_eq!(ok["mcp.method.name"], "tools/call");
    assert_eq!(ok["gen_ai.tool.name"], "test_simple_text");
    assert_eq!(ok["mcp.protocol.version"], "2026-07-28");
    assert_eq!(ok["network.transport"], "tcp");
    assert_eq!(ok["server.address"], "127.0.0.1");
    assert_eq!(ok["server.port"], kport.to_string());
    assert_eq!(ok["mcp_triage.outcome"], "TOOL_SUCCESS");
    assert_eq!(ok["mcp_triage.layer"], "application");
    assert!(!ok.contains_key("error.type"));
    let te = &by_name["tools/call run_configured_test_scenario #2"];
    assert_eq!(te["error.type"], "tool_error");
    let http = &by_name["tools/call read_counter #3"];
    assert_eq!(http["error.type"], "http_error");
    assert_eq!(http["http.response.status_code"], "503");
    assert_eq!(http["mcp_triage.layer"], "transport");
    assert!(http.contains_key("mcp.session.id"));
    assert!(by_name.keys().any(|k| k.starts_with("initialize")));
    let count: u64 = points.iter().map(|p| p.count).sum();
    assert!(count >= 4, "histogram points: {points:?}");
    assert!(points
        .iter()
        .all(|p| !attrs(&p.attributes).contains_key("jsonrpc.request.id")));
    assert!(points
        .iter()
        .any(|p| attrs(&p.attributes).get("error.type").map(String::as_str) == Some("tool_error")));
    // initialize, notifications/initialized and three calls.
    assert_eq!(mem.0.lock().unwrap().len(), 5);
    rt.block_on(kitchen.shutdown());
}

/// An https collector: spans arrive when its CA is given (`--otlp-ca`), and nothing does when it
/// is not (the certificate does not verify, so no export reaches the receiver).
#[test]
fn spans_reach_an_https_collector_only_when_its_certificate_verifies() {
    let (rt, kitchen) = runtime_and_kitchen();
    for trusted in [true, false] {
        let got: Received = Arc::default();
        let (url, ca_pem) = rt.block_on(https_receiver(got.clone()));
        let ca = if trusted {
            mcp_triage_proxy::tls::certificates_from_pem(&ca_pem, "test-ca.pem").unwrap()
        } else {
            Vec::new()
        };
        let otlp =
            OtlpConsumer::new(&url, Peer::default(), Duration::from_millis(100), &ca).unwrap();
        let (sink, writer) = LogWriter::start(None, vec![Box::new(otlp)]);
        rt.block_on(async {
            let o = mcp_triage_proxy::http::ProxyOptions::new(&kitchen.base_url()).unwrap();
            let proxy = mcp_triage_proxy::http::start("127.0.0.1:0".parse().unwrap(), o, sink)
                .await
                .unwrap();
            let ok = modern(
                proxy.local_addr(),
                "/mcp",
                7,
                "tools/call",
                json!({"name":"test_simple_text","arguments":{}}),
            )
            .await
            .unwrap();
            assert_eq!(ok.status, 200);
            proxy.shutdown().await;
        });
        // Draining shuts the exporters down, which flushes them.
        writer.drain();
        let received = got.lock().unwrap().clone();
        let spans: Vec<_> = received
            .iter()
            .filter(|(p, _)| p == "/v1/traces")
            .flat_map(|(_, body)| {
                ExportTraceServiceRequest::decode(body.as_ref())
                    .expect("OTLP traces decode")
                    .resource_spans
            })
            .flat_map(|rs| rs.scope_spans)
            .flat_map(|ss| ss.spans)
            .map(|s| s.name)
            .collect();
        if trusted {
            assert_eq!(spans, ["tools/call test_simple_text"], "over https");
        } else {
            assert!(
                received.is_empty(),
                "an unverified collector got {received:?}"
            );
        }
    }
    rt.block_on(kitchen.shutdown());
}

/// Collector URLs that are not an http or https origin are refused up front, naming the flag's value.
#[test]
fn a_collector_url_must_be_an_http_or_https_origin() {
    for bad in ["ftp://127.0.0.1:4318", "127.0.0.1:4318", "https://"] {
        let e = OtlpConsumer::new(bad, Peer::default(), Duration::from_secs(1), &[])
            .err()
            .unwrap_or_else(|| panic!("{bad} accepted"))
            .to_string();
        assert!(e.starts_with(&format!("--otlp {bad:?}: ")), "{e}");
        if bad != "https://" {
            assert!(e.contains("http://host:port or https://host:port"), "{e}");
        }
    }
}

/// Issue 13 acceptance (canary): a bearer token sent through the proxy, in the Authorization
/// header and in an `access_token=` query parameter (RFC 6750 §2.3, which clients should not use
/// but some do), appears in no exported span or metric (the raw OTLP bytes are searched, so
/// every attribute, name and event is covered), in no record, and not in the kitchen's journal.
#[test]
fn a_bearer_token_through_the_proxy_reaches_no_span_record_or_journal() {
    const HEADER_CANARY: &str = "canaryHeaderTok3nQ7";
    const QUERY_CANARY: &str = "canaryQueryTok3nZ9";
    let (rt, kitchen) = runtime_and_kitchen();
    let got: Received = Arc::default();
    let url = rt.block_on(receiver(got.clone()));
    let otlp = OtlpConsumer::new(&url, Peer::default(), Duration::from_millis(200), &[]).unwrap();
    let (mem, proxy, writer) = proxy_exporting_to(&rt, &kitchen, otlp);
    rt.block_on(async {
        let via = proxy.local_addr();
        let bearer = format!("Bearer {HEADER_CANARY}");
        let path = format!("/mcp?access_token={QUERY_CANARY}");
        let mut params = json!({"name": "test_simple_text", "arguments": {}});
        params["_meta"] =
            mcp_triage_kitchen::testing::meta_as(json!({"name": "proxy-test", "version": "0"}));
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
            .to_string();
        let headers = [
            mcp_triage_kitchen::testing::ACCEPT,
            mcp_triage_kitchen::testing::CT,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "test_simple_text"),
            ("authorization", bearer.as_str()),
        ];
        let r = send(via, "POST", &path, &headers, Some(&body))
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        // A 401 for the header token too: a failing exchange records more (status, challenge).
        // (Scenario paths take their query as the scenario's parameters, so no access_token.)
        let denied = "/s/auth.oauth_flow/mcp?params=%7B%22fault%22%3A%22none%22%7D";
        let r = send(via, "POST", denied, &headers, Some(&body))
            .await
            .unwrap();
        assert_eq!(r.status, 401, "{}", String::from_utf8_lossy(&r.body));
        proxy.shutdown().await;
    });
    writer.drain();
    let received = got.lock().unwrap().clone();
    assert!(
        received.iter().any(|(p, _)| p == "/v1/traces"),
        "spans were exported: {:?}",
        received.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    let mut span_count = 0;
    for (path, body) in &received {
        for canary in [HEADER_CANARY, QUERY_CANARY] {
            assert!(
                !body.windows(canary.len()).any(|w| w == canary.as_bytes()),
                "{canary} in an OTLP export to {path}"
            );
        }
        if path == "/v1/traces" {
            let req = ExportTraceServiceRequest::decode(body.as_ref()).unwrap();
            span_count += req
                .resource_spans
                .iter()
                .flat_map(|rs| &rs.scope_spans)
                .map(|ss| ss.spans.len())
                .sum::<usize>();
        }
    }
    assert!(span_count >= 2, "{span_count} spans");
    let records = mem.0.lock().unwrap().clone();
    assert_eq!(records.len(), 2);
    // The query token was there to leak: the record keeps the path with the value replaced.
    assert_eq!(
        serde_json::to_value(&records[0]).unwrap()["path"],
        "/mcp?access_token=REDACTED"
    );
    let journal = serde_json::to_string(&kitchen.kitchen().journal()).unwrap();
    for canary in [HEADER_CANARY, QUERY_CANARY] {
        for r in &records {
            let text = serde_json::to_string(r).unwrap();
            assert!(!text.contains(canary), "{canary} in a record: {text}");
        }
        assert!(!journal.contains(canary), "{canary} in the journal");
    }
    rt.block_on(kitchen.shutdown());
}
