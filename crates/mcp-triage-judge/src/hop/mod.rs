//! `judge --hop`: grade a hop (gateway, bridge, proxy) instead of a client. The kitchen runs
//! in-process; the hop runs as `sh -c CMD` with `{upstream}` = the kitchen's base URL and
//! `{listen}` = a free `127.0.0.1:PORT`; our own client ([`mcp_triage_client`]) calls each case
//! through the hop. The truth is the kitchen's journal (the core's verdict of the bytes the
//! kitchen sent, which calls ran); what the client got is the same core's verdict of the bytes
//! that came out of the hop. [`grade`] compares them.
//!
//! ```text
//! our client ──▶ hop (CMD, on {listen}) ──▶ kitchen ({upstream}) ──writes──▶ journal
//!      │                                                                       │
//!      └── CallRecord (delivered) ──────────▶ grade ◀──────── truth ───────────┘
//! ```
//!
//! - [`cases`]: which cases a hop is judged on; [`grade`]: the grades and the accepted
//!   mappings; [`runner`]: one case run; [`stream`]: the first-event timing;
//!   [`process`]: the hop process (bounded start, group stop).

pub mod cases;
pub mod grade;
pub mod labels;
mod output;
mod process;
mod runner;
pub mod stream;

use std::time::{Duration, Instant};

use mcp_triage_kitchen::{start, KitchenOptions};

use crate::run::JudgeOptions;
use crate::JudgeError;
use cases::HopCase;
use process::{command_line, free_port, HopProcess};

pub use grade::{Finding, Front, Grade};

