//! The client ([`Client`]): its transport, its state (era, version, session, tools), and what
//! the caller can ask of it besides calls (server info, capabilities, the unknown-session probe,
//! closing). The rest of the client's methods live with their part of the flow:
//!
//! - [`crate::call`]: a tool call, from the first attempt to the record; the retry loop.
//! - [`crate::setup`]: the era and the legacy session (`initialize`, the fallbacks), `tools/list`.
//! - [`crate::exchange`]: one classified exchange on either transport, with authorization;
//!   [`crate::http_exchange`] and [`crate::stdio_exchange`] for each transport.
//! - [`crate::task_driver`]: a call that became a task, polled to its end.
//!
//! Every exchange goes through the core classifier ([`crate::wire`]); after every attempt the
//! core retry policy ([`mcp_triage_core::retry::decide`]) says what happens next, and both end
//! up in the [`CallRecord`](mcp_triage_core::CallRecord). The client never decides on its own to
//! resend a call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp_triage_core::{ProtocolVersion, ServerInfo};
use serde_json::{json, Value};
use tokio::sync::Mutex;

use crate::headers::with_token;
use crate::oauth::{BearerCell, OAuth};
use crate::options::{CallOptions, ClientOptions};
use crate::sse_legacy::{SseOpenError, SseSession};
use crate::standalone::AbortOnDrop;
use crate::stdio::{StdioConn, STDIO_EXIT_GRACE};
use crate::target::Target;
use crate::tools::ToolInfo;
use crate::wire::{self};

/// The `_meta` key of the idempotency key (`--idempotency-key`).
pub use mcp_triage_wire::meta::IDEMPOTENCY_KEY as IDEMPOTENCY_META;
use mcp_triage_wire::meta::{
    CLIENT_CAPABILITIES as META_CAPS, CLIENT_INFO as META_INFO, PROTOCOL_VERSION as META_VERSION,
};

/// A failure to start talking to the server at all (spawn failed, HTTP client could not be
/// built). Protocol failures are verdicts in records, not errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The stdio server could not be spawned.
    #[error("could not start {command:?}: {source}")]
    Spawn {
        /// The command.
        command: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The HTTP client could not be built.
    #[error("could not build the HTTP client: {}", wire::error_chain(.0))]
    Http(#[source] reqwest::Error),
    /// The OAuth side could not be set up.
    #[error("OAuth: {0}")]
    Auth(#[source] crate::oauth::OAuthError),
    /// OAuth was asked for a stdio target.
    #[error("OAuth: OAuth applies to HTTP servers only")]
    AuthNeedsHttp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    Modern,
    Legacy,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) era: Option<Era>,
    pub(crate) version: ProtocolVersion,
    pub(crate) session_id: Option<String>,
    pub(crate) server_info: Option<ServerInfo>,
    pub(crate) server_capabilities: Option<Value>,
    pub(crate) tools: Option<HashMap<String, ToolInfo>>,
    pub(crate) list_failure: Option<String>,
    pub(crate) scenario: Option<String>,
    pub(crate) listener: Option<AbortOnDrop>,
}

pub(crate) enum Transport {
    Http(HttpEndpoint),
    Stdio(Box<Mutex<StdioConn>>),
}

/// What a message is sent under: the era and revision negotiated with the server, and the
/// legacy session it belongs to. They decide the HTTP headers (`MCP-Protocol-Version`,
/// `Mcp-Method`/`Mcp-Name`, `Mcp-Session-Id`); the `_meta` is already in the message.
#[derive(Clone, Copy)]
pub(crate) struct Negotiated<'a> {
    pub(crate) era: Era,
    pub(crate) version: ProtocolVersion,
    pub(crate) session: Option<&'a str>,
}

/// Where the client's HTTP requests go: the HTTP client, the target's URL and the user's extra
/// headers (`--header`).
pub(crate) struct HttpEndpoint {
    pub(crate) http: reqwest::Client,
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
}

