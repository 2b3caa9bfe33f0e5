//! The stdio observer: `mcp-triage wrap -- CMD ARGS…`.
//!
//! The host launches the wrapper instead of the server. The wrapper starts the server with piped
//! stdin and stdout and relays both directions line by line, unchanged (every byte of a line,
//! including its `\n`, is written before the line is looked at); the server's stderr is the
//! wrapper's stderr. Records go only to the record sink, never to stdout, which belongs to the
//! protocol. SIGINT, SIGTERM and SIGHUP are forwarded to the server (it runs in its own process
//! group, so a terminal's Ctrl-C reaches it once, through the wrapper), and the wrapper exits
//! with the server's exit code (128 + signal when a signal ended it).

use std::collections::HashMap;
use std::io;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Instant;

use mcp_triage_core::{classify, CallContext, ProtocolVersion, RequestId, ResponseHead, Verdict};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tokio::sync::Mutex;

use crate::capture::{Capture, CaptureEnd, ExchangeCapture};
use crate::observe::{parse_messages, Call, Message, ObserveOptions, Observer, Origin};
use crate::RecordSink;

/// What to run.
#[derive(Debug, Clone)]
pub struct WrapOptions {
    /// The server command.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Record options.
    pub observe: ObserveOptions,
    /// `--capture`: each request and its answer line also go to this capture file.
    pub capture: Option<Arc<Capture>>,
}

/// Open calls by JSON-RPC id (as JSON text), with their captures (`--capture`).
type Pending = Arc<Mutex<HashMap<String, (Call, Option<Box<ExchangeCapture>>)>>>;

/// Runs the server under the wrapper on the process's own stdin/stdout; returns its exit code.
pub async fn run(options: WrapOptions, sink: RecordSink) -> io::Result<i32> {
    let mut cmd = Command::new(&options.command);
    cmd.args(&options.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(false);
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn().map_err(|e| {
        io::Error::new(e.kind(), format!("cannot start {:?}: {e}", options.command))
    })?;
    let pid = child.id();
    let child_in = child.stdin.take().expect("stdin is piped");
    let child_out = child.stdout.take().expect("stdout is piped");
    let observer = Arc::new(Observer::new(options.observe.clone(), sink, "stdio"));
    let origin = Origin {
        // One stdio connection is one session: client info from initialize applies to all of it.
        session_id: Some(format!("stdio-{}", pid.unwrap_or(0))),
        peer: options.command.clone(),
        ..Origin::default()
    };
    let relay = relay_capturing(
        tokio::io::stdin(),
        child_in,
        child_out,
        tokio::io::stdout(),
        observer,
        origin,
        options.capture.clone(),
    );
    tokio::pin!(relay);
    let forward = forward_signals(pid);
    tokio::pin!(forward);
    let mut relay_done = false;
    let status = loop {
        tokio::select! {
            s = child.wait() => break s?,
            _ = &mut relay, if !relay_done => relay_done = true,
            _ = &mut forward => {}
        }
    };
    if !relay_done {
        // The server exited: what it wrote is still relayed and its open calls are recorded
        // (the relay ends at the EOF of the server's stdout).
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), relay).await;
    }
    Ok(exit_code(status))
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return 128 + sig;
        }
    }
    status.code().unwrap_or(1)
}

#[cfg(unix)]
async fn forward_signals(pid: Option<u32>) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    loop {
        let sig = tokio::select! {
            _ = int.recv() => libc::SIGINT,
            _ = term.recv() => libc::SIGTERM,
            _ = hup.recv() => libc::SIGHUP,
        };
        if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: kill(2) with a pid we started and a valid signal number has no memory effects.
            unsafe {
                libc::kill(pid, sig);
            }
        }
    }
}

#[cfg(not(unix))]
async fn forward_signals(_pid: Option<u32>) {
    std::future::pending().await
}

/// Relays both directions until both ends closed, observing every line.
pub async fn relay<CI, SI, SO, CO>(
    client_in: CI,
    server_in: SI,
    server_out: SO,
    client_out: CO,
    observer: Arc<Observer>,
    origin: Origin,
) where
    CI: AsyncRead + Unpin,
    SI: AsyncWrite + Unpin,
    SO: AsyncRead + Unpin,
    CO: AsyncWrite + Unpin,
{
    relay_capturing(
        client_in, server_in, server_out, client_out, observer, origin, None,
    )
    .await
}

