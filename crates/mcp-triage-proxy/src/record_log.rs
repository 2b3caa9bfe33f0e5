//! `mcp-triage report LOG.jsonl`: a log of records (from `call --log`, the proxy or `wrap`) read
//! back and summarised, for a person and a CI, into the report model of `mcp-triage-report`:
//! outcomes per tool and per layer over time, retries and unsafe retries, latency percentiles.
//!
//! Tool calls and other exchanges are told apart ([`LoggedRecord::is_tool_call`]): an observer's
//! log also records `initialize`, `tools/list`, notifications, GET streams and DELETEs, which
//! are no failed calls of a tool named "unknown" but get a table of their own by kind and method.
//!
//! Why here: the records summarised are this crate's (and the client's, whose vocabulary they
//! follow), and so is the rule that a task's creating exchange is not counted as a call
//! ([`crate::record::is_task_start`], shared with the live metrics of [`crate::ui`]); the report
//! crate holds the model and its formats and depends on no crate of ours.
//!
//! Each line is read into a [`LoggedRecord`] by the record's field names (`recordId`, `kind`,
//! `method`, `httpMethod`, `tool`, `layer`, `outcome`, `retryOrigin`, `durationMs` (whole or
//! fractional: observers write microsecond fractions), `attempts[].kind`, `warnings[].code`),
//! leniently, so a log from an older or newer record version still
//! summarises; a missing field (or one of another JSON type) counts as `unknown`.

use std::collections::BTreeMap;
use std::io::BufRead;

use mcp_triage_report::{Case, Chart, Check, Report, Series, Status, Suite, Table};
use serde::Deserialize;
use serde_json::Value;

use crate::record::{is_task_start, RecordKind, RecordOutcome};

/// Time buckets in the over-time charts.
const BUCKETS: usize = 20;

/// The code of the warning about an unsafe resend.
const UNSAFE_RETRY: &str = "UNSAFE_RETRY";

/// What `report` reads of one record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoggedRecord {
    /// `recordId`.
    pub record_id: Option<String>,
    /// `kind` (proxy records only).
    pub kind: Option<RecordKind>,
    /// `method`: the JSON-RPC method (`tools/call` in a client's records).
    pub method: Option<String>,
    /// `httpMethod` (proxy records of HTTP exchanges): names a GET stream or a DELETE.
    pub http_method: Option<String>,
    /// `tool`.
    pub tool: Option<String>,
    /// `layer`.
    pub layer: Option<String>,
    /// `outcome`.
    pub outcome: Option<String>,
    /// `retryOrigin`.
    pub retry_origin: Option<String>,
    /// `durationMs`, when it is a finite number of zero or more (whole in a client's records,
    /// fractional in an observer's).
    pub duration_ms: Option<f64>,
    /// `attempts` that are calls: of kind `call`, or of no kind.
    pub call_attempts: usize,
    /// A warning `UNSAFE_RETRY` (an object with that `code`, or that string) is present.
    pub unsafe_retry: bool,
    /// The `detail` of the first `{"code": "UNSAFE_RETRY"}` warning.
    pub unsafe_retry_detail: Option<String>,
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

impl LoggedRecord {
    /// Reads a record's fields from its JSON object (any other value reads as all unknown).
    pub fn from_json(r: &Value) -> LoggedRecord {
        let warnings = r["warnings"].as_array();
        LoggedRecord {
            record_id: text(r, "recordId"),
            kind: RecordKind::deserialize(&r["kind"]).ok(),
            method: text(r, "method"),
            http_method: text(r, "httpMethod"),
            tool: text(r, "tool"),
            layer: text(r, "layer"),
            outcome: text(r, "outcome"),
            retry_origin: text(r, "retryOrigin"),
            duration_ms: r["durationMs"]
                .as_f64()
                .filter(|d| d.is_finite() && *d >= 0.0),
            call_attempts: r["attempts"].as_array().map_or(0, |a| {
                a.iter()
                    .filter(|x| x["kind"].as_str().is_none_or(|k| k == "call"))
                    .count()
            }),
            unsafe_retry: warnings.is_some_and(|w| {
                w.iter()
                    .any(|x| x["code"] == UNSAFE_RETRY || x.as_str() == Some(UNSAFE_RETRY))
            }),
            unsafe_retry_detail: warnings
                .and_then(|w| w.iter().find(|x| x["code"] == UNSAFE_RETRY))
                .and_then(|x| x["detail"].as_str())
                .map(str::to_string),
        }
    }

