//! JUnit XML (the Ant/Surefire dialect that Jenkins, GitLab, GitHub test reporters and
//! `junitparser` read). One `<testsuite>` per suite, one `<testcase>` per check with
//! `classname` = `suite.case`, so a CI shows the scenario × check matrix as test names.
//! Evidence and references go into the `<failure>` / `<skipped>` text, because that is the
//! part every consumer displays.

use std::io::{self, Write};

use crate::model::{Check, Report, Status, Suite};
use crate::xml::{attr, text};

fn secs(ms: Option<u64>) -> String {
    format!("{:.3}", ms.unwrap_or(0) as f64 / 1000.0)
}

/// Write `report` as JUnit XML.
pub fn write(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    let c = report.counts();
    let total_ms: u64 = report.suites.iter().filter_map(|s| s.duration_ms).sum();
    writeln!(w, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        w,
        r#"<testsuites name="{}" tests="{}" failures="{}" errors="0" skipped="{}" time="{}">"#,
        attr(&report.title),
        c.total(),
        c.fail,
        c.skip,
        secs(Some(total_ms))
    )?;
    for (i, suite) in report.suites.iter().enumerate() {
        write_suite(report, i, suite, w)?;
    }
    writeln!(w, "</testsuites>")
}

/// One `<testsuite>`: its counts, the report's start as its timestamp, its properties, and a
/// `<testcase>` per check of each case.
fn write_suite(report: &Report, i: usize, suite: &Suite, w: &mut dyn Write) -> io::Result<()> {
    let sc = suite.counts();
    write!(
        w,
        r#"  <testsuite name="{}" id="{i}" tests="{}" failures="{}" errors="0" skipped="{}" time="{}""#,
        attr(&suite.name),
        sc.total(),
        sc.fail,
        sc.skip,
        secs(suite.duration_ms)
    )?;
    if let Some(t) = &report.started {
        write!(w, r#" timestamp="{}""#, attr(t.trim_end_matches('Z')))?;
    }
    writeln!(w, ">")?;
    if !suite.properties.is_empty() {
        writeln!(w, "    <properties>")?;
        for (k, v) in &suite.properties {
            writeln!(
                w,
                r#"      <property name="{}" value="{}"/>"#,
                attr(k),
                attr(v)
            )?;
        }
        writeln!(w, "    </properties>")?;
    }
    for case in &suite.cases {
        let classname = format!("{}.{}", suite.name, case.name);
        for check in &case.checks {
            write_testcase(check, &classname, w)?;
        }
    }
    writeln!(w, "  </testsuite>")
}

/// One `<testcase>`: a pass is empty (its evidence, when any, as `<system-out>`), a failure
/// and a skip carry the check's message, and a failure the evidence as its text, which is
/// what every consumer displays.
fn write_testcase(check: &Check, classname: &str, w: &mut dyn Write) -> io::Result<()> {
    write!(
        w,
        r#"    <testcase name="{}" classname="{}" time="{}""#,
        attr(&check.name),
        attr(classname),
        secs(check.duration_ms)
    )?;
    let body = evidence_text(check);
    match check.status {
        Status::Pass => {
            if body.is_empty() {
                writeln!(w, "/>")?;
            } else {
                writeln!(w, ">")?;
                writeln!(w, "      <system-out>{}</system-out>", text(&body))?;
                writeln!(w, "    </testcase>")?;
            }
        }
        Status::Fail => {
            writeln!(w, ">")?;
            writeln!(
                w,
                r#"      <failure message="{}" type="{}">{}</failure>"#,
                attr(&check.message),
                attr(&check.name),
                text(&body)
            )?;
            writeln!(w, "    </testcase>")?;
        }
        Status::Skip => {
            writeln!(w, ">")?;
            writeln!(w, r#"      <skipped message="{}"/>"#, attr(&check.message))?;
            writeln!(w, "    </testcase>")?;
        }
    }
    Ok(())
}

/// A check's evidence and references as indented lists under their headings (empty when it
/// has neither).
fn evidence_text(check: &Check) -> String {
    let mut body = String::new();
    if !check.evidence.is_empty() {
        body.push_str("evidence:\n");
        for e in &check.evidence {
            body.push_str("  ");
            body.push_str(e);
            body.push('\n');
        }
    }
    if !check.references.is_empty() {
        body.push_str("references:\n");
        for r in &check.references {
            body.push_str("  ");
            body.push_str(r);
            body.push('\n');
        }
    }
    body
}
