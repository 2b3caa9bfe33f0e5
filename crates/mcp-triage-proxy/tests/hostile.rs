//! The proxy against hostile or broken peers: an upstream that answers before the request body
//! is in, a client that sends its body too slowly, an upstream that never answers, a flood of
//! idle connections, and requests that a DNS-rebinding page would send. Every peer is a real
//! socket on 127.0.0.1; every wait is bounded.

use std::net::SocketAddr;
use std::time::Duration;

use mcp_triage_proxy::http::{ProxyHandle, ProxyOptions};
use mcp_triage_proxy::{LogWriter, MemoryConsumer, Record};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A proxy in front of `upstream`, its records in memory.
async fn proxy(
    upstream: SocketAddr,
    f: impl FnOnce(&mut ProxyOptions),
) -> (ProxyHandle, MemoryConsumer, LogWriter) {
    let mut o = ProxyOptions::new(&format!("http://{upstream}")).unwrap();
    o.drain_timeout = Duration::from_secs(1);
    f(&mut o);
    let records = MemoryConsumer::default();
    let (sink, writer) = LogWriter::start(None, vec![Box::new(records.clone())]);
    let p = mcp_triage_proxy::http::start("127.0.0.1:0".parse().unwrap(), o, sink)
        .await
        .unwrap();
    (p, records, writer)
}

/// Stops the proxy and returns every record.
async fn finish(p: ProxyHandle, records: MemoryConsumer, writer: LogWriter) -> Vec<Record> {
    p.shutdown().await;
    tokio::task::spawn_blocking(move || writer.drain())
        .await
        .unwrap();
    let v = records.0.lock().unwrap().clone();
    v
}

/// Reads a request head (up to the blank line) from `s`; the bytes after it that came along.
async fn read_head(s: &mut TcpStream) -> (String, Vec<u8>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the peer closed before a whole head");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(i + 4);
            return (String::from_utf8_lossy(&buf).into_owned(), rest);
        }
    }
}

const BIG: u64 = 100 << 20;

/// The upstream refuses a 100 MB chunked body with a 413 as soon as it has read the head (and
/// then reads and discards the rest for a while, as nginx's lingering close does). The client
/// gets that 413, the proxy stops sending the body upstream, and the record says HTTP_ERROR 413
/// — not a dropped connection that "may have executed".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_early_413_reaches_the_client_and_the_body_stops() {
    early_413(true).await;
}

/// The same, from an upstream that closes at once after its 413 (its kernel then resets the
/// connection, since body bytes are still arriving).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_early_413_then_a_reset_still_reaches_the_client() {
    early_413(false).await;
}

async fn early_413(linger: bool) {
    let up = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up_addr = up.local_addr().unwrap();
    let upstream = tokio::spawn(async move {
        let (mut s, _) = up.accept().await.unwrap();
        let (head, early) = read_head(&mut s).await;
        let body = "body too large\n";
        s.write_all(
            format!(
                "HTTP/1.1 413 Payload Too Large\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
        if !linger {
            // Closing with unread bytes: the kernel sends a reset.
            drop(s);
            return (head, early.len() as u64);
        }
        let _ = s.shutdown().await;
        // Lingering close: read what still comes, up to 10 s, so no reset destroys the 413.
        let mut discarded = early.len() as u64;
        let mut chunk = vec![0u8; 64 << 10];
        let _ = tokio::time::timeout(Duration::from_secs(10), async {
            while let Ok(n) = s.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                discarded += n as u64;
            }
        })
        .await;
        (head, discarded)
    });
    let (p, records, writer) = proxy(up_addr, |_| {}).await;
    let mut c = TcpStream::connect(p.local_addr()).await.unwrap();
    c.write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
        .await
        .unwrap();
    let (mut rd, wr) = c.into_split();
    let sender = tokio::spawn(send_chunks(wr));
    let mut resp = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), rd.read_to_end(&mut resp)).await;
    let resp = String::from_utf8_lossy(&resp).into_owned();
    assert!(
        resp.starts_with("HTTP/1.1 413"),
        "the client gets the upstream's answer: {resp:?}"
    );
    assert!(resp.ends_with("body too large\n"), "{resp:?}");
    let (head, discarded) = upstream.await.unwrap();
    assert!(head.starts_with("POST /mcp"), "{head}");
    assert!(
        discarded < BIG / 2,
        "the proxy stopped sending the body: the upstream read {discarded} bytes of it"
    );
    sender.abort();
    let recs = finish(p, records, writer).await;
    assert_eq!(recs.len(), 1, "{recs:#?}");
    assert_eq!(recs[0].http_statuses, vec![413], "{recs:#?}");
    assert_eq!(recs[0].outcome, "HTTP_ERROR", "{recs:#?}");
}

