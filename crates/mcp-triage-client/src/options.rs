//! Client and per-call options. Every limit and wait is explicit here, with the issue's defaults.

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_triage_core::retry::RetryOptions;
use mcp_triage_core::{Limits, ProtocolVersion, RetryOrigin};
use serde_json::Value;

/// Which protocol era to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VersionChoice {
    /// Modern 2026-07-28 first; fall back to `initialize` (2025-11-25, negotiating down) when a
    /// 400 carries no modern JSON-RPC error (the spec's detection).
    #[default]
    Auto,
    /// Exactly this revision (modern requests for 2026-07-28, the HTTP+SSE transport for
    /// 2024-11-05, `initialize` on Streamable HTTP otherwise).
    Fixed(ProtocolVersion),
}

impl VersionChoice {
    /// Parses `auto` or a known revision.
    pub fn parse(s: &str) -> Result<VersionChoice, UnknownVersion> {
        if s == "auto" {
            return Ok(VersionChoice::Auto);
        }
        match ProtocolVersion::parse(s) {
            Some(ProtocolVersion::Unknown) | None => Err(UnknownVersion(s.to_string())),
            Some(v) => Ok(VersionChoice::Fixed(v)),
        }
    }
}

/// A `--protocol` value that is neither `auto` nor a known revision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not auto or a known revision (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28)"
)]
pub struct UnknownVersion(pub String);

/// An answer that cannot be added to [`Answers`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnswersError {
    /// `--answer` without a `=`.
    #[error("--answer {pair:?} is not KEY=JSON")]
    NotAPair {
        /// The argument as given.
        pair: String,
    },
    /// The value after `=` does not parse.
    #[error("--answer {key}: the value is not JSON: {source}")]
    NotJson {
        /// The key before `=`.
        key: String,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The `--input` document is not an object.
    #[error("--input must hold a JSON object of KEY: response")]
    NotAnObject {
        /// The document's JSON type (`array`, `string`, …).
        found: &'static str,
    },
}

/// Answers for input requests: by the server's `inputRequests` key (MRTR), else by method
/// (`elicitation/create`, `sampling/createMessage`, `roots/list`), else `*`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answers {
    /// Key or method → the whole input response (e.g. an ElicitResult).
    pub by_key: BTreeMap<String, Value>,
}

impl Answers {
    /// Parses `KEY=JSON`.
    pub fn add_pair(&mut self, pair: &str) -> Result<(), AnswersError> {
        let (k, v) = pair.split_once('=').ok_or_else(|| AnswersError::NotAPair {
            pair: pair.to_string(),
        })?;
        let v: Value = serde_json::from_str(v).map_err(|source| AnswersError::NotJson {
            key: k.to_string(),
            source,
        })?;
        self.by_key.insert(k.to_string(), v);
        Ok(())
    }

    /// Merges a JSON object file's entries.
    pub fn add_object(&mut self, doc: Value) -> Result<(), AnswersError> {
        let m = match doc {
            Value::Object(m) => m,
            other => {
                return Err(AnswersError::NotAnObject {
                    found: json_type(&other),
                })
            }
        };
        self.by_key.extend(m);
        Ok(())
    }

