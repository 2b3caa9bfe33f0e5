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
    /// The raw definition.
    pub definition: Value,
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
}
