//! `mcp-triage judge`: grade any MCP client's error handling against the kitchen.
//!
//! The conformance suite tells whether a client speaks MCP; this tells whether it handles
//! failures well. The kitchen runs in-process on 127.0.0.1:0; for each case the client
//! command runs once against that case's own instance URL (fresh counters), then the
//! kitchen's journal for that instance is graded by named checks ([`cases`], [`checks`]).
//! The client is told what to do through the environment, so one small script serves
//! every case:
//!
//! - `MCP_TRIAGE_SCENARIO`: the case id (e.g. `errors.tool_error`),
//! - `MCP_TRIAGE_URL`: the MCP URL (also substituted for `{url}` in the command),
//! - `MCP_TRIAGE_TOOL` and `MCP_TRIAGE_ARGS` (JSON): the one tool call to make,
//! - `MCP_TRIAGE_AUTH`: `oauth` in the `auth.*` cases (the server asks for OAuth; the kitchen's
//!   authorization server approves at once by redirecting), empty otherwise.
//!
//! With `--replay FILE.jsonl` the cases come from a capture file instead (`proxy --capture`):
//! one per captured `tools/call`, each run against a fresh `kitchen --replay` of the file, graded
//! by the generic checks the captured verdicts call for ([`replay_cases`]).
//!
//! The `auth.*` cases are also graded by the kitchen authorization server's counters
//! (`oauth` in `/kitchen/counters`), taken before and after the case: cases run one at a time,
//! so the difference is this client's.

pub mod cases;
pub mod checks;
pub mod replay_cases;

use crate::exit::Exit;
use std::io::IsTerminal;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use mcp_triage_kitchen::replay::{start_replay, Capture, Replay, ReplayOptions};
use mcp_triage_kitchen::{start, KitchenOptions};
use mcp_triage_report::{Case, Check, Report, ReportTarget, Status, Suite};
use serde_json::Value;
use tokio::io::AsyncReadExt;

use cases::{CaseDef, CheckKind};

pub const EXAMPLES: &str = "\
Examples:
  mcp-triage judge --client 'node interop/judge/ts-sdk-client.mjs {url}'
  mcp-triage judge --client 'python3 client.py {url}' --scenario errors.tool_error \\
      --expect-output 'errors.tool_error=Tool-side failure' --report junit:judge.xml --report html:judge.html
  mcp-triage judge --list                              # the cases and their checks
  mcp-triage judge --client 'python3 client.py {url}' --replay capture.jsonl
      # grade it on failures `proxy --capture capture.jsonl` recorded (one case per captured call)

The client runs once per case with MCP_TRIAGE_SCENARIO, MCP_TRIAGE_URL, MCP_TRIAGE_TOOL and
MCP_TRIAGE_ARGS (JSON) set and should make that one tool call, then exit 0 with its result or
non-zero with a stated failure. Exit 0 when every check passes, 1 when one fails, 2 on a usage
or startup error (also: the client command is not found or not executable, sh's 127/126).";

/// Bytes of each output stream kept per case (the rest is counted, not stored).
const OUTPUT_LIMIT: usize = 16 * 1024;

#[derive(Args)]
pub struct JudgeArgs {
    /// The client command, run with `sh -c`; `{url}` becomes the case's MCP URL (quoted).
    #[arg(long, value_name = "CMD", required_unless_present = "list")]
    client: Option<String>,

    /// Run only these cases (id or kitchen scenario id; repeatable). Default: all.
    #[arg(long = "scenario", value_name = "ID")]
    scenarios: Vec<String>,

    /// Seconds a client may run per case before the judge stops it (fails `in_time`).
    #[arg(long, value_name = "S", default_value = "20", value_parser = parse_timeout)]
    timeout: f64,

    /// Write a report: junit:FILE, html:FILE, json:FILE or tap:FILE (`-` = stdout; repeatable).
    #[arg(long = "report", value_name = "FORMAT:FILE")]
    reports: Vec<ReportTarget>,

    /// Add a check that the client's output (stdout+stderr) mentions TEXT, case-insensitively.
    #[arg(long = "expect-output", value_name = "ID=TEXT", value_parser = parse_expect)]
    expect_output: Vec<(String, String)>,

    /// Name of the judged client in the matrix and the reports (default: the command).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,

    /// Grade the client on the exchanges of a capture file (`proxy --capture`) instead of the
    /// kitchen's scenarios: one case per captured tools/call (tool and arguments), served by
    /// `kitchen --replay`.
    #[arg(long, value_name = "FILE.jsonl")]
    replay: Option<std::path::PathBuf>,

    /// With --replay: divide the captured delays (response head, SSE chunks) by X.
    #[arg(long, value_name = "X", default_value = "1", requires = "replay", value_parser = mcp_triage_kitchen::replay::parse_speed)]
    replay_speed: f64,

    /// With --replay: the largest capture file read, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = mcp_triage_kitchen::replay::DEFAULT_MAX_CAPTURE_BYTES, requires = "replay")]
    replay_max_bytes: u64,

    /// List the cases and their checks, then exit.
    #[arg(long)]
    list: bool,

    /// No progress line per case on stderr.
    #[arg(long, short)]
    quiet: bool,

    /// Colour the matrix: auto (a terminal without NO_COLOR), always or never.
    #[arg(long, value_name = "WHEN", default_value = "auto", value_parser = ["auto", "always", "never"])]
    color: String,
}

/// Whether to colour output: `always`, `never`, or `auto` = stdout is a terminal and
/// `NO_COLOR` is unset (https://no-color.org).
pub fn use_color(when: &str) -> bool {
    match when {
        "always" => true,
        "never" => false,
        _ => std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    }
}

fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 3600.0 => Ok(v),
        _ => Err(format!("{s:?} is not a number of seconds in (0, 3600]")),
    }
}