    /// A proxy record of the `tools/call` exchange that created a task: not counted, its
    /// `taskEnd` record is ([`is_task_start`], the proxy metrics' rule). A `tasks/get` poll
    /// answered "still working" is recorded `TASK_CREATED` too; it is no call's start, so it
    /// stays, among the other exchanges.
    pub fn is_task_start(&self) -> bool {
        let outcome = self.outcome.as_deref().unwrap_or("");
        let tools_call = self.method.as_deref().is_none_or(|m| m == "tools/call");
        tools_call
            && self.kind.is_some_and(|k| {
                is_task_start(k, outcome.parse().unwrap_or(RecordOutcome::Undecided))
            })
    }

    /// A tool call: a client's record (no `kind`; it writes one per `tools/call`, and older
    /// versions wrote no `method`), or an
    /// observer's `request` or `taskEnd` of `tools/call`. Everything else an observer records
    /// (`initialize`, `tools/list`, notifications, streams, DELETEs, server requests) is not.
    pub fn is_tool_call(&self) -> bool {
        let tools_call = self.method.as_deref().is_none_or(|m| m == "tools/call");
        match self.kind {
            None => tools_call,
            Some(RecordKind::Request | RecordKind::TaskEnd) => {
                self.method.as_deref() == Some("tools/call")
            }
            Some(_) => false,
        }
    }

    /// What a record that is no tool call is counted under: its `kind` and its JSON-RPC
    /// method, else its HTTP method (`HTTP GET` of a stream, `HTTP DELETE`), else `-`.
    fn kind_and_method(&self) -> (String, String) {
        let kind = match self.kind {
            Some(k) => serde_json::to_value(k)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| "unknown".into()),
            None => "unknown".into(),
        };
        let method = self
            .method
            .clone()
            .or_else(|| self.http_method.as_ref().map(|m| format!("HTTP {m}")))
            .unwrap_or_else(|| "-".into());
        (kind, method)
    }

    /// A resend: a retry origin other than `none`, or more than one `call` attempt (input
    /// rounds, resumptions and polls are not resends).
    pub fn is_retry(&self) -> bool {
        self.call_attempts > 1 || !matches!(self.field(Key::RetryOrigin), "none" | "unknown")
    }

    fn field(&self, key: Key) -> &str {
        match key {
            Key::Tool => &self.tool,
            Key::Layer => &self.layer,
            Key::Outcome => &self.outcome,
            Key::RetryOrigin => &self.retry_origin,
        }
        .as_deref()
        .unwrap_or("unknown")
    }
}

/// The fields a summary groups records by.
#[derive(Clone, Copy)]
enum Key {
    Tool,
    Layer,
    Outcome,
    RetryOrigin,
}

/// A log that cannot be read: the file (as given) and line, and why.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// The log cannot be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The log as given.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is longer than the longest accepted.
    #[error("{path}:{line}: line longer than --max-line-bytes {max}")]
    TooLong {
        /// The log as given.
        path: String,
        /// The line's number, 1-based.
        line: usize,
        /// The longest line accepted.
        max: usize,
    },
    /// A line is not JSON.
    #[error("{path}:{line}: not a JSON record: {source}")]
    NotJson {
        /// The log as given.
        path: String,
        /// The line's number, 1-based.
        line: usize,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// A line is JSON but not an object.
    #[error("{path}:{line}: a record is a JSON object")]
    NotObject {
        /// The log as given.
        path: String,
        /// The line's number, 1-based.
        line: usize,
    },
}

