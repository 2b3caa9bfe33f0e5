//! The client side of the proxy's own HTTP/1.1 (it replaced hyper's server): what a client on a
//! raw socket gets for keep-alive and pipelined requests, `Expect: 100-continue`, HTTP/1.0,
//! chunked request bodies, heads it cannot serve, and silence past the header read timeout.
//! The upstream is a small echo server on 127.0.0.1 that answers each request with its body.

use std::net::SocketAddr;
use std::time::Duration;

use mcp_triage_proxy::http::{ProxyHandle, ProxyOptions};
use mcp_triage_proxy::{LogWriter, MemoryConsumer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const STEP: Duration = Duration::from_secs(10);

async fn proxy(
    upstream: SocketAddr,
    f: impl FnOnce(&mut ProxyOptions),
) -> (ProxyHandle, LogWriter) {
    let mut o = ProxyOptions::new(&format!("http://{upstream}")).unwrap();
    o.drain_timeout = Duration::from_secs(1);
    f(&mut o);
    let (sink, writer) = LogWriter::start(None, vec![Box::new(MemoryConsumer::default())]);
    let p = mcp_triage_proxy::http::start("127.0.0.1:0".parse().unwrap(), o, sink)
        .await
        .unwrap();
    (p, writer)
}

/// Reads from `s` into `buf` until `buf` holds a blank line; the head's length.
async fn read_until_head(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<usize> {
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some(i + 4);
        }
        let mut chunk = [0u8; 8192];
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The echo upstream: each request answered `200` with its own body (a `content-length` or a
/// chunked one, decoded), and a header `x-seen-framing` saying which it was.
async fn echo_upstream() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                while let Some(n) = read_until_head(&mut s, &mut buf).await {
                    let head = String::from_utf8_lossy(&buf[..n]).to_lowercase();
                    buf.drain(..n);
                    let (body, framing) = if head.contains("transfer-encoding: chunked") {
                        (read_chunked(&mut s, &mut buf).await, "chunked")
                    } else {
                        let len = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length: "))
                            .map_or(0, |v| v.trim().parse::<usize>().unwrap());
                        while buf.len() < len {
                            let mut chunk = [0u8; 8192];
                            let n = s.read(&mut chunk).await.unwrap();
                            assert!(n > 0, "the body arrives whole");
                            buf.extend_from_slice(&chunk[..n]);
                        }
                        (buf.drain(..len).collect::<Vec<u8>>(), "length")
                    };
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-seen-framing: {framing}\r\ncontent-length: {}\r\n\r\n",
                        body.len()
                    );
                    let mut out = answer.into_bytes();
                    out.extend_from_slice(&body);
                    if s.write_all(&out).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// Reads a chunked body from `s` (after what `buf` holds), decoded.
async fn read_chunked(s: &mut TcpStream, buf: &mut Vec<u8>) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        while !buf.windows(2).any(|w| w == b"\r\n") {
            let mut chunk = [0u8; 8192];
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0);
            buf.extend_from_slice(&chunk[..n]);
        }
        let i = buf.windows(2).position(|w| w == b"\r\n").unwrap();
        let size =
            usize::from_str_radix(std::str::from_utf8(&buf[..i]).unwrap().trim(), 16).unwrap();
        while buf.len() < i + 2 + size + 2 {
            let mut chunk = [0u8; 8192];
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0);
            buf.extend_from_slice(&chunk[..n]);
        }
        body.extend_from_slice(&buf[i + 2..i + 2 + size]);
        buf.drain(..i + 2 + size + 2);
        if size == 0 {
            return body;
        }
    }
}

