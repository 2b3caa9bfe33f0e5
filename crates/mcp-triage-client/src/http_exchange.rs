//! One HTTP exchange: the POST a message becomes (headers by era), reading its response through
//! the classifier ([`crate::wire::read_response`]), the `notifications/cancelled` a timed-out
//! legacy request needs, and the resuming GET (`Last-Event-ID`) of a broken legacy stream.

use std::sync::Arc;
use std::time::Instant;

use mcp_triage_core::retry::Delivery;
use mcp_triage_core::{Outcome, OutputSchema, ProtocolVersion, Verdict};
use serde_json::{json, Value};

use crate::client::{Client, Era, HttpEndpoint, Negotiated, Transport};
use crate::exchange::Attempt;
use crate::headers::{header_value, with_token};
use crate::tools::param_headers;
use crate::wire::{self, Sent};

impl Client {
    /// The POST that carries `msg`: the user's headers and bearer token, the protocol headers
    /// its era and revision call for, the session, and `extra` (`Mcp-Param-*`).
    pub(crate) fn http_request(
        &self,
        to: &HttpEndpoint,
        msg: &Value,
        with: Negotiated<'_>,
        extra: &[(String, String)],
    ) -> reqwest::RequestBuilder {
        let Negotiated {
            era,
            version,
            session,
        } = with;
        let mut req = to
            .http
            .post(&to.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json");
        req = with_token(req, &to.headers, &self.bearer);
        let is_init = msg["method"] == "initialize";
        if era == Era::Modern || (!is_init && version.at_least(ProtocolVersion::V2025_06_18)) {
            req = req.header("MCP-Protocol-Version", version.as_str());
        }
        if era == Era::Modern {
            if let Some(m) = msg["method"].as_str() {
                req = req.header("Mcp-Method", header_value(m));
            }
            let name = match msg["method"].as_str() {
                Some("tools/call" | "prompts/get") => msg["params"]["name"].as_str(),
                Some("resources/read") => msg["params"]["uri"].as_str(),
                // SEP-2663 routing headers: a task's requests name the task.
                Some("tasks/get" | "tasks/update" | "tasks/cancel") => {
                    msg["params"]["taskId"].as_str()
                }
                _ => None,
            };
            if let Some(n) = name {
                req = req.header("Mcp-Name", header_value(n));
            }
        }
        if era == Era::Legacy {
            if let Some(s) = session {
                req = req.header("Mcp-Session-Id", s);
            }
        }
        for (k, v) in extra {
            req = req.header(k.as_str(), v.as_str());
        }
        req.body(serde_json::to_vec(msg).unwrap_or_default())
    }

    /// One HTTP request/response, classified (no authorization handling).
    pub(crate) async fn http_once(
        &self,
        to: &HttpEndpoint,
        msg: &Value,
        with: Negotiated<'_>,
        attempt: &Attempt<'_>,
    ) -> Sent {
        let Attempt {
            id,
            ctx,
            deadline,
            started,
            tool,
            keepalive,
        } = attempt;
        let (deadline, started) = (*deadline, *started);
        let era = with.era;
        let extra = tool
            .map(|t| param_headers(t, &msg["params"]["arguments"]))
            .unwrap_or_default();
        let req = self.http_request(to, msg, with, &extra);
        let mut sent = match tokio::time::timeout_at(deadline, req.send()).await {
            Err(_) => Sent::failed(
                Verdict::timeout("no response head before the deadline"),
                Delivery::MaybeExecuted,
                started,
            ),
            Ok(Err(e)) => {
                let delivery = if e.is_connect() {
                    Delivery::NeverSent
                } else {
                    Delivery::MaybeExecuted
                };
                let what = if e.is_connect() {
                    "could not connect"
                } else {
                    "the connection failed before a response"
                };
                Sent::failed(
                    Verdict::connection_error(format!("{what}: {}", wire::error_chain(&e))),
                    delivery,
                    started,
                )
            }
            Ok(Ok(resp)) => {
                self.bearer.observe(resp.url(), resp.headers());
                let answers_ok = era == Era::Legacy;
                let mut sent = wire::read_response(
                    resp,
                    ctx.clone(),
                    (deadline, keepalive.as_ref()),
                    started,
                    |inc| async move {
                        if !answers_ok {
                            return Err(wire::IncomingError::ModernStream);
                        }
                        self.answer_incoming(inc, with).await
                    },
                )
                .await;
                if matches!(
                    sent.verdict.outcome,
                    Outcome::Timeout | Outcome::ConnectionError
                ) {
                    sent.delivery = Delivery::MaybeExecuted;
                }
                sent
            }
        };
        // Dropping the response closed the stream, which cancels a 2026-07-28 request;
        // legacy servers need notifications/cancelled (initialize is never cancelled).
        if sent.verdict.outcome == Outcome::Timeout
            && era == Era::Legacy
            && msg["method"] != "initialize"
        {
            let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": { "requestId": id, "reason": "timeout" } });
            self.notify(&cancel, with).await;
            if let Some(d) = sent.verdict.detail.as_mut() {
                d.push_str("; notifications/cancelled sent");
            }
        }
        sent
    }

    /// GET the legacy stream again with `Last-Event-ID`; its events answer the original id.
    pub(crate) async fn resume_stream(
        &self,
        id: &Value,
        last_event_id: &str,
        version: ProtocolVersion,
        session: Option<&str>,
        schema: Option<Arc<OutputSchema>>,
        deadline: tokio::time::Instant,
    ) -> Sent {
        let started = Instant::now();
        let Transport::Http(HttpEndpoint { http, url, headers }) = &self.transport else {
            return Sent::failed(
                Verdict::connection_error("resumption needs HTTP"),
                Delivery::Sent,
                started,
            );
        };
        let mut req = http
            .get(url)
            .header("Accept", "text/event-stream")
            .header("Last-Event-ID", last_event_id);
        req = with_token(req, headers, &self.bearer);
        if version.at_least(ProtocolVersion::V2025_06_18) {
            req = req.header("MCP-Protocol-Version", version.as_str());
        }
        if let Some(s) = session {
            req = req.header("Mcp-Session-Id", s);
        }
        let ctx = wire::context(
            id,
            version,
            self.opts.limits,
            schema,
            mcp_triage_core::RequestSession::from_header(session),
        )
        .with_drafts(self.opts.drafts);
        let resp = match tokio::time::timeout_at(deadline, req.send()).await {
            Err(_) => {
                return Sent::failed(
                    Verdict::timeout("no response head to the resuming GET"),
                    Delivery::MaybeExecuted,
                    started,
                )
            }
            Ok(Err(e)) => {
                return Sent::failed(
                    Verdict::connection_error(wire::error_chain(&e)),
                    Delivery::MaybeExecuted,
                    started,
                )
            }
            Ok(Ok(r)) => r,
        };
        wire::read_response(resp, ctx, (deadline, None), started, |inc| async move {
            let with = Negotiated {
                era: Era::Legacy,
                version,
                session,
            };
            self.answer_incoming(inc, with).await
        })
        .await
    }
}
