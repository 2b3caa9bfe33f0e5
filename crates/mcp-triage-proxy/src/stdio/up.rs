//! Client → server: the host's input is relayed chunk by chunk as it arrives; each line is kept
//! up to `maxRequestBytes` to read its JSON-RPC message(s), a longer one is forwarded whole and
//! recorded as not classified (as the HTTP proxy does with a request body), so a huge request
//! line costs no more memory than the limit.

use std::time::Instant;

use mcp_triage_core::{Outcome, Verdict};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{trim_eol, Pending, CHUNK_BYTES};
use crate::capture::Capture;
use crate::observe::{parse_messages, Message, Observer, Origin};
use crate::record::RecordOutcome;
use mcp_triage_wire::capture::BodyEnd;

/// One request line as far as it is kept.
struct Line {
    kept: Vec<u8>,
    /// Bytes of the line in all (`kept` stops at the limit).
    bytes: u64,
    /// When its first byte arrived (a call's duration starts there).
    started: Option<Instant>,
}

/// A line's records before its last byte is written: its calls are already pending (a fast
/// server's answer must find them), its other messages wait for the outcome of the write.
struct Prepared {
    calls: Vec<String>,
    messages: Vec<crate::record::Record>,
}

fn empty_line() -> Line {
    Line {
        kept: Vec::new(),
        bytes: 0,
        started: None,
    }
}

/// Relays the host's stdin to the server's until either closes, recording each line's messages.
pub(super) async fn client_to_server<CI, SI>(
    mut client_in: CI,
    mut server_in: SI,
    observer: &Observer,
    origin: &Origin,
    pending: &Pending,
    capture: Option<&Capture>,
) where
    CI: AsyncRead + Unpin,
    SI: AsyncWrite + Unpin,
{
    let max = observer.options().max_request_bytes as usize;
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut line = empty_line();
    let mut sent = true;
    let mut ended = Vec::new();
    while sent {
        let n = match client_in.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        let mut rest = chunk;
        while !rest.is_empty() {
            let cut = rest.iter().position(|&b| b == b'\n').map(|i| i + 1);
            let (piece, after) = rest.split_at(cut.unwrap_or(rest.len()));
            line.started.get_or_insert_with(Instant::now);
            line.bytes += piece.len() as u64;
            let room = (max + 1).saturating_sub(line.kept.len());
            line.kept.extend_from_slice(&piece[..piece.len().min(room)]);
            if cut.is_some() {
                let done = std::mem::replace(&mut line, empty_line());
                ended.push(prepare(done, max, observer, origin, pending, capture).await);
            }
            rest = after;
        }
        sent = server_in.write_all(chunk).await.is_ok() && server_in.flush().await.is_ok();
        for p in ended.drain(..) {
            settle(p, sent, observer, pending, capture).await;
        }
    }
    if line.bytes > 0 {
        // A last line without its newline (already written, or not when `sent` is false).
        let p = prepare(line, max, observer, origin, pending, capture).await;
        settle(p, sent, observer, pending, capture).await;
    }
    // EOF from the host: the server sees EOF on its stdin (stdio shutdown).
    let _ = server_in.shutdown().await;
}

/// The records of one request line: its calls become pending, other messages are returned.
async fn prepare(
    line: Line,
    max: usize,
    observer: &Observer,
    origin: &Origin,
    pending: &Pending,
    capture: Option<&Capture>,
) -> Prepared {
    let mut p = Prepared {
        calls: Vec::new(),
        messages: Vec::new(),
    };
    let started = line.started.unwrap_or_else(Instant::now);
    if line.bytes > max as u64 {
        let mut r = observer.new_record(crate::record::RecordKind::Http);
        r.classified = false;
        r.outcome = RecordOutcome::Forwarded;
        r.request_bytes = line.bytes;
        p.messages.push(r);
        return p;
    }
    let body = trim_eol(&line.kept);
    let Some((msgs, _batch)) = parse_messages(body) else {
        return p;
    };
    for m in msgs {
        match &m {
            Message::Request { id, method, params } => {
                let mut call = observer.start_call(id, method, params, origin);
                call.started = started;
                call.record.request_bytes = line.bytes;
                let x = capture.map(|c| {
                    let mut x = c.begin_stdio(origin.session_id.as_deref());
                    x.request_body(body, false);
                    x.protocol_version(call.record.protocol_version.clone());
                    x
                });
                pending.lock().await.insert(id.to_string(), (call, x));
                p.calls.push(id.to_string());
            }
            other => {
                let mut r = observer.message_record(other, origin);
                r.request_bytes = line.bytes;
                p.messages.push(r);
            }
        }
    }
    p
}

/// After the write: messages are recorded as sent, or (the server's stdin is closed) as
/// connection errors, and the line's calls end at once.
async fn settle(
    p: Prepared,
    sent: bool,
    observer: &Observer,
    pending: &Pending,
    capture: Option<&Capture>,
) {
    for mut r in p.messages {
        if r.outcome != RecordOutcome::Forwarded {
            r.outcome = if sent {
                RecordOutcome::Sent
            } else {
                Outcome::ConnectionError.into()
            };
        }
        observer.emit(r);
    }
    if sent {
        return;
    }
    for key in p.calls {
        let Some((call, x)) = pending.lock().await.remove(&key) else {
            continue;
        };
        let v = Verdict::connection_error("the server's stdin is closed");
        if let (Some(x), Some(to)) = (x, capture) {
            let name = crate::record::outcome_and_layer(Some(call.method()), v.outcome).0;
            x.finish(to, BodyEnd::NoResponse, 502, name.as_str());
        }
        observer.finish_call(call, v, false, None, None);
    }
}
