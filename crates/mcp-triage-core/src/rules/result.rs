use std::fmt::Display;

use crate::json::{escape_pointer, JsonKind, Node, Object};
use crate::protocol::{CallContext, ProtocolVersion as V};
use crate::verdict::{sanitize_line, Outcome, Verdict};

use super::Findings;

const INPUT_METHODS: [&str; 3] = ["elicitation/create", "sampling/createMessage", "roots/list"];

/// What is wrong with one member of a result, task or content block: the detail of an
/// `INVALID_TOOL_RESULT` verdict. `at` is the member's JSON pointer in the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ShapeError {
    /// `{at} is empty`.
    Empty { at: String },
    /// `{at} is missing`, then `; {need}` when a rule says why it must be there.
    Missing { at: String, need: Option<String> },
    /// `{at} is {kind}; {need}`.
    WrongKind {
        at: String,
        kind: JsonKind,
        need: String,
    },
    /// `{at} is {value:?}; {need}`: a string that is none of the values allowed there.
    WrongValue {
        at: String,
        value: String,
        need: &'static str,
    },
}

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShapeError::Empty { at } => write!(f, "{at} is empty"),
            ShapeError::Missing { at, need: None } => write!(f, "{at} is missing"),
            ShapeError::Missing {
                at,
                need: Some(need),
            } => write!(f, "{at} is missing; {need}"),
            ShapeError::WrongKind { at, kind, need } => write!(f, "{at} is {kind}; {need}"),
            ShapeError::WrongValue { at, value, need } => write!(f, "{at} is {value:?}; {need}"),
        }
    }
}

impl std::error::Error for ShapeError {}

impl ShapeError {
    fn wrong_kind(at: String, n: &Node, need: impl Into<String>) -> ShapeError {
        ShapeError::WrongKind {
            at,
            kind: n.kind(),
            need: need.into(),
        }
    }
}

/// An `INVALID_TOOL_RESULT` with this detail and the warnings found so far.
pub(crate) fn invalid(detail: String, findings: Findings) -> Verdict {
    let mut v = Verdict::new(Outcome::InvalidToolResult).with_detail(detail);
    v.warnings = findings.into_warnings();
    v
}

/// `v` with the warnings found so far.
pub(crate) fn finish(mut v: Verdict, findings: Findings) -> Verdict {
    v.warnings = findings.into_warnings();
    v
}

fn before(ctx: &CallContext, version: V) -> bool {
    ctx.protocol_version != V::Unknown && ctx.protocol_version < version
}

/// Rules 7 and 8: the result of a response that answers the request.
pub(crate) fn classify_result(
    result: &Node,
    ctx: &CallContext,
    base: &str,
    mut findings: Findings,
) -> Verdict {
    let Some(r) = result.as_object() else {
        return invalid(
            format!(
                "{base} is {}; a tool result must be an object",
                result.kind()
            ),
            findings,
        );
    };
    let result_type = match r.get("resultType") {
        None => {
            if ctx.protocol_version == V::V2026_07_28 {
                findings.warn(
                    "RESULT_TYPE_ABSENT",
                    format!("{base}/resultType is absent; 2026-07-28 servers MUST send it (read as \"complete\")"),
                );
            }
            if let Some(task) = legacy_task(r) {
                if !matches!(ctx.protocol_version, V::V2025_11_25 | V::Unknown) {
                    findings.warn(
                        "NOT_IN_VERSION",
                        format!(
                            "{base}/task is the 2025-11-25 task shape, not defined in {}",
                            ctx.protocol_version
                        ),
                    );
                }
                return classify_task(task, ctx, &format!("{base}/task"), "task", findings);
            }
            "complete"
        }
        Some(Node::String(s)) => {
            if before(ctx, V::V2026_07_28) {
                findings.warn(
                    "NOT_IN_VERSION",
                    format!(
                        "{base}/resultType is not defined before 2026-07-28 (negotiated: {})",
                        ctx.protocol_version
                    ),
                );
            }
            s.as_ref()
        }
        Some(other) => {
            return invalid(
                format!("{base}/resultType is {}; it must be a string", other.kind()),
                findings,
            )
        }
    };
    match result_type {
        "complete" => classify_complete(r, ctx, base, findings),
        "input_required" => classify_input_required(r, base, findings),
        "task" => {
            let (node, at) = match r.get("task") {
                Some(t @ Node::Object(_)) if !r.contains("taskId") => (t, format!("{base}/task")),
                _ => (result, base.to_string()),
            };
            classify_task(node, ctx, &at, "task", findings)
        }
        other => invalid(
            format!(
                "{base}/resultType is {:?}, which this client does not recognise (spec: an unrecognised resultType MUST be treated as invalid)",
                sanitize_line(other, 64)
            ),
            findings,
        ),
    }
}

