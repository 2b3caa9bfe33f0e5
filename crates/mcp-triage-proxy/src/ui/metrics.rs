//! Counters and a latency histogram over finished `tools/call` records, rendered in the
//! Prometheus text exposition format (version 0.0.4) for `GET /metrics`.
//!
//! Why the tool label is capped: a tool name comes from the client's request, so a client
//! (or a bug) that calls ever new names would otherwise grow every series without bound, in
//! this process and in the Prometheus that scrapes it. The first [`MetricsOptions::max_tools`]
//! distinct names keep their own series; later ones share `tool="other"`.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use mcp_triage_core::Layer;

use crate::record::Record;

/// Metric families `GET /metrics` exports, with their Prometheus type. The dashboard test
/// (`tests/ui.rs`) checks that every name the Grafana dashboard queries is one of these.
pub const METRIC_FAMILIES: [(&str, &str); 5] = [
    ("mcp_triage_calls_total", "counter"),
    ("mcp_triage_call_duration_seconds", "histogram"),
    ("mcp_triage_retries_total", "counter"),
    ("mcp_triage_unsafe_retries_total", "counter"),
    ("mcp_triage_ui_clients_dropped_total", "counter"),
];

/// Upper bounds (seconds) of the latency histogram's buckets: from a local tool's milliseconds
/// to a minute-long remote one.
pub const DURATION_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// The label value of tools past [`MetricsOptions::max_tools`].
pub const OTHER_TOOL: &str = "other";

/// The label value of a `tools/call` without a `params.name`.
pub const UNNAMED_TOOL: &str = "unknown";

/// The label value of a record without a layer (a request the proxy refused, say).
pub const NO_LAYER: &str = "none";

/// Longest tool label kept (in bytes, cut at a character boundary): MCP tool names are at most
/// 128 characters, and anything longer is a client's mistake that must not fill memory.
pub const MAX_TOOL_LABEL_BYTES: usize = 128;

/// Default of [`MetricsOptions::max_tools`].
pub const DEFAULT_MAX_TOOLS: usize = 100;

/// Limits of the metrics.
#[derive(Debug, Clone)]
pub struct MetricsOptions {
    /// The `server` label of every series (the upstream's authority, or the wrapped command).
    pub server: String,
    /// Distinct tool names that get their own series; later names are counted as `other`.
    pub max_tools: usize,
}

/// One latency histogram: counts per bucket (not cumulative), sum and count.
#[derive(Debug, Clone, Default)]
struct Histogram {
    buckets: [u64; DURATION_BUCKETS.len()],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        let seconds = if seconds.is_finite() && seconds > 0.0 {
            seconds
        } else {
            0.0
        };
        if let Some(i) = DURATION_BUCKETS.iter().position(|&le| seconds <= le) {
            self.buckets[i] += 1;
        }
        self.sum += seconds;
        self.count += 1;
    }
}

/// What one `tools/call` record adds to the metrics, with its tool already capped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallLabels {
    /// The tool label (`other` past the cap).
    pub tool: String,
    /// The record's layer (`none` when it has none).
    pub layer: String,
    /// The record's outcome.
    pub outcome: String,
}

/// The metrics of one proxy.
#[derive(Debug)]
pub struct Metrics {
    options: MetricsOptions,
    tools: HashSet<String>,
    calls: BTreeMap<(String, String, String), u64>,
    durations: BTreeMap<String, Histogram>,
    retries: BTreeMap<String, u64>,
    unsafe_retries: BTreeMap<String, u64>,
    /// Live-page clients dropped because they did not keep up.
    pub clients_dropped: u64,
}

impl Metrics {
    /// Empty metrics.
    pub fn new(options: MetricsOptions) -> Metrics {
        Metrics {
            options,
            tools: HashSet::new(),
            calls: BTreeMap::new(),
            durations: BTreeMap::new(),
            retries: BTreeMap::new(),
            unsafe_retries: BTreeMap::new(),
            clients_dropped: 0,
        }
    }

