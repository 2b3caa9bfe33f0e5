//! `mcp-triage probe`: what a server speaks and offers, what is wrong with its tool list, and
//! how it answers the mistakes clients make ([`super::probe_checks`]: an unknown session id,
//! an unknown tool, invalid arguments, the error codes). Tools run only with
//! `--call-read-only` (tools annotated readOnlyHint whose input schema requires nothing,
//! called with `{}`); the checks call a generated name that is not listed and send invalid
//! arguments only to read-only tools, which a server rejects before running anything. The
//! arguments are read in `args.rs` and checked and resolved once in `config.rs`.

mod args;
mod config;

pub use args::ProbeArgs;
pub use config::{config, ProbeConfig};

use crate::exit::Exit;
use std::collections::HashSet;
use std::process::ExitCode;

use mcp_triage_client::{CallOptions, Client, ClientOptions, ConnectError, VersionChoice};
use mcp_triage_core::{Outcome, ProtocolVersion};
use mcp_triage_report::{Case, Check, Report, Status, Suite, WriteError};
use serde_json::{json, Value};

use super::client_args::{runtime, ArgsError};
use super::format::Format;
use super::probe_checks::{self, Finding};

pub const EXAMPLES: &str = "\
Examples:
  mcp-triage probe http://127.0.0.1:8765/mcp                  # eras, versions, capabilities, tools/list
                                                              # problems, behaviour checks
  mcp-triage probe http://127.0.0.1:8765/mcp --no-checks      # no tools/call at all
  mcp-triage probe http://127.0.0.1:8765/mcp --call-read-only # also call every read-only tool
  mcp-triage probe --stdio 'python server.py' --report junit:probe.xml";

async fn era_probe(
    target: mcp_triage_client::Target,
    base: &ClientOptions,
    v: ProtocolVersion,
) -> Value {
    let opts = ClientOptions {
        protocol: VersionChoice::Fixed(v),
        ..base.clone()
    };
    let Ok(c) = Client::connect(target, opts).await else {
        return json!({ "supported": false, "detail": "could not connect" });
    };
    let r = c.list_tools().await.map_err(|e| e.to_string());
    let negotiated = c.protocol_version().await;
    c.close().await;
    match r {
        Ok(_) => json!({ "supported": true, "negotiated": negotiated }),
        Err(e) => json!({ "supported": false, "detail": e }),
    }
}

/// Why `probe` did not probe (what it finds is its output and exit status, not this).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// The connection, client or input options cannot be used.
    #[error(transparent)]
    Args(#[from] ArgsError),
    /// The server could not be reached or set up.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// A `--report` file could not be written.
    #[error(transparent)]
    Report(#[from] WriteError),
}

pub fn run(config: ProbeConfig) -> Result<ExitCode, ProbeError> {
    let ProbeConfig {
        target,
        client: opts,
        call_read_only,
        checks,
        format,
        reports,
    } = config;
    let rt = runtime()?;
    let started = mcp_triage_wire::time::rfc3339(mcp_triage_wire::time::now_ms());
    let t0 = std::time::Instant::now();
    let is_http = matches!(target, mcp_triage_client::Target::Http { .. });
    let report = rt.block_on(async {
        let client = Client::connect(target.clone(), opts.clone()).await?;
        let tools = client.list_tools().await.map_err(|e| e.to_string());
        let mut report = json!({
            "target": target.describe(),
            "protocolVersion": client.protocol_version().await,
            "serverInfo": client.server_info().await,
            "capabilities": client.discover_capabilities().await,
        });
        if is_http && opts.protocol == VersionChoice::Auto {
            report["eras"] = json!({
                "2026-07-28": era_probe(target.clone(), &opts, ProtocolVersion::V2026_07_28).await,
                "legacy (initialize 2025-11-25)": era_probe(target.clone(), &opts, ProtocolVersion::V2025_11_25).await,
            });
        }
        let tools = match tools {
            Ok(t) => t,
            Err(e) => {
                let stderr = client.server_stderr_tail().await;
                if !stderr.is_empty() {
                    report["serverStderr"] = json!(stderr);
                }
                client.close().await;
                report["toolsError"] = json!(e);
                return Ok::<_, ProbeError>(report);
            }
        };
        let mut names = HashSet::new();
        let mut list = Vec::new();
        let mut codes = Vec::new();
        for t in &tools {
            let mut problems = super::tool_checks::tool_problems(t);
            if !names.insert(t.name.clone()) {
                problems.push("the name is listed twice".to_string());
            }
            let mut entry = json!({ "name": t.name, "annotations": t.annotations, "problems": problems });
            let no_required = t.definition["inputSchema"]["required"].as_array().is_none_or(|r| r.is_empty());
            if call_read_only && t.hints.read_only == Some(true) && no_required {
                let r = client.call_tool(&t.name, json!({}), CallOptions::default()).await;
                entry["call"] = json!({ "layer": r.layer, "outcome": r.outcome, "message": r.message });
                if let Some(c) = r.jsonrpc.error_code.filter(|_| r.outcome == Outcome::JsonrpcError) {
                    codes.push((format!("read-only call of {:?}", t.name), c));
                }
            }
            list.push(entry);
        }
        if checks {
            report["checks"] = json!(probe_checks::run(&client, &tools, &target, &opts, &codes).await);
        }
        client.close().await;
        report["tools"] = json!(list);
        Ok(report)
    })?;
    let problems: usize = report["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["problems"].as_array().map_or(0, Vec::len))
                .sum()
        })
        .unwrap_or(0);
    let check_problems = report["checks"].as_array().map_or(0, |a| {
        a.iter()
            .filter(|c| c["status"] == Finding::Problem.as_str())
            .count()
    });
    match format {
        Format::Json => outln!("{report}"),
        Format::Text => print_text(&report, problems, check_problems),
    }
    if !reports.is_empty() {
        let mut r = probe_report(&report);
        r.started = Some(started);
        r.suites[0].duration_ms = Some(t0.elapsed().as_millis() as u64);
        mcp_triage_report::write_all(&reports, &r)?;
    }
    if report.get("toolsError").is_some() {
        return Ok(Exit::Transport.into());
    }
    Ok(if problems + check_problems > 0 {
        Exit::Protocol.into()
    } else {
        ExitCode::SUCCESS
    })
}