/// Reads the records of a log (`path` names it in errors); blank lines are skipped, and so are
/// the records that do not count as calls ([`LoggedRecord::is_task_start`]).
pub fn read_calls(
    reader: impl BufRead,
    path: &str,
    max_line_bytes: usize,
) -> Result<Vec<LoggedRecord>, LogError> {
    let mut out = Vec::new();
    for (i, line) in reader.split(b'\n').enumerate() {
        let line = line.map_err(|source| LogError::Io {
            path: path.to_string(),
            source,
        })?;
        let at = |line| (path.to_string(), line);
        if line.len() > max_line_bytes {
            let (path, line) = at(i + 1);
            return Err(LogError::TooLong {
                path,
                line,
                max: max_line_bytes,
            });
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let v: Value = serde_json::from_slice(&line).map_err(|source| {
            let (path, line) = at(i + 1);
            LogError::NotJson { path, line, source }
        })?;
        if !v.is_object() {
            let (path, line) = at(i + 1);
            return Err(LogError::NotObject { path, line });
        }
        let r = LoggedRecord::from_json(&v);
        if !r.is_task_start() {
            out.push(r);
        }
    }
    Ok(out)
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

/// A latency as a person reads it: whole milliseconds as they are (a client's `24 ms`), a
/// fraction (an observer's) to two decimals under 10 ms and one under 100 ms, where the
/// difference still matters, trailing zeros left out.
fn ms(v: Option<f64>) -> String {
    let Some(v) = v else { return "-".into() };
    let decimals = if v.fract() == 0.0 || v >= 100.0 {
        0
    } else if v < 10.0 {
        2
    } else {
        1
    };
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        &s
    };
    format!("{s} ms")
}

/// Sorted latencies of `records`.
fn latencies<'a>(records: impl Iterator<Item = &'a LoggedRecord>) -> Vec<f64> {
    let mut lat: Vec<f64> = records.filter_map(|r| r.duration_ms).collect();
    lat.sort_unstable_by(f64::total_cmp);
    lat
}

/// p50, p90 and p99 of sorted latencies, as one cell: `a / b / c`.
fn p50_p90_p99(sorted: &[f64]) -> String {
    [50.0, 90.0, 99.0]
        .map(|p| ms(percentile(sorted, p)))
        .join(" / ")
}

/// Build the report from records (oldest first): the tool calls summarised as calls, every
/// other record counted apart by kind and method ([`LoggedRecord::is_tool_call`]).
pub fn summarise(all: &[LoggedRecord], source: &str) -> Report {
    let (calls, others): (Vec<LoggedRecord>, Vec<LoggedRecord>) =
        all.iter().cloned().partition(LoggedRecord::is_tool_call);
    let records = &calls[..];
    let outcomes = sorted_keys(records, Key::Outcome);
    let layers = sorted_keys(records, Key::Layer);
    let tools = sorted_keys(records, Key::Tool);
    let (tool_rows, cases) = per_tool(records, &tools);
    let all_lat = latencies(records.iter());
    let mut tables = tables(records, &layers, tool_rows);
    // A client's log holds tool calls only: no empty table for it.
    if !others.is_empty() {
        tables.push(other_exchanges(&others));
    }
    Report {
        title: format!("mcp-triage report: {source}"),
        started: None,
        suites: vec![Suite {
            name: "call log".into(),
            cases,
            duration_ms: None,
            properties: vec![
                ("records".into(), all.len().to_string()),
                ("tool calls".into(), records.len().to_string()),
                ("other exchanges".into(), others.len().to_string()),
                (
                    "retried".into(),
                    records.iter().filter(|r| r.is_retry()).count().to_string(),
                ),
                (
                    "unsafe retries".into(),
                    records
                        .iter()
                        .filter(|r| r.unsafe_retry)
                        .count()
                        .to_string(),
                ),
                ("latency p50 / p90 / p99".into(), p50_p90_p99(&all_lat)),
            ],
        }],
        charts: charts(records, &outcomes, &layers, &tools),
        tables,
    }
}

