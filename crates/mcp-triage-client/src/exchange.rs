//! One request/response exchange on the client's transport, classified ([`Client::exchange`]):
//! the message as sent ([`Outgoing`]), the bounds of the attempt ([`Attempt`]), and OAuth's
//! challenge-and-resend inside one exchange. Also the client's notifications and its replies to
//! server requests. [`crate::http_exchange`] and [`crate::stdio_exchange`] do the I/O.

use std::sync::Arc;
use std::time::Instant;

use mcp_triage_core::{OutputSchema, ProtocolVersion};
use serde_json::Value;

use crate::answers::{build_answer, is_input_round, refusal, refused_text};
use crate::client::{Client, Era, Transport};
use crate::oauth::AuthAttempts;
use crate::tools::ToolInfo;
use crate::wire::{self, Incoming, Sent};

impl Client {
    /// One request/response exchange on the transport, classified.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn exchange(
        &self,
        msg: &Value,
        id: &Value,
        era: Era,
        version: ProtocolVersion,
        session: Option<&str>,
        schema: Option<Arc<OutputSchema>>,
        deadline: tokio::time::Instant,
        tool: Option<&ToolInfo>,
    ) -> Sent {
        let started = Instant::now();
        // a tasks/get answer is a task's state: the core judges it by the task rules
        let kind = mcp_triage_core::RequestKind::from_method(msg["method"].as_str().unwrap_or(""));
        let ctx = wire::context(
            id,
            version,
            self.opts.limits,
            schema,
            mcp_triage_core::RequestSession::from_header(session),
        )
        .with_request_kind(kind);
        match &self.transport {
            Transport::Http { .. } if self.sse().is_some() => {
                let sse = self.sse().expect("checked");
                sse.exchange(msg, &ctx, deadline).await
            }
            Transport::Http { http, url, headers } => {
                let mut attempts = AuthAttempts::default();
                let mut auth_notes: Vec<(String, String)> = Vec::new();
                let mut deadline = deadline;
                loop {
                    if let Some(o) = &self.oauth {
                        auth_notes.extend(o.prepare().await);
                    }
                    let mut sent = self
                        .http_once(
                            http, url, headers, msg, id, era, version, session, &ctx, deadline,
                            tool, started,
                        )
                        .await;
                    if let (Some(o), Some(status)) = (&self.oauth, sent.status) {
                        let challenge = sent.verdict.auth_challenge.clone();
                        let insufficient = status == 403
                            && challenge.as_ref().and_then(|c| c.error.as_deref())
                                == Some("insufficient_scope");
                        if status == 401 || insufficient {
                            match o
                                .on_challenge(status, challenge.as_ref(), &mut attempts)
                                .await
                            {
                                Ok((code, note)) => {
                                    auth_notes.push((code.to_string(), note));
                                    // The person may have taken a while in the browser.
                                    deadline = deadline
                                        .max(tokio::time::Instant::now() + self.opts.timeout);
                                    continue;
                                }
                                Err(why) => {
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
                self.stdio_exchange(&mut conn, msg, &ctx, deadline, started)
                    .await
            }
        }
    }

    /// Sends a notification; failures are ignored (a notification has no answer to judge).
    pub(crate) async fn notify(
        &self,
        msg: &Value,
        era: Era,
        version: ProtocolVersion,
        session: Option<&str>,
    ) {
        if let Some(sse) = self.sse() {
            sse.post(msg).await;
            return;
        }
        match &self.transport {
            Transport::Http { http, url, headers } => {
                let req = self.http_request(http, url, headers, msg, era, version, session, &[]);
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
        era: Era,
        version: ProtocolVersion,
        session: Option<&str>,
    ) -> Result<wire::Answer, String> {
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
        self.post_reply(&reply, era, version, session).await;
        Ok(answer)
    }

    async fn post_reply(
        &self,
        reply: &Value,
        era: Era,
        version: ProtocolVersion,
        session: Option<&str>,
    ) {
        if let Some(sse) = self.sse() {
            sse.post(reply).await;
            return;
        }
        if let Transport::Http { http, url, headers } = &self.transport {
            let req = self.http_request(http, url, headers, reply, era, version, session, &[]);
            let _ = tokio::time::timeout(self.opts.timeout, async {
                if let Ok(r) = req.send().await {
                    let _ = r.bytes().await;
                }
            })
            .await;
        }
    }
}
