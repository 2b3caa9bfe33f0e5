//! The cases of `judge --replay FILE.jsonl`: one per captured `tools/call` (one replay key:
//! tool and arguments hash), in the order the capture first shows each.
//!
//! Each captured line is classified as `classify --batch` classifies it (the core's exchange
//! reader and classifier), and the verdicts decide which of the judge's generic checks apply:
//! a 503 grades resending (`no_unsafe_resend`, or `bounded_resend` for a tool the captured
//! `tools/list` marks read-only), a 429 `retry_after` (its Retry-After), a tool or JSON-RPC
//! error `no_auto_resend`, `input_required` `mrtr_retry`, a stream that ended early
//! `reissue_new_id`. Every case also has `captured_outcome`: the client ends as the line it was
//! last served says (success for a successful call, a failure otherwise).

use std::borrow::Cow;
use std::time::SystemTime;

use mcp_triage_core::exchange::Exchange;
use mcp_triage_core::{CallContext, Outcome, RequestId};
use mcp_triage_kitchen::replay::{response_message, Capture, ReplayKey};
use serde_json::json;

use crate::cases::{Captured, CapturedVerdict, CaseDef, CheckKind, ToolSafety, REPLAY_SCENARIO};

/// The cases of a capture, and a sentence for every captured call that cannot become one
/// (among them a call one of whose lines asks for a delay over `max_delay_ms`).
pub fn cases(capture: &Capture, max_delay_ms: f64) -> (Vec<CaseDef>, Vec<String>) {
    // Keys in the order first seen, each with its lines (capture.exchanges is in seq order).
    let mut keys: Vec<(&ReplayKey, Vec<usize>)> = Vec::new();
    for (i, x) in capture.exchanges.iter().enumerate() {
        if !matches!(&x.key, ReplayKey::Rpc { method, .. } if method == "tools/call") {
            continue;
        }
        match keys.iter_mut().find(|(k, _)| **k == x.key) {
            Some((_, lines)) => lines.push(i),
            None => keys.push((&x.key, vec![i])),
        }
    }
    let now = SystemTime::now();
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for (key, lines) in keys {
        let ReplayKey::Rpc {
            tool: Some(tool),
            arguments_hash,
            path,
            ..
        } = key
        else {
            continue;
        };
        let first = &capture.exchanges[lines[0]];
        let Some(arguments) = lines.iter().find_map(|&i| {
            capture.exchanges[i]
                .request
                .as_ref()
                .map(|r| r["params"]["arguments"].clone())
        }) else {
            skipped.push(format!(
                "seq {}: tools/call of {tool}: the request body is not in the capture (bodyTruncated or omitted), so no client can be asked to make the same call",
                first.seq
            ));
            continue;
        };
        if let Some(why) = over_delay(capture, &lines, tool, max_delay_ms) {
            skipped.push(why);
            continue;
        }
        let mut captured = Captured::default();
        let mut bad = None;
        for &i in &lines {
            let x = &capture.exchanges[i];
            match verdict_of(&x.text, now) {
                Ok(mut v) => {
                    v.tool_text = tool_text(&x.body);
                    captured.lines.push((x.seq, v));
                }
                Err(e) => {
                    bad = Some(format!(
                        "seq {} (line {}): tools/call of {tool}: not an exchange line: {e}",
                        x.seq, x.line
                    ));
                    break;
                }
            }
        }
        if let Some(why) = bad {
            skipped.push(why);
            continue;
        }
        // The captured tools/list says what repeating the tool does: a read-only or
        // idempotent tool may be resent (bounded), any other must not run twice.
        let listed = capture.tools_at(path.as_deref());
        let definition = listed.iter().find(|t| t["name"] == **tool);
        let safety = definition.map(ToolSafety::of).unwrap_or_default();
        // Captured arguments that break the listed inputSchema may be refused before sending
        // (mcp-triage call does, exit 7): with a stated failure that is not a missed call.
        let may_decline = definition
            .is_some_and(|t| breaks_schema(&t["inputSchema"], &arguments))
            .then_some(BREAKS_SCHEMA);
        let asked_input = lines
            .iter()
            .any(|&i| asks_for_input(&capture.exchanges[i].body));
        let (checks, retry_after_ms) = checks_for(&captured, safety.repeatable(), asked_input);
        out.push(CaseDef {
            id: Cow::Owned(format!("seq{}.{tool}", first.seq)),
            scenario: Cow::Borrowed(REPLAY_SCENARIO),
            params: json!({
                "seqs": lines.iter().map(|&i| capture.exchanges[i].seq).collect::<Vec<u64>>(),
                "argumentsHash": arguments_hash,
                // Where the client is sent: the endpoint this call was captured on.
                "path": path.clone().unwrap_or_else(|| capture.mcp_path()),
            }),
            tool: Cow::Owned(tool.clone()),
            arguments: if arguments.is_null() {
                json!({})
            } else {
                arguments
            },
            checks: Cow::Owned(checks),
            retry_after_ms,
            oauth: false,
            captured: Some(captured),
            safety,
            may_decline,
            client_timeout_ms: None,
        });
    }
    (out, skipped)
}

