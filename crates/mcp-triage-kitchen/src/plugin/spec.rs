//! How a scenario describes itself: its id, documentation, parameters with their types and
//! defaults, and the outcome a client should reach; and the parameters as a scenario reads
//! them once merged over the defaults.
//!
//! Part of the plug-in API ([`crate::plugin`]); a leaf, so the registry, the admin API and
//! the URL-instance parser can all read a schema without knowing any scenario.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Map, Value};

/// What a client should end up seeing when it calls `run_configured_test_scenario` (or
/// the request the scenario targets) against this scenario with its defaults: the
/// classifier's own outcome type, so a scenario's documented outcome and the verdict a client
/// reaches are the same names by construction (the kitchen kept a copy of them before).
pub use mcp_triage_core::Outcome;

/// Where a scenario comes from: kept so users can tell which ids are portable to Cakewalk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Same id, parameters and semantics as Cakewalk MCP Test Kitchen.
    Cakewalk,
    /// Added by the kitchen.
    Kitchen,
}

/// JSON type a parameter must have. Checked when a selection is stored or a URL instance
/// is created, so a typo fails loudly instead of silently falling back to a default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// A JSON integer.
    Integer,
    /// A JSON boolean.
    Boolean,
    /// A JSON string.
    String,
    /// An array of integers.
    IntegerArray,
    /// An array of strings.
    StringArray,
    /// A JSON object.
    Object,
    /// An array of objects.
    ObjectArray,
    /// A JSON number.
    Number,
}

impl ParamKind {
    fn accepts(self, v: &Value) -> bool {
        match self {
            ParamKind::Integer => v.is_i64() || v.is_u64(),
            ParamKind::Boolean => v.is_boolean(),
            ParamKind::String => v.is_string(),
            ParamKind::Number => v.is_number(),
            ParamKind::IntegerArray => v
                .as_array()
                .is_some_and(|a| a.iter().all(|x| x.is_i64() || x.is_u64())),
            ParamKind::StringArray => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            ParamKind::Object => v.is_object(),
            ParamKind::ObjectArray => v.as_array().is_some_and(|a| a.iter().all(Value::is_object)),
        }
    }
}

/// One parameter of a scenario.
#[derive(Debug, Serialize)]
pub struct ParamSpec {
    /// Name as in Cakewalk (camelCase; matched case-insensitively like Cakewalk's binder).
    pub name: &'static str,
    /// JSON type.
    pub kind: ParamKind,
    /// Default as a JSON literal.
    #[serde(skip)]
    pub default: &'static str,
    /// For string parameters with a closed set of values.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub choices: &'static [&'static str],
    /// What it does.
    pub doc: &'static str,
}

impl ParamSpec {
    /// The default value, parsed.
    pub fn default_value(&self) -> Value {
        serde_json::from_str(self.default).unwrap_or(Value::Null)
    }
}

/// Static description of a scenario.
#[derive(Debug)]
pub struct ScenarioInfo {
    /// Unique id, e.g. `errors.http_status_sequence`.
    pub id: &'static str,
    /// One line.
    pub summary: &'static str,
    /// What goes on the wire, and what counts.
    pub docs: &'static str,
    /// Parameters with defaults.
    pub params: &'static [ParamSpec],
    /// Expected client-visible outcome with the defaults.
    pub outcome: Outcome,
    /// Cakewalk or kitchen.
    pub origin: Origin,
}

/// Parameter names accepted by every scenario (kitchen knobs, not scenario semantics).
pub const COMMON_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "responseMode",
        kind: ParamKind::String,
        default: "\"auto\"",
        choices: &["auto", "json", "sse"],
        doc: "How requests are answered: `json` (application/json), `sse` (text/event-stream), or `auto` (JSON unless the handler emits messages before its result). Overrides the server option for this instance.",
    },
    ParamSpec {
        name: "unknownToolAs",
        kind: ParamKind::String,
        default: "\"jsonrpc\"",
        choices: &["jsonrpc", "isError"],
        doc: "How a tools/call of a tool the instance does not list is answered: `jsonrpc`, the JSON-RPC error -32602 `Unknown tool: <name>` of the released revisions; `isError`, the tool execution error draft SEP-2145 asks for (HTTP 200, an isError result with the text `Unknown tool: <name>. Re-run tools/list and retry.`).",
    },
    ParamSpec {
        name: "contentEncoding",
        kind: ParamKind::String,
        default: "\"identity\"",
        choices: &["identity", "gzip", "deflate", "br", "zstd", "accept"],
        doc: "The Content-Encoding of every answer to a POST (JSON bodies and SSE streams, each event flushed as it goes): `identity` (none), `gzip`, `deflate` (zlib), `br`, `zstd`, or `accept`: the first of zstd, br, gzip, deflate the request's Accept-Encoding allows (none: identity). GET streams and empty answers are never compressed.",
    },
];

