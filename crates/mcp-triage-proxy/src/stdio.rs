//! The stdio observer: `mcp-triage wrap -- CMD ARGS…`.
//!
//! The host launches the wrapper instead of the server. The wrapper starts the server with piped
//! stdin and stdout and relays both directions unchanged, chunk by chunk as bytes arrive (every
//! byte is written before it is looked at; see `down` and `up` for what is kept of each line);
//! the server's stderr is the wrapper's stderr. Records go only to the record sink, never to
//! stdout, which belongs to the protocol; each record is sent to the sink when its exchange
//! ends. SIGINT, SIGTERM and SIGHUP are forwarded to the server (it runs in its own process
//! group, so a terminal's Ctrl-C reaches it once, through the wrapper), and the wrapper exits
//! with the server's exit code (128 + signal when a signal ended it).
//!
//! Everything the server wrote is relayed, however late the client reads it; what cannot be
//! delivered (the client closed its end) is reported on stderr and makes the exit code
//! non-zero ([`RelayReport`]).

mod down;
mod scan;
mod up;

use std::collections::HashMap;
use std::io;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use mcp_triage_core::Verdict;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::process::Command;
use tokio::sync::{watch, Mutex};

use crate::capture::{Capture, ExchangeCapture};
use crate::observe::{Call, ObserveOptions, Observer, Origin};
use crate::RecordSink;
use mcp_triage_wire::capture::BodyEnd;

pub use down::{IDLE_AFTER_EXIT, WHOLE_LINE_BYTES};

/// Bytes read from either side at a time, and so the most that is relayed before a look.
const CHUNK_BYTES: usize = 64 << 10;

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

/// What the relay could not do.
#[derive(Debug, Default)]
pub struct RelayReport {
    /// Bytes of the server's output that did not reach the client.
    pub undelivered: u64,
    /// Why: writing to the client failed (it closed its end of our stdout).
    pub client_error: Option<io::Error>,
    /// The server exited but its stdout stayed open with nothing to read for
    /// [`IDLE_AFTER_EXIT`] (a process it started holds it): the relay stopped there.
    pub held_open: bool,
}

impl RelayReport {
    /// The sentence for stderr, when something was not delivered or not read.
    pub fn problem(&self) -> Option<String> {
        if let Some(e) = &self.client_error {
            return Some(format!(
                "cannot write to the client ({e}): {} byte(s) of the server's output were not delivered",
                self.undelivered
            ));
        }
        self.held_open.then(|| {
            format!(
                "the server exited but its stdout stayed open with nothing to read for {} s (a process it started holds it?); stopped relaying",
                IDLE_AFTER_EXIT.as_secs()
            )
        })
    }
}

/// What `run` ended with: the server's exit code and what the relay could not do.
#[derive(Debug)]
pub struct WrapExit {
    /// The server's exit code (128 + signal when a signal ended it).
    pub code: i32,
    /// See [`RelayReport`].
    pub relay: RelayReport,
}

