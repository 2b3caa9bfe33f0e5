//! What `tools/list` already says about a call before it is sent: the tool is not listed,
//! the arguments do not match its `inputSchema`, or it needs a task-augmented call.
//!
//! Servers answer these cases in different shapes (a JSON-RPC `-32602`, or an `isError`
//! result reading "MCP error -32602 …", or a non-standard code), and from the answer alone a
//! client cannot tell "the tool ran and failed" from "the tool never ran". The list can: so a
//! caller checks here first, refuses what cannot succeed, and names the real cause in its
//! advice when the call is sent anyway.

use std::fmt;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

use crate::tools::ToolInfo;

/// Closest listed names offered for an unlisted one, at most.
const MAX_CLOSE_NAMES: usize = 3;
/// Longest reason text kept from the validator (they can quote large values).
const MAX_REASON_CHARS: usize = 160;

/// A tool's `execution.taskSupport` (2025-11-25): whether it may, must or must not be called
/// as a task. Absent or unknown values mean `Forbidden`, the spec's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    /// Not called as a task (the default).
    Forbidden,
    /// Either way.
    Optional,
    /// Only as a task: a plain call is rejected by the server.
    Required,
}

impl ToolInfo {
    /// The tool's `execution.taskSupport` as listed.
    pub fn task_support(&self) -> TaskSupport {
        match self.definition["execution"]["taskSupport"].as_str() {
            Some("required") => TaskSupport::Required,
            Some("optional") => TaskSupport::Optional,
            _ => TaskSupport::Forbidden,
        }
    }
}

/// Where the arguments first fail their schema: a JSON pointer into the arguments and what is
/// wrong there, e.g. `at /a: expected number`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentMismatch {
    /// JSON pointer into the arguments (empty: the arguments object itself).
    pub pointer: String,
    /// What is wrong at that place, one line.
    pub reason: String,
}

impl fmt::Display for ArgumentMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            write!(f, "at (root): {}", self.reason)
        } else {
            write!(f, "at {}: {}", self.pointer, self.reason)
        }
    }
}

/// An `inputSchema` the validator cannot compile; the call is then not checked (the server
/// is the judge of its own broken schema, and `probe` reports it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the inputSchema does not compile: {0}")]
pub struct InputSchemaError(pub String);

/// Why a call is known from `tools/list` to fail before it is sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallProblem {
    /// The tool is not in the list.
    #[error("{tool:?} is not in tools/list{}", close_names(.close))]
    UnknownTool {
        /// The name called.
        tool: String,
        /// Listed names close to it, closest first.
        close: Vec<String>,
    },
    /// The arguments do not match the tool's `inputSchema`.
    #[error("arguments do not match the inputSchema of {tool:?} ({mismatch})")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// The first place where they fail.
        mismatch: ArgumentMismatch,
    },
    /// The tool's `execution.taskSupport` is `required` and the call is not a task.
    #[error("{tool:?} needs --task (its execution.taskSupport is \"required\")")]
    NeedsTask {
        /// The tool.
        tool: String,
    },
}

impl CallProblem {
    /// A stable identifier for records and reports.
    pub fn code(&self) -> &'static str {
        match self {
            CallProblem::UnknownTool { .. } => "TOOL_NOT_LISTED",
            CallProblem::InvalidArguments { .. } => "ARGUMENTS_DO_NOT_MATCH_INPUT_SCHEMA",
            CallProblem::NeedsTask { .. } => "TOOL_REQUIRES_TASK",
        }
    }

    /// What the caller should change, one sentence.
    pub fn fix(&self) -> &'static str {
        match self {
            CallProblem::UnknownTool { .. } => "check the tool name against tools/list",
            CallProblem::InvalidArguments { .. } => "fix the arguments to match the inputSchema",
            CallProblem::NeedsTask { .. } => "call it again with --task",
        }
    }
}

fn close_names(close: &[String]) -> String {
    if close.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = close.iter().map(|n| format!("{n:?}")).collect();
        format!(" (close: {})", quoted.join(", "))
    }
}