/// Why a call cannot be replayed within `--replay-max-delay`: the first of its lines whose
/// `headMs` or a chunk's `atMs` is over `max_ms`.
fn over_delay(capture: &Capture, lines: &[usize], tool: &str, max_ms: f64) -> Option<String> {
    lines.iter().find_map(|&i| {
        let x = &capture.exchanges[i];
        let longest = x
            .chunks
            .iter()
            .map(|(at, _)| *at)
            .fold(x.head_ms, f64::max);
        (longest > max_ms).then(|| {
            format!(
                "seq {} (line {}): tools/call of {tool}: a captured delay of {longest} ms is over --replay-max-delay ({max_ms} ms); this call is skipped (raise --replay-max-delay to grade it)",
                x.seq, x.line
            )
        })
    })
}

/// Why a client may decline a replayed call whose arguments break the listed schema.
const BREAKS_SCHEMA: &str =
    "the captured arguments do not match the tool's inputSchema in the captured tools/list, so a client may refuse to send them";

/// Whether `arguments` (null read as `{}`, as the case sends them) break `schema`; a schema
/// that is absent or does not compile says nothing, so it is never a reason to decline.
fn breaks_schema(schema: &serde_json::Value, arguments: &serde_json::Value) -> bool {
    if !schema.is_object() {
        return false;
    }
    let args = if arguments.is_null() {
        json!({})
    } else {
        arguments.clone()
    };
    jsonschema::validator_for(schema).is_ok_and(|v| !v.is_valid(&args))
}

/// The classifier's verdict of one capture line, read as an exchange-file line.
fn verdict_of(
    text: &str,
    now: SystemTime,
) -> Result<CapturedVerdict, mcp_triage_core::exchange::ExchangeError> {
    let x = Exchange::parse(text.as_bytes())?;
    let base = CallContext::new(RequestId::Number(1)).with_now(now);
    // As `classify --batch` does: a capture line's `end` decides how a broken-off body is judged.
    let v = x.classify(&x.context(&base));
    Ok(CapturedVerdict {
        outcome: v.outcome,
        text: v.to_text_line(),
        tool_text: None,
    })
}

/// The text of the first text content of a tool result in `body`.
fn tool_text(body: &[u8]) -> Option<String> {
    let msg = response_message(body)?;
    msg["result"]["content"]
        .as_array()?
        .iter()
        .find_map(|c| c["text"].as_str().map(str::to_owned))
}

