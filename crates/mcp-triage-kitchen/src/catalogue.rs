//! The catalogue present in every scenario: Cakewalk's always-on primitives, the three
//! side-effect tools for retry-safety tests, and the reference catalogue the official
//! conformance suite expects of a server (`test_*` tools, `test://…` resources,
//! `test_*` prompts), behaving as the suite's reference server does.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use crate::instance::Instance;
use crate::plugin::{Asked, CatalogClock, Scenario, ToolCx, ToolReply};

/// 1×1 red PNG (the conformance suite's test image).
pub const TEST_IMAGE_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// Minimal WAV file.
pub const TEST_AUDIO_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// URI of Cakewalk's schema-invalid resource, answered at the wire.
pub const INVALID_RESOURCE_URI: &str = "test://resources/invalid";
/// Name of Cakewalk's schema-invalid prompt, answered at the wire.
pub const INVALID_PROMPT: &str = "invalid_prompt";

fn empty_schema() -> Value {
    json!({ "type": "object", "properties": {} })
}

/// The default definition of `run_configured_test_scenario`.
pub fn run_tool_definition() -> Value {
    json!({
        "name": "run_configured_test_scenario",
        "description": "Runs the scenario configured for this kitchen instance and reports what happened.",
        "inputSchema": { "type": "object", "properties": { "message": { "type": "string", "description": "Echoed back in the result." } } }
    })
}

fn base_tools() -> Vec<Value> {
    let t = |name: &str, description: &str, schema: Value| json!({ "name": name, "description": description, "inputSchema": schema });
    vec![
        json!({
            "name": "read_counter",
            "description": "Returns the instance's counter. Changes nothing.",
            "inputSchema": empty_schema(),
            "annotations": { "title": "Read counter", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false }
        }),
        json!({
            "name": "increment_counter",
            "description": "Adds `by` (default 1) to the instance's counter. Every execution changes it: retrying is not safe.",
            "inputSchema": { "type": "object", "properties": { "by": { "type": "integer", "default": 1 } } },
            "annotations": { "title": "Increment counter", "readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false }
        }),
        json!({
            "name": "set_value",
            "description": "Stores `value` under `key`, overwriting what was there. Repeating the same call has no further effect.",
            "inputSchema": { "type": "object", "properties": { "key": { "type": "string" }, "value": {} }, "required": ["key", "value"] },
            "annotations": { "title": "Set value", "readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false }
        }),
        t("test_simple_text", "Tests simple text content response", empty_schema()),
        t("test_image_content", "Tests image content response", empty_schema()),
        t("test_audio_content", "Tests audio content response", empty_schema()),
        t("test_embedded_resource", "Tests embedded resource content response", empty_schema()),
        t("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)", empty_schema()),
        t("test_tool_with_logging", "Tests tool that emits log messages during execution", empty_schema()),
        t("test_tool_with_progress", "Tests tool that reports progress notifications", empty_schema()),
        t("test_error_handling", "Tests error response handling", empty_schema()),
        t("test_reconnection", "Tests SSE stream disconnection and client reconnection (SEP-1699): the stream closes after the priming event and the result is served on resumption.", empty_schema()),
        t("test_sampling", "Tests server-initiated sampling (LLM completion request)",
            json!({ "type": "object", "properties": { "prompt": { "type": "string", "description": "The prompt to send to the LLM" } }, "required": ["prompt"] })),
        t("test_elicitation", "Tests server-initiated elicitation (user input request)",
            json!({ "type": "object", "properties": { "message": { "type": "string", "description": "The message to show the user" } }, "required": ["message"] })),
        t("test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034", empty_schema()),
        t("test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330", empty_schema()),
        json!({
            "name": "json_schema_2020_12_tool",
            "description": "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613, SEP-2106: $anchor, allOf/anyOf, if/then/else)",
            "inputSchema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": { "address": { "$anchor": "addressDef", "type": "object", "properties": { "street": { "type": "string" }, "city": { "type": "string" } } } },
                "properties": { "name": { "type": "string" }, "address": { "$ref": "#/$defs/address" },
                    "contactMethod": { "type": "string", "enum": ["phone", "email"] }, "phone": { "type": "string" }, "email": { "type": "string" } },
                "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
                "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
                "then": { "required": ["phone"] },
                "else": { "required": ["email"] },
                "additionalProperties": false
            }
        }),
    ]
}

/// The tools every scenario lists after its own: the side-effect tools, the conformance
/// reference tools and the 2026 fixtures. Built once: they never change, and rebuilding ~30
/// JSON definitions on every `tools/call` (to look one up by name) was the largest cost of a
/// call in the load profile.
pub fn static_tools() -> &'static [Value] {
    static TOOLS: OnceLock<Vec<Value>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let mut v = base_tools();
        v.extend(crate::fixtures_2026::tools());
        v.extend(crate::fixtures_tasks::tools());
        v
    })
}