/// The first reason the listed tools give for this call to fail, if any. An `inputSchema`
/// that does not compile is not held against the call.
pub fn check_call(
    tools: &[ToolInfo],
    name: &str,
    arguments: &Value,
    as_task: bool,
) -> Option<CallProblem> {
    let Some(tool) = tools.iter().find(|t| t.name == name) else {
        return Some(CallProblem::UnknownTool {
            tool: name.to_string(),
            close: close_matches(name, tools.iter().map(|t| t.name.as_str())),
        });
    };
    if !as_task && tool.task_support() == TaskSupport::Required {
        return Some(CallProblem::NeedsTask {
            tool: name.to_string(),
        });
    }
    let schema = tool.definition.get("inputSchema")?;
    match check_arguments(schema, arguments) {
        Ok(Some(mismatch)) => Some(CallProblem::InvalidArguments {
            tool: name.to_string(),
            mismatch,
        }),
        Ok(None) | Err(_) => None,
    }
}

/// Validates arguments against an `inputSchema` in its dialect (the draft its `$schema`
/// names, else 2020-12 as MCP says; `format` is not asserted; no remote `$ref` fetched: see
/// [`mcp_triage_core::compile_listed`]): the first mismatch, if any. The schema is only read,
/// so every keyword of it stays in the listed definition.
pub fn check_arguments(
    schema: &Value,
    arguments: &Value,
) -> Result<Option<ArgumentMismatch>, InputSchemaError> {
    if !schema.is_object() && !schema.is_boolean() {
        return Err(InputSchemaError(
            "a JSON Schema is an object (or a boolean)".into(),
        ));
    }
    let validator = mcp_triage_core::compile_listed(schema)
        .map_err(|e| InputSchemaError(mcp_triage_core::sanitize_line(&e.to_string(), 200)))?;
    let Some(e) = validator.iter_errors(arguments).next() else {
        return Ok(None);
    };
    let at = e.instance_path().as_str().to_string();
    let message = e.to_string();
    Ok(Some(mismatch(at, e.kind(), &message)))
}

/// The pointer and a short reason for one validation error: the common keywords in words,
/// the validator's own message for the rest.
fn mismatch(at: String, kind: &ValidationErrorKind, message: &str) -> ArgumentMismatch {
    let short = |s: String| mcp_triage_core::sanitize_line(&s, MAX_REASON_CHARS);
    let (pointer, reason) = match kind {
        ValidationErrorKind::Type {
            kind: TypeKind::Single(t),
        } => (at, format!("expected {}", t.as_str())),
        ValidationErrorKind::Type {
            kind: TypeKind::Multiple(set),
        } => {
            let names: Vec<&str> = set.iter().map(|t| t.as_str()).collect();
            (at, format!("expected {}", names.join(" or ")))
        }
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map_or(property.to_string(), str::to_string);
            (join_pointer(&at, &name), "required but missing".into())
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => match unexpected.first() {
            Some(name) => (
                join_pointer(&at, name),
                "not allowed (the schema has additionalProperties: false)".into(),
            ),
            None => (at, short(message.to_string())),
        },
        ValidationErrorKind::Enum { options } => (at, short(format!("expected one of {options}"))),
        ValidationErrorKind::Constant { expected_value } => {
            (at, short(format!("expected {expected_value}")))
        }
        ValidationErrorKind::Minimum { limit } => (at, format!("less than the minimum {limit}")),
        ValidationErrorKind::Maximum { limit } => (at, format!("greater than the maximum {limit}")),
        _ => (at, short(message.to_string())),
    };
    ArgumentMismatch { pointer, reason }
}

/// `base` extended by one JSON pointer segment (RFC 6901: `~` → `~0`, `/` → `~1`).
fn join_pointer(base: &str, segment: &str) -> String {
    format!("{base}/{}", segment.replace('~', "~0").replace('/', "~1"))
}

