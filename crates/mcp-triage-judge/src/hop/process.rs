//! The hop under test as a process: `sh -c CMD` in its own process group, with `{upstream}`
//! and `{listen}` filled in; waited for (bounded) until it accepts connections; stopped with
//! its whole group at the end, on error, and when dropped (a panic or an early return cannot
//! leave a gateway running).

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use crate::run::{read_bounded, sh_quote};
use crate::JudgeError;

/// How often the judge tries to connect while the hop starts.
const POLL: Duration = Duration::from_millis(50);

/// A free loopback port: bound and let go at once. Another process could take it in
/// between; the hop then fails to listen and the judge says so.
pub fn free_port() -> Result<SocketAddr, JudgeError> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(JudgeError::Spawn)?;
    l.local_addr().map_err(JudgeError::Spawn)
}

/// The command line with its placeholders filled (`{upstream}` quoted, `{listen}` bare: it
/// is `127.0.0.1:PORT`, nothing for `sh` to split).
pub fn command_line(cmd: &str, upstream: &str, listen: SocketAddr) -> String {
    cmd.replace("{upstream}", &sh_quote(upstream))
        .replace("{listen}", &listen.to_string())
}

/// A running hop.
pub struct HopProcess {
    child: tokio::process::Child,
    pid: Option<u32>,
    stderr: Option<JoinHandle<String>>,
    stdout: Option<JoinHandle<String>>,
}

impl HopProcess {
    /// Start `line` with `sh -c` in its own process group.
    pub fn spawn(line: &str) -> Result<HopProcess, JudgeError> {
        let mut command = tokio::process::Command::new("sh");
        command
            .arg("-c")
            .arg(line)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(JudgeError::Spawn)?;
        let stdout = child.stdout.take().map(|o| tokio::spawn(read_bounded(o)));
        let stderr = child.stderr.take().map(|e| tokio::spawn(read_bounded(e)));
        Ok(HopProcess {
            pid: child.id(),
            child,
            stderr,
            stdout,
        })
    }

    /// Wait until `listen` accepts a connection, at most `limit`; a hop that exits first or
    /// never listens is an error that says which, with what it printed.
    pub async fn wait_listening(
        &mut self,
        cmd: &str,
        listen: SocketAddr,
        limit: Duration,
    ) -> Result<(), JudgeError> {
        let t0 = Instant::now();
        loop {
            if tokio::net::TcpStream::connect(listen).await.is_ok() {
                return Ok(());
            }
            let exited = self.child.try_wait().ok().flatten();
            if exited.is_some() || t0.elapsed() >= limit {
                let why = match exited {
                    Some(s) => format!("it exited ({s}) before listening"),
                    None => format!("nothing listened there within {} s", limit.as_secs_f64()),
                };
                let said = self.stop().await;
                return Err(JudgeError::HopNotListening {
                    cmd: cmd.to_string(),
                    listen,
                    why,
                    said,
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Stop the hop's whole group and return the tail of what it printed.
    pub async fn stop(&mut self) -> String {
        self.kill_group();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
        let mut said = String::new();
        for h in [self.stderr.take(), self.stdout.take()]
            .into_iter()
            .flatten()
        {
            if let Ok(Ok(s)) = tokio::time::timeout(Duration::from_secs(2), h).await {
                said.push_str(&s);
            }
        }
        let lines: Vec<&str> = said.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(5)..].join(" / ")
    }

    fn kill_group(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.pid.take() {
            // The group id is the hop's pid (process_group(0)): only what the hop started.
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .stderr(Stdio::null())
                .status();
        }
        let _ = self.child.start_kill();
    }
}

impl Drop for HopProcess {
    fn drop(&mut self) {
        self.kill_group();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled() {
        let l: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        assert_eq!(
            command_line("hop --to {upstream} --at {listen}", "http://127.0.0.1:1", l),
            "hop --to 'http://127.0.0.1:1' --at 127.0.0.1:4000"
        );
    }

    #[tokio::test]
    async fn a_hop_that_never_listens_is_a_clear_error_within_the_bound() {
        let listen = free_port().unwrap();
        let mut p = HopProcess::spawn("echo starting >&2; sleep 30").unwrap();
        let t0 = Instant::now();
        let e = p
            .wait_listening("sleepy", listen, Duration::from_millis(400))
            .await
            .unwrap_err()
            .to_string();
        assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
        assert!(e.contains("within 0.4 s") && e.contains("starting"), "{e}");
    }

    #[tokio::test]
    async fn a_hop_that_exits_is_told_apart() {
        let listen = free_port().unwrap();
        let mut p = HopProcess::spawn("echo bad flag >&2; exit 3").unwrap();
        let e = p
            .wait_listening("quits", listen, Duration::from_secs(5))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("exited") && e.contains("bad flag"), "{e}");
    }
}