/// The "other exchanges" table: per kind and method (in that order), how many records, their
/// outcomes with counts (most frequent first), and their latency.
fn other_exchanges(others: &[LoggedRecord]) -> Table {
    let mut groups: BTreeMap<(String, String), Vec<&LoggedRecord>> = BTreeMap::new();
    for r in others {
        groups.entry(r.kind_and_method()).or_default().push(r);
    }
    let rows = groups
        .into_iter()
        .map(|((kind, method), rs)| {
            let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
            for r in &rs {
                *outcomes.entry(r.field(Key::Outcome)).or_default() += 1;
            }
            let mut outcomes: Vec<(&str, usize)> = outcomes.into_iter().collect();
            outcomes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let outcomes: Vec<String> = outcomes.iter().map(|(o, n)| format!("{o} {n}")).collect();
            let lat = latencies(rs.iter().copied());
            vec![
                kind,
                method,
                rs.len().to_string(),
                outcomes.join(", "),
                ms(percentile(&lat, 50.0)),
                ms(lat.last().copied()),
            ]
        })
        .collect();
    Table {
        title: "other exchanges (not tool calls)".into(),
        columns: ["kind", "method", "records", "outcomes", "p50", "max"]
            .map(String::from)
            .to_vec(),
        rows,
    }
}

/// Outcomes and layers of the tool calls over time (consecutive calls in up to [`BUCKETS`]
/// buckets, labelled by call numbers), and outcomes per tool.
fn charts(
    records: &[LoggedRecord],
    outcomes: &[String],
    layers: &[String],
    tools: &[String],
) -> Vec<Chart> {
    let per = records.len().div_ceil(BUCKETS).max(1);
    let buckets: Vec<&[LoggedRecord]> = records.chunks(per).collect();
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
    let over_time = |key: Key, values: &[String], title: &str| Chart {
        title: title.into(),
        categories: labels.clone(),
        series: values
            .iter()
            .map(|v| Series {
                label: v.clone(),
                color: color_for(v),
                values: buckets
                    .iter()
                    .map(|c| c.iter().filter(|r| r.field(key) == v).count() as f64)
                    .collect(),
            })
            .collect(),
    };
    let per_tool_outcomes = Chart {
        title: "outcomes per tool".into(),
        categories: tools.to_vec(),
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
                            .filter(|r| r.field(Key::Tool) == t && r.field(Key::Outcome) == o)
                            .count() as f64
                    })
                    .collect(),
            })
            .collect(),
    };
    vec![
        over_time(
            Key::Outcome,
            outcomes,
            "outcomes over time (tool calls in order)",
        ),
        over_time(Key::Layer, layers, "layers over time (tool calls in order)"),
        per_tool_outcomes,
    ]
}

/// Per tool: its row of the "per tool" table, and its case (one `no_unsafe_retry` check).
fn per_tool(records: &[LoggedRecord], tools: &[String]) -> (Vec<Vec<String>>, Vec<Case>) {
    let mut tool_rows = Vec::new();
    let mut cases = Vec::new();
    for t in tools {
        let rs: Vec<&LoggedRecord> = records.iter().filter(|r| r.field(Key::Tool) == t).collect();
        let lat = latencies(rs.iter().copied());
        let ok = rs
            .iter()
            .filter(|r| r.field(Key::Outcome) == "TOOL_SUCCESS")
            .count();
        let retries = rs.iter().filter(|r| r.is_retry()).count();
        let unsafe_rs: Vec<&LoggedRecord> = rs.iter().copied().filter(|r| r.unsafe_retry).collect();
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
        cases.push(Case {
            properties: Vec::new(),
            name: t.clone(),
            checks: vec![unsafe_retry_check(rs.len(), retries, &unsafe_rs)],
            ..Case::default()
        });
    }
    (tool_rows, cases)
}

/// A tool's `no_unsafe_retry` check: passed, or failed with the first unsafe resends.
fn unsafe_retry_check(calls: usize, retries: usize, unsafe_rs: &[&LoggedRecord]) -> Check {
    if unsafe_rs.is_empty() {
        Check::new(
            "no_unsafe_retry",
            Status::Pass,
            format!("{calls} calls, {retries} with retries, none unsafe"),
        )
    } else {
        Check::new(
            "no_unsafe_retry",
            Status::Fail,
            format!("{} of {calls} calls resent unsafely", unsafe_rs.len()),
        )
        .with_evidence(unsafe_rs.iter().take(5).map(|r| {
            format!(
                "record {}: {} {} — {}",
                r.record_id.as_deref().unwrap_or("-"),
                r.field(Key::Outcome),
                r.field(Key::Layer),
                r.unsafe_retry_detail.as_deref().unwrap_or(UNSAFE_RETRY),
            )
        }))
    }
    .with_references([
        "seed article: writes must not be repeated because of a 503 without an idempotency key",
    ])
}