/// [`static_tools`] by name.
fn static_tool(name: &str) -> Option<&'static Value> {
    static BY_NAME: OnceLock<HashMap<&'static str, &'static Value>> = OnceLock::new();
    BY_NAME
        .get_or_init(|| {
            static_tools()
                .iter()
                .filter_map(|t| t["name"].as_str().map(|n| (n, t)))
                .collect()
        })
        .get(name)
        .copied()
}

/// Whether `name` is one of the 2026 fixture tools (answered by [`crate::fixtures_2026::call`]).
fn is_fixture_tool(name: &str) -> bool {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES
        .get_or_init(|| {
            crate::fixtures_2026::tools()
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .iter()
        .any(|n| n == name)
}

/// The scenario's own tools: its `run_configured_test_scenario` definition and extras.
fn scenario_tools(instance: &Instance) -> Vec<Value> {
    let s = instance.scenario;
    let mut v = vec![s.run_tool_definition().unwrap_or_else(run_tool_definition)];
    v.extend(s.extra_tools());
    v
}

/// `tools/list` of an instance at catalogue time `clock` (what a scenario with a changing
/// catalogue, `catalog.mutation`, shows at that moment; other scenarios ignore it).
pub fn tools(instance: &Instance, clock: &CatalogClock) -> Vec<Value> {
    if let Some(list) = instance.scenario.tool_list(&instance.state, clock) {
        return list;
    }
    let mut v = scenario_tools(instance);
    v.extend(static_tools().iter().cloned());
    v
}

/// Tool definition by name, as [`tools`] would list it.
pub fn tool(instance: &Instance, clock: &CatalogClock, name: &str) -> Option<Value> {
    if let Some(list) = instance.scenario.tool_list(&instance.state, clock) {
        return list.into_iter().find(|t| t["name"] == name);
    }
    // The scenario's tools come first in the list, so they win a name clash.
    let s = instance.scenario;
    if name == "run_configured_test_scenario" {
        return Some(s.run_tool_definition().unwrap_or_else(run_tool_definition));
    }
    if let Some(t) = s.extra_tools().into_iter().find(|t| t["name"] == name) {
        return Some(t);
    }
    static_tool(name).cloned()
}

fn sep1034_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "User name", "default": "John Doe" },
            "age": { "type": "integer", "description": "User age", "default": 30 },
            "score": { "type": "number", "description": "User score", "default": 95.5 },
            "status": { "type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active" },
            "verified": { "type": "boolean", "description": "Verification status", "default": true }
        },
        "required": []
    })
}

fn sep1330_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": { "type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"] },
            "titledSingle": { "type": "string", "description": "Select one option with titles", "oneOf": [
                { "const": "value1", "title": "First Option" }, { "const": "value2", "title": "Second Option" }, { "const": "value3", "title": "Third Option" } ] },
            "legacyEnum": { "type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"] },
            "untitledMulti": { "type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3, "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
            "titledMulti": { "type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3, "items": { "anyOf": [
                { "const": "value1", "title": "First Choice" }, { "const": "value2", "title": "Second Choice" }, { "const": "value3", "title": "Third Choice" } ] } }
        },
        "required": []
    })
}

