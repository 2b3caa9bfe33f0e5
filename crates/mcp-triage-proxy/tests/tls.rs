//! https upstreams (and the connect timeout): the proxy reaches the kitchen through a TLS terminator on 127.0.0.1 whose
//! certificate is signed by a certificate authority made here (rcgen). With that CA trusted
//! (`--upstream-ca`) bodies pass byte for byte and records are classified as over plain HTTP;
//! without it the certificate does not verify, and the client gets a 502 and a
//! `CONNECTION_ERROR` record naming the TLS failure.

mod common;

use common::tls::{certificates, tls_terminator};
use common::*;
use mcp_triage_kitchen::{start, KitchenOptions};
use mcp_triage_proxy::http::ProxyOptions;
use serde_json::json;

async fn rig(trust_ca: bool) -> Rig {
    let kitchen = start("127.0.0.1:0".parse().unwrap(), KitchenOptions::default())
        .await
        .unwrap();
    let (ca_pem, chain, key) = certificates();
    let tls = tls_terminator(chain, key, kitchen.local_addr()).await;
    Rig::around(kitchen, &format!("https://{tls}"), |o| {
        if trust_ca {
            let n = o.add_upstream_ca_pem(ca_pem.as_bytes(), "test-ca.pem");
            assert_eq!(n.unwrap(), 1);
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_upstream_bodies_pass_byte_for_byte() {
    let rig = rig(true).await;
    for (i, mode) in ["json", "sse"].into_iter().enumerate() {
        let path = format!("/s/baseline/mcp?responseMode={mode}");
        let id = 20 + i as i64;
        let p = json!({"name": "test_simple_text", "arguments": {}});
        let direct = modern(rig.direct(), &path, id, "tools/call", p.clone())
            .await
            .unwrap();
        let via = modern(rig.via(), &path, id, "tools/call", p).await.unwrap();
        assert_eq!(direct.status, 200);
        assert_eq!(
            (direct.status, direct.sha()),
            (via.status, via.sha()),
            "{mode}: {}",
            via.text()
        );
        assert_eq!(direct.header("content-type"), via.header("content-type"));
    }
    // A tool error is classified as such over TLS too.
    let p = json!({"name": "test_error_handling", "arguments": {}});
    let via = modern(rig.via(), "/s/baseline/mcp", 30, "tools/call", p)
        .await
        .unwrap();
    assert_eq!(via.status, 200);
    let records = rig.finish().await;
    assert_eq!(records.len(), 3, "{records:#?}");
    for id in [20, 21] {
        let r = by_id(&records, id);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].outcome, "TOOL_SUCCESS", "{:#?}", r[0]);
        assert!(r[0].response_bytes > 0);
    }
    assert_eq!(by_id(&records, 30)[0].outcome, "TOOL_ERROR");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_upstream_certificate_is_a_502_and_a_connection_error() {
    let rig = rig(false).await;
    let p = json!({"name": "test_simple_text", "arguments": {}});
    let via = modern(rig.via(), "/s/baseline/mcp", 40, "tools/call", p)
        .await
        .unwrap();
    assert_eq!(via.status, 502, "{}", via.text());
    assert!(via.text().contains("TLS handshake"), "{}", via.text());
    let records = rig.finish().await;
    let r = by_id(&records, 40);
    assert_eq!(r.len(), 1, "{records:#?}");
    assert_eq!(r[0].outcome, "CONNECTION_ERROR");
    let detail = r[0]
        .verdict
        .as_ref()
        .and_then(|v| v.detail.clone())
        .unwrap_or_default();
    assert!(
        detail.contains("TLS handshake") && detail.contains("certificate"),
        "{detail}"
    );
}

#[test]
fn upstream_ca_files_must_hold_certificates() {
    let mut o = ProxyOptions::new("https://127.0.0.1:1").unwrap();
    let e = o
        .add_upstream_ca_pem(b"not a certificate", "x.pem")
        .unwrap_err()
        .to_string();
    assert!(e.contains("x.pem") && e.contains("no CERTIFICATE"), "{e}");
    let e = o
        .add_upstream_ca_pem(
            b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            "y.pem",
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("y.pem"), "{e}");
    assert!(o.upstream_ca.is_empty());
}

/// An upstream that accepts the connection and never answers the TLS handshake: after the
/// connect timeout the client gets a 502 and the record says which limit ended it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_tls_upstream_hits_the_connect_timeout() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            open.push(s);
        }
    });
    let kitchen = start("127.0.0.1:0".parse().unwrap(), KitchenOptions::default())
        .await
        .unwrap();
    let rig = Rig::around(kitchen, &format!("https://{addr}"), |o| {
        o.connect_timeout = std::time::Duration::from_millis(300);
    })
    .await;
    let started = std::time::Instant::now();
    let p = json!({"name": "test_simple_text", "arguments": {}});
    let via = modern(rig.via(), "/mcp", 60, "tools/call", p)
        .await
        .unwrap();
    assert_eq!(via.status, 502, "{}", via.text());
    assert!(via.text().contains("connect timeout"), "{}", via.text());
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let records = rig.finish().await;
    let r = by_id(&records, 60);
    assert_eq!(r.len(), 1, "{records:#?}");
    assert_eq!(r[0].outcome, "CONNECTION_ERROR");
    held.abort();
}