/// The readable account of a probe's findings (the JSON `--format json` prints).
fn print_text(report: &Value, problems: usize, check_problems: usize) {
    outln!("target: {}", report["target"].as_str().unwrap_or(""));
    outln!(
        "protocol: {}",
        report["protocolVersion"].as_str().unwrap_or("")
    );
    if let Some(i) = report["serverInfo"].as_object() {
        outln!(
            "server: {} {}",
            i["name"].as_str().unwrap_or(""),
            i.get("version").and_then(Value::as_str).unwrap_or("")
        );
    }
    let tools_error = report["toolsError"].as_str();
    if let Some(e) = report["eras"].as_object() {
        for (era, r) in e {
            let detail = r["detail"].as_str().unwrap_or("");
            outln!(
                "era {era}: {}",
                if r["supported"] == true {
                    format!("yes ({})", r["negotiated"].as_str().unwrap_or(""))
                } else if tools_error.is_some_and(|t| same_failure(t, detail)) {
                    "no (the failure below)".to_string()
                } else {
                    format!("no — {detail}")
                }
            );
        }
    }
    if !report["capabilities"].is_null() {
        outln!("capabilities: {}", report["capabilities"]);
    }
    if let Some(e) = tools_error {
        // the client's error already says which request failed (initialize or tools/list)
        if e.starts_with("tools/list failed") {
            outln!("{e}");
        } else {
            outln!("tools/list failed: {e}");
        }
        let stderr: Vec<String> = report["serverStderr"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|l| l.as_str().map(str::to_string))
            .collect();
        let block = super::client_args::stderr_block(&stderr);
        if !block.is_empty() {
            outln!("{}", block.trim_end());
        }
    }
    for t in report["tools"].as_array().into_iter().flatten() {
        outln!("tool {}", t["name"].as_str().unwrap_or(""));
        for p in t["problems"].as_array().into_iter().flatten() {
            outln!("  problem: {}", p.as_str().unwrap_or(""));
        }
        if let Some(c) = t.get("call") {
            outln!(
                "  call {{}}: {}/{} {}",
                c["layer"].as_str().unwrap_or(""),
                c["outcome"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or("")
            );
        }
    }
    if tools_error.is_some() {
        // nothing was checked: "0 problem(s)" would read as a clean bill of health
        outln!("tools/list was not checked: the server did not list its tools");
    } else {
        outln!("{problems} problem(s) in tools/list");
    }
    for c in report["checks"].as_array().into_iter().flatten() {
        outln!(
            "check {}: {} — {}",
            c["check"].as_str().unwrap_or(""),
            c["status"].as_str().unwrap_or(""),
            c["detail"].as_str().unwrap_or("")
        );
    }
    if report["checks"].is_array() {
        outln!("{check_problems} problem(s) in the checks");
    }
}

/// Whether two failure texts name the same failure: the same text after the request name
/// ("initialize failed: ", "tools/list failed: "), so an era probe that failed exactly as
/// the main connection did is not printed a second time.
fn same_failure(a: &str, b: &str) -> bool {
    let cause = |s: &str| s.rsplit_once("failed: ").map_or(s, |(_, c)| c).to_string();
    !b.is_empty() && cause(a) == cause(b)
}

/// A listed tool's case in the probe report: its definition's problems, and its read-only
/// call when one was made.
fn tool_case(t: &Value) -> Case {
    let problems: Vec<&str> = t["problems"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut checks = vec![if problems.is_empty() {
        Check::new("definition", Status::Pass, "no problem found")
    } else {
        Check::new(
            "definition",
            Status::Fail,
            format!("{} problem(s) in the definition", problems.len()),
        )
        .with_evidence(problems)
        .with_references(["spec: server/tools (Tool definition, inputSchema, x-mcp-header)"])
    }];
    if let Some(c) = t.get("call") {
        let ok = c["outcome"] == "TOOL_SUCCESS";
        checks.push(Check::new(
            "call",
            if ok { Status::Pass } else { Status::Fail },
            format!(
                "called with {{}}: {}/{} {}",
                c["layer"].as_str().unwrap_or(""),
                c["outcome"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or("")
            )
            .trim_end()
            .to_string(),
        ));
    }
    Case {
        properties: Vec::new(),
        name: format!("tool {}", t["name"].as_str().unwrap_or("")),
        checks,
        ..Case::default()
    }
}

/// The probe's findings (the JSON that `--format json` prints) as a report: one case per
/// era (`supported`; an era the server does not speak is skipped, not failed, because a server
/// need not speak both), one per capability the server declared (`declared`, its JSON as
/// evidence), `tools/list` when it failed, and one per tool (`definition`: fails with one
/// evidence line per problem; `call` when `--call-read-only` called it: fails unless the
/// tool succeeded), and one per behaviour check (`behaviour`: a problem fails, a note passes
/// with "note:", a check that could not run safely is skipped). So the report fails exactly
/// when the probe found something wrong.
fn probe_report(p: &Value) -> Report {
    let mut cases = Vec::new();
    for (era, r) in p["eras"].as_object().into_iter().flatten() {
        let check = if r["supported"] == true {
            Check::new(
                "supported",
                Status::Pass,
                format!("negotiated {}", r["negotiated"].as_str().unwrap_or("?")),
            )
        } else {
            Check::new(
                "supported",
                Status::Skip,
                format!("not spoken: {}", r["detail"].as_str().unwrap_or("")),
            )
        };
        cases.push(Case {
            properties: Vec::new(),
            name: format!("era {era}"),
            checks: vec![check],
            ..Case::default()
        });
    }
    for (cap, v) in p["capabilities"].as_object().into_iter().flatten() {
        cases.push(Case {
            properties: Vec::new(),
            name: format!("capability {cap}"),
            checks: vec![
                Check::new("declared", Status::Pass, "declared by the server")
                    .with_evidence([v.to_string()]),
            ],
            ..Case::default()
        });
    }
    if let Some(e) = p["toolsError"].as_str() {
        cases.push(Case {
            properties: Vec::new(),
            name: "tools/list".into(),
            checks: vec![Check::new("listed", Status::Fail, e)],
            ..Case::default()
        });
    }
    for t in p["tools"].as_array().into_iter().flatten() {
        cases.push(tool_case(t));
    }
    for c in p["checks"].as_array().into_iter().flatten() {
        let detail = c["detail"].as_str().unwrap_or("");
        let (status, message) = match c["status"].as_str() {
            Some("problem") => (Status::Fail, detail.to_string()),
            Some("note") => (Status::Pass, format!("note: {detail}")),
            Some("skip") => (Status::Skip, detail.to_string()),
            _ => (Status::Pass, detail.to_string()),
        };
        cases.push(Case {
            properties: Vec::new(),
            name: format!("check {}", c["check"].as_str().unwrap_or("")),
            checks: vec![Check::new("behaviour", status, message).with_references([
                "spec: server/tools (Error Handling), basic/transports (Session Management)",
            ])],
            ..Case::default()
        });
    }
    let mut properties = vec![(
        "target".to_string(),
        p["target"].as_str().unwrap_or("").to_string(),
    )];
    if let Some(v) = p["protocolVersion"].as_str() {
        properties.push(("protocol".into(), v.into()));
    }
    if let Some(i) = p["serverInfo"].as_object() {
        let name = i.get("name").and_then(Value::as_str).unwrap_or("");
        let version = i.get("version").and_then(Value::as_str).unwrap_or("");
        properties.push(("server".into(), format!("{name} {version}").trim().into()));
    }
    properties.push(("mcp-triage".into(), env!("CARGO_PKG_VERSION").into()));
    Report {
        title: "mcp-triage probe".into(),
        suites: vec![Suite {
            name: format!("probe: {}", p["target"].as_str().unwrap_or("")),
            cases,
            properties,
            ..Suite::default()
        }],
        ..Report::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_has_a_case_per_era_capability_and_tool() {
        let p = json!({
            "target": "http://127.0.0.1:1/mcp",
            "protocolVersion": "2026-07-28",
            "serverInfo": { "name": "k", "version": "1" },
            "capabilities": { "tools": {}, "logging": {} },
            "eras": {
                "2026-07-28": { "supported": true, "negotiated": "2026-07-28" },
                "legacy": { "supported": false, "detail": "400" }
            },
            "tools": [
                { "name": "ok", "problems": [], "call": { "layer": "application", "outcome": "TOOL_SUCCESS", "message": "" } },
                { "name": "bad", "problems": ["one", "two"] }
            ]
        });
        let r = probe_report(&p);
        let names: Vec<&str> = r.suites[0].cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "era 2026-07-28",
                "era legacy",
                "capability logging",
                "capability tools",
                "tool ok",
                "tool bad"
            ]
        );
        let c = r.counts();
        assert_eq!((c.pass, c.fail, c.skip), (5, 1, 1));
        let bad = &r.suites[0].cases[5].checks[0];
        assert_eq!(bad.evidence, ["one", "two"]);
        assert!(!r.passed());
    }
}