/// The generic checks the captured verdicts call for, and the Retry-After (ms) of a 429.
fn checks_for(captured: &Captured, repeatable: bool, asked_input: bool) -> (Vec<CheckKind>, u64) {
    let status = |s: u16| {
        captured.lines.iter().any(|(_, v)| {
            v.outcome == Outcome::HttpError && v.text.contains(&format!("status={s}"))
        })
    };
    let mut checks = Vec::new();
    let mut retry_after_ms = 0;
    if status(503) && repeatable {
        checks.push(CheckKind::BoundedResend);
    }
    if status(429) {
        checks.push(CheckKind::RetryAfter);
        retry_after_ms = captured
            .lines
            .iter()
            .find_map(|(_, v)| retry_after(&v.text))
            .unwrap_or(0);
    }
    if captured.has(Outcome::ToolError) || captured.has(Outcome::JsonrpcError) {
        checks.push(CheckKind::NoAutoResend);
    }
    if captured.has(Outcome::InputRequired) || asked_input {
        checks.push(CheckKind::MrtrRetry);
    }
    if captured.has(Outcome::StreamIncomplete) {
        checks.push(CheckKind::ReissueNewId);
    }
    checks.push(CheckKind::CapturedOutcome);
    (checks, retry_after_ms)
}

/// Whether a response body carries a request from the server to the client (an
/// `elicitation/create` on a legacy SSE stream): an input round, graded by `mrtr_retry` as in
/// the kitchen's own case (n/a in the legacy era, where there is no retry to grade).
fn asks_for_input(body: &[u8]) -> bool {
    body.split(|b| *b == b'\n').any(|line| {
        line.strip_prefix(b"data:")
            .and_then(|d| serde_json::from_slice::<serde_json::Value>(d.trim_ascii_start()).ok())
            .is_some_and(|m| m["method"].is_string() && m.get("id").is_some())
    })
}

