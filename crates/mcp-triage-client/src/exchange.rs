//! One request/response exchange on the client's transport, classified ([`Client::exchange`]): what
//! the message is sent under ([`Negotiated`]), the bounds of the attempt ([`Attempt`]), and OAuth's
//! challenge-and-resend inside one exchange. Also the client's notifications and its replies to
//! server requests. [`crate::http_exchange`] and [`crate::stdio_exchange`] do the I/O.

use std::sync::Arc;
use std::time::Instant;

use mcp_triage_core::{CallContext, OutputSchema};
use serde_json::Value;

use crate::answers::{build_answer, is_input_round, refusal, refused_text};
use crate::client::{Client, Negotiated, Transport};
use crate::oauth::AuthAttempts;
use crate::tools::ToolInfo;
use crate::wire::{self, Incoming, Sent};

/// One attempt at an exchange, besides the message and what it is sent under: the id whose
/// answer is awaited, how that answer is judged, by when it must come, when the attempt
/// started (its duration), and the tool whose `x-mcp-header` arguments go as headers.
pub(crate) struct Attempt<'a> {
    pub(crate) id: &'a Value,
    pub(crate) ctx: CallContext,
    pub(crate) deadline: tokio::time::Instant,
    pub(crate) started: Instant,
    pub(crate) tool: Option<&'a ToolInfo>,
    /// What progress notifications do to `deadline` (a tool call that asked for progress).
    pub(crate) keepalive: Option<crate::keepalive::Keepalive>,
}

impl Client {
    /// One request/response exchange on the transport, classified.
    pub(crate) async fn exchange(
        &self,
        msg: &Value,
        id: &Value,
        with: Negotiated<'_>,
        schema: Option<Arc<OutputSchema>>,
        deadline: tokio::time::Instant,
        tool: Option<&ToolInfo>,
    ) -> Sent {
        let started = Instant::now();
        // a tasks/get answer is a task's state: the core judges it by the task rules
        let kind = mcp_triage_core::RequestKind::from_method(msg["method"].as_str().unwrap_or(""));
        let ctx = wire::context(
            id,
            with.version,
            self.opts.limits,
            schema,
            mcp_triage_core::RequestSession::from_header(with.session),
        )
        .with_request_kind(kind)
        .with_drafts(self.opts.drafts);
        let keepalive = crate::keepalive::Keepalive::for_message(
            msg,
            deadline.saturating_duration_since(tokio::time::Instant::now()),
            self.opts.progress_max_wait,
            tokio::time::Instant::now(),
        );
        let mut attempt = Attempt {
            id,
            ctx,
            deadline,
            started,
            tool,
            keepalive,
        };
        match &self.transport {
            Transport::Http(_) if self.sse().is_some() => {
                let sse = self.sse().expect("checked");
                sse.exchange(msg, &attempt.ctx, attempt.deadline).await
            }
            Transport::Http(to) => {
                let mut attempts = AuthAttempts::default();
                let mut auth_notes: Vec<(String, String)> = Vec::new();
                loop {
                    if let Some(o) = &self.oauth {
                        auth_notes.extend(o.prepare().await);
                    }
                    let mut sent = self.http_once(to, msg, with, &attempt).await;
                    if let (Some(o), Some(status)) = (&self.oauth, sent.status) {
                        let challenge = sent.verdict.auth_challenge.clone();
                        let insufficient = status == 403
                            && challenge.as_ref().and_then(|c| c.error.as_deref())
                                == Some("insufficient_scope");
                        if status == 401 || insufficient {
                            match o
                                .on_challenge(status, challenge.as_deref(), &mut attempts)
                                .await
                            {
                                Ok((code, note)) => {
                                    auth_notes.push((code.to_string(), note));
                                    // The person may have taken a while in the browser.
                                    attempt.deadline = attempt
                                        .deadline
                                        .max(tokio::time::Instant::now() + self.opts.timeout);
                                    continue;
                                }
                                Err(why) => {
                                    let why = why.to_string();
                                    let detail =
                                        sent.verdict.detail.get_or_insert_with(String::new);
                                    detail.push_str(&format!("; authorization failed: {why}"));
                                    auth_notes.push(("AUTH_FAILED".to_string(), why));
                                }
                            }
                        }
                    }
                    if !auth_notes.is_empty() {
                        if let Ok(mut pending) = self.pending_notes.lock() {
                            pending.extend(auth_notes.iter().cloned());
                        }
                    }
                    auth_notes.append(&mut sent.notes);
                    sent.notes = auth_notes;
                    break sent;
                }
            }
            Transport::Stdio(conn) => {
                let mut conn = conn.lock().await;
                self.stdio_exchange(&mut conn, msg, &attempt).await
            }
        }
    }

    /// Sends a notification; failures are ignored (a notification has no answer to judge).
    pub(crate) async fn notify(&self, msg: &Value, with: Negotiated<'_>) {
        if let Some(sse) = self.sse() {
            sse.post(msg).await;
            return;
        }
        match &self.transport {
            Transport::Http(to) => {
                let req = self.http_request(to, msg, with, &[]);
                let _ = tokio::time::timeout(self.opts.timeout, async {
                    if let Ok(r) = req.send().await {
                        let _ = r.bytes().await;
                    }
                })
                .await;
            }
            Transport::Stdio(conn) => {
                let _ = conn.lock().await.send(msg).await;
            }
        }
    }

    /// Answers a legacy server request by POSTing the JSON-RPC response.
    pub(crate) async fn answer_incoming(
        &self,
        inc: Incoming,
        with: Negotiated<'_>,
    ) -> Result<wire::Answer, wire::IncomingError> {
        let (reply, answer) = match build_answer(&self.opts, &inc) {
            Ok(r) => (
                r,
                wire::Answer::Given {
                    input_round: is_input_round(&inc),
                },
            ),
            // Refuse, so the server's tool does not wait for an answer that never comes; its
            // final answer then arrives on the same stream.
            Err(why) => (
                refusal(&inc),
                wire::Answer::Refused(refused_text(&inc, &why)),
            ),
        };
        self.post_reply(&reply, with).await;
        Ok(answer)
    }

    /// Posts the reply to a server request (over HTTP+SSE, to its message endpoint).
    async fn post_reply(&self, reply: &Value, with: Negotiated<'_>) {
        if let Some(sse) = self.sse() {
            sse.post(reply).await;
            return;
        }
        if let Transport::Http(to) = &self.transport {
            let req = self.http_request(to, reply, with, &[]);
            let _ = tokio::time::timeout(self.opts.timeout, async {
                if let Ok(r) = req.send().await {
                    let _ = r.bytes().await;
                }
            })
            .await;
        }
    }
}