async fn elicit_tool(
    cx: ToolCx,
    message: String,
    schema: Value,
    prefix: &'static str,
) -> ToolReply {
    let params = json!({ "mode": "form", "message": message, "requestedSchema": schema });
    match cx
        .ask(
            "elicitation",
            "elicitation/create",
            params,
            "elicitation",
            json!({ "tool": cx.tool }),
        )
        .await
    {
        Asked::Answer(r) => ToolReply::text(format!(
            "{prefix}: action={}, content={}",
            r["action"].as_str().unwrap_or(""),
            r.get("content").cloned().unwrap_or_else(|| json!({}))
        )),
        Asked::Pending(reply) => reply,
        Asked::Failed(e) => ToolReply::text(format!("Elicitation not supported or error: {e}")),
    }
}

/// Body of a catalogue tool (`None` when the name is not a catalogue tool). `scenario` is the
/// instance's: it answers `run_configured_test_scenario` and its own extra tools.
///
/// Tools whose reply is fixed come from [`fixed_reply_tool`], tools with a body of their own
/// are the functions below it; this is the dispatch by name.
pub fn call(
    name: &str,
    scenario: &'static dyn Scenario,
    cx: ToolCx,
) -> Option<BoxFuture<'static, ToolReply>> {
    if let Some(fut) = fixed_reply_tool(name) {
        return Some(fut);
    }
    let fut: BoxFuture<'static, ToolReply> = match name {
        "run_configured_test_scenario" => scenario.run_tool(cx),
        "read_counter" => Box::pin(read_counter_tool(cx)),
        "increment_counter" => Box::pin(increment_counter_tool(cx)),
        "set_value" => Box::pin(set_value_tool(cx)),
        "test_tool_with_logging" => Box::pin(logging_tool(cx)),
        "test_tool_with_progress" => Box::pin(progress_tool(cx)),
        "test_reconnection" => Box::pin(reconnection_tool(cx)),
        "test_sampling" => Box::pin(sampling_tool(cx)),
        "test_elicitation" => {
            let message = cx
                .args
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("Please respond")
                .to_string();
            let schema = json!({ "type": "object", "properties": { "response": { "type": "string", "description": "User's response" } }, "required": ["response"] });
            Box::pin(elicit_tool(cx, message, schema, "User response"))
        }
        "test_elicitation_sep1034_defaults" => Box::pin(elicit_tool(
            cx,
            "Please review and update the form fields with defaults".into(),
            sep1034_schema(),
            "Elicitation completed",
        )),
        "test_elicitation_sep1330_enums" => Box::pin(elicit_tool(
            cx,
            "Please select options from the enum fields".into(),
            sep1330_schema(),
            "Elicitation completed",
        )),
        "json_schema_2020_12_tool" => Box::pin(async move {
            ToolReply::text(format!("JSON Schema 2020-12 tool called with: {}", cx.args))
        }),
        other if is_fixture_tool(other) => {
            return crate::fixtures_2026::call(other, cx);
        }
        other if other == "greet" || crate::fixtures_tasks::task_support(other).is_some() => {
            return crate::fixtures_tasks::call_sync(other, cx.args);
        }
        other => {
            return scenario.call_extra_tool(other, cx);
        }
    };
    Some(fut)
}

/// The tools whose reply is fixed, whatever the arguments: the conformance suite's content
/// types and its error result. Their own function because they need no [`ToolCx`], so
/// [`call`] answers them before it hands the context to a tool.
fn fixed_reply_tool(name: &str) -> Option<BoxFuture<'static, ToolReply>> {
    Some(match name {
        "test_simple_text" => {
            Box::pin(async { ToolReply::text("This is a simple text response for testing.") })
        }
        "test_image_content" => Box::pin(async {
            ToolReply::Result(
                json!({ "content": [{ "type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png" }] }),
            )
        }),
        "test_audio_content" => Box::pin(async {
            ToolReply::Result(
                json!({ "content": [{ "type": "audio", "data": TEST_AUDIO_BASE64, "mimeType": "audio/wav" }] }),
            )
        }),
        "test_embedded_resource" => Box::pin(async {
            ToolReply::Result(json!({ "content": [{ "type": "resource", "resource": {
                "uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content." } }] }))
        }),
        "test_multiple_content_types" => Box::pin(async {
            ToolReply::Result(json!({ "content": [
                { "type": "text", "text": "Multiple content types test:" },
                { "type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png" },
                { "type": "resource", "resource": { "uri": "test://mixed-content-resource", "mimeType": "application/json",
                    "text": json!({ "test": "data", "value": 123 }).to_string() } }
            ] }))
        }),
        "test_error_handling" => Box::pin(async {
            ToolReply::error_text("This tool intentionally returns an error for testing")
        }),
        _ => return None,
    })
}

