//! The outcome word of a record (the proxy's records, a capture line's `verdict`, what
//! `classify --batch` counts for an exchange that is not a tool call): the core verdict's
//! outcome, or one of an observer's own words for an exchange the core does not judge as a
//! tool call.
//!
//! Why in the core: the proxy writes these words, and `classify --batch`, the ClickHouse
//! function and the Python and Node packages count captured exchanges by them; one home keeps
//! a capture's counts the same in every engine.

use serde::{Serialize, Serializer};

use crate::{Layer, Outcome};

/// A record's `outcome`: the core verdict's outcome, or one of the observer's own words for an
/// exchange the core does not judge (or not as a tool call).
///
/// Why a type: these words were strings built in a dozen places (`"ACCEPTED"`, `"REFUSED"`,
/// ...), so a misspelt one was a new outcome nobody counted. Each is written once here; the
/// record still serialises to the same string, and compares equal to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum RecordOutcome {
    /// Not decided yet: the record was just made (serialised as an empty string).
    #[default]
    Undecided,
    /// The core's verdict outcome (`TOOL_SUCCESS`, `HTTP_ERROR`, ...).
    Verdict(Outcome),
    /// `RESULT`: a result to a method other than `tools/call` (its result is no tool result).
    Result,
    /// `ACCEPTED`: a 2xx to a notification or a response, or a DELETE that ended its session.
    Accepted,
    /// `OBSERVED`: a request the server sent on a stream.
    Observed,
    /// `FORWARDED`: an exchange without a JSON-RPC request, forwarded with a 2xx.
    Forwarded,
    /// `REFUSED`: the proxy answered itself and forwarded nothing (`Host`/`Origin` checks).
    Refused,
    /// `STREAM_CLOSED`: a GET stream that ended.
    StreamClosed,
    /// `SENT`: a stdio notification written to the server (no answer to judge).
    Sent,
    /// `TASK_UNFINISHED`: the proxy stopped waiting for the end of a task.
    TaskUnfinished,
}

impl RecordOutcome {
    /// The record's string.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordOutcome::Undecided => "",
            RecordOutcome::Verdict(o) => o.as_str(),
            RecordOutcome::Result => "RESULT",
            RecordOutcome::Accepted => "ACCEPTED",
            RecordOutcome::Observed => "OBSERVED",
            RecordOutcome::Forwarded => "FORWARDED",
            RecordOutcome::Refused => "REFUSED",
            RecordOutcome::StreamClosed => "STREAM_CLOSED",
            RecordOutcome::Sent => "SENT",
            RecordOutcome::TaskUnfinished => "TASK_UNFINISHED",
        }
    }
}

impl From<Outcome> for RecordOutcome {
    fn from(o: Outcome) -> RecordOutcome {
        RecordOutcome::Verdict(o)
    }
}

impl std::str::FromStr for RecordOutcome {
    type Err = UnknownOutcome;

    /// Reads a record's `outcome` back (a log line, a test's expectation).
    fn from_str(s: &str) -> Result<RecordOutcome, UnknownOutcome> {
        const OWN: [RecordOutcome; 9] = [
            RecordOutcome::Undecided,
            RecordOutcome::Result,
            RecordOutcome::Accepted,
            RecordOutcome::Observed,
            RecordOutcome::Forwarded,
            RecordOutcome::Refused,
            RecordOutcome::StreamClosed,
            RecordOutcome::Sent,
            RecordOutcome::TaskUnfinished,
        ];
        Outcome::ALL
            .into_iter()
            .map(RecordOutcome::Verdict)
            .chain(OWN)
            .find(|o| o.as_str() == s)
            .ok_or_else(|| UnknownOutcome(s.to_string()))
    }
}

/// A string that is no record outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownOutcome(pub String);

impl std::fmt::Display for UnknownOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} is not a record outcome", self.0)
    }
}

impl std::error::Error for UnknownOutcome {}

impl std::fmt::Display for RecordOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RecordOutcome {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq<str> for RecordOutcome {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for RecordOutcome {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for RecordOutcome {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<Outcome> for RecordOutcome {
    fn eq(&self, other: &Outcome) -> bool {
        *self == RecordOutcome::Verdict(*other)
    }
}

/// A record's `outcome` and `layer` for a verdict of a request with `method` (None: a
/// `tools/call`): `RESULT` for a result to any other method.
pub fn outcome_and_layer(method: Option<&str>, outcome: Outcome) -> (RecordOutcome, Layer) {
    use Outcome as O;
    let is_tool_call = method.is_none_or(|m| m == "tools/call");
    match outcome {
        O::ToolSuccess | O::ToolError | O::InvalidToolResult if !is_tool_call => {
            (RecordOutcome::Result, Layer::Application)
        }
        o => (RecordOutcome::Verdict(o), o.layer()),
    }
}
