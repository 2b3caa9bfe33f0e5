//! The result model every format renders: a [`Report`] holds [`Suite`]s, a suite holds
//! [`Case`]s, a case holds [`Check`]s. A check is the unit that passes, fails or is skipped,
//! and carries the evidence that decided it (e.g. the journal line of the kitchen) and the
//! references (spec section, seed article) that say why the expectation exists.
//!
//! Besides the test-shaped tree, a report may carry [`Chart`]s and [`Table`]s: the `report`
//! command summarises call logs (outcomes over time, latency percentiles) that are not
//! pass/fail results. The HTML format draws them; JSON keeps them; JUnit and TAP ignore them
//! because their consumers have no place for them.

use serde::{Deserialize, Serialize};

/// Status of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The expectation held.
    Pass,
    /// The expectation did not hold; the evidence says why.
    Fail,
    /// Not applicable or not run (the message says which). Named `n/a` in JSON, as in the
    /// matrices and the HTML (`skip` is still read).
    #[serde(rename = "n/a", alias = "skip")]
    Skip,
}

impl Status {
    /// Lowercase name (the HTML's CSS class; JSON says `n/a` for a skip, see [`Status::Skip`]).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Skip => "skip",
        }
    }
}

/// One named expectation and its result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// Stable name, e.g. `no_resend_without_idempotency_key`.
    pub name: String,
    /// Result.
    pub status: Status,
    /// One line saying what was found (or why the check does not apply).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Lines that decided the result, verbatim (journal lines, output lines).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    /// Where the expectation comes from (spec file and section, seed article).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<String>,
    /// Time the check took, when it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

impl Check {
    /// A check with a status and message, no evidence or references yet.
    pub fn new(name: impl Into<String>, status: Status, message: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            status,
            message: message.into(),
            evidence: Vec::new(),
            references: Vec::new(),
            duration_ms: None,
        }
    }
    /// Add evidence lines.
    pub fn with_evidence<I: IntoIterator<Item = S>, S: Into<String>>(mut self, lines: I) -> Check {
        self.evidence.extend(lines.into_iter().map(Into::into));
        self
    }
    /// Add references.
    pub fn with_references<I: IntoIterator<Item = S>, S: Into<String>>(mut self, refs: I) -> Check {
        self.references.extend(refs.into_iter().map(Into::into));
        self
    }
}

/// A group of checks run against one subject (e.g. one kitchen scenario).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Case {
    /// Name, e.g. the scenario id.
    pub name: String,
    /// The checks.
    pub checks: Vec<Check>,
    /// Wall time of the case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// What the subject printed (client stdout/stderr), possibly truncated.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
    /// What the other side recorded of the case, one JSON object per entry, oldest first
    /// (`judge`: the kitchen's journal of the client's requests), passing cases too, so a
    /// reader can see what a verdict was based on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub journal: Vec<serde_json::Value>,
    /// Key/value facts of this case (`judge`: the protocol version the client negotiated).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<(String, String)>,
}

/// A named group of cases (e.g. one judged client).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Suite {
    /// Name, e.g. `judge: node client.mjs {url}`.
    pub name: String,
    /// The cases.
    pub cases: Vec<Case>,
    /// Wall time of the suite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Key/value facts shown with the suite (versions, kitchen URL, date).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<(String, String)>,
}

/// One series of a chart: a label and one value per category.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// One value per category of the chart, same order.
    pub values: Vec<f64>,
    /// CSS colour (e.g. `#2da44e`), so a meaning keeps its colour across charts; the HTML
    /// writer picks from its palette when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

/// A stacked bar chart: categories along the x axis, series stacked in each bar.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Chart {
    /// Heading.
    pub title: String,
    /// X axis categories (e.g. time buckets or tool names).
    pub categories: Vec<String>,
    /// Stacked series.
    pub series: Vec<Series>,
}

/// A table of text cells.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// Heading.
    pub title: String,
    /// Column headers.
    pub columns: Vec<String>,
    /// Rows (each as long as `columns`).
    pub rows: Vec<Vec<String>>,
}

/// Everything one run produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Title, e.g. `mcp-triage judge`.
    pub title: String,
    /// When the run started (RFC 3339), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    /// Test-shaped results.
    #[serde(default)]
    pub suites: Vec<Suite>,
    /// Charts (HTML and JSON only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub charts: Vec<Chart>,
    /// Tables (HTML and JSON only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<Table>,
}

/// How many checks have each status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Passed checks.
    pub pass: usize,
    /// Failed checks.
    pub fail: usize,
    /// Not applicable checks (named `n/a` in JSON, as in the matrices).
    #[serde(rename = "n/a")]
    pub skip: usize,
}

impl Counts {
    /// All checks.
    pub fn total(&self) -> usize {
        self.pass + self.fail + self.skip
    }
    fn add(&mut self, s: Status) {
        match s {
            Status::Pass => self.pass += 1,
            Status::Fail => self.fail += 1,
            Status::Skip => self.skip += 1,
        }
    }
}

impl Case {
    /// Status counts of this case.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        self.checks.iter().for_each(|k| c.add(k.status));
        c
    }
}

impl Suite {
    /// The check names of all cases, merged so that each case's own order is kept (a name
    /// first seen in a later case goes before the next name it precedes there): the columns
    /// of a case × check matrix.
    pub fn check_names(&self) -> Vec<&str> {
        let mut cols: Vec<&str> = Vec::new();
        for case in &self.cases {
            for (j, check) in case.checks.iter().enumerate() {
                if cols.contains(&check.name.as_str()) {
                    continue;
                }
                let next = case.checks[j + 1..]
                    .iter()
                    .find_map(|k| cols.iter().position(|c| *c == k.name));
                match next {
                    Some(at) => cols.insert(at, &check.name),
                    None => cols.push(&check.name),
                }
            }
        }
        cols
    }

    /// Status counts over all cases.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        self.cases
            .iter()
            .flat_map(|k| &k.checks)
            .for_each(|k| c.add(k.status));
        c
    }
}

impl Report {
    /// Status counts over all suites.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        self.suites
            .iter()
            .flat_map(|s| &s.cases)
            .flat_map(|k| &k.checks)
            .for_each(|k| c.add(k.status));
        c
    }
    /// True when no check failed (skips do not count as failures).
    pub fn passed(&self) -> bool {
        self.counts().fail == 0
    }
}
