//! The 2026-07-28 fixtures of the official conformance suite (0.2.0-alpha,
//! `--requirements 2026-07-28`): the MRTR tools and prompt of SEP-2322
//! (`test_input_required_result_*`), the stateless-era diagnostic tools of SEP-2575
//! (`test_missing_capability`, `test_streaming_elicitation`, `test_logging_tool`) and a tool
//! with an `x-mcp-header` string parameter for SEP-2243's server-side header validation.
//!
//! They are part of the catalogue of every scenario, like the 2025 `test_*` tools, because the
//! suite looks them up by name; a client under test meets the same shapes. In the legacy era the
//! MRTR tools answer with an `isError` result (MRTR needs 2026-07-28), as the catalogue does for
//! every `input_required` reply there.

use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};

use crate::plugin::ToolReply;
use crate::plugin::{Asked, ToolCx};
use crate::protocol::{self, Era};

/// Name of the MRTR prompt (`prompts/get` answers `input_required` first).
pub const MRTR_PROMPT: &str = "test_input_required_result_prompt";

fn empty_schema() -> Value {
    json!({ "type": "object", "properties": {} })
}

/// Tool definitions, appended to the catalogue's `tools/list`.
pub fn tools() -> Vec<Value> {
    let t = |name: &str, description: &str| json!({ "name": name, "description": description, "inputSchema": empty_schema() });
    vec![
        t("test_input_required_result_elicitation", "SEP-2322: asks for `user_name` (elicitation) with input_required, then greets"),
        t("test_input_required_result_sampling", "SEP-2322: asks `capital_question` (sampling) with input_required, then echoes the answer"),
        t("test_input_required_result_list_roots", "SEP-2322: asks `client_roots` (roots/list) with input_required, then lists them"),
        t("test_input_required_result_request_state", "SEP-2322: input_required with requestState; the retry is checked against it (\"state-ok\")"),
        t("test_input_required_result_multiple_inputs", "SEP-2322: one input_required with elicitation, sampling and roots/list requests"),
        t("test_input_required_result_multi_round", "SEP-2322: two input_required rounds, each with its own requestState"),
        t("test_input_required_result_tampered_state", "SEP-2322: a tampered requestState on the retry is rejected with -32602"),
        t("test_input_required_result_capabilities", "SEP-2322: asks only for what the client declared in clientCapabilities"),
        t("test_missing_capability", "SEP-2575: needs the client's `sampling` capability; without it -32021 with HTTP 400"),
        t("test_streaming_elicitation", "SEP-2575: elicitation through input_required, never as an independent request on the response stream"),
        t("test_logging_tool", "SEP-2575: logs only when the request's _meta sets a logLevel"),
        t("test_trigger_tool_change", "SEP-2575 diagnostic hook: announces a tools list change (notifications/tools/list_changed) to the instance's listeners; the definitions stay the same, which a client must tolerate (the notification only says re-fetch)"),
        t("test_trigger_prompt_change", "SEP-2575 diagnostic hook: announces a prompts list change (notifications/prompts/list_changed) to the instance's listeners; the definitions stay the same"),
        json!({
            "name": "test_header_param",
            "description": "SEP-2243: `region` is mirrored in the Mcp-Param-Region header, which the kitchen validates against the body",
            "inputSchema": { "type": "object", "properties": { "region": { "type": "string", "x-mcp-header": "Region" } }, "required": ["region"] }
        }),
    ]
}

fn elicit(message: &str, prop: &str, ty: &str) -> (String, Value) {
    (
        "elicitation/create".into(),
        json!({ "mode": "form", "message": message, "requestedSchema": {
            "type": "object", "properties": { prop: { "type": ty } }, "required": [prop] } }),
    )
}

fn sample(text: &str, max_tokens: u32) -> (String, Value) {
    (
        "sampling/createMessage".into(),
        json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": text } }], "maxTokens": max_tokens }),
    )
}

fn roots() -> (String, Value) {
    ("roots/list".into(), json!({}))
}

fn capability_of(method: &str) -> &'static str {
    match method {
        "sampling/createMessage" => "sampling",
        "roots/list" => "roots",
        _ => "elicitation",
    }
}

