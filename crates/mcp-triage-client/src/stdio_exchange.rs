//! One stdio exchange: a line to the server's stdin, lines from its stdout until the answer,
//! answering server requests on the way and noting stdout lines that break the protocol.

use mcp_triage_core::retry::Delivery;
use mcp_triage_core::Verdict;
use serde_json::{json, Value};

use crate::answers::{build_answer, is_input_round, refusal, refused_text};
use crate::client::Client;
use crate::exchange::Attempt;
use crate::stdio::{Line, StdioConn};
use crate::wire::{self, Incoming, Sent};

impl Client {
    /// One request line and the lines that answer it, classified; server requests on the way
    /// are answered from the configured answers (or refused), stdout violations noted.
    pub(crate) async fn stdio_exchange(
        &self,
        conn: &mut StdioConn,
        msg: &Value,
        attempt: &Attempt<'_>,
    ) -> Sent {
        let (ctx, mut deadline, started) = (&attempt.ctx, attempt.deadline, attempt.started);
        if let Some(why) = &conn.closed {
            return Sent::failed(
                Verdict::connection_error(why.clone()),
                Delivery::NeverSent,
                started,
            );
        }
        if let Err(e) = conn.send(msg).await {
            let why = format!("{} (writing the request failed: {e})", conn.exit_text());
            conn.closed = Some(why.clone());
            return Sent::failed(Verdict::connection_error(why), Delivery::NeverSent, started);
        }
        let expected = &msg["id"];
        let mut notes = Vec::new();
        let mut answered = 0;
        loop {
            let line = match tokio::time::timeout_at(deadline, conn.lines.recv()).await {
                Err(_) => {
                    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": { "requestId": expected, "reason": "timeout" } });
                    let _ = conn.send(&cancel).await;
                    let mut s = Sent::failed(
                        Verdict::timeout(
                            "no response line before the deadline; notifications/cancelled sent",
                        ),
                        Delivery::MaybeExecuted,
                        started,
                    );
                    s.notes = notes;
                    return s;
                }
                Ok(None) | Ok(Some(Line::Closed)) => {
                    let why = conn.exit_text();
                    conn.closed = Some(why.clone());
                    let mut s = Sent::failed(
                        Verdict::connection_error(format!("{why} before answering the request")),
                        Delivery::MaybeExecuted,
                        started,
                    );
                    s.notes = notes;
                    return s;
                }
                Ok(Some(Line::TooLong(n))) => {
                    notes.push((
                        "STDOUT_LINE_TOO_LONG".into(),
                        format!("a stdout line of {n} bytes exceeded maxBodyBytes and was skipped"),
                    ));
                    continue;
                }
                Ok(Some(Line::Message(l))) => l,
            };
            let Some(v) = jsonrpc_line(&line, &mut notes) else {
                continue;
            };
            if let Some(inc) = Incoming::request_in(&v) {
                answered += self.answer_on_stdio(conn, &inc, &mut notes).await;
                continue;
            }
            if v.get("id") != Some(expected) {
                // a notification or another id; progress for our token moves the deadline
                if let Some(k) = attempt.keepalive.as_ref().filter(|k| k.is_progress(&v)) {
                    deadline = k.extended(deadline, tokio::time::Instant::now());
                }
                continue;
            }
            let (verdict, response) = wire::classify_line(&line, ctx);
            let mut s = Sent::failed(verdict, Delivery::Sent, started);
            s.response = response;
            s.notes = notes;
            s.answered = answered;
            // no content type: a stdio line has none, and labelling it one made a stdio
            // attempt look like an HTTP answer in the record
            return s;
        }
    }

    /// Keeps a stdio server's stdout violations seen during a setup exchange for the next
    /// call's record: a banner before the `initialize` answer is the same violation as a log
    /// line during the call, and must not go unreported because it came first.
    pub(crate) fn keep_stdout_notes(&self, sent: &Sent) {
        let violations = sent
            .notes
            .iter()
            .filter(|(code, _)| code.starts_with("STDOUT_"));
        if let Ok(mut pending) = self.pending_notes.lock() {
            pending.extend(violations.cloned());
        }
    }

    /// Answers a server request on stdin from the configured answers, or refuses it as the spec
    /// defines and waits for the server's final answer, as over HTTP: the verdict is what the
    /// server made of the refusal. Returns 1 for an input round answered, else 0.
    async fn answer_on_stdio(
        &self,
        conn: &mut StdioConn,
        inc: &Incoming,
        notes: &mut Vec<(String, String)>,
    ) -> u32 {
        match build_answer(&self.opts, inc) {
            Ok(reply) => {
                let _ = conn.send(&reply).await;
                u32::from(is_input_round(inc))
            }
            Err(why) => {
                let _ = conn.send(&refusal(inc)).await;
                notes.push(("INPUT_UNANSWERED".into(), refused_text(inc, &why)));
                0
            }
        }
    }
}

/// A stdout line as a JSON-RPC message; a line that is none is a protocol violation, noted.
fn jsonrpc_line(line: &[u8], notes: &mut Vec<(String, String)>) -> Option<Value> {
    let parsed: Option<Value> = serde_json::from_slice(line).ok();
    let Some(v) = parsed.filter(|v| {
        v.get("jsonrpc").is_some() || v.get("id").is_some() || v.get("method").is_some()
    }) else {
        let text = String::from_utf8_lossy(&line[..line.len().min(120)]).to_string();
        notes.push((
            "STDOUT_NOT_JSONRPC".into(),
            format!(
                "the server wrote a non-JSON-RPC line to stdout (a protocol violation): {}",
                mcp_triage_core::sanitize_line(&text, 120)
            ),
        ));
        return None;
    };
    Some(v)
}