/// An MCP client over Streamable HTTP or stdio.
pub struct Client {
    pub(crate) target: Target,
    pub(crate) opts: ClientOptions,
    pub(crate) transport: Transport,
    pub(crate) state: Mutex<State>,
    pub(crate) next_id: AtomicI64,
    pub(crate) rng: std::sync::Mutex<u64>,
    /// The 2024-11-05 HTTP+SSE session, once the fallback probe found one.
    pub(crate) legacy_sse: std::sync::Mutex<Option<Arc<SseSession>>>,
    /// The bearer token in use: `--bearer`, or what OAuth obtained.
    pub(crate) bearer: BearerCell,
    /// OAuth for an HTTP server, when enabled.
    pub(crate) oauth: Option<Arc<OAuth>>,
    /// What happened during exchanges not tied to a call's attempts (initialize, tools/list):
    /// what OAuth did, and a stdio server's protocol violations on stdout, kept for the next
    /// call's record.
    pub(crate) pending_notes: std::sync::Mutex<Vec<(String, String)>>,
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
                    .map_err(ConnectError::Http)?;
                Transport::Http(HttpEndpoint {
                    http,
                    url: url.clone(),
                    headers: headers.clone(),
                })
            }
            Target::Stdio { command, args, env } => {
                let conn = StdioConn::spawn(
                    command,
                    args,
                    env,
                    opts.limits.max_body_bytes,
                    opts.stderr_lines,
                )
                .map_err(|source| ConnectError::Spawn {
                    command: command.clone(),
                    source,
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
            (Some(_), _) => return Err(ConnectError::AuthNeedsHttp),
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

    pub(crate) fn sse(&self) -> Option<Arc<SseSession>> {
        self.legacy_sse.lock().expect("sse lock").clone()
    }

    /// Opens the 2024-11-05 HTTP+SSE session (GET, `endpoint` event).
    pub(crate) async fn open_legacy_sse(&self) -> Result<(), SseOpenError> {
        let Transport::Http(HttpEndpoint { http, url, headers }) = &self.transport else {
            return Err(SseOpenError::NotHttp);
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

    pub(crate) fn transport_name(&self) -> &'static str {
        if self.sse().is_some() {
            return "http+sse";
        }
        match self.transport {
            Transport::Http(_) => "streamable-http",
            Transport::Stdio(_) => "stdio",
        }
    }

    pub(crate) fn new_id(&self) -> Value {
        json!(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn random(&self) -> f64 {
        // xorshift64*: enough for jitter, and reproducible with a seed.
        let mut s = self.rng.lock().expect("rng lock");
        let mut x = *s;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        *s = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    pub(crate) fn capabilities(&self, version: ProtocolVersion) -> Value {
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

    pub(crate) fn client_info(&self) -> Value {
        json!({ "name": self.opts.client_name, "version": self.opts.client_version })
    }

    pub(crate) fn build_message(
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
            // A tool call asks for progress: progress keeps its attempt alive (`keepalive`).
            if !self.opts.progress_max_wait.is_zero() {
                meta.insert("progressToken".into(), id.clone());
            }
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
        let Transport::Http(to) = &self.transport else {
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
        let with = Negotiated {
            era: Era::Legacy,
            version,
            session: Some(&made_up),
        };
        let req = self.http_request(to, &msg, with, &[]);
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
            Transport::Http(HttpEndpoint { http, url, headers }) => {
                if let Some(s) = &st.session_id {
                    let mut req = http.delete(url).header("Mcp-Session-Id", s);
                    req = with_token(req, headers, &self.bearer);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn connect_errors_are_typed() {
        let target = Target::stdio("/nonexistent/mcp-triage-no-such-server").unwrap();
        let e = Client::connect(target, ClientOptions::default())
            .await
            .err()
            .expect("nothing to spawn");
        assert!(matches!(e, ConnectError::Spawn { ref source, .. }
            if source.kind() == std::io::ErrorKind::NotFound));
        assert!(e
            .to_string()
            .starts_with("could not start \"/nonexistent/mcp-triage-no-such-server\": "));
        let target = Target::url("http://127.0.0.1:9/mcp").unwrap();
        let c = Client::connect(target, ClientOptions::default())
            .await
            .unwrap();
        let e = c.list_tools().await.unwrap_err();
        assert!(matches!(e, crate::ListToolsError { status: None, .. }));
        assert!(!e.why.is_empty());
        assert_eq!(e.to_string(), e.why);
        let e = ConnectError::AuthNeedsHttp;
        assert_eq!(e.to_string(), "OAuth: OAuth applies to HTTP servers only");
        assert_eq!(
            wire::IncomingError::ModernStream.to_string(),
            "the server sent a request on a 2026-07-28 stream, which that revision forbids"
        );
    }
}
