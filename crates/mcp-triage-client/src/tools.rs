//! Tools as `tools/list` describes them ([`ToolInfo`]): hints, `outputSchema`, and the
//! arguments promoted to `Mcp-Param-*` headers.

use std::sync::Arc;

use mcp_triage_core::retry::ToolHints;
use mcp_triage_core::OutputSchema;
use serde_json::Value;

use crate::headers::header_value;

/// A tool as `tools/list` described it.
#[derive(Debug, Clone)]
pub struct ToolInfo {
    /// The tool's name.
    pub name: String,
    /// Its description, sanitised to one line.
    pub description: Option<String>,
    /// `readOnlyHint` / `idempotentHint`.
    pub hints: ToolHints,
    /// The whole `annotations` object as sent.
    pub annotations: Option<Value>,
    /// Parameters promoted to headers: (argument name, header suffix after `Mcp-Param-`).
    pub header_params: Vec<(String, String)>,
    /// The compiled `outputSchema`, when present and valid.
    pub output_schema: Option<Arc<OutputSchema>>,
    /// The definition exactly as `tools/list` sent it: every keyword of `inputSchema` and
    /// `outputSchema` (`$schema`, `$defs`, `$anchor`, composition, conditionals, unknown and
    /// `x-` ones) stays here untouched, because a host may hand the schema on (to a model, to
    /// another server) and JSON Schema 2020-12 lets any keyword matter. Validation only reads
    /// it ([`crate::precheck::check_arguments`]); no typed struct stands between the wire and this value.
    pub definition: Value,
}

impl ToolInfo {
    /// The `inputSchema` as listed, if the definition has one.
    pub fn input_schema(&self) -> Option<&Value> {
        self.definition.get("inputSchema")
    }
}

pub(crate) fn tool_info(t: &Value) -> ToolInfo {
    let ann = t.get("annotations").filter(|a| a.is_object()).cloned();
    let hint = |k: &str| ann.as_ref().and_then(|a| a.get(k)).and_then(Value::as_bool);
    let mut header_params = Vec::new();
    if let Some(props) = t["inputSchema"]["properties"].as_object() {
        for (arg, schema) in props {
            if let Some(h) = schema.get("x-mcp-header").and_then(Value::as_str) {
                header_params.push((arg.clone(), h.to_string()));
            }
        }
    }
    let output_schema = t
        .get("outputSchema")
        .and_then(|s| OutputSchema::compile(s).ok())
        .map(Arc::new);
    ToolInfo {
        name: t["name"].as_str().unwrap_or("").to_string(),
        description: t["description"]
            .as_str()
            .map(|d| mcp_triage_core::sanitize_line(d, 200)),
        hints: ToolHints {
            read_only: hint("readOnlyHint"),
            idempotent: hint("idempotentHint"),
        },
        annotations: ann,
        header_params,
        output_schema,
        definition: t.clone(),
    }
}