/// Reads one response (head and a content-length body) from `c`, with what is left over.
async fn read_response(c: &mut TcpStream, buf: &mut Vec<u8>) -> (String, Vec<u8>) {
    let n = tokio::time::timeout(STEP, read_until_head(c, buf))
        .await
        .unwrap()
        .expect("a response head");
    let head = String::from_utf8_lossy(&buf[..n]).into_owned();
    buf.drain(..n);
    let len = head
        .to_lowercase()
        .lines()
        .find_map(|l| {
            l.strip_prefix("content-length: ")
                .map(|v| v.trim().parse::<usize>().unwrap())
        })
        .unwrap_or(0);
    while buf.len() < len {
        let mut chunk = [0u8; 8192];
        let n = c.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the body arrives whole");
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = buf.drain(..len).collect();
    (head, body)
}

fn post(body: &str, extra: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_on_one_connection_are_answered_in_order() {
    let (p, _w) = proxy(echo_upstream().await, |_| {}).await;
    let mut c = TcpStream::connect(p.local_addr()).await.unwrap();
    let (a, b) = (
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    );
    c.write_all((post(a, "") + &post(b, "")).as_bytes())
        .await
        .unwrap();
    let mut buf = Vec::new();
    for want in [a, b] {
        let (head, body) = read_response(&mut c, &mut buf).await;
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(
            head.contains("date: "),
            "a Date is added when missing: {head}"
        );
        assert!(!head.to_lowercase().contains("connection: close"), "{head}");
        assert_eq!(body, want.as_bytes());
    }
    // The same connection serves a third request later.
    let c3 = r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#;
    c.write_all(post(c3, "").as_bytes()).await.unwrap();
    assert_eq!(read_response(&mut c, &mut buf).await.1, c3.as_bytes());
    p.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expect_100_continue_gets_a_continue_before_the_body_is_sent() {
    let (p, _w) = proxy(echo_upstream().await, |_| {}).await;
    let mut c = TcpStream::connect(p.local_addr()).await.unwrap();
    let body = r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#;
    let full = post(body, "expect: 100-continue\r\n");
    let head_len = full.len() - body.len();
    c.write_all(&full.as_bytes()[..head_len]).await.unwrap();
    let mut buf = Vec::new();
    let n = tokio::time::timeout(STEP, read_until_head(&mut c, &mut buf))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&buf[..n], b"HTTP/1.1 100 Continue\r\n\r\n");
    buf.drain(..n);
    c.write_all(body.as_bytes()).await.unwrap();
    let (head, echoed) = read_response(&mut c, &mut buf).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(echoed, body.as_bytes());
    p.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunked_request_body_reaches_the_upstream_whole() {
    let (p, _w) = proxy(echo_upstream().await, |_| {}).await;
    let mut c = TcpStream::connect(p.local_addr()).await.unwrap();
    let req = "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ntransfer-encoding: chunked\r\n\r\n5;x=1\r\n{\"a\":\r\n3\r\n1}\n\r\n0\r\ntrailer: t\r\n\r\n";
    c.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let (head, body) = read_response(&mut c, &mut buf).await;
    assert!(head.contains("x-seen-framing: chunked"), "{head}");
    assert_eq!(body, b"{\"a\":1}\n");
    p.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_1_0_client_gets_an_http_1_0_answer_and_the_connection_closes() {
    let (p, _w) = proxy(echo_upstream().await, |_| {}).await;
    let mut c = TcpStream::connect(p.local_addr()).await.unwrap();
    let body = r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#;
    let req = format!(
        "POST /mcp HTTP/1.0\r\nhost: 127.0.0.1\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    c.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(STEP, c.read_to_end(&mut out))
        .await
        .expect("the proxy closes the connection after the answer")
        .unwrap();
    let out = String::from_utf8_lossy(&out);
    assert!(out.starts_with("HTTP/1.0 200 OK\r\n"), "{out}");
    assert!(out.ends_with(body), "{out}");
    p.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heads_that_cannot_be_served_get_400_or_431_and_a_close() {
    let (p, _w) = proxy(echo_upstream().await, |_| {}).await;
    let long = format!(
        "GET / HTTP/1.1\r\nhost: 127.0.0.1\r\nx-long: {}\r\n\r\n",
        "a".repeat(70_000)
    );
    for (req, status) in [
        ("GET / HTTP/1.1\r\nho st: x\r\n\r\n".to_string(), "400"),
        (
            "POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n"
                .to_string(),
            "400",
        ),
        (
            "POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ntransfer-encoding: gzip\r\n\r\n".to_string(),
            "400",
        ),
        (long, "431"),
    ] {
        let mut c = TcpStream::connect(p.local_addr()).await.unwrap();
        let _ = c.write_all(req.as_bytes()).await;
        let mut out = Vec::new();
        let _ = tokio::time::timeout(STEP, c.read_to_end(&mut out)).await;
        let out = String::from_utf8_lossy(&out);
        assert!(
            out.starts_with(&format!("HTTP/1.1 {status} ")),
            "{req:.60}: {out}"
        );
        assert!(out.contains("connection: close\r\n"), "{out}");
    }
    p.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_client_is_closed_after_the_header_read_timeout() {
    let (p, _w) = proxy(echo_upstream().await, |o| {
        o.header_read_timeout = Duration::from_millis(300)
    })
    .await;
    let started = std::time::Instant::now();
    let mut c = TcpStream::connect(p.local_addr()).await.unwrap();
    c.write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.")
        .await
        .unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(STEP, c.read_to_end(&mut out))
        .await
        .expect("closed")
        .unwrap();
    assert!(
        out.is_empty(),
        "nothing is answered: {:?}",
        String::from_utf8_lossy(&out)
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(5),
        "{took:?}"
    );
    p.shutdown().await;
}
