//! Answers to the server's questions: legacy server requests and MRTR `inputRequests`, from the
//! configured answers, schema defaults, the prompter or the roots; and the refusal the spec
//! defines when there is none. Pure: shared by the call, the standalone stream and HTTP+SSE.

use serde_json::{json, Map, Value};

use crate::options::ClientOptions;
use crate::wire::Incoming;

/// The reply to a server request: the answer, or a JSON-RPC error when there is none.
pub(crate) fn answer_or_error(opts: &ClientOptions, inc: &Incoming) -> Value {
    build_answer(opts, inc).unwrap_or_else(|_| refusal(inc))
}

/// The answer to a server request mcp-triage has no answer for: the refusal the spec defines
/// for that request, so the server's tool stops waiting and sends its final answer.
///
/// Why one function: the stdio and HTTP paths used to refuse differently (a JSON-RPC `-32603`
/// on one, hanging up on the other), so the server ended the call differently depending on the
/// transport and the client's verdict disagreed with what an observer saw. An elicitation is
/// declined (`ElicitResult.action` is `accept | decline | cancel`); sampling has no refusing
/// result, so it gets the error the spec's sampling page shows for a rejected request (`-1`);
/// anything else is a method this client does not implement (`-32601`).
pub(crate) fn refusal(inc: &Incoming) -> Value {
    let Incoming::Request { id, method, .. } = inc;
    if let Some(result) = refusal_result(method) {
        return json!({ "jsonrpc": "2.0", "id": id, "result": result });
    }
    match method.as_str() {
        "sampling/createMessage" => json!({ "jsonrpc": "2.0", "id": id, "error": {
            "code": -1,
            "message": "User rejected sampling request (no answer configured in mcp-triage)" } }),
        _ => json!({ "jsonrpc": "2.0", "id": id, "error": {
            "code": -32601, "message": format!("Method not found: {method}") } }),
    }
}

/// The result that refuses an unanswered request of `method`, when the spec gives it one
/// (elicitation: `decline`). A task's `inputResponses` (tasks/update) carry results only, so
/// a refusal by error (sampling's -1) has no form there: `None`.
pub(crate) fn refusal_result(method: &str) -> Option<Value> {
    (method == "elicitation/create").then(|| json!({ "action": "decline" }))
}

/// The warning for a refused server request: what was asked, what was sent back, how to answer.
pub(crate) fn refused_text(inc: &Incoming, why: &dyn std::fmt::Display) -> String {
    let Incoming::Request { method, .. } = inc;
    let sent = match method.as_str() {
        "elicitation/create" => "declined it (action \"decline\")",
        "sampling/createMessage" => "refused it (error -1, rejected)",
        _ => "refused it (error -32601)",
    };
    format!("{why}; mcp-triage {sent} so the server could finish the call")
}

/// Whether answering this server request is an input round (a question the user answers);
/// `roots/list` and `ping` are answered from configuration without asking anybody.
pub(crate) fn is_input_round(inc: &Incoming) -> bool {
    let Incoming::Request { method, .. } = inc;
    matches!(
        method.as_str(),
        "elicitation/create" | "sampling/createMessage"
    )
}

/// The method of a server request mcp-triage refused, read back from the `INPUT_UNANSWERED`
/// warning its refusal left ([`Unanswered::Request`]'s text, kept in step by a test); None for
/// any other warning text (an MRTR round left unanswered, a stream that broke off).
///
/// Why from the text: the record's vocabulary has no field for it, and `call`'s advice needs
/// only the method, to name the `--answer METHOD=JSON` that would have answered it.
pub fn refused_request_method(detail: &str) -> Option<&str> {
    let rest = detail.strip_prefix("the server asked ")?;
    let (method, _) = rest.split_once(" and no answer was given")?;
    (!method.is_empty() && !method.contains(char::is_whitespace)).then_some(method)
}

/// A question of the server that nothing configured answers; the text goes into the record's
/// `INPUT_UNANSWERED` warning.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unanswered {
    /// A legacy server request (on a stream or stdio).
    #[error("the server asked {method} and no answer was given (--answer {method}=JSON or --input FILE){}", because(.defaults_gap))]
    Request {
        /// The request's method.
        method: String,
        /// Why `--accept-defaults` could not answer it, when it was on.
        defaults_gap: Option<DefaultsGap>,
    },
    /// MRTR `inputRequests` without an answer, as `KEY (METHOD)`.
    #[error("input required and not answered: {} (use --answer KEY=JSON or --input FILE)", missing.join(", "))]
    InputRequests {
        /// `KEY (METHOD)` of each unanswered request.
        missing: Vec<String>,
    },
}

