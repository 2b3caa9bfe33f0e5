//! The stdio transport: a spawned server speaking newline-delimited JSON-RPC.
//!
//! A reader task splits stdout into lines (each bounded by `maxBodyBytes`) and hands them over a
//! bounded channel, so a flooding server is back-pressured rather than buffered without end. A
//! second task keeps the last lines of stderr for the record. A process that exits or closes
//! stdout while a call waits ends that call as `CONNECTION_ERROR`.
//!
//! Ending the server follows the MCP stdio shutdown ([`StdioConn::shutdown`]): close its stdin,
//! wait, SIGTERM, wait, SIGKILL. An immediate SIGKILL loses whatever the server (or a wrapper
//! such as `mcp-triage wrap` that records each exchange) had not written yet.

use std::collections::{BTreeMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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

/// How long [`StdioConn::shutdown`] waits for the server to exit after closing its stdin, and
/// again after SIGTERM. Why 2 s: a server that exits on EOF does so in milliseconds (a wrapper
/// writing its last records included); one that needs longer is most likely stuck, and a CLI
/// call should not hang on it for more than a few seconds before SIGKILL.
pub const STDIO_EXIT_GRACE: Duration = Duration::from_secs(2);

/// How [`StdioConn::shutdown`] ended the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// It exited after its stdin closed (or had exited already).
    Exited,
    /// It exited after SIGTERM.
    Terminated,
    /// It was killed (SIGKILL) after ignoring both.
    Killed,
}

/// How long [`StdioConn::settled_stderr_tail`] waits for an exited server's stderr to end.
const STDERR_DRAIN: std::time::Duration = std::time::Duration::from_millis(500);

/// A running stdio server.
pub(crate) struct StdioConn {
    /// The server's stdin; `None` once [`StdioConn::shutdown`] closed it.
    pub stdin: Option<ChildStdin>,
    pub lines: mpsc::Receiver<Line>,
    pub stderr: Arc<Mutex<VecDeque<String>>>,
    /// The task reading stderr, until it was seen to end (see [`StdioConn::settled_stderr_tail`]).
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
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
        let stderr_reader = tokio::spawn(async move {
            let mut r = BufReader::new(stderr_pipe).take(u64::MAX);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match (&mut r).take(64 * 1024).read_until(b'\n', &mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = stderr_line(&String::from_utf8_lossy(&buf));
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
            stdin: Some(stdin),
            lines: rx,
            stderr,
            stderr_reader: Some(stderr_reader),
            child,
            closed: None,
        })
    }

    /// Writes one message and a newline.
    pub async fn send(&mut self, msg: &serde_json::Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the server's stdin is closed (the client is shutting it down)",
            ));
        };
        stdin.write_all(&line).await?;
        stdin.flush().await
    }

    /// Ends the server as the MCP stdio transport says: close its stdin, wait up to `grace` for
    /// it to exit, then SIGTERM, wait up to `grace` again, then SIGKILL.
    pub async fn shutdown(&mut self, grace: Duration) -> Shutdown {
        drop(self.stdin.take());
        if matches!(
            tokio::time::timeout(grace, self.child.wait()).await,
            Ok(Ok(_))
        ) {
            return Shutdown::Exited;
        }
        if self.terminate()
            && matches!(
                tokio::time::timeout(grace, self.child.wait()).await,
                Ok(Ok(_))
            )
        {
            return Shutdown::Terminated;
        }
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        Shutdown::Killed
    }

    /// Sends SIGTERM; false where there is no such signal or the process is gone.
    #[cfg(unix)]
    fn terminate(&self) -> bool {
        match self.child.id().and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: kill(2) on the pid of our own child that has not been reaped yet (`id()`
            // is None once it was), with a valid signal number; no memory is touched.
            Some(pid) => unsafe { libc::kill(pid, libc::SIGTERM) == 0 },
            None => false,
        }
    }

    #[cfg(not(unix))]
    fn terminate(&self) -> bool {
        false
    }

    /// The last stderr lines once they are all in: when the server has exited, waits (at most
    /// [`STDERR_DRAIN`]) for the reader to reach the end of stderr, so the lines a server wrote
    /// just before dying (usually why it died) are not lost to a race with the reader task.
    /// A process the server started may hold stderr open: hence the bound.
    pub async fn settled_stderr_tail(&mut self) -> Vec<String> {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            if let Some(reader) = self.stderr_reader.as_mut() {
                if tokio::time::timeout(STDERR_DRAIN, reader).await.is_ok() {
                    self.stderr_reader = None;
                }
            }
        }
        self.stderr_tail()
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