/// [`relay`], also writing each request and its answer line to `capture` when given.
pub async fn relay_capturing<CI, SI, SO, CO>(
    client_in: CI,
    server_in: SI,
    server_out: SO,
    client_out: CO,
    observer: Arc<Observer>,
    origin: Origin,
    capture: Option<Arc<Capture>>,
) where
    CI: AsyncRead + Unpin,
    SI: AsyncWrite + Unpin,
    SO: AsyncRead + Unpin,
    CO: AsyncWrite + Unpin,
{
    let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
    let capture = capture.as_deref();
    let up = client_to_server(client_in, server_in, &observer, &origin, &pending, capture);
    let down = server_to_client(
        server_out, client_out, &observer, &origin, &pending, capture,
    );
    tokio::pin!(up);
    tokio::pin!(down);
    tokio::select! {
        // The server closed its stdout (it is exiting): nothing more can be answered, so stop
        // relaying the host's input too.
        _ = &mut down => {}
        // The host closed our stdin: the server got EOF; relay what it still says.
        _ = &mut up => down.await,
    }
    // Whatever is still open was never answered.
    let open: Vec<_> = pending.lock().await.drain().map(|(_, c)| c).collect();
    for (c, x) in open {
        let v = Verdict::connection_error("the server closed its stdout before answering");
        if let (Some(mut x), Some(to)) = (x, capture) {
            x.response_head(200, json_head());
            let name = crate::record::outcome_and_layer(Some(c.method()), v.outcome).0;
            x.finish(to, CaptureEnd::UpstreamClosed, 200, &name);
        }
        observer.finish_call(c, v, true, None, None);
    }
}

/// The head a stdio answer gets in a capture: a line of JSON.
fn json_head() -> std::collections::BTreeMap<String, String> {
    [("content-type".to_string(), "application/json".to_string())].into()
}

async fn client_to_server<CI, SI>(
    client_in: CI,
    mut server_in: SI,
    observer: &Observer,
    origin: &Origin,
    pending: &Pending,
    capture: Option<&Capture>,
) where
    CI: AsyncRead + Unpin,
    SI: AsyncWrite + Unpin,
{
    let mut reader = BufReader::with_capacity(64 << 10, client_in);
    let mut line = Vec::new();
    let max = observer.options().max_request_bytes as usize;
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let sent = server_in.write_all(&line).await.is_ok() && server_in.flush().await.is_ok();
        let started = Instant::now();
        if line.len() > max {
            let mut r = observer.new_record(crate::record::RecordKind::Http);
            r.classified = false;
            r.outcome = "FORWARDED".into();
            r.request_bytes = line.len() as u64;
            observer.emit(r);
        } else if let Some((msgs, _batch)) = parse_messages(trim_eol(&line)) {
            for m in msgs {
                match &m {
                    Message::Request { id, method, params } => {
                        let mut call = observer.start_call(id, method, params, origin);
                        call.started = started;
                        call.record.request_bytes = line.len() as u64;
                        let x = capture.map(|c| {
                            let mut x = c.begin_stdio(origin.session_id.as_deref());
                            x.request_body(trim_eol(&line), false);
                            x.protocol_version(call.record.protocol_version.clone());
                            x
                        });
                        if sent {
                            pending.lock().await.insert(id.to_string(), (call, x));
                        } else {
                            let v = Verdict::connection_error("the server's stdin is closed");
                            if let (Some(x), Some(to)) = (x, capture) {
                                let name =
                                    crate::record::outcome_and_layer(Some(method), v.outcome).0;
                                x.finish(to, CaptureEnd::NoResponse, 502, &name);
                            }
                            observer.finish_call(call, v, false, None, None);
                        }
                    }
                    other => {
                        let mut r = observer.message_record(other, origin);
                        r.request_bytes = line.len() as u64;
                        r.outcome = if sent { "SENT" } else { "CONNECTION_ERROR" }.into();
                        observer.emit(r);
                    }
                }
            }
        }
        if !sent {
            break;
        }
    }
    // EOF from the host: the server sees EOF on its stdin (stdio shutdown).
    let _ = server_in.shutdown().await;
}

