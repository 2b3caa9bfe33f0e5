//! For `bench/proxy-overhead.sh`: a large SSE response through the proxy.
//!
//! `big_sse serve --listen 127.0.0.1:0 --bytes N` serves, for any request, a `text/event-stream`
//! of `notifications/progress` events totalling about N bytes and then the response to id 1,
//! and prints its URL. `big_sse fetch --url URL` POSTs a tools/call, reads the whole body and
//! prints one JSON line: bytes, seconds, MiB/s.

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
    let event = {
        let data = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":1,"progress":1,"message":"{}"}}}}"#,
            "x".repeat(8000)
        );
        Bytes::from(format!("event: message\ndata: {data}\n\n"))
    };
    loop {
        let (stream, _) = listener.accept().await.expect("accept");
        let event = event.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |_req| {
                let event = event.clone();
                async move {
                    let body = Events {
                        left: total / event.len() as u64,
                        event,
                        last: Some(Bytes::from_static(
                            b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n",
                        )),
                    };
                    Ok::<_, Infallible>(
                        hyper::Response::builder()
                            .header("content-type", "text/event-stream")
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

/// `n` copies of `event` then the terminal response, as a body produced on demand (the server
/// holds one event, not the stream).
struct Events {
    left: u64,
    event: Bytes,
    last: Option<Bytes>,
}

impl http_body::Body for Events {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.left > 0 {
            self.left -= 1;
            return std::task::Poll::Ready(Some(Ok(Frame::data(self.event.clone()))));
        }
        std::task::Poll::Ready(self.last.take().map(|b| Ok(Frame::data(b))))
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
