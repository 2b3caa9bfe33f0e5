//! Asking a person on the terminal for input the server requested: form elicitation field by
//! field from `requestedSchema` (defaults offered, enums as choices, constraints checked), URL
//! elicitation shows the URL and waits, sampling needs a typed reply. Prompts go to stderr so
//! that stdout stays the result.

use std::io::{BufRead, Write};
use std::sync::Mutex;

use mcp_triage_client::Prompter;
use serde_json::{json, Map, Value};

/// Tries per field before the form is cancelled.
const MAX_TRIES: usize = 3;

/// Prompts on the process's terminal (stdin/stderr), one request at a time.
pub struct TerminalPrompter {
    lock: Mutex<()>,
}

impl TerminalPrompter {
    pub fn new() -> TerminalPrompter {
        TerminalPrompter {
            lock: Mutex::new(()),
        }
    }
}

impl Prompter for TerminalPrompter {
    fn answer(&self, method: &str, params: &Value) -> Option<Value> {
        let _one_at_a_time = self.lock.lock().ok()?;
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut out = std::io::stderr();
        ask(method, params, &mut input, &mut out)
    }
}

fn line(input: &mut dyn BufRead) -> Option<String> {
    let mut s = String::new();
    match input.read_line(&mut s) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(s.trim_end_matches(['\n', '\r']).to_string()),
    }
}

/// Asks for the input response to `method` (elicitation/create, sampling/createMessage).
pub fn ask(
    method: &str,
    params: &Value,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Option<Value> {
    let message = mcp_triage_core::sanitize_line(params["message"].as_str().unwrap_or(""), 500);
    match method {
        "elicitation/create" if params["mode"] == "url" => {
            let url = mcp_triage_core::sanitize_line(params["url"].as_str().unwrap_or(""), 500);
            let _ = writeln!(out, "The server asks you to open a URL: {message}\n  {url}");
            let _ = write!(out, "Press Enter when done, d to decline, c to cancel: ");
            let _ = out.flush();
            let action = match line(input)?.trim() {
                "d" => "decline",
                "c" => "cancel",
                _ => "accept",
            };
            Some(json!({ "action": action }))
        }
        "elicitation/create" => form(&message, &params["requestedSchema"], input, out),
        "sampling/createMessage" => {
            let _ = writeln!(out, "The server asks for an LLM completion (sampling):");
            for m in params["messages"].as_array().into_iter().flatten() {
                let text = m["content"]["text"]
                    .as_str()
                    .unwrap_or("(non-text content)");
                let _ = writeln!(
                    out,
                    "  {}: {}",
                    m["role"].as_str().unwrap_or("?"),
                    mcp_triage_core::sanitize_line(text, 500)
                );
            }
            let _ = write!(out, "Type the reply (empty leaves it unanswered): ");
            let _ = out.flush();
            let reply = line(input)?;
            if reply.trim().is_empty() {
                return None;
            }
            Some(
                json!({ "role": "assistant", "content": { "type": "text", "text": reply },
                "model": "human-via-mcp-triage", "stopReason": "endTurn" }),
            )
        }
        _ => None,
    }
}

fn form(
    message: &str,
    schema: &Value,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Option<Value> {
    let _ = writeln!(out, "The server asks: {message}");
    let _ = write!(out, "Answer (a)ccept, (d)ecline or (c)ancel? [a] ");
    let _ = out.flush();
    match line(input)?.trim() {
        "d" | "decline" => return Some(json!({ "action": "decline" })),
        "c" | "cancel" => return Some(json!({ "action": "cancel" })),
        _ => {}
    }
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
        let is_required = required.contains(&name.as_str());
        let mut tries = 0;
        loop {
            let label = prop["title"].as_str().unwrap_or(name);
            let mut hint = Vec::new();
            if let Some(d) = prop["description"].as_str() {
                hint.push(mcp_triage_core::sanitize_line(d, 200));
            }
            if let Some(choices) = enum_choices(prop) {
                hint.push(format!("one of: {}", choices.join(", ")));
            }
            if let Some(f) = prop["format"].as_str() {
                hint.push(format!("format {}", mcp_triage_core::sanitize_line(f, 40)));
            }
            if let Some(d) = prop.get("default") {
                hint.push(format!("default {d}"));
            }
            if is_required {
                hint.push("required".into());
            }
            let _ = write!(
                out,
                "  {label}{}: ",
                if hint.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", hint.join("; "))
                }
            );
            let _ = out.flush();
            let raw = line(input)?;
            if raw.is_empty() {
                if let Some(d) = prop.get("default") {
                    content.insert(name.clone(), d.clone());
                    break;
                }
                if !is_required {
                    break;
                }
            }
            let checked = if raw.is_empty() {
                Err(Invalid::Required)
            } else {
                check(prop, &raw)
            };
            match checked {
                Ok(v) => {
                    content.insert(name.clone(), v);
                    break;
                }
                Err(why) => {
                    tries += 1;
                    let _ = writeln!(out, "    {why}");
                    if tries >= MAX_TRIES {
                        let _ = writeln!(out, "  too many invalid answers: cancelling");
                        return Some(json!({ "action": "cancel" }));
                    }
                }
            }
        }
    }
    Some(json!({ "action": "accept", "content": content }))
}