async fn server_to_client<SO, CO>(
    server_out: SO,
    mut client_out: CO,
    observer: &Observer,
    origin: &Origin,
    pending: &Pending,
    capture: Option<&Capture>,
) where
    SO: AsyncRead + Unpin,
    CO: AsyncWrite + Unpin,
{
    let mut reader = BufReader::with_capacity(64 << 10, server_out);
    let mut line = Vec::new();
    let limits = observer.options().limits;
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let _ = client_out.write_all(&line).await;
        let _ = client_out.flush().await;
        let body = trim_eol(&line);
        // Only a line that can answer something is parsed; `id` of a message is needed first.
        let Ok(v) = serde_json::from_slice::<Value>(body) else {
            continue;
        };
        let id = v.get("id").cloned();
        let method = v.get("method").and_then(Value::as_str).map(str::to_string);
        match (id, method) {
            (Some(id), Some(method)) => {
                observer.server_request(id, method, origin, "");
            }
            (Some(id), None) => {
                let Some((mut call, x)) = pending.lock().await.remove(&id.to_string()) else {
                    continue;
                };
                let rid = serde_json::from_value::<RequestId>(id).unwrap_or(RequestId::Number(0));
                let mut ctx = CallContext::new(rid)
                    .with_limits(limits)
                    .with_now(std::time::SystemTime::now());
                if let Some(pv) = call
                    .record
                    .protocol_version
                    .as_deref()
                    .and_then(ProtocolVersion::parse)
                {
                    ctx = ctx.with_protocol_version(pv);
                }
                let head = ResponseHead::new(200).content_type("application/json");
                let verdict = classify(&head, body, &ctx);
                call.record.response_bytes = line.len() as u64;
                let tools = (call.method() == "tools/list")
                    .then(|| {
                        v.pointer("/result/tools")
                            .and_then(Value::as_array)
                            .cloned()
                    })
                    .flatten();
                let session = origin.session_id.clone();
                let is_init = call.method() == "initialize";
                let init_version = v
                    .pointer("/result/protocolVersion")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                if is_init {
                    call.record.protocol_version = init_version;
                }
                if let (Some(mut x), Some(to)) = (x, capture) {
                    x.response_head(200, json_head());
                    x.chunk(body);
                    let name =
                        crate::record::outcome_and_layer(Some(call.method()), verdict.outcome).0;
                    x.finish(to, CaptureEnd::Complete, 200, &name);
                }
                observer.finish_call(
                    call,
                    verdict,
                    true,
                    session.as_deref().filter(|_| is_init),
                    tools.as_deref(),
                );
            }
            _ => {}
        }
    }
    let _ = client_out.flush().await;
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LogWriter, MemoryConsumer};

    /// A scripted server on a duplex pipe: answers each request line with a canned line.
    #[tokio::test]
    async fn relays_unchanged_and_records_each_request() {
        let mem = MemoryConsumer::default();
        let (sink, writer) = LogWriter::start(None, vec![Box::new(mem.clone())]);
        let observer = Arc::new(Observer::new(ObserveOptions::default(), sink, "stdio"));
        let (client_in_w, client_in_r) = tokio::io::duplex(1 << 16);
        let (server_in_w, server_in_r) = tokio::io::duplex(1 << 16);
        let (server_out_w, server_out_r) = tokio::io::duplex(1 << 16);
        let (client_out_w, mut client_out_r) = tokio::io::duplex(1 << 16);
        let input = concat!(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"arguments\":{\"a\":1}}}\r\n",
            "not json at all\n",
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}\n",
        );
        let output = concat!(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"serverInfo\":{\"name\":\"s\",\"version\":\"0\"}}}\n",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],\"isError\":true}}\n",
        );
        let server = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut r = server_in_r;
            tokio::io::AsyncReadExt::read_to_end(&mut r, &mut got)
                .await
                .unwrap();
            let mut w = server_out_w;
            w.write_all(output.as_bytes()).await.unwrap();
            drop(w);
            got
        });
        let client = tokio::spawn(async move {
            let mut w = client_in_w;
            w.write_all(input.as_bytes()).await.unwrap();
        });
        relay(
            client_in_r,
            server_in_w,
            server_out_r,
            client_out_w,
            observer.clone(),
            Origin {
                session_id: Some("stdio-test".into()),
                ..Origin::default()
            },
        )
        .await;
        client.await.unwrap();
        assert_eq!(
            server.await.unwrap(),
            input.as_bytes(),
            "server got every byte"
        );
        let mut out = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut client_out_r, &mut out)
            .await
            .unwrap();
        assert_eq!(out, output.as_bytes(), "client got every byte");
        drop(observer);
        writer.drain();
        let recs = mem.0.lock().unwrap();
        assert_eq!(recs.len(), 4, "{recs:#?}");
        let outcome = |id: i64| {
            recs.iter()
                .find(|r| r.id == Some(serde_json::json!(id)))
                .map(|r| r.outcome.clone())
        };
        assert_eq!(outcome(1).as_deref(), Some("RESULT"));
        assert_eq!(outcome(2).as_deref(), Some("TOOL_ERROR"));
        assert_eq!(outcome(3).as_deref(), Some("CONNECTION_ERROR"));
        let call = recs
            .iter()
            .find(|r| r.id == Some(serde_json::json!(2)))
            .unwrap();
        assert_eq!(call.client.as_ref().unwrap().name.as_deref(), Some("t"));
        assert_eq!(call.protocol_version.as_deref(), Some("2025-06-18"));
        assert!(recs.iter().any(
            |r| r.method.as_deref() == Some("notifications/initialized") && r.outcome == "SENT"
        ));
    }
}