/// The Retry-After the classifier read, from its text line (`Retry-After asks to wait N ms`).
fn retry_after(text: &str) -> Option<u64> {
    let rest = &text[text.find("wait ")? + 5..];
    rest.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn a_line_that_is_no_exchange_is_the_cores_typed_error() {
        let e = verdict_of("not json", SystemTime::UNIX_EPOCH).unwrap_err();
        let Err(direct) = Exchange::parse(b"not json") else {
            panic!("\"not json\" parsed as an exchange");
        };
        assert!(matches!(
            e,
            mcp_triage_core::exchange::ExchangeError::NotAnObject(_)
        ));
        assert_eq!(e.to_string(), direct.to_string());
    }

    fn capture(lines: &[Value]) -> Capture {
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        // As run.rs reads a file: delays are judged per case, not at load.
        let limits = mcp_triage_kitchen::replay::CaptureLimits {
            max_delay_ms: f64::MAX,
            ..Default::default()
        };
        Capture::parse_with(text.join("\n").as_bytes(), &limits).unwrap()
    }

    fn call_line(seq: u64, status: u16, body: &str, headers: Value) -> Value {
        json!({"capture": 1, "seq": seq, "method": "tools/call", "tool": "t",
               "argumentsHash": mcp_triage_kitchen::replay::capture_arguments_hash(Some(&json!({"a": 1}))),
               "request": {"method": "POST", "path": "/mcp",
                           "body": json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                          "params": {"name": "t", "arguments": {"a": 1}}}).to_string()},
               "status": status, "contentType": "application/json", "headers": headers,
               "body": body, "expectId": 1})
    }

    #[test]
    fn verdicts_choose_the_checks() {
        let err = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"boom"}],"isError":true}}"#;
        let (found, skipped) = cases(
            &capture(&[
                call_line(1, 503, "", json!({})),
                call_line(2, 200, err, json!({})),
            ]),
            60_000.0,
        );
        assert!(skipped.is_empty());
        assert_eq!(found.len(), 1, "one key, one case");
        let c = &found[0];
        assert_eq!(c.id, "seq1.t");
        assert_eq!(c.arguments, json!({"a": 1}));
        // no_unsafe_resend is every case's (checks_of); a 503 adds bounded_resend only for a
        // tool the captured tools/list calls read-only or idempotent.
        assert_eq!(
            &*c.checks,
            &[CheckKind::NoAutoResend, CheckKind::CapturedOutcome]
        );
        let captured = c.captured.as_ref().unwrap();
        assert_eq!(captured.verdict(2).unwrap().outcome, Outcome::ToolError);
        assert_eq!(
            captured.verdict(2).unwrap().tool_text.as_deref(),
            Some("boom")
        );

        let (found, _) = cases(
            &capture(&[call_line(1, 429, "", json!({"retry-after": "2"}))]),
            60_000.0,
        );
        assert_eq!(
            &*found[0].checks,
            &[CheckKind::RetryAfter, CheckKind::CapturedOutcome]
        );
        assert_eq!(found[0].retry_after_ms, 2000);
    }

    #[test]
    fn a_server_request_on_the_stream_is_an_input_round() {
        let sse = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"elicitation/create\",\"params\":{}}\n\n\
                   event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n";
        assert!(asks_for_input(sse.as_bytes()));
        let note =
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n";
        assert!(!asks_for_input(note.as_bytes()));
        let mut line = call_line(1, 200, sse, json!({}));
        line["contentType"] = json!("text/event-stream");
        let (found, _) = cases(&capture(&[line]), 60_000.0);
        assert_eq!(
            &*found[0].checks,
            &[CheckKind::MrtrRetry, CheckKind::CapturedOutcome]
        );
    }

    /// Issue 45 defect 2c: arguments the captured tools/list's schema refuses may be
    /// declined with a stated failure (n/a), arguments it takes may not.
    #[test]
    fn arguments_that_break_the_listed_schema_may_be_declined() {
        let list = |ty: &str| {
            let tools = json!({"jsonrpc": "2.0", "id": 0, "result": {"tools": [
                {"name": "t", "inputSchema": {"type": "object",
                 "properties": {"a": {"type": ty}}, "required": ["a"]}}]}});
            json!({"capture": 1, "seq": 0, "method": "tools/list",
                   "request": {"method": "POST", "path": "/mcp",
                               "body": r#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#},
                   "status": 200, "contentType": "application/json", "headers": {},
                   "body": tools.to_string(), "expectId": 0})
        };
        let ok = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
        let (found, _) = cases(
            &capture(&[list("string"), call_line(1, 200, ok, json!({}))]),
            60_000.0,
        );
        assert_eq!(found[0].may_decline, Some(BREAKS_SCHEMA));
        let (found, _) = cases(
            &capture(&[list("integer"), call_line(1, 200, ok, json!({}))]),
            60_000.0,
        );
        assert_eq!(found[0].may_decline, None);
        let (found, _) = cases(&capture(&[call_line(1, 200, ok, json!({}))]), 60_000.0);
        assert_eq!(found[0].may_decline, None, "no list, no reason");
    }

    /// Issue 45 defect 2b: a call whose captured stream is longer than --replay-max-delay
    /// is skipped with a reason naming the flag; the other calls of the file still run.
    #[test]
    fn a_call_over_the_delay_limit_is_skipped_not_the_file() {
        let ok = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
        let mut long = call_line(1, 200, ok, json!({}));
        long["headMs"] = json!(61_000.5);
        let mut other = call_line(2, 200, ok, json!({}));
        other["tool"] = json!("u");
        other["request"]["body"] = Value::String(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "u", "arguments": {"a": 1}}})
            .to_string(),
        );
        let (found, skipped) = cases(&capture(&[long.clone(), other.clone()]), 60_000.0);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].tool, "u");
        assert!(
            skipped[0].contains("seq 1")
                && skipped[0].contains("61000.5 ms")
                && skipped[0].contains("--replay-max-delay"),
            "{skipped:?}"
        );
        let (found, skipped) = cases(&capture(&[long, other]), 120_000.0);
        assert_eq!((found.len(), skipped.len()), (2, 0));
    }

    #[test]
    fn a_call_without_its_request_body_is_named_not_dropped() {
        let mut line = call_line(4, 200, "{}", json!({}));
        line["request"]["body"] = Value::Null;
        line["request"]["bodyTruncated"] = json!(true);
        let (found, skipped) = cases(&capture(&[line]), 60_000.0);
        assert!(found.is_empty());
        assert!(
            skipped[0].contains("seq 4") && skipped[0].contains("not in the capture"),
            "{skipped:?}"
        );
    }
}