    /// The answer for input request `key` with `method`.
    pub fn find(&self, key: Option<&str>, method: &str) -> Option<&Value> {
        key.and_then(|k| self.by_key.get(k))
            .or_else(|| self.by_key.get(method))
            .or_else(|| self.by_key.get("*"))
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Asks a person for an input response when no configured answer fits (a terminal prompt in
/// the CLI). Returning `None` leaves the request unanswered.
pub trait Prompter: Send + Sync {
    /// The whole input response (e.g. an ElicitResult) for a request `method` with `params`.
    fn answer(&self, method: &str, params: &Value) -> Option<Value>;
}

/// A shared prompter (`Debug` so that the options stay printable).
#[derive(Clone)]
pub struct SharedPrompter(pub std::sync::Arc<dyn Prompter>);

impl std::fmt::Debug for SharedPrompter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prompter")
    }
}

/// Options for a [`crate::Client`].
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Era and version.
    pub protocol: VersionChoice,
    /// `Authorization: Bearer` token (never logged or recorded).
    pub bearer: Option<String>,
    /// OAuth for HTTP servers that answer 401 (discovery, registration, authorization,
    /// refresh); `None` only reports the challenge.
    pub oauth: Option<crate::oauth::OAuthOptions>,
    /// Deadline of one attempt (request sent to complete response).
    pub timeout: Duration,
    /// How long `notifications/progress` may keep one `tools/call` attempt alive: each one for
    /// the call's progress token moves the deadline to `timeout` from then, up to this long
    /// after the attempt began. Zero: no progress token is sent and the deadline is fixed.
    pub progress_max_wait: Duration,
    /// Deadline of a TCP connect.
    pub connect_timeout: Duration,
    /// Classifier limits (body, event, stream sizes, depth).
    pub limits: Limits,
    /// Draft proposals the classifier reads (`--draft`): a declared ToolFailure class the
    /// retry policy then honours, SEP-2145 tool-error kinds. All off by default.
    pub drafts: mcp_triage_core::Drafts,
    /// The retry policy's options.
    pub retry: RetryOptions,
    /// Seed for the jitter source; `None` draws one from the OS.
    pub jitter_seed: Option<u64>,
    /// Answers for input rounds and legacy server requests.
    pub answers: Answers,
    /// Most input rounds per call.
    pub max_rounds: u32,
    /// Accept a form elicitation that has no configured answer with its schema's defaults,
    /// when every required field has one (`--accept-defaults`).
    pub accept_defaults: bool,
    /// In a legacy HTTP session, listen on the standalone GET stream while a call runs and
    /// answer the server requests sent there.
    pub listen_standalone: bool,
    /// Asked when no configured answer fits (after `accept_defaults`).
    pub prompter: Option<SharedPrompter>,
    /// Ask for task-augmented calls (`--task`): 2025-11-25 `params.task`, 2026-07-28 the
    /// `io.modelcontextprotocol/tasks` extension; a created task is polled to its end.
    pub use_tasks: bool,
    /// Roots offered for `roots/list` (file URIs or paths).
    pub roots: Vec<String>,
    /// Keep the arguments themselves in records (`--log-arguments`).
    pub log_arguments: bool,
    /// Keep the final result object in records.
    pub keep_result: bool,
    /// Scenario name for records when the server does not send `X-Kitchen-Scenario`.
    pub scenario: Option<String>,
    /// Call `tools/list` before the first call (annotations, `x-mcp-header`, output schemas).
    pub list_tools_first: bool,
    /// Lines of a stdio server's stderr kept for the record.
    pub stderr_lines: usize,
    /// Client name in `clientInfo` and records.
    pub client_name: String,
    /// Client version in `clientInfo` and records.
    pub client_version: String,
    /// Most tasks/get polls for a task-augmented call before giving up.
    pub max_polls: u32,
    /// Longest wait of the exponential backoff between polls when the server suggests no
    /// `pollIntervalMs`. A server's own interval is always honoured, even when longer: the
    /// extension lets a server rate-limit clients that poll faster than it asked.
    pub max_poll_interval: Duration,
    /// How long the client waits for a task it created, from its creation; past it the task
    /// is cancelled (`tasks/cancel`) and the call ends `TIMEOUT`. `None`: the call's
    /// attempt timeout ([`CallOptions::timeout`], else [`ClientOptions::timeout`]).
    pub task_timeout: Option<Duration>,
    /// Most task attempts (`poll`, `update`, `cancel`, `task_result`) kept in a record; older
    /// working polls beyond it are dropped and counted in a `TASK_POLLS_ELIDED` warning, so a
    /// long task does not make a record without bound (at least 2).
    pub max_task_attempts: usize,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            protocol: VersionChoice::Auto,
            bearer: None,
            oauth: None,
            timeout: Duration::from_secs(30),
            progress_max_wait: Duration::from_secs(600),
            connect_timeout: Duration::from_secs(10),
            limits: Limits::default(),
            drafts: mcp_triage_core::Drafts::default(),
            retry: RetryOptions::default(),
            jitter_seed: None,
            answers: Answers::default(),
            max_rounds: 8,
            accept_defaults: false,
            listen_standalone: true,
            use_tasks: false,
            prompter: None,
            roots: Vec::new(),
            log_arguments: false,
            keep_result: false,
            scenario: None,
            list_tools_first: true,
            stderr_lines: 20,
            client_name: "mcp-triage".to_string(),
            client_version: env!("CARGO_PKG_VERSION").to_string(),
            max_polls: 120,
            max_poll_interval: Duration::from_secs(5),
            task_timeout: None,
            max_task_attempts: 64,
        }
    }
}