/// Why `--accept-defaults` could not accept a form: said beside "no answer was given", so a
/// user who asked for the defaults learns what stood in the way.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum DefaultsGap {
    /// A URL-mode (or other non-form) elicitation: there is no form to fill.
    #[error("it is a {0}-mode elicitation, not a form")]
    NotAForm(String),
    /// The request has no `requestedSchema.properties`.
    #[error("the form has no requestedSchema properties")]
    NoFields,
    /// Required fields with no `default`.
    #[error("required field(s) without a default: {}", .0.join(", "))]
    RequiredWithoutDefault(Vec<String>),
}

fn because(gap: &Option<DefaultsGap>) -> String {
    gap.as_ref()
        .map(|g| format!("; --accept-defaults could not answer: {g}"))
        .unwrap_or_default()
}

/// Why `--accept-defaults` left this request unanswered (`None` when it is off, or the
/// request is not an elicitation).
fn defaults_gap(opts: &ClientOptions, method: &str, params: &Value) -> Option<DefaultsGap> {
    (opts.accept_defaults && method == "elicitation/create")
        .then(|| defaults_answer(params).err())
        .flatten()
}

/// The JSON-RPC response to a server request, from the configured answers.
pub(crate) fn build_answer(opts: &ClientOptions, inc: &Incoming) -> Result<Value, Unanswered> {
    let Incoming::Request { id, method, params } = inc;
    let result = match method.as_str() {
        "ping" => Some(json!({})),
        m => answer_from(opts, None, m, params),
    };
    match result {
        Some(r) => Ok(json!({ "jsonrpc": "2.0", "id": id, "result": r })),
        None => Err(Unanswered::Request {
            method: method.clone(),
            defaults_gap: defaults_gap(opts, method, params),
        }),
    }
}

/// The configured answer for an input request, or the schema defaults, or the roots.
pub(crate) fn answer_from(
    opts: &ClientOptions,
    key: Option<&str>,
    method: &str,
    params: &Value,
) -> Option<Value> {
    if let Some(a) = opts.answers.find(key, method) {
        return Some(a.clone());
    }
    if method == "elicitation/create" && opts.accept_defaults {
        if let Ok(a) = defaults_answer(params) {
            return Some(a);
        }
    }
    if method != "roots/list" {
        if let Some(p) = &opts.prompter {
            return p.0.answer(method, params);
        }
    }
    if method == "roots/list" {
        let roots: Vec<Value> = opts
            .roots
            .iter()
            .map(|r| {
                let uri = if r.contains("://") {
                    r.clone()
                } else {
                    format!("file://{r}")
                };
                json!({ "uri": uri, "name": r })
            })
            .collect();
        return Some(json!({ "roots": roots }));
    }
    None
}

/// An ElicitResult accepting a form with every field's `default` (SEP-1034); why not when
/// the request is not a form or a required field has no default.
fn defaults_answer(params: &Value) -> Result<Value, DefaultsGap> {
    if let Some(m) = params
        .get("mode")
        .and_then(Value::as_str)
        .filter(|m| *m != "form")
    {
        return Err(DefaultsGap::NotAForm(mcp_triage_core::sanitize_line(m, 40)));
    }
    let schema = &params["requestedSchema"];
    let mut content = Map::new();
    let props = schema["properties"]
        .as_object()
        .ok_or(DefaultsGap::NoFields)?;
    for (name, prop) in props {
        if let Some(d) = prop.get("default") {
            content.insert(name.clone(), d.clone());
        }
    }
    let missing: Vec<String> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|r| !content.contains_key(*r))
        .map(|r| mcp_triage_core::sanitize_line(r, 60))
        .collect();
    if !missing.is_empty() {
        return Err(DefaultsGap::RequiredWithoutDefault(missing));
    }
    Ok(json!({ "action": "accept", "content": content }))
}

