use std::borrow::Cow;

use crate::json::{JsonKind, Node, Object, Parsed};
use crate::protocol::{CallContext, ProtocolVersion, RequestId, RequestKind};
use crate::retry::RATE_LIMITED;
use crate::verdict::{sanitize_line, Outcome, Verdict, MAX_MESSAGE_CHARS};

use super::result::classify_result;
use super::task_state::classify_task_state;
use super::Findings;

/// How a response's `id` relates to the expected request id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IdMatch {
    /// Same type and value.
    Same { non_integer_form: bool },
    /// `null` or absent: allowed on errors ("the server could not read the request").
    Missing,
    /// Another id.
    Other(String),
}

pub(crate) fn id_matches(id: Option<&Node>, expected: &RequestId) -> IdMatch {
    match (id, expected) {
        (None | Some(Node::Null), _) => IdMatch::Missing,
        (Some(Node::String(s)), RequestId::String(e)) if s.as_ref() == e => IdMatch::Same {
            non_integer_form: false,
        },
        (Some(n @ (Node::Int(_) | Node::UInt(_) | Node::Float(_))), RequestId::Number(e)) => {
            match n.as_integer() {
                Some((i, non_integer_form)) if i == *e => IdMatch::Same { non_integer_form },
                _ => IdMatch::Other(describe_id(n)),
            }
        }
        // A number beyond f64 range (`1e400`, a 100,000-digit integer) lands here: it equals
        // no request id, as ids are strings or integers the client holds exactly (JavaScript's
        // `Infinity === Infinity` would make 1e400 equal 1e401). DECISIONS.md, 17.
        (Some(n), _) => IdMatch::Other(describe_id(n)),
    }
}

fn describe_id(n: &Node) -> String {
    match n {
        Node::String(s) => format!("{:?}", sanitize_line(s, 64)),
        Node::Int(i) => i.to_string(),
        Node::UInt(u) => u.to_string(),
        Node::Float(f) => f.to_string(),
        Node::BigNumber(text) => describe_big_number(text),
        other => other.kind().to_string(),
    }
}

/// An out-of-range number for a sentence: as written when short, else its first digits and
/// its length (a 100,000-digit id must not become a 100,000-character detail).
fn describe_big_number(text: &str) -> String {
    const SHOWN: usize = 24;
    if text.len() <= 2 * SHOWN {
        text.to_string()
    } else {
        format!(
            "{}… (a number of {} characters, beyond f64 range)",
            &text[..SHOWN],
            text.len()
        )
    }
}

/// Rule 5's structural part and rules 6-8, for a whole `application/json` body.
pub(crate) fn classify_document(doc: &Parsed, ctx: &CallContext) -> Verdict {
    match &doc.root {
        Node::Object(o) => classify_response_object(o, doc.has_duplicate, ctx, ""),
        Node::Array(items) if batch_allowed(ctx.protocol_version) => {
            classify_batch(items, doc.has_duplicate, ctx)
        }
        Node::Array(_) => Verdict::new(Outcome::InvalidEnvelope).with_detail(format!(
            "the body is a JSON array; JSON-RPC batches exist only in protocol version 2025-03-26 (negotiated: {})",
            ctx.protocol_version
        )),
        other => Verdict::new(Outcome::InvalidEnvelope).with_detail(format!(
            "the body is {}, not a JSON-RPC response object",
            other.kind()
        )),
    }
}

fn batch_allowed(v: ProtocolVersion) -> bool {
    v == ProtocolVersion::V2025_03_26
}

/// The element of a batch that answers the expected id: the first object without `method`
/// whose id is the request's (same type and value).
fn batch_response<'n, 'a>(
    items: &'n [Node<'a>],
    ctx: &CallContext,
) -> Option<(usize, &'n Object<'a>)> {
    items.iter().enumerate().find_map(|(i, item)| {
        let o = item.as_object()?;
        (!o.contains("method")
            && matches!(
                id_matches(o.get("id"), &ctx.expected_id),
                IdMatch::Same { .. }
            ))
        .then_some((i, o))
    })
}

