//! The checks of one tool definition from `tools/list`: its name, its schemas, its annotations,
//! and the 2026-07-28 `x-mcp-header` rules. `probe` lists every problem; `call` and
//! `conformance-client` refuse a tool whose header parameters break the rules (a client MUST NOT
//! call it). In their own module because three commands use them.

use std::collections::HashSet;

use mcp_triage_client::ToolInfo;
use serde_json::{json, Value};

/// The 2026-07-28 `x-mcp-header` rules a tool definition breaks, as sentences naming the
/// argument: the value must be a string that is a valid header name part (letters, digits,
/// `-`), unique case-insensitively within the tool, on a property of type string, integer or
/// boolean (the digest: "primitive types only (no `number`)"). A client MUST NOT call such a
/// tool, so `conformance-client` leaves it out and `call` refuses it; `probe` lists them.
pub fn header_problems(definition: &Value) -> Vec<String> {
    let mut p = Vec::new();
    let props = definition["inputSchema"]
        .get("properties")
        .and_then(Value::as_object);
    let mut headers = HashSet::new();
    for (arg, prop) in props.into_iter().flatten() {
        let Some(h) = prop.get("x-mcp-header") else {
            continue;
        };
        let Some(h) = h.as_str() else {
            p.push(format!("x-mcp-header of {arg:?} is not a string"));
            continue;
        };
        if h.is_empty() || !h.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            p.push(format!(
                "x-mcp-header {h:?} of {arg:?} is not a valid header name part"
            ));
        }
        if !headers.insert(h.to_ascii_lowercase()) {
            p.push(format!(
                "x-mcp-header {h:?} is used twice (case-insensitive)"
            ));
        }
        let ty = prop.get("type").and_then(Value::as_str);
        if !matches!(ty, Some("string" | "integer" | "boolean")) {
            p.push(format!(
                "x-mcp-header on {arg:?} of type {}: only string, integer and boolean can be headers",
                ty.unwrap_or("(none)")
            ));
        }
    }
    p
}

/// Problems of one tool definition, as sentences.
pub fn tool_problems(t: &ToolInfo) -> Vec<String> {
    let mut p = Vec::new();
    let d = &t.definition;
    let name = d["name"].as_str().unwrap_or("");
    if name.is_empty() || name.len() > 128 {
        p.push("name must be 1 to 128 characters".to_string());
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        p.push("name has characters outside A-Z a-z 0-9 _ - . (SHOULD)".to_string());
    }
    match d.get("inputSchema") {
        None => p.push("inputSchema is missing (MUST be a JSON Schema object)".to_string()),
        Some(s) if !s.is_object() => p.push("inputSchema is not an object".to_string()),
        Some(s) => {
            if s.get("type").and_then(Value::as_str) != Some("object") {
                p.push("inputSchema.type is not \"object\"".to_string());
            }
            let props = s.get("properties").and_then(Value::as_object);
            for r in s["required"].as_array().into_iter().flatten() {
                let r = r.as_str().unwrap_or("");
                if !props.is_some_and(|m| m.contains_key(r)) {
                    p.push(format!(
                        "inputSchema.required names {r:?}, which has no property"
                    ));
                }
            }
            p.extend(header_problems(d));
        }
    }
    if let Some(s) = d.get("outputSchema") {
        if t.output_schema.is_none() {
            p.push("outputSchema does not compile as a JSON Schema".to_string());
        } else if s.get("type").and_then(Value::as_str) != Some("object") {
            p.push("outputSchema.type is not \"object\" (required before 2026-07-28)".to_string());
        }
    }
    if let Some(a) = d.get("annotations").and_then(Value::as_object) {
        for (k, v) in a {
            if k.ends_with("Hint") && !v.is_boolean() {
                p.push(format!("annotations.{k} is not a boolean"));
            }
        }
        if a.get("readOnlyHint") == Some(&json!(true))
            && a.get("destructiveHint") == Some(&json!(true))
        {
            p.push("readOnlyHint and destructiveHint are both true".to_string());
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(def: Value) -> ToolInfo {
        ToolInfo {
            name: def["name"].as_str().unwrap_or("").to_string(),
            description: None,
            hints: Default::default(),
            annotations: def.get("annotations").cloned(),
            header_params: Vec::new(),
            output_schema: def
                .get("outputSchema")
                .and_then(|s| mcp_triage_core::OutputSchema::compile(s).ok())
                .map(std::sync::Arc::new),
            definition: def,
        }
    }

    #[test]
    fn finds_schema_problems() {
        let good = info(
            json!({ "name": "read", "inputSchema": { "type": "object", "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" } }, "required": ["region"] } }),
        );
        assert!(
            tool_problems(&good).is_empty(),
            "{:?}",
            tool_problems(&good)
        );
        let bad = info(
            json!({ "name": "bad name!", "inputSchema": { "type": "array", "properties": {
            "n": { "type": "number", "x-mcp-header": "N" }, "m": { "type": "string", "x-mcp-header": "n" } }, "required": ["x"] },
            "annotations": { "readOnlyHint": true, "destructiveHint": true, "idempotentHint": "yes" } }),
        );
        let p = tool_problems(&bad).join("\n");
        for needle in [
            "characters",
            "type is not",
            "required names",
            "only string",
            "used twice",
            "both true",
            "not a boolean",
        ] {
            assert!(p.contains(needle), "{needle} missing in:\n{p}");
        }
        assert!(tool_problems(&info(json!({ "name": "x" })))[0].contains("missing"));
    }
}
