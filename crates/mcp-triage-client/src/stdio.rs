//! The stdio transport: a spawned server speaking newline-delimited JSON-RPC.
//!
//! A reader task splits stdout into lines (each bounded by `maxBodyBytes`) and hands them over a
//! bounded channel, so a flooding server is back-pressured rather than buffered without end. A
//! second task keeps the last lines of stderr for the record. A process that exits or closes
//! stdout while a call waits ends that call as `CONNECTION_ERROR`.

use std::collections::{BTreeMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// What the reader task saw on stdout.
#[derive(Debug)]
pub(crate) enum Line {
    /// A complete line (without its newline).
    Message(Vec<u8>),
    /// A line longer than the limit; it was skipped.
    TooLong(u64),
    /// stdout closed (the process exited or closed it) or could not be read.
    Closed,
}

/// A running stdio server.
pub(crate) struct StdioConn {
    pub stdin: ChildStdin,
    pub lines: mpsc::Receiver<Line>,
    pub stderr: Arc<Mutex<VecDeque<String>>>,
    pub child: Child,
    pub closed: Option<String>,
}

impl StdioConn {
    /// Spawns `command args` with `env` added.
    pub fn spawn(
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        max_line: u64,
        keep_stderr: usize,
    ) -> std::io::Result<StdioConn> {
        let mut child = Command::new(command)
            .args(args)
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take().expect("stdin piped");
        let stdout = child.stdout.take().expect("stdout piped");
        let stderr_pipe = child.stderr.take().expect("stderr piped");
        let (tx, rx) = mpsc::channel(64);
        tokio::spawn(read_lines(stdout, tx, max_line));
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let keep = stderr.clone();
        tokio::spawn(async move {
            let mut r = BufReader::new(stderr_pipe).take(u64::MAX);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match (&mut r).take(64 * 1024).read_until(b'\n', &mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line =
                            mcp_triage_core::sanitize_line(&String::from_utf8_lossy(&buf), 300);
                        if line.is_empty() {
                            continue;
                        }
                        let mut q = keep.lock().expect("stderr lock");
                        if q.len() >= keep_stderr.max(1) {
                            q.pop_front();
                        }
                        q.push_back(line);
                    }
                }
            }
        });
        Ok(StdioConn {
            stdin,
            lines: rx,
            stderr,
            child,
            closed: None,
        })
    }

    /// Writes one message and a newline.
    pub async fn send(&mut self, msg: &serde_json::Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.stdin.write_all(&line).await?;
        self.stdin.flush().await
    }

    /// The last stderr lines.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr
            .lock()
            .expect("stderr lock")
            .iter()
            .cloned()
            .collect()
    }

    /// Why the server is gone: exit status when known.
    pub fn exit_text(&mut self) -> String {
        match self.child.try_wait() {
            Ok(Some(status)) => format!("the server process exited ({status})"),
            _ => "the server closed stdout".to_string(),
        }
    }
}

async fn read_lines(stdout: tokio::process::ChildStdout, tx: mpsc::Sender<Line>, max: u64) {
    let mut r = BufReader::new(stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let mut limited = (&mut r).take(max.saturating_add(1));
        match limited.read_until(b'\n', &mut buf).await {
            Ok(0) => {
                let _ = tx.send(Line::Closed).await;
                return;
            }
            Err(_) => {
                let _ = tx.send(Line::Closed).await;
                return;
            }
            Ok(n) => {
                if buf.last() != Some(&b'\n') && n as u64 > max {
                    // Skip the rest of the over-long line.
                    let mut skipped = n as u64;
                    loop {
                        buf.clear();
                        match (&mut r).take(64 * 1024).read_until(b'\n', &mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(m) => {
                                skipped += m as u64;
                                if buf.last() == Some(&b'\n') {
                                    break;
                                }
                            }
                        }
                    }
                    if tx.send(Line::TooLong(skipped)).await.is_err() {
                        return;
                    }
                    continue;
                }
                while matches!(buf.last(), Some(b'\n' | b'\r')) {
                    buf.pop();
                }
                if buf.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                if tx
                    .send(Line::Message(std::mem::take(&mut buf)))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}