/// Options for one call.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Who is calling again, and which record this repeats.
    pub retry_origin: RetryOrigin,
    /// The record id this call repeats (`--retry-of`).
    pub retry_of: Option<String>,
    /// Sent in `_meta` as `mcp-triage/idempotencyKey`; makes resends safe.
    pub idempotency_key: Option<String>,
    /// Overrides [`ClientOptions::timeout`] for this call.
    pub timeout: Option<Duration>,
    /// Extra `_meta` entries for the request.
    pub meta: Option<serde_json::Map<String, Value>>,
    /// Ctrl-C for this call: when requested while a task runs, the task is cancelled
    /// (`tasks/cancel`) and the call returns its record.
    pub interrupt: Option<crate::Interrupt>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn versions_and_answers_parse() {
        assert_eq!(VersionChoice::parse("auto"), Ok(VersionChoice::Auto));
        assert_eq!(
            VersionChoice::parse("2025-06-18"),
            Ok(VersionChoice::Fixed(ProtocolVersion::V2025_06_18))
        );
        assert_eq!(
            VersionChoice::parse("2024-11-05"),
            Ok(VersionChoice::Fixed(ProtocolVersion::V2024_11_05))
        );
        assert!(VersionChoice::parse("1.0").is_err());
        let mut a = Answers::default();
        a.add_pair(r#"approval={"action":"accept","content":{"reason":"ok"}}"#)
            .unwrap();
        a.add_pair(r#"elicitation/create={"action":"decline"}"#)
            .unwrap();
        assert!(a.add_pair("x").is_err());
        assert!(a.add_pair("x={").is_err());
        assert_eq!(
            a.find(Some("approval"), "elicitation/create").unwrap()["action"],
            "accept"
        );
        assert_eq!(
            a.find(Some("other"), "elicitation/create").unwrap()["action"],
            "decline"
        );
        assert!(a.find(None, "sampling/createMessage").is_none());
        a.add_object(json!({"*": {"action": "cancel"}})).unwrap();
        assert_eq!(a.find(None, "x").unwrap()["action"], "cancel");
        assert!(a.add_object(json!([1])).is_err());
    }

    #[test]
    fn answer_and_version_errors_are_typed() {
        let err = VersionChoice::parse("1.0").unwrap_err();
        assert_eq!(err, UnknownVersion("1.0".into()));
        assert_eq!(
            err.to_string(),
            "\"1.0\" is not auto or a known revision (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28)"
        );
        let mut a = Answers::default();
        let err = a.add_pair("x").unwrap_err();
        assert!(matches!(err, AnswersError::NotAPair { ref pair } if pair == "x"));
        assert_eq!(err.to_string(), "--answer \"x\" is not KEY=JSON");
        let err = a.add_pair("x={").unwrap_err();
        assert!(matches!(err, AnswersError::NotJson { ref key, .. } if key == "x"));
        assert!(err
            .to_string()
            .starts_with("--answer x: the value is not JSON: EOF while parsing"));
        let err = a.add_object(json!([1])).unwrap_err();
        assert!(matches!(err, AnswersError::NotAnObject { found: "array" }));
        assert_eq!(
            err.to_string(),
            "--input must hold a JSON object of KEY: response"
        );
    }
}