/// `Mcp-Param-*` headers for the tool's `x-mcp-header` parameters (primitives only; null,
/// absent and non-integer numbers are omitted).
pub(crate) fn param_headers(tool: &ToolInfo, args: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (arg, header) in &tool.header_params {
        let value = match args.get(arg) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
            _ => continue,
        };
        out.push((format!("Mcp-Param-{header}"), header_value(&value)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::precheck::{check_call, CallProblem};
    use serde_json::json;

    #[test]
    fn tool_info_reads_hints_and_header_params() {
        let t = tool_info(
            &json!({ "name": "t", "inputSchema": { "type": "object", "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" }, "n": { "type": "number", "x-mcp-header": "N" } } },
            "annotations": { "readOnlyHint": true } }),
        );
        assert_eq!(t.hints.read_only, Some(true));
        assert_eq!(t.hints.idempotent, None);
        let h = param_headers(&t, &json!({ "region": "eu-west", "n": 1.5 }));
        assert_eq!(
            h,
            vec![("Mcp-Param-Region".to_string(), "eu-west".to_string())]
        );
        assert!(param_headers(&t, &json!({ "region": null })).is_empty());
    }

    /// A tool listed with `schema` as its inputSchema: `ok` passes the pre-send check, `bad`
    /// fails it (the mismatch returned); and the schema is still exactly as listed after both
    /// checks, in the definition `list --format json` prints and `call` sends from.
    fn checked(schema: Value, ok: Value, bad: Value) -> String {
        let listed = json!({ "name": "t", "inputSchema": schema.clone() });
        let tool = tool_info(&listed);
        assert_eq!(
            check_call(std::slice::from_ref(&tool), "t", &ok, false),
            None
        );
        let problem = check_call(std::slice::from_ref(&tool), "t", &bad, false)
            .expect("the keyword is enforced");
        assert_eq!(tool.definition, listed, "the definition is kept as listed");
        assert_eq!(tool.input_schema(), Some(&schema));
        match problem {
            CallProblem::InvalidArguments { mismatch, .. } => mismatch.to_string(),
            other => panic!("an argument mismatch expected: {other}"),
        }
    }

    /// `$schema` picks the dialect: `dependentRequired` (2019-09 on) holds under the 2020-12
    /// URI and is no keyword at all under draft-07.
    #[test]
    fn dollar_schema_is_kept_and_names_the_dialect() {
        let schema = |uri: &str| json!({ "$schema": uri, "type": "object", "dependentRequired": { "a": ["b"] } });
        let m = checked(
            schema("https://json-schema.org/draft/2020-12/schema"),
            json!({ "a": 1, "b": 2 }),
            json!({ "a": 1 }),
        );
        assert_eq!(m, "at /b: required but missing");
        let draft7 = tool_info(&json!({ "name": "t",
            "inputSchema": schema("http://json-schema.org/draft-07/schema#") }));
        assert_eq!(check_call(&[draft7], "t", &json!({ "a": 1 }), false), None);
    }

    #[test]
    fn defs_and_local_refs_are_kept_and_followed() {
        let m = checked(
            json!({ "type": "object",
                "$defs": { "address": { "type": "object", "properties": { "city": { "type": "string" } } } },
                "properties": { "home": { "$ref": "#/$defs/address" } } }),
            json!({ "home": { "city": "Oslo" } }),
            json!({ "home": { "city": 7 } }),
        );
        assert_eq!(m, "at /home/city: expected string");
    }

    #[test]
    fn an_anchor_is_kept_and_a_ref_to_it_resolves() {
        let m = checked(
            json!({ "type": "object",
                "$defs": { "id": { "$anchor": "userId", "type": "string", "pattern": "^[a-z]+$" } },
                "properties": { "owner": { "$ref": "#userId" } } }),
            json!({ "owner": "ada" }),
            json!({ "owner": "Ada 1" }),
        );
        assert!(m.starts_with("at /owner: "), "{m}");
    }

    #[test]
    fn additional_properties_false_is_kept_and_enforced() {
        let m = checked(
            json!({ "type": "object", "properties": { "a": {} }, "additionalProperties": false }),
            json!({ "a": 1 }),
            json!({ "a": 1, "b": 2 }),
        );
        assert_eq!(
            m,
            "at /b: not allowed (the schema has additionalProperties: false)"
        );
    }

    #[test]
    fn composition_keywords_are_kept_and_enforced() {
        let m = checked(
            json!({ "type": "object",
                "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
                "oneOf": [{ "required": ["phone"] }, { "required": ["email"] }],
                "not": { "required": ["fax"] } }),
            json!({ "phone": "1" }),
            json!({ "phone": "1", "email": "a@b" }),
        );
        assert!(m.starts_with("at (root): "), "{m}");
    }

    #[test]
    fn conditional_keywords_are_kept_and_enforced() {
        let m = checked(
            json!({ "type": "object",
                "if": { "properties": { "by": { "const": "phone" } }, "required": ["by"] },
                "then": { "required": ["phone"] },
                "else": { "required": ["email"] } }),
            json!({ "by": "phone", "phone": "1" }),
            json!({ "by": "phone", "email": "a@b" }),
        );
        assert_eq!(m, "at /phone: required but missing");
    }

    /// The conformance suite's fixture (json-schema-2020-12-preservation), every family at
    /// once, and an `outputSchema` beside it: both kept, both compiled in 2020-12.
    #[test]
    fn the_conformance_fixture_and_an_output_schema_are_kept() {
        let input = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "$defs": { "address": { "$anchor": "addressDef", "type": "object",
                "properties": { "street": { "type": "string" }, "city": { "type": "string" } } } },
            "properties": { "name": { "type": "string" }, "address": { "$ref": "#/$defs/address" },
                "contactMethod": { "type": "string", "enum": ["phone", "email"] },
                "phone": { "type": "string" }, "email": { "type": "string" } },
            "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
            "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
            "then": { "required": ["phone"] }, "else": { "required": ["email"] },
            "additionalProperties": false });
        let m = checked(
            input,
            json!({ "name": "Ada", "contactMethod": "phone", "phone": "1",
                "address": { "city": "Oslo" } }),
            json!({ "contactMethod": "phone", "email": "a@b" }),
        );
        assert_eq!(m, "at /phone: required but missing");
        let output = json!({ "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object", "$defs": { "n": { "type": "integer" } },
            "properties": { "count": { "$ref": "#/$defs/n" } }, "required": ["count"],
            "x-vendor": { "kept": true } });
        let t = tool_info(&json!({ "name": "t", "inputSchema": { "type": "object" },
            "outputSchema": output.clone() }));
        let compiled = t.output_schema.as_ref().expect("the outputSchema compiles");
        assert_eq!(compiled.source(), &output);
        assert_eq!(t.definition["outputSchema"], output);
        assert!(compiled.validate(&json!({ "count": 3 })).is_ok());
        assert!(compiled.validate(&json!({ "count": "3" })).is_err());
    }
}