/// The kitchen refuses bodies over 1 MiB with a 413 after reading that much, and closes
/// while the body still comes: before the fix about one run in four lost the 413 to the
/// proxy's write error, so the exchange runs ten times.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kitchens_413_for_a_100_mb_body_reaches_the_client() {
    let kitchen = mcp_triage_kitchen::start(
        "127.0.0.1:0".parse().unwrap(),
        mcp_triage_kitchen::KitchenOptions::default(),
    )
    .await
    .unwrap();
    let (p, records, writer) = proxy(kitchen.local_addr(), |_| {}).await;
    for round in 0..10 {
        let resp = send_big_chunked(p.local_addr()).await;
        assert!(
            resp.starts_with("HTTP/1.1 413"),
            "round {round}: the client gets the kitchen's answer: {resp:?}"
        );
    }
    let recs = finish(p, records, writer).await;
    assert_eq!(recs.len(), 10, "{recs:#?}");
    for r in &recs {
        assert_eq!(r.http_statuses, vec![413], "{recs:#?}");
        assert_eq!(r.outcome, "HTTP_ERROR", "{recs:#?}");
    }
    kitchen.shutdown().await;
}

/// Sends [`BIG`] bytes of chunked body (64 KiB chunks) and its end, stopping at the first
/// failed write; how many body bytes went.
async fn send_chunks(mut wr: tokio::net::tcp::OwnedWriteHalf) -> u64 {
    let chunk = vec![b' '; 64 << 10];
    let framed = [
        format!("{:x}\r\n", chunk.len()).into_bytes(),
        chunk,
        b"\r\n".to_vec(),
    ]
    .concat();
    let mut sent = 0u64;
    while sent < BIG {
        if wr.write_all(&framed).await.is_err() {
            break;
        }
        sent += 64 << 10;
    }
    let _ = wr.write_all(b"0\r\n\r\n").await;
    sent
}

/// POSTs a 100 MB chunked body to `addr` while reading the response; the response.
async fn send_big_chunked(addr: SocketAddr) -> String {
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        .await
        .unwrap();
    let (mut rd, wr) = c.into_split();
    let sender = tokio::spawn(send_chunks(wr));
    let mut resp = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), rd.read_to_end(&mut resp)).await;
    sender.abort();
    String::from_utf8_lossy(&resp).into_owned()
}

/// What a raw upstream saw on one connection: the request head, and when the proxy closed it.
struct Seen {
    head: String,
    closed_after: Duration,
}

/// An upstream on 127.0.0.1 that reads each connection's request head, answers `answer` (or
/// nothing at all: then it reads until the proxy closes), and reports what it saw.
async fn raw_upstream(
    answer: Option<&'static str>,
) -> (SocketAddr, tokio::sync::mpsc::UnboundedReceiver<Seen>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let start = tokio::time::Instant::now();
                let (head, _) = read_head(&mut s).await;
                if let Some(a) = answer {
                    let _ = s.write_all(a.as_bytes()).await;
                }
                let mut sink = [0u8; 4096];
                let _ = tokio::time::timeout(Duration::from_secs(20), async {
                    while let Ok(n) = s.read(&mut sink).await {
                        if n == 0 {
                            break;
                        }
                    }
                })
                .await;
                let _ = tx.send(Seen {
                    head,
                    closed_after: start.elapsed(),
                });
            });
        }
    });
    (addr, rx)
}

const TOOLS_CALL: &str =
    r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{}}}"#;