/// Runs the server under the wrapper on the process's own stdin/stdout, until the server
/// exited and everything it wrote was relayed.
pub async fn run(options: WrapOptions, sink: RecordSink) -> io::Result<WrapExit> {
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
    let (exited_tx, exited_rx) = watch::channel(false);
    let relay = relay_ends(
        Ends {
            client_in: tokio::io::stdin(),
            server_in: child_in,
            server_out: child_out,
            client_out: tokio::io::stdout(),
        },
        observer,
        origin,
        options.capture.clone(),
        (exited_rx, IDLE_AFTER_EXIT),
    );
    tokio::pin!(relay);
    let forward = forward_signals(pid);
    tokio::pin!(forward);
    let mut status = None;
    let mut report = None;
    // Until the server exited *and* the relay ended (EOF of the server's stdout): what the
    // server wrote before it exited is still relayed, without a time limit on the client.
    while status.is_none() || report.is_none() {
        tokio::select! {
            s = child.wait(), if status.is_none() => {
                status = Some(s?);
                let _ = exited_tx.send(true);
            }
            r = &mut relay, if report.is_none() => report = Some(r),
            _ = &mut forward => {}
        }
    }
    Ok(WrapExit {
        code: exit_code(status.expect("the loop ends with a status")),
        relay: report.unwrap_or_default(),
    })
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

/// The four ends a relay joins: the host's input and output, the server's stdin and stdout.
pub struct Ends<CI, SI, SO, CO> {
    /// What the host writes (our stdin).
    pub client_in: CI,
    /// The server's stdin.
    pub server_in: SI,
    /// The server's stdout.
    pub server_out: SO,
    /// Where the host reads (our stdout).
    pub client_out: CO,
}

/// Relays both directions until both ends closed, observing every line.
pub async fn relay<CI, SI, SO, CO>(
    client_in: CI,
    server_in: SI,
    server_out: SO,
    client_out: CO,
    observer: Arc<Observer>,
    origin: Origin,
) -> RelayReport
where
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
) -> RelayReport
where
    CI: AsyncRead + Unpin,
    SI: AsyncWrite + Unpin,
    SO: AsyncRead + Unpin,
    CO: AsyncWrite + Unpin,
{
    // Nobody says the server exited: no idle limit on its stdout.
    let (_never, exited) = watch::channel(false);
    let ends = Ends {
        client_in,
        server_in,
        server_out,
        client_out,
    };
    relay_ends(ends, observer, origin, capture, (exited, IDLE_AFTER_EXIT)).await
}

/// The relay; `exit` says when the server exited and how long its stdout may then stay idle.
pub async fn relay_ends<CI, SI, SO, CO>(
    ends: Ends<CI, SI, SO, CO>,
    observer: Arc<Observer>,
    origin: Origin,
    capture: Option<Arc<Capture>>,
    exit: (watch::Receiver<bool>, Duration),
) -> RelayReport
where
    CI: AsyncRead + Unpin,
    SI: AsyncWrite + Unpin,
    SO: AsyncRead + Unpin,
    CO: AsyncWrite + Unpin,
{
    let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
    let capture = capture.as_deref();
    let up = up::client_to_server(
        ends.client_in,
        ends.server_in,
        &observer,
        &origin,
        &pending,
        capture,
    );
    let down = down::server_to_client(
        ends.server_out,
        ends.client_out,
        down::Down {
            observer: &observer,
            origin: &origin,
            pending: &pending,
            capture,
            exited: exit.0,
            idle_after_exit: exit.1,
        },
    );
    tokio::pin!(up);
    tokio::pin!(down);
    let report = tokio::select! {
        // The server closed its stdout (it is exiting): nothing more can be answered, so stop
        // relaying the host's input too.
        r = &mut down => r,
        // The host closed our stdin: the server got EOF; relay what it still says.
        _ = &mut up => down.await,
    };
    // Whatever is still open was never answered.
    let open: Vec<_> = pending.lock().await.drain().map(|(_, c)| c).collect();
    for (c, x) in open {
        let v = Verdict::connection_error("the server closed its stdout before answering");
        if let (Some(mut x), Some(to)) = (x, capture) {
            x.response_head(200, json_head());
            let name = crate::record::outcome_and_layer(Some(c.method()), v.outcome).0;
            x.finish(to, BodyEnd::UpstreamClosed, 200, name.as_str());
        }
        observer.finish_call(c, v, true, None, None);
    }
    // Tasks still open will end unseen: their calls get a TASK_UNFINISHED end now.
    observer.close_open_tasks();
    report
}

/// The head a stdio answer gets in a capture: a line of JSON.
fn json_head() -> std::collections::BTreeMap<String, String> {
    [("content-type".to_string(), "application/json".to_string())].into()
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LogWriter, MemoryConsumer};
    use tokio::io::AsyncWriteExt;

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
                .map(|r| r.outcome.as_str().to_string())
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