/// A scenario's parameters after merging the caller's JSON over the defaults.
#[derive(Clone, Debug, Default)]
pub struct Params {
    values: Map<String, Value>,
}

impl Params {
    /// Merge `given` (an object; anything else means "all defaults", as Cakewalk does) over
    /// the defaults of `info`. Keys match case-insensitively.
    pub fn resolve(info: &ScenarioInfo, given: &Value) -> Params {
        let mut values = Map::new();
        for spec in info.params.iter().chain(COMMON_PARAMS) {
            let v = given
                .as_object()
                .and_then(|o| o.iter().find(|(k, _)| k.eq_ignore_ascii_case(spec.name)))
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| spec.default_value());
            values.insert(spec.name.to_string(), v);
        }
        Params { values }
    }

    /// Raw value.
    pub fn get(&self, name: &str) -> &Value {
        self.values.get(name).unwrap_or(&Value::Null)
    }
    /// Integer value (0 when absent).
    pub fn i64(&self, name: &str) -> i64 {
        self.get(name).as_i64().unwrap_or(0)
    }
    /// Non-negative integer value.
    pub fn u64(&self, name: &str) -> u64 {
        self.get(name).as_u64().unwrap_or(0)
    }
    /// Number value.
    pub fn f64(&self, name: &str) -> f64 {
        self.get(name).as_f64().unwrap_or(0.0)
    }
    /// Boolean value.
    pub fn bool(&self, name: &str) -> bool {
        self.get(name).as_bool().unwrap_or(false)
    }
    /// String value (empty when absent).
    pub fn str(&self, name: &str) -> &str {
        self.get(name).as_str().unwrap_or("")
    }
    /// Milliseconds as a duration.
    pub fn ms(&self, name: &str) -> Duration {
        Duration::from_millis(self.u64(name))
    }
    /// Everything, as a JSON object.
    pub fn to_json(&self) -> Value {
        Value::Object(self.values.clone())
    }
}

/// Why a scenario's parameters are refused: by the schema ([`validate_params`]) or by the
/// scenario's own checks ([`crate::plugin::Scenario::validate`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParamsError {
    /// The parameters are not a JSON object.
    #[error("params must be a JSON object")]
    NotObject,
    /// A key names no parameter of the scenario.
    #[error("scenario {scenario} has no parameter {name:?}")]
    Unknown {
        /// The scenario's id.
        scenario: &'static str,
        /// The key as given.
        name: String,
    },
    /// A value is not of the parameter's JSON type.
    #[error("parameter {name} must be of type {kind:?}")]
    WrongType {
        /// The parameter.
        name: &'static str,
        /// Its type.
        kind: ParamKind,
    },
    /// A value is not one of the parameter's choices.
    #[error("parameter {name} must be one of {choices:?}")]
    NotAChoice {
        /// The parameter.
        name: &'static str,
        /// What it may be.
        choices: &'static [&'static str],
    },
    /// A duration or count is negative.
    #[error("{name} must be >= 0")]
    Negative {
        /// The parameter.
        name: &'static str,
    },
    /// A parameter breaks a rule of its scenario; `rule` completes "`name` must ...".
    #[error("{name} must {rule}")]
    Rule {
        /// The parameter.
        name: &'static str,
        /// What it must be, e.g. `be HTTP status codes (100-599)`.
        rule: &'static str,
    },
    /// A string parameter that holds JSON text does not parse.
    #[error("{name} is not JSON: {source}")]
    NotJson {
        /// The parameter.
        name: &'static str,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// `chaos.mix`: a rate for a fault the scenario does not know.
    #[error("unknown fault {fault:?}; known: {known:?}")]
    UnknownFault {
        /// The fault as given.
        fault: String,
        /// The faults there are.
        known: &'static [&'static str],
    },
    /// `chaos.mix`: a rate outside [0, 1].
    #[error("rate of {fault} must be in [0,1]")]
    RateOutOfRange {
        /// The fault.
        fault: String,
    },
    /// `chaos.mix`: the rates add up to more than 1.
    #[error("rates add up to more than 1")]
    RatesOverOne,
    /// `catalog.mutation`: more mutations than the limit.
    #[error("at most {max} mutations")]
    TooManyMutations {
        /// The limit.
        max: usize,
    },
    /// `catalog.mutation`: a member of one mutation breaks its rule; `rule` completes
    /// "`mutations[index].member` must ...".
    #[error("mutations[{index}].{member} must {rule}")]
    Mutation {
        /// The mutation's 0-based index.
        index: usize,
        /// The member, e.g. `toolName`.
        member: &'static str,
        /// What it must be.
        rule: &'static str,
    },
    /// `catalog.mutation`: a rename without `newName`.
    #[error("mutations[{index}]: rename needs newName")]
    RenameWithoutNewName {
        /// The mutation's 0-based index.
        index: usize,
    },
    /// `catalog.mutation`: more list-changed notifications than the limit.
    #[error("mutations[{index}].listChangedNotifications must be at most {max}")]
    TooManyNotifications {
        /// The mutation's 0-based index.
        index: usize,
        /// The limit.
        max: u32,
    },
}

