//! `judge --client-stdio`: grade a stdio MCP client (a host that spawns its server). CMD is
//! run with `sh -c` once per case, `{server}` replaced by the stdio kitchen's command line for
//! the case (`mcp-triage kitchen --stdio --scenario … --journal FILE`, quoted as one word); the
//! host spawns it, makes the one call, and ends. The truth is the journal file the stdio kitchen
//! appends to (its entries and the stdio front's events), read after the case.
//!
//! ```text
//! judge ──sh -c CMD──▶ host under test ──spawns {server}──▶ kitchen --stdio ──appends──▶ journal file
//!   └──────────────── grade (exit, output, time) ◀──────────── reads ─────────────────────┘
//! ```
//!
//! Bounded: each case has the `--timeout` limit; the host runs in its own process group, killed
//! as a group at the end of the case (and when the judge errs), and every server the journal
//! says started (its pid) is killed too, in case a host moved it to another group.

pub mod cases;
pub mod grade;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::run::{read_bounded, sh_quote, JudgeOptions};
use crate::JudgeError;
use cases::StdioCase;
use grade::{Checked, ClientRun, Records};

/// How `judge --client-stdio` runs the host.
#[derive(Clone, Debug)]
pub struct StdioClientOptions {
    /// The host command, run with `sh -c`; `{server}` becomes the kitchen's command line.
    pub command: String,
    /// The `mcp-triage` executable the kitchen is started from (default: this process's).
    pub server_exe: PathBuf,
}

/// One case run.
pub struct StdioResult {
    /// The case.
    pub case: StdioCase,
    /// Its checks.
    pub checks: Vec<Checked>,
    /// How the client ended.
    pub run: ClientRun,
}

impl StdioResult {
    /// No check failed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.pass != Some(false))
    }
}

/// The server command line for a case: the executable, the scenario, its params, the journal.
pub fn server_line(exe: &Path, case: &StdioCase, journal: &Path) -> String {
    format!(
        "{} kitchen --stdio --scenario {} --params {} --journal {}",
        sh_quote(&exe.to_string_lossy()),
        sh_quote(case.scenario),
        sh_quote(&case.params.to_string()),
        sh_quote(&journal.to_string_lossy())
    )
}

/// The host command with `{server}` filled in (the server line as one quoted word).
pub fn command_line(cmd: &str, server: &str) -> String {
    cmd.replace("{server}", &sh_quote(server))
}

fn selected(options: &JudgeOptions) -> Result<Vec<StdioCase>, JudgeError> {
    let all = cases::all();
    for want in &options.scenarios {
        if !all.iter().any(|c| c.id == want) {
            return Err(JudgeError::UnknownCase {
                want: want.clone(),
                ids: all.iter().map(|c| c.id.to_string()).collect(),
            });
        }
    }
    Ok(all
        .into_iter()
        .filter(|c| options.scenarios.is_empty() || options.scenarios.iter().any(|w| w == c.id))
        .collect())
}

/// Run (or list) the stdio cases; true when every check passed.
pub fn run(options: &JudgeOptions, stdio: &StdioClientOptions) -> Result<bool, JudgeError> {
    let cases = selected(options)?;
    if options.list {
        for c in &cases {
            let names: Vec<&str> = cases::checks_of(c).iter().map(|k| k.name()).collect();
            println!(
                "{:<24} {} {}  tool {}  checks {}",
                c.id,
                c.scenario,
                c.params,
                c.tool,
                names.join(", ")
            );
        }
        return Ok(true);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(JudgeError::Runtime)?;
    let limit = Duration::from_secs_f64(options.timeout);
    let scratch = Scratch::new()?;
    let mut all_passed = true;
    for (n, case) in cases.into_iter().enumerate() {
        let journal = scratch.0.join(format!("case-{n}.jsonl"));
        let r = runtime.block_on(run_case(stdio, case, &journal, limit))?;
        print_result(&r);
        all_passed &= r.passed();
    }
    Ok(all_passed)
}

fn print_result(r: &StdioResult) {
    let mark = if r.passed() { "PASS" } else { "FAIL" };
    println!("{mark} {}", r.case.id);
    for c in &r.checks {
        let v = match c.pass {
            Some(true) => "pass",
            Some(false) => "FAIL",
            None => "n/a ",
        };
        println!("  {v} {:<20} {}", c.check.name(), c.evidence);
    }
}

/// The run's scratch directory (the journal files), removed however the run ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, JudgeError> {
        let dir = std::env::temp_dir().join(format!(
            "mcp-triage-judge-stdio-{}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos()
        ));
        std::fs::create_dir_all(&dir).map_err(JudgeError::Spawn)?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Kills the host's process group, and the servers the journal names, when dropped.
struct Group {
    pid: Option<u32>,
    journal: PathBuf,
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pid) = self.pid {
            kill(&format!("-{pid}"));
        }
        if let Ok(text) = std::fs::read_to_string(&self.journal) {
            if let Ok(r) = Records::parse(&text) {
                for pid in still_running(&r) {
                    kill(&pid.to_string());
                }
            }
        }
    }
}

