//! What a scenario sees of a request: [`WireCx`] at the wire, [`ToolCx`] inside a tool, and
//! the channel ([`Emitter`], [`Out`]) a tool body's messages go out on.
//!
//! Part of the plug-in API ([`crate::plugin`]). The handles name only what a scenario uses:
//! its instance's state ([`InstanceState`]), its legacy session, the authorization server's
//! token check, the request's journal notes ([`Trace`]) and the one option a tool reads
//! (how long to wait for the client's answer), never the kitchen's shared state.

use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::instance_state::InstanceState;
use crate::oauth_as::AuthServer;
use crate::plugin::reply::ToolReply;
use crate::plugin::spec::{Params, ScenarioInfo};
use crate::protocol::{self, Era};
use crate::session::Session;
use crate::trace::Trace;

/// The request as the wire hook sees it.
pub struct WireCx<'a> {
    /// JSON-RPC method (`None` for unparseable bodies and client responses).
    pub method: Option<&'a str>,
    /// JSON-RPC id (`None` for notifications).
    pub id: Option<&'a Value>,
    /// JSON-RPC params (`Null` when absent).
    pub params: &'a Value,
    /// `params.name` of a `tools/call`.
    pub tool: Option<&'a str>,
    /// HTTP request headers.
    pub headers: &'a HeaderMap,
    /// The instance's state (counters already incremented for this request).
    pub instance: &'a InstanceState,
    /// 1-based number of this POST on the instance (its `httpRequest` count when it was
    /// received; unlike [`WireCx::count`] not moved by concurrent requests).
    pub post: u64,
    /// Era of the request.
    pub era: Era,
    /// Legacy session, if any.
    pub session: Option<&'a Session>,
    /// Absolute URL of the instance's MCP endpoint.
    pub endpoint_url: &'a str,
    /// Absolute URL of the server root.
    pub base_url: &'a str,
    /// The kitchen's authorization server (tokens for `auth.oauth_flow`).
    pub auth: &'a AuthServer,
}

impl WireCx<'_> {
    /// Scenario parameters.
    pub fn p(&self) -> &Params {
        &self.instance.params
    }
    /// Counter value.
    pub fn count(&self, key: &str) -> u64 {
        self.instance.count(key)
    }
    /// True for a JSON-RPC request (has method and id).
    pub fn is_request(&self) -> bool {
        self.method.is_some() && self.id.is_some()
    }
    /// The id to echo in an error body.
    pub fn id_or_null(&self) -> Value {
        self.id.cloned().unwrap_or(Value::Null)
    }
}

/// A message produced while answering one request.
#[derive(Debug)]
pub enum Out {
    /// A notification or server→client request (goes on the SSE stream).
    Message(Value),
    /// The JSON-RPC response, with the HTTP status to use when it is sent as JSON.
    Final(u16, Value),
    /// Bytes written verbatim into the SSE body (comments, partial events).
    Raw(Bytes),
    /// End the stream without a response.
    End,
    /// Break the connection.
    Abort,
}

/// Sender side of a response in progress.
#[derive(Clone)]
pub struct Emitter {
    tx: mpsc::UnboundedSender<Out>,
    /// Whether messages before the result can reach the client (false in JSON mode).
    pub streaming: bool,
}

impl Emitter {
    /// Wrap a channel.
    pub fn new(tx: mpsc::UnboundedSender<Out>, streaming: bool) -> Emitter {
        Emitter { tx, streaming }
    }
    /// Send (ignores a client that has gone).
    pub fn send(&self, o: Out) {
        let _ = self.tx.send(o);
    }
    /// Resolves when nobody will read the response any more (the client went away).
    pub async fn closed(&self) {
        self.tx.closed().await
    }
}

/// Result of asking the client for input (sampling, elicitation, roots).
pub enum Asked {
    /// The client's answer.
    Answer(Value),
    /// Modern era: return this `input_required` reply and wait for the retry.
    Pending(ToolReply),
    /// The client cannot answer (no capability, no stream, timeout); reason attached.
    Failed(String),
}

/// Everything a tool body needs. Owned, so the body can run on its own task.
#[derive(Clone)]
pub struct ToolCx {
    /// The scenario being served (its id goes into Cakewalk's result object).
    pub scenario: &'static ScenarioInfo,
    /// The instance's state: parameters, counters, side effects.
    pub instance: Arc<InstanceState>,
    /// How long [`ToolCx::ask`] waits for a legacy client's answer (the server option).
    pub server_request_timeout: Duration,
    /// Legacy session.
    pub session: Option<Arc<Session>>,
    /// Era.
    pub era: Era,
    /// Protocol version in force for this request.
    pub protocol_version: String,
    /// Client capabilities (from `initialize` or the request `_meta`).
    pub client_capabilities: Value,
    /// Tool name.
    pub tool: String,
    /// Tool arguments (`{}` when absent).
    pub args: Value,
    /// JSON-RPC id of the call.
    pub request_id: Value,
    /// `_meta.progressToken`.
    pub progress_token: Option<Value>,
    /// Log level in force (`None`: no `notifications/message` may be sent in modern era).
    pub log_level: Option<String>,
    /// MRTR `inputResponses` of a retry.
    pub input_responses: Option<Value>,
    /// Verified MRTR state of a retry.
    pub request_state: Option<Value>,
    /// HTTP headers of the call.
    pub headers: HeaderMap,
    /// Where messages go.
    pub out: Emitter,
    /// 1-based execution count of this tool on the instance.
    pub invocation: u64,
    /// Journal notes.
    pub trace: Arc<Trace>,
}

