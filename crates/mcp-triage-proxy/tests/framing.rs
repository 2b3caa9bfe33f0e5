//! The proxy's HTTP/1.1 framing against the desync and smuggling findings of issue 41, one test
//! each: a raw-socket client, the proxy, and a scripted raw-socket upstream that logs every
//! byte it gets and counts the requests in them. Each test failed before the framing rules of
//! `src/http/h1/framing.rs`. 127.0.0.1 only; every wait is bounded.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_triage_proxy::http::{ProxyHandle, ProxyOptions};
use mcp_triage_proxy::{LogWriter, MemoryConsumer, Record};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const STEP: Duration = Duration::from_secs(10);

async fn proxy(upstream: SocketAddr) -> (ProxyHandle, MemoryConsumer, LogWriter) {
    let mut o = ProxyOptions::new(&format!("http://{upstream}")).unwrap();
    o.drain_timeout = Duration::from_secs(1);
    let records = MemoryConsumer::default();
    let (sink, writer) = LogWriter::start(None, vec![Box::new(records.clone())]);
    let p = mcp_triage_proxy::http::start("127.0.0.1:0".parse().unwrap(), o, sink)
        .await
        .unwrap();
    (p, records, writer)
}

async fn finish(p: ProxyHandle, records: MemoryConsumer, writer: LogWriter) -> Vec<Record> {
    p.shutdown().await;
    tokio::task::spawn_blocking(move || writer.drain())
        .await
        .unwrap();
    let v = records.0.lock().unwrap().clone();
    v
}

/// What the upstream does after a request head.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pace {
    /// Reads the body, then answers.
    AfterBody,
    /// Answers at once, then reads whatever comes (an early 401/413); the answer's body
    /// follows its head after a pause.
    Early,
}

/// The upstream: answers the n-th request head of all its connections with `script[n]` (the
/// last one again past the end), and logs the request lines it parsed.
#[derive(Clone)]
struct Upstream {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
}

async fn upstream(script: Vec<Vec<u8>>, pace: Pace) -> Upstream {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let up = Upstream {
        addr,
        seen: seen.clone(),
    };
    let script = Arc::new(script);
    let count = Arc::new(Mutex::new(0usize));
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            let (script, seen, count) = (script.clone(), seen.clone(), count.clone());
            tokio::spawn(serve_upstream(s, script, seen, count, pace));
        }
    });
    up
}

async fn serve_upstream(
    mut s: TcpStream,
    script: Arc<Vec<Vec<u8>>>,
    seen: Arc<Mutex<Vec<String>>>,
    count: Arc<Mutex<usize>>,
    pace: Pace,
) {
    let mut buf = Vec::new();
    loop {
        let Some((line, body_len, chunked, head_len)) = next_head(&mut s, &mut buf).await else {
            return;
        };
        seen.lock().unwrap().push(line);
        buf.drain(..head_len);
        let answer = {
            let mut n = count.lock().unwrap();
            *n += 1;
            script[(*n - 1).min(script.len() - 1)].clone()
        };
        if pace == Pace::Early {
            let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            let _ = s.write_all(&answer[..split]).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            let _ = s.write_all(&answer[split..]).await;
            // Reads on, as a lingering close does, and parses nothing more.
            let mut sink = [0u8; 4096];
            while let Ok(Ok(n)) = tokio::time::timeout(STEP, s.read(&mut sink)).await {
                if n == 0 {
                    return;
                }
            }
            return;
        }
        if chunked {
            if read_chunked(&mut s, &mut buf).await.is_none() {
                return;
            }
        } else {
            while buf.len() < body_len {
                if !fill(&mut s, &mut buf).await {
                    return;
                }
            }
            buf.drain(..body_len);
        }
        if s.write_all(&answer).await.is_err() {
            return;
        }
    }
}

async fn fill(s: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 8192];
    match tokio::time::timeout(STEP, s.read(&mut chunk)).await {
        Ok(Ok(n)) if n > 0 => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
        _ => false,
    }
}

