//! Time to the first SSE event, directly and through a hop: a raw HTTP/1.1 POST of one
//! 2026-07-28 `tools/call` asking for progress, read byte by byte as it arrives. Our client
//! reads a whole answer before it returns, so the time an event arrived is measured here,
//! on the socket.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Bytes of an answer read at most (the rest is not needed to time its first event).
const READ_LIMIT: usize = 1 << 20;

/// How much later than directly the first event may arrive through a hop: half the stream,
/// at least 500 ms. A relay adds milliseconds; a hop that buffers the stream delivers the
/// first event at the stream's end, `total_ms` late. Half splits the two with room for a
/// loaded two-core machine.
pub fn held_back_bound_ms(total_ms: u64) -> u64 {
    (total_ms / 2).max(500)
}

/// What one timed request saw.
#[derive(Clone, Debug)]
pub struct Timed {
    /// The response's status line.
    pub status_line: String,
    /// Milliseconds from sending to the first `data:` line of the body (None: none came).
    pub first_event_ms: Option<u64>,
    /// Milliseconds from sending to the end of the answer (or the read limit).
    pub end_ms: u64,
}

/// The request: a modern `tools/call` of the scenario tool with a progress token, so the
/// kitchen streams progress events before the result.
fn request(host: &str, path: &str) -> Vec<u8> {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": "run_configured_test_scenario", "arguments": {},
            "_meta": {
                "progressToken": "hop-first-event",
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "mcp-triage-judge", "version": env!("CARGO_PKG_VERSION")}
            }
        }
    })
    .to_string();
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n\
         Mcp-Name: run_configured_test_scenario\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// POST to `addr` (`path` with its query) and time the first SSE event, within `limit`.
pub async fn time_first_event(
    addr: SocketAddr,
    path: &str,
    limit: Duration,
) -> Result<Timed, String> {
    let t0 = Instant::now();
    let work = async {
        let mut s = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        s.write_all(&request(&addr.to_string(), path))
            .await
            .map_err(|e| format!("send to {addr}: {e}"))?;
        let mut got = Vec::new();
        let mut first = None;
        let mut buf = [0u8; 4096];
        loop {
            let n = s.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
            if first.is_none() {
                if let Some(head_end) = find(&got, b"\r\n\r\n") {
                    let body = &got[head_end + 4..];
                    if body.starts_with(b"data:") || find(body, b"\ndata:").is_some() {
                        first = Some(t0.elapsed().as_millis() as u64);
                    }
                }
            }
            if got.len() >= READ_LIMIT {
                break;
            }
        }
        let status_line = String::from_utf8_lossy(&got)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        Ok(Timed {
            status_line,
            first_event_ms: first,
            end_ms: t0.elapsed().as_millis() as u64,
        })
    };
    tokio::time::timeout(limit, work)
        .await
        .map_err(|_| format!("no end of the answer within {} s", limit.as_secs_f64()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_half_the_stream_and_at_least_half_a_second() {
        assert_eq!(held_back_bound_ms(2000), 1000);
        assert_eq!(held_back_bound_ms(400), 500);
    }

    #[test]
    fn the_request_is_a_complete_http_message() {
        let r = String::from_utf8(request("127.0.0.1:1", "/mcp?x=1")).unwrap();
        let (head, body) = r.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("POST /mcp?x=1 HTTP/1.1\r\n"));
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(body).unwrap()["params"]["_meta"]
                ["progressToken"],
            "hop-first-event"
        );
    }
}
