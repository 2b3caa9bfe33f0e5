//! A large response to a client that reads slowly: the proxy holds at most its cork's worth of
//! the client's bytes, waits for the client's socket like any forwarder, and delivers every byte
//! in order. Raw TCP on both sides (127.0.0.1), so nothing but the proxy buffers or reorders.

use std::time::Duration;

use mcp_triage_proxy::http::ProxyOptions;
use mcp_triage_proxy::{LogWriter, MemoryConsumer};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TOTAL: usize = 24 << 20;
const PIECE: usize = 48 << 10;

/// Byte `i` of the body: a pattern that shows any loss or reordering.
fn body_piece(offset: usize, len: usize) -> Vec<u8> {
    (offset..offset + len)
        .map(|i| (i % 251) as u8 ^ (i / 251 % 256) as u8)
        .collect()
}

/// An upstream that answers one request with TOTAL bytes of `text/plain`, written in pieces.
async fn upstream() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut b = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut b).await.unwrap();
            assert!(n > 0, "the proxy closed before sending a request");
            head.extend_from_slice(&b[..n]);
        }
        let h = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {TOTAL}\r\n\r\n"
        );
        s.write_all(h.as_bytes()).await.unwrap();
        let mut off = 0;
        while off < TOTAL {
            let n = PIECE.min(TOTAL - off);
            s.write_all(&body_piece(off, n)).await.unwrap();
            off += n;
        }
        let _ = s.flush().await;
        // Keep the connection open until the proxy closes it.
        let _ = s.read(&mut b).await;
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_gets_every_byte_of_a_large_response() {
    let up = upstream().await;
    let mut o = ProxyOptions::new(&format!("http://{up}")).unwrap();
    o.drain_timeout = Duration::from_secs(2);
    let records = MemoryConsumer::default();
    let (sink, writer) = LogWriter::start(None, vec![Box::new(records.clone())]);
    let proxy = mcp_triage_proxy::http::start("127.0.0.1:0".parse().unwrap(), o, sink)
        .await
        .unwrap();

    let mut c = TcpStream::connect(proxy.local_addr()).await.unwrap();
    c.write_all(b"GET /big HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let read_all = async {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 16 << 10];
        let mut reads = 0u32;
        // Read the head, then the body in small reads with pauses: the client is the bottleneck.
        loop {
            let n = c.read(&mut buf).await.unwrap();
            assert!(n > 0, "the proxy closed the connection early");
            got.extend_from_slice(&buf[..n]);
            if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                let body_start = end + 4;
                let head = String::from_utf8_lossy(&got[..body_start]).to_string();
                assert!(head.starts_with("HTTP/1.1 200"), "{head}");
                let mut body = got.split_off(body_start);
                while body.len() < TOTAL {
                    let n = c.read(&mut buf).await.unwrap();
                    assert!(n > 0, "the proxy closed after {} bytes", body.len());
                    body.extend_from_slice(&buf[..n]);
                    reads += 1;
                    if reads.is_multiple_of(64) {
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                }
                return body;
            }
        }
    };
    let body = tokio::time::timeout(Duration::from_secs(60), read_all)
        .await
        .expect("the whole response within 60 s");
    assert_eq!(body.len(), TOTAL);
    assert_eq!(
        Sha256::digest(&body),
        Sha256::digest(body_piece(0, TOTAL)),
        "bytes changed or reordered"
    );
    drop(c);
    proxy.shutdown().await;
    tokio::task::spawn_blocking(move || writer.drain())
        .await
        .unwrap();
    let recs = records.0.lock().unwrap().clone();
    assert_eq!(recs.len(), 1, "{recs:#?}");
    assert_eq!(recs[0].response_bytes, TOTAL as u64);
    assert_eq!(recs[0].outcome, "FORWARDED");
}