/// Body of `read_counter`: the instance's counter, as text and `structuredContent`.
async fn read_counter_tool(cx: ToolCx) -> ToolReply {
    let v = cx.instance.read_counter();
    ToolReply::Result(
        json!({ "content": [{ "type": "text", "text": json!({ "counter": v }).to_string() }], "structuredContent": { "counter": v } }),
    )
}

/// Body of `increment_counter`: adds `by` (default 1) to the instance's counter and says which
/// invocation did it (every execution changes it: not safe to retry).
async fn increment_counter_tool(cx: ToolCx) -> ToolReply {
    let by = cx.args.get("by").and_then(Value::as_i64).unwrap_or(1);
    let v = cx.instance.increment_counter(by);
    ToolReply::Result(
        json!({ "content": [{ "type": "text", "text": json!({ "counter": v, "execution": cx.invocation }).to_string() }], "structuredContent": { "counter": v, "execution": cx.invocation } }),
    )
}

/// Body of `set_value`: stores `value` under `key` in the instance and answers the previous
/// value (an idempotent write).
async fn set_value_tool(cx: ToolCx) -> ToolReply {
    let Some(key) = cx.args.get("key").and_then(Value::as_str) else {
        return ToolReply::error_text("set_value needs a string `key`");
    };
    let value = cx.args.get("value").cloned().unwrap_or(Value::Null);
    let previous = cx.instance.set_value(key, value.clone());
    let body =
        json!({ "key": key, "value": value, "previous": previous, "execution": cx.invocation });
    ToolReply::Result(
        json!({ "content": [{ "type": "text", "text": body.to_string() }], "structuredContent": body }),
    )
}

/// Body of `test_tool_with_logging`: three log notifications 50 ms apart, then a text.
async fn logging_tool(cx: ToolCx) -> ToolReply {
    cx.log("info", json!("Tool execution started"));
    cx.sleep(Duration::from_millis(50)).await;
    cx.log("info", json!("Tool processing data"));
    cx.sleep(Duration::from_millis(50)).await;
    cx.log("info", json!("Tool execution completed"));
    ToolReply::text("Tool with logging executed successfully")
}

/// Body of `test_tool_with_progress`: progress 0, 50 and 100 of 100, 50 ms apart, then
/// the progress token as text.
async fn progress_tool(cx: ToolCx) -> ToolReply {
    for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            cx.sleep(Duration::from_millis(50)).await;
        }
        cx.progress(p, Some(100.0), Some(&format!("Completed step {p} of 100")));
    }
    let tok = cx.progress_token.clone().unwrap_or(json!(0));
    ToolReply::text(match tok {
        Value::String(s) => s,
        other => other.to_string(),
    })
}

/// Body of `test_reconnection` (SEP-1699): answers after 100 ms; the stream closing after
/// the priming event is done by the `tools/call` handler, not here.
async fn reconnection_tool(cx: ToolCx) -> ToolReply {
    cx.sleep(Duration::from_millis(100)).await;
    ToolReply::text("Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.")
}

/// Body of `test_sampling`: asks the client's LLM (`sampling/createMessage`) with `prompt`
/// and answers with its text.
async fn sampling_tool(cx: ToolCx) -> ToolReply {
    let prompt = cx
        .args
        .get("prompt")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let params = json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }], "maxTokens": 100 });
    match cx
        .ask(
            "sampling",
            "sampling/createMessage",
            params,
            "sampling",
            json!({ "tool": "test_sampling" }),
        )
        .await
    {
        Asked::Answer(r) => {
            let text = r["content"]["text"]
                .as_str()
                .or_else(|| r["message"]["content"]["text"].as_str())
                .unwrap_or("No response");
            ToolReply::text(format!("LLM response: {text}"))
        }
        Asked::Pending(reply) => reply,
        Asked::Failed(e) => ToolReply::text(format!("Sampling not supported or error: {e}")),
    }
}

