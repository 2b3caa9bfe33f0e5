//! The runner: start the kitchen in-process on 127.0.0.1:0, run the client command once per
//! case against that case's own instance URL (fresh counters), grade the kitchen's journal for
//! that instance with the case's checks ([`crate::cases`], [`crate::checks`]), then print the
//! matrix and write the reports. The client is told what to do through the environment, so
//! one small script serves every case:
//!
//! - `MCP_TRIAGE_SCENARIO`: the case id (e.g. `errors.tool_error`),
//! - `MCP_TRIAGE_URL`: the MCP URL (also substituted for `{url}` in the command),
//! - `MCP_TRIAGE_TOOL` and `MCP_TRIAGE_ARGS` (JSON): the one tool call to make,
//! - `MCP_TRIAGE_AUTH`: `oauth` in the `auth.*` cases (the server asks for OAuth; the kitchen's
//!   authorization server approves at once by redirecting), empty otherwise,
//! - `MCP_TRIAGE_REQUEST_TIMEOUT_MS`: the request timeout to use where the case is about what
//!   happens past it (`timeout.progress_keepalive`), empty otherwise.
//!
//! With [`JudgeOptions::replay`] the cases come from a capture file instead (`proxy --capture`):
//! one per captured `tools/call`, each run against a fresh `kitchen --replay` of the file, graded
//! by the generic checks the captured verdicts call for ([`crate::replay_cases`]).
//!
//! The `auth.*` cases are also graded by the kitchen authorization server's counters
//! (`oauth` in `/kitchen/counters`), taken before and after the case: cases run one at a time,
//! so the difference is this client's.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_triage_kitchen::journal::{JournalEntry, JournalError};
use mcp_triage_kitchen::replay::{
    start_replay, Capture, CaptureError, CaptureLimits, Replay, ReplayOptions,
};
use mcp_triage_kitchen::{start, KitchenError, KitchenHandle, KitchenOptions};
use mcp_triage_report::{Case, Check, Report, ReportTarget, Status, Suite};
use tokio::io::AsyncReadExt;

use crate::cases::{self, CaseDef, CheckKind};
use crate::{checks, replay_cases};

/// Bytes of each output stream kept per case (the rest is counted, not stored).
const OUTPUT_LIMIT: usize = 16 * 1024;

/// What to judge and how: everything `mcp-triage judge` takes on its command line, already
/// parsed (the binary keeps only the parsing).
#[derive(Clone, Debug)]
pub struct JudgeOptions {
    /// The client command, run with `sh -c`; `{url}` becomes the case's MCP URL (quoted).
    /// Only [`JudgeOptions::list`] runs without one.
    pub client: Option<String>,
    /// Run only these cases: a case id, else a kitchen scenario id (every case run on it).
    /// Empty: all.
    pub scenarios: Vec<String>,
    /// Seconds a client may run per case before the judge stops it (fails `in_time`).
    pub timeout: f64,
    /// Reports to write.
    pub reports: Vec<ReportTarget>,
    /// `(case id, text)`: add a check that the client's output mentions the text.
    pub expect_output: Vec<(String, String)>,
    /// Name of the judged client in the matrix and the reports (default: the command).
    pub name: Option<String>,
    /// Grade the client on the exchanges of this capture file instead of the scenarios.
    pub replay: Option<PathBuf>,
    /// Divide the captured delays by this (replay only).
    pub replay_speed: f64,
    /// What the capture file may hold (`--replay-max-*`). A line whose captured delay is
    /// over `max_delay_ms` skips its case with a reason instead of refusing the file.
    pub replay_limits: CaptureLimits,
    /// List the cases and their checks instead of running them.
    pub list: bool,
    /// No progress line per case on stderr.
    pub quiet: bool,
    /// Colour the matrix.
    pub color: bool,
    /// Judge a hop instead of a client (`judge --hop`): our own client calls through it.
    pub hop: Option<crate::hop::HopOptions>,
    /// Judge a stdio client (`judge --client-stdio`): a host that spawns `{server}`.
    pub client_stdio: Option<crate::stdio::StdioClientOptions>,
}

