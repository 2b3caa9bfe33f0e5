//! What the CLI tests share: running `mcp-triage` with bytes on stdin, and for those that run
//! `mcp-triage proxy`, starting it on a free port, stopping it with SIGTERM, and killing it when
//! a test fails first.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_mcp-triage");

/// Runs `mcp-triage ARGS` with `stdin` as its standard input, to the end.
pub fn run_with_stdin(args: &[&str], stdin: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcp-triage runs");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// Kills the process if the test fails before it stopped.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// A `mcp-triage proxy` started by a test: the process, its stderr after the start line, its
/// `host:port` and its start line.
pub struct RunningProxy {
    pub child: KillOnDrop,
    /// Kept open: a proxy whose stderr is closed cannot report.
    pub stderr: BufReader<std::process::ChildStderr>,
    pub addr: String,
    pub start_line: String,
}

/// Starts `mcp-triage proxy` on a free port in front of `upstream` with `extra` arguments.
pub fn start_proxy(upstream: &str, extra: &[&std::ffi::OsStr]) -> RunningProxy {
    let child = Command::new(BIN)
        .args(["proxy", "--listen", "127.0.0.1:0", "--upstream", upstream])
        .args(extra)
        // Without --log records go to stdout, which no test reads.
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let mut stderr = BufReader::new(child.0.stderr.take().unwrap());
    let mut start_line = String::new();
    stderr.read_line(&mut start_line).unwrap();
    let addr = start_line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("the proxy prints its URL: {start_line}"))
        .trim_start_matches("http://")
        .to_string();
    RunningProxy {
        child,
        stderr,
        addr,
        start_line,
    }
}

/// SIGTERM, then the exit status and the rest of stderr (bounded in time).
pub fn stop(p: RunningProxy) -> (std::process::ExitStatus, String) {
    let RunningProxy {
        mut child,
        mut stderr,
        ..
    } = p;
    let kill = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            return (s, rest);
        }
        assert!(
            Instant::now() < deadline,
            "the proxy did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Writes `input` to a child's stdin, closes it, and reads stdout and stderr to their end (the
/// wrap tests' whole conversation with `mcp-triage wrap`: a few lines each way).
pub fn converse(
    child: &mut std::process::Child,
    input: &str,
) -> (String, String, std::process::ExitStatus) {
    use std::io::Write as _;
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input.as_bytes())
        .unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout is piped")
        .read_to_string(&mut out)
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr is piped")
        .read_to_string(&mut err)
        .unwrap();
    (out, err, child.wait().unwrap())
}