    /// The `server` label.
    pub fn server(&self) -> &str {
        &self.options.server
    }

    /// The label a tool name is counted under: itself (cut to [`MAX_TOOL_LABEL_BYTES`]) while
    /// fewer than `max_tools` names were seen, [`OTHER_TOOL`] after.
    pub fn tool_label(&mut self, tool: Option<&str>) -> String {
        let Some(name) = tool else {
            return UNNAMED_TOOL.to_string();
        };
        let mut end = name.len().min(MAX_TOOL_LABEL_BYTES);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        let name = &name[..end];
        if self.tools.contains(name) {
            return name.to_string();
        }
        if self.tools.len() < self.options.max_tools {
            self.tools.insert(name.to_string());
            return name.to_string();
        }
        OTHER_TOOL.to_string()
    }

    /// Counts a finished record; only `tools/call` requests count (None for any other record).
    ///
    /// A task call counts once, with its final verdict: the `tools/call` exchange answered
    /// `TASK_CREATED` is not counted in `calls_total` or the durations (the call is not over;
    /// its retries still count), its `taskEnd` record is, with the time from the call's
    /// arrival to the end the proxy saw (or `TASK_UNFINISHED` when it saw none). The task's
    /// `tasks/*` exchanges are not tool calls and count nowhere.
    pub fn observe(&mut self, record: &Record) -> Option<CallLabels> {
        if record.method.as_deref() != Some("tools/call") {
            return None;
        }
        let tool = self.tool_label(record.tool.as_deref());
        let layer = record.layer.map_or(NO_LAYER, Layer::as_str).to_string();
        let outcome = record.outcome.as_str().to_string();
        if !crate::record::is_task_start(record.kind, record.outcome) {
            *self
                .calls
                .entry((tool.clone(), layer.clone(), outcome.clone()))
                .or_default() += 1;
            self.durations
                .entry(tool.clone())
                .or_default()
                .observe(record.duration_ms / 1000.0);
        }
        if record.retry_of.is_some() {
            *self.retries.entry(tool.clone()).or_default() += 1;
        }
        if is_unsafe_retry(record) {
            *self.unsafe_retries.entry(tool.clone()).or_default() += 1;
        }
        Some(CallLabels {
            tool,
            layer,
            outcome,
        })
    }

    /// Calls counted per (tool, layer, outcome).
    pub fn calls(&self) -> impl Iterator<Item = (&(String, String, String), &u64)> {
        self.calls.iter()
    }

    /// Retries counted per tool.
    pub fn retries(&self) -> &BTreeMap<String, u64> {
        &self.retries
    }

    /// Unsafe retries counted per tool.
    pub fn unsafe_retries(&self) -> &BTreeMap<String, u64> {
        &self.unsafe_retries
    }

