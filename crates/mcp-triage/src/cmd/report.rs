//! `mcp-triage report LOG.jsonl`: summarise call records (from `call --log` or the proxy)
//! for a person and a CI: outcomes per tool and per layer over time, retries and unsafe
//! retries, latency percentiles.
//!
//! Records are read as JSON values with the record's field names (`tool`, `layer`,
//! `outcome`, `retryOrigin`, `durationMs`, `attempts`, `warnings[].code`), so a log from an
//! older or newer record version still summarises; a missing field counts as `unknown`.

use crate::exit::Exit;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use mcp_triage_report::{
    Case, Chart, Check, Format, Report, ReportTarget, Series, Status, Suite, Table,
};
use serde_json::Value;

pub const EXAMPLES: &str = "\
Examples:
  mcp-triage report calls.jsonl                       # summary on stdout
  mcp-triage report calls.jsonl --html calls.html     # one self-contained page with charts
  mcp-triage report calls.jsonl --report junit:unsafe.xml --report json:summary.json

Exit 0 unless a record carries an UNSAFE_RETRY warning (then 1); 2 on unreadable input.";

/// Time buckets in the over-time charts.
const BUCKETS: usize = 20;

#[derive(Args)]
pub struct ReportArgs {
    /// JSON Lines file of call records (`-` for stdin).
    #[arg(value_name = "LOG.jsonl")]
    log: PathBuf,

    /// Write the HTML report here (same as --report html:FILE).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,

    /// Write a report: junit:FILE, html:FILE, json:FILE or tap:FILE (repeatable).
    #[arg(long = "report", value_name = "FORMAT:FILE")]
    reports: Vec<ReportTarget>,

    /// Records per line of input are capped at this many bytes (longer lines are an error).
    #[arg(long, value_name = "BYTES", default_value = "16777216")]
    max_line_bytes: usize,
}

fn field<'a>(r: &'a Value, k: &str) -> &'a str {
    r.get(k).and_then(Value::as_str).unwrap_or("unknown")
}

fn is_unsafe(r: &Value) -> bool {
    r["warnings"].as_array().is_some_and(|w| {
        w.iter()
            .any(|x| x["code"] == "UNSAFE_RETRY" || x.as_str() == Some("UNSAFE_RETRY"))
    })
}

/// A resend: a retry origin other than `none`, or more than one `call` attempt (input rounds,
/// resumptions and polls are not resends).
fn is_retry(r: &Value) -> bool {
    let calls = r["attempts"].as_array().map_or(0, |a| {
        a.iter()
            .filter(|x| x["kind"].as_str().is_none_or(|k| k == "call"))
            .count()
    });
    calls > 1 || !matches!(field(r, "retryOrigin"), "none" | "unknown")
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

fn ms(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| format!("{v} ms"))
}