/// The 2025-11-25 `CreateTaskResult`: `{task: {taskId, status, ...}}` and no `content`.
fn legacy_task<'n, 'a>(r: &'n Object<'a>) -> Option<&'n Node<'a>> {
    match r.get("task") {
        Some(t @ Node::Object(_)) if !r.contains("content") => Some(t),
        _ => None,
    }
}

fn classify_task(
    task: &Node,
    _ctx: &CallContext,
    at: &str,
    result_type: &str,
    findings: Findings,
) -> Verdict {
    let Some(t) = task.as_object() else {
        return invalid(
            format!("{at} is {}; it must be an object", task.kind()),
            findings,
        );
    };
    let task_id = match task_id_of(t, at) {
        Ok(id) => id,
        Err(detail) => return invalid(detail.to_string(), findings),
    };
    let status = match t.get("status") {
        None => None,
        Some(Node::String(s)) => Some(sanitize_line(s, 32)),
        Some(n) => {
            return invalid(
                format!("{at}/status is {}; it must be a string", n.kind()),
                findings,
            )
        }
    };
    let mut detail = format!("the server created task {:?}", sanitize_line(&task_id, 128));
    if let Some(s) = &status {
        detail.push_str(&format!(" (status {s})"));
    }
    detail.push_str("; poll tasks/get for the result");
    let mut v = Verdict::new(Outcome::TaskCreated).with_detail(detail);
    v.result_type = Some(result_type.to_string());
    v.task_id = Some(task_id);
    finish(v, findings)
}

/// A task's `taskId`: a non-empty string, or the detail saying what is wrong with it.
pub(crate) fn task_id_of(t: &Object, at: &str) -> Result<String, ShapeError> {
    let at = || format!("{at}/taskId");
    match t.get("taskId") {
        Some(Node::String(s)) if !s.is_empty() => Ok(s.to_string()),
        Some(Node::String(_)) => Err(ShapeError::Empty { at: at() }),
        Some(n) => Err(ShapeError::wrong_kind(at(), n, "it must be a string")),
        None => Err(ShapeError::Missing {
            at: at(),
            need: None,
        }),
    }
}

/// The input requests of an `input_required` result or task (`inputRequests`), each checked
/// (an object, a known method, params where the method needs them), as `key (method)` for the
/// verdict's detail; `Err` with the detail of the first that is not valid.
pub(crate) fn asked_inputs(reqs: &Node, base: &str) -> Result<Vec<String>, ShapeError> {
    let mut asked = Vec::new();
    let Some(reqs) = reqs.as_object() else {
        return Err(ShapeError::wrong_kind(
            format!("{base}/inputRequests"),
            reqs,
            "it must be an object",
        ));
    };
    for (key, req) in &reqs.members {
        let at = format!("{base}/inputRequests/{}", escape_pointer(key));
        let Some(req) = req.as_object() else {
            return Err(ShapeError::wrong_kind(
                at,
                req,
                "an input request is an object",
            ));
        };
        let method = match req.get("method") {
            Some(Node::String(m)) if INPUT_METHODS.contains(&m.as_ref()) => m.as_ref(),
            Some(Node::String(m)) => return Err(ShapeError::WrongValue {
                at: format!("{at}/method"),
                value: sanitize_line(m, 64),
                need:
                    "an input request is elicitation/create, sampling/createMessage or roots/list",
            }),
            Some(n) => {
                return Err(ShapeError::wrong_kind(
                    format!("{at}/method"),
                    n,
                    "it must be a string",
                ))
            }
            None => {
                return Err(ShapeError::Missing {
                    at: format!("{at}/method"),
                    need: None,
                })
            }
        };
        let params_required = method != "roots/list";
        match req.get("params") {
            Some(Node::Object(_)) => {}
            None if !params_required => {}
            None => {
                return Err(ShapeError::Missing {
                    at: format!("{at}/params"),
                    need: Some(format!("{method} needs params")),
                })
            }
            Some(n) => {
                return Err(ShapeError::wrong_kind(
                    format!("{at}/params"),
                    n,
                    "it must be an object",
                ))
            }
        }
        asked.push(format!("{} ({method})", sanitize_line(key, 64)));
    }
    Ok(asked)
}

