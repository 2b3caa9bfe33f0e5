//! For `bench/proxy-overhead.sh` and `bench/proxy-hostile.sh`: a large response through the proxy.
//!
//! `big_sse serve --listen 127.0.0.1:0 --bytes N` serves, for any request, a `text/event-stream`
//! of `notifications/progress` events totalling about N bytes and then the response to id 1,
//! and prints its URL. With `--json` the response is instead one `application/json` tool result
//! of about N bytes (a text content of `x`s), chunked; with `--json --content-length` it declares
//! its length. `big_sse fetch --url URL` POSTs a tools/call, reads the whole body and prints one
//! JSON line: bytes, seconds, MiB/s.

use std::convert::Infallible;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("serve") => serve(&args).await,
        Some("fetch") => fetch(&args).await,
        _ => {
            eprintln!("usage: big_sse serve --listen ADDR --bytes N | big_sse fetch --url URL");
            std::process::exit(2);
        }
    }
}

async fn serve(args: &[String]) {
    let listen = arg(args, "--listen").unwrap_or_else(|| "127.0.0.1:0".into());
    let total: u64 = arg(args, "--bytes")
        .and_then(|b| b.parse().ok())
        .unwrap_or(1 << 30);
    let listener = tokio::net::TcpListener::bind(&listen).await.expect("bind");
    assert!(
        listener.local_addr().unwrap().ip().is_loopback(),
        "loopback only"
    );
    println!("http://{}/mcp", listener.local_addr().unwrap());
    let body = if args.iter().any(|a| a == "--json") {
        // One tool result whose text is `total` bytes of `x`.
        let first = Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":""#,
        );
        let chunk = Bytes::from(vec![b'x'; 8000]);
        let left = total / chunk.len() as u64;
        let last = Bytes::from_static(br#""}]}}"#);
        let length = first.len() as u64 + left * chunk.len() as u64 + last.len() as u64;
        Generated {
            content_type: "application/json",
            first: Some(first),
            chunk,
            left,
            last: Some(last),
            length: args
                .iter()
                .any(|a| a == "--content-length")
                .then_some(length),
        }
    } else {
        // Progress notifications, then the result.
        let data = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":1,"progress":1,"message":"{}"}}}}"#,
            "x".repeat(8000)
        );
        let chunk = Bytes::from(format!("event: message\ndata: {data}\n\n"));
        Generated {
            content_type: "text/event-stream",
            first: None,
            left: total / chunk.len() as u64,
            chunk,
            last: Some(Bytes::from_static(
                b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n",
            )),
            length: None,
        }
    };
    loop {
        let (stream, _) = listener.accept().await.expect("accept");
        let body = body.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |_req| {
                let body = body.clone();
                async move {
                    Ok::<_, Infallible>(
                        hyper::Response::builder()
                            .header("content-type", body.content_type)
                            .body(body)
                            .unwrap(),
                    )
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

/// `first`, then `left` copies of `chunk`, then `last`, as a body produced on demand (the server
/// holds one chunk, not the response); `length`, when set, is declared as its size.
#[derive(Clone)]
struct Generated {
    content_type: &'static str,
    first: Option<Bytes>,
    chunk: Bytes,
    left: u64,
    last: Option<Bytes>,
    length: Option<u64>,
}

impl http_body::Body for Generated {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(f) = self.first.take() {
            return std::task::Poll::Ready(Some(Ok(Frame::data(f))));
        }
        if self.left > 0 {
            self.left -= 1;
            return std::task::Poll::Ready(Some(Ok(Frame::data(self.chunk.clone()))));
        }
        std::task::Poll::Ready(self.last.take().map(|b| Ok(Frame::data(b))))
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match self.length {
            Some(n) => http_body::SizeHint::with_exact(n),
            None => http_body::SizeHint::default(),
        }
    }
}

async fn fetch(args: &[String]) {
    let url = arg(args, "--url").expect("--url");
    let rest = url.strip_prefix("http://").expect("http:// URL");
    let (addr, path) = rest.split_once('/').unwrap_or((rest, ""));
    assert!(addr.starts_with("127.0.0.1:"), "loopback only");
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let body =
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{}}}"#;
    let req = hyper::Request::post(format!("/{path}"))
        .header("host", addr)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap();
    let t = Instant::now();
    let resp = sender.send_request(req).await.expect("response");
    let mut body = resp.into_body();
    let mut bytes = 0u64;
    while let Some(f) = body.frame().await {
        if let Some(d) = f.expect("body").data_ref() {
            bytes += d.len() as u64;
        }
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "{{\"bytes\":{bytes},\"seconds\":{s:.3},\"mib_per_s\":{:.1}}}",
        bytes as f64 / s / (1u64 << 20) as f64
    );
}