const LEVELS: &[&str] = &[
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

impl ToolCx {
    /// Scenario parameters.
    pub fn p(&self) -> &Params {
        &self.instance.params
    }

    /// Cakewalk's result object `{scenarioId, invocation, …extra}`.
    pub fn scenario_result(&self, extra: Option<Map<String, Value>>) -> Value {
        let mut m = Map::new();
        m.insert("scenarioId".into(), json!(self.scenario.id));
        m.insert("invocation".into(), json!(self.invocation));
        if let Some(msg) = self.args.get("message").and_then(Value::as_str) {
            m.insert("message".into(), json!(msg));
        }
        if let Some(e) = extra {
            m.extend(e);
        }
        Value::Object(m)
    }

    /// Send a notification related to this request.
    pub fn notify(&self, method: &str, params: Value) {
        self.out
            .send(Out::Message(protocol::notification(method, params)));
    }

    /// `notifications/message`, if the level in force allows it (modern: only when the request
    /// asked for a log level; legacy: default everything, else at or above `logging/setLevel`).
    pub fn log(&self, level: &str, data: Value) {
        let allowed = match (&self.log_level, self.era) {
            (None, Era::Modern) => false,
            (None, Era::Legacy) => true,
            (Some(min), _) => {
                let rank = |l: &str| LEVELS.iter().position(|x| *x == l).unwrap_or(0);
                rank(level) >= rank(min)
            }
        };
        if allowed {
            self.notify(
                "notifications/message",
                json!({ "level": level, "logger": "kitchen", "data": data }),
            );
        }
    }

    /// `notifications/progress`, when the request carried a progress token.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(tok) = &self.progress_token {
            let mut p = json!({ "progressToken": tok, "progress": progress });
            if let Some(t) = total {
                p["total"] = json!(t);
            }
            if let Some(m) = message {
                p["message"] = json!(m);
            }
            self.notify("notifications/progress", p);
        }
    }

    /// Write raw bytes into the SSE body.
    pub fn raw(&self, b: impl Into<Bytes>) {
        self.out.send(Out::Raw(b.into()));
    }

    /// Whether the client declared a capability (e.g. `elicitation`, `sampling`).
    pub fn has_capability(&self, name: &str) -> bool {
        self.client_capabilities
            .get(name)
            .is_some_and(|v| !v.is_null())
    }

    /// Ask the client for input. Legacy: a server→client request on this response's SSE
    /// stream, answered by the client's POST. Modern: MRTR — returns [`Asked::Pending`]
    /// with an `input_required` reply the first time and the answer from `inputResponses`
    /// on the retry. `capability` is the client capability the request needs.
    pub async fn ask(
        &self,
        key: &str,
        method: &str,
        params: Value,
        capability: &str,
        state: Value,
    ) -> Asked {
        match self.era {
            Era::Modern => {
                if let Some(ans) = self.input_responses.as_ref().and_then(|r| r.get(key)) {
                    return Asked::Answer(ans.clone());
                }
                if !self.has_capability(capability) {
                    return Asked::Pending(ToolReply::RpcError {
                        status: 400,
                        code: protocol::MISSING_CAPABILITY,
                        message: format!("Missing required client capability: {capability}"),
                        data: Some(json!({ "requiredCapabilities": { capability: {} } })),
                    });
                }
                Asked::Pending(ToolReply::InputRequired {
                    input_requests: json!({ key: { "method": method, "params": params } }),
                    state,
                })
            }
            Era::Legacy => {
                let Some(session) = &self.session else {
                    return Asked::Failed("no session".into());
                };
                if !self.has_capability(capability) {
                    return Asked::Failed(format!("client does not support {capability}"));
                }
                if !self.out.streaming {
                    return Asked::Failed(
                        "server requests need an SSE response (responseMode json)".into(),
                    );
                }
                let id = session.next_request_id();
                let (tx, rx) = oneshot::channel();
                session
                    .pending
                    .lock()
                    .expect("pending lock")
                    .insert(id.clone(), tx);
                self.out.send(Out::Message(json!({
                    "jsonrpc": "2.0", "id": id, "method": method, "params": params
                })));
                let timeout = self.server_request_timeout;
                match tokio::time::timeout(timeout, rx).await {
                    Ok(Ok(resp)) => {
                        if let Some(r) = resp.get("result") {
                            Asked::Answer(r.clone())
                        } else {
                            let msg = resp["error"]["message"]
                                .as_str()
                                .unwrap_or("error")
                                .to_string();
                            Asked::Failed(format!("client answered with an error: {msg}"))
                        }
                    }
                    _ => {
                        session.pending.lock().expect("pending lock").remove(&id);
                        Asked::Failed(format!("no answer within {} ms", timeout.as_millis()))
                    }
                }
            }
        }
    }

    /// Sleep (a helper so scenario code reads plainly).
    pub async fn sleep(&self, d: Duration) {
        tokio::time::sleep(d).await;
    }
}