/// Answers for every key of `wanted` from `inputResponses`, or the `input_required` reply
/// that asks for all of them (with `state` signed into `requestState`). A retry that misses a
/// key, or whose `inputResponses` is not an object, is asked again (SEP-2322 recommends
/// re-requesting rather than failing).
fn gather(
    cx: &ToolCx,
    wanted: Vec<(&str, (String, Value))>,
    state: Value,
) -> Result<Map<String, Value>, ToolReply> {
    let responses = cx.input_responses.as_ref().and_then(Value::as_object);
    let mut got = Map::new();
    for (key, _) in &wanted {
        match responses
            .and_then(|r| r.get(*key))
            .filter(|v| v.is_object())
        {
            Some(v) => {
                got.insert((*key).to_string(), v.clone());
            }
            None => break,
        }
    }
    if got.len() == wanted.len() {
        return Ok(got);
    }
    if cx.input_responses.is_some() {
        cx.trace
            .note("inputResponses incomplete: asking again (input_required)");
    }
    let mut requests = Map::new();
    for (key, (method, params)) in wanted {
        requests.insert(key.into(), json!({ "method": method, "params": params }));
    }
    Err(ToolReply::InputRequired {
        input_requests: Value::Object(requests),
        state,
    })
}

fn legacy_refusal() -> ToolReply {
    ToolReply::error_text("input_required results need protocol 2026-07-28")
}

fn sampled_text(v: &Value) -> String {
    v["content"]["text"]
        .as_str()
        .or_else(|| v["content"][0]["text"].as_str())
        .unwrap_or("")
        .to_string()
}

