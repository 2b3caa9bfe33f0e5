//! The outcome summary `classify --batch` prints: a typed struct, written in one place.
//!
//! Its JSON line is compared byte for byte by other tools (the seed's `classify-batch.mjs`, the
//! ClickHouse and Spark integrations' tests), so it is built here and nowhere else.

use mcp_triage_core::Outcome;

/// How many bad lines the summary quotes; the rest are only counted (all are in `--each`).
pub const FIRST_BAD_LINES_SHOWN: usize = 5;

/// A line that is not an exchange: its number (1-based) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// The line's number, 1-based.
    pub line: u64,
    /// Why it is not an exchange (the exchange parser's error, or its length).
    pub error: String,
}

impl BadLine {
    /// `{"line":N,"error":"..."}`, as `--each --format json` prints it in the line's place.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "line": self.line, "error": self.error })
    }

    /// `line N: bad exchange: ...`, as `--each --format text` prints it.
    pub fn to_text(&self) -> String {
        format!("line {}: bad exchange: {}", self.line, self.error)
    }
}

/// Outcome counts in first-seen order, as the seed's `classify-batch.mjs` prints them, and the
/// bad lines skipped (their number and the first [`FIRST_BAD_LINES_SHOWN`] of them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchSummary {
    verdicts: u64,
    bytes: u64,
    outcomes: Vec<(Outcome, u64)>,
    bad_lines: u64,
    first_bad_lines: Vec<BadLine>,
}

impl BatchSummary {
    /// Verdicts given (one per exchange line).
    pub fn verdicts(&self) -> u64 {
        self.verdicts
    }

    /// Response body bytes classified.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Each outcome seen and how often, in first-seen order.
    pub fn outcomes(&self) -> &[(Outcome, u64)] {
        &self.outcomes
    }

    /// Lines skipped because they are not exchanges.
    pub fn bad_lines(&self) -> u64 {
        self.bad_lines
    }

    /// The first [`FIRST_BAD_LINES_SHOWN`] bad lines, in input order.
    pub fn first_bad_lines(&self) -> &[BadLine] {
        &self.first_bad_lines
    }

    /// Counts one verdict and its body's length.
    pub fn add(&mut self, outcome: Outcome, bytes: usize) {
        self.verdicts += 1;
        self.bytes += bytes as u64;
        match self.outcomes.iter_mut().find(|(o, _)| *o == outcome) {
            Some((_, n)) => *n += 1,
            None => self.outcomes.push((outcome, 1)),
        }
    }

    /// Counts a bad line, keeping it if it is among the first few.
    pub fn add_bad_line(&mut self, bad: BadLine) {
        self.bad_lines += 1;
        if self.first_bad_lines.len() < FIRST_BAD_LINES_SHOWN {
            self.first_bad_lines.push(bad);
        }
    }

    /// Adds a later part's counts; first-seen order is kept because parts merge in input order.
    pub fn merge(&mut self, other: &BatchSummary) {
        self.verdicts += other.verdicts;
        self.bytes += other.bytes;
        self.bad_lines += other.bad_lines;
        let room = FIRST_BAD_LINES_SHOWN.saturating_sub(self.first_bad_lines.len());
        self.first_bad_lines
            .extend(other.first_bad_lines.iter().take(room).cloned());
        for (o, n) in &other.outcomes {
            match self.outcomes.iter_mut().find(|(x, _)| x == o) {
                Some((_, m)) => *m += n,
                None => self.outcomes.push((*o, *n)),
            }
        }
    }

    /// The summary's JSON line (no line end): `{"verdicts":N,"bytes":N,"outcomes":{...}}`, then
    /// `badLines` and `firstBadLines` when there were any.
    pub fn to_json_line(&self) -> String {
        let outcomes: Vec<String> = self
            .outcomes
            .iter()
            .map(|(o, n)| format!("\"{o}\":{n}"))
            .collect();
        // Without bad lines the line is exactly the seed's, so the two can be compared.
        let bad = if self.bad_lines == 0 {
            String::new()
        } else {
            let first: Vec<serde_json::Value> =
                self.first_bad_lines.iter().map(BadLine::to_json).collect();
            format!(
                ",\"badLines\":{},\"firstBadLines\":{}",
                self.bad_lines,
                serde_json::Value::Array(first)
            )
        };
        format!(
            "{{\"verdicts\":{},\"bytes\":{},\"outcomes\":{{{}}}{bad}}}",
            self.verdicts,
            self.bytes,
            outcomes.join(",")
        )
    }

    /// The summary as one line a person can read (no line end).
    pub fn to_text_line(&self) -> String {
        let parts: Vec<String> = self
            .outcomes
            .iter()
            .map(|(o, n)| format!("{}/{o} {n}", o.layer()))
            .collect();
        let mut line = format!(
            "{} verdicts, {} body bytes: {}",
            self.verdicts,
            self.bytes,
            parts.join(", ")
        );
        if let Some(first) = self.first_bad_lines.first() {
            line.push_str(&format!(
                "; {} bad line(s) skipped, the first {}",
                self.bad_lines,
                first.to_text()
            ));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(line: u64) -> BadLine {
        BadLine {
            line,
            error: "not JSON".into(),
        }
    }

    #[test]
    fn the_json_line_without_bad_lines_is_the_seeds() {
        let mut s = BatchSummary::default();
        s.add(Outcome::ToolSuccess, 40);
        s.add(Outcome::HttpError, 18);
        s.add(Outcome::ToolSuccess, 40);
        assert_eq!(
            s.to_json_line(),
            r#"{"verdicts":3,"bytes":98,"outcomes":{"TOOL_SUCCESS":2,"HTTP_ERROR":1}}"#
        );
        assert_eq!(
            s.to_text_line(),
            "3 verdicts, 98 body bytes: application/TOOL_SUCCESS 2, transport/HTTP_ERROR 1"
        );
    }

    #[test]
    fn merging_keeps_first_seen_order_and_the_first_bad_lines() {
        let mut a = BatchSummary::default();
        a.add(Outcome::HttpError, 1);
        for n in 1..=4 {
            a.add_bad_line(bad(n));
        }
        let mut b = BatchSummary::default();
        b.add(Outcome::ToolSuccess, 2);
        b.add(Outcome::HttpError, 3);
        for n in 10..=12 {
            b.add_bad_line(bad(n));
        }
        a.merge(&b);
        assert_eq!(
            a.outcomes(),
            [(Outcome::HttpError, 2), (Outcome::ToolSuccess, 1)]
        );
        assert_eq!((a.verdicts(), a.bytes(), a.bad_lines()), (3, 6, 7));
        let kept: Vec<u64> = a.first_bad_lines().iter().map(|b| b.line).collect();
        assert_eq!(kept, [1, 2, 3, 4, 10]);
        assert!(a
            .to_json_line()
            .ends_with(r#""badLines":7,"firstBadLines":[{"error":"not JSON","line":1},{"error":"not JSON","line":2},{"error":"not JSON","line":3},{"error":"not JSON","line":4},{"error":"not JSON","line":10}]}"#));
        assert!(a
            .to_text_line()
            .ends_with("; 7 bad line(s) skipped, the first line 1: bad exchange: not JSON"));
    }
}
