//! Golden vectors: every `tests/golden/*.jsonl` line is an exchange plus the verdict it must get.
//! The comparison rules are in `tests/golden/README.md`. Every verdict must also validate against
//! the published schema `docs/verdict.schema.json`. All failures are reported together.

use std::path::Path;

use mcp_triage_core::exchange::Exchange;
use mcp_triage_core::{classify, CallContext, Drafts, ResponseClassifier, Verdict};
use serde_json::Value;

fn compare(expect: &Value, got: &Value, failures: &mut Vec<String>) {
    let Value::Object(expect) = expect else {
        failures.push("expect is not an object".into());
        return;
    };
    for (key, want) in expect {
        match key.as_str() {
            "warnings" => {
                let codes: Vec<&str> = got
                    .get("warnings")
                    .and_then(Value::as_array)
                    .map(|w| w.iter().filter_map(|w| w.get("code")?.as_str()).collect())
                    .unwrap_or_default();
                let want: Vec<&str> = want
                    .as_array()
                    .expect("warnings is a list")
                    .iter()
                    .map(|w| w.as_str().expect("warning code"))
                    .collect();
                if want.is_empty() && !codes.is_empty() {
                    failures.push(format!("expected no warnings, got {codes:?}"));
                }
                for w in want {
                    if !codes.contains(&w) {
                        failures.push(format!("missing warning {w}, got {codes:?}"));
                    }
                }
            }
            "detailContains" => {
                let detail = got.get("detail").and_then(Value::as_str).unwrap_or("");
                let want = want.as_str().expect("detailContains is a string");
                if !detail.contains(want) {
                    failures.push(format!("detail {detail:?} does not contain {want:?}"));
                }
            }
            _ => match (want, got.get(key)) {
                (Value::Null, None) => {}
                (Value::Null, Some(g)) => failures.push(format!("{key} should be absent, got {g}")),
                (Value::Object(w), Some(Value::Object(g))) => {
                    for (k, wv) in w {
                        if wv.is_null() {
                            if let Some(gv) = g.get(k) {
                                failures.push(format!("{key}.{k} should be absent, got {gv}"));
                            }
                        } else if g.get(k) != Some(wv) {
                            failures.push(format!("{key}.{k}: want {wv}, got {:?}", g.get(k)));
                        }
                    }
                }
                (w, g) => {
                    if g != Some(w) {
                        failures.push(format!("{key}: want {w}, got {g:?}"));
                    }
                }
            },
        }
    }
}

/// The draft switches a line asks for: `"drafts": "tool-failure,sep-2145"` (absent: none, so
/// every other file holds the verdicts with the drafts off).
fn drafts_of(case: &Value) -> Result<Drafts, String> {
    match case.get("drafts") {
        None => Ok(Drafts::default()),
        Some(Value::String(list)) => Drafts::parse(list),
        Some(other) => Err(format!("drafts is {other}; it must be a string")),
    }
}

/// Classifies one line whole, and once more fed in small chunks through the state machine:
/// both must agree.
fn run_line(line: &str, drafts: Drafts) -> Result<(Verdict, Verdict), String> {
    let x = Exchange::parse(line.as_bytes()).map_err(|e| e.to_string())?;
    let ctx = x.context(&CallContext::new(1).with_drafts(drafts));
    let whole = classify(&x.head, &x.body, &ctx);
    let mut sm = ResponseClassifier::new(&x.head, ctx.clone());
    for chunk in x.body.chunks(7) {
        sm.feed(chunk);
        if sm.is_decided() {
            break;
        }
    }
    let chunked = sm.finish();
    Ok((whole, chunked))
}

#[test]
fn golden_vectors() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "golden files missing in {}",
        dir.display()
    );
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/verdict.schema.json");
    let schema: Value = serde_json::from_slice(&std::fs::read(&schema_path).unwrap()).unwrap();
    let schema = jsonschema::validator_for(&schema).expect("docs/verdict.schema.json compiles");
    let mut cases = 0;
    let mut report = Vec::new();
    let mut names = std::collections::HashSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            cases += 1;
            let case: Value = serde_json::from_str(line).unwrap();
            let name = case["name"].as_str().unwrap_or("?").to_string();
            let at = format!(
                "{}:{} {name}",
                file.file_name().unwrap().to_string_lossy(),
                i + 1
            );
            if !names.insert(name.clone()) {
                report.push(format!("{at}: duplicate case name"));
            }
            let (whole, chunked) = match drafts_of(&case).and_then(|d| run_line(line, d)) {
                Ok(v) => v,
                Err(e) => {
                    report.push(format!("{at}: not an exchange: {e}"));
                    continue;
                }
            };
            let mut failures = Vec::new();
            // the hand-written JSON writer the gateways use gives serde's bytes on every vector
            let serde_text = serde_json::to_string(&whole).unwrap();
            if whole.to_json() != serde_text {
                failures.push(format!("Verdict::to_json wrote {}", whole.to_json()));
            }
            let (whole, chunked) = (
                serde_json::to_value(&whole).unwrap(),
                serde_json::to_value(&chunked).unwrap(),
            );
            compare(&case["expect"], &whole, &mut failures);
            for e in schema.iter_errors(&whole) {
                failures.push(format!(
                    "verdict violates docs/verdict.schema.json at {}: {e}",
                    e.instance_path()
                ));
            }
            if whole != chunked {
                failures.push(format!("chunked feeding differs: {chunked}"));
            }
            if !failures.is_empty() {
                report.push(format!(
                    "{at}: {}\n    verdict: {whole}",
                    failures.join("; ")
                ));
            }
        }
    }
    assert!(cases > 300, "only {cases} golden cases");
    assert!(
        report.is_empty(),
        "{} of {cases} golden cases failed:\n{}",
        report.len(),
        report.join("\n")
    );
}