/// The next request head: its request line, body length, whether chunked, head length.
async fn next_head(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(String, usize, bool, usize)> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 128];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(buf) {
            Ok(httparse::Status::Complete(n)) => {
                let line = format!("{} {}", req.method.unwrap(), req.path.unwrap());
                let value = |name: &str| {
                    req.headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case(name))
                        .map(|h| String::from_utf8_lossy(h.value).to_string())
                };
                let chunked = value("transfer-encoding").is_some();
                let len = value("content-length").map_or(0, |v| v.trim().parse().unwrap());
                return Some((line, len, chunked, n));
            }
            Ok(httparse::Status::Partial) => {
                if !fill(s, buf).await {
                    return None;
                }
            }
            Err(e) => panic!("the upstream got a request that does not parse: {e}: {buf:?}"),
        }
    }
}

/// Reads a chunked body off `buf` (reading more as needed); `None` when the peer closed.
async fn read_chunked(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        while !buf.windows(2).any(|w| w == b"\r\n") {
            if !fill(s, buf).await {
                return None;
            }
        }
        let i = buf.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&buf[..i]).unwrap(), 16).unwrap();
        while buf.len() < i + 2 + size + 2 {
            if !fill(s, buf).await {
                return None;
            }
        }
        body.extend_from_slice(&buf[i + 2..i + 2 + size]);
        buf.drain(..i + 4 + size);
        if size == 0 {
            return Some(body);
        }
    }
}

/// One response as the client parsed it.
#[derive(Debug)]
struct Got {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Got {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Parses `wire` (all a client read until the connection closed) as responses, the way a
/// strict client frames them: a length, chunked, or until the end. Panics on a response that
/// announces both, or bytes that are no response.
fn responses(mut wire: &[u8]) -> Vec<Got> {
    let mut out = Vec::new();
    while !wire.is_empty() {
        let mut headers = [httparse::EMPTY_HEADER; 128];
        let mut r = httparse::Response::new(&mut headers);
        let n = match r.parse(wire) {
            Ok(httparse::Status::Complete(n)) => n,
            other => panic!(
                "not a response: {other:?}: {:?}",
                String::from_utf8_lossy(wire)
            ),
        };
        let headers: Vec<(String, String)> = r
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.to_ascii_lowercase(),
                    String::from_utf8_lossy(h.value).to_string(),
                )
            })
            .collect();
        let status = r.code.unwrap();
        wire = &wire[n..];
        let get = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let (cl, te) = (get("content-length"), get("transfer-encoding"));
        assert!(
            cl.is_none() || te.is_none(),
            "a response with both: {headers:?}"
        );
        let body = if let Some(cl) = cl {
            let n: usize = cl.parse().unwrap();
            let b = wire[..n].to_vec();
            wire = &wire[n..];
            b
        } else if te.is_some() {
            let mut body = Vec::new();
            loop {
                let i = wire.windows(2).position(|w| w == b"\r\n").unwrap();
                let size =
                    usize::from_str_radix(std::str::from_utf8(&wire[..i]).unwrap(), 16).unwrap();
                body.extend_from_slice(&wire[i + 2..i + 2 + size]);
                wire = &wire[i + 4 + size..];
                if size == 0 {
                    break body;
                }
            }
        } else {
            let b = wire.to_vec();
            wire = &[];
            b
        };
        out.push(Got {
            status,
            headers,
            body,
        });
    }
    out
}

/// Sends `req` on one connection and reads until the proxy closes it (or `STEP` passes).
async fn exchange(proxy: SocketAddr, req: &[u8]) -> Vec<u8> {
    let mut c = TcpStream::connect(proxy).await.unwrap();
    c.write_all(req).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(STEP, c.read_to_end(&mut out)).await;
    out
}

fn post(body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#;

fn chunked(body: &str) -> String {
    format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len())
}

/// A response with `Transfer-Encoding: chunked` and a `Content-Length` that covers only part
/// of it, its chunked body holding what looks like a second response: the client gets the
/// chunked body whole, as one response, to each of three requests on one connection (before:
/// the planted response answered the second request, and every answer after was one behind).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_with_both_lengths_is_framed_by_transfer_encoding() {
    let result = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
    let planted = format!("{result}HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nEVIL!");
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\ntransfer-encoding: chunked\r\n\r\n{}",
        result.len(),
        chunked(&planted)
    );
    let up = upstream(vec![answer.into_bytes()], Pace::AfterBody).await;
    let (p, records, w) = proxy(up.addr).await;
    let mut req = post(CALL).repeat(3);
    req.push_str("GET /end HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n");
    let got = responses(&exchange(p.local_addr(), req.as_bytes()).await);
    assert_eq!(got.len(), 4, "one response per request: {got:?}");
    for g in &got {
        assert_eq!(g.status, 200);
        assert_eq!(g.body, planted.as_bytes(), "the whole chunked body");
        assert_eq!(g.header("content-length"), None);
    }
    let records = finish(p, records, w).await;
    assert_eq!(up.seen.lock().unwrap().len(), 4);
    let sizes: Vec<_> = records.iter().map(|r| r.response_bytes).collect();
    assert_eq!(
        sizes,
        vec![planted.len() as u64; 4],
        "records = what the client got"
    );
}