/// Sends `head_and_body` on a fresh connection to `addr` and reads the answer (bounded).
async fn exchange(addr: SocketAddr, head_and_body: &str) -> String {
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(head_and_body.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

fn post(path: &str, host: &str, extra: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// An upstream that never answers: after `--response-timeout` the client gets a 504 naming the
/// limit, the upstream request is closed, and the record is a TIMEOUT naming it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_upstream_gets_the_client_a_504_and_a_timeout_record() {
    let (up, mut seen) = raw_upstream(None).await;
    let (p, records, writer) = proxy(up, |o| o.response_timeout = Duration::from_millis(300)).await;
    let started = tokio::time::Instant::now();
    let resp = exchange(p.local_addr(), &post("/mcp", "127.0.0.1", "", TOOLS_CALL)).await;
    assert!(resp.starts_with("HTTP/1.1 504"), "{resp}");
    assert!(
        resp.contains("within 300 ms") && resp.contains("response timeout"),
        "{resp}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    let s = tokio::time::timeout(Duration::from_secs(5), seen.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(s.head.starts_with("POST /mcp"), "{}", s.head);
    assert!(
        s.closed_after < Duration::from_secs(5),
        "the upstream request was closed"
    );
    let recs = finish(p, records, writer).await;
    assert_one_timeout(&recs, 504, "responseTimeoutMs", 300);
}

/// One record: a TIMEOUT with `status`, naming the limit `name` = `max`.
fn assert_one_timeout(recs: &[Record], status: u16, name: &str, max: u64) {
    assert_eq!(recs.len(), 1, "{recs:#?}");
    let r = &recs[0];
    assert_eq!(
        (r.outcome.as_str(), r.http_statuses.as_slice()),
        ("TIMEOUT", &[status][..]),
        "{r:#?}"
    );
    let limit = r
        .verdict
        .as_ref()
        .and_then(|v| v.limit.as_ref())
        .expect("the limit is named");
    assert_eq!((limit.name.as_str(), limit.max), (name, max));
}

/// A client that stops sending mid-body: after `--body-read-timeout` it gets a 408, the
/// upstream request is closed, and the record is a TIMEOUT naming the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_stalling_mid_body_gets_a_408_and_a_timeout_record() {
    let (up, mut seen) = raw_upstream(None).await;
    let (p, records, writer) =
        proxy(up, |o| o.body_read_timeout = Duration::from_millis(300)).await;
    let mut c = TcpStream::connect(p.local_addr()).await.unwrap();
    let full = post("/mcp", "127.0.0.1", "", TOOLS_CALL);
    // Everything but the last 20 bytes of the body, then nothing.
    c.write_all(&full.as_bytes()[..full.len() - 20])
        .await
        .unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut out)).await;
    let resp = String::from_utf8_lossy(&out);
    assert!(resp.starts_with("HTTP/1.1 408"), "{resp}");
    assert!(resp.contains("body read timeout"), "{resp}");
    let s = tokio::time::timeout(Duration::from_secs(5), seen.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        s.closed_after < Duration::from_secs(5),
        "the upstream request was closed"
    );
    let recs = finish(p, records, writer).await;
    assert_one_timeout(&recs, 408, "bodyReadTimeoutMs", 300);
}