/// The run's scratch directory (the labels file), removed however the run ends.
struct ScratchDir(std::path::PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How long a hop's labels of a case may lag behind our client's answer.
const LABEL_SETTLE: Duration = Duration::from_secs(2);

/// How `judge --hop` runs the hop.
#[derive(Clone, Debug)]
pub struct HopOptions {
    /// The hop command, run with `sh -c`; `{upstream}` and `{listen}` are filled in.
    pub command: String,
    /// Serve every case on this one path (`/mcp`) for a hop that forwards only it: the
    /// kitchen switches its selection per case (see [`runner`]).
    pub fixed_path: Option<String>,
    /// How long the hop may take to start listening.
    pub start_timeout: Duration,
    /// The hop labels outcomes itself, in a file the judge names as `{labels}`: whose lines
    /// they are (the *label right* column).
    pub labels: Option<labels::LabelSource>,
}

impl Default for HopOptions {
    fn default() -> HopOptions {
        HopOptions {
            command: String::new(),
            fixed_path: None,
            start_timeout: Duration::from_secs(15),
            labels: None,
        }
    }
}

/// One case judged.
pub struct HopResult {
    /// The case.
    pub case: HopCase,
    /// Its findings (empty: kept).
    pub findings: Vec<Finding>,
    /// The kitchen's journal of the case, as evidence lines.
    pub journal: Vec<serde_json::Value>,
    /// What the client got (its record as JSON, or what stood in for it).
    pub delivered: String,
    /// How long the case took.
    pub elapsed: Duration,
    /// The journal's `tools/call` entries of the case's tool (what the hop's labels answer).
    pub calls: Vec<mcp_triage_kitchen::journal::JournalEntry>,
    /// The hop's own labels against the journal, when it labels (`--hop-labels`) and the
    /// case is a call.
    pub label: Option<labels::LabelVerdict>,
}

impl HopResult {
    /// The case's grade: its worst finding.
    pub fn grade(&self) -> Grade {
        grade::worst(&self.findings)
    }

    /// Kept, and labelled right where the hop labels.
    pub fn passed(&self) -> bool {
        self.grade() == Grade::Kept && self.label.as_ref().is_none_or(|l| l.right)
    }
}

/// The cases `--scenario` selects: a case id, else a kitchen scenario (all its cases).
fn selected(options: &JudgeOptions) -> Result<Vec<HopCase>, JudgeError> {
    let all = cases::all();
    if options.scenarios.is_empty() {
        return Ok(all);
    }
    for want in &options.scenarios {
        if !all.iter().any(|c| c.id == *want || c.scenario == want) {
            return Err(JudgeError::UnknownCase {
                want: want.clone(),
                ids: all.iter().map(|c| c.id.clone()).collect(),
            });
        }
    }
    Ok(all
        .into_iter()
        .filter(|c| {
            options
                .scenarios
                .iter()
                .any(|w| c.id == *w || c.scenario == w)
        })
        .collect())
}

/// Run `judge --hop`: list the cases, or start the kitchen and the hop, judge every case,
/// print the matrix and write the reports. `Ok(true)` when every case is kept.
pub fn run(options: &JudgeOptions, hop: &HopOptions) -> Result<bool, JudgeError> {
    let cases = selected(options)?;
    if options.list {
        for c in &cases {
            println!("{:<52} {}", c.id, cases::describe(c));
        }
        return Ok(true);
    }
    if !hop.command.contains("{listen}") {
        return Err(JudgeError::HopNoListen(hop.command.clone()));
    }
    if hop.labels.is_some() != hop.command.contains("{labels}") {
        return Err(JudgeError::HopLabels(hop.command.clone()));
    }
    if !hop.command.contains("{upstream}") {
        eprintln!(
            "judge: warning: --hop {:?} has no {{upstream}}; the hop must find the kitchen some other way",
            hop.command
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(JudgeError::Runtime)?;
    let (results, elapsed) = runtime.block_on(judge(options, hop, &cases))?;
    output::print_matrix(&results, &hop.command, options.color);
    let report = output::report(options, hop, results.as_slice(), elapsed);
    mcp_triage_report::write_all(&options.reports, &report)?;
    Ok(results.iter().all(HopResult::passed))
}

/// Start the kitchen and the hop, run every case, stop both (also on error).
async fn judge(
    options: &JudgeOptions,
    hop: &HopOptions,
    cases: &[HopCase],
) -> Result<(Vec<HopResult>, Duration), JudgeError> {
    let kitchen = start(
        "127.0.0.1:0".parse().expect("loopback address"),
        KitchenOptions::default(),
    )
    .await
    .map_err(JudgeError::Kitchen)?;
    let listen = free_port()?;
    let mut line = command_line(&hop.command, &kitchen.base_url(), listen);
    let dir = ScratchDir(std::env::temp_dir().join(format!(
        "mcp-triage-hop-{}-{}",
        std::process::id(),
        mcp_triage_wire::time::now_ms()
    )));
    let mut labels = match hop.labels {
        None => None,
        Some(source) => {
            let made = std::fs::create_dir_all(&dir.0)
                .and_then(|()| labels::Labels::create(source, &dir.0.join("labels.jsonl")));
            match made {
                Ok(l) => {
                    let path = l.path().display().to_string();
                    line = line.replace("{labels}", &crate::run::sh_quote(&path));
                    Some(l)
                }
                Err(e) => {
                    kitchen.shutdown().await;
                    return Err(JudgeError::Spawn(e));
                }
            }
        }
    };
    let mut process = match HopProcess::spawn(&line) {
        Ok(p) => p,
        Err(e) => {
            kitchen.shutdown().await;
            return Err(e);
        }
    };
    if let Err(e) = process
        .wait_listening(&hop.command, listen, hop.start_timeout)
        .await
    {
        kitchen.shutdown().await;
        return Err(e);
    }
    let t0 = Instant::now();
    let mut results = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        if !options.quiet {
            eprintln!("judge --hop [{}/{}] {} …", i + 1, cases.len(), case.id);
        }
        let at = runner::At {
            kitchen: &kitchen,
            listen,
            fixed_path: hop.fixed_path.as_deref(),
            tag: format!("hop-{i}"),
            limit: Duration::from_secs_f64(options.timeout),
        };
        if let Some(l) = labels.as_mut() {
            l.skip();
        }
        let r = match at.run(case).await {
            Ok(mut r) => {
                if let (Some(l), cases::HopKind::Call(row)) = (labels.as_mut(), &case.kind) {
                    let calls: Vec<_> = r.calls.iter().collect();
                    r.label = Some(l.judge(&calls, row.tool, LABEL_SETTLE).await);
                }
                r
            }
            Err(e) => {
                process.stop().await;
                kitchen.shutdown().await;
                return Err(e);
            }
        };
        if !options.quiet {
            eprintln!(
                "judge --hop [{}/{}] {}: {} ({:.1} s)",
                i + 1,
                cases.len(),
                case.id,
                r.grade().name(),
                r.elapsed.as_secs_f64()
            );
        }
        results.push(r);
    }
    let elapsed = t0.elapsed();
    process.stop().await;
    kitchen.shutdown().await;
    Ok((results, elapsed))
}