fn parse_expect(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((id, text)) if !id.is_empty() && !text.is_empty() => {
            Ok((id.to_string(), text.to_string()))
        }
        _ => Err(format!("{s:?} is not ID=TEXT")),
    }
}

/// Single-quote for `sh`.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn selected(args: &JudgeArgs, all: Vec<CaseDef>) -> Result<Vec<CaseDef>, String> {
    if args.scenarios.is_empty() {
        return Ok(all);
    }
    for want in &args.scenarios {
        if !all.iter().any(|c| c.id == **want || c.scenario == **want) {
            let ids: Vec<&str> = all.iter().map(|c| &*c.id).collect();
            return Err(format!("unknown case {want:?}; cases: {}", ids.join(", ")));
        }
    }
    Ok(all
        .into_iter()
        .filter(|c| {
            args.scenarios
                .iter()
                .any(|w| c.id == **w || c.scenario == **w)
        })
        .collect())
}

fn checks_of(c: &CaseDef) -> Vec<CheckKind> {
    let mut v = vec![CheckKind::ToolCalled];
    v.extend_from_slice(&c.checks);
    v.extend([
        CheckKind::Headers2026,
        CheckKind::InTime,
        CheckKind::ReportedOutcome,
    ]);
    v
}

/// `sh -c` exits 127 when the command is not found and 126 when it cannot be executed:
/// the client never started, which is the run's startup error, not a verdict on a case.
fn startup_failure(run: &Run) -> Option<String> {
    let why = match run.exit? {
        127 => "command not found",
        126 => "not executable",
        _ => return None,
    };
    let said: Vec<&str> = run
        .stderr
        .lines()
        .chain(run.stdout.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(3)
        .collect();
    Some(format!(
        "the client could not start (sh -c exit {}: {why}){}",
        run.exit.unwrap_or_default(),
        if said.is_empty() {
            String::new()
        } else {
            format!(": {}", said.join(" / "))
        }
    ))
}

/// What one client run left behind.
struct Run {
    stdout: String,
    stderr: String,
    exit: Option<i32>,
    timed_out: bool,
    elapsed: Duration,
}

async fn read_bounded<R: tokio::io::AsyncRead + Unpin>(mut r: R) -> String {
    let mut kept = Vec::new();
    let mut dropped = 0usize;
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_LIMIT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                dropped += n.saturating_sub(room);
            }
        }
    }
    let mut s = String::from_utf8_lossy(&kept).into_owned();
    if dropped > 0 {
        s.push_str(&format!("\n[… {dropped} more bytes]"));
    }
    s
}