/// `resources/list`.
pub fn resources() -> Vec<Value> {
    vec![
        json!({ "name": "valid_resource", "uri": "test://resources/valid", "description": "A valid text resource.", "mimeType": "text/plain" }),
        json!({ "name": "invalid_resource", "uri": INVALID_RESOURCE_URI, "description": "Read answers HTTP 200 with a schema-invalid result (Cakewalk).", "mimeType": "text/plain" }),
        json!({ "name": "static-text", "uri": "test://static-text", "title": "Static Text Resource", "description": "A static text resource for testing", "mimeType": "text/plain" }),
        json!({ "name": "static-binary", "uri": "test://static-binary", "title": "Static Binary Resource", "description": "A static binary resource (image) for testing", "mimeType": "image/png" }),
        json!({ "name": "watched-resource", "uri": "test://watched-resource", "title": "Watched Resource", "description": "A resource clients can subscribe to", "mimeType": "text/plain" }),
        json!({ "name": "instance-counter", "uri": crate::instance_state::COUNTER_RESOURCE_URI, "title": "Instance counter",
            "description": "The instance's side-effect counter as JSON. Changes whenever increment_counter runs: subscribers get notifications/resources/updated.",
            "mimeType": "application/json" }),
    ]
}

/// `resources/templates/list`.
pub fn resource_templates() -> Vec<Value> {
    vec![
        json!({ "name": "template", "uriTemplate": "test://template/{id}/data", "title": "Resource Template",
        "description": "A resource template with parameter substitution", "mimeType": "application/json" }),
    ]
}

/// The wire body Cakewalk injects for `invalid_resource`.
pub fn invalid_resource_result() -> Value {
    json!({ "contents": [{ "type": "blob", "blob": "not-valid-base64!!!", "mimeType": "not-a-mime-type" }] })
}

/// The wire body Cakewalk injects for `invalid_prompt`.
pub fn invalid_prompt_result() -> Value {
    json!({ "messages": [{ "content": { "type": "unknown_type", "text": "missing role field" } }] })
}

/// `resources/read` (Err: JSON-RPC code and message).
pub fn read_resource(instance: &Instance, uri: &str) -> Result<Value, (i64, String)> {
    if uri == crate::instance_state::COUNTER_RESOURCE_URI {
        let text = json!({ "counter": instance.state.read_counter() }).to_string();
        return Ok(
            json!({ "contents": [{ "uri": uri, "mimeType": "application/json", "text": text }] }),
        );
    }
    read_resource_inner(uri)
}

/// JSON-RPC `error.data` for an unknown resource (SEP-2164: the URI that was not found).
pub fn resource_not_found_data(uri: &str) -> Value {
    json!({ "uri": uri })
}

fn read_resource_inner(uri: &str) -> Result<Value, (i64, String)> {
    let text = |mime: &str, text: &str| json!({ "contents": [{ "uri": uri, "mimeType": mime, "text": text }] });
    match uri {
        "test://resources/valid" => Ok(text("text/plain", "This is a valid resource.")),
        "test://static-text" => Ok(text(
            "text/plain",
            "This is the content of the static text resource.",
        )),
        "test://static-binary" => Ok(
            json!({ "contents": [{ "uri": uri, "mimeType": "image/png", "blob": TEST_IMAGE_BASE64 }] }),
        ),
        "test://watched-resource" => Ok(text("text/plain", "Watched resource content")),
        _ => {
            if let Some(id) = uri
                .strip_prefix("test://template/")
                .and_then(|r| r.strip_suffix("/data"))
            {
                if !id.is_empty() && !id.contains('/') {
                    let body = json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
                    return Ok(text("application/json", &body.to_string()));
                }
            }
            Err((
                crate::protocol::INVALID_PARAMS,
                format!("Resource not found: {uri}"),
            ))
        }
    }
}