/// Busy connections (an exchange open on each) up to `--max-connections` hold their slots; the
/// next connection gets a 503 naming the limit, and once one closes a request goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_get_a_503_naming_it() {
    let (up, _seen) = raw_upstream(None).await;
    let (p, records, writer) = proxy(up, |o| o.max_connections = 4).await;
    let mut busy = Vec::new();
    for _ in 0..4 {
        let mut c = TcpStream::connect(p.local_addr()).await.unwrap();
        c.write_all(post("/mcp", "127.0.0.1", "", TOOLS_CALL).as_bytes())
            .await
            .unwrap();
        busy.push(c);
    }
    // Let the proxy accept all four and forward their requests (the upstream never answers).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let get = "GET /.well-known/oauth-protected-resource HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n";
    let resp = exchange(p.local_addr(), get).await;
    assert!(resp.starts_with("HTTP/1.1 503"), "{resp}");
    assert!(
        resp.contains("--max-connections") && resp.contains("(4,"),
        "{resp}"
    );
    assert_eq!(p.refused_connections(), 1);
    drop(busy.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut c = TcpStream::connect(p.local_addr()).await.unwrap();
    c.write_all(get.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    let _ = tokio::time::timeout(Duration::from_millis(500), c.read(&mut head)).await;
    assert!(!head.starts_with(b"HTTP/1.1 503"), "a slot came free");
    drop((busy, c));
    let _ = finish(p, records, writer).await;
}

/// Connections that send nothing fill `--max-connections`: a real client is not refused, the
/// connection idle longest is closed to admit it (a flood used to lock clients out with 503s
/// for the flood's header-read timeout, 30 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cap_the_longest_idle_connection_makes_room() {
    let kitchen = mcp_triage_kitchen::start(
        "127.0.0.1:0".parse().unwrap(),
        mcp_triage_kitchen::KitchenOptions::default(),
    )
    .await
    .unwrap();
    let (p, records, writer) = proxy(kitchen.local_addr(), |o| o.max_connections = 4).await;
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(TcpStream::connect(p.local_addr()).await.unwrap());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let get = "GET /.well-known/oauth-protected-resource HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n";
    for _ in 0..3 {
        let resp = exchange(p.local_addr(), get).await;
        assert!(resp.starts_with("HTTP/1.1 "), "{resp}");
        assert!(!resp.starts_with("HTTP/1.1 503"), "{resp}");
    }
    assert_eq!(p.refused_connections(), 0);
    // The first idle connection (idle longest) was the first closed.
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(2), idle[0].read(&mut buf))
        .await
        .expect("the longest idle connection was closed")
        .unwrap_or(0);
    assert_eq!(n, 0, "closed without an answer");
    drop(idle);
    let recs = finish(p, records, writer).await;
    assert_eq!(
        recs.len(),
        3,
        "only the forwarded requests have records: {recs:#?}"
    );
    kitchen.shutdown().await;
}

/// DNS-rebinding protection on a loopback listen: a foreign Host or Origin gets a 403 whose
/// JSON-RPC error names the reason and the flag, and a REFUSED record; the upstream never sees
/// it. Loopback forms (127.1, [::1], localhost) and allowed names pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_hosts_and_origins_are_refused_with_a_record() {
    let ok = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
    let (up, mut seen) = raw_upstream(Some(ok)).await;
    let (p, records, writer) = proxy(up, |o| o.allowed_hosts = vec!["mcp.internal".into()]).await;
    let port = p.local_addr().port();
    let refused = [
        ("evil.example".to_string(), "", "HOST_REFUSED"),
        (format!("evil.example:{port}"), "", "HOST_REFUSED"),
        (
            "127.0.0.1".to_string(),
            "origin: http://evil.example\r\n",
            "ORIGIN_REFUSED",
        ),
        (
            "localhost".to_string(),
            "origin: null\r\n",
            "ORIGIN_REFUSED",
        ),
    ];
    for (host, extra, _) in &refused {
        let resp = exchange(
            p.local_addr(),
            &post("/mcp?token=t0p", host, extra, TOOLS_CALL),
        )
        .await;
        assert!(resp.starts_with("HTTP/1.1 403"), "{host} {extra}: {resp}");
        let body: serde_json::Value =
            serde_json::from_str(resp.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        let msg = body["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("DNS-rebinding") && msg.contains("--allow-"),
            "{msg}"
        );
        assert!(body.get("id").is_none());
    }
    for (host, extra) in [
        (format!("127.1:{port}"), ""),
        (format!("[::1]:{port}"), ""),
        ("localhost".to_string(), "origin: http://127.0.0.1:5173\r\n"),
        (
            "mcp.internal".to_string(),
            "origin: https://mcp.internal\r\n",
        ),
    ] {
        let resp = exchange(p.local_addr(), &post("/mcp", &host, extra, TOOLS_CALL)).await;
        assert!(resp.starts_with("HTTP/1.1 200"), "{host} {extra}: {resp}");
        let s = seen.recv().await.unwrap();
        let host_line = format!("x-forwarded-host: {host}\r\n");
        assert!(
            s.head
                .to_ascii_lowercase()
                .contains(&host_line.to_ascii_lowercase()),
            "{}",
            s.head
        );
    }
    let recs = finish(p, records, writer).await;
    let refusals: Vec<_> = recs.iter().filter(|r| r.outcome == "REFUSED").collect();
    assert_eq!(refusals.len(), refused.len(), "{recs:#?}");
    for (r, (_, _, code)) in refusals.iter().zip(&refused) {
        assert_eq!(r.http_statuses, vec![403]);
        assert_eq!(r.warnings[0].code, *code, "{r:#?}");
        assert_eq!(r.path.as_deref(), Some("/mcp?token=REDACTED"));
    }
    assert_eq!(recs.len(), refused.len() + 4);
}