fn root_uris(v: &Value) -> Vec<String> {
    v["roots"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r["uri"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Body of a fixture tool (`None` when `name` is not one). Each tool's body is its own
/// function below, so this is only the era gate of the MRTR tools and the dispatch by name.
pub fn call(name: &str, cx: ToolCx) -> Option<BoxFuture<'static, ToolReply>> {
    let mrtr = name.starts_with("test_input_required_result_");
    if mrtr && cx.era != Era::Modern {
        return Some(Box::pin(async { legacy_refusal() }));
    }
    let fut: BoxFuture<'static, ToolReply> = match name {
        "test_trigger_tool_change" => Box::pin(announce_change(
            cx,
            crate::instance_state::ChangeKind::ToolsListChanged,
            "Announced a tools list change.",
        )),
        "test_trigger_prompt_change" => Box::pin(announce_change(
            cx,
            crate::instance_state::ChangeKind::PromptsListChanged,
            "Announced a prompts list change.",
        )),
        "test_input_required_result_elicitation" | "test_input_required_result_tampered_state" => {
            Box::pin(mrtr_elicitation(cx))
        }
        "test_input_required_result_sampling" => Box::pin(mrtr_sampling(cx)),
        "test_input_required_result_list_roots" => Box::pin(mrtr_list_roots(cx)),
        "test_input_required_result_request_state" => Box::pin(mrtr_request_state(cx)),
        "test_input_required_result_multiple_inputs" => Box::pin(mrtr_multiple_inputs(cx)),
        "test_input_required_result_multi_round" => Box::pin(mrtr_multi_round(cx)),
        "test_input_required_result_capabilities" => Box::pin(mrtr_capabilities(cx)),
        "test_missing_capability" => Box::pin(missing_capability(cx)),
        "test_streaming_elicitation" => Box::pin(streaming_elicitation(cx)),
        "test_logging_tool" => Box::pin(logging_tool(cx)),
        "test_header_param" => Box::pin(header_param(cx)),
        _ => return None,
    };
    Some(fut)
}

/// Body of the SEP-2575 hooks `test_trigger_tool_change` and `test_trigger_prompt_change`:
/// announces a change of `kind` to the instance's listeners; one function for both, as they
/// differ only in the list named.
async fn announce_change(
    cx: ToolCx,
    kind: crate::instance_state::ChangeKind,
    said: &'static str,
) -> ToolReply {
    cx.instance
        .emit(kind, crate::instance_state::ChangeScope::Instance);
    ToolReply::text(said)
}

/// Body of `test_input_required_result_elicitation` and `..._tampered_state` (SEP-2322): asks for
/// `user_name` by elicitation, then greets; a tampered `requestState` is rejected where the
/// signed state is read, before this body runs.
async fn mrtr_elicitation(cx: ToolCx) -> ToolReply {
    let want = vec![("user_name", elicit("What is your name?", "name", "string"))];
    match gather(&cx, want, json!({ "tool": cx.tool })) {
        Ok(a) => {
            let name = a["user_name"]["content"]["name"].as_str().unwrap_or("");
            ToolReply::text(format!("Hello, {name}!"))
        }
        Err(r) => r,
    }
}

/// Body of `test_input_required_result_sampling` (SEP-2322): asks `capital_question` by
/// sampling, then echoes the answer.
async fn mrtr_sampling(cx: ToolCx) -> ToolReply {
    let want = vec![(
        "capital_question",
        sample("What is the capital of France?", 100),
    )];
    match gather(&cx, want, json!({ "tool": cx.tool })) {
        Ok(a) => ToolReply::text(format!(
            "Sampling response: {}",
            sampled_text(&a["capital_question"])
        )),
        Err(r) => r,
    }
}

/// Body of `test_input_required_result_list_roots` (SEP-2322): asks for the client's roots,
/// then lists them.
async fn mrtr_list_roots(cx: ToolCx) -> ToolReply {
    match gather(
        &cx,
        vec![("client_roots", roots())],
        json!({ "tool": cx.tool }),
    ) {
        Ok(a) => ToolReply::text(format!(
            "Client roots: {}",
            root_uris(&a["client_roots"]).join(", ")
        )),
        Err(r) => r,
    }
}

/// Body of `test_input_required_result_request_state` (SEP-2322): one round with a
/// `requestState` the retry must echo exactly (else -32602).
async fn mrtr_request_state(cx: ToolCx) -> ToolReply {
    let state = json!({ "tool": cx.tool, "step": "confirm" });
    let want = vec![(
        "confirm",
        (
            "elicitation/create".to_string(),
            json!({ "mode": "form", "message": "Please confirm", "requestedSchema": {
                    "type": "object", "properties": { "ok": { "type": "boolean" } }, "required": ["ok"] } }),
        ),
    )];
    match gather(&cx, want, state.clone()) {
        Ok(a) if cx.request_state.as_ref() == Some(&state) => ToolReply::text(format!(
            "state-ok: requestState verified, confirm={}",
            a["confirm"]["content"]["ok"]
        )),
        Ok(_) => ToolReply::RpcError {
            status: 200,
            code: protocol::INVALID_PARAMS,
            message: "Invalid params: the retry must echo the requestState".into(),
            data: None,
        },
        Err(r) => r,
    }
}

/// Body of `test_input_required_result_multiple_inputs` (SEP-2322): elicitation, sampling
/// and roots/list asked in one `input_required`.
async fn mrtr_multiple_inputs(cx: ToolCx) -> ToolReply {
    let want = vec![
        ("user_name", elicit("What is your name?", "name", "string")),
        ("greeting", sample("Generate a greeting", 50)),
        ("client_roots", roots()),
    ];
    match gather(&cx, want, json!({ "tool": cx.tool })) {
        Ok(a) => ToolReply::text(format!(
            "name={}, greeting={}, roots={}",
            a["user_name"]["content"]["name"].as_str().unwrap_or(""),
            sampled_text(&a["greeting"]),
            root_uris(&a["client_roots"]).join(", ")
        )),
        Err(r) => r,
    }
}

/// Body of `test_input_required_result_multi_round` (SEP-2322): two rounds, the round
/// number and the first answer carried in each round's own `requestState`.
async fn mrtr_multi_round(cx: ToolCx) -> ToolReply {
    let round = cx
        .request_state
        .as_ref()
        .and_then(|s| s["round"].as_u64())
        .unwrap_or(1);
    if round < 2 {
        let want = vec![(
            "step1",
            elicit("Step 1: What is your name?", "name", "string"),
        )];
        match gather(&cx, want, json!({ "tool": cx.tool, "round": 1 })) {
            Ok(a) => {
                let name = a["step1"]["content"]["name"].clone();
                let want2 = vec![(
                    "step2",
                    elicit("Step 2: What is your favorite color?", "color", "string"),
                )];
                // Round 2 is asked even if the client already sent `step2`: the
                // second round has its own state.
                let mut requests = Map::new();
                for (key, (method, params)) in want2 {
                    requests.insert(key.into(), json!({ "method": method, "params": params }));
                }
                ToolReply::InputRequired {
                    input_requests: Value::Object(requests),
                    state: json!({ "tool": cx.tool, "round": 2, "name": name }),
                }
            }
            Err(r) => r,
        }
    } else {
        let state = cx.request_state.clone().unwrap_or(Value::Null);
        let want = vec![(
            "step2",
            elicit("Step 2: What is your favorite color?", "color", "string"),
        )];
        match gather(&cx, want, state.clone()) {
            Ok(a) => ToolReply::text(format!(
                "Done after 2 rounds: name={}, color={}",
                state["name"].as_str().unwrap_or(""),
                a["step2"]["content"]["color"].as_str().unwrap_or("")
            )),
            Err(r) => r,
        }
    }
}

/// Body of `test_input_required_result_capabilities` (SEP-2322): asks only for what the
/// client declared in `clientCapabilities`.
async fn mrtr_capabilities(cx: ToolCx) -> ToolReply {
    let all = vec![
        ("user_name", elicit("What is your name?", "name", "string")),
        ("greeting", sample("Generate a greeting", 50)),
        ("client_roots", roots()),
    ];
    let want: Vec<_> = all
        .into_iter()
        .filter(|(_, (m, _))| cx.has_capability(capability_of(m)))
        .collect();
    if want.is_empty() {
        return ToolReply::text(
            "The client declared none of elicitation, sampling, roots: nothing to ask",
        );
    }
    let keys: Vec<String> = want.iter().map(|(k, _)| k.to_string()).collect();
    match gather(&cx, want, json!({ "tool": cx.tool })) {
        Ok(_) => ToolReply::text(format!("Received: {}", keys.join(", "))),
        Err(r) => r,
    }
}

/// Body of `test_missing_capability` (SEP-2575): needs the client's `sampling` capability,
/// and without it `ask` answers -32021.
async fn missing_capability(cx: ToolCx) -> ToolReply {
    let (method, params) = sample("Say hello", 20);
    match cx
        .ask(
            "answer",
            &method,
            params,
            "sampling",
            json!({ "tool": cx.tool }),
        )
        .await
    {
        Asked::Answer(a) => ToolReply::text(format!("Sampled: {}", sampled_text(&a))),
        Asked::Pending(r) => r,
        Asked::Failed(e) => ToolReply::error_text(format!("sampling failed: {e}")),
    }
}

/// Body of `test_streaming_elicitation` (SEP-2575): reports progress, then elicits through
/// `ask` (input_required in 2026-07-28, never a request on the response stream).
async fn streaming_elicitation(cx: ToolCx) -> ToolReply {
    cx.progress(0.0, Some(1.0), Some("asking"));
    let (method, params) = elicit("Continue?", "answer", "string");
    match cx
        .ask(
            "answer",
            &method,
            params,
            "elicitation",
            json!({ "tool": cx.tool }),
        )
        .await
    {
        Asked::Answer(a) => ToolReply::text(format!("Elicited: {}", a["content"])),
        Asked::Pending(r) => r,
        Asked::Failed(e) => ToolReply::error_text(format!("elicitation failed: {e}")),
    }
}

/// Body of `test_logging_tool` (SEP-2575): logs two lines, which go out only when the
/// request's `_meta` sets a logLevel.
async fn logging_tool(cx: ToolCx) -> ToolReply {
    cx.log("info", json!("test_logging_tool started"));
    cx.log("warning", json!("test_logging_tool finishing"));
    ToolReply::text("Logged at the requested level (nothing without a logLevel)")
}

/// Body of `test_header_param` (SEP-2243): echoes `region`; the kitchen checks the
/// `Mcp-Param-Region` header that mirrors it against the body.
async fn header_param(cx: ToolCx) -> ToolReply {
    let region = cx.args["region"].as_str().unwrap_or("").to_string();
    ToolReply::text(format!("region={region}"))
}

/// `prompts/get` for [`MRTR_PROMPT`] in the modern era: `Err` = the `input_required` result
/// (unsigned state; the caller signs it), `Ok` = the `GetPromptResult`.
pub fn mrtr_prompt(params: &Value) -> Result<Value, Value> {
    if let Some(ans) = params
        .get("inputResponses")
        .and_then(|r| r.get("user_context"))
        .filter(|v| v.is_object())
    {
        let context = ans["content"]["context"].as_str().unwrap_or("").to_string();
        return Ok(json!({
            "description": "A prompt built from elicited context",
            "messages": [{ "role": "user", "content": { "type": "text", "text": format!("Use this context: {context}") } }]
        }));
    }
    let (method, p) = elicit("What context should the prompt use?", "context", "string");
    Err(json!({ "user_context": { "method": method, "params": p } }))
}