async fn run_client(
    cmd: &str,
    case: &CaseDef,
    url: &str,
    timeout: Duration,
) -> Result<Run, String> {
    let line = cmd.replace("{url}", &sh_quote(url));
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(&line)
        .env("MCP_TRIAGE_SCENARIO", &*case.id)
        .env("MCP_TRIAGE_URL", url)
        .env("MCP_TRIAGE_TOOL", &*case.tool)
        .env("MCP_TRIAGE_ARGS", case.arguments.to_string())
        .env("MCP_TRIAGE_AUTH", if case.oauth { "oauth" } else { "" })
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Its own process group, so a timeout stops the whole client (npx, node, python …).
    #[cfg(unix)]
    command.process_group(0);
    let t0 = Instant::now();
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run the client with sh -c: {e}"))?;
    let out = tokio::spawn(read_bounded(child.stdout.take().expect("piped stdout")));
    let err = tokio::spawn(read_bounded(child.stderr.take().expect("piped stderr")));
    let (status, timed_out) = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(s) => (s.ok(), false),
        Err(_) => {
            kill_group(&mut child).await;
            (child.wait().await.ok(), true)
        }
    };
    let elapsed = t0.elapsed();
    // Output readers end when every holder of the pipes is gone; bound the wait anyway.
    let grab = |h: tokio::task::JoinHandle<String>| async move {
        tokio::time::timeout(Duration::from_secs(2), h)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default()
    };
    Ok(Run {
        stdout: grab(out).await,
        stderr: grab(err).await,
        exit: status.and_then(|s| s.code()),
        timed_out,
        elapsed,
    })
}

async fn kill_group(child: &mut tokio::process::Child) {
    #[cfg(unix)]
    if let Some(pid) = child.id() {
        // The group id is the child's pid (process_group(0)); only our own client is hit.
        let _ = tokio::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .status()
            .await;
    }
    let _ = child.start_kill();
}