/// `Proxy-Authorization` is for the proxy and does not go upstream; query secrets go upstream
/// as sent but the record's path shows them as REDACTED (names kept; extra names by option).
/// With the host check off, a foreign Host is forwarded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_credentials_stay_and_query_secrets_are_redacted_in_records() {
    let ok = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
    let (up, mut seen) = raw_upstream(Some(ok)).await;
    let (p, records, writer) = proxy(up, |o| {
        o.host_check = mcp_triage_proxy::http::HostCheck::Off;
        o.redact_query_params = vec!["sig".into()];
    })
    .await;
    let path = "/mcp?access_token=abc&keep=1&sig=xyz&Key=k";
    let resp = exchange(
        p.local_addr(),
        &post(
            path,
            "evil.example",
            "proxy-authorization: Basic c2VjcmV0\r\n",
            TOOLS_CALL,
        ),
    )
    .await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    let s = seen.recv().await.unwrap();
    let head = s.head.to_ascii_lowercase();
    assert!(
        !head.contains("proxy-authorization") && !head.contains("c2vjcmv0"),
        "{}",
        s.head
    );
    assert!(
        s.head.starts_with(&format!("POST {path} ")),
        "the upstream gets the query as sent: {}",
        s.head
    );
    let recs = finish(p, records, writer).await;
    assert_eq!(recs.len(), 1);
    assert_eq!(
        recs[0].path.as_deref(),
        Some("/mcp?access_token=REDACTED&keep=1&sig=REDACTED&Key=REDACTED")
    );
}

/// A JSON answer that declares a length over `maxBodyBytes` is forwarded whole, and no copy of
/// it is kept for the classifier: the record says LIMIT_EXCEEDED naming the limit and why
/// (bench/proxy-hostile.sh measures the memory: a 2 GB answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_answer_declared_over_the_limit_is_forwarded_and_not_copied() {
    const BODY: &str = concat!(
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":""#,
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        r#""}]}}"#
    );
    let answer: &'static str = Box::leak(
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{BODY}",
            BODY.len()
        )
        .into_boxed_str(),
    );
    let (up, _seen) = raw_upstream(Some(answer)).await;
    let (p, records, writer) = proxy(up, |o| o.observe.limits.max_body_bytes = 100).await;
    let resp = exchange(p.local_addr(), &post("/mcp", "127.0.0.1", "", TOOLS_CALL)).await;
    assert!(resp.ends_with(BODY), "forwarded whole: {resp}");
    let recs = finish(p, records, writer).await;
    assert_eq!(recs.len(), 1, "{recs:#?}");
    let r = &recs[0];
    assert_eq!(r.outcome, "LIMIT_EXCEEDED", "{r:#?}");
    assert!(!r.classified);
    assert_eq!(r.response_bytes, BODY.len() as u64);
    let v = r.verdict.as_ref().unwrap();
    assert_eq!(
        v.limit.as_ref().map(|l| (l.name.as_str(), l.max)),
        Some(("maxBodyBytes", 100))
    );
    assert!(
        v.detail
            .as_deref()
            .unwrap_or("")
            .contains("declares Content-Length"),
        "{v:#?}"
    );
}

const EARLY_OK: &str = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 64\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[],\"isError\":false}}";