/// The "per tool", "per layer" and "retry origin" tables.
fn tables(records: &[LoggedRecord], layers: &[String], tool_rows: Vec<Vec<String>>) -> Vec<Table> {
    let layer_rows = layers
        .iter()
        .map(|l| {
            let n = records.iter().filter(|r| r.field(Key::Layer) == l).count();
            vec![
                l.clone(),
                n.to_string(),
                format!("{:.1} %", 100.0 * n as f64 / records.len().max(1) as f64),
            ]
        })
        .collect();
    let origin_rows = sorted_keys(records, Key::RetryOrigin)
        .into_iter()
        .map(|o| {
            let n = records
                .iter()
                .filter(|r| r.field(Key::RetryOrigin) == o)
                .count();
            vec![o, n.to_string()]
        })
        .collect();
    let per_tool_columns = [
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
    ];
    vec![
        Table {
            title: "per tool".into(),
            columns: per_tool_columns.map(String::from).to_vec(),
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
    ]
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

fn sorted_keys(records: &[LoggedRecord], key: Key) -> Vec<String> {
    let mut m: BTreeMap<String, usize> = BTreeMap::new();
    for r in records {
        *m.entry(r.field(key).to_string()).or_default() += 1;
    }
    m.into_keys().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn logged(v: Value) -> LoggedRecord {
        LoggedRecord::from_json(&v)
    }

    #[test]
    fn a_task_started_through_the_proxy_counts_at_its_end() {
        let start = logged(
            json!({"kind": "request", "method": "tools/call", "tool": "job",
                           "outcome": "TASK_CREATED", "taskId": "t1"}),
        );
        let end = logged(
            json!({"kind": "taskEnd", "method": "tools/call", "tool": "job",
                         "outcome": "TOOL_SUCCESS", "taskId": "t1", "linksTo": "r1"}),
        );
        let client = logged(json!({"tool": "job", "outcome": "TASK_CREATED"}));
        assert!(start.is_task_start());
        assert!(!end.is_task_start());
        // a record without the proxy's kind and taskId is counted as it is
        assert!(!client.is_task_start());
    }

    fn rec(tool: &str, outcome: &str, layer: &str, ms: u64, unsafe_retry: bool) -> LoggedRecord {
        logged(
            json!({"tool": tool, "outcome": outcome, "layer": layer, "durationMs": ms,
               "retryOrigin": if unsafe_retry { "sdk" } else { "none" },
               "attempts": if unsafe_retry { json!([{}, {}]) } else { json!([{}]) },
               "warnings": if unsafe_retry { json!([{"code": "UNSAFE_RETRY", "detail": "resent after 503"}]) } else { json!([]) }}),
        )
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), Some(50.0));
        assert_eq!(percentile(&v, 99.0), Some(99.0));
        assert_eq!(percentile(&[7.5], 90.0), Some(7.5));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn fields_of_another_type_read_as_unknown() {
        let r = logged(json!({"tool": 5, "durationMs": "12", "kind": "nonsense",
                              "warnings": ["UNSAFE_RETRY"], "attempts": [{"kind": 1}, {}]}));
        assert_eq!(r.field(Key::Tool), "unknown");
        assert_eq!((r.duration_ms, r.kind), (None, None));
        assert!(r.unsafe_retry && r.unsafe_retry_detail.is_none());
        assert!(r.is_retry(), "two call attempts");
    }

    #[test]
    fn fractional_and_whole_durations_are_read_and_shown() {
        assert_eq!(
            logged(json!({"durationMs": 2.165433})).duration_ms,
            Some(2.165433)
        );
        assert_eq!(logged(json!({"durationMs": 42})).duration_ms, Some(42.0));
        assert_eq!(logged(json!({"durationMs": -1.0})).duration_ms, None);
        let shown = [42.0, 2.165433, 18.327779, 126.823704, 0.5, 3.0].map(|v| ms(Some(v)));
        assert_eq!(
            shown,
            ["42 ms", "2.17 ms", "18.3 ms", "127 ms", "0.5 ms", "3 ms"]
        );
        assert_eq!(ms(None), "-");
    }

    #[test]
    fn observer_records_other_than_tools_call_are_no_tool_calls() {
        let kinds = [
            (json!({"tool": "a", "outcome": "TOOL_SUCCESS"}), true),
            (json!({"method": "tools/call", "tool": "a"}), true),
            (
                json!({"kind": "request", "method": "tools/call", "tool": "a"}),
                true,
            ),
            (
                json!({"kind": "taskEnd", "method": "tools/call", "tool": "a"}),
                true,
            ),
            (json!({"kind": "request", "method": "initialize"}), false),
            (json!({"kind": "request", "method": "tools/list"}), false),
            (
                json!({"kind": "notification", "method": "notifications/initialized"}),
                false,
            ),
            (json!({"kind": "stream", "httpMethod": "GET"}), false),
            (json!({"kind": "sessionEnd", "httpMethod": "DELETE"}), false),
            (
                json!({"kind": "serverRequest", "method": "sampling/createMessage"}),
                false,
            ),
        ];
        for (v, call) in kinds {
            assert_eq!(logged(v.clone()).is_tool_call(), call, "{v}");
        }
        let get = logged(json!({"kind": "stream", "httpMethod": "GET"}));
        assert_eq!(get.kind_and_method(), ("stream".into(), "HTTP GET".into()));
    }

    #[test]
    fn summary_counts_outcomes_layers_retries_and_unsafe_retries() {
        let mut rs: Vec<LoggedRecord> = (0..30)
            .map(|i| rec("echo", "TOOL_SUCCESS", "application", 10 + i, false))
            .collect();
        rs.push(rec("pay", "HTTP_ERROR", "transport", 500, true));
        rs.push(logged(json!({"outcome": "TOOL_ERROR"})));
        // An input round is not a resend.
        rs.push(logged(
            json!({"tool": "ask", "outcome": "TOOL_SUCCESS", "retryOrigin": "none",
                       "attempts": [{"kind": "call"}, {"kind": "input_round"}]}),
        ));
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
        let log = "{\"tool\":\"a\"}\n\nnot json\n";
        let e = read_calls(log.as_bytes(), "bad.jsonl", 1024).unwrap_err();
        assert_eq!(
            e.to_string(),
            "bad.jsonl:3: not a JSON record: expected ident at line 1 column 2"
        );
        let e = read_calls("{}\n[1]\n".as_bytes(), "b.jsonl", 1024).unwrap_err();
        assert_eq!(e.to_string(), "b.jsonl:2: a record is a JSON object");
        let e = read_calls("{\"tool\":\"a\"}\n".as_bytes(), "c.jsonl", 4).unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.jsonl:1: line longer than --max-line-bytes 4"
        );
    }

    #[test]
    fn task_starts_are_left_out_when_reading() {
        let log = "{\"kind\":\"request\",\"tool\":\"job\",\"outcome\":\"TASK_CREATED\"}\n\
                   {\"kind\":\"taskEnd\",\"tool\":\"job\",\"outcome\":\"TOOL_SUCCESS\"}\n";
        let rs = read_calls(log.as_bytes(), "t.jsonl", 1024).unwrap();
        assert_eq!(rs.len(), 1);
        assert_eq!(rs[0].kind, Some(RecordKind::TaskEnd));
        let poll = "{\"kind\":\"request\",\"method\":\"tasks/get\",\"outcome\":\"TASK_CREATED\"}\n";
        let rs = read_calls(poll.as_bytes(), "t.jsonl", 1024).unwrap();
        assert_eq!(rs.len(), 1, "a poll answered 'working' is kept");
    }
}
