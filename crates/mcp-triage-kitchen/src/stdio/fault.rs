//! stdio's own faults: what a stdio server can do wrong that an HTTP one cannot (exit while a
//! call runs, cut a line, print a banner on stdout, flood stderr, answer late, write one huge
//! line, never answer). They are scenarios of their own (`stdio.*`) served over `baseline`, so
//! the tool really runs (the journal says `executed`) and only the stdio delivery is faulty.

use serde_json::Value;

use super::StdioError;

/// Upper bound of `floodBytes` and `lineBytes`: large enough to exceed any pipe buffer and
/// any sane line limit, small enough that a run cannot fill a disk or memory.
pub const MAX_FAULT_BYTES: u64 = 64 * 1024 * 1024;
/// Upper bound of `delayMs` (10 minutes).
pub const MAX_DELAY_MS: u64 = 600_000;
/// Default bytes written to stderr by `stdio.stderr_flood` (16 pipe buffers of 64 KiB).
pub const DEFAULT_FLOOD_BYTES: u64 = 1024 * 1024;
/// Default delay of `stdio.slow_answer`.
pub const DEFAULT_DELAY_MS: u64 = 3_000;
/// Default size of the line `stdio.huge_line` writes.
pub const DEFAULT_LINE_BYTES: u64 = 1024 * 1024;

/// The banner `stdio.banner` writes on stdout (not JSON-RPC: the stdio transport forbids it).
pub const BANNER: &str =
    "kitchen stdio server ready -- this banner on stdout breaks the stdio transport";

/// One stdio fault, applied to the first `tools/call` (the banner also at start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StdioFault {
    /// The tool runs, then the server exits before answering.
    ExitMidCall,
    /// The tool runs, the first half of the answer line is written, then the server exits.
    PartialLine,
    /// A non-JSON banner on stdout at start, and a non-JSON line just before the answer.
    Banner,
    /// `floodBytes` on stderr before the answer (a client that never drains stderr blocks
    /// the server there).
    StderrFlood {
        /// Bytes written.
        bytes: u64,
    },
    /// The answer after `delayMs`.
    SlowAnswer {
        /// Delay in ms.
        delay_ms: u64,
    },
    /// The answer padded to one line of `lineBytes`.
    HugeLine {
        /// The line's size.
        bytes: u64,
    },
    /// The tool runs and is never answered.
    NeverAnswers,
}

/// The `stdio.*` scenario ids, with what each does (the kitchen README's table).
pub const FAULTS: &[(&str, &str)] = &[
    (
        "stdio.exit_mid_call",
        "the tool runs, then the server exits without answering",
    ),
    (
        "stdio.partial_line",
        "the tool runs, half the answer line is written, then the server exits",
    ),
    (
        "stdio.banner",
        "a non-JSON banner on stdout at start and a non-JSON line before the answer",
    ),
    (
        "stdio.stderr_flood",
        "floodBytes (default 1 MiB) on stderr before the answer",
    ),
    (
        "stdio.slow_answer",
        "the answer after delayMs (default 3000)",
    ),
    (
        "stdio.huge_line",
        "the answer as one line of lineBytes (default 1 MiB)",
    ),
    (
        "stdio.never_answers",
        "the tool runs and no answer ever comes",
    ),
];

/// The kitchen scenarios served over stdio: their faults live in JSON-RPC messages, which
/// stdio carries unchanged. HTTP-level scenarios (statuses, SSE cuts, sessions, OAuth) have
/// no stdio meaning and are refused.
pub const KITCHEN_SCENARIOS: &[&str] = &[
    "baseline",
    "errors.tool_error",
    "errors.tool_failure",
    "errors.jsonrpc_error",
    "timeout.late_response",
    "timeout.uncooperative_hang",
    "timeout.progress_keepalive",
    "elicitation.approval",
    "elicitation.decline",
    "catalog.mutation",
    "catalog.pagination",
    "tasks.deferred",
    "compat.legacy_result",
    "compat.output_schema_mismatch",
];

fn bounded(params: &Value, key: &str, default: u64, max: u64) -> Result<u64, StdioError> {
    match params.get(key) {
        None => Ok(default),
        Some(v) => match v.as_u64() {
            Some(n) if n <= max => Ok(n),
            _ => Err(StdioError::Params(format!(
                "{key} must be an integer in 0..={max}, got {v}"
            ))),
        },
    }
}