/// The response object in a whole body that the verdict is read from when its id is the
/// request's (same type and value): the body itself, or a batch's element (2025-03-26). What
/// [`CallContext::keep_response`] keeps; `None` for a body that answers another id or none.
pub(crate) fn response_in<'n, 'a>(root: &'n Node<'a>, ctx: &CallContext) -> Option<&'n Object<'a>> {
    match root {
        Node::Object(o) => matches!(
            id_matches(o.get("id"), &ctx.expected_id),
            IdMatch::Same { .. }
        )
        .then_some(o),
        Node::Array(items) if batch_allowed(ctx.protocol_version) => {
            batch_response(items, ctx).map(|(_, o)| o)
        }
        _ => None,
    }
}

fn classify_batch(items: &[Node], has_duplicate: bool, ctx: &CallContext) -> Verdict {
    match batch_response(items, ctx) {
        Some((i, o)) => classify_response_object(o, has_duplicate, ctx, &format!("/{i}")),
        None => Verdict::new(Outcome::InvalidEnvelope).with_detail(format!(
            "the batch of {} messages holds no response with id {}",
            items.len(),
            ctx.expected_id
        )),
    }
}

fn invalid_envelope(detail: String, findings: Findings) -> Verdict {
    let mut v = Verdict::new(Outcome::InvalidEnvelope).with_detail(detail);
    v.warnings = findings.into_warnings();
    v
}

/// Rules 6-8 for one response object found at `base` (a JSON pointer prefix: "" for a whole
/// body, "/2" for a batch element). `may_have_duplicate` is false when the parser saw no
/// repeated member name anywhere, which spares the search.
pub(crate) fn classify_response_object(
    o: &Object,
    may_have_duplicate: bool,
    ctx: &CallContext,
    base: &str,
) -> Verdict {
    let mut findings = Findings::default();
    if may_have_duplicate {
        if let Some(name) = o.duplicate_name() {
            return invalid_envelope(
                format!(
                    "member {name:?} appears twice in the response envelope at {}: parsers disagree on which one counts",
                    if base.is_empty() { "/" } else { base }
                ),
                findings,
            );
        }
        for (k, v) in &o.members {
            if k == "result" {
                continue;
            }
            if let Some(ptr) = v.first_duplicate_pointer(&format!("{base}/{k}")) {
                return invalid_envelope(
                    format!("a member name repeats at {ptr}: parsers disagree on which one counts"),
                    findings,
                );
            }
        }
    }
    if let Some(method) = o.get("method") {
        let what = if o.contains("id") {
            "request"
        } else {
            "notification"
        };
        let name = method
            .as_str()
            .map(|m| format!(" ({:?})", sanitize_line(m, 64)))
            .unwrap_or_default();
        return invalid_envelope(
            format!(
                "the body is a JSON-RPC {what}{name}, not the response to request id {}",
                ctx.expected_id
            ),
            findings,
        );
    }
    match o.get("jsonrpc") {
        Some(Node::String(s)) if s == "2.0" => {}
        Some(other) => {
            let shown = match other {
                Node::String(s) => format!("{:?}", sanitize_line(s, 32)),
                n => n.kind().to_string(),
            };
            return invalid_envelope(
                format!("{base}/jsonrpc is {shown}; it must be the string \"2.0\""),
                findings,
            );
        }
        None => {
            return invalid_envelope(
                format!("{base}/jsonrpc is missing; it must be the string \"2.0\""),
                findings,
            )
        }
    }
    let result = o.get("result");
    let error = o.get("error");
    match (result, error) {
        (Some(_), Some(_)) => invalid_envelope(
            "the response has both \"result\" and \"error\"; exactly one is allowed".to_string(),
            findings,
        ),
        (None, None) => invalid_envelope(
            "the response has neither \"result\" nor \"error\"".to_string(),
            findings,
        ),
        (None, Some(error)) => classify_error(o, error, ctx, base, findings),
        (Some(result), None) => {
            match id_matches(o.get("id"), &ctx.expected_id) {
                IdMatch::Same { non_integer_form } => {
                    if non_integer_form {
                        findings.warn(
                            "NON_INTEGER_FORM",
                            format!("{base}/id is written as a fraction-less decimal (e.g. 1.0)"),
                        );
                    }
                }
                IdMatch::Missing => {
                    return invalid_envelope(
                        format!(
                            "{base}/id is {}; a result must carry the request's id {}",
                            if o.contains("id") { "null" } else { "missing" },
                            ctx.expected_id
                        ),
                        findings,
                    )
                }
                IdMatch::Other(got) => {
                    return invalid_envelope(
                        format!(
                            "{base}/id is {got}, but the request's id is {} (ids match in type and value)",
                            ctx.expected_id
                        ),
                        findings,
                    )
                }
            }
            if may_have_duplicate {
                if let Some(ptr) = result.first_duplicate_pointer(&format!("{base}/result")) {
                    let mut v = Verdict::new(Outcome::InvalidToolResult).with_detail(format!(
                        "a member name repeats at {ptr}: parsers disagree on which one counts"
                    ));
                    v.warnings = findings.into_warnings();
                    return v;
                }
            }
            // a single response's base is "": its pointer is a constant, not an allocation
            let at: Cow<str> = if base.is_empty() {
                Cow::Borrowed("/result")
            } else {
                Cow::Owned(format!("{base}/result"))
            };
            match ctx.request_kind {
                RequestKind::TaskPoll => classify_task_state(result, ctx, &at, findings),
                _ => classify_result(result, ctx, &at, findings),
            }
        }
    }
}

