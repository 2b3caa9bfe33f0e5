//! TAP version 14: one test point per check, named `suite / case / check`, with a YAML
//! diagnostic block (message, evidence, references) under failures so `prove` and other
//! harnesses show why. Skips use the `# SKIP` directive.

use std::io::{self, Write};

use crate::model::{Report, Status};

fn yaml_str(s: &str) -> String {
    // A JSON string is a valid YAML flow scalar, and it escapes everything that matters.
    serde_json::Value::String(s.to_string()).to_string()
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ").replace('#', "\\#")
}

/// Write `report` as TAP 14.
pub fn write(report: &Report, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "TAP version 14")?;
    writeln!(w, "1..{}", report.counts().total())?;
    let mut n = 0;
    for suite in &report.suites {
        for case in &suite.cases {
            for check in &case.checks {
                n += 1;
                let name = one_line(&format!("{} / {} / {}", suite.name, case.name, check.name));
                match check.status {
                    Status::Pass => writeln!(w, "ok {n} - {name}")?,
                    Status::Skip => {
                        writeln!(w, "ok {n} - {name} # SKIP {}", one_line(&check.message))?
                    }
                    Status::Fail => {
                        writeln!(w, "not ok {n} - {name}")?;
                        writeln!(w, "  ---")?;
                        writeln!(w, "  message: {}", yaml_str(&check.message))?;
                        if !check.evidence.is_empty() {
                            writeln!(w, "  evidence:")?;
                            for e in &check.evidence {
                                writeln!(w, "    - {}", yaml_str(e))?;
                            }
                        }
                        if !check.references.is_empty() {
                            writeln!(w, "  references:")?;
                            for r in &check.references {
                                writeln!(w, "    - {}", yaml_str(r))?;
                            }
                        }
                        writeln!(w, "  ...")?;
                    }
                }
            }
        }
    }
    Ok(())
}
