//! `judge --client-stdio` end to end, with real processes: our own `call --stdio` passes every
//! stdio case, and the two bad hosts of interop/judge/bad-stdio-host.py are each caught with the
//! journal's evidence. Each judge run is bounded by `--timeout`; together they take about 15 s.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Run the judge on `client` with a case limit of `timeout` s; then check that no stdio kitchen
/// it started is left running.
fn judge(client: &str, timeout: &str, extra: &[&str]) -> (Output, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .args(["judge", "--timeout", timeout, "--client-stdio", client])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run mcp-triage judge");
    let pid = child.id();
    let out = child.wait_with_output().expect("judge output");
    no_kitchen_left(pid);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text)
}

/// The lines of one case's block in the judge's output.
fn block<'a>(text: &'a str, case: &str) -> Vec<&'a str> {
    let head = text
        .lines()
        .position(|l| l.ends_with(&format!(" {case}")) && !l.starts_with(' '))
        .unwrap_or_else(|| panic!("no case {case} in:\n{text}"));
    text.lines()
        .skip(head)
        .take_while({
            let mut first = true;
            move |l| std::mem::take(&mut first) || l.starts_with(' ')
        })
        .collect()
}

/// No stdio kitchen outlives the judge run `judge_pid` (its scratch directory names the pid).
fn no_kitchen_left(judge_pid: u32) {
    let mark = format!("mcp-triage-judge-stdio-{judge_pid}-");
    let left: Vec<String> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("kitchen --stdio --scenario") && c.contains(&mark))
        .collect();
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn our_call_stdio_passes_every_stdio_case() {
    let exe = env!("CARGO_BIN_EXE_mcp-triage");
    let client = format!(
        "'{exe}' call --timeout 5 --stdio {{server}} \"$MCP_TRIAGE_TOOL\" --args \"$MCP_TRIAGE_ARGS\""
    );
    let t0 = Instant::now();
    let (out, text) = judge(&client, "12", &[]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for case in [
        "baseline",
        "errors.tool_error",
        "errors.jsonrpc_error",
        "errors.tool_failure",
        "elicitation.approval",
        "timeout.late_response",
        "stdio.exit_mid_call",
        "stdio.partial_line",
        "stdio.banner",
        "stdio.stderr_flood",
        "stdio.slow_answer",
        "stdio.huge_line",
        "stdio.never_answers",
    ] {
        let b = block(&text, case);
        assert!(b[0].starts_with("PASS"), "{case}: {b:?}");
    }
    // The dead server is reported, not hung on, and the destructive call is not run again.
    let dead = block(&text, "stdio.exit_mid_call").join("\n");
    assert!(
        dead.contains("pass reports_dead_server") && dead.contains("exited mid-call"),
        "{dead}"
    );
    assert!(
        dead.contains("ran: 1 time(s) over 1 server start(s)"),
        "{dead}"
    );
    assert!(t0.elapsed() < Duration::from_secs(40), "{:?}", t0.elapsed());
}

#[test]
fn a_host_that_never_reads_stderr_fails_stderr_drained_only_where_the_server_floods() {
    let script = repo().join("interop/judge/bad-stdio-host.py");
    let client = format!(
        "python3 '{}' --never-read-stderr {{server}}",
        script.display()
    );
    let t0 = Instant::now();
    let (out, text) = judge(
        &client,
        "4",
        &["--scenario", "baseline", "--scenario", "stdio.stderr_flood"],
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(block(&text, "baseline")[0].starts_with("PASS"), "{text}");
    let flood = block(&text, "stdio.stderr_flood").join("\n");
    assert!(
        flood.contains("FAIL stderr_drained") && flood.contains("never drained it"),
        "{flood}"
    );
    assert!(
        flood.contains("FAIL in_time") && flood.contains("stopped by the judge after 4"),
        "{flood}"
    );
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
}

#[test]
fn a_host_that_resends_after_the_server_died_fails_no_unsafe_resend() {
    let script = repo().join("interop/judge/bad-stdio-host.py");
    let client = format!(
        "python3 '{}' --resend-after-death {{server}}",
        script.display()
    );
    let (out, text) = judge(&client, "12", &["--scenario", "stdio.exit_mid_call"]);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let dead = block(&text, "stdio.exit_mid_call").join("\n");
    assert!(
        dead.contains("FAIL no_unsafe_resend")
            && dead.contains("increment_counter ran again: 2 time(s) over 2 server start(s)"),
        "{dead}"
    );
    // It did say the server died: only the resend is wrong.
    assert!(dead.contains("pass reports_dead_server"), "{dead}");
}

#[test]
fn list_shows_the_stdio_cases_and_an_unknown_case_is_named() {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .args(["judge", "--client-stdio", "x {server}", "--list"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("stdio.stderr_flood") && text.contains("stderr_drained"),
        "{text}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-triage"))
        .args([
            "judge",
            "--client-stdio",
            "x {server}",
            "--scenario",
            "sse.cut_mid_event",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown case \"sse.cut_mid_event\""));
}