fn classify_error(
    o: &Object,
    error: &Node,
    ctx: &CallContext,
    base: &str,
    mut findings: Findings,
) -> Verdict {
    match id_matches(o.get("id"), &ctx.expected_id) {
        IdMatch::Same { non_integer_form } => {
            if non_integer_form {
                findings.warn(
                    "NON_INTEGER_FORM",
                    format!("{base}/id is written as a fraction-less decimal (e.g. 1.0)"),
                );
            }
        }
        IdMatch::Missing => findings.warn(
            "ERROR_WITHOUT_ID",
            format!(
                "the error response's id is {}: the server could not read the request",
                if o.contains("id") { "null" } else { "absent" }
            ),
        ),
        IdMatch::Other(got) => {
            return invalid_envelope(
                format!(
                    "{base}/id is {got}, but the request's id is {}: this error answers another request",
                    ctx.expected_id
                ),
                findings,
            )
        }
    }
    let mut v = error_object_verdict(error, &format!("{base}/error"), findings);
    if ctx.drafts.sep_2145 && ctx.request_kind == RequestKind::ToolCall {
        super::drafts::warn_protocol_error(&mut v);
    }
    if ctx.request_kind == RequestKind::TaskPoll && v.code == Some(-32602) {
        if let Some(d) = v.detail.as_mut() {
            d.push_str(
                "; to tasks/get this means the task is unknown or expired (past its ttlMs): \
                 its result is gone",
            );
        }
    }
    v
}

/// The verdict of a JSON-RPC error object at `at` (an error response's `error`, or a failed
/// task's): `code` and `message` checked, named and sanitised. One reader for both, so a task
/// that failed reads like the error response it stands for.
pub(crate) fn error_object_verdict(error: &Node, at: &str, mut findings: Findings) -> Verdict {
    let Some(e) = error.as_object() else {
        return invalid_envelope(
            format!("{at} is {}; it must be an object", error.kind()),
            findings,
        );
    };
    let code = match e.get("code") {
        Some(n) => match n.as_integer() {
            Some((c, non_integer_form)) => {
                if non_integer_form {
                    findings.warn(
                        "NON_INTEGER_FORM",
                        format!("{at}/code is written as a fraction-less decimal"),
                    );
                }
                c
            }
            None => {
                return invalid_envelope(
                    format!(
                        "{at}/code is {}; it must be an integer",
                        if let Node::BigNumber(text) = n {
                            format!("{}, out of range", describe_big_number(text))
                        } else if n.kind() == JsonKind::Number {
                            "a non-integer number".to_string()
                        } else {
                            n.kind().to_string()
                        }
                    ),
                    findings,
                )
            }
        },
        None => {
            return invalid_envelope(
                format!("{at}/code is missing; it must be an integer"),
                findings,
            )
        }
    };
    let message = match e.get("message") {
        Some(Node::String(s)) => sanitize_line(s, MAX_MESSAGE_CHARS),
        Some(n) => {
            return invalid_envelope(
                format!("{at}/message is {}; it must be a string", n.kind()),
                findings,
            )
        }
        None => {
            return invalid_envelope(
                format!("{at}/message is missing; it must be a string"),
                findings,
            )
        }
    };
    let mut detail = format!("JSON-RPC error {code}");
    if let Some(name) = error_code_name(code) {
        detail.push_str(&format!(" ({name})"));
    }
    detail.push_str(&format!(": {}", sanitize_line(&message, 200)));
    if let Some(hint) = error_data_hint(code, e.get("data")) {
        detail.push_str(&format!("; {hint}"));
    }
    let mut v = Verdict::new(Outcome::JsonrpcError).with_detail(detail);
    if code == RATE_LIMITED {
        v.retry_after_ms = rate_limited_wait(e.get("data"), at, &mut findings);
    }
    v.code = Some(code);
    v.message = Some(message);
    v.warnings = findings.into_warnings();
    v
}