fn classify_input_required(r: &Object, base: &str, findings: Findings) -> Verdict {
    let mut asked = Vec::new();
    if let Some(reqs) = r.get("inputRequests") {
        match asked_inputs(reqs, base) {
            Ok(a) => asked = a,
            Err(detail) => return invalid(detail.to_string(), findings),
        }
    }
    let has_state = match r.get("requestState") {
        None => false,
        Some(Node::String(_)) => true,
        Some(n) => {
            return invalid(
                format!("{base}/requestState is {}; it must be a string", n.kind()),
                findings,
            )
        }
    };
    if asked.is_empty() && !has_state {
        return invalid(
            format!(
                "{base} is input_required with {} and no requestState (spec: servers MUST include at least one of inputRequests or requestState)",
                if r.contains("inputRequests") { "an empty inputRequests" } else { "no inputRequests" }
            ),
            findings,
        );
    }
    let detail = if asked.is_empty() {
        "the server needs another round: resend the original request with a new id and the exact requestState".to_string()
    } else {
        format!(
            "the server asks for {} input(s): {}; answer them in inputResponses and resend with a new id{}",
            asked.len(),
            asked.join(", "),
            if has_state { " and the exact requestState" } else { "" }
        )
    };
    let mut v = Verdict::new(Outcome::InputRequired).with_detail(detail);
    v.result_type = Some("input_required".to_string());
    finish(v, findings)
}

fn classify_complete(r: &Object, ctx: &CallContext, base: &str, mut findings: Findings) -> Verdict {
    let content = match r.get("content") {
        Some(Node::Array(items)) => items,
        Some(n) => {
            return invalid(
                format!(
                    "{base}/content is {}; it must be an array of content blocks",
                    n.kind()
                ),
                findings,
            )
        }
        None => {
            return invalid(
                format!(
                    "{base}/content is missing; a complete tool result must have a content array"
                ),
                findings,
            )
        }
    };
    for (i, block) in content.iter().enumerate() {
        // the block's pointer is formatted only into a message, never for a good block
        if let Err(detail) = check_block(
            block,
            &format_args!("{base}/content/{i}"),
            ctx,
            &mut findings,
        ) {
            return invalid(detail.to_string(), findings);
        }
    }
    let is_error = match r.get("isError") {
        None => None,
        Some(Node::Bool(b)) => Some(*b),
        Some(n) => {
            return invalid(
                format!("{base}/isError is {}; it must be a boolean", n.kind()),
                findings,
            )
        }
    };
    let structured = r.get("structuredContent");
    if let Some(sc) = structured {
        if matches!(ctx.protocol_version, V::V2025_06_18 | V::V2025_11_25)
            && sc.as_object().is_none()
        {
            return invalid(
                format!(
                    "{base}/structuredContent is {}; in {} it must be an object (any JSON only from 2026-07-28)",
                    sc.kind(),
                    ctx.protocol_version
                ),
                findings,
            );
        }
        if before(ctx, V::V2025_06_18) {
            findings.warn(
                "NOT_IN_VERSION",
                format!(
                    "{base}/structuredContent is not defined before 2025-06-18 (negotiated: {})",
                    ctx.protocol_version
                ),
            );
        }
    }
    if is_error != Some(true) {
        if let Some(schema) = &ctx.output_schema {
            let Some(sc) = structured else {
                return invalid(
                    format!("{base}/structuredContent is missing, but the tool declares an outputSchema (servers MUST provide conforming structured results)"),
                    findings,
                );
            };
            let value = sc.to_value();
            let outcome = schema.validate(&value);
            crate::json::drop_value_iteratively(value);
            if let Err(m) = outcome {
                return invalid(
                    format!(
                        "{base}/structuredContent{} does not match the outputSchema (at schema {}): {}",
                        m.instance_pointer, m.schema_pointer, m.message
                    ),
                    findings,
                );
            }
        }
    }
    let mut v = if is_error == Some(true) {
        let first_text = content.iter().find_map(|b| {
            let b = b.as_object()?;
            (b.get("type")?.as_str()? == "text").then(|| b.get("text")?.as_str())?
        });
        Verdict::new(Outcome::ToolError).with_detail(match first_text {
            Some(t) => format!("the tool reported an error: {}", sanitize_line(t, 200)),
            None => "the tool reported an error (isError: true)".to_string(),
        })
    } else {
        Verdict::new(Outcome::ToolSuccess)
    };
    v.result_type = Some("complete".to_string());
    v.is_error = is_error;
    super::drafts::read_result(r, ctx, base, &mut v, &mut findings);
    finish(v, findings)
}

fn require_str(o: &Object, at: &dyn Display, field: &str, what: &str) -> Result<(), ShapeError> {
    let need = || format!("{what} needs a string {field}");
    match o.get(field) {
        Some(Node::String(_)) => Ok(()),
        Some(n) => Err(ShapeError::wrong_kind(format!("{at}/{field}"), n, need())),
        None => Err(ShapeError::Missing {
            at: format!("{at}/{field}"),
            need: Some(need()),
        }),
    }
}