/// TOOLS_CALL with a `pad` member, `len` bytes in all.
fn padded_call(len: usize) -> String {
    let open = &TOOLS_CALL[..TOOLS_CALL.len() - 1];
    let pad = "x".repeat(len - TOOLS_CALL.len() - 9);
    let body = format!("{open},\"pad\":\"{pad}\"}}");
    assert_eq!(body.len(), len);
    body
}

/// Sends the head and then the body `step` bytes every `every`, in the background; returns the
/// read half to read the answer from.
async fn trickle(
    addr: SocketAddr,
    body: String,
    step: usize,
    every: Duration,
) -> tokio::net::tcp::OwnedReadHalf {
    let c = TcpStream::connect(addr).await.unwrap();
    let (rd, mut wr) = c.into_split();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    tokio::spawn(async move {
        wr.write_all(head.as_bytes()).await.unwrap();
        for chunk in body.as_bytes().chunks(step) {
            if wr.write_all(chunk).await.is_err() {
                return;
            }
            tokio::time::sleep(every).await;
        }
    });
    rd
}

/// An upstream that answers as soon as it has the head, while the client still trickles its
/// body (each gap within --body-read-timeout): the answer reaches the client at once, not after
/// the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_early_answer_to_a_trickling_body_reaches_the_client() {
    let (up, _seen) = raw_upstream(Some(EARLY_OK)).await;
    let (p, records, writer) = proxy(up, |o| o.body_read_timeout = Duration::from_secs(2)).await;
    // 2,000 bytes, 10 every 100 ms: 20 s for the whole body.
    let body = padded_call(2000);
    let mut rd = trickle(p.local_addr(), body, 10, Duration::from_millis(100)).await;
    let started = tokio::time::Instant::now();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&out).contains("\"isError\":false}}") {
        let n = tokio::time::timeout(Duration::from_secs(8), rd.read(&mut buf))
            .await
            .expect("the early answer did not arrive within 8 s")
            .unwrap();
        assert!(
            n > 0,
            "closed before the answer: {}",
            String::from_utf8_lossy(&out)
        );
        out.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&out).starts_with("HTTP/1.1 200"));
    assert!(started.elapsed() < Duration::from_secs(8));
    drop(rd);
    let _ = finish(p, records, writer).await;
}

/// A body that keeps trickling within --body-read-timeout's gap still ends at the whole-body
/// deadline (--body-deadline): a 408 naming it, and a TIMEOUT record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickle_within_the_gap_ends_at_the_whole_body_deadline() {
    let (up, _seen) = raw_upstream(None).await;
    let (p, records, writer) = proxy(up, |o| {
        o.body_read_timeout = Duration::from_secs(2);
        o.body_deadline = Duration::from_millis(800);
    })
    .await;
    let body = padded_call(1000);
    let mut rd = trickle(p.local_addr(), body, 5, Duration::from_millis(100)).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), rd.read_to_end(&mut out)).await;
    let resp = String::from_utf8_lossy(&out);
    assert!(resp.starts_with("HTTP/1.1 408"), "{resp}");
    assert!(resp.contains("body deadline"), "{resp}");
    let recs = finish(p, records, writer).await;
    assert_one_timeout(&recs, 408, "bodyDeadlineMs", 800);
}

/// A chunked request body that breaks its encoding mid-way: the client gets a 400 naming it
/// (it used to get no response at all), and the record says the upstream never got a whole
/// request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_chunked_body_gets_a_400() {
    let (up, _seen) = raw_upstream(None).await;
    let (p, records, writer) = proxy(up, |_| {}).await;
    let req = "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n5\r\n{\"jso\r\nzz-not-hex\r\n";
    let resp = exchange(p.local_addr(), req).await;
    assert!(resp.starts_with("HTTP/1.1 400"), "{resp:?}");
    assert!(resp.contains("request body could not be read"), "{resp}");
    let recs = finish(p, records, writer).await;
    assert_eq!(recs.len(), 1, "{recs:#?}");
    assert_eq!(recs[0].http_statuses, vec![400], "{recs:#?}");
}