/// `error.data.retryAfterMs` of a `-32023` error (draft SEP-3304 rule RL-1: a server MUST send it),
/// as a wait in milliseconds. Absent or not a non-negative integer: a warning, and no wait.
pub(crate) fn rate_limited_wait(
    data: Option<&Node>,
    error_at: &str,
    findings: &mut Findings,
) -> Option<u64> {
    let field = data
        .and_then(Node::as_object)
        .and_then(|d| d.get("retryAfterMs"));
    match field.map(|n| (n, n.as_integer())) {
        Some((_, Some((ms, _)))) if ms >= 0 => Some(ms as u64),
        Some((n, _)) => {
            findings.warn(
                "RATE_LIMITED_WITHOUT_RETRY_AFTER",
                format!(
                    "{error_at}/data/retryAfterMs is {}; a -32023 RateLimited error carries a \
                     non-negative integer of milliseconds (draft SEP-3304)",
                    match n {
                        Node::Int(_) | Node::UInt(_) | Node::Float(_) | Node::BigNumber(_) => {
                            "out of range or not an integer".to_string()
                        }
                        other => other.kind().to_string(),
                    }
                ),
            );
            None
        }
        None => {
            findings.warn(
                "RATE_LIMITED_WITHOUT_RETRY_AFTER",
                format!(
                    "{error_at}/data/retryAfterMs is missing; a -32023 RateLimited error says \
                     how long to wait (draft SEP-3304)"
                ),
            );
            None
        }
    }
}

/// The names the JSON-RPC and MCP specs give to error codes.
pub(crate) fn error_code_name(code: i64) -> Option<&'static str> {
    Some(match code {
        -32700 => "Parse error",
        -32600 => "Invalid Request",
        -32601 => "Method not found",
        -32602 => "Invalid params",
        -32603 => "Internal error",
        -32002 => "Resource not found",
        -32042 => "URL elicitation required",
        -32020 => "HeaderMismatch",
        -32021 => "MissingRequiredClientCapability",
        -32022 => "UnsupportedProtocolVersion",
        RATE_LIMITED => "RateLimited, draft SEP-3304",
        _ => return None,
    })
}

/// What an error's `data` tells a client to do, for the codes whose data the spec defines.
fn error_data_hint(code: i64, data: Option<&Node>) -> Option<String> {
    let data = data?.as_object()?;
    match code {
        -32022 => {
            let supported = data.get("supported")?;
            let Node::Array(items) = supported else {
                return None;
            };
            let list: Vec<String> = items
                .iter()
                .filter_map(|n| n.as_str().map(|s| sanitize_line(s, 32)))
                .take(8)
                .collect();
            Some(format!("the server supports {}", list.join(", ")))
        }
        -32021 => data
            .get("requiredCapabilities")
            .and_then(Node::as_object)
            .map(|caps| {
                let names: Vec<String> = caps
                    .members
                    .iter()
                    .take(8)
                    .map(|(k, _)| sanitize_line(k, 32))
                    .collect();
                format!("the call needs client capabilities: {}", names.join(", "))
            }),
        RATE_LIMITED => {
            let wait = data.get("retryAfterMs")?.as_integer()?.0;
            let quota: Vec<String> = ["limit", "remaining"]
                .into_iter()
                .filter_map(|name| {
                    let (n, _) = data.get(name)?.as_integer()?;
                    Some(format!("{name} {n}"))
                })
                .collect();
            let mut hint = format!("the server asks to wait {wait} ms before resending");
            if !quota.is_empty() {
                hint.push_str(&format!(" ({})", quota.join(", ")));
            }
            Some(hint)
        }
        -32042 => match data.get("elicitations") {
            Some(Node::Array(items)) => Some(format!(
                "{} URL elicitation(s) must be completed before retrying",
                items.len()
            )),
            _ => None,
        },
        _ => None,
    }
}