fn check_block(
    block: &Node,
    at: &dyn Display,
    ctx: &CallContext,
    findings: &mut Findings,
) -> Result<(), ShapeError> {
    let Some(b) = block.as_object() else {
        return Err(ShapeError::wrong_kind(
            at.to_string(),
            block,
            "a content block is an object",
        ));
    };
    let ty = match b.get("type") {
        Some(Node::String(t)) => t.as_ref(),
        Some(n) => {
            return Err(ShapeError::wrong_kind(
                format!("{at}/type"),
                n,
                "it must be a string",
            ))
        }
        None => {
            return Err(ShapeError::Missing {
                at: format!("{at}/type"),
                need: None,
            })
        }
    };
    match ty {
        "text" => require_str(b, at, "text", "a text block"),
        "image" | "audio" => {
            if ty == "audio" && ctx.protocol_version == V::V2024_11_05 {
                findings.warn(
                    "NOT_IN_VERSION",
                    format!("{at} is an audio block, not defined in 2024-11-05"),
                );
            }
            require_str(b, at, "data", &format!("an {ty} block"))?;
            require_str(b, at, "mimeType", &format!("an {ty} block"))
        }
        "resource_link" => {
            if before(ctx, V::V2025_06_18) {
                findings.warn(
                    "NOT_IN_VERSION",
                    format!("{at} is a resource_link block, not defined before 2025-06-18"),
                );
            }
            require_str(b, at, "uri", "a resource_link block")?;
            require_str(b, at, "name", "a resource_link block")
        }
        "resource" => {
            let res = match b.get("resource") {
                Some(Node::Object(o)) => o,
                Some(n) => {
                    return Err(ShapeError::wrong_kind(
                        format!("{at}/resource"),
                        n,
                        "it must be an object",
                    ))
                }
                None => {
                    return Err(ShapeError::Missing {
                        at: format!("{at}/resource"),
                        need: Some("an embedded resource block needs it".to_string()),
                    })
                }
            };
            require_str(
                res,
                &format_args!("{at}/resource"),
                "uri",
                "an embedded resource",
            )?;
            if !res.contains("text") && !res.contains("blob") {
                findings.warn(
                    "RESOURCE_WITHOUT_CONTENTS",
                    format!("{at}/resource has neither text nor blob"),
                );
            }
            Ok(())
        }
        other => {
            findings.warn(
                "UNKNOWN_CONTENT_BLOCK_TYPE",
                format!(
                    "{at}/type is {:?}, not a known content block type",
                    sanitize_line(other, 64)
                ),
            );
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_node<T>(text: &str, f: impl FnOnce(&Node) -> T) -> T {
        let parsed = crate::json::parse(text.as_bytes(), 64).expect("test JSON");
        f(&parsed.root)
    }

    #[test]
    fn shape_errors_are_typed_and_read_as_before() {
        let e = with_node(r#"{"taskId": 7}"#, |n| {
            task_id_of(n.as_object().unwrap(), "/result").unwrap_err()
        });
        assert!(matches!(
            e,
            ShapeError::WrongKind { ref at, kind: JsonKind::Number, .. } if at == "/result/taskId"
        ));
        assert_eq!(
            e.to_string(),
            "/result/taskId is a number; it must be a string"
        );
        let e = with_node(r#"{"taskId": ""}"#, |n| {
            task_id_of(n.as_object().unwrap(), "/result").unwrap_err()
        });
        assert_eq!(
            e,
            ShapeError::Empty {
                at: "/result/taskId".into()
            }
        );
        assert_eq!(e.to_string(), "/result/taskId is empty");
        let e = with_node(r#"{"a": {"method": "tools/call"}}"#, |n| {
            asked_inputs(n, "/result").unwrap_err()
        });
        assert!(matches!(e, ShapeError::WrongValue { .. }));
        assert_eq!(
            e.to_string(),
            "/result/inputRequests/a/method is \"tools/call\"; an input request is elicitation/create, sampling/createMessage or roots/list"
        );
        let e = with_node(r#"{"a": {"method": "elicitation/create"}}"#, |n| {
            asked_inputs(n, "/result").unwrap_err()
        });
        assert!(matches!(e, ShapeError::Missing { need: Some(_), .. }));
        assert_eq!(
            e.to_string(),
            "/result/inputRequests/a/params is missing; elicitation/create needs params"
        );
        let e = with_node(r#"{"type": "text"}"#, |n| {
            let mut findings = Findings::default();
            let ctx = CallContext::new(crate::RequestId::Number(1));
            check_block(n, &"/result/content/0", &ctx, &mut findings).unwrap_err()
        });
        assert!(matches!(e, ShapeError::Missing { ref at, .. } if at == "/result/content/0/text"));
        assert_eq!(
            e.to_string(),
            "/result/content/0/text is missing; a text block needs a string text"
        );
    }
}