fn read_records(args: &ReportArgs) -> Result<Vec<Value>, String> {
    let reader: Box<dyn BufRead> = if args.log.as_os_str() == "-" {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let f =
            std::fs::File::open(&args.log).map_err(|e| format!("{}: {e}", args.log.display()))?;
        Box::new(std::io::BufReader::new(f))
    };
    let mut out = Vec::new();
    for (i, line) in reader.split(b'\n').enumerate() {
        let line = line.map_err(|e| format!("{}: {e}", args.log.display()))?;
        if line.len() > args.max_line_bytes {
            return Err(format!(
                "{}:{}: line longer than --max-line-bytes {}",
                args.log.display(),
                i + 1,
                args.max_line_bytes
            ));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let v: Value = serde_json::from_slice(&line)
            .map_err(|e| format!("{}:{}: not a JSON record: {e}", args.log.display(), i + 1))?;
        if !v.is_object() {
            return Err(format!(
                "{}:{}: a record is a JSON object",
                args.log.display(),
                i + 1
            ));
        }
        out.push(v);
    }
    Ok(out)
}

/// Build the report from records (oldest first).
pub fn summarise(records: &[Value], source: &str) -> Report {
    let outcomes: Vec<String> = sorted_keys(records, "outcome");
    let layers: Vec<String> = sorted_keys(records, "layer");
    let tools: Vec<String> = sorted_keys(records, "tool");

    // Over time: consecutive records in up to BUCKETS buckets, labelled by record numbers.
    let per = records.len().div_ceil(BUCKETS).max(1);
    let buckets: Vec<&[Value]> = records.chunks(per).collect();
    let labels: Vec<String> = buckets
        .iter()
        .enumerate()
        .map(|(b, chunk)| {
            let first = b * per + 1;
            let last = first + chunk.len() - 1;
            if first == last {
                format!("#{first}")
            } else {
                format!("#{first}-{last}")
            }
        })
        .collect();
    let over_time = |key: &str, values: &[String], title: &str| Chart {
        title: title.into(),
        categories: labels.clone(),
        series: values
            .iter()
            .map(|v| Series {
                label: v.clone(),
                color: color_for(v),
                values: buckets
                    .iter()
                    .map(|c| c.iter().filter(|r| field(r, key) == v).count() as f64)
                    .collect(),
            })
            .collect(),
    };
    let per_tool_outcomes = Chart {
        title: "outcomes per tool".into(),
        categories: tools.clone(),
        series: outcomes
            .iter()
            .map(|o| Series {
                label: o.clone(),
                color: color_for(o),
                values: tools
                    .iter()
                    .map(|t| {
                        records
                            .iter()
                            .filter(|r| field(r, "tool") == t && field(r, "outcome") == o)
                            .count() as f64
                    })
                    .collect(),
            })
            .collect(),
    };

    let mut tool_rows = Vec::new();
    let mut cases = Vec::new();
    for t in &tools {
        let rs: Vec<&Value> = records.iter().filter(|r| field(r, "tool") == t).collect();
        let mut lat: Vec<u64> = rs.iter().filter_map(|r| r["durationMs"].as_u64()).collect();
        lat.sort_unstable();
        let ok = rs
            .iter()
            .filter(|r| field(r, "outcome") == "TOOL_SUCCESS")
            .count();
        let retries = rs.iter().filter(|r| is_retry(r)).count();
        let unsafe_rs: Vec<&&Value> = rs.iter().filter(|r| is_unsafe(r)).collect();
        tool_rows.push(vec![
            t.clone(),
            rs.len().to_string(),
            ok.to_string(),
            (rs.len() - ok).to_string(),
            retries.to_string(),
            unsafe_rs.len().to_string(),
            ms(percentile(&lat, 50.0)),
            ms(percentile(&lat, 90.0)),
            ms(percentile(&lat, 99.0)),
            ms(lat.last().copied()),
        ]);
        let check = if unsafe_rs.is_empty() {
            Check::new(
                "no_unsafe_retry",
                Status::Pass,
                format!("{} calls, {retries} with retries, none unsafe", rs.len()),
            )
        } else {
            Check::new(
                "no_unsafe_retry",
                Status::Fail,
                format!("{} of {} calls resent unsafely", unsafe_rs.len(), rs.len()),
            )
            .with_evidence(unsafe_rs.iter().take(5).map(|r| {
                let w = r["warnings"]
                    .as_array()
                    .and_then(|w| w.iter().find(|x| x["code"] == "UNSAFE_RETRY"))
                    .and_then(|x| x["detail"].as_str())
                    .unwrap_or("UNSAFE_RETRY");
                format!(
                    "record {}: {} {} — {w}",
                    r.get("recordId").and_then(Value::as_str).unwrap_or("-"),
                    field(r, "outcome"),
                    field(r, "layer"),
                )
            }))
        }
        .with_references([
            "seed article: writes must not be repeated because of a 503 without an idempotency key",
        ]);
        cases.push(Case {
            properties: Vec::new(),
            name: t.clone(),
            checks: vec![check],
            ..Case::default()
        });
    }
    let layer_rows = layers
        .iter()
        .map(|l| {
            let n = records.iter().filter(|r| field(r, "layer") == l).count();
            vec![
                l.clone(),
                n.to_string(),
                format!("{:.1} %", 100.0 * n as f64 / records.len().max(1) as f64),
            ]
        })
        .collect();
    let origin_rows = sorted_keys(records, "retryOrigin")
        .into_iter()
        .map(|o| {
            let n = records
                .iter()
                .filter(|r| field(r, "retryOrigin") == o)
                .count();
            vec![o, n.to_string()]
        })
        .collect();
    let mut all_lat: Vec<u64> = records
        .iter()
        .filter_map(|r| r["durationMs"].as_u64())
        .collect();
    all_lat.sort_unstable();
    Report {
        title: format!("mcp-triage report: {source}"),
        started: None,
        suites: vec![Suite {
            name: "call log".into(),
            cases,
            duration_ms: None,
            properties: vec![
                ("records".into(), records.len().to_string()),
                (
                    "retried".into(),
                    records.iter().filter(|r| is_retry(r)).count().to_string(),
                ),
                (
                    "unsafe retries".into(),
                    records.iter().filter(|r| is_unsafe(r)).count().to_string(),
                ),
                (
                    "latency p50 / p90 / p99".into(),
                    format!(
                        "{} / {} / {}",
                        ms(percentile(&all_lat, 50.0)),
                        ms(percentile(&all_lat, 90.0)),
                        ms(percentile(&all_lat, 99.0))
                    ),
                ),
            ],
        }],
        charts: vec![
            over_time(
                "outcome",
                &outcomes,
                "outcomes over time (records in order)",
            ),
            over_time("layer", &layers, "layers over time (records in order)"),
            per_tool_outcomes,
        ],
        tables: vec![
            Table {
                title: "per tool".into(),
                columns: [
                    "tool",
                    "calls",
                    "success",
                    "failed",
                    "retried",
                    "unsafe retries",
                    "p50",
                    "p90",
                    "p99",
                    "max",
                ]
                .map(String::from)
                .to_vec(),
                rows: tool_rows,
            },
            Table {
                title: "per layer".into(),
                columns: ["layer", "calls", "share"].map(String::from).to_vec(),
                rows: layer_rows,
            },
            Table {
                title: "retry origin".into(),
                columns: ["retryOrigin", "calls"].map(String::from).to_vec(),
                rows: origin_rows,
            },
        ],
    }
}

/// Colours that keep their meaning across charts: success green, each failing layer or
/// outcome its own colour; anything else gets the palette's.
fn color_for(label: &str) -> Option<String> {
    let c = match label {
        "TOOL_SUCCESS" | "application" => "#2da44e",
        "TOOL_ERROR" => "#bf8700",
        "transport" | "HTTP_ERROR" => "#cf222e",
        "protocol" | "JSONRPC_ERROR" => "#8250df",
        "interaction" | "INPUT_REQUIRED" => "#0969da",
        "unknown" => "#8c959f",
        _ => return None,
    };
    Some(c.to_string())
}

fn sorted_keys(records: &[Value], key: &str) -> Vec<String> {
    let mut m: BTreeMap<String, usize> = BTreeMap::new();
    for r in records {
        *m.entry(field(r, key).to_string()).or_default() += 1;
    }
    m.into_keys().collect()
}

/// A proxy record of the `tools/call` exchange that created a task: not counted, its
/// `taskEnd` record is ([`mcp_triage_proxy::record::is_task_start`], the proxy metrics' rule).
fn is_task_start(r: &Value) -> bool {
    mcp_triage_proxy::record::is_task_start(
        r["kind"] == "request",
        r["outcome"].as_str().unwrap_or(""),
    )
}

pub fn run(args: ReportArgs) -> Result<ExitCode, String> {
    let mut records = read_records(&args)?;
    records.retain(|r| !is_task_start(r));
    let report = summarise(&records, &args.log.display().to_string());
    for p in &report.suites[0].properties {
        println!("{:<24} {}", p.0, p.1);
    }
    for t in &report.tables {
        println!("\n{}", t.title);
        let widths: Vec<usize> = (0..t.columns.len())
            .map(|i| {
                t.rows
                    .iter()
                    .map(|r| r[i].len())
                    .chain([t.columns[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for row in std::iter::once(&t.columns).chain(&t.rows) {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            println!("  {}", cells.join("  ").trim_end());
        }
    }
    let mut targets = args.reports.clone();
    if let Some(h) = &args.html {
        targets.push(ReportTarget {
            format: Format::Html,
            path: h.clone(),
        });
    }
    mcp_triage_report::write_all(&targets, &report).map_err(|e| e.to_string())?;
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        Exit::Failed.into()
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_task_started_through_the_proxy_counts_at_its_end() {
        let start = json!({"kind": "request", "method": "tools/call", "tool": "job",
                           "outcome": "TASK_CREATED", "taskId": "t1"});
        let end = json!({"kind": "taskEnd", "method": "tools/call", "tool": "job",
                         "outcome": "TOOL_SUCCESS", "taskId": "t1", "linksTo": "r1"});
        let client = json!({"tool": "job", "outcome": "TASK_CREATED"});
        assert!(is_task_start(&start));
        assert!(!is_task_start(&end));
        // a record without the proxy's kind and taskId is counted as it is
        assert!(!is_task_start(&client));
    }
    use super::*;
    use serde_json::json;

    fn rec(tool: &str, outcome: &str, layer: &str, ms: u64, unsafe_retry: bool) -> Value {
        json!({"tool": tool, "outcome": outcome, "layer": layer, "durationMs": ms,
               "retryOrigin": if unsafe_retry { "sdk" } else { "none" },
               "attempts": if unsafe_retry { json!([{}, {}]) } else { json!([{}]) },
               "warnings": if unsafe_retry { json!([{"code": "UNSAFE_RETRY", "detail": "resent after 503"}]) } else { json!([]) }})
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&[7], 90.0), Some(7));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn summary_counts_outcomes_layers_retries_and_unsafe_retries() {
        let mut rs: Vec<Value> = (0..30)
            .map(|i| rec("echo", "TOOL_SUCCESS", "application", 10 + i, false))
            .collect();
        rs.push(rec("pay", "HTTP_ERROR", "transport", 500, true));
        rs.push(json!({"outcome": "TOOL_ERROR"}));
        // An input round is not a resend.
        rs.push(
            json!({"tool": "ask", "outcome": "TOOL_SUCCESS", "retryOrigin": "none",
                       "attempts": [{"kind": "call"}, {"kind": "input_round"}]}),
        );
        let r = summarise(&rs, "t.jsonl");
        let tools = &r.tables[0];
        let echo = tools.rows.iter().find(|r| r[0] == "echo").unwrap();
        assert_eq!(echo[1..6], ["30", "30", "0", "0", "0"].map(String::from));
        assert_eq!(echo[6], "24 ms");
        let pay = tools.rows.iter().find(|r| r[0] == "pay").unwrap();
        assert_eq!(pay[4..6], ["1", "1"].map(String::from));
        assert!(tools.rows.iter().any(|r| r[0] == "unknown"));
        let ask = tools.rows.iter().find(|r| r[0] == "ask").unwrap();
        assert_eq!(ask[4], "0", "input round counted as a retry");
        assert_eq!(r.counts().fail, 1);
        let fail = &r.suites[0]
            .cases
            .iter()
            .find(|c| c.name == "pay")
            .unwrap()
            .checks[0];
        assert!(fail.evidence[0].contains("resent after 503"));
        // 33 records in buckets of 2: 17 categories; the outcome series add up to 33.
        let c = &r.charts[0];
        assert_eq!(c.categories.len(), 17);
        let total: f64 = c.series.iter().flat_map(|s| &s.values).sum();
        assert_eq!(total, 33.0);
    }

    #[test]
    fn bad_lines_are_errors_with_line_numbers() {
        let dir =
            std::env::temp_dir().join(format!("mcp-triage-report-cmd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bad.jsonl");
        std::fs::write(&p, "{\"tool\":\"a\"}\n\nnot json\n").unwrap();
        let args = ReportArgs {
            log: p,
            html: None,
            reports: vec![],
            max_line_bytes: 1024,
        };
        let e = read_records(&args).unwrap_err();
        assert!(
            e.ends_with(":3: not a JSON record: expected ident at line 1 column 2"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