fn enum_choices(prop: &Value) -> Option<Vec<String>> {
    if let Some(e) = prop["enum"].as_array() {
        return Some(
            e.iter()
                .map(|v| v.as_str().map_or(v.to_string(), str::to_string))
                .collect(),
        );
    }
    let one_of = prop["oneOf"]
        .as_array()
        .or(prop["items"]["anyOf"].as_array())?;
    Some(
        one_of
            .iter()
            .filter_map(|o| o["const"].as_str().map(str::to_string))
            .collect(),
    )
}

/// Why an answer is not taken: the line printed under the question before it is asked again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
enum Invalid {
    /// Nothing typed for a required field without a default.
    #[error("required")]
    Required,
    /// Not an integer.
    #[error("an integer, please")]
    Integer,
    /// Not a number.
    #[error("a number, please")]
    Number,
    /// A number JSON cannot hold (infinite or NaN).
    #[error("a finite number, please")]
    FiniteNumber,
    /// Not a yes or no.
    #[error("yes or no, please")]
    YesOrNo,
    /// Not one of the choices.
    #[error("one of: {}", .0.join(", "))]
    Choices(Vec<String>),
    /// Shorter than `minLength`.
    #[error("at least {0} characters")]
    MinLength(Value),
    /// Longer than `maxLength`.
    #[error("at most {0} characters")]
    MaxLength(Value),
    /// Below `minimum`.
    #[error("at least {0}")]
    Minimum(Value),
    /// Above `maximum`.
    #[error("at most {0}")]
    Maximum(Value),
    /// Not of the field's `format` (`email`, `uri`, `date`, `date-time`).
    #[error("{}, please", format_noun(.0))]
    Format(String),
}

/// What a value of an elicitation string `format` is called in a retry line.
fn format_noun(format: &str) -> String {
    match format {
        "email" => "an email address".into(),
        "uri" => "an absolute URI (scheme:…)".into(),
        "date" => "a date as YYYY-MM-DD".into(),
        "date-time" => "a date and time as RFC 3339 (2026-12-07T09:30:00Z)".into(),
        other => format!(
            "a value of format {}",
            mcp_triage_core::sanitize_line(other, 40)
        ),
    }
}

/// Whether `s` is of the elicitation string `format` the field names: the four the spec
/// allows (`email`, `uri`, `date`, `date-time`), checked by jsonschema's format validators;
/// a format it does not know passes, as JSON Schema says unknown formats do.
fn format_ok(format: &str, s: &str) -> bool {
    jsonschema::options()
        .should_validate_formats(true)
        .build(&json!({ "type": "string", "format": format }))
        .map_or(true, |v| v.is_valid(&json!(s)))
}