    /// The text exposition of every family in [`METRIC_FAMILIES`].
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        let server = escape_label(&self.options.server);
        family(
            &mut out,
            "mcp_triage_calls_total",
            "tools/call exchanges observed by the proxy, by tool and by the layer and outcome of their verdict.",
        );
        for ((tool, layer, outcome), n) in &self.calls {
            let _ = writeln!(
                out,
                "mcp_triage_calls_total{{server=\"{server}\",tool=\"{}\",layer=\"{}\",outcome=\"{}\"}} {n}",
                escape_label(tool),
                escape_label(layer),
                escape_label(outcome)
            );
        }
        family(
            &mut out,
            "mcp_triage_call_duration_seconds",
            "Time from a tools/call request's arrival at the proxy to the end of its response.",
        );
        for (tool, h) in &self.durations {
            let tool = escape_label(tool);
            let mut cumulative = 0;
            for (le, n) in DURATION_BUCKETS.iter().zip(h.buckets) {
                cumulative += n;
                let _ = writeln!(
                    out,
                    "mcp_triage_call_duration_seconds_bucket{{server=\"{server}\",tool=\"{tool}\",le=\"{le}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "mcp_triage_call_duration_seconds_bucket{{server=\"{server}\",tool=\"{tool}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "mcp_triage_call_duration_seconds_sum{{server=\"{server}\",tool=\"{tool}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "mcp_triage_call_duration_seconds_count{{server=\"{server}\",tool=\"{tool}\"}} {}",
                h.count
            );
        }
        for (name, help, by_tool) in [
            (
                "mcp_triage_retries_total",
                "tools/call requests that repeat a failed attempt (the client retried).",
                &self.retries,
            ),
            (
                "mcp_triage_unsafe_retries_total",
                "Retries of a call that may have executed, to a tool not marked read-only or idempotent, without an idempotency key (UNSAFE_RETRY).",
                &self.unsafe_retries,
            ),
        ] {
            family(&mut out, name, help);
            for (tool, n) in by_tool {
                let _ = writeln!(
                    out,
                    "{name}{{server=\"{server}\",tool=\"{}\"}} {n}",
                    escape_label(tool)
                );
            }
        }
        family(
            &mut out,
            "mcp_triage_ui_clients_dropped_total",
            "Live-page (/events) clients dropped because their queue was full.",
        );
        let _ = writeln!(
            out,
            "mcp_triage_ui_clients_dropped_total{{server=\"{server}\"}} {}",
            self.clients_dropped
        );
        out
    }
}

/// True when the observer flagged the record as an unsafe retry.
pub fn is_unsafe_retry(record: &Record) -> bool {
    record.warnings.iter().any(|w| w.code == "UNSAFE_RETRY")
}

/// `# HELP` and `# TYPE` lines of `name` (its type from [`METRIC_FAMILIES`]).
fn family(out: &mut String, name: &str, help: &str) {
    let kind = METRIC_FAMILIES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("untyped", |(_, k)| k);
    let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A label value as the text format wants it: backslash, double quote and newline escaped.
pub fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A `# HELP` text: backslash and newline escaped.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{rfc3339, RecordKind};
    use mcp_triage_core::Warning;

    fn call(tool: &str, outcome: &str, layer: &str, ms: f64) -> Record {
        let mut r = Record::new("1".into(), rfc3339(0), RecordKind::Request, "http");
        r.method = Some("tools/call".into());
        r.tool = Some(tool.into());
        r.outcome = outcome.parse().expect("a record outcome");
        r.layer = Some(Layer::from_wire(layer).expect("a layer"));
        r.duration_ms = ms;
        r
    }

    fn metrics(max_tools: usize) -> Metrics {
        Metrics::new(MetricsOptions {
            server: "127.0.0.1:8765".into(),
            max_tools,
        })
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape_label("x\ny"), "x\\ny");
        let mut m = metrics(10);
        m.observe(&call("say \"hi\"\n", "TOOL_SUCCESS", "application", 3.0));
        let text = m.render();
        assert!(
            text.contains(r#"tool="say \"hi\"\n",layer="application",outcome="TOOL_SUCCESS"} 1"#),
            "{text}"
        );
        // Every sample stays on one line: the newline in the name did not break it.
        for line in text.lines() {
            assert!(
                line.starts_with('#') || line.starts_with("mcp_triage_"),
                "{line}"
            );
        }
    }

    #[test]
    fn tools_past_the_cap_count_as_other() {
        let mut m = metrics(2);
        for tool in ["a", "b", "c", "d", "a"] {
            m.observe(&call(tool, "TOOL_SUCCESS", "application", 1.0));
        }
        let text = m.render();
        assert!(text.contains(r#"tool="a",layer="application",outcome="TOOL_SUCCESS"} 2"#));
        assert!(text.contains(r#"tool="b",layer="application",outcome="TOOL_SUCCESS"} 1"#));
        assert!(text.contains(r#"tool="other",layer="application",outcome="TOOL_SUCCESS"} 2"#));
        assert!(!text.contains(r#"tool="c""#) && !text.contains(r#"tool="d""#));
        // A long name is cut at a character boundary, never split mid-character.
        let mut m = metrics(5);
        let long = "é".repeat(100);
        let label = m.tool_label(Some(&long));
        assert!(label.len() <= MAX_TOOL_LABEL_BYTES && label.chars().all(|c| c == 'é'));
        assert_eq!(m.tool_label(None), UNNAMED_TOOL);
    }

    #[test]
    fn histogram_buckets_are_cumulative_and_end_in_inf() {
        let mut m = metrics(10);
        for ms in [1.0, 20.0, 20.0, 700.0, 400_000.0] {
            m.observe(&call("t", "TOOL_SUCCESS", "application", ms));
        }
        let text = m.render();
        let bucket = |le: &str| {
            let key = format!(
                r#"mcp_triage_call_duration_seconds_bucket{{server="127.0.0.1:8765",tool="t",le="{le}"}} "#
            );
            let line = text.lines().find(|l| l.starts_with(&key)).unwrap();
            line[key.len()..].parse::<u64>().unwrap()
        };
        assert_eq!(bucket("0.005"), 1);
        assert_eq!(bucket("0.025"), 3);
        assert_eq!(bucket("1"), 4);
        assert_eq!(bucket("300"), 4);
        assert_eq!(bucket("+Inf"), 5);
        assert!(text.contains(
            r#"mcp_triage_call_duration_seconds_count{server="127.0.0.1:8765",tool="t"} 5"#
        ));
        let sum_key = r#"mcp_triage_call_duration_seconds_sum{server="127.0.0.1:8765",tool="t"} "#;
        let sum: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix(sum_key))
            .unwrap()
            .parse()
            .unwrap();
        assert!((sum - 400.741).abs() < 1e-9, "{sum}");
    }

    /// A task call counts once, at its end: not as TASK_CREATED, not per poll.
    #[test]
    fn a_task_call_counts_once_with_its_final_verdict() {
        let mut m = metrics(10);
        m.observe(&call("job", "TASK_CREATED", "interaction", 2.0));
        let mut poll = call("job", "TASK_CREATED", "interaction", 1.0);
        poll.method = Some("tasks/get".into());
        assert_eq!(m.observe(&poll), None);
        let mut end = call("job", "TOOL_ERROR", "application", 1500.0);
        end.kind = RecordKind::TaskEnd;
        m.observe(&end);
        let text = m.render();
        assert!(!text.contains("TASK_CREATED"), "{text}");
        assert!(text.contains(r#"tool="job",layer="application",outcome="TOOL_ERROR"} 1"#));
        assert!(text.contains(
            r#"mcp_triage_call_duration_seconds_count{server="127.0.0.1:8765",tool="job"} 1"#
        ));
    }

    #[test]
    fn retries_and_unsafe_retries_are_counted_and_other_methods_are_not() {
        let mut m = metrics(10);
        let mut retry = call("inc", "TOOL_SUCCESS", "application", 1.0);
        retry.retry_of = Some("7".into());
        m.observe(&retry);
        retry.warnings.push(Warning {
            code: "UNSAFE_RETRY".into(),
            detail: "x".into(),
        });
        m.observe(&retry);
        let mut list = call("inc", "RESULT", "application", 1.0);
        list.method = Some("tools/list".into());
        assert_eq!(m.observe(&list), None);
        let text = m.render();
        assert!(text.contains(r#"mcp_triage_retries_total{server="127.0.0.1:8765",tool="inc"} 2"#));
        assert!(text
            .contains(r#"mcp_triage_unsafe_retries_total{server="127.0.0.1:8765",tool="inc"} 1"#));
        assert!(!text.contains("RESULT"));
        for (name, kind) in METRIC_FAMILIES {
            assert!(text.contains(&format!("# TYPE {name} {kind}\n")), "{name}");
        }
    }
}