pub fn run(args: JudgeArgs) -> Result<ExitCode, String> {
    let capture = match &args.replay {
        None => None,
        Some(path) => Some(Arc::new(
            Capture::read(path, args.replay_max_bytes)
                .map_err(|e| format!("judge --replay {}: {e}", path.display()))?,
        )),
    };
    let all = match &capture {
        None => cases::all(),
        Some(c) => {
            let (cases, skipped) = replay_cases::cases(c);
            for why in &skipped {
                eprintln!("judge --replay: {why}");
            }
            if cases.is_empty() {
                return Err(format!(
                    "judge --replay: the capture has no tools/call the client can be asked to make{}",
                    if skipped.is_empty() { "" } else { " (see above)" }
                ));
            }
            cases
        }
    };
    let cases = selected(&args, all)?;
    if args.list {
        for c in &cases {
            let names: Vec<&str> = checks_of(c).iter().map(|k| k.name()).collect();
            println!(
                "{:<28} {} {}  tool {}  checks {}",
                c.id,
                c.scenario,
                c.params,
                c.tool,
                names.join(", ")
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let cmd = args.client.clone().ok_or("--client is required")?;
    for (id, _) in &args.expect_output {
        if !cases.iter().any(|c| c.id == **id) {
            return Err(format!(
                "--expect-output names {id:?}, which is not a selected case"
            ));
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let report = runtime.block_on(judge(&args, &cmd, &cases, capture))?;
    print_matrix(&report, use_color(&args.color));
    mcp_triage_report::write_all(&args.reports, &report)?;
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        Exit::Failed.into()
    })
}

/// Where the cases run: the kitchen's scenarios (one kitchen, an instance per case), or a
/// capture replayed (a fresh replay kitchen per case, so each starts at the first line of
/// every key).
async fn judge(
    args: &JudgeArgs,
    cmd: &str,
    cases: &[CaseDef],
    capture: Option<Arc<Capture>>,
) -> Result<Report, String> {
    let options = KitchenOptions::default();
    let sse_retry_ms = options.sse_retry_ms;
    let handle = start("127.0.0.1:0".parse().expect("loopback address"), options)
        .await
        .map_err(|e| format!("kitchen: {e}"))?;
    let started = mcp_triage_wire::time::rfc3339(mcp_triage_wire::time::now_ms());
    let t0 = Instant::now();
    let timeout = Duration::from_secs_f64(args.timeout);
    let mut out = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let tag = format!("judge-{i}");
        let replayed = match &capture {
            None => None,
            Some(c) => {
                let replay = Replay::new(
                    c.clone(),
                    ReplayOptions {
                        speed: args.replay_speed,
                    },
                )
                .map_err(|e| format!("judge --replay: {e}"))?;
                match start_replay(
                    "127.0.0.1:0".parse().expect("loopback address"),
                    KitchenOptions::default(),
                    replay,
                )
                .await
                {
                    Ok(h) => Some(h),
                    Err(e) => {
                        handle.shutdown().await;
                        return Err(format!("replay kitchen: {e}"));
                    }
                }
            }
        };
        let url = match &replayed {
            Some(r) => format!(
                "{}{}",
                r.base_url(),
                capture.as_ref().map_or("/mcp".into(), |c| c.mcp_path())
            ),
            None => format!(
                "{}?instance={tag}&params={}",
                handle.scenario_url(&case.scenario),
                mcp_triage_wire::percent::encode(&case.params.to_string())
            ),
        };
        let oauth_before = handle.kitchen().oauth_counters();
        let run = run_client(cmd, case, &url, timeout).await;
        let entries: Vec<Value> = match &replayed {
            Some(r) => r.kitchen().journal(),
            None => {
                let suffix = format!("#{tag}");
                handle
                    .kitchen()
                    .journal()
                    .into_iter()
                    .filter(|e| e["instance"].as_str().is_some_and(|s| s.ends_with(&suffix)))
                    .collect()
            }
        };
        if let Some(r) = replayed {
            r.shutdown().await;
        }
        let run = match run {
            Ok(r) => r,
            Err(e) => {
                handle.shutdown().await;
                return Err(e);
            }
        };
        if let Some(e) = startup_failure(&run) {
            handle.shutdown().await;
            return Err(format!("{e} (case {})", case.id));
        }
        let printed = format!("{}\n{}", run.stdout, run.stderr);
        let oauth = case
            .oauth
            .then(|| checks::counter_delta(&oauth_before, &handle.kitchen().oauth_counters()));
        let cx = checks::Ctx {
            oauth: oauth.as_ref(),
            case,
            entries: &entries,
            sse_retry_ms,
            timed_out: run.timed_out,
            timeout_s: args.timeout,
            exit: run.exit,
            output: &printed,
        };
        let mut graded: Vec<Check> = checks::grade_all(&checks_of(case), &cx);
        for (_, text) in args.expect_output.iter().filter(|(id, _)| *id == case.id) {
            let found = printed.to_lowercase().contains(&text.to_lowercase());
            graded.push(
                Check::new(
                    "output_mentions",
                    if found { Status::Pass } else { Status::Fail },
                    format!(
                        "output {} {text:?}",
                        if found {
                            "mentions"
                        } else {
                            "does not mention"
                        }
                    ),
                )
                .with_evidence(if found {
                    vec![]
                } else {
                    printed.lines().rev().take(3).map(str::to_owned).collect()
                })
                .with_references([
                    "judge: --expect-output (does the client report what happened?)",
                ]),
            );
        }
        if !args.quiet {
            // One line per case, on a terminal or not (CI logs show a long run moving).
            let c = mcp_triage_report::Case {
                checks: graded.clone(),
                ..Default::default()
            }
            .counts();
            eprintln!(
                "judge [{}/{}] {}: pass {}, fail {}, n/a {} ({:.1} s)",
                i + 1,
                cases.len(),
                case.id,
                c.pass,
                c.fail,
                c.skip,
                run.elapsed.as_secs_f64()
            );
        }
        out.push(Case {
            name: case.id.to_string(),
            journal: entries,
            checks: graded,
            duration_ms: Some(run.elapsed.as_millis() as u64),
            output: format!(
                "exit: {}{}\n--- stdout\n{}\n--- stderr\n{}",
                run.exit.map_or("signal".to_string(), |c| c.to_string()),
                if run.timed_out {
                    " (stopped at the timeout)"
                } else {
                    ""
                },
                run.stdout.trim_end(),
                run.stderr.trim_end()
            ),
        });
    }
    handle.shutdown().await;
    Ok(Report {
        title: "mcp-triage judge".into(),
        started: Some(started),
        suites: vec![Suite {
            name: args.name.clone().unwrap_or_else(|| cmd.to_string()),
            cases: out,
            duration_ms: Some(t0.elapsed().as_millis() as u64),
            properties: [
                ("client".into(), cmd.to_string()),
                ("mcp-triage".into(), env!("CARGO_PKG_VERSION").into()),
                ("timeout".into(), format!("{} s", args.timeout)),
            ]
            .into_iter()
            .chain(args.replay.as_ref().map(|p| {
                (
                    "replay".to_string(),
                    format!("{} (speed {})", p.display(), args.replay_speed),
                )
            }))
            .collect(),
        }],
        ..Report::default()
    })
}

/// The scenario × check matrix, then every failure with its evidence.
fn print_matrix(report: &Report, color: bool) {
    let paint = |s: String, code: &str| {
        if color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s
        }
    };
    for suite in &report.suites {
        let cols = suite.check_names();
        let w0 = suite
            .cases
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        // The protocol version each case's requests carried: what the client negotiated.
        let versions: Vec<String> = suite
            .cases
            .iter()
            .map(|c| checks::negotiated_version(&c.journal).unwrap_or_else(|| "-".into()))
            .collect();
        let wv = versions.iter().map(String::len).max().unwrap_or(0).max(8);
        println!("judge: {}", suite.name);
        print!("{:<w0$}  {:<wv$}", "case", "protocol");
        for c in &cols {
            print!("  {c}");
        }
        println!();
        for (case, version) in suite.cases.iter().zip(&versions) {
            print!("{:<w0$}  {version:<wv$}", case.name);
            for col in &cols {
                let (cell, code) = match case.checks.iter().find(|k| k.name == *col) {
                    None => ("-", "2"),
                    Some(k) => match k.status {
                        Status::Pass => ("pass", "32"),
                        Status::Fail => ("FAIL", "1;31"),
                        Status::Skip => ("n/a", "2"),
                    },
                };
                print!("  {}", paint(format!("{cell:<w$}", w = col.len()), code));
            }
            println!();
        }
        for case in &suite.cases {
            for k in case.checks.iter().filter(|k| k.status == Status::Fail) {
                println!(
                    "\n{} {} / {}: {}",
                    paint("FAIL".into(), "1;31"),
                    case.name,
                    k.name,
                    k.message
                );
                for e in &k.evidence {
                    println!("  evidence: {e}");
                }
                if let Some(r) = k.references.first() {
                    println!("  reference: {r}");
                }
                if k.name == CheckKind::ToolCalled.name() {
                    // Nothing to grade: what the client said is the only clue.
                    let tail: Vec<&str> = case
                        .output
                        .lines()
                        .filter(|l| !l.trim().is_empty() && !l.starts_with("--- "))
                        .collect();
                    for l in &tail[tail.len().saturating_sub(3)..] {
                        println!("  client: {l}");
                    }
                }
            }
        }
    }
    let c = report.counts();
    println!(
        // Not "N passed, N failed": CI log readers take that shape for a test runner's.
        "\nchecks: pass {}, fail {}, n/a {}",
        c.pass, c.fail, c.skip
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_and_encoding() {
        assert_eq!(sh_quote("a'b"), r"'a'\''b'");
        assert_eq!(
            mcp_triage_wire::percent::encode(r#"{"a":[1]}"#),
            "%7B%22a%22%3A%5B1%5D%7D"
        );
        assert!(parse_timeout("0").is_err());
        assert!(parse_expect("x").is_err());
        assert_eq!(
            parse_expect("a=b=c").unwrap(),
            ("a".to_string(), "b=c".to_string())
        );
    }

    #[test]
    fn every_case_names_a_kitchen_scenario_with_valid_params() {
        let k = mcp_triage_kitchen::Kitchen::new(KitchenOptions::default()).unwrap();
        for c in cases::all() {
            k.shared()
                .instance(&c.scenario, &c.params, Some("t"))
                .unwrap_or_else(|e| panic!("{}: {e}", c.id));
        }
    }
}