/// `Content-Length: 0` beside a real chunked result: the result reaches the client (before:
/// an empty 200, the result dropped, the record blaming the client).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_length_beside_a_chunked_result_loses_nothing() {
    let result = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}"#;
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 0\r\ntransfer-encoding: chunked\r\n\r\n{}",
        chunked(result)
    );
    let up = upstream(vec![answer.into_bytes()], Pace::AfterBody).await;
    let (p, records, w) = proxy(up.addr).await;
    let mut req = post(CALL);
    req = req.replace(
        "host: 127.0.0.1\r\n",
        "host: 127.0.0.1\r\nconnection: close\r\n",
    );
    let got = responses(&exchange(p.local_addr(), req.as_bytes()).await);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body, result.as_bytes());
    let records = finish(p, records, w).await;
    assert_eq!(
        records[0].outcome.as_str(),
        "TOOL_SUCCESS",
        "{:?}",
        records[0]
    );
}

/// `Transfer-Encoding: identity` beside a length: the body runs to the upstream's close, the
/// length goes (RFC 9112 §6.3), and the client gets all of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_beside_a_length_reads_to_the_close() {
    let body = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: identity\r\ncontent-length: 3\r\nconnection: close\r\n\r\n{body}"
    );
    // The upstream closes after answering: its connection is read to the end.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut buf = Vec::new();
        let _ = next_head(&mut s, &mut buf).await;
        s.write_all(answer.as_bytes()).await.unwrap();
    });
    let (p, records, w) = proxy(addr).await;
    let req = post(CALL).replace(
        "host: 127.0.0.1\r\n",
        "host: 127.0.0.1\r\nconnection: close\r\n",
    );
    let got = responses(&exchange(p.local_addr(), req.as_bytes()).await);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body, body.as_bytes());
    finish(p, records, w).await;
}

/// CL.TE: a request with both is answered 400 and its connection closed; nothing reaches the
/// upstream (before: served, and the bytes after the chunked end went upstream as a second
/// request); the record says refused and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_with_both_lengths_is_refused_and_closed() {
    let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}".to_vec();
    let up = upstream(vec![ok], Pace::AfterBody).await;
    let (p, records, w) = proxy(up.addr).await;
    let smuggled = "GET /smuggled HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n";
    let body = format!("0\r\n\r\n{smuggled}");
    let req = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: {}\r\ntransfer-encoding: chunked\r\n\r\n{body}",
        body.len()
    );
    let got = responses(&exchange(p.local_addr(), req.as_bytes()).await);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].status, 400);
    assert_eq!(got[0].header("connection"), Some("close"));
    let records = finish(p, records, w).await;
    assert!(up.seen.lock().unwrap().is_empty(), "{:?}", up.seen);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome.as_str(), "REFUSED");
    assert_eq!(records[0].http_statuses, vec![400]);
    assert_eq!(records[0].warnings[0].code, "request_framing");
    assert!(records[0].warnings[0]
        .detail
        .contains("both Transfer-Encoding and Content-Length"));
}