/// The longest indentation kept on a stderr line, in spaces.
const MAX_STDERR_INDENT: usize = 32;

/// One stderr line as shown: sanitised to one line of at most 300 characters like every
/// server text, but with its leading indentation kept (tabs as four spaces, at most
/// [`MAX_STDERR_INDENT`]), because a crashing server's traceback reads by its indentation.
fn stderr_line(raw: &str) -> String {
    let raw = raw.trim_end();
    let rest = raw.trim_start_matches([' ', '\t']);
    let body = mcp_triage_core::sanitize_line(rest, 300);
    if body.is_empty() {
        return body;
    }
    let width: usize = raw[..raw.len() - rest.len()]
        .chars()
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum();
    format!("{}{body}", " ".repeat(width.min(MAX_STDERR_INDENT)))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_stderr_line_keeps_its_indentation_and_nothing_else() {
        assert_eq!(
            stderr_line("  File \"srv.py\", line 3, in <module>\n"),
            "  File \"srv.py\", line 3, in <module>"
        );
        assert_eq!(
            stderr_line("\t    raise  ValueError\r\n"),
            "        raise ValueError"
        );
        assert_eq!(
            stderr_line("Traceback (most recent call last):"),
            "Traceback (most recent call last):"
        );
        assert_eq!(stderr_line("   \n"), "");
        let deep = stderr_line(&format!("{}x", " ".repeat(100)));
        assert_eq!(deep, format!("{}x", " ".repeat(MAX_STDERR_INDENT)));
        assert_eq!(stderr_line("    a\u{1b}[31mred"), "    a [31mred");
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!(
            "mcp-triage-client-stdio-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&p);
        p
    }

    fn spawn(script: String) -> StdioConn {
        StdioConn::spawn("sh", &["-c".into(), script], &BTreeMap::new(), 1 << 20, 10).unwrap()
    }

    /// A server that writes its last words after stdin's EOF gets to write them: the shutdown
    /// starts by closing stdin, not with SIGKILL.
    #[tokio::test]
    async fn a_server_that_exits_on_eof_finishes_its_work() {
        let done = scratch("eof");
        let mut c = spawn(format!(
            "cat >/dev/null; sleep 0.2; echo done > '{}'",
            done.display()
        ));
        assert_eq!(c.shutdown(Duration::from_secs(5)).await, Shutdown::Exited);
        assert_eq!(std::fs::read_to_string(&done).unwrap(), "done\n");
        let _ = std::fs::remove_file(done);
    }

    /// A server that ignores stdin's EOF gets SIGTERM after the grace period, and can handle it.
    #[tokio::test]
    async fn a_server_that_ignores_eof_gets_sigterm() {
        let done = scratch("term");
        let mut c = spawn(format!(
            "trap \"echo term > '{}'; exit 0\" TERM; while :; do sleep 0.05; done",
            done.display()
        ));
        let grace = Duration::from_millis(300);
        assert_eq!(c.shutdown(grace).await, Shutdown::Terminated);
        assert_eq!(std::fs::read_to_string(&done).unwrap(), "term\n");
        let _ = std::fs::remove_file(done);
    }

    /// A server that ignores SIGTERM too is killed after the second grace period.
    #[tokio::test]
    async fn a_server_that_ignores_sigterm_is_killed() {
        let mut c = spawn("trap '' TERM; while :; do sleep 0.05; done".into());
        let started = std::time::Instant::now();
        assert_eq!(
            c.shutdown(Duration::from_millis(200)).await,
            Shutdown::Killed
        );
        assert!(started.elapsed() >= Duration::from_millis(400));
        assert!(c.send(&serde_json::json!({})).await.is_err());
    }
}