impl Default for JudgeOptions {
    /// The command line's defaults: every case, 20 s per case, replay at captured speed.
    fn default() -> JudgeOptions {
        JudgeOptions {
            client: None,
            scenarios: Vec::new(),
            timeout: 20.0,
            reports: Vec::new(),
            expect_output: Vec::new(),
            name: None,
            replay: None,
            replay_speed: 1.0,
            replay_limits: CaptureLimits::default(),
            list: false,
            quiet: false,
            color: false,
            hop: None,
            client_stdio: None,
        }
    }
}

/// Why a judge run could not produce a verdict (a usage or startup error, not a failed check).
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    /// The capture file of `--replay` could not be read.
    #[error("judge --replay {}: {source}", path.display())]
    Capture {
        /// The file.
        path: PathBuf,
        /// Why.
        source: CaptureError,
    },
    /// The capture has no call a client can be asked to make.
    #[error("judge --replay: the capture has no tools/call the client can be asked to make{}", if *.skipped { " (see above)" } else { "" })]
    NoReplayCases {
        /// Some calls were skipped (and said so on stderr).
        skipped: bool,
    },
    /// A replay kitchen could not be set up from the capture.
    #[error("judge --replay: {0}")]
    Replay(CaptureError),
    /// `--scenario` named no case.
    #[error("unknown case {want:?}; cases: {}", ids.join(", "))]
    UnknownCase {
        /// What was asked for.
        want: String,
        /// The case ids there are.
        ids: Vec<String>,
    },
    /// Running cases needs a client command.
    #[error("--client is required")]
    NoClient,
    /// `--expect-output` named a case not selected.
    #[error("--expect-output names {0:?}, which is not a selected case")]
    ExpectUnknownCase(String),
    /// The async runtime did not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    /// The kitchen did not start.
    #[error("kitchen: {0}")]
    Kitchen(KitchenError),
    /// A replay kitchen did not start.
    #[error("replay kitchen: {0}")]
    ReplayKitchen(KitchenError),
    /// `sh` could not be spawned.
    #[error("cannot run the client with sh -c: {0}")]
    Spawn(std::io::Error),
    /// The client command never started (`sh -c` exit 127 or 126).
    #[error("{why} (case {case})")]
    ClientStartup {
        /// What `sh` and the client said.
        why: String,
        /// The case it was run for.
        case: String,
    },
    /// The kitchen's journal did not read back as typed entries.
    #[error("kitchen journal: {0}")]
    Journal(#[from] JournalError),
    /// A report could not be written.
    #[error(transparent)]
    Report(#[from] mcp_triage_report::WriteError),
    /// `--hop` has no `{listen}`: the hop cannot be told where to listen.
    #[error("--hop {0:?} has no {{listen}}: the judge picks the port the hop must listen on (127.0.0.1:PORT)")]
    HopNoListen(String),
    /// The hop never accepted a connection on `{listen}`.
    #[error("the hop {cmd:?} did not start listening on {listen}: {why}{}", if said.is_empty() { String::new() } else { format!("; it said: {said}") })]
    HopNotListening {
        /// The command.
        cmd: String,
        /// Where it should have listened.
        listen: std::net::SocketAddr,
        /// Exited, or the wait ran out.
        why: String,
        /// The tail of its output.
        said: String,
    },
    /// `--hop-labels` without `{labels}` in the command, or `{labels}` without `--hop-labels`.
    #[error("--hop {0:?}: `{{labels}}` (where the hop writes its own labels) and --hop-labels go together")]
    HopLabels(String),
    /// A hop case could not be set up (the kitchen itself, not the hop, failed it).
    #[error("judge --hop: {0}")]
    HopCase(String),
}

/// What `--client` without `{url}` is told: the command gets the case's URL only from the
/// environment, and a client that reads neither talks to some other server (or none).
fn no_url_warning(cmd: &str) -> String {
    format!(
        "judge: warning: --client {cmd:?} has no {{url}}; each case's URL reaches it only as $MCP_TRIAGE_URL"
    )
}

/// Single-quote for `sh`.
pub(crate) fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The cases `--scenario` names: each name is a case id when a case has it, else a kitchen
/// scenario id (every case run on that scenario). A case id comes first because some are also
/// scenario names: `baseline` is a case, and the kitchen scenario five `tasks.*` cases run on.
fn selected(options: &JudgeOptions, all: Vec<CaseDef>) -> Result<Vec<CaseDef>, JudgeError> {
    if options.scenarios.is_empty() {
        return Ok(all);
    }
    let is_case = |want: &str| all.iter().any(|c| c.id == want);
    let mut by_id = Vec::new();
    let mut by_scenario = Vec::new();
    for want in &options.scenarios {
        if is_case(want) {
            by_id.push(want.as_str());
        } else if all.iter().any(|c| c.scenario == want.as_str()) {
            by_scenario.push(want.as_str());
        } else {
            return Err(JudgeError::UnknownCase {
                want: want.clone(),
                ids: all.iter().map(|c| c.id.to_string()).collect(),
            });
        }
    }
    Ok(all
        .into_iter()
        .filter(|c| by_id.contains(&&*c.id) || by_scenario.contains(&&*c.scenario))
        .collect())
}

/// The checks a case is graded by: `tool_called`, its own, then the ones every case has.
pub fn checks_of(c: &CaseDef) -> Vec<CheckKind> {
    let mut v = vec![CheckKind::ToolCalled];
    v.extend_from_slice(&c.checks);
    // Every case can be met by a resend: graded by its effect and its spacing wherever one
    // happens (n/a where none does).
    for k in [CheckKind::NoUnsafeResend, CheckKind::Backoff] {
        if !v.contains(&k) {
            v.push(k);
        }
    }
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

pub(crate) async fn read_bounded<R: tokio::io::AsyncRead + Unpin>(mut r: R) -> String {
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
) -> Result<Run, JudgeError> {
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
        .env(
            "MCP_TRIAGE_REQUEST_TIMEOUT_MS",
            case.client_timeout_ms
                .map(|ms| ms.to_string())
                .unwrap_or_default(),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Its own process group, so a timeout stops the whole client (npx, node, python …).
    #[cfg(unix)]
    command.process_group(0);
    let t0 = Instant::now();
    let mut child = command.spawn().map_err(JudgeError::Spawn)?;
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

/// The cases to run: the kitchen's, or one per captured call of the replayed file (with a
/// line on stderr for each captured call that cannot become a case).
fn load_cases(options: &JudgeOptions) -> Result<(Vec<CaseDef>, Option<Arc<Capture>>), JudgeError> {
    let Some(path) = &options.replay else {
        return Ok((selected(options, cases::all())?, None));
    };
    // Delays are judged per case (one 60 s stream must not refuse the whole file): the file
    // is read without the delay limit, and replay_cases skips the calls over it.
    let read_limits = CaptureLimits {
        max_delay_ms: f64::MAX,
        ..options.replay_limits
    };
    let capture = Capture::read_with(path, &read_limits).map_err(|source| JudgeError::Capture {
        path: path.clone(),
        source,
    })?;
    let (cases, skipped) = replay_cases::cases(&capture, options.replay_limits.max_delay_ms);
    for why in &skipped {
        eprintln!("judge --replay: {why}");
    }
    if cases.is_empty() {
        return Err(JudgeError::NoReplayCases {
            skipped: !skipped.is_empty(),
        });
    }
    Ok((selected(options, cases)?, Some(Arc::new(capture))))
}

/// Run a judge: list the cases, or run the client through each, print the matrix and write
/// the reports. `Ok(true)` when every check passed (or the cases were only listed).
pub fn run(options: &JudgeOptions) -> Result<bool, JudgeError> {
    if let Some(hop) = &options.hop {
        return crate::hop::run(options, hop);
    }
    if let Some(stdio) = &options.client_stdio {
        return crate::stdio::run(options, stdio);
    }
    let (cases, capture) = load_cases(options)?;
    if options.list {
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
        return Ok(true);
    }
    let cmd = options.client.clone().ok_or(JudgeError::NoClient)?;
    if !cmd.contains("{url}") {
        eprintln!("{}", no_url_warning(&cmd));
    }
    for (id, _) in &options.expect_output {
        if !cases.iter().any(|c| c.id == **id) {
            return Err(JudgeError::ExpectUnknownCase(id.clone()));
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(JudgeError::Runtime)?;
    let judged = runtime.block_on(judge(options, &cmd, &cases, capture))?;
    print_matrix(&judged, options.color);
    mcp_triage_report::write_all(&options.reports, &judged.report).map_err(JudgeError::Report)?;
    Ok(judged.report.passed())
}

/// A judged run: the report, and per case the protocol version the client's requests
/// carried (the matrix shows it; the report keeps the journal as JSON).
pub struct Judged {
    /// The report (one suite, one case per case run).
    pub report: Report,
    /// What each case's client negotiated ([`checks::negotiated_version`]), `-` if unknown.
    pub protocols: Vec<String>,
}

/// A kitchen serving the capture from its first line, for one case of a replay run.
async fn replay_kitchen(
    capture: &Arc<Capture>,
    options: &JudgeOptions,
) -> Result<KitchenHandle, JudgeError> {
    let replay = Replay::new(
        capture.clone(),
        ReplayOptions {
            speed: options.replay_speed,
        },
    )
    .map_err(JudgeError::Replay)?;
    start_replay(
        "127.0.0.1:0".parse().expect("loopback address"),
        KitchenOptions::default(),
        replay,
    )
    .await
    .map_err(JudgeError::ReplayKitchen)
}

/// Where the cases run: the kitchen's scenarios (one kitchen, an instance per case), or a
/// capture replayed (a fresh replay kitchen per case, so each starts at the first line of
/// every key).
async fn judge(
    options: &JudgeOptions,
    cmd: &str,
    cases: &[CaseDef],
    capture: Option<Arc<Capture>>,
) -> Result<Judged, JudgeError> {
    let kitchen_options = KitchenOptions::default();
    let sse_retry_ms = kitchen_options.sse_retry_ms;
    let handle = start(
        "127.0.0.1:0".parse().expect("loopback address"),
        kitchen_options,
    )
    .await
    .map_err(JudgeError::Kitchen)?;
    let started = mcp_triage_wire::time::rfc3339(mcp_triage_wire::time::now_ms());
    let t0 = Instant::now();
    let mut out = Vec::new();
    let mut protocols = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        if !options.quiet {
            // When it starts, so a long case shows what is running.
            eprintln!("judge [{}/{}] {} …", i + 1, cases.len(), case.id);
        }
        let at = CaseRun {
            options,
            cmd,
            case,
            tag: format!("judge-{i}"),
            sse_retry_ms,
        };
        match at.run(&handle, capture.as_ref()).await {
            Ok(graded) => {
                if !options.quiet {
                    progress(i, cases.len(), &graded);
                }
                out.push(graded.case);
                protocols.push(graded.protocol);
            }
            Err(e) => {
                handle.shutdown().await;
                return Err(e);
            }
        }
    }
    handle.shutdown().await;
    Ok(Judged {
        report: report(options, cmd, started, t0.elapsed(), out),
        protocols,
    })
}

/// One line per case, on a terminal or not (CI logs show a long run moving).
fn progress(i: usize, of: usize, graded: &Graded) {
    let c = graded.case.counts();
    eprintln!(
        "judge [{}/{of}] {}: pass {}, fail {}, n/a {} ({:.1} s)",
        i + 1,
        graded.case.name,
        c.pass,
        c.fail,
        c.skip,
        graded.elapsed.as_secs_f64()
    );
}

/// One case run and graded.
struct Graded {
    /// The report's case.
    case: Case,
    /// The protocol version the client negotiated (`-` if unknown).
    protocol: String,
    /// How long the client ran.
    elapsed: Duration,
}

/// The report of a run: one suite named after the client, its properties saying how it ran.
fn report(
    options: &JudgeOptions,
    cmd: &str,
    started: String,
    elapsed: Duration,
    cases: Vec<Case>,
) -> Report {
    Report {
        title: "mcp-triage judge".into(),
        started: Some(started),
        suites: vec![Suite {
            name: options.name.clone().unwrap_or_else(|| cmd.to_string()),
            cases,
            duration_ms: Some(elapsed.as_millis() as u64),
            properties: [
                ("client".into(), cmd.to_string()),
                ("mcp-triage".into(), env!("CARGO_PKG_VERSION").into()),
                ("timeout".into(), format!("{} s", options.timeout)),
            ]
            .into_iter()
            .chain(options.replay.as_ref().map(|p| {
                (
                    "replay".to_string(),
                    format!("{} (speed {})", p.display(), options.replay_speed),
                )
            }))
            .collect(),
        }],
        ..Report::default()
    }
}

/// One case of a run: what it needs besides the kitchen.
struct CaseRun<'a> {
    options: &'a JudgeOptions,
    cmd: &'a str,
    case: &'a CaseDef,
    /// The instance tag of the case (`judge-N`), which selects its journal entries.
    tag: String,
    sse_retry_ms: u64,
}

impl CaseRun<'_> {
    /// Run the client once for the case and grade it.
    async fn run(
        &self,
        handle: &KitchenHandle,
        capture: Option<&Arc<Capture>>,
    ) -> Result<Graded, JudgeError> {
        let (options, case) = (self.options, self.case);
        let replayed = match capture {
            None => None,
            Some(c) => Some(replay_kitchen(c, options).await?),
        };
        let url = match (&replayed, capture) {
            (Some(r), Some(c)) => format!(
                "{}{}",
                r.base_url(),
                case.params["path"]
                    .as_str()
                    .map_or_else(|| c.mcp_path(), str::to_owned)
            ),
            _ => format!(
                "{}?instance={}&params={}",
                handle.scenario_url(&case.scenario),
                self.tag,
                mcp_triage_wire::percent::encode(&case.params.to_string())
            ),
        };
        let oauth_before = handle.kitchen().oauth_counters();
        let timeout = Duration::from_secs_f64(options.timeout);
        let run = run_client(self.cmd, case, &url, timeout).await;
        let entries = self.entries(handle, replayed.as_ref());
        if let Some(r) = replayed {
            r.shutdown().await;
        }
        let (run, entries) = (run?, entries?);
        // `sh` says 127/126 when the command is not there; a client that ran and then
        // exited 127 itself (its requests are in the journal) is graded like any other exit.
        if entries.is_empty() {
            if let Some(why) = startup_failure(&run) {
                return Err(JudgeError::ClientStartup {
                    why,
                    case: case.id.to_string(),
                });
            }
        }
        let printed = format!("{}\n{}", run.stdout, run.stderr);
        let oauth = case
            .oauth
            .then(|| checks::counter_delta(&oauth_before, &handle.kitchen().oauth_counters()));
        let cx = checks::Ctx {
            oauth: oauth.as_ref(),
            case,
            entries: &entries,
            sse_retry_ms: self.sse_retry_ms,
            timed_out: run.timed_out,
            timeout_s: options.timeout,
            exit: run.exit,
            output: &printed,
        };
        let mut graded: Vec<Check> = checks::grade_all(&checks_of(case), &cx);
        for (_, text) in options
            .expect_output
            .iter()
            .filter(|(id, _)| *id == case.id)
        {
            graded.push(output_mentions(&printed, text));
        }
        let protocol = checks::negotiated_version(&entries).unwrap_or_else(|| "-".into());
        let mut case = self.case_report(&run, &entries, graded);
        case.properties
            .push(("protocol".to_string(), protocol.clone()));
        Ok(Graded {
            protocol,
            elapsed: run.elapsed,
            case,
        })
    }

    /// The journal entries of this case: all of its replay kitchen's, or those of its
    /// instance (`scenario#judge-N`) in the shared kitchen.
    fn entries(
        &self,
        handle: &KitchenHandle,
        replayed: Option<&KitchenHandle>,
    ) -> Result<Vec<JournalEntry>, JudgeError> {
        if let Some(r) = replayed {
            return Ok(r.kitchen().journal_entries()?);
        }
        let suffix = format!("#{}", self.tag);
        Ok(handle
            .kitchen()
            .journal_entries()?
            .into_iter()
            .filter(|e| e.instance.as_deref().is_some_and(|s| s.ends_with(&suffix)))
            .collect())
    }

    /// The report's case: the checks, the journal (as the JSON the kitchen serves) and what
    /// the client printed.
    fn case_report(&self, run: &Run, entries: &[JournalEntry], checks: Vec<Check>) -> Case {
        Case {
            properties: Vec::new(),
            name: self.case.id.to_string(),
            journal: entries
                .iter()
                .map(|e| serde_json::to_value(e).expect("a JournalEntry serializes"))
                .collect(),
            checks,
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
        }
    }
}

/// `--expect-output`: does the client's output mention `text` (case-insensitively)?
fn output_mentions(printed: &str, text: &str) -> Check {
    let found = printed.to_lowercase().contains(&text.to_lowercase());
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
    .with_references(["judge: --expect-output (does the client report what happened?)"])
}

/// The scenario × check matrix, then every failure with its evidence.
fn print_matrix(judged: &Judged, color: bool) {
    let paint = |s: String, code: &str| {
        if color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s
        }
    };
    let report = &judged.report;
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
        let versions = &judged.protocols;
        let wv = versions.iter().map(String::len).max().unwrap_or(0).max(8);
        println!("judge: {}", suite.name);
        print!("{:<w0$}  {:<wv$}", "case", "protocol");
        for c in &cols {
            print!("  {c}");
        }
        println!();
        for (case, version) in suite.cases.iter().zip(versions) {
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
            print_failures(case, &paint);
        }
    }
    let c = report.counts();
    println!(
        // Not "N passed, N failed": CI log readers take that shape for a test runner's.
        "\nchecks: pass {}, fail {}, n/a {}",
        c.pass, c.fail, c.skip
    );
}

/// Every failed check of a case with its evidence; when the tool was never called, the tail
/// of what the client said (nothing else to go on).
fn print_failures(case: &Case, paint: &dyn Fn(String, &str) -> String) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(sh_quote("a'b"), r"'a'\''b'");
        assert_eq!(
            mcp_triage_wire::percent::encode(r#"{"a":[1]}"#),
            "%7B%22a%22%3A%5B1%5D%7D"
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

    #[test]
    fn a_client_without_url_is_warned() {
        let w = no_url_warning("node c.mjs");
        assert!(
            w.contains("has no {url}") && w.contains("$MCP_TRIAGE_URL"),
            "{w}"
        );
    }

    /// Issue 45: `--scenario baseline` ran six cases, the five `tasks.*` cases too (they run on
    /// the kitchen scenario `baseline`). A case id is matched first.
    #[test]
    fn a_case_id_is_matched_before_a_scenario_id() {
        let pick = |names: &[&str]| {
            let o = JudgeOptions {
                scenarios: names.iter().map(|n| n.to_string()).collect(),
                ..JudgeOptions::default()
            };
            let ids: Vec<String> = selected(&o, cases::all())
                .unwrap()
                .iter()
                .map(|c| c.id.to_string())
                .collect();
            ids
        };
        assert_eq!(pick(&["baseline"]), ["baseline"]);
        let all = cases::all();
        let on_scenario = |scenario: &str| all.iter().filter(|c| c.scenario == scenario).count();
        let by_scenario = all
            .iter()
            .find(|c| !all.iter().any(|d| d.id == c.scenario) && on_scenario(&c.scenario) > 0)
            .map(|c| c.scenario.to_string())
            .expect("a scenario id that is no case id");
        assert_eq!(
            pick(&[by_scenario.as_str()]).len(),
            on_scenario(&by_scenario)
        );
    }

    #[test]
    fn an_unknown_case_names_the_cases() {
        let o = JudgeOptions {
            scenarios: vec!["nope".into()],
            ..JudgeOptions::default()
        };
        let e = selected(&o, cases::all()).unwrap_err().to_string();
        assert!(e.starts_with("unknown case \"nope\"; cases: "), "{e}");
        assert!(e.contains("errors.tool_error"), "{e}");
    }
}