/// Check `given` against the parameter schema of `info`: it must be an object, and every
/// key must name a parameter and have the right type (and be one of the listed choices).
pub fn validate_params(info: &ScenarioInfo, given: &Value) -> Result<(), ParamsError> {
    let Some(obj) = given.as_object() else {
        return Err(ParamsError::NotObject);
    };
    for (k, v) in obj {
        let Some(spec) = info
            .params
            .iter()
            .chain(COMMON_PARAMS)
            .find(|s| s.name.eq_ignore_ascii_case(k))
        else {
            return Err(ParamsError::Unknown {
                scenario: info.id,
                name: k.clone(),
            });
        };
        if !spec.kind.accepts(v) {
            return Err(ParamsError::WrongType {
                name: spec.name,
                kind: spec.kind,
            });
        }
        if !spec.choices.is_empty() && !v.as_str().is_some_and(|s| spec.choices.contains(&s)) {
            return Err(ParamsError::NotAChoice {
                name: spec.name,
                choices: spec.choices,
            });
        }
    }
    Ok(())
}

/// One scenario as JSON.
pub fn info_json(info: &ScenarioInfo) -> Value {
    let params: BTreeMap<&str, Value> = info
        .params
        .iter()
        .map(|p| {
            let mut v = json!({ "type": p.kind, "default": p.default_value(), "doc": p.doc });
            if !p.choices.is_empty() {
                v["choices"] = json!(p.choices);
            }
            (p.name, v)
        })
        .collect();
    json!({
        "id": info.id,
        "summary": info.summary,
        "docs": info.docs,
        "params": params,
        "expectedOutcome": info.outcome,
        "origin": info.origin,
    })
}

/// Cakewalk's `ShouldApplyOnInvocation`: a fault configured for invocation N fires exactly
/// once, on the Nth counted event. `0` is the kitchen's "every time" where a scenario
/// documents it.
pub fn on_invocation(count: u64, on: u64) -> bool {
    count == on
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema's refusals are typed: which parameter, and the fact it broke.
    #[test]
    fn schema_refusals_are_typed() {
        let info = crate::scenarios::find("errors.http_status_sequence")
            .unwrap()
            .info();
        let e = validate_params(info, &json!([1])).unwrap_err();
        assert!(matches!(e, ParamsError::NotObject));
        assert_eq!(e.to_string(), "params must be a JSON object");
        let e = validate_params(info, &json!({ "statusCode": [500] })).unwrap_err();
        assert!(
            matches!(&e, ParamsError::Unknown { scenario: "errors.http_status_sequence", name } if name == "statusCode")
        );
        assert_eq!(
            e.to_string(),
            "scenario errors.http_status_sequence has no parameter \"statusCode\""
        );
        let e = validate_params(info, &json!({ "statusCodes": "500" })).unwrap_err();
        assert!(matches!(
            e,
            ParamsError::WrongType {
                name: "statusCodes",
                kind: ParamKind::IntegerArray
            }
        ));
        assert_eq!(
            e.to_string(),
            "parameter statusCodes must be of type IntegerArray"
        );
    }
}
