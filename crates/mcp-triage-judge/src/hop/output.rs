//! What `judge --hop` prints and writes: the matrix (one line per case, its grade's name),
//! every finding with its evidence, and the report (junit, html, json, tap) with one check per
//! finding, named by the grade's stable id.

use std::time::Duration;

use mcp_triage_report::{Case, Check, Report, Status, Suite};

use super::grade::Grade;
use super::{HopOptions, HopResult};
use crate::run::JudgeOptions;

/// Where the grades are explained, for the reports' references.
const DOCS: &str = "docs/hops.md (judge --hop: grades and accepted mappings)";

/// The matrix, then each finding with its evidence.
pub fn print_matrix(results: &[HopResult], cmd: &str, color: bool) {
    let paint = |s: String, code: &str| {
        if color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s
        }
    };
    let w0 = results
        .iter()
        .map(|r| r.case.id.len())
        .max()
        .unwrap_or(4)
        .max(4);
    println!("judge --hop: {cmd}");
    let labelled = results.iter().any(|r| r.label.is_some());
    if labelled {
        println!("{:<w0$}  {:<12}  grade", "case", "label");
    } else {
        println!("{:<w0$}  grade", "case");
    }
    for r in results {
        let g = r.grade();
        let code = if g == Grade::Kept { "32" } else { "1;31" };
        if labelled {
            let (cell, code) = match &r.label {
                None => ("-", "2"),
                Some(l) if l.right => ("label right", "32"),
                Some(_) => ("LABEL WRONG", "1;31"),
            };
            print!(
                "{:<w0$}  {}  ",
                r.case.id,
                paint(format!("{cell:<12}"), code)
            );
        } else {
            print!("{:<w0$}  ", r.case.id);
        }
        let also: Vec<&str> = r
            .findings
            .iter()
            .map(|f| f.grade)
            .filter(|k| *k != g && *k != Grade::Kept)
            .map(Grade::name)
            .collect();
        println!(
            "{}{}",
            paint(g.name().to_string(), code),
            if also.is_empty() {
                String::new()
            } else {
                format!(" (also: {})", also.join(", "))
            }
        );
    }
    for r in results {
        for f in &r.findings {
            let head = if f.grade == Grade::Kept {
                paint("KEPT".into(), "32")
            } else {
                paint(f.grade.name().to_uppercase(), "1;31")
            };
            println!("\n{head} {}: {}", r.case.id, f.message);
            for e in &f.evidence {
                println!("  evidence: {e}");
            }
        }
        if let Some(l) = r.label.as_ref().filter(|l| !l.right) {
            println!(
                "\n{} {}: {}",
                paint("LABEL WRONG".into(), "1;31"),
                r.case.id,
                l.message
            );
            for e in &l.evidence {
                println!("  evidence: {e}");
            }
        }
    }
    let kept = results.iter().filter(|r| r.grade() == Grade::Kept).count();
    print!("\ncases: kept {kept}, not kept {}", results.len() - kept);
    if labelled {
        let wrong = results
            .iter()
            .filter(|r| r.label.as_ref().is_some_and(|l| !l.right))
            .count();
        print!("; labels wrong {wrong}");
    }
    println!();
}

/// The report's case: one check per finding (a `kept` check when there is none, or when the
/// only finding is an accepted mapping).
fn case(r: &HopResult) -> Case {
    let mut checks: Vec<Check> = r
        .findings
        .iter()
        .map(|f| {
            let status = if f.grade == Grade::Kept {
                Status::Pass
            } else {
                Status::Fail
            };
            Check::new(
                f.grade.id(),
                status,
                format!("{}: {}", f.grade.name(), f.message),
            )
            .with_evidence(f.evidence.iter().cloned())
            .with_references([DOCS])
        })
        .collect();
    if checks.is_empty() {
        checks.push(
            Check::new(
                Grade::Kept.id(),
                Status::Pass,
                "kept: the client got what the kitchen sent",
            )
            .with_references([DOCS]),
        );
    }
    if let Some(l) = &r.label {
        let status = if l.right { Status::Pass } else { Status::Fail };
        checks.push(
            Check::new("label_right", status, l.message.clone())
                .with_evidence(l.evidence.iter().cloned())
                .with_references([DOCS]),
        );
    }
    Case {
        name: r.case.id.clone(),
        checks,
        journal: r.journal.clone(),
        duration_ms: Some(r.elapsed.as_millis() as u64),
        output: r.delivered.clone(),
        properties: vec![("grade".to_string(), r.grade().name().to_string())],
    }
}

/// The report of a hop run: one suite named after the hop.
pub fn report(
    options: &JudgeOptions,
    hop: &HopOptions,
    results: &[HopResult],
    elapsed: Duration,
) -> Report {
    let mut properties = vec![
        ("hop".to_string(), hop.command.clone()),
        ("mcp-triage".into(), env!("CARGO_PKG_VERSION").into()),
        ("timeout".into(), format!("{} s", options.timeout)),
    ];
    if let Some(p) = &hop.fixed_path {
        properties.push(("fixed path".into(), p.clone()));
    }
    Report {
        title: "mcp-triage judge --hop".into(),
        started: Some(mcp_triage_wire::time::rfc3339(
            mcp_triage_wire::time::now_ms().saturating_sub(elapsed.as_millis() as u64),
        )),
        suites: vec![Suite {
            name: options.name.clone().unwrap_or_else(|| hop.command.clone()),
            cases: results.iter().map(case).collect(),
            duration_ms: Some(elapsed.as_millis() as u64),
            properties,
        }],
        ..Report::default()
    }
}