/// An upstream that answers before the body (401) and a chunked body that breaks after it:
/// the connection ends, and the bytes after the bad chunk size never reach the upstream as a
/// request (before: the connection stayed open and they did).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_body_after_an_early_answer_ends_the_connection() {
    let no = b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 10\r\n\r\nno access.".to_vec();
    let up = upstream(vec![no], Pace::Early).await;
    let (p, records, w) = proxy(up.addr).await;
    let head = "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ntransfer-encoding: chunked\r\n\r\n";
    let mut c = TcpStream::connect(p.local_addr()).await.unwrap();
    c.write_all(head.as_bytes()).await.unwrap();
    c.write_all(b"5\r\nhello\r\n").await.unwrap();
    // The 401's head comes while the body is still open; its body comes 300 ms later.
    let mut wire = vec![0u8; 256];
    let n = tokio::time::timeout(STEP, c.read(&mut wire))
        .await
        .unwrap()
        .unwrap();
    wire.truncate(n);
    assert!(wire.starts_with(b"HTTP/1.1 401"));
    // Meanwhile the body's next chunk size is the byte `Z`, a request right after it.
    let _ = c
        .write_all(b"ZGET /smuggled HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await;
    let closed = tokio::time::timeout(STEP, c.read_to_end(&mut wire)).await;
    assert!(closed.is_ok(), "the proxy closes the connection");
    let got = responses(&wire);
    assert_eq!(got.len(), 1, "no answer to a smuggled request: {got:?}");
    assert_eq!(got[0].status, 401);
    finish(p, records, w).await;
    assert_eq!(*up.seen.lock().unwrap(), ["POST /mcp"]);
}

/// Heads RFC 9112 and nginx refuse: each answered 400/405/501 with the connection closed and a
/// record, none forwarded (before: each was forwarded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heads_an_intermediary_must_not_forward_are_refused() {
    let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}".to_vec();
    let up = upstream(vec![ok], Pace::AfterBody).await;
    let (p, records, w) = proxy(up.addr).await;
    let cases = [
        (
            "POST /mcp HTTP/1.1\r\ncontent-length: 2\r\n\r\n{}",
            400,
            "request_host",
        ),
        (
            "POST /mcp HTTP/1.1\r\nhost: a\r\nhost: b\r\ncontent-length: 2\r\n\r\n{}",
            400,
            "request_host",
        ),
        (
            "POST /mcp HTTP/1.1\r\nhost: a\r\ncontent-length: 2\r\ncontent-length: 2\r\n\r\n{}",
            400,
            "request_framing",
        ),
        (
            "POST /mcp HTTP/1.1\r\nhost: a\r\ncontent-length: 2, 2\r\n\r\n{}",
            400,
            "request_framing",
        ),
        (
            "POST /mcp HTTP/1.1\r\nhost: a\r\ntransfer-encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            501,
            "request_framing",
        ),
        (
            "POST /mcp HTTP/1.1\r\nhost: a\r\ntransfer-encoding: xchunked\r\n\r\n0\r\n\r\n",
            400,
            "request_framing",
        ),
        (
            "post /mcp HTTP/1.1\r\nhost: a\r\ncontent-length: 2\r\n\r\n{}",
            400,
            "request_method",
        ),
        (
            "CONNECT 127.0.0.1:1 HTTP/1.1\r\nhost: a\r\n\r\n",
            405,
            "request_method",
        ),
        (
            "OPTIONS * HTTP/1.1\r\nhost: a\r\n\r\n",
            400,
            "request_target",
        ),
    ];
    for (req, status, _) in cases {
        let got = responses(&exchange(p.local_addr(), req.as_bytes()).await);
        assert_eq!(got.len(), 1, "{req:?}: {got:?}");
        assert_eq!(got[0].status, status, "{req:?}");
        assert_eq!(got[0].header("connection"), Some("close"), "{req:?}");
    }
    let records = finish(p, records, w).await;
    assert!(up.seen.lock().unwrap().is_empty(), "{:?}", up.seen);
    let codes: Vec<_> = records
        .iter()
        .map(|r| r.warnings[0].code.as_str())
        .collect();
    let expected: Vec<_> = cases.iter().map(|c| c.2).collect();
    assert_eq!(codes, expected);
}

/// A `GET` with a chunked body: forwarded (as nginx does), so the record's `requestBytes` counts
/// bytes the upstream got (before: read, counted, and not sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_body_is_forwarded_and_counted() {
    let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}".to_vec();
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let got_body = Arc::new(Mutex::new(None));
    let slot = got_body.clone();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut buf = Vec::new();
        let (_, _, chunked, n) = next_head(&mut s, &mut buf).await.unwrap();
        buf.drain(..n);
        assert!(chunked, "the body goes on chunked");
        *slot.lock().unwrap() = read_chunked(&mut s, &mut buf).await;
        s.write_all(&ok).await.unwrap();
    });
    let (p, records, w) = proxy(addr).await;
    let req = "GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    let got = responses(&exchange(p.local_addr(), req.as_bytes()).await);
    assert_eq!(got[0].status, 200);
    let records = finish(p, records, w).await;
    assert_eq!(got_body.lock().unwrap().as_deref(), Some(&b"hello"[..]));
    assert_eq!(records[0].request_bytes, 5);
}