impl StdioFault {
    /// The fault a `stdio.*` id names with its parameters; `Ok(None)` for another id.
    pub fn parse(id: &str, params: &Value) -> Result<Option<StdioFault>, StdioError> {
        let f = match id {
            "stdio.exit_mid_call" => StdioFault::ExitMidCall,
            "stdio.partial_line" => StdioFault::PartialLine,
            "stdio.banner" => StdioFault::Banner,
            "stdio.stderr_flood" => StdioFault::StderrFlood {
                bytes: bounded(params, "floodBytes", DEFAULT_FLOOD_BYTES, MAX_FAULT_BYTES)?,
            },
            "stdio.slow_answer" => StdioFault::SlowAnswer {
                delay_ms: bounded(params, "delayMs", DEFAULT_DELAY_MS, MAX_DELAY_MS)?,
            },
            "stdio.huge_line" => StdioFault::HugeLine {
                bytes: bounded(params, "lineBytes", DEFAULT_LINE_BYTES, MAX_FAULT_BYTES)?,
            },
            "stdio.never_answers" => StdioFault::NeverAnswers,
            _ => return Ok(None),
        };
        Ok(Some(f))
    }

    /// The journal's `injected` note for the faulted call.
    pub fn note(self) -> String {
        match self {
            StdioFault::ExitMidCall => "stdio: exited after the tool ran, before answering".into(),
            StdioFault::PartialLine => "stdio: wrote half the answer line, then exited".into(),
            StdioFault::Banner => "stdio: a non-JSON line on stdout before the answer".into(),
            StdioFault::StderrFlood { bytes } => {
                format!("stdio: {bytes} bytes on stderr before the answer")
            }
            StdioFault::SlowAnswer { delay_ms } => format!("stdio: answered after {delay_ms} ms"),
            StdioFault::HugeLine { bytes } => format!("stdio: the answer as one {bytes}-byte line"),
            StdioFault::NeverAnswers => "stdio: the tool ran; never answered".into(),
        }
    }

    /// Whether the client is never given the kitchen's answer (then the journal's answer is
    /// a lost connection, not what the kitchen computed).
    pub fn withholds_answer(self) -> bool {
        matches!(
            self,
            StdioFault::ExitMidCall | StdioFault::PartialLine | StdioFault::NeverAnswers
        )
    }
}

/// The scenario served under a `stdio.*` id or a kitchen id; an id that is neither a fault
/// nor a stdio-ready kitchen scenario is an error listing both.
pub fn check_scenario(id: &str) -> Result<(), StdioError> {
    if KITCHEN_SCENARIOS.contains(&id) || FAULTS.iter().any(|(f, _)| *f == id) {
        return Ok(());
    }
    let mut ids: Vec<&str> = KITCHEN_SCENARIOS.to_vec();
    ids.extend(FAULTS.iter().map(|(f, _)| *f));
    Err(StdioError::Params(format!(
        "{id:?} is not served over stdio; these are: {}",
        ids.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fault_parameters_are_bounded_and_named() {
        let f = StdioFault::parse("stdio.stderr_flood", &json!({"floodBytes": 10})).unwrap();
        assert_eq!(f, Some(StdioFault::StderrFlood { bytes: 10 }));
        let e = StdioFault::parse("stdio.slow_answer", &json!({"delayMs": 600_001}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("delayMs") && e.contains("600000"), "{e}");
        let e = StdioFault::parse("stdio.huge_line", &json!({"lineBytes": "big"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("lineBytes"), "{e}");
        assert_eq!(StdioFault::parse("baseline", &json!({})).unwrap(), None);
    }

    #[test]
    fn http_only_scenarios_are_refused_with_the_list() {
        assert!(check_scenario("errors.tool_error").is_ok());
        assert!(check_scenario("stdio.banner").is_ok());
        let e = check_scenario("sse.cut_mid_event").unwrap_err().to_string();
        assert!(
            e.contains("sse.cut_mid_event") && e.contains("stdio.never_answers"),
            "{e}"
        );
    }
}
