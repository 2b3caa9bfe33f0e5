//! The client: era detection, sessions, tool listing, input rounds and the retry loop.
//!
//! Every exchange goes through the core classifier ([`crate::wire`]); after every attempt the
//! core retry policy ([`mcp_triage_core::retry::decide`]) says what happens next, and both end
//! up in the [`CallRecord`]. The client never decides on its own to resend a call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use mcp_triage_core::retry::{self, Delivery, RetryAction, RetryInput, ToolHints};
use mcp_triage_core::{
    AttemptRecord, CallRecord, Decision, JsonRpcInfo, Outcome, OutputSchema, ProtocolVersion,
    ServerInfo, Verdict,
};
use mcp_triage_wire::canonical::hex;
use serde_json::{json, Map, Value};
use tokio::sync::Mutex;

use crate::oauth::{AuthAttempts, BearerCell, OAuth};
use crate::options::{CallOptions, ClientOptions, VersionChoice};
use crate::sse_legacy::SseSession;
use crate::stdio::{Line, StdioConn, STDIO_EXIT_GRACE};
use crate::target::Target;
use crate::wire::{self, Incoming, Sent};

#[path = "task_driver.rs"]
mod task_driver;
pub use task_driver::Interrupt;

/// The `_meta` key of the idempotency key (`--idempotency-key`).
pub const IDEMPOTENCY_META: &str = "mcp-triage/idempotencyKey";
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
const META_INFO: &str = "io.modelcontextprotocol/clientInfo";
const LEGACY_DEFAULT: ProtocolVersion = ProtocolVersion::V2025_11_25;

/// A tool as `tools/list` described it.
#[derive(Debug, Clone)]
pub struct ToolInfo {
    /// The tool's name.
    pub name: String,
    /// Its description, sanitised to one line.
    pub description: Option<String>,
    /// `readOnlyHint` / `idempotentHint`.
    pub hints: ToolHints,
    /// The whole `annotations` object as sent.
    pub annotations: Option<Value>,
    /// Parameters promoted to headers: (argument name, header suffix after `Mcp-Param-`).
    pub header_params: Vec<(String, String)>,
    /// The compiled `outputSchema`, when present and valid.
    pub output_schema: Option<Arc<OutputSchema>>,
    /// The raw definition.
    pub definition: Value,
}

/// A failure to start talking to the server at all (spawn failed, HTTP client could not be
/// built). Protocol failures are verdicts in records, not errors.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The stdio server could not be spawned.
    #[error("could not start {command:?}: {why}")]
    Spawn {
        /// The command.
        command: String,
        /// The OS error.
        why: String,
    },
    /// The HTTP client could not be built.
    #[error("could not build the HTTP client: {0}")]
    Http(String),
    /// The OAuth settings cannot work for this target.
    #[error("OAuth: {0}")]
    Auth(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    Modern,
    Legacy,
}

#[derive(Default)]
struct State {
    era: Option<Era>,
    version: ProtocolVersion,
    session_id: Option<String>,
    server_info: Option<ServerInfo>,
    server_capabilities: Option<Value>,
    tools: Option<HashMap<String, ToolInfo>>,
    list_failure: Option<String>,
    scenario: Option<String>,
    listener: Option<AbortOnDrop>,
}

enum Transport {
    Http {
        http: reqwest::Client,
        url: String,
        headers: Vec<(String, String)>,
    },
    Stdio(Box<Mutex<StdioConn>>),
}

/// An MCP client over Streamable HTTP or stdio.
pub struct Client {
    target: Target,
    opts: ClientOptions,
    transport: Transport,
    state: Mutex<State>,
    next_id: AtomicI64,
    rng: std::sync::Mutex<u64>,
    /// The 2024-11-05 HTTP+SSE session, once the fallback probe found one.
    legacy_sse: std::sync::Mutex<Option<Arc<SseSession>>>,
    /// The bearer token in use: `--bearer`, or what OAuth obtained.
    bearer: BearerCell,
    /// OAuth for an HTTP server, when enabled.
    oauth: Option<Arc<OAuth>>,
    /// What happened during exchanges not tied to a call's attempts (initialize, tools/list):
    /// what OAuth did, and a stdio server's protocol violations on stdout, kept for the next
    /// call's record.
    pending_notes: std::sync::Mutex<Vec<(String, String)>>,
}

/// What a server answered a request carrying a session id it never issued
/// ([`Client::unknown_session_answer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnknownSessionAnswer {
    /// There is no server-assigned legacy HTTP session to test against (stdio, the stateless
    /// 2026-07-28 era, HTTP+SSE, or a server that assigns no session id).
    NoSession,
    /// The HTTP status of the answer.
    Status(u16),
    /// The request failed on the transport.
    Failed(String),
}

/// What a setup step (initialize, tools/list) ended in when it failed.
struct SetupFailure {
    kind: &'static str,
    sent: Sent,
    why: String,
}