/// A response head of more than 100 lines: the client gets a 502 naming the limit, the record
/// says `LIMIT_EXCEEDED` with the limit (before: the connection dropped, recorded as the
/// upstream closing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_head_over_the_line_limit_is_a_named_502() {
    let many: String = (0..150).map(|i| format!("x-{i}: {i}\r\n")).collect();
    let answer = format!("HTTP/1.1 200 OK\r\n{many}content-length: 2\r\n\r\n{{}}");
    let up = upstream(vec![answer.into_bytes()], Pace::AfterBody).await;
    let (p, records, w) = proxy(up.addr).await;
    let req = post(CALL).replace(
        "host: 127.0.0.1\r\n",
        "host: 127.0.0.1\r\nconnection: close\r\n",
    );
    let got = responses(&exchange(p.local_addr(), req.as_bytes()).await);
    assert_eq!(got[0].status, 502);
    assert!(String::from_utf8_lossy(&got[0].body).contains("more than 100 header lines"));
    let records = finish(p, records, w).await;
    let v = records[0].verdict.as_ref().expect("a verdict");
    assert_eq!(records[0].outcome.as_str(), "LIMIT_EXCEEDED");
    assert_eq!(
        v.limit.as_ref().map(|l| l.name.as_str()),
        Some("maxResponseHeaderLines")
    );
}

/// A client's `Forwarded` does not reach the upstream, where it would override the
/// `X-Forwarded-Host` the proxy sets (before: it passed, and the kitchen advertised the
/// attacker's host).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_forwarded_header_is_removed() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let head = Arc::new(Mutex::new(String::new()));
    let slot = head.clone();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut buf = Vec::new();
        let (_, _, _, n) = next_head(&mut s, &mut buf).await.unwrap();
        *slot.lock().unwrap() = String::from_utf8_lossy(&buf[..n]).to_lowercase();
        s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            .await
            .unwrap();
    });
    let (p, records, w) = proxy(addr).await;
    let req = "GET /mcp HTTP/1.1\r\nhost: 127.0.0.1:9\r\nforwarded: host=attacker.example;proto=https\r\nconnection: close\r\n\r\n";
    let got = responses(&exchange(p.local_addr(), req.as_bytes()).await);
    assert_eq!(got[0].status, 200);
    finish(p, records, w).await;
    let head = head.lock().unwrap().clone();
    assert!(!head.contains("attacker"), "{head}");
    assert!(!head.contains("\nforwarded:"), "{head}");
    assert!(head.contains("x-forwarded-host: 127.0.0.1:9\r\n"), "{head}");
}

/// A refused request behind a large answer, more bytes after it: the proxy closes lingering
/// (its side shut down, the client's bytes read and dropped until the client closes), so the
/// client reads the whole answer and the refusal. Closed at once, the socket with unread bytes
/// was reset, and the reset threw away the part of the answer the client had not read yet
/// (found by the differential harness: bodies cut at 8-64 KB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_after_a_large_answer_does_not_cut_the_answer() {
    let body = "x".repeat(200_000);
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let up = upstream(vec![answer.into_bytes()], Pace::AfterBody).await;
    let (p, records, w) = proxy(up.addr).await;
    let mut c = TcpStream::connect(p.local_addr()).await.unwrap();
    let mut wire = b"GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n".to_vec();
    wire.extend_from_slice(b"post /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
    wire.extend(std::iter::repeat_n(b'z', 200_000));
    let (mut rd, mut wr) = c.split();
    let send = async {
        let _ = wr.write_all(&wire).await;
    };
    let read = async {
        // The client reads late: the answer waits in its socket when the proxy closes.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut out = Vec::new();
        let _ = tokio::time::timeout(STEP, rd.read_to_end(&mut out)).await;
        out
    };
    let (_, out) = tokio::join!(send, read);
    let got = responses(&out);
    assert_eq!(got.len(), 2, "the answer and the refusal");
    assert_eq!(got[0].body.len(), body.len(), "the whole answer");
    assert_eq!(got[1].status, 400);
    finish(p, records, w).await;
}