/// Listed names close to `name`: an edit distance of at most a third of the name (at least
/// 2), or one name containing the other, ignoring case; closest first.
pub fn close_matches<'a>(name: &str, listed: impl Iterator<Item = &'a str>) -> Vec<String> {
    let wanted = name.to_lowercase();
    let budget = (wanted.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = listed
        .filter_map(|n| {
            let l = n.to_lowercase();
            let d = edit_distance(&wanted, &l);
            let contains = !wanted.is_empty() && (l.contains(&wanted) || wanted.contains(&l));
            (d <= budget || contains).then_some((d, n))
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(MAX_CLOSE_NAMES)
        .map(|(_, n)| n.to_string())
        .collect()
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(def: Value) -> ToolInfo {
        crate::tools::tool_info(&def)
    }

    fn mismatch_of(schema: Value, args: Value) -> String {
        check_arguments(&schema, &args)
            .expect("the schema compiles")
            .expect("the arguments are invalid")
            .to_string()
    }

    #[test]
    fn mismatches_name_a_pointer_and_a_reason() {
        let s = json!({ "type": "object", "properties": {
            "a": { "type": "number" },
            "b": { "type": "object", "properties": { "c/d": { "type": ["string", "null"] } } },
            "e": { "enum": ["x", "y"] },
            "n": { "type": "integer", "minimum": 1 } },
            "required": ["a"] });
        assert_eq!(
            mismatch_of(s.clone(), json!({ "a": "1" })),
            "at /a: expected number"
        );
        assert_eq!(
            mismatch_of(s.clone(), json!({})),
            "at /a: required but missing"
        );
        assert_eq!(
            mismatch_of(s.clone(), json!({ "a": 1, "b": { "c/d": 3 } })),
            "at /b/c~1d: expected null or string"
        );
        assert_eq!(
            mismatch_of(s.clone(), json!({ "a": 1, "e": "z" })),
            r#"at /e: expected one of ["x","y"]"#
        );
        assert_eq!(
            mismatch_of(s.clone(), json!({ "a": 1, "n": 0 })),
            "at /n: less than the minimum 1"
        );
        let closed = json!({ "type": "object", "properties": {}, "additionalProperties": false });
        assert_eq!(
            mismatch_of(closed, json!({ "x": 1 })),
            "at /x: not allowed (the schema has additionalProperties: false)"
        );
        assert_eq!(
            mismatch_of(json!({ "type": "object" }), json!([])),
            "at (root): expected object"
        );
        assert_eq!(check_arguments(&s, &json!({ "a": 2.5 })), Ok(None));
    }

    #[test]
    fn a_schema_that_does_not_compile_is_an_error_not_a_mismatch() {
        assert!(check_arguments(&json!({ "type": 12 }), &json!({})).is_err());
        assert!(check_arguments(&json!("object"), &json!({})).is_err());
        let t = tool(json!({ "name": "t", "inputSchema": { "type": 12 } }));
        assert_eq!(check_call(&[t], "t", &json!({}), false), None);
    }

    #[test]
    fn unknown_tools_get_close_names() {
        let tools: Vec<ToolInfo> = ["read_counter", "increment_counter", "set_value"]
            .into_iter()
            .map(|n| tool(json!({ "name": n, "inputSchema": { "type": "object" } })))
            .collect();
        let p = check_call(&tools, "read_countr", &json!({}), false).unwrap();
        assert_eq!(
            p.to_string(),
            r#""read_countr" is not in tools/list (close: "read_counter")"#
        );
        assert_eq!(p.code(), "TOOL_NOT_LISTED");
        let p = check_call(&tools, "counter", &json!({}), false).unwrap();
        assert_eq!(
            p,
            CallProblem::UnknownTool {
                tool: "counter".into(),
                close: vec!["read_counter".into(), "increment_counter".into()]
            }
        );
        let p = check_call(&tools, "zzz", &json!({}), false).unwrap();
        assert_eq!(p.to_string(), r#""zzz" is not in tools/list"#);
    }

    #[test]
    fn task_required_tools_need_a_task() {
        let def = |ts: &str| {
            tool(json!({ "name": "t", "inputSchema": { "type": "object" },
                "execution": { "taskSupport": ts } }))
        };
        let p = check_call(&[def("required")], "t", &json!({}), false).unwrap();
        assert_eq!(
            p.to_string(),
            r#""t" needs --task (its execution.taskSupport is "required")"#
        );
        assert_eq!(check_call(&[def("required")], "t", &json!({}), true), None);
        assert_eq!(check_call(&[def("optional")], "t", &json!({}), false), None);
        assert_eq!(def("bogus").task_support(), TaskSupport::Forbidden);
    }

    #[test]
    fn invalid_arguments_name_the_tool_and_the_place() {
        let t = tool(json!({ "name": "add", "inputSchema": { "type": "object",
            "properties": { "a": { "type": "number" } }, "required": ["a"] } }));
        let p = check_call(&[t], "add", &json!({ "a": "x" }), false).unwrap();
        assert_eq!(
            p.to_string(),
            r#"arguments do not match the inputSchema of "add" (at /a: expected number)"#
        );
    }

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }
}
