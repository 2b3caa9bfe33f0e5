//! `mcp-triage wrap` under the conditions issue 23 found it losing data: a client that reads late,
//! a client that ends the server itself (`call --stdio`), and a server line with no newline.
//! Each test failed before the relay streamed chunks and before the client's gentle shutdown.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{KillOnDrop, BIN};

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mcp-triage-wrap-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn spawn_wrap(log: &std::path::Path, server: &str) -> KillOnDrop {
    KillOnDrop(
        Command::new(BIN)
            .args(["wrap", "--log"])
            .arg(log)
            .args(["--", "sh", "-c", server])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

/// Everything wrap writes to stdout (nothing when the test closed it) and stderr, and how it
/// exited.
fn read_to_the_end(wrap: &mut KillOnDrop) -> (Vec<u8>, String, std::process::ExitStatus) {
    let mut out = Vec::new();
    if let Some(mut stdout) = wrap.0.stdout.take() {
        stdout.read_to_end(&mut out).unwrap();
    }
    let mut err = String::new();
    if let Some(mut stderr) = wrap.0.stderr.take() {
        stderr.read_to_string(&mut err).unwrap();
    }
    (out, err, wrap.0.wait().unwrap())
}

/// Item 1: the server writes a 50 MB answer and exits; the client starts reading 6 s later
/// (past the 5 s the relay used to wait). Every byte arrives and wrap exits 0 with a quiet
/// stderr; before, 65,536 bytes arrived and the rest was dropped silently.
#[test]
fn wrap_delivers_everything_to_a_client_that_reads_late() {
    const BYTES: usize = 50_000_000;
    let dir = tmpdir("late");
    let server = format!("head -c {BYTES} /dev/zero | tr '\\0' a; echo; exit 0");
    let mut wrap = spawn_wrap(&dir.join("log.jsonl"), &server);
    drop(wrap.0.stdin.take());
    std::thread::sleep(Duration::from_secs(6));
    let (out, err, status) = read_to_the_end(&mut wrap);
    assert_eq!(
        out.len(),
        BYTES + 1,
        "every byte the server wrote; stderr: {err}"
    );
    assert!(out[..BYTES].iter().all(|&b| b == b'a') && out[BYTES] == b'\n');
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(!err.contains("not delivered"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 1, the path the test above cannot reach: the server has already exited (it wrote less
/// than the two pipes hold, so nothing blocked it) while part of its output still waits for a
/// client that reads 6 s later. Every byte arrives and wrap exits 0.
#[test]
fn wrap_delivers_what_an_exited_server_left_to_a_late_reader() {
    const BYTES: usize = 100_000;
    let dir = tmpdir("exited");
    let marker = dir.join("exited");
    let server = format!(
        "head -c {BYTES} /dev/zero | tr '\\0' b; echo; touch {}; exit 0",
        marker.display()
    );
    let mut wrap = spawn_wrap(&dir.join("log.jsonl"), &server);
    drop(wrap.0.stdin.take());
    let t0 = Instant::now();
    while !marker.exists() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(marker.exists(), "the server did not finish writing");
    std::thread::sleep(Duration::from_secs(6));
    let (out, err, status) = read_to_the_end(&mut wrap);
    assert_eq!(out.len(), BYTES + 1, "every byte; stderr: {err}");
    assert!(out[..BYTES].iter().all(|&b| b == b'b'));
    assert_eq!(status.code(), Some(0), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 1, the other half: output that cannot be delivered (the client closed its end) is
/// said on stderr with the byte count, and wrap exits non-zero instead of 0.
#[test]
fn wrap_says_so_and_fails_when_the_client_stops_reading() {
    let dir = tmpdir("closed");
    let server = "head -c 1000000 /dev/zero | tr '\\0' c; echo; exit 0";
    let mut wrap = spawn_wrap(&dir.join("log.jsonl"), server);
    drop(wrap.0.stdout.take());
    drop(wrap.0.stdin.take());
    let (_, err, status) = read_to_the_end(&mut wrap);
    assert_ne!(status.code(), Some(0), "{err}");
    assert!(err.contains("not delivered"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Item 2: `call --stdio` ends the server it spawned; with `wrap` in between (what
/// `wrap --install` sets up) the `tools/call` record is in wrap's log every time. Before, the
/// client's immediate SIGKILL lost it in 17 of 20 runs; five runs all but certainly caught that.
#[test]
fn call_stdio_through_wrap_keeps_every_record() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../mcp-triage-client/tests/fixtures/sh_server.sh"
    );
    let dir = tmpdir("records");
    for run in 0..5 {
        let log = dir.join(format!("wrap{run}.jsonl"));
        let stdio = format!("{BIN} wrap --log {} -- sh {script} ok", log.display());
        let o = Command::new(BIN)
            .args(["call", "--stdio", &stdio, "echo", "--format", "json"])
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let calls: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|r| r["method"] == "tools/call")
            .collect();
        assert_eq!(calls.len(), 1, "run {run}: wrap's log: {text}");
        assert_eq!(calls[0]["outcome"], "TOOL_SUCCESS", "run {run}: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The peak resident set of a process, from /proc (Linux), in bytes.
fn vm_hwm(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Item 11: a 64 MiB server line with no newline reaches the client while the server still
/// runs (relayed as it arrives, not held until the newline), and wrap's peak memory stays far
/// below the line's size. Before, the client saw nothing until the newline and wrap held the
/// whole line (1 GB cost 1.06 GB RSS).
#[test]
fn wrap_streams_a_line_without_newline_in_bounded_memory() {
    const BYTES: usize = 64 << 20;
    let dir = tmpdir("line");
    let server = format!("head -c {BYTES} /dev/zero | tr '\\0' a; sleep 60");
    let mut wrap = spawn_wrap(&dir.join("log.jsonl"), &server);
    let pid = wrap.0.id();
    let mut stdout = wrap.0.stdout.take().unwrap();
    let deadline = Instant::now() + Duration::from_secs(40);
    let (mut got, mut buf) = (0usize, vec![0u8; 1 << 16]);
    while got < BYTES {
        assert!(
            Instant::now() < deadline,
            "only {got} bytes arrived in 40 s"
        );
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "stdout ended after {got} bytes");
        got += n;
    }
    assert!(
        wrap.0.try_wait().unwrap().is_none(),
        "the bytes arrived while the server still ran"
    );
    let peak = vm_hwm(pid).expect("/proc/PID/status has VmHWM");
    assert!(
        peak < 40 << 20,
        "wrap's peak RSS {peak} bytes for a {BYTES}-byte line"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
