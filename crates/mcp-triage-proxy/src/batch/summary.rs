//! The outcome summary `classify --batch` prints: a typed struct, written in one place.
//!
//! Its JSON line is compared byte for byte by other tools (the seed's `classify-batch.mjs`, the
//! ClickHouse and Spark integrations' tests), so it is built here and nowhere else.

use mcp_triage_core::exchange::ExchangeKind;
use mcp_triage_core::record_outcome::RecordOutcome;
use mcp_triage_core::Outcome;

/// How many bad lines the summary quotes; the rest are only counted (all are in `--each`).
pub const FIRST_BAD_LINES_SHOWN: usize = 5;

/// How many kinds (methods) the summary counts apart; a capture with more distinct methods
/// counts the rest under [`OTHER_KINDS`], so a hostile file cannot grow the summary without
/// bound.
pub const MAX_KINDS: usize = 64;

/// The kind the methods past [`MAX_KINDS`] are counted under.
pub const OTHER_KINDS: &str = "(other methods)";

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

/// Outcome counts of the tool calls in first-seen order, as the seed's `classify-batch.mjs`
/// prints them; per kind (method) what every exchange was counted as, when a capture holds
/// more than tool calls; and the bad lines skipped (their number and the first
/// [`FIRST_BAD_LINES_SHOWN`] of them).
///
/// Why tool calls apart: a capture holds `initialize`, `tools/list`, notifications and GET
/// streams beside the calls; counted as calls they read as `MISSING_RESPONSE` and
/// `INVALID_TOOL_RESULT` by the hundred. `verdicts` and `outcomes` are the tool calls' (on an
/// exchange file of calls only, the seed's line exactly); `kinds` says what every line was
/// counted as.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchSummary {
    verdicts: u64,
    bytes: u64,
    outcomes: Vec<(Outcome, u64)>,
    other_exchanges: u64,
    kinds: Vec<KindCounts>,
    bad_lines: u64,
    first_bad_lines: Vec<BadLine>,
}

/// One kind's counts: what its exchanges were counted as, in first-seen order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindCounts {
    /// The method (`tools/call`, `initialize`, ...), or one of the kind names of
    /// [`ExchangeKind::name`] and [`OTHER_KINDS`].
    pub kind: String,
    /// Each outcome word (a verdict's, or `RESULT`, `ACCEPTED`, `FORWARDED`) and how often.
    pub counted: Vec<(RecordOutcome, u64)>,
}

