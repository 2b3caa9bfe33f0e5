//! Setting up before a call: which era the server speaks (the modern probe and its fallback to
//! `initialize`, and from there to the 2024-11-05 HTTP+SSE transport), the legacy session and
//! its repair, and `tools/list`. Requests that are not tool calls go through [`Client::request`]
//! here; a setup step that fails ends the call as a [`SetupFailure`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_triage_core::retry::Delivery;
use mcp_triage_core::{OutputSchema, ProtocolVersion, ServerInfo, Verdict};
use serde_json::{json, Value};

use crate::client::{Client, Era, HttpEndpoint, Negotiated, State, Transport};
use crate::options::VersionChoice;
use crate::standalone::{AbortOnDrop, Standalone};
use crate::tools::{tool_info, ToolInfo};
use crate::wire::Sent;

/// The revision `initialize` offers when the server's era is not known yet.
const LEGACY_DEFAULT: ProtocolVersion = ProtocolVersion::V2025_11_25;

/// Why [`Client::list_tools`] has no list: the setup step that failed (`initialize` or
/// `list_tools`), how its exchange was judged, and the message the CLI prints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{why}")]
#[non_exhaustive]
pub struct ListToolsError {
    /// The step that failed: `initialize` or `list_tools`.
    pub step: &'static str,
    /// The verdict of its exchange.
    pub outcome: mcp_triage_core::Outcome,
    /// The HTTP status of its answer, if there was one.
    pub status: Option<u16>,
    /// What went wrong, in words (the verdict's detail or the JSON-RPC error).
    pub why: String,
}

impl From<SetupFailure> for ListToolsError {
    fn from(f: SetupFailure) -> Self {
        ListToolsError {
            step: f.kind,
            outcome: f.sent.verdict.outcome,
            status: f.sent.status,
            why: f.why,
        }
    }
}

/// What a setup step (initialize, tools/list) ended in when it failed.
pub(crate) struct SetupFailure {
    pub(crate) kind: &'static str,
    pub(crate) sent: Sent,
    pub(crate) why: String,
}

pub(crate) enum Probe {
    Modern,
    FallBack(ProtocolVersion),
}

/// A 400 with -32022 whose `supported` list names the modern revision this client speaks.
pub(crate) fn modern_version_offered(sent: &Sent) -> bool {
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

pub(crate) fn server_info(v: &Value) -> Option<ServerInfo> {
    let name = v.get("name")?.as_str()?;
    Some(ServerInfo {
        name: mcp_triage_core::sanitize_line(name, 100),
        version: v
            .get("version")
            .and_then(Value::as_str)
            .map(|s| mcp_triage_core::sanitize_line(s, 50)),
    })
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

impl Client {
    /// The negotiated era and version, establishing a legacy session or probing when needed.
    /// `Ok(None)` era means "auto, not yet known" (HTTP tries modern on the first request).
    pub(crate) async fn ensure_era(&self) -> Result<(Option<Era>, ProtocolVersion), SetupFailure> {
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
            (VersionChoice::Auto, Transport::Http(_)) => Ok((None, ProtocolVersion::V2026_07_28)),
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
    pub(crate) async fn initialize_locked(
        &self,
        st: &mut State,
        want: ProtocolVersion,
    ) -> Result<(), SetupFailure> {
        let mut version = want;
        if want == ProtocolVersion::V2024_11_05 && self.sse().is_none() {
            if let Err(why) = self.open_legacy_sse().await {
                let why = why.to_string();
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
                .exchange(&msg, &id, legacy(version, None), None, deadline, None)
                .await;
            self.keep_stdout_notes(&sent);
            if st.scenario.is_none() {
                st.scenario = sent.scenario.clone();
            }
            if sent.result().is_some() {
                return self.initialized(st, sent).await;
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
                && matches!(self.transport, Transport::Http(_))
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

    /// `initialize` was answered: takes the session (when the revision is one this client
    /// speaks), sends `notifications/initialized`, and starts listening on the standalone
    /// stream.
    async fn initialized(&self, st: &mut State, sent: Sent) -> Result<(), SetupFailure> {
        let result = sent.result().expect("initialized is called with an answer");
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
        self.notify(&note, legacy(v, st.session_id.as_deref()))
            .await;
        self.listen_standalone(st, v).await;
        Ok(())
    }

    /// Replaces the session's standalone GET listener: a new one over HTTP when the server
    /// assigned a session and `listen_standalone` is on, none otherwise.
    async fn listen_standalone(&self, st: &mut State, v: ProtocolVersion) {
        st.listener = None;
        if let (Transport::Http(HttpEndpoint { http, url, headers }), Some(session), true) =
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
    }

    /// Starts a new legacy session unless another task already did.
    pub(crate) async fn reinitialize(
        &self,
        failed_session: Option<&str>,
    ) -> Result<(), SetupFailure> {
        let mut st = self.state.lock().await;
        if st.session_id.as_deref() != failed_session {
            return Ok(());
        }
        let v = st.version;
        st.session_id = None;
        self.initialize_locked(&mut st, v).await
    }

    /// After a request sent in modern form to a server of unknown era: keep modern, or fall
    /// back to `initialize` (400 without a modern JSON-RPC error, or -32022 naming only legacy
    /// versions).
    pub(crate) async fn after_modern_probe(&self, sent: &Sent) -> Probe {
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

    /// A plain request (not a tool call): era handling, modern fallback, session repair once.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
    ) -> Result<(Sent, Era), SetupFailure> {
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
                Negotiated {
                    era,
                    version,
                    session: session.as_deref(),
                },
                schema,
                deadline,
                None,
            )
            .await;
        (sent, id, session)
    }

    /// The server's capabilities: from `initialize` in the legacy era; in the 2026-07-28 era,
    /// which has no handshake, from `server/discover` (servers MUST implement it, clients MAY
    /// call it), asked once and kept. `None` when the server gave none or the call failed.
    pub async fn discover_capabilities(&self) -> Option<Value> {
        if let Some(c) = self.state.lock().await.server_capabilities.clone() {
            return Some(c);
        }
        let (sent, era) = self.request("server/discover", json!({})).await.ok()?;
        if era != Era::Modern {
            return None;
        }
        let caps = sent
            .result()
            .map(|r| r["capabilities"].clone())
            .filter(Value::is_object)?;
        self.state.lock().await.server_capabilities = Some(caps.clone());
        Some(caps)
    }

    /// Lists the server's tools (all pages), establishing the era first.
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, ListToolsError> {
        Ok(self.fetch_tools().await?)
    }

    pub(crate) async fn fetch_tools(&self) -> Result<Vec<ToolInfo>, SetupFailure> {
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
}

/// What a legacy-era message is sent under: `version`, in `session` (none before `initialize`).
fn legacy(version: ProtocolVersion, session: Option<&str>) -> Negotiated<'_> {
    Negotiated {
        era: Era::Legacy,
        version,
        session,
    }
}