/// Builds `inputResponses` for an `input_required` result; `Ok(None)` when the server sent
/// only `requestState` (resend at once).
pub(crate) fn input_responses(
    opts: &ClientOptions,
    result: &Value,
) -> Result<Option<Value>, Unanswered> {
    let Some(reqs) = result.get("inputRequests").and_then(Value::as_object) else {
        return Ok(None);
    };
    let mut out = Map::new();
    let mut missing = Vec::new();
    for (key, req) in reqs {
        let method = req["method"].as_str().unwrap_or("");
        match answer_from(opts, Some(key), method, &req["params"]) {
            Some(a) => {
                out.insert(key.clone(), a);
            }
            None => missing.push(match defaults_gap(opts, method, &req["params"]) {
                Some(gap) => format!("{key} ({method}; --accept-defaults could not answer: {gap})"),
                None => format!("{key} ({method})"),
            }),
        }
    }
    if !missing.is_empty() {
        return Err(Unanswered::InputRequests { missing });
    }
    Ok(Some(Value::Object(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_requests_method_is_read_back_from_its_warning() {
        let inc = Incoming::Request {
            id: json!(1),
            method: "sampling/createMessage".into(),
            params: json!({}),
        };
        let why = Unanswered::Request {
            method: "sampling/createMessage".into(),
            defaults_gap: None,
        };
        let detail = refused_text(&inc, &why);
        assert_eq!(
            refused_request_method(&detail),
            Some("sampling/createMessage")
        );
        let mrtr = Unanswered::InputRequests {
            missing: vec!["q (elicitation/create)".into()],
        };
        assert_eq!(refused_request_method(&mrtr.to_string()), None);
        assert_eq!(
            refused_request_method("the server asked  and no answer was given"),
            None
        );
    }

    #[test]
    fn defaults_fill_a_form() {
        let p = json!({ "message": "m", "requestedSchema": { "type": "object", "properties": {
            "name": { "type": "string", "default": "John Doe" }, "age": { "type": "integer", "default": 30 },
            "note": { "type": "string" } }, "required": [] } });
        assert_eq!(
            defaults_answer(&p).unwrap(),
            json!({ "action": "accept", "content": { "name": "John Doe", "age": 30 } })
        );
        let mut q = p.clone();
        q["requestedSchema"]["required"] = json!(["note"]);
        assert_eq!(
            defaults_answer(&q),
            Err(DefaultsGap::RequiredWithoutDefault(vec!["note".into()]))
        );
        assert_eq!(
            defaults_answer(&json!({ "mode": "url", "url": "https://x" })),
            Err(DefaultsGap::NotAForm("url".into()))
        );
        assert_eq!(
            defaults_answer(&json!({ "message": "m" })),
            Err(DefaultsGap::NoFields)
        );
    }

    /// `--accept-defaults` on a form it cannot fill says what stood in the way (issue 46).
    #[test]
    fn accept_defaults_says_why_it_could_not_answer() {
        let opts = ClientOptions {
            accept_defaults: true,
            ..ClientOptions::default()
        };
        let params = json!({ "message": "m", "requestedSchema": { "type": "object",
            "properties": { "email": { "type": "string" }, "name": { "type": "string" } },
            "required": ["email", "name"] } });
        let inc = Incoming::Request {
            id: json!(1),
            method: "elicitation/create".into(),
            params: params.clone(),
        };
        let err = build_answer(&opts, &inc).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the server asked elicitation/create and no answer was given (--answer elicitation/create=JSON or --input FILE); --accept-defaults could not answer: required field(s) without a default: email, name"
        );
        assert_eq!(
            refused_request_method(&err.to_string()),
            Some("elicitation/create")
        );
        let result = json!({ "inputRequests": { "q": { "method": "elicitation/create", "params": params } } });
        assert_eq!(
            input_responses(&opts, &result).unwrap_err().to_string(),
            "input required and not answered: q (elicitation/create; --accept-defaults could not answer: required field(s) without a default: email, name) (use --answer KEY=JSON or --input FILE)"
        );
    }

    #[test]
    fn unanswered_is_typed() {
        let opts = ClientOptions::default();
        let inc = Incoming::Request {
            id: json!(1),
            method: "sampling/createMessage".into(),
            params: json!({}),
        };
        let err = build_answer(&opts, &inc).unwrap_err();
        assert!(
            matches!(err, Unanswered::Request { ref method, defaults_gap: None } if method == "sampling/createMessage")
        );
        assert_eq!(
            err.to_string(),
            "the server asked sampling/createMessage and no answer was given (--answer sampling/createMessage=JSON or --input FILE)"
        );
        let result = json!({ "inputRequests": {
            "a": { "method": "sampling/createMessage", "params": {} },
            "b": { "method": "elicitation/create", "params": {} } } });
        let err = input_responses(&opts, &result).unwrap_err();
        assert!(matches!(err, Unanswered::InputRequests { ref missing } if missing.len() == 2));
        assert_eq!(
            err.to_string(),
            "input required and not answered: a (sampling/createMessage), b (elicitation/create) (use --answer KEY=JSON or --input FILE)"
        );
    }
}