fn bump<K: PartialEq + Copy>(counts: &mut Vec<(K, u64)>, key: K, n: u64) {
    match counts.iter_mut().find(|(k, _)| *k == key) {
        Some((_, m)) => *m += n,
        None => counts.push((key, n)),
    }
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

    /// Exchanges that are not tool calls (counted in [`BatchSummary::kinds`] only).
    pub fn other_exchanges(&self) -> u64 {
        self.other_exchanges
    }

    /// Per kind, in first-seen order, what its exchanges were counted as.
    pub fn kinds(&self) -> &[KindCounts] {
        &self.kinds
    }

    /// Counts one tool call's verdict and its body's length.
    pub fn add(&mut self, outcome: Outcome, bytes: usize) {
        self.add_exchange(
            ExchangeKind::ToolCall,
            RecordOutcome::Verdict(outcome),
            outcome,
            bytes,
        );
    }

    /// Counts one exchange of `kind`, counted as `counted` (see `ExchangeKind::counted`),
    /// with the verdict's `outcome` and its body's length.
    pub fn add_exchange(
        &mut self,
        kind: ExchangeKind<'_>,
        counted: RecordOutcome,
        outcome: Outcome,
        bytes: usize,
    ) {
        self.bytes += bytes as u64;
        if kind == ExchangeKind::ToolCall {
            self.verdicts += 1;
            bump(&mut self.outcomes, outcome, 1);
        } else {
            self.other_exchanges += 1;
        }
        self.count_kind(kind.name(), counted, 1);
    }

    fn count_kind(&mut self, name: &str, counted: RecordOutcome, n: u64) {
        let at = match self.kinds.iter().position(|k| k.kind == name) {
            Some(at) => at,
            None if self.kinds.len() < MAX_KINDS || name == OTHER_KINDS => {
                self.kinds.push(KindCounts {
                    kind: name.to_string(),
                    counted: Vec::new(),
                });
                self.kinds.len() - 1
            }
            None => return self.count_kind(OTHER_KINDS, counted, n),
        };
        bump(&mut self.kinds[at].counted, counted, n);
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
            bump(&mut self.outcomes, *o, *n);
        }
        self.other_exchanges += other.other_exchanges;
        for k in &other.kinds {
            for (c, n) in &k.counted {
                self.count_kind(&k.kind, *c, *n);
            }
        }
    }

    /// `"kinds":{"tools/call":{"TOOL_SUCCESS":2},"initialize":{"RESULT":1}}`, with the count
    /// of other exchanges before it; empty when every line was a tool call (the seed's line).
    fn kinds_json(&self) -> String {
        if self.other_exchanges == 0 {
            return String::new();
        }
        let kinds: Vec<String> = self
            .kinds
            .iter()
            .map(|k| {
                let counted: Vec<String> = k
                    .counted
                    .iter()
                    .map(|(c, n)| format!("\"{c}\":{n}"))
                    .collect();
                format!(
                    "{}:{{{}}}",
                    serde_json::Value::from(k.kind.as_str()),
                    counted.join(",")
                )
            })
            .collect();
        format!(
            ",\"otherExchanges\":{},\"kinds\":{{{}}}",
            self.other_exchanges,
            kinds.join(",")
        )
    }

    /// `; 282 other exchanges: initialize 30 (RESULT 30), ...`, or nothing.
    fn kinds_text(&self) -> String {
        if self.other_exchanges == 0 {
            return String::new();
        }
        let kinds: Vec<String> = self
            .kinds
            .iter()
            .filter(|k| k.kind != "tools/call")
            .map(|k| {
                let total: u64 = k.counted.iter().map(|(_, n)| n).sum();
                let counted: Vec<String> =
                    k.counted.iter().map(|(c, n)| format!("{c} {n}")).collect();
                format!("{} {total} ({})", k.kind, counted.join(", "))
            })
            .collect();
        format!(
            "; {} other exchanges: {}",
            self.other_exchanges,
            kinds.join(", ")
        )
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
            "{{\"verdicts\":{},\"bytes\":{},\"outcomes\":{{{}}}{}{bad}}}",
            self.verdicts,
            self.bytes,
            outcomes.join(","),
            self.kinds_json()
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
            "{} {}verdicts, {} body bytes: {}{}",
            self.verdicts,
            if self.other_exchanges == 0 {
                ""
            } else {
                "tool-call "
            },
            self.bytes,
            parts.join(", "),
            self.kinds_text()
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

    /// Tool calls apart from the rest: `verdicts` and `outcomes` count the calls, `kinds` says
    /// what every kind was counted as; merged parts keep both; past MAX_KINDS methods the rest
    /// share one kind.
    #[test]
    fn other_kinds_are_counted_apart_from_the_tool_calls() {
        let mut a = BatchSummary::default();
        a.add(Outcome::ToolSuccess, 10);
        a.add_exchange(
            ExchangeKind::Request("initialize"),
            RecordOutcome::Result,
            Outcome::ToolSuccess,
            5,
        );
        let mut b = BatchSummary::default();
        b.add_exchange(
            ExchangeKind::Notification("notifications/initialized"),
            RecordOutcome::Accepted,
            Outcome::MissingResponse,
            0,
        );
        b.add(Outcome::HttpError, 3);
        a.merge(&b);
        assert_eq!((a.verdicts(), a.other_exchanges(), a.bytes()), (2, 2, 18));
        assert_eq!(
            a.to_json_line(),
            concat!(
                r#"{"verdicts":2,"bytes":18,"outcomes":{"TOOL_SUCCESS":1,"HTTP_ERROR":1},"#,
                r#""otherExchanges":2,"kinds":{"tools/call":{"TOOL_SUCCESS":1,"HTTP_ERROR":1},"#,
                r#""initialize":{"RESULT":1},"notifications/initialized":{"ACCEPTED":1}}}"#
            )
        );
        assert_eq!(
            a.to_text_line(),
            "2 tool-call verdicts, 18 body bytes: application/TOOL_SUCCESS 1, \
             transport/HTTP_ERROR 1; 2 other exchanges: initialize 1 (RESULT 1), \
             notifications/initialized 1 (ACCEPTED 1)"
        );
        let mut many = BatchSummary::default();
        let names: Vec<String> = (0..MAX_KINDS + 3).map(|i| format!("m/{i}")).collect();
        for n in &names {
            many.add_exchange(
                ExchangeKind::Request(n),
                RecordOutcome::Result,
                Outcome::ToolSuccess,
                1,
            );
        }
        assert_eq!(many.kinds().len(), MAX_KINDS + 1);
        let last = many.kinds().last().unwrap();
        assert_eq!(last.kind, OTHER_KINDS);
        assert_eq!(last.counted, [(RecordOutcome::Result, 3)]);
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