impl Client {
    /// Prepares a client. HTTP does no I/O yet (the era is found on the first request); stdio
    /// spawns the server.
    pub async fn connect(target: Target, opts: ClientOptions) -> Result<Client, ConnectError> {
        let transport = match &target {
            Target::Http { url, headers } => {
                let http = reqwest::Client::builder()
                    .connect_timeout(opts.connect_timeout)
                    .no_proxy()
                    .redirect(reqwest::redirect::Policy::none())
                    .user_agent(format!("{}/{}", opts.client_name, opts.client_version))
                    .build()
                    .map_err(|e| ConnectError::Http(wire::error_chain(&e)))?;
                Transport::Http {
                    http,
                    url: url.clone(),
                    headers: headers.clone(),
                }
            }
            Target::Stdio { command, args, env } => {
                let conn = StdioConn::spawn(
                    command,
                    args,
                    env,
                    opts.limits.max_body_bytes,
                    opts.stderr_lines,
                )
                .map_err(|e| ConnectError::Spawn {
                    command: command.clone(),
                    why: e.to_string(),
                })?;
                Transport::Stdio(Box::new(Mutex::new(conn)))
            }
        };
        let bearer = BearerCell::new(opts.bearer.clone());
        let oauth = match (&opts.oauth, &target) {
            (Some(o), Target::Http { url, .. }) => Some(Arc::new(
                OAuth::new(
                    url,
                    o.clone(),
                    bearer.clone(),
                    opts.timeout,
                    opts.connect_timeout,
                    format!("{}/{}", opts.client_name, opts.client_version),
                )
                .map_err(ConnectError::Auth)?,
            )),
            (Some(_), _) => {
                return Err(ConnectError::Auth(
                    "OAuth applies to HTTP servers only".to_string(),
                ))
            }
            (None, _) => None,
        };
        let seed = opts.jitter_seed.unwrap_or_else(|| {
            let mut b = [0u8; 8];
            getrandom::fill(&mut b)
                .map(|_| u64::from_le_bytes(b))
                .unwrap_or(0x9E37_79B9_7F4A_7C15)
        });
        Ok(Client {
            target,
            opts,
            transport,
            state: Mutex::new(State::default()),
            next_id: AtomicI64::new(1),
            rng: std::sync::Mutex::new(seed | 1),
            legacy_sse: std::sync::Mutex::new(None),
            bearer,
            oauth,
            pending_notes: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// The options in use.
    pub fn options(&self) -> &ClientOptions {
        &self.opts
    }

    fn sse(&self) -> Option<Arc<SseSession>> {
        self.legacy_sse.lock().expect("sse lock").clone()
    }

    /// Opens the 2024-11-05 HTTP+SSE session (GET, `endpoint` event).
    async fn open_legacy_sse(&self) -> Result<(), String> {
        let Transport::Http { http, url, headers } = &self.transport else {
            return Err("HTTP+SSE needs an HTTP target".into());
        };
        let s = SseSession::open(
            http.clone(),
            url,
            headers.clone(),
            Arc::new(self.opts.clone()),
        )
        .await?;
        *self.legacy_sse.lock().expect("sse lock") = Some(Arc::new(s));
        Ok(())
    }

    fn transport_name(&self) -> &'static str {
        if self.sse().is_some() {
            return "http+sse";
        }
        match self.transport {
            Transport::Http { .. } => "streamable-http",
            Transport::Stdio(_) => "stdio",
        }
    }

    fn new_id(&self) -> Value {
        json!(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    fn random(&self) -> f64 {
        // xorshift64*: enough for jitter, and reproducible with a seed.
        let mut s = self.rng.lock().expect("rng lock");
        let mut x = *s;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        *s = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn capabilities(&self, version: ProtocolVersion) -> Value {
        let elicitation = if version.at_least(ProtocolVersion::V2025_11_25) {
            json!({ "form": {}, "url": {} })
        } else {
            json!({})
        };
        let mut caps = json!({ "elicitation": elicitation, "sampling": {}, "roots": { "listChanged": false } });
        if self.opts.use_tasks {
            if version.is_modern() {
                caps["extensions"] = json!({ "io.modelcontextprotocol/tasks": {} });
            } else {
                caps["tasks"] = json!({ "requests": { "tools": { "call": {} } } });
            }
        }
        caps
    }

    fn client_info(&self) -> Value {
        json!({ "name": self.opts.client_name, "version": self.opts.client_version })
    }

    /// The negotiated era and version, establishing a legacy session or probing when needed.
    /// `Ok(None)` era means "auto, not yet known" (HTTP tries modern on the first request).
    async fn ensure_era(&self) -> Result<(Option<Era>, ProtocolVersion), SetupFailure> {
        let mut st = self.state.lock().await;
        if let Some(era) = st.era {
            return Ok((Some(era), st.version));
        }
        match (self.opts.protocol, &self.transport) {
            (VersionChoice::Fixed(v), _) if v.is_modern() => {
                st.era = Some(Era::Modern);
                st.version = v;
                Ok((Some(Era::Modern), v))
            }
            (VersionChoice::Fixed(v), _) => {
                self.initialize_locked(&mut st, v).await?;
                Ok((st.era, st.version))
            }
            (VersionChoice::Auto, Transport::Http { .. }) => {
                Ok((None, ProtocolVersion::V2026_07_28))
            }
            (VersionChoice::Auto, Transport::Stdio(_)) => {
                match self.initialize_locked(&mut st, LEGACY_DEFAULT).await {
                    Ok(()) => Ok((st.era, st.version)),
                    Err(f) if f.sent.error().and_then(|e| e["code"].as_i64()) == Some(-32601) => {
                        st.era = Some(Era::Modern);
                        st.version = ProtocolVersion::V2026_07_28;
                        Ok((st.era, st.version))
                    }
                    Err(f) => Err(f),
                }
            }
        }
    }

    /// Legacy handshake: `initialize` (negotiating down once when the server names the versions
    /// it supports), then `notifications/initialized`.
    async fn initialize_locked(
        &self,
        st: &mut State,
        want: ProtocolVersion,
    ) -> Result<(), SetupFailure> {
        let mut version = want;
        if want == ProtocolVersion::V2024_11_05 && self.sse().is_none() {
            if let Err(why) = self.open_legacy_sse().await {
                let sent = Sent::failed(
                    Verdict::connection_error(why.clone()),
                    Delivery::NeverSent,
                    Instant::now(),
                );
                return Err(SetupFailure {
                    kind: "initialize",
                    sent,
                    why,
                });
            }
        }
        for _ in 0..3 {
            let id = self.new_id();
            let msg = json!({ "jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
                "protocolVersion": version.as_str(),
                "capabilities": self.capabilities(version),
                "clientInfo": self.client_info(),
            }});
            let deadline = tokio::time::Instant::now() + self.opts.timeout;
            let sent = self
                .exchange(&msg, &id, Era::Legacy, version, None, None, deadline, None)
                .await;
            self.keep_stdout_notes(&sent);
            if st.scenario.is_none() {
                st.scenario = sent.scenario.clone();
            }
            if let Some(result) = sent.result() {
                let got = result["protocolVersion"].as_str().unwrap_or("");
                let via_sse = self.sse().is_some();
                let Some(v) = ProtocolVersion::parse(got).filter(|v| {
                    (v.at_least(ProtocolVersion::V2025_03_26)
                        || via_sse && *v == ProtocolVersion::V2024_11_05)
                        && !v.is_modern()
                }) else {
                    let why = format!(
                        "the server answered initialize with protocolVersion {:?}, which this client does not speak",
                        mcp_triage_core::sanitize_line(got, 40)
                    );
                    return Err(SetupFailure {
                        kind: "initialize",
                        sent,
                        why,
                    });
                };
                st.era = Some(Era::Legacy);
                st.version = v;
                st.session_id = sent.session_id.clone();
                st.server_info = server_info(&result["serverInfo"]);
                st.server_capabilities = Some(result["capabilities"].clone());
                let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
                self.notify(&note, Era::Legacy, v, st.session_id.as_deref())
                    .await;
                st.listener = None;
                if let (Transport::Http { http, url, headers }, Some(session), true) =
                    (&self.transport, &st.session_id, self.opts.listen_standalone)
                {
                    // Legacy servers may send requests unrelated to a POST (an elicitation
                    // from a tool) on the standalone GET stream, which clients open after
                    // initialization: listen for the whole session.
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    let task = tokio::spawn(
                        Standalone {
                            http: http.clone(),
                            url: url.clone(),
                            headers: headers.clone(),
                            opts: Arc::new(self.opts.clone()),
                            bearer: self.bearer.clone(),
                            version: v,
                            session: session.clone(),
                        }
                        .run(tx),
                    );
                    let _ = tokio::time::timeout(Duration::from_secs(2), rx).await;
                    st.listener = Some(AbortOnDrop(task));
                }
                return Ok(());
            }
            // -32602 with data.supported: pick the newest we know and try once more.
            let newest = supported_versions(&sent)
                .into_iter()
                .filter(|v| v.at_least(ProtocolVersion::V2025_03_26) && !v.is_modern())
                .max();
            if let Some(v) = newest.filter(|v| *v != version) {
                version = v;
                continue;
            }
            // The spec's fallback probe: a 400, 404 or 405 to the initialize POST may mean an
            // HTTP+SSE (2024-11-05) server; try its GET stream once.
            if self.opts.protocol == VersionChoice::Auto
                && matches!(sent.status, Some(400 | 404 | 405))
                && self.sse().is_none()
                && matches!(self.transport, Transport::Http { .. })
                && self.open_legacy_sse().await.is_ok()
            {
                version = ProtocolVersion::V2024_11_05;
                continue;
            }
            let why = format!("initialize failed: {}", sent.verdict.to_text_line());
            return Err(SetupFailure {
                kind: "initialize",
                sent,
                why,
            });
        }
        unreachable!("the loop returns")
    }

    /// Sends a notification; failures are ignored (a notification has no answer to judge).
    async fn notify(&self, msg: &Value, era: Era, version: ProtocolVersion, session: Option<&str>) {
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

    #[allow(clippy::too_many_arguments)]
    fn http_request(
        &self,
        http: &reqwest::Client,
        url: &str,
        headers: &[(String, String)],
        msg: &Value,
        era: Era,
        version: ProtocolVersion,
        session: Option<&str>,
        extra: &[(String, String)],
    ) -> reqwest::RequestBuilder {
        let mut req = http
            .post(url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json");
        req = with_auth(req, headers, self.bearer.get().as_deref());
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

    /// One request/response exchange on the transport, classified.
    #[allow(clippy::too_many_arguments)]
    async fn exchange(
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
                self.stdio_exchange(&mut conn, msg, &ctx, deadline, started, era, version)
                    .await
            }
        }
    }

    /// One HTTP request/response, classified (no authorization handling).
    #[allow(clippy::too_many_arguments)]
    async fn http_once(
        &self,
        http: &reqwest::Client,
        url: &str,
        headers: &[(String, String)],
        msg: &Value,
        id: &Value,
        era: Era,
        version: ProtocolVersion,
        session: Option<&str>,
        ctx: &mcp_triage_core::CallContext,
        deadline: tokio::time::Instant,
        tool: Option<&ToolInfo>,
        started: Instant,
    ) -> Sent {
        let extra = tool
            .map(|t| param_headers(t, &msg["params"]["arguments"]))
            .unwrap_or_default();
        let req = self.http_request(http, url, headers, msg, era, version, session, &extra);
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
                let answers_ok = era == Era::Legacy;
                let mut sent = wire::read_response(resp, ctx.clone(), deadline, started, |inc| async move {
                            if !answers_ok {
                                return Err("the server sent a request on a 2026-07-28 stream, which that revision forbids".to_string());
                            }
                            self.answer_incoming(inc, era, version, session).await
                        })
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
            self.notify(&cancel, era, version, session).await;
            if let Some(d) = sent.verdict.detail.as_mut() {
                d.push_str("; notifications/cancelled sent");
            }
        }
        sent
    }

    #[allow(clippy::too_many_arguments)]
    async fn stdio_exchange(
        &self,
        conn: &mut StdioConn,
        msg: &Value,
        ctx: &mcp_triage_core::CallContext,
        deadline: tokio::time::Instant,
        started: Instant,
        era: Era,
        version: ProtocolVersion,
    ) -> Sent {
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
            let parsed: Option<Value> = serde_json::from_slice(&line).ok();
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
                continue;
            };
            if let Some(inc) = Incoming::request_in(&v) {
                match self.build_answer(&inc, era, version) {
                    Ok(reply) => {
                        let _ = conn.send(&reply).await;
                        answered += u32::from(is_input_round(&inc));
                    }
                    Err(why) => {
                        // Refuse as the spec defines and wait for the server's final answer,
                        // as over HTTP: the verdict is what the server made of the refusal.
                        let _ = conn.send(&refusal(&inc)).await;
                        notes.push(("INPUT_UNANSWERED".into(), refused_text(&inc, &why)));
                    }
                }
                continue;
            }
            if v.get("id") != Some(expected) {
                continue; // a notification or another id
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
    fn keep_stdout_notes(&self, sent: &Sent) {
        let violations = sent
            .notes
            .iter()
            .filter(|(code, _)| code.starts_with("STDOUT_"));
        if let Ok(mut pending) = self.pending_notes.lock() {
            pending.extend(violations.cloned());
        }
    }

    /// The JSON-RPC response to a server request, from the configured answers.
    fn build_answer(
        &self,
        inc: &Incoming,
        _era: Era,
        _version: ProtocolVersion,
    ) -> Result<Value, String> {
        build_answer(&self.opts, inc)
    }

    fn answer_for(&self, key: Option<&str>, method: &str, params: &Value) -> Option<Value> {
        answer_from(&self.opts, key, method, params)
    }

    /// Answers a legacy server request by POSTing the JSON-RPC response.
    async fn answer_incoming(
        &self,
        inc: Incoming,
        era: Era,
        version: ProtocolVersion,
        session: Option<&str>,
    ) -> Result<wire::Answer, String> {
        let (reply, answer) = match self.build_answer(&inc, era, version) {
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

    /// Lists the server's tools (all pages), establishing the era first.
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, String> {
        match self.fetch_tools().await {
            Ok(t) => Ok(t),
            Err(f) => Err(f.why),
        }
    }

    async fn fetch_tools(&self) -> Result<Vec<ToolInfo>, SetupFailure> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        for _page in 0..100 {
            let mut params = json!({});
            if let Some(c) = &cursor {
                params["cursor"] = json!(c);
            }
            let (sent, _) = self.request("tools/list", params).await?;
            self.keep_stdout_notes(&sent);
            let Some(result) = sent.result() else {
                let why = format!("tools/list failed: {}", describe_failure(&sent));
                return Err(SetupFailure {
                    kind: "list_tools",
                    sent,
                    why,
                });
            };
            for t in result["tools"].as_array().into_iter().flatten() {
                out.push(tool_info(t));
            }
            cursor = result["nextCursor"].as_str().map(str::to_string);
            if cursor.is_none() {
                break;
            }
        }
        let mut st = self.state.lock().await;
        st.tools = Some(out.iter().map(|t| (t.name.clone(), t.clone())).collect());
        st.list_failure = None;
        Ok(out)
    }

    /// One exchange of a request that is not a tool call (setup requests, task polls): a new
    /// id, the current session, one attempt deadline, no tool headers; `schema` is the tool's
    /// outputSchema when the answer can carry its result (a task poll), so it is judged once.
    /// Returns what came back, the id used (the caller's record names it) and the session it
    /// was sent in (a 404 in that session means it expired).
    async fn plain_exchange(
        &self,
        method: &str,
        params: &Value,
        era: Era,
        version: ProtocolVersion,
        schema: Option<Arc<OutputSchema>>,
    ) -> (Sent, Value, Option<String>) {
        let id = self.new_id();
        let session = self.state.lock().await.session_id.clone();
        let msg = self.build_message(method, params, &id, era, version, None);
        let deadline = tokio::time::Instant::now() + self.opts.timeout;
        let sent = self
            .exchange(
                &msg,
                &id,
                era,
                version,
                session.as_deref(),
                schema,
                deadline,
                None,
            )
            .await;
        (sent, id, session)
    }

    /// A plain request (not a tool call): era handling, modern fallback, session repair once.
    async fn request(&self, method: &str, params: Value) -> Result<(Sent, Era), SetupFailure> {
        let mut repaired = false;
        let mut version_retried = false;
        loop {
            let (era, version) = self.ensure_era().await?;
            let era_now = era.unwrap_or(Era::Modern);
            let (sent, _, session) = self
                .plain_exchange(method, &params, era_now, version, None)
                .await;
            if era.is_none() {
                match self.after_modern_probe(&sent).await {
                    Probe::Modern => {}
                    Probe::FallBack(v) => {
                        let mut st = self.state.lock().await;
                        if st.era.is_none() {
                            self.initialize_locked(&mut st, v).await?;
                        }
                        continue;
                    }
                }
            }
            if !version_retried && era_now == Era::Modern && modern_version_offered(&sent) {
                version_retried = true;
                continue;
            }
            if !repaired && era_now == Era::Legacy && sent.status == Some(404) && session.is_some()
            {
                repaired = true;
                self.reinitialize(session.as_deref()).await?;
                continue;
            }
            return Ok((sent, era_now));
        }
    }

    /// After a request sent in modern form to a server of unknown era: keep modern, or fall
    /// back to `initialize` (400 without a modern JSON-RPC error, or -32022 naming only legacy
    /// versions).
    async fn after_modern_probe(&self, sent: &Sent) -> Probe {
        let code = sent
            .error()
            .and_then(|e| e["code"].as_i64())
            .or(sent.verdict.code);
        let fall_back = match sent.status {
            Some(400) => match code {
                Some(-32020 | -32021) => false,
                Some(-32022) => {
                    let supported = supported_versions(sent);
                    if supported.iter().any(|v| v.is_modern()) {
                        false
                    } else {
                        let v = supported
                            .into_iter()
                            .filter(|v| v.at_least(ProtocolVersion::V2025_03_26))
                            .max()
                            .unwrap_or(LEGACY_DEFAULT);
                        return Probe::FallBack(v);
                    }
                }
                _ => true,
            },
            Some(404 | 405) => !matches!(code, Some(-32601)),
            _ => false,
        };
        if fall_back {
            return Probe::FallBack(LEGACY_DEFAULT);
        }
        let mut st = self.state.lock().await;
        // Only an answer (2xx) or a modern error proves the era; a 5xx or a dropped
        // connection says nothing, so the next request probes again.
        let proves_modern = sent.status.is_some_and(|s| (200..300).contains(&s))
            || matches!(code, Some(-32022..=-32020));
        if st.era.is_none() && proves_modern {
            st.era = Some(Era::Modern);
            st.version = ProtocolVersion::V2026_07_28;
        }
        if st.scenario.is_none() {
            st.scenario = sent.scenario.clone();
        }
        if let Some(info) = sent
            .result()
            .and_then(|r| r["_meta"].get("io.modelcontextprotocol/serverInfo"))
        {
            st.server_info = server_info(info);
        }
        Probe::Modern
    }

    /// Starts a new legacy session unless another task already did.
    async fn reinitialize(&self, failed_session: Option<&str>) -> Result<(), SetupFailure> {
        let mut st = self.state.lock().await;
        if st.session_id.as_deref() != failed_session {
            return Ok(());
        }
        let v = st.version;
        st.session_id = None;
        self.initialize_locked(&mut st, v).await
    }

    fn build_message(
        &self,
        method: &str,
        params: &Value,
        id: &Value,
        era: Era,
        version: ProtocolVersion,
        co: Option<&CallOptions>,
    ) -> Value {
        let mut params = match params {
            Value::Object(_) => params.clone(),
            _ => json!({}),
        };
        let mut meta = params
            .get("_meta")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if let Some(co) = co {
            if let Some(k) = &co.idempotency_key {
                meta.insert(IDEMPOTENCY_META.into(), json!(k));
            }
            if let Some(extra) = &co.meta {
                meta.extend(extra.clone());
            }
        }
        if era == Era::Modern {
            meta.insert(META_VERSION.into(), json!(version.as_str()));
            meta.insert(META_CAPS.into(), self.capabilities(version));
            meta.insert(META_INFO.into(), self.client_info());
        }
        if !meta.is_empty() {
            params["_meta"] = Value::Object(meta);
        }
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
    }

    /// Calls a tool: every attempt classified, every resend decided by the core policy, one
    /// record. Never fails: a call that could not even start is a record with its verdict.
    pub async fn call_tool(&self, name: &str, arguments: Value, co: CallOptions) -> CallRecord {
        let started = Instant::now();
        let mut rec = CallRecord::new(
            format!("{}@{}", self.opts.client_name, self.opts.client_version),
            self.transport_name(),
            "tools/call",
        );
        rec.record_id = Some(record_id());
        rec.tool = Some(name.to_string());
        rec.target = Some(self.target.describe());
        rec.retry_origin = co.retry_origin;
        rec.retry_of = co.retry_of.clone();
        let digest = mcp_triage_wire::canonical::ArgumentsDigest::of(&arguments);
        rec.arguments_hash = digest.hex;
        rec.arguments_size = digest.size;
        if self.opts.log_arguments {
            rec.arguments = Some(arguments.clone());
        }
        self.run_call(name, arguments, &co, &mut rec).await;
        rec.transport = self.transport_name().to_string();
        {
            let st = self.state.lock().await;
            rec.protocol_version = st.version.as_str().to_string();
            if st.era.is_none() {
                rec.protocol_version = "unknown".into();
            }
            rec.session_id = st.session_id.clone();
            rec.scenario = self
                .opts
                .scenario
                .clone()
                .or(rec.scenario.take())
                .or(st.scenario.clone());
            if rec.server_info.is_none() {
                rec.server_info = st.server_info.clone();
            }
            if let Some(f) = &st.list_failure {
                rec.warn("TOOLS_LIST_FAILED", f.clone());
            }
        }
        if let Transport::Stdio(conn) = &self.transport {
            if matches!(rec.layer, mcp_triage_core::Layer::Transport) {
                rec.stderr_tail = conn.lock().await.settled_stderr_tail().await;
            }
        }
        let pending = self
            .pending_notes
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default();
        for (code, detail) in pending {
            rec.warn(&code, detail);
        }
        rec.duration_ms = started.elapsed().as_millis() as u64;
        rec
    }

    async fn run_call(&self, name: &str, arguments: Value, co: &CallOptions, rec: &mut CallRecord) {
        if self.opts.list_tools_first && self.state.lock().await.tools.is_none() {
            if let Err(f) = self.fetch_tools().await {
                if f.kind == "initialize"
                    || f.sent.verdict.outcome == Outcome::ConnectionError
                        && f.sent.delivery == Delivery::NeverSent
                {
                    return finish_setup_failure(rec, f);
                }
                self.state.lock().await.list_failure = Some(f.why);
            }
        }
        let tool = self
            .state
            .lock()
            .await
            .tools
            .as_ref()
            .and_then(|t| t.get(name).cloned());
        let base = json!({ "name": name, "arguments": arguments });
        let mut params = base.clone();
        let timeout = co.timeout.unwrap_or(self.opts.timeout);
        let hints = tool.as_ref().map(|t| t.hints).unwrap_or_default();
        let mut policy = self.opts.retry.clone();
        policy.idempotency_key |= co.idempotency_key.is_some();
        let (mut resends, mut resumes, mut reinitialized, mut relisted, mut fell_back) =
            (0u32, 0u32, false, false, false);
        let mut resume: Option<(Value, String)> = None;
        let mut stream_verdict: Option<Verdict> = None;
        let mut version_retried = false;
        let mut last_call_attempt: usize = 0;
        loop {
            let (era, version) = match self.ensure_era().await {
                Ok(x) => x,
                Err(f) => return finish_setup_failure(rec, f),
            };
            let era_now = era.unwrap_or(Era::Modern);
            let session = self.state.lock().await.session_id.clone();
            let deadline = tokio::time::Instant::now() + timeout;
            let schema = tool.as_ref().and_then(|t| t.output_schema.clone());
            let (sent, id, kind) = if let Some((id, last_event_id)) = resume.take() {
                let s = self
                    .resume_stream(
                        &id,
                        &last_event_id,
                        version,
                        session.as_deref(),
                        schema,
                        deadline,
                    )
                    .await;
                (s, id, "resume")
            } else {
                let id = self.new_id();
                let mut send = params.clone();
                if self.opts.use_tasks && era_now == Era::Legacy {
                    // 2025-11-25 task augmentation is per request.
                    send["task"] = json!({ "ttl": 60_000 });
                }
                let msg = self.build_message("tools/call", &send, &id, era_now, version, Some(co));
                let call = self.exchange(
                    &msg,
                    &id,
                    era_now,
                    version,
                    session.as_deref(),
                    schema,
                    deadline,
                    tool.as_ref(),
                );
                let s = call.await;
                rec.post_count += 1;
                let kind = if rec.rounds > 0 {
                    "input_round"
                } else {
                    "call"
                };
                (s, id, kind)
            };
            if st_scenario_missing(rec) {
                rec.scenario = sent.scenario.clone();
            }
            let idx = rec.attempts.len();
            push_attempt(
                rec,
                &sent,
                &id,
                kind,
                (idx > 0).then_some(last_call_attempt),
            );
            if kind != "resume" {
                last_call_attempt = idx;
            }
            rec.rounds += sent.answered;
            for (code, detail) in &sent.notes {
                rec.warn(code, detail.clone());
            }
            for w in &sent.verdict.warnings {
                rec.warn(&w.code, w.detail.clone());
            }
            finish_from(rec, &sent, &id, self.opts.keep_result);
            if kind == "resume" && !has_answer(sent.verdict.outcome) {
                // Resuming found nothing more: the call still ended with the broken stream.
                if let Some(prev) = stream_verdict.as_ref() {
                    rec.warn(
                        "RESUME_FAILED",
                        format!("resuming the stream gave {}", sent.verdict.to_text_line()),
                    );
                    rec.outcome = prev.outcome;
                    rec.layer = prev.layer;
                    rec.message = prev.detail.clone();
                }
            }
            if sent.sse && sent.verdict.outcome == Outcome::StreamIncomplete {
                stream_verdict = Some(sent.verdict.clone());
            }
            if let Some(info) = sent
                .result()
                .and_then(|r| r["_meta"].get("io.modelcontextprotocol/serverInfo"))
            {
                rec.server_info = server_info(info);
            }

            // Era detection on the first modern attempt.
            if era.is_none() && !fell_back {
                if let Probe::FallBack(v) = self.after_modern_probe(&sent).await {
                    fell_back = true;
                    set_decision(rec, idx, "reinitialize", None, format!(
                        "HTTP {} without a 2026-07-28 JSON-RPC error: the server does not speak the modern revision; falling back to initialize ({})",
                        sent.status.unwrap_or(0), v.as_str()));
                    let mut st = self.state.lock().await;
                    if st.era.is_none() {
                        if let Err(f) = self.initialize_locked(&mut st, v).await {
                            drop(st);
                            return finish_setup_failure(rec, f);
                        }
                    }
                    continue;
                }
            }

            // Input rounds (MRTR): answer and resend with a new id, same params, exact state.
            if sent.verdict.outcome == Outcome::InputRequired && sent.result().is_some() {
                let result = sent.result().cloned().unwrap_or(Value::Null);
                if rec.rounds >= self.opts.max_rounds {
                    set_decision(
                        rec,
                        idx,
                        "give_up",
                        None,
                        format!(
                            "input still required after {} round(s) (max-rounds {})",
                            rec.rounds, self.opts.max_rounds
                        ),
                    );
                    return;
                }
                match self.input_responses(&result) {
                    Ok(responses) => {
                        params = base.clone();
                        if let Some(r) = responses {
                            params["inputResponses"] = r;
                        }
                        if let Some(state) = result.get("requestState") {
                            params["requestState"] = state.clone();
                        }
                        rec.rounds += 1;
                        set_decision(rec, idx, "answer_input", None, "the server asked for input; resending with a new id, the answers and the exact requestState".to_string());
                        continue;
                    }
                    Err(why) => {
                        rec.warn("INPUT_UNANSWERED", why.clone());
                        set_decision(rec, idx, "give_up", None, why);
                        return;
                    }
                }
            }
            if sent.verdict.outcome == Outcome::TaskCreated {
                // the driver sets this attempt's decision: when the first poll comes, and why
                let task_id = sent.verdict.task_id.clone().unwrap_or_default();
                let created = sent.result().cloned().unwrap_or(Value::Null);
                let budget = self
                    .opts
                    .task_timeout
                    .or(co.timeout)
                    .unwrap_or(self.opts.timeout);
                let mut run =
                    task_driver::TaskRun::new(task_id, era_now, version, &tool, budget, co);
                self.drive_task(&mut run, &created, rec).await;
                return;
            }

            // -32022 naming a revision we speak: the request was refused before it ran, so
            // sending it again with that revision is safe (once).
            if !version_retried && era_now == Era::Modern && modern_version_offered(&sent) {
                version_retried = true;
                set_decision(
                    rec,
                    idx,
                    "resend",
                    Some(0),
                    "-32022 UnsupportedProtocolVersion lists 2026-07-28: the request was refused before it ran; resending with that revision".to_string(),
                );
                continue;
            }
            let legacy_stream = era_now == Era::Legacy && sent.sse;
            // A resumption the server refused (the kitchen's `410 Stream gone`: the stream
            // ended without its response) leaves the call where the broken stream left it:
            // decide as for that stream, minus the resumption (resend if safe, else give up),
            // not as for an HTTP error of its own.
            let refused_resume =
                (kind == "resume" && !sent.sse && !has_answer(sent.verdict.outcome))
                    .then(|| stream_verdict.clone())
                    .flatten()
                    .map(|mut v| {
                        if let Some(s) = v.stream.as_mut() {
                            s.last_event_id = None;
                        }
                        v
                    });
            let input = RetryInput {
                verdict: refused_resume.as_ref().unwrap_or(&sent.verdict),
                tool: name,
                hints,
                delivery: sent.delivery,
                resends,
                resumes,
                local_server: self.target.is_local(),
                legacy_session: era_now == Era::Legacy && session.is_some(),
                legacy_stream,
                reinitialized,
                relisted,
            };
            let d = retry::decide(&input, &policy, &mut || self.random());
            rec.attempts[idx].decision = Some(d.to_record());
            match d.action {
                RetryAction::Done => return,
                RetryAction::GiveUp => {
                    if matches!(sent.verdict.status, Some(401 | 403)) {
                        self.report_auth(&sent.verdict, rec).await;
                    }
                    return;
                }
                RetryAction::Resend { delay_ms } => {
                    resends += 1;
                    rec.retry_origin = if rec.retry_origin == mcp_triage_core::RetryOrigin::None {
                        mcp_triage_core::RetryOrigin::Sdk
                    } else {
                        rec.retry_origin
                    };
                    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                }
                RetryAction::Resume {
                    last_event_id,
                    delay_ms,
                } => {
                    resumes += 1;
                    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                    resume = Some((id.clone(), last_event_id));
                }
                RetryAction::Reinitialize => {
                    reinitialized = true;
                    if let Err(f) = self.reinitialize(session.as_deref()).await {
                        return finish_setup_failure(rec, f);
                    }
                }
                RetryAction::RelistTools => {
                    relisted = true;
                    if let Err(f) = self.fetch_tools().await {
                        self.state.lock().await.list_failure = Some(f.why);
                    }
                }
            }
        }
    }

    /// After a 401/403: the challenge, and the protected-resource metadata it names (fetched
    /// only from the target's own origin, bounded), as an `AUTH_REQUIRED` warning.
    async fn report_auth(&self, v: &Verdict, rec: &mut CallRecord) {
        let Some(c) = &v.auth_challenge else {
            rec.warn(
                "AUTH_REQUIRED",
                format!(
                    "HTTP {} without a WWW-Authenticate challenge",
                    v.status.unwrap_or(0)
                ),
            );
            return;
        };
        let mut detail = format!("{} challenge", c.scheme);
        if let Some(e) = &c.error {
            detail.push_str(&format!(", error {e}"));
        }
        if let Some(s) = &c.scope {
            detail.push_str(&format!(", scope {s:?}"));
        }
        if let (Some(meta), Transport::Http { http, url, .. }) =
            (&c.resource_metadata, &self.transport)
        {
            detail.push_str(&format!(", resource metadata {meta}"));
            if origin(meta).is_some() && origin(meta) == origin(url) {
                let fetched = tokio::time::timeout(self.opts.timeout, async {
                    let resp = http
                        .get(meta)
                        .header("Accept", "application/json")
                        .send()
                        .await
                        .ok()?;
                    if !resp.status().is_success() {
                        return None;
                    }
                    let mut resp = resp;
                    let mut body = Vec::new();
                    while let Ok(Some(chunk)) = resp.chunk().await {
                        body.extend_from_slice(&chunk);
                        if body.len() > 64 * 1024 {
                            return None;
                        }
                    }
                    serde_json::from_slice::<Value>(&body).ok()
                })
                .await
                .ok()
                .flatten();
                match fetched {
                    Some(doc) => {
                        let servers = sanitized_strings(&doc["authorization_servers"], 200);
                        let scopes = sanitized_strings(&doc["scopes_supported"], 100);
                        detail.push_str(&format!(
                            ": authorization servers [{}], scopes [{}]",
                            servers.join(", "),
                            scopes.join(", ")
                        ));
                    }
                    None => detail.push_str(" (could not be read)"),
                }
            } else {
                detail.push_str(" (on another origin: not fetched)");
            }
        }
        rec.warn(
            "AUTH_REQUIRED",
            mcp_triage_core::sanitize_line(&detail, 600),
        );
    }

    /// GET the legacy stream again with `Last-Event-ID`; its events answer the original id.
    async fn resume_stream(
        &self,
        id: &Value,
        last_event_id: &str,
        version: ProtocolVersion,
        session: Option<&str>,
        schema: Option<Arc<OutputSchema>>,
        deadline: tokio::time::Instant,
    ) -> Sent {
        let started = Instant::now();
        let Transport::Http { http, url, headers } = &self.transport else {
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
        req = with_auth(req, headers, self.bearer.get().as_deref());
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
        );
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
        wire::read_response(resp, ctx, deadline, started, |inc| async move {
            self.answer_incoming(inc, Era::Legacy, version, session)
                .await
        })
        .await
    }

    /// Builds `inputResponses` for an `input_required` result; `Ok(None)` when the server sent
    /// only `requestState` (resend at once).
    fn input_responses(&self, result: &Value) -> Result<Option<Value>, String> {
        let Some(reqs) = result.get("inputRequests").and_then(Value::as_object) else {
            return Ok(None);
        };
        let mut out = Map::new();
        let mut missing = Vec::new();
        for (key, req) in reqs {
            let method = req["method"].as_str().unwrap_or("");
            match self.answer_for(Some(key), method, &req["params"]) {
                Some(a) => {
                    out.insert(key.clone(), a);
                }
                None => missing.push(format!("{key} ({method})")),
            }
        }
        if !missing.is_empty() {
            return Err(format!(
                "input required and not answered: {} (use --answer KEY=JSON or --input FILE)",
                missing.join(", ")
            ));
        }
        Ok(Some(Value::Object(out)))
    }

    /// 2025-11-25: the outcome of a terminal task, from `tasks/result` (the call's own answer,
    /// judged as the `tools/call` answer it stands for).
    async fn task_result(
        &self,
        task_id: &str,
        era: Era,
        version: ProtocolVersion,
        session: Option<&str>,
        rec: &mut CallRecord,
        tool: &Option<ToolInfo>,
    ) {
        let rid = self.new_id();
        let msg = self.build_message(
            "tasks/result",
            &json!({ "taskId": task_id }),
            &rid,
            era,
            version,
            None,
        );
        let deadline = tokio::time::Instant::now() + self.opts.timeout;
        let schema = tool.as_ref().and_then(|t| t.output_schema.clone());
        let s = self
            .exchange(&msg, &rid, era, version, session, schema, deadline, None)
            .await;
        push_attempt(rec, &s, &rid, "task_result", None);
        finish_from(rec, &s, &rid, self.opts.keep_result);
    }

    /// The server's self-description, once known.
    pub async fn server_info(&self) -> Option<ServerInfo> {
        self.state.lock().await.server_info.clone()
    }

    /// The last lines a stdio server wrote to stderr (sanitised, bounded); empty over HTTP.
    ///
    /// Why public: a dying stdio server usually says why on stderr, and every command that
    /// reports such a failure (`list`, `probe`, not only `call`'s record) should show it.
    pub async fn server_stderr_tail(&self) -> Vec<String> {
        match &self.transport {
            Transport::Stdio(conn) => conn.lock().await.settled_stderr_tail().await,
            _ => Vec::new(),
        }
    }

    /// The server's capabilities (legacy `initialize` result), once known.
    pub async fn server_capabilities(&self) -> Option<Value> {
        self.state.lock().await.server_capabilities.clone()
    }

    /// The negotiated revision (`unknown` before the first exchange).
    pub async fn protocol_version(&self) -> String {
        let st = self.state.lock().await;
        if st.era.is_some() {
            st.version.as_str().to_string()
        } else {
            "unknown".into()
        }
    }

    /// Sends a `ping` carrying a made-up `Mcp-Session-Id` and reports the HTTP status. The
    /// spec (2025-03-26 … 2025-11-25) says a server MUST answer 404 to a session id it does not
    /// know, and a client MUST re-initialize on that 404; a server answering 400 instead leaves
    /// clients stuck after a restart, which is why `probe` asks. Only meaningful in a legacy
    /// Streamable HTTP session the server assigned (it must use sessions at all): otherwise
    /// [`UnknownSessionAnswer::NoSession`]. Nothing runs on the server: `ping` has no effect.
    pub async fn unknown_session_answer(&self) -> UnknownSessionAnswer {
        let Transport::Http { http, url, headers } = &self.transport else {
            return UnknownSessionAnswer::NoSession;
        };
        let (era, version, real) = {
            let st = self.state.lock().await;
            (st.era, st.version, st.session_id.clone())
        };
        let Some(real) = real.filter(|_| era == Some(Era::Legacy) && self.sse().is_none()) else {
            return UnknownSessionAnswer::NoSession;
        };
        let mut made_up = format!("mcp-triage-unknown-{:016x}", self.random().to_bits());
        if made_up == real {
            made_up.push('0');
        }
        let msg = json!({ "jsonrpc": "2.0", "id": self.new_id(), "method": "ping" });
        let req = self.http_request(
            http,
            url,
            headers,
            &msg,
            Era::Legacy,
            version,
            Some(&made_up),
            &[],
        );
        match tokio::time::timeout(self.opts.timeout, req.send()).await {
            Ok(Ok(resp)) => UnknownSessionAnswer::Status(resp.status().as_u16()),
            Ok(Err(e)) => {
                UnknownSessionAnswer::Failed(mcp_triage_core::sanitize_line(&e.to_string(), 200))
            }
            Err(_) => UnknownSessionAnswer::Failed(format!(
                "no answer within {} ms",
                self.opts.timeout.as_millis()
            )),
        }
    }

    /// Ends a legacy session (DELETE) and stops a stdio server the way the MCP stdio transport
    /// says (stdin closed, then SIGTERM, then SIGKILL, each wait [`STDIO_EXIT_GRACE`]).
    pub async fn close(&self) {
        let mut st = self.state.lock().await;
        st.listener = None;
        match &self.transport {
            Transport::Http { http, url, headers } => {
                if let Some(s) = &st.session_id {
                    let mut req = http.delete(url).header("Mcp-Session-Id", s);
                    req = with_auth(req, headers, self.bearer.get().as_deref());
                    let _ = tokio::time::timeout(Duration::from_secs(2), req.send()).await;
                }
            }
            Transport::Stdio(conn) => {
                let mut c = conn.lock().await;
                c.shutdown(STDIO_EXIT_GRACE).await;
            }
        }
    }
}

enum Probe {
    Modern,
    FallBack(ProtocolVersion),
}

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
fn refused_text(inc: &Incoming, why: &str) -> String {
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

/// The JSON-RPC response to a server request, from the configured answers.
fn build_answer(opts: &ClientOptions, inc: &Incoming) -> Result<Value, String> {
    let Incoming::Request { id, method, params } = inc;
    let result = match method.as_str() {
        "ping" => Some(json!({})),
        m => answer_from(opts, None, m, params),
    };
    match result {
        Some(r) => Ok(json!({ "jsonrpc": "2.0", "id": id, "result": r })),
        None => Err(format!(
            "the server asked {method} and no answer was given (--answer {method}=JSON or --input FILE)"
        )),
    }
}

/// The configured answer for an input request, or the schema defaults, or the roots.
fn answer_from(
    opts: &ClientOptions,
    key: Option<&str>,
    method: &str,
    params: &Value,
) -> Option<Value> {
    if let Some(a) = opts.answers.find(key, method) {
        return Some(a.clone());
    }
    if method == "elicitation/create" && opts.accept_defaults {
        return defaults_answer(params);
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

/// Where and how a legacy session's standalone GET stream is read and answered.
struct Standalone {
    http: reqwest::Client,
    url: String,
    headers: Vec<(String, String)>,
    opts: Arc<ClientOptions>,
    bearer: BearerCell,
    version: ProtocolVersion,
    session: String,
}

impl Standalone {
    fn request(&self, b: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let mut b = with_auth(b, &self.headers, self.bearer.get().as_deref());
        if self.version.at_least(ProtocolVersion::V2025_06_18) {
            b = b.header("MCP-Protocol-Version", self.version.as_str());
        }
        b.header("Mcp-Session-Id", self.session.as_str())
    }

    /// Opens the GET stream (signalling `ready` once its head arrived or it failed), answers
    /// every server request on it by POST, until the stream ends or the task is aborted.
    async fn run(self, ready: tokio::sync::oneshot::Sender<()>) {
        let req = self.request(
            self.http
                .get(&self.url)
                .header("Accept", "text/event-stream"),
        );
        let resp = req.send().await;
        let _ = ready.send(());
        let Ok(mut resp) = resp else { return };
        if !is_event_stream(&resp) {
            return;
        }
        let mut capture = wire::Capture::new(Value::Null, true, false, &self.opts.limits);
        while let Ok(Some(chunk)) = resp.chunk().await {
            capture.feed(&chunk);
            for inc in std::mem::take(&mut capture.incoming) {
                let reply = answer_or_error(&self.opts, &inc);
                let post = self
                    .request(self.http.post(&self.url))
                    .header("Accept", "application/json, text/event-stream")
                    .header("Content-Type", "application/json")
                    .body(serde_json::to_vec(&reply).unwrap_or_default());
                let _ = tokio::time::timeout(self.opts.timeout, async {
                    if let Ok(r) = post.send().await {
                        let _ = r.bytes().await;
                    }
                })
                .await;
            }
        }
    }
}

/// Aborts the task when dropped (a replaced or closed session stops listening).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// An ElicitResult accepting a form with every field's `default` (SEP-1034); `None` when the
/// request is not a form or a required field has no default.
fn defaults_answer(params: &Value) -> Option<Value> {
    if params
        .get("mode")
        .and_then(Value::as_str)
        .is_some_and(|m| m != "form")
    {
        return None;
    }
    let schema = &params["requestedSchema"];
    let mut content = Map::new();
    for (name, prop) in schema["properties"].as_object()? {
        if let Some(d) = prop.get("default") {
            content.insert(name.clone(), d.clone());
        }
    }
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    if required
        .iter()
        .filter_map(Value::as_str)
        .any(|r| !content.contains_key(r))
    {
        return None;
    }
    Some(json!({ "action": "accept", "content": content }))
}

/// `scheme://host:port` of a URL, lower-cased (for same-origin checks).
fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    Some(format!(
        "{}://{}",
        scheme.to_ascii_lowercase(),
        authority.to_ascii_lowercase()
    ))
}

/// A 400 with -32022 whose `supported` list names the modern revision this client speaks.
fn modern_version_offered(sent: &Sent) -> bool {
    let code = sent
        .error()
        .and_then(|e| e["code"].as_i64())
        .or(sent.verdict.code);
    code == Some(-32022)
        && sent
            .error()
            .and_then(|e| e["data"]["supported"].as_array())
            .is_some_and(|a| {
                a.iter()
                    .any(|v| v.as_str() == Some(ProtocolVersion::V2026_07_28.as_str()))
            })
}

/// Outcomes that carry the server's answer to the request.
fn has_answer(o: Outcome) -> bool {
    matches!(
        o,
        Outcome::ToolSuccess
            | Outcome::ToolError
            | Outcome::JsonrpcError
            | Outcome::InputRequired
            | Outcome::TaskCreated
            | Outcome::InvalidToolResult
            | Outcome::StreamIncomplete
    )
}

fn st_scenario_missing(rec: &CallRecord) -> bool {
    rec.scenario.is_none()
}

fn set_decision(
    rec: &mut CallRecord,
    idx: usize,
    action: &str,
    delay_ms: Option<u64>,
    reason: String,
) {
    rec.attempts[idx].decision = Some(Decision {
        action: action.to_string(),
        delay_ms,
        reason,
    });
}

/// Records one exchange as an attempt; `retry_of` is the attempt it repeats or continues.
fn push_attempt(
    rec: &mut CallRecord,
    sent: &Sent,
    id: &Value,
    kind: &str,
    retry_of: Option<usize>,
) {
    if let Some(s) = sent.status {
        rec.http_statuses.push(s);
    }
    rec.attempts.push(AttemptRecord {
        id: id.clone(),
        kind: kind.to_string(),
        retry_of,
        status: sent.status,
        content_type: sent.content_type.clone(),
        stream: sent.stream().cloned(),
        verdict: sent.verdict.clone(),
        duration_ms: sent.duration_ms(),
        decision: None,
    });
}

/// Takes the final fields of the record from an attempt.
fn finish_from(rec: &mut CallRecord, sent: &Sent, id: &Value, keep_result: bool) {
    let v = &sent.verdict;
    rec.outcome = v.outcome;
    rec.layer = v.layer;
    rec.jsonrpc = JsonRpcInfo {
        id: id.clone(),
        error_code: v
            .code
            .or_else(|| sent.error().and_then(|e| e["code"].as_i64())),
    };
    rec.result_type = v.result_type.clone();
    rec.message = v
        .message
        .clone()
        .or_else(|| sent.result().and_then(first_text))
        .or_else(|| v.detail.clone())
        .map(|m| mcp_triage_core::sanitize_line(&m, mcp_triage_core::MAX_MESSAGE_CHARS));
    rec.result = if keep_result {
        sent.result().cloned()
    } else {
        None
    };
}

fn finish_setup_failure(rec: &mut CallRecord, f: SetupFailure) {
    let id = f
        .sent
        .response
        .as_ref()
        .and_then(|r| r.get("id").cloned())
        .unwrap_or(Value::Null);
    push_attempt(rec, &f.sent, &id, f.kind, None);
    finish_from(rec, &f.sent, &id, false);
    if f.sent.verdict.is_success() || matches!(f.sent.verdict.outcome, Outcome::InvalidToolResult) {
        // initialize answered, but unusable (e.g. an unknown version): a protocol failure.
        rec.outcome = Outcome::InvalidEnvelope;
        rec.layer = rec.outcome.layer();
    }
    rec.message = Some(mcp_triage_core::sanitize_line(
        &f.why,
        mcp_triage_core::MAX_MESSAGE_CHARS,
    ));
    let last = rec.attempts.len() - 1;
    set_decision(rec, last, "give_up", None, f.why);
}

fn describe_failure(sent: &Sent) -> String {
    if let Some(e) = sent.error() {
        return format!(
            "JSON-RPC error {} {}",
            e["code"],
            mcp_triage_core::sanitize_line(e["message"].as_str().unwrap_or(""), 200)
        );
    }
    sent.verdict.to_text_line()
}

fn first_text(result: &Value) -> Option<String> {
    result["content"]
        .as_array()?
        .iter()
        .find(|b| b["type"] == "text")
        .and_then(|b| b["text"].as_str())
        .map(str::to_string)
}

fn server_info(v: &Value) -> Option<ServerInfo> {
    let name = v.get("name")?.as_str()?;
    Some(ServerInfo {
        name: mcp_triage_core::sanitize_line(name, 100),
        version: v
            .get("version")
            .and_then(Value::as_str)
            .map(|s| mcp_triage_core::sanitize_line(s, 50)),
    })
}

pub(crate) fn tool_info(t: &Value) -> ToolInfo {
    let ann = t.get("annotations").filter(|a| a.is_object()).cloned();
    let hint = |k: &str| ann.as_ref().and_then(|a| a.get(k)).and_then(Value::as_bool);
    let mut header_params = Vec::new();
    if let Some(props) = t["inputSchema"]["properties"].as_object() {
        for (arg, schema) in props {
            if let Some(h) = schema.get("x-mcp-header").and_then(Value::as_str) {
                header_params.push((arg.clone(), h.to_string()));
            }
        }
    }
    let output_schema = t
        .get("outputSchema")
        .and_then(|s| OutputSchema::compile(s).ok())
        .map(Arc::new);
    ToolInfo {
        name: t["name"].as_str().unwrap_or("").to_string(),
        description: t["description"]
            .as_str()
            .map(|d| mcp_triage_core::sanitize_line(d, 200)),
        hints: ToolHints {
            read_only: hint("readOnlyHint"),
            idempotent: hint("idempotentHint"),
        },
        annotations: ann,
        header_params,
        output_schema,
        definition: t.clone(),
    }
}

/// A 2xx `text/event-stream` response: what a GET stream must be before the client reads it.
pub(crate) fn is_event_stream(resp: &reqwest::Response) -> bool {
    let sse = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"));
    resp.status().is_success() && sse
}

/// The strings of a JSON array from the server, each sanitised to one line of at most `max`
/// characters (they end up in messages a person reads); anything else gives none.
fn sanitized_strings(v: &Value, max: usize) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| mcp_triage_core::sanitize_line(s, max))
        .collect()
}

/// The versions a protocol-version error lists in `error.data.supported` (legacy `initialize`
/// -32602 and modern -32022 both use it), the ones this client knows; empty when absent.
fn supported_versions(sent: &Sent) -> Vec<ProtocolVersion> {
    sent.error()
        .and_then(|e| e["data"]["supported"].as_array())
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(ProtocolVersion::parse)
        .collect()
}

/// The user's extra headers (`--header`) and bearer token on a request: every HTTP request
/// the client sends carries both (POST, resumption GET, standalone GET, DELETE, and the legacy
/// HTTP+SSE transport's GET and POSTs), so a server behind auth sees them on each.
pub(crate) fn with_auth(
    mut req: reqwest::RequestBuilder,
    headers: &[(String, String)],
    bearer: Option<&str>,
) -> reqwest::RequestBuilder {
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    match bearer {
        Some(t) => req.bearer_auth(t),
        None => req,
    }
}

/// `Mcp-Param-*` headers for the tool's `x-mcp-header` parameters (primitives only; null,
/// absent and non-integer numbers are omitted).
fn param_headers(tool: &ToolInfo, args: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (arg, header) in &tool.header_params {
        let value = match args.get(arg) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
            _ => continue,
        };
        out.push((format!("Mcp-Param-{header}"), header_value(&value)));
    }
    out
}

/// A header value as sent: plain when it is visible ASCII (inner spaces allowed), else the
/// `=?base64?…?=` form.
pub fn header_value(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !s.starts_with(' ')
        && !s.ends_with(' ')
        && !s.starts_with("=?base64?");
    if plain {
        s.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
        )
    }
}

/// A random record id (16 hex digits), independent of the jitter seed.
fn record_id() -> String {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        b = t.to_le_bytes();
    }
    hex(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(defaults_answer(&q).is_none());
        assert!(defaults_answer(&json!({ "mode": "url", "url": "https://x" })).is_none());
    }

    #[test]
    fn header_values_encode_non_ascii() {
        assert_eq!(header_value("get_weather"), "get_weather");
        assert_eq!(header_value("a b"), "a b");
        assert_eq!(header_value("café"), "=?base64?Y2Fmw6k=?=");
        assert_eq!(header_value(" x"), "=?base64?IHg=?=");
        assert_eq!(header_value("line\nbreak"), "=?base64?bGluZQpicmVhaw==?=");
    }

    #[test]
    fn tool_info_reads_hints_and_header_params() {
        let t = tool_info(
            &json!({ "name": "t", "inputSchema": { "type": "object", "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" }, "n": { "type": "number", "x-mcp-header": "N" } } },
            "annotations": { "readOnlyHint": true } }),
        );
        assert_eq!(t.hints.read_only, Some(true));
        assert_eq!(t.hints.idempotent, None);
        let h = param_headers(&t, &json!({ "region": "eu-west", "n": 1.5 }));
        assert_eq!(
            h,
            vec![("Mcp-Param-Region".to_string(), "eu-west".to_string())]
        );
        assert!(param_headers(&t, &json!({ "region": null })).is_empty());
    }
}