/// Parses and checks one answer against its property schema.
fn check(prop: &Value, raw: &str) -> Result<Value, Invalid> {
    let ty = prop["type"].as_str().unwrap_or("string");
    let v = match ty {
        "integer" => raw
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| Invalid::Integer)?,
        "number" => {
            let n = raw.trim().parse::<f64>().map_err(|_| Invalid::Number)?;
            serde_json::Number::from_f64(n)
                .map(Value::Number)
                .ok_or(Invalid::FiniteNumber)?
        }
        "boolean" => match raw.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "1" => Value::Bool(true),
            "n" | "no" | "false" | "0" => Value::Bool(false),
            _ => return Err(Invalid::YesOrNo),
        },
        _ => Value::String(raw.to_string()),
    };
    if let Some(choices) = enum_choices(prop) {
        if !choices.is_empty() && !choices.iter().any(|c| Some(c.as_str()) == v.as_str()) {
            return Err(Invalid::Choices(choices));
        }
    }
    if let Some(s) = v.as_str() {
        let n = s.chars().count() as u64;
        if prop["minLength"].as_u64().is_some_and(|m| n < m) {
            return Err(Invalid::MinLength(prop["minLength"].clone()));
        }
        if prop["maxLength"].as_u64().is_some_and(|m| n > m) {
            return Err(Invalid::MaxLength(prop["maxLength"].clone()));
        }
        if let Some(f) = prop["format"].as_str().filter(|f| !format_ok(f, s)) {
            return Err(Invalid::Format(f.to_string()));
        }
    }
    if let Some(x) = v.as_f64() {
        if prop["minimum"].as_f64().is_some_and(|m| x < m) {
            return Err(Invalid::Minimum(prop["minimum"].clone()));
        }
        if prop["maximum"].as_f64().is_some_and(|m| x > m) {
            return Err(Invalid::Maximum(prop["maximum"].clone()));
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(method: &str, params: Value, typed: &str) -> (Option<Value>, String) {
        let mut input = std::io::Cursor::new(typed.as_bytes().to_vec());
        let mut out = Vec::new();
        let v = ask(method, &params, &mut input, &mut out);
        (v, String::from_utf8(out).unwrap())
    }

    #[test]
    fn form_fields_defaults_enums_and_constraints() {
        let params = json!({ "message": "Close the ticket?", "requestedSchema": { "type": "object",
            "properties": {
                "reason": { "type": "string", "title": "Reason", "maxLength": 5 },
                "count": { "type": "integer", "minimum": 1, "default": 2 },
                "level": { "type": "string", "enum": ["low", "high"] },
                "ok": { "type": "boolean" }
            }, "required": ["reason", "level"] } });
        // Fields come in key order (count, level, ok, reason): accept; count takes its default;
        // level invalid then valid; ok yes; reason too long then fine.
        let (v, out) = run(
            "elicitation/create",
            params.clone(),
            "a\n\nmid\nhigh\ny\ntoo long\nshort\n",
        );
        assert_eq!(
            v.unwrap(),
            json!({ "action": "accept", "content": { "reason": "short", "count": 2, "level": "high", "ok": true } })
        );
        assert!(
            out.contains("at most 5 characters") && out.contains("one of: low, high"),
            "{out}"
        );
        let (v, _) = run("elicitation/create", params.clone(), "d\n");
        assert_eq!(v.unwrap()["action"], "decline");
        // Three bad answers cancel; end of input leaves the request unanswered.
        let (v, _) = run("elicitation/create", params.clone(), "a\n\n\n\n\n");
        assert_eq!(v.unwrap()["action"], "cancel");
        assert!(run("elicitation/create", params, "a\n").0.is_none());
    }

    #[test]
    fn a_fields_format_is_shown_and_checked() {
        let params = json!({ "message": "Contact", "requestedSchema": { "type": "object",
            "properties": {
                "mail": { "type": "string", "format": "email" },
                "day": { "type": "string", "format": "date" },
                "site": { "type": "string", "format": "uri" }
            }, "required": ["mail", "day", "site"] } });
        let (v, out) = run(
            "elicitation/create",
            params,
            "a\n2026-13-40\n2026-12-07\nnot an address\nada@example.org\nexample.org\nhttps://example.org/\n",
        );
        assert_eq!(
            v.unwrap(),
            json!({ "action": "accept", "content": { "day": "2026-12-07",
                "mail": "ada@example.org", "site": "https://example.org/" } })
        );
        for shown in [
            "mail (format email; required)",
            "day (format date; required)",
        ] {
            assert!(out.contains(shown), "{out}");
        }
        for said in [
            "a date as YYYY-MM-DD, please",
            "an email address, please",
            "an absolute URI (scheme:…), please",
        ] {
            assert!(out.contains(said), "{out}");
        }
    }

    #[test]
    fn url_and_sampling() {
        let (v, out) = run(
            "elicitation/create",
            json!({ "mode": "url", "message": "Log in", "url": "https://example.com/x" }),
            "\n",
        );
        assert_eq!(v.unwrap(), json!({ "action": "accept" }));
        assert!(out.contains("https://example.com/x"));
        let s = json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "Capital of France?" } }] });
        let (v, out) = run("sampling/createMessage", s.clone(), "Paris\n");
        assert_eq!(v.unwrap()["content"]["text"], "Paris");
        assert!(out.contains("Capital of France?"));
        assert!(run("sampling/createMessage", s, "\n").0.is_none());
    }
}