/// `prompts/list`.
pub fn prompts() -> Vec<Value> {
    let arg = |name: &str, description: &str, required: bool| json!({ "name": name, "description": description, "required": required });
    vec![
        json!({ "name": "valid_prompt", "description": "A valid prompt.", "arguments": [arg("topic", "What to talk about", false)] }),
        json!({ "name": INVALID_PROMPT, "description": "Get answers HTTP 200 with a schema-invalid result (Cakewalk)." }),
        json!({ "name": "test_simple_prompt", "title": "Simple Test Prompt", "description": "A simple prompt without arguments" }),
        json!({ "name": "test_prompt_with_arguments", "title": "Prompt With Arguments", "description": "A prompt with required arguments",
            "arguments": [arg("arg1", "First test argument", true), arg("arg2", "Second test argument", true)] }),
        json!({ "name": "test_prompt_with_embedded_resource", "title": "Prompt With Embedded Resource", "description": "A prompt that includes an embedded resource",
            "arguments": [arg("resourceUri", "URI of the resource to embed", true)] }),
        json!({ "name": "test_prompt_with_image", "title": "Prompt With Image", "description": "A prompt that includes image content" }),
        json!({ "name": crate::fixtures_2026::MRTR_PROMPT, "title": "Prompt With Input Required", "description": "SEP-2322: prompts/get answers input_required (user_context) before the prompt (2026-07-28)" }),
    ]
}

/// `prompts/get`.
pub fn get_prompt(name: &str, args: &Value) -> Result<Value, (i64, String)> {
    let a = |k: &str| args.get(k).and_then(Value::as_str);
    let user_text = |t: String| json!({ "role": "user", "content": { "type": "text", "text": t } });
    let missing = |k: &str| {
        Err((
            crate::protocol::INVALID_PARAMS,
            format!("Missing required argument: {k}"),
        ))
    };
    match name {
        "valid_prompt" => {
            let topic = a("topic").unwrap_or("the kitchen");
            Ok(
                json!({ "description": "A valid prompt", "messages": [user_text(format!("Tell me about {topic}."))] }),
            )
        }
        "test_simple_prompt" => {
            Ok(json!({ "messages": [user_text("This is a simple prompt for testing.".into())] }))
        }
        "test_prompt_with_arguments" => {
            let (Some(a1), Some(a2)) = (a("arg1"), a("arg2")) else {
                return missing("arg1, arg2");
            };
            Ok(
                json!({ "messages": [user_text(format!("Prompt with arguments: arg1='{a1}', arg2='{a2}'"))] }),
            )
        }
        "test_prompt_with_embedded_resource" => {
            let Some(uri) = a("resourceUri") else {
                return missing("resourceUri");
            };
            Ok(json!({ "messages": [
                { "role": "user", "content": { "type": "resource", "resource": { "uri": uri, "mimeType": "text/plain", "text": "Embedded resource content for testing." } } },
                user_text("Please process the embedded resource above.".into())
            ] }))
        }
        "test_prompt_with_image" => Ok(json!({ "messages": [
            { "role": "user", "content": { "type": "image", "data": TEST_IMAGE_BASE64, "mimeType": "image/png" } },
            user_text("Please analyze the image above.".into())
        ] })),
        _ => Err((
            crate::protocol::INVALID_PARAMS,
            format!("Prompt not found: {name}"),
        )),
    }
}

/// `completion/complete`: values for the known prompt arguments and the resource template.
pub fn complete(params: &Value) -> Value {
    let arg_name = params["argument"]["name"].as_str().unwrap_or("");
    let prefix = params["argument"]["value"].as_str().unwrap_or("");
    let candidates: &[&str] = match arg_name {
        "topic" => &["cooking", "testing", "triage"],
        "id" => &["1", "2", "42"],
        _ => &[],
    };
    let values: Vec<&str> = candidates
        .iter()
        .copied()
        .filter(|c| c.starts_with(prefix))
        .collect();
    json!({ "completion": { "values": values, "total": values.len(), "hasMore": false } })
}