/// The servers the journal says started and did not say ended, and that still are a stdio
/// kitchen (`/proc/PID/cmdline`): a pid that ended and was reused is never killed.
fn still_running(r: &Records) -> Vec<u32> {
    let ended = |pid: u32| {
        r.events
            .iter()
            .any(|e| e.pid == pid && (e.stdio_event == "exited" || e.stdio_event == "stdinClosed"))
    };
    r.events
        .iter()
        .filter(|e| e.stdio_event == "started" && !ended(e.pid))
        .map(|e| e.pid)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("kitchen\0--stdio"))
        })
        .collect()
}

fn kill(target: &str) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", target])
        .stderr(Stdio::null())
        .status();
}

async fn run_case(
    stdio: &StdioClientOptions,
    case: StdioCase,
    journal: &Path,
    limit: Duration,
) -> Result<StdioResult, JudgeError> {
    let server = server_line(&stdio.server_exe, &case, journal);
    let line = command_line(&stdio.command, &server);
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(&line)
        .env("MCP_TRIAGE_SCENARIO", case.id)
        .env("MCP_TRIAGE_SERVER", &server)
        .env("MCP_TRIAGE_TOOL", case.tool)
        .env("MCP_TRIAGE_ARGS", case.arguments.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    let t0 = Instant::now();
    let mut child = command.spawn().map_err(JudgeError::Spawn)?;
    let group = Group {
        pid: child.id(),
        journal: journal.to_path_buf(),
    };
    let out = child.stdout.take().map(|o| tokio::spawn(read_bounded(o)));
    let err = child.stderr.take().map(|e| tokio::spawn(read_bounded(e)));
    let status = tokio::time::timeout(limit, child.wait()).await;
    let elapsed = t0.elapsed();
    // The case is over: the host's group and every server it started go, so a server still
    // holding the host's pipes cannot keep the output readers waiting.
    drop(group);
    let _ = child.start_kill();
    let mut output = String::new();
    for h in [out, err].into_iter().flatten() {
        if let Ok(Ok(s)) = tokio::time::timeout(Duration::from_secs(2), h).await {
            output.push_str(&s);
        }
    }
    let (exit, timed_out) = match status {
        Ok(Ok(s)) => (s.code(), false),
        Ok(Err(_)) => (None, false),
        Err(_) => (None, true),
    };
    if matches!(exit, Some(126 | 127)) {
        return Err(JudgeError::ClientStartup {
            why: format!("sh could not run the host: {}", output.trim()),
            case: case.id.to_string(),
        });
    }
    let text = std::fs::read_to_string(journal).unwrap_or_default();
    let records = Records::parse(&text).map_err(|why| JudgeError::ClientStartup {
        why: format!("the stdio kitchen's journal: {why}"),
        case: case.id.to_string(),
    })?;
    let run = ClientRun {
        exit,
        timed_out,
        output,
        elapsed,
    };
    let checks = grade::grade(&case, &records, &run);
    Ok(StdioResult { case, checks, run })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_line_is_one_quoted_word_in_the_host_command() {
        let c = cases::all()
            .into_iter()
            .find(|c| c.id == "stdio.slow_answer")
            .unwrap();
        let s = server_line(Path::new("/bin/mcp triage"), &c, Path::new("/tmp/j.jsonl"));
        assert_eq!(
            s,
            "'/bin/mcp triage' kitchen --stdio --scenario 'stdio.slow_answer' --params '{\"delayMs\":2000}' --journal '/tmp/j.jsonl'"
        );
        let l = command_line("host --server {server}", &s);
        assert!(
            l.starts_with("host --server ''\\''/bin/mcp triage'\\'' kitchen"),
            "{l}"
        );
    }
}
